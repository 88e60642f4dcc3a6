//! In-kernel tests of what needs the CPU: writers on several CPUs at once
//! against a draining reader, and events registered, enabled, recorded,
//! printed and removed through their tracefs files.

use super::events::{self, FieldDesc, TraceEventDef};
use super::test_files::{open, read_all, write};
use super::*;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicUsize, Ordering};
use ktest_macros::kernel_test;
use uapi::fcntl::O_RDONLY;

#[kernel_test]
fn three_writers_and_a_draining_reader_account_for_every_event() {
    const N: u64 = 20_000;
    let me = arch::cpu::cpu_id();
    let writers: Vec<usize> = tracing_cpus().filter(|&c| c != me).take(3).collect();
    // A private, small trace array, so that writers overrun the reader.
    let tr: &'static TraceArray = alloc::boxed::Box::leak(alloc::boxed::Box::new(TraceArray::new()));
    tr.resize(None, 3 * 4096).unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    crate::smp::smp_call_function_many(
        writers.iter().copied(),
        Arc::new(move || {
            for i in 0..N {
                let cpu = arch::cpu::cpu_id() as u64;
                trace_event_write(tr, 999, 16, |f| {
                    f[..8].copy_from_slice(&i.to_le_bytes());
                    f[8..].copy_from_slice(&(cpu * 1_000_003 + i).to_le_bytes());
                    true
                });
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    let mut consumed = [0u64; NR_CPUS];
    let mut lost = [0u64; NR_CPUS];
    let mut last: [Option<(u64, u64)>; NR_CPUS] = [None; NR_CPUS];
    loop {
        let finished = done.load(Ordering::Acquire) == writers.len();
        let mut any = false;
        for &cpu in &writers {
            tr.with_buffer(cpu, |b| {
                for _ in 0..64 {
                    let Some(c) = b.consume() else { break };
                    any = true;
                    let e = c.event;
                    assert_eq!(e.data.len(), TRACE_ENTRY_SIZE + 16);
                    assert_eq!(u16::from_le_bytes([e.data[0], e.data[1]]), 999);
                    let seq = u64::from_le_bytes(e.data[8..16].try_into().unwrap());
                    let check = u64::from_le_bytes(e.data[16..24].try_into().unwrap());
                    assert_eq!(check, cpu as u64 * 1_000_003 + seq, "corrupted record on cpu {cpu}");
                    if let Some((s, ts)) = last[cpu] {
                        assert!(seq > s && e.ts >= ts, "cpu {cpu}: {seq}@{} after {s}@{ts}", e.ts);
                    }
                    last[cpu] = Some((seq, e.ts));
                    consumed[cpu] += 1;
                    lost[cpu] += c.lost;
                }
            });
        }
        if finished && !any {
            break;
        }
    }
    for &cpu in &writers {
        let s = tr.stats(cpu);
        assert_eq!(s.committed, N, "cpu {cpu}: {s:?}");
        assert_eq!(consumed[cpu] + s.overrun, N, "cpu {cpu}: {s:?}");
        assert_eq!(lost[cpu], s.overrun, "cpu {cpu}: losses reported to the reader");
        assert_eq!(s.entries, 0);
        assert_eq!(last[cpu].map(|l| l.0), Some(N - 1), "the newest event survives");
    }
}

/// A print function for the test event: its one field.
fn print_value(out: &mut String, rec: &events::EventRecord<'_>) {
    let v = rec
        .entry
        .get(8..16)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
    let _ = writeln!(out, "ktest_event: value={v}");
}

static REG_CALLS: AtomicUsize = AtomicUsize::new(0);

#[kernel_test]
fn event_registered_enabled_recorded_printed_and_removed_through_tracefs() {
    let def = TraceEventDef {
        system: "ktest".into(),
        name: "ktest_event".into(),
        fields: alloc::vec![FieldDesc::new("u64", "value", 8, 8, false)],
        print_fmt: "\"value=%llu\", REC->value".into(),
        print: alloc::boxed::Box::new(print_value),
        reg: Some(alloc::boxed::Box::new(|_| {
            REG_CALLS.fetch_add(1, Ordering::AcqRel);
            Ok(())
        })),
        ignore_enable: false,
    };
    let ev = events::register_trace_event(def).unwrap();
    let again = TraceEventDef {
        system: "ktest".into(),
        name: "ktest_event".into(),
        fields: Vec::new(),
        print_fmt: String::new(),
        print: alloc::boxed::Box::new(print_value),
        reg: None,
        ignore_enable: false,
    };
    assert_eq!(events::register_trace_event(again).err(), Some(Errno::EEXIST));
    let id = ev.id;
    assert_eq!(read_all("events/ktest/ktest_event/id"), alloc::format!("{id}\n"));
    assert_eq!(
        read_all("events/ktest/ktest_event/format"),
        alloc::format!(
            "name: ktest_event\nID: {id}\nformat:\n\
             \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
             \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
             \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
             \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
             \tfield:u64 value;\toffset:8;\tsize:8;\tsigned:0;\n\n\
             print fmt: \"value=%llu\", REC->value\n"
        )
    );
    assert!(read_all("available_events").contains("ktest:ktest_event\n"));
    // Disabled: nothing recorded.
    write("trace", "").unwrap();
    assert!(!ev.record(8, |f| {
        f.copy_from_slice(&1u64.to_le_bytes());
        true
    }));
    assert_eq!(write("events/ktest/ktest_event/enable", "2"), Err(Errno::EINVAL));
    assert_eq!(write("events/ktest/ktest_event/filter", "0"), Ok(1));
    let calls = REG_CALLS.load(Ordering::Acquire);
    write("events/ktest/enable", "1").unwrap();
    assert_eq!(REG_CALLS.load(Ordering::Acquire), calls + 1);
    assert_eq!(read_all("events/ktest/ktest_event/enable"), "1\n");
    assert_eq!(read_all("set_event"), "ktest:ktest_event\n");
    assert!(global_trace().is_expanded(), "enabling an event expands the buffers");
    assert!(ev.record(8, |f| {
        f.copy_from_slice(&42u64.to_le_bytes());
        true
    }));
    // A fill that rejects the entry (a filter) discards it.
    assert!(!ev.record(8, |_| false));
    let trace = read_all("trace");
    let line = trace.lines().last().unwrap();
    assert!(line.ends_with(": ktest_event: value=42"), "{trace}");
    assert!(
        trace.contains("# entries-in-buffer/entries-written: 1/1   #P:"),
        "{trace}"
    );
    // Enabled events cannot be removed.
    assert_eq!(events::unregister_trace_event(&ev), Err(Errno::EBUSY));
    write("set_event", "!ktest:ktest_event").unwrap();
    assert_eq!(read_all("events/ktest/enable"), "0\n");
    // An open file of the event keeps it too.
    let f = open("events/ktest/ktest_event/format", O_RDONLY).unwrap();
    assert_eq!(events::unregister_trace_event(&ev), Err(Errno::EBUSY));
    drop(f);
    events::unregister_trace_event(&ev).unwrap();
    assert_eq!(open("events/ktest", O_RDONLY).err(), Some(Errno::ENOENT));
    assert!(events::find_event_by_id(id).is_none());
    assert!(!read_all("available_events").contains("ktest:"));
    // The last line of trace now prints as an unknown type.
    assert!(read_all("trace").ends_with(&alloc::format!("Unknown type {id}\n")));
    write("trace", "").unwrap();
}

#[kernel_test]
fn error_log_keeps_the_last_eight_in_linux_format() {
    use uapi::error::CmdError;
    write("error_log", "").unwrap();
    for i in 0..20 {
        let cmd = alloc::format!("p:ev{i} vfs_read %x99");
        error_log::tracing_log_err(
            "trace_kprobe",
            &cmd,
            &CmdError::new(Errno::EINVAL, "Invalid fetch argument", 19),
        );
    }
    let log = read_all("error_log");
    assert_eq!(log.lines().count(), 3 * error_log::TRACING_LOG_ERRS_MAX);
    assert!(!log.contains("ev11 "));
    assert!(log.contains("ev12 "));
    let mut lines = log.lines().skip(3 * (error_log::TRACING_LOG_ERRS_MAX - 1));
    assert!(lines
        .next()
        .unwrap()
        .ends_with("] trace_kprobe: error: Invalid fetch argument"));
    assert_eq!(lines.next().unwrap(), "  Command: p:ev19 vfs_read %x99");
    assert_eq!(lines.next().unwrap(), alloc::format!("{:30}^", ""));
    write("error_log", "").unwrap();
    assert_eq!(read_all("error_log"), "");
}

#[kernel_test]
fn a_cpu_outside_tracing_cpumask_records_nothing() {
    let tr = global_trace();
    let saved = read_all("tracing_cpumask");
    let me = arch::cpu::cpu_id();
    let all = (1u64 << crate::smp::num_online_cpus()) - 1;
    let others = all & !(1 << me);
    write("tracing_cpumask", &alloc::format!("{others:x}")).unwrap();
    assert_eq!(read_all("tracing_cpumask"), alloc::format!("{others:x}\n"));
    // The writer stays on this CPU: interrupts are off around the write.
    let irq = arch::cpu::local_irq_save();
    let recorded = trace_event_write(tr, 0, 8, |_| true);
    arch::cpu::local_irq_restore(irq);
    assert!(!recorded, "CPU {me} is out of the mask but recorded");
    write("tracing_cpumask", &alloc::format!("{all:x}")).unwrap();
    let irq = arch::cpu::local_irq_save();
    let recorded = trace_event_write(tr, 0, 8, |_| true);
    arch::cpu::local_irq_restore(irq);
    assert!(recorded || !tr.is_on(), "back in the mask, CPU {me} records again");
    assert_eq!(write("tracing_cpumask", "0x1"), Err(Errno::EINVAL));
    assert_eq!(write("tracing_cpumask", "100"), Err(Errno::EOVERFLOW));
    write("tracing_cpumask", saved.trim_end()).unwrap();
    // Leave no record of type 0 behind for later tests.
    tr.reset(None);
}

#[kernel_test]
fn event_fork_adds_children_of_listed_pids_and_exit_removes_them() {
    use super::options::{set_flag, EVENT_FORK};
    const PARENT: u32 = 70_001;
    const CHILD: u32 = 70_002;
    write("set_event_pid", "").unwrap();
    write("set_event_pid", &alloc::format!("{PARENT}")).unwrap();
    // Without the option a child stays out.
    events::event_pids_fork(PARENT, CHILD);
    assert_eq!(read_all("set_event_pid"), alloc::format!("{PARENT}\n"));
    set_flag(EVENT_FORK, true);
    events::event_pids_fork(PARENT, CHILD);
    // A task not in the list brings no child in.
    events::event_pids_fork(CHILD + 1, CHILD + 2);
    assert_eq!(read_all("set_event_pid"), alloc::format!("{PARENT}\n{CHILD}\n"));
    events::event_pids_exit(CHILD);
    assert_eq!(read_all("set_event_pid"), alloc::format!("{PARENT}\n"));
    set_flag(EVENT_FORK, false);
    write("set_event_pid", "").unwrap();
    assert_eq!(read_all("set_event_pid"), "");
}

#[kernel_test]
fn set_event_notrace_pid_ignores_listed_tasks_and_their_forks() {
    use super::options::{set_flag, EVENT_FORK};
    const CHILD: u32 = 70_102;
    let me = crate::sched::current().tid();
    write("set_event_pid", "").unwrap();
    write("set_event_notrace_pid", "").unwrap();
    assert!(!events::trace_ignore_this_task());
    assert_eq!(write("set_event_notrace_pid", "12x"), Err(uapi::Errno::EINVAL));
    write("set_event_notrace_pid", &alloc::format!("{me}")).unwrap();
    assert!(events::trace_ignore_this_task(), "a listed task is not traced");
    assert_eq!(read_all("set_event_notrace_pid"), alloc::format!("{me}\n"));
    // Both lists: notrace wins for a task in both (Linux's
    // trace_ignore_this_task checks it second).
    write("set_event_pid", &alloc::format!("{me}")).unwrap();
    assert!(events::trace_ignore_this_task());
    write("set_event_notrace_pid", "").unwrap();
    assert!(!events::trace_ignore_this_task());
    write("set_event_pid", "").unwrap();
    // event-fork: the child of a notrace task is notrace too.
    write("set_event_notrace_pid", &alloc::format!("{me}")).unwrap();
    events::event_pids_fork(me, CHILD);
    assert_eq!(read_all("set_event_notrace_pid"), alloc::format!("{me}\n"));
    set_flag(EVENT_FORK, true);
    events::event_pids_fork(me, CHILD);
    assert_eq!(read_all("set_event_notrace_pid"), alloc::format!("{me}\n{CHILD}\n"));
    events::event_pids_exit(CHILD);
    set_flag(EVENT_FORK, false);
    write("set_event_notrace_pid", "").unwrap();
    assert_eq!(read_all("set_event_notrace_pid"), "");
}
