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

// CPU-time clock IDs (include/linux/posix-timers_types.h, which C
// libraries restate): a negative ID holds `~pid << 3`, a per-thread bit
// and which time it reads (`MAKE_PROCESS_CPUCLOCK`,
// `MAKE_THREAD_CPUCLOCK`).

/// Reads user + system time.
pub const CPUCLOCK_PROF: i32 = 0;
/// Reads user time.
pub const CPUCLOCK_VIRT: i32 = 1;
/// Reads the exact run time.
pub const CPUCLOCK_SCHED: i32 = 2;
/// The bits that say which time (`CPUCLOCK_WHICH`).
pub const CPUCLOCK_CLOCK_MASK: i32 = 3;
/// Set for a thread's clock rather than its thread group's.
pub const CPUCLOCK_PERTHREAD_MASK: i32 = 4;
/// Where the complemented PID starts (`CPUCLOCK_PID`).
pub const CPUCLOCK_PID_SHIFT: i32 = 3;
/// Low bits of a clock ID that names a clock by file descriptor
/// (`FD_TO_CLOCKID`), under `CLOCKFD_MASK`.
pub const CLOCKFD: i32 = 3;
/// The bits `CLOCKFD` is tested under.
pub const CLOCKFD_MASK: i32 = CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_CLOCK_MASK;

/// `clock_nanosleep`/`timer_settime` flag: the time is absolute.
pub const TIMER_ABSTIME: u64 = 1;

/// `ITIMER_REAL`: counts real time, delivers `SIGALRM`.
pub const ITIMER_REAL: u64 = 0;
/// `ITIMER_VIRTUAL`: counts user time, delivers `SIGVTALRM`.
pub const ITIMER_VIRTUAL: u64 = 1;
/// `ITIMER_PROF`: counts user and system time, delivers `SIGPROF`.
pub const ITIMER_PROF: u64 = 2;
