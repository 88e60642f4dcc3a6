//! What a kprobe may do with the instruction it replaces.
//!
//! [`classify`] is Linux 6.12's `arm_kprobe_decode_insn()` without the
//! atomic-sequence scan (that is [`in_exclusive_sequence`]):
//!
//! 1. LDR (literal) and LDRSW (literal) to a general-purpose register are
//!    simulated (`simulate_ldr_literal`, `simulate_ldrsw_literal`).
//! 2. NOP is simulated (`simulate_nop`: cheaper than a trip to the slot).
//! 3. Anything `aarch64_insn_is_steppable()` accepts is stepped out of line.
//! 4. Of the rest, B.cond, CBZ/CBNZ, TBZ/TBNZ, ADR/ADRP, B/BL and BR/BLR/RET
//!    are simulated; everything else is rejected.
//!
//! `aarch64_insn_is_steppable()` refuses, in the branch/exception/system
//! class (bits 28:26 = 0b101): every branch, including the FEAT_PAuth
//! BRAA/BLRAA/RETAA families; MSR (immediate), which covers every PSTATE
//! write (DAIFSet/Clr, SPSel, PAN, UAO, SSBS, TCO, CFINV/XAFLAG/AXFLAG, ...);
//! MSR (register); the whole exception-generation group (SVC, HVC, SMC, BRK,
//! HLT, DCPS1-3, and unallocated words in it); ERET, ERETAA, ERETAB; MRS of
//! DAIF (stepped, it would read the step's mask); and every HINT except NOP, XPACLRI, PACIA1716,
//! PACIB1716, PACIAZ, PACIASP, PACIBZ, PACIBSP and BTI (all four targets).
//! The AUT* hints (AUTIASP, AUTIBSP, AUTIAZ, AUTIBZ, AUTIA1716, AUTIB1716)
//! are *rejected*: with FEAT_FPAC a failed authentication faults, which must
//! not happen in the slot (Linux commit "arm64: kprobe: disable probe of
//! ptrauth instruction", FEAT_FPAC support). SYS/SYSL (DC, IC, TLBI, AT), barriers,
//! CLREX and every other MRS are stepped. Outside that class it refuses literal
//! loads, PRFM (literal) and ADR/ADRP (`aarch64_insn_uses_literal()`), the
//! whole load/store-exclusive group with o2 = 0 (`aarch64_insn_is_exclusive()`:
//! LDXR/STXR/LDAXR/STLXR, LDXP/STXP/LDAXP/STLXP in every size, and — because
//! that mask also covers them — CASP/CASPA/CASPL/CASPAL), and the FEAT_MOPS
//! CPY*/SET* instructions ("arm64: probes: Disable kprobes/uprobes on MOPS
//! instructions", v6.13, backported to 6.12.y). LSE atomics (LDADD, SWP, CAS, ...) and
//! load-acquire/store-release (LDAR, STLR, LDAPR) are stepped.
//!
//! # Deliberate deviations from Linux 6.12
//!
//! Linux steps out of line some instructions its masks do not know, whose
//! result depends on the address they execute at: run from the slot they
//! would branch, load or authenticate relative to the slot. The ARM ARM says
//! these are PC-relative, so they are rejected here, as
//! [`RejectReason::PcRelative`]:
//!
//! - `LDR St|Dt|Qt, label` (LDR (literal, SIMD&FP));
//! - `BC.cond` (FEAT_HBC);
//! - `RETAASPPC`/`RETABSPPC` (FEAT_PAuth_LR), whose immediate is
//!   the offset of the signing instruction from the return;
//! - `AUTIASPPC`/`AUTIBSPPC` (immediate) (FEAT_PAuth_LR), likewise;
//! - `PACIASPPC`/`PACIBSPPC`/`PACNBIASPPC`/`PACNBIBSPPC` (FEAT_PAuth_LR),
//!   which sign with their own address as a modifier;
//! - the compare-and-branch space of FEAT_CMPBR (`CB<cc>`, `CBB<cc>`,
//!   `CBH<cc>`: bits 30:26 = 0b11101); before FEAT_CMPBR it is
//!   unallocated and stepping it would only have raised an undefined
//!   instruction exception.
//!
//! and the rest of the unconditional branch (register) space that is not
//! BR/BLR/RET — RETAASPPCR/RETABSPPCR (FEAT_PAuth_LR), DRPS, unallocated
//! words — is rejected as [`RejectReason::Branch`], since a branch stepped
//! out of line loses its target when the PC is reset to the probe address
//! plus 4. Words Linux rejects keep Linux's reason.

use crate::decode;

/// Why a kprobe cannot be placed on an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// The exception-generation group: SVC, HVC, SMC, BRK, HLT, DCPS1-3.
    ExceptionGeneration,
    /// ERET, ERETAA, ERETAB.
    ExceptionReturn,
    /// MSR (immediate): writes PSTATE fields (DAIF, SPSel, PAN, ...).
    MsrImmediate,
    /// MSR (register): writes a system register.
    MsrRegister,
    /// MRS of a register other than DAIF: may read differently in the slot.
    Mrs,
    /// A HINT that is not NOP, XPACLRI, PAC*, or BTI (AUT*, WFE, WFI, YIELD,
    /// SEV, ESB, CSDB, ...).
    Hint,
    /// A branch that is neither simulated nor safe to step: the FEAT_PAuth
    /// BRAA/BRAAZ/BRAB/BRABZ, BLRAA/.../BLRABZ, RETAA/RETAB, and the rest
    /// of the branch (register) space (RETAASPPCR, DRPS, ...).
    Branch,
    /// PRFM (literal): PC-relative, not simulated.
    Literal,
    /// A load/store exclusive (or CASP, which shares its encoding group):
    /// the step's exception would clear the monitor.
    Exclusive,
    /// A FEAT_MOPS CPY*/SET* instruction: prologue, main and epilogue must
    /// run consecutively.
    Mops,
    /// PC-relative and not simulated, where Linux 6.12 would step it from
    /// the slot (see the module documentation).
    PcRelative,
}

/// How a simulated instruction is emulated, Linux's `simulate_*` handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimKind {
    /// NOP: just advance the PC.
    Nop,
    /// B.
    B,
    /// BL.
    Bl,
    /// B.cond.
    BCond,
    /// CBZ.
    Cbz,
    /// CBNZ.
    Cbnz,
    /// TBZ.
    Tbz,
    /// TBNZ.
    Tbnz,
    /// BR.
    Br,
    /// BLR.
    Blr,
    /// RET.
    Ret,
    /// ADR.
    Adr,
    /// ADRP.
    Adrp,
    /// LDR Wt, label.
    LdrLiteral32,
    /// LDR Xt, label.
    LdrLiteral64,
    /// LDRSW Xt, label.
    LdrswLiteral,
}

/// The decision for one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Cannot be probed.
    Rejected(RejectReason),
    /// Emulated in the BRK handler; no slot is used (`INSN_GOOD_NO_SLOT`).
    Simulate(SimKind),
    /// Copied to a slot and single-stepped there (`INSN_GOOD`).
    Steppable,
}

/// Bits 28:26 = 0b101: branch, exception generation and system
/// (Linux's `aarch64_insn_is_class_branch_sys()`).
const fn is_class_branch_sys(insn: u32) -> bool {
    insn & 0x1c00_0000 == 0x1400_0000
}

/// Linux's `aarch64_insn_is_branch()`.
const fn is_branch(insn: u32) -> bool {
    use decode::*;
    is_b(insn)
        || is_bl(insn)
        || is_cbz(insn)
        || is_cbnz(insn)
        || is_tbz(insn)
        || is_tbnz(insn)
        || is_ret(insn)
        || is_ret_auth(insn)
        || is_br(insn)
        || is_br_auth(insn)
        || is_blr(insn)
        || is_blr_auth(insn)
        || is_b_cond(insn)
}

const fn is_exception(insn: u32) -> bool {
    insn & 0xff00_0000 == 0xd400_0000
}
const fn is_eret(insn: u32) -> bool {
    insn == 0xd69f_03e0
}
const fn is_eret_auth(insn: u32) -> bool {
    insn & 0xffff_fbff == 0xd69f_0bff
}
const fn is_mrs(insn: u32) -> bool {
    insn & 0xfff0_0000 == 0xd530_0000
}
const fn is_msr_imm(insn: u32) -> bool {
    insn & 0xfff8_f01f == 0xd500_401f
}
const fn is_msr_reg(insn: u32) -> bool {
    insn & 0xfff0_0000 == 0xd510_0000
}

/// op0:op1:CRn:CRm:op2 of DAIF, as Linux's `AARCH64_INSN_SPCLREG_DAIF`.
const SYSREG_DAIF: u32 = 0xda11;

/// Linux's `aarch64_insn_extract_system_reg()`.
const fn system_reg(insn: u32) -> u32 {
    (insn & 0x1f_ffe0) >> 5
}

/// Linux's `aarch64_insn_is_steppable_hint()` (v6.12): NOP, XPACLRI, the
/// PAC* signing hints and BTI.
const fn is_steppable_hint(insn: u32) -> bool {
    match decode::hint_imm(insn) {
        Some(0x00) => true,                      // NOP
        Some(0x07) => true,                      // XPACLRI
        Some(0x08 | 0x0a) => true,               // PACIA1716, PACIB1716
        Some(0x18..=0x1b) => true,               // PACIAZ, PACIASP, PACIBZ, PACIBSP
        Some(0x20 | 0x22 | 0x24 | 0x26) => true, // BTI, BTI c, BTI j, BTI jc
        _ => false,
    }
}

/// Linux's `aarch64_insn_uses_literal()`.
const fn uses_literal(insn: u32) -> bool {
    decode::is_ldr_literal(insn)
        || decode::is_ldrsw_literal(insn)
        || decode::is_adr(insn)
        || decode::is_adrp(insn)
        || decode::is_prfm_literal(insn)
}

/// Load/store exclusive with o2 = 0 (Linux's `aarch64_insn_is_exclusive()`).
const fn is_exclusive(insn: u32) -> bool {
    insn & 0x3f80_0000 == 0x0800_0000
}

/// FEAT_MOPS CPY*/SET* (Linux's `aarch64_insn_is_mops()`).
const fn is_mops(insn: u32) -> bool {
    insn & 0x3b20_0c00 == 0x1900_0400
}

/// Linux's `aarch64_insn_is_load_ex()`: bits 29:24 = 0b001000 with L = 1.
/// The mask ignores o2, so it also matches LDAR, LDLAR and CASA/CASAL.
pub const fn is_load_exclusive(insn: u32) -> bool {
    insn & 0x3f40_0000 == 0x0840_0000
}

/// Linux's `aarch64_insn_is_store_ex()`: bits 29:24 = 0b001000 with L = 0.
/// The mask ignores o2, so it also matches STLR, STLLR and CAS/CASL.
pub const fn is_store_exclusive(insn: u32) -> bool {
    insn & 0x3f40_0000 == 0x0800_0000
}

/// Why an instruction Linux 6.12 would step out of line must not be: its
/// result depends on its own address, or it is a branch, whose target the
/// post-step fix-up (PC = probe address + 4) would lose. See the module
/// documentation.
const fn linux_gap(insn: u32) -> Option<RejectReason> {
    if decode::is_ldr_literal_fp(insn)
        || decode::is_bc_cond(insn)
        // RETAASPPC/RETABSPPC: 0101 0101 00 o imm16 11111.
        || insn & 0xffc0_001f == 0x5500_001f
        // AUTIASPPC/AUTIBSPPC: 1111 0011 10 o imm16 11111; words with
        // another Rd are unallocated, rejecting them too costs nothing.
        || insn & 0xffc0_0000 == 0xf380_0000
        // PACIASPPC, PACIBSPPC, PACNBIASPPC, PACNBIBSPPC: DP (1 source),
        // opcode2 = 00001, opcode = 10x00x.
        || insn & 0xffff_d800 == 0xdac1_8000
        // FEAT_CMPBR compare and branch: op0 = x11 in branch/system space.
        || insn & 0x7c00_0000 == 0x7400_0000
    {
        Some(RejectReason::PcRelative)
    } else if insn & 0xfe00_0000 == 0xd600_0000 && decode::decode_br_blr_ret(insn).is_none() {
        // The rest of the unconditional branch (register) space: RETAASPPCR,
        // RETABSPPCR (FEAT_PAuth_LR), DRPS and unallocated words.
        Some(RejectReason::Branch)
    } else {
        None
    }
}

/// Why Linux's `aarch64_insn_is_steppable()` refuses `insn`, or `None` if it
/// may be stepped out of line.
fn linux_not_steppable(insn: u32) -> Option<RejectReason> {
    if is_class_branch_sys(insn) {
        return if is_branch(insn) {
            Some(RejectReason::Branch)
        } else if is_msr_imm(insn) {
            Some(RejectReason::MsrImmediate)
        } else if is_msr_reg(insn) {
            Some(RejectReason::MsrRegister)
        } else if is_exception(insn) {
            Some(RejectReason::ExceptionGeneration)
        } else if is_eret(insn) || is_eret_auth(insn) {
            Some(RejectReason::ExceptionReturn)
        } else if is_mrs(insn) && system_reg(insn) == SYSREG_DAIF {
            Some(RejectReason::Mrs)
        } else if decode::is_hint(insn) && !is_steppable_hint(insn) {
            Some(RejectReason::Hint)
        } else {
            None
        };
    }
    if uses_literal(insn) {
        Some(RejectReason::Literal)
    } else if is_exclusive(insn) {
        Some(RejectReason::Exclusive)
    } else if is_mops(insn) {
        Some(RejectReason::Mops)
    } else {
        None
    }
}

/// The simulation handler Linux's `arm_probe_decode_insn()` picks for an
/// instruction it cannot step.
fn simulation(insn: u32) -> Option<SimKind> {
    use decode::*;
    Some(if is_b_cond(insn) {
        SimKind::BCond
    } else if is_cbz(insn) {
        SimKind::Cbz
    } else if is_cbnz(insn) {
        SimKind::Cbnz
    } else if is_tbz(insn) {
        SimKind::Tbz
    } else if is_tbnz(insn) {
        SimKind::Tbnz
    } else if is_adr(insn) {
        SimKind::Adr
    } else if is_adrp(insn) {
        SimKind::Adrp
    } else if is_b(insn) {
        SimKind::B
    } else if is_bl(insn) {
        SimKind::Bl
    } else if is_br(insn) {
        SimKind::Br
    } else if is_blr(insn) {
        SimKind::Blr
    } else if is_ret(insn) {
        SimKind::Ret
    } else {
        return None;
    })
}

/// Classifies `insn` for a kprobe, as Linux 6.12's `arm_kprobe_decode_insn()`
/// (see the module documentation for the rules and the deviations).
pub fn classify(insn: u32) -> Class {
    if decode::is_ldrsw_literal(insn) {
        return Class::Simulate(SimKind::LdrswLiteral);
    }
    if decode::is_ldr_literal(insn) {
        let kind = if insn & (1 << 30) != 0 {
            SimKind::LdrLiteral64
        } else {
            SimKind::LdrLiteral32
        };
        return Class::Simulate(kind);
    }
    if decode::is_nop(insn) {
        return Class::Simulate(SimKind::Nop);
    }
    match linux_not_steppable(insn).or(linux_gap(insn)) {
        None => Class::Steppable,
        Some(reason) => match simulation(insn) {
            Some(kind) => Class::Simulate(kind),
            None => Class::Rejected(reason),
        },
    }
}

/// How far back Linux looks for an open exclusive sequence: 128 bytes
/// (`MAX_ATOMIC_CONTEXT_SIZE`, "the architecture allows a load-exclusive /
/// store-exclusive pair to be at most 128 bytes apart" in practice).
pub const MAX_ATOMIC_CONTEXT_SIZE: usize = 32;

/// Whether `code[index]` lies inside a load-exclusive/store-exclusive
/// sequence, where a probe's exception would clear the exclusive monitor
/// and make the store fail forever. `code` starts at the function's entry
/// (the symbol kallsyms finds for the probe address).
///
/// As Linux's `is_probed_address_atomic()`: scan backwards from the
/// instruction before the probe, over at most [`MAX_ATOMIC_CONTEXT_SIZE`]
/// instructions and never before the function's entry; a store-exclusive
/// met first closes any sequence (false), a load-exclusive met first opens
/// one (true). Linux's masks are used as they are, so LDAR counts as a
/// load-exclusive and STLR as a store-exclusive here too. An `index` past
/// the end of `code` is scanned from the end.
pub fn in_exclusive_sequence(code: &[u32], index: usize) -> bool {
    let end = index.min(code.len());
    let start = end.saturating_sub(MAX_ATOMIC_CONTEXT_SIZE);
    for &insn in code[start..end].iter().rev() {
        if is_store_exclusive(insn) {
            return false;
        }
        if is_load_exclusive(insn) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use Class::*;
    use RejectReason::*;

    #[track_caller]
    fn check(insn: u32, want: Class) {
        assert_eq!(classify(insn), want, "insn {insn:#010x}");
    }

    #[test]
    fn exception_generation_is_rejected() {
        check(0xd4000001, Rejected(ExceptionGeneration)); // svc #0
        check(0xd4000002, Rejected(ExceptionGeneration)); // hvc #0
        check(0xd4000003, Rejected(ExceptionGeneration)); // smc #0
        check(0xd4200000, Rejected(ExceptionGeneration)); // brk #0
        check(0xd4200080, Rejected(ExceptionGeneration)); // brk #4 (a kprobe)
        check(0xd4400000, Rejected(ExceptionGeneration)); // hlt #0
        check(0xd4a00001, Rejected(ExceptionGeneration)); // dcps1
        check(0xd4a00003, Rejected(ExceptionGeneration)); // dcps3
    }

    #[test]
    fn eret_and_system_register_writes_are_rejected() {
        check(0xd69f03e0, Rejected(ExceptionReturn)); // eret
        check(0xd69f0bff, Rejected(ExceptionReturn)); // eretaa
        check(0xd69f0fff, Rejected(ExceptionReturn)); // eretab
        check(0xd50342df, Rejected(MsrImmediate)); // msr daifset, #2
        check(0xd50343ff, Rejected(MsrImmediate)); // msr daifclr, #3
        check(0xd500401f, Rejected(MsrImmediate)); // cfinv
        check(0xd51b4220, Rejected(MsrRegister)); // msr daif, x0
        check(0xd5181000, Rejected(MsrRegister)); // msr sctlr_el1, x0
    }

    #[test]
    fn mrs_is_stepped_except_daif() {
        // Linux's aarch64_insn_is_steppable: DAIF read in the slot would
        // show the mask the step runs under, not the probed code's.
        check(0xd53b4220, Rejected(Mrs)); // mrs x0, daif
        check(0xd53b4200, Steppable); // mrs x0, nzcv
        check(0xd538d080, Steppable); // mrs x0, tpidr_el1
        check(0xd53be040, Steppable); // mrs x0, cntvct_el0
    }

    #[test]
    fn hints_follow_linux_whitelist() {
        check(0xd503201f, Simulate(SimKind::Nop));
        for steppable in [
            0xd50320ff, 0xd503211f, 0xd503215f, 0xd503231f, 0xd503233f, 0xd503235f, 0xd503237f,
        ] {
            check(steppable, Steppable); // xpaclri, pacia1716, pacib1716, paciaz, paciasp, pacibz, pacibsp
        }
        for bti in [0xd503241f, 0xd503245f, 0xd503249f, 0xd50324df] {
            check(bti, Steppable);
        }
        for auth in [0xd503219f, 0xd50321df, 0xd503239f, 0xd50323bf, 0xd50323df, 0xd50323ff] {
            check(auth, Rejected(Hint)); // autia1716, autib1716, autiaz, autiasp, autibz, autibsp
        }
        for other in [
            0xd503203f, 0xd503205f, 0xd503207f, 0xd503209f, 0xd50320bf, 0xd503221f, 0xd503229f,
        ] {
            check(other, Rejected(Hint)); // yield, wfe, wfi, sev, sevl, esb, csdb
        }
    }

    #[test]
    fn system_instructions_and_barriers_are_stepped() {
        check(0xd5033fdf, Steppable); // isb
        check(0xd5033bbf, Steppable); // dmb ish
        check(0xd5033f9f, Steppable); // dsb sy
        check(0xd503305f, Steppable); // clrex
        check(0xd50b7520, Steppable); // ic ivau, x0
        check(0xd50b7b20, Steppable); // dc cvau, x0
        check(0xd508871f, Steppable); // tlbi vmalle1
    }

    #[test]
    fn branches_are_simulated() {
        check(0x14000001, Simulate(SimKind::B));
        check(0x94000001, Simulate(SimKind::Bl));
        check(0x54000040, Simulate(SimKind::BCond));
        check(0xb4000040, Simulate(SimKind::Cbz));
        check(0x35000043, Simulate(SimKind::Cbnz));
        check(0x36000040, Simulate(SimKind::Tbz));
        check(0xb7f80041, Simulate(SimKind::Tbnz));
        check(0xd61f0200, Simulate(SimKind::Br));
        check(0xd63f0100, Simulate(SimKind::Blr));
        check(0xd65f03c0, Simulate(SimKind::Ret));
        check(0x10000000, Simulate(SimKind::Adr));
        check(0xb0000001, Simulate(SimKind::Adrp));
        check(0x18000041, Simulate(SimKind::LdrLiteral32));
        check(0x58000040, Simulate(SimKind::LdrLiteral64));
        check(0x98ffffe2, Simulate(SimKind::LdrswLiteral));
    }

    #[test]
    fn authenticated_branches_are_rejected() {
        check(0xd65f0bff, Rejected(Branch)); // retaa
        check(0xd65f0fff, Rejected(Branch)); // retab
        check(0xd71f0801, Rejected(Branch)); // braa x0, x1
        check(0xd61f081f, Rejected(Branch)); // braaz x0
        check(0xd73f0801, Rejected(Branch)); // blraa x0, x1
        check(0xd63f0c1f, Rejected(Branch)); // blrabz x0
    }

    #[test]
    fn exclusives_are_rejected_but_lse_atomics_stepped() {
        check(0xc85f7c20, Rejected(Exclusive)); // ldxr x0, [x1]
        check(0xc8027c20, Rejected(Exclusive)); // stxr w2, x0, [x1]
        check(0xc85ffc20, Rejected(Exclusive)); // ldaxr x0, [x1]
        check(0xc802fc20, Rejected(Exclusive)); // stlxr w2, x0, [x1]
        check(0x085f7c20, Rejected(Exclusive)); // ldxrb w0, [x1]
        check(0x485f7c20, Rejected(Exclusive)); // ldxrh w0, [x1]
        check(0xc87f0c20, Rejected(Exclusive)); // ldxp x0, x3, [x1]
        check(0xc8220c20, Rejected(Exclusive)); // stxp w2, x0, x3, [x1]
        check(0x48207c82, Rejected(Exclusive)); // casp x0, x1, x2, x3, [x4] (Linux's mask)
        check(0xc8dffc20, Steppable); // ldar x0, [x1]
        check(0xc89ffc20, Steppable); // stlr x0, [x1]
        check(0xc8a27c20, Steppable); // cas x2, x0, [x1]
        check(0xf8220020, Steppable); // ldadd x2, x0, [x1]
        check(0xf8a28020, Steppable); // swpa x2, x0, [x1]
    }

    #[test]
    fn literals_the_kernel_does_not_simulate_are_rejected() {
        check(0xd8000040, Rejected(Literal)); // prfm pldl1keep, #8
        check(0x5c000040, Rejected(PcRelative)); // ldr d0, #8 (Linux would step it)
        check(0x1c000040, Rejected(PcRelative)); // ldr s0, #8
        check(0x9c000040, Rejected(PcRelative)); // ldr q0, #8
    }

    #[test]
    fn mops_are_rejected() {
        check(0x19010440, Rejected(Mops)); // cpyfp [x0]!, [x1]!, x2!
        check(0x19c00440, Rejected(Mops)); // setp [x0]!, x2!, x0 (op1 = 0b11: the SET* forms)
    }

    #[test]
    fn pc_relative_encodings_linux_would_step_are_rejected() {
        check(0x54000050, Rejected(PcRelative)); // bc.eq #8
        check(0x5500001f | 1 << 5, Rejected(PcRelative)); // retaasppc
        check(0xf380001f, Rejected(PcRelative)); // autiasppc
        check(0x74000000, Rejected(PcRelative)); // FEAT_CMPBR space
        check(0xf5000000, Rejected(PcRelative));
        check(0xdac1a3fe, Rejected(PcRelative)); // paciasppc
        check(0xdac183fe, Rejected(PcRelative)); // pacnbiasppc
        check(0xdac1903e, Steppable); // autiasppcr x1: register modifier, stepped as Linux does
    }

    #[test]
    fn rest_of_branch_register_space_is_rejected() {
        check(0xd65f0be1, Rejected(Branch)); // retaasppcr x1
        check(0xd6bf03e0, Rejected(Branch)); // drps
        check(0xd69f03e0, Rejected(ExceptionReturn)); // eret keeps Linux's reason
    }

    #[test]
    fn ordinary_instructions_are_stepped() {
        check(0xa9bf7bfd, Steppable); // stp x29, x30, [sp, #-16]!
        check(0x910003fd, Steppable); // mov x29, sp
        check(0xaa1e03e9, Steppable); // mov x9, x30
        check(0xf9400020, Steppable); // ldr x0, [x1]
        check(0x8b020020, Steppable); // add x0, x1, x2
        check(0x00000000, Steppable); // udf #0: Linux steps unallocated words
    }

    #[test]
    fn exclusive_sequence_scan_follows_linux() {
        let ldxr = 0xc85f7c20;
        let stxr = 0xc8027c20;
        let add = 0x91000400;
        let cbnz = 0x35ffffc2;
        let code = [0xa9bf7bfd, ldxr, add, stxr, cbnz, add];
        assert!(!in_exclusive_sequence(&code, 0));
        assert!(
            !in_exclusive_sequence(&code, 1),
            "the scan starts before the probed insn"
        );
        assert!(in_exclusive_sequence(&code, 2));
        assert!(in_exclusive_sequence(&code, 3));
        assert!(!in_exclusive_sequence(&code, 4));
        assert!(!in_exclusive_sequence(&code, 5));
        assert!(!in_exclusive_sequence(&code, 100));
    }

    #[test]
    fn exclusive_sequence_scan_is_bounded() {
        let mut code = [0x91000400u32; 40];
        code[0] = 0xc85f7c20; // ldxr
        assert!(in_exclusive_sequence(&code, 32));
        assert!(!in_exclusive_sequence(&code, 33), "at most 32 instructions back");
    }

    #[test]
    fn exclusive_sequence_scan_uses_linux_masks() {
        let ldar = 0xc8dffc20;
        let stlr = 0xc89ffc20;
        let add = 0x91000400;
        assert!(in_exclusive_sequence(&[ldar, add], 1));
        assert!(!in_exclusive_sequence(&[0xc85f7c20, stlr, add], 2));
    }
}
