//! What links hist triggers to each other and to synthetic events, as
//! Linux's trace_events_hist.c: variables one trigger defines and
//! another reads (`$ts0`, `sched.sched_wakeup.$ts0`), found through
//! [`HistVarRegistry`] (Linux's `tr->hist_vars` and each file's trigger
//! list), and the synthetic events actions feed ([`SynthTarget`]).

use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use trace_probe::synth::SynthField;
use uapi::error::CmdError;
use uapi::Errno;

use crate::field::ParseEnv;
use crate::hist::HistCore;
use crate::HistErr;

/// A value an action hands to a synthetic event field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynthArg<'a> {
    /// A number.
    Num(u64),
    /// A string's bytes (up to a NUL or the slice's end).
    Str(&'a [u8]),
    /// A stack trace's return addresses (up to a 0).
    Stack(&'a [u64]),
}

/// A synthetic event an action generates (`onmatch(...).trace(NAME,...)`).
/// The kernel implements it over its synthetic events; holding one keeps
/// the event from being removed (Linux's `synth_event->ref`).
pub trait SynthTarget: Send + Sync + core::fmt::Debug {
    /// The event's name.
    fn name(&self) -> &str;
    /// Its fields, in order.
    fn fields(&self) -> &[SynthField];
    /// Records one event with these values, one per field (probe
    /// context: no allocation, no sleeping).
    fn trace(&self, vals: &[SynthArg<'_>]);
}

/// What a hist command may refer to beyond its own event.
pub struct HistLinks<'a> {
    /// The event the trigger is written to.
    pub system: &'a str,
    /// Its name.
    pub event: &'a str,
    /// The hist triggers of every event.
    pub vars: &'a HistVarRegistry,
    /// Does `system/event` exist (for `onmatch(system.event)`)?
    pub event_exists: &'a dyn Fn(&str, &str) -> bool,
    /// The synthetic event of that name.
    pub find_synth: &'a dyn Fn(&str) -> Option<Arc<dyn SynthTarget>>,
    /// The C type of this event's field of that name.
    pub field_type: &'a dyn Fn(&str) -> Option<String>,
    /// Adds hist trigger `cmd` (what follows `hist:`) to `system/event`
    /// and hands back its histogram (Linux's `create_field_var_hist`
    /// making a trigger for a field of another event).
    pub create_hist: &'a CreateHist<'a>,
}

/// `(system, event, command)` to the new trigger's histogram.
pub type CreateHist<'a> = dyn Fn(&str, &str, &str) -> Result<Arc<HistCore>, Errno> + 'a;

fn no_event(_: &str, _: &str) -> bool {
    false
}

fn no_synth(_: &str) -> Option<Arc<dyn SynthTarget>> {
    None
}

fn no_type(_: &str) -> Option<String> {
    None
}

fn no_create(_: &str, _: &str, _: &str) -> Result<Arc<HistCore>, Errno> {
    Err(Errno::ENOENT)
}

/// An empty registry for [`HistLinks::standalone`].
static EMPTY: HistVarRegistry = HistVarRegistry::new();

impl HistLinks<'static> {
    /// A trigger on its own: no other events, triggers or synthetic
    /// events.
    pub fn standalone() -> HistLinks<'static> {
        HistLinks {
            system: "",
            event: "",
            vars: &EMPTY,
            event_exists: &no_event,
            find_synth: &no_synth,
            field_type: &no_type,
            create_hist: &no_create,
        }
    }
}

/// The hist triggers of all events, in the order they were added, for
/// finding variables by name (Linux's `find_var_file` and
/// `find_file_var`).
#[derive(Clone, Debug, Default)]
pub struct HistVarRegistry {
    entries: Vec<(String, String, Weak<HistCore>, Option<String>)>,
}

impl HistVarRegistry {
    /// None.
    pub const fn new() -> HistVarRegistry {
        HistVarRegistry { entries: Vec::new() }
    }

    /// A trigger's histogram was added to `system/event`, with its `if`
    /// filter.
    pub fn register(&mut self, system: &str, event: &str, core: &Arc<HistCore>, filter: Option<&str>) {
        self.entries.retain(|(_, _, w, _)| w.strong_count() > 0);
        if !self
            .entries
            .iter()
            .any(|(_, _, w, _)| Weak::ptr_eq(w, &Arc::downgrade(core)))
        {
            self.entries.push((
                String::from(system),
                String::from(event),
                Arc::downgrade(core),
                filter.map(String::from),
            ));
        }
    }

    /// The histograms of `system/event`, oldest first, with their
    /// filters.
    pub(crate) fn event_hists(&self, system: &str, event: &str) -> Vec<(Arc<HistCore>, Option<String>)> {
        self.entries
            .iter()
            .filter(|(s, e, _, _)| s == system && e == event)
            .filter_map(|(_, _, w, f)| Some((w.upgrade()?, f.clone())))
            .collect()
    }

    /// No live trigger is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(|(_, _, w, _)| w.strong_count() == 0)
    }

    /// A histogram's trigger went away.
    pub fn unregister(&mut self, core: &Arc<HistCore>) {
        let w = Arc::downgrade(core);
        self.entries
            .retain(|(_, _, x, _)| x.strong_count() > 0 && !Weak::ptr_eq(x, &w));
    }

    /// Linux's `find_var_file`: the event holding `name`, given or the
    /// only one that has it (`Err` when two have it).
    fn find_var_file(&self, qual: Option<(&str, &str)>, name: &str) -> Result<Option<(String, String)>, ()> {
        if let Some((s, e)) = qual {
            return Ok(Some((String::from(s), String::from(e))));
        }
        let mut found: Option<(String, String)> = None;
        for (s, e, w, _) in &self.entries {
            if found.as_ref().is_some_and(|(fs, fe)| fs == s && fe == e) {
                continue;
            }
            let Some(core) = w.upgrade() else {
                continue;
            };
            if core.var_index(name).is_some() {
                if found.is_some() {
                    return Err(());
                }
                found = Some((s.clone(), e.clone()));
            }
        }
        Ok(found)
    }

    /// Linux's `find_file_var`: the first trigger of `system/event` with
    /// a variable `name`, and that variable's index.
    pub fn find_file_var(&self, system: &str, event: &str, name: &str) -> Option<(Arc<HistCore>, usize)> {
        self.entries
            .iter()
            .filter(|(s, e, _, _)| s == system && e == event)
            .filter_map(|(_, _, w, _)| w.upgrade())
            .find_map(|c| c.var_index(name).map(|i| (c, i)))
    }
}

/// What a reference reads: the variable's shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefMeta {
    /// Bytes.
    pub size: u32,
    /// Signed.
    pub is_signed: bool,
    /// Microsecond timestamps.
    pub usecs: bool,
    /// A string (its value cannot be carried).
    pub is_string: bool,
    /// A stack trace.
    pub is_stack: bool,
    /// Its C type.
    pub type_name: String,
}

/// Which trigger's table a reference reads.
#[derive(Debug)]
pub enum RefTarget {
    /// The trigger's own (resolved after its update).
    Own,
    /// Another trigger's, held referenced.
    Other(VarHold),
}

/// A reference to another trigger's histogram: while it lives, that
/// trigger cannot be removed (Linux's `check_var_refs`).
#[derive(Debug)]
pub struct VarHold(Arc<HistCore>);

impl VarHold {
    fn new(core: Arc<HistCore>) -> VarHold {
        core.referenced.fetch_add(1, Ordering::AcqRel);
        VarHold(core)
    }

    /// The histogram.
    pub fn core(&self) -> &Arc<HistCore> {
        &self.0
    }
}

impl Drop for VarHold {
    fn drop(&mut self) {
        self.0.referenced.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One variable reference of a trigger (Linux's `var_refs[i]`).
#[derive(Debug)]
pub struct VarRef {
    /// Whose table.
    pub target: RefTarget,
    /// The variable's index there.
    pub var_idx: usize,
    /// Reading it unsets it (a reference inside an expression).
    pub read_once: bool,
    /// The variable's shape.
    pub meta: RefMeta,
}

impl VarRef {
    fn same(&self, core: Option<&Arc<HistCore>>, var_idx: usize) -> bool {
        self.var_idx == var_idx
            && match (&self.target, core) {
                (RefTarget::Own, None) => true,
                (RefTarget::Other(h), Some(c)) => Arc::ptr_eq(&h.0, c),
                _ => false,
            }
    }
}

/// Linux's `create_var_ref`: the index of the reference to variable
/// `var_idx` of `core` (`None`: this trigger's own), made if new.
pub(crate) fn create_var_ref(
    env: &mut ParseEnv<'_>,
    core: Option<Arc<HistCore>>,
    var_idx: usize,
    meta: RefMeta,
) -> Option<usize> {
    if let Some(i) = env.refs.iter().position(|r| r.same(core.as_ref(), var_idx)) {
        return Some(i);
    }
    if env.refs.len() >= crate::TRACING_MAP_VARS_MAX {
        return None;
    }
    env.refs.push(VarRef {
        target: match core {
            None => RefTarget::Own,
            Some(c) => RefTarget::Other(VarHold::new(c)),
        },
        var_idx,
        read_once: false,
        meta,
    });
    Some(env.refs.len() - 1)
}

/// Linux's `find_event_var`: another trigger's variable `name`, on the
/// `onmatch()` events first when unqualified.
pub(crate) fn find_event_var(
    env: &mut ParseEnv<'_>,
    qual: Option<(&str, &str)>,
    name: &str,
) -> Option<(Arc<HistCore>, usize)> {
    if qual.is_none() {
        let mut found = None;
        for (s, e) in &env.match_events {
            if let Some(x) = env.links.vars.find_file_var(s, e, name) {
                if found.is_some() {
                    env.not_unique = Some(CmdError::new(
                        Errno::EINVAL,
                        HistErr::VarNotUnique.text(),
                        env.errpos(name),
                    ));
                    return None;
                }
                found = Some(x);
            }
        }
        if found.is_some() {
            return found;
        }
    }
    match env.links.vars.find_var_file(qual, name) {
        Ok(Some((s, e))) => env.links.vars.find_file_var(&s, &e, name),
        Ok(None) => None,
        Err(()) => {
            env.not_unique = Some(CmdError::new(
                Errno::EINVAL,
                HistErr::VarNotUnique.text(),
                env.errpos(name),
            ));
            None
        }
    }
}

/// The shape of variable `idx` of `core`.
pub(crate) fn var_meta(core: &HistCore, idx: usize) -> RefMeta {
    core.data.vars.get(idx).map_or(RefMeta::default(), |v| RefMeta {
        size: v.size,
        is_signed: v.is_signed,
        usecs: v.usecs,
        is_string: v.is_string,
        is_stack: v.is_stack,
        type_name: v.type_name.clone(),
    })
}

/// Linux's `parse_var_ref`: `$name` of another trigger, as a reference
/// index.
pub(crate) fn parse_var_ref(env: &mut ParseEnv<'_>, qual: Option<(&str, &str)>, name: &str) -> Option<usize> {
    let (core, idx) = find_event_var(env, qual, name)?;
    let meta = var_meta(&core, idx);
    create_var_ref(env, Some(core), idx, meta)
}
