//! Reading and writing the `PtRegs` frame saved at the top of a user task's
//! kernel stack.
#![allow(unsafe_code)] // The frame is raw memory on a kernel stack, written before the task first runs.

use arch::ptrace::PtRegs;

/// Writes `regs` as the frame at `addr` (the top of a new task's kernel
/// stack, which nothing else uses yet).
pub fn write_frame(addr: usize, regs: &PtRegs) {
    // SAFETY: `addr` is the PtRegs slot of a freshly allocated kernel stack
    // (aligned, in the linear map, owned by the new task only).
    unsafe { core::ptr::copy_nonoverlapping(regs, addr as *mut PtRegs, 1) };
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
        pstate: 0,
        orig_x0: 0,
        syscallno: arch::ptrace::NO_SYSCALL,
        stackframe: [0, 0],
    }
}
