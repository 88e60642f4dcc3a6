//! Raw Linux AArch64 system calls and the structures the checks pass to
//! them, with Linux's numbers and layouts (`include/uapi/asm-generic/`,
//! `arch/arm64/include/uapi/asm/`).
//!
//! usertests does not depend on `uapi`, on purpose: every number and
//! layout here and in the checks is restated from Linux's headers, so that
//! a wrong value in `uapi` (which the kernel uses) fails a check instead
//! of agreeing with itself.
//!
//! Most calls go through [`raw`], so that a check can pass exactly what it
//! wants, bad pointers included, and see the raw `-errno`.

use core::arch::{asm, global_asm};

pub use rt::Errno;

/// System call numbers (generic table, used by arm64). Stated here again on
/// purpose rather than taken from `uapi::syscalls::nr`: these checks must
/// also catch a wrong number in the kernel's own table.
pub mod nr {
    pub const GETCWD: usize = 17;
    pub const DUP: usize = 23;
    pub const FCNTL: usize = 25;
    pub const IOCTL: usize = 29;
    pub const MKDIRAT: usize = 34;
    pub const UNLINKAT: usize = 35;
    pub const FACCESSAT: usize = 48;
    pub const CHDIR: usize = 49;
    pub const FCHMODAT: usize = 53;
    pub const OPENAT: usize = 56;
    pub const PIPE2: usize = 59;
    pub const GETDENTS64: usize = 61;
    pub const READ: usize = 63;
    pub const WRITE: usize = 64;
    pub const READV: usize = 65;
    pub const WRITEV: usize = 66;
    pub const PREAD64: usize = 67;
    pub const PREADV: usize = 69;
    pub const PWRITEV: usize = 70;
    pub const PPOLL: usize = 73;
    pub const NEWFSTATAT: usize = 79;
    pub const FSTAT: usize = 80;
    pub const EXIT: usize = 93;
    pub const EXIT_GROUP: usize = 94;
    pub const WAITID: usize = 95;
    pub const SET_TID_ADDRESS: usize = 96;
    pub const FUTEX: usize = 98;
    pub const NANOSLEEP: usize = 101;
    pub const GETITIMER: usize = 102;
    pub const SETITIMER: usize = 103;
    pub const CLOCK_GETTIME: usize = 113;
    pub const CLOCK_NANOSLEEP: usize = 115;
    pub const SCHED_YIELD: usize = 124;
    pub const KILL: usize = 129;
    pub const TKILL: usize = 130;
    pub const TGKILL: usize = 131;
    pub const SIGALTSTACK: usize = 132;
    pub const RT_SIGSUSPEND: usize = 133;
    pub const RT_SIGACTION: usize = 134;
    pub const RT_SIGPROCMASK: usize = 135;
    pub const RT_SIGPENDING: usize = 136;
    pub const SETPGID: usize = 154;
    pub const GETPGID: usize = 155;
    pub const GETSID: usize = 156;
    pub const SETSID: usize = 157;
    pub const UNAME: usize = 160;
    pub const PRCTL: usize = 167;
    pub const GETPID: usize = 172;
    pub const GETPPID: usize = 173;
    pub const GETUID: usize = 174;
    pub const GETEUID: usize = 175;
    pub const GETGID: usize = 176;
    pub const GETEGID: usize = 177;
    pub const GETTID: usize = 178;
    pub const BRK: usize = 214;
    pub const MUNMAP: usize = 215;
    pub const CLONE: usize = 220;
    pub const EXECVE: usize = 221;
    pub const MMAP: usize = 222;
    pub const MPROTECT: usize = 226;
    pub const WAIT4: usize = 260;
    pub const GETRANDOM: usize = 278;
    pub const PREADV2: usize = 286;
    pub const PWRITEV2: usize = 287;
}

/// An address below any mapping.
pub const BAD_LOW: usize = 1;
/// An address in the kernel half.
pub const BAD_KERNEL: usize = 0xffff_ffff_ffff_0000;

/// System call `n` with up to six arguments (missing ones are 0).
///
/// # Safety
/// Every pointer argument must either point to memory of the size the call
/// expects that the caller owns, or be an address that is not mapped
/// writable in this process ([`BAD_LOW`], [`BAD_KERNEL`], an unmapped
/// page), which the kernel must refuse.
pub unsafe fn raw(n: usize, args: &[usize]) -> Result<usize, Errno> {
    let a = |i: usize| args.get(i).copied().unwrap_or(0);
    // SAFETY: the caller vouches for the arguments.
    rt::syscall::check(unsafe { rt::syscall::syscall6(n, a(0), a(1), a(2), a(3), a(4), a(5)) })
}

/// A system call that takes no pointers (or only null ones).
pub fn call(n: usize, args: &[usize]) -> Result<usize, Errno> {
    // SAFETY: the callers pass integers only (see each call site).
    unsafe { raw(n, args) }
}

/// `s` with a NUL appended, for a path argument.
pub fn cstr(s: &[u8]) -> alloc::vec::Vec<u8> {
    let mut v = alloc::vec::Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s);
    v.push(0);
    v
}

pub fn getpid() -> i32 {
    call(nr::GETPID, &[]).unwrap_or(0) as i32
}

pub fn gettid() -> i32 {
    call(nr::GETTID, &[]).unwrap_or(0) as i32
}

pub fn getppid() -> i32 {
    call(nr::GETPPID, &[]).unwrap_or(0) as i32
}

/// Ends the process with `code`, without running anything else.
pub fn exit_group(code: i32) -> ! {
    rt::process::exit(code)
}

/// `fork()`: 0 in the child, the child's pid in the parent.
pub fn fork() -> Result<i32, Errno> {
    call(nr::CLONE, &[SIGCHLD as usize, 0, 0, 0, 0]).map(|p| p as i32)
}

/// Forks a child that runs `f` and exits with its result.
pub fn spawn(f: impl FnOnce() -> i32) -> Result<i32, Errno> {
    match fork()? {
        0 => exit_group(f()),
        pid => Ok(pid),
    }
}

/// `wait4(pid, &status, options, NULL)`: (pid, raw status).
pub fn wait4(pid: i32, options: usize) -> Result<(i32, i32), Errno> {
    let mut status = 0i32;
    // SAFETY: status is a writable int.
    let r = unsafe { raw(nr::WAIT4, &[pid as usize, &mut status as *mut i32 as usize, options, 0]) }?;
    Ok((r as i32, status))
}

/// Waits for `pid`, retrying after `EINTR`; its raw status.
pub fn wait_status(pid: i32) -> Result<i32, Errno> {
    loop {
        match wait4(pid, 0) {
            Err(Errno::EINTR) => {}
            r => return r.map(|(_, s)| s),
        }
    }
}

pub fn kill(pid: i32, sig: i32) -> Result<usize, Errno> {
    call(nr::KILL, &[pid as usize, sig as usize])
}

pub fn tgkill(tgid: i32, tid: i32, sig: i32) -> Result<usize, Errno> {
    call(nr::TGKILL, &[tgid as usize, tid as usize, sig as usize])
}

pub fn pipe() -> Result<[i32; 2], Errno> {
    rt::fs::pipe2(O_CLOEXEC)
}

pub fn close(fd: i32) {
    let _ = rt::fs::close(fd);
}

pub fn read(fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
    rt::fs::read(fd, buf)
}

pub fn write(fd: i32, buf: &[u8]) -> Result<usize, Errno> {
    rt::fs::write(fd, buf)
}

// ---------------------------------------------------------------- files

pub const AT_FDCWD: i32 = -100;
pub const AT_REMOVEDIR: usize = 0x200;
pub const O_RDONLY: u32 = 0;
pub const O_WRONLY: u32 = 1;
pub const O_RDWR: u32 = 2;
pub const O_CREAT: u32 = 0o100;
pub const O_EXCL: u32 = 0o200;
pub const O_TRUNC: u32 = 0o1000;
pub const O_APPEND: u32 = 0o2000;
pub const O_NONBLOCK: u32 = 0o4000;
pub const O_DIRECTORY: u32 = 0o40000;
pub const O_LARGEFILE: u32 = 0o400000;
pub const O_CLOEXEC: u32 = 0o2000000;
pub const O_NOCTTY: u32 = 0o400;

pub const F_DUPFD: usize = 0;
pub const F_GETFD: usize = 1;
pub const F_SETFD: usize = 2;
pub const F_GETFL: usize = 3;
pub const F_SETFL: usize = 4;
pub const FD_CLOEXEC: usize = 1;

pub const SEEK_SET: u32 = 0;
pub const SEEK_CUR: u32 = 1;
pub const SEEK_END: u32 = 2;

pub const F_OK: usize = 0;
pub const X_OK: usize = 1;
pub const W_OK: usize = 2;
pub const R_OK: usize = 4;

pub const TCGETS: usize = 0x5401;
pub const TIOCGWINSZ: usize = 0x5413;

pub const POLLIN: i16 = 0x1;
pub const POLLOUT: i16 = 0x4;
pub const POLLHUP: i16 = 0x10;
pub const POLLNVAL: i16 = 0x20;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct PollFd {
    pub fd: i32,
    pub events: i16,
    pub revents: i16,
}

/// Opens `path` relative to the current directory.
pub fn open(path: &[u8], flags: u32, mode: u32) -> Result<i32, Errno> {
    rt::fs::open(path, flags, mode)
}

/// Creates (or truncates) `path` with `data` and `mode`.
pub fn write_file(path: &[u8], data: &[u8], mode: u32) -> Result<(), Errno> {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)?;
    let r = rt::io::write_all(fd, data);
    close(fd);
    r?;
    // The mode given at creation is masked by the umask.
    fchmodat(path, mode)
}

pub fn fchmodat(path: &[u8], mode: u32) -> Result<(), Errno> {
    let p = cstr(path);
    // SAFETY: p is NUL-terminated.
    unsafe { raw(nr::FCHMODAT, &[AT_FDCWD as usize, p.as_ptr() as usize, mode as usize]) }.map(drop)
}

/// Removes `path` whatever it is; errors are ignored (scratch clean-up).
pub fn remove(path: &[u8]) {
    let _ = rt::fs::unlinkat(AT_FDCWD, path, 0);
    let _ = rt::fs::unlinkat(AT_FDCWD, path, AT_REMOVEDIR as u32);
}

pub fn fcntl(fd: i32, cmd: usize, arg: usize) -> Result<usize, Errno> {
    call(nr::FCNTL, &[fd as usize, cmd, arg])
}

pub fn ppoll(fds: &mut [PollFd], timeout: Option<&Timespec>) -> Result<usize, Errno> {
    let t = timeout.map_or(0, |t| t as *const Timespec as usize);
    // SAFETY: fds and the timeout are live; no signal mask.
    unsafe { raw(nr::PPOLL, &[fds.as_mut_ptr() as usize, fds.len(), t, 0, 8]) }
}

// ---------------------------------------------------------------- processes

pub const WNOHANG: usize = 1;
pub const WUNTRACED: usize = 2;
pub const WEXITED: usize = 4;
pub const WCONTINUED: usize = 8;
pub const WNOWAIT: usize = 0x0100_0000;
pub const P_ALL: usize = 0;
pub const P_PID: usize = 1;

pub const CLONE_VM: usize = 0x100;
pub const CLONE_SIGHAND: usize = 0x800;
pub const CLONE_THREAD: usize = 0x10000;
pub const CLONE_SETTLS: usize = 0x80000;
pub const CLONE_PARENT_SETTID: usize = 0x10_0000;
pub const CLONE_CHILD_CLEARTID: usize = 0x20_0000;

pub const FUTEX_WAIT: usize = 0;
pub const FUTEX_WAKE: usize = 1;
pub const FUTEX_PRIVATE_FLAG: usize = 128;

pub const PR_SET_NAME: usize = 15;
pub const PR_GET_NAME: usize = 16;

/// `execve(path, argv, envp)` with NUL-terminated copies of everything.
pub fn execve(path: &[u8], argv: &[&[u8]], envp: &[&[u8]]) -> Errno {
    rt::process::execve(path, argv.iter().copied(), envp.iter().copied())
}

// ---------------------------------------------------------------- signals

pub const SIGHUP: i32 = 1;
pub const SIGILL: i32 = 4;
pub const SIGTRAP: i32 = 5;
pub const SIGBUS: i32 = 7;
pub const SIGKILL: i32 = 9;
pub const SIGUSR1: i32 = 10;
pub const SIGSEGV: i32 = 11;
pub const SIGUSR2: i32 = 12;
pub const SIGPIPE: i32 = 13;
pub const SIGALRM: i32 = 14;
pub const SIGTERM: i32 = 15;
pub const SIGCHLD: i32 = 17;
pub const SIGVTALRM: i32 = 26;
pub const SIGPROF: i32 = 27;
pub const SIGCONT: i32 = 18;
pub const SIGSTOP: i32 = 19;

pub const SA_SIGINFO: u64 = 0x4;
pub const SA_RESTORER: u64 = 0x0400_0000;
pub const SA_ONSTACK: u64 = 0x0800_0000;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;

pub const SIG_DFL: usize = 0;
pub const SIG_IGN: usize = 1;
pub const SIG_BLOCK: usize = 0;
pub const SIG_UNBLOCK: usize = 1;
pub const SIG_SETMASK: usize = 2;

pub const SS_ONSTACK: i32 = 1;
pub const SS_DISABLE: i32 = 2;

pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_TKILL: i32 = -6;
pub const SEGV_MAPERR: i32 = 1;
pub const SEGV_ACCERR: i32 = 2;
pub const ILL_ILLOPC: i32 = 1;
pub const TRAP_BRKPT: i32 = 1;
pub const BUS_ADRALN: i32 = 1;
pub const CLD_EXITED: i32 = 1;
pub const CLD_KILLED: i32 = 2;

/// The bit of `sig` in a `sigset_t`.
pub const fn sigbit(sig: i32) -> u64 {
    1 << (sig - 1)
}

/// arm64's `struct sigaction` as the kernel takes it.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct SigAction {
    pub handler: usize,
    pub flags: u64,
    pub restorer: usize,
    pub mask: u64,
}

/// `siginfo_t` (128 bytes); the union fields are read by offset.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SigInfo {
    pub signo: i32,
    pub errno: i32,
    pub code: i32,
    _pad: i32,
    /// si_pid/si_uid (kill, SIGCHLD) or si_addr (faults).
    pub fields: [u64; 14],
}

impl SigInfo {
    pub const fn zeroed() -> Self {
        SigInfo {
            signo: 0,
            errno: 0,
            code: 0,
            _pad: 0,
            fields: [0; 14],
        }
    }
    pub fn pid(&self) -> i32 {
        self.fields[0] as u32 as i32
    }
    pub fn uid(&self) -> u32 {
        (self.fields[0] >> 32) as u32
    }
    pub fn addr(&self) -> u64 {
        self.fields[0]
    }
    /// si_status of SIGCHLD.
    pub fn status(&self) -> i32 {
        self.fields[1] as u32 as i32
    }
}

/// The handler type: `sa_sigaction`.
pub type Handler = extern "C" fn(i32, *mut SigInfo, *mut UContext);

/// `stack_t`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Stack {
    pub sp: usize,
    pub flags: i32,
    pub size: usize,
}

/// arm64's `struct ucontext` up to and including `uc_mcontext`'s fixed
/// part; `__reserved` (the records: fpsimd_context, esr_context, ...)
/// follows at [`UContext::reserved`].
#[repr(C, align(16))]
pub struct UContext {
    pub flags: u64,
    pub link: u64,
    pub stack: Stack,
    pub sigmask: u64,
    _unused: [u8; 120],
    _align: u64,
    // struct sigcontext, 16-byte aligned, at offset 176.
    pub fault_address: u64,
    pub regs: [u64; 31],
    pub sp: u64,
    pub pc: u64,
    pub pstate: u64,
    _pad: u64,
    reserved: [u8; 0],
}

const _: () = assert!(core::mem::offset_of!(UContext, fault_address) == 176);
const _: () = assert!(core::mem::offset_of!(UContext, reserved) == 176 + 288);

pub const FPSIMD_MAGIC: u32 = 0x4650_8001;

/// `struct fpsimd_context`.
#[repr(C)]
pub struct FpsimdContext {
    pub magic: u32,
    pub size: u32,
    pub fpsr: u32,
    pub fpcr: u32,
    pub vregs: [u128; 32],
}

impl UContext {
    /// The fpsimd_context record of the signal frame, found by walking
    /// `__reserved` by magic and size as Linux lays it out.
    ///
    /// # Safety
    /// `self` must be the ucontext a signal handler was given.
    pub unsafe fn fpsimd(&mut self) -> Option<&mut FpsimdContext> {
        let base = self.reserved.as_mut_ptr();
        let mut off = 0usize;
        while off + 8 <= 4096 {
            // SAFETY: the frame holds 4096 bytes of records at `reserved`.
            let (magic, size) = unsafe {
                let p = base.add(off) as *const u32;
                (p.read(), p.add(1).read())
            };
            if magic == 0 || size < 8 {
                return None;
            }
            if magic == FPSIMD_MAGIC {
                // SAFETY: the record is an fpsimd_context, 16-aligned.
                return Some(unsafe { &mut *(base.add(off) as *mut FpsimdContext) });
            }
            off += size as usize;
        }
        None
    }
}

global_asm!(
    ".section .text.usertests_restorer,\"ax\",@progbits",
    ".global usertests_restorer",
    ".type usertests_restorer,@function",
    "usertests_restorer:",
    "    mov x8, #139",
    "    svc #0",
    ".size usertests_restorer, . - usertests_restorer",
);

unsafe extern "C" {
    /// Calls rt_sigreturn: the return address of our handlers.
    fn usertests_restorer();
}

pub fn rt_sigaction(sig: i32, act: Option<&SigAction>) -> Result<SigAction, Errno> {
    let mut old = SigAction::default();
    let a = act.map_or(0, |a| a as *const SigAction as usize);
    // SAFETY: act and old are live struct sigactions.
    unsafe {
        raw(
            nr::RT_SIGACTION,
            &[sig as usize, a, &mut old as *mut SigAction as usize, 8],
        )
    }?;
    Ok(old)
}

/// Installs `handler` with `SA_SIGINFO | SA_RESTORER | flags` and our
/// restorer; returns the old action.
pub fn handle(sig: i32, handler: Handler, flags: u64, mask: u64) -> Result<SigAction, Errno> {
    let act = SigAction {
        handler: handler as usize,
        flags: SA_SIGINFO | SA_RESTORER | flags,
        restorer: usertests_restorer as *const () as usize,
        mask,
    };
    rt_sigaction(sig, Some(&act))
}

/// Installs `handler` without `SA_RESTORER`: the kernel's own return path
/// (the vDSO's sigtramp on Linux) must bring the handler back.
pub fn handle_no_restorer(sig: i32, handler: Handler, flags: u64) -> Result<SigAction, Errno> {
    let act = SigAction {
        handler: handler as usize,
        flags: SA_SIGINFO | flags,
        restorer: 0,
        mask: 0,
    };
    rt_sigaction(sig, Some(&act))
}

/// Sets `sig` to `SIG_DFL` or `SIG_IGN`.
pub fn disposition(sig: i32, what: usize) -> Result<SigAction, Errno> {
    rt_sigaction(
        sig,
        Some(&SigAction {
            handler: what,
            ..Default::default()
        }),
    )
}

/// rt_sigprocmask(how, set, &old): the old mask.
pub fn sigprocmask(how: usize, set: Option<u64>) -> Result<u64, Errno> {
    let s = set.unwrap_or(0);
    let sp = if set.is_some() { &s as *const u64 as usize } else { 0 };
    let mut old = 0u64;
    // SAFETY: s and old are live sigsets.
    unsafe { raw(nr::RT_SIGPROCMASK, &[how, sp, &mut old as *mut u64 as usize, 8]) }?;
    Ok(old)
}

pub fn sigpending() -> Result<u64, Errno> {
    let mut set = 0u64;
    // SAFETY: set is a live sigset.
    unsafe { raw(nr::RT_SIGPENDING, &[&mut set as *mut u64 as usize, 8]) }?;
    Ok(set)
}

/// rt_sigsuspend(&mask): always an error, EINTR once a handler ran.
pub fn sigsuspend(mask: u64) -> Errno {
    // SAFETY: mask is a live sigset.
    match unsafe { raw(nr::RT_SIGSUSPEND, &[&mask as *const u64 as usize, 8]) } {
        Ok(_) => Errno(0),
        Err(e) => e,
    }
}

pub fn sigaltstack(new: Option<&Stack>) -> Result<Stack, Errno> {
    let n = new.map_or(0, |s| s as *const Stack as usize);
    let mut old = Stack::default();
    // SAFETY: new and old are live stack_t.
    unsafe { raw(nr::SIGALTSTACK, &[n, &mut old as *mut Stack as usize]) }?;
    Ok(old)
}

// ---------------------------------------------------------------- time

pub const CLOCK_REALTIME: usize = 0;
pub const CLOCK_MONOTONIC: usize = 1;
pub const CLOCK_PROCESS_CPUTIME_ID: usize = 2;
pub const CLOCK_THREAD_CPUTIME_ID: usize = 3;
pub const CLOCK_BOOTTIME: usize = 7;
pub const TIMER_ABSTIME: usize = 1;
pub const ITIMER_REAL: usize = 0;
pub const ITIMER_VIRTUAL: usize = 1;
pub const ITIMER_PROF: usize = 2;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Timespec {
    pub sec: i64,
    pub nsec: i64,
}

impl Timespec {
    pub const fn ms(ms: i64) -> Timespec {
        Timespec {
            sec: ms / 1000,
            nsec: (ms % 1000) * 1_000_000,
        }
    }
    pub fn as_ns(&self) -> i64 {
        self.sec * 1_000_000_000 + self.nsec
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Timeval {
    pub sec: i64,
    pub usec: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Itimerval {
    pub interval: Timeval,
    pub value: Timeval,
}

pub fn clock_gettime(clock: usize) -> Result<Timespec, Errno> {
    let mut t = Timespec::default();
    // SAFETY: t is a live timespec.
    unsafe { raw(nr::CLOCK_GETTIME, &[clock, &mut t as *mut Timespec as usize]) }?;
    Ok(t)
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> i64 {
    clock_gettime(CLOCK_MONOTONIC).map_or(0, |t| t.as_ns())
}

/// nanosleep(req, &rem): the remainder is returned with the error.
pub fn nanosleep(req: &Timespec) -> Result<(), (Errno, Timespec)> {
    let mut rem = Timespec::default();
    // SAFETY: req and rem are live timespecs.
    unsafe {
        raw(
            nr::NANOSLEEP,
            &[req as *const Timespec as usize, &mut rem as *mut Timespec as usize],
        )
    }
    .map(drop)
    .map_err(|e| (e, rem))
}

/// Sleeps `ms` milliseconds, resuming after interruptions.
pub fn sleep_ms(ms: i64) {
    let mut req = Timespec::ms(ms);
    while let Err((Errno::EINTR, rem)) = nanosleep(&req) {
        req = rem;
    }
}

/// setitimer(ITIMER_REAL): a one-shot SIGALRM after `ms` (0 disarms).
pub fn setitimer(which: usize, new: &Itimerval) -> Result<Itimerval, Errno> {
    let mut old = Itimerval::default();
    // SAFETY: new and old are live itimervals.
    unsafe {
        raw(
            nr::SETITIMER,
            &[
                which,
                new as *const Itimerval as usize,
                &mut old as *mut Itimerval as usize,
            ],
        )
    }?;
    Ok(old)
}

pub fn alarm_ms(ms: i64) -> Result<Itimerval, Errno> {
    let value = Timeval {
        sec: ms / 1000,
        usec: (ms % 1000) * 1000,
    };
    setitimer(
        ITIMER_REAL,
        &Itimerval {
            interval: Timeval::default(),
            value,
        },
    )
}

// ---------------------------------------------------------------- memory

pub const PROT_NONE: usize = 0;
pub const PROT_READ: usize = 1;
pub const PROT_WRITE: usize = 2;
pub const MAP_PRIVATE: usize = 0x02;
pub const MAP_FIXED: usize = 0x10;
pub const MAP_ANONYMOUS: usize = 0x20;
pub const PAGE: usize = 4096;

pub fn mmap_anon(len: usize, prot: usize) -> Result<usize, Errno> {
    call(nr::MMAP, &[0, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, usize::MAX, 0])
}

pub fn munmap(addr: usize, len: usize) -> Result<usize, Errno> {
    call(nr::MUNMAP, &[addr, len])
}

pub fn mprotect(addr: usize, len: usize, prot: usize) -> Result<usize, Errno> {
    call(nr::MPROTECT, &[addr, len, prot])
}

/// Reads a `u64` at `addr` with one `ldr`, so that a fault happens exactly
/// there.
///
/// # Safety
/// `addr` must be mapped readable, or a fault at it must be handled.
pub unsafe fn load(addr: usize) -> u64 {
    let v: u64;
    // SAFETY: the caller vouches for addr (or handles the fault).
    unsafe { asm!("ldr {v}, [{a}]", a = in(reg) addr, v = out(reg) v, options(nostack)) };
    v
}

/// Writes a `u64` at `addr` with one `str`.
///
/// # Safety
/// `addr` must be mapped writable memory that nothing else uses, or a fault
/// at it must be handled.
pub unsafe fn store(addr: usize, v: u64) {
    // SAFETY: the caller vouches for addr (or handles the fault).
    unsafe { asm!("str {v}, [{a}]", a = in(reg) addr, v = in(reg) v, options(nostack)) };
}
