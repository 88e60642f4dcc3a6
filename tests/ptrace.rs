//! `ptracetests`, the ptrace(2) checks of `userland/ptracetests`: on real
//! Linux (../shared/reflinux), which proves that what they assert is what
//! Linux 6.12 does, and on this kernel on virt -smp 1 and -smp 4.

use e2e::{proof_binary, run_commands};
use std::process::Command;

/// Checks at least this many ran.
const CHECKS: usize = 42;

/// Every check passed, and at least [`CHECKS`] of them ran.
fn passes(out: &str, code: i32) {
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "failing checks:\n{}\n\n{out}", fails.join("\n"));
    let summary = out
        .lines()
        .find(|l| l.ends_with(" passed, 0 failed"))
        .unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= CHECKS, "only {passed} checks ran:\n{out}");
    let passes = out.lines().filter(|l| l.starts_with("PASS ")).count();
    assert_eq!(passes, passed, "PASS lines against the summary:\n{out}");
    assert_eq!(code, 0, "{out}");
}

const COMMANDS: &str = "cd /tmp && ptracetests";

fn on_reflinux(smp: &str) {
    let Some(reflinux) = e2e::reflinux() else { return };
    let out = Command::new(&reflinux)
        .args(["--smp", smp, "--timeout", "300"])
        .arg(proof_binary("ptracetests"))
        .args(["--", COMMANDS])
        .output()
        .expect("run reflinux");
    let text = String::from_utf8_lossy(&out.stdout);
    passes(&text, out.status.code().unwrap_or(-1));
}

#[test]
fn ptracetests_pass_on_real_linux_smp1() {
    on_reflinux("1");
}

#[test]
fn ptracetests_pass_on_real_linux_smp2() {
    on_reflinux("2");
}

fn on_kernel(args: &[&str]) {
    let (out, code) = run_commands(args, &[proof_binary("ptracetests")], COMMANDS, 240);
    passes(&out, code);
}

#[test]
fn ptracetests_pass_on_virt_smp1() {
    on_kernel(&["--smp", "1"]);
}

#[test]
fn ptracetests_pass_on_virt_smp4() {
    on_kernel(&["--smp", "4"]);
}
