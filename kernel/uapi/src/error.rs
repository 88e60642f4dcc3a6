//! An error that, besides its errno, tells the person who typed a command
//! what was wrong and where: what tracefs keeps in `error_log` for a failed
//! `kprobe_events` (or other tracing) command, as Linux's
//! `tracing_log_err()` does.
//!
//! The text is Linux's (kernel/trace/trace.c, `tracing_err_log_seq_show`):
//!
//! ```text
//! [   12.345678] trace_kprobe: error: Invalid fetch argument
//!   Command: p:myprobe vfs_read %x99
//!                               ^
//! ```

use core::fmt;

use crate::Errno;

/// A failed command: the errno the write returns, the message for
/// `error_log`, and the byte offset in the command the caret points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdError {
    /// What the failing `write` returns.
    pub errno: Errno,
    /// Linux's text for this error (e.g. `"Invalid fetch argument"`).
    pub msg: &'static str,
    /// Offset in the command of the byte the caret marks.
    pub pos: usize,
}

impl CmdError {
    /// An error at byte `pos` of the command.
    pub const fn new(errno: Errno, msg: &'static str, pos: usize) -> CmdError {
        CmdError { errno, msg, pos }
    }
}

impl From<CmdError> for Errno {
    fn from(e: CmdError) -> Errno {
        e.errno
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {}): {}", self.msg, self.pos, self.errno.name())
    }
}

/// What `Command: ` is prefixed with (Linux's `CMD_PREFIX`); the caret line
/// is indented by its length.
pub const CMD_PREFIX: &str = "  Command: ";

/// One entry of `error_log`, formatted exactly as Linux prints it.
#[derive(Clone, Copy, Debug)]
pub struct ErrorLogEntry<'a> {
    /// When the error happened, in nanoseconds of the trace clock.
    pub ts_ns: u64,
    /// Who reports it, e.g. `"trace_kprobe"`.
    pub loc: &'a str,
    /// The command as written.
    pub cmd: &'a str,
    /// What was wrong, and where.
    pub err: CmdError,
}

impl fmt::Display for ErrorLogEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sec = self.ts_ns / 1_000_000_000;
        let usec = (self.ts_ns % 1_000_000_000) / 1000;
        writeln!(f, "[{sec:5}.{usec:06}] {}: error: {}", self.loc, self.err.msg)?;
        writeln!(f, "{CMD_PREFIX}{}", self.cmd)?;
        writeln!(f, "{:width$}^", "", width = CMD_PREFIX.len() + self.err.pos)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn error_log_entry_is_linux_text_with_caret_under_pos() {
        let cmd = "p:myprobe vfs_read %x99";
        let e = ErrorLogEntry {
            ts_ns: 12_345_678_901,
            loc: "trace_kprobe",
            cmd,
            err: CmdError::new(Errno::EINVAL, "Invalid fetch argument", 19),
        };
        let text = e.to_string();
        assert_eq!(
            text,
            "[   12.345678] trace_kprobe: error: Invalid fetch argument\n\
             \x20 Command: p:myprobe vfs_read %x99\n\
             \x20                             ^\n"
        );
        // The caret sits under byte `pos` of the command.
        let lines: std::vec::Vec<&str> = text.lines().collect();
        assert_eq!(lines[2].find('^'), Some(lines[1].find(cmd).unwrap() + 19));
        assert_eq!(&cmd[19..20], "%");
    }

    #[test]
    fn timestamp_is_seconds_width_5_and_microseconds() {
        let e = |ts_ns| {
            ErrorLogEntry {
                ts_ns,
                loc: "l",
                cmd: "",
                err: CmdError::new(Errno::EINVAL, "m", 0),
            }
            .to_string()
        };
        assert!(e(0).starts_with("[    0.000000] l: error: m\n"));
        assert!(e(123_456_789_999_999).starts_with("[123456.789999] "));
        assert!(e(0).ends_with("  Command: \n           ^\n"));
    }

    #[test]
    fn cmd_error_converts_to_its_errno() {
        let e = CmdError::new(Errno::ENOENT, "Non-existent symbol", 3);
        assert_eq!(Errno::from(e), Errno::ENOENT);
        let r: Result<(), Errno> = (|| Err(CmdError::new(Errno::E2BIG, "Too many arguments", 0))?)();
        assert_eq!(r, Err(Errno::E2BIG));
        assert_eq!(e.to_string(), "Non-existent symbol (at 3): ENOENT");
    }
}
