//! Restartable sequences (Linux's kernel/rseq.c): a thread registers a
//! `struct rseq` with rseq(2); before it next runs user code after being
//! switched out (preempted, blocked or migrated) or before a signal
//! handler runs, the kernel writes the CPU it runs on (`cpu_id_start`,
//! `cpu_id`, `node_id`, `mm_cid`) and, if the thread was inside the
//! critical section its `rseq_cs` describes, sends it to the section's
//! abort address. The argument and descriptor checks live in
//! `uapi::rseq`, tested on the host.

use crate::errno::Errno;
use crate::sched::Task;
use crate::sync::IrqSpinLock;
use crate::uaccess::{copy_from_user, copy_to_user, get_user_u32, get_user_u64, put_user_u64, UserPtr};
use alloc::sync::Arc;
use arch::ptrace::PtRegs;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use uapi::rseq::{check_rseq, offset, Registration, RseqCpuIds, RseqCs, RseqOp};

pub use uapi::rseq::RSEQ_FEATURE_SIZE;

/// The concurrency IDs (`mm_cid`) of one address space, one bit each: a
/// thread holds one from its return to user space until it is switched
/// out, so that IDs stay below the number of threads running at once
/// (as Linux's per-mm cid allocation).
#[derive(Default)]
pub struct MmCid(AtomicU64);

impl MmCid {
    /// The lowest free ID, taken.
    fn get(&self) -> Option<u32> {
        let mut id = None;
        let _ = self.0.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
            let bit = (!m).trailing_zeros();
            id = (bit < 64).then_some(bit);
            id.map(|b| m | 1 << b)
        });
        id
    }

    fn put(&self, id: u32) {
        self.0.fetch_and(!(1u64 << id), Ordering::AcqRel);
    }
}

/// A thread's rseq state (Linux's `task->rseq`, `rseq_len`, `rseq_sig`,
/// `rseq_event_mask` and `mm_cid`).
pub struct TaskRseq {
    reg: IrqSpinLock<Option<Registration>>,
    /// A registration exists (read without the lock on the hot paths).
    active: AtomicBool,
    /// Preempted or signalled since the last return to user space: a
    /// critical section in progress must restart (`rseq_event_mask`).
    event: AtomicBool,
    /// The area must be refreshed before the return to user space
    /// (Linux's TIF_NOTIFY_RESUME for rseq).
    notify_resume: AtomicBool,
    /// The concurrency ID held, and the address space's IDs it came from.
    cid: IrqSpinLock<Option<(Arc<MmCid>, u32)>>,
}

impl Default for TaskRseq {
    fn default() -> Self {
        TaskRseq {
            reg: IrqSpinLock::new(None),
            active: AtomicBool::new(false),
            event: AtomicBool::new(false),
            notify_resume: AtomicBool::new(false),
            cid: IrqSpinLock::new(None),
        }
    }
}

impl TaskRseq {
    /// Whether the return to user space must run
    /// [`rseq_handle_notify_resume`].
    pub fn notify_resume_pending(&self) -> bool {
        self.notify_resume.load(Ordering::Acquire)
    }

    /// A child's state at clone: a fork keeps the parent's registration
    /// (the same area in its copy of the memory), a thread or vfork child
    /// starts without (Linux's `rseq_fork`).
    pub fn fork_from(&self, parent: &TaskRseq, share_vm: bool) {
        if share_vm {
            return;
        }
        let reg = *parent.reg.lock();
        *self.reg.lock() = reg;
        self.active.store(reg.is_some(), Ordering::Release);
        self.notify_resume.store(reg.is_some(), Ordering::Release);
    }

    /// exec: the registration goes with the old image (Linux's
    /// `rseq_execve`).
    pub fn execve(&self) {
        *self.reg.lock() = None;
        self.active.store(false, Ordering::Release);
        self.event.store(false, Ordering::Release);
        self.notify_resume.store(false, Ordering::Release);
        self.put_cid();
    }

    /// The registered area's address, length and signature (PTRACE_GET_RSEQ_CONFIGURATION), `None` when unregistered.
    pub fn registration(&self) -> Option<(u64, u32, u32)> {
        (*self.reg.lock()).map(|r| (r.addr, r.len, r.sig))
    }

    fn put_cid(&self) {
        if let Some((ids, id)) = self.cid.lock().take() {
            ids.put(id);
        }
    }
}

/// The thread is being switched out (Linux's `rseq_preempt`, from the
/// context switch with interrupts masked): a critical section it is in must
/// restart, its CPU may change, and its concurrency ID is given back.
pub fn rseq_preempt(t: &Task) {
    if !t.rseq.active.load(Ordering::Acquire) {
        return;
    }
    t.rseq.event.store(true, Ordering::Release);
    t.rseq.notify_resume.store(true, Ordering::Release);
    t.rseq.put_cid();
}

/// On the way back to user space after [`rseq_preempt`] or registration
/// (Linux's `rseq_handle_notify_resume`): abort an interrupted critical
/// section and refresh the CPU numbers. A bad area or descriptor is
/// SIGSEGV.
pub fn rseq_handle_notify_resume(regs: &mut PtRegs) {
    let me = crate::sched::current();
    if !me.rseq.notify_resume.swap(false, Ordering::AcqRel) {
        return;
    }
    if handle_notify_resume(&me, regs).is_err() {
        drop(me);
        crate::signal::force_sigsegv(0);
    }
}

/// Before a signal handler's frame is written (Linux's
/// `rseq_signal_deliver`): the handler must not return into an
/// interrupted critical section, so the saved pc becomes its abort
/// address. Failure is SIGSEGV (after `sig`'s own frame, as Linux).
pub fn rseq_signal_deliver(sig: u32, regs: &mut PtRegs) {
    let me = crate::sched::current();
    if !me.rseq.active.load(Ordering::Acquire) {
        return;
    }
    me.rseq.event.store(true, Ordering::Release);
    if handle_notify_resume(&me, regs).is_err() {
        drop(me);
        crate::signal::force_sigsegv(sig);
    }
}

fn handle_notify_resume(me: &Task, regs: &mut PtRegs) -> Result<(), Errno> {
    let Some(reg) = *me.rseq.reg.lock() else { return Ok(()) };
    rseq_ip_fixup(me, &reg, regs)?;
    rseq_update_cpu_node_id(me, &reg)
}

/// The field at `off` of the rseq area registered at `area`.
fn field(area: u64, off: u64) -> UserPtr {
    UserPtr::new(area).wrapping_add(off)
}

/// The critical section the area points at, checked; `None` if none.
fn rseq_get_rseq_cs(reg: &Registration) -> Result<Option<RseqCs>, Errno> {
    let ptr = get_user_u64(field(reg.addr, offset::RSEQ_CS))?;
    if ptr == 0 {
        return Ok(None);
    }
    if ptr >= arch::uaccess::TASK_SIZE {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; RseqCs::SIZE];
    copy_from_user(&mut raw, UserPtr::new(ptr))?;
    let cs = RseqCs::from_bytes(&raw);
    cs.check(arch::uaccess::TASK_SIZE)?;
    let sig = get_user_u32(UserPtr::new(cs.abort_ip - 4))?;
    if sig != reg.sig {
        crate::pr_warn!(
            "Possible attack attempt. Unexpected rseq signature 0x{:x}, expecting 0x{:x} (pid={}, addr={:#x}).",
            sig,
            reg.sig,
            crate::sched::current().tid(),
            cs.abort_ip - 4
        );
        return Err(Errno::EINVAL);
    }
    Ok(Some(cs))
}

fn rseq_ip_fixup(me: &Task, reg: &Registration, regs: &mut PtRegs) -> Result<(), Errno> {
    let Some(cs) = rseq_get_rseq_cs(reg)? else {
        return Ok(());
    };
    if !cs.contains(regs.pc) {
        return put_user_u64(field(reg.addr, offset::RSEQ_CS), 0);
    }
    // Linux 6.12 refuses the deprecated no-restart flags, in the
    // descriptor and in the area.
    if cs.flags != 0 || get_user_u32(field(reg.addr, offset::FLAGS))? != 0 {
        return Err(Errno::EINVAL);
    }
    if !me.rseq.event.swap(false, Ordering::AcqRel) {
        return Ok(());
    }
    put_user_u64(field(reg.addr, offset::RSEQ_CS), 0)?;
    crate::trace::tracepoint::rseq::trace_rseq_ip_fixup(regs.pc, cs.start_ip, cs.post_commit_offset, cs.abort_ip);
    regs.pc = cs.abort_ip;
    Ok(())
}

fn rseq_update_cpu_node_id(me: &Task, reg: &Registration) -> Result<(), Errno> {
    let cpu_id = arch::cpu::cpu_id() as u32;
    let mm_cid = {
        let mut held = me.rseq.cid.lock();
        match &*held {
            Some((_, id)) => *id,
            None => {
                let ids = me.mm.lock().as_ref().map(|mm| mm.mm_cid.clone());
                // At most one ID per CPU is held, so one is always free.
                match ids.and_then(|ids| ids.get().map(|id| (ids, id))) {
                    Some((ids, id)) => {
                        *held = Some((ids, id));
                        id
                    }
                    None => cpu_id,
                }
            }
        }
    };
    let (ids, node_cid) = RseqCpuIds {
        cpu_id,
        node_id: 0,
        mm_cid,
    }
    .to_bytes();
    copy_to_user(field(reg.addr, offset::CPU_ID_START), &ids)?;
    copy_to_user(field(reg.addr, offset::NODE_ID), &node_cid)?;
    crate::trace::tracepoint::rseq::trace_rseq_update(cpu_id, 0, mm_cid);
    Ok(())
}

crate::syscalls::syscall!(__arm64_sys_rseq, r, {
    let (addr, len, flags, sig) = (r.regs[0], r.regs[1] as u32, r.regs[2] as i32, r.regs[3] as u32);
    let me = crate::sched::current();
    // Only the thread itself changes its registration, so it may touch
    // user memory (and fault) between reading and setting it.
    let current = *me.rseq.reg.lock();
    match check_rseq(current, addr, len, flags, sig)? {
        RseqOp::Unregister => {
            let (ids, node_cid) = RseqCpuIds::reset_bytes();
            copy_to_user(field(addr, offset::CPU_ID_START), &ids)?;
            copy_to_user(field(addr, offset::NODE_ID), &node_cid)?;
            *me.rseq.reg.lock() = None;
            me.rseq.active.store(false, Ordering::Release);
            me.rseq.put_cid();
        }
        RseqOp::Register(new) => {
            if !arch::uaccess::access_ok(UserPtr::new(addr), len as usize) {
                return Err(Errno::EFAULT);
            }
            // A library reusing an area for a new thread may leave a
            // descriptor there; Linux clears it rather than fail.
            if get_user_u64(field(addr, offset::RSEQ_CS))? != 0 {
                put_user_u64(field(addr, offset::RSEQ_CS), 0)?;
            }
            *me.rseq.reg.lock() = Some(new);
            me.rseq.active.store(true, Ordering::Release);
            me.rseq.notify_resume.store(true, Ordering::Release);
        }
    }
    Ok(0)
});
