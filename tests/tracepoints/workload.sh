# A known workload under the core events: a shell forks a child that execs
# busybox sh, signals itself to death with SIGUSR1, and is reaped. Prints
# the shell's and the child's pids, then the trace.
cd /sys/kernel/tracing || exit 1
echo 0 > events/enable
echo > trace
for e in task/task_newtask task/task_rename sched/sched_process_fork \
    sched/sched_process_exec sched/sched_process_exit signal/signal_generate \
    signal/signal_deliver; do
    echo 1 > events/$e/enable
done
# Only what the child does and is sent (the parent's SIGCHLD handling
# depends on the shell's state).
echo 'sig != 17' > events/signal/signal_deliver/filter
busybox sh -c 'kill -USR1 $$; echo not reached' &
child=$!
wait $child
echo "exit=$?"
echo 0 > events/enable
echo 0 > events/signal/signal_deliver/filter
echo "pids $$ $child"
busybox grep -v '^#' trace
