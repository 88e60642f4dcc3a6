//! Event filters (`events/<sys>/<ev>/filter`, `events/<sys>/filter`) and
//! the record path they share with triggers: Linux's
//! `trace_trigger_soft_disabled`, `trace_event_buffer_lock_reserve` with
//! its per-CPU buffered event, and `event_trigger_unlock_commit`.
//!
//! The language is the `trace_filter` crate's; this module stores the
//! compiled filter in the event and checks it in probe context.
//!
//! # Swapping a filter under probe hits
//!
//! An event's filter sits in an `IrqSpinLock<Option<Arc<EventFilter>>>`.
//! A hit takes the lock only to clone the `Arc` (one atomic increment),
//! evaluates the filter unlocked and drops its clone. A write replaces the
//! `Arc` under the lock (interrupts masked, no probeable code inside), then
//! waits until its reference to the old filter is the last one before
//! dropping it: so a hit never frees (or allocates) memory, and no hit sees
//! a freed filter. The wait is a few hundred nanoseconds at most, the time
//! one hit on another CPU takes to evaluate; that is this kernel's
//! `tracepoint_synchronize_unregister`. A generation counter with deferred
//! frees would avoid the wait but needs raw pointers; writes are rare.
//!
//! Entries of an event with a filter, triggers or soft-disable are built in
//! a per-CPU scratch buffer (Linux's `trace_buffered_event`), examined, and
//! copied into the ring buffer only if they pass: triggers with `if` run
//! even while tracing is off (a `traceon if ...` must be able to turn it on).
//! The scratch buffers' locks are also the recursion guard: events nest
//! (an event probe records inside its attached event's path) up to
//! `SCRATCH_NEST` deep on one CPU, and a probe hit deeper than that drops
//! its event.

use super::events::{self, TraceEvent};
use super::tracefs::{readme_add, ReadmeSection};
use super::trigger::{self, Triggers};
use super::{TraceArray, TRACE_ENTRY_SIZE};
use crate::percpu::NR_CPUS;
use crate::sync::IrqSpinLock;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use ring_buffer::BUF_MAX_DATA_SIZE;
use trace_filter::filter::TASK_COMM_LEN;
use trace_filter::filter::{filter_file_text, DEFAULT_SYS_FILTER_MESSAGE, FILTER_ERROR_LOC};
use trace_filter::{
    apply_event_filter, apply_subsystem_filter, EventField, EventFilter, FieldKind, FilterContext, FilterEnv,
    KallsymsLookup,
};
use uapi::Errno;

/// Linux's `EVENT_FILE_FL_SOFT_MODE`: soft-mode references are held.
const FL_SOFT_MODE: u32 = 1 << 0;
/// `EVENT_FILE_FL_SOFT_DISABLED`: armed, but not recorded.
const FL_SOFT_DISABLED: u32 = 1 << 1;
/// `EVENT_FILE_FL_TRIGGER_MODE`: the event has triggers.
pub(super) const FL_TRIGGER_MODE: u32 = 1 << 2;
/// `EVENT_FILE_FL_TRIGGER_COND`: some trigger needs the record (a filter
/// or a post trigger).
pub(super) const FL_TRIGGER_COND: u32 = 1 << 3;
/// `EVENT_FILE_FL_FILTERED`: the event has a compiled filter.
const FL_FILTERED: u32 = 1 << 4;
/// Event probes are attached (Linux's `EVENT_TRIGGER_FL_PROBE` triggers,
/// which need the record).
const FL_EPROBE: u32 = 1 << 5;
/// `EVENT_FILE_FL_WAS_ENABLED`: it has recorded into `tr` since `tr` was
/// last cleared for a removed event, so removing the event clears `tr`.
const FL_WAS_ENABLED: u32 = 1 << 6;
/// Linux's `EVENT_FILE_FL_ENABLED`: recorded into `tr` (or, in soft mode,
/// its triggers run); changed under the event mutex. In the same word as
/// the flags that send a hit to the slow path, so that the one-step
/// write reads one word ([`TraceEventFile::takes_fast_path`]).
const FL_ENABLED: u32 = 1 << 7;
/// The flags that send a hit through [`record_slow_entry`].
const FL_SLOW: u32 = FL_SOFT_DISABLED | FL_TRIGGER_MODE | FL_FILTERED | FL_EPROBE;

/// Writes to `filter` and `trigger` of this size or more are EINVAL (as
/// Linux, which refuses `cnt >= PAGE_SIZE`).
pub const MAX_WRITE: usize = 4096;

/// An event in one trace array (Linux's `trace_event_file`): whether it
/// is enabled there, its soft mode, filter and triggers.
pub struct TraceEventFile {
    /// The trace array it records into.
    pub tr: &'static TraceArray,
    flags: AtomicU32,
    /// Soft-mode references (Linux's `sm_ref`); changed under the event
    /// mutex.
    sm_ref: AtomicU32,
    filter: IrqSpinLock<Option<Arc<EventFilter>>>,
    pub(super) triggers: CpuOwnedLock<Triggers>,
    /// Handlers of the event probes attached to this event.
    eprobes: CpuOwnedLock<Vec<super::trace_eprobe::EprobeHook>>,
    /// Serialises writes to this event's `filter` and `trigger`.
    pub(super) write_lock: spin::Mutex<()>,
}

impl TraceEventFile {
    /// The file of an event in `tr`: disabled, no filter, no trigger, not
    /// in soft mode.
    pub fn new(tr: &'static TraceArray) -> TraceEventFile {
        TraceEventFile {
            tr,
            flags: AtomicU32::new(0),
            sm_ref: AtomicU32::new(0),
            filter: IrqSpinLock::new(None),
            triggers: CpuOwnedLock::new(Triggers::default()),
            eprobes: CpuOwnedLock::new(Vec::new()),
            write_lock: spin::Mutex::new(()),
        }
    }

    /// Relaxed, as Linux's plain read of `file->flags`: what a flag gates
    /// (the filter, the triggers) is reached through its own lock or
    /// acquire load; read on every event, where an LDAR costs as much as a
    /// dozen plain loads under QEMU's TCG.
    pub(super) fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// `EVENT_FILE_FL_ENABLED` (relaxed, as [`Self::flags`]).
    pub fn is_enabled(&self) -> bool {
        self.flags() & FL_ENABLED != 0
    }

    pub(super) fn set_enabled_flag(&self, on: bool) {
        if on {
            self.set_flag(FL_WAS_ENABLED, true);
        }
        self.set_flag(FL_ENABLED, on);
    }

    /// `EVENT_FILE_FL_WAS_ENABLED`.
    pub(super) fn was_enabled(&self) -> bool {
        self.flags() & FL_WAS_ENABLED != 0
    }

    /// Leaves soft mode whatever its references (the file's trace array
    /// is going away with every trigger that held them).
    pub(super) fn clear_soft_mode(&self) {
        self.sm_ref.store(0, Ordering::Release);
        self.set_flag(FL_SOFT_MODE | FL_SOFT_DISABLED, false);
    }

    pub(super) fn set_flag(&self, bit: u32, on: bool) {
        if on {
            self.flags.fetch_or(bit, Ordering::AcqRel);
        } else {
            self.flags.fetch_and(!bit, Ordering::AcqRel);
        }
    }

    /// Whether a hit must go through [`record_slow_entry`].
    pub fn needs_slow_path(&self) -> bool {
        self.flags() & FL_SLOW != 0
    }

    /// Whether a hit records here without the slow path: enabled, and
    /// [`Self::needs_slow_path`] false (one load).
    #[inline(always)]
    pub fn takes_fast_path(&self) -> bool {
        self.flags() & (FL_ENABLED | FL_SLOW) == FL_ENABLED
    }

    /// `EVENT_FILE_FL_SOFT_DISABLED`.
    pub fn soft_disabled(&self) -> bool {
        self.flags() & FL_SOFT_DISABLED != 0
    }

    /// `EVENT_FILE_FL_SOFT_MODE`.
    pub fn soft_mode(&self) -> bool {
        self.flags() & FL_SOFT_MODE != 0
    }

    /// Sets or clears soft-disable (what `enable_event`/`disable_event`
    /// triggers flip, from probe context).
    pub fn set_soft_disabled(&self, on: bool) {
        self.set_flag(FL_SOFT_DISABLED, on)
    }

    /// Sets or clears soft mode.
    pub fn set_soft_mode(&self, on: bool) {
        self.set_flag(FL_SOFT_MODE, on)
    }

    /// Takes a soft-mode reference; returns the new count.
    pub fn sm_ref_get(&self) -> u32 {
        self.sm_ref.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Drops a soft-mode reference (none left stays none); returns the new
    /// count.
    pub fn sm_ref_put(&self) -> u32 {
        match self
            .sm_ref
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        {
            Ok(n) => n - 1,
            Err(_) => 0,
        }
    }

    /// The current filter, for one evaluation (see the module's notes).
    fn filter(&self) -> Option<Arc<EventFilter>> {
        self.filter.lock().clone()
    }

    /// Installs `new` as the filter and frees the old one once no hit uses
    /// it. Task context.
    fn install_filter(&self, new: Option<EventFilter>) {
        let compiled = new.as_ref().is_some_and(|f| f.program().is_some());
        let new = new.map(Arc::new);
        let old = core::mem::replace(&mut *self.filter.lock(), new);
        self.set_flag(FL_FILTERED, compiled);
        if let Some(old) = old {
            retire(old);
        }
    }
}

/// Drops `old` once every other reference (hits evaluating it on other
/// CPUs, a reader of the `filter` file) is gone, so that the last drop and
/// the free happen here, in task context.
fn retire<T>(old: Arc<T>) {
    while Arc::strong_count(&old) > 1 {
        core::hint::spin_loop();
    }
    drop(old);
}

const NO_OWNER: usize = usize::MAX;

/// An interrupt-masking spin lock that knows which CPU holds it, so that a
/// probe hit on that CPU (a kprobe in code run under the lock, such as the
/// allocator while a trigger is parsed) skips instead of deadlocking,
/// while hits on other CPUs wait their turn. A holder on another CPU
/// always finishes: the code it runs under the lock (parsing, allocating,
/// firing triggers) takes no lock a probe hit could hold, since the heap
/// and the tracing code are notrace.
pub struct CpuOwnedLock<T> {
    lock: IrqSpinLock<T>,
    owner: AtomicUsize,
}

/// A held [`CpuOwnedLock`].
pub struct CpuOwnedGuard<'a, T> {
    guard: Held<'a, T>,
    owner: &'a AtomicUsize,
}

/// How a [`CpuOwnedLock`] was taken: masking interrupts itself, or on a
/// path that had masked them already (the record path), which then pays
/// neither a second mask nor a preemption count.
enum Held<'a, T> {
    Irq(crate::sync::IrqSpinLockGuard<'a, T>),
    IrqsOff(arch::spinlock::SpinMutexGuard<'a, T>),
}

impl<T> CpuOwnedLock<T> {
    const fn new(v: T) -> Self {
        CpuOwnedLock {
            lock: IrqSpinLock::new(v),
            owner: AtomicUsize::new(NO_OWNER),
        }
    }

    /// Takes the lock (task context: may wait for other CPUs).
    pub fn lock(&self) -> CpuOwnedGuard<'_, T> {
        let guard = Held::Irq(self.lock.lock());
        self.owner.store(arch::cpu::cpu_id(), Ordering::Release);
        CpuOwnedGuard {
            guard,
            owner: &self.owner,
        }
    }

    /// Takes the lock with interrupts already masked (probe context: may
    /// wait for other CPUs, never for this one).
    #[inline]
    fn lock_irqs_off(&self) -> CpuOwnedGuard<'_, T> {
        let guard = Held::IrqsOff(self.lock.lock_irqs_off());
        self.owner.store(arch::cpu::cpu_id(), Ordering::Release);
        CpuOwnedGuard {
            guard,
            owner: &self.owner,
        }
    }

    /// Takes the lock from probe context if it is free: None if this or
    /// another CPU holds it.
    #[inline]
    pub fn try_lock_from_probe(&self) -> Option<CpuOwnedGuard<'_, T>> {
        if self.owner.load(Ordering::Acquire) == arch::cpu::cpu_id() {
            return None;
        }
        let guard = if arch::cpu::irqs_disabled() {
            Held::IrqsOff(self.lock.try_lock_irqs_off()?)
        } else {
            Held::Irq(self.lock.try_lock()?)
        };
        self.owner.store(arch::cpu::cpu_id(), Ordering::Release);
        Some(CpuOwnedGuard {
            guard,
            owner: &self.owner,
        })
    }

    /// Takes the lock from probe context (interrupts masked): None if this
    /// CPU already holds it. Inline: its guard is returned in registers,
    /// not copied.
    #[inline]
    pub fn lock_from_probe(&self) -> Option<CpuOwnedGuard<'_, T>> {
        if self.owner.load(Ordering::Acquire) == arch::cpu::cpu_id() {
            return None;
        }
        if arch::cpu::irqs_disabled() {
            Some(self.lock_irqs_off())
        } else {
            Some(self.lock())
        }
    }
}

impl<T> core::ops::Deref for CpuOwnedGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.guard {
            Held::Irq(g) => g,
            Held::IrqsOff(g) => g,
        }
    }
}

impl<T> core::ops::DerefMut for CpuOwnedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.guard {
            Held::Irq(g) => g,
            Held::IrqsOff(g) => g,
        }
    }
}

impl<T> Drop for CpuOwnedGuard<'_, T> {
    fn drop(&mut self) {
        self.owner.store(NO_OWNER, Ordering::Release);
    }
}

/// Per-CPU room to build an entry before it is written (Linux's
/// `trace_buffered_event`).
/// Events nest: an event probe records from inside its attached event's
/// path, and a synthetic event from a trigger's; each level takes the next
/// free buffer (Linux's `ring_buffer_nest_start`), and a hit nested deeper
/// drops its event.
static SCRATCH: [[IrqSpinLock<[u8; BUF_MAX_DATA_SIZE]>; SCRATCH_NEST]; NR_CPUS] =
    [const { [const { IrqSpinLock::new([0; BUF_MAX_DATA_SIZE]) }; SCRATCH_NEST] }; NR_CPUS];

/// How deep events may nest on one CPU.
const SCRATCH_NEST: usize = 3;

/// What a filter sees of the task and CPU an event happens on. The task's
/// name is read the first time something asks for it (a `comm` filter, a
/// new hist entry): most hits never do.
pub(super) struct ProbeContext {
    cpu: u32,
    comm: core::cell::OnceCell<[u8; TASK_COMM_LEN]>,
}

impl ProbeContext {
    /// The current task on `cpu`.
    pub(super) fn current(cpu: usize) -> ProbeContext {
        ProbeContext {
            cpu: cpu as u32,
            comm: core::cell::OnceCell::new(),
        }
    }

    fn read_comm() -> [u8; TASK_COMM_LEN] {
        let mut comm = [0u8; TASK_COMM_LEN];
        match crate::sched::try_current() {
            Some(t) if t.is_idle() => comm[..9].copy_from_slice(b"swapper/0"),
            Some(t) => comm = t.comm.get(),
            None => {}
        }
        comm
    }
}

impl FilterContext for ProbeContext {
    fn cpu(&self) -> u32 {
        self.cpu
    }
    fn comm(&self) -> &[u8] {
        self.comm.get_or_init(Self::read_comm)
    }
    // `char *` fields (read through `fetch_string`) do not exist in this
    // kernel's events: the default (never readable) stands.
}

/// The hit path of an event with a filter, triggers or soft-disable (see
/// the module's notes) in file `f`'s trace array, for an entry of `len`
/// bytes in all, which `fill` sees whole with its common fields written.
/// Returns whether an entry was recorded.
pub fn record_slow_entry(
    ev: &TraceEvent,
    f: &TraceEventFile,
    len: usize,
    fill: &mut impl FnMut(&mut [u8]) -> bool,
) -> bool {
    if len < TRACE_ENTRY_SIZE {
        return false;
    }
    record_slow_inner(ev, f, len, fill)
}

/// The slow path without generics, so that stack traces can find where
/// tracing's own frames end: builds the `total`-byte entry in this CPU's
/// scratch buffer, runs the triggers, applies the filter, copies it into
/// the ring buffer, then runs the post triggers.
#[inline(never)]
pub(super) fn record_slow_inner(
    ev: &TraceEvent,
    file: &TraceEventFile,
    total: usize,
    fill: &mut dyn FnMut(&mut [u8]) -> bool,
) -> bool {
    let tr = file.tr;
    let fl = file.flags();
    // Linux's trace_trigger_soft_disabled: triggers that need no record
    // run before it is made; a soft-disabled event stops there.
    if fl & (FL_TRIGGER_MODE | FL_SOFT_DISABLED) != 0 && fl & (FL_TRIGGER_COND | FL_EPROBE) == 0 {
        if fl & FL_TRIGGER_MODE != 0 {
            trigger::event_triggers_call(file, None);
        }
        if fl & FL_SOFT_DISABLED != 0 {
            return false;
        }
    }
    if total > BUF_MAX_DATA_SIZE {
        return false;
    }
    // The hitting code's state, before this path masks interrupts and
    // takes its scratch lock: every entry written below shows it.
    let ctx = super::tracing_gen_ctx();
    let irq = arch::cpu::local_irq_save();
    let saved_ctx = super::TraceCtxSave::new(ctx);
    let cpu = arch::cpu::cpu_id();
    let Some(mut scratch) = SCRATCH
        .get(cpu)
        .and_then(|levels| levels.iter().find_map(IrqSpinLock::try_lock_irqs_off))
    else {
        drop(saved_ctx);
        arch::cpu::local_irq_restore(irq);
        return false;
    };
    let mut post = trigger::PostTriggers::default();
    let mut committed = false;
    if let Some(entry) = scratch.get_mut(..total) {
        super::fill_entry_header_ctx(entry, ev.id, ctx);
        if fill(entry) {
            let mut ctx = ProbeContext::current(cpu);
            let fl = file.flags();
            if fl & FL_TRIGGER_COND != 0 {
                post = trigger::event_triggers_call(file, Some((&*entry, &mut ctx)));
            }
            if fl & FL_EPROBE != 0 {
                if let Some(hooks) = file.eprobes.lock_from_probe() {
                    for h in hooks.iter() {
                        h(entry);
                    }
                }
            }
            let keep = if fl & FL_SOFT_DISABLED != 0 {
                false
            } else if fl & FL_FILTERED != 0 {
                file.filter().is_none_or(|f| f.matches(entry, &mut ctx))
            } else {
                true
            };
            if keep {
                let src = &entry[TRACE_ENTRY_SIZE..];
                // The copy writes every byte: nothing to clear first.
                committed = super::trace_event_write_full(tr, ev.id, total, |dst| {
                    dst[TRACE_ENTRY_SIZE..].copy_from_slice(src);
                    true
                });
            }
        }
    }
    drop(scratch);
    // Linux's trace_buffer_unlock_commit_regs: the stack follows the
    // event, before the post triggers run.
    if committed && tr.is_set(super::options::STACKTRACE) {
        trigger::trace_kernel_stack(tr);
    }
    trigger::event_triggers_post_call(file, post);
    drop(saved_ctx);
    arch::cpu::local_irq_restore(irq);
    committed
}

/// Hooks an event probe's handler to `ev`'s records.
pub(super) fn eprobe_attach(ev: &TraceEvent, h: super::trace_eprobe::EprobeHook) {
    let mut g = ev.file.eprobes.lock();
    g.push(h);
    ev.file.set_flag(FL_EPROBE, true);
}

/// Unhooks it, and waits until no hit still runs it.
pub(super) fn eprobe_detach(ev: &TraceEvent, h: &super::trace_eprobe::EprobeHook) {
    let mut g = ev.file.eprobes.lock();
    g.retain(|x| !Arc::ptr_eq(x, h));
    ev.file.set_flag(FL_EPROBE, !g.is_empty());
}

/// Kernel symbols for `.function` operands.
struct Kallsyms;

impl KallsymsLookup for Kallsyms {
    fn lookup_name(&self, name: &str) -> Option<u64> {
        crate::kallsyms::lookup_name(name).map(|a| a as u64)
    }
    fn lookup_size_offset(&self, addr: u64) -> Option<(u64, u64)> {
        crate::kallsyms::lookup_addr(addr as usize).map(|s| (s.size, s.offset))
    }
}

/// What compiling a filter needs from this kernel.
pub(super) fn filter_env() -> FilterEnv<'static> {
    FilterEnv {
        nr_cpu_ids: crate::smp::num_online_cpus() as u32,
        symbols: &Kallsyms,
    }
}

/// An event's own fields as the filter language sees them: an array's
/// `[N]` belongs to the type (`char comm[16]` is a string).
pub(super) fn event_fields(ev: &TraceEvent) -> Vec<(String, String, &events::FieldDesc)> {
    ev.fields()
        .iter()
        .map(|f| match f.name.find('[') {
            Some(i) => (f.name[..i].into(), alloc::format!("{}{}", f.type_name, &f.name[i..]), f),
            None => (f.name.clone(), f.type_name.clone(), f),
        })
        .collect()
}

/// Borrows [`event_fields`] as the crate's schema.
pub(super) fn schema<'a>(fields: &'a [(String, String, &events::FieldDesc)]) -> Vec<EventField<'a>> {
    fields
        .iter()
        .map(|(name, ty, f)| EventField {
            name,
            offset: f.offset as u32,
            size: f.size as u32,
            is_signed: f.signed,
            kind: FieldKind::from_c_type(ty),
        })
        .collect()
}

/// The text of each system's `filter` file once written, by trace array
/// (its address) and system (Linux keeps it in the subsystem's
/// `event_filter`).
static SYSTEM_FILTERS: spin::Mutex<BTreeMap<(usize, String), String>> = spin::Mutex::new(BTreeMap::new());

fn tr_key(tr: &TraceArray) -> usize {
    tr as *const TraceArray as usize
}

/// Logs a failed filter in the `error_log` of `tr`.
fn log_failure(tr: &TraceArray, f: &trace_filter::FilterFailure) {
    super::error_log::tracing_log_err_tr(tr, FILTER_ERROR_LOC, &f.command, &f.err);
}

/// A write to an event's `filter` (Linux's `apply_event_filter`).
fn event_filter_write(ev: &TraceEvent, file: &TraceEventFile, buf: &[u8]) -> Result<(), Errno> {
    let fields = event_fields(ev);
    let schema = schema(&fields);
    let up = apply_event_filter(buf, &schema, &filter_env());
    let _w = file.write_lock.lock();
    if let Some(f) = &up.failure {
        log_failure(file.tr, f);
    }
    let res = up.result();
    file.install_filter(up.filter);
    res
}

/// A write to a system's `filter` of `tr` (Linux's
/// `apply_subsystem_event_filter`).
fn system_filter_write(tr: &TraceArray, system: &str, buf: &[u8]) -> Result<(), Errno> {
    let evs: Vec<(Arc<TraceEvent>, Arc<TraceEventFile>)> = events::all_events()
        .into_iter()
        .filter(|e| e.system() == system && e.can_enable())
        .filter_map(|e| {
            let f = e.file_for(tr)?;
            Some((e, f))
        })
        .collect();
    let fields: Vec<_> = evs.iter().map(|(e, _)| event_fields(e)).collect();
    let schemas: Vec<Vec<EventField<'_>>> = fields.iter().map(|f| schema(f)).collect();
    let refs: Vec<&[EventField<'_>]> = schemas.iter().map(Vec::as_slice).collect();
    let up = apply_subsystem_filter(buf, &refs, &filter_env());
    for f in &up.event_failures {
        log_failure(tr, f);
    }
    for ((_, file), filter) in evs.iter().zip(up.events) {
        let _w = file.write_lock.lock();
        file.install_filter(filter);
    }
    if up.result.is_ok() || !evs.is_empty() {
        SYSTEM_FILTERS
            .lock()
            .insert((tr_key(tr), system.into()), up.system_text);
    }
    up.result
}

/// The filter and trigger files' implementation.
struct Hooks;

impl events::EventFileHooks for Hooks {
    fn filter_show(&self, tr: &TraceArray, system: &str, ev: Option<(&Arc<TraceEvent>, &TraceEventFile)>) -> String {
        match ev {
            Some((_, f)) => filter_file_text(f.filter().as_deref()),
            None => SYSTEM_FILTERS
                .lock()
                .get(&(tr_key(tr), String::from(system)))
                .cloned()
                .unwrap_or_else(|| DEFAULT_SYS_FILTER_MESSAGE.into()),
        }
    }

    fn filter_write(
        &self,
        tr: &TraceArray,
        system: &str,
        ev: Option<(&Arc<TraceEvent>, &TraceEventFile)>,
        buf: &[u8],
    ) -> Result<(), Errno> {
        if buf.len() >= MAX_WRITE {
            return Err(Errno::EINVAL);
        }
        match ev {
            Some((ev, f)) => event_filter_write(ev, f, buf),
            None => system_filter_write(tr, system, buf),
        }
    }

    fn trigger_show(&self, _ev: &Arc<TraceEvent>, f: &TraceEventFile) -> String {
        trigger::trigger_show(f)
    }

    fn trigger_write(&self, ev: &Arc<TraceEvent>, f: &TraceEventFile, buf: &[u8]) -> Result<(), Errno> {
        if buf.len() >= MAX_WRITE {
            return Err(Errno::EINVAL);
        }
        trigger::trigger_write(ev, f, buf)
    }

    fn trigger_clear(&self, ev: &Arc<TraceEvent>, f: &TraceEventFile) {
        // Opening `trigger` with O_TRUNC only clears hist triggers.
        trigger::trigger_clear_hists(ev, f);
    }

    fn hist_show(&self, _ev: &Arc<TraceEvent>, f: &TraceEventFile) -> String {
        super::hist::hist_show(f)
    }

    fn file_removed(&self, ev: &Arc<TraceEvent>, f: &TraceEventFile) {
        let _w = f.write_lock.lock();
        f.install_filter(None);
        trigger::file_removed(f);
        let mut filters = SYSTEM_FILTERS.lock();
        let system_left = events::all_events()
            .iter()
            .any(|e| e.system() == ev.system() && !core::ptr::eq(&**e, &**ev));
        if !system_left || !events::trace_arrays().iter().any(|t| core::ptr::eq(*t, f.tr)) {
            filters.remove(&(tr_key(f.tr), String::from(ev.system())));
        }
    }
}

static HOOKS: Hooks = Hooks;
/// Installs the filter and trigger files' implementation and their
/// `README` lines (Linux's text for what works here).
pub(super) fn init() {
    events::set_event_file_hooks(&HOOKS);
    readme_add(
        ReadmeSection::SystemFiles,
        "      filter\t\t- If set, only events passing filter are traced\n",
    );
    readme_add(
        ReadmeSection::EventFiles,
        "      filter\t\t- If set, only events passing filter are traced\n",
    );
    readme_add(ReadmeSection::EventFiles, trigger::README_TRIGGER);
    readme_add(ReadmeSection::EventFiles, super::hist::README_HIST);
}
