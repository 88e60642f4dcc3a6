//! Debug exceptions: the BRK immediates the kernel allocates (as Linux's
//! asm/brk-imm.h) and the event index of a debug exception syndrome
//! (Linux's `DBG_ESR_EVT`).

/// kprobes: the probed instruction is replaced by this BRK.
pub const KPROBES_BRK_IMM: u16 = 0x004;
/// uprobes.
pub const UPROBES_BRK_IMM: u16 = 0x005;
/// kprobes: ends the out-of-line slot after the stepped instruction.
pub const KPROBES_BRK_SS_IMM: u16 = 0x006;
/// kretprobes: the return trampoline.
pub const KRETPROBES_BRK_IMM: u16 = 0x007;
/// Fault injection / deliberate faults.
pub const FAULT_BRK_IMM: u16 = 0x100;
/// BUG() and WARN().
pub const BUG_BRK_IMM: u16 = 0x800;

/// Debug event kinds, indexed like Linux's `DBG_ESR_EVT(esr)`.
pub mod evt {
    /// Hardware breakpoint.
    pub const HWBKPT: usize = 0;
    /// Software step.
    pub const STEP: usize = 1;
    /// Watchpoint.
    pub const HWWP: usize = 2;
    /// BRK instruction.
    pub const BRK: usize = 6;
}

/// `DBG_ESR_EVT(esr)`: bits 29:27 of ESR (the exception class over 2, mod 8).
pub const fn dbg_esr_evt(esr: u64) -> usize {
    ((esr >> 27) & 0x7) as usize
}

/// The immediate of a BRK exception (ISS bits 15:0).
pub const fn esr_brk_comment(esr: u64) -> u16 {
    (esr & 0xffff) as u16
}

/// The encoding of `BRK #imm`.
pub const fn brk_insn(imm: u16) -> u32 {
    0xd420_0000 | ((imm as u32) << 5)
}
