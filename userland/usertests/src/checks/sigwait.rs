//! rt_sigtimedwait: a pending signal of the set is taken (not delivered),
//! the wait ends with EAGAIN at its timeout, and its errors are Linux's.

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    rt_sigtimedwait_takes_a_pending_signal,
    rt_sigtimedwait_times_out_with_eagain,
    rt_sigtimedwait_wakes_for_a_signal_sent_later,
];

const RT_SIGTIMEDWAIT: usize = 137;

fn sigtimedwait(set: u64, info: Option<&mut SigInfo>, timeout: Option<&Timespec>) -> Result<usize, Errno> {
    let info = info.map_or(0, |i| i as *mut SigInfo as usize);
    let ts = timeout.map_or(0, |t| t as *const Timespec as usize);
    call(RT_SIGTIMEDWAIT, &[&set as *const u64 as usize, info, ts, 8])
}

fn rt_sigtimedwait_takes_a_pending_signal() -> Outcome {
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGUSR1))).ctx("block")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    let mut info = SigInfo::zeroed();
    let got = sigtimedwait(
        sigbit(SIGUSR1) | sigbit(SIGUSR2),
        Some(&mut info),
        Some(&Timespec::ms(0)),
    );
    check_eq!(got, Ok(SIGUSR1 as usize), "the pending signal");
    check_eq!(
        (info.signo, info.code, info.pid()),
        (SIGUSR1, SI_USER, getpid()),
        "its siginfo"
    );
    check_eq!(sigpending(), Ok(0), "no longer pending");
    let mask = 0u64;
    check_eq!(
        call(RT_SIGTIMEDWAIT, &[&mask as *const u64 as usize, 0, 0, 4]),
        Err(Errno::EINVAL),
        "sigsetsize 4"
    );
    let bad = Timespec {
        sec: 0,
        nsec: 1_000_000_000,
    };
    check_eq!(
        sigtimedwait(sigbit(SIGUSR1), None, Some(&bad)),
        Err(Errno::EINVAL),
        "bad timespec"
    );
    check_eq!(
        call(RT_SIGTIMEDWAIT, &[BAD_LOW, 0, 0, 8]),
        Err(Errno::EFAULT),
        "bad set pointer"
    );
    Ok(())
}

fn rt_sigtimedwait_times_out_with_eagain() -> Outcome {
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGUSR2))).ctx("block")?;
    let start = now_ns();
    let got = sigtimedwait(sigbit(SIGUSR2), None, Some(&Timespec::ms(50)));
    let took = now_ns() - start;
    check_eq!(got, Err(Errno::EAGAIN), "no signal came");
    ensure!(took >= 50_000_000, "waited only {took} ns");
    check_eq!(
        sigtimedwait(sigbit(SIGUSR2), None, Some(&Timespec::ms(0))),
        Err(Errno::EAGAIN),
        "a zero timeout polls"
    );
    Ok(())
}

fn rt_sigtimedwait_wakes_for_a_signal_sent_later() -> Outcome {
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGUSR1))).ctx("block")?;
    let me = getpid();
    let pid = spawn(|| {
        sleep_ms(30);
        match kill(me, SIGUSR1) {
            Ok(_) => 0,
            Err(_) => 1,
        }
    })
    .ctx("fork")?;
    let got = sigtimedwait(sigbit(SIGUSR1), None, Some(&Timespec::ms(5000)));
    check_eq!(got, Ok(SIGUSR1 as usize), "the signal the child sent");
    check_eq!(wait_status(pid), Ok(0), "child status");
    Ok(())
}
