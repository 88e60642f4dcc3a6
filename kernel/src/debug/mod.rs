//! The debug-fault table and the break/step hooks (Linux's
//! arch/arm64/kernel/debug-monitors.c): debug exceptions from EL1 and EL0
//! dispatch through `debug_fault_info`, indexed by `DBG_ESR_EVT(esr)`, to
//! `brk_handler` and `single_step_handler`. The kernel's own BRK
//! immediates (kprobes, kretprobes, BUG) are dispatched directly; other
//! users register hooks, user and kernel separately.

crate::notrace_module!();

pub mod bug;
pub mod hw_breakpoint;

use alloc::vec::Vec;
use arch::debug_monitors::{dbg_esr_evt, esr_brk_comment, evt};
use arch::ptrace::PtRegs;
use spin::RwLock;

/// What a hook did with the exception.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookResult {
    /// Handled: return to the (possibly changed) context.
    Handled,
    /// Not this hook's: keep looking.
    NotHandled,
}

/// A hook for `BRK #imm` where `(comment & !mask) == imm`.
#[derive(Clone, Copy)]
pub struct BreakHook {
    /// Immediate to match.
    pub imm: u16,
    /// Bits of the immediate that may vary.
    pub mask: u16,
    /// The handler.
    pub func: fn(&mut PtRegs, u64) -> HookResult,
}

/// A hook for software-step exceptions.
#[derive(Clone, Copy)]
pub struct StepHook {
    /// The handler.
    pub func: fn(&mut PtRegs, u64) -> HookResult,
}

static USER_BREAK_HOOKS: RwLock<Vec<BreakHook>> = RwLock::new(Vec::new());
static KERNEL_BREAK_HOOKS: RwLock<Vec<BreakHook>> = RwLock::new(Vec::new());
static USER_STEP_HOOKS: RwLock<Vec<StepHook>> = RwLock::new(Vec::new());
static KERNEL_STEP_HOOKS: RwLock<Vec<StepHook>> = RwLock::new(Vec::new());

/// Runs `f` on a hook list with interrupts masked, so that an exception
/// taken on this CPU (which reads the list) cannot interrupt the update.
fn update<T>(list: &RwLock<Vec<T>>, f: impl FnOnce(&mut Vec<T>)) {
    let flags = arch::cpu::local_irq_save();
    f(&mut list.write());
    arch::cpu::local_irq_restore(flags);
}

/// Adds a hook for kernel BRKs.
pub fn register_kernel_break_hook(h: BreakHook) {
    update(&KERNEL_BREAK_HOOKS, |l| l.push(h));
}

/// Removes a kernel BRK hook.
pub fn unregister_kernel_break_hook(h: BreakHook) {
    update(&KERNEL_BREAK_HOOKS, |l| {
        l.retain(|x| !(x.imm == h.imm && x.mask == h.mask && x.func as usize == h.func as usize))
    });
}

/// Adds a hook for user BRKs.
pub fn register_user_break_hook(h: BreakHook) {
    update(&USER_BREAK_HOOKS, |l| l.push(h));
}

/// Removes a user BRK hook.
pub fn unregister_user_break_hook(h: BreakHook) {
    update(&USER_BREAK_HOOKS, |l| {
        l.retain(|x| !(x.imm == h.imm && x.mask == h.mask && x.func as usize == h.func as usize))
    });
}

/// Adds a hook for kernel software steps.
pub fn register_kernel_step_hook(h: StepHook) {
    update(&KERNEL_STEP_HOOKS, |l| l.push(h));
}

/// Adds a hook for user software steps.
pub fn register_user_step_hook(h: StepHook) {
    update(&USER_STEP_HOOKS, |l| l.push(h));
}

/// Removes a user step hook.
pub fn unregister_user_step_hook(h: StepHook) {
    update(&USER_STEP_HOOKS, |l| l.retain(|x| x.func as usize != h.func as usize));
}

/// The handler of one of the kernel's own BRK immediates, which are fixed
/// at build time: dispatched by a match, without a lock or a list walk
/// (Linux registers these as static break hooks; a lean hit path is worth
/// more here than one mechanism for all).
fn kernel_brk_fixed(comment: u16) -> Option<fn(&mut PtRegs, u64) -> HookResult> {
    use arch::debug_monitors::{BUG_BRK_IMM, KPROBES_BRK_IMM, KPROBES_BRK_SS_IMM};
    Some(match comment {
        KPROBES_BRK_IMM => crate::kprobes::kprobe_breakpoint_handler,
        KPROBES_BRK_SS_IMM => crate::kprobes::kprobe_breakpoint_ss_handler,
        BUG_BRK_IMM => bug::bug_handler,
        _ => return None,
    })
}

/// `brk_handler`: the kernel's own immediates go straight to their
/// handlers; otherwise the first registered hook whose immediate matches
/// handles it.
fn brk_handler(_addr: u64, esr: u64, regs: &mut PtRegs) -> bool {
    let comment = esr_brk_comment(esr);
    if !regs.user_mode() {
        if let Some(handler) = kernel_brk_fixed(comment) {
            if handler(regs, esr) == HookResult::Handled {
                return true;
            }
        }
    }
    let list = if regs.user_mode() {
        &USER_BREAK_HOOKS
    } else {
        &KERNEL_BREAK_HOOKS
    };
    // Hooks run under the read guard, which nests (a probe hit inside a
    // hook) and never allocates; updates wait with interrupts masked.
    let hooks = list.read();
    hooks
        .iter()
        .filter(|h| comment & !h.mask == h.imm)
        .any(|h| (h.func)(regs, esr) == HookResult::Handled)
}

/// `single_step_handler`: the step hooks, and for EL0 with none claiming
/// it, SIGTRAP/TRAP_TRACE to the task with the step left armed.
fn single_step_handler(_addr: u64, esr: u64, regs: &mut PtRegs) -> bool {
    if regs.user_mode() {
        let claimed = USER_STEP_HOOKS
            .read()
            .iter()
            .any(|h| (h.func)(regs, esr) == HookResult::Handled);
        if !claimed {
            hw_breakpoint::user_step_report(regs);
        }
        return true;
    }
    let list = if regs.user_mode() {
        &USER_STEP_HOOKS
    } else {
        &KERNEL_STEP_HOOKS
    };
    let hooks = list.read();
    hooks.iter().any(|h| (h.func)(regs, esr) == HookResult::Handled)
}

fn no_handler(_addr: u64, _esr: u64, _regs: &mut PtRegs) -> bool {
    false
}

/// One entry of the debug-fault table (Linux's `struct fault_info`).
pub struct DebugFaultInfo {
    /// Returns true if it handled the exception.
    pub handler: fn(u64, u64, &mut PtRegs) -> bool,
    /// Signal for an unhandled user exception.
    pub sig: u32,
    /// Its si_code.
    pub code: i32,
    /// Name, for oopses.
    pub name: &'static str,
}

use crate::signal::{code::*, SIGTRAP};

/// `debug_fault_info`, indexed by `DBG_ESR_EVT(esr)`.
pub static DEBUG_FAULT_INFO: [DebugFaultInfo; 8] = [
    DebugFaultInfo {
        handler: hw_breakpoint::breakpoint_handler,
        sig: SIGTRAP,
        code: TRAP_HWBKPT,
        name: "hw-breakpoint handler",
    },
    DebugFaultInfo {
        handler: single_step_handler,
        sig: SIGTRAP,
        code: TRAP_TRACE,
        name: "single-step handler",
    },
    DebugFaultInfo {
        handler: hw_breakpoint::watchpoint_handler,
        sig: SIGTRAP,
        code: TRAP_HWBKPT,
        name: "hw-watchpoint handler",
    },
    DebugFaultInfo {
        handler: no_handler,
        sig: SIGTRAP,
        code: TRAP_UNK,
        name: "unknown 3",
    },
    DebugFaultInfo {
        handler: no_handler,
        sig: SIGTRAP,
        code: TRAP_BRKPT,
        name: "aarch32 BKPT",
    },
    DebugFaultInfo {
        handler: no_handler,
        sig: SIGTRAP,
        code: TRAP_UNK,
        name: "aarch32 vector catch",
    },
    DebugFaultInfo {
        handler: brk_handler,
        sig: SIGTRAP,
        code: TRAP_BRKPT,
        name: "BRK handler",
    },
    DebugFaultInfo {
        handler: no_handler,
        sig: SIGTRAP,
        code: TRAP_UNK,
        name: "unknown 7",
    },
];

/// Entry for every debug exception (Linux's `do_debug_exception`). `addr`
/// is FAR for watchpoints, else the PC.
pub fn do_debug_exception(addr: u64, esr: u64, regs: &mut PtRegs) {
    let idx = dbg_esr_evt(esr);
    let inf = &DEBUG_FAULT_INFO[idx];
    if (inf.handler)(addr, esr, regs) {
        return;
    }
    if regs.user_mode() {
        let at = if idx == evt::HWWP { addr } else { regs.pc };
        crate::signal::force_sig_fault(inf.sig, inf.code, at);
        return;
    }
    use core::fmt::Write;
    let mut out = crate::printk::console_log_sink();
    if idx == evt::BRK {
        let _ = writeln!(
            out,
            "Unexpected kernel BRK exception at EL1, BRK #0x{:03x}",
            esr_brk_comment(esr)
        );
    }
    crate::oops::die(inf.name, regs, esr)
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn the_kernels_own_brk_immediates_bypass_the_hook_lists() {
        use arch::debug_monitors::{BUG_BRK_IMM, KPROBES_BRK_IMM, KPROBES_BRK_SS_IMM};
        for imm in [KPROBES_BRK_IMM, KPROBES_BRK_SS_IMM, BUG_BRK_IMM] {
            assert!(kernel_brk_fixed(imm).is_some(), "BRK #{imm:#x} not dispatched directly");
            assert!(
                !KERNEL_BREAK_HOOKS.read().iter().any(|h| imm & !h.mask == h.imm),
                "BRK #{imm:#x} also has a registered hook"
            );
        }
        // A WARN goes through the fixed dispatch and resumes after it.
        let warns = bug::WARN_COUNT.load(core::sync::atomic::Ordering::Relaxed);
        crate::warn_on!(core::hint::black_box(true));
        assert_eq!(bug::WARN_COUNT.load(core::sync::atomic::Ordering::Relaxed), warns + 1);
    }
}
