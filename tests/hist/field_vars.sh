# Field variables: a field of the matched event (sched.sched_waking.prio)
# passed to a synthetic event makes a trigger on sched_waking with the
# keys and filter of its histogram and a synthetic_prio variable; that
# trigger goes with the one that made it. A trigger whose variables
# another reads cannot be removed or cleared (O_TRUNC leaves it). The
# writes of an empty line fail (EINVAL) on Linux too, after the O_TRUNC.
cd /sys/kernel/tracing
echo 'wakeup_latency u64 lat; pid_t pid; int prio; char comm[16]' > synthetic_events
echo 'hist:keys=comm:ts0=common_timestamp.usecs if comm=="sleeplat"' > events/sched/sched_waking/trigger
echo 'hist:keys=next_comm:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,sched.sched_waking.prio,next_comm) if next_comm=="sleeplat"' > events/sched/sched_switch/trigger
echo 'hist:keys=pid,prio,comm:vals=lat:sort=pid,prio' > events/synthetic/wakeup_latency/trigger
cat error_log
sleeplat 3 0 > /dev/null
cat events/sched/sched_waking/trigger
grep -c sleeplat events/synthetic/wakeup_latency/hist
grep -q "synthetic_prio=prio" events/sched/sched_waking/hist && echo has-field-var
echo '!hist:keys=next_comm:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,sched.sched_waking.prio,next_comm) if next_comm=="sleeplat"' >> events/sched/sched_switch/trigger
grep -q "synthetic_prio=prio" events/sched/sched_waking/hist && echo still-there
cat events/sched/sched_waking/trigger
echo 'hist:keys=next_comm:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,sched.sched_waking.prio,next_comm) if next_comm=="sleeplat"' > events/sched/sched_switch/trigger
echo > events/sched/sched_waking/trigger 2>/dev/null
cat events/sched/sched_waking/trigger
echo > events/sched/sched_switch/trigger 2>/dev/null
cat events/sched/sched_switch/trigger
cat events/sched/sched_waking/trigger
echo > events/sched/sched_waking/trigger 2>/dev/null
cat events/sched/sched_waking/trigger
echo > events/synthetic/wakeup_latency/trigger 2>/dev/null
echo '!wakeup_latency u64 lat; pid_t pid; int prio; char comm[16]' >> synthetic_events && echo gone
