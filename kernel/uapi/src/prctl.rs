//! `prctl` options (include/uapi/linux/prctl.h).

/// Bytes of a task's name (`comm`, include/linux/sched.h) with its NUL:
/// PR_SET_NAME keeps at most `TASK_COMM_LEN - 1`, PR_GET_NAME writes
/// `TASK_COMM_LEN`.
pub const TASK_COMM_LEN: usize = 16;

/// Set the calling thread's name (`comm`, at most 15 bytes).
pub const PR_SET_NAME: u64 = 15;
/// Get the calling thread's name.
pub const PR_GET_NAME: u64 = 16;
/// Enter a seccomp mode.
pub const PR_SET_SECCOMP: u64 = 22;
/// Change the memory map's bounds (`mm->start_code` and the like).
pub const PR_SET_MM: u64 = 35;
/// Set `no_new_privs`: execve grants no privileges from then on.
pub const PR_SET_NO_NEW_PRIVS: u64 = 38;
