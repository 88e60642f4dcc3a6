//! Fatal kernel errors (Linux's `die` and `panic`): the register dump, the
//! symbolized call trace, then stop every CPU.

crate::notrace_module!();

use arch::ptrace::PtRegs;
use core::fmt::Write;
use core::sync::atomic::{AtomicU32, Ordering};

static DIE_COUNTER: AtomicU32 = AtomicU32::new(0);
static DIE_LOCK: spin::Mutex<()> = spin::Mutex::new(());

/// Writes the register state as Linux's `__show_regs` does.
pub fn show_regs(out: &mut dyn Write, regs: &PtRegs) {
    let cpu = arch::cpu::cpu_id();
    let _ = writeln!(out, "CPU: {cpu} PID: 0 Comm: swapper/{cpu} Not tainted");
    let _ = writeln!(out, "Hardware name: {} (DT)", crate::init::machine_model());
    let _ = writeln!(out, "pstate: {:08x} ({})", regs.pstate, PstateFlags(regs.pstate));
    let _ = writeln!(out, "pc : {}", crate::kallsyms::symbolize(regs.pc as usize));
    let _ = writeln!(out, "lr : {}", crate::kallsyms::symbolize(regs.lr() as usize));
    let _ = writeln!(out, "sp : {:016x}", regs.sp);
    let mut i = 29i32;
    while i >= 0 {
        let _ = write!(out, "x{:<2}: {:016x}", i, regs.regs[i as usize]);
        i -= 1;
        let _ = out.write_str(if i % 3 == 2 || i < 0 { "\n" } else { " " });
    }
}

/// PSTATE as Linux prints it: `nZCv daif -PAN -UAO -TCO -DIT -SSBS BTYPE=--`.
struct PstateFlags(u64);

impl core::fmt::Display for PstateFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        use arch::ptrace::PSR;
        use tock_registers::interfaces::Readable;
        let p = tock_registers::registers::InMemoryRegister::<u64, PSR::Register>::new(self.0);
        let bit = |field, c: char| if p.is_set(field) { c.to_ascii_uppercase() } else { c };
        write!(
            f,
            "{}{}{}{} ",
            bit(PSR::N, 'n'),
            bit(PSR::Z, 'z'),
            bit(PSR::C, 'c'),
            bit(PSR::V, 'v')
        )?;
        write!(
            f,
            "{}{}{}{} ",
            bit(PSR::D, 'd'),
            bit(PSR::A, 'a'),
            bit(PSR::I, 'i'),
            bit(PSR::F, 'f')
        )?;
        let flag = |field| if p.is_set(field) { '+' } else { '-' };
        write!(
            f,
            "{}PAN {}UAO {}TCO {}DIT {}SSBS BTYPE=--",
            flag(PSR::PAN),
            flag(PSR::UAO),
            flag(PSR::TCO),
            flag(PSR::DIT),
            flag(PSR::SSBS)
        )
    }
}

/// Writes a full oops report for `regs`: the heading, registers, trace.
pub fn write_oops(out: &mut dyn Write, msg: &str, regs: &PtRegs, err: u64) {
    let n = DIE_COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
    let _ = writeln!(out, "Internal error: {msg}: {err:016x} [#{n}] SMP");
    let _ = writeln!(out, "Modules linked in:");
    show_regs(out, regs);
    crate::stacktrace::dump_backtrace(out, regs.pc as usize, regs.fp() as usize);
    let _ = write!(out, "Code:");
    for i in -4i64..=0 {
        let addr = (regs.pc as i64 + i * 4) as usize;
        match arch::nofault::read_u64_nofault(addr & !7) {
            Ok(w) => {
                let insn = (w >> ((addr & 4) * 8)) as u32;
                let _ = if i == 0 {
                    write!(out, " ({insn:08x})")
                } else {
                    write!(out, " {insn:08x}")
                };
            }
            Err(_) => {
                let _ = write!(out, " ????????");
            }
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "---[ end trace 0000000000000000 ]---");
}

/// The oops path for a fatal exception in the kernel: report, then panic.
pub fn die(msg: &str, regs: &PtRegs, err: u64) -> ! {
    #[cfg(feature = "ktest")]
    crate::ktest::oops_hook(msg, regs);
    arch::cpu::local_irq_disable();
    crate::printk::set_oops_in_progress();
    let _guard = DIE_LOCK.lock();
    let mut out = crate::printk::console_log_sink();
    write_oops(&mut out, msg, regs, err);
    panic_stop(format_args!("Oops: Fatal exception"))
}

/// Ends the system after a fatal error: message, stop the other CPUs, then
/// power off (a test build exits QEMU with a failure status instead).
pub fn panic_stop(msg: core::fmt::Arguments) -> ! {
    arch::cpu::local_irq_disable();
    crate::printk::set_oops_in_progress();
    let mut out = crate::printk::console_log_sink();
    let _ = writeln!(out, "Kernel panic - not syncing: {msg}");
    let _ = writeln!(out, "SMP: stopping secondary CPUs");
    crate::smp::smp_send_stop();
    let _ = writeln!(out, "---[ end Kernel panic - not syncing: {msg} ]---");
    #[cfg(feature = "ktest")]
    crate::ktest::exit_on_panic();
    #[cfg(not(feature = "ktest"))]
    crate::power::panic_poweroff()
}
