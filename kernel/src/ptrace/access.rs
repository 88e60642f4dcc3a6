//! Who may inspect or control whom: Linux's `ptrace_may_access` and
//! `mm_access`, the one check behind `PTRACE_ATTACH`/`PTRACE_SEIZE`,
//! `/proc/PID/mem` and `process_vm_readv`/`process_vm_writev`.

use crate::errno::Errno;
use crate::mm::vm::Mm;
use crate::sched::Task;
use alloc::sync::Arc;

use crate::cred::with_task_cred;
pub use crate::cred::PtraceMode;
use process_core::cred::PtraceSubject;

/// Whether `caller` may control `task` (Linux's `__ptrace_may_access`
/// with commoncap's `cap_ptrace_access_check`): its own thread group
/// always; otherwise its real (or filesystem) user and group must equal
/// all three of the target's and its capabilities cover the target's, or
/// it must hold `CAP_SYS_PTRACE`; and the target's address space
/// (`task_mm`, `None` for a kernel thread or an exited task) must be
/// dumpable, or the caller hold `CAP_SYS_PTRACE`. EPERM when refused.
pub fn ptrace_may_access(caller: &Task, task: &Task, task_mm: Option<&Arc<Mm>>, mode: PtraceMode) -> Result<(), Errno> {
    if same_thread_group(caller, task) {
        return Ok(());
    }
    // The caller's part copied out (no reference taken to its
    // credentials); a caller with CAP_SYS_PTRACE passes whatever the
    // target's are, so they are not read.
    let me = with_task_cred(caller, |cred| PtraceSubject::of(cred, mode));
    if !me.sys_ptrace && !with_task_cred(task, |tcred| me.allows(tcred)) {
        return Err(Errno::EPERM);
    }
    // Read after the credentials: commit_creds closes the space before it
    // installs new ones, so a target that just dropped privileges is seen
    // undumpable here.
    let undumpable = task_mm.is_some_and(|mm| mm.dumpable() != uapi::capability::SUID_DUMP_USER);
    if undumpable && !me.sys_ptrace {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// `task`'s address space for a caller that will read or write it
/// (Linux's `mm_access`): ESRCH when it has none (a kernel thread, an
/// exited task), EACCES when `ptrace_may_access` refuses a caller that
/// does not share it.
pub fn mm_access(task: &Task, mode: PtraceMode) -> Result<Arc<Mm>, Errno> {
    let mm = task.mm.lock().clone().ok_or(Errno::ESRCH)?;
    // The caller without a reference taken to it (no atomic count update).
    let allowed = crate::sched::with_current(|me| {
        // Linux skips the check for the caller's own address space; asked
        // only after a refusal here, so that the common case takes no
        // second lock.
        ptrace_may_access(me, task, Some(&mm), mode).is_ok()
            || me.mm.lock().as_ref().is_some_and(|m| Arc::ptr_eq(m, &mm))
    });
    if allowed != Some(true) {
        return Err(Errno::EACCES);
    }
    Ok(mm)
}

/// Whether `a` and `b` are threads of one process.
fn same_thread_group(a: &Task, b: &Task) -> bool {
    match (a.process.get(), b.process.get()) {
        (Some(p), Some(q)) => Arc::ptr_eq(p, q),
        _ => core::ptr::eq(a, b),
    }
}
