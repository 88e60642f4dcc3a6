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
