# tests/debian/strace.sh - run by busybox sh in the guest (this kernel and
# reflinux alike): Debian's strace -f of /bin/straced, one trace file per
# process (-ff), with an empty environment so that nothing differs but the
# kernels. Prints the exit status, the program's output, strace's own
# messages, then each process's trace in pid order. Debian's tree is at /
# already (qemu-run.sh --root here; unpacked by the commands on reflinux).
cd /tmp || exit 125
busybox env -i /usr/bin/strace -f -ff -o /tmp/trace /bin/straced >/tmp/out 2>/tmp/err
echo "status $?"
busybox cat /tmp/out
echo "--- strace's messages"
busybox cat /tmp/err
for p in $(busybox ls /tmp | busybox sed -n 's/^trace\.//p' | busybox sort -n); do
    echo "--- trace of $p"
    busybox cat "/tmp/trace.$p"
done
# A threaded program, one trace file per thread (-ff).
echo "=== strace -f -ff of a threaded program"
busybox env -i /usr/bin/strace -f -ff -o /tmp/thr /bin/stracethr >/tmp/out 2>/tmp/err
echo "status $?"
busybox cat /tmp/out
echo "--- strace's messages"
busybox cat /tmp/err
for p in $(busybox ls /tmp | busybox sed -n 's/^thr\.//p' | busybox sort -n); do
    echo "--- trace of $p"
    busybox cat "/tmp/thr.$p"
done
# The same in one file (-f): the threads' lines interleave as they ran, so
# tests/debian.rs compares each thread's lines, an interrupted call joined
# with its resumption. The pids come first, as trace headers, and each
# line's `PID   ` prefix becomes `[pid PID] `.
echo "=== strace -f of a threaded program"
busybox env -i /usr/bin/strace -f -o /tmp/thrf /bin/stracethr >/tmp/out 2>/tmp/err
echo "status $?"
busybox cat /tmp/out
echo "--- strace's messages"
busybox cat /tmp/err
for p in $(busybox sed -n 's/^\([0-9][0-9]*\) .*/\1/p' /tmp/thrf | busybox sort -nu); do
    echo "--- trace of $p"
done
echo "--- interleaved trace"
busybox sed 's/^\([0-9][0-9]*\)  */[pid \1] /' /tmp/thrf
# Fault injection (an error, a return value) and a signal filter.
echo "=== strace -e inject= -e signal="
busybox env -i /usr/bin/strace -o /tmp/inj -e signal=SIGUSR1 \
    -e inject=openat:error=ENOENT:when=2 -e inject=getpid:retval=42:when=1 \
    /bin/straceinj >/tmp/out 2>/tmp/err
echo "status $?"
busybox cat /tmp/out
echo "--- strace's messages"
busybox cat /tmp/err
echo "--- trace of $(busybox sed -n 's/^set_tid_address(.*= //p' /tmp/inj)"
busybox cat /tmp/inj
