//! Raw Linux arm64 system calls, threads, signal handlers and code pages
//! for the attacks. Threads started here share the address space and must
//! not allocate (`rt`'s heap has no lock) nor print.

use core::arch::{asm, global_asm};
use core::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

use rt::syscall::syscall6;
use uapi::sigframe;
use uapi::signal::KernelSigaction;
pub use uapi::Errno;

pub const PAGE: usize = 4096;

// Linux arm64's numbers, from the one table in uapi.
pub use uapi::syscalls::nr;

// Linux's flag and signal numbers, from uapi, in the types the raw calls
// here take: system call arguments are usize, signal numbers i32 (the
// `int` of a handler's first argument and of wait statuses).
pub const PROT_NONE: usize = uapi::mman::PROT_NONE as usize;
pub const PROT_READ: usize = uapi::mman::PROT_READ as usize;
pub const PROT_WRITE: usize = uapi::mman::PROT_WRITE as usize;
pub const PROT_EXEC: usize = uapi::mman::PROT_EXEC as usize;
pub const MAP_SHARED: usize = uapi::mman::MAP_SHARED as usize;
pub const MAP_PRIVATE: usize = uapi::mman::MAP_PRIVATE as usize;
pub const MAP_FIXED: usize = uapi::mman::MAP_FIXED as usize;
pub const MAP_ANONYMOUS: usize = uapi::mman::MAP_ANONYMOUS as usize;
pub const MAP_NORESERVE: usize = uapi::mman::MAP_NORESERVE as usize;

pub const SIGTRAP: i32 = uapi::signal::SIGTRAP as i32;
pub const SIGILL: i32 = uapi::signal::SIGILL as i32;
pub const SIGKILL: i32 = uapi::signal::SIGKILL as i32;
pub const SIGUSR1: i32 = uapi::signal::SIGUSR1 as i32;
pub const SIGSEGV: i32 = uapi::signal::SIGSEGV as i32;
pub const SIGPIPE: i32 = uapi::signal::SIGPIPE as i32;
pub const SIGALRM: i32 = uapi::signal::SIGALRM as i32;
pub const SIGCHLD: i32 = uapi::signal::SIGCHLD as i32;
pub const SIGSTOP: i32 = uapi::signal::SIGSTOP as i32;
pub const SIGXFSZ: i32 = uapi::signal::SIGXFSZ as i32;
pub const SIGRTMIN: i32 = uapi::signal::SIGRTMIN as i32;

pub use uapi::signal::sa::{SA_NODEFER, SA_ONSTACK, SA_RESTORER, SA_SIGINFO};
pub use uapi::signal::{SIG_BLOCK, SIG_IGN};

pub const CLONE_VM: usize = uapi::sched::CLONE_VM as usize;
pub const CLONE_FS: usize = uapi::sched::CLONE_FS as usize;
pub const CLONE_FILES: usize = uapi::sched::CLONE_FILES as usize;
pub const CLONE_SIGHAND: usize = uapi::sched::CLONE_SIGHAND as usize;
pub const CLONE_THREAD: usize = uapi::sched::CLONE_THREAD as usize;
pub const CLONE_CHILD_CLEARTID: usize = uapi::sched::CLONE_CHILD_CLEARTID as usize;
pub const CLONE_CHILD_SETTID: usize = uapi::sched::CLONE_CHILD_SETTID as usize;

pub const FUTEX_WAIT: usize = uapi::futex::FUTEX_WAIT as usize;
pub const FUTEX_WAKE: usize = uapi::futex::FUTEX_WAKE as usize;
pub const FUTEX_PRIVATE: usize = uapi::futex::FUTEX_PRIVATE_FLAG as usize;

pub const WNOHANG: usize = uapi::wait::WNOHANG as usize;
pub const WALL: usize = uapi::wait::WALL as usize;

pub const O_NONBLOCK: usize = uapi::fcntl::O_NONBLOCK as usize;
pub const O_CLOEXEC: usize = uapi::fcntl::O_CLOEXEC as usize;

/// `-errno` as the raw calls here return it.
pub const fn neg(e: uapi::Errno) -> isize {
    e.as_neg() as isize
}

/// Where this process counts its progress: the address of a word in a
/// shared anonymous page the supervisor watches, 0 when none (the
/// supervisor itself). Set in the attack child after fork; its threads
/// share it and its forked children inherit the mapping.
static PROGRESS: AtomicUsize = AtomicUsize::new(0);

/// Makes this process (and what it forks later) count its progress at
/// `addr`, a word of a MAP_SHARED page mapped before the fork.
pub fn count_progress_at(addr: usize) {
    PROGRESS.store(addr, SeqCst);
}

/// One step of an attack done: the supervisor's hang verdict is "no step
/// for the attack's limit", not "slower than the limit".
pub fn progress() {
    let at = PROGRESS.load(Relaxed);
    if at != 0 {
        word(at).fetch_add(1, Relaxed);
    }
}

/// The steps counted so far where this process counts them (0 outside an
/// attack: waits then end by the clock alone).
pub fn progress_count() -> u64 {
    let at = PROGRESS.load(Relaxed);
    if at == 0 {
        0
    } else {
        word(at).load(Relaxed)
    }
}

/// Any system call; the raw result (`-errno` on failure). A call that
/// returns is a step of progress: a hung kernel returns none.
pub fn sys(n: usize, a: &[usize]) -> isize {
    let r = sys_idle(n, a);
    progress();
    r
}

/// A system call that is not progress: sleeps and polls for children, so
/// that an attack waiting on a stuck child does not look busy.
fn sys_idle(n: usize, a: &[usize]) -> isize {
    let g = |i: usize| a.get(i).copied().unwrap_or(0);
    // SAFETY: the attacks pass arguments on purpose that may be invalid;
    // the kernel must refuse them. Calls that could corrupt this program's
    // own memory are made in forked children or on memory set aside for
    // them (each attack says which).
    unsafe { syscall6(n, g(0), g(1), g(2), g(3), g(4), g(5)) }
}

pub fn mmap(addr: usize, len: usize, prot: usize, flags: usize) -> isize {
    sys(nr::MMAP, &[addr, len, prot, flags, usize::MAX, 0])
}

/// Fresh anonymous read-write private memory; panics if refused.
pub fn anon(len: usize) -> usize {
    let r = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    assert!(r > 0, "mmap {len}: {r}");
    r as usize
}

/// A one-way channel from forked children (and their threads) to the
/// attack: a non-blocking pipe of 8-byte records.
#[derive(Clone, Copy)]
pub struct Channel {
    r: i32,
    w: i32,
}

impl Channel {
    pub fn new() -> Channel {
        let mut p = [-1i32; 2];
        let r = sys(nr::PIPE2, &[p.as_mut_ptr() as usize, O_NONBLOCK | O_CLOEXEC]);
        assert!(r == 0, "pipe2: {r}");
        Channel { r: p[0], w: p[1] }
    }

    /// Sends `v`; dropped if the pipe is full.
    pub fn send(&self, v: u64) {
        let b = v.to_le_bytes();
        sys(nr::WRITE, &[self.w as usize, b.as_ptr() as usize, 8]);
    }

    /// Reads what was sent since the last call: (how many, the last).
    pub fn drain(&self) -> (usize, Option<u64>) {
        let (mut n, mut last) = (0, None);
        let mut b = [0u8; 8];
        while sys(nr::READ, &[self.r as usize, b.as_mut_ptr() as usize, 8]) == 8 {
            n += 1;
            last = Some(u64::from_le_bytes(b));
        }
        (n, last)
    }

    /// Reads one record into `b`; whether there was one.
    pub fn drain_one(&self, b: &mut [u8; 8]) -> bool {
        sys(nr::READ, &[self.r as usize, b.as_mut_ptr() as usize, 8]) == 8
    }

    pub fn close(self) {
        sys(nr::CLOSE, &[self.r as usize]);
        sys(nr::CLOSE, &[self.w as usize]);
    }
}

/// A word of shared memory as an atomic.
pub fn word(addr: usize) -> &'static AtomicU64 {
    // SAFETY: callers pass 8-byte aligned addresses of mappings that live
    // until the process ends and are only accessed atomically.
    unsafe { &*(addr as *const AtomicU64) }
}

pub fn getpid() -> i32 {
    sys(nr::GETPID, &[]) as i32
}

pub fn gettid() -> i32 {
    sys(nr::GETTID, &[]) as i32
}

pub fn now_ns() -> u64 {
    proof::now_ns()
}

pub fn sleep_ns(ns: u64) {
    let ts = [(ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64];
    sys_idle(nr::NANOSLEEP, &[ts.as_ptr() as usize, 0]);
}

pub fn sleep_ms(ms: u64) {
    sleep_ns(ms * 1_000_000);
}

/// `setitimer(ITIMER_REAL)`: SIGALRM after `ms` (0 disarms). With the
/// default action the process dies: the watchdog of every attack child.
pub fn alarm_ms(ms: u64) {
    let it = [0i64, 0, (ms / 1000) as i64, ((ms % 1000) * 1000) as i64];
    sys(
        nr::SETITIMER,
        &[uapi::time::ITIMER_REAL as usize, it.as_ptr() as usize, 0],
    );
}

pub fn kill(pid: i32, sig: i32) -> isize {
    sys(nr::KILL, &[pid as usize, sig as usize])
}

pub fn exit_group(code: i32) -> ! {
    rt::process::exit(code)
}

/// `fork()`; 0 in the child.
pub fn fork() -> i32 {
    sys(nr::CLONE, &[SIGCHLD as usize, 0, 0, 0, 0]) as i32
}

/// Forks a child that runs `f` and exits with its result; the pid.
pub fn spawn(f: impl FnOnce() -> i32) -> i32 {
    let pid = fork();
    if pid == 0 {
        exit_group(f());
    }
    assert!(pid > 0, "fork: {pid}");
    pid
}

/// `wait4(pid, &status, options)`: (pid, raw status), or the raw error.
pub fn wait4(pid: i32, options: usize) -> (isize, i32) {
    let mut st = 0i32;
    loop {
        let r = sys_idle(nr::WAIT4, &[pid as usize, &mut st as *mut i32 as usize, options, 0]);
        if r != neg(Errno::EINTR) {
            return (r, st);
        }
    }
}

/// Waits up to `ms` for `pid`; None if it did not end.
pub fn wait_timeout(pid: i32, ms: u64) -> Option<i32> {
    let end = now_ns() + ms * 1_000_000;
    loop {
        let (r, st) = wait4(pid, WNOHANG);
        if r == pid as isize {
            return Some(st);
        }
        if r < 0 {
            return Some(-1);
        }
        if now_ns() > end {
            return None;
        }
        sleep_ms(5);
    }
}

/// How a raw wait status reads: `exit N` or `signal S`.
pub fn describe(st: i32) -> (bool, i32) {
    use uapi::wait::{WEXITSTATUS, WIFEXITED, WTERMSIG};
    if WIFEXITED(st) {
        (true, WEXITSTATUS(st))
    } else {
        (false, WTERMSIG(st))
    }
}

/// Reaps every child, waiting up to `ms` in all; how many remained.
pub fn reap_all(ms: u64) -> usize {
    let end = now_ns() + ms * 1_000_000;
    loop {
        let (r, _) = wait4(-1, WNOHANG);
        if r == neg(Errno::ECHILD) {
            return 0;
        }
        if r == 0 {
            if now_ns() > end {
                return 1;
            }
            sleep_ms(5);
        }
    }
}

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

global_asm!(
    ".section .text.adversary_clone,\"ax\",@progbits",
    ".global adversary_clone",
    ".type adversary_clone,@function",
    // x0..x4: clone's arguments in arm64 order (flags, newsp, parent_tid,
    // tls, child_tid); x5: the child's function, x6: its argument. The
    // child calls x5(x6) on its new stack and then exit()s (one thread).
    "adversary_clone:",
    "    mov x10, x5",
    "    mov x11, x6",
    "    mov x8, #{clone}",
    "    svc #0",
    "    cbnz x0, 1f",
    "    mov x0, x11",
    "    blr x10",
    "    mov x8, #{exit}",
    "    svc #0",
    "1:  ret",
    ".size adversary_clone, . - adversary_clone",
    ".section .text.adversary_restorer,\"ax\",@progbits",
    ".global adversary_restorer",
    ".type adversary_restorer,@function",
    "adversary_restorer:",
    "    mov x8, #{rt_sigreturn}",
    "    svc #0",
    ".size adversary_restorer, . - adversary_restorer",
    clone = const nr::CLONE,
    exit = const nr::EXIT,
    rt_sigreturn = const nr::RT_SIGRETURN,
);

unsafe extern "C" {
    fn adversary_clone(
        flags: usize,
        stack: usize,
        ptid: usize,
        tls: usize,
        ctid: usize,
        f: extern "C" fn(usize) -> usize,
        arg: usize,
    ) -> isize;
    fn adversary_restorer();
}

pub const THREAD_STACK: usize = 64 * 1024;
const THREAD_FLAGS: usize = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_CHILD_CLEARTID;

/// A thread started by [`thread`]: its tid, and the word the kernel
/// clears when it exits.
pub struct Thread {
    pub tid: isize,
    ctid: &'static AtomicI32,
}

/// Starts a thread running `f(arg)` on a fresh stack (never freed: the
/// attack processes are short-lived).
pub fn thread(f: extern "C" fn(usize) -> usize, arg: usize) -> Thread {
    let stack = anon(THREAD_STACK + PAGE);
    let ctid_addr = stack; // the first word of the lowest page
                           // SAFETY: a fresh private page, used only as this atomic.
    let ctid = unsafe { &*(ctid_addr as *const AtomicI32) };
    ctid.store(-1, SeqCst);
    // SAFETY: the new thread runs `f` on its own stack (above the page of
    // the tid word) and shares only atomics with this one.
    let tid = unsafe { adversary_clone(THREAD_FLAGS, stack + THREAD_STACK + PAGE, 0, 0, ctid_addr, f, arg) };
    if tid > 0 {
        // CLONE_CHILD_CLEARTID clears it at exit; until the child runs it
        // holds -1, which join treats as alive.
    } else {
        ctid.store(0, SeqCst);
    }
    Thread { tid, ctid }
}

impl Thread {
    /// Waits for the thread to exit, giving up after `ms` without progress
    /// (see [`progress`]); whether it exited.
    pub fn join(&self, ms: u64) -> bool {
        // A slow thread is not a stuck one: the wait lasts while the
        // attack's processes progress, until `ms` pass without a step (or
        // ten times `ms` in all). The wait itself is no progress.
        let start = now_ns();
        let (mut seen, mut since) = (progress_count(), start);
        loop {
            let v = self.ctid.load(SeqCst);
            if v == 0 {
                return true;
            }
            let now = now_ns();
            let c = progress_count();
            if c != seen {
                (seen, since) = (c, now);
            }
            if now - since > ms * 1_000_000 || now - start > 10 * ms * 1_000_000 {
                return false;
            }
            let ts = [0i64, 10_000_000];
            sys_idle(
                nr::FUTEX,
                &[
                    self.ctid.as_ptr() as usize,
                    FUTEX_WAIT,
                    v as u32 as usize,
                    ts.as_ptr() as usize,
                ],
            );
        }
    }
}

pub type Handler = extern "C" fn(i32, usize, usize);

/// Installs `handler` with `SA_SIGINFO | SA_RESTORER | flags`.
pub fn handle(sig: i32, handler: Handler, flags: u64) -> isize {
    let act = KernelSigaction {
        handler: handler as usize as u64,
        flags: SA_SIGINFO | SA_RESTORER | flags,
        restorer: adversary_restorer as *const () as usize as u64,
        mask: 0,
    }
    .to_bytes();
    sys(nr::RT_SIGACTION, &[sig as usize, act.as_ptr() as usize, 0, SIGSET_SIZE])
}

/// Sets `sig` to `SIG_DFL` or `SIG_IGN`.
pub fn disposition(sig: i32, what: u64) -> isize {
    let act = KernelSigaction {
        handler: what,
        ..KernelSigaction::default()
    }
    .to_bytes();
    sys(nr::RT_SIGACTION, &[sig as usize, act.as_ptr() as usize, 0, SIGSET_SIZE])
}

/// `rt_sigprocmask(how, &set, NULL)`, `how` being `SIG_BLOCK` or
/// `SIG_UNBLOCK`.
pub fn sigmask(how: u64, set: u64) -> isize {
    sys(
        nr::RT_SIGPROCMASK,
        &[how as usize, &set as *const u64 as usize, 0, SIGSET_SIZE],
    )
}

/// The `sigsetsize` Linux accepts: `sizeof(sigset_t)`, 64 signals.
pub const SIGSET_SIZE: usize = uapi::signal::SIGSET_SIZE as usize;

/// Offset of `uc_mcontext.pc` in the arm64 `ucontext` a handler gets.
pub const UC_PC: usize = sigframe::SC_PC - sigframe::UC;

/// Makes `words` (followed by nothing) into an executable page; returns
/// its address. The page is mapped read-write, written, then made
/// read-execute, and the caches are synchronised as Linux's
/// `__flush_icache_range` would.
pub fn code_page(words: &[u32]) -> usize {
    let len = (words.len() * 4).div_ceil(PAGE) * PAGE;
    let p = anon(len.max(PAGE));
    for (i, w) in words.iter().enumerate() {
        // SAFETY: inside the fresh read-write mapping.
        unsafe { ((p + i * 4) as *mut u32).write_volatile(*w) };
    }
    sync_icache(p, len.max(PAGE));
    let r = sys(nr::MPROTECT, &[p, len.max(PAGE), PROT_READ | PROT_EXEC]);
    assert!(r == 0, "mprotect RX: {r}");
    p
}

fn sync_icache(p: usize, len: usize) {
    let mut a = p;
    while a < p + len {
        // SAFETY: cache maintenance by VA on a mapped page of ours; EL0 may
        // issue DC CVAU and IC IVAU (SCTLR_EL1.UCI on Linux and here).
        unsafe { asm!("dc cvau, {a}", a = in(reg) a, options(nostack)) };
        a += 64;
    }
    // SAFETY: barriers only.
    unsafe { asm!("dsb ish", options(nostack)) };
    let mut a = p;
    while a < p + len {
        // SAFETY: as above.
        unsafe { asm!("ic ivau, {a}", a = in(reg) a, options(nostack)) };
        a += 64;
    }
    // SAFETY: barriers only.
    unsafe { asm!("dsb ish", "isb", options(nostack)) };
}

/// Calls the code at `addr` as `fn()`; the code must end with `ret`.
pub fn call_code(addr: usize) {
    // SAFETY: the callers build the code from a known word list ending in
    // RET; every register the code may touch is declared clobbered.
    unsafe {
        asm!(
            "blr {f}",
            f = in(reg) addr,
            clobber_abi("C"),
        )
    };
}

/// Free memory in kB: `MemFree`, plus on Linux the pages parked on the
/// per-CPU free lists (`count:` of the pagesets in /proc/zoneinfo), which
/// MemFree leaves out and which hold tens of MiB after a large free.
pub fn free_kb() -> u64 {
    let free = proof::memfree_kb().unwrap_or(0);
    let pcp_pages: u64 = proof::read_file(b"/proc/zoneinfo")
        .map(|text| {
            text.split(|&c| c == b'\n')
                .filter_map(|l| {
                    let t = l.trim_ascii_start();
                    t.strip_prefix(b"count:").and_then(|v| proof::parse_u64(v.trim_ascii()))
                })
                .sum()
        })
        .unwrap_or(0);
    free + pcp_pages * 4
}

/// `/proc/<pid>/status`'s State, PPid and TracerPid lines on one line, for
/// an error that names a process that should be gone.
pub fn proc_state(pid: i32) -> alloc::string::String {
    let path = alloc::format!("/proc/{pid}/status");
    let Ok(text) = proof::read_file(path.as_bytes()) else {
        return alloc::string::String::from("no /proc entry");
    };
    let mut out = alloc::string::String::new();
    for l in text.split(|&c| c == b'\n') {
        if l.starts_with(b"State:") || l.starts_with(b"PPid:") || l.starts_with(b"TracerPid:") {
            out.push_str(&alloc::string::String::from_utf8_lossy(l).replace('\t', " "));
            out.push_str("; ");
        }
    }
    out
}
