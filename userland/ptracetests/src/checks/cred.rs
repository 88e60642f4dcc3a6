//! Credentials and the access checks they drive: the set*id calls'
//! rules and what getresuid, capget and /proc/PID/status show; ptrace
//! attach, process_vm_readv and /proc/PID/mem refused across users and to
//! an undumpable process; kill across users. Each check changes only its
//! own process's (or its children's) credentials; the runner stays root.

use super::*;
use alloc::vec::Vec;
use uapi::capability::*;
use uapi::syscalls::nr;

/// `(uid_t)-1`.
const NO_ID: usize = u32::MAX as usize;
/// The user the checks become.
const USER: usize = 1000;

fn call(n: usize, a: &[usize]) -> Result<usize, Errno> {
    let arg = |i: usize| a.get(i).copied().unwrap_or(0);
    // SAFETY: the calls made here take IDs, or pointers to buffers that
    // live across the call and are as large as the kernel reads or writes.
    rt::syscall::check(unsafe { rt::syscall::syscall3(n, arg(0), arg(1), arg(2)) })
}

fn res_ids(n: usize) -> Result<[u32; 3], Fail> {
    let mut ids = [0u32; 3];
    let base = ids.as_mut_ptr() as usize;
    let p = |i: usize| base + 4 * i;
    call(n, &[p(0), p(1), p(2)]).ctx("getres[ug]id")?;
    Ok(ids)
}

/// capget (version 3) of `pid`: (effective, permitted, inheritable).
fn capget(pid: i32) -> Result<(u64, u64, u64), Errno> {
    let header = [LINUX_CAPABILITY_VERSION_3, pid as u32];
    let mut data = [0u32; 6];
    call(nr::CAPGET, &[header.as_ptr() as usize, data.as_mut_ptr() as usize])?;
    let set = |j: usize| u64::from(data[j]) | u64::from(data[3 + j]) << 32;
    Ok((set(0), set(1), set(2)))
}

fn dumpable() -> Result<usize, Fail> {
    call(nr::PRCTL, &[PR_GET_DUMPABLE as usize]).ctx("PR_GET_DUMPABLE")
}

/// The value of `field` in /proc/`pid`/status, tabs kept.
fn status_field(pid: &str, field: &str) -> Result<alloc::string::String, Fail> {
    let path = format!("/proc/{pid}/status");
    let fd = rt::fs::open(path.as_bytes(), rt::fs::O_RDONLY, 0).ctx("open status")?;
    let text = sys::read_all(fd);
    let _ = rt::fs::close(fd);
    let text = alloc::string::String::from_utf8_lossy(&text).into_owned();
    let prefix = format!("{field}:\t");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(alloc::string::String::from)
        .ok_or_else(|| Fail(format!("no {field} line in {path}")))
}

/// Drops every group and becomes `USER` in all IDs (and loses every
/// capability); the address space becomes undumpable.
fn become_user() -> Result<(), Errno> {
    call(nr::SETGROUPS, &[0, 0])?;
    call(nr::SETRESGID, &[USER, USER, USER])?;
    call(nr::SETRESUID, &[USER, USER, USER])?;
    Ok(())
}

/// A word at the same address in every process forked from the check,
/// for process_vm_readv to read.
static MARK: AtomicU64 = AtomicU64::new(0x5eed_0fc0_ffee);

fn read_mark(pid: i32) -> Result<usize, Errno> {
    let mut v = 0u64;
    process_vm(
        false,
        pid,
        &[(&mut v as *mut u64 as usize, 8)],
        &[(MARK.as_ptr() as usize, 8)],
        0,
    )
}

fn open_mem_of(pid: i32) -> Result<i32, Errno> {
    rt::fs::open(format!("/proc/{pid}/mem").as_bytes(), rt::fs::O_RDWR, 0)
}

/// One byte through a pipe, to order two processes' steps.
fn signal_step(fd: i32) -> Outcome {
    rt::fs::write(fd, b"x").ctx("pipe write").map(|_| ())
}

fn await_step(fd: i32) -> Outcome {
    let mut b = [0u8; 1];
    check_eq!(
        rt::fs::read(fd, &mut b).ctx("pipe read")?,
        1,
        "a step from the other side"
    );
    Ok(())
}

/// Forks a child that becomes `USER`, reports, then waits for a byte on
/// the second pipe before it runs `after`; it then reports again and
/// sleeps until killed. Returns (pid, the report pipe's read end, the go
/// pipe's write end).
fn spawn_user(after: fn() -> i32) -> Result<(i32, i32, i32), Fail> {
    let [ready_r, ready_w] = rt::fs::pipe2(0).ctx("pipe")?;
    let [go_r, go_w] = rt::fs::pipe2(0).ctx("pipe")?;
    match fork().ctx("fork")? {
        Fork::Child => {
            if become_user().is_err() {
                sys::exit_now(90);
            }
            // Changing the effective IDs closed the address space.
            if call(nr::PRCTL, &[PR_GET_DUMPABLE as usize]) != Ok(0) {
                sys::exit_now(91);
            }
            let _ = rt::fs::write(ready_w, b"a");
            let mut b = [0u8; 1];
            let _ = rt::fs::read(go_r, &mut b);
            let code = after();
            let _ = rt::fs::write(ready_w, b"b");
            if code != 0 {
                sys::exit_now(code);
            }
            loop {
                sys::sleep_ms(1000);
            }
        }
        Fork::Parent(pid) => {
            let _ = rt::fs::close(ready_w);
            let _ = rt::fs::close(go_r);
            Ok((pid, ready_r, go_w))
        }
    }
}

/// What a tracee that drops root and makes itself dumpable again does.
fn set_dumpable() -> i32 {
    match call(nr::PRCTL, &[PR_SET_DUMPABLE as usize, 1]) {
        Ok(0) => 0,
        _ => 92,
    }
}

pub(super) fn set_id_calls_follow_linux_rules_and_getresuid_shows_them() -> Outcome {
    let me = format!("{}", sys::getpid());
    check_eq!(res_ids(nr::GETRESUID)?, [0, 0, 0], "root's uids");
    check_eq!(res_ids(nr::GETRESGID)?, [0, 0, 0], "root's gids");
    check_eq!(
        capget(0).ctx("capget")?,
        (CAP_VALID_MASK, CAP_VALID_MASK, 0),
        "root's capabilities"
    );

    // seteuid(1000): the effective set empties, the permitted set stays
    // (real and saved uid are still 0), and the process is undumpable.
    call(nr::SETRESUID, &[NO_ID, USER, NO_ID]).ctx("setresuid(-1, 1000, -1)")?;
    check_eq!(res_ids(nr::GETRESUID)?, [0, 1000, 0], "after seteuid");
    check_eq!(call(nr::GETEUID, &[]), Ok(USER), "geteuid");
    check_eq!(call(nr::GETUID, &[]), Ok(0), "getuid");
    check_eq!(
        capget(0).ctx("capget")?,
        (0, CAP_VALID_MASK, 0),
        "capabilities as euid 1000"
    );
    check_eq!(status_field(&me, "Uid")?, "0\t1000\t0\t1000", "status Uid");
    check_eq!(dumpable()?, 0, "dumpable after the euid change");
    call(nr::SETRESUID, &[NO_ID, 0, NO_ID]).ctx("back to euid 0")?;
    check_eq!(
        capget(0).ctx("capget")?.0,
        CAP_VALID_MASK,
        "effective set back at euid 0"
    );
    check_eq!(
        call(nr::PRCTL, &[PR_SET_DUMPABLE as usize, 2]),
        Err(Errno::EINVAL),
        "PR_SET_DUMPABLE 2"
    );
    call(nr::PRCTL, &[PR_SET_DUMPABLE as usize, 1]).ctx("PR_SET_DUMPABLE 1")?;
    check_eq!(dumpable()?, 1, "dumpable after PR_SET_DUMPABLE");

    // setfsuid answers with the old fsuid, changed or not, and takes the
    // filesystem capabilities with it.
    check_eq!(call(nr::SETFSUID, &[2000]), Ok(0), "setfsuid(2000)");
    check_eq!(call(nr::SETFSUID, &[NO_ID]), Ok(2000), "setfsuid(-1) reads it");
    check_eq!(status_field(&me, "Uid")?, "0\t0\t0\t2000", "status Uid");
    check_eq!(
        capget(0).ctx("capget")?.0,
        CAP_VALID_MASK & !CAP_FS_SET,
        "effective set at fsuid 2000"
    );
    check_eq!(call(nr::SETFSUID, &[0]), Ok(2000), "setfsuid(0)");
    check_eq!(capget(0).ctx("capget")?.0, CAP_VALID_MASK, "effective set at fsuid 0");

    // Supplementary groups, kept sorted.
    let groups = [30u32, 10, 20];
    call(nr::SETGROUPS, &[3, groups.as_ptr() as usize]).ctx("setgroups")?;
    check_eq!(call(nr::GETGROUPS, &[0, 0]), Ok(3), "getgroups(0) counts");
    let mut got = [0u32; 3];
    check_eq!(
        call(nr::GETGROUPS, &[2, got.as_mut_ptr() as usize]),
        Err(Errno::EINVAL),
        "getgroups with too small a list"
    );
    check_eq!(
        call(nr::GETGROUPS, &[(-1i32) as u32 as usize, got.as_mut_ptr() as usize]),
        Err(Errno::EINVAL),
        "getgroups(-1)"
    );
    check_eq!(
        call(nr::GETGROUPS, &[3, got.as_mut_ptr() as usize]),
        Ok(3),
        "getgroups(3)"
    );
    check_eq!(got, [10, 20, 30], "groups");
    check_eq!(status_field(&me, "Groups")?, "10 20 30 ", "status Groups");
    let bad = [5u32, u32::MAX];
    check_eq!(
        call(nr::SETGROUPS, &[2, bad.as_ptr() as usize]),
        Err(Errno::EINVAL),
        "setgroups with (gid_t)-1"
    );

    // setuid as root sets every uid and drops every capability for good.
    call(nr::SETRESGID, &[100, 100, 100]).ctx("setresgid")?;
    call(nr::SETUID, &[USER]).ctx("setuid(1000)")?;
    check_eq!(res_ids(nr::GETRESUID)?, [1000, 1000, 1000], "after setuid");
    check_eq!(res_ids(nr::GETRESGID)?, [100, 100, 100], "gids");
    check_eq!(capget(0).ctx("capget")?, (0, 0, 0), "capabilities after setuid");
    check_eq!(status_field(&me, "Uid")?, "1000\t1000\t1000\t1000", "status Uid");
    check_eq!(status_field(&me, "Gid")?, "100\t100\t100\t100", "status Gid");
    check_eq!(status_field(&me, "CapEff")?, "0000000000000000", "status CapEff");
    check_eq!(status_field(&me, "CapBnd")?, "000001ffffffffff", "status CapBnd");
    check_eq!(call(nr::SETUID, &[0]), Err(Errno::EPERM), "setuid(0) as a user");
    check_eq!(
        call(nr::SETRESUID, &[0, NO_ID, NO_ID]),
        Err(Errno::EPERM),
        "setresuid(0, -1, -1)"
    );
    check_eq!(call(nr::SETREUID, &[NO_ID, 0]), Err(Errno::EPERM), "setreuid(-1, 0)");
    check_eq!(call(nr::SETUID, &[NO_ID]), Err(Errno::EINVAL), "setuid(-1)");
    check_eq!(call(nr::SETUID, &[USER]), Ok(0), "setuid to its own uid");
    check_eq!(
        call(nr::SETRESUID, &[USER, USER, USER]),
        Ok(0),
        "setresuid to the same ids"
    );
    check_eq!(call(nr::SETGID, &[0]), Err(Errno::EPERM), "setgid(0) as a user");
    check_eq!(call(nr::SETGROUPS, &[0, 0]), Err(Errno::EPERM), "setgroups as a user");
    check_eq!(call(nr::SETFSUID, &[0]), Ok(USER), "a refused setfsuid still answers");
    check_eq!(call(nr::SETFSUID, &[NO_ID]), Ok(USER), "and left fsuid alone");
    check_eq!(call(nr::SETFSGID, &[0]), Ok(100), "a refused setfsgid still answers");

    // capset may not raise; an unknown version is answered with Linux's.
    let header = [LINUX_CAPABILITY_VERSION_3, 0];
    let all = [u32::MAX; 6];
    check_eq!(
        call(nr::CAPSET, &[header.as_ptr() as usize, all.as_ptr() as usize]),
        Err(Errno::EPERM),
        "capset raising capabilities"
    );
    let mut bad_header = [0x1234u32, 0];
    check_eq!(
        call(nr::CAPGET, &[bad_header.as_mut_ptr() as usize, all.as_ptr() as usize]),
        Err(Errno::EINVAL),
        "capget of an unknown version"
    );
    check_eq!(bad_header[0], LINUX_CAPABILITY_VERSION_3, "version written back");
    Ok(())
}

pub(super) fn root_may_attach_to_and_read_a_process_that_dropped_root() -> Outcome {
    let (pid, ready, go) = spawn_user(|| 0)?;
    await_step(ready)?;
    check_eq!(
        status_field(&format!("{pid}"), "Uid")?,
        "1000\t1000\t1000\t1000",
        "the tracee's status Uid"
    );
    // CAP_SYS_PTRACE overrides both the other user and the undumpable flag.
    ptrace(PTRACE_ATTACH, pid, 0, 0).ctx("PTRACE_ATTACH")?;
    expect_wait(pid, stopped(SIGSTOP), "attach stop")?;
    check_eq!(read_mark(pid), Ok(8), "process_vm_readv");
    let fd = open_mem_of(pid).ctx("open /proc/PID/mem")?;
    let _ = rt::fs::close(fd);
    let _ = rt::fs::close(go);
    kill_and_reap(pid);
    Ok(())
}

pub(super) fn a_user_may_not_attach_to_root_nor_to_an_undumpable_user_until_it_sets_dumpable() -> Outcome {
    let root = spawn(sleeper)?;
    let (pid, ready, go) = spawn_user(set_dumpable)?;
    become_user().ctx("become uid 1000")?;

    // A root process: no ptrace, no memory, no signal but SIGCONT (the
    // same session).
    check_eq!(ptrace(PTRACE_ATTACH, root, 0, 0), Err(Errno::EPERM), "attach to root");
    check_eq!(ptrace(PTRACE_SEIZE, root, 0, 0), Err(Errno::EPERM), "seize root");
    check_eq!(read_mark(root), Err(Errno::EPERM), "process_vm_readv of root");
    check_eq!(open_mem_of(root), Err(Errno::EACCES), "open root's /proc/PID/mem");
    check_eq!(rt::process::kill(root, 0), Err(Errno::EPERM), "kill(root, 0)");
    check_eq!(
        rt::process::kill(root, SIGUSR1),
        Err(Errno::EPERM),
        "kill(root, SIGUSR1)"
    );
    check_eq!(
        sys::syscall_raw(nr::TGKILL, root as usize, root as usize, SIGUSR1 as usize),
        -(Errno::EPERM.0 as isize),
        "tgkill(root, SIGUSR1)"
    );
    check_eq!(rt::process::kill(root, SIGCONT), Ok(()), "SIGCONT within the session");

    // A process of the same user that changed its IDs: undumpable.
    await_step(ready)?;
    check_eq!(
        ptrace(PTRACE_ATTACH, pid, 0, 0),
        Err(Errno::EPERM),
        "attach to an undumpable process"
    );
    check_eq!(
        read_mark(pid),
        Err(Errno::EPERM),
        "process_vm_readv of an undumpable process"
    );
    check_eq!(open_mem_of(pid), Err(Errno::EACCES), "open an undumpable /proc/PID/mem");
    check_eq!(rt::process::kill(pid, 0), Ok(()), "kill(same user, 0)");

    // Until it makes itself dumpable again.
    signal_step(go)?;
    await_step(ready)?;
    ptrace(PTRACE_ATTACH, pid, 0, 0).ctx("attach once dumpable")?;
    expect_wait(pid, stopped(SIGSTOP), "attach stop")?;
    check_eq!(read_mark(pid), Ok(8), "process_vm_readv once dumpable");
    let fd = open_mem_of(pid).ctx("open /proc/PID/mem once dumpable")?;
    let _ = rt::fs::close(fd);
    kill_and_reap(pid);
    // The root sleeper goes with the check's process group.
    Ok(())
}

/// `ptracetests --creds`: what the exec check's child sees after exec,
/// one bit per expectation (63: all met).
pub fn creds_after_exec() -> i32 {
    let mut ids = [0u32; 3];
    let base = ids.as_mut_ptr() as usize;
    let p = |i: usize| base + 4 * i;
    let _ = call(nr::GETRESUID, &[p(0), p(1), p(2)]);
    let u = USER as u32;
    let fsuid = call(nr::SETFSUID, &[NO_ID]);
    let caps = capget(0);
    let bits: Vec<bool> = alloc::vec![
        ids[0] == u,
        ids[1] == u,
        ids[2] == u,
        fsuid == Ok(USER),
        call(nr::PRCTL, &[PR_GET_DUMPABLE as usize]) == Ok(1),
        caps == Ok((0, 0, 0)),
    ];
    bits.iter().enumerate().map(|(i, &b)| i32::from(b) << i).sum()
}

pub(super) fn exec_keeps_ids_resets_the_saved_uid_and_makes_the_process_dumpable() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            // Real and effective 1000, saved 0: still privileged until exec.
            if call(nr::SETRESGID, &[USER, USER, USER]).is_err() || call(nr::SETRESUID, &[USER, USER, 0]).is_err() {
                sys::exit_now(90);
            }
            sys::exec_self(&[b"--creds"]);
            sys::exit_now(91)
        }
        Fork::Parent(pid) => pid,
    };
    expect_exit(pid, 63)
}

/// A stack for [`thread_seteuid_user`]'s thread, which never touches it.
static mut SETEUID_THREAD_STACK: [u128; 64] = [0; 64];

/// Starts a thread (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
/// CLONE_THREAD | CLONE_SYSVSEM) that makes the raw call
/// setresuid(-1, 1000, -1) and then waits in ppoll until the process
/// ends; its tid.
fn thread_seteuid_user() -> isize {
    use uapi::sched::{CLONE_FILES, CLONE_FS, CLONE_SIGHAND, CLONE_SYSVSEM, CLONE_THREAD, CLONE_VM};
    const FLAGS: usize = (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM) as usize;
    let top = core::ptr::addr_of_mut!(SETEUID_THREAD_STACK) as usize + 64 * 16;
    let ret: isize;
    // SAFETY: the thread only makes system calls that take no memory, on a
    // stack of its own that nothing else uses.
    unsafe {
        core::arch::asm!(
            "svc #0",
            "cbnz x0, 1f",
            "mov x0, #0xffffffff",
            "mov x1, #1000",
            "mov x2, #0xffffffff",
            "mov x8, #{setresuid}",
            "svc #0",
            "2:",
            "mov x0, #0",
            "mov x1, #0",
            "mov x2, #0",
            "mov x3, #0",
            "mov x4, #0",
            "mov x8, #{ppoll}",
            "svc #0",
            "b 2b",
            "1:",
            setresuid = const uapi::syscalls::nr::SETRESUID,
            ppoll = const uapi::syscalls::nr::PPOLL,
            in("x8") nr::CLONE,
            inlateout("x0") FLAGS => ret,
            in("x1") top,
            in("x2") 0,
            in("x3") 0,
            in("x4") 0,
            options(nostack)
        )
    };
    ret
}

/// The kernel's set*id calls change the calling thread's credentials
/// only (glibc's setuid makes them process-wide by signalling every
/// thread): a thread's raw setresuid shows in its own status, not in its
/// leader's.
pub(super) fn set_id_calls_change_the_calling_thread_only() -> Outcome {
    let me = sys::getpid();
    let tid = thread_seteuid_user();
    if tid <= 0 {
        return Err(Fail(format!("clone: {tid}")));
    }
    let theirs = format!("{me}/task/{tid}");
    let mut uid = status_field(&theirs, "Uid")?;
    for _ in 0..200 {
        if uid != "0\t0\t0\t0" {
            break;
        }
        sys::sleep_ms(10);
        uid = status_field(&theirs, "Uid")?;
    }
    check_eq!(uid, "0\t1000\t0\t1000", "the thread's status Uid");
    check_eq!(
        status_field(&theirs, "CapEff")?,
        "0000000000000000",
        "the thread's CapEff"
    );
    check_eq!(
        status_field(&format!("{me}"), "Uid")?,
        "0\t0\t0\t0",
        "the leader's status Uid"
    );
    check_eq!(res_ids(nr::GETRESUID)?, [0, 0, 0], "the leader's getresuid");
    check_eq!(capget(0).ctx("capget")?.0, CAP_VALID_MASK, "the leader's effective set");
    check_eq!(
        capget(tid as i32).ctx("capget of the thread")?.0,
        0,
        "the thread's effective set"
    );
    Ok(())
}
