//! The CPU-free part of process lifecycle logic, host-tested: Linux's wait
//! status encodings (`include/uapi/linux/wait.h`, `WIFEXITED` and friends)
//! and the option rules and child selection of `wait4`/`waitid`
//! (`kernel/exit.c`: `kernel_wait4`, `kernel_waitid`, `eligible_child`);
//! and credentials with the rules for changing and comparing them
//! ([`cred`]).

#![no_std]

extern crate alloc;

pub mod cred;

use uapi::Errno;

pub use uapi::wait::{WALL, WCLONE, WCONTINUED, WEXITED, WNOHANG, WNOTHREAD, WNOWAIT, WSTOPPED, WUNTRACED};

use uapi::signal::SIGCHLD;
use uapi::wait;

/// The status word of a child that exited with `code` (`exit(code)`).
pub const fn exited(code: i32) -> i32 {
    wait::w_exitcode(code, 0)
}

/// The status word of a child killed by `sig`, with `core` if it dumped.
pub const fn signaled(sig: u32, core: bool) -> i32 {
    wait::w_exitcode(0, (sig & 0x7f) as i32) | if core { wait::WCOREFLAG } else { 0 }
}

/// The status word of a child stopped by `sig`.
pub const fn stopped(sig: u32) -> i32 {
    wait::w_stopcode(sig as i32 & 0xff)
}

/// The status word of a tracee in a ptrace stop with `code` (Linux's
/// `exit_code`: the signal, plus 0x80 for a TRACESYSGOOD system call stop
/// or `PTRACE_EVENT_*` << 8 for an event stop).
pub const fn ptrace_stopped(code: u32) -> i32 {
    wait::w_stopcode(code as i32 & 0xffff)
}

/// The status word of a continued child.
pub const CONTINUED: i32 = wait::W_CONTINUED;

/// waitid's `si_code` and `si_status` for a dead child's status word:
/// CLD_EXITED with the exit code, or CLD_KILLED/CLD_DUMPED with the signal
/// (as Linux's do_notify_parent and wait_task_zombie).
pub const fn cld_of_exit(status: i32) -> (i32, i32) {
    use uapi::signal::code::{CLD_DUMPED, CLD_EXITED, CLD_KILLED};
    if wait::WIFEXITED(status) {
        (CLD_EXITED, wait::WEXITSTATUS(status))
    } else if wait::WCOREDUMP(status) {
        (CLD_DUMPED, wait::WTERMSIG(status))
    } else {
        (CLD_KILLED, wait::WTERMSIG(status))
    }
}

/// wait4's options: anything but these is EINVAL.
pub fn check_wait4_options(options: u32) -> Result<(), Errno> {
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WNOTHREAD | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// waitid's options: the known bits, and at least one of WEXITED,
/// WSTOPPED, WCONTINUED.
pub fn check_waitid_options(options: u32) -> Result<(), Errno> {
    if options & !(WNOHANG | WSTOPPED | WCONTINUED | WEXITED | WNOWAIT | WNOTHREAD | WALL | WCLONE) != 0
        || options & (WEXITED | WSTOPPED | WCONTINUED) == 0
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Which children a wait selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitWho {
    /// Any child.
    Any,
    /// The child with this PID.
    Pid(u32),
    /// Children in this process group.
    Pgid(u32),
}

impl WaitWho {
    /// wait4's `pid` argument: -1 any child, 0 the caller's group
    /// (`own_pgid`), a positive pid that child, below -1 the group -pid;
    /// INT_MIN is ESRCH (it has no negation).
    pub fn from_wait4_pid(pid: i32, own_pgid: u32) -> Result<WaitWho, Errno> {
        Ok(match pid {
            -1 => WaitWho::Any,
            0 => WaitWho::Pgid(own_pgid),
            i32::MIN => return Err(Errno::ESRCH),
            p if p > 0 => WaitWho::Pid(p as u32),
            p => WaitWho::Pgid(p.unsigned_abs()),
        })
    }

    /// Whether a child with `pid` in group `pgid` is selected.
    pub fn selects(self, pid: u32, pgid: u32) -> bool {
        match self {
            WaitWho::Any => true,
            WaitWho::Pid(p) => pid == p,
            WaitWho::Pgid(g) => pgid == g,
        }
    }
}

/// Linux's eligible_child rule for the exit signal: without __WALL, a
/// wait sees only children whose exit signal is SIGCHLD, or with __WCLONE
/// only those whose exit signal is not.
pub fn eligible_by_exit_signal(options: u32, exit_signal: u32) -> bool {
    options & WALL != 0 || (exit_signal != SIGCHLD) == (options & WCLONE != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_encodes_code_in_second_byte() {
        assert_eq!(exited(0), 0);
        assert_eq!(exited(3), 0x300);
        assert_eq!(exited(256 + 7), 0x700, "only the low 8 bits");
        assert_eq!(exited(-1), 0xff00);
    }

    #[test]
    fn signal_status_has_signal_and_core_bit() {
        assert_eq!(signaled(9, false), 9);
        assert_eq!(signaled(11, true), 0x8b);
    }

    #[test]
    fn ptrace_stop_statuses_carry_the_event_above_the_signal() {
        assert_eq!(ptrace_stopped(19), stopped(19));
        assert_eq!(ptrace_stopped(5 | 0x80), 0x857f, "TRACESYSGOOD syscall stop");
        assert_eq!(ptrace_stopped(5 | (1 << 8)), 0x1057f, "PTRACE_EVENT_FORK");
        assert_eq!(ptrace_stopped(5 | (128 << 8)), 0x80057f, "PTRACE_EVENT_STOP");
        assert_eq!(
            ptrace_stopped(19 | (128 << 8)),
            0x80137f,
            "group stop of a seized tracee"
        );
    }

    #[test]
    fn stopped_and_continued_statuses_match_wait_h() {
        assert_eq!(stopped(19), 0x137f);
        assert_eq!(CONTINUED, 0xffff);
    }

    #[test]
    fn cld_codes_distinguish_exit_kill_and_dump() {
        assert_eq!(cld_of_exit(exited(5)), (1, 5));
        assert_eq!(cld_of_exit(signaled(9, false)), (2, 9));
        assert_eq!(cld_of_exit(signaled(11, true)), (3, 11));
    }

    #[test]
    fn wait4_refuses_unknown_and_waitid_only_bits() {
        assert_eq!(
            check_wait4_options(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE | WNOTHREAD),
            Ok(())
        );
        assert_eq!(check_wait4_options(WEXITED), Err(Errno::EINVAL));
        assert_eq!(check_wait4_options(WNOWAIT), Err(Errno::EINVAL));
        assert_eq!(check_wait4_options(0x10), Err(Errno::EINVAL));
    }

    #[test]
    fn waitid_needs_an_event_kind() {
        assert_eq!(check_waitid_options(WNOHANG), Err(Errno::EINVAL));
        assert_eq!(check_waitid_options(0), Err(Errno::EINVAL));
        assert_eq!(check_waitid_options(WEXITED | WNOWAIT | WNOHANG), Ok(()));
        assert_eq!(check_waitid_options(WSTOPPED), Ok(()));
        assert_eq!(check_waitid_options(WCONTINUED), Ok(()));
        assert_eq!(check_waitid_options(WEXITED | 0x10), Err(Errno::EINVAL));
    }

    #[test]
    fn wait4_pid_argument_selects_as_linux() {
        assert_eq!(WaitWho::from_wait4_pid(-1, 5), Ok(WaitWho::Any));
        assert_eq!(WaitWho::from_wait4_pid(0, 5), Ok(WaitWho::Pgid(5)));
        assert_eq!(WaitWho::from_wait4_pid(42, 5), Ok(WaitWho::Pid(42)));
        assert_eq!(WaitWho::from_wait4_pid(-42, 5), Ok(WaitWho::Pgid(42)));
        assert_eq!(WaitWho::from_wait4_pid(i32::MIN, 5), Err(Errno::ESRCH));
        assert!(WaitWho::Pgid(7).selects(100, 7));
        assert!(!WaitWho::Pgid(7).selects(7, 8));
        assert!(WaitWho::Pid(3).selects(3, 1));
        assert!(!WaitWho::Pid(3).selects(4, 1));
        assert!(WaitWho::Any.selects(9, 9));
    }

    #[test]
    fn wall_and_wclone_select_by_exit_signal() {
        assert!(eligible_by_exit_signal(0, SIGCHLD));
        assert!(!eligible_by_exit_signal(0, 0));
        assert!(!eligible_by_exit_signal(0, 10));
        assert!(eligible_by_exit_signal(WCLONE, 0));
        assert!(!eligible_by_exit_signal(WCLONE, SIGCHLD));
        assert!(eligible_by_exit_signal(WALL, 0));
        assert!(eligible_by_exit_signal(WALL | WCLONE, SIGCHLD));
    }
}
