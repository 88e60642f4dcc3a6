# BTF arguments that are user pointers (Linux's `const char __user
# *filename` of do_sys_openat2, this kernel's UserPtr), run by Debian's
# busybox sh on this kernel and on Linux (tests/kprobe_events.rs): `:ustring`
# and `:string` on them are accepted and print the string, a bare one
# prints the pointer, and `:ustring` on a structure pointer is refused
# with Linux's error. Times, pids, CPUs and function sizes are masked, and
# lines are sorted (the order of probes on one address is not compared).
bb=busybox
mask() {
  $bb sed -e 's/^ *\([^ ]*\)-[0-9]* *\[[0-9]*\] \([^ ]\)[^ ]\([^ ]*\) *[0-9]*\.[0-9]*:/\1-PID [CPU] \2.\3 TS:/' \
    -e 's/^\[ *[0-9]*\.[0-9]*\]/[TS]/' \
    -e 's/(\([A-Za-z0-9_]*\)+0x\([0-9a-f]*\)\/0x[0-9a-f]*/(\1+0x\2\/SIZE/' \
    -e 's/filename=0x[0-9a-f]*$/filename=UADDR/'
}
cd /sys/kernel/tracing
echo > trace
echo > error_log
echo 'p:uname do_sys_openat2 filename:ustring' >> kprobe_events
echo 'p:kname do_sys_openat2 filename:string' >> kprobe_events
echo 'p:ptr do_sys_openat2 dfd filename' >> kprobe_events
echo 'p:bad do_sys_openat2 how:ustring' >> kprobe_events || echo "how:ustring refused"
cat kprobe_events
cat error_log | mask
echo 1 > events/kprobes/enable
$bb cat /proc/version > /dev/null &
pid=$!
wait
echo 0 > events/kprobes/enable
# The child's opens of /dev/null are left out: on Linux a probe reads
# "(fault)" for a string in a page the new process has not touched yet,
# and this kernel maps those pages at fork and exec.
$bb grep -e "-$pid " trace | mask | $bb grep -v -e '"/dev/null"' -e '=(fault)' | $bb sort | $bb uniq
echo > kprobe_events
