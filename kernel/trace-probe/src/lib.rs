//! Linux 6.12's kprobe-based event definitions for arm64, without the CPU:
//! the `kprobe_events` grammar (`trace_kprobe.c`'s parsing half), the
//! fetch-argument compiler and interpreter (`trace_probe.c`,
//! `trace_probe_tmpl.h`), the event's fields, `print fmt`, `trace` text and
//! the definition as `kprobe_events` shows it.
//!
//! The kernel's side of it:
//!
//! 1. [`split_commands`] cuts a written buffer into commands as
//!    `trace_parse_run_command` does; [`parse_command`] turns each into a
//!    [`Command`], asking a [`ProbeContext`] about symbols and prototypes.
//!    A rejection is a [`CmdError`] whose position is in
//!    [`command_text`] (what `error_log` prints after `Command:`); an empty
//!    message means Linux logs nothing for it.
//! 2. Registration: [`ProbeDef::check_append`] (an event of that name
//!    already exists), [`ProbeDef::register_error`] (arming failed).
//! 3. On a hit, [`ProbeDef::fetch`] (and for return probes,
//!    [`ProbeDef::store_entry_data`] at entry) writes the record into a
//!    caller buffer without allocating.
//! 4. [`ProbeDef::fields`], [`ProbeDef::print_fmt`], [`ProbeDef::print`] and
//!    [`ProbeDef::render`] give the `format` file, the `trace` line and the
//!    `kprobe_events` line.

#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod errors;
mod fetch;
mod insn;
pub mod num;
mod output;
mod parse;
pub mod print_modes;
pub mod proto;
pub mod synth;
mod tevent;
pub mod types;

#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;

pub use errors::TpErr;
pub use fetch::{FetchEnv, FetchError, ProbeSite};
pub use insn::Reg;
pub use output::{sprint_symbol, Field, Symbolizer};
pub use parse::{argv_split, command_text, parse_command, parse_fprobe_command, Command};
pub use proto::{CType, FuncProto, Member, Pointee, StructType};
pub use tevent::{parse_eprobe, EventLookup, StrKind, TeventField, EPROBE_EVENT_SYSTEM};
pub use types::FetchType;
pub use uapi::error::CmdError;

use insn::Insn;

/// Most arguments one probe may have.
pub const MAX_TRACE_ARGS: usize = 128;
/// Longest argument expression (after `NAME=`).
pub const MAX_ARGSTR_LEN: usize = 63;
/// Most elements of an array type.
pub const MAX_ARRAY_LEN: usize = 64;
/// Longest argument name.
pub const MAX_ARG_NAME_LEN: usize = 32;
/// Room for the names `$arg*`/`$argN` expand to.
pub const MAX_BTF_ARGS_LEN: usize = 128;
/// Room for what `%pd`/`%pD` expand to.
pub const MAX_DENTRY_ARGS_LEN: usize = 256;
/// Longest string an argument stores (`MAX_STRING_SIZE`, `PATH_MAX`).
pub const MAX_STRING_SIZE: usize = 4096;
/// Largest fixed part of the arguments.
pub const MAX_PROBE_EVENT_SIZE: usize = 3072;
/// Event and group names are shorter than this.
pub const MAX_EVENT_NAME_LEN: usize = 64;
/// The group of a probe defined without one.
pub const KPROBE_EVENT_SYSTEM: &str = "kprobes";
/// The group of an `f` probe defined without one.
pub const FPROBE_EVENT_SYSTEM: &str = "fprobes";
/// The group of a `t` probe defined without one.
pub const TRACEPOINT_EVENT_SYSTEM: &str = "tracepoints";
/// Largest MAXACTIVE of `rN:`.
pub const KRETPROBE_MAXACTIVE_MAX: u32 = 4096;
/// Largest N of `$stackN`/`$argN` (THREAD_SIZE / 8 on arm64).
pub const PARAM_MAX_STACK: u64 = 16384 / 8;
/// Size of the common header every record starts with (`struct
/// trace_entry`: type, flags, preempt count, pid).
pub const COMMON_HEADER_SIZE: usize = 8;
/// Longest text `%pS` makes (`KSYM_SYMBOL_LEN`).
pub const KSYM_SYMBOL_LEN: usize = 512;
/// Longest line `kprobe_events` accepts in one write (WRITE_BUFSIZE - 2).
pub const WRITE_BUFSIZE: usize = 4096;

/// What the kernel answers while a definition is parsed.
pub trait ProbeContext {
    /// The address of a kernel symbol (`kallsyms_lookup_name`).
    fn lookup_name(&self, name: &str) -> Option<u64>;
    /// How many kernel symbols have this name (more than one is refused
    /// as ambiguous, none as unknown).
    fn count_symbols(&self, name: &str) -> usize;
    /// The prototype of a function, when the kernel knows its parameters
    /// (Linux: BTF). `None` behaves as a function without BTF.
    fn func_proto(&self, name: &str) -> Option<&FuncProto>;
    /// Offsets that `%pd`/`%pD` need; `None` (the default) leaves them
    /// unsupported, and Linux's "Unknown type is specified" rejects them.
    fn dentry_layout(&self) -> Option<DentryLayout> {
        None
    }
    /// The probe function of the tracepoint `name` (Linux's
    /// `__probestub_<name>`), whose prototype names the tracepoint's
    /// arguments after a first `void *` data argument; `None` (the
    /// default) when there is no such tracepoint.
    fn tracepoint_probe(&self, _name: &str) -> Option<String> {
        None
    }
}

/// Where `%pd` and `%pD` find a name: `dentry->d_name.name` and
/// `file->f_path.dentry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DentryLayout {
    /// Offset of `d_name.name` in `struct dentry`.
    pub d_name_name: u32,
    /// Offset of `f_path.dentry` in `struct file`.
    pub f_path_dentry: u32,
}

/// Where a probe sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeLocation {
    /// `[MOD:]SYM[+offs]`; `name` includes `MOD:` when one was given.
    Symbol {
        /// The symbol as written (without the offset).
        name: String,
        /// Byte offset from the symbol.
        offset: u32,
    },
    /// A raw kernel address.
    Address(u64),
}

/// One compiled argument.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeArg {
    /// Its field name.
    pub name: String,
    /// The expression as written (after `NAME=`), shown by `kprobe_events`.
    pub comm: String,
    /// Its fetch type.
    pub ty: &'static FetchType,
    /// Array length, 0 for a scalar.
    pub count: u32,
    /// Offset of its field from the first argument.
    pub offset: u32,
    /// Stored as `__data_loc` (strings).
    pub dynamic: bool,
    pub(crate) code: Vec<Insn>,
    pub(crate) data: Vec<u8>,
    pub(crate) symbol: Option<String>,
}

impl ProbeArg {
    /// The field's C type in the `format` file (`u8[4]` for arrays).
    pub fn fmttype(&self) -> String {
        if self.count != 0 {
            alloc::format!("{}[{}]", self.ty.fmttype, self.count)
        } else {
            String::from(self.ty.fmttype)
        }
    }

    /// Bytes of its field in the fixed part.
    pub fn field_size(&self) -> usize {
        usize::from(self.ty.size) * (self.count.max(1) as usize)
    }
}

/// What kind of dynamic event a definition makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// `p`/`r`: a kprobe or kretprobe (see [`ProbeDef::is_return`]).
    Kprobe,
    /// `f`: an fprobe at a function's entry or exit (Linux's
    /// `trace_fprobe`); its location is the function's symbol.
    Fprobe,
    /// `e`: an event probe on another event's records (Linux's
    /// `trace_eprobe`); its records have no probe fields.
    Eprobe {
        /// The attached event's system.
        system: String,
        /// The attached event's name.
        event: String,
        /// The filter after `if`, on the attached event's fields.
        filter: Option<String>,
    },
    /// `t`: a probe on a tracepoint (Linux's `trace_fprobe` on a
    /// tracepoint); `$argN` are the tracepoint's arguments.
    Tprobe {
        /// The tracepoint's name.
        tracepoint: String,
    },
}

/// A parsed `p`/`r`/`e`/`t` definition.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeDef {
    /// Kprobe, event probe or tracepoint probe.
    pub kind: ProbeKind,
    /// The event's group (`kprobes` by default).
    pub group: String,
    /// The event's name (given, or Linux's `p_SYM_OFFS`).
    pub event: String,
    /// A return probe (`r`, or `%return`).
    pub is_return: bool,
    /// `rN`'s N, 0 when not given (registration then picks the default,
    /// see [`default_maxactive`], and should store it here: Linux shows
    /// the effective value).
    pub maxactive: u32,
    /// Where it probes.
    pub location: ProbeLocation,
    /// The arguments, in order.
    pub args: Vec<ProbeArg>,
    /// For a return probe: which function arguments (0-based) to save at
    /// entry for `$argN`/names; see [`ProbeDef::store_entry_data`].
    pub entry_args: Vec<u32>,
    /// Size of the arguments' fixed part.
    pub size: usize,
    /// Linux keeps this probe listed but does not arm it: its module is
    /// not loaded (this kernel has none), or an `@SYM` of an address probe
    /// did not resolve.
    pub pending: bool,
    pub(crate) command: String,
    pub(crate) arg_starts: Vec<usize>,
}

/// Linux's default MAXACTIVE for a return probe (`register_kretprobe`).
pub fn default_maxactive(possible_cpus: u32) -> u32 {
    possible_cpus.saturating_mul(2).max(10)
}

impl ProbeDef {
    /// The command as `error_log` shows it.
    pub fn command(&self) -> &str {
        &self.command
    }

    fn pos_of_arg(&self, index: usize) -> usize {
        match self.arg_starts.get(index) {
            Some(&p) => p,
            None => self.command.len() + 1,
        }
    }

    /// Checks adding this probe to the existing event `existing` (same
    /// group and name; Linux's `register_trace_kprobe` and
    /// `append_trace_kprobe`): the type must match, the arguments must
    /// have the same names and types, and it must not repeat one of the
    /// event's probes. `existing` lists the probes of that event.
    pub fn check_append(&self, existing: &[&ProbeDef]) -> Result<(), CmdError> {
        let Some(first) = existing.first() else { return Ok(()) };
        let tracepoint = |d: &ProbeDef| matches!(d.kind, ProbeKind::Tprobe { .. });
        if first.is_return != self.is_return || tracepoint(first) != tracepoint(self) {
            return Err(CmdError::new(uapi::Errno::EEXIST, TpErr::DiffProbeType.msg(), 0));
        }
        let a = &self.args;
        let b = &first.args;
        let diff = if a.len() != b.len() {
            Some(a.len().min(b.len()) + 1)
        } else {
            a.iter()
                .zip(b.iter())
                .position(|(x, y)| !core::ptr::eq(x.ty, y.ty) || x.count != y.count || x.name != y.name)
                .map(|i| i + 1)
        };
        if let Some(i) = diff {
            // Linux points at argument i + 1 of argv (0 is the head).
            return Err(CmdError::new(
                uapi::Errno::EEXIST,
                TpErr::DiffArgType.msg(),
                self.pos_of_arg(i + 1),
            ));
        }
        let same = existing
            .iter()
            .any(|o| o.same_site(self) && o.args.iter().zip(self.args.iter()).all(|(x, y)| x.comm == y.comm));
        if same {
            return Err(CmdError::new(uapi::Errno::EEXIST, TpErr::SameProbe.msg(), 0));
        }
        Ok(())
    }

    /// Linux's `trace_kprobe_has_same_kprobe` compares symbol (or
    /// "unknown" for an address) and offset.
    fn same_site(&self, other: &ProbeDef) -> bool {
        let site = |d: &ProbeDef| match &d.location {
            ProbeLocation::Symbol { name, offset } => (name.clone(), *offset),
            ProbeLocation::Address(_) => (String::from("unknown"), 0),
        };
        site(self) == site(other)
    }

    /// The error for a name used by an event of another kind (Linux's
    /// `EVENT_EXIST`).
    pub fn event_exists_error(&self) -> CmdError {
        CmdError::new(uapi::Errno::EEXIST, TpErr::EventExist.msg(), 0)
    }

    /// The error Linux logs when arming the probe failed with `errno`
    /// (`register_trace_kprobe`'s caller): `EILSEQ` is not an instruction
    /// boundary, `ENOENT` an unknown address; `ENOMEM` and `EEXIST` are
    /// returned without a log entry.
    pub fn register_error(&self, errno: uapi::Errno) -> CmdError {
        let pos = self.pos_of_arg(1);
        match errno {
            uapi::Errno::EILSEQ => CmdError::new(errno, TpErr::BadInsnBndry.msg(), pos),
            uapi::Errno::ENOENT => CmdError::new(errno, TpErr::BadProbeAddr.msg(), pos),
            uapi::Errno::ENOMEM | uapi::Errno::EEXIST => CmdError::new(errno, "", 0),
            _ => CmdError::new(errno, TpErr::FailRegProbe.msg(), pos),
        }
    }
}

/// A parsed `-:[GRP/]EVENT [SYM [ARGS]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoveCmd {
    /// The group, if given.
    pub group: Option<String>,
    /// The event; empty matches every event of the group.
    pub event: String,
    /// Further words the probe must match: its location, then `NAME=EXPR`
    /// of its first arguments.
    pub args: Vec<String>,
}

impl RemoveCmd {
    /// Whether this command removes `def` (Linux's `trace_kprobe_match`).
    /// Removing nothing is `ENOENT`; removing an enabled event is `EBUSY`.
    pub fn matches(&self, def: &ProbeDef) -> bool {
        if !(self.event.is_empty() || self.event == def.event) {
            return false;
        }
        if self.group.as_ref().is_some_and(|g| *g != def.group) {
            return false;
        }
        let Some((head, rest)) = self.args.split_first() else {
            return true;
        };
        if *head != def.location_text() {
            return false;
        }
        if def.args.len() < rest.len() {
            return false;
        }
        rest.iter()
            .zip(def.args.iter())
            .all(|(w, a)| w.strip_prefix(a.name.as_str()).and_then(|r| r.strip_prefix('=')) == Some(a.comm.as_str()))
    }
}

/// Splits what was written to `kprobe_events` into commands, as Linux's
/// `trace_parse_run_command`: one per line, `#` starts a comment, and a
/// last line without a newline is a command too. A line of
/// [`WRITE_BUFSIZE`] - 1 bytes or more is refused with `EINVAL` (Linux
/// warns in the kernel log, not `error_log`), as is a line that is not
/// UTF-8. Returns each command with the byte offset just past it, so that
/// a failing command can report how much was consumed before it.
pub fn split_commands(buf: &[u8]) -> impl Iterator<Item = Result<(&str, usize), uapi::Errno>> + '_ {
    let mut done = 0usize;
    core::iter::from_fn(move || {
        if done >= buf.len() {
            return None;
        }
        let rest = &buf[done..];
        let (line, used) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        // Linux reads the write in chunks of WRITE_BUFSIZE - 1 bytes and
        // needs a whole line in one chunk; a NUL byte makes its line look
        // unterminated, which it refuses the same way.
        let too_long = if used > line.len() {
            line.len() >= WRITE_BUFSIZE - 1
        } else {
            line.len() > WRITE_BUFSIZE - 1
        };
        if too_long || line.contains(&0) {
            done = buf.len();
            return Some(Err(uapi::Errno::EINVAL));
        }
        let line = match line.iter().position(|&b| b == b'#') {
            Some(i) => &line[..i],
            None => line,
        };
        done += used;
        Some(
            core::str::from_utf8(line)
                .map(|s| (s, done))
                .map_err(|_| uapi::Errno::EINVAL),
        )
    })
}
