//! A64 instructions: encoding, decoding, and what kprobes may do with them.
//!
//! This crate is the CPU-free half of Linux's arm64 instruction handling,
//! written anew and tested on the host:
//!
//! - [`encode`] builds the instructions the patching code writes (B, BL,
//!   NOP, BRK, `mov x9, x30`, MOVZ/MOVK, RET, ADR/ADRP, LDR literal), with
//!   the range and alignment checks of Linux's `aarch64_insn_gen_*()`
//!   (`arch/arm64/lib/insn.c`).
//! - [`decode`] extracts the fields of the branch and PC-relative classes,
//!   like Linux's `aarch64_insn_is_*()` masks and `*_displacement()`
//!   helpers.
//! - [`probes`] classifies an instruction for a kprobe — rejected,
//!   simulated, or stepped out of line — exactly as Linux 6.12's
//!   `arm_kprobe_decode_insn()` (`arch/arm64/kernel/probes/decode-insn.c`),
//!   with the few deliberate deviations listed there.
//! - [`simulate`] computes what a simulated instruction does to the PC and
//!   the registers, like Linux's `simulate-insn.c`, as a pure function.
//! - [`jump_label`] says which instruction a static-key site holds in
//!   each state and checks a `__jump_table` entry before it is patched.
//!
//! Registers are numbered 0–31 as in the encoding; what 31 means (XZR or SP)
//! is stated by each function.
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod decode;
pub mod encode;
pub mod jump_label;
pub mod probes;
pub mod simulate;

pub use decode::Cond;
pub use encode::InsnError;
pub use probes::{classify, in_exclusive_sequence, Class, RejectReason, SimKind};

/// Size of every A64 instruction, in bytes (Linux's `AARCH64_INSN_SIZE`).
pub const INSN_SIZE: u64 = 4;
