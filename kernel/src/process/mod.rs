//! Processes (thread groups): creation by `clone`, exit, wait, and the
//! tables that find them by ID. Linux's `kernel/fork.c` and `exit.c`.
//!
//! Lock order (outer first); no path takes them the other way round:
//! 1. a process's `threads` (also serialises a group exit's start against
//!    `clone(CLONE_THREAD)` joining the group, as Linux's siglock does);
//! 2. a parent's `children`;
//! 3. a child's `exit_status`, then its `wait_event`;
//! 4. the `PROCESSES` and `TASKS` tables.

pub mod regs;
pub mod wait;

use crate::errno::Errno;
use crate::mm::vm::Mm;
use crate::sched::wait::WaitQueue;
use crate::sched::{self, Task, TaskState};
use crate::signal::{self, SigHand};
use crate::sync::IrqSpinLock;
use crate::uaccess::UserPtr;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ptrace::PtRegs;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// What `wait` reports about a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildEvent {
    /// Exited (wait status encoded as Linux does).
    Exited(i32),
    /// Stopped by this signal, not yet reported.
    Stopped(u32),
    /// Continued, not yet reported.
    Continued,
    /// In a ptrace stop with this code (the signal, with a
    /// `PTRACE_EVENT_*` in bits 8..16 or 0x80 for a system call stop).
    Traced(u32),
}

/// A process: threads sharing an address space, files and signal handlers.
pub struct Process {
    /// Process ID (the thread ID of its first thread).
    pub pid: u32,
    /// Parent's PID (re-parented to 1 when the parent exits).
    pub ppid: AtomicU32,
    /// Process group.
    pub pgid: AtomicU32,
    /// Session.
    pub sid: AtomicU32,
    /// Threads still alive.
    pub threads: IrqSpinLock<Vec<Arc<Task>>>,
    /// Children not yet reaped.
    pub children: IrqSpinLock<Vec<Arc<Process>>>,
    /// Exit status once a zombie (Linux wait encoding).
    pub exit_status: IrqSpinLock<Option<i32>>,
    /// Set once `exit_status` is, never cleared: [`Process::is_zombie`]
    /// reads it without the lock (every wait asks it of every child).
    zombie: AtomicBool,
    /// Stop/continue events for the parent's wait.
    pub wait_event: IrqSpinLock<Option<ChildEvent>>,
    /// Group exit in progress (the code threads exit with).
    pub group_exit: AtomicI32,
    /// Whether a group exit was started.
    pub exiting: AtomicBool,
    /// Its children have been handed to init (set under `children` by
    /// [`exit_process`]): no child may be added after, as Linux's
    /// forget_original_parent and copy_process both hold tasklist_lock.
    children_released: AtomicBool,
    /// A group stop is complete (Linux's SIGNAL_STOP_STOPPED).
    pub stopped: AtomicBool,
    /// Threads yet to stop in the group stop in progress (Linux's
    /// `group_stop_count`), changed under `threads`.
    pub group_stop_count: AtomicU32,
    /// Signal actions (shared with CLONE_SIGHAND).
    pub sighand: Arc<SigHand>,
    /// Signals sent to the process as a whole (`signal->shared_pending.signal`).
    pub shared_pending: AtomicU64,
    /// Their queued information (`signal->shared_pending.list`).
    pub shared_sigqueue: signal::SigQueue,
    /// Where the parent sleeps in wait4/waitid.
    pub child_wait: WaitQueue,
    /// File creation mask, shared by CLONE_FS as Linux's fs_struct.
    pub umask: Arc<AtomicU32>,
    /// Per-process files and cwd.
    pub fs: IrqSpinLock<crate::fs::ProcessFs>,
    /// Signal number sent to the parent at exit (SIGCHLD usually; any
    /// value of the clone flags' low byte, an invalid one sending none, as
    /// on Linux). Set to SIGCHLD when init adopts it.
    pub exit_signal: AtomicU32,
    /// CPU time of exited threads and of reaped children.
    pub cputime: crate::cputime::ProcessCputime,
    /// Dead traced threads whose tracer (not the real parent) has not yet
    /// collected their exit: the real parent's wait and SIGCHLD wait.
    pub ptrace_hold: AtomicU32,
    /// The traced leader that died while other threads lived: its exit is
    /// reported to its tracer when the group is empty (Linux's
    /// delay_group_leader).
    pub ptrace_delayed_leader: IrqSpinLock<Option<Arc<Task>>>,
    /// The thread a process-directed signal was last given to (Linux's
    /// `signal->curr_target`), by thread ID: the next search starts there.
    pub curr_target: AtomicU32,
    /// The leader, once it exited while other threads live: a zombie
    /// still listed in `/proc/PID/task` until the group ends (Linux keeps
    /// it on the thread list, delay_group_leader).
    pub exited_leader: IrqSpinLock<Option<Arc<Task>>>,
    /// The leader's name, kept when the last thread exits: a zombie's
    /// `/proc` files still show it (Linux keeps the leader's task until
    /// the reap).
    pub zombie_comm: IrqSpinLock<[u8; 16]>,
    /// The leader's credentials, kept likewise: a zombie may still be
    /// signalled (kill's permission check) and shown in `/proc`.
    pub zombie_cred: IrqSpinLock<Option<Arc<crate::cred::Cred>>>,
    /// ITIMER_REAL (Linux's `signal->real_timer`), cancelled at exit.
    pub real_timer: crate::itimer::RealTimer,
    /// ITIMER_VIRTUAL and ITIMER_PROF (Linux's `signal->it[]`).
    pub cpu_itimers: crate::itimer::CpuItimers,
}

static PROCESSES: IrqSpinLock<BTreeMap<u32, Arc<Process>>> = IrqSpinLock::new(BTreeMap::new());
/// Every task by TID. A lookup (each kill, ptrace request and
/// process_vm call makes one) takes it for reading, neither masking
/// interrupts nor excluding other lookups, as Linux finds tasks under RCU;
/// clone, exit and exec take it for writing through [`tasks_write`].
static TASKS: spin::RwLock<BTreeMap<u32, Arc<Task>>> = spin::RwLock::new(BTreeMap::new());

/// `TASKS` held for writing, with interrupts masked on this CPU so that an
/// interrupt handler's lookup never waits for the CPU it interrupted.
struct TasksWrite {
    guard: Option<spin::RwLockWriteGuard<'static, BTreeMap<u32, Arc<Task>>>>,
    flags: arch::cpu::IrqFlags,
}

/// Takes `TASKS` for writing. It waits with interrupts on: a reader may be
/// held in a stop_machine rendezvous, which this CPU must be able to join.
fn tasks_write() -> TasksWrite {
    loop {
        let flags = arch::cpu::local_irq_save();
        if let Some(g) = TASKS.try_write() {
            return TasksWrite { guard: Some(g), flags };
        }
        arch::cpu::local_irq_restore(flags);
        core::hint::spin_loop();
    }
}

impl core::ops::Deref for TasksWrite {
    type Target = BTreeMap<u32, Arc<Task>>;
    fn deref(&self) -> &Self::Target {
        self.guard.as_ref().expect("guard present until drop")
    }
}

impl core::ops::DerefMut for TasksWrite {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.guard.as_mut().expect("guard present until drop")
    }
}

impl Drop for TasksWrite {
    fn drop(&mut self) {
        self.guard.take();
        arch::cpu::local_irq_restore(self.flags);
    }
}

/// The process with `pid`.
pub fn find_process(pid: u32) -> Option<Arc<Process>> {
    PROCESSES.lock().get(&pid).cloned()
}

/// The task with `tid`.
pub fn find_task(tid: u32) -> Option<Arc<Task>> {
    TASKS.read().get(&tid).cloned()
}

/// `f` of the task with `tid`, run under the lookup's read lock with no
/// reference taken (no atomic count update and release, as Linux's
/// find_task_by_vpid under RCU): `f` must not block nor take `TASKS`
/// for writing, and may take only locks that no holder of `TASKS` for
/// writing waits for (a task's `mm` and `cred` locks are such).
pub fn with_task<R>(tid: u32, f: impl FnOnce(&Task) -> R) -> Option<R> {
    TASKS.read().get(&tid).map(|t| f(t))
}

/// All processes, by PID.
pub fn all_processes() -> Vec<Arc<Process>> {
    PROCESSES.lock().values().cloned().collect()
}

/// The current task's process. Inline, as Linux's `current`: nearly
/// every system call asks, and out of line it was a traced call with its
/// two patch-site NOPs on each.
#[inline]
pub fn current_process() -> Arc<Process> {
    sched::current().process.get().expect("not a user task").clone()
}

impl Process {
    /// [`Process::exit_signal`]'s value.
    pub fn exit_signal(&self) -> u32 {
        self.exit_signal.load(Ordering::Acquire)
    }

    fn new(
        pid: u32,
        ppid: u32,
        pgid: u32,
        sid: u32,
        sighand: Arc<SigHand>,
        (fs, umask): (crate::fs::ProcessFs, Arc<AtomicU32>),
        exit_signal: u32,
    ) -> Arc<Process> {
        Arc::new(Process {
            pid,
            ppid: AtomicU32::new(ppid),
            pgid: AtomicU32::new(pgid),
            sid: AtomicU32::new(sid),
            threads: IrqSpinLock::new(Vec::new()),
            children: IrqSpinLock::new(Vec::new()),
            exit_status: IrqSpinLock::new(None),
            zombie: AtomicBool::new(false),
            wait_event: IrqSpinLock::new(None),
            group_exit: AtomicI32::new(0),
            exiting: AtomicBool::new(false),
            children_released: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            group_stop_count: AtomicU32::new(0),
            sighand,
            shared_pending: AtomicU64::new(0),
            shared_sigqueue: signal::SigQueue::new(),
            child_wait: WaitQueue::new(),
            umask,
            fs: IrqSpinLock::new(fs),
            exit_signal: AtomicU32::new(exit_signal),
            cputime: crate::cputime::ProcessCputime::new(),
            ptrace_hold: AtomicU32::new(0),
            ptrace_delayed_leader: IrqSpinLock::new(None),
            curr_target: AtomicU32::new(pid),
            exited_leader: IrqSpinLock::new(None),
            zombie_comm: IrqSpinLock::new([0; 16]),
            zombie_cred: IrqSpinLock::new(None),
            real_timer: crate::itimer::RealTimer::new(),
            cpu_itimers: crate::itimer::CpuItimers::new(),
        })
    }

    /// The main (first) thread, if alive.
    pub fn main_thread(&self) -> Option<Arc<Task>> {
        self.threads.lock().first().cloned()
    }

    /// The credentials signals to it are checked against: its leader's
    /// (Linux's `group_send_sig_info` on the thread-group leader), kept
    /// after the leader or the whole group exited.
    pub fn leader_cred(&self) -> Arc<crate::cred::Cred> {
        let threads = self.threads.lock();
        let leader = threads.iter().find(|t| t.tid() == self.pid).or(threads.first());
        if let Some(t) = leader {
            return crate::cred::task_cred(t);
        }
        drop(threads);
        if let Some(t) = self.exited_leader.lock().as_ref() {
            return crate::cred::task_cred(t);
        }
        self.zombie_cred
            .lock()
            .clone()
            .unwrap_or_else(|| Arc::new(crate::cred::Cred::root()))
    }

    /// Whether it has exited and awaits reaping.
    pub fn is_zombie(&self) -> bool {
        self.zombie.load(Ordering::Acquire)
    }

    /// Whether its real parent may reap it: a zombie no tracer still has
    /// to hear about.
    pub fn is_reapable(&self) -> bool {
        self.is_zombie() && self.ptrace_hold.load(Ordering::Acquire) == 0
    }
}

#[cfg(feature = "ktest")]
impl Process {
    /// A process outside the process table, with no descriptors and `/` as
    /// its directory: for in-kernel tests that build a signal situation on
    /// threads that never run. The caller adds the threads and clears
    /// `threads` at the end (each thread's `process` points back here).
    pub fn new_for_ktest(pid: u32) -> Arc<Process> {
        // The test kernel mounts no root at boot; mounting is idempotent.
        crate::fs::mount_root(None).expect("root filesystem");
        let fs = crate::fs::ProcessFs {
            files: Arc::new(vfs::FdTable::new()),
            cwd: Arc::new(IrqSpinLock::new(crate::fs::vfs().root())),
        };
        Process::new(
            pid,
            0,
            pid,
            pid,
            Arc::new(SigHand::new()),
            (fs, Arc::new(AtomicU32::new(0o022))),
            signal::SIGCHLD,
        )
    }
}

/// Creates PID 1 from the current kernel context: a user task that will
/// return to EL0 at `pc` with stack `sp` in `mm`.
pub fn spawn_init(mm: Arc<Mm>, pc: u64, sp: u64, fs: crate::fs::ProcessFs, name: &[u8]) -> Result<Arc<Task>, Errno> {
    let tid = Task::alloc_tid();
    let regs = regs::start_thread(pc, sp);
    let task = Task::new_user(tid, &regs, name).ok_or(Errno::ENOMEM)?;
    let proc_ = Process::new(
        tid,
        0,
        tid,
        tid,
        Arc::new(SigHand::new()),
        (fs, Arc::new(AtomicU32::new(0o022))),
        signal::SIGCHLD,
    );
    *task.mm.lock() = Some(mm);
    task.process.call_once(|| proc_.clone());
    proc_.threads.lock().push(task.clone());
    PROCESSES.lock().insert(tid, proc_);
    tasks_write().insert(tid, task.clone());
    sched::wake_up(&task);
    Ok(task)
}

/// Linux's clone flags.
pub mod clone_flags {
    pub use uapi::sched::{
        CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID, CLONE_DETACHED, CLONE_FILES, CLONE_FS, CLONE_PARENT,
        CLONE_PARENT_SETTID, CLONE_PIDFD, CLONE_PTRACE, CLONE_SETTLS, CLONE_SIGHAND, CLONE_SYSVSEM, CLONE_THREAD,
        CLONE_UNTRACED, CLONE_VFORK, CLONE_VM, CSIGNAL,
    };
}

/// Linux's `struct kernel_clone_args`, up to `tls`, at Linux 6.12's
/// offsets (so `+0(%x0):x64` of `kernel_clone` is the flags and
/// `+48(%x0)` the new stack, as on Linux).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelCloneArgs {
    /// CLONE_* flags, without the exit signal.
    pub flags: u64,
    /// CLONE_PIDFD: where the pidfd goes (unsupported, 0).
    pub pidfd: u64,
    /// CLONE_CHILD_SETTID / CLONE_CHILD_CLEARTID: the child's TID word.
    pub child_tid: UserPtr,
    /// CLONE_PARENT_SETTID: the parent's copy of the child's TID.
    pub parent_tid: UserPtr,
    /// Name of a kernel thread (0 for user clones).
    pub name: u64,
    /// Signal sent to the parent when the child exits (`flags & CSIGNAL`
    /// of clone(2)).
    pub exit_signal: i32,
    /// Linux's `kthread`, `io_thread`, `user_worker` and `no_files` bits.
    pub kind: u32,
    /// New stack pointer (0: the parent's).
    pub stack: u64,
    /// Size of `stack` (clone3 only).
    pub stack_size: u64,
    /// CLONE_SETTLS: the new TPIDR_EL0.
    pub tls: u64,
}

/// Creates a task as the current one's copy (Linux's
/// `kernel_clone(args)`: x0 is the `kernel_clone_args`; x1 the user
/// registers the child starts from, which Linux takes from the current
/// task). Returns the child's TID or -errno.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
pub extern "C" fn kernel_clone(args: &KernelCloneArgs, regs: &PtRegs) -> i64 {
    let flags = args.flags | (args.exit_signal as u64 & clone_flags::CSIGNAL);
    crate::syscalls::ret(do_clone(regs, flags, args.stack, args.parent_tid, args.tls, args.child_tid).map(u64::from))
}

/// `clone` (arm64 argument order: flags, newsp, parent_tidptr, tls,
/// child_tidptr). Returns the child's TID.
fn do_clone(
    regs: &PtRegs,
    flags: u64,
    newsp: u64,
    parent_tid: UserPtr,
    tls: u64,
    child_tid: UserPtr,
) -> Result<u32, Errno> {
    use clone_flags::*;
    const SUPPORTED: u64 = CSIGNAL
        | CLONE_VM
        | CLONE_FS
        | CLONE_FILES
        | CLONE_SIGHAND
        | CLONE_VFORK
        | CLONE_PARENT
        | CLONE_THREAD
        | CLONE_SYSVSEM
        | CLONE_SETTLS
        | CLONE_PARENT_SETTID
        | CLONE_CHILD_CLEARTID
        | CLONE_DETACHED
        | CLONE_UNTRACED
        | CLONE_PTRACE
        | CLONE_CHILD_SETTID;
    if flags & !SUPPORTED != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & CLONE_THREAD != 0 && flags & CLONE_SIGHAND == 0 {
        return Err(Errno::EINVAL);
    }
    if flags & CLONE_SIGHAND != 0 && flags & CLONE_VM == 0 {
        return Err(Errno::EINVAL);
    }
    // Linux's sys_clone takes any low byte (clone3 checks it); a thread
    // has none, and a CLONE_PARENT child the caller's (its leader's).
    let exit_signal = (flags & CSIGNAL) as u32;
    // A new task needs kernel memory: never from the kernel's reserve.
    if crate::mm::frame::stats().free <= crate::mm::frame::USER_RESERVE_FRAMES {
        return Err(Errno::ENOMEM);
    }
    let me = sched::current();
    let parent = current_process();
    // init makes no siblings: they would have no parent to reap them
    // (Linux: EINVAL for CLONE_PARENT from a SIGNAL_UNKILLABLE init).
    if flags & CLONE_PARENT != 0 && parent.pid == 1 {
        return Err(Errno::EINVAL);
    }
    // A dying group makes no children (Linux: fatal_signal_pending, the
    // clone is restarted and the caller dies first). Checked again under
    // `threads` below, where it is atomic with do_group_exit's kill loop.
    if parent.exiting.load(Ordering::Acquire) {
        return Err(Errno::ERESTARTNOINTR);
    }
    // Nor while a signal or a stop is pending for the caller: it is taken
    // first and the clone restarted after it (Linux's copy_process), so
    // that a signal to the caller's group reaches it before the fork, and
    // a group stop stops the caller before it makes a thread.
    if signal::has_pending(&me) {
        return Err(Errno::ERESTARTNOINTR);
    }
    let mm = me.mm.lock().clone().ok_or(Errno::EINVAL)?;
    let child_mm = if flags & CLONE_VM != 0 { mm } else { mm.fork()? };

    let mut child_regs = regs::clone_regs(regs);
    child_regs.regs[0] = 0;
    if newsp != 0 {
        child_regs.sp = newsp;
    }
    let tid = Task::alloc_tid();
    let comm = me.comm.get();
    let name_len = comm.iter().position(|&b| b == 0).unwrap_or(16);
    let task = Task::new_user(tid, &child_regs, &comm[..name_len]).ok_or(Errno::ENOMEM)?;
    task.personality
        .store(me.personality.load(Ordering::Relaxed), Ordering::Relaxed);
    crate::sched::sched_fork(&me, &task);
    task.cpus_allowed.store(
        me.cpus_allowed.load(core::sync::atomic::Ordering::Relaxed),
        core::sync::atomic::Ordering::Relaxed,
    );
    *task.fpsimd.lock() = {
        let mut s = arch::context::FpsimdState::default();
        arch::context::fpsimd_save(&mut s);
        s
    };
    task.tls.store(
        if flags & CLONE_SETTLS != 0 {
            tls
        } else {
            arch::context::get_tls()
        },
        Ordering::Relaxed,
    );
    task.sig_blocked
        .store(me.sig_blocked.load(Ordering::Relaxed), Ordering::Relaxed);
    // fork and vfork children keep the alternate signal stack; a thread
    // sharing the address space starts without (Linux's sas_ss_reset).
    if flags & (CLONE_VM | CLONE_VFORK) != CLONE_VM {
        *task.sas.lock() = *me.sas.lock();
    }
    task.rseq.fork_from(&me.rseq, flags & CLONE_VM != 0);
    *task.cred.lock() = crate::cred::task_cred(&me);
    *task.mm.lock() = Some(child_mm.clone());
    if flags & CLONE_CHILD_CLEARTID != 0 {
        task.clear_child_tid.store(child_tid.addr(), Ordering::Relaxed);
    }

    let proc_ = if flags & CLONE_THREAD != 0 {
        parent.clone()
    } else {
        let sighand = if flags & CLONE_SIGHAND != 0 {
            parent.sighand.clone()
        } else {
            Arc::new(parent.sighand.duplicate())
        };
        let fs = parent.fs.lock().fork(flags & CLONE_FILES != 0, flags & CLONE_FS != 0);
        let umask = if flags & CLONE_FS != 0 {
            parent.umask.clone()
        } else {
            Arc::new(AtomicU32::new(parent.umask.load(Ordering::Relaxed)))
        };
        // The parent is set under its `children` lock below.
        let p = Process::new(
            tid,
            0,
            parent.pgid.load(Ordering::Relaxed),
            parent.sid.load(Ordering::Relaxed),
            sighand,
            (fs, umask),
            if flags & CLONE_PARENT != 0 {
                parent.exit_signal()
            } else {
                exit_signal
            },
        );
        attach_to_parent(&parent, &p, flags & CLONE_PARENT != 0)?;
        p
    };
    // The child exists by now; as in Linux, a bad address for either TID
    // write is ignored rather than failing a clone that has happened.
    if flags & CLONE_PARENT_SETTID != 0 {
        let _ = crate::uaccess::put_user_u32(parent_tid, tid);
    }
    if flags & CLONE_CHILD_SETTID != 0 {
        if flags & CLONE_VM != 0 {
            let _ = crate::uaccess::put_user_u32(child_tid, tid);
        } else {
            set_child_tid_in(&child_mm, child_tid, tid);
        }
    }
    task.process.call_once(|| proc_.clone());
    {
        let mut threads = proc_.threads.lock();
        if flags & CLONE_THREAD != 0 && proc_.exiting.load(Ordering::Acquire) {
            // The group exit's kill loop has run or is running: a thread
            // added now would escape it.
            return Err(Errno::ERESTARTNOINTR);
        }
        if flags & CLONE_THREAD != 0 {
            signal::task_join_group_stop(&me, &task, &proc_);
        }
        threads.push(task.clone());
    }
    if flags & CLONE_THREAD == 0 {
        PROCESSES.lock().insert(tid, proc_.clone());
    }
    tasks_write().insert(tid, task.clone());
    // Attached before it first runs (Linux's ptrace_init_task).
    let trace = crate::ptrace::clone_event(&me, flags, exit_signal);
    crate::ptrace::ptrace_init_task(
        &task,
        &me,
        trace,
        flags & CLONE_PTRACE != 0 && flags & CLONE_UNTRACED == 0,
    );
    let vfork = (flags & CLONE_VFORK != 0).then(|| {
        let done = Arc::new(VforkDone {
            released: AtomicBool::new(false),
            wq: WaitQueue::new(),
        });
        *task.vfork_done.lock() = Some(done.clone());
        done
    });
    crate::trace::tracepoint::task::trace_task_newtask(&task, flags);
    crate::trace::tracepoint::sched::trace_sched_process_fork(&me, &task);
    crate::trace::events::event_pids_fork(me.tid(), task.tid());
    crate::trace::ftrace_function::ftrace_pids_fork(me.tid(), task.tid());
    crate::trace::tracepoint::sched::trace_sched_wakeup_new(&task);
    sched::wake_up(&task);
    // Forking complete and the child started: tell the tracer.
    if let Some(event) = trace {
        crate::ptrace::ptrace_event(event, u64::from(tid), None);
    }
    if let Some(done) = vfork {
        // Killable, as Linux's wait_for_vfork_done: SIGKILL wakes even an
        // uninterruptible sleeper, and ends the wait.
        let _ = done.wq.wait_event(false, || {
            done.released.load(Ordering::Acquire) || signal::fatal_pending(&me)
        });
        task.vfork_done.lock().take();
        if !signal::fatal_pending(&me) {
            crate::ptrace::ptrace_event(uapi::ptrace::PTRACE_EVENT_VFORK_DONE, u64::from(tid), None);
        }
    }
    Ok(tid)
}

/// Writes `tid` at `addr` in a forked child's address space, as the child's
/// own store would (Linux does it with put_user in the child, at
/// schedule_tail): the page must be writable to the child, and a
/// copy-on-write page is copied first so the parent's memory is untouched.
/// A bad address is ignored, as in Linux.
fn set_child_tid_in(mm: &Mm, addr: UserPtr, tid: u32) {
    let Some(addr) = addr.range(4) else {
        return;
    };
    let Some(last) = addr.checked_add(3) else { return };
    if mm.handle_fault(addr, true, false).is_err() || mm.handle_fault(last, true, false).is_err() {
        return;
    }
    let _ = mm.write_bytes(addr, &tid.to_le_bytes());
}

/// A vfork parent's wait for its child to exec or exit (Linux's
/// `vfork_done` completion).
pub struct VforkDone {
    released: AtomicBool,
    wq: WaitQueue,
}

/// Releases the vfork parent of `task`, if any (Linux's mm_release: at the
/// child's exec or exit, a CLONE_THREAD child included).
pub fn vfork_release(task: &Task) {
    let done = task.vfork_done.lock().take();
    if let Some(done) = done {
        done.released.store(true, Ordering::Release);
        done.wq.wake_up_all();
    }
}

/// Ends the current thread (`exit`); the last thread ends the process
/// (Linux's `do_exit(code)`: x0 is the wait status, `exit(n)` passing
/// `(n & 0xff) << 8`).
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
pub extern "C" fn do_exit(code: i64) -> ! {
    crate::ptrace::ptrace_event_exit(code as i32);
    crate::trace::tracepoint::sched::trace_sched_process_exit(&sched::current());
    crate::trace::ftrace_function::ftrace_pids_exit(sched::current().tid());
    exit_thread(code as i32);
    // No reference may live in this frame: it is never returned to.
    sched::current().set_state(TaskState::Dead);
    sched::schedule();
    unreachable!("dead task scheduled");
}

fn exit_thread(status: i32) {
    let me = sched::current();
    let p = current_process();
    // CLONE_CHILD_CLEARTID: tell the joiner.
    crate::ptrace::exit_begin(&me);
    let ctid = UserPtr::new(me.clear_child_tid.swap(0, Ordering::Relaxed));
    if !ctid.is_null() && crate::uaccess::put_user_u32(ctid, 0).is_ok() {
        crate::futex::wake(ctid, 1);
    }
    let (last, zombie_leader) = {
        let mut threads = p.threads.lock();
        threads.retain(|t| !Arc::ptr_eq(t, &me));
        crate::cputime::exit_thread_cputime(&p, &me);
        // The leader stays listed as a zombie while other threads live;
        // the last thread's exit ends that (the task is freed below,
        // outside the locks).
        let mut exited_leader = p.exited_leader.lock();
        let zombie_leader = if threads.is_empty() {
            exited_leader.take()
        } else {
            if me.tid() == p.pid {
                *exited_leader = Some(me.clone());
            }
            None
        };
        (threads.is_empty(), zombie_leader)
    };
    if last {
        let leader = zombie_leader.as_deref().unwrap_or(&me);
        *p.zombie_comm.lock() = leader.comm.get();
        *p.zombie_cred.lock() = Some(crate::cred::task_cred(leader));
    }
    drop(zombie_leader);
    {
        // Only this task's own entry: a thread that exec'd may already have
        // taken over this ID (see `take_leader_id`).
        let mut tasks = tasks_write();
        if tasks.get(&me.tid()).is_some_and(|t| Arc::ptr_eq(t, &me)) {
            tasks.remove(&me.tid());
        }
    }
    vfork_release(&me);
    signal::exit_signals(&me, &p, last);
    crate::ptrace::exit_ptrace(&me);
    crate::ptrace::exit_ptrace_tracee(&me, &p, status, last);
    // Leave the address space before it may be freed.
    arch::mmu::secondary_drop_idmap();
    me.mm.lock().take();
    if last {
        exit_process(&p, status);
    }
}

/// Adds the new process `p` to its parent's children: the caller's process
/// or, for CLONE_PARENT, the caller's parent. Done under the parent's
/// `children` lock, which an exiting parent holds while it hands its
/// children to init, so `p` is either added before (and handed over with
/// the rest) or finds the parent released; then CLONE_PARENT follows the
/// caller's new parent (init), as Linux reads `current->real_parent` under
/// tasklist_lock. A caller whose group is dying makes no child (Linux's
/// copy_process: EINTR under fatal_signal_pending; the caller dies first).
fn attach_to_parent(caller: &Arc<Process>, p: &Arc<Process>, clone_parent: bool) -> Result<(), Errno> {
    loop {
        let real_parent = if clone_parent {
            // The caller's parent leaves PROCESSES only after it released
            // its children, having set the caller's ppid to 1 first. Init
            // as the fallback keeps a ppid nobody holds from spinning here.
            match find_process(caller.ppid.load(Ordering::Acquire)).or_else(|| find_process(1)) {
                Some(rp) => rp,
                None => return Err(Errno::EAGAIN),
            }
        } else {
            caller.clone()
        };
        let mut children = real_parent.children.lock();
        if caller.exiting.load(Ordering::Acquire) {
            return Err(Errno::EINTR);
        }
        if real_parent.children_released.load(Ordering::Acquire) {
            // Only a CLONE_PARENT target should be released: the caller
            // itself is alive (its thread is here) and not exiting. Were
            // it released, it is dying: refused, never a spin.
            if !clone_parent {
                return Err(Errno::EINTR);
            }
            continue;
        }
        p.ppid.store(real_parent.pid, Ordering::Release);
        children.push(p.clone());
        return Ok(());
    }
}

/// Ends the whole thread group with `status` (`exit_group`, fatal signals).
pub fn do_group_exit(status: i32) -> ! {
    let code = {
        let p = current_process();
        // `exiting` is set under `threads`, so a concurrent
        // clone(CLONE_THREAD) either joined before (and is killed here) or
        // sees it and fails.
        let threads = p.threads.lock();
        if !p.exiting.swap(true, Ordering::AcqRel) {
            p.group_exit.store(status, Ordering::Release);
            let me = sched::current();
            for t in threads.iter().filter(|t| !Arc::ptr_eq(t, &me)) {
                t.sig_pending
                    .fetch_or(signal::sigmask(signal::SIGKILL), Ordering::AcqRel);
                sched::wake_up(t);
            }
        }
        p.group_exit.load(Ordering::Acquire)
    };
    do_exit(i64::from(code))
}

fn exit_process(p: &Arc<Process>, status: i32) {
    crate::itimer::exit(p);
    // Closed with interrupts on, outside the process's `fs` lock.
    let files = p.fs.lock().release();
    drop(files);
    // Orphans go to init, which reaps them. The move is made under this
    // process's `children` lock, which an exiting child holds while it
    // notifies its parent (Linux holds tasklist_lock for both): a child
    // either notifies this process before the move (and is moved as a
    // zombie, init hearing of it here, as Linux's reparent_leader tells
    // the new parent) or finds its ppid already init's and notifies init.
    let mut orphans: Vec<Arc<Process>> = Vec::new();
    if let Some(init) = find_process(1).filter(|i| !Arc::ptr_eq(i, p)) {
        let mut any_zombie = false;
        {
            let mut children = p.children.lock();
            p.children_released.store(true, Ordering::Release);
            if !children.is_empty() {
                let mut init_children = init.children.lock();
                for c in children.iter() {
                    // Init never gets another signal (Linux's
                    // reparent_leader), nor needs __WCLONE to reap it.
                    c.exit_signal.store(signal::SIGCHLD, Ordering::Release);
                    c.ppid.store(1, Ordering::Release);
                    if c.is_zombie() {
                        any_zombie = true;
                        let status = *c.exit_status.lock();
                        if let Some(status) = status {
                            if c.ptrace_hold.load(Ordering::Acquire) == 0 {
                                signal::send_child_signal(&init, c, status);
                            }
                        }
                    }
                }
                init_children.extend(children.iter().cloned());
                orphans = core::mem::take(&mut *children);
            }
        }
        if any_zombie {
            init.child_wait.wake_up_all();
        }
        for c in &orphans {
            signal::kill_orphaned_pgrp(c, p, false);
        }
    }
    drop(orphans);
    // The parent is read again under its `children` lock: one that exits
    // meanwhile may have handed this process to init.
    let mut first = true;
    loop {
        let ppid = p.ppid.load(Ordering::Acquire);
        let Some(pp) = find_process(ppid) else {
            *p.exit_status.lock() = Some(status);
            p.zombie.store(true, Ordering::Release);
            PROCESSES.lock().remove(&p.pid);
            break;
        };
        if core::mem::take(&mut first) {
            signal::kill_orphaned_pgrp(p, &pp, true);
        }
        let autoreap = signal::ignores_children(&pp);
        {
            // Under the parent's `children` lock, as release_traced_zombie:
            // exactly one of the two sends SIGCHLD.
            let mut children = pp.children.lock();
            if p.ppid.load(Ordering::Acquire) != ppid {
                continue;
            }
            *p.exit_status.lock() = Some(status);
            p.zombie.store(true, Ordering::Release);
            // A tracer hears first; the parent's SIGCHLD waits for its wait.
            let held = p.ptrace_hold.load(Ordering::Acquire) != 0;
            if autoreap {
                children.retain(|c| !Arc::ptr_eq(c, p));
            } else if p.exit_signal() != 0 && !held {
                signal::send_child_signal(&pp, p, status);
            }
        }
        if autoreap {
            PROCESSES.lock().remove(&p.pid);
        }
        pp.child_wait.wake_up_all();
        break;
    }
    if p.pid == 1 {
        crate::pr_err!(
            "Kernel panic - not syncing: Attempted to kill init! exitcode=0x{:08x}",
            status
        );
        crate::power::poweroff();
    }
}

/// A tracer of `p` has collected its exit: one ptrace hold is dropped, and
/// with the last one the real parent gets its SIGCHLD and may reap it.
/// Both happen under the parent's `children` lock, which its wait holds
/// to look, so a waiting parent sees both or neither (Linux does both
/// under tasklist_lock): the signal queued before the hold was dropped
/// made the parent's wait4 end with ERESTARTSYS where Linux's returns the
/// child, and the hold dropped first let the parent reap the child and
/// exit before the signal came.
pub fn release_traced_zombie(p: &Process) {
    // The parent is read again under its `children` lock, as exit_process
    // does: an exiting parent may hand the process to init meanwhile.
    let pp = loop {
        let ppid = p.ppid.load(Ordering::Acquire);
        let Some(pp) = find_process(ppid) else {
            p.ptrace_hold.fetch_sub(1, Ordering::AcqRel);
            return;
        };
        let children = pp.children.lock();
        if p.ppid.load(Ordering::Acquire) != ppid {
            continue;
        }
        if p.ptrace_hold.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        // Not yet a zombie: exit_process sends the signal itself.
        let Some(status) = *p.exit_status.lock() else { return };
        if p.exit_signal() != 0 && children.iter().any(|c| c.pid == p.pid) {
            signal::send_child_signal(&pp, p, status);
        }
        drop(children);
        break pp;
    };
    pp.child_wait.wake_up_all();
}

/// Removes a zombie its parent has claimed (taken off its `children`
/// list) from the PID table.
pub fn forget_zombie(child: &Arc<Process>) {
    PROCESSES.lock().remove(&child.pid);
}

/// After de_thread left `me` the only thread of `p`: `me` takes the
/// process's ID, so that gettid() == getpid() and `find_task(pid)` finds it
/// (Linux's de_thread exchanges the leader's pid with the exec'ing thread's).
pub fn take_leader_id(me: &Arc<Task>, p: &Process) {
    let old = me.tid();
    if old == p.pid {
        return;
    }
    // The old leader's exit is never reported: the exec'ing thread goes on
    // under its pid (Linux's de_thread releases the old leader silently).
    let old_leader = p.ptrace_delayed_leader.lock().take();
    let zombie_leader = p.exited_leader.lock().take();
    drop(zombie_leader);
    if let Some(l) = old_leader {
        crate::ptrace::forget_exited_leader(&l);
    }
    let mut tasks = tasks_write();
    if tasks.get(&old).is_some_and(|t| Arc::ptr_eq(t, me)) {
        tasks.remove(&old);
    }
    me.set_tid(p.pid);
    tasks.insert(p.pid, me.clone());
}
