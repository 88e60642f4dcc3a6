//! `task` events (Linux's `include/trace/events/task.h`).

use super::{task_comm, task_pid, Comm};
use crate::define_trace_event;
use crate::sched::Task;

/// The exit signal's bits of `clone`'s flags, which Linux keeps apart
/// (`kernel_clone_args.exit_signal`) and `task_newtask` does not show.
use uapi::sched::CSIGNAL;

define_trace_event! {
    /// A task was created by `clone` with `clone_flags`.
    task / task_newtask,
    fn trace_task_newtask(task: &Task, clone_flags: u64),
    fields {
        pid: i32 as "pid_t" = task_pid(task),
        comm: Comm as "char" = task_comm(task),
        clone_flags: u64 as "unsigned long" = clone_flags & !CSIGNAL,
        oom_score_adj: i16 as "short" = 0,
    },
    printk "\"pid=%d comm=%s clone_flags=%lx oom_score_adj=%hd\", REC->pid, REC->comm, REC->clone_flags, REC->oom_score_adj",
    print(out, e) {
        write!(out, "pid={} comm={} clone_flags={:x} oom_score_adj={}", e.pid, e.comm, e.clone_flags, e.oom_score_adj)
    }
}

/// A task name as `set_comm` stores it (cut to 15 bytes, NUL-padded).
pub fn comm_bytes(name: &[u8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    let n = name.len().min(15);
    c[..n].copy_from_slice(&name[..n]);
    c
}

define_trace_event! {
    /// `task` is renamed to `comm` (exec, `PR_SET_NAME`, `comm` writes).
    task / task_rename,
    fn trace_task_rename(task: &Task, comm: &[u8]),
    fields {
        pid: i32 as "pid_t" = task_pid(task),
        oldcomm: Comm as "char" = task_comm(task),
        newcomm: Comm as "char" = comm_bytes(comm),
        oom_score_adj: i16 as "short" = 0,
    },
    printk "\"pid=%d oldcomm=%s newcomm=%s oom_score_adj=%hd\", REC->pid, REC->oldcomm, REC->newcomm, REC->oom_score_adj",
    print(out, e) {
        write!(out, "pid={} oldcomm={} newcomm={} oom_score_adj={}", e.pid, e.oldcomm, e.newcomm, e.oom_score_adj)
    }
}

/// Registers the `task` events.
pub fn register() -> Result<(), uapi::Errno> {
    task_newtask::register()?;
    task_rename::register()
}
