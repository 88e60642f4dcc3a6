//! Signals: rt_sigaction and its flags, masks and pending sets,
//! sigsuspend, sigaltstack, the arm64 signal frame (siginfo, ucontext,
//! fpsimd_context) and rt_sigreturn, and the signals the CPU raises.

use core::arch::{asm, global_asm};
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    el0_cache_and_hint_instructions_run,
    sigaction_query_and_replace,
    sigaction_errors_sigkill_sigstop,
    siginfo_kill_tkill_tgkill,
    handler_mask_and_uc_sigmask,
    sigprocmask_block_pending_unblock,
    sigprocmask_errors,
    sigkill_sigstop_cannot_be_blocked,
    sigpending_blocked_ignored_signal,
    default_ignored_signals_do_nothing,
    sigsuspend_waits_and_restores_mask,
    sa_restart_read_continues,
    no_sa_restart_read_eintr,
    sa_resethand,
    sa_nodefer_nests,
    sigaltstack_sa_onstack,
    sigaltstack_errors,
    handler_without_sa_restorer,
    fpsimd_restored_after_handler_clobbers,
    ucontext_edits_apply_after_sigreturn,
    sigreturn_refuses_el1_pstate,
    rt_sigreturn_bad_frame_sigsegv,
    sigchld_to_parent,
    sigpipe_and_epipe,
    sigill_udf_ill_illopc,
    sigtrap_brk_trap_brkpt,
    sigbus_misaligned_pc,
];

/// What the recording handler saw at its last call.
pub struct Record {
    pub hits: AtomicUsize,
    pub signo: AtomicI32,
    pub code: AtomicI32,
    /// si_pid (kill, SIGCHLD) or si_addr (faults): the first union word.
    pub word0: AtomicU64,
    /// The second union word (si_status of SIGCHLD).
    pub word1: AtomicU64,
    pub pc: AtomicU64,
    pub fault_address: AtomicU64,
    pub sp: AtomicU64,
    pub uc_sigmask: AtomicU64,
    /// The signal mask while the handler ran.
    pub mask: AtomicU64,
    /// sigaltstack's flags while the handler ran.
    pub ss_flags: AtomicI32,
    pub depth: AtomicUsize,
    pub max_depth: AtomicUsize,
}

pub static REC: Record = Record {
    hits: AtomicUsize::new(0),
    signo: AtomicI32::new(0),
    code: AtomicI32::new(0),
    word0: AtomicU64::new(0),
    word1: AtomicU64::new(0),
    pc: AtomicU64::new(0),
    fault_address: AtomicU64::new(0),
    sp: AtomicU64::new(0),
    uc_sigmask: AtomicU64::new(0),
    mask: AtomicU64::new(0),
    ss_flags: AtomicI32::new(0),
    depth: AtomicUsize::new(0),
    max_depth: AtomicUsize::new(0),
};

/// What the recording handler does before it returns.
pub static FIXUP: AtomicU32 = AtomicU32::new(FIX_NONE);
pub const FIX_NONE: u32 = 0;
/// Skip the faulting instruction: pc += 4.
pub const FIX_SKIP: u32 = 1;
/// Return to the link register: pc = x30.
pub const FIX_RETURN: u32 = 2;
/// Make the faulting page read-write.
pub const FIX_MPROTECT: u32 = 3;
/// Map a fresh page at the faulting address.
pub const FIX_MAP: u32 = 4;
/// Raise the same signal again from inside the handler (first call only).
pub const FIX_RAISE_AGAIN: u32 = 5;

/// The handler most checks use: records what it was given.
pub extern "C" fn record(sig: i32, info: *mut SigInfo, uc: *mut UContext) {
    let depth = REC.depth.fetch_add(1, SeqCst) + 1;
    REC.max_depth.fetch_max(depth, SeqCst);
    let sp: u64;
    // SAFETY: reads sp.
    unsafe { asm!("mov {}, sp", out(reg) sp) };
    REC.sp.store(sp, SeqCst);
    // SAFETY: the kernel passes a valid siginfo and ucontext (SA_SIGINFO).
    let (info, uc) = unsafe { (&*info, &mut *uc) };
    REC.signo.store(info.signo, SeqCst);
    REC.code.store(info.code, SeqCst);
    REC.word0.store(info.fields[0], SeqCst);
    REC.word1.store(info.fields[1], SeqCst);
    REC.pc.store(uc.pc, SeqCst);
    REC.fault_address.store(uc.fault_address, SeqCst);
    REC.uc_sigmask.store(uc.sigmask, SeqCst);
    REC.mask.store(sigprocmask(SIG_BLOCK, None).unwrap_or(u64::MAX), SeqCst);
    REC.ss_flags.store(sigaltstack(None).map_or(-1, |s| s.flags), SeqCst);
    let first = REC.hits.fetch_add(1, SeqCst) == 0;
    match FIXUP.load(SeqCst) {
        FIX_SKIP => uc.pc += 4,
        FIX_RETURN => uc.pc = uc.regs[30],
        FIX_MPROTECT => {
            let _ = mprotect(info.addr() as usize & !(PAGE - 1), PAGE, PROT_READ | PROT_WRITE);
        }
        FIX_MAP => {
            let page = info.addr() as usize & !(PAGE - 1);
            let _ = call(
                nr::MMAP,
                &[
                    page,
                    PAGE,
                    PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                    usize::MAX,
                    0,
                ],
            );
        }
        FIX_RAISE_AGAIN if first => {
            let _ = kill(getpid(), sig);
        }
        _ => {}
    }
    REC.depth.fetch_sub(1, SeqCst);
}

pub fn hits() -> usize {
    REC.hits.load(SeqCst)
}

fn sigaction_query_and_replace() -> Outcome {
    check_eq!(
        rt_sigaction(SIGUSR1, None),
        Ok(SigAction::default()),
        "initial SIGUSR1 action"
    );
    let old = handle(
        SIGUSR1,
        record,
        SA_RESTART,
        sigbit(SIGUSR2) | sigbit(SIGKILL) | sigbit(SIGSTOP),
    )
    .ctx("install")?;
    check_eq!(old, SigAction::default(), "old action returned when installing");
    let now = rt_sigaction(SIGUSR1, None).ctx("query")?;
    check_eq!(now.handler, record as *const () as usize, "handler");
    check_eq!(now.flags, SA_SIGINFO | SA_RESTORER | SA_RESTART, "flags");
    check_eq!(now.mask, sigbit(SIGUSR2), "sa_mask (SIGKILL and SIGSTOP dropped)");
    let old = disposition(SIGUSR1, SIG_IGN).ctx("ignore")?;
    check_eq!(
        old.handler,
        record as *const () as usize,
        "old handler returned when replacing"
    );
    check_eq!(
        rt_sigaction(SIGUSR1, None).map(|a| a.handler),
        Ok(SIG_IGN),
        "SIG_IGN now"
    );
    check_eq!(
        rt_sigaction(SIGKILL, None).map(|a| a.handler),
        Ok(SIG_DFL),
        "querying SIGKILL is allowed"
    );
    check_eq!(
        rt_sigaction(64, None).map(|a| a.handler),
        Ok(SIG_DFL),
        "signal 64 exists"
    );
    Ok(())
}

fn sigaction_errors_sigkill_sigstop() -> Outcome {
    for sig in [SIGKILL, SIGSTOP] {
        check_eq!(
            handle(sig, record, 0, 0).map(drop),
            Err(Errno::EINVAL),
            "handler for signal {sig}"
        );
        check_eq!(
            disposition(sig, SIG_IGN).map(drop),
            Err(Errno::EINVAL),
            "SIG_IGN for signal {sig}"
        );
        check_eq!(
            disposition(sig, SIG_DFL).map(drop),
            Err(Errno::EINVAL),
            "even SIG_DFL for signal {sig}"
        );
    }
    for sig in [0, 65, -1] {
        check_eq!(rt_sigaction(sig, None).map(drop), Err(Errno::EINVAL), "signal {sig}");
    }
    let act = SigAction::default();
    let mut old = SigAction::default();
    // SAFETY: act and old are live; sigsetsize 4 is wrong on purpose.
    let r = unsafe {
        raw(
            nr::RT_SIGACTION,
            &[
                SIGUSR1 as usize,
                &act as *const SigAction as usize,
                &mut old as *mut SigAction as usize,
                4,
            ],
        )
    };
    check_eq!(r, Err(Errno::EINVAL), "sigsetsize 4");
    // SAFETY: the act pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::RT_SIGACTION, &[SIGUSR1 as usize, BAD_LOW, 0, 8]) };
    check_eq!(r, Err(Errno::EFAULT), "act at 0x1");
    // SAFETY: the oldact pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::RT_SIGACTION, &[SIGUSR1 as usize, 0, BAD_KERNEL, 8]) };
    check_eq!(r, Err(Errno::EFAULT), "oldact in the kernel half");
    Ok(())
}

fn siginfo_kill_tkill_tgkill() -> Outcome {
    handle(SIGUSR1, record, 0, 0).ctx("install")?;
    let me = getpid();
    let uid = call(nr::GETUID, &[]).unwrap_or(0) as u64;
    kill(me, SIGUSR1).ctx("kill")?;
    check_eq!(hits(), 1, "handler calls after kill");
    check_eq!(
        (REC.signo.load(SeqCst), REC.code.load(SeqCst), REC.word0.load(SeqCst)),
        (SIGUSR1, SI_USER, (uid << 32) | me as u32 as u64),
        "(si_signo, si_code, si_pid | si_uid << 32) from kill"
    );
    call(nr::TKILL, &[gettid() as usize, SIGUSR1 as usize]).ctx("tkill")?;
    check_eq!(hits(), 2, "handler calls after tkill");
    check_eq!(
        (REC.code.load(SeqCst), REC.word0.load(SeqCst) as u32 as i32),
        (SI_TKILL, me),
        "(si_code, si_pid) from tkill"
    );
    tgkill(me, gettid(), SIGUSR1).ctx("tgkill")?;
    check_eq!(hits(), 3, "handler calls after tgkill");
    check_eq!(
        (REC.code.load(SeqCst), REC.word0.load(SeqCst) as u32 as i32),
        (SI_TKILL, me),
        "(si_code, si_pid) from tgkill"
    );
    Ok(())
}

fn handler_mask_and_uc_sigmask() -> Outcome {
    handle(SIGUSR1, record, 0, sigbit(SIGUSR2)).ctx("install")?;
    sigprocmask(SIG_SETMASK, Some(sigbit(SIGHUP))).ctx("block SIGHUP")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(hits(), 1, "handler calls");
    check_eq!(
        REC.mask.load(SeqCst),
        sigbit(SIGHUP) | sigbit(SIGUSR1) | sigbit(SIGUSR2),
        "mask inside the handler: old mask + the signal + sa_mask"
    );
    check_eq!(
        REC.uc_sigmask.load(SeqCst),
        sigbit(SIGHUP),
        "uc_sigmask is the interrupted mask"
    );
    check_eq!(
        sigprocmask(SIG_BLOCK, None),
        Ok(sigbit(SIGHUP)),
        "mask restored by rt_sigreturn"
    );
    Ok(())
}

fn sigprocmask_block_pending_unblock() -> Outcome {
    handle(SIGUSR1, record, 0, 0).ctx("install")?;
    check_eq!(
        sigprocmask(SIG_BLOCK, Some(sigbit(SIGUSR1))),
        Ok(0),
        "SIG_BLOCK returns the old (empty) mask"
    );
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(hits(), 0, "a blocked signal is not delivered");
    check_eq!(sigpending(), Ok(sigbit(SIGUSR1)), "it is pending");
    kill(getpid(), SIGUSR1).ctx("kill again")?;
    check_eq!(
        sigprocmask(SIG_BLOCK, Some(sigbit(SIGUSR2))),
        Ok(sigbit(SIGUSR1)),
        "SIG_BLOCK adds"
    );
    check_eq!(
        sigprocmask(SIG_UNBLOCK, Some(sigbit(SIGUSR1))),
        Ok(sigbit(SIGUSR1) | sigbit(SIGUSR2)),
        "SIG_UNBLOCK"
    );
    check_eq!(
        hits(),
        1,
        "delivered once (standard signals do not queue) on unblocking"
    );
    check_eq!(sigpending(), Ok(0), "nothing pending");
    check_eq!(
        sigprocmask(SIG_SETMASK, Some(sigbit(SIGHUP))),
        Ok(sigbit(SIGUSR2)),
        "SIG_SETMASK"
    );
    check_eq!(sigprocmask(SIG_BLOCK, None), Ok(sigbit(SIGHUP)), "query");
    Ok(())
}

fn sigprocmask_errors() -> Outcome {
    let set = 0u64;
    check_eq!(
        call(nr::RT_SIGPROCMASK, &[5, 0, 0, 8]),
        Ok(0),
        "how 5 with no set is only a query"
    );
    // SAFETY: set is a live sigset.
    let r = unsafe { raw(nr::RT_SIGPROCMASK, &[5, &set as *const u64 as usize, 0, 8]) };
    check_eq!(r, Err(Errno::EINVAL), "how 5");
    // SAFETY: set is live; sigsetsize 4 is wrong on purpose.
    let r = unsafe { raw(nr::RT_SIGPROCMASK, &[SIG_BLOCK, &set as *const u64 as usize, 0, 4]) };
    check_eq!(r, Err(Errno::EINVAL), "sigsetsize 4");
    // SAFETY: the set pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::RT_SIGPROCMASK, &[SIG_BLOCK, BAD_LOW, 0, 8]) };
    check_eq!(r, Err(Errno::EFAULT), "set at 0x1");
    // SAFETY: the oldset pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::RT_SIGPROCMASK, &[SIG_BLOCK, 0, BAD_KERNEL, 8]) };
    check_eq!(r, Err(Errno::EFAULT), "oldset in the kernel half");
    // SAFETY: the set pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::RT_SIGPENDING, &[BAD_LOW, 8]) };
    check_eq!(r, Err(Errno::EFAULT), "rt_sigpending into 0x1");
    let mut p = 0u64;
    // SAFETY: p is live; sigsetsize 16 is wrong on purpose.
    let r = unsafe { raw(nr::RT_SIGPENDING, &[&mut p as *mut u64 as usize, 16]) };
    check_eq!(r, Err(Errno::EINVAL), "rt_sigpending sigsetsize 16");
    Ok(())
}

fn sigkill_sigstop_cannot_be_blocked() -> Outcome {
    sigprocmask(SIG_SETMASK, Some(u64::MAX)).ctx("block everything")?;
    check_eq!(
        sigprocmask(SIG_BLOCK, None),
        Ok(!(sigbit(SIGKILL) | sigbit(SIGSTOP))),
        "mask after blocking all: SIGKILL and SIGSTOP silently left out"
    );
    let pid = spawn(|| {
        let _ = sigprocmask(SIG_SETMASK, Some(u64::MAX));
        let _ = kill(getpid(), SIGSTOP);
        let _ = kill(getpid(), SIGKILL);
        1
    })
    .ctx("fork")?;
    check_eq!(
        wait4(pid, WUNTRACED),
        Ok((pid, (SIGSTOP << 8) | 0x7f)),
        "SIGSTOP stops a child that blocks everything"
    );
    kill(pid, SIGCONT).ctx("SIGCONT")?;
    check_eq!(wait4(pid, 0), Ok((pid, SIGKILL)), "then SIGKILL kills it");
    Ok(())
}

fn sigpending_blocked_ignored_signal() -> Outcome {
    disposition(SIGUSR1, SIG_IGN).ctx("ignore")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(sigpending(), Ok(0), "an ignored, unblocked signal is discarded");
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGUSR1))).ctx("block")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(
        sigpending(),
        Ok(sigbit(SIGUSR1)),
        "an ignored but blocked signal stays pending"
    );
    disposition(SIGUSR1, SIG_IGN).ctx("ignore again")?;
    check_eq!(sigpending(), Ok(0), "setting SIG_IGN discards the pending signal");
    handle(SIGUSR1, record, 0, 0).ctx("install")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    disposition(SIGUSR1, SIG_IGN).ctx("ignore while pending")?;
    sigprocmask(SIG_UNBLOCK, Some(sigbit(SIGUSR1))).ctx("unblock")?;
    check_eq!(hits(), 0, "a signal discarded by SIG_IGN never reaches a handler");
    Ok(())
}

fn default_ignored_signals_do_nothing() -> Outcome {
    // SIGCHLD, SIGCONT, SIGURG and SIGWINCH are ignored by default.
    for sig in [SIGCHLD, SIGCONT, 23, 28] {
        check_eq!(kill(getpid(), sig), Ok(0), "kill(self, {sig})");
    }
    check_eq!(sigpending(), Ok(0), "nothing pending");
    Ok(())
}

fn sigsuspend_waits_and_restores_mask() -> Outcome {
    handle(SIGALRM, record, 0, 0).ctx("install")?;
    sigprocmask(SIG_SETMASK, Some(sigbit(SIGALRM) | sigbit(SIGHUP))).ctx("block")?;
    alarm_ms(20).ctx("setitimer")?;
    let t0 = now_ns();
    check_eq!(sigsuspend(sigbit(SIGHUP)), Errno::EINTR, "rt_sigsuspend result");
    let took = now_ns() - t0;
    check_eq!(hits(), 1, "the handler ran");
    check_eq!(REC.signo.load(SeqCst), SIGALRM, "signal");
    check_eq!(REC.code.load(SeqCst), SI_KERNEL, "si_code of an ITIMER_REAL expiry");
    // The frame saves the mask from before sigsuspend, so that
    // rt_sigreturn restores it.
    check_eq!(
        REC.uc_sigmask.load(SeqCst),
        sigbit(SIGALRM) | sigbit(SIGHUP),
        "uc_sigmask is the mask before sigsuspend"
    );
    check_eq!(
        REC.mask.load(SeqCst),
        sigbit(SIGHUP) | sigbit(SIGALRM),
        "mask inside the handler"
    );
    check_eq!(
        sigprocmask(SIG_BLOCK, None),
        Ok(sigbit(SIGALRM) | sigbit(SIGHUP)),
        "mask restored after sigsuspend"
    );
    // It must have waited for the timer, not returned at once. The bound
    // is loose: under a loaded host, real Linux in QEMU once measured only
    // 10 ms of its own monotonic clock for this 20 ms timer.
    ensure!(
        took >= 5_000_000,
        "sigsuspend returned after {took} ns, long before the 20 ms timer"
    );
    // SAFETY: the mask pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::RT_SIGSUSPEND, &[BAD_LOW, 8]) };
    check_eq!(r, Err(Errno::EFAULT), "mask at 0x1");
    let m = 0u64;
    // SAFETY: m is live; sigsetsize 4 is wrong on purpose.
    let r = unsafe { raw(nr::RT_SIGSUSPEND, &[&m as *const u64 as usize, 4]) };
    check_eq!(r, Err(Errno::EINVAL), "sigsetsize 4");
    Ok(())
}

/// Forks a child that sends SIGUSR1 to this process after `signal_ms`,
/// then writes "x" into `w` after `write_ms` more.
fn signal_then_write(w: i32, signal_ms: i64, write_ms: i64) -> Result<i32, Errno> {
    let parent = getpid();
    spawn(move || {
        sleep_ms(signal_ms);
        let _ = kill(parent, SIGUSR1);
        sleep_ms(write_ms);
        let _ = write(w, b"x");
        0
    })
}

fn sa_restart_read_continues() -> Outcome {
    handle(SIGUSR1, record, SA_RESTART, 0).ctx("install")?;
    let [r, w] = pipe().ctx("pipe")?;
    let pid = signal_then_write(w, 50, 50).ctx("fork")?;
    let mut b = [0u8; 4];
    let got = read(r, &mut b);
    check_eq!(hits(), 1, "the handler ran");
    check_eq!(
        got,
        Ok(1),
        "the restarted read returns the data written after the signal"
    );
    check_eq!(b[0], b'x', "data");
    check_eq!(wait_status(pid), Ok(0), "child");
    Ok(())
}

fn no_sa_restart_read_eintr() -> Outcome {
    handle(SIGUSR1, record, 0, 0).ctx("install")?;
    let [r, w] = pipe().ctx("pipe")?;
    let pid = signal_then_write(w, 50, 300).ctx("fork")?;
    let mut b = [0u8; 4];
    let got = read(r, &mut b);
    check_eq!(hits(), 1, "the handler ran");
    check_eq!(
        got,
        Err(Errno::EINTR),
        "read interrupted by a handler without SA_RESTART"
    );
    check_eq!(read(r, &mut b), Ok(1), "the data still arrives later");
    check_eq!(wait_status(pid), Ok(0), "child");
    Ok(())
}

fn sa_resethand() -> Outcome {
    let pid = spawn(|| {
        if handle(SIGUSR1, record, SA_RESETHAND, 0).is_err() {
            return 1;
        }
        let _ = kill(getpid(), SIGUSR1);
        if hits() != 1 {
            return 2;
        }
        match rt_sigaction(SIGUSR1, None) {
            Ok(a) if a.handler == SIG_DFL => {}
            _ => return 3,
        }
        // The default action now: termination.
        let _ = kill(getpid(), SIGUSR1);
        4
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(SIGUSR1),
        "first signal handled, handler reset to SIG_DFL (1-3 << 8), second kills"
    );
    Ok(())
}

fn sa_nodefer_nests() -> Outcome {
    FIXUP.store(FIX_RAISE_AGAIN, SeqCst);
    handle(SIGUSR1, record, 0, 0).ctx("install")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(
        (hits(), REC.max_depth.load(SeqCst)),
        (2, 1),
        "without SA_NODEFER: (calls, deepest nesting)"
    );
    REC.hits.store(0, SeqCst);
    REC.max_depth.store(0, SeqCst);
    handle(SIGUSR1, record, SA_NODEFER, 0).ctx("install SA_NODEFER")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(
        (hits(), REC.max_depth.load(SeqCst)),
        (2, 2),
        "with SA_NODEFER: (calls, deepest nesting)"
    );
    Ok(())
}

fn sigaltstack_sa_onstack() -> Outcome {
    let size = 64 * 1024;
    let base = mmap_anon(size, PROT_READ | PROT_WRITE).ctx("mmap")?;
    check_eq!(
        sigaltstack(None).map(|s| s.flags),
        Ok(SS_DISABLE),
        "no alternate stack at first"
    );
    let old = sigaltstack(Some(&Stack {
        sp: base,
        flags: 0,
        size,
    }))
    .ctx("sigaltstack")?;
    check_eq!(old.flags, SS_DISABLE, "old flags");
    check_eq!(
        sigaltstack(None),
        Ok(Stack {
            sp: base,
            flags: 0,
            size
        }),
        "query"
    );
    handle(SIGUSR1, record, SA_ONSTACK, 0).ctx("install SA_ONSTACK")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(hits(), 1, "handler ran");
    let sp = REC.sp.load(SeqCst) as usize;
    ensure!(
        sp > base && sp < base + size,
        "handler sp {sp:#x} outside the alternate stack {base:#x}+{size:#x}"
    );
    check_eq!(
        REC.ss_flags.load(SeqCst),
        SS_ONSTACK,
        "sigaltstack flags inside the handler"
    );
    check_eq!(sigaltstack(None).map(|s| s.flags), Ok(0), "flags after the handler");
    handle(SIGUSR1, record, 0, 0).ctx("install without SA_ONSTACK")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    let sp = REC.sp.load(SeqCst) as usize;
    ensure!(
        !(sp > base && sp < base + size),
        "handler without SA_ONSTACK ran on the alternate stack"
    );
    check_eq!(
        REC.ss_flags.load(SeqCst),
        0,
        "flags inside a handler on the normal stack"
    );
    let old = sigaltstack(Some(&Stack {
        sp: 0,
        flags: SS_DISABLE,
        size: 0,
    }))
    .ctx("disable")?;
    check_eq!(
        old,
        Stack {
            sp: base,
            flags: 0,
            size
        },
        "old stack returned when disabling"
    );
    check_eq!(sigaltstack(None).map(|s| s.flags), Ok(SS_DISABLE), "disabled");
    Ok(())
}

static ALT_CHANGE: AtomicU64 = AtomicU64::new(0);

extern "C" fn change_altstack(_: i32, _: *mut SigInfo, _: *mut UContext) {
    let r = sigaltstack(Some(&Stack {
        sp: 0,
        flags: SS_DISABLE,
        size: 0,
    }));
    ALT_CHANGE.store(r.map_or_else(|e| e.0 as u64, |_| 0), SeqCst);
}

fn sigaltstack_errors() -> Outcome {
    let base = mmap_anon(16 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    check_eq!(
        sigaltstack(Some(&Stack {
            sp: base,
            flags: 0,
            size: 1024
        }))
        .map(drop),
        Err(Errno::ENOMEM),
        "size below MINSIGSTKSZ"
    );
    check_eq!(
        sigaltstack(Some(&Stack {
            sp: base,
            flags: 0x10,
            size: 16 * PAGE
        }))
        .map(drop),
        Err(Errno::EINVAL),
        "flags 0x10"
    );
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(nr::SIGALTSTACK, &[BAD_LOW, 0]) },
        Err(Errno::EFAULT),
        "new stack_t at 0x1"
    );
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(nr::SIGALTSTACK, &[0, BAD_KERNEL]) },
        Err(Errno::EFAULT),
        "old stack_t in the kernel half"
    );
    sigaltstack(Some(&Stack {
        sp: base,
        flags: 0,
        size: 16 * PAGE,
    }))
    .ctx("sigaltstack")?;
    handle(SIGUSR1, change_altstack, SA_ONSTACK, 0).ctx("install")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(
        ALT_CHANGE.load(SeqCst),
        Errno::EPERM.0 as u64,
        "changing the stack while on it"
    );
    Ok(())
}

fn handler_without_sa_restorer() -> Outcome {
    handle_no_restorer(SIGUSR1, record, 0).ctx("install without SA_RESTORER")?;
    check_eq!(
        rt_sigaction(SIGUSR1, None).map(|a| a.flags & SA_RESTORER),
        Ok(0),
        "no SA_RESTORER recorded"
    );
    sigprocmask(SIG_SETMASK, Some(sigbit(SIGHUP))).ctx("block SIGHUP")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(hits(), 1, "handler ran and returned");
    check_eq!(
        sigprocmask(SIG_BLOCK, None),
        Ok(sigbit(SIGHUP)),
        "mask restored by the kernel's sigreturn path"
    );
    kill(getpid(), SIGUSR1).ctx("kill again")?;
    check_eq!(hits(), 2, "a second time");
    Ok(())
}

global_asm!(
    ".section .text.usertests_clobber_fp,\"ax\",@progbits",
    ".global usertests_clobber_fp",
    ".type usertests_clobber_fp,@function",
    // A handler that changes v8, v20 (all 128 bits), x9 and x19, and
    // restores none of them: only rt_sigreturn can bring them back.
    "usertests_clobber_fp:",
    "    movi v8.16b, #0x55",
    "    movi v20.16b, #0x66",
    "    mov x9, #0x77",
    "    mov x19, #0x88",
    "    ret",
    ".size usertests_clobber_fp, . - usertests_clobber_fp",
);

unsafe extern "C" {
    fn usertests_clobber_fp(sig: i32, info: *mut SigInfo, uc: *mut UContext);
}

/// Registers the signal frame carries, as the interrupted code sees them
/// after the handler.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Regs {
    v8: u128,
    v20: u128,
    x9: u64,
    x19: u64,
}

/// Loads `v8`, `v20`, `x9`, `x19`, sends SIGUSR1 to this process with a
/// `kill` in the same asm block (the handler runs on its return), and
/// reads them back.
fn regs_across_signal(before: Regs) -> Regs {
    let pid = getpid();
    let mut after_v = [0u128; 2];
    let before_v = [before.v8, before.v20];
    let (x9, x19): (u64, u64);
    // SAFETY: reads before_v and writes after_v, both live; every
    // register changed is declared; x19 is saved and restored around.
    unsafe {
        asm!(
            "stp x19, xzr, [sp, #-16]!",
            "mov x19, {x19in}",
            "ldr q8, [{bv}]",
            "ldr q20, [{bv}, #16]",
            "svc #0",
            "str q8, [{av}]",
            "str q20, [{av}, #16]",
            "mov {x19out}, x19",
            "ldp x19, xzr, [sp], #16",
            bv = in(reg) before_v.as_ptr(),
            av = in(reg) after_v.as_mut_ptr(),
            x19in = in(reg) before.x19,
            x19out = lateout(reg) x19,
            inlateout("x9") before.x9 => x9,
            in("x8") nr::KILL,
            inlateout("x0") pid as usize => _,
            in("x1") SIGUSR1 as usize,
            out("v8") _,
            out("v20") _,
        )
    };
    Regs {
        v8: after_v[0],
        v20: after_v[1],
        x9,
        x19,
    }
}

const PATTERN: Regs = Regs {
    v8: 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
    v20: 0xdead_beef_0bad_f00d_cafe_babe_1234_5678,
    x9: 0x1111_2222_3333_4444,
    x19: 0x5555_6666_7777_8888,
};

fn fpsimd_restored_after_handler_clobbers() -> Outcome {
    // SAFETY: usertests_clobber_fp has the handler's signature.
    let h: Handler = unsafe {
        core::mem::transmute::<unsafe extern "C" fn(i32, *mut SigInfo, *mut UContext), Handler>(usertests_clobber_fp)
    };
    handle(SIGUSR1, h, 0, 0).ctx("install with SA_RESTORER")?;
    check_eq!(
        regs_across_signal(PATTERN),
        PATTERN,
        "registers after a clobbering handler (SA_RESTORER)"
    );
    handle_no_restorer(SIGUSR1, h, 0).ctx("install without SA_RESTORER")?;
    check_eq!(
        regs_across_signal(PATTERN),
        PATTERN,
        "registers after a clobbering handler (kernel's sigreturn path)"
    );
    Ok(())
}

static SAVED_V8: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static SAVED_X9: AtomicU64 = AtomicU64::new(0);
static FOUND_FPSIMD: AtomicU32 = AtomicU32::new(0);

const NEW: Regs = Regs {
    v8: 0xa5a5_a5a5_0000_ffff_5a5a_5a5a_ffff_0000,
    v20: 0x0f0f_0f0f_f0f0_f0f0_1357_9bdf_2468_ace0,
    x9: 0x9999_aaaa_bbbb_cccc,
    x19: 0xdddd_eeee_ffff_0000,
};

extern "C" fn edit_ucontext(_: i32, _: *mut SigInfo, uc: *mut UContext) {
    // SAFETY: the kernel passes the frame's ucontext.
    let uc = unsafe { &mut *uc };
    SAVED_X9.store(uc.regs[9], SeqCst);
    uc.regs[9] = NEW.x9;
    uc.regs[19] = NEW.x19;
    // SAFETY: uc is the ucontext of this handler's frame.
    if let Some(fp) = unsafe { uc.fpsimd() } {
        FOUND_FPSIMD.store(fp.size, SeqCst);
        SAVED_V8[0].store(fp.vregs[8] as u64, SeqCst);
        SAVED_V8[1].store((fp.vregs[8] >> 64) as u64, SeqCst);
        fp.vregs[8] = NEW.v8;
        fp.vregs[20] = NEW.v20;
    }
}

fn ucontext_edits_apply_after_sigreturn() -> Outcome {
    handle(SIGUSR1, edit_ucontext, 0, 0).ctx("install")?;
    let after = regs_across_signal(PATTERN);
    check_eq!(
        FOUND_FPSIMD.load(SeqCst),
        528,
        "size of the fpsimd_context record found in __reserved"
    );
    let saved = SAVED_V8[0].load(SeqCst) as u128 | ((SAVED_V8[1].load(SeqCst) as u128) << 64);
    check_eq!(saved, PATTERN.v8, "v8 as saved in fpsimd_context.vregs[8]");
    check_eq!(SAVED_X9.load(SeqCst), PATTERN.x9, "x9 as saved in uc_mcontext.regs[9]");
    check_eq!(after, NEW, "registers after rt_sigreturn of the edited frame");
    Ok(())
}

extern "C" fn set_el1_pstate(_: i32, _: *mut SigInfo, uc: *mut UContext) {
    // SAFETY: the kernel passes the frame's ucontext.
    let uc = unsafe { &mut *uc };
    // EL1h with interrupts masked: what a handler must never get.
    uc.pstate = 0x3c5;
}

fn sigreturn_refuses_el1_pstate() -> Outcome {
    let pid = spawn(|| {
        if handle(SIGUSR1, set_el1_pstate, 0, 0).is_err() {
            return 1;
        }
        let _ = kill(getpid(), SIGUSR1);
        2
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(SIGSEGV),
        "a frame asking for EL1 makes rt_sigreturn kill with SIGSEGV"
    );
    Ok(())
}

fn rt_sigreturn_bad_frame_sigsegv() -> Outcome {
    let frame = mmap_anon(4 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    let pid = spawn(move || {
        // SAFETY: rt_sigreturn on a zeroed frame (no fpsimd record) never
        // returns: the kernel kills the process.
        unsafe {
            asm!(
                "mov sp, {f}",
                "mov x8, #139",
                "svc #0",
                f = in(reg) frame + PAGE,
                options(noreturn)
            )
        }
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(SIGSEGV),
        "rt_sigreturn outside a handler, on a zeroed frame"
    );
    Ok(())
}

fn sigchld_to_parent() -> Outcome {
    handle(SIGCHLD, record, 0, 0).ctx("install")?;
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGCHLD))).ctx("block")?;
    let pid = spawn(|| 3).ctx("fork")?;
    check_eq!(sigsuspend(0), Errno::EINTR, "sigsuspend until SIGCHLD");
    check_eq!(
        (
            REC.signo.load(SeqCst),
            REC.code.load(SeqCst),
            REC.word0.load(SeqCst) as u32 as i32,
            REC.word1.load(SeqCst) as u32 as i32
        ),
        (SIGCHLD, CLD_EXITED, pid, 3),
        "(si_signo, si_code, si_pid, si_status)"
    );
    check_eq!(wait4(pid, 0), Ok((pid, 3 << 8)), "wait4");
    Ok(())
}

fn sigpipe_and_epipe() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    close(r);
    disposition(SIGPIPE, SIG_IGN).ctx("ignore SIGPIPE")?;
    check_eq!(
        write(w, b"x"),
        Err(Errno::EPIPE),
        "write without readers, SIGPIPE ignored"
    );
    handle(SIGPIPE, record, 0, 0).ctx("handle SIGPIPE")?;
    check_eq!(
        write(w, b"x"),
        Err(Errno::EPIPE),
        "write without readers, SIGPIPE handled"
    );
    check_eq!(
        (hits(), REC.signo.load(SeqCst)),
        (1, SIGPIPE),
        "(handler calls, signal)"
    );
    check_eq!(REC.code.load(SeqCst), SI_USER, "si_code of SIGPIPE");
    check_eq!(
        REC.word0.load(SeqCst) as u32 as i32,
        getpid(),
        "si_pid of SIGPIPE is the writer"
    );
    let pid = spawn(move || {
        let _ = disposition(SIGPIPE, SIG_DFL);
        let _ = write(w, b"x");
        1
    })
    .ctx("fork")?;
    check_eq!(wait_status(pid), Ok(SIGPIPE), "default action: killed by SIGPIPE");
    Ok(())
}

fn sigill_udf_ill_illopc() -> Outcome {
    FIXUP.store(FIX_SKIP, SeqCst);
    handle(SIGILL, record, 0, 0).ctx("install")?;
    let at: u64;
    // SAFETY: the udf raises SIGILL; the handler skips it.
    unsafe { asm!("adr {a}, 1f", "1: .inst 0x00000000", a = out(reg) at) };
    one_fault_recorded((SIGILL, ILL_ILLOPC, at, at))?;
    let pid = spawn(|| {
        let _ = disposition(SIGILL, SIG_DFL);
        // SAFETY: kills this child with SIGILL.
        unsafe { asm!("udf #0") };
        1
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid).map(|s| s & 0x7f),
        Ok(SIGILL),
        "default action kills with SIGILL"
    );
    Ok(())
}

fn sigtrap_brk_trap_brkpt() -> Outcome {
    FIXUP.store(FIX_SKIP, SeqCst);
    handle(SIGTRAP, record, 0, 0).ctx("install")?;
    let at: u64;
    // SAFETY: the brk raises SIGTRAP; the handler skips it.
    unsafe { asm!("adr {a}, 1f", "1: brk #0", a = out(reg) at) };
    one_fault_recorded((SIGTRAP, TRAP_BRKPT, at, at))?;
    Ok(())
}

fn sigbus_misaligned_pc() -> Outcome {
    FIXUP.store(FIX_RETURN, SeqCst);
    handle(SIGBUS, record, 0, 0).ctx("install")?;
    let target: u64;
    // SAFETY: the branch to a misaligned address raises SIGBUS at that
    // address; the handler resumes at x30, the label after the branch.
    unsafe {
        asm!(
            "adr {t}, 2f",
            "add {t}, {t}, #2",
            "adr x30, 2f",
            "br {t}",
            "2:",
            t = out(reg) target,
            out("x30") _,
        )
    };
    one_fault_recorded((SIGBUS, BUS_ADRALN, target, target))?;
    Ok(())
}

/// The handler ran once, for the fault we expect: `(si_signo, si_code,
/// si_addr, pc in the ucontext)`.
fn one_fault_recorded(want: (i32, i32, u64, u64)) -> Outcome {
    check_eq!(hits(), 1, "handler calls");
    check_eq!(
        (
            REC.signo.load(SeqCst),
            REC.code.load(SeqCst),
            REC.word0.load(SeqCst),
            REC.pc.load(SeqCst)
        ),
        want,
        "(si_signo, si_code, si_addr, uc pc)"
    );
    Ok(())
}

/// What Linux lets EL0 do without a signal: read CTR_EL0, clean and
/// invalidate caches by VA (as `__clear_cache` does), and WFI (trapped and
/// skipped by the kernel).
fn el0_cache_and_hint_instructions_run() -> Outcome {
    handle(SIGILL, record, 0, 0).ctx("install")?;
    let ctr: u64;
    let word = [0u64; 8];
    // SAFETY: reads a register, maintains caches for our own stack line,
    // and waits for nothing; none of it changes memory.
    unsafe {
        asm!(
            "mrs {c}, ctr_el0",
            "dc cvau, {p}",
            "dsb ish",
            "ic ivau, {p}",
            "dsb ish",
            "isb",
            "wfi",
            c = out(reg) ctr,
            p = in(reg) word.as_ptr(),
        )
    };
    check_eq!(hits(), 0, "signals raised");
    // CTR_EL0 bit 31 is RES1 and IminLine (bits 3:0) is at least 16 bytes.
    ensure!(ctr >> 31 & 1 == 1 && ctr & 0xf >= 2, "CTR_EL0 = {ctr:#x}");
    Ok(())
}
