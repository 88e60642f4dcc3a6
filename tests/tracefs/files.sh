# free_buffer and trace_marker_raw, run by Debian's busybox sh on this
# kernel and on Linux (tests/tracefs.rs); pids and times masked so that the
# output is one golden file.
bb=busybox
mask() { $bb sed -e 's/^ *\(<[^>]*>\)-[0-9]* *\[\([0-9]*\)\]/\1-PID [\2]/' -e 's/ *[0-9]\+\.[0-9]\{6\}:/ TS:/' -e 's/^\([^ ]*-PID \[[^]]*\] .\)./\1./'; }
cd /sys/kernel/tracing
echo "== free_buffer: a write does nothing, the close shrinks the buffer"
cat buffer_size_kb buffer_total_size_kb
exec 3> free_buffer
echo x >&3
cat buffer_size_kb
exec 3>&-
cat buffer_size_kb buffer_total_size_kb per_cpu/cpu0/buffer_size_kb tracing_on
$bb cat free_buffer 2>/dev/null || echo "free_buffer not readable"
echo "== disable_on_free turns tracing off"
cat options/disable_on_free
echo 1 > options/disable_on_free
echo 64 > buffer_size_kb
echo x > free_buffer
cat buffer_size_kb tracing_on
echo off > trace_marker 2>/dev/null || echo "marker refused"
echo 1 > tracing_on
echo 16 > buffer_size_kb
cat buffer_size_kb buffer_total_size_kb
echo back > trace_marker
$bb tail -1 trace | mask
echo 0 > options/disable_on_free
$bb grep -x -e disable_on_free -e nodisable_on_free trace_options
echo "== trace_marker_raw: an id, then bytes"
echo > trace
$bb printf '\x03\x00\x00\x00\x01\x02\xab' > trace_marker_raw
$bb printf '\x05\x00\x00\x00' > trace_marker_raw
$bb printf '\x0d\xf0\xad\xbaabcdefghijklmnopq' > trace_marker_raw
$bb printf '\x03\x00\x00' | $bb dd of=trace_marker_raw 2>/dev/null || echo "3 bytes refused"
$bb dd if=/dev/zero bs=4061 count=1 of=trace_marker_raw 2>/dev/null || echo "4061 bytes refused"
$bb dd if=/dev/zero bs=4060 count=1 of=trace_marker_raw 2>/dev/null && echo "4060 bytes taken"
$bb grep -e '^entries' -e '^bytes' per_cpu/cpu0/stats
$bb head -15 trace | $bb tail -3 | mask
echo > trace
echo 0 > tracing_on
$bb printf '\x07\x00\x00\x00' | $bb dd of=trace_marker_raw 2>/dev/null || echo "refused with tracing off"
echo 1 > tracing_on
echo 0 > options/markers
$bb printf '\x07\x00\x00\x00' | $bb dd of=trace_marker_raw 2>/dev/null || echo "refused without markers"
echo 1 > options/markers
$bb printf '\x08\x00\x00\x00x' > trace_marker_raw
# Linux does not clear an entry's padding: only the bytes written are
# known after a reset reuses the pages.
( $bb timeout 1 $bb cat trace_pipe | mask | $bb sed -e 's/\(buf: ..\).*/\1/' ) 2>/dev/null
cat events/ftrace/raw_data/format
echo "== in an instance"
mkdir instances/raw
echo "== core options: Linux's defaults"
for o in verbose raw hex bin block fields trace_printk userstacktrace sym-userobj printk-msg-only \
    trace_printk_dest hash-ptr display-graph disable_on_free; do
    echo "$o $(cat options/$o) $(cat instances/raw/options/$o 2>/dev/null || echo none)"
done
echo 0 > options/raw && echo 1 > options/hash-ptr && echo "the same value is taken"
$bb grep -x -e noverbose -e noraw -e nohex -e nobin -e trace_printk -e hash-ptr -e nodisplay-graph trace_options
$bb printf '\x04\x00\x00\x00z' > instances/raw/trace_marker_raw
$bb tail -1 instances/raw/trace | mask
$bb tail -1 trace | mask
echo x > instances/raw/free_buffer
cat instances/raw/buffer_size_kb instances/raw/tracing_on
$bb stat -c '%a %n' trace_marker_raw free_buffer options/disable_on_free instances/raw/trace_marker_raw \
    instances/raw/free_buffer instances/raw/options/disable_on_free
rmdir instances/raw
echo done
