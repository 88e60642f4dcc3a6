# The exits the system-call gate sees: the write that enables sys_exit
# records its own exit (the gate is tested again at exit, as Linux's work
# flags are); rt_sigreturn's exit has the number -1 (Linux's
# syscall_get_nr after forget_syscall) and no `syscalls` exit event (its
# result, the x0 a signal interrupted, is masked: the shell's SIGCHLD
# handler returns too); execve's keeps its number (start_thread keeps it)
# and its event.
cd /sys/kernel/tracing || exit 1
echo 0 > tracing_on
echo > trace
echo 1 > tracing_on
echo 1 > events/raw_syscalls/sys_exit/enable
echo 1 > events/syscalls/sys_exit_rt_sigreturn/enable
echo 1 > events/syscalls/sys_exit_execve/enable
trap 'echo caught' USR1
kill -USR1 $$
busybox sh -c 'exec busybox true'
echo 0 > events/syscalls/sys_exit_execve/enable
echo 0 > events/syscalls/sys_exit_rt_sigreturn/enable
echo 0 > events/raw_syscalls/sys_exit/enable
echo 0 > tracing_on
busybox grep -v '^#' trace | busybox sed -n -e "s/^.*-$$ *\[[0-9]*\] ..... *[0-9.]*: //p" | busybox grep -E 'NR (64|-1|139) |sys_rt_sigreturn' |
    busybox sed -e 's/NR -1 = .*$/NR -1 = X/' | busybox sort | busybox uniq -c | busybox sed -e 's/^ *//'
echo "execve exits: $(busybox grep -c 'sys_exit: NR 221 = 0$' trace) events: $(busybox grep -c ' sys_execve -> 0x0$' trace)"
