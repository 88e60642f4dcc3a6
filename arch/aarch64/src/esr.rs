//! The Exception Syndrome Register: exception classes by name (as Linux's
//! `esr_class_str`), and the fields of data/instruction abort syndromes.

use tock_registers::interfaces::Readable;
use tock_registers::register_bitfields;
use tock_registers::registers::InMemoryRegister;

register_bitfields! {u64,
    /// ESR_ELx (ARM ARM D17.2.37).
    pub ESR [
        /// Exception class.
        EC OFFSET(26) NUMBITS(6) [],
        /// Instruction length: 1 for a 32-bit instruction.
        IL OFFSET(25) NUMBITS(1) [],
        /// Instruction-specific syndrome.
        ISS OFFSET(0) NUMBITS(25) []
    ],
    /// ISS of a data or instruction abort (ARM ARM D17.2.37.1.x).
    pub ABORT_ISS [
        /// Instruction syndrome valid (data aborts): bits 23:14 hold it.
        ISV OFFSET(24) NUMBITS(1) [],
        /// Synchronous error type (external aborts).
        SET OFFSET(11) NUMBITS(2) [],
        /// FAR is not valid.
        FNV OFFSET(10) NUMBITS(1) [],
        /// External abort type.
        EA OFFSET(9) NUMBITS(1) [],
        /// Cache maintenance operation.
        CM OFFSET(8) NUMBITS(1) [],
        /// Fault on a stage-2 walk for a stage-1 table.
        S1PTW OFFSET(7) NUMBITS(1) [],
        /// Write not read (data aborts).
        WNR OFFSET(6) NUMBITS(1) [],
        /// Fault status code.
        FSC OFFSET(0) NUMBITS(6) [
            /// Alignment fault.
            Alignment = 0x21
        ]
    ]
}

/// Exception classes the kernel dispatches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Ec {
    Unknown = 0x00,
    Wfx = 0x01,
    FpAsimd = 0x07,
    Ill = 0x0e,
    Svc64 = 0x15,
    Hvc64 = 0x16,
    Smc64 = 0x17,
    Sys64 = 0x18,
    Sve = 0x19,
    Pac = 0x1c,
    Bti = 0x0d,
    IabtLow = 0x20,
    IabtCur = 0x21,
    PcAlign = 0x22,
    DabtLow = 0x24,
    DabtCur = 0x25,
    SpAlign = 0x26,
    Fp64 = 0x2c,
    Serror = 0x2f,
    BreakptLow = 0x30,
    BreakptCur = 0x31,
    SoftstpLow = 0x32,
    SoftstpCur = 0x33,
    WatchptLow = 0x34,
    WatchptCur = 0x35,
    Brk64 = 0x3c,
}

impl Ec {
    /// The class of `esr`, if it is one the kernel knows.
    pub fn from_esr(esr: u64) -> Option<Ec> {
        use Ec::*;
        const ALL: [Ec; 26] = [
            Unknown, Wfx, FpAsimd, Ill, Svc64, Hvc64, Smc64, Sys64, Sve, Pac, Bti, IabtLow, IabtCur, PcAlign, DabtLow,
            DabtCur, SpAlign, Fp64, Serror, BreakptLow, BreakptCur, SoftstpLow, SoftstpCur, WatchptLow, WatchptCur,
            Brk64,
        ];
        let ec = ec(esr) as u8;
        ALL.into_iter().find(|c| *c as u8 == ec)
    }
}

/// `esr` with its fields named, e.g. for an oops.
#[inline]
pub fn esr_reg(esr: u64) -> InMemoryRegister<u64, ESR::Register> {
    InMemoryRegister::new(esr)
}

/// The exception class field of `esr`. Inline: every system call's
/// entry tests it (an out-of-line call would be a traced function there).
#[inline]
pub fn ec(esr: u64) -> u64 {
    esr_reg(esr).read(ESR::EC)
}

/// The ISS field of `esr`.
pub fn iss(esr: u64) -> u64 {
    esr_reg(esr).read(ESR::ISS)
}

/// Whether the instruction that took the exception was 32 bits long (IL).
pub fn il_is_32bit(esr: u64) -> bool {
    esr_reg(esr).is_set(ESR::IL)
}

/// Linux's name for the exception class of `esr`.
pub fn class_str(esr: u64) -> &'static str {
    match ec(esr) {
        0x00 => "Unknown/Uncategorized",
        0x01 => "WFI/WFE",
        0x03 => "CP15 MCR/MRC",
        0x04 => "CP15 MCRR/MRRC",
        0x05 => "CP14 MCR/MRC",
        0x06 => "CP14 LDC/STC",
        0x07 => "ASIMD",
        0x08 => "CP10 MRC/VMRS",
        0x0c => "CP14 MCRR/MRRC",
        0x0d => "BTI",
        0x0e => "PSTATE.IL",
        0x11 => "SVC (AArch32)",
        0x15 => "SVC (AArch64)",
        0x16 => "HVC (AArch64)",
        0x17 => "SMC (AArch64)",
        0x18 => "MSR/MRS (AArch64)",
        0x19 => "SVE",
        0x1c => "PAC",
        0x20 => "IABT (lower EL)",
        0x21 => "IABT (current EL)",
        0x22 => "PC Alignment",
        0x24 => "DABT (lower EL)",
        0x25 => "DABT (current EL)",
        0x26 => "SP Alignment",
        0x28 => "FP (AArch32)",
        0x2c => "FP (AArch64)",
        0x2f => "SError",
        0x30 => "Breakpoint (lower EL)",
        0x31 => "Breakpoint (current EL)",
        0x32 => "Software Step (lower EL)",
        0x33 => "Software Step (current EL)",
        0x34 => "Watchpoint (lower EL)",
        0x35 => "Watchpoint (current EL)",
        0x38 => "BKPT (AArch32)",
        0x3c => "BRK (AArch64)",
        _ => "UNRECOGNIZED EC",
    }
}

/// Linux's description of an abort's fault status code.
pub fn fsc_str(fsc: u64) -> &'static str {
    match fsc {
        0x00 => "level 0 address size fault",
        0x01 => "level 1 address size fault",
        0x02 => "level 2 address size fault",
        0x03 => "level 3 address size fault",
        0x04 => "level 0 translation fault",
        0x05 => "level 1 translation fault",
        0x06 => "level 2 translation fault",
        0x07 => "level 3 translation fault",
        0x08 => "unknown 8",
        0x09 => "level 1 access flag fault",
        0x0a => "level 2 access flag fault",
        0x0b => "level 3 access flag fault",
        0x0c => "unknown 12",
        0x0d => "level 1 permission fault",
        0x0e => "level 2 permission fault",
        0x0f => "level 3 permission fault",
        0x10 => "synchronous external abort",
        0x21 => "alignment fault",
        0x30 => "TLB conflict abort",
        _ => "unknown",
    }
}

/// Whether the fault status code is a permission fault.
pub fn fsc_is_permission(fsc: u64) -> bool {
    (0x0d..=0x0f).contains(&fsc)
}

/// Whether the fault status code is an access flag fault (levels 1-3).
pub fn fsc_is_access_flag(fsc: u64) -> bool {
    (0x09..=0x0b).contains(&fsc)
}

/// Whether the fault status code is a translation fault.
pub fn fsc_is_translation(fsc: u64) -> bool {
    (0x04..=0x07).contains(&fsc)
}

/// Fields of an abort syndrome.
#[derive(Clone, Copy, Debug)]
pub struct AbortInfo {
    /// Fault status code.
    pub fsc: u64,
    /// A write caused it.
    pub write: bool,
    /// FAR not valid.
    pub fnv: bool,
    /// External abort.
    pub ea: bool,
    /// Stage-2 fault on a stage-1 walk.
    pub s1ptw: bool,
    /// Cache maintenance.
    pub cm: bool,
    /// Instruction syndrome valid.
    pub isv: bool,
    /// Synchronous error type.
    pub set: u64,
}

/// Decodes the ISS of a data or instruction abort.
pub fn abort_info(esr: u64) -> AbortInfo {
    let r = InMemoryRegister::<u64, ABORT_ISS::Register>::new(esr);
    AbortInfo {
        fsc: r.read(ABORT_ISS::FSC),
        write: r.is_set(ABORT_ISS::WNR),
        fnv: r.is_set(ABORT_ISS::FNV),
        ea: r.is_set(ABORT_ISS::EA),
        s1ptw: r.is_set(ABORT_ISS::S1PTW),
        cm: r.is_set(ABORT_ISS::CM),
        isv: r.is_set(ABORT_ISS::ISV),
        set: r.read(ABORT_ISS::SET),
    }
}
