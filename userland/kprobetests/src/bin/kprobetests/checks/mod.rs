//! The checks, grouped by what they exercise; each group is a list of
//! [`Check`]s. Every event a check defines is named `kt_*`; the runner
//! removes them all after each check.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use kprobetests::parse::{self, Profile, TraceLine};
use kprobetests::tracefs::Tracefs;

use crate::{Check, Context, Fail};

pub mod buffer;
pub mod errors;
pub mod fields;
pub mod filter;
pub mod profile;

/// Every check, in the order they run.
pub static ALL: &[&[Check]] = &[
    profile::CHECKS,
    fields::CHECKS,
    errors::CHECKS,
    filter::CHECKS,
    buffer::CHECKS,
];

/// The tracefs mount.
pub fn tracefs() -> Result<Tracefs, Fail> {
    Tracefs::find().ctx("find tracefs")
}

/// The `kprobe_profile` line of `event`.
pub fn profile_of(t: &Tracefs, event: &str) -> Result<Profile, Fail> {
    let text = t.read_text("kprobe_profile").ctx("read kprobe_profile")?;
    let all = parse::kprobe_profile(&text).ok_or_else(|| Fail(format!("kprobe_profile does not parse:\n{text}")))?;
    all.into_iter()
        .find(|p| p.event == event)
        .ok_or_else(|| Fail(format!("no {event} in kprobe_profile:\n{text}")))
}

/// Every event line of `trace` (not consumed); a line that does not parse
/// fails the check.
pub fn trace(t: &Tracefs) -> Result<Vec<TraceLine>, Fail> {
    let text = t.read_text("trace").ctx("read trace")?;
    parse::trace_lines(&text).map_err(|l| Fail(format!("trace line does not parse: {l:?}")))
}

/// The lines of `event` recorded by task `pid`.
pub fn lines_of(t: &Tracefs, event: &str, pid: i32) -> Result<Vec<TraceLine>, Fail> {
    Ok(trace(t)?
        .into_iter()
        .filter(|l| l.event == event && l.pid == pid)
        .collect())
}

/// The one line of `event` by `pid`; fails unless there is exactly one.
pub fn only_line(t: &Tracefs, event: &str, pid: i32) -> Result<TraceLine, Fail> {
    let mut lines = lines_of(t, event, pid)?;
    if lines.len() != 1 {
        return Err(Fail(format!(
            "{} lines of {event} by pid {pid}, want 1: {lines:?}",
            lines.len()
        )));
    }
    Ok(lines.remove(0))
}

/// Field `name` of `line`, or a failure naming the line.
pub fn field(line: &TraceLine, name: &str) -> Result<String, Fail> {
    line.field(name)
        .ok_or_else(|| Fail(format!("no field {name} in {:?}", line.body)))
}

/// The probe location's symbol (`vfs_read` of `vfs_read+0x0/0x330`).
pub fn location_symbol(loc: &str) -> &str {
    loc.split('+').next().unwrap_or(loc)
}

/// A scratch file in /tmp only this run uses.
pub fn scratch(name: &str) -> String {
    format!("/tmp/kt{}-{name}", kprobetests::sys::getpid())
}
