//! `sh`: a small shell in the manner of busybox `ash`.
//!
//! `sh` reads commands from standard input (with a `# ` prompt when it is a
//! terminal), `sh -c 'CMDS' [NAME [ARG]...]` runs a string, `sh FILE
//! [ARG]...` a script. See `parse` for the language and `Shell::builtin`
//! for the builtins.
#![no_std]
#![no_main]

extern crate alloc;

mod parse;

use alloc::vec::Vec;

use parse::{Command, Connector, Item, Param, ParseError, Part, Pipeline, RedirKind, Word};
use rt::fs::{self, F_DUPFD_CLOEXEC, O_APPEND, O_CLOEXEC, O_CREAT, O_RDONLY, O_TRUNC, O_WRONLY};
use rt::io::{write_all, Bytes, STDERR, STDIN, STDOUT};
use rt::process::{self, Fork, SIGINT, SIGQUIT, SIG_DFL, SIG_IGN, WNOHANG};
use rt::{eprintln, Errno};

rt::main!(main);

const DEFAULT_PATH: &[u8] = b"/bin:/sbin:/usr/bin";

struct Var {
    name: Vec<u8>,
    value: Vec<u8>,
    exported: bool,
}

struct Shell {
    vars: Vec<Var>,
    /// `$0` and the positional parameters.
    argv0: Vec<u8>,
    params: Vec<Vec<u8>>,
    status: i32,
    pid: i32,
    last_background: Option<i32>,
    background: Vec<i32>,
    interactive: bool,
    /// Set by `exit`: stop and exit with this status.
    exit: Option<i32>,
}

/// A descriptor saved while a builtin runs with redirections.
struct SavedFd {
    fd: i32,
    copy: Option<i32>,
}

impl Shell {
    fn new() -> Shell {
        let mut sh = Shell {
            vars: Vec::new(),
            argv0: b"sh".to_vec(),
            params: Vec::new(),
            status: 0,
            pid: process::getpid(),
            last_background: None,
            background: Vec::new(),
            interactive: false,
            exit: None,
        };
        for kv in rt::env::vars() {
            if let Some(eq) = kv.iter().position(|&b| b == b'=') {
                if parse::is_name(&kv[..eq]) {
                    sh.set_var(&kv[..eq], &kv[eq + 1..], true);
                }
            }
        }
        sh
    }

    fn var(&self, name: &[u8]) -> Option<&[u8]> {
        self.vars.iter().find(|v| v.name == name).map(|v| v.value.as_slice())
    }

    fn set_var(&mut self, name: &[u8], value: &[u8], export: bool) {
        match self.vars.iter_mut().find(|v| v.name == name) {
            Some(v) => {
                v.value = value.to_vec();
                v.exported |= export;
            }
            None => self.vars.push(Var {
                name: name.to_vec(),
                value: value.to_vec(),
                exported: export,
            }),
        }
    }

    /// The environment of a command: exported variables, overridden by the
    /// command's own assignments.
    fn environment(&self, assigns: &[(Vec<u8>, Vec<u8>)]) -> Vec<Vec<u8>> {
        let mut env = Vec::new();
        for v in self.vars.iter().filter(|v| v.exported) {
            if assigns.iter().any(|(n, _)| *n == v.name) {
                continue;
            }
            env.push([v.name.as_slice(), b"=", &v.value].concat());
        }
        for (n, val) in assigns {
            env.push([n.as_slice(), b"=", val].concat());
        }
        env
    }

    // ------------------------------------------------------------ expansion

    /// The value of a parameter, for everything but `$@` in quotes.
    fn param(&self, p: &Param) -> Vec<u8> {
        match p {
            Param::Named(n) => self.var(n).unwrap_or_default().to_vec(),
            Param::Positional(0) => self.argv0.clone(),
            Param::Positional(i) => self.params.get(i - 1).cloned().unwrap_or_default(),
            Param::Status => decimal(self.status as i64),
            Param::Pid => decimal(self.pid as i64),
            Param::LastBackground => self.last_background.map(|p| decimal(p as i64)).unwrap_or_default(),
            Param::Count => decimal(self.params.len() as i64),
            Param::All => self.params.join(&b' '),
        }
    }

    /// Expands a word into fields: unquoted parameters are split at blanks;
    /// a quoted `"$@"` gives one field per positional parameter.
    fn expand(&self, word: &Word) -> Vec<Vec<u8>> {
        let mut fields = Vec::new();
        let mut cur = Vec::new();
        let mut have = false;
        for part in word {
            match part {
                Part::Lit(l) => {
                    cur.extend_from_slice(l);
                    have = true;
                }
                Part::Param {
                    param: Param::All,
                    quoted: true,
                } => {
                    for (i, p) in self.params.iter().enumerate() {
                        if i > 0 {
                            fields.push(core::mem::take(&mut cur));
                        }
                        cur.extend_from_slice(p);
                        have = true;
                    }
                }
                Part::Param { param, quoted: true } => {
                    cur.extend_from_slice(&self.param(param));
                    have = true;
                }
                Part::Param { param, quoted: false } => {
                    let value = self.param(param);
                    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\n');
                    if value.first().is_some_and(blank) && have {
                        fields.push(core::mem::take(&mut cur));
                        have = false;
                    }
                    let mut pieces = value.split(blank).filter(|p| !p.is_empty()).peekable();
                    while let Some(piece) = pieces.next() {
                        cur.extend_from_slice(piece);
                        have = true;
                        if pieces.peek().is_some() {
                            fields.push(core::mem::take(&mut cur));
                        }
                    }
                    if value.last().is_some_and(blank) && have {
                        fields.push(core::mem::take(&mut cur));
                        have = false;
                    }
                }
            }
        }
        if have {
            fields.push(cur);
        }
        fields
    }

    /// Expands a word into one string (assignments, redirection targets).
    fn expand_one(&self, word: &Word) -> Vec<u8> {
        let mut out = Vec::new();
        for part in word {
            match part {
                Part::Lit(l) => out.extend_from_slice(l),
                Part::Param { param, .. } => out.extend_from_slice(&self.param(param)),
            }
        }
        out
    }

    // ------------------------------------------------------------ execution

    fn run_items(&mut self, items: &[Item]) {
        for item in items {
            if self.exit.is_some() {
                return;
            }
            self.reap_background();
            if item.background {
                match process::fork() {
                    Ok(Fork::Child) => {
                        self.interactive = false;
                        let st = self.run_and_or(&item.and_or);
                        process::exit(self.exit.unwrap_or(st));
                    }
                    Ok(Fork::Parent(pid)) => {
                        if self.interactive {
                            eprintln!("[{}] {pid}", self.background.len() + 1);
                        }
                        self.background.push(pid);
                        self.last_background = Some(pid);
                        self.status = 0;
                    }
                    Err(e) => {
                        eprintln!("sh: fork: {e}");
                        self.status = 2;
                    }
                }
            } else {
                self.status = self.run_and_or(&item.and_or);
            }
        }
    }

    fn run_and_or(&mut self, and_or: &parse::AndOr) -> i32 {
        let mut status = self.run_pipeline(&and_or.first);
        self.status = status;
        for (conn, p) in &and_or.rest {
            if self.exit.is_some() {
                break;
            }
            let run = match conn {
                Connector::And => status == 0,
                Connector::Or => status != 0,
            };
            if run {
                status = self.run_pipeline(p);
                self.status = status;
            }
        }
        status
    }

    fn reap_background(&mut self) {
        // Keep only the jobs still running (wait4 gives 0 for those).
        self.background
            .retain(|&pid| matches!(process::wait4(pid, WNOHANG), Ok((0, _))));
    }

    fn run_pipeline(&mut self, p: &Pipeline) -> i32 {
        let status = if p.cmds.len() == 1 {
            self.run_simple(&p.cmds[0])
        } else {
            self.run_multi(&p.cmds)
        };
        if p.negate {
            (status == 0) as i32
        } else {
            status
        }
    }

    /// A command alone: assignments and builtins run in the shell itself.
    fn run_simple(&mut self, cmd: &Command) -> i32 {
        let words: Vec<Vec<u8>> = cmd.words.iter().flat_map(|w| self.expand(w)).collect();
        let assigns: Vec<(Vec<u8>, Vec<u8>)> = cmd
            .assigns
            .iter()
            .map(|(n, w)| (n.clone(), self.expand_one(w)))
            .collect();
        if words.is_empty() {
            for (n, v) in &assigns {
                self.set_var(n, v, false);
            }
            // Redirections alone still create or check their files.
            return match self.redirect_saving(cmd) {
                Ok(saved) => {
                    restore(saved);
                    0
                }
                Err(()) => 1,
            };
        }
        if is_builtin(&words[0]) {
            let Ok(saved) = self.redirect_saving(cmd) else { return 1 };
            let st = self.builtin(&words);
            restore(saved);
            return st;
        }
        match process::fork() {
            Ok(Fork::Child) => self.child(cmd, &words, &assigns),
            Ok(Fork::Parent(pid)) => self.wait_child(pid),
            Err(e) => {
                eprintln!("sh: fork: {e}");
                2
            }
        }
    }

    fn wait_child(&mut self, pid: i32) -> i32 {
        match process::waitpid(pid) {
            Ok(st) => st.shell_status(),
            Err(e) => {
                eprintln!("sh: wait: {e}");
                2
            }
        }
    }

    /// `a | b | c`: every command in its own child, connected by pipes.
    fn run_multi(&mut self, cmds: &[Command]) -> i32 {
        let mut pids = Vec::new();
        let mut prev_read: Option<i32> = None;
        let mut failed = false;
        for (i, cmd) in cmds.iter().enumerate() {
            let last = i + 1 == cmds.len();
            let pipe = if last {
                None
            } else {
                match fs::pipe2(O_CLOEXEC) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        eprintln!("sh: pipe: {e}");
                        failed = true;
                        break;
                    }
                }
            };
            let words: Vec<Vec<u8>> = cmd.words.iter().flat_map(|w| self.expand(w)).collect();
            let assigns: Vec<(Vec<u8>, Vec<u8>)> = cmd
                .assigns
                .iter()
                .map(|(n, w)| (n.clone(), self.expand_one(w)))
                .collect();
            match process::fork() {
                Ok(Fork::Child) => {
                    if let Some(r) = prev_read {
                        dup_or_die(r, STDIN);
                    }
                    if let Some([_, w]) = pipe {
                        dup_or_die(w, STDOUT);
                    }
                    // The pipe ends themselves are close-on-exec.
                    self.child(cmd, &words, &assigns)
                }
                Ok(Fork::Parent(pid)) => pids.push(pid),
                Err(e) => {
                    eprintln!("sh: fork: {e}");
                    failed = true;
                }
            }
            if let Some(r) = prev_read.take() {
                close_or_warn(r);
            }
            if let Some([r, w]) = pipe {
                close_or_warn(w);
                prev_read = Some(r);
            }
            if failed {
                break;
            }
        }
        if let Some(r) = prev_read {
            close_or_warn(r);
        }
        let mut status = 0;
        for pid in &pids {
            status = self.wait_child(*pid);
        }
        if failed {
            2
        } else {
            status
        }
    }

    /// In a forked child: apply redirections, then run the builtin or exec
    /// the program. Never returns.
    fn child(&mut self, cmd: &Command, words: &[Vec<u8>], assigns: &[(Vec<u8>, Vec<u8>)]) -> ! {
        self.interactive = false;
        for sig in [SIGINT, SIGQUIT] {
            // Undo the interactive shell's SIG_IGN; cannot fail for these.
            let _ = process::signal_disposition(sig, SIG_DFL);
        }
        if self.redirect(cmd, None).is_err() {
            process::exit(1);
        }
        let Some(name) = words.first() else { process::exit(0) };
        if is_builtin(name) {
            let st = self.builtin(words);
            process::exit(self.exit.unwrap_or(st));
        }
        let env = self.environment(assigns);
        let st = self.exec(words, &env);
        process::exit(st)
    }

    /// execve `words` (searching PATH for a name without `/`); returns the
    /// exit status for the failure.
    fn exec(&mut self, words: &[Vec<u8>], env: &[Vec<u8>]) -> i32 {
        let name = &words[0];
        let argv = || words.iter().map(|w| w.as_slice());
        let envp = || env.iter().map(|e| e.as_slice());
        let mut denied = None;
        if name.contains(&b'/') {
            match process::execve(name, argv(), envp()) {
                Errno::ENOEXEC => return self.run_script_in_child(name, words),
                Errno::ENOENT | Errno::ENOTDIR => {}
                e => denied = Some(e),
            }
        } else {
            let path = self.var(b"PATH").unwrap_or(DEFAULT_PATH).to_vec();
            for dir in path.split(|&b| b == b':') {
                let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
                let full = [dir, b"/", name].concat();
                match process::execve(&full, argv(), envp()) {
                    Errno::ENOEXEC => return self.run_script_in_child(&full, words),
                    Errno::ENOENT | Errno::ENOTDIR => {}
                    e => denied = denied.or(Some(e)),
                }
            }
        }
        match denied {
            None => {
                eprintln!("sh: {}: not found", Bytes(name));
                127
            }
            Some(e) => {
                eprintln!("sh: {}: {e}", Bytes(name));
                126
            }
        }
    }

    /// A file the kernel cannot execute is a shell script: run it here.
    fn run_script_in_child(&mut self, path: &[u8], words: &[Vec<u8>]) -> i32 {
        self.argv0 = path.to_vec();
        self.params = words[1..].to_vec();
        self.run_file(path)
    }

    /// Applies the command's redirections to the real descriptors, first
    /// saving each one in `saved` when given (for builtins in the shell).
    fn redirect(&self, cmd: &Command, mut saved: Option<&mut Vec<SavedFd>>) -> Result<(), ()> {
        for r in &cmd.redirs {
            let target = self.expand_one(&r.target);
            if let Some(saved) = saved.as_deref_mut() {
                if !saved.iter().any(|s| s.fd == r.fd) {
                    let copy = fs::fcntl(r.fd, F_DUPFD_CLOEXEC, 10).ok().map(|f| f as i32);
                    saved.push(SavedFd { fd: r.fd, copy });
                }
            }
            let (flags, verb) = match r.kind {
                RedirKind::In => (O_RDONLY, "open"),
                RedirKind::Out => (O_WRONLY | O_CREAT | O_TRUNC, "create"),
                RedirKind::Append => (O_WRONLY | O_CREAT | O_APPEND, "create"),
                RedirKind::Dup => {
                    if target == b"-" {
                        // Closing a descriptor that is not open is fine.
                        let _ = fs::close(r.fd);
                        continue;
                    }
                    let Some(src) = parse_fd(&target) else {
                        eprintln!("sh: {}: bad file descriptor", Bytes(&target));
                        return Err(());
                    };
                    if src != r.fd {
                        if let Err(e) = fs::dup3(src, r.fd, 0) {
                            eprintln!("sh: {src}: {e}");
                            return Err(());
                        }
                    }
                    continue;
                }
            };
            let fd = match fs::open(&target, flags | O_CLOEXEC, 0o666) {
                Ok(fd) => fd,
                Err(e) => {
                    eprintln!("sh: can't {verb} {}: {e}", Bytes(&target));
                    return Err(());
                }
            };
            if fd != r.fd {
                let res = fs::dup3(fd, r.fd, 0);
                close_or_warn(fd);
                if let Err(e) = res {
                    eprintln!("sh: {}: {e}", r.fd);
                    return Err(());
                }
            } else {
                // Opened right onto the wanted descriptor: keep it across exec.
                let _ = fs::fcntl(fd, 2 /* F_SETFD */, 0);
            }
        }
        Ok(())
    }

    fn redirect_saving(&self, cmd: &Command) -> Result<Vec<SavedFd>, ()> {
        let mut saved = Vec::new();
        match self.redirect(cmd, Some(&mut saved)) {
            Ok(()) => Ok(saved),
            Err(()) => {
                restore(saved);
                Err(())
            }
        }
    }

    // ------------------------------------------------------------- builtins

    fn builtin(&mut self, words: &[Vec<u8>]) -> i32 {
        let args = &words[1..];
        match words[0].as_slice() {
            b"cd" => self.cd(args),
            b"exit" => {
                let st = match args.first() {
                    None => self.status,
                    Some(a) => match parse_number(a) {
                        Some(n) => n as i32 & 0xff,
                        None => {
                            eprintln!("sh: exit: illegal number: {}", Bytes(a));
                            2
                        }
                    },
                };
                self.exit = Some(st);
                st
            }
            b"echo" => echo(args),
            b"export" => {
                if args.is_empty() {
                    for v in self.vars.iter().filter(|v| v.exported) {
                        rt::println!("export {}='{}'", Bytes(&v.name), Bytes(&v.value));
                    }
                    return 0;
                }
                let mut st = 0;
                for a in args {
                    let (name, value) = match a.iter().position(|&b| b == b'=') {
                        Some(eq) => (&a[..eq], Some(&a[eq + 1..])),
                        None => (a.as_slice(), None),
                    };
                    if !parse::is_name(name) {
                        eprintln!("sh: export: {}: bad variable name", Bytes(a));
                        st = 1;
                        continue;
                    }
                    let value = value.map(<[u8]>::to_vec);
                    let value = value.unwrap_or_else(|| self.var(name).unwrap_or_default().to_vec());
                    self.set_var(name, &value, true);
                }
                st
            }
            b"unset" => {
                self.vars.retain(|v| !args.contains(&v.name));
                0
            }
            b"pwd" => match fs::getcwd() {
                Ok(cwd) => {
                    rt::println!("{}", Bytes(&cwd));
                    0
                }
                Err(e) => {
                    eprintln!("sh: pwd: {e}");
                    1
                }
            },
            b":" => 0,
            _ => 127,
        }
    }

    fn cd(&mut self, args: &[Vec<u8>]) -> i32 {
        let dir = match args.first() {
            Some(d) => d.clone(),
            None => match self.var(b"HOME") {
                Some(h) => h.to_vec(),
                None => b"/".to_vec(),
            },
        };
        if let Err(e) = fs::chdir(&dir) {
            eprintln!("sh: cd: can't cd to {}: {e}", Bytes(&dir));
            return 1;
        }
        if let Some(old) = self.var(b"PWD").map(<[u8]>::to_vec) {
            self.set_var(b"OLDPWD", &old, false);
        }
        match fs::getcwd() {
            Ok(cwd) => self.set_var(b"PWD", &cwd, false),
            Err(e) => eprintln!("sh: cd: getcwd: {e}"),
        }
        0
    }

    // ---------------------------------------------------------------- input

    /// Parses and runs a whole script text.
    fn run_text(&mut self, text: &[u8]) -> i32 {
        match parse::parse(text) {
            Ok(items) => self.run_items(&items),
            Err(e) => {
                syntax_error(&e);
                self.status = 2;
            }
        }
        self.exit.unwrap_or(self.status)
    }

    /// Runs the script in file `path`.
    fn run_file(&mut self, path: &[u8]) -> i32 {
        match read_file(path) {
            Ok(text) => self.run_text(&text),
            Err(e) => {
                eprintln!("sh: can't open '{}': {e}", Bytes(path));
                // As busybox and dash: a script that cannot be read is 127
                // when it is missing, 126 otherwise.
                if e == Errno::ENOENT {
                    127
                } else {
                    126
                }
            }
        }
    }

    /// Reads and runs commands from standard input, line by line; with a
    /// prompt when it is a terminal.
    fn run_stdin(&mut self) -> i32 {
        let tty = fs::isatty(STDIN);
        self.interactive = tty;
        if tty {
            for sig in [SIGINT, SIGQUIT] {
                // Keep the shell alive on ^C; cannot fail for these.
                let _ = process::signal_disposition(sig, SIG_IGN);
            }
        }
        let prompt: &[u8] = if process::getuid() == 0 { b"# " } else { b"$ " };
        let mut pending: Vec<u8> = Vec::new();
        loop {
            if tty {
                self.reap_background();
                let p: &[u8] = if pending.is_empty() { prompt } else { b"> " };
                // The terminal may be gone; then reading fails too.
                let _ = write_all(STDERR, p);
            }
            let Some(line) = read_line(tty) else {
                if !pending.is_empty() {
                    if let Err(e) = parse::parse(&pending) {
                        syntax_error(&e);
                        self.status = 2;
                    }
                }
                if tty {
                    let _ = write_all(STDERR, b"\n");
                }
                return self.status;
            };
            pending.extend_from_slice(&line);
            match parse::parse(&pending) {
                Err(ParseError::Incomplete(_)) => continue,
                Err(e) => {
                    syntax_error(&e);
                    self.status = 2;
                }
                Ok(items) => self.run_items(&items),
            }
            pending.clear();
            if let Some(st) = self.exit {
                return st;
            }
        }
    }
}

fn is_builtin(name: &[u8]) -> bool {
    matches!(name, b"cd" | b"exit" | b"echo" | b"export" | b"unset" | b"pwd" | b":")
}

fn echo(args: &[Vec<u8>]) -> i32 {
    let mut i = 0;
    let mut newline = true;
    while args.get(i).is_some_and(|a| a == b"-n") {
        newline = false;
        i += 1;
    }
    let mut out = args[i..].join(&b' ');
    if newline {
        out.push(b'\n');
    }
    match write_all(STDOUT, &out) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sh: echo: write error: {e}");
            1
        }
    }
}

fn restore(saved: Vec<SavedFd>) {
    for s in saved.into_iter().rev() {
        match s.copy {
            Some(copy) => {
                if let Err(e) = fs::dup3(copy, s.fd, 0) {
                    eprintln!("sh: restoring fd {}: {e}", s.fd);
                }
                close_or_warn(copy);
            }
            // It was closed before: close it again.
            None => {
                let _ = fs::close(s.fd);
            }
        }
    }
}

fn dup_or_die(from: i32, to: i32) {
    if let Err(e) = fs::dup3(from, to, 0) {
        eprintln!("sh: dup: {e}");
        process::exit(2);
    }
}

fn close_or_warn(fd: i32) {
    if let Err(e) = fs::close(fd) {
        eprintln!("sh: close {fd}: {e}");
    }
}

fn syntax_error(e: &ParseError) {
    match e {
        ParseError::Incomplete(what) => eprintln!("sh: syntax error: {what}"),
        ParseError::Unexpected(tok) => eprintln!("sh: syntax error: unexpected \"{}\"", Bytes(tok)),
    }
}

fn decimal(n: i64) -> Vec<u8> {
    alloc::format!("{n}").into_bytes()
}

fn parse_number(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) || digits.len() > 18 {
        return None;
    }
    let n = digits.iter().fold(0i64, |n, d| n * 10 + (d - b'0') as i64);
    Some(if neg { -n } else { n })
}

fn parse_fd(s: &[u8]) -> Option<i32> {
    parse_number(s).filter(|n| (0..=1024).contains(n)).map(|n| n as i32)
}

fn read_file(path: &[u8]) -> Result<Vec<u8>, Errno> {
    let fd = fs::open(path, O_RDONLY | O_CLOEXEC, 0)?;
    let mut out = Vec::new();
    let mut buf = alloc::vec![0u8; 16 * 1024];
    let res = loop {
        match fs::read(fd, &mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::EINTR) => {}
            Err(e) => break Err(e),
        }
    };
    fs::close(fd)?;
    res.map(|()| out)
}

/// One line of standard input including its `\n` (None at end of input).
/// From a pipe or file it reads a byte at a time, so that the commands it
/// runs find the rest of their standard input unread.
fn read_line(tty: bool) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let want = if tty { buf.len() } else { 1 };
        match fs::read(STDIN, &mut buf[..want]) {
            Ok(0) => return if line.is_empty() { None } else { Some(line) },
            Ok(n) => {
                line.extend_from_slice(&buf[..n]);
                if line.last() == Some(&b'\n') {
                    return Some(line);
                }
            }
            Err(Errno::EINTR) => {}
            Err(e) => {
                eprintln!("sh: read error: {e}");
                return if line.is_empty() { None } else { Some(line) };
            }
        }
    }
}

fn main(args: rt::Args) -> i32 {
    let mut sh = Shell::new();
    let args: Vec<&[u8]> = args.iter().collect();
    match args.get(1).copied() {
        Some(b"-c") => {
            let Some(cmds) = args.get(2) else {
                eprintln!("sh: -c requires an argument");
                return 2;
            };
            if let Some(name) = args.get(3) {
                sh.argv0 = name.to_vec();
                sh.params = args[4..].iter().map(|a| a.to_vec()).collect();
            }
            sh.run_text(cmds)
        }
        Some(b"-s") | None => sh.run_stdin(),
        Some(file) => {
            sh.argv0 = file.to_vec();
            sh.params = args[2..].iter().map(|a| a.to_vec()).collect();
            sh.run_file(file)
        }
    }
}
