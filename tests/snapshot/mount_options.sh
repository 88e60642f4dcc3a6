# tracefs mount options, run by Debian's busybox sh on this kernel and on
# Linux (tests/snapshot.rs): uid=, gid=, mode= on remount, what
# /proc/mounts shows, chown of single files and a remount overriding it,
# new instances taking the options, and a bad option refused.
bb=busybox
cd /sys/kernel/tracing
own() { $bb stat -c "%u %g %a %n" "$@"; }
own . trace events/sched/enable
$bb grep -m1 tracefs /proc/mounts
$bb mount -o remount,gid=7 .
$bb grep -m1 tracefs /proc/mounts
own . trace events events/sched/enable
$bb chgrp 3 trace
$bb chown 4 events/sched
own trace events/sched
$bb mount -t tracefs -o remount,mode=755,uid=5 nodev .
$bb grep -m1 tracefs /proc/mounts
own . trace events events/sched
$bb mount -o remount,foo=1 . 2>/dev/null || echo "foo refused"
$bb mount -o remount,gid=x . 2>/dev/null || echo "gid=x refused"
$bb mkdir instances/x
$bb stat -c "%u %g %n" instances/x instances/x/trace
$bb rmdir instances/x
$bb mount -o remount,gid=0,uid=0,mode=700 .
$bb grep -m1 tracefs /proc/mounts
own . trace events/sched
