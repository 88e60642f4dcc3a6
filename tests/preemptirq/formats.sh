# The preemptirq events' format files, ID lines masked.
cd /sys/kernel/tracing || exit 1
for e in irq_disable irq_enable preempt_disable preempt_enable; do
    echo "== preemptirq/$e"
    busybox sed -e 's/^ID: [0-9]*$/ID: N/' events/preemptirq/$e/format
done
