//! The interrupt controller: GICv2 / GIC-400 (Arm IHI 0048B: distributor
//! and memory-mapped CPU interface), both boards' default, and GICv3 (Arm
//! IHI 0069: distributor with affinity routing, per-CPU redistributors,
//! system-register CPU interface), which QEMU virt offers with
//! gic-version=3. The device tree says which; the functions below serve
//! either.

use core::sync::atomic::{AtomicUsize, Ordering};
use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};
use tock_registers::{register_bitfields, register_structs};

/// The priority of every interrupt (Linux's GICD_INT_DEF_PRI): below the
/// mask, so all are signalled.
const DEFAULT_PRIORITY: u8 = 0xa0;
/// `DEFAULT_PRIORITY` in each byte of a GICD_IPRIORITYR word (four IRQs).
const DEFAULT_PRIORITY_X4: u32 = u32::from_ne_bytes([DEFAULT_PRIORITY; 4]);
/// The CPU interface priority mask (Linux's DEFAULT_PMR_VALUE): lets
/// through every priority above 0xf0, so all of ours.
const DEFAULT_PMR_VALUE: u8 = 0xf0;

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
/// 2 or 3 once set up.
static VERSION: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

fn is_v3() -> bool {
    VERSION.load(Ordering::Acquire) == 3
}

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
    VERSION.store(2, Ordering::Release);
    let d = dist();
    d.CTLR.set(0);
    let lines = ((d.TYPER.read(GICD_TYPER::ITLinesNumber) as usize + 1) * 32).min(NR_IRQS);
    for i in 1..lines / 32 {
        d.ICENABLER[i].set(u32::MAX);
        d.ICPENDR[i].set(u32::MAX);
    }
    for i in 8..lines / 4 {
        d.IPRIORITYR[i].set(DEFAULT_PRIORITY_X4);
        d.ITARGETSR[i].set(0x0101_0101 * cpu_mask() as u32);
    }
    d.CTLR.write(GICD_CTLR::Enable::SET);
}

/// Sets up this CPU's banked state (v2) or redistributor (v3) and its CPU
/// interface.
pub fn init_cpu() {
    if is_v3() {
        v3::init_cpu();
        return;
    }
    let d = dist();
    d.ICENABLER[0].set(u32::MAX);
    d.ICPENDR[0].set(u32::MAX);
    for i in 0..8 {
        d.IPRIORITYR[i].set(DEFAULT_PRIORITY_X4);
    }
    let c = cpuif();
    c.PMR.write(GICC_PMR::Priority.val(DEFAULT_PMR_VALUE.into()));
    c.CTLR.write(GICC_CTLR::Enable::SET);
}

/// This CPU's interface bit in target lists (GICv2): the banked
/// ITARGETSR0..7 read back the bit of the CPU reading them.
fn cpu_mask() -> u8 {
    let v = dist().ITARGETSR[0].get();
    // On a uniprocessor GIC these read as zero and targets are ignored:
    // CPU interface 0 is the only one.
    match (v | v >> 8 | v >> 16 | v >> 24) as u8 {
        0 => 1,
        m => m,
    }
}

/// Enables interrupt `irq` (SGIs and PPIs: on this CPU).
pub fn enable_irq(irq: u32) {
    if is_v3() && irq < 32 {
        v3::set_private_enable(irq, true);
    } else {
        dist().ISENABLER[irq as usize / 32].set(1 << (irq % 32));
    }
}

/// Disables interrupt `irq`.
pub fn disable_irq(irq: u32) {
    if is_v3() && irq < 32 {
        v3::set_private_enable(irq, false);
    } else {
        dist().ICENABLER[irq as usize / 32].set(1 << (irq % 32));
    }
}

/// Acknowledges the highest priority pending interrupt; returns the raw IAR
/// value (pass it to `eoi`) and the interrupt ID.
pub fn ack() -> (u32, u32) {
    if is_v3() {
        return v3::ack();
    }
    let iar = cpuif().IAR.extract();
    (iar.get(), iar.read(GICC_IAR::InterruptID))
}

/// Signals the end of handling of the interrupt acknowledged as `iar`.
pub fn eoi(iar: u32) {
    if is_v3() {
        v3::eoi(iar);
    } else {
        cpuif().EOIR.set(iar);
    }
}

/// How an SGI reaches a CPU: its GICv2 CPU-interface bit, or (GICv3) its
/// affinity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgiTarget {
    /// GICv2 CPU interface bit.
    pub mask: u8,
    /// MPIDR affinity.
    pub mpidr: u64,
}

/// This CPU as an SGI target.
pub fn this_cpu_target() -> SgiTarget {
    SgiTarget {
        mask: if is_v3() { 0 } else { cpu_mask() },
        mpidr: crate::cpu::mpidr(),
    }
}

/// Sends SGI `sgi` to each of `targets`.
pub fn send_sgi(sgi: u32, targets: &[SgiTarget]) {
    crate::barrier::dsb_ishst();
    if is_v3() {
        for t in targets {
            v3::send_sgi(sgi, t.mpidr);
        }
        return;
    }
    let mask = targets.iter().fold(0, |m, t| m | t.mask);
    if mask != 0 {
        dist().SGIR.write(
            GICD_SGIR::TargetListFilter::List
                + GICD_SGIR::CPUTargetList.val(mask as u32)
                + GICD_SGIR::SGIINTID.val(sgi),
        );
    }
}

/// A device-tree register base as a physical address; one the page tables
/// cannot map is outside any window they can give.
fn dt_phys(pa: u64) -> Result<crate::addr::PhysAddr, crate::mmu::MapError> {
    crate::addr::PhysAddr::new(pa).ok_or(crate::mmu::MapError::OutOfWindow)
}

/// Maps the distributor and CPU interface at the given physical addresses
/// (from the device tree) and sets up the distributor.
pub fn init_from_phys(dist_pa: u64, cpu_pa: u64) -> Result<(), crate::mmu::MapError> {
    let dist_va = crate::mmu::ioremap(dt_phys(dist_pa)?, 0x1000)?.as_usize();
    let cpu_va = crate::mmu::ioremap(dt_phys(cpu_pa)?, 0x2000)?.as_usize();
    // SAFETY: the addresses come from the device tree's GICv2 node and were
    // just mapped as Device memory, never unmapped.
    unsafe { init(dist_va, cpu_va) };
    Ok(())
}

/// Maps a GICv3 distributor and redistributor regions (from the device
/// tree) and sets up the distributor.
pub fn init_v3_from_phys(dist_pa: u64, redists: &[(u64, u64)]) -> Result<(), crate::mmu::MapError> {
    let dist_va = crate::mmu::ioremap(dt_phys(dist_pa)?, 0x1_0000)?.as_usize();
    for &(pa, size) in redists.iter().take(v3::MAX_REDIST_REGIONS) {
        let va = crate::mmu::ioremap(dt_phys(pa)?, size as usize)?.as_usize();
        v3::add_redist_region(va, size as usize);
    }
    DIST.store(dist_va, Ordering::Release);
    VERSION.store(3, Ordering::Release);
    v3::init_dist(dist_va);
    Ok(())
}

/// GICv3: affinity routing, redistributors, ICC_* system registers.
mod v3 {
    use super::NR_IRQS;
    use aarch64_cpu::registers::MPIDR_EL1;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use tock_registers::interfaces::{Readable, Writeable};
    use tock_registers::registers::{InMemoryRegister, ReadOnly, ReadWrite};
    use tock_registers::{register_bitfields, register_structs};

    register_bitfields! {u32,
        /// Distributor Control Register (with affinity routing).
        GICD_CTLR3 [
            /// Register write pending.
            RWP OFFSET(31) NUMBITS(1) [],
            /// Affinity routing enabled (non-secure).
            ARE_NS OFFSET(4) NUMBITS(1) [],
            /// Group 1 (non-secure) interrupts enabled.
            EnableGrp1A OFFSET(1) NUMBITS(1) [],
            /// Group 1 enabled (single security state).
            EnableGrp1 OFFSET(0) NUMBITS(1) []
        ],
        /// Redistributor wake register.
        GICR_WAKER [
            /// All of this redistributor's interfaces are quiescent.
            ChildrenAsleep OFFSET(2) NUMBITS(1) [],
            /// The connected PE is asleep.
            ProcessorSleep OFFSET(1) NUMBITS(1) []
        ]
    }
    register_bitfields! {u64,
        /// Redistributor type register.
        GICR_TYPER [
            /// Affinity of the connected PE: Aff3.Aff2.Aff1.Aff0.
            Affinity OFFSET(32) NUMBITS(32) [],
            /// The last redistributor of its region.
            Last OFFSET(4) NUMBITS(1) [],
            /// Virtual LPIs supported: frames are 4 × 64 KiB instead of 2.
            VLPIS OFFSET(1) NUMBITS(1) []
        ]
    }

    register_bitfields! {u64,
        /// ICC_SRE_EL1: system register interface enable.
        ICC_SRE_EL1 [
            /// Use the ICC_* system registers, not the memory-mapped interface.
            SRE OFFSET(0) NUMBITS(1) []
        ],
        /// ICC_PMR_EL1: the priority mask.
        ICC_PMR_EL1 [
            /// Only interrupts of a higher priority (lower value) are signalled.
            Priority OFFSET(0) NUMBITS(8) []
        ],
        /// ICC_BPR1_EL1: binary point for group 1 preemption.
        ICC_BPR1_EL1 [
            /// How many low priority bits are ignored for preemption.
            BinaryPoint OFFSET(0) NUMBITS(3) []
        ],
        /// ICC_IGRPEN1_EL1: group 1 interrupt enable.
        ICC_IGRPEN1_EL1 [
            /// Group 1 interrupts are signalled to this PE.
            Enable OFFSET(0) NUMBITS(1) []
        ],
        /// ICC_IAR1_EL1 / ICC_EOIR1_EL1: an acknowledged group 1 interrupt.
        ICC_IAR1_EL1 [
            /// The interrupt ID.
            INTID OFFSET(0) NUMBITS(24) []
        ],
        /// ICC_SGI1R_EL1: generate a group 1 SGI.
        ICC_SGI1R_EL1 [
            /// Aff3 of the targets.
            Aff3 OFFSET(48) NUMBITS(8) [],
            /// Range selector: the target list covers Aff0 = RS * 16 + 0..15.
            RS OFFSET(44) NUMBITS(4) [],
            /// Aff2 of the targets.
            Aff2 OFFSET(32) NUMBITS(8) [],
            /// The SGI number.
            INTID OFFSET(24) NUMBITS(4) [],
            /// Aff1 of the targets.
            Aff1 OFFSET(16) NUMBITS(8) [],
            /// One bit per target Aff0 (within the range RS selects).
            TargetList OFFSET(0) NUMBITS(16) []
        ]
    }

    /// A GICv3 CPU interface system register, which aarch64-cpu does not
    /// declare: read and written with `mrs`/`msr` of its encoding.
    macro_rules! icc_sysreg {
        ($name:ident, $reg:ident, $enc:literal, read) => {
            struct $name;
            impl Readable for $name {
                type T = u64;
                type R = $reg::Register;
                fn get(&self) -> u64 {
                    let v: u64;
                    // SAFETY: reads an ICC_* register of this CPU's interface
                    // (enabled by SRE); IAR's read acknowledges, as callers mean.
                    unsafe { core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) v, options(nostack)) };
                    v
                }
            }
        };
        ($name:ident, $reg:ident, $enc:literal, write) => {
            struct $name;
            impl Writeable for $name {
                type T = u64;
                type R = $reg::Register;
                fn set(&self, v: u64) {
                    // SAFETY: writes an ICC_* register of this CPU's
                    // interface; the ISB makes the change take effect now.
                    unsafe { core::arch::asm!(concat!("msr ", $enc, ", {}"), "isb", in(reg) v, options(nostack)) };
                }
            }
        };
    }

    icc_sysreg!(IccSreRead, ICC_SRE_EL1, "S3_0_C12_C12_5", read);
    icc_sysreg!(IccSre, ICC_SRE_EL1, "S3_0_C12_C12_5", write);
    icc_sysreg!(IccPmr, ICC_PMR_EL1, "S3_0_C4_C6_0", write);
    icc_sysreg!(IccBpr1, ICC_BPR1_EL1, "S3_0_C12_C12_3", write);
    icc_sysreg!(IccIgrpen1, ICC_IGRPEN1_EL1, "S3_0_C12_C12_7", write);
    icc_sysreg!(IccIar1, ICC_IAR1_EL1, "S3_0_C12_C12_0", read);
    icc_sysreg!(IccEoir1, ICC_IAR1_EL1, "S3_0_C12_C12_1", write);
    icc_sysreg!(IccSgi1r, ICC_SGI1R_EL1, "S3_0_C12_C11_5", write);

    register_structs! {
        /// GICv3 distributor.
        #[allow(non_snake_case)]
        pub Dist3 {
            (0x0000 => CTLR: ReadWrite<u32, GICD_CTLR3::Register>),
            (0x0004 => TYPER: ReadOnly<u32, super::GICD_TYPER::Register>),
            (0x0008 => _r0),
            (0x0080 => IGROUPR: [ReadWrite<u32>; 32]),
            (0x0100 => ISENABLER: [ReadWrite<u32>; 32]),
            (0x0180 => ICENABLER: [ReadWrite<u32>; 32]),
            (0x0200 => _r1),
            (0x0280 => ICPENDR: [ReadWrite<u32>; 32]),
            (0x0300 => _r2),
            (0x0400 => IPRIORITYR: [ReadWrite<u32>; 255]),
            (0x07fc => _r3),
            (0x6000 => IROUTER: [ReadWrite<u64>; 1020]),
            (0x7fe0 => @END),
        }
    }
    register_structs! {
        /// A redistributor's RD_base frame.
        #[allow(non_snake_case)]
        pub RdBase {
            (0x0000 => CTLR: ReadWrite<u32>),
            (0x0004 => IIDR: ReadOnly<u32>),
            (0x0008 => TYPER: ReadOnly<u64, GICR_TYPER::Register>),
            (0x0010 => _r0),
            (0x0014 => WAKER: ReadWrite<u32, GICR_WAKER::Register>),
            (0x0018 => @END),
        }
    }
    register_structs! {
        /// A redistributor's SGI_base frame (64 KiB after RD_base).
        #[allow(non_snake_case)]
        pub SgiBase {
            (0x0000 => _r0),
            (0x0080 => IGROUPR0: ReadWrite<u32>),
            (0x0084 => _r1),
            (0x0100 => ISENABLER0: ReadWrite<u32>),
            (0x0104 => _r2),
            (0x0180 => ICENABLER0: ReadWrite<u32>),
            (0x0184 => _r3),
            (0x0280 => ICPENDR0: ReadWrite<u32>),
            (0x0284 => _r4),
            (0x0400 => IPRIORITYR: [ReadWrite<u32>; 8]),
            (0x0420 => @END),
        }
    }

    pub const MAX_REDIST_REGIONS: usize = 4;
    const MAX_CPUS: usize = 8;
    static REGIONS: [(AtomicUsize, AtomicUsize); MAX_REDIST_REGIONS] =
        [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_REDIST_REGIONS];
    /// Each CPU's RD_base, by logical CPU number.
    static RD: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(0) }; MAX_CPUS];

    pub fn add_redist_region(va: usize, size: usize) {
        if let Some(slot) = REGIONS.iter().find(|r| r.0.load(Ordering::Relaxed) == 0) {
            slot.1.store(size, Ordering::Relaxed);
            slot.0.store(va, Ordering::Release);
        }
    }

    fn dist() -> &'static Dist3 {
        // SAFETY: init_v3_from_phys mapped the distributor (64 KiB) as
        // Device memory for the kernel's life.
        unsafe { &*(super::DIST.load(Ordering::Acquire) as *const Dist3) }
    }

    fn rd_at(va: usize) -> &'static RdBase {
        // SAFETY: `va` is inside a mapped redistributor region.
        unsafe { &*(va as *const RdBase) }
    }

    fn sgi_base() -> &'static SgiBase {
        let rd = RD[crate::cpu::cpu_id()].load(Ordering::Acquire);
        assert!(rd != 0, "GICv3: no redistributor for this CPU");
        // SAFETY: the SGI frame follows this CPU's RD frame in a mapped region.
        unsafe { &*((rd + 0x1_0000) as *const SgiBase) }
    }

    fn wait_rwp() {
        while dist().CTLR.is_set(GICD_CTLR3::RWP) {
            core::hint::spin_loop();
        }
    }

    /// The MPIDR affinity as GICD_IROUTER / GICR_TYPER write it.
    fn affinity_u32(mpidr: u64) -> u32 {
        // Aff3 (MPIDR bits 39:32) goes to bits 31:24, above Aff2..Aff0.
        let m = InMemoryRegister::<u64, MPIDR_EL1::Register>::new(mpidr);
        u32::from_be_bytes([
            m.read(MPIDR_EL1::Aff3) as u8,
            m.read(MPIDR_EL1::Aff2) as u8,
            m.read(MPIDR_EL1::Aff1) as u8,
            m.read(MPIDR_EL1::Aff0) as u8,
        ])
    }

    pub fn init_dist(_va: usize) {
        let d = dist();
        d.CTLR.set(0);
        wait_rwp();
        let lines = ((d.TYPER.read(super::GICD_TYPER::ITLinesNumber) as usize + 1) * 32).min(NR_IRQS);
        let me = crate::cpu::mpidr();
        // GICD_IROUTER takes MPIDR's affinity fields at their places.
        let route = me;
        for i in 1..lines / 32 {
            d.IGROUPR[i].set(u32::MAX);
            d.ICENABLER[i].set(u32::MAX);
            d.ICPENDR[i].set(u32::MAX);
        }
        for i in 8..lines / 4 {
            d.IPRIORITYR[i].set(super::DEFAULT_PRIORITY_X4);
        }
        for irq in 32..lines {
            d.IROUTER[irq].set(route);
        }
        wait_rwp();
        d.CTLR
            .write(GICD_CTLR3::ARE_NS::SET + GICD_CTLR3::EnableGrp1A::SET + GICD_CTLR3::EnableGrp1::SET);
        wait_rwp();
    }

    fn find_redistributor() -> Option<usize> {
        let want = affinity_u32(crate::cpu::mpidr());
        for r in REGIONS.iter() {
            let (base, size) = (r.0.load(Ordering::Acquire), r.1.load(Ordering::Relaxed));
            if base == 0 {
                continue;
            }
            let mut va = base;
            while va + 0x2_0000 <= base + size {
                let t = rd_at(va).TYPER.extract();
                if t.read(GICR_TYPER::Affinity) as u32 == want {
                    return Some(va);
                }
                if t.is_set(GICR_TYPER::Last) {
                    break;
                }
                va += if t.is_set(GICR_TYPER::VLPIS) {
                    0x4_0000
                } else {
                    0x2_0000
                };
            }
        }
        None
    }

    pub fn init_cpu() {
        let rd = find_redistributor().expect("GICv3: no redistributor matches this CPU's affinity");
        RD[crate::cpu::cpu_id()].store(rd, Ordering::Release);
        let r = rd_at(rd);
        r.WAKER.write(GICR_WAKER::ProcessorSleep::CLEAR);
        while r.WAKER.is_set(GICR_WAKER::ChildrenAsleep) {
            core::hint::spin_loop();
        }
        let s = sgi_base();
        s.IGROUPR0.set(u32::MAX);
        s.ICENABLER0.set(0xffff_0000);
        s.ICPENDR0.set(u32::MAX);
        for p in s.IPRIORITYR.iter() {
            p.set(super::DEFAULT_PRIORITY_X4);
        }
        // SGIs are always on, as on GICv2.
        s.ISENABLER0.set(0x0000_ffff);
        // System registers on, priority mask, no preemption grouping, group 1
        // on; interrupts are still masked in PSTATE.
        IccSre.set(IccSreRead.get() | ICC_SRE_EL1::SRE::SET.value);
        IccPmr.write(ICC_PMR_EL1::Priority.val(super::DEFAULT_PMR_VALUE.into()));
        IccBpr1.write(ICC_BPR1_EL1::BinaryPoint.val(0));
        IccIgrpen1.write(ICC_IGRPEN1_EL1::Enable::SET);
    }

    pub fn set_private_enable(irq: u32, on: bool) {
        let s = sgi_base();
        if on {
            s.ISENABLER0.set(1 << irq);
        } else {
            s.ICENABLER0.set(1 << irq);
        }
    }

    /// The raw IAR (EOIR takes back exactly what IAR gave) and the INTID.
    pub fn ack() -> (u32, u32) {
        let iar = IccIar1.get();
        let intid = InMemoryRegister::<u64, ICC_IAR1_EL1::Register>::new(iar).read(ICC_IAR1_EL1::INTID);
        // IAR1 holds INTID (24 bits) and RES0 above: nothing is lost.
        (iar as u32, intid as u32)
    }

    pub fn eoi(iar: u32) {
        IccEoir1.set(iar.into());
    }

    pub fn send_sgi(sgi: u32, mpidr: u64) {
        let m = InMemoryRegister::<u64, MPIDR_EL1::Register>::new(mpidr);
        let aff0 = m.read(MPIDR_EL1::Aff0);
        // The target list covers 16 Aff0 values; RS selects which 16.
        IccSgi1r.write(
            ICC_SGI1R_EL1::Aff3.val(m.read(MPIDR_EL1::Aff3))
                + ICC_SGI1R_EL1::RS.val(aff0 >> 4)
                + ICC_SGI1R_EL1::Aff2.val(m.read(MPIDR_EL1::Aff2))
                + ICC_SGI1R_EL1::INTID.val(sgi.into())
                + ICC_SGI1R_EL1::Aff1.val(m.read(MPIDR_EL1::Aff1))
                + ICC_SGI1R_EL1::TargetList.val(1 << (aff0 & 0xf)),
        );
    }
}
