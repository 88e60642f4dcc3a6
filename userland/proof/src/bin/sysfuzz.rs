//! `sysfuzz SEED COUNT`: COUNT system calls with random numbers in
//! `0..=450` and random arguments from a deterministic PRNG seeded by SEED.
//!
//! The calls run in a forked worker, so that whatever the fuzzed calls do
//! to the process (closed descriptors, dropped privileges, rlimits, a
//! signal it sends itself) stays there. Before call `i` the worker writes
//! `i` to a pipe; the parent reads it, prints progress, and when the worker
//! dies (or makes no progress for `HANG_SECS`) forks a new worker that
//! resumes at `i + 1`. Call `i` depends only on SEED and `i`.
//!
//! The worker: new session, no descriptors but the progress pipe (moved to
//! fd 900), cwd `/tmp`, SIGPIPE/SIGALRM/SIGCHLD/SIGTTIN/SIGTTOU/SIGIO/
//! SIGXFSZ ignored, an 8 KiB scratch buffer between PROT_NONE guards
//! (refilled from a template before every call; it contains no `/` or `.`
//! byte, so a path argument pointing into it names a file in the current
//! directory), and a 64 KiB victim mapping for munmap/mprotect/mremap/
//! madvise.
//!
//! Output:
//!
//! ```text
//! sysfuzz: 1000                  (every 1000 calls)
//! sysfuzz: call I nr N: worker killed by signal S       (not sent by itself)
//! sysfuzz: call I nr N: worker exited with status X
//! sysfuzz: call I nr N: hung, killed
//! sysfuzz: workers W, self-signal deaths D, other deaths O, hangs H
//! sysfuzz: COUNT calls done, seed SEED
//! ```
//!
//! Exit status 0, or 1 if a call hung or the worker died other than by a
//! signal it sent itself.
#![no_std]
#![no_main]

use proof::parse_u64;
use rt::println;
use rt::process::{self, fork, Fork, WaitStatus};
use rt::syscall::{syscall0, syscall1, syscall3, syscall4, syscall6};
use uapi::fcntl::{
    AT_FDCWD, F_OFD_SETLK, F_OFD_SETLKW, F_SETFL, F_SETLEASE, F_SETLK, F_SETLKW, F_SETOWN, F_SETOWN_EX, F_SETSIG,
    LOCK_NB, SPLICE_F_NONBLOCK,
};
use uapi::futex::{
    FUTEX_CLOCK_REALTIME, FUTEX_LOCK_PI, FUTEX_LOCK_PI2, FUTEX_PRIVATE_FLAG, FUTEX_WAIT, FUTEX_WAIT_BITSET,
    FUTEX_WAIT_REQUEUE_PI,
};
use uapi::ipc::{IPC_NOWAIT, SHM_REMAP};
use uapi::mman::{
    MAP_ANONYMOUS, MAP_FIXED, MAP_HUGETLB, MAP_LOCKED, MAP_POPULATE, MAP_PRIVATE, MREMAP_DONTUNMAP, MREMAP_FIXED,
    PROT_NONE, PROT_READ, PROT_WRITE,
};
use uapi::poll::{PollFd, POLLIN};
use uapi::prctl::{PR_SET_MM, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP};
use uapi::resource::{PRIO_PROCESS, RLIMIT_CPU};
use uapi::signal::{NSIG, SIGALRM, SIGCHLD, SIGIO, SIGPIPE, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGXFSZ};
use uapi::socket::{FIOSETOWN, SIOCSPGRP};
use uapi::stat::{S_IALLUGO, S_IFREG};
use uapi::syscalls::nr;
use uapi::termios::{FIONBIO, TIOCCONS, TIOCNOTTY, TIOCSCTTY, TIOCSPGRP, TIOCSTI};
use uapi::Errno;

rt::main!(main);

const MAX_NR: u64 = 450;
const PROGRESS_FD: i32 = 900;
const HANG_SECS: i64 = 10;
const SCRATCH_LEN: usize = 8192;
const GUARD_LEN: usize = 65536;
const VICTIM_LEN: usize = 65536;
const SCRATCH_HINT: usize = 0x10_0000_0000;
const VICTIM_HINT: usize = 0x20_0000_0000;
const CLAMP: usize = 1 << 20;
const O_NONBLOCK: usize = uapi::fcntl::O_NONBLOCK as usize;
const RW: usize = (PROT_READ | PROT_WRITE) as usize;

/// Paths the fuzzer may name: files under /tmp only.
static PATHS: [&[u8; 12]; 8] = [
    b"/tmp/fuzz-0\0",
    b"/tmp/fuzz-1\0",
    b"/tmp/fuzz-2\0",
    b"/tmp/fuzz-3\0",
    b"/tmp/fuzz-4\0",
    b"/tmp/fuzz-5\0",
    b"/tmp/fuzz-6\0",
    b"/tmp/fuzz-7\0",
];

/// A zero `struct timespec` in read-only memory: the timeout forced on
/// calls that could block.
static ZERO_TS: [i64; 2] = [0, 0];

/// Addresses no call may touch: kernel, non-canonical, unmapped, the guard
/// pages around the scratch buffer, the (read-only) program text.
const BAD_PTRS: [usize; 10] = [
    0xffff_0000_0000_0000,
    0xffff_8000_0000_0000,
    0xffff_ffff_ffff_f000,
    0x0000_8000_0000_0000,
    0x0000_7fff_ffff_f000,
    0x1,
    0x1000,
    SCRATCH_HINT - 4096,
    SCRATCH_HINT + SCRATCH_LEN,
    0x40_0000,
];

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn for_call(seed: u64, i: u64) -> Rng {
        let mut r = Rng(seed ^ 0x5eed_0000_0000_0000 ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn clean_bytes(w: u64) -> bool {
    w.to_le_bytes().iter().all(|&b| b != b'/' && b != b'.')
}

/// A pointer into the scratch buffer (aligned or not), free of `/` and `.`
/// bytes when possible.
fn scratch_ptr(rng: &mut Rng, scratch: usize, misaligned: bool) -> usize {
    for _ in 0..16 {
        let mut off = rng.below(SCRATCH_LEN as u64 - 256) as usize;
        off = (off & !7) + if misaligned { 1 + off % 7 } else { 0 };
        let p = scratch + off;
        if clean_bytes(p as u64) {
            return p;
        }
    }
    scratch
}

/// One random argument.
fn arg(rng: &mut Rng, scratch: usize) -> usize {
    match rng.below(16) {
        0 | 1 => 0,
        2..=4 => rng.below(65) as usize,
        5 => usize::MAX,
        6 => rng.next() as usize,
        7 => rng.next() as u32 as usize,
        8 => 1 << rng.below(64),
        9..=11 => scratch_ptr(rng, scratch, false),
        12 => scratch_ptr(rng, scratch, true),
        13 => BAD_PTRS[rng.below(BAD_PTRS.len() as u64) as usize],
        14 => PATHS[rng.below(PATHS.len() as u64) as usize].as_ptr() as usize,
        _ => (rng.next() & 0xfff) as usize,
    }
}

/// Never called: they end, replace or clone the process, stop the machine,
/// change global state (time, mounts, modules, hostname, swap, accounting),
/// block without a timeout that can be forced, or deliver asynchronous
/// signals.
const EXCLUDED: &[usize] = &[
    nr::IO_GETEVENTS, // (io_getevents: allowed, timeout forced; listed below)
    nr::UMOUNT2,
    nr::MOUNT,
    nr::PIVOT_ROOT,
    nr::VHANGUP,
    nr::QUOTACTL,
    nr::ACCT,
    nr::EXIT,
    nr::EXIT_GROUP,
    nr::SETITIMER, // (asynchronous SIGALRM/SIGPROF)
    nr::KEXEC_LOAD,
    nr::INIT_MODULE,
    nr::DELETE_MODULE,
    nr::TIMER_CREATE, // (asynchronous signals)
    nr::CLOCK_SETTIME,
    nr::SYSLOG, // (blocking read, console level)
    nr::PTRACE,
    nr::SCHED_SETPARAM,
    nr::SCHED_SETSCHEDULER,
    nr::RT_SIGSUSPEND,
    nr::RT_SIGRETURN,
    nr::REBOOT,
    nr::SETHOSTNAME,
    nr::SETDOMAINNAME,
    nr::SETTIMEOFDAY,
    nr::ADJTIMEX,
    nr::MQ_TIMEDSEND,
    nr::MQ_TIMEDRECEIVE,
    nr::MQ_NOTIFY,
    nr::SEMTIMEDOP,
    nr::SEMOP,
    nr::ACCEPT,      // (the new socket would block)
    nr::REQUEST_KEY, // (user-mode helper)
    nr::CLONE,
    nr::EXECVE,
    nr::SWAPON,
    nr::SWAPOFF,
    nr::MLOCKALL,
    nr::REMAP_FILE_PAGES,
    nr::PERF_EVENT_OPEN,
    nr::FANOTIFY_INIT,
    nr::FANOTIFY_MARK,
    nr::NAME_TO_HANDLE_AT,
    nr::OPEN_BY_HANDLE_AT, // (any file of the file system)
    nr::CLOCK_ADJTIME,
    nr::FINIT_MODULE,
    nr::SCHED_SETATTR,
    nr::SECCOMP,
    nr::BPF,
    nr::EXECVEAT,
    nr::USERFAULTFD,
    nr::RSEQ,
    nr::KEXEC_FILE_LOAD,
    nr::PIDFD_SEND_SIGNAL,
    nr::IO_URING_SETUP,
    nr::IO_URING_ENTER,
    nr::IO_URING_REGISTER,
    nr::OPEN_TREE,
    nr::MOVE_MOUNT,
    nr::FSOPEN,
    nr::FSCONFIG,
    nr::FSMOUNT,
    nr::FSPICK,
    nr::CLONE3,
    nr::MOUNT_SETATTR,
    nr::QUOTACTL_FD,
    nr::FUTEX_WAITV,
];

/// Calls that send a signal; the target is forced to the worker itself.
const KILLS: &[usize] = &[
    nr::KILL,
    nr::TKILL,
    nr::TGKILL,
    nr::RT_SIGQUEUEINFO,
    nr::RT_TGSIGQUEUEINFO,
];

fn excluded(n: u64) -> bool {
    n != nr::IO_GETEVENTS as u64 && EXCLUDED.contains(&(n as usize))
}

/// Call `i`: its number and arguments before the per-call fix-ups, and the
/// generator to continue with. Depends on (seed, i) only.
fn pick(seed: u64, i: u64, scratch: usize) -> (u64, [usize; 6], Rng) {
    let mut rng = Rng::for_call(seed, i);
    loop {
        let nr = rng.below(MAX_NR + 1);
        let mut a = [0usize; 6];
        for x in a.iter_mut() {
            *x = arg(&mut rng, scratch);
        }
        if excluded(nr) {
            continue;
        }
        // Not-excluded calls whose arguments would make them unsafe are
        // redrawn too, so that the parent can tell which call ran from
        // (seed, i).
        let reject = match nr as usize {
            // on stdin
            nr::READ | nr::READV | nr::PREAD64 | nr::PREADV | nr::PREADV2 => a[0] as u32 == 0,
            // the futex operations that block
            nr::FUTEX => matches!(
                a[1] as u32 & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME),
                FUTEX_WAIT | FUTEX_LOCK_PI | FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2
            ),
            // prctl: options above 50 (none yet), and those that confine
            // or remap the worker for good
            nr::PRCTL => a[0] > 50 || matches!(a[0] as u64, PR_SET_SECCOMP | PR_SET_MM | PR_SET_NO_NEW_PRIVS),
            // fcntl: signal delivery and leases
            nr::FCNTL => matches!(a[1] as u32, F_SETOWN | F_SETSIG | F_SETOWN_EX | F_SETLEASE),
            // ioctl: terminal input, controlling terminal, process groups,
            // console redirection, non-blocking mode, SIGIO owners
            nr::IOCTL => matches!(
                a[1] as u32,
                TIOCSTI | TIOCSCTTY | TIOCSPGRP | TIOCCONS | FIONBIO | TIOCNOTTY | FIOSETOWN | SIOCSPGRP
            ),
            // close / dup3 onto the progress pipe
            nr::CLOSE => a[0] as u32 as i32 == PROGRESS_FD,
            nr::DUP3 => a[1] as u32 as i32 == PROGRESS_FD,
            _ => false,
        };
        if !reject {
            return (nr, a, rng);
        }
    }
}

/// A signal to send oneself: anything but the stop signals (0, the probe,
/// included).
fn own_signal(s: usize) -> usize {
    let s = s % (NSIG + 1);
    if matches!(s as u32, SIGSTOP | SIGTSTP) {
        0
    } else {
        s
    }
}

fn clamp(x: usize) -> usize {
    if (x as isize) > CLAMP as isize {
        x & (CLAMP - 1)
    } else {
        x
    }
}

/// Per-call fix-ups that keep the call bounded and the damage inside the
/// worker and /tmp.
fn fix(nr: u64, a: &mut [usize; 6], rng: &mut Rng, me: usize, brk_now: usize, victim: usize) {
    let zero_ts = ZERO_TS.as_ptr() as usize;
    match nr as usize {
        nr::KILL | nr::TKILL | nr::RT_SIGQUEUEINFO => {
            a[0] = me;
            a[1] = own_signal(a[1]);
        }
        nr::TGKILL | nr::RT_TGSIGQUEUEINFO => {
            a[0] = me;
            a[1] = me;
            a[2] = own_signal(a[2]);
        }
        nr::NANOSLEEP => a[0] = zero_ts,
        nr::CLOCK_NANOSLEEP => a[2] = zero_ts,
        nr::PSELECT6 => a[4] = zero_ts,
        nr::PPOLL => a[2] = zero_ts,
        nr::EPOLL_PWAIT => a[3] = 0, // timeout 0 ms
        nr::EPOLL_PWAIT2 => a[3] = zero_ts,
        nr::RT_SIGTIMEDWAIT => a[2] = zero_ts,
        nr::IO_GETEVENTS | nr::IO_PGETEVENTS => a[4] = zero_ts,
        nr::RECVMMSG => a[4] = zero_ts,
        nr::RT_SIGACTION | nr::RT_SIGPROCMASK => a[1] = 0, // query only
        nr::BRK if a[0] < brk_now => a[0] = 0,             // never shrink
        nr::PIPE2 => a[1] |= O_NONBLOCK,
        nr::SOCKET | nr::SOCKETPAIR => a[1] |= O_NONBLOCK,
        nr::ACCEPT4 => a[3] |= O_NONBLOCK,
        nr::EVENTFD2 => a[1] |= O_NONBLOCK,
        nr::SIGNALFD4 => a[3] |= O_NONBLOCK,
        nr::TIMERFD_CREATE => a[1] |= O_NONBLOCK,
        nr::INOTIFY_INIT1 => a[0] |= O_NONBLOCK,
        nr::FLOCK => a[1] |= LOCK_NB as usize,
        nr::MSGRCV => a[4] |= IPC_NOWAIT as usize,
        nr::MSGSND => a[3] |= IPC_NOWAIT as usize,
        nr::FCNTL => match a[1] as u32 {
            F_SETFL => a[2] |= O_NONBLOCK,
            F_SETLKW => a[1] = F_SETLK as usize,
            F_OFD_SETLKW => a[1] = F_OFD_SETLK as usize,
            _ => {}
        },
        // mknodat: regular files only (no FIFOs, no device nodes)
        nr::MKNODAT => {
            a[2] = (a[2] & S_IALLUGO as usize) | S_IFREG as usize;
            a[3] = 0;
        }
        nr::TRUNCATE | nr::FTRUNCATE => a[1] = clamp(a[1]),
        nr::FALLOCATE => {
            a[2] = clamp(a[2]);
            a[3] = clamp(a[3]);
        }
        nr::SENDFILE => a[3] = clamp(a[3]),
        nr::COPY_FILE_RANGE => a[4] = clamp(a[4]),
        nr::SPLICE => {
            a[4] = clamp(a[4]);
            a[5] |= SPLICE_F_NONBLOCK as usize;
        }
        nr::TEE => {
            a[2] = clamp(a[2]);
            a[3] |= SPLICE_F_NONBLOCK as usize;
        }
        nr::VMSPLICE => a[3] |= SPLICE_F_NONBLOCK as usize,
        nr::MLOCK | nr::MLOCK2 => a[1] = clamp(a[1]),
        nr::MMAP => a[3] &= !(MAP_FIXED | MAP_LOCKED | MAP_POPULATE | MAP_HUGETLB) as usize,
        // munmap, mprotect, madvise, pkey_mprotect, mremap: inside the
        // victim mapping only
        nr::MUNMAP | nr::MPROTECT | nr::MADVISE | nr::PKEY_MPROTECT | nr::MREMAP => {
            let page = rng.below((VICTIM_LEN / 4096) as u64) as usize;
            a[0] = victim + page * 4096;
            a[1] %= VICTIM_LEN - page * 4096 + 1;
            if nr == nr::MADVISE as u64 {
                // Not MADV_HWPOISON / MADV_SOFT_OFFLINE (100, 101): 32 is
                // a round bound above the ordinary advice values.
                a[2] %= 32;
            }
            if nr == nr::MREMAP as u64 {
                a[2] = clamp(a[2]);
                a[3] &= !(MREMAP_FIXED | MREMAP_DONTUNMAP) as usize;
            }
        }
        nr::SHMAT => {
            a[1] = 0; // the kernel's choice of address
            a[2] &= !(SHM_REMAP as usize);
        }
        nr::SETRLIMIT if a[0] as u32 == RLIMIT_CPU => a[1] = 0,
        nr::PRLIMIT64 => {
            a[0] = 0; // self only
            if a[1] as u32 == RLIMIT_CPU {
                a[2] = 0;
            }
        }
        nr::SETPRIORITY => {
            a[0] = PRIO_PROCESS as usize;
            a[1] = 0; // self
        }
        nr::SCHED_SETAFFINITY | nr::MIGRATE_PAGES | nr::MOVE_PAGES => a[0] = 0,
        nr::PROCESS_VM_READV | nr::PROCESS_VM_WRITEV | nr::PIDFD_OPEN => a[0] = me,
        nr::CLOSE_RANGE => a[1] = a[1].min(511), // not the progress pipe
        _ => {}
    }
}

fn raw_mmap(hint: usize, len: usize, prot: usize) -> usize {
    // SAFETY: a private anonymous mapping, not MAP_FIXED: touches nothing
    // that exists.
    let r = unsafe {
        syscall6(
            nr::MMAP,
            hint,
            len,
            prot,
            (MAP_PRIVATE | MAP_ANONYMOUS) as usize,
            usize::MAX,
            0,
        )
    };
    if (-4095..0).contains(&r) {
        process::exit(3);
    }
    r as usize
}

#[inline(never)]
fn touch_stack() {
    // Grow the stack now: a fuzzed setrlimit(RLIMIT_STACK) must not make
    // the worker's own stack growth fault later.
    let mut a = [0u8; 65536];
    core::hint::black_box(&mut a);
}

/// The worker: runs calls `start..count`, then writes `count` and exits 0.
fn worker(seed: u64, start: u64, count: u64, pipe_w: i32) -> ! {
    // SAFETY: plain calls on the worker's own descriptors and signals.
    unsafe {
        syscall0(nr::SETSID); // no controlling terminal
        if pipe_w != PROGRESS_FD {
            syscall3(nr::DUP3, pipe_w as usize, PROGRESS_FD as usize, 0);
        }
        for fd in 0..512 {
            syscall1(nr::CLOSE, fd);
        }
        let tmp = b"/tmp\0";
        syscall3(nr::MKDIRAT, AT_FDCWD as isize as usize, tmp.as_ptr() as usize, 0o1777);
        syscall1(nr::CHDIR, tmp.as_ptr() as usize);
    }
    for sig in [SIGPIPE, SIGALRM, SIGCHLD, SIGTTIN, SIGTTOU, SIGIO, SIGXFSZ] {
        let sig = sig as i32;
        let _ = process::signal_disposition(sig, process::SIG_IGN);
    }
    touch_stack();
    let region = raw_mmap(
        SCRATCH_HINT - GUARD_LEN,
        GUARD_LEN + SCRATCH_LEN + GUARD_LEN,
        PROT_NONE as usize,
    );
    let scratch = region + GUARD_LEN;
    // SAFETY: the middle of the worker's own fresh mapping.
    unsafe { syscall3(nr::MPROTECT, scratch, SCRATCH_LEN, RW) };
    let victim = raw_mmap(VICTIM_HINT, VICTIM_LEN, RW);
    let template = raw_mmap(0, SCRATCH_LEN, RW);
    // The template: zeros, small numbers, pointers into the scratch buffer,
    // bad pointers, random words, none with a '/' or '.' byte.
    let mut rng = Rng::for_call(seed, u64::MAX);
    for w in 0..SCRATCH_LEN / 8 {
        let mut v = 0;
        for _ in 0..8 {
            v = match rng.below(10) {
                0..=3 => 0,
                4 | 5 => rng.below(64),
                6 => scratch_ptr(&mut rng, scratch, false) as u64,
                7 => BAD_PTRS[rng.below(BAD_PTRS.len() as u64) as usize] as u64,
                8 => u64::MAX,
                _ => rng.next(),
            };
            if clean_bytes(v) {
                break;
            }
            v = 0;
        }
        // SAFETY: template is a fresh mapping of SCRATCH_LEN bytes.
        unsafe { (template as *mut u64).add(w).write(v) };
    }
    // SAFETY: getpid / brk(0) have no side effects.
    let me = unsafe { syscall0(nr::GETPID) } as usize;
    // SAFETY: as above.
    let mut brk_now = unsafe { syscall1(nr::BRK, 0) } as usize;
    for i in start..=count {
        let idx = i as u32;
        // SAFETY: writes 4 bytes from a local.
        let w = unsafe { syscall3(nr::WRITE, PROGRESS_FD as usize, &idx as *const u32 as usize, 4) };
        if w != 4 {
            process::exit(4);
        }
        if i == count {
            break;
        }
        let (nr, mut a, mut rng) = pick(seed, i, scratch);
        fix(nr, &mut a, &mut rng, me, brk_now, victim);
        // SAFETY: both are the worker's own mappings of SCRATCH_LEN bytes
        // (a fuzzed call may have unmapped neither: see `fix`).
        unsafe { core::ptr::copy_nonoverlapping(template as *const u8, scratch as *mut u8, SCRATCH_LEN) };
        // SAFETY: not at all, in general: this is the fuzzer. The fix-ups
        // keep the calls off the worker's code, stack, heap and
        // descriptors it depends on; what they do to the rest of the
        // worker is what the parent recovers from.
        let r = unsafe { syscall6(nr as usize, a[0], a[1], a[2], a[3], a[4], a[5]) };
        if nr == nr::BRK as u64 && r > 0 {
            brk_now = r as usize;
        }
    }
    process::exit(0)
}

fn usage() -> i32 {
    rt::eprintln!("usage: sysfuzz SEED COUNT");
    2
}

fn main(args: rt::Args) -> i32 {
    if args.len() != 3 {
        return usage();
    }
    let (Some(seed), Some(count)) = (args.get(1).and_then(parse_u64), args.get(2).and_then(parse_u64)) else {
        return usage();
    };
    if count >= u32::MAX as u64 {
        return usage();
    }
    let mut start = 0u64;
    let mut next_progress = 1000u64;
    let (mut workers, mut self_deaths, mut other_deaths, mut hangs) = (0u32, 0u32, 0u32, 0u32);
    let mut setup_failures = 0u32;
    loop {
        let [r, w] = match rt::fs::pipe2(rt::fs::O_CLOEXEC) {
            Ok(p) => p,
            Err(e) => {
                println!("sysfuzz: FAIL pipe2: {e}");
                return 1;
            }
        };
        workers += 1;
        let pid = match fork() {
            Ok(Fork::Child) => {
                // The descriptor moves to PROGRESS_FD without O_CLOEXEC.
                worker(seed, start, count, w)
            }
            Ok(Fork::Parent(pid)) => pid,
            Err(e) => {
                println!("sysfuzz: FAIL fork: {e}");
                return 1;
            }
        };
        let _ = rt::fs::close(w);
        // Read progress until EOF or a hang.
        let mut last: Option<u64> = None;
        let mut buf = [0u8; 4096];
        let mut have = 0usize;
        let mut hung = false;
        loop {
            let mut pfd = PollFd {
                fd: r,
                events: POLLIN,
                revents: 0,
            }
            .to_bytes();
            let ts = [HANG_SECS, 0];
            // SAFETY: pfd is one struct pollfd, ts a timespec; no mask.
            let n = unsafe { syscall4(nr::PPOLL, pfd.as_mut_ptr() as usize, 1, ts.as_ptr() as usize, 0) };
            if n == Errno::EINTR.as_neg() as isize {
                continue;
            }
            if n == 0 {
                hung = true;
                break;
            }
            match rt::fs::read(r, &mut buf[have..]) {
                Ok(0) => break,
                Ok(k) => {
                    have += k;
                    let whole = have / 4 * 4;
                    for c in buf[..whole].chunks_exact(4) {
                        let i = u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                        while i >= next_progress && next_progress <= count {
                            println!("sysfuzz: {next_progress}");
                            next_progress += 1000;
                        }
                        last = Some(i);
                    }
                    buf.copy_within(whole..have, 0);
                    have -= whole;
                }
                Err(rt::Errno::EINTR) => {}
                Err(e) => {
                    println!("sysfuzz: FAIL read progress: {e}");
                    return 1;
                }
            }
        }
        let _ = rt::fs::close(r);
        if hung {
            let _ = process::kill(pid, process::SIGKILL);
        }
        let st = match process::waitpid(pid) {
            Ok(st) => st,
            Err(e) => {
                println!("sysfuzz: FAIL wait4: {e}");
                return 1;
            }
        };
        let Some(i) = last else {
            println!("sysfuzz: worker died in setup: {st:?}");
            setup_failures += 1;
            if setup_failures > 3 {
                println!("sysfuzz: FAIL worker setup");
                return 1;
            }
            continue;
        };
        if i == count && st == WaitStatus::Exited(0) {
            break;
        }
        let (nr, _, _) = pick(seed, i, SCRATCH_HINT);
        if hung {
            println!("sysfuzz: call {i} nr {nr}: hung, killed");
            hangs += 1;
        } else {
            match st {
                WaitStatus::Signaled(_) if KILLS.contains(&(nr as usize)) => self_deaths += 1,
                WaitStatus::Signaled(s) => {
                    println!("sysfuzz: call {i} nr {nr}: worker killed by signal {s}");
                    other_deaths += 1;
                }
                st => {
                    println!("sysfuzz: call {i} nr {nr}: worker ended: {st:?}");
                    other_deaths += 1;
                }
            }
        }
        start = i + 1;
        if start > count {
            break;
        }
    }
    println!(
        "sysfuzz: workers {workers}, self-signal deaths {self_deaths}, other deaths {other_deaths}, hangs {hangs}"
    );
    println!("sysfuzz: {count} calls done, seed {seed}");
    i32::from(hangs > 0 || other_deaths > 0)
}
