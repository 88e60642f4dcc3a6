//! What a simulated instruction does, as Linux's `simulate-insn.c`.
//!
//! [`simulate`] is a pure function of the instruction, its address, the
//! general-purpose registers and the flags; the BRK handler applies the
//! returned [`Effect`] to the saved `pt_regs`. Register 31 read by a
//! simulated instruction is XZR (0), and a write to it is dropped, as the
//! architecture does for every instruction simulated here.

use crate::decode::{self, BranchRegKind, Cond, LiteralKind, Nzcv};
use crate::probes::SimKind;

/// Reads the literal pool for LDR (literal) / LDRSW (literal).
pub trait LiteralMemory {
    /// The 32-bit word at `addr`, or `None` if it cannot be read.
    fn read_u32(&self, addr: u64) -> Option<u32>;
    /// The 64-bit doubleword at `addr` (4-byte aligned), or `None`.
    fn read_u64(&self, addr: u64) -> Option<u64>;
}

/// A register write done by a simulated instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegWrite {
    /// The register, 0–30.
    pub reg: u8,
    /// The new 64-bit value.
    pub value: u64,
}

/// The result of simulating one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The new PC.
    pub pc: u64,
    /// The register written, if any (x30 for BL/BLR, Rd for ADR/ADRP, Rt
    /// for literal loads).
    pub write: Option<RegWrite>,
}

impl Effect {
    /// Applies the register write to `regs` (x0..x30) and returns the new PC.
    pub fn apply(&self, regs: &mut [u64; 31]) -> u64 {
        if let Some(w) = self.write {
            regs[usize::from(w.reg)] = w.value;
        }
        self.pc
    }
}

/// A literal load could not read memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimFault {
    /// The address that could not be read.
    pub addr: u64,
}

fn x(regs: &[u64; 31], n: u8) -> u64 {
    regs.get(usize::from(n)).copied().unwrap_or(0)
}

fn write(reg: u8, value: u64) -> Option<RegWrite> {
    (reg < 31).then_some(RegWrite { reg, value })
}

fn link(pc: u64) -> Option<RegWrite> {
    write(30, pc.wrapping_add(crate::INSN_SIZE))
}

/// Simulates `insn`, which sits at `pc` and which [`crate::classify`]
/// classed as `Simulate(kind)`, with `regs` holding x0..x30 and `pstate`
/// the saved PSTATE (for the NZCV flags of B.cond).
///
/// `kind` is what the probe recorded at registration, as Linux stores the
/// handler in `arch_probe_insn`; for an `insn` of another class the result
/// is meaningless but harmless (the PC only moves by 4).
pub fn simulate(
    kind: SimKind,
    insn: u32,
    pc: u64,
    regs: &[u64; 31],
    pstate: u64,
    mem: &impl LiteralMemory,
) -> Result<Effect, SimFault> {
    let next = pc.wrapping_add(crate::INSN_SIZE);
    let fallthrough = Effect { pc: next, write: None };
    let effect = match kind {
        SimKind::Nop => fallthrough,
        SimKind::B | SimKind::Bl => match decode::decode_b_bl(insn, pc) {
            Some(b) => Effect {
                pc: b.target,
                write: if b.link { link(pc) } else { None },
            },
            None => fallthrough,
        },
        SimKind::BCond => match decode::decode_b_cond(insn, pc) {
            Some(b) if b.cond.holds(Nzcv::from_pstate(pstate)) => Effect {
                pc: b.target,
                write: None,
            },
            _ => fallthrough,
        },
        SimKind::Cbz | SimKind::Cbnz => match decode::decode_cbz_cbnz(insn, pc) {
            Some(c) => {
                let value = x(regs, c.rt);
                let zero = if c.sf { value == 0 } else { value as u32 == 0 };
                let taken = zero != c.nonzero;
                Effect {
                    pc: if taken { c.target } else { next },
                    write: None,
                }
            }
            None => fallthrough,
        },
        SimKind::Tbz | SimKind::Tbnz => match decode::decode_tbz_tbnz(insn, pc) {
            Some(t) => {
                let set = x(regs, t.rt) >> t.bit & 1 == 1;
                let taken = set == t.nonzero;
                Effect {
                    pc: if taken { t.target } else { next },
                    write: None,
                }
            }
            None => fallthrough,
        },
        SimKind::Br | SimKind::Blr | SimKind::Ret => match decode::decode_br_blr_ret(insn) {
            // The target is read before x30 is written: `blr x30` branches
            // to the old x30.
            Some(b) => Effect {
                pc: x(regs, b.rn),
                write: if b.kind == BranchRegKind::Blr { link(pc) } else { None },
            },
            None => fallthrough,
        },
        SimKind::Adr | SimKind::Adrp => match decode::decode_adr_adrp(insn, pc) {
            Some(a) => Effect {
                pc: next,
                write: write(a.rd, a.target),
            },
            None => fallthrough,
        },
        SimKind::LdrLiteral32 | SimKind::LdrLiteral64 | SimKind::LdrswLiteral => {
            match decode::decode_ldr_literal(insn, pc) {
                Some(l) => {
                    let fault = SimFault { addr: l.target };
                    let value = match l.kind {
                        LiteralKind::W32 => u64::from(mem.read_u32(l.target).ok_or(fault)?),
                        LiteralKind::X64 => mem.read_u64(l.target).ok_or(fault)?,
                        LiteralKind::Sw => mem.read_u32(l.target).ok_or(fault)? as i32 as i64 as u64,
                    };
                    Effect {
                        pc: next,
                        write: write(l.rt, value),
                    }
                }
                None => fallthrough,
            }
        }
    };
    Ok(effect)
}

/// Whether a B.cond with condition `cond` is taken with these PSTATE flags.
pub fn condition_passes(cond: Cond, pstate: u64) -> bool {
    cond.holds(Nzcv::from_pstate(pstate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{self, LiteralSize};

    const PC: u64 = 0xffff_8000_0020_0000;

    struct Pool {
        base: u64,
        words: [u32; 4],
    }

    impl LiteralMemory for Pool {
        fn read_u32(&self, addr: u64) -> Option<u32> {
            let i = usize::try_from(addr.checked_sub(self.base)? / 4).ok()?;
            addr.is_multiple_of(4).then_some(*self.words.get(i)?)
        }
        fn read_u64(&self, addr: u64) -> Option<u64> {
            Some(u64::from(self.read_u32(addr)?) | u64::from(self.read_u32(addr + 4)?) << 32)
        }
    }

    const NO_MEMORY: Pool = Pool { base: 0, words: [0; 4] };

    fn run(kind: SimKind, insn: u32, regs: &[u64; 31], pstate: u64) -> Effect {
        assert_eq!(crate::classify(insn), crate::Class::Simulate(kind), "{insn:#010x}");
        simulate(kind, insn, PC, regs, pstate, &NO_MEMORY).unwrap()
    }

    #[test]
    fn nop_advances() {
        assert_eq!(
            run(SimKind::Nop, encode::nop(), &[0; 31], 0),
            Effect {
                pc: PC + 4,
                write: None
            }
        );
    }

    #[test]
    fn b_and_bl() {
        let e = run(SimKind::B, encode::b(PC, PC - 0x100).unwrap(), &[0; 31], 0);
        assert_eq!(
            e,
            Effect {
                pc: PC - 0x100,
                write: None
            }
        );
        let e = run(SimKind::Bl, encode::bl(PC, PC + 0x7ff_fffc).unwrap(), &[0; 31], 0);
        assert_eq!(
            e,
            Effect {
                pc: PC + 0x7ff_fffc,
                write: Some(RegWrite { reg: 30, value: PC + 4 })
            }
        );
    }

    #[test]
    fn b_cond_taken_and_not() {
        let insn = encode::b_cond(PC, PC + 64, Cond::Eq).unwrap();
        let z = 1 << 30;
        assert_eq!(run(SimKind::BCond, insn, &[0; 31], z).pc, PC + 64);
        assert_eq!(run(SimKind::BCond, insn, &[0; 31], 0).pc, PC + 4);
        let insn = encode::b_cond(PC, PC + 64, Cond::Nv).unwrap();
        assert_eq!(run(SimKind::BCond, insn, &[0; 31], 0).pc, PC + 64, "nv is always");
        assert!(condition_passes(Cond::Lt, 1 << 31) && !condition_passes(Cond::Lt, 0b1001 << 28));
    }

    #[test]
    fn cbz_cbnz_respect_width() {
        let mut regs = [0u64; 31];
        regs[3] = 0x1_0000_0000;
        let w = encode::cbz(PC, PC + 8, 3, false, false).unwrap();
        let x = encode::cbz(PC, PC + 8, 3, true, false).unwrap();
        assert_eq!(run(SimKind::Cbz, w, &regs, 0).pc, PC + 8, "w3 is zero");
        assert_eq!(run(SimKind::Cbz, x, &regs, 0).pc, PC + 4, "x3 is not");
        let xn = encode::cbz(PC, PC + 8, 3, true, true).unwrap();
        assert_eq!(run(SimKind::Cbnz, xn, &regs, 0).pc, PC + 8);
        let zr = encode::cbz(PC, PC + 8, 31, true, false).unwrap();
        assert_eq!(run(SimKind::Cbz, zr, &regs, 0).pc, PC + 8, "xzr is zero");
    }

    #[test]
    fn tbz_tbnz_test_the_bit() {
        let mut regs = [0u64; 31];
        regs[1] = 1 << 63 | 1 << 5;
        let tbnz63 = encode::tbz(PC, PC - 8, 1, 63, true).unwrap();
        assert_eq!(run(SimKind::Tbnz, tbnz63, &regs, 0).pc, PC - 8);
        let tbz5 = encode::tbz(PC, PC - 8, 1, 5, false).unwrap();
        assert_eq!(run(SimKind::Tbz, tbz5, &regs, 0).pc, PC + 4);
        let tbz4 = encode::tbz(PC, PC - 8, 1, 4, false).unwrap();
        assert_eq!(run(SimKind::Tbz, tbz4, &regs, 0).pc, PC - 8);
    }

    #[test]
    fn register_branches() {
        let mut regs = [0u64; 31];
        regs[16] = 0xdead_beef_0000;
        regs[30] = 0x1234_5678;
        assert_eq!(
            run(SimKind::Br, encode::br(16).unwrap(), &regs, 0),
            Effect {
                pc: 0xdead_beef_0000,
                write: None
            }
        );
        assert_eq!(
            run(SimKind::Ret, encode::ret(), &regs, 0),
            Effect {
                pc: 0x1234_5678,
                write: None
            }
        );
        let e = run(SimKind::Blr, encode::blr(30).unwrap(), &regs, 0);
        assert_eq!(
            e,
            Effect {
                pc: 0x1234_5678,
                write: Some(RegWrite { reg: 30, value: PC + 4 })
            }
        );
        let mut after = regs;
        assert_eq!(e.apply(&mut after), 0x1234_5678);
        assert_eq!(after[30], PC + 4);
    }

    #[test]
    fn adr_adrp_write_rd() {
        let e = run(SimKind::Adr, encode::adr(PC, PC - 3, 7).unwrap(), &[0; 31], 0);
        assert_eq!(
            e,
            Effect {
                pc: PC + 4,
                write: Some(RegWrite { reg: 7, value: PC - 3 })
            }
        );
        let pc = PC + 0xabc;
        let insn = encode::adrp(pc, PC + 0x5000, 2).unwrap();
        let e = simulate(SimKind::Adrp, insn, pc, &[0; 31], 0, &NO_MEMORY).unwrap();
        assert_eq!(
            e.write,
            Some(RegWrite {
                reg: 2,
                value: PC + 0x5000
            })
        );
        let e = run(SimKind::Adr, encode::adr(PC, PC + 8, 31).unwrap(), &[0; 31], 0);
        assert_eq!(e.write, None, "adr xzr discards");
    }

    #[test]
    fn literal_loads_read_and_extend() {
        let pool = Pool {
            base: PC + 0x40,
            words: [0x8000_0001, 0x7654_3210, 0xffff_ffff, 0],
        };
        let sim = |kind, insn| simulate(kind, insn, PC, &[0; 31], 0, &pool);
        let w = encode::ldr_literal(PC, PC + 0x40, 0, LiteralSize::W32).unwrap();
        assert_eq!(
            sim(SimKind::LdrLiteral32, w).unwrap().write,
            Some(RegWrite {
                reg: 0,
                value: 0x8000_0001
            })
        );
        let x = encode::ldr_literal(PC, PC + 0x40, 1, LiteralSize::X64).unwrap();
        let want = Some(RegWrite {
            reg: 1,
            value: 0x7654_3210_8000_0001,
        });
        assert_eq!(sim(SimKind::LdrLiteral64, x).unwrap().write, want);
        let sw = encode::ldrsw_literal(PC, PC + 0x48, 2).unwrap();
        assert_eq!(
            sim(SimKind::LdrswLiteral, sw).unwrap().write,
            Some(RegWrite {
                reg: 2,
                value: u64::MAX
            })
        );
        let sw = encode::ldrsw_literal(PC, PC + 0x44, 2).unwrap();
        assert_eq!(
            sim(SimKind::LdrswLiteral, sw).unwrap().write,
            Some(RegWrite {
                reg: 2,
                value: 0x7654_3210
            })
        );
        let out = encode::ldr_literal(PC, PC - 4, 0, LiteralSize::W32).unwrap();
        assert_eq!(sim(SimKind::LdrLiteral32, out), Err(SimFault { addr: PC - 4 }));
        assert_eq!(sim(SimKind::LdrLiteral64, x).unwrap().pc, PC + 4);
    }
}
