//! Processes: fork, exec, wait, exit, signals, reboot.

use alloc::vec::Vec;

use crate::errno::Errno;
use crate::fs::c_path;
use crate::syscall::{check, nr, syscall0, syscall1, syscall2, syscall3, syscall4, syscall5};

// Signal numbers as the `int`s kill() and wait statuses use, from uapi.
pub const SIGHUP: i32 = uapi::signal::SIGHUP as i32;
pub const SIGINT: i32 = uapi::signal::SIGINT as i32;
pub const SIGQUIT: i32 = uapi::signal::SIGQUIT as i32;
pub const SIGKILL: i32 = uapi::signal::SIGKILL as i32;
pub const SIGPIPE: i32 = uapi::signal::SIGPIPE as i32;
pub const SIGTERM: i32 = uapi::signal::SIGTERM as i32;
pub const SIGCHLD: i32 = uapi::signal::SIGCHLD as i32;

pub use uapi::wait::WNOHANG;

// reboot's `int` arguments, from uapi.
pub const LINUX_REBOOT_MAGIC1: u32 = uapi::reboot::LINUX_REBOOT_MAGIC1 as u32;
pub const LINUX_REBOOT_MAGIC2: u32 = uapi::reboot::LINUX_REBOOT_MAGIC2 as u32;
pub const LINUX_REBOOT_CMD_RESTART: u32 = uapi::reboot::LINUX_REBOOT_CMD_RESTART as u32;
pub const LINUX_REBOOT_CMD_HALT: u32 = uapi::reboot::LINUX_REBOOT_CMD_HALT as u32;
pub const LINUX_REBOOT_CMD_POWER_OFF: u32 = uapi::reboot::LINUX_REBOOT_CMD_POWER_OFF as u32;

/// Ends the process (all its threads) with `status & 0xff`.
pub fn exit(status: i32) -> ! {
    // SAFETY: exit_group does not return.
    unsafe { syscall1(nr::EXIT_GROUP, status as usize) };
    // If it ever did, try plain exit, then fault.
    // SAFETY: as above.
    unsafe { syscall1(nr::EXIT, status as usize) };
    loop {
        // SAFETY: a breakpoint ends a process that cannot exit.
        unsafe { core::arch::asm!("brk #0x3e9") };
    }
}

pub fn getpid() -> i32 {
    // SAFETY: getpid cannot fail.
    unsafe { syscall0(nr::GETPID) as i32 }
}

/// sched_setscheduler(2): `policy` and real-time `priority` of `pid` (0:
/// the caller).
pub fn sched_setscheduler(pid: i32, policy: i32, priority: i32) -> Result<(), Errno> {
    let param = priority;
    // SAFETY: the kernel reads one int from `param`, which lives across
    // the call.
    check(unsafe {
        syscall3(
            nr::SCHED_SETSCHEDULER,
            pid as usize,
            policy as usize,
            &param as *const i32 as usize,
        )
    })?;
    Ok(())
}

/// sched_getscheduler(2) and sched_getparam(2): `(policy, priority)`.
pub fn sched_getscheduler(pid: i32) -> Result<(i32, i32), Errno> {
    // SAFETY: no memory is passed.
    let policy = check(unsafe { syscall1(nr::SCHED_GETSCHEDULER, pid as usize) })?;
    let mut prio = 0i32;
    // SAFETY: the kernel writes one int to `prio`, which lives across the
    // call.
    check(unsafe { syscall2(nr::SCHED_GETPARAM, pid as usize, &mut prio as *mut i32 as usize) })?;
    Ok((policy as i32, prio))
}

pub fn getppid() -> i32 {
    // SAFETY: getppid cannot fail.
    unsafe { syscall0(nr::GETPPID) as i32 }
}

pub fn getuid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { syscall0(nr::GETUID) as u32 }
}

pub fn setsid() -> Result<i32, Errno> {
    // SAFETY: no arguments.
    check(unsafe { syscall0(nr::SETSID) }).map(|p| p as i32)
}

/// Which side of a [`fork`] this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fork {
    Child,
    Parent(i32),
}

/// `clone(SIGCHLD, 0, NULL, NULL, 0)`: what glibc's fork does without
/// threads.
pub fn fork() -> Result<Fork, Errno> {
    // SAFETY: no new stack and no tid pointers: the child continues on a
    // copy of this address space, as after fork.
    let pid = check(unsafe { syscall5(nr::CLONE, SIGCHLD as usize, 0, 0, 0, 0) })?;
    Ok(if pid == 0 {
        Fork::Child
    } else {
        Fork::Parent(pid as i32)
    })
}

/// NUL-terminated copies of strings and the NULL-terminated pointer array
/// that execve wants.
struct CStrArray {
    _strings: Vec<Vec<u8>>,
    ptrs: Vec<*const u8>,
}

impl CStrArray {
    fn new<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Result<Self, Errno> {
        let strings: Vec<Vec<u8>> = items.into_iter().map(c_path).collect::<Result<_, _>>()?;
        let mut ptrs: Vec<*const u8> = strings.iter().map(|s| s.as_ptr()).collect();
        ptrs.push(core::ptr::null());
        Ok(CStrArray {
            _strings: strings,
            ptrs,
        })
    }
}

/// Replaces the process image; returns only on failure.
pub fn execve<'a, 'b>(
    path: &[u8],
    argv: impl IntoIterator<Item = &'a [u8]>,
    envp: impl IntoIterator<Item = &'b [u8]>,
) -> Errno {
    let run = || -> Result<(), Errno> {
        let p = c_path(path)?;
        let argv = CStrArray::new(argv)?;
        let envp = CStrArray::new(envp)?;
        // SAFETY: the path and both arrays are NUL/NULL-terminated and live
        // across the call.
        check(unsafe {
            syscall3(
                nr::EXECVE,
                p.as_ptr() as usize,
                argv.ptrs.as_ptr() as usize,
                envp.ptrs.as_ptr() as usize,
            )
        })?;
        Ok(())
    };
    match run() {
        Ok(()) => Errno::EINVAL, // execve does not return on success
        Err(e) => e,
    }
}

/// How a child ended or changed state, decoded from a wait status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    Exited(i32),
    Signaled(i32),
    Stopped(i32),
    Continued,
}

impl WaitStatus {
    pub fn from_raw(s: i32) -> WaitStatus {
        use uapi::wait::{WEXITSTATUS, WIFCONTINUED, WIFEXITED, WIFSTOPPED, WSTOPSIG, WTERMSIG};
        // Continued first: 0xffff's low seven bits read as a stop.
        if WIFCONTINUED(s) {
            WaitStatus::Continued
        } else if WIFEXITED(s) {
            WaitStatus::Exited(WEXITSTATUS(s))
        } else if WIFSTOPPED(s) {
            WaitStatus::Stopped(WSTOPSIG(s))
        } else {
            WaitStatus::Signaled(WTERMSIG(s))
        }
    }

    /// The shell's `$?` for this status: the exit code, or 128 + signal.
    pub fn shell_status(self) -> i32 {
        match self {
            WaitStatus::Exited(c) => c,
            WaitStatus::Signaled(s) | WaitStatus::Stopped(s) => 128 + s,
            WaitStatus::Continued => 0,
        }
    }
}

/// `wait4(pid, &status, options, NULL)`: the pid that changed state (0 with
/// `WNOHANG` if none did) and its status.
pub fn wait4(pid: i32, options: u32) -> Result<(i32, WaitStatus), Errno> {
    let mut status: i32 = 0;
    // SAFETY: status is a writable int; no rusage.
    let r = check(unsafe {
        syscall4(
            nr::WAIT4,
            pid as usize,
            &mut status as *mut i32 as usize,
            options as usize,
            0,
        )
    })?;
    Ok((r as i32, WaitStatus::from_raw(status)))
}

/// Waits for `pid` to end, retrying after `EINTR`.
pub fn waitpid(pid: i32) -> Result<WaitStatus, Errno> {
    loop {
        match wait4(pid, 0) {
            Ok((_, st)) => return Ok(st),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

pub fn kill(pid: i32, sig: i32) -> Result<(), Errno> {
    // SAFETY: no memory is passed.
    check(unsafe { syscall2(nr::KILL, pid as usize, sig as usize) }).map(drop)
}

/// `reboot(MAGIC1, MAGIC2, cmd, NULL)`; returns only on failure (or for
/// commands that do not stop the machine).
pub fn reboot(cmd: u32) -> Result<(), Errno> {
    // SAFETY: no argument string is passed (cmd is not RESTART2).
    check(unsafe {
        syscall4(
            nr::REBOOT,
            LINUX_REBOOT_MAGIC1 as usize,
            LINUX_REBOOT_MAGIC2 as usize,
            cmd as usize,
            0,
        )
    })
    .map(drop)
}

pub const SIG_DFL: usize = uapi::signal::SIG_DFL as usize;
pub const SIG_IGN: usize = uapi::signal::SIG_IGN as usize;

/// Sets the disposition of `sig` to `SIG_DFL` or `SIG_IGN` (no handlers:
/// those would need a restorer).
pub fn signal_disposition(sig: i32, handler: usize) -> Result<(), Errno> {
    // struct sigaction of arm64: handler, flags, restorer, mask (8 bytes).
    let act: [usize; 4] = [handler, 0, 0, 0];
    // SAFETY: act is a valid struct sigaction; no old action wanted.
    check(unsafe { syscall4(nr::RT_SIGACTION, sig as usize, act.as_ptr() as usize, 0, 8) }).map(drop)
}

/// Sleeps until a signal arrives: `ppoll(NULL, 0, NULL, NULL)`.
pub fn pause() {
    // SAFETY: no file descriptors, no timeout, no mask.
    unsafe { syscall4(nr::PPOLL, 0, 0, 0, 0) };
}
