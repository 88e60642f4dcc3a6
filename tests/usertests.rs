//! `usertests`, the Linux-ABI system call test suite, passes on every
//! configuration, and (when ../shared/reflinux is there) on real Linux,
//! which proves that what it asserts is what Linux does.

use e2e::{proof_binary, run_commands};
use std::process::Command;

fn passes(out: &str, code: i32) {
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "failing checks:\n{}", fails.join("\n"));
    let last = out.lines().last().unwrap_or("");
    assert!(last.ends_with(" passed, 0 failed"), "summary: {last:?}\n{out}");
    let passed: usize = last.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(passed >= 100, "only {passed} checks ran");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn usertests_pass_on_virt_smp1() {
    let (out, code) = run_commands(
        &["--smp", "1"],
        &[proof_binary("usertests")],
        "cd /tmp && usertests",
        300,
    );
    passes(&out, code);
}

#[test]
fn usertests_pass_on_virt_smp4() {
    let (out, code) = run_commands(
        &["--smp", "4"],
        &[proof_binary("usertests")],
        "cd /tmp && usertests",
        300,
    );
    passes(&out, code);
}

#[test]
fn usertests_pass_on_virt_gicv3() {
    let (out, code) = run_commands(
        &["--gic", "3", "--smp", "4"],
        &[proof_binary("usertests")],
        "cd /tmp && usertests",
        300,
    );
    passes(&out, code);
}

#[test]
fn usertests_pass_on_raspi4b() {
    let (out, code) = run_commands(
        &["--machine", "raspi4b"],
        &[proof_binary("usertests")],
        "cd /tmp && usertests",
        300,
    );
    passes(&out, code);
}

#[test]
fn usertests_pass_on_real_linux() {
    let Some(reflinux) = e2e::reflinux() else { return };
    let out = Command::new(&reflinux)
        .args(["--smp", "2", "--timeout", "300"])
        .arg(proof_binary("usertests"))
        .args(["--", "cd /tmp && usertests"])
        .output()
        .expect("run reflinux");
    passes(&String::from_utf8_lossy(&out.stdout), out.status.code().unwrap_or(-1));
}
