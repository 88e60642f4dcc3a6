//! Everything of `execve` that does not need the CPU: reading a static
//! AArch64 ELF executable into a [`LoadPlan`] (what to map where, the entry
//! point, the values the auxiliary vector reports), and building the initial
//! user stack ([`StackImage`]) exactly as Linux arm64 lays it out.
//!
//! The kernel's `execve` path is then: read the file, [`load_plan`], check
//! the arguments with [`build_stack`] (both before the point of no return,
//! so that every failure is an error return, never a killed task), tear down
//! the old address space, map and fill each [`Segment`], copy
//! [`StackImage::bytes`] to `[sp, stack_top)`, and return to EL0 at
//! [`LoadPlan::entry`] with `sp`, as Linux's `load_elf_binary()` and
//! `create_elf_tables()` do.
//!
//! ```
//! # fn demo(elf: &[u8]) -> Result<(), exec::ExecError> {
//! let plan = exec::load_plan(elf)?;
//! let aux = exec::AuxParams { random: [7; 16], ..Default::default() };
//! let stack = exec::build_stack(0x1_0000_0000, &[b"/bin/sh"], &[b"HOME=/"], b"/bin/sh", &plan, aux)?;
//! assert_eq!(stack.sp % 16, 0);
//! # Ok(()) }
//! ```
//!
//! Every error maps to a Linux errno through [`ExecError::errno`]. Nothing
//! here panics, whatever the bytes of the file.

#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]
// The kernel reads whatever file a user names: keep every way to panic out
// of the library code, not just out of its tests' inputs.
#![cfg_attr(
    not(test),
    deny(
        clippy::arithmetic_side_effects,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unreachable,
        clippy::unwrap_used
    )
)]

extern crate alloc;

pub mod auxvec;
mod binfmt_elf;
mod elf_tables;
mod error;

pub use binfmt_elf::{
    head_len, image_span, load_interp_plan, load_interp_plan_head, load_plan, load_plan_head, ElfType, LoadPlan, Prot,
    Segment,
};
pub use elf_tables::{build_stack, AuxParams, StackImage, ELF_PLATFORM};
pub use error::ExecError;

/// The user page size (4 KiB granule), Linux's `ELF_EXEC_PAGESIZE` on arm64.
pub const PAGE_SIZE: u64 = 4096;

/// The lowest address a segment may occupy: page 0 stays unmapped so that a
/// NULL dereference faults.
pub const USER_MIN: u64 = 0x1000;

/// One past the highest user address: Linux arm64's `TASK_SIZE` with 48-bit
/// virtual addresses.
pub const TASK_SIZE: u64 = 1 << 48;

/// Linux arm64's `ELF_ET_DYN_BASE`, `2 * DEFAULT_MAP_WINDOW_64 / 3` for a
/// 48-bit VA: 0xaaaa_aaaa_aaaa. Static-PIE executables are placed here, the
/// value first rounded down to the largest `p_align` of their PT_LOADs (at
/// least a page) and then to a page, as Linux does for `ET_DYN` (see
/// [`LoadPlan::bias`]). With 4 KiB pages the base is 0xaaaa_aaaa_a000; with
/// the usual 64 KiB `p_align`, 0xaaaa_aaaa_0000.
pub const ELF_ET_DYN_BASE: u64 = 2 * TASK_SIZE / 3;

/// Longest argument or environment string, NUL included: Linux's
/// `MAX_ARG_STRLEN`, 32 pages.
pub const MAX_ARG_STRLEN: usize = 32 * PAGE_SIZE as usize;

/// Most argument (and, separately, environment) strings: Linux's
/// `MAX_ARG_STRINGS`.
pub const MAX_ARG_STRINGS: usize = 0x7fff_ffff;

/// Linux's `_STK_LIM`, the default `RLIMIT_STACK` soft limit: 8 MiB.
pub const DEFAULT_STACK_RLIMIT: u64 = 8 << 20;

/// Rounds `x` down to a page boundary (Linux's `ELF_PAGESTART`).
const fn page_start(x: u64) -> u64 {
    x & !(PAGE_SIZE - 1)
}

/// Offset of `x` inside its page (Linux's `ELF_PAGEOFFSET`).
const fn page_offset(x: u64) -> u64 {
    x & (PAGE_SIZE - 1)
}

/// Rounds `x` up to a page boundary (Linux's `ELF_PAGEALIGN`), `None` if that
/// overflows.
fn page_align(x: u64) -> Option<u64> {
    x.checked_add(PAGE_SIZE - 1).map(page_start)
}
