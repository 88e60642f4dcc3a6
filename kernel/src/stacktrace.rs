//! Backtraces by frame-pointer unwinding (AAPCS64 frame records: x29 points
//! at {previous x29, x30}). Every read is a no-fault read, so a corrupt
//! chain ends the trace instead of faulting again.

crate::notrace_module!();

use arch::nofault::read_u64_nofault;

/// Most frames printed.
const MAX_DEPTH: usize = 64;

/// Calls `f` with each return address, starting from the frame record at
/// `fp`; stops when the chain ends, leaves the stack, or `f` returns false.
pub fn walk_stackframe(mut fp: usize, mut f: impl FnMut(usize) -> bool) {
    let (lo, hi) = current_stack_bounds();
    // Position in the task's return stack (see `find_ret_addr`).
    let mut ret_idx = 0;
    for _ in 0..MAX_DEPTH {
        if fp == 0 || !fp.is_multiple_of(16) || fp < lo || fp + 16 > hi {
            break;
        }
        let (Ok(next), Ok(lr)) = (read_u64_nofault(fp), read_u64_nofault(fp + 8)) else {
            break;
        };
        // function_graph or a kretprobe replaced this return address: show
        // the real caller.
        let lr = crate::trace::rethook::find_ret_addr(&mut ret_idx, lr as usize) as u64;
        if lr == 0 || !f(lr as usize) {
            break;
        }
        // Frames move strictly up the stack.
        if (next as usize) <= fp {
            break;
        }
        fp = next as usize;
    }
}

/// The stack the unwinder may walk: the current task's kernel stack, or
/// the CPU's boot/idle stack.
fn current_stack_bounds() -> (usize, usize) {
    crate::sched::try_current()
        .and_then(|t| t.stack_bounds())
        .unwrap_or_else(crate::smp::current_stack_bounds)
}

/// Writes the Linux-style call trace, one ` symbol+0xoff/0xsize` per line,
/// starting with `pc`.
pub fn dump_backtrace(out: &mut dyn core::fmt::Write, pc: usize, fp: usize) {
    let _ = writeln!(out, "Call trace:");
    let _ = writeln!(out, " {}", crate::kallsyms::symbolize(pc));
    walk_stackframe(fp, |lr| writeln!(out, " {}", crate::kallsyms::symbolize(lr)).is_ok());
}

use core::fmt::Write as _;

/// Prints the current call stack to the console (Linux's `dump_stack`).
#[inline(never)]
pub fn dump_stack() {
    let mut out = crate::printk::console_log_sink();
    let _ = out.write_str("");
    dump_backtrace(&mut out, dump_stack as *const () as usize, arch::cpu::frame_pointer());
}
