# tests/ptrace_tools/run.sh - run by the shell in the guest (this kernel's
# sh, busybox sh on reflinux): ministrace -f, -c and -e trace= of
# /bin/straced, each with the program's output, ministrace's messages and
# the trace in files of their own, so that nothing interleaves; -f of a
# thread (straced --thread); then
# ministrace -p attached to a looping child of `straced --attach-loop`.
cd /tmp
ministrace -f -o /tmp/trace /bin/straced >/tmp/out 2>/tmp/err
echo "--- -f status $?"
cat /tmp/out
echo "--- -f messages"
cat /tmp/err
echo "--- -f trace"
cat /tmp/trace
ministrace -f -c -o /tmp/count straced >/tmp/out 2>/tmp/err
echo "--- -c status $?"
cat /tmp/count
ministrace -e trace=write,openat,rt_sigprocmask,exit_group /bin/straced >/tmp/out 2>/tmp/trace
echo "--- -e status $?"
cat /tmp/trace
ministrace -f -o /tmp/trace straced --thread >/tmp/out 2>/tmp/err
echo "--- -f thread status $?"
cat /tmp/out
echo "--- -f trace"
cat /tmp/trace
straced --attach-loop 150 2>/tmp/err
echo "--- -p status $?"
cat /tmp/trace
echo "--- end"
