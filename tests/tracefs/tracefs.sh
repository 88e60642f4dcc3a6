# tracefs behaviour, run by Debian's busybox sh on this kernel and on
# Linux (tests/tracefs.rs); pids, times and the need-resched flag (a tick
# may set it at any moment) are masked so that the output is one golden
# file.
bb=busybox
mask() { $bb sed -e 's/^ *\(<[^>]*>\)-[0-9]* *\[\([0-9]*\)\]/\1-PID [\2]/' -e 's/ *[0-9]\+\.[0-9]\{6\}:/ TS:/' -e 's/ *[0-9]\+: tracing_mark_write/ TS: tracing_mark_write/' -e 's/ts: *[0-9]*\.[0-9]*$/ts: TS/' -e 's/^\([^ ]*-PID \[[^]]*\] .\)./\1./'; }
echo "== three paths, one tree"
$bb grep -c '^tracefs /sys/kernel/tracing tracefs' /proc/mounts
echo x > /tracing/trace_marker
$bb cmp /tracing/trace /sys/kernel/debug/tracing/trace && $bb cmp /tracing/trace /sys/kernel/tracing/trace && echo same
cd /sys/kernel/tracing
echo "== sizes before and after first use"
cat buffer_size_kb buffer_total_size_kb per_cpu/cpu0/buffer_size_kb
echo 1408 > buffer_size_kb
cat buffer_size_kb buffer_total_size_kb
echo "== bad writes"
echo foo > current_tracer || echo "current_tracer refused"
echo 0 > buffer_size_kb || echo "buffer_size_kb 0 refused"
echo bar > trace_clock || echo "trace_clock refused"
echo abc > tracing_on || echo "tracing_on refused"
echo nofoo > trace_options || echo "trace_options refused"
echo 2 > options/overwrite || echo "option value refused"
cat current_tracer tracing_on options/overwrite
echo "== marker and trace"
echo > trace
$bb printf 'no newline' > trace_marker
echo hello > trace_marker
cat trace | mask
$bb grep -E '^(entries|bytes|read)' per_cpu/cpu0/stats
echo "== trace_pipe consumes"
( $bb timeout 1 $bb cat trace_pipe | mask ) 2>/dev/null
$bb grep -E '^(entries|bytes|read)' per_cpu/cpu0/stats
$bb head -3 trace
echo "== tracing_on 0 stops recording"
echo 0 > tracing_on
echo gone > trace_marker || echo "marker refused"
echo 1 > tracing_on
echo back > trace_marker
cat trace | $bb tail -1 | mask
echo "== overfilling 8 KiB overwrites the oldest"
# The counter clock: every delta is 1, so no stall of the host between two
# markers adds a time extend, and how many fit is the same on every run.
echo counter > trace_clock
echo 8 > buffer_size_kb
echo > trace
i=0; while [ $i -lt 600 ]; do echo "marker number $i" > trace_marker; i=$((i+1)); done
$bb head -3 trace | $bb tail -1
$bb grep -E '^(entries|overrun|dropped|read)' per_cpu/cpu0/stats
$bb head -13 trace | $bb tail -1 | mask
$bb tail -1 trace | mask
echo "== without overwrite the newest are dropped"
echo 0 > options/overwrite
echo > trace
i=0; while [ $i -lt 600 ]; do echo "marker number $i" > trace_marker 2>/dev/null; i=$((i+1)); done
echo late > trace_marker || echo "marker refused when full"
$bb head -3 trace | $bb tail -1
$bb grep -E '^(entries|overrun|dropped|read)' per_cpu/cpu0/stats
$bb tail -1 trace | mask
echo 1 > options/overwrite
echo local > trace_clock
echo "== trace_pipe_raw hands out ring-buffer pages"
echo > trace
echo abc > trace_marker
$bb dd if=per_cpu/cpu0/trace_pipe_raw bs=4096 count=1 2>/dev/null | $bb od -A d -t x1 -j 8 -N 12
$bb grep -E '^(entries|read)' per_cpu/cpu0/stats
echo "== events"
cat events/ftrace/print/format
cat events/ftrace/print/id events/enable
cat events/header_page
echo ftrace:print > set_event || echo "set_event refused"
cat error_log
echo "== timestamp_mode"
cat timestamp_mode
echo "== modes of the files and directories"
mkdir instances/modes
for f in . README kprobe_events dynamic_events kprobe_profile error_log available_events \
    set_event set_event_pid events events/enable events/header_page events/header_event \
    events/ftrace events/ftrace/print events/ftrace/print/format events/ftrace/print/id \
    trace trace_pipe trace_marker tracing_on buffer_size_kb buffer_total_size_kb \
    per_cpu per_cpu/cpu0 per_cpu/cpu0/trace per_cpu/cpu0/trace_pipe per_cpu/cpu0/stats \
    per_cpu/cpu0/buffer_size_kb per_cpu/cpu0/trace_pipe_raw trace_clock timestamp_mode trace_options \
    options options/overwrite saved_cmdlines saved_cmdlines_size current_tracer \
    available_tracers printk_formats instances instances/modes instances/modes/events \
    instances/modes/per_cpu instances/modes/options instances/modes/trace; do
    $bb stat -c '%a %n' $f
done
rmdir instances/modes
echo done
