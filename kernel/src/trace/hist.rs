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
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use trace_filter::filter::FILTER_ERROR_LOC;
use trace_filter::FilterContext;
use trace_hist::field::HistContext;
use trace_hist::hist::{HistChange, HistSpec, NamedHists, HIST_PREFIX};
use trace_hist::show::HistSymbols;
use trace_hist::HIST_STACKTRACE_DEPTH;
use uapi::Errno;

pub use trace_hist::hist::hist_command;

/// Histograms with a `name=`, shared across events (Linux's named
/// triggers list).
static NAMED: spin::Mutex<NamedHists> = spin::Mutex::new(NamedHists::new());

/// What a hist trigger sees of the event besides its record.
struct HistCtx<'a> {
    probe: &'a ProbeContext,
    ts: u64,
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
        self.ts
    }

    fn save_stack(&mut self, out: &mut [u64]) -> usize {
        save_stack(out)
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
pub(super) fn hist_triggers_call(triggers: &Triggers, entry: &[u8], ctx: &mut ProbeContext) {
    let mut ts = None;
    for t in triggers.hists.iter() {
        if t.paused() {
            continue;
        }
        if t.filter().is_some_and(|f| !f.matches(entry, ctx)) {
            continue;
        }
        let ts = *ts.get_or_insert_with(super::clock::trace_clock_now);
        t.event_hit(entry, &mut HistCtx { probe: ctx, ts });
    }
}

/// A `hist` command written to `ev`'s `trigger` file (`remove` for
/// `!hist`): Linux's `event_hist_trigger_parse`. Returns whether the
/// event's first trigger was added (`Ok(Some(true))`), its last removed
/// (`Ok(Some(false))`), or neither.
pub(super) fn hist_trigger_write(
    ev: &Arc<TraceEvent>,
    triggers: &mut Triggers,
    remove: bool,
    param: &str,
) -> Result<(), Errno> {
    let fields = event_filter::event_fields(ev);
    let schema = event_filter::schema(&fields);
    let env = event_filter::filter_env();
    let cmd = alloc::format!("{HIST_PREFIX}{param}");
    let loc = alloc::format!("{HIST_PREFIX}{}:{}", ev.system(), ev.name());
    let res = HistSpec::parse(param, &schema, &env).and_then(|spec| {
        let mut named = NAMED.lock();
        triggers.hists.apply(spec, remove, &mut named)
    });
    match res {
        Ok(HistChange::Removed(t)) => {
            drop(t);
            Ok(())
        }
        Ok(HistChange::Added | HistChange::Updated) => Ok(()),
        Err(e) => {
            if let Some(f) = &e.filter_failure {
                super::error_log::tracing_log_err(FILTER_ERROR_LOC, &f.command, &f.err);
            }
            if let Some(first) = &e.first {
                super::error_log::tracing_log_err(&loc, &cmd, first);
            }
            if let Some(log) = &e.log {
                super::error_log::tracing_log_err(&loc, &cmd, log);
            }
            Err(e.errno)
        }
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

/// What the event's `hist` file reads (Linux's `hist_show`).
pub(super) fn hist_show(ev: &TraceEvent) -> String {
    // The text is made under the lock the record path takes: hits on
    // other CPUs wait (a probe hit on this CPU skips), and the tables stay
    // as they are while sorted.
    let g = ev.file.triggers.lock();
    let hists: Vec<_> = g.hists.iter().collect();
    trace_hist::show::hist_show(&hists, &Symbols)
}
