//! Task switching: the callee-saved register context (Linux's
//! `cpu_switch_to`), the first return of a new task (`ret_from_fork`), and
//! the FP/SIMD state of user tasks, which the kernel itself never uses.

use aarch64_cpu::registers::{Readable, Writeable, TPIDR_EL0};
use core::cell::UnsafeCell;

/// Registers preserved across `cpu_switch_to` (AAPCS64 callee-saved, plus
/// sp and the resume address).
#[repr(C)]
#[derive(Default)]
pub struct CpuContext {
    x19_x28: [u64; 10],
    fp: u64,
    sp: u64,
    pc: u64,
}

/// A task's saved context, written only by `cpu_switch_to` on the CPU that
/// runs or last ran the task.
#[derive(Default)]
pub struct TaskContext(UnsafeCell<CpuContext>);

// SAFETY: the scheduler guarantees that at most one CPU switches into or out
// of a task at a time (its `on_cpu` flag), which is the only access.
unsafe impl Sync for TaskContext {}

impl TaskContext {
    /// A context that starts at `ret_from_fork` on `stack_top`. For a kernel
    /// thread, `kthread_fn(arg)` runs there; for a user task (`kthread_fn`
    /// = 0) the `PtRegs` just below `stack_top` are restored to EL0.
    pub fn new_task(stack_top: usize, kthread_fn: usize, arg: usize) -> TaskContext {
        let mut c = CpuContext {
            sp: stack_top as u64,
            pc: ret_from_fork as *const () as u64,
            ..Default::default()
        };
        c.x19_x28[0] = kthread_fn as u64;
        c.x19_x28[1] = arg as u64;
        TaskContext(UnsafeCell::new(c))
    }
}

extern "C" {
    fn cpu_switch_to(prev: *mut CpuContext, next: *const CpuContext);
    fn ret_from_fork();
}

/// Saves the running task's context into `prev` and resumes `next`.
///
/// # Safety
/// `prev` must be the context of the task running on this CPU and `next`
/// that of a task no CPU is running or switching, whose stack and context
/// stay valid; interrupts must be masked.
pub unsafe fn switch_to(prev: &TaskContext, next: &TaskContext) {
    // SAFETY: per the contract, no other CPU touches either context now.
    unsafe { cpu_switch_to(prev.0.get(), next.0.get()) }
}

core::arch::global_asm!(
    r#"
.section .text
.global cpu_switch_to
.type cpu_switch_to, %function
cpu_switch_to:
    mov     x10, sp
    stp     x19, x20, [x0, #0]
    stp     x21, x22, [x0, #16]
    stp     x23, x24, [x0, #32]
    stp     x25, x26, [x0, #48]
    stp     x27, x28, [x0, #64]
    stp     x29, x10, [x0, #80]
    str     x30, [x0, #96]
    ldp     x19, x20, [x1, #0]
    ldp     x21, x22, [x1, #16]
    ldp     x23, x24, [x1, #32]
    ldp     x25, x26, [x1, #48]
    ldp     x27, x28, [x1, #64]
    ldp     x29, x10, [x1, #80]
    ldr     x30, [x1, #96]
    mov     sp, x10
    ret

// First code of a new task: finish the switch, then either run the kernel
// thread function (x19) with its argument (x20), or return to user mode.
.global ret_from_fork
.type ret_from_fork, %function
ret_from_fork:
    bl      schedule_tail
    cbz     x19, 1f
    mov     x0, x20
    blr     x19
    bl      kthread_exit
1:  mov     x29, xzr
    b       ret_to_user
"#
);

/// The FP/SIMD registers of a user task (Linux's `user_fpsimd_state`).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FpsimdState {
    /// V0..V31.
    pub vregs: [u128; 32],
    /// FPSR.
    pub fpsr: u32,
    /// FPCR.
    pub fpcr: u32,
}

extern "C" {
    fn fpsimd_save_state(state: *mut FpsimdState);
    fn fpsimd_load_state(state: *const FpsimdState);
}

/// Saves this CPU's FP/SIMD registers into `state`.
pub fn fpsimd_save(state: &mut FpsimdState) {
    // SAFETY: writes exactly one FpsimdState through a valid &mut.
    unsafe { fpsimd_save_state(state) }
}

/// Loads this CPU's FP/SIMD registers from `state`.
pub fn fpsimd_load(state: &FpsimdState) {
    // SAFETY: reads one FpsimdState; the kernel never keeps values in
    // FP/SIMD registers, so replacing them breaks nothing of its own.
    unsafe { fpsimd_load_state(state) }
}

core::arch::global_asm!(
    r#"
.arch_extension fp
.arch_extension simd
.section .text
.global fpsimd_save_state
.type fpsimd_save_state, %function
fpsimd_save_state:
    stp     q0, q1, [x0, #32 * 0]
    stp     q2, q3, [x0, #32 * 1]
    stp     q4, q5, [x0, #32 * 2]
    stp     q6, q7, [x0, #32 * 3]
    stp     q8, q9, [x0, #32 * 4]
    stp     q10, q11, [x0, #32 * 5]
    stp     q12, q13, [x0, #32 * 6]
    stp     q14, q15, [x0, #32 * 7]
    stp     q16, q17, [x0, #32 * 8]
    stp     q18, q19, [x0, #32 * 9]
    stp     q20, q21, [x0, #32 * 10]
    stp     q22, q23, [x0, #32 * 11]
    stp     q24, q25, [x0, #32 * 12]
    stp     q26, q27, [x0, #32 * 13]
    stp     q28, q29, [x0, #32 * 14]
    stp     q30, q31, [x0, #32 * 15]
    mrs     x1, fpsr
    mrs     x2, fpcr
    add     x0, x0, #512
    stp     w1, w2, [x0]
    ret

.global fpsimd_load_state
.type fpsimd_load_state, %function
fpsimd_load_state:
    ldp     q0, q1, [x0, #32 * 0]
    ldp     q2, q3, [x0, #32 * 1]
    ldp     q4, q5, [x0, #32 * 2]
    ldp     q6, q7, [x0, #32 * 3]
    ldp     q8, q9, [x0, #32 * 4]
    ldp     q10, q11, [x0, #32 * 5]
    ldp     q12, q13, [x0, #32 * 6]
    ldp     q14, q15, [x0, #32 * 7]
    ldp     q16, q17, [x0, #32 * 8]
    ldp     q18, q19, [x0, #32 * 9]
    ldp     q20, q21, [x0, #32 * 10]
    ldp     q22, q23, [x0, #32 * 11]
    ldp     q24, q25, [x0, #32 * 12]
    ldp     q26, q27, [x0, #32 * 13]
    ldp     q28, q29, [x0, #32 * 14]
    ldp     q30, q31, [x0, #32 * 15]
    add     x0, x0, #512
    ldp     w1, w2, [x0]
    msr     fpsr, x1
    msr     fpcr, x2
    ret
"#
);

/// Sets TPIDR_EL0, the user thread pointer.
pub fn set_tls(v: u64) {
    TPIDR_EL0.set(v);
}

/// Reads TPIDR_EL0.
pub fn get_tls() -> u64 {
    TPIDR_EL0.get()
}
