//! The Arm generic timer: the system counter for time, and the EL1 virtual
//! timer for per-CPU ticks.

use aarch64_cpu::registers::{
    Readable, Writeable, CNTFRQ_EL0, CNTKCTL_EL1, CNTVCT_EL0, CNTV_CTL_EL0, CNTV_CVAL_EL0, CNTV_TVAL_EL0,
};

/// Counter frequency in Hz.
pub fn frequency() -> u64 {
    CNTFRQ_EL0.get()
}

/// The virtual counter, `CNTVCT_EL0`, as Linux's arch timer reads it at
/// EL1: the one user space reads too (the vDSO), so that kernel and user
/// clocks agree whatever `CNTVOFF_EL2` a hypervisor set.
#[inline(always)]
pub fn counter() -> u64 {
    crate::barrier::isb();
    CNTVCT_EL0.get()
}

/// Arms this CPU's virtual timer to fire in `ticks` counter ticks.
pub fn arm(ticks: u64) {
    CNTV_TVAL_EL0.set(ticks.min(i32::MAX as u64));
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
}

/// Arms this CPU's virtual timer to fire when the virtual counter reaches
/// `cval` (at once if it already has): the one-shot deadline of a
/// high-resolution timeout.
pub fn arm_at(cval: u64) {
    CNTV_CVAL_EL0.set(cval);
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
}

/// Stops this CPU's virtual timer.
pub fn disarm() {
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR);
}

/// Lets EL0 read the virtual counter (and so `CNTFRQ_EL0`) on this CPU, as
/// Linux's `arch_counter_set_user_access()` does; the physical counter,
/// the timers and the event stream stay EL1's.
pub fn set_user_access() {
    CNTKCTL_EL1.write(
        CNTKCTL_EL1::EL0VCTEN::SET
            + CNTKCTL_EL1::EL0PCTEN::CLEAR
            + CNTKCTL_EL1::EL0VTEN::CLEAR
            + CNTKCTL_EL1::EL0PTEN::CLEAR
            + CNTKCTL_EL1::EVNTEN::CLEAR,
    );
}
