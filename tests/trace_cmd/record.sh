# tests/trace_cmd/record.sh - run by busybox sh in the guest (this kernel
# and reflinux alike): Debian's trace-cmd records /bin/tcmdload three ways
# (events, the function tracer on one function, a kprobe event) and
# reports each recording. Each part prints its record status, then the
# report; tests/trace_cmd.rs masks and compares them.
busybox tar -xf /bin/debian.tar -C / || exit 125
busybox tar -xf /bin/trace-cmd.tar -C / || exit 125
export PATH=/usr/bin:/bin:/usr/sbin
cd /tmp || exit 125
T=/sys/kernel/tracing

part() {
    echo "=== $1"
    shift
    trace-cmd record -o /tmp/rec.dat "$@" /bin/tcmdload >/tmp/rec.out 2>&1
    echo "record status $?"
    trace-cmd report -i /tmp/rec.dat 2>&1
    echo "report status $?"
}

part events -e sched_switch -e syscalls:sys_enter_getpid
part function -p function -l __arm64_sys_getpid
echo 'p:tcmd_getpid __arm64_sys_getpid' >>$T/kprobe_events || echo "kprobe_events: $?"
part kprobe -e kprobes
echo '-:tcmd_getpid' >>$T/kprobe_events
