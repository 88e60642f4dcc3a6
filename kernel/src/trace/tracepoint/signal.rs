//! `signal` events (Linux's `include/trace/events/signal.h`).

use super::{task_comm, task_pid, Comm};
use crate::define_trace_event;
use crate::process::Process;
use crate::sched::Task;
use crate::signal::SigAction;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use uapi::signal::SigInfo;
use uapi::Errno;

/// `signal_generate`'s `result` (Linux's `enum trace_signal_result`).
pub mod result {
    /// Queued (or made pending).
    pub const DELIVERED: i32 = 0;
    /// Ignored by the target.
    pub const IGNORED: i32 = 1;
    /// A classic signal already pending.
    pub const ALREADY_PENDING: i32 = 2;
    /// The queue was full and the signal failed.
    pub const OVERFLOW_FAIL: i32 = 3;
    /// The queue was full; the signal is pending without its information.
    pub const LOSE_INFO: i32 = 4;
}

define_trace_event! {
    /// A signal was sent to `task` (`group`: to its whole process).
    signal / signal_generate,
    fn trace_signal_generate(info: &SigInfo, task: &Task, group: bool, res: i32),
    fields {
        sig: i32 as "int" = info.signo as i32,
        errno: i32 as "int" = info.errno,
        code: i32 as "int" = info.code,
        comm: Comm as "char" = task_comm(task),
        pid: i32 as "pid_t" = task_pid(task),
        group: i32 as "int" = i32::from(group),
        result: i32 as "int" = res,
    },
    printk "\"sig=%d errno=%d code=%d comm=%s pid=%d grp=%d res=%d\", REC->sig, REC->errno, REC->code, REC->comm, REC->pid, REC->group, REC->result",
    print(out, e) {
        write!(out, "sig={} errno={} code={} comm={} pid={} grp={} res={}", e.sig, e.errno, e.code, e.comm, e.pid, e.group, e.result)
    }
}

define_trace_event! {
    /// The current task takes signal `sig` (dequeued; its action follows).
    signal / signal_deliver,
    fn trace_signal_deliver_raw(info: &SigInfo, action: &SigAction),
    fields {
        sig: i32 as "int" = info.signo as i32,
        errno: i32 as "int" = info.errno,
        code: i32 as "int" = info.code,
        sa_handler: u64 as "unsigned long" = action.handler,
        sa_flags: u64 as "unsigned long" = action.flags,
    },
    printk "\"sig=%d errno=%d code=%d sa_handler=%lx sa_flags=%lx\", REC->sig, REC->errno, REC->code, REC->sa_handler, REC->sa_flags",
    print(out, e) {
        write!(out, "sig={} errno={} code={} sa_handler={:x} sa_flags={:x}", e.sig, e.errno, e.code, e.sa_handler, e.sa_flags)
    }
}

/// The current task takes signal `info.signo`, whose action is `action`
/// (from `do_signal`, after a tracer's say). A signal that kills by
/// default is recorded as Linux records it: Linux turns such a signal into
/// a group exit when it is sent (`complete_signal`), and its receiver then
/// takes SIGKILL, without information.
#[inline(always)]
pub fn trace_signal_deliver(info: &SigInfo, action: &SigAction) {
    if crate::static_branch_unlikely!(signal_deliver::KEY) {
        deliver_slow(info, action);
    }
}

/// SIGKILL taken by a task of a dying group (Linux's `get_signal` on
/// `SIGNAL_GROUP_EXIT`).
#[inline(always)]
pub fn trace_signal_deliver_kill() {
    if crate::static_branch_unlikely!(signal_deliver::KEY) {
        deliver_kill();
    }
}

#[cold]
#[inline(never)]
fn deliver_kill() {
    let kill = SigInfo {
        signo: crate::signal::SIGKILL,
        ..SigInfo::default()
    };
    signal_deliver::record(&kill, &SigAction::default());
}

#[cold]
#[inline(never)]
fn deliver_slow(info: &SigInfo, action: &SigAction) {
    let traced = crate::sched::try_current().is_some_and(|t| t.ptrace.is_traced());
    let kills = action.handler == crate::signal::SIG_DFL
        && crate::signal::default_action(info.signo) == crate::signal::DefaultAction::Term;
    if kills && !traced {
        deliver_kill();
    } else {
        signal_deliver::record(info, action);
    }
}

/// Whom a signal is sent to: a thread (tkill, faults) or a whole
/// process (kill), whose main thread the record names.
pub trait SignalTarget {
    /// The pending set the signal goes to.
    fn pending(&self) -> &AtomicU64;
    /// Records `signal_generate` with `res`.
    fn record(&self, info: &SigInfo, res: i32);
}

impl SignalTarget for Arc<Task> {
    fn pending(&self) -> &AtomicU64 {
        &self.sig_pending
    }
    fn record(&self, info: &SigInfo, res: i32) {
        signal_generate::record(info, self, false, res);
    }
}

impl SignalTarget for Arc<Process> {
    fn pending(&self) -> &AtomicU64 {
        &self.shared_pending
    }
    fn record(&self, info: &SigInfo, res: i32) {
        if let Some(t) = self.main_thread() {
            signal_generate::record(info, &t, true, res);
        }
    }
}

/// `signal_generate` of a signal `target` ignores (not queued).
#[inline(always)]
pub fn ignored(info: &SigInfo, target: &impl SignalTarget) {
    if crate::static_branch_unlikely!(signal_generate::KEY) {
        target.record(info, result::IGNORED);
    }
}

/// Queues a signal for `target` with `queue` and records `signal_generate`
/// with the outcome (a classic signal already pending is
/// `ALREADY_PENDING`, as Linux's `__send_signal_locked` says).
#[inline(always)]
pub fn queued(
    info: &SigInfo,
    target: &impl SignalTarget,
    queue: impl FnOnce() -> Result<(), Errno>,
) -> Result<(), Errno> {
    if !crate::static_branch_unlikely!(signal_generate::KEY) {
        return queue();
    }
    let sig = info.signo;
    let bit = 1u64.checked_shl(sig.wrapping_sub(1)).unwrap_or(0);
    let already = sig < uapi::signal::SIGRTMIN && target.pending().load(Ordering::Acquire) & bit != 0;
    let r = queue();
    let res = match r {
        Err(_) => result::OVERFLOW_FAIL,
        Ok(()) if already => result::ALREADY_PENDING,
        Ok(()) => result::DELIVERED,
    };
    target.record(info, res);
    r
}

/// Registers the `signal` events.
pub fn register() -> Result<(), Errno> {
    signal_generate::register()?;
    signal_deliver::register()
}
