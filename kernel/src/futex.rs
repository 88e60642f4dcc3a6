//! Futexes: sleeping on a user word (FUTEX_WAIT/FUTEX_WAKE), keyed by
//! address space and address.

use crate::errno::Errno;
use crate::sched::wait::{WaitError, WaitQueue};
use crate::sync::IrqSpinLock;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;

/// futex operations.
pub const FUTEX_WAIT: u32 = 0;
/// Wake.
pub const FUTEX_WAKE: u32 = 1;
/// The op is private to the process (same keys here).
pub const FUTEX_PRIVATE_FLAG: u32 = 128;
/// Clock flag (ignored for relative waits).
pub const FUTEX_CLOCK_REALTIME: u32 = 256;

struct Bucket {
    queue: WaitQueue,
    /// Wake-ups granted and not yet consumed.
    tokens: IrqSpinLock<usize>,
    waiters: IrqSpinLock<usize>,
}

static FUTEXES: IrqSpinLock<BTreeMap<(usize, u64), Arc<Bucket>>> = IrqSpinLock::new(BTreeMap::new());

fn key(addr: u64) -> (usize, u64) {
    let mm = crate::sched::current()
        .mm
        .lock()
        .as_ref()
        .map_or(0, |m| Arc::as_ptr(m) as usize);
    (mm, addr)
}

fn bucket(addr: u64) -> Arc<Bucket> {
    FUTEXES
        .lock()
        .entry(key(addr))
        .or_insert_with(|| {
            Arc::new(Bucket {
                queue: WaitQueue::new(),
                tokens: IrqSpinLock::new(0),
                waiters: IrqSpinLock::new(0),
            })
        })
        .clone()
}

/// FUTEX_WAIT: sleeps if `*addr == val` until woken, the timeout passes, or
/// a signal arrives.
pub fn wait(addr: u64, val: u32, timeout_ns: Option<u64>) -> Result<(), Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    let b = bucket(addr);
    *b.waiters.lock() += 1;
    // Check under the registration so a wake between check and sleep is kept.
    let cur = crate::uaccess::get_user_u32(addr);
    let res = match cur {
        Err(e) => Err(e),
        Ok(v) if v != val => Err(Errno::EAGAIN),
        Ok(_) => {
            let deadline = timeout_ns.map(|t| crate::time::ktime_get_ns().saturating_add(t));
            // Cancelled when the wait ends, by wake-up, signal or timeout.
            let _timeout = match deadline.map(crate::time::Timeout::arm).transpose() {
                Ok(t) => t,
                Err(e) => {
                    *b.waiters.lock() -= 1;
                    return Err(e);
                }
            };
            let r = b.queue.wait_event(true, || {
                let mut tok = b.tokens.lock();
                if *tok > 0 {
                    *tok -= 1;
                    true
                } else {
                    deadline.is_some_and(|d| crate::time::ktime_get_ns() >= d)
                }
            });
            match r {
                Ok(()) if deadline.is_some_and(|d| crate::time::ktime_get_ns() >= d) => Err(Errno::ETIMEDOUT),
                Ok(()) => Ok(()),
                Err(WaitError::Interrupted) => Err(Errno::ERESTARTSYS),
            }
        }
    };
    *b.waiters.lock() -= 1;
    res
}

/// FUTEX_WAKE: wakes up to `n` waiters on `addr`; returns how many.
pub fn wake(addr: u64, n: u32) -> usize {
    let Some(b) = FUTEXES.lock().get(&key(addr)).cloned() else {
        return 0;
    };
    let waiting = *b.waiters.lock();
    let grant = waiting.saturating_sub(*b.tokens.lock()).min(n as usize);
    *b.tokens.lock() += grant;
    b.queue.wake_up_all();
    grant
}
