# fprobe and tracepoint probe events (Linux's trace_fprobe; Debian's Linux
# has no CONFIG_FPROBE_EVENTS, so this golden file is this kernel's, checked
# against Documentation/trace/fprobetrace.rst): definitions, default names
# and groups, listings, format files (ID lines masked), errors with
# error_log (timestamps masked), removal, and the lines recorded for a
# known open (times, pids and addresses masked).
cd /sys/kernel/tracing || exit 1
echo 0 > events/enable
echo > dynamic_events
echo > error_log
echo > trace
try() { # command
    echo "$1" >> dynamic_events 2>/dev/null
    echo "[$?] $1"
}
try 'f do_sys_openat2 dfd name=+0($arg2):string'
try 'f:myfexit do_sys_openat2%return name=+0($arg2):string ret=$retval:s32'
try 'f:fgrp/byret do_sys_openat2 r=$retval'
try 'f5:mx vfs_read%return'
try 'f:bad1 no_such_function'
try 'f:bad2 do_sys_openat2%hoge'
try 'f3 vfs_read'
try 'f:bad3 vfs_read %x0'
try 't sched_process_exec'
try 't:tgrp/fork sched_process_fork $arg*'
try 't:bad4 no_such_tracepoint'
try 't:bad5 sched_process_fork $retval'
try 'f:tgrp/fork vfs_read'
echo "== error_log"
busybox sed -e 's/^\[ *[0-9.]*\]/[T]/' error_log
echo "== dynamic_events"; cat dynamic_events
for e in fprobes/do_sys_openat2__entry fprobes/myfexit tracepoints/sched_process_exec tgrp/fork; do
    echo "== $e/format"
    busybox grep -v '^ID:' events/$e/format
done
echo 1 > events/fprobes/do_sys_openat2__entry/enable
echo 1 > events/fprobes/myfexit/enable
cat /no/such/file 2>/dev/null
echo 0 > events/fprobes/enable
echo "== trace"
busybox grep -e 'no/such' trace | busybox sed -e 's/^.*: \([a-z_0-9]*: \)/\1/' -e 's/+0x[0-9a-f]*\/0x[0-9a-f]*/+OFF/g'
echo "== removal"
try '-:fprobes/myfexit'
try '!f:fgrp/byret'
try '-:tgrp/fork'
cat dynamic_events
echo > dynamic_events
echo "[$?] truncate"
cat dynamic_events
echo "== enabled_functions"
cat enabled_functions
