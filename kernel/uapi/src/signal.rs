//! Signal numbers (include/uapi/asm-generic/signal.h, which arm64 uses).

/// Number of signals: 1..=64 are valid.
pub const NSIG: usize = 64;
/// The first real-time signal number as the kernel defines it.
pub const SIGRTMIN: u32 = 32;
/// The last real-time signal number.
pub const SIGRTMAX: u32 = 64;

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
