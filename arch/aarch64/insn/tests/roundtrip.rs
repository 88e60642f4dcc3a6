//! Property tests: every encoder's output decodes back to its inputs (with
//! this crate's decoders and with yaxpeax-arm), is classified as the
//! instruction it is, and out-of-range requests are refused.

use insn::decode::{self, BranchRegKind, Cond, LiteralKind};
use insn::encode::{self, InsnError, LiteralSize};
use insn::simulate::{simulate, LiteralMemory};
use insn::{classify, in_exclusive_sequence, Class, RejectReason, SimKind};
use proptest::prelude::*;
use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand, SizeCode};

fn disassemble(word: u32) -> Instruction {
    let bytes = word.to_le_bytes();
    InstDecoder::default().decode(&mut U8Reader::new(&bytes[..])).unwrap()
}

fn aligned() -> impl Strategy<Value = u64> {
    any::<u64>().prop_map(|a| a & !3)
}

fn reg() -> impl Strategy<Value = u8> {
    0u8..32
}

fn cond() -> impl Strategy<Value = Cond> {
    (0u32..16).prop_map(Cond::from_bits)
}

fn add(pc: u64, off: i64) -> u64 {
    pc.wrapping_add(off as u64)
}

struct NoMemory;

impl LiteralMemory for NoMemory {
    fn read_u32(&self, _: u64) -> Option<u32> {
        None
    }
    fn read_u64(&self, _: u64) -> Option<u64> {
        None
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn b_bl_round_trip(pc in aligned(), words in -(1i64 << 25)..(1i64 << 25), link: bool) {
        let target = add(pc, words * 4);
        let insn = if link { encode::bl(pc, target) } else { encode::b(pc, target) }.unwrap();
        let d = decode::decode_b_bl(insn, pc).unwrap();
        prop_assert_eq!((d.link, d.target), (link, target));
        prop_assert_eq!(classify(insn), Class::Simulate(if link { SimKind::Bl } else { SimKind::B }));
        let inst = disassemble(insn);
        prop_assert_eq!(inst.opcode, if link { Opcode::BL } else { Opcode::B });
        prop_assert_eq!(inst.operands[0], Operand::PCOffset(words * 4));
        let e = simulate(SimKind::B, insn, pc, &[0; 31], 0, &NoMemory).unwrap();
        prop_assert_eq!(e.pc, target);
    }

    #[test]
    fn b_out_of_range_is_refused(pc in aligned(), words in (1i64 << 25)..(1i64 << 40), back: bool) {
        let off = if back { -(words + 1) * 4 } else { words * 4 };
        prop_assert_eq!(encode::b(pc, add(pc, off)), Err(InsnError::OutOfRange));
        prop_assert_eq!(encode::bl(pc, add(pc, off)), Err(InsnError::OutOfRange));
    }

    #[test]
    fn misaligned_branch_is_refused(pc in aligned(), off in 1u64..4) {
        prop_assert_eq!(encode::b(pc, pc.wrapping_add(off)), Err(InsnError::Misaligned));
        prop_assert_eq!(encode::bl(pc.wrapping_add(off), pc), Err(InsnError::Misaligned));
    }

    #[test]
    fn b_cond_round_trip(pc in aligned(), words in -(1i64 << 18)..(1i64 << 18), c in cond()) {
        let target = add(pc, words * 4);
        let insn = encode::b_cond(pc, target, c).unwrap();
        let d = decode::decode_b_cond(insn, pc).unwrap();
        prop_assert_eq!((d.cond, d.target), (c, target));
        prop_assert_eq!(classify(insn), Class::Simulate(SimKind::BCond));
        prop_assert_eq!(disassemble(insn).opcode, Opcode::Bcc(c as u8));
        prop_assert_eq!(encode::b_cond(pc, add(pc, (1 << 20) + words.abs() * 4), c), Err(InsnError::OutOfRange));
    }

    #[test]
    fn cbz_round_trip(pc in aligned(), words in -(1i64 << 18)..(1i64 << 18), rt in reg(), sf: bool, nz: bool) {
        let target = add(pc, words * 4);
        let insn = encode::cbz(pc, target, rt, sf, nz).unwrap();
        let d = decode::decode_cbz_cbnz(insn, pc).unwrap();
        prop_assert_eq!((d.target, d.rt, d.sf, d.nonzero), (target, rt, sf, nz));
        prop_assert_eq!(classify(insn), Class::Simulate(if nz { SimKind::Cbnz } else { SimKind::Cbz }));
        let inst = disassemble(insn);
        prop_assert_eq!(inst.opcode, if nz { Opcode::CBNZ } else { Opcode::CBZ });
        let size = if sf { SizeCode::X } else { SizeCode::W };
        prop_assert_eq!(inst.operands[0], Operand::Register(size, rt.into()));
    }

    #[test]
    fn tbz_round_trip(pc in aligned(), words in -(1i64 << 13)..(1i64 << 13), rt in reg(), bit in 0u8..64, nz: bool) {
        let target = add(pc, words * 4);
        let insn = encode::tbz(pc, target, rt, bit, nz).unwrap();
        let d = decode::decode_tbz_tbnz(insn, pc).unwrap();
        prop_assert_eq!((d.target, d.rt, d.bit, d.nonzero), (target, rt, bit, nz));
        prop_assert_eq!(classify(insn), Class::Simulate(if nz { SimKind::Tbnz } else { SimKind::Tbz }));
        let inst = disassemble(insn);
        prop_assert_eq!(inst.operands[1], Operand::Imm16(bit.into()));
        prop_assert_eq!(inst.operands[2], Operand::PCOffset(words * 4));
    }

    #[test]
    fn branch_register_round_trip(rn in reg(), which in 0..3) {
        let (insn, kind, sim, op) = match which {
            0 => (encode::br(rn), BranchRegKind::Br, SimKind::Br, Opcode::BR),
            1 => (encode::blr(rn), BranchRegKind::Blr, SimKind::Blr, Opcode::BLR),
            _ => (encode::ret_reg(rn), BranchRegKind::Ret, SimKind::Ret, Opcode::RET),
        };
        let insn = insn.unwrap();
        let d = decode::decode_br_blr_ret(insn).unwrap();
        prop_assert_eq!((d.kind, d.rn), (kind, rn));
        prop_assert_eq!(classify(insn), Class::Simulate(sim));
        let inst = disassemble(insn);
        prop_assert_eq!(inst.opcode, op);
        prop_assert_eq!(inst.operands[0], Operand::Register(SizeCode::X, rn.into()));
    }

    #[test]
    fn adr_round_trip(pc: u64, off in -(1i64 << 20)..(1i64 << 20), rd in reg()) {
        let target = add(pc, off);
        let insn = encode::adr(pc, target, rd).unwrap();
        let d = decode::decode_adr_adrp(insn, pc).unwrap();
        prop_assert_eq!((d.page, d.rd, d.target), (false, rd, target));
        prop_assert_eq!(classify(insn), Class::Simulate(SimKind::Adr));
        let inst = disassemble(insn);
        prop_assert_eq!(inst.opcode, Opcode::ADR);
        prop_assert_eq!(inst.operands[1], Operand::PCOffset(off));
    }

    #[test]
    fn adrp_round_trip(pc: u64, pages in -(1i64 << 20)..(1i64 << 20), lo in 0u64..4096, rd in reg()) {
        let page = add(pc & !0xfff, pages << 12);
        let insn = encode::adrp(pc, page | lo, rd).unwrap();
        let d = decode::decode_adr_adrp(insn, pc).unwrap();
        prop_assert_eq!((d.page, d.rd, d.target), (true, rd, page));
        prop_assert_eq!(classify(insn), Class::Simulate(SimKind::Adrp));
        let inst = disassemble(insn);
        prop_assert_eq!(inst.opcode, Opcode::ADRP);
        prop_assert_eq!(inst.operands[1], Operand::PCOffset(pages << 12));
    }

    #[test]
    fn adr_out_of_range_is_refused(pc: u64, off in (1i64 << 20)..(1i64 << 40), back: bool) {
        let off = if back { -off - 1 } else { off };
        prop_assert_eq!(encode::adr(pc, add(pc, off), 0), Err(InsnError::OutOfRange));
        prop_assert_eq!(encode::adrp(pc, add(pc & !0xfff, off << 12), 0), Err(InsnError::OutOfRange));
    }

    #[test]
    fn literal_round_trip(pc in aligned(), words in -(1i64 << 18)..(1i64 << 18), rt in reg(), which in 0..3) {
        let target = add(pc, words * 4);
        let (insn, kind, sim) = match which {
            0 => (encode::ldr_literal(pc, target, rt, LiteralSize::W32), LiteralKind::W32, SimKind::LdrLiteral32),
            1 => (encode::ldr_literal(pc, target, rt, LiteralSize::X64), LiteralKind::X64, SimKind::LdrLiteral64),
            _ => (encode::ldrsw_literal(pc, target, rt), LiteralKind::Sw, SimKind::LdrswLiteral),
        };
        let insn = insn.unwrap();
        let d = decode::decode_ldr_literal(insn, pc).unwrap();
        prop_assert_eq!((d.kind, d.rt, d.target), (kind, rt, target));
        prop_assert_eq!(classify(insn), Class::Simulate(sim));
        let inst = disassemble(insn);
        prop_assert_eq!(inst.opcode, if which == 2 { Opcode::LDRSW } else { Opcode::LDR });
        prop_assert_eq!(inst.operands[1], Operand::PCOffset(words * 4));
    }

    #[test]
    fn brk_round_trip(imm: u16) {
        let insn = encode::brk(imm);
        prop_assert_eq!(decode::brk_imm(insn), Some(imm));
        prop_assert!(decode::is_brk(insn, imm));
        prop_assert_eq!(classify(insn), Class::Rejected(RejectReason::ExceptionGeneration));
        let inst = disassemble(insn);
        prop_assert_eq!(inst.opcode, Opcode::BRK);
        prop_assert_eq!(inst.operands[0], Operand::Imm16(imm));
    }

    #[test]
    fn mov_reg_disassembles_as_mov(dst in reg(), src in reg()) {
        let insn = encode::mov_reg(dst, src).unwrap();
        let name = |r: u8| if r == 31 { "xzr".to_string() } else { format!("x{r}") };
        prop_assert_eq!(disassemble(insn).to_string(), format!("mov {}, {}", name(dst), name(src)));
        prop_assert_eq!(classify(insn), Class::Steppable);
    }

    #[test]
    fn move_wide_disassembles(rd in reg(), imm: u16, hw in 0u32..4, sf: bool, keep: bool) {
        let shift = if sf { hw * 16 } else { (hw % 2) * 16 };
        let insn = if keep { encode::movk(rd, imm, shift, sf) } else { encode::movz(rd, imm, shift, sf) }.unwrap();
        let inst = disassemble(insn);
        prop_assert_eq!(inst.opcode, if keep { Opcode::MOVK } else { Opcode::MOVZ });
        let size = if sf { SizeCode::X } else { SizeCode::W };
        prop_assert_eq!(inst.operands[0], Operand::Register(size, rd.into()));
        prop_assert_eq!(inst.operands[1], Operand::ImmShift(imm, shift as u8));
        prop_assert_eq!(classify(insn), Class::Steppable);
    }

    #[test]
    fn exclusive_before_probe_decides(code in prop::collection::vec(any::<u32>(), 1..40), load: bool) {
        // Whatever precedes it, the instruction just before the probe wins.
        let mut code = code;
        let probe = code.len();
        code.push(if load { 0xc85f7c20 } else { 0xc8027c20 }); // ldxr / stxr
        code.push(0x91000400); // the probed add
        prop_assert_eq!(in_exclusive_sequence(&code, probe + 1), load);
    }

    #[test]
    fn cbz_simulation_matches_definition(x: u64, rt in 0u8..31, sf: bool, nz: bool) {
        let pc = 0x1000;
        let insn = encode::cbz(pc, pc + 0x40, rt, sf, nz).unwrap();
        let mut regs = [0u64; 31];
        regs[usize::from(rt)] = x;
        let zero = if sf { x == 0 } else { x as u32 == 0 };
        let kind = if nz { SimKind::Cbnz } else { SimKind::Cbz };
        let e = simulate(kind, insn, pc, &regs, 0, &NoMemory).unwrap();
        prop_assert_eq!(e.pc, if zero != nz { pc + 0x40 } else { pc + 4 });
    }
}
