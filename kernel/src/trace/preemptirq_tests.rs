//! In-kernel tests of the `preemptirq` events and of the context columns
//! every entry carries: a known section of masked interrupts (disabled
//! preemption) gives one disable/enable pair naming the function that
//! masked and its caller, with the preemption depth recorded, and an event
//! recorded through the slow path (a filter) shows its caller's state, not
//! the path's own masking.

use super::latency_tests::lat_test_section_caller;
use super::test_files::{read_all, write};
use super::tracepoint::preemptirq::{trace_irq_disable, STEXT};
use alloc::string::String;
use alloc::vec::Vec;
use ktest_macros::kernel_test;

/// How long the known sections last here.
const SECTION_NS: u64 = 1_000_000;

fn reset(events: &[&str]) {
    for e in events {
        write(&alloc::format!("events/preemptirq/{e}/enable"), "0").expect("disable");
        write(&alloc::format!("events/preemptirq/{e}/filter"), "0").expect("clear filter");
    }
    write("current_tracer", "nop").expect("nop");
    write("tracing_on", "1").expect("tracing_on");
    write("trace", "").expect("clear");
}

/// The lines of `trace` from CPU `cpu` that are `preemptirq` events.
fn cpu_lines(cpu: usize) -> Vec<String> {
    let tag = alloc::format!("[{cpu:03}]");
    read_all("trace")
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(&tag))
        .filter(|l| {
            ["irq_disable: ", "irq_enable: ", "preempt_disable: ", "preempt_enable: "]
                .iter()
                .any(|e| l.contains(e))
        })
        .map(String::from)
        .collect()
}

/// The five context characters of a `trace` line (after `[CPU] `), the
/// need-resched one masked (a tick may find the test's slice used up).
fn context_columns(line: &str) -> String {
    let at = line.find("] ").expect("cpu column") + 2;
    line[at..at + 5]
        .char_indices()
        .map(|(i, c)| if i == 1 && "Nnp".contains(c) { '.' } else { c })
        .collect()
}

/// Runs the known section (`preempt` or masked interrupts) with `events`
/// on, and returns its two lines: the first of `off` naming the section's
/// function, and the next event line of the CPU.
fn section_pair(events: &[&str], preempt: bool, off: &str) -> (String, String) {
    assert_eq!(crate::preempt::preempt_count(), 0, "preemption count leaked");
    super::tracefs::tracefs();
    reset(events);
    for e in events {
        write(&alloc::format!("events/preemptirq/{e}/enable"), "1").expect("enable");
    }
    // The section runs on this CPU: nothing here sleeps between.
    let irq = arch::cpu::local_irq_save();
    let cpu = arch::cpu::cpu_id();
    arch::cpu::local_irq_restore(irq);
    lat_test_section_caller(preempt, SECTION_NS);
    for e in events {
        write(&alloc::format!("events/preemptirq/{e}/enable"), "0").expect("disable");
    }
    let lines = cpu_lines(cpu);
    let func = if preempt {
        "lat_test_preempt_off+"
    } else {
        "lat_test_irqs_off+"
    };
    let want = alloc::format!("{off}: caller={func}");
    let i = lines
        .iter()
        .position(|l| l.contains(&want))
        .unwrap_or_else(|| panic!("no {want} on cpu {cpu}:\n{}", lines.join("\n")));
    let next = lines.get(i + 1).cloned().unwrap_or_default();
    reset(events);
    (lines[i].clone(), next)
}

#[kernel_test]
fn irqs_off_section_records_matched_disable_enable_pair_naming_its_caller() {
    let (off, on) = section_pair(&["irq_disable", "irq_enable"], false, "irq_disable");
    assert!(off.contains(" parent=lat_test_section_caller+"), "{off}");
    assert!(
        on.contains("irq_enable: caller=lat_test_irqs_off+") && on.contains(" parent=lat_test_section_caller+"),
        "the section's disable is not followed by its enable:\n{off}\n{on}"
    );
    // Both are recorded with interrupts masked, as on Linux.
    assert!(context_columns(&off).starts_with('d'), "{off}");
    assert!(context_columns(&on).starts_with('d'), "{on}");
}

#[kernel_test]
fn preempt_off_section_records_matched_pair_with_its_preempt_depth() {
    let (off, on) = section_pair(&["preempt_disable", "preempt_enable"], true, "preempt_disable");
    assert!(off.contains(" parent=lat_test_section_caller+"), "{off}");
    assert!(
        on.contains("preempt_enable: caller=lat_test_preempt_off+") && on.contains(" parent=lat_test_section_caller+"),
        "the section's disable is not followed by its enable:\n{off}\n{on}"
    );
    // The caller had interrupts on and preemption disabled once: the
    // hooks' own masking does not show, the depth does.
    assert_eq!(context_columns(&off), "...1.", "{off}");
    assert_eq!(context_columns(&on), "...1.", "{on}");
}

#[kernel_test]
fn filtered_event_shows_its_callers_context_not_the_slow_paths() {
    super::tracefs::tracefs();
    reset(&["irq_disable"]);
    // Only the call below passes the filter, which sends the event through
    // the slow path (scratch entry under a lock, interrupts masked).
    let offs = 0x123;
    write(
        "events/preemptirq/irq_disable/filter",
        &alloc::format!("caller_offs == {offs}"),
    )
    .expect("filter");
    write("events/preemptirq/irq_disable/enable", "1").expect("enable");
    assert!(!arch::cpu::irqs_disabled());
    assert_eq!(crate::preempt::preempt_count(), 0);
    trace_irq_disable(STEXT + offs, STEXT + offs);
    crate::preempt::preempt_disable();
    crate::preempt::preempt_disable();
    trace_irq_disable(STEXT + offs, STEXT + offs);
    crate::preempt::preempt_enable();
    crate::preempt::preempt_enable();
    write("events/preemptirq/irq_disable/enable", "0").expect("disable");
    let text = read_all("trace");
    reset(&["irq_disable"]);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("irq_disable: ")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(context_columns(lines[0]), ".....", "{text}");
    assert_eq!(context_columns(lines[1]), "...2.", "{text}");
}

#[kernel_test]
fn preemptirq_events_switch_their_hooks_with_them() {
    super::tracefs::tracefs();
    reset(&["irq_disable", "preempt_enable"]);
    let irq_refs = super::trace_preemptirq::trace_irqflags_key.count();
    let preempt_refs = crate::preempt::TRACE_PREEMPT_KEY.count();
    write("events/preemptirq/irq_disable/enable", "1").expect("enable");
    write("events/preemptirq/preempt_enable/enable", "1").expect("enable");
    assert_eq!(super::trace_preemptirq::trace_irqflags_key.count(), irq_refs + 1);
    assert_eq!(crate::preempt::TRACE_PREEMPT_KEY.count(), preempt_refs + 1);
    reset(&["irq_disable", "preempt_enable"]);
    assert_eq!(super::trace_preemptirq::trace_irqflags_key.count(), irq_refs);
    assert_eq!(crate::preempt::TRACE_PREEMPT_KEY.count(), preempt_refs);
}
