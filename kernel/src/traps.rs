//! Synchronous exceptions (Linux's `el1h_64_sync_handler` and friends):
//! dispatch on ESR_EL1.EC to the fault, debug and undefined-instruction
//! paths; anything unexpected is fatal.

crate::notrace_module!();

use arch::cpufeature::{do_emulate_mrs, SysRegId};
use arch::entry::BadMode;
use arch::esr::{self, Ec};
use arch::ptrace::PtRegs;
use core::fmt::Write;
use ktest_macros::notrace;

fn read_esr_far() -> (u64, u64) {
    use aarch64_cpu::registers::{Readable, ESR_EL1, FAR_EL1};
    (ESR_EL1.get(), FAR_EL1.get())
}

/// Synchronous exception at EL1.
#[allow(unsafe_code)] // exported under Linux's name for the entry code
#[no_mangle]
pub extern "C" fn el1h_64_sync_handler(regs: &mut PtRegs) {
    let me = el1h_64_sync_handler as *const () as usize;
    crate::trace::trace_preemptirq::irqentry_enter(me, me);
    el1h_64_sync(regs);
    crate::trace::trace_preemptirq::irqentry_exit(me, me, !regs.irqs_masked());
}

fn el1h_64_sync(regs: &mut PtRegs) {
    let (esr_val, far) = read_esr_far();
    match Ec::from_esr(esr_val) {
        Some(Ec::DabtCur | Ec::IabtCur) => crate::fault::do_mem_abort(far, esr_val, regs),
        Some(Ec::Unknown) => crate::oops::die("Oops - Undefined instruction", regs, esr_val),
        Some(Ec::Brk64 | Ec::SoftstpCur | Ec::BreakptCur | Ec::WatchptCur) => {
            let addr = if Ec::from_esr(esr_val) == Some(Ec::WatchptCur) {
                far
            } else {
                regs.pc
            };
            crate::debug::do_debug_exception(addr, esr_val, regs)
        }
        Some(Ec::PcAlign | Ec::SpAlign) => crate::oops::die("Oops - alignment", regs, esr_val),
        _ => panic_unhandled(regs, "64-bit el1h sync", esr_val),
    }
}

/// The section of the system call's entry handler and of the function that
/// calls the call's handler: the link script puts it alone in a 4 KiB page
/// (and kbuild checks both fit), since QEMU's TCG chains a direct branch
/// within a page only; to another page it costs a translation-block
/// look-up on every system call.
pub const SYSCALL_ENTRY_SECTION: &str = ".text.syscall_entry";

/// Synchronous exception at EL0: system calls, and faults that become
/// signals for the process (Linux's `el0t_64_sync_handler`). Does the work
/// of the return to user mode itself, leaving every exception masked (the
/// entry code then restores the frame, as Linux's `ret_to_user`).
///
/// Built without a patch site, as Linux's `noinstr` entry code: the module
/// is notrace anyway, and the two NOPs would run on every system call.
/// In the page of [`crate::syscalls::invoke_syscall`], which it calls
/// directly (see [`SYSCALL_ENTRY_SECTION`]).
#[allow(unsafe_code)] // exported under Linux's name for the entry code; its section
#[no_mangle]
#[unsafe(link_section = ".text.syscall_entry")]
#[notrace]
pub extern "C" fn el0t_64_sync_handler(regs: &mut PtRegs) {
    use crate::signal::{code, force_sig_fault, SIGBUS};
    let (esr_val, far) = read_esr_far();
    // The class is compared in place first: the named lookup is an
    // out-of-line search, a traced function with two patch-site NOPs, and
    // only the other exceptions need it.
    if esr::ec(esr_val) == Ec::Svc64 as u64 {
        // A system call tells the interrupt-mask hooks itself and returns
        // to user mode, from the slow path behind its one gate (Linux's
        // el0_svc).
        crate::syscalls::el0_svc(regs);
        return;
    }
    let ec = Ec::from_esr(esr_val);
    let me = el0t_64_sync_handler as *const () as usize;
    crate::trace::trace_preemptirq::irqentry_enter(me, me);
    arch::cpu::local_irq_enable();
    match ec {
        Some(Ec::DabtLow | Ec::IabtLow) => crate::fault::do_user_fault(far, esr_val, regs),
        Some(Ec::PcAlign) => force_sig_fault(SIGBUS, code::BUS_ADRALN, regs.pc),
        Some(Ec::SpAlign) => force_sig_fault(SIGBUS, code::BUS_ADRALN, regs.sp),
        Some(Ec::Brk64 | Ec::SoftstpLow | Ec::BreakptLow) => crate::debug::do_debug_exception(regs.pc, esr_val, regs),
        Some(Ec::WatchptLow) => crate::debug::do_debug_exception(far, esr_val, regs),
        // WFI (WFE does not trap): a hint, skipped as Linux's wfi_handler does.
        Some(Ec::Wfx) => regs.pc += 4,
        // A trapped MRS (FEAT_IDST CPUs trap ID register reads here), or
        // an access to the debug communications channel (MDSCR_EL1.TDCC):
        // Linux's do_el0_sys, which falls back to do_el0_undef.
        Some(Ec::Sys64) => {
            let emulated = SysRegId::from_esr_sys64(esr_val).is_some_and(|(id, rt)| do_emulate_mrs(regs, id, rt));
            if !emulated {
                do_el0_undef(regs);
            }
        }
        _ => do_el0_undef(regs),
    }
    arch::cpu::local_daif_mask();
    exit_to_user_mode(regs);
}

/// An undefined instruction at EL0: an `mrs` of the ID register space is
/// emulated (ARMv8.0 CPUs make those reads undefined at EL0, Linux's
/// `try_emulate_mrs`); anything else is SIGILL at the instruction.
fn do_el0_undef(regs: &mut PtRegs) {
    use crate::signal::{code, force_sig_fault, SIGILL};
    let emulated = crate::uaccess::get_user_u32(crate::uaccess::UserPtr::new(regs.pc))
        .ok()
        .and_then(SysRegId::from_mrs)
        .is_some_and(|(id, rt)| do_emulate_mrs(regs, id, rt));
    if !emulated {
        force_sig_fault(SIGILL, code::ILL_ILLOPC, regs.pc);
    }
}

/// Work on the way back to EL0: rescheduling and signal delivery, with
/// interrupts masked between checks so nothing new slips past; entered and
/// left with every exception masked. No patch site, as
/// `el0t_64_sync_handler`.
#[allow(unsafe_code)] // exported for the entry code
#[no_mangle]
#[notrace]
pub extern "C" fn exit_to_user_mode(regs: &mut PtRegs) {
    // One static-key site for both hooks: the hooked variant is out of line.
    if crate::trace::trace_preemptirq::irqflags_hooked() {
        exit_to_user_mode_hooked(regs);
    } else {
        exit_to_user_mode_loop(regs);
    }
}

/// `exit_to_user_mode` telling the interrupt-mask hooks: its caller masked
/// interrupts, the return to EL0 unmasks them.
#[cold]
#[inline(never)]
#[notrace]
fn exit_to_user_mode_hooked(regs: &mut PtRegs) {
    let me = exit_to_user_mode as *const () as usize;
    crate::trace::trace_preemptirq::irqentry_enter(me, me);
    exit_to_user_mode_loop(regs);
    crate::trace::trace_preemptirq::irqentry_exit(me, me, true);
}

/// `exit_to_user_mode` without the hooks: for a path that knows them off
/// (a system call's fast path, behind the gate they hold).
#[inline(always)]
pub fn exit_to_user_mode_loop(regs: &mut PtRegs) {
    loop {
        let resched = crate::sched::need_resched();
        let (sig, rseq) = crate::sched::try_current().map_or((false, false), |t| {
            (
                t.signal_pending() || t.restore_sigmask.load(core::sync::atomic::Ordering::Relaxed),
                t.rseq.notify_resume_pending(),
            )
        });
        if !resched && !sig && !rseq {
            break;
        }
        arch::cpu::local_irq_enable();
        if resched {
            crate::sched::schedule();
        }
        if sig {
            crate::signal::do_signal(regs);
        }
        if rseq {
            crate::rseq::rseq_handle_notify_resume(regs);
        }
        arch::cpu::local_irq_disable();
    }
    // A task that woke another synchronously but did not block after all:
    // the woken one gets its idle CPU now.
    crate::sched::flush_sync_kick();
}

/// An exception through a vector the kernel never expects.
#[allow(unsafe_code)] // exported under Linux's name for the entry code
#[no_mangle]
pub extern "C" fn bad_mode(regs: &mut PtRegs, reason: u64, esr_val: u64) -> ! {
    let mut out = crate::printk::console_log_sink();
    let _ = writeln!(
        out,
        "Bad mode in {} handler detected on CPU{}, code 0x{:08x} -- {}",
        BadMode::name(reason),
        arch::cpu::cpu_id(),
        esr_val,
        esr::class_str(esr_val)
    );
    crate::oops::die("Oops - bad mode", regs, esr_val)
}

const _: () = assert!(
    crate::percpu::NR_CPUS <= arch::entry::MAX_CPUS,
    "a CPU without an overflow stack"
);

/// The vectors found SP outside any kernel stack (a stack overflow into the
/// guard below it) and switched to this CPU's overflow stack: report what
/// overflowed and panic, as Linux's `panic_bad_stack`.
#[allow(unsafe_code)] // exported under Linux's name for the entry code
#[no_mangle]
pub extern "C" fn handle_bad_stack(regs: &mut PtRegs) -> ! {
    arch::cpu::local_irq_disable();
    crate::printk::set_oops_in_progress();
    let (esr_val, far) = read_esr_far();
    let mut out = crate::printk::console_log_sink();
    let _ = writeln!(out, "Insufficient stack space to handle exception!");
    let _ = writeln!(out, "ESR: 0x{esr_val:016x} -- {}", esr::class_str(esr_val));
    let _ = writeln!(out, "FAR: 0x{far:016x}");
    // The current task's stack, unless the overflow struck with the
    // run-queue's current pointer locked.
    let task_stack = crate::sched::try_current_nowait()
        .and_then(|t| t.stack_bounds())
        .unwrap_or_else(crate::smp::current_stack_bounds);
    let _ = writeln!(
        out,
        "Task stack:     [0x{:016x}..0x{:016x}]",
        task_stack.0, task_stack.1
    );
    let ovf = arch::entry::overflow_stack_bounds(arch::cpu::cpu_id());
    let _ = writeln!(out, "Overflow stack: [0x{:016x}..0x{:016x}]", ovf.0, ovf.1);
    crate::oops::show_regs(&mut out, regs);
    crate::oops::panic_stop(format_args!("kernel stack overflow"))
}

fn panic_unhandled(regs: &PtRegs, vector: &str, esr_val: u64) -> ! {
    let mut out = crate::printk::console_log_sink();
    let _ = writeln!(
        out,
        "Unhandled {vector} exception on CPU{}, ESR 0x{esr_val:016x} -- {}",
        arch::cpu::cpu_id(),
        esr::class_str(esr_val)
    );
    crate::oops::die("Oops - unhandled exception", regs, esr_val)
}

crate::nokprobe_symbol!(el1h_64_sync_handler);
crate::nokprobe_symbol!(bad_mode);
crate::nokprobe_symbol!(handle_bad_stack);
