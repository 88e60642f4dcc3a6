//! The generic half of `dynamic_events` (Linux's `trace_dynevent.c`) for
//! the event types besides kprobes: fprobe and tracepoint probe events
//! (`f:`, `t:`), synthetic events (`s:`) and event probes (`e:`). `trace_kprobe` owns the file and hands these commands,
//! removals (`-:`/`!`), the listing and O_TRUNC here.

use super::tracefs::{readme_add, ReadmeSection};
use super::{trace_eprobe, trace_events_synth, trace_fprobe};
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use uapi::Errno;

/// One type of dynamic event (Linux's `dyn_event_operations`).
pub(super) trait DynEventOps: Sync {
    /// Makes an event from `raw`; ECANCELED when it is not this type's.
    fn create(&self, raw: &str) -> Result<(), Errno>;
    /// Each event's `dynamic_events` line, with its creation number.
    fn show(&self, out: &mut Vec<(u64, String)>);
    /// Removes the events `[system/]event [args]` matches; how many went.
    fn release(&self, system: Option<&str>, event: &str, args: &[&str]) -> Result<usize, Errno>;
    /// Whether one of its events cannot be removed now.
    fn any_busy(&self) -> bool;
    /// Removes them all.
    fn release_all(&self) -> Result<(), Errno>;
}

/// The types, in Linux's registration order.
fn ops() -> [&'static dyn DynEventOps; 3] {
    [
        &trace_fprobe::FPROBE_EVENT_OPS,
        &trace_events_synth::SYNTH_OPS,
        &trace_eprobe::EPROBE_OPS,
    ]
}

static SEQ: AtomicU64 = AtomicU64::new(1);

/// A creation number, so that `dynamic_events` lists events in order.
pub(super) fn next_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Whether `raw` is a command for one of these types.
pub(super) fn is_ours(raw: &str) -> bool {
    let t = raw.trim_start();
    t.starts_with('s') || t.starts_with('e') || t.starts_with('f') || t.starts_with('t')
}

/// Runs a definition (Linux's `create_dyn_event`): EINVAL when no type
/// takes it.
pub(super) fn create(raw: &str) -> Result<(), Errno> {
    for o in ops() {
        match o.create(raw) {
            Err(Errno::ECANCELED) => continue,
            r => return r,
        }
    }
    Err(Errno::EINVAL)
}

/// `-:[GRP/]EVENT [args]` or `!TYPE:[GRP/]EVENT [args]` for these types
/// (Linux's `dyn_event_release`): how many events it removed.
pub(super) fn release(raw: &str) -> Result<usize, Errno> {
    let argv = trace_probe::argv_split(raw);
    let Some(head) = argv.first() else {
        return Err(Errno::EINVAL);
    };
    let spec = if let Some(rest) = head.strip_prefix('-') {
        rest.strip_prefix(':').ok_or(Errno::EINVAL)?
    } else {
        let i = head.find(':').ok_or(Errno::EINVAL)?;
        &head[i + 1..]
    };
    let (system, event) = match spec.find('/') {
        Some(i) => (Some(&spec[..i]), &spec[i + 1..]),
        None => (None, spec),
    };
    if system.is_none() && event.is_empty() {
        return Err(Errno::EINVAL);
    }
    let mut n = 0;
    for o in ops() {
        n += o.release(system, event, &argv[1..])?;
    }
    Ok(n)
}

/// Adds the lines these types show in `dynamic_events`, each with its
/// creation number.
pub(super) fn show(out: &mut Vec<(u64, String)>) {
    for o in ops() {
        o.show(out);
    }
}

/// Whether one of their events is in use (O_TRUNC must then fail).
pub(super) fn any_busy() -> bool {
    ops().iter().any(|o| o.any_busy())
}

/// Removes all of them (event probes first: they may sit on synthetic
/// events).
pub(super) fn release_all() -> Result<(), Errno> {
    trace_eprobe::EPROBE_OPS.release_all()?;
    trace_fprobe::FPROBE_EVENT_OPS.release_all()?;
    trace_events_synth::SYNTH_OPS.release_all()
}

/// Linux's README lines for `s:` and `e:` in the `Format:` list.
pub(super) const README_FORMATS: &str = "\t           f[:[<group>/][<event>]] <func-name>[%return] [<args>]\n\
\t           t[:[<group>/][<event>]] <tracepoint> [<args>]\n\
\t           s:[synthetic/]<event> <field> [<field>]\n\
\t           e[:[<group>/][<event>]] <attached-group>.<attached-event> [<args>] [if <filter>]\n";

/// Linux's README lines after the fetch-argument types.
pub(super) const README_FIELDS: &str = "\t    field: <stype> <name>;\n\
\t    stype: u8/u16/u32/u64, s8/s16/s32/s64, pid_t,\n\
\t           [unsigned] char/int/long\n\
\t    efield: For event probes ('e' types), the field is on of the fields\n\
\t            of the <attached-group>/<attached-event>.\n";

/// Makes `synthetic_events` and adds its README lines.
pub(super) fn init(root: &alloc::sync::Arc<crate::fs::pseudo::PseudoDir>) {
    trace_events_synth::init(root);
    readme_add(ReadmeSection::EventFiles, trace_events_synth::README_SYNTH);
}
