//! Signal logic that needs no CPU, no memory manager and no locks, split out
//! of the kernel so that the host can test it (Linux's `next_signal` and
//! `dequeue_signal` order from kernel/signal.c, the system-call restart rules
//! of arch/arm64/kernel/signal.c `do_signal`, and `parse_user_sigframe`'s
//! rules for the records in a `sigcontext`).

#![no_std]
#![deny(unsafe_code)]

extern crate alloc;

pub mod records;

/// SIGKILL and SIGSTOP, and the first real-time signal as the kernel
/// counts (Linux's `SIGRTMIN`, 32; the C library reserves a few of them).
pub use uapi::signal::{SIGKILL, SIGRTMIN, SIGSTOP};

/// Bit for signal `sig` in a mask.
pub const fn sigmask(sig: u32) -> u64 {
    1 << (sig - 1)
}

/// Signals no mask can hold back.
pub const UNBLOCKABLE: u64 = sigmask(SIGKILL) | sigmask(SIGSTOP);

/// Signals the CPU raises for the instruction just run (Linux's
/// `SYNCHRONOUS_MASK`: SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS).
/// They are taken before others so that the handler sees the fault at the
/// faulting instruction, not after an unrelated handler ran.
pub const SYNCHRONOUS: u64 = sigmask(11) | sigmask(7) | sigmask(4) | sigmask(5) | sigmask(8) | sigmask(31);

/// The signal Linux's `next_signal` takes from `pending` under `blocked`:
/// a synchronous one first, otherwise the lowest number.
pub fn next_signal(pending: u64, blocked: u64) -> Option<u32> {
    let mut x = pending & !(blocked & !UNBLOCKABLE);
    if x == 0 {
        return None;
    }
    if x & SYNCHRONOUS != 0 {
        x &= SYNCHRONOUS;
    }
    Some(x.trailing_zeros() + 1)
}

/// Which pending set a signal is taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The thread's own (`task->pending`: tkill, faults).
    Thread,
    /// The process's (`signal->shared_pending`: kill).
    Process,
}

/// Linux's `dequeue_signal` order: the thread's own pending signals before
/// the process's shared ones, each by `next_signal`.
pub fn choose(own: u64, shared: u64, blocked: u64) -> Option<(Source, u32)> {
    next_signal(own, blocked)
        .map(|s| (Source::Thread, s))
        .or_else(|| next_signal(shared, blocked).map(|s| (Source::Process, s)))
}

/// Whether a queued `sigqueue` entry may be allocated beyond
/// `RLIMIT_SIGPENDING` (Linux's `override_rlimit` in `__send_signal_locked`):
/// classic signals sent by the kernel or by kill() may, since at most one of
/// each is queued; real-time signals never may.
pub fn override_rlimit(sig: u32, si_code: i32) -> bool {
    sig < SIGRTMIN && si_code >= 0
}

/// What happens to a signal whose `sigqueue` entry could not be had (over
/// the limit, or out of memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueOverflow {
    /// The sender gets EAGAIN and nothing is sent (real-time signals from
    /// sigqueue, tkill and the like).
    Fail,
    /// The signal is still made pending, without its information (kill()
    /// may not fail for lack of memory).
    LoseInfo,
}

/// Linux's choice when `__sigqueue_alloc` fails in `__send_signal_locked`.
pub fn on_queue_overflow(sig: u32, si_code: i32) -> QueueOverflow {
    if sig >= SIGRTMIN && si_code != SI_USER {
        QueueOverflow::Fail
    } else {
        QueueOverflow::LoseInfo
    }
}

/// `si_code` of kill().
pub use uapi::signal::code::SI_USER;

// The kernel-internal restart codes a system call may return (positive),
// as i64 for comparison with a return register: uapi's `Errno` is their
// one definition.
/// Restart if the handler has `SA_RESTART`, else EINTR.
pub const ERESTARTSYS: i64 = uapi::Errno::ERESTARTSYS as i64;
/// Restart unconditionally.
pub const ERESTARTNOINTR: i64 = uapi::Errno::ERESTARTNOINTR as i64;
/// Restart if no handler runs.
pub const ERESTARTNOHAND: i64 = uapi::Errno::ERESTARTNOHAND as i64;
/// Restart through `restart_syscall` when no handler runs.
pub const ERESTART_RESTARTBLOCK: i64 = uapi::Errno::ERESTART_RESTARTBLOCK as i64;
/// EINTR.
pub const EINTR: i64 = uapi::Errno::EINTR as i64;

/// How an interrupted system call is settled before returning to user mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Not a restartable return: leave x0 as it is.
    Keep,
    /// Run the call again: x0 gets the original first argument back and the
    /// PC steps back onto the `svc`.
    Again,
    /// Return -EINTR.
    Eintr,
    /// Continue through `restart_syscall`: x8 becomes its number and the PC
    /// steps back onto the `svc`, so that the call's `restart_block` (the
    /// time still to sleep, say) is resumed rather than its arguments run
    /// again (arm64 Linux's `do_signal` for ERESTART_RESTARTBLOCK).
    RestartBlock,
}

/// `__NR_restart_syscall` on arm64.
pub const NR_RESTART_SYSCALL: u64 = 128;

/// Whether `ret` (x0 after a system call) is one of the restart codes.
pub fn is_restart_code(ret: i64) -> bool {
    [-ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK].contains(&ret)
}

/// arm64 `do_signal`'s decision for a call that returned `ret`, when a
/// handler with flags `handler_flags` is about to run (`Some`) or when no
/// handler runs (`None`).
///
/// With a handler: ERESTARTNOINTR always restarts, ERESTARTSYS restarts
/// only under `SA_RESTART`, the others return EINTR. Without one, every code
/// restarts; ERESTART_RESTARTBLOCK (nanosleep, clock_nanosleep) does so
/// through `restart_syscall`.
pub fn restart_decision(ret: i64, handler_flags: Option<u64>) -> Restart {
    if !is_restart_code(ret) {
        return Restart::Keep;
    }
    match handler_flags {
        Some(flags) => {
            if ret == -ERESTARTNOINTR || (ret == -ERESTARTSYS && flags & SA_RESTART != 0) {
                Restart::Again
            } else {
                Restart::Eintr
            }
        }
        None if ret == -ERESTART_RESTARTBLOCK => Restart::RestartBlock,
        None => Restart::Again,
    }
}

/// `SA_RESTART` (uapi's).
pub use uapi::signal::sa::SA_RESTART;

/// Linux's default `RLIMIT_SIGPENDING` for a machine with `total_pages`
/// pages of RAM (4 KiB): `fork_init` sets it to `max_threads / 2`, where
/// `set_max_threads` allows as many threads as fit, 16 KiB stacks, in an
/// eighth of RAM, and at least 20.
pub fn default_sigpending_limit(total_pages: u64) -> u64 {
    const THREAD_SIZE: u64 = 16 * 1024;
    const PAGE_SIZE: u64 = 4096;
    const MIN_THREADS: u64 = 20;
    const FUTEX_TID_MASK: u64 = 0x3fff_ffff;
    let threads = (total_pages * PAGE_SIZE / (THREAD_SIZE * 8)).clamp(MIN_THREADS, FUTEX_TID_MASK);
    threads / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_unblocked_signal_first() {
        assert_eq!(next_signal(sigmask(10) | sigmask(2), 0), Some(2));
        assert_eq!(next_signal(sigmask(10) | sigmask(2), sigmask(2)), Some(10));
        assert_eq!(next_signal(sigmask(2), sigmask(2)), None);
        assert_eq!(next_signal(0, 0), None);
    }

    #[test]
    fn synchronous_signals_before_lower_numbers() {
        // SIGSEGV (11) is taken before SIGINT (2) and SIGKILL (9).
        assert_eq!(next_signal(sigmask(2) | sigmask(11), 0), Some(11));
        assert_eq!(next_signal(sigmask(9) | sigmask(11), 0), Some(11));
        // Blocked synchronous ones do not hide the others.
        assert_eq!(next_signal(sigmask(2) | sigmask(11), sigmask(11)), Some(2));
    }

    #[test]
    fn sigkill_and_sigstop_cannot_be_blocked() {
        assert_eq!(next_signal(sigmask(SIGKILL), u64::MAX), Some(SIGKILL));
        assert_eq!(next_signal(sigmask(SIGSTOP), u64::MAX), Some(SIGSTOP));
    }

    #[test]
    fn real_time_signals_in_number_order() {
        assert_eq!(next_signal(sigmask(40) | sigmask(35), 0), Some(35));
        assert_eq!(next_signal(sigmask(64), 0), Some(64));
    }

    #[test]
    fn thread_pending_before_process_pending() {
        assert_eq!(choose(sigmask(15), sigmask(2), 0), Some((Source::Thread, 15)));
        assert_eq!(choose(sigmask(15), sigmask(2), sigmask(15)), Some((Source::Process, 2)));
        assert_eq!(choose(0, 0, 0), None);
    }

    #[test]
    fn handler_with_sa_restart_restarts_erestartsys() {
        assert_eq!(restart_decision(-ERESTARTSYS, Some(SA_RESTART)), Restart::Again);
        assert_eq!(restart_decision(-ERESTARTSYS, Some(0)), Restart::Eintr);
    }

    #[test]
    fn handler_never_restarts_erestartnohand_or_restartblock() {
        assert_eq!(restart_decision(-ERESTARTNOHAND, Some(SA_RESTART)), Restart::Eintr);
        assert_eq!(
            restart_decision(-ERESTART_RESTARTBLOCK, Some(SA_RESTART)),
            Restart::Eintr
        );
    }

    #[test]
    fn erestartnointr_always_restarts() {
        assert_eq!(restart_decision(-ERESTARTNOINTR, Some(0)), Restart::Again);
        assert_eq!(restart_decision(-ERESTARTNOINTR, None), Restart::Again);
    }

    #[test]
    fn without_handler_calls_restart_transparently() {
        assert_eq!(restart_decision(-ERESTARTSYS, None), Restart::Again);
        assert_eq!(restart_decision(-ERESTARTNOHAND, None), Restart::Again);
        assert_eq!(restart_decision(-ERESTART_RESTARTBLOCK, None), Restart::RestartBlock);
    }

    #[test]
    fn ordinary_returns_are_kept() {
        assert_eq!(restart_decision(0, Some(0)), Restart::Keep);
        assert_eq!(restart_decision(-EINTR, None), Restart::Keep);
        assert_eq!(restart_decision(-515, None), Restart::Keep);
    }

    #[test]
    fn only_real_time_signals_fail_with_eagain_when_not_from_kill() {
        assert_eq!(on_queue_overflow(34, -1), QueueOverflow::Fail);
        assert_eq!(on_queue_overflow(34, -6), QueueOverflow::Fail);
        assert_eq!(on_queue_overflow(34, SI_USER), QueueOverflow::LoseInfo);
        assert_eq!(on_queue_overflow(10, -1), QueueOverflow::LoseInfo);
    }

    #[test]
    fn classic_signals_from_kernel_or_kill_override_the_limit() {
        assert!(override_rlimit(10, SI_USER));
        assert!(override_rlimit(11, 0x80));
        assert!(!override_rlimit(10, -1));
        assert!(!override_rlimit(34, SI_USER));
    }

    #[test]
    fn sigpending_limit_follows_ram_like_linux() {
        // 1 GiB: 262144 pages -> 8192 threads -> 4096.
        assert_eq!(default_sigpending_limit(262_144), 4096);
        // Tiny machines still get MIN_THREADS / 2.
        assert_eq!(default_sigpending_limit(16), 10);
    }
}
