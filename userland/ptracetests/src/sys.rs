//! The raw system calls the checks make: ptrace, wait4/waitid with
//! `__WALL`, kill, and the stops whose registers a tracer inspects.

use alloc::vec::Vec;
use rt::syscall::{check, nr, syscall0, syscall2, syscall3, syscall4, syscall5, syscall6};
use rt::Errno;

/// wait4/waitid options (`__WALL`, `WNOHANG`, ...), from uapi.
pub use uapi::wait::{WALL, WEXITED, WNOHANG, WNOWAIT, WSTOPPED, WUNTRACED};

/// `ptrace(request, pid, addr, data)` as the system call takes it.
pub fn ptrace(request: i64, pid: i32, addr: usize, data: usize) -> Result<usize, Errno> {
    // SAFETY: the checks pass pointers to buffers they own, of the size the
    // request writes, or addresses only the tracee's memory is read at.
    check(unsafe { syscall4(nr::PTRACE, request as usize, pid as usize, addr, data) })
}

/// `wait4(pid, &status, options | __WALL, NULL)`: (pid, raw status).
pub fn wait(pid: i32, options: u32) -> Result<(i32, i32), Errno> {
    let mut status: i32 = 0;
    loop {
        // SAFETY: status is a writable int.
        let r = check(unsafe {
            syscall4(
                nr::WAIT4,
                pid as usize,
                &mut status as *mut i32 as usize,
                (options | WALL) as usize,
                0,
            )
        });
        match r {
            Err(Errno::EINTR) => continue,
            r => return r.map(|p| (p as i32, status)),
        }
    }
}

/// `waitid(P_PID, pid, &info, options)`: the siginfo's (si_pid, si_code,
/// si_status).
pub fn waitid(pid: i32, options: u32) -> Result<(i32, i32, i32), Errno> {
    let mut info = [0u8; uapi::signal::SIGINFO_SIZE];
    // SAFETY: info is a writable siginfo_t; no rusage.
    check(unsafe {
        syscall5(
            nr::WAITID,
            uapi::wait::P_PID as usize,
            pid as usize,
            info.as_mut_ptr() as usize,
            options as usize,
            0,
        )
    })?;
    let si = uapi::signal::SigInfo::from_bytes(&info);
    Ok((si.pid as i32, si.code, si.status))
}

pub fn getpid() -> i32 {
    // SAFETY: no arguments.
    unsafe { syscall0(nr::GETPID) as i32 }
}

/// `setpgid(0, 0)`.
pub fn setpgid_self() {
    // SAFETY: no memory is passed.
    unsafe { syscall2(nr::SETPGID, 0, 0) };
}

/// `kill(pid, sig)` returning the raw result (a tracer may change it).
pub fn kill_raw(pid: i32, sig: i32) -> isize {
    // SAFETY: no memory is passed.
    unsafe { syscall2(nr::KILL, pid as usize, sig as usize) }
}

/// Stops the caller with `sig` sent to itself.
pub fn raise(sig: i32) {
    kill_raw(getpid(), sig);
}

pub fn sleep_ms(ms: u64) {
    let ts = [(ms / 1000) as i64, ((ms % 1000) * 1_000_000) as i64];
    // SAFETY: ts is a readable struct timespec; no remainder wanted.
    unsafe { syscall2(nr::NANOSLEEP, ts.as_ptr() as usize, 0) };
}

/// Everything readable from `fd` until end of file.
pub fn read_all(fd: i32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match rt::fs::read(fd, &mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// `exit_group(code)` straight away.
pub fn exit_now(code: i32) -> ! {
    rt::process::exit(code)
}

/// `execve(path, [path, args...], [])`; returns only on failure.
pub fn exec_self(args: &[&[u8]]) -> Errno {
    let path: &[u8] = b"/bin/ptracetests";
    rt::process::execve(
        path,
        core::iter::once(path).chain(args.iter().copied()),
        core::iter::empty(),
    )
}

/// `kill(getpid(), SIGSTOP)` with `x7` set to `x7_in` around the call
/// (a tracer at the syscall stops sees its own marker there); returns the
/// call's x0 and x7 after it.
pub fn kill_self_marked(sig: i32, x7_in: u64) -> (isize, u64) {
    let pid = getpid();
    let ret: isize;
    let x7_out: u64;
    // SAFETY: kill takes no memory; x7 is an argument register the call
    // preserves and the asm declares as clobbered.
    unsafe {
        core::arch::asm!(
            "svc #0",
            in("x8") nr::KILL,
            inlateout("x0") pid as isize => ret,
            in("x1") sig,
            inlateout("x7") x7_in => x7_out,
            options(nostack)
        )
    };
    (ret, x7_out)
}

/// Stops with `sig` sent to itself while `d0` holds `d0_in`; returns `d0`
/// after the stop (a tracer may have changed it).
pub fn kill_self_with_d0(sig: i32, d0_in: u64) -> u64 {
    let pid = getpid();
    let out: u64;
    // SAFETY: kill takes no memory; v0 is declared clobbered.
    unsafe {
        core::arch::asm!(
            "fmov d0, {a}",
            "svc #0",
            "fmov {b}, d0",
            a = in(reg) d0_in,
            b = lateout(reg) out,
            in("x8") nr::KILL,
            inlateout("x0") pid as isize => _,
            in("x1") sig,
            out("v0") _,
            options(nostack)
        )
    };
    out
}

/// Stops with `sig` sent to itself while TPIDR_EL0 holds `tp`; returns
/// TPIDR_EL0 after the stop, and puts back the old value.
pub fn kill_self_with_tls(sig: i32, tp: u64) -> u64 {
    let pid = getpid();
    let out: u64;
    // SAFETY: kill takes no memory; TPIDR_EL0 is restored before the asm
    // ends (the runtime does not use it anyway).
    unsafe {
        core::arch::asm!(
            "mrs x9, tpidr_el0",
            "msr tpidr_el0, {a}",
            "svc #0",
            "mrs {b}, tpidr_el0",
            "msr tpidr_el0, x9",
            a = in(reg) tp,
            b = lateout(reg) out,
            in("x8") nr::KILL,
            inlateout("x0") pid as isize => _,
            in("x1") sig,
            out("x9") _,
            options(nostack)
        )
    };
    out
}

/// A raw system call with up to three arguments (the number a tracer may
/// change).
pub fn syscall_raw(n: usize, a0: usize, a1: usize, a2: usize) -> isize {
    // SAFETY: the checks call only numbers that take no memory here.
    unsafe { syscall3(n, a0, a1, a2) }
}

/// vfork whose child exits at once with `code`: in one asm block, as the
/// child shares this stack until it exits. Returns the child's pid.
pub fn vfork_exit(code: usize) -> isize {
    const CLONE_VM: usize = uapi::sched::CLONE_VM as usize;
    const CLONE_VFORK: usize = uapi::sched::CLONE_VFORK as usize;
    const SIGCHLD: usize = uapi::signal::SIGCHLD as usize;
    let ret: isize;
    // SAFETY: the child runs only the exit_group below, touching no memory.
    unsafe {
        core::arch::asm!(
            "svc #0",
            "cbnz x0, 1f",
            "mov x0, {code}",
            "mov x8, #{exit_group}",
            "svc #0",
            "1:",
            exit_group = const uapi::syscalls::nr::EXIT_GROUP,
            code = in(reg) code,
            in("x8") nr::CLONE,
            inlateout("x0") CLONE_VM | CLONE_VFORK | SIGCHLD => ret,
            in("x1") 0,
            in("x2") 0,
            in("x3") 0,
            in("x4") 0,
            options(nostack)
        )
    };
    ret
}

core::arch::global_asm!(
    ".text",
    ".global ptt_answer",
    ".p2align 3",
    "ptt_answer:",
    "mov x0, #41",
    "ret",
);

unsafe extern "C" {
    fn ptt_answer() -> u64;
}

/// The address of a two-instruction function returning 41, which a tracer
/// patches in its tracee's text.
pub fn answer_addr() -> usize {
    ptt_answer as *const () as usize
}

/// Calls it (through a pointer the compiler cannot see through).
pub fn answer() -> u64 {
    let f: unsafe extern "C" fn() -> u64 = core::hint::black_box(ptt_answer);
    // SAFETY: the function only sets x0 and returns.
    unsafe { f() }
}

/// A stack for [`thread_exit`]'s thread.
static mut THREAD_STACK: [u128; 256] = [0; 256];

/// Starts a thread (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
/// CLONE_THREAD | CLONE_SYSVSEM) that exits at once with `code`; its tid.
pub fn thread_exit(code: usize) -> isize {
    use uapi::sched::{CLONE_FILES, CLONE_FS, CLONE_SIGHAND, CLONE_SYSVSEM, CLONE_THREAD, CLONE_VM};
    const FLAGS: usize = (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM) as usize;
    let top = core::ptr::addr_of_mut!(THREAD_STACK) as usize + 256 * 16;
    let ret: isize;
    // SAFETY: the thread runs only the exit below on a stack of its own
    // that nothing else uses; it touches no memory.
    unsafe {
        core::arch::asm!(
            "svc #0",
            "cbnz x0, 1f",
            "mov x0, {code}",
            "mov x8, #{exit}",
            "svc #0",
            "1:",
            exit = const uapi::syscalls::nr::EXIT,
            code = in(reg) code,
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

/// `mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0)`: the address.
pub fn mmap_file_readonly(fd: i32, len: usize) -> Result<usize, Errno> {
    // SAFETY: a new mapping at an address of the kernel's choosing touches
    // no existing memory.
    check(unsafe { syscall6(nr::MMAP, 0, len, rt::mm::PROT_READ, rt::mm::MAP_PRIVATE, fd as usize, 0) })
}

/// `pread64(fd, buf, buf.len(), pos)`.
pub fn pread(fd: i32, buf: &mut [u8], pos: usize) -> Result<usize, Errno> {
    // SAFETY: buf is writable for its length.
    check(unsafe { syscall4(nr::PREAD64, fd as usize, buf.as_mut_ptr() as usize, buf.len(), pos) })
}

/// `pwrite64(fd, buf, buf.len(), pos)`.
pub fn pwrite(fd: i32, buf: &[u8], pos: usize) -> Result<usize, Errno> {
    // SAFETY: buf is readable for its length.
    check(unsafe { syscall4(nr::PWRITE64, fd as usize, buf.as_ptr() as usize, buf.len(), pos) })
}

/// `tgkill(tgid, tid, sig)`: a signal for one thread.
pub fn tgkill(tgid: i32, tid: i32, sig: i32) -> Result<usize, Errno> {
    // SAFETY: no pointers.
    check(unsafe { syscall3(nr::TGKILL, tgid as usize, tid as usize, sig as usize) })
}

/// A stack for [`thread_writer`]'s thread.
static mut WRITER_STACK: [u128; 256] = [0; 256];
/// What it writes, and how long it sleeps in between (10 ms).
static WRITER_BYTE: u8 = b'w';
static WRITER_NAP: [u64; 2] = [0, 10_000_000];

/// Starts a thread (flags as [`thread_exit`]'s) that writes a byte to
/// `fd` every 10 ms until the process ends: while it is stopped, nothing
/// arrives. Its tid.
pub fn thread_writer(fd: i32) -> isize {
    use uapi::sched::{CLONE_FILES, CLONE_FS, CLONE_SIGHAND, CLONE_SYSVSEM, CLONE_THREAD, CLONE_VM};
    const FLAGS: usize = (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM) as usize;
    let top = core::ptr::addr_of_mut!(WRITER_STACK) as usize + 256 * 16;
    let ret: isize;
    // SAFETY: the thread runs only the loop below, on a stack of its own
    // that nothing else uses, reading two statics and keeping its inputs
    // in registers the system calls preserve.
    unsafe {
        core::arch::asm!(
            "svc #0",
            "cbnz x0, 2f",
            "1:",
            "mov x0, x10",
            "mov x1, x11",
            "mov x2, #1",
            "mov x8, #{write}",
            "svc #0",
            "mov x0, x12",
            "mov x1, #0",
            "mov x8, #{nanosleep}",
            "svc #0",
            "b 1b",
            "2:",
            write = const uapi::syscalls::nr::WRITE,
            nanosleep = const uapi::syscalls::nr::NANOSLEEP,
            in("x8") nr::CLONE,
            inlateout("x0") FLAGS => ret,
            in("x1") top,
            in("x2") 0,
            in("x3") 0,
            in("x4") 0,
            in("x10") fd as usize,
            in("x11") core::ptr::addr_of!(WRITER_BYTE) as usize,
            in("x12") core::ptr::addr_of!(WRITER_NAP) as usize,
            options(nostack)
        )
    };
    ret
}

/// `rseq(area, len, 0, sig)`: registers the thread's rseq area, which the
/// kernel then writes at every return to user mode.
pub fn rseq_register(area: usize, len: usize, sig: u32) -> isize {
    // SAFETY: the caller passes a static area of `len` writable bytes that
    // lives as long as the process.
    unsafe { syscall4(nr::RSEQ, area, len, 0, sig as usize) }
}
