//! Auxiliary vector entry types, defined in `uapi::auxvec` (Linux's
//! `include/uapi/linux/auxvec.h` and arm64's `asm/auxvec.h`).

pub use uapi::auxvec::*;

/// Ticks per second reported in `AT_CLKTCK`: Linux's `USER_HZ`
/// (`CLOCKS_PER_SEC`), 100 whatever the kernel's own `HZ`.
pub const CLOCKS_PER_SEC: u64 = 100;
