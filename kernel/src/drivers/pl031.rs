//! The Arm PrimeCell PL031 real-time clock (Arm DDI 0224C), read once at
//! boot to set `CLOCK_REALTIME`, as Linux's `rtc-pl031` with
//! `CONFIG_RTC_HCTOSYS` does. QEMU `virt` has one; a Raspberry Pi has no
//! RTC and keeps the epoch.
#![allow(unsafe_code)] // MMIO: the register block is reached through a raw mapping.

use tock_registers::interfaces::Readable;
use tock_registers::register_structs;
use tock_registers::registers::ReadOnly;

register_structs! {
    /// The PL031 registers this driver reads.
    #[allow(non_snake_case)]
    pub Pl031Regs {
        /// Data Register: the current time, in seconds since the epoch.
        (0x000 => DR: ReadOnly<u32>),
        (0x004 => @END),
    }
}

/// Maps the clock at physical `base` (from the device tree) and returns
/// its time in seconds since the epoch.
pub fn read_time(base: u64) -> Option<u64> {
    let va = arch::mmu::ioremap(arch::addr::PhysAddr::new(base)?, 0x1000).ok()?;
    // SAFETY: `ioremap` mapped the device tree's PL031 block as Device
    // memory for the kernel's life, and it covers the one register read.
    let regs = unsafe { &*va.as_ptr::<Pl031Regs>() };
    Some(u64::from(regs.DR.get()))
}
