# The snapshot buffer, run by Debian's busybox sh on this kernel and on
# Linux (tests/snapshot.rs); pids, times and the need-resched flag (a tick
# may set it at any moment) are masked so that the output is one golden
# file.
bb=busybox
# (The comm too: whether a marker's writer has a saved comm yet is not
# the snapshot's business.)
mask() { $bb sed -e 's/^ *[^ ]*-[0-9]* *\[\([0-9]*\)\]/COMM-PID [\1]/' -e 's/ *[0-9]\+\.[0-9]\{6\}:/ TS:/' -e 's/^\([^ ]*-PID \[[^]]*\] .\)./\1./'; }
cd /sys/kernel/tracing
echo "== freed"
cat snapshot
echo "== allocated, empty"
echo 1 > snapshot
cat snapshot
echo "== a swap exchanges the buffers"
echo a > trace_marker
echo 1 > snapshot
echo b > trace_marker
echo 1 > snapshot
echo "-- trace"
$bb grep -v '^#' trace | mask
echo "-- snapshot"
cat snapshot | mask
echo "== 2 empties it"
echo 2 > snapshot
$bb head -4 snapshot
$bb grep -c tracing_mark_write trace
echo "== tracing_on stays with the trace array"
echo 0 > tracing_on
echo 1 > snapshot
cat tracing_on
echo 1 > tracing_on
echo 1 > snapshot
cat tracing_on
echo "== errors"
echo 0 > per_cpu/cpu0/snapshot || echo "per-cpu 0 refused"
echo abc > snapshot || echo "abc refused"
echo "== 0 frees"
echo 0 > snapshot
$bb head -4 snapshot
echo "== the snapshot trigger"
echo > trace
echo before > trace_marker
echo 'snapshot:1' > events/sched/sched_process_fork/trigger
$bb head -4 snapshot
echo 1 > events/sched/sched_process_fork/enable
( : ) ; ( : )
echo 0 > events/sched/sched_process_fork/enable
cat events/sched/sched_process_fork/trigger
$bb grep -o 'tracing_mark_write: before' snapshot
$bb grep -c 'tracing_mark_write: before' trace
$bb grep -c 'sched_process_fork:' trace
$bb grep -c 'sched_process_fork:' snapshot
echo snapshot > events/sched/sched_process_fork/trigger || echo "second snapshot refused"
echo 'snapshot+1' > events/sched/sched_process_fork/trigger || echo "snapshot+1 refused"
echo '!snapshot' > events/sched/sched_process_fork/trigger
$bb head -1 events/sched/sched_process_fork/trigger
echo 0 > snapshot
