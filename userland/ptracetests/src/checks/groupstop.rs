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

// ------------------------------------------------------------- job control

/// SIGTSTP, SIGTTIN and SIGTTOU.
const JOB_CONTROL_STOPS: [i32; 3] = [20, 21, 22];

/// The child of the orphaned-group check: in a session of its own, its
/// group is orphaned (its parent is in another session), so the job
/// control stops it sends itself are discarded; a child of its own, in
/// another group of its session, is not orphaned and stops; SIGSTOP stops
/// this one all the same. The exit code says which step went wrong.
fn orphaned_group_body() -> i32 {
    if rt::process::setsid().is_err() {
        return 60;
    }
    for sig in JOB_CONTROL_STOPS {
        sys::raise(sig);
    }
    let child = match fork() {
        Ok(Fork::Child) => {
            sys::setpgid_self();
            sys::raise(JOB_CONTROL_STOPS[0]);
            sys::exit_now(0)
        }
        Ok(Fork::Parent(c)) => c,
        Err(_) => return 61,
    };
    let child_stopped = wait(child, sys::WUNTRACED) == Ok((child, stopped(JOB_CONTROL_STOPS[0])));
    kill_and_reap(child);
    if !child_stopped {
        return 62;
    }
    sys::raise(SIGSTOP);
    0
}

pub(super) fn job_control_stops_are_discarded_in_an_orphaned_process_group_and_sigstop_still_stops() -> Outcome {
    let pid = spawn(orphaned_group_body)?;
    // A job control stop that was not discarded would be reported here
    // instead of SIGSTOP (or the child's exit code names what failed).
    let got = wait(pid, sys::WUNTRACED);
    if got != Ok((pid, stopped(SIGSTOP))) {
        // Out of the harness's process group: killed here.
        kill_and_reap(pid);
    }
    check_eq!(
        got,
        Ok((pid, stopped(SIGSTOP))),
        "SIGSTOP in the orphaned group, after SIGTSTP, SIGTTIN and SIGTTOU"
    );
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    expect_exit(pid, 0)
}

// ------------------------------------------------- threads made in a stop

/// The write end of the pipe of the thread made during the group stop.
static LATE_WRITER_FD: AtomicI32 = AtomicI32::new(-1);

/// A writer thread, then a stop for the tracer (SIGUSR2) right before the
/// clone of a second writer, which the tracer holds at its entry stop
/// while the first thread starts a group stop.
fn clone_in_group_stop_body() -> i32 {
    if sys::thread_writer(WRITER_FD.load(Ordering::Relaxed)) <= 0 {
        return 50;
    }
    sys::raise(SIGUSR2);
    // No system call between the stop and this clone.
    if sys::thread_writer(LATE_WRITER_FD.load(Ordering::Relaxed)) <= 0 {
        return 51;
    }
    sleeper()
}

pub(super) fn thread_cloned_while_its_group_stops_joins_the_stop_until_sigcont() -> Outcome {
    let rd = writer_pipe()?;
    let [late_rd, late_wr] = rt::fs::pipe2(rt::fs::O_NONBLOCK | rt::fs::O_CLOEXEC).ctx("pipe2")?;
    LATE_WRITER_FD.store(late_wr, Ordering::Relaxed);
    let pid = spawn_traced(clone_in_group_stop_body)?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGUSR2), "the stop before the clone")?;
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP), "the clone's entry stop")?;
    check_eq!(syscall_nr(pid)?, 220, "the system call at the entry stop");
    check_eq!(thread_runs(rd), true, "the first thread runs");
    // The first thread (untraced, the only one that may take it) starts
    // the group stop and stops; the traced thread has still to stop.
    rt::process::kill(pid, SIGSTOP).ctx("kill SIGSTOP")?;
    check_eq!(thread_runs(rd), false, "the first thread runs in the group stop");
    // The clone runs in the group stop (Linux restarts it after the
    // traced thread's stop; either way the new thread stops with the
    // group before it runs user code).
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGSTOP), "the traced thread's group stop")?;
    cont(pid, 0)?;
    check_eq!(
        thread_runs(late_rd),
        false,
        "the thread made in the group stop runs in it"
    );
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    check_eq!(thread_runs(late_rd), true, "the new thread runs after SIGCONT");
    check_eq!(thread_runs(rd), true, "the first thread runs after SIGCONT");
    kill_and_reap(pid);
    Ok(())
}

// ------------------------------------------------ per-thread /proc state

/// The tid of the writer thread, for the tracer to peek.
static WRITER_TID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// A writer thread whose tid is kept in [`WRITER_TID`], then a stop for
/// the tracer (SIGUSR2).
fn writer_tid_body() -> i32 {
    let tid = sys::thread_writer(WRITER_FD.load(Ordering::Relaxed));
    if tid <= 0 {
        return 50;
    }
    WRITER_TID.store(tid as u64, Ordering::SeqCst);
    sys::raise(SIGUSR2);
    sleeper()
}

/// The file `/proc/<pid>/task/<tid>/<name>`.
fn task_file(pid: i32, tid: i32, name: &str) -> Result<alloc::vec::Vec<u8>, Fail> {
    let path = format!("/proc/{pid}/task/{tid}/{name}");
    let fd = rt::fs::open(path.as_bytes(), rt::fs::O_RDONLY, 0).ctx("open /proc/PID/task/TID")?;
    let text = sys::read_all(fd);
    let _ = rt::fs::close(fd);
    Ok(text)
}

/// The state letter of `/proc/<pid>/task/<tid>/stat` (after the comm).
fn task_stat_state(pid: i32, tid: i32) -> Result<u8, Fail> {
    let stat = task_file(pid, tid, "stat")?;
    let at = stat
        .iter()
        .rposition(|&b| b == b')')
        .ok_or_else(|| Fail(alloc::string::String::from("no ) in stat")))?;
    stat.get(at + 2)
        .copied()
        .ok_or_else(|| Fail(alloc::string::String::from("no state in stat")))
}

/// The `State:` line of `/proc/<pid>/task/<tid>/status`.
fn task_status_state(pid: i32, tid: i32) -> Result<alloc::string::String, Fail> {
    let status = task_file(pid, tid, "status")?;
    let text = core::str::from_utf8(&status).map_err(|_| Fail(alloc::string::String::from("status is not text")))?;
    let line = text
        .lines()
        .find(|l| l.starts_with("State:"))
        .ok_or_else(|| Fail(alloc::string::String::from("no State: line")))?;
    Ok(alloc::string::String::from(line))
}

pub(super) fn proc_task_stat_and_status_show_each_threads_own_state() -> Outcome {
    let rd = writer_pipe()?;
    let pid = spawn_traced(writer_tid_body)?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGUSR2), "the stop after the thread started")?;
    let mut tid: u64 = 0;
    let addr = &WRITER_TID as *const _ as usize;
    ptrace(PTRACE_PEEKDATA, pid, addr, &mut tid as *mut u64 as usize).ctx("PEEKDATA")?;
    let tid = tid as i32;
    check_eq!(thread_runs(rd), true, "the thread runs");
    check_eq!(
        task_stat_state(pid, pid)?,
        b't',
        "the leader's task stat state in its ptrace stop"
    );
    check_eq!(
        task_status_state(pid, pid)?,
        alloc::string::String::from("State:\tt (tracing stop)"),
        "the leader's task status"
    );
    let s = task_stat_state(pid, tid)?;
    crate::ensure!(
        s == b'S' || s == b'R',
        "the running thread's task stat state: {}",
        s as char
    );
    // The thread takes the SIGSTOP (the leader cannot while stopped):
    // the thread is in a group stop, the leader still in its ptrace stop.
    rt::process::kill(pid, SIGSTOP).ctx("kill SIGSTOP")?;
    check_eq!(thread_runs(rd), false, "the thread runs in the group stop");
    check_eq!(task_stat_state(pid, tid)?, b'T', "the stopped thread's task stat state");
    check_eq!(
        task_status_state(pid, tid)?,
        alloc::string::String::from("State:\tT (stopped)"),
        "the stopped thread's task status"
    );
    check_eq!(task_stat_state(pid, pid)?, b't', "the leader's, meanwhile");
    kill_and_reap(pid);
    Ok(())
}
