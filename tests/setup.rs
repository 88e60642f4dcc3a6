//! `scripts/setup.sh` on a machine without QEMU, a C compiler or xz (a
//! fresh Debian has none of them): it must go on to install what is missing
//! rather than stop at its own check (the QEMU check once failed under
//! `set -e -o pipefail` with status 127 and said nothing).
//!
//! The machine here has them all, so each test builds a `PATH` that has every
//! program of the real one except the missing ones, with `apt-get` (and
//! `sudo`) replaced by stand-ins that record how they were called.
//! `scripts/fresh-machine-check.sh` is the real proof, on a debootstrapped
//! Debian (too long for the test command).

use e2e::root;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory of links to every program on `PATH` but those `missing`
/// accepts, plus stand-ins for `apt-get` and `sudo` that append their
/// arguments to `record`.
fn path_without(dir: &Path, record: &Path, missing: fn(&str) -> bool) -> PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let path = std::env::var_os("PATH").unwrap();
    for d in std::env::split_paths(&path) {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let name = e.file_name();
            let s = name.to_string_lossy();
            if missing(&s) || s == "apt-get" || s == "sudo" {
                continue;
            }
            let to = bin.join(&name);
            if !to.exists() {
                let _ = symlink(e.path(), to);
            }
        }
    }
    for stand_in in ["apt-get", "sudo"] {
        let script = if stand_in == "sudo" {
            format!("#!/bin/sh\necho \"sudo $*\" >>'{}'\nexec \"$@\"\n", record.display())
        } else {
            format!("#!/bin/sh\necho \"apt-get $*\" >>'{}'\nexit 0\n", record.display())
        };
        let p = bin.join(stand_in);
        fs::write(&p, script).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// Runs `scripts/setup.sh` with the programs `missing` accepts taken out
/// of `PATH`; returns its exit status, its stderr and the recorded
/// `apt-get`/`sudo` calls.
fn setup_without(name: &str, missing: fn(&str) -> bool) -> (Option<i32>, String, String) {
    setup_without_env(name, missing, &[])
}

/// As [`setup_without`], with `env` added to the script's environment.
fn setup_without_env(name: &str, missing: fn(&str) -> bool, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let dir = std::env::temp_dir().join(format!("e2e-setup-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let record = dir.join("calls");
    let bin = path_without(&dir, &record, missing);
    let out = Command::new("bash")
        .arg(root().join("scripts/setup.sh"))
        .env("PATH", &bin)
        // scripts/e2e.sh sets it for the boots; here setup must check all.
        .env_remove("SETUP_DONE")
        .envs(env.iter().copied())
        .output()
        .expect("run scripts/setup.sh");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let calls = fs::read_to_string(&record).unwrap_or_default();
    fs::remove_dir_all(&dir).ok();
    (out.status.code(), stderr, calls)
}

#[test]
fn setup_without_qemu_goes_on_to_install_it() {
    let (code, stderr, calls) = setup_without("qemu", |s| s.starts_with("qemu-system-"));
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("apt-get") && l.contains(" install ") && l.contains("qemu-system-arm")),
        "setup.sh did not try to install QEMU; apt-get calls:\n{calls}\nstderr:\n{stderr}"
    );
    assert!(stderr.contains("qemu-system-aarch64 is missing"), "{stderr}");
    // The stand-in installs nothing, so the check after the install fails,
    // with a message rather than a silent 127.
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("setup: error: qemu-system-aarch64 is still missing"),
        "{stderr}"
    );
}

#[test]
fn setup_without_cc_goes_on_to_install_gcc() {
    let (code, stderr, calls) = setup_without("cc", |s| s == "cc");
    assert!(
        calls.lines().any(|l| l.starts_with("apt-get")
            && l.contains(" install ")
            && l.contains(" gcc ")
            && l.contains("libc6-dev")),
        "setup.sh did not try to install gcc; apt-get calls:\n{calls}\nstderr:\n{stderr}"
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("setup: error: cc is still missing or cannot link a C program"),
        "{stderr}"
    );
}

#[test]
fn setup_without_xz_goes_on_to_install_xz_utils() {
    let (code, stderr, calls) = setup_without("xz", |s| s == "xz");
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("apt-get") && l.contains(" install ") && l.ends_with(" xz-utils")),
        "setup.sh did not try to install xz-utils; apt-get calls:\n{calls}\nstderr:\n{stderr}"
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("setup: error: xz is still missing after installing xz-utils"),
        "{stderr}"
    );
}

#[test]
fn setup_without_cpio_goes_on_to_install_it() {
    let (code, stderr, calls) = setup_without("cpio", |s| s == "cpio");
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("apt-get") && l.contains(" install ") && l.ends_with(" cpio")),
        "setup.sh did not try to install cpio; apt-get calls:\n{calls}\nstderr:\n{stderr}"
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("setup: error: cpio is still missing after installing cpio"),
        "{stderr}"
    );
}

#[test]
fn setup_without_a_ca_bundle_installs_ca_certificates_before_the_toolchain() {
    let (code, stderr, calls) = setup_without_env(
        "ca",
        |_| false,
        &[("SETUP_CA_BUNDLE", "/nonexistent/ca-certificates.crt")],
    );
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("apt-get") && l.contains(" install ") && l.ends_with(" ca-certificates")),
        "setup.sh did not try to install ca-certificates; apt-get calls:\n{calls}\nstderr:\n{stderr}"
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "setup: error: /nonexistent/ca-certificates.crt is still missing after installing ca-certificates"
        ),
        "{stderr}"
    );
}
