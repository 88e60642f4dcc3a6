//! The latency tracers (`irqsoff`, `preemptoff`, `preemptirqsoff`,
//! `wakeup`, `wakeup_rt`; kernel/src/trace/trace_irqsoff.rs and
//! trace_sched_wakeup.rs).
//!
//! - The test build, booted with `ktest=latency` on `virt -smp 1` and
//!   `-smp 4`, masks interrupts (then disables preemption) for 50 ms in
//!   `lat_test_irqs_off` (`lat_test_preempt_off`), called from
//!   `lat_test_section_caller`, under `irqsoff` (`preemptoff`), and prints
//!   `trace`. With the latency, the time column and the CPU count masked
//!   it must be `latency/sections.golden`: Linux's latency header
//!   (`print_trace_header`), column legend and lines, the section started
//!   and ended in the caller, and a latency of at least 50 ms.
//!   `LATENCY_BLESS=1` rewrites the golden file from this kernel's output.
//! - Linux's own ftracetest `test.d/tracer` (wakeup.tc, wakeup_rt.tc,
//!   which Linux reports UNSUPPORTED on Debian's kernel) must pass here.

use e2e::{boot, kernel_image, ktest_image, root};
use std::process::{Command, Stdio};
use std::time::Duration;

const GOLDEN: &str = include_str!("latency/sections.golden");
const PREFIX: &str = "latency-golden: ";

/// Masks what changes from run to run: the `latency: N us` figure, the
/// `#P:N` CPU count, and each line's `TIMEus` column with its delay mark.
fn mask(line: &str) -> String {
    if let Some(rest) = line.strip_prefix("# latency: ") {
        let (_, after) = rest.split_once(" us,").unwrap_or(("", rest));
        let after = match after.rfind("#P:") {
            Some(p) => format!("{}#P:N)", &after[..p]),
            None => after.to_string(),
        };
        return format!("# latency: N us,{after}");
    }
    // `comm-pid cpu flags TIMEusM: ` (the flags are six characters).
    if let Some(us) = line.find("us") {
        let head = &line[..us];
        let digits = head.bytes().rev().take_while(u8::is_ascii_digit).count();
        let tail = &line[us..];
        if digits > 0 && tail.len() >= 5 && &tail[3..5] == ": " {
            let start = head.len() - digits;
            let pad = head[..start].trim_end_matches(' ');
            return format!("{pad}  TIMEus?: {}", &tail[5..]);
        }
    }
    line.to_string()
}

fn golden_run(smp: &str) -> (String, u64) {
    let b = boot(
        ktest_image(),
        &["--smp", smp, "--append", "ktest=latency"],
        Some("latency-golden: == end"),
        Duration::from_secs(180),
    );
    assert!(b.reached, "no end marker:\n{}", b.output);
    let lines: Vec<&str> = b
        .output
        .lines()
        .filter_map(|l| l.split_once(PREFIX).map(|(_, t)| t))
        .collect();
    let min_latency = lines
        .iter()
        .filter_map(|l| l.strip_prefix("# latency: "))
        .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
        .min()
        .unwrap_or(0);
    (lines.iter().map(|l| format!("{}\n", mask(l))).collect(), min_latency)
}

#[test]
fn known_sections_are_reported_with_linux_latency_header_on_smp1_and_smp4() {
    for smp in ["1", "4"] {
        let (got, latency) = golden_run(smp);
        if std::env::var_os("LATENCY_BLESS").is_some() {
            std::fs::write(root().join("tests/latency/sections.golden"), &got).expect("write golden");
            return;
        }
        assert!(
            latency >= 50_000,
            "-smp {smp}: a 50 ms section reported as {latency} us"
        );
        assert_eq!(got, GOLDEN, "-smp {smp}: masked output differs from the golden file");
    }
}

#[test]
fn ftracetest_tracer_tests_pass() {
    let out = Command::new(root().join("scripts/ftracetest.sh"))
        .args(["run", "--show-logs", "--smp", "4", "--kernel"])
        .arg(kernel_image())
        .arg("test.d/tracer")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/ftracetest.sh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ftracetest did not run to its end:\n{text}");
    for t in ["tracer/wakeup.tc", "tracer/wakeup_rt.tc"] {
        assert!(
            text.lines().any(|l| l == format!("{t} top PASS")),
            "{t} did not pass:\n{text}"
        );
    }
}

#[test]
fn mask_hides_figures_only() {
    assert_eq!(
        mask("# latency: 57185 us, #4/4, CPU#0 | (M:desktop VP:0, KP:0, SP:0 HP:0 #P:1)"),
        "# latency: N us, #4/4, CPU#0 | (M:desktop VP:0, KP:0, SP:0 HP:0 #P:N)"
    );
    assert_eq!(
        mask("  <idle>-0         0d.... 57171us+: lat_test_irqs_off <-lat_test_section_caller"),
        "  <idle>-0         0d....  TIMEus?: lat_test_irqs_off <-lat_test_section_caller"
    );
    assert_eq!(
        mask("  <idle>-0         0d....    0us*: lat_test_irqs_off <-lat_test_section_caller"),
        "  <idle>-0         0d....  TIMEus?: lat_test_irqs_off <-lat_test_section_caller"
    );
    assert_eq!(mask(" => lat_test_irqs_off"), " => lat_test_irqs_off");
}
