//! ITIMER_REAL per process: SIGALRM when it expires, re-armed by interval.
//! (ITIMER_VIRTUAL/PROF are accepted and reported as disarmed.)

use crate::sync::IrqSpinLock;
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

/// Arms (value > 0) or disarms the timer; returns the old (left, interval).
pub fn set(real: bool, value: u64, interval: u64) -> (u64, u64) {
    if !real {
        return (0, 0);
    }
    let old = get(true);
    let pid = crate::process::current_process().pid;
    let mut t = TIMERS.lock();
    if value == 0 {
        t.remove(&pid);
    } else {
        t.insert(pid, (crate::time::ktime_get_ns() + value, interval));
    }
    old
}

/// From the tick: sends SIGALRM for expired timers.
pub fn run() {
    let now = crate::time::ktime_get_ns();
    let due: alloc::vec::Vec<u32> = {
        let mut t = TIMERS.lock();
        let due: alloc::vec::Vec<u32> = t.iter().filter(|(_, &(d, _))| d <= now).map(|(&p, _)| p).collect();
        for p in &due {
            let (_, i) = t[p];
            if i == 0 {
                t.remove(p);
            } else {
                t.insert(*p, (now + i, i));
            }
        }
        due
    };
    for pid in due {
        if let Some(p) = crate::process::find_process(pid) {
            crate::signal::send_to_process(
                &p,
                crate::signal::SigInfo {
                    signo: crate::signal::SIGALRM,
                    code: crate::signal::code::SI_KERNEL,
                    ..Default::default()
                },
            );
        }
    }
}
