//! The spin lock under the kernel's `IrqSpinLock` (Linux's
//! `arch_spinlock_t`), with its ordering written as barriers that say
//! exactly what a lock needs:
//!
//! - taking it: an exclusive load and store of the lock word with no
//!   ordering of their own, then `DMB ISHLD`, which orders the load that
//!   saw the lock free before every access of the critical section (an
//!   acquire);
//! - releasing it: `DMB ISHLD` and `DMB ISHST`, which order every load and
//!   every store of the critical section before the store that frees the
//!   word (a release: load-to-store and store-to-store).
//!
//! Neither orders a store before a later load, which no lock needs. That
//! is the point: `LDAXR` and `STLR` (what `spin::Mutex` compiles to)
//! order all four ways, and QEMU's TCG, on a host that already keeps the
//! other three orders, pays a locked host instruction (about 8 ns) for
//! each; the trace event write path takes one lock per event.
//!
//! The data is reached only through a guard, which exists only while this
//! CPU holds the word: the same contract as `spin::Mutex`.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

/// A spin lock around a `T`.
pub struct SpinMutex<T> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the data is only reached through a SpinMutexGuard, and the lock
// word lets one guard exist at a time, so sharing the lock between CPUs
// shares the data one holder at a time: what `T: Send` allows.
unsafe impl<T: Send> Sync for SpinMutex<T> {}
// SAFETY: moving the lock moves the `T`, which `T: Send` allows.
unsafe impl<T: Send> Send for SpinMutex<T> {}

/// Holds a [`SpinMutex`]; releases it when dropped.
pub struct SpinMutexGuard<'a, T> {
    lock: &'a SpinMutex<T>,
}

/// The release: every access before it (the critical section's) is ordered
/// before the store after it (the one that frees the lock word).
#[inline(always)]
fn release_fence() {
    use aarch64_cpu::asm::barrier;
    barrier::dmb(barrier::ISHLD);
    barrier::dmb(barrier::ISHST);
}

impl<T> SpinMutex<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        SpinMutex {
            locked: AtomicBool::new(false),
            data: UnsafeCell::new(value),
        }
    }

    /// Takes the lock if it is free.
    #[inline(always)]
    pub fn try_lock(&self) -> Option<SpinMutexGuard<'_, T>> {
        if self.locked.load(Ordering::Relaxed) {
            return None;
        }
        self.locked
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .ok()?;
        // DMB ISHLD: the acquire (see the module comment).
        core::sync::atomic::fence(Ordering::Acquire);
        Some(SpinMutexGuard { lock: self })
    }

    /// Takes the lock, spinning until it is free.
    #[inline(always)]
    pub fn lock(&self) -> SpinMutexGuard<'_, T> {
        loop {
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                core::sync::atomic::fence(Ordering::Acquire);
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

impl<T> Deref for SpinMutexGuard<'_, T> {
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

impl<T> DerefMut for SpinMutexGuard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`; `&mut self` makes the borrow unique
        // among this guard's borrows.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for SpinMutexGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        release_fence();
        // Relaxed after the fence: the barriers above are the release.
        self.lock.locked.store(false, Ordering::Relaxed);
    }
}
