//! Who may inspect or control whom: Linux's `ptrace_may_access` and
//! `mm_access`, the one check behind `PTRACE_ATTACH`/`PTRACE_SEIZE`,
//! `/proc/PID/mem` and `process_vm_readv`/`process_vm_writev`.

use crate::errno::Errno;
use crate::mm::vm::Mm;
use crate::sched::Task;
use alloc::sync::Arc;

/// What the caller asks for and whose credentials speak for it (Linux's
/// `PTRACE_MODE_*` bits, the combinations its callers pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtraceMode {
    /// Control (ptrace attach, process_vm_readv/writev): the caller's
    /// real IDs, as `PTRACE_MODE_ATTACH_REALCREDS`.
    AttachRealCreds,
    /// Control through a file (`/proc/PID/mem`): the caller's filesystem
    /// IDs, as `PTRACE_MODE_ATTACH_FSCREDS`.
    AttachFsCreds,
}

/// The fields of a task's credentials the check compares (Linux's
/// `struct cred`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cred {
    pub uid: u32,
    pub euid: u32,
    pub suid: u32,
    pub fsuid: u32,
    pub gid: u32,
    pub egid: u32,
    pub sgid: u32,
    pub fsgid: u32,
    /// `CAP_SYS_PTRACE` in the effective set.
    pub cap_sys_ptrace: bool,
}

impl Cred {
    /// init's credentials: root, with every capability.
    pub const ROOT: Cred = Cred {
        uid: 0,
        euid: 0,
        suid: 0,
        fsuid: 0,
        gid: 0,
        egid: 0,
        sgid: 0,
        fsgid: 0,
        cap_sys_ptrace: true,
    };
}

/// A task's credentials. This kernel has no `set*id` calls and no set-ID
/// executables, so every task keeps the credentials init started with.
pub fn task_cred(_t: &Task) -> Cred {
    Cred::ROOT
}

/// Whether `caller` may control `task` (Linux's `__ptrace_may_access`):
/// its own thread group always; otherwise its real (or filesystem) user
/// and group must equal all three of the target's, or it must hold
/// `CAP_SYS_PTRACE`; and the target must still be dumpable (`task_mm` is
/// its address space, `None` for a kernel thread or an exited task).
/// EPERM when refused.
pub fn ptrace_may_access(caller: &Task, task: &Task, task_mm: Option<&Arc<Mm>>, mode: PtraceMode) -> Result<(), Errno> {
    if same_thread_group(caller, task) {
        return Ok(());
    }
    let cred = task_cred(caller);
    if !creds_allow(&cred, &task_cred(task), mode) {
        return Err(Errno::EPERM);
    }
    if !task_still_dumpable(task_mm, &cred) {
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
    let me = crate::sched::current();
    if ptrace_may_access(&me, task, Some(&mm), mode).is_err() {
        // Linux skips the check for the caller's own address space; asked
        // only after a refusal here, so that the common case takes no
        // second lock.
        let mine = me.mm.lock().as_ref().is_some_and(|m| Arc::ptr_eq(m, &mm));
        if !mine {
            return Err(Errno::EACCES);
        }
    }
    Ok(mm)
}

/// The credentials part of the check: the caller's real (or filesystem)
/// user and group equal each of the target's real, effective and saved
/// ones, or the caller holds `CAP_SYS_PTRACE`.
pub fn creds_allow(cred: &Cred, tcred: &Cred, mode: PtraceMode) -> bool {
    let (uid, gid) = match mode {
        PtraceMode::AttachRealCreds => (cred.uid, cred.gid),
        PtraceMode::AttachFsCreds => (cred.fsuid, cred.fsgid),
    };
    let same_ids = [tcred.euid, tcred.suid, tcred.uid].iter().all(|&u| u == uid)
        && [tcred.egid, tcred.sgid, tcred.gid].iter().all(|&g| g == gid);
    same_ids || cred.cap_sys_ptrace
}

/// Whether `a` and `b` are threads of one process.
fn same_thread_group(a: &Task, b: &Task) -> bool {
    match (a.process.get(), b.process.get()) {
        (Some(p), Some(q)) => Arc::ptr_eq(p, q),
        _ => core::ptr::eq(a, b),
    }
}

/// Linux's `task_still_dumpable`: an address space is dumpable by its
/// owner unless a set-ID exec or `PR_SET_DUMPABLE` said otherwise, which
/// nothing here can (so it is `SUID_DUMP_USER`); a task without one (a
/// kernel thread) needs `CAP_SYS_PTRACE`.
fn task_still_dumpable(task_mm: Option<&Arc<Mm>>, cred: &Cred) -> bool {
    task_mm.is_some() || cred.cap_sys_ptrace
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    /// A user's credentials, `uid`/`gid` in every slot, no capability.
    fn user(uid: u32, gid: u32) -> Cred {
        Cred {
            uid,
            euid: uid,
            suid: uid,
            fsuid: uid,
            gid,
            egid: gid,
            sgid: gid,
            fsgid: gid,
            cap_sys_ptrace: false,
        }
    }

    /// Linux's __ptrace_may_access credential rule: the caller's real (or
    /// filesystem) IDs must equal all of the target's real, effective and
    /// saved IDs, unless it holds CAP_SYS_PTRACE.
    #[kernel_test]
    fn ptrace_access_needs_all_the_targets_ids_or_cap_sys_ptrace() {
        let (a, b) = (user(1000, 100), user(1001, 100));
        for mode in [PtraceMode::AttachRealCreds, PtraceMode::AttachFsCreds] {
            assert!(creds_allow(&a, &a, mode), "same user");
            assert!(!creds_allow(&a, &b, mode), "another user");
            assert!(!creds_allow(&a, &Cred::ROOT, mode), "a user on root");
            assert!(creds_allow(&Cred::ROOT, &a, mode), "root (CAP_SYS_PTRACE) on a user");
            assert!(!creds_allow(&a, &user(1000, 101), mode), "another group");
            // A set-ID target: its saved (or effective) ID differs.
            assert!(!creds_allow(&a, &Cred { suid: 0, ..a }, mode), "saved uid 0");
            assert!(!creds_allow(&a, &Cred { egid: 0, ..a }, mode), "effective gid 0");
        }
        // Which of the caller's IDs speak: real for a system call, fs for
        // a /proc file.
        let fs_other = Cred { fsuid: 1001, ..a };
        assert!(creds_allow(&fs_other, &a, PtraceMode::AttachRealCreds));
        assert!(!creds_allow(&fs_other, &a, PtraceMode::AttachFsCreds));
        // The thread group itself is always allowed, and every task here
        // has root's credentials: the current task on itself.
        let me = crate::sched::current();
        assert_eq!(ptrace_may_access(&me, &me, None, PtraceMode::AttachRealCreds), Ok(()));
    }
}
