//! Raw Linux AArch64 system calls: x8 = number, x0..x5 = arguments,
//! `svc #0`, x0 = result or `-errno`.
//!
//! The numbers are those of the generic table (`include/uapi/asm-generic/
//! unistd.h`) that arm64 uses. Every typed wrapper turns a negative result
//! into an [`Errno`].

use core::arch::asm;

use crate::errno::Errno;

/// System call numbers (Linux AArch64).
pub mod nr {
    pub const GETCWD: usize = 17;
    pub const DUP3: usize = 24;
    pub const FCNTL: usize = 25;
    pub const IOCTL: usize = 29;
    pub const MKDIRAT: usize = 34;
    pub const UNLINKAT: usize = 35;
    pub const UMOUNT2: usize = 39;
    pub const MOUNT: usize = 40;
    pub const CHDIR: usize = 49;
    pub const OPENAT: usize = 56;
    pub const CLOSE: usize = 57;
    pub const PIPE2: usize = 59;
    pub const GETDENTS64: usize = 61;
    pub const LSEEK: usize = 62;
    pub const READ: usize = 63;
    pub const WRITE: usize = 64;
    pub const PPOLL: usize = 73;
    pub const READLINKAT: usize = 78;
    pub const NEWFSTATAT: usize = 79;
    pub const FSTAT: usize = 80;
    pub const SYNC: usize = 81;
    pub const EXIT: usize = 93;
    pub const EXIT_GROUP: usize = 94;
    pub const KILL: usize = 129;
    pub const RT_SIGACTION: usize = 134;
    pub const REBOOT: usize = 142;
    pub const SETSID: usize = 157;
    pub const UNAME: usize = 160;
    pub const GETPID: usize = 172;
    pub const GETPPID: usize = 173;
    pub const GETUID: usize = 174;
    pub const BRK: usize = 214;
    pub const MUNMAP: usize = 215;
    pub const CLONE: usize = 220;
    pub const EXECVE: usize = 221;
    pub const MMAP: usize = 222;
    pub const WAIT4: usize = 260;
}

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
/// `-4095..=-1` are errors, as in Linux's `IS_ERR_VALUE`.
pub fn check(ret: isize) -> Result<usize, Errno> {
    if (-4095..0).contains(&ret) {
        Err(Errno(-ret as i32))
    } else {
        Ok(ret as usize)
    }
}
