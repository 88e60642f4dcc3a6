//! Memory-management and futex robustness: range operations that cost what
//! is mapped rather than the size of the range, futex waits that leave
//! nothing behind, and Linux's argument checks on both.

use alloc::format;

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    huge_untouched_mapping_munmap_mprotect_fast,
    futex_wait_on_distinct_addresses_leaks_nothing,
    futex_wake_unaligned_einval,
    mmap_checks_fd_before_map_type,
    mmap_fixed_below_mmap_min_addr_as_root,
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

/// MemFree from /proc/meminfo, in KiB.
fn mem_free_kib() -> Result<usize, crate::Fail> {
    let fd = open(b"/proc/meminfo", O_RDONLY, 0).ctx("open /proc/meminfo")?;
    let mut buf = [0u8; 2048];
    let n = read(fd, &mut buf);
    close(fd);
    let n = n.ctx("read /proc/meminfo")?;
    let text = core::str::from_utf8(&buf[..n]).map_err(|_| crate::Fail("meminfo is not UTF-8".into()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemFree:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| crate::Fail("no MemFree line".into()))
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
    let before = mem_free_kib()?;
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
    let after = mem_free_kib()?;
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
