//! The `hist` trigger command, as Linux's `event_hist_trigger_parse`:
//!
//! ```text
//! hist:keys=<field1[,field2,...]>[:values=<field1[,field2,...]>]
//!     [:sort=<field1[,field2,...]>][:size=#entries][:pause][:continue]
//!     [:clear][:name=histname1][:nohitcount][:<var>=<expr>[,...]]
//!     [:clock=<clock>] [if <filter>]
//! ```
//!
//! [`HistSpec::parse`] compiles one command against an event's schema;
//! [`HistList`] keeps an event's hist triggers and applies commands to
//! it (create, `!` remove, `pause`, `cont`, `clear`, shared `name=`
//! histograms through [`NamedHists`]); [`HistTrigger::event_hit`] is the
//! probe-context update.

use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use trace_filter::kstrto::kstrtoul;
use trace_filter::{EventField, EventFilter, FieldKind, FilterEnv, FilterFailure};
use uapi::Errno;

use crate::action::{
    create_action, parse_action, Action, ActionArg, ActionEnv, ActionKind, ActionSpec, Handler, SaveField,
};
use crate::field::{parse_expr, HistContext, HistField, Modifier, ParseEnv, Role, Source};
use crate::map::{MapLayout, TracingMap};
use crate::vars::{HistLinks, RefTarget, SynthArg, VarRef};
use crate::{
    HistErr, HistError, HIST_KEY_SIZE_MAX, HIST_STACKTRACE_DEPTH, TRACING_MAP_BITS_DEFAULT, TRACING_MAP_BITS_MAX,
    TRACING_MAP_BITS_MIN, TRACING_MAP_KEYS_MAX, TRACING_MAP_SORT_KEYS_MAX, TRACING_MAP_VALS_MAX, TRACING_MAP_VARS_MAX,
};

/// The `trigger` file's name for the command, and the prefix of its
/// `error_log` location and command.
pub const HIST_PREFIX: &str = "hist:";

/// The largest key, in words.
const KEY_WORDS_MAX: usize = (HIST_KEY_SIZE_MAX as usize).div_ceil(8);

/// Keys up to this many words (numbers, compound keys of numbers) are
/// built in a buffer of this size, so that a hit clears a few words on
/// its stack, not the [`KEY_WORDS_MAX`] a string or stack key needs.
const SMALL_KEY_WORDS: usize = 4;

/// A key and where it sits in the compound key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyField {
    /// What it reads.
    pub field: HistField,
    /// Byte offset in the key.
    pub offset: u32,
    /// Bytes it takes (a multiple of 8).
    pub size: u32,
}

/// What a sort key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortField {
    /// Sum `i` (0 is hitcount).
    Sum(usize),
    /// Key `i`.
    Key(usize),
}

/// One `sort=` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// The field.
    pub field: SortField,
    /// `.descending`.
    pub descending: bool,
}

/// The parts of a `hist:` command (Linux's `hist_trigger_attrs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Attrs<'a> {
    keys: Option<&'a str>,
    vals: Option<&'a str>,
    sort: Option<&'a str>,
    name: Option<&'a str>,
    clock: Option<&'a str>,
    map_bits: Option<u32>,
    assignments: Vec<&'a str>,
    actions: Vec<&'a str>,
    no_hitcount: bool,
    pause: bool,
    cont: bool,
    clear: bool,
}

/// A compiled histogram definition (Linux's `hist_trigger_data` without
/// its map).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistData {
    /// Values: `hitcount` first, then those of `vals=`.
    pub vals: Vec<HistField>,
    /// Variables (`name=expr`).
    pub vars: Vec<HistField>,
    /// Keys.
    pub keys: Vec<KeyField>,
    /// Sort keys (at least one).
    pub sort_keys: Vec<SortKey>,
    /// Compound key size in bytes.
    pub key_size: u32,
    /// `log2` of the table's entries.
    pub map_bits: u32,
    /// `name=NAME` as written (Linux shows it so).
    pub name: Option<String>,
    /// The trace clock for `common_timestamp`.
    pub clock: String,
    /// Whether `common_timestamp` is used.
    pub enable_timestamps: bool,
    /// Whether timestamps are microseconds (`common_timestamp.usecs`).
    pub ts_in_usecs: bool,
    /// `nohitcount`.
    pub no_hitcount: bool,
    /// The actions, as written.
    pub actions: Vec<ActionSpec>,
    /// The names of the fields `save()` keeps.
    pub save_names: Vec<String>,
    /// Scratch words each element has for the actions.
    pub extra_words: usize,
    /// For each variable holding a stack trace or a string, its first
    /// scratch word and how many it takes.
    pub var_stack_slots: Vec<Option<(usize, usize)>>,
}

impl HistData {
    /// The map's element shape.
    pub fn layout(&self) -> MapLayout {
        MapLayout {
            key_words: (self.key_size as usize) / 8,
            n_sums: self.vals.len(),
            n_vars: self.vars.len(),
            comm: self.keys.iter().any(|k| k.field.modifier == Modifier::Execname),
            extra_words: self.extra_words,
        }
    }

    /// The spec without size, clock and state: what makes two triggers
    /// the same one (Linux's `hist_trigger_match` compares fields and sort
    /// keys, not the size).
    fn identity(&self) -> String {
        let mut s = String::new();
        self.print_fields(&mut s);
        let _ = write!(s, ":{}", self.no_hitcount);
        self.print_actions(&mut s);
        s
    }

    /// The actions as the trigger's line shows them.
    fn print_actions(&self, m: &mut String) {
        for a in &self.actions {
            a.print_names(m, &self.save_names);
        }
    }

    /// `keys=...:vals=...[:vars]:sort=...` as `event_hist_trigger_print`.
    fn print_fields(&self, m: &mut String) {
        m.push_str("keys=");
        for (i, k) in self.keys.iter().enumerate() {
            if i > 0 {
                m.push(',');
            }
            if matches!(k.field.src, Source::Stacktrace) {
                m.push_str("common_stacktrace");
            } else {
                k.field.print(m);
            }
        }
        m.push_str(":vals=");
        let mut show_val = false;
        for (i, v) in self.vals.iter().enumerate() {
            if i == 0 {
                if self.no_hitcount {
                    continue;
                }
                m.push_str("hitcount");
            } else {
                if show_val {
                    m.push(',');
                }
                v.print(m);
            }
            show_val = true;
        }
        if !self.vars.is_empty() {
            m.push(':');
            for (i, v) in self.vars.iter().enumerate() {
                if i > 0 {
                    m.push(',');
                }
                v.print(m);
            }
        }
        m.push_str(":sort=");
        for (i, sk) in self.sort_keys.iter().enumerate() {
            if i > 0 {
                m.push(',');
            }
            match sk.field {
                SortField::Sum(0) => m.push_str("hitcount"),
                SortField::Sum(j) => {
                    if let Some(v) = self.vals.get(j) {
                        v.print(m);
                    }
                }
                SortField::Key(j) => {
                    if let Some(k) = self.keys.get(j) {
                        k.field.print(m);
                    }
                }
            }
            if sk.descending {
                m.push_str(".descending");
            }
        }
    }
}

/// One parsed `hist:` command.
#[derive(Debug)]
pub struct HistSpec {
    /// The histogram it defines.
    pub data: HistData,
    /// `if FILTER`: its text and compiled filter.
    pub filter: Option<(String, EventFilter)>,
    /// `pause`.
    pub pause: bool,
    /// `cont` / `continue`.
    pub cont: bool,
    /// `clear`.
    pub clear: bool,
    /// Where `name=` is in the command (for a mismatch's caret).
    name_pos: usize,
    /// The table, if made ahead of [`HistList::apply`] (see
    /// [`HistSpec::prealloc_map`]).
    map: Option<TracingMap>,
    /// Its variable references.
    refs: Vec<VarRef>,
    /// Its compiled actions.
    actions: Vec<Action>,
    /// The fields `save()` keeps.
    save: Vec<SaveField>,
    /// Triggers made on other events for their fields.
    field_var_hists: Vec<(String, String, String)>,
}

/// Linux's `parse_map_size`.
fn parse_map_size(s: &str) -> Result<u32, Errno> {
    let size = kstrtoul(s.as_bytes(), 0)?;
    if size == 0 {
        return Err(Errno::EINVAL);
    }
    let bits = 64 - (size - 1).leading_zeros();
    if !(TRACING_MAP_BITS_MIN..=TRACING_MAP_BITS_MAX).contains(&bits) {
        return Err(Errno::EINVAL);
    }
    Ok(bits)
}

/// The clocks `clock=` may name (Linux's trace clocks but `tai`, which
/// this kernel does not have).
pub const HIST_CLOCKS: &[&str] = &[
    "local", "global", "counter", "uptime", "perf", "mono", "mono_raw", "boot",
];

impl HistSpec {
    /// Compiles `param_and_filter` (what follows `hist:` in the command)
    /// for an event with `fields`. `cmd` is the whole command as logged
    /// (`hist:` + `param_and_filter`), for error positions.
    pub fn parse(
        param_and_filter: &str,
        fields: &[EventField<'_>],
        env: &FilterEnv<'_>,
    ) -> Result<HistSpec, HistError> {
        HistSpec::parse_with(param_and_filter, fields, env, &HistLinks::standalone())
    }

    /// [`HistSpec::parse`] for a trigger of `links.system/links.event`,
    /// whose variable references and actions may name other events'
    /// triggers and synthetic events.
    pub fn parse_with(
        param_and_filter: &str,
        fields: &[EventField<'_>],
        env: &FilterEnv<'_>,
        links: &HistLinks<'_>,
    ) -> Result<HistSpec, HistError> {
        let mut cmd = String::from(HIST_PREFIX);
        cmd.push_str(param_and_filter);
        if param_and_filter
            .trim_matches(|c: char| c == ' ' || c == '\t')
            .is_empty()
        {
            return Err(Errno::EINVAL.into());
        }
        let (param, filter) = split_filter(param_and_filter)?;
        // `.sym-offset` would read as a subtraction.
        let param = param.replace(".sym-offset", ".symXoffset");
        let mut penv = ParseEnv {
            fields,
            cmd: &cmd,
            var_defs: &[],
            timestamps: false,
            ts_in_usecs: false,
            links,
            match_events: Vec::new(),
            refs: Vec::new(),
            not_unique: None,
        };
        let attrs = parse_attrs(&penv, &param)?;
        let Some(keys_str) = attrs.keys else {
            return Err(Errno::EINVAL.into());
        };
        let mut action_specs = Vec::new();
        for a in &attrs.actions {
            let spec = parse_action(&penv, a)?;
            if let Handler::OnMatch { system, event } = &spec.handler {
                penv.match_events.push((system.clone(), event.clone()));
            }
            action_specs.push(spec);
        }
        let var_defs = parse_var_defs(&penv, &attrs)?;
        penv.var_defs = &var_defs;
        let vals = create_val_fields(&mut penv, attrs.vals, attrs.no_hitcount)?;
        let mut vars = Vec::new();
        for (name, expr) in &var_defs {
            if vars
                .iter()
                .any(|v: &HistField| v.var_name.as_deref() == Some(name.as_str()))
            {
                return Err(penv.err(Errno::EINVAL, HistErr::DuplicateVar, name));
            }
            let mut n = 0;
            let f = parse_expr(&mut penv, expr, Role::Var, Some(name), &mut n)?;
            if matches!(
                f.modifier,
                Modifier::Graph | Modifier::Percent | Modifier::Buckets(_) | Modifier::Log2
            ) {
                return Err(penv.err(Errno::EINVAL, HistErr::BadFieldModifier, expr));
            }
            vars.push(f);
        }
        let (keys, key_size) = create_key_fields(&mut penv, keys_str)?;
        // A stack or string variable keeps its bytes in the element
        // (Linux's field_var_str); its value is the element's index.
        let mut extra = 0usize;
        let var_stack_slots: Vec<Option<(usize, usize)>> = vars
            .iter()
            .map(|v| {
                let words = if matches!(v.src, Source::Stacktrace) {
                    HIST_STACKTRACE_DEPTH
                } else if v.is_string && v.string_field().is_some() {
                    (v.size as usize).min(STORED_WORDS_MAX * 8) / 8
                } else {
                    return None;
                };
                extra += words;
                Some((extra - words, words))
            })
            .collect();
        let mut aenv = ActionEnv {
            vars: &vars,
            extra_words: extra,
            key_words: key_size as usize / 8,
            save: Vec::new(),
            keys: &keys,
            field_var_hists: Vec::new(),
        };
        let mut actions = Vec::new();
        for spec in action_specs.iter().cloned() {
            actions.push(create_action(&mut penv, &mut aenv, spec)?);
        }
        let (extra_words, save, field_var_hists) = (aenv.extra_words, aenv.save, aenv.field_var_hists);
        let mut data = HistData {
            vals,
            vars,
            keys,
            sort_keys: Vec::new(),
            key_size,
            map_bits: attrs.map_bits.unwrap_or(TRACING_MAP_BITS_DEFAULT),
            name: attrs.name.map(String::from),
            clock: String::from(attrs.clock.unwrap_or("global")),
            enable_timestamps: penv.timestamps,
            ts_in_usecs: penv.ts_in_usecs,
            no_hitcount: attrs.no_hitcount,
            actions: action_specs,
            save_names: save.iter().map(|f| String::from(f.field.name())).collect(),
            extra_words,
            var_stack_slots,
        };
        data.sort_keys = create_sort_keys(&penv, &data, attrs.sort)?;
        if data.enable_timestamps && !HIST_CLOCKS.contains(&data.clock.as_str()) {
            return Err(penv.err(Errno::EINVAL, HistErr::SetClockFail, &data.clock));
        }
        let filter = match filter {
            None => None,
            Some(text) => match EventFilter::compile(text, fields, env) {
                Ok(f) => Some((String::from(text), f)),
                Err(err) => {
                    // Linux logs a bad `if` filter of a trigger as an
                    // event filter error, with the filter as the command.
                    let mut e = HistError::silent(err.errno);
                    e.filter_failure = Some(alloc::boxed::Box::new(FilterFailure {
                        err,
                        command: String::from(text),
                    }));
                    return Err(e);
                }
            },
        };
        Ok(HistSpec {
            data,
            filter,
            pause: attrs.pause,
            cont: attrs.cont,
            clear: attrs.clear,
            name_pos: attrs.name.map_or(0, |n| penv.errpos(n)),
            map: None,
            refs: core::mem::take(&mut penv.refs),
            actions,
            save,
            field_var_hists,
        })
    }
}

/// C's `isspace()`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn trim_space(s: &str) -> &str {
    s.trim_matches(|c: char| u8::try_from(c).is_ok_and(is_space))
}

impl HistSpec {
    /// Does the command create a trigger (rather than pause, continue,
    /// clear or, with `!`, remove one)?
    pub fn creates(&self, remove: bool) -> bool {
        !remove && !self.pause && !self.cont && !self.clear
    }

    /// Does an action take snapshots (the snapshot buffer must exist)?
    pub fn takes_snapshots(&self) -> bool {
        self.actions.iter().any(|a| a.spec.kind == ActionKind::Snapshot)
    }

    /// Allocates the table now, so that [`HistList::apply`], which runs
    /// under the lock hits take, allocates nothing.
    pub fn prealloc_map(&mut self) -> Result<(), Errno> {
        if self.map.is_none() {
            self.map = Some(TracingMap::new(self.data.map_bits, self.data.layout())?);
        }
        Ok(())
    }
}

/// Linux's separation of `k:v [if filter]` in `event_hist_trigger_parse`:
/// the first `if` with white space on both sides starts the filter.
fn split_filter(pf: &str) -> Result<(&str, Option<&str>), HistError> {
    let b = pf.as_bytes();
    let mut from = 0usize;
    while let Some(rel) = pf.get(from..).and_then(|s| s.find("if")) {
        let p = from + rel;
        if p == 0 {
            return Err(Errno::EINVAL.into());
        }
        let before = b.get(p - 1).copied().unwrap_or(0);
        if before != b' ' && before != b'\t' {
            from = p + 1;
            continue;
        }
        if p + 3 > b.len() {
            return Err(Errno::EINVAL.into());
        }
        let after = b.get(p + 2).copied().unwrap_or(0);
        if after != b' ' && after != b'\t' {
            from = p + 1;
            continue;
        }
        let param = trim_space(pf.get(..p - 1).unwrap_or(""));
        let filter = trim_space(pf.get(p..).unwrap_or(""));
        // set_trigger_filter: "if" and a separator, then the filter.
        let text = filter.get(3..).unwrap_or("");
        return Ok((param, Some(text)));
    }
    Ok((pf, None))
}

/// Linux's `parse_hist_trigger_attrs`.
fn parse_attrs<'a>(env: &ParseEnv<'_>, param: &'a str) -> Result<Attrs<'a>, HistError> {
    let mut a = Attrs::default();
    for s in param.split(':') {
        if let Some(eq) = s.find('=') {
            if s.len() == eq + 1 {
                return Err(env.err(Errno::EINVAL, HistErr::EmptyAssignment, s));
            }
            let after = |p: &str| s.strip_prefix(p);
            if let Some(v) = after("key=").or_else(|| after("keys=")) {
                a.keys = Some(v);
            } else if let Some(v) = after("val=").or_else(|| after("vals=")).or_else(|| after("values=")) {
                a.vals = Some(v);
            } else if let Some(v) = after("sort=") {
                a.sort = Some(v);
            } else if s.starts_with("name=") {
                a.name = Some(s);
            } else if let Some(v) = after("clock=") {
                a.clock = Some(v.trim());
            } else if let Some(v) = after("size=") {
                a.map_bits = Some(parse_map_size(v)?);
            } else {
                if a.assignments.len() == TRACING_MAP_VARS_MAX {
                    return Err(env.err(Errno::EINVAL, HistErr::TooManyVars, s));
                }
                a.assignments.push(s);
            }
        } else {
            match s {
                "nohitcount" | "NOHC" => a.no_hitcount = true,
                "pause" => a.pause = true,
                "cont" | "continue" => a.cont = true,
                "clear" => a.clear = true,
                _ => {
                    if a.actions.len() >= 8
                        || !(s.starts_with("onmatch(") || s.starts_with("onmax(") || s.starts_with("onchange("))
                    {
                        return Err(Errno::EINVAL.into());
                    }
                    a.actions.push(s);
                }
            }
        }
    }
    Ok(a)
}

/// Linux's `parse_var_defs`: `name=expr[,name=expr...]` assignments.
fn parse_var_defs(env: &ParseEnv<'_>, attrs: &Attrs<'_>) -> Result<Vec<(String, String)>, HistError> {
    let mut defs: Vec<(String, String)> = Vec::new();
    for a in &attrs.assignments {
        for piece in a.split(',').take(TRACING_MAP_VARS_MAX) {
            let Some((name, expr)) = piece.split_once('=') else {
                return Err(env.err(Errno::EINVAL, HistErr::MalformedAssignment, piece));
            };
            if defs.len() == TRACING_MAP_VARS_MAX {
                return Err(env.err(Errno::EINVAL, HistErr::TooManyVars, name));
            }
            defs.push((String::from(name), String::from(expr)));
        }
    }
    Ok(defs)
}

/// Linux's `create_val_fields`: hitcount, then up to two values.
fn create_val_fields(
    env: &mut ParseEnv<'_>,
    vals: Option<&str>,
    no_hitcount: bool,
) -> Result<Vec<HistField>, HistError> {
    let mut out = alloc::vec![HistField::hitcount()];
    let mut res = Ok(());
    if let Some(vals) = vals {
        let mut it = vals.split(',').peekable();
        let mut n_hitcount = 0;
        let mut i = 0;
        while i < TRACING_MAP_VALS_MAX && out.len() < TRACING_MAP_VALS_MAX {
            let Some(f) = it.next() else {
                break;
            };
            i += 1;
            if f == "hitcount" {
                n_hitcount += 1;
                if n_hitcount == 1 {
                    continue;
                }
            }
            let mut n = 0;
            let field = parse_expr(env, f, Role::Val, None, &mut n)?;
            if matches!(
                field.modifier,
                Modifier::Buckets(_) | Modifier::Log2 | Modifier::Sym | Modifier::SymOffset | Modifier::Syscall
            ) || matches!(field.src, Source::Stacktrace)
            {
                return Err(env.err(Errno::EINVAL, HistErr::BadFieldModifier, f));
            }
            out.push(field);
        }
        let rest: Vec<&str> = it.collect();
        if !rest.is_empty() && rest != ["hitcount"] {
            res = Err(Errno::EINVAL.into());
        }
    }
    if out.len() == 1 && no_hitcount {
        return Err(HistError::logged(Errno::ENOENT, HistErr::NeedNohcVal, 0));
    }
    res.map(|()| out)
}

/// Linux's `create_key_fields`: up to three keys, each rounded up to 8
/// bytes, at most [`HIST_KEY_SIZE_MAX`] in all.
fn create_key_fields(env: &mut ParseEnv<'_>, keys: &str) -> Result<(Vec<KeyField>, u32), HistError> {
    let mut out = Vec::new();
    let mut offset = 0u32;
    let mut it = keys.split(',');
    for _ in 0..TRACING_MAP_KEYS_MAX {
        let Some(k) = it.next() else {
            break;
        };
        let field = if k == "stacktrace" {
            HistField::stacktrace()
        } else {
            let mut n = 0;
            parse_expr(env, k, Role::Key, None, &mut n)?
        };
        let size = field.size.div_ceil(8) * 8;
        out.push(KeyField { field, offset, size });
        offset += size;
        if offset > HIST_KEY_SIZE_MAX {
            return Err(Errno::EINVAL.into());
        }
    }
    if it.next().is_some() {
        return Err(Errno::EINVAL.into());
    }
    Ok((out, offset))
}

/// Linux's `is_descending`.
fn is_descending(env: &ParseEnv<'_>, m: Option<&str>) -> Result<bool, HistError> {
    match m {
        None | Some("ascending") => Ok(false),
        Some("descending") => Ok(true),
        Some(m) => Err(env.err(Errno::EINVAL, HistErr::InvalidSortModifier, m)),
    }
}

/// Linux's `create_sort_keys`: up to two, each a key or a value.
fn create_sort_keys(env: &ParseEnv<'_>, data: &HistData, sort: Option<&str>) -> Result<Vec<SortKey>, HistError> {
    let mut out = Vec::new();
    let Some(sort) = sort else {
        out.push(SortKey {
            field: SortField::Sum(0),
            descending: false,
        });
        return Ok(out);
    };
    let parts: Vec<&str> = sort.split(',').collect();
    for (i, p) in parts.iter().enumerate() {
        if i == TRACING_MAP_SORT_KEYS_MAX {
            break;
        }
        if p.is_empty() {
            return Err(env.err(Errno::EINVAL, HistErr::EmptySortField, "sort="));
        }
        if i == TRACING_MAP_SORT_KEYS_MAX - 1 && parts.len() > TRACING_MAP_SORT_KEYS_MAX {
            return Err(env.err(Errno::EINVAL, HistErr::TooManySortFields, "sort="));
        }
        let (name, m) = match p.split_once('.') {
            Some((n, m)) => (n, Some(m)),
            None => (*p, None),
        };
        if name.is_empty() {
            return Err(env.err(Errno::EINVAL, HistErr::EmptySortField, "sort="));
        }
        if name == "hitcount" {
            out.push(SortKey {
                field: SortField::Sum(0),
                descending: is_descending(env, m)?,
            });
            continue;
        }
        let field = data
            .vals
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, v)| v.name() == name)
            .map(|(j, _)| SortField::Sum(j))
            .or_else(|| {
                data.keys
                    .iter()
                    .position(|k| k.field.name() == name)
                    .map(SortField::Key)
            });
        let Some(field) = field else {
            return Err(env.err(Errno::EINVAL, HistErr::InvalidSortField, name));
        };
        out.push(SortKey {
            field,
            descending: is_descending(env, m)?,
        });
    }
    Ok(out)
}

/// The histogram itself: definition and table (shared by the triggers of
/// one `name=`).
#[derive(Debug)]
pub struct HistCore {
    /// The definition.
    pub data: HistData,
    /// The table.
    pub map: TracingMap,
    /// Its references to variables.
    pub refs: Vec<VarRef>,
    /// Its actions.
    pub actions: Vec<Action>,
    /// The fields `save()` keeps.
    pub save: Vec<SaveField>,
    /// How many references other triggers hold on its variables.
    pub referenced: AtomicU32,
    /// Triggers it made on other events for their fields (system, event,
    /// command): removed with it (Linux's `field_var_hists`).
    pub field_var_hists: Vec<(String, String, String)>,
}

impl HistCore {
    /// The index of variable `name`.
    pub fn var_index(&self, name: &str) -> Option<usize> {
        self.data.vars.iter().position(|v| v.var_name.as_deref() == Some(name))
    }

    /// Do other triggers read its variables (Linux's `check_var_refs`)?
    pub fn is_referenced(&self) -> bool {
        self.referenced.load(Ordering::Acquire) != 0
    }
}

impl core::fmt::Debug for TracingMap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TracingMap")
            .field("map_bits", &self.map_bits())
            .finish()
    }
}

/// A registered hist trigger.
#[derive(Debug)]
pub struct HistTrigger {
    core: Arc<HistCore>,
    filter: Option<(String, EventFilter)>,
    paused: AtomicBool,
}

impl HistTrigger {
    /// Makes a trigger of `spec` with its own table.
    pub fn new(spec: HistSpec) -> Result<HistTrigger, Errno> {
        let map = match spec.map {
            Some(m) => m,
            None => TracingMap::new(spec.data.map_bits, spec.data.layout())?,
        };
        Ok(HistTrigger {
            core: Arc::new(HistCore {
                data: spec.data,
                map,
                refs: spec.refs,
                actions: spec.actions,
                save: spec.save,
                referenced: AtomicU32::new(0),
                field_var_hists: spec.field_var_hists,
            }),
            filter: spec.filter,
            paused: AtomicBool::new(spec.pause),
        })
    }

    /// The histogram (shared by the triggers of one `name=`).
    pub fn core(&self) -> &Arc<HistCore> {
        &self.core
    }

    /// The actions.
    pub fn actions(&self) -> &[Action] {
        &self.core.actions
    }

    /// The fields `save()` keeps.
    pub fn save_fields(&self) -> &[SaveField] {
        &self.core.save
    }

    /// Linux's `resolve_var_refs`: reads the variables the trigger
    /// references, of other triggers (`own` false, before the update) or
    /// its own (after). False if one is not set for this key.
    fn resolve_var_refs(&self, key: &[u64], vals: &mut [u64], own: bool) -> bool {
        for (i, r) in self.core.refs.iter().enumerate() {
            let map = match (&r.target, own) {
                (RefTarget::Own, true) => &self.core.map,
                (RefTarget::Other(h), false) => &h.core().map,
                _ => continue,
            };
            let words = map.layout().key_words;
            let Some(elt) = key.get(..words).and_then(|k| map.lookup(k)) else {
                return false;
            };
            let v = if r.read_once && !own {
                elt.take_var(r.var_idx)
            } else {
                elt.var(r.var_idx)
            };
            match (v, vals.get_mut(i)) {
                (Some(v), Some(slot)) => *slot = v,
                _ => return false,
            }
        }
        true
    }

    /// The definition.
    pub fn data(&self) -> &HistData {
        &self.core.data
    }

    /// The table.
    pub fn map(&self) -> &TracingMap {
        &self.core.map
    }

    /// The `if` filter.
    #[inline]
    pub fn filter(&self) -> Option<&EventFilter> {
        self.filter.as_ref().map(|(_, f)| f)
    }

    /// The `if` filter as written.
    pub fn filter_text(&self) -> Option<&str> {
        self.filter.as_ref().map(|(t, _)| t.as_str())
    }

    /// Pauses or continues it (`enable_hist`/`disable_hist`).
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    /// Paused (`:pause`)?
    #[inline]
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// The line the `trigger` file and the `hist` header show (Linux's
    /// `event_hist_trigger_print`), with its newline.
    pub fn line(&self) -> String {
        let d = &self.core.data;
        let mut m = String::from(HIST_PREFIX);
        if let Some(n) = &d.name {
            let _ = write!(m, "{n}:");
        }
        d.print_fields(&mut m);
        let _ = write!(m, ":size={}", 1u32 << self.core.map.map_bits());
        if d.enable_timestamps {
            let _ = write!(m, ":clock={}", d.clock);
        }
        if d.no_hitcount {
            m.push_str(":nohitcount");
        }
        d.print_actions(&mut m);
        if let Some((text, _)) = &self.filter {
            let _ = write!(m, " if {text}");
        }
        m.push_str(if self.paused() { " [paused]" } else { " [active]" });
        m.push('\n');
        m
    }

    /// Does `spec` name this trigger (Linux's `hist_trigger_match`)?
    pub fn matches(&self, spec: &HistSpec, ignore_filter: bool) -> bool {
        if self.core.data.identity() != spec.data.identity() || self.core.data.name != spec.data.name {
            return false;
        }
        ignore_filter || self.filter.as_ref().map(|(t, _)| t.as_str()) == spec.filter.as_ref().map(|(t, _)| t.as_str())
    }

    /// The probe-context update (Linux's `event_hist_trigger`): the
    /// record's key finds or makes its element, whose sums and variables
    /// take the record's values. Nothing is allocated; a full table
    /// counts a drop. The caller has checked the `if` filter.
    pub fn event_hit<C: HistContext + ?Sized>(&self, rec: &[u8], ctx: &mut C) {
        if self.paused() {
            return;
        }
        let words = (self.core.data.key_size as usize / 8).min(KEY_WORDS_MAX);
        // Variable references read other tables with this key padded to
        // theirs: they get the full, zeroed, buffer.
        if words <= SMALL_KEY_WORDS && self.core.refs.is_empty() {
            let mut key = [0u64; SMALL_KEY_WORDS];
            self.hit(&mut key, words, &mut [], rec, ctx);
        } else {
            let mut key = [0u64; KEY_WORDS_MAX];
            let mut refs = [0u64; TRACING_MAP_VARS_MAX];
            self.hit(&mut key, words, &mut refs, rec, ctx);
        }
    }

    /// [`HistTrigger::event_hit`] with a zeroed `key` buffer of at least
    /// `words` words and room for the values of its variable references.
    #[inline(always)]
    fn hit<C: HistContext + ?Sized>(&self, key: &mut [u64], words: usize, refs: &mut [u64], rec: &[u8], ctx: &mut C) {
        let d = &self.core.data;
        for k in &d.keys {
            let w = (k.offset / 8) as usize;
            match &k.field.src {
                Source::Stacktrace => {
                    let mut st = [0u64; HIST_STACKTRACE_DEPTH];
                    let n = ctx.save_stack(&mut st).min(HIST_STACKTRACE_DEPTH);
                    for (i, a) in st.iter().take(n).enumerate() {
                        if let Some(slot) = key.get_mut(w + i) {
                            *slot = *a;
                        }
                    }
                }
                _ if k.field.is_string => copy_string_key(key, k, rec),
                _ => {
                    if let Some(slot) = key.get_mut(w) {
                        *slot = k.field.value(rec, ctx, d.ts_in_usecs, &[]);
                    }
                }
            }
        }
        let has_refs = !self.core.refs.is_empty();
        if has_refs && !self.resolve_var_refs(key, refs, false) {
            return;
        }
        let Some((elt, new)) = self.core.map.insert(key.get(..words).unwrap_or(&[])) else {
            return;
        };
        // The name is read only for a new entry of a table that shows it.
        if new && self.core.map.layout().comm {
            elt.set_comm(ctx.comm());
        }
        for (i, v) in d.vals.iter().enumerate() {
            elt.add_sum(i, v.value(rec, ctx, d.ts_in_usecs, refs));
        }
        for (i, v) in d.vars.iter().enumerate() {
            if let Some(Some((slot, words))) = d.var_stack_slots.get(i) {
                if v.is_string {
                    store_string(&elt, *slot, *words, string_bytes(v, rec));
                } else {
                    let mut st = [0u64; HIST_STACKTRACE_DEPTH];
                    let n = ctx.save_stack(&mut st).min(HIST_STACKTRACE_DEPTH);
                    for (j, a) in st.iter().enumerate() {
                        elt.set_extra(slot + j, if j < n { *a } else { 0 });
                    }
                }
                elt.set_var(i, elt.index() as u64);
                continue;
            }
            elt.set_var(i, v.value(rec, ctx, d.ts_in_usecs, refs));
        }
        if self.core.actions.is_empty() || !self.resolve_var_refs(key, refs, true) {
            return;
        }
        for a in &self.core.actions {
            self.run_action(a, &elt, key.get(..words).unwrap_or(&[]), rec, ctx, refs);
        }
    }

    /// Runs one action for a hit (Linux's `action_trace` and
    /// `ontrack_action`).
    fn run_action<C: HistContext + ?Sized>(
        &self,
        a: &Action,
        elt: &crate::map::Elt<'_>,
        key: &[u64],
        rec: &[u8],
        ctx: &mut C,
        refs: &[u64],
    ) {
        let d = &self.core.data;
        if let Handler::OnMatch { .. } = a.spec.handler {
            self.trace_synth(a, rec, ctx, refs);
            return;
        }
        let var_val = refs.get(a.track_ref).copied().unwrap_or(0);
        let track = elt.extra(a.track_slot);
        let onmax = a.spec.handler == Handler::OnMax;
        let check = |old: u64, new: u64| if onmax { new > old } else { new != old };
        if !check(track, var_val) {
            return;
        }
        elt.set_extra(a.track_slot, var_val);
        match a.spec.kind {
            ActionKind::Save => {
                for sv in &self.core.save {
                    if sv.field.is_string {
                        let b = string_bytes(&sv.field, rec);
                        for w in 0..sv.words {
                            let mut word = [0u8; 8];
                            for (j, c) in word.iter_mut().enumerate() {
                                let at = w * 8 + j;
                                // Keep a NUL at the end (strscpy).
                                if at + 1 < sv.words * 8 {
                                    *c = b.get(at).copied().unwrap_or(0);
                                }
                            }
                            let n = b.iter().position(|c| *c == 0).unwrap_or(b.len());
                            for (j, c) in word.iter_mut().enumerate() {
                                if w * 8 + j >= n {
                                    *c = 0;
                                }
                            }
                            elt.set_extra(sv.slot + w, u64::from_le_bytes(word));
                        }
                    } else {
                        elt.set_extra(sv.slot, sv.field.value(rec, ctx, d.ts_in_usecs, refs));
                    }
                }
            }
            ActionKind::Snapshot => {
                let Some(t) = &a.snapshot else {
                    return;
                };
                // cond_snapshot_update: against the last snapshot's value.
                if !check(t.track_val.load(Ordering::Relaxed), var_val) {
                    return;
                }
                t.track_val.store(var_val, Ordering::Relaxed);
                for (w, k) in t.key.iter().zip(key.iter().chain(core::iter::repeat(&0))) {
                    w.store(*k, Ordering::Relaxed);
                }
                t.updated.store(true, Ordering::Release);
                ctx.snapshot();
            }
            ActionKind::Trace => self.trace_synth(a, rec, ctx, refs),
        }
    }

    /// Generates the action's synthetic event (Linux's `trace_synth`).
    fn trace_synth<C: HistContext + ?Sized>(&self, a: &Action, rec: &[u8], ctx: &mut C, refs: &[u64]) {
        let Some(synth) = &a.synth else {
            return;
        };
        let d = &self.core.data;
        // Stacks and strings are copied out of the elements holding them
        // first.
        let mut stacks = [[0u64; STORED_WORDS_MAX]; SYNTH_STACKS_MAX];
        let mut strs = [[0u8; STORED_WORDS_MAX * 8]; SYNTH_STACKS_MAX];
        let mut stack_of_arg = [usize::MAX; trace_probe::synth::SYNTH_FIELDS_MAX];
        let mut n_stacks = 0;
        for (k, arg) in a.args.iter().enumerate() {
            let ActionArg::Ref(i) = arg else {
                continue;
            };
            let Some(r) = self.core.refs.get(*i).filter(|r| r.meta.is_stack || r.meta.is_string) else {
                continue;
            };
            let (Some(out), Some(mark)) = (stacks.get_mut(n_stacks), stack_of_arg.get_mut(k)) else {
                continue;
            };
            let target = match &r.target {
                RefTarget::Own => &self.core,
                RefTarget::Other(h) => h.core(),
            };
            if stack_of(target, r.var_idx, refs.get(*i).copied().unwrap_or(0), out, 0) {
                if let Some(s) = strs.get_mut(n_stacks) {
                    for (b, w) in s.chunks_exact_mut(8).zip(out.iter()) {
                        b.copy_from_slice(&w.to_le_bytes());
                    }
                }
                *mark = n_stacks;
                n_stacks += 1;
            }
        }
        let mut vals = [SynthArg::Num(0); trace_probe::synth::SYNTH_FIELDS_MAX];
        for (k, (slot, arg)) in vals.iter_mut().zip(&a.args).enumerate() {
            *slot = match arg {
                ActionArg::Ref(i) if stack_of_arg.get(k).is_some_and(|m| *m != usize::MAX) => {
                    let m = stack_of_arg.get(k).copied().unwrap_or(0);
                    if self.core.refs.get(*i).is_some_and(|r| r.meta.is_string) {
                        SynthArg::Str(strs.get(m).map_or(&[][..], |s| &s[..]))
                    } else {
                        SynthArg::Stack(
                            stacks
                                .get(m)
                                .map_or(&[][..], |s| s.get(..HIST_STACKTRACE_DEPTH).unwrap_or(&[])),
                        )
                    }
                }
                ActionArg::Ref(i) => SynthArg::Num(refs.get(*i).copied().unwrap_or(0)),
                ActionArg::Field(f) if f.is_string => SynthArg::Str(string_bytes(f, rec)),
                ActionArg::Field(f) => SynthArg::Num(f.value(rec, ctx, d.ts_in_usecs, refs)),
            };
        }
        synth.trace(vals.get(..a.args.len()).unwrap_or(&[]));
    }
}

/// Most stack traces and string variables one synthetic event carries.
const SYNTH_STACKS_MAX: usize = 4;

/// The words of a stored string variable at most (Linux's
/// `STR_VAR_LEN_MAX`, 256 bytes).
const STORED_WORDS_MAX: usize = 32;

/// Stores a string variable's bytes in the element, NUL-terminated
/// within `words` words (strscpy).
fn store_string(elt: &crate::map::Elt<'_>, slot: usize, words: usize, s: &[u8]) {
    let n = s
        .iter()
        .position(|c| *c == 0)
        .unwrap_or(s.len())
        .min((words * 8).saturating_sub(1));
    for w in 0..words {
        let mut b = [0u8; 8];
        for (j, c) in b.iter_mut().enumerate() {
            if w * 8 + j < n {
                *c = s.get(w * 8 + j).copied().unwrap_or(0);
            }
        }
        elt.set_extra(slot + w, u64::from_le_bytes(b));
    }
}

/// Copies the stack that variable `var_idx` of `core` holds, `value`
/// being the variable's value (the index of the element holding it),
/// following aliases (`s=$st`) to the variable itself.
fn stack_of(core: &HistCore, var_idx: usize, value: u64, out: &mut [u64; STORED_WORDS_MAX], depth: u32) -> bool {
    if depth > 4 {
        return false;
    }
    if let Some(Some((slot, words))) = core.data.var_stack_slots.get(var_idx) {
        let Some(elt) = usize::try_from(value).ok().and_then(|i| core.map.elt_at(i)) else {
            return false;
        };
        for (j, w) in out.iter_mut().enumerate() {
            *w = if j < *words { elt.extra(slot + j) } else { 0 };
        }
        return true;
    }
    let Some(Source::VarRef { idx, .. }) = core.data.vars.get(var_idx).map(|v| &v.src) else {
        return false;
    };
    let Some(r) = core.refs.get(*idx) else {
        return false;
    };
    let target = match &r.target {
        RefTarget::Own => core,
        RefTarget::Other(h) => h.core(),
    };
    stack_of(target, r.var_idx, value, out, depth + 1)
}

/// The bytes of a string field of the record.
fn string_bytes<'r>(f: &HistField, rec: &'r [u8]) -> &'r [u8] {
    let Some((offset, size, kind)) = f.string_field() else {
        return &[];
    };
    let off = offset as usize;
    match kind {
        FieldKind::StaticString => rec.get(off..off + size as usize).unwrap_or(&[]),
        FieldKind::DynString | FieldKind::RelDynString => {
            let item = crate::field::read_num(rec, offset, 4, false) as usize;
            let (loc, len) = (item & 0xffff, item >> 16);
            let base = if kind == FieldKind::RelDynString { off + 4 } else { 0 };
            rec.get(base + loc..base + loc + len).unwrap_or(&[])
        }
        _ => &[],
    }
}

/// Copies a string field of the record into its place in the key, NUL
/// padded, at most its room minus one byte (Linux's `add_to_key`).
fn copy_string_key(key: &mut [u64], k: &KeyField, rec: &[u8]) {
    let Some((offset, size, kind)) = k.field.string_field() else {
        return;
    };
    let off = offset as usize;
    let src: &[u8] = match kind {
        FieldKind::StaticString => rec.get(off..off + size as usize).unwrap_or(&[]),
        FieldKind::DynString | FieldKind::RelDynString => {
            let item = crate::field::read_num(rec, offset, 4, false) as usize;
            let (loc, len) = (item & 0xffff, item >> 16);
            let base = if kind == FieldKind::RelDynString { off + 4 } else { 0 };
            rec.get(base + loc..base + loc + len).unwrap_or(&[])
        }
        _ => &[],
    };
    let room = (k.size as usize).saturating_sub(1);
    let start = k.offset as usize;
    for (i, &c) in src.iter().take(room).take_while(|c| **c != 0).enumerate() {
        let at = start + i;
        if let Some(w) = key.get_mut(at / 8) {
            *w |= u64::from(c) << (8 * (at % 8));
        }
    }
}

/// The histograms that have a `name=`, shared between events.
#[derive(Debug, Default)]
pub struct NamedHists {
    named: Vec<(String, Weak<HistCore>)>,
}

impl NamedHists {
    /// None yet.
    pub const fn new() -> NamedHists {
        NamedHists { named: Vec::new() }
    }

    fn find(&mut self, name: &str) -> Option<Arc<HistCore>> {
        self.named.retain(|(_, w)| w.strong_count() > 0);
        self.named
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, w)| w.upgrade())
    }
}

/// What a write did.
#[derive(Debug)]
pub enum HistChange {
    /// A trigger was added (the event's first hist trigger if `first`).
    Added,
    /// This trigger was removed.
    Removed(Arc<HistTrigger>),
    /// An existing trigger was paused, continued or cleared, or a removal
    /// found nothing.
    Updated,
}

/// The hist triggers of one event, in the order they were added.
#[derive(Debug, Default)]
pub struct HistList {
    hists: Vec<Arc<HistTrigger>>,
}

impl HistList {
    /// None.
    pub const fn new() -> HistList {
        HistList { hists: Vec::new() }
    }

    /// The triggers, oldest first.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &Arc<HistTrigger>> {
        self.hists.iter()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.hists.is_empty()
    }

    /// Removes them all.
    pub fn clear(&mut self) -> Vec<Arc<HistTrigger>> {
        core::mem::take(&mut self.hists)
    }

    /// Applies a parsed command: `remove` for `!hist:...`. As Linux's
    /// `event_hist_trigger_parse` with `hist_register_trigger`.
    pub fn apply(&mut self, spec: HistSpec, remove: bool, named: &mut NamedHists) -> Result<HistChange, HistError> {
        let named_core = spec.data.name.as_deref().and_then(|n| named.find(n));
        if remove {
            let Some(i) = self.hists.iter().position(|t| t.matches(&spec, false)) else {
                return Ok(HistChange::Updated);
            };
            // Linux's hist_trigger_check_refs: another trigger reads its
            // variables.
            if self.hists.get(i).is_some_and(|t| t.core.is_referenced()) {
                return Err(Errno::EBUSY.into());
            }
            return Ok(HistChange::Removed(self.hists.remove(i)));
        }
        if spec.pause || spec.cont || spec.clear {
            let named_ok = match (&spec.data.name, &named_core) {
                (None, _) => true,
                (Some(_), Some(c)) => c.data.identity() == spec.data.identity(),
                (Some(_), None) => false,
            };
            if named_ok {
                if let Some(t) = self.hists.iter().find(|t| t.matches(&spec, false)) {
                    if spec.pause {
                        t.paused.store(true, Ordering::Relaxed);
                    } else if spec.cont {
                        t.paused.store(false, Ordering::Relaxed);
                    } else {
                        t.core.map.clear();
                    }
                    return Ok(HistChange::Updated);
                }
            }
        }
        if let Some(core) = &named_core {
            if core.data.identity() != spec.data.identity() {
                return Err(HistError::logged(Errno::EINVAL, HistErr::NamedMismatch, spec.name_pos));
            }
        }
        if self.hists.iter().any(|t| t.matches(&spec, false)) {
            return Err(HistError::logged(Errno::EEXIST, HistErr::TriggerEexist, 0));
        }
        if spec.cont || spec.clear {
            return Err(HistError::logged(Errno::ENOENT, HistErr::TriggerEnoentClear, 0));
        }
        let t = match named_core {
            Some(core) => HistTrigger {
                core,
                filter: spec.filter,
                paused: AtomicBool::new(spec.pause),
            },
            None => {
                let name = spec.data.name.clone();
                let t = HistTrigger::new(spec)?;
                if let Some(n) = name {
                    named.named.push((n, Arc::downgrade(&t.core)));
                }
                t
            }
        };
        self.hists.push(Arc::new(t));
        Ok(HistChange::Added)
    }
}

/// Splits a `trigger` write into `(remove, param_and_filter)` when it is a
/// hist command (`hist`, `hist:...`, `!hist:...`): Linux's
/// `event_trigger_regex_write` with `trigger_process_regex`.
pub fn hist_command(buf: &[u8]) -> Option<(bool, String)> {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    let text = String::from_utf8_lossy(buf.get(..end).unwrap_or(&[]));
    let text = trim_space(&text);
    let (glob, rest) = match text.find([':', ' ', '\t']) {
        Some(i) => (text.get(..i)?, trim_space(text.get(i + 1..).unwrap_or(""))),
        None => (text, ""),
    };
    let remove = glob.starts_with('!');
    let name = glob.strip_prefix('!').unwrap_or(glob);
    (name == "hist").then(|| (remove, String::from(rest)))
}

#[cfg(test)]
mod tests;
