# The output options raw, hex, bin and fields, run by Debian's busybox sh
# on this kernel and on Linux (tests/tracefs.rs): trace and trace_pipe for
# trace_marker, kprobe events with and without arguments, return probes,
# sched_switch, a syscall event, the function tracer, a stack trace,
# trace_marker_raw and function_graph, with the options' precedence,
# context-info off and an instance. Pids, times, kernel addresses and
# event ids are masked (an id shows as ID(name) when it is that event's).
bb=busybox
cd /sys/kernel/tracing
# normal lines: comm-PID [cpu] flags (need-resched masked) TS:
ctx() { $bb sed -e 's/^ *\([^ ]*\)-[0-9]* *\[\([0-9]*\)\] \(.\)[^ ]\([^ ]*\) *[0-9]*\.[0-9]*:/\1-PID [\2] \3.\4 TS:/'; }
# raw lines: pid cpu ts; hex lines: the same as hex words
rawctx() { $bb sed -e 's/^[0-9]\+ \([0-9]\+\) [0-9]\+ /PID \1 TS /' -e 's/^[0-9a-f]\{8\} \([0-9a-f]\{8\}\) [0-9a-f]\{16\} /PID \1 TS /'; }
addr() { $bb sed -e 's/\(0x\)\?ffff[0-9a-f]\{12\}\( (-[0-9]*)\)\?/ADDR/g'; }
ids() {
  for e in "$@"; do echo "s|type: $(cat events/$e/id)\$|type: ID($e)|"; done > /tmp/ids.sed
  $bb sed -f /tmp/ids.sed
}
body() { $bb grep -v '^#' trace; }
echo "== options: off, set and cleared through options/ and trace_options"
$bb grep -x -e raw -e noraw -e hex -e nohex -e bin -e nobin -e fields -e nofields trace_options
for o in raw hex bin fields; do
  echo 1 > options/$o; a=$(cat options/$o); echo no$o > trace_options; b=$(cat options/$o)
  echo $o > trace_options; c=$(cat options/$o); echo 0 > options/$o; echo "$o $a $b $c $(cat options/$o)"
done
echo 2 > options/raw || echo "2 refused"
echo "== trace_marker"
echo > trace
echo hello > trace_marker
echo "-- raw, with Linux's header"
echo 1 > options/raw; cat trace | rawctx | addr; echo 0 > options/raw
echo "-- hex"
echo 1 > options/hex; body | rawctx; echo 0 > options/hex
echo "-- bin: pid, cpu, time, then the text"
echo 1 > options/bin; $bb tail -c 24 trace > /tmp/b; echo 0 > options/bin
$bb dd if=/tmp/b bs=1 skip=4 count=4 2>/dev/null | $bb od -An -tx1
$bb dd if=/tmp/b bs=1 skip=16 2>/dev/null | $bb od -An -c
echo "-- fields"
echo 1 > options/fields; body | ctx; echo 0 > options/fields
echo "-- bin over hex over raw"
echo 1 > options/raw; echo 1 > options/hex; body | rawctx
echo 1 > options/bin; $bb tail -c 8 trace; echo 0 > options/bin; echo 0 > options/hex
echo "-- raw, hex and fields without context-info"
echo 0 > options/context-info
body | addr; echo 0 > options/raw
echo 1 > options/hex; body; echo 0 > options/hex
echo 1 > options/fields; body; echo 0 > options/fields
echo 1 > options/context-info
echo "-- raw in the latency format"
echo 1 > options/latency-format; echo 1 > options/raw; $bb tail -1 trace | rawctx | addr
echo 0 > options/raw; echo 0 > options/latency-format
echo "== kprobe events"
echo 'p:pa __arm64_sys_getpid n=\42 s=\"hi" c=$comm x=\-3:s8 u=\258:u16 h=\0x1234:x32 ch=\65:u8 nl=\10:u8 e=\""' > kprobe_events
echo 'p:pn __arm64_sys_getpid' >> kprobe_events
echo 'r:rn __arm64_sys_getpid' >> kprobe_events
echo 'r:rv __arm64_sys_getpid ret=$retval' >> kprobe_events
echo > trace
echo 1 > events/kprobes/enable
$bb sh -c 'echo $$ > /tmp/pid'
echo 0 > events/kprobes/enable
pid=$(cat /tmp/pid)
hpid=$($bb printf '%x' $pid)
for m in raw hex; do
  echo "-- $m"; echo 1 > options/$m; body | rawctx | ids kprobes/pa kprobes/pn kprobes/rn kprobes/rv | $bb sort; echo 0 > options/$m
done
echo "-- fields"
echo 1 > options/fields
# x=-3 as an s8 is the byte 0xfd, which Linux prints as itself (isprint is
# true for Latin-1); shown as @ so that the golden file stays UTF-8.
for e in pa pn rn rv; do
  body | $bb grep " $e: " | ctx | addr | $bb sed -e "s/ret=0x$hpid ($pid)\$/ret=PID/" | $bb tr '\375' '@'
done
echo 0 > options/fields
echo "-- bin: the text after each context"
echo 1 > options/bin; body > /tmp/b; echo 0 > options/bin
$bb grep -a -o 'type: [0-9]*' /tmp/b | ids kprobes/pa kprobes/pn kprobes/rn kprobes/rv | $bb sort
echo > kprobe_events
echo "== sched_switch"
echo > trace
echo 1 > events/sched/sched_switch/enable
$bb sleep 0.1
echo 0 > events/sched/sched_switch/enable
echo 1 > options/raw; body | $bb head -1 | rawctx | ids sched/sched_switch; echo 0 > options/raw
echo 1 > options/hex; body | $bb head -2 | rawctx | ids sched/sched_switch; echo 0 > options/hex
echo 1 > options/fields
body | $bb head -1 | ctx | $bb sed -e 's/=0x[0-9a-f]* (-\?[0-9]*)/=NUM/g' -e 's/_comm=[^ ]*/_comm=COMM/g' \
  -e 's/^[^ ]*-PID \[[0-9]*\] [^ ]* TS:/CTX:/'
echo 0 > options/fields
echo "== a syscall event: its const char * field is a user pointer, which Linux cannot read"
echo > trace
echo 1 > events/syscalls/sys_enter_openat/enable
$bb cat /bin/print_modes.sh > /dev/null
echo 0 > events/syscalls/sys_enter_openat/enable
echo 1 > options/fields
body | $bb grep 'flags=0x0 (0)' | $bb head -1 | ctx | $bb sed -e 's/filename=(0x[0-9a-f]\{16\})/filename=(0xUSERPTR)/'
echo 0 > options/fields
echo "== function tracer"
echo __arm64_sys_getpid > set_ftrace_filter
echo function > current_tracer
$bb sh -c 'echo $$ > /tmp/pid'
echo 0 > tracing_on
echo 1 > options/raw; body | rawctx | addr; echo 0 > options/raw
echo 1 > options/hex; body | rawctx | addr; echo 0 > options/hex
echo 1 > options/fields; body | ctx; echo 0 > options/fields
echo 1 > options/bin; body > /tmp/b; echo 0 > options/bin
$bb wc -c < /tmp/b
$bb dd if=/tmp/b bs=1 skip=22 count=2 2>/dev/null | $bb od -An -tx1
echo 1 > tracing_on
echo nop > current_tracer
echo > set_ftrace_filter
echo "== a stack trace entry"
echo 'p:ps __arm64_sys_getpid' > kprobe_events
echo stacktrace > events/kprobes/ps/trigger
echo 1 > events/kprobes/ps/enable
$bb sh -c 'echo $$ > /tmp/pid'
echo 0 > events/kprobes/ps/enable
echo '!stacktrace' > events/kprobes/ps/trigger
echo 1 > options/raw; body | rawctx | ids kprobes/ps; echo 0 > options/raw
echo 1 > options/hex; body | rawctx | ids kprobes/ps; echo 0 > options/hex
echo 1 > options/fields; body | ctx | addr; echo 0 > options/fields
echo > kprobe_events
echo "== trace_marker_raw"
echo > trace
$bb printf '\x03\x00\x00\x00\x01\x02\xab' > trace_marker_raw
# Linux does not clear an entry's padding: only the bytes written are known.
echo 1 > options/raw; body | rawctx | $bb sed -e 's/\(buf: 01 02 ab\).*/\1/'; echo 0 > options/raw
echo 1 > options/hex; body | rawctx; echo 0 > options/hex
echo 1 > options/fields; body | ctx; echo 0 > options/fields
echo "== function_graph keeps its own output"
echo __arm64_sys_getpid > set_ftrace_filter
echo function_graph > current_tracer
$bb sh -c 'echo $$ > /tmp/pid'
echo gmark > trace_marker
echo 0 > tracing_on
cat trace > /tmp/normal
$bb head -4 /tmp/normal
$bb grep -c getpid /tmp/normal
$bb grep gmark /tmp/normal | $bb sed -e 's/^ *[0-9]*)/ CPU)/'
for m in raw hex bin fields; do
  echo 1 > options/$m; cat trace > /tmp/m; echo 0 > options/$m
  $bb cmp -s /tmp/m /tmp/normal && echo "$m: the same"
done
echo 1 > tracing_on
echo nop > current_tracer
echo > set_ftrace_filter
echo "== trace_pipe"
echo 1 > options/raw
echo p1 > trace_marker
( $bb timeout 1 $bb cat trace_pipe | rawctx | addr ) 2>/dev/null
echo 0 > options/raw
echo 1 > options/hex
echo p2 > trace_marker
( $bb timeout 1 $bb cat trace_pipe | rawctx ) 2>/dev/null
echo 0 > options/hex
echo "== per instance"
mkdir instances/fm
echo 1 > instances/fm/options/raw
cat instances/fm/options/raw options/raw
$bb grep -x -e raw -e noraw instances/fm/trace_options trace_options
echo hi > instances/fm/trace_marker
echo hi > trace_marker
$bb grep -v '^#' instances/fm/trace | rawctx | addr
$bb tail -1 trace | ctx
echo nohex > instances/fm/trace_options
rmdir instances/fm
echo done
