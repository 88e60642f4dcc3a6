//! Event triggers (`events/<sys>/<ev>/trigger`): `traceon`, `traceoff`,
//! `stacktrace`, `enable_event`, `disable_event`, with `:N` counts and
//! `if FILTER`, as Linux's trace_events_trigger.c runs them. The commands
//! are parsed by the `trace_filter` crate; this module keeps them per
//! event, puts events with triggers in soft mode (armed, recorded only if
//! enabled), and fires them from the record path
//! ([`super::event_filter::record_slow_entry`]).
//!
//! Stack traces are `ftrace/kernel_stack` entries (type 4, Linux's
//! `TRACE_STACK`), printed as Linux's `<stack trace>` lines.

use super::event_filter::TraceEventFile;
use super::event_filter::{self, ProbeContext, FL_TRIGGER_COND, FL_TRIGGER_MODE};
use super::events::{self, EventRecord, FieldDesc, TraceEvent, TraceEventDef};
use super::output::seq_print_ip_sym;
use super::TraceArray;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use trace_filter::filter::FILTER_ERROR_LOC;
use trace_filter::trigger::{TriggerChange, TriggerCmd, TriggerList};
use uapi::Errno;

/// The type of `ftrace/kernel_stack` (Linux's `TRACE_STACK`).
pub const TRACE_STACK: u16 = 4;

/// Most return addresses one stack entry holds (this kernel's unwinder
/// stops at 64 frames).
const STACK_ENTRIES: usize = 64;

/// Linux's `README` lines for the `trigger` file, for the commands this
/// kernel has.
pub const README_TRIGGER: &str = "      trigger\t\t- If set, a command to perform when event is hit\n\
\t    Format: <trigger>[:count][if <filter>]\n\
\t   trigger: traceon, traceoff\n\
\t            enable_event:<system>:<event>\n\
\t            disable_event:<system>:<event>\n\
\t            enable_hist:<system>:<event>\n\
\t            disable_hist:<system>:<event>\n\
\t\t    stacktrace\n\
\t\t    snapshot\n\
\t\t    hist (see below)\n\
\t   example: echo traceoff > events/block/block_unplug/trigger\n\
\t            echo traceoff:3 > events/block/block_unplug/trigger\n\
\t            echo 'enable_event:kmem:kmalloc:3 if nr_rq > 1' > \\\n\
\t                  events/block/block_unplug/trigger\n\
\t   The first disables tracing every time block_unplug is hit.\n\
\t   The second disables tracing the first 3 times block_unplug is hit.\n\
\t   The third enables the kmalloc event the first 3 times block_unplug\n\
\t     is hit and has value of greater than 1 for the 'nr_rq' event field.\n\
\t   Like function triggers, the counter is only decremented if it\n\
\t    enabled or disabled tracing.\n\
\t   To remove a trigger without a count:\n\
\t     echo '!<trigger> > <system>/<event>/trigger\n\
\t   To remove a trigger with a count:\n\
\t     echo '!<trigger>:0 > <system>/<event>/trigger\n\
\t   Filters can be ignored when removing a trigger.\n";

/// An event file's triggers and the event files (of the same trace
/// array) its `enable_event`/`disable_event` triggers act on (each holds a
/// soft-mode reference on its target).
#[derive(Default)]
pub struct Triggers {
    list: TriggerList,
    targets: Vec<(Arc<TraceEvent>, Arc<TraceEventFile>)>,
    /// The hist triggers (Linux keeps them on the same list, at its tail).
    pub(super) hists: trace_hist::hist::HistList,
}

impl Triggers {
    fn target(&self, sys: &str, name: &str) -> Option<&TraceEventFile> {
        self.targets
            .iter()
            .find(|(e, _)| e.system() == sys && e.name() == name)
            .map(|(_, f)| &**f)
    }
}

/// Post triggers (`traceoff`, `stacktrace`) a record asked for; they run
/// after it is written (Linux's `event_triggers_post_call`).
#[derive(Clone, Copy, Debug, Default)]
pub struct PostTriggers {
    traceoff: bool,
    stacktrace: bool,
}

/// Fires one trigger (Linux's `*_trigger` and `*_count_trigger`).
fn run(t: &trace_filter::trigger::Trigger, triggers: &Triggers, tr: &TraceArray) {
    match t.cmd() {
        TriggerCmd::TraceOn => {
            if t.fire(tr.tracing_on()) {
                tr.set_tracing_on(true);
            }
        }
        TriggerCmd::TraceOff => {
            if t.fire(!tr.tracing_on()) {
                tr.set_tracing_on(false);
            }
        }
        TriggerCmd::Stacktrace => {
            if t.fire(false) {
                trace_kernel_stack(tr);
            }
        }
        TriggerCmd::Snapshot => {
            if t.fire(false) {
                super::snapshot::tracing_snapshot_instance(tr);
            }
        }
        TriggerCmd::EnableEvent | TriggerCmd::DisableEvent => {
            let Some(target) = t.target().and_then(|(s, e)| triggers.target(s, e)) else {
                return;
            };
            let enable = t.cmd() == TriggerCmd::EnableEvent;
            let already = target.soft_disabled() != enable;
            if t.fire(already) {
                target.set_soft_disabled(!enable);
            }
        }
        TriggerCmd::EnableHist | TriggerCmd::DisableHist => {
            let Some(target) = t.target().and_then(|(s, e)| triggers.target(s, e)) else {
                return;
            };
            if t.fire(false) {
                super::hist::hist_enable_trigger(target, t.cmd() == TriggerCmd::EnableHist);
            }
        }
    }
}

/// Runs the triggers of event file `file` (Linux's `event_triggers_call`),
/// acting on its trace array. Without a record every trigger runs; with
/// one, those whose filter rejects it are skipped and post triggers are
/// returned for after the write.
pub(super) fn event_triggers_call(file: &TraceEventFile, rec: Option<(&[u8], &mut ProbeContext)>) -> PostTriggers {
    let tr = file.tr;
    let mut post = PostTriggers::default();
    let Some(triggers) = file.triggers.lock_from_probe() else {
        return post;
    };
    match rec {
        None => {
            for t in triggers.list.iter() {
                run(t, &triggers, tr);
            }
        }
        Some((entry, ctx)) => {
            for t in triggers.list.iter() {
                if t.filter().is_some_and(|f| !f.matches(entry, ctx)) {
                    continue;
                }
                match t.cmd() {
                    TriggerCmd::TraceOff => post.traceoff = true,
                    TriggerCmd::Stacktrace => post.stacktrace = true,
                    _ => run(t, &triggers, tr),
                }
            }
            super::hist::hist_triggers_call(tr, &triggers, entry, ctx);
        }
    }
    post
}

/// Runs the post triggers a record asked for.
pub(super) fn event_triggers_post_call(file: &TraceEventFile, post: PostTriggers) {
    if !post.traceoff && !post.stacktrace {
        return;
    }
    let tr = file.tr;
    let Some(triggers) = file.triggers.lock_from_probe() else {
        return;
    };
    for t in triggers.list.iter() {
        let wanted = match t.cmd() {
            TriggerCmd::TraceOff => post.traceoff,
            TriggerCmd::Stacktrace => post.stacktrace,
            _ => false,
        };
        if wanted {
            run(t, &triggers, tr);
        }
    }
}

/// Records the current kernel stack as an `ftrace/kernel_stack` entry
/// (Linux's `__trace_stack`), starting at the frame that called the
/// record path.
pub(super) fn trace_kernel_stack(tr: &TraceArray) {
    // Skip this path's own frames: up to the return address inside
    // record_slow_inner, whose caller is the event's record call.
    trace_kernel_stack_after(tr, event_filter::record_slow_inner as *const () as usize, 0);
}

/// Records the kernel stack of a function the function tracer caught
/// (Linux's `trace_dump_stack` from a function probe or
/// `function_stack_trace_call`): from the traced function's caller
/// outwards, as Linux shows it (the traced function is the line before).
#[inline(never)]
pub(super) fn trace_function_stack(tr: &TraceArray) {
    // After ftrace_caller's return address comes the traced function's
    // (the site's `bl`), then its caller's.
    trace_kernel_stack_after(tr, arch::ftrace::ftrace_caller_addr(), 1);
}

/// Records the stack from the frame `extra` frames after the one
/// returning into the function at `skip_to`.
#[inline(never)]
fn trace_kernel_stack_after(tr: &TraceArray, skip_to: usize, mut extra: usize) {
    let mut callers = [0usize; STACK_ENTRIES];
    let mut n = 0usize;
    let inner = skip_to;
    let inner_end = crate::kallsyms::lookup_addr(inner).map_or(inner, |s| inner + s.size as usize);
    let mut skipping = true;
    crate::stacktrace::walk_stackframe(arch::cpu::frame_pointer(), |lr| {
        if skipping {
            if (inner..inner_end).contains(&lr) {
                skipping = false;
            }
            return true;
        }
        if extra > 0 {
            extra -= 1;
            return true;
        }
        if let Some(slot) = callers.get_mut(n) {
            *slot = lr;
            n += 1;
            true
        } else {
            false
        }
    });
    let len = 8 + n * 8;
    super::trace_event_write(tr, TRACE_STACK, len, |f| {
        f[..4].copy_from_slice(&(n as i32).to_le_bytes());
        for (i, c) in callers[..n].iter().enumerate() {
            f[8 + i * 8..16 + i * 8].copy_from_slice(&(*c as u64).to_le_bytes());
        }
        true
    });
}

/// `ftrace/kernel_stack`, with Linux's format file.
pub(super) fn kernel_stack_def() -> TraceEventDef {
    TraceEventDef {
        system: "ftrace".to_string(),
        name: "kernel_stack".to_string(),
        fields: alloc::vec![
            FieldDesc::new("int", "size", 8, 4, true),
            FieldDesc::new("unsigned long", "caller[8]", 16, 64, false),
        ],
        print_fmt: "\"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \
                    \"\\t=> %ps\\n\\t=> %ps\\n\", (void *)REC->caller[0], (void *)REC->caller[1], \
                    (void *)REC->caller[2], (void *)REC->caller[3], (void *)REC->caller[4], \
                    (void *)REC->caller[5], (void *)REC->caller[6], (void *)REC->caller[7]"
            .to_string(),
        print: Box::new(print_kernel_stack),
        reg: None,
        ignore_enable: true,
    }
}

/// `<stack trace>` and one ` => symbol` line per caller (Linux's
/// `trace_stack_print`).
fn print_kernel_stack(out: &mut String, rec: &EventRecord<'_>) {
    out.push_str("<stack trace>\n");
    let n = rec
        .entry
        .get(8..12)
        .map_or(0, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    for i in 0..n.max(0) as usize {
        let Some(b) = rec.entry.get(16 + i * 8..24 + i * 8) else {
            break;
        };
        let addr = u64::from_le_bytes(b.try_into().unwrap_or([0xff; 8]));
        if addr == u64::MAX {
            break;
        }
        out.push_str(" => ");
        seq_print_ip_sym(out, addr as usize, rec.trace_flags);
        out.push('\n');
    }
}

/// What `trigger` reads.
pub(super) fn trigger_show(file: &TraceEventFile) -> String {
    let g = file.triggers.lock();
    if g.hists.is_empty() {
        return g.list.file_text().replace("disable_hist\n", "disable_hist hist\n");
    }
    let mut s = if g.list.is_empty() {
        String::new()
    } else {
        g.list.file_text()
    };
    for h in g.hists.iter() {
        s.push_str(&h.line());
    }
    s
}

/// Recomputes `TRIGGER_MODE` and `TRIGGER_COND` (Linux's
/// `update_cond_flag`).
fn update_flags(file: &TraceEventFile, t: &Triggers) {
    // Hist triggers need the record (EVENT_CMD_FL_NEEDS_REC).
    let cond = t.list.iter().any(|x| x.filter().is_some() || x.cmd().is_post_trigger()) || !t.hists.is_empty();
    file.set_flag(FL_TRIGGER_COND, cond);
    file.set_flag(FL_TRIGGER_MODE, !t.list.is_empty() || !t.hists.is_empty());
}

/// A write to `trigger` of `ev`'s file `file` (Linux's
/// `event_trigger_regex_write`): adds or removes one trigger, taking or
/// dropping the soft-mode references of the file (its first trigger) and
/// of an `enable_event` target in the same trace array.
pub(super) fn trigger_write(ev: &Arc<TraceEvent>, file: &TraceEventFile, buf: &[u8]) -> Result<(), Errno> {
    let _w = file.write_lock.lock();
    if let Some((remove, param)) = super::hist::hist_command(buf) {
        return hist_write(ev, file, remove, &param);
    }
    let fields = event_filter::event_fields(ev);
    let schema = event_filter::schema(&fields);
    let env = event_filter::filter_env();
    let exists = |s: &str, e: &str| events::find_event(s, e).is_some_and(|x| x.can_enable());
    let mut guard = file.triggers.lock();
    let was_empty = guard.list.is_empty() && guard.hists.is_empty();
    let change = guard.list.write(buf, &schema, &env, &exists);
    // Soft-enabling arms probes and may allocate: not under the lock.
    drop(guard);
    let change = match change {
        Ok(c) => c,
        Err(e) => {
            if let Some(f) = &e.filter_failure {
                super::error_log::tracing_log_err_tr(file.tr, FILTER_ERROR_LOC, &f.command, &f.err);
            }
            return Err(e.errno);
        }
    };
    match change {
        TriggerChange::None => Ok(()),
        TriggerChange::Added(cmd) => {
            let res = added(ev, file, cmd, was_empty);
            if res.is_err() {
                // Undo: the newest trigger is the list's first.
                let mut g = file.triggers.lock();
                let undo = alloc::format!("!{}", String::from_utf8_lossy(buf).trim());
                let _ = g.list.write(undo.as_bytes(), &schema, &env, &exists);
                update_flags(file, &g);
            }
            res
        }
        TriggerChange::Removed(t) => {
            let mut g = file.triggers.lock();
            let target = t.target().and_then(|(s, e)| {
                let i = g.targets.iter().position(|(x, _)| x.system() == s && x.name() == e)?;
                Some(g.targets.remove(i))
            });
            let now_empty = g.list.is_empty() && g.hists.is_empty();
            update_flags(file, &g);
            drop(g);
            if let Some((tev, tf)) = target {
                let _ = events::soft_enable_disable_file(&tev, &tf, false);
            }
            if now_empty && ev.can_enable() {
                let _ = events::soft_enable_disable_file(ev, file, false);
            }
            drop(t);
            Ok(())
        }
    }
}

/// A `hist` command: the trigger is added or removed under the lock the
/// record path takes; the event's soft mode follows its first and last
/// trigger.
pub(super) fn hist_write(ev: &Arc<TraceEvent>, file: &TraceEventFile, remove: bool, param: &str) -> Result<(), Errno> {
    let spec = super::hist::hist_parse(file.tr, ev, remove, param)?;
    let mut g = file.triggers.lock();
    let was_empty = g.list.is_empty() && g.hists.is_empty();
    let res = super::hist::hist_apply(file.tr, ev, &mut g, spec, remove, param);
    let now_empty = g.list.is_empty() && g.hists.is_empty();
    update_flags(file, &g);
    drop(g);
    let res = res.map(|t| super::hist::hist_applied(file.tr, t, !remove));
    // Events that cannot be enabled (ftrace/print) run their triggers
    // without soft mode.
    if was_empty && !now_empty && ev.can_enable() {
        if let Err(e) = events::soft_enable_disable_file(ev, file, true) {
            let mut g = file.triggers.lock();
            let gone = g.hists.clear();
            update_flags(file, &g);
            drop(g);
            drop(gone);
            return Err(e);
        }
    } else if !was_empty && now_empty && ev.can_enable() {
        let _ = events::soft_enable_disable_file(ev, file, false);
    }
    res
}

/// `ftrace/print`, whose triggers run on `trace_marker` writes.
static TRACE_MARKER_EVENT: spin::Once<Option<Arc<TraceEvent>>> = spin::Once::new();

/// `ftrace/print`'s file in `tr`.
fn trace_marker_file(tr: &TraceArray) -> Option<Arc<TraceEventFile>> {
    let ev = TRACE_MARKER_EVENT.call_once(|| events::find_event("ftrace", "print"));
    ev.as_ref()?.file_for(tr)
}

/// Runs `ftrace/print`'s triggers in `tr` on a `trace_marker` write of
/// `text` from `ip` (Linux's `tracing_mark_write` with
/// `trace_marker_file`), on the entry as it will be recorded but without
/// its added newline; call [`trace_marker_post_call`] with the result
/// after the write.
pub(super) fn trace_marker_triggers_call(tr: &TraceArray, ip: u64, text: &[u8]) -> PostTriggers {
    let Some(file) = trace_marker_file(tr) else {
        return PostTriggers::default();
    };
    if file.flags() & FL_TRIGGER_MODE == 0 {
        return PostTriggers::default();
    }
    let mut entry = alloc::vec![0u8; super::TRACE_ENTRY_SIZE + 8 + text.len() + 1];
    super::fill_entry_header(&mut entry, super::TRACE_PRINT);
    entry[super::TRACE_ENTRY_SIZE..super::TRACE_ENTRY_SIZE + 8].copy_from_slice(&ip.to_le_bytes());
    entry[super::TRACE_ENTRY_SIZE + 8..super::TRACE_ENTRY_SIZE + 8 + text.len()].copy_from_slice(text);
    let mut ctx = ProbeContext::current(arch::cpu::cpu_id());
    event_triggers_call(&file, Some((&entry, &mut ctx)))
}

/// The post triggers of a `trace_marker` write to `tr`.
pub(super) fn trace_marker_post_call(tr: &TraceArray, post: PostTriggers) {
    if !post.traceoff && !post.stacktrace {
        return;
    }
    if let Some(file) = trace_marker_file(tr) {
        event_triggers_post_call(&file, post);
    }
}

/// `trigger` opened with O_TRUNC: Linux's `hist_unreg_all` (the other
/// triggers stay).
pub(super) fn trigger_clear_hists(ev: &Arc<TraceEvent>, file: &TraceEventFile) {
    let _w = file.write_lock.lock();
    let mut g = file.triggers.lock();
    // hist_file_check_refs: none goes while another trigger reads one's
    // variables.
    if g.hists.is_empty() || g.hists.iter().any(|t| t.core().is_referenced()) {
        return;
    }
    let gone = g.hists.clear();
    let now_empty = g.list.is_empty();
    update_flags(file, &g);
    drop(g);
    for t in gone {
        super::hist::hist_applied(file.tr, Some(t), false);
    }
    if now_empty && ev.can_enable() {
        let _ = events::soft_enable_disable_file(ev, file, false);
    }
}

/// Takes the references a new trigger needs (target first, as Linux's
/// `event_enable_trigger_parse`, then the file's own soft mode).
fn added(ev: &Arc<TraceEvent>, file: &TraceEventFile, cmd: TriggerCmd, was_empty: bool) -> Result<(), Errno> {
    if cmd == TriggerCmd::Snapshot {
        // Linux's register_snapshot_trigger: the buffer exists before the
        // trigger can fire.
        super::snapshot::tracing_alloc_snapshot(file.tr)?;
    }
    let mut target = None;
    if matches!(
        cmd,
        TriggerCmd::EnableEvent | TriggerCmd::DisableEvent | TriggerCmd::EnableHist | TriggerCmd::DisableHist
    ) {
        let name = {
            let g = file.triggers.lock();
            let name = g
                .list
                .iter()
                .next()
                .and_then(|t| t.target())
                .map(|(s, e)| (s.to_string(), e.to_string()));
            name
        };
        let (s, e) = name.ok_or(Errno::EINVAL)?;
        let t = events::find_event(&s, &e).ok_or(Errno::EINVAL)?;
        let tf = t.file_for(file.tr).ok_or(Errno::EINVAL)?;
        events::soft_enable_disable_file(&t, &tf, true)?;
        target = Some((t, tf));
    }
    // Events that cannot be enabled (ftrace/print) run their triggers
    // without soft mode.
    if was_empty && ev.can_enable() {
        if let Err(err) = events::soft_enable_disable_file(ev, file, true) {
            if let Some((t, tf)) = &target {
                let _ = events::soft_enable_disable_file(t, tf, false);
            }
            return Err(err);
        }
    }
    let mut g = file.triggers.lock();
    if let Some(t) = target {
        g.targets.push(t);
    }
    update_flags(file, &g);
    Ok(())
}

/// Event file `file` is going away (its event or its trace array): its
/// triggers go with it. (A removed event with triggers would be in soft
/// mode, hence enabled, and cannot be removed; nor can the target of
/// another event's `enable_event`. A removed trace array takes all its
/// files, soft-mode references and all, at once.)
pub(super) fn file_removed(file: &TraceEventFile) {
    let mut g = file.triggers.lock();
    let list = g.list.clear();
    let hists = g.hists.clear();
    let targets = core::mem::take(&mut g.targets);
    update_flags(file, &g);
    drop(g);
    drop(list);
    drop(hists);
    drop(targets);
}
