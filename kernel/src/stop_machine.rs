//! `stop_machine`: runs a function on one CPU while every other online CPU
//! waits in a rendezvous with interrupts masked, reached by IPI; all issue
//! an ISB before they leave, so that instructions changed meanwhile are
//! seen (Linux's `stop_machine` with `multi_cpu_stop`, and the
//! `aarch64_insn_patch_text_cb` barrier).

crate::notrace_module!();

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};

struct Rendezvous {
    /// CPUs parked and waiting.
    arrived: AtomicUsize,
    /// 1 once the function has run.
    done: AtomicUsize,
    /// CPUs that have left.
    left: AtomicUsize,
}

static STOP_LOCK: crate::sync::IrqSpinLock<()> = crate::sync::IrqSpinLock::new(());

/// Runs `f` with every other CPU stopped, interrupts masked everywhere.
/// Must not be called with interrupts masked (the other CPUs are reached
/// by IPI) and must not nest.
pub fn stop_machine<R>(f: impl FnOnce() -> R) -> R {
    // One stop at a time. Wait for the lock with interrupts on (and serve
    // cross-calls), so that a concurrent stop_machine can park this CPU.
    let guard = loop {
        if let Some(g) = STOP_LOCK.try_lock() {
            break g;
        }
        crate::smp::flush_pending_calls();
        core::hint::spin_loop();
    };
    let me = arch::cpu::cpu_id();
    let others: alloc::vec::Vec<usize> = crate::smp::online_cpus().filter(|&c| c != me).collect();
    let r = Arc::new(Rendezvous {
        arrived: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        left: AtomicUsize::new(0),
    });
    let rr = r.clone();
    // Parks in the IPI handler (interrupts masked) until the work is done.
    crate::smp::smp_call_function_many(
        others.iter().copied(),
        Arc::new(move || {
            rr.arrived.fetch_add(1, Ordering::AcqRel);
            arch::cpu::sev();
            // WFE, not a busy spin: an emulator can then run the others.
            // The event register latches a SEV sent before the WFE.
            while rr.done.load(Ordering::Acquire) == 0 {
                arch::cpu::wfe();
            }
            arch::barrier::isb();
            rr.left.fetch_add(1, Ordering::AcqRel);
            arch::cpu::sev();
        }),
        false,
    );
    // Wait for everyone, serving cross-calls aimed at this CPU meanwhile
    // (none can be pending for long: the others are parking).
    while r.arrived.load(Ordering::Acquire) < others.len() {
        crate::smp::flush_pending_calls();
        core::hint::spin_loop();
    }
    let out = f();
    arch::barrier::dsb_ish();
    r.done.store(1, Ordering::Release);
    arch::barrier::dsb_ish();
    arch::cpu::sev();
    arch::barrier::isb();
    while r.left.load(Ordering::Acquire) < others.len() {
        arch::cpu::wfe();
    }
    drop(guard);
    out
}
