//! The in-kernel tests pass on every configuration (QEMU's exit status is
//! their verdict), and a real fatal oops names the faulting function and
//! stops the machine.

use e2e::{boot, ktest_image};
use std::time::Duration;

fn in_kernel_tests_pass(args: &[&str]) {
    // A quiet host runs them in 35-60 s; at load 10-15 on 2 cores the
    // raspi4b and 4-CPU boots reached 120 s while still passing, so the
    // limit (which only catches a hang) is 300 s.
    let b = boot(ktest_image(), args, None, Duration::from_secs(300));
    assert_eq!(b.status, Some(0), "in-kernel tests failed or hung:\n{}", b.output);
    let summary = b
        .output
        .lines()
        .find(|l| l.contains("ktest: ") && l.contains(" passed, "))
        .expect("summary line");
    assert!(summary.ends_with(" passed, 0 failed"), "{summary}");
    let ran = b.count(" ... ok (");
    assert!(ran >= 10, "only {ran} tests ran:\n{}", b.output);
}

#[test]
fn in_kernel_tests_pass_on_virt_smp1() {
    in_kernel_tests_pass(&["--machine", "virt", "--smp", "1"]);
}

#[test]
fn in_kernel_tests_pass_on_virt_smp4() {
    in_kernel_tests_pass(&["--machine", "virt", "--smp", "4"]);
}

#[test]
fn in_kernel_tests_pass_on_a_cpu_with_pan() {
    in_kernel_tests_pass(&["--machine", "virt", "--cpu", "max", "--smp", "2"]);
}

#[test]
fn in_kernel_tests_pass_on_virt_gicv3_entered_at_el2() {
    in_kernel_tests_pass(&["--machine", "virt", "--gic", "3", "--el2", "--smp", "4"]);
}

#[test]
fn in_kernel_tests_pass_on_raspi4b() {
    in_kernel_tests_pass(&["--machine", "raspi4b"]);
}

#[test]
fn fatal_oops_names_the_function_and_stops() {
    let b = boot(
        ktest_image(),
        &["--smp", "4", "--append", "ktest=oops"],
        None,
        Duration::from_secs(60),
    );
    assert_eq!(
        b.status,
        Some(1),
        "the oops did not end the run with failure:\n{}",
        b.output
    );
    let o = &b.output;
    assert!(
        o.contains("Unable to handle kernel NULL pointer dereference at virtual address 0000000000000008"),
        "{o}"
    );
    assert!(o.contains("Internal error: Oops: 0000000096000004 [#1] SMP"), "{o}");
    assert!(o.contains("FSC = 0x04: level 0 translation fault"), "{o}");
    assert!(o.contains("pc : kernel__ktest__ktest_fatal_oops_victim+0x"), "{o}");
    let trace = o.split("Call trace:").nth(1).expect("a call trace");
    assert!(trace.contains(" kernel__ktest__ktest_fatal_oops_victim+0x"), "{o}");
    assert!(
        trace.contains(" kernel__ktest__run_all+0x") || trace.contains(" start_kernel+0x"),
        "{o}"
    );
    assert!(o.contains("Kernel panic - not syncing: Oops: Fatal exception"), "{o}");
    assert!(o.contains("SMP: stopping secondary CPUs"), "{o}");
}

#[test]
fn bug_oopses_with_file_and_line() {
    let b = boot(
        ktest_image(),
        &["--smp", "2", "--append", "ktest=bug"],
        None,
        Duration::from_secs(60),
    );
    assert_eq!(b.status, Some(1), "{}", b.output);
    assert!(b.has("kernel BUG at kernel/src/ktest.rs:"), "{}", b.output);
    assert!(b.has("Internal error: Oops - BUG: "), "{}", b.output);
    assert!(b.has("pc : kernel__ktest__run_all+0x"), "{}", b.output);
}

#[test]
fn an_unclaimed_kernel_brk_oopses_naming_the_immediate() {
    let b = boot(
        ktest_image(),
        &["--smp", "2", "--append", "ktest=brk"],
        None,
        Duration::from_secs(60),
    );
    assert_eq!(b.status, Some(1), "{}", b.output);
    assert!(
        b.has("Unexpected kernel BRK exception at EL1, BRK #0x3c1"),
        "{}",
        b.output
    );
    assert!(b.has("pc : kernel__ktest__unclaimed_brk+0x"), "{}", b.output);
}

#[test]
fn a_kernel_stack_overflow_hits_the_guard_and_panics() {
    let b = boot(
        ktest_image(),
        &["--smp", "2", "--append", "ktest=stack-overflow"],
        None,
        Duration::from_secs(60),
    );
    assert_eq!(b.status, Some(1), "{}", b.output);
    let o = &b.output;
    assert!(o.contains("Insufficient stack space to handle exception!"), "{o}");
    assert!(o.contains("-- DABT (current EL)"), "{o}");
    assert!(o.contains("Task stack:     [0x"), "{o}");
    assert!(o.contains("Overflow stack: [0x"), "{o}");
    assert!(o.contains("pc : ktest_stack_overflow_recurse+0x"), "{o}");
    assert!(o.contains("Kernel panic - not syncing: kernel stack overflow"), "{o}");
    assert!(!o.contains("the stack overflow was not caught"), "{o}");
}
