# Function commands, pid lists, options and the stack tracer seen from a
# shell, run by Debian's busybox sh on this kernel and on Linux
# (tests/ftrace.rs). The probed function is the uname system call, which
# only the `busybox uname` runs below make; the file listings are read by
# the shell's own `read`, so that no other process runs in between.
bb=busybox
show() { while read -r l; do echo "$l"; done < "$1"; }
f=__arm64_sys_newuname
cd /sys/kernel/tracing
echo "== commands"
echo "$f:traceoff:3" > set_ftrace_filter
echo "$f:stacktrace" >> set_ftrace_filter
echo "$f:enable_event:sched:sched_switch:2" >> set_ftrace_filter
show set_ftrace_filter
show events/sched/sched_switch/enable
echo "$f:traceoff:3" >> set_ftrace_filter || echo "nothing new: refused"
echo "$f:nosuch" >> set_ftrace_filter || echo "unknown command refused"
echo "$f:enable_event:sched:nosuch" >> set_ftrace_filter || echo "unknown event refused"
echo "$f:traceoff:x" >> set_ftrace_filter || echo "bad count refused"
echo "!$f:stacktrace:1" >> set_ftrace_filter || echo "no such probe type refused"
echo "$f:traceoff" > stack_trace_filter || echo "no commands in stack_trace_filter"
echo "== hits"
echo > trace
$bb uname > /dev/null
show set_ftrace_filter
show tracing_on
show events/sched/sched_switch/enable
echo 1 > tracing_on
$bb uname > /dev/null
show set_ftrace_filter
show tracing_on
$bb grep -c '<stack trace>' trace
echo "== removal"
echo "!$f:traceoff:0" >> set_ftrace_filter
echo "!$f:stacktrace" >> set_ftrace_filter
echo "!$f:enable_event:sched:sched_switch:0" >> set_ftrace_filter
show set_ftrace_filter
show events/sched/sched_switch/enable
echo 1 > tracing_on
echo > trace
echo "== pids and options"
show set_ftrace_notrace_pid
echo abc > set_ftrace_notrace_pid || echo "bad pid refused"
show options/function-fork
show options/func_stack_trace
$bb grep -c -x -e function-fork -e nofunction-fork trace_options
echo "== stack tracer"
show stack_trace_filter
echo "$f" > stack_trace_filter
show stack_trace_filter
echo 0 > stack_max_size
$bb cat /proc/sys/kernel/stack_tracer_enabled
echo 1 > /proc/sys/kernel/stack_tracer_enabled
$bb uname > /dev/null
echo 0 > /proc/sys/kernel/stack_tracer_enabled
$bb head -2 stack_trace | $bb sed 's/([0-9]* entries)/(N entries)/'
$bb grep ' 0) ' stack_trace | $bb sed -e 's/^ *0) *[0-9]* *[0-9]* */  0) DEPTH SIZE /' -e 's/0x[0-9a-f]*$/SIZE/'
test "$(show stack_max_size)" -gt 0 && echo "stack_max_size measured"
echo > stack_trace_filter
echo 0 > stack_max_size
echo 0 > events/sched/sched_switch/enable
