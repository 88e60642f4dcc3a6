//! TLB maintenance.

use crate::barrier;

/// Invalidates the kernel (global) translation of one page on every CPU.
pub fn flush_kernel_page(va: usize) {
    barrier::dsb_ishst();
    // SAFETY: TLB invalidation has no memory-safety effect.
    unsafe { core::arch::asm!("tlbi vaae1is, {}", in(reg) (va >> 12) & ((1 << 44) - 1), options(nostack)) };
    barrier::dsb_ish();
    barrier::isb();
}

/// Invalidates every EL1&0 translation on every CPU.
pub fn flush_all() {
    barrier::dsb_ishst();
    // SAFETY: TLB invalidation has no memory-safety effect.
    unsafe { core::arch::asm!("tlbi vmalle1is", options(nostack)) };
    barrier::dsb_ish();
    barrier::isb();
}
