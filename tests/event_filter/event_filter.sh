#!/bin/sh
# Event filters and triggers on kprobe events, as a user drives them from
# a shell: run by tests/event_filter.rs here and on real Linux, which must
# print the same (event_filter.golden). Reads of known sizes (dd bs=N) make
# read(2) hits with count=N (the third argument, +16 in the pt_regs that
# __arm64_sys_read gets).
cd /sys/kernel/tracing || exit 1
bb=busybox
# The hits of an event: "name: count=N", without comm, pid, cpu, time and
# the probed address.
hits() { $bb grep -v '^#' trace | $bb sed -n -E "s/.* ($1): \(.*\) (count=[0-9]+)\$/\1: \2/p"; }
# The trigger file without its list of available commands (Linux's has
# snapshot and hist, which this kernel does not).
trig() { $bb grep -v '^# traceon' events/kprobes/rd/trigger; }
rd() { $bb dd if=/dev/zero of=/dev/null bs=$1 count=1 2>/dev/null; }

echo 'p:rd __arm64_sys_read count=+16(%x0):u64' > kprobe_events
echo 'p:wr __arm64_sys_write count=+16(%x0):u64' >> kprobe_events
echo "== filter"
cat events/kprobes/rd/filter
echo 'count == 123 || count == 456' > events/kprobes/rd/filter
cat events/kprobes/rd/filter
echo 1 > events/kprobes/rd/enable
rd 77; rd 123; rd 456; rd 88
echo 0 > events/kprobes/rd/enable
hits rd
echo "== bad filter"
echo > error_log
echo 'cnt > 1' > events/kprobes/rd/filter || echo "write failed: $?"
cat events/kprobes/rd/filter
$bb sed -e 's/^\[ *[0-9.]*\]/[TIME]/' error_log
echo '(count == 1' > events/kprobes/rd/filter 2>/dev/null || echo "unbalanced refused"
echo 'comm ~ 1' > events/kprobes/rd/filter 2>/dev/null || echo "unquoted refused"
echo 0 > events/kprobes/rd/filter
cat events/kprobes/rd/filter
echo "== system filter"
cat events/kprobes/filter
echo 'count == 99' > events/kprobes/filter
cat events/kprobes/filter
cat events/kprobes/rd/filter events/kprobes/wr/filter
echo 'nosuch == 1' > events/kprobes/filter || echo "system write failed: $?"
cat events/kprobes/rd/filter
echo 0 > events/kprobes/filter
cat events/kprobes/rd/filter
echo "== traceoff trigger"
echo > trace
trig
echo 'traceoff:1 if count == 99' > events/kprobes/rd/trigger
trig
cat events/kprobes/rd/enable
echo 'count > 90 && count < 100' > events/kprobes/rd/filter
echo 1 > events/kprobes/rd/enable
rd 98; rd 99; rd 97
cat tracing_on
hits rd
trig
echo 'traceoff' >> events/kprobes/rd/trigger || echo "second traceoff refused"
echo '!traceoff' >> events/kprobes/rd/trigger
trig
cat events/kprobes/rd/enable
echo 0 > events/kprobes/rd/enable
echo 0 > events/kprobes/rd/filter
echo 1 > tracing_on
echo "== enable_event in trigger mode"
echo > trace
echo 'enable_event:kprobes:wr:1 if count == 55' > events/kprobes/rd/trigger
cat events/kprobes/rd/enable events/kprobes/wr/enable
cat set_event
rd 54
cat events/kprobes/wr/enable
rd 55
cat events/kprobes/wr/enable
trig
echo x > /dev/null
hits rd
echo '!enable_event:kprobes:wr' >> events/kprobes/rd/trigger
cat events/kprobes/rd/enable events/kprobes/wr/enable
echo 0 > events/kprobes/wr/enable
trig
echo "== stacktrace trigger"
echo > trace
echo 'stacktrace:1 if count == 33' > events/kprobes/rd/trigger
rd 33
$bb grep -c '<stack trace>' trace
$bb grep -q '^ => ' trace && echo "frames listed"
echo '!stacktrace' >> events/kprobes/rd/trigger
echo "== bad triggers"
echo 'nosuch' > events/kprobes/rd/trigger || echo "unknown command refused"
echo 'enable_event:kprobes:nosuch' > events/kprobes/rd/trigger || echo "unknown target refused"
echo 'traceon if cnt == 1' > events/kprobes/rd/trigger || echo "bad filter refused"
$bb tail -3 error_log | $bb sed -e 's/^\[ *[0-9.]*\]/[TIME]/'
echo "== set_event"
$bb grep '^kprobes:' available_events
echo 'kprobes:rd' > set_event
cat set_event
echo 'kprobes:r*' > set_event || echo "no globs"
echo '!rd' >> set_event
cat set_event
echo > kprobe_events
echo done
