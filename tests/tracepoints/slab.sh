# Slab caches seen from a shell: /proc/slabinfo's header, and the
# kmem_cache_alloc/kmem_cache_free lines of path names (names_cache) and
# queued signals (sigqueue) for a small workload; tasks and open files have
# their caches (task_struct, filp), allocated with interrupts on, and
# tasks are freed with interrupts on;
# /proc/sys/vm/drop_caches takes 1..4.
cd /sys/kernel/tracing || exit 1
head -2 /proc/slabinfo
grep -q '^names_cache ' /proc/slabinfo && echo "slabinfo has names_cache"
grep -q '^sigqueue ' /proc/slabinfo && echo "slabinfo has sigqueue"
grep -q '^task_struct ' /proc/slabinfo && echo "slabinfo has task_struct"
grep -q '^filp ' /proc/slabinfo && echo "slabinfo has filp"
grep -q '^dentry ' /proc/slabinfo && echo "slabinfo has dentry"
echo 0 > tracing_on
echo > trace
echo 1 > events/kmem/kmem_cache_alloc/enable
echo 1 > events/kmem/kmem_cache_free/enable
echo 1 > tracing_on
ls / > /dev/null
busybox sleep 5 &
kill -USR1 $!
wait
echo 0 > tracing_on
echo 0 > events/kmem/enable
hex='[0-9a-f]*'
site="[A-Za-z0-9_.]*+0x$hex/0x$hex"
grep -q "kmem_cache_alloc: call_site=$site ptr=$hex bytes_req=4096 bytes_alloc=4096 gfp_flags=GFP_KERNEL node=-1 accounted=false" trace &&
    echo "names_cache object allocated"
grep -q "kmem_cache_free: call_site=putname+0x$hex/0x$hex ptr=$hex name=names_cache" trace &&
    echo "names_cache object freed by putname"
grep -q "kmem_cache_alloc: call_site=__sigqueue_alloc+0x$hex/0x$hex ptr=$hex bytes_req=[0-9]* bytes_alloc=[0-9]* gfp_flags=GFP_ATOMIC node=-1 accounted=true" trace &&
    echo "sigqueue entry allocated by __sigqueue_alloc"
grep -q "kmem_cache_free: call_site=$site ptr=$hex name=sigqueue" trace &&
    echo "sigqueue entry freed"
# Every names_cache object freed in the window was allocated in it.
grep -o "kmem_cache_free: .* ptr=$hex name=names_cache" trace | sed 's/.* ptr=\([0-9a-f]*\) .*/\1/' | sort -u > /tmp/freed
grep -o "kmem_cache_alloc: .* ptr=$hex bytes_req=4096 " trace | sed 's/.* ptr=\([0-9a-f]*\) .*/\1/' | sort -u > /tmp/allocated
[ -s /tmp/freed ] && ! grep -qvxF -f /tmp/allocated /tmp/freed && echo "freed names were allocated"
# Open files and tasks are allocated with interrupts on (no `d` in the
# flags column), as Linux's alloc_empty_file and dup_task_struct do.
grep -o "kmem_cache_free: .* ptr=$hex name=\(filp\|task_struct\)" trace | sed 's/.* ptr=\([0-9a-f]*\) .*/ptr=\1 /' | sort -u > /tmp/objs
grep "kmem_cache_alloc: " trace | grep -F -f /tmp/objs | awk '{print $3}' | sort -u > /tmp/flags
[ -s /tmp/flags ] && ! grep -q '^d' /tmp/flags && echo "open files and tasks allocated with interrupts on"
# Tasks are freed by free_task with interrupts on: Linux frees a
# task_struct from an RCU callback (softirq), this kernel once the switch
# away from the dead task has unmasked them; a sleeper killed in its sleep
# leaves nothing for the timer interrupt to free at the deadline it no
# longer waits for.
echo > trace
echo 'name == "task_struct"' > events/kmem/kmem_cache_free/filter
echo 1 > events/kmem/kmem_cache_free/enable
echo 1 > tracing_on
( : ); ( : ); ( : )
busybox sleep 1 &
busybox sleep 0.2
kill -USR1 $!
wait
busybox sleep 1.5
echo 0 > tracing_on
echo 0 > events/kmem/kmem_cache_free/enable
echo 0 > events/kmem/kmem_cache_free/filter
grep -o "] [^ ]*  *[0-9.]*: kmem_cache_free: .* name=task_struct" trace | cut -c3 > /tmp/tflags
[ "$(grep -c "" /tmp/tflags)" -ge 5 ] && echo "tasks freed: 5 or more"
[ -s /tmp/tflags ] && ! grep -q '^d' /tmp/tflags && echo "tasks freed with interrupts on"
grep -q "kmem_cache_free: call_site=free_task+0x$hex/0x$hex ptr=$hex name=task_struct" trace &&
    echo "tasks freed by free_task"
# drop_caches: write-only, 1..4 (3 frees page cache and slab), else EINVAL.
cat /proc/sys/vm/drop_caches 2>/dev/null || echo "drop_caches not readable"
echo 3 > /proc/sys/vm/drop_caches && echo "drop_caches 3 taken"
echo 2 > /proc/sys/vm/drop_caches && echo "drop_caches 2 taken"
echo 0 > /proc/sys/vm/drop_caches 2>/dev/null || echo "drop_caches 0 refused"
echo 5 > /proc/sys/vm/drop_caches 2>/dev/null || echo "drop_caches 5 refused"
exit 0
