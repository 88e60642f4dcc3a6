//! `kprobetests stress [--seconds N] [--buffer-kb K] [--no-instance]`: probes hit from
//! several CPUs while definitions churn and a reader drains `trace_pipe`.
//!
//! - Three hitter processes (pinned to CPUs 1, 2, 3, modulo the CPUs
//!   there are) call `lseek(-1, SEQ, WHO)` as fast as they can, SEQ
//!   counting up from 0 and WHO their number; the event `kt_stress` on
//!   `__arm64_sys_lseek` records `fd`, `seq` and `who` from `pt_regs`.
//! - The manager (this process, CPU 0) meanwhile defines, enables,
//!   disables and removes other events: entry and return probes on
//!   `getppid` it calls itself, and a second probe on `__arm64_sys_lseek`
//!   that the hitters hit while it comes and goes. They are enabled in the
//!   instance `instances/kt_stress`, because removing an event that was
//!   enabled clears the buffers it wrote to (Linux's `clear_trace`); where
//!   there are no instances, each churn event is enabled in the top buffer
//!   and only removed at the end, and a never-enabled definition is added
//!   and removed every round instead (`--no-instance` chooses this way
//!   where instances exist too).
//! - A reader process drains the top buffer's `trace_pipe`.
//!
//! At the end every line read must parse, name `kt_stress`, and carry what
//! its hitter passed (`fd=-1`, its WHO, from its pid, SEQ increasing); and
//! `kprobe_profile`'s hits of `kt_stress` (which must equal the calls the
//! hitters made) must equal lines read + entries lost (`overrun` and
//! `dropped events` of every `per_cpu/cpuN/stats`). Prints
//! `kprobetests stress: ...: ok` (exit 0) or `kprobetests stress: FAIL ...`
//! (exit 1).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use kprobetests::parse::{self, TraceLine};
use kprobetests::sys::{getpid, getppid, lseek_raw, now_ns, pin_to_cpu, sleep_ms};
use kprobetests::tracefs::Tracefs;
use rt::process::{exit, fork, kill, waitpid, Fork, WaitStatus, SIGKILL};
use rt::{fs, println, Errno};

const HITTERS: usize = 3;
const INSTANCE: &str = "instances/kt_stress";

/// What the reader found, sent back through a pipe as little-endian u64s
/// followed by the text of the first bad line.
#[derive(Default, Debug)]
struct ReaderReport {
    lines: u64,
    stress: u64,
    /// Lines of the churn events (only where they share the top buffer).
    churn: u64,
    lost_lines: u64,
    corrupt: u64,
    bad_fields: u64,
    out_of_order: u64,
    first_bad: String,
}

impl ReaderReport {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::new();
        for n in [
            self.lines,
            self.stress,
            self.churn,
            self.lost_lines,
            self.corrupt,
            self.bad_fields,
            self.out_of_order,
        ] {
            v.extend_from_slice(&n.to_le_bytes());
        }
        v.extend_from_slice(self.first_bad.as_bytes());
        v
    }

    fn decode(b: &[u8]) -> Option<ReaderReport> {
        let n = |i: usize| -> Option<u64> { Some(u64::from_le_bytes(b.get(i * 8..i * 8 + 8)?.try_into().ok()?)) };
        Some(ReaderReport {
            lines: n(0)?,
            stress: n(1)?,
            churn: n(2)?,
            lost_lines: n(3)?,
            corrupt: n(4)?,
            bad_fields: n(5)?,
            out_of_order: n(6)?,
            first_bad: String::from_utf8_lossy(b.get(56..)?).into_owned(),
        })
    }

    fn bad(&mut self, what: &str, line: &str) {
        if self.first_bad.is_empty() {
            self.first_bad = format!("{what}: {line:?}");
        }
    }

    /// Checks one complete line.
    fn line(&mut self, line: &str, who: &Tasks, last_seq: &mut [Option<u64>; HITTERS]) {
        self.lines += 1;
        if let Some(n) = parse::lost_events(line) {
            self.lost_lines += n;
            self.lines -= 1;
            return;
        }
        let Some(l) = TraceLine::parse(line) else {
            self.corrupt += 1;
            self.bad("unparsable", line);
            return;
        };
        if l.event.starts_with("kt_churn_") && who.churn_in_top {
            self.churn += 1;
            if !churn_fields(&l, who) {
                self.bad_fields += 1;
                self.bad("wrong fields", line);
            }
            return;
        }
        if l.event != "kt_stress" {
            self.bad_fields += 1;
            self.bad("foreign event", line);
            return;
        }
        self.stress += 1;
        if !self.stress_fields(&l, &who.hitters, last_seq) {
            self.bad_fields += 1;
            self.bad("wrong fields", line);
        }
    }

    fn stress_fields(&mut self, l: &TraceLine, pids: &[i32; HITTERS], last_seq: &mut [Option<u64>; HITTERS]) -> bool {
        let Some(fields) = l.fields() else { return false };
        let [(f, fd), (s, seq), (w, who)] = fields.as_slice() else {
            return false;
        };
        if (f.as_str(), s.as_str(), w.as_str()) != ("fd", "seq", "who") || fd != "-1" {
            return false;
        }
        let (Some(seq), Some(who)) = (parse::decimal(seq.as_bytes()), parse::decimal(who.as_bytes())) else {
            return false;
        };
        let who = who as usize;
        if who >= HITTERS
            || pids[who] != l.pid
            || !l.location().is_some_and(|x| x.starts_with("__arm64_sys_lseek+0x0/"))
        {
            return false;
        }
        if last_seq[who].is_some_and(|prev| seq <= prev) {
            self.out_of_order += 1;
            self.bad("sequence not increasing", &l.body);
        }
        last_seq[who] = Some(seq);
        true
    }
}

/// Who may appear in the top buffer, and with what.
struct Tasks {
    hitters: [i32; HITTERS],
    manager: i32,
    manager_parent: i32,
    /// The churn events write to the top buffer too.
    churn_in_top: bool,
}

/// Whether a churn event's line carries what its task passed or got.
fn churn_fields(l: &TraceLine, who: &Tasks) -> bool {
    let loc = l.location().unwrap_or("");
    let f = |name: &str| l.field(name).unwrap_or_default();
    match l.event.as_str() {
        "kt_churn_p" => l.pid == who.manager && loc.starts_with("__arm64_sys_getppid+0x0/") && f("c") == "kprobetests",
        "kt_churn_r" => {
            l.pid == who.manager
                && loc.ends_with(" <- __arm64_sys_getppid")
                && f("ret") == format!("{}", who.manager_parent)
        }
        "kt_churn_l" => {
            let w = parse::decimal(f("who").as_bytes()).unwrap_or(u64::MAX) as usize;
            loc.starts_with("__arm64_sys_lseek+0x0/")
                && parse::decimal(f("seq").as_bytes()).is_some()
                && who.hitters.get(w) == Some(&l.pid)
        }
        _ => false,
    }
}

/// The reader: drains `trace_pipe` (non-blocking, napping when empty)
/// until `stop` reports end of file, then once more, and reports.
fn reader(t: &Tracefs, stop: i32, report: i32, who: Tasks) -> ! {
    let mut rep = ReaderReport::default();
    let mut last_seq = [None; HITTERS];
    let fd = match t.open("trace_pipe", fs::O_RDONLY | fs::O_NONBLOCK) {
        Ok(fd) => fd,
        Err(e) => {
            rep.corrupt = u64::MAX;
            rep.first_bad = format!("open trace_pipe: {e:?}");
            let _ = rt::io::write_all(report, &rep.encode());
            exit(1)
        }
    };
    let mut partial: Vec<u8> = Vec::new();
    let mut buf = alloc::vec![0u8; 16384];
    let mut stopping = false;
    loop {
        match fs::read(fd, &mut buf) {
            Ok(n) if n > 0 => {
                partial.extend_from_slice(&buf[..n]);
                let end = partial.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
                let text = String::from_utf8_lossy(&partial[..end]).into_owned();
                for line in text.lines() {
                    rep.line(line, &who, &mut last_seq);
                }
                partial.drain(..end);
                continue;
            }
            Ok(_) | Err(Errno::EAGAIN) => {}
            Err(Errno::EINTR) => continue,
            Err(e) => {
                rep.corrupt += 1;
                rep.bad("read trace_pipe", &format!("{e:?}"));
                break;
            }
        }
        if stopping {
            break;
        }
        // End of file on `stop`: the hitters are done; one more pass.
        let mut b = [0u8; 1];
        match fs::read(stop, &mut b) {
            Ok(0) => stopping = true,
            _ => sleep_ms(1),
        }
    }
    if !partial.is_empty() {
        rep.corrupt += 1;
        let l = String::from_utf8_lossy(&partial).into_owned();
        rep.bad("unterminated line", &l);
    }
    let _ = rt::io::write_all(report, &rep.encode());
    exit(0)
}

/// A hitter: waits for `go` to close, then calls lseek(-1, seq, who) until
/// `deadline`; writes (who, calls) to `done`.
fn hitter(who: usize, cpus: usize, go: i32, done: i32, deadline_ms: u64) -> ! {
    let _ = pin_to_cpu((who + 1) % cpus.max(1));
    let mut b = [0u8; 1];
    let _ = fs::read(go, &mut b);
    let deadline = now_ns() + deadline_ms * 1_000_000;
    let mut seq = 0u64;
    loop {
        let _ = lseek_raw(-1, seq, who as u64);
        seq += 1;
        if seq.is_multiple_of(128) && now_ns() >= deadline {
            break;
        }
    }
    let mut rec = [0u8; 16];
    rec[..8].copy_from_slice(&(who as u64).to_le_bytes());
    rec[8..].copy_from_slice(&seq.to_le_bytes());
    let _ = rt::io::write_all(done, &rec);
    exit(0)
}

struct Options {
    seconds: u64,
    buffer_kb: u64,
    /// Churn in the top buffer even where instances exist.
    no_instance: bool,
}

fn options(args: rt::Args) -> Result<Options, String> {
    let mut o = Options {
        seconds: 3,
        buffer_kb: 64,
        no_instance: false,
    };
    let mut i = 2;
    while let Some(a) = args.get(i) {
        if a == b"--no-instance" {
            o.no_instance = true;
            i += 1;
            continue;
        }
        let v = args.get(i + 1).and_then(parse::decimal);
        match (a, v) {
            (b"--seconds", Some(v)) if (1..=3600).contains(&v) => o.seconds = v,
            (b"--buffer-kb", Some(v)) if (1..=65536).contains(&v) => o.buffer_kb = v,
            _ => {
                return Err(format!(
                    "usage: kprobetests stress [--seconds 1..3600] [--buffer-kb K] [--no-instance] (at {:?})",
                    rt::io::Bytes(a).to_string()
                ))
            }
        }
        i += 2;
    }
    Ok(o)
}

/// Where churn events are enabled, and what can be removed right away.
enum ChurnMode {
    /// In `instances/kt_stress`: removal clears only that instance.
    Instance,
    /// In the top buffer: enabled events are removed only at the end.
    TopDeferred,
}

/// The churn the manager keeps up until `deadline`; returns rounds done.
fn churn(t: &Tracefs, mode: &ChurnMode, deadline: u64) -> Result<u64, String> {
    let enable_path = |name: &str| match mode {
        ChurnMode::Instance => format!("{INSTANCE}/events/kprobes/{name}/enable"),
        ChurnMode::TopDeferred => format!("events/kprobes/{name}/enable"),
    };
    let e = |what: &str, e: Errno| format!("{what}: {e:?}");
    let defs = [
        ("kt_churn_p", "p:kt_churn_p __arm64_sys_getppid c=$comm"),
        ("kt_churn_r", "r:kt_churn_r __arm64_sys_getppid ret=$retval"),
        (
            "kt_churn_l",
            "p:kt_churn_l __arm64_sys_lseek seq=+8(%x0):u64 who=+16(%x0):u32",
        ),
    ];
    let mut rounds = 0u64;
    let mut defined_top = [false; 3];
    while now_ns() < deadline {
        let (name, def) = defs[(rounds % 3) as usize];
        let slot = (rounds % 3) as usize;
        let deferred = matches!(mode, ChurnMode::TopDeferred);
        if !(deferred && defined_top[slot]) {
            t.define(def).map_err(|x| e(&format!("define {name}"), x))?;
            defined_top[slot] = true;
        }
        t.write(&enable_path(name), "1")
            .map_err(|x| e(&format!("enable {name}"), x))?;
        for _ in 0..5 {
            getppid();
        }
        sleep_ms(2);
        t.write(&enable_path(name), "0")
            .map_err(|x| e(&format!("disable {name}"), x))?;
        if deferred {
            // Still a definition added and removed while others hit.
            t.define("p:kt_churn_idle __arm64_sys_getppid")
                .map_err(|x| e("define kt_churn_idle", x))?;
            t.remove("kt_churn_idle").map_err(|x| e("remove kt_churn_idle", x))?;
        } else {
            t.remove(name).map_err(|x| e(&format!("remove {name}"), x))?;
            defined_top[slot] = false;
        }
        rounds += 1;
    }
    Ok(rounds)
}

fn sum_stats(t: &Tracefs, key: &str) -> Result<u64, String> {
    let mut sum = 0;
    for cpu in t.cpus().map_err(|e| format!("per_cpu: {e:?}"))? {
        let text = t
            .read_text(&format!("per_cpu/cpu{cpu}/stats"))
            .map_err(|e| format!("cpu{cpu}/stats: {e:?}"))?;
        sum += parse::stat(&text, key).ok_or_else(|| format!("no {key} in cpu{cpu}/stats"))?;
    }
    Ok(sum)
}

fn run(t: &Tracefs, o: &Options) -> Result<String, String> {
    t.reset(crate::default_buffer_kb())
        .map_err(|e| format!("reset: {e:?}"))?;
    let _ = fs::unlinkat(fs::AT_FDCWD, &t.path(INSTANCE), fs::AT_REMOVEDIR);
    let mode = match o.no_instance {
        true => ChurnMode::TopDeferred,
        false => match fs::mkdirat(fs::AT_FDCWD, &t.path(INSTANCE), 0o755) {
            Ok(()) => ChurnMode::Instance,
            Err(_) => ChurnMode::TopDeferred,
        },
    };
    t.write("buffer_size_kb", &format!("{}", o.buffer_kb))
        .map_err(|e| format!("buffer_size_kb: {e:?}"))?;
    t.define("p:kt_stress __arm64_sys_lseek fd=+0(%x0):s32 seq=+8(%x0):u64 who=+16(%x0):u32")
        .map_err(|e| format!("define kt_stress: {e:?}"))?;
    t.clear_trace().map_err(|e| format!("clear trace: {e:?}"))?;
    let cpus = t.cpus().map_err(|e| format!("per_cpu: {e:?}"))?.len();
    let _ = pin_to_cpu(0);

    let [go_r, go_w] = fs::pipe2(fs::O_CLOEXEC).map_err(|e| format!("pipe: {e:?}"))?;
    let [done_r, done_w] = fs::pipe2(fs::O_CLOEXEC).map_err(|e| format!("pipe: {e:?}"))?;
    let mut pids = [0i32; HITTERS];
    for (who, pid) in pids.iter_mut().enumerate() {
        match fork().map_err(|e| format!("fork: {e:?}"))? {
            Fork::Child => {
                // Only the parent may hold the write end of `go`.
                let _ = fs::close(go_w);
                let _ = fs::close(done_r);
                hitter(who, cpus, go_r, done_w, o.seconds * 1000)
            }
            Fork::Parent(p) => *pid = p,
        }
    }
    let _ = fs::close(go_r);
    let _ = fs::close(done_w);
    let [stop_r, stop_w] = fs::pipe2(fs::O_CLOEXEC | fs::O_NONBLOCK).map_err(|e| format!("pipe: {e:?}"))?;
    let [rep_r, rep_w] = fs::pipe2(fs::O_CLOEXEC).map_err(|e| format!("pipe: {e:?}"))?;
    let manager_parent = getppid();
    // Taken before the fork: a getppid in the reader would itself hit the
    // churn probe on getppid, which only the manager may hit.
    let manager = getpid();
    let reader_pid = match fork().map_err(|e| format!("fork: {e:?}"))? {
        Fork::Child => {
            let _ = fs::close(stop_w);
            let _ = fs::close(rep_r);
            let _ = fs::close(go_w);
            let tasks = Tasks {
                hitters: pids,
                manager,
                manager_parent,
                churn_in_top: matches!(mode, ChurnMode::TopDeferred),
            };
            reader(t, stop_r, rep_w, tasks)
        }
        Fork::Parent(p) => p,
    };
    let _ = fs::close(stop_r);
    let _ = fs::close(rep_w);

    t.enable("kt_stress", true)
        .map_err(|e| format!("enable kt_stress: {e:?}"))?;
    let deadline = now_ns() + o.seconds * 1_000_000_000;
    let _ = fs::close(go_w);
    let churned = churn(t, &mode, deadline);

    // The hitters stop on their own; collect their call counts.
    let mut calls = [0u64; HITTERS];
    let done = kprobetests::tracefs::read_fd(done_r).unwrap_or_default();
    let _ = fs::close(done_r);
    for rec in done.chunks_exact(16) {
        let who = u64::from_le_bytes(rec[..8].try_into().unwrap_or_default()) as usize;
        if let Some(c) = calls.get_mut(who) {
            *c = u64::from_le_bytes(rec[8..].try_into().unwrap_or_default());
        }
    }
    for p in pids {
        let _ = waitpid(p);
    }
    t.enable("kt_stress", false)
        .map_err(|e| format!("disable kt_stress: {e:?}"))?;
    let _ = fs::close(stop_w);
    let report = kprobetests::tracefs::read_fd(rep_r).unwrap_or_default();
    let _ = fs::close(rep_r);
    let reader_status = waitpid(reader_pid);
    let rounds = churned?;
    let rep = ReaderReport::decode(&report).ok_or_else(|| format!("no report from the reader ({reader_status:?})"))?;

    let profile = t
        .read_text("kprobe_profile")
        .map_err(|e| format!("kprobe_profile: {e:?}"))?;
    let prof = parse::kprobe_profile(&profile)
        .and_then(|v| v.into_iter().find(|p| p.event == "kt_stress"))
        .ok_or_else(|| format!("no kt_stress in kprobe_profile:\n{profile}"))?;
    // Churn events still defined (top buffer, removal deferred) add their
    // hits to what the top buffer was given.
    let churn_hits: u64 = parse::kprobe_profile(&profile)
        .unwrap_or_default()
        .iter()
        .filter(|p| p.event.starts_with("kt_churn_"))
        .map(|p| p.hits)
        .sum();
    let overrun = sum_stats(t, "overrun")?;
    let dropped = sum_stats(t, "dropped events")?;
    let total_calls: u64 = calls.iter().sum();
    let summary = format!(
        "{}s, {cpus} CPUs, churn {} ({rounds} rounds), calls {calls:?}, hits {} misses {}, \
         churn hits {churn_hits}, lines {} + churn lines {} (lost-lines said {}), overrun {overrun}, \
         dropped {dropped}",
        o.seconds,
        match mode {
            ChurnMode::Instance => "in instance",
            ChurnMode::TopDeferred => "top buffer, removal deferred",
        },
        prof.hits,
        prof.misses,
        rep.stress,
        rep.churn,
        rep.lost_lines,
    );
    let mut problems = Vec::new();
    if reader_status != Ok(WaitStatus::Exited(0)) {
        problems.push(format!("reader ended {reader_status:?}"));
    }
    if calls.contains(&0) {
        problems.push(String::from("a hitter made no calls"));
    }
    if rep.corrupt + rep.bad_fields + rep.out_of_order > 0 {
        problems.push(format!(
            "{} unparsable, {} with wrong fields, {} out of order; first: {}",
            rep.corrupt, rep.bad_fields, rep.out_of_order, rep.first_bad
        ));
    }
    if prof.hits + prof.misses != total_calls {
        problems.push(format!(
            "hits + misses {} != calls {total_calls}",
            prof.hits + prof.misses
        ));
    }
    let read = rep.stress + rep.churn;
    if read + overrun + dropped != prof.hits + churn_hits {
        problems.push(format!(
            "lines read + overrun + dropped = {} != hits {}",
            read + overrun + dropped,
            prof.hits + churn_hits
        ));
    }
    if problems.is_empty() {
        Ok(summary)
    } else {
        Err(format!("{summary}: {}", problems.join("; ")))
    }
}

/// Leaves tracing as a fresh boot has it, whatever state a failed run
/// left: events disabled in the instance and the top buffer, the instance
/// removed, no kprobe events.
fn cleanup(t: &Tracefs) {
    let _ = t.write(&format!("{INSTANCE}/events/kprobes/enable"), "0");
    let _ = fs::unlinkat(fs::AT_FDCWD, &t.path(INSTANCE), fs::AT_REMOVEDIR);
    let _ = t.reset(crate::default_buffer_kb());
}

/// `kprobetests stress ...`.
pub fn main(t: &Tracefs, args: rt::Args) -> i32 {
    let o = match options(args) {
        Ok(o) => o,
        Err(usage) => {
            println!("{usage}");
            return 2;
        }
    };
    // A watchdog: the whole run must end well within twice its length.
    let me = rt::process::getpid();
    let watchdog = match fork() {
        Ok(Fork::Child) => {
            sleep_ms(o.seconds * 2000 + 60_000);
            println!("kprobetests stress: FAIL timed out");
            let _ = kill(me, SIGKILL);
            exit(1)
        }
        Ok(Fork::Parent(p)) => Some(p),
        Err(_) => None,
    };
    let r = run(t, &o);
    cleanup(t);
    if let Some(w) = watchdog {
        let _ = kill(w, SIGKILL);
        let _ = waitpid(w);
    }
    match r {
        Ok(s) => {
            println!("kprobetests stress: {s}: ok");
            0
        }
        Err(s) => {
            println!("kprobetests stress: FAIL {s}");
            1
        }
    }
}
