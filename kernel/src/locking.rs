//! Linux's sleeping mutex (kernel/locking/mutex.c) and its out-of-line,
//! traceable entry points: `mutex_lock`, `mutex_trylock`, `mutex_unlock`,
//! and the spin lock that guards a mutex's waiters, `_raw_spin_lock` and
//! `_raw_spin_unlock` (kernel/locking/spinlock.c); and the console lock's
//! `console_lock` and `console_unlock` (kernel/printk/printk.c).
//!
//! Unlike `crate::sync::IrqSpinLock` and `spin::Mutex`, which the tracing,
//! probing and exception machinery use and which are inlined and notrace,
//! these functions have patch sites and can be traced and probed under
//! Linux's names, as on Linux. So a [`Mutex`] is for process context
//! outside that machinery (the tracefs control files' locks, such as
//! Linux's `trace_types_lock` and `ftrace_profile_lock`), never for code a
//! tracer, probe or interrupt handler runs. The kernel is not preemptible,
//! so the waiters' spin lock needs no preemption count; no interrupt
//! handler takes it, so it leaves interrupts as they are.

use crate::sched::{self, Task, TaskState};
use crate::sync::{IrqSpinLock, IrqSpinLockGuard};
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

/// A bare spin lock (Linux's `raw_spinlock_t`), taken and released through
/// the traceable `_raw_spin_*` functions.
pub struct RawSpinLock {
    locked: AtomicBool,
}

impl RawSpinLock {
    /// An unlocked lock.
    pub const fn new() -> RawSpinLock {
        RawSpinLock {
            locked: AtomicBool::new(false),
        }
    }
}

impl Default for RawSpinLock {
    fn default() -> Self {
        Self::new()
    }
}

/// Takes `lock`, spinning while another CPU holds it (Linux's
/// `_raw_spin_lock`).
#[allow(unsafe_code)] // export_name: Linux's name for the function tracer
#[export_name = "_raw_spin_lock"]
#[inline(never)]
pub fn raw_spin_lock(lock: &RawSpinLock) {
    while lock
        .locked
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        while lock.locked.load(Ordering::Relaxed) {
            core::hint::spin_loop();
        }
    }
}

/// Releases `lock` (Linux's `_raw_spin_unlock`).
#[allow(unsafe_code)] // export_name
#[export_name = "_raw_spin_unlock"]
#[inline(never)]
pub fn raw_spin_unlock(lock: &RawSpinLock) {
    lock.locked.store(false, Ordering::Release);
}

/// Takes the console lock, which serialises console output (Linux's
/// `console_lock`); `printk` passes its lock. Outside the notrace printk
/// code so that it can be traced under Linux's name; an oops bypasses it.
#[allow(unsafe_code)] // export_name
#[export_name = "console_lock"]
#[inline(never)]
pub fn console_lock(lock: &'static IrqSpinLock<()>) -> IrqSpinLockGuard<'static, ()> {
    lock.lock()
}

/// Releases the console lock (Linux's `console_unlock`).
#[allow(unsafe_code)] // export_name
#[export_name = "console_unlock"]
#[inline(never)]
pub fn console_unlock(guard: IrqSpinLockGuard<'static, ()>) {
    drop(guard);
}

/// The lock word and waiters of a [`Mutex`] (Linux's `struct mutex`
/// without its data).
pub struct RawMutex {
    locked: AtomicBool,
    /// Guards `waiters` (Linux's `wait_lock`).
    wait_lock: RawSpinLock,
    /// Tasks asleep on the mutex, first come first woken; only touched
    /// with `wait_lock` held, so its own lock is never contended.
    waiters: spin::Mutex<VecDeque<Arc<Task>>>,
}

impl RawMutex {
    /// An unlocked mutex.
    pub const fn new() -> RawMutex {
        RawMutex {
            locked: AtomicBool::new(false),
            wait_lock: RawSpinLock::new(),
            waiters: spin::Mutex::new(VecDeque::new()),
        }
    }

    fn try_acquire(&self) -> bool {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
}

impl Default for RawMutex {
    fn default() -> Self {
        Self::new()
    }
}

/// Takes `lock`, sleeping while another task holds it (Linux's
/// `mutex_lock`). Process context only.
#[allow(unsafe_code)] // export_name
#[export_name = "mutex_lock"]
#[inline(never)]
pub fn mutex_lock(lock: &RawMutex) {
    if mutex_trylock(lock) {
        return;
    }
    // Linux's __mutex_lock_slowpath: queue up under wait_lock, where the
    // owner's mutex_unlock looks for a task to wake, then sleep.
    loop {
        raw_spin_lock(&lock.wait_lock);
        if mutex_trylock(lock) {
            raw_spin_unlock(&lock.wait_lock);
            return;
        }
        let me = sched::current();
        me.set_state(TaskState::Uninterruptible);
        {
            let mut w = lock.waiters.lock();
            if !w.iter().any(|t| Arc::ptr_eq(t, &me)) {
                w.push_back(me.clone());
            }
        }
        raw_spin_unlock(&lock.wait_lock);
        sched::schedule();
    }
}

/// Takes `lock` if it is free (Linux's `mutex_trylock`).
#[allow(unsafe_code)] // export_name
#[export_name = "mutex_trylock"]
#[inline(never)]
pub fn mutex_trylock(lock: &RawMutex) -> bool {
    lock.try_acquire()
}

/// Releases `lock` and wakes its first waiter, which then competes for it
/// (Linux's `mutex_unlock`).
#[allow(unsafe_code)] // export_name
#[export_name = "mutex_unlock"]
#[inline(never)]
pub fn mutex_unlock(lock: &RawMutex) {
    lock.locked.store(false, Ordering::Release);
    raw_spin_lock(&lock.wait_lock);
    let next = lock.waiters.lock().pop_front();
    raw_spin_unlock(&lock.wait_lock);
    if let Some(t) = next {
        sched::wake_up(&t);
    }
}

/// A sleeping mutex around a `T` (Linux's `struct mutex` with the data it
/// guards).
pub struct Mutex<T> {
    raw: RawMutex,
    /// The data; its own lock is always free once `raw` is held.
    data: spin::Mutex<T>,
}

/// Access to a [`Mutex`]'s data; unlocks it when dropped.
pub struct MutexGuard<'a, T> {
    raw: &'a RawMutex,
    data: Option<spin::MutexGuard<'a, T>>,
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub const fn new(value: T) -> Mutex<T> {
        Mutex {
            raw: RawMutex::new(),
            data: spin::Mutex::new(value),
        }
    }

    /// Locks it, sleeping while another task holds it.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        mutex_lock(&self.raw);
        MutexGuard {
            raw: &self.raw,
            data: Some(self.data.lock()),
        }
    }

    /// Locks it if it is free.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        mutex_trylock(&self.raw).then(|| MutexGuard {
            raw: &self.raw,
            data: Some(self.data.lock()),
        })
    }
}

impl<T> core::ops::Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // Present from construction until drop.
        self.data.as_deref().unwrap_or_else(|| unreachable!())
    }
}

impl<T> core::ops::DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.data.as_deref_mut().unwrap_or_else(|| unreachable!())
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // The data's guard goes first, so the next owner finds it free.
        drop(self.data.take());
        mutex_unlock(self.raw);
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::Mutex;
    use core::sync::atomic::{AtomicU32, Ordering};
    use ktest_macros::kernel_test;

    static SHARED: Mutex<u32> = Mutex::new(0);
    static WAITER_DONE: AtomicU32 = AtomicU32::new(0);

    extern "C" fn waiter(_: usize) {
        let mut g = SHARED.lock();
        // The holder's write, made before it unlocked, is seen.
        assert_eq!(*g, 1);
        *g = 2;
        WAITER_DONE.store(1, Ordering::SeqCst);
    }

    #[kernel_test]
    fn mutex_waiter_sleeps_until_the_holder_unlocks() {
        WAITER_DONE.store(0, Ordering::SeqCst);
        *SHARED.lock() = 0;
        let mut g = SHARED.lock();
        assert!(SHARED.try_lock().is_none(), "trylock of a held mutex");
        let t = crate::sched::Task::new_kthread(waiter, 0, "mutex/waiter").expect("kthread");
        crate::sched::wake_up(&t);
        // The waiter runs and finds the mutex held: it must go to sleep.
        let deadline = crate::time::ktime_get_ns() + 2_000_000_000;
        while t.state() != crate::sched::TaskState::Uninterruptible {
            assert!(crate::time::ktime_get_ns() < deadline, "the waiter never slept");
            assert_eq!(WAITER_DONE.load(Ordering::SeqCst), 0, "the waiter got a held mutex");
            crate::sched::wait::sleep_ns(1_000_000).expect("sleep");
        }
        assert_eq!(WAITER_DONE.load(Ordering::SeqCst), 0, "the waiter got a held mutex");
        *g = 1;
        drop(g);
        let deadline = crate::time::ktime_get_ns() + 2_000_000_000;
        while WAITER_DONE.load(Ordering::SeqCst) == 0 {
            assert!(crate::time::ktime_get_ns() < deadline, "the waiter was never woken");
            crate::sched::wait::sleep_ns(1_000_000).expect("sleep");
        }
        assert_eq!(*SHARED.lock(), 2);
        drop(t);
    }
}
