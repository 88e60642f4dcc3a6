//! Memory and instruction barriers.

use aarch64_cpu::asm::barrier;

/// Waits for earlier stores to the inner-shareable domain (e.g. page-table
/// writes) to complete.
#[inline(always)]
pub fn dsb_ishst() {
    barrier::dsb(barrier::ISHST);
}

/// Full barrier for the inner-shareable domain.
#[inline(always)]
pub fn dsb_ish() {
    barrier::dsb(barrier::ISH);
}

/// Full system barrier.
#[inline(always)]
pub fn dsb_sy() {
    barrier::dsb(barrier::SY);
}

/// Instruction synchronization barrier.
#[inline(always)]
pub fn isb() {
    barrier::isb(barrier::SY);
}
