//! `wait4`/`waitid` options and `waitid`'s ID types (include/uapi/linux/wait.h).

/// Return at once if no child has changed state.
pub const WNOHANG: u32 = 1;
/// Also report stopped children (`wait4`).
pub const WUNTRACED: u32 = 2;
/// Report stopped children (`waitid`; same bit as `WUNTRACED`).
pub const WSTOPPED: u32 = WUNTRACED;
/// Report exited children (`waitid`).
pub const WEXITED: u32 = 4;
/// Report children continued by `SIGCONT`.
pub const WCONTINUED: u32 = 8;
/// Leave the child waitable (`waitid`).
pub const WNOWAIT: u32 = 0x0100_0000;
/// Wait only for children of the calling thread, not of its group.
pub const WNOTHREAD: u32 = 0x2000_0000;
/// Wait for all children, whatever their exit signal.
pub const WALL: u32 = 0x4000_0000;
/// Wait only for "clone" children (exit signal other than `SIGCHLD`).
pub const WCLONE: u32 = 0x8000_0000;

/// `waitid` ID type: any child.
pub const P_ALL: u64 = 0;
/// `waitid` ID type: the child with this pid.
pub const P_PID: u64 = 1;
/// `waitid` ID type: any child in this process group.
pub const P_PGID: u64 = 2;
/// `waitid` ID type: the child this pidfd refers to.
pub const P_PIDFD: u64 = 3;

// Wait-status encoding, as Linux's kernel builds it (kernel/exit.c,
// kernel/signal.c) and glibc's <bits/waitstatus.h> decodes it. Shared so
// the kernel and userland cannot disagree about the bit layout.

/// The low 7 bits of a status that mean "stopped" rather than a signal.
pub const W_STOPPED_BITS: i32 = 0x7f;
/// Bit set in a killed child's status when it dumped core.
pub const WCOREFLAG: i32 = 0x80;
/// The whole status of a child resumed by `SIGCONT`.
pub const W_CONTINUED: i32 = 0xffff;

/// Status of a child that exited with `code` (low 8 bits kept) or was
/// killed by `sig` (0 for a normal exit).
pub const fn w_exitcode(code: i32, sig: i32) -> i32 {
    ((code & 0xff) << 8) | sig
}

/// Status of a child stopped by `sig`; ptrace event stops pass
/// `sig | event << 8`, which `WSTOPSIG` masks back to the signal.
pub const fn w_stopcode(sig: i32) -> i32 {
    (sig << 8) | W_STOPPED_BITS
}

/// The exit code of an exited child.
#[allow(non_snake_case)]
pub const fn WEXITSTATUS(status: i32) -> i32 {
    (status & 0xff00) >> 8
}

/// The signal that killed a child.
#[allow(non_snake_case)]
pub const fn WTERMSIG(status: i32) -> i32 {
    status & 0x7f
}

/// The signal that stopped a child.
#[allow(non_snake_case)]
pub const fn WSTOPSIG(status: i32) -> i32 {
    WEXITSTATUS(status)
}

/// True if the child exited normally.
#[allow(non_snake_case)]
pub const fn WIFEXITED(status: i32) -> bool {
    WTERMSIG(status) == 0
}

/// True if a signal killed the child (neither exited nor stopped).
#[allow(non_snake_case)]
pub const fn WIFSIGNALED(status: i32) -> bool {
    (((status & 0x7f) + 1) as i8 >> 1) > 0
}

/// True if the child is stopped.
#[allow(non_snake_case)]
pub const fn WIFSTOPPED(status: i32) -> bool {
    (status & 0xff) == W_STOPPED_BITS
}

/// True if `SIGCONT` resumed the child.
#[allow(non_snake_case)]
pub const fn WIFCONTINUED(status: i32) -> bool {
    status == W_CONTINUED
}

/// True if the killed child dumped core.
#[allow(non_snake_case)]
pub const fn WCOREDUMP(status: i32) -> bool {
    status & WCOREFLAG != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    // Statuses as Linux 6.12 reports them: exit(3) = 0x300, killed by
    // SIGKILL = 9, SIGSEGV with core = 0x8b, stopped by SIGSTOP = 0x137f,
    // PTRACE_EVENT_EXEC stop = 0x4057f, continued = 0xffff.
    #[test]
    fn exited_status_decodes_to_its_code() {
        assert_eq!(w_exitcode(3, 0), 0x300);
        assert_eq!(w_exitcode(0x1ff, 0), 0xff00);
        assert!(WIFEXITED(0x300));
        assert_eq!(WEXITSTATUS(0x300), 3);
        assert!(!WIFSIGNALED(0x300) && !WIFSTOPPED(0x300) && !WIFCONTINUED(0x300));
    }

    #[test]
    fn killed_status_decodes_to_its_signal_and_core_flag() {
        assert_eq!(w_exitcode(0, 9), 9);
        assert!(WIFSIGNALED(9) && !WIFEXITED(9) && !WIFSTOPPED(9));
        assert_eq!(WTERMSIG(9), 9);
        assert!(!WCOREDUMP(9));
        assert!(WIFSIGNALED(0x8b) && WCOREDUMP(0x8b));
        assert_eq!(WTERMSIG(0x8b), 11);
    }

    #[test]
    fn stopped_status_decodes_to_its_signal() {
        assert_eq!(w_stopcode(19), 0x137f);
        assert!(WIFSTOPPED(0x137f) && !WIFSIGNALED(0x137f) && !WIFEXITED(0x137f));
        assert_eq!(WSTOPSIG(0x137f), 19);
        // SIGTRAP | PTRACE_EVENT_EXEC << 8: WSTOPSIG keeps the signal,
        // status >> 16 keeps the event.
        let ev = w_stopcode(5 | (4 << 8));
        assert_eq!(ev, 0x4057f);
        assert!(WIFSTOPPED(ev));
        assert_eq!(WSTOPSIG(ev), 5);
        assert_eq!(ev >> 16, 4);
    }

    #[test]
    fn continued_status_is_only_that() {
        assert!(WIFCONTINUED(W_CONTINUED));
        assert!(!WIFSTOPPED(W_CONTINUED) && !WIFSIGNALED(W_CONTINUED) && !WIFEXITED(W_CONTINUED));
    }
}
