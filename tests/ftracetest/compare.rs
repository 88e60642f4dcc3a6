//! ftracetest's per-test results on this kernel against Linux's baseline
//! (`tests/ftracetest/linux-6.12.117.txt`): parsing both, the verdict for
//! each test under issue 9's target, and the Markdown table.
//!
//! The target: every test that passes on Linux passes here, except those
//! that need loadable modules and those for features this kernel does not
//! offer (listed in [`NOT_OFFERED`], each with its reason), which must then
//! report UNSUPPORTED or UNRESOLVED, as on a Linux without the feature;
//! and no test FAILs here unless it fails on Linux too.

use std::collections::BTreeMap;
use std::fmt::Write;

/// Tests that pass on Linux but need a feature outside issue 9's tracefs
/// and kprobe-event tracer; here they may report UNSUPPORTED or UNRESOLVED
/// (never FAIL). The kernel's README must not advertise these features.
pub const NOT_OFFERED: &[(&str, &str)] = &[
    ("kprobe/uprobe_syntax_errors.tc", "uprobe events"),
    (
        "kprobe/kprobe_eventname.tc",
        "GCC's .isra. clones: the test looks only for those, and LLVM makes none",
    ),
    (
        "kprobe/kprobe_non_uniq_symbol.tc",
        "non-unique symbols: kallsyms gives a duplicate name a .N suffix, so no two name_show",
    ),
    (
        "kprobe/kretprobe_maxactive.tc",
        "TCP sockets (the test probes inet_csk_accept)",
    ),
    (
        "ftrace/func_hotplug.tc",
        "CPU hotplug (/sys/devices/system/cpu/cpuN/online)",
    ),
];

/// Tests whose second pass, inside an instance, passes on Linux but needs
/// a feature this kernel does not offer in instances; their top-level
/// pass is held to Linux's result as any other. (None since the function
/// tracers run in instances.)
pub const NOT_OFFERED_IN_INSTANCES: &[(&str, &str)] = &[];

/// Tests that pass on Debian's Linux but FAIL, not skip, on a Linux
/// without the feature named (the test does not check for it first); here
/// they may FAIL for that reason only, and nothing else may.
pub const FAIL_WITHOUT: &[(&str, &str)] = &[
    (
        "ftrace/fgraph-retval.tc",
        "procfs's proc_reg_write (Debian's Linux, without CONFIG_FUNCTION_GRAPH_RETVAL, skips it): it filters function_graph on proc_reg_write and wants its -EIO for a write to /proc/interrupts, a function this kernel's procfs does not have, so the filter write fails with EINVAL (funcgraph-retval itself is checked by the function_graph ktests and golden file)",
    ),
    (
        "ftrace/fgraph-multi.tc",
        "RCU: its second instance filters function_graph on *rcu*, which matches no function of this kernel (it has no RCU), so the filter write fails with EINVAL (the top level and the first instance pass)",
    ),
    (
        "kprobe/kretprobe_maxactive.tc",
        "TCP (CONFIG_INET): it probes inet_csk_accept without checking that it exists",
    ),
    (
        "dynevent/add_remove_btfarg.tc",
        "Linux's own structures: with fprobe events (which Debian's Linux lacks, so it ran only the kprobe part) it reads kmem_cache.object_size, task_struct.se and struct filename through BTF",
    ),
];

/// One test's result in one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Test file relative to `test.d`, e.g. `kprobe/profile.tc`.
    pub test: String,
    /// `top`, or `instance` for ftracetest's pass inside an instance.
    pub run: String,
    /// ftracetest's result word (PASS, FAIL, UNSUPPORTED, ...).
    pub result: String,
    /// The baseline's note (empty in results).
    pub note: String,
}

const RESULTS: &[&str] = &[
    "PASS",
    "FAIL",
    "UNRESOLVED",
    "UNTESTED",
    "UNSUPPORTED",
    "XFAIL",
    "UNDEFINED",
    "UNKNOWN",
];

/// Parses `test run result [note...]` lines (`scripts/ftracetest.sh run`
/// output, or the baseline); `#` lines and blank lines are skipped.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut f = line.split_whitespace();
        let (Some(test), Some(run), Some(result)) = (f.next(), f.next(), f.next()) else {
            return Err(format!("line {}: want `test run result`: {line:?}", i + 1));
        };
        if !test.ends_with(".tc") || !matches!(run, "top" | "instance") || !RESULTS.contains(&result) {
            return Err(format!("line {}: not a test result: {line:?}", i + 1));
        }
        out.push(Entry {
            test: test.to_string(),
            run: run.to_string(),
            result: result.to_string(),
            note: f.collect::<Vec<_>>().join(" "),
        });
    }
    Ok(out)
}

/// How a test fares against the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// As the target asks.
    Ok,
    /// Not passing, allowed because of the reason given.
    Exempt(String),
    /// The target is not met, for the reason given.
    NotMet(String),
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct Row {
    /// Test file relative to `test.d`.
    pub test: String,
    /// `top` or `instance`.
    pub run: String,
    /// Linux's result, if the baseline has the test.
    pub linux: Option<String>,
    /// This kernel's result, if the test ran.
    pub ours: Option<String>,
    /// The verdict.
    pub verdict: Verdict,
}

fn exemption(linux: &Entry) -> Option<String> {
    if linux.note.starts_with("needs a loadable module") {
        return Some(linux.note.clone());
    }
    let instance_only: &[(&str, &str)] = if linux.run == "instance" {
        NOT_OFFERED_IN_INSTANCES
    } else {
        &[]
    };
    NOT_OFFERED
        .iter()
        .chain(instance_only)
        .find(|(t, _)| *t == linux.test)
        .map(|(_, why)| format!("not offered: {why}"))
}

fn verdict(linux: Option<&Entry>, ours: Option<&str>) -> Verdict {
    let Some(ours) = ours else {
        return Verdict::NotMet("did not run".into());
    };
    let failed = matches!(ours, "FAIL" | "UNDEFINED" | "UNKNOWN");
    let Some(linux) = linux else {
        return if failed {
            Verdict::NotMet("fails (not in the baseline)".into())
        } else {
            Verdict::Ok
        };
    };
    if failed {
        let without = FAIL_WITHOUT.iter().find(|(t, _)| *t == linux.test);
        return if linux.result == ours {
            Verdict::Exempt(format!("{ours} on Linux too"))
        } else if let (Some((_, why)), "FAIL") = (without, ours) {
            Verdict::Exempt(format!("fails on a Linux without {why}"))
        } else {
            Verdict::NotMet(format!("{ours}s here"))
        };
    }
    if linux.result != "PASS" || ours == "PASS" {
        return Verdict::Ok;
    }
    match (exemption(linux), ours) {
        (Some(why), "UNSUPPORTED" | "UNRESOLVED") => Verdict::Exempt(why),
        _ => Verdict::NotMet("passes on Linux".into()),
    }
}

/// Joins the baseline and this kernel's results, in the baseline's order
/// (tests only this kernel ran come last).
pub fn compare(linux: &[Entry], ours: &[Entry]) -> Vec<Row> {
    let mut mine: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for e in ours {
        mine.insert((&e.test, &e.run), &e.result);
    }
    let mut rows = Vec::new();
    for l in linux {
        let o = mine.remove(&(l.test.as_str(), l.run.as_str()));
        rows.push(Row {
            test: l.test.clone(),
            run: l.run.clone(),
            linux: Some(l.result.clone()),
            ours: o.map(str::to_string),
            verdict: verdict(Some(l), o),
        });
    }
    for ((test, run), result) in mine {
        rows.push(Row {
            test: test.to_string(),
            run: run.to_string(),
            linux: None,
            ours: Some(result.to_string()),
            verdict: verdict(None, Some(result)),
        });
    }
    rows
}

/// Whether every row meets the target.
pub fn target_met(rows: &[Row]) -> bool {
    !rows.iter().any(|r| matches!(r.verdict, Verdict::NotMet(_)))
}

fn tally<'a>(results: impl Iterator<Item = Option<&'a str>>) -> String {
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results {
        *n.entry(r.unwrap_or("not run")).or_default() += 1;
    }
    let parts: Vec<String> = n.iter().map(|(k, v)| format!("{v} {k}")).collect();
    parts.join(", ")
}

/// The Markdown table, then a summary line per side and the verdict.
pub fn render(rows: &[Row]) -> String {
    let mut s = String::new();
    s.push_str("| test | run | Linux 6.12.117 | this kernel | verdict |\n");
    s.push_str("|---|---|---|---|---|\n");
    for r in rows {
        let v = match &r.verdict {
            Verdict::Ok => "ok".to_string(),
            Verdict::Exempt(why) => format!("ok ({why})"),
            Verdict::NotMet(why) => format!("**NOT MET**: {why}"),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {v} |",
            r.test,
            r.run,
            r.linux.as_deref().unwrap_or("-"),
            r.ours.as_deref().unwrap_or("not run"),
        );
    }
    let not_met = rows.iter().filter(|r| matches!(r.verdict, Verdict::NotMet(_))).count();
    let _ = writeln!(s, "\nLinux: {}", tally(rows.iter().map(|r| r.linux.as_deref())));
    let _ = writeln!(s, "this kernel: {}", tally(rows.iter().map(|r| r.ours.as_deref())));
    let _ = writeln!(
        s,
        "target: {}",
        if not_met == 0 {
            "met".to_string()
        } else {
            format!("NOT met ({not_met} of {} tests)", rows.len())
        }
    );
    s
}
