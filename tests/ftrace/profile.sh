# The function profiler seen from a shell, run by Debian's busybox sh on
# this kernel (tests/ftrace.rs): the files, the header of
# trace_stat/functionN, the hits of a function called a known number of
# times (the uname system call, which only the `busybox uname` runs below
# make) summed over the CPUs, and one line's columns with the numbers
# masked.
bb=busybox
cd /sys/kernel/tracing
echo "== files"
$bb ls trace_stat | $bb grep -c '^function[0-9]*$'
$bb cat function_profile_enabled options/graph-time options/sleep-time
echo "== header"
$bb head -2 trace_stat/function0
echo "== profile"
echo __arm64_sys_newuname > set_ftrace_filter
echo 1 > function_profile_enabled
$bb cat function_profile_enabled
for i in 1 2 3; do $bb uname > /dev/null; done
echo 0 > function_profile_enabled
$bb cat trace_stat/function* | $bb awk '/__arm64_sys_newuname/ { n += $2 } END { print "hits", n }'
$bb cat trace_stat/function* | $bb grep __arm64_sys_newuname | $bb head -1 |
    $bb sed -E 's/^( +__arm64_sys_newuname +)[0-9]/\1N/; s/[0-9]+(\.[0-9]+)? us +/D.DDD us    /g'
echo "== kept while off, cleared by the next enable"
$bb uname > /dev/null
$bb cat trace_stat/function* | $bb awk '/__arm64_sys_newuname/ { n += $2 } END { print "hits", n }'
echo 1 > function_profile_enabled
echo 0 > function_profile_enabled
$bb cat trace_stat/function* | $bb grep -c __arm64_sys_newuname
echo 2 > function_profile_enabled
$bb cat function_profile_enabled
echo x > function_profile_enabled || echo "not a number: refused"
echo 0 > function_profile_enabled
echo > set_ftrace_filter
