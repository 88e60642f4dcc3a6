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
//!
//! Those items are the kernel's static ones. A waker for a queue that may
//! come and go (a trace instance's readers) is an [`IrqWaker`]: a flag of
//! its own, set lock-free, and one static item that wakes every flagged
//! waker; registering and unregistering it take a lock in task context,
//! so that no number of instances made and removed exhausts the table.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use vfs::WaitQueueHead;

use crate::percpu::{smp_processor_id, NR_CPUS};
use crate::sync::IrqSpinLock;

/// The most work items the kernel may ever create.
const MAX_WORKS: usize = 64;

/// A piece of work that may be queued from interrupt or probe context.
pub struct IrqWork {
    func: fn(),
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
            func,
            pending: AtomicUsize::new(0),
            listed: AtomicBool::new(false),
        }
    }

    /// Whether it is queued and has not run yet.
    pub fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire) != 0
    }

    fn run(&self) {
        (self.func)()
    }
}

/// Wakes the sleepers of a wait queue from the next tick (a blocked reader
/// of a trace file, say), queued from any context. Task-context code must
/// touch the queue's hooks with interrupts masked (as
/// [`crate::fs::add_wait_hook`] does), since the tick wakes it.
pub struct IrqWaker {
    wq: Arc<WaitQueueHead>,
    /// Set by [`IrqWaker::queue`], cleared by the tick that wakes `wq`.
    pending: AtomicBool,
}

/// Every registered waker. The tick walks it with the lock held (and
/// interrupts masked); registration and unregistration, in task context,
/// take it with interrupts masked too, so a tick never waits on its own
/// CPU. The list holds the strong references, so a waker is only ever
/// freed by [`IrqWakerHandle`]'s drop, in task context, never by a tick.
static WAKERS: IrqSpinLock<Vec<Arc<IrqWaker>>> = IrqSpinLock::new(Vec::new());

/// The one work item that runs every pending waker.
static WAKE_WORK: IrqWork = IrqWork::new(run_wakers);

fn run_wakers() {
    for w in WAKERS.lock().iter() {
        if w.pending.swap(false, Ordering::AcqRel) {
            w.wq.wake_up();
        }
    }
}

impl IrqWaker {
    /// A waker for `wq`, registered until the handle is dropped.
    pub fn register(wq: Arc<WaitQueueHead>) -> Result<IrqWakerHandle, uapi::Errno> {
        let w = Arc::new(IrqWaker {
            wq,
            pending: AtomicBool::new(false),
        });
        let mut list = WAKERS.lock();
        list.try_reserve(1).map_err(|_| uapi::Errno::ENOMEM)?;
        list.push(w.clone());
        Ok(IrqWakerHandle(w))
    }

    /// Queues the wake-up for the next tick: false if one was already
    /// pending. Lock-free, from any context.
    pub fn queue(&self) -> bool {
        if self.pending.swap(true, Ordering::AcqRel) {
            return false;
        }
        irq_work_queue(&WAKE_WORK);
        true
    }

    /// Whether a wake-up is queued and has not run yet.
    /// Relaxed: a hint (queueing swaps the flag), read after every event.
    pub fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }
}

/// A registered [`IrqWaker`]; dropping it (in task context) unregisters
/// it, after which no tick wakes its queue.
pub struct IrqWakerHandle(Arc<IrqWaker>);

impl core::ops::Deref for IrqWakerHandle {
    type Target = IrqWaker;

    fn deref(&self) -> &IrqWaker {
        &self.0
    }
}

impl Drop for IrqWakerHandle {
    fn drop(&mut self) {
        // Out of the list under the lock, so no tick is using it; the last
        // reference then goes here, in task context.
        WAKERS.lock().retain(|w| !Arc::ptr_eq(w, &self.0));
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
        let work = IrqWaker::register(wq.clone()).unwrap();
        let gen = wq.generation();
        let irq = arch::cpu::local_irq_save();
        assert!(work.queue());
        // A second queueing before it ran is merged into the first.
        assert!(!work.queue());
        // Deferred: nothing ran inside the masked section.
        assert!(work.is_pending());
        assert!(!flag.0.load(Ordering::Acquire));
        arch::cpu::local_irq_restore(irq);
        assert!(wait_for(200, || flag.0.load(Ordering::Acquire)), "waiter not woken");
        assert_eq!(wq.generation(), gen + 1);
        assert!(!work.is_pending());
        wq.remove(id);
    }

    /// Trace instances come and go: wakers made and dropped without end
    /// neither exhaust the work table nor stay registered.
    #[kernel_test]
    fn irq_wakers_registered_and_dropped_without_limit() {
        let before = WAKERS.lock().len();
        for _ in 0..1000 {
            let w = IrqWaker::register(Arc::new(WaitQueueHead::new())).unwrap();
            w.queue();
        }
        assert_eq!(WAKERS.lock().len(), before);
        assert!(NR_WORKS.load(Ordering::Acquire) <= MAX_WORKS);
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
