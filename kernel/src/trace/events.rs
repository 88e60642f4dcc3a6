//! The event registry: trace events (an id, a system and a name, the
//! fields their entries carry, how `trace` prints them), registered and
//! removed while the system runs (kprobe events come and go), and their
//! files under `events/`: `enable`, `filter`, `format`, `id`, `trigger`
//! per event; `enable` and `filter` per system; `events/enable`,
//! `header_page` and `header_event`; and `available_events`, `set_event`
//! and `set_event_pid` at the top.
//!
//! Filters and triggers are languages of their own: their files call the
//! [`EventFileHooks`] installed with [`set_event_file_hooks`]. Until some
//! are installed, a filter other than `0` (clear) is EINVAL, as Linux
//! answers a filter it cannot parse, and so is any trigger.

use super::event_filter::TraceEventFile;
use super::tracefs;
use super::TraceArray;
use crate::fs::pseudo::PseudoDir;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use uapi::Errno;

/// One field of an event's entry, as its `format` file lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    /// C type (`unsigned long`, `char`, `__data_loc char[]`, ...).
    pub type_name: String,
    /// Name, with `[N]` for arrays.
    pub name: String,
    /// Offset from the start of the entry (common fields take 0..8).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Whether the type is signed.
    pub signed: bool,
}

impl FieldDesc {
    /// A field.
    pub fn new(type_name: &str, name: &str, offset: usize, size: usize, signed: bool) -> FieldDesc {
        FieldDesc {
            type_name: type_name.to_string(),
            name: name.to_string(),
            offset,
            size,
            signed,
        }
    }
}

/// The common fields every entry starts with (`struct trace_entry`).
pub fn common_fields() -> [FieldDesc; 4] {
    [
        FieldDesc::new("unsigned short", "common_type", 0, 2, false),
        FieldDesc::new("unsigned char", "common_flags", 2, 1, false),
        FieldDesc::new("unsigned char", "common_preempt_count", 3, 1, false),
        FieldDesc::new("int", "common_pid", 4, 4, true),
    ]
}

/// One recorded entry being printed.
pub struct EventRecord<'a> {
    /// The whole entry, common fields first.
    pub entry: &'a [u8],
    /// The trace flags ([`super::options`]) in force.
    pub trace_flags: u32,
}

/// Prints an entry for `trace`/`trace_pipe` after the context columns,
/// ending with a newline.
pub type PrintFn = Box<dyn Fn(&mut String, &EventRecord<'_>) + Send + Sync>;
/// Arms (true) or disarms (false) what produces an event (its kprobe).
pub type RegFn = Box<dyn Fn(bool) -> Result<(), Errno> + Send + Sync>;

/// What a registrant says about a new event.
pub struct TraceEventDef {
    /// System (group), the directory under `events/`.
    pub system: String,
    /// Event name.
    pub name: String,
    /// Its own fields (after the common ones), with absolute offsets.
    pub fields: Vec<FieldDesc>,
    /// The `print fmt:` line's content.
    pub print_fmt: String,
    /// Its output in `trace`.
    pub print: PrintFn,
    /// Called on enable and disable.
    pub reg: Option<RegFn>,
    /// An internal event (as `ftrace/print`): always recorded, without
    /// `enable`, `filter` and `trigger` files, not in `available_events`.
    pub ignore_enable: bool,
}

/// A registered event.
pub struct TraceEvent {
    /// Its type id (`common_type`, the `id` file).
    pub id: u16,
    def: TraceEventDef,
    /// Its file in the top-level trace array (Linux's `trace_event_file`:
    /// enable flag, soft mode, filter, triggers).
    pub(super) file: Arc<TraceEventFile>,
    /// Its files in the instances. A hit reads the list without waiting
    /// (`try_read`): only while an instance is being made or removed can
    /// a hit miss the other instances' buffers.
    instance_files: spin::RwLock<Vec<Arc<TraceEventFile>>>,
    /// How many of `instance_files` are enabled: hits skip the list at 0.
    instances_enabled: AtomicUsize,
    /// How many files (of any trace array) are enabled: the source is
    /// armed (`reg`) while some are, as Linux's tracepoint keeps one probe
    /// per file.
    armed: AtomicUsize,
}

impl TraceEvent {
    /// Its system.
    pub fn system(&self) -> &str {
        &self.def.system
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// Whether it can be enabled (not an internal event such as
    /// `ftrace/print`).
    pub fn can_enable(&self) -> bool {
        !self.def.ignore_enable
    }

    /// Its own fields.
    pub fn fields(&self) -> &[FieldDesc] {
        &self.def.fields
    }

    /// Whether its source is armed (internal events always are): enabled
    /// in some trace array, or in soft mode for triggers there (then it
    /// may still be soft-disabled).
    pub fn is_enabled(&self) -> bool {
        self.def.ignore_enable || self.armed.load(Ordering::Acquire) > 0
    }

    /// Its file in trace array `tr` (None for an instance being removed).
    pub fn file_for(&self, tr: &TraceArray) -> Option<Arc<TraceEventFile>> {
        if core::ptr::eq(self.file.tr, tr) {
            return Some(self.file.clone());
        }
        self.instance_files
            .read()
            .iter()
            .find(|f| core::ptr::eq(f.tr, tr))
            .cloned()
    }

    /// Records an entry of `len` bytes after the common fields into each
    /// trace array the event is enabled in whose `set_event_pid` lets the
    /// task through; `fill` writes the fields (once per array) and may
    /// reject the entry. The event's triggers run and its filter decides
    /// (Linux's `trace_trigger_soft_disabled` and
    /// `event_trigger_unlock_commit`); a soft-disabled event runs its
    /// triggers without being recorded. From probe context.
    pub fn record(&self, len: usize, mut fill: impl FnMut(&mut [u8]) -> bool) -> bool {
        self.record_entry(super::TRACE_ENTRY_SIZE + len, |e| {
            fill(&mut e[super::TRACE_ENTRY_SIZE..])
        })
    }

    /// Like [`TraceEvent::record`], for an entry of `len` bytes in all,
    /// which `fill` sees whole, its common fields already written (probe
    /// records whose string offsets count from the entry's start). A file
    /// is marked enabled before its source is armed, so every hit of an
    /// armed probe finds it.
    pub fn record_entry(&self, len: usize, fill: impl FnMut(&mut [u8]) -> bool) -> bool {
        self.record_entry_zeroed(len, true, fill)
    }

    /// [`TraceEvent::record_entry`] for a `fill` that writes every byte
    /// after the common fields (a tracepoint whose entry has no hole): the
    /// buffer's bytes are not cleared first (see
    /// [`super::trace_event_write_full`]).
    pub fn record_entry_full(&self, len: usize, fill: impl FnMut(&mut [u8]) -> bool) -> bool {
        self.record_entry_zeroed(len, false, fill)
    }

    #[inline(always)]
    fn record_entry_zeroed(&self, len: usize, zero: bool, fill: impl FnMut(&mut [u8]) -> bool) -> bool {
        self.record_in_files::<_, _, false>(
            len,
            fill,
            #[inline(always)]
            |tr, fill| {
                if zero {
                    super::trace_event_write_entry(tr, self.id, len, fill)
                } else {
                    super::trace_event_write_full(tr, self.id, len, fill)
                }
            },
        )
    }

    /// [`TraceEvent::record_entry_full`] of an entry whose fields after the
    /// common ones are the words `rest` (a probe's addresses), written in
    /// one step where nothing needs the slow path
    /// ([`super::trace_event_write_words`]). `W == N + 1`.
    #[inline(always)]
    pub fn record_words<const N: usize, const W: usize>(&self, rest: [u64; N]) -> bool {
        self.record_in_files::<_, _, false>(
            super::TRACE_ENTRY_SIZE + 8 * N,
            super::fill_words(rest),
            #[inline(always)]
            |tr, _| super::trace_event_write_words::<N, W, false>(tr, self.id, rest),
        )
    }

    /// [`TraceEvent::record_words`] from a probe's handler that saved no
    /// context ([`super::probe_ctx_irqs_off`]): the one-step write takes
    /// the probe's context itself, and the slow path saves it first.
    #[inline(always)]
    pub fn record_words_probe<const N: usize, const W: usize>(&self, rest: [u64; N]) -> bool {
        self.record_in_files::<_, _, true>(
            super::TRACE_ENTRY_SIZE + 8 * N,
            super::fill_words(rest),
            #[inline(always)]
            |tr, _| super::trace_event_write_words::<N, W, true>(tr, self.id, rest),
        )
    }

    /// [`TraceEvent::record_words_probe`] on `cpu` (this CPU) where it
    /// calls nothing ([`super::trace_event_try_write_words`]): the event
    /// traced by the top-level array only, with nothing there that needs
    /// the slow path. Declined, with nothing done, otherwise.
    #[inline(always)]
    pub fn try_record_words_probe<const N: usize, const W: usize>(
        &self,
        cpu: usize,
        rest: [u64; N],
    ) -> super::TryWrite {
        let f = &self.file;
        // The array's pid lists and stacktrace option are behind its gate,
        // which the write reads. (An event that ignores its enable flag
        // while disabled takes the full path.)
        if !f.takes_fast_path() || self.instances_enabled.load(Ordering::Relaxed) != 0 {
            return super::TryWrite::Declined;
        }
        super::trace_event_try_write_words::<N, W>(f.tr, cpu, self.id, rest)
    }

    /// Records the entry in every trace array that has the event enabled:
    /// `fast` writes it in one where nothing needs the slow path (given
    /// `fill`, which writes the fields after the common ones).
    #[inline(always)]
    fn record_in_files<F: FnMut(&mut [u8]) -> bool, W: FnMut(&TraceArray, &mut F) -> bool, const PROBE_CTX: bool>(
        &self,
        len: usize,
        mut fill: F,
        mut fast: W,
    ) -> bool {
        if len < super::TRACE_ENTRY_SIZE {
            return false;
        }
        let mut done = false;
        if self.def.ignore_enable || self.file.is_enabled() {
            done |= self.file_record::<F, W, PROBE_CTX>(&self.file, len, &mut fill, &mut fast);
        }
        if self.instances_enabled.load(Ordering::Relaxed) != 0 {
            if let Some(files) = self.instance_files.try_read() {
                for f in files.iter().filter(|f| f.is_enabled()) {
                    done |= self.file_record::<F, W, PROBE_CTX>(f, len, &mut fill, &mut fast);
                }
            }
        }
        done
    }

    /// Whether some trace array records it now (the top level or an
    /// instance enabled it, or it needs no enabling).
    pub fn is_traced(&self) -> bool {
        self.def.ignore_enable || self.file.is_enabled() || self.instances_enabled.load(Ordering::Acquire) != 0
    }

    /// One trace array's part of [`TraceEvent::record_entry`]. Inlined in
    /// the event's record function: a call and a return fewer per event,
    /// and one frame.
    #[inline(always)]
    fn file_record<F: FnMut(&mut [u8]) -> bool, W: FnMut(&TraceArray, &mut F) -> bool, const PROBE_CTX: bool>(
        &self,
        f: &TraceEventFile,
        len: usize,
        fill: &mut F,
        fast: &mut W,
    ) -> bool {
        if ignore_this_task(f.tr) {
            return false;
        }
        if takes_slow_path(f) {
            let _ctx = PROBE_CTX.then(|| super::probe_ctx_irqs_off(crate::percpu::this_cpu()));
            return super::event_filter::record_slow_entry(self, f, len, fill);
        }
        fast(f.tr, fill)
    }

    /// Prints an entry of this event.
    pub fn print(&self, out: &mut String, rec: &EventRecord<'_>) {
        (self.def.print)(out, rec)
    }

    /// The `format` file's text, as Linux prints it.
    pub fn format(&self) -> String {
        let mut s = format!("name: {}\nID: {}\nformat:\n", self.def.name, self.id);
        let line = |s: &mut String, f: &FieldDesc| {
            s.push_str(&format!(
                "\tfield:{} {};\toffset:{};\tsize:{};\tsigned:{};\n",
                f.type_name,
                f.name,
                f.offset,
                f.size,
                u8::from(f.signed)
            ))
        };
        for f in &common_fields() {
            line(&mut s, f);
        }
        s.push('\n');
        for f in &self.def.fields {
            line(&mut s, f);
        }
        s.push_str(&format!("\nprint fmt: {}\n", self.def.print_fmt));
        s
    }

    /// Enables or disables it in the top-level trace array (Linux's
    /// `ftrace_event_enable_disable`). Call with the event mutex held.
    pub fn set_enabled(&self, on: bool) -> Result<(), Errno> {
        self.enable_disable(&self.file, on, false)
    }

    /// Linux's `__ftrace_event_enable_disable` on file `f` of this event:
    /// the buffers of `f`'s array get their full size first, and the
    /// source is armed by the first file enabled and disarmed by the last.
    /// `soft` takes or drops a soft-mode reference (an event in soft mode
    /// is armed but, unless enabled for real, soft-disabled: it runs its
    /// triggers, records nothing). Call with the event mutex held.
    fn enable_disable(&self, f: &TraceEventFile, on: bool, soft: bool) -> Result<(), Errno> {
        if self.def.ignore_enable {
            return Err(Errno::EINVAL);
        }
        if !on {
            let disable = if soft {
                if f.sm_ref_put() > 0 {
                    return Ok(());
                }
                let d = f.soft_disabled();
                f.set_soft_mode(false);
                d
            } else {
                !f.soft_mode()
            };
            if disable && f.is_enabled() {
                self.file_disarm(f)?;
            }
            f.set_soft_disabled(f.soft_mode());
            return Ok(());
        }
        if !soft {
            f.set_soft_disabled(false);
        } else {
            if f.sm_ref_get() > 1 {
                return Ok(());
            }
            f.set_soft_mode(true);
        }
        if !f.is_enabled() {
            // Keep the event disabled when it only goes to soft mode.
            if soft {
                f.set_soft_disabled(true);
            }
            if let Err(e) = f.tr.update_buffers().and_then(|()| self.file_arm(f)) {
                if soft {
                    f.sm_ref_put();
                    f.set_soft_mode(false);
                    f.set_soft_disabled(false);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Marks `f` enabled, arming the source if it is the first.
    fn file_arm(&self, f: &TraceEventFile) -> Result<(), Errno> {
        f.set_enabled_flag(true);
        if self.armed.fetch_add(1, Ordering::AcqRel) == 0 {
            if let Some(reg) = &self.def.reg {
                if let Err(e) = reg(true) {
                    self.armed.fetch_sub(1, Ordering::AcqRel);
                    f.set_enabled_flag(false);
                    return Err(e);
                }
            }
        }
        if !core::ptr::eq(f, &*self.file) {
            self.instances_enabled.fetch_add(1, Ordering::AcqRel);
        }
        ENABLED_EVENTS.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Marks `f` disabled, disarming the source if it was the last.
    fn file_disarm(&self, f: &TraceEventFile) -> Result<(), Errno> {
        if self.armed.load(Ordering::Acquire) == 1 {
            if let Some(reg) = &self.def.reg {
                reg(false)?;
            }
        }
        f.set_enabled_flag(false);
        self.armed.fetch_sub(1, Ordering::AcqRel);
        if !core::ptr::eq(f, &*self.file) {
            self.instances_enabled.fetch_sub(1, Ordering::AcqRel);
        }
        ENABLED_EVENTS.fetch_sub(1, Ordering::AcqRel);
        Ok(())
    }
}

/// The `enable` file's text of `f`: `1` when enabled and not
/// soft-disabled, then `*` in soft mode (Linux's `event_enable_read`).
fn enable_text(f: &TraceEventFile) -> Vec<u8> {
    let on = f.is_enabled() && !f.soft_disabled();
    let mut s = alloc::vec![if on { b'1' } else { b'0' }];
    if f.soft_disabled() || f.soft_mode() {
        s.push(b'*');
    }
    s.push(b'\n');
    s
}

/// Takes (`on`) or drops a soft-mode reference on `ev`'s file `f` (of any
/// trace array; Linux's `trace_event_enable_disable(file, on, 1)`), under
/// the event mutex.
pub(super) fn soft_enable_disable_file(ev: &TraceEvent, f: &TraceEventFile, on: bool) -> Result<(), Errno> {
    let _g = EVENT_MUTEX.lock();
    ev.enable_disable(f, on, true)
}

/// [`soft_enable_disable_file`] on the top-level file, for a caller that
/// holds the event mutex (an
/// event probe's `reg`, which soft-enables the event it is attached to).
pub(super) fn soft_enable_disable_locked(ev: &TraceEvent, on: bool) -> Result<(), Errno> {
    ev.enable_disable(&ev.file, on, true)
}

/// Filters and triggers, installed by the code that parses them. Each
/// call names the event's file of one trace array.
pub trait EventFileHooks: Sync {
    /// `filter` of `ev` (a system's filter file of `tr` when `ev` is None).
    fn filter_show(&self, tr: &TraceArray, system: &str, ev: Option<(&Arc<TraceEvent>, &TraceEventFile)>) -> String;
    /// A write to a `filter` file (the bytes as written).
    fn filter_write(
        &self,
        tr: &TraceArray,
        system: &str,
        ev: Option<(&Arc<TraceEvent>, &TraceEventFile)>,
        buf: &[u8],
    ) -> Result<(), Errno>;
    /// `trigger` of `ev`'s file `f`.
    fn trigger_show(&self, ev: &Arc<TraceEvent>, f: &TraceEventFile) -> String;
    /// A write to a `trigger` file (the bytes as written).
    fn trigger_write(&self, ev: &Arc<TraceEvent>, f: &TraceEventFile, buf: &[u8]) -> Result<(), Errno>;
    /// `trigger` opened with O_TRUNC: remove every hist trigger of `f`.
    fn trigger_clear(&self, ev: &Arc<TraceEvent>, f: &TraceEventFile);
    /// `ev`'s file `f` is going away (the event, or its trace array).
    fn file_removed(&self, ev: &Arc<TraceEvent>, f: &TraceEventFile);
    /// `hist` of `f` (its hist triggers' tables).
    fn hist_show(&self, _ev: &Arc<TraceEvent>, _f: &TraceEventFile) -> String {
        String::new()
    }
}

static HOOKS: spin::Once<&'static dyn EventFileHooks> = spin::Once::new();

/// Installs the filter and trigger implementation (once).
pub fn set_event_file_hooks(h: &'static dyn EventFileHooks) {
    HOOKS.call_once(|| h);
}

fn hooks() -> Option<&'static dyn EventFileHooks> {
    HOOKS.get().copied()
}

/// Events by id.
static EVENTS: spin::RwLock<BTreeMap<u16, Arc<TraceEvent>>> = spin::RwLock::new(BTreeMap::new());
/// Enabled (non-internal) events: command lines are saved while any is.
static ENABLED_EVENTS: AtomicUsize = AtomicUsize::new(0);
/// Registration order, for listings.
static ORDER: spin::Mutex<Vec<u16>> = spin::Mutex::new(Vec::new());
/// Serialises registrations, removals and enables.
static EVENT_MUTEX: spin::Mutex<()> = spin::Mutex::new(());

/// Whether an event is enabled: command lines are saved for the entries
/// recorded then (Linux's `tracing_start_cmdline_record` from event
/// enabling; the tracers that save them ask for themselves). A relaxed
/// load of one word: the record path asks on every entry.
#[inline(always)]
pub fn events_enabled() -> bool {
    ENABLED_EVENTS.load(Ordering::Relaxed) > 0
}

/// The first id handed to events registered at run time (ids below are
/// Linux's fixed ftrace types, as `TRACE_PRINT`).
pub const FIRST_DYNAMIC_ID: u16 = 32;

/// The event with type `id`.
pub fn find_event_by_id(id: u16) -> Option<Arc<TraceEvent>> {
    EVENTS.read().get(&id).cloned()
}

/// The event `system/name`.
pub fn find_event(system: &str, name: &str) -> Option<Arc<TraceEvent>> {
    EVENTS
        .read()
        .values()
        .find(|e| e.system() == system && e.name() == name)
        .cloned()
}

/// Every event, in registration order.
pub fn all_events() -> Vec<Arc<TraceEvent>> {
    let map = EVENTS.read();
    ORDER.lock().iter().filter_map(|id| map.get(id).cloned()).collect()
}

/// Registers an event and makes its files; EEXIST if `system/name` is
/// taken, EINVAL for names that cannot be directories, ENOSPC when no id
/// is left.
pub fn register_trace_event(def: TraceEventDef) -> Result<Arc<TraceEvent>, Errno> {
    register_with_id(def, None)
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\0')
}

fn register_with_id(def: TraceEventDef, fixed: Option<u16>) -> Result<Arc<TraceEvent>, Errno> {
    if !valid_name(&def.system) || !valid_name(&def.name) {
        return Err(Errno::EINVAL);
    }
    let events_dir = tracefs::events_dir();
    let _g = EVENT_MUTEX.lock();
    if find_event(&def.system, &def.name).is_some() {
        return Err(Errno::EEXIST);
    }
    let id = match fixed {
        Some(id) => id,
        None => {
            let map = EVENTS.read();
            (FIRST_DYNAMIC_ID..=u16::MAX)
                .find(|i| !map.contains_key(i))
                .ok_or(Errno::ENOSPC)?
        }
    };
    let instances = INSTANCES.lock();
    let mut inst_files = Vec::new();
    inst_files
        .try_reserve_exact(instances.len())
        .map_err(|_| Errno::ENOMEM)?;
    for (tr, _) in instances.iter() {
        inst_files.push(Arc::new(TraceEventFile::new(tr)));
    }
    let ev = Arc::new(TraceEvent {
        id,
        def,
        file: Arc::new(TraceEventFile::new(super::global_trace())),
        instance_files: spin::RwLock::new(inst_files),
        instances_enabled: AtomicUsize::new(0),
        armed: AtomicUsize::new(0),
    });
    create_event_dirs(&events_dir, super::global_trace(), &ev, &ev.file)?;
    let files = ev.instance_files.read().clone();
    for ((tr, dir), f) in instances.iter().zip(&files) {
        if let Err(e) = create_event_dirs(dir, tr, &ev, f) {
            crate::pr_err!("trace: no {}/{} in an instance: {}", ev.system(), ev.name(), e);
        }
    }
    EVENTS.write().insert(id, ev.clone());
    ORDER.lock().push(id);
    Ok(ev)
}

/// Makes `ev`'s directory, for its file `f` of `tr`, under `events_dir`
/// (and its system's directory if it is the system's first event).
fn create_event_dirs(
    events_dir: &Arc<PseudoDir>,
    tr: &'static TraceArray,
    ev: &Arc<TraceEvent>,
    f: &Arc<TraceEventFile>,
) -> Result<(), Errno> {
    let sys_dir = match events_dir.lookup_dir(ev.system()) {
        Some(d) => d,
        None => {
            let system = ev.system();
            let files = |d: &Arc<PseudoDir>| {
                if !ev.def.ignore_enable {
                    create_system_files(d, tr, system);
                }
            };
            crate::fs::tracefs::eventfs_create_dir(&crate::fs::tracefs::c_name(system)?, events_dir, &files)?
        }
    };
    let files = |d: &Arc<PseudoDir>| create_event_files(d, ev, f);
    crate::fs::tracefs::eventfs_create_dir(&crate::fs::tracefs::c_name(ev.name())?, &sys_dir, &files)?;
    Ok(())
}

/// The instances' trace arrays and `events/` directories.
static INSTANCES: spin::Mutex<Vec<(&'static TraceArray, Arc<PseudoDir>)>> = spin::Mutex::new(Vec::new());

/// Trace arrays a removed event recorded into, to be cleared by
/// [`reset_cleared_arrays`].
static CLEAR_PENDING: spin::Mutex<Vec<&'static TraceArray>> = spin::Mutex::new(Vec::new());

/// Clears the buffers of every trace array that a removed event recorded
/// into (Linux's `tracing_reset_all_online_cpus`, which resets the arrays
/// with `clear_trace` set). Called once a removal is complete, outside the
/// dynamic-event locks.
pub fn reset_cleared_arrays() {
    let pending = core::mem::take(&mut *CLEAR_PENDING.lock());
    let live = trace_arrays();
    for tr in pending {
        // An instance removed meanwhile has nothing left to clear.
        if live.iter().any(|t| core::ptr::eq(*t, tr)) {
            tr.reset(None);
        }
    }
}

/// The trace arrays: the top level's, then the instances'.
pub fn trace_arrays() -> Vec<&'static TraceArray> {
    let mut v = alloc::vec![super::global_trace()];
    v.extend(INSTANCES.lock().iter().map(|(tr, _)| *tr));
    v
}

/// Gives the new instance `tr` its events (Linux's
/// `event_trace_add_tracer`): a file of every event, all disabled, and
/// `events_dir` filled as the top level's.
pub(super) fn event_trace_add_tracer(tr: &'static TraceArray, events_dir: &Arc<PseudoDir>) -> Result<(), Errno> {
    create_top_files(events_dir, tr);
    let _g = EVENT_MUTEX.lock();
    let evs = all_events();
    let mut files = Vec::new();
    files.try_reserve_exact(evs.len()).map_err(|_| Errno::ENOMEM)?;
    for ev in &evs {
        let f = Arc::new(TraceEventFile::new(tr));
        create_event_dirs(events_dir, tr, ev, &f)?;
        files.push(f);
    }
    for (ev, f) in evs.iter().zip(files) {
        // Grown outside the lock hits read it under, then swapped in.
        let mut list = ev.instance_files.read().clone();
        list.push(f);
        let old = core::mem::replace(&mut *ev.instance_files.write(), list);
        drop(old);
    }
    INSTANCES.lock().push((tr, events_dir.clone()));
    Ok(())
}

/// Takes the instance `tr`'s events away (Linux's
/// `event_trace_del_tracer`): each is disabled (its source disarmed if no
/// other array uses it), its filter and triggers dropped, its file
/// removed. The instance's directory is already gone.
pub(super) fn event_trace_del_tracer(tr: &'static TraceArray) {
    let _g = EVENT_MUTEX.lock();
    INSTANCES.lock().retain(|(t, _)| !core::ptr::eq(*t, tr));
    let evs = all_events();
    for ev in &evs {
        let Some(f) = ev.file_for(tr) else { continue };
        if let Some(h) = hooks() {
            h.file_removed(ev, &f);
        }
    }
    // Triggers are gone, so soft mode is only what is left of them.
    for ev in &evs {
        let Some(f) = ev.file_for(tr) else { continue };
        f.clear_soft_mode();
        if f.is_enabled() {
            if let Err(e) = ev.file_disarm(&f) {
                crate::pr_err!("trace: cannot disable {}/{}: {}", ev.system(), ev.name(), e);
            }
        }
        let list: Vec<_> = ev
            .instance_files
            .read()
            .iter()
            .filter(|x| !core::ptr::eq(x.tr, tr))
            .cloned()
            .collect();
        let old = core::mem::replace(&mut *ev.instance_files.write(), list);
        drop(old);
    }
}

/// Registers the internal events this kernel has (`ftrace/print`,
/// `ftrace/raw_data`, `ftrace/kernel_stack`).
pub(super) fn register_internal_events() {
    let def = TraceEventDef {
        system: "ftrace".to_string(),
        name: "print".to_string(),
        fields: alloc::vec![
            FieldDesc::new("unsigned long", "ip", 8, 8, false),
            FieldDesc::new("char", "buf[]", 16, 0, false),
        ],
        print_fmt: "\"%ps: %s\", (void *)REC->ip, REC->buf".to_string(),
        print: Box::new(print_print),
        reg: None,
        ignore_enable: true,
    };
    if let Err(e) = register_with_id(def, Some(super::TRACE_PRINT)) {
        crate::pr_err!("trace: cannot register ftrace/print: {}", e);
    }
    if let Err(e) = super::raw_data::register_raw_data_event() {
        crate::pr_err!("trace: cannot register ftrace/raw_data: {}", e);
    }
    if let Err(e) = register_with_id(super::trigger::kernel_stack_def(), Some(super::trigger::TRACE_STACK)) {
        crate::pr_err!("trace: cannot register ftrace/kernel_stack: {}", e);
    }
}

/// Registers an internal event of Linux's fixed type `id` (as
/// `ftrace/function`).
pub(super) fn register_internal_event(def: TraceEventDef, id: u16) -> Result<Arc<TraceEvent>, Errno> {
    register_with_id(def, Some(id))
}

/// `ftrace/print` output: `%ps: %s` of the caller's address and the text.
fn print_print(out: &mut String, rec: &EventRecord<'_>) {
    let ip = rec
        .entry
        .get(8..16)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    super::output::print_sym_short(out, ip as usize);
    out.push_str(": ");
    let text = rec.entry.get(16..).unwrap_or(&[]);
    let n = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    out.push_str(&String::from_utf8_lossy(&text[..n]));
}

/// Removes an event and its files, in every trace array: EBUSY if it is
/// enabled in one or one of its files is open (Linux's
/// `trace_remove_event_call`).
pub fn unregister_trace_event(ev: &Arc<TraceEvent>) -> Result<(), Errno> {
    let events_dir = tracefs::events_dir();
    let _g = EVENT_MUTEX.lock();
    if ev.armed.load(Ordering::Acquire) > 0 {
        return Err(Errno::EBUSY);
    }
    let instances = INSTANCES.lock();
    let dirs: Vec<Arc<PseudoDir>> = core::iter::once(events_dir)
        .chain(instances.iter().map(|(_, d)| d.clone()))
        .collect();
    drop(instances);
    let sys_dirs: Vec<Arc<PseudoDir>> = dirs.iter().filter_map(|d| d.lookup_dir(ev.system())).collect();
    if sys_dirs.iter().any(|d| d.tree_busy(ev.name())) {
        return Err(Errno::EBUSY);
    }
    // The arrays it recorded into are cleared once it is gone (Linux's
    // `tr->clear_trace`, set by `event_remove`): only those, so that
    // removing an event used in an instance leaves the top level's
    // buffer alone.
    {
        let mut pending = CLEAR_PENDING.lock();
        let files = ev.instance_files.read();
        for f in core::iter::once(&ev.file).chain(files.iter()) {
            if f.was_enabled() && !pending.iter().any(|t| core::ptr::eq(*t, f.tr)) {
                pending.push(f.tr);
            }
        }
    }
    for d in &sys_dirs {
        let _ = d.remove_tree(ev.name());
    }
    EVENTS.write().remove(&ev.id);
    ORDER.lock().retain(|&i| i != ev.id);
    if let Some(h) = hooks() {
        h.file_removed(ev, &ev.file);
        for f in ev.instance_files.read().iter() {
            h.file_removed(ev, f);
        }
    }
    // The last event of a system takes the system's directory with it.
    let others = EVENTS.read().values().any(|e| e.system() == ev.system());
    if !others {
        for d in &dirs {
            let _ = d.remove_tree(ev.system());
        }
    }
    Ok(())
}

/// `enable` of a set of event files: `1`, `0`, or `X` for a mix.
fn enable_state(files: impl Iterator<Item = Arc<TraceEventFile>>) -> &'static [u8] {
    let (mut on, mut off) = (false, false);
    for f in files {
        if f.is_enabled() {
            on = true;
        } else {
            off = true;
        }
    }
    match (on, off) {
        (true, true) => b"X\n",
        (true, false) => b"1\n",
        _ => b"0\n",
    }
}

/// The files in `tr` of the events `pick` selects (internal events left
/// out).
fn files_of(tr: &TraceArray, pick: impl Fn(&TraceEvent) -> bool) -> Vec<(Arc<TraceEvent>, Arc<TraceEventFile>)> {
    all_events()
        .into_iter()
        .filter(|e| !e.def.ignore_enable && pick(e))
        .filter_map(|e| {
            let f = e.file_for(tr)?;
            Some((e, f))
        })
        .collect()
}

/// Parses an `enable` write: 0 or 1 (Linux's kstrtoul, then anything
/// else is EINVAL).
fn parse_enable(buf: &[u8]) -> Result<bool, Errno> {
    match super::tracefs::parse_ulong(buf)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Errno::EINVAL),
    }
}

/// Sets every event `pick` selects in `tr` (Linux's
/// `__ftrace_set_clr_event`); EINVAL if it selects none.
fn set_events(tr: &TraceArray, pick: impl Fn(&TraceEvent) -> bool, on: bool) -> Result<(), Errno> {
    let _g = EVENT_MUTEX.lock();
    let files = files_of(tr, pick);
    if files.is_empty() {
        return Err(Errno::EINVAL);
    }
    let mut result = Ok(());
    for (e, f) in &files {
        if let Err(err) = e.enable_disable(f, on, false) {
            result = Err(err);
        }
    }
    result
}

fn create_system_files(dir: &Arc<PseudoDir>, tr: &'static TraceArray, system: &str) {
    let sys = system.to_string();
    let sys_w = sys.clone();
    dir.file(
        "enable",
        0o640,
        Box::new(move || enable_state(files_of(tr, |e| e.system() == sys).into_iter().map(|(_, f)| f)).to_vec()),
        Some(Box::new(move |buf| {
            let on = parse_enable(buf)?;
            set_events(tr, |e| e.system() == sys_w, on)?;
            Ok(buf.len())
        })),
    );
    let sys = system.to_string();
    let sys_w = sys.clone();
    dir.file(
        "filter",
        0o640,
        Box::new(move || match hooks() {
            Some(h) => h.filter_show(tr, &sys, None).into_bytes(),
            None => b"none\n".to_vec(),
        }),
        Some(Box::new(move |buf| {
            match hooks() {
                Some(h) => h.filter_write(tr, &sys_w, None, buf)?,
                None if command_text(buf)? == "0" => {}
                None => return Err(Errno::EINVAL),
            }
            Ok(buf.len())
        })),
    );
}

fn create_event_files(dir: &Arc<PseudoDir>, ev: &Arc<TraceEvent>, file: &Arc<TraceEventFile>) {
    if !ev.def.ignore_enable {
        let r = file.clone();
        let (w, wf) = (ev.clone(), file.clone());
        dir.file(
            "enable",
            0o640,
            Box::new(move || enable_text(&r)),
            Some(Box::new(move |buf| {
                let on = parse_enable(buf)?;
                let _g = EVENT_MUTEX.lock();
                w.enable_disable(&wf, on, false)?;
                Ok(buf.len())
            })),
        );
        let (r, rf) = (ev.clone(), file.clone());
        let (w, wf) = (ev.clone(), file.clone());
        dir.file(
            "filter",
            0o640,
            Box::new(move || match hooks() {
                Some(h) => h.filter_show(rf.tr, r.system(), Some((&r, &rf))).into_bytes(),
                None => b"none\n".to_vec(),
            }),
            Some(Box::new(move |buf| {
                match hooks() {
                    Some(h) => h.filter_write(wf.tr, w.system(), Some((&w, &wf)), buf)?,
                    None if command_text(buf)? == "0" => {}
                    None => return Err(Errno::EINVAL),
                }
                Ok(buf.len())
            })),
        );
    }
    let f = ev.clone();
    dir.file("format", 0o440, Box::new(move || f.format().into_bytes()), None);
    let id = ev.id;
    dir.file("id", 0o440, Box::new(move || format!("{id}\n").into_bytes()), None);
    // As Linux, `ftrace/print` (trace_marker) has triggers too.
    if !ev.def.ignore_enable || (ev.system() == "ftrace" && ev.name() == "print") {
        let (r, rf) = (ev.clone(), file.clone());
        let (w, wf) = (ev.clone(), file.clone());
        let (t, tf) = (ev.clone(), file.clone());
        let _ = dir.file_trunc(
            "trigger",
            0o640,
            Box::new(move || match hooks() {
                Some(h) => h.trigger_show(&r, &rf).into_bytes(),
                None => b"# Available triggers:\n# \n".to_vec(),
            }),
            Some(Box::new(move |buf| {
                match hooks() {
                    Some(h) => h.trigger_write(&w, &wf, buf)?,
                    None if command_text(buf)?.is_empty() => {}
                    None => return Err(Errno::EINVAL),
                }
                Ok(buf.len())
            })),
            Some(Box::new(move || {
                if let Some(h) = hooks() {
                    h.trigger_clear(&t, &tf);
                }
            })),
        );
        let (h, hf) = (ev.clone(), file.clone());
        dir.file(
            "hist",
            0o440,
            Box::new(move || hooks().map(|x| x.hist_show(&h, &hf)).unwrap_or_default().into_bytes()),
            None,
        );
    }
}

/// A command written to a tracing file, without surrounding whitespace.
fn command_text(buf: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(buf).map(str::trim).map_err(|_| Errno::EINVAL)
}

/// Creates `events/{enable,header_page,header_event}` of `tr`.
pub(super) fn create_top_files(events: &Arc<PseudoDir>, tr: &'static TraceArray) {
    events.file(
        "enable",
        0o640,
        Box::new(move || enable_state(files_of(tr, |_| true).into_iter().map(|(_, f)| f)).to_vec()),
        Some(Box::new(move |buf| {
            let on = parse_enable(buf)?;
            // With no event at all, Linux still accepts the write.
            match set_events(tr, |_| true, on) {
                Ok(()) | Err(Errno::EINVAL) => Ok(buf.len()),
                Err(e) => Err(e),
            }
        })),
    );
    events.file(
        "header_page",
        0o440,
        Box::new(move || ring_buffer::header_page(tr.subbuf_size()).into_bytes()),
        None,
    );
    events.file(
        "header_event",
        0o440,
        Box::new(|| ring_buffer::HEADER_EVENT.as_bytes().to_vec()),
        None,
    );
}

/// `available_events`: `system:event` for every event that can be enabled,
/// newest first (Linux adds events at the head of its list).
pub fn available_events() -> Vec<u8> {
    let mut s = String::new();
    for e in all_events().iter().rev().filter(|e| !e.def.ignore_enable) {
        s.push_str(&format!("{}:{}\n", e.system(), e.name()));
    }
    s.into_bytes()
}

/// `set_event` of `tr`: its enabled events (soft mode included), newest
/// first as Linux lists them.
pub fn set_event_show(tr: &TraceArray) -> Vec<u8> {
    let mut s = String::new();
    for (e, _) in files_of(tr, |_| true).iter().rev().filter(|(_, f)| f.is_enabled()) {
        s.push_str(&format!("{}:{}\n", e.system(), e.name()));
    }
    s.into_bytes()
}

/// A `set_event` write to `tr`: words `[!][system:]event` (`system:` alone
/// is every event of it; a bare word matches a system or an event name;
/// no globs, as in Linux 6.12's `ftrace_set_clr_event`). EINVAL for a
/// word that names no event.
pub fn set_event_write(tr: &TraceArray, buf: &[u8]) -> Result<usize, Errno> {
    let mut rest = buf;
    while !rest.is_empty() {
        let (used, word) = trace_filter::set_event::next_word(rest)?;
        if let Some(word) = word {
            let cmd = trace_filter::set_event::SetEventCmd::parse(&word);
            set_events(tr, |e| cmd.matcher.matches(e.system(), e.name()), cmd.enable)?;
        }
        rest = rest.get(used.max(1)..).unwrap_or(&[]);
    }
    Ok(buf.len())
}

/// `set_event` of `tr` opened with O_TRUNC: every event off.
pub fn disable_all_events(tr: &TraceArray) {
    let _ = set_events(tr, |_| true, false);
}

/// A list of pids for event filtering (Linux's `trace_pid_list`), sorted,
/// with a flag readable from probe context without the lock. Events on
/// several CPUs read it at once (Linux reads it under RCU): readers share
/// the lock, and only a change under way makes one give up.
pub struct EventPidList {
    pids: spin::RwLock<Vec<u32>>,
    on: AtomicBool,
}

impl EventPidList {
    pub(super) const fn new() -> EventPidList {
        EventPidList {
            pids: spin::RwLock::new(Vec::new()),
            on: AtomicBool::new(false),
        }
    }

    /// Runs `f` on the list with interrupts masked, so that no event on
    /// this CPU waits for it and no task switch leaves it held.
    fn locked<R>(&self, f: impl FnOnce(&mut Vec<u32>) -> R) -> R {
        let irq = arch::cpu::local_irq_save();
        let r = f(&mut self.pids.write());
        arch::cpu::local_irq_restore(irq);
        r
    }

    /// Whether `pid` is listed; None when the list is empty or being
    /// changed (probe context must not spin on it).
    fn try_contains(&self, pid: u32) -> Option<bool> {
        if !self.on.load(Ordering::Acquire) {
            return None;
        }
        // Writers hold it briefly with interrupts masked: a reader on
        // another CPU retries for a while rather than let a filtered
        // task's event through; bounded, for a writer this probe
        // interrupted on its own CPU.
        for _ in 0..100_000 {
            if let Some(l) = self.pids.try_read() {
                return Some(l.binary_search(&pid).is_ok());
            }
            core::hint::spin_loop();
        }
        None
    }

    fn contains(&self, pid: u32) -> bool {
        let irq = arch::cpu::local_irq_save();
        let r = self.pids.read().binary_search(&pid).is_ok();
        arch::cpu::local_irq_restore(irq);
        r
    }

    /// Lists `child` if `parent` is listed (Linux's
    /// `trace_filter_add_remove_task` for a fork).
    fn fork(&self, parent: u32, child: u32) {
        // Only a change takes the write lock, which events wait for.
        if !self.on.load(Ordering::Acquire) || !self.contains(parent) {
            return;
        }
        self.locked(|l| {
            if l.binary_search(&parent).is_ok() {
                if let Err(at) = l.binary_search(&child) {
                    l.insert(at, child);
                }
            }
        });
    }

    /// Unlists `pid` (its task exited).
    fn exit(&self, pid: u32) {
        // Every task's exit comes here: only a listed one takes the write
        // lock, which events wait for.
        if !self.on.load(Ordering::Acquire) || !self.contains(pid) {
            return;
        }
        self.locked(|l| {
            if let Ok(at) = l.binary_search(&pid) {
                l.remove(at);
            }
        });
    }

    /// The file's text: one pid a line.
    pub fn show(&self) -> Vec<u8> {
        let mut s = String::new();
        let irq = arch::cpu::local_irq_save();
        let pids = self.pids.read().clone();
        arch::cpu::local_irq_restore(irq);
        for p in pids {
            s.push_str(&format!("{p}\n"));
        }
        s.into_bytes()
    }

    /// Adds the pids of a write (EINVAL on a non-number, nothing added).
    pub fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
        let mut add = Vec::new();
        for tok in text.split_whitespace() {
            add.push(tok.parse::<u32>().map_err(|_| Errno::EINVAL)?);
        }
        self.locked(|l| {
            for p in add {
                if !l.contains(&p) {
                    l.push(p);
                }
            }
            l.sort_unstable();
            self.on.store(!l.is_empty(), Ordering::Release);
        });
        Ok(buf.len())
    }

    /// Empties it (the file opened with O_TRUNC).
    pub fn clear(&self) {
        self.locked(|l| {
            l.clear();
            self.on.store(false, Ordering::Release);
        });
    }
}

/// Whether the current task's events are filtered out of `tr` by its
/// `set_event_pid` or `set_event_notrace_pid` (Linux's
/// `trace_ignore_this_task`): not in the first when it has pids, or in
/// the second. From probe context: a list being changed lets the event
/// through.
#[inline]
pub fn ignore_this_task(tr: &TraceArray) -> bool {
    pid_lists_on(tr) && ignore_this_task_slow(tr)
}

/// Whether a hit of file `f` is recorded by the slow path (a filter, a
/// trigger, soft-disable, or stack traces asked of its array).
#[inline(always)]
fn takes_slow_path(f: &TraceEventFile) -> bool {
    f.needs_slow_path() || f.tr.is_set(super::options::STACKTRACE)
}

/// Whether `set_event_pid` or `set_event_notrace_pid` of `tr` lists
/// tasks. Relaxed: the lists themselves are read under their locks (the
/// slow path); two LDARs per event cost as much as two dozen plain loads
/// under QEMU's TCG.
#[inline(always)]
pub(super) fn pid_lists_on(tr: &TraceArray) -> bool {
    tr.event_pids.on.load(Ordering::Relaxed) || tr.event_notrace_pids.on.load(Ordering::Relaxed)
}

/// [`ignore_this_task`] with a pid list on, out of line: the common case
/// (no lists) costs its callers two loads.
#[inline(never)]
fn ignore_this_task_slow(tr: &TraceArray) -> bool {
    let (pids, no_pids) = (&tr.event_pids, &tr.event_notrace_pids);
    let pid = match crate::sched::try_current() {
        Some(t) if !t.is_idle() => t.tid(),
        _ => 0,
    };
    pids.try_contains(pid) == Some(false) || no_pids.try_contains(pid) == Some(true)
}

/// [`ignore_this_task`] of the top-level trace array.
pub fn trace_ignore_this_task() -> bool {
    ignore_this_task(super::global_trace())
}

/// A task forked (Linux's `event_filter_pid_sched_process_fork`): in each
/// trace array with `options/event-fork`, a child of a listed task is
/// listed too, in each list.
pub fn event_pids_fork(parent: u32, child: u32) {
    for tr in trace_arrays() {
        if tr.is_set(super::options::EVENT_FORK) {
            tr.event_pids.fork(parent, child);
            tr.event_notrace_pids.fork(parent, child);
        }
    }
}

/// A task is freed (Linux's `event_filter_pid_sched_process_exit`, on
/// `sched_process_free`): its pid leaves every list, so that a new task
/// given the pid is not affected. Not at exit: the task's last events
/// (the SIGCHLD it sends) still belong to it.
///
/// From the scheduler: nothing is allocated, and the instances are looked
/// at only if their list is free right now.
pub fn event_pids_exit(pid: u32) {
    let exit = |tr: &TraceArray| {
        tr.event_pids.exit(pid);
        tr.event_notrace_pids.exit(pid);
    };
    if let Some(tr) = super::try_global_trace() {
        exit(tr);
    }
    if let Some(instances) = INSTANCES.try_lock() {
        for (tr, _) in instances.iter() {
            exit(tr);
        }
    }
}
