//! Memory-management and futex robustness: range operations that cost what
//! is mapped rather than the size of the range, futex waits that leave
//! nothing behind, and Linux's argument checks on both.

use alloc::format;
use core::sync::atomic::{AtomicI32, AtomicU32, Ordering::SeqCst};

use super::thread::{join, start_thread};

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    huge_untouched_mapping_munmap_mprotect_fast,
    futex_wait_on_distinct_addresses_leaks_nothing,
    futex_wake_unaligned_einval,
    mmap_checks_fd_before_map_type,
    mmap_fixed_below_mmap_min_addr_as_root,
    futex_bitset_and_requeue_errors,
    futex_wake_bitset_wakes_only_matching_waiters,
    futex_cmp_requeue_wakes_one_moves_the_other,
    futex_wake_of_zero_or_negative_count_wakes_one,
    top_user_page_is_no_data_for_system_calls,
    futex_on_kernel_addresses_is_efault,
    futex_wake_op_applies_each_operation_and_its_errors,
    futex_wake_op_wakes_the_second_word_when_the_comparison_holds,
];

const TIB: usize = 1 << 40;

/// Runs `f` and returns its result with the time it took in milliseconds.
fn timed<T>(f: impl FnOnce() -> T) -> (T, i64) {
    let t0 = now_ns();
    let r = f();
    (r, (now_ns() - t0) / 1_000_000)
}

/// mmap, mprotect and munmap of one PROT_NONE mapping of `len` bytes that
/// is never touched, each within `limit_ms`.
fn huge_round(len: usize, limit_ms: i64) -> Outcome {
    let a = mmap_anon(len, PROT_NONE).map_err(|e| crate::Fail(format!("mmap {len:#x} PROT_NONE: {e:?}")))?;
    let (r, ms) = timed(|| mprotect(a, len, PROT_READ));
    check_eq!(r, Ok(0), "mprotect of the whole mapping");
    ensure!(ms < limit_ms, "mprotect of {len:#x} untouched bytes took {ms} ms");
    let (r, ms) = timed(|| mprotect(a, len, PROT_NONE));
    check_eq!(r, Ok(0), "mprotect back to PROT_NONE");
    ensure!(ms < limit_ms, "mprotect of {len:#x} untouched bytes took {ms} ms");
    let (r, ms) = timed(|| munmap(a, len));
    check_eq!(r, Ok(0), "munmap of the whole mapping");
    ensure!(ms < limit_ms, "munmap of {len:#x} untouched bytes took {ms} ms");
    Ok(())
}

fn huge_untouched_mapping_munmap_mprotect_fast() -> Outcome {
    // 1 TiB first: page-by-page work over it takes seconds, so a kernel that
    // iterates over empty ranges fails here instead of hanging on 2^47.
    huge_round(TIB, 1000)?;
    huge_round(1 << 47, 1000)
}

fn futex_raw(addr: usize, op: usize, val: usize) -> Result<usize, Errno> {
    // SAFETY: futex only reads the word at addr (or fails with EFAULT).
    unsafe { raw(nr::FUTEX, &[addr, op, val, 0, 0, 0]) }
}

fn futex_wait_on_distinct_addresses_leaks_nothing() -> Outcome {
    const WORDS: usize = 100_000;
    const FAULTING: usize = 10_000;
    let len = WORDS * 4;
    let a = mmap_anon(len, PROT_READ | PROT_WRITE).ctx("mmap")?;
    let none = mmap_anon(FAULTING * 4, PROT_NONE).ctx("mmap PROT_NONE")?;
    // Fault the pages in before measuring.
    for off in (0..len).step_by(PAGE) {
        // SAFETY: inside the mapping.
        unsafe { store(a + off, 0) };
    }
    let before = super::meminfo_kib("MemFree")?;
    for i in 0..WORDS {
        // The word is 0: expecting 1 returns EAGAIN without sleeping.
        let r = futex_raw(a + 4 * i, FUTEX_WAIT, 1);
        if r != Err(Errno::EAGAIN) {
            return Err(crate::Fail(format!("FUTEX_WAIT #{i}: {r:?}, want EAGAIN")));
        }
    }
    for i in 0..FAULTING {
        let r = futex_raw(none + 4 * i, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0);
        if r != Err(Errno::EFAULT) {
            return Err(crate::Fail(format!("FUTEX_WAIT on PROT_NONE #{i}: {r:?}, want EFAULT")));
        }
    }
    let after = super::meminfo_kib("MemFree")?;
    munmap(a, len).ctx("munmap")?;
    munmap(none, FAULTING * 4).ctx("munmap PROT_NONE")?;
    // 170 bytes per address would be about 18 MiB here.
    ensure!(
        after + 4096 >= before,
        "MemFree fell from {before} kB to {after} kB over {} failed FUTEX_WAITs",
        WORDS + FAULTING
    );
    Ok(())
}

fn futex_wake_unaligned_einval() -> Outcome {
    let a = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    check_eq!(futex_raw(a + 2, FUTEX_WAKE, 1), Err(Errno::EINVAL), "FUTEX_WAKE at +2");
    check_eq!(
        futex_raw(a + 1, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1),
        Err(Errno::EINVAL),
        "private FUTEX_WAKE at +1"
    );
    check_eq!(futex_raw(a + 2, FUTEX_WAIT, 0), Err(Errno::EINVAL), "FUTEX_WAIT at +2");
    check_eq!(futex_raw(a + 4, FUTEX_WAKE, 1), Ok(0), "FUTEX_WAKE aligned, no waiter");
    munmap(a, PAGE).ctx("munmap")?;
    Ok(())
}

fn mmap_checks_fd_before_map_type() -> Outcome {
    // ksys_mmap_pgoff looks the fd up before do_mmap checks the map type.
    check_eq!(
        call(nr::MMAP, &[0, PAGE, PROT_READ, 0, usize::MAX, 0]),
        Err(Errno::EBADF),
        "flags 0 with fd -1"
    );
    check_eq!(
        call(nr::MMAP, &[0, PAGE, PROT_READ, MAP_FIXED, usize::MAX, 0]),
        Err(Errno::EBADF),
        "MAP_FIXED alone with fd -1"
    );
    check_eq!(
        call(nr::MMAP, &[0, PAGE, PROT_READ, MAP_ANONYMOUS, usize::MAX, 0]),
        Err(Errno::EINVAL),
        "MAP_ANONYMOUS without a map type"
    );
    Ok(())
}

fn mmap_fixed_below_mmap_min_addr_as_root() -> Outcome {
    // Root has CAP_SYS_RAWIO, which lifts vm.mmap_min_addr.
    let anon = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
    let low = 0x4000;
    check_eq!(
        call(nr::MMAP, &[low, PAGE, PROT_READ | PROT_WRITE, anon, usize::MAX, 0]),
        Ok(low),
        "MAP_FIXED at 16 KiB as root"
    );
    // SAFETY: just mapped.
    unsafe { store(low, 5) };
    // SAFETY: as above.
    check_eq!(unsafe { load(low) }, 5, "the low page keeps a write");
    check_eq!(munmap(low, PAGE), Ok(0), "munmap of the low page");
    Ok(())
}

const FUTEX_REQUEUE: usize = 3;
const FUTEX_CMP_REQUEUE: usize = 4;
const FUTEX_WAIT_BITSET: usize = 9;
const FUTEX_WAKE_BITSET: usize = 10;
const FUTEX_CLOCK_REALTIME: usize = 256;

/// futex(2) with all six arguments.
fn futex6(addr: usize, op: usize, val: usize, utime: usize, addr2: usize, val3: u32) -> Result<usize, Errno> {
    // SAFETY: futex reads (or atomically updates) only the words given, and
    // the timespec when the operation takes one.
    unsafe { raw(nr::FUTEX, &[addr, op, val, utime, addr2, val3 as usize]) }
}

fn futex_bitset_and_requeue_errors() -> Outcome {
    let a = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    let (w1, w2) = (a, a + 64);
    let past = Timespec { sec: 0, nsec: 0 };
    let past_p = &past as *const Timespec as usize;
    let bad = Timespec {
        sec: 0,
        nsec: 1_000_000_000,
    };
    let bad_p = &bad as *const Timespec as usize;
    let p = FUTEX_PRIVATE_FLAG;
    check_eq!(
        futex6(w1, FUTEX_WAIT_BITSET, 0, past_p, 0, 0),
        Err(Errno::EINVAL),
        "FUTEX_WAIT_BITSET with bitset 0"
    );
    check_eq!(
        futex6(w1, FUTEX_WAKE_BITSET, 1, 0, 0, 0),
        Err(Errno::EINVAL),
        "FUTEX_WAKE_BITSET with bitset 0"
    );
    check_eq!(
        futex6(w1, FUTEX_WAIT_BITSET | p, 1, past_p, 0, !0),
        Err(Errno::EAGAIN),
        "FUTEX_WAIT_BITSET on a changed word"
    );
    check_eq!(
        futex6(w1, FUTEX_WAIT_BITSET | p, 0, past_p, 0, !0),
        Err(Errno::ETIMEDOUT),
        "FUTEX_WAIT_BITSET until an absolute time already past (CLOCK_MONOTONIC)"
    );
    check_eq!(
        futex6(w1, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 0, past_p, 0, 1),
        Err(Errno::ETIMEDOUT),
        "FUTEX_WAIT_BITSET until an absolute time already past (CLOCK_REALTIME)"
    );
    check_eq!(
        futex6(w1, FUTEX_WAIT_BITSET, 0, bad_p, 0, 1),
        Err(Errno::EINVAL),
        "FUTEX_WAIT_BITSET with tv_nsec out of range"
    );
    check_eq!(
        futex6(w1, FUTEX_WAKE_BITSET | p, 5, 0, 0, 0x10),
        Ok(0),
        "FUTEX_WAKE_BITSET with no waiters"
    );
    check_eq!(
        futex6(w1 + 2, FUTEX_WAKE_BITSET, 5, 0, 0, 1),
        Err(Errno::EINVAL),
        "FUTEX_WAKE_BITSET unaligned"
    );
    check_eq!(
        futex6(w1, FUTEX_WAIT | FUTEX_CLOCK_REALTIME, 0, past_p, 0, 0),
        Err(Errno::ENOSYS),
        "FUTEX_WAIT with FUTEX_CLOCK_REALTIME"
    );
    check_eq!(
        futex6(w1, FUTEX_WAKE | FUTEX_CLOCK_REALTIME, 1, 0, 0, 0),
        Err(Errno::ENOSYS),
        "FUTEX_WAKE with FUTEX_CLOCK_REALTIME"
    );
    check_eq!(
        futex6(w1, FUTEX_CMP_REQUEUE | p, 1, 1, w2, 7),
        Err(Errno::EAGAIN),
        "FUTEX_CMP_REQUEUE when the word is not val3"
    );
    check_eq!(
        futex6(w1, FUTEX_CMP_REQUEUE, 1, 1, w2, 0),
        Ok(0),
        "FUTEX_CMP_REQUEUE with no waiters"
    );
    check_eq!(
        futex6(w1, FUTEX_REQUEUE, 1, 1, w1, 0),
        Ok(0),
        "FUTEX_REQUEUE to itself with no waiters"
    );
    check_eq!(
        futex6(w1, FUTEX_REQUEUE, usize::MAX, 1, w2, 0),
        Err(Errno::EINVAL),
        "FUTEX_REQUEUE with nr_wake -1"
    );
    check_eq!(
        futex6(w1, FUTEX_CMP_REQUEUE, 1, u32::MAX as usize, w2, 0),
        Err(Errno::EINVAL),
        "FUTEX_CMP_REQUEUE with nr_requeue -1"
    );
    check_eq!(
        futex6(w1, FUTEX_REQUEUE, 1, 1, w2 + 1, 0),
        Err(Errno::EINVAL),
        "FUTEX_REQUEUE to an unaligned word"
    );
    munmap(a, PAGE).ctx("munmap")?;
    Ok(())
}

/// The word the waiter threads sleep on, and a second one for requeue.
static WORD: AtomicU32 = AtomicU32::new(0);
static WORD2: AtomicU32 = AtomicU32::new(0);
/// Per waiter thread: -1 while waiting, then 0 or the errno.
static RESULT: [AtomicI32; 2] = [AtomicI32::new(-1), AtomicI32::new(-1)];
static STARTED: AtomicU32 = AtomicU32::new(0);

/// Waits on WORD with bitset `1 << slot` and records the result.
extern "C" fn bitset_waiter(slot: usize) -> usize {
    STARTED.fetch_add(1, SeqCst);
    let r = futex6(
        WORD.as_ptr() as usize,
        FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
        0,
        0,
        0,
        1 << slot,
    );
    RESULT[slot].store(r.map_or_else(|e| e.0, |_| 0), SeqCst);
    0
}

/// FUTEX_WAIT on WORD; records the result.
extern "C" fn plain_waiter(slot: usize) -> usize {
    STARTED.fetch_add(1, SeqCst);
    let r = futex6(WORD.as_ptr() as usize, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, 0, 0, 0);
    RESULT[slot].store(r.map_or_else(|e| e.0, |_| 0), SeqCst);
    0
}

/// Starts two threads running `f(0)` and `f(1)`, and lets them block.
fn two_waiters(f: extern "C" fn(usize) -> usize) -> Result<[&'static AtomicI32; 2], crate::Fail> {
    WORD.store(0, SeqCst);
    WORD2.store(0, SeqCst);
    STARTED.store(0, SeqCst);
    for r in &RESULT {
        r.store(-1, SeqCst);
    }
    let (r0, _, c0, _) = start_thread(f, 0)?;
    let (r1, _, c1, _) = start_thread(f, 1)?;
    ensure!(r0 > 0 && r1 > 0, "clone returned {r0}, {r1}");
    let deadline = now_ns() + 2_000_000_000;
    while STARTED.load(SeqCst) < 2 && now_ns() < deadline {
        sleep_ms(1);
    }
    // From "started" to asleep in the kernel is a few instructions.
    sleep_ms(100);
    Ok([c0, c1])
}

/// Waits up to 2 s for RESULT[slot] to be set.
fn result_of(slot: usize) -> i32 {
    let deadline = now_ns() + 2_000_000_000;
    while RESULT[slot].load(SeqCst) == -1 && now_ns() < deadline {
        sleep_ms(1);
    }
    RESULT[slot].load(SeqCst)
}

fn futex_wake_bitset_wakes_only_matching_waiters() -> Outcome {
    let ctids = two_waiters(bitset_waiter)?;
    let w = WORD.as_ptr() as usize;
    check_eq!(
        futex6(w, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, i32::MAX as usize, 0, 0, 0b10),
        Ok(1),
        "FUTEX_WAKE_BITSET 0b10 of waiters with bitsets 0b01 and 0b10"
    );
    check_eq!(result_of(1), 0, "the waiter with bitset 0b10");
    check_eq!(RESULT[0].load(SeqCst), -1, "the waiter with bitset 0b01 still waits");
    check_eq!(
        futex6(w, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, 1, 0, 0, !0),
        Ok(1),
        "FUTEX_WAKE_BITSET matching any"
    );
    check_eq!(result_of(0), 0, "the waiter with bitset 0b01");
    join(ctids[0])?;
    join(ctids[1])
}

fn futex_cmp_requeue_wakes_one_moves_the_other() -> Outcome {
    let ctids = two_waiters(plain_waiter)?;
    let (w, w2) = (WORD.as_ptr() as usize, WORD2.as_ptr() as usize);
    check_eq!(
        futex6(w, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 1, i32::MAX as usize, w2, 0),
        Ok(2),
        "FUTEX_CMP_REQUEUE waking 1 and moving the rest (woken + moved)"
    );
    let deadline = now_ns() + 2_000_000_000;
    while RESULT.iter().all(|r| r.load(SeqCst) == -1) && now_ns() < deadline {
        sleep_ms(1);
    }
    let first = if RESULT[0].load(SeqCst) != -1 { 0 } else { 1 };
    check_eq!(RESULT[first].load(SeqCst), 0, "the woken waiter");
    let other = 1 - first;
    check_eq!(RESULT[other].load(SeqCst), -1, "the moved waiter still waits");
    check_eq!(
        futex6(w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, i32::MAX as usize, 0, 0, 0),
        Ok(0),
        "FUTEX_WAKE on the first word finds no one"
    );
    check_eq!(
        futex6(w2, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0, 0, 0),
        Ok(1),
        "FUTEX_WAKE on the second word wakes the moved waiter"
    );
    check_eq!(result_of(other), 0, "the moved waiter");
    join(ctids[0])?;
    join(ctids[1])
}

fn futex_wake_of_zero_or_negative_count_wakes_one() -> Outcome {
    let ctids = two_waiters(plain_waiter)?;
    let w = WORD.as_ptr() as usize;
    check_eq!(
        futex6(w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 0, 0, 0, 0),
        Ok(1),
        "FUTEX_WAKE of 0 waiters with two waiting"
    );
    check_eq!(
        futex6(w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, u32::MAX as usize, 0, 0, 0),
        Ok(1),
        "FUTEX_WAKE of -1 waiters with one waiting"
    );
    join(ctids[0])?;
    join(ctids[1])
}

/// The last page below 2^48: Linux maps nothing there (its signal return
/// trampoline is in the vDSO); where a kernel keeps an execute-only
/// trampoline, a system call still cannot use it as data.
fn top_user_page_is_no_data_for_system_calls() -> Outcome {
    const TOP_PAGE: usize = 0xffff_ffff_f000;
    check_eq!(
        futex_raw(TOP_PAGE, FUTEX_WAIT, 0),
        Err(Errno::EFAULT),
        "FUTEX_WAIT there"
    );
    check_eq!(
        call(nr::WRITE, &[1, TOP_PAGE, 4]),
        Err(Errno::EFAULT),
        "write(2) from there"
    );
    Ok(())
}

/// get_futex_key's access_ok: a word outside user space is EFAULT for every
/// operation, a wake that would find no waiter included.
fn futex_on_kernel_addresses_is_efault() -> Outcome {
    for addr in [0xffff_0000_0000_0000usize, 0xffff_ffff_ffff_f000, 1 << 48] {
        check_eq!(
            futex_raw(addr, FUTEX_WAKE, 1),
            Err(Errno::EFAULT),
            "FUTEX_WAKE at {addr:#x}"
        );
        check_eq!(
            futex_raw(addr, FUTEX_WAIT, 0),
            Err(Errno::EFAULT),
            "FUTEX_WAIT at {addr:#x}"
        );
    }
    Ok(())
}

const FUTEX_WAKE_OP: usize = 5;

/// FUTEX_OP(op, oparg, cmp, cmparg) as Linux's uapi macro encodes it.
const fn futex_op(op: u32, oparg: u32, cmp: u32, cmparg: u32) -> u32 {
    ((op & 0xf) << 28) | ((cmp & 0xf) << 24) | ((oparg & 0xfff) << 12) | (cmparg & 0xfff)
}

fn futex_wake_op_applies_each_operation_and_its_errors() -> Outcome {
    let a = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    let (w1, w2) = (a, a + 64);
    let word = |v: Option<u32>| {
        let p = w2 as *mut u32;
        // SAFETY: w2 is in the page mapped above, aligned.
        unsafe {
            if let Some(v) = v {
                p.write_volatile(v);
            }
            p.read_volatile()
        }
    };
    let wake_op = |op: u32| futex6(w1, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 1, 1, w2, op);
    word(Some(5));
    // SET, ADD, OR, ANDN, XOR; 8 in the op is FUTEX_OP_OPARG_SHIFT.
    for (op, oparg, want) in [
        (1, 3, 8),
        (2 | 8, 4, 24),
        (3, 8, 16),
        (4, 0xff, 0xef),
        (0, 7, 7),
        (1, 0xfff, 6),
    ] {
        check_eq!(
            wake_op(futex_op(op, oparg, 0, 0)),
            Ok(0),
            "op {op} oparg {oparg}: no waiter"
        );
        check_eq!(word(None), want, "the word after op {op} oparg {oparg}");
    }
    check_eq!(wake_op(futex_op(5, 1, 0, 0)), Err(Errno::ENOSYS), "unknown operation");
    check_eq!(word(None), 6, "the word after an unknown operation");
    // The comparison is checked after the operation has been done.
    check_eq!(wake_op(futex_op(1, 1, 6, 0)), Err(Errno::ENOSYS), "unknown comparison");
    check_eq!(word(None), 7, "the word after an unknown comparison");
    check_eq!(
        futex6(w1, FUTEX_WAKE_OP, 1, 1, w2 + 2, futex_op(1, 1, 0, 0)),
        Err(Errno::EINVAL),
        "unaligned second word"
    );
    let ro = mmap_anon(PAGE, PROT_READ).ctx("mmap read-only")?;
    let none = mmap_anon(PAGE, PROT_NONE).ctx("mmap PROT_NONE")?;
    for (what, at) in [("read-only", ro), ("PROT_NONE", none), ("top page", 0xffff_ffff_f000)] {
        check_eq!(
            futex6(w1, FUTEX_WAKE_OP, 1, 1, at, futex_op(1, 1, 0, 0)),
            Err(Errno::EFAULT),
            "second word in a {what} page"
        );
    }
    munmap(ro, PAGE).ctx("munmap")?;
    munmap(none, PAGE).ctx("munmap")?;
    munmap(a, PAGE).ctx("munmap")?;
    Ok(())
}

fn futex_wake_op_wakes_the_second_word_when_the_comparison_holds() -> Outcome {
    let ctids = two_waiters(plain_waiter)?;
    let (w, w2) = (WORD.as_ptr() as usize, WORD2.as_ptr() as usize);
    // ADD 1 to WORD (was 0); "old > 0" is false: only WORD2's (no) waiters.
    check_eq!(
        futex6(w2, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 1, 2, w, futex_op(1, 1, 4, 0)),
        Ok(0),
        "comparison false: nobody on the first word, the second left alone"
    );
    check_eq!(WORD.load(SeqCst), 1, "WORD after ADD 1");
    // ADD 1 again; "old == 1" holds: both waiters on WORD are woken.
    check_eq!(
        futex6(w2, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 1, 2, w, futex_op(1, 1, 0, 1)),
        Ok(2),
        "comparison true: both waiters on the second word"
    );
    check_eq!(result_of(0), 0, "waiter 0");
    check_eq!(result_of(1), 0, "waiter 1");
    join(ctids[0])?;
    join(ctids[1])
}
