//! A task: one thread of execution with its own kernel stack and saved
//! context; user tasks also carry their FP/SIMD state, thread pointer,
//! address space and process.

use crate::mm::vm::Mm;
use crate::process::Process;
use crate::sync::IrqSpinLock;
use alloc::sync::Arc;
use arch::addr::{PhysAddr, VirtAddr};
use arch::context::{FpsimdState, TaskContext};
use arch::ptrace::{PtRegs, PT_REGS_SIZE};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Scheduling state (Linux's `__state` values, by meaning).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TaskState {
    /// Runnable or running.
    Running = 0,
    /// Sleeping; signals wake it.
    Interruptible = 1,
    /// Sleeping; only the awaited event wakes it.
    Uninterruptible = 2,
    /// Stopped by a signal or a tracer.
    Stopped = 3,
    /// Exited, waiting to be reaped by its parent.
    Zombie = 4,
    /// Gone: its stack is released once it is switched out.
    Dead = 5,
}

/// Size of a task's kernel stack.
pub const THREAD_SIZE: usize = 32 * 1024;

static NEXT_TID: AtomicU32 = AtomicU32::new(1);

/// A kernel stack: frames from the frame allocator, mapped in the kernel
/// stack window at the bottom of a slot of its own (Linux's VMAP_STACK), so
/// that the unmapped rest of the slot below the next stack is a guard: an
/// overflow faults, and the vectors switch to the overflow stack and report
/// it instead of letting it corrupt memory.
struct KernelStack {
    pa: PhysAddr,
    slot: usize,
    size: usize,
}

/// Kernel stacks allocated and not yet freed.
static LIVE_STACKS: AtomicU32 = AtomicU32::new(0);

/// How many task kernel stacks exist (for leak checks).
pub fn live_kernel_stacks() -> u32 {
    LIVE_STACKS.load(Ordering::Acquire)
}

/// Stack slots in the window: enough for Linux's default `pid_max` of
/// threads.
const STACK_SLOTS: usize = 32768;

/// Which slots of the kernel stack window are in use, one bit each; a
/// bitmap rather than a list so that freeing (when a dead task is switched
/// out) never allocates.
static SLOT_MAP: IrqSpinLock<[u64; STACK_SLOTS / 64]> = IrqSpinLock::new([0; STACK_SLOTS / 64]);

fn alloc_slot() -> Option<usize> {
    let mut map = SLOT_MAP.lock();
    let (i, word) = map.iter_mut().enumerate().find(|(_, w)| **w != u64::MAX)?;
    let bit = word.trailing_ones() as usize;
    *word |= 1 << bit;
    Some(i * 64 + bit)
}

fn free_slot(slot: usize) {
    if let Some(word) = SLOT_MAP.lock().get_mut(slot / 64) {
        *word &= !(1 << (slot % 64));
    }
}

fn slot_base(slot: usize) -> VirtAddr {
    // Slots are fewer than the window holds (checked below), so the sum
    // neither overflows nor leaves the kernel half.
    VirtAddr::new(arch::memory::KSTACK_BASE + slot * arch::memory::KSTACK_ALIGN).expect("a kernel address")
}
const _: () = assert!(STACK_SLOTS * arch::memory::KSTACK_ALIGN <= arch::memory::KSTACK_WINDOW);

impl KernelStack {
    fn new() -> Option<KernelStack> {
        Self::with_size(THREAD_SIZE)
    }

    fn with_size(size: usize) -> Option<KernelStack> {
        let slot = alloc_slot()?;
        let Some(pa) = crate::mm::frame::alloc_frames(size / crate::mm::PAGE_SIZE, 1) else {
            free_slot(slot);
            return None;
        };
        if arch::mmu::map_kernel_stack(slot_base(slot), pa, size).is_err() {
            crate::mm::frame::free_frames(pa, size / crate::mm::PAGE_SIZE);
            free_slot(slot);
            return None;
        };
        LIVE_STACKS.fetch_add(1, Ordering::AcqRel);
        Some(KernelStack { pa, slot, size })
    }

    fn top(&self) -> usize {
        slot_base(self.slot).as_usize() + self.size
    }
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        LIVE_STACKS.fetch_sub(1, Ordering::AcqRel);
        arch::mmu::unmap_kernel_stack(slot_base(self.slot), self.size);
        crate::mm::frame::free_frames(self.pa, self.size / crate::mm::PAGE_SIZE);
        free_slot(self.slot);
    }
}

/// A stack of `size` bytes (at most `arch::memory::KSTACK_MAX_SIZE`) for a
/// CPU being brought up, with a guard below like a task's; it is never
/// freed. Returns its top.
pub fn alloc_cpu_stack(size: usize) -> Option<usize> {
    let stack = KernelStack::with_size(size)?;
    let top = stack.top();
    // CPUs are never taken offline: the stack lives as long as the kernel,
    // and is not a task's (LIVE_STACKS counts those, for leak checks).
    core::mem::forget(stack);
    LIVE_STACKS.fetch_sub(1, Ordering::AcqRel);
    Some(top)
}

/// A schedulable thread.
pub struct Task {
    /// Thread ID (the PID of a single-threaded process). It changes once at
    /// most: a thread that execs takes its leader's ID (de_thread).
    tid: AtomicU32,
    /// Saved registers while switched out.
    pub ctx: TaskContext,
    kstack: Option<KernelStack>,
    state: AtomicU8,
    /// Running on, or leaving, some CPU.
    pub on_cpu: AtomicBool,
    /// Queued or running (see `sched::wake_up`).
    pub on_rq: AtomicBool,
    /// The CPU whose synchronous wake-up queued it and still owes the
    /// kick (`u32::MAX`: none): other CPUs leave it to that one.
    pub(crate) wake_sync_cpu: AtomicU32,
    /// The CPUs it may run on, one bit each (Linux's `cpus_mask`, set by
    /// sched_setaffinity, inherited by clone).
    pub cpus_allowed: AtomicU64,
    /// The CPU it last ran on (Linux's `task_cpu`), `u32::MAX` before it first runs.
    pub last_cpu: AtomicU32,
    idle: bool,
    /// Name shown by tracing and /proc (`comm`, 15 bytes and a NUL).
    pub comm: TaskComm,
    /// User FP/SIMD registers while switched out.
    pub fpsimd: IrqSpinLock<FpsimdState>,
    /// User thread pointer (TPIDR_EL0) while switched out.
    pub tls: AtomicU64,
    /// Address space (user tasks).
    pub mm: IrqSpinLock<Option<Arc<Mm>>>,
    /// The process this thread belongs to (user tasks).
    pub process: spin::Once<Arc<Process>>,
    /// Its credentials (Linux's `task->cred`): root's for kernel threads
    /// and init, copied by clone, replaced whole by `cred::commit_creds`.
    /// Read and written from task context only (system calls, /proc),
    /// never from an interrupt handler, and the kernel is not preempted in
    /// EL1, so a plain spin lock does: held for a pointer copy, it keeps
    /// the access checks of process_vm_readv and ptrace cheap.
    pub cred: spin::Mutex<Arc<crate::cred::Cred>>,
    /// Signals sent to this thread (`task->pending.signal`).
    pub sig_pending: AtomicU64,
    /// Their queued information (`task->pending.list`).
    pub sigqueue: crate::signal::SigQueue,
    /// The alternate signal stack (`sas_ss_sp`, `sas_ss_size`, `sas_ss_flags`).
    pub sas: IrqSpinLock<crate::signal::frame::AltStack>,
    /// Signals this thread blocks.
    pub sig_blocked: AtomicU64,
    /// Linux's TIF_SIGPENDING for the process's shared signals: this
    /// thread was picked to take them (`complete_signal`), or found them
    /// unblocked (`recalc_sigpending`).
    pub sigpending: AtomicBool,
    /// The mask in force before rt_sigtimedwait unblocked the signals it
    /// waits for (Linux's `real_blocked`), 0 outside such a wait.
    pub real_blocked: AtomicU64,
    /// `set_tid_address`/CLONE_CHILD_CLEARTID: cleared and futex-woken at exit.
    pub clear_child_tid: AtomicU64,
    /// The mask to restore after a temporary one (sigsuspend), when
    /// `restore_sigmask` is set (Linux's TIF_RESTORE_SIGMASK).
    pub saved_sigmask: AtomicU64,
    /// See `saved_sigmask`.
    pub restore_sigmask: AtomicBool,
    /// Group-stop state (Linux's `jobctl`; the bits are `signal::jobctl`'s).
    pub jobctl: AtomicU32,
    /// The ID of the `time::Timeout` armed for the wait in progress, 0 if
    /// none: the timer queue wakes the task only while it matches.
    pub timeout_id: AtomicU64,
    /// Set in a vfork child: its parent's wait, released at this task's
    /// exec or exit (Linux's `task->vfork_done`).
    pub vfork_done: IrqSpinLock<Option<Arc<crate::process::VforkDone>>>,
    /// Its hooked calls in flight (function_graph, kretprobes).
    pub ret_stack: crate::trace::rethook::RetStack,
    /// CPU time used (`utime`, `stime`).
    pub cputime: crate::cputime::TaskCputime,
    /// How `restart_syscall` resumes the call a signal interrupted.
    pub restart_block: IrqSpinLock<crate::time::RestartBlock>,
    /// ptrace: this task's tracer link, stop and reports, and the tasks it
    /// traces.
    pub ptrace: crate::ptrace::TaskPtrace,
    /// Single-step and hardware breakpoints (Linux's `thread.debug`).
    pub debug: crate::debug::hw_breakpoint::DebugInfo,
    /// Restartable sequences: the registered area and pending events.
    pub rseq: crate::rseq::TaskRseq,
    /// personality(2)'s execution domain and flags (`ADDR_NO_RANDOMIZE`
    /// ...), inherited by clone and kept by exec.
    pub personality: AtomicU32,
    /// Scheduling policy (`SCHED_NORMAL`, `SCHED_FIFO`, `SCHED_RR`, ...),
    /// set by sched_setscheduler, inherited by clone.
    pub policy: AtomicU32,
    /// Real-time priority, 1..=99 under SCHED_FIFO/SCHED_RR, else 0.
    pub rt_priority: AtomicU32,
    /// Once dead and switched out: the dead task parked before it on the
    /// same CPU, waiting with it for interrupts to be unmasked (a strong
    /// reference from `Arc::into_raw`, or null; Linux chains its
    /// `delayed_put_task_struct` callbacks through `task_struct::rcu`).
    pub(super) dead_next: AtomicPtr<Task>,
}

/// The cache of tasks (Linux's `task_struct_cachep`): every kernel thread
/// and user task is an object of it; the idle tasks, made before it is
/// needed, are on the heap.
pub static TASK_STRUCT_CACHEP: crate::mm::slab::KmemCache = crate::mm::slab::KmemCache::new(
    "task_struct",
    crate::mm::slab::arc_object_size::<Task>(),
    crate::mm::slab::arc_object_align::<Task>(),
    true,
)
.with_slab_order(crate::mm::slab::ARC_SLAB_ORDER);

impl Task {
    /// Whether its affinity lets it run on `cpu`.
    pub fn may_run_on(&self, cpu: usize) -> bool {
        cpu < 64 && self.cpus_allowed.load(core::sync::atomic::Ordering::Relaxed) & (1 << cpu) != 0
    }

    fn base(tid: u32, ctx: TaskContext, kstack: Option<KernelStack>, idle: bool, name: &str) -> Task {
        let mut comm = [0u8; 16];
        let n = name.len().min(15);
        comm[..n].copy_from_slice(&name.as_bytes()[..n]);
        Task {
            tid: AtomicU32::new(tid),
            ctx,
            kstack,
            state: AtomicU8::new(TaskState::Running as u8),
            on_cpu: AtomicBool::new(false),
            on_rq: AtomicBool::new(false),
            wake_sync_cpu: AtomicU32::new(u32::MAX),
            cpus_allowed: AtomicU64::new(u64::MAX),
            last_cpu: AtomicU32::new(u32::MAX),
            idle,
            comm: TaskComm::new(comm),
            fpsimd: IrqSpinLock::new(FpsimdState::default()),
            tls: AtomicU64::new(0),
            mm: IrqSpinLock::new(None),
            process: spin::Once::new(),
            cred: spin::Mutex::new(Arc::new(crate::cred::Cred::root())),
            sig_pending: AtomicU64::new(0),
            sigqueue: crate::signal::SigQueue::new(),
            sas: IrqSpinLock::new(crate::signal::frame::AltStack::DISABLED),
            sig_blocked: AtomicU64::new(0),
            sigpending: AtomicBool::new(false),
            real_blocked: AtomicU64::new(0),
            clear_child_tid: AtomicU64::new(0),
            saved_sigmask: AtomicU64::new(0),
            restore_sigmask: AtomicBool::new(false),
            jobctl: AtomicU32::new(0),
            timeout_id: AtomicU64::new(0),
            vfork_done: IrqSpinLock::new(None),
            ret_stack: crate::trace::rethook::RetStack::new(),
            cputime: crate::cputime::TaskCputime::new(),
            restart_block: IrqSpinLock::new(crate::time::RestartBlock::None),
            ptrace: crate::ptrace::TaskPtrace::new(),
            debug: crate::debug::hw_breakpoint::DebugInfo::new(),
            rseq: Default::default(),
            personality: AtomicU32::new(0),
            policy: AtomicU32::new(0),
            rt_priority: AtomicU32::new(0),
            dead_next: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// The idle task of `cpu`: the code already running there.
    pub fn new_idle(cpu: usize) -> Arc<Task> {
        let name = alloc::format!("swapper/{cpu}");
        Arc::new(Task::base(0, TaskContext::default(), None, true, &name))
    }

    /// A kernel thread running `f(arg)`; not yet runnable (`sched::wake_up`).
    pub fn new_kthread(f: extern "C" fn(usize), arg: usize, name: &str) -> Option<Arc<Task>> {
        let stack = KernelStack::new()?;
        let ctx = TaskContext::new_task(stack.top(), f as *const () as usize, arg);
        let tid = NEXT_TID.fetch_add(1, Ordering::Relaxed);
        let t = crate::mm::slab::arc_new_in(&TASK_STRUCT_CACHEP, Task::base(tid, ctx, Some(stack), false, name));
        t.set_state(TaskState::Interruptible);
        Some(t)
    }

    /// A user task that starts by returning to EL0 with `regs`; not yet
    /// runnable.
    pub fn new_user(tid: u32, regs: &PtRegs, name: &[u8]) -> Option<Arc<Task>> {
        let stack = KernelStack::new()?;
        let frame = stack.top() - PT_REGS_SIZE;
        crate::process::regs::write_frame(frame, regs);
        let ctx = TaskContext::new_task(frame, 0, 0);
        let t = crate::mm::slab::arc_new_in(&TASK_STRUCT_CACHEP, Task::base(tid, ctx, Some(stack), false, ""));
        t.set_comm(name);
        t.set_state(TaskState::Interruptible);
        Some(t)
    }

    /// Thread ID.
    /// Relaxed: a value on its own (Linux's plain `task->pid`), read by
    /// every event.
    pub fn tid(&self) -> u32 {
        self.tid.load(Ordering::Relaxed)
    }

    /// Gives this thread its leader's ID when it survives an exec as the
    /// only thread (Linux's de_thread exchanges the two pids).
    pub fn set_tid(&self, tid: u32) {
        self.tid.store(tid, Ordering::Release);
        super::current_tid_changed(self);
    }

    /// A fresh thread ID.
    pub fn alloc_tid() -> u32 {
        NEXT_TID.fetch_add(1, Ordering::Relaxed)
    }

    /// The id given out last (`/proc/loadavg`'s last field).
    pub fn last_tid() -> u32 {
        NEXT_TID.load(Ordering::Relaxed) - 1
    }

    /// The saved user registers at the top of this task's kernel stack.
    pub fn user_regs_addr(&self) -> Option<usize> {
        self.kstack.as_ref().map(|s| s.top() - PT_REGS_SIZE)
    }

    /// Bounds of the kernel stack.
    pub fn stack_bounds(&self) -> Option<(usize, usize)> {
        self.kstack.as_ref().map(|s| (s.top() - THREAD_SIZE, s.top()))
    }

    /// Current state.
    pub fn state(&self) -> TaskState {
        match self.state.load(Ordering::Acquire) {
            0 => TaskState::Running,
            1 => TaskState::Interruptible,
            2 => TaskState::Uninterruptible,
            3 => TaskState::Stopped,
            4 => TaskState::Zombie,
            _ => TaskState::Dead,
        }
    }

    /// Sets the state.
    pub fn set_state(&self, s: TaskState) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// Whether this is a CPU's idle task.
    pub fn is_idle(&self) -> bool {
        self.idle
    }

    /// Whether this is a user task.
    pub fn is_user(&self) -> bool {
        self.process.get().is_some()
    }

    /// `comm` as text.
    pub fn comm_string(&self) -> alloc::string::String {
        let c = self.comm.get();
        let n = c.iter().position(|&b| b == 0).unwrap_or(16);
        alloc::string::String::from_utf8_lossy(&c[..n]).into_owned()
    }

    /// Sets `comm` (truncated to 15 bytes).
    pub fn set_comm(&self, name: &[u8]) {
        let mut c = [0u8; 16];
        let n = name.len().min(15);
        c[..n].copy_from_slice(&name[..n]);
        self.comm.set(c);
    }

    /// Whether an unblocked signal is pending for this task.
    pub fn signal_pending(&self) -> bool {
        crate::signal::has_pending(self)
    }

    /// Saves user state when leaving the CPU.
    pub(super) fn switch_out(&self) {
        if self.is_user() {
            arch::context::fpsimd_save(&mut self.fpsimd.lock());
            self.tls.store(arch::context::get_tls(), Ordering::Relaxed);
        }
    }

    /// Restores user state when taking the CPU.
    pub(super) fn switch_in(&self) {
        if self.is_user() {
            arch::context::fpsimd_load(&self.fpsimd.lock());
            arch::context::set_tls(self.tls.load(Ordering::Relaxed));
            if let Some(mm) = self.mm.lock().as_ref() {
                mm.activate();
            }
        }
        crate::debug::hw_breakpoint::thread_switch(self);
    }
}

/// Drops the last scheduler reference to a dead task, normally the last
/// of all: with it go the `task_struct` and the stack (Linux's
/// `free_task`, where its `kmem_cache_free` is traced from); a reader
/// still holding one frees them when it lets go.
#[allow(unsafe_code)] // exported under Linux's name, for probes and call sites
#[no_mangle]
#[inline(never)]
pub fn free_task(t: Arc<Task>) {
    drop(t);
}

/// Tasks whose memory was freed with interrupts masked: by a reference
/// dropped in interrupt context or under an interrupt-masking lock. Linux
/// frees a `task_struct` from an RCU callback, never there; this stays 0
/// unless a path forgets to leave its reference to `free_task`.
pub static TASKS_FREED_IRQS_OFF: AtomicU64 = AtomicU64::new(0);

impl Drop for Task {
    fn drop(&mut self) {
        if !arch::cpu::irqs_disabled() {
            return;
        }
        // Reported once, where it happened, at warning level (off the
        // console while commands run); the count tells the rest.
        if TASKS_FREED_IRQS_OFF.fetch_add(1, Ordering::Relaxed) == 0 {
            let mut trace = alloc::string::String::new();
            crate::stacktrace::dump_backtrace(&mut trace, 0, arch::cpu::frame_pointer());
            crate::pr_warn!(
                "task {} freed with interrupts masked:\n{}",
                self.tid(),
                trace.trim_end()
            );
        }
    }
}

/// End of a kernel thread whose function returned.
#[allow(unsafe_code)] // exported for the entry code
#[no_mangle]
pub extern "C" fn kthread_exit() -> ! {
    // No reference may live in this frame: it is never returned to.
    super::current().set_state(TaskState::Dead);
    super::schedule();
    unreachable!("a dead task was scheduled");
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use arch::memory::{KSTACK_ALIGN, KSTACK_MAX_SIZE, PAGE_SIZE};
    use ktest_macros::kernel_test;

    /// The kernel mapping of the stack address `va`, if any.
    fn translate(va: usize) -> Option<(PhysAddr, arch::mmu::Prot)> {
        arch::mmu::translate(arch::addr::VirtAddr::new(va)?)
    }

    extern "C" fn never_runs(_: usize) {}

    #[kernel_test]
    fn kernel_stacks_are_mapped_above_an_unmapped_guard_and_unmapped_when_freed() {
        let t = Task::new_kthread(never_runs, 0, "guard-test").unwrap();
        let (lo, hi) = t.stack_bounds().unwrap();
        assert_eq!(hi - lo, THREAD_SIZE);
        assert_eq!(lo % KSTACK_ALIGN, 0, "the vectors' overflow test needs aligned stacks");
        let mut page = lo;
        while page < hi {
            assert!(
                translate(page).is_some_and(|(_, p)| p.is_writable() && !p.is_exec()),
                "{page:#x}"
            );
            page += PAGE_SIZE;
        }
        // The slot below may hold a stack of up to KSTACK_MAX_SIZE (a CPU's).
        let mut below = lo - PAGE_SIZE;
        while below >= lo - (KSTACK_ALIGN - KSTACK_MAX_SIZE) {
            assert!(translate(below).is_none(), "guard page {below:#x} is mapped");
            below -= PAGE_SIZE;
        }
        drop(t);
        assert!(translate(lo).is_none(), "a freed stack stays mapped");
    }
}

/// A task's `comm` (`TASK_COMM_LEN` bytes), stored inline and read
/// without a lock, as Linux's tracing copies `tsk->comm` with a plain
/// memcpy: two atomic words, so a read racing a rename may see one word
/// of each name (as on Linux, a torn name, never undefined behaviour),
/// and a reader in probe context never waits for a writer.
pub struct TaskComm([AtomicU64; 2]);

impl TaskComm {
    /// A name of 16 bytes (NUL-padded).
    pub const fn new(c: [u8; 16]) -> TaskComm {
        let (lo, hi) = Self::words(c);
        TaskComm([AtomicU64::new(lo), AtomicU64::new(hi)])
    }

    const fn words(c: [u8; 16]) -> (u64, u64) {
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        let mut i = 0;
        while i < 8 {
            lo[i] = c[i];
            hi[i] = c[i + 8];
            i += 1;
        }
        (u64::from_le_bytes(lo), u64::from_le_bytes(hi))
    }

    /// The name's 16 bytes.
    #[inline]
    pub fn get(&self) -> [u8; 16] {
        let lo = self.0[0].load(Ordering::Relaxed).to_le_bytes();
        let hi = self.0[1].load(Ordering::Relaxed).to_le_bytes();
        let mut c = [0u8; 16];
        c[..8].copy_from_slice(&lo);
        c[8..].copy_from_slice(&hi);
        c
    }

    /// Replaces the name (writers are the task itself, at exec and
    /// `PR_SET_NAME`, and its creator).
    pub fn set(&self, c: [u8; 16]) {
        let (lo, hi) = Self::words(c);
        self.0[0].store(lo, Ordering::Relaxed);
        self.0[1].store(hi, Ordering::Relaxed);
    }
}
