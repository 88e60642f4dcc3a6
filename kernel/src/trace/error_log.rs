//! `error_log`: what went wrong with the last commands written to tracing
//! files, with a caret under the place, as Linux's `tracing_log_err`.
//! The last [`TRACING_LOG_ERRS_MAX`] entries are kept.

use alloc::collections::VecDeque;
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

/// Records that command `cmd`, written to the file of `loc` (e.g.
/// `"trace_kprobe"`), failed with `err`. Call from task context.
pub fn tracing_log_err(loc: &str, cmd: &str, err: &CmdError) {
    let e = Entry {
        ts_ns: crate::printk::uptime_ns(),
        loc: loc.to_string(),
        cmd: cmd.to_string(),
        err: *err,
    };
    let mut log = LOG.lock();
    if log.len() >= TRACING_LOG_ERRS_MAX {
        log.pop_front();
    }
    log.push_back(e);
}

/// The file's text.
pub fn show() -> String {
    let mut s = String::new();
    for e in LOG.lock().iter() {
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
