# kprobe_events from a shell, run by Debian's busybox sh on this kernel and
# on Linux (tests/kprobe_events.rs): definitions, their listing and format,
# hits in trace and kprobe_profile, return probes with $retval and entry
# arguments, multiprobe events, dynamic_events, Linux's errors and
# error_log entries, EBUSY for enabled events, O_TRUNC clearing. Pids,
# times, CPUs, the need-resched flag (a tick may set it at any moment),
# kernel addresses and function sizes are masked, and so is the
# offset in a return probe's caller (invoke_syscall on both kernels).
bb=busybox
mask() {
  $bb sed -e 's/^ *\([^ ]*\)-[0-9]* *\[[0-9]*\] \([^ ]\)[^ ]\([^ ]*\) *[0-9]*\.[0-9]*:/\1-PID [CPU] \2.\3 TS:/' \
    -e 's/^\[ *[0-9]*\.[0-9]*\]/[TS]/' \
    -e 's/0xffff[0-9a-f]*/KADDR/g' \
    -e 's/(\([A-Za-z0-9_]*\)+0x\([0-9a-f]*\)\/0x[0-9a-f]*/(\1+0x\2\/SIZE/' \
    -e 's/(\([A-Za-z0-9_.]*\)+0x[0-9a-f]*\/SIZE <- /(\1+OFF\/SIZE <- /'
}
# hits and misses of probe $1 in kprobe_profile, and whether the hits are
# the lines of event $2 in trace
hits() {
  h=$($bb awk -v n="$1" '$1 == n { print $2 }' kprobe_profile | $bb head -1)
  m=$($bb awk -v n="$1" '$1 == n { print $3 }' kprobe_profile | $bb head -1)
  l=$($bb grep -c " $2: " trace)
  if [ "$h" -gt 0 ] && [ "$h" = "$l" ]; then echo "$1: hits = trace lines, misses $m"; else echo "$1: hits $h, lines $l, misses $m"; fi
}
cd /sys/kernel/tracing
echo > trace
echo "== define"
echo 'p:myprobe __arm64_sys_getpid' > kprobe_events
echo 'r:myret __arm64_sys_openat ret=$retval:s64 path=+0(+8($arg1)):ustring' >> kprobe_events
echo 'p:kprobes/myopen __arm64_sys_openat regs=%x0 path=+0(+8(%x0)):ustring flags=+16(%x0):x32 comm=$comm nul=+0(+16(%x0)):ustring' >> kprobe_events
cat kprobe_events
$bb ls events/kprobes
cat events/kprobes/myopen/format | $bb sed -e 's/^ID: .*/ID: N/'
cat events/kprobes/myret/format | $bb sed -e 's/^ID: .*/ID: N/'
echo "== hits"
echo 1 > events/kprobes/enable
$bb cat /bin/kprobe_events.sh > /dev/null
$bb cat /nonexistent-file 2>/dev/null
$bb sh -c 'echo $$' > /dev/null
echo 0 > events/kprobes/enable
cat events/kprobes/enable
$bb grep -e kprobe_events.sh -e nonexistent-file trace | mask
hits myprobe myprobe
hits myopen myopen
hits myret myret
$bb grep -c ' myprobe: (__arm64_sys_getpid+0x0/' trace
echo "== disabled: no more hits"
$bb awk '{ print $1, $2 }' kprobe_profile > /tmp/before
$bb cat /bin/kprobe_events.sh > /dev/null
$bb awk '{ print $1, $2 }' kprobe_profile | $bb cmp - /tmp/before && echo same
echo "== multiprobe event"
echo 'p:kprobes/multi __arm64_sys_getpid' >> kprobe_events
echo 'p:kprobes/multi __arm64_sys_getppid' >> kprobe_events
$bb grep multi kprobe_events
$bb grep -c multi kprobe_profile
echo 1 > events/kprobes/multi/enable
$bb sh -c 'echo $$ $PPID' > /dev/null
echo 0 > events/kprobes/multi/enable
$bb grep -q ' multi: (__arm64_sys_getpid+' trace && echo getpid
$bb grep -q ' multi: (__arm64_sys_getppid+' trace && echo getppid
echo '-:kprobes/multi __arm64_sys_getppid' >> kprobe_events
$bb grep multi kprobe_events
echo "== errors"
echo > error_log
try() { echo "$1" >> kprobe_events 2>/dev/null; echo "$? $1"; }
try 'p:myprobe __arm64_sys_getppid'
try 'r:multi __arm64_sys_getpid'
try 'p:multi __arm64_sys_close a=%x0'
try 'p:ftrace/print __arm64_sys_close'
try 'p:bad __arm64_sys_getpid %x99'
try 'p:bad __arm64_sys_getpid+2'
try 'p:bad no_such_function_here'
try 'p:bad __arm64_sys_getpid +0(%x0):u128'
try 'p:bad __arm64_sys_getpid $retval'
try 'p:9bad __arm64_sys_getpid'
try 'r:bad __arm64_sys_getpid+4'
try 'q:bad __arm64_sys_getpid'
try '-:nothere'
cat error_log | mask
echo "== enabled events cannot go"
echo 1 > events/kprobes/myprobe/enable
echo '-:myprobe' >> kprobe_events || echo "remove refused"
( echo > kprobe_events ) 2>/dev/null || echo "clear refused"
$bb wc -l < kprobe_events
echo 0 > events/kprobes/myprobe/enable
echo '-:myprobe' >> kprobe_events && echo removed
$bb ls events/kprobes
echo "== dynamic_events"
echo 'p:dyn __arm64_sys_getpid' >> dynamic_events
cat dynamic_events
echo '-:kprobes/dyn' >> dynamic_events && echo removed
echo 'r:dyn __arm64_sys_getpid' >> dynamic_events
echo '!r:kprobes/dyn' >> dynamic_events && echo removed
echo "== O_TRUNC clears"
echo > kprobe_events
cat kprobe_events kprobe_profile dynamic_events
$bb ls events/kprobes 2>/dev/null || echo "no kprobes group"
echo done
