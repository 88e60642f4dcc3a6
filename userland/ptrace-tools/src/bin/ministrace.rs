//! `ministrace [-f] [-c] [-e trace=NAME,...] [-o FILE] [-p PID] [PROG ARGS]`:
//! Linux strace's output for a program it starts (`PTRACE_TRACEME`, then
//! exec) or a process it attaches to (`PTRACE_SEIZE` + `PTRACE_INTERRUPT`).
//!
//! Every system call is read at its entry and exit stops with
//! `PTRACE_GET_SYSCALL_INFO` and printed as `name(args) = result`, its
//! arguments decoded from the one system call table
//! (`ptrace_tools::decode`); signals as `--- SIGxxx {siginfo} ---`, the
//! end as `+++ exited with N +++` or `+++ killed by SIGxxx +++`. With -f,
//! children (fork, vfork, clone) are followed and lines carry strace's
//! `[pid N] ` prefix (`N ` with -o), with `<unfinished ...>` and
//! `<... name resumed>` where calls interleave. -c prints strace's
//! summary table instead of the calls, -e trace= keeps only the named
//! calls, -o writes the trace to a file. The exit status is the traced
//! program's (128 + signal if a signal killed it).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use ptrace_tools::decode::{self, Call, Memory, Ret};
use ptrace_tools::fmt::{self, CallCount};
use ptrace_tools::sys;
use rt::process::{fork, Fork};
use rt::{eprintln, Errno};
use uapi::ptrace::*;
use uapi::signal::{SIGSTOP, SIGTRAP, SIGTSTP, SIGTTIN, SIGTTOU};
use uapi::wait::{WCOREDUMP, WEXITSTATUS, WIFEXITED, WIFSTOPPED, WSTOPSIG, WTERMSIG};

rt::main!(main);

/// The options, as strace spells them.
struct Opts {
    follow: bool,
    count: bool,
    trace: Option<Vec<&'static str>>,
    out: Option<&'static [u8]>,
    attach: Option<i32>,
    prog: Vec<&'static [u8]>,
}

fn usage(msg: &str) -> Result<Opts, String> {
    Err(format!(
        "{msg}\nusage: ministrace [-f] [-c] [-e trace=NAME,...] [-o FILE] [-p PID] [PROG [ARGS]]"
    ))
}

fn parse_trace(v: &[u8]) -> Result<Vec<&'static str>, String> {
    let v = core::str::from_utf8(v).map_err(|_| String::from("invalid -e argument"))?;
    let list = match v.split_once('=') {
        Some(("trace" | "t", l)) => l,
        Some((q, _)) => return Err(format!("invalid -e qualifier '{q}' (only trace= is supported)")),
        None => v,
    };
    list.split(',')
        .map(|n| {
            uapi::syscalls::by_name(n)
                .map(|s| s.name)
                .ok_or_else(|| format!("invalid system call '{n}'"))
        })
        .collect()
}

fn parse(args: &rt::Args) -> Result<Opts, String> {
    let mut o = Opts {
        follow: false,
        count: false,
        trace: None,
        out: None,
        attach: None,
        prog: Vec::new(),
    };
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if a.first() != Some(&b'-') || a.len() < 2 {
            o.prog.push(a);
            o.prog.extend(it.by_ref());
            break;
        }
        let mut i = 1;
        while i < a.len() {
            match a[i] {
                b'f' => o.follow = true,
                b'c' => o.count = true,
                c @ (b'e' | b'o' | b'p') => {
                    let val: &'static [u8] = if i + 1 < a.len() {
                        &a[i + 1..]
                    } else {
                        match it.next() {
                            Some(v) => v,
                            None => return usage(&format!("option requires an argument -- '{}'", c as char)),
                        }
                    };
                    match c {
                        b'e' => o.trace = Some(parse_trace(val)?),
                        b'o' => o.out = Some(val),
                        _ => {
                            let pid = core::str::from_utf8(val).ok().and_then(|s| s.parse::<i32>().ok());
                            match pid {
                                Some(p) if p > 0 => o.attach = Some(p),
                                _ => return usage("Invalid process id"),
                            }
                        }
                    }
                    i = a.len();
                    continue;
                }
                c => return usage(&format!("invalid option -- '{}'", c as char)),
            }
            i += 1;
        }
    }
    if o.prog.is_empty() == o.attach.is_none() {
        return usage(if o.prog.is_empty() {
            "must have PROG [ARGS] or -p PID"
        } else {
            "-p PID and PROG [ARGS] are mutually exclusive"
        });
    }
    Ok(o)
}

/// A tracee's memory through process_vm_readv/PEEKDATA.
struct TraceeMem(i32);

impl Memory for TraceeMem {
    fn read(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        sys::read_mem(self.0, addr, len)
    }
    fn read_cstr(&self, addr: u64, max: usize) -> Option<(Vec<u8>, bool)> {
        sys::read_cstr(self.0, addr, max)
    }
}

/// What the tracer knows of one traced task.
#[derive(Default)]
struct Tracee {
    /// The call between its entry and exit stops.
    call: Option<Call>,
    /// Its line is printed (it passes -e trace=).
    shown: bool,
    /// Another line came between its entry and exit: the exit part
    /// starts with `<... name resumed>`.
    interrupted: bool,
    /// Its first stop (the attach stop) has been seen.
    started: bool,
    /// ru_stime at the entry stop.
    entry_stime: u64,
    /// Its parent's fork/vfork/clone event has been seen (or it is the
    /// first tracee).
    event_seen: bool,
}

/// The trace output: where it goes and strace's column bookkeeping.
struct Out {
    fd: i32,
    /// With -o and -f, lines start with `PID ` instead of `[pid PID] `.
    file_prefix: bool,
    /// The task whose line is left open (its call has not returned).
    open: Option<i32>,
    col: usize,
}

impl Out {
    fn write(&mut self, s: &str) {
        match s.rfind('\n') {
            Some(i) => self.col = s.len() - i - 1,
            None => self.col += s.len(),
        }
        let _ = rt::io::write_all(self.fd, s.as_bytes());
    }

    /// Starts a line for `pid`, ending another task's open line with
    /// ` <unfinished ...>`.
    fn leader(&mut self, pid: i32, tracees: &mut BTreeMap<i32, Tracee>) {
        if let Some(other) = self.open.take() {
            self.write(" <unfinished ...>\n");
            if let Some(t) = tracees.get_mut(&other) {
                t.interrupted = true;
            }
        }
        if self.col != 0 {
            self.write("\n");
        }
        if self.file_prefix {
            self.write(&format!("{pid:<5} "));
        } else if tracees.len() > 1 {
            self.write(&format!("[pid {pid:>5}] "));
        }
    }

    /// Pads to the result column and prints `= RESULT`.
    fn result(&mut self, r: &str) {
        let pad = fmt::RESULT_COLUMN.saturating_sub(self.col);
        let spaces = " ".repeat(pad);
        self.write(&format!("{spaces}= {r}\n"));
    }
}

struct Tracer {
    opts: Opts,
    out: Out,
    tracees: BTreeMap<i32, Tracee>,
    /// Tasks that ended before their parent's fork event was seen (the
    /// child's stops and exit can come first): the event must not bring
    /// them back.
    ended: BTreeSet<i32>,
    counts: BTreeMap<&'static str, CallCount>,
    root: i32,
    root_status: i32,
}

fn resume(request: i64, pid: i32, sig: u32) {
    // ESRCH: it died meanwhile; its exit is reported next.
    let _ = sys::ptrace_ctl(request, pid, 0, sig as usize);
}

impl Tracer {
    fn add(&mut self, pid: i32) {
        if let alloc::collections::btree_map::Entry::Vacant(e) = self.tracees.entry(pid) {
            e.insert(Tracee::default());
            if !self.opts.count || pid != self.root {
                eprintln!("ministrace: Process {pid} attached");
            }
        }
    }

    fn wants(&self, name: &str) -> bool {
        self.opts.trace.as_ref().is_none_or(|l| l.contains(&name))
    }

    fn syscall_stop(&mut self, pid: i32, stime: u64) {
        let Ok(info) = sys::syscall_info(pid) else { return };
        match info.kind {
            SyscallInfoKind::Entry { nr, args } => {
                let call = Call { nr, args };
                let shown = self.wants(&call.name());
                let Some(t) = self.tracees.get_mut(&pid) else { return };
                t.call = Some(call);
                t.shown = shown;
                t.interrupted = false;
                t.entry_stime = stime;
                if shown && !self.opts.count {
                    let text = if call.name() == "restart_syscall" {
                        String::from("restart_syscall(<... resumed interrupted call>")
                    } else {
                        decode::entry_text(&call, &TraceeMem(pid))
                    };
                    self.out.leader(pid, &mut self.tracees);
                    self.out.write(&text);
                    self.out.open = Some(pid);
                }
            }
            SyscallInfoKind::Exit { rval, is_error } => {
                let Some(t) = self.tracees.get_mut(&pid) else { return };
                // Attached in the middle of a call: its entry was not seen.
                let Some(call) = t.call.take() else { return };
                if !t.shown {
                    return;
                }
                let ret = Ret { rval, is_error };
                if self.opts.count {
                    let name = call.syscall().map_or("syscall", |s| s.name);
                    let c = self.counts.entry(name).or_insert_with(|| CallCount {
                        name: String::from(name),
                        ..CallCount::default()
                    });
                    c.calls += 1;
                    c.errors += u64::from(is_error);
                    c.time_us += stime.saturating_sub(t.entry_stime);
                    return;
                }
                let interrupted = t.interrupted;
                if self.out.open != Some(pid) || interrupted {
                    self.out.leader(pid, &mut self.tracees);
                    self.out.write(&format!("<... {} resumed>", call.name()));
                }
                self.out.open = None;
                let text = decode::exit_text(&call, ret, &TraceeMem(pid));
                self.out.write(&text);
                self.out.write(" ");
                self.out.result(&decode::result(&call, ret));
            }
            _ => {}
        }
    }

    /// A line of its own for `pid` (`--- ... ---`, `+++ ... +++`).
    fn line(&mut self, pid: i32, text: &str) {
        if self.opts.count {
            return;
        }
        self.out.leader(pid, &mut self.tracees);
        self.out.write(text);
        self.out.write("\n");
    }

    fn died(&mut self, pid: i32, status: i32) {
        let Some(t) = self.tracees.get(&pid) else { return };
        if let (Some(call), true, false) = (t.call, t.shown, self.opts.count) {
            // The call never returned (exit_group, or killed inside it).
            if self.out.open != Some(pid) || t.interrupted {
                self.out.leader(pid, &mut self.tracees);
                self.out.write(&format!("<... {} resumed>", call.name()));
            }
            self.out.open = None;
            if !call.decoded_at_entry() {
                self.out.write(" <unfinished ...>");
            }
            self.out.write(") ");
            self.out.result("?");
        }
        let sig = WTERMSIG(status);
        let text = if WIFEXITED(status) {
            format!("+++ exited with {} +++", WEXITSTATUS(status))
        } else {
            let core = if WCOREDUMP(status) { " (core dumped)" } else { "" };
            format!("+++ killed by {}{core} +++", fmt::signal(i64::from(sig)))
        };
        self.line(pid, &text);
        if self.tracees.remove(&pid).is_some_and(|t| !t.event_seen) {
            self.ended.insert(pid);
        }
        if pid == self.root {
            self.root_status = if WIFEXITED(status) {
                WEXITSTATUS(status)
            } else {
                128 + sig
            };
        }
    }

    fn stopped(&mut self, pid: i32, status: i32, stime: u64) {
        let sig = WSTOPSIG(status) as u32;
        // A ptrace event stop's status is SIGTRAP | event << 8 above the
        // stop bits (see uapi::wait::w_stopcode).
        let event = (status >> 16) as u32;
        // A stop of a pid that ended earlier is a new task with a reused
        // pid.
        self.ended.remove(&pid);
        self.add(pid);
        let Some(t) = self.tracees.get_mut(&pid) else { return };
        if !t.started {
            t.started = true;
            // A new child's attach stop: SIGSTOP, or PTRACE_EVENT_STOP
            // when seized.
            if sig == SIGSTOP || event == PTRACE_EVENT_STOP {
                return resume(PTRACE_SYSCALL, pid, 0);
            }
        }
        if sig == SIGTRAP | 0x80 {
            self.syscall_stop(pid, stime);
            return resume(PTRACE_SYSCALL, pid, 0);
        }
        if event != 0 {
            match event {
                PTRACE_EVENT_FORK | PTRACE_EVENT_VFORK | PTRACE_EVENT_CLONE => {
                    let mut child: u64 = 0;
                    // SAFETY: child is a writable unsigned long, what
                    // GETEVENTMSG stores.
                    let r = unsafe { sys::ptrace(PTRACE_GETEVENTMSG, pid, 0, &mut child as *mut u64 as usize) };
                    let child = child as i32;
                    if r.is_ok() && child != 0 && !self.ended.remove(&child) {
                        self.add(child);
                        if let Some(t) = self.tracees.get_mut(&child) {
                            t.event_seen = true;
                        }
                    }
                }
                PTRACE_EVENT_STOP if matches!(sig, SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU) => {
                    // A group stop of a seized tracee: it stays stopped.
                    self.line(pid, &format!("--- stopped by {} ---", fmt::signal(i64::from(sig))));
                    return resume(PTRACE_LISTEN, pid, 0);
                }
                _ => {}
            }
            return resume(PTRACE_SYSCALL, pid, 0);
        }
        let mut si = [0u8; 128];
        // SAFETY: si is a writable siginfo_t.
        match unsafe { sys::ptrace(PTRACE_GETSIGINFO, pid, 0, si.as_mut_ptr() as usize) } {
            Ok(_) => {
                self.line(
                    pid,
                    &format!("--- {} {} ---", fmt::signal(i64::from(sig)), fmt::siginfo(&si)),
                );
                resume(PTRACE_SYSCALL, pid, sig);
            }
            Err(_) => {
                // A group stop of a tracee that is not seized.
                self.line(pid, &format!("--- stopped by {} ---", fmt::signal(i64::from(sig))));
                resume(PTRACE_SYSCALL, pid, 0);
            }
        }
    }

    fn run(&mut self) {
        while !self.tracees.is_empty() {
            let w = match sys::wait(-1, 0) {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("ministrace: wait4: {}", e.name().unwrap_or("?"));
                    break;
                }
            };
            if WIFSTOPPED(w.status) {
                self.stopped(w.pid, w.status, w.stime_us);
            } else {
                self.died(w.pid, w.status);
            }
        }
        if self.opts.count {
            let rows: Vec<CallCount> = self.counts.values().cloned().collect();
            self.out.write(&fmt::summary_table(&rows));
        }
    }
}

fn options(opts: &Opts) -> u64 {
    let mut o = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC;
    if opts.follow {
        o |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;
    }
    if opts.attach.is_none() {
        o |= PTRACE_O_EXITKILL;
    }
    o
}

/// PROG as execve wants it: a path, or found in `$PATH`.
fn find_prog(prog: &[u8]) -> Vec<u8> {
    if prog.contains(&b'/') {
        return prog.to_vec();
    }
    let path = rt::env::var(b"PATH").unwrap_or(b"/bin:/usr/bin:/sbin:/usr/sbin");
    for dir in path.split(|&c| c == b':') {
        let mut p = dir.to_vec();
        p.push(b'/');
        p.extend_from_slice(prog);
        if rt::fs::stat(&p).is_ok() {
            return p;
        }
    }
    prog.to_vec()
}

/// Forks PROG stopped (TRACEME + SIGSTOP before exec); its pid.
fn start(opts: &Opts) -> Result<i32, String> {
    let path = find_prog(opts.prog[0]);
    match fork() {
        Ok(Fork::Child) => {
            let _ = sys::ptrace_ctl(PTRACE_TRACEME, 0, 0, 0);
            let _ = rt::process::kill(rt::process::getpid(), SIGSTOP as i32);
            let e = rt::process::execve(&path, opts.prog.iter().copied(), rt::env::vars());
            eprintln!("ministrace: exec: {}", e.message().unwrap_or("Unknown error"));
            rt::process::exit(1);
        }
        Ok(Fork::Parent(pid)) => {
            let w = sys::wait(pid, 0).map_err(|e| format!("wait4: {e:?}"))?;
            if !WIFSTOPPED(w.status) {
                return Err(format!("child ended before exec (status {:#x})", w.status));
            }
            sys::ptrace_ctl(PTRACE_SETOPTIONS, pid, 0, options(opts) as usize)
                .map_err(|e| format!("PTRACE_SETOPTIONS: {e:?}"))?;
            resume(PTRACE_SYSCALL, pid, 0);
            Ok(pid)
        }
        Err(e) => Err(format!("fork: {e:?}")),
    }
}

/// Seizes `pid` and stops it (PTRACE_INTERRUPT) before tracing it.
fn attach(opts: &Opts, pid: i32) -> Result<i32, String> {
    let why = |what: &str, e: Errno| format!("attach: {what} {pid}: {}", e.message().unwrap_or("Unknown error"));
    sys::ptrace_ctl(PTRACE_SEIZE, pid, 0, options(opts) as usize).map_err(|e| why("PTRACE_SEIZE", e))?;
    sys::ptrace_ctl(PTRACE_INTERRUPT, pid, 0, 0).map_err(|e| why("PTRACE_INTERRUPT", e))?;
    eprintln!("ministrace: Process {pid} attached");
    Ok(pid)
}

fn main(args: rt::Args) -> i32 {
    let opts = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ministrace: {e}");
            return 1;
        }
    };
    let fd = match opts.out {
        Some(path) => match rt::fs::open(
            path,
            rt::fs::O_WRONLY | rt::fs::O_CREAT | rt::fs::O_TRUNC | rt::fs::O_CLOEXEC,
            0o644,
        ) {
            Ok(fd) => fd,
            Err(e) => {
                eprintln!(
                    "ministrace: Can't fopen '{}': {}",
                    String::from_utf8_lossy(path),
                    e.message().unwrap_or("Unknown error")
                );
                return 1;
            }
        },
        None => 2,
    };
    let started = match opts.attach {
        Some(pid) => attach(&opts, pid),
        None => start(&opts),
    };
    let root = match started {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ministrace: {e}");
            return 1;
        }
    };
    let mut t = Tracer {
        out: Out {
            fd,
            file_prefix: opts.out.is_some() && opts.follow,
            open: None,
            col: 0,
        },
        opts,
        tracees: BTreeMap::new(),
        ended: BTreeSet::new(),
        counts: BTreeMap::new(),
        root,
        root_status: 0,
    };
    t.tracees.insert(
        root,
        Tracee {
            // The TRACEME child's SIGSTOP was consumed by start(); the
            // seized one's PTRACE_EVENT_STOP is still to come.
            started: t.opts.attach.is_none(),
            event_seen: true,
            ..Tracee::default()
        },
    );
    t.run();
    t.root_status
}
