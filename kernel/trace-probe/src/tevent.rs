//! Event probes (Linux's `trace_eprobe.c`, parsing half):
//! `e[:[GRP/][EVENT]] SYSTEM.EVENT [FETCHARGS] [if FILTER]`, whose
//! arguments read the fields of another event's record (`$FIELD`).

use crate::errors::TpErr;
use crate::parse::{argv_split, parse_event_name, parse_probe_arg_named, silent, Ctx, Log, FL_KERNEL, FL_TEVENT};
use crate::{CmdError, ProbeContext, ProbeDef, ProbeKind, ProbeLocation, MAX_TRACE_ARGS};
use alloc::string::String;
use alloc::vec::Vec;
use uapi::Errno;

/// The group of an event probe defined without one.
pub const EPROBE_EVENT_SYSTEM: &str = "eprobes";

/// How a string field of an event is stored (Linux's filter types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrKind {
    /// `char name[N]` inside the record.
    Static,
    /// `__data_loc char[]`: a u32 (length << 16 | offset from the record).
    DataLoc,
    /// `__rel_loc char[]`: the offset counts from the field.
    RelLoc,
    /// `char *`/`const char *`: a pointer.
    Ptr,
}

impl StrKind {
    pub(crate) fn code(self) -> u8 {
        match self {
            StrKind::Static => 1,
            StrKind::DataLoc => 2,
            StrKind::RelLoc => 3,
            StrKind::Ptr => 4,
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<StrKind> {
        match c {
            1 => Some(StrKind::Static),
            2 => Some(StrKind::DataLoc),
            3 => Some(StrKind::RelLoc),
            4 => Some(StrKind::Ptr),
            _ => None,
        }
    }

    /// The kind of a field of C type `ty` named `name` (`comm[16]` for an
    /// array), as Linux's `filter_assign_type` and `is_string_field`
    /// decide; `None` for a number.
    pub fn of_field(ty: &str, name: &str) -> Option<StrKind> {
        let ty = ty.trim();
        if ty.starts_with("__data_loc") && ty.contains("char") {
            return Some(StrKind::DataLoc);
        }
        if ty.starts_with("__rel_loc") && ty.contains("char") {
            return Some(StrKind::RelLoc);
        }
        let array = ty.contains('[') || name.contains('[');
        if array && (ty == "char" || ty.starts_with("char[") || ty.ends_with(" char") || ty.contains(" char[")) {
            return Some(StrKind::Static);
        }
        if ty == "char *" || ty == "const char *" || ty == "char*" || ty == "const char*" {
            return Some(StrKind::Ptr);
        }
        None
    }
}

/// One field of an event, as an event probe's `$FIELD` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeventField {
    /// Its name (without `[N]`).
    pub name: String,
    /// Offset from the record's start (common header included).
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// Whether it is signed.
    pub signed: bool,
    /// How it is stored if it is a string.
    pub string: Option<StrKind>,
}

/// What parsing an event probe asks the kernel.
pub trait EventLookup {
    /// The fields of the event `system`/`event`, if it exists and a probe
    /// may attach to it (not a probe event itself).
    fn event_fields(&self, system: &str, event: &str) -> Option<Vec<TeventField>>;
    /// Checks `filter` against the attached event's fields (Linux's
    /// `create_event_filter`), logging the filter's own error; the errno
    /// of a bad one.
    fn check_filter(&self, system: &str, event: &str, filter: &str) -> Result<(), Errno>;
}

/// Parses an `e` command (Linux's `__trace_eprobe_create`). ECANCELED
/// (silent) when it is not one. Errors carry Linux's `event_probe`
/// messages and caret positions in [`crate::command_text`].
pub fn parse_eprobe(raw: &str, pctx: &dyn ProbeContext, lookup: &dyn EventLookup) -> Result<ProbeDef, CmdError> {
    let argv = argv_split(raw);
    if argv.len() < 2 || !argv[0].starts_with('e') {
        return Err(silent(Errno::ECANCELED));
    }
    let head = argv[0];
    let mut log = Log { argv: &argv, index: 0 };
    let mut group = String::from(EPROBE_EVENT_SYSTEM);
    let mut event: Option<String> = None;
    if let Some(i) = head[1..].find(':') {
        let at = i + 2;
        let (g, e) = parse_event_name(&head[at..], at as i64, &log)?;
        if let Some(g) = g {
            group = g;
        }
        event = e;
    }

    log.index = 1;
    let no_info = |log: &Log| log.err(0, TpErr::NoEventInfo, Errno::EINVAL);
    let (sys_name, sys_event) = match parse_event_name(argv[1], 0, &log) {
        Ok((Some(s), Some(e))) => (s, e),
        _ => return Err(no_info(&log)),
    };
    let event = event.unwrap_or_else(|| sys_event.clone());

    let mut argc = argv.len();
    let mut filter_idx = None;
    if let Some(i) = argv[2..].iter().position(|&a| a == "if") {
        filter_idx = Some(i + 3);
        argc = i + 2;
    }
    if argc - 2 > MAX_TRACE_ARGS {
        return Err(silent(Errno::E2BIG));
    }
    let Some(fields) = lookup.event_fields(&sys_name, &sys_event) else {
        return Err(log.err(0, TpErr::BadAttachEvent, Errno::ENODEV));
    };
    let mut filter = None;
    if let Some(fi) = filter_idx {
        log.index = fi;
        let words = &argv[fi.min(argv.len())..];
        if words.is_empty() {
            return Err(log.err(0, TpErr::NoEpFilter, Errno::EINVAL));
        }
        let text = words.join(" ");
        lookup
            .check_filter(&sys_name, &sys_event, &text)
            .map_err(|e| CmdError::new(e, "", 0))?;
        filter = Some(text);
    }

    let mut def = ProbeDef {
        kind: ProbeKind::Eprobe {
            system: sys_name.clone(),
            event: sys_event.clone(),
            filter,
        },
        group,
        event,
        is_return: false,
        maxactive: 0,
        location: ProbeLocation::Symbol {
            name: alloc::format!("{sys_name}.{sys_event}"),
            offset: 0,
        },
        args: Vec::new(),
        entry_args: Vec::new(),
        size: 0,
        pending: false,
        command: argv.join(" "),
        arg_starts: Vec::new(),
    };
    let mut pos = 0;
    for a in &argv {
        def.arg_starts.push(pos);
        pos += a.len() + 1;
    }
    let mut ctx = Ctx::new(FL_KERNEL | FL_TEVENT, None, pctx);
    ctx.tevent = Some(&fields);
    for (i, a) in argv[2..argc].iter().enumerate() {
        log.index = i + 2;
        ctx.offset = 0;
        let mut arg = parse_probe_arg_named(&def.args, i, a, &mut def.size, &mut ctx, &log)?;
        // traceprobe_update_arg: `@SYM` resolves now; Linux logs nothing.
        arg.update(pctx).map_err(silent)?;
        def.args.push(arg);
    }
    Ok(def)
}
