//! Process lifecycle races and corner cases: clone racing exit_group,
//! CLONE_CHILD_SETTID in a fork, killable vfork waits, a CLONE_THREAD
//! vfork, and wait4 from several threads. Each racy part runs in a forked
//! child that the check reaps within a deadline, so a regression fails
//! instead of hanging.
//!
//! The thread functions here must not allocate: `rt`'s heap has no lock.

use core::sync::atomic::{AtomicI32, AtomicU32, Ordering::SeqCst};

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Fail, Outcome};

pub static CHECKS: &[Check] = checks![
    clone_child_settid_in_fork_leaves_parent_memory,
    vfork_parent_dies_of_sigkill,
    clone_thread_vfork_returns_when_thread_exits,
    wait4_from_threads_reaps_a_child_once,
    clone_thread_racing_exit_group_leaves_no_thread,
    clone_fs_shares_cwd_and_umask,
    execve_in_threaded_process_kills_the_other_threads,
    execve_from_two_threads_at_once_one_wins,
    execve_from_a_thread_takes_over_the_leaders_pid,
];

use super::thread::usertests_clone;

const CLONE_VFORK: usize = 0x4000;
const CLONE_CHILD_SETTID: usize = 0x100_0000;
const THREAD: usize = CLONE_VM | CLONE_SIGHAND | CLONE_THREAD;

/// Reaps `pid` within `ms` milliseconds; past that, kills it and fails.
fn reap_within(pid: i32, ms: i64, what: &str) -> Result<i32, Fail> {
    let deadline = now_ns() + ms * 1_000_000;
    loop {
        match wait4(pid, WNOHANG) {
            Ok((p, status)) if p == pid => return Ok(status),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(Fail(alloc::format!("{what}: wait4: {e:?}"))),
        }
        if now_ns() > deadline {
            let _ = kill(pid, SIGKILL);
            let _ = wait_status(pid);
            return Err(Fail(alloc::format!("{what}: still running after {ms} ms")));
        }
        sleep_ms(2);
    }
}

/// Written by a forked child's CLONE_CHILD_SETTID: in .data and .rodata.
static mut DATA_WORD: u32 = 0x1111_1111;
static RO_WORD: u32 = 0x2222_2222;

fn settid_fork(addr: usize) -> Result<i32, Errno> {
    call(nr::CLONE, &[SIGCHLD as usize | CLONE_CHILD_SETTID, 0, 0, 0, addr]).map(|p| p as i32)
}

fn clone_child_settid_in_fork_leaves_parent_memory() -> Outcome {
    let data = &raw mut DATA_WORD as usize;
    let pid = settid_fork(data).ctx("clone CHILD_SETTID on .data")?;
    if pid == 0 {
        // SAFETY: our own copy of the word, read once.
        let seen = unsafe { core::ptr::read_volatile(data as *const u32) };
        exit_group(i32::from(seen != gettid() as u32));
    }
    check_eq!(reap_within(pid, 3000, "child")?, 0, "the child's copy holds its tid");
    // SAFETY: a plain read of our word; the child is gone.
    let parent = unsafe { core::ptr::read_volatile(data as *const u32) };
    check_eq!(parent, 0x1111_1111, "the parent's .data word (copy-on-write)");

    let ro = &RO_WORD as *const u32 as usize;
    let pid = settid_fork(ro).ctx("clone CHILD_SETTID on .rodata")?;
    if pid == 0 {
        // SAFETY: a read-only static, read through a volatile pointer so
        // that the compiler does not fold it.
        let seen = unsafe { core::ptr::read_volatile(ro as *const u32) };
        exit_group(i32::from(seen != 0x2222_2222));
    }
    check_eq!(
        reap_within(pid, 3000, "child")?,
        0,
        "the child's read-only word is not written (the fault is ignored)"
    );
    // SAFETY: as above.
    let parent = unsafe { core::ptr::read_volatile(ro as *const u32) };
    check_eq!(parent, 0x2222_2222, "the parent's .rodata word");
    Ok(())
}

fn vfork_parent_dies_of_sigkill() -> Outcome {
    let p = spawn(|| {
        // A vfork without CLONE_VM: the child has its own copy, and keeps
        // the parent waiting for 2 s.
        match call(nr::CLONE, &[SIGCHLD as usize | CLONE_VFORK, 0, 0, 0, 0]) {
            Ok(0) => {
                sleep_ms(2000);
                exit_group(0)
            }
            Ok(_) => 3,
            Err(_) => 4,
        }
    })
    .ctx("fork")?;
    sleep_ms(100);
    kill(p, SIGKILL).ctx("kill")?;
    let status = reap_within(p, 1000, "the SIGKILLed vfork parent")?;
    check_eq!(status, SIGKILL, "the vfork parent's status (killed by SIGKILL)");
    Ok(())
}

extern "C" fn thread_exits(_: usize) -> usize {
    0
}

fn clone_thread_vfork_returns_when_thread_exits() -> Outcome {
    let p = spawn(|| {
        let Ok(stack) = mmap_anon(64 * 1024, PROT_READ | PROT_WRITE) else {
            return 2;
        };
        let flags = THREAD | CLONE_VFORK;
        // SAFETY: the thread runs `thread_exits` on its own stack and exits.
        let r = unsafe {
            usertests_clone(
                flags,
                stack + 64 * 1024,
                core::ptr::null_mut(),
                0,
                core::ptr::null_mut(),
                thread_exits,
                0,
            )
        };
        if r > 0 {
            5
        } else {
            6
        }
    })
    .ctx("fork")?;
    let status = reap_within(p, 3000, "the CLONE_THREAD|CLONE_VFORK caller")?;
    check_eq!(status, 5 << 8, "the caller returned from clone with a tid");
    Ok(())
}

/// wait4 results of the waiting threads: the pid reaped, or -errno.
static WAITED: [AtomicI32; 3] = [AtomicI32::new(0), AtomicI32::new(0), AtomicI32::new(0)];
static DONE: AtomicU32 = AtomicU32::new(0);

/// wait4(-1, WNOHANG) until a child is reaped or none is left: polling
/// from four threads at once makes them collide on the zombie.
fn poll_wait_any() -> i32 {
    loop {
        match wait4(-1, WNOHANG) {
            Ok((0, _)) | Err(Errno::EINTR) => {}
            Ok((pid, _)) => return pid,
            Err(e) => return -e.0,
        }
    }
}

extern "C" fn thread_waits_any(i: usize) -> usize {
    WAITED[i].store(poll_wait_any(), SeqCst);
    DONE.fetch_add(1, SeqCst);
    // Stay alive (off the stack's frame) until the group exits.
    loop {
        sleep_ms(1000);
    }
}

fn wait4_from_threads_reaps_a_child_once() -> Outcome {
    for round in 0..20 {
        let p = spawn(|| {
            let Ok(stacks) = mmap_anon(3 * 64 * 1024, PROT_READ | PROT_WRITE) else {
                return 2;
            };
            let Ok(child) = spawn(|| {
                sleep_ms(30);
                0
            }) else {
                return 3;
            };
            for i in 0..3 {
                let top = stacks + (i + 1) * 64 * 1024;
                // SAFETY: each thread has its own stack and touches atomics.
                let r = unsafe {
                    usertests_clone(
                        THREAD,
                        top,
                        core::ptr::null_mut(),
                        0,
                        core::ptr::null_mut(),
                        thread_waits_any,
                        i,
                    )
                };
                if r <= 0 {
                    return 4;
                }
            }
            let mine = poll_wait_any();
            while DONE.load(SeqCst) < 3 {
                sleep_ms(1);
            }
            let results = [
                mine,
                WAITED[0].load(SeqCst),
                WAITED[1].load(SeqCst),
                WAITED[2].load(SeqCst),
            ];
            let reaped = results.iter().filter(|&&r| r == child).count();
            let echild = results.iter().filter(|&&r| r == -Errno::ECHILD.0).count();
            if reaped == 1 && echild == 3 {
                0
            } else {
                10 + reaped as i32
            }
        })
        .ctx("fork")?;
        let status = reap_within(p, 3000, "the waiting process")?;
        check_eq!(
            status,
            0,
            "round {round}: one waiter reaps, three get ECHILD (11+n: n reaps)"
        );
    }
    Ok(())
}

static CLONED: AtomicU32 = AtomicU32::new(0);
const RACE_STACK: usize = 16 * 1024;
const RACE_THREADS: usize = 32;

extern "C" fn thread_spins(_: usize) -> usize {
    loop {
        let _ = call(nr::SCHED_YIELD, &[]);
    }
}

/// Clones spinning threads as fast as it can, each on its own stack.
extern "C" fn thread_clones(stacks: usize) -> usize {
    for i in 1..RACE_THREADS {
        let top = stacks + (i + 1) * RACE_STACK;
        // SAFETY: each thread has its own stack and spins without memory.
        let r = unsafe {
            usertests_clone(
                THREAD,
                top,
                core::ptr::null_mut(),
                0,
                core::ptr::null_mut(),
                thread_spins,
                0,
            )
        };
        if r > 0 {
            CLONED.fetch_add(1, SeqCst);
        }
    }
    thread_spins(0)
}

fn clone_thread_racing_exit_group_leaves_no_thread() -> Outcome {
    for round in 0..20 {
        let p = spawn(|| {
            let Ok(stacks) = mmap_anon(RACE_THREADS * RACE_STACK + RACE_STACK, PROT_READ | PROT_WRITE) else {
                return 2;
            };
            // SAFETY: the cloner runs on the first stack.
            let r = unsafe {
                usertests_clone(
                    THREAD,
                    stacks + RACE_STACK,
                    core::ptr::null_mut(),
                    0,
                    core::ptr::null_mut(),
                    thread_clones,
                    stacks,
                )
            };
            if r <= 0 {
                return 3;
            }
            // Exit while the cloner is (most likely) inside clone.
            let want = (round % 4) as u32;
            while CLONED.load(SeqCst) < want {
                core::hint::spin_loop();
            }
            7
        })
        .ctx("fork")?;
        let status = reap_within(p, 3000, "the exit_group'ed process")?;
        ensure!(status == 7 << 8, "round {round}: status {status:#x}, want 0x700");
    }
    Ok(())
}

const CLONE_FS: usize = 0x200;
const NR_GETCWD: usize = 17;
const NR_CHDIR: usize = 49;
const NR_UMASK: usize = 166;

fn chdir(path: &[u8]) -> Result<usize, Errno> {
    let p = cstr(path);
    // SAFETY: p is a NUL-terminated path that outlives the call.
    unsafe { raw(NR_CHDIR, &[p.as_ptr() as usize]) }
}

fn getcwd(buf: &mut [u8]) -> Result<&[u8], Errno> {
    // SAFETY: buf is writable for its length.
    let n = unsafe { raw(NR_GETCWD, &[buf.as_mut_ptr() as usize, buf.len()]) }?;
    Ok(&buf[..n.saturating_sub(1)])
}

/// With CLONE_FS, a chdir and umask in the child are the parent's too
/// (Linux's shared fs_struct); without it, they are not.
fn clone_fs_shares_cwd_and_umask() -> Outcome {
    let p = spawn(|| {
        let mut bad = 0;
        for (flags, want_cwd, want_umask) in [(0, &b"/"[..], 0o022), (CLONE_FS, b"/tmp", 0o077)] {
            if chdir(b"/").is_err() || call(NR_UMASK, &[0o022]).is_err() {
                return 100;
            }
            let child = match call(nr::CLONE, &[SIGCHLD as usize | flags, 0, 0, 0, 0]) {
                Ok(0) => {
                    let ok = chdir(b"/tmp").is_ok();
                    let _ = call(NR_UMASK, &[0o077]);
                    exit_group(i32::from(!ok))
                }
                Ok(pid) => pid as i32,
                Err(_) => return 101,
            };
            if wait_status(child) != Ok(0) {
                return 102;
            }
            let mut buf = [0u8; 64];
            if getcwd(&mut buf).ok() != Some(want_cwd) {
                bad |= if flags == 0 { 1 } else { 4 };
            }
            if call(NR_UMASK, &[0o022]) != Ok(want_umask) {
                bad |= if flags == 0 { 2 } else { 8 };
            }
        }
        bad
    })
    .ctx("fork")?;
    let status = reap_within(p, 3000, "the CLONE_FS parent")?;
    check_eq!(
        status >> 8,
        0,
        "bits: 1/2 cwd/umask leaked without CLONE_FS, 4/8 cwd/umask not shared with it"
    );
    Ok(())
}

const NR_EXECVE: usize = 221;

/// `execve` arguments built before any thread starts (threads may not
/// allocate): path, argv (NULL-ended), envp (empty).
struct ExecArgs {
    path: alloc::vec::Vec<u8>,
    argv: [usize; 5],
    envp: [usize; 1],
    _strings: alloc::vec::Vec<alloc::vec::Vec<u8>>,
}

/// `usertests --child exit CODE`.
fn exec_args(code: &[u8]) -> Result<alloc::boxed::Box<ExecArgs>, Fail> {
    exec_child_args(b"exit", code)
}

/// `usertests --child MODE ARG` as raw execve arguments.
fn exec_child_args(mode: &[u8], arg: &[u8]) -> Result<alloc::boxed::Box<ExecArgs>, Fail> {
    let exe = super::process::self_path()?;
    let strings = alloc::vec![cstr(&exe), cstr(b"--child"), cstr(mode), cstr(arg)];
    let mut argv = [0usize; 5];
    for (a, s) in argv.iter_mut().zip(&strings) {
        *a = s.as_ptr() as usize;
    }
    Ok(alloc::boxed::Box::new(ExecArgs {
        path: cstr(&exe),
        argv,
        envp: [0],
        _strings: strings,
    }))
}

fn raw_execve(a: &ExecArgs) -> Errno {
    // SAFETY: the path and both arrays are NUL-terminated and live.
    match unsafe {
        raw(
            NR_EXECVE,
            &[
                a.path.as_ptr() as usize,
                a.argv.as_ptr() as usize,
                a.envp.as_ptr() as usize,
            ],
        )
    } {
        Ok(_) => Errno(0),
        Err(e) => e,
    }
}

extern "C" fn thread_execs(args: usize) -> usize {
    // SAFETY: `args` is a leaked ExecArgs (see the caller).
    let a = unsafe { &*(args as *const ExecArgs) };
    raw_execve(a);
    thread_spins(0)
}

/// Starts the cloner (as in the exit_group race) and two spinners.
fn start_busy_threads() -> Result<usize, i32> {
    let stacks = mmap_anon((RACE_THREADS + 4) * RACE_STACK, PROT_READ | PROT_WRITE).map_err(|_| 2)?;
    let base = stacks + 3 * RACE_STACK;
    // SAFETY: each thread has its own stack and touches no shared memory.
    unsafe {
        for i in 0..2 {
            let top = stacks + (i + 1) * RACE_STACK;
            if usertests_clone(
                THREAD,
                top,
                core::ptr::null_mut(),
                0,
                core::ptr::null_mut(),
                thread_spins,
                0,
            ) <= 0
            {
                return Err(3);
            }
        }
        if usertests_clone(
            THREAD,
            base + RACE_STACK,
            core::ptr::null_mut(),
            0,
            core::ptr::null_mut(),
            thread_clones,
            base,
        ) <= 0
        {
            return Err(4);
        }
    }
    Ok(stacks)
}

/// Linux's de_thread: the exec'ing thread survives, the others die, the
/// new program runs (and exits with the code it is given).
fn execve_in_threaded_process_kills_the_other_threads() -> Outcome {
    let args = exec_args(b"9")?;
    for round in 0..5 {
        let p = spawn(|| {
            if let Err(code) = start_busy_threads() {
                return code;
            }
            while CLONED.load(SeqCst) < 2 {
                core::hint::spin_loop();
            }
            100 + raw_execve(&args).0
        })
        .ctx("fork")?;
        let status = reap_within(p, 5000, "the exec'ing process")?;
        check_eq!(status, 9 << 8, "round {round}: the new program's exit status");
    }
    Ok(())
}

/// Two threads exec at once: one wins, the program runs once.
fn execve_from_two_threads_at_once_one_wins() -> Outcome {
    let args = exec_args(b"9")?;
    let leaked = &*args as *const ExecArgs as usize;
    for round in 0..5 {
        let p = spawn(|| {
            let Ok(stack) = mmap_anon(RACE_STACK, PROT_READ | PROT_WRITE) else {
                return 2;
            };
            // SAFETY: the thread runs on its own stack; `args` outlives it
            // (this process ends by exec or exit).
            let r = unsafe {
                usertests_clone(
                    THREAD,
                    stack + RACE_STACK,
                    core::ptr::null_mut(),
                    0,
                    core::ptr::null_mut(),
                    thread_execs,
                    leaked,
                )
            };
            if r <= 0 {
                return 3;
            }
            100 + raw_execve(&args).0
        })
        .ctx("fork")?;
        let status = reap_within(p, 5000, "the process exec'ing twice")?;
        check_eq!(status, 9 << 8, "round {round}: the new program's exit status");
    }
    Ok(())
}

/// A thread other than the leader execs: the new program runs as the one
/// thread of the process, with the leader's id (tid == pid), as Linux's
/// de_thread makes it.
fn execve_from_a_thread_takes_over_the_leaders_pid() -> Outcome {
    let args = exec_child_args(b"pidtid", b"")?;
    let leaked = &*args as *const ExecArgs as usize;
    let p = spawn(|| {
        let Ok(stack) = mmap_anon(RACE_STACK, PROT_READ | PROT_WRITE) else {
            return 2;
        };
        // SAFETY: the thread runs on its own stack; `args` outlives it
        // (this process ends by exec or exit).
        let r = unsafe {
            usertests_clone(
                THREAD,
                stack + RACE_STACK,
                core::ptr::null_mut(),
                0,
                core::ptr::null_mut(),
                thread_execs,
                leaked,
            )
        };
        if r <= 0 {
            return 3;
        }
        // The leader waits to be killed by the exec.
        loop {
            core::hint::spin_loop();
        }
    })
    .ctx("fork")?;
    let status = reap_within(p, 5000, "the process exec'ing from a thread")?;
    check_eq!(status, 42 << 8, "the new program's exit status (42: gettid == getpid)");
    Ok(())
}
