//! System call lines from `uapi::syscalls::SYSCALLS`: each argument decoded
//! by its [`ArgKind`], with strace's special forms for the common calls
//! (open flags and mode, mmap prot and flags, clone, wait4's status,
//! read/write buffers, signal sets, execve's argv and environment).
//!
//! Arguments the call writes ([`ArgKind::Ptr`]) are shown when it returns,
//! as strace does: the line's text is split into what is printed at the
//! entry stop ([`entry_text`]) and at the exit stop ([`exit_text`]).
//! Tracee memory comes through [`Memory`], so this module makes no system
//! call itself.

use crate::fmt;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use uapi::syscalls::{ArgKind, Syscall};

/// The tracee's memory, as the decoder reads it.
pub trait Memory {
    /// `len` bytes at `addr`, fewer where the memory ends, `None` if none.
    fn read(&self, addr: u64, len: usize) -> Option<Vec<u8>>;
    /// The NUL-terminated string at `addr`, at most `max` bytes: (bytes,
    /// whether the NUL was within them).
    fn read_cstr(&self, addr: u64, max: usize) -> Option<(Vec<u8>, bool)>;
}

/// Longest path shown whole (strace prints paths up to `PATH_MAX`).
const PATH_MAX: usize = 4096;
/// At most this many argv elements are shown (then `...`).
const MAX_ARRAY: usize = 32;

/// One system call as an entry stop reports it.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// The number (x8).
    pub nr: u64,
    /// x0..x5 at entry.
    pub args: [u64; 6],
}

impl Call {
    /// Its entry in the table.
    pub fn syscall(&self) -> Option<&'static Syscall> {
        u32::try_from(self.nr).ok().and_then(uapi::syscalls::by_nr)
    }

    /// Linux's name, or strace's `syscall_0x...` for unknown numbers.
    pub fn name(&self) -> String {
        match self.syscall() {
            Some(s) => String::from(s.name),
            None => format!("syscall_{:#x}", self.nr),
        }
    }

    fn name_is(&self, name: &str) -> bool {
        self.syscall().is_some_and(|s| s.name == name)
    }

    /// How many arguments the line shows.
    fn shown_args(&self) -> usize {
        let Some(sc) = self.syscall() else { return 6 };
        let n = sc.args.len();
        // open's mode means something only with O_CREAT or O_TMPFILE.
        if sc.name == "openat" && self.args[2] & (fmt::O_CREAT | fmt::O_TMPFILE_BIT) == 0 {
            return n.min(3);
        }
        n
    }

    /// The first argument shown at the exit stop (all from there on).
    fn exit_from(&self) -> usize {
        let Some(sc) = self.syscall() else { return 6 };
        if sc.name == "clone" {
            return sc.args.len();
        }
        sc.args
            .iter()
            .position(|a| a.kind == ArgKind::Ptr)
            .unwrap_or(sc.args.len())
    }

    /// Whether the entry stop printed every argument (strace's
    /// `RVAL_DECODED`): a call that never returns then ends with `) = ?`
    /// rather than ` <unfinished ...>) = ?`.
    pub fn decoded_at_entry(&self) -> bool {
        self.exit_from() >= self.shown_args()
    }
}

/// What the call returned, at the exit stop.
#[derive(Clone, Copy, Debug)]
pub struct Ret {
    /// The return value or `-errno`.
    pub rval: i64,
    /// Whether it is an error.
    pub is_error: bool,
}

/// The text printed at the entry stop: `name(` and the arguments the call
/// only reads, each followed by `, ` when more follow.
pub fn entry_text(call: &Call, mem: &dyn Memory) -> String {
    let mut s = call.name();
    s.push('(');
    if call.name_is("clone") {
        s.push_str(&clone_args(call));
        return s;
    }
    let shown = call.shown_args();
    let upto = call.exit_from().min(shown);
    for i in 0..upto {
        s.push_str(&arg(call, i, None, mem));
        if i + 1 < shown {
            s.push_str(", ");
        }
    }
    s
}

/// The text printed at the exit stop: the remaining arguments and `)`
/// (the result follows separately, see [`result`]).
pub fn exit_text(call: &Call, ret: Ret, mem: &dyn Memory) -> String {
    let mut s = String::new();
    let shown = call.shown_args();
    for i in call.exit_from().min(shown)..shown {
        s.push_str(&arg(call, i, Some(ret), mem));
        if i + 1 < shown {
            s.push_str(", ");
        }
    }
    s.push(')');
    s
}

/// The result after `= `: the value (an address for calls returning one),
/// or the error.
pub fn result(call: &Call, ret: Ret) -> String {
    if ret.is_error {
        return fmt::error_result(-ret.rval);
    }
    let returns_addr = ["mmap", "mremap", "brk", "shmat"].iter().any(|n| call.name_is(n));
    if returns_addr {
        format!("{:#x}", ret.rval)
    } else {
        format!("{}", ret.rval)
    }
}

/// An int argument: the low 32 bits as a signed number.
fn int(v: u64) -> String {
    format!("{}", v as i32)
}

fn str_arg(v: u64, max: usize, mem: &dyn Memory) -> String {
    if v == 0 {
        return String::from("NULL");
    }
    match mem.read_cstr(v, max + 1) {
        Some((b, complete)) => fmt::quote_cstr(&b, complete, max),
        None => format!("{v:#x}"),
    }
}

fn read_u64s(mem: &dyn Memory, addr: u64, n: usize) -> Option<Vec<u64>> {
    let b = mem.read(addr, 8 * n)?;
    Some(
        b.chunks_exact(8)
            .map(|c| c.try_into().map_or(0, u64::from_le_bytes))
            .collect(),
    )
}

/// argv: `["a", "b"]`.
fn str_array(v: u64, mem: &dyn Memory) -> String {
    if v == 0 {
        return String::from("NULL");
    }
    let mut items = Vec::new();
    let mut at = v;
    loop {
        let Some(p) = read_u64s(mem, at, 1).and_then(|w| w.first().copied()) else {
            return format!("{v:#x}");
        };
        if p == 0 {
            break;
        }
        if items.len() == MAX_ARRAY {
            items.push(String::from("..."));
            break;
        }
        items.push(str_arg(p, fmt::MAX_STRLEN, mem));
        at = at.wrapping_add(8);
    }
    format!("[{}]", items.join(", "))
}

/// envp: `0x... /* N vars */`.
fn env_array(v: u64, mem: &dyn Memory) -> String {
    if v == 0 {
        return String::from("NULL");
    }
    let mut n = 0u64;
    let mut at = v;
    while let Some(p) = read_u64s(mem, at, 1).and_then(|w| w.first().copied()) {
        if p == 0 {
            return format!("{v:#x} /* {n} vars */");
        }
        n += 1;
        at = at.wrapping_add(8);
    }
    format!("{v:#x}")
}

/// `child_stack=..., flags=...` and the tid/tls arguments the flags use.
fn clone_args(call: &Call) -> String {
    let [flags, stack, parent_tid, tls, child_tid, _] = call.args;
    let mut s = format!("child_stack={}, flags={}", fmt::ptr(stack), fmt::clone_flags(flags));
    if flags & 0x10_0000 != 0 {
        s.push_str(&format!(", parent_tid={}", fmt::ptr(parent_tid)));
    }
    if flags & 0x8_0000 != 0 {
        s.push_str(&format!(", tls={}", fmt::ptr(tls)));
    }
    if flags & (0x20_0000 | 0x100_0000) != 0 {
        s.push_str(&format!(", child_tidptr={}", fmt::ptr(child_tid)));
    }
    s
}

fn sigset_at(v: u64, mem: &dyn Memory) -> String {
    if v == 0 {
        return String::from("NULL");
    }
    match read_u64s(mem, v, 1).and_then(|w| w.first().copied()) {
        Some(m) => fmt::sigset(m),
        None => format!("{v:#x}"),
    }
}

/// Argument `i`, at entry (`ret` None) or exit.
fn arg(call: &Call, i: usize, ret: Option<Ret>, mem: &dyn Memory) -> String {
    let v = call.args[i];
    let Some(sc) = call.syscall() else {
        return format!("{v:#x}");
    };
    let Some(a) = sc.args.get(i) else {
        return format!("{v:#x}");
    };
    let ok = ret.filter(|r| !r.is_error);
    match (sc.name, a.name) {
        ("openat" | "open_by_handle_at", "flags") => return fmt::open_flags(v),
        ("pipe2" | "dup3" | "eventfd2" | "inotify_init1" | "epoll_create1", "flags") => {
            return fmt::flags(v, fmt::OPEN_FLAGS)
        }
        ("mmap" | "mprotect", "prot") => return fmt::prot(v),
        ("mmap", "flags") => return fmt::map_flags(v),
        ("mmap", "off") => return if v == 0 { String::from("0") } else { format!("{v:#x}") },
        ("wait4" | "waitid", "options") => return fmt::flags(v & 0xffff_ffff, fmt::WAIT_FLAGS),
        ("wait4", "stat_addr") => {
            return match (ok, v) {
                (_, 0) => String::from("NULL"),
                (Some(r), _) if r.rval != 0 => match mem.read(v, 4) {
                    Some(b) if b.len() == 4 => fmt::wait_status(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    _ => format!("{v:#x}"),
                },
                _ => format!("{v:#x}"),
            }
        }
        ("pipe2", "fildes") => {
            return match (ok, mem.read(v, 8)) {
                (Some(_), Some(b)) if b.len() == 8 => format!(
                    "[{}, {}]",
                    i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                    i32::from_le_bytes([b[4], b[5], b[6], b[7]])
                ),
                _ => fmt::ptr(v),
            }
        }
        ("rt_sigprocmask", "how") => return fmt::sigprocmask_how(v),
        ("rt_sigprocmask", "set") => return sigset_at(v, mem),
        ("rt_sigprocmask", "oset") => {
            return if ok.is_some() { sigset_at(v, mem) } else { fmt::ptr(v) };
        }
        ("read" | "pread64" | "readlinkat" | "getcwd" | "getrandom", "buf") => {
            return match ok {
                Some(r) if v != 0 => {
                    let n = usize::try_from(r.rval).unwrap_or(0);
                    match mem.read(v, n.min(fmt::MAX_STRLEN)) {
                        Some(b) => fmt::quote_buf(&b, n),
                        None if n == 0 => String::from("\"\""),
                        None => format!("{v:#x}"),
                    }
                }
                _ => fmt::ptr(v),
            }
        }
        ("write" | "pwrite64", "buf") => {
            let n = usize::try_from(call.args[i + 1]).unwrap_or(usize::MAX);
            return match mem.read(v, n.min(fmt::MAX_STRLEN)) {
                Some(b) => fmt::quote_buf(&b, n),
                None if n == 0 => String::from("\"\""),
                None => fmt::ptr(v),
            };
        }
        ("execve" | "execveat", "envp") => return env_array(v, mem),
        ("newfstatat" | "unlinkat" | "linkat" | "fchownat" | "utimensat", "flag" | "flags") => {
            return fmt::flags(v, fmt::AT_FLAGS)
        }
        _ => {}
    }
    match a.kind {
        ArgKind::Int | ArgKind::Pid => int(v),
        ArgKind::Fd => {
            if v as i32 == -100 && (a.name.ends_with("dfd") || a.name == "dirfd") {
                String::from("AT_FDCWD")
            } else {
                int(v)
            }
        }
        ArgKind::Signal => fmt::signal(i64::from(v as i32)),
        ArgKind::Flags => {
            if v == 0 {
                String::from("0")
            } else {
                format!("{v:#x}")
            }
        }
        // strace's `%#03o`: 0644, 000.
        ArgKind::Mode => format!("0{v:02o}"),
        ArgKind::Size => format!("{v}"),
        ArgKind::Addr | ArgKind::PtrIn | ArgKind::Ptr => fmt::ptr(v),
        ArgKind::Str => {
            let is_path = a.name.contains("path") || a.name.contains("name") || a.name == "dir_name";
            str_arg(v, if is_path { PATH_MAX } else { fmt::MAX_STRLEN }, mem)
        }
        ArgKind::StrArray => str_array(v, mem),
    }
}
