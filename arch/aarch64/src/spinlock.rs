//! The spin lock under the kernel's `IrqSpinLock` (Linux's
//! `arch_spinlock_t`), in two orderings:
//!
//! - `SpinMutex<T>` (`RCSC = true`): `LDAXR`/`STXR` to take it, `STLR` to
//!   free it, as `spin::Mutex` compiles. An unlock followed by a lock (of
//!   any lock) is then also ordered store-to-load, which code written
//!   against Rust's `Acquire`/`Release` on AArch64 may quietly rely on.
//! - `SpinMutex<T, false>`: what a lock strictly needs, written as
//!   barriers. Taking it: an exclusive load and store with no ordering of
//!   their own, then `DMB ISHLD`, which orders the load that saw the lock
//!   free before every access of the critical section (an acquire).
//!   Freeing it: `DMB ISHLD` and `DMB ISHST`, which order every load and
//!   store of the critical section before the store that frees the word
//!   (a release: load-to-store and store-to-store). Neither orders a
//!   store before a later load. That is its point: QEMU's TCG, on a host
//!   that keeps the other orders anyway, pays a locked host instruction
//!   (about 8 ns) for each `LDAXR` and `STLR`, and the trace event write
//!   path takes its ring buffer's lock once per event. Only for data whose
//!   users need nothing from the lock but the data itself.
//!
//! The data is reached only through a guard, which exists only while this
//! CPU holds the word: the same contract as `spin::Mutex`.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

/// A spin lock around a `T`; `RCSC` chooses the ordering (module comment).
pub struct SpinMutex<T, const RCSC: bool = true> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the data is only reached through a SpinMutexGuard, and the lock
// word lets one guard exist at a time, so sharing the lock between CPUs
// shares the data one holder at a time: what `T: Send` allows.
unsafe impl<T: Send, const RCSC: bool> Sync for SpinMutex<T, RCSC> {}
// SAFETY: moving the lock moves the `T`, which `T: Send` allows.
unsafe impl<T: Send, const RCSC: bool> Send for SpinMutex<T, RCSC> {}

/// Holds a [`SpinMutex`]; releases it when dropped.
pub struct SpinMutexGuard<'a, T, const RCSC: bool = true> {
    lock: &'a SpinMutex<T, RCSC>,
}

/// The release: every access before it (the critical section's) is ordered
/// before the store after it (the one that frees the lock word).
#[inline(always)]
fn release_fence() {
    use aarch64_cpu::asm::barrier;
    barrier::dmb(barrier::ISHLD);
    barrier::dmb(barrier::ISHST);
}

impl<T, const RCSC: bool> SpinMutex<T, RCSC> {
    /// The CAS's ordering on success: an acquire for `RCSC`, else none
    /// (the fence after it is the acquire).
    const TAKE: Ordering = if RCSC { Ordering::Acquire } else { Ordering::Relaxed };

    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        SpinMutex {
            locked: AtomicBool::new(false),
            data: UnsafeCell::new(value),
        }
    }

    /// Takes the lock if it is free.
    #[inline(always)]
    pub fn try_lock(&self) -> Option<SpinMutexGuard<'_, T, RCSC>> {
        if self.locked.load(Ordering::Relaxed) {
            return None;
        }
        self.try_lock_expecting_free()
    }

    /// [`Self::try_lock`] without its plain look at the lock first, for a
    /// lock its taker expects free (a CPU's own trace buffer, which only
    /// a reader elsewhere takes now and then): the look saves an
    /// exclusive pair when the lock is held, and costs a load otherwise.
    #[inline(always)]
    pub fn try_lock_expecting_free(&self) -> Option<SpinMutexGuard<'_, T, RCSC>> {
        self.locked
            .compare_exchange(false, true, Self::TAKE, Ordering::Relaxed)
            .ok()?;
        if !RCSC {
            // DMB ISHLD: the acquire (see the module comment).
            core::sync::atomic::fence(Ordering::Acquire);
        }
        Some(SpinMutexGuard { lock: self })
    }

    /// Takes the lock, spinning until it is free.
    #[inline(always)]
    pub fn lock(&self) -> SpinMutexGuard<'_, T, RCSC> {
        loop {
            if self
                .locked
                .compare_exchange_weak(false, true, Self::TAKE, Ordering::Relaxed)
                .is_ok()
            {
                if !RCSC {
                    core::sync::atomic::fence(Ordering::Acquire);
                }
                return SpinMutexGuard { lock: self };
            }
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
    }

    /// Whether some CPU holds it now (a hint: it may change at once).
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    /// The data, through a unique borrow of the lock (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T, const RCSC: bool> Deref for SpinMutexGuard<'_, T, RCSC> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: this guard exists only while its CPU holds the lock
        // word, so no other reference to the data exists meanwhile; the
        // acquire at locking ordered these accesses after the previous
        // holder's release.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T, const RCSC: bool> DerefMut for SpinMutexGuard<'_, T, RCSC> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`; `&mut self` makes the borrow unique
        // among this guard's borrows.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T, const RCSC: bool> Drop for SpinMutexGuard<'_, T, RCSC> {
    #[inline(always)]
    fn drop(&mut self) {
        if RCSC {
            self.lock.locked.store(false, Ordering::Release);
        } else {
            release_fence();
            // Relaxed after the fence: the barriers above are the release.
            self.lock.locked.store(false, Ordering::Relaxed);
        }
    }
}
