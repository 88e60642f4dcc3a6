//! fprobe events (Linux's `trace_fprobe.c`): `f[:[GRP/][EVENT]]
//! FUNC[%return] [ARGS]` in `dynamic_events` makes an event
//! `events/<group>/<event>` fed by an [`Fprobe`] on the function, at its
//! entry or, with `%return` (or a `$retval` argument), at its exit; the
//! default group is `fprobes` and the default name `FUNC__entry` or
//! `FUNC__exit`.
//!
//! `t[:[GRP/][EVENT]] TRACEPOINT [ARGS]` (group `tracepoints`, default
//! name the tracepoint's) is an fprobe on the tracepoint's probe function
//! `__probestub_<name>`, which the tracepoint calls while a probe is
//! attached: `$argN` and BTF names are the tracepoint's arguments.
//!
//! The grammar, the fetch-argument compiler and interpreter, the record
//! layout and the text are the kprobe events' (the `trace-probe` crate,
//! with Linux's fprobe rules: no registers); a hit turns the ftrace
//! registers into `pt_regs` and records through `trace_kprobe`'s fetch
//! environment. As in Linux the fprobe is registered when the event is
//! made (so an unknown function is refused then) and disabled until the
//! event is enabled. An exit event that reads arguments saves them at entry
//! in the fprobe's entry data.

use super::error_log;
use super::events::{self, TraceEvent};
use super::fprobe::{self, Fprobe};
use super::trace_dynevent::{next_seq, DynEventOps};
use super::trace_kprobe::{probe_event_def, record, Hit, KernelProbeContext, RegsEnv};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use arch::ftrace::{FtraceRegs, FtraceRetRegs};
use core::sync::atomic::{AtomicBool, Ordering};
use trace_probe::{command_text, parse_fprobe_command, CmdError, ProbeDef, ProbeKind, ProbeSite, MAX_TRACE_ARGS};
use uapi::Errno;

/// Where `error_log` says fprobe errors come from.
const ERR_LOC: &str = "trace_fprobe";

/// One event and the fprobes of its definitions (Linux's
/// `trace_probe_event`).
struct FprobeEvent {
    ev: spin::Once<Arc<TraceEvent>>,
    /// Hits are recorded (Linux's `TP_FLAG_TRACE`).
    tracing: Arc<AtomicBool>,
    /// Enabled, and the fprobes of its definitions.
    arm: spin::Mutex<(bool, Vec<Arc<Fprobe>>)>,
    /// It was enabled once: removing it clears the trace buffer.
    was_enabled: AtomicBool,
}

impl FprobeEvent {
    /// Enable or disable every fprobe of the event; from its `reg`.
    fn set_armed(&self, on: bool) -> Result<(), Errno> {
        let mut st = self.arm.lock();
        if on {
            self.tracing.store(true, Ordering::Release);
            for fp in &st.1 {
                fprobe::enable_fprobe(fp);
            }
            self.was_enabled.store(true, Ordering::Release);
        } else {
            for fp in &st.1 {
                fprobe::disable_fprobe(fp);
            }
            self.tracing.store(false, Ordering::Release);
        }
        st.0 = on;
        Ok(())
    }
}

/// One definition (Linux's `trace_fprobe`).
struct TraceFprobe {
    def: Arc<ProbeDef>,
    pe: Arc<FprobeEvent>,
    fp: Arc<Fprobe>,
    /// The tracepoint of a `t` probe, whose probe function it holds on.
    tracepoint: Option<String>,
    seq: u64,
}

/// Every fprobe event definition, in the order they were made.
static FPROBES: spin::Mutex<Vec<Arc<TraceFprobe>>> = spin::Mutex::new(Vec::new());

/// An entry hit (Linux's `fentry_trace_func`).
fn fentry_handler(hit: &Hit, ip: usize, regs: &FtraceRegs) {
    let pt = crate::kprobes::ftrace::pt_regs(regs, ip);
    record(hit, &RegsEnv::new(&pt), ProbeSite::Entry { ip: ip as u64 }, &[]);
}

/// An exit event's entry: saves the arguments it reads at return (Linux's
/// `trace_fprobe_entry_handler`).
fn fexit_entry_handler(hit: &Hit, ip: usize, regs: &FtraceRegs, data: &mut [u8]) {
    let n = hit.def.entry_data_len().min(MAX_TRACE_ARGS);
    let mut words = [0u64; MAX_TRACE_ARGS];
    let pt = crate::kprobes::ftrace::pt_regs(regs, ip);
    hit.def.store_entry_data(&RegsEnv::new(&pt), &mut words[..n]);
    for (chunk, w) in data.chunks_exact_mut(8).zip(words[..n].iter()) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
}

/// An exit hit (Linux's `fexit_trace_func`): `entry_ip` returned to
/// `ret_ip`.
fn fexit_handler(hit: &Hit, entry_ip: usize, ret_ip: usize, regs: &FtraceRetRegs, data: &[u8]) {
    let n = hit.def.entry_data_len().min(MAX_TRACE_ARGS);
    let mut words = [0u64; MAX_TRACE_ARGS];
    for (w, chunk) in words[..n].iter_mut().zip(data.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        *w = u64::from_le_bytes(b);
    }
    let pt = crate::kprobes::ftrace::ret_pt_regs(regs, ret_ip);
    let site = ProbeSite::Return {
        func: entry_ip as u64,
        ret_ip: ret_ip as u64,
    };
    record(hit, &RegsEnv::new(&pt), site, &words[..n]);
}

/// Makes the fprobe of `def`, feeding `hit`, disabled unless `armed`.
fn make_fprobe(def: &ProbeDef, hit: &Arc<Hit>, armed: bool) -> Fprobe {
    let mut fp = Fprobe::new();
    if def.is_return {
        let edata = 8 * def.entry_data_len();
        fp = fp.maxactive(def.maxactive as usize).entry_data_size(edata);
        if edata != 0 {
            let h = hit.clone();
            fp = fp.entry_handler(move |_, ip, _, regs, data| {
                fexit_entry_handler(&h, ip, regs, data);
                0
            });
        }
        let h = hit.clone();
        fp = fp.exit_handler(move |_, ip, ret_ip, regs, data| fexit_handler(&h, ip, ret_ip, regs, data));
    } else {
        let h = hit.clone();
        fp = fp.entry_handler(move |_, ip, _, regs, _| {
            fentry_handler(&h, ip, regs);
            0
        });
    }
    if !armed {
        fp = fp.disabled();
    }
    fp
}

/// Registers `fp` on the function of `def` (Linux's
/// `__register_trace_fprobe`). A tracepoint probe first makes the tracepoint call its probe function.
fn register(def: &ProbeDef, fp: &Arc<Fprobe>) -> Result<(), Errno> {
    if let ProbeKind::Tprobe { tracepoint } = &def.kind {
        let stub = super::tracepoint::tracepoint_probe_register(tracepoint)?;
        let r = fprobe::register_fprobe_ips(fp, &[stub]);
        if r.is_err() {
            super::tracepoint::tracepoint_probe_unregister(tracepoint);
        }
        return r;
    }
    let name = match &def.location {
        trace_probe::ProbeLocation::Symbol { name, .. } => name.as_str(),
        trace_probe::ProbeLocation::Address(_) => return Err(Errno::EINVAL),
    };
    // As Linux, the symbol is a filter glob: a name matching no traceable
    // function is EINVAL ("Failed to register probe event").
    fprobe::register_fprobe(fp, name, None)
}

fn new_hit(def: &Arc<ProbeDef>, ev: &Arc<TraceEvent>, pe: &FprobeEvent) -> Arc<Hit> {
    Arc::new(Hit::new(def, ev, &pe.tracing))
}

/// Runs one `f` definition (Linux's `register_trace_fprobe` and its
/// caller's error reporting).
fn define(def: ProbeDef) -> Result<(), CmdError> {
    let mut list = FPROBES.lock();
    let def = Arc::new(def);
    let same: Vec<Arc<TraceFprobe>> = list
        .iter()
        .filter(|t| t.def.group == def.group && t.def.event == def.event)
        .cloned()
        .collect();
    if let Some(first) = same.first() {
        let existing: Vec<&ProbeDef> = same.iter().map(|t| &*t.def).collect();
        def.check_append(&existing)?;
        let pe = first.pe.clone();
        let ev = pe.ev.get().ok_or_else(|| def.register_error(Errno::ENOENT))?.clone();
        let hit = new_hit(&def, &ev, &pe);
        let mut st = pe.arm.lock();
        let fp = Arc::new(make_fprobe(&def, &hit, st.0));
        register(&def, &fp).map_err(|e| def.register_error(e))?;
        st.1.push(fp.clone());
        drop(st);
        list.push(Arc::new(TraceFprobe {
            tracepoint: tracepoint_of(&def),
            def,
            pe,
            fp,
            seq: next_seq(),
        }));
        return Ok(());
    }
    let pe = Arc::new(FprobeEvent {
        ev: spin::Once::new(),
        tracing: Arc::new(AtomicBool::new(false)),
        arm: spin::Mutex::new((false, Vec::new())),
        was_enabled: AtomicBool::new(false),
    });
    let weak: Weak<FprobeEvent> = Arc::downgrade(&pe);
    let reg = Box::new(move |on| match weak.upgrade() {
        Some(pe) => pe.set_armed(on),
        None => Err(Errno::ENOENT),
    });
    let ev = match events::register_trace_event(probe_event_def(&def, reg)) {
        Ok(ev) => ev,
        Err(Errno::EEXIST) => return Err(def.event_exists_error()),
        Err(e) => return Err(def.register_error(e)),
    };
    pe.ev.call_once(|| ev.clone());
    let hit = new_hit(&def, &ev, &pe);
    let fp = Arc::new(make_fprobe(&def, &hit, false));
    if let Err(e) = register(&def, &fp) {
        let _ = events::unregister_trace_event(&ev);
        return Err(def.register_error(e));
    }
    pe.arm.lock().1.push(fp.clone());
    list.push(Arc::new(TraceFprobe {
        tracepoint: tracepoint_of(&def),
        def,
        pe,
        fp,
        seq: next_seq(),
    }));
    Ok(())
}

fn tracepoint_of(def: &ProbeDef) -> Option<String> {
    match &def.kind {
        ProbeKind::Tprobe { tracepoint } => Some(tracepoint.clone()),
        _ => None,
    }
}

/// Runs an `f` or `t` command, logging Linux's `error_log` entry when it
/// fails.
fn create(raw: &str) -> Result<(), Errno> {
    let r = match parse_fprobe_command(raw, &KernelProbeContext) {
        Ok(def) => define(def),
        Err(e) if e.errno == Errno::ECANCELED => return Err(Errno::ECANCELED),
        Err(e) => Err(e),
    };
    r.map_err(|e| {
        if !e.msg.is_empty() {
            error_log::tracing_log_err(ERR_LOC, &command_text(raw), &e);
        }
        e.errno
    })
}

/// Linux's `trace_fprobe_match`: group, event, then the symbol
/// (`FUNC[%return]`) and `NAME=EXPR` of the first arguments.
fn matches(t: &TraceFprobe, system: Option<&str>, event: &str, args: &[&str]) -> bool {
    if system.is_some_and(|s| s != t.def.group) {
        return false;
    }
    if !event.is_empty() && event != t.def.event {
        return false;
    }
    let Some((first, rest)) = args.split_first() else {
        return true;
    };
    let sym = first.strip_suffix("%return").unwrap_or(first);
    if sym != t.def.location_text() || first.ends_with("%return") != t.def.is_return {
        return false;
    }
    rest.len() <= t.def.args.len()
        && rest
            .iter()
            .zip(t.def.args.iter())
            .all(|(w, a)| w.strip_prefix(a.name.as_str()).and_then(|r| r.strip_prefix('=')) == Some(a.comm.as_str()))
}

/// Removes `list[i]` (Linux's `unregister_trace_fprobe`): the last
/// definition of an event takes the event, which must not be enabled or
/// open (EBUSY). Returns whether the trace must be cleared.
fn free(list: &mut Vec<Arc<TraceFprobe>>, i: usize) -> Result<bool, Errno> {
    let t = list[i].clone();
    let siblings = list.iter().filter(|o| Arc::ptr_eq(&o.pe, &t.pe)).count() > 1;
    let mut clear = false;
    if !siblings {
        if let Some(ev) = t.pe.ev.get() {
            events::unregister_trace_event(ev)?;
        }
        clear = t.pe.was_enabled.load(Ordering::Acquire);
    }
    t.pe.arm.lock().1.retain(|f| !Arc::ptr_eq(f, &t.fp));
    if fprobe::unregister_fprobe(&t.fp).is_ok() {
        if let Some(tp) = &t.tracepoint {
            super::tracepoint::tracepoint_probe_unregister(tp);
        }
    }
    list.remove(i);
    Ok(clear)
}

/// The fprobe events' part of `dynamic_events`.
pub(super) struct FprobeOps;

/// The one [`FprobeOps`].
pub(super) static FPROBE_EVENT_OPS: FprobeOps = FprobeOps;

impl DynEventOps for FprobeOps {
    fn create(&self, raw: &str) -> Result<(), Errno> {
        create(raw)
    }

    fn show(&self, out: &mut Vec<(u64, String)>) {
        for t in FPROBES.lock().iter() {
            out.push((t.seq, t.def.render()));
        }
    }

    fn release(&self, system: Option<&str>, event: &str, args: &[&str]) -> Result<usize, Errno> {
        let mut list = FPROBES.lock();
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
        FPROBES
            .lock()
            .iter()
            .any(|t| t.pe.ev.get().is_some_and(|ev| ev.is_enabled()))
    }

    fn release_all(&self) -> Result<(), Errno> {
        let mut list = FPROBES.lock();
        if list.iter().any(|t| t.pe.ev.get().is_some_and(|ev| ev.is_enabled())) {
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

/// Whether `group`/`event` is an fprobe event.
pub fn is_fprobe_event(group: &str, event: &str) -> bool {
    FPROBES
        .lock()
        .iter()
        .any(|t| t.def.group == group && t.def.event == event)
}
