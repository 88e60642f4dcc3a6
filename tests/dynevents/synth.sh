# Synthetic events defined through synthetic_events and dynamic_events:
# the listings, format files (ID lines masked), errors with error_log
# (timestamps masked), removal.
cd /sys/kernel/tracing || exit 1
echo > dynamic_events
echo > error_log
try() { # file command
    echo "$2" >> $1 2>/dev/null
    echo "[$?] $1 < $2"
}
try dynamic_events 's:myev u64 lat; pid_t pid; char comm[16]; unsigned int x; s64 y; char name[]; s8 b; s16 h; bool f; gfp_t g; unsigned long[] st'
try synthetic_events 'myev2 int a; long b; unsigned char c; u16 d; char e'
try dynamic_events 's:synthetic/myev3 u32 v'
try synthetic_events 'wakeup_latency  u64 lat pid_t pid char comm[16]'
echo "== dynamic_events"; cat dynamic_events
echo "== synthetic_events"; cat synthetic_events
for e in myev myev2 myev3 wakeup_latency; do
    echo "== $e"
    busybox sed -e 's/^ID: [0-9]*$/ID: N/' events/synthetic/$e/format
done
try dynamic_events 's:myev u64 x'
try synthetic_events 'myev u64 x'
try dynamic_events 's:other/myev u64 x'
try dynamic_events 's:myev4'
try synthetic_events '!myev9'
try dynamic_events '-:synthetic/nonexist'
try synthetic_events 'myevent chr arg'
try synthetic_events 'myevent unsigned arg'
try synthetic_events 'myevent char str]; int v'
try synthetic_events 'mye-vent char str[]'
try synthetic_events 'myevent char str;[]'
try synthetic_events 'myevent char str[kdjdk]'
try synthetic_events 'myevent char str[257]'
try synthetic_events 'myevent u32 arr[4]'
try synthetic_events 'myevent ; char str[]'
try synthetic_events 'myevent'
echo "== error_log"
busybox sed -e 's/^\[ *[0-9.]*\]/[T]/' error_log
echo 1 > events/synthetic/myev/enable
try dynamic_events '-:synthetic/myev'
echo 0 > events/synthetic/myev/enable
try dynamic_events '!s:myev'
try synthetic_events '!myev2 int a'
try dynamic_events '-:myev3'
echo "== dynamic_events"; cat dynamic_events
echo > synthetic_events
echo "== after truncation"; cat dynamic_events; ls events/synthetic 2>&1 | busybox sed -e 's/^.*No such.*$/no synthetic directory/'
