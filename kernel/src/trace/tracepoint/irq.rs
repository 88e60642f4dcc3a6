//! `irq` events (Linux's `include/trace/events/irq.h`) and `ipi` events
//! (`include/trace/events/ipi.h`): a handler's run, and inter-processor
//! interrupts raised and taken, with arm64's reasons.

use super::{DataLocStr, TpField};
use crate::define_trace_event;

define_trace_event! {
    /// Interrupt `irq`'s handler `name` is about to run.
    irq / irq_handler_entry,
    fn trace_irq_handler_entry(irq: u32),
    fields {
        irq: i32 as "int" = irq as i32,
        name: DataLocStr as "__data_loc char[]" = crate::irq::irq_name(irq).as_bytes(),
    },
    printk "\"irq=%d name=%s\", REC->irq, __get_str(name)",
    print(out, e) {
        write!(out, "irq={} name={}", e.irq, e.name)
    }
}

define_trace_event! {
    /// Interrupt `irq`'s handler returned (this kernel's handlers always
    /// handle what they are given).
    irq / irq_handler_exit,
    fn trace_irq_handler_exit(irq: u32),
    fields {
        irq: i32 as "int" = irq as i32,
        ret: i32 as "int" = 1,
    },
    printk "\"irq=%d ret=%s\", REC->irq, REC->ret ? \"handled\" : \"unhandled\"",
    print(out, e) {
        write!(out, "irq={} ret={}", e.irq, if e.ret != 0 { "handled" } else { "unhandled" })
    }
}

/// Runs `handler` for `irq` between `irq_handler_entry` and
/// `irq_handler_exit`, and, for an IPI, `ipi_entry` and `ipi_exit` (from
/// the interrupt dispatcher).
#[inline(always)]
pub fn handle_irq_traced(irq: u32, handler: crate::irq::IrqHandler) {
    trace_irq_handler_entry(irq);
    let reason = ipi_reason(irq);
    if let Some(r) = reason {
        trace_ipi_entry(r);
    }
    handler(irq);
    if let Some(r) = reason {
        trace_ipi_exit(r);
    }
    trace_irq_handler_exit(irq);
}

/// arm64's IPI reasons (`ipi_types`), by IPI number: the strings the
/// `ipi` events point at.
pub static IPI_TYPES: [&str; 8] = [
    "Rescheduling interrupts",
    "Function call interrupts",
    "CPU stop interrupts",
    "CPU stop NMIs",
    "Timer broadcast interrupts",
    "IRQ work interrupts",
    "CPU backtrace interrupts",
    "KGDB roundup interrupts",
];

/// The reason of IPI `irq` (the IPIs are interrupts 0..8 here), if it is
/// one this kernel sends.
fn ipi_reason(irq: u32) -> Option<&'static &'static str> {
    use crate::smp::Ipi;
    [Ipi::Reschedule, Ipi::CallFunc, Ipi::CpuStop]
        .iter()
        .any(|&i| i as u32 == irq)
        .then(|| IPI_TYPES.get(irq as usize))
        .flatten()
}

/// A `const char *reason`: the address of one of [`IPI_TYPES`], printed
/// as its text.
pub struct Reason;

impl TpField for Reason {
    type Arg<'a> = &'static &'static str;
    type View<'a> = &'static str;
    type Raw = u64;
    const SIGNED: bool = false;
    fn store(arg: &&'static &'static str, entry: &mut [u8], off: usize, dyn_at: &mut usize) {
        u64::store(&(arg.as_ptr() as u64), entry, off, dyn_at);
    }
    fn load(entry: &[u8], off: usize) -> &'static str {
        let p = u64::load(entry, off);
        IPI_TYPES.iter().find(|s| s.as_ptr() as u64 == p).copied().unwrap_or("")
    }
}

/// A `__bitmask` of CPUs (`__data_loc unsigned long[]`): one word here,
/// printed as Linux's `%*pb` prints 64 bits.
pub struct CpuMask;

impl TpField for CpuMask {
    type Arg<'a> = u64;
    type View<'a> = u64;
    type Raw = u32;
    const SIGNED: bool = false;
    fn dyn_len(_: &u64) -> usize {
        8
    }
    fn store(arg: &u64, entry: &mut [u8], off: usize, dyn_at: &mut usize) {
        let at = *dyn_at;
        u64::store(arg, entry, at, dyn_at);
        *dyn_at += 8;
        u32::store(&((8 << 16) | at as u32), entry, off, dyn_at);
    }
    fn load(entry: &[u8], off: usize) -> u64 {
        let loc = u32::load(entry, off) as usize;
        u64::load(entry, loc & 0xffff)
    }
}

define_trace_event! {
    /// An IPI is sent to the CPUs of `mask`.
    ipi / ipi_raise,
    fn trace_ipi_raise_raw(mask: u64, reason: &'static &'static str),
    fields {
        target_cpus: CpuMask as "__data_loc unsigned long[]" = mask,
        reason: Reason as "const char *" = reason,
    },
    printk "\"target_mask=%s (%s)\", __get_bitmask(target_cpus), REC->reason",
    print(out, e) {
        write!(out, "target_mask={:08x},{:08x} ({})", e.target_cpus >> 32, e.target_cpus & 0xffff_ffff, e.reason)
    }
}

define_trace_event! {
    /// This CPU starts handling an IPI.
    ipi / ipi_entry,
    fn trace_ipi_entry(reason: &'static &'static str),
    fields {
        reason: Reason as "const char *" = reason,
    },
    printk "\"(%s)\", REC->reason",
    print(out, e) {
        write!(out, "({})", e.reason)
    }
}

define_trace_event! {
    /// This CPU is done with an IPI.
    ipi / ipi_exit,
    fn trace_ipi_exit(reason: &'static &'static str),
    fields {
        reason: Reason as "const char *" = reason,
    },
    printk "\"(%s)\", REC->reason",
    print(out, e) {
        write!(out, "({})", e.reason)
    }
}

/// IPI `ipi` is sent to `cpus` (from the IPI senders).
#[inline(always)]
pub fn trace_ipi_raise(cpus: &[usize], ipi: u32) {
    if crate::static_branch_unlikely!(ipi_raise::KEY) {
        let mask = cpus.iter().filter(|&&c| c < 64).fold(0u64, |m, &c| m | 1 << c);
        if let Some(r) = IPI_TYPES.get(ipi as usize) {
            ipi_raise::record(mask, r);
        }
    }
}

/// Registers the `irq` and `ipi` events.
pub fn register() -> Result<(), uapi::Errno> {
    irq_handler_exit::register()?;
    irq_handler_entry::register()?;
    ipi_exit::register()?;
    ipi_entry::register()?;
    ipi_raise::register()
}
