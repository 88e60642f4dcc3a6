# tests/debian/strace.sh - run by busybox sh in the guest (this kernel and
# reflinux alike): Debian's strace -f of /bin/straced, one trace file per
# process (-ff), with an empty environment so that nothing differs but the
# kernels. Prints the exit status, the program's output, strace's own
# messages, then each process's trace in pid order.
busybox tar -xf /bin/debian.tar -C / || exit 125
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
