//! The generic timer's virtual counter at EL0: Linux lets user code read
//! `CNTVCT_EL0` and `CNTFRQ_EL0` directly (`CNTKCTL_EL1.EL0VCTEN`), which
//! runtimes and benchmarks use to time themselves.

use crate::sys::*;
use crate::{checks, ensure, Check, Outcome};

pub static CHECKS: &[Check] = checks![el0_reads_virtual_counter_and_frequency];

/// `CNTVCT_EL0`, read at EL0.
pub(crate) fn cntvct() -> u64 {
    let v: u64;
    // SAFETY: reads a system register; no memory is touched. The ISB
    // keeps the read from being taken early.
    unsafe { core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) v) };
    v
}

/// `CNTFRQ_EL0`, read at EL0.
pub(crate) fn cntfrq() -> u64 {
    let v: u64;
    // SAFETY: reads a system register; no memory is touched.
    unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) v) };
    v
}

fn el0_reads_virtual_counter_and_frequency() -> Outcome {
    let freq = cntfrq();
    ensure!(freq >= 1_000_000, "CNTFRQ_EL0 = {freq} Hz");
    let t0 = now_ns();
    let c0 = cntvct();
    nanosleep(&Timespec::ms(20)).map_err(|(e, _)| e)?;
    let c1 = cntvct();
    let t1 = now_ns();
    ensure!(c1 > c0, "CNTVCT_EL0 did not advance: {c0} then {c1}");
    // The counter measures the sleep as CLOCK_MONOTONIC does, within 10%
    // and a tick either way.
    let counted_ns = ((c1 - c0) as u128 * 1_000_000_000 / freq as u128) as i64;
    let slept_ns = t1 - t0;
    ensure!(
        counted_ns >= 20_000_000 && (counted_ns - slept_ns).abs() <= slept_ns / 10 + 4_000_000,
        "counter says {counted_ns} ns, CLOCK_MONOTONIC {slept_ns} ns"
    );
    Ok(())
}
