//! Parsers for what tracefs prints, in Linux 6.12's formats. They mask
//! what changes from run to run (times, CPUs, addresses) by returning it as
//! separate fields that callers ignore, and return `None` for anything that
//! does not have the expected shape: a line that does not parse is a
//! corrupted record to the callers.

use alloc::string::String;
use alloc::vec::Vec;

/// A decimal number without sign or spaces.
pub fn decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u64::from(c - b'0'))
    })
}

/// A decimal with an optional `-`.
pub fn signed(s: &str) -> Option<i64> {
    match s.strip_prefix('-') {
        Some(d) => decimal(d.as_bytes()).map(|v| -(v as i64)),
        None => decimal(s.as_bytes()).map(|v| v as i64),
    }
}

/// A `0x`-prefixed hexadecimal number.
pub fn hex(s: &str) -> Option<u64> {
    let d = s.strip_prefix("0x")?;
    if d.is_empty() || d.len() > 16 {
        return None;
    }
    u64::from_str_radix(d, 16).ok()
}

/// One event line of `trace` or `trace_pipe` with the default options:
///
/// ```text
///      kprobetests-153     [001] d....     4.357732: kt_read: (vfs_read+0x0/0x330) count=4321
/// ```
///
/// (`TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: LOCATION ARGS`; the flags
/// column goes when `irq-info` is off.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLine {
    /// The task's `comm` as recorded (`<...>` when it was not saved).
    pub comm: String,
    pub pid: i32,
    pub cpu: u32,
    /// Timestamp in microseconds.
    pub ts_us: u64,
    pub event: String,
    /// Everything after `EVENT: `.
    pub body: String,
}

impl TraceLine {
    /// Parses one line (without its newline).
    pub fn parse(line: &str) -> Option<TraceLine> {
        // The CPU column is the first ` [ddd] ` preceded by `-PID`.
        let bytes = line.as_bytes();
        let mut at = 0;
        let (head, cpu, tail) = loop {
            let open = at + line.get(at..)?.find(" [")?;
            let close = open + 2 + line.get(open + 2..)?.find("] ")?;
            let num = &bytes[open + 2..close];
            let head = line[..open].trim_end();
            if !num.is_empty() && num.iter().all(u8::is_ascii_digit) {
                if let Some((_, pid)) = head.rsplit_once('-') {
                    if decimal(pid.as_bytes()).is_some() {
                        break (head, decimal(num)? as u32, &line[close + 2..]);
                    }
                }
            }
            at = open + 2;
        };
        let (comm, pid) = head.trim_start().rsplit_once('-')?;
        let pid = decimal(pid.as_bytes())? as i32;
        let mut rest = tail.trim_start();
        // Flags (`d....`) unless irq-info is off: the timestamp ends in ':'.
        let first = rest.split(' ').next()?;
        if !first.ends_with(':') {
            rest = rest[first.len()..].trim_start();
        }
        let (ts, rest) = rest.split_once(": ")?;
        let (sec, usec) = ts.split_once('.')?;
        let ts_us = decimal(sec.as_bytes())? * 1_000_000 + decimal(usec.as_bytes())?;
        let (event, body) = match rest.split_once(": ") {
            Some((e, b)) => (e, b),
            None => (rest.strip_suffix(':')?, ""),
        };
        if event.is_empty() || event.contains(' ') {
            return None;
        }
        Some(TraceLine {
            comm: comm.into(),
            pid,
            cpu,
            ts_us,
            event: event.into(),
            body: body.into(),
        })
    }

    /// The probe location `(sym+off/size)`, or `(caller+off/size <- sym)`
    /// for a return probe, without the parentheses.
    pub fn location(&self) -> Option<&str> {
        let rest = self.body.strip_prefix('(')?;
        Some(&rest[..rest.find(')')?])
    }

    /// The `NAME=VALUE` fields after the location, values as printed
    /// (strings keep their quotes off; arrays keep their braces).
    pub fn fields(&self) -> Option<Vec<(String, String)>> {
        let loc = self.location()?;
        let mut rest = self.body.get(loc.len() + 2..)?.trim_start();
        let mut out = Vec::new();
        while !rest.is_empty() {
            let (name, after) = rest.split_once('=')?;
            if name.is_empty() || name.contains(' ') {
                return None;
            }
            let (value, next) = if let Some(s) = after.strip_prefix('"') {
                // A string runs to the closing quote before a space or the end.
                let end = s.find("\" ").or_else(|| s.strip_suffix('"').map(str::len))?;
                (&s[..end], s[end + 1..].trim_start())
            } else {
                match after.split_once(' ') {
                    Some((v, n)) => (v, n.trim_start()),
                    None => (after, ""),
                }
            };
            out.push((name.into(), value.into()));
            rest = next;
        }
        Some(out)
    }

    /// The value of field `name`.
    pub fn field(&self, name: &str) -> Option<String> {
        self.fields()?.into_iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// A `trace_pipe` line that says the reader lost events:
/// `CPU:1 [LOST 12 EVENTS]`; the number lost.
pub fn lost_events(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    decimal(cpu.as_bytes())?;
    let n = rest.strip_prefix("[LOST ")?.strip_suffix(" EVENTS]")?;
    decimal(n.as_bytes())
}

/// The event lines of a `trace` file (header and comment lines skipped);
/// `Err(line)` for the first line that is neither.
pub fn trace_lines(text: &str) -> Result<Vec<TraceLine>, String> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        out.push(TraceLine::parse(line).ok_or_else(|| String::from(line))?);
    }
    Ok(out)
}

/// `# entries-in-buffer/entries-written: E/W   #P:C` of the `trace` header:
/// (entries, written, cpus).
pub fn trace_header(text: &str) -> Option<(u64, u64, u64)> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("# entries-in-buffer/entries-written: "))?;
    let (counts, cpus) = line.split_once("   #P:")?;
    let (e, w) = counts.split_once('/')?;
    Some((
        decimal(e.as_bytes())?,
        decimal(w.as_bytes())?,
        decimal(cpus.trim().as_bytes())?,
    ))
}

/// One line of `kprobe_profile`: `  NAME  HITS  MISSES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub event: String,
    pub hits: u64,
    pub misses: u64,
}

/// Every line of `kprobe_profile`; None if one does not parse.
pub fn kprobe_profile(text: &str) -> Option<Vec<Profile>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut w = l.split_whitespace();
            let p = Profile {
                event: w.next()?.into(),
                hits: decimal(w.next()?.as_bytes())?,
                misses: decimal(w.next()?.as_bytes())?,
            };
            w.next().is_none().then_some(p)
        })
        .collect()
}

/// `per_cpu/cpuN/stats`: the value of `key` (`entries`, `overrun`,
/// `commit overrun`, `bytes`, `dropped events`, `read events`); the
/// timestamp lines are not numbers and are not looked up.
pub fn stat(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k == key).then(|| decimal(v.trim().as_bytes()))?
    })
}

/// One `error_log` entry with its timestamp masked:
///
/// ```text
/// [    4.140130] trace_kprobe: error: Invalid register name
///   Command: p:kt_b vfs_read %x99
///                            ^
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorLogEntry {
    /// `trace_kprobe: error: Invalid register name`.
    pub message: String,
    /// The command as logged.
    pub command: String,
    /// Column of the caret within the command.
    pub caret: usize,
}

/// The entries of `error_log`; None if it does not have the three-line
/// shape.
pub fn error_log(text: &str) -> Option<Vec<ErrorLogEntry>> {
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let mut out = Vec::new();
    while let Some(first) = lines.next() {
        let message = first.strip_prefix('[')?.split_once("] ")?.1;
        let command = lines.next()?.strip_prefix("  Command: ")?;
        let caret_line = lines.next()?;
        let col = caret_line.find('^')?;
        if col < 11 || caret_line[..col].bytes().any(|b| b != b' ') || caret_line.len() != col + 1 {
            return None;
        }
        out.push(ErrorLogEntry {
            message: message.into(),
            command: command.into(),
            caret: col - 11,
        });
    }
    Some(out)
}
