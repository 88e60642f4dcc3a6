//! Debug exceptions: the BRK immediates the kernel allocates (as Linux's
//! asm/brk-imm.h) and the event index of a debug exception syndrome
//! (Linux's `DBG_ESR_EVT`).

use tock_registers::interfaces::Readable;
use tock_registers::register_bitfields;
use tock_registers::registers::InMemoryRegister;

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

register_bitfields! {u64,
    /// The ESR of a debug exception, as Linux's `DBG_ESR_EVT` and
    /// `esr_brk_comment` read it.
    pub DBG_ESR [
        /// ESR bits 29:27, the exception class over 2 mod 8: the same for
        /// the lower- and current-EL forms of each debug event.
        EVT OFFSET(27) NUMBITS(3) [],
        /// The immediate of a BRK (ISS bits 15:0).
        BRK_COMMENT OFFSET(0) NUMBITS(16) []
    ],
    /// DBGBCR<n>_EL1, a hardware breakpoint's control (ARM ARM D19.2.21).
    pub DBGBCR [
        /// Breakpoint type: unlinked address match, context match, ...
        BT OFFSET(20) NUMBITS(4) [UnlinkedAddress = 0b0000, LinkedAddress = 0b0001],
        /// The linked breakpoint or context number.
        LBN OFFSET(16) NUMBITS(4) [],
        /// Security state control.
        SSC OFFSET(14) NUMBITS(2) [],
        /// Higher mode control.
        HMC OFFSET(13) NUMBITS(1) [],
        /// Byte address select: which halfwords of the word match.
        BAS OFFSET(5) NUMBITS(4) [A64 = 0b1111],
        /// Privilege mode control: EL1, EL0 or both.
        PMC OFFSET(1) NUMBITS(2) [EL1 = 0b01, EL0 = 0b10, Both = 0b11],
        /// Enable.
        E OFFSET(0) NUMBITS(1) []
    ],
    /// DBGBVR<n>_EL1, a hardware breakpoint's address (ARM ARM D19.2.22).
    pub DBGBVR [
        /// The instruction address, bits 48:2 (sign-extended above).
        VA OFFSET(2) NUMBITS(47) []
    ],
    /// DBGWCR<n>_EL1, a watchpoint's control (ARM ARM D19.2.24).
    pub DBGWCR [
        /// Address mask: ignore the low MASK bits (0 = use BAS).
        MASK OFFSET(24) NUMBITS(5) [],
        /// Watchpoint type: unlinked or linked data address match.
        WT OFFSET(20) NUMBITS(1) [],
        /// The linked context breakpoint number.
        LBN OFFSET(16) NUMBITS(4) [],
        /// Security state control.
        SSC OFFSET(14) NUMBITS(2) [],
        /// Higher mode control.
        HMC OFFSET(13) NUMBITS(1) [],
        /// Byte address select: which bytes of the doubleword match.
        BAS OFFSET(5) NUMBITS(8) [],
        /// Load/store control: loads, stores or both.
        LSC OFFSET(3) NUMBITS(2) [Load = 0b01, Store = 0b10, Both = 0b11],
        /// Privilege access control: EL1, EL0 or both.
        PAC OFFSET(1) NUMBITS(2) [EL1 = 0b01, EL0 = 0b10, Both = 0b11],
        /// Enable.
        E OFFSET(0) NUMBITS(1) []
    ],
    /// DBGWVR<n>_EL1, a watchpoint's address (ARM ARM D19.2.25).
    pub DBGWVR [
        /// The data address, bits 48:2 (sign-extended above).
        VA OFFSET(2) NUMBITS(47) []
    ]
}

/// `DBG_ESR_EVT(esr)`: which kind of debug event `esr` reports.
pub fn dbg_esr_evt(esr: u64) -> usize {
    InMemoryRegister::<u64, DBG_ESR::Register>::new(esr).read(DBG_ESR::EVT) as usize
}

/// The immediate of a BRK exception.
pub fn esr_brk_comment(esr: u64) -> u16 {
    InMemoryRegister::<u64, DBG_ESR::Register>::new(esr).read(DBG_ESR::BRK_COMMENT) as u16
}

/// The encoding of `BRK #imm`.
pub const fn brk_insn(imm: u16) -> u32 {
    0xd420_0000 | ((imm as u32) << 5)
}

/// Clears this CPU's OS lock (and OS double lock), which a cold reset sets
/// and which holds off every debug exception, software step included (as
/// Linux's `clear_os_lock` at CPU bring-up), and keeps MDSCR_EL1.MDE set so
/// that EL0 breakpoints and watchpoints fire once a task programs them.
/// KDE stays clear: no debug exception is ever taken from EL1 this way.
pub fn debug_monitors_init_cpu() {
    use aarch64_cpu::registers::{ReadWriteable, Writeable, MDSCR_EL1, OSLAR_EL1};
    // SAFETY: OSDLR_EL1 has no aarch64-cpu declaration; writing 0 unlocks
    // the double lock, which only gates external and self-hosted debug and
    // touches no memory.
    unsafe { core::arch::asm!("msr osdlr_el1, xzr", options(nomem, nostack, preserves_flags)) };
    OSLAR_EL1.write(OSLAR_EL1::OSLK::Unlocked);
    MDSCR_EL1.modify(MDSCR_EL1::MDE::SET);
    crate::barrier::isb();
}

/// Sets or clears MDSCR_EL1.SS: software step for EL0 (the step state
/// machine then follows SPSR_EL1.SS at each return to EL0). KDE is clear,
/// so this never steps the kernel.
///
/// Written only when SS changes: a switch between two tasks that both
/// step, or a stepped task leaving a stop on the CPU it stopped on, finds
/// it set already. A write is costly under emulation (QEMU leaves its
/// translated code to recompute its cached CPU state); a read is not.
pub fn mdscr_set_ss(on: bool) {
    use aarch64_cpu::registers::{Readable, Writeable, MDSCR_EL1};
    let old = MDSCR_EL1.get();
    let new = if on {
        old | MDSCR_EL1::SS::SET.value
    } else {
        old & !MDSCR_EL1::SS::SET.value
    };
    if new != old {
        MDSCR_EL1.set(new);
    }
}

register_bitfields! {u64,
    /// OS Lock Status Register (not described by aarch64-cpu).
    OSLSR_EL1 [
        /// The OS lock is set.
        OSLK OFFSET(1) NUMBITS(1) []
    ]
}

/// Whether this CPU's OS lock is set (OSLSR_EL1.OSLK): while it is, no
/// debug exception is taken.
pub fn os_lock_held() -> bool {
    let v: u64;
    // SAFETY: reading OSLSR_EL1 has no side effect.
    unsafe { core::arch::asm!("mrs {v}, oslsr_el1", v = out(reg) v, options(nomem, nostack, preserves_flags)) };
    InMemoryRegister::<u64, OSLSR_EL1::Register>::new(v).is_set(OSLSR_EL1::OSLK)
}

/// Whether MDSCR_EL1.MDE (breakpoint and watchpoint exceptions) is set.
pub fn mde_enabled() -> bool {
    use aarch64_cpu::registers::{Readable, MDSCR_EL1};
    MDSCR_EL1.is_set(MDSCR_EL1::MDE)
}
