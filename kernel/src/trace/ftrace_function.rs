//! The `function` tracer (Linux's kernel/trace/trace_functions.c) and the
//! tracefs files of ftrace: `current_tracer`/`available_tracers` of the
//! top-level trace array, `set_ftrace_filter`, `set_ftrace_notrace`,
//! `set_ftrace_pid`, `set_ftrace_notrace_pid`, `available_filter_functions`,
//! `available_filter_functions_addrs`, `enabled_functions` and
//! `touched_functions`.

use super::events::{EventRecord, FieldDesc, TraceEventDef};
use super::ftrace::{self, flags, FtraceHash, FtraceOps};
use super::options::PRINT_PARENT;
use super::output::seq_print_ip_sym;
use super::{global_trace, TraceArray, TRACE_FLAG_IRQS_OFF};
use crate::fs::pseudo::PseudoDir;
use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ftrace::FtraceRegs;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use uapi::Errno;
use vfs::file::{FileOps, OpenFile};

/// The type of `ftrace/function` entries (Linux's `TRACE_FN`).
pub const TRACE_FN: u16 = 1;

/// The `function` tracer's ops (Linux's `global_ops`), whose filter and
/// notrace sets are `set_ftrace_filter` and `set_ftrace_notrace`.
pub static GLOBAL_OPS: FtraceOps = FtraceOps::new("global_ops", function_trace_call);

/// The tracers `current_tracer` takes, in Linux's listing order.
const TRACERS: &[&str] = &[
    "function_graph",
    "wakeup_rt",
    "wakeup",
    "preemptirqsoff",
    "preemptoff",
    "irqsoff",
    "function",
    "nop",
];

/// Whether `function` is the current tracer.
static FUNCTION_ON: AtomicBool = AtomicBool::new(false);
/// Serialises tracer switches (Linux's `trace_types_lock`).
static TRACER_LOCK: crate::locking::Mutex<()> = crate::locking::Mutex::new(());
/// `set_ftrace_pid`: empty for every task.
static FTRACE_PIDS: spin::RwLock<BTreeSet<u32>> = spin::RwLock::new(BTreeSet::new());
/// Whether `set_ftrace_pid` has pids (read on the hit path).
static PID_FILTER: AtomicBool = AtomicBool::new(false);
/// `set_ftrace_notrace_pid`: tasks never traced.
static FTRACE_NOTRACE_PIDS: spin::RwLock<BTreeSet<u32>> = spin::RwLock::new(BTreeSet::new());
/// Whether `set_ftrace_notrace_pid` has pids.
static NOTRACE_PID_FILTER: AtomicBool = AtomicBool::new(false);

/// The task whose command line the function tracer last saved on a CPU:
/// its tid and name, and the hits since. Linux saves command lines at
/// `sched_switch`, once per switch after a record; saving on every hit
/// took two locks per traced call, so a hit saves only when the task or
/// its name differ from the last saved here, or every
/// [`CMDLINE_RESAVE_HITS`] hits (the table may have dropped it, or a save
/// may have found it busy).
struct SavedCmdline {
    tid: AtomicU32,
    hits: AtomicU32,
    comm: [AtomicU64; 2],
}

static CMDLINE_SAVED: crate::percpu::PerCpu<SavedCmdline> = crate::percpu::PerCpu::new(
    [const {
        SavedCmdline {
            tid: AtomicU32::new(0),
            hits: AtomicU32::new(0),
            comm: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }; crate::percpu::NR_CPUS],
);

/// Hits of one task between two saves of its command line.
const CMDLINE_RESAVE_HITS: u32 = 64;

/// Saves `t`'s command line unless this CPU saved the same one lately.
/// Interrupts are masked (the trampoline's), so this CPU's slot is ours.
pub(super) fn function_save_cmdline(t: &crate::sched::Task) {
    let comm = super::tracepoint::task_comm(t);
    let (lo, hi) = comm.split_at(8);
    let words = [lo, hi].map(|w| w.try_into().map_or(0, u64::from_le_bytes));
    let slot = CMDLINE_SAVED.this();
    let tid = t.tid();
    let hits = slot.hits.load(Ordering::Relaxed);
    if slot.tid.load(Ordering::Relaxed) == tid
        && slot.comm[0].load(Ordering::Relaxed) == words[0]
        && slot.comm[1].load(Ordering::Relaxed) == words[1]
        && hits < CMDLINE_RESAVE_HITS
    {
        slot.hits.store(hits + 1, Ordering::Relaxed);
        return;
    }
    super::cmdlines::save(t);
    slot.tid.store(tid, Ordering::Relaxed);
    slot.comm[0].store(words[0], Ordering::Relaxed);
    slot.comm[1].store(words[1], Ordering::Relaxed);
    slot.hits.store(0, Ordering::Relaxed);
}

/// The current tracer of `tr` (`nop` for instances, which have no other
/// yet).
pub fn current_tracer(tr: &TraceArray) -> &'static str {
    if core::ptr::eq(tr, global_trace()) && FUNCTION_ON.load(Ordering::Acquire) {
        "function"
    } else if core::ptr::eq(tr, global_trace()) && super::function_graph::is_on() {
        "function_graph"
    } else if let Some(t) = super::trace_irqsoff::current().filter(|_| core::ptr::eq(tr, global_trace())) {
        t
    } else {
        "nop"
    }
}

/// `available_tracers` of `tr`.
pub fn available_tracers(tr: &TraceArray) -> Vec<u8> {
    if core::ptr::eq(tr, global_trace()) {
        let mut s = TRACERS.join(" ");
        s.push('\n');
        s.into_bytes()
    } else {
        b"nop\n".to_vec()
    }
}

/// A write to `current_tracer` of `tr` (the name, trailing whitespace
/// ignored): `EINVAL` for a tracer that does not exist (or, in an
/// instance, anything but `nop`).
pub fn set_current_tracer(tr: &'static TraceArray, name: &str) -> Result<(), Errno> {
    let global = core::ptr::eq(tr, global_trace());
    let _g = TRACER_LOCK.lock();
    // Linux's tracing_set_tracer: the same tracer again changes nothing;
    // any switch empties the buffer (tracer_init) once the old tracer
    // is stopped.
    if global && name != "function_graph" && super::function_graph::is_on() {
        super::function_graph::graph_trace_reset()?;
        tr.reset(None);
    }
    if global && super::trace_irqsoff::current().is_some_and(|t| t != name) {
        super::trace_irqsoff::latency_tracer_reset();
        tr.reset(None);
    }
    match name {
        n if global && super::trace_irqsoff::is_latency_tracer(n) => {
            if super::trace_irqsoff::current() == Some(n) {
                return Ok(());
            }
            if FUNCTION_ON.swap(false, Ordering::AcqRel) {
                ftrace::unregister_ftrace_function(&GLOBAL_OPS)?;
            }
            super::trace_irqsoff::latency_tracer_init(tr, n)
        }
        "function_graph" if global => {
            tr.update_buffers()?;
            if FUNCTION_ON.swap(false, Ordering::AcqRel) {
                ftrace::unregister_ftrace_function(&GLOBAL_OPS)?;
            }
            super::function_graph::graph_trace_init(tr, GLOBAL_OPS.hash())
        }
        "nop" => {
            if global && FUNCTION_ON.swap(false, Ordering::AcqRel) {
                ftrace::unregister_ftrace_function(&GLOBAL_OPS)?;
                tr.reset(None);
            }
            tr.update_buffers()
        }
        "function" if global => {
            tr.update_buffers()?;
            if !FUNCTION_ON.load(Ordering::Acquire) {
                tr.reset(None);
                ftrace::register_ftrace_function(&GLOBAL_OPS)?;
                FUNCTION_ON.store(true, Ordering::Release);
            }
            Ok(())
        }
        _ => Err(Errno::EINVAL),
    }
}

/// The function tracer's callback (Linux's `function_trace_call`): one
/// `ftrace/function` entry with the function and its caller, flagged with
/// the traced function's interrupt state (not the trampoline's).
#[allow(unsafe_code)] // exported under Linux's name, which enabled_functions prints
#[no_mangle]
fn function_trace_call(_ops: &FtraceOps, ip: usize, parent_ip: usize, regs: &mut FtraceRegs) {
    let task = crate::sched::try_current();
    if PID_FILTER.load(Ordering::Relaxed) || NOTRACE_PID_FILTER.load(Ordering::Relaxed) {
        let pid = task.as_ref().filter(|t| !t.is_idle()).map_or(0, |t| t.tid());
        if ftrace_ignore_pid(pid) {
            return;
        }
    }
    let irq = aarch64_cpu::registers::DAIF::I;
    let irqs_off = (regs.daif >> irq.shift) & irq.mask != 0;
    let done = super::trace_event_write_entry(global_trace(), TRACE_FN, super::TRACE_ENTRY_SIZE + 16, |e| {
        e[2] = if irqs_off {
            e[2] | TRACE_FLAG_IRQS_OFF
        } else {
            e[2] & !TRACE_FLAG_IRQS_OFF
        };
        e[8..16].copy_from_slice(&(ip as u64).to_le_bytes());
        e[16..24].copy_from_slice(&(parent_ip as u64).to_le_bytes());
        true
    });
    if done && super::options::is_set(super::options::RECORD_CMD) {
        if let Some(t) = task.filter(|t| !t.is_idle()) {
            function_save_cmdline(&t);
        }
    }
    // options/func_stack_trace (Linux's function_stack_trace_call).
    if done && super::options::is_set(super::options::FUNC_STACK_TRACE) {
        super::trigger::trace_function_stack(global_trace());
    }
}

/// Whether `set_ftrace_pid` or `set_ftrace_notrace_pid` has pids (Linux's
/// `ftrace_pids_enabled`).
pub(super) fn ftrace_pids_enabled() -> bool {
    PID_FILTER.load(Ordering::Relaxed) || NOTRACE_PID_FILTER.load(Ordering::Relaxed)
}

/// Whether the function tracer skips task `pid` (Linux's
/// `ftrace_ignore_pid`): not in a non-empty `set_ftrace_pid`, or in
/// `set_ftrace_notrace_pid`. From the hit path: a list being changed
/// lets nothing through.
pub(super) fn ftrace_ignore_pid(pid: u32) -> bool {
    if PID_FILTER.load(Ordering::Relaxed) {
        match FTRACE_PIDS.try_read() {
            Some(p) if p.contains(&pid) => {}
            _ => return true,
        }
    }
    if NOTRACE_PID_FILTER.load(Ordering::Relaxed) {
        match FTRACE_NOTRACE_PIDS.try_read() {
            Some(p) if !p.contains(&pid) => {}
            _ => return true,
        }
    }
    false
}

/// A task forked (Linux's `ftrace_pid_follow_sched_process_fork`): with
/// `options/function-fork`, the child of a task in `set_ftrace_pid` or
/// `set_ftrace_notrace_pid` joins that list.
pub fn ftrace_pids_fork(parent: u32, child: u32) {
    if !super::options::is_set(super::options::FUNCTION_FORK) {
        return;
    }
    for (on, list) in [(&PID_FILTER, &FTRACE_PIDS), (&NOTRACE_PID_FILTER, &FTRACE_NOTRACE_PIDS)] {
        if on.load(Ordering::Acquire) {
            let mut l = list.write();
            if l.contains(&parent) {
                l.insert(child);
            }
        }
    }
}

/// A task exited (Linux's `ftrace_pid_follow_sched_process_exit`): with
/// `options/function-fork` it leaves both lists, so that a later task
/// given its pid is not caught by them.
pub fn ftrace_pids_exit(pid: u32) {
    if !super::options::is_set(super::options::FUNCTION_FORK) {
        return;
    }
    for (on, list) in [(&PID_FILTER, &FTRACE_PIDS), (&NOTRACE_PID_FILTER, &FTRACE_NOTRACE_PIDS)] {
        if on.load(Ordering::Acquire) {
            let mut l = list.write();
            // An emptied list still filters (nothing traced), as Linux's.
            l.remove(&pid);
        }
    }
}

/// `ftrace/function`, with Linux's format file.
fn function_event_def() -> TraceEventDef {
    TraceEventDef {
        system: "ftrace".to_string(),
        name: "function".to_string(),
        fields: alloc::vec![
            FieldDesc::new("unsigned long", "ip", 8, 8, false),
            FieldDesc::new("unsigned long", "parent_ip", 16, 8, false),
        ],
        print_fmt: "\" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip".to_string(),
        print: Box::new(print_function),
        reg: None,
        ignore_enable: true,
    }
}

/// `func <-parent` (Linux's `trace_fn_trace`).
fn print_function(out: &mut String, rec: &EventRecord<'_>) {
    let word = |o: usize| {
        rec.entry
            .get(o..o + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))) as usize
    };
    let (ip, parent) = (word(8), word(16));
    seq_print_ip_sym(out, ip, rec.trace_flags);
    if rec.trace_flags & PRINT_PARENT != 0 && parent != 0 {
        out.push_str(" <-");
        seq_print_ip_sym(out, parent, rec.trace_flags);
    }
    out.push('\n');
}

/// Which set of an ops a filter file edits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum HashKind {
    /// `set_ftrace_filter`, `stack_trace_filter`.
    Filter,
    /// `set_ftrace_notrace`.
    Notrace,
}

/// The listing of a filter file (Linux's `t_show` on a regex file): the
/// functions of the set in address order, or the "all"/"no" line when it
/// is empty, then (`set_ftrace_filter`) the function commands.
fn hash_show(ops: &FtraceOps, kind: HashKind, probes: bool) -> Vec<u8> {
    let h = ops.hash();
    let set = if kind == HashKind::Filter {
        &h.filter
    } else {
        &h.notrace
    };
    let mut s = String::new();
    if set.is_empty() {
        s.push_str(if kind == HashKind::Filter {
            "#### all functions enabled ####\n"
        } else {
            "#### no functions disabled ####\n"
        });
    }
    let sites = ftrace::sites();
    for &i in set {
        if let Some(site) = sites.get(i as usize) {
            s.push_str(site.name);
            s.push('\n');
        }
    }
    if core::ptr::eq(ops, &GLOBAL_OPS) {
        for (func, module) in mod_list(kind).lock().iter() {
            let _ = writeln!(s, "{func}:mod:{module}");
        }
    }
    if probes {
        super::ftrace_probe::probes_show(&mut s);
    }
    s.into_bytes()
}

/// `:mod:` words whose module is not loaded, kept for when it is (Linux's
/// `tr->mod_trace` and `tr->mod_notrace`): (function glob, module), the
/// most recent first. This kernel has no loadable modules, so they are
/// only listed, and dropped with `!` or by truncating the file.
static MOD_TRACE: crate::locking::Mutex<Vec<(String, String)>> = crate::locking::Mutex::new(Vec::new());
static MOD_NOTRACE: crate::locking::Mutex<Vec<(String, String)>> = crate::locking::Mutex::new(Vec::new());

fn mod_list(kind: HashKind) -> &'static crate::locking::Mutex<Vec<(String, String)>> {
    match kind {
        HashKind::Filter => &MOD_TRACE,
        HashKind::Notrace => &MOD_NOTRACE,
    }
}

/// `func:mod:module` (Linux's `ftrace_mod_callback`). Every traceable
/// function here is built in, and Linux gives built-in code no module: a
/// module glob matches none of them, and an excluded one (`:mod:!glob`)
/// all, which the function glob (empty: every function; a leading `!`
/// removes) then filters. A word that selects nothing is kept in the
/// module list for a module that is not loaded (Linux's `cache_mod`);
/// with a leading `!` it drops the kept words of that module instead
/// (all of them for `!*`), EINVAL if there is none.
fn mod_command(set: &mut BTreeSet<u32>, kind: HashKind, func: &str, module: &str) -> Result<(), Errno> {
    let (remove, pat) = match func.strip_prefix('!') {
        Some(p) => (true, p),
        None => (false, func),
    };
    if module.starts_with('!') {
        let pat = if pat.is_empty() { "*" } else { pat };
        let word = if remove {
            alloc::format!("!{pat}")
        } else {
            pat.to_string()
        };
        if match_records(set, &word).is_ok() {
            return Ok(());
        }
    }
    let mut list = mod_list(kind).lock();
    if remove {
        let before = list.len();
        list.retain(|(f, m)| !(m == module && (pat == "*" || f == pat)));
        return if list.len() < before {
            Ok(())
        } else {
            Err(Errno::EINVAL)
        };
    }
    list.insert(0, (func.to_string(), module.to_string()));
    Ok(())
}

/// Longest word a filter file takes (Linux's `FTRACE_BUFF_MAX`).
const FTRACE_BUFF_MAX: usize = 4096;

/// One open of `set_ftrace_filter`, `set_ftrace_notrace` or
/// `stack_trace_filter` (Linux's `ftrace_regex_open`/`_write`/`_release`):
/// a writer edits its own copy of the set (empty if opened with
/// `O_TRUNC`), word by word across writes, and the copy replaces the
/// ops' set when the file is closed; function commands act at once.
pub(super) struct FtraceRegexFile {
    ops: &'static FtraceOps,
    kind: HashKind,
    /// Whether `func:command` words are taken (not on
    /// `stack_trace_filter`, whose file has no trace array: ENODEV).
    commands: bool,
    /// The set being edited, for a writer.
    edit: Option<spin::Mutex<RegexEdit>>,
    /// The listing, taken at the first read.
    text: spin::Mutex<Option<Arc<Vec<u8>>>>,
}

struct RegexEdit {
    set: BTreeSet<u32>,
    /// A word a write ended in the middle of (Linux's `trace_parser`).
    partial: String,
}

impl FtraceRegexFile {
    /// Opens a filter file of `ops` with the open's `flags`.
    pub(super) fn open(ops: &'static FtraceOps, kind: HashKind, commands: bool, flags: u32) -> Arc<dyn FileOps> {
        let write = flags & uapi::fcntl::O_ACCMODE != uapi::fcntl::O_RDONLY;
        let edit = write.then(|| {
            let set = if flags & uapi::fcntl::O_TRUNC != 0 {
                if commands {
                    mod_list(kind).lock().clear();
                }
                BTreeSet::new()
            } else {
                let h = ops.hash();
                if kind == HashKind::Filter {
                    h.filter
                } else {
                    h.notrace
                }
            };
            spin::Mutex::new(RegexEdit {
                set,
                partial: String::new(),
            })
        });
        Arc::new(FtraceRegexFile {
            ops,
            kind,
            commands,
            edit,
            text: spin::Mutex::new(None),
        })
    }

    /// One word (Linux's `ftrace_process_regex`): a glob (`!` removes)
    /// edits the copy, `glob:command[:param]` runs the command.
    fn process_word(&self, set: &mut BTreeSet<u32>, word: &str) -> Result<(), Errno> {
        match word.split_once(':') {
            None => match_records(set, word),
            Some((glob, rest)) => {
                if !self.commands {
                    return Err(Errno::ENODEV);
                }
                let (cmd, param) = match rest.split_once(':') {
                    Some((c, p)) => (c, Some(p)),
                    None => (rest, None),
                };
                if cmd == "mod" {
                    return mod_command(set, self.kind, glob, param.ok_or(Errno::EINVAL)?);
                }
                super::ftrace_probe::func_command(glob, cmd, param, self.kind == HashKind::Filter)
            }
        }
    }
}

/// Adds the functions `word` matches to `set`, or with a leading `!`
/// removes them (Linux's `match_records`): `EINVAL` if it matches no
/// function at all.
fn match_records(set: &mut BTreeSet<u32>, word: &str) -> Result<(), Errno> {
    let (remove, pat) = match word.strip_prefix('!') {
        Some(p) => (true, p),
        None => (false, word),
    };
    let mut found = false;
    for (i, s) in ftrace::sites().iter().enumerate() {
        if trace_filter::glob::glob_match(pat.as_bytes(), s.name.as_bytes()) {
            found = true;
            if remove {
                set.remove(&(i as u32));
            } else {
                set.insert(i as u32);
            }
        }
    }
    if found {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

impl FileOps for FtraceRegexFile {
    fn read(&self, _: &OpenFile, buf: &mut [u8], pos: &mut u64) -> vfs::Result<usize> {
        let cached = self.text.lock().clone();
        let data = match cached {
            Some(d) => d,
            None => {
                let probes = self.commands && self.kind == HashKind::Filter;
                let d = Arc::new(hash_show(self.ops, self.kind, probes));
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
        let Some(edit) = &self.edit else {
            return Err(Errno::EBADF);
        };
        let mut e = edit.lock();
        let RegexEdit { set, partial } = &mut *e;
        for &b in buf {
            if b.is_ascii_whitespace() || b == 0 {
                if !partial.is_empty() {
                    let word = core::mem::take(partial);
                    self.process_word(set, &word)?;
                }
            } else {
                if partial.len() >= FTRACE_BUFF_MAX {
                    partial.clear();
                    return Err(Errno::EINVAL);
                }
                partial.push(char::from(b));
            }
        }
        *pos += buf.len() as u64;
        Ok(buf.len())
    }

    fn llseek(&self, _: &OpenFile, pos: u64, offset: i64, whence: u32, _: u64) -> vfs::Result<u64> {
        match whence {
            uapi::fcntl::SEEK_SET | uapi::fcntl::SEEK_CUR => vfs::file::generic_llseek(pos, offset, whence, 0),
            _ => Err(Errno::EINVAL),
        }
    }
}

impl Drop for FtraceRegexFile {
    /// Linux's `ftrace_regex_release`: the last word, then the edited set
    /// replaces the ops' own.
    fn drop(&mut self) {
        let Some(edit) = self.edit.take() else { return };
        let RegexEdit { mut set, partial } = edit.into_inner();
        if !partial.is_empty() {
            let _ = self.process_word(&mut set, &partial);
        }
        // Kept `:mod:` words make the filter select nothing until their
        // module loads (Linux's FTRACE_HASH_FL_MOD).
        if self.commands && self.kind == HashKind::Filter {
            set.remove(&ftrace::FTRACE_HASH_MOD);
            if !MOD_TRACE.lock().is_empty() {
                set.insert(ftrace::FTRACE_HASH_MOD);
            }
        }
        let mut h: FtraceHash = self.ops.hash();
        match self.kind {
            HashKind::Filter => h.filter = set,
            HashKind::Notrace => h.notrace = set,
        }
        // function_graph and the profiler follow the function tracer's
        // filter files.
        let graph = core::ptr::eq(self.ops, &GLOBAL_OPS).then(|| h.clone());
        let r = self.ops.set_hash(h).and_then(|()| {
            graph.map_or(Ok(()), |g| {
                super::function_graph::update_filter(g.clone())?;
                super::ftrace_profile::update_filter(g)
            })
        });
        if let Err(e) = r {
            crate::pr_err!("ftrace: cannot apply the filter of {}: {}", self.ops.name(), e);
        }
    }
}

/// Which pid list a file edits.
#[derive(Clone, Copy)]
enum PidKind {
    Trace,
    Notrace,
}

fn pid_list(kind: PidKind) -> (&'static spin::RwLock<BTreeSet<u32>>, &'static AtomicBool) {
    match kind {
        PidKind::Trace => (&FTRACE_PIDS, &PID_FILTER),
        PidKind::Notrace => (&FTRACE_NOTRACE_PIDS, &NOTRACE_PID_FILTER),
    }
}

fn pid_show(kind: PidKind) -> Vec<u8> {
    let pids = pid_list(kind).0.read();
    if pids.is_empty() {
        return b"no pid\n".to_vec();
    }
    pids.iter()
        .map(|p| alloc::format!("{p}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Pids to add, whitespace separated; `EINVAL` for anything else (Linux
/// takes pids of tasks that do not exist).
fn pid_write(kind: PidKind, buf: &[u8]) -> Result<usize, Errno> {
    let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
    let mut new = Vec::new();
    for w in text.split_ascii_whitespace() {
        new.push(w.parse::<u32>().map_err(|_| Errno::EINVAL)?);
    }
    let (list, on) = pid_list(kind);
    let mut pids = list.write();
    pids.extend(new);
    on.store(!pids.is_empty(), Ordering::Release);
    Ok(buf.len())
}

fn pid_clear(kind: PidKind) {
    let (list, on) = pid_list(kind);
    let mut pids = list.write();
    pids.clear();
    on.store(false, Ordering::Release);
}

/// One line of `enabled_functions`/`touched_functions` (Linux's
/// `t_show` with FTRACE_ITER_ENABLED): name, users, the R/I/D/O/M flags,
/// and the ops a single-user site calls.
fn rec_line(s: &mut String, site: &ftrace::DynFtrace) {
    let f = site.flags();
    let _ = write!(
        s,
        "{} ({})      {}   ",
        site.name,
        site.ref_count(),
        if f & flags::CALL_OPS != 0 { " O" } else { "  " }
    );
    if f & flags::CALL_OPS != 0 {
        if let Some(ops) = site.users().next() {
            let _ = write!(
                s,
                "\tops: {}+0x0/0x{:x} ({})",
                ops.name(),
                core::mem::size_of::<FtraceOps>(),
                crate::kallsyms::symbolize(ops.callback_addr())
            );
        }
    }
    s.push('\n');
}

fn sites_show(want: u32) -> Vec<u8> {
    let mut s = String::new();
    for site in ftrace::sites().iter().filter(|x| x.flags() & want != 0) {
        rec_line(&mut s, site);
    }
    s.into_bytes()
}

/// Registers `ftrace/function` and makes the ftrace files in `root`.
pub fn init(root: &Arc<PseudoDir>) {
    if let Err(e) = super::events::register_internal_event(function_event_def(), TRACE_FN) {
        crate::pr_err!("trace: cannot register ftrace/function: {}", e);
    }
    root.file(
        "available_filter_functions",
        0o440,
        Box::new(|| {
            let mut s = String::new();
            for site in ftrace::sites() {
                s.push_str(site.name);
                s.push('\n');
            }
            s.into_bytes()
        }),
        None,
    );
    root.file(
        "available_filter_functions_addrs",
        0o440,
        Box::new(|| {
            let mut s = String::new();
            for site in ftrace::sites() {
                let _ = writeln!(s, "{:x} {}", site.ip(), site.name);
            }
            s.into_bytes()
        }),
        None,
    );
    root.file(
        "enabled_functions",
        0o440,
        Box::new(|| sites_show(flags::ENABLED)),
        None,
    );
    root.file(
        "touched_functions",
        0o440,
        Box::new(|| sites_show(flags::TOUCHED)),
        None,
    );
    for (name, kind) in [
        ("set_ftrace_filter", HashKind::Filter),
        ("set_ftrace_notrace", HashKind::Notrace),
    ] {
        let _ = root.file_ops(
            name,
            0o640,
            Box::new(move |flags| Ok(FtraceRegexFile::open(&GLOBAL_OPS, kind, true, flags))),
        );
    }
    for (name, kind) in [
        ("set_ftrace_pid", PidKind::Trace),
        ("set_ftrace_notrace_pid", PidKind::Notrace),
    ] {
        let _ = root.file_trunc(
            name,
            0o640,
            Box::new(move || pid_show(kind)),
            Some(Box::new(move |buf| pid_write(kind, buf))),
            Some(Box::new(move || pid_clear(kind))),
        );
    }
    super::trace_stack::init(root);
    super::ftrace_profile::init(root);
}
