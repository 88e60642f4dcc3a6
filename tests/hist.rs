//! Hist triggers seen from a shell: Debian's busybox runs
//! `hist/hist.sh`, whose workload (dd copying blocks of 333, 777 and 4321
//! bytes) fixes what each table holds: counts per key, `.log2`,
//! `.buckets=`, `.hex`, `.execname`, sums, two sort keys, `nohitcount`,
//! `pause`/`cont`/`clear`, `!` removal, a `name=` table shared by
//! `sys_enter_write` and `sys_enter_read`, and the `error_log` entries of
//! bad commands. It must print `hist/hist.golden`, which real Linux prints
//! too (checked when ../shared/reflinux is there).
//!
//! The others link events: `hist/latency.sh` (a nanosleep latency
//! histogram through an `onmatch()` action and a synthetic event, checked
//! against what the workload timed), `hist/enable_hist.sh` and
//! `hist/field_vars.sh` (golden files from real Linux).

use e2e::{busybox, proof_binary, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const GOLDEN: &str = include_str!("hist/hist.golden");

fn script() -> PathBuf {
    root().join("tests/hist/hist.sh")
}

#[test]
fn hist_tables_of_a_known_workload_print_linux_text() {
    let (out, code) = run_commands(&["--smp", "2"], &[busybox(), script()], "busybox sh /bin/hist.sh", 120);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, GOLDEN);
    let Some(linux) = reflinux_stdout("2", 120, &[busybox(), script()], "busybox sh /bin/hist.sh") else {
        return;
    };
    assert_eq!(linux, GOLDEN, "real Linux differs");
}

/// Short (1 ms) and long (5 ms) sleeps of the latency workload, as
/// `hist/latency.sh` runs it (`sleeplat 5 3`).
const SHORT: u64 = 5;
const LONG: u64 = 3;

/// `(bucket start in us, count)` of `{ lat: ~ A-B } hitcount: N` lines.
fn hist_buckets(out: &str) -> Vec<(u64, u64)> {
    out.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("{ lat: ~ ")?;
            let (start, rest) = rest.split_once('-')?;
            let n = rest.split("hitcount:").nth(1)?.trim();
            Some((start.parse().ok()?, n.parse().ok()?))
        })
        .collect()
}

/// `(bucket start in us, count)` of the workload's own `bucket` lines.
fn workload_buckets(out: &str) -> Vec<(u64, u64)> {
    out.lines()
        .filter_map(|l| {
            let mut f = l.strip_prefix("sleeplat: bucket ")?.split_whitespace();
            Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect()
}

fn at_least(b: &[(u64, u64)], t: u64) -> u64 {
    b.iter().filter(|(s, _)| *s >= t).map(|(_, n)| n).sum()
}

/// What `hist/latency.sh` printed must be a histogram of the workload's
/// calls: every call counted once (in the table, in its totals and per
/// task), none faster than it asked to sleep, every long one at least
/// 5 ms, and no bucket holding more slow calls than the workload itself
/// saw (its own timing spans more than the kernel's sys_enter..sys_exit).
fn check_latency_histogram(out: &str, who: &str) {
    assert!(out.contains("latency-done"), "{who}: script did not finish:\n{out}");
    assert!(!out.contains("error:"), "{who}: a command was refused:\n{out}");
    let total = SHORT + LONG;
    assert!(out.contains(&format!("sleeplat: calls {total}\n")), "{who}:\n{out}");
    let hist = hist_buckets(out);
    let seen = workload_buckets(out);
    assert_eq!(at_least(&hist, 0), total, "{who}: one entry per call:\n{out}");
    assert_eq!(at_least(&seen, 0), total, "{who}: workload's count:\n{out}");
    assert!(
        out.contains(&format!("    Hits: {total}\n    Entries: {}\n", hist.len())),
        "{who}: totals:\n{out}"
    );
    assert!(
        out.contains(&format!("}} hitcount:{total:>11}\n")),
        "{who}: per-pid table:\n{out}"
    );
    assert_eq!(
        at_least(&hist, 1000),
        total,
        "{who}: a sleep shorter than asked:\n{out}"
    );
    assert!(at_least(&hist, 5000) >= LONG, "{who}: a 5 ms sleep under 5 ms:\n{out}");
    for t in (0..=20_000).step_by(1000) {
        assert!(
            at_least(&hist, t) <= at_least(&seen, t),
            "{who}: more calls of {t} us or more than the workload saw:\n{out}"
        );
    }
    assert!(
        out.contains("ts0 in use: EBUSY\nsleep_lat in use: EBUSY\n"),
        "{who}:\n{out}"
    );
    assert!(
        out.ends_with("latency-done\n"),
        "{who}: synthetic event left behind:\n{out}"
    );
}

#[test]
fn onmatch_latency_histogram_counts_each_nanosleep_of_a_known_workload() {
    let files = [
        busybox(),
        root().join("tests/hist/latency.sh"),
        proof_binary("sleeplat"),
    ];
    let cmd = "busybox sh /bin/latency.sh";
    let (out, code) = run_commands(&["--smp", "4"], &files, cmd, 120);
    assert_eq!(code, 0, "{out}");
    check_latency_histogram(&out, "this kernel");
    if let Some(linux) = reflinux_stdout("2", 120, &files, cmd) {
        check_latency_histogram(&linux, "real Linux");
    }
}

#[test]
fn enable_hist_and_disable_hist_continue_and_pause_another_events_hist() {
    let files = [
        busybox(),
        root().join("tests/hist/enable_hist.sh"),
        proof_binary("sleeplat"),
    ];
    let cmd = "busybox sh /bin/enable_hist.sh";
    let (out, code) = run_commands(&["--smp", "2"], &files, cmd, 120);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, include_str!("hist/enable_hist.golden"));
    if let Some(linux) = reflinux_stdout("2", 120, &files, cmd) {
        assert_eq!(linux, include_str!("hist/enable_hist.golden"), "real Linux differs");
    }
}

#[test]
fn field_variables_of_the_matched_event_make_and_remove_a_trigger_there() {
    let files = [
        busybox(),
        root().join("tests/hist/field_vars.sh"),
        proof_binary("sleeplat"),
    ];
    let cmd = "busybox sh /bin/field_vars.sh";
    let (out, code) = run_commands(&["--smp", "2"], &files, cmd, 120);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, include_str!("hist/field_vars.golden"));
    if let Some(linux) = reflinux_stdout("2", 120, &files, cmd) {
        assert_eq!(linux, include_str!("hist/field_vars.golden"), "real Linux differs");
    }
}

/// `hist/instance.sh`: hist commands written in an instance log their
/// errors in its `error_log`, set its clock, keep their variables to it
/// and make field-variable triggers on its events (golden from real Linux).
#[test]
fn hist_commands_in_an_instance_log_set_clock_and_make_field_vars_there() {
    let files = [busybox(), root().join("tests/hist/instance.sh")];
    let cmd = "busybox sh /bin/instance.sh";
    let (out, code) = run_commands(&["--smp", "2"], &files, cmd, 120);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, include_str!("hist/instance.golden"));
    if let Some(linux) = reflinux_stdout("2", 120, &files, cmd) {
        assert_eq!(linux, include_str!("hist/instance.golden"), "real Linux differs");
    }
}
