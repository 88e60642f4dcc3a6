//! `clone` flags and scheduling policies (include/uapi/linux/sched.h).

/// Mask of the exit signal in clone's flags.
pub const CSIGNAL: u64 = 0xff;
/// Share the address space.
pub const CLONE_VM: u64 = 0x100;
/// Share the file system information (cwd, root, umask).
pub const CLONE_FS: u64 = 0x200;
/// Share the open files.
pub const CLONE_FILES: u64 = 0x400;
/// Share the signal handlers.
pub const CLONE_SIGHAND: u64 = 0x800;
/// Return a pidfd of the child.
pub const CLONE_PIDFD: u64 = 0x1000;
/// Trace the child if the parent is traced.
pub const CLONE_PTRACE: u64 = 0x2000;
/// The parent sleeps until the child execs or exits.
pub const CLONE_VFORK: u64 = 0x4000;
/// The child has the caller's parent.
pub const CLONE_PARENT: u64 = 0x8000;
/// Same thread group.
pub const CLONE_THREAD: u64 = 0x10000;
/// New mount namespace.
pub const CLONE_NEWNS: u64 = 0x20000;
/// Share System V semaphore undo lists.
pub const CLONE_SYSVSEM: u64 = 0x40000;
/// Set the child's TLS.
pub const CLONE_SETTLS: u64 = 0x80000;
/// Store the child's tid in the parent's memory.
pub const CLONE_PARENT_SETTID: u64 = 0x100000;
/// Clear the child's tid in its memory at exit and wake its futex.
pub const CLONE_CHILD_CLEARTID: u64 = 0x200000;
/// Ignored (was: no exit signal).
pub const CLONE_DETACHED: u64 = 0x400000;
/// A tracer cannot force `CLONE_PTRACE`.
pub const CLONE_UNTRACED: u64 = 0x800000;
/// Store the child's tid in its memory.
pub const CLONE_CHILD_SETTID: u64 = 0x1000000;
/// New cgroup namespace.
pub const CLONE_NEWCGROUP: u64 = 0x2000000;
/// New UTS (host name) namespace.
pub const CLONE_NEWUTS: u64 = 0x4000000;
/// New IPC namespace.
pub const CLONE_NEWIPC: u64 = 0x8000000;
/// New user namespace.
pub const CLONE_NEWUSER: u64 = 0x10000000;
/// New pid namespace.
pub const CLONE_NEWPID: u64 = 0x20000000;
/// New network namespace.
pub const CLONE_NEWNET: u64 = 0x40000000;
/// Share the I/O context.
pub const CLONE_IO: u64 = 0x80000000;

/// `SCHED_NORMAL` (Linux's `SCHED_OTHER`).
pub const SCHED_NORMAL: u32 = 0;
/// `SCHED_FIFO`.
pub const SCHED_FIFO: u32 = 1;
/// `SCHED_RR`.
pub const SCHED_RR: u32 = 2;
/// `SCHED_BATCH`.
pub const SCHED_BATCH: u32 = 3;
/// `SCHED_IDLE`.
pub const SCHED_IDLE: u32 = 5;
/// `SCHED_DEADLINE`.
pub const SCHED_DEADLINE: u32 = 6;
/// Or'ed into the policy: children start with the default policy.
pub const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;
