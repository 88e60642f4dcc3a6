//! Synchronous exceptions (Linux's `el1h_64_sync_handler` and friends):
//! dispatch on ESR_EL1.EC to the fault, debug and undefined-instruction
//! paths; anything unexpected is fatal.

use arch::entry::BadMode;
use arch::esr::{self, Ec};
use arch::ptrace::PtRegs;
use core::fmt::Write;

fn read_esr_far() -> (u64, u64) {
    use aarch64_cpu::registers::{Readable, ESR_EL1, FAR_EL1};
    (ESR_EL1.get(), FAR_EL1.get())
}

/// Synchronous exception at EL1.
#[allow(unsafe_code)] // exported under Linux's name for the entry code
#[no_mangle]
pub extern "C" fn el1h_64_sync_handler(regs: &mut PtRegs) {
    let (esr_val, far) = read_esr_far();
    match Ec::from_esr(esr_val) {
        Some(Ec::DabtCur | Ec::IabtCur) => crate::fault::do_mem_abort(far, esr_val, regs),
        Some(Ec::Unknown) => crate::oops::die("Oops - Undefined instruction", regs, esr_val),
        Some(Ec::Brk64) => {
            let imm = esr::iss(esr_val) & 0xffff;
            let mut out = crate::printk::console_log_sink();
            let _ = writeln!(out, "Unexpected kernel BRK exception at EL1");
            crate::oops::die(if imm == 0x800 { "Oops - BUG" } else { "Oops - BRK" }, regs, esr_val)
        }
        Some(Ec::PcAlign | Ec::SpAlign) => crate::oops::die("Oops - alignment", regs, esr_val),
        _ => panic_unhandled(regs, "64-bit el1h sync", esr_val),
    }
}

/// Synchronous exception at EL0. User mode arrives with the process
/// support; until then, any is unexpected.
#[allow(unsafe_code)] // exported under Linux's name for the entry code
#[no_mangle]
pub extern "C" fn el0t_64_sync_handler(regs: &mut PtRegs) {
    let (esr_val, _) = read_esr_far();
    panic_unhandled(regs, "64-bit el0t sync", esr_val)
}

/// Work on the way back to EL0 (signals, rescheduling).
#[allow(unsafe_code)] // exported for the entry code
#[no_mangle]
pub extern "C" fn exit_to_user_mode(_regs: &mut PtRegs) {}

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
