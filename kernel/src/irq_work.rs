//! Work raised from any context, run soon after from the timer tick
//! (Linux's `irq_work` on an architecture without a dedicated IPI for it,
//! where `irq_work_tick` runs the list).
//!
//! A kprobe handler or an interrupt handler must not take a reader's locks
//! to wake it: the lock may be held by the very code it interrupted. It
//! queues an [`IrqWork`] instead, which only sets atomic flags, and the
//! next tick of the CPU that queued it (at most 1/HZ later) runs the work
//! with interrupts masked but outside whatever the raiser interrupted; as
//! in Linux, work queued with interrupts masked cannot run before they are
//! unmasked on that CPU. The queue is lock-free: each work item has a slot
//! in a fixed table, claimed once, and a pending word naming the CPU it
//! waits for; queueing an already pending item does nothing (as
//! `irq_work_queue` returns false then).

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use vfs::WaitQueueHead;

use crate::percpu::{smp_processor_id, NR_CPUS};

/// The most work items the kernel may ever create.
const MAX_WORKS: usize = 64;

enum Action {
    Call(fn()),
    Wake(Arc<WaitQueueHead>),
}

/// A piece of work that may be queued from interrupt or probe context.
pub struct IrqWork {
    action: Action,
    /// 0 when idle, else 1 + the CPU whose tick will run it.
    pending: AtomicUsize,
    /// Whether it has a slot in [`WORKS`].
    listed: AtomicBool,
}

static WORKS: [spin::Once<&'static IrqWork>; MAX_WORKS] = [const { spin::Once::new() }; MAX_WORKS];
static NR_WORKS: AtomicUsize = AtomicUsize::new(0);
/// Per CPU: set when work waits for that CPU's tick (the fast path).
static RAISED: [AtomicBool; NR_CPUS] = [const { AtomicBool::new(false) }; NR_CPUS];

impl IrqWork {
    /// Work that calls `func` (from the tick, with interrupts masked).
    pub const fn new(func: fn()) -> IrqWork {
        IrqWork {
            action: Action::Call(func),
            pending: AtomicUsize::new(0),
            listed: AtomicBool::new(false),
        }
    }

    /// Work that wakes the sleepers of `wq` (a blocked reader of a trace
    /// file, say). Made once per queue and kept for the kernel's life.
    /// Task-context code must touch `wq`'s hooks with interrupts masked
    /// (as [`crate::fs::add_wait_hook`] does), since the tick wakes it.
    pub fn waker(wq: Arc<WaitQueueHead>) -> &'static IrqWork {
        Box::leak(Box::new(IrqWork {
            action: Action::Wake(wq),
            pending: AtomicUsize::new(0),
            listed: AtomicBool::new(false),
        }))
    }

    /// Whether it is queued and has not run yet.
    pub fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire) != 0
    }

    fn run(&self) {
        match &self.action {
            Action::Call(f) => f(),
            Action::Wake(wq) => wq.wake_up(),
        }
    }
}

/// Queues `work` to run at the next tick: false if it was already pending
/// (it runs once for both). Safe from any context, interrupts masked or
/// not: it takes no lock. Panics if more than [`MAX_WORKS`] distinct work
/// items are ever queued (a fixed kernel resource, like Linux's static
/// irq_work users).
pub fn irq_work_queue(work: &'static IrqWork) -> bool {
    if !work.listed.swap(true, Ordering::AcqRel) {
        let slot = NR_WORKS.fetch_add(1, Ordering::AcqRel);
        assert!(slot < MAX_WORKS, "irq_work: more than {MAX_WORKS} work items");
        WORKS[slot].call_once(|| work);
    }
    let cpu = smp_processor_id();
    if work
        .pending
        .compare_exchange(0, cpu + 1, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return false;
    }
    RAISED[cpu].store(true, Ordering::Release);
    true
}

/// Runs the work pending on this CPU (from its timer tick).
pub fn irq_work_run() {
    let cpu = smp_processor_id();
    let raised = &RAISED[cpu];
    if !raised.swap(false, Ordering::AcqRel) {
        return;
    }
    let n = NR_WORKS.load(Ordering::Acquire).min(MAX_WORKS);
    for slot in &WORKS[..n] {
        // A slot being claimed right now is not filled yet: its work set
        // RAISED after filling it, so a later tick sees it.
        let Some(work) = slot.get() else {
            raised.store(true, Ordering::Release);
            continue;
        };
        if work
            .pending
            .compare_exchange(cpu + 1, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            work.run();
        }
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;
    use vfs::WaitHook;

    struct Flag(AtomicBool);

    impl WaitHook for Flag {
        fn wake(&self) {
            self.0.store(true, Ordering::Release);
        }
    }

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static COUNTING: IrqWork = IrqWork::new(|| {
        CALLS.fetch_add(1, Ordering::AcqRel);
    });

    /// Waits up to `ms` for `cond`, with interrupts on so that ticks run.
    fn wait_for(ms: u64, cond: impl Fn() -> bool) -> bool {
        for _ in 0..ms {
            if cond() {
                return true;
            }
            crate::time::udelay(1000);
        }
        cond()
    }

    #[kernel_test]
    fn irq_work_queued_with_irqs_masked_wakes_the_waiter_at_the_next_tick() {
        let wq = Arc::new(WaitQueueHead::new());
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let id = wq.add(flag.clone());
        let work = IrqWork::waker(wq.clone());
        let gen = wq.generation();
        let irq = arch::cpu::local_irq_save();
        assert!(irq_work_queue(work));
        // A second queueing before it ran is merged into the first.
        assert!(!irq_work_queue(work));
        // Deferred: nothing ran inside the masked section.
        assert!(work.is_pending());
        assert!(!flag.0.load(Ordering::Acquire));
        arch::cpu::local_irq_restore(irq);
        assert!(wait_for(200, || flag.0.load(Ordering::Acquire)), "waiter not woken");
        assert_eq!(wq.generation(), gen + 1);
        assert!(!work.is_pending());
        wq.remove(id);
    }

    #[kernel_test]
    fn irq_work_runs_once_per_queueing() {
        let before = CALLS.load(Ordering::Acquire);
        assert!(irq_work_queue(&COUNTING));
        assert!(wait_for(200, || CALLS.load(Ordering::Acquire) == before + 1));
        assert!(irq_work_queue(&COUNTING));
        assert!(wait_for(200, || CALLS.load(Ordering::Acquire) == before + 2));
        crate::time::udelay(20_000);
        assert_eq!(CALLS.load(Ordering::Acquire), before + 2);
    }
}
