//! What `kprobetests` and `kprobebench` share: the tracefs files
//! ([`tracefs`]), parsers for what they print ([`parse`]: `trace` lines,
//! `kprobe_profile`, `per_cpu/cpuN/stats`, the `trace` header,
//! `error_log` entries) and the few raw system calls they make ([`sys`]).
//!
//! Everything follows Linux 6.12 (`kernel/trace/trace.c`,
//! `trace_kprobe.c`, `trace_output.c`, `ring_buffer.c`): the programs are
//! proven on real Linux through `../shared/reflinux` and hold this kernel
//! to the same results.
#![no_std]

extern crate alloc;

pub mod parse;
pub mod sys;
pub mod tracefs;
