//! The checks, grouped by subsystem; each group is a list of [`Check`]s.

use alloc::format;
use alloc::vec::Vec;

use crate::Check;

pub mod abi;
pub mod fs;
pub mod mm;
pub mod process;
pub mod signal;
pub mod thread;
pub mod time;

/// Every check, in the order they run.
pub static ALL: &[&[Check]] = &[
    fs::CHECKS,
    process::CHECKS,
    signal::CHECKS,
    mm::CHECKS,
    thread::CHECKS,
    time::CHECKS,
    abi::CHECKS,
];

/// A scratch path in /tmp that no other check (or run) uses.
pub fn scratch(name: &str) -> Vec<u8> {
    format!("/tmp/ut{}-{name}", crate::sys::getpid()).into_bytes()
}
