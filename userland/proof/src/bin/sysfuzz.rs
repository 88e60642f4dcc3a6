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
const O_NONBLOCK: usize = 0o4000;

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
const EXCLUDED: &[u64] = &[
    4,   // (io_getevents: allowed, timeout forced; listed below)
    39,  // umount2
    40,  // mount
    41,  // pivot_root
    58,  // vhangup
    60,  // quotactl
    89,  // acct
    93,  // exit
    94,  // exit_group
    103, // setitimer (asynchronous SIGALRM/SIGPROF)
    104, // kexec_load
    105, // init_module
    106, // delete_module
    107, // timer_create (asynchronous signals)
    112, // clock_settime
    116, // syslog (blocking read, console level)
    117, // ptrace
    118, // sched_setparam
    119, // sched_setscheduler
    133, // rt_sigsuspend
    139, // rt_sigreturn
    142, // reboot
    161, // sethostname
    162, // setdomainname
    170, // settimeofday
    171, // adjtimex
    182, // mq_timedsend
    183, // mq_timedreceive
    184, // mq_notify
    192, // semtimedop
    193, // semop
    202, // accept (the new socket would block)
    218, // request_key (user-mode helper)
    220, // clone
    221, // execve
    224, // swapon
    225, // swapoff
    230, // mlockall
    234, // remap_file_pages
    241, // perf_event_open
    262, // fanotify_init
    263, // fanotify_mark
    264, // name_to_handle_at
    265, // open_by_handle_at (any file of the file system)
    266, // clock_adjtime
    273, // finit_module
    274, // sched_setattr
    277, // seccomp
    280, // bpf
    281, // execveat
    282, // userfaultfd
    293, // rseq
    294, // kexec_file_load
    424, // pidfd_send_signal
    425, // io_uring_setup
    426, // io_uring_enter
    427, // io_uring_register
    428, // open_tree
    429, // move_mount
    430, // fsopen
    431, // fsconfig
    432, // fsmount
    433, // fspick
    435, // clone3
    442, // mount_setattr
    443, // quotactl_fd
    449, // futex_waitv
];

/// Calls that send a signal; the target is forced to the worker itself.
const KILLS: &[u64] = &[129, 130, 131, 138, 240];

fn excluded(nr: u64) -> bool {
    nr != 4 && EXCLUDED.contains(&nr)
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
        let reject = match nr {
            // read/readv/pread64/preadv/preadv2 on stdin
            63 | 65 | 67 | 69 | 286 => a[0] as u32 == 0,
            // futex WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2
            98 => matches!(a[1] as u32 & !(128 | 256), 0 | 6 | 9 | 11 | 13),
            // prctl: options above 50, PR_SET_SECCOMP, PR_SET_MM,
            // PR_SET_NO_NEW_PRIVS
            167 => a[0] > 50 || matches!(a[0], 22 | 35 | 38),
            // fcntl F_SETOWN, F_SETSIG, F_SETOWN_EX, F_SETLEASE
            25 => matches!(a[1] as u32, 8 | 10 | 15 | 1024),
            // ioctl TIOCSTI, TIOCSCTTY, TIOCSPGRP, TIOCCONS, FIONBIO,
            // TIOCNOTTY, FIOSETOWN, SIOCSPGRP
            29 => matches!(
                a[1] as u32,
                0x5412 | 0x540e | 0x5410 | 0x541d | 0x5421 | 0x5422 | 0x8901 | 0x8902
            ),
            // close / dup3 onto the progress pipe
            57 => a[0] as u32 as i32 == PROGRESS_FD,
            24 => a[1] as u32 as i32 == PROGRESS_FD,
            _ => false,
        };
        if !reject {
            return (nr, a, rng);
        }
    }
}

/// A signal to send oneself: anything but the stop signals.
fn own_signal(s: usize) -> usize {
    let s = s % 65;
    if matches!(s, 19 | 20) {
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
    match nr {
        129 | 130 | 138 => {
            a[0] = me;
            a[1] = own_signal(a[1]);
        }
        131 | 240 => {
            a[0] = me;
            a[1] = me;
            a[2] = own_signal(a[2]);
        }
        101 => a[0] = zero_ts,             // nanosleep
        115 => a[2] = zero_ts,             // clock_nanosleep
        72 => a[4] = zero_ts,              // pselect6
        73 => a[2] = zero_ts,              // ppoll
        22 => a[3] = 0,                    // epoll_pwait: timeout 0 ms
        441 => a[3] = zero_ts,             // epoll_pwait2
        137 => a[2] = zero_ts,             // rt_sigtimedwait
        4 | 292 => a[4] = zero_ts,         // io_getevents, io_pgetevents
        243 => a[4] = zero_ts,             // recvmmsg
        134 | 135 => a[1] = 0,             // rt_sigaction/rt_sigprocmask: query only
        214 if a[0] < brk_now => a[0] = 0, // brk: never shrink
        59 => a[1] |= O_NONBLOCK,          // pipe2
        198 | 199 => a[1] |= O_NONBLOCK,   // socket, socketpair
        242 => a[3] |= O_NONBLOCK,         // accept4
        19 => a[1] |= O_NONBLOCK,          // eventfd2
        74 => a[3] |= O_NONBLOCK,          // signalfd4
        85 => a[1] |= O_NONBLOCK,          // timerfd_create
        26 => a[0] |= O_NONBLOCK,          // inotify_init1
        32 => a[1] |= 4,                   // flock: LOCK_NB
        188 => a[4] |= 0o4000,             // msgrcv: IPC_NOWAIT
        189 => a[3] |= 0o4000,             // msgsnd: IPC_NOWAIT
        25 => match a[1] as u32 {
            4 => a[2] |= O_NONBLOCK, // F_SETFL
            7 => a[1] = 6,           // F_SETLKW -> F_SETLK
            38 => a[1] = 37,         // F_OFD_SETLKW -> F_OFD_SETLK
            _ => {}
        },
        // mknodat: regular files only (no FIFOs, no device nodes)
        33 => {
            a[2] = (a[2] & 0o7777) | 0o100000;
            a[3] = 0;
        }
        45 | 46 => a[1] = clamp(a[1]), // truncate, ftruncate
        47 => {
            a[2] = clamp(a[2]);
            a[3] = clamp(a[3]);
        }
        71 => a[3] = clamp(a[3]),  // sendfile
        285 => a[4] = clamp(a[4]), // copy_file_range
        76 => {
            a[4] = clamp(a[4]); // splice
            a[5] |= 2; // SPLICE_F_NONBLOCK
        }
        77 => {
            a[2] = clamp(a[2]); // tee
            a[3] |= 2;
        }
        75 => a[3] |= 2,                 // vmsplice
        228 | 284 => a[1] = clamp(a[1]), // mlock, mlock2
        // mmap: no MAP_FIXED, MAP_LOCKED, MAP_POPULATE, MAP_HUGETLB
        222 => a[3] &= !(0x10 | 0x2000 | 0x8000 | 0x40000),
        // munmap, mprotect, madvise, pkey_mprotect, mremap: inside the
        // victim mapping only
        215 | 226 | 233 | 288 | 216 => {
            let page = rng.below((VICTIM_LEN / 4096) as u64) as usize;
            a[0] = victim + page * 4096;
            a[1] %= VICTIM_LEN - page * 4096 + 1;
            if nr == 233 {
                a[2] %= 32; // no MADV_HWPOISON / MADV_SOFT_OFFLINE
            }
            if nr == 216 {
                a[2] = clamp(a[2]);
                a[3] &= !(2 | 4); // no MREMAP_FIXED, MREMAP_DONTUNMAP
            }
        }
        196 => {
            a[1] = 0; // shmat: kernel's choice of address
            a[2] &= !0o40000; // no SHM_REMAP
        }
        164 if a[0] as u32 == 0 => a[1] = 0, // setrlimit(RLIMIT_CPU): no
        261 => {
            a[0] = 0; // prlimit64: self only
            if a[1] as u32 == 0 {
                a[2] = 0;
            }
        }
        140 => {
            a[0] = 0; // setpriority(PRIO_PROCESS, self)
            a[1] = 0;
        }
        122 | 238 | 239 => a[0] = 0,  // sched_setaffinity, migrate_pages, move_pages
        270 | 271 | 434 => a[0] = me, // process_vm_readv/writev, pidfd_open
        436 => a[1] = a[1].min(511),  // close_range: not the progress pipe
        _ => {}
    }
}

fn raw_mmap(hint: usize, len: usize, prot: usize) -> usize {
    // SAFETY: a private anonymous mapping, not MAP_FIXED: touches nothing
    // that exists.
    let r = unsafe { syscall6(222, hint, len, prot, 0x22, usize::MAX, 0) };
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
        syscall0(157); // setsid: no controlling terminal
        if pipe_w != PROGRESS_FD {
            syscall3(24, pipe_w as usize, PROGRESS_FD as usize, 0);
        }
        for fd in 0..512 {
            syscall1(57, fd);
        }
        let tmp = b"/tmp\0";
        syscall3(34, (-100isize) as usize, tmp.as_ptr() as usize, 0o1777);
        syscall1(49, tmp.as_ptr() as usize);
    }
    for sig in [13, 14, 17, 21, 22, 29, 25] {
        let _ = process::signal_disposition(sig, process::SIG_IGN);
    }
    touch_stack();
    let region = raw_mmap(SCRATCH_HINT - GUARD_LEN, GUARD_LEN + SCRATCH_LEN + GUARD_LEN, 0);
    let scratch = region + GUARD_LEN;
    // SAFETY: the middle of the worker's own fresh mapping.
    unsafe { syscall3(226, scratch, SCRATCH_LEN, 3) };
    let victim = raw_mmap(VICTIM_HINT, VICTIM_LEN, 3);
    let template = raw_mmap(0, SCRATCH_LEN, 3);
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
    let me = unsafe { syscall0(172) } as usize;
    // SAFETY: as above.
    let mut brk_now = unsafe { syscall1(214, 0) } as usize;
    for i in start..=count {
        let idx = i as u32;
        // SAFETY: writes 4 bytes from a local.
        let w = unsafe { syscall3(64, PROGRESS_FD as usize, &idx as *const u32 as usize, 4) };
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
        if nr == 214 && r > 0 {
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
            let mut pfd = [r as u32 as u64 | (1u64 << 32)]; // fd, events = POLLIN
            let ts = [HANG_SECS, 0];
            // SAFETY: pfd is one struct pollfd, ts a timespec; no mask.
            let n = unsafe { syscall4(73, pfd.as_mut_ptr() as usize, 1, ts.as_ptr() as usize, 0) };
            if n == -4 {
                continue; // EINTR
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
                WaitStatus::Signaled(_) if KILLS.contains(&nr) => self_deaths += 1,
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
