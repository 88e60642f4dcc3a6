//! In-kernel tests of event filters and triggers through their tracefs
//! files, on events registered by the tests (`ktestf/*`): what the record
//! path keeps, what the files read, soft mode, and filters swapped while
//! other CPUs record.

use super::events::{self, FieldDesc, TraceEvent, TraceEventDef};
use super::test_files::{append, read_all, write};
use super::*;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicUsize, Ordering};
use ktest_macros::kernel_test;

/// `value=%llu name=%s`.
fn print_vn(out: &mut String, rec: &events::EventRecord<'_>) {
    let v = rec
        .entry
        .get(8..16)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
    let name = rec.entry.get(16..32).unwrap_or(&[]);
    let n = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let _ = writeln!(
        out,
        "value={v} name={}",
        core::str::from_utf8(&name[..n]).unwrap_or("?")
    );
}

/// Registers `ktestf/NAME` with `u64 value` and `char name[16]`.
fn test_event(name: &str) -> Arc<TraceEvent> {
    events::register_trace_event(TraceEventDef {
        system: "ktestf".into(),
        name: name.into(),
        fields: alloc::vec![
            FieldDesc::new("u64", "value", 8, 8, false),
            FieldDesc::new("char", "name[16]", 16, 16, false),
        ],
        print_fmt: "\"value=%llu name=%s\", REC->value, REC->name".into(),
        print: alloc::boxed::Box::new(print_vn),
        reg: None,
        ignore_enable: false,
    })
    .unwrap()
}

fn hit(ev: &TraceEvent, value: u64, name: &str) -> bool {
    ev.record(24, |f| {
        f[..8].copy_from_slice(&value.to_le_bytes());
        f[8..].fill(0);
        f[8..8 + name.len()].copy_from_slice(name.as_bytes());
        true
    })
}

/// The event lines of `trace` (without the header and context columns).
fn trace_events() -> Vec<String> {
    read_all("trace")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| match l.find(": ") {
            Some(i) if !l.starts_with(" => ") => String::from(&l[i + 2..]),
            _ => String::from(l),
        })
        .collect()
}

fn remove(ev: &Arc<TraceEvent>) {
    let _ = write(&alloc::format!("events/ktestf/{}/enable", ev.name()), "0");
    events::unregister_trace_event(ev).unwrap();
}

#[kernel_test]
fn filter_keeps_only_matching_entries_and_reads_back_as_written() {
    let ev = test_event("filt");
    write("trace", "").unwrap();
    assert_eq!(read_all("events/ktestf/filt/filter"), "none\n");
    write("events/ktestf/filt/enable", "1").unwrap();
    write("events/ktestf/filt/filter", "value > 10 && name ~ \"ab*\"\n").unwrap();
    assert_eq!(read_all("events/ktestf/filt/filter"), "value > 10 && name ~ \"ab*\"\n");
    assert!(!hit(&ev, 5, "abc"), "value too small");
    assert!(hit(&ev, 11, "abc"));
    assert!(!hit(&ev, 12, "xbc"), "name does not match");
    assert!(hit(&ev, 13, "ab"));
    assert_eq!(trace_events(), ["value=11 name=abc", "value=13 name=ab"]);
    // comm and common_pid work on any event.
    write("events/ktestf/filt/filter", "common_pid >= 0 && comm != \"\"").unwrap();
    assert!(hit(&ev, 1, "x"));
    // "0" clears: everything goes through.
    write("events/ktestf/filt/filter", "0").unwrap();
    assert_eq!(read_all("events/ktestf/filt/filter"), "none\n");
    assert!(hit(&ev, 0, "zz"));
    remove(&ev);
    write("trace", "").unwrap();
}

#[kernel_test]
fn bad_filter_is_einval_with_error_log_entry_and_filters_nothing() {
    let ev = test_event("bad");
    write("error_log", "").unwrap();
    write("events/ktestf/bad/enable", "1").unwrap();
    assert_eq!(write("events/ktestf/bad/filter", "valu > 1"), Err(Errno::EINVAL));
    assert_eq!(
        read_all("events/ktestf/bad/filter"),
        "valu > 1\n     ^\nparse_error: Field not found\n\n"
    );
    let log = read_all("error_log");
    let mut lines = log.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .ends_with("] event filter parse error: error: Field not found"),
        "{log}"
    );
    assert_eq!(lines.next().unwrap(), "  Command: valu > 1");
    // The failed filter lets everything through, as Linux's.
    write("trace", "").unwrap();
    assert!(hit(&ev, 1, "a"));
    // Writes of a page or more are refused.
    let long = "value == 1 || ".repeat(300) + "value == 2";
    assert_eq!(write("events/ktestf/bad/filter", &long), Err(Errno::EINVAL));
    remove(&ev);
    write("error_log", "").unwrap();
    write("trace", "").unwrap();
}

#[kernel_test]
fn system_filter_applies_to_each_event_of_the_system() {
    let a = test_event("sys_a");
    let b = test_event("sys_b");
    assert!(read_all("events/ktestf/filter").starts_with("### global filter ###\n"));
    write("events/ktestf/enable", "1").unwrap();
    write("events/ktestf/filter", "value == 7").unwrap();
    assert_eq!(read_all("events/ktestf/sys_a/filter"), "value == 7\n");
    assert_eq!(read_all("events/ktestf/sys_b/filter"), "value == 7\n");
    write("trace", "").unwrap();
    assert!(!hit(&a, 6, "a"));
    assert!(hit(&a, 7, "a"));
    assert!(!hit(&b, 8, "b"));
    assert!(hit(&b, 7, "b"));
    write("events/ktestf/filter", "0").unwrap();
    assert_eq!(read_all("events/ktestf/sys_b/filter"), "none\n");
    remove(&a);
    remove(&b);
    write("trace", "").unwrap();
}

#[kernel_test]
fn traceoff_trigger_with_count_stops_tracing_after_its_event() {
    let ev = test_event("toff");
    write("trace", "").unwrap();
    assert_eq!(
        read_all("events/ktestf/toff/trigger"),
        "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n"
    );
    write("events/ktestf/toff/enable", "1").unwrap();
    write("events/ktestf/toff/trigger", "traceoff:1 if value == 3").unwrap();
    assert_eq!(
        read_all("events/ktestf/toff/trigger"),
        "traceoff:count=1 if value == 3\n"
    );
    assert_eq!(read_all("events/ktestf/toff/enable"), "1*\n");
    assert!(hit(&ev, 2, "a"));
    assert!(global_trace().tracing_on());
    assert!(hit(&ev, 3, "a"), "traceoff is a post trigger: its event is recorded");
    assert!(!global_trace().tracing_on());
    assert!(!hit(&ev, 4, "a"));
    assert_eq!(
        read_all("events/ktestf/toff/trigger"),
        "traceoff:count=0 if value == 3\n"
    );
    write("tracing_on", "1").unwrap();
    assert!(hit(&ev, 3, "a"), "the count is used up");
    assert!(global_trace().tracing_on());
    // A second traceoff is EEXIST; removal ignores count and filter.
    assert_eq!(append("events/ktestf/toff/trigger", "traceoff"), Err(Errno::EEXIST));
    append("events/ktestf/toff/trigger", "!traceoff").unwrap();
    assert_eq!(read_all("events/ktestf/toff/enable"), "1\n");
    assert_eq!(trace_events(), ["value=2 name=a", "value=3 name=a", "value=3 name=a"]);
    // A bad `if` filter: EINVAL and an error_log entry.
    write("error_log", "").unwrap();
    assert_eq!(
        write("events/ktestf/toff/trigger", "traceoff if nope == 1"),
        Err(Errno::EINVAL)
    );
    assert!(read_all("error_log").contains("  Command: nope == 1\n"));
    write("error_log", "").unwrap();
    remove(&ev);
    write("trace", "").unwrap();
}

#[kernel_test]
fn event_with_triggers_runs_them_while_soft_disabled() {
    let src = test_event("src");
    let dst = test_event("dst");
    write("trace", "").unwrap();
    // Neither is enabled: the trigger puts src in soft mode (armed, not
    // recorded) and dst too, soft-disabled until the trigger fires.
    write("events/ktestf/src/trigger", "enable_event:ktestf:dst:1 if value > 100").unwrap();
    assert_eq!(read_all("events/ktestf/src/enable"), "0*\n");
    assert_eq!(read_all("events/ktestf/dst/enable"), "0*\n");
    assert_eq!(read_all("set_event"), "ktestf:dst\nktestf:src\n", "newest first");
    assert_eq!(events::unregister_trace_event(&dst), Err(Errno::EBUSY));
    assert!(!hit(&dst, 1, "d"));
    assert!(!hit(&src, 5, "s"), "soft-disabled: not recorded");
    assert_eq!(read_all("events/ktestf/dst/enable"), "0*\n", "filter rejected");
    assert!(!hit(&src, 500, "s"));
    assert_eq!(read_all("events/ktestf/dst/enable"), "1*\n");
    assert!(hit(&dst, 2, "d"));
    assert_eq!(
        read_all("events/ktestf/src/trigger"),
        "enable_event:ktestf:dst:count=0 if value > 100\n"
    );
    // One enable-kind trigger per target: disable_event replaces it, and
    // soft-disables dst again on the next hit, without a filter.
    assert_eq!(
        append("events/ktestf/src/trigger", "disable_event:ktestf:dst"),
        Err(Errno::EEXIST)
    );
    append("events/ktestf/src/trigger", "!enable_event:ktestf:dst").unwrap();
    assert_eq!(
        read_all("events/ktestf/dst/enable"),
        "1\n",
        "soft mode dropped, state kept"
    );
    append("events/ktestf/src/trigger", "disable_event:ktestf:dst").unwrap();
    assert_eq!(read_all("events/ktestf/dst/enable"), "1*\n");
    assert!(!hit(&src, 1, "s"));
    assert_eq!(read_all("events/ktestf/dst/enable"), "0*\n");
    assert!(!hit(&dst, 3, "d"));
    // Enabling dst for real: recorded, still in soft mode.
    write("events/ktestf/dst/enable", "1").unwrap();
    assert_eq!(read_all("events/ktestf/dst/enable"), "1*\n");
    write("events/ktestf/dst/enable", "0").unwrap();
    assert_eq!(read_all("events/ktestf/dst/enable"), "0*\n");
    // Removing the trigger leaves both disabled.
    append("events/ktestf/src/trigger", "!disable_event:ktestf:dst").unwrap();
    assert_eq!(read_all("events/ktestf/src/enable"), "0\n");
    assert_eq!(read_all("events/ktestf/dst/enable"), "0\n");
    assert_eq!(read_all("set_event"), "");
    assert_eq!(trace_events(), ["value=2 name=d"]);
    remove(&src);
    remove(&dst);
    write("trace", "").unwrap();
}

#[kernel_test]
fn stacktrace_trigger_records_a_kernel_stack_after_the_event() {
    let ev = test_event("stk");
    write("trace", "").unwrap();
    write("events/ktestf/stk/enable", "1").unwrap();
    write("events/ktestf/stk/trigger", "stacktrace:1").unwrap();
    assert!(hit(&ev, 1, "a"));
    assert!(hit(&ev, 2, "a"));
    let lines = trace_events();
    assert_eq!(lines[0], "value=1 name=a");
    assert_eq!(lines[1], "<stack trace>");
    let frames: Vec<&String> = lines.iter().skip(2).take_while(|l| l.starts_with(" => ")).collect();
    assert!(!frames.is_empty(), "{lines:?}");
    // The first frame is the caller of the record path, then this test.
    assert!(frames[0].ends_with("event_filter_tests__hit"), "{frames:?}");
    assert!(
        frames[1].contains("stacktrace_trigger_records_a_kernel_stack"),
        "{frames:?}"
    );
    assert_eq!(lines.last().unwrap(), "value=2 name=a", "count 1: one stack");
    assert!(
        read_all("events/ftrace/kernel_stack/format").contains("field:unsigned long caller[8];\toffset:16;\tsize:64;")
    );
    append("events/ktestf/stk/trigger", "!stacktrace").unwrap();
    remove(&ev);
    write("trace", "").unwrap();
}

#[kernel_test]
fn filter_swapped_while_three_cpus_record_never_lets_a_rejected_entry_through() {
    const N: u64 = 20_000;
    let ev = test_event("swap");
    write("trace", "").unwrap();
    write("buffer_size_kb", "64").unwrap();
    write("events/ktestf/swap/enable", "1").unwrap();
    write("events/ktestf/swap/filter", "value & 1").unwrap();
    let me = arch::cpu::cpu_id();
    let writers: Vec<usize> = tracing_cpus().filter(|&c| c != me).take(3).collect();
    let done = Arc::new(AtomicUsize::new(0));
    // The writers record until they have made N entries and seen at least
    // four swaps: a busy host may stall this CPU for as long as N entries
    // take elsewhere, and a run without swaps under it proves nothing.
    let swapped = Arc::new(AtomicUsize::new(0));
    let (d, e, sw) = (done.clone(), ev.clone(), swapped.clone());
    crate::smp::smp_call_function_many(
        writers.iter().copied(),
        Arc::new(move || {
            let mut i = 0;
            while i < N || sw.load(Ordering::Acquire) < 4 {
                hit(&e, i, "w");
                i += 1;
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    // Every value that is a multiple of 4 fails both filters.
    let mut swaps = 0;
    while done.load(Ordering::Acquire) < writers.len() {
        let f = if swaps % 2 == 0 { "value & 2" } else { "value & 1" };
        write("events/ktestf/swap/filter", f).unwrap();
        swaps += 1;
        swapped.store(swaps, Ordering::Release);
    }
    // On one CPU: record and swap in turn.
    if writers.is_empty() {
        for i in 0..N {
            hit(&ev, i, "w");
            if i % 64 == 0 {
                let f = if swaps % 2 == 0 { "value & 2" } else { "value & 1" };
                write("events/ktestf/swap/filter", f).unwrap();
                swaps += 1;
            }
        }
    }
    assert!(swaps > 1);
    let lines = trace_events();
    assert!(!lines.is_empty());
    for l in &lines {
        let v: u64 = l
            .strip_prefix("value=")
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("corrupted line {l:?}"));
        assert!(!v.is_multiple_of(4), "{v} passed no filter: {l}");
    }
    remove(&ev);
    write("trace", "").unwrap();
    write("buffer_size_kb", "1408").unwrap();
}
