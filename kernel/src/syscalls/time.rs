//! Time system calls: clocks, sleeps, interval timers.

use super::syscall;
use crate::errno::Errno;
use crate::sched::wait::{sleep_ns, WaitError};
use crate::uaccess::{copy_from_user, copy_to_user};
use uapi::time::{Itimerval, Timespec, Timeval};

const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_PROCESS_CPUTIME_ID: u64 = 2;
const CLOCK_THREAD_CPUTIME_ID: u64 = 3;
const CLOCK_MONOTONIC_RAW: u64 = 4;
const CLOCK_REALTIME_COARSE: u64 = 5;
const CLOCK_MONOTONIC_COARSE: u64 = 6;
const CLOCK_BOOTTIME: u64 = 7;
const TIMER_ABSTIME: u64 = 1;

fn clock_ns(clock: u64) -> Result<u64, Errno> {
    match clock {
        CLOCK_REALTIME
        | CLOCK_MONOTONIC
        | CLOCK_MONOTONIC_RAW
        | CLOCK_REALTIME_COARSE
        | CLOCK_MONOTONIC_COARSE
        | CLOCK_BOOTTIME
        | CLOCK_PROCESS_CPUTIME_ID
        | CLOCK_THREAD_CPUTIME_ID => Ok(crate::time::ktime_get_ns()),
        _ => Err(Errno::EINVAL),
    }
}

fn put_timespec(p: u64, ns: u64) -> Result<(), Errno> {
    copy_to_user(p, &Timespec::from_ns(ns).to_bytes())
}

/// Reads a `struct timespec` as nanoseconds; EINVAL if out of range.
pub(super) fn get_timespec(p: u64) -> Result<u64, Errno> {
    let mut b = [0u8; Timespec::SIZE];
    copy_from_user(&mut b, p)?;
    Timespec::from_bytes(&b).to_ns().ok_or(Errno::EINVAL)
}

syscall!(__arm64_sys_clock_gettime, r, {
    let ns = clock_ns(r.regs[0])?;
    put_timespec(r.regs[1], ns)?;
    Ok(0)
});

syscall!(__arm64_sys_clock_getres, r, {
    clock_ns(r.regs[0])?;
    if r.regs[1] != 0 {
        put_timespec(r.regs[1], 1)?;
    }
    Ok(0)
});

syscall!(__arm64_sys_gettimeofday, r, {
    let ns = crate::time::ktime_get_ns();
    if r.regs[0] != 0 {
        copy_to_user(r.regs[0], &Timeval::from_ns(ns).to_bytes())?;
    }
    Ok(0)
});

fn nanosleep(ns: u64, rem: u64) -> Result<u64, Errno> {
    let start = crate::time::ktime_get_ns();
    match sleep_ns(ns) {
        Ok(()) => Ok(0),
        Err(WaitError::Interrupted) => {
            if rem != 0 {
                let left = ns.saturating_sub(crate::time::ktime_get_ns() - start);
                put_timespec(rem, left)?;
            }
            // Linux restarts nanosleep only when no handler runs.
            Err(Errno::ERESTART_RESTARTBLOCK)
        }
    }
}

syscall!(__arm64_sys_nanosleep, r, {
    let ns = get_timespec(r.regs[0])?;
    nanosleep(ns, r.regs[1])
});

syscall!(__arm64_sys_clock_nanosleep, r, {
    let (clock, flags, req, rem) = (r.regs[0], r.regs[1], r.regs[2], r.regs[3]);
    if matches!(clock, CLOCK_THREAD_CPUTIME_ID) {
        return Err(Errno::EOPNOTSUPP);
    }
    clock_ns(clock)?;
    let t = get_timespec(req)?;
    let ns = if flags & TIMER_ABSTIME != 0 {
        t.saturating_sub(crate::time::ktime_get_ns())
    } else {
        t
    };
    nanosleep(ns, if flags & TIMER_ABSTIME != 0 { 0 } else { rem })
});

const ITIMER_REAL: u64 = 0;
const ITIMER_PROF: u64 = 2;

syscall!(__arm64_sys_getitimer, r, {
    if r.regs[0] > ITIMER_PROF {
        return Err(Errno::EINVAL);
    }
    let (value, interval) = crate::itimer::get(r.regs[0] == ITIMER_REAL);
    put_itimerval(r.regs[1], interval, value)?;
    Ok(0)
});

fn put_itimerval(p: u64, interval: u64, value: u64) -> Result<(), Errno> {
    let it = Itimerval {
        it_interval: Timeval::from_ns(interval),
        it_value: Timeval::from_ns(value),
    };
    copy_to_user(p, &it.to_bytes())
}

syscall!(__arm64_sys_setitimer, r, {
    let (which, new, old) = (r.regs[0], r.regs[1], r.regs[2]);
    if which > ITIMER_PROF {
        return Err(Errno::EINVAL);
    }
    // A NULL new value disarms, as Linux still allows (with a warning).
    let mut b = [0u8; Itimerval::SIZE];
    if new != 0 {
        copy_from_user(&mut b, new)?;
    }
    let it = Itimerval::from_bytes(&b);
    if !it.it_interval.is_valid() || !it.it_value.is_valid() {
        return Err(Errno::EINVAL);
    }
    let (is, iu, vs, vu) = (
        it.it_interval.tv_sec,
        it.it_interval.tv_usec,
        it.it_value.tv_sec,
        it.it_value.tv_usec,
    );
    // Saturating: a huge tv_sec is "practically never", not a wrap.
    let ns = |s: i64, us: i64| {
        (s as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(us as u64 * 1000)
    };
    let (interval, value) = (ns(is, iu), ns(vs, vu));
    let (ov, oi) = crate::itimer::set(which == ITIMER_REAL, value, interval);
    if old != 0 {
        put_itimerval(old, oi, ov)?;
    }
    Ok(0)
});

syscall!(__arm64_sys_times, r, {
    if r.regs[0] != 0 {
        copy_to_user(r.regs[0], &[0u8; 32])?;
    }
    Ok(crate::time::ktime_get_ns() / 10_000_000)
});
