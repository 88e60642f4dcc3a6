# irq_disable and irq_enable on while shells run on every CPU; prints the
# events' lines as CPU, context columns and event name.
cd /sys/kernel/tracing || exit 1
echo 0 > tracing_on
echo > trace
echo 64 > buffer_size_kb
echo 1 > events/preemptirq/irq_disable/enable
echo 1 > events/preemptirq/irq_enable/enable
echo 1 > tracing_on
for i in 1 2 3 4; do
    ( n=0; while [ $n -lt 10 ]; do busybox echo x | busybox cat > /dev/null; busybox ls /proc > /dev/null; n=$((n + 1)); done ) &
done
wait
echo 0 > tracing_on
echo 0 > events/preemptirq/irq_disable/enable
echo 0 > events/preemptirq/irq_enable/enable
# CPU, context columns, event, caller of each line; then per CPU whether
# disable and enable alternate.
busybox sed -n -e 's/^.*\[\(00[0-9]\)\] \(.....\) .*: \(irq_[a-z]*\): caller=\([^ ]*\) parent=.*$/\1 \2 \3 \4/p' trace |
busybox awk '{ n++; if (substr($2, 1, 1) != "d") { notd++; if (!ex) ex = $0 }
    if (!($4 ~ /\+0x/)) { nosym++; if (!ex) ex = $0 }
    if ($1 in last && last[$1] == $3) { twice++; if (!ex) ex = $0 }
    last[$1] = $3 }
    END { for (c in last) cpus++
          printf "lines %d cpus %d irqs_on %d nosym %d twice %d\n", n, cpus, notd, nosym, twice
          if (ex) print "first bad: " ex }'
