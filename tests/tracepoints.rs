//! Linux's core trace events (sched, raw_syscalls, syscalls, signal,
//! task, kmem, irq, ipi, timer) seen from a shell: their `format` files are
//! Linux 6.12's (`tracepoints/formats.golden` and `more_formats.golden`,
//! captured from reflinux, IDs masked), a
//! known workload (fork, exec, a fatal signal, exit, reaping) leaves
//! Linux's trace lines (`tracepoints/workload.golden`, pids and the context
//! columns masked), the slab caches' `/proc/slabinfo` and
//! `kmem_cache_alloc`/`kmem_cache_free` lines for path names, queued
//! signals and tasks are Linux's (`tracepoints/slab.golden`), and every `sched`
//! event on four busy CPUs gives well-formed lines. When ../shared/reflinux is there, real Linux must
//! print the same.

use e2e::{busybox, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const FORMATS: &str = include_str!("tracepoints/formats.golden");
const WORKLOAD: &str = include_str!("tracepoints/workload.golden");
const MORE_FORMATS: &str = include_str!("tracepoints/more_formats.golden");
const SLAB: &str = include_str!("tracepoints/slab.golden");

/// The other events whose `format` files `more_formats.golden` holds.
const MORE_EVENTS: &str = "sched/sched_wakeup sched/sched_process_exec sched/sched_process_exit \
    sched/sched_process_wait raw_syscalls/sys_exit syscalls/sys_exit_openat syscalls/sys_enter_execve \
    syscalls/sys_enter_clone syscalls/sys_enter_getpid signal/signal_deliver task/task_rename kmem/kmalloc \
    kmem/kfree kmem/kmem_cache_alloc kmem/kmem_cache_free kmem/mm_page_alloc kmem/mm_page_free \
    irq/irq_handler_entry irq/irq_handler_exit ipi/ipi_raise ipi/ipi_entry ipi/ipi_exit timer/hrtimer_start \
    timer/hrtimer_expire_entry timer/hrtimer_expire_exit timer/hrtimer_cancel timer/timer_start \
    timer/timer_expire_entry timer/timer_expire_exit timer/timer_cancel rseq/rseq_update rseq/rseq_ip_fixup";

fn script(name: &str) -> PathBuf {
    root().join("tests/tracepoints").join(name)
}

#[test]
fn core_event_format_files_are_linuxs() {
    let files = [busybox(), script("formats.sh")];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/formats.sh", 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, FORMATS);
    let Some(linux) = reflinux_stdout("2", 120, &files, "busybox sh /bin/formats.sh") else {
        return;
    };
    assert_eq!(linux, FORMATS, "real Linux differs");
}

#[test]
fn kmem_irq_ipi_timer_and_other_core_format_files_are_linuxs() {
    let files = [busybox(), script("formats.sh")];
    let cmds = format!("EVENTS='{MORE_EVENTS}' busybox sh /bin/formats.sh");
    let (out, code) = run_commands(&["--smp", "2"], &files, &cmds, 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, MORE_FORMATS);
    let Some(linux) = reflinux_stdout("2", 120, &files, &cmds) else {
        return;
    };
    assert_eq!(linux, MORE_FORMATS, "real Linux differs");
}

#[test]
fn slab_caches_show_in_slabinfo_and_their_events_name_cache_and_caller() {
    let files = [busybox(), script("slab.sh")];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/slab.sh", 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, SLAB);
    let Some(linux) = reflinux_stdout("2", 120, &files, "busybox sh /bin/slab.sh") else {
        return;
    };
    assert_eq!(linux, SLAB, "real Linux differs");
}

/// The event text of a `trace` line (what follows `TIMESTAMP: `), or None
/// for a line that is not an entry.
fn event_text(line: &str) -> Option<&str> {
    let after = &line[line.find("] ")? + 2..];
    Some(&after[after.find(": ")? + 2..])
}

/// `text` with every decimal number equal to one of `pids` replaced by its
/// name.
fn mask_pids(text: &str, pids: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        match pids.iter().find(|(n, _)| *n == run.as_str()) {
            Some((_, name)) => out.push_str(name),
            None => out.push_str(run),
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// The workload's output with pids named (`SHELL`, `CHILD`) and the
/// context columns of the trace dropped.
fn masked_workload(out: &str) -> String {
    let pids_line = out.lines().find(|l| l.starts_with("pids ")).expect("pids line");
    let mut it = pids_line.split_whitespace().skip(1);
    let (shell, child) = (it.next().expect("shell pid"), it.next().expect("child pid"));
    let pids = [(shell, "SHELL"), (child, "CHILD")];
    let mut s = String::new();
    for line in out.lines().filter(|l| !l.starts_with("pids ")) {
        let text = event_text(line).unwrap_or(line);
        s.push_str(&mask_pids(text, &pids));
        s.push('\n');
    }
    s
}

#[test]
fn fork_exec_fatal_signal_and_exit_leave_linuxs_trace_lines() {
    let files = [busybox(), script("workload.sh")];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/workload.sh", 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(masked_workload(&out), WORKLOAD, "{out}");
    let Some(linux) = reflinux_stdout("2", 120, &files, "busybox sh /bin/workload.sh") else {
        return;
    };
    assert_eq!(masked_workload(&linux), WORKLOAD, "real Linux differs:\n{linux}");
}

/// Whether `text` is a well-formed line of a `sched` event: its name, then
/// exactly the fields of its `print fmt`, each with a value.
fn well_formed_sched(text: &str) -> bool {
    let Some((event, fields)) = text.split_once(": ") else {
        return false;
    };
    let keys: &[&str] = match event {
        "sched_switch" => &[
            "prev_comm",
            "prev_pid",
            "prev_prio",
            "prev_state",
            "==>",
            "next_comm",
            "next_pid",
            "next_prio",
        ],
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => &["comm", "pid", "prio", "target_cpu"],
        "sched_process_fork" => &["comm", "pid", "child_comm", "child_pid"],
        "sched_process_exec" => &["filename", "pid", "old_pid"],
        "sched_process_exit" | "sched_process_free" | "sched_process_wait" => &["comm", "pid", "prio"],
        "sched_migrate_task" => &["comm", "pid", "prio", "orig_cpu", "dest_cpu"],
        _ => return false,
    };
    // Values may be empty or hold spaces only for comm and filename, so
    // check each key in order and that numeric fields are numbers.
    let mut rest = fields;
    for (i, key) in keys.iter().enumerate() {
        if *key == "==>" {
            let Some(r) = rest.strip_prefix("==> ") else {
                return false;
            };
            rest = r;
            continue;
        }
        let Some(r) = rest.strip_prefix(&format!("{key}=")) else {
            return false;
        };
        let end = match keys.get(i + 1) {
            Some(next) if *next == "==>" => r.find(" ==> "),
            Some(next) => r.find(&format!(" {next}=")),
            None => Some(r.len()),
        };
        let Some(end) = end else { return false };
        let value = &r[..end];
        let numeric = key.ends_with("pid") || key.ends_with("prio") || key.ends_with("cpu");
        if numeric && value.parse::<i64>().is_err() {
            return false;
        }
        if *key == "prev_state" && !value.chars().all(|c| "RSDTtXZPI|+".contains(c)) {
            return false;
        }
        rest = r[end..].strip_prefix(' ').unwrap_or(&r[end..]);
    }
    rest.is_empty()
}

#[test]
fn every_sched_event_on_four_busy_cpus_gives_well_formed_lines() {
    let files = [busybox(), script("busy.sh")];
    let (out, code) = run_commands(&["--smp", "4"], &files, "busybox sh /bin/busy.sh", 120);
    assert_eq!(code, 0, "{out}");
    let mut seen = std::collections::BTreeSet::new();
    let mut cpus = std::collections::BTreeSet::new();
    let mut n = 0;
    for line in out.lines() {
        let text = event_text(line).unwrap_or_else(|| panic!("not a trace line: {line:?}\n{out}"));
        assert!(well_formed_sched(text), "malformed: {line:?}");
        let cpu = line.split_once('[').and_then(|(_, r)| r.get(..3)).expect("cpu column");
        cpus.insert(cpu.to_string());
        seen.insert(text.split(':').next().unwrap_or("").to_string());
        n += 1;
    }
    assert!(n > 500, "only {n} lines");
    for e in [
        "sched_switch",
        "sched_waking",
        "sched_wakeup",
        "sched_wakeup_new",
        "sched_process_fork",
        "sched_process_exec",
        "sched_process_exit",
        "sched_process_free",
        "sched_process_wait",
        "sched_migrate_task",
    ] {
        assert!(seen.contains(e), "no {e} in {seen:?}");
    }
    assert_eq!(cpus.len(), 4, "lines from {cpus:?}");
}

/// Debian's static busybox registers an rseq area (glibc does at start):
/// `rseq_update` fires on its returns to user after a switch, with a CPU
/// the guest has and `node_id=0`, here as on Linux.
#[test]
fn rseq_update_fires_for_a_glibc_program_with_its_cpu() {
    let cmds = "cd /sys/kernel/tracing && echo 1 > events/rseq/rseq_update/enable && \
        busybox sh -c 'busybox true; busybox true' && echo 0 > events/rseq/rseq_update/enable && \
        busybox grep -o 'rseq_update: .*' trace | busybox sort -u";
    let check = |who: &str, out: &str| {
        let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("rseq_update: ")).collect();
        assert!(!lines.is_empty(), "{who}: no rseq_update in:\n{out}");
        for l in lines {
            let f: Vec<&str> = l["rseq_update: ".len()..].split(' ').collect();
            assert!(
                f.len() == 3
                    && ["cpu_id=0", "cpu_id=1"].contains(&f[0])
                    && f[1] == "node_id=0"
                    && f[2]
                        .strip_prefix("mm_cid=")
                        .is_some_and(|v| v.parse::<u32>().is_ok_and(|c| c < 2)),
                "{who}: {l:?}"
            );
        }
    };
    let (out, code) = run_commands(&["--smp", "2"], &[busybox()], cmds, 60);
    assert_eq!(code, 0, "{out}");
    check("ours", &out);
    if let Some(linux) = reflinux_stdout("2", 120, &[busybox()], cmds) {
        check("Linux", &linux);
    }
}

#[test]
fn masking_names_pids_and_drops_the_context_columns() {
    let out = "pids 15 155\n\
        \x20        busybox-155     [001] d....     8.7: signal_generate: sig=10 errno=0 code=0 comm=busybox pid=155 grp=1 res=0\n\
        exit=138\n";
    assert_eq!(
        masked_workload(out),
        "signal_generate: sig=10 errno=0 code=0 comm=busybox pid=CHILD grp=1 res=0\nexit=138\n"
    );
    assert!(well_formed_sched(
        "sched_switch: prev_comm=a b prev_pid=1 prev_prio=120 prev_state=R+ ==> next_comm=swapper/0 next_pid=0 next_prio=120"
    ));
    assert!(!well_formed_sched("sched_switch: prev_comm=a prev_pid=x"));
}

/// The figures `toggle.sh` prints: `key value`.
fn toggle_figure<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {key} figure in:\n{out}"))
        .trim()
}

/// Switching the system-call gate and the interrupt-mask hooks (by the
/// events and the irqsoff tracer that hold them) while four CPUs make
/// system calls is sound: no crash, every line whole, every CPU recorded,
/// no task freed with interrupts masked, and once all is off again
/// nothing records.
#[test]
fn toggling_syscall_and_irq_events_while_four_cpus_make_system_calls_stays_sound() {
    // TOGGLE_ROUNDS=20 for the full length; six rounds keep the suite
    // fast and already switch every holder on and off under load.
    let rounds: u32 = match std::env::var("TOGGLE_ROUNDS") {
        Ok(s) => s.parse().expect("TOGGLE_ROUNDS: a number"),
        Err(_) => 6,
    };
    let files = [busybox(), script("toggle.sh")];
    let cmd = format!("ROUNDS={rounds} busybox sh /bin/toggle.sh");
    let (out, code) = run_commands(&["--smp", "4"], &files, &cmd, 240 + 10 * rounds);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("toggle-done\n"), "{out}");
    let lines: u64 = toggle_figure(&out, "lines").parse().expect("lines");
    assert!(lines > 1000, "only {lines} lines:\n{out}");
    assert_eq!(toggle_figure(&out, "malformed"), "0", "{out}");
    let events: Vec<&str> = toggle_figure(&out, "events").split_whitespace().collect();
    for e in ["sys_enter", "sys_exit", "sys_openat", "irq_enable", "irq_disable"] {
        assert!(events.contains(&e), "no {e} among {events:?}");
    }
    assert_eq!(toggle_figure(&out, "cpus"), "4", "{out}");
    assert_eq!(toggle_figure(&out, "irqs-off-frees"), "0", "{out}");
    assert_eq!(
        toggle_figure(&out, "after"),
        "0",
        "records with every event off:\n{out}"
    );
}

/// What `sysexit.sh` must print: the enabling write's exit and the
/// other writes' (the gate tested again at exit), rt_sigreturn's exit as
/// NR -1 and no `syscalls` exit event for it, execve's exit with its
/// number and event, as on Linux.
const SYSEXIT: &str = "caught\n2 sys_exit: NR -1 = X\n5 sys_exit: NR 64 = 2\n1 sys_exit: NR 64 = 7\n\
                       execve exits: 2 events: 2\n";

#[test]
fn syscall_exit_is_traced_for_the_enabling_write_and_as_nr_minus_one_after_sigreturn() {
    let files = [busybox(), script("sysexit.sh")];
    let (out, code) = run_commands(&["--smp", "2"], &files, "busybox sh /bin/sysexit.sh", 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, SYSEXIT);
    let Some(linux) = reflinux_stdout("2", 120, &files, "busybox sh /bin/sysexit.sh") else {
        return;
    };
    assert_eq!(linux, SYSEXIT, "real Linux differs");
}
