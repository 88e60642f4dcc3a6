//! Locks usable from both task and interrupt context.

crate::notrace_module!();

use arch::cpu::{local_irq_restore, local_irq_save, IrqFlags};
use core::ops::{Deref, DerefMut};

/// A spin lock that masks interrupts on this CPU while held (Linux's
/// `spin_lock_irqsave`), so that an interrupt handler taking the same lock
/// cannot deadlock against the code it interrupted.
pub struct IrqSpinLock<T> {
    inner: spin::Mutex<T>,
}

/// Holds an `IrqSpinLock`; unlocks, enables preemption, then restores the
/// interrupt mask.
pub struct IrqSpinLockGuard<'a, T> {
    guard: Option<spin::MutexGuard<'a, T>>,
    flags: IrqFlags,
}

impl<T> IrqSpinLock<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        IrqSpinLock {
            inner: spin::Mutex::new(value),
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
    pub fn lock_irqs_off(&self) -> spin::MutexGuard<'_, T> {
        debug_assert!(arch::cpu::irqs_disabled());
        self.inner.lock()
    }

    /// [`IrqSpinLock::lock_irqs_off`] if the lock is free.
    #[inline]
    pub fn try_lock_irqs_off(&self) -> Option<spin::MutexGuard<'_, T>> {
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

impl<T> Drop for IrqSpinLockGuard<'_, T> {
    fn drop(&mut self) {
        self.guard.take();
        crate::preempt::preempt_enable();
        local_irq_restore(self.flags);
    }
}
