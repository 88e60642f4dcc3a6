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

/// The bucket of `addr`, created if needed, with this caller counted as a
/// waiter. Counting under the table's lock pairs with [`unregister`]: a
/// bucket is removed only when no one holds it, so a waiter never sleeps on
/// a bucket that `wake` can no longer find.
fn register(addr: u64) -> Arc<Bucket> {
    let k = key(addr);
    let mut table = FUTEXES.lock();
    let b = table
        .entry(k)
        .or_insert_with(|| {
            Arc::new(Bucket {
                queue: WaitQueue::new(),
                tokens: IrqSpinLock::new(0),
                waiters: IrqSpinLock::new(0),
            })
        })
        .clone();
    *b.waiters.lock() += 1;
    b
}

/// Drops this caller's place in `b`; the last one out removes the bucket
/// (and any wake-up tokens nobody is left to consume), so a wait on a fresh
/// address leaves nothing behind, whatever its result.
fn unregister(addr: u64, b: &Arc<Bucket>) {
    let k = key(addr);
    let mut table = FUTEXES.lock();
    let mut waiters = b.waiters.lock();
    *waiters -= 1;
    if *waiters == 0 {
        *b.tokens.lock() = 0;
        if table.get(&k).is_some_and(|t| Arc::ptr_eq(t, b)) {
            table.remove(&k);
        }
    }
}

/// FUTEX_WAIT: sleeps if `*addr == val` until woken, the timeout passes, or
/// a signal arrives.
pub fn wait(addr: u64, val: u32, timeout_ns: Option<u64>) -> Result<(), Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    let b = register(addr);
    // Check under the registration so a wake between check and sleep is kept.
    let cur = crate::uaccess::get_user_u32(addr);
    let res = match cur {
        Err(e) => Err(e),
        Ok(v) if v != val => Err(Errno::EAGAIN),
        Ok(_) => {
            let deadline = timeout_ns.map(|t| crate::time::ktime_get_ns().saturating_add(t));
            if let Some(d) = deadline {
                crate::time::add_timer(d, crate::sched::current());
            }
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
    unregister(addr, &b);
    res
}

/// FUTEX_WAKE: wakes up to `n` waiters on `addr`; returns how many. The
/// caller checks alignment (see [`check_aligned`]).
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

/// Linux's get_futex_key: a futex word is 4-byte aligned, for every
/// operation (EINVAL), even a wake that would find no waiter.
pub fn check_aligned(addr: u64) -> Result<(), Errno> {
    if addr.is_multiple_of(4) {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}
