//! The saved register frame of an exception (Linux's `struct pt_regs`). Its
//! first 34 words are `struct user_pt_regs` of the Linux arm64 ABI.

use aarch64_cpu::registers::SPSR_EL1;
use tock_registers::registers::InMemoryRegister;

/// No system call in progress (`syscallno` of a frame not from `svc`).
pub const NO_SYSCALL: i64 = -1;

/// Registers saved on exception entry.
#[repr(C)]
pub struct PtRegs {
    /// x0..x30.
    pub regs: [u64; 31],
    /// Stack pointer of the interrupted context.
    pub sp: u64,
    /// Program counter (ELR_EL1).
    pub pc: u64,
    /// PSTATE (SPSR_EL1).
    pub pstate: u64,
    /// x0 at system call entry, for restarts and tracers.
    pub orig_x0: u64,
    /// System call number, or NO_SYSCALL.
    pub syscallno: i64,
    /// A frame record {x29, pc} that links the unwinder through exceptions.
    pub stackframe: [u64; 2],
}

/// Size of the frame on the stack (a multiple of 16).
pub const PT_REGS_SIZE: usize = core::mem::size_of::<PtRegs>();
const _: () = assert!(PT_REGS_SIZE.is_multiple_of(16));
/// Offset of `sp`.
pub const S_SP: usize = 31 * 8;
/// Offset of `pc`.
pub const S_PC: usize = 32 * 8;
/// Offset of `syscallno`.
pub const S_SYSCALLNO: usize = 35 * 8;
/// Offset of `stackframe`.
pub const S_STACKFRAME: usize = 36 * 8;

impl PtRegs {
    /// The link register, x30.
    pub fn lr(&self) -> u64 {
        self.regs[30]
    }

    /// The frame pointer, x29.
    pub fn fp(&self) -> u64 {
        self.regs[29]
    }

    /// Whether the exception came from EL0.
    pub fn user_mode(&self) -> bool {
        self.pstate & 0b1111 == 0
    }

    /// PSTATE decoded, for oops output.
    pub fn pstate_reg(&self) -> InMemoryRegister<u64, SPSR_EL1::Register> {
        InMemoryRegister::new(self.pstate)
    }
}
