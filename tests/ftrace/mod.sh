# The :mod: command of set_ftrace_filter and set_ftrace_notrace, run by
# Debian's busybox sh on this kernel and on Linux (tests/ftrace.rs): words
# for modules that are not loaded are kept and listed, removed with `!`,
# dropped by truncation; an excluded module (`:mod:!name`) selects the
# built-in functions.
bb=busybox
cd /sys/kernel/tracing
echo "== cached"
echo 'non_exist_func:mod:non_exist_module' > set_ftrace_filter; echo rc=$?
$bb cat set_ftrace_filter
echo '*:mod:nomod2' >> set_ftrace_filter; echo rc=$?
echo ':mod:nomod3' >> set_ftrace_filter; echo rc=$?
$bb cat set_ftrace_filter
echo '!*:mod:nomod2' >> set_ftrace_filter; echo rc=$?
$bb cat set_ftrace_filter
echo '!*:mod:nomod2' >> set_ftrace_filter; echo rc=$?
echo '!xyz:mod:nomod3' >> set_ftrace_filter; echo rc=$?
echo '!:mod:nomod3' >> set_ftrace_filter; echo rc=$?
$bb cat set_ftrace_filter
echo "== excluded module"
echo '__arm64_sys_newuname:mod:!nomod' > set_ftrace_filter; echo rc=$?
$bb cat set_ftrace_filter
echo '__arm64_sys_newunam?:mod:!*' >> set_ftrace_filter; echo rc=$?
echo '!__arm64_sys_newuname:mod:!nomod' >> set_ftrace_filter; echo rc=$?
$bb cat set_ftrace_filter
echo "== notrace"
echo 'foo:mod:nomod' > set_ftrace_notrace; echo rc=$?
$bb cat set_ftrace_notrace
echo > set_ftrace_notrace
$bb cat set_ftrace_notrace
echo "== stack_trace_filter"
echo 'foo:mod:nomod' > stack_trace_filter; echo rc=$?
echo "== truncation"
echo 'a:mod:b' > set_ftrace_filter
echo > set_ftrace_filter
$bb cat set_ftrace_filter
echo "== instance"
$bb mkdir instances/foo
echo '*:mod:foo' >> instances/foo/set_ftrace_filter; echo rc=$?
echo 'vfs_read:mod:bar' >> instances/foo/set_ftrace_filter; echo rc=$?
echo '*:mod:baz' >> instances/foo/set_ftrace_notrace; echo rc=$?
$bb cat instances/foo/set_ftrace_filter
$bb cat instances/foo/set_ftrace_notrace
$bb cat set_ftrace_filter
echo '!*:mod:foo' >> instances/foo/set_ftrace_filter; echo rc=$?
echo '!*:mod:nope' >> instances/foo/set_ftrace_filter; echo rc=$?
$bb cat instances/foo/set_ftrace_filter
echo function > instances/foo/current_tracer; echo rc=$?
$bb sleep 0.1
echo nop > instances/foo/current_tracer
echo traced: $($bb grep -vc '^#' instances/foo/trace)
$bb rmdir instances/foo; echo rc=$?
$bb mkdir instances/foo
$bb cat instances/foo/set_ftrace_filter
$bb cat instances/foo/set_ftrace_notrace
$bb rmdir instances/foo; echo rc=$?
