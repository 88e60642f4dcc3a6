//! The snapshot buffer seen from a shell: Debian's busybox runs
//! `snapshot/snapshot.sh` (Linux's help text while the buffer is freed or
//! empty, swaps that exchange the buffers, `echo 2` emptying it,
//! `tracing_on` staying with the trace array, Linux's errors, the
//! `snapshot` trigger swapping before its event is written) and must
//! print `snapshot/snapshot.golden`, pids and times masked; when
//! ../shared/reflinux is there, real Linux must print the same. So for
//! the size of the buffers' pages, `buffer_subbuf_size_kb`
//! (`snapshot/subbuf.sh`), which the snapshot buffer follows, and for
//! tracefs's mount options (`snapshot/mount_options.sh`).

use e2e::{busybox, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const GOLDEN: &str = include_str!("snapshot/snapshot.golden");
const SUBBUF_GOLDEN: &str = include_str!("snapshot/subbuf.golden");
const MOUNT_OPTIONS_GOLDEN: &str = include_str!("snapshot/mount_options.golden");

fn script() -> PathBuf {
    root().join("tests/snapshot/snapshot.sh")
}

#[test]
fn snapshot_file_and_trigger_swap_buffers_as_linux() {
    let (out, code) = run_commands(
        &["--smp", "1"],
        &[busybox(), script()],
        "busybox sh /bin/snapshot.sh",
        120,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, GOLDEN);
    let Some(linux) = reflinux_stdout("1", 120, &[busybox(), script()], "busybox sh /bin/snapshot.sh") else {
        return;
    };
    assert_eq!(linux, GOLDEN, "real Linux differs");
}

/// Per-CPU swaps (Linux with `CONFIG_RING_BUFFER_ALLOW_SWAP`, which its
/// latency tracers select; Debian's kernel has neither, so this one is
/// checked here only): `per_cpu/cpu1/snapshot` takes CPU 1's events and
/// leaves CPU 0's in the live buffer.
#[test]
fn per_cpu_snapshot_swaps_one_cpu() {
    let cmds = "cd /sys/kernel/tracing; echo 1 > snapshot; \
        busybox taskset 1 sh -c 'echo on0 > trace_marker'; \
        busybox taskset 2 sh -c 'echo on1 > trace_marker'; \
        echo 1 > per_cpu/cpu1/snapshot; \
        busybox grep -o 'on[01]$' trace; echo --; busybox grep -o 'on[01]$' snapshot; \
        echo --; busybox grep -c '^#' per_cpu/cpu0/snapshot; \
        busybox sed -n 7,9p per_cpu/cpu0/snapshot; \
        echo 2 > per_cpu/cpu1/snapshot; busybox grep -c on1 snapshot; \
        echo 0 > per_cpu/cpu1/snapshot || echo refused";
    let (out, code) = run_commands(&["--smp", "2"], &[busybox()], cmds, 90);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "on0\n--\non1\n--\n12\n\
         # echo 0 > snapshot : Invalid for per_cpu snapshot file.\n\
         # echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
         #                      Takes a snapshot of the main buffer for this cpu.\n\
         0\n\
         sh: echo: write error: Invalid argument\nrefused\n"
    );
}

/// `buffer_subbuf_size_kb` (`snapshot/subbuf.sh`): Linux's rounding and
/// limits, `header_page` following it, `buffer_size_kb` kept, markers
/// still cut at 4096 bytes, `trace_pipe_raw` reads of whole sub-buffers;
/// real Linux must print the same.
#[test]
fn subbuf_size_changes_pages_as_linux() {
    let sh = root().join("tests/snapshot/subbuf.sh");
    let (out, code) = run_commands(
        &["--smp", "1"],
        &[busybox(), sh.clone()],
        "busybox sh /bin/subbuf.sh",
        120,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, SUBBUF_GOLDEN);
    let Some(linux) = reflinux_stdout("1", 120, &[busybox(), sh], "busybox sh /bin/subbuf.sh") else {
        return;
    };
    assert_eq!(linux, SUBBUF_GOLDEN, "real Linux differs");
}

/// tracefs's mount options (`snapshot/mount_options.sh`): `uid=`, `gid=`
/// and `mode=` on remounts and as `/proc/mounts` shows them, chown of
/// single files and a remount overriding it, new instances taking them,
/// bad options refused; real Linux must print the same.
#[test]
fn tracefs_mount_options_own_files_as_linux() {
    let sh = root().join("tests/snapshot/mount_options.sh");
    let cmds = "busybox sh /bin/mount_options.sh";
    let (out, code) = run_commands(&["--smp", "1"], &[busybox(), sh.clone()], cmds, 120);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, MOUNT_OPTIONS_GOLDEN);
    let Some(linux) = reflinux_stdout("1", 120, &[busybox(), sh], cmds) else {
        return;
    };
    assert_eq!(linux, MOUNT_OPTIONS_GOLDEN, "real Linux differs");
}
