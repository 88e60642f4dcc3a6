//! Robustness of the user-process support: 1,000 fork/exec/wait cycles on
//! 4 CPUs without leaking memory, and 100,000 random system calls that
//! neither panic nor hang the kernel.

use e2e::{proof_binary, run_commands};

fn field(out: &str, key: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in:\n{out}"))
}

/// What the slab caches' spare slabs may hold at most (kB).
const SLAB_SPARES_KB: u64 = 256;

#[test]
fn fork_exec_wait_1000_times_leaks_no_memory() {
    // A warm-up run first: the kernel heap grows once to its working size.
    let (out, code) = run_commands(
        &["--smp", "4"],
        &[proof_binary("forkstress")],
        "forkstress 100 && forkstress -p 1000",
        600,
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("forkstress: 1000 cycles ok"), "{out}");
    let (before, after) = (field(&out, "memfree-before:"), field(&out, "memfree-after:"));
    println!("free memory before {before} kB, after {after} kB");
    // Each slab cache may keep one empty spare slab (at most 32 kB; a
    // handful of caches) that the warm-up did not leave behind; a leak of
    // even one page per cycle would be 4000 kB.
    assert!(
        after + SLAB_SPARES_KB >= before,
        "frames leaked: {before} kB free before, {after} kB after"
    );
}

fn fuzz(args: &[&str], seed: u32) {
    let cmd = format!("sysfuzz {seed} 100000 > /tmp/out; echo status=$?; cat /tmp/out");
    let (out, code) = run_commands(args, &[proof_binary("sysfuzz")], &cmd, 900);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("status=0\n"), "{out}");
    assert!(
        out.contains(&format!("sysfuzz: 100000 calls done, seed {seed}")),
        "{out}"
    );
    assert!(out.contains(", other deaths 0, hangs 0"), "{out}");
}

#[test]
fn random_system_calls_smp4() {
    fuzz(&["--smp", "4"], 7);
}

#[test]
fn random_system_calls_smp1() {
    fuzz(&["--smp", "1"], 3);
}

#[test]
fn a_process_eating_all_memory_is_killed_and_the_kernel_goes_on() {
    let cmd = "memhog; echo rc=$?; memhog; echo rc=$?; cd /tmp && usertests > /tmp/o; echo usertests=$?";
    let log = std::env::temp_dir().join(format!("e2e-memhog-{}.log", std::process::id()));
    let log_arg = log.to_str().unwrap();
    let files = [proof_binary("memhog"), proof_binary("usertests")];
    let (out, code) = run_commands(&["--smp", "2", "--log", log_arg], &files, cmd, 600);
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::remove_file(&log).ok();
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.matches("rc=137").count(),
        2,
        "memhog was not killed by SIGKILL twice:\n{out}"
    );
    assert!(out.contains("usertests=0"), "the system did not recover:\n{out}");
    // The kernel's message stays off the commands' output, in the log.
    assert!(!out.contains("Out of memory"), "{out}");
    let during = log_text
        .split("kernel messages logged during the commands:")
        .nth(1)
        .unwrap_or("");
    assert_eq!(during.matches("Out of memory: Killed process").count(), 2, "{log_text}");
}
