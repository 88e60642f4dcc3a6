# tests/trace_cmd/record.sh - run by busybox sh in the guest (this kernel
# and reflinux alike): Debian's trace-cmd records /bin/tcmdload four ways
# (events, an event in an instance, the function tracer on one function,
# a kprobe event) and
# reports each recording; then perf-tools' kprobe script (Debian's bash)
# traces a probe while tcmdload runs. (Its funccount needs the function
# profiler, which Debian's Linux lacks; tests/ftrace/profile.sh covers ours.)
# Each part prints its status and output; tests/trace_cmd.rs masks and
# compares them. Debian's and trace-cmd's trees are at / already
# (qemu-run.sh --root here; unpacked by the commands on reflinux).
# perf-tools' scripts need awk, sed, grep...: busybox's, after Debian's.
busybox mkdir -p /tmp/bb /var/tmp && busybox --install -s /tmp/bb || exit 125
export PATH=/usr/bin:/bin:/usr/sbin:/tmp/bb
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

# buffer_percent, which decides when trace-cmd's splices of
# trace_pipe_raw wake: its mode, default and range.
echo "=== buffer_percent"
busybox ls -l $T/buffer_percent | busybox cut -c1-10
busybox cat $T/buffer_percent
echo 101 2>/dev/null >$T/buffer_percent || echo "101 refused"
echo 0 >$T/buffer_percent && busybox cat $T/buffer_percent
echo 50 >$T/buffer_percent

part events -e sched_switch -e syscalls:sys_enter_getpid
# The same event recorded into an instance trace-cmd makes and removes.
part instance -B tcmdinst -e syscalls:sys_enter_getpid
busybox ls $T/instances
part function -p function -l __arm64_sys_getpid
echo 'p:tcmd_getpid __arm64_sys_getpid' >>$T/kprobe_events || echo "kprobe_events: $?"
part kprobe -e kprobes
echo '-:tcmd_getpid' >>$T/kprobe_events

# The scripts are #!/bin/bash; Debian's bash is /usr/bin/bash here.
echo "=== perf-tools kprobe"
# The workload runs once the script has enabled its probe and, a moment
# later, cleared the buffer (`echo > trace`).
(
    while [ "$(busybox cat $T/events/kprobes/tcmd/enable 2>/dev/null)" != 1 ]; do
        busybox sleep 0.1
    done
    busybox sleep 1
    /bin/tcmdload
) &
bash /usr/sbin/kprobe-perf -d 3 'p:tcmd __arm64_sys_getpid' 2>&1
echo "kprobe status $?"
wait

# trace-cmd's other commands on a kprobe event: list, start and show (the
# trace file), stat, and reset (which disables the events and removes the
# kprobe events, so that stat then shows none).
echo 'p:tcmd_getpid __arm64_sys_getpid' >>$T/kprobe_events || echo "kprobe_events: $?"
echo "=== list"
trace-cmd list -e kprobes 2>&1
echo "list status $?"
echo "=== show"
trace-cmd start -e kprobes:tcmd_getpid >/dev/null 2>&1
echo "start status $?"
/bin/tcmdload
trace-cmd show 2>&1 | busybox grep -e tcmdload -e '^# tracer'
echo "show status $?"
echo "=== stat"
trace-cmd stat 2>&1
echo "stat status $?"
echo "=== reset"
trace-cmd reset 2>&1
echo "reset status $?"
busybox cat $T/kprobe_events $T/tracing_on
trace-cmd stat 2>&1
echo "stat status $?"
