//! Group stops of a multi-threaded process (Linux's do_signal_stop and
//! ptrace_stop): every thread stops, each traced thread reports its own
//! stop to its tracer, and SIGCONT (or the tracer) resumes them. A thread
//! that writes a byte to a pipe every 10 ms shows whether it runs.

use super::*;
use core::sync::atomic::AtomicI32;
use uapi::rseq::ORIG_RSEQ_SIZE;
use uapi::wait::WCONTINUED;

/// The write end of the pipe the tracee's thread writes to (set before
/// the fork, read by the child).
static WRITER_FD: AtomicI32 = AtomicI32::new(-1);

/// The group stop status of a seized tracee (PTRACE_EVENT_STOP, SIGSTOP).
const SEIZED_GROUP_STOP: i32 = w_stopcode(SIGSTOP | ((PTRACE_EVENT_STOP as i32) << 8));

/// A process whose second thread writes to the pipe while its first one
/// sleeps; `delay_ms` passes before the thread starts.
fn writer_body(delay_ms: u64) -> i32 {
    sys::sleep_ms(delay_ms);
    if sys::thread_writer(WRITER_FD.load(Ordering::Relaxed)) <= 0 {
        return 50;
    }
    sleeper()
}

/// Sends `sig` to the calling leader thread itself, as libc's raise()
/// (tgkill). A process-directed kill(getpid()) right after a clone is
/// not the leader's alone even on Linux: the new thread, at its first
/// run, takes shared signals it does not block (calculate_sigpending)
/// and may dequeue it first, where these checks want the leader's
/// signal-delivery stop.
fn raise_in_leader(sig: i32) {
    let pid = sys::getpid();
    let _ = sys::tgkill(pid, pid, sig);
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

/// Whether the thread writes within 100 ms (after what it wrote before):
/// the test that a stopped thread stays stopped.
fn thread_runs(rd: i32) -> bool {
    drain(rd);
    sys::sleep_ms(100);
    drain(rd) > 0
}

/// Whether the thread writes within 5 s (after what it wrote before),
/// answering as soon as it does: the test that a thread runs, which on a
/// loaded host may wait for a CPU much longer than its 10 ms period.
fn thread_runs_soon(rd: i32) -> bool {
    drain(rd);
    for _ in 0..50 {
        sys::sleep_ms(100);
        if drain(rd) > 0 {
            return true;
        }
    }
    false
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
    check_eq!(thread_runs_soon(rd), true, "the thread runs");
    rt::process::kill(pid, SIGSTOP).ctx("kill SIGSTOP")?;
    check_eq!(
        wait(pid, sys::WUNTRACED),
        Ok((pid, stopped(SIGSTOP))),
        "the group stop, reported (WUNTRACED)"
    );
    check_eq!(thread_runs(rd), false, "the thread runs in the reported group stop");
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    check_eq!(wait(pid, WCONTINUED), Ok((pid, uapi::wait::W_CONTINUED)), "WCONTINUED");
    check_eq!(thread_runs_soon(rd), true, "the thread runs after SIGCONT");
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
    check_eq!(thread_runs_soon(rd), true, "the thread runs");
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
    check_eq!(thread_runs_soon(rd), true, "the thread runs once its tracer resumed it");
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
    check_eq!(thread_runs_soon(rd), true, "the thread runs");
    sys::tgkill(pid, pid, SIGSTOP).ctx("tgkill SIGSTOP")?;
    expect_wait(pid, stopped(SIGSTOP), "the leader's signal-delivery stop")?;
    cont(pid, SIGSTOP)?;
    expect_both(pid, tid, SEIZED_GROUP_STOP, "each thread's group stop")?;
    for t in [pid, tid] {
        let si = siginfo(t)?;
        check_eq!(
            (si.signo, si.code, si.pid),
            (SIGSTOP as u32, event_code(SIGSTOP, PTRACE_EVENT_STOP), t as u32),
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
    check_eq!(thread_runs_soon(rd), true, "the thread runs after SIGCONT");
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
    check_eq!(thread_runs_soon(rd), true, "the thread runs after SIGCONT");
    kill_and_reap(pid);
    Ok(())
}

/// The rseq area a tracee registers (rseq(2) wants 32 bytes, aligned).
#[repr(C, align(32))]
struct RseqArea([u8; 32]);
static mut RSEQ_AREA: RseqArea = RseqArea([0; 32]);
/// The abort signature glibc uses on arm64 (user space picks it).
const RSEQ_SIG: u32 = 0xd428_bc00;
/// `struct ptrace_rseq_configuration`'s size, what the request returns.
const CONFIG_SIZE: usize = PtraceRseqConfiguration::SIZE;

fn get_rseq(pid: i32, size: usize) -> Result<(usize, [u8; 32]), Fail> {
    let mut b = [0xaau8; 32];
    let n = ptrace(PTRACE_GET_RSEQ_CONFIGURATION, pid, size, b.as_mut_ptr() as usize)
        .ctx("PTRACE_GET_RSEQ_CONFIGURATION")?;
    Ok((n, b))
}

pub(super) fn get_rseq_configuration_reports_the_registered_area() -> Outcome {
    let area = core::ptr::addr_of!(RSEQ_AREA) as u64;
    let pid = spawn_traced(|| {
        if sys::rseq_register(
            core::ptr::addr_of_mut!(RSEQ_AREA) as usize,
            ORIG_RSEQ_SIZE as usize,
            RSEQ_SIG,
        ) != 0
        {
            return 60;
        }
        sys::raise(SIGSTOP);
        0
    })?;
    let (n, b) = get_rseq(pid, 32)?;
    check_eq!(
        (n, &b[..CONFIG_SIZE]),
        (CONFIG_SIZE, &[0u8; CONFIG_SIZE][..]),
        "no area registered yet"
    );
    check_eq!(
        &b[CONFIG_SIZE..],
        &[0xaa; 32 - CONFIG_SIZE][..],
        "nothing past the structure"
    );
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGSTOP), "the stop after rseq(2)")?;
    let (n, b) = get_rseq(pid, 32)?;
    check_eq!(n, CONFIG_SIZE, "the size returned");
    check_eq!(le64(&b, 0), area, "rseq_abi_pointer");
    let mut want = [0u8; 16];
    want[0] = ORIG_RSEQ_SIZE as u8;
    want[4..8].copy_from_slice(&RSEQ_SIG.to_le_bytes());
    check_eq!(&b[8..24], &want[..], "size, signature, flags, pad");
    let (n, b) = get_rseq(pid, 12)?;
    check_eq!(n, CONFIG_SIZE, "the size returned for a 12-byte read");
    check_eq!(
        (le64(&b, 0), b[8], &b[12..16]),
        (area, ORIG_RSEQ_SIZE as u8, &[0xaa; 4][..]),
        "a 12-byte read"
    );
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

// ------------------------------------------------------------- job control

/// SIGTSTP, SIGTTIN and SIGTTOU.
const JOB_CONTROL_STOPS: [i32; 3] = [
    uapi::signal::SIGTSTP as i32,
    uapi::signal::SIGTTIN as i32,
    uapi::signal::SIGTTOU as i32,
];

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
    raise_in_leader(SIGUSR2);
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
    check_eq!(syscall_nr(pid)?, nr::CLONE as i32, "the system call at the entry stop");
    check_eq!(thread_runs_soon(rd), true, "the first thread runs");
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
    check_eq!(thread_runs_soon(rd), true, "the first thread runs after SIGCONT");
    kill_and_reap(pid);
    Ok(())
}

/// A signal sent to a traced process whose second (untraced) thread keeps
/// running goes to the leader kill() names (Linux's complete_signal): its
/// signal-delivery stop comes every time, and the thread, which would die
/// of SIGUSR1, never takes it.
pub(super) fn process_directed_signal_stops_the_leader_not_the_running_thread() -> Outcome {
    let rd = writer_pipe()?;
    let pid = spawn_traced(|| writer_body(0))?;
    cont(pid, 0)?;
    check_eq!(thread_runs_soon(rd), true, "the thread runs");
    for round in 0..20 {
        rt::process::kill(pid, SIGUSR1).ctx("kill SIGUSR1")?;
        expect_wait(pid, stopped(SIGUSR1), &format!("the leader's stop, round {round}"))?;
        // Suppressed: the process lives on.
        cont(pid, 0)?;
    }
    // Alive: it writes again within a second (100 ms windows, as a loaded
    // host may hold a vCPU that long).
    check_eq!(
        (0..10).any(|_| thread_runs(rd)),
        true,
        "the thread runs after the stops"
    );
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
    raise_in_leader(SIGUSR2);
    sleeper()
}

/// The file `/proc/<pid>/task/<tid>/<name>`.
fn task_file(pid: i32, tid: i32, name: &str) -> Result<alloc::vec::Vec<u8>, Fail> {
    proc_file(&format!("/proc/{pid}/task/{tid}/{name}"))
}

/// The contents of the /proc file at `path`.
fn proc_file(path: &str) -> Result<alloc::vec::Vec<u8>, Fail> {
    let fd = rt::fs::open(path.as_bytes(), rt::fs::O_RDONLY, 0).ctx(path)?;
    let text = sys::read_all(fd);
    let _ = rt::fs::close(fd);
    Ok(text)
}

/// The state letter of `/proc/<pid>/task/<tid>/stat` (after the comm).
fn task_stat_state(pid: i32, tid: i32) -> Result<u8, Fail> {
    stat_state(&task_file(pid, tid, "stat")?)
}

/// The state letter of a `stat` file's text (after the comm).
fn stat_state(stat: &[u8]) -> Result<u8, Fail> {
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
    status_line(&task_file(pid, tid, "status")?, "State:")
}

/// The line of a `status` file's text that starts with `key`.
fn status_line(status: &[u8], key: &str) -> Result<alloc::string::String, Fail> {
    let text = core::str::from_utf8(status).map_err(|_| Fail(alloc::string::String::from("status is not text")))?;
    let line = text
        .lines()
        .find(|l| l.starts_with(key))
        .ok_or_else(|| Fail(format!("no {key} line")))?;
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
    check_eq!(thread_runs_soon(rd), true, "the thread runs");
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

/// A process whose leader exits (exit, not exit_group) while its second
/// thread writes on.
fn leader_exits_body() -> i32 {
    if sys::thread_writer(WRITER_FD.load(Ordering::Relaxed)) <= 0 {
        return 50;
    }
    sys::syscall_raw(rt::syscall::nr::EXIT, 0, 0, 0);
    51
}

pub(super) fn proc_stat_of_a_process_whose_leader_exited_shows_the_zombie_leader() -> Outcome {
    let rd = writer_pipe()?;
    let pid = spawn(leader_exits_body)?;
    let stat_path = format!("/proc/{pid}/stat");
    let mut state = 0;
    for _ in 0..40 {
        state = stat_state(&proc_file(&stat_path)?)?;
        if state == b'Z' {
            break;
        }
        sys::sleep_ms(50);
    }
    let runs = thread_runs(rd);
    let status = proc_file(&format!("/proc/{pid}/status"))?;
    kill_and_reap(pid);
    check_eq!(runs, true, "the second thread runs");
    // Linux shows a process through its leader, which stays a zombie until
    // the whole group ends; the zombie still counts as a thread.
    check_eq!(state as char, 'Z', "/proc/PID/stat's state");
    check_eq!(
        status_line(&status, "State:")?,
        alloc::string::String::from("State:\tZ (zombie)"),
        "/proc/PID/status"
    );
    check_eq!(
        status_line(&status, "Threads:")?,
        alloc::string::String::from("Threads:\t2"),
        "/proc/PID/status"
    );
    Ok(())
}

// ------------------------------------------- orphaned groups, restarted forks

/// Where the stopped grandchild of the orphaning check reports.
static ORPHAN_FD: AtomicI32 = AtomicI32::new(-1);

const SIGHUP: i32 = uapi::signal::SIGHUP as i32;

/// The mask bit of `sig`.
fn sigbit(sig: i32) -> u64 {
    1 << (sig - 1)
}

/// The orphaning check's child: a process group of its own with a child
/// in it that blocks SIGHUP and SIGCONT and stops itself; once it is
/// stopped, its pid goes to the pipe and this process exits, leaving the
/// group orphaned. The grandchild, if continued, writes its pending set.
fn orphaning_parent_body() -> i32 {
    sys::setpgid_self();
    let fd = ORPHAN_FD.load(Ordering::Relaxed);
    let g = match fork() {
        Ok(Fork::Child) => {
            let mask = sigbit(SIGHUP) | sigbit(SIGCONT);
            // SAFETY: `mask` is a readable sigset_t for the call; no old
            // mask is asked for.
            let r = unsafe {
                rt::syscall::syscall4(
                    rt::syscall::nr::RT_SIGPROCMASK,
                    0,
                    &mask as *const u64 as usize,
                    0,
                    SIGSET_SIZE,
                )
            };
            if r != 0 {
                sys::exit_now(80);
            }
            sys::raise(SIGSTOP);
            let mut pending = 0u64;
            // SAFETY: `pending` is a writable sigset_t for the call.
            unsafe {
                rt::syscall::syscall2(
                    rt::syscall::nr::RT_SIGPENDING,
                    &mut pending as *mut u64 as usize,
                    SIGSET_SIZE,
                )
            };
            let _ = rt::io::write_all(fd, &pending.to_le_bytes());
            sys::exit_now(0)
        }
        Ok(Fork::Parent(g)) => g,
        Err(_) => return 70,
    };
    if wait(g, sys::WUNTRACED) != Ok((g, stopped(SIGSTOP))) {
        kill_and_reap(g);
        return 71;
    }
    let _ = rt::io::write_all(fd, &(g as u64).to_le_bytes());
    0
}

/// An 8-byte word from the non-blocking pipe `rd`, waiting up to 2 s.
fn read_word(rd: i32) -> Option<u64> {
    let mut b = [0u8; 8];
    for _ in 0..40 {
        if rt::fs::read(rd, &mut b) == Ok(8) {
            return Some(u64::from_le_bytes(b));
        }
        sys::sleep_ms(50);
    }
    None
}

pub(super) fn orphaned_process_group_with_a_stopped_member_gets_sighup_then_sigcont() -> Outcome {
    let [rd, wr] = rt::fs::pipe2(rt::fs::O_NONBLOCK | rt::fs::O_CLOEXEC).ctx("pipe2")?;
    ORPHAN_FD.store(wr, Ordering::Relaxed);
    let c = spawn(orphaning_parent_body)?;
    expect_exit(c, 0)?;
    let _ = rt::fs::close(wr);
    let g = read_word(rd).ok_or_else(|| Fail(alloc::string::String::from("no grandchild pid")))? as i32;
    // Its parent gone, the group's only link outside it (to this process,
    // in another group of the session) is gone with it.
    let pending = read_word(rd);
    if pending.is_none() {
        // Still stopped, in a group the harness does not kill.
        let _ = rt::process::kill(g, SIGKILL);
    }
    check_eq!(
        pending,
        Some(sigbit(SIGHUP) | sigbit(SIGCONT)),
        "the orphaned stopped grandchild's pending signals"
    );
    Ok(())
}

pub(super) fn fork_held_while_a_signal_comes_restarts_after_the_handler_and_forks_once() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            if ptrace(PTRACE_TRACEME, 0, 0, 0).is_err() || install_handler(SIGUSR1).is_err() {
                sys::exit_now(90);
            }
            sys::raise(SIGSTOP);
            let code = match fork() {
                Ok(Fork::Child) => sys::exit_now(0),
                Ok(Fork::Parent(c)) => {
                    let first = wait(c, 0);
                    let more = wait(-1, sys::WNOHANG);
                    i32::from(first != Ok((c, 0))) | (i32::from(more != Err(Errno::ECHILD)) << 1)
                }
                Err(_) => 4,
            };
            sys::exit_now(code)
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "first stop")?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD as usize).ctx("SETOPTIONS")?;
    let sysstop = stopped(SIGTRAP | 0x80);
    let mut at_clone = false;
    for _ in 0..8 {
        syscall(pid, 0)?;
        expect_wait(pid, sysstop, "an entry stop")?;
        if syscall_nr(pid)? == rt::syscall::nr::CLONE as i32 {
            at_clone = true;
            break;
        }
        syscall(pid, 0)?;
        expect_wait(pid, sysstop, "an exit stop")?;
    }
    crate::ensure!(at_clone, "no entry stop for the fork's clone");
    // A signal while the tracer holds the call at its entry: the call
    // fails to be restarted once the signal is handled (Linux's
    // copy_process), and the new process is made once, after the handler.
    rt::process::kill(pid, SIGUSR1).ctx("kill SIGUSR1")?;
    syscall(pid, 0)?;
    expect_wait(pid, sysstop, "the clone's exit stop")?;
    check_eq!(
        regs(pid)?.regs[0] as i64,
        -(uapi::Errno::ERESTARTNOINTR as i64),
        "the clone's result (-ERESTARTNOINTR)"
    );
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGUSR1), "SIGUSR1's delivery stop")?;
    syscall(pid, SIGUSR1)?;
    expect_wait(pid, sysstop, "the handler's rt_sigreturn")?;
    check_eq!(
        syscall_nr(pid)?,
        rt::syscall::nr::RT_SIGRETURN as i32,
        "after the handler"
    );
    syscall(pid, 0)?;
    expect_wait(pid, sysstop, "rt_sigreturn's exit stop")?;
    syscall(pid, 0)?;
    expect_wait(pid, sysstop, "the restarted clone's entry stop")?;
    check_eq!(syscall_nr(pid)?, rt::syscall::nr::CLONE as i32, "the call restarted");
    syscall(pid, 0)?;
    expect_wait(pid, sysstop, "the restarted clone's exit stop")?;
    let child = regs(pid)?.regs[0] as i64;
    crate::ensure!(child > 0, "the restarted clone's result: {child}");
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGCHLD), "the child's exit signal")?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}
