//! The GICv2 / GIC-400 interrupt controller (Arm IHI 0048B): distributor
//! and CPU interface registers, set-up, acknowledge/EOI, and SGIs.

use core::sync::atomic::{AtomicUsize, Ordering};
use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};
use tock_registers::{register_bitfields, register_structs};

register_bitfields! {u32,
    /// Distributor Control Register.
    GICD_CTLR [
        /// Forward pending interrupts to the CPU interfaces.
        Enable OFFSET(0) NUMBITS(1) []
    ],
    /// Interrupt Controller Type Register.
    GICD_TYPER [
        /// Number of implemented interrupt lines / 32, minus 1.
        ITLinesNumber OFFSET(0) NUMBITS(5) []
    ],
    /// Software Generated Interrupt Register.
    GICD_SGIR [
        /// 0: to the CPUs in CPUTargetList; 1: to all but self; 2: to self.
        TargetListFilter OFFSET(24) NUMBITS(2) [
            List = 0,
            AllButSelf = 1,
            SelfOnly = 2
        ],
        /// One bit per CPU interface.
        CPUTargetList OFFSET(16) NUMBITS(8) [],
        /// SGI number.
        SGIINTID OFFSET(0) NUMBITS(4) []
    ],
    /// CPU Interface Control Register.
    GICC_CTLR [
        /// Signal interrupts to the CPU.
        Enable OFFSET(0) NUMBITS(1) []
    ],
    /// Interrupt Priority Mask Register.
    GICC_PMR [
        /// Only interrupts of higher priority (lower value) are signalled.
        Priority OFFSET(0) NUMBITS(8) []
    ],
    /// Interrupt Acknowledge Register.
    GICC_IAR [
        /// Requesting CPU, for SGIs.
        CPUID OFFSET(10) NUMBITS(3) [],
        /// Interrupt ID; 1023 means none pending.
        InterruptID OFFSET(0) NUMBITS(10) []
    ]
}

register_structs! {
    /// Distributor registers.
    #[allow(non_snake_case)]
    pub DistributorRegs {
        (0x000 => CTLR: ReadWrite<u32, GICD_CTLR::Register>),
        (0x004 => TYPER: ReadOnly<u32, GICD_TYPER::Register>),
        (0x008 => _reserved0),
        (0x100 => ISENABLER: [ReadWrite<u32>; 32]),
        (0x180 => ICENABLER: [ReadWrite<u32>; 32]),
        (0x200 => _reserved1),
        (0x280 => ICPENDR: [ReadWrite<u32>; 32]),
        (0x300 => _reserved2),
        (0x400 => IPRIORITYR: [ReadWrite<u32>; 255]),
        (0x7fc => _reserved3),
        (0x800 => ITARGETSR: [ReadWrite<u32>; 255]),
        (0xbfc => _reserved4),
        (0xc00 => ICFGR: [ReadWrite<u32>; 64]),
        (0xd00 => _reserved5),
        (0xf00 => SGIR: WriteOnly<u32, GICD_SGIR::Register>),
        (0xf04 => @END),
    }
}

register_structs! {
    /// CPU interface registers.
    #[allow(non_snake_case)]
    pub CpuInterfaceRegs {
        (0x000 => CTLR: ReadWrite<u32, GICC_CTLR::Register>),
        (0x004 => PMR: ReadWrite<u32, GICC_PMR::Register>),
        (0x008 => _reserved0),
        (0x00c => IAR: ReadOnly<u32, GICC_IAR::Register>),
        (0x010 => EOIR: WriteOnly<u32>),
        (0x014 => @END),
    }
}

/// Interrupt IDs 0..16 are SGIs, 16..32 PPIs, 32.. SPIs; 1020.. special.
pub const NR_IRQS: usize = 1020;
/// IAR value meaning "no interrupt pending".
pub const SPURIOUS: u32 = 1023;

static DIST: AtomicUsize = AtomicUsize::new(0);
static CPUIF: AtomicUsize = AtomicUsize::new(0);

fn dist() -> &'static DistributorRegs {
    let va = DIST.load(Ordering::Acquire);
    assert!(va != 0, "GIC used before gic::init");
    // SAFETY: `init` stored the virtual address of the distributor's
    // registers, mapped as Device memory for the kernel's lifetime.
    unsafe { &*(va as *const DistributorRegs) }
}

fn cpuif() -> &'static CpuInterfaceRegs {
    let va = CPUIF.load(Ordering::Acquire);
    assert!(va != 0, "GIC used before gic::init");
    // SAFETY: as for `dist`, for the CPU interface.
    unsafe { &*(va as *const CpuInterfaceRegs) }
}

/// Sets up the distributor (boot CPU, once): every SPI disabled, lowest
/// useful priority, routed to the boot CPU, then forwarding on.
///
/// # Safety
/// `dist_va` and `cpu_va` must be mappings of a GICv2 distributor and CPU
/// interface, valid for the rest of the kernel's life.
pub unsafe fn init(dist_va: usize, cpu_va: usize) {
    DIST.store(dist_va, Ordering::Release);
    CPUIF.store(cpu_va, Ordering::Release);
    let d = dist();
    d.CTLR.set(0);
    let lines = ((d.TYPER.read(GICD_TYPER::ITLinesNumber) as usize + 1) * 32).min(NR_IRQS);
    for i in 1..lines / 32 {
        d.ICENABLER[i].set(u32::MAX);
        d.ICPENDR[i].set(u32::MAX);
    }
    for i in 8..lines / 4 {
        d.IPRIORITYR[i].set(0xa0a0_a0a0);
        d.ITARGETSR[i].set(0x0101_0101 * cpu_mask() as u32);
    }
    d.CTLR.write(GICD_CTLR::Enable::SET);
}

/// Sets up this CPU's banked state and its CPU interface.
pub fn init_cpu() {
    let d = dist();
    d.ICENABLER[0].set(u32::MAX);
    d.ICPENDR[0].set(u32::MAX);
    for i in 0..8 {
        d.IPRIORITYR[i].set(0xa0a0_a0a0);
    }
    let c = cpuif();
    c.PMR.write(GICC_PMR::Priority.val(0xf0));
    c.CTLR.write(GICC_CTLR::Enable::SET);
}

/// This CPU's interface bit in target lists: the banked ITARGETSR0..7 read
/// back the bit of the CPU reading them.
pub fn cpu_mask() -> u8 {
    let v = dist().ITARGETSR[0].get();
    (v | v >> 8 | v >> 16 | v >> 24) as u8
}

/// Enables interrupt `irq` (SGIs are always enabled on GICv2).
pub fn enable_irq(irq: u32) {
    dist().ISENABLER[irq as usize / 32].set(1 << (irq % 32));
}

/// Disables interrupt `irq`.
pub fn disable_irq(irq: u32) {
    dist().ICENABLER[irq as usize / 32].set(1 << (irq % 32));
}

/// Acknowledges the highest priority pending interrupt; returns the raw IAR
/// value (pass it to `eoi`) and the interrupt ID.
pub fn ack() -> (u32, u32) {
    let iar = cpuif().IAR.get();
    (iar, iar & 0x3ff)
}

/// Signals the end of handling of the interrupt acknowledged as `iar`.
pub fn eoi(iar: u32) {
    cpuif().EOIR.set(iar);
}

/// Sends SGI `sgi` to the CPU interfaces in `targets`.
pub fn send_sgi(sgi: u32, targets: u8) {
    crate::barrier::dsb_ishst();
    dist().SGIR.write(
        GICD_SGIR::TargetListFilter::List + GICD_SGIR::CPUTargetList.val(targets as u32) + GICD_SGIR::SGIINTID.val(sgi),
    );
}

/// Maps the distributor and CPU interface at the given physical addresses
/// (from the device tree) and sets up the distributor.
pub fn init_from_phys(dist_pa: u64, cpu_pa: u64) -> Result<(), crate::mmu::MapError> {
    let dist_va = crate::mmu::ioremap(dist_pa, 0x1000)?;
    let cpu_va = crate::mmu::ioremap(cpu_pa, 0x2000)?;
    // SAFETY: the addresses come from the device tree's GICv2 node and were
    // just mapped as Device memory, never unmapped.
    unsafe { init(dist_va, cpu_va) };
    Ok(())
}
