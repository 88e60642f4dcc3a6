# Event probes: definitions, listings, format files (ID lines masked),
# errors with error_log (timestamps masked), and the lines they record
# for a known open.
cd /sys/kernel/tracing || exit 1
echo 0 > events/enable
echo > dynamic_events
echo > error_log
echo > trace
try() { # command
    echo "$1" >> dynamic_events 2>/dev/null
    echo "[$?] $1"
}
try 'e:ep1 syscalls.sys_enter_openat file=+0($filename):ustring fl=$flags dfd=$dfd:x32 m=$mode'
try 'e sched.sched_switch prev=$prev_pid nc=$next_comm:string'
try 'e:mygrp/ sched.sched_wakeup $pid c=$comm:string'
try 'e:eg2/filt syscalls/sys_enter_openat $flags:x32 if flags == 0x241'
try 'e:ep syscalls.sys_enter_openat'
try 'e:eg2/filt syscalls.sys_enter_openat'
try 'e:ep2 syscalls.sys_enter_openat $flags if'
try 'e:ep3 syscalls.sys_enter_openat $flags if bogus == 1'
try 'e:ep4 syscalls.sys_enter_openat x=$comm y=$common_pid'
try 'e:ep5 syscalls.sys_enter_openat $stack'
try 'e:ep7 syscalls.sys_enter_openat %x0'
try 'e:ep10 kprobes.foo'
try 'e a.'
try 'e syscalls/sys_enter_openat foo'
echo "== error_log"
busybox sed -e 's/^\[ *[0-9.]*\]/[T]/' error_log
echo "== dynamic_events"; cat dynamic_events
for e in eprobes/ep1 eprobes/sched_switch mygrp/sched_wakeup eg2/filt eprobes/ep; do
    echo "== $e"
    busybox sed -e 's/^ID: [0-9]*$/ID: N/' events/$e/format
done
echo 1 > events/eprobes/ep1/enable
echo 1 > events/eg2/filt/enable
busybox cat /no/such/file 2>/dev/null
echo hello > /tmp/eprobe-test-file
echo 0 > events/enable
echo "== trace"
busybox grep -e '/no/such/file' -e 'filt:' trace | busybox sed -e 's/^.*: \(ep1\|filt\): /\1: /'
try '-:ep1 syscalls.sys_enter_openat'
try '-:eprobes/sched_switch sched/sched_switch prev=$prev_pid'
try '-:mygrp/'
try '!e:eg2/filt syscalls.sys_enter_openat'
echo "== dynamic_events"; cat dynamic_events
echo > dynamic_events
echo "== after truncation"; cat dynamic_events
