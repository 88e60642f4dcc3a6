//! Event triggers: what is written into `events/<g>/<e>/trigger`, parsed
//! and registered as Linux 6.12's trace_events_trigger.c does, and what the
//! file reads back.
//!
//! ```text
//! traceon[:N] [if FILTER]          traceoff[:N] [if FILTER]
//! stacktrace[:N] [if FILTER]       snapshot[:N] [if FILTER]
//! enable_event:SYS:EVENT[:N] [if FILTER]
//! disable_event:SYS:EVENT[:N] [if FILTER]
//! !CMD...                          removes the trigger of that kind
//! ```
//!
//! As in Linux, `traceon` and `traceoff` are one kind (an event has at most
//! one of them), and so are `enable_event` and `disable_event` for one
//! target event; adding a second of a kind is `EEXIST`; removing one that
//! is not there succeeds silently. Commands this kernel does not offer
//! (`hist`, `enable_hist`, ...) are `EINVAL`, Linux's answer
//! for an unknown command.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicU64, Ordering};

use uapi::Errno;

use crate::field::EventField;
use crate::filter::{buf_to_str, is_space, EventFilter, FilterEnv, FilterFailure};
use crate::kstrto::kstrtoul;

/// What the `trigger` file reads when the event has no trigger: Linux's
/// header with the commands this kernel registers, in Linux's order.
pub const AVAILABLE_TRIGGERS: &str =
    "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist\n";

/// A `count` of this value means no limit (Linux's `-1`).
pub const UNLIMITED: u64 = u64::MAX;

/// A trigger command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerCmd {
    /// `traceon`: turn tracing on.
    TraceOn,
    /// `traceoff`: turn tracing off (after the event is recorded).
    TraceOff,
    /// `stacktrace`: record a kernel stack trace (after the event).
    Stacktrace,
    /// `snapshot`: swap the trace buffer with the snapshot buffer (before
    /// the event is recorded).
    Snapshot,
    /// `enable_event:SYS:EVENT`: soft-enable another event.
    EnableEvent,
    /// `disable_event:SYS:EVENT`: soft-disable another event.
    DisableEvent,
    /// `enable_hist:SYS:EVENT`: continue another event's hist triggers.
    EnableHist,
    /// `disable_hist:SYS:EVENT`: pause another event's hist triggers.
    DisableHist,
}

impl TriggerCmd {
    /// The command's name in the `trigger` file.
    pub fn name(self) -> &'static str {
        match self {
            TriggerCmd::TraceOn => "traceon",
            TriggerCmd::TraceOff => "traceoff",
            TriggerCmd::Stacktrace => "stacktrace",
            TriggerCmd::Snapshot => "snapshot",
            TriggerCmd::EnableEvent => "enable_event",
            TriggerCmd::DisableEvent => "disable_event",
            TriggerCmd::EnableHist => "enable_hist",
            TriggerCmd::DisableHist => "disable_hist",
        }
    }

    fn from_name(name: &str) -> Option<TriggerCmd> {
        [
            TriggerCmd::TraceOn,
            TriggerCmd::TraceOff,
            TriggerCmd::Stacktrace,
            TriggerCmd::Snapshot,
            TriggerCmd::EnableEvent,
            TriggerCmd::DisableEvent,
            TriggerCmd::EnableHist,
            TriggerCmd::DisableHist,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }

    /// Linux's `trigger_type`: one trigger of each type per event (per
    /// target event for the enable kind).
    fn kind(self) -> u8 {
        match self {
            TriggerCmd::TraceOn | TriggerCmd::TraceOff => 0,
            TriggerCmd::Stacktrace => 1,
            TriggerCmd::EnableEvent | TriggerCmd::DisableEvent => 2,
            TriggerCmd::Snapshot => 3,
            TriggerCmd::EnableHist | TriggerCmd::DisableHist => 4,
        }
    }

    /// Does Linux run it after the event is committed
    /// (`EVENT_CMD_FL_POST_TRIGGER`)? `traceoff` does, so that the event
    /// that turns tracing off is still recorded; `stacktrace` does, so the
    /// stack follows the event.
    pub fn is_post_trigger(self) -> bool {
        matches!(self, TriggerCmd::TraceOff | TriggerCmd::Stacktrace)
    }
}

/// One registered trigger.
#[derive(Debug)]
pub struct Trigger {
    cmd: TriggerCmd,
    /// `(system, event)` for `enable_event`/`disable_event`.
    target: Option<(String, String)>,
    /// Times left to fire; [`UNLIMITED`] for no limit.
    count: AtomicU64,
    /// Whether a count was given (Linux's `EVENT_TRIGGER_FL_COUNT`).
    counted: bool,
    /// The `if` filter: its text as written and the compiled filter.
    filter: Option<(String, EventFilter)>,
}

impl Trigger {
    /// The command.
    pub fn cmd(&self) -> TriggerCmd {
        self.cmd
    }

    /// The event an `enable_event`/`disable_event` acts on.
    pub fn target(&self) -> Option<(&str, &str)> {
        self.target.as_ref().map(|(s, e)| (s.as_str(), e.as_str()))
    }

    /// The filter a record must pass for the trigger to fire.
    pub fn filter(&self) -> Option<&EventFilter> {
        self.filter.as_ref().map(|(_, f)| f)
    }

    /// Times left ([`UNLIMITED`] for no limit).
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Decides, when the event happens (and its record passed the filter),
    /// whether the trigger acts, and uses up one of its count if so.
    /// `already_done` says whether its effect already holds (tracing
    /// already on for `traceon`, off for `traceoff`, the target already
    /// enabled for `enable_event`, disabled for `disable_event`; always
    /// `false` for `stacktrace` and `snapshot`): Linux's `count_func`s then
    /// neither act nor count. Safe to call from several CPUs at once.
    pub fn fire(&self, already_done: bool) -> bool {
        // enable_hist/disable_hist count every hit (Linux's
        // event_trigger_count), the others only those that change state.
        if already_done
            && !matches!(
                self.cmd,
                TriggerCmd::Stacktrace | TriggerCmd::Snapshot | TriggerCmd::EnableHist | TriggerCmd::DisableHist
            )
        {
            return false;
        }
        if !self.counted {
            return true;
        }
        self.count
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| match c {
                0 => None,
                UNLIMITED => Some(UNLIMITED),
                n => Some(n - 1),
            })
            .is_ok()
    }

    /// The line the `trigger` file shows for it (`event_trigger_print`,
    /// `event_enable_trigger_print`).
    pub fn line(&self) -> String {
        let mut s = String::from(self.cmd.name());
        if let Some((sys, ev)) = &self.target {
            let _ = write!(s, ":{sys}:{ev}");
        }
        match self.count() {
            UNLIMITED => s.push_str(":unlimited"),
            n => {
                let _ = write!(s, ":count={n}");
            }
        }
        if let Some((text, _)) = &self.filter {
            let _ = write!(s, " if {text}");
        }
        s.push('\n');
        s
    }
}

/// Why a write to `trigger` fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerError {
    /// What the write returns.
    pub errno: Errno,
    /// For a bad `if` filter, the `error_log` entry Linux adds (location
    /// [`crate::filter::FILTER_ERROR_LOC`], command = the filter text).
    pub filter_failure: Option<FilterFailure>,
}

impl From<Errno> for TriggerError {
    fn from(errno: Errno) -> TriggerError {
        TriggerError {
            errno,
            filter_failure: None,
        }
    }
}

/// What a successful write changed.
#[derive(Debug)]
pub enum TriggerChange {
    /// Nothing (an empty write, or removing a trigger that is not there).
    None,
    /// A trigger was added (at the head of the list). For an
    /// `enable_event`/`disable_event` the kernel now soft-enables the
    /// target (Linux's `trace_event_enable_disable(file, 1, 1)`) and puts
    /// the event itself in trigger mode.
    Added(TriggerCmd),
    /// This trigger was removed; for the enable kind, the kernel drops its
    /// soft-enable reference on the target.
    Removed(Trigger),
}

/// The triggers of one event, newest first, as Linux lists them.
#[derive(Debug, Default)]
pub struct TriggerList {
    triggers: Vec<Trigger>,
}

impl TriggerList {
    /// An event without triggers.
    pub fn new() -> TriggerList {
        TriggerList::default()
    }

    /// The triggers, newest first.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &Trigger> {
        self.triggers.iter()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.triggers.is_empty()
    }

    /// What the `trigger` file reads.
    pub fn file_text(&self) -> String {
        if self.triggers.is_empty() {
            return String::from(AVAILABLE_TRIGGERS);
        }
        self.triggers.iter().map(Trigger::line).collect()
    }

    /// Applies one write of `buf` to the `trigger` file of an event whose
    /// record has `fields` (the `if` filter is compiled against them).
    /// `event_exists(system, event)` says whether an `enable_event` target
    /// exists. Linux's `event_trigger_regex_write`: white space around the
    /// command is dropped; a write of zero bytes does nothing. (Writes of
    /// `PAGE_SIZE` bytes or more are `EINVAL` before this is called.)
    pub fn write(
        &mut self,
        buf: &[u8],
        fields: &[EventField<'_>],
        env: &FilterEnv<'_>,
        event_exists: &dyn Fn(&str, &str) -> bool,
    ) -> Result<TriggerChange, TriggerError> {
        if buf.is_empty() {
            return Ok(TriggerChange::None);
        }
        let text = buf_to_str(buf);
        let text = text.trim_matches(|c: char| u8::try_from(c).is_ok_and(is_space));
        let (glob, next) = split_command(text);
        let remove = glob.starts_with('!');
        let name = glob.strip_prefix('!').unwrap_or(glob);
        let cmd = TriggerCmd::from_name(name).ok_or(Errno::EINVAL)?;
        match cmd {
            TriggerCmd::EnableEvent | TriggerCmd::DisableEvent | TriggerCmd::EnableHist | TriggerCmd::DisableHist => {
                self.parse_enable(cmd, remove, next, fields, env, event_exists)
            }
            _ => self.parse_simple(cmd, remove, next, fields, env),
        }
    }

    /// Linux's `event_trigger_parse`.
    fn parse_simple(
        &mut self,
        cmd: TriggerCmd,
        remove: bool,
        param_and_filter: Option<&str>,
        fields: &[EventField<'_>],
        env: &FilterEnv<'_>,
    ) -> Result<TriggerChange, TriggerError> {
        let (param, filter) = separate_filter(param_and_filter, false)?;
        if remove {
            return Ok(self.unregister(cmd, None));
        }
        let count = parse_num(param)?;
        let filter = set_filter(filter, fields, env)?;
        self.register(Trigger {
            cmd,
            target: None,
            count: AtomicU64::new(count.unwrap_or(UNLIMITED)),
            counted: param.is_some(),
            filter,
        })
    }

    /// Linux's `event_enable_trigger_parse`.
    fn parse_enable(
        &mut self,
        cmd: TriggerCmd,
        remove: bool,
        param_and_filter: Option<&str>,
        fields: &[EventField<'_>],
        env: &FilterEnv<'_>,
        event_exists: &dyn Fn(&str, &str) -> bool,
    ) -> Result<TriggerChange, TriggerError> {
        if param_and_filter.is_none() {
            return Err(Errno::EINVAL.into());
        }
        let (param, filter) = separate_filter(param_and_filter, true)?;
        let param = param.unwrap_or("");
        let Some((system, rest)) = param.split_once(':') else {
            return Err(Errno::EINVAL.into());
        };
        let (event, count_param) = match rest.split_once(':') {
            Some((e, n)) => (e, Some(n)),
            None => (rest, None),
        };
        if !event_exists(system, event) {
            return Err(Errno::EINVAL.into());
        }
        let target = Some((String::from(system), String::from(event)));
        if remove {
            return Ok(self.unregister(cmd, target.as_ref()));
        }
        let count = parse_num(count_param)?;
        let filter = set_filter(filter, fields, env)?;
        self.register(Trigger {
            cmd,
            target,
            count: AtomicU64::new(count.unwrap_or(UNLIMITED)),
            counted: count_param.is_some(),
            filter,
        })
    }

    fn register(&mut self, t: Trigger) -> Result<TriggerChange, TriggerError> {
        let clash = self
            .triggers
            .iter()
            .any(|x| x.cmd.kind() == t.cmd.kind() && x.target == t.target);
        if clash {
            return Err(Errno::EEXIST.into());
        }
        let cmd = t.cmd;
        self.triggers.insert(0, t);
        Ok(TriggerChange::Added(cmd))
    }

    fn unregister(&mut self, cmd: TriggerCmd, target: Option<&(String, String)>) -> TriggerChange {
        let found = self
            .triggers
            .iter()
            .position(|x| x.cmd.kind() == cmd.kind() && x.target.as_ref() == target);
        match found {
            Some(i) => TriggerChange::Removed(self.triggers.remove(i)),
            None => TriggerChange::None,
        }
    }

    /// Removes every trigger (what the kernel does when the event goes
    /// away). Opening `trigger` with `O_TRUNC` does *not* call this: in
    /// Linux it only clears `hist` triggers, which this kernel has none of.
    pub fn clear(&mut self) -> Vec<Trigger> {
        core::mem::take(&mut self.triggers)
    }
}

/// `strsep(&next, ": \t")` then `skip_spaces`: the command word and what
/// follows the first `:`, space or tab (`None` if nothing does).
fn split_command(text: &str) -> (&str, Option<&str>) {
    match text.find([':', ' ', '\t']) {
        Some(n) => {
            let cmd = text.get(..n).unwrap_or("");
            let rest = text.get(n + 1..).unwrap_or("");
            let rest = rest.trim_start_matches(|c: char| u8::try_from(c).is_ok_and(is_space));
            (cmd, if rest.is_empty() { None } else { Some(rest) })
        }
        None => (text, None),
    }
}

/// Linux's `event_trigger_separate_filter`: `(param, filter)`.
fn separate_filter(
    param_and_filter: Option<&str>,
    param_required: bool,
) -> Result<(Option<&str>, Option<&str>), TriggerError> {
    let Some(pf) = param_and_filter else {
        return if param_required {
            Err(Errno::EINVAL.into())
        } else {
            Ok((None, None))
        };
    };
    // Without a required parameter, only a count (a digit) is one.
    if !param_required && !pf.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        return Ok((None, Some(pf)));
    }
    match pf.find([' ', '\t']) {
        Some(n) => {
            let param = pf.get(..n).unwrap_or("");
            let filter = pf.get(n + 1..).unwrap_or("");
            let filter = filter.trim_start_matches(|c: char| u8::try_from(c).is_ok_and(is_space));
            Ok((Some(param), if filter.is_empty() { None } else { Some(filter) }))
        }
        None => Ok((Some(pf), None)),
    }
}

/// Linux's `event_trigger_parse_num`: the count before any further `:`.
fn parse_num(param: Option<&str>) -> Result<Option<u64>, TriggerError> {
    let Some(param) = param else {
        return Ok(None);
    };
    let number = param.split(':').next().unwrap_or("");
    if number.is_empty() {
        return Err(Errno::EINVAL.into());
    }
    Ok(Some(kstrtoul(number.as_bytes(), 0)?))
}

/// Linux's `set_trigger_filter`: `if FILTER`, compiled for the triggering
/// event. Returns the filter text as it will be shown and the filter.
fn set_filter(
    filter: Option<&str>,
    fields: &[EventField<'_>],
    env: &FilterEnv<'_>,
) -> Result<Option<(String, EventFilter)>, TriggerError> {
    let Some(f) = filter else {
        return Ok(None);
    };
    // strsep(&filter_str, " \t"): the word must be "if" and be followed by
    // a separator.
    let Some(n) = f.find([' ', '\t']) else {
        return Err(Errno::EINVAL.into());
    };
    if f.get(..n) != Some("if") {
        return Err(Errno::EINVAL.into());
    }
    let text = f.get(n + 1..).unwrap_or("");
    match EventFilter::compile(text, fields, env) {
        Ok(compiled) => Ok(Some((String::from(text), compiled))),
        Err(err) => Err(TriggerError {
            errno: err.errno,
            filter_failure: Some(FilterFailure {
                err,
                command: String::from(text),
            }),
        }),
    }
}
