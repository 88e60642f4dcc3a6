//! The initramfs: the user programs built for aarch64-unknown-none, plus
//! any extra files and an optional `/etc/rc`, packed as a newc cpio archive
//! (the format Linux's initramfs and our kernel read).

use cpio::{DeviceKind, Metadata, Writer};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs of `userland/` and where they go.
const PROGRAMS: &[(&str, &str)] = &[
    ("init", "/sbin/init"),
    ("sh", "/bin/sh"),
    ("cat", "/bin/cat"),
    ("ls", "/bin/ls"),
    ("echo", "/bin/echo"),
    ("true", "/bin/true"),
    ("false", "/bin/false"),
    ("poweroff", "/bin/poweroff"),
    ("mount", "/bin/mount"),
    ("umount", "/bin/umount"),
    ("dmesg", "/bin/dmesg"),
    ("chrt", "/bin/chrt"),
];

const DIRS: &[&str] = &[
    "bin",
    "sbin",
    "dev",
    "proc",
    "sys",
    "sys/kernel",
    "sys/kernel/tracing",
    "sys/kernel/debug",
    "tmp",
    "etc",
    "root",
];

/// Builds the user programs (without debug info, to keep the archive
/// small) and returns the directory holding them.
pub fn build_userland(root: &Path) -> Result<PathBuf, String> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "init",
            "-p",
            "sh",
            "-p",
            "utils",
            "--target",
            "aarch64-unknown-none",
        ])
        .arg("--target-dir")
        .arg(root.join("target/user"))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("building the user programs failed".into());
    }
    Ok(root.join("target/user/aarch64-unknown-none/release"))
}

/// Packs the archive: directories, the programs, `extra` files into `/bin`
/// (keeping their mode), `/etc/rc` and `/etc/cmd.sh` if given, and
/// `/tracing -> /sys/kernel/tracing`.
pub fn pack(bin_dir: &Path, extra: &[PathBuf], rc: Option<&[u8]>, cmd: Option<&[u8]>) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut w = Writer::new();
    let err = |e: cpio::WriteError| format!("initramfs: {e:?}");
    for d in DIRS {
        let mode = if *d == "tmp" { 0o1777 } else { 0o755 };
        w.dir(d, Metadata::new(mode, 0, 0)).map_err(err)?;
    }
    w.device("dev/console", DeviceKind::Char, 5, 1, Metadata::new(0o600, 0, 0))
        .map_err(err)?;
    w.symlink("tracing", "/sys/kernel/tracing", Metadata::new(0o777, 0, 0))
        .map_err(err)?;
    for (prog, dest) in PROGRAMS {
        let data = std::fs::read(bin_dir.join(prog)).map_err(|e| format!("{}: {e}", bin_dir.join(prog).display()))?;
        w.file(dest.trim_start_matches('/'), Metadata::new(0o755, 0, 0), &data)
            .map_err(err)?;
    }
    for f in extra {
        let data = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let mode = std::fs::metadata(f).map_err(|e| e.to_string())?.permissions().mode() & 0o7777;
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("bad file name: {}", f.display()))?;
        w.file(&format!("bin/{name}"), Metadata::new(mode, 0, 0), &data)
            .map_err(err)?;
    }
    if let Some(rc) = rc {
        w.file("etc/rc", Metadata::new(0o644, 0, 0), rc).map_err(err)?;
    }
    if let Some(cmd) = cmd {
        w.file("etc/cmd.sh", Metadata::new(0o644, 0, 0), cmd).map_err(err)?;
    }
    Ok(w.finish())
}
