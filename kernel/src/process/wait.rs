//! `wait4` and `waitid`: reaping children and collecting stop/continue
//! reports, with Linux's status encodings.

use super::{current_process, ChildEvent, Process};
use crate::errno::Errno;
use crate::sched::wait::WaitError;
use core::sync::atomic::Ordering;

pub use process_core::{WaitWho, WCONTINUED, WEXITED, WNOHANG, WNOWAIT, WUNTRACED};

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
        ChildEvent::Stopped(sig) => process_core::stopped(sig),
        ChildEvent::Continued => process_core::CONTINUED,
        ChildEvent::Traced(code) => process_core::ptrace_stopped(code),
    }
}

fn selected(who: WaitWho, options: u32, c: &Process) -> bool {
    who.selects(c.pid, c.pgid.load(Ordering::Relaxed))
        && process_core::eligible_by_exit_signal(options, c.exit_signal())
}

/// Waits for a child event. `options` are waitid's (wait4 adds WEXITED):
/// WEXITED/WUNTRACED/WCONTINUED select which events count, WNOHANG
/// returns `Ok(None)` if none is ready, WNOWAIT leaves the child waitable,
/// __WALL/__WCLONE select by exit signal.
pub fn do_wait(who: WaitWho, options: u32) -> Result<Option<Reaped>, Errno> {
    let exited = options & WEXITED != 0;
    let stopped = options & WUNTRACED != 0;
    let continued = options & WCONTINUED != 0;
    let nohang = options & WNOHANG != 0;
    let keep = options & WNOWAIT != 0;
    crate::trace::tracepoint::sched::trace_sched_process_wait(who);
    let me = current_process();
    loop {
        // The children scans below unmask interrupts once, not once per
        // lock (a zombie found is reaped unmasked).
        let irqs = crate::sync::IrqsMasked::new();
        let mut found_any = false;
        if exited {
            // Claim a zombie under the children lock (lock order: a
            // parent's `children`, then a child's `exit_status`): removing
            // it from the list is what makes exactly one waiter reap it.
            let mut children = me.children.lock();
            found_any = children.iter().any(|c| selected(who, options, c));
            let zombie = children
                .iter()
                .position(|c| selected(who, options, c) && c.is_reapable());
            if let Some(i) = zombie {
                let c = if keep { children[i].clone() } else { children.remove(i) };
                drop(children);
                drop(irqs);
                let status = c.exit_status.lock().unwrap_or(0);
                if !keep {
                    crate::cputime::reap_cputime(&me, &c);
                    super::forget_zombie(&c);
                }
                return Ok(Some(Reaped {
                    pid: c.pid,
                    event: ChildEvent::Exited(status),
                    times: crate::cputime::rusage_both(&c),
                }));
            }
        }
        // Only a child with a stop or continue to report is taken out of
        // the list (no copy of it: a wait allocates nothing); whether we
        // trace it is asked outside the list's lock, which comes after a
        // process's `threads`.
        let mut next = 0;
        loop {
            let c = {
                let children = me.children.lock();
                let mut reporting = None;
                while let Some(c) = children.get(next) {
                    next += 1;
                    if !selected(who, options, c) {
                        continue;
                    }
                    found_any = true;
                    // A wait for neither (a plain wait4) leaves the
                    // child's event lock alone.
                    let has_report = (stopped || continued)
                        && match *c.wait_event.lock() {
                            Some(ChildEvent::Stopped(_)) => stopped,
                            Some(ChildEvent::Continued) => continued,
                            _ => false,
                        };
                    if has_report {
                        reporting = Some(c.clone());
                        break;
                    }
                }
                reporting
            };
            let Some(c) = c else { break };
            let c = &c;
            // A child we trace reports its stops through ptrace.
            if crate::ptrace::traced_by(c, &me) {
                continue;
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
        drop(irqs);
        let tracees = crate::ptrace::wait_tracees(who, options);
        found_any |= tracees.found_any;
        if let Some((pid, event, task)) = tracees.report {
            let times = task
                .process
                .get()
                .map(|p| crate::cputime::rusage_both(p))
                .unwrap_or_default();
            return Ok(Some(Reaped { pid, event, times }));
        }
        if !found_any {
            return Err(Errno::ECHILD);
        }
        if nohang {
            return Ok(None);
        }
        let ready = || {
            // One masking for all the locks of the check.
            let _irqs = crate::sync::IrqsMasked::new();
            let (any_tracee, tracee_ready) = crate::ptrace::wait_tracees_ready(who, options);
            if tracee_ready {
                return true;
            }
            // One pass under one lock: a child with something to report,
            // or no selected child (nor tracee) at all.
            let children = me.children.lock();
            let mut any_child = false;
            for c in children.iter().filter(|c| selected(who, options, c)) {
                any_child = true;
                if exited && c.is_reapable() {
                    return true;
                }
                if (stopped || continued)
                    && match *c.wait_event.lock() {
                        Some(ChildEvent::Stopped(_)) => stopped,
                        Some(ChildEvent::Continued) => continued,
                        _ => false,
                    }
                {
                    return true;
                }
            }
            !any_tracee && !any_child
        };
        match me.child_wait.wait_event(true, ready) {
            Ok(()) => continue,
            // A child's exit queues SIGCHLD before it wakes its parent: as
            // Linux's do_wait, what the children have to report is looked
            // at again before the signal ends the wait.
            Err(WaitError::Interrupted) if ready() => continue,
            Err(WaitError::Interrupted) => return Err(Errno::ERESTARTSYS),
        }
    }
}

pub use process_core::{check_wait4_options, check_waitid_options};
