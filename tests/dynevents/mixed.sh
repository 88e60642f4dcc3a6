# Kprobes, synthetic events and event probes together in dynamic_events:
# the listing keeps the order they were made in, each type's own file
# lists and truncates only its own, and an enabled event keeps
# dynamic_events from being truncated.
cd /sys/kernel/tracing || exit 1
echo 0 > events/enable
echo > dynamic_events
echo 'p:myevent1 vfs_read' >> dynamic_events
echo 's:latency1 u64 lat; pid_t pid;' >> dynamic_events
echo 'r:myevent2 vfs_read' >> dynamic_events
echo 'e:myep sched.sched_switch prev=$prev_pid' >> dynamic_events
echo 'latency2 u64 lat; char name[]' >> synthetic_events
echo 'p:myevent3 vfs_write' >> kprobe_events
echo "== dynamic_events"; cat dynamic_events
echo "== kprobe_events"; cat kprobe_events
echo "== synthetic_events"; cat synthetic_events
echo 1 > events/eprobes/myep/enable
echo > dynamic_events 2>/dev/null; echo "truncate while enabled: $?"
echo 0 > events/eprobes/myep/enable
echo > kprobe_events
echo "== after kprobe_events truncation"; cat dynamic_events
echo > synthetic_events
echo "== after synthetic_events truncation"; cat dynamic_events
echo '!e:myep sched.sched_switch' >> dynamic_events; echo "removed: $?"
echo "== at last"; cat dynamic_events
