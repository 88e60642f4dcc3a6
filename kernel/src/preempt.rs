//! The preemption count (Linux's `preempt_count`, include/linux/preempt.h):
//! how deeply the code running on this CPU has disabled preemption.
//!
//! This kernel never preempts kernel code (tasks switch only where they
//! block or return to user mode, as Linux's PREEMPT_VOLUNTARY), so the
//! count does not gate the scheduler; it marks the sections Linux would
//! run non-preemptible, for the `preemptoff` and `preemptirqsoff` latency
//! tracers and the `preemptirq` events: every [`crate::sync::IrqSpinLock`]
//! section (Linux's `spin_lock_irqsave` disables preemption too) and
//! explicit [`preempt_disable`]/[`preempt_enable`] pairs. Plain
//! `spin::Mutex` sections are not counted.
//!
//! The count is per CPU; `schedule` saves it across a switch and gives the
//! next task its own (a task switches out only at count 0 or inside the
//! scheduler's own sections, which it balances). The tracer hooks cost one
//! NOP while no tracer wants them ([`TRACE_PREEMPT_KEY`]).

crate::notrace_module!();

use crate::jump_label::StaticKey;
use crate::percpu::{PerCpu, NR_CPUS};
use core::sync::atomic::{AtomicU32, Ordering};

static PREEMPT_COUNT: PerCpu<AtomicU32> = PerCpu::new([const { AtomicU32::new(0) }; NR_CPUS]);

/// On while a tracer wants the preemption hooks (`trace_preempt_on/off`).
pub static TRACE_PREEMPT_KEY: StaticKey = StaticKey::new_false();

/// This CPU's preemption count.
#[inline(always)]
pub fn preempt_count() -> u32 {
    preempt_count_on(crate::percpu::this_cpu())
}

/// [`preempt_count`] for `cpu`, which must be this CPU (see
/// [`crate::percpu::this_cpu`]).
#[inline(always)]
pub fn preempt_count_on(cpu: usize) -> u32 {
    PREEMPT_COUNT.on(cpu).load(Ordering::Relaxed)
}

/// Disables preemption (Linux's `preempt_disable`): the count goes up; the
/// tracers hear of the first level (`preempt_latency_start`).
#[inline(always)]
pub fn preempt_disable() {
    // A plain load and store, not an atomic read-modify-write (Linux's
    // arm64 preempt_count_add is one too): only this CPU writes its slot,
    // an interrupt between the load and the store balances its own changes
    // before it returns, and tasks do not move here, so the slot stays this
    // CPU's. Every IrqSpinLock section passes here; an LDXR/STXR pair each
    // way was two of the most frequent atomics on a ptrace round trip.
    let c = PREEMPT_COUNT.this();
    let now = c.load(Ordering::Relaxed) + 1;
    c.store(now, Ordering::Relaxed);
    if crate::static_branch_unlikely!(TRACE_PREEMPT_KEY) && now == 1 {
        crate::trace::trace_preemptirq::trace_preempt_off();
    }
}

/// Enables preemption again (Linux's `preempt_enable`; this kernel has no
/// preemption point here): the tracers hear of the last level before the
/// count drops (`preempt_latency_stop`). An unbalanced enable is ignored.
#[inline(always)]
pub fn preempt_enable() {
    let c = PREEMPT_COUNT.this();
    let now = c.load(Ordering::Relaxed);
    if now == 0 {
        return;
    }
    if crate::static_branch_unlikely!(TRACE_PREEMPT_KEY) && now == 1 {
        crate::trace::trace_preemptirq::trace_preempt_on();
    }
    // Plain store, as in preempt_disable. The count is read again: a
    // tracer hook above may have taken and released locks of its own.
    c.store(c.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
}

/// Sets this CPU's count (the scheduler, restoring a task's count after a
/// switch, and new tasks, which start at 0).
pub fn set_preempt_count(n: u32) {
    PREEMPT_COUNT.this().store(n, Ordering::Relaxed);
}
