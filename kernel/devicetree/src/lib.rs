//! What the kernel needs from the flattened device tree (DTB) the boot
//! loader hands over: RAM and reserved memory, the PL011 console, the GIC,
//! the architected timer's interrupts, PSCI and each CPU's enable method.
//!
//! The kernel reads the tree before it has a heap, so nothing here
//! allocates: results live in fixed-capacity [`List`]s and borrow strings
//! from the blob. Nothing panics either: a truncated or corrupt blob gives
//! an [`Error`] whose `Display` says what is wrong, and a device whose
//! properties make no sense is left out rather than failing the boot.
//!
//! Register addresses are translated through every ancestor bus's `ranges`
//! to CPU physical addresses, as Linux's of_translate_address() does: on a
//! Raspberry Pi 4 the PL011 at bus address 0x7e201000 is at 0xfe201000.
//!
//! ```no_run
//! # fn boot(dtb: &[u8]) -> Result<(), devicetree::Error> {
//! let platform = devicetree::parse(dtb)?;
//! for bank in &platform.memory {
//!     // hand [bank.base, bank.end()) to the frame allocator
//! }
//! # Ok(()) }
//! ```

#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]
// The kernel parses whatever the boot loader passed: keep every way to
// panic out of the library code, not just out of its tests' inputs.
#![cfg_attr(
    not(test),
    deny(
        clippy::arithmetic_side_effects,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unreachable,
        clippy::unwrap_used
    )
)]

mod fdt;
mod list;

use core::fmt;
use core::ops::ControlFlow;

use fdt::{be32, Fdt, Node};
pub use list::List;

/// How many RAM regions [`Platform::memory`] keeps.
pub const MAX_MEMORY_REGIONS: usize = 8;
/// How many reserved regions [`Platform::reserved`] keeps.
pub const MAX_RESERVED_REGIONS: usize = 32;
/// How many CPUs [`Platform::cpus`] keeps.
pub const MAX_CPUS: usize = 8;
/// How many GICv3 redistributor regions [`Gic::V3`] keeps.
pub const MAX_REDIST_REGIONS: usize = 4;
/// Bytes [`total_size`] needs: the FDT header.
pub const HEADER_SIZE: usize = fdt::HEADER_SIZE;

/// Everything the kernel takes from the device tree.
#[derive(Debug, Clone)]
pub struct Platform<'a> {
    /// The root's `model` ("Raspberry Pi 4 Model B"); empty if absent.
    pub model: &'a str,
    /// RAM: the `reg` entries of every available `device_type = "memory"`
    /// node, in CPU physical addresses, in tree order. Zero-sized entries
    /// are left out (the Pi 4's own DTB has `reg = <0 0 0>` until the
    /// firmware fills it in).
    pub memory: List<Region, MAX_MEMORY_REGIONS>,
    /// Memory the kernel must not allocate: the `/memreserve/` entries,
    /// then the `reg` of each available child of `/reserved-memory`.
    /// Dynamically placed reservations (`size` without `reg`) are not
    /// included; zero-sized entries are left out.
    pub reserved: List<Region, MAX_RESERVED_REGIONS>,
    /// The console: the `/chosen` `stdout-path` node if it is an available
    /// PL011, else the first available node compatible with "arm,pl011".
    pub uart: Option<Uart>,
    /// The first available GIC of a known version.
    pub gic: Option<Gic>,
    /// The architected timer, if its interrupts lead to a GIC.
    pub timer: Option<ArchTimer>,
    /// How to call PSCI firmware, from an available node compatible with
    /// "arm,psci*".
    pub psci: Option<PsciConduit>,
    /// The available CPUs under `/cpus`, in tree order.
    pub cpus: List<Cpu, MAX_CPUS>,
    /// The header's `boot_cpuid_phys`: the MPIDR affinity of the CPU that
    /// booted (0 where boot loaders do not set it).
    pub boot_cpuid: u32,
    /// `/chosen` `bootargs`, or empty.
    pub bootargs: &'a str,
    /// The initial RAM disk from `/chosen` `linux,initrd-start` and
    /// `linux,initrd-end` (either 32 or 64 bits wide), if both are given
    /// and describe a non-empty range.
    pub initrd: Option<Region>,
    /// The Broadcom power-management/watchdog block ("brcm,bcm2835-pm" or
    /// "brcm,bcm2835-pm-wdt"), through which a Raspberry Pi powers off and
    /// restarts (it has no PSCI): its first register region.
    pub power_mgmt: Option<Region>,
    /// The PrimeCell PL031 real-time clock ("arm,pl031"), from which the
    /// kernel sets `CLOCK_REALTIME` at boot: its first register region.
    pub rtc: Option<Region>,
    /// The blob's `totalsize`: how many bytes of memory it occupies.
    pub total_size: usize,
}

/// A range of CPU physical addresses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Region {
    /// First address.
    pub base: u64,
    /// Length in bytes; `base + size` never overflows in regions parsed
    /// from a tree.
    pub size: u64,
}

impl Region {
    /// The first address after the region.
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.size)
    }

    /// A region, unless it is empty or wraps around the address space.
    fn nonempty(base: u64, size: u64) -> Option<Self> {
        (size != 0 && base.checked_add(size).is_some()).then_some(Self { base, size })
    }
}

/// An Arm PL011 UART.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uart {
    /// Physical address of its registers.
    pub base: u64,
    /// Size of the register block.
    pub size: u64,
    /// Frequency of UARTCLK, if its `clocks` entry ("uartclk" by
    /// `clock-names`, else the first) is a "fixed-clock". `None` when a
    /// clock driver would be needed (the Pi 4's comes from the firmware):
    /// keep whatever divisor the firmware programmed.
    pub clock_hz: Option<u32>,
}

/// The GIC: which version, and where its register frames are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gic {
    /// GICv2 ("arm,gic-400", "arm,cortex-a15-gic", "arm,cortex-a9-gic",
    /// "arm,cortex-a7-gic").
    V2 {
        /// Distributor (GICD).
        dist: Region,
        /// CPU interface (GICC).
        cpu: Region,
    },
    /// GICv3 ("arm,gic-v3").
    V3 {
        /// Distributor (GICD).
        dist: Region,
        /// Redistributor regions (GICR), `#redistributor-regions` of them.
        redist: List<Region, MAX_REDIST_REGIONS>,
    },
}

/// The Arm architected (generic) timer's interrupts, as GIC INTIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchTimer {
    /// Secure EL1 physical timer (PPI 13 on QEMU and the Pi: INTID 29).
    pub phys_secure_intid: u32,
    /// Non-secure EL1 physical timer (usually INTID 30).
    pub phys_nonsecure_intid: u32,
    /// Virtual timer (usually INTID 27).
    pub virt_intid: u32,
    /// EL2 (hypervisor) physical timer (usually INTID 26).
    pub hyp_intid: u32,
    /// `clock-frequency`, which only broken firmware needs to give;
    /// otherwise read CNTFRQ_EL0.
    pub clock_frequency: Option<u32>,
}

/// The instruction that calls PSCI firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PsciConduit {
    /// `hvc #0` (QEMU virt without EL2 or EL3 emulation).
    Hvc,
    /// `smc #0`.
    Smc,
}

/// A CPU under `/cpus`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cpu {
    /// Its `reg`: the affinity fields of its MPIDR_EL1.
    pub mpidr: u64,
    /// How to start it.
    pub enable_method: EnableMethod,
}

/// How a secondary CPU is started (Documentation/arch/arm64/booting.rst).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EnableMethod {
    /// PSCI CPU_ON.
    Psci,
    /// The CPU spins until an entry point is written to `release_addr`
    /// (then woken with `sev`).
    SpinTable {
        /// Physical address of the 64-bit release word.
        release_addr: u64,
    },
    /// No `enable-method`, one this crate does not know, or a spin table
    /// without a release address.
    #[default]
    Unknown,
}

/// Why a blob could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Fewer bytes than the header.
    TooShort {
        /// Bytes given.
        len: usize,
    },
    /// The first word is not 0xd00dfeed.
    BadMagic {
        /// What was there.
        found: u32,
    },
    /// `totalsize` is smaller than the header.
    BadTotalSize {
        /// The header's `totalsize`.
        total_size: usize,
    },
    /// `totalsize` is beyond the 2 MiB the arm64 boot protocol allows.
    TooLarge {
        /// The header's `totalsize`.
        total_size: usize,
    },
    /// Fewer bytes than `totalsize` were given.
    Truncated {
        /// The header's `totalsize`.
        total_size: usize,
        /// Bytes given.
        available: usize,
    },
    /// A format version this parser cannot read.
    UnsupportedVersion {
        /// The header's `version`.
        version: u32,
        /// The header's `last_comp_version`.
        last_comp_version: u32,
    },
    /// A block the header points to is not inside the blob.
    BlockOutOfBounds {
        /// Which block.
        block: &'static str,
        /// Its offset from the header.
        offset: usize,
        /// Its size from the header.
        size: usize,
        /// The header's `totalsize`.
        total_size: usize,
    },
    /// The blob's contents break the format.
    Malformed {
        /// Byte offset in the blob where the problem is.
        offset: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// Nodes are nested deeper than the parser follows.
    TooDeep {
        /// The deepest nesting followed.
        max: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("device tree: ")?;
        match *self {
            Self::TooShort { len } => write!(f, "only {len} bytes, fewer than the {HEADER_SIZE}-byte header"),
            Self::BadMagic { found } => write!(
                f,
                "bad magic {found:#010x} (expected {:#010x}): no device tree at this address",
                fdt::FDT_MAGIC
            ),
            Self::BadTotalSize { total_size } => {
                write!(f, "header totalsize {total_size} is smaller than the header itself")
            }
            Self::TooLarge { total_size } => write!(
                f,
                "header totalsize {total_size} exceeds the {} bytes the arm64 boot protocol allows",
                fdt::MAX_TOTAL_SIZE
            ),
            Self::Truncated { total_size, available } => write!(
                f,
                "truncated: the header says {total_size} bytes but only {available} are there"
            ),
            Self::UnsupportedVersion {
                version,
                last_comp_version,
            } => write!(
                f,
                "unsupported format version {version} (compatible back to {last_comp_version}); \
                 versions 16 and 17 are readable"
            ),
            Self::BlockOutOfBounds {
                block,
                offset,
                size,
                total_size,
            } => write!(
                f,
                "{block} block at offset {offset:#x}, size {size:#x}, \
                 is not inside the {total_size:#x}-byte blob"
            ),
            Self::Malformed { offset, what } => write!(f, "malformed at byte {offset:#x}: {what}"),
            Self::TooDeep { max } => write!(f, "nodes nested deeper than {max} levels"),
        }
    }
}

impl core::error::Error for Error {}

/// How many bytes the blob starting at `header` occupies (its `totalsize`),
/// so that the kernel can map or slice exactly that much before calling
/// [`parse`].
///
/// Reads only the magic and `totalsize` (the first 8 bytes; passing the
/// whole [`HEADER_SIZE`]-byte header is fine). Fails on a bad magic, or a
/// size below the header's or above the arm64 limit of 2 MiB.
pub fn total_size(header: &[u8]) -> Result<usize, Error> {
    fdt::read_total_size(header)
}

/// Reads the platform description from a flattened device tree.
///
/// `dtb` must hold at least the blob's `totalsize` bytes (see
/// [`total_size`]); bytes beyond it are ignored.
pub fn parse(dtb: &[u8]) -> Result<Platform<'_>, Error> {
    let fdt = Fdt::new(dtb)?;
    let mut scan = Scan::default();
    fdt.for_each_memreserve(|base, size| {
        if let Some(region) = Region::nonempty(base, size) {
            scan.reserved.push(region);
        }
    })?;
    // This walk covers the whole structure block, so it also validates it;
    // the later walks and property reads meet only checked bytes.
    fdt.walk(|path| {
        scan.visit(&fdt, path);
        ControlFlow::Continue(())
    })?;

    let console = match scan.chosen {
        Some(chosen) => stdout_uart(&fdt, &chosen, scan.aliases.as_ref())?,
        None => None,
    };
    let uart = match console.or(scan.first_pl011) {
        Some(u) => Some(Uart {
            base: u.region.base,
            size: u.region.size,
            clock_hz: uart_clock(&fdt, &u)?,
        }),
        None => None,
    };
    let timer = match scan.timer {
        Some(t) => arch_timer(&fdt, &t)?,
        None => None,
    };
    let bootargs = scan
        .chosen
        .and_then(|c| fdt.prop(&c, "bootargs"))
        .and_then(prop_str)
        .unwrap_or("");

    let initrd_prop = |name: &str| -> Option<u64> {
        let raw = scan.chosen.and_then(|c| fdt.prop(&c, name))?;
        match raw.len() {
            4 => read_cells(raw, 1).and_then(|v| u64::try_from(v).ok()),
            8 => read_cells(raw, 2).and_then(|v| u64::try_from(v).ok()),
            _ => None,
        }
    };
    let initrd = match (initrd_prop("linux,initrd-start"), initrd_prop("linux,initrd-end")) {
        (Some(start), Some(end)) => end
            .checked_sub(start)
            .filter(|&n| n > 0)
            .map(|size| Region { base: start, size }),
        _ => None,
    };

    Ok(Platform {
        initrd,
        power_mgmt: scan.power_mgmt,
        rtc: scan.rtc,
        model: scan.model,
        memory: scan.memory,
        reserved: scan.reserved,
        uart,
        gic: scan.gic,
        timer,
        psci: scan.psci,
        cpus: scan.cpus,
        boot_cpuid: fdt.boot_cpuid,
        bootargs,
        total_size: fdt.total_size,
    })
}

/// What the first walk collects.
#[derive(Default)]
struct Scan<'a> {
    model: &'a str,
    memory: List<Region, MAX_MEMORY_REGIONS>,
    reserved: List<Region, MAX_RESERVED_REGIONS>,
    cpus: List<Cpu, MAX_CPUS>,
    chosen: Option<Node<'a>>,
    aliases: Option<Node<'a>>,
    first_pl011: Option<UartNode<'a>>,
    power_mgmt: Option<Region>,
    rtc: Option<Region>,
    gic: Option<Gic>,
    timer: Option<TimerNode<'a>>,
    psci: Option<PsciConduit>,
}

/// A usable PL011, its clock not yet resolved.
#[derive(Clone, Copy)]
struct UartNode<'a> {
    region: Region,
    clocks: &'a [u8],
    clock_names: &'a [u8],
}

/// A timer node, its interrupt controller not yet looked up.
#[derive(Clone, Copy)]
struct TimerNode<'a> {
    interrupts: &'a [u8],
    interrupt_parent: Option<u32>,
    clock_frequency: Option<u32>,
}

const GIC_V2_COMPATIBLES: [&str; 4] = [
    "arm,gic-400",
    "arm,cortex-a15-gic",
    "arm,cortex-a9-gic",
    "arm,cortex-a7-gic",
];
const GIC_V3_COMPATIBLES: [&str; 1] = ["arm,gic-v3"];
const TIMER_COMPATIBLES: [&str; 2] = ["arm,armv8-timer", "arm,armv7-timer"];

impl<'a> Scan<'a> {
    /// Looks at the last node of `path` (the root first).
    fn visit(&mut self, fdt: &Fdt<'a>, path: &[Node<'a>]) {
        let Some(node) = path.last() else { return };
        let parent = path.len().checked_sub(2).and_then(|i| path.get(i));
        let parent_name = parent.map_or(&b""[..], |p| p.name);
        match path.len() {
            1 => {
                self.model = fdt.prop(node, "model").and_then(prop_str).unwrap_or("");
                return;
            }
            2 => match node.name {
                b"chosen" => self.chosen = Some(*node),
                b"aliases" => self.aliases = Some(*node),
                _ if node.available && device_type(node) == Some("memory") => {
                    for region in reg_regions(path).flatten() {
                        self.memory.push(region);
                    }
                }
                _ => {}
            },
            3 if parent_name == b"reserved-memory" && node.available => {
                for region in reg_regions(path).flatten() {
                    self.reserved.push(region);
                }
            }
            3 if parent_name == b"cpus" && node.available => {
                if let Some(cpu) = cpu(fdt, path) {
                    self.cpus.push(cpu);
                }
            }
            _ => {}
        }
        if !node.available {
            return;
        }
        if self.first_pl011.is_none() {
            self.first_pl011 = pl011(fdt, path);
        }
        if self.gic.is_none() {
            self.gic = gic(fdt, path);
        }
        if self.power_mgmt.is_none() && compatible_any(node, &["brcm,bcm2835-pm", "brcm,bcm2835-pm-wdt"]) {
            self.power_mgmt = reg_regions(path).next().flatten();
        }
        if self.rtc.is_none() && compatible(node, "arm,pl031") {
            self.rtc = reg_regions(path).next().flatten();
        }
        if self.timer.is_none() && compatible_any(node, &TIMER_COMPATIBLES) {
            self.timer = Some(TimerNode {
                interrupts: fdt.prop(node, "interrupts").unwrap_or(&[]),
                interrupt_parent: node.interrupt_parent,
                clock_frequency: fdt.prop(node, "clock-frequency").and_then(prop_u32),
            });
        }
        if self.psci.is_none() && is_psci(node) {
            self.psci = match fdt.prop(node, "method").and_then(prop_str) {
                Some("hvc") => Some(PsciConduit::Hvc),
                Some("smc") => Some(PsciConduit::Smc),
                _ => None,
            };
        }
    }
}

/// The CPU at the end of `path` (a child of `/cpus`), if it is one.
fn cpu<'a>(fdt: &Fdt<'a>, path: &[Node<'a>]) -> Option<Cpu> {
    let node = path.last()?;
    let cpus = path.get(1)?;
    // Linux's of_get_next_cpu_node() takes either sign of a CPU node.
    let base_name = node.name.split(|&b| b == b'@').next().unwrap_or(&[]);
    if base_name != b"cpu" && device_type(node) != Some("cpu") {
        return None;
    }
    // booting.rst: /cpus has #address-cells 1 or 2 and #size-cells 0; reg
    // holds MPIDR_EL1's affinity fields.
    if !(1..=2).contains(&cpus.address_cells) {
        return None;
    }
    let mpidr = read_cells(node.reg?, cpus.address_cells)?;
    let enable_method = match fdt.prop(node, "enable-method").and_then(prop_str) {
        Some("psci") => EnableMethod::Psci,
        Some("spin-table") => match fdt.prop(node, "cpu-release-addr") {
            Some(v) if v.len() == 8 || v.len() == 4 => EnableMethod::SpinTable {
                release_addr: read_cells(v, (v.len() / 4) as u32)?.try_into().ok()?,
            },
            _ => EnableMethod::Unknown,
        },
        _ => EnableMethod::Unknown,
    };
    Some(Cpu {
        mpidr: mpidr.try_into().ok()?,
        enable_method,
    })
}

/// The PL011 at the end of `path`, if it is one, available and with a
/// translatable `reg`.
fn pl011<'a>(fdt: &Fdt<'a>, path: &[Node<'a>]) -> Option<UartNode<'a>> {
    let node = path.last()?;
    if !node.available || !compatible(node, "arm,pl011") {
        return None;
    }
    Some(UartNode {
        region: reg_regions(path).next()??,
        clocks: fdt.prop(node, "clocks").unwrap_or(&[]),
        clock_names: fdt.prop(node, "clock-names").unwrap_or(&[]),
    })
}

/// The GIC at the end of `path`, if it is one and all its frames translate.
fn gic<'a>(fdt: &Fdt<'a>, path: &[Node<'a>]) -> Option<Gic> {
    let node = path.last()?;
    if compatible_any(node, &GIC_V2_COMPATIBLES) {
        let mut reg = reg_regions(path);
        Some(Gic::V2 {
            dist: reg.next()??,
            cpu: reg.next()??,
        })
    } else if compatible_any(node, &GIC_V3_COMPATIBLES) {
        let mut reg = reg_regions(path);
        let dist = reg.next()??;
        let count = fdt.prop(node, "#redistributor-regions").and_then(prop_u32).unwrap_or(1);
        let mut redist = List::new();
        for _ in 0..count {
            redist.push(reg.next()??);
        }
        Some(Gic::V3 { dist, redist })
    } else {
        None
    }
}

fn is_psci(node: &Node<'_>) -> bool {
    // "arm,psci", "arm,psci-0.2", "arm,psci-1.0", as Linux's psci_of_match.
    string_list(node.compatible).any(|s| s.starts_with(b"arm,psci"))
}

/// The PL011 that `/chosen` `stdout-path` names, if it names one.
fn stdout_uart<'a>(
    fdt: &Fdt<'a>,
    chosen: &Node<'a>,
    aliases: Option<&Node<'a>>,
) -> Result<Option<UartNode<'a>>, Error> {
    let Some(spec) = fdt
        .prop(chosen, "stdout-path")
        .or_else(|| fdt.prop(chosen, "linux,stdout-path"))
        .and_then(prop_str)
    else {
        return Ok(None);
    };
    // "serial1:115200n8": options follow the first ':'.
    let spec = spec.split_once(':').map_or(spec, |(path, _)| path);
    // A path not starting with '/' begins with an alias ("serial1/...").
    let (head, tail) = if spec.starts_with('/') {
        (spec, "")
    } else {
        let (alias, tail) = spec.split_once('/').unwrap_or((spec, ""));
        match aliases.and_then(|a| fdt.prop(a, alias)).and_then(prop_str) {
            Some(target) if target.starts_with('/') => (target, tail),
            _ => return Ok(None),
        }
    };
    let mut found = None;
    fdt.walk(|path| {
        if path_is(path, head, tail) {
            found = pl011(fdt, path);
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(found)
}

/// Whether the node at the end of `path` is the one named by the path
/// `head` followed by the path `tail`.
fn path_is(path: &[Node<'_>], head: &str, tail: &str) -> bool {
    let mut names = path.iter().skip(1).map(|n| n.name);
    let wanted = head.split('/').chain(tail.split('/'));
    for component in wanted.filter(|c| !c.is_empty()) {
        if names.next() != Some(component.as_bytes()) {
            return false;
        }
    }
    names.next().is_none()
}

/// Entries of `clocks` looked past at most, since each costs a walk.
const MAX_CLOCK_INDEX: usize = 8;

/// The rate of the UART's clock, if it is a fixed clock.
fn uart_clock(fdt: &Fdt<'_>, uart: &UartNode<'_>) -> Result<Option<u32>, Error> {
    // The PL011 binding names the baud clock "uartclk"; without names the
    // first clock is it.
    let wanted = string_list(uart.clock_names).position(|n| n == b"uartclk").unwrap_or(0);
    if wanted > MAX_CLOCK_INDEX {
        return Ok(None);
    }
    let mut cell = 0usize;
    for entry in 0..=wanted {
        let Some(phandle) = cell.checked_mul(4).and_then(|at| be32(uart.clocks, at)) else {
            return Ok(None);
        };
        let Some(provider) = find_phandle(fdt, phandle)? else {
            return Ok(None);
        };
        if entry == wanted {
            let fixed = compatible(&provider, "fixed-clock");
            let rate = fdt.prop(&provider, "clock-frequency").and_then(prop_u32);
            return Ok(rate.filter(|_| fixed));
        }
        let Some(args) = fdt.prop(&provider, "#clock-cells").and_then(prop_u32) else {
            return Ok(None);
        };
        cell = match cell.checked_add(1).and_then(|c| c.checked_add(args as usize)) {
            Some(next) => next,
            None => return Ok(None),
        };
    }
    Ok(None)
}

/// The timer's INTIDs, if its interrupt parent is a GIC.
fn arch_timer(fdt: &Fdt<'_>, timer: &TimerNode<'_>) -> Result<Option<ArchTimer>, Error> {
    let Some(phandle) = timer.interrupt_parent else {
        return Ok(None);
    };
    let Some(controller) = find_phandle(fdt, phandle)? else {
        return Ok(None);
    };
    let is_gic = compatible_any(&controller, &GIC_V2_COMPATIBLES) || compatible_any(&controller, &GIC_V3_COMPATIBLES);
    let cells = fdt
        .prop(&controller, "#interrupt-cells")
        .and_then(prop_u32)
        .unwrap_or(0);
    // The GIC bindings: <type number flags> (GICv3 may add a fourth cell).
    if !is_gic || !(2..=4).contains(&cells) {
        return Ok(None);
    }
    let stride = (cells as usize).saturating_mul(4);
    let intid = |index: usize| -> Option<u32> {
        let at = index.checked_mul(stride)?;
        let kind = be32(timer.interrupts, at)?;
        let number = be32(timer.interrupts, at.checked_add(4)?)?;
        match kind {
            0 => number.checked_add(32).filter(|&n| n < 1020),
            1 => (number < 16).then_some(number.saturating_add(16)),
            _ => None,
        }
    };
    // Order fixed by the arm,arch_timer binding.
    let (Some(phys_secure_intid), Some(phys_nonsecure_intid), Some(virt_intid), Some(hyp_intid)) =
        (intid(0), intid(1), intid(2), intid(3))
    else {
        return Ok(None);
    };
    Ok(Some(ArchTimer {
        phys_secure_intid,
        phys_nonsecure_intid,
        virt_intid,
        hyp_intid,
        clock_frequency: timer.clock_frequency,
    }))
}

/// The node whose `phandle` is `phandle`.
fn find_phandle<'a>(fdt: &Fdt<'a>, phandle: u32) -> Result<Option<Node<'a>>, Error> {
    // 0 and 0xffffffff are never valid phandles.
    if phandle == 0 || phandle == u32::MAX {
        return Ok(None);
    }
    let mut found = None;
    fdt.walk(|path| match path.last() {
        Some(node) if node.phandle == Some(phandle) => {
            found = Some(*node);
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })?;
    Ok(found)
}

/// The `reg` entries of the node at the end of `path`, translated to CPU
/// physical addresses; `None` for an entry that does not translate, is
/// empty, or wraps around.
fn reg_regions<'a, 'p>(path: &'p [Node<'a>]) -> impl Iterator<Item = Option<Region>> + use<'a, 'p> {
    let parent_index = path.len().checked_sub(2);
    let parent = parent_index.and_then(|i| path.get(i));
    let reg = path.last().and_then(|n| n.reg);
    let entries = match (parent, reg) {
        (Some(parent), Some(reg)) => Some(cell_pairs(reg, parent.address_cells, parent.size_cells)),
        _ => None,
    };
    entries.into_iter().flatten().map(move |(address, size)| {
        let base = translate(path, parent_index?, address)?;
        Region::nonempty(base, u64::try_from(size).ok()?)
    })
}

/// Translates `address`, on the bus that `path[bus]` provides, through
/// the `ranges` of that node and of each ancestor up to the root, as
/// Linux's of_translate_address().
fn translate(path: &[Node<'_>], bus: usize, address: u128) -> Option<u64> {
    let mut address = address;
    let mut bus = bus;
    // The root's children are addressed in CPU physical space already.
    while let Some(up) = bus.checked_sub(1) {
        let (node, parent) = (path.get(bus)?, path.get(up)?);
        match node.ranges {
            // No `ranges`: the bus's addresses are not visible to the CPU.
            None => return None,
            Some([]) => {}
            Some(ranges) => {
                address = map_range(
                    ranges,
                    node.address_cells,
                    parent.address_cells,
                    node.size_cells,
                    address,
                )?;
            }
        }
        bus = up;
    }
    u64::try_from(address).ok()
}

/// Maps a child-bus `address` through one `ranges` property, whose entries
/// are (child address, parent address, length).
fn map_range(ranges: &[u8], child_cells: u32, parent_cells: u32, size_cells: u32, address: u128) -> Option<u128> {
    if child_cells > 4 || parent_cells > 4 || size_cells > 4 {
        return None;
    }
    let child_bytes = (child_cells as usize).saturating_mul(4);
    let parent_bytes = (parent_cells as usize).saturating_mul(4);
    let entry = (child_cells.saturating_add(parent_cells).saturating_add(size_cells) as usize).saturating_mul(4);
    if entry == 0 {
        return None;
    }
    ranges.chunks_exact(entry).find_map(|e| {
        let child = read_cells(e, child_cells)?;
        let parent = read_cells(e.get(child_bytes..)?, parent_cells)?;
        let length = read_cells(e.get(child_bytes.checked_add(parent_bytes)?..)?, size_cells)?;
        let offset = address.checked_sub(child)?;
        (offset < length).then(|| parent.checked_add(offset))?
    })
}

/// The (address, size) pairs of a `reg`-like property.
fn cell_pairs(value: &[u8], address_cells: u32, size_cells: u32) -> impl Iterator<Item = (u128, u128)> + '_ {
    let usable = address_cells <= 4 && size_cells <= 4;
    let address_bytes = (address_cells as usize).saturating_mul(4);
    let entry = (address_cells.saturating_add(size_cells) as usize).saturating_mul(4);
    // `chunks_exact` wants a non-zero size; a trailing partial entry is
    // ignored.
    let value = if usable && entry != 0 { value } else { &[] };
    value.chunks_exact(entry.max(1)).filter_map(move |e| {
        Some((
            read_cells(e, address_cells)?,
            read_cells(e.get(address_bytes..)?, size_cells)?,
        ))
    })
}

/// A number made of the first `cells` (at most 4) big-endian cells.
fn read_cells(bytes: &[u8], cells: u32) -> Option<u128> {
    if cells > 4 {
        return None;
    }
    (0..cells as usize).try_fold(0u128, |acc, i| {
        let cell = be32(bytes, i.checked_mul(4)?)?;
        Some(acc.checked_shl(32)? | u128::from(cell))
    })
}

/// A one-cell property's value.
fn prop_u32(value: &[u8]) -> Option<u32> {
    match value.len() {
        4 => be32(value, 0),
        // Some bindings allow a two-cell (64-bit) frequency.
        8 => u32::try_from(read_cells(value, 2)?).ok(),
        _ => None,
    }
}

/// A string property's value (up to its NUL).
pub(crate) fn prop_str(value: &[u8]) -> Option<&str> {
    let text = value.split(|&b| b == 0).next()?;
    core::str::from_utf8(text).ok()
}

/// The strings of a string-list property.
fn string_list(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == 0).filter(|s| !s.is_empty())
}

fn device_type<'a>(node: &Node<'a>) -> Option<&'a str> {
    prop_str(node.device_type)
}

fn compatible(node: &Node<'_>, wanted: &str) -> bool {
    compatible_any(node, &[wanted])
}

fn compatible_any(node: &Node<'_>, wanted: &[&str]) -> bool {
    string_list(node.compatible).any(|s| wanted.iter().any(|w| w.as_bytes() == s))
}
