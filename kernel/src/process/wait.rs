//! `wait4` and `waitid`: reaping children and collecting stop/continue
//! reports, with Linux's status encodings.

use super::{current_process, release_zombie, ChildEvent, Process};
use crate::errno::Errno;
use crate::sched::wait::WaitError;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

/// wait options.
pub const WNOHANG: u32 = 1;
/// Report stopped children.
pub const WUNTRACED: u32 = 2;
/// Report continued children.
pub const WCONTINUED: u32 = 8;
/// waitid: report exited children.
pub const WEXITED: u32 = 4;
/// waitid: leave the child waitable.
pub const WNOWAIT: u32 = 0x0100_0000;
const WNOTHREAD: u32 = 0x2000_0000;
const WALL: u32 = 0x4000_0000;
const WCLONE: u32 = 0x8000_0000;

/// Which children a wait selects.
#[derive(Clone, Copy, Debug)]
pub enum WaitWho {
    /// Any child.
    Any,
    /// The child with this PID.
    Pid(u32),
    /// Children in this process group.
    Pgid(u32),
}

/// One collected child: PID, event, and the child's UID (always 0 here).
#[derive(Clone, Copy, Debug)]
pub struct Reaped {
    /// The child.
    pub pid: u32,
    /// What happened.
    pub event: ChildEvent,
    /// The child's CPU time and its reaped children's (wait4's rusage).
    pub times: crate::cputime::Cputime,
}

/// The `wait4` status word for an event.
pub fn status_word(e: ChildEvent) -> i32 {
    match e {
        ChildEvent::Exited(s) => s,
        ChildEvent::Stopped(sig) => ((sig as i32) << 8) | 0x7f,
        ChildEvent::Continued => 0xffff,
    }
}

fn selected(who: WaitWho, c: &Process) -> bool {
    match who {
        WaitWho::Any => true,
        WaitWho::Pid(p) => c.pid == p,
        WaitWho::Pgid(g) => c.pgid.load(Ordering::Relaxed) == g,
    }
}

/// Waits for a child event. `exited`/`stopped`/`continued` select which
/// events count; `nohang` returns `Ok(None)` if none is ready; `keep`
/// leaves the child waitable (WNOWAIT).
pub fn do_wait(
    who: WaitWho,
    exited: bool,
    stopped: bool,
    continued: bool,
    nohang: bool,
    keep: bool,
) -> Result<Option<Reaped>, Errno> {
    let me = current_process();
    loop {
        let mut found_any = false;
        let children: alloc::vec::Vec<Arc<Process>> = me.children.lock().clone();
        for c in children.iter().filter(|c| selected(who, c)) {
            found_any = true;
            if exited {
                if let Some(status) = *c.exit_status.lock() {
                    if !keep {
                        release_zombie(&me, c);
                    }
                    return Ok(Some(Reaped {
                        pid: c.pid,
                        event: ChildEvent::Exited(status),
                        times: crate::cputime::rusage_both(c),
                    }));
                }
            }
            let mut ev = c.wait_event.lock();
            match *ev {
                Some(ChildEvent::Stopped(sig)) if stopped => {
                    if !keep {
                        *ev = None;
                    }
                    return Ok(Some(Reaped {
                        pid: c.pid,
                        event: ChildEvent::Stopped(sig),
                        times: crate::cputime::rusage_both(c),
                    }));
                }
                Some(ChildEvent::Continued) if continued => {
                    if !keep {
                        *ev = None;
                    }
                    return Ok(Some(Reaped {
                        pid: c.pid,
                        event: ChildEvent::Continued,
                        times: crate::cputime::rusage_both(c),
                    }));
                }
                _ => {}
            }
        }
        if !found_any {
            return Err(Errno::ECHILD);
        }
        if nohang {
            return Ok(None);
        }
        let ready = || {
            me.children.lock().iter().filter(|c| selected(who, c)).any(|c| {
                (exited && c.is_zombie())
                    || matches!(*c.wait_event.lock(), Some(ChildEvent::Stopped(_)) if stopped)
                    || matches!(*c.wait_event.lock(), Some(ChildEvent::Continued) if continued)
            }) || !me.children.lock().iter().any(|c| selected(who, c))
        };
        match me.child_wait.wait_event(true, ready) {
            Ok(()) => continue,
            Err(WaitError::Interrupted) => return Err(Errno::ERESTARTSYS),
        }
    }
}

/// Validates wait4 options.
pub fn check_wait4_options(options: u32) -> Result<(), Errno> {
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WNOTHREAD | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Validates waitid options.
pub fn check_waitid_options(options: u32) -> Result<(), Errno> {
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WEXITED | WNOWAIT | WNOTHREAD | WALL | WCLONE) != 0
        || options & (WEXITED | WUNTRACED | WCONTINUED) == 0
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}
