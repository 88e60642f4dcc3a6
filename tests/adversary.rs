//! The adversary suite (`userland/proof/src/bin/adversary`): every attack
//! a user program can make on the kernel ends, the kernel neither panics
//! nor oopses, and MemFree comes back. Sized down for the test suite (a few
//! seconds per attack under QEMU TCG); `ADVERSARY_FULL=1` runs it for ten
//! minutes per machine at four times the size, under memory pressure.

use e2e::proof_binary;
use std::process::{Command, Stdio};

/// Runs the suite on `smp` CPUs; (commands' output, their status, console log).
fn run(smp: &str, args: &str, timeout_s: u32) -> (String, i32, String) {
    let cmd = format!("adversary {args} run all; echo adversary-status=$?");
    run_cmd("suite", smp, &cmd, timeout_s)
}

/// Runs shell `cmd` with the adversary on `smp` CPUs (`tag` names its
/// console log); as `run`.
fn run_cmd(tag: &str, smp: &str, cmd: &str, timeout_s: u32) -> (String, i32, String) {
    let log = std::env::temp_dir().join(format!("e2e-adversary-{tag}-{}-{smp}.log", std::process::id()));
    let out = Command::new(e2e::root().join("scripts/qemu-run.sh"))
        .arg("--kernel")
        .arg(e2e::kernel_image())
        .args(["--smp", smp, "--log"])
        .arg(&log)
        .args(["--timeout", &timeout_s.to_string()])
        .arg(proof_binary("adversary"))
        .args(["--", cmd])
        .stdin(Stdio::null())
        .output()
        .expect("run qemu-run.sh");
    let console = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::remove_file(&log).ok();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
        console,
    )
}

/// The attack names, from the table in the program's source.
fn attack_names() -> Vec<String> {
    let src = std::fs::read_to_string(e2e::root().join("userland/proof/src/bin/adversary/main.rs"))
        .expect("read adversary/main.rs");
    let names: Vec<String> = src
        .split("attack!(")
        .skip(1)
        .filter_map(|rest| rest.split('"').nth(1).map(str::to_string))
        .collect();
    assert!(names.len() >= 20, "attack table not found: {names:?}");
    names
}

fn suite(smp: &str) {
    let full = std::env::var_os("ADVERSARY_FULL").is_some();
    let (args, timeout) = if full {
        ("--pressure --minutes 10 --scale 4", 1500)
    } else if smp == "1" {
        ("", 240)
    } else {
        ("--pressure", 240)
    };
    let (out, code, console) = run(smp, args, timeout);
    for bad in [
        "Kernel panic",
        "Internal error: Oops",
        "Unable to handle kernel",
        "BUG:",
    ] {
        assert!(
            !console.contains(bad),
            "{bad} on the console:\n{console}\n--- output:\n{out}"
        );
    }
    let tail: String = {
        let lines: Vec<&str> = console.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    };
    assert_eq!(
        code, 0,
        "the commands did not finish (QEMU status {code}):\n{out}\n--- console (last 60 lines):\n{tail}"
    );
    for name in attack_names() {
        assert!(
            out.contains(&format!("adversary: {name}: pass")),
            "attack {name} did not pass:\n{out}"
        );
    }
    assert!(out.contains("adversary: ok"), "{out}");
    assert!(out.contains("adversary-status=0"), "{out}");
}

#[test]
fn adversary_suite_smp1_leaves_the_kernel_running_and_memory_free() {
    suite("1");
}

#[test]
fn adversary_suite_smp4_under_memory_pressure_leaves_the_kernel_running() {
    suite("4");
}

/// The hang verdict follows progress, not the clock: an attack that keeps
/// making system calls past its limit (as on a loaded host) passes, one
/// that stops is called hung a limit after its last step, and one that
/// progresses forever is cut off at ten times its limit.
#[test]
fn adversary_calls_an_attack_hung_when_it_stops_progressing_not_when_slow() {
    let (out, code, _) = run_cmd(
        "selftest",
        "1",
        "adversary run __slow __stall __livelock; echo adversary-status=$?",
        180,
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("adversary: __slow: pass ("), "{out}");
    assert!(
        out.contains("adversary: __stall: hang (after ")
            && out.contains("no progress for ")
            && out.contains("limit 1000 ms;"),
        "{out}"
    );
    assert!(
        out.contains("adversary: __livelock: hang (after ")
            && out.contains("still progressing at the cap of 10000 ms;"),
        "{out}"
    );
    assert!(out.contains("adversary-status=1"), "{out}");
}
