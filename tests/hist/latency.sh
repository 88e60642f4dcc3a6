# A syscall-latency histogram: nanosleep's time in the kernel, from
# sys_enter_nanosleep to sys_exit_nanosleep of the same task, carried by
# an onmatch() action into the synthetic event sleep_lat, whose hist
# trigger buckets it by milliseconds. The workload (sleeplat 5 3: 1 ms
# five times, 5 ms three times) prints what it timed itself. (pid is an
# int: Linux gives a field passed as a parameter its type but not its
# signedness, so common_pid would not fit a pid_t field.)
cd /sys/kernel/tracing
E=events/syscalls/sys_enter_nanosleep
X=events/syscalls/sys_exit_nanosleep
S=events/synthetic/sleep_lat
echo 'sleep_lat u64 lat; int pid' > synthetic_events
echo 'hist:keys=common_pid:ts0=common_timestamp.usecs if comm == "sleeplat"' > $E/trigger
echo 'hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(syscalls.sys_enter_nanosleep).trace(sleep_lat,$lat,common_pid) if comm == "sleeplat"' > $X/trigger
echo 'hist:keys=lat.buckets=1000:sort=lat' > $S/trigger
echo 'hist:keys=pid:vals=hitcount:sort=pid' >> $S/trigger
cat error_log # empty: every command above is accepted
sleeplat 5 3
cat $X/trigger
cat $S/hist
# The synthetic event and the triggers it depends on go in reverse order:
# a trigger whose variables another reads is busy until that one goes.
echo '!hist:keys=common_pid:ts0=common_timestamp.usecs if comm == "sleeplat"' >> $E/trigger 2>/dev/null || echo 'ts0 in use: EBUSY'
echo '!sleep_lat u64 lat; int pid' >> synthetic_events 2>/dev/null || echo 'sleep_lat in use: EBUSY'
echo '!hist:keys=lat.buckets=1000:sort=lat' >> $S/trigger
echo '!hist:keys=pid:vals=hitcount:sort=pid' >> $S/trigger
echo '!hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(syscalls.sys_enter_nanosleep).trace(sleep_lat,$lat,common_pid) if comm == "sleeplat"' >> $X/trigger
echo '!hist:keys=common_pid:ts0=common_timestamp.usecs if comm == "sleeplat"' >> $E/trigger
echo '!sleep_lat u64 lat; int pid' >> synthetic_events
cat synthetic_events
echo latency-done
