//! Linux AArch64's user ABI, as numbers and layouts: errno values, open,
//! fcntl and `*at` flags, `struct stat`, `struct linux_dirent64`, poll bits,
//! terminal ioctls with `struct termios` and `struct winsize`, the path
//! limits, the system call table (numbers, names, argument kinds), signal
//! numbers, ptrace's numbers and regset layouts, ELF64 numbers and headers, and an error type that
//! carries a message and position for tracefs `error_log`. Every value is
//! Linux's (include/uapi/asm-generic, with arm64's overrides), so a static
//! Linux arm64 binary sees what it expects.
//!
//! Structures that cross into user memory have `to_bytes`/`from_bytes` that
//! give the exact little-endian image, so no code needs `unsafe` to copy
//! them.

#![no_std]
#![deny(unsafe_code)]
#![allow(non_upper_case_globals)]

pub mod auxvec;
pub mod capability;
pub mod elf;
pub mod errno;
pub mod error;
pub mod fcntl;
pub mod futex;
pub mod hw_breakpoint;
pub mod ipc;
pub mod magic;
pub mod mman;
pub mod mount;
pub mod poll;
pub mod prctl;
pub mod ptrace;
pub mod random;
pub mod reboot;
pub mod resource;
pub mod rseq;
pub mod sched;
pub mod sigframe;
pub mod signal;
pub mod socket;
pub mod stat;
pub mod syscalls;
pub mod sysinfo;
pub mod syslog;
pub mod termios;
pub mod time;
pub mod tracefs;
pub mod uio;
pub mod utsname;
pub mod wait;

pub use errno::Errno;
pub use stat::Stat;

/// Longest path, including its NUL (include/uapi/linux/limits.h).
pub const PATH_MAX: usize = 4096;
/// Longest path component, excluding the NUL.
pub const NAME_MAX: usize = 255;
/// Writes to a pipe of at most this many bytes are atomic.
pub const PIPE_BUF: usize = 4096;
/// Symbolic links followed in one lookup before ELOOP (include/linux/namei.h).
pub const MAXSYMLINKS: u32 = 40;
/// Initial soft RLIMIT_NOFILE (include/uapi/linux/fs.h).
pub const INR_OPEN_CUR: usize = 1024;
/// Initial hard RLIMIT_NOFILE.
pub const INR_OPEN_MAX: usize = 4096;
/// The default open-file limit (RLIMIT_NOFILE): a descriptor table's
/// bound until setrlimit changes it.
pub const NR_OPEN_DEFAULT: usize = INR_OPEN_CUR;
/// The highest RLIMIT_NOFILE Linux allows by default (`fs.nr_open`).
pub const NR_OPEN_MAX: usize = 1 << 20;
