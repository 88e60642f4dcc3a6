//! Attacks on process and thread life cycles: fork/exec/exit storms,
//! concurrent waiters, exit_group and execve racing clone, vfork.

use alloc::format;
use alloc::string::String;
use core::arch::global_asm;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering::SeqCst};

use crate::sys::*;
use crate::Cfg;

global_asm!(
    ".section .text.adversary_vfork,\"ax\",@progbits",
    ".global adversary_vfork_exec",
    ".type adversary_vfork_exec,@function",
    // vfork (CLONE_VM | CLONE_VFORK | SIGCHLD); the child execve(x0, x1,
    // x2) and exits 127 if that fails, touching no stack: it runs on the
    // parent's.
    "adversary_vfork_exec:",
    "    mov x9, x0",
    "    mov x10, x1",
    "    mov x11, x2",
    "    mov x0, #{vfork_flags}",
    "    mov x1, xzr",
    "    mov x2, xzr",
    "    mov x3, xzr",
    "    mov x4, xzr",
    "    mov x8, #{clone}",
    "    svc #0",
    "    cbnz x0, 1f",
    "    mov x0, x9",
    "    mov x1, x10",
    "    mov x2, x11",
    "    mov x8, #{execve}",
    "    svc #0",
    "    mov x0, #127",
    "    mov x8, #{exit}",
    "    svc #0",
    "1:  ret",
    ".size adversary_vfork_exec, . - adversary_vfork_exec",
    ".global adversary_vfork_sleep",
    ".type adversary_vfork_sleep,@function",
    // vfork; the child nanosleep(x0) and exits 0.
    "adversary_vfork_sleep:",
    "    mov x9, x0",
    "    mov x0, #{vfork_flags}",
    "    mov x1, xzr",
    "    mov x2, xzr",
    "    mov x3, xzr",
    "    mov x4, xzr",
    "    mov x8, #{clone}",
    "    svc #0",
    "    cbnz x0, 1f",
    "    mov x0, x9",
    "    mov x1, xzr",
    "    mov x8, #{nanosleep}",
    "    svc #0",
    "    mov x0, #0",
    "    mov x8, #{exit}",
    "    svc #0",
    "1:  ret",
    ".size adversary_vfork_sleep, . - adversary_vfork_sleep",
    clone = const nr::CLONE,
    execve = const nr::EXECVE,
    exit = const nr::EXIT,
    nanosleep = const nr::NANOSLEEP,
    vfork_flags = const VFORK_FLAGS,
);

/// vfork()'s `clone` flags: CLONE_VM | CLONE_VFORK, SIGCHLD at exit.
const VFORK_FLAGS: usize = (uapi::sched::CLONE_VM | uapi::sched::CLONE_VFORK) as usize | SIGCHLD as usize;

unsafe extern "C" {
    fn adversary_vfork_exec(path: *const u8, argv: *const usize, envp: *const usize) -> isize;
    fn adversary_vfork_sleep(ts: *const i64) -> isize;
}

/// Where the runners put the program (scripts/qemu-run.sh and reflinux
/// copy files into /bin); /proc/self/exe if it is not there.
static SELF_PATH: &[u8] = b"/bin/adversary\0";
static PROC_EXE: &[u8] = b"/proc/self/exe\0";
static ARG0: &[u8] = b"adversary\0";
static ARG1: &[u8] = b"__exit0\0";

/// Replaces the process with `adversary __exit0` (exits 0 at once).
fn exec_exit0() -> isize {
    let argv = [ARG0.as_ptr() as usize, ARG1.as_ptr() as usize, 0];
    let envp = [0usize];
    sys(
        nr::EXECVE,
        &[
            SELF_PATH.as_ptr() as usize,
            argv.as_ptr() as usize,
            envp.as_ptr() as usize,
        ],
    );
    sys(
        nr::EXECVE,
        &[
            PROC_EXE.as_ptr() as usize,
            argv.as_ptr() as usize,
            envp.as_ptr() as usize,
        ],
    )
}

extern "C" fn spin_yield(_: usize) -> usize {
    loop {
        sys(nr::SCHED_YIELD, &[]);
    }
}

pub fn fork_storm(cfg: &Cfg) -> Result<(), String> {
    let mut rng = Rng(cfg.seed ^ 0xf0f0);
    let rounds = 60 * cfg.scale;
    let mut in_flight = 0;
    let mut bad = String::new();
    let reap = |block: bool, bad: &mut String| -> bool {
        let (r, st) = wait4(-1, if block { 0 } else { WNOHANG });
        if r > 0 {
            if st != 0 && bad.len() < 500 {
                bad.push_str(&format!(" child {r} status {st:#x}"));
            }
            true
        } else {
            false
        }
    };
    for _ in 0..rounds {
        while in_flight >= 8 {
            if reap(true, &mut bad) {
                in_flight -= 1;
            }
        }
        let kind = rng.below(6);
        let r = match kind {
            4 => {
                let argv = [ARG0.as_ptr() as usize, ARG1.as_ptr() as usize, 0];
                let envp = [0usize];
                // SAFETY: the vfork child only execs or exits, on our stack.
                unsafe { adversary_vfork_exec(SELF_PATH.as_ptr(), argv.as_ptr(), envp.as_ptr()) }
            }
            _ => {
                let pid = fork();
                if pid == 0 {
                    let code = match kind {
                        0 => 0,
                        1 => {
                            // An orphan that outlives its parent briefly.
                            if fork() == 0 {
                                sleep_ms(5);
                            }
                            0
                        }
                        2 => {
                            exec_exit0();
                            127
                        }
                        3 => {
                            thread(spin_yield, 0);
                            thread(spin_yield, 0);
                            sys(nr::SCHED_YIELD, &[]);
                            0
                        }
                        _ => {
                            // A chain: each generation forks the next and waits.
                            for _ in 0..3 {
                                let c = fork();
                                if c != 0 {
                                    let (_, st) = wait4(c, 0);
                                    exit_group(if st == 0 { 0 } else { 1 });
                                }
                            }
                            0
                        }
                    };
                    exit_group(code);
                }
                pid as isize
            }
        };
        if r > 0 {
            in_flight += 1;
        }
        while reap(false, &mut bad) {
            in_flight -= 1;
        }
    }
    while in_flight > 0 && reap(true, &mut bad) {
        in_flight -= 1;
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("children ended badly:{bad}"))
    }
}

const MAX_CHILDREN: usize = 4096;
static REAPED: [AtomicI32; MAX_CHILDREN] = [const { AtomicI32::new(0) }; MAX_CHILDREN];
static N_REAPED: AtomicUsize = AtomicUsize::new(0);
static BAD_STATUS: AtomicU32 = AtomicU32::new(0);
static DONE_FORKING: AtomicBool = AtomicBool::new(false);

extern "C" fn waiter(_: usize) -> usize {
    loop {
        let mut st = 0i32;
        let r = sys(nr::WAIT4, &[usize::MAX, &mut st as *mut i32 as usize, 0, 0]);
        if r > 0 {
            let i = N_REAPED.fetch_add(1, SeqCst);
            if i < MAX_CHILDREN {
                REAPED[i].store(r as i32, SeqCst);
            }
            if st != 3 << 8 {
                BAD_STATUS.fetch_add(1, SeqCst);
            }
        } else if r == neg(Errno::ECHILD) {
            if DONE_FORKING.load(SeqCst) {
                return 0;
            }
            sleep_ms(1);
        }
    }
}

pub fn wait_race(cfg: &Cfg) -> Result<(), String> {
    let n = (40 * cfg.scale as usize).min(MAX_CHILDREN);
    let mut rng = Rng(cfg.seed ^ 0x3a17);
    let waiters: [Thread; 4] = core::array::from_fn(|_| thread(waiter, 0));
    if let Some(t) = waiters.iter().find(|t| t.tid < 0) {
        return Err(format!("clone of a thread: {}", t.tid));
    }
    let mut pids = alloc::vec::Vec::with_capacity(n);
    for _ in 0..n {
        let delay = rng.below(2_000_000);
        let pid = spawn(move || {
            sleep_ns(delay);
            3
        });
        pids.push(pid);
    }
    DONE_FORKING.store(true, SeqCst);
    let stuck = waiters.iter().filter(|w| !w.join(20_000 * cfg.scale)).count();
    let got = N_REAPED.load(SeqCst);
    let mut seen: alloc::vec::Vec<i32> = (0..got.min(MAX_CHILDREN)).map(|i| REAPED[i].load(SeqCst)).collect();
    seen.sort_unstable();
    let dups = seen.windows(2).filter(|w| w[0] == w[1]).count();
    pids.sort_unstable();
    if stuck > 0 {
        return Err(format!("{stuck} waiting threads stuck in wait4; {got} of {n} reaped"));
    }
    if got != n || dups > 0 || seen != pids {
        return Err(format!("{n} children, {got} reaps, {dups} reaped twice"));
    }
    let bad = BAD_STATUS.load(SeqCst);
    if bad > 0 {
        return Err(format!("{bad} statuses not exit 3"));
    }
    Ok(())
}

/// The write end survivors would report on (inherited from the attack).
static COUNTER: AtomicUsize = AtomicUsize::new(0);

extern "C" fn bump_forever(_: usize) -> usize {
    let w = COUNTER.load(SeqCst);
    loop {
        sys(nr::WRITE, &[w, b"x".as_ptr() as usize, 1]);
        sleep_ms(1);
    }
}

/// Clones up to 64 counting threads (enough to race exit_group and
/// execve; thousands would only make the machine slow), then sleeps.
extern "C" fn cloner(_: usize) -> usize {
    for _ in 0..64 {
        let t = thread(bump_forever, 0);
        if t.tid < 0 {
            sleep_ms(1);
        }
    }
    loop {
        sleep_ms(1000);
    }
}

extern "C" fn sleeper(_: usize) -> usize {
    loop {
        sleep_ms(10_000);
    }
}

static NEVER: AtomicU32 = AtomicU32::new(0);

extern "C" fn futex_waiter(_: usize) -> usize {
    loop {
        sys(nr::FUTEX, &[NEVER.as_ptr() as usize, FUTEX_WAIT | FUTEX_PRIVATE, 0, 0]);
    }
}

extern "C" fn exec_thread(_: usize) -> usize {
    exec_exit0();
    exit_group(127)
}

/// A non-blocking pipe whose write end the threads of the attack's
/// children inherit: (read end, write end).
fn survivor_pipe() -> (usize, usize) {
    let mut p = [-1i32; 2];
    sys(nr::PIPE2, &[p.as_mut_ptr() as usize, O_NONBLOCK]);
    COUNTER.store(p[1] as usize, SeqCst);
    (p[0] as usize, p[1] as usize)
}

fn drain(r: usize) -> usize {
    let mut b = [0u8; 4096];
    let mut n = 0;
    loop {
        let k = sys(nr::READ, &[r, b.as_mut_ptr() as usize, b.len()]);
        if k <= 0 {
            return n;
        }
        n += k as usize;
    }
}

/// After the child `pid` was reaped, nothing may write to the pipe.
fn no_survivors(pid: i32, r: usize) -> Result<(), String> {
    let st = wait_timeout(pid, 20_000).ok_or_else(|| format!("child {pid} did not end"))?;
    if describe(st) != (true, 0) {
        return Err(format!("child {pid} ended with status {st:#x}"));
    }
    drain(r);
    sleep_ms(200);
    let n = drain(r);
    if n > 0 {
        return Err(format!(
            "a thread of reaped process {pid} still runs ({n} writes after the reap)"
        ));
    }
    Ok(())
}

pub fn exit_race(cfg: &Cfg) -> Result<(), String> {
    let (r, _w) = survivor_pipe();
    let mut rng = Rng(cfg.seed ^ 0xe817);
    for _ in 0..10 * cfg.scale {
        let delay = rng.below(3_000_000);
        let pid = spawn(move || {
            thread(cloner, 0);
            thread(cloner, 0);
            sleep_ns(delay);
            exit_group(0)
        });
        no_survivors(pid, r)?;
    }
    Ok(())
}

pub fn exec_race(cfg: &Cfg) -> Result<(), String> {
    let (r, _w) = survivor_pipe();
    let mut rng = Rng(cfg.seed ^ 0xe8ec);
    for round in 0..10 * cfg.scale {
        let delay = rng.below(3_000_000);
        let pid = spawn(move || {
            thread(cloner, 0);
            thread(sleeper, 0);
            thread(futex_waiter, 0);
            thread(spin_yield, 0);
            thread(bump_forever, 0);
            sleep_ns(delay);
            if round % 2 == 0 {
                exec_exit0();
            } else {
                thread(exec_thread, 0);
                loop {
                    sleep_ms(1000);
                }
            }
            127
        });
        no_survivors(pid, r)?;
    }
    Ok(())
}

pub fn clone_settid(_cfg: &Cfg) -> Result<(), String> {
    let w = anon(PAGE);
    let cell = word(w);
    cell.store(0xaaaa_aaaa, SeqCst);
    let flags = SIGCHLD as usize | CLONE_CHILD_SETTID;
    let pid = sys(nr::CLONE, &[flags, 0, 0, 0, w]);
    if pid == 0 {
        let mine = cell.load(SeqCst) as u32 as i32;
        exit_group(if mine == gettid() { 0 } else { 1 });
    }
    if pid < 0 {
        return Err(format!("clone(CLONE_CHILD_SETTID): {pid}"));
    }
    let st = wait_timeout(pid as i32, 10_000).ok_or("child hung")?;
    let mut wrong = String::new();
    if describe(st) != (true, 0) {
        wrong.push_str(&format!(" the child's word was not its tid (status {st:#x});"));
    }
    let v = cell.load(SeqCst);
    if v != 0xaaaa_aaaa {
        wrong.push_str(&format!(
            " the parent's word became {v:#x} (the child's tid written into the parent);"
        ));
    }
    // Bad tid pointers: Linux ignores the faults, the child runs.
    for bad in [0xffff_0000_0000_0000usize, 0, 8, 1 << 48] {
        let flags = SIGCHLD as usize | CLONE_CHILD_SETTID | uapi::sched::CLONE_PARENT_SETTID as usize;
        let pid = sys(nr::CLONE, &[flags, 0, bad, 0, bad]);
        if pid == 0 {
            exit_group(0);
        }
        if pid < 0 {
            wrong.push_str(&format!(" clone with tid pointers {bad:#x}: {pid};"));
            continue;
        }
        match wait_timeout(pid as i32, 10_000) {
            Some(0) => {}
            st => wrong.push_str(&format!(" child with tid pointers {bad:#x}: {st:?};")),
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}

pub fn vfork_kill(cfg: &Cfg) -> Result<(), String> {
    for _ in 0..3 * cfg.scale {
        let pid = spawn(|| {
            sys(nr::SETPGID, &[0, 0]);
            let ts = [30i64, 0];
            // SAFETY: the vfork child sleeps and exits, touching no stack.
            unsafe { adversary_vfork_sleep(ts.as_ptr()) };
            0
        });
        sleep_ms(200);
        kill(pid, SIGKILL);
        let r = wait_timeout(pid, 3000);
        kill(-pid, SIGKILL);
        match r {
            Some(st) if describe(st) == (false, SIGKILL) => {}
            Some(st) => return Err(format!("vfork parent ended with status {st:#x}, not SIGKILL")),
            None => {
                wait_timeout(pid, 5000);
                return Err(String::from(
                    "SIGKILL did not end a parent waiting for its vfork child (3 s)",
                ));
            }
        }
    }
    Ok(())
}

/// Children made with CLONE_PARENT while the caller's parent is SIGKILLed:
/// each joins the dying parent (and is handed to init with its other
/// children) or init, never a parent that has handed its children over
/// already; init reaps every one.
pub fn clone_parent_death(cfg: &Cfg) -> Result<(), String> {
    let mut rng = Rng(cfg.seed ^ 0x636c_6f6e);
    for _ in 0..6 * cfg.scale {
        let ch = Channel::new();
        let parent = spawn(move || {
            sys(nr::SETPGID, &[0, 0]);
            spawn(move || loop {
                let r = sys(
                    nr::CLONE,
                    &[uapi::sched::CLONE_PARENT as usize | SIGCHLD as usize, 0, 0, 0, 0],
                );
                if r == 0 {
                    ch.send(getpid() as u64);
                    exit_group(0);
                }
                if r < 0 {
                    sleep_ms(1);
                }
            });
            // Never reaps: its children wait for init.
            loop {
                sleep_ms(1000);
            }
        });
        sleep_ms(5 + rng.below(25));
        kill(parent, SIGKILL);
        // The cloner goes on with init as its parent for a moment.
        sleep_ms(rng.below(10));
        kill(-parent, SIGKILL);
        if wait_timeout(parent, 3000).is_none() {
            return Err(format!("parent {parent} did not die of SIGKILL (3 s)"));
        }
        let mut b = [0u8; 8];
        let mut n = 0;
        while ch.drain_one(&mut b) {
            let pid = u64::from_le_bytes(b) as i32;
            n += 1;
            if !gone_within(pid, 5000) {
                ch.close();
                return Err(format!(
                    "CLONE_PARENT child {pid} of {parent}'s child still exists 5 s after both died ({n} read)"
                ));
            }
        }
        ch.close();
        progress();
    }
    Ok(())
}

/// Whether `pid` is gone (reaped by init) within `ms`.
fn gone_within(pid: i32, ms: u64) -> bool {
    let end = now_ns() + ms * 1_000_000;
    while now_ns() < end {
        if kill(pid, 0) == neg(Errno::ESRCH) {
            return true;
        }
        sleep_ms(10);
    }
    false
}

/// Tracers die (SIGKILL, at random points of their tracees' syscall stops,
/// with or without PTRACE_O_EXITKILL) and tracees die while stopped: no
/// tracee is left stuck, each stays killable, and init reaps them.
pub fn ptrace_death(cfg: &Cfg) -> Result<(), String> {
    use uapi::ptrace::{PTRACE_O_EXITKILL, PTRACE_O_TRACESYSGOOD, PTRACE_SETOPTIONS, PTRACE_SYSCALL, PTRACE_TRACEME};
    const O_TRACESYSGOOD: usize = PTRACE_O_TRACESYSGOOD as usize;
    const O_EXITKILL: usize = PTRACE_O_EXITKILL as usize;
    let mut rng = Rng(cfg.seed ^ 0x7072_6163);
    // 36 rounds a pass (under a second): a tracer-parent's exit racing its
    // tracee's showed about once in 50 rounds of that kind (round % 6 ==
    // 5) until it was fixed: 6 rounds a pass rarely met it.
    for round in 0..36 * cfg.scale {
        let exitkill = round % 2 == 1;
        let stops = rng.below(40);
        let kill_tracee_first = round % 3 == 2;
        let ch = Channel::new();
        let tracer = spawn(move || {
            let tracee = spawn(|| {
                sys(nr::PTRACE, &[PTRACE_TRACEME as usize, 0, 0, 0]);
                kill(getpid(), SIGSTOP);
                loop {
                    getpid();
                }
            });
            if wait4(tracee, WALL).0 != tracee as isize {
                return 2;
            }
            let opts = O_TRACESYSGOOD | if exitkill { O_EXITKILL } else { 0 };
            sys(nr::PTRACE, &[PTRACE_SETOPTIONS as usize, tracee as usize, 0, opts]);
            // Reported only now: a tracer killed before its tracee's
            // TRACEME leaves it to be traced by init, and one killed
            // before SETOPTIONS detaches it without EXITKILL, on Linux
            // as here; neither is what a round means to attack.
            ch.send(tracee as u64);
            for _ in 0..stops {
                if sys(nr::PTRACE, &[PTRACE_SYSCALL as usize, tracee as usize, 0, 0]) != 0 {
                    return 3;
                }
                if wait4(tracee, WALL).0 != tracee as isize {
                    return 4;
                }
            }
            // Leave it in a syscall stop (or running) and wait to be killed.
            sys(nr::PTRACE, &[PTRACE_SYSCALL as usize, tracee as usize, 0, 0]);
            loop {
                sleep_ms(1000);
            }
        });
        let mut b = [0u8; 8];
        let end = now_ns() + 3_000_000_000;
        while !ch.drain_one(&mut b) {
            if now_ns() > end {
                kill(tracer, SIGKILL);
                wait_timeout(tracer, 3000);
                ch.close();
                return Err(String::from("the tracer never reported its tracee"));
            }
            sleep_ms(2);
        }
        ch.close();
        let tracee = u64::from_le_bytes(b) as i32;
        sleep_ms(rng.below(30));
        if kill_tracee_first {
            kill(tracee, SIGKILL);
        }
        kill(tracer, SIGKILL);
        match wait_timeout(tracer, 5000) {
            Some(st) if describe(st) == (false, SIGKILL) => {}
            // The tracee's SIGKILL can reach the tracer's wait4 first: its
            // next PTRACE_SYSCALL fails (ESRCH, exit 3) or, the tracee
            // reaped, its wait4 does (ECHILD, exit 4), before its own kill.
            Some(st) if kill_tracee_first && matches!(describe(st), (true, 3 | 4)) => {}
            Some(st) => return Err(format!("the tracer ended with status {st:#x} (round {round})")),
            None => return Err(String::from("SIGKILL did not end a tracer (5 s)")),
        }
        if !exitkill && !kill_tracee_first {
            // Detached by its tracer's death: running, and killable.
            sleep_ms(20);
            if kill(tracee, 0) != 0 {
                return Err(format!("a detached tracee vanished (round {round})"));
            }
            kill(tracee, SIGKILL);
        }
        if !gone_within(tracee, 5000) {
            let state = proc_state(tracee);
            kill(tracee, SIGKILL);
            let again = if gone_within(tracee, 1000) {
                "gone after a second SIGKILL"
            } else {
                "still there after a second SIGKILL"
            };
            return Err(format!(
                "tracee {tracee} still exists 5 s after its death (round {round}, exitkill {exitkill}, {state}{again})"
            ));
        }
    }
    Ok(())
}
