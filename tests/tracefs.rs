//! tracefs seen from a shell: Debian's busybox runs `tracefs/tracefs.sh`
//! (trace_marker lines in `trace` with Linux's header, `trace_pipe`
//! consuming, `tracing_on 0` stopping, a small buffer overfilled with and
//! without overwrite, `per_cpu/cpu0/stats`, a `trace_pipe_raw` page,
//! Linux's errors for bad writes, the `ftrace/print` format) and must
//! print `tracefs/tracefs.golden`, pids and times masked; when
//! ../shared/reflinux is there, real Linux must print the same. The output
//! options raw, hex, bin and fields have `tracefs/print_modes.sh`.

use e2e::{busybox, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const GOLDEN: &str = include_str!("tracefs/tracefs.golden");

fn script() -> PathBuf {
    root().join("tests/tracefs/tracefs.sh")
}

#[test]
fn trace_files_print_linux_text_and_account_for_every_event() {
    let (out, code) = run_commands(
        &["--smp", "1"],
        &[busybox(), script()],
        "busybox sh /bin/tracefs.sh",
        180,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, GOLDEN);
    let Some(linux) = reflinux_stdout("1", 180, &[busybox(), script()], "busybox sh /bin/tracefs.sh") else {
        return;
    };
    assert_eq!(linux, GOLDEN, "real Linux differs");
}

const FILES_GOLDEN: &str = include_str!("tracefs/files.golden");

/// `tracefs/files.sh`: `free_buffer` shrinks the buffer on close (and with
/// `disable_on_free` turns tracing off), `trace_marker_raw` records an id
/// and bytes that `trace` and `trace_pipe` print in hex, with Linux's
/// errors, in the top level and in an instance; real Linux prints the same.
#[test]
fn free_buffer_and_trace_marker_raw_behave_as_linux() {
    let files = [busybox(), root().join("tests/tracefs/files.sh")];
    let (out, code) = run_commands(&["--smp", "1"], &files, "busybox sh /bin/files.sh", 120);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, FILES_GOLDEN);
    let Some(linux) = reflinux_stdout("1", 120, &files, "busybox sh /bin/files.sh") else {
        return;
    };
    assert_eq!(linux, FILES_GOLDEN, "real Linux differs");
}

#[test]
fn tracefs_is_one_tree_at_three_paths_with_a_buffer_per_cpu() {
    let cmds = "busybox grep tracefs /proc/mounts; busybox ls -1 /tracing/per_cpu; \
        echo smp > /sys/kernel/debug/tracing/trace_marker; \
        busybox sed -n 3p /tracing/trace; \
        busybox tail -1 /sys/kernel/tracing/trace | busybox sed -e 's/.*: //'; \
        cat /tracing/available_tracers /tracing/trace_clock; \
        echo nosuch 2>/dev/null > /tracing/current_tracer || echo refused";
    let (out, code) = run_commands(&["--smp", "4"], &[busybox()], cmds, 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "tracefs /sys/kernel/tracing tracefs rw,relatime 0 0\n\
         tracefs /sys/kernel/debug/tracing tracefs rw,relatime 0 0\n\
         cpu0\ncpu1\ncpu2\ncpu3\n\
         # entries-in-buffer/entries-written: 1/1   #P:4\n\
         smp\n\
         function_graph wakeup_rt wakeup preemptirqsoff preemptoff irqsoff function nop\n\
         [local] global counter uptime perf mono mono_raw boot\n\
         refused\n"
    );
}

const PRINT_MODES_GOLDEN: &str = include_str!("tracefs/print_modes.golden");

/// `tracefs/print_modes.sh`: the `raw`, `hex`, `bin` and `fields` options
/// (set through `options/` and `trace_options`, per instance) print
/// `trace` and `trace_pipe` entries of trace_marker, kprobe events,
/// sched_switch, the function tracer, stack traces and trace_marker_raw
/// as Linux does, in Linux's precedence, with function_graph unchanged;
/// real Linux prints the same.
#[test]
fn raw_hex_bin_and_fields_options_print_entries_as_linux() {
    let files = [busybox(), root().join("tests/tracefs/print_modes.sh")];
    let (out, code) = run_commands(&["--smp", "1"], &files, "busybox sh /bin/print_modes.sh", 120);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, PRINT_MODES_GOLDEN);
    let Some(linux) = reflinux_stdout("1", 120, &files, "busybox sh /bin/print_modes.sh") else {
        return;
    };
    assert_eq!(linux, PRINT_MODES_GOLDEN, "real Linux differs");
}
