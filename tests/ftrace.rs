//! The `function` tracer seen from a shell: Debian's busybox runs
//! `ftrace/function.sh` (available_tracers, set_ftrace_filter and
//! set_ftrace_notrace with globs, `!`, append and truncation, Linux's
//! errors, set_ftrace_pid, enabled_functions and touched_functions with
//! Linux's flag columns, `function` lines for one process with a
//! two-function filter, and the buffer reset of a tracer switch) and must
//! print `ftrace/function.golden`, pids, CPUs, times and sizes masked;
//! when ../shared/reflinux is there, real Linux must print the same but
//! for its `vfs_read <-ksys_read` lines (busybox's `cat` reads through
//! them there; here its sendfile does not, and there is no `ksys_read`).
//! `ftrace/commands.sh` does the same for function commands, pid lists,
//! options and the stack tracer, `ftrace/mod.sh` for the `:mod:` command;
//! `ftrace/profile.sh` checks the function profiler here only.

use e2e::{busybox, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const GOLDEN: &str = include_str!("ftrace/function.golden");
const COMMANDS_GOLDEN: &str = include_str!("ftrace/commands.golden");
const PROFILE_GOLDEN: &str = include_str!("ftrace/profile.golden");
const MOD_GOLDEN: &str = include_str!("ftrace/mod.golden");

fn script() -> PathBuf {
    root().join("tests/ftrace/function.sh")
}

#[test]
fn function_tracer_prints_linux_lines_for_a_filtered_set() {
    let (out, code) = run_commands(
        &["--smp", "2"],
        &[busybox(), script()],
        "busybox sh /bin/function.sh",
        180,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, GOLDEN);
    let Some(linux) = reflinux_stdout("2", 180, &[busybox(), script()], "busybox sh /bin/function.sh") else {
        return;
    };
    let linux: String = linux
        .lines()
        .filter(|l| !l.ends_with(" vfs_read <-ksys_read"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(linux, GOLDEN, "real Linux differs");
}

/// `ftrace/commands.sh`: function commands in `set_ftrace_filter`
/// (listing, counts, Linux's errnos, removal), `set_ftrace_notrace_pid`,
/// the `function-fork` and `func_stack_trace` options and the stack
/// tracer's files print `ftrace/commands.golden`, as real Linux does.
#[test]
fn function_commands_pid_lists_and_stack_tracer_match_linux() {
    let script = root().join("tests/ftrace/commands.sh");
    let files = [busybox(), script];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/commands.sh", 180);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, COMMANDS_GOLDEN);
    let Some(linux) = reflinux_stdout("2", 180, &files, "busybox sh /bin/commands.sh") else {
        return;
    };
    assert_eq!(linux, COMMANDS_GOLDEN, "real Linux differs");
}

/// `ftrace/profile.sh`: the function profiler's files, the
/// `trace_stat/functionN` header and columns, and the hits of a function
/// called three times print `ftrace/profile.golden`. Real Linux's arm64
/// build (Debian's, the reference) has no `CONFIG_FUNCTION_PROFILER`, so
/// the golden follows Linux's source (kernel/trace/ftrace.c,
/// `function_stat_headers` and `function_stat_show`).
#[test]
fn function_profiler_prints_linux_trace_stat_columns() {
    let script = root().join("tests/ftrace/profile.sh");
    let files = [busybox(), script];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/profile.sh", 180);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, PROFILE_GOLDEN);
}

/// `ftrace/mod.sh`: the `:mod:` command (words for modules that are not
/// loaded kept, listed and removed; excluded modules selecting the
/// built-in functions; Linux's errnos) prints `ftrace/mod.golden`, as
/// real Linux does.
#[test]
fn mod_command_keeps_words_for_absent_modules_as_linux() {
    let script = root().join("tests/ftrace/mod.sh");
    let files = [busybox(), script];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/mod.sh", 180);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, MOD_GOLDEN);
    let Some(linux) = reflinux_stdout("2", 180, &files, "busybox sh /bin/mod.sh") else {
        return;
    };
    assert_eq!(linux, MOD_GOLDEN, "real Linux differs");
}
