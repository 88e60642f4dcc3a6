//! The CPU's feature registers as EL0 sees them: Linux lets user programs
//! read the ID register space with `mrs` and emulates each read
//! (`emulate_mrs` in arch/arm64/kernel/cpufeature.c), returning the system's
//! value with only the fields it declares user-visible, and each hidden
//! field at its safe value. This module holds that table and the
//! emulation; the values EL0 sees are Linux 6.12's on the same CPU.
//!
//! Fields Linux shows only when built with an extension this kernel does
//! not support for user programs (SVE, SME, pointer authentication, MTE,
//! BTI, POE) are hidden here, so that no program relies on state the
//! kernel would not preserve.

use crate::ptrace::PtRegs;
use aarch64_cpu::registers::MIDR_EL1;
use tock_registers::interfaces::Readable;
use tock_registers::register_bitfields;
use tock_registers::registers::InMemoryRegister;

register_bitfields! {u32,
    /// An MRS instruction (ARM ARM C6.2.245): `mrs Xt, S<op0>_<op1>_C<n>_C<m>_<op2>`.
    pub MRS_INSN [
        /// Fixed bits 0b1101010100_1_1 of MRS.
        OPCODE OFFSET(20) NUMBITS(12) [Mrs = 0xd53],
        /// op0 - 2.
        O0 OFFSET(19) NUMBITS(1) [],
        /// op1.
        OP1 OFFSET(16) NUMBITS(3) [],
        /// CRn.
        CRN OFFSET(12) NUMBITS(4) [],
        /// CRm.
        CRM OFFSET(8) NUMBITS(4) [],
        /// op2.
        OP2 OFFSET(5) NUMBITS(3) [],
        /// The destination register (31 = XZR).
        RT OFFSET(0) NUMBITS(5) []
    ]
}

register_bitfields! {u64,
    /// The ISS of a trapped MSR, MRS or system instruction (ESR.EC = 0x18,
    /// ARM ARM D17.2.37 "ISS encoding for an exception from MSR, MRS, or
    /// System instruction execution in AArch64 state").
    pub SYS64_ISS [
        /// op0.
        OP0 OFFSET(20) NUMBITS(2) [],
        /// op2.
        OP2 OFFSET(17) NUMBITS(3) [],
        /// op1.
        OP1 OFFSET(14) NUMBITS(3) [],
        /// CRn.
        CRN OFFSET(10) NUMBITS(4) [],
        /// The general-purpose register transferred.
        RT OFFSET(5) NUMBITS(5) [],
        /// CRm.
        CRM OFFSET(1) NUMBITS(4) [],
        /// The direction: a read (MRS) or a write (MSR).
        DIRECTION OFFSET(0) NUMBITS(1) [Write = 0, Read = 1]
    ]
}

/// A system register named by its encoding, as in an MRS instruction or a
/// trapped access's syndrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysRegId {
    /// op0 (2 or 3 for registers).
    pub op0: u8,
    /// op1.
    pub op1: u8,
    /// CRn.
    pub crn: u8,
    /// CRm.
    pub crm: u8,
    /// op2.
    pub op2: u8,
}

impl SysRegId {
    /// The register an MRS instruction reads and its destination register,
    /// or None if `insn` is not an MRS (Linux's `aarch64_insn_is_mrs`).
    pub fn from_mrs(insn: u32) -> Option<(SysRegId, usize)> {
        let i = InMemoryRegister::<u32, MRS_INSN::Register>::new(insn);
        if !i.matches_all(MRS_INSN::OPCODE::Mrs) {
            return None;
        }
        let id = SysRegId {
            op0: 2 + i.read(MRS_INSN::O0) as u8,
            op1: i.read(MRS_INSN::OP1) as u8,
            crn: i.read(MRS_INSN::CRN) as u8,
            crm: i.read(MRS_INSN::CRM) as u8,
            op2: i.read(MRS_INSN::OP2) as u8,
        };
        Some((id, i.read(MRS_INSN::RT) as usize))
    }

    /// The register a trapped MRS (ESR.EC = 0x18) reads and its destination
    /// register; None for an MSR or a system instruction.
    pub fn from_esr_sys64(esr: u64) -> Option<(SysRegId, usize)> {
        let iss = InMemoryRegister::<u64, SYS64_ISS::Register>::new(esr);
        if !iss.matches_all(SYS64_ISS::DIRECTION::Read) {
            return None;
        }
        let id = SysRegId {
            op0: iss.read(SYS64_ISS::OP0) as u8,
            op1: iss.read(SYS64_ISS::OP1) as u8,
            crn: iss.read(SYS64_ISS::CRN) as u8,
            crm: iss.read(SYS64_ISS::CRM) as u8,
            op2: iss.read(SYS64_ISS::OP2) as u8,
        };
        Some((id, iss.read(SYS64_ISS::RT) as usize))
    }

    /// Whether EL0 reads of this register are emulated: op0 = 3, op1 = 0,
    /// CRn = 0 and CRm 0 or 2..=7, as Linux's `is_emulated()` (CRm = 1
    /// holds the AArch32 processor and memory-model registers, which Linux
    /// does not offer).
    pub const fn is_emulated(&self) -> bool {
        self.op0 == 3 && self.op1 == 0 && self.crn == 0 && (self.crm == 0 || (self.crm >= 2 && self.crm <= 7))
    }
}

/// One field of a feature register, as in Linux's `struct arm64_ftr_bits`.
pub struct FtrBits {
    /// The field's name in the ARM ARM (`-` for an unnamed nibble).
    pub name: &'static str,
    /// Lowest bit.
    pub shift: u32,
    /// Width in bits.
    pub width: u32,
    /// Whether EL0 sees the system's value of the field.
    pub visible: bool,
    /// What EL0 sees instead when the field is hidden.
    pub safe_val: u64,
}

const fn visible(name: &'static str, shift: u32, width: u32) -> FtrBits {
    FtrBits {
        name,
        shift,
        width,
        visible: true,
        safe_val: 0,
    }
}

const fn hidden(name: &'static str, shift: u32, width: u32, safe_val: u64) -> FtrBits {
    FtrBits {
        name,
        shift,
        width,
        visible: false,
        safe_val,
    }
}

impl FtrBits {
    const fn mask(&self) -> u64 {
        (u64::MAX >> (64 - self.width)) << self.shift
    }
}

/// A feature register of the emulated space (op0 = 3, op1 = 0, CRn = 0).
pub struct FtrReg {
    /// Its name in the ARM ARM.
    pub name: &'static str,
    /// CRm of its encoding.
    pub crm: u8,
    /// op2 of its encoding.
    pub op2: u8,
    /// Its fields (Linux's `ftr_*` tables for v6.12).
    pub fields: &'static [FtrBits],
}

impl FtrReg {
    /// The bits EL0 sees from the system's value (Linux's `user_mask`).
    pub const fn user_mask(&self) -> u64 {
        let mut m = 0;
        let mut i = 0;
        while i < self.fields.len() {
            if self.fields[i].visible {
                m |= self.fields[i].mask();
            }
            i += 1;
        }
        m
    }

    /// The hidden fields at their safe values (Linux's `user_val`).
    pub const fn user_val(&self) -> u64 {
        let mut v = 0;
        let mut i = 0;
        while i < self.fields.len() {
            let f = &self.fields[i];
            if !f.visible {
                v |= (f.safe_val << f.shift) & f.mask();
            }
            i += 1;
        }
        v
    }

    /// What EL0 reads, given the system's value of the register.
    pub const fn user_value(&self, sys_val: u64) -> u64 {
        (sys_val & self.user_mask()) | self.user_val()
    }
}

/// The tracked registers of the emulated space; any other register there
/// reads as zero (IMPLEMENTATION DEFINED or reserved, RAZ).
pub const ARM64_FTR_REGS: &[FtrReg] = &[
    FtrReg {
        name: "ID_ISAR0_EL1",
        crm: 2,
        op2: 0,
        fields: &[
            hidden("Divide", 24, 4, 0),
            hidden("Debug", 20, 4, 0),
            hidden("Coproc", 16, 4, 0),
            hidden("CmpBranch", 12, 4, 0),
            hidden("BitField", 8, 4, 0),
            hidden("BitCount", 4, 4, 0),
            hidden("Swap", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_ISAR1_EL1",
        crm: 2,
        op2: 1,
        fields: &[
            hidden("-", 28, 4, 0),
            hidden("-", 24, 4, 0),
            hidden("-", 20, 4, 0),
            hidden("-", 16, 4, 0),
            hidden("-", 12, 4, 0),
            hidden("-", 8, 4, 0),
            hidden("-", 4, 4, 0),
            hidden("-", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_ISAR2_EL1",
        crm: 2,
        op2: 2,
        fields: &[
            hidden("-", 28, 4, 0),
            hidden("-", 24, 4, 0),
            hidden("-", 20, 4, 0),
            hidden("-", 16, 4, 0),
            hidden("-", 12, 4, 0),
            hidden("-", 8, 4, 0),
            hidden("-", 4, 4, 0),
            hidden("-", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_ISAR3_EL1",
        crm: 2,
        op2: 3,
        fields: &[
            hidden("-", 28, 4, 0),
            hidden("-", 24, 4, 0),
            hidden("-", 20, 4, 0),
            hidden("-", 16, 4, 0),
            hidden("-", 12, 4, 0),
            hidden("-", 8, 4, 0),
            hidden("-", 4, 4, 0),
            hidden("-", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_ISAR4_EL1",
        crm: 2,
        op2: 4,
        fields: &[
            hidden("SWP_frac", 28, 4, 0),
            hidden("PSR_M", 24, 4, 0),
            hidden("SynchPrim_frac", 20, 4, 0),
            hidden("Barrier", 16, 4, 0),
            hidden("SMC", 12, 4, 0),
            hidden("Writeback", 8, 4, 0),
            hidden("WithShifts", 4, 4, 0),
            hidden("Unpriv", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_ISAR5_EL1",
        crm: 2,
        op2: 5,
        fields: &[
            hidden("RDM", 24, 4, 0),
            visible("CRC32", 16, 4),
            visible("SHA2", 12, 4),
            visible("SHA1", 8, 4),
            visible("AES", 4, 4),
            hidden("SEVL", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_MMFR4_EL1",
        crm: 2,
        op2: 6,
        fields: &[
            hidden("EVT", 28, 4, 0),
            hidden("CCIDX", 24, 4, 0),
            hidden("LSM", 20, 4, 0),
            hidden("HPDS", 16, 4, 0),
            hidden("CnP", 12, 4, 0),
            hidden("XNX", 8, 4, 0),
            hidden("AC2", 4, 4, 0),
            hidden("SpecSEI", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_ISAR6_EL1",
        crm: 2,
        op2: 7,
        fields: &[
            visible("I8MM", 24, 4),
            visible("BF16", 20, 4),
            hidden("SPECRES", 16, 4, 0),
            visible("SB", 12, 4),
            visible("FHM", 8, 4),
            visible("DP", 4, 4),
            hidden("JSCVT", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "MVFR0_EL1",
        crm: 3,
        op2: 0,
        fields: &[
            hidden("FPRound", 28, 4, 0),
            hidden("FPShVec", 24, 4, 0),
            hidden("FPSqrt", 20, 4, 0),
            hidden("FPDivide", 16, 4, 0),
            hidden("FPTrap", 12, 4, 0),
            visible("FPDP", 8, 4),
            hidden("FPSP", 4, 4, 0),
            hidden("SIMDReg", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "MVFR1_EL1",
        crm: 3,
        op2: 1,
        fields: &[
            visible("SIMDFMAC", 28, 4),
            visible("FPHP", 24, 4),
            visible("SIMDHP", 20, 4),
            visible("SIMDSP", 16, 4),
            visible("SIMDInt", 12, 4),
            visible("SIMDLS", 8, 4),
            hidden("FPDNaN", 4, 4, 0),
            hidden("FPFtZ", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "MVFR2_EL1",
        crm: 3,
        op2: 2,
        fields: &[hidden("FPMisc", 4, 4, 0), hidden("SIMDMisc", 0, 4, 0)],
    },
    FtrReg {
        name: "ID_PFR2_EL1",
        crm: 3,
        op2: 4,
        fields: &[visible("SSBS", 4, 4), hidden("CSV3", 0, 4, 0)],
    },
    FtrReg {
        name: "ID_DFR1_EL1",
        crm: 3,
        op2: 5,
        fields: &[hidden("MTPMU", 0, 4, 0)],
    },
    FtrReg {
        name: "ID_MMFR5_EL1",
        crm: 3,
        op2: 6,
        fields: &[hidden("ETS", 0, 4, 0)],
    },
    FtrReg {
        name: "ID_AA64PFR0_EL1",
        crm: 4,
        op2: 0,
        fields: &[
            hidden("CSV3", 60, 4, 0),
            hidden("CSV2", 56, 4, 0),
            visible("DIT", 48, 4),
            hidden("AMU", 44, 4, 0),
            hidden("MPAM", 40, 4, 0),
            hidden("SEL2", 36, 4, 0),
            hidden("SVE", 32, 4, 0), // Linux: visible with CONFIG_ARM64_SVE
            hidden("RAS", 28, 4, 0),
            hidden("GIC", 24, 4, 0),
            visible("AdvSIMD", 20, 4),
            visible("FP", 16, 4),
            hidden("EL3", 12, 4, 0),
            hidden("EL2", 8, 4, 0),
            hidden("EL1", 4, 4, 1),
            hidden("EL0", 0, 4, 1),
        ],
    },
    FtrReg {
        name: "ID_AA64PFR1_EL1",
        crm: 4,
        op2: 1,
        fields: &[
            hidden("SME", 24, 4, 0), // Linux: visible with CONFIG_ARM64_SME
            hidden("MPAM_frac", 16, 4, 0),
            hidden("RAS_frac", 12, 4, 0),
            hidden("MTE", 8, 4, 0), // Linux: visible with CONFIG_ARM64_MTE
            visible("SSBS", 4, 4),
            hidden("BT", 0, 4, 0), // Linux: visible with CONFIG_ARM64_BTI
        ],
    },
    FtrReg {
        name: "ID_AA64PFR2_EL1",
        crm: 4,
        op2: 2,
        fields: &[visible("FPMR", 32, 4)],
    },
    FtrReg {
        name: "ID_AA64ZFR0_EL1",
        crm: 4,
        op2: 4,
        fields: &[
            hidden("F64MM", 56, 4, 0),   // Linux: visible with CONFIG_ARM64_SVE
            hidden("F32MM", 52, 4, 0),   // Linux: visible with CONFIG_ARM64_SVE
            hidden("I8MM", 44, 4, 0),    // Linux: visible with CONFIG_ARM64_SVE
            hidden("SM4", 40, 4, 0),     // Linux: visible with CONFIG_ARM64_SVE
            hidden("SHA3", 32, 4, 0),    // Linux: visible with CONFIG_ARM64_SVE
            hidden("B16B16", 24, 4, 0),  // Linux: visible with CONFIG_ARM64_SVE
            hidden("BF16", 20, 4, 0),    // Linux: visible with CONFIG_ARM64_SVE
            hidden("BitPerm", 16, 4, 0), // Linux: visible with CONFIG_ARM64_SVE
            hidden("AES", 4, 4, 0),      // Linux: visible with CONFIG_ARM64_SVE
            hidden("SVEver", 0, 4, 0),   // Linux: visible with CONFIG_ARM64_SVE
        ],
    },
    FtrReg {
        name: "ID_AA64SMFR0_EL1",
        crm: 4,
        op2: 5,
        fields: &[
            hidden("FA64", 63, 1, 0),    // Linux: visible with CONFIG_ARM64_SME
            hidden("LUTv2", 60, 1, 0),   // Linux: visible with CONFIG_ARM64_SME
            hidden("SMEver", 56, 4, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("I16I64", 52, 4, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("F64F64", 48, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("I16I32", 44, 4, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("B16B16", 43, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("F16F16", 42, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("F8F16", 41, 1, 0),   // Linux: visible with CONFIG_ARM64_SME
            hidden("F8F32", 40, 1, 0),   // Linux: visible with CONFIG_ARM64_SME
            hidden("I8I32", 36, 4, 0),   // Linux: visible with CONFIG_ARM64_SME
            hidden("F16F32", 35, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("B16F32", 34, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("BI32I32", 33, 1, 0), // Linux: visible with CONFIG_ARM64_SME
            hidden("F32F32", 32, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("SF8FMA", 30, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("SF8DP4", 29, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
            hidden("SF8DP2", 28, 1, 0),  // Linux: visible with CONFIG_ARM64_SME
        ],
    },
    FtrReg {
        name: "ID_AA64FPFR0_EL1",
        crm: 4,
        op2: 7,
        fields: &[
            visible("F8CVT", 31, 1),
            visible("F8FMA", 30, 1),
            visible("F8DP4", 29, 1),
            visible("F8DP2", 28, 1),
            visible("F8E4M3", 1, 1),
            visible("F8E5M2", 0, 1),
        ],
    },
    FtrReg {
        name: "ID_AA64DFR0_EL1",
        crm: 5,
        op2: 0,
        fields: &[
            hidden("DoubleLock", 36, 4, 0),
            hidden("PMSVer", 32, 4, 0),
            hidden("CTX_CMPs", 28, 4, 0),
            hidden("WRPs", 20, 4, 0),
            hidden("BRPs", 12, 4, 0),
            hidden("PMUVer", 8, 4, 0),
            hidden("DebugVer", 0, 4, 6),
        ],
    },
    FtrReg {
        name: "ID_AA64DFR1_EL1",
        crm: 5,
        op2: 1,
        fields: &[],
    },
    FtrReg {
        name: "ID_AA64ISAR0_EL1",
        crm: 6,
        op2: 0,
        fields: &[
            visible("RNDR", 60, 4),
            hidden("TLB", 56, 4, 0),
            visible("TS", 52, 4),
            visible("FHM", 48, 4),
            visible("DP", 44, 4),
            visible("SM4", 40, 4),
            visible("SM3", 36, 4),
            visible("SHA3", 32, 4),
            visible("RDM", 28, 4),
            visible("ATOMIC", 20, 4),
            visible("CRC32", 16, 4),
            visible("SHA2", 12, 4),
            visible("SHA1", 8, 4),
            visible("AES", 4, 4),
        ],
    },
    FtrReg {
        name: "ID_AA64ISAR1_EL1",
        crm: 6,
        op2: 1,
        fields: &[
            hidden("XS", 56, 4, 0),
            visible("I8MM", 52, 4),
            visible("DGH", 48, 4),
            visible("BF16", 44, 4),
            hidden("SPECRES", 40, 4, 0),
            visible("SB", 36, 4),
            visible("FRINTTS", 32, 4),
            hidden("GPI", 28, 4, 0), // Linux: visible with CONFIG_ARM64_PTR_AUTH
            hidden("GPA", 24, 4, 0), // Linux: visible with CONFIG_ARM64_PTR_AUTH
            visible("LRCPC", 20, 4),
            visible("FCMA", 16, 4),
            visible("JSCVT", 12, 4),
            hidden("API", 8, 4, 0), // Linux: visible with CONFIG_ARM64_PTR_AUTH
            hidden("APA", 4, 4, 0), // Linux: visible with CONFIG_ARM64_PTR_AUTH
            visible("DPB", 0, 4),
        ],
    },
    FtrReg {
        name: "ID_AA64ISAR2_EL1",
        crm: 6,
        op2: 2,
        fields: &[
            visible("LUT", 56, 4),
            visible("CSSC", 52, 4),
            visible("RPRFM", 48, 4),
            hidden("CLRBHB", 28, 4, 0),
            visible("BC", 20, 4),
            visible("MOPS", 16, 4),
            hidden("APA3", 12, 4, 0), // Linux: visible with CONFIG_ARM64_PTR_AUTH
            hidden("GPA3", 8, 4, 0),  // Linux: visible with CONFIG_ARM64_PTR_AUTH
            visible("RPRES", 4, 4),
            visible("WFxT", 0, 4),
        ],
    },
    FtrReg {
        name: "ID_AA64ISAR3_EL1",
        crm: 6,
        op2: 3,
        fields: &[visible("FAMINMAX", 4, 4)],
    },
    FtrReg {
        name: "ID_AA64MMFR0_EL1",
        crm: 7,
        op2: 0,
        fields: &[
            visible("ECV", 60, 4),
            hidden("FGT", 56, 4, 0),
            hidden("EXS", 44, 4, 0),
            hidden("TGRAN4_2", 40, 4, 1),
            hidden("TGRAN64_2", 36, 4, 1),
            hidden("TGRAN16_2", 32, 4, 1),
            hidden("TGRAN4", 28, 4, 15),
            hidden("TGRAN64", 24, 4, 15),
            hidden("TGRAN16", 20, 4, 0),
            hidden("BIGENDEL0", 16, 4, 0),
            hidden("SNSMEM", 12, 4, 0),
            hidden("BIGEND", 8, 4, 0),
            hidden("ASIDBITS", 4, 4, 0),
            hidden("PARANGE", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_AA64MMFR1_EL1",
        crm: 7,
        op2: 1,
        fields: &[
            hidden("ECBHB", 60, 4, 0),
            hidden("TIDCP1", 52, 4, 0),
            visible("AFP", 44, 4),
            hidden("HCX", 40, 4, 0),
            hidden("ETS", 36, 4, 0),
            hidden("TWED", 32, 4, 0),
            hidden("XNX", 28, 4, 0),
            hidden("SpecSEI", 24, 4, 0),
            hidden("PAN", 20, 4, 0),
            hidden("LO", 16, 4, 0),
            hidden("HPDS", 12, 4, 0),
            hidden("VH", 8, 4, 0),
            hidden("VMIDBits", 4, 4, 0),
            hidden("HAFDBS", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_AA64MMFR2_EL1",
        crm: 7,
        op2: 2,
        fields: &[
            hidden("E0PD", 60, 4, 0),
            hidden("EVT", 56, 4, 0),
            hidden("BBM", 52, 4, 0),
            hidden("TTL", 48, 4, 0),
            hidden("FWB", 40, 4, 0),
            hidden("IDS", 36, 4, 0),
            visible("AT", 32, 4),
            hidden("ST", 28, 4, 0),
            hidden("NV", 24, 4, 0),
            hidden("CCIDX", 20, 4, 0),
            hidden("VARange", 16, 4, 0),
            hidden("IESB", 12, 4, 0),
            hidden("LSM", 8, 4, 0),
            hidden("UAO", 4, 4, 0),
            hidden("CnP", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_AA64MMFR3_EL1",
        crm: 7,
        op2: 3,
        fields: &[
            hidden("S1POE", 16, 4, 0), // Linux: visible with CONFIG_ARM64_POE
            hidden("S1PIE", 8, 4, 0),
            hidden("TCRX", 0, 4, 0),
        ],
    },
    FtrReg {
        name: "ID_AA64MMFR4_EL1",
        crm: 7,
        op2: 4,
        fields: &[hidden("E2H0", 24, 4, 0)],
    },
];

/// `mrs` of `S3_0_C<crm>_<op2>`, an ID register (reserved ones read as
/// zero at EL1, ARM ARM D17.1.3).
macro_rules! mrs_id {
    ($crm:literal, $op2:literal) => {{
        let v: u64;
        // SAFETY: reads an ID register; no side effect.
        unsafe {
            core::arch::asm!(
                concat!("mrs {}, S3_0_C0_C", $crm, "_", $op2),
                out(reg) v,
                options(nomem, nostack, preserves_flags)
            )
        };
        v
    }};
}

/// This CPU's value of the tracked register at (`crm`, `op2`).
fn read_ftr_reg(crm: u8, op2: u8) -> u64 {
    match (crm, op2) {
        (2, 0) => mrs_id!(2, 0),
        (2, 1) => mrs_id!(2, 1),
        (2, 2) => mrs_id!(2, 2),
        (2, 3) => mrs_id!(2, 3),
        (2, 4) => mrs_id!(2, 4),
        (2, 5) => mrs_id!(2, 5),
        (2, 6) => mrs_id!(2, 6),
        (2, 7) => mrs_id!(2, 7),
        (3, 0) => mrs_id!(3, 0),
        (3, 1) => mrs_id!(3, 1),
        (3, 2) => mrs_id!(3, 2),
        (3, 4) => mrs_id!(3, 4),
        (3, 5) => mrs_id!(3, 5),
        (3, 6) => mrs_id!(3, 6),
        (4, 0) => mrs_id!(4, 0),
        (4, 1) => mrs_id!(4, 1),
        (4, 2) => mrs_id!(4, 2),
        (4, 4) => mrs_id!(4, 4),
        (4, 5) => mrs_id!(4, 5),
        (4, 7) => mrs_id!(4, 7),
        (5, 0) => mrs_id!(5, 0),
        (5, 1) => mrs_id!(5, 1),
        (6, 0) => mrs_id!(6, 0),
        (6, 1) => mrs_id!(6, 1),
        (6, 2) => mrs_id!(6, 2),
        (6, 3) => mrs_id!(6, 3),
        (7, 0) => mrs_id!(7, 0),
        (7, 1) => mrs_id!(7, 1),
        (7, 2) => mrs_id!(7, 2),
        (7, 3) => mrs_id!(7, 3),
        (7, 4) => mrs_id!(7, 4),
        _ => 0,
    }
}

/// The system's values of the tracked registers, read once (from the first
/// CPU to need them: the CPUs this kernel runs on are all alike).
static SYS_VAL: spin::Once<[u64; ARM64_FTR_REGS.len()]> = spin::Once::new();

/// What EL0 reads from the register `id`, or None if the read is not
/// emulated and so is an undefined instruction (Linux's
/// `emulate_sys_reg`).
pub fn emulate_sys_reg(id: SysRegId) -> Option<u64> {
    if !id.is_emulated() {
        return None;
    }
    if id.crm == 0 {
        return match id.op2 {
            // MIDR_EL1: the real model, so programs can pick tuned code.
            0 => Some(MIDR_EL1.get()),
            // MPIDR_EL1: only "multiprocessor", never which CPU this is.
            5 => Some(SYS_MPIDR_SAFE_VAL),
            // REVIDR_EL1: IMPLEMENTATION DEFINED, emulated as 0.
            6 => Some(0),
            _ => None,
        };
    }
    let sys =
        SYS_VAL.call_once(|| core::array::from_fn(|i| read_ftr_reg(ARM64_FTR_REGS[i].crm, ARM64_FTR_REGS[i].op2)));
    Some(
        ARM64_FTR_REGS
            .iter()
            .zip(sys)
            .find(|(r, _)| r.crm == id.crm && r.op2 == id.op2)
            .map_or(0, |(r, &v)| r.user_value(v)),
    )
}

/// MPIDR_EL1 as EL0 reads it: bit 31 (RES1) alone.
pub const SYS_MPIDR_SAFE_VAL: u64 = 1 << 31;

/// Completes an EL0 `mrs` of `id` into `rt` and steps past it, if the
/// read is emulated (Linux's `do_emulate_mrs`); false if it is not, and
/// the instruction is then undefined for the program.
pub fn do_emulate_mrs(regs: &mut PtRegs, id: SysRegId, rt: usize) -> bool {
    let Some(val) = emulate_sys_reg(id) else {
        return false;
    };
    // Rt = 31 is XZR: the value is discarded.
    if let Some(r) = regs.regs.get_mut(rt) {
        *r = val;
    }
    regs.pc = regs.pc.wrapping_add(4);
    true
}
