# Hist triggers on a workload whose system calls are known: dd copying
# /dev/zero to /dev/null in blocks of 333 bytes (5 times), 777 (twice)
# and 4321 (once), that is one read(2) and one write(2) of each block.
# The `if` filter keeps the other system calls of the run out, so every
# table below is fixed by the workload alone.
cd /sys/kernel/tracing
bb=busybox
W=events/syscalls/sys_enter_write
R=events/syscalls/sys_enter_read
F='if count == 333 || count == 777 || count == 4321'
work() {
	$bb dd if=/dev/zero of=/dev/null bs=333 count=5 2>/dev/null
	$bb dd if=/dev/zero of=/dev/null bs=777 count=2 2>/dev/null
}
noerr() { $bb sed "s/^\[ *[0-9.]*\] //" error_log; }
echo "hist:keys=count:sort=count $F" >> $W/trigger
echo "hist:keys=count.log2:vals=count:sort=count.descending $F" >> $W/trigger
echo "hist:keys=count.buckets=500,fd.hex:vals=count.hex:sort=hitcount.descending,count $F" >> $W/trigger
echo "hist:keys=common_pid.execname:vals=count:nohitcount:pause $F" >> $W/trigger
cat $W/trigger
work
echo "hist:keys=common_pid.execname:vals=count:nohitcount:cont $F" >> $W/trigger
$bb dd if=/dev/zero of=/dev/null bs=4321 count=1 2>/dev/null
# The execname table names the pid, which differs from run to run.
cat $W/hist | $bb sed -E 's/\[ *[0-9]+\]/[PID]/'
echo '--- clear and remove'
echo "hist:keys=count:sort=count:clear $F" >> $W/trigger
echo "!hist:keys=count.log2:vals=count:sort=count.descending $F" >> $W/trigger
echo "!hist:keys=count.buckets=500,fd.hex:vals=count.hex:sort=hitcount.descending,count $F" >> $W/trigger
echo "!hist:keys=common_pid.execname:vals=count:nohitcount $F" >> $W/trigger
$bb dd if=/dev/zero of=/dev/null bs=777 count=3 2>/dev/null
cat $W/trigger
cat $W/hist
echo '--- errors'
echo > error_log
echo 'hist:keys=fd.bogus' 2>/dev/null >> $W/trigger || echo "EINVAL"
echo "hist:keys=count:sort=count $F" 2>/dev/null >> $W/trigger || echo "EEXIST"
echo 'hist:keys=fd:vals=count:sort=nosuch' 2>/dev/null >> $W/trigger || echo "EINVAL"
echo 'hist:keys=fd:clear' 2>/dev/null >> $W/trigger || echo "ENOENT"
echo 'hist:keys=fd:vals=count+buf.hex,$nosuch' 2>/dev/null >> $W/trigger || echo "EINVAL"
noerr
echo '--- named, shared by two events'
echo "hist:name=io:keys=count:vals=count:sort=count $F" >> $W/trigger
echo "hist:name=io:keys=count:vals=count:sort=count $F" >> $R/trigger
work
cat $R/trigger
cat $R/hist
echo 'hist:name=io:keys=fd' >> $R/trigger 2>/dev/null || echo "EINVAL"
noerr | $bb tail -n 3
echo > $W/trigger 2>/dev/null
echo > $R/trigger 2>/dev/null
# Without the list of commands (Linux's has some this kernel lacks).
$bb grep -v '^# traceon' $W/trigger
echo hist-test-done
