//! Signals with Linux's numbers, default actions and arm64 delivery
//! (`kernel/signal.c`, `arch/arm64/kernel/signal.c`).

pub mod frame;
#[cfg(feature = "ktest")]
mod tests;

use crate::errno::Errno;
use crate::mm::slab::{KmemCache, SlabBox};
use crate::process::{current_process, ChildEvent, Process};
use crate::sched::{self, Task, TaskState};
use crate::sync::IrqSpinLock;
use crate::trace::tracepoint::kmem::GFP_ATOMIC;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ptrace::PtRegs;
use core::sync::atomic::{AtomicU64, Ordering};
use signal_core::{QueueOverflow, Restart, Source};

/// Number of signals (1..=64), and the signal numbers: uapi's.
pub use uapi::signal::{nr, nr::*, NSIG, SIGRTMAX, SIGRTMIN};

/// `si_code` values, handler values, `sa_flags` bits and `siginfo_t`:
/// uapi's, the one place the ABI is written down.
pub use uapi::signal::{code, sa, SigInfo, SIG_DFL, SIG_IGN};

pub use signal_core::sigmask;

const UNBLOCKABLE: u64 = signal_core::UNBLOCKABLE;

/// A thread's group-stop bits (Linux's `task->jobctl`), in `Task::jobctl`.
pub mod jobctl {
    /// The stop signal of the group stop the thread takes part in, kept
    /// after it stopped so that later traps report it.
    pub const STOP_SIGMASK: u32 = 0xffff;
    /// The thread must stop for a group stop (JOBCTL_STOP_PENDING).
    pub const STOP_PENDING: u32 = 1 << 17;
    /// Its stop counts toward `group_stop_count` (JOBCTL_STOP_CONSUME).
    pub const STOP_CONSUME: u32 = 1 << 18;
    /// In an untraced group stop, until SIGCONT (JOBCTL_STOPPED).
    pub const STOPPED: u32 = 1 << 26;
}

/// Whether a group stop is in effect in `p`: complete, or some thread has
/// still to stop (Linux's `SIGNAL_STOP_STOPPED || group_stop_count`).
pub fn group_stop_in_effect(p: &Process) -> bool {
    p.stopped.load(Ordering::Acquire) || p.group_stop_count.load(Ordering::Acquire) != 0
}

/// The stop signal recorded in `t` (0 if none yet).
pub fn group_stop_signal(t: &Task) -> u32 {
    t.jobctl.load(Ordering::Acquire) & jobctl::STOP_SIGMASK
}

/// Whether `t` must still stop for a group stop.
pub fn group_stop_pending(t: &Task) -> bool {
    t.jobctl.load(Ordering::Acquire) & jobctl::STOP_PENDING != 0
}

/// Linux's task_participate_group_stop, under `p.threads`: `t` has
/// stopped; whether that completed a fresh group stop (the parent is then
/// told).
fn participate_locked(t: &Task, p: &Process) -> bool {
    let old = t
        .jobctl
        .fetch_and(!(jobctl::STOP_PENDING | jobctl::STOP_CONSUME), Ordering::AcqRel);
    if old & jobctl::STOP_PENDING == 0 || old & jobctl::STOP_CONSUME == 0 {
        return false;
    }
    let left = p.group_stop_count.load(Ordering::Acquire);
    if left == 0 {
        return false;
    }
    p.group_stop_count.store(left - 1, Ordering::Release);
    left == 1 && !p.stopped.swap(true, Ordering::AcqRel)
}

/// `t`'s part in a group stop as it enters a ptrace stop for it (Linux's
/// ptrace_stop with CLD_STOPPED): whether it completed the group stop.
pub fn task_participate_group_stop(t: &Task, p: &Process) -> bool {
    let _threads = p.threads.lock();
    participate_locked(t, p)
}

/// The group stop of `p` is complete: its parent's wait reports it, and
/// the parent hears of it unless its tracer (who was told) is the parent.
pub fn group_stop_done(p: &Process, sig: u32, notify: bool) {
    *p.wait_event.lock() = Some(ChildEvent::Stopped(sig));
    if notify {
        notify_parent_cldstop(p, code::CLD_STOPPED, sig);
    } else if let Some(pp) = crate::process::find_process(p.ppid.load(Ordering::Acquire)) {
        pp.child_wait.wake_up_all();
    }
}

/// A detached thread goes back into the group stop in effect (Linux's
/// __ptrace_unlink): it stops at its next return to user mode.
pub fn rejoin_group_stop(t: &Task) {
    let Some(p) = t.process.get() else { return };
    let _threads = p.threads.lock();
    if group_stop_in_effect(p) {
        let _ = t.jobctl.fetch_update(Ordering::AcqRel, Ordering::Acquire, |j| {
            let sig = if j & jobctl::STOP_SIGMASK == 0 { SIGSTOP } else { 0 };
            Some(j | jobctl::STOP_PENDING | sig)
        });
    }
}

/// What a signal does by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultAction {
    /// Terminate.
    Term,
    /// Terminate (Linux would dump core; no core files here).
    Core,
    /// Stop the process.
    Stop,
    /// Continue it (if stopped).
    Cont,
    /// Nothing.
    Ignore,
}

/// Linux's default action for `sig`.
pub fn default_action(sig: u32) -> DefaultAction {
    match sig {
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ | SIGSYS => {
            DefaultAction::Core
        }
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => DefaultAction::Stop,
        SIGCONT => DefaultAction::Cont,
        SIGCHLD | SIGURG | SIGWINCH => DefaultAction::Ignore,
        _ => DefaultAction::Term,
    }
}

/// A `struct kernel_sigaction` (arm64: handler, flags, restorer, mask).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigAction {
    /// SIG_DFL, SIG_IGN or the handler address.
    pub handler: u64,
    /// SA_* flags.
    pub flags: u64,
    /// Return trampoline (SA_RESTORER).
    pub restorer: u64,
    /// Signals blocked while the handler runs.
    pub mask: u64,
}

/// A process's signal actions.
pub struct SigHand {
    actions: IrqSpinLock<[SigAction; NSIG]>,
}

impl Default for SigHand {
    fn default() -> Self {
        Self::new()
    }
}

impl SigHand {
    /// All default.
    pub fn new() -> SigHand {
        SigHand {
            actions: IrqSpinLock::new([SigAction::default(); NSIG]),
        }
    }
    /// A copy (fork without CLONE_SIGHAND).
    pub fn duplicate(&self) -> SigHand {
        SigHand {
            actions: IrqSpinLock::new(*self.actions.lock()),
        }
    }
    /// The action for `sig`.
    pub fn get(&self, sig: u32) -> SigAction {
        self.actions.lock()[sig as usize - 1]
    }
    /// Sets the action for `sig`.
    pub fn set(&self, sig: u32, a: SigAction) {
        self.actions.lock()[sig as usize - 1] = a;
    }
    /// At exec: handled signals revert to default; ignored stay ignored.
    pub fn reset_for_exec(&self) {
        for a in self.actions.lock().iter_mut() {
            if a.handler != SIG_IGN {
                *a = SigAction::default();
            }
        }
    }
}

/// Queued `sigqueue` entries of every pending set. Everything runs as uid 0,
/// so this one count is that user's (Linux's `UCOUNT_RLIMIT_SIGPENDING`).
static QUEUED: AtomicU64 = AtomicU64::new(0);

/// `RLIMIT_SIGPENDING`: Linux's default for this machine's RAM, which
/// `getrlimit` reports and `send` enforces.
pub fn sigpending_limit() -> u64 {
    static LIMIT: spin::Once<u64> = spin::Once::new();
    *LIMIT.call_once(|| signal_core::default_sigpending_limit(crate::mm::frame::stats().total as u64))
}

/// The information of the signals in one pending set (`struct sigpending`'s
/// list; the set itself is the `AtomicU64` next to it, changed only with
/// this lock held so both agree). Entries count against
/// `RLIMIT_SIGPENDING` until dequeued, flushed or dropped with their task or
/// process.
pub struct SigQueue {
    list: IrqSpinLock<Vec<SlabBox<SigInfo>>>,
}

/// `sigqueue`: the entries of queued signals (Linux's `sigqueue_cachep`,
/// charged to the sender's memory cgroup there).
pub static SIGQUEUE_CACHEP: KmemCache = KmemCache::new(
    "sigqueue",
    core::mem::size_of::<SigInfo>(),
    core::mem::align_of::<SigInfo>(),
    true,
);

impl Default for SigQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl SigQueue {
    /// Empty.
    pub const fn new() -> SigQueue {
        SigQueue {
            list: IrqSpinLock::new(Vec::new()),
        }
    }

    /// Entries queued now.
    pub fn len(&self) -> usize {
        self.list.lock().len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `n`th entry in queue order (PTRACE_PEEKSIGINFO).
    pub fn nth(&self, n: usize) -> Option<SigInfo> {
        self.list.lock().get(n).map(|q| **q)
    }
}

/// Linux's `__sigqueue_alloc` and `list_add_tail`: false when over the
/// limit (unless `override_rlimit`) or out of memory; never panics.
/// Entries a drained queue keeps room for (see [`dequeue`]).
const SIGQUEUE_KEEP: usize = 4;

fn sigqueue_add(list: &mut Vec<SlabBox<SigInfo>>, info: SigInfo, override_rlimit: bool) -> bool {
    let n = QUEUED.fetch_add(1, Ordering::AcqRel) + 1;
    let entry = if !override_rlimit && n > sigpending_limit() || list.try_reserve(1).is_err() {
        None
    } else {
        __sigqueue_alloc(info)
    };
    let Some(entry) = entry else {
        QUEUED.fetch_sub(1, Ordering::AcqRel);
        return false;
    };
    list.push(entry);
    true
}

/// A `sigqueue` entry holding `info` (Linux's `__sigqueue_alloc`, the
/// `call_site` of the cache's allocations); None without memory.
#[allow(unsafe_code)] // exported under Linux's name, for probes and call sites
#[no_mangle]
#[inline(never)]
fn __sigqueue_alloc(info: SigInfo) -> Option<SlabBox<SigInfo>> {
    SlabBox::try_new(&SIGQUEUE_CACHEP, info, GFP_ATOMIC as u32).ok()
}

/// Frees a dequeued or flushed entry and uncounts it from
/// `RLIMIT_SIGPENDING` (Linux's `__sigqueue_free`).
#[allow(unsafe_code)] // exported under Linux's name, for probes and call sites
#[no_mangle]
#[inline(never)]
fn __sigqueue_free(q: SlabBox<SigInfo>) {
    drop(q);
    // After the free, so that the call above is not a tail call and this
    // function is the free's call_site.
    QUEUED.fetch_sub(1, Ordering::AcqRel);
}

/// Drops the entries of signals in `mask` from `list`.
fn sigqueue_remove(list: &mut Vec<SlabBox<SigInfo>>, mask: u64) {
    // The entries kept move to the front in their order, those removed
    // gather behind them and are freed one by one through
    // `__sigqueue_free`.
    let mut kept = 0;
    for i in 0..list.len() {
        if mask & sigmask(list[i].signo) == 0 {
            list.swap(kept, i);
            kept += 1;
        }
    }
    for q in list.drain(kept..) {
        __sigqueue_free(q);
    }
    if list.is_empty() {
        // Give a flood's memory back, not just its entries.
        *list = Vec::new();
    }
}

impl Drop for SigQueue {
    fn drop(&mut self) {
        sigqueue_remove(&mut self.list.lock(), u64::MAX);
    }
}

/// Linux's `flush_sigqueue_mask`: discards the signals in `mask` from a
/// pending set, bits and information together.
fn flush_sigqueue_mask(bits: &AtomicU64, q: &SigQueue, mask: u64) {
    let mut list = q.list.lock();
    bits.fetch_and(!mask, Ordering::AcqRel);
    sigqueue_remove(&mut list, mask);
}

/// Discards pending `mask` signals of `p` and all its threads (an action set
/// to ignore, stop and continue signals cancelling each other).
pub fn flush_process_signals(p: &Process, mask: u64) {
    flush_sigqueue_mask(&p.shared_pending, &p.shared_sigqueue, mask);
    for t in p.threads.lock().iter() {
        flush_sigqueue_mask(&t.sig_pending, &t.sigqueue, mask);
    }
}

/// A thread leaves: its pending signals go (Linux's `exit_signals` and
/// `__exit_signal`), and with the last thread the process's shared ones.
pub fn exit_signals(t: &Task, p: &Process, last: bool) {
    // Shared signals this thread was picked for go to a thread that
    // stays (Linux's retarget_shared_pending at exit; an exec's
    // surviving thread too). It is off the thread list already, so no new
    // pick can fall on it.
    if !last && t.sigpending.swap(false, Ordering::SeqCst) {
        let unblocked = !t.sig_blocked.load(Ordering::SeqCst);
        retarget_shared_pending(t, p, unblocked);
    }
    flush_sigqueue_mask(&t.sig_pending, &t.sigqueue, u64::MAX);
    // A thread counted in a group stop that exits instead of stopping
    // still counts: the last one to go completes the stop.
    if group_stop_pending(t) && task_participate_group_stop(t, p) {
        group_stop_done(p, group_stop_signal(t), true);
    }
    if last {
        flush_sigqueue_mask(&p.shared_pending, &p.shared_sigqueue, u64::MAX);
    }
}

/// Linux's `__send_signal_locked` after `prepare_signal`: makes `info`
/// pending in one set. A classic signal already pending is not queued twice;
/// real-time ones queue up to `RLIMIT_SIGPENDING`.
fn queue_signal(bits: &AtomicU64, q: &SigQueue, info: SigInfo) -> Result<(), Errno> {
    let sig = info.signo;
    let mut list = q.list.lock();
    if sig < SIGRTMIN && bits.load(Ordering::Acquire) & sigmask(sig) != 0 {
        return Ok(());
    }
    // SIGKILL never needs its information: nothing can catch it.
    if sig != SIGKILL
        && !sigqueue_add(&mut list, info, signal_core::override_rlimit(sig, info.code))
        && signal_core::on_queue_overflow(sig, info.code) == QueueOverflow::Fail
    {
        return Err(Errno::EAGAIN);
    }
    bits.fetch_or(sigmask(sig), Ordering::AcqRel);
    Ok(())
}

/// Whether `p` has SIGCHLD ignored or SA_NOCLDWAIT (children auto-reaped).
pub fn ignores_children(p: &Process) -> bool {
    let a = p.sighand.get(SIGCHLD);
    a.handler == SIG_IGN || a.flags & sa::SA_NOCLDWAIT != 0
}

fn is_ignored(p: &Process, sig: u32) -> bool {
    let a = p.sighand.get(sig);
    a.handler == SIG_IGN || (a.handler == SIG_DFL && default_action(sig) == DefaultAction::Ignore)
}

/// Whether `t` has something to do on its way back to user mode (Linux's
/// signal_pending): an unblocked signal of its own, a stop or trap, or
/// the process's shared signals once it was picked for them
/// (`sigpending`). Another thread's pick does not concern it: a shared
/// signal wakes and interrupts only the thread `complete_signal` chose.
pub fn has_pending(t: &Task) -> bool {
    let shared = if t.sigpending.load(Ordering::SeqCst) {
        t.process.get().map_or(0, |p| p.shared_pending.load(Ordering::SeqCst))
    } else {
        0
    };
    let pending = t.sig_pending.load(Ordering::Acquire) | shared;
    pending & (!t.sig_blocked.load(Ordering::Acquire) | UNBLOCKABLE) != 0
        || t.ptrace.trap_pending()
        || group_stop_pending(t)
}

/// Linux's recalc_sigpending for the current thread `me` of `p`: picked
/// for the shared signals exactly while one it does not block is
/// pending. Cleared first and set again after looking, so that a sender
/// picking `me` meanwhile (it queues, then sets the flag) is never
/// undone.
pub fn recalc_sigpending(me: &Task, p: &Process) {
    me.sigpending.store(false, Ordering::SeqCst);
    recalc_sigpending_tsk(me, p);
}

/// Linux's recalc_sigpending_tsk: flags `t` (any thread, e.g. a stopped
/// tracee whose mask its tracer changed) when a shared signal it does not
/// block is pending; never clears.
pub fn recalc_sigpending_tsk(t: &Task, p: &Process) {
    // Against a sender that queued, then saw this thread stopped or
    // blocking and picked no one: one of the two sees the other.
    core::sync::atomic::fence(Ordering::SeqCst);
    if p.shared_pending.load(Ordering::SeqCst) & !t.sig_blocked.load(Ordering::SeqCst) != 0 {
        t.sigpending.store(true, Ordering::SeqCst);
    }
}

/// Linux's set_current_blocked: the current thread `me` blocks `new`
/// (SIGKILL and SIGSTOP aside); shared signals it now blocks go to
/// other threads that take them (retarget_shared_pending), and its own
/// flag follows the new mask. Returns the old mask.
pub fn set_current_blocked(me: &Task, new: u64) -> u64 {
    let new = new & !UNBLOCKABLE;
    // The mask first, then the pending set: a sender that saw the old
    // mask and picked `me` had queued already, and is seen below.
    let old = me.sig_blocked.swap(new, Ordering::SeqCst);
    if let Some(p) = me.process.get() {
        let newly = new & !old;
        if newly != 0 && p.shared_pending.load(Ordering::SeqCst) & newly != 0 {
            retarget_shared_pending(me, p, newly);
        }
        recalc_sigpending(me, p);
    }
    old
}

/// Linux's retarget_shared_pending: the shared signals of `which` that
/// `me` will not take (it blocks them, or exits) are given to the other
/// threads that do not block them, each woken for its share.
fn retarget_shared_pending(me: &Task, p: &Process, which: u64) {
    let mut retarget = p.shared_pending.load(Ordering::SeqCst) & which;
    if retarget == 0 {
        return;
    }
    let threads = p.threads.lock();
    for t in threads.iter().filter(|t| !core::ptr::eq(Arc::as_ptr(t), me)) {
        let blocked = t.sig_blocked.load(Ordering::SeqCst);
        if retarget & !blocked == 0 {
            continue;
        }
        // What `t` takes, the next thread need not.
        retarget &= blocked;
        signal_wake_up(t, false);
        if retarget == 0 {
            break;
        }
    }
}

/// Linux's signal_wake_up: `t` is to take the shared signals; an
/// interruptible sleep ends (a fatal signal ends any), and a thread
/// running on another CPU is interrupted to take them now.
fn signal_wake_up(t: &Arc<Task>, fatal: bool) {
    t.sigpending.store(true, Ordering::SeqCst);
    if fatal || t.state() == TaskState::Interruptible {
        sched::wake_up(t);
    } else {
        sched::kick_process(t);
    }
}

/// Linux's wants_signal: whether `t` may be picked for the shared `sig`
/// (`shared`: the process's pending set, `sig` in it). A thread already
/// on its way to take signals (running, or runnable with some pending)
/// is passed over in favour of one that is not, so that signals spread
/// over threads; one asleep is always woken for it.
fn wants_signal(t: &Task, sig: u32, shared: u64) -> bool {
    // SIGKILL and SIGSTOP are never blocked, whatever a temporary mask
    // (sigtimedwait's look at its set) says.
    let blocked = t.sig_blocked.load(Ordering::SeqCst) & !UNBLOCKABLE;
    if blocked & sigmask(sig) != 0 {
        return false;
    }
    if sig == SIGKILL {
        return true;
    }
    let state = t.state();
    // Linux's task_is_stopped_or_traced.
    if state == TaskState::Stopped {
        return false;
    }
    if t.on_cpu.load(Ordering::Acquire) || state == TaskState::Interruptible {
        return true;
    }
    let others = if t.sigpending.load(Ordering::SeqCst) {
        shared & !sigmask(sig)
    } else {
        0
    };
    let already = (t.sig_pending.load(Ordering::Acquire) | others) & (!blocked | UNBLOCKABLE) != 0
        || t.ptrace.trap_pending()
        || group_stop_pending(t);
    !already
}

/// Linux's complete_signal for a signal sent to process `p` through its
/// thread `to` (the leader, unless kill named another thread's ID), now
/// in its shared set: picks ONE thread to take it (`to` if it wants it;
/// else the next that does, from the last one picked), and flags and
/// wakes only that one. A signal that will kill
/// the group (default action, not a core dump, not traced, not awaited
/// by sigtimedwait) takes every thread down at once, as SIGKILL to each.
/// When no thread wants it now, it stays pending for the first thread
/// that unblocks it.
fn complete_signal(p: &Arc<Process>, sig: u32, to: u32) {
    let threads = p.threads.lock();
    // The signal's bit before the threads' masks, states and flags (see
    // recalc_sigpending_tsk).
    core::sync::atomic::fence(Ordering::SeqCst);
    let shared = p.shared_pending.load(Ordering::SeqCst);
    let leader = threads.iter().find(|t| t.tid() == to);
    let chosen = match leader.filter(|t| wants_signal(t, sig, shared)) {
        Some(t) => t.clone(),
        None => {
            let n = threads.len();
            let from = p.curr_target.load(Ordering::Relaxed);
            let start = threads.iter().position(|t| t.tid() == from).unwrap_or(0);
            let Some(t) = (0..n)
                .map(|i| &threads[(start + i) % n])
                .find(|t| wants_signal(t, sig, shared))
            else {
                // SIGKILL wants every thread, so none means no thread.
                return;
            };
            p.curr_target.store(t.tid(), Ordering::Relaxed);
            t.clone()
        }
    };
    let action = p.sighand.get(sig);
    // Linux's sig_fatal, less the core-dumping signals, which the picked
    // thread takes as any other.
    let fatal = sig == SIGKILL || (action.handler == SIG_DFL && default_action(sig) == DefaultAction::Term);
    let traced = leader.unwrap_or(&chosen).ptrace.is_traced();
    if fatal
        && chosen.real_blocked.load(Ordering::SeqCst) & sigmask(sig) == 0
        && (sig == SIGKILL || !traced)
        && !p.exiting.swap(true, Ordering::AcqRel)
    {
        p.group_exit.store(sig as i32, Ordering::Release);
        p.group_stop_count.store(0, Ordering::Release);
        for t in threads.iter() {
            t.jobctl
                .fetch_and(!(jobctl::STOP_PENDING | jobctl::STOP_CONSUME), Ordering::AcqRel);
            t.sig_pending.fetch_or(sigmask(SIGKILL), Ordering::AcqRel);
            signal_wake_up(t, true);
        }
        return;
    }
    if sig == SIGKILL {
        // A group exit or exec is under way already: SIGKILL still
        // reaches every thread.
        for t in threads.iter() {
            t.sig_pending.fetch_or(sigmask(SIGKILL), Ordering::AcqRel);
            signal_wake_up(t, true);
        }
        return;
    }
    signal_wake_up(&chosen, false);
}

/// Whether a thread of `p` is traced: a tracer hears even of ignored
/// signals (Linux's sig_ignored).
fn any_traced(p: &Process) -> bool {
    p.threads.lock().iter().any(|t| t.ptrace.is_traced())
}

/// Sends `info` to process `p` (kill): any thread not blocking it takes it.
/// The information may be lost (not the signal) when the queue is full.
pub fn send_to_process(p: &Arc<Process>, info: SigInfo) {
    let _ = send_sig_to_process(p, info);
}

/// `send_to_process` for senders that report a full queue: EAGAIN for a
/// real-time signal that could not be queued (sigqueue), as Linux.
pub fn send_sig_to_process(p: &Arc<Process>, info: SigInfo) -> Result<(), Errno> {
    send_sig_to_process_via(p, info, p.pid)
}

/// `send_sig_to_process` through thread `to` of `p`, which complete_signal
/// offers the signal first (kill naming a thread's ID, as Linux's
/// group_send_sig_info on the task that ID names).
fn send_sig_to_process_via(p: &Arc<Process>, info: SigInfo, to: u32) -> Result<(), Errno> {
    let sig = info.signo;
    if sig == 0 || p.is_zombie() {
        return Ok(());
    }
    prepare_signal(p, sig);
    // Blocked signals are never ignored at sending: the action may change
    // before they are unblocked (Linux's sig_ignored).
    let blocked = p
        .main_thread()
        .is_some_and(|t| t.sig_blocked.load(Ordering::Acquire) & sigmask(sig) != 0);
    if is_ignored(p, sig) && sig != SIGKILL && !blocked && !any_traced(p) {
        crate::trace::tracepoint::signal::ignored(&info, p);
        end_group_stop(p, sig);
        return Ok(());
    }
    let queued = crate::trace::tracepoint::signal::queued(&info, p, || {
        queue_signal(&p.shared_pending, &p.shared_sigqueue, info)
    });
    end_group_stop(p, sig);
    queued?;
    complete_signal(p, sig, to);
    Ok(())
}

/// Sends `info` to thread `t` (tkill, faults).
pub fn send_to_task(t: &Arc<Task>, info: SigInfo) {
    let _ = send_sig_to_task(t, info);
}

/// `send_to_task` for senders that report a full queue (tgkill,
/// rt_tgsigqueueinfo).
pub fn send_sig_to_task(t: &Arc<Task>, info: SigInfo) -> Result<(), Errno> {
    let sig = info.signo;
    let Some(p) = t.process.get().cloned() else {
        return Ok(());
    };
    if p.is_zombie() {
        return Ok(());
    }
    prepare_signal(&p, sig);
    let blocked = t.sig_blocked.load(Ordering::Acquire) & sigmask(sig) != 0;
    if is_ignored(&p, sig) && sig != SIGKILL && info.code <= 0 && !blocked && !t.ptrace.is_traced() {
        crate::trace::tracepoint::signal::ignored(&info, t);
        end_group_stop(&p, sig);
        return Ok(());
    }
    let queued = crate::trace::tracepoint::signal::queued(&info, t, || queue_signal(&t.sig_pending, &t.sigqueue, info));
    end_group_stop(&p, sig);
    queued?;
    if t.state() == TaskState::Interruptible || sig == SIGKILL || (sig == SIGCONT && t.state() == TaskState::Stopped) {
        sched::wake_up(t);
    } else {
        sched::kick_process(t);
    }
    Ok(())
}

/// Stop and continue signals cancel each other when sent (Linux's
/// `prepare_signal`): before `sig` is queued.
fn prepare_signal(p: &Arc<Process>, sig: u32) {
    let stop_mask = sigmask(SIGSTOP) | sigmask(SIGTSTP) | sigmask(SIGTTIN) | sigmask(SIGTTOU);
    if sig == SIGCONT || sig == SIGKILL {
        flush_process_signals(p, stop_mask);
    } else if stop_mask & sigmask(sig) != 0 {
        flush_process_signals(p, sigmask(SIGCONT));
    }
}

/// SIGCONT and SIGKILL end a group stop (the rest of Linux's
/// `prepare_signal`), once the signal is queued: Linux does both under
/// siglock, which a resumed thread needs to go on, so it always finds the
/// signal pending; here the stop ends only after the queueing, so a thread
/// on its way into the stop (awake still) cannot leave it without it.
fn end_group_stop(p: &Arc<Process>, sig: u32) {
    if sig != SIGCONT && sig != SIGKILL {
        return;
    }
    // Every thread leaves the group stop, stopped or still to stop
    // (under `threads`, as the stop's bookkeeping).
    let (was_stopped, was_stopping, woken) = {
        let threads = p.threads.lock();
        let mut woken = Vec::new();
        for t in threads.iter() {
            let old = t.jobctl.fetch_and(
                !(jobctl::STOP_PENDING | jobctl::STOP_CONSUME | jobctl::STOPPED),
                Ordering::AcqRel,
            );
            if old & jobctl::STOPPED != 0 {
                woken.push(t.clone());
            }
        }
        let stopping = p.group_stop_count.swap(0, Ordering::AcqRel) != 0;
        (p.stopped.swap(false, Ordering::AcqRel), stopping, woken)
    };
    if sig == SIGCONT {
        // Seized tracees hear of every SIGCONT, stopped or not; after
        // the group stop ended, so that a trap reporting it sees that.
        crate::ptrace::group_stop_changed(p);
        // A stop cut short is reported as completed, then continued
        // (SIGCHLD does not queue: the parent hears CLD_STOPPED).
        if was_stopped || was_stopping {
            *p.wait_event.lock() = Some(ChildEvent::Continued);
            let why = if was_stopped {
                code::CLD_CONTINUED
            } else {
                code::CLD_STOPPED
            };
            notify_parent_cldstop(p, why, if was_stopped { SIGCONT } else { 0 });
        }
    }
    for t in woken.iter().filter(|t| t.state() == TaskState::Stopped) {
        sched::wake_up(t);
    }
}

/// SIGCHLD to `parent` for `child`'s exit with wait status `status`.
pub fn send_child_signal(parent: &Arc<Process>, child: &Process, status: i32) {
    let (code, st) = process_core::cld_of_exit(status);
    // As Linux's do_notify_parent: an invalid signal is not sent.
    let signo = child.exit_signal();
    if signo == 0 || signo > NSIG as u32 {
        return;
    }
    send_to_process(
        parent,
        SigInfo {
            signo,
            code,
            pid: child.pid,
            status: st,
            ..Default::default()
        },
    );
}

fn notify_parent_cldstop(p: &Process, why: i32, sig: u32) {
    if let Some(pp) = crate::process::find_process(p.ppid.load(Ordering::Acquire)) {
        if pp.sighand.get(SIGCHLD).flags & sa::SA_NOCLDSTOP == 0 {
            send_to_process(
                &pp,
                SigInfo {
                    signo: SIGCHLD,
                    code: why,
                    pid: p.pid,
                    status: sig as i32,
                    ..Default::default()
                },
            );
        }
        pp.child_wait.wake_up_all();
    }
}

/// A synchronous fault signal for the current thread.
pub fn force_sig_fault(sig: u32, code: i32, addr: u64) {
    // Its locks (the handlers', the queue's, the wake-up's) unmask once.
    let _irqs = crate::sync::IrqsMasked::new();
    let me = sched::current();
    // A fault signal that is blocked or ignored cannot be left pending: the
    // instruction would fault again forever. Linux unblocks and resets it.
    if let Some(p) = me.process.get() {
        let a = p.sighand.get(sig);
        let blocked = me.sig_blocked.load(Ordering::Acquire) & sigmask(sig) != 0;
        if blocked || a.handler == SIG_IGN {
            p.sighand.set(sig, SigAction::default());
            set_current_blocked(&me, me.sig_blocked.load(Ordering::Acquire) & !sigmask(sig));
        }
    }
    send_to_task(
        &me,
        SigInfo {
            signo: sig,
            code,
            addr,
            ..Default::default()
        },
    );
}

/// Linux's `force_sigsegv`: a signal's frame could not be written. If that
/// signal was SIGSEGV itself, its handler cannot run either: SIGSEGV is
/// reset to the default action and unblocked, so the process dies of it
/// instead of retrying delivery forever.
pub(crate) fn force_sigsegv(sig: u32) {
    if sig == SIGSEGV {
        let me = sched::current();
        if let Some(p) = me.process.get() {
            p.sighand.set(SIGSEGV, SigAction::default());
        }
        set_current_blocked(&me, me.sig_blocked.load(Ordering::Acquire) & !sigmask(SIGSEGV));
    }
    force_sig_fault(SIGSEGV, code::SI_KERNEL, 0);
}

/// Linux's `dequeue_signal`: the next deliverable signal of `t` with its
/// information (the thread's own first, then the process's).
fn dequeue(t: &Task, p: &Process) -> Option<SigInfo> {
    loop {
        let blocked = t.sig_blocked.load(Ordering::Acquire);
        let own = t.sig_pending.load(Ordering::Acquire);
        let shared = p.shared_pending.load(Ordering::Acquire);
        let (source, sig) = signal_core::choose(own, shared, blocked)?;
        let (bits, q) = match source {
            Source::Thread => (&t.sig_pending, &t.sigqueue),
            Source::Process => (&p.shared_pending, &p.shared_sigqueue),
        };
        let mut list = q.list.lock();
        // Another thread of the process may have taken it meanwhile.
        if bits.load(Ordering::Acquire) & sigmask(sig) == 0 {
            continue;
        }
        // Linux's `collect_signal`: the first entry of `sig`; the bit stays
        // while more are queued. None queued (SIGKILL, or the information
        // was lost to the limit): an SI_USER siginfo with no sender.
        let info = match list.iter().position(|i| i.signo == sig) {
            Some(at) => {
                let q = list.remove(at);
                let info = *q;
                __sigqueue_free(q);
                info
            }
            None => SigInfo {
                signo: sig,
                code: code::SI_USER,
                ..Default::default()
            },
        };
        if !list.iter().any(|i| i.signo == sig) {
            bits.fetch_and(!sigmask(sig), Ordering::AcqRel);
        }
        // A burst's large buffer goes back to the heap; a small one stays,
        // so that a signal at a time (a single-stepped tracee's SIGTRAP, a
        // tracer's SIGCHLD) does not allocate and free it every time.
        if list.is_empty() && list.capacity() > SIGQUEUE_KEEP {
            *list = Vec::new();
        }
        return Some(info);
    }
}

/// `rt_sigtimedwait`'s core (Linux's `do_sigtimedwait`): takes the first
/// pending signal of `set` (SIGKILL and SIGSTOP aside), waiting with those
/// signals unblocked until one comes or `deadline` (ns since boot) passes.
/// EAGAIN at the deadline, EINTR when another signal ends the wait.
pub fn sigtimedwait(set: u64, deadline: Option<u64>) -> Result<SigInfo, Errno> {
    let me = sched::current();
    let p = current_process();
    let set = set & !UNBLOCKABLE;
    let blocked = me.sig_blocked.load(Ordering::Acquire);
    // Only the signals of `set` may be taken: dequeue as if every other
    // one were blocked.
    // While it waits, a signal of `set` may kill the group only if the
    // caller did not block it (Linux's real_blocked).
    me.real_blocked.store(blocked, Ordering::SeqCst);
    let take = |me: &Task| {
        me.sig_blocked.store(!set, Ordering::SeqCst);
        let info = dequeue(me, &p);
        me.sig_blocked.store(blocked & !set, Ordering::SeqCst);
        // Picked for a signal of `set` while it looked: ends the wait.
        recalc_sigpending(me, &p);
        info
    };
    let finish = |me: &Task, r| {
        me.real_blocked.store(0, Ordering::SeqCst);
        set_current_blocked(me, blocked);
        r
    };
    if let Some(info) = take(&me) {
        return finish(&me, Ok(info));
    }
    if deadline.is_some_and(|d| d <= crate::time::ktime_get_ns()) {
        return finish(&me, Err(Errno::EAGAIN));
    }
    let timeout = match deadline.map(crate::time::Timeout::arm).transpose() {
        Ok(t) => t,
        Err(e) => return finish(&me, Err(e)),
    };
    let timed_out = loop {
        me.set_state(TaskState::Interruptible);
        if me.signal_pending() {
            break false;
        }
        if deadline.is_some_and(|d| crate::time::ktime_get_ns() >= d) {
            break true;
        }
        sched::schedule();
    };
    me.set_state(TaskState::Running);
    drop(timeout);
    let r = match take(&me) {
        Some(info) => Ok(info),
        None if timed_out => Err(Errno::EAGAIN),
        None => Err(Errno::EINTR),
    };
    finish(&me, r)
}

/// Delivers pending signals before returning to user mode (Linux's
/// `do_signal`): default actions, or a handler frame on the user stack.
pub fn do_signal(regs: &mut PtRegs) {
    let me = sched::current();
    let Some(p) = me.process.get().cloned() else { return };
    // A system call interrupted with a restart code is rewound to its svc
    // before any signal is looked at, as arm64's do_signal: a tracer's
    // signal stop shows the call ready to run again, and a tracer that
    // moves the pc elsewhere cancels the restart.
    let mut restart = if regs.syscallno >= 0 { regs.regs[0] as i64 } else { 0 };
    if !signal_core::is_restart_code(restart) {
        restart = 0;
    }
    let continue_addr = regs.pc;
    let restart_addr = continue_addr.wrapping_sub(4);
    if restart != 0 {
        regs.regs[0] = regs.orig_x0;
        regs.pc = restart_addr;
    }
    loop {
        // A pending SIGKILL or group exit wins over everything queued, even
        // the synchronous signals `dequeue` prefers (Linux's get_signal
        // checks SIGNAL_GROUP_EXIT first): nothing may keep a killed task
        // in this loop.
        if fatal_pending(&me) || p.exiting.load(Ordering::Acquire) {
            crate::trace::tracepoint::signal::trace_signal_deliver_kill();
            // Nothing may stay referenced from this frame: it never returns.
            drop((me, p));
            crate::process::do_group_exit(SIGKILL as i32);
        }
        // A group stop another thread started (or one this thread
        // rejoins after its tracer detached).
        if group_stop_pending(&me) {
            if let Some(sig) = do_signal_stop(&me, &p, 0) {
                crate::ptrace::ptrace_group_stop(sig);
                // No tracer to stop for after all: stopped all the same.
                if group_stop_pending(&me) && me.ptrace.is_traced() && task_participate_group_stop(&me, &p) {
                    group_stop_done(&p, sig, true);
                }
            }
            continue;
        }
        // A trap a tracer asked for (PTRACE_INTERRUPT, a seized child).
        if me.ptrace.trap_pending() {
            crate::ptrace::do_jobctl_trap(regs);
            continue;
        }
        let Some(mut info) = dequeue(&me, &p) else { break };
        // A tracer sees every signal but SIGKILL first, and may cancel,
        // replace or edit it.
        if me.ptrace.is_traced() && info.signo != SIGKILL {
            match crate::ptrace::ptrace_signal(info, regs) {
                Some(i) => info = i,
                None => continue,
            }
        }
        let sig = info.signo;
        let action = p.sighand.get(sig);
        crate::trace::tracepoint::signal::trace_signal_deliver(&info, &action);
        if action.handler == SIG_IGN {
            continue;
        }
        if action.handler == SIG_DFL {
            match default_action(sig) {
                DefaultAction::Ignore | DefaultAction::Cont => continue,
                DefaultAction::Stop => {
                    // Job control does nothing in an orphaned process
                    // group (no shell is left to continue it); SIGSTOP
                    // always stops.
                    if sig != SIGSTOP && is_pgrp_orphaned(p.pgid.load(Ordering::Acquire)) {
                        continue;
                    }
                    if let Some(sig) = do_signal_stop(&me, &p, sig) {
                        crate::ptrace::ptrace_group_stop(sig);
                    }
                    continue;
                }
                DefaultAction::Term | DefaultAction::Core => {
                    drop((me, p));
                    crate::process::do_group_exit(sig as i32)
                }
            }
        }
        // A handler runs: the call it interrupted returns EINTR unless it
        // restarts anyway (still rewound) or the tracer moved the pc.
        if restart != 0
            && regs.pc == restart_addr
            && signal_core::restart_decision(restart, Some(action.flags)) == Restart::Eintr
        {
            regs.regs[0] = Errno::EINTR.as_neg() as u64;
            regs.pc = continue_addr;
        }
        restart = 0;
        crate::rseq::rseq_signal_deliver(sig, regs);
        if frame::setup_rt_frame(&me, &p, sig, &info, &action, regs).is_err() {
            force_sigsegv(sig);
            continue;
        }
        let mut block = action.mask;
        if action.flags & sa::SA_NODEFER == 0 {
            block |= sigmask(sig);
        }
        // Linux's signal_delivered: shared signals the handler's mask
        // blocks go to other threads; more this thread may take keep it
        // flagged, for the next pass of the return to user mode.
        set_current_blocked(&me, me.sig_blocked.load(Ordering::Acquire) | block);
        if action.flags & sa::SA_RESETHAND != 0 {
            p.sighand.set(sig, SigAction::default());
        }
        // The frame holds the mask to return to (sigsuspend's saved one).
        me.restore_sigmask.store(false, Ordering::Release);
        drop(me);
        crate::ptrace::signal_delivered_stepping(regs);
        return;
    }
    if me.restore_sigmask.swap(false, Ordering::AcqRel) {
        set_current_blocked(&me, me.saved_sigmask.load(Ordering::Acquire));
    } else {
        // Nothing left to take: no longer picked (Linux's recalc_sigpending
        // after dequeue_signal).
        recalc_sigpending(&me, &p);
    }
    // No handler ran: the rewound call runs again (through restart_syscall
    // for a restart block), and a step in progress steps the svc again
    // instead of trapping before it (Linux's user_rewind_single_step).
    if restart != 0 && regs.pc == restart_addr {
        // x0 holds the code negated, as every error.
        if restart == Errno::ERESTART_RESTARTBLOCK.as_neg() {
            regs.regs[8] = signal_core::NR_RESTART_SYSCALL;
        }
        crate::debug::hw_breakpoint::user_rewind_single_step(&me, regs);
    }
}

/// Linux's task_join_group_stop: a thread `me` creates in `p` while a
/// group stop is in progress takes part in it (and counts toward it), and
/// one created in a complete stop stops too; either way it stops before
/// it runs user code. Called under `p.threads`, where the stop's
/// bookkeeping changes.
pub fn task_join_group_stop(me: &Task, new: &Task, p: &Process) {
    let mut mask = group_stop_signal(me);
    if p.group_stop_count.load(Ordering::Acquire) != 0 {
        p.group_stop_count.fetch_add(1, Ordering::AcqRel);
        mask |= jobctl::STOP_CONSUME;
    } else if !p.stopped.load(Ordering::Acquire) {
        return;
    }
    new.jobctl.fetch_or(mask | jobctl::STOP_PENDING, Ordering::AcqRel);
}

/// Whether process group `pgid` is orphaned (Linux's
/// will_become_orphaned_pgrp, as is_current_pgrp_orphaned asks it): no
/// live member has a parent in another group of the same session, init's
/// children aside.
pub fn is_pgrp_orphaned(pgid: u32) -> bool {
    will_become_orphaned_pgrp(&crate::process::all_processes(), pgid, None)
}

/// Linux's will_become_orphaned_pgrp over `procs` (sorted by PID):
/// whether group `pgid` has no member but `ignored` (the one exiting)
/// whose parent is in another group of the same session.
fn will_become_orphaned_pgrp(procs: &[Arc<Process>], pgid: u32, ignored: Option<&Process>) -> bool {
    let find = |pid: u32| procs.binary_search_by_key(&pid, |q| q.pid).ok().map(|i| &procs[i]);
    !procs.iter().any(|q| {
        if q.pgid.load(Ordering::Acquire) != pgid || q.is_zombie() || ignored.is_some_and(|i| i.pid == q.pid) {
            return false;
        }
        let ppid = q.ppid.load(Ordering::Acquire);
        ppid != 1
            && find(ppid).is_some_and(|pp| {
                pp.pgid.load(Ordering::Acquire) != pgid
                    && pp.sid.load(Ordering::Acquire) == q.sid.load(Ordering::Acquire)
            })
    })
}

/// Linux's kill_orphaned_pgrp: `p`'s group loses its last link to a
/// parent outside it in the same session, as `parent` is that link and
/// goes away: `exiting` is `p` itself exiting (its parent stays), else
/// `parent` exits and `p` was just given to init. A group so orphaned
/// with a stopped member would stay stopped for ever (no shell is left to
/// continue it): every member gets SIGHUP, then SIGCONT.
pub fn kill_orphaned_pgrp(p: &Process, parent: &Process, exiting: bool) {
    let pgid = p.pgid.load(Ordering::Acquire);
    if parent.pgid.load(Ordering::Acquire) == pgid
        || parent.sid.load(Ordering::Acquire) != p.sid.load(Ordering::Acquire)
    {
        return;
    }
    let procs = crate::process::all_processes();
    let members = || {
        procs
            .iter()
            .filter(move |q| q.pgid.load(Ordering::Acquire) == pgid && !q.is_zombie())
    };
    // Linux's has_stopped_jobs: a complete group stop in a member.
    if !members().any(|q| q.stopped.load(Ordering::Acquire)) {
        return;
    }
    if !will_become_orphaned_pgrp(&procs, pgid, exiting.then_some(p)) {
        return;
    }
    for sig in [SIGHUP, SIGCONT] {
        for q in members() {
            send_to_process(
                q,
                SigInfo {
                    signo: sig,
                    code: code::SI_KERNEL,
                    ..Default::default()
                },
            );
        }
    }
}

/// Linux's do_signal_stop: `signr`, just dequeued, starts a group stop of
/// `p` unless one is in progress (0: this thread joins the one in
/// progress); every other thread not already stopped is asked to stop
/// (an interruptible sleep ends, a seized tracee is notified). An untraced
/// thread then stops until SIGCONT or SIGKILL, the last one to stop telling
/// the parent; a traced one returns the signal its tracer must hear of in
/// a group-stop trap, where it takes its part in the stop.
fn do_signal_stop(me: &Arc<Task>, p: &Arc<Process>, signr: u32) -> Option<u32> {
    let threads = p.threads.lock();
    if !group_stop_pending(me) {
        if signr == 0 || p.exiting.load(Ordering::Acquire) {
            return None;
        }
        let gstop = signr | jobctl::STOP_PENDING | jobctl::STOP_CONSUME;
        let mut count = 0;
        for t in threads.iter() {
            let mine = Arc::ptr_eq(t, me);
            // Linux's task_is_stopped: already in an untraced group stop.
            if !mine && t.jobctl.load(Ordering::Acquire) & jobctl::STOPPED != 0 {
                continue;
            }
            let _ = t.jobctl.fetch_update(Ordering::AcqRel, Ordering::Acquire, |j| {
                Some((j & !jobctl::STOP_SIGMASK) | gstop)
            });
            count += 1;
            if mine {
                continue;
            }
            if crate::ptrace::is_seized(t) {
                crate::ptrace::ptrace_trap_notify(t);
            } else if t.state() == TaskState::Interruptible {
                sched::wake_up(t);
            }
        }
        p.group_stop_count.store(count, Ordering::Release);
    }
    let sig = group_stop_signal(me);
    if me.ptrace.is_traced() {
        return Some(sig);
    }
    let done = participate_locked(me, p);
    me.jobctl.fetch_or(jobctl::STOPPED, Ordering::AcqRel);
    // In the stop before the parent hears of it: a tracer that attaches
    // once its wait saw the stop finds the task stopped.
    me.set_state(TaskState::Stopped);
    drop(threads);
    if done {
        group_stop_done(p, sig, true);
    }
    loop {
        me.set_state(TaskState::Stopped);
        if me.jobctl.load(Ordering::Acquire) & jobctl::STOPPED == 0 || fatal_pending(me) || me.ptrace.is_traced() {
            break;
        }
        sched::schedule();
    }
    me.set_state(TaskState::Running);
    me.jobctl.fetch_and(!jobctl::STOPPED, Ordering::AcqRel);
    // Attached while in the group stop: report it to the new tracer.
    if me.ptrace.is_traced() && group_stop_in_effect(p) && !fatal_pending(me) {
        return Some(sig);
    }
    None
}

/// Whether the caller may send `sig` to `target`, a thread of process `p`
/// whose credentials are `tcred` (Linux's `check_kill_permission` for a
/// signal from user space): its own process always; another only if
/// `kill_ok_by_cred` allows it, or for SIGCONT within the caller's
/// session. EPERM otherwise.
pub fn check_kill_permission(p: &Process, tcred: &crate::cred::Cred, sig: u32) -> Result<(), Errno> {
    let me = current_process();
    if core::ptr::eq(p, &*me) || process_core::cred::kill_ok_by_cred(&crate::cred::current_cred(), tcred) {
        return Ok(());
    }
    if sig == SIGCONT && p.sid.load(Ordering::Relaxed) == me.sid.load(Ordering::Relaxed) {
        return Ok(());
    }
    Err(Errno::EPERM)
}

/// `kill(pid, sig)` semantics for the pid forms.
pub fn kill(pid: i64, sig: u32) -> Result<(), Errno> {
    if sig as usize > NSIG {
        return Err(Errno::EINVAL);
    }
    let me = current_process();
    let info = SigInfo {
        signo: sig,
        code: code::SI_USER,
        pid: me.pid,
        ..Default::default()
    };
    // A positive pid may name any thread (as Linux's find_vpid): its
    // process gets the signal, offered to that thread first.
    let named = |p: u32| {
        crate::process::find_process(p).or_else(|| crate::process::find_task(p).and_then(|t| t.process.get().cloned()))
    };
    let targets: Vec<Arc<Process>> = match pid {
        p if p > 0 => named(p as u32)
            .filter(|p| !p.is_zombie() || sig == 0)
            .into_iter()
            .collect(),
        0 => {
            let g = me.pgid.load(Ordering::Relaxed);
            crate::process::all_processes()
                .into_iter()
                .filter(|p| p.pgid.load(Ordering::Relaxed) == g)
                .collect()
        }
        -1 => crate::process::all_processes()
            .into_iter()
            .filter(|p| p.pid != 1 && p.pid != me.pid)
            .collect(),
        p => {
            let g = (-p) as u32;
            crate::process::all_processes()
                .into_iter()
                .filter(|p| p.pgid.load(Ordering::Relaxed) == g)
                .collect()
        }
    };
    let targets: Vec<_> = targets.into_iter().filter(|p| !p.is_zombie()).collect();
    if targets.is_empty() {
        // A zombie still exists for kill(pid, 0) purposes, and is still
        // checked against.
        if pid > 0 {
            if let Some(z) = named(pid as u32) {
                return check_kill_permission(&z, &z.leader_cred(), sig);
            }
        }
        return Err(Errno::ESRCH);
    }
    // Linux's results: one process gives its own; a group succeeds if any
    // member took the signal, else fails as the last did; kill(-1) ignores
    // EPERM (__kill_pgrp_info, kill_something_info).
    let mut result = Err(Errno::EPERM);
    for t in &targets {
        if let Err(e) = check_kill_permission(t, &t.leader_cred(), sig) {
            if result.is_err() && pid != -1 {
                result = Err(e);
            }
            continue;
        }
        result = Ok(());
        // init only gets signals it has handlers for (SIGKILL cannot kill it).
        if t.pid == 1 && t.sighand.get(sig.max(1)).handler == SIG_DFL && sig != 0 && t.pid != me.pid {
            continue;
        }
        if sig != 0 {
            let to = if pid > 0 { pid as u32 } else { t.pid };
            let _ = send_sig_to_process_via(t, info, to);
        }
    }
    if pid == -1 {
        return Ok(());
    }
    result
}

/// Current thread's pending set (rt_sigpending).
pub fn pending_set(t: &Task) -> u64 {
    let shared = t.process.get().map_or(0, |p| p.shared_pending.load(Ordering::Acquire));
    (t.sig_pending.load(Ordering::Acquire) | shared) & t.sig_blocked.load(Ordering::Acquire)
}

/// Whether the current task has a fatal signal pending (SIGKILL).
pub fn fatal_pending(t: &Task) -> bool {
    t.sig_pending.load(Ordering::Acquire) & sigmask(SIGKILL) != 0
}

/// Unblockable signals, for masking.
pub const fn unblockable() -> u64 {
    UNBLOCKABLE
}

/// Checks that `sig` is a valid number for sigaction.
pub fn valid_signal(sig: u64) -> bool {
    (1..=NSIG as u64).contains(&sig)
}
