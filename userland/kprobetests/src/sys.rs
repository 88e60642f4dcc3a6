//! The system calls the programs make with exactly the arguments a probe
//! will see (`read(fd, buf, count)`, `lseek(fd, off, whence)`, ...), and
//! the clocks they time themselves with.

use rt::syscall::{check, nr, syscall0, syscall2, syscall3, syscall5};
use rt::Errno;

/// `getpid()`: the call `__arm64_sys_getpid` probes count.
#[inline(always)]
pub fn getpid() -> i32 {
    // SAFETY: getpid takes no arguments.
    unsafe { syscall0(nr::GETPID) as i32 }
}

/// `getppid()`.
#[inline(always)]
pub fn getppid() -> i32 {
    // SAFETY: getppid takes no arguments.
    unsafe { syscall0(nr::GETPPID) as i32 }
}

/// `read(fd, buf, count)` with a `count` that may exceed `buf.len()` only
/// when the caller knows the file holds at most `buf.len()` bytes: the
/// count is what a `vfs_read` probe sees in `%x2`.
pub fn read_count(fd: i32, buf: &mut [u8], count: usize) -> Result<usize, Errno> {
    let count = count.min(buf.len());
    // SAFETY: buf is writable for count bytes.
    check(unsafe { syscall3(nr::READ, fd as usize, buf.as_mut_ptr() as usize, count) })
}

/// `lseek(fd, off, whence)` as raw integers (an invalid fd makes it a cheap
/// call whose arguments a probe can still read from `pt_regs`).
#[inline(always)]
pub fn lseek_raw(fd: i64, off: u64, whence: u64) -> Result<usize, Errno> {
    // SAFETY: lseek takes no pointers.
    check(unsafe { syscall3(nr::LSEEK, fd as usize, off as usize, whence as usize) })
}

/// `prctl(PR_SET_NAME, name)`: the task's `comm` (at most 15 bytes).
pub fn set_comm(name: &[u8]) -> Result<(), Errno> {
    const PR_SET_NAME: usize = uapi::prctl::PR_SET_NAME as usize;
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name[..n]);
    // SAFETY: buf is a NUL-terminated string of at most 16 bytes.
    check(unsafe { syscall5(nr::PRCTL, PR_SET_NAME, buf.as_ptr() as usize, 0, 0, 0) }).map(drop)
}

/// Pins the calling task to `cpu` (`sched_setaffinity(0, 8, &mask)`).
pub fn pin_to_cpu(cpu: usize) -> Result<(), Errno> {
    if cpu >= 64 {
        return Err(Errno::EINVAL);
    }
    let mask: u64 = 1 << cpu;
    // SAFETY: mask is a readable 8-byte cpu set.
    check(unsafe { syscall3(nr::SCHED_SETAFFINITY, 0, 8, &mask as *const u64 as usize) }).map(drop)
}

/// The calling task's CPU mask (`sched_getaffinity(0, 8, &mask)`).
pub fn affinity() -> Result<u64, Errno> {
    let mut mask: u64 = 0;
    // SAFETY: mask is a writable 8-byte cpu set.
    check(unsafe { syscall3(nr::SCHED_GETAFFINITY, 0, 8, &mut mask as *mut u64 as usize) })?;
    Ok(mask)
}

/// Sets the calling task's CPU mask (`sched_setaffinity(0, 8, &mask)`).
pub fn set_affinity(mask: u64) -> Result<(), Errno> {
    // SAFETY: mask is a readable 8-byte cpu set.
    check(unsafe { syscall3(nr::SCHED_SETAFFINITY, 0, 8, &mask as *const u64 as usize) }).map(drop)
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn now_ns() -> u64 {
    const CLOCK_MONOTONIC: usize = uapi::time::CLOCK_MONOTONIC as usize;
    let mut ts = [0i64; 2];
    // SAFETY: ts is a writable struct timespec.
    unsafe { syscall2(nr::CLOCK_GETTIME, CLOCK_MONOTONIC, ts.as_mut_ptr() as usize) };
    ts[0] as u64 * 1_000_000_000 + ts[1] as u64
}

/// Sleeps `ms` milliseconds (an interrupted sleep just ends early).
pub fn sleep_ms(ms: u64) {
    let ts = [(ms / 1000) as i64, ((ms % 1000) * 1_000_000) as i64];
    // SAFETY: ts is a readable struct timespec; no remainder wanted.
    unsafe { syscall2(nr::NANOSLEEP, ts.as_ptr() as usize, 0) };
}

/// The generic timer's virtual count, read at EL0 (`CNTVCT_EL0`; Linux
/// enables EL0 access with `CNTKCTL_EL1.EL0VCTEN`).
#[inline(always)]
pub fn cntvct() -> u64 {
    let v: u64;
    // SAFETY: reads a system register, touches no memory; the ISB keeps
    // the read from being taken before earlier instructions finish.
    unsafe { core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) v, options(nostack)) };
    v
}

/// The frequency of [`cntvct`] in Hz (`CNTFRQ_EL0`).
pub fn cntfrq() -> u64 {
    let v: u64;
    // SAFETY: reads a system register, touches no memory.
    unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) v, options(nostack)) };
    v
}

/// Counter ticks to nanoseconds.
pub fn ticks_to_ns(ticks: u64, freq: u64) -> u64 {
    (u128::from(ticks) * 1_000_000_000 / u128::from(freq.max(1))) as u64
}
