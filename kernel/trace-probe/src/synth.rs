//! Synthetic event definitions (Linux's `trace_events_synth.c`, parsing
//! half): `NAME TYPE FIELD[; TYPE FIELD]...` and `!NAME` in
//! `synthetic_events`, `s:[synthetic/]NAME FIELDS` in `dynamic_events`,
//! with Linux's `synthetic_events` errors (message, and a caret at the
//! first occurrence of the offending word, as Linux's `errpos` finds it).

use crate::parse::{argv_split, is_space};
use crate::CmdError;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use uapi::Errno;

/// The system of every synthetic event.
pub const SYNTH_SYSTEM: &str = "synthetic";
/// Most fields one event has.
pub const SYNTH_FIELDS_MAX: usize = 64;
/// Room of a `char[N]` field in the record (`STR_VAR_LEN_MAX`).
pub const STR_VAR_LEN_MAX: usize = 256;

const BAD_NAME: &str = "Illegal name";
const INVALID_CMD: &str = "Command must be of the form: <name> field[;field] ...";
const INVALID_DYN_CMD: &str = "Command must be of the form: s or -:[synthetic/]<name> field[;field] ...";
const EVENT_EXISTS: &str = "Event already exists";
const TOO_MANY_FIELDS: &str = "Too many fields";
const INCOMPLETE_TYPE: &str = "Incomplete type";
const INVALID_TYPE: &str = "Invalid type";
const INVALID_FIELD: &str = "Invalid field";
const INVALID_ARRAY_SPEC: &str = "Invalid array specification";

/// One field of a synthetic event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthField {
    /// Its name.
    pub name: String,
    /// Its type as the format file has it (`u64`, `char[16]`,
    /// `__data_loc char[]`, `__data_loc unsigned long[]`).
    pub type_name: String,
    /// Its size in the format file.
    pub size: usize,
    /// Whether it is signed.
    pub is_signed: bool,
    /// A string (`char[N]` or `char[]`).
    pub is_string: bool,
    /// Stored after the slots (`char[]`, stacks).
    pub is_dynamic: bool,
    /// A stack trace (`unsigned long[]`).
    pub is_stack: bool,
}

impl SynthField {
    /// The type as `synthetic_events` lists it (without `__data_loc`).
    pub fn desc_type(&self) -> &str {
        self.type_name.strip_prefix("__data_loc ").unwrap_or(&self.type_name)
    }

    /// How many 8-byte slots it takes in the record.
    pub fn slots(&self) -> usize {
        if self.is_string && !self.is_dynamic {
            STR_VAR_LEN_MAX / 8
        } else {
            1
        }
    }

    /// Its `printf` format (Linux's `synth_field_fmt`).
    pub fn fmt(&self) -> &'static str {
        synth_field_fmt(&self.type_name)
    }
}

/// A parsed command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SynthCmd {
    /// Nothing (a blank line).
    Empty,
    /// Define `name` with `fields`.
    Create {
        /// The event's name.
        name: String,
        /// Its fields, in order.
        fields: Vec<SynthField>,
    },
    /// `!NAME`: remove it.
    Delete {
        /// The event's name.
        name: String,
    },
}

/// Linux's `skip_spaces`: what `error_log` shows as the command.
pub fn synth_cmd_text(raw: &str) -> &str {
    raw.trim_start_matches(|c: char| c.is_ascii() && is_space(c as u8))
}

fn err(errno: Errno, msg: &'static str, pos: usize) -> CmdError {
    CmdError::new(errno, msg, pos)
}

/// Linux's `errpos`: where `s` first occurs in the command.
fn errpos(cmd: &str, s: &str) -> usize {
    cmd.find(s).unwrap_or(0)
}

/// Linux's `synth_field_fmt`.
pub fn synth_field_fmt(ty: &str) -> &'static str {
    match ty {
        "s64" => "%lld",
        "u64" => "%llu",
        "s32" | "s16" | "s8" | "char" | "int" | "bool" | "pid_t" => "%d",
        "u32" | "u16" | "u8" | "unsigned char" | "unsigned int" => "%u",
        "long" => "%ld",
        "unsigned long" => "%lu",
        "gfp_t" => "%x",
        t if t.contains("char[") || t.contains("long[") => "%s",
        _ => "%llu",
    }
}

/// Linux's `synth_field_string_size`: `Ok(0)` for `char[]`.
fn synth_field_string_size(ty: &str) -> Result<usize, ()> {
    let start = ty.find("char[").ok_or(())? + 5;
    let end = ty.find(']').ok_or(())?;
    if end < start || end + 1 != ty.len() {
        return Err(());
    }
    let len = end - start;
    if len > 3 {
        return Err(());
    }
    if len == 0 {
        return Ok(0);
    }
    let n = crate::num::kstrtouint(&ty[start..end], 0).map_err(|_| ())? as usize;
    if n > STR_VAR_LEN_MAX {
        return Err(());
    }
    Ok(n)
}

/// Linux's `synth_field_size`: 0 for an unknown type, `char[]` or a
/// stack; Err for a bad string size.
fn synth_field_size(ty: &str) -> Result<usize, ()> {
    Ok(match ty {
        "s64" | "u64" | "long" | "unsigned long" => 8,
        "s32" | "u32" | "int" | "unsigned int" | "pid_t" | "gfp_t" => 4,
        "s16" | "u16" => 2,
        "s8" | "u8" | "char" | "unsigned char" | "bool" => 1,
        t if t.contains("char[") => return synth_field_string_size(t),
        _ => 0,
    })
}

/// Linux's `is_good_name`.
fn is_good_name(name: &str) -> bool {
    let mut b = name.bytes();
    let ok = |c: u8| c.is_ascii_alphabetic() || c == b'_';
    b.next().is_some_and(ok) && b.all(|c| ok(c) || c.is_ascii_digit())
}

/// Linux's `parse_synth_field`: one field from the front of `argv`, and
/// how many words it took.
fn parse_synth_field(cmd: &str, argv: &[&str]) -> Result<(SynthField, usize), CmdError> {
    let (prefix, ftype, fname, used) = if argv[0] == "unsigned" {
        if argv.len() < 3 {
            return Err(err(Errno::EINVAL, INCOMPLETE_TYPE, errpos(cmd, argv[0])));
        }
        ("unsigned ", argv[1], Some(argv[2]), 3)
    } else {
        ("", argv[0], argv.get(1).copied(), 2)
    };
    let Some(fname) = fname else {
        return Err(err(Errno::EINVAL, INVALID_FIELD, errpos(cmd, ftype)));
    };
    let (name, array) = match fname.find('[') {
        Some(i) => (&fname[..i], Some(&fname[i..])),
        None => (fname, None),
    };
    if !is_good_name(name) {
        return Err(err(Errno::EINVAL, BAD_NAME, errpos(cmd, fname)));
    }
    let mut ty = format!("{prefix}{ftype}{}", array.unwrap_or(""));
    let mut size = match synth_field_size(&ty) {
        Ok(s) => s,
        Err(()) if array.is_some() => return Err(err(Errno::EINVAL, INVALID_ARRAY_SPEC, errpos(cmd, fname))),
        Err(()) => return Err(err(Errno::EINVAL, INVALID_TYPE, errpos(cmd, ftype))),
    };
    let is_string = ty.contains("char[");
    let is_stack = !is_string && ty.contains("long[");
    let mut is_dynamic = false;
    if size == 0 {
        if !(is_string || is_stack) {
            return Err(err(Errno::EINVAL, INVALID_TYPE, errpos(cmd, ftype)));
        }
        ty = format!("__data_loc {ty}");
        is_dynamic = true;
        size = 8;
    }
    let is_signed = !ty.starts_with('u') && ty != "gfp_t";
    Ok((
        SynthField {
            name: name.to_string(),
            type_name: ty,
            size,
            is_signed,
            is_string,
            is_dynamic,
            is_stack,
        },
        used,
    ))
}

/// Linux's `check_command`: the part before the first `;` must have a
/// name and a whole field, unless it removes.
fn check_command(cmd: &str) -> bool {
    let first = cmd.split(';').next().unwrap_or("");
    first.starts_with('!') || argv_split(first).len() >= 3
}

/// Linux's `__create_synth_event`, up to registration: `exists` says
/// whether an event of that name is already defined.
fn create(cmd: &str, name: &str, raw_fields: &str, exists: &dyn Fn(&str) -> bool) -> Result<SynthCmd, CmdError> {
    if name.is_empty() {
        return Err(err(Errno::EINVAL, INVALID_CMD, 0));
    }
    if !is_good_name(name) {
        return Err(err(Errno::EINVAL, BAD_NAME, errpos(cmd, name)));
    }
    if exists(name) {
        return Err(err(Errno::EEXIST, EVENT_EXISTS, errpos(cmd, name)));
    }
    let mut fields = Vec::new();
    for part in raw_fields.split(';') {
        let argv = argv_split(part);
        let mut used = 0;
        while used < argv.len() {
            let (f, n) = parse_synth_field(cmd, &argv[used..])?;
            used += n;
            if fields.len() == SYNTH_FIELDS_MAX {
                return Err(err(Errno::EINVAL, TOO_MANY_FIELDS, 0));
            }
            fields.push(f);
        }
    }
    if fields.is_empty() {
        return Err(err(Errno::EINVAL, INVALID_CMD, 0));
    }
    Ok(SynthCmd::Create {
        name: name.to_string(),
        fields,
    })
}

/// A line of `synthetic_events` (Linux's `create_or_delete_synth_event`).
/// Errors are positioned in [`synth_cmd_text`]; an empty message means
/// Linux logs nothing.
pub fn parse_synth_events_cmd(raw: &str, exists: &dyn Fn(&str) -> bool) -> Result<SynthCmd, CmdError> {
    let cmd = synth_cmd_text(raw);
    if cmd.is_empty() {
        return Ok(SynthCmd::Empty);
    }
    if !check_command(cmd) {
        return Err(err(Errno::EINVAL, INVALID_CMD, 0));
    }
    let p = cmd.find([' ', '\t']);
    if p.is_none() && !cmd.starts_with('!') {
        return Err(err(Errno::EINVAL, INVALID_CMD, 0));
    }
    let end = p.unwrap_or(cmd.len());
    let name = &cmd[..end];
    if let Some(n) = name.strip_prefix('!') {
        return Ok(SynthCmd::Delete { name: n.to_string() });
    }
    create(cmd, name, synth_cmd_text(&cmd[end..]), exists)
}

/// An `s:[synthetic/]NAME FIELDS` line of `dynamic_events` (Linux's
/// `create_synth_event`): ECANCELED (silent) when it is not one.
pub fn parse_synth_dyn_cmd(raw: &str, exists: &dyn Fn(&str) -> bool) -> Result<SynthCmd, CmdError> {
    let cmd = synth_cmd_text(raw);
    if cmd.is_empty() {
        return Ok(SynthCmd::Empty);
    }
    let Some(rest) = cmd.strip_prefix("s:") else {
        return Err(err(Errno::ECANCELED, "", 0));
    };
    let Some(p) = cmd.find([' ', '\t']) else {
        return Err(err(Errno::EINVAL, INVALID_CMD, 0));
    };
    let mut start = 2;
    // Linux looks for the '/' in the whole rest of the command.
    if rest.contains('/') {
        if !rest.starts_with("synthetic/") {
            return Err(err(Errno::EINVAL, INVALID_DYN_CMD, 0));
        }
        start += "synthetic/".len();
    }
    if !check_command(cmd.get(start..).unwrap_or("")) {
        return Err(err(Errno::EINVAL, INVALID_CMD, 0));
    }
    let name = cmd.get(start..p).unwrap_or("");
    create(cmd, name, synth_cmd_text(&cmd[p..]), exists)
}
