//! Group stops of a multi-threaded process (Linux's do_signal_stop and
//! ptrace_stop): every thread stops, each traced thread reports its own
//! stop to its tracer, and SIGCONT (or the tracer) resumes them. A thread
//! that writes a byte to a pipe every 10 ms shows whether it runs.

use super::*;
use core::sync::atomic::AtomicI32;

/// The write end of the pipe the tracee's thread writes to (set before
/// the fork, read by the child).
static WRITER_FD: AtomicI32 = AtomicI32::new(-1);

/// wait4's WCONTINUED.
const WCONTINUED: u32 = 8;

/// The group stop status of a seized tracee (PTRACE_EVENT_STOP, SIGSTOP).
const SEIZED_GROUP_STOP: i32 = ((SIGSTOP | (0x80 << 8)) << 8) | 0x7f;

/// A process whose second thread writes to the pipe while its first one
/// sleeps; `delay_ms` passes before the thread starts.
fn writer_body(delay_ms: u64) -> i32 {
    sys::sleep_ms(delay_ms);
    if sys::thread_writer(WRITER_FD.load(Ordering::Relaxed)) <= 0 {
        return 50;
    }
    sleeper()
}

/// A non-blocking pipe for the writer thread; its read end.
fn writer_pipe() -> Result<i32, Fail> {
    let [rd, wr] = rt::fs::pipe2(rt::fs::O_NONBLOCK | rt::fs::O_CLOEXEC).ctx("pipe2")?;
    WRITER_FD.store(wr, Ordering::Relaxed);
    Ok(rd)
}

/// How many bytes the thread wrote since the last call.
fn drain(rd: i32) -> usize {
    let mut n = 0;
    let mut buf = [0u8; 256];
    while let Ok(k) = rt::fs::read(rd, &mut buf) {
        if k == 0 {
            break;
        }
        n += k;
    }
    n
}

/// Whether the thread writes within 100 ms (after what it wrote before).
fn thread_runs(rd: i32) -> bool {
    drain(rd);
    sys::sleep_ms(100);
    drain(rd) > 0
}

/// Kills the process and reaps its traced thread, then the leader (whose
/// death is reported only once its traced threads' are collected).
fn kill_and_reap_both(pid: i32, tid: i32) {
    let _ = rt::process::kill(pid, SIGKILL);
    let _ = wait(tid, 0);
    let _ = wait(pid, 0);
}

/// The next two stops reported, which must be `pid`'s and `tid`'s (in
/// either order), both with `status`.
fn expect_both(pid: i32, tid: i32, status: i32, what: &str) -> Outcome {
    let (a, sa) = wait(-1, 0).ctx(what)?;
    let (b, sb) = wait(-1, 0).ctx(what)?;
    check_eq!(
        (a.min(b), a.max(b)),
        (pid.min(tid), pid.max(tid)),
        "{what}: who stopped"
    );
    check_eq!((sa, sb), (status, status), "{what}: wait statuses");
    Ok(())
}

pub(super) fn group_stop_stops_every_thread_before_the_parent_hears_and_sigcont_resumes_them() -> Outcome {
    let rd = writer_pipe()?;
    let pid = spawn(|| writer_body(0))?;
    sys::sleep_ms(50);
    check_eq!(thread_runs(rd), true, "the thread runs");
    rt::process::kill(pid, SIGSTOP).ctx("kill SIGSTOP")?;
    check_eq!(
        wait(pid, sys::WUNTRACED),
        Ok((pid, stopped(SIGSTOP))),
        "the group stop, reported (WUNTRACED)"
    );
    check_eq!(thread_runs(rd), false, "the thread runs in the reported group stop");
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    check_eq!(wait(pid, WCONTINUED), Ok((pid, 0xffff)), "WCONTINUED");
    check_eq!(thread_runs(rd), true, "the thread runs after SIGCONT");
    kill_and_reap(pid);
    Ok(())
}

pub(super) fn group_stop_of_traced_threads_is_reported_by_each_and_ends_as_each_resumes() -> Outcome {
    let rd = writer_pipe()?;
    let pid = spawn_traced(|| writer_body(0))?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE as usize).ctx("SETOPTIONS")?;
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_CLONE), "clone event")?;
    let tid = eventmsg(pid)? as i32;
    expect_wait(tid, stopped(SIGSTOP), "the thread's first stop")?;
    cont(tid, 0)?;
    cont(pid, 0)?;
    check_eq!(thread_runs(rd), true, "the thread runs");
    sys::tgkill(pid, pid, SIGSTOP).ctx("tgkill SIGSTOP")?;
    expect_wait(pid, stopped(SIGSTOP), "the leader's signal-delivery stop")?;
    check_eq!(siginfo(pid)?.signo, SIGSTOP as u32, "its siginfo");
    cont(pid, SIGSTOP)?;
    expect_both(pid, tid, stopped(SIGSTOP), "each thread's group stop")?;
    for t in [pid, tid] {
        expect_err(
            ptrace(PTRACE_GETSIGINFO, t, 0, [0u8; SIGINFO_SIZE].as_mut_ptr() as usize),
            Errno::EINVAL,
            "GETSIGINFO in a group stop without SEIZE",
        )?;
    }
    check_eq!(thread_runs(rd), false, "the thread runs in its group stop");
    check_eq!(wait(-1, sys::WNOHANG), Ok((0, 0)), "no other stop");
    cont(tid, 0)?;
    check_eq!(thread_runs(rd), true, "the thread runs once its tracer resumed it");
    check_eq!(wait(-1, sys::WNOHANG), Ok((0, 0)), "the leader stays stopped");
    kill_and_reap_both(pid, tid);
    Ok(())
}

pub(super) fn group_stop_of_seized_threads_traps_each_and_interrupt_and_sigcont_retrap_them() -> Outcome {
    let rd = writer_pipe()?;
    let pid = spawn(|| writer_body(100))?;
    ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACECLONE as usize).ctx("SEIZE")?;
    expect_wait(pid, event_stop(PTRACE_EVENT_CLONE), "clone event")?;
    let tid = eventmsg(pid)? as i32;
    cont(pid, 0)?;
    expect_wait(tid, event_stop(PTRACE_EVENT_STOP), "the new thread's first trap")?;
    cont(tid, 0)?;
    check_eq!(thread_runs(rd), true, "the thread runs");
    sys::tgkill(pid, pid, SIGSTOP).ctx("tgkill SIGSTOP")?;
    expect_wait(pid, stopped(SIGSTOP), "the leader's signal-delivery stop")?;
    cont(pid, SIGSTOP)?;
    expect_both(pid, tid, SEIZED_GROUP_STOP, "each thread's group stop")?;
    for t in [pid, tid] {
        let si = siginfo(t)?;
        check_eq!(
            (si.signo, si.code, si.pid),
            (SIGSTOP as u32, SIGSTOP | (0x80 << 8), t as u32),
            "a group stop's siginfo"
        );
    }
    check_eq!(thread_runs(rd), false, "the thread runs in its group stop");
    for t in [pid, tid] {
        ptrace(PTRACE_LISTEN, t, 0, 0).ctx("LISTEN")?;
    }
    check_eq!(wait(-1, sys::WNOHANG), Ok((0, 0)), "nothing while listening");
    for t in [pid, tid] {
        ptrace(PTRACE_INTERRUPT, t, 0, 0).ctx("INTERRUPT")?;
    }
    expect_both(pid, tid, SEIZED_GROUP_STOP, "INTERRUPT of each listening thread")?;
    check_eq!(thread_runs(rd), false, "the thread runs after INTERRUPT");
    for t in [pid, tid] {
        ptrace(PTRACE_LISTEN, t, 0, 0).ctx("LISTEN")?;
    }
    sys::tgkill(pid, pid, SIGCONT).ctx("tgkill SIGCONT")?;
    expect_both(pid, tid, event_stop(PTRACE_EVENT_STOP), "each thread's trap at SIGCONT")?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGCONT), "the leader's SIGCONT delivery stop")?;
    cont(pid, 0)?;
    cont(tid, 0)?;
    check_eq!(thread_runs(rd), true, "the thread runs after SIGCONT");
    kill_and_reap_both(pid, tid);
    Ok(())
}

pub(super) fn threads_detached_in_a_group_stop_stay_stopped_until_sigcont() -> Outcome {
    let rd = writer_pipe()?;
    let pid = spawn_traced(|| writer_body(0))?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE as usize).ctx("SETOPTIONS")?;
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_CLONE), "clone event")?;
    let tid = eventmsg(pid)? as i32;
    expect_wait(tid, stopped(SIGSTOP), "the thread's first stop")?;
    cont(tid, 0)?;
    cont(pid, 0)?;
    sys::tgkill(pid, pid, SIGSTOP).ctx("tgkill SIGSTOP")?;
    expect_wait(pid, stopped(SIGSTOP), "the leader's signal-delivery stop")?;
    cont(pid, SIGSTOP)?;
    expect_both(pid, tid, stopped(SIGSTOP), "each thread's group stop")?;
    for t in [tid, pid] {
        ptrace(PTRACE_DETACH, t, 0, 0).ctx("DETACH")?;
    }
    check_eq!(thread_runs(rd), false, "the detached thread runs in the group stop");
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    check_eq!(thread_runs(rd), true, "the thread runs after SIGCONT");
    kill_and_reap(pid);
    Ok(())
}

/// The rseq area a tracee registers (rseq(2) wants 32 bytes, aligned).
#[repr(C, align(32))]
struct RseqArea([u8; 32]);
static mut RSEQ_AREA: RseqArea = RseqArea([0; 32]);
const RSEQ_SIG: u32 = 0xd428_bc00;

fn get_rseq(pid: i32, size: usize) -> Result<(usize, [u8; 32]), Fail> {
    let mut b = [0xaau8; 32];
    let n = ptrace(PTRACE_GET_RSEQ_CONFIGURATION, pid, size, b.as_mut_ptr() as usize)
        .ctx("PTRACE_GET_RSEQ_CONFIGURATION")?;
    Ok((n, b))
}

pub(super) fn get_rseq_configuration_reports_the_registered_area() -> Outcome {
    let area = core::ptr::addr_of!(RSEQ_AREA) as u64;
    let pid = spawn_traced(|| {
        if sys::rseq_register(core::ptr::addr_of_mut!(RSEQ_AREA) as usize, 32, RSEQ_SIG) != 0 {
            return 60;
        }
        sys::raise(SIGSTOP);
        0
    })?;
    let (n, b) = get_rseq(pid, 32)?;
    check_eq!((n, &b[..24]), (24, &[0u8; 24][..]), "no area registered yet");
    check_eq!(&b[24..], &[0xaa; 8][..], "nothing past the structure");
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGSTOP), "the stop after rseq(2)")?;
    let (n, b) = get_rseq(pid, 32)?;
    check_eq!(n, 24, "the size returned");
    check_eq!(le64(&b, 0), area, "rseq_abi_pointer");
    let mut want = [0u8; 16];
    want[0] = 32;
    want[4..8].copy_from_slice(&RSEQ_SIG.to_le_bytes());
    check_eq!(&b[8..24], &want[..], "size, signature, flags, pad");
    let (n, b) = get_rseq(pid, 12)?;
    check_eq!(n, 24, "the size returned for a 12-byte read");
    check_eq!(
        (le64(&b, 0), b[8], &b[12..16]),
        (area, 32, &[0xaa; 4][..]),
        "a 12-byte read"
    );
    cont(pid, 0)?;
    expect_exit(pid, 0)
}
