# Reading `trace` while the function tracers hook every function
# (tests/function_graph.rs): with options/pause-on-trace set (off by
# default, as on Linux 6.12, where such a read chases the writer too) the
# open stops recording into that buffer, so `cat trace` ends, for the top
# level and an instance, under function and function_graph. trace_pipe
# consumption keeps up with the same load: `head -n` of it ends.
bb=busybox
T=/sys/kernel/tracing
echo "default $($bb cat $T/options/pause-on-trace)"
$bb mkdir $T/instances/pause
for dir in $T $T/instances/pause; do
  echo 1 > $dir/options/pause-on-trace
  for tracer in function function_graph; do
    echo $tracer > $dir/current_tracer
    $bb sleep 1
    n=$($bb cat $dir/trace | $bb wc -l)
    [ "$n" -gt 1000 ] && echo "read $tracer ok" || echo "read $tracer: $n lines"
    n=$($bb head -n 5000 $dir/trace_pipe | $bb wc -l)
    echo "pipe $tracer $n"
    echo nop > $dir/current_tracer
  done
  echo 0 > $dir/options/pause-on-trace
done
$bb rmdir $T/instances/pause
echo pause-done
