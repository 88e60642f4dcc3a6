//! AArch64 hardware abstraction for the kernel: boot entry, exception
//! vectors and frames, system registers, MMU and page tables, caches and
//! TLBs, the GIC, the generic timer, PSCI and semihosting.
//!
//! Unsafe code lives here behind safe interfaces; each block says why it
//! holds.
#![no_std]

pub mod addr;
pub mod barrier;
pub mod boot;
pub mod cache;
pub mod context;
pub mod cpu;
pub mod cpufeature;
pub mod debug_monitors;
pub mod entry;
pub mod esr;
pub mod ftrace;
pub mod gic;
pub mod hw_breakpoint;
pub mod jump_label;
pub mod memory;
pub mod mmu;
pub mod nofault;
pub mod patching;
pub mod pgtable_user;
pub mod probes;
pub mod psci;
pub mod ptrace;
pub mod sections;
pub mod semihosting;
pub mod spinlock;
pub mod timer;
pub mod tlb;
pub mod uaccess;
