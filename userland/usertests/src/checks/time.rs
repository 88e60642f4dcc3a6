//! Clocks, sleeps and interval timers.

use core::sync::atomic::Ordering::SeqCst;

use super::signal::{hits, record, REC};
use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    clock_gettime_clocks,
    clock_gettime_errors,
    nanosleep_sleeps_at_least,
    nanosleep_errors,
    nanosleep_eintr_with_remaining,
    nanosleep_eintr_even_with_sa_restart,
    clock_nanosleep_relative_absolute,
    clock_nanosleep_errors,
    setitimer_getitimer_one_shot,
    setitimer_periodic,
    itimer_errors,
    cpu_itimers_fire_at_their_interval_in_a_busy_loop,
    cpu_itimers_stay_silent_while_the_process_sleeps,
    cpu_itimer_remaining_value_decreases_with_cpu_time,
    cpu_itimers_are_not_inherited_by_fork,
];

fn clock_gettime_clocks() -> Outcome {
    // REALTIME, MONOTONIC, PROCESS_CPUTIME_ID, THREAD_CPUTIME_ID,
    // MONOTONIC_RAW, REALTIME_COARSE, MONOTONIC_COARSE, BOOTTIME.
    for clock in [0, 1, 2, 3, 4, 5, 6, 7] {
        let t = clock_gettime(clock).ctx("clock_gettime")?;
        ensure!(
            t.sec >= 0 && (0..1_000_000_000).contains(&t.nsec),
            "clock {clock} gave {t:?}"
        );
    }
    let a = clock_gettime(CLOCK_MONOTONIC).ctx("monotonic")?;
    let b = clock_gettime(CLOCK_MONOTONIC).ctx("monotonic")?;
    ensure!(b.as_ns() >= a.as_ns(), "CLOCK_MONOTONIC went back: {a:?} then {b:?}");
    let boot = clock_gettime(CLOCK_BOOTTIME).ctx("boottime")?;
    ensure!(
        boot.as_ns() >= b.as_ns(),
        "CLOCK_BOOTTIME {boot:?} behind CLOCK_MONOTONIC {b:?}"
    );
    let c0 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID).ctx("cputime")?;
    let mut x = 0u64;
    for i in 0..5000u64 {
        x = core::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    let c1 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID).ctx("cputime")?;
    ensure!(
        c1.as_ns() > c0.as_ns(),
        "CLOCK_PROCESS_CPUTIME_ID did not advance over a busy loop ({c0:?}, {c1:?})"
    );
    Ok(())
}

fn clock_gettime_errors() -> Outcome {
    check_eq!(clock_gettime(100).map(drop), Err(Errno::EINVAL), "clock 100");
    check_eq!(clock_gettime(16).map(drop), Err(Errno::EINVAL), "clock 16");
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(nr::CLOCK_GETTIME, &[CLOCK_MONOTONIC, BAD_LOW]) },
        Err(Errno::EFAULT),
        "timespec at 0x1"
    );
    // SAFETY: as above.
    check_eq!(
        unsafe { raw(nr::CLOCK_GETTIME, &[CLOCK_REALTIME, BAD_KERNEL]) },
        Err(Errno::EFAULT),
        "timespec in the kernel half"
    );
    Ok(())
}

fn nanosleep_sleeps_at_least() -> Outcome {
    let t0 = now_ns();
    check_eq!(nanosleep(&Timespec::ms(20)).map_err(|e| e.0), Ok(()), "nanosleep 20 ms");
    let took = now_ns() - t0;
    ensure!(took >= 20_000_000, "slept {took} ns, less than 20 ms");
    ensure!(took < 1_000_000_000, "slept {took} ns for 20 ms");
    check_eq!(nanosleep(&Timespec::default()).map_err(|e| e.0), Ok(()), "nanosleep 0");
    Ok(())
}

fn nanosleep_errors() -> Outcome {
    let bad = [
        Timespec {
            sec: 0,
            nsec: 1_000_000_000,
        },
        Timespec { sec: 0, nsec: -1 },
        Timespec { sec: -1, nsec: 0 },
    ];
    for t in bad {
        check_eq!(nanosleep(&t).map_err(|e| e.0), Err(Errno::EINVAL), "nanosleep {t:?}");
    }
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(nr::NANOSLEEP, &[BAD_LOW, 0]) },
        Err(Errno::EFAULT),
        "request at 0x1"
    );
    Ok(())
}

fn nanosleep_eintr_with_remaining() -> Outcome {
    handle(SIGALRM, record, 0, 0).ctx("install")?;
    alarm_ms(20).ctx("setitimer")?;
    let t0 = now_ns();
    let r = nanosleep(&Timespec::ms(2000));
    let took = now_ns() - t0;
    let Err((e, rem)) = r else {
        return Err(crate::Fail(alloc::format!(
            "nanosleep(2 s) was not interrupted (took {took} ns)"
        )));
    };
    check_eq!(e, Errno::EINTR, "nanosleep interrupted by a handler");
    check_eq!(
        (hits(), REC.signo.load(SeqCst)),
        (1, SIGALRM),
        "(handler calls, signal)"
    );
    ensure!(took < 1_000_000_000, "returned after {took} ns");
    let left = rem.as_ns();
    ensure!(
        left > 500_000_000 && left < 2_000_000_000,
        "remaining time {rem:?} is not about 2 s - 20 ms"
    );
    Ok(())
}

fn nanosleep_eintr_even_with_sa_restart() -> Outcome {
    // nanosleep is never restarted after a handler ran, SA_RESTART or not.
    handle(SIGALRM, record, SA_RESTART, 0).ctx("install")?;
    alarm_ms(20).ctx("setitimer")?;
    let r = nanosleep(&Timespec::ms(2000)).map_err(|e| e.0);
    check_eq!(r, Err(Errno::EINTR), "nanosleep with an SA_RESTART handler");
    check_eq!(hits(), 1, "handler calls");
    Ok(())
}

fn clock_nanosleep(clock: usize, flags: usize, t: &Timespec) -> Result<usize, Errno> {
    // SAFETY: t is live; no remainder wanted.
    unsafe { raw(nr::CLOCK_NANOSLEEP, &[clock, flags, t as *const Timespec as usize, 0]) }
}

fn clock_nanosleep_relative_absolute() -> Outcome {
    let t0 = now_ns();
    check_eq!(
        clock_nanosleep(CLOCK_MONOTONIC, 0, &Timespec::ms(10)),
        Ok(0),
        "relative 10 ms"
    );
    ensure!(now_ns() - t0 >= 10_000_000, "relative sleep shorter than 10 ms");
    let past = Timespec { sec: 0, nsec: 1 };
    let t1 = now_ns();
    check_eq!(
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past),
        Ok(0),
        "absolute time in the past"
    );
    ensure!(now_ns() - t1 < 500_000_000, "a past deadline still slept");
    let deadline = now_ns() + 20_000_000;
    let abs = Timespec {
        sec: deadline / 1_000_000_000,
        nsec: deadline % 1_000_000_000,
    };
    check_eq!(
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs),
        Ok(0),
        "absolute now + 20 ms"
    );
    let now = now_ns();
    ensure!(
        now >= deadline,
        "woke {} ns before the absolute deadline",
        deadline - now
    );
    check_eq!(
        clock_nanosleep(CLOCK_REALTIME, 0, &Timespec::ms(1)),
        Ok(0),
        "CLOCK_REALTIME relative"
    );
    check_eq!(
        clock_nanosleep(CLOCK_BOOTTIME, 0, &Timespec::ms(1)),
        Ok(0),
        "CLOCK_BOOTTIME relative"
    );
    Ok(())
}

fn clock_nanosleep_errors() -> Outcome {
    let t = Timespec::ms(1);
    // Linux refuses to sleep on a thread's CPU clock with EOPNOTSUPP.
    check_eq!(
        clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &t),
        Err(Errno::ENOTSUP),
        "CLOCK_THREAD_CPUTIME_ID"
    );
    check_eq!(clock_nanosleep(100, 0, &t), Err(Errno::EINVAL), "clock 100");
    check_eq!(
        clock_nanosleep(
            CLOCK_MONOTONIC,
            0,
            &Timespec {
                sec: 0,
                nsec: 1_000_000_000
            }
        ),
        Err(Errno::EINVAL),
        "tv_nsec = 1e9"
    );
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::CLOCK_NANOSLEEP, &[CLOCK_MONOTONIC, 0, BAD_LOW, 0]) };
    check_eq!(r, Err(Errno::EFAULT), "request at 0x1");
    Ok(())
}

fn getitimer(which: usize) -> Result<Itimerval, Errno> {
    let mut v = Itimerval::default();
    // SAFETY: v is a live itimerval.
    unsafe { raw(nr::GETITIMER, &[which, &mut v as *mut Itimerval as usize]) }?;
    Ok(v)
}

fn setitimer_getitimer_one_shot() -> Outcome {
    check_eq!(getitimer(ITIMER_REAL), Ok(Itimerval::default()), "disarmed at first");
    let old = alarm_ms(1000).ctx("arm 1 s")?;
    check_eq!(old, Itimerval::default(), "old value of a disarmed timer");
    let v = getitimer(ITIMER_REAL).ctx("getitimer")?;
    check_eq!(v.interval, Timeval::default(), "one-shot: no interval");
    let left = v.value.sec * 1_000_000 + v.value.usec;
    ensure!(
        left > 500_000 && left <= 1_000_000,
        "remaining {:?} is not just under 1 s",
        v.value
    );
    ensure!(
        (0..1_000_000).contains(&v.value.usec),
        "tv_usec {} out of range",
        v.value.usec
    );
    let old = alarm_ms(0).ctx("disarm")?;
    let left = old.value.sec * 1_000_000 + old.value.usec;
    ensure!(
        left > 500_000 && left <= 1_000_000,
        "old value when disarming {:?}",
        old.value
    );
    check_eq!(getitimer(ITIMER_REAL), Ok(Itimerval::default()), "disarmed");
    // One expiry: the handler runs once.
    handle(SIGALRM, record, 0, 0).ctx("install")?;
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGALRM))).ctx("block")?;
    alarm_ms(10).ctx("arm 10 ms")?;
    check_eq!(sigsuspend(0), Errno::EINTR, "sigsuspend");
    check_eq!(hits(), 1, "one expiry");
    check_eq!(
        getitimer(ITIMER_REAL),
        Ok(Itimerval::default()),
        "a one-shot timer disarms itself"
    );
    Ok(())
}

fn setitimer_periodic() -> Outcome {
    handle(SIGALRM, record, 0, 0).ctx("install")?;
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGALRM))).ctx("block")?;
    let period = Timeval { sec: 0, usec: 10_000 };
    setitimer(
        ITIMER_REAL,
        &Itimerval {
            interval: period,
            value: period,
        },
    )
    .ctx("arm periodic")?;
    let t0 = now_ns();
    for _ in 0..3 {
        check_eq!(sigsuspend(0), Errno::EINTR, "sigsuspend");
    }
    let took = now_ns() - t0;
    check_eq!(hits(), 3, "three expiries");
    ensure!(took >= 25_000_000, "three 10 ms periods took {took} ns");
    let v = getitimer(ITIMER_REAL).ctx("getitimer")?;
    check_eq!(v.interval, period, "interval kept");
    alarm_ms(0).ctx("disarm")?;
    Ok(())
}

fn itimer_errors() -> Outcome {
    let v = Itimerval::default();
    check_eq!(setitimer(5, &v).map(drop), Err(Errno::EINVAL), "setitimer which 5");
    check_eq!(getitimer(5).map(drop), Err(Errno::EINVAL), "getitimer which 5");
    let bad = Itimerval {
        interval: Timeval::default(),
        value: Timeval {
            sec: 0,
            usec: 1_000_000,
        },
    };
    check_eq!(
        setitimer(ITIMER_REAL, &bad).map(drop),
        Err(Errno::EINVAL),
        "tv_usec = 1e6"
    );
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(nr::GETITIMER, &[ITIMER_REAL, BAD_LOW]) },
        Err(Errno::EFAULT),
        "getitimer into 0x1"
    );
    // SAFETY: as above.
    check_eq!(
        unsafe { raw(nr::SETITIMER, &[ITIMER_REAL, BAD_LOW, 0]) },
        Err(Errno::EFAULT),
        "setitimer from 0x1"
    );
    Ok(())
}

/// SIGVTALRM and SIGPROF deliveries seen by [`count_cpu_timer`], and the
/// last si_code.
static VTALRMS: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
static PROFS: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
static CPU_TIMER_CODE: core::sync::atomic::AtomicI32 = core::sync::atomic::AtomicI32::new(0);

extern "C" fn count_cpu_timer(sig: i32, info: *mut SigInfo, _uc: *mut UContext) {
    // SAFETY: the kernel passes a valid siginfo (SA_SIGINFO).
    CPU_TIMER_CODE.store(unsafe { (*info).code }, SeqCst);
    match sig {
        SIGVTALRM => VTALRMS.fetch_add(1, SeqCst),
        SIGPROF => PROFS.fetch_add(1, SeqCst),
        _ => 0,
    };
}

/// Spins at EL0 until `done()` or the process has used `ns` more CPU
/// time, or `wall_limit_ns` of wall time passed; the CPU time used.
fn burn_cpu_until(ns: i64, wall_limit_ns: i64, mut done: impl FnMut() -> bool) -> i64 {
    let cpu = || clock_gettime(CLOCK_PROCESS_CPUTIME_ID).map_or(0, |t| t.as_ns());
    let (c0, t0) = (cpu(), now_ns());
    let mut x = 0u64;
    while !done() && cpu() - c0 < ns && now_ns() - t0 < wall_limit_ns {
        for i in 0..20_000u64 {
            x = core::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
    cpu() - c0
}

fn usec(t: Timeval) -> i64 {
    t.sec * 1_000_000 + t.usec
}

/// ITIMER_PROF counts user + system time and ITIMER_VIRTUAL user time:
/// a process spinning at EL0 gets SIGPROF and SIGVTALRM about once per
/// interval of CPU time it uses, with si_code SI_KERNEL, and the interval
/// is kept for getitimer.
fn cpu_itimers_fire_at_their_interval_in_a_busy_loop() -> Outcome {
    handle(SIGPROF, count_cpu_timer, 0, 0).ctx("install SIGPROF")?;
    handle(SIGVTALRM, count_cpu_timer, 0, 0).ctx("install SIGVTALRM")?;
    let period = Timeval { sec: 0, usec: 20_000 };
    let every = Itimerval {
        interval: period,
        value: period,
    };
    check_eq!(
        setitimer(ITIMER_PROF, &every),
        Ok(Itimerval::default()),
        "arm ITIMER_PROF (old value)"
    );
    check_eq!(
        setitimer(ITIMER_VIRTUAL, &every),
        Ok(Itimerval::default()),
        "arm ITIMER_VIRTUAL (old value)"
    );
    // Until ten of each; the CPU time the timers count is sampled by the
    // tick, which on a loaded host (a vCPU descheduled) counts less than
    // CLOCK_PROCESS_CPUTIME_ID, so the run is bounded generously.
    let used = burn_cpu_until(3_000_000_000, 60_000_000_000, || {
        PROFS.load(SeqCst) >= 10 && VTALRMS.load(SeqCst) >= 10
    });
    let (prof, virt) = (PROFS.load(SeqCst) as i64, VTALRMS.load(SeqCst) as i64);
    setitimer(ITIMER_PROF, &Itimerval::default()).ctx("disarm PROF")?;
    setitimer(ITIMER_VIRTUAL, &Itimerval::default()).ctx("disarm VIRTUAL")?;
    ensure!(
        prof >= 10 && virt >= 10,
        "{prof} SIGPROF and {virt} SIGVTALRM in {used} ns of CPU time at 20 ms"
    );
    // Never early: no more expiries than 20 ms periods of CPU time used
    // (give or take the one in flight).
    ensure!(
        prof <= used / 20_000_000 + 2 && virt <= prof + 1,
        "{prof} SIGPROF and {virt} SIGVTALRM for only {used} ns of CPU time at 20 ms"
    );
    check_eq!(CPU_TIMER_CODE.load(SeqCst), SI_KERNEL, "si_code");
    Ok(())
}

/// CPU-time timers do not advance while the process sleeps: no signal
/// comes in 300 ms of sleep with 10 ms armed, and both stay armed.
fn cpu_itimers_stay_silent_while_the_process_sleeps() -> Outcome {
    handle(SIGPROF, count_cpu_timer, 0, 0).ctx("install SIGPROF")?;
    handle(SIGVTALRM, count_cpu_timer, 0, 0).ctx("install SIGVTALRM")?;
    let ten_ms = Itimerval {
        interval: Timeval::default(),
        value: Timeval { sec: 0, usec: 10_000 },
    };
    setitimer(ITIMER_PROF, &ten_ms).ctx("arm PROF")?;
    setitimer(ITIMER_VIRTUAL, &ten_ms).ctx("arm VIRTUAL")?;
    sleep_ms(300);
    check_eq!(PROFS.load(SeqCst), 0, "SIGPROF while asleep");
    check_eq!(VTALRMS.load(SeqCst), 0, "SIGVTALRM while asleep");
    for (which, name) in [(ITIMER_PROF, "PROF"), (ITIMER_VIRTUAL, "VIRTUAL")] {
        let v = getitimer(which).ctx("getitimer")?;
        // Linux arms a CPU timer one tick (at most 10 ms) later than asked.
        ensure!(
            usec(v.value) > 0 && usec(v.value) <= 20_000,
            "ITIMER_{name} after the sleep: {v:?}"
        );
    }
    Ok(())
}

/// getitimer's remaining value of a CPU timer falls as the process uses
/// CPU time, and setitimer returns it when disarming.
fn cpu_itimer_remaining_value_decreases_with_cpu_time() -> Outcome {
    let ten_s = Itimerval {
        interval: Timeval { sec: 1, usec: 0 },
        value: Timeval { sec: 10, usec: 0 },
    };
    for (which, name) in [(ITIMER_PROF, "PROF"), (ITIMER_VIRTUAL, "VIRTUAL")] {
        setitimer(which, &ten_s).ctx("arm")?;
        let a = getitimer(which).ctx("getitimer")?;
        check_eq!(a.interval, ten_s.interval, "interval of ITIMER_{name}");
        // Linux arms a CPU timer one tick (at most 10 ms) later than asked.
        ensure!(
            usec(a.value) > 9_000_000 && usec(a.value) <= 10_010_000,
            "ITIMER_{name} just armed for 10 s: {a:?}"
        );
        // Until 40 ms of the timer's CPU time went by (ticks sample it).
        let mut b = a;
        let used = burn_cpu_until(3_000_000_000, 60_000_000_000, || {
            b = getitimer(which).unwrap_or(a);
            usec(b.value) <= usec(a.value) - 40_000
        });
        ensure!(
            usec(b.value) <= usec(a.value) - 40_000,
            "ITIMER_{name}: {a:?} then {b:?} after {used} ns of CPU time"
        );
        // It counts no more than the CPU time used (and a tick).
        ensure!(
            usec(a.value) - usec(b.value) <= used / 1000 + 10_000,
            "ITIMER_{name}: {a:?} then {b:?} after only {used} ns of CPU time"
        );
        let old = setitimer(which, &Itimerval::default()).ctx("disarm")?;
        ensure!(
            usec(old.value) > 0 && usec(old.value) <= usec(b.value),
            "ITIMER_{name}: old value {old:?} when disarming after {b:?}"
        );
        check_eq!(getitimer(which), Ok(Itimerval::default()), "disarmed");
    }
    Ok(())
}

/// A child does not inherit its parent's ITIMER_PROF and ITIMER_VIRTUAL,
/// and the parent's stay armed.
fn cpu_itimers_are_not_inherited_by_fork() -> Outcome {
    let armed = Itimerval {
        interval: Timeval { sec: 1, usec: 0 },
        value: Timeval { sec: 10, usec: 0 },
    };
    setitimer(ITIMER_PROF, &armed).ctx("arm PROF")?;
    setitimer(ITIMER_VIRTUAL, &armed).ctx("arm VIRTUAL")?;
    let child = spawn(|| {
        let clear = |w| getitimer(w) == Ok(Itimerval::default());
        match (clear(ITIMER_PROF), clear(ITIMER_VIRTUAL)) {
            (true, true) => 0,
            (false, _) => 1,
            (true, false) => 2,
        }
    })
    .ctx("fork")?;
    let status = wait_status(child).ctx("wait")?;
    check_eq!(
        status,
        0,
        "child's exit status (1: PROF inherited, 2: VIRTUAL inherited)"
    );
    for which in [ITIMER_PROF, ITIMER_VIRTUAL] {
        let v = getitimer(which).ctx("getitimer")?;
        check_eq!(v.interval, armed.interval, "the parent's timer after the fork");
    }
    Ok(())
}
