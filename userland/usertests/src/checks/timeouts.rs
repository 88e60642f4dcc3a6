//! Timed waits that end early leave nothing behind: the task, its kernel
//! stack and its timer are released when the wait ends by its event or a
//! signal, not when the timeout would have passed; and pending timeouts do
//! not make the tick, hence everything else, slower.
//!
//! The thread functions here must not allocate: `rt`'s heap has no lock.

use core::sync::atomic::{AtomicI32, AtomicU32, Ordering::SeqCst};

use crate::sys::*;
use crate::{checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    timed_waits_ended_early_release_their_memory,
    pending_timeouts_do_not_slow_getpid,
];

use super::thread::usertests_clone;

/// A timeout no check waits for: an hour.
const LONG: Timespec = Timespec { sec: 3600, nsec: 0 };
/// Waits of each kind per round.
const CHILDREN: usize = 150;
const THREADS: usize = 150;
/// Rounds measured.
const ROUNDS: usize = 3;
const THREAD_STACK: usize = 16 * 1024;
const THREAD_FLAGS: usize = CLONE_VM | CLONE_THREAD | CLONE_SIGHAND | CLONE_CHILD_CLEARTID;

/// Children that each sleep in ppoll with a long timeout until the pipe's
/// last writer closes (the event ends the wait), then exit.
fn ppoll_children_woken_by_hangup() -> Outcome {
    let [rd, wr] = pipe().ctx("pipe")?;
    let mut pids = alloc::vec::Vec::new();
    for _ in 0..CHILDREN {
        pids.push(
            spawn(|| {
                close(wr);
                let mut pfd = [PollFd {
                    fd: rd,
                    events: POLLIN,
                    revents: 0,
                }];
                match ppoll(&mut pfd, Some(&LONG)) {
                    Ok(1) => 0,
                    _ => 1,
                }
            })
            .ctx("fork")?,
        );
    }
    close(rd);
    close(wr);
    for pid in pids {
        ensure!(wait_status(pid) == Ok(0), "a ppoll child did not see the hangup");
    }
    Ok(())
}

/// Children that each sleep in nanosleep with a long timeout until SIGKILL
/// ends the wait.
fn nanosleep_children_killed() -> Outcome {
    let [rd, wr] = pipe().ctx("pipe")?;
    let mut pids = alloc::vec::Vec::new();
    for _ in 0..CHILDREN {
        pids.push(
            spawn(|| {
                let _ = write(wr, b"s");
                let _ = nanosleep(&LONG);
                2
            })
            .ctx("fork")?,
        );
    }
    close(wr);
    // Every child is on its way into nanosleep; give the last ones time to
    // get there.
    let mut byte = [0u8; 1];
    for _ in 0..CHILDREN {
        ensure!(read(rd, &mut byte) == Ok(1), "a nanosleep child did not start");
    }
    close(rd);
    sleep_ms(20);
    for &pid in &pids {
        kill(pid, SIGKILL).ctx("kill")?;
    }
    for pid in pids {
        let st = wait_status(pid).ctx("wait4")?;
        ensure!(st & 0x7f == SIGKILL, "a nanosleep child ended with status {st:#x}");
    }
    Ok(())
}

static WORD: AtomicU32 = AtomicU32::new(0);
static STARTED: AtomicU32 = AtomicU32::new(0);

/// A thread: FUTEX_WAIT on WORD with a long timeout until it changes.
extern "C" fn futex_waiter(_: usize) -> usize {
    STARTED.fetch_add(1, SeqCst);
    while WORD.load(SeqCst) == 0 {
        // SAFETY: WORD and LONG are statics.
        let _ = unsafe {
            raw(
                nr::FUTEX,
                &[WORD.as_ptr() as usize, FUTEX_WAIT, 0, &LONG as *const Timespec as usize],
            )
        };
    }
    0
}

/// Threads that each sleep in FUTEX_WAIT with a long timeout until
/// FUTEX_WAKE ends the wait, then exit.
fn futex_threads_woken() -> Outcome {
    WORD.store(0, SeqCst);
    STARTED.store(0, SeqCst);
    let stacks = mmap_anon(THREADS * THREAD_STACK, PROT_READ | PROT_WRITE).ctx("mmap stacks")?;
    let ctids = mmap_anon(THREADS * 4, PROT_READ | PROT_WRITE).ctx("mmap tid words")?;
    let ctid = |i: usize| -> &'static AtomicI32 {
        // SAFETY: a fresh mapping, used only as these atomics, never unmapped.
        unsafe { &*((ctids + 4 * i) as *const AtomicI32) }
    };
    for i in 0..THREADS {
        ctid(i).store(-1, SeqCst);
        // SAFETY: the thread runs futex_waiter on its own stack and touches
        // only statics.
        let r = unsafe {
            usertests_clone(
                THREAD_FLAGS,
                stacks + (i + 1) * THREAD_STACK,
                core::ptr::null_mut(),
                0,
                ctid(i).as_ptr(),
                futex_waiter,
                0,
            )
        };
        ensure!(r > 0, "clone returned {r}");
    }
    let deadline = now_ns() + 5_000_000_000;
    while STARTED.load(SeqCst) < THREADS as u32 {
        ensure!(now_ns() < deadline, "threads did not start");
        sleep_ms(1);
    }
    sleep_ms(20);
    WORD.store(1, SeqCst);
    // SAFETY: WORD is a static.
    unsafe { raw(nr::FUTEX, &[WORD.as_ptr() as usize, FUTEX_WAKE, i32::MAX as usize]) }.ctx("FUTEX_WAKE")?;
    for i in 0..THREADS {
        while ctid(i).load(SeqCst) != 0 {
            ensure!(now_ns() < deadline, "thread {i} did not exit");
            sleep_ms(1);
        }
    }
    Ok(())
}

fn one_round() -> Outcome {
    ppoll_children_woken_by_hangup()?;
    nanosleep_children_killed()?;
    futex_threads_woken()
}

fn timed_waits_ended_early_release_their_memory() -> Outcome {
    // The first round lets caches and allocators reach their working size.
    one_round()?;
    sleep_ms(100);
    // KernelStack, not MemFree: Linux's MemFree also moves with page and
    // slab caches (a loaded host's reflinux lost 17 MB of it over these
    // rounds and kept it), while the stacks alive are exactly what a task
    // kept until its timeout would hold.
    let before = super::meminfo_kib("KernelStack")?;
    for _ in 0..ROUNDS {
        one_round()?;
    }
    // Linux releases stacks as dead tasks are switched out and reaped,
    // which a loaded machine can hold up for a while: wait up to 15 s. A
    // task kept until its timeout never gives its stack back.
    let slack = 2048;
    let mut after = super::meminfo_kib("KernelStack")?;
    for _ in 0..150 {
        if after <= before + slack {
            break;
        }
        sleep_ms(100);
        after = after.min(super::meminfo_kib("KernelStack")?);
    }
    // A stack is 32 KiB here and 16 KiB on Linux: 1,350 tasks kept would
    // hold 21 MiB or more, the slack is 2 MiB.
    ensure!(
        after <= before + slack,
        "KernelStack grew from {before} kB to {after} kB over {} timed waits ended early",
        ROUNDS * (2 * CHILDREN + THREADS)
    );
    Ok(())
}

/// Nanoseconds for `n` getpid calls.
fn time_getpid(n: usize) -> i64 {
    let t0 = now_ns();
    for _ in 0..n {
        getpid();
    }
    now_ns() - t0
}

fn pending_timeouts_do_not_slow_getpid() -> Outcome {
    // Best of five on each side, and a bound far above noise: a pending
    // timeout that each call or tick scanned would cost tens of times
    // more with 40,000 of them.
    let base = (0..5).map(|_| time_getpid(20_000)).min().unwrap_or(i64::MAX);
    // Each ppoll on a ready pipe returns at once; a timeout it armed and
    // never cancelled would stay pending for the hour.
    let [rd, wr] = pipe().ctx("pipe")?;
    write(wr, b"x").ctx("write")?;
    for _ in 0..40_000 {
        let mut pfd = [PollFd {
            fd: rd,
            events: POLLIN,
            revents: 0,
        }];
        ensure!(ppoll(&mut pfd, Some(&LONG)) == Ok(1), "ppoll on a ready pipe");
    }
    // A busy host stalls this CPU for a while now and then; a pending
    // timeout stays for the hour. So a slow sample is taken again, up to
    // ten rounds of five: the cost a scan would add shows in every one.
    let bound = base * 5 + 5_000_000;
    let mut loaded = i64::MAX;
    for _ in 0..10 {
        loaded = loaded.min((0..5).map(|_| time_getpid(20_000)).min().unwrap_or(i64::MAX));
        if loaded <= bound {
            break;
        }
    }
    close(rd);
    close(wr);
    ensure!(
        loaded <= bound,
        "20000 getpid took {base} ns, {loaded} ns after 40000 ppoll with a long timeout"
    );
    Ok(())
}
