//! What `ministrace` (userland/ptrace-tools) prints, without the CPU:
//! [`fmt`] has strace's text forms (string quoting and truncation, flag
//! sets, errno and signal names, wait statuses, siginfo, signal sets, the
//! `-c` summary table), [`decode`] turns a system call's number and
//! registers into strace's `name(args) = result` from the one table,
//! `uapi::syscalls::SYSCALLS`, reading the tracee's memory through a
//! trait. Both are tested on the host.
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod decode;
pub mod fmt;

#[cfg(test)]
mod tests;
