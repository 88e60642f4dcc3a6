//! Attacks on pipes, futexes, timers and signal queues.

use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering::SeqCst};

use crate::sys::*;
use crate::Cfg;

use uapi::futex::{FUTEX_CLOCK_REALTIME, FUTEX_CMP_REQUEUE, FUTEX_CMP_REQUEUE_PI, FUTEX_REQUEUE};
use uapi::poll::{PollFd, POLLIN};
use uapi::resource::RLIMIT_SIGPENDING;
use uapi::signal::code::SI_QUEUE;
use uapi::signal::SigInfo;
use uapi::time::{ITIMER_PROF, ITIMER_VIRTUAL};

const EPIPE: isize = neg(Errno::EPIPE);
const EAGAIN: isize = neg(Errno::EAGAIN);
const EINTR: isize = neg(Errno::EINTR);
const ENOSYS: isize = neg(Errno::ENOSYS);

fn pipe(flags: usize) -> [i32; 2] {
    let mut p = [-1i32; 2];
    let r = sys(nr::PIPE2, &[p.as_mut_ptr() as usize, flags]);
    assert!(r == 0, "pipe2: {r}");
    p
}

fn close(fd: i32) {
    sys(nr::CLOSE, &[fd as usize]);
}

/// ppoll on one descriptor for `ms`; the revents (0 on timeout).
fn poll1(fd: i32, events: u16, ms: u64) -> u16 {
    let mut pfd = PollFd { fd, events, revents: 0 }.to_bytes();
    let ts = [(ms / 1000) as i64, ((ms % 1000) * 1_000_000) as i64];
    let r = sys(
        nr::PPOLL,
        &[pfd.as_mut_ptr() as usize, 1, ts.as_ptr() as usize, 0, SIGSET_SIZE],
    );
    if r <= 0 {
        0
    } else {
        PollFd::from_bytes(pfd).revents
    }
}

static KILL_PID: AtomicI32 = AtomicI32::new(0);

extern "C" fn kill_later(ms: usize) -> usize {
    sleep_ms(ms as u64);
    kill(KILL_PID.load(SeqCst), SIGKILL);
    0
}

pub fn pipe_death(cfg: &Cfg) -> Result<(), String> {
    let mut buf = alloc::vec![0x5au8; 65536];
    for round in 0..8 * cfg.scale {
        // A writer killed while blocked on a full pipe: the reader sees EOF.
        let p = pipe(0);
        let w = spawn(|| {
            close(p[0]);
            let chunk = [1u8; 8192];
            loop {
                sys(nr::WRITE, &[p[1] as usize, chunk.as_ptr() as usize, chunk.len()]);
            }
        });
        close(p[1]);
        sys(nr::READ, &[p[0] as usize, buf.as_mut_ptr() as usize, 4096]);
        sleep_ms(round % 3);
        kill(w, SIGKILL);
        let mut eof = false;
        for _ in 0..10_000 {
            if poll1(p[0], POLLIN, 5000) == 0 {
                break;
            }
            let r = sys(nr::READ, &[p[0] as usize, buf.as_mut_ptr() as usize, buf.len()]);
            if r <= 0 {
                eof = r == 0;
                break;
            }
        }
        wait_timeout(w, 5000);
        close(p[0]);
        if !eof {
            return Err(String::from("no EOF after the only writer was killed mid-write"));
        }
        // A reader killed while we are blocked writing: EPIPE (SIGPIPE is
        // ignored), not a hang.
        let p = pipe(0);
        let r = spawn(|| {
            close(p[1]);
            let mut b = [0u8; 1];
            sys(nr::READ, &[p[0] as usize, b.as_mut_ptr() as usize, 1]);
            loop {
                sleep_ms(1000);
            }
        });
        close(p[0]);
        KILL_PID.store(r, SeqCst);
        let killer = thread(kill_later, 20);
        let mut last = 0;
        for _ in 0..64 {
            last = sys(nr::WRITE, &[p[1] as usize, buf.as_ptr() as usize, buf.len()]);
            if last < 0 {
                break;
            }
        }
        killer.join(5000);
        wait_timeout(r, 5000);
        close(p[1]);
        if last != EPIPE {
            return Err(format!("writing to a pipe whose reader was killed: {last}, not EPIPE"));
        }
        // A multi-threaded process blocked in reads and writes on both
        // ends of pipes, killed; its peers see HUP and EPIPE.
        let a = pipe(0);
        let b = pipe(0);
        let v = spawn(|| {
            extern "C" fn rd(fd: usize) -> usize {
                let mut x = [0u8; 16];
                loop {
                    sys(nr::READ, &[fd, x.as_mut_ptr() as usize, 16]);
                }
            }
            extern "C" fn wr(fd: usize) -> usize {
                let x = [0u8; 4096];
                loop {
                    sys(nr::WRITE, &[fd, x.as_ptr() as usize, 4096]);
                }
            }
            thread(rd, a[0] as usize);
            thread(rd, a[0] as usize);
            thread(wr, b[1] as usize);
            thread(wr, b[1] as usize);
            loop {
                sleep_ms(1000);
            }
        });
        close(a[0]);
        close(b[1]);
        sleep_ms(10);
        kill(v, SIGKILL);
        wait_timeout(v, 5000);
        let hup = poll1(b[0], POLLIN, 5000);
        let mut drained = 0;
        while sys(nr::READ, &[b[0] as usize, buf.as_mut_ptr() as usize, buf.len()]) > 0 {
            drained += 1;
            if drained > 1000 {
                break;
            }
        }
        let wr = sys(nr::WRITE, &[a[1] as usize, buf.as_ptr() as usize, 1]);
        close(a[1]);
        close(b[0]);
        if hup == 0 || wr != EPIPE {
            return Err(format!("after a killed multi-threaded peer: poll {hup:#x}, write {wr}"));
        }
    }
    Ok(())
}

static ZERO_TS: [i64; 2] = [0, 0];
static WORD: AtomicU32 = AtomicU32::new(0);
static WOKEN: AtomicU32 = AtomicU32::new(0);

extern "C" fn wait_word(_: usize) -> usize {
    while WORD.load(SeqCst) == 0 {
        sys(nr::FUTEX, &[WORD.as_ptr() as usize, FUTEX_WAIT | FUTEX_PRIVATE, 0, 0]);
    }
    WOKEN.fetch_add(1, SeqCst);
    0
}

static UNMAP_WORD: AtomicU64 = AtomicU64::new(0);

extern "C" fn wait_unmapped(_: usize) -> usize {
    let ts = [0i64, 50_000_000];
    sys(
        nr::FUTEX,
        &[UNMAP_WORD.load(SeqCst) as usize, FUTEX_WAIT, 0, ts.as_ptr() as usize],
    );
    0
}

pub fn futex_bad(cfg: &Cfg) -> Result<(), String> {
    // Every op, every flag combination, on bad and odd addresses, in a
    // child that must come out alive.
    let pid = spawn(|| {
        let none = mmap(0, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS) as usize;
        let ro = mmap(0, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS) as usize;
        let good = anon(PAGE);
        let addrs = [
            0usize,
            1,
            good + 2,
            good,
            ro,
            none,
            0xffff_0000_0000_0000,
            1 << 48,
            0x0000_7fff_ffff_f000,
            good + PAGE - 2,
        ];
        const CLOCK_RT: usize = FUTEX_CLOCK_REALTIME as usize;
        // Every op number up to FUTEX_LOCK_PI2 (13), known or not.
        for op in 0..=13usize {
            for flags in [0, FUTEX_PRIVATE, CLOCK_RT, FUTEX_PRIVATE | CLOCK_RT] {
                for &a in &addrs {
                    for &b in &[addrs[3], a, addrs[6]] {
                        // Timeouts are zero (relative or absolute): nothing blocks.
                        sys(
                            nr::FUTEX,
                            &[a, op | flags, 0, ZERO_TS.as_ptr() as usize, b, 0xffff_ffff],
                        );
                        sys(nr::FUTEX, &[a, op | flags, 1, 2, b, 1]);
                    }
                }
            }
        }
        0
    });
    match wait_timeout(pid, 30_000) {
        Some(0) => {}
        Some(st) => return Err(format!("futex calls on bad addresses ended the caller: status {st:#x}")),
        None => {
            kill(pid, SIGKILL);
            wait_timeout(pid, 5000);
            return Err(String::from("futex calls with zero timeouts on bad addresses hung"));
        }
    }
    // Requeue to itself, over and over, with waiters; then wake them.
    let waiters: [Thread; 3] = core::array::from_fn(|_| thread(wait_word, 0));
    sleep_ms(20);
    let w = WORD.as_ptr() as usize;
    for _ in 0..200 * cfg.scale {
        let op = |op: u32| op as usize | FUTEX_PRIVATE;
        sys(nr::FUTEX, &[w, op(FUTEX_CMP_REQUEUE), 0, i32::MAX as usize, w, 0]);
        sys(nr::FUTEX, &[w, op(FUTEX_REQUEUE), 0, i32::MAX as usize, w]);
        sys(nr::FUTEX, &[w, op(FUTEX_CMP_REQUEUE_PI), 1, i32::MAX as usize, w, 0]);
    }
    WORD.store(1, SeqCst);
    sys(nr::FUTEX, &[w, FUTEX_WAKE | FUTEX_PRIVATE, i32::MAX as usize]);
    let stuck = waiters.iter().filter(|t| !t.join(5000)).count();
    if stuck > 0 {
        return Err(format!(
            "{stuck} of 3 waiters never woke after requeues onto their own futex"
        ));
    }
    // A waiter whose page is unmapped under it returns at its timeout.
    let page = anon(PAGE);
    UNMAP_WORD.store(page as u64, SeqCst);
    let t = thread(wait_unmapped, 0);
    sleep_ms(5);
    sys(nr::MUNMAP, &[page, PAGE]);
    if !t.join(5000) {
        return Err(String::from(
            "a FUTEX_WAIT with a 50 ms timeout on an unmapped page did not return",
        ));
    }
    // Processes killed with threads blocked in FUTEX_WAIT, private and
    // shared: whatever the waits held goes with them.
    let shared_word = anon(PAGE);
    for _ in 0..10 * cfg.scale {
        let pid = spawn(move || {
            extern "C" fn w_private(_: usize) -> usize {
                let x = AtomicU32::new(0);
                sys(nr::FUTEX, &[x.as_ptr() as usize, FUTEX_WAIT | FUTEX_PRIVATE, 0, 0]);
                0
            }
            extern "C" fn w_shared(a: usize) -> usize {
                sys(nr::FUTEX, &[a, FUTEX_WAIT, 0, 0]);
                0
            }
            thread(w_private, 0);
            thread(w_private, 0);
            thread(w_shared, shared_word);
            thread(w_shared, shared_word);
            loop {
                sleep_ms(1000);
            }
        });
        sleep_ms(10);
        kill(pid, SIGKILL);
        if wait_timeout(pid, 5000).is_none() {
            return Err(String::from("a process with threads in FUTEX_WAIT survived SIGKILL"));
        }
    }
    Ok(())
}

/// Nanoseconds for 100 ppoll calls with a 1 µs timeout.
fn ppoll_batch() -> u64 {
    let ts = [0i64, 1000];
    let t = now_ns();
    for _ in 0..100 {
        sys(nr::PPOLL, &[0, 0, ts.as_ptr() as usize, 0, SIGSET_SIZE]);
    }
    now_ns() - t
}

static INTERRUPTED: AtomicU32 = AtomicU32::new(0);
static SLEEPER_TID: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_usr1(_: i32, _: usize, _: usize) {}

extern "C" fn sleep_long(_: usize) -> usize {
    SLEEPER_TID.store(gettid(), SeqCst);
    loop {
        let ts = [10i64, 0];
        if sys(nr::NANOSLEEP, &[ts.as_ptr() as usize, 0]) == EINTR {
            INTERRUPTED.fetch_add(1, SeqCst);
        }
    }
}

static TIMED_WORD: AtomicU32 = AtomicU32::new(0);

extern "C" fn futex_timeouts(n: usize) -> usize {
    let ts = [0i64, 100_000];
    for _ in 0..n {
        sys(
            nr::FUTEX,
            &[
                TIMED_WORD.as_ptr() as usize,
                FUTEX_WAIT | FUTEX_PRIVATE,
                0,
                ts.as_ptr() as usize,
            ],
        );
    }
    0
}

pub fn timeouts(cfg: &Cfg) -> Result<(), String> {
    // Warm up, then the reference cost.
    ppoll_batch();
    let first = ppoll_batch();
    let threads: [Thread; 4] = core::array::from_fn(|_| thread(futex_timeouts, 200 * cfg.scale as usize));
    let ts = [0i64, 1000];
    for _ in 0..1000 * cfg.scale {
        sys(nr::PPOLL, &[0, 0, ts.as_ptr() as usize, 0, SIGSET_SIZE]);
    }
    if threads.iter().any(|t| !t.join(30_000 * cfg.scale)) {
        return Err(String::from("futex waits with 100 µs timeouts did not all end"));
    }
    // Long sleeps cut short by signals, each leaving a timer behind if the
    // kernel forgets it.
    handle(SIGUSR1, on_usr1, 0);
    let s = thread(sleep_long, 0);
    let want = 200 * cfg.scale as u32;
    let end = now_ns() + 20_000_000_000 * cfg.scale;
    while INTERRUPTED.load(SeqCst) < want && now_ns() < end {
        let tid = SLEEPER_TID.load(SeqCst);
        if tid > 0 {
            sys(nr::TGKILL, &[getpid() as usize, tid as usize, SIGUSR1 as usize]);
        }
        sleep_ns(200_000);
    }
    let got = INTERRUPTED.load(SeqCst);
    let _ = s;
    if got < want {
        return Err(format!(
            "only {got} of {want} nanosleeps interrupted by SIGUSR1 in 20 s"
        ));
    }
    // Sleepers killed in their sleep.
    for _ in 0..10 * cfg.scale {
        let pid = spawn(|| {
            let ts = [100i64, 0];
            sys(nr::NANOSLEEP, &[ts.as_ptr() as usize, 0]);
            0
        });
        sleep_ms(1);
        kill(pid, SIGKILL);
        if wait_timeout(pid, 5000).is_none() {
            return Err(String::from("a sleeping child survived SIGKILL"));
        }
    }
    // Interval timers re-armed many times (not ITIMER_REAL: the watchdog).
    for i in 0..500 * cfg.scale {
        let it = [0i64, 0, 10 + (i % 7) as i64, 0];
        let which = if i % 2 == 0 { ITIMER_VIRTUAL } else { ITIMER_PROF };
        sys(nr::SETITIMER, &[which as usize, it.as_ptr() as usize, 0]);
    }
    let off = [0i64; 4];
    sys(nr::SETITIMER, &[ITIMER_VIRTUAL as usize, off.as_ptr() as usize, 0]);
    sys(nr::SETITIMER, &[ITIMER_PROF as usize, off.as_ptr() as usize, 0]);
    // A short sleep still takes its time, and no more.
    let t = now_ns();
    sleep_ms(20);
    let slept = (now_ns() - t) / 1_000_000;
    // The best of three batches: leaked timeouts would slow every batch,
    // a host that stalls QEMU for a moment slows one.
    let last = (0..3).map(|_| ppoll_batch()).min().unwrap_or(0);
    rt::println!(
        "adversary: timeouts: 100 ppolls of 1 µs: {} µs at first, {} µs after; a 20 ms sleep: {slept} ms",
        first / 1000,
        last / 1000
    );
    if !(20..2000).contains(&slept) {
        return Err(format!("a 20 ms nanosleep took {slept} ms"));
    }
    if last > 4 * first + 50_000_000 {
        return Err(format!(
            "100 short ppoll timeouts took {} ms at first, {} ms after thousands of timeouts",
            first / 1_000_000,
            last / 1_000_000
        ));
    }
    Ok(())
}

/// The `siginfo_t` sigqueue() sends: SI_QUEUE from `pid`, carrying `value`.
fn queue_info(sig: i32, pid: i32, value: u64) -> [u8; uapi::signal::SIGINFO_SIZE] {
    SigInfo {
        signo: sig as u32,
        code: SI_QUEUE,
        pid: pid as u32,
        value,
        ..SigInfo::default()
    }
    .to_bytes()
}

pub fn sigqueue_flood(cfg: &Cfg) -> Result<(), String> {
    let mut lim = [0u64; 2];
    sys(
        nr::PRLIMIT64,
        &[0, RLIMIT_SIGPENDING as usize, 0, lim.as_mut_ptr() as usize],
    );
    let cap = lim[0].min(40_000 * cfg.scale) + 100;
    let mask: u64 = (0xf << (SIGRTMIN + 2 - 1)) | (1 << (SIGUSR1 - 1));
    sigmask(SIG_BLOCK, mask);
    let pid = getpid();
    let mut queued = 0u64;
    let mut refused = false;
    // Whether the last signal sent went through kill(): at the limit, kill
    // still succeeds but loses the information (Linux's LOSE_INFO), so that
    // one may add no entry to drain.
    let mut last_by_kill = false;
    for i in 0..cap {
        let sig = SIGRTMIN + 2 + (i % 4) as i32;
        let info = queue_info(sig, pid, i);
        // kill queues a real-time signal each time, as sigqueue does;
        // every other one goes through rt_sigqueueinfo where it exists.
        let mut r = if i % 2 == 1 {
            sys(
                nr::RT_SIGQUEUEINFO,
                &[pid as usize, sig as usize, info.as_ptr() as usize],
            )
        } else {
            kill(pid, sig)
        };
        let mut by_kill = i % 2 == 0;
        if r == ENOSYS {
            if i == 1 {
                rt::println!("adversary: sigqueue-flood: note: rt_sigqueueinfo is ENOSYS; kill only");
            }
            r = kill(pid, sig);
            by_kill = true;
        }
        if r == EAGAIN {
            refused = true;
            break;
        }
        if r < 0 {
            return Err(format!("rt_sigqueueinfo: {r}"));
        }
        queued += 1;
        last_by_kill = by_kill;
    }
    for _ in 0..1000 {
        sys(nr::TGKILL, &[pid as usize, gettid() as usize, SIGUSR1 as usize]);
    }
    if !refused {
        // Linux's default limit is a few thousand (max_threads / 2).
        return Err(format!(
            "{queued} signals queued, none refused (RLIMIT_SIGPENDING {:#x})",
            lim[0]
        ));
    }
    // Drain them with rt_sigtimedwait: every one queued comes back.
    let ts = [0i64, 0];
    let mut drained = 0;
    loop {
        let r = sys(
            nr::RT_SIGTIMEDWAIT,
            &[&mask as *const u64 as usize, 0, ts.as_ptr() as usize, SIGSET_SIZE],
        );
        if r == ENOSYS {
            rt::println!("adversary: sigqueue-flood: note: rt_sigtimedwait is ENOSYS; not drained");
            return Ok(());
        }
        if r < 0 {
            break;
        }
        drained += 1;
    }
    if drained != queued + 1 && !(last_by_kill && drained == queued) {
        return Err(format!("{queued} queued (+1 SIGUSR1), {drained} dequeued"));
    }
    // Once more, and leave them pending at exit.
    for i in 0..queued {
        let sig = SIGRTMIN + 2 + (i % 4) as i32;
        let info = queue_info(sig, pid, 0);
        sys(
            nr::RT_SIGQUEUEINFO,
            &[pid as usize, sig as usize, info.as_ptr() as usize],
        );
        kill(pid, sig);
    }
    Ok(())
}
