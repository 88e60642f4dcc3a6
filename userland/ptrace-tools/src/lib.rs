//! ptrace(2) tools for Linux arm64, built as static no_std programs that
//! run on this kernel and on real Linux alike:
//!
//! - `ministrace`: `strace [-f] [-c] [-e trace=NAME,...] [-o FILE] [-p PID]
//!   PROG ARGS` with Linux strace's output format (the host crate
//!   `strace-fmt` holds the CPU-free formatting, [`fmt`], and the
//!   table-driven argument decoding, [`decode`]);
//! - `straced`: the deterministic program the e2e test traces;
//! - `ptracebench`: ns per syscall-stop pair, `PTRACE_PEEKDATA`, 4 KiB
//!   `process_vm_readv` and `PTRACE_SINGLESTEP`.
#![no_std]

extern crate alloc;

pub mod sys;

pub use strace_fmt::{decode, fmt};
