//! The normal kernel boots on every supported configuration and brings all
//! CPUs online; a missing device tree is reported, not a silent hang;
//! `qemu-run.sh --root` trees and archives appear at the guest's root.

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

/// A scratch directory under target/ for the `--root` tests.
fn rootfs_scratch(name: &str) -> std::path::PathBuf {
    let d = e2e::root().join("target/rootfs-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a scratch directory");
    d
}

fn host_tar(dir: &std::path::Path, args: &[&str]) {
    let st = std::process::Command::new("tar")
        .args(args)
        .current_dir(dir)
        .status()
        .expect("run tar");
    assert!(st.success(), "tar {args:?}");
}

/// `qemu-run.sh --root` puts a directory's and archives' files, modes and
/// symlinks at the guest's / with nothing unpacked in the guest; a path in
/// several places takes the last source's entry (a --root over a FILE, a
/// later --root over an earlier one). On -smp 1 and -smp 4.
#[test]
fn root_trees_and_archives_appear_at_the_guests_root() {
    use std::os::unix::fs::PermissionsExt;
    let d = rootfs_scratch("merge");
    let tree = d.join("tree");
    std::fs::create_dir_all(tree.join("etc")).unwrap();
    std::fs::create_dir_all(tree.join("bin")).unwrap();
    std::fs::write(tree.join("etc/greeting"), "hello\n").unwrap();
    std::fs::set_permissions(tree.join("etc/greeting"), std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::write(tree.join("bin/note"), "from the tree\n").unwrap();
    std::os::unix::fs::symlink("etc/greeting", tree.join("link")).unwrap();
    let note = d.join("note");
    std::fs::write(&note, "from FILE\n").unwrap();
    for (archive, text, mode) in [("first", "first\n", 0o600), ("second", "second\n", 0o604)] {
        let src = d.join(archive);
        std::fs::create_dir_all(src.join("opt/a")).unwrap();
        std::fs::write(src.join("opt/a/x"), text).unwrap();
        std::fs::set_permissions(src.join("opt/a/x"), std::fs::Permissions::from_mode(mode)).unwrap();
        host_tar(
            &src,
            &["--owner=0", "--group=0", "-czf", &format!("../{archive}.tar.gz"), "opt"],
        );
    }
    let roots = [tree, d.join("first.tar.gz"), d.join("second.tar.gz")];
    let cmds = "busybox stat -c '%A %s %N' /etc/greeting /link /opt/a/x; cat /bin/note /opt/a/x /link";
    for smp in ["1", "4"] {
        let (out, code) =
            e2e::run_commands_with_roots(&["--smp", smp], &roots, &[e2e::busybox(), note.clone()], cmds, 60);
        assert_eq!(code, 0, "-smp {smp}: {out}");
        assert_eq!(
            out,
            "-rw-r----- 6 /etc/greeting\n\
             lrwxrwxrwx 12 '/link' -> 'etc/greeting'\n\
             -rw----r-- 7 /opt/a/x\n\
             from the tree\nsecond\nhello\n",
            "-smp {smp}"
        );
    }
}

/// An archive whose names leave the root is refused on the host with a
/// message that names it, and the machine is not started (status 125).
#[test]
fn root_archive_with_dot_dot_is_refused_before_boot() {
    let d = rootfs_scratch("escape");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("x"), "x").unwrap();
    host_tar(&d, &["-P", "-cf", "evil.tar", "sub/../x"]);
    let out = std::process::Command::new(e2e::root().join("scripts/qemu-run.sh"))
        .arg("--kernel")
        .arg(kernel_image())
        .arg("--root")
        .arg(d.join("evil.tar"))
        .args(["--timeout", "30", "--", "echo booted"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run qemu-run.sh");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        err.contains("evil.tar") && err.contains("'sub/../x' has a '..' component"),
        "{err}"
    );
}
