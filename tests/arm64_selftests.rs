//! Linux 6.12.117's arm64 ABI selftests, unmodified
//! (tools/testing/selftests/arm64/abi/{syscall-abi,hwcap,tpidr2} and all of
//! signal/testcases, built by `scripts/arm64-selftests.sh` with
//! `aarch64-linux-gnu-gcc -static`), on `virt -smp 4` with QEMU's
//! cortex-a72, and on ../shared/reflinux with the same CPU: every program
//! must end here as it ends on Linux (PASS, or SKIP where the CPU lacks
//! SVE, SME, ...), with the same TAP counts. Without reflinux the test
//! still holds every program to PASS or SKIP, and those that need no
//! optional CPU feature to PASS.

use e2e::{kernel_image, root};
use std::path::PathBuf;
use std::process::Command;

/// How one program ended and what it reported.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    name: String,
    /// kselftest's exit status: 0 pass, 4 skip, anything else a failure;
    /// `None` when the guest stopped before the program did.
    status: Option<i32>,
    /// TAP lines: `ok`, `ok ... # SKIP`, `not ok`.
    pass: usize,
    skip: usize,
    fail: usize,
}

impl Outcome {
    fn verdict(&self) -> &'static str {
        match self.status {
            Some(0) => "PASS",
            Some(4) => "SKIP",
            Some(_) => "FAIL",
            None => "CRASHED",
        }
    }
}

/// Parses the guest script's output: `=== NAME`, the program's output,
/// `=== rc STATUS`.
fn parse(out: &str) -> Vec<Outcome> {
    let mut all = Vec::new();
    let mut cur: Option<Outcome> = None;
    for line in out.lines() {
        if let Some(rc) = line.strip_prefix("=== rc ") {
            if let Some(mut o) = cur.take() {
                o.status = rc.trim().parse().ok();
                all.push(o);
            }
        } else if let Some(name) = line.strip_prefix("=== ") {
            all.extend(cur.take());
            cur = Some(Outcome {
                name: name.trim().to_string(),
                status: None,
                pass: 0,
                skip: 0,
                fail: 0,
            });
        } else if let Some(o) = cur.as_mut() {
            if line.starts_with("not ok ") {
                o.fail += 1;
            } else if line.starts_with("ok ") && line.contains("# SKIP") {
                o.skip += 1;
            } else if line.starts_with("ok ") {
                o.pass += 1;
            }
        }
    }
    all.extend(cur);
    all
}

/// Programs that use no optional CPU feature a cortex-a72 lacks: they must
/// pass on any arm64 Linux.
const MUST_PASS: &[&str] = &[
    "fake_sigreturn_bad_magic",
    "fake_sigreturn_bad_size",
    "fake_sigreturn_bad_size_for_magic0",
    "fake_sigreturn_duplicated_fpsimd",
    "fake_sigreturn_misaligned_sp",
    "fake_sigreturn_missing_fpsimd",
    "mangle_pstate_invalid_compat_toggle",
    "mangle_pstate_invalid_daif_bits",
    "mangle_pstate_invalid_mode_el1h",
    "mangle_pstate_invalid_mode_el1t",
    "mangle_pstate_invalid_mode_el2h",
    "mangle_pstate_invalid_mode_el2t",
    "mangle_pstate_invalid_mode_el3h",
    "mangle_pstate_invalid_mode_el3t",
    "hwcap",
    "syscall-abi",
];

fn script() -> PathBuf {
    root().join("scripts/arm64-selftests.sh")
}

/// `scripts/arm64-selftests.sh run WHERE`'s output.
fn run(place: &str) -> String {
    let out = Command::new(script())
        .args(["run", place])
        .env("KERNEL", kernel_image())
        .output()
        .expect("run scripts/arm64-selftests.sh");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn arm64_abi_selftests_end_here_as_on_linux() {
    let out = run("here");
    let here = parse(&out);
    assert_eq!(here.len(), 35, "not every program ran:\n{out}");
    for o in &here {
        assert!(
            matches!(o.verdict(), "PASS" | "SKIP"),
            "{} {}:\n{out}",
            o.name,
            o.verdict()
        );
        assert_eq!(o.fail, 0, "{}: failed TAP lines:\n{out}", o.name);
    }
    for name in MUST_PASS {
        let o = here
            .iter()
            .find(|o| o.name == *name)
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(o.verdict(), "PASS", "{name}:\n{out}");
    }
    if e2e::reflinux().is_none() {
        return;
    }
    let linux_out = run("linux");
    let linux = parse(&linux_out);
    assert_eq!(linux.len(), here.len(), "reflinux ran a different set:\n{linux_out}");
    for (h, l) in here.iter().zip(&linux) {
        assert_eq!(h, l, "{} differs from Linux\nhere:\n{out}\nlinux:\n{linux_out}", h.name);
    }
}

#[test]
fn parse_reads_status_and_tap_counts() {
    let out = "noise\n=== a\nok 1 x\nok 2 # SKIP y\nnot ok 3 z\n=== rc 1\n=== b\n=== rc 4\n=== c\nok 1\n";
    let got = parse(out);
    assert_eq!(got.len(), 3);
    assert_eq!(
        (got[0].verdict(), got[0].pass, got[0].skip, got[0].fail),
        ("FAIL", 1, 1, 1)
    );
    assert_eq!(got[1].verdict(), "SKIP");
    assert_eq!((got[2].verdict(), got[2].pass), ("CRASHED", 1));
}
