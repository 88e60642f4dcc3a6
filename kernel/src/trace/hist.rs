//! Hist triggers (`hist:keys=...` in `events/<sys>/<ev>/trigger`) and the
//! per-event `hist` file, as Linux's trace_events_hist.c. The grammar,
//! the table and the file's text are the `trace_hist` crate's; this
//! module keeps each event's hist triggers beside its other triggers (in
//! [`super::trigger::Triggers`], under the same lock the record path
//! takes), feeds them records, and logs bad commands in `error_log`.
//!
//! Each trigger's table is allocated when the trigger is written; a hit
//! only atomically updates it, and a hit that finds the table full is
//! counted in `Dropped`.

use super::event_filter::{self, ProbeContext};
use super::events::TraceEvent;
use super::trigger::Triggers;
use super::TraceArray;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use trace_filter::filter::FILTER_ERROR_LOC;
use trace_filter::FilterContext;
use trace_hist::field::HistContext;
use trace_hist::hist::{HistChange, HistSpec, HistTrigger, NamedHists, HIST_PREFIX};
use trace_hist::show::HistSymbols;
use trace_hist::vars::{HistLinks, HistVarRegistry, SynthArg, SynthTarget};
use trace_hist::HistError;
use trace_hist::HIST_STACKTRACE_DEPTH;
use uapi::Errno;

pub use trace_hist::hist::hist_command;

/// Linux's `README` text for hist triggers.
pub(super) const README_HIST: &str = concat!(
    "      hist trigger\t- If set, event hits are aggregated into a hash table\n",
    "\t    Format: hist:keys=<field1[,field2,...]>\n",
    "\t            [:<var1>=<field|var_ref|numeric_literal>[,<var2>=...]]\n",
    "\t            [:values=<field1[,field2,...]>]\n",
    "\t            [:sort=<field1[,field2,...]>]\n",
    "\t            [:size=#entries]\n",
    "\t            [:pause][:continue][:clear]\n",
    "\t            [:name=histname1]\n",
    "\t            [:nohitcount]\n",
    "\t            [:<handler>.<action>]\n",
    "\t            [if <filter>]\n\n",
    "\t    Note, special fields can be used as well:\n",
    "\t            common_timestamp - to record current timestamp\n",
    "\t            common_cpu - to record the CPU the event happened on\n",
    "\n",
    "\t    A hist trigger variable can be:\n",
    "\t        - a reference to a field e.g. x=current_timestamp,\n",
    "\t        - a reference to another variable e.g. y=$x,\n",
    "\t        - a numeric literal: e.g. ms_per_sec=1000,\n",
    "\t        - an arithmetic expression: e.g. time_secs=current_timestamp/1000\n",
    "\n",
    "\t    hist trigger arithmetic expressions support addition(+), subtraction(-),\n",
    "\t    multiplication(*) and division(/) operators. An operand can be either a\n",
    "\t    variable reference, field or numeric literal.\n",
    "\n",
    "\t    When a matching event is hit, an entry is added to a hash\n",
    "\t    table using the key(s) and value(s) named, and the value of a\n",
    "\t    sum called 'hitcount' is incremented.  Keys and values\n",
    "\t    correspond to fields in the event's format description.  Keys\n",
    "\t    can be any field, or the special string 'common_stacktrace'.\n",
    "\t    Compound keys consisting of up to two fields can be specified\n",
    "\t    by the 'keys' keyword.  Values must correspond to numeric\n",
    "\t    fields.  Sort keys consisting of up to two fields can be\n",
    "\t    specified using the 'sort' keyword.  The sort direction can\n",
    "\t    be modified by appending '.descending' or '.ascending' to a\n",
    "\t    sort field.  The 'size' parameter can be used to specify more\n",
    "\t    or fewer than the default 2048 entries for the hashtable size.\n",
    "\t    If a hist trigger is given a name using the 'name' parameter,\n",
    "\t    its histogram data will be shared with other triggers of the\n",
    "\t    same name, and trigger hits will update this common data.\n\n",
    "\t    Reading the 'hist' file for the event will dump the hash\n",
    "\t    table in its entirety to stdout.  If there are multiple hist\n",
    "\t    triggers attached to an event, there will be a table for each\n",
    "\t    trigger in the output.  The table displayed for a named\n",
    "\t    trigger will be the same as any other instance having the\n",
    "\t    same name.  The default format used to display a given field\n",
    "\t    can be modified by appending any of the following modifiers\n",
    "\t    to the field name, as applicable:\n\n",
    "\t            .hex        display a number as a hex value\n",
    "\t            .sym        display an address as a symbol\n",
    "\t            .sym-offset display an address as a symbol and offset\n",
    "\t            .execname   display a common_pid as a program name\n",
    "\t            .syscall    display a syscall id as a syscall name\n",
    "\t            .log2       display log2 value rather than raw number\n",
    "\t            .buckets=size  display values in groups of size rather than raw number\n",
    "\t            .usecs      display a common_timestamp in microseconds\n",
    "\t            .percent    display a number of percentage value\n",
    "\t            .graph      display a bar-graph of a value\n\n",
    "\t    The 'pause' parameter can be used to pause an existing hist\n",
    "\t    trigger or to start a hist trigger but not log any events\n",
    "\t    until told to do so.  'continue' can be used to start or\n",
    "\t    restart a paused hist trigger.\n\n",
    "\t    The 'clear' parameter will clear the contents of a running\n",
    "\t    hist trigger and leave its current paused/active state\n",
    "\t    unchanged.\n\n",
    "\t    The 'nohitcount' (or NOHC) parameter will suppress display of\n",
    "\t    raw hitcount in the histogram.\n\n",
    "\t    The enable_hist and disable_hist triggers can be used to\n",
    "\t    have one event conditionally start and stop another event's\n",
    "\t    already-attached hist trigger.  The syntax is analogous to\n",
    "\t    the enable_event and disable_event triggers.\n\n",
    "\t    Hist trigger handlers and actions are executed whenever a\n",
    "\t    a histogram entry is added or updated.  They take the form:\n\n",
    "\t        <handler>.<action>\n\n",
    "\t    The available handlers are:\n\n",
    "\t        onmatch(matching.event)  - invoke on addition or update\n",
    "\t        onmax(var)               - invoke if var exceeds current max\n",
    "\t        onchange(var)            - invoke action if var changes\n\n",
    "\t    The available actions are:\n\n",
    "\t        trace(<synthetic_event>,param list)  - generate synthetic event\n",
    "\t        save(field,...)                      - save current event fields\n",
    "\t        snapshot()                           - snapshot the trace buffer\n\n",
);

/// Histograms with a `name=`, shared across events (Linux's named
/// triggers list).
static NAMED: spin::Mutex<NamedHists> = spin::Mutex::new(NamedHists::new());

/// Every event's hist triggers, for variable references between them,
/// one registry per trace array (Linux's `tr->hist_vars`: a trigger in an
/// instance sees only that instance's variables). Keyed by the array's
/// address; a registry goes when its last trigger does.
static HIST_VARS: spin::Mutex<Vec<(usize, HistVarRegistry)>> = spin::Mutex::new(Vec::new());

/// The key of `tr` in [`HIST_VARS`].
fn tr_key(tr: &TraceArray) -> usize {
    tr as *const TraceArray as usize
}

/// A copy of `tr`'s variable registry (empty if it has none).
fn hist_vars_of(tr: &TraceArray) -> HistVarRegistry {
    let all = HIST_VARS.lock();
    all.iter()
        .find(|(k, _)| *k == tr_key(tr))
        .map(|(_, r)| r.clone())
        .unwrap_or_default()
}

/// A synthetic event an action generates; holding it keeps the event
/// from being removed (Linux's `synth_event->ref`).
struct SynthHold(Arc<super::trace_events_synth::SynthEvent>);

impl core::fmt::Debug for SynthHold {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SynthHold({})", self.0.name())
    }
}

impl SynthHold {
    fn new(se: Arc<super::trace_events_synth::SynthEvent>) -> SynthHold {
        se.get_ref();
        SynthHold(se)
    }
}

impl Drop for SynthHold {
    fn drop(&mut self) {
        self.0.put_ref();
    }
}

impl SynthTarget for SynthHold {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn fields(&self) -> &[trace_probe::synth::SynthField] {
        self.0.fields()
    }

    fn trace(&self, vals: &[SynthArg<'_>]) {
        use super::trace_events_synth::SynthVal;
        let mut out = [SynthVal::Num(0); trace_probe::synth::SYNTH_FIELDS_MAX];
        for (o, v) in out.iter_mut().zip(vals) {
            *o = match *v {
                SynthArg::Num(n) => SynthVal::Num(n),
                SynthArg::Str(s) => SynthVal::Str(s),
                SynthArg::Stack(s) => SynthVal::Stack(s),
            };
        }
        let _ = super::trace_events_synth::synth_event_trace(&self.0, out.get(..vals.len()).unwrap_or(&[]));
    }
}

fn event_exists(system: &str, event: &str) -> bool {
    super::events::find_event(system, event).is_some()
}

fn find_synth(name: &str) -> Option<Arc<dyn SynthTarget>> {
    let se = super::trace_events_synth::find_synth_event(name)?;
    Some(Arc::new(SynthHold::new(se)))
}

/// What a hist trigger sees of the event besides its record.
struct HistCtx<'a> {
    /// The trace array whose event file the triggers belong to: its clock
    /// stamps the record, its buffer is what `snapshot()` saves.
    tr: &'a TraceArray,
    probe: &'a ProbeContext,
    /// The record's timestamp, read when a trigger first needs it and then
    /// shared by the event's other triggers.
    ts: &'a core::cell::Cell<Option<u64>>,
}

impl FilterContext for HistCtx<'_> {
    fn cpu(&self) -> u32 {
        self.probe.cpu()
    }
    fn comm(&self) -> &[u8] {
        self.probe.comm()
    }
}

impl HistContext for HistCtx<'_> {
    fn timestamp_ns(&self) -> u64 {
        match self.ts.get() {
            Some(ts) => ts,
            None => {
                let ts = self.tr.clock_now();
                self.ts.set(Some(ts));
                ts
            }
        }
    }

    fn save_stack(&mut self, out: &mut [u64]) -> usize {
        save_stack(out)
    }

    fn snapshot(&mut self) {
        super::snapshot::tracing_snapshot_instance(self.tr);
    }
}

/// The kernel stack from the event's caller (tracing's own frames, up to
/// the record path, are skipped as Linux skips `HIST_STACKTRACE_SKIP`).
fn save_stack(out: &mut [u64]) -> usize {
    let inner = event_filter::record_slow_inner as *const () as usize;
    let inner_end = crate::kallsyms::lookup_addr(inner).map_or(inner, |s| inner + s.size as usize);
    let mut skipping = true;
    let mut n = 0usize;
    crate::stacktrace::walk_stackframe(arch::cpu::frame_pointer(), |lr| {
        if skipping {
            if (inner..inner_end).contains(&lr) {
                skipping = false;
            }
            return true;
        }
        match out.get_mut(n) {
            Some(slot) if n < HIST_STACKTRACE_DEPTH => {
                *slot = lr as u64;
                n += 1;
                true
            }
            _ => false,
        }
    });
    n
}

/// Feeds one record to the event's hist triggers (from
/// `event_triggers_call`, with the triggers' lock held).
pub(super) fn hist_triggers_call(tr: &TraceArray, triggers: &Triggers, entry: &[u8], ctx: &mut ProbeContext) {
    let ts = core::cell::Cell::new(None);
    for t in triggers.hists.iter() {
        if t.paused() {
            continue;
        }
        if t.filter().is_some_and(|f| !f.matches(entry, ctx)) {
            continue;
        }
        t.event_hit(
            entry,
            &mut HistCtx {
                tr,
                probe: ctx,
                ts: &ts,
            },
        );
    }
}

/// `enable_hist`/`disable_hist` fired (Linux's `hist_enable_trigger`):
/// continues or pauses `target`'s hist triggers. Its trigger list is only
/// tried, so that two events whose triggers act on each other cannot
/// deadlock: when another CPU holds it, this hit leaves them as they are.
pub(super) fn hist_enable_trigger(target: &super::event_filter::TraceEventFile, enable: bool) {
    let Some(g) = target.triggers.try_lock_from_probe() else {
        return;
    };
    for t in g.hists.iter() {
        t.set_paused(!enable);
    }
}

/// Logs a failed hist command in the `error_log` of `tr`, the trace array
/// whose event file was written, as Linux's `hist_err` (and a bad `if`
/// filter as an event-filter error).
fn log_failure(tr: &TraceArray, ev: &TraceEvent, param: &str, e: &HistError) {
    let cmd = alloc::format!("{HIST_PREFIX}{param}");
    let loc = alloc::format!("{HIST_PREFIX}{}:{}", ev.system(), ev.name());
    if let Some(f) = &e.filter_failure {
        super::error_log::tracing_log_err_tr(tr, FILTER_ERROR_LOC, &f.command, &f.err);
    }
    for log in e.first.iter().chain(&e.log) {
        super::error_log::tracing_log_err_tr(tr, &loc, &cmd, log);
    }
}

/// Compiles a `hist` command for `ev`'s file in `tr` (Linux's
/// `event_hist_trigger_parse` up to registration), allocating the table
/// of a new trigger here, in task context, not under the lock hits take.
pub(super) fn hist_parse(
    tr: &'static TraceArray,
    ev: &TraceEvent,
    remove: bool,
    param: &str,
) -> Result<HistSpec, Errno> {
    let fields = event_filter::event_fields(ev);
    let schema = event_filter::schema(&fields);
    let env = event_filter::filter_env();
    let field_type = |name: &str| fields.iter().find(|(n, _, _)| n == name).map(|(_, t, _)| t.clone());
    // A snapshot: parsing may add a trigger to another event (for a field
    // variable there), which takes the registry itself.
    let vars = hist_vars_of(tr);
    let create_hist = |system: &str, event: &str, cmd: &str| create_field_var_hist(tr, system, event, cmd);
    let links = HistLinks {
        system: ev.system(),
        event: ev.name(),
        vars: &vars,
        event_exists: &event_exists,
        find_synth: &find_synth,
        field_type: &field_type,
        create_hist: &create_hist,
    };
    let parsed = HistSpec::parse_with(param, &schema, &env, &links);
    drop(vars);
    let mut spec = parsed.map_err(|e| {
        log_failure(tr, ev, param, &e);
        e.errno
    })?;
    if spec.creates(remove) {
        spec.prealloc_map()?;
        if spec.takes_snapshots() {
            // Linux's tracing_snapshot_cond_enable: the buffer exists
            // before the action can fire.
            super::snapshot::tracing_alloc_snapshot(tr)?;
        }
    }
    Ok(spec)
}

/// Applies a compiled `hist` command (`remove` for `!hist`) to `ev`'s
/// `triggers`, locked by the caller (`hist_register_trigger` and friends).
/// Returns the trigger added or removed, for [`hist_applied`] once the
/// lock is released.
pub(super) fn hist_apply(
    tr: &TraceArray,
    ev: &TraceEvent,
    triggers: &mut Triggers,
    spec: HistSpec,
    remove: bool,
    param: &str,
) -> Result<Option<Arc<HistTrigger>>, Errno> {
    let mut named = NAMED.lock();
    match triggers.hists.apply(spec, remove, &mut named) {
        Ok(HistChange::Removed(t)) => {
            let mut all = HIST_VARS.lock();
            if let Some(i) = all.iter().position(|(k, _)| *k == tr_key(tr)) {
                all[i].1.unregister(t.core());
                if all[i].1.is_empty() {
                    all.swap_remove(i);
                }
            }
            Ok(Some(t))
        }
        Ok(HistChange::Added) => {
            let t = triggers.hists.iter().last().cloned();
            if let Some(t) = &t {
                let mut all = HIST_VARS.lock();
                let i = match all.iter().position(|(k, _)| *k == tr_key(tr)) {
                    Some(i) => i,
                    None => {
                        all.push((tr_key(tr), HistVarRegistry::new()));
                        all.len() - 1
                    }
                };
                all[i].1.register(ev.system(), ev.name(), t.core(), t.filter_text());
            }
            Ok(t)
        }
        Ok(HistChange::Updated) => Ok(None),
        Err(e) => {
            drop(named);
            log_failure(tr, ev, param, &e);
            Err(e.errno)
        }
    }
}

/// After [`hist_apply`] in `tr`: a new trigger that reads
/// `common_timestamp` switches `tr`'s trace clock to its `clock=`
/// (`global` by default), as Linux's `hist_register_trigger`; a removed
/// one is freed here. (The clock's name was checked when parsed, and this
/// kernel has them all.)
pub(super) fn hist_applied(tr: &'static TraceArray, t: Option<Arc<HistTrigger>>, added: bool) {
    if !added {
        if let Some(t) = t {
            remove_field_var_hists(tr, t);
        }
        return;
    }
    if let Some(t) = t.filter(|t| added && t.data().enable_timestamps) {
        let _ = super::clock::tracing_set_clock(tr, &t.data().clock);
    }
}

/// Adds a hist trigger to another event for a field variable there
/// (Linux's `create_field_var_hist`). That event's command lock is only
/// tried, so that two writers making such triggers on each other's
/// events cannot deadlock: a busy one fails the write with EBUSY.
fn create_field_var_hist(
    tr: &'static TraceArray,
    system: &str,
    event: &str,
    cmd: &str,
) -> Result<Arc<trace_hist::hist::HistCore>, Errno> {
    let ev = super::events::find_event(system, event).ok_or(Errno::EINVAL)?;
    let file = ev.file_for(tr).ok_or(Errno::EINVAL)?;
    let _w = file.write_lock.try_lock().ok_or(Errno::EBUSY)?;
    super::trigger::hist_write(&ev, &file, false, cmd)?;
    let core = file.triggers.lock().hists.iter().last().map(|t| t.core().clone());
    core.ok_or(Errno::ENOENT)
}

/// Frees a removed trigger, then removes the triggers it made for field
/// variables (Linux's `unregister_field_var_hists`), once nothing else
/// shares its histogram: freed first, its references to their variables
/// are gone.
fn remove_field_var_hists(tr: &'static TraceArray, t: Arc<HistTrigger>) {
    let made = match Arc::try_unwrap(t) {
        Ok(t) if Arc::strong_count(t.core()) == 1 => t.core().field_var_hists.clone(),
        _ => return,
    };
    for (system, event, cmd) in &made {
        let Some(ev) = super::events::find_event(system, event) else {
            continue;
        };
        let Some(file) = ev.file_for(tr) else {
            continue;
        };
        let locked = file.write_lock.try_lock();
        if locked.is_some() {
            let _ = super::trigger::hist_write(&ev, &file, true, cmd);
        }
        drop(locked);
    }
}

/// Kernel symbols and system call names for keys.
struct Symbols;

impl HistSymbols for Symbols {
    fn symbol(&self, addr: u64) -> Option<(String, u64, u64)> {
        let s = crate::kallsyms::lookup_addr(addr as usize)?;
        Some((String::from(s.name), s.offset, s.size))
    }

    fn syscall_name(&self, nr: u64) -> Option<String> {
        let name = uapi::syscalls::name(u32::try_from(nr).ok()?)?;
        Some(alloc::format!("sys_{name}"))
    }
}

/// What an event file's `hist` file reads (Linux's `hist_show`).
pub(super) fn hist_show(file: &super::event_filter::TraceEventFile) -> String {
    // The tables are read while hits go on, as Linux reads them: only
    // the list is taken under the lock hits take, not the sorting and
    // formatting.
    let hists: Vec<Arc<HistTrigger>> = file.triggers.lock().hists.iter().cloned().collect();
    let refs: Vec<&HistTrigger> = hists.iter().map(|t| &**t).collect();
    trace_hist::show::hist_show(&refs, &Symbols)
}
