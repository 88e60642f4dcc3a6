//! Hit counting: `kprobe_profile` counts every hit of an enabled probe,
//! `trace` records one line per hit, a disabled probe is not hit, and
//! `tracing_on 0` stops the recording but not the counting.

use kprobetests::sys::getpid;

use super::{lines_of, location_symbol, profile_of, tracefs};
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    getpid_calls_are_counted_in_kprobe_profile_and_traced,
    disabled_event_counts_no_hits,
    tracing_off_counts_hits_but_records_nothing,
    interval_timer_of_an_exited_process_expires_no_more,
];

const GETPID: &str = "__arm64_sys_getpid";

fn getpid_calls_are_counted_in_kprobe_profile_and_traced() -> Outcome {
    let t = tracefs()?;
    t.define(&alloc::format!("p:kt_getpid {GETPID}")).ctx("define")?;
    let before = profile_of(&t, "kt_getpid")?;
    check_eq!((before.hits, before.misses), (0, 0), "hits, misses of a new event");
    t.enable("kt_getpid", true).ctx("enable")?;
    let me = getpid();
    for _ in 0..137 {
        getpid();
    }
    t.enable("kt_getpid", false).ctx("disable")?;
    let after = profile_of(&t, "kt_getpid")?;
    // 137 calls and the one that read our pid.
    check_eq!(
        (after.hits, after.misses),
        (138, 0),
        "hits, misses after 138 getpid calls"
    );
    let lines = lines_of(&t, "kt_getpid", me)?;
    check_eq!(lines.len(), 138, "trace lines of kt_getpid by this task");
    for l in &lines {
        let loc = l.location().unwrap_or("");
        check_eq!(location_symbol(loc), GETPID, "probe location of {:?}", l.body);
        ensure!(loc.starts_with(&alloc::format!("{GETPID}+0x0/0x")), "location {loc:?}");
        ensure!(l.fields().is_some_and(|f| f.is_empty()), "fields in {:?}", l.body);
    }
    // Only this task's calls hit: nobody else calls getpid meanwhile.
    let all = super::trace(&t)?;
    check_eq!(
        all.iter().filter(|l| l.event == "kt_getpid").count(),
        138,
        "kt_getpid lines in all"
    );
    Ok(())
}

fn disabled_event_counts_no_hits() -> Outcome {
    let t = tracefs()?;
    t.define(&alloc::format!("p:kt_idle {GETPID}")).ctx("define")?;
    for _ in 0..50 {
        getpid();
    }
    let p = profile_of(&t, "kt_idle")?;
    check_eq!((p.hits, p.misses), (0, 0), "hits, misses of a disabled event");
    check_eq!(lines_of(&t, "kt_idle", getpid())?.len(), 0, "lines of a disabled event");
    // Enabled, then disabled again: only the calls in between count.
    t.enable("kt_idle", true).ctx("enable")?;
    for _ in 0..9 {
        getpid();
    }
    t.enable("kt_idle", false).ctx("disable")?;
    for _ in 0..50 {
        getpid();
    }
    check_eq!(profile_of(&t, "kt_idle")?.hits, 9, "hits after 9 calls while enabled");
    Ok(())
}

fn tracing_off_counts_hits_but_records_nothing() -> Outcome {
    let t = tracefs()?;
    t.define(&alloc::format!("p:kt_off {GETPID}")).ctx("define")?;
    t.tracing_on(false).ctx("tracing_on 0")?;
    check_eq!(t.read_text("tracing_on").ctx("read tracing_on")?, "0", "tracing_on");
    t.enable("kt_off", true).ctx("enable")?;
    for _ in 0..25 {
        getpid();
    }
    t.enable("kt_off", false).ctx("disable")?;
    check_eq!(profile_of(&t, "kt_off")?.hits, 25, "hits with tracing off");
    let all = super::trace(&t)?;
    check_eq!(
        all.iter().filter(|l| l.event == "kt_off").count(),
        0,
        "lines recorded with tracing off"
    );
    t.tracing_on(true).ctx("tracing_on 1")?;
    t.enable("kt_off", true).ctx("enable")?;
    for _ in 0..4 {
        getpid();
    }
    t.enable("kt_off", false).ctx("disable")?;
    check_eq!(profile_of(&t, "kt_off")?.hits, 29, "hits after tracing on again");
    check_eq!(
        lines_of(&t, "kt_off", getpid())?.len(),
        4,
        "lines after tracing on again"
    );
    Ok(())
}

/// An interval ITIMER_REAL dies with its process, as Linux's `do_exit`
/// cancels `signal->real_timer`: `it_real_fn` (the expiry, probed) runs
/// while the process lives, and not once while it is a zombie or after
/// it is reaped.
fn interval_timer_of_an_exited_process_expires_no_more() -> Outcome {
    use kprobetests::sys::sleep_ms;
    use rt::process::{exit, fork, signal_disposition, waitpid, Fork, WaitStatus, SIG_IGN};
    use rt::syscall::{check, nr, syscall4, syscall5};
    const SIGALRM: i32 = uapi::signal::SIGALRM as i32;
    const ITIMER_REAL: usize = uapi::time::ITIMER_REAL as usize;
    const P_PID: usize = uapi::wait::P_PID as usize;
    const WEXITED: usize = uapi::wait::WEXITED as usize;
    const WNOWAIT: usize = uapi::wait::WNOWAIT as usize;
    let t = tracefs()?;
    t.define("p:kt_itreal it_real_fn").ctx("define")?;
    t.enable("kt_itreal", true).ctx("enable")?;
    let child = match fork().ctx("fork")? {
        Fork::Child => {
            // Expiries every 5 ms for 40 ms, each SIGALRM ignored.
            let _ = signal_disposition(SIGALRM, SIG_IGN);
            let every: [i64; 4] = [0, 5_000, 0, 5_000];
            // SAFETY: `every` is a readable struct itimerval (interval, value;
            // seconds and microseconds); no old value.
            let armed = check(unsafe { syscall4(nr::SETITIMER, ITIMER_REAL, every.as_ptr() as usize, 0, 0) });
            sleep_ms(40);
            exit(i32::from(armed.is_err()))
        }
        Fork::Parent(pid) => pid,
    };
    // Until the child has exited, leaving it a zombie (WNOWAIT).
    let mut info = [0u64; 16];
    // SAFETY: `info` is a writable siginfo_t; no rusage.
    let waited = check(unsafe {
        syscall5(
            nr::WAITID,
            P_PID,
            child as usize,
            info.as_mut_ptr() as usize,
            WEXITED | WNOWAIT,
            0,
        )
    });
    let alive = profile_of(&t, "kt_itreal")?.hits;
    sleep_ms(100);
    let as_zombie = profile_of(&t, "kt_itreal")?.hits;
    let status = waitpid(child);
    sleep_ms(50);
    let reaped = profile_of(&t, "kt_itreal")?.hits;
    t.enable("kt_itreal", false).ctx("disable")?;
    waited.ctx("waitid WNOWAIT")?;
    check_eq!(
        status.ok(),
        Some(WaitStatus::Exited(0)),
        "the child armed its timer and exited"
    );
    ensure!(alive >= 1, "it_real_fn ran {alive} times while the child lived");
    check_eq!(
        (as_zombie, reaped),
        (alive, alive),
        "it_real_fn hits: while a zombie, after the reap"
    );
    Ok(())
}
