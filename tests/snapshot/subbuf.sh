# buffer_subbuf_size_kb, run by Debian's busybox sh on this kernel and on
# Linux (tests/snapshot.rs): sizes accepted and refused, header_page,
# buffer sizes kept, a marker larger than a 4 KiB page in one event, and
# trace_pipe_raw handing out whole sub-buffers.
bb=busybox
cd /sys/kernel/tracing
echo 1408 > buffer_size_kb
cat buffer_subbuf_size_kb
$bb grep 'char data' events/header_page
for kb in 8 3 5 64 512 16; do
    echo $kb > buffer_subbuf_size_kb
    echo "$kb -> $(cat buffer_subbuf_size_kb)"
done
for kb in 513 2000 0 abc; do
    echo $kb > buffer_subbuf_size_kb || echo "$kb refused"
done
cat buffer_subbuf_size_kb
$bb grep 'char data' events/header_page
cat buffer_size_kb
echo > trace
s=$($bb printf 'X%.0s' $($bb seq 6000))
echo $s > trace_marker
$bb grep -c 'tracing_mark_write: X*$' trace
$bb grep -o 'X*$' trace | $bb wc -c
$bb dd if=per_cpu/cpu0/trace_pipe_raw bs=65536 count=1 2>/dev/null | $bb wc -c
echo 4 > buffer_subbuf_size_kb
cat buffer_subbuf_size_kb buffer_size_kb
