# The function tracer seen from a shell, run by Debian's busybox sh on this
# kernel and on Linux (tests/ftrace.rs); pids, CPUs, times, sizes and the
# need-resched flag (a tick may set it at any moment) are masked so that
# the output is one golden file.
bb=busybox
mask() { $bb sed -e 's/^ *\([^ ]*\)-[0-9]* *\[[0-9]*\]/\1-PID [CPU]/' -e 's/ *[0-9]\+\.[0-9]\{6\}:/ TS:/' -e 's/+0x0\/0x[0-9a-f]*/+0x0\/SIZE/g' -e 's/^\([^ ]*-PID \[[^]]*\] .\)./\1./'; }
cd /sys/kernel/tracing
echo "== tracers"
cat available_tracers | $bb tr ' ' '\n' | $bb grep -E '^(function|nop)$'
cat current_tracer
echo "== filters"
cat set_ftrace_filter
cat set_ftrace_notrace
echo nosuchfunction_xyz > set_ftrace_filter || echo "unknown function refused"
cat set_ftrace_filter
echo 'vfs_rea*' > set_ftrace_filter
$bb grep -x -e vfs_read -e do_sys_openat2 set_ftrace_filter | $bb sort
echo do_sys_openat2 >> set_ftrace_filter
echo '!vfs_rea*' >> set_ftrace_filter
$bb grep -x -e vfs_read -e do_sys_openat2 set_ftrace_filter | $bb sort
echo > set_ftrace_filter
cat set_ftrace_filter
echo 'vfs_read do_sys_openat2' > set_ftrace_filter
$bb sort set_ftrace_filter
$bb grep -c -x -e vfs_read -e do_sys_openat2 available_filter_functions
echo "== pid filter"
cat set_ftrace_pid
echo abc > set_ftrace_pid || echo "bad pid refused"
echo "== function"
$bb ln -s /bin/busybox /tmp/cat
echo function > current_tracer
cat current_tracer
$bb sort enabled_functions | mask
/tmp/cat /proc/version > /dev/null
# Reading `trace` while vfs_read is traced would feed it its own reads.
echo '!vfs_read' >> set_ftrace_filter
$bb grep -v '^#' trace | $bb grep '^ *cat-' | mask
echo nop > current_tracer
echo "== a tracer switch clears the buffer"
$bb grep -c -v '^#' trace
cat enabled_functions
$bb sort touched_functions | $bb grep -e '^vfs_read ' -e '^do_sys_openat2 '
echo > set_ftrace_filter
echo > trace
echo "== a system call's function is called from invoke_syscall"
echo __arm64_sys_openat > set_ftrace_filter
echo function > current_tracer
/tmp/cat /proc/version > /dev/null
$bb grep -v '^#' trace | $bb grep '^ *cat-' | $bb head -1 | mask
echo nop > current_tracer
echo > set_ftrace_filter
echo > trace
