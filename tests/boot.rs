//! The normal kernel boots on every supported configuration and brings all
//! CPUs online; a missing device tree is reported, not a silent hang.

use e2e::{boot, boot_log, kernel_image};
use std::time::Duration;

fn boots_with_all_cpus(args: &[&str], cpus: usize, model: &str) {
    // Boot, run `true` through init and the shell, power off; check the log.
    let b = boot_log(args, "true");
    assert_eq!(b.status, Some(0), "the boot did not complete:\n{}", b.output);
    assert!(b.has("reboot: Power down"), "{}", b.output);
    assert!(b.has("Run /sbin/init as init process"), "{}", b.output);
    assert!(b.has(&format!("Machine model: {model}")), "{}", b.output);
    assert!(b.has(&format!("smp: Brought up 1 node, {cpus} CPUs")), "{}", b.output);
    assert_eq!(b.count("Booted secondary processor"), cpus - 1, "{}", b.output);
    assert!(b.has("GIC: GICv2 at"), "{}", b.output);
    assert!(b.has("boot: entry to smp up:"), "{}", b.output);
    assert!(!b.has("Oops") && !b.has("panic"), "{}", b.output);
    // Every kernel log line has Linux's timestamp prefix.
    let kernel_lines = b
        .output
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("qemu-system-aarch64:"));
    for line in kernel_lines.take_while(|l| !l.contains("@@@QEMURUN")) {
        assert!(
            line.starts_with('[') && line.as_bytes().get(13) == Some(&b']'),
            "bad log line: {line:?}"
        );
    }
}

#[test]
fn virt_smp1_boots() {
    boots_with_all_cpus(&["--machine", "virt", "--smp", "1"], 1, "linux,dummy-virt");
}

#[test]
fn virt_smp4_boots() {
    boots_with_all_cpus(&["--machine", "virt", "--smp", "4"], 4, "linux,dummy-virt");
}

#[test]
fn raspi4b_boots() {
    boots_with_all_cpus(&["--machine", "raspi4b"], 4, "Raspberry Pi 4 Model B");
}

#[test]
fn bootargs_reach_the_kernel() {
    let b = boot_log(&["--smp", "1", "--append", "console=ttyAMA0 foo=bar"], "true");
    assert!(b.has("Kernel command line: console=ttyAMA0 foo=bar"), "{}", b.output);
}

#[test]
fn quiet_keeps_info_messages_off_the_console_but_in_the_log() {
    let b = boot_log(&["--smp", "1", "--append", "quiet"], "dmesg");
    let (console, commands) = b.output.split_once("@@@QEMURUN-BEGIN").expect("the commands ran");
    assert!(
        !console.contains("Booting Linux on physical CPU"),
        "quiet printed info lines:\n{console}"
    );
    assert!(
        commands.contains("Booting Linux on physical CPU"),
        "dmesg lacks the boot messages:\n{commands}"
    );
    assert!(commands.contains("Kernel command line: quiet"), "{commands}");
}

#[test]
fn missing_device_tree_is_reported() {
    let b = boot(
        kernel_image(),
        &["--machine", "raspi4b", "--no-dtb"],
        Some("The boot loader must pass"),
        Duration::from_secs(60),
    );
    assert!(b.reached, "no message for a missing DTB:\n{}", b.output);
    // QEMU's raspi4b passes x0 = 0x100 (the old ATAGS address) without -dtb.
    assert!(b.has("no usable device tree: no FDT magic at 0x100"), "{}", b.output);
    assert!(
        b.has("The boot loader must pass a flattened device tree"),
        "{}",
        b.output
    );
}

/// A panic must end QEMU (PSCI SYSTEM_OFF on virt, the PM watchdog on a
/// Pi) rather than leave it spinning until a harness times out.
fn panic_powers_the_machine_off(args: &[&str]) {
    let mut all = args.to_vec();
    all.extend(["--append", "init=/no/such/init"]);
    let started = std::time::Instant::now();
    let b = boot(kernel_image(), &all, None, Duration::from_secs(60));
    assert!(
        b.has("Kernel panic - not syncing: No working init found (error 2)"),
        "{}",
        b.output
    );
    assert!(
        b.has("---[ end Kernel panic - not syncing: No working init found"),
        "{}",
        b.output
    );
    assert!(
        matches!(b.status, Some(s) if s != 124),
        "QEMU did not end after the panic (status {:?}, {:?}):\n{}",
        b.status,
        started.elapsed(),
        b.output
    );
}

#[test]
fn a_panic_powers_off_virt() {
    panic_powers_the_machine_off(&["--smp", "2"]);
}

#[test]
fn a_panic_powers_off_raspi4b() {
    panic_powers_the_machine_off(&["--machine", "raspi4b"]);
}
