//! `ministrace` (userland/ptrace-tools), the strace-like tool of issue 10:
//! tests/ptrace_tools/run.sh runs `ministrace -f -o`, `-f -c` and
//! `-e trace=` of `straced` (a program that forks three children, one
//! exiting 0, one killed by its own SIGUSR1 and one by SIGKILL, writes,
//! maps, uses a pipe, opens a missing file and takes a blocked SIGCHLD) on
//! this kernel (virt -smp 1 and -smp 4) and on real Linux
//! (../shared/reflinux), `ministrace -f` of a thread (`straced --thread`),
//! then `ministrace -p` attached to a child of
//! `straced --attach-loop` (getpid and a 10 ms sleep, 150 times). After masking pids, addresses and CPU times, and
//! putting each process's lines together (the order between processes
//! depends on scheduling), every run must equal the golden file
//! tests/ptrace_tools/straced.golden, which was taken from real Linux
//! (`UPDATE_GOLDEN=1` rewrites it from reflinux's run). On real Linux,
//! ministrace's `-f` trace is also compared with Debian's strace's, which
//! it must equal line for line.

use e2e::{proof_binary, root, run_commands};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn files() -> Vec<PathBuf> {
    vec![
        proof_binary("ministrace"),
        proof_binary("straced"),
        root().join("tests/ptrace_tools/run.sh"),
    ]
}

fn golden_path() -> PathBuf {
    root().join("tests/ptrace_tools/straced.golden")
}

/// Replaces every `0x...` with `0xADDR`.
fn mask_addresses(l: &str) -> String {
    let mut out = String::new();
    let mut chars = l.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                chars.next();
            }
            out.push_str("0xADDR");
        } else {
            out.push(c);
        }
    }
    out
}

/// The pids a run shows, in order of first appearance, as `PIDn` labels.
struct Pids(Vec<String>);

impl Pids {
    fn label(&mut self, pid: &str) -> String {
        let i = match self.0.iter().position(|p| p == pid) {
            Some(i) => i,
            None => {
                self.0.push(pid.to_string());
                self.0.len() - 1
            }
        };
        format!("PID{}", i + 1)
    }

    /// Masks the number after each of `contexts` in `l` (and a trailing
    /// `= N` of calls that return a pid).
    fn mask(&mut self, l: &str) -> String {
        const CONTEXTS: &[&str] = &["si_pid=", "kill(", "wait4(", "Process "];
        let mut out = String::new();
        let mut rest = l;
        'outer: while !rest.is_empty() {
            for c in CONTEXTS {
                if let Some(r) = rest.strip_prefix(c) {
                    let n = r.bytes().take_while(u8::is_ascii_digit).count();
                    out.push_str(c);
                    if n > 0 {
                        out.push_str(&self.label(&r[..n]));
                    }
                    rest = &r[n..];
                    continue 'outer;
                }
            }
            let ch = rest.chars().next().unwrap_or(' ');
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
        let returns_pid = ["clone", "getpid", "wait4"]
            .iter()
            .any(|c| out.starts_with(&format!("{c}(")) || out.starts_with(&format!("<... {c} resumed>")));
        if let Some(i) = out.rfind(" = ").filter(|_| returns_pid) {
            let n = &out[i + 3..];
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                let label = self.label(n);
                out = format!("{}= {label}", &out[..i + 1]);
            }
        }
        out
    }
}

/// `strace -f -o`'s lines (`PID   text`) grouped by process in order of
/// first appearance, each call split by `<unfinished ...>` put back
/// together, spaces before ` = ` collapsed (the column depends on the
/// split).
fn per_process(lines: &[&str], pids: &mut Pids) -> Vec<String> {
    let mut by_pid: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in lines {
        let n = l.bytes().take_while(u8::is_ascii_digit).count();
        let label = pids.label(&l[..n]);
        let text = pids.mask(&mask_addresses(l[n..].trim_start()));
        let list = by_pid.entry(label).or_default();
        if let Some(r) = text.strip_prefix("<... ") {
            let after = r.find(" resumed>").map_or(r, |i| &r[i + " resumed>".len()..]);
            if let Some(last) = list.last_mut().filter(|p| p.ends_with(" <unfinished ...>")) {
                let head = last.trim_end_matches(" <unfinished ...>").to_string();
                *last = head + after;
                continue;
            }
        }
        list.push(text);
    }
    let mut out = Vec::new();
    for (label, list) in by_pid {
        for l in list {
            let l = match l.find(" = ").or_else(|| l.find("= ")) {
                Some(_) => collapse_result_padding(&l),
                None => l,
            };
            out.push(format!("{label} {l}"));
        }
    }
    out
}

fn collapse_result_padding(l: &str) -> String {
    match l.rfind("= ") {
        Some(i) => format!("{} {}", l[..i].trim_end(), &l[i..]),
        None => l.to_string(),
    }
}

/// The run's output made comparable across kernels and CPU counts.
fn normalize(out: &str) -> String {
    let mut sections: Vec<(String, Vec<&str>)> = Vec::new();
    for l in out.lines() {
        if l.starts_with("--- -") || l == "--- end" {
            sections.push((l.to_string(), Vec::new()));
        } else if let Some((_, body)) = sections.last_mut() {
            body.push(l);
        }
    }
    let mut text = String::new();
    for (head, body) in sections {
        // Each section's pids are labelled in order of appearance.
        let mut pids = Pids(Vec::new());
        text.push_str(&head);
        text.push('\n');
        let lines: Vec<String> = if head == "--- -f trace" {
            // Masked first so that the first traced pid is PID1.
            per_process(&body, &mut pids)
        } else if head.starts_with("--- -c") {
            // Times vary: keep each row's name, calls and errors, by name.
            let mut rows: Vec<String> = body
                .iter()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let numeric = f.get(3).is_some_and(|c| c.bytes().all(|b| b.is_ascii_digit()));
                    match f.len() {
                        _ if !numeric => None,
                        6 => Some(format!("{} calls={} errors={}", f[5], f[3], f[4])),
                        5 if f[0].contains('.') => Some(format!("{} calls={} errors=0", f[4], f[3])),
                        _ => None,
                    }
                })
                .collect();
            rows.sort();
            rows
        } else {
            let mut lines: Vec<String> = body.iter().map(|l| pids.mask(&mask_addresses(l))).collect();
            if head.starts_with("--- -p") {
                // How many getpid calls come after the attach varies.
                lines.dedup();
            }
            lines
        };
        for l in lines {
            let l = match l.find("si_utime=") {
                Some(i) => format!("{}si_utime=#, si_stime=#}} ---", &l[..i]),
                None => l,
            };
            let l = match l.find("/* ").filter(|_| l.contains(" vars */")) {
                Some(i) => format!(
                    "{}/* # vars */{}",
                    &l[..i],
                    &l[l.find(" vars */").map_or(l.len(), |j| j + 8)..]
                ),
                None => l,
            };
            text.push_str(&l);
            text.push('\n');
        }
    }
    text
}

const COMMANDS: &str = "PATH=/bin; export PATH; sh /bin/run.sh";

fn check_against_golden(what: &str, out: &str) {
    let got = normalize(out);
    assert!(got.contains("--- end\n"), "{what}: the script did not finish:\n{out}");
    let golden = std::fs::read_to_string(golden_path()).expect("read tests/ptrace_tools/straced.golden");
    assert_eq!(got, golden, "{what} differs from the golden trace; raw output:\n{out}");
}

#[test]
fn ministrace_traces_straced_as_on_real_linux() {
    let mut files = files();
    files.push(e2e::busybox());
    let cmds = "PATH=/bin; export PATH; busybox sh /bin/run.sh";
    let Some(out) = e2e::reflinux_stdout("2", 120, &files, cmds) else {
        return;
    };
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(golden_path(), normalize(&out)).expect("write the golden file");
    }
    check_against_golden("reflinux", &out);
}

fn on_kernel(smp: &str) {
    let (out, code) = run_commands(&["--smp", smp], &files(), COMMANDS, 120);
    assert_eq!(code, 0, "{out}");
    check_against_golden(&format!("virt -smp {smp}"), &out);
}

#[test]
fn ministrace_traces_straced_as_on_linux_virt_smp1() {
    on_kernel("1");
}

#[test]
fn ministrace_traces_straced_as_on_linux_virt_smp4() {
    on_kernel("4");
}

#[test]
fn normalize_puts_unfinished_calls_back_together() {
    let out = "--- -f trace\n\
               7     clone(child_stack=NULL, flags=SIGCHLD) = 8\n\
               7     wait4(8,  <unfinished ...>\n\
               8     getpid()                          = 8\n\
               8     +++ exited with 0 +++\n\
               7     <... wait4 resumed>[{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 8\n\
               --- end\n";
    assert_eq!(
        normalize(out),
        "--- -f trace\n\
         PID1 clone(child_stack=NULL, flags=SIGCHLD) = PID2\n\
         PID1 wait4(PID2, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = PID2\n\
         PID2 getpid() = PID2\n\
         PID2 +++ exited with 0 +++\n\
         --- end\n"
    );
}

/// On real Linux, Debian's strace 6.1 (`scripts/setup.sh --print-debian`)
/// and ministrace print the same `-f` trace of straced, line for line
/// once each process's lines are put together and pids, addresses and CPU
/// times masked: ministrace's format is strace's.
#[test]
fn ministrace_prints_what_debian_strace_prints_on_real_linux() {
    let files = vec![
        e2e::setup_path("--print-debian"),
        e2e::busybox(),
        proof_binary("ministrace"),
        proof_binary("straced"),
        root().join("tests/ptrace_tools/vs_strace.sh"),
    ];
    let Some(out) = e2e::reflinux_stdout("2", 120, &files, "busybox sh /bin/vs_strace.sh") else {
        return;
    };
    let text = normalize(&out);
    let mut parts = text.split("--- -f trace\n").skip(1);
    let (strace, ministrace) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    assert!(
        strace.contains("+++ exited with 3 +++"),
        "strace did not trace straced:\n{out}"
    );
    assert_eq!(
        ministrace,
        format!("{strace}--- end\n"),
        "ministrace differs from strace:\n{out}"
    );
}
