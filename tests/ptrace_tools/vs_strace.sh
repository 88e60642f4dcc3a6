# tests/ptrace_tools/vs_strace.sh - run by busybox sh on reflinux: Debian's
# strace -f and ministrace -f of /bin/straced, each into a file, with an
# empty environment.
busybox tar -xf /bin/debian.tar -C / || exit 125
cd /tmp
busybox env -i /usr/bin/strace -f -o /tmp/strace /bin/straced >/dev/null 2>&1
busybox env -i /bin/ministrace -f -o /tmp/ministrace /bin/straced >/dev/null 2>&1
echo "--- -f trace"
busybox cat /tmp/strace
echo "--- -f trace"
busybox cat /tmp/ministrace
echo "--- end"
