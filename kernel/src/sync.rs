//! Locks usable from both task and interrupt context.

crate::notrace_module!();

use arch::cpu::{local_irq_restore, local_irq_save, IrqFlags};
use arch::spinlock::{SpinMutex, SpinMutexGuard};
use core::ops::{Deref, DerefMut};

/// A spin lock that masks interrupts on this CPU while held (Linux's
/// `spin_lock_irqsave`), so that an interrupt handler taking the same lock
/// cannot deadlock against the code it interrupted. The lock itself is
/// `arch::spinlock::SpinMutex`, whose barriers cost QEMU's TCG nothing
/// where `LDAXR`/`STLR` cost a locked host instruction each.
pub struct IrqSpinLock<T> {
    inner: SpinMutex<T>,
}

/// Holds an `IrqSpinLock`; unlocks, enables preemption, then restores the
/// interrupt mask.
pub struct IrqSpinLockGuard<'a, T> {
    guard: Option<SpinMutexGuard<'a, T>>,
    flags: IrqFlags,
}

impl<T> IrqSpinLock<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        IrqSpinLock {
            inner: SpinMutex::new(value),
        }
    }

    /// Masks interrupts, disables preemption and takes the lock. The
    /// tracer hooks of both run before the lock is taken (and, at unlock,
    /// after it is released), so a tracer may take this lock itself.
    pub fn lock(&self) -> IrqSpinLockGuard<'_, T> {
        let flags = local_irq_save();
        crate::preempt::preempt_disable();
        IrqSpinLockGuard {
            guard: Some(self.inner.lock()),
            flags,
        }
    }

    /// Takes the lock on a path that masked interrupts itself (and so
    /// cannot be preempted): no second save of the mask, no preemption
    /// count, no tracer hook (the trace event write path, as Linux's ring
    /// buffer uses the `_notrace` forms).
    #[inline]
    pub fn lock_irqs_off(&self) -> SpinMutexGuard<'_, T> {
        debug_assert!(arch::cpu::irqs_disabled());
        self.inner.lock()
    }

    /// Takes the lock with interrupts left as they are, for a path that
    /// keeps every other taker on this CPU out by other means (the trace
    /// event write path: its per-CPU writing flag, set before and
    /// cleared after, turns away a writer in an interrupt that arrives in
    /// between, and the lock's other users mask interrupts). Kernel code
    /// is not preempted, so the holder stays on this CPU until it unlocks.
    #[inline]
    pub fn lock_guarded(&self) -> SpinMutexGuard<'_, T> {
        self.inner.lock()
    }

    /// [`IrqSpinLock::lock`] for a lock that [`IrqSpinLock::lock_guarded`]
    /// takers hold with interrupts on: such a holder may be stopped by a
    /// `stop_machine` (its stopper runs in an interrupt) that waits for
    /// every CPU, this one too. So this one waits with its cross-calls
    /// served between attempts, never spinning masked on the lock.
    pub fn lock_serving_calls(&self) -> IrqSpinLockGuard<'_, T> {
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            crate::smp::flush_pending_calls();
            core::hint::spin_loop();
        }
    }

    /// [`IrqSpinLock::lock_irqs_off`] if the lock is free.
    #[inline]
    pub fn try_lock_irqs_off(&self) -> Option<SpinMutexGuard<'_, T>> {
        debug_assert!(arch::cpu::irqs_disabled());
        self.inner.try_lock()
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<IrqSpinLockGuard<'_, T>> {
        let flags = local_irq_save();
        crate::preempt::preempt_disable();
        match self.inner.try_lock() {
            Some(g) => Some(IrqSpinLockGuard { guard: Some(g), flags }),
            None => {
                crate::preempt::preempt_enable();
                local_irq_restore(flags);
                None
            }
        }
    }
}

impl<T> Deref for IrqSpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("guard present until drop")
    }
}

impl<T> DerefMut for IrqSpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("guard present until drop")
    }
}

/// Interrupts masked on this CPU until dropped (Linux's `local_irq_save`
/// and `local_irq_restore` as a scope). A run of [`IrqSpinLock`] sections
/// inside one finds interrupts masked already and leaves them so: the run
/// masks and unmasks once instead of once per lock. Each unmasking is a
/// DAIF write, which QEMU handles by leaving its translated code for its
/// main loop; a ptrace stop and wait took some forty of them. For short
/// runs that neither sleep nor call `schedule`.
#[must_use = "interrupts are unmasked again when this is dropped"]
pub struct IrqsMasked(IrqFlags);

impl IrqsMasked {
    /// Masks interrupts (a no-op where they are masked already).
    #[inline(always)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> IrqsMasked {
        IrqsMasked(local_irq_save())
    }
}

impl Drop for IrqsMasked {
    #[inline(always)]
    fn drop(&mut self) {
        local_irq_restore(self.0);
    }
}

impl<T> Drop for IrqSpinLockGuard<'_, T> {
    fn drop(&mut self) {
        self.guard.take();
        crate::preempt::preempt_enable();
        local_irq_restore(self.flags);
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::{IrqSpinLock, IrqsMasked};
    use ktest_macros::kernel_test;

    static L: IrqSpinLock<u32> = IrqSpinLock::new(0);

    /// Locks taken inside an `IrqsMasked` scope leave interrupts masked
    /// when they unlock (the point of the scope: one unmasking for the
    /// run), a nested scope's end too, and the outer scope's end restores
    /// the state it found.
    #[kernel_test]
    fn irqs_masked_scope_keeps_its_locks_masked_and_restores_at_its_end() {
        let was = arch::cpu::irqs_disabled();
        {
            let _m = IrqsMasked::new();
            assert!(arch::cpu::irqs_disabled(), "the scope did not mask");
            *L.lock() += 1;
            assert!(arch::cpu::irqs_disabled(), "a lock's unlock in the scope unmasked");
            {
                let _inner = IrqsMasked::new();
                *L.lock() += 1;
            }
            assert!(arch::cpu::irqs_disabled(), "a nested scope's end unmasked");
        }
        assert_eq!(arch::cpu::irqs_disabled(), was, "the scope's end did not restore");
        let n = *L.lock();
        assert!(n >= 2);
    }

    /// The preemption count, now a plain load and store, counts a lock's
    /// section and comes back to where it was, nested or not.
    #[kernel_test]
    fn irq_spin_lock_sections_balance_the_preemption_count() {
        static M: IrqSpinLock<()> = IrqSpinLock::new(());
        let before = crate::preempt::preempt_count();
        {
            let _a = L.lock();
            assert_eq!(crate::preempt::preempt_count(), before + 1);
            {
                let _b = M.lock();
                assert_eq!(crate::preempt::preempt_count(), before + 2);
            }
            assert_eq!(crate::preempt::preempt_count(), before + 1);
        }
        assert_eq!(crate::preempt::preempt_count(), before);
    }
}
