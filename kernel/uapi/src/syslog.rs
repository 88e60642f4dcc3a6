//! `syslog(2)` actions (include/linux/syslog.h: not in Linux's uapi
//! directory, but the numbers are the system call's ABI).

/// Close the log (no-op).
pub const SYSLOG_ACTION_CLOSE: u64 = 0;
/// Open the log (no-op).
pub const SYSLOG_ACTION_OPEN: u64 = 1;
/// Read from the log, waiting for messages.
pub const SYSLOG_ACTION_READ: u64 = 2;
/// Read the whole buffer.
pub const SYSLOG_ACTION_READ_ALL: u64 = 3;
/// Read the whole buffer and clear it.
pub const SYSLOG_ACTION_READ_CLEAR: u64 = 4;
/// Clear the buffer.
pub const SYSLOG_ACTION_CLEAR: u64 = 5;
/// Stop printing to the console.
pub const SYSLOG_ACTION_CONSOLE_OFF: u64 = 6;
/// Resume printing to the console.
pub const SYSLOG_ACTION_CONSOLE_ON: u64 = 7;
/// Set the console log level.
pub const SYSLOG_ACTION_CONSOLE_LEVEL: u64 = 8;
/// Bytes not yet read.
pub const SYSLOG_ACTION_SIZE_UNREAD: u64 = 9;
/// Size of the buffer.
pub const SYSLOG_ACTION_SIZE_BUFFER: u64 = 10;
