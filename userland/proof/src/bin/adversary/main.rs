//! `adversary`: attacks on the kernel from user space. The kernel promises
//! that nothing a user program does can crash or hang it; each attack here
//! tries, in its own process group, with a watchdog, and says whether the
//! kernel kept that promise and behaved as Linux does.
//!
//! ```text
//! adversary list                          the attacks, one per line
//! adversary [OPTIONS] run NAME... | all   run the named attacks (or all)
//!   --scale N      loop counts and depths times N (default 1: sized for
//!                  QEMU TCG, a few seconds per attack)
//!   --minutes M    repeat the attacks, new seed each pass, for M minutes
//!   --pressure     a hog child holds most free memory while they run
//!   --seed S       first seed (default 1)
//!   --margin KB    MemFree may end this much below where it began (4096)
//! ```
//!
//! Each attack runs in a forked child (a new process group). Every system
//! call that returns in it (its threads and children included, sleeps and
//! waits for children excepted) counts a step in a shared page; the parent
//! calls the attack hung when no step was made for the attack's limit (a
//! loaded host slows an attack without stopping it), or when it still runs
//! at ten times its limit, and SIGKILLs the group. An ITIMER_REAL watchdog
//! past that cap is the last resort. Output, one line per attack:
//!
//! ```text
//! adversary: NAME: pass (T ms, S steps)
//! adversary: NAME: differs: WHAT       (exit 1: Linux would not do this)
//! adversary: NAME: hang (after T ms: no progress for I ms, limit L ms; S steps)
//! adversary: NAME: hang (after T ms: still progressing at the cap of C ms; S steps)
//! adversary: NAME: unkillable          (SIGKILL did not end it in 10 s)
//! adversary: NAME: crashed: signal S / exit N
//! adversary: memfree before B kB, after A kB
//! adversary: ok | adversary: FAIL (N of M attacks)
//! ```
//!
//! Exit status 0 when every attack passed and free memory (MemFree, plus on
//! Linux the per-CPU free lists of /proc/zoneinfo) came back within the
//! margin. A kernel panic shows on the console and ends the run.
//!
//! Running it (build with `cargo build --release -p proof --target
//! aarch64-unknown-none --target-dir target/user`; `B=target/user/
//! aarch64-unknown-none/release/adversary`):
//!
//! ```text
//! scripts/qemu-run.sh --smp 4 --timeout 600 $B -- 'adversary --pressure run all'
//! scripts/qemu-run.sh --smp 4 --timeout 900 $B -- 'adversary --pressure --minutes 10 --scale 4 run all'
//! ../shared/reflinux/run.sh --smp 2 --timeout 300 $B -- 'adversary run all'
//! ```
//!
//! `tests/adversary.rs` runs the sized-down suite on virt -smp 1 and 4;
//! `ADVERSARY_FULL=1` makes it run for minutes. The unlisted attacks
//! `__slow`, `__stall` and `__livelock` test the hang verdict itself.
#![no_std]
#![no_main]

extern crate alloc;

mod files;
mod ipc;
mod mm;
mod ptrace_fuzz;
mod sys;
mod tasks;
mod traps;

use alloc::string::String;
use alloc::vec::Vec;

use proof::parse_u64;
use rt::println;
use sys::*;

rt::main!(main);

/// What every attack gets: how hard to push, and its seed.
#[derive(Clone, Copy)]
pub struct Cfg {
    pub scale: u64,
    pub seed: u64,
    /// A hog holds most memory: MemFree moves with it.
    pub pressure: bool,
}

/// An attack: Err(what differs from Linux or what went wrong).
pub type AttackFn = fn(&Cfg) -> Result<(), String>;

struct Attack {
    name: &'static str,
    about: &'static str,
    /// At scale 1, in seconds (multiplied by the scale): how long the
    /// attack may go without progress before it is called hung.
    limit_s: u64,
    run: AttackFn,
}

macro_rules! attack {
    ($name:literal, $limit:literal, $f:path, $about:literal) => {
        Attack {
            name: $name,
            about: $about,
            limit_s: $limit,
            run: $f,
        }
    };
}

static ATTACKS: &[Attack] = &[
    attack!(
        "mm-race",
        20,
        mm::mm_race,
        "threads make pointer-taking calls into buffers other threads munmap/mprotect/remap"
    ),
    attack!(
        "bad-pointers",
        20,
        mm::bad_pointers,
        "kernel, non-canonical, NULL and page-straddling pointers to every pointer-taking call"
    ),
    attack!(
        "addr-edges",
        20,
        mm::addr_edges,
        "mmap/mprotect/munmap/mremap near 0, 2^47, 2^48 and across the top of user space"
    ),
    attack!(
        "huge-map",
        30,
        mm::huge_map,
        "reserve 2^47 bytes, touch, mprotect and munmap it whole and in pieces; munmap(0, 2^48)"
    ),
    attack!(
        "fork-storm",
        30,
        tasks::fork_storm,
        "fork/exec/exit/vfork/thread children and orphans, up to 8 in flight"
    ),
    attack!(
        "wait-race",
        20,
        tasks::wait_race,
        "4 threads wait4(-1) for the same children: each reaped exactly once"
    ),
    attack!(
        "exit-race",
        20,
        tasks::exit_race,
        "exit_group while another thread clones threads: none survives"
    ),
    attack!(
        "exec-race",
        20,
        tasks::exec_race,
        "execve while other threads clone, sleep, spin and wait: the new image runs alone"
    ),
    attack!(
        "clone-settid",
        10,
        tasks::clone_settid,
        "CLONE_CHILD_SETTID on fork writes the child's memory only"
    ),
    attack!(
        "vfork-kill",
        10,
        tasks::vfork_kill,
        "SIGKILL ends a parent waiting for its vfork child"
    ),
    attack!(
        "clone-parent-death",
        20,
        tasks::clone_parent_death,
        "CLONE_PARENT children made while the caller's parent is SIGKILLed: init reaps every one"
    ),
    attack!(
        "ptrace-death",
        30,
        tasks::ptrace_death,
        "tracers SIGKILLed during their tracees' syscall stops (plain and EXITKILL), tracees killed while stopped"
    ),
    attack!(
        "ptrace-fuzz",
        30,
        ptrace_fuzz::ptrace_fuzz,
        "random ptrace requests, addresses, data and regset iovecs at a tracee stopped, running or exiting"
    ),
    attack!(
        "pipe-death",
        20,
        ipc::pipe_death,
        "pipe readers and writers killed mid-operation"
    ),
    attack!(
        "futex-bad",
        20,
        ipc::futex_bad,
        "every futex op on bad, unaligned, read-only addresses; requeue to itself; waiters killed"
    ),
    attack!(
        "timeouts",
        30,
        ipc::timeouts,
        "thousands of short timeouts, interrupted sleeps, killed sleepers; timer cost stays flat"
    ),
    attack!(
        "sigqueue-flood",
        20,
        ipc::sigqueue_flood,
        "queue real-time signals until RLIMIT_SIGPENDING refuses"
    ),
    attack!(
        "sigframe",
        20,
        traps::sigframe,
        "rt_sigreturn with garbage frames and stack pointers"
    ),
    attack!(
        "altstack",
        20,
        traps::altstack,
        "faults with unusable signal stacks and handlers that fault again: killable"
    ),
    attack!(
        "brk-imm",
        30,
        traps::brk_imm,
        "BRK #imm from EL0 (sampled 0..0xffff and the kernel's own): SIGTRAP each"
    ),
    attack!(
        "undef-insn",
        20,
        traps::undef_insn,
        "undefined and privileged instructions from EL0: SIGILL each"
    ),
    attack!(
        "deep-tree",
        30,
        files::deep_tree,
        "600+ deep directories on a tmpfs, removed, then umounted while deep"
    ),
    attack!(
        "tmpfs-fill",
        40,
        files::tmpfs_fill,
        "fill a tmpfs until ENOSPC/ENOMEM, unlink, umount: memory comes back"
    ),
    attack!(
        "proc-files",
        40,
        files::proc_files,
        "odd reads, seeks, offsets, bad buffers, garbage writes on /proc, /dev, debugfs, tracefs"
    ),
];

/// Attacks on the supervisor itself, not listed and not in `all`: they
/// prove that a slow attack is not called hung, that one which stops
/// progressing is, and that one which progresses forever is cut off.
static SELF_TESTS: &[Attack] = &[
    Attack {
        name: "__slow",
        about: "progresses for 3 times its limit: passes",
        limit_s: 1,
        run: slow_but_progressing,
    },
    Attack {
        name: "__stall",
        about: "progresses for a second, then sleeps forever: hangs",
        limit_s: 1,
        run: stalls,
    },
    Attack {
        name: "__livelock",
        about: "progresses forever: cut off at the cap",
        limit_s: 1,
        run: progresses_forever,
    },
];

fn slow_but_progressing(cfg: &Cfg) -> Result<(), String> {
    let end = now_ns() + 3_000_000_000 * cfg.scale;
    while now_ns() < end {
        sleep_ms(100);
        getpid();
    }
    Ok(())
}

fn stalls(_: &Cfg) -> Result<(), String> {
    let end = now_ns() + 1_000_000_000;
    while now_ns() < end {
        sleep_ms(50);
        getpid();
    }
    loop {
        sleep_ms(1000);
    }
}

fn progresses_forever(_: &Cfg) -> Result<(), String> {
    loop {
        sleep_ms(100);
        getpid();
    }
}

fn find(name: &[u8]) -> Option<&'static Attack> {
    ATTACKS.iter().chain(SELF_TESTS).find(|a| a.name.as_bytes() == name)
}

enum Verdict {
    Pass,
    Differs,
    Hang,
    Unkillable,
    Crashed(String),
}

/// A hang is declared when the attack made no progress (no system call
/// returned in any of its processes, see `sys::progress`) for its limit;
/// an attack that keeps progressing is cut off at this many times its
/// limit, so a livelock that "progresses" forever still ends. A loaded
/// host slows an attack down without stopping it.
const CAP_FACTOR: u64 = 10;

/// The shared page the attack children count their progress in (mapped
/// once, before any attack, so that no attack's fixed mappings land on it).
static PROGRESS_PAGE: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

fn progress_word() -> &'static core::sync::atomic::AtomicU64 {
    use core::sync::atomic::Ordering::SeqCst;
    if PROGRESS_PAGE.load(SeqCst) == 0 {
        let p = mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
        assert!(p > 0, "mmap of the progress page: {p}");
        PROGRESS_PAGE.store(p as usize, SeqCst);
    }
    word(PROGRESS_PAGE.load(SeqCst))
}

/// How the supervisor's watch of a running attack ended.
enum Watch {
    Ended(i32),
    /// No progress for the stall window: (steps counted, ms since the last).
    Stalled(u64, u64),
    /// Still progressing at the cap: steps counted.
    Capped(u64),
}

/// Watches `pid` until it ends, makes no progress on `counter` for
/// `stall_ms`, or runs `cap_ms`.
fn watch(
    mut ended: impl FnMut() -> Option<i32>,
    counter: impl Fn() -> u64,
    now_ms: impl Fn() -> u64,
    mut pause: impl FnMut(),
    stall_ms: u64,
    cap_ms: u64,
) -> Watch {
    let start = now_ms();
    let (mut seen, mut seen_at) = (counter(), start);
    loop {
        if let Some(st) = ended() {
            return Watch::Ended(st);
        }
        let (c, t) = (counter(), now_ms());
        if c != seen {
            (seen, seen_at) = (c, t);
        } else if t - seen_at > stall_ms {
            return Watch::Stalled(c, t - seen_at);
        }
        if t - start > cap_ms {
            return Watch::Capped(c);
        }
        pause();
    }
}

/// SIGKILLs a hung attack's group: Hang, or Unkillable if it stays.
fn stop(pid: i32) -> Verdict {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    match wait_timeout(pid, 10_000) {
        Some(_) => Verdict::Hang,
        None => Verdict::Unkillable,
    }
}

/// Runs one attack in a child of its own process group.
fn run_one(a: &Attack, cfg: &Cfg) -> Verdict {
    use core::sync::atomic::Ordering::SeqCst;
    let limit_ms = a.limit_s * cfg.scale * 1000;
    let cap_ms = limit_ms * CAP_FACTOR;
    let counter = progress_word();
    counter.store(0, SeqCst);
    let start = now_ns();
    let pid = fork();
    if pid == 0 {
        count_progress_at(PROGRESS_PAGE.load(SeqCst));
        sys(nr::SETPGID, &[0, 0]);
        disposition(SIGPIPE, SIG_IGN);
        // The last resort, should the supervisor be starved: past the cap.
        alarm_ms(cap_ms + 2000);
        let code = match (a.run)(cfg) {
            Ok(()) => 0,
            Err(msg) => {
                println!("adversary: {}: differs: {}", a.name, msg);
                1
            }
        };
        exit_group(code);
    }
    if pid < 0 {
        return Verdict::Crashed(alloc::format!("fork: {pid}"));
    }
    sys(nr::SETPGID, &[pid as usize, pid as usize]);
    let ended = || match wait4(pid, WNOHANG) {
        (r, st) if r == pid as isize => Some(st),
        (r, _) if r < 0 => Some(-1),
        _ => None,
    };
    let watched = watch(
        ended,
        || counter.load(SeqCst),
        || now_ns() / 1_000_000,
        || sleep_ms(20),
        limit_ms,
        cap_ms,
    );
    let mut why = String::new();
    let v = match watched {
        Watch::Ended(st) => match describe(st) {
            (true, 0) => Verdict::Pass,
            (true, 1) => Verdict::Differs,
            (true, c) => Verdict::Crashed(alloc::format!("exit {c}")),
            (false, SIGALRM) => {
                why = alloc::format!("watchdog alarm; {} steps", counter.load(SeqCst));
                Verdict::Hang
            }
            (false, s) => Verdict::Crashed(alloc::format!("signal {s}")),
        },
        Watch::Stalled(steps, idle) => {
            why = alloc::format!("no progress for {idle} ms, limit {limit_ms} ms; {steps} steps");
            stop(pid)
        }
        Watch::Capped(steps) => {
            why = alloc::format!("still progressing at the cap of {cap_ms} ms; {steps} steps");
            stop(pid)
        }
    };
    // Whatever the attack left in its group (orphans reparented to init)
    // goes too, so that the next attack and the memory count start clean.
    kill(-pid, SIGKILL);
    let ms = (now_ns() - start) / 1_000_000;
    let steps = counter.load(SeqCst);
    match &v {
        Verdict::Pass => println!("adversary: {}: pass ({} ms, {} steps)", a.name, ms, steps),
        Verdict::Differs => {}
        Verdict::Hang => println!("adversary: {}: hang (after {} ms: {})", a.name, ms, why),
        Verdict::Unkillable => println!("adversary: {}: unkillable (SIGKILL ignored 10 s; {})", a.name, why),
        Verdict::Crashed(w) => println!("adversary: {}: crashed: {}", a.name, w),
    }
    v
}

/// MemFree once things have settled: the highest of a few readings.
fn settled_memfree() -> u64 {
    let mut best = 0;
    for _ in 0..5 {
        sleep_ms(300);
        best = best.max(free_kb());
    }
    best
}

/// A child that maps and touches memory until MemFree is down to
/// `reserve_kb`, then waits to be killed: memory pressure for the attacks.
fn start_hog(reserve_kb: u64) -> i32 {
    let ready = Channel::new();
    let pid = spawn(|| {
        sys(nr::SETPGID, &[0, 0]);
        let chunk = 4 << 20;
        let mut held = 0usize;
        while free_kb() > reserve_kb + 4096 {
            let p = mmap(0, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
            if p < 0 {
                break;
            }
            for off in (0..chunk).step_by(PAGE) {
                // SAFETY: inside the mapping just made.
                unsafe { ((p as usize + off) as *mut u8).write_volatile(1) };
            }
            held += chunk;
        }
        ready.send(held as u64);
        loop {
            sleep_ms(1000);
        }
    });
    let end = now_ns() + 120_000_000_000;
    let held = loop {
        if let (_, Some(h)) = ready.drain() {
            break h;
        }
        if now_ns() > end {
            break 0;
        }
        sleep_ms(50);
    };
    ready.close();
    println!("adversary: pressure: hog {} holds {} MiB", pid, held >> 20);
    pid
}

fn usage() -> i32 {
    println!("usage: adversary list | adversary [--scale N] [--minutes M] [--pressure] [--seed S] [--margin KB] run NAME...|all");
    2
}

/// The ring buffers start small and grow to their set size on first use
/// (Linux's `tracing_update_buffers`), which writes to several tracefs
/// files cause, junk ones included: grown before the first measurement,
/// that one-time growth is not counted as a leak.
fn expand_trace_buffers() {
    let Ok(text) = proof::read_file(b"/sys/kernel/tracing/buffer_size_kb") else {
        return;
    };
    let text = String::from_utf8_lossy(&text);
    let Some(kb) = text.split("expanded: ").nth(1).and_then(|t| t.split(')').next()) else {
        return; // already at its size
    };
    if let Ok(fd) = rt::fs::open(
        b"/sys/kernel/tracing/buffer_size_kb",
        rt::fs::O_WRONLY | rt::fs::O_CLOEXEC,
        0,
    ) {
        let _ = rt::fs::write(fd, kb.trim().as_bytes());
        let _ = rt::fs::close(fd);
    }
}

fn main(args: rt::Args) -> i32 {
    let argv: Vec<&[u8]> = args.iter().skip(1).collect();
    let mut cfg = Cfg {
        scale: 1,
        seed: 1,
        pressure: false,
    };
    let mut minutes = 0u64;
    let mut pressure = false;
    let mut margin_kb = 4096u64;
    let mut i = 0;
    while i < argv.len() {
        let num = |j: usize| argv.get(j).and_then(|v| parse_u64(v));
        match argv[i] {
            b"list" => {
                for a in ATTACKS {
                    println!("{:16} {}", a.name, a.about);
                }
                return 0;
            }
            // The image the exec attacks run: it must start and end cleanly.
            b"__exit0" => return 0,
            b"--scale" => {
                cfg.scale = match num(i + 1) {
                    Some(n) if n > 0 => n,
                    _ => return usage(),
                }
            }
            b"--minutes" => {
                minutes = match num(i + 1) {
                    Some(n) => n,
                    None => return usage(),
                }
            }
            b"--seed" => {
                cfg.seed = match num(i + 1) {
                    Some(n) => n,
                    None => return usage(),
                }
            }
            b"--margin" => {
                margin_kb = match num(i + 1) {
                    Some(n) => n,
                    None => return usage(),
                }
            }
            b"--pressure" => {
                pressure = true;
                i += 1;
                continue;
            }
            b"run" => break,
            _ => return usage(),
        }
        i += 2;
    }
    if argv.get(i) != Some(&&b"run"[..]) || i + 1 >= argv.len() {
        return usage();
    }
    let mut chosen: Vec<&Attack> = Vec::new();
    for name in &argv[i + 1..] {
        if *name == b"all" {
            chosen.extend(ATTACKS.iter());
        } else if let Some(a) = find(name) {
            chosen.push(a);
        } else {
            println!("adversary: no attack {}", rt::io::Bytes(name));
            return 2;
        }
    }
    disposition(SIGPIPE, SIG_IGN);
    expand_trace_buffers();
    let before = settled_memfree();
    cfg.pressure = pressure;
    let hog = if pressure {
        // Leave a quarter of what is free, at least 48 MiB, to the attacks.
        Some(start_hog((before / 4).max(48 * 1024)))
    } else {
        None
    };
    let deadline = now_ns() + minutes * 60 * 1_000_000_000;
    let (mut runs, mut failed) = (0u64, 0u64);
    let mut failures: Vec<&str> = Vec::new();
    loop {
        for a in &chosen {
            runs += 1;
            if !matches!(run_one(a, &cfg), Verdict::Pass) {
                failed += 1;
                if !failures.contains(&a.name) {
                    failures.push(a.name);
                }
            }
        }
        cfg.seed += 1;
        if now_ns() >= deadline {
            break;
        }
    }
    if let Some(h) = hog {
        kill(-h, SIGKILL);
        kill(h, SIGKILL);
        wait_timeout(h, 10_000);
    }
    reap_all(1000);
    let after = settled_memfree();
    println!("adversary: memfree before {before} kB, after {after} kB");
    let leaked = after + margin_kb < before;
    if leaked {
        println!(
            "adversary: leak: {} kB not returned (margin {margin_kb} kB)",
            before - after
        );
    }
    if failed == 0 && !leaked {
        println!("adversary: ok ({runs} attacks)");
        0
    } else {
        let mut names = String::new();
        for f in &failures {
            names.push(' ');
            names.push_str(f);
        }
        println!("adversary: FAIL ({failed} of {runs} attacks:{names})");
        1
    }
}
