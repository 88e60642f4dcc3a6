//! PTRACE_SINGLESTEP's side of a resume (Linux's ptrace_resume calling
//! arm64's user_enable_single_step / user_disable_single_step): the step
//! is armed in the task's debug state and, on first arming, SPSR.SS is set
//! in its saved frame; CONT, SYSCALL and DETACH disarm it.

use super::*;
use crate::debug::hw_breakpoint::{user_disable_single_step, user_enable_single_step};
use crate::process::regs;

/// Arms or disarms EL0 single-step for the stopped tracee `child`.
pub(super) fn set_single_step(child: &Task, step: bool) {
    if !step {
        user_disable_single_step(child);
        return;
    }
    // Already armed: only a first arming touches the frame (as Linux's
    // test_and_set of TIF_SINGLESTEP); each step report re-sets SPSR.SS.
    // A step after a step then copies no frame in and out.
    if child.debug.single_step() {
        return;
    }
    let Some(addr) = child.user_regs_addr() else {
        return;
    };
    let _guard = child.ptrace.regs_lock.lock();
    let mut frame = regs::read_frame(addr);
    user_enable_single_step(child, &mut frame);
    regs::write_frame(addr, &frame);
}

/// Linux's signal_delivered with `stepping`: a handler's frame is set up
/// while single-stepping, so the task stops (SIGTRAP, si_code SIGTRAP) at
/// the handler's first instruction, which the next step runs.
pub fn signal_delivered_stepping(regs: &mut PtRegs) {
    let me = sched::current();
    if !me.debug.single_step() {
        return;
    }
    regs.pstate = crate::debug::hw_breakpoint::user_regs_reset_single_step(&me, regs.pstate);
    drop(me);
    ptrace_do_notify(SIGTRAP, SIGTRAP, CLD_TRAPPED, 0, Some(regs));
}
