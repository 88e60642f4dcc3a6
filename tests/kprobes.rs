//! kprobes seen from outside: a fault inside a probe handler is a fatal
//! oops that names the handler, with the exception path that called it in
//! the trace, and stops the machine.

use e2e::{boot, ktest_image};
use std::time::Duration;

#[test]
fn fault_in_a_kprobe_handler_oopses_naming_the_handler() {
    let b = boot(
        ktest_image(),
        &["--smp", "4", "--append", "ktest=kprobe-oops"],
        None,
        Duration::from_secs(60),
    );
    let o = &b.output;
    assert_eq!(b.status, Some(1), "the oops did not end the run with failure:\n{o}");
    assert!(o.contains("ktest: a kprobe pre-handler will dereference NULL"), "{o}");
    assert!(
        o.contains("Unable to handle kernel NULL pointer dereference at virtual address 0000000000000010"),
        "{o}"
    );
    assert!(o.contains("Internal error: Oops: 0000000096000004 [#1] SMP"), "{o}");
    assert!(o.contains("pc : kernel__ktest__ktest_kprobe_oops_handler+0x"), "{o}");
    let trace = o.split("Call trace:").nth(1).expect("a call trace");
    let frames: Vec<&str> = trace
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Code:"))
        .collect();
    let at = |name: &str| {
        frames
            .iter()
            .position(|f| f.contains(name))
            .unwrap_or_else(|| panic!("{name} not in the call trace:\n{o}"))
    };
    // The handler, called from the BRK hook, from the debug exception taken
    // in the probed function.
    assert!(at("kernel__ktest__ktest_kprobe_oops_handler+0x") < at("kernel__kprobes__kprobe_breakpoint_handler+0x"));
    assert!(at("kernel__kprobes__kprobe_breakpoint_handler+0x") < at("kernel__debug__brk_handler+0x"));
    assert!(at("kernel__debug__brk_handler+0x") < at("ktest_kprobe_oops_target+0x8/"));
    let tail: Vec<&str> = o.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
    let panic_line = tail
        .iter()
        .position(|l| l.ends_with("Kernel panic - not syncing: Oops: Fatal exception"))
        .unwrap_or_else(|| panic!("no panic line:\n{o}"));
    assert!(
        tail[panic_line..]
            .iter()
            .any(|l| l.contains("SMP: stopping secondary CPUs")),
        "{o}"
    );
    assert!(!o.contains("the probe handler did not fault"), "{o}");
}
