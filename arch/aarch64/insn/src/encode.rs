//! Instruction encoders, like Linux's `aarch64_insn_gen_*()`.
//!
//! PC-relative encoders take the address the instruction will live at (`pc`)
//! and the address it refers to (`target`), and refuse what the encoding
//! cannot express instead of silently truncating it: Linux returns
//! `AARCH64_BREAK_FAULT` there, a caller here gets an [`InsnError`].

use crate::decode::Cond;

/// Why an instruction could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsnError {
    /// `pc` or `target` is not 4-byte aligned where the instruction needs it.
    Misaligned,
    /// The offset from `pc` to `target` does not fit the immediate field.
    OutOfRange,
    /// A register number above 31.
    InvalidRegister,
    /// A MOVZ/MOVK shift that is not a multiple of 16 below the register width.
    InvalidShift,
    /// A TBZ/TBNZ bit number above 63.
    InvalidBit,
}

/// The operand size of a literal load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiteralSize {
    /// `ldr wN, label`: 32 bits, zero-extended into Xn.
    W32,
    /// `ldr xN, label`: 64 bits.
    X64,
}

/// `nop` (`hint #0`).
pub const NOP: u32 = 0xd503_201f;
/// `ret` (`ret x30`).
pub const RET: u32 = 0xd65f_03c0;

const B: u32 = 0x1400_0000;
const BL: u32 = 0x9400_0000;
const B_COND: u32 = 0x5400_0000;
const CBZ: u32 = 0x3400_0000;
const CBNZ: u32 = 0x3500_0000;
const TBZ: u32 = 0x3600_0000;
const TBNZ: u32 = 0x3700_0000;
const BR: u32 = 0xd61f_0000;
const BLR: u32 = 0xd63f_0000;
const RET_REG: u32 = 0xd65f_0000;
const BRK: u32 = 0xd420_0000;
/// `orr xD, xzr, xM` with D and M zero: the MOV (register) alias.
const MOV_REG_X: u32 = 0xaa00_03e0;
const MOVZ: u32 = 0x5280_0000;
const MOVK: u32 = 0x7280_0000;
const ADR: u32 = 0x1000_0000;
const ADRP: u32 = 0x9000_0000;
const LDR_LIT_W: u32 = 0x1800_0000;
const LDR_LIT_X: u32 = 0x5800_0000;
const LDRSW_LIT: u32 = 0x9800_0000;

fn reg(r: u8) -> Result<u32, InsnError> {
    if r > 31 {
        Err(InsnError::InvalidRegister)
    } else {
        Ok(u32::from(r))
    }
}

/// The word offset from `pc` to `target` as a `bits`-bit two's complement
/// field, as Linux's `label_imm_common()` computes it.
fn word_offset(pc: u64, target: u64, bits: u32) -> Result<u32, InsnError> {
    if !pc.is_multiple_of(4) || !target.is_multiple_of(4) {
        return Err(InsnError::Misaligned);
    }
    let offset = target.wrapping_sub(pc) as i64 >> 2;
    let limit = 1i64 << (bits - 1);
    if offset < -limit || offset >= limit {
        return Err(InsnError::OutOfRange);
    }
    Ok((offset as u32) & ((1u32 << bits) - 1))
}

/// `b target`: ±128 MiB from `pc`.
pub fn b(pc: u64, target: u64) -> Result<u32, InsnError> {
    Ok(B | word_offset(pc, target, 26)?)
}

/// `bl target`: ±128 MiB from `pc`; sets x30 to `pc + 4`.
pub fn bl(pc: u64, target: u64) -> Result<u32, InsnError> {
    Ok(BL | word_offset(pc, target, 26)?)
}

/// `b.<cond> target`: ±1 MiB from `pc`.
pub fn b_cond(pc: u64, target: u64, cond: Cond) -> Result<u32, InsnError> {
    Ok(B_COND | word_offset(pc, target, 19)? << 5 | cond as u32)
}

/// `cbz`/`cbnz` (`nonzero`) on `wN` or, with `sf`, `xN`: ±1 MiB from `pc`.
pub fn cbz(pc: u64, target: u64, rt: u8, sf: bool, nonzero: bool) -> Result<u32, InsnError> {
    let op = if nonzero { CBNZ } else { CBZ };
    Ok(u32::from(sf) << 31 | op | word_offset(pc, target, 19)? << 5 | reg(rt)?)
}

/// `tbz`/`tbnz` (`nonzero`) on bit `bit` of `xN`: ±32 KiB from `pc`.
pub fn tbz(pc: u64, target: u64, rt: u8, bit: u8, nonzero: bool) -> Result<u32, InsnError> {
    if bit > 63 {
        return Err(InsnError::InvalidBit);
    }
    let op = if nonzero { TBNZ } else { TBZ };
    let b5 = u32::from(bit >> 5) << 31;
    let b40 = u32::from(bit & 0x1f) << 19;
    Ok(b5 | op | b40 | word_offset(pc, target, 14)? << 5 | reg(rt)?)
}

/// `br xN`.
pub fn br(rn: u8) -> Result<u32, InsnError> {
    Ok(BR | reg(rn)? << 5)
}

/// `blr xN`.
pub fn blr(rn: u8) -> Result<u32, InsnError> {
    Ok(BLR | reg(rn)? << 5)
}

/// `ret xN`; [`ret`] is the usual `ret x30`.
pub fn ret_reg(rn: u8) -> Result<u32, InsnError> {
    Ok(RET_REG | reg(rn)? << 5)
}

/// `ret` (return through x30).
pub const fn ret() -> u32 {
    RET
}

/// `nop`.
pub const fn nop() -> u32 {
    NOP
}

/// `brk #imm16`.
pub const fn brk(imm16: u16) -> u32 {
    BRK | (imm16 as u32) << 5
}

/// `mov xD, xS`, encoded as `orr xD, xzr, xS` (register 31 is XZR on both
/// sides). `mov_reg(9, 30)` is ftrace's `mov x9, x30`.
pub fn mov_reg(dst: u8, src: u8) -> Result<u32, InsnError> {
    Ok(MOV_REG_X | reg(src)? << 16 | reg(dst)?)
}

fn move_wide(op: u32, rd: u8, imm16: u16, shift: u32, sf: bool) -> Result<u32, InsnError> {
    let width = if sf { 64 } else { 32 };
    if !shift.is_multiple_of(16) || shift >= width {
        return Err(InsnError::InvalidShift);
    }
    Ok(u32::from(sf) << 31 | op | (shift / 16) << 21 | u32::from(imm16) << 5 | reg(rd)?)
}

/// `movz xD|wD, #imm16, lsl #shift` (`sf` selects X); register 31 is XZR.
pub fn movz(rd: u8, imm16: u16, shift: u32, sf: bool) -> Result<u32, InsnError> {
    move_wide(MOVZ, rd, imm16, shift, sf)
}

/// `movk xD|wD, #imm16, lsl #shift` (`sf` selects X); register 31 is XZR.
pub fn movk(rd: u8, imm16: u16, shift: u32, sf: bool) -> Result<u32, InsnError> {
    move_wide(MOVK, rd, imm16, shift, sf)
}

fn adr_imm(op: u32, offset: i64, rd: u8) -> Result<u32, InsnError> {
    if !(-(1 << 20)..(1 << 20)).contains(&offset) {
        return Err(InsnError::OutOfRange);
    }
    let imm = offset as u32;
    Ok(op | (imm & 3) << 29 | (imm >> 2 & 0x7ffff) << 5 | reg(rd)?)
}

/// `adr xD, target`: ±1 MiB from `pc`, byte granular; register 31 is XZR.
pub fn adr(pc: u64, target: u64, rd: u8) -> Result<u32, InsnError> {
    adr_imm(ADR, target.wrapping_sub(pc) as i64, rd)
}

/// `adrp xD, target`: the 4 KiB page of `target`, ±4 GiB from the page of
/// `pc`. The low 12 bits of `target` are not encoded (the caller adds them,
/// usually with `add xD, xD, :lo12:target`).
pub fn adrp(pc: u64, target: u64, rd: u8) -> Result<u32, InsnError> {
    let pages = ((target & !0xfff).wrapping_sub(pc & !0xfff) as i64) >> 12;
    adr_imm(ADRP, pages, rd)
}

/// `ldr wT|xT, target`: ±1 MiB from `pc`, 4-byte aligned; register 31 is XZR.
pub fn ldr_literal(pc: u64, target: u64, rt: u8, size: LiteralSize) -> Result<u32, InsnError> {
    let op = match size {
        LiteralSize::W32 => LDR_LIT_W,
        LiteralSize::X64 => LDR_LIT_X,
    };
    Ok(op | word_offset(pc, target, 19)? << 5 | reg(rt)?)
}

/// `ldrsw xT, target`: ±1 MiB from `pc`, 4-byte aligned; register 31 is XZR.
pub fn ldrsw_literal(pc: u64, target: u64, rt: u8) -> Result<u32, InsnError> {
    Ok(LDRSW_LIT | word_offset(pc, target, 19)? << 5 | reg(rt)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference encodings are from the ARM ARM (C6.2) and checked against
    // yaxpeax-arm in tests/cross_check.rs.

    #[test]
    fn fixed_encodings() {
        assert_eq!(nop(), 0xd503201f);
        assert_eq!(ret(), 0xd65f03c0);
        assert_eq!(brk(0), 0xd4200000);
        assert_eq!(brk(0x004), 0xd4200080);
        assert_eq!(brk(0x800), 0xd4210000);
        assert_eq!(brk(0xffff), 0xd43fffe0);
    }

    #[test]
    fn mov_x9_x30_is_ftrace_prologue_word() {
        assert_eq!(mov_reg(9, 30), Ok(0xaa1e03e9));
        assert_eq!(mov_reg(0, 1), Ok(0xaa0103e0));
        assert_eq!(mov_reg(32, 1), Err(InsnError::InvalidRegister));
    }

    #[test]
    fn b_and_bl_reach_128_mib_each_way() {
        let pc = 0xffff_0000_1000_0000;
        assert_eq!(b(pc, pc), Ok(0x14000000));
        assert_eq!(b(pc, pc + 4), Ok(0x14000001));
        assert_eq!(b(pc, pc - 4), Ok(0x17ffffff));
        assert_eq!(bl(pc, pc + 8), Ok(0x94000002));
        assert_eq!(b(pc, pc + 0x7ff_fffc), Ok(0x15ffffff));
        assert_eq!(b(pc, pc - 0x800_0000), Ok(0x16000000));
        assert_eq!(b(pc, pc + 0x800_0000), Err(InsnError::OutOfRange));
        assert_eq!(bl(pc, pc - 0x800_0004), Err(InsnError::OutOfRange));
        assert_eq!(b(pc, pc + 2), Err(InsnError::Misaligned));
        assert_eq!(bl(pc + 1, pc + 8), Err(InsnError::Misaligned));
    }

    #[test]
    fn conditional_branches() {
        let pc = 0x4000;
        assert_eq!(b_cond(pc, pc + 8, Cond::Eq), Ok(0x54000040));
        assert_eq!(b_cond(pc, pc - 4, Cond::Ne), Ok(0x54ffffe1));
        assert_eq!(b_cond(pc, pc + (1 << 20), Cond::Eq), Err(InsnError::OutOfRange));
        assert_eq!(cbz(pc, pc + 8, 0, true, false), Ok(0xb4000040));
        assert_eq!(cbz(pc, pc + 8, 3, false, true), Ok(0x35000043));
        assert_eq!(tbz(pc, pc + 8, 0, 0, false), Ok(0x36000040));
        assert_eq!(tbz(pc, pc + 8, 1, 63, true), Ok(0xb7f80041));
        assert_eq!(tbz(pc, pc + 0x8000, 1, 3, true), Err(InsnError::OutOfRange));
        assert_eq!(tbz(pc, pc + 8, 1, 64, true), Err(InsnError::InvalidBit));
    }

    #[test]
    fn register_branches() {
        assert_eq!(br(16), Ok(0xd61f0200));
        assert_eq!(blr(8), Ok(0xd63f0100));
        assert_eq!(ret_reg(30), Ok(ret()));
        assert_eq!(br(40), Err(InsnError::InvalidRegister));
    }

    #[test]
    fn move_wide() {
        assert_eq!(movz(0, 0x1234, 0, true), Ok(0xd2824680));
        assert_eq!(movk(1, 0xffff, 48, true), Ok(0xf2ffffe1));
        assert_eq!(movz(2, 1, 16, false), Ok(0x52a00022));
        assert_eq!(movk(2, 1, 32, false), Err(InsnError::InvalidShift));
        assert_eq!(movz(2, 1, 8, true), Err(InsnError::InvalidShift));
    }

    #[test]
    fn adr_and_adrp() {
        let pc = 0x40_0000;
        assert_eq!(adr(pc, pc, 0), Ok(0x10000000));
        assert_eq!(adr(pc, pc + 1, 0), Ok(0x30000000));
        assert_eq!(adr(pc, pc - 1, 5), Ok(0x70ffffe5));
        assert_eq!(adr(pc, pc + (1 << 20), 0), Err(InsnError::OutOfRange));
        assert_eq!(adrp(pc, pc + 0x1234, 1), Ok(0xb0000001));
        assert_eq!(adrp(pc + 0xffc, pc + 0x1000, 1), Ok(0xb0000001));
        assert_eq!(adrp(pc, pc - 0x1000, 2), Ok(0xf0ffffe2));
        assert_eq!(adrp(0, 1 << 32, 0), Err(InsnError::OutOfRange));
        assert_eq!(adrp(1 << 32, 0, 0), Ok(0x90800000));
    }

    #[test]
    fn literal_loads() {
        let pc = 0x1000;
        assert_eq!(ldr_literal(pc, pc + 8, 0, LiteralSize::X64), Ok(0x58000040));
        assert_eq!(ldr_literal(pc, pc + 8, 1, LiteralSize::W32), Ok(0x18000041));
        assert_eq!(ldrsw_literal(pc, pc - 4, 2), Ok(0x98ffffe2));
        assert_eq!(ldr_literal(pc, pc + 6, 0, LiteralSize::X64), Err(InsnError::Misaligned));
    }
}
