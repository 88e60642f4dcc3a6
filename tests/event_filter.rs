//! Event filters and triggers seen from a shell: Debian's busybox runs
//! `event_filter/event_filter.sh` on two kprobe events of read(2) and
//! write(2) (filters that let exactly the matching reads through, a bad
//! filter's error text and `error_log` entry, a system's filter on each of
//! its events, `traceoff` with a count and `if`, `enable_event` on an
//! event in trigger mode with Linux's `0*`/`1*`, `stacktrace`, refused
//! triggers, `set_event` without globs) and must print
//! `event_filter/event_filter.golden`, which real Linux prints too (checked
//! when ../shared/reflinux is there).

use e2e::{busybox, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const GOLDEN: &str = include_str!("event_filter/event_filter.golden");

fn script() -> PathBuf {
    root().join("tests/event_filter/event_filter.sh")
}

#[test]
fn filters_and_triggers_on_kprobe_events_print_linux_text() {
    let (out, code) = run_commands(
        &["--smp", "2"],
        &[busybox(), script()],
        "busybox sh /bin/event_filter.sh",
        120,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, GOLDEN);
    let Some(linux) = reflinux_stdout("2", 120, &[busybox(), script()], "busybox sh /bin/event_filter.sh") else {
        return;
    };
    assert_eq!(linux, GOLDEN, "real Linux differs");
}
