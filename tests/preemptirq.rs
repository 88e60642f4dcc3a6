//! The `preemptirq` events (kernel/src/trace/tracepoint/preemptirq.rs) and
//! every event at once.
//!
//! - Their `format` files are Linux 6.12's (`preemptirq/formats.golden`,
//!   written from include/trace/events/preemptirq.h: Debian's kernel is
//!   built without them; IDs masked).
//! - With `irq_disable` and `irq_enable` on while shells run on 4 CPUs,
//!   each CPU's lines alternate disable/enable (the hooks report a masked
//!   section once), all recorded with interrupts masked (`d`).
//! - A known section (the test build's `lat_test_irqs_off`) giving one
//!   matched pair naming its caller is an in-kernel test
//!   (kernel/src/trace/preemptirq_tests.rs, run by `tests/ktest.rs`).
//! - Stress: every event enabled (`echo 1 > events/enable`) on 4 CPUs while
//!   programs run, for 2 s here and 10 s with `PIRQ_STRESS=1`
//!   (`PIRQ_STRESS_SECS=N` for another length): the kernel survives, every
//!   line of `trace` is well formed, and each CPU's losses are counted in
//!   `per_cpu/cpuN/stats` (printed).

use e2e::{busybox, root, run_commands};
use std::path::PathBuf;

const FORMATS: &str = include_str!("preemptirq/formats.golden");

fn script(name: &str) -> PathBuf {
    root().join("tests/preemptirq").join(name)
}

#[test]
fn preemptirq_format_files_are_linuxs() {
    let files = [busybox(), script("formats.sh")];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/formats.sh", 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, FORMATS);
}

#[test]
fn irq_disable_and_enable_alternate_on_each_cpu_and_show_irqs_off() {
    let files = [busybox(), script("pairs.sh")];
    let (out, code) = run_commands(&["--smp", "4"], &files, "busybox sh /bin/pairs.sh", 120);
    assert_eq!(code, 0, "{out}");
    let summary = out
        .lines()
        .find(|l| l.starts_with("lines "))
        .unwrap_or_else(|| panic!("{out}"));
    let figures: Vec<u64> = summary
        .split(' ')
        .skip(1)
        .step_by(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    let [lines, cpus, irqs_on, nosym, twice] = figures[..] else {
        panic!("{out}");
    };
    assert!(lines > 100, "only {lines} lines:\n{out}");
    assert_eq!(cpus, 4, "{out}");
    assert_eq!(irqs_on, 0, "recorded with interrupts on:\n{out}");
    assert_eq!(nosym, 0, "caller not a symbol:\n{out}");
    assert_eq!(twice, 0, "the same event twice in a row on a CPU:\n{out}");
}

/// The figures `stress.sh` prints.
struct StressReport {
    lines: u64,
    malformed: u64,
    /// Lines of `syscalls` events (`sys_NAME(...)`, `sys_NAME -> ...`).
    syscall_lines: u64,
    events: Vec<String>,
    /// Per CPU: (entries, overrun).
    cpus: Vec<(u64, u64)>,
}

fn parse_stress(out: &str) -> StressReport {
    let field = |key: &str| -> u64 {
        out.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key} figure in:\n{out}"))
    };
    let stat = |l: &str, key: &str| -> u64 {
        l.split_once(key)
            .and_then(|(_, r)| r.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {l:?}"))
    };
    let cpus = out
        .lines()
        .filter(|l| l.starts_with("cpu"))
        .map(|l| (stat(l, "entries:"), stat(l, "overrun:")))
        .collect();
    let events = out
        .lines()
        .find_map(|l| l.strip_prefix("events "))
        .unwrap_or("")
        .split_whitespace()
        .map(String::from)
        .collect();
    StressReport {
        lines: field("lines"),
        malformed: field("malformed"),
        syscall_lines: field("syscall_lines"),
        events,
        cpus,
    }
}

#[test]
fn every_event_on_four_busy_cpus_gives_well_formed_records_and_counts_losses() {
    let secs: u64 = match std::env::var("PIRQ_STRESS_SECS") {
        Ok(s) => s.parse().expect("PIRQ_STRESS_SECS: seconds"),
        Err(_) if std::env::var_os("PIRQ_STRESS").is_some() => 10,
        Err(_) => 2,
    };
    let files = [busybox(), script("stress.sh")];
    // Each CPU's buffer holds what the check can read in reasonable time.
    let kb = if secs > 2 { 512 } else { 128 };
    let cmd = format!("SECS={secs} KB={kb} busybox sh /bin/stress.sh");
    let timeout = 240 + 10 * secs as u32;
    let (out, code) = run_commands(&["--smp", "4"], &files, &cmd, timeout);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("stress-done\n"), "{out}");
    let r = parse_stress(&out);
    eprintln!("stress ({secs} s, every event, 4 CPUs):\n{out}");
    assert_eq!(r.malformed, 0, "malformed lines:\n{out}");
    assert!(r.lines > 10_000, "only {} lines:\n{out}", r.lines);
    assert!(r.syscall_lines > 0, "no system call event lines:\n{out}");
    assert_eq!(r.cpus.len(), 4, "{out}");
    assert!(
        r.cpus.iter().all(|&(entries, _)| entries > 0),
        "a CPU recorded nothing:\n{out}"
    );
    // Every kind of source was recorded: tracepoints of each system, the
    // system calls' events, and the preemptirq hooks.
    for e in [
        "sched_switch",
        "sys_enter",
        "irq_handler_entry",
        "kmalloc",
        "kmem_cache_alloc",
        "irq_disable",
        "preempt_enable",
        "sched_process_exec",
    ] {
        assert!(r.events.iter().any(|x| x == e), "no {e} among {:?}", r.events);
    }
    // The buffers are far smaller than what 4 CPUs record: the losses are
    // there, and counted.
    assert!(
        r.cpus.iter().any(|&(_, overrun)| overrun > 0),
        "no overrun counted:\n{out}"
    );
}

#[test]
fn stress_report_parses_the_scripts_figures() {
    let r = parse_stress(
        "cpu0 entries: 5 overrun: 7 dropped events: 0 \ncpu1 entries: 9 overrun: 0 dropped events: 0 \n\
         lines 14\nmalformed 0\nlost 1\nsyscall_lines 3\nevents kmalloc sys_enter \nstress-done\n",
    );
    assert_eq!((r.lines, r.malformed, r.syscall_lines), (14, 0, 3));
    assert_eq!(r.cpus, [(5, 7), (9, 0)]);
    assert_eq!(r.events, ["kmalloc", "sys_enter"]);
}
