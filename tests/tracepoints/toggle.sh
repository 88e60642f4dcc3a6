# The system-call gate and the interrupt-mask hooks switched on and off
# ($ROUNDS times: raw_syscalls, one syscalls event and the preemptirq irq
# events of an instance, the irqsoff tracer of the top level, which resets
# its own buffer) while shells make system calls on every CPU; then every
# line of the instance's `trace` is checked, and with everything off again
# a workload records nothing. The shells' tasks, ending on every CPU, must
# all be freed with interrupts on.
bb=busybox
ROUNDS=${ROUNDS:-20}
top=/sys/kernel/tracing
mkdir $top/instances/tog || exit 1
cd $top/instances/tog || exit 1
echo 256 > buffer_size_kb
echo > /tmp/run
for i in 1 2 3 4; do
    ( while [ -e /tmp/run ]; do
        $bb echo x | $bb cat > /dev/null
        $bb sh -c 'exit 3'
        $bb cat /proc/self/stat > /dev/null
      done ) &
done
n=0
while [ $n -lt $ROUNDS ]; do
    echo 1 > events/raw_syscalls/enable
    echo 1 > events/syscalls/sys_enter_openat/enable
    echo 1 > events/preemptirq/irq_enable/enable
    echo 0 > events/raw_syscalls/sys_enter/enable
    echo irqsoff > $top/current_tracer
    echo 1 > events/preemptirq/irq_disable/enable
    echo 0 > events/raw_syscalls/sys_exit/enable
    echo nop > $top/current_tracer
    echo 0 > events/syscalls/sys_enter_openat/enable
    echo 0 > events/preemptirq/enable
    n=$((n + 1))
done
rm /tmp/run
wait
# The irq events of the last rounds may overwrite (the buffer overwrites)
# the system-call records of the first: one last switch of the system-call
# events alone, after all the toggling, must still record.
echo 1 > events/raw_syscalls/enable
echo 1 > events/syscalls/sys_enter_openat/enable
$bb cat /proc/self/stat > /dev/null
echo 0 > events/syscalls/sys_enter_openat/enable
echo 0 > events/raw_syscalls/enable
# Tasks freed with interrupts masked (the kernel reports the first).
echo "irqs-off-frees $($bb dmesg | $bb grep -c 'freed with interrupts masked')"
echo 0 > tracing_on
$bb grep -v '^#' trace > /tmp/t
echo "lines $($bb wc -l < /tmp/t)"
head='^ *.+-[0-9]+ +\[00[0-3]\] [.dDb][.Nnp][.hHsZz][.0-9a-f][.0-9a-f] +[0-9]+\.[0-9]{6}: '
re="${head}sys_enter: NR -?[0-9]+ \(([0-9a-f]+, ){5}[0-9a-f]+\)\$|${head}sys_exit: NR -?[0-9]+ = -?[0-9]+\$|${head}sys_openat\(dfd: [0-9a-f]+, filename: [0-9a-f]+, flags: [0-9a-f]+, mode: [0-9a-f]+\)\$|${head}irq_(enable|disable): caller=[^ ]+ parent=[^ ]+\$|^CPU:[0-3] \[LOST [0-9]+ EVENTS\]\$"
echo "malformed $($bb grep -cvE "$re" /tmp/t)"
$bb grep -vE "$re" /tmp/t | $bb head -5
echo "events $($bb sed -n -e 's/^.*\[00[0-3]\] ..... *[0-9.]*: \([a-z_0-9]*\)[:(].*$/\1/p' /tmp/t | $bb sort -u | $bb tr '\n' ' ')"
echo "cpus $($bb sed -n -e 's/^.*\[\(00[0-3]\)\] .*$/\1/p' /tmp/t | $bb sort -u | $bb wc -l)"
echo 1 > tracing_on
echo > trace
$bb sh -c 'exit 3'; $bb cat /proc/self/stat > /dev/null
echo "after $($bb grep -cv '^#' trace)"
cd $top && rmdir instances/tog
echo toggle-done
