//! The saved register frame of an exception (Linux's `struct pt_regs`). Its
//! first 34 words are `struct user_pt_regs` of the Linux arm64 ABI.

use aarch64_cpu::registers::SPSR_EL1;
use tock_registers::interfaces::Readable;
use tock_registers::register_bitfields;
use tock_registers::registers::InMemoryRegister;

register_bitfields! {u64,
    /// PSTATE as SPSR_EL1 saves it for an exception taken from AArch64
    /// (ARM ARM C5.2.18), with the fields aarch64-cpu's `SPSR_EL1` lacks;
    /// the layout of `PtRegs::pstate` and of Linux's `PSR_*` constants.
    pub PSR [
        /// Negative condition flag.
        N OFFSET(31) NUMBITS(1) [],
        /// Zero condition flag.
        Z OFFSET(30) NUMBITS(1) [],
        /// Carry condition flag.
        C OFFSET(29) NUMBITS(1) [],
        /// Overflow condition flag.
        V OFFSET(28) NUMBITS(1) [],
        /// Tag check override (FEAT_MTE).
        TCO OFFSET(25) NUMBITS(1) [],
        /// Data independent timing (FEAT_DIT).
        DIT OFFSET(24) NUMBITS(1) [],
        /// User access override (FEAT_UAO).
        UAO OFFSET(23) NUMBITS(1) [],
        /// Privileged access never (FEAT_PAN).
        PAN OFFSET(22) NUMBITS(1) [],
        /// Software step: the next instruction is stepped, then steps.
        SS OFFSET(21) NUMBITS(1) [],
        /// Illegal execution state.
        IL OFFSET(20) NUMBITS(1) [],
        /// Speculative store bypass safe (FEAT_SSBS).
        SSBS OFFSET(12) NUMBITS(1) [],
        /// Branch type indicator (FEAT_BTI).
        BTYPE OFFSET(10) NUMBITS(2) [],
        /// Debug exceptions masked.
        D OFFSET(9) NUMBITS(1) [],
        /// SError interrupts masked.
        A OFFSET(8) NUMBITS(1) [],
        /// IRQs masked.
        I OFFSET(7) NUMBITS(1) [],
        /// FIQs masked.
        F OFFSET(6) NUMBITS(1) [],
        /// Execution state and mode (AArch64: EL and SP selection).
        M OFFSET(0) NUMBITS(5) [
            EL0t = 0b00000,
            EL1t = 0b00100,
            EL1h = 0b00101,
            EL2t = 0b01000,
            EL2h = 0b01001
        ]
    ]
}

/// PSTATE.{D,A,I,F}: every exception mask (Linux's `DAIF_MASK`).
pub const PSR_DAIF_MASK: u64 = PSR::D::SET.value | PSR::A::SET.value | PSR::I::SET.value | PSR::F::SET.value;

/// The bits of an AArch64 SPSR that are RES0 on the CPUs this kernel
/// supports (Linux's `SPSR_EL1_AARCH64_RES0_BITS`: 63:32, 27:26, 23:22,
/// 20:13 with IL at 20, and 5): a saved PSTATE from user memory has them
/// cleared before it is returned to.
pub const PSR_AARCH64_RES0: u64 = !0xffff_ffff
    | (0b11 << 26)
    | PSR::UAO::SET.value
    | PSR::PAN::SET.value
    | PSR::IL::SET.value
    | (0x7f << 13)
    | (1 << 5);

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
        // M[3:0] = EL0t (Linux's `user_mode()` tests the same four bits).
        self.psr().read(PSR::M) & 0b1111 == 0
    }

    /// Whether the interrupted code ran with IRQs masked (Linux's
    /// `!interrupts_enabled(regs)`).
    pub fn irqs_masked(&self) -> bool {
        self.psr().is_set(PSR::I)
    }

    /// PSTATE with every field named.
    pub fn psr(&self) -> InMemoryRegister<u64, PSR::Register> {
        InMemoryRegister::new(self.pstate)
    }

    /// PSTATE decoded, for oops output.
    pub fn pstate_reg(&self) -> InMemoryRegister<u64, SPSR_EL1::Register> {
        InMemoryRegister::new(self.pstate)
    }
}
