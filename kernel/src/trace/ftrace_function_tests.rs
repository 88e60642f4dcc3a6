//! In-kernel tests of the function tracer's interface beyond filtering:
//! function commands in `set_ftrace_filter`, filters applied at close,
//! `set_ftrace_notrace_pid` and `function-fork`, `func_stack_trace`, and
//! the stack tracer.

use super::test_files::{self, open, read_all};
use super::{ftrace_function, global_trace, trace_stack};
use alloc::string::String;
use alloc::vec::Vec;
use ktest_macros::kernel_test;
use uapi::fcntl::{O_TRUNC, O_WRONLY};
use uapi::Errno;

/// `echo text > path` (the shell's newline ends the last word).
fn write(path: &str, text: &str) -> Result<usize, Errno> {
    test_files::write(path, &alloc::format!("{text}\n"))
}

/// `echo text >> path`.
fn append(path: &str, text: &str) -> Result<usize, Errno> {
    test_files::append(path, &alloc::format!("{text}\n"))
}

/// A traceable function only these tests call.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)] // a fixed name for filters
extern "C" fn ktest_fopts_target(a: u64) -> u64 {
    core::hint::black_box(a).wrapping_add(7)
}

/// Calls the target from a known function (the stack traces' first line).
#[inline(never)]
fn call_fopts_target() -> u64 {
    ktest_fopts_target(core::hint::black_box(1))
}

/// The lines of `set_ftrace_filter` naming the target.
fn target_lines() -> Vec<String> {
    read_all("set_ftrace_filter")
        .lines()
        .filter(|l| l.starts_with("ktest_fopts_target"))
        .map(String::from)
        .collect()
}

#[kernel_test]
fn function_commands_are_listed_counted_and_removed_like_linux() {
    let tr = global_trace();
    tr.set_tracing_on(true);
    write("set_ftrace_filter", "ktest_fopts_target:traceoff").unwrap();
    // Commands act whatever the filter: it still traces all functions.
    assert_eq!(
        read_all("set_ftrace_filter"),
        "#### all functions enabled ####\nktest_fopts_target:traceoff:unlimited\n"
    );
    // The same command again adds nothing: EINVAL, as Linux.
    assert_eq!(
        append("set_ftrace_filter", "ktest_fopts_target:traceoff"),
        Err(Errno::EINVAL)
    );
    append("set_ftrace_filter", "ktest_fopts_target:traceoff:2").unwrap();
    // Newest probe type first.
    assert_eq!(
        target_lines(),
        [
            "ktest_fopts_target:traceoff:count=2",
            "ktest_fopts_target:traceoff:unlimited"
        ]
    );
    call_fopts_target();
    assert!(!tr.tracing_on(), "traceoff did not stop tracing");
    // Only the counted probe fired (the other found tracing already off).
    assert_eq!(target_lines()[0], "ktest_fopts_target:traceoff:count=1");
    call_fopts_target();
    assert_eq!(
        target_lines()[0],
        "ktest_fopts_target:traceoff:count=1",
        "counted a no-op"
    );
    // `echo > set_ftrace_filter` clears the filter, not the commands.
    write("set_ftrace_filter", "").unwrap();
    assert_eq!(target_lines().len(), 2);
    // Removal picks the type by the presence of a count, not its value.
    append("set_ftrace_filter", "!ktest_fopts_target:traceoff").unwrap();
    assert_eq!(target_lines(), ["ktest_fopts_target:traceoff:count=1"]);
    append("set_ftrace_filter", "!ktest_fopts_target:traceoff:0").unwrap();
    assert!(target_lines().is_empty());
    assert_eq!(
        append("set_ftrace_filter", "!ktest_fopts_target:traceoff"),
        Err(Errno::ENODEV)
    );
    // Linux's errors.
    for bad in [
        "ktest_fopts_target:nosuch",
        "no_such_function_xyz:traceoff",
        "ktest_fopts_target:traceoff:x",
        "ktest_fopts_target:enable_event:nosys:noevent",
        "ktest_fopts_target:enable_event:sched",
    ] {
        assert_eq!(append("set_ftrace_filter", bad), Err(Errno::EINVAL), "{bad}");
    }
    // A module that is not loaded: the word is kept and listed, and the
    // filter then selects nothing until truncation drops it (as Linux).
    append("set_ftrace_filter", "*:mod:foo").expect("kept");
    assert!(read_all("set_ftrace_filter").contains("*:mod:foo\n"));
    assert!(!read_all("set_ftrace_filter").contains("#### all functions enabled ####"));
    write("set_ftrace_filter", "").expect("truncate");
    assert!(!read_all("set_ftrace_filter").contains(":mod:"));
    assert_eq!(
        append(
            "set_ftrace_notrace",
            "ktest_fopts_target:enable_event:sched:sched_switch"
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        append("stack_trace_filter", "ktest_fopts_target:traceoff"),
        Err(Errno::ENODEV)
    );
    assert!(!super::ftrace_probe::has_probes());
    assert!(!super::ftrace_probe::PROBE_OPS.is_registered());
    tr.set_tracing_on(true);
}

#[kernel_test]
fn traceon_count_counts_only_hits_that_turn_tracing_on() {
    let tr = global_trace();
    tr.set_tracing_on(false);
    write("set_ftrace_filter", "ktest_fopts_target:traceon:2").unwrap();
    call_fopts_target();
    assert!(tr.tracing_on());
    call_fopts_target();
    assert_eq!(target_lines(), ["ktest_fopts_target:traceon:count=1"]);
    tr.set_tracing_on(false);
    call_fopts_target();
    assert!(tr.tracing_on());
    tr.set_tracing_on(false);
    call_fopts_target();
    assert!(!tr.tracing_on(), "fired a third time");
    assert_eq!(target_lines(), ["ktest_fopts_target:traceon:count=0"]);
    append("set_ftrace_filter", "!ktest_fopts_target:traceon:0").unwrap();
    tr.set_tracing_on(true);
}

#[kernel_test]
fn enable_event_command_soft_enables_its_event_for_its_count() {
    let enable = "events/sched/sched_switch/enable";
    assert_eq!(read_all(enable), "0\n");
    write(
        "set_ftrace_filter",
        "ktest_fopts_target:enable_event:sched:sched_switch:1",
    )
    .unwrap();
    // Soft mode, soft-disabled until the function runs.
    assert_eq!(read_all(enable), "0*\n");
    call_fopts_target();
    assert_eq!(read_all(enable), "1*\n");
    assert_eq!(
        target_lines(),
        ["ktest_fopts_target:enable_event:sched:sched_switch:count=0"]
    );
    write(enable, "0").unwrap();
    call_fopts_target();
    assert_eq!(read_all(enable), "0*\n", "fired past its count");
    write(
        "set_ftrace_filter",
        "!ktest_fopts_target:enable_event:sched:sched_switch:0",
    )
    .unwrap();
    assert_eq!(read_all(enable), "0\n");
    write(
        "set_ftrace_filter",
        "ktest_fopts_target:disable_event:sched:sched_switch",
    )
    .unwrap();
    write(enable, "1").unwrap();
    assert_eq!(read_all(enable), "1*\n");
    call_fopts_target();
    assert_eq!(read_all(enable), "0*\n");
    assert_eq!(
        target_lines(),
        ["ktest_fopts_target:disable_event:sched:sched_switch:unlimited"]
    );
    write(
        "set_ftrace_filter",
        "!ktest_fopts_target:disable_event:sched:sched_switch",
    )
    .unwrap();
    write(enable, "0").unwrap();
    assert_eq!(read_all(enable), "0\n");
}

/// The `<stack trace>` block after the first line containing `marker`,
/// up to the next entry.
fn stack_after(trace: &str, marker: &str) -> Vec<String> {
    trace
        .lines()
        .skip_while(|l| !l.contains(marker))
        .skip(1)
        .take_while(|l| l.starts_with(" => ") || l.ends_with("<stack trace>"))
        .map(String::from)
        .collect()
}

#[kernel_test]
fn stacktrace_command_records_the_stack_from_the_caller() {
    write("trace", "").unwrap();
    write("set_ftrace_filter", "ktest_fopts_target:stacktrace:1").unwrap();
    call_fopts_target();
    call_fopts_target();
    let trace = read_all("trace");
    append("set_ftrace_filter", "!ktest_fopts_target:stacktrace:1").unwrap();
    assert_eq!(trace.matches("<stack trace>").count(), 1, "{trace}");
    let line = trace.lines().find(|l| l.contains("<stack trace>")).unwrap();
    let stack = stack_after(&trace, "<stack trace>");
    assert!(
        stack
            .first()
            .is_some_and(|l| l == " => kernel__trace__ftrace_function_tests__call_fopts_target"),
        "{line}\n{stack:?}"
    );
    write("trace", "").unwrap();
}

#[kernel_test]
fn a_filter_written_in_pieces_takes_effect_at_close() {
    let f = open("set_ftrace_filter", O_WRONLY | O_TRUNC).unwrap();
    f.write(b"ktest_fopts_").unwrap();
    f.write(b"target").unwrap();
    // Nothing applied yet: not even the truncation.
    assert_eq!(read_all("set_ftrace_filter"), "#### all functions enabled ####\n");
    drop(f);
    assert_eq!(read_all("set_ftrace_filter"), "ktest_fopts_target\n");
    let f = open("set_ftrace_notrace", O_WRONLY).unwrap();
    f.write(b"ktest_fopts_target vfs_read\n").unwrap();
    assert_eq!(read_all("set_ftrace_notrace"), "#### no functions disabled ####\n");
    drop(f);
    let notrace = read_all("set_ftrace_notrace");
    assert!(notrace.lines().any(|l| l == "vfs_read") && notrace.lines().any(|l| l == "ktest_fopts_target"));
    write("set_ftrace_notrace", "").unwrap();
    write("set_ftrace_filter", "").unwrap();
    assert_eq!(read_all("set_ftrace_filter"), "#### all functions enabled ####\n");
    assert_eq!(read_all("set_ftrace_notrace"), "#### no functions disabled ####\n");
}

#[kernel_test]
fn notrace_pids_and_function_fork_follow_children_and_exits() {
    use super::options::{set_flag, FUNCTION_FORK};
    assert_eq!(read_all("set_ftrace_notrace_pid"), "no pid\n");
    assert_eq!(write("set_ftrace_notrace_pid", "abc"), Err(Errno::EINVAL));
    write("set_ftrace_notrace_pid", "900001").unwrap();
    assert!(ftrace_function::ftrace_ignore_pid(900001));
    assert!(!ftrace_function::ftrace_ignore_pid(900002));
    ftrace_function::ftrace_pids_fork(900001, 900002);
    assert_eq!(
        read_all("set_ftrace_notrace_pid"),
        "900001\n",
        "joined without function-fork"
    );
    set_flag(FUNCTION_FORK, true);
    ftrace_function::ftrace_pids_fork(900001, 900002);
    assert_eq!(read_all("set_ftrace_notrace_pid"), "900001\n900002\n");
    assert!(ftrace_function::ftrace_ignore_pid(900002));
    // In both lists: ignored.
    write("set_ftrace_pid", "900001").unwrap();
    ftrace_function::ftrace_pids_fork(900001, 900003);
    assert_eq!(read_all("set_ftrace_pid"), "900001\n900003\n");
    assert!(ftrace_function::ftrace_ignore_pid(900003));
    assert!(ftrace_function::ftrace_ignore_pid(900004), "not in set_ftrace_pid");
    ftrace_function::ftrace_pids_exit(900003);
    ftrace_function::ftrace_pids_exit(900002);
    assert_eq!(read_all("set_ftrace_pid"), "900001\n");
    assert_eq!(read_all("set_ftrace_notrace_pid"), "900001\n");
    set_flag(FUNCTION_FORK, false);
    write("set_ftrace_pid", "").unwrap();
    write("set_ftrace_notrace_pid", "").unwrap();
    assert!(!ftrace_function::ftrace_ignore_pid(900001));
}

#[kernel_test]
fn func_stack_trace_adds_a_stack_after_each_function_entry() {
    assert!(!read_all("trace_options").contains("func_stack_trace"));
    assert_eq!(read_all("options/func_stack_trace"), "0\n");
    write("set_ftrace_filter", "ktest_fopts_target").unwrap();
    write("current_tracer", "function").unwrap();
    assert!(read_all("trace_options").lines().any(|l| l == "nofunc_stack_trace"));
    write("trace_options", "func_stack_trace").unwrap();
    call_fopts_target();
    write("options/func_stack_trace", "0").unwrap();
    call_fopts_target();
    let trace = read_all("trace");
    write("current_tracer", "nop").unwrap();
    write("set_ftrace_filter", "").unwrap();
    assert_eq!(write("trace_options", "func_stack_trace"), Err(Errno::EINVAL));
    assert_eq!(trace.matches(" ktest_fopts_target <-").count(), 2, "{trace}");
    assert_eq!(trace.matches("<stack trace>").count(), 1, "{trace}");
    let stack = stack_after(&trace, " ktest_fopts_target <-");
    assert!(stack.first().is_some_and(|l| l.ends_with("<stack trace>")), "{stack:?}");
    assert_eq!(
        stack.get(1).map(String::as_str),
        Some(" => kernel__trace__ftrace_function_tests__call_fopts_target"),
        "{trace}"
    );
    write("trace", "").unwrap();
}

/// Recurses `n` deep, then calls the target (a deep stack to measure).
#[inline(never)]
fn deep(n: u32) -> u64 {
    let pad = core::hint::black_box([n as u64; 16]);
    if n == 0 {
        call_fopts_target()
    } else {
        deep(n - 1).wrapping_add(pad[(n % 16) as usize])
    }
}

static DEEP_DONE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

extern "C" fn deep_worker(n: usize) {
    deep(n as u32);
    DEEP_DONE.store(true, core::sync::atomic::Ordering::Release);
}

/// Runs [`deep`] in a kernel thread: the stack tracer measures task
/// stacks only (as Linux, which skips interrupt stacks).
fn deep_in_kthread(n: usize) {
    DEEP_DONE.store(false, core::sync::atomic::Ordering::Release);
    let t = crate::sched::task::Task::new_kthread(deep_worker, n, "ktest/deep").expect("kthread");
    crate::sched::wake_up(&t);
    let deadline = crate::time::ktime_get_ns() + 30_000_000_000;
    while !DEEP_DONE.load(core::sync::atomic::Ordering::Acquire) {
        assert!(crate::time::ktime_get_ns() < deadline, "deep worker stuck");
        crate::sched::yield_now();
    }
}

#[kernel_test]
fn stack_tracer_keeps_the_deepest_stack_in_linux_format() {
    write("stack_max_size", "0").unwrap();
    let header = "        Depth    Size   Location    ";
    let off = read_all("stack_trace");
    assert!(off.starts_with(header), "{off}");
    assert!(off.contains("#  Stack tracer disabled\n"), "{off}");
    assert_eq!(write("stack_max_size", "x"), Err(Errno::EINVAL));
    write("stack_trace_filter", "ktest_fopts_target").unwrap();
    assert_eq!(read_all("stack_trace_filter"), "ktest_fopts_target\n");
    trace_stack::stack_trace_sysctl(b"1\n").unwrap();
    assert!(trace_stack::stack_tracer_enabled());
    deep_in_kthread(2);
    let shallow: usize = read_all("stack_max_size").trim().parse().unwrap();
    deep_in_kthread(12);
    trace_stack::stack_trace_sysctl(b"0\n").unwrap();
    let max: usize = read_all("stack_max_size").trim().parse().unwrap();
    let text = read_all("stack_trace");
    write("stack_trace_filter", "").unwrap();
    assert!(shallow > 0 && max > shallow, "{shallow} then {max}");
    assert!(!text.contains("disabled"), "{text}");
    let lines = trace_stack::stack_trace_lines();
    let first = lines.first().expect("entries");
    assert!(first.starts_with("  0) "), "{text}");
    assert!(first.contains("   ktest_fopts_target+0x8/0x"), "{text}");
    // Depths shrink down the list, sizes add up to them.
    let cols: Vec<(usize, usize)> = lines
        .iter()
        .map(|l| {
            let mut w = l.split_whitespace().skip(1);
            (w.next().unwrap().parse().unwrap(), w.next().unwrap().parse().unwrap())
        })
        .collect();
    // (stack_max_size is measured at the tracer's call, the depths where
    // return addresses are saved: close, not equal, in Linux too.)
    assert!(cols[0].0.abs_diff(max) < 512, "{max}\n{text}");
    assert!(
        cols.windows(2).all(|w| w[0].0 > w[1].0 && w[0].1 == w[0].0 - w[1].0),
        "{text}"
    );
    assert!(
        text.lines()
            .filter(|l| l.contains("ftrace_function_tests__deep"))
            .count()
            >= 12,
        "{text}"
    );
    write("stack_max_size", "0").unwrap();
}
