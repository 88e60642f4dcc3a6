//! Parsing one `kprobe_events` command: Linux's `__trace_kprobe_create`,
//! `traceprobe_parse_probe_arg` and their helpers, step by step in the same
//! order, so that the first error found, its errno, its message and its
//! caret position are Linux's.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use uapi::error::CmdError;
use uapi::Errno;

use crate::errors::TpErr;
use crate::insn::{Insn, Op, Reg, FETCH_INSN_MAX};
use crate::num::{kstrtol, kstrtouint, kstrtoul, simple_strtoul, NumError};
use crate::proto::{fetch_type_name, CType, FuncProto, Pointee};
use crate::types::{find_fetch_type, FetchType};
use crate::{
    ProbeArg, ProbeContext, ProbeDef, ProbeLocation, RemoveCmd, KPROBE_EVENT_SYSTEM, KRETPROBE_MAXACTIVE_MAX,
    MAX_ARGSTR_LEN, MAX_ARG_NAME_LEN, MAX_ARRAY_LEN, MAX_BTF_ARGS_LEN, MAX_DENTRY_ARGS_LEN, MAX_EVENT_NAME_LEN,
    MAX_PROBE_EVENT_SIZE, MAX_TRACE_ARGS, PARAM_MAX_STACK,
};

/// One parsed line.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// A blank line (after comment removal): nothing to do.
    Empty,
    /// `p...`/`r...`: define a probe (or add one to an existing event).
    Define(ProbeDef),
    /// `-:[GRP/]EVENT [args]`: remove the matching probes.
    Remove(RemoveCmd),
}

pub(crate) const FL_RETURN: u32 = 1 << 0;
pub(crate) const FL_KERNEL: u32 = 1 << 1;
pub(crate) const FL_FENTRY: u32 = 1 << 2;
/// `TPARG_FL_TEVENT`: `$NAME` is a field of the attached event.
pub(crate) const FL_TEVENT: u32 = 1 << 3;
/// `TPARG_FL_FPROBE`: no registers.
pub(crate) const FL_FPROBE: u32 = 1 << 5;
/// `TPARG_FL_TPOINT`: `$argN` are a tracepoint's arguments.
pub(crate) const FL_TPOINT: u32 = 1 << 6;
const FL_LOC_MASK: u32 = 0x1f;

fn is_function_entry(flags: u32) -> bool {
    flags & FL_LOC_MASK == FL_KERNEL | FL_FENTRY
}

fn is_function_return(flags: u32) -> bool {
    flags & FL_LOC_MASK == FL_KERNEL | FL_RETURN
}

/// Linux's `isspace()` for the bytes `argv_split` separates on.
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Splits a command into words as Linux's `argv_split` does.
pub fn argv_split(cmd: &str) -> Vec<&str> {
    cmd.split(|c: char| c.is_ascii() && is_space(c as u8))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The command as `error_log` shows it: the words joined by one space.
pub fn command_text(cmd: &str) -> String {
    argv_split(cmd).join(" ")
}

/// Linux's `__is_good_name`: a C identifier (with `-` too for groups).
pub(crate) fn is_good_name(name: &str, hyphen_ok: bool) -> bool {
    let mut bytes = name.bytes();
    let Some(first) = bytes.next() else { return false };
    let ok = |b: u8| b.is_ascii_alphabetic() || b == b'_' || (hyphen_ok && b == b'-');
    ok(first) && bytes.all(|b| ok(b) || b.is_ascii_digit())
}

/// Where errors point: Linux's `trace_probe_log` (the original words, and
/// which of them is being parsed).
pub(crate) struct Log<'a> {
    pub(crate) argv: &'a [&'a str],
    pub(crate) index: usize,
}

impl Log<'_> {
    /// An error `offset` bytes into the current word (`__trace_probe_log_err`).
    pub(crate) fn err(&self, offset: i64, e: TpErr, errno: Errno) -> CmdError {
        let mut pos = 0i64;
        let mut len = 0i64;
        for (i, a) in self.argv.iter().enumerate() {
            if i == self.index {
                pos = len;
            }
            len += a.len() as i64 + 1;
        }
        let mut offset = offset;
        if self.index >= self.argv.len() {
            pos = len;
            offset = 0;
        }
        // Linux can point past the written text when it has rewritten an
        // argument (`%pd`); the caret stays at most one past the end here.
        CmdError::new(errno, e.msg(), usize::try_from((pos + offset).min(len)).unwrap_or(0))
    }
}

/// An error Linux returns without an `error_log` entry (empty message).
pub(crate) fn silent(errno: Errno) -> CmdError {
    CmdError::new(errno, "", 0)
}

fn num_errno(e: NumError) -> Errno {
    match e {
        NumError::Invalid => Errno::EINVAL,
        NumError::Range => Errno::ERANGE,
    }
}

/// Parses one command (a line of `kprobe_events`, comments already
/// removed; see [`crate::split_commands`]).
///
/// Errors carry Linux's errno, message and caret position in
/// [`command_text`]; an empty message means Linux logs nothing for it.
pub fn parse_command(raw: &str, ctx: &dyn ProbeContext) -> Result<Command, CmdError> {
    if raw.starts_with('-') {
        return parse_remove(raw).map(Command::Remove);
    }
    let argv = argv_split(raw);
    if argv.is_empty() {
        return Ok(Command::Empty);
    }
    match create(&argv, ctx) {
        Ok(def) => Ok(Command::Define(def)),
        // Not a kprobe command at all: kprobe_events turns ECANCELED into
        // EINVAL.
        Err(e) if e.errno == Errno::ECANCELED => Err(silent(Errno::EINVAL)),
        Err(e) => Err(e),
    }
}

/// `dyn_event_release`'s parsing of `-:[GRP/]EVENT [matching args]`.
fn parse_remove(raw: &str) -> Result<RemoveCmd, CmdError> {
    let argv = argv_split(raw);
    let head = argv.first().copied().unwrap_or("");
    let Some(spec) = head.strip_prefix("-:") else {
        return Err(silent(Errno::EINVAL));
    };
    let (group, event) = match spec.find('/') {
        Some(i) => (Some(spec[..i].to_string()), spec[i + 1..].to_string()),
        None => (None, spec.to_string()),
    };
    if group.is_none() && event.is_empty() {
        return Err(silent(Errno::EINVAL));
    }
    Ok(RemoveCmd {
        group,
        event,
        args: argv[1..].iter().map(|s| s.to_string()).collect(),
    })
}

/// Parse state for one definition (Linux's `traceprobe_parse_context`).
pub(crate) struct Ctx<'a> {
    pub(crate) funcname: Option<&'a str>,
    pub(crate) flags: u32,
    pub(crate) offset: i64,
    pub(crate) ctx: &'a dyn ProbeContext,
    /// The attached event's fields (event probes).
    pub(crate) tevent: Option<&'a [crate::TeventField]>,
    /// `None`: not asked yet; `Some(None)`: the function is unknown.
    proto: Option<Option<&'a FuncProto>>,
    last_type: Option<CType>,
    last_bitoffs: u32,
    last_bitsize: u32,
    /// Arguments saved at function entry for a return probe (`entry_arg`).
    pub(crate) entry_args: Vec<u32>,
}

impl<'a> Ctx<'a> {
    /// A context for arguments of an event probe or tracepoint probe.
    pub(crate) fn new(flags: u32, funcname: Option<&'a str>, ctx: &'a dyn ProbeContext) -> Ctx<'a> {
        Ctx {
            funcname,
            flags,
            offset: 0,
            ctx,
            tevent: None,
            proto: None,
            last_type: None,
            last_bitoffs: 0,
            last_bitsize: 0,
            entry_args: Vec::new(),
        }
    }

    /// `query_btf_context`: the prototype, if the function is known.
    fn query(&mut self) -> Option<&'a FuncProto> {
        if let Some(p) = self.proto {
            return p;
        }
        let p = self.funcname.and_then(|f| self.ctx.func_proto(f));
        if p.is_some() {
            self.proto = Some(p);
        }
        p
    }

    fn nr_params(&self) -> usize {
        self.params().len()
    }

    /// The parameters `$argN` and names refer to: a tracepoint probe
    /// function's data pointer comes first and is no argument.
    fn params(&self) -> &'a [(String, CType)] {
        match self.proto {
            Some(Some(p)) => tracepoint_args(p, self.flags),
            _ => &[],
        }
    }

    /// `__store_entry_arg`: where argument `n` is saved at entry.
    fn store_entry_arg(&mut self, n: u32) -> i32 {
        let i = match self.entry_args.iter().position(|&a| a == n) {
            Some(i) => i,
            None => {
                self.entry_args.push(n);
                self.entry_args.len() - 1
            }
        };
        (i * 8) as i32
    }
}

/// A prototype's parameters as arguments: without a tracepoint probe
/// function's first (data) parameter (Linux's `query_btf_context` for
/// `TPARG_FL_TPOINT`).
fn tracepoint_args(p: &FuncProto, flags: u32) -> &[(String, CType)] {
    if flags & FL_TPOINT != 0 {
        p.params.get(1..).unwrap_or(&[])
    } else {
        &p.params
    }
}

/// The code buffer of one argument and the cursor into it.
struct Code {
    insn: [Insn; FETCH_INSN_MAX],
}

const END: usize = FETCH_INSN_MAX - 1;

fn create(argv: &[&str], pctx: &dyn ProbeContext) -> Result<ProbeDef, CmdError> {
    let head = argv[0];
    let is_return_cmd = match head.as_bytes()[0] {
        b'r' => true,
        b'p' => false,
        _ => return Err(silent(Errno::ECANCELED)),
    };
    if argv.len() < 2 {
        return Err(silent(Errno::ECANCELED));
    }
    let mut is_return = is_return_cmd;
    let mut log = Log { argv, index: 0 };
    let einval = |log: &Log, off: i64, e: TpErr| log.err(off, e, Errno::EINVAL);

    let event_at = head[1..].find(':').map(|i| i + 2);
    let mut maxactive = 0u32;
    if head.as_bytes().get(1).is_some_and(|b| b.is_ascii_digit()) {
        if !is_return {
            return Err(einval(&log, 1, TpErr::BadMaxactType));
        }
        let digits = match event_at {
            Some(e) => &head[1..e - 1],
            None => &head[1..],
        };
        if digits.len() > MAX_EVENT_NAME_LEN - 1 {
            return Err(einval(&log, 1, TpErr::BadMaxact));
        }
        match kstrtouint(digits, 0) {
            Ok(n) if n != 0 => maxactive = n,
            _ => return Err(einval(&log, 1, TpErr::BadMaxact)),
        }
        if maxactive > KRETPROBE_MAXACTIVE_MAX {
            return Err(einval(&log, 1, TpErr::MaxactTooBig));
        }
    }

    let mut flags = FL_KERNEL;
    let mut symbol: Option<String> = None;
    let mut offset: i64 = 0;
    let location;
    if let Ok(addr) = kstrtoul(argv[1], 0) {
        // Linux sets the return flag only for a symbol, so `$retval` and
        // `$argN` are refused on an address.
        location = ProbeLocation::Address(addr);
    } else {
        log.index = 1;
        let a1 = argv[1];
        if a1.contains('/') && a1.contains(':') {
            // A uprobe definition: not ours.
            return Err(silent(Errno::ECANCELED));
        }
        let mut sym = a1;
        if let Some(pct) = a1.find('%') {
            if &a1[pct..] == "%return" {
                sym = &a1[..pct];
                is_return = true;
            } else {
                return Err(einval(&log, pct as i64, TpErr::BadAddrSuffix));
            }
        }
        let (name, off) = match sym.find(['+', '-']) {
            Some(i) => match kstrtol(&sym[i..], 0) {
                Ok(o) if (0..=i64::from(u32::MAX)).contains(&o) => (&sym[..i], o),
                _ => return Err(einval(&log, 0, TpErr::BadProbeAddr)),
            },
            None => (sym, 0),
        };
        offset = off;
        let module = name.find(':').map(|i| &name[..i]);
        if module.is_none() {
            match pctx.count_symbols(name) {
                0 => return Err(einval(&log, 0, TpErr::BadProbeAddr)),
                1 => {}
                _ => return Err(einval(&log, 0, TpErr::NonUniqSymbol)),
            }
        }
        if is_return {
            flags |= FL_RETURN;
        }
        // kprobe_on_func_entry: a symbol that does not resolve (a module
        // that is not loaded) is left for registration to report.
        let found = module.is_none() && pctx.lookup_name(name).is_some();
        if found {
            if offset == 0 {
                if !is_return {
                    flags |= FL_FENTRY;
                }
            } else if is_return {
                return Err(einval(&log, 0, TpErr::BadRetprobe));
            }
        }
        symbol = Some(name.to_string());
        location = ProbeLocation::Symbol {
            name: name.to_string(),
            offset: offset as u32,
        };
    }

    log.index = 0;
    let mut group = KPROBE_EVENT_SYSTEM.to_string();
    let mut event: Option<String> = None;
    if let Some(at) = event_at {
        let (g, e) = parse_event_name(&head[at..], at as i64, &log)?;
        if let Some(g) = g {
            group = g;
        }
        event = e;
    }
    let event = match event {
        Some(e) => e,
        None => {
            let kind = if is_return { 'r' } else { 'p' };
            let mut name = match (&symbol, &location) {
                (Some(s), _) => format!("{kind}_{s}_{offset}"),
                (None, ProbeLocation::Address(a)) => format!("{kind}_0x{a:016x}"),
                (None, _) => format!("{kind}_0"),
            };
            truncate_bytes(&mut name, MAX_EVENT_NAME_LEN - 1);
            sanitize_event_name(&name)
        }
    };

    let mut ctx = Ctx {
        funcname: symbol.as_deref(),
        tevent: None,
        flags,
        offset: 0,
        ctx: pctx,
        proto: None,
        last_type: None,
        last_bitoffs: 0,
        last_bitsize: 0,
        entry_args: Vec::new(),
    };
    let args_in: Vec<String> = argv[2..].iter().map(|s| s.to_string()).collect();
    let args_in = expand_meta_args(args_in, &mut ctx, &mut log)?;
    if args_in.len() > MAX_TRACE_ARGS {
        return Err(silent(Errno::E2BIG));
    }
    let args_in = expand_dentry_args(args_in, pctx)?;

    let mut def = ProbeDef {
        kind: crate::ProbeKind::Kprobe,
        group,
        event,
        is_return,
        maxactive,
        location,
        args: Vec::new(),
        entry_args: Vec::new(),
        size: 0,
        pending: false,
        command: argv.join(" "),
        arg_starts: Vec::new(),
    };
    let mut pos = 0;
    for a in argv {
        def.arg_starts.push(pos);
        pos += a.len() + 1;
    }
    for (i, a) in args_in.iter().enumerate() {
        log.index = i + 2;
        ctx.offset = 0;
        let arg = parse_probe_arg_named(&def.args, i, a, &mut def.size, &mut ctx, &log)?;
        def.args.push(arg);
    }
    def.entry_args = core::mem::take(&mut ctx.entry_args);

    // What registration does before arming (traceprobe_update_arg): resolve
    // `@SYM[+|-offs]`.
    let tolerated = match &def.location {
        ProbeLocation::Address(_) => true,
        ProbeLocation::Symbol { name, .. } => name.contains(':'),
    };
    def.pending = tolerated && matches!(&def.location, ProbeLocation::Symbol { .. });
    log.index = 1;
    for arg in &mut def.args {
        match arg.update(pctx) {
            Ok(()) => {}
            Err(Errno::ENOENT) if tolerated => def.pending = true,
            Err(Errno::ENOENT) => return Err(log.err(0, TpErr::BadProbeAddr, Errno::ENOENT)),
            Err(e) => return Err(log.err(0, TpErr::FailRegProbe, e)),
        }
    }
    Ok(def)
}

/// Parses one `f`/`t` definition (Linux's `__trace_fprobe_create`):
/// `f[MAXACTIVE][:[GRP/][EVENT]] SYM[%return] [ARGS]` or
/// `t[:[GRP/][EVENT]] TRACEPOINT [ARGS]`. `ECANCELED` (no log) when the
/// command is neither. The symbol is not looked up here: registration
/// reports an unknown function (see [`ProbeDef::register_error`]); an
/// unknown tracepoint is `NO_TRACEPOINT` (this kernel has no modules that
/// could bring it later).
pub fn parse_fprobe_command(raw: &str, pctx: &dyn ProbeContext) -> Result<ProbeDef, CmdError> {
    let argv = argv_split(raw);
    let Some(head) = argv.first().copied() else {
        return Err(silent(Errno::ECANCELED));
    };
    let is_tracepoint = match head.as_bytes()[0] {
        b't' => true,
        b'f' => false,
        _ => return Err(silent(Errno::ECANCELED)),
    };
    if argv.len() < 2 {
        return Err(silent(Errno::ECANCELED));
    }
    let mut log = Log { argv: &argv, index: 0 };
    let einval = |log: &Log, off: i64, e: TpErr| log.err(off, e, Errno::EINVAL);
    let mut group = if is_tracepoint {
        crate::TRACEPOINT_EVENT_SYSTEM
    } else {
        crate::FPROBE_EVENT_SYSTEM
    }
    .to_string();
    let event_at = head[1..].find(':').map(|i| i + 2);
    let mut maxactive = 0u32;
    if head.as_bytes().get(1).is_some_and(|b| b.is_ascii_digit()) {
        let digits = match event_at {
            Some(e) => &head[1..e - 1],
            None => &head[1..],
        };
        if digits.len() > MAX_EVENT_NAME_LEN - 1 {
            return Err(einval(&log, 1, TpErr::BadMaxact));
        }
        match kstrtouint(digits, 0) {
            Ok(n) if n != 0 => maxactive = n,
            _ => return Err(einval(&log, 1, TpErr::BadMaxact)),
        }
        if maxactive > KRETPROBE_MAXACTIVE_MAX {
            return Err(einval(&log, 1, TpErr::MaxactTooBig));
        }
    }

    // parse_symbol_and_return
    log.index = 1;
    let a1 = argv[1];
    let mut is_return = false;
    let symbol = match a1.find('%') {
        Some(pct) => {
            if !is_tracepoint && &a1[pct..] == "%return" {
                is_return = true;
            } else {
                return Err(einval(&log, pct as i64, TpErr::BadAddrSuffix));
            }
            &a1[..pct]
        }
        None => a1,
    };
    if !is_return {
        if is_tracepoint {
            if let Some(bad) = symbol.bytes().position(|b| !(b.is_ascii_alphanumeric() || b == b'_')) {
                return Err(einval(&log, bad as i64, TpErr::BadTpName));
            }
        }
        // A `$retval` argument makes an exit probe.
        for (i, a) in argv.iter().enumerate().skip(2) {
            let Some(at) = a.find("$retval") else { continue };
            let next = a.as_bytes().get(at + 7).copied().unwrap_or(0);
            if next.is_ascii_alphanumeric() || next == b'_' {
                continue;
            }
            if is_tracepoint {
                log.index = i;
                return Err(einval(&log, at as i64, TpErr::RetvalOnProbe));
            }
            is_return = true;
            break;
        }
    }
    if !is_return && maxactive != 0 {
        log.index = 0;
        return Err(einval(&log, 1, TpErr::BadMaxactType));
    }

    log.index = 0;
    let mut event: Option<String> = None;
    if let Some(at) = event_at {
        let (g, e) = parse_event_name(&head[at..], at as i64, &log)?;
        if let Some(g) = g {
            group = g;
        }
        event = e;
    }
    let event = match event {
        Some(e) => e,
        None => {
            let mut name = if is_tracepoint {
                let us = if symbol.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                    "_"
                } else {
                    ""
                };
                format!("{us}{symbol}")
            } else {
                format!("{symbol}__{}", if is_return { "exit" } else { "entry" })
            };
            truncate_bytes(&mut name, MAX_EVENT_NAME_LEN - 1);
            sanitize_event_name(&name)
        }
    };

    let mut flags = FL_KERNEL | FL_FPROBE | if is_return { FL_RETURN } else { FL_FENTRY };
    let funcname: String = if is_tracepoint {
        flags |= FL_TPOINT;
        match pctx.tracepoint_probe(symbol) {
            Some(f) => f,
            None => {
                log.index = 1;
                return Err(einval(&log, 0, TpErr::NoTracepoint));
            }
        }
    } else {
        symbol.to_string()
    };
    let mut ctx = Ctx::new(flags, Some(&funcname), pctx);
    let args_in: Vec<String> = argv[2..].iter().map(|s| s.to_string()).collect();
    let args_in = expand_meta_args(args_in, &mut ctx, &mut log)?;
    if args_in.len() > MAX_TRACE_ARGS {
        return Err(silent(Errno::E2BIG));
    }
    let args_in = expand_dentry_args(args_in, pctx)?;

    let kind = if is_tracepoint {
        crate::ProbeKind::Tprobe {
            tracepoint: symbol.to_string(),
        }
    } else {
        crate::ProbeKind::Fprobe
    };
    let mut def = ProbeDef {
        kind,
        group,
        event,
        is_return,
        maxactive,
        location: ProbeLocation::Symbol {
            name: symbol.to_string(),
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
    for (i, a) in args_in.iter().enumerate() {
        log.index = i + 2;
        ctx.offset = 0;
        let arg = parse_probe_arg_named(&def.args, i, a, &mut def.size, &mut ctx, &log)?;
        def.args.push(arg);
    }
    def.entry_args = core::mem::take(&mut ctx.entry_args);
    // traceprobe_update_arg at registration: `@SYM` must resolve.
    log.index = 1;
    for arg in &mut def.args {
        match arg.update(pctx) {
            Ok(()) => {}
            Err(Errno::ENOENT) => return Err(log.err(0, TpErr::BadProbeAddr, Errno::ENOENT)),
            Err(e) => return Err(log.err(0, TpErr::FailRegProbe, e)),
        }
    }
    Ok(def)
}

pub(crate) fn truncate_bytes(s: &mut String, max: usize) {
    if s.len() > max {
        let mut n = max;
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        s.truncate(n);
    }
}

/// Linux's `sanitize_event_name`: `:`, `.` and `*` after the first byte
/// become `_`.
pub(crate) fn sanitize_event_name(name: &str) -> String {
    name.char_indices()
        .map(|(i, c)| if i > 0 && matches!(c, ':' | '.' | '*') { '_' } else { c })
        .collect()
}

/// `traceprobe_parse_event_name`: `[GRP/]EVENT` or `GRP.EVENT`; `Ok(None)`
/// for the event means "make one up" (`GRP/` alone).
pub(crate) fn parse_event_name(
    spec: &str,
    offset: i64,
    log: &Log,
) -> Result<(Option<String>, Option<String>), CmdError> {
    let einval = |off: i64, e: TpErr| log.err(off, e, Errno::EINVAL);
    let slash = spec.find('/').or_else(|| spec.find('.'));
    let mut group = None;
    let mut event = spec;
    let mut offset = offset;
    if let Some(s) = slash {
        if s == 0 {
            return Err(einval(offset, TpErr::NoGroupName));
        }
        if s + 1 > MAX_EVENT_NAME_LEN {
            return Err(einval(offset, TpErr::GroupTooLong));
        }
        let g = &spec[..s];
        if !is_good_name(g, true) {
            return Err(einval(offset, TpErr::BadGroupName));
        }
        group = Some(g.to_string());
        event = &spec[s + 1..];
        offset += s as i64 + 1;
    }
    if event.is_empty() {
        if slash.is_some() {
            return Ok((group, None));
        }
        return Err(einval(offset, TpErr::NoEventName));
    }
    if event.len() >= MAX_EVENT_NAME_LEN {
        return Err(einval(offset, TpErr::EventTooLong));
    }
    if !is_good_name(event, false) {
        return Err(einval(offset, TpErr::BadEventName));
    }
    Ok((group, Some(event.to_string())))
}

/// `traceprobe_expand_meta_args`: `$arg*` and `$argN` become parameter
/// names when the function's prototype is known.
fn expand_meta_args(argv: Vec<String>, ctx: &mut Ctx, log: &mut Log) -> Result<Vec<String>, CmdError> {
    let mut args_idx: Option<usize> = None;
    let mut found = false;
    for (i, a) in argv.iter().enumerate() {
        if !a.starts_with("$arg") {
            continue;
        }
        log.index = i + 2;
        if !is_function_entry(ctx.flags) && !is_function_return(ctx.flags) {
            return Err(log.err(0, TpErr::NofentryArgs, Errno::EINVAL));
        }
        match a.as_bytes().get(4) {
            Some(b) if b.is_ascii_digit() => {
                found = true;
                continue;
            }
            Some(b'*') => {}
            _ => return Err(log.err(0, TpErr::BadVar, Errno::EINVAL)),
        }
        if args_idx.is_some() {
            return Err(log.err(0, TpErr::DoubleArgs, Errno::EINVAL));
        }
        found = true;
        args_idx = Some(i);
    }
    if !found {
        return Ok(argv);
    }
    let proto = ctx.query();
    let params = match proto.map(|p| tracepoint_args(p, ctx.flags)) {
        Some(p) if !p.is_empty() => p,
        _ => {
            if args_idx.is_some() {
                return Err(log.err(0, TpErr::NosupBtfarg, Errno::EOPNOTSUPP));
            }
            return Ok(argv);
        }
    };
    let mut used = 0usize;
    let mut out = Vec::with_capacity(argv.len() + params.len());
    let mut nth = |idx: usize, ty: &str, log: &Log, out: &mut Vec<String>| -> Result<(), CmdError> {
        let Some((name, _)) = params.get(idx) else {
            return Err(log.err(0, TpErr::NoBtfarg, Errno::ENOENT));
        };
        let s = format!("{name}{ty}");
        if s.len() >= MAX_BTF_ARGS_LEN.saturating_sub(used) {
            return Err(log.err(0, TpErr::Args2long, Errno::E2BIG));
        }
        used += s.len() + 1;
        out.push(s);
        Ok(())
    };
    for (i, a) in argv.iter().enumerate() {
        log.index = i + 2;
        if Some(i) == args_idx {
            for n in 0..params.len() {
                nth(n, "", log, &mut out)?;
            }
            continue;
        }
        if let Some(rest) = a.strip_prefix("$arg") {
            let (n, used_len) = simple_strtoul(rest, 10);
            let ty = &rest[used_len..];
            if !(ty.is_empty() || ty.starts_with(':')) {
                return Err(log.err(0, TpErr::BadVar, Errno::ENOENT));
            }
            if n == 0 {
                return Err(log.err(0, TpErr::BadArgNum, Errno::EINVAL));
            }
            nth(usize::try_from(n - 1).unwrap_or(usize::MAX), ty, log, &mut out)?;
        } else {
            out.push(a.clone());
        }
    }
    Ok(out)
}

/// `traceprobe_expand_dentry_args`: `ARG:%pd` and `ARG:%pD` become string
/// fetches through the kernel's dentry and file layouts, when it has them.
fn expand_dentry_args(argv: Vec<String>, pctx: &dyn ProbeContext) -> Result<Vec<String>, CmdError> {
    let Some(layout) = pctx.dentry_layout() else {
        return Ok(argv);
    };
    let mut used = 0;
    let mut out = Vec::with_capacity(argv.len());
    for a in argv {
        let is_d = a.ends_with(":%pd");
        let is_big_d = a.ends_with(":%pD");
        if !is_d && !is_big_d {
            out.push(a);
            continue;
        }
        let body = &a[..a.len() - 4];
        let (name, src) = match body.find('=') {
            Some(i) => (&body[..=i], &body[i + 1..]),
            None => ("", body),
        };
        let s = if is_d {
            format!("{name}+0x0(+0x{:x}({src})):string", layout.d_name_name)
        } else {
            format!(
                "{name}+0x0(+0x{:x}(+0x{:x}({src}))):string",
                layout.d_name_name, layout.f_path_dentry
            )
        };
        if s.len() >= MAX_DENTRY_ARGS_LEN - used {
            return Err(silent(Errno::ENOMEM));
        }
        used += s.len() + 1;
        out.push(s);
    }
    Ok(out)
}

/// The reserved field names an argument may not take.
const RESERVED_FIELD_NAMES: [&str; 8] = [
    "common_type",
    "common_flags",
    "common_preempt_count",
    "common_pid",
    "common_tgid",
    "__probe_ip",
    "__probe_ret_ip",
    "__probe_func",
];

/// `traceprobe_parse_probe_arg`: `[NAME=]FETCHARG[:TYPE]`.
pub(crate) fn parse_probe_arg_named(
    prev: &[ProbeArg],
    i: usize,
    arg: &str,
    size: &mut usize,
    ctx: &mut Ctx,
    log: &Log,
) -> Result<ProbeArg, CmdError> {
    let einval = |e: TpErr| log.err(0, e, Errno::EINVAL);
    let (name, body, body_at) = match arg.find('=') {
        Some(eq) => {
            if eq > MAX_ARG_NAME_LEN {
                return Err(einval(TpErr::ArgNameTooLong));
            }
            if eq == 0 {
                return Err(einval(TpErr::NoArgName));
            }
            (arg[..eq].to_string(), &arg[eq + 1..], eq + 1)
        }
        None => {
            // With BTF, an unnamed argument is named after its text when
            // that is an identifier, else argN.
            let end = arg.find(':').unwrap_or(arg.len());
            let n = &arg[..end];
            let name = if is_good_name(n, false) {
                n.to_string()
            } else {
                format!("arg{}", i + 1)
            };
            (name, arg, 0)
        }
    };
    if !is_good_name(&name, false) {
        return Err(einval(TpErr::BadArgName));
    }
    if RESERVED_FIELD_NAMES.contains(&name.as_str()) || prev.iter().any(|a| a.name == name) {
        return Err(einval(TpErr::UsedArgName));
    }
    ctx.offset = body_at as i64;
    parse_probe_arg_body(name, body, size, ctx, log)
}

/// `traceprobe_parse_probe_arg_body`.
fn parse_probe_arg_body(
    name: String,
    body: &str,
    size: &mut usize,
    ctx: &mut Ctx,
    log: &Log,
) -> Result<ProbeArg, CmdError> {
    if body.len() > MAX_ARGSTR_LEN {
        return Err(log.err(ctx.offset, TpErr::ArgTooLong, Errno::E2BIG));
    }
    if body.is_empty() {
        return Err(log.err(ctx.offset, TpErr::NoArgBody, Errno::EINVAL));
    }
    // parse_probe_arg_type
    let einval = |ctx: &Ctx, off: i64, e: TpErr| log.err(ctx.offset + off, e, Errno::EINVAL);
    let colon = body.find(':');
    let (expr, mut type_str, type_at) = match colon {
        Some(c) => (&body[..c], Some(&body[c + 1..]), c + 1),
        None => (body, None, 0),
    };
    let mut count = 0u32;
    if let Some(t) = type_str {
        if let Some(b) = t.find('[') {
            let inner_at = type_at + b + 1;
            let rest = &t[b + 1..];
            let Some(close) = rest.find(']') else {
                return Err(einval(ctx, (inner_at + rest.len()) as i64, TpErr::ArrayNoClose));
            };
            if close + 1 != rest.len() {
                return Err(einval(ctx, (inner_at + close + 1) as i64, TpErr::BadArraySuffix));
            }
            match kstrtouint(&rest[..close], 0) {
                Ok(n) if n != 0 => count = n,
                _ => return Err(einval(ctx, inner_at as i64, TpErr::BadArrayNum)),
            }
            if count as usize > MAX_ARRAY_LEN {
                return Err(einval(ctx, inner_at as i64, TpErr::ArrayTooBig));
            }
            type_str = Some(&t[..b]);
        }
    }
    let auto_string = ctx.flags & FL_TEVENT == 0 && (expr == "$comm" || expr == "$COMM" || expr.starts_with("\\\""));
    let mut ty: &'static FetchType = if auto_string {
        if count != 0 || type_str.is_some_and(|t| t != "string") {
            return Err(einval(ctx, type_at as i64, TpErr::NeedStringType));
        }
        find_fetch_type(Some("string")).ok_or_else(|| silent(Errno::EINVAL))?
    } else {
        find_fetch_type(type_str).ok_or_else(|| einval(ctx, type_at as i64, TpErr::BadType))?
    };

    let mut code = Code {
        insn: [Insn::NOP; FETCH_INSN_MAX],
    };
    code.insn[END].op = Op::End;
    let mut data = ArgData::default();
    ctx.last_type = None;
    let mut pc = 0usize;
    parse_probe_arg(expr, &mut code, &mut pc, &mut data, ctx, log)?;

    if let Some(last) = ctx.last_type.clone() {
        match type_str {
            None => {
                let (name, _) = fetch_type_name(&last, 0);
                ty = find_fetch_type(name).ok_or_else(|| silent(Errno::EINVAL))?;
            }
            Some(t) if t.contains("string") => match &last {
                CType::CharArray(_) => {}
                CType::Ptr(Pointee::Char) => {
                    if code.insn[pc + 1].op == Op::End {
                        return Err(log.err(ctx.offset, TpErr::TooManyOps, Errno::E2BIG));
                    }
                    pc += 1;
                    code.insn[pc].op = if t.starts_with('u') { Op::UDeref } else { Op::Deref };
                    code.insn[pc].offset = 0;
                }
                _ => return Err(log.err(ctx.offset, TpErr::BadType4str, Errno::EINVAL)),
            },
            Some(_) => {}
        }
    }
    let offset = *size;
    *size += usize::from(ty.size) * (count.max(1) as usize);
    if *size > MAX_PROBE_EVENT_SIZE {
        return Err(log.err(ctx.offset, TpErr::EventTooBig, Errno::E2BIG));
    }
    let dynamic = finalize_fetch_insn(&mut code, pc, ty, count, type_str, type_at as i64, ctx, log)?;
    let end = code.insn.iter().position(|c| c.op == Op::End).unwrap_or(END);
    Ok(ProbeArg {
        name,
        comm: body.to_string(),
        ty,
        count,
        offset: offset as u32,
        dynamic,
        code: code.insn[..=end].to_vec(),
        data: data.bytes,
        symbol: data.symbol,
    })
}

/// What an argument carries besides its instructions.
#[derive(Default)]
struct ArgData {
    /// An immediate string's bytes (`\"STR"`).
    bytes: Vec<u8>,
    /// `@SYM[+|-offs]` waiting for resolution.
    symbol: Option<String>,
}

/// `parse_probe_arg`: the recursive fetch-argument parser.
fn parse_probe_arg(
    arg: &str,
    code: &mut Code,
    pcode: &mut usize,
    data: &mut ArgData,
    ctx: &mut Ctx,
    log: &Log,
) -> Result<(), CmdError> {
    let mut c = *pcode;
    let b = arg.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let einval = |ctx: &Ctx, e: TpErr| log.err(ctx.offset, e, Errno::EINVAL);
    match at(0) {
        b'$' => parse_probe_vars(arg, code, pcode, ctx, log)?,
        // Event and tracepoint probes have no registers: Linux logs
        // BAD_VAR, then BAD_FETCH_ARG at the same place.
        b'%' if ctx.flags & (FL_TEVENT | FL_FPROBE) != 0 => return Err(einval(ctx, TpErr::BadFetchArg)),
        b'%' => match Reg::from_name(&arg[1..]) {
            Some(r) => code.insn[c].op = Op::Reg(r),
            None => return Err(einval(ctx, TpErr::BadRegName)),
        },
        b'@' => {
            if at(1).is_ascii_digit() {
                let v = kstrtoul(&arg[1..], 0).map_err(|e| log.err(ctx.offset, TpErr::BadMemAddr, num_errno(e)))?;
                code.insn[c].op = Op::Imm;
                code.insn[c].imm = v;
            } else if at(1) == b'+' {
                return Err(einval(ctx, TpErr::FileOnKprobe));
            } else {
                code.insn[c].op = Op::NopSymbol;
                data.symbol = Some(arg[1..].to_string());
                c += 1;
                if c == END {
                    return Err(einval(ctx, TpErr::TooManyOps));
                }
                code.insn[c].op = Op::Imm;
                code.insn[c].imm = 0;
            }
            c += 1;
            if c == END {
                return Err(einval(ctx, TpErr::TooManyOps));
            }
            *pcode = c;
            code.insn[c].op = Op::Deref;
            code.insn[c].offset = 0;
        }
        b'+' | b'-' => {
            let sign = at(0);
            let user = at(1) == b'u';
            let digits_from = if user { 2 } else { 1 };
            let Some(paren) = arg.find('(') else {
                return Err(einval(ctx, TpErr::DerefNeedBrace));
            };
            if paren < digits_from {
                // "+u(" style: nothing between the sign and the brace.
                return Err(log.err(ctx.offset, TpErr::BadDerefOffs, Errno::EINVAL));
            }
            let num = if sign == b'-' {
                format!("-{}", &arg[digits_from..paren])
            } else {
                arg[digits_from..paren].to_string()
            };
            let off = kstrtol(&num, 0).map_err(|e| log.err(ctx.offset, TpErr::BadDerefOffs, num_errno(e)))?;
            // Linux's cursor arithmetic (it moves its pointer past "u" and
            // "+" first, and counts one more unless it then sits on a '-'),
            // including its off-by-one for "+u".
            let p = usize::from(user) + usize::from(sign == b'+');
            let at_p = if user && p == 1 { sign } else { at(p) };
            ctx.offset += paren as i64 + 1 - p as i64 + i64::from(at_p != b'-');
            let inner_all = &arg[paren + 1..];
            let Some(close) = inner_all.rfind(')') else {
                return Err(log.err(
                    ctx.offset + inner_all.len() as i64,
                    TpErr::DerefOpenBrace,
                    Errno::EINVAL,
                ));
            };
            let cur_offs = ctx.offset;
            let mut inner_pc = c;
            parse_probe_arg(&inner_all[..close], code, &mut inner_pc, data, ctx, log)?;
            c = inner_pc;
            ctx.offset = cur_offs;
            if matches!(code.insn[c].op, Op::Comm | Op::Data) {
                return Err(einval(ctx, TpErr::CommCantDeref));
            }
            c += 1;
            if c == END {
                return Err(einval(ctx, TpErr::TooManyOps));
            }
            *pcode = c;
            code.insn[c].op = if user { Op::UDeref } else { Op::Deref };
            code.insn[c].offset = off as i32;
            ctx.last_type = None;
        }
        b'\\' => {
            if at(1) == b'"' {
                let s = &arg[2..];
                if s.is_empty() || !s.ends_with('"') {
                    return Err(log.err(ctx.offset + 2 + s.len() as i64, TpErr::ImmstrNoClose, Errno::EINVAL));
                }
                code.insn[c].op = Op::Data;
                data.bytes = s.as_bytes()[..s.len() - 1].to_vec();
            } else {
                let s = &arg[1..];
                let v = match s.as_bytes().first() {
                    Some(d) if d.is_ascii_digit() => kstrtoul(s, 0),
                    Some(b'-') => kstrtol(s, 0).map(|v| v as u64),
                    Some(b'+') => kstrtol(&s[1..], 0).map(|v| v as u64),
                    _ => Err(NumError::Invalid),
                };
                match v {
                    Ok(v) => {
                        code.insn[c].op = Op::Imm;
                        code.insn[c].imm = v;
                    }
                    Err(e) => return Err(log.err(ctx.offset + 1, TpErr::BadImm, num_errno(e))),
                }
            }
        }
        f if f.is_ascii_alphabetic() || f == b'_' => {
            if !is_function_entry(ctx.flags) && !is_function_return(ctx.flags) {
                return Err(einval(ctx, TpErr::NosupBtfarg));
            }
            parse_btf_arg(arg, code, pcode, ctx, log)?;
        }
        _ => {}
    }
    if code.insn[c].op == Op::Nop {
        return Err(einval(ctx, TpErr::BadFetchArg));
    }
    Ok(())
}

/// `parse_probe_vars`: `$retval`, `$stack[N]`, `$comm`, `$argN`.
fn parse_probe_vars(orig: &str, code: &mut Code, pcode: &mut usize, ctx: &mut Ctx, log: &Log) -> Result<(), CmdError> {
    let c = *pcode;
    let arg = &orig[1..];
    let inval = |ctx: &Ctx, e: TpErr| log.err(ctx.offset, e, Errno::EINVAL);
    if ctx.flags & FL_TEVENT != 0 {
        // A field of the attached event, else the task's name.
        if let Some(f) = ctx.tevent.and_then(|fs| fs.iter().find(|f| f.name == arg)) {
            let i = &mut code.insn[c];
            i.op = Op::TpArg;
            i.param = f.offset;
            i.size = f.size;
            i.basesize = f.string.map_or(0, crate::StrKind::code);
            i.lshift = u8::from(f.signed);
            return Ok(());
        }
        if arg == "comm" || arg == "COMM" {
            code.insn[c].op = Op::Comm;
            return Ok(());
        }
        return Err(inval(ctx, TpErr::BadVar));
    }
    if arg.starts_with("retval") {
        if ctx.flags & FL_RETURN == 0 {
            return Err(inval(ctx, TpErr::RetvalOnProbe));
        }
        return parse_btf_arg(orig, code, pcode, ctx, log);
    }
    if let Some(rest) = arg.strip_prefix("stack") {
        if rest.is_empty() {
            code.insn[c].op = Op::StackP;
            return Ok(());
        }
        if rest.as_bytes()[0].is_ascii_digit() {
            let n = kstrtoul(rest, 10).map_err(|_| inval(ctx, TpErr::BadVar))?;
            if n > PARAM_MAX_STACK {
                return Err(inval(ctx, TpErr::BadStackNum));
            }
            code.insn[c].op = Op::Stack;
            code.insn[c].param = n as u32;
            return Ok(());
        }
        return Err(inval(ctx, TpErr::BadVar));
    }
    if arg == "comm" || arg == "COMM" {
        code.insn[c].op = Op::Comm;
        return Ok(());
    }
    if let Some(rest) = arg.strip_prefix("arg") {
        let n = kstrtoul(rest, 10).map_err(|_| inval(ctx, TpErr::BadVar))?;
        if n == 0 || n > PARAM_MAX_STACK {
            return Err(inval(ctx, TpErr::BadArgNum));
        }
        let n = (n - 1) as u32;
        if is_function_entry(ctx.flags) {
            code.insn[c].op = Op::Arg;
            code.insn[c].param = n;
            // A tracepoint's probe function takes its data first.
            if ctx.flags & FL_TPOINT != 0 {
                code.insn[c].param = n + 1;
            }
        } else if is_function_return(ctx.flags) {
            let off = ctx.store_entry_arg(n);
            code.insn[c].op = Op::Edata;
            code.insn[c].offset = off;
        } else {
            return Err(inval(ctx, TpErr::NofentryArgs));
        }
        return Ok(());
    }
    Err(inval(ctx, TpErr::BadVar))
}

/// `split_next_field`: splits `a->b` (returns true) or `a.b` at the first
/// `.` or `-`; `Ok((head, None))` when there is none.
fn split_next_field<'s>(
    varname: &'s str,
    ctx: &Ctx,
    log: &Log,
) -> Result<(&'s str, Option<&'s str>, bool, usize), CmdError> {
    match varname.find(['.', '-']) {
        None => Ok((varname, None, false, 0)),
        Some(i) => {
            let rest = &varname[i..];
            if rest.starts_with("->") {
                Ok((&varname[..i], Some(&varname[i + 2..]), true, i + 2))
            } else if rest.starts_with('.') {
                Ok((&varname[..i], Some(&varname[i + 1..]), false, i + 1))
            } else {
                Err(log.err(ctx.offset + i as i64, TpErr::BadHyphen, Errno::EINVAL))
            }
        }
    }
}

/// `parse_btf_arg`: a parameter by name (or `$retval`), with `->field`s.
fn parse_btf_arg(varname: &str, code: &mut Code, pcode: &mut usize, ctx: &mut Ctx, log: &Log) -> Result<(), CmdError> {
    let c = *pcode;
    if ctx.funcname.is_none() {
        return Err(silent(Errno::EINVAL));
    }
    let (var, field, is_ptr, field_at) = split_next_field(varname, ctx, log)?;
    if !is_ptr && field.is_some() {
        return Err(log.err(ctx.offset + field_at as i64, TpErr::NosupDatArg, Errno::EOPNOTSUPP));
    }
    let ty: CType;
    if ctx.flags & FL_RETURN != 0 && var == "$retval" {
        code.insn[c].op = Op::Retval;
        match ctx.query() {
            Some(p) => {
                if p.ret == CType::Void {
                    return Err(log.err(ctx.offset, TpErr::NoRetval, Errno::ENOENT));
                }
                ty = p.ret.clone();
            }
            None => {
                if field.is_some() {
                    return Err(log.err(ctx.offset + field_at as i64, TpErr::NoBtfEntry, Errno::ENOENT));
                }
                return Ok(());
            }
        }
    } else {
        if ctx.proto.is_none() {
            let p = ctx.query();
            if p.is_none() || ctx.nr_params() == 0 {
                return Err(log.err(ctx.offset, TpErr::NoBtfEntry, Errno::ENOENT));
            }
        }
        let Some(Some(_)) = ctx.proto else {
            return Err(log.err(ctx.offset, TpErr::NoBtfEntry, Errno::ENOENT));
        };
        let params = ctx.params();
        let Some(i) = params.iter().position(|(n, _)| n == var) else {
            return Err(log.err(ctx.offset, TpErr::NoBtfarg, Errno::ENOENT));
        };
        if is_function_entry(ctx.flags) {
            code.insn[c].op = Op::Arg;
            // A tracepoint's probe function takes its data first.
            code.insn[c].param = i as u32 + u32::from(ctx.flags & FL_TPOINT != 0);
        } else if is_function_return(ctx.flags) {
            let off = ctx.store_entry_arg(i as u32);
            code.insn[c].op = Op::Edata;
            code.insn[c].offset = off;
        }
        ty = params[i].1.clone();
    }
    ctx.last_type = Some(ty.clone());
    ctx.last_bitoffs = 0;
    ctx.last_bitsize = 0;
    if let Some(f) = field {
        ctx.offset += field_at as i64;
        return parse_btf_field(f, ty, code, pcode, ctx, log);
    }
    Ok(())
}

/// `parse_btf_field`: follows `->a.b->c` through the structure types.
fn parse_btf_field(
    fieldname: &str,
    ty: CType,
    code: &mut Code,
    pcode: &mut usize,
    ctx: &mut Ctx,
    log: &Log,
) -> Result<(), CmdError> {
    let mut c = *pcode;
    let mut ty = ty;
    let mut name = Some(fieldname);
    while let Some(mut fname) = name {
        let CType::Ptr(pointee) = &ty else {
            return Err(log.err(ctx.offset, TpErr::NoPtrStrct, Errno::EINVAL));
        };
        let mut cur = match pointee {
            Pointee::Struct(s) => CType::Struct(s.clone()),
            Pointee::Char => CType::Int {
                bytes: 1,
                signed: false,
            },
            Pointee::Other => CType::Other,
        };
        let mut bitoffs = 0u32;
        let next_name;
        loop {
            let (head, next, is_ptr, next_at) = split_next_field(fname, ctx, log)?;
            let CType::Struct(st) = &cur else {
                return Err(log.err(ctx.offset, TpErr::BadBtfTid, Errno::EINVAL));
            };
            let Some((m, anon)) = st.find_member(head) else {
                return Err(log.err(ctx.offset, TpErr::NoBtfField, Errno::ENOENT));
            };
            bitoffs = bitoffs.wrapping_add(anon).wrapping_add(m.bit_offset);
            ctx.last_bitsize = u32::from(m.bitfield_size);
            let mty = m.ty.clone();
            cur = mty;
            if next.is_some() {
                ctx.offset += next_at as i64;
            }
            match next {
                Some(n) if !is_ptr => fname = n,
                other => {
                    next_name = other;
                    break;
                }
            }
        }
        c += 1;
        if c == END {
            return Err(log.err(ctx.offset, TpErr::TooManyOps, Errno::EINVAL));
        }
        code.insn[c].op = Op::Deref;
        code.insn[c].offset = (bitoffs / 8) as i32;
        *pcode = c;
        ctx.last_bitoffs = bitoffs % 8;
        ctx.last_type = Some(cur.clone());
        ty = cur;
        name = next_name;
    }
    Ok(())
}

/// `__parse_bitfield_probe_arg`: `b<width>@<offset>/<container>`.
fn parse_bitfield(bf: &str, ty: &FetchType, code: &mut Code, pc: &mut usize) -> Result<(), ()> {
    let Some(rest) = bf.strip_prefix('b') else {
        return Ok(());
    };
    let (bw, n) = simple_strtoul(rest, 0);
    let rest = &rest[n..];
    if bw == 0 || !rest.starts_with('@') {
        return Err(());
    }
    let rest = &rest[1..];
    let (bo, n) = simple_strtoul(rest, 0);
    if n == 0 || !rest[n..].starts_with('/') {
        return Err(());
    }
    *pc += 1;
    if code.insn[*pc].op != Op::Nop {
        return Err(());
    }
    let bits = u64::from(ty.size) * 8;
    let i = &mut code.insn[*pc];
    i.op = Op::ModBf;
    // Linux keeps these in unsigned chars.
    i.lshift = bits.wrapping_sub(bw.wrapping_add(bo)) as u8;
    i.rshift = bits.wrapping_sub(bw) as u8;
    i.basesize = ty.size;
    match bw.checked_add(bo) {
        Some(s) if s <= bits => Ok(()),
        _ => Err(()),
    }
}

/// `finalize_fetch_insn`: the store, modify and loop stages. Returns
/// whether the argument is dynamic (a `__data_loc`).
#[allow(clippy::too_many_arguments)]
fn finalize_fetch_insn(
    code: &mut Code,
    mut pc: usize,
    ty: &'static FetchType,
    count: u32,
    type_str: Option<&str>,
    type_offset: i64,
    ctx: &Ctx,
    log: &Log,
) -> Result<bool, CmdError> {
    let at_type = |e: TpErr| log.err(ctx.offset + type_offset, e, Errno::EINVAL);
    let mut dynamic = false;
    let op = code.insn[pc].op;
    if ty.is_string {
        let symstr = ty.name == "symstr";
        if symstr {
            if !matches!(
                op,
                Op::Reg(_) | Op::Stack | Op::Retval | Op::Arg | Op::Deref | Op::TpArg
            ) {
                return Err(at_type(TpErr::BadSymstring));
            }
        } else if !matches!(op, Op::Deref | Op::UDeref | Op::Imm | Op::Comm | Op::Data | Op::TpArg) {
            return Err(at_type(TpErr::BadString));
        }
        if symstr || matches!(op, Op::Imm | Op::Comm | Op::Data | Op::TpArg) || count != 0 {
            pc += 1;
            if code.insn[pc].op != Op::Nop {
                return Err(log.err(ctx.offset, TpErr::TooManyOps, Errno::EINVAL));
            }
        }
        let cur = code.insn[pc].op;
        code.insn[pc].op = if ty.name == "ustring" || cur == Op::UDeref {
            Op::StUString
        } else if symstr {
            Op::StSymstr
        } else {
            Op::StString
        };
        code.insn[pc].size = u32::from(ty.size);
        dynamic = true;
    } else if op == Op::Deref {
        code.insn[pc].op = Op::StMem;
        code.insn[pc].size = u32::from(ty.size);
    } else if op == Op::UDeref {
        code.insn[pc].op = Op::StUMem;
        code.insn[pc].size = u32::from(ty.size);
    } else {
        pc += 1;
        if code.insn[pc].op != Op::Nop {
            return Err(log.err(ctx.offset, TpErr::TooManyOps, Errno::E2BIG));
        }
        code.insn[pc].op = Op::StRaw;
        code.insn[pc].size = u32::from(ty.size);
    }
    let scode = pc;

    if let Some(t) = type_str {
        if parse_bitfield(t, ty, code, &mut pc).is_err() {
            return Err(at_type(TpErr::BadBitfield));
        }
    } else if ctx.last_type.is_some() && !(ctx.last_bitsize.is_multiple_of(8) && ctx.last_bitoffs == 0) {
        pc += 1;
        if code.insn[pc].op != Op::Nop {
            return Err(log.err(ctx.offset, TpErr::TooManyOps, Errno::EINVAL));
        }
        let i = &mut code.insn[pc];
        i.op = Op::ModBf;
        i.lshift = 64u32.wrapping_sub(ctx.last_bitsize.wrapping_add(ctx.last_bitoffs)) as u8;
        i.rshift = 64u32.wrapping_sub(ctx.last_bitsize) as u8;
        i.basesize = 8;
    }

    if count != 0 {
        if !matches!(code.insn[scode].op, Op::StMem | Op::StString | Op::StUString) {
            return Err(at_type(TpErr::BadString));
        }
        pc += 1;
        if code.insn[pc].op != Op::Nop {
            return Err(log.err(ctx.offset, TpErr::TooManyOps, Errno::E2BIG));
        }
        code.insn[pc].op = Op::LpArray;
        code.insn[pc].param = count;
    }
    pc += 1;
    if pc > END {
        return Err(log.err(ctx.offset, TpErr::TooManyOps, Errno::E2BIG));
    }
    code.insn[pc].op = Op::End;
    Ok(dynamic)
}

impl ProbeArg {
    /// `traceprobe_update_arg`: resolves `@SYM[+|-offs]` into its address.
    pub(crate) fn update(&mut self, ctx: &dyn ProbeContext) -> Result<(), Errno> {
        let Some(sym) = &self.symbol else { return Ok(()) };
        let (name, off) = match sym.find(['+', '-']) {
            Some(i) => (&sym[..i], kstrtol(&sym[i..], 0).map_err(num_errno)?),
            None => (sym.as_str(), 0),
        };
        let Some(i) = self.code.iter().position(|c| c.op == Op::NopSymbol) else {
            return Ok(());
        };
        if self.code.get(i + 1).map(|c| c.op) != Some(Op::Imm) {
            return Err(Errno::EINVAL);
        }
        let addr = ctx.lookup_name(name).filter(|&a| a != 0).ok_or(Errno::ENOENT)?;
        self.code[i + 1].imm = addr.wrapping_add(off as u64);
        Ok(())
    }
}
