//! The load average (Linux's `kernel/sched/loadavg.c`): every 5 s plus a
//! tick, the number of active tasks (running or waiting to run) is folded
//! into three exponentially decayed averages, over 1, 5 and 15 minutes, in
//! Linux's 11-bit fixed point, for `sysinfo` and `/proc/loadavg`.

use super::RUNQUEUE;
use crate::percpu::{PerCpu, NR_CPUS};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bits of fraction (Linux's FSHIFT) and 1.0 (FIXED_1).
pub const FSHIFT: u32 = 11;
const FIXED_1: u64 = 1 << FSHIFT;
/// 1/exp(5 s / 1 min), 1/exp(5 s / 5 min), 1/exp(5 s / 15 min) in fixed point.
const EXP: [u64; 3] = [1884, 2014, 2037];
/// Linux's LOAD_FREQ: 5 s and one tick, in ns.
const LOAD_FREQ_NS: u64 = 5_000_000_000 + 1_000_000_000 / crate::time::HZ;

static AVENRUN: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
/// When the next sample is due (ns of the monotonic clock).
static NEXT_SAMPLE: AtomicU64 = AtomicU64::new(LOAD_FREQ_NS);
/// Whether each CPU ran a task other than its idle one at its last tick.
static BUSY: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

/// One step of the average: `load` decayed by `exp` towards `active` (both
/// fixed point), rounding up while the load grows, as Linux's `calc_load`.
pub fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut new = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        new += FIXED_1 - 1;
    }
    new / FIXED_1
}

/// From each CPU's timer tick: records whether it is busy and, on the
/// first tick past the sampling time, folds the active count in.
pub fn tick(idle: bool) {
    BUSY.this().store(!idle, Ordering::Relaxed);
    let now = crate::time::ktime_get_ns();
    let due = NEXT_SAMPLE.load(Ordering::Relaxed);
    if now < due
        || NEXT_SAMPLE
            .compare_exchange(due, due + LOAD_FREQ_NS, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let running = BUSY.iter().filter(|b| b.load(Ordering::Relaxed)).count();
    let active = (RUNQUEUE.lock().len() + running) as u64 * FIXED_1;
    for (avg, exp) in AVENRUN.iter().zip(EXP) {
        avg.store(calc_load(avg.load(Ordering::Relaxed), exp, active), Ordering::Relaxed);
    }
}

/// The three averages in fixed point (FSHIFT bits of fraction).
pub fn avenrun() -> [u64; 3] {
    [0, 1, 2].map(|i| AVENRUN[i].load(Ordering::Relaxed))
}

/// `/proc/loadavg`'s three figures: "1.00 0.50 0.25", rounded to
/// hundredths as Linux's `get_avenrun(.., FIXED_1/200, 0)`.
pub fn proc_figures() -> alloc::string::String {
    let [a, b, c] = avenrun().map(|x| {
        let x = x + FIXED_1 / 200;
        (x >> FSHIFT, ((x & (FIXED_1 - 1)) * 100) >> FSHIFT)
    });
    alloc::format!("{}.{:02} {}.{:02} {}.{:02}", a.0, a.1, b.0, b.1, c.0, c.1)
}

/// Tasks running or waiting to run now (`/proc/loadavg`'s fourth field's
/// numerator, Linux's `nr_running()`), the caller included.
pub fn nr_running() -> usize {
    let me: *const AtomicBool = BUSY.this();
    let running = BUSY
        .iter()
        .filter(|b| core::ptr::eq(*b, me) || b.load(Ordering::Relaxed))
        .count();
    RUNQUEUE.lock().len() + running
}
