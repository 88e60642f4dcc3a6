# tests/gdbserver/run.sh - run by busybox sh in the guest (this kernel and
# reflinux alike): Debian's gdbserver over stdio, driven by rspclient
# through each recorded session. Prints every dialogue, then gdbserver's
# own messages (which hold the debuggee's output). Debian's and
# gdbserver's trees are at / already (qemu-run.sh --root here; unpacked by
# the commands on reflinux).
cd /tmp || exit 125
for s in session session-kill session-detach; do
    echo "=== $s"
    # gdbserver starts its inferior through $SHELL (exec): Debian's bash.
    busybox env -i SHELL=/usr/bin/bash /bin/rspclient "/bin/$s.rsp" /usr/bin/gdbserver - /bin/debuggee 2>"/tmp/$s.err"
    echo "rspclient status $?"
done
# The detached debuggee runs on alone: wait (at most 5 s) for its line.
i=0
while ! busybox grep -q exits /tmp/session-detach.err && [ $i -lt 50 ]; do
    busybox sleep 0.1
    i=$((i + 1))
done
for s in session session-kill session-detach; do
    echo "=== gdbserver's messages in $s"
    busybox cat "/tmp/$s.err"
done
