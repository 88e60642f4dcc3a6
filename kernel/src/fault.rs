//! Data and instruction aborts (Linux's `do_mem_abort`): fixups for
//! accesses that may fault, and the oops for those that may not.

crate::notrace_module!();

use arch::addr::UserVirtAddr;
use arch::esr;
use arch::ptrace::PtRegs;
use core::fmt::Write;

/// PSTATE.I: IRQs masked.
const PSR_I_BIT: u64 = arch::ptrace::PSR::I::SET.value;

/// Per CPU: page faults on user addresses are not resolved while non-zero
/// (Linux's `pagefault_disable`), so that probe handlers can read user
/// memory without sleeping or allocating: a missing page is a failed read.
static PAGEFAULTS_DISABLED: crate::percpu::PerCpu<core::sync::atomic::AtomicUsize> =
    crate::percpu::PerCpu::new([const { core::sync::atomic::AtomicUsize::new(0) }; crate::percpu::NR_CPUS]);

/// Stops resolving user page faults on this CPU until
/// [`pagefault_enable`] (nests). Call with interrupts masked.
pub fn pagefault_disable() {
    PAGEFAULTS_DISABLED
        .this()
        .fetch_add(1, core::sync::atomic::Ordering::AcqRel);
}

/// Undoes one [`pagefault_disable`].
pub fn pagefault_enable() {
    PAGEFAULTS_DISABLED
        .this()
        .fetch_sub(1, core::sync::atomic::Ordering::AcqRel);
}

fn pagefaults_disabled() -> bool {
    PAGEFAULTS_DISABLED.this().load(core::sync::atomic::Ordering::Acquire) != 0
}

/// Handles an abort taken at EL1.
pub fn do_mem_abort(far: u64, esr_val: u64, regs: &mut PtRegs) {
    // A kernel access to user memory (uaccess): resolve it like a user fault.
    if far < arch::uaccess::TASK_SIZE && !pagefaults_disabled() {
        // Linux's el1_abort inherits the interrupted context's interrupt
        // mask. The address-space lock does not mask interrupts, so its
        // holder may be parked by stop_machine; a CPU waiting for that lock
        // must still answer the rendezvous IPI, or neither proceeds.
        let irqs_on = regs.pstate & PSR_I_BIT == 0;
        if irqs_on {
            arch::cpu::local_irq_enable();
        }
        let resolved = user_fault_resolved(far, esr_val, false);
        if irqs_on {
            arch::cpu::local_irq_disable();
        }
        if resolved {
            return;
        }
    }
    // A fault in a kprobe's out-of-line slot: back to the probed address.
    crate::kprobes::kprobe_fault_handler(regs);
    if let Some(fixup) = arch::nofault::search_exception_table(regs.pc) {
        #[cfg(feature = "ktest")]
        crate::ktest::fixup_hook(far, esr_val, regs);
        regs.pc = fixup;
        return;
    }
    die_kernel_fault(far, esr_val, regs)
}

fn fault_description(far: u64, esr_val: u64) -> &'static str {
    let info = esr::abort_info(esr_val);
    let exec = esr::ec(esr_val) == esr::Ec::IabtCur as u64;
    if far < arch::memory::PAGE_SIZE as u64 {
        "NULL pointer dereference"
    } else if esr::fsc_is_permission(info.fsc) && exec {
        "execute from non-executable memory"
    } else if esr::fsc_is_permission(info.fsc) && info.write {
        "write to read-only memory"
    } else {
        "paging request"
    }
}

/// Writes Linux's "Unable to handle kernel ..." and "Mem abort info" lines.
pub fn write_mem_abort_info(out: &mut dyn Write, far: u64, esr_val: u64) {
    let info = esr::abort_info(esr_val);
    let _ = writeln!(
        out,
        "Unable to handle kernel {} at virtual address {:016x}",
        fault_description(far, esr_val),
        far
    );
    let _ = writeln!(out, "Mem abort info:");
    let _ = writeln!(out, "  ESR = 0x{esr_val:016x}");
    let _ = writeln!(
        out,
        "  EC = 0x{:02x}: {}, IL = {} bits",
        esr::ec(esr_val),
        esr::class_str(esr_val),
        if esr::il_is_32bit(esr_val) { 32 } else { 16 }
    );
    let _ = writeln!(out, "  SET = {}, FnV = {}", info.set, info.fnv as u8);
    let _ = writeln!(out, "  EA = {}, S1PTW = {}", info.ea as u8, info.s1ptw as u8);
    let _ = writeln!(out, "  FSC = 0x{:02x}: {}", info.fsc, esr::fsc_str(info.fsc));
    if esr::ec(esr_val) == esr::Ec::DabtCur as u64 {
        let _ = writeln!(out, "Data abort info:");
        let _ = writeln!(out, "  ISV = {}, ISS = 0x{:08x}", info.isv as u8, esr::iss(esr_val));
        let _ = writeln!(out, "  CM = {}, WnR = {}", info.cm as u8, info.write as u8);
    }
}

fn die_kernel_fault(far: u64, esr_val: u64, regs: &PtRegs) -> ! {
    crate::printk::set_oops_in_progress();
    let mut out = crate::printk::console_log_sink();
    write_mem_abort_info(&mut out, far, esr_val);
    crate::oops::die("Oops", regs, esr_val)
}

/// Tries to resolve a fault on a user address in the current address space.
fn user_fault_resolved(far: u64, esr_val: u64, exec: bool) -> bool {
    let info = esr::abort_info(esr_val);
    if !(esr::fsc_is_translation(info.fsc) || esr::fsc_is_permission(info.fsc)) {
        return false;
    }
    let Some(mm) = crate::sched::try_current().and_then(|t| t.mm.lock().clone()) else {
        return false;
    };
    let Some(addr) = UserVirtAddr::new(far) else {
        return false;
    };
    let ok = mm.handle_fault(addr, info.write && !exec, exec).is_ok();
    if ok {
        crate::cputime::account_fault();
    }
    ok
}

/// A data or instruction abort from EL0: resolved, or a signal.
pub fn do_user_fault(far: u64, esr_val: u64, regs: &mut PtRegs) {
    use crate::mm::vm::SegvCode;
    use crate::signal::{code, force_sig_fault, SIGBUS, SIGKILL, SIGSEGV};
    let info = esr::abort_info(esr_val);
    let exec = esr::ec(esr_val) == esr::Ec::IabtLow as u64;
    if info.fsc == esr::ABORT_ISS::FSC::Alignment.value {
        force_sig_fault(SIGBUS, code::BUS_ADRALN, far);
        return;
    }
    if !(esr::fsc_is_translation(info.fsc) || esr::fsc_is_permission(info.fsc) || esr::fsc_is_access_flag(info.fsc)) {
        force_sig_fault(SIGBUS, 3 /* BUS_OBJERR */, far);
        return;
    }
    let Some(mm) = crate::sched::try_current().and_then(|t| t.mm.lock().clone()) else {
        force_sig_fault(SIGSEGV, code::SEGV_MAPERR, far);
        return;
    };
    let Some(addr) = UserVirtAddr::new(far) else {
        force_sig_fault(SIGSEGV, code::SEGV_MAPERR, far);
        return;
    };
    match mm.handle_fault(addr, info.write && !exec, exec) {
        Ok(()) => crate::cputime::account_fault(),
        Err(SegvCode::MapErr) => force_sig_fault(SIGSEGV, code::SEGV_MAPERR, far),
        Err(SegvCode::AccErr) => force_sig_fault(SIGSEGV, code::SEGV_ACCERR, far),
        Err(SegvCode::Bus) => force_sig_fault(SIGBUS, 2 /* BUS_ADRERR */, far),
        Err(SegvCode::Oom) => {
            let comm = crate::sched::current().comm_string();
            crate::pr_err!(
                "Out of memory: Killed process {} ({comm})",
                crate::process::current_process().pid
            );
            force_sig_fault(SIGKILL, code::SI_KERNEL, 0);
        }
    }
    let _ = regs;
}
