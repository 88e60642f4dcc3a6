# Hist commands written in an instance act on that instance: a bad one is
# logged in its error_log (not the top level's), clock= sets its
# trace_clock, its variables are its own (the top level cannot read
# $ts0), and a field variable of the matched event makes the trigger on
# the instance's sched_waking. Times in error_log are masked; of the
# clock lists only the selected one is shown (Linux also offers `tai`).
cd /sys/kernel/tracing
mkdir instances/foo
cd instances/foo
echo 'hist:keys=bogus' >> events/sched/sched_process_fork/trigger || echo rejected
echo top:; sed 's/^\[[ 0-9.]*\]/[T]/' ../../error_log
echo foo:; sed 's/^\[[ 0-9.]*\]/[T]/' error_log
echo 'hist:keys=common_pid:ts1=common_timestamp.usecs:clock=mono' >> events/sched/sched_process_fork/trigger
echo top clock: $(sed 's/.*\[\(.*\)\].*/\1/' ../../trace_clock)
echo foo clock: $(sed 's/.*\[\(.*\)\].*/\1/' trace_clock)
echo 'wakeup_latency u64 lat; pid_t pid; int prio' >> ../../synthetic_events
echo 'hist:keys=pid:ts0=common_timestamp.usecs' >> events/sched/sched_waking/trigger
echo 'hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($lat,next_pid,sched.sched_waking.prio)' >> events/sched/sched_switch/trigger
echo 'hist:keys=next_pid:lat=common_timestamp.usecs-$ts0' >> ../../events/sched/sched_switch/trigger || echo top rejected
echo foo waking:; cat events/sched/sched_waking/trigger
echo top waking:; grep -v '^#' ../../events/sched/sched_waking/trigger
echo foo errors:; sed 's/^\[[ 0-9.]*\]/[T]/' error_log
echo top errors:; sed 's/^\[[ 0-9.]*\]/[T]/' ../../error_log
echo '!hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($lat,next_pid,sched.sched_waking.prio)' >> events/sched/sched_switch/trigger
echo foo waking after:; cat events/sched/sched_waking/trigger
echo '!hist:keys=pid:ts0=common_timestamp.usecs' >> events/sched/sched_waking/trigger
echo '!hist:keys=common_pid:ts1=common_timestamp.usecs:clock=mono' >> events/sched/sched_process_fork/trigger
cd ../..
echo '!wakeup_latency u64 lat; pid_t pid; int prio' >> synthetic_events
rmdir instances/foo && echo removed
