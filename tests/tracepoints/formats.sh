# The format files of core events (or of $EVENTS), ID lines masked.
cd /sys/kernel/tracing || exit 1
for e in ${EVENTS:-sched/sched_switch sched/sched_process_fork raw_syscalls/sys_enter \
    syscalls/sys_enter_openat signal/signal_generate task/task_newtask}; do
    echo "== $e"
    busybox sed -e 's/^ID: [0-9]*$/ID: N/' events/$e/format
done
