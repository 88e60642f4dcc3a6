//! In-kernel tests of `instances/`: mkdir makes a trace array with its own
//! buffer, files, options, clock and event files; rmdir removes it (EBUSY
//! while a file is open, events enabled or not).

use super::events::{self, EventRecord, FieldDesc, TraceEvent, TraceEventDef};
use super::test_files::{lookup, open, read_all, write};
use super::*;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicIsize, Ordering};
use ktest_macros::kernel_test;
use uapi::fcntl::O_RDONLY;
use vfs::NodeKind;

/// How many times the test event's source is armed now (its `reg`).
static ARMED: AtomicIsize = AtomicIsize::new(0);

fn print_value(out: &mut String, rec: &EventRecord<'_>) {
    let v = rec
        .entry
        .get(8..16)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    let _ = writeln!(out, "inst_event: value={v}");
}

/// Registers `ktest/inst_event` (one u64), counting arms in [`ARMED`].
fn inst_event() -> alloc::sync::Arc<TraceEvent> {
    let def = TraceEventDef {
        system: "ktest".into(),
        name: "inst_event".into(),
        fields: alloc::vec![FieldDesc::new("u64", "value", 8, 8, false)],
        print_fmt: "\"value=%llu\", REC->value".into(),
        print: alloc::boxed::Box::new(print_value),
        reg: Some(alloc::boxed::Box::new(|on| {
            ARMED.fetch_add(if on { 1 } else { -1 }, Ordering::AcqRel);
            Ok(())
        })),
        ignore_enable: false,
    };
    events::register_trace_event(def).unwrap()
}

/// Fires the test event with `v`, as its source would.
fn hit(ev: &TraceEvent, v: u64) {
    ev.record(8, |f| {
        f.copy_from_slice(&v.to_le_bytes());
        true
    });
}

/// The values of the test event's lines in a `trace` file.
fn values(path: &str) -> Vec<u64> {
    read_all(path)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split("inst_event: value=").nth(1)?.parse().ok())
        .collect()
}

fn markers(path: &str) -> Vec<String> {
    read_all(path)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split("tracing_mark_write: ").nth(1).map(String::from))
        .collect()
}

#[kernel_test]
fn instance_has_its_own_buffer_and_is_removed_only_when_unused() {
    let instances = lookup("instances").unwrap();
    instances.create(b"kt", NodeKind::Directory, 0o755, 0, 0).unwrap();
    assert_eq!(
        instances.create(b"kt", NodeKind::Directory, 0o755, 0, 0).err(),
        Some(Errno::EEXIST)
    );
    // A regular file cannot be made there: EACCES, as Linux's vfs_create
    // for a directory without ->create.
    assert_eq!(
        instances.create(b"f", NodeKind::Regular, 0o644, 0, 0).err(),
        Some(Errno::EACCES)
    );
    write("trace", "").unwrap();
    write("instances/kt/trace_marker", "in instance").unwrap();
    write("trace_marker", "at top").unwrap();
    assert_eq!(markers("instances/kt/trace"), ["in instance"]);
    assert_eq!(markers("trace"), ["at top"]);
    // Its own tracing_on.
    write("instances/kt/tracing_on", "0").unwrap();
    assert_eq!(write("instances/kt/trace_marker", "dropped"), Err(Errno::EBADF));
    assert_eq!(read_all("tracing_on"), "1\n");
    assert_eq!(read_all("instances/kt/events/enable"), "0\n");
    assert!(read_all("instances/kt/events/ftrace/print/format").contains("field:char buf[];"));
    // An open file keeps it.
    let f = open("instances/kt/trace_pipe", O_RDONLY).unwrap();
    assert_eq!(instances.rmdir(b"kt"), Err(Errno::EBUSY));
    drop(f);
    instances.rmdir(b"kt").unwrap();
    assert_eq!(lookup("instances/kt").err(), Some(Errno::ENOENT));
    assert_eq!(instances.rmdir(b"kt"), Err(Errno::ENOENT));
    write("trace", "").unwrap();
}

#[kernel_test]
fn an_event_enabled_in_an_instance_records_there_only_and_rmdir_disables_it() {
    let ev = inst_event();
    let instances = lookup("instances").unwrap();
    instances.create(b"ka", NodeKind::Directory, 0o755, 0, 0).unwrap();
    instances.create(b"kb", NodeKind::Directory, 0o755, 0, 0).unwrap();
    write("trace", "").unwrap();
    // Made before the instances, the event is in each of them.
    assert_eq!(read_all("instances/ka/events/ktest/inst_event/enable"), "0\n");
    write("instances/ka/events/ktest/inst_event/enable", "1").unwrap();
    assert_eq!(ARMED.load(Ordering::Acquire), 1);
    assert_eq!(read_all("instances/ka/set_event"), "ktest:inst_event\n");
    assert_eq!(read_all("instances/ka/events/ktest/enable"), "1\n");
    assert_eq!(read_all("set_event"), "");
    assert_eq!(read_all("events/ktest/inst_event/enable"), "0\n");
    hit(&ev, 1);
    assert_eq!(values("instances/ka/trace"), [1]);
    assert!(values("trace").is_empty());
    assert!(values("instances/kb/trace").is_empty());
    // Enabled at the top as well: each array records, the source stays
    // armed once.
    write("set_event", "ktest:inst_event").unwrap();
    assert_eq!(ARMED.load(Ordering::Acquire), 1);
    hit(&ev, 2);
    assert_eq!(values("instances/ka/trace"), [1, 2]);
    assert_eq!(values("trace"), [2]);
    // A filter in one array leaves the other's events alone.
    write("instances/ka/events/ktest/inst_event/filter", "value > 10").unwrap();
    assert_eq!(read_all("events/ktest/inst_event/filter"), "none\n");
    hit(&ev, 3);
    hit(&ev, 11);
    assert_eq!(values("instances/ka/trace"), [1, 2, 11]);
    assert_eq!(values("trace"), [2, 3, 11]);
    // A trigger acts on its own array: traceoff stops the instance only.
    write("instances/ka/events/ktest/inst_event/trigger", "traceoff").unwrap();
    assert!(read_all("events/ktest/inst_event/trigger").starts_with("# Available triggers:"));
    hit(&ev, 12);
    assert_eq!(read_all("instances/ka/tracing_on"), "0\n");
    assert_eq!(read_all("tracing_on"), "1\n");
    // set_event_pid of the instance: a pid that is not ours.
    write("instances/ka/tracing_on", "1").unwrap();
    write("instances/ka/events/ktest/inst_event/trigger", "!traceoff").unwrap();
    write("instances/ka/set_event_pid", "99999").unwrap();
    hit(&ev, 13);
    assert_eq!(values("instances/ka/trace"), [1, 2, 11, 12]);
    assert_eq!(values("trace"), [2, 3, 11, 12, 13]);
    write("set_event", "").unwrap();
    assert_eq!(ARMED.load(Ordering::Acquire), 1, "still enabled in ka");
    // rmdir with the event enabled (and a filter): it is disabled.
    instances.rmdir(b"ka").unwrap();
    assert_eq!(ARMED.load(Ordering::Acquire), 0);
    assert!(!ev.is_enabled());
    // The event can go now, and leaves the other instance too.
    events::unregister_trace_event(&ev).unwrap();
    assert_eq!(lookup("instances/kb/events/ktest").err(), Some(Errno::ENOENT));
    instances.rmdir(b"kb").unwrap();
    // An instance made again starts clean.
    let ev = inst_event();
    instances.create(b"ka", NodeKind::Directory, 0o755, 0, 0).unwrap();
    assert_eq!(read_all("instances/ka/set_event_pid"), "");
    assert_eq!(read_all("instances/ka/events/ktest/inst_event/filter"), "none\n");
    assert_eq!(read_all("instances/ka/events/ktest/inst_event/enable"), "0\n");
    instances.rmdir(b"ka").unwrap();
    events::unregister_trace_event(&ev).unwrap();
    write("trace", "").unwrap();
}

#[kernel_test]
fn an_instance_has_its_own_options_and_clock() {
    let instances = lookup("instances").unwrap();
    instances.create(b"ko", NodeKind::Directory, 0o755, 0, 0).unwrap();
    // Only the top level has record-cmd in options/ (trace_options lists
    // it everywhere, as Linux's).
    assert_eq!(lookup("instances/ko/options/record-cmd").err(), Some(Errno::ENOENT));
    assert!(lookup("options/record-cmd").is_ok());
    assert!(read_all("instances/ko/trace_options").contains("\nrecord-cmd\n"));
    write("instances/ko/options/sym-offset", "1").unwrap();
    assert_eq!(read_all("instances/ko/options/sym-offset"), "1\n");
    assert_eq!(read_all("options/sym-offset"), "0\n");
    write("instances/ko/trace_options", "noirq-info").unwrap();
    assert!(read_all("instances/ko/trace_options").contains("\nnoirq-info\n"));
    assert!(read_all("trace_options").contains("\nirq-info\n"));
    assert_eq!(write("instances/ko/trace_options", "nosuch"), Err(Errno::EINVAL));
    // The marker is printed under the instance's options and clock.
    write("instances/ko/trace_clock", "counter").unwrap();
    assert!(read_all("instances/ko/trace_clock").contains("[counter]"));
    assert!(read_all("trace_clock").starts_with("[local]"));
    write("instances/ko/trace_marker", "counted").unwrap();
    let text = read_all("instances/ko/trace");
    assert!(
        text.contains("#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"),
        "{text}"
    );
    let line = text.lines().find(|l| l.contains("counted")).unwrap();
    // `[cpu]` then the counter as a 12-wide number, no irq-info column.
    let after_cpu = line.split("] ").nth(1).unwrap();
    assert!(
        after_cpu.trim_start().split(':').next().unwrap().parse::<u64>().is_ok(),
        "{line}"
    );
    assert_eq!(write("instances/ko/trace_clock", "nosuch"), Err(Errno::EINVAL));
    // options/markers off refuses the instance's marker only.
    write("instances/ko/options/markers", "0").unwrap();
    assert_eq!(write("instances/ko/trace_marker", "x"), Err(Errno::EINVAL));
    write("trace_marker", "top still takes markers").unwrap();
    instances.rmdir(b"ko").unwrap();
    write("trace", "").unwrap();
}

#[kernel_test]
fn record_tgid_adds_the_tgid_column_and_saved_tgids() {
    let instances = lookup("instances").unwrap();
    instances.create(b"kg", NodeKind::Directory, 0o755, 0, 0).unwrap();
    write("instances/kg/options/record-tgid", "1").unwrap();
    write("instances/kg/trace_marker", "with tgid").unwrap();
    let text = read_all("instances/kg/trace");
    assert!(
        text.contains(
            "#                                          _-----=> irqs-off/BH-disabled\n\
             #                                         / _----=> need-resched\n"
        ),
        "{text}"
    );
    assert!(text.contains("#           TASK-PID       TGID    CPU#  |||||  TIMESTAMP  FUNCTION\n"));
    assert!(text.contains("#              | |           |       |   |||||     |         |\n"));
    // The tests run in the idle task (pid 0), whose group Linux does not
    // save either: its column is dashes. A task's own is its process's.
    let me = crate::sched::current();
    let pid = if me.is_idle() { 0 } else { me.tid() };
    let line = text.lines().find(|l| l.contains("with tgid")).unwrap();
    let column = match pid {
        0 => String::from("(-------)"),
        _ => alloc::format!("({:7})", me.process.get().map_or(pid, |p| p.pid)),
    };
    assert!(line.contains(&alloc::format!("-{pid:<7} {column} [")), "{line}");
    // saved_tgids: `pid tgid` lines, by pid.
    let saved: Vec<(u32, u32)> = read_all("saved_tgids")
        .lines()
        .map(|l| {
            let (p, t) = l.split_once(' ').unwrap();
            (p.parse().unwrap(), t.parse().unwrap())
        })
        .collect();
    assert!(saved.windows(2).all(|w| w[0].0 < w[1].0), "{saved:?}");
    assert!(saved.iter().all(|&(p, t)| p != 0 && t != 0));
    // Without irq-info: Linux's narrower header.
    write("instances/kg/options/irq-info", "0").unwrap();
    let text = read_all("instances/kg/trace");
    assert!(
        text.contains("#           TASK-PID       TGID    CPU#     TIMESTAMP  FUNCTION\n"),
        "{text}"
    );
    assert!(
        text.contains("#              | |           |       |         |         |\n"),
        "{text}"
    );
    assert_eq!(read_all("options/record-tgid"), "0\n");
    instances.rmdir(b"kg").unwrap();
}

/// Non-comment lines of a `trace` file.
fn trace_lines(path: &str) -> Vec<String> {
    read_all(path)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(String::from)
        .collect()
}

#[kernel_test]
fn function_tracers_of_the_top_level_and_two_instances_record_their_own_filtered_calls() {
    use super::function_graph_tests::fgraph_test_root;
    let instances = lookup("instances").unwrap();
    instances.create(b"fa", NodeKind::Directory, 0o755, 0, 0).unwrap();
    instances.create(b"fb", NodeKind::Directory, 0o755, 0, 0).unwrap();
    assert_eq!(
        read_all("instances/fa/available_tracers"),
        "function_graph function nop\n"
    );
    assert_eq!(write("instances/fa/current_tracer", "irqsoff"), Err(Errno::EINVAL));
    // Each array's own filter: the top level traces mid, fa the leaf,
    // fb deep and the leaf under function_graph.
    write("set_ftrace_filter", "fgraph_test_mid").unwrap();
    write("instances/fa/set_ftrace_filter", "fgraph_test_leaf").unwrap();
    write("instances/fb/set_ftrace_filter", "fgraph_test_deep fgraph_test_leaf").unwrap();
    assert_eq!(read_all("instances/fa/set_ftrace_filter"), "fgraph_test_leaf\n");
    assert_eq!(read_all("set_ftrace_filter"), "fgraph_test_mid\n");
    write("current_tracer", "function").unwrap();
    write("instances/fa/current_tracer", "function").unwrap();
    write("instances/fb/current_tracer", "function_graph").unwrap();
    assert_eq!(read_all("instances/fb/current_tracer"), "function_graph\n");
    // One site, two users (fa's function ops and fb's graph ops).
    let enabled = read_all("enabled_functions");
    assert!(
        enabled.lines().any(|l| l.starts_with("fgraph_test_leaf (2) ")),
        "{enabled}"
    );
    assert!(
        enabled.lines().any(|l| l.starts_with("fgraph_test_mid (1) ")),
        "{enabled}"
    );
    let x = core::hint::black_box(7);
    fgraph_test_root(x);
    let top = trace_lines("trace");
    assert_eq!(
        top.iter().filter(|l| l.contains(" fgraph_test_mid <-")).count(),
        1,
        "{top:?}"
    );
    assert!(!top.iter().any(|l| l.contains("fgraph_test_leaf")), "{top:?}");
    // The chain calls the leaf five times: twice from the root, once from
    // mid, once each from skipped and deep.
    let fa = trace_lines("instances/fa/trace");
    assert_eq!(
        fa.iter().filter(|l| l.contains(" fgraph_test_leaf <-")).count(),
        5,
        "{fa:?}"
    );
    assert!(fa.iter().all(|l| l.contains("fgraph_test_leaf")), "{fa:?}");
    let fb = read_all("instances/fb/trace");
    assert!(fb.starts_with("# tracer: function_graph\n"), "{fb}");
    let deep = fb.find("fgraph_test_deep() {").expect("deep's entry");
    let leaf_in_deep = fb[deep..].find("fgraph_test_leaf();").expect("the leaf inside deep");
    assert!(fb[deep + leaf_in_deep..].contains('}'), "{fb}");
    assert!(!fb.contains("fgraph_test_mid"), "{fb}");
    // fa's pid list leaves this task out; the others still trace it.
    write("instances/fa/set_ftrace_pid", "999999").unwrap();
    write("instances/fa/trace", "").unwrap();
    write("trace", "").unwrap();
    fgraph_test_root(x);
    assert!(trace_lines("instances/fa/trace").is_empty());
    assert_eq!(read_all("instances/fa/set_ftrace_pid"), "999999\n");
    assert_eq!(read_all("set_ftrace_pid"), "no pid\n");
    assert_eq!(trace_lines("trace").len(), 1);
    // rmdir stops an instance's tracer: its sites go back.
    instances.rmdir(b"fa").unwrap();
    instances.rmdir(b"fb").unwrap();
    let enabled = read_all("enabled_functions");
    assert_eq!(enabled.lines().count(), 1, "{enabled}");
    write("current_tracer", "nop").unwrap();
    write("set_ftrace_filter", "").unwrap();
    assert_eq!(read_all("enabled_functions"), "");
    write("trace", "").unwrap();
}

#[kernel_test]
fn a_bad_filter_in_an_instance_logs_in_that_instance_error_log_only() {
    let instances = lookup("instances").unwrap();
    instances.create(b"el", NodeKind::Directory, 0o755, 0, 0).unwrap();
    let top_before = read_all("error_log");
    assert_eq!(read_all("instances/el/error_log"), "");
    assert_eq!(
        write("instances/el/events/sched/sched_switch/filter", "no_such_field == 1"),
        Err(Errno::EINVAL)
    );
    let log = read_all("instances/el/error_log");
    assert!(
        log.contains("event filter parse error: error: Field not found"),
        "{log}"
    );
    assert!(log.contains("  Command: no_such_field == 1"), "{log}");
    assert_eq!(read_all("error_log"), top_before);
    write("instances/el/error_log", "").unwrap();
    assert_eq!(read_all("instances/el/error_log"), "");
    instances.rmdir(b"el").unwrap();
}

/// The options whose mechanism this kernel lacks read as Linux's defaults
/// (`trace_printk_dest` off in an instance), take their own value again,
/// and refuse a change with EINVAL rather than taking it and doing nothing.
#[kernel_test]
fn options_without_a_mechanism_keep_linux_defaults_and_refuse_a_change() {
    let instances = lookup("instances").unwrap();
    instances.create(b"kfix", NodeKind::Directory, 0o755, 0, 0).unwrap();
    for (name, top) in [
        ("verbose", "0\n"),
        ("block", "0\n"),
        ("hash-ptr", "1\n"),
        ("trace_printk_dest", "1\n"),
    ] {
        let path = alloc::format!("options/{name}");
        assert_eq!(read_all(&path), top, "{name}");
        let same = top.trim();
        let other = if same == "1" { "0" } else { "1" };
        write(&path, same).unwrap();
        assert_eq!(write(&path, other), Err(Errno::EINVAL), "{name}");
        assert_eq!(read_all(&path), top, "{name}");
    }
    assert_eq!(read_all("instances/kfix/options/trace_printk_dest"), "0\n");
    assert_eq!(lookup("instances/kfix/options/trace_printk").err(), Some(Errno::ENOENT));
    assert_eq!(write("trace_options", "block"), Err(Errno::EINVAL));
    write("trace_options", "noblock").unwrap();
    // In Linux's order, between sym-addr and annotate.
    assert!(read_all("trace_options").contains("\nnoverbose\nnoraw\nnohex\nnobin\nnoblock\nnofields\ntrace_printk\n"));
    instances.rmdir(b"kfix").unwrap();
}
