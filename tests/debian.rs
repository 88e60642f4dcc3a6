//! Unmodified dynamically linked Linux programs: Debian's arm64 bash and
//! coreutils with glibc's dynamic linker (the archive `scripts/setup.sh
//! --print-debian` packs), unpacked into the guest's root and run by a bash
//! script (`tests/debian/script.sh`) on `virt -smp 4` and, when
//! ../shared/reflinux is there, on real Linux: the outputs must be equal.

use e2e::{root, run_commands};
use std::path::PathBuf;
use std::process::Command;

/// Unpacks the archive at / (the libraries at their Debian paths) and runs
/// the script with Debian's bash; the same on both kernels.
const COMMANDS: &str = "busybox tar -xf /bin/debian.tar -C / && PATH=/usr/bin:/bin /usr/bin/bash /bin/script.sh";

/// What `scripts/setup.sh` gives for `flag` (a path on stdout).
fn setup_path(flag: &str) -> PathBuf {
    let out = Command::new(root().join("scripts/setup.sh"))
        .arg(flag)
        .output()
        .expect("run scripts/setup.sh");
    assert!(
        out.status.success(),
        "scripts/setup.sh {flag} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn files() -> Vec<PathBuf> {
    vec![
        setup_path("--print-busybox"),
        setup_path("--print-debian"),
        root().join("tests/debian/script.sh"),
    ]
}

#[test]
fn debian_bash_and_coreutils_run_dynamically_linked_as_on_linux() {
    let files = files();
    let (out, code) = run_commands(&["--smp", "4"], &files, COMMANDS, 120);
    assert_eq!(code, 0, "{out}");
    // Spot checks that hold whatever Linux says: bash's features and the
    // CPU count through sched_getaffinity (coreutils) and busybox.
    for want in [
        "square(3) = 9\n",
        "words=one,three,\n",
        "right left\n",
        "trapped USR1\n",
        "killed status 143\n",
        "counted 100\n",
        "removed\n",
        "timeout status 124\n",
        "nproc 4 4\n",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    let Some(reflinux) = e2e::reflinux() else { return };
    let linux = Command::new(reflinux)
        .args(["--smp", "2", "--timeout", "120"])
        .args(&files)
        .args(["--", COMMANDS])
        .output()
        .expect("reflinux");
    assert!(
        linux.status.success(),
        "reflinux: {}",
        String::from_utf8_lossy(&linux.stderr)
    );
    // Linux runs on 2 CPUs (it boots faster so): the one expected difference.
    let linux = String::from_utf8_lossy(&linux.stdout).replace("nproc 2 2\n", "nproc 4 4\n");
    assert_eq!(out, linux, "real Linux differs");
}
