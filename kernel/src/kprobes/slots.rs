//! Out-of-line single-step slots (Linux's `get_insn_slot`): executable,
//! read-only pages of their own in the vmalloc window, written only through
//! the patching path. A slot holds the probed instruction and
//! `BRK #KPROBES_BRK_SS_IMM`.

use crate::sync::IrqSpinLock;
use alloc::vec::Vec;
use arch::memory::{PAGE_SIZE, VMALLOC_BASE};

/// Bytes per slot: the instruction and the BRK after it.
pub const SLOT_SIZE: usize = 8;
const SLOTS_PER_PAGE: usize = PAGE_SIZE / SLOT_SIZE;
/// The part of the vmalloc window used for slot pages.
const SLOT_AREA: usize = VMALLOC_BASE;
const MAX_PAGES: usize = 64;

struct SlotPage {
    va: usize,
    used: [u64; SLOTS_PER_PAGE / 64],
}

static PAGES: IrqSpinLock<Vec<SlotPage>> = IrqSpinLock::new(Vec::new());

/// Whether `addr` is inside a slot page.
pub fn contains(addr: usize) -> bool {
    (SLOT_AREA..SLOT_AREA + MAX_PAGES * PAGE_SIZE).contains(&addr)
        && PAGES.lock().iter().any(|p| (p.va..p.va + PAGE_SIZE).contains(&addr))
}

/// A free slot's address.
pub fn alloc_slot() -> Option<usize> {
    let mut pages = PAGES.lock();
    for p in pages.iter_mut() {
        for (w, word) in p.used.iter_mut().enumerate() {
            if *word != u64::MAX {
                let bit = (!*word).trailing_zeros() as usize;
                *word |= 1 << bit;
                return Some(p.va + (w * 64 + bit) * SLOT_SIZE);
            }
        }
    }
    if pages.len() >= MAX_PAGES {
        return None;
    }
    let va = SLOT_AREA + pages.len() * PAGE_SIZE;
    let pa = crate::mm::frame::alloc_zeroed_frame()?;
    let mapped = arch::addr::VirtAddr::new(va)
        .ok_or(arch::mmu::MapError::OutOfWindow)
        .and_then(|v| arch::mmu::vmap(v, pa, PAGE_SIZE, arch::mmu::Prot::KERNEL_TEXT));
    if mapped.is_err() {
        crate::mm::frame::free_frame(pa);
        return None;
    }
    let mut used = [0u64; SLOTS_PER_PAGE / 64];
    used[0] = 1;
    pages.push(SlotPage { va, used });
    Some(va)
}

/// Returns a slot.
pub fn free_slot(slot: usize) {
    let mut pages = PAGES.lock();
    if let Some(p) = pages.iter_mut().find(|p| slot >= p.va && slot < p.va + PAGE_SIZE) {
        let i = (slot - p.va) / SLOT_SIZE;
        p.used[i / 64] &= !(1 << (i % 64));
    }
}
