//! ptrace's ABI on arm64: request, option and event numbers
//! (include/uapi/linux/ptrace.h, arch/arm64/include/uapi/asm/ptrace.h),
//! the regset note types (include/uapi/linux/elf.h) and the structures
//! `PTRACE_GETREGSET` and `PTRACE_GET_SYSCALL_INFO` copy out, with their
//! exact little-endian images.

/// ptrace requests.
pub mod req {
    /// Be traced by the parent.
    pub const PTRACE_TRACEME: i64 = 0;
    /// Read a word of text.
    pub const PTRACE_PEEKTEXT: i64 = 1;
    /// Read a word of data.
    pub const PTRACE_PEEKDATA: i64 = 2;
    /// Read a word of the USER area.
    pub const PTRACE_PEEKUSR: i64 = 3;
    /// Write a word of text.
    pub const PTRACE_POKETEXT: i64 = 4;
    /// Write a word of data.
    pub const PTRACE_POKEDATA: i64 = 5;
    /// Write a word of the USER area.
    pub const PTRACE_POKEUSR: i64 = 6;
    /// Resume.
    pub const PTRACE_CONT: i64 = 7;
    /// Kill the tracee.
    pub const PTRACE_KILL: i64 = 8;
    /// Resume for one instruction.
    pub const PTRACE_SINGLESTEP: i64 = 9;
    /// Attach (sending SIGSTOP).
    pub const PTRACE_ATTACH: i64 = 16;
    /// Detach.
    pub const PTRACE_DETACH: i64 = 17;
    /// Resume until the next system call entry or exit.
    pub const PTRACE_SYSCALL: i64 = 24;
    /// Resume, stopping at the next system call entry and skipping the
    /// call (arm64 has it since Linux 5.3).
    pub const PTRACE_SYSEMU: i64 = 31;
    /// PTRACE_SYSEMU while single-stepping.
    pub const PTRACE_SYSEMU_SINGLESTEP: i64 = 32;
    /// arm64: read MTE tags.
    pub const PTRACE_PEEKMTETAGS: i64 = 33;
    /// arm64: write MTE tags.
    pub const PTRACE_POKEMTETAGS: i64 = 34;
    /// Set `PTRACE_O_*` options.
    pub const PTRACE_SETOPTIONS: i64 = 0x4200;
    /// Read the message of the last event.
    pub const PTRACE_GETEVENTMSG: i64 = 0x4201;
    /// Read the siginfo of the stop.
    pub const PTRACE_GETSIGINFO: i64 = 0x4202;
    /// Replace the siginfo of the stop.
    pub const PTRACE_SETSIGINFO: i64 = 0x4203;
    /// Read a register set (`NT_*`) through an iovec.
    pub const PTRACE_GETREGSET: i64 = 0x4204;
    /// Write a register set.
    pub const PTRACE_SETREGSET: i64 = 0x4205;
    /// Attach without stopping.
    pub const PTRACE_SEIZE: i64 = 0x4206;
    /// Stop a seized tracee.
    pub const PTRACE_INTERRUPT: i64 = 0x4207;
    /// Wait for events without resuming (group-stop).
    pub const PTRACE_LISTEN: i64 = 0x4208;
    /// Read queued siginfos.
    pub const PTRACE_PEEKSIGINFO: i64 = 0x4209;
    /// PTRACE_PEEKSIGINFO's flag: read the process-wide queue.
    pub const PTRACE_PEEKSIGINFO_SHARED: u32 = 1;
    /// Read the blocked mask.
    pub const PTRACE_GETSIGMASK: i64 = 0x420a;
    /// Set the blocked mask.
    pub const PTRACE_SETSIGMASK: i64 = 0x420b;
    /// Read a seccomp filter.
    pub const PTRACE_SECCOMP_GET_FILTER: i64 = 0x420c;
    /// Read seccomp filter metadata.
    pub const PTRACE_SECCOMP_GET_METADATA: i64 = 0x420d;
    /// Read `struct ptrace_syscall_info`.
    pub const PTRACE_GET_SYSCALL_INFO: i64 = 0x420e;
    /// Read the rseq configuration.
    pub const PTRACE_GET_RSEQ_CONFIGURATION: i64 = 0x420f;
    /// Set syscall user dispatch.
    pub const PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG: i64 = 0x4210;
    /// Read syscall user dispatch.
    pub const PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG: i64 = 0x4211;
}
pub use req::*;

/// `PTRACE_O_*` options.
pub mod opt {
    /// Syscall stops report SIGTRAP | 0x80.
    pub const PTRACE_O_TRACESYSGOOD: u64 = 1;
    /// Stop at fork and trace the child.
    pub const PTRACE_O_TRACEFORK: u64 = 1 << 1;
    /// Stop at vfork and trace the child.
    pub const PTRACE_O_TRACEVFORK: u64 = 1 << 2;
    /// Stop at clone and trace the child.
    pub const PTRACE_O_TRACECLONE: u64 = 1 << 3;
    /// Stop at execve.
    pub const PTRACE_O_TRACEEXEC: u64 = 1 << 4;
    /// Stop when a vfork child releases the parent.
    pub const PTRACE_O_TRACEVFORKDONE: u64 = 1 << 5;
    /// Stop at exit.
    pub const PTRACE_O_TRACEEXIT: u64 = 1 << 6;
    /// Stop at seccomp RET_TRACE.
    pub const PTRACE_O_TRACESECCOMP: u64 = 1 << 7;
    /// Kill the tracee when the tracer exits.
    pub const PTRACE_O_EXITKILL: u64 = 1 << 20;
    /// Suspend seccomp for the tracee.
    pub const PTRACE_O_SUSPEND_SECCOMP: u64 = 1 << 21;
    /// Every valid option.
    pub const PTRACE_O_MASK: u64 = 0x0000_00ff | PTRACE_O_EXITKILL | PTRACE_O_SUSPEND_SECCOMP;
}
pub use opt::*;

/// `PTRACE_EVENT_*`: the event in bits 16.. of a ptrace stop's status.
pub mod event {
    /// fork.
    pub const PTRACE_EVENT_FORK: u32 = 1;
    /// vfork.
    pub const PTRACE_EVENT_VFORK: u32 = 2;
    /// clone.
    pub const PTRACE_EVENT_CLONE: u32 = 3;
    /// execve.
    pub const PTRACE_EVENT_EXEC: u32 = 4;
    /// vfork done.
    pub const PTRACE_EVENT_VFORK_DONE: u32 = 5;
    /// exit.
    pub const PTRACE_EVENT_EXIT: u32 = 6;
    /// seccomp.
    pub const PTRACE_EVENT_SECCOMP: u32 = 7;
    /// A group-stop or PTRACE_INTERRUPT stop of a seized tracee.
    pub const PTRACE_EVENT_STOP: u32 = 128;
}
pub use event::*;

/// `PTRACE_GETEVENTMSG` at a system call stop: which side of the call the
/// tracee stopped at (what `PTRACE_GET_SYSCALL_INFO` reports as its `op`).
pub mod eventmsg {
    /// Stopped at system call entry.
    pub const PTRACE_EVENTMSG_SYSCALL_ENTRY: u64 = 1;
    /// Stopped at system call exit.
    pub const PTRACE_EVENTMSG_SYSCALL_EXIT: u64 = 2;
}
pub use eventmsg::*;

/// `PTRACE_SYSCALL_INFO_*`: what `ptrace_syscall_info.op` says.
pub mod info_op {
    /// Not a system call stop.
    pub const PTRACE_SYSCALL_INFO_NONE: u8 = 0;
    /// System call entry.
    pub const PTRACE_SYSCALL_INFO_ENTRY: u8 = 1;
    /// System call exit.
    pub const PTRACE_SYSCALL_INFO_EXIT: u8 = 2;
    /// seccomp stop.
    pub const PTRACE_SYSCALL_INFO_SECCOMP: u8 = 3;
}
pub use info_op::*;

/// Regset note types for PTRACE_GETREGSET (include/uapi/linux/elf.h).
pub mod nt {
    /// General registers: `struct user_pt_regs`.
    pub const NT_PRSTATUS: u32 = 1;
    /// FP/SIMD registers: `struct user_fpsimd_state`.
    pub const NT_PRFPREG: u32 = 2;
    /// siginfo.
    pub const NT_SIGINFO: u32 = 0x5349_4749;
    /// TPIDR_EL0 (and TPIDR2_EL0).
    pub const NT_ARM_TLS: u32 = 0x401;
    /// Hardware breakpoints.
    pub const NT_ARM_HW_BREAK: u32 = 0x402;
    /// Hardware watchpoints.
    pub const NT_ARM_HW_WATCH: u32 = 0x403;
    /// The system call number (read and write).
    pub const NT_ARM_SYSTEM_CALL: u32 = 0x404;
    /// SVE registers.
    pub const NT_ARM_SVE: u32 = 0x405;
    /// Pointer authentication masks.
    pub const NT_ARM_PAC_MASK: u32 = 0x406;
    /// Tagged address control (prctl).
    pub const NT_ARM_TAGGED_ADDR_CTRL: u32 = 0x409;
    /// Enabled pointer authentication keys.
    pub const NT_ARM_PAC_ENABLED_KEYS: u32 = 0x40a;
}
pub use nt::*;

/// `AUDIT_ARCH_AARCH64`: `ptrace_syscall_info.arch` on arm64
/// (EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
pub const AUDIT_ARCH_AARCH64: u32 = 183 | 0x8000_0000 | 0x4000_0000;

/// `struct user_pt_regs`: the NT_PRSTATUS regset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserPtRegs {
    /// x0..x30.
    pub regs: [u64; 31],
    /// SP_EL0.
    pub sp: u64,
    /// The program counter.
    pub pc: u64,
    /// PSTATE.
    pub pstate: u64,
}

impl UserPtRegs {
    /// Its size in user memory.
    pub const SIZE: usize = 34 * 8;

    /// The bytes the tracer sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        let words = self.regs.iter().chain([&self.sp, &self.pc, &self.pstate]);
        for (chunk, w) in b.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Reads the image a tracer wrote.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> UserPtRegs {
        let mut w = [0u64; 34];
        for (x, chunk) in w.iter_mut().zip(b.chunks_exact(8)) {
            *x = u64::from_le_bytes([
                chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
            ]);
        }
        let mut regs = [0u64; 31];
        regs.copy_from_slice(&w[..31]);
        UserPtRegs {
            regs,
            sp: w[31],
            pc: w[32],
            pstate: w[33],
        }
    }
}

/// `struct user_fpsimd_state`: the NT_PRFPREG regset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserFpsimdState {
    /// V0..V31.
    pub vregs: [u128; 32],
    /// FPSR.
    pub fpsr: u32,
    /// FPCR.
    pub fpcr: u32,
}

impl UserFpsimdState {
    /// Its size in user memory (with `__reserved[2]`).
    pub const SIZE: usize = 32 * 16 + 16;

    /// The bytes the tracer sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        for (chunk, v) in b.chunks_exact_mut(16).zip(&self.vregs) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        b[512..516].copy_from_slice(&self.fpsr.to_le_bytes());
        b[516..520].copy_from_slice(&self.fpcr.to_le_bytes());
        b
    }

    /// Reads the image a tracer wrote (the reserved words are ignored).
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> UserFpsimdState {
        let mut s = UserFpsimdState::default();
        for (v, chunk) in s.vregs.iter_mut().zip(b.chunks_exact(16)) {
            let mut le = [0u8; 16];
            le.copy_from_slice(chunk);
            *v = u128::from_le_bytes(le);
        }
        s.fpsr = u32::from_le_bytes([b[512], b[513], b[514], b[515]]);
        s.fpcr = u32::from_le_bytes([b[516], b[517], b[518], b[519]]);
        s
    }
}

/// What a `struct ptrace_syscall_info` describes, by its `op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallInfoKind {
    /// `PTRACE_SYSCALL_INFO_NONE`.
    None,
    /// `PTRACE_SYSCALL_INFO_ENTRY`: number and arguments.
    Entry {
        /// The system call number.
        nr: u64,
        /// x0..x5 (x0 as at entry).
        args: [u64; 6],
    },
    /// `PTRACE_SYSCALL_INFO_EXIT`: the result.
    Exit {
        /// The return value, or `-errno`.
        rval: i64,
        /// Whether `rval` is an error.
        is_error: bool,
    },
    /// `PTRACE_SYSCALL_INFO_SECCOMP`.
    Seccomp {
        /// The system call number.
        nr: u64,
        /// x0..x5.
        args: [u64; 6],
        /// SECCOMP_RET_DATA.
        ret_data: u32,
    },
}

/// `struct ptrace_syscall_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtraceSyscallInfo {
    /// `arch`: [`AUDIT_ARCH_AARCH64`].
    pub arch: u32,
    /// The program counter.
    pub instruction_pointer: u64,
    /// The user stack pointer.
    pub stack_pointer: u64,
    /// `op` and the union.
    pub kind: SyscallInfoKind,
}

impl PtraceSyscallInfo {
    /// The size of the whole structure.
    pub const SIZE: usize = 88;

    /// The image, and how many of its bytes Linux counts as filled (what
    /// `PTRACE_GET_SYSCALL_INFO` returns: up to the end of the `op`'s part
    /// of the union).
    pub fn to_bytes(&self) -> ([u8; Self::SIZE], usize) {
        let mut b = [0u8; Self::SIZE];
        let put = |b: &mut [u8; Self::SIZE], at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        let (op, len) = match self.kind {
            SyscallInfoKind::None => (PTRACE_SYSCALL_INFO_NONE, 24),
            SyscallInfoKind::Entry { nr, args } => {
                put(&mut b, 24, &nr.to_le_bytes());
                for (i, a) in args.iter().enumerate() {
                    put(&mut b, 32 + 8 * i, &a.to_le_bytes());
                }
                (PTRACE_SYSCALL_INFO_ENTRY, 80)
            }
            SyscallInfoKind::Exit { rval, is_error } => {
                put(&mut b, 24, &rval.to_le_bytes());
                b[32] = is_error as u8;
                (PTRACE_SYSCALL_INFO_EXIT, 33)
            }
            SyscallInfoKind::Seccomp { nr, args, ret_data } => {
                put(&mut b, 24, &nr.to_le_bytes());
                for (i, a) in args.iter().enumerate() {
                    put(&mut b, 32 + 8 * i, &a.to_le_bytes());
                }
                put(&mut b, 80, &ret_data.to_le_bytes());
                (PTRACE_SYSCALL_INFO_SECCOMP, 84)
            }
        };
        b[0] = op;
        put(&mut b, 4, &self.arch.to_le_bytes());
        put(&mut b, 8, &self.instruction_pointer.to_le_bytes());
        put(&mut b, 16, &self.stack_pointer.to_le_bytes());
        (b, len)
    }
}

/// `struct ptrace_rseq_configuration` (PTRACE_GET_RSEQ_CONFIGURATION):
/// the tracee's registered `struct rseq`, all zero when none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtraceRseqConfiguration {
    /// `rseq_abi_pointer`: the user address of the area.
    pub rseq_abi_pointer: u64,
    /// `rseq_abi_size`: the length it was registered with.
    pub rseq_abi_size: u32,
    /// `signature`: the abort signature.
    pub signature: u32,
    /// `flags`: always 0 in Linux 6.12.
    pub flags: u32,
}

impl PtraceRseqConfiguration {
    /// The size of the structure (with its trailing `pad`), which the
    /// request returns whatever size the caller passed.
    pub const SIZE: usize = 24;

    /// The little-endian image.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..8].copy_from_slice(&self.rseq_abi_pointer.to_le_bytes());
        b[8..12].copy_from_slice(&self.rseq_abi_size.to_le_bytes());
        b[12..16].copy_from_slice(&self.signature.to_le_bytes());
        b[16..20].copy_from_slice(&self.flags.to_le_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_linux() {
        assert_eq!(
            (PTRACE_TRACEME, PTRACE_SYSCALL, PTRACE_SEIZE, PTRACE_GET_SYSCALL_INFO),
            (0, 24, 0x4206, 0x420e)
        );
        assert_eq!(PTRACE_O_MASK, 0x3000ff);
        assert_eq!((PTRACE_EVENT_EXIT, PTRACE_EVENT_STOP), (6, 128));
        assert_eq!((PTRACE_EVENTMSG_SYSCALL_ENTRY, PTRACE_EVENTMSG_SYSCALL_EXIT), (1, 2));
        assert_eq!((NT_PRSTATUS, NT_PRFPREG, NT_ARM_SYSTEM_CALL), (1, 2, 0x404));
        assert_eq!(AUDIT_ARCH_AARCH64, 0xc000_00b7);
    }

    #[test]
    fn rseq_configuration_layout_matches_linux() {
        let b = PtraceRseqConfiguration {
            rseq_abi_pointer: 0x0102_0304_0506_0708,
            rseq_abi_size: 32,
            signature: 0xd428_bc00,
            flags: 0,
        }
        .to_bytes();
        assert_eq!(PTRACE_GET_RSEQ_CONFIGURATION, 0x420f);
        assert_eq!((b[0], b[7], b[8], b[12], b[15]), (8, 1, 32, 0, 0xd4));
        assert_eq!(&b[16..24], &[0; 8]);
    }

    #[test]
    fn user_pt_regs_image_round_trips() {
        let mut r = UserPtRegs {
            sp: 0x7fff_0000,
            pc: 0x40_0000,
            pstate: 0x8000_0000,
            ..Default::default()
        };
        r.regs[0] = 1;
        r.regs[30] = 0xdead;
        let b = r.to_bytes();
        assert_eq!(b[0], 1);
        assert_eq!(&b[30 * 8..30 * 8 + 2], &[0xad, 0xde]);
        assert_eq!(&b[32 * 8..32 * 8 + 3], &[0, 0, 0x40]);
        assert_eq!(UserPtRegs::from_bytes(&b), r);
    }

    #[test]
    fn user_fpsimd_state_image_round_trips() {
        let mut s = UserFpsimdState {
            fpsr: 0x1f,
            fpcr: 0x0300_0000,
            ..Default::default()
        };
        s.vregs[1] = 0x0102;
        let b = s.to_bytes();
        assert_eq!(&b[16..18], &[2, 1]);
        assert_eq!(&b[512..520], &[0x1f, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(UserFpsimdState::from_bytes(&b), s);
    }

    #[test]
    fn syscall_info_layout_and_lengths() {
        let base = |kind| PtraceSyscallInfo {
            arch: AUDIT_ARCH_AARCH64,
            instruction_pointer: 0x1000,
            stack_pointer: 0x2000,
            kind,
        };
        let (b, len) = base(SyscallInfoKind::Entry {
            nr: 172,
            args: [1, 2, 3, 4, 5, 6],
        })
        .to_bytes();
        assert_eq!((b[0], len), (PTRACE_SYSCALL_INFO_ENTRY, 80));
        assert_eq!(&b[4..8], &[0xb7, 0, 0, 0xc0]);
        assert_eq!((b[8], b[17], b[24], b[32], b[72]), (0, 0x20, 172, 1, 6));
        let (b, len) = base(SyscallInfoKind::Exit {
            rval: -2,
            is_error: true,
        })
        .to_bytes();
        assert_eq!(
            (b[0], len, b[24], b[31], b[32]),
            (PTRACE_SYSCALL_INFO_EXIT, 33, 0xfe, 0xff, 1)
        );
        assert_eq!(base(SyscallInfoKind::None).to_bytes().1, 24);
        let (b, len) = base(SyscallInfoKind::Seccomp {
            nr: 1,
            args: [0; 6],
            ret_data: 7,
        })
        .to_bytes();
        assert_eq!((b[0], len, b[80]), (PTRACE_SYSCALL_INFO_SECCOMP, 84, 7));
    }
}

/// `struct ptrace_peeksiginfo_args`: which queued siginfos
/// PTRACE_PEEKSIGINFO copies out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtracePeeksiginfoArgs {
    /// Index of the first entry.
    pub off: u64,
    /// `PTRACE_PEEKSIGINFO_SHARED` or 0.
    pub flags: u32,
    /// How many to copy at most.
    pub nr: i32,
}

impl PtracePeeksiginfoArgs {
    /// Its size in user memory.
    pub const SIZE: usize = 16;

    /// The image in user memory.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[..8].copy_from_slice(&self.off.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..].copy_from_slice(&self.nr.to_le_bytes());
        b
    }

    /// Reads the image a tracer passed.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        let [o0, o1, o2, o3, o4, o5, o6, o7, f0, f1, f2, f3, n0, n1, n2, n3] = *b;
        PtracePeeksiginfoArgs {
            off: u64::from_le_bytes([o0, o1, o2, o3, o4, o5, o6, o7]),
            flags: u32::from_le_bytes([f0, f1, f2, f3]),
            nr: i32::from_le_bytes([n0, n1, n2, n3]),
        }
    }
}

#[cfg(test)]
mod peeksiginfo_tests {
    use super::*;

    #[test]
    fn peeksiginfo_args_round_trip_through_their_user_image() {
        let a = PtracePeeksiginfoArgs {
            off: 0x1122_3344_5566_7788,
            flags: PTRACE_PEEKSIGINFO_SHARED,
            nr: -2,
        };
        let b = a.to_bytes();
        assert_eq!(&b[8..12], &1u32.to_le_bytes());
        assert_eq!(PtracePeeksiginfoArgs::from_bytes(&b), a);
    }
}

/// `pstate` bits of `user_pt_regs` (arch/arm64/include/uapi/asm/ptrace.h).
pub mod psr {
    /// Mode field: EL0 with SP_EL0 (the only mode user pstate may hold).
    pub const PSR_MODE_EL0t: u64 = 0x0;
    /// Mode field: EL1 with SP_EL0.
    pub const PSR_MODE_EL1t: u64 = 0x4;
    /// Mode field: EL1 with SP_EL1.
    pub const PSR_MODE_EL1h: u64 = 0x5;
    /// Mode field: EL2 with SP_EL0.
    pub const PSR_MODE_EL2t: u64 = 0x8;
    /// Mode field: EL2 with SP_EL2.
    pub const PSR_MODE_EL2h: u64 = 0x9;
    /// Mode field: EL3 with SP_EL0.
    pub const PSR_MODE_EL3t: u64 = 0xc;
    /// Mode field: EL3 with SP_EL3.
    pub const PSR_MODE_EL3h: u64 = 0xd;
    /// The mode field.
    pub const PSR_MODE_MASK: u64 = 0xf;
    /// AArch32 execution state.
    pub const PSR_MODE32_BIT: u64 = 0x10;
    /// FIQ masked.
    pub const PSR_F_BIT: u64 = 0x40;
    /// IRQ masked.
    pub const PSR_I_BIT: u64 = 0x80;
    /// SError masked.
    pub const PSR_A_BIT: u64 = 0x100;
    /// Debug exceptions masked.
    pub const PSR_D_BIT: u64 = 0x200;
    /// Branch-target-identification type field.
    pub const PSR_BTYPE_MASK: u64 = 0xc00;
    /// Speculative store bypass safe.
    pub const PSR_SSBS_BIT: u64 = 0x1000;
    /// Privileged access never.
    pub const PSR_PAN_BIT: u64 = 0x40_0000;
    /// User access override.
    pub const PSR_UAO_BIT: u64 = 0x80_0000;
    /// Data-independent timing.
    pub const PSR_DIT_BIT: u64 = 0x100_0000;
    /// Tag check override (MTE).
    pub const PSR_TCO_BIT: u64 = 0x200_0000;
    /// Overflow flag.
    pub const PSR_V_BIT: u64 = 0x1000_0000;
    /// Carry flag.
    pub const PSR_C_BIT: u64 = 0x2000_0000;
    /// Zero flag.
    pub const PSR_Z_BIT: u64 = 0x4000_0000;
    /// Negative flag.
    pub const PSR_N_BIT: u64 = 0x8000_0000;

    #[cfg(test)]
    mod tests {
        use super::*;

        // The pstate a fresh arm64 process and a SIGTRAP handler see on
        // Linux: EL0t with nothing masked; the DAIF bits are 0x3c0.
        #[test]
        fn daif_bits_and_modes_have_linux_values() {
            assert_eq!(PSR_D_BIT | PSR_A_BIT | PSR_I_BIT | PSR_F_BIT, 0x3c0);
            assert_eq!(PSR_D_BIT | PSR_A_BIT | PSR_I_BIT | PSR_F_BIT | PSR_MODE_EL1h, 0x3c5);
            assert_eq!(PSR_MODE_EL1h & PSR_MODE_MASK, PSR_MODE_EL1h);
            assert_eq!(PSR_N_BIT | PSR_Z_BIT | PSR_C_BIT | PSR_V_BIT, 0xf000_0000);
        }
    }
}
