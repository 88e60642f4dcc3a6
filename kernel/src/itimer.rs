//! ITIMER_REAL per process: SIGALRM when it expires, re-armed by interval.
//! (ITIMER_VIRTUAL/PROF are accepted and reported as disarmed.)
//!
//! The timer's state lives in its process ([`RealTimer`], Linux's
//! `signal->real_timer` and `it_real_incr`) and is cancelled when the
//! process's last thread exits, as Linux's `do_exit` cancels it; the tick
//! finds armed timers through [`ARMED`], which holds no state and no
//! strong reference.

use crate::process::Process;
use crate::sync::IrqSpinLock;
use crate::trace::tracepoint::timer::{
    trace_timer_cancel, trace_timer_expire_entry, trace_timer_expire_exit, trace_timer_start,
};
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

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

/// (time left, interval) of `t` at `now`.
fn left(t: Option<(u64, u64)>, now: u64) -> (u64, u64) {
    t.map_or((0, 0), |(d, i)| (d.saturating_sub(now).max(1), i))
}

/// (time left, interval) of the current process's timer.
pub fn get(real: bool) -> (u64, u64) {
    if !real {
        return (0, 0);
    }
    let p = crate::process::current_process();
    let now = crate::time::ktime_get_ns();
    let t = *p.real_timer.0.lock();
    left(t, now)
}

/// The `timer` field of the `timer_*` events for process `p`'s timer.
fn timer_of(p: &crate::process::Process) -> u64 {
    p as *const crate::process::Process as u64
}

/// Arms (value > 0) or disarms the timer; returns the old (left, interval).
pub fn set(real: bool, value: u64, interval: u64) -> (u64, u64) {
    if !real {
        return (0, 0);
    }
    let p = crate::process::current_process();
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
pub fn exit(p: &Process) {
    let was_armed = p.real_timer.0.lock().take().is_some();
    if was_armed {
        trace_timer_cancel(timer_of(p));
    }
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
