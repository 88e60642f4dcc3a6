//! Unmodified dynamically linked Linux programs: Debian's arm64 bash and
//! coreutils with glibc's dynamic linker (the archive `scripts/setup.sh
//! --print-debian` packs), added at the guest's root (`qemu-run.sh --root`
//! here; unpacked by the commands on reflinux) and run by a bash
//! script (`tests/debian/script.sh`) on `virt -smp 4` and, when
//! ../shared/reflinux is there, on real Linux: the outputs must be equal.
//! Debian's strace too (`strace -f -ff` of a static program that forks,
//! writes, opens a missing file and exits 3; `-f` and `-ff` of a threaded
//! one; `-e inject=` with an error and a return value, and `-e signal=`):
//! see [`debian_strace_traces_fork_write_open_exit_as_on_linux`].

use e2e::{reflinux_unpacking, root, run_commands_with_roots, setup_path};
use std::path::PathBuf;
use std::process::Command;

/// Runs the script with Debian's bash, the libraries at their Debian paths.
const COMMANDS: &str = "PATH=/usr/bin:/bin /usr/bin/bash /bin/script.sh";

/// Debian's tree, added at the guest's root.
fn roots() -> Vec<PathBuf> {
    vec![setup_path("--print-debian")]
}

fn files() -> Vec<PathBuf> {
    vec![setup_path("--print-busybox"), root().join("tests/debian/script.sh")]
}

#[test]
fn debian_bash_and_coreutils_run_dynamically_linked_as_on_linux() {
    let files = files();
    let (out, code) = run_commands_with_roots(&["--smp", "4"], &roots(), &files, COMMANDS, 120);
    assert_eq!(code, 0, "{out}");
    // Spot checks that hold whatever Linux says: bash's features and the
    // CPU count through sched_getaffinity (coreutils) and busybox.
    for want in [
        "square(3) = 9\n",
        "words=one,three,\n",
        "right left\n",
        "trapped USR1\n",
        "killed status 143\n",
        "killed %+ status 143\n",
        "fg status 0\n",
        "continued\nbg done\n",
        "counted 100\n",
        "removed\n",
        "timeout status 124\n",
        "nproc 4 4\n",
        "AT_PHDR is the program's first page + 0x40: 1\n",
        "AT_ENTRY is in the program's text: 1\n",
        "AT_BASE is the interpreter's first page: 1\n",
        "the interpreter lies above the program: 1\n",
        "AT_EXECFN: /usr/bin/cat\n",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    let Some(reflinux) = e2e::reflinux() else { return };
    let (files, commands) = reflinux_unpacking(&roots(), &files, COMMANDS);
    let linux = Command::new(reflinux)
        .args(["--smp", "2", "--timeout", "120"])
        .args(&files)
        .args(["--", &commands])
        .output()
        .expect("reflinux");
    assert!(
        linux.status.success(),
        "reflinux: {}",
        String::from_utf8_lossy(&linux.stderr)
    );
    // Linux runs on 2 CPUs (it boots faster so): the one expected difference.
    let linux = String::from_utf8_lossy(&linux.stdout).replace("nproc 2 2\n", "nproc 4 4\n");
    assert_eq!(out, linux, "real Linux differs");
}

/// A C program of tests/debian built with `aarch64-linux-gnu-gcc -static`
/// (scripts/setup.sh installs the compiler) into target/debian-tests.
fn cross_compile(name: &str) -> PathBuf {
    let dir = root().join("target/debian-tests");
    std::fs::create_dir_all(&dir).expect("create target/debian-tests");
    let out = dir.join(name);
    let st = Command::new("aarch64-linux-gnu-gcc")
        .args(["-static", "-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(root().join(format!("tests/debian/{name}.c")))
        .status()
        .expect("run aarch64-linux-gnu-gcc (scripts/setup.sh installs it)");
    assert!(st.success(), "building tests/debian/{name}.c failed");
    out
}

/// What precedes a pid in strace's output.
const PID_CONTEXTS: &[&str] = &[
    "trace of ",
    "waitpid(",
    "wait4(",
    "si_pid=",
    "Process ",
    "kill(",
    "tgkill(",
    "[pid ",
    "parent_tid=[",
];

/// Makes two strace runs comparable: each traced pid becomes `PID1`,
/// `PID2`, ... in the order of the `--- trace of PID` headers (the pids
/// in strace's messages and in system call results with them), addresses
/// `0xADDR`, getrandom's bytes and the child's CPU times in SIGCHLD `#`.
fn mask_strace(out: &str) -> String {
    let pids: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("--- trace of "))
        .map(str::to_string)
        .collect();
    // Pids in strace's messages before any trace header (e.g. `waitpid(10)`)
    // are those of the header that follows; a header-less run has none.
    let mut masked = Vec::new();
    for line in out.lines() {
        let mut l = String::new();
        let mut word = String::new();
        // Only where strace prints a pid: a number that merely equals one
        // (a byte count, a return value) stays.
        let pid_returning = [
            "clone(",
            "clone3(",
            "fork(",
            "vfork(",
            "set_tid_address(",
            "gettid(",
            "getpid(",
            "getppid(",
            "wait4(",
        ];
        // A line of `strace -f`'s interleaved trace starts with its pid.
        let call = line
            .strip_prefix("[pid ")
            .and_then(|l| l.split_once("] "))
            .map_or(line, |(_, rest)| rest);
        // The call's name, also where its result comes after another
        // thread's line (`<... clone resumed>`).
        let name = call
            .strip_prefix("<... ")
            .and_then(|c| c.split_once(" resumed>"))
            .map_or_else(|| call.split('(').next().unwrap_or(""), |(n, _)| n);
        let returns_pid = pid_returning.iter().any(|c| c.strip_suffix('(') == Some(name));
        // pthread_join's futex waits on the thread's tid; tgkill's second
        // argument is a tid.
        let futex = name == "futex" || name == "tgkill";
        let flush = |word: &mut String, l: &mut String| {
            let pid_place = PID_CONTEXTS.iter().any(|c| l.ends_with(c))
                || (returns_pid && l.ends_with("= "))
                || (futex && l.ends_with(", "));
            if let Some(i) = pids.iter().position(|p| p == word).filter(|_| pid_place) {
                l.push_str(&format!("PID{}", i + 1));
            } else {
                l.push_str(word);
            }
            word.clear();
        };
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '0' && chars.peek() == Some(&'x') {
                flush(&mut word, &mut l);
                chars.next();
                while chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                    chars.next();
                }
                l.push_str("0xADDR");
            } else if c.is_ascii_digit()
                && (!word.is_empty() || !l.ends_with(|c: char| c.is_alphanumeric() || c == '_'))
            {
                word.push(c);
            } else {
                flush(&mut word, &mut l);
                l.push(c);
            }
        }
        flush(&mut word, &mut l);
        if let Some(at) = l.find("getrandom(\"").filter(|&at| at == 0 || l.starts_with("[pid ")) {
            // The bytes end at the last `", ` (a quote inside is `\"`).
            l = format!(
                "{}getrandom(#{}",
                &l[..at],
                &l[l.rfind("\", ").map_or(l.len(), |i| i + 1)..]
            );
        }
        if let Some(i) = l.find("si_utime=") {
            l = format!("{}si_utime=#, si_stime=#}} ---", &l[..i]);
        }
        masked.push(collapse_result_padding(&l));
    }
    sigchld_after_wait(&mut masked);
    group_interleaved(&masked).join("\n") + "\n"
}

/// A child's SIGCHLD reaches its parent before its `wait4` (the child
/// ended first) or during it (strace prints it after the call), as the
/// two processes happened to run, on Linux as here: the first order is
/// put into the second, so that runs compare.
fn sigchld_after_wait(lines: &mut [String]) {
    for i in 1..lines.len() {
        if lines[i - 1].starts_with("--- SIGCHLD ") && lines[i].starts_with("wait4(") {
            lines.swap(i - 1, i);
        }
    }
}

/// `strace -f`'s interleaved trace (the lines after `--- interleaved
/// trace`, up to the next `=== ` section) depends on how the threads ran
/// against each other: each thread's lines are put together (in the order
/// the threads first appear), a call cut by another thread's
/// (`... <unfinished ...>`) joined with its `<... NAME resumed>` rest.
fn group_interleaved(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        out.push(lines[i].clone());
        i += 1;
        if lines[i - 1] != "--- interleaved trace" {
            continue;
        }
        let end = lines[i..]
            .iter()
            .position(|l| l.starts_with("=== "))
            .map_or(lines.len(), |n| i + n);
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for line in &lines[i..end] {
            let (pid, call) = line
                .strip_prefix("[pid ")
                .and_then(|l| l.split_once("] "))
                .unwrap_or(("", line.as_str()));
            let at = match groups.iter().position(|(p, _)| p == pid) {
                Some(at) => at,
                None => {
                    groups.push((pid.to_string(), Vec::new()));
                    groups.len() - 1
                }
            };
            let calls = &mut groups[at].1;
            let resumed = call.strip_prefix("<... ").and_then(|c| c.split_once(" resumed>"));
            match (calls.last_mut(), resumed) {
                (Some(last), Some((_, rest))) if last.ends_with(" <unfinished ...>") => {
                    last.truncate(last.len() - " <unfinished ...>".len());
                    last.push_str(rest);
                    *last = collapse_result_padding(last);
                }
                _ => calls.push(call.to_string()),
            }
        }
        for (pid, calls) in groups {
            out.extend(calls.into_iter().map(|c| format!("[pid {pid}] {c}")));
        }
        i = end;
    }
    out
}

/// Runs tests/debian/strace.sh (Debian's `strace -f -ff` of
/// tests/debian/straced.c, `-f -ff` and `-f` of stracethr.c, `-e inject=`
/// and `-e signal=` of straceinj.c) on this kernel and, when
/// ../shared/reflinux is there, on Linux: the traces are compared whole
/// (every system call, argument and result, the signals and the exits),
/// pids and addresses masked, `-f`'s interleaving undone.
#[test]
fn debian_strace_traces_fork_write_open_exit_as_on_linux() {
    let mut files = files();
    files.push(cross_compile("straced"));
    files.push(cross_compile("stracethr"));
    files.push(cross_compile("straceinj"));
    files.push(root().join("tests/debian/strace.sh"));
    const COMMANDS: &str = "busybox sh /bin/strace.sh";
    let (out, code) = run_commands_with_roots(&["--smp", "4"], &roots(), &files, COMMANDS, 120);
    assert_eq!(code, 0, "{out}");
    let ours = mask_strace(&out);
    for want in [
        "status 3\n",
        "child\n",
        "parent\n",
        "--- strace's messages\n--- trace of PID1\n",
        "execve(\"/bin/straced\", [\"/bin/straced\"], 0xADDR /* 0 vars */) = 0\n",
        "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0xADDR) = PID2\n",
        "openat(AT_FDCWD, \"/nonexistent/file\", O_RDONLY) = -1 ENOENT (No such file or directory)\n",
        "+++ exited with 3 +++\n--- trace of PID2\n",
        "write(1, \"child\\n\", 6) = 6\n",
        "+++ exited with 0 +++\n",
        // -ff of a threaded program: the thread's own file
        "futex(0xADDR, FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME, PID4, NULL, FUTEX_BITSET_MATCH_ANY) = 0\n",
        "--- trace of PID4\nrseq(0xADDR, 0xADDR, 0, 0xADDR) = 0\n",
        "write(1, \"thread\\n\", 7) = 7\n",
        "exit(0) = ?\n+++ exited with 0 +++\n",
        // -f: the same thread's lines, joined
        "[pid PID5] futex(0xADDR, FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME, PID6, NULL, FUTEX_BITSET_MATCH_ANY) = 0\n",
        "[pid PID6] write(1, \"thread\\n\", 7) = 7\n",
        // inject= and signal=
        "open 3 -1 errno 2 getpid 42 caught 22\n",
        "openat(AT_FDCWD, \"/\", O_RDONLY) = -1 ENOENT (No such file or directory) (INJECTED)\n",
        "getpid() = 42 (INJECTED)\n",
        "tgkill(PID7, PID7, SIGUSR1) = 0\n--- SIGUSR1 {si_signo=SIGUSR1, si_code=SI_TKILL, si_pid=PID7, si_uid=0} ---\n",
    ] {
        assert!(ours.contains(want), "no {want:?} in:\n{ours}");
    }
    assert!(
        !ours.contains("--- SIGUSR2"),
        "-e signal=SIGUSR1 showed SIGUSR2:\n{ours}"
    );
    let Some(reflinux) = e2e::reflinux() else { return };
    let (files, commands) = reflinux_unpacking(&roots(), &files, COMMANDS);
    let linux = Command::new(reflinux)
        .args(["--smp", "2", "--timeout", "120"])
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
        ours,
        mask_strace(&linux),
        "real Linux differs\nours raw:\n{out}\nlinux raw:\n{linux}"
    );
}

/// strace pads a call to column 40 before ` = RESULT`; the padding
/// depends on the width of the masked addresses, so it becomes one space.
fn collapse_result_padding(line: &str) -> String {
    let mut from = 0;
    while let Some(i) = line[from..].find(") ").map(|i| from + i + 1) {
        let rest = line[i..].trim_start_matches(' ');
        if rest.starts_with("= ") {
            return format!("{} {rest}", &line[..i]);
        }
        from = i;
    }
    line.to_string()
}

#[test]
fn collapse_result_padding_keeps_one_space_before_the_result() {
    assert_eq!(
        collapse_result_padding("brk(0xADDR)                          = 0xADDR"),
        "brk(0xADDR) = 0xADDR"
    );
    assert_eq!(
        collapse_result_padding("write(1, \"a) b\", 4)   = 4"),
        "write(1, \"a) b\", 4) = 4"
    );
    assert_eq!(
        collapse_result_padding("+++ exited with 3 +++"),
        "+++ exited with 3 +++"
    );
}

#[test]
fn mask_strace_puts_a_sigchld_before_wait4_after_it() {
    let out = "--- trace of 5\nclone(child_stack=NULL, flags=SIGCHLD) = 6\n\
        --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=6, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---\n\
        wait4(6, NULL, 0, NULL) = 6\n--- trace of 6\n";
    assert_eq!(
        mask_strace(out),
        "--- trace of PID1\nclone(child_stack=NULL, flags=SIGCHLD) = PID2\nwait4(PID2, NULL, 0, NULL) = PID2\n\
         --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=PID2, si_uid=0, si_status=0, si_utime=#, si_stime=#} ---\n\
         --- trace of PID2\n"
    );
}

#[test]
fn mask_strace_numbers_pids_and_hides_addresses() {
    let raw = "/usr/bin/strace: detach: waitpid(156): No child processes\n\
               --- trace of 156\n\
               clone(child_stack=NULL, child_tidptr=0x4ff60d0) = 157\n\
               rseq(0x4ff6720, 0x20, 0, 0xd428bc00)    = 0\n\
               getrandom(\"\\xfb, \\\", 8, GRND_NONBLOCK) = 8\n\
               --- SIGCHLD {si_signo=SIGCHLD, si_pid=157, si_uid=0, si_status=0, si_utime=0, si_stime=7 /* 0.07 s */} ---\n\
               --- trace of 157\n\
               write(1, \"child 1567\\n\", 157) = 157\n";
    assert_eq!(
        mask_strace(raw),
        "/usr/bin/strace: detach: waitpid(PID1): No child processes\n\
         --- trace of PID1\n\
         clone(child_stack=NULL, child_tidptr=0xADDR) = PID2\n\
         rseq(0xADDR, 0xADDR, 0, 0xADDR) = 0\n\
         getrandom(#, 8, GRND_NONBLOCK) = 8\n\
         --- SIGCHLD {si_signo=SIGCHLD, si_pid=PID2, si_uid=0, si_status=0, si_utime=#, si_stime=#} ---\n\
         --- trace of PID2\n\
         write(1, \"child 1567\\n\", 157) = 157\n"
    );
}

#[test]
fn group_interleaved_puts_each_threads_lines_together_and_joins_cut_calls() {
    let lines: Vec<String> = [
        "--- interleaved trace",
        "[pid PID1] clone(flags=CLONE_VM) = PID2",
        "[pid PID2] rseq(0xADDR <unfinished ...>",
        "[pid PID1] rt_sigprocmask(SIG_SETMASK, [],  <unfinished ...>",
        "[pid PID2] <... rseq resumed>) = 0",
        "[pid PID1] <... rt_sigprocmask resumed>NULL, 8) = 0",
        "[pid PID2] +++ exited with 0 +++",
        "=== next",
        "write(1) = 1",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        group_interleaved(&lines),
        [
            "--- interleaved trace",
            "[pid PID1] clone(flags=CLONE_VM) = PID2",
            "[pid PID1] rt_sigprocmask(SIG_SETMASK, [], NULL, 8) = 0",
            "[pid PID2] rseq(0xADDR) = 0",
            "[pid PID2] +++ exited with 0 +++",
            "=== next",
            "write(1) = 1",
        ]
    );
}
