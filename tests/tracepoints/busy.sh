# Every sched event on while four shells fork, exec, pipe and sleep.
cd /sys/kernel/tracing || exit 1
echo > trace
echo 1 > events/sched/enable
for i in 1 2 3 4; do
    ( n=0; while [ $n -lt 15 ]; do busybox echo x | busybox cat > /dev/null; busybox usleep 1000; n=$((n + 1)); done ) &
done
wait
echo 0 > events/sched/enable
busybox grep -v '^#' trace
