//! `straced`: the program `ministrace -f` traces in tests/ptrace_tools.rs,
//! deterministic on any number of CPUs so that its trace is the same on
//! this kernel and on Linux once pids and addresses are masked.
//!
//! With SIGCHLD blocked, it forks three children one after the other and
//! waits for each: the first writes a line and exits 0, the second sends
//! itself SIGUSR1 (default action: death), the third SIGKILL. Then it
//! writes (a long line, to show truncation, and one with escapes), maps
//! and unmaps a page, passes "ping" through a pipe, opens a missing file,
//! and unblocks SIGCHLD, which delivers the first child's (the others'
//! were merged into it, being the same standard signal). It exits 3.
//! Only raw system calls, no allocation: each line of the trace is one
//! call the source shows.
//!
//! `straced --thread` starts a thread that writes a line and exits, and
//! exits 0 once the kernel has cleared the thread's tid. `straced --attach-loop N` forks a child that calls getpid and sleeps
//! 10 ms, N times, then exits 0, and becomes `ministrace -p CHILD -e
//! trace=getpid -o /tmp/trace` (a shell's `&` may leave a subshell
//! between `$!` and the program).
#![no_std]
#![no_main]

extern crate alloc;

use rt::process::{fork, Fork};
use rt::syscall::{nr, syscall0, syscall1, syscall2, syscall3, syscall4, syscall6};
use uapi::fcntl::{AT_FDCWD, O_CLOEXEC, O_RDONLY};
use uapi::mman::{MAP_ANONYMOUS, MAP_PRIVATE, PROT_READ, PROT_WRITE};
use uapi::sched::{CLONE_CHILD_CLEARTID, CLONE_FILES, CLONE_FS, CLONE_SIGHAND, CLONE_SYSVSEM, CLONE_THREAD, CLONE_VM};
use uapi::signal::{SIGKILL, SIGSET_SIZE, SIGUSR1, SIG_BLOCK, SIG_UNBLOCK};

rt::main!(main);

const SIGCHLD_MASK: u64 = 1 << (uapi::signal::SIGCHLD - 1);

fn sigprocmask(how: u64, mask: &u64) {
    // SAFETY: mask is a readable sigset_t of 8 bytes; no old set.
    unsafe {
        syscall4(
            nr::RT_SIGPROCMASK,
            how as usize,
            mask as *const u64 as usize,
            0,
            SIGSET_SIZE as usize,
        )
    };
}

fn write(fd: i32, b: &[u8]) {
    // SAFETY: b is readable for its length.
    unsafe { syscall3(nr::WRITE, fd as usize, b.as_ptr() as usize, b.len()) };
}

fn wait_for(pid: i32) {
    let mut status: i32 = 0;
    // SAFETY: status is a writable int; no rusage.
    unsafe { syscall4(nr::WAIT4, pid as usize, &mut status as *mut i32 as usize, 0, 0) };
}

fn child(body: fn() -> !) {
    match fork() {
        Ok(Fork::Child) => body(),
        Ok(Fork::Parent(pid)) => wait_for(pid),
        Err(_) => exit(2),
    }
}

/// `exit_group(code)`.
fn exit(code: i32) -> ! {
    rt::process::exit(code)
}

fn kill_self(sig: usize) -> ! {
    // SAFETY: no memory is passed.
    unsafe {
        let pid = syscall0(nr::GETPID);
        syscall2(nr::KILL, pid as usize, sig);
    }
    exit(99)
}

/// getpid and a 10 ms nanosleep, `n` times.
fn getpid_loop(n: u32) -> ! {
    let ts = [0i64, 10_000_000];
    for _ in 0..n {
        // SAFETY: getpid takes no memory; ts is a readable timespec.
        unsafe {
            syscall0(nr::GETPID);
            syscall2(nr::NANOSLEEP, ts.as_ptr() as usize, 0);
        }
    }
    exit(0)
}

/// The stack of [`thread`]'s thread.
static mut THREAD_STACK: [u128; 256] = [0; 256];
/// The thread's tid until the kernel clears it as the thread exits
/// (CLONE_CHILD_CLEARTID).
static THREAD_TID: core::sync::atomic::AtomicI32 = core::sync::atomic::AtomicI32::new(-1);

/// `straced --thread`: a thread (CLONE_VM | CLONE_FS | CLONE_FILES |
/// CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_CHILD_CLEARTID)
/// that writes a line and exits 0, while the main thread waits, without
/// a system call, for the kernel to clear its tid (the thread is then
/// past its exit), then exits 0.
fn thread() -> ! {
    const FLAGS: usize =
        (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_CHILD_CLEARTID)
            as usize;
    let top = core::ptr::addr_of_mut!(THREAD_STACK) as usize + 256 * 16;
    let tid = THREAD_TID.as_ptr() as usize;
    // SAFETY: the thread runs only the asm below on a stack of its own:
    // a write of a static line, then exit; the kernel clears THREAD_TID.
    unsafe {
        core::arch::asm!(
            "svc #0",
            "cbnz x0, 1f",
            "mov x0, #1",
            "mov x1, {line}",
            "mov x2, #7",
            "mov x8, #{write}",
            "svc #0",
            "mov x0, #0",
            "mov x8, #{exit}",
            "svc #0",
            "1:",
            write = const uapi::syscalls::nr::WRITE,
            exit = const uapi::syscalls::nr::EXIT,
            line = in(reg) b"thread\n".as_ptr(),
            in("x8") nr::CLONE,
            inlateout("x0") FLAGS => _,
            in("x1") top,
            in("x2") 0,
            in("x3") 0,
            in("x4") tid,
            options(nostack)
        )
    };
    while THREAD_TID.load(core::sync::atomic::Ordering::Acquire) != 0 {
        core::hint::spin_loop();
    }
    exit(0)
}

/// `pid` in decimal, in `buf`.
fn decimal(mut pid: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 || i == 0 {
            return &buf[i..];
        }
    }
}

fn attach_loop(n: u32) -> i32 {
    let child = match fork() {
        Ok(Fork::Child) => getpid_loop(n),
        Ok(Fork::Parent(pid)) => pid,
        Err(_) => return 2,
    };
    let mut buf = [0u8; 10];
    let pid = decimal(child as u32, &mut buf);
    let argv: [&[u8]; 8] = [
        b"ministrace",
        b"-p",
        pid,
        b"-e",
        b"trace=getpid",
        b"-o",
        b"/tmp/trace",
        b"",
    ];
    let e = rt::process::execve(b"/bin/ministrace", argv[..7].iter().copied(), core::iter::empty());
    rt::eprintln!("straced: exec /bin/ministrace: {e:?}");
    2
}

fn main(args: rt::Args) -> i32 {
    if args.get(1) == Some(&b"--thread"[..]) {
        thread();
    }
    if args.get(1) == Some(&b"--attach-loop"[..]) {
        let n = args
            .get(2)
            .and_then(|a| core::str::from_utf8(a).ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(100);
        return attach_loop(n);
    }
    sigprocmask(SIG_BLOCK, &SIGCHLD_MASK);
    child(|| {
        write(1, b"child\n");
        exit(0)
    });
    child(|| kill_self(SIGUSR1 as usize));
    child(|| kill_self(SIGKILL as usize));
    write(1, b"parent: a line longer than thirty-two bytes\n");
    write(1, b"\ttab, quote \" and \x01\x02 bytes\n");
    // SAFETY: an anonymous private page, unmapped at once.
    unsafe {
        let p = syscall6(
            nr::MMAP,
            0,
            4096,
            (PROT_READ | PROT_WRITE) as usize,
            (MAP_PRIVATE | MAP_ANONYMOUS) as usize,
            usize::MAX,
            0,
        );
        syscall2(nr::MUNMAP, p as usize, 4096);
    }
    let mut fds = [0i32; 2];
    let mut buf = [0u8; 16];
    // SAFETY: fds is a writable int[2], buf a writable 16 bytes; "ping"
    // is readable.
    unsafe {
        syscall2(nr::PIPE2, fds.as_mut_ptr() as usize, O_CLOEXEC as usize);
        syscall3(nr::WRITE, fds[1] as usize, b"ping".as_ptr() as usize, 4);
        syscall3(nr::READ, fds[0] as usize, buf.as_mut_ptr() as usize, buf.len());
        syscall1(nr::CLOSE, fds[0] as usize);
        syscall1(nr::CLOSE, fds[1] as usize);
    }
    // SAFETY: a NUL-terminated path.
    unsafe {
        syscall4(
            nr::OPENAT,
            AT_FDCWD as usize,
            c"/nonexistent/file".as_ptr() as usize,
            O_RDONLY as usize,
            0,
        )
    };
    sigprocmask(SIG_UNBLOCK, &SIGCHLD_MASK);
    exit(3)
}
