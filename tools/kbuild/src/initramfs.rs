//! The initramfs: the user programs built for aarch64-unknown-none, plus
//! any extra files and an optional `/etc/rc`, packed as a newc cpio archive
//! (the format Linux's initramfs and our kernel read).

use crate::rootfs::{Kind, Node, Tree};
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
/// (keeping their mode), `/tracing -> /sys/kernel/tracing`, then each of
/// `roots` (directories or archives, merged at `/` by the rules of
/// [`rootfs`](crate::rootfs): a later entry replaces an earlier one), then
/// `/etc/rc` and `/etc/cmd.sh` if given, which no root can replace as the
/// runner needs them.
pub fn pack(
    bin_dir: &Path,
    extra: &[PathBuf],
    roots: &[PathBuf],
    rc: Option<&[u8]>,
    cmd: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut t = Tree::new();
    let node = |kind, mode| Node {
        kind,
        meta: Metadata::new(mode, 0, 0),
    };
    for d in DIRS {
        let mode = if *d == "tmp" { 0o1777 } else { 0o755 };
        t.insert(d, node(Kind::Dir, mode))?;
    }
    t.insert("dev/console", node(Kind::Device(DeviceKind::Char, 5, 1), 0o600))?;
    t.insert("tracing", node(Kind::Symlink("/sys/kernel/tracing".into()), 0o777))?;
    for (prog, dest) in PROGRAMS {
        let data = std::fs::read(bin_dir.join(prog)).map_err(|e| format!("{}: {e}", bin_dir.join(prog).display()))?;
        t.insert(dest.trim_start_matches('/'), node(Kind::File(data), 0o755))?;
    }
    for f in extra {
        let data = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let mode = std::fs::metadata(f).map_err(|e| e.to_string())?.permissions().mode() & 0o7777;
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("bad file name: {}", f.display()))?;
        t.insert(&format!("bin/{name}"), node(Kind::File(data), mode))?;
    }
    for r in roots {
        t.add_source(r).map_err(|e| format!("--root {e}"))?;
    }
    if let Some(rc) = rc {
        t.insert("etc/rc", node(Kind::File(rc.to_vec()), 0o644))
            .map_err(|e| format!("/etc/rc: {e}"))?;
    }
    if let Some(cmd) = cmd {
        t.insert("etc/cmd.sh", node(Kind::File(cmd.to_vec()), 0o644))
            .map_err(|e| format!("/etc/cmd.sh: {e}"))?;
    }
    let mut w = Writer::new();
    t.write(&mut w).map_err(|e| format!("initramfs: {e}"))?;
    Ok(w.finish())
}
