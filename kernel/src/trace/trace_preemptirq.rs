//! The interrupt-mask and preemption hooks (Linux's
//! kernel/trace/trace_preemptirq.c): `trace_hardirqs_off/on`, which
//! `arch::cpu::local_irq_*` call behind the `trace_irqflags_key` static
//! key, the exception entry and exit's equivalents (a system call's from
//! behind the system-call gate, which the hooks hold too; the return to
//! user mode's both behind one site), and
//! `trace_preempt_off/on`, which [`crate::preempt`] calls behind its key.
//! They feed the latency tracers (`irqsoff`, `preemptoff`,
//! `preemptirqsoff`) and the `preemptirq` events
//! ([`super::tracepoint::preemptirq`]), in Linux's order.
//!
//! Each hook runs with interrupts masked and at most once per CPU at a
//! time: a masking or lock taken inside a hook (the tracer records into
//! the ring buffer, whose locks mask interrupts) does not call it again.
//! A per-CPU flag (Linux's `tracing_irq_cpu`) makes the tracers hear of
//! the first masking of a section and of its last unmasking only.

use super::tracepoint::preemptirq::{trace_irq_disable, trace_irq_enable, trace_preempt_disable, trace_preempt_enable};
use super::tracepoint::syscalls::SYSCALL_WORK_KEY;
use crate::jump_label::{static_key_batch, static_key_slow_dec, static_key_slow_inc, StaticKey};
use crate::percpu::{PerCpu, NR_CPUS};
use core::sync::atomic::{AtomicBool, Ordering};

/// The key of the interrupt-mask hooks, which `arch::cpu` names by symbol.
#[allow(unsafe_code, non_upper_case_globals)] // named by the arch crate
#[no_mangle]
pub static trace_irqflags_key: StaticKey = StaticKey::new_false();

/// Interrupts are masked on the CPU and the tracers know it (Linux's
/// `tracing_irq_cpu`).
static TRACING_IRQ_CPU: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);
/// Set while a hook runs on the CPU.
static IN_HOOK: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

/// Takes a reference on the interrupt-mask hooks (a tracer starting).
/// A system call tells the hooks of its entry from its slow path, so the
/// hooks hold the system-call gate too, both switched under one
/// `stop_machine`. Task context.
pub fn irqflags_hooks_get() {
    if trace_irqflags_key.count() == 0 {
        // Nothing can set the flags while the key is off: start afresh.
        for f in TRACING_IRQ_CPU.iter() {
            f.store(false, Ordering::Relaxed);
        }
    }
    static_key_batch(|b| {
        b.slow_inc(&trace_irqflags_key);
        b.slow_inc(&SYSCALL_WORK_KEY);
    });
}

/// Drops a reference taken by [`irqflags_hooks_get`].
pub fn irqflags_hooks_put() {
    static_key_batch(|b| {
        b.slow_dec(&SYSCALL_WORK_KEY);
        b.slow_dec(&trace_irqflags_key);
    });
}

/// Whether the interrupt-mask hooks are on: one static-key site, for an
/// entry or exit path that takes a hooked variant of itself out of line.
#[inline(always)]
pub fn irqflags_hooked() -> bool {
    crate::static_branch_unlikely!(trace_irqflags_key)
}

/// Takes a reference on the preemption hooks.
pub fn preempt_hooks_get() {
    static_key_slow_inc(&crate::preempt::TRACE_PREEMPT_KEY);
}

/// Drops a reference taken by [`preempt_hooks_get`].
pub fn preempt_hooks_put() {
    static_key_slow_dec(&crate::preempt::TRACE_PREEMPT_KEY);
}

/// The return addresses of the hook's caller and of its caller (Linux's
/// `CALLER_ADDR0`, `CALLER_ADDR1`): from the frame records, `fp` being
/// the hook's own.
#[inline(always)]
fn caller_addrs(fp: usize) -> (usize, usize) {
    use arch::nofault::read_u64_nofault;
    let a0 = read_u64_nofault(fp + 8).unwrap_or(0) as usize;
    let up = read_u64_nofault(fp).unwrap_or(0) as usize;
    let a1 = if up != 0 && up > fp {
        read_u64_nofault(up + 8).unwrap_or(0) as usize
    } else {
        0
    };
    (a0, a1)
}

/// Runs `f` as the CPU's only hook, with interrupts masked.
#[inline(always)]
fn in_hook(f: impl FnOnce()) {
    let flags = arch::cpu::raw_local_irq_save();
    let busy = IN_HOOK.this();
    if !busy.swap(true, Ordering::Acquire) {
        f();
        busy.store(false, Ordering::Release);
    }
    arch::cpu::raw_local_irq_restore(flags);
}

/// Interrupts were just masked (Linux's `trace_hardirqs_off`).
#[allow(unsafe_code)] // called by symbol from arch::cpu
#[no_mangle]
#[cold]
#[inline(never)]
pub fn trace_hardirqs_off() {
    let (a0, a1) = caller_addrs(arch::cpu::frame_pointer());
    hardirqs_off(a0, a1);
}

/// Interrupts are about to be unmasked (Linux's `trace_hardirqs_on`).
#[allow(unsafe_code)] // called by symbol from arch::cpu
#[no_mangle]
#[cold]
#[inline(never)]
pub fn trace_hardirqs_on() {
    let (a0, a1) = caller_addrs(arch::cpu::frame_pointer());
    hardirqs_on(a0, a1);
}

// Out of line and cold: the entry paths that call these keep only a call
// behind their site.
#[cold]
#[inline(never)]
fn hardirqs_off(a0: usize, a1: usize) {
    in_hook(|| {
        let f = TRACING_IRQ_CPU.this();
        if !f.load(Ordering::Relaxed) {
            f.store(true, Ordering::Relaxed);
            super::trace_irqsoff::tracer_hardirqs_off(a0, a1);
            trace_irq_disable(a0, a1);
        }
    });
}

#[cold]
#[inline(never)]
fn hardirqs_on(a0: usize, a1: usize) {
    in_hook(|| {
        let f = TRACING_IRQ_CPU.this();
        if f.load(Ordering::Relaxed) {
            trace_irq_enable(a0, a1);
            super::trace_irqsoff::tracer_hardirqs_on(a0, a1);
            f.store(false, Ordering::Relaxed);
        }
    });
}

/// An exception entered with interrupts masked by the CPU (Linux's
/// `trace_hardirqs_off_finish` in `enter_from_kernel_mode` and
/// `enter_from_user_mode`): `handler` is the entry function, `pc` where the
/// exception struck.
#[inline(always)]
pub fn irqentry_enter(handler: usize, pc: usize) {
    if crate::static_branch_unlikely!(trace_irqflags_key) {
        hardirqs_off(handler, pc);
    }
}

/// An exception returns to code that runs with interrupts unmasked
/// (`unmasks`) or masked (Linux's `trace_hardirqs_on_prepare` in
/// `exit_to_kernel_mode` and `exit_to_user_mode`).
#[inline(always)]
pub fn irqentry_exit(handler: usize, pc: usize, unmasks: bool) {
    if unmasks && crate::static_branch_unlikely!(trace_irqflags_key) {
        hardirqs_on(handler, pc);
    }
}

/// Preemption was just disabled (Linux's `trace_preempt_off`).
#[allow(unsafe_code)] // exported under Linux's name, which the trace prints
#[no_mangle]
#[inline(never)]
pub fn trace_preempt_off() {
    let (a0, a1) = caller_addrs(arch::cpu::frame_pointer());
    // Whether the caller has interrupts masked (the hook masks them).
    let irqs_off = arch::cpu::irqs_disabled();
    // The event shows the caller's state, not the hook's masking.
    let ctx = super::tracing_gen_ctx();
    in_hook(|| {
        super::trace_irqsoff::tracer_preempt_off(a0, a1, irqs_off);
        let _saved = super::TraceCtxSave::new(ctx);
        trace_preempt_disable(a0, a1);
    });
}

/// Preemption is about to be enabled (Linux's `trace_preempt_on`).
#[allow(unsafe_code)] // exported under Linux's name, which the trace prints
#[no_mangle]
#[inline(never)]
pub fn trace_preempt_on() {
    let (a0, a1) = caller_addrs(arch::cpu::frame_pointer());
    let irqs_off = arch::cpu::irqs_disabled();
    let ctx = super::tracing_gen_ctx();
    in_hook(|| {
        let saved = super::TraceCtxSave::new(ctx);
        trace_preempt_enable(a0, a1);
        drop(saved);
        super::trace_irqsoff::tracer_preempt_on(a0, a1, irqs_off);
    });
}

// Exported names are outside this module's notrace path: marked here, as
// Linux's NOKPROBE_SYMBOL (and kernel/trace's notrace build) keep them.
crate::nokprobe_symbol!(trace_hardirqs_on);
crate::nokprobe_symbol!(trace_hardirqs_off);
crate::nokprobe_symbol!(trace_preempt_on);
crate::nokprobe_symbol!(trace_preempt_off);
