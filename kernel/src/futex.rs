//! Futexes: sleeping on a user word, keyed by address space and address
//! (Linux's kernel/futex/). Waiters sit in a fixed table of hashed buckets,
//! as in Linux, so a wait on a new address allocates nothing that outlives
//! it: the only allocation is the waiter itself, freed when the wait ends.

use crate::errno::Errno;
use crate::sched::wait::{WaitError, WaitQueue};
use crate::sync::IrqSpinLock;
use crate::uaccess::UserPtr;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// futex operations and flags.
pub use uapi::futex::{
    FUTEX_BITSET_MATCH_ANY, FUTEX_CLOCK_REALTIME, FUTEX_CMP_REQUEUE, FUTEX_PRIVATE_FLAG, FUTEX_REQUEUE, FUTEX_WAIT,
    FUTEX_WAIT_BITSET, FUTEX_WAKE, FUTEX_WAKE_BITSET, FUTEX_WAKE_OP,
};

/// (address space, user address).
type Key = (usize, u64);

/// One sleeping task.
struct Waiter {
    queue: WaitQueue,
    bitset: u32,
    /// Where the waiter is queued now (a requeue moves it); changed only
    /// with its bucket's lock held.
    mm: AtomicUsize,
    addr: AtomicU64,
    /// Set, with the bucket's lock held, when a wake takes the waiter off
    /// its bucket.
    woken: AtomicBool,
}

impl Waiter {
    fn key(&self) -> Key {
        (self.mm.load(Relaxed), self.addr.load(Relaxed))
    }
}

const BUCKETS: usize = 256;

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_BUCKET: IrqSpinLock<Vec<Arc<Waiter>>> = IrqSpinLock::new(Vec::new());
static FUTEXES: [IrqSpinLock<Vec<Arc<Waiter>>>; BUCKETS] = [EMPTY_BUCKET; BUCKETS];

fn hash(k: Key) -> usize {
    let h = (k.0 as u64 ^ (k.1 >> 2)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 56) as usize % BUCKETS
}

/// Linux's get_futex_key: a futex word is 4-byte aligned (EINVAL) and in
/// user space (`access_ok`, else EFAULT), for every operation, even a wake
/// that would find no waiter.
fn key(uaddr: UserPtr) -> Result<Key, Errno> {
    if !uaddr.addr().is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    if !arch::uaccess::access_ok(uaddr, 4) {
        return Err(Errno::EFAULT);
    }
    let mm = crate::sched::current()
        .mm
        .lock()
        .as_ref()
        .map_or(0, |m| Arc::as_ptr(m) as usize);
    Ok((mm, uaddr.addr()))
}

/// Public form of the alignment rule, for callers that only check.
pub fn check_aligned(addr: UserPtr) -> Result<(), Errno> {
    key(addr).map(|_| ())
}

/// FUTEX_WAIT (relative `timeout_ns`) on `addr`.
pub fn wait(addr: UserPtr, val: u32, timeout_ns: Option<u64>) -> Result<(), Errno> {
    let deadline = timeout_ns.map(|t| crate::time::ktime_get_ns().saturating_add(t));
    wait_bitset(addr, val, deadline, FUTEX_BITSET_MATCH_ANY)
}

/// FUTEX_WAIT_BITSET: sleeps if `*addr == val` until a wake whose bitset
/// meets `bitset`, the absolute `deadline`, or a signal.
pub fn wait_bitset(addr: UserPtr, val: u32, deadline: Option<u64>, bitset: u32) -> Result<(), Errno> {
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    let k = key(addr)?;
    let w = Arc::new(Waiter {
        queue: WaitQueue::new(),
        bitset,
        mm: AtomicUsize::new(k.0),
        addr: AtomicU64::new(k.1),
        woken: AtomicBool::new(false),
    });
    {
        let mut b = FUTEXES[hash(k)].lock();
        b.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        b.push(w.clone());
    }
    // Read after queueing, so that a wake between the check and the sleep
    // is not lost (it marks the waiter woken).
    let res = match crate::uaccess::get_user_u32(addr) {
        Err(e) => Err(e),
        Ok(v) if v != val => Err(Errno::EAGAIN),
        Ok(_) => {
            // The timeout only wakes the task (the condition decides) and is
            // cancelled when the wait ends, by wake-up, signal or expiry.
            match deadline.map(crate::time::Timeout::arm).transpose() {
                Err(e) => Err(e),
                Ok(_timeout) => {
                    let timed_out = || deadline.is_some_and(|d| crate::time::ktime_get_ns() >= d);
                    match w.queue.wait_event(true, || w.woken.load(Relaxed) || timed_out()) {
                        Ok(()) if w.woken.load(Relaxed) => Ok(()),
                        Ok(()) => Err(Errno::ETIMEDOUT),
                        Err(WaitError::Interrupted) => Err(Errno::ERESTARTSYS),
                    }
                }
            }
        }
    };
    if unqueue(&w) {
        res
    } else {
        // A wake took us off the queue before we left: it counted us, so
        // the wait succeeded, as Linux's futex_unqueue returning 0 says.
        Ok(())
    }
}

/// Takes `w` off whatever bucket it is on now; false if a wake already did.
fn unqueue(w: &Arc<Waiter>) -> bool {
    loop {
        let k = w.key();
        let mut b = FUTEXES[hash(k)].lock();
        if w.woken.load(Relaxed) {
            return false;
        }
        // A requeue may have moved it between reading the key and locking.
        if w.key() != k {
            continue;
        }
        let i = b
            .iter()
            .position(|x| Arc::ptr_eq(x, w))
            .expect("queued waiter is on its bucket");
        b.remove(i);
        if b.is_empty() {
            // Give the memory back: an idle bucket holds nothing.
            *b = Vec::new();
        }
        return true;
    }
}

/// Wakes up to `n` waiters on `k` whose bitset meets `bitset`, taking them
/// off `b`; returns how many.
fn wake_locked(b: &mut Vec<Arc<Waiter>>, k: Key, n: usize, bitset: u32) -> usize {
    let mut woken = 0;
    let mut i = 0;
    while i < b.len() && woken < n {
        if b[i].key() == k && b[i].bitset & bitset != 0 {
            let w = b.remove(i);
            w.woken.store(true, Relaxed);
            w.queue.wake_up_all();
            woken += 1;
        } else {
            i += 1;
        }
    }
    if b.is_empty() {
        *b = Vec::new();
    }
    woken
}

/// FUTEX_WAKE: wakes up to `n` waiters on `addr`; returns how many.
pub fn wake(addr: UserPtr, n: u32) -> usize {
    wake_bitset(addr, n, FUTEX_BITSET_MATCH_ANY).unwrap_or(0)
}

/// FUTEX_WAKE_BITSET: wakes up to `n` waiters on `addr` whose bitset
/// meets `bitset`.
pub fn wake_bitset(addr: UserPtr, n: u32, bitset: u32) -> Result<usize, Errno> {
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    let k = key(addr)?;
    // Linux's futex_wake counts before comparing (`++ret >= nr_wake`), so a
    // count of 0, or a negative one, still wakes one waiter.
    let n = (n as i32).max(1) as usize;
    Ok(wake_locked(&mut FUTEXES[hash(k)].lock(), k, n, bitset))
}

/// FUTEX_REQUEUE and FUTEX_CMP_REQUEUE (with `cmp`): wakes up to `nr_wake`
/// waiters on `addr1` and moves up to `nr_requeue` more to `addr2`;
/// returns how many were woken or moved, as Linux's futex_requeue.
pub fn requeue(
    addr1: UserPtr,
    addr2: UserPtr,
    nr_wake: i32,
    nr_requeue: i32,
    cmp: Option<u32>,
) -> Result<usize, Errno> {
    if nr_wake < 0 || nr_requeue < 0 {
        return Err(Errno::EINVAL);
    }
    let k1 = key(addr1)?;
    let k2 = key(addr2)?;
    let (h1, h2) = (hash(k1), hash(k2));
    // The word is read before the buckets are locked: a fault must not be
    // taken with their interrupt-masking locks held. A waiter queues before
    // it reads the word, so one that saw the expected value is already on
    // its bucket when the requeue looks.
    if let Some(expected) = cmp {
        if crate::uaccess::get_user_u32(addr1)? != expected {
            return Err(Errno::EAGAIN);
        }
    }
    // Both buckets locked in index order.
    let (mut lo, mut hi) = if h1 == h2 {
        (FUTEXES[h1].lock(), None)
    } else {
        let a = FUTEXES[h1.min(h2)].lock();
        let b = FUTEXES[h1.max(h2)].lock();
        (a, Some(b))
    };
    let (b1, mut b2) = match hi.as_mut() {
        None => (&mut *lo, None),
        Some(hi) if h1 < h2 => (&mut *lo, Some(&mut **hi)),
        Some(hi) => (&mut **hi, Some(&mut *lo)),
    };
    let mut count = wake_locked(b1, k1, nr_wake as usize, FUTEX_BITSET_MATCH_ANY);
    let mut moved = 0;
    let mut i = 0;
    while i < b1.len() && moved < nr_requeue as usize {
        if b1[i].key() != k1 {
            i += 1;
            continue;
        }
        if let Some(b2) = b2.as_mut() {
            // Room first: a waiter's key always names the bucket it is on.
            // Without memory the requeue stops short, as if it had been
            // asked for fewer; the count says how many moved.
            if b2.try_reserve(1).is_err() {
                break;
            }
        }
        moved += 1;
        let w = &b1[i];
        w.mm.store(k2.0, Relaxed);
        w.addr.store(k2.1, Relaxed);
        match b2.as_mut() {
            // Another bucket: move it over.
            Some(b2) => {
                let w = b1.remove(i);
                b2.push(w);
            }
            // The same bucket (requeue to itself included): the new key is
            // enough, it keeps its place.
            None => i += 1,
        }
    }
    count += moved;
    Ok(count)
}

/// FUTEX_WAKE_OP (Linux's futex_wake_op): atomically applies the operation
/// encoded in `encoded` to the word at `addr2`, wakes up to `nr_wake`
/// waiters on `addr1` and, if the old value of `addr2` passes the encoded
/// comparison, up to `nr_wake2` on `addr2`; returns how many were woken.
///
/// The operation runs before the buckets are locked (a fault must not be
/// taken under their interrupt-masking locks). Waiters queue before they
/// read their word, so one that read the old value is already queued when
/// the wake looks, and one that queues later reads the new value.
pub fn wake_op(addr1: UserPtr, addr2: UserPtr, nr_wake: u32, nr_wake2: u32, encoded: u32) -> Result<usize, Errno> {
    use arch::uaccess::FutexOp;
    let k1 = key(addr1)?;
    let k2 = key(addr2)?;
    // Fields as Linux's futex_atomic_op_inuser decodes them.
    let sign_extend12 = |v: u32| ((v << 20) as i32) >> 20;
    let op = (encoded >> 28) & 7;
    let cmp = (encoded >> 24) & 15;
    let mut oparg = sign_extend12((encoded >> 12) & 0xfff);
    let cmparg = sign_extend12(encoded & 0xfff);
    if encoded & (8 << 28) != 0 {
        // FUTEX_OP_OPARG_SHIFT: the argument is a shift count; Linux masks
        // one out of range (and logs it).
        oparg = 1 << (oparg & 31);
    }
    let op = match op {
        0 => FutexOp::Set,
        1 => FutexOp::Add,
        2 => FutexOp::Or,
        3 => FutexOp::AndN,
        4 => FutexOp::Xor,
        _ => return Err(Errno::ENOSYS),
    };
    let old = arch::uaccess::futex_atomic_op(op, oparg as u32, addr2)? as i32;
    // The comparison is checked after the operation, as in Linux: an
    // unknown one leaves the word changed and fails with ENOSYS.
    let hit = match cmp {
        0 => old == cmparg,
        1 => old != cmparg,
        2 => old < cmparg,
        3 => old <= cmparg,
        4 => old > cmparg,
        5 => old >= cmparg,
        _ => return Err(Errno::ENOSYS),
    };
    // Linux counts before comparing (`++ret >= nr_wake`): 0 wakes one.
    let n1 = (nr_wake as i32).max(1) as usize;
    let n2 = (nr_wake2 as i32).max(1) as usize;
    let (h1, h2) = (hash(k1), hash(k2));
    if h1 == h2 {
        let mut b = FUTEXES[h1].lock();
        let mut woken = wake_locked(&mut b, k1, n1, FUTEX_BITSET_MATCH_ANY);
        if hit {
            woken += wake_locked(&mut b, k2, n2, FUTEX_BITSET_MATCH_ANY);
        }
        return Ok(woken);
    }
    // Both buckets locked in index order, as in `requeue`.
    let mut lo = FUTEXES[h1.min(h2)].lock();
    let mut hi = FUTEXES[h1.max(h2)].lock();
    let (b1, b2) = if h1 < h2 {
        (&mut *lo, &mut *hi)
    } else {
        (&mut *hi, &mut *lo)
    };
    let mut woken = wake_locked(b1, k1, n1, FUTEX_BITSET_MATCH_ANY);
    if hit {
        woken += wake_locked(b2, k2, n2, FUTEX_BITSET_MATCH_ANY);
    }
    Ok(woken)
}
