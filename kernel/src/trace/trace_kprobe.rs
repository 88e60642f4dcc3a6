//! The kprobe-based event tracer (Linux's `trace_kprobe.c` and the kprobe
//! half of `trace_dynevent.c`): `kprobe_events` and `dynamic_events` take
//! definitions (parsed by the `trace-probe` crate), each of which becomes
//! a trace event `events/<group>/<event>` and a kprobe or kretprobe that
//! is registered disabled and armed only while its event is enabled;
//! `kprobe_profile` counts hits and misses per probe.
//!
//! On a hit, the handler reads what the arguments name from the trapped
//! registers, the kernel stack, kernel memory (no-fault loads), user
//! memory (uaccess with page faults disabled) and the task, straight into
//! a reserved ring-buffer entry: no allocation, no blocking.
//!
//! Locks, outermost first: [`DYN_EVENTS`] (commands), the event
//! registry's mutex (enable and disable call [`ProbeEvent::set_armed`]),
//! a [`ProbeEvent`]'s probe list, the kprobes mutex.

use super::error_log;
use super::events::{self, FieldDesc, TraceEvent, TraceEventDef};
use super::tracefs::{readme_add, ReadmeSection};
use crate::fs::pseudo::PseudoDir;
use crate::kprobes::kretprobe::{register_kretprobe, unregister_kretprobe, Kretprobe, KretprobeInstance};
use crate::kprobes::{disable_kprobe, enable_kprobe, register_kprobe, unregister_kprobe, Kprobe};
use crate::percpu::{PerCpu, NR_CPUS};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use arch::ptrace::PtRegs;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use trace_probe::{
    command_text, parse_command, split_commands, Command, FetchEnv, FuncProto, ProbeContext, ProbeDef, ProbeLocation,
    ProbeSite, Reg, RemoveCmd, Symbolizer, MAX_TRACE_ARGS,
};
use uapi::error::CmdError;
use uapi::Errno;
use vfs::file::{FileOps, OpenFile};

/// Where `error_log` says kprobe errors come from.
const ERR_LOC: &str = "trace_kprobe";

/// What the kernel tells the parser about its symbols.
pub struct KernelProbeContext;

impl ProbeContext for KernelProbeContext {
    fn lookup_name(&self, name: &str) -> Option<u64> {
        crate::kallsyms::lookup_symbol(name).map(|a| a as u64)
    }

    /// Functions called `name`, or `name.N`: kallsyms numbers the
    /// functions that share a name (`name.1`, `name.2`, ...), and a probe on
    /// the bare name is refused as Linux refuses a non-unique symbol.
    fn count_symbols(&self, name: &str) -> usize {
        crate::kallsyms::table()
            .iter()
            .filter(|s| {
                s.name == name
                    || s.name
                        .strip_prefix(name)
                        .and_then(|r| r.strip_prefix('.'))
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .count()
    }

    fn func_proto(&self, name: &str) -> Option<&FuncProto> {
        crate::btf::func_proto(name)
    }

    /// This kernel's objects `dput` and `vfs_read` see: see `vfs::dentry`.
    fn dentry_layout(&self) -> Option<trace_probe::DentryLayout> {
        Some(trace_probe::DentryLayout {
            d_name_name: vfs::dentry::DENTRY_D_NAME_OFFSET as u32,
            f_path_dentry: vfs::dentry::FILE_F_DENTRY_OFFSET as u32,
        })
    }

    fn tracepoint_probe(&self, name: &str) -> Option<String> {
        super::tracepoint::tracepoint_probestub(name)?;
        Some(format!("__probestub_{name}"))
    }
}

/// kallsyms for printing (`%pS`, `symbol` arguments, the probe address).
pub(super) struct KallsymsSymbolizer;

impl Symbolizer for KallsymsSymbolizer {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        crate::kallsyms::lookup_addr(addr as usize).map(|s| (s.name, s.offset, s.size))
    }
}

/// What a hit sees: the trapped registers and the current task (for
/// fprobes too, through the `pt_regs` their ftrace registers make). The
/// task's name and stack are read only if an argument asks for them.
pub(super) struct RegsEnv<'a> {
    regs: &'a PtRegs,
    comm: core::cell::OnceCell<[u8; 16]>,
    /// The current task's kernel stack, `[low, high)`.
    stack: core::cell::OnceCell<Option<(usize, usize)>>,
}

impl<'a> RegsEnv<'a> {
    pub(super) fn new(regs: &'a PtRegs) -> RegsEnv<'a> {
        RegsEnv {
            regs,
            comm: core::cell::OnceCell::new(),
            stack: core::cell::OnceCell::new(),
        }
    }

    fn stack(&self) -> Option<(usize, usize)> {
        *self
            .stack
            .get_or_init(|| crate::sched::with_current(|t| t.stack_bounds()).flatten())
    }
}

impl FetchEnv for RegsEnv<'_> {
    fn register(&self, reg: Reg) -> u64 {
        match reg {
            Reg::X(n) => self.regs.regs.get(usize::from(n)).copied().unwrap_or(0),
            Reg::Sp => self.regs.sp,
            Reg::Pc => self.regs.pc,
            Reg::Pstate => self.regs.pstate,
        }
    }

    fn kernel_stack_nth(&self, n: u32) -> u64 {
        let Some((lo, hi)) = self.stack() else { return 0 };
        let Some(addr) = (self.regs.sp as usize).checked_add(8 * n as usize) else {
            return 0;
        };
        if addr < lo || addr.saturating_add(8) > hi {
            return 0;
        }
        arch::nofault::read_u64_nofault(addr).unwrap_or(0)
    }

    fn read_kernel(&self, addr: u64, dst: &mut [u8]) -> bool {
        // Aligned 8-byte no-fault loads: one never crosses a page, so it
        // faults exactly when a byte it is read for does.
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
        self.comm
            .get_or_init(|| crate::sched::with_current(|t| t.comm.get()).unwrap_or([0; 16]))
    }

    fn sprint_symbol(&self, addr: u64, dst: &mut [u8]) -> usize {
        trace_probe::sprint_symbol(&KallsymsSymbolizer, addr, dst)
    }
}

/// The probes of one event that can be armed, and whether they are.
struct ArmState {
    armed: bool,
    kps: Vec<Arc<Kprobe>>,
}

/// One event of probes (Linux's `trace_probe_event`): its trace event and
/// the kprobes that feed it.
struct ProbeEvent {
    ev: spin::Once<Arc<TraceEvent>>,
    /// Hits are recorded (Linux's `TP_FLAG_TRACE`): set before the probes
    /// are armed and cleared after they are disarmed, so that every hit of
    /// an armed probe is recorded.
    tracing: Arc<AtomicBool>,
    arm: spin::Mutex<ArmState>,
    /// It was enabled once: removing it clears the trace buffer, as Linux
    /// does (its entries could no longer be printed).
    was_enabled: AtomicBool,
}

impl ProbeEvent {
    /// Enable (arm every probe) or disable; from the event's `reg`.
    fn set_armed(&self, on: bool) -> Result<(), Errno> {
        let mut st = self.arm.lock();
        if on {
            self.tracing.store(true, Ordering::Release);
            for (i, kp) in st.kps.iter().enumerate() {
                if let Err(e) = enable_kprobe(kp) {
                    for k in &st.kps[..i] {
                        let _ = disable_kprobe(k);
                    }
                    self.tracing.store(false, Ordering::Release);
                    return Err(e);
                }
            }
            self.was_enabled.store(true, Ordering::Release);
        } else {
            for kp in &st.kps {
                let _ = disable_kprobe(kp);
            }
            self.tracing.store(false, Ordering::Release);
        }
        st.armed = on;
        Ok(())
    }

    fn event(&self) -> Option<&Arc<TraceEvent>> {
        self.ev.get()
    }
}

/// A registered kprobe or kretprobe.
enum Probe {
    K(Arc<Kprobe>),
    R(Arc<Kretprobe>),
}

impl Probe {
    fn kprobe(&self) -> Option<Arc<Kprobe>> {
        match self {
            Probe::K(k) => Some(k.clone()),
            Probe::R(r) => r.kprobe().cloned(),
        }
    }

    /// Linux's `trace_kprobe_missed`.
    fn nmissed(&self) -> u64 {
        match self {
            Probe::K(k) => k.nmissed(),
            Probe::R(r) => r.kprobe().map_or(0, |k| k.nmissed()) + r.nmissed(),
        }
    }

    fn unregister(&self) {
        match self {
            Probe::K(k) => unregister_kprobe(k),
            Probe::R(r) => unregister_kretprobe(r),
        }
    }
}

/// What a hit needs (of a kprobe, or of an fprobe event).
pub(crate) struct Hit {
    pub(super) def: Arc<ProbeDef>,
    pub(super) ev: Arc<TraceEvent>,
    /// Its event's [`ProbeEvent::tracing`].
    pub(super) tracing: Arc<AtomicBool>,
    /// Hits counted per CPU (Linux's per-CPU `nhit`, summed by
    /// `kprobe_profile`): a shared counter would be an atomic
    /// read-modify-write on every hit.
    nhit: PerCpu<AtomicU64>,
    /// The probed address (`__probe_func` of return records), known once
    /// the probe is registered.
    pub(super) func: AtomicU64,
    /// A definition without arguments: its record is the common fields and
    /// its probe header (`__probe_ip`, or `__probe_func` and
    /// `__probe_ret_ip`), written as words without the fetch machinery.
    plain: bool,
}

impl Hit {
    pub(super) fn new(def: &Arc<ProbeDef>, ev: &Arc<TraceEvent>, tracing: &Arc<AtomicBool>) -> Hit {
        let plain = def.args.is_empty() && def.entry_args.is_empty();
        // What record_words writes: the common fields, then the header's
        // one (entry) or two (return) words.
        debug_assert!(!plain || def.fixed_size() == super::TRACE_ENTRY_SIZE + def.probe_header_size());
        debug_assert!(def.probe_header_size() == if def.is_return { 16 } else { 8 });
        Hit {
            def: def.clone(),
            ev: ev.clone(),
            tracing: tracing.clone(),
            nhit: PerCpu::new([const { AtomicU64::new(0) }; NR_CPUS]),
            func: AtomicU64::new(0),
            plain,
        }
    }

    /// Counts a hit on this CPU's counter: a load and a store, no atomic
    /// read-modify-write. Kernel code is not preempted, so the task stays
    /// on this CPU; only this CPU writes its slot. An interrupt recording
    /// a hit of the same definition between the load and the store loses
    /// one count, as Linux's `raw_cpu_inc(*tk->nhit)` (not interrupt-safe
    /// either) may; the slot is atomic so that `kprobe_profile` on another
    /// CPU reads a whole value.
    #[inline(always)]
    fn count(&self) {
        self.count_on(crate::percpu::this_cpu());
    }

    /// [`Hit::count`] on `cpu`, which must be this CPU.
    #[inline(always)]
    fn count_on(&self, cpu: usize) {
        let n = self.nhit.on(cpu);
        n.store(n.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// Every CPU's hits (Linux's `trace_kprobe_nhit`).
    pub(super) fn nhit(&self) -> u64 {
        self.nhit
            .iter()
            .fold(0u64, |a, n| a.wrapping_add(n.load(Ordering::Relaxed)))
    }
}

/// One definition (Linux's `trace_kprobe`).
struct TraceKprobe {
    def: Arc<ProbeDef>,
    pe: Arc<ProbeEvent>,
    /// None while pending (a module symbol: this kernel has no modules).
    probe: Option<Probe>,
    hit: Arc<Hit>,
    /// Its place in `dynamic_events`, among the other types' events.
    seq: u64,
}

/// Every definition, in the order they were made (the order of
/// `kprobe_events`, `dynamic_events` and `kprobe_profile`).
static DYN_EVENTS: spin::Mutex<Vec<Arc<TraceKprobe>>> = spin::Mutex::new(Vec::new());

/// A `p` hit.
fn kprobe_dispatcher(hit: &Hit, addr: usize, regs: &PtRegs) {
    let env = RegsEnv::new(regs);
    let site = ProbeSite::Entry { ip: addr as u64 };
    record(hit, &env, site, &[]);
}

/// What the pre-handler of a `p:` event without arguments does for a hit
/// at `addr` ([`crate::kprobes::Kprobe::records_event`]), from a handler
/// that saved no probe context: the record takes it itself (see
/// [`super::events::TraceEvent::record_words_probe`]).
#[inline(always)]
pub(crate) fn record_entry_hit(hit: &Hit, addr: usize) {
    if !hit.tracing.load(Ordering::Relaxed) {
        return;
    }
    if hit.ev.record_words_probe::<1, 2>([addr as u64]) || hit.ev.is_traced() {
        hit.count();
    }
}

/// [`record_entry_hit`] on the path that calls nothing
/// ([`super::trace_event_try_write_words`]), on `cpu` (this CPU): the hit
/// counted once committed. Declined, with nothing done, where
/// [`record_entry_hit`] has more to do.
#[inline(always)]
pub(crate) fn try_record_entry_hit(hit: &Hit, addr: usize, cpu: usize) -> super::TryWrite {
    if !hit.tracing.load(Ordering::Relaxed) {
        return super::TryWrite::Declined;
    }
    let r = hit.ev.try_record_words_probe::<1, 2>(cpu, [addr as u64]);
    if r != super::TryWrite::Declined {
        hit.count_on(cpu);
    }
    r
}

/// What [`try_record_entry_hit`] left after its commit on `cpu`.
pub(crate) fn entry_hit_after_commit(hit: &Hit, cpu: usize) {
    super::trace_event_after_commit(hit.ev.file.tr, cpu);
}

/// [`record`] of a definition without arguments.
#[inline(always)]
fn record_plain(hit: &Hit, site: ProbeSite) {
    if !hit.tracing.load(Ordering::Relaxed) {
        return;
    }
    let recorded = match site {
        ProbeSite::Entry { ip } => hit.ev.record_words::<1, 2>([ip]),
        ProbeSite::Return { func, ret_ip } => hit.ev.record_words::<2, 3>([func, ret_ip]),
    };
    if recorded || hit.ev.is_traced() {
        hit.count();
    }
}

/// Counts a hit and writes its record: its size is the fixed part and
/// what the strings need now (Linux's `__get_data_size`).
///
/// A hit is counted only while the event traces, so every hit
/// `kprobe_profile` counts is either in the buffer or counted lost there,
/// even for a hit racing the event's disabling (or a return probe's
/// instance returning after it); Linux counts those too, then drops them.
#[inline(always)]
pub(super) fn record(hit: &Hit, env: &RegsEnv<'_>, site: ProbeSite, edata: &[u64]) {
    // Relaxed: a flag on its own (what the record reads was set before
    // the probe was registered); an LDAR per hit costs as much as a dozen
    // plain loads under QEMU's TCG.
    if !hit.tracing.load(Ordering::Relaxed) {
        return;
    }
    if hit.plain {
        // Nothing to fetch: the record is the probe's own fields, written
        // in one step.
        return record_plain(hit, site);
    }
    let recorded = record_fetched(hit, env, site, edata);
    // Counted once it reached a buffer (recorded, or lost there): a hit
    // that raced the event's disabling past `tracing` and found no trace
    // array recording it is not.
    if recorded || hit.ev.is_traced() {
        hit.count();
    }
}

/// [`record`] of a definition with arguments: sized once, the fetch fills
/// exactly the room reserved (Linux's `__get_data_size` then
/// `store_trace_args` with that size). Out of line, so that [`record`]'s
/// callers inline only the no-args path.
#[inline(never)]
fn record_fetched(hit: &Hit, env: &RegsEnv<'_>, site: ProbeSite, edata: &[u64]) -> bool {
    let def = &hit.def;
    let dsize = def.dynamic_size(env, edata);
    let len = def.fixed_size() + dsize;
    hit.ev
        .record_entry_full(len, |e| def.fetch_sized(env, site, edata, e, dsize).is_ok())
}

/// A return probe's entry: saves the arguments `$argN` reads at return.
fn kretprobe_entry(hit: &Hit, ri: &mut KretprobeInstance, regs: &PtRegs) -> i32 {
    let n = hit.def.entry_data_len();
    if n == 0 || n > MAX_TRACE_ARGS {
        return 0;
    }
    let mut words = [0u64; MAX_TRACE_ARGS];
    let env = RegsEnv::new(regs);
    hit.def.store_entry_data(&env, &mut words[..n]);
    for (chunk, w) in ri.data.chunks_exact_mut(8).zip(words[..n].iter()) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    0
}

/// An `r` hit: the function at `func` returns to `ri.ret_addr`.
fn kretprobe_dispatcher(hit: &Hit, func: usize, ri: &KretprobeInstance, regs: &PtRegs) {
    let n = hit.def.entry_data_len().min(MAX_TRACE_ARGS);
    let mut words = [0u64; MAX_TRACE_ARGS];
    for (w, chunk) in words[..n].iter_mut().zip(ri.data.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        *w = u64::from_le_bytes(b);
    }
    let env = RegsEnv::new(regs);
    let site = ProbeSite::Return {
        func: func as u64,
        ret_ip: ri.ret_addr,
    };
    record(hit, &env, site, &words[..n]);
}

/// The trace event for a new probe event: its fields, `print fmt`, text,
/// and enabling that arms its probes.
fn event_def(def: &Arc<ProbeDef>, pe: &Arc<ProbeEvent>) -> TraceEventDef {
    let weak: Weak<ProbeEvent> = Arc::downgrade(pe);
    probe_event_def(
        def,
        Box::new(move |on| match weak.upgrade() {
            Some(pe) => pe.set_armed(on),
            None => Err(Errno::ENOENT),
        }),
    )
}

/// The trace event of a probe definition (kprobe or fprobe): its fields,
/// `print fmt` and text; `reg` arms and disarms its probes.
pub(super) fn probe_event_def(def: &Arc<ProbeDef>, reg: super::events::RegFn) -> TraceEventDef {
    let fields = def
        .fields()
        .into_iter()
        .map(|f| {
            // A fixed-size array is listed as `TYPE NAME[]` (Linux's f_show
            // for probe fields, which have no length).
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
    TraceEventDef {
        system: def.group.clone(),
        name: def.event.clone(),
        fields,
        print_fmt: def.print_fmt(),
        print: Box::new(move |out, rec| {
            out.push_str(&pdef.event);
            out.push_str(": ");
            let mut text = Vec::new();
            pdef.print(rec.entry, &KallsymsSymbolizer, &mut text);
            out.push_str(&String::from_utf8_lossy(&text));
            out.push('\n');
        }),
        reg: Some(reg),
        ignore_enable: false,
    }
}

/// Makes and registers the kprobe (or kretprobe) of `def`, disabled unless
/// its event is armed. `ENOENT` for a module probe leaves it pending.
fn register_probe(def: &Arc<ProbeDef>, hit: &Arc<Hit>, armed: bool) -> Result<Option<Probe>, Errno> {
    if def.pending {
        return Ok(None);
    }
    if let ProbeLocation::Address(a) = def.location {
        // Linux's kprobe_addr fails with ENOENT for an address in no
        // symbol, and an address probe that fails so is kept, unarmed, in
        // case a module brings the address later.
        if crate::kallsyms::lookup_addr(a as usize).is_none() {
            return Ok(None);
        }
    }
    let probe = if def.is_return {
        let rp = match &def.location {
            ProbeLocation::Symbol { name, .. } => Kretprobe::symbol(name),
            ProbeLocation::Address(a) => Kretprobe::at(*a as usize),
        };
        let (h1, h2) = (hit.clone(), hit.clone());
        let mut rp = rp
            .maxactive(def.maxactive as usize)
            .data_size(8 * def.entry_data_len())
            .handler(move |ri, regs| {
                let func = ri_func(&h1);
                kretprobe_dispatcher(&h1, func, ri, regs);
                0
            });
        if def.entry_data_len() > 0 {
            rp = rp.entry_handler(move |ri, regs| kretprobe_entry(&h2, ri, regs));
        }
        if !armed {
            rp = rp.disabled();
        }
        let rp = Arc::new(rp);
        register_kretprobe(&rp)?;
        Probe::R(rp)
    } else {
        let kp = match &def.location {
            ProbeLocation::Symbol { name, offset } => Kprobe::symbol(name, *offset as usize),
            ProbeLocation::Address(a) => Kprobe::at(*a as usize),
        };
        let h = hit.clone();
        let mut kp = kp.pre(move |kp, regs| {
            kprobe_dispatcher(&h, kp.addr(), regs);
            0
        });
        if hit.plain {
            // Nothing to fetch: the record is the probed address, which an
            // ftrace-based hit writes without calling the handler.
            kp = kp.records_event(hit.clone());
        }
        if !armed {
            kp = kp.disabled();
        }
        let kp = Arc::new(kp);
        register_kprobe(&kp)?;
        Probe::K(kp)
    };
    Ok(Some(probe))
}

/// The probed function's address for a return record: where the probe's
/// symbol is (resolved once at definition).
fn ri_func(hit: &Hit) -> usize {
    hit.func.load(Ordering::Relaxed) as usize
}

/// Runs one `p`/`r` definition (Linux's `register_trace_kprobe` and its
/// caller's error reporting).
fn define(mut def: ProbeDef) -> Result<(), CmdError> {
    if def.is_return && def.maxactive == 0 {
        // Linux shows the MAXACTIVE register_kretprobe picked.
        def.maxactive = trace_probe::default_maxactive(crate::smp::num_online_cpus() as u32);
    }
    let mut list = DYN_EVENTS.lock();
    let same: Vec<Arc<TraceKprobe>> = list
        .iter()
        .filter(|t| t.def.group == def.group && t.def.event == def.event)
        .cloned()
        .collect();
    let def = Arc::new(def);
    if let Some(first) = same.first() {
        // Append to an existing event (a multiprobe event).
        let existing: Vec<&ProbeDef> = same.iter().map(|t| &*t.def).collect();
        def.check_append(&existing)?;
        let pe = first.pe.clone();
        let ev = pe.event().ok_or_else(|| def.register_error(Errno::ENOENT))?.clone();
        let hit = new_hit(&def, &ev, &pe);
        // Under the event's arm lock: an enable racing with this sees the
        // new probe, or this sees the event armed.
        let mut st = pe.arm.lock();
        let probe = register_probe(&def, &hit, st.armed).map_err(|e| def.register_error(e))?;
        if let Some(kp) = probe.as_ref().and_then(Probe::kprobe) {
            hit.func.store(kp.addr() as u64, Ordering::Relaxed);
            st.kps.push(kp);
        }
        drop(st);
        list.push(Arc::new(TraceKprobe {
            def,
            pe,
            probe,
            hit,
            seq: super::trace_dynevent::next_seq(),
        }));
        return Ok(());
    }
    let pe = Arc::new(ProbeEvent {
        ev: spin::Once::new(),
        tracing: Arc::new(AtomicBool::new(false)),
        arm: spin::Mutex::new(ArmState {
            armed: false,
            kps: Vec::new(),
        }),
        was_enabled: AtomicBool::new(false),
    });
    let ev = match events::register_trace_event(event_def(&def, &pe)) {
        Ok(ev) => ev,
        Err(Errno::EEXIST) => return Err(def.event_exists_error()),
        Err(e) => return Err(def.register_error(e)),
    };
    pe.ev.call_once(|| ev.clone());
    let hit = new_hit(&def, &ev, &pe);
    let probe = match register_probe(&def, &hit, false) {
        Ok(p) => p,
        Err(e) => {
            let _ = events::unregister_trace_event(&ev);
            return Err(def.register_error(e));
        }
    };
    if let Some(kp) = probe.as_ref().and_then(Probe::kprobe) {
        hit.func.store(kp.addr() as u64, Ordering::Relaxed);
        pe.arm.lock().kps.push(kp);
    }
    list.push(Arc::new(TraceKprobe {
        def,
        pe,
        probe,
        hit,
        seq: super::trace_dynevent::next_seq(),
    }));
    Ok(())
}

fn new_hit(def: &Arc<ProbeDef>, ev: &Arc<TraceEvent>, pe: &ProbeEvent) -> Arc<Hit> {
    Arc::new(Hit::new(def, ev, &pe.tracing))
}

/// Removes definition `i` of `list` (Linux's `unregister_trace_kprobe`):
/// the last probe of an event takes the event with it, which must not be
/// enabled or open (EBUSY). Returns whether the trace must be cleared.
fn free_probe(list: &mut Vec<Arc<TraceKprobe>>, i: usize) -> Result<bool, Errno> {
    let tk = list[i].clone();
    let siblings = list.iter().filter(|t| Arc::ptr_eq(&t.pe, &tk.pe)).count() > 1;
    let mut clear = false;
    if !siblings {
        if let Some(ev) = tk.pe.event() {
            events::unregister_trace_event(ev)?;
        }
        clear = tk.pe.was_enabled.load(Ordering::Acquire);
    }
    if let Some(p) = &tk.probe {
        if let Some(kp) = p.kprobe() {
            tk.pe.arm.lock().kps.retain(|k| !Arc::ptr_eq(k, &kp));
        }
        p.unregister();
    }
    list.remove(i);
    Ok(clear)
}

/// `-:[GRP/]EVENT [matching]` (Linux's `dyn_event_release`): ENOENT if
/// nothing matches.
fn release(cmd: &RemoveCmd) -> Result<(), Errno> {
    let mut list = DYN_EVENTS.lock();
    let mut ret = Err(Errno::ENOENT);
    let mut clear = false;
    let mut i = 0;
    while i < list.len() {
        if !cmd.matches(&list[i].def) {
            i += 1;
            continue;
        }
        match free_probe(&mut list, i) {
            Ok(c) => {
                clear |= c;
                ret = Ok(());
            }
            Err(e) => {
                ret = Err(e);
                break;
            }
        }
    }
    drop(list);
    if clear {
        events::reset_cleared_arrays();
    }
    ret
}

/// Removes every kprobe event (`kprobe_events` or `dynamic_events` opened
/// with O_TRUNC; Linux's `dyn_events_release_all`): EBUSY, removing
/// nothing, if one is enabled.
pub fn release_all() -> Result<(), Errno> {
    let mut list = DYN_EVENTS.lock();
    if list.iter().any(|t| t.pe.event().is_some_and(|e| e.is_enabled())) {
        return Err(Errno::EBUSY);
    }
    let mut clear = false;
    let mut ret = Ok(());
    while !list.is_empty() {
        match free_probe(&mut list, 0) {
            Ok(c) => clear |= c,
            Err(e) => {
                ret = Err(e);
                break;
            }
        }
    }
    drop(list);
    if clear {
        events::reset_cleared_arrays();
    }
    ret
}

/// Whether `group`/`event` is a kprobe event (event probes cannot attach
/// to one).
pub fn is_kprobe_event(group: &str, event: &str) -> bool {
    DYN_EVENTS
        .lock()
        .iter()
        .any(|t| t.def.group == group && t.def.event == event)
}

/// Which file a command came through.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    KprobeEvents,
    DynamicEvents,
}

/// Runs one command, logging Linux's `error_log` entry for a rejected one.
fn run_command(raw: &str, src: Source) -> Result<(), Errno> {
    let ctx = KernelProbeContext;
    let owned;
    let mut raw = raw;
    // dynamic_events also removes with `!TYPE:[GRP/]EVENT`.
    if src == Source::DynamicEvents && raw.starts_with('!') {
        let words = trace_probe::argv_split(raw);
        let head = words.first().copied().unwrap_or("");
        let Some(i) = head.find(':') else {
            return Err(Errno::EINVAL);
        };
        let mut s = String::from("-:");
        s.push_str(&head[i + 1..]);
        for w in &words[1..] {
            s.push(' ');
            s.push_str(w);
        }
        owned = s;
        raw = &owned;
    }
    // Synthetic events and event probes (Linux's other dyn_event types).
    let mut others_removed = 0;
    if src == Source::DynamicEvents {
        if raw.starts_with('-') {
            others_removed = super::trace_dynevent::release(raw)?;
        } else if super::trace_dynevent::is_ours(raw) {
            return super::trace_dynevent::create(raw);
        }
    }
    let result = match parse_command(raw, &ctx) {
        Ok(Command::Empty) => Ok(()),
        Ok(Command::Remove(cmd)) => {
            return match release(&cmd) {
                Err(Errno::ENOENT) if others_removed > 0 => Ok(()),
                r => r,
            }
        }
        Err(_) if others_removed > 0 => return Ok(()),
        Ok(Command::Define(def)) => define(def),
        Err(e) => Err(e),
    };
    result.map_err(|e| {
        if !e.msg.is_empty() {
            error_log::tracing_log_err(ERR_LOC, &command_text(raw), &e);
        }
        e.errno
    })
}

/// A write to `kprobe_events`/`dynamic_events` (Linux's
/// `trace_parse_run_command`): one command a line, stopping at the first
/// that fails, whose error the write returns.
fn write_commands(buf: &[u8], src: Source) -> Result<usize, Errno> {
    for cmd in split_commands(buf) {
        let (line, _) = cmd?;
        run_command(line, src)?;
    }
    Ok(buf.len())
}

/// `kprobe_events`' and `dynamic_events`' text: one definition a line.
/// `dynamic_events` lists every type in the order they were made.
fn probes_show(src: Source) -> Vec<u8> {
    let mut lines: Vec<(u64, String)> = DYN_EVENTS.lock().iter().map(|t| (t.seq, t.def.render())).collect();
    if src == Source::DynamicEvents {
        super::trace_dynevent::show(&mut lines);
    }
    lines.sort_by_key(|(seq, _)| *seq);
    let mut s = String::new();
    for (_, line) in lines {
        s.push_str(&line);
        s.push('\n');
    }
    s.into_bytes()
}

/// `kprobe_profile`: name, hits, misses per probe.
fn profile_show() -> Vec<u8> {
    let mut s = String::new();
    for t in DYN_EVENTS.lock().iter() {
        let missed = t.probe.as_ref().map_or(0, Probe::nmissed);
        s.push_str(&format!("  {:<44} {:>15} {:>15}\n", t.def.event, t.hit.nhit(), missed));
    }
    s.into_bytes()
}

/// One open of `kprobe_events` or `dynamic_events`: the listing is taken
/// at the first read; writes are commands.
struct ProbesFile {
    src: Source,
    text: spin::Mutex<Option<Arc<Vec<u8>>>>,
}

impl FileOps for ProbesFile {
    fn read(&self, _: &OpenFile, buf: &mut [u8], pos: &mut u64) -> vfs::Result<usize> {
        let cached = self.text.lock().clone();
        let data = match cached {
            Some(d) => d,
            None => {
                let d = Arc::new(probes_show(self.src));
                self.text.lock().get_or_insert(d).clone()
            }
        };
        let Ok(off) = usize::try_from(*pos) else { return Ok(0) };
        let off = off.min(data.len());
        let n = buf.len().min(data.len() - off);
        buf[..n].copy_from_slice(&data[off..off + n]);
        *pos += n as u64;
        Ok(n)
    }

    fn write(&self, _: &OpenFile, buf: &[u8], pos: &mut u64) -> vfs::Result<usize> {
        let n = write_commands(buf, self.src)?;
        *pos += n as u64;
        Ok(n)
    }

    fn llseek(&self, _: &OpenFile, pos: u64, offset: i64, whence: u32, _: u64) -> vfs::Result<u64> {
        match whence {
            uapi::fcntl::SEEK_SET | uapi::fcntl::SEEK_CUR => vfs::file::generic_llseek(pos, offset, whence, 0),
            _ => Err(Errno::EINVAL),
        }
    }
}

fn open_probes(flags: u32, src: Source) -> Result<Arc<dyn FileOps>, Errno> {
    let write = flags & uapi::fcntl::O_ACCMODE != uapi::fcntl::O_RDONLY;
    if write && flags & uapi::fcntl::O_TRUNC != 0 {
        if src == Source::DynamicEvents && super::trace_dynevent::any_busy() {
            return Err(Errno::EBUSY);
        }
        release_all()?;
        if src == Source::DynamicEvents {
            super::trace_dynevent::release_all()?;
        }
    }
    Ok(Arc::new(ProbesFile {
        src,
        text: spin::Mutex::new(None),
    }))
}

/// Linux's README lines for what works here: up to `$arg<N>`, then (with
/// argument names and types, Linux's BTF) [`README_BTF_ARGS`], then the
/// rest. `%pd/%pD` is left out: the parser refuses it as "Unknown type".
const README_KPROBES: &str = "  dynamic_events\t\t- Create/append/remove/show the generic dynamic events\n\
\t\t\t  Write into this file to define/undefine new trace events.\n  \
kprobe_events\t\t- Create/append/remove/show the kernel dynamic events\n\
\t\t\t  Write into this file to define/undefine new trace events.\n\
\t  accepts: event-definitions (one definition per line)\n\
\t   Format: p[:[<group>/][<event>]] <place> [<args>]\n\
\t           r[maxactive][:[<group>/][<event>]] <place> [<args>]\n";

/// Linux's README lines from the removal command on.
const README_KPROBES_PLACE: &str = "\t           -:[<group>/][<event>]\n\
\t    place: [<module>:]<symbol>[+<offset>]|<memaddr>\n\
place (kretprobe): [<module>:]<symbol>[+<offset>]%return|<memaddr>\n\
\t     args: <name>=fetcharg[:type]\n\
\t fetcharg: (%<register>|$<efield>), @<address>, @<symbol>[+|-<offset>],\n\
\t           $stack<index>, $stack, $retval, $comm, $arg<N>,\n";

/// Linux's README line for BTF arguments.
const README_BTF_ARGS: &str = "\t           <argname>[->field[->field|.field...]],\n";

/// The README lines after the fetch arguments.
const README_KPROBES_TAIL: &str = "\
\t           +|-[u]<offset>(<fetcharg>), \\imm-value, \\\"imm-string\"\n\
\t     kernel return probes support: $retval, $arg<N>, $comm\n\
\t     type: s8/16/32/64, u8/16/32/64, x8/16/32/64, char, string, symbol,\n\
\t           b<bit-width>@<bit-offset>/<container-size>, ustring,\n\
\t           symstr, %pd/%pD, <type>\\[<array-size>\\]\n";

/// Makes `kprobe_events`, `dynamic_events` and `kprobe_profile` in the
/// tracefs root, and their README lines.
pub(super) fn init(root: &Arc<PseudoDir>) {
    let _ = root.file_ops(
        "dynamic_events",
        0o640,
        Box::new(|flags| open_probes(flags, Source::DynamicEvents)),
    );
    let _ = root.file_ops(
        "kprobe_events",
        0o640,
        Box::new(|flags| open_probes(flags, Source::KprobeEvents)),
    );
    root.file("kprobe_profile", 0o440, Box::new(profile_show), None);
    readme_add(ReadmeSection::Files, README_KPROBES);
    readme_add(ReadmeSection::Files, super::trace_dynevent::README_FORMATS);
    readme_add(ReadmeSection::Files, README_KPROBES_PLACE);
    readme_add(ReadmeSection::Files, README_BTF_ARGS);
    readme_add(ReadmeSection::Files, README_KPROBES_TAIL);
    readme_add(ReadmeSection::Files, super::trace_dynevent::README_FIELDS);
    super::trace_dynevent::init(root);
}
