//! What a CPU does with nothing to run.

/// Waits for interrupts forever.
pub fn cpu_idle() -> ! {
    loop {
        arch::cpu::wfi();
    }
}
