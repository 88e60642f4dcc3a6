//! Interrupt dispatch: a table from GIC interrupt ID to handler, filled by
//! `request_irq`, run by the IRQ exception handler.

crate::notrace_module!();

use crate::errno::Errno;
use crate::percpu::{PerCpu, NR_CPUS};
use arch::gic::{self, NR_IRQS, SPURIOUS};
use arch::ptrace::PtRegs;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// An interrupt handler; gets the interrupt ID.
pub type IrqHandler = fn(irq: u32);

struct IrqDesc {
    handler: Option<IrqHandler>,
    name: &'static str,
}

static IRQ_TABLE: spin::RwLock<[IrqDesc; NR_IRQS]> = spin::RwLock::new(
    [const {
        IrqDesc {
            handler: None,
            name: "",
        }
    }; NR_IRQS],
);

/// Interrupts taken, per CPU.
static IRQ_COUNT: PerCpu<AtomicU64> = PerCpu::new([const { AtomicU64::new(0) }; NR_CPUS]);
/// Interrupts taken, per interrupt ID and CPU (for /proc/interrupts).
static IRQ_STATS: [[AtomicU64; NR_CPUS]; NR_IRQS] = [const { [const { AtomicU64::new(0) }; NR_CPUS] }; NR_IRQS];

/// How many times `irq` was taken on `cpu`.
pub fn irq_stat(irq: u32, cpu: usize) -> u64 {
    IRQ_STATS
        .get(irq as usize)
        .map_or(0, |c| c[cpu].load(Ordering::Relaxed))
}

/// Interrupt IDs with a handler, and the handler's name.
pub fn registered() -> alloc::vec::Vec<(u32, &'static str)> {
    IRQ_TABLE
        .read()
        .iter()
        .enumerate()
        .filter(|(_, d)| d.handler.is_some())
        .map(|(i, d)| (i as u32, d.name))
        .collect()
}

/// The entries of the installed handlers: what an interrupt runs first
/// outside the exception code (function_graph marks their calls, as
/// Linux's `__irqentry_text`).
pub fn handler_entries() -> alloc::vec::Vec<usize> {
    let mut v: alloc::vec::Vec<usize> = IRQ_TABLE
        .read()
        .iter()
        .filter_map(|d| d.handler.map(|h| h as usize))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Installs `handler` for `irq` and enables it (for PPIs, on this CPU; call
/// `enable_percpu_irq` on the others).
pub fn request_irq(irq: u32, handler: IrqHandler, name: &'static str) -> Result<(), Errno> {
    let mut table = IRQ_TABLE.write();
    let desc = table.get_mut(irq as usize).ok_or(Errno::EINVAL)?;
    if desc.handler.is_some() {
        return Err(Errno::EBUSY);
    }
    desc.handler = Some(handler);
    desc.name = name;
    drop(table);
    gic::enable_irq(irq);
    Ok(())
}

/// Enables a per-CPU interrupt (PPI) on this CPU.
pub fn enable_percpu_irq(irq: u32) {
    gic::enable_irq(irq);
}

/// Interrupts taken so far on `cpu`.
pub fn irq_count(cpu: usize) -> u64 {
    IRQ_COUNT.on(cpu).load(Ordering::Relaxed)
}

/// The handler's name for `irq`.
pub fn irq_name(irq: u32) -> &'static str {
    IRQ_TABLE.read().get(irq as usize).map_or("", |d| d.name)
}

/// Handles every pending interrupt (Linux's `gic_handle_irq`).
fn handle_arch_irq() {
    loop {
        let (iar, irq) = gic::ack();
        if irq >= SPURIOUS - 3 {
            break;
        }
        IRQ_COUNT.this().fetch_add(1, Ordering::Relaxed);
        if let Some(c) = IRQ_STATS.get(irq as usize) {
            c[arch::cpu::cpu_id()].fetch_add(1, Ordering::Relaxed);
        }
        let handler = IRQ_TABLE.read().get(irq as usize).and_then(|d| d.handler);
        match handler {
            Some(h) => crate::trace::tracepoint::irq::handle_irq_traced(irq, h),
            None => {
                crate::pr_warn!("irq {irq}: no handler, disabling");
                gic::disable_irq(irq);
            }
        }
        gic::eoi(iar);
    }
}

/// Interrupt handlers running on each CPU (the hardirq part of Linux's
/// `preempt_count`, kept between `irq_enter` and `irq_exit`).
static HARDIRQ_COUNT: PerCpu<AtomicU32> = PerCpu::new([const { AtomicU32::new(0) }; NR_CPUS]);

/// Whether this CPU is running an interrupt handler (Linux's
/// `in_hardirq`).
#[inline(always)] // read by the tracer's record path, which must not be traced
pub fn in_hardirq() -> bool {
    in_hardirq_on(crate::percpu::this_cpu())
}

/// [`in_hardirq`] for `cpu`, which must be this CPU (read once by a hot
/// path, see [`crate::percpu::this_cpu`]).
#[inline(always)]
pub fn in_hardirq_on(cpu: usize) -> bool {
    HARDIRQ_COUNT.on(cpu).load(Ordering::Relaxed) != 0
}

/// IRQ taken at EL1.
#[allow(unsafe_code)] // exported under Linux's name for the entry code
#[no_mangle]
pub extern "C" fn el1h_64_irq_handler(regs: &mut PtRegs) {
    let me = el1h_64_irq_handler as *const () as usize;
    crate::trace::trace_preemptirq::irqentry_enter(me, me);
    crate::cputime::irq_enter_from(false);
    HARDIRQ_COUNT.this().fetch_add(1, Ordering::Relaxed);
    handle_arch_irq();
    HARDIRQ_COUNT.this().fetch_sub(1, Ordering::Relaxed);
    crate::trace::trace_preemptirq::irqentry_exit(me, me, !regs.irqs_masked());
}

/// IRQ taken at EL0.
#[allow(unsafe_code)] // exported under Linux's name for the entry code
#[no_mangle]
pub extern "C" fn el0t_64_irq_handler(_regs: &mut PtRegs) {
    let me = el0t_64_irq_handler as *const () as usize;
    crate::trace::trace_preemptirq::irqentry_enter(me, me);
    crate::cputime::irq_enter_from(true);
    HARDIRQ_COUNT.this().fetch_add(1, Ordering::Relaxed);
    handle_arch_irq();
    HARDIRQ_COUNT.this().fetch_sub(1, Ordering::Relaxed);
}

crate::nokprobe_symbol!(el1h_64_irq_handler);
crate::nokprobe_symbol!(el0t_64_irq_handler);
