//! Time system calls: clocks, sleeps, interval timers.

use super::syscall;
use crate::errno::Errno;
use crate::sched::wait::sleep_until_ns;
use crate::time::RestartBlock;
use crate::uaccess::{copy_from_user, copy_to_user, UserPtr};
use core::sync::atomic::{AtomicU64, Ordering};
use uapi::time::{Itimerval, Timespec, Timeval};

use uapi::time::{
    CLOCKFD, CLOCKFD_MASK, CPUCLOCK_CLOCK_MASK, CPUCLOCK_PERTHREAD_MASK, CPUCLOCK_PID_SHIFT, CPUCLOCK_PROF,
    CPUCLOCK_SCHED, CPUCLOCK_VIRT,
};
use uapi::time::{
    CLOCK_BOOTTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC_RAW, CLOCK_PROCESS_CPUTIME_ID,
    CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_TAI, CLOCK_THREAD_CPUTIME_ID, ITIMER_PROF, TIMER_ABSTIME,
};

/// A clock ID, decoded (Linux's `clockid_to_kclock`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clock {
    /// `CLOCK_REALTIME` and its coarse and TAI forms (TAI offset 0).
    Realtime { coarse: bool },
    /// The clocks that count from boot (there is no suspend here).
    Monotonic { coarse: bool },
    /// A CPU-time clock: `MAKE_PROCESS_CPUCLOCK`/`MAKE_THREAD_CPUCLOCK` of
    /// a PID or TID (0: the caller), or the two fixed IDs.
    Cpu { pid: i32, thread: bool, which: i32 },
}

impl Clock {
    fn decode(id: i32) -> Result<Clock, Errno> {
        Ok(match id {
            CLOCK_REALTIME | CLOCK_TAI => Clock::Realtime { coarse: false },
            CLOCK_REALTIME_COARSE => Clock::Realtime { coarse: true },
            CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_BOOTTIME => Clock::Monotonic { coarse: false },
            CLOCK_MONOTONIC_COARSE => Clock::Monotonic { coarse: true },
            CLOCK_PROCESS_CPUTIME_ID => Clock::Cpu {
                pid: 0,
                thread: false,
                which: CPUCLOCK_SCHED,
            },
            CLOCK_THREAD_CPUTIME_ID => Clock::Cpu {
                pid: 0,
                thread: true,
                which: CPUCLOCK_SCHED,
            },
            // A CLOCKFD ID names a clock device, which this kernel has none of.
            id if id < 0 && id & CLOCKFD_MASK != CLOCKFD => Clock::Cpu {
                pid: !(id >> CPUCLOCK_PID_SHIFT),
                thread: id & CPUCLOCK_PERTHREAD_MASK != 0,
                which: id & CPUCLOCK_CLOCK_MASK,
            },
            _ => return Err(Errno::EINVAL),
        })
    }

    /// The clock's time now, in ns. A CPU clock of a task that does not
    /// exist, or of another process's thread, is EINVAL (Linux's
    /// `lookup_task`).
    fn now_ns(self) -> Result<u64, Errno> {
        match self {
            Clock::Realtime { coarse: true } => Ok(crate::time::ktime_get_coarse_ns(true)),
            Clock::Monotonic { coarse: true } => Ok(crate::time::ktime_get_coarse_ns(false)),
            Clock::Realtime { .. } => Ok(crate::time::ktime_get_real_ns()),
            Clock::Monotonic { .. } => Ok(crate::time::ktime_get_ns()),
            Clock::Cpu { pid, thread, which } => {
                let t = cpu_clock_sample(pid, thread)?;
                Ok(match which {
                    CPUCLOCK_SCHED => t.runtime,
                    CPUCLOCK_PROF => t.total(),
                    CPUCLOCK_VIRT => t.utime,
                    _ => return Err(Errno::EINVAL),
                })
            }
        }
    }

    /// `clock_getres`: 1 ns for the high-resolution clocks and the
    /// scheduler CPU clocks, a tick for the coarse ones and the other CPU
    /// clocks, as Linux with high-resolution timers.
    fn resolution_ns(self) -> Result<u64, Errno> {
        match self {
            Clock::Realtime { coarse: true } | Clock::Monotonic { coarse: true } => Ok(crate::cputime::TICK_NSEC),
            Clock::Realtime { .. } | Clock::Monotonic { .. } => Ok(1),
            Clock::Cpu { which, .. } => {
                self.now_ns()?;
                Ok(if which == CPUCLOCK_SCHED {
                    1
                } else {
                    crate::cputime::TICK_NSEC
                })
            }
        }
    }
}

/// The CPU time a CPU clock reads: the caller's thread or thread group
/// (pid 0), a thread of the caller's group, or any task's thread group.
fn cpu_clock_sample(pid: i32, thread: bool) -> Result<crate::cputime::Cputime, Errno> {
    let me = crate::sched::current();
    let own = me.process.get().cloned().ok_or(Errno::EINVAL)?;
    let task = if pid == 0 {
        me
    } else {
        let tid = u32::try_from(pid).map_err(|_| Errno::EINVAL)?;
        crate::process::find_task(tid).ok_or(Errno::EINVAL)?
    };
    let group = task.process.get().cloned().ok_or(Errno::EINVAL)?;
    if thread {
        if !alloc::sync::Arc::ptr_eq(&group, &own) {
            return Err(Errno::EINVAL);
        }
        return Ok(task.cputime.get());
    }
    Ok(crate::cputime::thread_group_cputime(&group))
}

fn put_timespec(p: UserPtr, ns: u64) -> Result<(), Errno> {
    copy_to_user(p, &Timespec::from_ns(ns).to_bytes())
}

/// Reads a `struct timespec` as nanoseconds; EINVAL if out of range.
pub(super) fn get_timespec(p: UserPtr) -> Result<u64, Errno> {
    let mut b = [0u8; Timespec::SIZE];
    copy_from_user(&mut b, p)?;
    Timespec::from_bytes(&b).to_ns().ok_or(Errno::EINVAL)
}

syscall!(__arm64_sys_clock_gettime, r, {
    let ns = Clock::decode(r.regs[0] as i32)?.now_ns()?;
    put_timespec(UserPtr::new(r.regs[1]), ns)?;
    Ok(0)
});

syscall!(__arm64_sys_clock_getres, r, {
    let res = Clock::decode(r.regs[0] as i32)?.resolution_ns()?;
    let tp = UserPtr::new(r.regs[1]);
    if !tp.is_null() {
        put_timespec(tp, res)?;
    }
    Ok(0)
});

/// The largest wall time one may set (Linux's `TIME_SETTOD_SEC_MAX`:
/// `KTIME_SEC_MAX` less 30 years of uptime).
const SETTOD_SEC_MAX: u64 = 9_223_372_036 - 30 * 365 * 86_400;

/// Sets the wall clock, as Linux's `do_sys_settimeofday64` (EINVAL beyond
/// `SETTOD_SEC_MAX` or before the boot).
fn settime_real(ns: u64) -> Result<(), Errno> {
    if ns / 1_000_000_000 >= SETTOD_SEC_MAX {
        return Err(Errno::EINVAL);
    }
    crate::time::set_realtime_ns(ns)
}

syscall!(__arm64_sys_clock_settime, r, {
    // Only CLOCK_REALTIME can be set; the CPU clocks named by PID refuse
    // with EPERM, after checking that the clock exists, and the two fixed
    // CPU clock IDs have no setter at all (EINVAL), as in Linux.
    let id = r.regs[0] as i32;
    match Clock::decode(id)? {
        Clock::Realtime { coarse: false } if id == CLOCK_REALTIME => {}
        c @ Clock::Cpu { .. } if id < 0 => {
            c.now_ns()?;
            return Err(Errno::EPERM);
        }
        _ => return Err(Errno::EINVAL),
    }
    settime_real(get_timespec(UserPtr::new(r.regs[1]))?)?;
    Ok(0)
});

/// `sys_tz`: the `struct timezone` last given to `settimeofday`
/// (`tz_minuteswest` in the low half, `tz_dsttime` in the high half),
/// which `gettimeofday` hands back and nothing else uses.
static SYS_TZ: AtomicU64 = AtomicU64::new(0);

syscall!(__arm64_sys_gettimeofday, r, {
    let ns = crate::time::ktime_get_real_ns();
    let (tv, tz) = (UserPtr::new(r.regs[0]), UserPtr::new(r.regs[1]));
    if !tv.is_null() {
        copy_to_user(tv, &Timeval::from_ns(ns).to_bytes())?;
    }
    if !tz.is_null() {
        copy_to_user(tz, &SYS_TZ.load(Ordering::Relaxed).to_le_bytes())?;
    }
    Ok(0)
});

syscall!(__arm64_sys_settimeofday, r, {
    let (tv, tz) = (UserPtr::new(r.regs[0]), UserPtr::new(r.regs[1]));
    let mut new_ns = None;
    if !tv.is_null() {
        let mut b = [0u8; 16];
        copy_from_user(&mut b, tv)?;
        let s = i64::from_le_bytes(b[..8].try_into().expect("8"));
        let us = i64::from_le_bytes(b[8..].try_into().expect("8"));
        if s < 0 || !(0..1_000_000).contains(&us) {
            return Err(Errno::EINVAL);
        }
        new_ns = Some(
            (s as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(us as u64 * 1000),
        );
    }
    let mut new_tz = None;
    if !tz.is_null() {
        let mut b = [0u8; 8];
        copy_from_user(&mut b, tz)?;
        new_tz = Some(u64::from_le_bytes(b));
    }
    if let Some(ns) = new_ns {
        if ns / 1_000_000_000 >= SETTOD_SEC_MAX {
            return Err(Errno::EINVAL);
        }
    }
    if let Some(t) = new_tz {
        // Within +-15 hours.
        if !(-15 * 60..=15 * 60).contains(&(t as u32 as i32)) {
            return Err(Errno::EINVAL);
        }
        // The vDSO's gettimeofday reads the copy in its data page.
        crate::vdso::update_vsyscall(|s| {
            SYS_TZ.store(t, Ordering::Relaxed);
            s.tz_minuteswest = t as u32 as i32;
            s.tz_dsttime = (t >> 32) as u32 as i32;
        });
    }
    if let Some(ns) = new_ns {
        settime_real(ns)?;
    }
    Ok(0)
});

/// Sleeps until `deadline_ns` (as `ktime_get_ns`). Interrupted, it leaves
/// the deadline for `restart_syscall`, stores the time left at `rmtp` and
/// returns ERESTART_RESTARTBLOCK (Linux's `do_nanosleep`, exported under
/// that name; x0 is the deadline, where Linux passes its hrtimer sleeper):
/// with no handler run the sleep resumes to the same deadline, else the
/// caller sees EINTR.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
fn do_nanosleep(deadline_ns: u64, rmtp: UserPtr) -> Result<u64, Errno> {
    match sleep_until_ns(deadline_ns) {
        Ok(()) => Ok(0),
        Err(Errno::EINTR) => {
            *crate::sched::current().restart_block.lock() = RestartBlock::Nanosleep { deadline_ns, rmtp };
            if !rmtp.is_null() {
                put_timespec(rmtp, deadline_ns.saturating_sub(crate::time::ktime_get_ns()))?;
            }
            Err(Errno::ERESTART_RESTARTBLOCK)
        }
        Err(e) => Err(e),
    }
}

syscall!(__arm64_sys_nanosleep, r, {
    let ns = get_timespec(UserPtr::new(r.regs[0]))?;
    do_nanosleep(crate::time::ktime_get_ns().saturating_add(ns), UserPtr::new(r.regs[1]))
});

syscall!(__arm64_sys_clock_nanosleep, r, {
    let (clock, flags, req, rem) = (
        r.regs[0] as i32,
        r.regs[1],
        UserPtr::new(r.regs[2]),
        UserPtr::new(r.regs[3]),
    );
    let c = Clock::decode(clock)?;
    if clock == CLOCK_THREAD_CPUTIME_ID {
        return Err(Errno::EOPNOTSUPP);
    }
    let t = get_timespec(req)?;
    let now = crate::time::ktime_get_ns();
    if flags & TIMER_ABSTIME == 0 {
        return do_nanosleep(now.saturating_add(t), rem);
    }
    // An absolute sleep is simply run again after a signal with no
    // handler (ERESTARTNOHAND), so that a clock set meanwhile counts.
    let deadline = match c {
        Clock::Realtime { .. } => t.saturating_sub(crate::time::realtime_offset_ns()),
        _ => t,
    };
    match sleep_until_ns(deadline) {
        Ok(()) => Ok(0),
        Err(Errno::EINTR) => Err(Errno::ERESTARTNOHAND),
        Err(e) => Err(e),
    }
});

syscall!(__arm64_sys_restart_syscall, _r, {
    let block = core::mem::replace(&mut *crate::sched::current().restart_block.lock(), RestartBlock::None);
    match block {
        RestartBlock::None => Err(Errno::EINTR),
        RestartBlock::Nanosleep { deadline_ns, rmtp } => do_nanosleep(deadline_ns, rmtp),
    }
});

syscall!(__arm64_sys_getitimer, r, {
    if r.regs[0] > ITIMER_PROF {
        return Err(Errno::EINVAL);
    }
    let (value, interval) = crate::itimer::get(r.regs[0]);
    put_itimerval(UserPtr::new(r.regs[1]), interval, value)?;
    Ok(0)
});

fn put_itimerval(p: UserPtr, interval: u64, value: u64) -> Result<(), Errno> {
    let it = Itimerval {
        it_interval: Timeval::from_ns(interval),
        it_value: Timeval::from_ns(value),
    };
    copy_to_user(p, &it.to_bytes())
}

syscall!(__arm64_sys_setitimer, r, {
    let (which, new, old) = (r.regs[0], UserPtr::new(r.regs[1]), UserPtr::new(r.regs[2]));
    if which > ITIMER_PROF {
        return Err(Errno::EINVAL);
    }
    // A NULL new value disarms, as Linux still allows (with a warning).
    let mut b = [0u8; Itimerval::SIZE];
    if !new.is_null() {
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
    let (ov, oi) = crate::itimer::set(which, value, interval);
    if !old.is_null() {
        put_itimerval(old, oi, ov)?;
    }
    Ok(0)
});

syscall!(__arm64_sys_times, r, {
    let tbuf = UserPtr::new(r.regs[0]);
    if !tbuf.is_null() {
        use crate::cputime::nsec_to_clock_t;
        let p = crate::process::current_process();
        let own = crate::cputime::thread_group_cputime(&p).adjusted();
        let children = p.cputime.children().adjusted();
        let ticks = |ns| nsec_to_clock_t(ns) as i64;
        let b = uapi::time::Tms {
            tms_utime: ticks(own.utime),
            tms_stime: ticks(own.stime),
            tms_cutime: ticks(children.utime),
            tms_cstime: ticks(children.stime),
        }
        .to_bytes();
        copy_to_user(tbuf, &b)?;
    }
    Ok(crate::cputime::nsec_to_clock_t(crate::time::ktime_get_ns()))
});
