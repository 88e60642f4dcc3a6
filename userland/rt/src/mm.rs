//! Memory mapping calls.

use crate::errno::Errno;
use crate::syscall::{check, nr, syscall1, syscall2, syscall6};

// mmap's `int` arguments as the registers carry them, from uapi.
pub const PROT_READ: usize = uapi::mman::PROT_READ as usize;
pub const PROT_WRITE: usize = uapi::mman::PROT_WRITE as usize;
pub const MAP_PRIVATE: usize = uapi::mman::MAP_PRIVATE as usize;
pub const MAP_ANONYMOUS: usize = uapi::mman::MAP_ANONYMOUS as usize;

/// Maps `len` bytes of zeroed, private, read-write memory.
pub fn mmap_anon(len: usize) -> Result<*mut u8, Errno> {
    // SAFETY: an anonymous mapping at an address of the kernel's choosing
    // touches no existing memory.
    let r = unsafe {
        syscall6(
            nr::MMAP,
            0,
            len,
            PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS,
            usize::MAX, // fd -1
            0,
        )
    };
    check(r).map(|a| a as *mut u8)
}

/// # Safety
/// `[addr, addr + len)` must be mapped memory that nothing uses any more.
pub unsafe fn munmap(addr: *mut u8, len: usize) -> Result<(), Errno> {
    // SAFETY: the caller guarantees the range is unused.
    check(unsafe { syscall2(nr::MUNMAP, addr as usize, len) }).map(drop)
}

/// `brk(addr)`: the new program break (the old one if `addr` was refused;
/// `brk(0)` asks for the current one).
pub fn brk(addr: usize) -> usize {
    // SAFETY: moving the break maps or unmaps only the heap after the data
    // segment, which only this call manages.
    unsafe { syscall1(nr::BRK, addr) as usize }
}
