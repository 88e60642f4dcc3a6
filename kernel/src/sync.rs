//! Locks usable from both task and interrupt context.

crate::notrace_module!();

use arch::cpu::{local_irq_restore, local_irq_save, IrqFlags};
use arch::spinlock::{SpinMutex, SpinMutexGuard};
use core::ops::{Deref, DerefMut};

/// A spin lock that masks interrupts on this CPU while held (Linux's
/// `spin_lock_irqsave`), so that an interrupt handler taking the same lock
/// cannot deadlock against the code it interrupted. `RCSC` chooses the
/// lock's ordering (`arch::spinlock`): `false` only for the ring buffers'
/// locks, whose users need nothing from them but the buffer.
pub struct IrqSpinLock<T, const RCSC: bool = true> {
    inner: SpinMutex<T, RCSC>,
}

/// Holds an `IrqSpinLock`; unlocks, enables preemption, then restores the
/// interrupt mask.
pub struct IrqSpinLockGuard<'a, T, const RCSC: bool = true> {
    guard: Option<SpinMutexGuard<'a, T, RCSC>>,
    flags: IrqFlags,
}

impl<T, const RCSC: bool> IrqSpinLock<T, RCSC> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        IrqSpinLock {
            inner: SpinMutex::new(value),
        }
    }

    /// Masks interrupts, disables preemption and takes the lock. The
    /// tracer hooks of both run before the lock is taken (and, at unlock,
    /// after it is released), so a tracer may take this lock itself.
    pub fn lock(&self) -> IrqSpinLockGuard<'_, T, RCSC> {
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
    pub fn lock_irqs_off(&self) -> SpinMutexGuard<'_, T, RCSC> {
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
    pub fn lock_guarded(&self) -> SpinMutexGuard<'_, T, RCSC> {
        self.inner.lock()
    }

    /// [`IrqSpinLock::lock_guarded`] if the lock is free (a path that must
    /// not spin, or call out of line), for a lock its taker expects free
    /// (a CPU's own trace buffer): no plain look at it before the
    /// exclusive pair.
    #[inline(always)]
    pub fn try_lock_guarded(&self) -> Option<SpinMutexGuard<'_, T, RCSC>> {
        self.inner.try_lock_expecting_free()
    }

    /// [`IrqSpinLock::lock`] for a lock that [`IrqSpinLock::lock_guarded`]
    /// takers hold with interrupts on: such a holder may be stopped by a
    /// `stop_machine` (its stopper runs in an interrupt) that waits for
    /// every CPU, this one too. So this one waits with its cross-calls
    /// served between attempts, never spinning masked on the lock.
    pub fn lock_serving_calls(&self) -> IrqSpinLockGuard<'_, T, RCSC> {
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
    pub fn try_lock_irqs_off(&self) -> Option<SpinMutexGuard<'_, T, RCSC>> {
        debug_assert!(arch::cpu::irqs_disabled());
        self.inner.try_lock()
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<IrqSpinLockGuard<'_, T, RCSC>> {
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

impl<T, const RCSC: bool> Deref for IrqSpinLockGuard<'_, T, RCSC> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("guard present until drop")
    }
}

impl<T, const RCSC: bool> DerefMut for IrqSpinLockGuard<'_, T, RCSC> {
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

impl<T, const RCSC: bool> Drop for IrqSpinLockGuard<'_, T, RCSC> {
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

    static COUNTED: IrqSpinLock<(u64, bool), false> = IrqSpinLock::new((0, false));
    static WORKERS_DONE: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
    const ROUNDS: u64 = 20_000;

    extern "C" fn count_under_the_lock(_: usize) {
        for _ in 0..ROUNDS {
            let mut g = COUNTED.lock();
            // Another holder inside now would see the flag set.
            assert!(!g.1, "two holders inside the lock at once");
            g.1 = true;
            let v = g.0;
            core::hint::spin_loop();
            g.0 = v + 1;
            g.1 = false;
        }
        WORKERS_DONE.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
    }

    /// The ring buffers' lock ordering (arch::spinlock's `RCSC = false`:
    /// DMB ISHLD after taking it, DMB ISHLD + ISHST before freeing it) is
    /// enough for a lock: threads on every
    /// CPU incrementing a plain counter under it lose no increment and
    /// never meet inside.
    #[kernel_test]
    fn increments_under_the_lock_from_every_cpu_are_never_lost() {
        let n = crate::smp::num_online_cpus().max(2);
        *COUNTED.lock() = (0, false);
        WORKERS_DONE.store(0, core::sync::atomic::Ordering::SeqCst);
        for _ in 0..n {
            let t = crate::sched::Task::new_kthread(count_under_the_lock, 0, "ktest/lock").expect("kthread");
            crate::sched::wake_up(&t);
        }
        let deadline = crate::time::ktime_get_ns() + 60_000_000_000;
        while WORKERS_DONE.load(core::sync::atomic::Ordering::SeqCst) < n {
            assert!(crate::time::ktime_get_ns() < deadline, "the workers did not finish");
            crate::sched::wait::sleep_ns(1_000_000).expect("sleep");
        }
        assert_eq!(COUNTED.lock().0, n as u64 * ROUNDS);
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
