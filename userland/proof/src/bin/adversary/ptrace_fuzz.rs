//! `ptrace-fuzz`: a tracer issues random ptrace(2) requests — Linux's
//! numbers and numbers it does not have — with random addresses (the
//! tracee's, kernel, non-canonical, unaligned, unmapped, straddling into a
//! guard page), random data and random regset iovecs, at a traced child
//! that is stopped, running, exiting or already gone. The kernel must not
//! crash, must answer with a result or an errno, must answer request
//! numbers Linux does not have with EIO (stopped tracee) or ESRCH, must
//! never write outside the buffers it was given, and every tracee must
//! stay killable and be reaped.

use alloc::format;
use alloc::string::String;

use crate::sys::*;
use crate::Cfg;

use uapi::ptrace::{self as pt, nt};

const PTRACE: usize = nr::PTRACE;

/// A request number as the raw call takes it.
const fn req(r: i64) -> usize {
    r as usize
}

const PTRACE_TRACEME: usize = req(pt::PTRACE_TRACEME);
const PTRACE_PEEKTEXT: usize = req(pt::PTRACE_PEEKTEXT);
const PTRACE_POKETEXT: usize = req(pt::PTRACE_POKETEXT);
const PTRACE_POKEDATA: usize = req(pt::PTRACE_POKEDATA);
const PTRACE_POKEUSR: usize = req(pt::PTRACE_POKEUSR);
const PTRACE_CONT: usize = req(pt::PTRACE_CONT);
const PTRACE_SINGLESTEP: usize = req(pt::PTRACE_SINGLESTEP);
const PTRACE_DETACH: usize = req(pt::PTRACE_DETACH);
const PTRACE_ATTACH: usize = req(pt::PTRACE_ATTACH);
const PTRACE_SYSCALL: usize = req(pt::PTRACE_SYSCALL);
const PTRACE_SETOPTIONS: usize = req(pt::PTRACE_SETOPTIONS);
const PTRACE_SEIZE: usize = req(pt::PTRACE_SEIZE);
const PTRACE_GETREGSET: usize = req(pt::PTRACE_GETREGSET);
const PTRACE_SETREGSET: usize = req(pt::PTRACE_SETREGSET);

/// Every request Linux 6.12 arm64 knows, PTRACE_SYSEMU (31) and
/// PTRACE_SYSEMU_SINGLESTEP (32) among them (PTRACE_TRACEME, which the
/// tracer never makes, would make it its own parent's tracee).
const KNOWN: &[usize] = &[
    PTRACE_PEEKTEXT,
    req(pt::PTRACE_PEEKDATA),
    req(pt::PTRACE_PEEKUSR),
    PTRACE_POKETEXT,
    PTRACE_POKEDATA,
    PTRACE_POKEUSR,
    PTRACE_CONT,
    req(pt::PTRACE_KILL),
    PTRACE_SINGLESTEP,
    PTRACE_ATTACH,
    PTRACE_DETACH,
    PTRACE_SYSCALL,
    req(pt::PTRACE_SYSEMU),
    req(pt::PTRACE_SYSEMU_SINGLESTEP),
    req(pt::PTRACE_PEEKMTETAGS),
    req(pt::PTRACE_POKEMTETAGS),
    PTRACE_SETOPTIONS,
    req(pt::PTRACE_GETEVENTMSG),
    req(pt::PTRACE_GETSIGINFO),
    req(pt::PTRACE_SETSIGINFO),
    PTRACE_GETREGSET,
    PTRACE_SETREGSET,
    PTRACE_SEIZE,
    req(pt::PTRACE_INTERRUPT),
    req(pt::PTRACE_LISTEN),
    req(pt::PTRACE_PEEKSIGINFO),
    req(pt::PTRACE_GETSIGMASK),
    req(pt::PTRACE_SETSIGMASK),
    req(pt::PTRACE_SECCOMP_GET_FILTER),
    req(pt::PTRACE_SECCOMP_GET_METADATA),
    req(pt::PTRACE_GET_SYSCALL_INFO),
    req(pt::PTRACE_GET_RSEQ_CONFIGURATION),
    req(pt::PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG),
    req(pt::PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG),
];

/// Regset note types worth aiming at, and a few that arm64 has no regset
/// for (3, NT_PRPSINFO; 0x400, arm32's NT_ARM_VFP; 0): those are stated
/// as numbers on purpose, since they are attacks, not uapi items.
const NOTES: &[usize] = &[
    nt::NT_PRSTATUS as usize,
    nt::NT_PRFPREG as usize,
    3,
    0x400,
    nt::NT_ARM_TLS as usize,
    nt::NT_ARM_HW_BREAK as usize,
    nt::NT_ARM_HW_WATCH as usize,
    nt::NT_ARM_SYSTEM_CALL as usize,
    nt::NT_ARM_SVE as usize,
    nt::NT_ARM_PAC_MASK as usize,
    nt::NT_ARM_TAGGED_ADDR_CTRL as usize,
    nt::NT_ARM_PAC_ENABLED_KEYS as usize,
    nt::NT_SIGINFO as usize,
    0,
];

const ESRCH: isize = neg(Errno::ESRCH);
const EIO: isize = neg(Errno::EIO);
const ECHILD: isize = neg(Errno::ECHILD);
const EPERM: isize = neg(Errno::EPERM);

/// The options PTRACE_SETOPTIONS and PTRACE_SEIZE take, less
/// PTRACE_O_SUSPEND_SECCOMP (which needs CAP_SYS_ADMIN and seccomp).
const OPTIONS: usize = (pt::PTRACE_O_MASK & !pt::PTRACE_O_SUSPEND_SECCOMP) as usize;

/// Memory the kernel may be asked to write: a canary page it must never
/// touch, then SCRATCH_PAGES pages of scratch, then a PROT_NONE guard.
const SCRATCH_PAGES: usize = 16;
const CANARY: u8 = 0x5a;

struct Arena {
    canary: usize,
    scratch: usize,
    guard: usize,
}

impl Arena {
    fn new() -> Arena {
        let base = anon((SCRATCH_PAGES + 2) * PAGE);
        // SAFETY: the first page of the mapping just made.
        unsafe { core::ptr::write_bytes(base as *mut u8, CANARY, PAGE) };
        let guard = base + (SCRATCH_PAGES + 1) * PAGE;
        sys(nr::MPROTECT, &[guard, PAGE, PROT_NONE]);
        Arena {
            canary: base,
            scratch: base + PAGE,
            guard,
        }
    }

    fn canary_intact(&self) -> bool {
        // SAFETY: the canary page is mapped read-write for the arena's life.
        let page = unsafe { core::slice::from_raw_parts(self.canary as *const u8, PAGE) };
        page.iter().all(|&b| b == CANARY)
    }

    /// An address the kernel may be asked to read or write for the tracer:
    /// inside the scratch (aligned or not, near its end so that a copy runs
    /// into the guard), the guard, or nowhere a user may point.
    fn pointer(&self, rng: &mut Rng) -> usize {
        let span = SCRATCH_PAGES * PAGE;
        match rng.below(12) {
            0..=3 => self.scratch + (rng.below(span as u64 / 8) as usize) * 8,
            4 => self.scratch + rng.below(span as u64) as usize,
            5 => self.guard - 1 - rng.below(600) as usize,
            6 => self.guard + rng.below(PAGE as u64) as usize,
            7 => 0,
            8 => 0xffff_0000_0000_0000 | (rng.next() as usize & 0xffff_ffff_fff8),
            9 => 0x0001_0000_0000_0000 + rng.below(1 << 20) as usize,
            10 => usize::MAX - rng.below(64) as usize,
            _ => rng.below(0x1_0000) as usize,
        }
    }

    /// Fills the scratch with noise, with (base, len) iovecs at its start
    /// that point back into it or anywhere.
    fn scribble(&self, rng: &mut Rng) {
        for i in 0..64 {
            let v = match rng.below(3) {
                0 => rng.next(),
                1 => rng.below(0x400),
                _ => self.pointer(rng) as u64,
            };
            // SAFETY: 64 words: inside the scratch.
            unsafe { (self.scratch as *mut u64).add(i).write(v) };
        }
        // An iovec at the start: base then len.
        // SAFETY: the first 16 bytes of the scratch.
        unsafe {
            (self.scratch as *mut usize).write(self.pointer(rng));
            let len = match rng.below(4) {
                0 => rng.below(16) as usize,
                1 => rng.below(1200) as usize,
                2 => 34 * 8,
                _ => rng.next() as usize,
            };
            (self.scratch as *mut usize).add(1).write(len);
        }
    }
}

/// The tracee: stops itself, then makes system calls and touches memory
/// for `iterations` rounds and exits (its last state is "exiting").
fn tracee_main(iterations: u64) -> i32 {
    // A process group of its own: what it forks dies with it.
    sys(nr::SETPGID, &[0, 0]);
    sys(PTRACE, &[PTRACE_TRACEME, 0, 0, 0]);
    kill(getpid(), SIGSTOP);
    let mut x = 0u64;
    for i in 0..iterations {
        x = core::hint::black_box(x.wrapping_add(i));
        getpid();
        if i % 64 == 0 {
            sleep_ns(100_000);
        }
    }
    (x & 1) as i32
}

/// One request at `pid` with random arguments; Err if the answer is one
/// Linux cannot give.
fn random_request(rng: &mut Rng, arena: &Arena, tracee: i32, log: &mut Log) -> Result<(), String> {
    let unknown = rng.below(8) == 0;
    let req = if unknown {
        loop {
            let r = match rng.below(3) {
                0 => rng.below(64) as usize,
                1 => PTRACE_SETOPTIONS + rng.below(0x40) as usize,
                _ => rng.next() as u32 as usize,
            };
            if r != PTRACE_TRACEME && !KNOWN.contains(&r) {
                break r;
            }
        }
    } else {
        KNOWN[rng.below(KNOWN.len() as u64) as usize]
    };
    // Attaching goes only to the tracee, the tracer itself or no one: a
    // random pid could stop init or the suite's own parent.
    let pid = match rng.below(16) {
        0 => getpid(),
        1 => 0x3fff_fff0,
        2 => -1,
        3 => 0,
        _ => tracee,
    };
    let addr = match req {
        PTRACE_PEEKTEXT..=PTRACE_POKEUSR if rng.below(2) == 0 => {
            // The tracee's copy of this address space: its stack, its text,
            // the arena (which it shares as a fork copy), or odd places.
            let local = 0u64;
            match rng.below(4) {
                0 => core::ptr::addr_of!(local) as usize + rng.below(256) as usize,
                1 => tracee_main as fn(u64) -> i32 as usize + rng.below(64) as usize * 4,
                2 => arena.canary + rng.below(PAGE as u64) as usize,
                _ => rng.below(1 << 48) as usize,
            }
        }
        PTRACE_GETREGSET | PTRACE_SETREGSET => NOTES[rng.below(NOTES.len() as u64) as usize],
        _ => arena.pointer(rng),
    };
    let data = match req {
        PTRACE_POKETEXT | PTRACE_POKEDATA | PTRACE_POKEUSR => rng.next() as usize,
        PTRACE_CONT | PTRACE_SYSCALL | PTRACE_SINGLESTEP | PTRACE_DETACH => match rng.below(4) {
            0 => rng.below(65) as usize,
            1 => rng.next() as usize,
            _ => 0,
        },
        // Options: valid bits mostly, sometimes anything.
        PTRACE_SETOPTIONS | PTRACE_SEIZE if rng.below(4) != 0 => rng.next() as usize & OPTIONS,
        PTRACE_SETOPTIONS | PTRACE_SEIZE => rng.next() as usize,
        PTRACE_GETREGSET | PTRACE_SETREGSET if rng.below(4) != 0 => arena.scratch,
        _ => arena.pointer(rng),
    };
    let r = sys(PTRACE, &[req, pid as usize, addr, data]);
    log.push([req, pid as usize, addr, data, r as usize]);
    if r < -4095 {
        return Err(format!("ptrace({req:#x}, {pid}, {addr:#x}, {data:#x}) returned {r}"));
    }
    if unknown && pid == tracee && r != EIO && r != ESRCH {
        return Err(format!(
            "ptrace({req:#x}), a request Linux does not have, returned {r}, not EIO or ESRCH"
        ));
    }
    Ok(())
}

/// Kills the tracee's process group (it and whatever its scrambled
/// registers made it fork) and reaps every child and tracee of this
/// tracer, with `__WALL` for threads it may have cloned, resuming those
/// that stop on their way out; false if some are still there after `ms`.
fn kill_and_reap(pid: i32, ms: u64) -> bool {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    let end = now_ns() + ms * 1_000_000;
    loop {
        let mut st = 0i32;
        let r = sys(
            nr::WAIT4,
            &[usize::MAX, &mut st as *mut i32 as usize, WNOHANG | WALL, 0],
        );
        if r == ECHILD {
            return true;
        }
        // A SIGKILLed tracee still stops at PTRACE_EVENT_EXIT when the
        // fuzzing set PTRACE_O_TRACEEXIT, as on Linux: its tracer lets it
        // go on to die.
        if r > 0 && uapi::wait::WIFSTOPPED(st) {
            sys(PTRACE, &[PTRACE_CONT, r as usize, 0, 0]);
        }
        if r <= 0 {
            if now_ns() > end {
                return false;
            }
            // A PTRACE_EVENT_EXIT stop the fuzzing loop already collected
            // is not reported again: resume every tracee still stopped.
            for t in tracees() {
                sys(PTRACE, &[PTRACE_CONT, t as usize, 0, 0]);
            }
            sleep_ms(2);
        }
    }
}

/// The `/proc/PID/status` of each process whose parent or tracer is this
/// one, with its pid.
fn relatives() -> alloc::vec::Vec<(i32, String)> {
    let me = format!("{}", getpid());
    let mut out = alloc::vec::Vec::new();
    let Ok(dir) = rt::fs::open(b"/proc", rt::fs::O_DIRECTORY, 0) else {
        return out;
    };
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = rt::fs::getdents64(dir, &mut buf) {
        for e in rt::fs::dirents(&buf[..n]) {
            let Some(pid) = core::str::from_utf8(e.name).ok().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(fd) = rt::fs::open(format!("/proc/{pid}/status").as_bytes(), 0, 0) else {
                continue;
            };
            let mut text = [0u8; 2048];
            let len = rt::fs::read(fd, &mut text).unwrap_or(0);
            let _ = rt::fs::close(fd);
            let text = String::from(core::str::from_utf8(&text[..len]).unwrap_or(""));
            if status_field(&text, "PPid:") == me || status_field(&text, "TracerPid:") == me {
                out.push((pid, text));
            }
        }
    }
    let _ = rt::fs::close(dir);
    out
}

fn status_field<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
        .unwrap_or("")
}

/// The pids this process traces.
fn tracees() -> alloc::vec::Vec<i32> {
    let me = format!("{}", getpid());
    relatives()
        .into_iter()
        .filter(|(_, t)| status_field(t, "TracerPid:") == me)
        .map(|(p, _)| p)
        .collect()
}

/// The processes whose parent or tracer is this one, with their state:
/// what a failed reap left.
fn leftovers() -> String {
    let mut out = String::new();
    for (pid, text) in relatives() {
        let field = |k: &str| status_field(&text, k);
        out.push_str(&format!(
            "[{pid} {} state {} tracer {} ppid {} sigpnd {} shdpnd {}] ",
            field("Name:"),
            field("State:"),
            field("TracerPid:"),
            field("PPid:"),
            field("SigPnd:"),
            field("ShdPnd:")
        ));
    }
    out
}

/// The last requests and waits of a round, printed when it fails: what
/// to replay.
#[derive(Default)]
struct Log(alloc::vec::Vec<[usize; 5]>);
impl Log {
    fn push(&mut self, e: [usize; 5]) {
        if self.0.len() == 40 {
            self.0.remove(0);
        }
        self.0.push(e);
    }
    fn dump(&self) -> String {
        let mut out = String::new();
        for e in &self.0 {
            out.push_str(&format!(
                "{:x} {} {:x} {:x} -> {}\n",
                e[0], e[1] as i32, e[2], e[3], e[4] as isize
            ));
        }
        out
    }
}

/// A tracee that would run long, in its first stop (`what` names the
/// attack in the error).
fn long_tracee_stopped(what: &str) -> Result<i32, String> {
    let pid = spawn(|| tracee_main(1_000_000));
    let (r, st) = wait4(pid, WALL);
    if r != pid as isize || st & 0xff != 0x7f {
        return Err(format!("{what}: first stop: wait4 {r}, status {st:#x}"));
    }
    Ok(pid)
}

/// The exiting state on purpose: a stopped tracee resumed with a fatal
/// signal, and its tracer attaching to it again while it dies. Linux
/// answers EPERM (still traced, or exiting) until the tracer reaps it,
/// then ESRCH; an attach that succeeded would leave a tracee that can
/// never be reaped.
fn attach_while_exiting(rounds: u64) -> Result<(), String> {
    for round in 0..rounds {
        let pid = long_tracee_stopped("attach-while-exiting")?;
        sys(PTRACE, &[PTRACE_CONT, pid as usize, 0, SIGXFSZ as usize]);
        loop {
            let a = sys(PTRACE, &[PTRACE_ATTACH, pid as usize, 0, 0]);
            if a != EPERM {
                kill_and_reap(pid, 5000);
                return Err(format!(
                    "PTRACE_ATTACH of its own tracee dying of a signal returned {a}, not EPERM (round {round})"
                ));
            }
            let (r, st) = wait4(pid, WNOHANG | WALL);
            if r == pid as isize && !uapi::wait::WIFSTOPPED(st) {
                break;
            }
        }
        if !kill_and_reap(pid, 5000) {
            return Err(format!("attach-while-exiting: a tracee was not reaped (round {round})"));
        }
    }
    Ok(())
}

/// A tracee detached with a fatal signal while its former tracer attaches
/// again as it dies: the attach may win (0) or find it exiting (EPERM),
/// but either way the process is reaped once and the caller is left with
/// no child (ECHILD). An attach linked after the exit decided who hears
/// of it left a tracee no wait could ever collect.
fn attach_after_fatal_detach(rounds: u64) -> Result<(), String> {
    const SIGRTMIN_13: usize = SIGRTMIN as usize + 13;
    for round in 0..rounds {
        let pid = long_tracee_stopped("attach-after-detach")?;
        sys(PTRACE, &[PTRACE_DETACH, pid as usize, 0, SIGRTMIN_13]);
        // A sweep of delays, so that some attach meets the exit midway.
        for _ in 0..round % 24 {
            getpid();
        }
        let a = sys(PTRACE, &[PTRACE_ATTACH, pid as usize, 0, 0]);
        if a != 0 && a != EPERM {
            kill_and_reap(pid, 5000);
            return Err(format!(
                "PTRACE_ATTACH of a process dying of a signal returned {a} (round {round})"
            ));
        }
        if !kill_and_reap(pid, 5000) {
            return Err(format!(
                "attach-after-detach: a wait never ended in ECHILD (round {round}, attach {a}; left: {})",
                leftovers()
            ));
        }
    }
    Ok(())
}

pub fn ptrace_fuzz(cfg: &Cfg) -> Result<(), String> {
    let mut rng = Rng(cfg.seed ^ 0x7074_667a);
    let arena = Arena::new();
    let end = now_ns() + 3_000_000_000 * cfg.scale;
    let mut rounds = 0u64;
    let mut requests = 0u64;
    while now_ns() < end || rounds < 3 {
        arena.scribble(&mut rng);
        let iterations = rng.below(4000);
        let pid = spawn(move || tracee_main(iterations));
        // Its self-stop.
        let (r, st) = wait4(pid, WALL);
        if r != pid as isize || st & 0xff != 0x7f {
            return Err(format!("the tracee's first stop: wait4 {r}, status {st:#x}"));
        }
        let ops = 50 + rng.below(250);
        let mut log = Log::default();
        for i in 0..ops {
            if i % 16 == 0 {
                arena.scribble(&mut rng);
            }
            random_request(&mut rng, &arena, pid, &mut log)?;
            requests += 1;
            match rng.below(10) {
                // Collect whatever stop or exit happened.
                // Once it is reaped its pid may name another process:
                // the round ends there.
                0..=2 => {
                    let (r, st) = wait4(pid, WNOHANG | WALL);
                    log.push([usize::MAX, pid as usize, r as usize, st as usize, 0]);
                    if r == pid as isize && !uapi::wait::WIFSTOPPED(st) {
                        break;
                    }
                }
                // Keep it moving between stops.
                3 => {
                    let r = sys(PTRACE, &[PTRACE_CONT, pid as usize, 0, 0]);
                    log.push([PTRACE_CONT, pid as usize, 0, 0, r as usize]);
                }
                4 if rng.below(20) == 0 => {
                    let sig = if rng.below(2) == 0 { SIGKILL } else { SIGSTOP };
                    kill(pid, sig);
                    log.push([usize::MAX - 1, pid as usize, sig as usize, 0, 0]);
                }
                _ => {}
            }
            if i % 32 == 0 && !arena.canary_intact() {
                return Err(format!(
                    "the kernel wrote the canary page (round {rounds}, request {requests})"
                ));
            }
        }
        if !arena.canary_intact() {
            return Err(format!("the kernel wrote the canary page (round {rounds})"));
        }
        if !kill_and_reap(pid, 5000) {
            return Err(format!("a tracee or its children survived SIGKILL for 5 s (round {rounds}, tracee {pid}; left: {}); its last requests (request pid addr data -> result; wait4 as ffffffffffffffff):\n{}", leftovers(), log.dump()));
        }
        rounds += 1;
    }
    attach_while_exiting(20 * cfg.scale)?;
    attach_after_fatal_detach(40 * cfg.scale)
}
