//! strace's text forms, CPU-free: string quoting and truncation, flag
//! sets, errno and signal names, wait statuses, siginfo, signal sets, the
//! `-c` summary table and `struct ptrace_syscall_info` parsing. Nothing
//! here makes a system call.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use uapi::ptrace::{
    PtraceSyscallInfo, SyscallInfoKind, PTRACE_SYSCALL_INFO_ENTRY, PTRACE_SYSCALL_INFO_EXIT,
    PTRACE_SYSCALL_INFO_SECCOMP,
};
use uapi::{fcntl, mman, sched, wait};

/// strace's default `-s`: string arguments show at most this many bytes.
pub const MAX_STRLEN: usize = 32;
/// The column `= RESULT` starts at (strace's `-a 40`).
pub const RESULT_COLUMN: usize = 40;

/// `bytes` quoted as strace quotes them: `"..."` with `\"`, `\\`, `\t`,
/// `\n`, `\v`, `\f`, `\r`, printable ASCII as is, and every other byte in
/// octal (three digits only where an octal digit follows).
pub fn quote(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            0x0b => s.push_str("\\v"),
            0x0c => s.push_str("\\f"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let next_is_octal = bytes.get(i + 1).is_some_and(|c| (b'0'..=b'7').contains(c));
                if next_is_octal {
                    let _ = write!(s, "\\{b:03o}");
                } else {
                    let _ = write!(s, "\\{b:o}");
                }
            }
        }
    }
    s.push('"');
    s
}

/// A buffer argument of `len` bytes of which `shown` were read: the first
/// [`MAX_STRLEN`] quoted, then `...` if it is longer.
pub fn quote_buf(shown: &[u8], len: usize) -> String {
    let n = shown.len().min(MAX_STRLEN);
    let mut s = quote(&shown[..n]);
    if len > n {
        s.push_str("...");
    }
    s
}

/// A NUL-terminated string argument (`bytes` without the NUL; `complete`
/// if the NUL was found), truncated at `max` bytes with `...` after the
/// quote as strace does.
pub fn quote_cstr(bytes: &[u8], complete: bool, max: usize) -> String {
    let n = bytes.len().min(max);
    let mut s = quote(&bytes[..n]);
    if !complete || bytes.len() > max {
        s.push_str("...");
    }
    s
}

/// A pointer: `NULL` or `0x...`.
pub fn ptr(v: u64) -> String {
    if v == 0 {
        String::from("NULL")
    } else {
        format!("{v:#x}")
    }
}

/// The names of the bits of `v` in `table` order (a name takes all of its
/// bits, which must all be set), `|`-joined, with what is left in hex;
/// `0` for none.
pub fn flags(v: u64, table: &[(u64, &str)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut left = v;
    for &(bits, name) in table {
        if bits != 0 && left & bits == bits {
            parts.push(String::from(name));
            left &= !bits;
        }
    }
    if left != 0 {
        parts.push(format!("{left:#x}"));
    }
    if parts.is_empty() {
        parts.push(String::from("0"));
    }
    parts.join("|")
}

/// `O_*` flags after the access mode (arm64 values), in strace's order.
pub const OPEN_FLAGS: &[(u64, &str)] = &[
    (fcntl::O_CREAT as u64, "O_CREAT"),
    (fcntl::O_EXCL as u64, "O_EXCL"),
    (fcntl::O_NOCTTY as u64, "O_NOCTTY"),
    (fcntl::O_TRUNC as u64, "O_TRUNC"),
    (fcntl::O_APPEND as u64, "O_APPEND"),
    (fcntl::O_NONBLOCK as u64, "O_NONBLOCK"),
    (fcntl::O_SYNC as u64, "O_SYNC"),
    (fcntl::O_DSYNC as u64, "O_DSYNC"),
    (fcntl::FASYNC as u64, "O_ASYNC"),
    (fcntl::O_TMPFILE as u64, "O_TMPFILE"),
    (fcntl::O_DIRECTORY as u64, "O_DIRECTORY"),
    (fcntl::O_NOFOLLOW as u64, "O_NOFOLLOW"),
    (fcntl::O_DIRECT as u64, "O_DIRECT"),
    (fcntl::O_LARGEFILE as u64, "O_LARGEFILE"),
    (fcntl::O_NOATIME as u64, "O_NOATIME"),
    (fcntl::O_CLOEXEC as u64, "O_CLOEXEC"),
    (fcntl::O_PATH as u64, "O_PATH"),
];

/// `O_CREAT`, which makes open's mode argument meaningful.
pub const O_CREAT: u64 = fcntl::O_CREAT as u64;
/// `__O_TMPFILE`, which does too.
pub const O_TMPFILE_BIT: u64 = fcntl::__O_TMPFILE as u64;

/// open's flags: the access mode (`O_RDONLY`, `O_WRONLY`, `O_RDWR`), then
/// [`OPEN_FLAGS`].
pub fn open_flags(v: u64) -> String {
    let mode = match v & 3 {
        0 => "O_RDONLY",
        1 => "O_WRONLY",
        2 => "O_RDWR",
        _ => "O_ACCMODE",
    };
    let rest = v & !3;
    if rest == 0 {
        return String::from(mode);
    }
    format!("{mode}|{}", flags(rest, OPEN_FLAGS))
}

/// `PROT_*`.
pub const PROT_FLAGS: &[(u64, &str)] = &[
    (mman::PROT_READ, "PROT_READ"),
    (mman::PROT_WRITE, "PROT_WRITE"),
    (mman::PROT_EXEC, "PROT_EXEC"),
    (mman::PROT_SEM, "PROT_SEM"),
    (mman::PROT_BTI, "PROT_BTI"),
    (mman::PROT_MTE, "PROT_MTE"),
    (mman::PROT_GROWSDOWN, "PROT_GROWSDOWN"),
    (mman::PROT_GROWSUP, "PROT_GROWSUP"),
];

/// mmap/mprotect's prot: `PROT_NONE` for 0.
pub fn prot(v: u64) -> String {
    if v == 0 {
        String::from("PROT_NONE")
    } else {
        flags(v, PROT_FLAGS)
    }
}

/// `MAP_*` after the mapping type.
pub const MAP_FLAGS: &[(u64, &str)] = &[
    (mman::MAP_FIXED, "MAP_FIXED"),
    (mman::MAP_ANONYMOUS, "MAP_ANONYMOUS"),
    (mman::MAP_GROWSDOWN, "MAP_GROWSDOWN"),
    (mman::MAP_DENYWRITE, "MAP_DENYWRITE"),
    (mman::MAP_EXECUTABLE, "MAP_EXECUTABLE"),
    (mman::MAP_LOCKED, "MAP_LOCKED"),
    (mman::MAP_NORESERVE, "MAP_NORESERVE"),
    (mman::MAP_POPULATE, "MAP_POPULATE"),
    (mman::MAP_NONBLOCK, "MAP_NONBLOCK"),
    (mman::MAP_STACK, "MAP_STACK"),
    (mman::MAP_HUGETLB, "MAP_HUGETLB"),
    (mman::MAP_SYNC, "MAP_SYNC"),
    (mman::MAP_FIXED_NOREPLACE, "MAP_FIXED_NOREPLACE"),
    (mman::MAP_UNINITIALIZED, "MAP_UNINITIALIZED"),
];

/// mmap's flags: the type (`MAP_SHARED`, `MAP_PRIVATE`,
/// `MAP_SHARED_VALIDATE`), then [`MAP_FLAGS`].
pub fn map_flags(v: u64) -> String {
    let kind = match v & mman::MAP_TYPE {
        mman::MAP_SHARED => Some("MAP_SHARED"),
        mman::MAP_PRIVATE => Some("MAP_PRIVATE"),
        mman::MAP_SHARED_VALIDATE => Some("MAP_SHARED_VALIDATE"),
        _ => None,
    };
    let rest = if kind.is_some() { v & !mman::MAP_TYPE } else { v };
    match (kind, rest) {
        (Some(k), 0) => String::from(k),
        (Some(k), r) => format!("{k}|{}", flags(r, MAP_FLAGS)),
        (None, r) => flags(r, MAP_FLAGS),
    }
}

/// `CLONE_*` (without the exit signal in the low byte).
pub const CLONE_FLAGS: &[(u64, &str)] = &[
    (sched::CLONE_VM, "CLONE_VM"),
    (sched::CLONE_FS, "CLONE_FS"),
    (sched::CLONE_FILES, "CLONE_FILES"),
    (sched::CLONE_SIGHAND, "CLONE_SIGHAND"),
    (sched::CLONE_PIDFD, "CLONE_PIDFD"),
    (sched::CLONE_PTRACE, "CLONE_PTRACE"),
    (sched::CLONE_VFORK, "CLONE_VFORK"),
    (sched::CLONE_PARENT, "CLONE_PARENT"),
    (sched::CLONE_THREAD, "CLONE_THREAD"),
    (sched::CLONE_NEWNS, "CLONE_NEWNS"),
    (sched::CLONE_SYSVSEM, "CLONE_SYSVSEM"),
    (sched::CLONE_SETTLS, "CLONE_SETTLS"),
    (sched::CLONE_PARENT_SETTID, "CLONE_PARENT_SETTID"),
    (sched::CLONE_CHILD_CLEARTID, "CLONE_CHILD_CLEARTID"),
    (sched::CLONE_DETACHED, "CLONE_DETACHED"),
    (sched::CLONE_UNTRACED, "CLONE_UNTRACED"),
    (sched::CLONE_CHILD_SETTID, "CLONE_CHILD_SETTID"),
    (sched::CLONE_NEWCGROUP, "CLONE_NEWCGROUP"),
    (sched::CLONE_NEWUTS, "CLONE_NEWUTS"),
    (sched::CLONE_NEWIPC, "CLONE_NEWIPC"),
    (sched::CLONE_NEWUSER, "CLONE_NEWUSER"),
    (sched::CLONE_NEWPID, "CLONE_NEWPID"),
    (sched::CLONE_NEWNET, "CLONE_NEWNET"),
    (sched::CLONE_IO, "CLONE_IO"),
];

/// clone's flags: the `CLONE_*` names, then the exit signal's name.
pub fn clone_flags(v: u64) -> String {
    let sig = v & sched::CSIGNAL;
    let rest = v & !sched::CSIGNAL;
    let mut s = if rest != 0 {
        flags(rest, CLONE_FLAGS)
    } else {
        String::new()
    };
    if sig != 0 {
        if !s.is_empty() {
            s.push('|');
        }
        s.push_str(&signal(sig as i64));
    }
    if s.is_empty() {
        s.push('0');
    }
    s
}

/// wait4/waitid options.
pub const WAIT_FLAGS: &[(u64, &str)] = &[
    (wait::WNOHANG as u64, "WNOHANG"),
    (wait::WUNTRACED as u64, "WUNTRACED"),
    (wait::WEXITED as u64, "WEXITED"),
    (wait::WCONTINUED as u64, "WCONTINUED"),
    (wait::WNOWAIT as u64, "WNOWAIT"),
    (wait::WNOTHREAD as u64, "__WNOTHREAD"),
    (wait::WALL as u64, "__WALL"),
    (wait::WCLONE as u64, "__WCLONE"),
];

/// `AT_*` flags of the `*at` calls.
pub const AT_FLAGS: &[(u64, &str)] = &[
    (fcntl::AT_SYMLINK_NOFOLLOW as u64, "AT_SYMLINK_NOFOLLOW"),
    (fcntl::AT_REMOVEDIR as u64, "AT_REMOVEDIR"),
    (fcntl::AT_SYMLINK_FOLLOW as u64, "AT_SYMLINK_FOLLOW"),
    (fcntl::AT_NO_AUTOMOUNT as u64, "AT_NO_AUTOMOUNT"),
    (fcntl::AT_EMPTY_PATH as u64, "AT_EMPTY_PATH"),
];

/// A signal number as strace names it: `SIGCHLD`, `SIGRTMIN`, `SIGRT_3`,
/// or the number.
pub fn signal(sig: i64) -> String {
    match sig {
        1..=31 => uapi::signal::name(sig as u32).map_or_else(|| format!("{sig}"), String::from),
        32 => String::from("SIGRTMIN"),
        33..=64 => format!("SIGRT_{}", sig - 32),
        _ => format!("{sig}"),
    }
}

/// A signal set as strace shows it: `[]`, `[CHLD USR1]`, or `~[...]` for
/// the complement when more than half the signals are in it.
pub fn sigset(mask: u64) -> String {
    let name = |sig: u32| -> String {
        let n = signal(i64::from(sig));
        n.strip_prefix("SIG").map_or(n.clone(), String::from)
    };
    let count = mask.count_ones();
    let (prefix, set) = if count > 32 { ("~", !mask) } else { ("", mask) };
    let names: Vec<String> = (1..=64u32).filter(|s| set & (1u64 << (s - 1)) != 0).map(name).collect();
    format!("{prefix}[{}]", names.join(" "))
}

/// rt_sigprocmask's `how`.
pub fn sigprocmask_how(v: u64) -> String {
    match v {
        0 => String::from("SIG_BLOCK"),
        1 => String::from("SIG_UNBLOCK"),
        2 => String::from("SIG_SETMASK"),
        _ => format!("{:#x} /* SIG_??? */", v),
    }
}

/// strace's message for the kernel-internal restart errors, which it
/// prints as `= ? NAME (MESSAGE)`.
fn restart_message(errno: i64) -> Option<(&'static str, &'static str)> {
    Some(match errno {
        512 => ("ERESTARTSYS", "To be restarted if SA_RESTART is set"),
        513 => ("ERESTARTNOINTR", "To be restarted"),
        514 => ("ERESTARTNOHAND", "To be restarted if no handler"),
        516 => ("ERESTART_RESTARTBLOCK", "Interrupted by signal"),
        _ => return None,
    })
}

/// A failed call's result: `-1 ENOENT (No such file or directory)`, or
/// `? ERESTARTSYS (...)` for the restart errors.
pub fn error_result(errno: i64) -> String {
    if let Some((name, msg)) = restart_message(errno) {
        return format!("? {name} ({msg})");
    }
    match i32::try_from(errno).ok().and_then(uapi::errno::Errno::from_i32) {
        Some(e) => format!("-1 {} ({})", e.name(), e.message()),
        None => format!("-1 {errno} (Unknown error {errno})"),
    }
}

/// A wait status as strace shows what wait4 stored: `[{WIFEXITED(s) &&
/// WEXITSTATUS(s) == 0}]` and the signal and stop forms.
pub fn wait_status(s: i32) -> String {
    let low = s & 0x7f;
    let inner = if s == 0xffff {
        String::from("{WIFCONTINUED(s)}")
    } else if low == 0 {
        format!("{{WIFEXITED(s) && WEXITSTATUS(s) == {}}}", (s >> 8) & 0xff)
    } else if low == 0x7f {
        let sig = (s >> 8) & 0xff;
        let event = (s >> 16) & 0xff;
        let base = format!("{{WIFSTOPPED(s) && WSTOPSIG(s) == {}}}", signal(i64::from(sig)));
        match event_name(event as u32) {
            Some(e) => format!("{base}|{e} << 16"),
            None if event != 0 => format!("{base}|{event:#x} << 16"),
            None => base,
        }
    } else {
        let core = if s & 0x80 != 0 { " && WCOREDUMP(s)" } else { "" };
        format!("{{WIFSIGNALED(s) && WTERMSIG(s) == {}{core}}}", signal(i64::from(low)))
    };
    format!("[{inner}]")
}

/// `PTRACE_EVENT_*`'s name.
pub fn event_name(event: u32) -> Option<&'static str> {
    Some(match event {
        1 => "PTRACE_EVENT_FORK",
        2 => "PTRACE_EVENT_VFORK",
        3 => "PTRACE_EVENT_CLONE",
        4 => "PTRACE_EVENT_EXEC",
        5 => "PTRACE_EVENT_VFORK_DONE",
        6 => "PTRACE_EVENT_EXIT",
        7 => "PTRACE_EVENT_SECCOMP",
        128 => "PTRACE_EVENT_STOP",
        _ => return None,
    })
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    b.get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, i32::from_le_bytes)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .map_or(0, u64::from_le_bytes)
}

/// `si_code`'s name for signal `sig` (strace's names), or the number.
pub fn si_code(sig: i64, code: i32) -> String {
    let generic = match code {
        0 => Some("SI_USER"),
        0x80 => Some("SI_KERNEL"),
        -1 => Some("SI_QUEUE"),
        -2 => Some("SI_TIMER"),
        -3 => Some("SI_MESGQ"),
        -4 => Some("SI_ASYNCIO"),
        -5 => Some("SI_SIGIO"),
        -6 => Some("SI_TKILL"),
        _ => None,
    };
    if let Some(g) = generic {
        return String::from(g);
    }
    let specific: &[&str] = match sig {
        17 => &[
            "CLD_EXITED",
            "CLD_KILLED",
            "CLD_DUMPED",
            "CLD_TRAPPED",
            "CLD_STOPPED",
            "CLD_CONTINUED",
        ],
        11 => &[
            "SEGV_MAPERR",
            "SEGV_ACCERR",
            "SEGV_BNDERR",
            "SEGV_PKUERR",
            "SEGV_ACCADI",
        ],
        7 => &[
            "BUS_ADRALN",
            "BUS_ADRERR",
            "BUS_OBJERR",
            "BUS_MCEERR_AR",
            "BUS_MCEERR_AO",
        ],
        5 => &[
            "TRAP_BRKPT",
            "TRAP_TRACE",
            "TRAP_BRANCH",
            "TRAP_HWBKPT",
            "TRAP_UNK",
            "TRAP_PERF",
        ],
        4 => &[
            "ILL_ILLOPC",
            "ILL_ILLOPN",
            "ILL_ILLADR",
            "ILL_ILLTRP",
            "ILL_PRVOPC",
            "ILL_PRVREG",
            "ILL_COPROC",
            "ILL_BADSTK",
        ],
        8 => &[
            "FPE_INTDIV",
            "FPE_INTOVF",
            "FPE_FLTDIV",
            "FPE_FLTOVF",
            "FPE_FLTUND",
            "FPE_FLTRES",
            "FPE_FLTINV",
            "FPE_FLTSUB",
        ],
        _ => &[],
    };
    usize::try_from(code)
        .ok()
        .and_then(|c| c.checked_sub(1))
        .and_then(|i| specific.get(i))
        .map_or_else(|| format!("{code}"), |s| String::from(*s))
}

/// A `clock_t` of SIGCHLD's si_utime/si_stime, with strace's comment in
/// seconds (USER_HZ 100) when it is not 0.
fn clock_t(v: u64) -> String {
    if v == 0 {
        String::from("0")
    } else {
        format!("{v} /* {}.{:02} s */", v / 100, v % 100)
    }
}

/// A 128-byte siginfo as strace prints it after `--- SIGxxx `:
/// `{si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=.., ...}`.
pub fn siginfo(b: &[u8]) -> String {
    let signo = i64::from(i32_at(b, 0));
    let code = i32_at(b, 8);
    let mut s = format!("{{si_signo={}, si_code={}", signal(signo), si_code(signo, code));
    let errno = i32_at(b, 4);
    if errno != 0 {
        let _ = write!(s, ", si_errno={errno}");
    }
    let kill_like = code <= 0 || code == 0x80;
    match signo {
        _ if kill_like && code != 0x80 => {
            let _ = write!(s, ", si_pid={}, si_uid={}", i32_at(b, 16), i32_at(b, 20) as u32);
            if code == -1 || code == -2 {
                let _ = write!(s, ", si_int={}, si_ptr={}", i32_at(b, 24), ptr(u64_at(b, 24)));
            }
        }
        17 => {
            let status = i32_at(b, 24);
            let st = if code == 1 {
                format!("{status}")
            } else {
                signal(i64::from(status))
            };
            let _ = write!(
                s,
                ", si_pid={}, si_uid={}, si_status={st}, si_utime={}, si_stime={}",
                i32_at(b, 16),
                i32_at(b, 20) as u32,
                clock_t(u64_at(b, 32)),
                clock_t(u64_at(b, 40))
            );
        }
        4 | 5 | 7 | 8 | 11 if code > 0 => {
            let _ = write!(s, ", si_addr={}", ptr(u64_at(b, 16)));
        }
        _ => {}
    }
    s.push('}');
    s
}

/// `struct ptrace_syscall_info` from the `len` bytes the kernel filled.
pub fn parse_syscall_info(b: &[u8; PtraceSyscallInfo::SIZE], len: usize) -> PtraceSyscallInfo {
    let args = |b: &[u8]| core::array::from_fn(|i| u64_at(b, 32 + 8 * i));
    let kind = match b[0] {
        PTRACE_SYSCALL_INFO_ENTRY if len >= 80 => SyscallInfoKind::Entry {
            nr: u64_at(b, 24),
            args: args(b),
        },
        PTRACE_SYSCALL_INFO_EXIT if len >= 33 => SyscallInfoKind::Exit {
            rval: u64_at(b, 24) as i64,
            is_error: b[32] != 0,
        },
        PTRACE_SYSCALL_INFO_SECCOMP if len >= 84 => SyscallInfoKind::Seccomp {
            nr: u64_at(b, 24),
            args: args(b),
            ret_data: i32_at(b, 80) as u32,
        },
        _ => SyscallInfoKind::None,
    };
    PtraceSyscallInfo {
        arch: i32_at(b, 4) as u32,
        instruction_pointer: u64_at(b, 8),
        stack_pointer: u64_at(b, 16),
        kind,
    }
}

/// One row of the `-c` summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallCount {
    /// The system call's name.
    pub name: String,
    /// How many calls finished.
    pub calls: u64,
    /// How many of them failed.
    pub errors: u64,
    /// The time they took, in microseconds.
    pub time_us: u64,
}

fn seconds(us: u64) -> String {
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// strace -c's table: `% time  seconds  usecs/call  calls  errors
/// syscall`, rows by time (most first, then by name), then the total.
pub fn summary_table(rows: &[CallCount]) -> String {
    let mut rows: Vec<&CallCount> = rows.iter().filter(|r| r.calls > 0).collect();
    rows.sort_by(|a, b| b.time_us.cmp(&a.time_us).then_with(|| a.name.cmp(&b.name)));
    let total_us: u64 = rows.iter().map(|r| r.time_us).sum();
    let total_calls: u64 = rows.iter().map(|r| r.calls).sum();
    let total_errors: u64 = rows.iter().map(|r| r.errors).sum();
    let dashes = "------ ----------- ----------- --------- --------- ----------------\n";
    let mut s = String::from("% time     seconds  usecs/call     calls    errors syscall\n");
    s.push_str(dashes);
    let errors = |e: u64| if e == 0 { String::new() } else { format!("{e}") };
    for r in &rows {
        // Hundredths of a percent, rounded.
        let pct = (u128::from(r.time_us) * 20_000 + u128::from(total_us))
            .checked_div(2 * u128::from(total_us))
            .unwrap_or(0);
        let _ = writeln!(
            s,
            "{:>3}.{:02} {:>11} {:>11} {:>9} {:>9} {}",
            pct / 100,
            pct % 100,
            seconds(r.time_us),
            r.time_us / r.calls.max(1),
            r.calls,
            errors(r.errors),
            r.name
        );
    }
    s.push_str(dashes);
    let _ = writeln!(
        s,
        "100.00 {:>11} {:>11} {:>9} {:>9} total",
        seconds(total_us),
        total_us.checked_div(total_calls).unwrap_or(0),
        total_calls,
        errors(total_errors)
    );
    s
}
