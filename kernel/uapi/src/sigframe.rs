//! The arm64 signal frame (arch/arm64/include/uapi/asm/sigcontext.h,
//! include/uapi/asm-generic/ucontext.h and `struct rt_sigframe` of
//! arch/arm64/kernel/signal.c): `siginfo_t`, then `struct ucontext`, whose
//! `uc_mcontext` (`struct sigcontext`) ends in a 4096-byte area of context
//! records such as `fpsimd_context`.
//!
//! [`RtSigframe`] reads and writes the fixed part at Linux's offsets; the
//! records area starts at [`SC_RESERVED`] and is the caller's.

use crate::signal::{SigInfo, StackT, SIGINFO_SIZE};

/// Offset of `uc` in `struct rt_sigframe`.
pub const UC: usize = SIGINFO_SIZE;
/// Offset of `uc_stack` in the frame.
pub const UC_STACK: usize = UC + 16;
/// Offset of `uc_sigmask` in the frame.
pub const UC_SIGMASK: usize = UC_STACK + StackT::SIZE;
/// Offset of `uc_mcontext` in the frame: after the 1024-bit sigset area
/// that `uc_sigmask` starts, aligned to 16.
pub const UC_MCONTEXT: usize = UC + 176;
/// Offset of `uc_mcontext.regs[0]` (x0; x30 ends it) in the frame, after
/// `fault_address`.
pub const SC_REGS: usize = UC_MCONTEXT + 8;
/// Offset of `uc_mcontext.sp` in the frame.
pub const SC_SP: usize = SC_REGS + 31 * 8;
/// Offset of `uc_mcontext.pc` in the frame.
pub const SC_PC: usize = SC_SP + 8;
/// Offset of `uc_mcontext.pstate` in the frame.
pub const SC_PSTATE: usize = SC_PC + 8;
/// Offset of `sigcontext.__reserved` in the frame.
pub const SC_RESERVED: usize = UC_MCONTEXT + 288;
/// Size of `sigcontext.__reserved`.
pub const RESERVED_SIZE: usize = 4096;
/// Size of `struct rt_sigframe`.
pub const RT_SIGFRAME_SIZE: usize = SC_RESERVED + RESERVED_SIZE;

/// `fpsimd_context`'s record magic.
pub const FPSIMD_MAGIC: u32 = 0x4650_8001;
/// `sizeof(struct fpsimd_context)`: header, fpsr, fpcr, vregs[32].
pub const FPSIMD_SIZE: u32 = 528;
/// `esr_context`: written for faults, ignored on return.
pub const ESR_MAGIC: u32 = 0x4553_5201;
/// `extra_context`: points at more records beyond the frame.
pub const EXTRA_MAGIC: u32 = 0x4558_5401;
/// `sizeof(struct extra_context)`: header, datap (u64), size (u32), pad.
pub const EXTRA_SIZE: u32 = 32;
/// `sve_context`'s record magic.
pub const SVE_MAGIC: u32 = 0x5356_4501;

/// Records of CPU features this kernel does not give to user space (SVE,
/// SME's TPIDR2, ZA and ZT, FPMR, POE): Linux refuses them when the system
/// lacks the feature.
pub const UNSUPPORTED_MAGICS: [u32; 6] = [
    SVE_MAGIC,
    0x5450_4902,
    0x5436_6345,
    0x5a54_4e01,
    0x4650_4d52,
    0x504f_4530,
];

/// `struct sigcontext` without its records area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigContext {
    /// The faulting address of a synchronous fault, else 0.
    pub fault_address: u64,
    /// x0..x30.
    pub regs: [u64; 31],
    /// The stack pointer.
    pub sp: u64,
    /// The program counter.
    pub pc: u64,
    /// PSTATE (SPSR_EL1 as the thread would return with it).
    pub pstate: u64,
}

/// The fixed part of `struct rt_sigframe`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtSigframe {
    /// `info`.
    pub info: SigInfo,
    /// `uc.uc_stack`: the alternate stack settings to restore.
    pub uc_stack: StackT,
    /// `uc.uc_sigmask`: the mask to restore.
    pub uc_sigmask: u64,
    /// `uc.uc_mcontext`.
    pub mcontext: SigContext,
}

fn put(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

fn get(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(w)
}

impl RtSigframe {
    /// Writes the fixed part into the first [`SC_RESERVED`] bytes of
    /// `frame` (which must be [`RT_SIGFRAME_SIZE`] long), leaving
    /// `uc_flags`, `uc_link`, the padding and the records area as they are
    /// (zero in a fresh frame).
    pub fn write(&self, frame: &mut [u8; RT_SIGFRAME_SIZE]) {
        frame[..SIGINFO_SIZE].copy_from_slice(&self.info.to_bytes());
        frame[UC_STACK..UC_STACK + StackT::SIZE].copy_from_slice(&self.uc_stack.to_bytes());
        put(frame, UC_SIGMASK, self.uc_sigmask);
        let sc = &self.mcontext;
        put(frame, UC_MCONTEXT, sc.fault_address);
        for (i, r) in sc.regs.iter().enumerate() {
            put(frame, SC_REGS + i * 8, *r);
        }
        put(frame, SC_SP, sc.sp);
        put(frame, SC_PC, sc.pc);
        put(frame, SC_PSTATE, sc.pstate);
    }

    /// Reads the fixed part of a frame a user program may have changed.
    pub fn read(frame: &[u8; RT_SIGFRAME_SIZE]) -> RtSigframe {
        let mut info = [0u8; SIGINFO_SIZE];
        info.copy_from_slice(&frame[..SIGINFO_SIZE]);
        let mut st = [0u8; StackT::SIZE];
        st.copy_from_slice(&frame[UC_STACK..UC_STACK + StackT::SIZE]);
        let mut regs = [0u64; 31];
        for (i, r) in regs.iter_mut().enumerate() {
            *r = get(frame, SC_REGS + i * 8);
        }
        RtSigframe {
            info: SigInfo::from_bytes(&info),
            uc_stack: StackT::from_bytes(&st),
            uc_sigmask: get(frame, UC_SIGMASK),
            mcontext: SigContext {
                fault_address: get(frame, UC_MCONTEXT),
                regs,
                sp: get(frame, SC_SP),
                pc: get(frame, SC_PC),
                pstate: get(frame, SC_PSTATE),
            },
        }
    }
}

/// The body of an `fpsimd_context` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FpsimdContext {
    /// FPSR.
    pub fpsr: u32,
    /// FPCR.
    pub fpcr: u32,
    /// V0..V31.
    pub vregs: [u128; 32],
}

impl FpsimdContext {
    /// The record, header included, as a user program sees it.
    pub fn to_bytes(&self) -> [u8; FPSIMD_SIZE as usize] {
        let mut b = [0u8; FPSIMD_SIZE as usize];
        b[..4].copy_from_slice(&FPSIMD_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&FPSIMD_SIZE.to_le_bytes());
        b[8..12].copy_from_slice(&self.fpsr.to_le_bytes());
        b[12..16].copy_from_slice(&self.fpcr.to_le_bytes());
        for (c, v) in b[16..].chunks_exact_mut(16).zip(self.vregs) {
            c.copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// Reads a record whose header was already checked (its size must be
    /// exactly [`FPSIMD_SIZE`]; `None` otherwise).
    pub fn from_bytes(b: &[u8]) -> Option<FpsimdContext> {
        if b.len() != FPSIMD_SIZE as usize {
            return None;
        }
        let word = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let mut vregs = [0u128; 32];
        for (v, c) in vregs.iter_mut().zip(b[16..].chunks_exact(16)) {
            let mut w = [0u8; 16];
            w.copy_from_slice(c);
            *v = u128::from_le_bytes(w);
        }
        Some(FpsimdContext {
            fpsr: word(8),
            fpcr: word(12),
            vregs,
        })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn frame_offsets_are_linux_arm64s() {
        // offsetof values of Linux 6.12 arm64 (struct rt_sigframe, ucontext,
        // sigcontext); sizeof(struct rt_sigframe) is 4688.
        assert_eq!((UC, UC_STACK, UC_SIGMASK, UC_MCONTEXT), (128, 144, 168, 304));
        assert_eq!((SC_REGS, SC_SP, SC_PC, SC_PSTATE), (312, 560, 568, 576));
        assert_eq!(SC_RESERVED, 592);
        assert_eq!(RT_SIGFRAME_SIZE, 4688);
        // The record magics of arch/arm64/include/uapi/asm/sigcontext.h.
        assert_eq!(
            (FPSIMD_MAGIC, EXTRA_MAGIC, SVE_MAGIC),
            (0x4650_8001, 0x4558_5401, 0x5356_4501)
        );
    }

    #[test]
    fn frame_round_trips_and_puts_registers_where_linux_does() {
        let mut regs = [0u64; 31];
        for (i, r) in regs.iter_mut().enumerate() {
            *r = 0x1000 + i as u64;
        }
        let f = RtSigframe {
            info: SigInfo {
                signo: 11,
                code: 1,
                addr: 0xdead,
                ..Default::default()
            },
            uc_stack: StackT {
                ss_sp: 0x7000,
                ss_flags: 2,
                ss_size: 8192,
            },
            uc_sigmask: 1 << 9,
            mcontext: SigContext {
                fault_address: 0xdead,
                regs,
                sp: 0x8000,
                pc: 0x400000,
                pstate: 0x2000_0000,
            },
        };
        let mut b = std::boxed::Box::new([0u8; RT_SIGFRAME_SIZE]);
        f.write(&mut b);
        assert_eq!(RtSigframe::read(&b), f);
        assert_eq!(get(&b[..], 304 + 8 + 30 * 8), 0x1000 + 30); // x30
        assert_eq!(get(&b[..], 304 + 264), 0x400000); // pc
        assert!(b[SC_RESERVED..].iter().all(|&x| x == 0));
    }

    #[test]
    fn fpsimd_record_round_trips_and_refuses_other_sizes() {
        let mut v = FpsimdContext {
            fpsr: 0x8000_0000,
            fpcr: 0x0300_0000,
            vregs: [0; 32],
        };
        v.vregs[31] = u128::MAX - 1;
        let b = v.to_bytes();
        assert_eq!(&b[..8], &[0x01, 0x80, 0x50, 0x46, 0x10, 0x02, 0, 0]);
        assert_eq!(FpsimdContext::from_bytes(&b), Some(v));
        assert_eq!(FpsimdContext::from_bytes(&b[..FPSIMD_SIZE as usize - 16]), None);
    }
}
