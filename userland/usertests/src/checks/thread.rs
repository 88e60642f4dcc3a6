//! clone beyond fork: a thread (CLONE_VM | CLONE_THREAD | ... with
//! SETTLS, PARENT_SETTID and CHILD_CLEARTID), vfork, and futex.
//!
//! The thread functions here must not allocate: `rt`'s heap has no lock.

use core::arch::{asm, global_asm};
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering::SeqCst};

use super::signal::{hits, record, REC};
use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    clone_thread_tls_settid_cleartid,
    tgkill_reaches_the_thread,
    a_thread_clone_ignores_the_exit_signal_in_its_flags,
    vfork_shares_memory_parent_waits,
    futex_wait_value_mismatch_eagain,
    futex_wait_timeout_etimedout,
    futex_errors,
    futex_wait_wake_between_threads,
];

global_asm!(
    ".section .text.usertests_clone,\"ax\",@progbits",
    ".global usertests_clone",
    ".type usertests_clone,@function",
    // x0..x4: clone's arguments in arm64 order (flags, newsp, parent_tid,
    // tls, child_tid); x5: the child's function, x6: its argument. The
    // child calls x5(x6) on its new stack and exits with its result.
    "usertests_clone:",
    "    mov x10, x5",
    "    mov x11, x6",
    "    mov x8, #220",
    "    svc #0",
    "    cbnz x0, 1f",
    "    mov x0, x11",
    "    blr x10",
    "    mov x8, #93",
    "    svc #0",
    "1:  ret",
    ".size usertests_clone, . - usertests_clone",
    ".section .text.usertests_vfork_store,\"ax\",@progbits",
    ".global usertests_vfork_store",
    ".type usertests_vfork_store,@function",
    // vfork (CLONE_VM | CLONE_VFORK | SIGCHLD); the child sleeps for the
    // timespec at x2, stores x1 at x0 (shared memory) and exits with 7,
    // touching no stack: it runs on the parent's.
    "usertests_vfork_store:",
    "    mov x9, x0",
    "    mov x10, x1",
    "    mov x11, x2",
    "    mov x0, #0x4111",
    "    mov x1, xzr",
    "    mov x2, xzr",
    "    mov x3, xzr",
    "    mov x4, xzr",
    "    mov x8, #220",
    "    svc #0",
    "    cbnz x0, 1f",
    "    mov x0, x11",
    "    mov x1, xzr",
    "    mov x8, #101",
    "    svc #0",
    "    str x10, [x9]",
    "    mov x0, #7",
    "    mov x8, #93",
    "    svc #0",
    "1:  ret",
    ".size usertests_vfork_store, . - usertests_vfork_store",
);

unsafe extern "C" {
    /// clone with x0..x4; the child runs x5(x6) on its stack and exits
    /// with the result (the assembly above). Shared by the thread checks.
    pub(super) fn usertests_clone(
        flags: usize,
        stack: usize,
        ptid: *mut i32,
        tls: usize,
        ctid: *mut i32,
        f: extern "C" fn(usize) -> usize,
        arg: usize,
    ) -> isize;
    fn usertests_vfork_store(addr: *mut u64, value: u64, ts: *const Timespec) -> isize;
}

const THREAD_FLAGS: usize =
    CLONE_VM | CLONE_THREAD | CLONE_SIGHAND | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
const STACK: usize = 64 * 1024;
const TLS: usize = 0x7e57_0000_1234_5678;

/// What the thread saw.
static T_TID: AtomicI32 = AtomicI32::new(0);
static T_PID: AtomicI32 = AtomicI32::new(0);
static T_TLS: AtomicU64 = AtomicU64::new(0);
static T_SP: AtomicU64 = AtomicU64::new(0);
/// Set by the main thread to let the thread finish.
static GO: AtomicU32 = AtomicU32::new(0);
/// The thread's FUTEX_WAIT result (0 or errno).
static T_WAIT: AtomicI32 = AtomicI32::new(-1);

fn futex(word: &AtomicU32, op: usize, val: u32, timeout: Option<&Timespec>) -> Result<usize, Errno> {
    let t = timeout.map_or(0, |t| t as *const Timespec as usize);
    // SAFETY: word and the timeout are live.
    unsafe { raw(nr::FUTEX, &[word.as_ptr() as usize, op, val as usize, t, 0, 0]) }
}

/// A thread: records its ids, TLS and stack, writes `arg` into `*T_VALUE`.
extern "C" fn thread_records(arg: usize) -> usize {
    T_TID.store(gettid(), SeqCst);
    T_PID.store(getpid(), SeqCst);
    let (tls, sp): (u64, u64);
    // SAFETY: reads TPIDR_EL0 and sp.
    unsafe { asm!("mrs {t}, tpidr_el0", "mov {s}, sp", t = out(reg) tls, s = out(reg) sp) };
    T_TLS.store(tls, SeqCst);
    T_SP.store(sp, SeqCst);
    T_VALUE.store(arg as u64, SeqCst);
    0
}

static T_VALUE: AtomicU64 = AtomicU64::new(0);

/// A thread that waits on GO (FUTEX_WAIT while it is 0) and records the
/// result of its first wait.
extern "C" fn thread_waits(_: usize) -> usize {
    T_TID.store(gettid(), SeqCst);
    let mut first = true;
    while GO.load(SeqCst) == 0 {
        let r = futex(&GO, FUTEX_WAIT, 0, None);
        if first {
            T_WAIT.store(r.map_or_else(|e| e.0, |_| 0), SeqCst);
            first = false;
        }
    }
    0
}

/// Starts a thread running `f(arg)`; returns (clone result, parent_tid,
/// child_tid word, stack base).
pub(super) fn start_thread(
    f: extern "C" fn(usize) -> usize,
    arg: usize,
) -> Result<(isize, &'static AtomicI32, &'static AtomicI32, usize), crate::Fail> {
    start_thread_with(THREAD_FLAGS, f, arg)
}

/// [`start_thread`] with clone flags `flags` (THREAD_FLAGS and more).
fn start_thread_with(
    flags: usize,
    f: extern "C" fn(usize) -> usize,
    arg: usize,
) -> Result<(isize, &'static AtomicI32, &'static AtomicI32, usize), crate::Fail> {
    let stack = mmap_anon(STACK, PROT_READ | PROT_WRITE).ctx("mmap stack")?;
    // The tid words live in their own page so that they outlive this frame.
    let words = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap tid words")?;
    // SAFETY: a fresh page, zeroed, used only as these two atomics.
    let (ptid, ctid) = unsafe { (&*(words as *const AtomicI32), &*((words + 4) as *const AtomicI32)) };
    ctid.store(-1, SeqCst);
    // SAFETY: the new thread runs `f` on its own stack; it shares our memory
    // and touches only atomics.
    let r = unsafe { usertests_clone(flags, stack + STACK, ptid.as_ptr(), TLS, ctid.as_ptr(), f, arg) };
    Ok((r, ptid, ctid, stack))
}

/// Waits for the thread owning `ctid` to exit: the kernel clears the word
/// and wakes it (CLONE_CHILD_CLEARTID), as pthread_join waits.
pub(super) fn join(ctid: &AtomicI32) -> Outcome {
    let deadline = now_ns() + 5_000_000_000;
    loop {
        let v = ctid.load(SeqCst);
        if v == 0 {
            return Ok(());
        }
        ensure!(now_ns() < deadline, "child_tid still {v} after 5 s");
        let t = Timespec::ms(1000);
        // SAFETY: ctid is a live word.
        let r = unsafe {
            raw(
                nr::FUTEX,
                &[
                    ctid.as_ptr() as usize,
                    FUTEX_WAIT,
                    v as usize,
                    &t as *const Timespec as usize,
                ],
            )
        };
        match r {
            Ok(_) | Err(Errno::EAGAIN) | Err(Errno::EINTR) | Err(Errno::ETIMEDOUT) => {}
            Err(e) => return Err(crate::Fail(alloc::format!("FUTEX_WAIT on child_tid: {e:?}"))),
        }
    }
}

fn clone_thread_tls_settid_cleartid() -> Outcome {
    let (r, ptid, ctid, stack) = start_thread(thread_records, 0xfeed)?;
    ensure!(r > 0, "clone returned {r}");
    let tid = r as i32;
    join(ctid)?;
    check_eq!(ptid.load(SeqCst), tid, "CLONE_PARENT_SETTID wrote the tid");
    check_eq!(T_TID.load(SeqCst), tid, "the thread's gettid");
    ensure!(tid != getpid(), "the thread's tid equals the pid");
    check_eq!(T_PID.load(SeqCst), getpid(), "the thread's getpid is the group's");
    check_eq!(T_TLS.load(SeqCst), TLS as u64, "TPIDR_EL0 from CLONE_SETTLS");
    let sp = T_SP.load(SeqCst) as usize;
    ensure!(
        sp > stack && sp <= stack + STACK,
        "the thread's sp {sp:#x} is not on its stack"
    );
    check_eq!(T_VALUE.load(SeqCst), 0xfeed, "value the thread wrote");
    check_eq!(
        wait4(-1, WNOHANG | 0x4000_0000),
        Err(Errno::ECHILD),
        "a thread is not a child to wait for"
    );
    Ok(())
}

/// sys_clone takes any exit signal in the flags' low byte; a thread has
/// none (Linux sets it to -1): the clone works, and the thread's end
/// signals nobody and leaves nothing to wait for.
fn a_thread_clone_ignores_the_exit_signal_in_its_flags() -> Outcome {
    handle(SIGCHLD, record, 0, 0).ctx("install")?;
    let (r, _, ctid, _) = start_thread_with(THREAD_FLAGS | SIGCHLD as usize, thread_records, 1)?;
    ensure!(r > 0, "clone with CLONE_THREAD | SIGCHLD returned {r}");
    join(ctid)?;
    sleep_ms(20);
    let got = hits();
    disposition(SIGCHLD, SIG_DFL).ctx("SIGCHLD back to SIG_DFL")?;
    check_eq!(got, 0, "SIGCHLD for a thread's end");
    check_eq!(
        wait4(-1, WNOHANG | 0x4000_0000),
        Err(Errno::ECHILD),
        "a thread is not a child to wait for"
    );
    Ok(())
}

fn tgkill_reaches_the_thread() -> Outcome {
    handle(SIGUSR1, record, 0, 0).ctx("install")?;
    let (r, _, ctid, _) = start_thread(thread_waits, 0)?;
    ensure!(r > 0, "clone returned {r}");
    let tid = r as i32;
    // Let the thread block in FUTEX_WAIT first.
    sleep_ms(30);
    tgkill(getpid(), tid, SIGUSR1).ctx("tgkill")?;
    let deadline = now_ns() + 2_000_000_000;
    while hits() == 0 && now_ns() < deadline {
        sleep_ms(1);
    }
    GO.store(1, SeqCst);
    let _ = futex(&GO, FUTEX_WAKE, 1, None);
    join(ctid)?;
    check_eq!(hits(), 1, "handler calls");
    check_eq!(REC.code.load(SeqCst), SI_TKILL, "si_code");
    // The handler ran on the thread, whose wait was interrupted.
    check_eq!(T_WAIT.load(SeqCst), Errno::EINTR.0, "the thread's FUTEX_WAIT result");
    Ok(())
}

fn vfork_shares_memory_parent_waits() -> Outcome {
    let mut word = 0u64;
    let ts = Timespec::ms(30);
    let t0 = now_ns();
    // SAFETY: the child writes only `word` and exits; the parent is
    // suspended until then.
    let pid = unsafe { usertests_vfork_store(&mut word, 0xabcd, &ts) };
    let took = now_ns() - t0;
    ensure!(pid > 0, "vfork returned {pid}");
    // SAFETY: word is ours; the child wrote it through the shared memory.
    check_eq!(
        unsafe { core::ptr::read_volatile(&word) },
        0xabcd,
        "the child's store is visible (CLONE_VM), already on return (CLONE_VFORK)"
    );
    ensure!(
        took >= 25_000_000,
        "the parent resumed after {took} ns, before the child's 30 ms sleep ended"
    );
    check_eq!(wait4(pid as i32, 0), Ok((pid as i32, 7 << 8)), "wait4");
    Ok(())
}

fn futex_wait_value_mismatch_eagain() -> Outcome {
    let w = AtomicU32::new(1);
    check_eq!(
        futex(&w, FUTEX_WAIT, 0, None),
        Err(Errno::EAGAIN),
        "FUTEX_WAIT expecting 0 on 1"
    );
    check_eq!(
        futex(&w, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2, None),
        Err(Errno::EAGAIN),
        "private FUTEX_WAIT expecting 2 on 1"
    );
    check_eq!(futex(&w, FUTEX_WAKE, 1, None), Ok(0), "FUTEX_WAKE with no waiters");
    check_eq!(
        futex(&w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, i32::MAX as u32, None),
        Ok(0),
        "private FUTEX_WAKE with no waiters"
    );
    Ok(())
}

fn futex_wait_timeout_etimedout() -> Outcome {
    let w = AtomicU32::new(0);
    let t0 = now_ns();
    check_eq!(
        futex(&w, FUTEX_WAIT, 0, Some(&Timespec::ms(20))),
        Err(Errno::ETIMEDOUT),
        "FUTEX_WAIT with 20 ms"
    );
    let took = now_ns() - t0;
    ensure!(took >= 20_000_000, "timed out after {took} ns, before 20 ms");
    check_eq!(
        futex(&w, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, Some(&Timespec::ms(5))),
        Err(Errno::ETIMEDOUT),
        "private FUTEX_WAIT with 5 ms"
    );
    Ok(())
}

fn futex_errors() -> Outcome {
    let w = AtomicU32::new(0);
    check_eq!(futex(&w, 99, 0, None), Err(Errno::ENOSYS), "futex op 99");
    let bad = Timespec {
        sec: 0,
        nsec: 1_000_000_000,
    };
    check_eq!(
        futex(&w, FUTEX_WAIT, 0, Some(&bad)),
        Err(Errno::EINVAL),
        "timeout tv_nsec = 1e9"
    );
    // SAFETY: the word pointer is unaligned / not mapped; the kernel must
    // refuse it.
    let r = unsafe { raw(nr::FUTEX, &[w.as_ptr() as usize + 1, FUTEX_WAIT, 0, 0]) };
    check_eq!(r, Err(Errno::EINVAL), "unaligned futex word");
    // SAFETY: as above.
    let r = unsafe { raw(nr::FUTEX, &[BAD_KERNEL, FUTEX_WAIT, 0, 0]) };
    check_eq!(r, Err(Errno::EFAULT), "futex word in the kernel half");
    let page = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    munmap(page, PAGE).ctx("munmap")?;
    // SAFETY: as above.
    let r = unsafe { raw(nr::FUTEX, &[page, FUTEX_WAIT, 0, 0]) };
    check_eq!(r, Err(Errno::EFAULT), "futex word in an unmapped page");
    Ok(())
}

fn futex_wait_wake_between_threads() -> Outcome {
    let (r, _, ctid, _) = start_thread(thread_waits, 0)?;
    ensure!(r > 0, "clone returned {r}");
    // Give the thread time to block, then wake it.
    sleep_ms(30);
    GO.store(1, SeqCst);
    let woken = futex(&GO, FUTEX_WAKE, 1, None).ctx("FUTEX_WAKE")?;
    join(ctid)?;
    let waited = T_WAIT.load(SeqCst);
    // Either the thread was asleep and this wake ended its wait, or it was
    // late and saw GO already changed.
    let ok = (woken == 1 && waited == 0) || (woken == 0 && waited == Errno::EAGAIN.0);
    ensure!(ok, "FUTEX_WAKE woke {woken}, the thread's FUTEX_WAIT gave {waited}");
    ensure!(
        woken == 1,
        "the thread was not waiting after 30 ms (wait gave {waited})"
    );
    Ok(())
}
