//! ptrace: tracers stopping, inspecting and resuming their tracees, as
//! Linux's `kernel/ptrace.c`, the stop half of `kernel/signal.c`
//! (`ptrace_stop`, `ptrace_signal`, `do_jobctl_trap`) and arm64's system
//! call tracing (`arch/arm64/kernel/ptrace.c`).
//!
//! Each task carries its ptrace state ([`TaskPtrace`]): the link to its
//! tracer (a thread, as in Linux), the options, the stop it is in and the
//! code its tracer's `wait` has not yet collected (Linux's `exit_code`,
//! which the tracer's resume then overwrites with the signal to deliver),
//! the event message and the stop's siginfo. A tracer keeps the tasks it
//! traces in its own list (Linux's `->ptraced`), which `wait` walks.
//!
//! Lock order: a tracer's `ptraced` list, then a tracee's `state` (or,
//! briefly and alone, the tracer's own `state`, for [`link`]'s check that
//! its exit has not begun); the `regs_lock` of a tracee is taken before
//! its `state`.

pub mod access;
mod hw_breakpoint;
mod peeksiginfo;
mod process_vm;
mod request;
mod singlestep;

pub use process_vm::process_vm_rw;
pub use request::sys_ptrace;
pub use singlestep::signal_delivered_stepping;

use crate::process::{ChildEvent, Process};
use crate::sched::{self, Task, TaskState};
use crate::signal::{self, code, sigmask, SigInfo, SIGKILL, SIGSTOP, SIGTRAP};
use crate::sync::IrqSpinLock;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use arch::context::FpsimdState;
use arch::ptrace::{PtRegs, NO_SYSCALL};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use uapi::ptrace::*;

/// `si_code` of a traced child's SIGCHLD and waitid report.
pub use uapi::signal::code::CLD_TRAPPED;

/// What a tracee's tracer can see and change; guarded by `TaskPtrace::state`.
#[derive(Default)]
pub(super) struct PtraceState {
    /// The tracing thread (Linux's `->parent` while traced).
    tracer: Option<Weak<Task>>,
    /// Its thread ID, for /proc's `TracerPid:`.
    tracer_tid: u32,
    /// Attached with PTRACE_SEIZE.
    seized: bool,
    /// `PTRACE_O_*`.
    options: u64,
    /// `ptrace_message` (GETEVENTMSG).
    message: u64,
    /// The siginfo of the stop (GETSIGINFO, SETSIGINFO); `None` for a
    /// group stop of a non-seized tracee.
    last_siginfo: Option<SigInfo>,
    /// Linux's `exit_code`: the stop's code until `wait` collects it
    /// (non-zero means "not yet reported"), then the signal the tracer
    /// resumes with.
    exit_code: u32,
    /// In a ptrace stop (Linux's TASK_TRACED).
    stopped: bool,
    /// PTRACE_LISTEN: stopped, but re-trapping on group-stop changes.
    listening: bool,
    /// Dead: the wait status still to be reported to the tracer.
    exit_report: Option<i32>,
    /// Past the point of no return in its exit (Linux sets `exit_state`
    /// later, but this kernel decides there whom the exit is reported
    /// to): an attach now is refused, as Linux refuses one on a zombie.
    exiting: bool,
    /// This dead tracee's process waits for the tracer's report before its
    /// real parent may reap it.
    holds_parent: bool,
    /// FP/SIMD registers the tracer set, loaded as the tracee resumes (the
    /// live registers belong to the tracee's CPU while it is switched in).
    /// Boxed: every stop's end takes it, and an inline 528-byte option was
    /// copied out whole each time (a memcpy longer than the rest of the
    /// stop's end) though a tracer seldom sets it.
    pending_fpsimd: Option<alloc::boxed::Box<FpsimdState>>,
    /// TPIDR_EL0 the tracer set, loaded likewise.
    pending_tls: Option<u64>,
}

/// A task's ptrace state (Linux's `->ptrace`, `->jobctl` trap bits,
/// `->exit_code`, `->last_siginfo`, `->ptrace_message`, `->ptraced`).
pub struct TaskPtrace {
    /// Traced: checked without the lock on hot paths.
    traced: AtomicBool,
    /// Stop at system call entry and exit (Linux's TIF_SYSCALL_TRACE).
    syscall_trace: AtomicBool,
    /// Stop at system call entry, then skip the call (TIF_SYSCALL_EMU).
    syscall_emu: AtomicBool,
    /// A PTRACE_EVENT_STOP trap is due (Linux's JOBCTL_TRAP_STOP).
    trap_pending: AtomicBool,
    /// The group stop of a seized tracee changed (SIGCONT, a new group
    /// stop) since its last PTRACE_EVENT_STOP (Linux's JOBCTL_TRAP_NOTIFY):
    /// a listening tracee traps again at once, another one at its next
    /// return to user mode. Any PTRACE_EVENT_STOP trap clears it.
    trap_notify: AtomicBool,
    state: IrqSpinLock<PtraceState>,
    /// Tasks this one traces.
    ptraced: IrqSpinLock<Vec<Arc<Task>>>,
    /// Held by a tracer while it reads or writes the stopped tracee's saved
    /// registers, and by the tracee as it leaves its stop: the tracee never
    /// touches its registers while a tracer does.
    regs_lock: spin::Mutex<()>,
    /// The thread that created this one (Linux's `->real_parent`), the
    /// tracer PTRACE_TRACEME picks.
    parent_tid: AtomicU32,
}

impl Default for TaskPtrace {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskPtrace {
    /// Not traced, tracing nothing.
    pub fn new() -> TaskPtrace {
        TaskPtrace {
            traced: AtomicBool::new(false),
            syscall_trace: AtomicBool::new(false),
            syscall_emu: AtomicBool::new(false),
            trap_pending: AtomicBool::new(false),
            trap_notify: AtomicBool::new(false),
            state: IrqSpinLock::new(PtraceState::default()),
            ptraced: IrqSpinLock::new(Vec::new()),
            regs_lock: spin::Mutex::new(()),
            parent_tid: AtomicU32::new(0),
        }
    }

    /// Whether a tracer is attached.
    pub fn is_traced(&self) -> bool {
        self.traced.load(Ordering::Acquire)
    }

    /// Whether system calls stop at entry and exit.
    pub fn syscall_traced(&self) -> bool {
        self.syscall_trace.load(Ordering::Relaxed)
    }

    /// Whether system calls stop at entry and are skipped (PTRACE_SYSEMU).
    pub fn syscall_emu(&self) -> bool {
        self.syscall_emu.load(Ordering::Relaxed)
    }

    /// Whether a PTRACE_EVENT_STOP trap is due, asked for or notified
    /// (counts as signal work).
    pub fn trap_pending(&self) -> bool {
        self.trap_pending.load(Ordering::Acquire) || self.trap_notify.load(Ordering::Acquire)
    }

    /// Whether it is in a ptrace stop (/proc's `t (tracing stop)`).
    pub fn in_stop(&self) -> bool {
        self.is_traced() && self.state.lock().stopped
    }

    /// The tracer's thread ID, 0 if none (`TracerPid:`).
    pub fn tracer_tid(&self) -> u32 {
        if self.is_traced() {
            self.state.lock().tracer_tid
        } else {
            0
        }
    }

    fn tracer(&self) -> Option<Arc<Task>> {
        self.state.lock().tracer.as_ref().and_then(Weak::upgrade)
    }

    fn options(&self) -> u64 {
        self.state.lock().options
    }
}

fn is_tracer(st: &PtraceState, t: &Arc<Task>) -> bool {
    st.tracer
        .as_ref()
        .is_some_and(|w| core::ptr::eq(w.as_ptr(), Arc::as_ptr(t)))
}

/// Whether `sig` is 0..=64 (Linux's valid_signal, 0 included).
fn valid_signal(sig: u64) -> bool {
    sig <= signal::NSIG as u64
}

// ------------------------------------------------------------- linking

/// Why [`link`] refused.
pub(super) enum LinkRefused {
    /// The tracer's exit began: its `exit_ptrace` would never see the link.
    TracerExiting,
    /// The child is traced already, its exit began, or `may` said no.
    Child(crate::errno::Errno),
}

/// Links `child` to `tracer` (Linux's ptrace_link) if `may` allows it.
/// The check and the link happen under the tracer's list and then the
/// child's state, as Linux does both under tasklist_lock: a task whose
/// exit began is never linked (its exit has decided who hears of it), and
/// a tracer whose exit began takes no new tracee.
pub(super) fn link(
    child: &Arc<Task>,
    tracer: &Arc<Task>,
    seized: bool,
    options: u64,
    may: impl FnOnce(&PtraceState) -> Result<(), crate::errno::Errno>,
) -> Result<(), LinkRefused> {
    let mut list = tracer.ptrace.ptraced.lock();
    if tracer.ptrace.state.lock().exiting {
        return Err(LinkRefused::TracerExiting);
    }
    {
        let mut st = child.ptrace.state.lock();
        if st.exiting || st.tracer.is_some() || child.ptrace.is_traced() {
            return Err(LinkRefused::Child(crate::errno::Errno::EPERM));
        }
        may(&st).map_err(LinkRefused::Child)?;
        st.tracer = Some(Arc::downgrade(tracer));
        st.tracer_tid = tracer.tid();
        st.seized = seized;
        st.options = options;
        st.exit_code = 0;
        st.listening = false;
    }
    child.ptrace.trap_notify.store(false, Ordering::Release);
    child.ptrace.traced.store(true, Ordering::Release);
    list.push(child.clone());
    Ok(())
}

/// Unlinks `child` from its tracer (Linux's __ptrace_unlink): the tracer
/// forgets it, and a tracee in a ptrace stop resumes with the code it holds.
fn unlink(child: &Arc<Task>) {
    let tracer = {
        let mut st = child.ptrace.state.lock();
        let tracer = st.tracer.take().and_then(|w| w.upgrade());
        st.tracer_tid = 0;
        st.seized = false;
        st.options = 0;
        st.listening = false;
        st.stopped = false;
        tracer
    };
    child.ptrace.traced.store(false, Ordering::Release);
    child.ptrace.syscall_trace.store(false, Ordering::Release);
    child.ptrace.syscall_emu.store(false, Ordering::Release);
    child.ptrace.trap_pending.store(false, Ordering::Release);
    child.ptrace.trap_notify.store(false, Ordering::Release);
    crate::debug::hw_breakpoint::user_disable_single_step(child);
    if let Some(tracer) = tracer {
        tracer.ptrace.ptraced.lock().retain(|t| !Arc::ptr_eq(t, child));
    }
    // Not dying: back into the group stop in effect, if any.
    if !child.ptrace.state.lock().exiting {
        signal::rejoin_group_stop(child);
    }
    sched::wake_up(child);
}

/// At clone (Linux's ptrace_init_task and the tracing decision of
/// kernel_clone): records the creator, and attaches the child to the
/// creator's tracer when `event` is traced or CLONE_PTRACE asks. A seized
/// child starts with a PTRACE_EVENT_STOP trap, another with SIGSTOP.
pub fn ptrace_init_task(child: &Arc<Task>, me: &Arc<Task>, event: Option<u32>, clone_ptrace: bool) {
    child.ptrace.parent_tid.store(me.tid(), Ordering::Relaxed);
    if !me.ptrace.is_traced() {
        return;
    }
    let (tracer, seized, options) = {
        let st = me.ptrace.state.lock();
        (st.tracer.as_ref().and_then(Weak::upgrade), st.seized, st.options)
    };
    let Some(tracer) = tracer else { return };
    if !(event.is_some() || clone_ptrace) {
        return;
    }
    if link(child, &tracer, seized, options, |_| Ok(())).is_err() {
        return;
    }
    if seized {
        child.ptrace.trap_pending.store(true, Ordering::Release);
    } else {
        child.sig_pending.fetch_or(sigmask(SIGSTOP), Ordering::AcqRel);
    }
}

/// The PTRACE_EVENT_* a clone with `flags` reports, if the caller's tracer
/// asked for it (CLONE_UNTRACED never reports).
pub fn clone_event(me: &Task, flags: u64, exit_signal: u32) -> Option<u32> {
    use crate::process::clone_flags::{CLONE_UNTRACED, CLONE_VFORK};
    if !me.ptrace.is_traced() || flags & CLONE_UNTRACED != 0 {
        return None;
    }
    let (event, opt) = if flags & CLONE_VFORK != 0 {
        (PTRACE_EVENT_VFORK, PTRACE_O_TRACEVFORK)
    } else if exit_signal != signal::SIGCHLD {
        (PTRACE_EVENT_CLONE, PTRACE_O_TRACECLONE)
    } else {
        (PTRACE_EVENT_FORK, PTRACE_O_TRACEFORK)
    };
    (me.ptrace.options() & opt != 0).then_some(event)
}

// ------------------------------------------------------------- stopping

/// SIGCHLD with CLD_TRAPPED (or CLD_STOPPED) to the tracer's process, and a
/// wake-up of its waiters (Linux's do_notify_parent_cldstop for the tracer).
fn notify_tracer(tracer: &Arc<Task>, me: &Task, why: i32, exit_code: u32) {
    let Some(tp) = tracer.process.get() else { return };
    if tp.sighand.get(signal::SIGCHLD).flags & signal::sa::SA_NOCLDSTOP == 0 {
        signal::send_to_process(
            tp,
            SigInfo {
                signo: signal::SIGCHLD,
                code: why,
                pid: me.tid(),
                status: (exit_code & 0x7f) as i32,
                ..Default::default()
            },
        );
    }
    tp.child_wait.wake_up_all();
}

/// A SIGKILL of its own ends (or prevents) a stop; the caller of a group
/// exit still stops for PTRACE_EVENT_EXIT (Linux's __fatal_signal_pending).
fn dying(me: &Task) -> bool {
    signal::fatal_pending(me)
}

/// Linux's ptrace_stop: stops the current task for its tracer with
/// `exit_code` (what `wait` reports), `message` (GETEVENTMSG) and `info`
/// (GETSIGINFO), until the tracer resumes it or SIGKILL ends the stop.
/// Returns the code it resumed with (the signal a resume passed, or the
/// stop's own code if the tracer never collected it) and the siginfo as
/// the tracer left it. `regs` is the frame the tracer may have changed.
fn ptrace_stop(
    exit_code: u32,
    why: i32,
    message: u64,
    info: Option<SigInfo>,
    regs: Option<&mut PtRegs>,
) -> (u32, Option<SigInfo>) {
    let me = sched::current();
    if dying(&me) {
        return (exit_code, info);
    }
    let mut exit_code = exit_code;
    let mut info = info;
    // From the stop's record to the tracer's wake-up, its locks (this
    // task's state, the tracer's signal and wait queues, the run queue)
    // unmask interrupts once.
    let irqs = crate::sync::IrqsMasked::new();
    let tracer = {
        let mut st = me.ptrace.state.lock();
        let Some(tracer) = st.tracer.as_ref().and_then(Weak::upgrade) else {
            return (exit_code, info);
        };
        if let Some(i) = info.as_mut().filter(|i| (i.code >> 8) as u32 == PTRACE_EVENT_STOP) {
            // A SIGCONT ended the group stop after the caller chose the
            // signal: report what is true as the notification is cleared
            // (both under this lock), or the tracer would listen for a
            // change it was never told of.
            let group_stopped = me.process.get().is_some_and(|p| signal::group_stop_in_effect(p));
            if !group_stopped && i.signo != SIGTRAP {
                i.signo = SIGTRAP;
                exit_code = SIGTRAP | (PTRACE_EVENT_STOP << 8);
                i.code = exit_code as i32;
            }
        }
        st.message = message;
        st.last_siginfo = info;
        st.exit_code = exit_code;
        st.stopped = true;
        st.listening = false;
        // Any trap answers a pending PTRACE_INTERRUPT; a PTRACE_EVENT_STOP
        // also reports the group-stop state a notification was about (a
        // later change notifies again).
        me.ptrace.trap_pending.store(false, Ordering::Release);
        if info.is_some_and(|i| (i.code >> 8) as u32 == PTRACE_EVENT_STOP) {
            me.ptrace.trap_notify.store(false, Ordering::Release);
        }
        // Set under the lock: a resume (which clears `stopped` under it,
        // then wakes) cannot fall between the check below and the sleep.
        me.set_state(TaskState::Stopped);
        tracer
    };
    // This task sleeps right after: the tracer (and parent) it wakes run
    // here next (Linux wakes the parent with __wake_up_sync).
    sched::with_sync_wakeups(|| {
        // Trapping for a group stop: this thread's part in it. Whoever
        // completes the stop tells the real parent too, unless that is the
        // tracer, told below (Linux's gstop_done and ptrace_reparented).
        if why == code::CLD_STOPPED && signal::group_stop_pending(&me) {
            if let Some(p) = me.process.get() {
                if signal::task_participate_group_stop(&me, p) {
                    let reparented = tracer
                        .process
                        .get()
                        .is_none_or(|tp| tp.pid != p.ppid.load(Ordering::Acquire));
                    signal::group_stop_done(p, signal::group_stop_signal(&me), reparented);
                }
            }
        }
        notify_tracer(&tracer, &me, why, exit_code);
    });
    drop(tracer);
    // The masking goes on into the first look at the stop, and one taken
    // for the last look (the tracer resumed it) lasts to the stop's end.
    let mut first = Some(irqs);
    let _irqs = loop {
        let masked = first.take().unwrap_or_else(crate::sync::IrqsMasked::new);
        {
            let mut st = me.ptrace.state.lock();
            if !st.stopped {
                break masked;
            }
            if st.listening && me.ptrace.trap_notify.swap(false, Ordering::AcqRel) {
                // PTRACE_LISTEN: the group stop changed; report again.
                st.listening = false;
                let stopped = me.process.get().is_some_and(|p| signal::group_stop_in_effect(p));
                let sig = if stopped { stop_signal(&me) } else { SIGTRAP };
                let code = sig | (PTRACE_EVENT_STOP << 8);
                st.exit_code = code;
                st.last_siginfo = Some(SigInfo {
                    signo: sig,
                    code: code as i32,
                    pid: me.tid(),
                    ..Default::default()
                });
                let tracer = st.tracer.as_ref().and_then(Weak::upgrade);
                drop(st);
                if let Some(t) = tracer {
                    notify_tracer(&t, &me, code::CLD_STOPPED, code);
                }
                continue;
            }
            me.set_state(TaskState::Stopped);
        }
        if dying(&me) {
            break masked;
        }
        drop(masked);
        sched::schedule();
    };
    me.set_state(TaskState::Running);
    // Shared signals sent while it was stopped picked no stopped thread:
    // this one takes them now (Linux's recalc_sigpending_tsk here).
    if let Some(p) = me.process.get() {
        signal::recalc_sigpending_tsk(&me, p);
    }
    // A tracer in the middle of a register access finishes first.
    let guard = me.ptrace.regs_lock.lock();
    let (code, info, fp, tls) = {
        let mut st = me.ptrace.state.lock();
        st.stopped = false;
        st.listening = false;
        st.message = 0;
        let code = core::mem::take(&mut st.exit_code);
        (
            code,
            st.last_siginfo.take(),
            st.pending_fpsimd.take(),
            st.pending_tls.take(),
        )
    };
    drop(guard);
    if let Some(fp) = fp {
        *me.fpsimd.lock() = *fp;
        arch::context::fpsimd_load(&fp);
    }
    if let Some(tls) = tls {
        me.tls.store(tls, Ordering::Relaxed);
        arch::context::set_tls(tls);
    }
    crate::debug::hw_breakpoint::ptrace_stop_done(&me);
    if let Some(regs) = regs {
        // The tracer wrote the frame behind this reference's back.
        core::hint::black_box(regs);
    }
    (code, info)
}

/// A stop with a fresh siginfo naming the current task (Linux's
/// ptrace_do_notify).
fn ptrace_do_notify(signr: u32, exit_code: u32, why: i32, message: u64, regs: Option<&mut PtRegs>) -> u32 {
    let me = sched::current();
    let info = SigInfo {
        signo: signr,
        code: exit_code as i32,
        pid: me.tid(),
        ..Default::default()
    };
    drop(me);
    ptrace_stop(exit_code, why, message, Some(info), regs).0
}

/// Linux's ptrace_event: an event stop if the tracer asked for `event`.
/// The exec event falls back to SIGTRAP for a non-seized tracee.
pub fn ptrace_event(event: u32, message: u64, regs: Option<&mut PtRegs>) {
    let me = sched::current();
    if !me.ptrace.is_traced() {
        return;
    }
    let (options, seized) = {
        let st = me.ptrace.state.lock();
        (st.options, st.seized)
    };
    let opt = match event {
        PTRACE_EVENT_FORK => PTRACE_O_TRACEFORK,
        PTRACE_EVENT_VFORK => PTRACE_O_TRACEVFORK,
        PTRACE_EVENT_CLONE => PTRACE_O_TRACECLONE,
        PTRACE_EVENT_EXEC => PTRACE_O_TRACEEXEC,
        PTRACE_EVENT_VFORK_DONE => PTRACE_O_TRACEVFORKDONE,
        PTRACE_EVENT_EXIT => PTRACE_O_TRACEEXIT,
        _ => 0,
    };
    if options & opt != 0 {
        drop(me);
        ptrace_do_notify(SIGTRAP, SIGTRAP | (event << 8), CLD_TRAPPED, message, regs);
    } else if event == PTRACE_EVENT_EXEC && !seized {
        signal::send_to_task(
            &me,
            SigInfo {
                signo: SIGTRAP,
                code: code::SI_USER,
                pid: me.process.get().map_or(0, |p| p.pid),
                ..Default::default()
            },
        );
    }
}

/// PTRACE_EVENT_EXIT at the start of `do_exit`, with the wait status.
pub fn ptrace_event_exit(status: i32) {
    if sched::current().ptrace.is_traced() {
        ptrace_event(PTRACE_EVENT_EXIT, status as u32 as u64, None);
    }
}

/// arm64's report_syscall: x7 says entry (0) or exit (1) during the stop
/// and is restored after. Returns whether a fatal signal is pending.
fn report_syscall(regs: &mut PtRegs, exit: bool) -> bool {
    let me = sched::current();
    let sysgood = me.ptrace.options() & PTRACE_O_TRACESYSGOOD != 0;
    let saved = regs.regs[7];
    regs.regs[7] = exit as u64;
    let msg = if exit {
        PTRACE_EVENTMSG_SYSCALL_EXIT
    } else {
        PTRACE_EVENTMSG_SYSCALL_ENTRY
    };
    let code = SIGTRAP | if sysgood { 0x80 } else { 0 };
    drop(me);
    let signr = ptrace_do_notify(SIGTRAP, code, CLD_TRAPPED, msg, Some(&mut *regs));
    regs.regs[7] = saved;
    let me = sched::current();
    // Continuing from a system call stop with a signal sends it.
    if signr != 0 && signr <= signal::NSIG as u32 {
        signal::send_to_task(
            &me,
            SigInfo {
                signo: signr,
                code: code::SI_KERNEL,
                ..Default::default()
            },
        );
    }
    signal::fatal_pending(&me)
}

/// Linux's syscall_trace_enter for a task with syscall tracing: the entry
/// stop. Returns the number to run (the tracer may have changed it through
/// NT_ARM_SYSTEM_CALL), `NO_SYSCALL` to skip the call.
/// Under PTRACE_SYSEMU (as the task entered) the call is skipped.
pub fn syscall_trace_enter(regs: &mut PtRegs) -> i64 {
    let emu = sched::current().ptrace.syscall_emu();
    if report_syscall(regs, false) {
        regs.syscallno = NO_SYSCALL;
    }
    if emu {
        return NO_SYSCALL;
    }
    regs.syscallno
}

/// Linux's syscall_trace_exit: the exit stop, if still tracing syscalls.
/// A single-stepped task reports the step over `svc` instead.
pub fn syscall_trace_exit(regs: &mut PtRegs) {
    let me = sched::current();
    if me.debug.single_step() {
        drop(me);
        crate::debug::hw_breakpoint::user_single_step_report();
    } else if me.ptrace.syscall_traced() {
        drop(me);
        report_syscall(regs, true);
    }
}

/// Linux's ptrace_signal: a signal about to be delivered to a traced task
/// stops it first. Returns the signal to deliver (the tracer may have
/// suppressed, replaced or edited it), or `None`.
pub fn ptrace_signal(info: SigInfo, regs: &mut PtRegs) -> Option<SigInfo> {
    let signr = info.signo;
    let (code, edited) = ptrace_stop(signr, CLD_TRAPPED, 0, Some(info), Some(regs));
    if code == 0 || code > signal::NSIG as u32 {
        return None;
    }
    let me = sched::current();
    let mut info = edited.unwrap_or(info);
    if code != info.signo {
        let tracer_pid = me
            .ptrace
            .tracer()
            .and_then(|t| t.process.get().map(|p| p.pid))
            .unwrap_or(0);
        info = SigInfo {
            signo: code,
            code: code::SI_USER,
            pid: tracer_pid,
            ..Default::default()
        };
    }
    if me.sig_blocked.load(Ordering::Acquire) & sigmask(code) != 0 || signal::fatal_pending(&me) {
        signal::send_to_task(&me, info);
        return None;
    }
    Some(info)
}

/// Linux's do_jobctl_trap: the PTRACE_EVENT_STOP of a seized tracee
/// (PTRACE_INTERRUPT, a seized auto-attached child, a group stop).
pub fn do_jobctl_trap(regs: &mut PtRegs) {
    let me = sched::current();
    me.ptrace.trap_pending.store(false, Ordering::Release);
    me.ptrace.trap_notify.store(false, Ordering::Release);
    if !me.ptrace.is_traced() {
        return;
    }
    let stopped = me.process.get().is_some_and(|p| signal::group_stop_in_effect(p));
    let sig = if stopped { stop_signal(&me) } else { SIGTRAP };
    let seized = me.ptrace.state.lock().seized;
    drop(me);
    if seized {
        ptrace_do_notify(sig, sig | (PTRACE_EVENT_STOP << 8), code::CLD_STOPPED, 0, Some(regs));
    } else {
        ptrace_stop(sig, code::CLD_STOPPED, 0, None, Some(regs));
    }
}

/// A traced task's part in a group stop (Linux's do_signal_stop for a
/// ptraced task): a ptrace stop that reports `sig`, with a siginfo only
/// for a seized tracee (PTRACE_EVENT_STOP).
pub fn ptrace_group_stop(sig: u32) {
    let me = sched::current();
    let seized = me.ptrace.state.lock().seized;
    drop(me);
    if seized {
        ptrace_do_notify(sig, sig | (PTRACE_EVENT_STOP << 8), code::CLD_STOPPED, 0, None);
    } else {
        ptrace_stop(sig, code::CLD_STOPPED, 0, None, None);
    }
}

/// The stop signal a group-stop trap of `t` reports: the one recorded
/// for its group stop (SIGSTOP if none was).
fn stop_signal(t: &Task) -> u32 {
    match signal::group_stop_signal(t) {
        0 => SIGSTOP,
        s => s,
    }
}

/// Whether `t` is traced through PTRACE_SEIZE (Linux's PT_SEIZED).
pub fn is_seized(t: &Task) -> bool {
    t.ptrace.is_traced() && t.ptrace.state.lock().seized
}

/// Linux's ptrace_trap_notify: the group stop of a seized tracee changed
/// (it began, or SIGCONT came); it traps with PTRACE_EVENT_STOP to tell
/// its tracer, at once if it listens, else at its next return to user
/// mode (an interruptible sleep ends for it, and a tracee in another stop
/// keeps the notification until resumed).
pub fn ptrace_trap_notify(t: &Arc<Task>) {
    let st = t.ptrace.state.lock();
    if !st.seized {
        return;
    }
    t.ptrace.trap_notify.store(true, Ordering::Release);
    let wake = if st.stopped {
        st.listening
    } else {
        t.state() == TaskState::Interruptible
    };
    drop(st);
    if wake {
        sched::wake_up(t);
    }
}

/// `p` got SIGCONT: each seized tracee among its threads is notified.
pub fn group_stop_changed(p: &Process) {
    for t in p.threads.lock().iter() {
        if t.ptrace.is_traced() {
            ptrace_trap_notify(t);
        }
    }
}

// ------------------------------------------------------------- exits

/// The task starts its exit: from here no tracer may attach (EPERM), so
/// that whoever hears of the exit is decided once.
pub fn exit_begin(me: &Arc<Task>) {
    me.ptrace.state.lock().exiting = true;
}

/// A task exits (Linux's exit_notify as it concerns tracers): a traced
/// thread other than the leader reports its own exit to its tracer; the
/// leader's exit is reported when the group is empty (Linux's
/// delay_group_leader), by the last thread to go, to the leader's tracer
/// (holding the real parent's report until the tracer has collected it),
/// or not at all when the tracer is the real parent, whose wait then
/// reaps the process once.
pub fn exit_ptrace_tracee(me: &Arc<Task>, p: &Arc<Process>, status: i32, last: bool) {
    let leader = me.tid() == p.pid;
    if leader && !last {
        if me.ptrace.is_traced() {
            *p.ptrace_delayed_leader.lock() = Some(me.clone());
        }
        return;
    }
    if !leader {
        report_exit(me, p, status, false);
    }
    if last {
        let l = if leader {
            Some(me.clone())
        } else {
            p.ptrace_delayed_leader.lock().take()
        };
        if let Some(l) = l {
            report_leader_exit(&l, p, status);
        }
    }
}

/// The process's exit, for its traced leader `l`.
fn report_leader_exit(l: &Arc<Task>, p: &Arc<Process>, status: i32) {
    if !l.ptrace.is_traced() {
        return;
    }
    let Some(tracer) = l.ptrace.tracer() else {
        unlink(l);
        return;
    };
    let tracer_is_parent = tracer
        .process
        .get()
        .is_some_and(|tp| tp.pid == p.ppid.load(Ordering::Acquire));
    if tracer_is_parent {
        // The real parent's wait reaps it, once.
        unlink(l);
        if let Some(tp) = tracer.process.get() {
            tp.child_wait.wake_up_all();
        }
        return;
    }
    report_exit(l, p, status, true);
}

/// An exec'ing thread took the pid of the leader that died before it:
/// that leader's exit is never reported.
pub fn forget_exited_leader(l: &Arc<Task>) {
    unlink(l);
}

/// `t`'s exit status for its tracer to collect with `wait`, announced
/// with SIGCHLD; `hold` keeps the process from its real parent until then.
fn report_exit(t: &Arc<Task>, p: &Arc<Process>, status: i32, hold: bool) {
    if !t.ptrace.is_traced() {
        return;
    }
    let Some(tracer) = t.ptrace.tracer() else {
        unlink(t);
        return;
    };
    {
        // Under the tracer's list: a tracer exiting now either has not
        // taken the list yet (and releases this record) or has (and this
        // task is no longer in it).
        let list = tracer.ptrace.ptraced.lock();
        if !list.iter().any(|x| Arc::ptr_eq(x, t)) {
            drop(list);
            unlink(t);
            return;
        }
        if hold {
            p.ptrace_hold.fetch_add(1, Ordering::AcqRel);
        }
        let mut st = t.ptrace.state.lock();
        st.exit_report = Some(status);
        st.holds_parent = hold;
        st.stopped = false;
        st.exit_code = 0;
    }
    t.ptrace.syscall_trace.store(false, Ordering::Release);
    let (cld, st) = process_core::cld_of_exit(status);
    if let Some(tp) = tracer.process.get() {
        signal::send_to_process(
            tp,
            SigInfo {
                signo: signal::SIGCHLD,
                code: cld,
                pid: t.tid(),
                status: st,
                ..Default::default()
            },
        );
        tp.child_wait.wake_up_all();
    }
}

/// The tracer has collected a dead tracee: its process may go to its real
/// parent now.
fn release_dead_tracee(t: &Arc<Task>) {
    let held = core::mem::take(&mut t.ptrace.state.lock().holds_parent);
    t.ptrace.traced.store(false, Ordering::Release);
    let Some(p) = t.process.get() else { return };
    if !held {
        return;
    }
    crate::process::release_traced_zombie(p);
}

/// The tracing thread `me` exits (Linux's exit_ptrace): every tracee is
/// detached, or killed if it asked for PTRACE_O_EXITKILL; dead ones are
/// released to their real parents.
pub fn exit_ptrace(me: &Arc<Task>) {
    let tracees: Vec<Arc<Task>> = core::mem::take(&mut *me.ptrace.ptraced.lock());
    for t in tracees {
        let (dead, exitkill) = {
            let st = t.ptrace.state.lock();
            (st.exit_report.is_some(), st.options & PTRACE_O_EXITKILL != 0)
        };
        if dead {
            release_dead_tracee(&t);
            continue;
        }
        if exitkill {
            signal::send_to_task(
                &t,
                SigInfo {
                    signo: SIGKILL,
                    code: code::SI_USER,
                    ..Default::default()
                },
            );
        }
        unlink(&t);
    }
}

// ------------------------------------------------------------- wait

/// What a tracer's `wait` found among its tracees.
pub struct TraceeWait {
    /// Some tracee matches the selection.
    pub found_any: bool,
    /// The tracee's ID and its report.
    pub report: Option<(u32, ChildEvent, Arc<Task>)>,
}

fn tracee_selected(who: process_core::WaitWho, t: &Task) -> bool {
    let pgid = t.process.get().map_or(0, |p| p.pgid.load(Ordering::Relaxed));
    who.selects(t.tid(), pgid)
}

/// The `i`th of the tracers whose lists a wait by `me` covers: every
/// thread of its process, or with __WNOTHREAD only itself. One at a time,
/// so that a wait allocates nothing; with whether it is the last one now,
/// so that a walk ends without taking the threads lock once more.
fn waiting_thread(me: &Arc<Task>, options: u32, i: usize) -> Option<(Arc<Task>, bool)> {
    match me.process.get() {
        Some(p) if options & process_core::WNOTHREAD == 0 => {
            let threads = p.threads.lock();
            threads.get(i).map(|t| (t.clone(), i + 1 >= threads.len()))
        }
        _ => (i == 0).then(|| (me.clone(), true)),
    }
}

/// Linux's wait_consider_task over `->ptraced`: a tracee's unreported stop
/// (whatever WUNTRACED says) or its death (with WEXITED); collected unless
/// WNOWAIT. Each list is looked at under its lock, as Linux walks it under
/// tasklist_lock; only the tracee that reports is taken out of it.
pub fn wait_tracees(who: process_core::WaitWho, options: u32) -> TraceeWait {
    let me = sched::current();
    let keep = options & process_core::WNOWAIT != 0;
    let mut found_any = false;
    let mut i = 0;
    loop {
        // Each list's scan unmasks interrupts once, not once per lock.
        let irqs = crate::sync::IrqsMasked::new();
        let Some((tracer, last)) = waiting_thread(&me, options, i) else {
            break;
        };
        let found = {
            let list = tracer.ptrace.ptraced.lock();
            let mut found = None;
            for t in list.iter().filter(|t| tracee_selected(who, t)) {
                found_any = true;
                let mut st = t.ptrace.state.lock();
                if let Some(status) = st.exit_report {
                    if options & process_core::WEXITED == 0 {
                        continue;
                    }
                    found = Some((t.clone(), ChildEvent::Exited(status)));
                    break;
                }
                if st.stopped && !st.listening && st.exit_code != 0 {
                    let code = st.exit_code;
                    if !keep {
                        st.exit_code = 0;
                    }
                    found = Some((t.clone(), ChildEvent::Traced(code)));
                    break;
                }
            }
            found
        };
        drop(irqs);
        match found {
            Some((t, ChildEvent::Exited(status))) => {
                if !keep {
                    let mut list = tracer.ptrace.ptraced.lock();
                    let Some(at) = list.iter().position(|x| Arc::ptr_eq(x, &t)) else {
                        // Another waiter took it meanwhile: this list again.
                        continue;
                    };
                    list.remove(at);
                    drop(list);
                    release_dead_tracee(&t);
                }
                return TraceeWait {
                    found_any,
                    report: Some((t.tid(), ChildEvent::Exited(status), t)),
                };
            }
            Some((t, event)) => {
                return TraceeWait {
                    found_any,
                    report: Some((t.tid(), event, t)),
                }
            }
            None if last => break,
            None => i += 1,
        }
    }
    TraceeWait {
        found_any,
        report: None,
    }
}

/// Whether a wait would find something among the tracees (its sleep's
/// condition): a report, or no selected tracee at all.
pub fn wait_tracees_ready(who: process_core::WaitWho, options: u32) -> (bool, bool) {
    let _irqs = crate::sync::IrqsMasked::new();
    let me = sched::current();
    let mut any = false;
    let mut i = 0;
    while let Some((tracer, last)) = waiting_thread(&me, options, i) {
        for t in tracer.ptrace.ptraced.lock().iter().filter(|t| tracee_selected(who, t)) {
            any = true;
            let st = t.ptrace.state.lock();
            if (st.exit_report.is_some() && options & process_core::WEXITED != 0)
                || (st.stopped && !st.listening && st.exit_code != 0)
            {
                return (true, true);
            }
        }
        if last {
            break;
        }
        i += 1;
    }
    (any, false)
}

/// Whether a thread of `tracer_proc` traces a thread of `child` (its stops
/// then reach that parent through ptrace, not as group-stop reports).
pub fn traced_by(child: &Process, tracer_proc: &Process) -> bool {
    child.threads.lock().iter().any(|t| {
        t.ptrace.is_traced()
            && t.ptrace
                .tracer()
                .is_some_and(|tr| tr.process.get().is_some_and(|tp| tp.pid == tracer_proc.pid))
    })
}
