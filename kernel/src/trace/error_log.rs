//! `error_log`: what went wrong with the last commands written to tracing
//! files, with a caret under the place, as Linux's `tracing_log_err`.
//! The last [`TRACING_LOG_ERRS_MAX`] entries are kept, per trace array:
//! a command written to an instance's files (an event filter or trigger
//! there) logs in that instance's `error_log` (Linux's
//! `tr->err_log`), the others at the top level.

use super::TraceArray;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::{String, ToString};
use uapi::error::{CmdError, ErrorLogEntry};

/// How many entries Linux keeps.
pub const TRACING_LOG_ERRS_MAX: usize = 8;

struct Entry {
    ts_ns: u64,
    loc: String,
    cmd: String,
    err: CmdError,
}

static LOG: spin::Mutex<VecDeque<Entry>> = spin::Mutex::new(VecDeque::new());

/// The logs of instances, by their trace array's address.
static INSTANCE_LOGS: spin::Mutex<BTreeMap<usize, VecDeque<Entry>>> = spin::Mutex::new(BTreeMap::new());

fn key(tr: &TraceArray) -> usize {
    tr as *const TraceArray as usize
}

fn push(log: &mut VecDeque<Entry>, e: Entry) {
    if log.len() >= TRACING_LOG_ERRS_MAX {
        log.pop_front();
    }
    log.push_back(e);
}

fn entry(loc: &str, cmd: &str, err: &CmdError) -> Entry {
    Entry {
        ts_ns: crate::printk::uptime_ns(),
        loc: loc.to_string(),
        cmd: cmd.to_string(),
        err: *err,
    }
}

/// Records that command `cmd`, written to the file of `loc` (e.g.
/// `"trace_kprobe"`), failed with `err`, in the top level's log. Call
/// from task context.
pub fn tracing_log_err(loc: &str, cmd: &str, err: &CmdError) {
    push(&mut LOG.lock(), entry(loc, cmd, err));
}

/// [`tracing_log_err`] into the log of `tr` (the top level's or an
/// instance's).
pub fn tracing_log_err_tr(tr: &TraceArray, loc: &str, cmd: &str, err: &CmdError) {
    if super::is_global(tr) {
        tracing_log_err(loc, cmd, err);
    } else {
        push(INSTANCE_LOGS.lock().entry(key(tr)).or_default(), entry(loc, cmd, err));
    }
}

/// The top level's file text.
pub fn show() -> String {
    show_entries(LOG.lock().iter())
}

/// The `error_log` text of `tr`.
pub fn show_tr(tr: &TraceArray) -> String {
    if super::is_global(tr) {
        return show();
    }
    let logs = INSTANCE_LOGS.lock();
    show_entries(logs.get(&key(tr)).into_iter().flatten())
}

/// Empties the log of `tr` (its `error_log` opened with O_TRUNC, or the
/// instance removed).
pub fn clear_tr(tr: &TraceArray) {
    if super::is_global(tr) {
        clear();
    } else {
        INSTANCE_LOGS.lock().remove(&key(tr));
    }
}

fn show_entries<'a>(entries: impl Iterator<Item = &'a Entry>) -> String {
    let mut s = String::new();
    for e in entries {
        let entry = ErrorLogEntry {
            ts_ns: e.ts_ns,
            loc: &e.loc,
            cmd: &e.cmd,
            err: e.err,
        };
        s.push_str(&entry.to_string());
    }
    s
}

/// Empties the log (opening `error_log` with O_TRUNC).
pub fn clear() {
    LOG.lock().clear();
}
