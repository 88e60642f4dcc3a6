//! Processes: fork, exec, wait, exit, ids, sessions and groups, kill, and
//! the small calls (uname, prctl, sched_yield, an unknown number).

use alloc::format;
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use super::scratch;
use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Fail, Outcome};

pub static CHECKS: &[Check] = checks![
    fork_child_sees_parent,
    clone_parent_child_is_a_sibling_of_the_caller,
    clone_parent_child_takes_the_callers_exit_signal,
    clone_takes_any_exit_signal_and_sends_only_a_valid_one,
    wait_exit_status_encoding,
    wait_signal_status_encoding,
    wait4_wnohang,
    wait4_any_child,
    wait4_echild,
    wait_stopped_and_continued,
    waitid_siginfo,
    waitid_wnowait_wnohang_errors,
    cow_heap_stack_mmap_isolated,
    exit_and_exit_group,
    getpid_gettid_set_tid_address,
    uid_gid_consistent,
    execve_args_env_pid,
    execve_close_on_exec,
    execve_signal_state,
    interval_timers_survive_execve,
    execve_errors,
    execve_e2big,
    setsid_getsid_getpgid,
    setpgid_and_group_kill,
    kill_probe_and_errors,
    orphan_reparented_to_init,
    uname_linux_aarch64,
    prctl_set_get_name,
    proc_comm_write_renames_threads_of_the_writer_only,
    sched_yield_returns_0,
    unknown_syscall_enosys,
];

/// The program exec'd by the checks: `usertests --child MODE [ARG]...`.
/// Exits 0 when what it checks holds, else a code saying what did not.
pub fn child_main(args: rt::Args) -> i32 {
    let arg = |i: usize| args.get(i).unwrap_or(b"");
    let num = |i: usize| {
        core::str::from_utf8(arg(i))
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(-1)
    };
    match arg(2) {
        b"exit" => num(3) as i32,
        // pidtid: after an exec from any thread, the one thread left has
        // the thread-group leader's id (de_thread's pid takeover).
        b"pidtid" => {
            if gettid() == getpid() {
                42
            } else {
                43
            }
        }
        // fds CLOSED OPEN: CLOSED must be closed, OPEN open.
        b"fds" => {
            let closed = fcntl(num(3) as i32, F_GETFD, 0) == Err(Errno::EBADF);
            let open = fcntl(num(4) as i32, F_GETFD, 0).is_ok();
            i32::from(!closed) | (i32::from(!open) << 1)
        }
        // args PID: argv[3..] and the environment as the check passed
        // them, and the pid kept across execve.
        b"args" => {
            let mut bad = 0;
            if args.len() != 6 || arg(4) != b"two words" || !arg(5).is_empty() {
                bad |= 1;
            }
            let env: Vec<&[u8]> = rt::env::vars().collect();
            if env != [&b"UT_A=1"[..], &b"UT_B=x y"[..]] {
                bad |= 2;
            }
            if getpid() as i64 != num(3) {
                bad |= 4;
            }
            bad
        }
        // itimers: ITIMER_REAL, ITIMER_VIRTUAL and ITIMER_PROF armed
        // before the exec (for 300, 200 and 100 s) are still armed, for
        // no more than that (a CPU timer may show one tick more).
        b"itimers" => {
            let mut bad = 0;
            for (bit, (which, secs)) in [(ITIMER_REAL, 300), (ITIMER_VIRTUAL, 200), (ITIMER_PROF, 100)]
                .into_iter()
                .enumerate()
            {
                let mut v = Itimerval::default();
                // SAFETY: v is a live itimerval.
                let r = unsafe { raw(nr::GETITIMER, &[which, &mut v as *mut Itimerval as usize]) };
                let us = v.value.sec * 1_000_000 + v.value.usec;
                if r.is_err() || us <= 0 || us > secs * 1_000_000 + 20_000 {
                    bad |= 1 << bit;
                }
            }
            bad
        }
        // sigstate: SIGUSR1 (was handled) is back to SIG_DFL, SIGUSR2
        // stays ignored, the mask (SIGUSR2 blocked) is kept, and the
        // alternate signal stack is gone.
        b"sigstate" => {
            let mut bad = 0;
            if rt_sigaction(SIGUSR1, None).map(|a| a.handler) != Ok(SIG_DFL) {
                bad |= 1;
            }
            if rt_sigaction(SIGUSR2, None).map(|a| a.handler) != Ok(SIG_IGN) {
                bad |= 2;
            }
            if sigprocmask(SIG_BLOCK, None) != Ok(sigbit(SIGUSR2)) {
                bad |= 4;
            }
            if sigaltstack(None).map(|s| s.flags) != Ok(SS_DISABLE) {
                bad |= 8;
            }
            bad
        }
        _ => 100,
    }
}

/// The path of this program, to execve it: argv[0] if it names a path,
/// else the first match in `$PATH`.
pub fn self_path() -> Result<Vec<u8>, Fail> {
    let argv0 = rt::env::args().first().unwrap_or(b"usertests");
    if argv0.contains(&b'/') {
        return Ok(argv0.to_vec());
    }
    let path = rt::env::var(b"PATH").unwrap_or(b"/bin:/usr/bin");
    for dir in path.split(|&b| b == b':') {
        let mut p = dir.to_vec();
        p.push(b'/');
        p.extend_from_slice(argv0);
        if rt::fs::stat(&p).is_ok() {
            return Ok(p);
        }
    }
    Err(Fail(format!("cannot find {} in $PATH", rt::io::Bytes(argv0))))
}

/// Forks, execs `usertests --child MODE ARGS...` and returns its raw wait
/// status.
fn run_child(mode: &[u8], extra: &[&[u8]]) -> Result<i32, Fail> {
    let exe = self_path()?;
    let pid = spawn(|| {
        let mut argv: Vec<&[u8]> = vec![&exe, b"--child", mode];
        argv.extend_from_slice(extra);
        let e = execve(&exe, &argv, &[]);
        200 + e.0
    })
    .ctx("fork")?;
    wait_status(pid).ctx("wait4")
}

fn fork_child_sees_parent() -> Outcome {
    let me = getpid();
    let pid = spawn(move || {
        if getppid() != me {
            return 1;
        }
        if getpid() == me {
            return 2;
        }
        0
    })
    .ctx("fork")?;
    ensure!(pid > 0 && pid != me, "fork returned {pid} in the parent");
    check_eq!(wait4(pid, 0), Ok((pid, 0)), "wait4: (pid, status)");
    Ok(())
}

fn wait_exit_status_encoding() -> Outcome {
    for (code, want) in [
        (0, 0),
        (1, 1 << 8),
        (42, 42 << 8),
        (255, 255 << 8),
        (256 + 3, 3 << 8),
        (-1, 255 << 8),
    ] {
        let pid = spawn(move || code).ctx("fork")?;
        check_eq!(wait4(pid, 0), Ok((pid, want)), "exit_group({code})");
    }
    Ok(())
}

fn wait_signal_status_encoding() -> Outcome {
    for sig in [SIGTERM, SIGKILL, SIGUSR1, SIGHUP] {
        let pid = spawn(move || {
            let _ = kill(getpid(), sig);
            // A pending fatal signal is delivered on return from kill.
            99
        })
        .ctx("fork")?;
        check_eq!(wait4(pid, 0), Ok((pid, sig)), "child killing itself with signal {sig}");
    }
    // A parent's SIGKILL while the child sleeps.
    let pid = spawn(|| {
        sleep_ms(5000);
        1
    })
    .ctx("fork")?;
    kill(pid, SIGKILL).ctx("kill")?;
    check_eq!(wait4(pid, 0), Ok((pid, SIGKILL)), "SIGKILL from the parent");
    Ok(())
}

fn wait4_wnohang() -> Outcome {
    let (pid, w) = spawn_held(7)?;
    check_eq!(
        wait4(pid, WNOHANG).map(|(p, _)| p),
        Ok(0),
        "WNOHANG while the child runs"
    );
    check_eq!(wait4(-1, WNOHANG).map(|(p, _)| p), Ok(0), "WNOHANG for any child");
    close(w);
    check_eq!(wait4(pid, 0), Ok((pid, 7 << 8)), "after the child exits");
    check_eq!(wait4(-1, WNOHANG), Err(Errno::ECHILD), "WNOHANG with no children left");
    Ok(())
}

fn wait4_any_child() -> Outcome {
    let a = spawn(|| 11).ctx("fork a")?;
    let b = spawn(|| 12).ctx("fork b")?;
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(wait4(-1, 0).ctx("wait4(-1)")?);
    }
    got.sort();
    let mut want = vec![(a, 11 << 8), (b, 12 << 8)];
    want.sort();
    check_eq!(got, want, "both children reaped with their statuses");
    check_eq!(wait4(-1, 0), Err(Errno::ECHILD), "no children left");
    Ok(())
}

fn wait4_echild() -> Outcome {
    check_eq!(wait4(-1, 0), Err(Errno::ECHILD), "wait4(-1) without children");
    check_eq!(wait4(1, 0), Err(Errno::ECHILD), "wait4(1): init is not our child");
    let pid = spawn(|| 0).ctx("fork")?;
    wait_status(pid).ctx("wait4")?;
    check_eq!(wait4(pid, 0), Err(Errno::ECHILD), "wait4 for an already reaped child");
    check_eq!(wait4(pid, 0x100), Err(Errno::EINVAL), "invalid options");
    let pid = spawn(|| 3).ctx("fork")?;
    // SAFETY: the status pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::WAIT4, &[pid as usize, BAD_LOW, 0, 0]) };
    check_eq!(r, Err(Errno::EFAULT), "status at 0x1");
    Ok(())
}

fn wait_stopped_and_continued() -> Outcome {
    let pid = spawn(|| {
        sleep_ms(5000);
        1
    })
    .ctx("fork")?;
    kill(pid, SIGSTOP).ctx("SIGSTOP")?;
    check_eq!(
        wait4(pid, WUNTRACED),
        Ok((pid, (SIGSTOP << 8) | 0x7f)),
        "WUNTRACED after SIGSTOP"
    );
    check_eq!(wait4(pid, WUNTRACED | WNOHANG), Ok((0, 0)), "the stop is reported once");
    kill(pid, SIGCONT).ctx("SIGCONT")?;
    check_eq!(wait4(pid, WCONTINUED), Ok((pid, 0xffff)), "WCONTINUED after SIGCONT");
    kill(pid, SIGKILL).ctx("SIGKILL")?;
    check_eq!(wait4(pid, 0), Ok((pid, SIGKILL)), "killed");
    Ok(())
}

fn waitid(idtype: usize, id: i32, options: usize) -> Result<SigInfo, Errno> {
    let mut info = SigInfo::zeroed();
    info.signo = 0x5555;
    info.fields[0] = 0x5555_5555_5555_5555;
    // SAFETY: info is a live siginfo_t; no rusage.
    unsafe {
        raw(
            nr::WAITID,
            &[idtype, id as usize, &mut info as *mut SigInfo as usize, options, 0],
        )
    }?;
    Ok(info)
}

fn waitid_siginfo() -> Outcome {
    let pid = spawn(|| 9).ctx("fork")?;
    let info = waitid(P_PID, pid, WEXITED).ctx("waitid")?;
    check_eq!(
        (info.signo, info.code, info.pid(), info.status()),
        (SIGCHLD, CLD_EXITED, pid, 9),
        "(si_signo, si_code, si_pid, si_status) of an exit"
    );
    let uid = call(nr::GETUID, &[]).unwrap_or(0) as u32;
    check_eq!(info.uid(), uid, "si_uid");
    let pid = spawn(|| {
        sleep_ms(5000);
        0
    })
    .ctx("fork")?;
    kill(pid, SIGTERM).ctx("kill")?;
    let info = waitid(P_ALL, 0, WEXITED).ctx("waitid")?;
    check_eq!(
        (info.code, info.pid(), info.status()),
        (CLD_KILLED, pid, SIGTERM),
        "(si_code, si_pid, si_status) of a kill"
    );
    Ok(())
}

fn waitid_wnowait_wnohang_errors() -> Outcome {
    let (pid, w) = spawn_held(5)?;
    let info = waitid(P_PID, pid, WEXITED | WNOHANG).ctx("waitid WNOHANG")?;
    check_eq!(
        (info.signo, info.pid()),
        (0, 0),
        "WNOHANG with nothing to report zeroes si_signo and si_pid"
    );
    close(w);
    let info = waitid(P_PID, pid, WEXITED | WNOWAIT).ctx("waitid WNOWAIT")?;
    check_eq!((info.pid(), info.status()), (pid, 5), "WNOWAIT reports the exit");
    check_eq!(
        wait4(pid, 0),
        Ok((pid, 5 << 8)),
        "the child is still waitable after WNOWAIT"
    );
    check_eq!(
        waitid(P_PID, pid, WEXITED).map(drop),
        Err(Errno::ECHILD),
        "reaped child"
    );
    check_eq!(waitid(P_ALL, 0, 0).map(drop), Err(Errno::EINVAL), "options 0");
    check_eq!(waitid(7, 0, WEXITED).map(drop), Err(Errno::EINVAL), "idtype 7");
    Ok(())
}

fn cow_heap_stack_mmap_isolated() -> Outcome {
    let mut heap = alloc::boxed::Box::new(1u64);
    let mut stack = 1u64;
    let map = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    // SAFETY: map is a fresh private page of ours.
    unsafe { store(map, 1) };
    let stack_addr = &mut stack as *mut u64;
    let heap_addr = &mut *heap as *mut u64;
    let [r, w] = pipe().ctx("pipe")?;
    let pid = spawn(|| {
        // SAFETY: the child's copies of the three words.
        unsafe {
            core::ptr::write_volatile(stack_addr, 2);
            core::ptr::write_volatile(heap_addr, 2);
            store(map, 2);
        }
        // Let the parent write its own values, then read ours back.
        let mut b = [0u8; 1];
        let _ = read(r, &mut b);
        // SAFETY: as above.
        let seen = unsafe {
            [
                core::ptr::read_volatile(stack_addr),
                core::ptr::read_volatile(heap_addr),
                load(map),
            ]
        };
        i32::from(seen != [2, 2, 2])
    })
    .ctx("fork")?;
    // SAFETY: the parent's own words.
    unsafe {
        core::ptr::write_volatile(stack_addr, 3);
        core::ptr::write_volatile(heap_addr, 3);
        store(map, 3);
    }
    write(w, b"g").ctx("write")?;
    check_eq!(wait_status(pid), Ok(0), "the child saw only its own writes");
    // SAFETY: as above.
    let seen = unsafe {
        [
            core::ptr::read_volatile(stack_addr),
            core::ptr::read_volatile(heap_addr),
            load(map),
        ]
    };
    check_eq!(
        seen,
        [3, 3, 3],
        "the parent saw only its own writes (stack, heap, mmap)"
    );
    Ok(())
}

fn exit_and_exit_group() -> Outcome {
    let pid = spawn(|| {
        let _ = call(nr::EXIT, &[77]);
        1
    })
    .ctx("fork")?;
    check_eq!(
        wait4(pid, 0),
        Ok((pid, 77 << 8)),
        "exit(77) of a single-threaded process"
    );
    let pid = spawn(|| {
        let _ = call(nr::EXIT_GROUP, &[0x1234]);
        1
    })
    .ctx("fork")?;
    check_eq!(
        wait4(pid, 0),
        Ok((pid, 0x34 << 8)),
        "exit_group(0x1234) keeps the low byte"
    );
    Ok(())
}

fn getpid_gettid_set_tid_address() -> Outcome {
    let pid = getpid();
    ensure!(pid > 1, "getpid gave {pid}");
    check_eq!(gettid(), pid, "gettid of the main thread is the pid");
    let mut word = 0u32;
    // SAFETY: word lives until the end of this process (which is the check).
    let r = unsafe { raw(nr::SET_TID_ADDRESS, &[&mut word as *mut u32 as usize]) };
    check_eq!(r, Ok(pid as usize), "set_tid_address returns the tid");
    let parent = getppid();
    ensure!(parent > 0 && parent != pid, "getppid gave {parent}");
    Ok(())
}

fn uid_gid_consistent() -> Outcome {
    let ids: Vec<usize> = [nr::GETUID, nr::GETEUID, nr::GETGID, nr::GETEGID]
        .iter()
        .map(|&n| call(n, &[]).unwrap_or(usize::MAX))
        .collect();
    check_eq!(ids[0], ids[1], "uid == euid");
    check_eq!(ids[2], ids[3], "gid == egid");
    ensure!(ids.iter().all(|&i| i < 1 << 32), "ids out of range: {ids:?}");
    let path = scratch("owner");
    write_file(&path, b"", 0o644).ctx("create")?;
    let st = rt::fs::stat(&path).ctx("stat")?;
    check_eq!(
        (st.st_uid as usize, st.st_gid as usize),
        (ids[1], ids[3]),
        "a new file's owner"
    );
    remove(&path);
    Ok(())
}

fn execve_args_env_pid() -> Outcome {
    let exe = self_path()?;
    let pid = spawn(|| {
        let me = format!("{}", getpid());
        let argv: [&[u8]; 6] = [&exe, b"--child", b"args", me.as_bytes(), b"two words", b""];
        let e = execve(&exe, &argv, &[b"UT_A=1", b"UT_B=x y"]);
        200 + e.0
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(0),
        "exec'd child's verdict on argv (1), envp (2), pid (4), as exit code << 8"
    );
    Ok(())
}

fn execve_close_on_exec() -> Outcome {
    let (path, fd) = {
        let p = scratch("cloexec");
        write_file(&p, b"", 0o644).ctx("create")?;
        let fd = open(&p, O_RDONLY | O_CLOEXEC, 0).ctx("open")?;
        (p, fd)
    };
    let keep = rt::fs::dup3(fd, 20, 0).ctx("dup3 without O_CLOEXEC")?;
    check_eq!(fcntl(fd, F_GETFD, 0), Ok(FD_CLOEXEC), "FD_CLOEXEC set");
    let a = format!("{fd}");
    let b = format!("{keep}");
    let st = run_child(b"fds", &[a.as_bytes(), b.as_bytes()])?;
    check_eq!(st, 0, "exec'd child: O_CLOEXEC fd closed (1), plain fd open (2)");
    // F_SETFD works the same way.
    fcntl(keep, F_SETFD, FD_CLOEXEC).ctx("F_SETFD")?;
    fcntl(fd, F_SETFD, 0).ctx("F_SETFD 0")?;
    let st = run_child(b"fds", &[b.as_bytes(), a.as_bytes()])?;
    check_eq!(st, 0, "after F_SETFD: FD_CLOEXEC fd closed (1), cleared one open (2)");
    remove(&path);
    Ok(())
}

extern "C" fn noop_handler(_: i32, _: *mut SigInfo, _: *mut UContext) {}

/// execve keeps the process's interval timers, real and CPU-time (Linux
/// keeps `signal_struct`'s `real_timer` and `it[]` across exec).
fn interval_timers_survive_execve() -> Outcome {
    let exe = self_path()?;
    let pid = spawn(|| {
        for (which, secs) in [(ITIMER_REAL, 300), (ITIMER_VIRTUAL, 200), (ITIMER_PROF, 100)] {
            let v = Itimerval {
                interval: Timeval::default(),
                value: Timeval { sec: secs, usec: 0 },
            };
            if setitimer(which, &v).is_err() {
                return 100;
            }
        }
        let e = execve(&exe, &[&exe, b"--child", b"itimers"], &[]);
        200 + e.0
    })
    .ctx("fork")?;
    let st = wait_status(pid).ctx("wait4")?;
    check_eq!(st, 0, "exec'd child: REAL (1), VIRTUAL (2), PROF (4) still armed");
    Ok(())
}

fn execve_signal_state() -> Outcome {
    handle(SIGUSR1, noop_handler, 0, 0).ctx("handle SIGUSR1")?;
    disposition(SIGUSR2, SIG_IGN).ctx("ignore SIGUSR2")?;
    sigprocmask(SIG_SETMASK, Some(sigbit(SIGUSR2))).ctx("block SIGUSR2")?;
    let stack = mmap_anon(4 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    sigaltstack(Some(&Stack {
        sp: stack,
        flags: 0,
        size: 4 * PAGE,
    }))
    .ctx("sigaltstack")?;
    let st = run_child(b"sigstate", &[])?;
    check_eq!(
        st,
        0,
        "exec'd child: handler reset to SIG_DFL (1), SIG_IGN kept (2), mask kept (4), altstack cleared (8), as code << 8"
    );
    Ok(())
}

fn execve_raw(path: usize, argv: usize, envp: usize) -> Errno {
    // SAFETY: each pointer is either a live NUL/NULL-terminated object of
    // the caller or unmapped; the kernel must refuse unmapped ones.
    match unsafe { raw(nr::EXECVE, &[path, argv, envp]) } {
        Ok(_) => Errno(0),
        Err(e) => e,
    }
}

fn execve_errors() -> Outcome {
    let garbage = scratch("garbage");
    write_file(&garbage, b"\x7fELG this is not an executable at all\n", 0o755).ctx("create garbage")?;
    check_eq!(
        execve(&garbage, &[b"garbage"], &[]),
        Errno::ENOEXEC,
        "garbage with x permission"
    );
    let exe = self_path()?;
    let copy = scratch("noexec");
    let fd = open(&exe, O_RDONLY, 0).ctx("open self")?;
    let mut elf = vec![0u8; 64];
    check_eq!(read(fd, &mut elf), Ok(64), "read ELF header");
    close(fd);
    write_file(&copy, &elf, 0o644).ctx("create 0644 file")?;
    check_eq!(
        execve(&copy, &[b"noexec"], &[]),
        Errno::EACCES,
        "file without x permission"
    );
    check_eq!(execve(b"/tmp", &[b"tmp"], &[]), Errno::EACCES, "a directory");
    check_eq!(execve(b"/tmp/ut-missing", &[b"x"], &[]), Errno::ENOENT, "missing file");
    let mut below = garbage.clone();
    below.extend_from_slice(b"/x");
    check_eq!(
        execve(&below, &[b"x"], &[]),
        Errno::ENOTDIR,
        "a file used as a directory"
    );
    let argv = [exe.as_ptr(), core::ptr::null()];
    check_eq!(
        execve_raw(BAD_LOW, argv.as_ptr() as usize, 0),
        Errno::EFAULT,
        "path at 0x1"
    );
    let p = cstr(&exe);
    check_eq!(
        execve_raw(p.as_ptr() as usize, BAD_LOW, 0),
        Errno::EFAULT,
        "argv at 0x1"
    );
    let bad_argv = [p.as_ptr() as usize, BAD_KERNEL, 0];
    check_eq!(
        execve_raw(p.as_ptr() as usize, bad_argv.as_ptr() as usize, 0),
        Errno::EFAULT,
        "argv[1] in the kernel half"
    );
    // The process survives all of these.
    check_eq!(getpid() > 0, true, "still running");
    remove(&garbage);
    remove(&copy);
    Ok(())
}

fn execve_e2big() -> Outcome {
    let exe = self_path()?;
    // A single string longer than MAX_ARG_STRLEN (32 pages).
    let mut huge = vec![b'a'; 33 * PAGE];
    huge.push(0);
    let p = cstr(&exe);
    let argv = [p.as_ptr(), huge.as_ptr(), core::ptr::null()];
    check_eq!(
        execve_raw(p.as_ptr() as usize, argv.as_ptr() as usize, 0),
        Errno::E2BIG,
        "one 132 KiB argument"
    );
    Ok(())
}

fn setsid_getsid_getpgid() -> Outcome {
    let my_sid = call(nr::GETSID, &[0]).ctx("getsid(0)")?;
    check_eq!(
        call(nr::GETSID, &[getpid() as usize]),
        Ok(my_sid),
        "getsid(self) == getsid(0)"
    );
    let my_pgid = call(nr::GETPGID, &[0]).ctx("getpgid(0)")?;
    let parent = getpid();
    let pid = spawn(move || {
        let me = getpid() as usize;
        let mut bad = 0;
        if call(nr::GETPGID, &[0]) != Ok(my_pgid) || call(nr::GETSID, &[0]) != Ok(my_sid) {
            bad |= 1; // inherited group and session
        }
        if call(nr::SETSID, &[]) != Ok(me) {
            bad |= 2;
        }
        if call(nr::GETSID, &[0]) != Ok(me) || call(nr::GETPGID, &[0]) != Ok(me) {
            bad |= 4;
        }
        if call(nr::SETSID, &[]) != Err(Errno::EPERM) {
            bad |= 8; // already a group leader
        }
        if call(nr::GETSID, &[parent as usize]) != Ok(my_sid) {
            bad |= 16;
        }
        bad
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(0),
        "child's verdict (inherit 1, setsid 2, new ids 4, EPERM 8, parent's sid 16) << 8"
    );
    check_eq!(
        call(nr::GETSID, &[0x3fff_fff0]),
        Err(Errno::ESRCH),
        "getsid of a missing pid"
    );
    check_eq!(
        call(nr::GETPGID, &[0x3fff_fff0]),
        Err(Errno::ESRCH),
        "getpgid of a missing pid"
    );
    Ok(())
}

fn setpgid_and_group_kill() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    let pid = spawn(|| {
        close(w);
        let mut b = [0u8; 1];
        let _ = read(r, &mut b);
        sleep_ms(5000);
        1
    })
    .ctx("fork")?;
    close(r);
    check_eq!(call(nr::SETPGID, &[pid as usize, 0]), Ok(0), "setpgid(child, 0)");
    check_eq!(
        call(nr::GETPGID, &[pid as usize]),
        Ok(pid as usize),
        "the child leads its own group"
    );
    check_eq!(
        call(nr::SETPGID, &[pid as usize, (-5i64) as usize]),
        Err(Errno::EINVAL),
        "negative pgid"
    );
    check_eq!(
        call(nr::SETPGID, &[0x3fff_fff0, 0]),
        Err(Errno::ESRCH),
        "setpgid of a missing pid"
    );
    check_eq!(
        call(nr::SETPGID, &[1, 0]),
        Err(Errno::ESRCH),
        "setpgid of a non-child (init)"
    );
    check_eq!(kill(-pid, SIGTERM), Ok(0), "kill(-pgid, SIGTERM)");
    check_eq!(wait4(pid, 0), Ok((pid, SIGTERM)), "the group member died of SIGTERM");
    close(w);
    check_eq!(kill(-pid, SIGTERM), Err(Errno::ESRCH), "kill of an empty group");
    Ok(())
}

fn kill_probe_and_errors() -> Outcome {
    check_eq!(kill(getpid(), 0), Ok(0), "kill(self, 0)");
    check_eq!(kill(getppid(), 0), Ok(0), "kill(parent, 0)");
    let pid = spawn(|| 0).ctx("fork")?;
    wait_status(pid).ctx("wait")?;
    check_eq!(kill(pid, 0), Err(Errno::ESRCH), "kill(reaped child, 0)");
    check_eq!(kill(getpid(), 65), Err(Errno::EINVAL), "signal 65");
    check_eq!(kill(getpid(), -1), Err(Errno::EINVAL), "signal -1");
    check_eq!(
        call(nr::TKILL, &[gettid() as usize, 65]),
        Err(Errno::EINVAL),
        "tkill signal 65"
    );
    check_eq!(call(nr::TKILL, &[0, 0]), Err(Errno::EINVAL), "tkill tid 0");
    check_eq!(
        tgkill(getpid(), 0x3fff_fff0, 0),
        Err(Errno::ESRCH),
        "tgkill of a missing tid"
    );
    check_eq!(
        tgkill(getppid(), gettid(), 0),
        Err(Errno::ESRCH),
        "tgkill with the wrong tgid"
    );
    check_eq!(tgkill(getpid(), gettid(), 0), Ok(0), "tgkill(self, 0)");
    Ok(())
}

fn orphan_reparented_to_init() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    let middle = spawn(|| {
        let middle = getpid();
        match fork() {
            Ok(0) => {
                // Wait (at most 2 s) for the middle process to die.
                let mut ppid = getppid();
                for _ in 0..2000 {
                    if ppid != middle {
                        break;
                    }
                    sleep_ms(1);
                    ppid = getppid();
                }
                let _ = write(w, &ppid.to_ne_bytes());
                exit_group(0)
            }
            Ok(_) => 0,
            Err(_) => 1,
        }
    })
    .ctx("fork")?;
    close(w);
    check_eq!(wait_status(middle), Ok(0), "middle process");
    let mut b = [0u8; 4];
    check_eq!(read(r, &mut b), Ok(4), "the orphan's report");
    let ppid = i32::from_ne_bytes(b);
    ensure!(
        ppid != middle,
        "the orphan's parent is still the dead middle process {middle}"
    );
    check_eq!(ppid, 1, "the orphan's new parent");
    Ok(())
}

fn uname_linux_aarch64() -> Outcome {
    let mut u = [0xffu8; 6 * 65];
    // SAFETY: u is a live struct utsname.
    check_eq!(unsafe { raw(nr::UNAME, &[u.as_mut_ptr() as usize]) }, Ok(0), "uname");
    let field = |i: usize| {
        let f = &u[i * 65..(i + 1) * 65];
        let end = f.iter().position(|&b| b == 0).unwrap_or(65);
        f[..end].to_vec()
    };
    check_eq!(rt::io::Bytes(&field(0)).to_string(), "Linux", "sysname");
    check_eq!(rt::io::Bytes(&field(4)).to_string(), "aarch64", "machine");
    ensure!(!field(2).is_empty(), "empty release");
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(nr::UNAME, &[BAD_LOW]) },
        Err(Errno::EFAULT),
        "uname into 0x1"
    );
    Ok(())
}

fn prctl_set_get_name() -> Outcome {
    let get = || {
        let mut n = [0xffu8; 16];
        // SAFETY: PR_GET_NAME writes 16 bytes into n.
        unsafe { raw(nr::PRCTL, &[PR_GET_NAME, n.as_mut_ptr() as usize]) }.map(|_| n)
    };
    let set = |s: &[u8]| {
        let c = cstr(s);
        // SAFETY: c is NUL-terminated.
        unsafe { raw(nr::PRCTL, &[PR_SET_NAME, c.as_ptr() as usize]) }
    };
    check_eq!(set(b"ut-name"), Ok(0), "PR_SET_NAME");
    check_eq!(get(), Ok(*b"ut-name\0\0\0\0\0\0\0\0\0"), "PR_GET_NAME");
    check_eq!(set(b"a-name-longer-than-fifteen"), Ok(0), "PR_SET_NAME of a long name");
    check_eq!(get(), Ok(*b"a-name-longer-t\0"), "the name is cut to 15 bytes");
    check_eq!(call(nr::PRCTL, &[0x7fff_0000]), Err(Errno::EINVAL), "unknown option");
    // SAFETY: the pointer is not mapped; the kernel must refuse it.
    check_eq!(
        unsafe { raw(nr::PRCTL, &[PR_SET_NAME, BAD_LOW]) },
        Err(Errno::EFAULT),
        "name at 0x1"
    );
    Ok(())
}

fn get_name() -> Result<[u8; 16], Errno> {
    let mut n = [0xffu8; 16];
    // SAFETY: PR_GET_NAME writes 16 bytes into n.
    unsafe { raw(nr::PRCTL, &[PR_GET_NAME, n.as_mut_ptr() as usize]) }.map(|_| n)
}

fn write_path(path: &[u8], data: &[u8]) -> Result<usize, Errno> {
    let fd = open(path, O_WRONLY | O_CLOEXEC, 0)?;
    let r = write(fd, data);
    close(fd);
    r
}

/// Linux's comm_write: the first 15 bytes written, a newline included,
/// name a thread of the writer's own thread group (PR_GET_NAME sees it);
/// an empty write empties the name; another process's comm is EINVAL
/// (root may open it); every byte counts as written.
fn proc_comm_write_renames_threads_of_the_writer_only() -> Outcome {
    check_eq!(write_path(b"/proc/self/comm", b"ut-comm\n"), Ok(8), "write comm");
    check_eq!(get_name(), Ok(*b"ut-comm\n\0\0\0\0\0\0\0\0"), "the newline is kept");
    check_eq!(
        write_path(b"/proc/self/comm", b"0123456789abcdefXYZ"),
        Ok(19),
        "a long name"
    );
    check_eq!(get_name(), Ok(*b"0123456789abcde\0"), "cut to 15 bytes");
    let task = format!("/proc/self/task/{}/comm", gettid());
    check_eq!(write_path(task.as_bytes(), b"t-name"), Ok(6), "write task/TID/comm");
    check_eq!(get_name(), Ok(*b"t-name\0\0\0\0\0\0\0\0\0\0"), "task comm");
    check_eq!(write_path(b"/proc/self/comm", b"ab\0cd"), Ok(5), "a NUL inside");
    check_eq!(get_name(), Ok(*b"ab\0\0\0\0\0\0\0\0\0\0\0\0\0\0"), "cut at the NUL");
    check_eq!(write_path(b"/proc/self/comm", b""), Ok(0), "an empty write");
    check_eq!(get_name(), Ok([0u8; 16]), "an empty write empties the name");
    if call(nr::GETEUID, &[]) == Ok(0) {
        check_eq!(
            write_path(b"/proc/1/comm", b"x"),
            Err(Errno::EINVAL),
            "another process's comm"
        );
    }
    Ok(())
}

fn sched_yield_returns_0() -> Outcome {
    for _ in 0..10 {
        check_eq!(call(nr::SCHED_YIELD, &[]), Ok(0), "sched_yield");
    }
    Ok(())
}

fn unknown_syscall_enosys() -> Outcome {
    for n in [1000, 5000, 0x7fff_ffff] {
        check_eq!(call(n, &[1, 2, 3]), Err(Errno::ENOSYS), "system call {n:#x}");
    }
    Ok(())
}

/// Forks a child that exits with `code` once the returned pipe write end
/// is closed: until then it is alive and has nothing to report.
fn spawn_held(code: i32) -> Result<(i32, i32), crate::Fail> {
    let [r, w] = pipe().ctx("pipe")?;
    let pid = spawn(move || {
        close(w);
        let mut b = [0u8; 1];
        let _ = read(r, &mut b);
        code
    })
    .ctx("fork")?;
    close(r);
    Ok((pid, w))
}

/// A CLONE_PARENT child's exit signal is the caller's (its group
/// leader's), whatever the flags say: a fork's child cloning with signal 0
/// makes a sibling its parent waits for without __WCLONE.
fn clone_parent_child_takes_the_callers_exit_signal() -> Outcome {
    const CLONE_PARENT: usize = 0x8000;
    let middle = spawn(|| match call(nr::CLONE, &[CLONE_PARENT, 0, 0, 0, 0]) {
        Ok(0) => exit_group(7),
        Ok(_) => 0,
        Err(_) => 2,
    })
    .ctx("fork")?;
    check_eq!(wait_status(middle), Ok(0), "the caller: clone worked");
    // The sibling, with SIGCHLD as its exit signal: plain wait4 finds it.
    let deadline = now_ns() + 5_000_000_000;
    loop {
        match wait4(-1, WNOHANG) {
            Ok((0, _)) if now_ns() < deadline => sleep_ms(2),
            Ok((pid, status)) => {
                ensure!(pid > 0, "no sibling reaped after 5 s");
                check_eq!(status, 7 << 8, "the sibling's status");
                return Ok(());
            }
            Err(e) => return Err(Fail(format!("plain wait4 for the sibling: {e:?}"))),
        }
    }
}

/// sys_clone takes any exit signal in the flags' low byte (Linux checks it
/// only in clone3): 100 and 65 are taken, and, being no signal, are never
/// sent; the children are clone children (__WALL/__WCLONE to wait for).
fn clone_takes_any_exit_signal_and_sends_only_a_valid_one() -> Outcome {
    const WALL: usize = 0x4000_0000;
    for sig in [100usize, 65] {
        let pid = match call(nr::CLONE, &[sig, 0, 0, 0, 0]) {
            Ok(0) => exit_group(5),
            Ok(pid) => pid as i32,
            Err(e) => return Err(Fail(format!("clone with exit signal {sig}: {e:?}"))),
        };
        check_eq!(wait4(pid, 0), Err(Errno::ECHILD), "plain wait4 of a clone child");
        check_eq!(wait4(pid, WALL), Ok((pid, 5 << 8)), "__WALL wait4");
    }
    Ok(())
}

/// clone(CLONE_PARENT) makes the new process a child of the caller's
/// parent: the caller cannot wait for it, its parent can.
fn clone_parent_child_is_a_sibling_of_the_caller() -> Outcome {
    const CLONE_PARENT: usize = 0x8000;
    let me = getpid();
    let [r, w] = pipe().ctx("pipe")?;
    let middle = spawn(|| {
        let pid = match call(nr::CLONE, &[CLONE_PARENT | SIGCHLD as usize, 0, 0, 0, 0]) {
            Ok(0) => exit_group(if getppid() == me { 7 } else { 8 }),
            Ok(pid) => pid as i32,
            Err(_) => return 2,
        };
        let _ = write(w, &pid.to_le_bytes());
        // Not this process's child.
        if wait4(pid, 0) != Err(Errno::ECHILD) {
            return 3;
        }
        0
    })
    .ctx("fork")?;
    close(w);
    let mut b = [0u8; 4];
    check_eq!(read(r, &mut b), Ok(4), "the sibling's pid");
    close(r);
    let sibling = i32::from_le_bytes(b);
    check_eq!(wait_status(middle), Ok(0), "the caller: clone worked, wait gave ECHILD");
    check_eq!(
        wait_status(sibling),
        Ok(7 << 8),
        "the sibling is ours and saw us as its parent"
    );
    Ok(())
}
