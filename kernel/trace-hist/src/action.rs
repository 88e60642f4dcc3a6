//! Hist trigger actions, as Linux 6.12's trace_events_hist.c:
//!
//! ```text
//! onmatch(system.event).trace(synth,param[,...])  or  .synth(param[,...])
//! onmax($var).save(field[,...])  .snapshot()  .trace(synth,...)
//! onchange($var).save(field[,...])  .snapshot()  .trace(synth,...)
//! ```
//!
//! `parse_action` is Linux's `onmatch_parse`/`track_data_parse` (the
//! grammar, checked before the trigger's fields), `create_action` its
//! `action_create`/`track_data_create` (variables, synthetic event,
//! parameter types, saved fields). The hit path runs them from
//! [`crate::hist::HistTrigger::event_hit`].

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicBool, AtomicU64};

use trace_probe::synth::{SynthField, STR_VAR_LEN_MAX, SYNTH_FIELDS_MAX};
use uapi::Errno;

use crate::field::HistField;
use crate::field::{parse_expr, ParseEnv, Role};
use crate::vars::{create_var_ref, find_event_var, var_meta, RefMeta, SynthTarget};
use crate::{HistErr, HistError};

/// When an action runs (Linux's `handler_id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Handler {
    /// `onmatch(system.event)`: on every hit whose references resolve.
    OnMatch {
        /// The matched event's system.
        system: String,
        /// Its name.
        event: String,
    },
    /// `onmax($var)`: when the variable exceeds its element's maximum.
    OnMax,
    /// `onchange($var)`: when the variable differs from its last value.
    OnChange,
}

/// What an action does (Linux's `action_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    /// Generate a synthetic event.
    Trace,
    /// Save fields of the event in the element.
    Save,
    /// Take a snapshot of the trace buffer.
    Snapshot,
}

/// One parsed action (Linux's `action_data` before `action_create`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionSpec {
    /// When.
    pub handler: Handler,
    /// What.
    pub kind: ActionKind,
    /// `trace`, `save`, `snapshot` or the synthetic event's name.
    pub action_name: String,
    /// `onmax(X)`/`onchange(X)`: X as written.
    pub var_str: String,
    /// `.trace(NAME,...)`: NAME.
    pub synth_name: Option<String>,
    /// The parameters as written.
    pub params: Vec<String>,
}

/// Where a synthetic event parameter comes from.
#[derive(Debug)]
pub enum ActionArg {
    /// A variable reference's resolved value.
    Ref(usize),
    /// A field of the event being hit (Linux's field variable).
    Field(HistField),
}

/// A field `save()` keeps in the element.
#[derive(Debug)]
pub struct SaveField {
    /// The field (its name is the saved variable's).
    pub field: HistField,
    /// First scratch word in the element.
    pub slot: usize,
    /// Words it takes.
    pub words: usize,
}

/// The last snapshot an `onmax`/`onchange` `snapshot()` took (Linux's
/// `track_data` of the conditional snapshot).
#[derive(Debug, Default)]
pub struct SnapshotTrack {
    /// Taken at least once.
    pub updated: AtomicBool,
    /// The value that triggered it.
    pub track_val: AtomicU64,
    /// The key of the element it came from.
    pub key: Vec<AtomicU64>,
}

/// A compiled action.
#[derive(Debug)]
pub struct Action {
    /// As written.
    pub spec: ActionSpec,
    /// `onmax`/`onchange`: the reference to the tracked variable.
    pub track_ref: usize,
    /// `onmax`/`onchange`: the scratch word holding the tracked value.
    pub track_slot: usize,
    /// `trace`: the event and its parameters.
    pub synth: Option<Arc<dyn SynthTarget>>,
    /// `trace`: one per synthetic field.
    pub args: Vec<ActionArg>,
    /// `snapshot`: the last one.
    pub snapshot: Option<SnapshotTrack>,
}

/// Linux's `parse_action_params`.
fn parse_params(env: &ParseEnv<'_>, params: &str, spec: &mut ActionSpec, trace_kw: bool) -> Result<(), HistError> {
    let mut first = true;
    for p in params.split(',') {
        if spec.params.len() >= SYNTH_FIELDS_MAX {
            return Err(HistError::logged(Errno::EINVAL, HistErr::TooManyParams, 0));
        }
        let p = p.trim_matches(|c: char| c.is_ascii_whitespace());
        if p.len() < 2 {
            return Err(env.err(Errno::EINVAL, HistErr::InvalidParam, p));
        }
        if first && trace_kw {
            spec.synth_name = Some(String::from(p));
            first = false;
            continue;
        }
        first = false;
        spec.params.push(String::from(p));
    }
    Ok(())
}

/// Linux's `action_parse`: `.NAME(PARAMS)` after the handler.
fn action_parse(env: &ParseEnv<'_>, s: &str, handler: Handler, var_str: String) -> Result<ActionSpec, HistError> {
    let not_found = || HistError::logged(Errno::EINVAL, HistErr::ActionNotFound, 0);
    let Some((_, rest)) = s.split_once('.') else {
        return Err(not_found());
    };
    let Some((name, rest)) = rest.split_once('(') else {
        return Err(not_found());
    };
    let params = rest.split(')').next().unwrap_or("");
    let mut spec = ActionSpec {
        handler,
        kind: ActionKind::Trace,
        action_name: String::from(name),
        var_str,
        synth_name: None,
        params: Vec::new(),
    };
    let onmatch = matches!(spec.handler, Handler::OnMatch { .. });
    if name.starts_with("save") {
        parse_params(env, params, &mut spec, false)?;
        if onmatch {
            return Err(env.err(Errno::EINVAL, HistErr::ActionMismatch, name));
        }
        spec.kind = ActionKind::Save;
    } else if name.starts_with("snapshot") {
        if !rest.contains(')') {
            return Err(env.err(Errno::EINVAL, HistErr::NoClosingParen, params));
        }
        if onmatch {
            return Err(env.err(Errno::EINVAL, HistErr::ActionMismatch, name));
        }
        spec.kind = ActionKind::Snapshot;
    } else {
        let trace_kw = name.starts_with("trace");
        if !params.is_empty() || rest.contains(')') {
            parse_params(env, params, &mut spec, trace_kw)?;
        }
    }
    Ok(spec)
}

/// Linux's `onmatch_parse` and `track_data_parse` for one
/// `onmatch(...)`/`onmax(...)`/`onchange(...)` string.
pub(crate) fn parse_action(env: &ParseEnv<'_>, s: &str) -> Result<ActionSpec, HistError> {
    if let Some(rest) = s.strip_prefix("onmatch(") {
        let Some((ev, after)) = rest.split_once(')') else {
            return Err(env.err(Errno::EINVAL, HistErr::NoClosingParen, rest));
        };
        let Some((system, event)) = ev.split_once('.') else {
            return Err(env.err(Errno::EINVAL, HistErr::SubsysNotFound, ev));
        };
        if !(env.links.event_exists)(system, event) {
            return Err(env.err(Errno::EINVAL, HistErr::InvalidSubsysEvent, event));
        }
        let handler = Handler::OnMatch {
            system: String::from(system),
            event: String::from(event),
        };
        return action_parse(env, after, handler, String::new());
    }
    let (handler, rest) = if let Some(r) = s.strip_prefix("onmax(") {
        (Handler::OnMax, r)
    } else if let Some(r) = s.strip_prefix("onchange(") {
        (Handler::OnChange, r)
    } else {
        return Err(Errno::EINVAL.into());
    };
    let Some((var, after)) = rest.split_once(')') else {
        return Err(Errno::EINVAL.into());
    };
    action_parse(env, after, handler, String::from(var))
}

/// Linux's `check_synth_field`: may this value fill that field?
fn check_synth_field(f: &SynthField, meta: &RefMeta) -> bool {
    // A dynamic string takes any string.
    if meta.type_name.contains("char[") && f.is_string && f.is_dynamic {
        return true;
    }
    if meta.is_stack != f.is_stack {
        return false;
    }
    if f.is_stack {
        return true;
    }
    f.type_name == meta.type_name || (meta.size as usize == f.size && (f.is_string || f.is_signed == meta.is_signed))
}

/// What [`create_action`] needs of the trigger being made.
pub(crate) struct ActionEnv<'a> {
    /// The trigger's variables (name, shape).
    pub vars: &'a [HistField],
    /// Scratch words taken so far in each element.
    pub extra_words: usize,
    /// Key words (for a snapshot's saved key).
    pub key_words: usize,
    /// Save fields made so far (Linux allows one `save()`).
    pub save: Vec<SaveField>,
    /// The trigger's keys.
    pub keys: &'a [crate::hist::KeyField],
    /// Triggers made on other events for their fields (system, event,
    /// command), removed with this one.
    pub field_var_hists: Vec<(String, String, String)>,
}

fn own_var(aenv: &ActionEnv<'_>, name: &str) -> Option<(usize, RefMeta)> {
    let i = aenv.vars.iter().position(|v| v.var_name.as_deref() == Some(name))?;
    let v = aenv.vars.get(i)?;
    Some((
        i,
        RefMeta {
            size: v.size,
            is_signed: v.is_signed,
            usecs: v.usecs,
            is_string: v.is_string,
            is_stack: v.is_stack,
            type_name: v.type_name.clone(),
        },
    ))
}

/// Linux's `find_target_event_var`: a variable of this trigger, `system`
/// and `event` (if given) naming its event.
fn find_target_event_var(
    env: &ParseEnv<'_>,
    aenv: &ActionEnv<'_>,
    qual: Option<(&str, &str)>,
    name: &str,
) -> Option<(usize, RefMeta)> {
    if let Some((s, e)) = qual {
        if s != env.links.system || e != env.links.event {
            return None;
        }
    }
    own_var(aenv, name)
}

/// A field variable: a field of this event, read when the action runs
/// (Linux's `create_target_field_var`). `None` if not a field here.
fn create_field_var(env: &mut ParseEnv<'_>, qual: Option<(&str, &str)>, name: &str) -> Option<HistField> {
    if let Some((s, e)) = qual {
        if s != env.links.system || e != env.links.event {
            return None;
        }
    }
    let mut n = 0;
    parse_expr(env, name, Role::Var, None, &mut n).ok()
}

/// A field variable's shape: Linux's `create_var` keeps the field's size
/// and type but not its signedness.
fn field_meta(f: &HistField) -> RefMeta {
    RefMeta {
        size: f.size,
        is_signed: false,
        usecs: f.usecs,
        is_string: f.is_string,
        is_stack: f.is_stack,
        type_name: f.type_name.clone(),
    }
}

/// Linux's `create_field_var_hist`: a variable `synthetic_FIELD` for
/// `field` of `system/event`, in a trigger made there with the keys and
/// filter of its first histogram whose keys match this trigger's.
fn create_field_var_hist(
    env: &mut ParseEnv<'_>,
    aenv: &mut ActionEnv<'_>,
    system: &str,
    event: &str,
    field: &str,
) -> Result<(Arc<crate::hist::HistCore>, usize), HistError> {
    if !(env.links.event_exists)(system, event) {
        return Err(env.err(Errno::EINVAL, HistErr::EventFileNotFound, field));
    }
    let compatible = |c: &crate::hist::HistCore| {
        c.data.keys.len() == aenv.keys.len()
            && c.data.keys.iter().zip(aenv.keys).all(|(a, b)| {
                a.field.type_name == b.field.type_name
                    && a.field.size == b.field.size
                    && a.field.is_signed == b.field.is_signed
            })
    };
    let Some((hist, filter)) = env
        .links
        .vars
        .event_hists(system, event)
        .into_iter()
        .find(|(c, _)| compatible(c))
    else {
        return Err(env.err(Errno::EINVAL, HistErr::HistNotFound, field));
    };
    let var = alloc::format!("synthetic_{field}");
    if let Some(found) = find_event_var(env, Some((system, event)), &var) {
        return Ok(found);
    }
    let mut cmd = String::from("keys=");
    for (i, k) in hist.data.keys.iter().enumerate() {
        if i > 0 {
            cmd.push(',');
        }
        k.field.expr_operand_str(&mut cmd);
    }
    let _ = write!(cmd, ":{var}={field}");
    if let Some(f) = filter {
        let _ = write!(cmd, " if {f}");
    }
    let core = (env.links.create_hist)(system, event, &cmd)
        .map_err(|_| env.err(Errno::EINVAL, HistErr::HistCreateFail, field))?;
    aenv.field_var_hists
        .push((String::from(system), String::from(event), cmd));
    match core.var_index(&var) {
        Some(i) => Ok((core, i)),
        None => Err(env.err(Errno::EINVAL, HistErr::SynthVarNotFound, field)),
    }
}

/// Linux's `trace_action_create`.
fn trace_action_create(
    env: &mut ParseEnv<'_>,
    aenv: &mut ActionEnv<'_>,
    spec: &ActionSpec,
) -> Result<(Arc<dyn SynthTarget>, Vec<ActionArg>), HistError> {
    let name = spec.synth_name.as_deref().unwrap_or(&spec.action_name);
    let Some(synth) = (env.links.find_synth)(name) else {
        return Err(env.err(Errno::EINVAL, HistErr::SynthEventNotFound, name));
    };
    let fields: Vec<SynthField> = synth.fields().to_vec();
    let mut args = Vec::new();
    for p in &spec.params {
        // [system.event.]param
        let mut it = p.splitn(3, '.');
        let (qual, param) = match (it.next(), it.next(), it.next()) {
            (Some(s), Some(e), Some(v)) => (Some((s, e)), v),
            (Some(_), Some(_), None) => return Err(Errno::EINVAL.into()),
            _ => (None, p.as_str()),
        };
        let (arg, meta) = if let Some(var) = param.strip_prefix('$') {
            if let Some((idx, meta)) = find_target_event_var(env, aenv, qual, var) {
                let r = create_var_ref(env, None, idx, meta.clone()).ok_or(Errno::ENOMEM)?;
                (ActionArg::Ref(r), meta)
            } else {
                let q = match (&qual, &spec.handler) {
                    (None, Handler::OnMatch { system, event }) => Some((system.clone(), event.clone())),
                    (Some((s, e)), _) => Some((String::from(*s), String::from(*e))),
                    _ => None,
                };
                let found = find_event_var(env, q.as_ref().map(|(s, e)| (s.as_str(), e.as_str())), var);
                let Some((core, idx)) = found else {
                    return Err(env.err(Errno::EINVAL, HistErr::ParamNotFound, var));
                };
                let meta = var_meta(&core, idx);
                let r = create_var_ref(env, Some(core), idx, meta.clone()).ok_or(Errno::ENOMEM)?;
                (ActionArg::Ref(r), meta)
            }
        } else {
            match create_field_var(env, qual, param) {
                Some(f) => {
                    let meta = field_meta(&f);
                    (ActionArg::Field(f), meta)
                }
                // A field of another event (the matched one unless
                // qualified): a trigger there gets a variable for it.
                None => {
                    let target = match (&qual, &spec.handler) {
                        (Some((s, e)), _) => Some((String::from(*s), String::from(*e))),
                        (None, Handler::OnMatch { system, event }) => Some((system.clone(), event.clone())),
                        _ => None,
                    };
                    let own = |(s, e): &(String, String)| s == env.links.system && e == env.links.event;
                    let Some(target) = target.filter(|t| !own(t)) else {
                        return Err(env.err(Errno::EINVAL, HistErr::FieldVarCreateFail, param));
                    };
                    let (core, idx) = create_field_var_hist(env, aenv, &target.0, &target.1, param)?;
                    let meta = var_meta(&core, idx);
                    let r = create_var_ref(env, Some(core), idx, meta.clone()).ok_or(Errno::ENOMEM)?;
                    (ActionArg::Ref(r), meta)
                }
            }
        };
        let ok = fields.get(args.len()).is_some_and(|f| check_synth_field(f, &meta));
        if !ok {
            return Err(env.err(Errno::EINVAL, HistErr::SynthTypeMismatch, param));
        }
        args.push(arg);
    }
    if args.len() != fields.len() {
        return Err(env.err(Errno::EINVAL, HistErr::SynthCountMismatch, synth.name()));
    }
    Ok((synth, args))
}

/// Linux's `action_create` (with `track_data_create` for `onmax` and
/// `onchange`): resolves what the action names.
pub(crate) fn create_action(
    env: &mut ParseEnv<'_>,
    aenv: &mut ActionEnv<'_>,
    spec: ActionSpec,
) -> Result<Action, HistError> {
    let mut action = Action {
        spec,
        track_ref: 0,
        track_slot: 0,
        synth: None,
        args: Vec::new(),
        snapshot: None,
    };
    let spec = &action.spec;
    if !matches!(spec.handler, Handler::OnMatch { .. }) {
        let Some(var) = spec.var_str.strip_prefix('$') else {
            return Err(env.err(Errno::EINVAL, HistErr::OnxNotVar, &spec.var_str));
        };
        let Some((idx, meta)) = own_var(aenv, var) else {
            return Err(env.err(Errno::EINVAL, HistErr::OnxVarNotFound, var));
        };
        action.track_ref = create_var_ref(env, None, idx, meta).ok_or(Errno::ENOMEM)?;
        action.track_slot = aenv.extra_words;
        aenv.extra_words += 1;
    }
    match spec.kind {
        ActionKind::Trace => {
            let (synth, args) = trace_action_create(env, aenv, &action.spec)?;
            action.synth = Some(synth);
            action.args = args;
        }
        ActionKind::Snapshot => {
            let mut key = Vec::new();
            key.resize_with(aenv.key_words, || AtomicU64::new(0));
            action.snapshot = Some(SnapshotTrack {
                key,
                ..SnapshotTrack::default()
            });
        }
        ActionKind::Save => {
            if !aenv.save.is_empty() {
                return Err(HistError::logged(Errno::EEXIST, HistErr::TooManySaveActions, 0));
            }
            for p in &action.spec.params {
                let mut n = 0;
                let field = match parse_expr(env, p, Role::Var, None, &mut n) {
                    Ok(f) => f,
                    Err(mut e) => {
                        // Linux logs the field's own error, that the field
                        // variable could not be parsed, then created.
                        e.first.extend(e.log.take());
                        let pos = env.errpos(p);
                        for err in [HistErr::FieldVarParseFail, HistErr::FieldVarCreateFail] {
                            e.first.push(uapi::error::CmdError::new(Errno::EINVAL, err.text(), pos));
                        }
                        e.log = e.first.pop();
                        return Err(e);
                    }
                };
                let words = if field.is_string {
                    (field.size as usize).min(STR_VAR_LEN_MAX).div_ceil(8)
                } else {
                    1
                };
                aenv.save.push(SaveField {
                    field,
                    slot: aenv.extra_words,
                    words,
                });
                aenv.extra_words += words;
            }
        }
    }
    Ok(action)
}

impl ActionSpec {
    /// Appends the action as the trigger's line shows it (Linux's
    /// `print_actions_spec`); `save` lists the saved fields' names.
    pub fn print_names(&self, out: &mut String, save: &[String]) {
        match &self.handler {
            Handler::OnMatch { system, event } => {
                let _ = write!(out, ":onmatch({system}.{event}).{}(", self.action_name);
            }
            Handler::OnMax | Handler::OnChange => {
                let h = if self.handler == Handler::OnMax {
                    "onmax"
                } else {
                    "onchange"
                };
                let _ = write!(out, ":{h}({}).{}(", self.var_str, self.action_name);
            }
        }
        match self.kind {
            ActionKind::Save => {
                for (i, s) in save.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(s);
                }
            }
            ActionKind::Trace => {
                if let Some(n) = &self.synth_name {
                    out.push_str(n);
                }
                for (i, p) in self.params.iter().enumerate() {
                    if i > 0 || self.synth_name.is_some() {
                        out.push(',');
                    }
                    out.push_str(p);
                }
            }
            ActionKind::Snapshot => {}
        }
        out.push(')');
    }
}

#[cfg(test)]
mod tests;
