//! Powering the machine off or restarting it: PSCI where the device tree
//! offers it; otherwise stop every CPU.

/// Powers off (PSCI SYSTEM_OFF), or halts all CPUs if that is unavailable.
pub fn poweroff() -> ! {
    crate::pr_info!("reboot: Power down");
    if let Some(c) = crate::init::psci_conduit() {
        arch::psci::system_off(c);
    }
    if crate::drivers::bcm2835_pm::power_off() {
        crate::time::udelay(100_000);
    }
    crate::smp::smp_send_stop();
    crate::pr_info!("reboot: System halted");
    arch::cpu::halt()
}

/// Ends the machine after a panic, once the report is on the console and
/// the other CPUs are stopped: PSCI SYSTEM_OFF, or the Pi's watchdog, so
/// that an emulator exits instead of spinning (a person at the console
/// has already seen the report; a test harness sees QEMU end). Without
/// either, halts this CPU. Prints nothing: the console may be all that
/// still works.
pub fn panic_poweroff() -> ! {
    if let Some(c) = crate::init::psci_conduit() {
        arch::psci::system_off(c);
    }
    if crate::drivers::bcm2835_pm::power_off() {
        crate::time::udelay(100_000);
    }
    arch::cpu::halt()
}

/// Restarts (PSCI SYSTEM_RESET), or halts if unavailable.
pub fn restart() -> ! {
    crate::pr_info!("reboot: Restarting system");
    if let Some(c) = crate::init::psci_conduit() {
        arch::psci::system_reset(c);
    }
    if crate::drivers::bcm2835_pm::restart() {
        crate::time::udelay(100_000);
    }
    crate::smp::smp_send_stop();
    arch::cpu::halt()
}
