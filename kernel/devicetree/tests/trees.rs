//! Small hand-built trees, each showing one rule of the reading.

mod common;

use common::DtbBuilder;
use devicetree::{Cpu, EnableMethod, Error, Gic, PsciConduit, Region};

/// A root with 2 address cells and 1 size cell, like the Pi 4's.
fn root() -> DtbBuilder {
    let mut b = DtbBuilder::new();
    b.begin("").cells("#address-cells", &[2]).cells("#size-cells", &[1]);
    b
}

fn pl011(b: &mut DtbBuilder, name: &str, reg: &[u32]) {
    b.begin(name)
        .string("compatible", "arm,pl011\0arm,primecell")
        .cells("reg", reg)
        .end();
}

#[test]
fn addresses_are_translated_through_every_ranges() {
    let mut b = root();
    // /bus maps its 1-cell space 0x0..0x1000_0000 to CPU 0x4_0000_0000;
    // /bus/sub maps its 0x100.. to the bus's 0x20_0000.
    b.begin("bus")
        .cells("#address-cells", &[1])
        .cells("#size-cells", &[1])
        .cells("ranges", &[0, 0x4, 0, 0x1000_0000]);
    b.begin("sub")
        .cells("ranges", &[0x100, 0x20_0000, 0x1000])
        .cells("#address-cells", &[1])
        .cells("#size-cells", &[1]);
    pl011(&mut b, "serial@140", &[0x140, 0x40]);
    b.end().end().end();
    let dtb = b.build();
    let p = devicetree::parse(&dtb).unwrap();
    let uart = p.uart.unwrap();
    assert_eq!((uart.base, uart.size), (0x4_0020_0040, 0x40));
}

#[test]
fn a_bus_without_ranges_hides_its_devices() {
    let mut b = root();
    b.begin("i2c").cells("#address-cells", &[1]).cells("#size-cells", &[1]);
    pl011(&mut b, "serial@1000", &[0x1000, 0x100]);
    b.end();
    b.begin("soc")
        .cells("#address-cells", &[1])
        .cells("#size-cells", &[1])
        .prop("ranges", &[]);
    pl011(&mut b, "serial@2000", &[0x2000, 0x100]);
    b.end().end();
    let dtb = b.build();
    let p = devicetree::parse(&dtb).unwrap();
    assert_eq!(p.uart.unwrap().base, 0x2000);
}

#[test]
fn an_address_outside_every_range_is_not_translated() {
    let mut b = root();
    b.begin("soc")
        .cells("#address-cells", &[1])
        .cells("#size-cells", &[1])
        .cells("ranges", &[0x7e00_0000, 0, 0xfe00_0000, 0x180_0000]);
    pl011(&mut b, "serial@7c000000", &[0x7c00_0000, 0x200]);
    pl011(&mut b, "serial@7e201000", &[0x7e20_1000, 0x200]);
    b.end().end();
    let dtb = b.build();
    let p = devicetree::parse(&dtb).unwrap();
    assert_eq!(p.uart.unwrap().base, 0xfe20_1000);
}

#[test]
fn disabled_devices_and_devices_on_disabled_buses_are_skipped() {
    let mut b = root();
    b.begin("serial@100")
        .string("compatible", "arm,pl011")
        .cells("reg", &[0, 0x100, 0x100])
        .string("status", "disabled")
        .end();
    b.begin("bus").string("status", "disabled").prop("ranges", &[]);
    pl011(&mut b, "serial@200", &[0, 0x200, 0x100]);
    b.end();
    b.begin("serial@300")
        .string("compatible", "arm,pl011")
        .cells("reg", &[0, 0x300, 0x100])
        .string("status", "okay")
        .end();
    b.end();
    let dtb = b.build();
    let p = devicetree::parse(&dtb).unwrap();
    assert_eq!(p.uart.unwrap().base, 0x300);
}

/// Two PL011s and a /chosen naming the second.
fn two_uarts(stdout_path: &str) -> Vec<u8> {
    let mut b = root();
    b.begin("aliases")
        .string("serial0", "/soc/serial@1000")
        .string("serial1", "/soc/serial@2000")
        .end();
    b.begin("chosen").string("stdout-path", stdout_path).end();
    b.begin("soc")
        .cells("#address-cells", &[1])
        .cells("#size-cells", &[1])
        .prop("ranges", &[]);
    pl011(&mut b, "serial@1000", &[0x1000, 0x100]);
    pl011(&mut b, "serial@2000", &[0x2000, 0x100]);
    b.end().end();
    b.build()
}

#[test]
fn stdout_path_names_the_console() {
    let console = |path: &str| devicetree::parse(&two_uarts(path)).unwrap().uart.unwrap().base;
    assert_eq!(console("serial1:115200n8"), 0x2000);
    assert_eq!(console("serial1"), 0x2000);
    assert_eq!(console("/soc/serial@2000:115200"), 0x2000);
    assert_eq!(console("/soc/serial@2000"), 0x2000);
    // Names that lead nowhere fall back to the first PL011.
    assert_eq!(console("serial7"), 0x1000);
    assert_eq!(console("/soc/serial@3000"), 0x1000);
    assert_eq!(console("/soc"), 0x1000);
}

#[test]
fn memory_comes_from_every_memory_node_and_overflow_is_counted() {
    let mut b = root();
    // A zero-sized bank and a disabled bank are not RAM.
    b.begin("memory@a00000000")
        .string("device_type", "memory")
        .cells("reg", &[0xa, 0, 0])
        .end();
    b.begin("memory@b00000000")
        .string("device_type", "memory")
        .cells("reg", &[0xb, 0, 0x1000])
        .string("status", "disabled")
        .end();
    for bank in 0..10u32 {
        b.begin(&format!("memory@{bank:x}0000000"))
            .string("device_type", "memory")
            .cells("reg", &[0, bank << 28, 0x1000_0000])
            .end();
    }
    b.end();
    let dtb = b.build();
    let p = devicetree::parse(&dtb).unwrap();
    assert_eq!(p.memory.len(), devicetree::MAX_MEMORY_REGIONS);
    assert_eq!(p.memory.dropped(), 2);
    assert_eq!(
        p.memory[7],
        Region {
            base: 0x7000_0000,
            size: 0x1000_0000
        }
    );
}

#[test]
fn reserved_memory_holds_memreserve_and_static_reservations() {
    let mut b = root();
    b.memreserve(0, 0x1000).memreserve(0x8000_0000, 0x2000);
    b.begin("reserved-memory")
        .cells("#address-cells", &[2])
        .cells("#size-cells", &[1])
        .prop("ranges", &[]);
    b.begin("fw@30000000")
        .cells("reg", &[0, 0x3000_0000, 0x10_0000])
        .prop("no-map", &[])
        .end();
    b.begin("pool").cells("size", &[0x400_0000]).prop("reusable", &[]).end();
    b.begin("off@31000000")
        .cells("reg", &[0, 0x3100_0000, 0x1000])
        .string("status", "disabled")
        .end();
    b.end().end();
    let dtb = b.build();
    let p = devicetree::parse(&dtb).unwrap();
    let want = [(0, 0x1000), (0x8000_0000, 0x2000), (0x3000_0000, 0x10_0000)];
    let got: Vec<(u64, u64)> = p.reserved.iter().map(|r| (r.base, r.size)).collect();
    assert_eq!(got, want);
}

#[test]
fn cpus_with_two_address_cells_spin_tables_and_psci_over_smc() {
    let mut b = root();
    b.begin("psci")
        .string("compatible", "arm,psci-1.0\0arm,psci-0.2")
        .string("method", "smc")
        .end();
    b.begin("cpus").cells("#address-cells", &[2]).cells("#size-cells", &[0]);
    b.begin("cpu@0")
        .string("device_type", "cpu")
        .cells("reg", &[0, 0])
        .string("enable-method", "psci")
        .end();
    b.begin("cpu@100")
        .string("device_type", "cpu")
        .cells("reg", &[0, 0x100])
        .string("enable-method", "spin-table")
        .cells("cpu-release-addr", &[0x1, 0x8000_00f8])
        .end();
    b.begin("cpu@200")
        .string("device_type", "cpu")
        .cells("reg", &[0, 0x200])
        .string("status", "disabled")
        .end();
    b.begin("cpu@300")
        .string("device_type", "cpu")
        .cells("reg", &[0, 0x300])
        .string("enable-method", "spin-table")
        .end();
    b.begin("l2-cache").string("compatible", "cache").end();
    b.end().end();
    let dtb = b.build();
    let p = devicetree::parse(&dtb).unwrap();
    assert_eq!(p.psci, Some(PsciConduit::Smc));
    assert_eq!(
        p.cpus.as_slice(),
        [
            Cpu {
                mpidr: 0,
                enable_method: EnableMethod::Psci
            },
            Cpu {
                mpidr: 0x100,
                enable_method: EnableMethod::SpinTable {
                    release_addr: 0x1_8000_00f8
                }
            },
            Cpu {
                mpidr: 0x300,
                enable_method: EnableMethod::Unknown
            },
        ]
    );
}

#[test]
fn timer_intids_need_a_gic_parent() {
    let tree = |controller: &str| {
        let mut b = root();
        b.cells("interrupt-parent", &[1]);
        b.begin("intc@8000000")
            .string("compatible", controller)
            .cells("#interrupt-cells", &[3])
            .prop("interrupt-controller", &[])
            .cells("reg", &[0, 0x0800_0000, 0x1000, 0, 0x0801_0000, 0x1000])
            .cells("phandle", &[1])
            .end();
        b.begin("timer")
            .string("compatible", "arm,armv8-timer")
            .cells("interrupts", &[1, 13, 0xf08, 1, 14, 0xf08, 1, 11, 0xf08, 1, 10, 0xf08])
            .cells("clock-frequency", &[54_000_000])
            .end();
        b.end();
        let dtb = b.build();
        let p = devicetree::parse(&dtb).unwrap();
        (p.timer, p.gic)
    };
    let (timer, gic) = tree("arm,cortex-a7-gic");
    let timer = timer.unwrap();
    assert_eq!(
        (
            timer.phys_secure_intid,
            timer.phys_nonsecure_intid,
            timer.virt_intid,
            timer.hyp_intid
        ),
        (29, 30, 27, 26)
    );
    assert_eq!(timer.clock_frequency, Some(54_000_000));
    assert!(matches!(gic, Some(Gic::V2 { .. })));
    assert_eq!(tree("brcm,bcm2836-l1-intc").0, None);
}

#[test]
fn a_property_after_a_child_node_is_malformed() {
    let mut b = root();
    b.begin("a").end();
    b.string("model", "late");
    b.end();
    assert!(matches!(
        devicetree::parse(&b.build()),
        Err(Error::Malformed {
            what: "property after a child node",
            ..
        })
    ));
}

#[test]
fn nesting_beyond_the_limit_is_an_error() {
    let mut b = root();
    for _ in 0..40 {
        b.begin("n");
    }
    for _ in 0..41 {
        b.end();
    }
    let err = devicetree::parse(&b.build()).unwrap_err();
    assert_eq!(err, Error::TooDeep { max: 16 });
    assert_eq!(err.to_string(), "device tree: nodes nested deeper than 16 levels");
}

#[test]
fn an_unclosed_root_is_malformed() {
    let mut b = root();
    b.begin("a").end();
    let err = devicetree::parse(&b.build()).unwrap_err();
    assert!(err.to_string().ends_with("structure block ends inside a node"), "{err}");
}
