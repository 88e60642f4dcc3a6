//! ITIMER_REAL per process: SIGALRM when it expires, re-armed by interval.
//! (ITIMER_VIRTUAL/PROF are accepted and reported as disarmed.)

use crate::sync::IrqSpinLock;
use crate::trace::tracepoint::timer::{
    trace_timer_cancel, trace_timer_expire_entry, trace_timer_expire_exit, trace_timer_start,
};
use alloc::collections::BTreeMap;

/// pid → (deadline ns, interval ns).
static TIMERS: IrqSpinLock<BTreeMap<u32, (u64, u64)>> = IrqSpinLock::new(BTreeMap::new());

/// (time left, interval) of the current process's timer.
pub fn get(real: bool) -> (u64, u64) {
    if !real {
        return (0, 0);
    }
    let pid = crate::process::current_process().pid;
    let now = crate::time::ktime_get_ns();
    TIMERS
        .lock()
        .get(&pid)
        .map_or((0, 0), |&(d, i)| (d.saturating_sub(now).max(1), i))
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
    let old = get(true);
    let p = crate::process::current_process();
    let now = crate::time::ktime_get_ns();
    let was_armed = {
        let mut t = TIMERS.lock();
        if value == 0 {
            t.remove(&p.pid).is_some()
        } else {
            t.insert(p.pid, (now + value, interval)).is_some()
        }
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
    let due: alloc::vec::Vec<(u32, u64, u64)> = {
        let mut t = TIMERS.lock();
        let due: alloc::vec::Vec<(u32, u64, u64)> = t
            .iter()
            .filter(|(_, &(d, _))| d <= now)
            .map(|(&p, &(d, i))| (p, d, i))
            .collect();
        for (p, _, i) in &due {
            if *i == 0 {
                t.remove(p);
            } else {
                t.insert(*p, (now + i, *i));
            }
        }
        due
    };
    for (pid, deadline, interval) in due {
        if let Some(p) = crate::process::find_process(pid) {
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
    }
}
