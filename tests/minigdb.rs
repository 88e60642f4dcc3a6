//! `minigdb`, the gdb-like tool of `userland/minigdb`, driven by recorded
//! sessions (`tests/minigdb/*.gdb`) against `gdbtarget`: its transcript,
//! with pids masked, must be the golden one (`tests/minigdb/*.out`, taken
//! from real Linux) on reflinux and on this kernel on virt -smp 1 and 4.
//!
//! On this kernel two answers may still differ, each only where the
//! kernel itself says it lacks the feature: a `stepi` answered
//! `stepi: single-step not supported (EIO)` (PTRACE_SINGLESTEP is EIO), and
//! a `watch` refused with `no hardware watchpoints` (NT_ARM_HW_WATCH
//! refused), after which the session may differ until the next `run`. Once
//! the kernel has them, its transcript is compared line for line like
//! Linux's.

use e2e::{proof_binary, run_commands};
use std::path::PathBuf;

/// The sessions: (script, program arguments).
const SESSIONS: &[(&str, &str)] = &[("session", ""), ("segv", " segv")];

fn files() -> Vec<PathBuf> {
    let dir = e2e::root().join("tests/minigdb");
    let mut f = vec![proof_binary("minigdb"), proof_binary("gdbtarget")];
    f.extend(SESSIONS.iter().map(|(s, _)| dir.join(format!("{s}.gdb"))));
    f
}

/// One shell command line running every session, each transcript after a
/// `== NAME` marker line.
fn commands() -> String {
    SESSIONS
        .iter()
        .map(|(s, args)| format!("echo '== {s}'; minigdb /bin/gdbtarget{args} < /bin/{s}.gdb; echo \"status $?\""))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `process 123` → `process PID`: the only thing that changes between runs
/// (the program is static at fixed addresses).
fn mask(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("process ") {
        let (head, tail) = rest.split_at(i + "process ".len());
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(if digits > 0 { "PID" } else { "" });
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// The transcript of session `name` in a run's output.
fn session(out: &str, name: &str) -> String {
    let marker = format!("== {name}\n");
    let start = out
        .find(&marker)
        .map(|i| i + marker.len())
        .unwrap_or_else(|| panic!("no session {name} in:\n{out}"));
    let rest = &out[start..];
    let text = rest.find("\n== ").map_or(rest, |end| &rest[..=end]);
    format!("{}\n", text.trim_end())
}

fn golden(name: &str) -> String {
    let path = e2e::root().join(format!("tests/minigdb/{name}.out"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A transcript cut into (command, what it printed) blocks.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![(String::new(), String::new())];
    for line in text.lines() {
        if let Some(cmd) = line.strip_prefix("(gdb) ") {
            out.push((cmd.to_string(), String::new()));
        } else if let Some(last) = out.last_mut() {
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    out
}

/// Compares this kernel's transcript with the golden one, allowing only
/// the answers of a kernel without single-step or hardware watchpoints.
fn compare_on_kernel(name: &str, got: &str, want: &str) {
    let (g, w) = (blocks(got), blocks(want));
    let cmds = |b: &[(String, String)]| b.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>();
    assert_eq!(cmds(&g), cmds(&w), "{name}: commands differ:\n{got}");
    let mut diverged = false;
    for ((cmd, got_out), (_, want_out)) in g.iter().zip(&w) {
        if cmd.starts_with("run") {
            diverged = false;
        }
        if got_out == want_out {
            continue;
        }
        if cmd == "stepi" && got_out == "stepi: single-step not supported (EIO)\n" {
            eprintln!("{name}: stepi: PTRACE_SINGLESTEP is EIO here; compared on reflinux only");
            continue;
        }
        if cmd.starts_with("watch") && got_out.contains("no hardware watchpoints") {
            eprintln!("{name}: {cmd}: NT_ARM_HW_WATCH refused here; compared on reflinux only until the next run");
            diverged = true;
            continue;
        }
        assert!(
            diverged,
            "{name}: `{cmd}` printed\n{got_out}instead of\n{want_out}\nwhole transcript:\n{got}"
        );
    }
}

#[test]
fn minigdb_sessions_match_linux_golden_on_reflinux() {
    let Some(out) = e2e::reflinux_stdout("2", 180, &files(), &commands()) else {
        return;
    };
    let out = mask(&out);
    for (name, _) in SESSIONS {
        assert_eq!(session(&out, name), golden(name), "{name} on reflinux:\n{out}");
    }
}

fn on_kernel(smp: &str) {
    let (out, code) = run_commands(&["--smp", smp], &files(), &commands(), 180);
    assert_eq!(code, 0, "{out}");
    let out = mask(&out);
    for (name, _) in SESSIONS {
        compare_on_kernel(name, &session(&out, name), &golden(name));
    }
}

#[test]
fn minigdb_sessions_match_linux_golden_on_virt_smp1() {
    on_kernel("1");
}

#[test]
fn minigdb_sessions_match_linux_golden_on_virt_smp4() {
    on_kernel("4");
}
