//! Signal numbers (include/uapi/asm-generic/signal.h, which arm64 uses).

/// Number of signals: 1..=64 are valid.
pub const NSIG: usize = 64;
/// The first real-time signal number as the kernel defines it.
pub const SIGRTMIN: u32 = 32;
/// The last real-time signal number.
pub const SIGRTMAX: u32 = 64;
/// `sizeof(sigset_t)` in the kernel's ABI: the only `sigsetsize` the
/// rt_sig* calls, ppoll, pselect6, epoll_pwait and PTRACE_GETSIGMASK take.
pub const SIGSET_SIZE: u64 = (NSIG / 8) as u64;

/// The standard signal numbers.
pub mod nr {
    /// Hangup.
    pub const SIGHUP: u32 = 1;
    /// Interrupt from the keyboard.
    pub const SIGINT: u32 = 2;
    /// Quit from the keyboard.
    pub const SIGQUIT: u32 = 3;
    /// Illegal instruction.
    pub const SIGILL: u32 = 4;
    /// Trace or breakpoint trap.
    pub const SIGTRAP: u32 = 5;
    /// Abort.
    pub const SIGABRT: u32 = 6;
    /// Bus error (bad memory access).
    pub const SIGBUS: u32 = 7;
    /// Arithmetic exception.
    pub const SIGFPE: u32 = 8;
    /// Kill (cannot be caught or ignored).
    pub const SIGKILL: u32 = 9;
    /// User-defined signal 1.
    pub const SIGUSR1: u32 = 10;
    /// Invalid memory reference.
    pub const SIGSEGV: u32 = 11;
    /// User-defined signal 2.
    pub const SIGUSR2: u32 = 12;
    /// Write to a pipe with no readers.
    pub const SIGPIPE: u32 = 13;
    /// Timer signal from alarm/setitimer.
    pub const SIGALRM: u32 = 14;
    /// Termination.
    pub const SIGTERM: u32 = 15;
    /// Stack fault on coprocessor (unused).
    pub const SIGSTKFLT: u32 = 16;
    /// Child stopped, continued or terminated.
    pub const SIGCHLD: u32 = 17;
    /// Continue if stopped.
    pub const SIGCONT: u32 = 18;
    /// Stop (cannot be caught or ignored).
    pub const SIGSTOP: u32 = 19;
    /// Stop typed at the terminal.
    pub const SIGTSTP: u32 = 20;
    /// Terminal input for a background process.
    pub const SIGTTIN: u32 = 21;
    /// Terminal output for a background process.
    pub const SIGTTOU: u32 = 22;
    /// Urgent condition on a socket.
    pub const SIGURG: u32 = 23;
    /// CPU time limit exceeded.
    pub const SIGXCPU: u32 = 24;
    /// File size limit exceeded.
    pub const SIGXFSZ: u32 = 25;
    /// Virtual alarm clock.
    pub const SIGVTALRM: u32 = 26;
    /// Profiling timer expired.
    pub const SIGPROF: u32 = 27;
    /// Window resize.
    pub const SIGWINCH: u32 = 28;
    /// I/O now possible (SIGPOLL).
    pub const SIGIO: u32 = 29;
    /// Power failure.
    pub const SIGPWR: u32 = 30;
    /// Bad system call.
    pub const SIGSYS: u32 = 31;
}
pub use nr::*;

/// Linux's name for signal `sig` (`"SIGSEGV"`), `None` for real-time and
/// invalid numbers.
pub const fn name(sig: u32) -> Option<&'static str> {
    const NAMES: [&str; 31] = [
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    if sig >= 1 && sig <= 31 {
        Some(NAMES[sig as usize - 1])
    } else {
        None
    }
}

/// `struct sigaction` as the kernel sees it on arm64 (`struct
/// kernel_sigaction`: handler, flags, restorer, then the 64-bit mask).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelSigaction {
    /// `sa_handler` / `sa_sigaction`, or SIG_DFL (0) / SIG_IGN (1).
    pub handler: u64,
    /// `sa_flags` (`SA_*`).
    pub flags: u64,
    /// `sa_restorer`.
    pub restorer: u64,
    /// `sa_mask`: bit `n - 1` blocks signal `n`.
    pub mask: u64,
}

impl KernelSigaction {
    /// Its size in user memory.
    pub const SIZE: usize = 32;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        words_to_bytes([self.handler, self.flags, self.restorer, self.mask])
    }

    /// Reads the bytes a user program wrote.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> KernelSigaction {
        let [handler, flags, restorer, mask] = words_from_bytes(b);
        KernelSigaction {
            handler,
            flags,
            restorer,
            mask,
        }
    }
}

/// `stack_t`, the alternate signal stack of `sigaltstack` (and of
/// `uc_stack` in a signal frame).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackT {
    /// `ss_sp`: the lowest address of the stack.
    pub ss_sp: u64,
    /// `ss_flags` (SS_ONSTACK, SS_DISABLE, SS_AUTODISARM).
    pub ss_flags: i32,
    /// `ss_size`.
    pub ss_size: u64,
}

impl StackT {
    /// Its size in user memory (4 bytes of padding after `ss_flags`).
    pub const SIZE: usize = 24;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        words_to_bytes([self.ss_sp, self.ss_flags as u32 as u64, self.ss_size])
    }

    /// Reads the bytes a user program wrote (the padding is ignored).
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> StackT {
        let [ss_sp, flags, ss_size] = words_from_bytes(b);
        StackT {
            ss_sp,
            ss_flags: flags as u32 as i32,
            ss_size,
        }
    }
}

fn words_to_bytes<const W: usize, const B: usize>(words: [u64; W]) -> [u8; B] {
    let mut b = [0u8; B];
    for (chunk, w) in b.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    b
}

fn words_from_bytes<const W: usize, const B: usize>(b: &[u8; B]) -> [u64; W] {
    let mut w = [0u64; W];
    for (x, chunk) in w.iter_mut().zip(b.chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(chunk);
        *x = u64::from_le_bytes(le);
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_match_linux() {
        assert_eq!((SIGKILL, SIGSEGV, SIGCHLD, SIGSTOP, SIGSYS), (9, 11, 17, 19, 31));
        assert_eq!(SIGSET_SIZE, 8);
        assert_eq!(name(SIGSEGV), Some("SIGSEGV"));
        assert_eq!(name(SIGIO), Some("SIGIO"));
        assert_eq!(name(SIGSYS), Some("SIGSYS"));
        assert_eq!(name(0), None);
        assert_eq!(name(SIGRTMIN), None);
        assert_eq!(SIGRTMAX as usize, NSIG);
    }

    #[test]
    fn sigaction_and_stack_t_images() {
        let a = KernelSigaction {
            handler: 0x400123,
            flags: 0x0400_0004,
            restorer: 0x400200,
            mask: 1 << 9,
        };
        let b = a.to_bytes();
        assert_eq!((b[0], b[1], b[8], b[11], b[16], b[25]), (0x23, 0x01, 4, 4, 0, 2));
        assert_eq!(KernelSigaction::from_bytes(&b), a);
        let s = StackT {
            ss_sp: 0x1000,
            ss_flags: 2,
            ss_size: 0x4000,
        };
        let b = s.to_bytes();
        assert_eq!((b[1], b[8], b[12], b[17]), (0x10, 2, 0, 0x40));
        assert_eq!(StackT::from_bytes(&b), s);
        let mut b = b;
        b[12] = 0xff; // padding
        assert_eq!(StackT::from_bytes(&b), s);
    }
}

/// `si_code` values.
#[allow(missing_docs)]
pub mod code {
    pub const SI_USER: i32 = 0;
    pub const SI_QUEUE: i32 = -1;
    pub const SI_KERNEL: i32 = 0x80;
    pub const SI_TKILL: i32 = -6;
    pub const SEGV_MAPERR: i32 = 1;
    pub const SEGV_ACCERR: i32 = 2;
    pub const BUS_ADRALN: i32 = 1;
    pub const ILL_ILLOPC: i32 = 1;
    pub const TRAP_BRKPT: i32 = 1;
    pub const TRAP_TRACE: i32 = 2;
    pub const TRAP_HWBKPT: i32 = 4;
    pub const TRAP_UNK: i32 = 5;
    pub const CLD_EXITED: i32 = 1;
    pub const CLD_KILLED: i32 = 2;
    pub const CLD_DUMPED: i32 = 3;
    pub const CLD_STOPPED: i32 = 5;
    pub const CLD_CONTINUED: i32 = 6;
    pub const CLD_TRAPPED: i32 = 4;
    /// Highest SIGTRAP `si_code` with the fault layout (NSIGTRAP): a
    /// ptrace stop's code (0x85, event << 8 | 5) is above it.
    pub const NSIGTRAP: i32 = 6;
}

/// `rt_sigprocmask` how: add the set to the mask.
pub const SIG_BLOCK: u64 = 0;
/// Remove the set from the mask.
pub const SIG_UNBLOCK: u64 = 1;
/// Replace the mask with the set.
pub const SIG_SETMASK: u64 = 2;

/// `stack_t.ss_flags`: the thread runs on its alternate stack.
pub const SS_ONSTACK: i32 = 1;
/// The alternate stack is disabled.
pub const SS_DISABLE: i32 = 2;
/// Disable the alternate stack on entry to a handler.
pub const SS_AUTODISARM: i32 = 1 << 31;
/// Smallest alternate stack (arm64's `MINSIGSTKSZ`).
pub const MINSIGSTKSZ: u64 = 5120;

/// Signal handler values.
pub const SIG_DFL: u64 = 0;
/// Ignore.
pub const SIG_IGN: u64 = 1;

/// sa_flags bits.
#[allow(missing_docs)]
pub mod sa {
    pub const SA_NOCLDSTOP: u64 = 1;
    pub const SA_NOCLDWAIT: u64 = 2;
    pub const SA_SIGINFO: u64 = 4;
    pub const SA_UNSUPPORTED: u64 = 0x400;
    pub const SA_EXPOSE_TAGBITS: u64 = 0x800;
    pub const SA_ONSTACK: u64 = 0x0800_0000;
    pub const SA_RESTART: u64 = 0x1000_0000;
    pub const SA_NODEFER: u64 = 0x4000_0000;
    pub const SA_RESETHAND: u64 = 0x8000_0000;
    pub const SA_RESTORER: u64 = 0x0400_0000;
}

/// Size of `siginfo_t` on every Linux architecture.
pub const SIGINFO_SIZE: usize = 128;

/// A queued signal's information (`siginfo_t` fields the kernel uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigInfo {
    /// Signal number.
    pub signo: u32,
    /// `si_errno`.
    pub errno: i32,
    /// `si_code`.
    pub code: i32,
    /// Sender PID (kill), or child PID (SIGCHLD).
    pub pid: u32,
    /// Sender UID.
    pub uid: u32,
    /// SIGCHLD: exit status or signal.
    pub status: i32,
    /// Faults: the address.
    pub addr: u64,
    /// `si_value` (sigqueue, rt_sigqueueinfo).
    pub value: u64,
}

impl SigInfo {
    /// The 128-byte `siginfo_t`.
    pub fn to_bytes(&self) -> [u8; SIGINFO_SIZE] {
        let mut b = [0u8; SIGINFO_SIZE];
        b[0..4].copy_from_slice(&(self.signo as i32).to_le_bytes());
        b[4..8].copy_from_slice(&self.errno.to_le_bytes());
        b[8..12].copy_from_slice(&self.code.to_le_bytes());
        match self.signo {
            nr::SIGTRAP if (1..=code::NSIGTRAP).contains(&self.code) => {
                b[16..24].copy_from_slice(&self.addr.to_le_bytes())
            }
            nr::SIGSEGV | nr::SIGBUS | nr::SIGILL | nr::SIGFPE if self.code > 0 => {
                b[16..24].copy_from_slice(&self.addr.to_le_bytes())
            }
            nr::SIGCHLD => {
                b[16..20].copy_from_slice(&(self.pid as i32).to_le_bytes());
                b[20..24].copy_from_slice(&self.uid.to_le_bytes());
                b[24..28].copy_from_slice(&self.status.to_le_bytes());
            }
            _ => {
                b[16..20].copy_from_slice(&(self.pid as i32).to_le_bytes());
                b[20..24].copy_from_slice(&self.uid.to_le_bytes());
                b[24..32].copy_from_slice(&self.value.to_le_bytes());
            }
        }
        b
    }

    /// Reads a 128-byte `siginfo_t` (as `rt_sigqueueinfo` and
    /// `PTRACE_SETSIGINFO` take it), picking the union member the way
    /// [`SigInfo::to_bytes`] writes it.
    pub fn from_bytes(b: &[u8; SIGINFO_SIZE]) -> SigInfo {
        let i32_at = |o: usize| i32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| {
            u64::from_le_bytes([
                b[o],
                b[o + 1],
                b[o + 2],
                b[o + 3],
                b[o + 4],
                b[o + 5],
                b[o + 6],
                b[o + 7],
            ])
        };
        let mut si = SigInfo {
            signo: i32_at(0) as u32,
            errno: i32_at(4),
            code: i32_at(8),
            ..SigInfo::default()
        };
        match si.signo {
            nr::SIGTRAP if (1..=code::NSIGTRAP).contains(&si.code) => si.addr = u64_at(16),
            nr::SIGSEGV | nr::SIGBUS | nr::SIGILL | nr::SIGFPE if si.code > 0 => si.addr = u64_at(16),
            nr::SIGCHLD => {
                si.pid = i32_at(16) as u32;
                si.uid = i32_at(20) as u32;
                si.status = i32_at(24);
            }
            _ => {
                si.pid = i32_at(16) as u32;
                si.uid = i32_at(20) as u32;
                si.value = u64_at(24);
            }
        }
        si
    }
}

#[cfg(test)]
mod siginfo_tests {
    use super::*;

    #[test]
    fn ptrace_stop_siginfo_of_sigtrap_carries_pid_not_address() {
        // A syscall stop's SIGTRAP | 0x80 and an event stop's code are
        // above NSIGTRAP: Linux lays them out as kill()'s (pid, uid).
        for code in [0x85, 0x0105, 0x8005] {
            let si = SigInfo {
                signo: nr::SIGTRAP,
                code,
                pid: 42,
                uid: 7,
                ..Default::default()
            };
            let b = si.to_bytes();
            assert_eq!(
                (&b[16..20], &b[20..24]),
                (&42i32.to_le_bytes()[..], &7u32.to_le_bytes()[..])
            );
            assert_eq!(SigInfo::from_bytes(&b), si);
        }
        let brk = SigInfo {
            signo: nr::SIGTRAP,
            code: code::TRAP_BRKPT,
            addr: 0x40_1000,
            ..Default::default()
        };
        assert_eq!(&brk.to_bytes()[16..24], &0x40_1000u64.to_le_bytes());
    }

    #[test]
    fn siginfo_fields_sit_at_linux_offsets() {
        let si = SigInfo {
            signo: nr::SIGCHLD,
            code: code::CLD_EXITED,
            pid: 42,
            uid: 7,
            status: 3,
            ..SigInfo::default()
        };
        let b = si.to_bytes();
        assert_eq!(&b[0..4], &17i32.to_le_bytes());
        assert_eq!(&b[8..12], &1i32.to_le_bytes());
        assert_eq!(&b[16..20], &42i32.to_le_bytes());
        assert_eq!(&b[20..24], &7u32.to_le_bytes());
        assert_eq!(&b[24..28], &3i32.to_le_bytes());
        let fault = SigInfo {
            signo: nr::SIGSEGV,
            code: code::SEGV_MAPERR,
            addr: 0xdead_beef,
            ..SigInfo::default()
        };
        assert_eq!(&fault.to_bytes()[16..24], &0xdead_beefu64.to_le_bytes());
    }

    #[test]
    fn siginfo_round_trips_through_bytes() {
        for si in [
            SigInfo {
                signo: nr::SIGUSR1,
                code: code::SI_QUEUE,
                pid: 9,
                uid: 0,
                value: 0x1234_5678_9abc,
                ..SigInfo::default()
            },
            SigInfo {
                signo: nr::SIGTRAP,
                code: code::TRAP_BRKPT,
                addr: 0x40_0000,
                ..SigInfo::default()
            },
            SigInfo {
                signo: nr::SIGCHLD,
                code: code::CLD_KILLED,
                pid: 3,
                uid: 1,
                status: 9,
                ..SigInfo::default()
            },
        ] {
            assert_eq!(SigInfo::from_bytes(&si.to_bytes()), si);
        }
    }
}
