# function_graph and function switched on every function while user programs
# run on 4 CPUs (tests/function_graph.rs, FGRAPH_STRESS=1): no crash, no
# hang, and no site left enabled.
bb=busybox
cd /sys/kernel/tracing
( i=0; while [ $i -lt 40 ]; do $bb ls -R /proc > /dev/null 2>&1; i=$((i+1)); done; echo w1 ) &
( i=0; while [ $i -lt 200 ]; do $bb cat /proc/self/stat >/dev/null; i=$((i+1)); done; echo w2 ) &
( i=0; while [ $i -lt 100 ]; do $bb sh -c 'echo $PPID' >/dev/null; i=$((i+1)); done; echo w3 ) &
i=0
while [ $i -lt 15 ]; do
  echo function_graph > current_tracer
  $bb sleep 0.3
  echo 3 > max_graph_depth
  echo function > current_tracer
  echo 0 > max_graph_depth
  echo function_graph > current_tracer
  echo 0 > tracing_on; $bb cat trace > /dev/null; echo 1 > tracing_on
  echo nop > current_tracer
  i=$((i+1))
done
wait
echo 'vfs_*' > set_ftrace_filter
echo function_graph > current_tracer
$bb cat /proc/version > /dev/null
echo nop > current_tracer
echo > set_ftrace_filter
$bb grep -c . enabled_functions
echo stress-done
