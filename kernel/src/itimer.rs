//! The interval timers of `setitimer`: ITIMER_REAL (SIGALRM, wall
//! time), ITIMER_VIRTUAL (SIGVTALRM, the process's user CPU time) and
//! ITIMER_PROF (SIGPROF, its user + system CPU time).
//!
//! Their state lives in the process (Linux's `signal->real_timer` with
//! `it_real_incr`, and `signal->it[]`): fork does not copy it, exec keeps
//! it. ITIMER_REAL is cancelled when the process's last thread exits, as
//! Linux's `do_exit` cancels it; the tick finds armed real timers through
//! [`ARMED`], which holds no state and no strong reference. The CPU-time
//! timers are checked by the tick that charges CPU time to a thread of
//! the process (Linux's `run_posix_cpu_timers` / `check_cpu_itimer`), so
//! a process that does not run does not advance them.

use crate::percpu::{PerCpu, NR_CPUS};
use crate::process::Process;
use crate::sync::IrqSpinLock;
use crate::trace::tracepoint::timer::{
    trace_timer_cancel, trace_timer_expire_entry, trace_timer_expire_exit, trace_timer_start,
};
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

/// A process's ITIMER_REAL: (deadline ns, interval ns) while armed.
pub struct RealTimer(IrqSpinLock<Option<(u64, u64)>>);

impl RealTimer {
    /// Disarmed (a new process's; fork does not copy the parent's).
    pub const fn new() -> RealTimer {
        RealTimer(IrqSpinLock::new(None))
    }
}

impl Default for RealTimer {
    fn default() -> RealTimer {
        RealTimer::new()
    }
}

/// The processes whose timer was armed, for the tick to look at (the
/// timer wheel). An entry whose process is gone or whose timer is
/// disarmed is dropped at the next tick. Lock order: ARMED, then a
/// process's [`RealTimer`].
static ARMED: IrqSpinLock<Vec<Weak<Process>>> = IrqSpinLock::new(Vec::new());

/// Each CPU's count of [`run`]s begun and ended: odd while its tick holds
/// references to the processes it looked at, so that [`exit`] can wait
/// for them (the last reference to a process must not be one a tick
/// drops in interrupt context).
static RUNS: PerCpu<AtomicU64> = PerCpu::new([const { AtomicU64::new(0) }; NR_CPUS]);

/// (time left, interval) of `t` at `now`.
fn left(t: Option<(u64, u64)>, now: u64) -> (u64, u64) {
    t.map_or((0, 0), |(d, i)| (d.saturating_sub(now).max(1), i))
}

pub use uapi::time::{ITIMER_PROF, ITIMER_REAL, ITIMER_VIRTUAL};

/// One CPU-time interval timer (Linux's `struct cpu_itimer`): the
/// process CPU time (ns) at which it fires, 0 while disarmed, and the
/// interval it is re-armed with.
#[derive(Clone, Copy, Default)]
struct CpuItimer {
    expires: u64,
    incr: u64,
}

/// A process's ITIMER_VIRTUAL and ITIMER_PROF, in that order.
pub struct CpuItimers(IrqSpinLock<[CpuItimer; 2]>);

impl CpuItimers {
    /// Disarmed (a new process's; fork does not copy the parent's).
    pub const fn new() -> CpuItimers {
        CpuItimers(IrqSpinLock::new([CpuItimer { expires: 0, incr: 0 }; 2]))
    }

    fn armed(&self) -> bool {
        self.0.lock().iter().any(|t| t.expires != 0)
    }
}

impl Default for CpuItimers {
    fn default() -> CpuItimers {
        CpuItimers::new()
    }
}

/// The process CPU time each CPU timer counts: user time for
/// ITIMER_VIRTUAL, user + system for ITIMER_PROF, from the tick samples
/// (Linux's `thread_group_sample_cputime`).
fn cpu_samples(p: &Process) -> [u64; 2] {
    let t = crate::cputime::thread_group_cputime(p);
    [t.utime, t.total()]
}

/// (time left, interval) of a CPU timer whose expiry is `expires` when
/// the clock reads `now`: one tick if it is due but not yet fired, as
/// Linux's `get_cpu_itimer`.
fn cpu_left(t: CpuItimer, now: u64) -> (u64, u64) {
    match t.expires {
        0 => (0, t.incr),
        e if e <= now => (crate::cputime::TICK_NSEC, t.incr),
        e => (e - now, t.incr),
    }
}

/// (time left, interval) of the current process's timer `which`
/// (ITIMER_REAL, ITIMER_VIRTUAL or ITIMER_PROF).
pub fn get(which: u64) -> (u64, u64) {
    let p = crate::process::current_process();
    if which != ITIMER_REAL {
        let i = (which - 1) as usize;
        let now = cpu_samples(&p)[i];
        return cpu_left(p.cpu_itimers.0.lock()[i], now);
    }
    let now = crate::time::ktime_get_ns();
    let t = *p.real_timer.0.lock();
    left(t, now)
}

/// The `timer` field of the `timer_*` events for process `p`'s timer.
fn timer_of(p: &crate::process::Process) -> u64 {
    p as *const crate::process::Process as u64
}

/// Arms (value > 0) or disarms the timer `which`; returns the old (left,
/// interval).
pub fn set(which: u64, value: u64, interval: u64) -> (u64, u64) {
    let p = crate::process::current_process();
    if which != ITIMER_REAL {
        // Linux's set_cpu_itimer: the expiry is a point on the process's
        // CPU clock, one tick later than asked (the time is sampled a
        // tick at a time, so a timer never fires early; getitimer shows
        // the extra tick too); the interval is added to it at each expiry.
        let i = (which - 1) as usize;
        let now = cpu_samples(&p)[i];
        let mut timers = p.cpu_itimers.0.lock();
        let old = cpu_left(timers[i], now);
        timers[i] = CpuItimer {
            expires: if value == 0 {
                0
            } else {
                now.saturating_add(value).saturating_add(crate::cputime::TICK_NSEC)
            },
            incr: interval,
        };
        return old;
    }
    let now = crate::time::ktime_get_ns();
    let (old, was_armed) = {
        let mut armed = ARMED.lock();
        let mut t = p.real_timer.0.lock();
        let old = (left(*t, now), t.is_some());
        *t = (value != 0).then_some((now + value, interval));
        if value != 0 && !armed.iter().any(|w| Weak::as_ptr(w) == Arc::as_ptr(&p)) {
            armed.push(Arc::downgrade(&p));
        }
        old
    };
    // Linux's del_timer / mod_timer: a pending timer leaves the wheel
    // before it is re-armed.
    if was_armed {
        trace_timer_cancel(timer_of(&p));
    }
    if value != 0 {
        trace_timer_start(timer_of(&p), crate::time::ns_to_jiffies(now + value));
    }
    old
}

/// The process's last thread exits: its timer is cancelled (Linux's
/// `hrtimer_cancel(&sig->real_timer)` in `do_exit`), so that no expiry
/// reaches a zombie.
///
/// Its entry in [`ARMED`] goes too, and a tick that took a reference to
/// it before is waited for: from here on no tick holds one or can take
/// one, so its last reference goes in task context (Linux frees its
/// `signal_struct` after an RCU grace period for the same reason).
pub fn exit(p: &Process) {
    let was_armed = p.real_timer.0.lock().take().is_some();
    if was_armed {
        trace_timer_cancel(timer_of(p));
    }
    // `p` is held, so the weak reference dropped here frees nothing under
    // the lock.
    ARMED.lock().retain(|w| !core::ptr::eq(w.as_ptr(), p));
    // A tick that upgraded the entry began its run before it took the
    // lock released above: its count is odd until it dropped them all.
    // (This CPU's tick is never in a run here: it runs to its end.)
    for cpu in 0..NR_CPUS {
        let runs = RUNS.on(cpu).load(Ordering::Acquire);
        if runs % 2 == 1 {
            while RUNS.on(cpu).load(Ordering::Acquire) == runs {
                core::hint::spin_loop();
            }
        }
    }
}

/// Whether `p` has an entry in [`ARMED`] (for tests).
#[cfg(feature = "ktest")]
pub fn is_listed(p: &Process) -> bool {
    ARMED.lock().iter().any(|w| core::ptr::eq(w.as_ptr(), p))
}

/// The timer's function: SIGALRM for the process (Linux's `it_real_fn`;
/// exported under its name so that the `timer_*` events can name it).
#[allow(unsafe_code)] // exported under Linux's name, for probes and events
#[no_mangle]
#[inline(never)]
pub fn it_real_fn(p: &alloc::sync::Arc<crate::process::Process>) {
    crate::signal::send_to_process(
        p,
        crate::signal::SigInfo {
            signo: crate::signal::SIGALRM,
            code: crate::signal::code::SI_KERNEL,
            ..Default::default()
        },
    );
}

/// From the tick: sends SIGALRM for expired timers.
pub fn run() {
    let runs = RUNS.this();
    // Odd from before ARMED is locked until every reference is dropped
    // (see `exit`). Only this CPU writes its count.
    runs.store(runs.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    core::sync::atomic::fence(Ordering::SeqCst);
    run_armed();
    runs.store(runs.load(Ordering::Relaxed) + 1, Ordering::Release);
}

/// [`run`]'s work: the references it takes are all dropped when it returns.
fn run_armed() {
    let now = crate::time::ktime_get_ns();
    // The processes looked at are dropped after ARMED is unlocked.
    let mut seen: Vec<Arc<Process>> = Vec::new();
    let mut due: Vec<(Arc<Process>, u64, u64)> = Vec::new();
    ARMED.lock().retain(|w| {
        let Some(p) = w.upgrade() else { return false };
        let keep = {
            let mut t = p.real_timer.0.lock();
            match *t {
                None => false,
                Some((d, i)) if d <= now => {
                    *t = (i != 0).then_some((now + i, i));
                    due.push((p.clone(), d, i));
                    i != 0
                }
                Some(_) => true,
            }
        };
        seen.push(p);
        keep
    });
    for (p, deadline, interval) in due {
        let timer = timer_of(&p);
        // As Linux's expire_timers: off the wheel, then the callback.
        trace_timer_cancel(timer);
        // The wheel's clock when it expired: never after now.
        trace_timer_expire_entry(timer, crate::time::ns_to_jiffies_floor(deadline));
        it_real_fn(&p);
        trace_timer_expire_exit(timer);
        if interval != 0 {
            trace_timer_start(timer, crate::time::ns_to_jiffies(now + interval));
        }
    }
    drop(seen);
}

/// From the tick that charged CPU time to a thread of `p`: sends
/// SIGVTALRM / SIGPROF for the CPU timers the process's time has reached,
/// re-arming each by its interval from its expiry (Linux's
/// `check_cpu_itimer`), so that the signals keep to the interval on
/// average even though the time is sampled a tick at a time.
pub fn run_cpu_timers(p: &Arc<Process>) {
    if !p.cpu_itimers.armed() {
        return;
    }
    let now = cpu_samples(p);
    let mut fire = [false; 2];
    {
        let mut timers = p.cpu_itimers.0.lock();
        for (i, t) in timers.iter_mut().enumerate() {
            if t.expires != 0 && now[i] >= t.expires {
                t.expires = if t.incr != 0 {
                    t.expires.saturating_add(t.incr)
                } else {
                    0
                };
                fire[i] = true;
            }
        }
    }
    for (signo, _) in [crate::signal::SIGVTALRM, crate::signal::SIGPROF]
        .into_iter()
        .zip(fire)
        .filter(|(_, f)| *f)
    {
        crate::signal::send_to_process(
            p,
            crate::signal::SigInfo {
                signo,
                code: crate::signal::code::SI_KERNEL,
                ..Default::default()
            },
        );
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use crate::sched::{Task, TaskState};
    use ktest_macros::kernel_test;

    extern "C" fn never_runs(_: usize) {}

    #[kernel_test]
    fn exit_unlists_the_process_so_no_tick_can_hold_its_last_reference() {
        let leader = Task::new_kthread(never_runs, 0, "itimer_exit").expect("task");
        leader.set_state(TaskState::Uninterruptible);
        let p = Process::new_for_ktest(leader.tid());
        // Armed far ahead, as setitimer arms it.
        *p.real_timer.0.lock() = Some((crate::time::ktime_get_ns() + 3_600_000_000_000, 0));
        ARMED.lock().push(Arc::downgrade(&p));
        assert!(is_listed(&p));
        exit(&p);
        assert!(p.real_timer.0.lock().is_none(), "cancelled");
        assert!(!is_listed(&p), "no tick can upgrade it any more");
        assert_eq!(Arc::weak_count(&p), 0);
        assert_eq!(Arc::strong_count(&p), 1, "the test's reference is the last");
    }
}
