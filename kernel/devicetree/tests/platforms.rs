//! The blobs the kernel meets, read end to end: QEMU `virt` (GICv2 with 1
//! and 4 CPUs, GICv3), Debian's Raspberry Pi 4 DTB, and that DTB as QEMU
//! `raspi4b` hands it over. How each fixture was made: fixtures/README.md.

use devicetree::{ArchTimer, Cpu, EnableMethod, Gic, PsciConduit, Region, Uart};

const VIRT_SMP1: &[u8] = include_bytes!("fixtures/qemu-virt-smp1.dtb");
const VIRT_SMP4: &[u8] = include_bytes!("fixtures/qemu-virt-smp4.dtb");
const VIRT_GICV3: &[u8] = include_bytes!("fixtures/qemu-virt-gicv3.dtb");
const RPI4: &[u8] = include_bytes!("fixtures/bcm2711-rpi-4-b.dtb");
const RASPI4B: &[u8] = include_bytes!("fixtures/qemu-raspi4b.dtb");

const GIB: u64 = 1 << 30;

fn region(base: u64, size: u64) -> Region {
    Region { base, size }
}

/// QEMU virt's timer: PPIs 13, 14, 11, 10; no clock-frequency.
const VIRT_TIMER: ArchTimer = ArchTimer {
    phys_secure_intid: 29,
    phys_nonsecure_intid: 30,
    virt_intid: 27,
    hyp_intid: 26,
    clock_frequency: None,
};

#[test]
fn virt_smp4_has_everything_at_qemus_addresses() {
    let p = devicetree::parse(VIRT_SMP4).unwrap();
    assert_eq!(p.model, "linux,dummy-virt");
    assert_eq!(p.memory.as_slice(), [region(0x4000_0000, GIB)]);
    assert!(p.reserved.is_empty());
    assert_eq!(
        p.uart,
        Some(Uart {
            base: 0x0900_0000,
            size: 0x1000,
            clock_hz: Some(24_000_000),
        })
    );
    assert_eq!(
        p.gic,
        Some(Gic::V2 {
            dist: region(0x0800_0000, 0x1_0000),
            cpu: region(0x0801_0000, 0x1_0000),
        })
    );
    assert_eq!(p.timer, Some(VIRT_TIMER));
    // Without EL2/EL3 emulation QEMU implements PSCI itself, behind HVC.
    assert_eq!(p.psci, Some(PsciConduit::Hvc));
    let want: Vec<Cpu> = (0..4)
        .map(|mpidr| Cpu {
            mpidr,
            enable_method: EnableMethod::Psci,
        })
        .collect();
    assert_eq!(p.cpus.as_slice(), want);
    assert_eq!(p.bootargs, "console=ttyAMA0 loglevel=8");
    assert_eq!(p.boot_cpuid, 0);
    assert_eq!(p.total_size, VIRT_SMP4.len());
}

#[test]
fn virt_smp1_has_one_cpu_and_no_bootargs() {
    let p = devicetree::parse(VIRT_SMP1).unwrap();
    // With one CPU QEMU writes no enable-method: there is nothing to start.
    assert_eq!(
        p.cpus.as_slice(),
        [Cpu {
            mpidr: 0,
            enable_method: EnableMethod::Unknown,
        }]
    );
    assert_eq!(p.psci, Some(PsciConduit::Hvc));
    assert_eq!(p.bootargs, "");
    assert_eq!(p.memory.as_slice(), [region(0x4000_0000, GIB)]);
    assert_eq!(p.uart.map(|u| u.base), Some(0x0900_0000));
    assert_eq!(p.timer, Some(VIRT_TIMER));
}

#[test]
fn virt_gicv3_has_distributor_and_redistributors() {
    let p = devicetree::parse(VIRT_GICV3).unwrap();
    let Some(Gic::V3 { dist, redist }) = p.gic else {
        panic!("expected a GICv3, got {:?}", p.gic);
    };
    assert_eq!(dist, region(0x0800_0000, 0x1_0000));
    assert_eq!(redist.as_slice(), [region(0x080a_0000, 0xf6_0000)]);
    assert_eq!(p.timer, Some(VIRT_TIMER));
    assert_eq!(p.cpus.len(), 4);
    assert_eq!(p.bootargs, "quiet");
}

/// The checks common to the Pi 4 blob, as Debian ships it and as QEMU
/// passes it on.
fn check_rpi4(p: &devicetree::Platform<'_>) {
    assert_eq!(p.model, "Raspberry Pi 4 Model B");
    // stdout-path is "serial1:115200n8", the mini UART (brcm,bcm2835-aux-uart):
    // not a PL011, so the first enabled PL011, uart0, is chosen. Its bus
    // address 0x7e201000 is translated through /soc's ranges; its clock
    // comes from the firmware, so there is no fixed rate.
    assert_eq!(
        p.uart,
        Some(Uart {
            base: 0xfe20_1000,
            size: 0x200,
            clock_hz: None,
        })
    );
    assert_eq!(
        p.gic,
        Some(Gic::V2 {
            dist: region(0xff84_1000, 0x1000),
            cpu: region(0xff84_2000, 0x2000),
        })
    );
    assert_eq!(
        p.timer,
        Some(ArchTimer {
            phys_secure_intid: 29,
            phys_nonsecure_intid: 30,
            virt_intid: 27,
            hyp_intid: 26,
            clock_frequency: None,
        })
    );
    // The Pi's firmware uses spin tables, not PSCI.
    assert_eq!(p.psci, None);
    let want: Vec<Cpu> = [0xd8, 0xe0, 0xe8, 0xf0]
        .into_iter()
        .zip(0..)
        .map(|(release_addr, mpidr)| Cpu {
            mpidr,
            enable_method: EnableMethod::SpinTable { release_addr },
        })
        .collect();
    assert_eq!(p.cpus.as_slice(), want);
    // /memreserve/ keeps the spin-table page; /reserved-memory has only a
    // dynamic CMA pool and a disabled, zero-sized nvram node.
    assert_eq!(p.reserved.as_slice(), [region(0, 0x1000)]);
}

#[test]
fn rpi4_devices_are_translated_to_cpu_addresses() {
    let p = devicetree::parse(RPI4).unwrap();
    check_rpi4(&p);
    // Its memory node is `reg = <0 0 0>` until the firmware fills it in.
    assert!(p.memory.is_empty());
    assert_eq!(p.bootargs, "");
}

#[test]
fn qemu_raspi4b_adds_memory_and_bootargs() {
    let p = devicetree::parse(RASPI4B).unwrap();
    check_rpi4(&p);
    // QEMU replaces the memory node with the RAM below the VideoCore's
    // share (960 MiB of the default 2 GiB).
    assert_eq!(p.memory.as_slice(), [region(0, 0x3c00_0000)]);
    assert_eq!(p.bootargs, "console=ttyAMA0 earlycon");
}

#[test]
fn total_size_reads_the_header_alone() {
    for dtb in [VIRT_SMP1, VIRT_SMP4, VIRT_GICV3, RPI4, RASPI4B] {
        let header = &dtb[..devicetree::HEADER_SIZE];
        assert_eq!(devicetree::total_size(header), Ok(dtb.len()));
        assert_eq!(devicetree::total_size(&header[..8]), Ok(dtb.len()));
    }
}

#[test]
fn padding_after_the_blocks_is_accepted() {
    // QEMU's dumpdtb pads the blob to 1 MiB and says so in totalsize.
    let mut padded = VIRT_SMP4.to_vec();
    padded.resize(1 << 20, 0);
    padded[4..8].copy_from_slice(&(1u32 << 20).to_be_bytes());
    let p = devicetree::parse(&padded).unwrap();
    assert_eq!(p.total_size, 1 << 20);
    assert_eq!(p.cpus.len(), 4);
}

#[test]
fn bytes_after_totalsize_are_ignored() {
    let mut longer = VIRT_SMP1.to_vec();
    longer.extend_from_slice(&[0xff; 100]);
    let p = devicetree::parse(&longer).unwrap();
    assert_eq!(p.total_size, VIRT_SMP1.len());
}

#[test]
fn errors_say_what_is_wrong() {
    let msg = |dtb: &[u8]| devicetree::parse(dtb).unwrap_err().to_string();
    assert_eq!(
        msg(&[0; 64]),
        "device tree: bad magic 0x00000000 (expected 0xd00dfeed): no device tree at this address"
    );
    assert_eq!(
        msg(&VIRT_SMP1[..100]),
        format!(
            "device tree: truncated: the header says {} bytes but only 100 are there",
            VIRT_SMP1.len()
        )
    );
    assert_eq!(
        msg(&VIRT_SMP1[..20]),
        "device tree: only 20 bytes, fewer than the 40-byte header"
    );
    let mut huge = VIRT_SMP1.to_vec();
    huge[4..8].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    assert_eq!(
        msg(&huge),
        "device tree: header totalsize 2147483648 exceeds the 2097152 bytes the arm64 boot \
         protocol allows"
    );
    assert!(devicetree::total_size(&huge).is_err());
}

/// QEMU virt with `-initrd` (a 1-page file): /chosen names the RAM disk.
const VIRT_INITRD: &[u8] = include_bytes!("fixtures/qemu-virt-initrd.dtb");

#[test]
fn virt_initrd_range_comes_from_chosen() {
    let p = devicetree::parse(VIRT_INITRD).expect("parses");
    let r = p.initrd.expect("initrd present");
    assert_eq!(r.base, 0x4800_0000);
    assert!(r.size > 0 && r.size < 4096, "{r:?}");
    assert!(devicetree::parse(VIRT_SMP4).unwrap().initrd.is_none());
}

#[test]
fn raspberry_pi_power_management_block_is_found() {
    let p = devicetree::parse(RPI4).expect("parses");
    let pm = p.power_mgmt.expect("the PM/watchdog block");
    assert_eq!(pm.base, 0xfe10_0000);
    assert!(devicetree::parse(VIRT_SMP4).unwrap().power_mgmt.is_none());
}

#[test]
fn virt_real_time_clock_is_found_and_raspberry_pi_has_none() {
    for blob in [VIRT_SMP1, VIRT_SMP4, VIRT_GICV3] {
        let rtc = devicetree::parse(blob).unwrap().rtc.expect("virt's PL031");
        assert_eq!(rtc, region(0x0901_0000, 0x1000));
    }
    assert!(devicetree::parse(RPI4).unwrap().rtc.is_none());
    assert!(devicetree::parse(RASPI4B).unwrap().rtc.is_none());
}
