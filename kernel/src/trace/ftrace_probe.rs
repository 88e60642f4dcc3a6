//! Function commands written to `set_ftrace_filter` (Linux's function
//! probes, kernel/trace/ftrace.c `register_ftrace_function_probe` and the
//! commands of trace_functions.c and trace_events.c):
//! `<glob>:traceon[:N]`, `traceoff`, `stacktrace`,
//! `enable_event:<system>:<event>[:N]` and `disable_event:...`, removed
//! with a leading `!`.
//!
//! As in Linux each command with and without a count is its own probe
//! type; a probe type holds at most one entry per function, so adding a
//! function again changes nothing (and a write adding nothing new is
//! EINVAL), and `!<glob>:<cmd>` removes the entries of that type only
//! (`:N` chooses the counted type, its value is ignored). The probes work
//! whatever the current tracer is: they share one ftrace ops
//! ([`PROBE_OPS`]) whose filter is every function with an entry. Each
//! trace array has its own probe types (Linux's `tr->func_probes`): a
//! command written to an instance's `set_ftrace_filter` acts on that
//! instance (its `tracing_on`, its buffer, its event files).

use super::event_filter::TraceEventFile;
use super::events::{self, TraceEvent};
use super::ftrace::{self, FtraceHash, FtraceOps};
use super::TraceArray;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ftrace::{FtraceRegs, FTRACE_BL_OFFSET};
use core::fmt::Write;
use core::sync::atomic::{AtomicI64, Ordering};
use uapi::Errno;

/// A function command (Linux's `struct ftrace_func_command` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeCmd {
    /// `traceon`: turns `tracing_on` on.
    TraceOn,
    /// `traceoff`: turns it off.
    TraceOff,
    /// `stacktrace`: records the kernel stack.
    Stacktrace,
    /// `enable_event:<sys>:<event>`: clears the event's soft-disable.
    EnableEvent,
    /// `disable_event:<sys>:<event>`: sets it.
    DisableEvent,
}

impl ProbeCmd {
    fn parse(s: &str) -> Option<ProbeCmd> {
        Some(match s {
            "traceon" => ProbeCmd::TraceOn,
            "traceoff" => ProbeCmd::TraceOff,
            "stacktrace" => ProbeCmd::Stacktrace,
            "enable_event" => ProbeCmd::EnableEvent,
            "disable_event" => ProbeCmd::DisableEvent,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            ProbeCmd::TraceOn => "traceon",
            ProbeCmd::TraceOff => "traceoff",
            ProbeCmd::Stacktrace => "stacktrace",
            ProbeCmd::EnableEvent => "enable_event",
            ProbeCmd::DisableEvent => "disable_event",
        }
    }
}

/// One function's entry of a probe type.
struct ProbeEntry {
    site: u32,
    /// What is left of `:N`; -1 for no limit.
    count: AtomicI64,
    /// The event of `enable_event`/`disable_event` and its file in the
    /// probe's trace array (holding a soft-mode reference while the entry
    /// lives).
    event: Option<(Arc<TraceEvent>, Arc<TraceEventFile>)>,
}

/// One probe type (Linux's `struct ftrace_func_probe` with its
/// `probe_ops`) and its entries, by site.
struct FuncProbe {
    /// The trace array it acts on.
    tr: &'static TraceArray,
    cmd: ProbeCmd,
    counted: bool,
    entries: Vec<Arc<ProbeEntry>>,
}

/// The probe types, the most recently created first (Linux lists them in
/// `tr->func_probes` order).
static FUNC_PROBES: spin::RwLock<Vec<FuncProbe>> = spin::RwLock::new(Vec::new());
/// Serialises registrations (held across the ops update).
static PROBE_LOCK: spin::Mutex<()> = spin::Mutex::new(());

/// The ops every probe type shares.
pub static PROBE_OPS: FtraceOps = FtraceOps::new("probe_ops", function_trace_probe_call);

/// Its callback (Linux's `function_trace_probe_call`): runs each probe
/// type's entry for this function.
#[allow(unsafe_code)] // exported under Linux's name, which enabled_functions prints
#[no_mangle]
fn function_trace_probe_call(_ops: &FtraceOps, ip: usize, _parent: usize, _regs: &mut FtraceRegs) {
    let Some(site) = ftrace::site_index(ip - FTRACE_BL_OFFSET) else {
        return;
    };
    // A registration in progress: the hit is lost, never waited for.
    let Some(probes) = FUNC_PROBES.try_read() else {
        return;
    };
    for p in probes.iter() {
        if let Ok(i) = p.entries.binary_search_by_key(&site, |e| e.site) {
            fire(p, &p.entries[i]);
        }
    }
}

/// Takes one from a counted entry's count if it is not 0 (-1 and other
/// negative values, from an empty `:`, never reach 0, as in Linux).
fn take_count(e: &ProbeEntry) -> bool {
    e.count
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| (c != 0).then_some(c - 1))
        .is_ok()
}

/// One hit (Linux's `ftrace_traceon[_count]`, `ftrace_stacktrace[_count]`,
/// `event_enable_[count_]probe`): a counted entry counts only the hits
/// that changed something.
fn fire(p: &FuncProbe, e: &ProbeEntry) {
    let tr = p.tr;
    match p.cmd {
        ProbeCmd::TraceOn | ProbeCmd::TraceOff => {
            // Linux's update_traceon_count: the count is read before the
            // state, and set from what was read after the state changed,
            // so CPUs hitting at once take one from it, not one each.
            let on = p.cmd == ProbeCmd::TraceOn;
            let old = e.count.load(Ordering::Acquire);
            if p.counted && old == 0 {
                return;
            }
            if tr.tracing_on() == on {
                return;
            }
            tr.set_tracing_on(on);
            if p.counted {
                let _ = e
                    .count
                    .compare_exchange(old, old.wrapping_sub(1), Ordering::AcqRel, Ordering::Acquire);
            }
        }
        ProbeCmd::Stacktrace => {
            if !tr.tracing_on() {
                return;
            }
            if p.counted && !take_count(e) {
                return;
            }
            super::trigger::trace_function_stack(tr);
        }
        ProbeCmd::EnableEvent | ProbeCmd::DisableEvent => {
            let Some((_, file)) = &e.event else { return };
            let enable = p.cmd == ProbeCmd::EnableEvent;
            // As traceon/traceoff: CPUs that find the event in the other
            // state at once all switch it, and take one from the count
            // between them (Linux's event_enable_count_probe).
            let old = e.count.load(Ordering::Acquire);
            if p.counted && (old == 0 || enable != file.soft_disabled()) {
                return;
            }
            file.set_soft_disabled(!enable);
            if p.counted && old != -1 {
                let _ = e
                    .count
                    .compare_exchange(old, old - 1, Ordering::AcqRel, Ordering::Acquire);
            }
        }
    }
}

/// Brings [`PROBE_OPS`] in line with the entries: registered with every
/// probed function as its filter, or unregistered when there is none.
fn update_ops() -> Result<(), Errno> {
    let filter: alloc::collections::BTreeSet<u32> = FUNC_PROBES
        .read()
        .iter()
        .flat_map(|p| p.entries.iter().map(|e| e.site))
        .collect();
    if filter.is_empty() {
        if PROBE_OPS.is_registered() {
            ftrace::unregister_ftrace_function(&PROBE_OPS)?;
        }
        return PROBE_OPS.set_hash(FtraceHash::default());
    }
    PROBE_OPS.set_hash(FtraceHash {
        filter,
        notrace: Default::default(),
    })?;
    if !PROBE_OPS.is_registered() {
        ftrace::register_ftrace_function(&PROBE_OPS)?;
    }
    Ok(())
}

/// The sites whose names `glob` matches (Linux's `ftrace_match`; an
/// empty glob or `*` is every function).
fn matching_sites(glob: &str) -> impl Iterator<Item = u32> + '_ {
    ftrace::sites()
        .iter()
        .enumerate()
        .filter(move |(_, s)| glob.is_empty() || trace_filter::glob::glob_match(glob.as_bytes(), s.name.as_bytes()))
        .map(|(i, _)| i as u32)
}

/// A `<glob>:<command>[:<param>]` word (`glob` may start with `!`) written
/// to `set_ftrace_filter` (`filter`) or `set_ftrace_notrace`, as Linux's
/// `ftrace_process_regex` hands it to the command. A removal chooses the
/// probe type by whether a count is there, not by its value. `EINVAL` for
/// an unknown command (`mod` included: this kernel has no modules), a bad
/// count or event, an event command outside `set_ftrace_filter`, a glob
/// adding no new function or removing none; `ENODEV` for a removal when
/// nothing of that type is registered.
pub fn func_command(
    tr: &'static TraceArray,
    glob: &str,
    command: &str,
    param: Option<&str>,
    filter: bool,
) -> Result<(), Errno> {
    let cmd = ProbeCmd::parse(command).ok_or(Errno::EINVAL)?;
    let (remove, glob) = match glob.strip_prefix('!') {
        Some(g) => (true, g),
        None => (false, glob),
    };
    let mut param = param;
    let mut event = None;
    if matches!(cmd, ProbeCmd::EnableEvent | ProbeCmd::DisableEvent) {
        // system:event[:count], looked up before anything else.
        let p = param.filter(|_| filter).ok_or(Errno::EINVAL)?;
        let (system, rest) = p.split_once(':').ok_or(Errno::EINVAL)?;
        let (name, count) = match rest.split_once(':') {
            Some((n, c)) => (n, Some(c)),
            None => (rest, None),
        };
        let ev = events::find_event(system, name).ok_or(Errno::EINVAL)?;
        let file = ev.file_for(tr).ok_or(Errno::EINVAL)?;
        event = Some((ev, file));
        param = count;
    }
    let counted = param.is_some();
    let _g = PROBE_LOCK.lock();
    if remove {
        return unregister(tr, glob, cmd, counted);
    }
    let count = match param.map(|p| p.split(':').next().unwrap_or("")) {
        None => -1,
        // Linux: an empty count is no count for traceon/traceoff/
        // stacktrace, an error for the event commands.
        Some("") if event.is_none() => -1,
        Some(n) => {
            let v = trace_filter::kstrto::kstrtoul(n.as_bytes(), 0).map_err(|_| Errno::EINVAL)?;
            i64::try_from(v).map_err(|_| Errno::EINVAL)?
        }
    };
    register(tr, glob, cmd, counted, count, event)
}

/// Whether probe type `p` is (`tr`, `cmd`, `counted`).
fn is_type(p: &FuncProbe, tr: &TraceArray, cmd: ProbeCmd, counted: bool) -> bool {
    core::ptr::eq(p.tr, tr) && p.cmd == cmd && p.counted == counted
}

fn register(
    tr: &'static TraceArray,
    glob: &str,
    cmd: ProbeCmd,
    counted: bool,
    count: i64,
    event: Option<(Arc<TraceEvent>, Arc<TraceEventFile>)>,
) -> Result<(), Errno> {
    let existing: Vec<u32> = FUNC_PROBES
        .read()
        .iter()
        .find(|p| is_type(p, tr, cmd, counted))
        .map(|p| p.entries.iter().map(|e| e.site).collect())
        .unwrap_or_default();
    let new: Vec<u32> = matching_sites(glob)
        .filter(|s| existing.binary_search(s).is_err())
        .collect();
    if new.is_empty() {
        return Err(Errno::EINVAL);
    }
    // Each entry of an event command holds the event in soft mode
    // (Linux's event_enable_init).
    let mut added: Vec<Arc<ProbeEntry>> = Vec::with_capacity(new.len());
    for &site in &new {
        if let Some((ev, file)) = &event {
            if let Err(e) = events::soft_enable_disable_file(ev, file, true) {
                for a in &added {
                    drop_entry(a.as_ref());
                }
                return Err(e);
            }
        }
        added.push(Arc::new(ProbeEntry {
            site,
            count: AtomicI64::new(count),
            event: event.clone(),
        }));
    }
    {
        let mut probes = FUNC_PROBES.write();
        let at = match probes.iter().position(|p| is_type(p, tr, cmd, counted)) {
            Some(i) => i,
            None => {
                // Newest first, as Linux's list_add on tr->func_probes.
                probes.insert(
                    0,
                    FuncProbe {
                        tr,
                        cmd,
                        counted,
                        entries: Vec::new(),
                    },
                );
                0
            }
        };
        let entries = &mut probes[at].entries;
        entries.extend(added);
        entries.sort_by_key(|e| e.site);
    }
    update_ops()
}

/// Releases what an entry holds.
fn drop_entry(e: &ProbeEntry) {
    if let Some((ev, file)) = &e.event {
        let _ = events::soft_enable_disable_file(ev, file, false);
    }
}

fn unregister(tr: &TraceArray, glob: &str, cmd: ProbeCmd, counted: bool) -> Result<(), Errno> {
    let matching: Vec<u32> = if glob.is_empty() || glob == "*" {
        Vec::new()
    } else {
        matching_sites(glob).collect()
    };
    let all = glob.is_empty() || glob == "*";
    let removed: Vec<Arc<ProbeEntry>> = {
        let mut probes = FUNC_PROBES.write();
        let Some(at) = probes.iter().position(|p| is_type(p, tr, cmd, counted)) else {
            return Err(Errno::ENODEV);
        };
        let entries = &mut probes[at].entries;
        let (gone, kept): (Vec<_>, Vec<_>) = core::mem::take(entries)
            .into_iter()
            .partition(|e| all || matching.binary_search(&e.site).is_ok());
        *entries = kept;
        if gone.is_empty() {
            return Err(Errno::EINVAL);
        }
        // A probe type without entries is freed (Linux's release_probe).
        if probes[at].entries.is_empty() {
            probes.remove(at);
        }
        gone
    };
    // The ops stops calling the removed entries before they are released.
    let r = update_ops();
    for e in &removed {
        drop_entry(e);
    }
    r
}

/// The probes' lines of `set_ftrace_filter` (Linux's `t_probe_show`):
/// `func:cmd:unlimited` or `func:cmd:count=N`, with `:sys:event` after
/// the event commands.
pub fn probes_show(tr: &TraceArray, out: &mut String) {
    let sites = ftrace::sites();
    for p in FUNC_PROBES.read().iter().filter(|p| core::ptr::eq(p.tr, tr)) {
        for e in &p.entries {
            let Some(site) = sites.get(e.site as usize) else {
                continue;
            };
            let _ = write!(out, "{}:{}", site.name, p.cmd.name());
            if let Some((ev, _)) = &e.event {
                let _ = write!(out, ":{}:{}", ev.system(), ev.name());
            }
            let c = e.count.load(Ordering::Acquire);
            if !p.counted || (e.event.is_some() && c == -1) {
                out.push_str(":unlimited\n");
            } else {
                let _ = writeln!(out, ":count={c}");
            }
        }
    }
}

/// Whether any function has a probe.
pub fn has_probes() -> bool {
    FUNC_PROBES.read().iter().any(|p| !p.entries.is_empty())
}

/// Removes every probe of `tr` (Linux's `clear_ftrace_function_probes`,
/// when an instance is removed).
pub fn clear_probes_of(tr: &TraceArray) {
    let _g = PROBE_LOCK.lock();
    let removed: Vec<Arc<ProbeEntry>> = {
        let mut probes = FUNC_PROBES.write();
        let (gone, kept): (Vec<FuncProbe>, Vec<FuncProbe>) = core::mem::take(&mut *probes)
            .into_iter()
            .partition(|p| core::ptr::eq(p.tr, tr));
        *probes = kept;
        gone.into_iter().flat_map(|p| p.entries).collect()
    };
    if removed.is_empty() {
        return;
    }
    if let Err(e) = update_ops() {
        crate::pr_err!("ftrace: cannot update the function probes: {}", e);
    }
    for e in &removed {
        drop_entry(e);
    }
}
