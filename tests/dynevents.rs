//! Synthetic events and event probes through `dynamic_events` and
//! `synthetic_events`, seen from a shell: definitions, listings, `format`
//! files, errors with their `error_log` entries, removal, and the lines an
//! event probe records for a known `open`, and the listing of kprobes,
//! synthetic events and event probes made in turn are Linux 6.12's
//! (`dynevents/*.golden`, captured from reflinux with IDs and times
//! masked). When ../shared/reflinux is there, real Linux must print the
//! same.

use e2e::{busybox, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const SYNTH: &str = include_str!("dynevents/synth.golden");
const EPROBE: &str = include_str!("dynevents/eprobe.golden");
const MIXED: &str = include_str!("dynevents/mixed.golden");
const FPROBE: &str = include_str!("dynevents/fprobe.golden");

fn script(name: &str) -> PathBuf {
    root().join("tests/dynevents").join(name)
}

fn check(name: &str, golden: &str) {
    let files = [busybox(), script(name)];
    let cmds = format!("busybox sh /bin/{name}");
    let (out, code) = run_commands(&["--smp", "2"], &files, &cmds, 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, golden);
    let Some(linux) = reflinux_stdout("2", 120, &files, &cmds) else {
        return;
    };
    assert_eq!(linux, golden, "real Linux differs");
}

#[test]
fn synthetic_event_definitions_formats_errors_and_removal_are_linuxs() {
    check("synth.sh", SYNTH);
}

#[test]
fn event_probe_definitions_formats_errors_and_recorded_lines_are_linuxs() {
    check("eprobe.sh", EPROBE);
}

#[test]
fn dynamic_events_lists_every_type_in_creation_order_and_each_file_truncates_its_own() {
    check("mixed.sh", MIXED);
}

/// fprobe and tracepoint probe events (`f:`, `t:`). Debian's Linux has no
/// `CONFIG_FPROBE_EVENTS`, so the golden file is this kernel's, checked
/// against Linux's trace_fprobe.c and fprobetrace.rst, and not run there.
#[test]
fn fprobe_and_tracepoint_probe_events_define_record_and_remove_as_linuxs_trace_fprobe() {
    let files = [busybox(), script("fprobe.sh")];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/fprobe.sh", 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, FPROBE);
}
