//! In-kernel tests of the kprobe event tracer through its tracefs files:
//! a `p:` and an `r:` probe on a test function defined, enabled, hit,
//! printed, counted and removed; Linux's errors for refused definitions.

use super::test_files::write as put;
use super::test_files::{append, open, read_all};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use ktest_macros::kernel_test;
use uapi::fcntl::{O_RDONLY, O_TRUNC, O_WRONLY};
use uapi::Errno;

/// The probed function: not inlined, under a plain name outside the
/// (notrace) tracing modules.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_trace_kprobe_target(a: u64, s: *const u8) -> u64 {
    core::hint::black_box(s);
    core::hint::black_box(a.wrapping_mul(3))
}

fn last_line(path: &str) -> String {
    String::from(read_all(path).lines().last().unwrap_or(""))
}

#[kernel_test]
fn kprobe_event_defined_enabled_hit_printed_counted_and_removed() {
    put("kprobe_events", "").unwrap();
    put("trace", "").unwrap();
    append(
        "kprobe_events",
        "p:ktkp ktest_trace_kprobe_target a=%x0 s=+0(%x1):string\nr:ktkr ktest_trace_kprobe_target ret=$retval arg=$arg1\n",
    )
    .unwrap();
    assert_eq!(
        read_all("kprobe_events"),
        "p:kprobes/ktkp ktest_trace_kprobe_target a=%x0 s=+0(%x1):string\n\
         r10:kprobes/ktkr ktest_trace_kprobe_target ret=$retval arg=$arg1\n"
    );
    // Defined but disabled: a call is not counted.
    ktest_trace_kprobe_target(1, c"x".as_ptr().cast());
    assert!(read_all("kprobe_profile")
        .lines()
        .all(|l| l.split_whitespace().nth(1) == Some("0")));
    put("events/kprobes/enable", "1").unwrap();
    assert_eq!(ktest_trace_kprobe_target(7, c"hello".as_ptr().cast()), 21);
    put("events/kprobes/enable", "0").unwrap();
    let trace = read_all("trace");
    let lines: Vec<&str> = trace.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 2, "{trace}");
    assert!(
        lines[0].contains(" ktkp: (ktest_trace_kprobe_target+0x0/0x") && lines[0].ends_with(") a=0x7 s=\"hello\""),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(" ktkr: (") && lines[1].ends_with(" <- ktest_trace_kprobe_target) ret=21 arg=0x7"),
        "{}",
        lines[1]
    );
    let profile = read_all("kprobe_profile");
    assert_eq!(
        profile,
        alloc::format!(
            "  {:<44} {:>15} {:>15}\n  {:<44} {:>15} {:>15}\n",
            "ktkp",
            1,
            0,
            "ktkr",
            1,
            0
        )
    );
    assert!(read_all("events/kprobes/ktkr/format").contains("\tfield:unsigned long __probe_ret_ip;\toffset:16;"));
    // Disabled again: no more hits.
    ktest_trace_kprobe_target(2, c"y".as_ptr().cast());
    assert_eq!(read_all("kprobe_profile"), profile);
    // Removal while enabled is EBUSY; so is clearing.
    put("events/kprobes/ktkp/enable", "1").unwrap();
    assert_eq!(append("kprobe_events", "-:ktkp"), Err(Errno::EBUSY));
    assert_eq!(open("kprobe_events", O_WRONLY | O_TRUNC).err(), Some(Errno::EBUSY));
    put("events/kprobes/ktkp/enable", "0").unwrap();
    append("kprobe_events", "-:kprobes/ktkp").unwrap();
    assert_eq!(open("events/kprobes/ktkp/id", O_RDONLY).err(), Some(Errno::ENOENT));
    assert_eq!(append("kprobe_events", "-:ktkp"), Err(Errno::ENOENT));
    put("kprobe_events", "").unwrap();
    assert_eq!(read_all("kprobe_events"), "");
    assert_eq!(open("events/kprobes", O_RDONLY).err(), Some(Errno::ENOENT));
    // The event was enabled: removing it cleared the trace, as on Linux.
    assert!(read_all("trace").lines().all(|l| l.starts_with('#')));
}

#[kernel_test]
fn refused_definitions_return_linux_errnos_and_log_linux_errors() {
    put("kprobe_events", "").unwrap();
    put("error_log", "").unwrap();
    // notrace code (here memcpy) is refused as Linux refuses blacklisted
    // addresses.
    assert_eq!(append("kprobe_events", "p:bl memcpy"), Err(Errno::EINVAL));
    assert_eq!(read_all("error_log").lines().nth(1), Some("  Command: p:bl memcpy"));
    assert!(read_all("error_log").contains("trace_kprobe: error: Failed to register probe event\n"));
    assert_eq!(
        append(
            "kprobe_events",
            "p:ok ktest_trace_kprobe_target\np:bad ktest_trace_kprobe_target %x99\n"
        ),
        Err(Errno::EINVAL)
    );
    // The first command of the write took effect.
    assert_eq!(read_all("kprobe_events"), "p:kprobes/ok ktest_trace_kprobe_target\n");
    let caret = "  Command: p:bad ktest_trace_kprobe_target ".len();
    assert_eq!(last_line("error_log"), alloc::format!("{:caret$}^", ""));
    assert_eq!(
        append("kprobe_events", "r:ok ktest_trace_kprobe_target"),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        append("kprobe_events", "p:x no_such_function_anywhere"),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        append("kprobe_events", "z:x ktest_trace_kprobe_target"),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        append("dynamic_events", "z:x ktest_trace_kprobe_target"),
        Err(Errno::EINVAL)
    );
    assert_eq!(read_all("dynamic_events"), "p:kprobes/ok ktest_trace_kprobe_target\n");
    put("dynamic_events", "").unwrap();
    assert_eq!(read_all("kprobe_events"), "");
    put("error_log", "").unwrap();
}

/// Hits of probe `name` in `kprobe_profile`.
fn profile_hits(name: &str) -> u64 {
    read_all("kprobe_profile")
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(name)).then(|| w.next().and_then(|h| h.parse().ok()))?
        })
        .unwrap_or(0)
}

#[kernel_test]
fn hits_on_three_cpus_while_events_come_and_go_are_all_recorded() {
    use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let me = arch::cpu::cpu_id();
    let workers: Vec<usize> = super::tracing_cpus().filter(|&c| c != me).take(3).collect();
    if workers.is_empty() {
        return;
    }
    put("kprobe_events", "").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let (s, d) = (stop.clone(), done.clone());
    // Callers on the other CPUs, in cross-call context: they serve the
    // stop_machine rendezvous that arming and disarming need.
    crate::smp::smp_call_function_many(
        workers.iter().copied(),
        Arc::new(move || {
            let cpu = arch::cpu::cpu_id() as u64;
            while !s.load(Ordering::Acquire) {
                ktest_trace_kprobe_target(cpu, c"ok".as_ptr().cast());
                crate::smp::flush_pending_calls();
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    let spin = |us: u64| {
        let end = crate::printk::uptime_ns() + us * 1000;
        while crate::printk::uptime_ns() < end {
            core::hint::spin_loop();
        }
    };
    for cycle in 0..12 {
        put("trace", "").unwrap();
        append(
            "kprobe_events",
            "p:kts ktest_trace_kprobe_target a=%x0 s=+0(%x1):string",
        )
        .unwrap();
        if cycle % 2 == 1 {
            append("kprobe_events", "r:ktsr ktest_trace_kprobe_target ret=$retval").unwrap();
        }
        put("events/kprobes/enable", "1").unwrap();
        // At least 2 ms of hits; longer if the other CPUs' callers are
        // slow to run (a loaded host may hold their vCPUs for a while).
        spin(2000);
        for _ in 0..1000 {
            if profile_hits("kts") > 0 {
                break;
            }
            spin(2000);
        }
        put("events/kprobes/enable", "0").unwrap();
        let hits = profile_hits("kts");
        let (_, written) = super::global_trace().total_entries();
        assert!(hits > 0, "cycle {cycle}: no hits");
        if cycle % 2 == 0 {
            // Every hit of an armed probe is recorded, none after.
            assert_eq!(written, hits, "cycle {cycle}");
        } else {
            assert!(
                written >= hits && written <= hits + profile_hits("ktsr"),
                "cycle {cycle}"
            );
        }
        if cycle == 11 {
            let trace = read_all("trace");
            let mut n = 0;
            for l in trace.lines().filter(|l| l.contains(" kts: ")) {
                let ok = workers
                    .iter()
                    .any(|c| l.ends_with(&alloc::format!(" a=0x{c:x} s=\"ok\"")));
                assert!(ok, "corrupted record: {l}");
                n += 1;
            }
            assert!(n > 0);
        }
        put("kprobe_events", "").unwrap();
    }
    stop.store(true, Ordering::Release);
    while done.load(Ordering::Acquire) < workers.len() {
        core::hint::spin_loop();
    }
    put("trace", "").unwrap();
}

/// The probed function of the one-step `p:` record test.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_trace_kprobe_hot(a: u64) -> u64 {
    // Code of its own, so that the linker folds no other function into it.
    core::hint::black_box(a.wrapping_mul(0x9e37_79b9).rotate_left(7) ^ 0x5a5a)
}

/// The `hot:` lines of `trace`, as (timestamp in ns, line).
fn hot_lines() -> Vec<(u64, String)> {
    read_all("trace")
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" hot: ("))
        .map(|l| {
            let ts = l
                .split(": hot:")
                .next()
                .and_then(|h| h.rsplit(' ').next())
                .unwrap_or("");
            let (s, us) = ts.split_once('.').unwrap_or(("", ""));
            let ns = s.parse::<u64>().unwrap_or(0) * 1_000_000_000 + us.parse::<u64>().unwrap_or(0) * 1000;
            (ns, String::from(l))
        })
        .collect()
}

#[kernel_test]
fn a_plain_entry_event_records_every_hit_across_pages_and_past_its_declines() {
    const HITS: u64 = 1000;
    put("kprobe_events", "").unwrap();
    put("trace", "").unwrap();
    put("set_event_pid", "").unwrap();
    append("kprobe_events", "p:hot ktest_trace_kprobe_hot\n").unwrap();
    put("events/kprobes/hot/enable", "1").unwrap();
    // An entry probe without arguments: the event's own callsite, whose
    // record is written in one step (20 bytes, so about 200 a page: these
    // hits change pages several times, which the one-step write declines).
    // Kernel code stays on its CPU, so one buffer holds them all.
    for i in 0..HITS {
        ktest_trace_kprobe_hot(i);
    }
    // A pid list the one-step write leaves to the full path: this task is
    // on it, so its hits are recorded all the same.
    // The pid its records carry (0 for an idle task, as Linux's).
    let me = match crate::sched::try_current() {
        Some(t) if !t.is_idle() => t.tid(),
        _ => 0,
    };
    put("set_event_pid", &alloc::format!("{me}")).unwrap();
    for i in 0..10 {
        ktest_trace_kprobe_hot(i);
    }
    // Not on it: counted as hits, not recorded (as Linux's nhit counts).
    put("set_event_pid", &alloc::format!("{}", me + 1)).unwrap();
    for i in 0..10 {
        ktest_trace_kprobe_hot(i);
    }
    put("set_event_pid", "").unwrap();
    put("events/kprobes/hot/enable", "0").unwrap();
    let lines = hot_lines();
    assert_eq!(lines.len() as u64, HITS + 10, "every traced hit has its line");
    for (ts, l) in &lines {
        assert!(*ts > 0 && l.contains(" hot: (ktest_trace_kprobe_hot+0x0/0x"), "{l}");
    }
    assert!(
        lines.windows(2).all(|w| w[0].0 <= w[1].0),
        "timestamps never go back on one CPU"
    );
    let profile = read_all("kprobe_profile");
    assert_eq!(profile, alloc::format!("  {:<44} {:>15} {:>15}\n", "hot", HITS + 20, 0));
    put("kprobe_events", "").unwrap();
    put("trace", "").unwrap();
}

/// Each setting behind the trace array's gate closes it, and the hits of
/// the one-step write's probe then go the full path, which honours the
/// setting; undone, the gate opens again.
#[kernel_test]
fn each_setting_behind_the_arrays_gate_closes_it_and_its_hits_honour_it() {
    let tr = super::global_trace();
    put("kprobe_events", "").unwrap();
    put("trace", "").unwrap();
    append("kprobe_events", "p:hot ktest_trace_kprobe_hot\n").unwrap();
    put("events/kprobes/hot/enable", "1").unwrap();
    assert!(tr.fast_gate_open(), "open with Linux's defaults");
    let me = match crate::sched::try_current() {
        Some(t) if !t.is_idle() => t.tid(),
        _ => 0,
    };
    let mask = read_all("tracing_cpumask");
    let all = u64::from_str_radix(mask.trim(), 16).unwrap();
    let without_me = all & !(1u64 << crate::percpu::this_cpu());
    // (file, what closes the gate, what opens it again, lines of 3 hits)
    let cases = [
        ("tracing_on", String::from("0"), String::from("1"), 0),
        (
            "tracing_cpumask",
            alloc::format!("{without_me:x}"),
            alloc::format!("{all:x}"),
            0,
        ),
        ("trace_clock", String::from("counter"), String::from("local"), 3),
        ("options/stacktrace", String::from("1"), String::from("0"), 3),
        ("options/record-tgid", String::from("1"), String::from("0"), 3),
        ("set_event_notrace_pid", alloc::format!("{}", me + 1), String::new(), 3),
        ("set_event_pid", alloc::format!("{}", me + 1), String::new(), 0),
    ];
    for (file, close, open_again, lines) in &cases {
        put(file, close).unwrap();
        assert!(!tr.fast_gate_open(), "{file} {close} closes the gate");
        put("trace", "").unwrap();
        for i in 0..3 {
            ktest_trace_kprobe_hot(i);
        }
        let text = read_all("trace");
        let hot = text.lines().filter(|l| l.contains(" hot: (")).count();
        assert_eq!(hot, *lines, "{file} {close}:\n{text}");
        if *file == "options/stacktrace" {
            assert!(
                text.contains("=> ktest_trace_kprobe_hot"),
                "a stack after each entry:\n{text}"
            );
        }
        put(file, open_again).unwrap();
        assert!(tr.fast_gate_open(), "{file} {open_again} opens it again");
    }
    put("events/kprobes/hot/enable", "0").unwrap();
    put("kprobe_events", "").unwrap();
    put("trace", "").unwrap();
}
