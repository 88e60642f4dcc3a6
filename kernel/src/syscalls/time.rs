//! Time system calls: clocks, sleeps, interval timers.

use super::syscall;
use crate::errno::Errno;
use crate::sched::wait::sleep_ns;
use crate::uaccess::{copy_from_user, copy_to_user};

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
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    b[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    copy_to_user(p, &b)
}

/// Reads a `struct timespec` as nanoseconds; EINVAL if out of range.
pub(super) fn get_timespec(p: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 16];
    copy_from_user(&mut b, p)?;
    let s = i64::from_le_bytes(b[..8].try_into().expect("8"));
    let ns = i64::from_le_bytes(b[8..].try_into().expect("8"));
    if s < 0 || !(0..1_000_000_000).contains(&ns) {
        return Err(Errno::EINVAL);
    }
    Ok((s as u64).saturating_mul(1_000_000_000).saturating_add(ns as u64))
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
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        b[8..].copy_from_slice(&(ns % 1_000_000_000 / 1000).to_le_bytes());
        copy_to_user(r.regs[0], &b)?;
    }
    Ok(0)
});

fn nanosleep(ns: u64, rem: u64) -> Result<u64, Errno> {
    let start = crate::time::ktime_get_ns();
    match sleep_ns(ns) {
        Ok(()) => Ok(0),
        Err(Errno::EINTR) => {
            if rem != 0 {
                let left = ns.saturating_sub(crate::time::ktime_get_ns() - start);
                put_timespec(rem, left)?;
            }
            // Linux restarts nanosleep only when no handler runs.
            Err(Errno::ERESTART_RESTARTBLOCK)
        }
        Err(e) => Err(e),
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
    let mut b = [0u8; 32];
    b[0..8].copy_from_slice(&(interval / 1_000_000_000).to_le_bytes());
    b[8..16].copy_from_slice(&(interval % 1_000_000_000 / 1000).to_le_bytes());
    b[16..24].copy_from_slice(&(value / 1_000_000_000).to_le_bytes());
    b[24..32].copy_from_slice(&(value % 1_000_000_000 / 1000).to_le_bytes());
    copy_to_user(p, &b)
}

syscall!(__arm64_sys_setitimer, r, {
    let (which, new, old) = (r.regs[0], r.regs[1], r.regs[2]);
    if which > ITIMER_PROF {
        return Err(Errno::EINVAL);
    }
    // A NULL new value disarms, as Linux still allows (with a warning).
    let mut b = [0u8; 32];
    if new != 0 {
        copy_from_user(&mut b, new)?;
    }
    let f = |i: usize| i64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8"));
    let (is, iu, vs, vu) = (f(0), f(1), f(2), f(3));
    if is < 0 || vs < 0 || !(0..1_000_000).contains(&iu) || !(0..1_000_000).contains(&vu) {
        return Err(Errno::EINVAL);
    }
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
