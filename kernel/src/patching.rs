//! Text patching (Linux's arch/arm64/kernel/patching.c):
//! `patch_text_nosync` writes one instruction through the fixmap alias
//! under a lock; `patch_text` does a batch under `stop_machine`. Only kernel
//! text and the kprobe slot pages may be patched.

crate::notrace_module!();

use crate::errno::Errno;
use crate::sync::IrqSpinLock;

static PATCH_LOCK: IrqSpinLock<()> = IrqSpinLock::new(());

/// Whether `addr` may be patched: inside kernel text or a probe slot page.
pub fn is_patchable(addr: usize) -> bool {
    let l = arch::mmu::image_layout();
    (addr >= l.text && addr < l.etext) || crate::kprobes::slots::contains(addr)
}

fn poke(addr: usize, insn: u32) -> Result<(), Errno> {
    if !addr.is_multiple_of(4) || !is_patchable(addr) {
        return Err(Errno::EINVAL);
    }
    let _guard = PATCH_LOCK.lock();
    #[allow(unsafe_code)]
    // SAFETY: `addr` is an instruction of kernel text or a slot page
    // (checked), PATCH_LOCK gives us the poke slot, and the callers follow
    // the patching rules (nosync only for swaps the architecture allows on
    // live code, or for code no CPU runs; otherwise under stop_machine).
    unsafe {
        arch::patching::poke_insn(addr, insn).map_err(|_| Errno::EINVAL)
    }
}

/// Writes one instruction without stopping other CPUs. Allowed for
/// changes the architecture permits on live code (B, BL, NOP, BRK swapped
/// with each other; ARM ARM B2.2.5) and for code no CPU can be running.
pub fn patch_text_nosync(addr: usize, insn: u32) -> Result<(), Errno> {
    poke(addr, insn)
}

/// Writes each `insns[i]` at `addrs[i]` with all other CPUs stopped.
pub fn patch_text(addrs: &[usize], insns: &[u32]) -> Result<(), Errno> {
    if addrs.len() != insns.len() || addrs.iter().any(|&a| a % 4 != 0 || !is_patchable(a)) {
        return Err(Errno::EINVAL);
    }
    crate::stop_machine::stop_machine(|| addrs.iter().zip(insns).try_for_each(|(&a, &i)| poke(a, i)))
}

/// The instruction at `addr` now.
pub fn read_insn(addr: usize) -> Option<u32> {
    arch::patching::peek_insn(addr)
}
