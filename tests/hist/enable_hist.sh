# enable_hist/disable_hist: a paused hist trigger on sys_exit_nanosleep is
# continued by every sys_enter_nanosleep of sleeplat (which times each
# sleep with a clock_gettime before and after) and paused by its
# sys_exit_clock_gettime, five times at most. So it counts each of the
# three sleeps of the first run, the count runs out at the first run's
# last clock_gettime, and with enable_hist gone it stays active and counts
# the two sleeps of the second run too.
cd /sys/kernel/tracing
X=events/syscalls/sys_exit_nanosleep
F='if comm == "sleeplat"'
echo "hist:keys=ret:pause $F" > $X/trigger
echo "enable_hist:syscalls:sys_exit_nanosleep $F" > events/syscalls/sys_enter_nanosleep/trigger
echo "disable_hist:syscalls:sys_exit_nanosleep:5 $F" > events/syscalls/sys_exit_clock_gettime/trigger
echo "enable_hist:syscalls:sys_exit_nanosleep" >> events/syscalls/sys_enter_nanosleep/trigger 2>/dev/null || echo 'second enable_hist: EEXIST'
cat events/syscalls/sys_enter_nanosleep/trigger events/syscalls/sys_exit_clock_gettime/trigger
sleeplat 3 0 >/dev/null
cat $X/hist
echo "!enable_hist:syscalls:sys_exit_nanosleep" >> events/syscalls/sys_enter_nanosleep/trigger
sleeplat 2 0 >/dev/null
cat $X/hist
cat events/syscalls/sys_exit_clock_gettime/trigger
echo "!disable_hist:syscalls:sys_exit_nanosleep" >> events/syscalls/sys_exit_clock_gettime/trigger
echo "!hist:keys=ret $F" >> $X/trigger
cat events/syscalls/sys_enter_nanosleep/trigger
