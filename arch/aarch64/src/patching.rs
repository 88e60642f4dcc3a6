//! The raw instruction write behind text patching: through a temporary
//! writable, non-executable alias of the page in the fixmap, never through
//! the (read-only) text mapping itself (Linux's `__aarch64_insn_write` with
//! FIX_TEXT_POKE0).

use crate::addr::VirtAddr;
use crate::mmu::{fixmap, translate, Prot};

/// The fixmap slot used for text pokes.
pub const FIX_TEXT_POKE0: usize = 0;

/// Why an instruction could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PokeError {
    /// Not 4-byte aligned.
    Unaligned,
    /// Not mapped in the kernel's tables.
    NotMapped,
}

/// Writes `insn` at `addr` through the fixmap alias of its page, then makes
/// it visible to instruction fetch on every CPU.
///
/// # Safety
/// `addr` must be an instruction of kernel text or of a kernel-owned
/// executable page that may be changed now (the caller serialises patching,
/// and no CPU executes `addr` in a way the change could break), and the
/// caller must own the FIX_TEXT_POKE0 slot (hold the patching lock).
pub unsafe fn poke_insn(addr: VirtAddr, insn: u32) -> Result<(), PokeError> {
    if !addr.is_aligned(4) {
        return Err(PokeError::Unaligned);
    }
    let (pa, _) = translate(addr).ok_or(PokeError::NotMapped)?;
    // SAFETY: the slot is the caller's; the alias maps exactly the page of
    // `addr`, writable and never executable.
    let alias = unsafe { fixmap::set(FIX_TEXT_POKE0, pa.page_base(), Prot::KERNEL_RW) };
    // SAFETY: `addr` is aligned, so the 4-byte write stays inside the page;
    // the caller guarantees the change is allowed.
    unsafe {
        alias
            .as_mut_ptr::<u8>()
            .add(addr.page_offset())
            .cast::<u32>()
            .write_volatile(insn)
    };
    fixmap::clear(FIX_TEXT_POKE0);
    crate::cache::sync_icache_range(addr.as_usize(), 4);
    Ok(())
}

/// Reads the instruction at `addr` (no fault if unmapped).
pub fn peek_insn(addr: VirtAddr) -> Option<u32> {
    if !addr.is_aligned(4) {
        return None;
    }
    let word = crate::nofault::read_u64_nofault(addr.as_usize() & !7)
        .ok()?
        .to_ne_bytes();
    let at = addr.as_usize() & 4;
    Some(u32::from_ne_bytes([word[at], word[at + 1], word[at + 2], word[at + 3]]))
}
