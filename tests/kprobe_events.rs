//! kprobe_events seen from a shell: Debian's busybox runs
//! `kprobe_events/kprobe_events.sh` (definitions and their listing and
//! `format`, hits of `p:` and `r:` probes in `trace` and `kprobe_profile`
//! with `$retval`, `$comm`, `%x0`, user strings through the system call's
//! registers and entry arguments at return, multiprobe events,
//! `dynamic_events`, Linux's errnos and `error_log` entries, EBUSY for an
//! enabled event, O_TRUNC clearing) on `virt -smp 1` and `-smp 4`, and
//! must print `kprobe_events/kprobe_events.golden` (taken on Linux 6.12;
//! pids, times, CPUs, addresses, function sizes and the system call's
//! caller masked); when ../shared/reflinux is there, real Linux must
//! print the same.

use e2e::{busybox, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const GOLDEN: &str = include_str!("kprobe_events/kprobe_events.golden");

fn script() -> PathBuf {
    root().join("tests/kprobe_events/kprobe_events.sh")
}

fn run_on(smp: &str) {
    let (out, code) = run_commands(
        &["--smp", smp],
        &[busybox(), script()],
        "busybox sh /bin/kprobe_events.sh",
        120,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, GOLDEN, "smp {smp}");
}

#[test]
fn kprobe_events_define_hit_and_remove_as_on_linux_smp1() {
    run_on("1");
}

#[test]
fn kprobe_events_define_hit_and_remove_as_on_linux_smp4() {
    run_on("4");
}

#[test]
fn real_linux_prints_the_same_kprobe_events_session() {
    let Some(linux) = reflinux_stdout("2", 180, &[busybox(), script()], "busybox sh /bin/kprobe_events.sh") else {
        return;
    };
    assert_eq!(linux, GOLDEN, "real Linux differs");
}
