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

use super::tracefs;
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
    /// Linux's `EVENT_FILE_FL_ENABLED`: the source is armed (by an enable
    /// or by soft mode).
    enabled: AtomicBool,
    /// Filter, triggers and soft-mode state ([`super::event_filter`]).
    pub(super) file: super::event_filter::EventFileState,
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

    /// Whether its source is armed (internal events always are): enabled,
    /// or in soft mode for triggers (then it may still be soft-disabled).
    pub fn is_enabled(&self) -> bool {
        self.def.ignore_enable || self.enabled.load(Ordering::Acquire)
    }

    /// Records an entry of `len` bytes after the common fields if the
    /// event is enabled and the task passes `set_event_pid`; `fill` writes
    /// the fields and may reject the entry. The event's triggers run and
    /// its filter decides (Linux's `trace_trigger_soft_disabled` and
    /// `event_trigger_unlock_commit`); a soft-disabled event runs its
    /// triggers without being recorded. From probe context.
    pub fn record(&self, len: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> bool {
        if !self.is_enabled() || trace_ignore_this_task() {
            return false;
        }
        let Some(tr) = super::try_global_trace() else {
            return false;
        };
        if self.file.needs_slow_path() {
            return super::event_filter::record_slow(self, tr, len, fill);
        }
        super::trace_event_write(tr, self.id, len, fill)
    }

    /// The `enable` file's text: `1` when enabled and not soft-disabled,
    /// then `*` in soft mode (Linux's `event_enable_read`).
    fn enable_text(&self) -> Vec<u8> {
        let on = self.enabled.load(Ordering::Acquire) && !self.file.soft_disabled();
        let mut s = alloc::vec![if on { b'1' } else { b'0' }];
        if self.file.soft_disabled() || self.file.soft_mode() {
            s.push(b'*');
        }
        s.push(b'\n');
        s
    }

    /// Like [`TraceEvent::record`], for an entry of `len` bytes in all,
    /// which `fill` sees whole, its common fields already written (probe
    /// records whose string offsets count from the entry's start). The
    /// caller has decided that the event is on: a probe event records
    /// every hit of its armed probes, also while enabling completes.
    pub fn record_entry(&self, len: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> bool {
        if trace_ignore_this_task() || len < super::TRACE_ENTRY_SIZE {
            return false;
        }
        let Some(tr) = super::try_global_trace() else {
            return false;
        };
        if self.file.needs_slow_path() {
            return super::event_filter::record_slow_entry(self, tr, len, fill);
        }
        super::trace_event_write_entry(tr, self.id, len, fill)
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

    /// Enables or disables it (Linux's `ftrace_event_enable_disable`):
    /// the buffers get their full size first, and `reg` arms the source.
    /// In soft mode (triggers use it) disabling only soft-disables it.
    /// Call with the event mutex held.
    pub fn set_enabled(&self, on: bool) -> Result<(), Errno> {
        self.enable_disable(on, false)
    }

    /// Linux's `__ftrace_event_enable_disable`: `soft` takes or drops a
    /// soft-mode reference (an event in soft mode is armed but, unless
    /// enabled for real, soft-disabled: it runs its triggers, records
    /// nothing). Call with the event mutex held.
    fn enable_disable(&self, on: bool, soft: bool) -> Result<(), Errno> {
        if self.def.ignore_enable {
            return Err(Errno::EINVAL);
        }
        let f = &self.file;
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
            if disable && self.enabled.load(Ordering::Acquire) {
                if let Some(reg) = &self.def.reg {
                    reg(false)?;
                }
                self.enabled.store(false, Ordering::Release);
                ENABLED_EVENTS.fetch_sub(1, Ordering::AcqRel);
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
        if !self.enabled.load(Ordering::Acquire) {
            let armed = super::global_trace()
                .update_buffers()
                .and_then(|()| match &self.def.reg {
                    Some(reg) => reg(true),
                    None => Ok(()),
                });
            if let Err(e) = armed {
                if soft {
                    f.sm_ref_put();
                    f.set_soft_mode(false);
                }
                return Err(e);
            }
            // Keep the event disabled when it only goes to soft mode.
            if soft {
                f.set_soft_disabled(true);
            }
            self.enabled.store(true, Ordering::Release);
            ENABLED_EVENTS.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }
}

/// Takes (`on`) or drops a soft-mode reference on `ev` (Linux's
/// `trace_event_enable_disable(file, on, 1)`), under the event mutex.
pub(super) fn soft_enable_disable(ev: &TraceEvent, on: bool) -> Result<(), Errno> {
    let _g = EVENT_MUTEX.lock();
    ev.enable_disable(on, true)
}

/// [`soft_enable_disable`] for a caller that holds the event mutex (an
/// event probe's `reg`, which soft-enables the event it is attached to).
pub(super) fn soft_enable_disable_locked(ev: &TraceEvent, on: bool) -> Result<(), Errno> {
    ev.enable_disable(on, true)
}

/// Filters and triggers, installed by the code that parses them.
pub trait EventFileHooks: Sync {
    /// `filter` of `ev` (a system's filter file when `ev` is None).
    fn filter_show(&self, system: &str, ev: Option<&Arc<TraceEvent>>) -> String;
    /// A write to a `filter` file (the bytes as written).
    fn filter_write(&self, system: &str, ev: Option<&Arc<TraceEvent>>, buf: &[u8]) -> Result<(), Errno>;
    /// `trigger` of `ev`.
    fn trigger_show(&self, ev: &Arc<TraceEvent>) -> String;
    /// A write to a `trigger` file (the bytes as written).
    fn trigger_write(&self, ev: &Arc<TraceEvent>, buf: &[u8]) -> Result<(), Errno>;
    /// `trigger` opened with O_TRUNC: remove every trigger of `ev`.
    fn trigger_clear(&self, ev: &Arc<TraceEvent>);
    /// `ev` is going away.
    fn event_removed(&self, ev: &Arc<TraceEvent>);
    /// `hist` of `ev` (its hist triggers' tables).
    fn hist_show(&self, _ev: &Arc<TraceEvent>) -> String {
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

/// The first id handed to events registered at run time (ids below are
/// Linux's fixed ftrace types, as `TRACE_PRINT`).
pub const FIRST_DYNAMIC_ID: u16 = 32;

/// Whether events should save command lines now (`record-cmd` and an
/// enabled event, as Linux records them from sched_switch then).
pub fn cmdline_recording() -> bool {
    ENABLED_EVENTS.load(Ordering::Acquire) > 0 && super::options::is_set(super::options::RECORD_CMD)
}

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
    let ev = Arc::new(TraceEvent {
        id,
        def,
        enabled: AtomicBool::new(false),
        file: super::event_filter::EventFileState::new(),
    });
    let sys_dir = match events_dir.lookup_dir(ev.system()) {
        Some(d) => d,
        None => {
            let system = ev.system();
            let files = |d: &Arc<PseudoDir>| {
                if !ev.def.ignore_enable {
                    create_system_files(d, system);
                }
            };
            crate::fs::tracefs::eventfs_create_dir(&crate::fs::tracefs::c_name(system)?, &events_dir, &files)?
        }
    };
    let files = |d: &Arc<PseudoDir>| create_event_files(d, &ev);
    crate::fs::tracefs::eventfs_create_dir(&crate::fs::tracefs::c_name(ev.name())?, &sys_dir, &files)?;
    EVENTS.write().insert(id, ev.clone());
    ORDER.lock().push(id);
    Ok(ev)
}

/// Registers the internal events this kernel has (`ftrace/print`).
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

/// Removes an event and its files: EBUSY if it is enabled or one of its
/// files is open (Linux's `trace_remove_event_call`).
pub fn unregister_trace_event(ev: &Arc<TraceEvent>) -> Result<(), Errno> {
    let events_dir = tracefs::events_dir();
    let _g = EVENT_MUTEX.lock();
    if ev.enabled.load(Ordering::Acquire) {
        return Err(Errno::EBUSY);
    }
    let sys_dir = events_dir.lookup_dir(ev.system()).ok_or(Errno::ENOENT)?;
    sys_dir.remove_tree(ev.name())?;
    EVENTS.write().remove(&ev.id);
    ORDER.lock().retain(|&i| i != ev.id);
    if let Some(h) = hooks() {
        h.event_removed(ev);
    }
    // The last event of a system takes the system's directory with it.
    let others = EVENTS.read().values().any(|e| e.system() == ev.system());
    if !others {
        let _ = events_dir.remove_tree(ev.system());
    }
    Ok(())
}

/// `enable` of a set of events: `1`, `0`, or `X` for a mix.
fn enable_state(evs: impl Iterator<Item = Arc<TraceEvent>>) -> &'static [u8] {
    let (mut on, mut off) = (false, false);
    for e in evs.filter(|e| !e.def.ignore_enable) {
        if e.is_enabled() {
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

/// Parses an `enable` write: 0 or 1 (Linux's kstrtoul, then anything
/// else is EINVAL).
fn parse_enable(buf: &[u8]) -> Result<bool, Errno> {
    match super::tracefs::parse_ulong(buf)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Errno::EINVAL),
    }
}

/// Sets every event `pick` selects; EINVAL if it selects none.
fn set_events(pick: impl Fn(&TraceEvent) -> bool, on: bool) -> Result<(), Errno> {
    let _g = EVENT_MUTEX.lock();
    let mut matched = false;
    let mut result = Ok(());
    for e in all_events().iter().filter(|e| !e.def.ignore_enable && pick(e)) {
        matched = true;
        if let Err(err) = e.set_enabled(on) {
            result = Err(err);
        }
    }
    if !matched {
        return Err(Errno::EINVAL);
    }
    result
}

fn create_system_files(dir: &Arc<PseudoDir>, system: &str) {
    let sys = system.to_string();
    let sys_w = sys.clone();
    dir.file(
        "enable",
        0o640,
        Box::new(move || enable_state(all_events().into_iter().filter(|e| e.system() == sys)).to_vec()),
        Some(Box::new(move |buf| {
            let on = parse_enable(buf)?;
            set_events(|e| e.system() == sys_w, on)?;
            Ok(buf.len())
        })),
    );
    let sys = system.to_string();
    let sys_w = sys.clone();
    dir.file(
        "filter",
        0o640,
        Box::new(move || match hooks() {
            Some(h) => h.filter_show(&sys, None).into_bytes(),
            None => b"none\n".to_vec(),
        }),
        Some(Box::new(move |buf| {
            match hooks() {
                Some(h) => h.filter_write(&sys_w, None, buf)?,
                None if command_text(buf)? == "0" => {}
                None => return Err(Errno::EINVAL),
            }
            Ok(buf.len())
        })),
    );
}

fn create_event_files(dir: &Arc<PseudoDir>, ev: &Arc<TraceEvent>) {
    if !ev.def.ignore_enable {
        let (r, w) = (ev.clone(), ev.clone());
        dir.file(
            "enable",
            0o640,
            Box::new(move || r.enable_text()),
            Some(Box::new(move |buf| {
                let on = parse_enable(buf)?;
                let _g = EVENT_MUTEX.lock();
                w.set_enabled(on)?;
                Ok(buf.len())
            })),
        );
        let (r, w) = (ev.clone(), ev.clone());
        dir.file(
            "filter",
            0o640,
            Box::new(move || match hooks() {
                Some(h) => h.filter_show(r.system(), Some(&r)).into_bytes(),
                None => b"none\n".to_vec(),
            }),
            Some(Box::new(move |buf| {
                match hooks() {
                    Some(h) => h.filter_write(w.system(), Some(&w), buf)?,
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
        let (r, w, t) = (ev.clone(), ev.clone(), ev.clone());
        let _ = dir.file_trunc(
            "trigger",
            0o640,
            Box::new(move || match hooks() {
                Some(h) => h.trigger_show(&r).into_bytes(),
                None => b"# Available triggers:\n# \n".to_vec(),
            }),
            Some(Box::new(move |buf| {
                match hooks() {
                    Some(h) => h.trigger_write(&w, buf)?,
                    None if command_text(buf)?.is_empty() => {}
                    None => return Err(Errno::EINVAL),
                }
                Ok(buf.len())
            })),
            Some(Box::new(move || {
                if let Some(h) = hooks() {
                    h.trigger_clear(&t);
                }
            })),
        );
        let h = ev.clone();
        dir.file(
            "hist",
            0o440,
            Box::new(move || hooks().map(|x| x.hist_show(&h)).unwrap_or_default().into_bytes()),
            None,
        );
    }
}

/// A command written to a tracing file, without surrounding whitespace.
fn command_text(buf: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(buf).map(str::trim).map_err(|_| Errno::EINVAL)
}

/// Creates `events/{enable,header_page,header_event}`.
pub(super) fn create_top_files(events: &Arc<PseudoDir>) {
    events.file(
        "enable",
        0o640,
        Box::new(|| enable_state(all_events().into_iter()).to_vec()),
        Some(Box::new(|buf| {
            let on = parse_enable(buf)?;
            // With no event at all, Linux still accepts the write.
            match set_events(|_| true, on) {
                Ok(()) | Err(Errno::EINVAL) => Ok(buf.len()),
                Err(e) => Err(e),
            }
        })),
    );
    events.file(
        "header_page",
        0o440,
        Box::new(|| ring_buffer::header_page(super::global_trace().subbuf_size()).into_bytes()),
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

/// `set_event`: the enabled events (soft mode included), newest first as
/// Linux lists them.
pub fn set_event_show() -> Vec<u8> {
    let mut s = String::new();
    for e in all_events()
        .iter()
        .rev()
        .filter(|e| !e.def.ignore_enable && e.is_enabled())
    {
        s.push_str(&format!("{}:{}\n", e.system(), e.name()));
    }
    s.into_bytes()
}

/// A `set_event` write: words `[!][system:]event` (`system:` alone is
/// every event of it; a bare word matches a system or an event name; no
/// globs, as in Linux 6.12's `ftrace_set_clr_event`). EINVAL for a word
/// that names no event.
pub fn set_event_write(buf: &[u8]) -> Result<usize, Errno> {
    let mut rest = buf;
    while !rest.is_empty() {
        let (used, word) = trace_filter::set_event::next_word(rest)?;
        if let Some(word) = word {
            let cmd = trace_filter::set_event::SetEventCmd::parse(&word);
            set_events(|e| cmd.matcher.matches(e.system(), e.name()), cmd.enable)?;
        }
        rest = rest.get(used.max(1)..).unwrap_or(&[]);
    }
    Ok(buf.len())
}

/// `set_event` opened with O_TRUNC: every event off.
pub fn disable_all_events() {
    let _ = set_events(|_| true, false);
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
    const fn new() -> EventPidList {
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
        self.pids.try_read().map(|l| l.binary_search(&pid).is_ok())
    }

    /// Lists `child` if `parent` is listed (Linux's
    /// `trace_filter_add_remove_task` for a fork).
    fn fork(&self, parent: u32, child: u32) {
        if !self.on.load(Ordering::Acquire) {
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
        if !self.on.load(Ordering::Acquire) {
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
        for p in self.locked(|l| l.clone()) {
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

/// `set_event_pid`: the pids whose events are recorded (all when empty).
pub static EVENT_PIDS: EventPidList = EventPidList::new();
/// `set_event_notrace_pid`: the pids whose events are not recorded.
pub static EVENT_NOTRACE_PIDS: EventPidList = EventPidList::new();

/// Whether the current task's events are filtered out by `set_event_pid`
/// or `set_event_notrace_pid` (Linux's `trace_ignore_this_task`): not in
/// the first when it has pids, or in the second. From probe context: a
/// list being changed lets the event through.
pub fn trace_ignore_this_task() -> bool {
    if !EVENT_PIDS.on.load(Ordering::Acquire) && !EVENT_NOTRACE_PIDS.on.load(Ordering::Acquire) {
        return false;
    }
    let pid = match crate::sched::try_current() {
        Some(t) if !t.is_idle() => t.tid(),
        _ => 0,
    };
    EVENT_PIDS.try_contains(pid) == Some(false) || EVENT_NOTRACE_PIDS.try_contains(pid) == Some(true)
}

/// A task forked (Linux's `event_filter_pid_sched_process_fork`): with
/// `options/event-fork`, a child of a listed task is listed too, in each
/// list.
pub fn event_pids_fork(parent: u32, child: u32) {
    if !super::options::is_set(super::options::EVENT_FORK) {
        return;
    }
    EVENT_PIDS.fork(parent, child);
    EVENT_NOTRACE_PIDS.fork(parent, child);
}

/// A task is freed (Linux's `event_filter_pid_sched_process_exit`, on
/// `sched_process_free`): its pid leaves both lists, so that a new task
/// given the pid is not affected. Not at exit: the task's last events
/// (the SIGCHLD it sends) still belong to it.
pub fn event_pids_exit(pid: u32) {
    EVENT_PIDS.exit(pid);
    EVENT_NOTRACE_PIDS.exit(pid);
}

/// `set_event_pid`'s text: one pid a line.
pub fn event_pids_show() -> Vec<u8> {
    EVENT_PIDS.show()
}

/// Adds the pids of a `set_event_pid` write (EINVAL on a non-number).
pub fn event_pids_write(buf: &[u8]) -> Result<usize, Errno> {
    EVENT_PIDS.write(buf)
}

/// `set_event_pid` opened with O_TRUNC: the list emptied.
pub fn event_pids_clear() {
    EVENT_PIDS.clear();
}
