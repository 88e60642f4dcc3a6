//! Linux's own ftracetest (6.12.117's tools/testing/selftests/ftrace,
//! unmodified, fetched by scripts/ftracetest-fetch.sh) in the guest under
//! Debian's static busybox on `virt -smp 4`, held against Linux's results
//! in `tests/ftracetest/linux-6.12.117.txt`: every test of
//! test.d/{00basic,dynevent,event,filter,ftrace,instances,kprobe,
//! preemptirq,tracer,trigger} that passes on Linux passes here, except
//! those that need loadable modules or a feature this kernel does not
//! offer (`compare::NOT_OFFERED`), which must be UNSUPPORTED or
//! UNRESOLVED; nothing FAILs here that passes there.
//!
//! The suite runs them all (`FTRACETEST` unset); `FTRACETEST=quick` runs
//! the [`QUICK`] subset, `FTRACETEST='test.d/kprobe ...'` only those, and
//! `FTRACETEST=0` none. `scripts/ftracetest.sh table` prints the same
//! table without asserting. The other tests here check the comparison
//! itself and the baseline file, without QEMU.

#[path = "ftracetest/compare.rs"]
mod compare;

use compare::{compare, parse, render, target_met, Entry, Verdict};
use e2e::{kernel_image, root};
use std::process::{Command, Stdio};

fn baseline() -> Vec<Entry> {
    let path = root().join("tests/ftracetest/linux-6.12.117.txt");
    let text = std::fs::read_to_string(&path).expect("read the baseline");
    parse(&text).expect("parse the baseline")
}

/// Whether `test` (relative to test.d) is in one of `targets` (ftracetest's
/// arguments: `test.d/DIR` or `test.d/DIR/TEST.tc`).
fn in_targets(test: &str, targets: &[&str]) -> bool {
    targets.iter().any(|t| {
        let t = t.trim_start_matches("test.d/").trim_end_matches('/');
        test == t || test.strip_prefix(t).is_some_and(|rest| rest.starts_with('/'))
    })
}

/// A subset for every suite run once tracefs exists (45% of the full set's
/// time on Linux): the kprobe tests and the basic files.
const QUICK: &[&str] = &[
    "test.d/kprobe",
    "test.d/dynevent/add_remove_kprobe.tc",
    "test.d/00basic/basic1.tc",
    "test.d/00basic/basic4.tc",
    "test.d/00basic/trace_pipe.tc",
];

/// By default (or `FTRACETEST=1`) the ten target directories, `FTRACETEST=quick` the
/// [`QUICK`] subset; `FTRACETEST='test.d/kprobe test.d/00basic/basic1.tc'`
/// runs (and compares) only those.
#[test]
fn ftracetest_meets_linux_baseline_on_virt_smp4() {
    let want = std::env::var("FTRACETEST").unwrap_or_default();
    if want == "0" {
        eprintln!("ftracetest: skipped (FTRACETEST=0)");
        return;
    }
    let targets: Vec<&str> = if want == "quick" {
        QUICK.to_vec()
    } else {
        want.split_whitespace().filter(|t| t.starts_with("test.d/")).collect()
    };
    let out = Command::new(root().join("scripts/ftracetest.sh"))
        .args(["run", "--show-logs", "--smp", "4", "--kernel"])
        .arg(kernel_image())
        .args(&targets)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/ftracetest.sh");
    let ours = parse(&String::from_utf8_lossy(&out.stdout)).expect("parse the results");
    let mut linux = baseline();
    if !targets.is_empty() {
        linux.retain(|e| in_targets(&e.test, &targets));
    }
    let rows = compare(&linux, &ours);
    println!("{}", render(&rows));
    assert!(out.status.success(), "ftracetest did not run to its end");
    assert!(target_met(&rows), "ftracetest: the target is not met; see the table");
}

fn entry(test: &str, run: &str, result: &str, note: &str) -> Entry {
    Entry {
        test: test.into(),
        run: run.into(),
        result: result.into(),
        note: note.into(),
    }
}

fn verdicts(linux: &[Entry], ours: &[Entry]) -> Vec<Verdict> {
    compare(linux, ours).into_iter().map(|r| r.verdict).collect()
}

#[test]
fn linux_pass_must_pass_here() {
    let linux = [entry("kprobe/profile.tc", "top", "PASS", "")];
    assert_eq!(
        verdicts(&linux, &[entry("kprobe/profile.tc", "top", "PASS", "")]),
        [Verdict::Ok]
    );
    for other in ["UNSUPPORTED", "UNRESOLVED", "UNTESTED", "XFAIL", "FAIL"] {
        let v = verdicts(&linux, &[entry("kprobe/profile.tc", "top", other, "")]);
        assert!(matches!(v[0], Verdict::NotMet(_)), "{other}: {v:?}");
    }
}

#[test]
fn only_tests_that_fail_on_a_linux_without_the_feature_may_fail() {
    let maxactive = entry("kprobe/kretprobe_maxactive.tc", "top", "PASS", "");
    let other = entry("kprobe/profile.tc", "top", "PASS", "");
    let v = verdicts(
        std::slice::from_ref(&maxactive),
        &[entry(&maxactive.test, "top", "FAIL", "")],
    );
    assert!(matches!(v[0], Verdict::Exempt(_)), "{v:?}");
    let v = verdicts(
        std::slice::from_ref(&maxactive),
        &[entry(&maxactive.test, "top", "UNDEFINED", "")],
    );
    assert!(matches!(v[0], Verdict::NotMet(_)), "{v:?}");
    let v = verdicts(std::slice::from_ref(&other), &[entry(&other.test, "top", "FAIL", "")]);
    assert!(matches!(v[0], Verdict::NotMet(_)), "{v:?}");
}

#[test]
fn instance_runs_are_compared_separately() {
    let linux = [
        entry("00basic/trace_pipe.tc", "top", "PASS", ""),
        entry("00basic/trace_pipe.tc", "instance", "PASS", ""),
    ];
    let ours = [entry("00basic/trace_pipe.tc", "top", "PASS", "")];
    let v = verdicts(&linux, &ours);
    assert_eq!(v[0], Verdict::Ok);
    assert_eq!(v[1], Verdict::NotMet("did not run".into()));
}

#[test]
fn modules_and_features_not_offered_may_be_unsupported_but_never_fail() {
    let module = entry(
        "kprobe/kprobe_module.tc",
        "top",
        "PASS",
        "needs a loadable module (trace-printk)",
    );
    let snapshot = entry("kprobe/uprobe_syntax_errors.tc", "top", "PASS", "");
    for (linux, ours, ok) in [
        (&module, "UNRESOLVED", true),
        (&module, "UNSUPPORTED", true),
        (&module, "FAIL", false),
        (&snapshot, "UNSUPPORTED", true),
        (&snapshot, "FAIL", false),
        (&snapshot, "UNTESTED", false),
    ] {
        let v = verdicts(std::slice::from_ref(linux), &[entry(&linux.test, "top", ours, "")]);
        assert_eq!(matches!(v[0], Verdict::Exempt(_)), ok, "{} {ours}: {v:?}", linux.test);
        assert_eq!(
            target_met(&compare(
                std::slice::from_ref(linux),
                &[entry(&linux.test, "top", ours, "")]
            )),
            ok
        );
    }
}

#[test]
fn fail_here_is_allowed_only_where_linux_fails_too() {
    let t = "dynevent/add_remove_uprobe.tc";
    let ours = [entry(t, "top", "FAIL", "")];
    assert!(matches!(
        verdicts(&[entry(t, "top", "FAIL", "")], &ours)[0],
        Verdict::Exempt(_)
    ));
    for linux in ["UNSUPPORTED", "UNRESOLVED", "PASS"] {
        assert!(!target_met(&compare(&[entry(t, "top", linux, "")], &ours)), "{linux}");
    }
    // Better than Linux is fine; a failing test unknown to the baseline is not.
    assert!(target_met(&compare(
        &[entry(t, "top", "UNSUPPORTED", "")],
        &[entry(t, "top", "PASS", "")]
    )));
    assert!(!target_met(&compare(&[], &ours)));
}

#[test]
fn no_results_at_all_leaves_every_baseline_test_not_run() {
    let linux = baseline();
    let rows = compare(&linux, &[]);
    assert_eq!(rows.len(), linux.len());
    assert!(rows.iter().all(|r| r.verdict == Verdict::NotMet("did not run".into())));
    let table = render(&rows);
    assert!(
        table.contains("| kprobe/kprobe_args.tc | top | PASS | not run | **NOT MET**: did not run |"),
        "{table}"
    );
    assert!(table.contains(&format!("target: NOT met ({} of {} tests)", linux.len(), linux.len())));
}

#[test]
fn subset_targets_select_directories_and_files() {
    let t = ["test.d/kprobe", "test.d/00basic/basic1.tc"];
    assert!(in_targets("kprobe/profile.tc", &t));
    assert!(in_targets("00basic/basic1.tc", &t));
    assert!(!in_targets("00basic/basic2.tc", &t));
    assert!(!in_targets("kprobe2/x.tc", &t));
    let linux = baseline();
    for q in QUICK {
        assert!(linux.iter().any(|e| in_targets(&e.test, &[q])), "{q}");
    }
}

#[test]
fn parse_rejects_what_is_not_a_result_line() {
    assert!(parse("# comment\n\nkprobe/a.tc top PASS\n").is_ok());
    for bad in [
        "kprobe/a.tc top",
        "kprobe/a.tc top PASSED",
        "kprobe/a.tc inside PASS",
        "a top PASS",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn baseline_covers_the_target_directories_and_names_modules() {
    let linux = baseline();
    for dir in ["00basic/", "dynevent/", "event/", "filter/", "instances/", "kprobe/"] {
        assert!(
            linux.iter().any(|e| e.test.starts_with(dir) && e.result == "PASS"),
            "{dir}"
        );
    }
    let module = |t: &str| linux.iter().find(|e| e.test == t).map(|e| e.note.as_str());
    for t in [
        "kprobe/kprobe_module.tc",
        "event/trace_printk.tc",
        "dynevent/add_remove_tprobe_module.tc",
    ] {
        assert!(
            module(t).is_some_and(|n| n.starts_with("needs a loadable module")),
            "{t}"
        );
    }
    // Every exemption names a test the baseline has, passing on Linux.
    for (t, _) in compare::NOT_OFFERED {
        assert!(linux.iter().any(|e| e.test == *t && e.result == "PASS"), "{t}");
    }
}
