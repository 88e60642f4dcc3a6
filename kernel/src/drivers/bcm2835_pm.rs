//! The BCM2835/BCM2711 power-management watchdog: how a Raspberry Pi
//! (which has no PSCI) restarts and powers off, as Linux's
//! `bcm2835_wdt` does: a full reset through the watchdog, with the reset
//! partition set to 63 (0x555 in RSTS) meaning "halt" to the firmware (and
//! to QEMU's model, which then ends the emulation).
#![allow(unsafe_code)] // MMIO: the register block is reached through a raw mapping.

use tock_registers::interfaces::{ReadWriteable, Readable, Writeable};
use tock_registers::registers::ReadWrite;
use tock_registers::{register_bitfields, register_structs};

register_bitfields! {u32,
    /// Reset control.
    PM_RSTC [
        /// Every write must carry the password 0x5a.
        PASSWD OFFSET(24) NUMBITS(8) [Magic = 0x5a],
        /// Reset configuration: 0b10 = full reset when the watchdog fires.
        WRCFG OFFSET(4) NUMBITS(2) [Clear = 0b00, FullReset = 0b10]
    ],
    /// Reset status; the firmware reads the boot partition from it.
    PM_RSTS [
        /// Password.
        PASSWD OFFSET(24) NUMBITS(8) [Magic = 0x5a],
        /// Boot partition, spread over even bits; all set (0x555) = halt.
        PARTITION OFFSET(0) NUMBITS(12) [Halt = 0x555, Normal = 0]
    ],
    /// Watchdog counter.
    PM_WDOG [
        /// Password.
        PASSWD OFFSET(24) NUMBITS(8) [Magic = 0x5a],
        /// Ticks (of 16 us) until the watchdog fires.
        TIME OFFSET(0) NUMBITS(20) []
    ]
}

register_structs! {
    /// The watchdog part of the PM block.
    #[allow(non_snake_case)]
    pub PmRegs {
        (0x00 => _reserved0),
        (0x1c => RSTC: ReadWrite<u32, PM_RSTC::Register>),
        (0x20 => RSTS: ReadWrite<u32, PM_RSTS::Register>),
        (0x24 => WDOG: ReadWrite<u32, PM_WDOG::Register>),
        (0x28 => @END),
    }
}

static PM: spin::Once<usize> = spin::Once::new();

/// Maps the block at physical `base` (from the device tree).
pub fn init(base: u64) {
    if let Some(va) = arch::addr::PhysAddr::new(base).and_then(|pa| arch::mmu::ioremap(pa, 0x1000).ok()) {
        PM.call_once(|| va.as_usize());
    }
}

fn regs() -> Option<&'static PmRegs> {
    // SAFETY: `init` mapped the device tree's PM block as Device memory for
    // the kernel's life; the registers are only accessed through MMIO.
    PM.get().map(|&va| unsafe { &*(va as *const PmRegs) })
}

fn reset(halt: bool) -> bool {
    let Some(r) = regs() else { return false };
    let partition = if halt {
        PM_RSTS::PARTITION::Halt
    } else {
        PM_RSTS::PARTITION::Normal
    };
    r.RSTS.modify(PM_RSTS::PASSWD::Magic + partition);
    r.WDOG.write(PM_WDOG::PASSWD::Magic + PM_WDOG::TIME.val(10));
    r.RSTC.modify(PM_RSTC::PASSWD::Magic + PM_RSTC::WRCFG::FullReset);
    let _ = r.RSTC.get();
    true
}

/// Powers off through the watchdog; returns false if there is none.
pub fn power_off() -> bool {
    reset(true)
}

/// Restarts through the watchdog; returns false if there is none.
pub fn restart() -> bool {
    reset(false)
}
