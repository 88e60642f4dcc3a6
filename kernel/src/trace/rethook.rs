//! The per-task return stack (Linux's fgraph shadow stack, `ret_stack`,
//! and `rethook`): one stack of hooked calls per task, shared by every user
//! that replaces a function's return address (Linux's fgraph and
//! `rethook` in one): the function_graph tracer, fprobe exit handlers and
//! kretprobes, all returning through `return_to_handler`.
//!
//! A user hooks a call at its entry by pushing a [`RetFrame`] holding the
//! real return address and putting its trampoline in `lr`; the trampoline
//! pops the frame when the function returns and jumps to the real address.
//! Frames nest as calls do, so the top frame always belongs to the
//! returning call. The stack is allocated with its task and never grows:
//! the hit path moves values in and out of it, and a push on a full stack
//! fails (the user counts it in its `nmissed`) instead of allocating. A
//! task that dies with hooked calls never returns through them: its stack
//! is flushed when it is reaped (kretprobe instances go back to their
//! pools), so a new task starts empty whatever memory it reuses.
//!
//! Frames stay valid after their user is gone: turning function_graph off
//! or unregistering a kretprobe while a CPU is inside a hooked call leaves
//! its frame in place, and the call still returns to its caller.
//!
//! Only the owning task pushes and pops (with interrupts masked, so an
//! interrupt's hooked calls nest above the interrupted ones); the lock
//! covers the unwinder and the reaper.

use crate::kprobes::kretprobe::PooledInstance;
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::vec::Vec;
use arch::ftrace::FtraceRetRegs;
use core::sync::atomic::{AtomicUsize, Ordering};

/// Most hooked calls one task may have in flight (Linux's fgraph stack
/// holds a similar number of frames); deeper calls are not hooked.
pub const RETHOOK_DEPTH: usize = 64;

/// A handler run at the return of a call hooked through
/// `return_to_handler` (for fprobe exit handlers): `(frame, regs)`.
pub type RethookHandler = fn(&mut RetFrame, &mut FtraceRetRegs);

/// Who hooked a call, and what it keeps until the call returns.
pub enum RethookOwner {
    /// The function_graph tracer (returns through `return_to_handler`).
    Graph(GraphFrame),
    /// A kretprobe and its instance.
    Kretprobe(Box<PooledInstance>),
    /// An fprobe with an exit handler and its instance.
    Fprobe(Box<super::fprobe::FprobeInstance>),
    /// Another fgraph user (the function profiler): its handler and a
    /// word of data. Its calls count in the shared graph depth as
    /// function_graph's do: in Linux both are `fgraph_ops` on one shadow
    /// stack, while kretprobes and fprobes are `rethook` users outside it.
    Handler(RethookHandler, usize),
}

impl RethookOwner {
    /// Whether the frame is an fgraph user's (function_graph's or a
    /// [`RethookOwner::Handler`]'s): one depth per call hooked by any of
    /// them (Linux's `curr_ret_depth`).
    fn is_fgraph(&self) -> bool {
        matches!(self, RethookOwner::Graph(_) | RethookOwner::Handler(..))
    }
}

/// Most function_graph users at once (Linux's `FGRAPH_ARRAY_SIZE`): the
/// top level and instances each running function_graph.
pub const FGRAPH_ARRAY_SIZE: usize = 16;

/// What function_graph keeps for a call.
#[derive(Clone, Copy, Debug, Default)]
pub struct GraphFrame {
    /// The trace array whose function_graph hooked the call (`None`: the
    /// top level's, as in-kernel tests push them).
    pub array: Option<&'static super::ftrace_function::FtraceArray>,
    /// Its graph user slot (below [`FGRAPH_ARRAY_SIZE`]): the
    /// `set_graph_*` regions are counted per user (the depth is shared).
    pub user: u8,
    /// Its depth (Linux's `ftrace_graph_ent.depth`).
    pub depth: i32,
    /// Made by `set_graph_notrace`: nothing is recorded below it.
    pub notrace: bool,
    /// The call of a `set_graph_function` function that turned graph
    /// recording on for this task.
    pub graph_start: bool,
    /// Its entry was not recorded (`tracing_thresh`: only returns are).
    pub thresh: bool,
}

/// One hooked call.
pub struct RetFrame {
    /// Where the function really returns.
    pub ret: usize,
    /// sp at the call (the same at the return): identifies the frame.
    pub sp: usize,
    /// The hooked function (its ftrace `ip`, or its entry for kretprobes).
    pub func: usize,
    /// When it was called (trace clock), for durations.
    pub calltime: u64,
    /// Its user.
    pub owner: RethookOwner,
}

/// Whether `addr` is the return trampoline, `return_to_handler`.
pub fn is_trampoline(addr: usize) -> bool {
    addr == arch::ftrace::return_to_handler_addr()
}

struct RetStackInner {
    frames: Vec<RetFrame>,
    /// Calls with at least one fgraph frame on the stack (function_graph's
    /// or the profiler's), whatever their users (Linux's
    /// `curr_ret_depth + 1`: one depth per hooked call, shared by every
    /// fgraph user, so that `max_graph_depth` and the indentation count
    /// the calls any user hooked).
    graph_calls: i32,
    /// Graph frames made by `set_graph_notrace` on the stack, per user.
    graph_notrace: [u32; FGRAPH_ARRAY_SIZE],
    /// Graph frames of `set_graph_function` functions on the stack, per
    /// user.
    graph_started: [u32; FGRAPH_ARRAY_SIZE],
    /// When the task was last switched out with `options/sleep-time` off
    /// (Linux's `ftrace_timestamp`), 0 if not.
    sched_out_at: u64,
}

impl RetStackInner {
    /// The depth of the call of `func` at `sp` if another fgraph user
    /// already pushed a frame for it: the frames of one call are pushed
    /// together (the users' hooks, and kretprobes' or fprobes' between
    /// them, run one after the other at its entry), so only the top frames
    /// with its sp can be its; of those, an fgraph frame of another
    /// function is a call that tail-called this one. That call is then the
    /// most recent one counted, whose depth is `graph_calls - 1`.
    fn graph_depth_of_call(&self, sp: usize, func: usize) -> Option<i32> {
        self.frames
            .iter()
            .rev()
            .take_while(|f| f.sp == sp)
            .any(|f| f.func == func && f.owner.is_fgraph())
            .then(|| self.graph_calls - 1)
    }
}

/// A task's return stack.
pub struct RetStack {
    inner: IrqSpinLock<RetStackInner>,
    /// The number of frames, kept beside the lock so that a hook can see
    /// the stack is full without taking it (only the owning task pushes,
    /// so its own reading is exact).
    depth: AtomicUsize,
}

impl Default for RetStack {
    fn default() -> Self {
        Self::new()
    }
}

impl RetStack {
    /// An empty stack with room for [`RETHOOK_DEPTH`] frames.
    pub fn new() -> Self {
        RetStack {
            inner: IrqSpinLock::new(RetStackInner {
                frames: Vec::with_capacity(RETHOOK_DEPTH),
                graph_calls: 0,
                graph_notrace: [0; FGRAPH_ARRAY_SIZE],
                graph_started: [0; FGRAPH_ARRAY_SIZE],
                sched_out_at: 0,
            }),
            depth: AtomicUsize::new(0),
        }
    }

    /// Pushes a frame; gives it back if the stack is full. Never
    /// allocates.
    pub fn push(&self, frame: RetFrame) -> Result<(), RetFrame> {
        let mut st = self.inner.lock();
        self.push_locked(&mut st, frame)
    }

    /// [`Self::push`] with the lock held.
    fn push_locked(&self, st: &mut RetStackInner, frame: RetFrame) -> Result<(), RetFrame> {
        if st.frames.len() >= RETHOOK_DEPTH || st.frames.len() == st.frames.capacity() {
            return Err(frame);
        }
        if frame.owner.is_fgraph() && st.graph_depth_of_call(frame.sp, frame.func).is_none() {
            st.graph_calls += 1;
        }
        if let RethookOwner::Graph(g) = &frame.owner {
            let u = usize::from(g.user) % FGRAPH_ARRAY_SIZE;
            st.graph_notrace[u] += u32::from(g.notrace);
            st.graph_started[u] += u32::from(g.graph_start);
        }
        st.frames.push(frame);
        self.depth.store(st.frames.len(), Ordering::Relaxed);
        Ok(())
    }

    /// function_graph's entry for graph user `user` into the call of
    /// `func` (its ftrace ip) at `sp`, in one hold of the lock: `decide`
    /// sees the call's depth (that of another user's frame of the same
    /// call, else one more than the calls hooked so far) and the user's
    /// notrace and started states, and returns the frame to push with what
    /// its caller keeps, or `None` to push nothing. `None` if it declined,
    /// `Some(Err(()))` if the stack was full.
    pub fn push_graph<R>(
        &self,
        user: u8,
        sp: usize,
        func: usize,
        decide: impl FnOnce(i32, bool, bool) -> Option<(RetFrame, R)>,
    ) -> Option<Result<R, ()>> {
        let u = usize::from(user) % FGRAPH_ARRAY_SIZE;
        let mut st = self.inner.lock();
        let depth = st.graph_depth_of_call(sp, func).unwrap_or(st.graph_calls);
        let (frame, r) = decide(depth, st.graph_notrace[u] > 0, st.graph_started[u] > 0)?;
        Some(self.push_locked(&mut st, frame).map(|()| r).map_err(drop))
    }

    /// Pops the most recent frame.
    pub fn pop(&self) -> Option<RetFrame> {
        let mut st = self.inner.lock();
        let frame = st.frames.pop()?;
        self.depth.store(st.frames.len(), Ordering::Relaxed);
        if frame.owner.is_fgraph() && st.graph_depth_of_call(frame.sp, frame.func).is_none() {
            st.graph_calls -= 1;
        }
        if let RethookOwner::Graph(g) = &frame.owner {
            let u = usize::from(g.user) % FGRAPH_ARRAY_SIZE;
            st.graph_notrace[u] -= u32::from(g.notrace);
            st.graph_started[u] -= u32::from(g.graph_start);
        }
        Some(frame)
    }

    /// function_graph's view of the task for graph user `user` (0: the
    /// top level): (the depth of the next hooked call, whether a
    /// `set_graph_notrace` call of the user is in flight, whether a
    /// `set_graph_function` call is).
    pub fn graph_state_of(&self, user: u8) -> (i32, bool, bool) {
        let u = usize::from(user) % FGRAPH_ARRAY_SIZE;
        let st = self.inner.lock();
        (st.graph_calls, st.graph_notrace[u] > 0, st.graph_started[u] > 0)
    }

    /// [`Self::graph_state_of`] the top level's function_graph.
    pub fn graph_state(&self) -> (i32, bool, bool) {
        self.graph_state_of(0)
    }

    /// Adds `v` to the word of `handler`'s frame of the caller of the
    /// returning call of `func` at `sp` (the function profiler's time spent
    /// in callees, Linux's `subtime`). The caller is the previous call any
    /// fgraph user hooked, as Linux's `ftrace_graph_get_ret_stack(current,
    /// 1)`: if `handler` did not hook that one, `v` is dropped, as Linux
    /// adds it to a frame no profiler reads.
    pub fn add_to_caller_handler_data(&self, handler: RethookHandler, sp: usize, func: usize, v: usize) {
        let mut st = self.inner.lock();
        // The fgraph frames below the returning call's (a kretprobe's or an
        // fprobe's may sit between them): the first is the caller's, and
        // so are those right below it with its sp and function.
        let mut below = st
            .frames
            .iter_mut()
            .rev()
            .filter(|f| f.owner.is_fgraph())
            .skip_while(|f| f.sp == sp && f.func == func);
        let Some(first) = below.next() else { return };
        let (csp, cfunc) = (first.sp, first.func);
        let call = core::iter::once(first).chain(below.take_while(|f| f.sp == csp && f.func == cfunc));
        for f in call {
            if let RethookOwner::Handler(h, data) = &mut f.owner {
                if *h as usize == handler as usize {
                    *data = data.wrapping_add(v);
                    return;
                }
            }
        }
    }

    /// The task is switched out at `now` while sleep time is not to be
    /// counted (Linux's `ftrace_graph_probe_sched_switch` for `prev`).
    pub fn sched_out(&self, now: u64) {
        self.inner.lock().sched_out_at = now;
    }

    /// The task is switched in at `now`: if it was switched out while
    /// sleep time was not to be counted, its calls in flight are moved
    /// later by the time it was out, so their durations leave it out.
    pub fn sched_in(&self, now: u64) {
        let mut st = self.inner.lock();
        let out = core::mem::take(&mut st.sched_out_at);
        if out == 0 {
            return;
        }
        let slept = now.saturating_sub(out);
        for f in st.frames.iter_mut() {
            f.calltime = f.calltime.saturating_add(slept);
        }
    }

    /// How many calls are hooked.
    pub fn len(&self) -> usize {
        self.inner.lock().frames.len()
    }

    /// Whether a push would be refused.
    pub fn is_full(&self) -> bool {
        // The stack's capacity is at least RETHOOK_DEPTH (`new`).
        self.depth.load(Ordering::Relaxed) >= RETHOOK_DEPTH
    }

    /// Whether no call is hooked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The real return address of frame `idx` from the top (0 = most
    /// recent). For unwinders, which may run in an oops taken with the lock
    /// held: then `None`, never a deadlock.
    pub fn peek(&self, idx: usize) -> Option<usize> {
        let st = self.inner.try_lock()?;
        let n = st.frames.len();
        st.frames.get(n.checked_sub(idx + 1)?).map(|f| f.ret)
    }

    /// The real return address of the `n`-th (0 = most recent) kretprobe
    /// frame (`None` also when the lock is held, as for [`Self::peek`]).
    pub fn kretprobe_return_address(&self, n: usize) -> Option<usize> {
        let st = self.inner.try_lock()?;
        st.frames
            .iter()
            .rev()
            .filter(|f| matches!(f.owner, RethookOwner::Kretprobe(_)))
            .nth(n)
            .map(|f| f.ret)
    }

    /// Drops every frame: the task is dead and its calls will never return
    /// (Linux's `kprobe_flush_task`/`rethook_flush_task`). Kretprobe
    /// instances go back to their pools.
    pub fn flush(&self) {
        while let Some(frame) = self.pop() {
            match frame.owner {
                RethookOwner::Kretprobe(ri) => crate::kprobes::kretprobe::recycle(ri),
                RethookOwner::Fprobe(ri) => super::fprobe::recycle(ri),
                _ => {}
            }
        }
    }
}

impl Drop for RetStack {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The real return address behind `ret` for an unwinder walking the
/// current task's stack from its most recent frame (Linux's
/// `ftrace_graph_ret_addr` and `kretprobe_find_ret_addr` in one): `ret`
/// itself unless it is a trampoline. `idx` carries the position between
/// calls of one walk; start it at 0.
///
/// Hooked return addresses are met in the order their frames were pushed,
/// most recent first; a frame whose real return is itself a trampoline
/// (a tail call out of a hooked function, or two users on one call) shares
/// its caller's slot on the stack and is skipped.
pub fn find_ret_addr(idx: &mut usize, ret: usize) -> usize {
    if !is_trampoline(ret) {
        return ret;
    }
    let Some(task) = crate::sched::try_current() else {
        return ret;
    };
    while let Some(real) = task.ret_stack.peek(*idx) {
        *idx += 1;
        if !is_trampoline(real) {
            return real;
        }
    }
    ret
}

/// Called by `return_to_handler` (interrupts masked) when a call hooked
/// through it returns: pops the task's top frame, runs its user's return
/// handler and gives the real return address. A frame that does not match
/// the returning call means the stack is corrupt and the real address
/// unknown: that is fatal, as in Linux. Notrace by its mark: its
/// unmangled name is outside this module's path.
#[allow(unsafe_code)] // exported for return_to_handler
#[no_mangle]
#[ktest_macros::notrace]
extern "C" fn ftrace_return_to_handler(regs: &mut FtraceRetRegs) -> usize {
    let frame = crate::sched::with_current(|t| t.ret_stack.pop()).flatten();
    let Some(mut frame) = frame else {
        panic!("return_to_handler: no hooked call in flight");
    };
    if frame.sp != regs.sp as usize {
        panic!(
            "return_to_handler: frame of {:#x} (sp {:#x}) does not match the return (sp {:#x})",
            frame.func, frame.sp, regs.sp
        );
    }
    let ret = frame.ret;
    match frame.owner {
        RethookOwner::Graph(g) => super::function_graph::graph_return(&frame, g, regs),
        RethookOwner::Handler(h, _) => {
            super::ftrace::ftrace_test_recursion(|| h(&mut frame, regs));
        }
        RethookOwner::Fprobe(ri) => super::fprobe::fprobe_exit_handler(ri, ret, regs),
        RethookOwner::Kretprobe(ri) => crate::kprobes::kretprobe::kretprobe_rethook_handler(ri, regs),
    }
    ret
}
