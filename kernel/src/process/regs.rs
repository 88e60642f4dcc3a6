//! Reading and writing the `PtRegs` frame saved at the top of a user task's
//! kernel stack.
#![allow(unsafe_code)] // The frame is raw memory on a kernel stack, written before the task first runs.

use arch::ptrace::PtRegs;

/// Writes `regs` as the frame at `addr`: the top of a new task's kernel
/// stack, which nothing else uses yet, or a stopped tracee's saved
/// registers changed by its tracer under the tracee's `regs_lock`.
pub fn write_frame(addr: usize, regs: &PtRegs) {
    // SAFETY: `addr` is the PtRegs slot of a kernel stack that is allocated
    // (a new task's, or a traced task the caller holds an `Arc` of), aligned
    // and mapped; its owner either has not run yet or is in a ptrace stop
    // and does not touch the frame while the tracer holds `regs_lock`.
    unsafe { core::ptr::write_volatile(addr as *mut PtRegs, clone_regs(regs)) };
}

/// A copy of the frame at `addr`: a stopped tracee's saved user registers,
/// read by its tracer (`addr` is `Task::user_regs_addr` of a task the
/// caller holds, so the stack stays allocated).
pub fn read_frame(addr: usize) -> PtRegs {
    // SAFETY: `addr` is the PtRegs slot at the top of a live task's kernel
    // stack (aligned, mapped while the task exists, and the caller holds an
    // `Arc` of it); the task is in a ptrace stop and does not touch the
    // frame while its tracer holds `regs_lock`.
    unsafe { core::ptr::read_volatile(addr as *const PtRegs) }
}

/// A copy of `regs` (for fork).
pub fn clone_regs(regs: &PtRegs) -> PtRegs {
    PtRegs {
        regs: regs.regs,
        sp: regs.sp,
        pc: regs.pc,
        pstate: regs.pstate,
        orig_x0: regs.orig_x0,
        syscallno: regs.syscallno,
        stackframe: [0, 0],
    }
}

/// Registers for a task entering a new program at `pc` with stack `sp`.
pub fn start_thread(pc: u64, sp: u64) -> PtRegs {
    PtRegs {
        regs: [0; 31],
        sp,
        pc,
        // PSTATE.SSBS set, as Linux's spectre_v4_enable_task_mitigation()
        // leaves a new program when no Spectre-v4 mitigation is in force
        // (none is here); a tracer sees it at the exec stop, and a CPU
        // without FEAT_SSBS drops it at the first return.
        pstate: arch::ptrace::PSR::SSBS::SET.value,
        orig_x0: 0,
        syscallno: arch::ptrace::NO_SYSCALL,
        stackframe: [0, 0],
    }
}
