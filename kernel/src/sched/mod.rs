//! Tasks and the scheduler (Linux's `kernel/sched`): one global run queue
//! served round-robin by every CPU, so that a task runs wherever a CPU is
//! free; preemption on the timer tick at return to user mode, and at
//! every blocking point in the kernel (as Linux's PREEMPT_VOLUNTARY).

pub mod loadavg;
pub mod task;
#[cfg(feature = "ktest")]
mod tests;
pub mod wait;

use crate::percpu::{PerCpu, NR_CPUS};
use crate::sync::IrqSpinLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use ktest_macros::notrace;
pub use task::{Task, TaskState};

/// Runnable tasks not running on any CPU.
static RUNQUEUE: IrqSpinLock<VecDeque<Arc<Task>>> = IrqSpinLock::new(VecDeque::new());
/// The task each CPU runs: a strong reference held as a raw pointer
/// (`Arc::into_raw`), so that `current` is one per-CPU load and a count
/// increment, with no lock and no interrupt masking (Linux reads SP_EL0).
/// Only this CPU's `schedule` and `init_cpu` replace it.
static CURRENT: PerCpu<AtomicPtr<Task>> = PerCpu::new([const { AtomicPtr::new(core::ptr::null_mut()) }; NR_CPUS]);
/// The pid trace entries give what each CPU runs: its task's thread ID,
/// 0 for an idle task (as Linux's swapper). Kept by [`set_current`] and
/// [`Task::set_tid`], so that an event reads one per-CPU word instead of
/// two fields through the task.
static CURRENT_PID: PerCpu<core::sync::atomic::AtomicU32> =
    PerCpu::new([const { core::sync::atomic::AtomicU32::new(0) }; NR_CPUS]);
/// Each CPU's idle task.
static IDLE: PerCpu<spin::Once<Arc<Task>>> = PerCpu::new([const { spin::Once::new() }; NR_CPUS]);
/// The task a CPU switched away from, whose `on_cpu` the next task clears.
static PREV: PerCpu<IrqSpinLock<Option<Arc<Task>>>> = PerCpu::new([const { IrqSpinLock::new(None) }; NR_CPUS]);
/// The dead tasks switched away from, whose last scheduler references
/// wait for this CPU to unmask interrupts (see [`delayed_put_task_struct`]):
/// the latest, a strong reference held as a raw pointer (`Arc::into_raw`),
/// so that the check on every switch is one load, and through its
/// `dead_next` those before it. Only this CPU's scheduler touches it.
static DEAD_TASK: PerCpu<AtomicPtr<Task>> = PerCpu::new([const { AtomicPtr::new(core::ptr::null_mut()) }; NR_CPUS]);
/// Set by the tick: reschedule at the next opportunity.
static NEED_RESCHED: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);
/// Length of a time slice in ticks.
const TIMESLICE_TICKS: u32 = 2;
static SLICE_LEFT: PerCpu<core::sync::atomic::AtomicU32> =
    PerCpu::new([const { core::sync::atomic::AtomicU32::new(TIMESLICE_TICKS) }; NR_CPUS]);
/// Set while this CPU's task makes synchronous wake-ups (Linux's WF_SYNC):
/// it is about to give up the CPU, so the tasks it wakes are left for this
/// CPU's next `schedule` instead of an IPI to an idle CPU.
static WAKE_SYNC: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);
/// A synchronous wake-up left a task queued without kicking an idle CPU:
/// the next `schedule` here, or the return to user mode if the waker did
/// not block after all, sends the kick it saved.
static KICK_OWED: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);
/// The owed kick waits past the return to user mode for the task's next
/// system call (see [`with_sync_wakeups_to_next_syscall`]).
static KICK_DEFERRED: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

/// No CPU (a task's `wake_sync_cpu` when no synchronous wake-up holds it).
const NO_CPU: u32 = u32::MAX;

/// Whether `cpu` leaves `t` to the CPU whose synchronous wake-up queued
/// it: that CPU's task gives up the CPU next (or pays the kick it owes
/// first). Without this, an idle CPU woken by anything else (its tick)
/// took the task from the shared queue in that short window, and a
/// tracer and its tracee, which ping-pong on one CPU, went on in a
/// cross-CPU handoff, each stop then costing an idle CPU's wake-up.
fn left_to_sync_waker(t: &Task, cpu: usize) -> bool {
    let w = t.wake_sync_cpu.load(Ordering::Relaxed);
    w != NO_CPU && w as usize != cpu && KICK_OWED.on(w as usize).load(Ordering::Relaxed)
}

/// The owed kick is paid (the caller holds the queue lock): the tasks
/// this CPU's synchronous wake-ups queued are free for any CPU.
fn release_sync_marks(rq: &VecDeque<Arc<Task>>, me: usize) {
    for t in rq
        .iter()
        .filter(|t| t.wake_sync_cpu.load(Ordering::Relaxed) == me as u32)
    {
        t.wake_sync_cpu.store(NO_CPU, Ordering::Relaxed);
    }
}

/// The running task on this CPU.
#[notrace]
pub fn current() -> Arc<Task> {
    try_current().expect("no current task")
}

/// Runs `f` on the running task without taking a reference to it (no
/// atomic count update: the trace write path calls it on every event);
/// `None` if the scheduler has not started on this CPU. Always inlined,
/// so never traced itself (the probe hit paths call it).
#[inline(always)]
pub fn with_current<R, F: FnOnce(&Task) -> R>(f: F) -> Option<R> {
    with_current_on(crate::percpu::this_cpu(), f)
}

/// [`with_current`] for `cpu`, which must be this CPU (see
/// [`crate::percpu::this_cpu`]).
#[inline(always)]
pub fn with_current_on<R, F: FnOnce(&Task) -> R>(cpu: usize, f: F) -> Option<R> {
    // Relaxed: only this CPU's `schedule` stores its slot (so this load
    // sees its last store), and it took the task from a run queue under
    // that queue's lock, which ordered the task's creation before.
    let p = CURRENT.on(cpu).load(Ordering::Relaxed);
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null CURRENT slot came from `Arc::into_raw` and owns a
    // strong count of the task running this code, which only this CPU's
    // `schedule` replaces; the task that runs `f` stays alive while it
    // runs, wherever `f` may take it, so the borrow cannot outlive it.
    #[allow(unsafe_code)]
    let t = unsafe { &*p };
    Some(f(t))
}

/// The running task, if the scheduler has started on this CPU. Notrace:
/// the kprobe and kretprobe hit paths call it.
#[notrace]
pub fn try_current() -> Option<Arc<Task>> {
    let p = CURRENT.this().load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null CURRENT slot came from `Arc::into_raw` and owns one
    // strong count of a live task. Only this CPU replaces its own slot, in
    // `schedule` (interrupts masked) or `init_cpu`, and kernel code is never
    // preempted or migrated between reading the slot and this increment
    // (tasks switch only in `schedule`, which no interrupt handler calls);
    // so the task is still alive here and the new count is ours to own.
    #[allow(unsafe_code)]
    unsafe {
        Arc::increment_strong_count(p);
        Some(Arc::from_raw(p))
    }
}

/// The pid of what `cpu` (this CPU) runs, as trace entries give it: the
/// task's thread ID, 0 for an idle task or before the scheduler starts.
#[inline(always)]
pub fn current_trace_pid_on(cpu: usize) -> u32 {
    CURRENT_PID.on(cpu).load(Ordering::Relaxed)
}

/// `task`'s thread ID changed (an exec by a thread other than its
/// leader): this CPU's [`current_trace_pid_on`] follows if it runs it.
pub(crate) fn current_tid_changed(task: &Task) {
    let me = CURRENT.this().load(Ordering::Relaxed);
    if core::ptr::eq(me, task) && !task.is_idle() {
        CURRENT_PID.this().store(task.tid(), Ordering::Relaxed);
    }
}

/// Makes `next` this CPU's current task; returns the previous one.
fn set_current(next: Arc<Task>) -> Option<Arc<Task>> {
    // Interrupts are masked (a switch, or a CPU's start): no event on
    // this CPU sees the pid and the task disagree.
    CURRENT_PID
        .this()
        .store(if next.is_idle() { 0 } else { next.tid() }, Ordering::Relaxed);
    let old = CURRENT.this().swap(Arc::into_raw(next).cast_mut(), Ordering::AcqRel);
    if old.is_null() {
        return None;
    }
    // SAFETY: a non-null slot value came from `Arc::into_raw` and owned one
    // strong count, which the swap took out of the slot and hands back.
    #[allow(unsafe_code)]
    Some(unsafe { Arc::from_raw(old) })
}

/// Whether `task` is what `cpu` runs now (a racy snapshot, for hints).
fn runs_on(cpu: usize, task: &Arc<Task>) -> bool {
    core::ptr::eq(CURRENT.on(cpu).load(Ordering::Acquire), Arc::as_ptr(task))
}

/// The running task, for reports from fatal exceptions, which must not
/// wait: `try_current` takes no lock, so it is that.
pub fn try_current_nowait() -> Option<Arc<Task>> {
    try_current()
}

/// Turns the code running on this CPU into its idle task, and starts
/// scheduling here.
pub fn init_cpu() {
    let idle = Task::new_idle(arch::cpu::cpu_id());
    idle.on_cpu.store(true, Ordering::Release);
    IDLE.this().call_once(|| idle.clone());
    drop(set_current(idle));
}

/// Makes `task` runnable; false if it was already runnable. Every wake-up
/// goes through [`wake_up_process`].
#[inline(always)]
pub fn wake_up(task: &Arc<Task>) -> bool {
    wake_up_process(task) != 0
}

/// Makes `p` runnable (Linux's `wake_up_process(p)` for a new or sleeping
/// task; x0 points at the task's reference). Returns 1 if it woke it, 0 if
/// it was already runnable or is dead.
///
/// `on_rq` means "queued or running" (as in Linux): a running task that is
/// about to sleep is still on the run queue until `schedule` takes it off
/// under the queue lock, so a wake-up in between only resets its state and
/// is never lost.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
pub extern "C" fn wake_up_process(p: &Arc<Task>) -> i32 {
    i32::from(try_to_wake_up(p))
}

fn try_to_wake_up(task: &Arc<Task>) -> bool {
    // An idle task belongs to its CPU, which picks it when nothing else is
    // runnable: it never enters the shared queue (where another CPU could
    // take it).
    if task.is_idle() {
        let was = task.state();
        task.set_state(TaskState::Running);
        return was != TaskState::Running;
    }
    let mut rq = RUNQUEUE.lock();
    match task.state() {
        TaskState::Dead | TaskState::Zombie => return false,
        TaskState::Running => return false,
        _ => {}
    }
    task.set_state(TaskState::Running);
    crate::trace::tracepoint::sched::trace_sched_waking(task);
    // Before another CPU can pick the task (Linux's sched_wakeup fires
    // under the run-queue lock).
    crate::trace::trace_sched_wakeup::wakeup_hook(task);
    if !task.on_rq.swap(true, Ordering::AcqRel) {
        let me = arch::cpu::cpu_id();
        // The waker is about to block: the task runs here next, with no
        // cross-CPU wake-up (an idle CPU's wfi exit is slow, and under
        // QEMU slower still). Marked before it is queued, under the queue
        // lock, so that no other CPU picks it in between.
        let sync = WAKE_SYNC.on(me).load(Ordering::Relaxed) && task.may_run_on(me);
        if sync {
            task.wake_sync_cpu.store(me as u32, Ordering::Relaxed);
            KICK_OWED.on(me).store(true, Ordering::Relaxed);
        } else {
            task.wake_sync_cpu.store(NO_CPU, Ordering::Relaxed);
        }
        rq.push_back(task.clone());
        drop(rq);
        if !sync {
            kick_idle_cpu(task);
        }
    }
    crate::trace::tracepoint::sched::trace_sched_wakeup(task);
    true
}

/// Runs `f`, whose wake-ups are synchronous (Linux's WF_SYNC, as
/// `__wake_up_sync` and a tracee's `do_notify_parent_cldstop`): the caller
/// gives up the CPU right after (a tracee stopping, a tracer about to
/// wait), so a task it wakes is picked by this CPU's next `schedule`
/// instead of being sent to an idle CPU. If the caller returns to user mode
/// without blocking, the kick is sent then ([`flush_sync_kick`]), so a
/// woken task waits at most for that; until then idle CPUs leave it alone.
pub fn with_sync_wakeups<R>(f: impl FnOnce() -> R) -> R {
    // Kernel code is not preempted between here and the reset (tasks
    // switch only in `schedule`, which `f` must not call), so the flag
    // stays on this task's CPU.
    let flag = WAKE_SYNC.this();
    let was = flag.swap(true, Ordering::Relaxed);
    let r = f();
    flag.store(was, Ordering::Relaxed);
    r
}

/// [`with_sync_wakeups`] for a waker that returns to user mode first and
/// blocks in its next system call: a tracer's resume request, followed by
/// its wait for the next stop. The kick is kept owed up to that call, so
/// that the tracee runs here once the tracer's wait blocks, with no
/// cross-CPU wake-up of an idle CPU (which QEMU makes slow); any other
/// call sends it then. A tracer that computes in user mode instead delays
/// the tracee at most until its time slice ends (two ticks), when its own
/// CPU runs the tracee and kicks an idle one for it: until the kick is
/// paid, other CPUs leave the tracee to it ([`left_to_sync_waker`]).
pub fn with_sync_wakeups_to_next_syscall<R>(f: impl FnOnce() -> R) -> R {
    let r = with_sync_wakeups(f);
    if KICK_OWED.this().load(Ordering::Relaxed) {
        KICK_DEFERRED.this().store(true, Ordering::Relaxed);
    }
    r
}

/// At system call entry: a kick deferred by
/// [`with_sync_wakeups_to_next_syscall`] is sent now unless the call is
/// `blocks` (a wait, whose `schedule` hands this CPU to the woken task).
#[inline]
pub fn syscall_entry_kick(blocks: bool) {
    let deferred = KICK_DEFERRED.this();
    if deferred.load(Ordering::Relaxed) {
        deferred.store(false, Ordering::Relaxed);
        if !blocks {
            flush_sync_kick();
        }
    }
}

/// Sends the kick a synchronous wake-up saved, if the waker did not give
/// up the CPU after all (called on the way back to user mode, where a
/// deferred kick waits for the next system call instead).
#[inline]
pub fn flush_sync_kick() {
    if KICK_DEFERRED.this().load(Ordering::Relaxed) {
        return;
    }
    let owed = KICK_OWED.this();
    if owed.load(Ordering::Relaxed) {
        owed.store(false, Ordering::Relaxed);
        kick_queued();
    }
}

/// Kicks an idle CPU for the first queued task, if any. Out of line and
/// cold: its run-queue lock and interrupt-mask hooks would otherwise give
/// [`flush_sync_kick`], on every return to user mode, a stack frame.
#[cold]
#[inline(never)]
fn kick_queued() {
    let first = {
        let rq = RUNQUEUE.lock();
        release_sync_marks(&rq, arch::cpu::cpu_id());
        rq.front().cloned()
    };
    if let Some(t) = first {
        kick_idle_cpu(&t);
    }
}

/// Scheduling policies (`SCHED_DEADLINE` is not supported: this kernel has
/// no deadline class).
pub use uapi::sched::{SCHED_BATCH, SCHED_DEADLINE, SCHED_FIFO, SCHED_IDLE, SCHED_NORMAL, SCHED_RR};
/// Highest real-time priority (`MAX_RT_PRIO - 1`).
pub const MAX_USER_RT_PRIO: u32 = 99;

/// Whether `policy` is a real-time one (Linux's `rt_policy`).
pub fn rt_policy(policy: u32) -> bool {
    policy == SCHED_FIFO || policy == SCHED_RR
}

/// A task's priority as Linux numbers it (`p->prio`): 0..=98 for
/// real-time tasks (lower is higher), 120 for every other (nice is not
/// kept: 0).
pub fn task_prio(t: &Task) -> i32 {
    if rt_policy(t.policy.load(Ordering::Relaxed)) {
        MAX_USER_RT_PRIO as i32 - t.rt_priority.load(Ordering::Relaxed) as i32
    } else {
        120
    }
}

/// `(policy, rt_priority, nice)` of a task.
pub fn task_sched_attr(t: &Task) -> (u32, u32, i32) {
    (
        t.policy.load(Ordering::Relaxed),
        t.rt_priority.load(Ordering::Relaxed),
        0,
    )
}

/// Sets a task's policy and real-time priority (Linux's
/// `__sched_setscheduler`, checks done by the caller).
pub fn set_scheduler(t: &Task, policy: u32, rt_priority: u32) {
    t.policy.store(policy, Ordering::Relaxed);
    t.rt_priority.store(rt_priority, Ordering::Relaxed);
}

/// A new task takes its parent's policy (Linux's `sched_fork`).
pub fn sched_fork(parent: &Task, child: &Task) {
    let (policy, prio, _) = task_sched_attr(parent);
    set_scheduler(child, policy, prio);
}

/// The queue index of the task `cpu` runs next: the first of the highest
/// real-time priority among those it may run (SCHED_FIFO and SCHED_RR
/// before the others, which take turns).
fn pick_next_task(rq: &VecDeque<Arc<Task>>, cpu: usize) -> Option<usize> {
    let mut best: Option<(usize, i32)> = None;
    for (i, t) in rq.iter().enumerate() {
        if !t.may_run_on(cpu) || left_to_sync_waker(t, cpu) {
            continue;
        }
        let prio = task_prio(t);
        if best.is_none_or(|(_, b)| prio < b) {
            best = Some((i, prio));
        }
    }
    best.map(|(i, _)| i)
}

/// Makes a stopped or sleeping task runnable regardless of why it sleeps
/// (for SIGKILL and SIGCONT).
pub fn wake_up_state(task: &Arc<Task>) -> bool {
    wake_up(task)
}

/// Linux's kick_process: interrupts `task` if it runs on another CPU, so
/// that it looks at what was just flagged for it (a signal) on its way
/// back to user mode now, instead of at its next tick.
pub fn kick_process(task: &Task) {
    if !task.on_cpu.load(Ordering::Acquire) {
        return;
    }
    let cpu = task.last_cpu.load(Ordering::Acquire) as usize;
    if cpu != arch::cpu::cpu_id() && crate::smp::online_cpus().any(|c| c == cpu) {
        crate::smp::send_ipi(crate::smp::Ipi::Reschedule, core::iter::once(cpu));
    }
}

/// Sends a reschedule IPI to an idle CPU `task` may run on, if any, so
/// that new work starts at once instead of at its next tick.
fn kick_idle_cpu(task: &Task) {
    let me = arch::cpu::cpu_id();
    for cpu in crate::smp::online_cpus().filter(|&c| c != me && task.may_run_on(c)) {
        if IDLE.on(cpu).get().is_some_and(|idle| runs_on(cpu, idle)) {
            crate::smp::send_ipi(crate::smp::Ipi::Reschedule, core::iter::once(cpu));
            return;
        }
    }
}

/// Picks the next task and switches to it. The caller has set its own
/// state (Running to be re-queued, or a sleeping state). Exported under
/// Linux's name, `schedule`.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
pub extern "C" fn schedule() {
    let flags = arch::cpu::local_irq_save();
    NEED_RESCHED.this().store(false, Ordering::Relaxed);
    SLICE_LEFT.this().store(TIMESLICE_TICKS, Ordering::Relaxed);
    let prev = current();
    let next = {
        let mut rq = RUNQUEUE.lock();
        if !prev.is_idle() {
            if prev.state() == TaskState::Running {
                rq.push_back(prev.clone());
            } else {
                prev.on_rq.store(false, Ordering::Release);
            }
        }
        // The first queued task this CPU may run (its affinity) of the
        // highest real-time priority.
        let me = arch::cpu::cpu_id();
        let next = pick_next_task(&rq, me)
            .and_then(|i| rq.remove(i))
            .unwrap_or_else(|| IDLE.this().get().expect("idle task").clone());
        next.wake_sync_cpu.store(NO_CPU, Ordering::Relaxed);
        // A synchronous wake-up's task is picked (or waits behind others
        // this CPU serves first): what is still queued gets its kick now.
        KICK_DEFERRED.this().store(false, Ordering::Relaxed);
        if KICK_OWED.this().swap(false, Ordering::Relaxed) {
            release_sync_marks(&rq, me);
            (next, rq.front().cloned())
        } else {
            (next, None)
        }
    };
    let (next, kick) = next;
    if let Some(t) = kick {
        kick_idle_cpu(&t);
    }
    if Arc::ptr_eq(&prev, &next) {
        arch::cpu::local_irq_restore(flags);
        put_dead_task();
        return;
    }
    // The next task may still be leaving another CPU.
    while next.on_cpu.load(Ordering::Acquire) {
        core::hint::spin_loop();
    }
    next.on_cpu.store(true, Ordering::Release);
    crate::trace::tracepoint::sched::set_task_cpu(&next, arch::cpu::cpu_id());
    crate::trace::tracepoint::sched::trace_sched_switch(&prev, &next);
    crate::trace::cmdlines::sched_switch(&prev, &next);
    crate::trace::function_graph::graph_sched_switch(&prev, &next);
    crate::trace::trace_sched_wakeup::wakeup_hook_sched_switch(&prev, &next);
    crate::rseq::rseq_preempt(&prev);
    prev.switch_out();
    next.switch_in();
    crate::cputime::account_switch(&prev, &next);
    let (prev_ctx, next_ctx): (*const arch::context::TaskContext, *const arch::context::TaskContext) =
        (&prev.ctx, &next.ctx);
    // The slots keep both tasks alive across the switch; no reference may
    // stay in this frame, which a dead task never returns to.
    // The slot's old reference is `prev`'s, which PREV now keeps instead.
    drop(set_current(next));
    *PREV.this().lock() = Some(prev);
    // The preemption count is the task's: kept across the switch.
    let preempt_count = crate::preempt::preempt_count();
    // SAFETY: `prev` (kept alive by PREV until the next task's
    // finish_task_switch) runs here and now; `next` (kept alive by CURRENT)
    // is marked on this CPU, and no other CPU can switch to it until it
    // clears `on_cpu`, which happens only after it is switched out again.
    #[allow(unsafe_code)]
    unsafe {
        arch::context::switch_to(&*prev_ctx, &*next_ctx)
    };
    crate::preempt::set_preempt_count(preempt_count);
    finish_task_switch();
    arch::cpu::local_irq_restore(flags);
    put_dead_task();
}

/// Completes a switch on the new task's side: the previous task may now be
/// picked by another CPU. A dead one is kept for [`put_dead_task`]: its
/// last references go with interrupts on, as Linux's
/// `put_task_struct_rcu_user` leaves them to an RCU callback.
fn finish_task_switch() {
    let Some(prev) = PREV.this().lock().take() else {
        return;
    };
    prev.on_cpu.store(false, Ordering::Release);
    if prev.state() == TaskState::Dead {
        // Pushed on this CPU's list with interrupts masked, so that no
        // `put_dead_task` here runs between the load and the store. Older
        // ones are there only if every switch here since they died had
        // interrupts masked throughout (see `put_dead_task`).
        let slot = DEAD_TASK.this();
        prev.dead_next.store(slot.load(Ordering::Acquire), Ordering::Relaxed);
        slot.store(Arc::into_raw(prev).cast_mut(), Ordering::Release);
    }
}

/// The reference a [`DEAD_TASK`] slot or a `dead_next` link held, if any.
fn dead_task_from_raw(p: *mut Task) -> Option<Arc<Task>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null DEAD_TASK or `dead_next` value came from
    // `Arc::into_raw` and owned one strong count, which the swap that read
    // it took out of the slot or link: it is handed back exactly once.
    #[allow(unsafe_code)]
    Some(unsafe { Arc::from_raw(p) })
}

/// Drops the dead tasks this CPU switched away from, once interrupts are
/// unmasked: the end of `schedule` and `schedule_tail`, right after
/// `finish_task_switch`, so that nothing else runs on this CPU in between.
/// A switch back to a task that called `schedule` with interrupts masked
/// leaves them for the next switch here.
#[inline(always)]
fn put_dead_task() {
    let slot = DEAD_TASK.this();
    if slot.load(Ordering::Relaxed).is_null() || arch::cpu::irqs_disabled() {
        return;
    }
    put_dead_tasks(slot.swap(core::ptr::null_mut(), Ordering::AcqRel));
}

/// [`delayed_put_task_struct`] for each task of a list taken off
/// [`DEAD_TASK`], latest first.
#[cold]
#[inline(never)]
fn put_dead_tasks(mut p: *mut Task) {
    while let Some(t) = dead_task_from_raw(p) {
        p = t.dead_next.swap(core::ptr::null_mut(), Ordering::AcqRel);
        delayed_put_task_struct(t);
    }
}

/// The end of a dead task, switched out for good (Linux's
/// `delayed_put_task_struct`, which an RCU callback runs in softirq
/// context; this kernel has neither, so it runs in the task context of
/// the next task on the CPU, interrupts on): its hooked calls are dropped,
/// `sched_process_free` fires, and the scheduler's reference goes, with
/// it the `task_struct` and its stack unless a reader still holds one.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
pub fn delayed_put_task_struct(t: Arc<Task>) {
    // Its hooked calls will never return (Linux's kprobe_flush_task and
    // rethook_flush_task, also called here).
    t.ret_stack.flush();
    crate::time::forget_dead_task(&t);
    crate::trace::tracepoint::sched::trace_sched_process_free(&t);
    crate::trace::events::event_pids_exit(t.tid());
    task::free_task(t);
}

/// First code of every new task (from `ret_from_fork`).
#[allow(unsafe_code)] // exported for the entry code
#[no_mangle]
#[notrace]
pub extern "C" fn schedule_tail() {
    crate::preempt::set_preempt_count(0);
    finish_task_switch();
    arch::cpu::local_irq_enable();
    put_dead_task();
    // A new thread takes the shared signals it does not block that came
    // while it was being made (Linux's calculate_sigpending).
    if let Some(me) = try_current() {
        if let Some(p) = me.process.get() {
            crate::signal::recalc_sigpending(&me, p);
        }
    }
}

/// Called by the timer tick on every CPU; exported under Linux 6.12's
/// name (`sched_tick`), for the function tracer.
#[allow(unsafe_code)] // export_name
#[export_name = "sched_tick"]
#[inline(never)]
pub fn scheduler_tick() {
    let left = SLICE_LEFT.this().load(Ordering::Relaxed);
    let idle = try_current().is_some_and(|c| c.is_idle());
    loadavg::tick(idle);
    if left > 1 {
        SLICE_LEFT.this().store(left - 1, Ordering::Relaxed);
    } else if !idle {
        // The idle task's slice ends only for work (below): its need-resched
        // flag, which trace entries show, is Linux's.
        NEED_RESCHED.this().store(true, Ordering::Relaxed);
    }
    // Idle CPUs pick up queued work at each tick.
    if idle && has_work_here() {
        NEED_RESCHED.this().store(true, Ordering::Relaxed);
    }
}

/// Whether this CPU should reschedule.
#[inline(always)] // read by the tracer's record path, which must not be traced
pub fn need_resched() -> bool {
    need_resched_on(crate::percpu::this_cpu())
}

/// [`need_resched`] for `cpu`, which must be this CPU (see
/// [`crate::percpu::this_cpu`]).
#[inline(always)]
pub fn need_resched_on(cpu: usize) -> bool {
    NEED_RESCHED.on(cpu).load(Ordering::Relaxed)
}

/// Requests a reschedule on this CPU.
pub fn set_need_resched() {
    NEED_RESCHED.this().store(true, Ordering::Relaxed);
}

/// Gives up the CPU if a reschedule is due (Linux's `cond_resched`).
pub fn cond_resched() {
    if need_resched() {
        schedule();
    }
}

/// Gives up the CPU to any other runnable task (`sched_yield`).
pub fn yield_now() {
    schedule();
}

/// The idle loop of every CPU: run queued tasks, else wait for interrupts.
pub fn cpu_idle() -> ! {
    loop {
        if has_work_here() {
            schedule();
            continue;
        }
        // Masked from the check to the wfi, which still ends on a pending
        // interrupt: a wake-up's IPI taken in between would otherwise be
        // lost until the next tick.
        let flags = arch::cpu::local_irq_save();
        if !has_work_here() {
            // The wait is not a latency (Linux's default_idle_call).
            crate::trace::trace_irqsoff::stop_critical_timings();
            arch::cpu::wfi();
            crate::trace::trace_irqsoff::start_critical_timings();
        }
        arch::cpu::local_irq_restore(flags);
    }
}

/// Whether a queued task may run on this CPU.
fn has_work_here() -> bool {
    let me = arch::cpu::cpu_id();
    RUNQUEUE
        .lock()
        .iter()
        .any(|t| t.may_run_on(me) && !left_to_sync_waker(t, me))
}

/// Sets the CPUs `task` may run on (`sched_setaffinity`); a running task
/// that may no longer run where it is leaves at its next reschedule, which
/// the caller makes happen at once for itself.
pub fn set_cpus_allowed(task: &Task, mask: u64) {
    task.cpus_allowed.store(mask, Ordering::Relaxed);
}

/// Number of tasks waiting to run.
pub fn nr_queued() -> usize {
    RUNQUEUE.lock().len()
}
