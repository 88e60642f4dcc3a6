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
}
