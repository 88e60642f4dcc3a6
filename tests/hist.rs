//! Hist triggers seen from a shell: Debian's busybox runs
//! `hist/hist.sh`, whose workload (dd copying blocks of 333, 777 and 4321
//! bytes) fixes what each table holds: counts per key, `.log2`,
//! `.buckets=`, `.hex`, `.execname`, sums, two sort keys, `nohitcount`,
//! `pause`/`cont`/`clear`, `!` removal, a `name=` table shared by
//! `sys_enter_write` and `sys_enter_read`, and the `error_log` entries of
//! bad commands. It must print `hist/hist.golden`, which real Linux prints
//! too (checked when ../shared/reflinux is there).

use e2e::{busybox, reflinux_stdout, root, run_commands};
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
