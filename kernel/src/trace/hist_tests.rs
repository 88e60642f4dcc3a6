//! In-kernel tests of hist triggers through the `trigger` and `hist`
//! files of events registered by the tests (`ktesth/*`): what the tables
//! count, soft mode, a full table's drops, and hits from several CPUs
//! at once while the file is read.

use super::events::{self, FieldDesc, TraceEvent, TraceEventDef};
use super::test_files::{append, read_all, write};
use super::*;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};
use ktest_macros::kernel_test;

/// Registers `ktesth/NAME` with `u64 value` and `char name[16]`.
fn test_event(name: &str) -> Arc<TraceEvent> {
    events::register_trace_event(TraceEventDef {
        system: "ktesth".into(),
        name: name.into(),
        fields: alloc::vec![
            FieldDesc::new("u64", "value", 8, 8, false),
            FieldDesc::new("char", "name[16]", 16, 16, false),
        ],
        print_fmt: "\"value=%llu name=%s\", REC->value, REC->name".into(),
        print: alloc::boxed::Box::new(|_: &mut String, _: &events::EventRecord<'_>| {}),
        reg: None,
        ignore_enable: false,
    })
    .unwrap()
}

fn hit(ev: &TraceEvent, value: u64, name: &str) {
    ev.record(24, |f| {
        f[..8].copy_from_slice(&value.to_le_bytes());
        f[8..].fill(0);
        f[8..8 + name.len()].copy_from_slice(name.as_bytes());
        true
    });
}

fn remove(ev: &Arc<TraceEvent>) {
    write(&alloc::format!("events/ktesth/{}/trigger", ev.name()), "").ok();
    events::unregister_trace_event(ev).unwrap();
}

/// The entry lines of a `hist` file.
fn entries(path: &str) -> Vec<String> {
    read_all(path)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(String::from)
        .collect()
}

#[kernel_test]
fn hist_trigger_counts_hits_per_key_without_enabling_the_event() {
    let ev = test_event("count");
    write("trace", "").unwrap();
    append(
        "events/ktesth/count/trigger",
        "hist:keys=name:vals=value:sort=value.descending",
    )
    .unwrap();
    // The trigger arms the event (soft mode) but records nothing.
    assert_eq!(read_all("events/ktesth/count/enable"), "0*\n");
    for (v, n) in [(1, "a"), (2, "b"), (3, "a"), (40, "c"), (5, "a")] {
        hit(&ev, v, n);
    }
    assert_eq!(
        entries("events/ktesth/count/hist"),
        [
            alloc::format!("{{ name: {:<50} }} hitcount:          1  value:         40", "c"),
            alloc::format!("{{ name: {:<50} }} hitcount:          3  value:          9", "a"),
            alloc::format!("{{ name: {:<50} }} hitcount:          1  value:          2", "b"),
        ]
    );
    assert!(read_all("events/ktesth/count/hist").ends_with("Totals:\n    Hits: 5\n    Entries: 3\n    Dropped: 0\n"));
    assert!(read_all("trace").lines().all(|l| l.starts_with('#')));
    // Opening `trigger` with O_TRUNC removes hist triggers: the event
    // leaves soft mode.
    write("events/ktesth/count/trigger", "").ok();
    assert_eq!(read_all("events/ktesth/count/enable"), "0\n");
    assert_eq!(read_all("events/ktesth/count/hist"), "");
    remove(&ev);
}

#[kernel_test]
fn full_table_drops_new_keys_and_keeps_counting_old_ones() {
    let ev = test_event("full");
    append("events/ktesth/full/trigger", "hist:keys=value:size=128").unwrap();
    for v in 0..200 {
        hit(&ev, v, "x");
    }
    hit(&ev, 7, "x");
    let text = read_all("events/ktesth/full/hist");
    assert!(
        text.ends_with("Totals:\n    Hits: 129\n    Entries: 128\n    Dropped: 72\n"),
        "{text}"
    );
    assert!(text.contains("{ value:          7 } hitcount:          2\n"));
    remove(&ev);
}

#[kernel_test]
fn hist_triggers_count_every_hit_from_four_cpus_while_read() {
    const N: u64 = 5_000;
    let ev = test_event("smp");
    append(
        "events/ktesth/smp/trigger",
        "hist:keys=value.buckets=1000 if value < 1000000",
    )
    .unwrap();
    let me = arch::cpu::cpu_id();
    let writers: Vec<usize> = tracing_cpus().filter(|&c| c != me).take(3).collect();
    let done = Arc::new(AtomicUsize::new(0));
    let (d, e) = (done.clone(), ev.clone());
    crate::smp::smp_call_function_many(
        writers.iter().copied(),
        Arc::new(move || {
            for i in 0..N {
                hit(&e, i, "w");
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    for i in 0..N {
        hit(&ev, i, "m");
        if i % 1000 == 0 {
            let _ = read_all("events/ktesth/smp/hist");
        }
    }
    while done.load(Ordering::Acquire) < writers.len() {
        core::hint::spin_loop();
    }
    let cpus = writers.len() as u64 + 1;
    let text = read_all("events/ktesth/smp/hist");
    for b in 0..5 {
        let line = alloc::format!(
            "{{ value: ~ {}-{} }} hitcount: {:>10}\n",
            b * 1000,
            b * 1000 + 999,
            1000 * cpus
        );
        assert!(text.contains(&line), "{line} in {text}");
    }
    assert!(text.contains(&alloc::format!("Hits: {}\n", N * cpus)), "{text}");
    remove(&ev);
}

/// The adversarial case of the lock-free hit path: the other CPUs hit an
/// event without pause while this one adds and removes hist triggers on
/// it and clears their tables. No hit may crash or corrupt a table: when
/// the hitting stops, a cleared table counts exactly what follows.
#[kernel_test]
fn hist_tables_stay_whole_while_triggers_come_and_go_under_hits_from_other_cpus() {
    const ROUNDS: usize = 40;
    const AFTER: u64 = 300;
    let ev = test_event("churn");
    let path = "events/ktesth/churn/trigger";
    let me = arch::cpu::cpu_id();
    let hitters: Vec<usize> = tracing_cpus().filter(|&c| c != me).take(3).collect();
    let stop = Arc::new(core::sync::atomic::AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let (s, d, e) = (stop.clone(), done.clone(), ev.clone());
    crate::smp::smp_call_function_many(
        hitters.iter().copied(),
        Arc::new(move || {
            let mut i = 0u64;
            while !s.load(Ordering::Acquire) {
                hit(&e, i % 64, if i.is_multiple_of(3) { "x" } else { "y" });
                i += 1;
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    for round in 0..ROUNDS {
        append(path, "hist:keys=value:size=256").unwrap();
        append(path, "hist:keys=name:vals=value").unwrap();
        hit(&ev, 1, "m");
        append(path, "hist:keys=value:size=256:clear").unwrap();
        let text = read_all("events/ktesth/churn/hist");
        // Every entry line is whole, whatever raced with it.
        for l in text.lines().filter(|l| l.starts_with('{')) {
            assert!(
                l.starts_with("{ value: ") || l.starts_with("{ name: "),
                "round {round}: {l}"
            );
        }
        append(path, "!hist:keys=value:size=256").unwrap();
        if round.is_multiple_of(2) {
            append(path, "!hist:keys=name:vals=value").unwrap();
        } else {
            // O_TRUNC removes every hist trigger at once.
            write(path, "").ok();
        }
    }
    stop.store(true, Ordering::Release);
    while done.load(Ordering::Acquire) < hitters.len() {
        core::hint::spin_loop();
    }
    assert_eq!(read_all("events/ktesth/churn/hist"), "");
    append(path, "hist:keys=value:size=256").unwrap();
    append(path, "hist:keys=value:size=256:clear").unwrap();
    for i in 0..AFTER {
        hit(&ev, i % 10, "m");
    }
    let text = read_all("events/ktesth/churn/hist");
    assert!(
        text.ends_with(&alloc::format!(
            "Totals:\n    Hits: {AFTER}\n    Entries: 10\n    Dropped: 0\n"
        )),
        "{text}"
    );
    for v in 0..10 {
        let line = alloc::format!("{{ value: {v:>10} }} hitcount: {:>10}\n", AFTER / 10);
        assert!(text.contains(&line), "{line} in {text}");
    }
    remove(&ev);
}
