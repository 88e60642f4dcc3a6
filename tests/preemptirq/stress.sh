# Every event on (`events/enable`) for $SECS seconds while shells fork,
# exec, pipe, sleep and read /proc on 4 CPUs; then each CPU's losses and a
# check of every line of `trace` (printed: the count of lines, the count
# and first few of malformed ones, the events seen).
bb=busybox
SECS=${SECS:-2}
cd /sys/kernel/tracing || exit 1
echo 0 > tracing_on
echo > trace
echo ${KB:-128} > buffer_size_kb
echo 1 > events/enable
echo 1 > tracing_on
start=$($bb date +%s)
end=$(( start + SECS ))
for i in 1 2 3 4; do
    ( while [ $($bb date +%s) -lt $end ]; do
        $bb echo x | $bb cat > /dev/null
        $bb ls /proc > /dev/null 2>&1
        $bb sh -c 'exit 3'
        $bb cat /proc/self/stat > /dev/null
        $bb usleep 500
      done ) &
done
wait
echo 0 > tracing_on
echo 0 > events/enable
echo "ran $(( $($bb date +%s) - start )) s"
for c in 0 1 2 3; do
    echo "cpu$c $($bb grep -E '^(entries|overrun|dropped events):' per_cpu/cpu$c/stats | $bb tr '\n' ' ')"
done
$bb grep -v '^#' trace > /tmp/t
echo "lines $($bb wc -l < /tmp/t)"
# A record: COMM-PID [CPU] five context columns, a timestamp, the event's
# name and its fields; a stack line; or the reader's loss notice.
# (System call events print as Linux's: `sys_NAME(ARGS)`, `sys_NAME -> RET`.)
head='^ *.+-[0-9]+ +\[00[0-3]\] [.dDb][.Nnp][.hHsZz][.0-9a-f][.0-9a-f] +[0-9]+\.[0-9]{6}: '
re="$head[a-z_0-9]+: |$head(sys|compat_sys)_[a-z_0-9]+\(.*\)\$|$head(sys|compat_sys)_[a-z_0-9]+ -> 0x[0-9a-f]+\$|^ => |^CPU:[0-3] \[LOST [0-9]+ EVENTS\]\$"
echo "malformed $($bb grep -cvE "$re" /tmp/t)"
$bb grep -vE "$re" /tmp/t | $bb head -5
echo "lost $($bb grep -c 'LOST' /tmp/t)"
echo "syscall_lines $($bb grep -cE "$head(sys|compat_sys)_[a-z_0-9]+(\(| -> )" /tmp/t)"
echo "events $($bb sed -n -e 's/^.*\[00[0-3]\] ..... *[0-9.]*: \([a-z_0-9]*\): .*$/\1/p' /tmp/t | $bb sort -u | $bb tr '\n' ' ')"
echo stress-done
