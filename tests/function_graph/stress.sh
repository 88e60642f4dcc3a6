# The function tracers on every function while user programs run on 4 CPUs
# and this shell switches tracers, filters and fprobe events, for $1
# seconds (tests/function_graph.rs): no crash, no hang, every hooked call
# returns to its caller, and at the end no site is left enabled.
bb=busybox
secs=${1:-10}
cd /sys/kernel/tracing
end=$(( $($bb date +%s) + secs ))
rm -f /tmp/stop
load() {
  n=0
  while [ ! -e /tmp/stop ]; do "$@" > /dev/null 2>&1; n=$((n+1)); done
  echo "load $1 ran $n"
}
load $bb ls -R /proc > /tmp/w1 &
load $bb cat /proc/self/stat > /tmp/w2 &
load $bb sh -c 'echo $PPID' > /tmp/w3 &
rounds=0
while [ $($bb date +%s) -lt $end ]; do
  echo function > current_tracer
  $bb sleep 0.2
  echo 'f:stress/fp vfs_read' >> dynamic_events
  echo 'f:stress/fpr vfs_read%return' >> dynamic_events
  echo 1 > events/stress/enable
  echo 'vfs_* sys_*' > set_ftrace_filter
  echo function_graph > current_tracer
  echo 3 > max_graph_depth
  $bb sleep 0.2
  echo 0 > max_graph_depth
  echo '!vfs_*' >> set_ftrace_filter
  echo > set_ftrace_filter
  echo 0 > tracing_on; $bb cat trace > /dev/null; echo 1 > tracing_on
  echo function > current_tracer
  echo 0 > events/stress/enable
  echo '-:stress/fp' >> dynamic_events
  echo '-:stress/fpr' >> dynamic_events
  echo nop > current_tracer
  rounds=$((rounds+1))
done
: > /tmp/stop
wait
$bb cat /tmp/w1 /tmp/w2 /tmp/w3 | $bb grep -c '^load .* ran [1-9]'
echo "rounds $rounds"
$bb grep -c . enabled_functions
$bb grep -c . dynamic_events
echo stress-done
