//! Clock IDs, `TIMER_ABSTIME` and the interval timers (include/uapi/linux/time.h).
//!
//! Plain constants with no dependencies: the vDSO image, built by itself
//! for user space, includes this file by path so that it reads the same
//! numbers as the kernel.

/// `CLOCK_REALTIME`.
pub const CLOCK_REALTIME: i32 = 0;
/// `CLOCK_MONOTONIC`.
pub const CLOCK_MONOTONIC: i32 = 1;
/// `CLOCK_PROCESS_CPUTIME_ID`.
pub const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
/// `CLOCK_THREAD_CPUTIME_ID`.
pub const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
/// `CLOCK_MONOTONIC_RAW`.
pub const CLOCK_MONOTONIC_RAW: i32 = 4;
/// `CLOCK_REALTIME_COARSE`.
pub const CLOCK_REALTIME_COARSE: i32 = 5;
/// `CLOCK_MONOTONIC_COARSE`.
pub const CLOCK_MONOTONIC_COARSE: i32 = 6;
/// `CLOCK_BOOTTIME`.
pub const CLOCK_BOOTTIME: i32 = 7;
/// `CLOCK_REALTIME_ALARM`.
pub const CLOCK_REALTIME_ALARM: i32 = 8;
/// `CLOCK_BOOTTIME_ALARM`.
pub const CLOCK_BOOTTIME_ALARM: i32 = 9;
/// `CLOCK_TAI`.
pub const CLOCK_TAI: i32 = 11;

/// `clock_nanosleep`/`timer_settime` flag: the time is absolute.
pub const TIMER_ABSTIME: u64 = 1;

/// `ITIMER_REAL`: counts real time, delivers `SIGALRM`.
pub const ITIMER_REAL: u64 = 0;
/// `ITIMER_VIRTUAL`: counts user time, delivers `SIGVTALRM`.
pub const ITIMER_VIRTUAL: u64 = 1;
/// `ITIMER_PROF`: counts user and system time, delivers `SIGPROF`.
pub const ITIMER_PROF: u64 = 2;
