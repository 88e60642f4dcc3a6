//! In-kernel tests of the scheduler: kernel threads on all CPUs, wait
//! queues, sleeping.

use super::wait::WaitQueue;
use super::{wake_up, Task};
use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use ktest_macros::kernel_test;

static RAN_ON: [AtomicUsize; crate::percpu::NR_CPUS] = [const { AtomicUsize::new(0) }; crate::percpu::NR_CPUS];
static DONE: AtomicUsize = AtomicUsize::new(0);
static GATE: WaitQueue = WaitQueue::new();
static OPEN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn worker(n: usize) {
    // Sleep until the gate opens, then spin a little, yielding, to spread.
    GATE.wait_event(false, || OPEN.load(Ordering::Acquire) != 0).unwrap();
    for _ in 0..50 {
        RAN_ON[arch::cpu::cpu_id()].fetch_add(1, Ordering::Relaxed);
        // Real work per step, so that idle CPUs have time to take some.
        crate::time::udelay(200);
        super::yield_now();
    }
    let _ = n;
    DONE.fetch_add(1, Ordering::AcqRel);
}

#[kernel_test]
fn kthreads_sleep_wake_and_spread_over_cpus() {
    const N: usize = 8;
    DONE.store(0, Ordering::SeqCst);
    OPEN.store(0, Ordering::SeqCst);
    let before = super::task::live_kernel_stacks();
    let threads: alloc::vec::Vec<Arc<Task>> = (0..N)
        .map(|i| Task::new_kthread(worker, i, "kworker/test").unwrap())
        .collect();
    for t in &threads {
        wake_up(t);
    }
    // Let them all block on the gate.
    crate::sched::wait::sleep_ns(20_000_000).unwrap();
    assert_eq!(DONE.load(Ordering::SeqCst), 0, "workers ran past a closed gate");
    OPEN.store(1, Ordering::SeqCst);
    GATE.wake_up_all();
    // A hang guard only: a loaded host can slow the guest many times over.
    let deadline = crate::time::ktime_get_ns() + 30_000_000_000;
    while DONE.load(Ordering::SeqCst) < N {
        assert!(
            crate::time::ktime_get_ns() < deadline,
            "workers stuck: {} of {N} done",
            DONE.load(Ordering::SeqCst)
        );
        super::yield_now();
    }
    let cpus_used = RAN_ON.iter().filter(|c| c.load(Ordering::Relaxed) > 0).count();
    if crate::smp::num_online_cpus() > 1 {
        assert!(
            cpus_used > 1,
            "all work ran on one CPU: {:?}",
            RAN_ON
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect::<alloc::vec::Vec<_>>()
        );
    }
    drop(threads);
    // Give the last workers time to be switched out and freed.
    crate::sched::wait::sleep_ns(20_000_000).unwrap();
    assert_eq!(super::task::live_kernel_stacks(), before, "kernel stacks leaked");
}

#[kernel_test]
fn sleep_lasts_at_least_the_time_asked() {
    let t0 = crate::time::ktime_get_ns();
    crate::sched::wait::sleep_ns(30_000_000).unwrap();
    let dt = crate::time::ktime_get_ns() - t0;
    assert!(dt >= 30_000_000, "slept only {dt} ns");
    assert!(dt < 1_000_000_000, "slept {dt} ns");
}

/// Per worker: 1 while `current()` was itself at every step, 2 if not.
static SELF_SEEN: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

extern "C" fn checks_current(i: usize) {
    let mut ok = true;
    for _ in 0..200 {
        let me = super::current();
        ok &= me.comm_string() == alloc::format!("cur/{i}");
        // Moving between CPUs keeps `current` right, and the pid trace
        // entries take (kernel code stays on its CPU between the reads).
        ok &= super::current_trace_pid_on(crate::percpu::this_cpu()) == me.tid();
        super::yield_now();
        ok &= Arc::ptr_eq(&me, &super::current());
        ok &= super::current_trace_pid_on(crate::percpu::this_cpu()) == me.tid();
    }
    // A new thread ID (an exec's exchange with its leader) shows at once.
    let tid = super::current().tid();
    super::current().set_tid(tid + 1_000_000);
    ok &= super::current_trace_pid_on(crate::percpu::this_cpu()) == tid + 1_000_000;
    super::current().set_tid(tid);
    ok &= super::current_trace_pid_on(crate::percpu::this_cpu()) == tid;
    SELF_SEEN[i].store(if ok { 1 } else { 2 }, Ordering::SeqCst);
}

#[kernel_test]
fn current_is_the_running_task_across_switches_and_cpus() {
    let threads: alloc::vec::Vec<Arc<Task>> = (0..SELF_SEEN.len())
        .map(|i| {
            SELF_SEEN[i].store(0, Ordering::SeqCst);
            Task::new_kthread(checks_current, i, &alloc::format!("cur/{i}")).unwrap()
        })
        .collect();
    for t in &threads {
        wake_up(t);
    }
    // A hang guard only: a loaded host can slow the guest many times over.
    let deadline = crate::time::ktime_get_ns() + 30_000_000_000;
    while SELF_SEEN.iter().any(|s| s.load(Ordering::SeqCst) == 0) {
        assert!(crate::time::ktime_get_ns() < deadline, "workers stuck");
        super::yield_now();
    }
    assert!(
        SELF_SEEN.iter().all(|s| s.load(Ordering::SeqCst) == 1),
        "current() was another task"
    );
    // Wait for them to be switched out for good: then only our references
    // remain, so `current` neither leaked nor lost a count.
    for t in &threads {
        while t.on_cpu.load(Ordering::Acquire) || t.state() != super::TaskState::Dead {
            assert!(crate::time::ktime_get_ns() < deadline, "workers not dead");
            super::yield_now();
        }
    }
    crate::sched::wait::sleep_ns(5_000_000).unwrap();
    assert!(
        threads.iter().all(|t| Arc::strong_count(t) == 1),
        "a current() reference leaked"
    );
}

static SYNC_GATE: WaitQueue = WaitQueue::new();
static SYNC_OPEN: AtomicUsize = AtomicUsize::new(0);
static SYNC_DONE: AtomicUsize = AtomicUsize::new(0);

extern "C" fn sync_sleeper(_: usize) {
    SYNC_GATE
        .wait_event(false, || SYNC_OPEN.load(Ordering::Acquire) != 0)
        .unwrap();
    SYNC_DONE.fetch_add(1, Ordering::AcqRel);
}

#[kernel_test]
fn a_synchronous_wake_up_leaves_the_task_to_the_wakers_cpu_until_its_kick_is_paid() {
    SYNC_OPEN.store(0, Ordering::SeqCst);
    SYNC_DONE.store(0, Ordering::SeqCst);
    let t = Task::new_kthread(sync_sleeper, 0, "kworker/sync").unwrap();
    wake_up(&t);
    // A hang guard only: a loaded host can slow the guest many times over.
    let deadline = crate::time::ktime_get_ns() + 30_000_000_000;
    while t.state() == super::TaskState::Running || t.on_cpu.load(Ordering::Acquire) {
        assert!(crate::time::ktime_get_ns() < deadline, "the sleeper never slept");
        crate::sched::wait::sleep_ns(1_000_000).unwrap();
    }
    let me = arch::cpu::cpu_id();
    let other = crate::smp::online_cpus().find(|&c| c != me);
    SYNC_OPEN.store(1, Ordering::SeqCst);
    // Nothing here blocks or returns to user mode, so the kick stays owed
    // until it is paid below.
    super::with_sync_wakeups(|| SYNC_GATE.wake_up_all());
    assert_eq!(t.state(), super::TaskState::Running, "the sleeper was not woken");
    assert!(!super::left_to_sync_waker(&t, me), "the waker's CPU may not run it");
    if let Some(o) = other {
        assert!(
            super::left_to_sync_waker(&t, o),
            "CPU{o} may take it while CPU{me} owes its kick"
        );
    }
    super::flush_sync_kick();
    if let Some(o) = other {
        assert!(
            !super::left_to_sync_waker(&t, o),
            "CPU{o} still leaves it after the kick"
        );
    }
    while SYNC_DONE.load(Ordering::SeqCst) == 0 {
        assert!(crate::time::ktime_get_ns() < deadline, "the woken sleeper never ran");
        super::yield_now();
    }
}
