//! Debian's trace-cmd (dynamically linked, with libtracefs and
//! libtraceevent; `scripts/setup.sh --print-trace-cmd` packs it) records a
//! static workload (tests/trace_cmd/tcmdload.c: five getpid calls, each
//! followed by a short sleep) three ways and reports each recording:
//! `record -e sched_switch -e syscalls:sys_enter_getpid`, `record -B
//! tcmdinst -e syscalls:sys_enter_getpid` (into an instance), `record -p
//! function -l __arm64_sys_getpid`, `record -e kprobes` with a `p:` probe
//! on `__arm64_sys_getpid` (tests/trace_cmd/record.sh). That exercises
//! what trace-cmd needs of tracefs: `trace_pipe_raw` pages spliced and
//! read, `events/header_page`, event `format` files, `saved_cmdlines`,
//! `tracing_on`, `set_ftrace_filter`, `kprobe_events`, the sysctls it
//! sets, select(2) and splice(2) (whose wakeups `buffer_percent` sets; the
//! script checks that file first). Then perf-tools' `kprobe` script
//! (Debian's bash) traces the workload. (Its `funccount` is not run: it
//! needs the function profiler, which Debian's Linux lacks and this kernel
//! has, so the two cannot be compared.) Last, trace-cmd's `list -e`,
//! `start` and `show`, `stat` and `reset` on a kprobe event.
//!
//! The reports, masked (pids, CPUs, times, addresses; of the other tasks'
//! lines and of sched_switch events, which depend on timing, only their
//! shape is checked), must equal
//! tests/trace_cmd/report.golden, which is what real Linux prints; when
//! ../shared/reflinux is there, Linux's own run is checked against it too.

use e2e::{reflinux_unpacking, root, run_commands_with_roots, setup_path};
use std::path::PathBuf;
use std::process::Command;

const GOLDEN: &str = include_str!("trace_cmd/report.golden");
const COMMANDS: &str = "busybox sh /bin/record.sh";
/// The workload's name, as reports print it.
const WORKLOAD: &str = "tcmdload";

/// tests/trace_cmd/tcmdload.c built with `aarch64-linux-gnu-gcc -static`
/// (scripts/setup.sh installs the compiler) into target/trace-cmd-tests.
fn workload() -> PathBuf {
    let dir = root().join("target/trace-cmd-tests");
    std::fs::create_dir_all(&dir).expect("create target/trace-cmd-tests");
    let out = dir.join(WORKLOAD);
    let st = Command::new("aarch64-linux-gnu-gcc")
        .args(["-static", "-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(root().join("tests/trace_cmd/tcmdload.c"))
        .status()
        .expect("run aarch64-linux-gnu-gcc (scripts/setup.sh installs it)");
    assert!(st.success(), "building tests/trace_cmd/tcmdload.c failed");
    out
}

/// One event line of `trace-cmd report` (`COMM-PID [CPU] TS: EVENT:
/// BODY`) or of tracefs's `trace` (the same with the flags column after
/// the CPU, as perf-tools prints it).
struct ReportLine<'a> {
    /// The instance an event of a `record -B` recording came from
    /// (`NAME:` before the task).
    buffer: Option<&'a str>,
    comm: &'a str,
    flags: Option<&'a str>,
    ts: &'a str,
    event: &'a str,
    body: &'a str,
}

/// Splits an event line; None for any other line.
fn parse_line(line: &str) -> Option<ReportLine<'_>> {
    let (task, rest) = line.trim_start().split_once(" [")?;
    let (buffer, task) = match task.split_once(": ") {
        Some((b, t)) if !b.contains(' ') => (Some(b), t.trim_start()),
        _ => (None, task),
    };
    let (comm, pid) = task.trim_end().rsplit_once('-')?;
    pid.parse::<u32>().ok()?;
    let (cpu, rest) = rest.split_once("] ")?;
    cpu.parse::<u32>().ok()?;
    let rest = rest.trim_start();
    let (flags, rest) = match rest.split_once(' ') {
        Some((f, r)) if !f.starts_with(|c: char| c.is_ascii_digit()) => (Some(f), r.trim_start()),
        _ => (None, rest),
    };
    let (ts, rest) = rest.split_once(": ")?;
    let (secs, usecs) = ts.split_once('.')?;
    if !secs.bytes().chain(usecs.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (event, body) = rest.split_once(':')?;
    Some(ReportLine {
        buffer,
        comm,
        flags,
        ts,
        event,
        body: body.trim(),
    })
}

/// `comm:pid` in a sched_switch body becomes `comm:PID`; what follows
/// `==>` (the next task, which depends on timing) becomes `NEXT`;
/// `(hex)` addresses become `(ADDR)`, and the size in `(sym+off/size)`
/// becomes `SIZE` (function sizes differ between kernels).
fn mask_body(body: &str) -> String {
    let body = match body.split_once(" ==> ") {
        Some((prev, _)) => format!("{prev} ==> NEXT"),
        None => body.to_string(),
    };
    body.split(' ')
        .map(|w| {
            if let Some((name, pid)) = w.rsplit_once(':') {
                if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) {
                    return format!("{name}:PID");
                }
            }
            let inner = w.strip_prefix('(').and_then(|w| w.strip_suffix(')'));
            if inner.is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit())) {
                return "(ADDR)".to_string();
            }
            if let Some((sym_off, size)) = inner.and_then(|i| i.rsplit_once('/')) {
                if size.starts_with("0x") && sym_off.contains("+0x") {
                    return format!("({sym_off}/SIZE)");
                }
            }
            w.to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The comparable part of record.sh's output: its own lines as they are,
/// the workload's events masked, other tasks' event lines dropped (each
/// must parse as one). The workload's sched_switch events are dropped too:
/// when it sleeps, is preempted or is seen exiting depends on timing
/// ([`assert_sleeps_seen`] checks them).
fn mask_report(out: &str) -> String {
    let mut kept = Vec::new();
    for line in out.lines() {
        let Some(l) = parse_line(line) else {
            assert!(
                !line.contains("] ") || line.starts_with("==="),
                "a report line that does not parse: {line:?}"
            );
            kept.push(line.trim_end().to_string());
            continue;
        };
        if l.comm != WORKLOAD || l.event == "sched_switch" {
            continue;
        }
        // The need-resched column is masked: a tick may set it at any
        // moment, on Linux too.
        let flags = l
            .flags
            .map(|f| {
                let f: String = f
                    .chars()
                    .enumerate()
                    .map(|(i, c)| if i == 1 { '.' } else { c })
                    .collect();
                format!("{f} ")
            })
            .unwrap_or_default();
        let buffer = l.buffer.map(|b| format!("{b}: ")).unwrap_or_default();
        let line = format!(
            "{buffer}{}-PID [CPU] {flags}TS: {}: {}",
            l.comm,
            l.event,
            mask_body(l.body)
        );
        kept.push(line.trim_end().to_string());
    }
    kept.join("\n") + "\n"
}

/// The times (µs) of the workload's `EVENT` lines in record.sh's part
/// `=== PART`.
fn event_times(out: &str, part: &str, event: &str) -> Vec<u64> {
    out.lines()
        .skip_while(|l| *l != format!("=== {part}"))
        .skip(1)
        .take_while(|l| !l.starts_with("=== "))
        .filter_map(parse_line)
        .filter(|l| l.comm == WORKLOAD && l.event == event)
        .map(|l| {
            let (s, us) = l.ts.split_once('.').expect("parse_line checked the time");
            s.parse::<u64>().unwrap_or(0) * 1_000_000 + us.parse::<u64>().unwrap_or(0)
        })
        .collect()
}

/// The workload sleeps 2 ms after each getpid but 200 ms after the third:
/// the times trace-cmd decoded from the raw pages (time deltas and, for
/// the long gap, a time extend) must show that.
fn assert_getpid_gaps(out: &str, part: &str, event: &str) {
    let t = event_times(out, part, event);
    assert_eq!(t.len(), 5, "{event} times in {part}: {t:?}");
    for (i, w) in t.windows(2).enumerate() {
        let gap = w[1].saturating_sub(w[0]);
        let (lo, hi) = if i == 2 { (200_000, 1_000_000) } else { (2_000, 150_000) };
        assert!(
            w[1] >= w[0] && (lo..hi).contains(&gap),
            "{part}: gap {i} of {event} is {gap} us, not in {lo}..{hi}: {t:?}"
        );
    }
}

/// The workload went to sleep at least four times (of its five sleeps, a
/// short one may end before the task switches): sched_switch events with
/// it as `prev` in state `S`, decoded from its fields by libtraceevent.
fn assert_sleeps_seen(out: &str) {
    let sleeps = out
        .lines()
        .skip_while(|l| *l != "=== events")
        .take_while(|l| *l != "=== function")
        .filter_map(parse_line)
        .filter(|l| {
            l.event == "sched_switch" && l.body.starts_with(&format!("{WORKLOAD}:")) && l.body.contains("] S ==> ")
        })
        .count();
    assert!(
        sleeps >= 4,
        "{sleeps} sched_switch events of {WORKLOAD} sleeping:\n{out}"
    );
}

/// Debian's and trace-cmd's trees, added at the guest's root.
fn roots() -> Vec<PathBuf> {
    vec![setup_path("--print-debian"), setup_path("--print-trace-cmd")]
}

fn files() -> Vec<PathBuf> {
    vec![
        setup_path("--print-busybox"),
        workload(),
        root().join("tests/trace_cmd/record.sh"),
    ]
}

#[test]
fn debian_trace_cmd_records_events_functions_and_kprobes_as_on_linux() {
    let files = files();
    let (out, code) = run_commands_with_roots(&["--smp", "2"], &roots(), &files, COMMANDS, 180);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        mask_report(&out),
        GOLDEN,
        "this kernel differs from the golden file; raw:\n{out}"
    );
    assert_getpid_gaps(&out, "events", "sys_enter_getpid");
    assert_getpid_gaps(&out, "instance", "sys_enter_getpid");
    assert_sleeps_seen(&out);
    assert_getpid_gaps(&out, "function", "function");
    assert_getpid_gaps(&out, "kprobe", "tcmd_getpid");
    let Some(reflinux) = e2e::reflinux() else { return };
    let (files, commands) = reflinux_unpacking(&roots(), &files, COMMANDS);
    let linux = Command::new(reflinux)
        .args(["--smp", "2", "--timeout", "240", "--tracefs"])
        .args(&files)
        .args(["--", &commands])
        .output()
        .expect("reflinux");
    assert!(
        linux.status.success(),
        "reflinux: {}",
        String::from_utf8_lossy(&linux.stderr)
    );
    let linux = String::from_utf8_lossy(&linux.stdout);
    assert_eq!(
        mask_report(&linux),
        GOLDEN,
        "real Linux differs from the golden file; raw:\n{linux}"
    );
    assert_getpid_gaps(&linux, "events", "sys_enter_getpid");
    assert_sleeps_seen(&linux);
}

#[test]
fn mask_report_keeps_the_workloads_events_and_masks_numbers() {
    let raw = "=== events\nrecord status 0\ncpus=2\n\
       trace-cmd-157   [001]    14.859159: sched_switch:         trace-cmd:157 [120] R ==> trace-cmd:156 [120]\n\
        tcmdload-158   [000]    14.907428: sched_switch:         tcmdload:158 [120] R ==> kworker/0:1:12 [120]\n\
        tcmdload-158   [000]    14.992535: sys_enter_getpid:     \n\
        tcmdload-158   [000]    15.034856: sched_switch:         tcmdload:158 [120] X ==> swapper/0:0 [120]\n\
        tcmdload-168   [001]    63.732098: tcmd_getpid:          (ffff8000800c9898)\n\
report status 0\n\
            bash-157     [001] d....    21.252470: tcmd: (__arm64_sys_getpid+0x0/0x40)\n\
        tcmdload-12      [000] d....     3.167388: tcmd: (__arm64_sys_getpid+0x0/0x50)\n";
    assert_eq!(
        mask_report(raw),
        "=== events\nrecord status 0\ncpus=2\n\
tcmdload-PID [CPU] TS: sys_enter_getpid:\n\
tcmdload-PID [CPU] TS: tcmd_getpid: (ADDR)\n\
report status 0\n\
tcmdload-PID [CPU] d.... TS: tcmd: (__arm64_sys_getpid+0x0/SIZE)\n"
    );
}

/// Prints the masked form of a raw record.sh output (the file named by
/// TRACE_CMD_RAW), to make report.golden from a run on real Linux:
/// `TRACE_CMD_RAW=linux.txt cargo test -p e2e --test trace_cmd -- --ignored --nocapture`.
#[test]
#[ignore]
fn print_masked_report_of_a_raw_run() {
    let path = std::env::var("TRACE_CMD_RAW").expect("TRACE_CMD_RAW names a raw output");
    let raw = std::fs::read_to_string(path).expect("read TRACE_CMD_RAW");
    print!("{}", mask_report(&raw));
}
