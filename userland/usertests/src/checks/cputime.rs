//! CPU-time accounting (getrusage, wait4's rusage, times, the CPU-time
//! clocks), nanosleep's restart after a stop, and the wall clock (the RTC
//! at boot, clock_settime, settimeofday).

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    busy_loop_is_user_time,
    child_busy_time_reaches_parent_after_wait,
    cpu_clocks_count_cpu_time_not_wall_time,
    cpu_clocks_of_pids_and_tids,
    nanosleep_restarts_after_stop_and_continue,
    realtime_starts_from_the_rtc,
    clock_settime_moves_realtime_not_monotonic,
    settimeofday_sets_realtime_and_checks_values,
];

const NR_CLOCK_SETTIME: usize = 112;
const NR_CLOCK_GETRES: usize = 114;
const NR_TIMES: usize = 153;
const NR_GETRUSAGE: usize = 165;
const NR_GETTIMEOFDAY: usize = 169;
const NR_SETTIMEOFDAY: usize = 170;
const NR_WAIT4: usize = 260;

const RUSAGE_SELF: usize = 0;
const RUSAGE_CHILDREN: usize = -1isize as usize;
const RUSAGE_THREAD: usize = 1;

const CLOCK_THREAD_CPUTIME_ID: usize = 3;
const CPUCLOCK_PROF: i32 = 0;
const CPUCLOCK_VIRT: i32 = 1;
const CPUCLOCK_SCHED: i32 = 2;

/// 2020-01-01T00:00:00Z.
const YEAR_2020: i64 = 1_577_836_800;

/// `struct rusage`: the two times, then 14 longs.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    rest: [i64; 14],
}

fn tv_ns(t: Timeval) -> i64 {
    t.sec * 1_000_000_000 + t.usec * 1000
}

fn getrusage(who: usize) -> Result<(i64, i64), Errno> {
    let mut ru = Rusage::default();
    // SAFETY: ru is a live, writable struct rusage.
    unsafe { raw(NR_GETRUSAGE, &[who, &mut ru as *mut Rusage as usize]) }?;
    Ok((tv_ns(ru.utime), tv_ns(ru.stime)))
}

/// `times(&tms)`: (its return value, [utime, stime, cutime, cstime]).
fn times() -> Result<(usize, [i64; 4]), Errno> {
    let mut tms = [0i64; 4];
    // SAFETY: tms is a live, writable struct tms.
    let r = unsafe { raw(NR_TIMES, &[tms.as_mut_ptr() as usize]) }?;
    Ok((r, tms))
}

/// `MAKE_PROCESS_CPUCLOCK(pid, which)`.
fn process_cpuclock(pid: i32, which: i32) -> usize {
    ((!pid) << 3 | which) as isize as usize
}

/// `MAKE_THREAD_CPUCLOCK(tid, which)`.
fn thread_cpuclock(tid: i32, which: i32) -> usize {
    ((!tid) << 3 | which | 4) as isize as usize
}

fn clock_getres(clock: usize) -> Result<Timespec, Errno> {
    let mut t = Timespec::default();
    // SAFETY: t is a live timespec.
    unsafe { raw(NR_CLOCK_GETRES, &[clock, &mut t as *mut Timespec as usize]) }?;
    Ok(t)
}

fn clock_settime(clock: usize, t: &Timespec) -> Result<usize, Errno> {
    // SAFETY: t is a live timespec, only read.
    unsafe { raw(NR_CLOCK_SETTIME, &[clock, t as *const Timespec as usize]) }
}

/// Spins at user level for `ms` of CLOCK_MONOTONIC time.
/// Spins in user mode for `ms` milliseconds, timed by the EL0 counter
/// rather than clock_gettime, so that the loop makes no system call whose
/// time (and whose chance of taking the tick in the kernel) would count as
/// system time.
fn busy_ms(ms: i64) {
    use super::counter::{cntfrq, cntvct};
    let end = cntvct() + cntfrq() * ms as u64 / 1000;
    let mut x = 0u64;
    while cntvct() < end {
        // Long enough that reading the clock is a small part.
        for i in 0..20_000u64 {
            x = core::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
}

fn busy_loop_is_user_time() -> Outcome {
    let (u0, s0) = getrusage(RUSAGE_SELF).ctx("getrusage(SELF)")?;
    let (tu0, ts0) = getrusage(RUSAGE_THREAD).ctx("getrusage(THREAD)")?;
    let (_, tms0) = times().ctx("times")?;
    busy_ms(200);
    let (tu1, ts1) = getrusage(RUSAGE_THREAD).ctx("getrusage(THREAD)")?;
    let (u1, s1) = getrusage(RUSAGE_SELF).ctx("getrusage(SELF)")?;
    let (_, tms1) = times().ctx("times")?;
    let (du, ds) = (u1 - u0, s1 - s0);
    ensure!(du >= 100_000_000, "200 ms of busy loop gave {du} ns of user time");
    ensure!(ds < du / 2, "a user busy loop gave {ds} ns of system time ({du} user)");
    let (tu0, ts0) = (tu0, ts0);
    ensure!(
        tu1 + ts1 - tu0 - ts0 >= 100_000_000,
        "RUSAGE_THREAD's time grew from {tu0}+{ts0} to {tu1}+{ts1} ns"
    );
    ensure!(
        tu1 + ts1 <= u1 + s1,
        "the thread, read first, used more than its process"
    );
    let dticks = tms1[0] - tms0[0];
    ensure!(
        (10..=40).contains(&dticks),
        "times()'s utime grew by {dticks} ticks of 10 ms over 200 ms"
    );
    check_eq!(getrusage(5).map(drop), Err(Errno::EINVAL), "getrusage(5)");
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(NR_GETRUSAGE, &[RUSAGE_SELF, BAD_LOW]) },
        Err(Errno::EFAULT),
        "rusage at 0x1"
    );
    Ok(())
}

fn child_busy_time_reaches_parent_after_wait() -> Outcome {
    check_eq!(
        getrusage(RUSAGE_CHILDREN).ctx("getrusage")?,
        (0, 0),
        "children's time before any child"
    );
    let (r0, _) = times().ctx("times")?;
    let pid = spawn(|| {
        busy_ms(200);
        0
    })
    .ctx("fork")?;
    let mut status = 0i32;
    let mut ru = Rusage::default();
    // SAFETY: status and ru are live and writable.
    let got = unsafe {
        raw(
            NR_WAIT4,
            &[
                pid as usize,
                &mut status as *mut i32 as usize,
                0,
                &mut ru as *mut Rusage as usize,
            ],
        )
    }
    .ctx("wait4")?;
    check_eq!((got as i32, status), (pid, 0), "wait4 (pid, status)");
    let wu = tv_ns(ru.utime);
    ensure!(
        wu >= 100_000_000,
        "wait4's rusage has {wu} ns of user time for 200 ms busy"
    );
    let (cu, cs) = getrusage(RUSAGE_CHILDREN).ctx("getrusage(CHILDREN)")?;
    ensure!(cu >= 100_000_000, "RUSAGE_CHILDREN has {cu} ns of user time");
    // Linux samples the two separately (wait4's from the zombie's group
    // time, the children's sum from the adjusted time at reaping), and
    // they have been seen 1.6 ms apart there: equal within 10 ms.
    let ws = tv_ns(ru.stime);
    ensure!(
        cu.abs_diff(wu) <= 10_000_000 && cs.abs_diff(ws) <= 10_000_000,
        "RUSAGE_CHILDREN ({cu}, {cs}) against wait4's rusage ({wu}, {ws})"
    );
    let (own, _) = getrusage(RUSAGE_SELF).ctx("getrusage(SELF)")?;
    ensure!(
        own < 100_000_000,
        "the waiting parent was charged {own} ns of its child's time"
    );
    let (r1, tms) = times().ctx("times")?;
    ensure!(tms[2] >= 10, "times()'s cutime is {} ticks for 200 ms busy", tms[2]);
    let elapsed = r1.wrapping_sub(r0) as i64;
    ensure!(
        (18..200).contains(&elapsed),
        "times() moved by {elapsed} ticks over a 200 ms child ({r0:#x} to {r1:#x})"
    );
    Ok(())
}

fn cpu_clocks_count_cpu_time_not_wall_time() -> Outcome {
    let p0 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID).ctx("process clock")?;
    let t0 = clock_gettime(CLOCK_THREAD_CPUTIME_ID).ctx("thread clock")?;
    sleep_ms(200);
    let p1 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID).ctx("process clock")?;
    let slept = p1.as_ns() - p0.as_ns();
    ensure!(slept < 50_000_000, "a 200 ms sleep used {slept} ns of CPU time");
    busy_ms(200);
    let p2 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID).ctx("process clock")?;
    let t2 = clock_gettime(CLOCK_THREAD_CPUTIME_ID).ctx("thread clock")?;
    let busy = p2.as_ns() - p1.as_ns();
    ensure!(
        (150_000_000..1_000_000_000).contains(&busy),
        "200 ms busy moved the process clock by {busy} ns"
    );
    ensure!(
        t2.as_ns() - t0.as_ns() >= 150_000_000,
        "the thread clock moved by {} ns",
        t2.as_ns() - t0.as_ns()
    );
    check_eq!(
        clock_getres(CLOCK_PROCESS_CPUTIME_ID).ctx("getres")?,
        Timespec { sec: 0, nsec: 1 },
        "CLOCK_PROCESS_CPUTIME_ID resolution"
    );
    check_eq!(
        clock_getres(CLOCK_THREAD_CPUTIME_ID).ctx("getres")?,
        Timespec { sec: 0, nsec: 1 },
        "CLOCK_THREAD_CPUTIME_ID resolution"
    );
    let tick = clock_getres(process_cpuclock(0, CPUCLOCK_PROF)).ctx("getres PROF")?;
    ensure!(
        tick.sec == 0 && (1_000_000..=10_000_000).contains(&tick.nsec),
        "the PROF clock's resolution is {tick:?}, not a tick"
    );
    Ok(())
}

fn cpu_clocks_of_pids_and_tids() -> Outcome {
    busy_ms(30);
    let me = getpid();
    let own = clock_gettime(CLOCK_PROCESS_CPUTIME_ID).ctx("process clock")?;
    let by_pid = clock_gettime(process_cpuclock(me, CPUCLOCK_SCHED)).ctx("MAKE_PROCESS_CPUCLOCK(getpid)")?;
    ensure!(
        by_pid.as_ns() >= own.as_ns() && by_pid.as_ns() - own.as_ns() < 50_000_000,
        "own pid's clock {by_pid:?} against CLOCK_PROCESS_CPUTIME_ID {own:?}"
    );
    let tid = clock_gettime(thread_cpuclock(gettid(), CPUCLOCK_SCHED)).ctx("MAKE_THREAD_CPUCLOCK(gettid)")?;
    ensure!(tid.as_ns() >= 20_000_000, "own thread's clock reads {tid:?}");
    // User time first: a tick between the reads only adds to the later one.
    let virt = clock_gettime(process_cpuclock(0, CPUCLOCK_VIRT)).ctx("VIRT")?;
    let prof = clock_gettime(process_cpuclock(0, CPUCLOCK_PROF)).ctx("PROF")?;
    ensure!(
        virt.as_ns() <= prof.as_ns(),
        "user time {virt:?} above user+system {prof:?}"
    );
    // Another process: its process clock is readable, its threads' are not.
    let pid = spawn(|| {
        busy_ms(100);
        sleep_ms(5000);
        0
    })
    .ctx("fork")?;
    sleep_ms(300);
    let child = clock_gettime(process_cpuclock(pid, CPUCLOCK_SCHED)).ctx("a child's process clock")?;
    check_eq!(
        clock_gettime(thread_cpuclock(pid, CPUCLOCK_SCHED)).map(drop),
        Err(Errno::EINVAL),
        "another process's thread clock"
    );
    let _ = kill(pid, SIGKILL);
    let _ = wait_status(pid);
    ensure!(
        (50_000_000..400_000_000).contains(&child.as_ns()),
        "the child's clock reads {child:?} after 100 ms busy"
    );
    check_eq!(
        clock_gettime(process_cpuclock(pid, CPUCLOCK_SCHED)).map(drop),
        Err(Errno::EINVAL),
        "a reaped child's clock"
    );
    check_eq!(
        clock_gettime(process_cpuclock(0, 3)).map(drop),
        Err(Errno::EINVAL),
        "CPU clock kind 3"
    );
    check_eq!(
        clock_getres(process_cpuclock(pid, CPUCLOCK_SCHED)).map(drop),
        Err(Errno::EINVAL),
        "getres of a gone process's clock"
    );
    Ok(())
}

fn nanosleep_restarts_after_stop_and_continue() -> Outcome {
    // The sleep is restarted with what remained of it, not from scratch:
    // 1.5 s in all with a 1 s stop inside it; a restart from scratch would
    // take at least 2.55 s. The gap between the two leaves room for a
    // loaded host (a 300 ms sleep once took over 600 ms at load 11).
    let pid = spawn(|| {
        let t0 = now_ns();
        let r = nanosleep(&Timespec::ms(1_500));
        let took = now_ns() - t0;
        match r {
            Ok(()) if (1_500_000_000..2_400_000_000).contains(&took) => 0,
            Ok(()) => 1,
            Err(_) => 2,
        }
    })
    .ctx("fork")?;
    sleep_ms(50);
    kill(pid, SIGSTOP).ctx("SIGSTOP")?;
    check_eq!(
        wait4(pid, WUNTRACED).ctx("wait4")?,
        (pid, 0x137f),
        "(pid, stopped status)"
    );
    sleep_ms(1_000);
    kill(pid, SIGCONT).ctx("SIGCONT")?;
    check_eq!(
        wait_status(pid).ctx("wait")?,
        0,
        "the sleeper's verdict (1: wrong length, 2: an error such as EINTR)"
    );
    Ok(())
}

fn realtime_starts_from_the_rtc() -> Outcome {
    let real = clock_gettime(CLOCK_REALTIME).ctx("CLOCK_REALTIME")?;
    let mut tv = Timeval::default();
    // SAFETY: tv is a live timeval; no timezone wanted.
    unsafe { raw(NR_GETTIMEOFDAY, &[&mut tv as *mut Timeval as usize, 0]) }.ctx("gettimeofday")?;
    ensure!(
        (tv.sec - real.sec).abs() <= 1,
        "gettimeofday {tv:?} against CLOCK_REALTIME {real:?}"
    );
    // A machine with an RTC (virt's PL031) starts at its date; one
    // without (raspi4b) at the epoch, so within a day of the boot. Which
    // machine said what is checked from the kernel log by tests/clock.rs.
    let uptime = now_ns() / 1_000_000_000;
    ensure!(
        real.sec > YEAR_2020 || (real.sec - uptime).abs() < 86_400,
        "CLOCK_REALTIME is {real:?}: neither an RTC's date nor the epoch"
    );
    Ok(())
}

fn clock_settime_moves_realtime_not_monotonic() -> Outcome {
    let r0 = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    let m0 = now_ns();
    let ahead = Timespec {
        sec: r0.sec + 100_000,
        nsec: r0.nsec,
    };
    check_eq!(clock_settime(CLOCK_REALTIME, &ahead), Ok(0), "clock_settime +100000 s");
    let r1 = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    let m1 = now_ns();
    // Put the wall clock back where it would have been, plus a margin for
    // the time the call takes: a clock that started at the epoch is at
    // the boot, and Linux refuses a time before it.
    let back = clock_gettime(CLOCK_REALTIME).ctx("realtime")?.as_ns() - 100_000_000_000_000 + 100_000_000;
    let restore = Timespec {
        sec: back / 1_000_000_000,
        nsec: back % 1_000_000_000,
    };
    check_eq!(clock_settime(CLOCK_REALTIME, &restore), Ok(0), "clock_settime back");
    let moved = r1.as_ns() - r0.as_ns();
    ensure!(
        (100_000_000_000_000..100_001_000_000_000).contains(&moved),
        "CLOCK_REALTIME moved by {moved} ns for 100000 s"
    );
    ensure!(m1 - m0 < 1_000_000_000, "CLOCK_MONOTONIC moved by {} ns", m1 - m0);
    let r2 = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    ensure!(
        (r2.as_ns() - now_ns() - (r0.as_ns() - m0)).abs() < 1_000_000_000,
        "realtime not restored: {r0:?} then {r2:?}"
    );
    // Values Linux refuses.
    let bad_ns = Timespec {
        sec: r0.sec,
        nsec: 1_000_000_000,
    };
    check_eq!(
        clock_settime(CLOCK_REALTIME, &bad_ns),
        Err(Errno::EINVAL),
        "tv_nsec 1e9"
    );
    let negative = Timespec { sec: -1, nsec: 0 };
    check_eq!(
        clock_settime(CLOCK_REALTIME, &negative),
        Err(Errno::EINVAL),
        "tv_sec -1"
    );
    let epoch = Timespec { sec: 0, nsec: 0 };
    check_eq!(
        clock_settime(CLOCK_REALTIME, &epoch),
        Err(Errno::EINVAL),
        "a time before the boot"
    );
    check_eq!(
        clock_settime(CLOCK_MONOTONIC, &r0),
        Err(Errno::EINVAL),
        "CLOCK_MONOTONIC"
    );
    check_eq!(clock_settime(100, &r0), Err(Errno::EINVAL), "clock 100");
    check_eq!(
        clock_settime(CLOCK_PROCESS_CPUTIME_ID, &r0),
        Err(Errno::EINVAL),
        "CLOCK_PROCESS_CPUTIME_ID"
    );
    check_eq!(
        clock_settime(process_cpuclock(0, CPUCLOCK_SCHED), &r0),
        Err(Errno::EPERM),
        "MAKE_PROCESS_CPUCLOCK(0, SCHED)"
    );
    Ok(())
}

fn settimeofday(tv: Option<&Timeval>, tz: Option<&[i32; 2]>) -> Result<usize, Errno> {
    let tv = tv.map_or(0, |t| t as *const Timeval as usize);
    let tz = tz.map_or(0, |t| t.as_ptr() as usize);
    // SAFETY: both are live or NULL, and only read.
    unsafe { raw(NR_SETTIMEOFDAY, &[tv, tz]) }
}

fn settimeofday_sets_realtime_and_checks_values() -> Outcome {
    let r0 = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    let ahead = Timeval {
        sec: r0.sec + 50_000,
        usec: r0.nsec / 1000,
    };
    check_eq!(settimeofday(Some(&ahead), None), Ok(0), "settimeofday +50000 s");
    let r1 = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    // Back, with a margin (see clock_settime_moves_realtime_not_monotonic).
    let back = clock_gettime(CLOCK_REALTIME).ctx("realtime")?.as_ns() - 50_000_000_000_000 + 100_000_000;
    let restore = Timeval {
        sec: back / 1_000_000_000,
        usec: back % 1_000_000_000 / 1000,
    };
    check_eq!(settimeofday(Some(&restore), None), Ok(0), "settimeofday back");
    ensure!(
        (r1.sec - ahead.sec).abs() <= 1,
        "CLOCK_REALTIME is {r1:?} after setting {ahead:?}"
    );
    let bad_us = Timeval {
        sec: r0.sec,
        usec: 1_000_001,
    };
    check_eq!(settimeofday(Some(&bad_us), None), Err(Errno::EINVAL), "tv_usec 1000001");
    let negative = Timeval { sec: -5, usec: 0 };
    check_eq!(settimeofday(Some(&negative), None), Err(Errno::EINVAL), "tv_sec -5");
    check_eq!(
        settimeofday(None, Some(&[16 * 60, 0])),
        Err(Errno::EINVAL),
        "16 hours west"
    );
    check_eq!(settimeofday(None, None), Ok(0), "nothing to set");
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(NR_SETTIMEOFDAY, &[BAD_LOW, 0]) },
        Err(Errno::EFAULT),
        "timeval at 0x1"
    );
    Ok(())
}
