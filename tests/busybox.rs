//! Unmodified Linux programs: Debian's static busybox (glibc, installed by
//! `scripts/setup.sh`) runs on the kernel, and a script of its applets
//! prints the output recorded from real Linux; when ../shared/reflinux is
//! there, the same script is run on real Linux too and must print the same.

use e2e::{busybox, run_commands};
use std::process::Command;

/// Applets exercising signals (glibc installs handlers without
/// SA_RESTORER), fork/exec/wait, pipes, files, sleeping, job control in
/// scripts and /proc. The killed job's shell has its stderr discarded: ash
/// prints `Terminated` only when the child dies after `wait` has begun,
/// a race whose outcome depends on how fast the child exits (on this
/// kernel it sometimes dies first), not on what the kernel reports.
const SCRIPT: &str = "busybox sh -c 'trap \"echo got USR1\" USR1; kill -USR1 $$; echo after trap'; \
    echo 3 1 2 | busybox tr ' ' '\\n' | busybox sort -n | busybox tr '\\n' ' '; echo; \
    busybox dd if=/dev/zero bs=1k count=4 2>/dev/null | busybox wc -c; \
    busybox sleep 0.2 && echo slept; \
    busybox sh -c 'busybox sleep 5 & kill $!; wait $!; echo killed status $?' 2>/dev/null; \
    busybox sh -c 'x=0; while [ $x -lt 50 ]; do x=$((x+1)); done; echo counted $x'; \
    cd /tmp && busybox mkdir -p a/b && echo hi > a/b/f && busybox cat a/b/f && busybox rm -r a && echo removed; \
    busybox test -e a || echo gone; \
    busybox sh -c 'exit 3'; echo exit $?; \
    busybox sh -c 'echo $$ > /tmp/pid; busybox cat /proc/self/stat | busybox cut -d\" \" -f5 > /tmp/pgrp'; echo pgrp-read; \
    busybox printf '%s-%d\\n' x 42; \
    busybox seq 1 5 | busybox tail -2; \
    busybox basename /a/b/c.txt .txt";

const WANT: &str = "got USR1\nafter trap\n1 2 3 \n4096\nslept\nkilled status 143\ncounted 50\nhi\nremoved\ngone\nexit 3\npgrp-read\nx-42\n4\n5\nc\n";

#[test]
fn unmodified_busybox_behaves_as_on_linux() {
    let (out, code) = run_commands(&["--smp", "4"], &[busybox()], SCRIPT, 300);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, WANT);
    let Some(reflinux) = e2e::reflinux() else { return };
    let linux = Command::new(reflinux)
        .args(["--smp", "2", "--timeout", "120", "--", SCRIPT])
        .output()
        .expect("reflinux");
    assert_eq!(String::from_utf8_lossy(&linux.stdout), WANT, "real Linux differs");
}
