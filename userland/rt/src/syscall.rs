//! Raw Linux AArch64 system calls: x8 = number, x0..x5 = arguments,
//! `svc #0`, x0 = result or `-errno`.
//!
//! The numbers are those of the generic table (`include/uapi/asm-generic/
//! unistd.h`) that arm64 uses. Every typed wrapper turns a negative result
//! into an [`Errno`].

use core::arch::asm;

use crate::errno::Errno;

/// System call numbers (Linux AArch64), from `uapi`'s one table.
pub use uapi::syscalls::nr;

/// # Safety
/// The caller must pass arguments that are valid for system call `n`
/// (pointers to memory it owns, of the sizes the call expects).
#[inline(always)]
pub unsafe fn syscall0(n: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller vouches for the call; `svc` clobbers only x0.
    unsafe { asm!("svc #0", in("x8") n, lateout("x0") ret, options(nostack)) };
    ret
}

/// # Safety
/// As for [`syscall0`].
#[inline(always)]
pub unsafe fn syscall1(n: usize, a0: usize) -> isize {
    let ret: isize;
    // SAFETY: as for syscall0.
    unsafe { asm!("svc #0", in("x8") n, inlateout("x0") a0 as isize => ret, options(nostack)) };
    ret
}

/// # Safety
/// As for [`syscall0`].
#[inline(always)]
pub unsafe fn syscall2(n: usize, a0: usize, a1: usize) -> isize {
    let ret: isize;
    // SAFETY: as for syscall0.
    unsafe {
        asm!("svc #0", in("x8") n, inlateout("x0") a0 as isize => ret, in("x1") a1,
             options(nostack))
    };
    ret
}

/// # Safety
/// As for [`syscall0`].
#[inline(always)]
pub unsafe fn syscall3(n: usize, a0: usize, a1: usize, a2: usize) -> isize {
    let ret: isize;
    // SAFETY: as for syscall0.
    unsafe {
        asm!("svc #0", in("x8") n, inlateout("x0") a0 as isize => ret, in("x1") a1,
             in("x2") a2, options(nostack))
    };
    ret
}

/// # Safety
/// As for [`syscall0`].
#[inline(always)]
pub unsafe fn syscall4(n: usize, a0: usize, a1: usize, a2: usize, a3: usize) -> isize {
    let ret: isize;
    // SAFETY: as for syscall0.
    unsafe {
        asm!("svc #0", in("x8") n, inlateout("x0") a0 as isize => ret, in("x1") a1,
             in("x2") a2, in("x3") a3, options(nostack))
    };
    ret
}

/// # Safety
/// As for [`syscall0`].
#[inline(always)]
pub unsafe fn syscall5(n: usize, a0: usize, a1: usize, a2: usize, a3: usize, a4: usize) -> isize {
    let ret: isize;
    // SAFETY: as for syscall0.
    unsafe {
        asm!("svc #0", in("x8") n, inlateout("x0") a0 as isize => ret, in("x1") a1,
             in("x2") a2, in("x3") a3, in("x4") a4, options(nostack))
    };
    ret
}

/// # Safety
/// As for [`syscall0`].
#[inline(always)]
pub unsafe fn syscall6(n: usize, a0: usize, a1: usize, a2: usize, a3: usize, a4: usize, a5: usize) -> isize {
    let ret: isize;
    // SAFETY: as for syscall0.
    unsafe {
        asm!("svc #0", in("x8") n, inlateout("x0") a0 as isize => ret, in("x1") a1,
             in("x2") a2, in("x3") a3, in("x4") a4, in("x5") a5, options(nostack))
    };
    ret
}

/// Turns a raw result into `Ok(value)` or `Err(errno)`: results in
/// `-MAX_ERRNO..=-1` are errors, as in Linux's `IS_ERR_VALUE`.
pub fn check(ret: isize) -> Result<usize, Errno> {
    if (-(uapi::errno::MAX_ERRNO as isize)..0).contains(&ret) {
        Err(Errno(-ret as i32))
    } else {
        Ok(ret as usize)
    }
}
