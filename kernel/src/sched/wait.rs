//! Wait queues: tasks sleep until a condition holds (Linux's
//! `wait_event`/`wake_up`).

use super::{current, schedule, wake_up, Task, TaskState};
use crate::sync::IrqSpinLock;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// Tasks waiting for an event.
pub struct WaitQueue {
    waiters: IrqSpinLock<Vec<Arc<Task>>>,
}

/// Why a wait ended early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// A signal is pending (the caller returns EINTR or restarts).
    Interrupted,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        WaitQueue {
            waiters: IrqSpinLock::new(Vec::new()),
        }
    }

    /// Sleeps until `cond()` is true. With `interruptible`, a pending signal
    /// ends the wait with `Interrupted`.
    pub fn wait_event(&self, interruptible: bool, mut cond: impl FnMut() -> bool) -> Result<(), WaitError> {
        loop {
            let me = current();
            {
                let mut w = self.waiters.lock();
                me.set_state(if interruptible {
                    TaskState::Interruptible
                } else {
                    TaskState::Uninterruptible
                });
                if !w.iter().any(|t| Arc::ptr_eq(t, &me)) {
                    w.push(me.clone());
                }
            }
            if cond() {
                self.remove(&me);
                me.set_state(TaskState::Running);
                return Ok(());
            }
            if interruptible && me.signal_pending() {
                self.remove(&me);
                me.set_state(TaskState::Running);
                return Err(WaitError::Interrupted);
            }
            schedule();
        }
    }

    fn remove(&self, t: &Arc<Task>) {
        self.waiters.lock().retain(|w| !Arc::ptr_eq(w, t));
    }

    /// Wakes every waiter; each re-checks its condition. They are taken
    /// off in small batches and woken outside the lock; the list keeps its
    /// capacity, so that the next wait's push allocates nothing (a wait
    /// and wake per ptrace stop otherwise paid an allocation each).
    pub fn wake_up_all(&self) {
        const BATCH: usize = 4;
        // Only those waiting now: a woken waiter that queues itself again
        // is not woken twice (but for a waiter leaving meanwhile, which
        // costs a spurious wake-up at worst).
        let mut left = self.waiters.lock().len();
        while left > 0 {
            let mut batch: [Option<Arc<Task>>; BATCH] = Default::default();
            {
                let mut w = self.waiters.lock();
                let n = left.min(BATCH).min(w.len());
                if n == 0 {
                    break;
                }
                for (slot, t) in batch.iter_mut().zip(w.drain(..n)) {
                    *slot = Some(t);
                }
                left -= n;
            }
            for t in batch.iter().flatten() {
                wake_up(t);
            }
        }
    }
}

/// Sleeps for `ns` nanoseconds (interruptible by signals): EINTR when a
/// signal ends the sleep early, ENOMEM when no timer can be armed.
pub fn sleep_ns(ns: u64) -> Result<(), crate::errno::Errno> {
    sleep_until_ns(crate::time::ktime_get_ns().saturating_add(ns))
}

/// Sleeps until `deadline` (ns since boot, as `ktime_get_ns`), as
/// `sleep_ns` does.
pub fn sleep_until_ns(deadline: u64) -> Result<(), crate::errno::Errno> {
    let me = current();
    // Cancelled on every return, so an interrupted sleep leaves no timer.
    let _timeout = crate::time::Timeout::arm(deadline)?;
    loop {
        me.set_state(TaskState::Interruptible);
        if crate::time::ktime_get_ns() >= deadline {
            me.set_state(TaskState::Running);
            return Ok(());
        }
        if me.signal_pending() {
            me.set_state(TaskState::Running);
            return Err(crate::errno::Errno::EINTR);
        }
        schedule();
    }
}
