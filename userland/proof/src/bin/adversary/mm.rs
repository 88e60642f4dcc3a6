//! Attacks on the address space: system calls racing munmap/mprotect,
//! bad pointers everywhere, the edges of user space, huge reservations.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::SeqCst};

use crate::sys::*;
use crate::Cfg;

use uapi::fcntl::{O_DIRECTORY, SEEK_SET};
use uapi::resource::RLIMIT_NOFILE;
use uapi::time::CLOCK_MONOTONIC;

const AT_FDCWD: usize = uapi::fcntl::AT_FDCWD as isize as usize;
const O_DIR: usize = O_DIRECTORY as usize;
const MADV_DONTNEED: usize = uapi::mman::MADV_DONTNEED as usize;
const MREMAP_MAYMOVE: usize = uapi::mman::MREMAP_MAYMOVE as usize;
const MREMAP_FIXED: usize = uapi::mman::MREMAP_FIXED as usize;
const RW: usize = PROT_READ | PROT_WRITE;
const MONO: usize = CLOCK_MONOTONIC as usize;
const NOFILE: usize = RLIMIT_NOFILE as usize;

const TOP: usize = 1 << 48;
const RACE_BASE: usize = 0x30_0000_0000;
const RACE_PAGES: usize = 16;
const EFAULT: isize = neg(Errno::EFAULT);
const KERNEL_HALF: usize = 0xffff_0000_0000_0000;

static STOP: AtomicBool = AtomicBool::new(false);
static ZERO_FD: AtomicI32 = AtomicI32::new(-1);
static PIPE_R: AtomicI32 = AtomicI32::new(-1);
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
static MAPS_FD: AtomicI32 = AtomicI32::new(-1);
static DIR_FD: AtomicI32 = AtomicI32::new(-1);
static ITERS: AtomicU64 = AtomicU64::new(0);
static CALLS: AtomicU64 = AtomicU64::new(0);
static ZERO_TS: [i64; 2] = [0, 0];

fn open(path: &[u8], flags: usize) -> i32 {
    sys(nr::OPENAT, &[AT_FDCWD, path.as_ptr() as usize, flags, 0]) as i32
}

/// A worker: ITERS calls whose buffers lie in (or just past) the race
/// region, which the mutator keeps changing under it.
extern "C" fn race_worker(seed: usize) -> usize {
    let mut rng = Rng(seed as u64);
    let zero = ZERO_FD.load(SeqCst) as usize;
    let pw = PIPE_W.load(SeqCst) as usize;
    let maps = MAPS_FD.load(SeqCst) as usize;
    let dir = DIR_FD.load(SeqCst) as usize;
    let n = ITERS.load(SeqCst);
    for _ in 0..n {
        let p = RACE_BASE + rng.below(((RACE_PAGES + 1) * PAGE) as u64) as usize;
        let len = rng.below(2 * PAGE as u64) as usize;
        let a8 = p & !7;
        match rng.below(20) {
            0 => sys(nr::READ, &[zero, p, len]),
            1 => sys(nr::WRITE, &[pw, p, len]),
            2 => sys(nr::GETRANDOM, &[p, len, 0]),
            3 => sys(nr::CLOCK_GETTIME, &[MONO, a8]),
            4 => sys(nr::UNAME, &[p]),
            5 => sys(nr::FSTAT, &[zero, a8]),
            6 => sys(nr::GETCWD, &[p, len]),
            7 => sys(nr::READLINKAT, &[AT_FDCWD, c"/proc/self/exe".as_ptr() as usize, p, len]),
            8 => sys(nr::PREAD64, &[maps, p, len, 0]),
            9 => sys(nr::FUTEX, &[p & !3, FUTEX_WAKE | FUTEX_PRIVATE, 1]),
            10 => sys(nr::MINCORE, &[RACE_BASE, RACE_PAGES * PAGE, p]),
            11 => sys(nr::SCHED_GETAFFINITY, &[0, 64, a8]),
            12 => sys(nr::PPOLL, &[a8, 1, ZERO_TS.as_ptr() as usize, 0, SIGSET_SIZE]),
            13 => sys(nr::WRITEV, &[pw, a8, 1 + rng.below(4) as usize]),
            14 => sys(nr::NEWFSTATAT, &[AT_FDCWD, p, a8, 0]),
            15 => sys(nr::MADVISE, &[p & !(PAGE - 1), PAGE, MADV_DONTNEED]),
            16 => {
                let fd = sys(nr::OPENAT, &[AT_FDCWD, p, O_NONBLOCK, 0]);
                if fd >= 0 {
                    sys(nr::CLOSE, &[fd as usize]);
                }
                fd
            }
            17 => sys(nr::RT_SIGPROCMASK, &[SIG_BLOCK as usize, 0, a8, SIGSET_SIZE]),
            18 => {
                sys(nr::LSEEK, &[dir, 0, SEEK_SET as usize]);
                sys(nr::GETDENTS64, &[dir, p, len])
            }
            _ => {
                // fork while the address space changes; the child leaves at once.
                let r = sys(nr::CLONE, &[SIGCHLD as usize, 0, 0, 0, 0]);
                if r == 0 {
                    sys(nr::EXIT_GROUP, &[0]);
                }
                r
            }
        };
        CALLS.fetch_add(1, SeqCst);
    }
    0
}

/// The mutator: unmaps, remaps, reprotects, moves and discards pages of
/// the race region until told to stop; drains the pipe.
extern "C" fn race_mutator(seed: usize) -> usize {
    let mut rng = Rng(seed as u64);
    let mut buf = [0u8; 512];
    let pr = PIPE_R.load(SeqCst) as usize;
    while !STOP.load(SeqCst) {
        let first = rng.below(RACE_PAGES as u64) as usize;
        let n = 1 + rng.below((RACE_PAGES - first) as u64) as usize;
        let (a, len) = (RACE_BASE + first * PAGE, n * PAGE);
        match rng.below(6) {
            0 => sys(nr::MUNMAP, &[a, len]),
            1 => mmap(a, len, rng.below(4) as usize, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED),
            2 => sys(nr::MPROTECT, &[a, len, rng.below(4) as usize]),
            3 => {
                let to = RACE_BASE + rng.below((RACE_PAGES - n + 1) as u64) as usize * PAGE;
                sys(nr::MREMAP, &[a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to])
            }
            4 => sys(nr::MADVISE, &[a, len, MADV_DONTNEED]),
            _ => sys(nr::READ, &[pr, buf.as_mut_ptr() as usize, buf.len()]),
        };
    }
    0
}

pub fn mm_race(cfg: &Cfg) -> Result<(), String> {
    let zero = open(b"/dev/zero\0", 0);
    ZERO_FD.store(if zero >= 0 { zero } else { open(b"/proc/self/maps\0", 0) }, SeqCst);
    let mut p = [0i32; 2];
    sys(nr::PIPE2, &[p.as_mut_ptr() as usize, O_NONBLOCK]);
    PIPE_R.store(p[0], SeqCst);
    PIPE_W.store(p[1], SeqCst);
    MAPS_FD.store(open(b"/proc/self/maps\0", 0), SeqCst);
    DIR_FD.store(open(b"/\0", O_DIR), SeqCst);
    ITERS.store(1500 * cfg.scale, SeqCst);
    mmap(
        RACE_BASE,
        RACE_PAGES * PAGE,
        PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
    );
    let mutators = [
        thread(race_mutator, cfg.seed as usize * 7 + 1),
        thread(race_mutator, cfg.seed as usize * 7 + 2),
    ];
    let workers: Vec<Thread> = (0..3)
        .map(|i| thread(race_worker, cfg.seed as usize * 131 + i))
        .collect();
    if let Some(t) = mutators.iter().chain(workers.iter()).find(|t| t.tid < 0) {
        return Err(format!("clone of a thread: {}", t.tid));
    }
    let limit = 15_000 * cfg.scale;
    let mut stuck = 0;
    for w in &workers {
        if !w.join(limit) {
            stuck += 1;
        }
        reap_all(0);
    }
    STOP.store(true, SeqCst);
    for m in &mutators {
        if !m.join(5000) {
            stuck += 1;
        }
    }
    reap_all(5000);
    if stuck > 0 {
        return Err(format!(
            "{stuck} threads still running after {} calls",
            CALLS.load(SeqCst)
        ));
    }
    Ok(())
}

// Placeholders in the bad-pointer table, replaced before each call.
const P: usize = 0xdead_0000_0000_0001;
const ZF: usize = 0xdead_0000_0000_0002;
const WF: usize = 0xdead_0000_0000_0003;
const DF: usize = 0xdead_0000_0000_0004;
const BUF: usize = 0xdead_0000_0000_0005;
const PATH: usize = 0xdead_0000_0000_0006;
const ZTS: usize = 0xdead_0000_0000_0007;
const LINK: usize = 0xdead_0000_0000_0008;
const ENOSYS: isize = neg(Errno::ENOSYS);

/// What a call with a pointer at or above 2^48 must return.
#[derive(Clone, Copy, PartialEq)]
enum Want {
    Efault,
    AnyError,
}

struct Call {
    name: &'static str,
    nr: usize,
    args: [usize; 6],
    want: Want,
}

macro_rules! call {
    ($name:literal, $nr:expr, [$($a:expr),*], $want:ident) => {{
        let mut args = [0usize; 6];
        let v = [$($a as usize),*];
        args[..v.len()].copy_from_slice(&v);
        Call { name: $name, nr: $nr, args, want: Want::$want }
    }};
}

fn calls() -> Vec<Call> {
    let cwd = AT_FDCWD;
    alloc::vec![
        call!("read", nr::READ, [ZF, P, 64], Efault),
        call!("write", nr::WRITE, [WF, P, 64], Efault),
        call!("readv", nr::READV, [ZF, P, 1], Efault),
        call!("writev", nr::WRITEV, [WF, P, 1], Efault),
        call!("pread64", nr::PREAD64, [ZF, P, 64, 0], Efault),
        call!("getcwd", nr::GETCWD, [P, 4096], Efault),
        call!("openat", nr::OPENAT, [cwd, P, 0], Efault),
        call!("mkdirat", nr::MKDIRAT, [cwd, P, 0o700], Efault),
        call!("unlinkat", nr::UNLINKAT, [cwd, P, 0], Efault),
        call!("newfstatat path", nr::NEWFSTATAT, [cwd, P, BUF, 0], Efault),
        call!("newfstatat buf", nr::NEWFSTATAT, [cwd, PATH, P, 0], Efault),
        call!("fstat", nr::FSTAT, [ZF, P], Efault),
        call!("readlinkat path", nr::READLINKAT, [cwd, P, BUF, 64], Efault),
        call!("readlinkat buf", nr::READLINKAT, [cwd, LINK, P, 64], Efault),
        call!("pipe2", nr::PIPE2, [P, 0], Efault),
        call!("clock_gettime", nr::CLOCK_GETTIME, [MONO, P], Efault),
        call!("clock_getres", nr::CLOCK_GETRES, [MONO, P], Efault),
        call!("gettimeofday", nr::GETTIMEOFDAY, [P, 0], Efault),
        call!("nanosleep", nr::NANOSLEEP, [P, 0], Efault),
        call!("uname", nr::UNAME, [P], Efault),
        call!("sysinfo", nr::SYSINFO, [P], Efault),
        call!("getrlimit", nr::GETRLIMIT, [NOFILE, P], Efault),
        call!("prlimit64 new", nr::PRLIMIT64, [0, NOFILE, P, 0], Efault),
        call!("prlimit64 old", nr::PRLIMIT64, [0, NOFILE, 0, P], Efault),
        call!("getrandom", nr::GETRANDOM, [P, 64, 0], Efault),
        call!(
            "rt_sigaction act",
            nr::RT_SIGACTION,
            [SIGUSR1, P, 0, SIGSET_SIZE],
            Efault
        ),
        call!(
            "rt_sigaction old",
            nr::RT_SIGACTION,
            [SIGUSR1, 0, P, SIGSET_SIZE],
            Efault
        ),
        call!(
            "rt_sigprocmask set",
            nr::RT_SIGPROCMASK,
            [SIG_BLOCK, P, 0, SIGSET_SIZE],
            Efault
        ),
        call!(
            "rt_sigprocmask old",
            nr::RT_SIGPROCMASK,
            [SIG_BLOCK, 0, P, SIGSET_SIZE],
            Efault
        ),
        call!("rt_sigpending", nr::RT_SIGPENDING, [P, SIGSET_SIZE], Efault),
        call!("sigaltstack new", nr::SIGALTSTACK, [P, 0], Efault),
        call!("sigaltstack old", nr::SIGALTSTACK, [0, P], Efault),
        call!("sched_getaffinity", nr::SCHED_GETAFFINITY, [0, 64, P], Efault),
        call!("ppoll", nr::PPOLL, [P, 1, ZTS, 0, SIGSET_SIZE], Efault),
        call!("ppoll timeout", nr::PPOLL, [0, 0, P, 0, SIGSET_SIZE], Efault),
        call!("getdents64", nr::GETDENTS64, [DF, P, 4096], Efault),
        call!("futex wake", nr::FUTEX, [P, FUTEX_WAKE | FUTEX_PRIVATE, 1], Efault),
        call!("futex wait", nr::FUTEX, [P, FUTEX_WAIT, 0, ZTS], Efault),
        call!("execve", nr::EXECVE, [P, 0, 0], Efault),
        call!("clock_nanosleep", nr::CLOCK_NANOSLEEP, [MONO, 0, P, 0], Efault),
        call!("getresuid", nr::GETRESUID, [P, BUF, BUF], Efault),
        call!("mincore vec", nr::MINCORE, [BUF, PAGE, P], Efault),
        call!("mincore addr", nr::MINCORE, [P, PAGE, BUF], AnyError),
        call!("madvise", nr::MADVISE, [P, PAGE, MADV_DONTNEED], AnyError),
        call!("mprotect", nr::MPROTECT, [P, PAGE, RW], AnyError),
        call!("mremap", nr::MREMAP, [P, PAGE, 2 * PAGE, MREMAP_MAYMOVE], AnyError),
        call!("munmap", nr::MUNMAP, [P, PAGE], AnyError),
        call!(
            "mmap fixed",
            nr::MMAP,
            [P, PAGE, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, usize::MAX, 0],
            AnyError
        ),
    ]
}

pub fn bad_pointers(_cfg: &Cfg) -> Result<(), String> {
    let progress = Channel::new();
    let pid = spawn(move || {
        let zero = open(b"/dev/zero\0", 0);
        let zf = if zero >= 0 { zero } else { open(b"/proc/self/maps\0", 0) };
        let mut p = [0i32; 2];
        sys(nr::PIPE2, &[p.as_mut_ptr() as usize, O_NONBLOCK]);
        let df = open(b"/\0", O_DIR);
        // A symbolic link for readlinkat to read into bad buffers.
        sys(nr::MKDIRAT, &[AT_FDCWD, c"/tmp".as_ptr() as usize, 0o755]);
        let link = alloc::format!("/tmp/adv-link-{}\0", getpid());
        let linked = sys(
            nr::SYMLINKAT,
            &[c"target".as_ptr() as usize, AT_FDCWD, link.as_ptr() as usize],
        );
        let mut missing = String::new();
        if linked < 0 {
            missing.push_str(&format!(" symlinkat({linked}, so readlinkat buf)"));
        }
        let buf = anon(2 * PAGE);
        // A read-write page followed by an inaccessible one: straddling pointers.
        let rw = anon(2 * PAGE);
        sys(nr::MPROTECT, &[rw + PAGE, PAGE, PROT_NONE]);
        let ro = mmap(0, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS) as usize;
        let top = mmap(
            TOP - PAGE,
            PAGE,
            PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
        );
        let mut addrs: Vec<usize> = alloc::vec![
            0xffff_0000_0000_0000,
            0xffff_8000_0000_0000,
            0xffff_ffff_ffff_f000,
            0xffff_ffff_ffff_fffc,
            0x8000_0000_0000_0000,
            TOP,
            TOP + 0x1234_5000,
            0,
            1,
            rw + PAGE - 3,
            rw + PAGE,
            ro,
            ro + PAGE - 1,
        ];
        if top == (TOP - PAGE) as isize {
            addrs.push(TOP - 16);
        }
        let table = calls();
        let mut wrong = String::new();
        for (ai, &a) in addrs.iter().enumerate() {
            for (ci, c) in table.iter().enumerate() {
                // ppoll with a NULL timeout waits for ever, rightly.
                if a == 0 && c.name == "ppoll timeout" || linked < 0 && c.name == "readlinkat buf" {
                    continue;
                }
                sys(nr::LSEEK, &[df as usize, 0, SEEK_SET as usize]);
                progress.send((ai * 1000 + ci) as u64);
                // What an earlier call wrote to the last user page must not
                // become a sleep's timeout.
                if top == (TOP - PAGE) as isize {
                    // SAFETY: the top page is ours, mapped read-write above.
                    unsafe { core::ptr::write_bytes((TOP - 64) as *mut u8, 0, 64) };
                }
                let args = c.args.map(|v| match v {
                    P => a,
                    ZF => zf as usize,
                    WF => p[1] as usize,
                    DF => df as usize,
                    BUF => buf,
                    PATH => c"/".as_ptr() as usize,
                    LINK => link.as_ptr() as usize,
                    ZTS => ZERO_TS.as_ptr() as usize,
                    v => v,
                });
                let r = sys(c.nr, &args);
                // Drain what a straddling write put into the pipe.
                let mut sink = [0u8; 256];
                sys(nr::READ, &[p[0] as usize, sink.as_mut_ptr() as usize, sink.len()]);
                if r >= 0 && c.nr == nr::OPENAT {
                    sys(nr::CLOSE, &[r as usize]);
                }
                if r >= 0 && c.nr == nr::PIPE2 && a < TOP {
                    // A straddling fd pair may have landed half; nothing to close reliably.
                }
                // Kernel-half pointers are checked; the others (2^48, and
                // 0x80.. which arm64's top-byte-ignore makes address 0 for
                // munmap) must only leave the caller alive.
                let kernel_half = a >= KERNEL_HALF;
                if kernel_half && r == ENOSYS {
                    if !missing.contains(c.name) {
                        missing.push(' ');
                        missing.push_str(c.name);
                    }
                } else if kernel_half {
                    let ok = match c.want {
                        Want::Efault => r == EFAULT,
                        Want::AnyError => r < 0,
                    };
                    if !ok && wrong.len() < 2000 {
                        wrong.push_str(&format!(" {}({:#x})={}", c.name, a, r));
                    }
                }
            }
            // Whatever the mm calls changed, put the probe pages back
            // (and page 0, which root may map, away).
            sys(nr::MUNMAP, &[0, PAGE]);
            mmap(
                rw,
                PAGE,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
            );
            mmap(rw + PAGE, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
            mmap(ro, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
        }
        // set_tid_address to a bad pointer, then exit: the kernel's write
        // of 0 there at exit must fail quietly.
        for &a in &addrs {
            let pid = spawn(move || {
                sys(nr::SET_TID_ADDRESS, &[a]);
                0
            });
            wait_timeout(pid, 5000);
        }
        sys(nr::UNLINKAT, &[AT_FDCWD, link.as_ptr() as usize, 0]);
        if !missing.is_empty() {
            rt::println!("adversary: bad-pointers: note: ENOSYS (not attacked):{missing}");
        }
        if !wrong.is_empty() {
            rt::println!("adversary: bad-pointers: differs: kernel pointers not refused as Linux:{wrong}");
            return 1;
        }
        0
    });
    let st = wait_timeout(pid, 15_000);
    if st.is_none() {
        kill(pid, SIGKILL);
        wait_timeout(pid, 5000);
    }
    match st {
        Some(st) => match describe(st) {
            (true, 0) => Ok(()),
            (true, 1) => Err(String::from("see above")),
            (ex, v) => {
                let at = progress.drain().1.unwrap_or(0) as usize;
                let table = calls();
                Err(format!(
                    "the caller {} {} in {} with address #{}",
                    if ex { "exited" } else { "was killed by signal" },
                    v,
                    table.get(at % 1000).map_or("?", |c| c.name),
                    at / 1000
                ))
            }
        },
        None => {
            let at = progress.drain().1.unwrap_or(0) as usize;
            Err(format!(
                "call {} with address #{} hung",
                calls().get(at % 1000).map_or("?", |c| c.name),
                at / 1000
            ))
        }
    }
}

/// Runs `f` in a child and returns how it ended.
fn in_child(ms: u64, f: impl FnOnce() -> i32) -> Option<(bool, i32)> {
    let pid = spawn(f);
    let r = wait_timeout(pid, ms).map(describe);
    if r.is_none() {
        kill(pid, SIGKILL);
        wait_timeout(pid, 5000);
    }
    r
}

pub fn addr_edges(_cfg: &Cfg) -> Result<(), String> {
    let fixed = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
    let anonf = MAP_PRIVATE | MAP_ANONYMOUS;
    let rw = PROT_READ | PROT_WRITE;
    let mut wrong = String::new();
    let mut must_fail = |what: &str, r: isize| {
        if r >= 0 {
            wrong.push_str(&format!(" {what}={r:#x}"));
        }
    };
    must_fail("mmap(2^48-4K, 8K, FIXED)", mmap(TOP - PAGE, 2 * PAGE, rw, fixed));
    must_fail("mmap(2^48, 4K, FIXED)", mmap(TOP, PAGE, rw, fixed));
    must_fail("mmap(-4K, 4K, FIXED)", mmap(usize::MAX & !(PAGE - 1), PAGE, rw, fixed));
    must_fail("mmap(0, 2^48)", mmap(0, TOP, rw, anonf));
    must_fail("mmap(0, -4K)", mmap(0, usize::MAX & !(PAGE - 1), rw, anonf));
    must_fail("mmap(0, -1)", mmap(0, usize::MAX, rw, anonf));
    must_fail(
        "mprotect(2^48-4K, huge)",
        sys(nr::MPROTECT, &[TOP - PAGE, usize::MAX & !(PAGE - 1), rw]),
    );
    let page = anon(PAGE);
    must_fail(
        "mremap to 2^48",
        sys(nr::MREMAP, &[page, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, TOP]),
    );
    // Hints at and past the top: a mapping, if any, lies wholly below 2^48.
    for hint in [TOP - PAGE, TOP, TOP + PAGE, usize::MAX & !(PAGE - 1)] {
        let r = mmap(hint, 2 * PAGE, rw, anonf);
        if r >= 0 {
            let a = r as usize;
            if a.checked_add(2 * PAGE).is_none_or(|e| e > TOP) {
                wrong.push_str(&format!(" mmap(hint {hint:#x}) gave {a:#x}"));
            } else {
                // SAFETY: the two pages just mapped read-write.
                unsafe { ((a + PAGE + 8) as *mut u64).write_volatile(7) };
                sys(nr::MUNMAP, &[a, 2 * PAGE]);
            }
        }
    }
    // The last user page, used and unmapped.
    if mmap(TOP - PAGE, PAGE, rw, fixed) == (TOP - PAGE) as isize {
        // SAFETY: mapped read-write just above.
        unsafe { ((TOP - 8) as *mut u64).write_volatile(0x1234) };
        let r = sys(nr::READ, &[usize::MAX, TOP - 8, 16]);
        let _ = r;
        sys(nr::MUNMAP, &[TOP - PAGE, PAGE]);
    }
    sys(nr::MUNMAP, &[TOP - PAGE, 2 * PAGE]);
    sys(nr::MREMAP, &[page, PAGE, 1 << 47, MREMAP_MAYMOVE]);
    // brk to absurd places leaves the break usable.
    let b0 = rt::mm::brk(0);
    for to in [TOP, usize::MAX, 1, TOP - PAGE, b0 + (1 << 40)] {
        rt::mm::brk(to);
    }
    rt::mm::brk(b0);
    // Page 0, if root may map it.
    if mmap(0, PAGE, rw, fixed) == 0 {
        // SAFETY: page 0 is mapped read-write now.
        unsafe { core::ptr::without_provenance_mut::<u64>(8).write_volatile(1) };
        sys(nr::MUNMAP, &[0, PAGE]);
    }
    // A store straddling into an inaccessible page: SIGSEGV, nothing else.
    match in_child(10_000, || {
        let a = anon(2 * PAGE);
        sys(nr::MPROTECT, &[a + PAGE, PAGE, PROT_NONE]);
        // SAFETY: a deliberate fault; the child exists to take it.
        unsafe { core::arch::asm!("str {v}, [{a}]", a = in(reg) a + PAGE - 4, v = in(reg) 1u64) };
        0
    }) {
        Some((false, SIGSEGV)) => {}
        other => wrong.push_str(&format!(" straddling store: {other:?}, not SIGSEGV")),
    }
    // Everything made inaccessible, or unmapped, by the process itself.
    for (what, n, args) in [
        ("mprotect(0, 2^48, NONE)", nr::MPROTECT, [0, TOP, PROT_NONE]),
        ("munmap(0, 2^48)", nr::MUNMAP, [0, TOP, 0]),
        ("munmap(4K, 2^48-8K)", nr::MUNMAP, [PAGE, TOP - 2 * PAGE, 0]),
    ] {
        if in_child(20_000, || sys(n, &args) as i32).is_none() {
            wrong.push_str(&format!(" {what} hung"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}

fn timed(what: &str, limit_ms: u64, slow: &mut String, f: impl FnOnce() -> isize) -> isize {
    let t = now_ns();
    let r = f();
    let ms = (now_ns() - t) / 1_000_000;
    if ms > limit_ms {
        slow.push_str(&format!(" {what} took {ms} ms"));
    }
    r
}

pub fn huge_map(cfg: &Cfg) -> Result<(), String> {
    let mut slow = String::new();
    for round in 0..2 * cfg.scale {
        let mut size = 1usize << 47;
        let p = loop {
            let r = mmap(0, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
            if r > 0 {
                break r as usize;
            }
            size >>= 1;
            if size < 1 << 36 {
                return Err(format!("no PROT_NONE NORESERVE reservation of 2^36 bytes or more: {r}"));
            }
        };
        if round == 0 && size != 1 << 47 {
            slow.push_str(&format!(" only {size:#x} bytes reservable"));
        }
        timed("mprotect(2^47, RW)", 5000, &mut slow, || {
            sys(nr::MPROTECT, &[p, size, PROT_READ | PROT_WRITE])
        });
        let spots = [
            0,
            size / 2,
            size - PAGE,
            (size / 3) & !(PAGE - 1),
            1 << 30,
            (1 << 39) + PAGE,
        ];
        for &o in &spots {
            if o < size {
                // SAFETY: inside the reservation, read-write now.
                unsafe { ((p + o) as *mut u64).write_volatile(o as u64 | 1) };
            }
        }
        // Split it: a read-only middle, a hole, a fork that copies it all.
        timed("mprotect(middle 2^40, R)", 5000, &mut slow, || {
            sys(nr::MPROTECT, &[p + ((size / 4) & !(PAGE - 1)), 1 << 40, PROT_READ])
        });
        timed("munmap(hole 2^40)", 5000, &mut slow, || {
            sys(nr::MUNMAP, &[p + ((size / 8) & !(PAGE - 1)), 1 << 40])
        });
        let ended = in_child(30_000, || {
            // SAFETY: the first page of the reservation is read-write.
            (unsafe { (p as *const u64).read_volatile() } != 1) as i32
        });
        if ended != Some((true, 0)) {
            slow.push_str(&format!(" fork of the reservation: child {ended:?}"));
        }
        timed("mprotect(2^47, NONE)", 5000, &mut slow, || {
            sys(nr::MPROTECT, &[p, size, PROT_NONE])
        });
        timed("munmap(2^47)", 5000, &mut slow, || sys(nr::MUNMAP, &[p, size]));
    }
    if slow.is_empty() {
        Ok(())
    } else {
        Err(slow)
    }
}
