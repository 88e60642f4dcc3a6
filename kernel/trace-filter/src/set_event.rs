//! The `set_event` file: each white-space separated word written is
//! `[!]MATCH`, where MATCH is (Linux's `ftrace_set_clr_event`):
//!
//! - `SYSTEM:EVENT` — that event; an empty or `*` side matches any, so
//!   `SYSTEM:`, `SYSTEM:*`, `:EVENT`, `*:EVENT`, `:` and `*:*` all work;
//! - `NAME` (no colon) — every event called NAME and every event of the
//!   system called NAME.
//!
//! Names are compared exactly: Linux 6.12 has no globs here (`sched:sched_*`
//! matches nothing and is `EINVAL`). A leading `!` disables instead of
//! enabling. A word that matches no event is `EINVAL`.
//!
//! `set_event` and `available_events` list events as `SYSTEM:EVENT`, one
//! per line.

use alloc::string::String;

use uapi::Errno;

use crate::filter::is_space;

/// Longest word a write may hold (Linux's `EVENT_BUF_SIZE`).
pub const EVENT_BUF_SIZE: usize = 127;

/// Which events a `set_event` word names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventMatcher<'a> {
    /// A bare name: matches an event or a system of that name.
    name: Option<&'a str>,
    /// The system, if one was given and is not `*`.
    system: Option<&'a str>,
    /// The event, if one was given and is not `*`.
    event: Option<&'a str>,
}

impl<'a> EventMatcher<'a> {
    /// Parses `MATCH` (without the `!`).
    pub fn parse(s: &'a str) -> EventMatcher<'a> {
        let any = |x: &'a str| if x.is_empty() || x == "*" { None } else { Some(x) };
        match s.split_once(':') {
            Some((sys, ev)) => EventMatcher {
                name: None,
                system: any(sys),
                event: any(ev),
            },
            None => EventMatcher {
                name: Some(s),
                system: None,
                event: None,
            },
        }
    }

    /// Does it name the event `system:event`?
    pub fn matches(&self, system: &str, event: &str) -> bool {
        if let Some(n) = self.name {
            if n != event && n != system {
                return false;
            }
        }
        if self.system.is_some_and(|s| s != system) {
            return false;
        }
        if self.event.is_some_and(|e| e != event) {
            return false;
        }
        true
    }
}

/// One word written to `set_event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetEventCmd<'a> {
    /// Enable (`true`) or, with a leading `!`, disable.
    pub enable: bool,
    /// The events it names. The kernel enables or disables each event
    /// matched (Linux skips events that cannot be enabled, such as
    /// `ftrace:*`) and returns `EINVAL` if none matched, or the first error
    /// an event gave.
    pub matcher: EventMatcher<'a>,
}

impl<'a> SetEventCmd<'a> {
    /// Parses one word.
    pub fn parse(word: &'a str) -> SetEventCmd<'a> {
        match word.strip_prefix('!') {
            Some(rest) => SetEventCmd {
                enable: false,
                matcher: EventMatcher::parse(rest),
            },
            None => SetEventCmd {
                enable: true,
                matcher: EventMatcher::parse(word),
            },
        }
    }
}

/// Reads the next word of a write to `set_event`, as Linux's
/// `trace_get_user` does for one `write`: skips leading white space, takes
/// the word up to the next white space (or the end of the buffer). Returns
/// how many bytes the write consumed (what it returns; the writer comes
/// back with the rest) and the word, if there was one. A word longer than
/// [`EVENT_BUF_SIZE`] is `EINVAL`. Bytes after a NUL are not read.
pub fn next_word(buf: &[u8]) -> Result<(usize, Option<String>), Errno> {
    let mut i = 0usize;
    while buf.get(i).is_some_and(|&c| is_space(c)) {
        i += 1;
    }
    let start = i;
    while buf.get(i).is_some_and(|&c| c != 0 && !is_space(c)) {
        i += 1;
        if i - start > EVENT_BUF_SIZE {
            return Err(Errno::EINVAL);
        }
    }
    let word = buf.get(start..i).unwrap_or(&[]);
    // The separator after the word is consumed too.
    let consumed = if buf.get(i).is_some() { i + 1 } else { i };
    if word.is_empty() {
        return Ok((consumed.max(1).min(buf.len()), None));
    }
    let word = core::str::from_utf8(word).map_err(|_| Errno::EINVAL)?;
    Ok((consumed, Some(String::from(word))))
}

/// The line `set_event` and `available_events` show for an event.
pub fn event_line(system: &str, event: &str) -> String {
    let mut s = String::with_capacity(system.len() + event.len() + 2);
    s.push_str(system);
    s.push(':');
    s.push_str(event);
    s.push('\n');
    s
}
