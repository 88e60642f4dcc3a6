//! Field extractors for the branch and PC-relative classes.
//!
//! Each `decode_*` returns `None` unless `insn` is in its class (matched with
//! the same masks as Linux's `__AARCH64_INSN_FUNCS` in `asm/insn.h`), and
//! resolves PC-relative immediates against `pc`, the instruction's own
//! address, with wrapping arithmetic as the architecture does.

/// A condition code (ARM ARM C1.2.4), as in B.cond and CSEL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Cond {
    /// Equal: Z.
    Eq = 0,
    /// Not equal: !Z.
    Ne = 1,
    /// Carry set / unsigned higher or same: C.
    Cs = 2,
    /// Carry clear / unsigned lower: !C.
    Cc = 3,
    /// Minus: N.
    Mi = 4,
    /// Plus or zero: !N.
    Pl = 5,
    /// Overflow: V.
    Vs = 6,
    /// No overflow: !V.
    Vc = 7,
    /// Unsigned higher: C && !Z.
    Hi = 8,
    /// Unsigned lower or same: !C || Z.
    Ls = 9,
    /// Signed greater or equal: N == V.
    Ge = 10,
    /// Signed less: N != V.
    Lt = 11,
    /// Signed greater: !Z && N == V.
    Gt = 12,
    /// Signed less or equal: Z || N != V.
    Le = 13,
    /// Always.
    Al = 14,
    /// Also always (ARM ARM: `ConditionHolds()` never inverts 0b1111).
    Nv = 15,
}

impl Cond {
    /// The condition with encoding `bits & 0xf`.
    pub const fn from_bits(bits: u32) -> Cond {
        match bits & 0xf {
            0 => Cond::Eq,
            1 => Cond::Ne,
            2 => Cond::Cs,
            3 => Cond::Cc,
            4 => Cond::Mi,
            5 => Cond::Pl,
            6 => Cond::Vs,
            7 => Cond::Vc,
            8 => Cond::Hi,
            9 => Cond::Ls,
            10 => Cond::Ge,
            11 => Cond::Lt,
            12 => Cond::Gt,
            13 => Cond::Le,
            14 => Cond::Al,
            _ => Cond::Nv,
        }
    }

    /// Whether the condition holds for these flags: the ARM ARM's
    /// `ConditionHolds()` (J1.2), which Linux's `aarch64_insn_cond_check`
    /// table encodes case by case.
    pub const fn holds(self, f: Nzcv) -> bool {
        let bits = self as u8;
        let base = match bits >> 1 {
            0 => f.z,
            1 => f.c,
            2 => f.n,
            3 => f.v,
            4 => f.c && !f.z,
            5 => f.n == f.v,
            6 => f.n == f.v && !f.z,
            _ => true,
        };
        if bits & 1 == 1 && bits != 0xf {
            !base
        } else {
            base
        }
    }
}

/// The condition flags, PSTATE.{N,Z,C,V}.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nzcv {
    /// Negative.
    pub n: bool,
    /// Zero.
    pub z: bool,
    /// Carry.
    pub c: bool,
    /// Overflow.
    pub v: bool,
}

impl Nzcv {
    /// The flags from a saved PSTATE (SPSR_ELx layout: N, Z, C, V in bits
    /// 31..28, as `pt_regs.pstate` holds them).
    pub const fn from_pstate(pstate: u64) -> Nzcv {
        Nzcv {
            n: pstate & (1 << 31) != 0,
            z: pstate & (1 << 30) != 0,
            c: pstate & (1 << 29) != 0,
            v: pstate & (1 << 28) != 0,
        }
    }
}

/// Sign-extends the low `bits` bits of `value`.
const fn sign_extend(value: u32, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((value as i64) << shift) >> shift
}

const fn field(insn: u32, lsb: u32, width: u32) -> u32 {
    (insn >> lsb) & ((1 << width) - 1)
}

const fn rt(insn: u32) -> u8 {
    field(insn, 0, 5) as u8
}

const fn rn(insn: u32) -> u8 {
    field(insn, 5, 5) as u8
}

const fn pc_plus(pc: u64, offset: i64) -> u64 {
    pc.wrapping_add(offset as u64)
}

/// The byte offset of a B/BL (imm26 × 4), Linux's `bbl_displacement()`.
pub const fn imm26_offset(insn: u32) -> i64 {
    sign_extend(field(insn, 0, 26), 26) << 2
}

/// The byte offset of a B.cond, CBZ/CBNZ or LDR literal (imm19 × 4).
pub const fn imm19_offset(insn: u32) -> i64 {
    sign_extend(field(insn, 5, 19), 19) << 2
}

/// The byte offset of a TBZ/TBNZ (imm14 × 4).
pub const fn imm14_offset(insn: u32) -> i64 {
    sign_extend(field(insn, 5, 14), 14) << 2
}

/// The ADR/ADRP immediate immhi:immlo, sign-extended (bytes for ADR, pages
/// for ADRP).
pub const fn adr_imm(insn: u32) -> i64 {
    sign_extend(field(insn, 5, 19) << 2 | field(insn, 29, 2), 21)
}

/// `B` (`0x14000000`/`0xfc000000`).
pub const fn is_b(insn: u32) -> bool {
    insn & 0xfc00_0000 == 0x1400_0000
}
/// `BL`.
pub const fn is_bl(insn: u32) -> bool {
    insn & 0xfc00_0000 == 0x9400_0000
}
/// `B.cond` (not FEAT_HBC's BC.cond, which has bit 4 set).
pub const fn is_b_cond(insn: u32) -> bool {
    insn & 0xff00_0010 == 0x5400_0000
}
/// FEAT_HBC's `BC.cond`.
pub const fn is_bc_cond(insn: u32) -> bool {
    insn & 0xff00_0010 == 0x5400_0010
}
/// `CBZ` (32 or 64-bit).
pub const fn is_cbz(insn: u32) -> bool {
    insn & 0x7f00_0000 == 0x3400_0000
}
/// `CBNZ` (32 or 64-bit).
pub const fn is_cbnz(insn: u32) -> bool {
    insn & 0x7f00_0000 == 0x3500_0000
}
/// `TBZ`.
pub const fn is_tbz(insn: u32) -> bool {
    insn & 0x7f00_0000 == 0x3600_0000
}
/// `TBNZ`.
pub const fn is_tbnz(insn: u32) -> bool {
    insn & 0x7f00_0000 == 0x3700_0000
}
/// `BR Xn`.
pub const fn is_br(insn: u32) -> bool {
    insn & 0xffff_fc1f == 0xd61f_0000
}
/// `BLR Xn`.
pub const fn is_blr(insn: u32) -> bool {
    insn & 0xffff_fc1f == 0xd63f_0000
}
/// `RET Xn`.
pub const fn is_ret(insn: u32) -> bool {
    insn & 0xffff_fc1f == 0xd65f_0000
}
/// `BRAA`, `BRAAZ`, `BRAB`, `BRABZ` (FEAT_PAuth).
pub const fn is_br_auth(insn: u32) -> bool {
    insn & 0xfeff_f800 == 0xd61f_0800
}
/// `BLRAA`, `BLRAAZ`, `BLRAB`, `BLRABZ` (FEAT_PAuth).
pub const fn is_blr_auth(insn: u32) -> bool {
    insn & 0xfeff_f800 == 0xd63f_0800
}
/// `RETAA`, `RETAB` (FEAT_PAuth).
pub const fn is_ret_auth(insn: u32) -> bool {
    insn & 0xffff_fbff == 0xd65f_0bff
}
/// `ADR`.
pub const fn is_adr(insn: u32) -> bool {
    insn & 0x9f00_0000 == 0x1000_0000
}
/// `ADRP`.
pub const fn is_adrp(insn: u32) -> bool {
    insn & 0x9f00_0000 == 0x9000_0000
}
/// `LDR Wt|Xt, label` (general-purpose registers only).
pub const fn is_ldr_literal(insn: u32) -> bool {
    insn & 0xbf00_0000 == 0x1800_0000
}
/// `LDRSW Xt, label`.
pub const fn is_ldrsw_literal(insn: u32) -> bool {
    insn & 0xff00_0000 == 0x9800_0000
}
/// `LDR St|Dt|Qt, label` (SIMD&FP registers; opc 0b11 is unallocated).
pub const fn is_ldr_literal_fp(insn: u32) -> bool {
    insn & 0x3f00_0000 == 0x1c00_0000 && insn >> 30 != 0b11
}
/// `PRFM label`.
pub const fn is_prfm_literal(insn: u32) -> bool {
    insn & 0xff00_0000 == 0xd800_0000
}

/// `NOP`, exactly (Linux's `aarch64_insn_is_nop()`).
pub const fn is_nop(insn: u32) -> bool {
    insn == crate::encode::NOP
}

/// Any instruction in the HINT space (`HINT #imm`, which includes NOP,
/// YIELD, WFE, the PAC `*SP`/`*Z`/`*1716` forms, BTI, ...).
pub const fn is_hint(insn: u32) -> bool {
    insn & 0xffff_f01f == 0xd503_201f
}

/// The hint number CRm:op2 of a HINT, or `None` for anything else.
pub const fn hint_imm(insn: u32) -> Option<u8> {
    if is_hint(insn) {
        Some(field(insn, 5, 7) as u8)
    } else {
        None
    }
}

/// The immediate of a `BRK #imm16`, or `None` for anything else.
pub const fn brk_imm(insn: u32) -> Option<u16> {
    if insn & 0xffe0_001f == 0xd420_0000 {
        Some(field(insn, 5, 16) as u16)
    } else {
        None
    }
}

/// Whether `insn` is `BRK #imm`.
pub const fn is_brk(insn: u32, imm: u16) -> bool {
    matches!(brk_imm(insn), Some(i) if i == imm)
}

/// Whether `insn` is one of the instructions that may replace, or be
/// replaced by, another of them while other CPUs may be executing it: B,
/// BL, NOP or BRK (ARM ARM B2.2.5, "Concurrent modification and execution
/// of instructions"; Linux's former `__aarch64_insn_hotpatch_safe()`).
pub const fn is_hotpatch_class(insn: u32) -> bool {
    is_b(insn) || is_bl(insn) || is_nop(insn) || brk_imm(insn).is_some()
}

/// Whether `old` may be overwritten with `new` on live code without
/// stopping the other CPUs: both are in [`is_hotpatch_class`].
pub const fn aarch64_insn_hotpatch_safe(old: u32, new: u32) -> bool {
    is_hotpatch_class(old) && is_hotpatch_class(new)
}

/// A decoded B or BL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchImm {
    /// BL: writes `pc + 4` to x30.
    pub link: bool,
    /// The branch target.
    pub target: u64,
}

/// Decodes B or BL at `pc`.
pub const fn decode_b_bl(insn: u32, pc: u64) -> Option<BranchImm> {
    if is_b(insn) || is_bl(insn) {
        Some(BranchImm {
            link: is_bl(insn),
            target: pc_plus(pc, imm26_offset(insn)),
        })
    } else {
        None
    }
}

/// A decoded B.cond.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CondBranch {
    /// The condition.
    pub cond: Cond,
    /// The target if the condition holds.
    pub target: u64,
}

/// Decodes B.cond at `pc`.
pub const fn decode_b_cond(insn: u32, pc: u64) -> Option<CondBranch> {
    if is_b_cond(insn) {
        Some(CondBranch {
            cond: Cond::from_bits(insn),
            target: pc_plus(pc, imm19_offset(insn)),
        })
    } else {
        None
    }
}

/// A decoded CBZ or CBNZ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompareBranch {
    /// CBNZ rather than CBZ.
    pub nonzero: bool,
    /// Tests Xt (true) or Wt (false).
    pub sf: bool,
    /// The register tested; 31 is XZR.
    pub rt: u8,
    /// The target if the test passes.
    pub target: u64,
}

/// Decodes CBZ or CBNZ at `pc`.
pub const fn decode_cbz_cbnz(insn: u32, pc: u64) -> Option<CompareBranch> {
    if is_cbz(insn) || is_cbnz(insn) {
        Some(CompareBranch {
            nonzero: is_cbnz(insn),
            sf: insn >> 31 == 1,
            rt: rt(insn),
            target: pc_plus(pc, imm19_offset(insn)),
        })
    } else {
        None
    }
}

/// A decoded TBZ or TBNZ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestBranch {
    /// TBNZ rather than TBZ.
    pub nonzero: bool,
    /// The bit tested, b5:b40 (0–63).
    pub bit: u8,
    /// The register tested; 31 is XZR.
    pub rt: u8,
    /// The target if the test passes.
    pub target: u64,
}

/// Decodes TBZ or TBNZ at `pc`.
pub const fn decode_tbz_tbnz(insn: u32, pc: u64) -> Option<TestBranch> {
    if is_tbz(insn) || is_tbnz(insn) {
        Some(TestBranch {
            nonzero: is_tbnz(insn),
            bit: ((insn >> 31) << 5 | field(insn, 19, 5)) as u8,
            rt: rt(insn),
            target: pc_plus(pc, imm14_offset(insn)),
        })
    } else {
        None
    }
}

/// Which branch-to-register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BranchRegKind {
    /// `BR Xn`.
    Br,
    /// `BLR Xn`: also writes `pc + 4` to x30.
    Blr,
    /// `RET Xn`.
    Ret,
}

/// A decoded BR, BLR or RET.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchReg {
    /// Which instruction.
    pub kind: BranchRegKind,
    /// The register holding the target; 31 reads as zero (XZR).
    pub rn: u8,
}

/// Decodes BR, BLR or RET (the plain forms, not the FEAT_PAuth ones).
pub const fn decode_br_blr_ret(insn: u32) -> Option<BranchReg> {
    let kind = if is_br(insn) {
        BranchRegKind::Br
    } else if is_blr(insn) {
        BranchRegKind::Blr
    } else if is_ret(insn) {
        BranchRegKind::Ret
    } else {
        return None;
    };
    Some(BranchReg { kind, rn: rn(insn) })
}

/// A decoded ADR or ADRP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcRelAddr {
    /// ADRP rather than ADR.
    pub page: bool,
    /// The destination; 31 is XZR (the result is discarded).
    pub rd: u8,
    /// The value written: `pc + imm` for ADR, `(pc & !0xfff) + (imm << 12)`
    /// for ADRP.
    pub target: u64,
}

/// Decodes ADR or ADRP at `pc`.
pub const fn decode_adr_adrp(insn: u32, pc: u64) -> Option<PcRelAddr> {
    if is_adr(insn) {
        Some(PcRelAddr {
            page: false,
            rd: rt(insn),
            target: pc_plus(pc, adr_imm(insn)),
        })
    } else if is_adrp(insn) {
        Some(PcRelAddr {
            page: true,
            rd: rt(insn),
            target: pc_plus(pc & !0xfff, adr_imm(insn) << 12),
        })
    } else {
        None
    }
}

/// What a general-purpose literal load reads and how it extends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiteralKind {
    /// `LDR Wt`: 32 bits, zero-extended.
    W32,
    /// `LDR Xt`: 64 bits.
    X64,
    /// `LDRSW Xt`: 32 bits, sign-extended.
    Sw,
}

/// A decoded LDR (literal) or LDRSW (literal) to a general-purpose register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiteralLoad {
    /// Size and extension.
    pub kind: LiteralKind,
    /// The destination; 31 is XZR (the value is discarded).
    pub rt: u8,
    /// The address loaded from.
    pub target: u64,
}

/// Decodes LDR (literal) or LDRSW (literal) at `pc`.
pub const fn decode_ldr_literal(insn: u32, pc: u64) -> Option<LiteralLoad> {
    let kind = if is_ldrsw_literal(insn) {
        LiteralKind::Sw
    } else if !is_ldr_literal(insn) {
        return None;
    } else if insn & (1 << 30) != 0 {
        LiteralKind::X64
    } else {
        LiteralKind::W32
    };
    Some(LiteralLoad {
        kind,
        rt: rt(insn),
        target: pc_plus(pc, imm19_offset(insn)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PC: u64 = 0xffff_8000_0010_0000;

    #[test]
    fn only_b_bl_nop_and_brk_swap_on_live_code() {
        let b = 0x1400_0001;
        let bl = 0x97ff_ffff;
        let nop = 0xd503_201f;
        let brk = 0xd420_0080; // brk #4
        for old in [b, bl, nop, brk] {
            for new in [b, bl, nop, brk] {
                assert!(aarch64_insn_hotpatch_safe(old, new), "{old:#x} -> {new:#x}");
            }
        }
        let others = [
            0xd65f_03c0, // ret
            0x9100_0400, // add x0, x0, #1
            0x5400_0040, // b.eq
            0xd503_203f, // yield (a hint, not NOP)
            0xb400_0040, // cbz x0
            0xd400_0001, // svc #0
            0xd503_233f, // paciasp
        ];
        for other in others {
            assert!(!is_hotpatch_class(other), "{other:#x}");
            assert!(!aarch64_insn_hotpatch_safe(nop, other), "nop -> {other:#x}");
            assert!(!aarch64_insn_hotpatch_safe(other, brk), "{other:#x} -> brk");
        }
    }

    #[test]
    fn b_bl_targets() {
        assert_eq!(
            decode_b_bl(0x14000001, PC),
            Some(BranchImm {
                link: false,
                target: PC + 4
            })
        );
        assert_eq!(
            decode_b_bl(0x97ffffff, PC),
            Some(BranchImm {
                link: true,
                target: PC - 4
            })
        );
        assert_eq!(
            decode_b_bl(0x16000000, PC),
            Some(BranchImm {
                link: false,
                target: PC - 0x800_0000
            })
        );
        assert_eq!(decode_b_bl(0xd503201f, PC), None);
    }

    #[test]
    fn b_cond_fields() {
        let d = decode_b_cond(0x54ffffe1, PC).unwrap();
        assert_eq!((d.cond, d.target), (Cond::Ne, PC - 4));
        assert_eq!(decode_b_cond(0x540000ac, PC).unwrap().cond, Cond::Gt);
        assert_eq!(decode_b_cond(0x54000010, PC), None, "BC.cond is not B.cond");
        assert!(is_bc_cond(0x54000010));
    }

    #[test]
    fn cbz_tbz_fields() {
        let c = decode_cbz_cbnz(0xb4000040, PC).unwrap();
        assert_eq!(
            c,
            CompareBranch {
                nonzero: false,
                sf: true,
                rt: 0,
                target: PC + 8
            }
        );
        let c = decode_cbz_cbnz(0x35ffffe3, PC).unwrap();
        assert_eq!(
            c,
            CompareBranch {
                nonzero: true,
                sf: false,
                rt: 3,
                target: PC - 4
            }
        );
        let t = decode_tbz_tbnz(0xb7f80041, PC).unwrap();
        assert_eq!(
            t,
            TestBranch {
                nonzero: true,
                bit: 63,
                rt: 1,
                target: PC + 8
            }
        );
        let t = decode_tbz_tbnz(0x36280002, PC).unwrap();
        assert_eq!(
            t,
            TestBranch {
                nonzero: false,
                bit: 5,
                rt: 2,
                target: PC
            }
        );
        let t = decode_tbz_tbnz(0x363fffe2, PC).unwrap();
        assert_eq!(t.target, PC - 4);
    }

    #[test]
    fn branch_register_fields() {
        assert_eq!(
            decode_br_blr_ret(0xd61f0200),
            Some(BranchReg {
                kind: BranchRegKind::Br,
                rn: 16
            })
        );
        assert_eq!(
            decode_br_blr_ret(0xd63f0100),
            Some(BranchReg {
                kind: BranchRegKind::Blr,
                rn: 8
            })
        );
        assert_eq!(
            decode_br_blr_ret(0xd65f03c0),
            Some(BranchReg {
                kind: BranchRegKind::Ret,
                rn: 30
            })
        );
        // retaa, braa x0, x1, blraaz x0 are not the plain forms.
        assert_eq!(decode_br_blr_ret(0xd65f0bff), None);
        assert_eq!(decode_br_blr_ret(0xd71f0801), None);
        assert_eq!(decode_br_blr_ret(0xd63f081f), None);
        assert!(is_ret_auth(0xd65f0bff) && is_br_auth(0xd71f0801) && is_blr_auth(0xd63f081f));
    }

    #[test]
    fn adr_adrp_targets() {
        let a = decode_adr_adrp(0x70ffffe5, PC).unwrap();
        assert_eq!(
            a,
            PcRelAddr {
                page: false,
                rd: 5,
                target: PC - 1
            }
        );
        let pc = 0x40_0ffc;
        let a = decode_adr_adrp(0xb0000001, pc).unwrap();
        assert_eq!(
            a,
            PcRelAddr {
                page: true,
                rd: 1,
                target: 0x40_1000
            }
        );
        let a = decode_adr_adrp(0xf0ffffe2, pc).unwrap();
        assert_eq!(a.target, 0x3f_f000);
        // adrp x0, -4 GiB: the largest negative page count.
        assert_eq!(decode_adr_adrp(0x90800000, 1 << 32).unwrap().target, 0);
    }

    #[test]
    fn literal_load_fields() {
        let l = decode_ldr_literal(0x58000040, PC).unwrap();
        assert_eq!(
            l,
            LiteralLoad {
                kind: LiteralKind::X64,
                rt: 0,
                target: PC + 8
            }
        );
        let l = decode_ldr_literal(0x18000041, PC).unwrap();
        assert_eq!(
            l,
            LiteralLoad {
                kind: LiteralKind::W32,
                rt: 1,
                target: PC + 8
            }
        );
        let l = decode_ldr_literal(0x98ffffe2, PC).unwrap();
        assert_eq!(
            l,
            LiteralLoad {
                kind: LiteralKind::Sw,
                rt: 2,
                target: PC - 4
            }
        );
        // ldr d0, label and prfm are not general-purpose literal loads.
        assert_eq!(decode_ldr_literal(0x5c000040, PC), None);
        assert!(is_ldr_literal_fp(0x5c000040) && is_prfm_literal(0xd8000040));
    }

    #[test]
    fn nop_hint_brk() {
        assert!(is_nop(0xd503201f) && is_hint(0xd503201f));
        assert!(!is_nop(0xd503203f) && is_hint(0xd503203f)); // yield
        assert_eq!(hint_imm(0xd503233f), Some(0x19)); // paciasp
        assert_eq!(hint_imm(0xd65f03c0), None);
        assert_eq!(brk_imm(0xd4200080), Some(4));
        assert!(is_brk(0xd4200080, 4) && !is_brk(0xd4200080, 6) && !is_brk(0xd4000001, 0));
    }

    #[test]
    fn every_condition_matches_the_arm_arm_table() {
        for flags in 0u64..16 {
            let f = Nzcv::from_pstate(flags << 28);
            let (n, z, c, v) = (f.n, f.z, f.c, f.v);
            let want = [
                z,
                !z,
                c,
                !c,
                n,
                !n,
                v,
                !v,
                c && !z,
                !(c && !z),
                n == v,
                n != v,
                !z && n == v,
                !(!z && n == v),
                true,
                true,
            ];
            for (bits, want) in want.into_iter().enumerate() {
                assert_eq!(
                    Cond::from_bits(bits as u32).holds(f),
                    want,
                    "cond {bits} flags {flags:04b}"
                );
            }
        }
    }
}
