//! The Arm generic timer: the system counter for time, and the EL1 virtual
//! timer for per-CPU ticks.

use aarch64_cpu::registers::{Readable, Writeable, CNTFRQ_EL0, CNTPCT_EL0, CNTV_CTL_EL0, CNTV_TVAL_EL0};

/// Counter frequency in Hz.
pub fn frequency() -> u64 {
    CNTFRQ_EL0.get()
}

/// The physical system counter. (EL1 may read it: set up at entry.)
#[inline(always)]
pub fn counter() -> u64 {
    crate::barrier::isb();
    CNTPCT_EL0.get()
}

/// Arms this CPU's virtual timer to fire in `ticks` counter ticks.
pub fn arm(ticks: u64) {
    CNTV_TVAL_EL0.set(ticks.min(i32::MAX as u64));
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
}

/// Stops this CPU's virtual timer.
pub fn disarm() {
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR);
}
