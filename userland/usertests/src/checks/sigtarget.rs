//! Which thread takes a signal sent to the whole process (Linux's
//! `complete_signal`): the thread it was sent to (the leader, for kill)
//! when that one may take it, else one other thread that may; only that
//! thread is woken and interrupted. Also `/proc/PID/task` with the leader
//! exited while another thread lives.
//!
//! The thread functions here must not allocate: `rt`'s heap has no lock.

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering::SeqCst};

use super::thread::{join, start_thread};
use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Fail, Outcome};

pub static CHECKS: &[Check] = checks![
    kill_self_is_handled_by_the_sender_while_a_thread_spins,
    kill_naming_a_thread_is_handled_by_that_thread,
    kill_from_a_thread_is_handled_by_the_leader,
    kill_blocked_by_the_leader_goes_to_a_thread_that_takes_it,
    sigtimedwait_takes_a_default_fatal_signal_another_thread_allows,
    proc_task_lists_the_zombie_leader,
    proc_task_of_a_zombie_process_lists_its_leader_alone_in_state_z,
];

/// Handler calls so far.
static HITS: AtomicUsize = AtomicUsize::new(0);
/// The thread the handler last ran on.
static HANDLER_TID: AtomicI32 = AtomicI32::new(0);
/// The second thread's ID, once it runs.
static THREAD_TID: AtomicI32 = AtomicI32::new(0);
/// Tells the second thread to finish.
static STOP: AtomicU32 = AtomicU32::new(0);
/// Rounds the leader is ready for / has seen handled.
static ROUND: AtomicUsize = AtomicUsize::new(0);
static ACK: AtomicUsize = AtomicUsize::new(0);
/// The second thread's FUTEX_WAIT result (0 or errno), -1 before.
static WAIT_RESULT: AtomicI32 = AtomicI32::new(-1);

const RT_SIGTIMEDWAIT: usize = 137;

/// Records which thread it runs on.
extern "C" fn record_tid(_: i32, _: *mut SigInfo, _: *mut UContext) {
    HANDLER_TID.store(gettid(), SeqCst);
    HITS.fetch_add(1, SeqCst);
}

/// Spins in user mode (no system call) until STOP.
extern "C" fn spinner(_: usize) -> usize {
    THREAD_TID.store(gettid(), SeqCst);
    while STOP.load(SeqCst) == 0 {
        core::hint::spin_loop();
    }
    0
}

/// Sleeps in FUTEX_WAIT on STOP; records the first wait's result.
extern "C" fn futex_sleeper(_: usize) -> usize {
    THREAD_TID.store(gettid(), SeqCst);
    let mut first = true;
    while STOP.load(SeqCst) == 0 {
        // SAFETY: STOP is a live word; no timeout.
        let r = unsafe { raw(nr::FUTEX, &[STOP.as_ptr() as usize, FUTEX_WAIT, 0, 0]) };
        if first {
            WAIT_RESULT.store(r.map_or_else(|e| e.0, |_| 0), SeqCst);
            first = false;
        }
    }
    0
}

fn stop_thread(ctid: &AtomicI32) -> Outcome {
    STOP.store(1, SeqCst);
    // SAFETY: STOP is a live word.
    let _ = unsafe { raw(nr::FUTEX, &[STOP.as_ptr() as usize, FUTEX_WAKE, 1]) };
    join(ctid)
}

fn wait_until(what: &str, ms: i64, done: impl Fn() -> bool) -> Outcome {
    let deadline = now_ns() + ms * 1_000_000;
    while !done() {
        ensure!(now_ns() < deadline, "{what}: not after {ms} ms");
        sleep_ms(1);
    }
    Ok(())
}

fn kill_self_is_handled_by_the_sender_while_a_thread_spins() -> Outcome {
    handle(SIGUSR1, record_tid, 0, 0).ctx("install")?;
    let (r, _, ctid, _) = start_thread(spinner, 0)?;
    ensure!(r > 0, "clone returned {r}");
    wait_until("the spinner starts", 2000, || THREAD_TID.load(SeqCst) != 0)?;
    let me = gettid();
    for i in 0..200 {
        kill(getpid(), SIGUSR1).ctx("kill")?;
        // Picked as the running target of its own kill, the leader runs
        // the handler before kill returns; the spinner never does.
        check_eq!(HITS.load(SeqCst), i + 1, "handler calls when kill returned");
        check_eq!(HANDLER_TID.load(SeqCst), me, "the thread the handler ran on");
    }
    stop_thread(ctid)
}

/// kill() given another thread's ID (Linux finds any thread by its ID)
/// signals the process, offered to that thread first: the spinner takes
/// it, not the sender.
fn kill_naming_a_thread_is_handled_by_that_thread() -> Outcome {
    handle(SIGUSR1, record_tid, 0, 0).ctx("install")?;
    let (r, _, ctid, _) = start_thread(spinner, 0)?;
    ensure!(r > 0, "clone returned {r}");
    wait_until("the spinner starts", 2000, || THREAD_TID.load(SeqCst) != 0)?;
    let tid = THREAD_TID.load(SeqCst);
    kill(tid, SIGUSR1).ctx("kill naming the thread")?;
    wait_until("the handler runs", 2000, || HITS.load(SeqCst) != 0)?;
    check_eq!(HANDLER_TID.load(SeqCst), tid, "the thread the handler ran on");
    check_eq!(HITS.load(SeqCst), 1, "handler calls");
    stop_thread(ctid)
}

/// Sends SIGUSR1 to its process each round the leader is ready for, then
/// spins in user mode until the leader saw it handled.
extern "C" fn round_sender(rounds: usize) -> usize {
    THREAD_TID.store(gettid(), SeqCst);
    for i in 1..=rounds {
        while ROUND.load(SeqCst) < i {
            if STOP.load(SeqCst) != 0 {
                return 0;
            }
            core::hint::spin_loop();
        }
        sleep_ms(2);
        let _ = kill(getpid(), SIGUSR1);
        while ACK.load(SeqCst) < i && STOP.load(SeqCst) == 0 {
            core::hint::spin_loop();
        }
    }
    0
}

fn kill_from_a_thread_is_handled_by_the_leader() -> Outcome {
    handle(SIGUSR1, record_tid, 0, 0).ctx("install")?;
    const ROUNDS: usize = 20;
    let (r, _, ctid, _) = start_thread(round_sender, ROUNDS)?;
    ensure!(r > 0, "clone returned {r}");
    let me = gettid();
    for i in 1..=ROUNDS {
        ROUND.store(i, SeqCst);
        // kill() targets the leader: it takes the signal (its sleep is
        // interrupted), not the sender returning from kill.
        let deadline = now_ns() + 2_000_000_000;
        while HITS.load(SeqCst) < i && now_ns() < deadline {
            let _ = nanosleep(&Timespec::ms(20));
        }
        check_eq!(HITS.load(SeqCst), i, "handler calls after round {i}");
        check_eq!(HANDLER_TID.load(SeqCst), me, "the thread the handler ran on, round {i}");
        ACK.store(i, SeqCst);
    }
    stop_thread(ctid)
}

fn kill_blocked_by_the_leader_goes_to_a_thread_that_takes_it() -> Outcome {
    handle(SIGUSR1, record_tid, 0, 0).ctx("install")?;
    let (r, _, ctid, _) = start_thread(futex_sleeper, 0)?;
    ensure!(r > 0, "clone returned {r}");
    // Blocked here only, after the clone; the thread falls asleep first.
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGUSR1))).ctx("block")?;
    wait_until("the thread starts", 2000, || THREAD_TID.load(SeqCst) != 0)?;
    sleep_ms(30);
    kill(getpid(), SIGUSR1).ctx("kill")?;
    wait_until("the handler runs", 2000, || HITS.load(SeqCst) != 0)?;
    check_eq!(
        HANDLER_TID.load(SeqCst),
        THREAD_TID.load(SeqCst),
        "the thread the handler ran on"
    );
    check_eq!(sigpending(), Ok(0), "nothing left pending for the leader");
    stop_thread(ctid)?;
    check_eq!(HITS.load(SeqCst), 1, "handler calls");
    // Its sleep was interrupted (the result is stored once the handler
    // returned, so looked at after the thread is gone).
    check_eq!(
        WAIT_RESULT.load(SeqCst),
        Errno::EINTR.0,
        "the thread's FUTEX_WAIT result"
    );
    Ok(())
}

/// Unblocks SIGTERM (default action: the group dies) in this thread, and
/// sends it to the process once the leader waits for it.
extern "C" fn term_sender(_: usize) -> usize {
    THREAD_TID.store(gettid(), SeqCst);
    let _ = sigprocmask(SIG_UNBLOCK, Some(sigbit(SIGTERM)));
    while ROUND.load(SeqCst) == 0 {
        core::hint::spin_loop();
    }
    sleep_ms(50);
    let _ = kill(getpid(), SIGTERM);
    while STOP.load(SeqCst) == 0 {
        core::hint::spin_loop();
    }
    0
}

fn sigtimedwait_takes_a_default_fatal_signal_another_thread_allows() -> Outcome {
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGTERM))).ctx("block")?;
    let (r, _, ctid, _) = start_thread(term_sender, 0)?;
    ensure!(r > 0, "clone returned {r}");
    let set = sigbit(SIGTERM);
    let mut info = SigInfo::zeroed();
    let ts = Timespec::ms(5000);
    ROUND.store(1, SeqCst);
    // kill() offers it to the leader first, which waits for it; a signal
    // a sigtimedwait waits for kills nobody, though the sender thread
    // does not block it (Linux's real_blocked).
    let got = call(
        RT_SIGTIMEDWAIT,
        &[
            &set as *const u64 as usize,
            &mut info as *mut SigInfo as usize,
            &ts as *const Timespec as usize,
            8,
        ],
    );
    check_eq!(got, Ok(SIGTERM as usize), "rt_sigtimedwait");
    check_eq!(
        (info.signo, info.code, info.pid()),
        (SIGTERM, SI_USER, getpid()),
        "its siginfo"
    );
    stop_thread(ctid)
}

/// The leader's CLONE_CHILD_CLEARTID word: the kernel clears it as the
/// leader exits.
static LEADER_ALIVE: AtomicI32 = AtomicI32::new(1);

/// Where `usertests` reads a check's failure message (main.rs).
const REPORT_FD: i32 = 200;

fn proc_task_lists_the_zombie_leader() -> Outcome {
    let pid = getpid();
    // SAFETY: the word is a static that outlives the thread.
    unsafe { raw(nr::SET_TID_ADDRESS, &[LEADER_ALIVE.as_ptr() as usize]) }.ctx("set_tid_address")?;
    let (r, _, _, _) = start_thread(zombie_watcher, pid as usize)?;
    ensure!(r > 0, "clone returned {r}");
    // This thread alone ends; the watcher reports and ends the group.
    // SAFETY: exit takes no pointer and does not return.
    let _ = unsafe { raw(nr::EXIT, &[0]) };
    Err(Fail("exit returned".into()))
}

extern "C" fn zombie_watcher(pid: usize) -> usize {
    let code = match watch_zombie_leader(pid as i32) {
        Ok(()) => 0,
        Err(Fail(msg)) => {
            let _ = write(REPORT_FD, msg.as_bytes());
            1
        }
    };
    exit_group(code)
}

/// Run by the second thread once the leader exited: the leader stays in
/// `/proc/PID/task`, a zombie (`Z` in its `stat`), beside this thread.
fn watch_zombie_leader(pid: i32) -> Outcome {
    // Nothing allocates until the leader is gone (the heap has no lock).
    let deadline = now_ns() + 5_000_000_000;
    while LEADER_ALIVE.load(SeqCst) != 0 {
        ensure!(
            now_ns() < deadline,
            "the leader's clear_child_tid not cleared after 5 s"
        );
        let t = Timespec::ms(100);
        // SAFETY: the word is live; t is a readable timespec.
        let _ = unsafe {
            raw(
                nr::FUTEX,
                &[
                    LEADER_ALIVE.as_ptr() as usize,
                    FUTEX_WAIT,
                    1,
                    &t as *const Timespec as usize,
                ],
            )
        };
    }
    let stat_path = alloc::format!("/proc/self/task/{pid}/stat");
    let mut state = 0u8;
    while state != b'Z' {
        let stat = read_small(stat_path.as_bytes()).ctx("read task/PID/stat")?;
        // "PID (comm) S ...": the state follows the comm's closing paren.
        let close = stat.iter().rposition(|&b| b == b')').unwrap_or(0);
        state = stat.get(close + 2).copied().unwrap_or(0);
        ensure!(now_ns() < deadline, "task/{pid}/stat state {:?}, want Z", state as char);
        sleep_ms(5);
    }
    let names = list_dir(b"/proc/self/task").ctx("list /proc/self/task")?;
    let mut want = alloc::vec![alloc::format!("{pid}"), alloc::format!("{}", gettid())];
    want.sort();
    check_eq!(names, want, "/proc/self/task");
    Ok(())
}

/// A process all of whose threads have exited but which is not yet reaped
/// (here: its leader exited first, then its second thread): Linux keeps
/// the leader's task until the reap, so `/proc/PID/task` lists it, alone,
/// and its `task/PID/stat` shows state `Z`, as the process's `stat` does.
fn proc_task_of_a_zombie_process_lists_its_leader_alone_in_state_z() -> Outcome {
    let pid = fork().ctx("fork")?;
    if pid == 0 {
        // The child: a second thread that exits after the leader did.
        let code = match start_thread(exit_after_the_leader, 0) {
            Ok((r, _, _, _)) if r > 0 => 0,
            _ => 1,
        };
        if code != 0 {
            exit_group(code);
        }
        // SAFETY: exit takes no pointer and does not return.
        let _ = unsafe { raw(nr::EXIT, &[0]) };
        exit_group(2)
    }
    let mut info = SigInfo::zeroed();
    // SAFETY: info is a live siginfo_t; no rusage. WNOWAIT leaves the
    // child a zombie; the wait ends once its last thread has exited.
    unsafe {
        raw(
            nr::WAITID,
            &[
                P_PID,
                pid as usize,
                &mut info as *mut SigInfo as usize,
                WEXITED | WNOWAIT,
                0,
            ],
        )
    }
    .ctx("waitid WNOWAIT")?;
    check_eq!((info.pid(), info.status()), (pid, 0), "the exit, with the thread's 0");
    let names = list_dir(alloc::format!("/proc/{pid}/task").as_bytes()).ctx("list task");
    let stat = read_small(alloc::format!("/proc/{pid}/task/{pid}/stat").as_bytes()).ctx("read task/PID/stat");
    let pstat = read_small(alloc::format!("/proc/{pid}/stat").as_bytes()).ctx("read stat");
    check_eq!(wait4(pid, 0).map(|(p, _)| p), Ok(pid), "the reap");
    check_eq!(
        names?,
        alloc::vec![alloc::format!("{pid}")],
        "/proc/PID/task of the zombie"
    );
    let (stat, pstat) = (stat?, pstat?);
    let state = |s: &[u8]| {
        // "PID (comm) S ...": the state follows the comm's closing paren.
        let close = s.iter().rposition(|&b| b == b')').unwrap_or(0);
        s.get(close + 2).copied().unwrap_or(0) as char
    };
    check_eq!(state(&stat), 'Z', "task/PID/stat's state");
    check_eq!(state(&pstat), 'Z', "stat's state");
    let first = |s: &[u8]| s.split(|&b| b == b' ').next().map(<[u8]>::to_vec);
    check_eq!(
        first(&stat),
        Some(alloc::format!("{pid}").into_bytes()),
        "task/PID/stat's pid"
    );
    // The leader's name stays with it (ours, inherited at the fork).
    let comm = |s: &[u8]| {
        let open = s.iter().position(|&b| b == b'(').unwrap_or(0);
        let close = s.iter().rposition(|&b| b == b')').unwrap_or(0);
        s.get(open + 1..close).map(<[u8]>::to_vec).unwrap_or_default()
    };
    let ours = read_small(b"/proc/self/comm").ctx("read our comm")?;
    let ours = ours.strip_suffix(b"\n").unwrap_or(&ours).to_vec();
    check_eq!(comm(&stat), ours.clone(), "task/PID/stat's comm");
    check_eq!(comm(&pstat), ours, "stat's comm");
    Ok(())
}

/// Waits for the process's leader to be a zombie (`Z` in the process's
/// stat, which is the leader's), then exits this thread, the last.
extern "C" fn exit_after_the_leader(_: usize) -> usize {
    let deadline = now_ns() + 5_000_000_000;
    while now_ns() < deadline {
        // Allocates (the path): the leader is exiting or gone, and
        // allocates nothing meanwhile.
        let Ok(stat) = read_small(b"/proc/self/stat") else {
            break;
        };
        let close = stat.iter().rposition(|&b| b == b')').unwrap_or(0);
        if stat.get(close + 2) == Some(&b'Z') {
            break;
        }
        sleep_ms(2);
    }
    // SAFETY: exit takes no pointer and does not return.
    let _ = unsafe { raw(nr::EXIT, &[0]) };
    0
}

/// The names in directory `path`, but `.` and `..`, sorted.
fn list_dir(path: &[u8]) -> Result<alloc::vec::Vec<alloc::string::String>, Errno> {
    let fd = rt::fs::open(path, rt::fs::O_RDONLY | rt::fs::O_DIRECTORY, 0)?;
    let mut buf = [0u8; 1024];
    let mut names = alloc::vec::Vec::new();
    loop {
        let n = match rt::fs::getdents64(fd, &mut buf) {
            Ok(n) => n,
            Err(e) => {
                let _ = rt::fs::close(fd);
                return Err(e);
            }
        };
        if n == 0 {
            break;
        }
        for e in rt::fs::dirents(&buf[..n]) {
            if e.name != b"." && e.name != b".." {
                names.push(alloc::string::String::from_utf8_lossy(e.name).into_owned());
            }
        }
    }
    let _ = rt::fs::close(fd);
    names.sort();
    Ok(names)
}

/// The first KiB of a small file.
fn read_small(path: &[u8]) -> Result<alloc::vec::Vec<u8>, Errno> {
    let fd = rt::fs::open(path, rt::fs::O_RDONLY, 0)?;
    let mut buf = [0u8; 1024];
    let r = rt::fs::read(fd, &mut buf);
    let _ = rt::fs::close(fd);
    Ok(buf[..r?].to_vec())
}
