//! `scripts/setup.sh` on a machine without QEMU: it must go on to install
//! it rather than stop at its own version check (which once failed under
//! `set -e -o pipefail` with status 127 and said nothing).
//!
//! The machine here has QEMU, so the test builds a `PATH` that has every
//! program of the real one except `qemu-system-aarch64`, with `apt-get`
//! (and `sudo`) replaced by stand-ins that record how they were called.

use e2e::root;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory of links to every program on `PATH` but `qemu-system-aarch64`,
/// plus stand-ins for `apt-get` and `sudo` that append their arguments to
/// `record`.
fn path_without_qemu(dir: &Path, record: &Path) -> PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let path = std::env::var_os("PATH").unwrap();
    for d in std::env::split_paths(&path) {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let name = e.file_name();
            let s = name.to_string_lossy();
            if s.starts_with("qemu-system-") || s == "apt-get" || s == "sudo" {
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

#[test]
fn setup_without_qemu_goes_on_to_install_it() {
    let dir = std::env::temp_dir().join(format!("e2e-setup-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let record = dir.join("calls");
    let bin = path_without_qemu(&dir, &record);
    let out = Command::new("bash")
        .arg(root().join("scripts/setup.sh"))
        .env("PATH", &bin)
        .output()
        .expect("run scripts/setup.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let calls = fs::read_to_string(&record).unwrap_or_default();
    fs::remove_dir_all(&dir).ok();
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("apt-get") && l.contains(" install ") && l.contains("qemu-system-arm")),
        "setup.sh did not try to install QEMU; apt-get calls:\n{calls}\nstderr:\n{stderr}"
    );
    assert!(stderr.contains("qemu-system-aarch64 is missing"), "{stderr}");
    // The stand-in installs nothing, so the check after the install fails,
    // with a message rather than a silent 127.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("setup: error: qemu-system-aarch64 is still missing"),
        "{stderr}"
    );
}
