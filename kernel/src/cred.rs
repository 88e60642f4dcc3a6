//! Task credentials (Linux's `kernel/cred.c`): each task holds its own,
//! shared with copies until one changes (`prepare_creds`/`commit_creds`).
//! The rules for what may change and how live in `process_core::cred`,
//! host-tested; here they are read and installed.
//!
//! A task changes only its own credentials, so a new set is built from
//! the current one and swapped in whole: readers on other CPUs see the old
//! set or the new one, never a mixture.

use crate::sched::Task;
use alloc::sync::Arc;
pub use process_core::cred::{Cred, PtraceMode, NO_ID};

/// The credentials of `t` (`get_task_cred`).
pub fn task_cred(t: &Task) -> Arc<Cred> {
    t.cred.lock().clone()
}

/// `f` of the credentials of `t`, read in place (no reference taken):
/// `f` must not read another task's credentials, as two such reads nested
/// in opposite orders on two CPUs would wait for each other.
pub fn with_task_cred<R>(t: &Task, f: impl FnOnce(&Cred) -> R) -> R {
    f(&t.cred.lock())
}

/// The calling task's credentials (`current_cred`).
pub fn current_cred() -> Arc<Cred> {
    task_cred(&crate::sched::current())
}

/// Installs `new` as the calling task's credentials (`commit_creds`):
/// a change of effective or filesystem IDs, or new permitted
/// capabilities, makes its address space undumpable first, so that a
/// ptrace access check that reads the new credentials also sees the
/// address space closed.
pub fn commit_creds(new: Cred) {
    let me = crate::sched::current();
    let old = task_cred(&me);
    if process_core::cred::commit_resets_dumpable(&old, &new) {
        if let Some(mm) = me.mm.lock().as_ref() {
            mm.set_dumpable(uapi::capability::SUID_DUMP_DISABLE);
        }
    }
    *me.cred.lock() = Arc::new(new);
}
