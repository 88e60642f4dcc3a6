//! The exception vector table (ARM ARM D1.10.2) and the code that saves and
//! restores a `PtRegs` frame around the kernel's handlers, which the
//! kernel defines under Linux's names (`el1h_64_sync_handler`, ...).

use crate::memory::KSTACK_SHIFT;
use crate::ptrace::{NO_SYSCALL, PT_REGS_SIZE, S_PC, S_SP, S_STACKFRAME, S_SYSCALLNO};

/// Why an invalid vector was taken, passed to `bad_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum BadMode {
    /// Synchronous exception.
    Sync = 0,
    /// IRQ.
    Irq = 1,
    /// FIQ.
    Fiq = 2,
    /// SError.
    Error = 3,
}

impl BadMode {
    /// The name of the vector kind.
    pub fn name(raw: u64) -> &'static str {
        match raw & 3 {
            0 => "Synchronous Abort",
            1 => "IRQ",
            2 => "FIQ",
            _ => "SError",
        }
    }
}

core::arch::global_asm!(
    r#"
// Saves the frame that the vector entry reserved at sp.
.macro kernel_entry el
    stp     x0, x1, [sp, #16 * 0]
    stp     x2, x3, [sp, #16 * 1]
    stp     x4, x5, [sp, #16 * 2]
    stp     x6, x7, [sp, #16 * 3]
    stp     x8, x9, [sp, #16 * 4]
    stp     x10, x11, [sp, #16 * 5]
    stp     x12, x13, [sp, #16 * 6]
    stp     x14, x15, [sp, #16 * 7]
    stp     x16, x17, [sp, #16 * 8]
    stp     x18, x19, [sp, #16 * 9]
    stp     x20, x21, [sp, #16 * 10]
    stp     x22, x23, [sp, #16 * 11]
    stp     x24, x25, [sp, #16 * 12]
    stp     x26, x27, [sp, #16 * 13]
    stp     x28, x29, [sp, #16 * 14]
    .if \el == 0
    mrs     x21, sp_el0
    .else
    add     x21, sp, #{frame}
    .endif
    mrs     x22, elr_el1
    mrs     x23, spsr_el1
    stp     x30, x21, [sp, #{s_sp} - 8]
    stp     x22, x23, [sp, #{s_pc}]
    mov     x0, #{no_syscall}
    str     x0, [sp, #{s_syscallno}]
    .if \el == 0
    stp     xzr, xzr, [sp, #{s_stackframe}]
    .else
    stp     x29, x22, [sp, #{s_stackframe}]
    .endif
    add     x29, sp, #{s_stackframe}
.endm

.macro kernel_exit el
    ldp     x21, x22, [sp, #{s_pc}]
    .if \el == 0
    ldr     x23, [sp, #{s_sp}]
    msr     sp_el0, x23
    .endif
    msr     elr_el1, x21
    msr     spsr_el1, x22
    ldp     x0, x1, [sp, #16 * 0]
    ldp     x2, x3, [sp, #16 * 1]
    ldp     x4, x5, [sp, #16 * 2]
    ldp     x6, x7, [sp, #16 * 3]
    ldp     x8, x9, [sp, #16 * 4]
    ldp     x10, x11, [sp, #16 * 5]
    ldp     x12, x13, [sp, #16 * 6]
    ldp     x14, x15, [sp, #16 * 7]
    ldp     x16, x17, [sp, #16 * 8]
    ldp     x18, x19, [sp, #16 * 9]
    ldp     x20, x21, [sp, #16 * 10]
    ldp     x22, x23, [sp, #16 * 11]
    ldp     x24, x25, [sp, #16 * 12]
    ldp     x26, x27, [sp, #16 * 13]
    ldp     x28, x29, [sp, #16 * 14]
    ldr     x30, [sp, #{s_sp} - 8]
    add     sp, sp, #{frame}
    eret
.endm

// A vector entry has 32 instructions: reserve the frame, check that SP
// is still inside a kernel stack, and branch (Linux's kernel_ventry).
.macro ventry label
    .balign 128
    sub     sp, sp, #{frame}
    // Bit KSTACK_SHIFT of SP is clear on every kernel stack and set just
    // below one. Test it with no free register: fold x0 into sp and back.
    add     sp, sp, x0                  // sp' = sp + x0
    sub     x0, sp, x0                  // x0' = sp
    tbnz    x0, #{kstack_shift}, 0f
    sub     x0, sp, x0                  // x0 restored
    sub     sp, sp, x0                  // sp restored
    b       \label
0:
    // Overflowed, or an exception while on the overflow stack. Nothing
    // returns to EL0 from here, so its thread registers are scratch.
    msr     tpidr_el0, x0               // the SP that overflowed
    sub     x0, sp, x0
    msr     tpidrro_el0, x0             // x0
    // This CPU's overflow stack: overflow_stack + (cpu + 1) * size.
    mrs     x0, tpidr_el1
    add     x0, x0, #1
    lsl     x0, x0, #{ovf_shift}
    mov     sp, x0
    adrp    x0, overflow_stack
    add     x0, x0, :lo12:overflow_stack
    add     sp, sp, x0
    // Already on the overflow stack (a fault while reporting)? Go on there.
    mrs     x0, tpidr_el0
    sub     x0, sp, x0
    tst     x0, #~({ovf_size} - 1)
    b.ne    __bad_stack
    sub     sp, sp, x0
    mrs     x0, tpidrro_el0
    b       \label
.endm

.section .entry.text, "ax"
.balign 2048
.global vectors
.type vectors, %function
vectors:
    ventry  el1t_64_sync_invalid
    ventry  el1t_64_irq_invalid
    ventry  el1t_64_fiq_invalid
    ventry  el1t_64_error_invalid
    ventry  el1h_64_sync
    ventry  el1h_64_irq
    ventry  el1h_64_fiq_invalid
    ventry  el1h_64_error_invalid
    ventry  el0t_64_sync
    ventry  el0t_64_irq
    ventry  el0t_64_fiq_invalid
    ventry  el0t_64_error_invalid
    ventry  el0t_32_sync_invalid
    ventry  el0t_32_irq_invalid
    ventry  el0t_32_fiq_invalid
    ventry  el0t_32_error_invalid

.macro entry_handler el, name, ret
.type \name, %function
\name:
    kernel_entry \el
    mov     x0, sp
    bl      \name\()_handler
    b       \ret
.endm

.macro invalid_entry el, reason, name
.type \name, %function
\name:
    kernel_entry \el
    mov     x0, sp
    mov     x1, #\reason
    mrs     x2, esr_el1
    bl      bad_mode
    b       .
.endm

entry_handler 1, el1h_64_sync, ret_to_kernel
entry_handler 1, el1h_64_irq, ret_to_kernel
// The synchronous handler does the work of the return to user mode
// itself (Linux's el0_svc and friends call exit_to_user_mode in C): a
// system call's fast path then tests one key for its exit and that work.
entry_handler 0, el0t_64_sync, .Lkernel_exit_el0
entry_handler 0, el0t_64_irq, ret_to_user

invalid_entry 1, 0, el1t_64_sync_invalid
invalid_entry 1, 1, el1t_64_irq_invalid
invalid_entry 1, 2, el1t_64_fiq_invalid
invalid_entry 1, 3, el1t_64_error_invalid
invalid_entry 1, 2, el1h_64_fiq_invalid
invalid_entry 1, 3, el1h_64_error_invalid
invalid_entry 0, 2, el0t_64_fiq_invalid
invalid_entry 0, 3, el0t_64_error_invalid
invalid_entry 0, 0, el0t_32_sync_invalid
invalid_entry 0, 1, el0t_32_irq_invalid
invalid_entry 0, 2, el0t_32_fiq_invalid
invalid_entry 0, 3, el0t_32_error_invalid

// SP ran off its kernel stack; we are on this CPU's overflow stack with
// the old SP in TPIDR_EL0 and x0 in TPIDRRO_EL0. Save a frame of the
// interrupted context and report (Linux's __bad_stack).
.type __bad_stack, %function
__bad_stack:
    mrs     x0, tpidrro_el0
    sub     sp, sp, #{frame}
    kernel_entry 1
    mrs     x0, tpidr_el0
    add     x0, x0, #{frame}
    str     x0, [sp, #{s_sp}]
    mov     x0, sp
    bl      handle_bad_stack
    b       .

.section .bss..overflow_stack, "aw", @nobits
.balign 16
.global overflow_stack
overflow_stack:
    .space  {ovf_size} * {max_cpus}

.section .entry.text, "ax"
.global ret_to_kernel
.type ret_to_kernel, %function
ret_to_kernel:
    kernel_exit 1

// Returns to EL0 from the frame at sp; also the first return of a new
// user task.
.global ret_to_user
.type ret_to_user, %function
ret_to_user:
    msr     daifset, #0xf
    mov     x0, sp
    bl      exit_to_user_mode
// Where a handler that did exit_to_user_mode's work, with every DAIF bit
// masked, returns.
.Lkernel_exit_el0:
    kernel_exit 0
"#,
    frame = const PT_REGS_SIZE,
    s_sp = const S_SP,
    s_pc = const S_PC,
    s_syscallno = const S_SYSCALLNO,
    s_stackframe = const S_STACKFRAME,
    no_syscall = const NO_SYSCALL,
    kstack_shift = const KSTACK_SHIFT,
    ovf_shift = const OVERFLOW_STACK_SHIFT,
    ovf_size = const OVERFLOW_STACK_SIZE,
    max_cpus = const MAX_CPUS,
);

/// log2 of `OVERFLOW_STACK_SIZE`.
const OVERFLOW_STACK_SHIFT: usize = 14;
/// Each CPU's stack for reporting a kernel stack overflow: the overflow
/// handler prints registers and panics, which needs a few KiB.
pub const OVERFLOW_STACK_SIZE: usize = 1 << OVERFLOW_STACK_SHIFT;
/// CPUs that have an overflow stack (logical numbers, TPIDR_EL1, below it).
pub const MAX_CPUS: usize = 8;

/// Bounds of `cpu`'s overflow stack.
pub fn overflow_stack_bounds(cpu: usize) -> (usize, usize) {
    extern "C" {
        static overflow_stack: u8;
    }
    let base = core::ptr::addr_of!(overflow_stack) as usize + cpu * OVERFLOW_STACK_SIZE;
    (base, base + OVERFLOW_STACK_SIZE)
}

/// Bounds of the exception entry code, which kprobes must never touch.
pub fn entry_text_range() -> (usize, usize) {
    extern "C" {
        static __entry_text_start: u8;
        static __entry_text_end: u8;
    }
    (
        core::ptr::addr_of!(__entry_text_start) as usize,
        core::ptr::addr_of!(__entry_text_end) as usize,
    )
}
