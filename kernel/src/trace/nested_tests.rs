//! In-kernel tests of nested writes: an event recorded while another
//! writer on the same CPU is between reserve and commit (what an
//! interrupt does to a writer running with interrupts on) is recorded
//! after it with the time it happened, and dropped and counted only when
//! the CPU's deferred slots are full or it does not fit one.

use super::test_files::{read_all, write};
use super::*;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use ktest_macros::kernel_test;

/// Records a `trace_marker` event (`ftrace/print`) with `text` in `tr`,
/// as [`trace_marker_record`] lays it out, running `inside` while the
/// write is open (after the entry is filled, before its commit).
fn print_event(tr: &TraceArray, text: &[u8], inside: impl FnOnce()) -> bool {
    let ip = tracing_mark_write as *const () as u64;
    let len = 8 + text.len().max(9) + 2;
    trace_event_write(tr, TRACE_PRINT, len, |f| {
        f[..8].copy_from_slice(&ip.to_le_bytes());
        f[8..8 + text.len()].copy_from_slice(text);
        f[8 + text.len()] = b'\n';
        inside();
        true
    })
}

/// The markers of CPU `cpu`'s `trace`, with their time stamps (in
/// microseconds), in the order the file shows them.
fn markers(cpu: usize) -> Vec<(u64, String)> {
    read_all(&format!("per_cpu/cpu{cpu}/trace"))
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (head, text) = l.split_once(": tracing_mark_write: ")?;
            let (secs, usecs) = head.split_whitespace().last()?.split_once('.')?;
            let ts = secs.parse::<u64>().ok()? * 1_000_000 + usecs.parse::<u64>().ok()?;
            Some((ts, String::from(text)))
        })
        .collect()
}

fn dropped_events(cpu: usize) -> u64 {
    read_all(&format!("per_cpu/cpu{cpu}/stats"))
        .lines()
        .find_map(|l| l.strip_prefix("dropped events: ")?.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

/// Spins until `tr`'s clock has moved on by `ns`.
fn spin_ns(tr: &TraceArray, ns: u64) {
    let start = tr.clock_now();
    while tr.clock_now().wrapping_sub(start) < ns {
        core::hint::spin_loop();
    }
}

#[kernel_test]
fn event_nested_in_an_open_write_is_recorded_after_it_with_its_own_time() {
    let tr = global_trace();
    // Kernel code is not preempted: this test stays on this CPU.
    let cpu = crate::percpu::this_cpu();
    write("trace", "").unwrap();
    assert!(print_event(tr, b"outer event", || {
        // As an interrupt would: a write while this one is open.
        assert!(print_event(tr, b"nested event", || {}));
        // The outer commit comes 2 ms after the nested event happened.
        spin_ns(tr, 2_000_000);
    }));
    assert!(print_event(tr, b"after event", || {}));
    let m = markers(cpu);
    let texts: Vec<&str> = m.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["outer event", "nested event", "after event"]);
    // Stamped when it happened, not when it was moved into the buffer.
    assert!(m[1].0 >= m[0].0, "{m:?}");
    assert!(m[2].0 >= m[1].0 + 1_500, "{m:?}");
    assert_eq!(dropped_events(cpu), 0);
    write("trace", "").unwrap();
}

#[kernel_test]
fn nested_events_beyond_the_deferred_slots_or_too_large_are_dropped_and_counted() {
    let tr = global_trace();
    let cpu = crate::percpu::this_cpu();
    write("trace", "").unwrap();
    let big = [b'x'; ring_buffer::nested::SLOT_BYTES];
    assert!(print_event(tr, b"outer event", || {
        // Too large for a slot: dropped, the slots untouched.
        assert!(!print_event(tr, &big, || {}));
        for i in 0..ring_buffer::nested::SLOTS {
            assert!(print_event(tr, format!("nested {i}").as_bytes(), || {}));
        }
        assert!(!print_event(tr, b"one too many", || {}));
    }));
    let m = markers(cpu);
    let texts: Vec<&str> = m.iter().map(|(_, t)| t.as_str()).collect();
    let mut want = alloc::vec![String::from("outer event")];
    want.extend((0..ring_buffer::nested::SLOTS).map(|i| format!("nested {i}")));
    assert_eq!(texts, want);
    assert!(m.windows(2).all(|w| w[1].0 >= w[0].0), "{m:?}");
    assert_eq!(dropped_events(cpu), 2);
    // The slots are free again.
    assert!(print_event(tr, b"outer again", || {
        assert!(print_event(tr, b"nested again", || {}));
    }));
    assert_eq!(markers(cpu).len(), 3 + ring_buffer::nested::SLOTS);
    write("trace", "").unwrap();
    assert_eq!(dropped_events(cpu), 0);
}
