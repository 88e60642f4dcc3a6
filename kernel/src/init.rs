//! Kernel start-up on the boot CPU (Linux's `start_kernel`): device tree,
//! page tables, console, memory, interrupts, timer, the other CPUs.

use crate::drivers::pl011::{Pl011, PL011_SIZE};
use crate::mm::PhysRange;
use arch::boot::{DtbError, DtbMapping};
use devicetree::{Gic, Platform, PsciConduit};

static PLATFORM: spin::Once<Platform<'static>> = spin::Once::new();
/// Counter value at entry, and when the other CPUs were all up.
static BOOT_TIMES: spin::Once<(u64, u64)> = spin::Once::new();

/// The machine's device-tree description (after start-up).
pub fn platform() -> Option<&'static Platform<'static>> {
    PLATFORM.get()
}

/// How PSCI is reached, if the device tree offers it.
pub fn psci_conduit() -> Option<arch::psci::Conduit> {
    platform()?.psci.map(|c| match c {
        PsciConduit::Hvc => arch::psci::Conduit::Hvc,
        PsciConduit::Smc => arch::psci::Conduit::Smc,
    })
}

/// The `model` of the device tree.
pub fn machine_model() -> &'static str {
    platform().map_or("unknown", |p| p.model)
}

/// The kernel command line.
pub fn boot_command_line() -> &'static str {
    platform().map_or("", |p| p.bootargs)
}

/// CPUs the device tree describes.
pub fn platform_cpu_count() -> usize {
    platform().map_or(1, |p| p.cpus.as_slice().len().max(1))
}

/// Nanoseconds from kernel entry until every CPU was online.
pub fn boot_to_smp_ns() -> u64 {
    BOOT_TIMES.get().map_or(0, |&(entry, up)| {
        ((up - entry) as u128 * 1_000_000_000 / arch::timer::frequency().max(1) as u128) as u64
    })
}

#[allow(unsafe_code)] // The one view of boot-loader memory: the DTB.
fn dtb_view(pa: u64, via: DtbMapping) -> Result<&'static [u8], DtbError> {
    // SAFETY: the idmap view is used only before `paging_init` (in
    // `start_kernel`, which parses it into plain values first); the linear
    // view's memory is reserved from the frame allocator below, forever.
    unsafe { arch::boot::dtb_view(pa, via) }
}

/// The first Rust code on the boot CPU, called from `primary_switched` with
/// the DTB's physical address, the counter at entry, and the image's
/// physical base.
#[allow(unsafe_code)] // exported for the entry code
#[no_mangle]
pub extern "C" fn start_kernel(dtb_pa: u64, boot_counter: u64, phys_base: u64) -> ! {
    arch::cpu::set_cpu_id(0);
    crate::printk::set_boot_counter(boot_counter);

    // Parse the DTB through the identity map, for the RAM to map.
    let early = dtb_view(dtb_pa, DtbMapping::Idmap)
        .map_err(DtbProblem::View)
        .and_then(|b| devicetree::parse(b).map_err(DtbProblem::Parse));
    let ram: [(u64, u64); devicetree::MAX_MEMORY_REGIONS] = {
        let mut ram = [(0, 0); devicetree::MAX_MEMORY_REGIONS];
        if let Ok(p) = &early {
            for (slot, r) in ram.iter_mut().zip(p.memory.as_slice()) {
                *slot = (r.base, r.size);
            }
        }
        ram
    };
    let early_err = early.as_ref().err().copied();
    let paged = arch::addr::PhysAddr::new(phys_base)
        .ok_or(arch::mmu::MapError::OutOfWindow)
        .and_then(|base| arch::mmu::paging_init(base, &arch::mmu::KernelMapSpec { ram: &ram }));
    if paged.is_err() {
        arch::cpu::halt();
    }
    if let Some(e) = early_err {
        no_dtb_halt(phys_base, e);
    }
    let platform = match dtb_view(dtb_pa, DtbMapping::Linear)
        .map_err(DtbProblem::View)
        .and_then(|b| devicetree::parse(b).map_err(DtbProblem::Parse))
    {
        Ok(p) => PLATFORM.call_once(|| p),
        Err(e) => no_dtb_halt(phys_base, e),
    };

    console_init(platform, phys_base);
    // Linux's early parameters for the console log level.
    for arg in platform.bootargs.split_whitespace() {
        if arg == "quiet" {
            crate::printk::set_console_loglevel(4);
        } else if let Some(n) = arg.strip_prefix("loglevel=").and_then(|v| v.parse::<u8>().ok()) {
            crate::printk::set_console_loglevel(n + 1);
        }
    }
    crate::pr_info!(
        "Booting Linux on physical CPU 0x{:010x} [0x{:08x}]",
        arch::cpu::mpidr(),
        arch::cpu::midr()
    );
    crate::pr_info!("Machine model: {}", platform.model);
    if arch::cpu::enable_pan() {
        crate::pr_info!("CPU features: detected: Privileged Access Never");
    }
    crate::pr_info!("Kernel command line: {}", platform.bootargs);

    let mut reserved = [PhysRange { start: 0, end: 0 }; devicetree::MAX_RESERVED_REGIONS + 2];
    let (img_lo, img_hi) = arch::mmu::kimage_phys_range();
    reserved[0] = PhysRange {
        start: img_lo.as_u64(),
        end: img_hi.as_u64(),
    };
    reserved[1] = PhysRange {
        start: dtb_pa,
        end: dtb_pa + platform.total_size as u64,
    };
    for (slot, r) in reserved[2..].iter_mut().zip(platform.reserved.as_slice()) {
        *slot = PhysRange {
            start: r.base,
            end: r.base + r.size,
        };
    }
    let ram_ranges: alloc_free::Ranges = platform
        .memory
        .as_slice()
        .iter()
        .map(|r| PhysRange {
            start: r.base,
            end: r.base + r.size,
        })
        .collect();
    let frames = crate::mm::frame::init(ram_ranges.as_slice(), &reserved);
    crate::pr_info!(
        "Memory: {}K/{}K available ({}K kernel)",
        frames * 4,
        platform.memory.as_slice().iter().map(|r| r.size / 1024).sum::<u64>(),
        (img_hi.as_u64() - img_lo.as_u64()) / 1024
    );
    crate::mm::heap::init();
    crate::jump_label::jump_label_init();
    if let Some(pm) = platform.power_mgmt {
        crate::drivers::bcm2835_pm::init(pm.base);
    }

    match platform.gic {
        Some(Gic::V2 { dist, cpu }) => {
            if let Err(e) = arch::gic::init_from_phys(dist.base, cpu.base) {
                panic!("GIC: cannot map its registers: {e:?}");
            }
            crate::pr_info!("GIC: GICv2 at 0x{:x}/0x{:x}", dist.base, cpu.base);
        }
        Some(Gic::V3 { dist, redist }) => {
            let regions: alloc::vec::Vec<(u64, u64)> = redist.as_slice().iter().map(|r| (r.base, r.size)).collect();
            if let Err(e) = arch::gic::init_v3_from_phys(dist.base, &regions) {
                panic!("GICv3: cannot map its registers: {e:?}");
            }
            crate::pr_info!(
                "GICv3: distributor at 0x{:x}, {} redistributor region(s)",
                dist.base,
                regions.len()
            );
        }
        None => panic!("no interrupt controller in the device tree"),
    }
    arch::gic::init_cpu();
    arch::debug_monitors::debug_monitors_init_cpu();
    crate::smp::init_boot_cpu().expect("IPI handlers");
    crate::sched::init_cpu();
    arch::pgtable_user::set_table_frame_free(crate::mm::frame::free_frame);
    let timer = platform.timer.expect("no arm,armv8-timer in the device tree");
    crate::time::init(timer.virt_intid).expect("timer interrupt");
    crate::time::init_realtime(platform.rtc.map(|r| r.base));
    crate::vdso::init(boot_counter).expect("vdso");
    crate::pr_info!(
        "arch_timer: cp15 timer running at {}.{:02}MHz (virt).",
        arch::timer::frequency() / 1_000_000,
        arch::timer::frequency() / 10_000 % 100
    );
    // Before any other CPU or task runs (see ftrace_init).
    crate::trace::ftrace::ftrace_init();
    arch::cpu::local_irq_enable();

    crate::pr_info!("smp: Bringing up secondary CPUs ...");
    let psci = platform.psci.map(|c| match c {
        PsciConduit::Hvc => arch::psci::Conduit::Hvc,
        PsciConduit::Smc => arch::psci::Conduit::Smc,
    });
    crate::smp::smp_init(platform.cpus.as_slice(), psci);
    BOOT_TIMES.call_once(|| (boot_counter, arch::timer::counter()));
    crate::pr_info!("smp: Brought up 1 node, {} CPUs", crate::smp::num_online_cpus());
    let ns = boot_to_smp_ns();
    crate::pr_info!("boot: entry to smp up: {}.{:03} ms", ns / 1_000_000, ns / 1000 % 1000);
    crate::pr_info!("kallsyms: {} symbols", crate::kallsyms::table().len());

    #[cfg(feature = "ktest")]
    crate::ktest::run_all();
    #[cfg(not(feature = "ktest"))]
    {
        start_userspace(platform);
        crate::sched::cpu_idle()
    }
}

/// Why the device tree could not be used.
#[derive(Clone, Copy, Debug)]
enum DtbProblem {
    /// Not where x0 said, or not a DTB.
    View(DtbError),
    /// A DTB, but malformed.
    Parse(devicetree::Error),
}

impl core::fmt::Display for DtbProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            DtbProblem::View(DtbError::Missing) => write!(f, "none was passed (x0 = 0)"),
            DtbProblem::View(DtbError::Misaligned(pa)) => write!(f, "address {pa:#x} is not 8-byte aligned"),
            DtbProblem::View(DtbError::BadMagic(pa)) => write!(f, "no FDT magic at {pa:#x}"),
            DtbProblem::View(DtbError::TooLarge(n)) => write!(f, "size {n} bytes is too large"),
            DtbProblem::View(DtbError::NotInRam(pa)) => write!(f, "{pa:#x} is outside RAM"),
            DtbProblem::Parse(e) => write!(f, "{e}"),
        }
    }
}

mod alloc_free {
    use crate::mm::PhysRange;
    /// Up to 8 ranges, collected without a heap.
    pub struct Ranges([PhysRange; 8], usize);
    impl FromIterator<PhysRange> for Ranges {
        fn from_iter<I: IntoIterator<Item = PhysRange>>(iter: I) -> Self {
            let mut r = Ranges([PhysRange { start: 0, end: 0 }; 8], 0);
            for x in iter.into_iter().take(8) {
                r.0[r.1] = x;
                r.1 += 1;
            }
            r
        }
    }
    impl Ranges {
        pub fn as_slice(&self) -> &[PhysRange] {
            &self.0[..self.1]
        }
    }
}

fn console_init(platform: &Platform, phys_base: u64) {
    let (base, clock) = match platform.uart {
        Some(u) => (u.base, u.clock_hz),
        None => (guess_uart(phys_base), None),
    };
    if let Some(va) = ioremap_dt(base, PL011_SIZE) {
        #[allow(unsafe_code)]
        // SAFETY: `va` maps the PL011 the device tree names (or, failing
        // that, the one at the board's known address), as Device memory.
        let uart = unsafe { Pl011::new(va.as_usize()) };
        uart.init(clock);
        crate::printk::register_console(uart);
    }
}

/// Maps `size` bytes of device registers at the device tree's physical
/// `base`; `None` if the page tables cannot map it.
fn ioremap_dt(base: u64, size: usize) -> Option<arch::addr::VirtAddr> {
    arch::mmu::ioremap(arch::addr::PhysAddr::new(base)?, size).ok()
}

/// The PL011 of the board, guessed from where the image was loaded: the
/// Pi firmware and QEMU raspi4b load at 0x80000 (RAM at 0), QEMU virt at
/// 0x40080000. Used only to report a missing or broken device tree.
fn guess_uart(phys_base: u64) -> u64 {
    if phys_base < 0x4000_0000 {
        0xfe20_1000
    } else {
        0x0900_0000
    }
}

fn no_dtb_halt(phys_base: u64, why: DtbProblem) -> ! {
    if let Some(va) = ioremap_dt(guess_uart(phys_base), PL011_SIZE) {
        #[allow(unsafe_code)]
        // SAFETY: a best guess at the board's PL011, used only to print
        // this message before halting.
        let uart = unsafe { Pl011::new(va.as_usize()) };
        uart.init(None);
        crate::printk::register_console(uart);
    }
    crate::pr_err!("Kernel panic - not syncing: no usable device tree: {why}");
    crate::pr_err!("The boot loader must pass a flattened device tree in x0 (QEMU: -dtb FILE for raspi4b).");
    arch::cpu::halt()
}

/// Mounts the root filesystem from the initramfs and starts PID 1.
#[cfg_attr(feature = "ktest", allow(dead_code))]
fn start_userspace(platform: &Platform) {
    if let Err(e) = crate::fs::mount_root(platform.initrd.map(|r| (r.base, r.size))) {
        panic!("VFS: Unable to mount root fs: error {}", -e.as_neg());
    }
    let init_arg = platform
        .bootargs
        .split_whitespace()
        .find_map(|a| a.strip_prefix("init="));
    let candidates: alloc::vec::Vec<&str> = match init_arg {
        Some(p) => alloc::vec![p],
        None => alloc::vec!["/sbin/init", "/etc/init", "/bin/init", "/init", "/bin/sh"],
    };
    if let Err(e) = crate::exec::run_init(&candidates) {
        panic!(
            "No working init found (error {}). Try passing init= option to kernel.",
            -e.as_neg()
        );
    }
}
