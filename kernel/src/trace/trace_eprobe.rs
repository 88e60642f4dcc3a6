//! Event probes (Linux's `trace_eprobe.c`): `e[:[GRP/][EVENT]]
//! SYSTEM.EVENT [FETCHARGS] [if FILTER]` in `dynamic_events` makes an
//! event (group `eprobes` by default) whose records are taken from
//! another event's records: `$FIELD` reads a field of the attached
//! event, `+0($FIELD):ustring` what it points at.
//!
//! Enabling one puts the attached event in soft mode (armed, recorded
//! only if itself enabled, as a trigger does) and hooks a handler to its
//! record path ([`super::event_filter`]), which gets each record of the
//! attached event, applies the eprobe's filter, and writes its own record.

use super::error_log;
use super::event_filter::{self, ProbeContext};
use super::events::{self, FieldDesc, TraceEvent, TraceEventDef};
use super::trace_dynevent::{next_seq, DynEventOps};
use super::trace_kprobe::KernelProbeContext;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use trace_filter::filter::FILTER_ERROR_LOC;
use trace_filter::EventFilter;
use trace_probe::{
    command_text, EventLookup, FetchEnv, ProbeDef, ProbeKind, ProbeSite, Reg, StrKind, TeventField, TpErr,
};
use uapi::Errno;

/// Where `error_log` says event-probe errors come from.
const ERR_LOC: &str = "event_probe";

/// The handler an attached event runs for each of its records.
pub type EprobeHook = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// One event probe (Linux's `trace_eprobe`).
struct TraceEprobe {
    def: Arc<ProbeDef>,
    ev: spin::Once<Arc<TraceEvent>>,
    attached: Arc<TraceEvent>,
    filter: Option<Arc<EventFilter>>,
    /// The handler installed on the attached event while enabled.
    hook: spin::Mutex<Option<EprobeHook>>,
    seq: u64,
    was_enabled: AtomicBool,
}

static EPROBES: spin::Mutex<Vec<Arc<TraceEprobe>>> = spin::Mutex::new(Vec::new());

/// Whether an event probe sits on `system`/`event` (which then cannot go).
pub fn attached_to(system: &str, event: &str) -> bool {
    EPROBES.lock().iter().any(|e| match &e.def.kind {
        ProbeKind::Eprobe {
            system: s, event: n, ..
        } => s == system && n == event,
        _ => false,
    })
}

/// Whether `group`/`event` is an event probe.
pub fn is_eprobe_event(group: &str, event: &str) -> bool {
    EPROBES
        .lock()
        .iter()
        .any(|e| e.def.group == group && e.def.event == event)
}

/// What a handler sees: the attached event's record and the task.
struct RecEnv<'a> {
    rec: &'a [u8],
    comm: [u8; 16],
}

impl FetchEnv for RecEnv<'_> {
    fn register(&self, _: Reg) -> u64 {
        0
    }

    fn kernel_stack_nth(&self, _: u32) -> u64 {
        0
    }

    fn read_kernel(&self, addr: u64, dst: &mut [u8]) -> bool {
        // The record itself needs no fault handling.
        let base = self.rec.as_ptr() as u64;
        if addr >= base && addr.saturating_add(dst.len() as u64) <= base + self.rec.len() as u64 {
            let off = (addr - base) as usize;
            dst.copy_from_slice(&self.rec[off..off + dst.len()]);
            return true;
        }
        let mut done = 0usize;
        while done < dst.len() {
            let Some(a) = addr.checked_add(done as u64) else {
                return false;
            };
            let word = a & !7;
            let Ok(v) = arch::nofault::read_u64_nofault(word as usize) else {
                return false;
            };
            let bytes = v.to_le_bytes();
            let from = (a - word) as usize;
            let n = (8 - from).min(dst.len() - done);
            dst[done..done + n].copy_from_slice(&bytes[from..from + n]);
            done += n;
        }
        true
    }

    fn read_user(&self, addr: u64, dst: &mut [u8]) -> bool {
        // `+u0(...)`: a user address, whose absent page fails the read.
        crate::uaccess::user_range(crate::uaccess::UserPtr::new(addr), dst.len())
            .and_then(|src| crate::uaccess::copy_from_user_nofault(dst, src))
            .is_ok()
    }

    fn comm(&self) -> &[u8] {
        &self.comm
    }

    fn sprint_symbol(&self, addr: u64, dst: &mut [u8]) -> usize {
        trace_probe::sprint_symbol(&Kallsyms, addr, dst)
    }

    fn event_record(&self) -> &[u8] {
        self.rec
    }
}

struct Kallsyms;

impl trace_probe::Symbolizer for Kallsyms {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        crate::kallsyms::lookup_addr(addr as usize).map(|s| (s.name, s.offset, s.size))
    }
}

/// One record of the attached event (Linux's `eprobe_trigger_func`).
fn eprobe_hit(ep: &TraceEprobe, rec: &[u8]) {
    let Some(ev) = ep.ev.get() else { return };
    let cpu = arch::cpu::cpu_id();
    if let Some(f) = &ep.filter {
        let mut ctx = ProbeContext::current(cpu);
        if !f.matches(rec, &mut ctx) {
            return;
        }
    }
    let mut comm = [0u8; 16];
    if let Some(t) = crate::sched::try_current() {
        comm = t.comm.get();
    }
    let env = RecEnv { rec, comm };
    let def = &ep.def;
    let len = def.fixed_size() + def.dynamic_size(&env, &[]);
    ev.record_entry(len, |e| def.fetch(&env, ProbeSite::Entry { ip: 0 }, &[], e).is_ok());
}

impl TraceEprobe {
    /// Enable: soft-enable the attached event and hook it; disable: the
    /// reverse. From the event's `reg`, under the event mutex.
    fn set_armed(self: &Arc<Self>, on: bool) -> Result<(), Errno> {
        let mut hook = self.hook.lock();
        if on {
            if hook.is_some() {
                return Ok(());
            }
            events::soft_enable_disable_locked(&self.attached, true)?;
            let w = Arc::downgrade(self);
            let h: EprobeHook = Arc::new(move |rec: &[u8]| {
                if let Some(ep) = w.upgrade() {
                    eprobe_hit(&ep, rec);
                }
            });
            event_filter::eprobe_attach(&self.attached, h.clone());
            *hook = Some(h);
            self.was_enabled.store(true, Ordering::Release);
        } else if let Some(h) = hook.take() {
            event_filter::eprobe_detach(&self.attached, &h);
            let _ = events::soft_enable_disable_locked(&self.attached, false);
        }
        Ok(())
    }
}

/// The event an event probe may attach to: a tracepoint or synthetic
/// event, not a probe event (Linux's `find_and_get_event`).
fn attachable(system: &str, event: &str) -> Option<Arc<TraceEvent>> {
    let ev = events::find_event(system, event)?;
    if !ev.can_enable()
        || super::trace_kprobe::is_kprobe_event(system, event)
        || EPROBES
            .lock()
            .iter()
            .any(|e| e.def.group == system && e.def.event == event)
    {
        return None;
    }
    Some(ev)
}

/// The kernel's answers while an `e` command is parsed.
struct Lookup;

impl EventLookup for Lookup {
    fn event_fields(&self, system: &str, event: &str) -> Option<Vec<TeventField>> {
        let ev = attachable(system, event)?;
        Some(
            ev.fields()
                .iter()
                .map(|f| {
                    let name = f.name.split('[').next().unwrap_or("");
                    TeventField {
                        name: String::from(name),
                        offset: f.offset as u32,
                        size: f.size as u32,
                        signed: f.signed,
                        string: StrKind::of_field(&f.type_name, &f.name),
                    }
                })
                .collect(),
        )
    }

    fn check_filter(&self, system: &str, event: &str, filter: &str) -> Result<(), Errno> {
        compile_filter(system, event, filter).map(|_| ())
    }
}

/// Compiles `filter` on the attached event's fields, logging a failure
/// as Linux's `create_event_filter` does.
fn compile_filter(system: &str, event: &str, filter: &str) -> Result<Option<EventFilter>, Errno> {
    let ev = attachable(system, event).ok_or(Errno::ENODEV)?;
    let fields = event_filter::event_fields(&ev);
    let schema = event_filter::schema(&fields);
    let up = trace_filter::apply_event_filter(filter.as_bytes(), &schema, &event_filter::filter_env());
    if let Some(f) = &up.failure {
        error_log::tracing_log_err(FILTER_ERROR_LOC, &f.command, &f.err);
    }
    up.result()?;
    Ok(up.filter)
}

/// The event probe's own trace event.
fn event_def(def: &Arc<ProbeDef>, ep: &Arc<TraceEprobe>) -> TraceEventDef {
    let fields = def
        .fields()
        .into_iter()
        .map(|f| {
            let (ty, name) = match f.type_name.find('[') {
                Some(i) if !f.type_name.starts_with("__data_loc") => {
                    (String::from(&f.type_name[..i]), format!("{}[]", f.name))
                }
                _ => (f.type_name.clone(), f.name.clone()),
            };
            FieldDesc::new(&ty, &name, f.offset, f.size, f.signed)
        })
        .collect();
    let pdef = def.clone();
    let weak: Weak<TraceEprobe> = Arc::downgrade(ep);
    TraceEventDef {
        system: def.group.clone(),
        name: def.event.clone(),
        fields,
        print_fmt: def.print_fmt(),
        print: Box::new(move |out, rec| {
            out.push_str(&pdef.event);
            out.push_str(": ");
            let mut text = Vec::new();
            pdef.print(rec.entry, &Kallsyms, &mut text);
            out.push_str(&String::from_utf8_lossy(&text));
            out.push('\n');
        }),
        reg: Some(Box::new(move |on| match weak.upgrade() {
            Some(ep) => ep.set_armed(on),
            None => Err(Errno::ENOENT),
        })),
        ignore_enable: false,
    }
}

/// Runs an `e` command (Linux's `__trace_eprobe_create`).
fn create(raw: &str) -> Result<(), Errno> {
    if !raw.trim_start().starts_with('e') {
        return Err(Errno::ECANCELED);
    }
    let log = |e: &uapi::error::CmdError| {
        if !e.msg.is_empty() {
            let text = command_text(raw);
            // A register: Linux logs BAD_VAR, then BAD_FETCH_ARG at the
            // same place.
            if e.msg == TpErr::BadFetchArg.msg() && text.get(e.pos..).is_some_and(|t| t.starts_with('%')) {
                let first = uapi::error::CmdError::new(e.errno, TpErr::BadVar.msg(), e.pos);
                error_log::tracing_log_err(ERR_LOC, &text, &first);
            }
            error_log::tracing_log_err(ERR_LOC, &text, e);
        }
        e.errno
    };
    let def = match trace_probe::parse_eprobe(raw, &KernelProbeContext, &Lookup) {
        Ok(d) => Arc::new(d),
        Err(e) if e.errno == Errno::ECANCELED => return Err(Errno::ECANCELED),
        Err(e) => return Err(log(&e)),
    };
    let ProbeKind::Eprobe { system, event, filter } = &def.kind else {
        return Err(Errno::EINVAL);
    };
    let attached = attachable(system, event).ok_or(Errno::ENODEV)?;
    let filter = match filter {
        Some(f) => compile_filter(system, event, f)?.map(Arc::new),
        None => None,
    };
    let ep = Arc::new(TraceEprobe {
        def: def.clone(),
        ev: spin::Once::new(),
        attached,
        filter,
        hook: spin::Mutex::new(None),
        seq: next_seq(),
        was_enabled: AtomicBool::new(false),
    });
    let ev = match events::register_trace_event(event_def(&def, &ep)) {
        Ok(ev) => ev,
        Err(Errno::EEXIST) => return Err(log(&def.event_exists_error())),
        Err(e) => return Err(e),
    };
    ep.ev.call_once(|| ev);
    EPROBES.lock().push(ep);
    Ok(())
}

/// Linux's `eprobe_dyn_event_match`.
fn matches(ep: &TraceEprobe, system: Option<&str>, event: &str, args: &[&str]) -> bool {
    if system.is_some_and(|s| s != ep.def.group) {
        return false;
    }
    if !event.is_empty() && event != ep.def.event {
        return false;
    }
    let Some((first, rest)) = args.split_first() else {
        return true;
    };
    let ProbeKind::Eprobe {
        system: asys,
        event: aev,
        ..
    } = &ep.def.kind
    else {
        return false;
    };
    let Some(i) = first.find(['/', '.']) else { return false };
    if &first[..i] != asys || &first[i + 1..] != aev {
        return false;
    }
    // trace_probe_match_command_args.
    if rest.len() > ep.def.args.len() {
        return false;
    }
    rest.iter()
        .zip(ep.def.args.iter())
        .all(|(w, a)| w.strip_prefix(a.name.as_str()).and_then(|r| r.strip_prefix('=')) == Some(a.comm.as_str()))
}

/// Removes `list[i]`: EBUSY while enabled.
fn free(list: &mut Vec<Arc<TraceEprobe>>, i: usize) -> Result<bool, Errno> {
    let ep = list[i].clone();
    if let Some(ev) = ep.ev.get() {
        events::unregister_trace_event(ev)?;
    }
    list.remove(i);
    Ok(ep.was_enabled.load(Ordering::Acquire))
}

/// The event probes' part of `dynamic_events`.
pub(super) struct EprobeOps;

/// The one [`EprobeOps`].
pub(super) static EPROBE_OPS: EprobeOps = EprobeOps;

impl DynEventOps for EprobeOps {
    fn create(&self, raw: &str) -> Result<(), Errno> {
        create(raw)
    }

    fn show(&self, out: &mut Vec<(u64, String)>) {
        for e in EPROBES.lock().iter() {
            out.push((e.seq, e.def.render()));
        }
    }

    fn release(&self, system: Option<&str>, event: &str, args: &[&str]) -> Result<usize, Errno> {
        let mut list = EPROBES.lock();
        let mut n = 0;
        let mut clear = false;
        let mut i = 0;
        while i < list.len() {
            if !matches(&list[i], system, event, args) {
                i += 1;
                continue;
            }
            clear |= free(&mut list, i)?;
            n += 1;
        }
        drop(list);
        if clear {
            events::reset_cleared_arrays();
        }
        Ok(n)
    }

    fn any_busy(&self) -> bool {
        EPROBES
            .lock()
            .iter()
            .any(|e| e.ev.get().is_some_and(|ev| ev.is_enabled()))
    }

    fn release_all(&self) -> Result<(), Errno> {
        let mut list = EPROBES.lock();
        if list.iter().any(|e| e.ev.get().is_some_and(|ev| ev.is_enabled())) {
            return Err(Errno::EBUSY);
        }
        let mut clear = false;
        while !list.is_empty() {
            clear |= free(&mut list, 0)?;
        }
        drop(list);
        if clear {
            events::reset_cleared_arrays();
        }
        Ok(())
    }
}
