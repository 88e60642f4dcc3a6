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
use core::sync::atomic::{AtomicBool, Ordering};
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

/// Serialises tracer switches (Linux's `trace_types_lock`).
static TRACER_LOCK: crate::locking::Mutex<()> = crate::locking::Mutex::new(());

/// A pid list of the function tracers (`set_ftrace_pid` or
/// `set_ftrace_notrace_pid` of one trace array).
pub(super) struct FtracePidList {
    pids: spin::RwLock<BTreeSet<u32>>,
    /// Whether it has pids (read on the hit path before any lock).
    on: AtomicBool,
}

impl FtracePidList {
    const fn new() -> FtracePidList {
        FtracePidList {
            pids: spin::RwLock::new(BTreeSet::new()),
            on: AtomicBool::new(false),
        }
    }

    fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    fn show(&self) -> Vec<u8> {
        let pids = self.pids.read();
        if pids.is_empty() {
            return b"no pid\n".to_vec();
        }
        pids.iter()
            .map(|p| alloc::format!("{p}\n"))
            .collect::<String>()
            .into_bytes()
    }

    /// Pids to add, whitespace separated; `EINVAL` for anything else
    /// (Linux takes pids of tasks that do not exist).
    fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
        let mut new = Vec::new();
        for w in text.split_ascii_whitespace() {
            new.push(w.parse::<u32>().map_err(|_| Errno::EINVAL)?);
        }
        let mut pids = self.pids.write();
        pids.extend(new);
        self.on.store(!pids.is_empty(), Ordering::Release);
        Ok(buf.len())
    }

    fn clear(&self) {
        let mut pids = self.pids.write();
        pids.clear();
        self.on.store(false, Ordering::Release);
    }
}

/// The function tracers' side of one trace array, the top level's or an
/// instance's (Linux's `tr->ops`, `tr->function_pids`,
/// `tr->function_no_pids` and the array's fgraph ops): its own ops on the
/// shared patch sites, each recording into its own buffer, with its own
/// filters and pid lists. Made at the array's first use of ftrace and
/// kept (an instance's array is recycled, and this with it).
pub struct FtraceArray {
    tr: &'static TraceArray,
    /// The function tracer's ops, whose filter and notrace sets are this
    /// array's `set_ftrace_filter` and `set_ftrace_notrace`.
    pub ops: &'static FtraceOps,
    /// function_graph's ops, which follow `ops`' sets.
    pub graph_ops: &'static FtraceOps,
    /// Whether `function` is its current tracer.
    function_on: AtomicBool,
    /// Whether `function_graph` is.
    pub(super) graph_on: AtomicBool,
    /// Its graph user slot while function_graph runs (0 for the top
    /// level).
    pub(super) graph_user: core::sync::atomic::AtomicU8,
    /// `set_ftrace_pid`: empty for every task.
    pids: FtracePidList,
    /// `set_ftrace_notrace_pid`: tasks never traced.
    notrace_pids: FtracePidList,
    /// `:mod:` words of `set_ftrace_filter` whose module is not loaded,
    /// kept for when it is (Linux's `tr->mod_trace`): (function glob,
    /// module), the most recent first.
    mod_trace: ModList,
    /// The same for `set_ftrace_notrace` (Linux's `tr->mod_notrace`).
    mod_notrace: ModList,
}

/// A trace array's kept `:mod:` words.
type ModList = crate::locking::Mutex<Vec<(String, String)>>;

impl core::fmt::Debug for FtraceArray {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "FtraceArray({})", self.ops.name())
    }
}

/// Every trace array's [`FtraceArray`], the top level's first.
static FTRACE_ARRAYS: spin::Mutex<Vec<&'static FtraceArray>> = spin::Mutex::new(Vec::new());

impl FtraceArray {
    /// Its trace array.
    pub fn tr(&self) -> &'static TraceArray {
        self.tr
    }

    /// Whether `function` is its current tracer.
    pub fn function_on(&self) -> bool {
        self.function_on.load(Ordering::Acquire)
    }

    /// Whether function_graph is its current tracer.
    pub fn graph_on(&self) -> bool {
        self.graph_on.load(Ordering::Acquire)
    }

    /// Whether its pid lists skip task `pid` (Linux's `ftrace_ignore_pid`):
    /// not in a non-empty `set_ftrace_pid`, or in `set_ftrace_notrace_pid`.
    /// From the hit path: a list being changed lets nothing through.
    pub(super) fn ignore_pid(&self, pid: u32) -> bool {
        if self.pids.is_on() {
            match self.pids.pids.try_read() {
                Some(p) if p.contains(&pid) => {}
                _ => return true,
            }
        }
        if self.notrace_pids.is_on() {
            match self.notrace_pids.pids.try_read() {
                Some(p) if !p.contains(&pid) => {}
                _ => return true,
            }
        }
        false
    }

    /// Whether either pid list has pids (Linux's `ftrace_pids_enabled`).
    pub(super) fn pids_enabled(&self) -> bool {
        self.pids.is_on() || self.notrace_pids.is_on()
    }

    /// Whether the current task is skipped by its pid lists.
    pub(super) fn ignore_current(&self, task: Option<&crate::sched::Task>) -> bool {
        if !self.pids_enabled() {
            return false;
        }
        let pid = task.filter(|t| !t.is_idle()).map_or(0, |t| t.tid());
        self.ignore_pid(pid)
    }

    fn pid_list(&self, kind: PidKind) -> &FtracePidList {
        match kind {
            PidKind::Trace => &self.pids,
            PidKind::Notrace => &self.notrace_pids,
        }
    }
}

/// The [`FtraceArray`] of `tr`, made at its first use.
pub fn ftrace_array(tr: &'static TraceArray) -> &'static FtraceArray {
    let mut all = FTRACE_ARRAYS.lock();
    if let Some(fa) = all.iter().find(|fa| core::ptr::eq(fa.tr, tr)) {
        return fa;
    }
    let (ops, graph_ops): (&'static FtraceOps, &'static FtraceOps) = if super::is_global(tr) {
        (&GLOBAL_OPS, &super::function_graph::GRAPH_OPS)
    } else {
        (
            Box::leak(Box::new(FtraceOps::new("instance_ops", function_trace_call))),
            Box::leak(Box::new(super::function_graph::instance_graph_ops())),
        )
    };
    let fa: &'static FtraceArray = Box::leak(Box::new(FtraceArray {
        tr,
        ops,
        graph_ops,
        function_on: AtomicBool::new(false),
        graph_on: AtomicBool::new(false),
        graph_user: core::sync::atomic::AtomicU8::new(0),
        pids: FtracePidList::new(),
        notrace_pids: FtracePidList::new(),
        mod_trace: crate::locking::Mutex::new(Vec::new()),
        mod_notrace: crate::locking::Mutex::new(Vec::new()),
    }));
    ops.set_private(fa);
    graph_ops.set_private(fa);
    all.push(fa);
    fa
}

/// The [`FtraceArray`] of `tr` if it has one.
pub fn find_ftrace_array(tr: &TraceArray) -> Option<&'static FtraceArray> {
    FTRACE_ARRAYS.lock().iter().copied().find(|fa| core::ptr::eq(fa.tr, tr))
}

/// The top level's [`FtraceArray`].
pub fn global_ftrace() -> &'static FtraceArray {
    ftrace_array(global_trace())
}

/// The current tracer of `tr`.
pub fn current_tracer(tr: &TraceArray) -> &'static str {
    let fa = find_ftrace_array(tr);
    if fa.is_some_and(FtraceArray::function_on) {
        "function"
    } else if fa.is_some_and(FtraceArray::graph_on) {
        "function_graph"
    } else if let Some(t) = super::trace_irqsoff::current().filter(|_| super::is_global(tr)) {
        t
    } else {
        "nop"
    }
}

/// `available_tracers` of `tr`: an instance has the function tracers
/// (Linux's `allow_instances`), not the latency ones.
pub fn available_tracers(tr: &TraceArray) -> Vec<u8> {
    if super::is_global(tr) {
        let mut s = TRACERS.join(" ");
        s.push('\n');
        s.into_bytes()
    } else {
        b"function_graph function nop\n".to_vec()
    }
}

/// Stops the function tracers of `fa` (for a tracer switch or a removed
/// instance).
fn function_tracers_stop(fa: &'static FtraceArray) -> Result<(), Errno> {
    if fa.graph_on() {
        super::function_graph::graph_trace_reset(fa)?;
        fa.tr.reset(None);
    }
    if fa.function_on.swap(false, Ordering::AcqRel) {
        ftrace::unregister_ftrace_function(fa.ops)?;
        fa.tr.reset(None);
    }
    Ok(())
}

/// A write to `current_tracer` of `tr` (the name, trailing whitespace
/// ignored): `EINVAL` for a tracer that does not exist (or, in an
/// instance, one not allowed there).
pub fn set_current_tracer(tr: &'static TraceArray, name: &str) -> Result<(), Errno> {
    let global = super::is_global(tr);
    if !TRACERS.contains(&name) || (!global && !matches!(name, "function" | "function_graph" | "nop")) {
        return Err(Errno::EINVAL);
    }
    let _g = TRACER_LOCK.lock();
    let fa = ftrace_array(tr);
    // Linux's tracing_set_tracer: the same tracer again changes nothing;
    // any switch empties the buffer (tracer_init) once the old tracer
    // is stopped.
    if name != "function_graph" && fa.graph_on() {
        super::function_graph::graph_trace_reset(fa)?;
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
            if fa.function_on.swap(false, Ordering::AcqRel) {
                ftrace::unregister_ftrace_function(fa.ops)?;
            }
            super::trace_irqsoff::latency_tracer_init(tr, n)
        }
        "function_graph" => {
            tr.update_buffers()?;
            if fa.function_on.swap(false, Ordering::AcqRel) {
                ftrace::unregister_ftrace_function(fa.ops)?;
            }
            super::function_graph::graph_trace_init(fa)
        }
        "nop" => {
            if fa.function_on.swap(false, Ordering::AcqRel) {
                ftrace::unregister_ftrace_function(fa.ops)?;
                tr.reset(None);
            }
            tr.update_buffers()
        }
        "function" => {
            tr.update_buffers()?;
            if !fa.function_on() {
                tr.reset(None);
                ftrace::register_ftrace_function(fa.ops)?;
                fa.function_on.store(true, Ordering::Release);
            }
            Ok(())
        }
        _ => Err(Errno::EINVAL),
    }
}

/// The function tracer's callback (Linux's `function_trace_call`): one
/// `ftrace/function` entry with the function and its caller, in the
/// buffer of the ops' trace array, flagged with the traced function's
/// interrupt state (not the trampoline's).
#[allow(unsafe_code)] // exported under Linux's name, which enabled_functions prints
#[no_mangle]
fn function_trace_call(ops: &FtraceOps, ip: usize, parent_ip: usize, regs: &mut FtraceRegs) {
    let Some(fa) = ops.private::<FtraceArray>() else {
        return;
    };
    // The task borrowed, not counted: no atomic update per call.
    if fa.pids_enabled() && crate::sched::with_current(|t| fa.ignore_current(Some(t))).unwrap_or(false) {
        return;
    }
    let irq = aarch64_cpu::registers::DAIF::I;
    let irqs_off = (regs.daif >> irq.shift) & irq.mask != 0;
    // Every byte after the common fields is written: ip, parent_ip.
    let done = super::trace_event_write_full(fa.tr, TRACE_FN, super::TRACE_ENTRY_SIZE + 16, |e| {
        e[2] = if irqs_off {
            e[2] | TRACE_FLAG_IRQS_OFF
        } else {
            e[2] & !TRACE_FLAG_IRQS_OFF
        };
        e[8..16].copy_from_slice(&(ip as u64).to_le_bytes());
        e[16..24].copy_from_slice(&(parent_ip as u64).to_le_bytes());
        true
    });
    if done
        && super::options::is_set(super::options::RECORD_CMD)
        && crate::sched::with_current(|t| !t.is_idle()).unwrap_or(false)
    {
        super::cmdlines::record_cmdline();
    }
    // options/func_stack_trace (Linux's function_stack_trace_call).
    if done && fa.tr.is_set(super::options::FUNC_STACK_TRACE) {
        super::trigger::trace_function_stack(fa.tr);
    }
}

/// Whether the top level's function tracer skips task `pid` (Linux's
/// `ftrace_ignore_pid`).
#[cfg(feature = "ktest")]
pub(super) fn ftrace_ignore_pid(pid: u32) -> bool {
    global_ftrace().ignore_pid(pid)
}

/// A task forked (Linux's `ftrace_pid_follow_sched_process_fork`): in
/// each trace array with `options/function-fork`, the child of a task in
/// `set_ftrace_pid` or `set_ftrace_notrace_pid` joins that list.
pub fn ftrace_pids_fork(parent: u32, child: u32) {
    for fa in FTRACE_ARRAYS.lock().iter() {
        if !fa.tr.is_set(super::options::FUNCTION_FORK) {
            continue;
        }
        for list in [&fa.pids, &fa.notrace_pids] {
            if list.is_on() {
                let mut l = list.pids.write();
                if l.contains(&parent) {
                    l.insert(child);
                }
            }
        }
    }
}

/// A task exited (Linux's `ftrace_pid_follow_sched_process_exit`): in each
/// trace array with `options/function-fork` it leaves both lists, so that
/// a later task given its pid is not caught by them.
pub fn ftrace_pids_exit(pid: u32) {
    for fa in FTRACE_ARRAYS.lock().iter() {
        if !fa.tr.is_set(super::options::FUNCTION_FORK) {
            continue;
        }
        for list in [&fa.pids, &fa.notrace_pids] {
            if list.is_on() {
                // An emptied list still filters (nothing traced), as Linux's.
                list.pids.write().remove(&pid);
            }
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
    if let Some(fa) = mod_array(ops) {
        for (func, module) in mod_list(fa, kind).lock().iter() {
            let _ = writeln!(s, "{func}:mod:{module}");
        }
    }
    if probes {
        if let Some(fa) = ops.private::<FtraceArray>() {
            super::ftrace_probe::probes_show(fa.tr, &mut s);
        }
    }
    s.into_bytes()
}

/// The trace array whose function tracer `ops` is, which keeps the
/// `:mod:` words of its filter files (none for the graph ops and for
/// `stack_trace_filter`'s). This kernel has no loadable modules, so kept
/// words are only listed, and dropped with `!` or by truncating the file.
fn mod_array(ops: &FtraceOps) -> Option<&'static FtraceArray> {
    ops.private::<FtraceArray>().filter(|fa| core::ptr::eq(fa.ops, ops))
}

fn mod_list(fa: &FtraceArray, kind: HashKind) -> &ModList {
    match kind {
        HashKind::Filter => &fa.mod_trace,
        HashKind::Notrace => &fa.mod_notrace,
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
fn mod_command(
    fa: &FtraceArray,
    set: &mut BTreeSet<u32>,
    kind: HashKind,
    func: &str,
    module: &str,
) -> Result<(), Errno> {
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
    let mut list = mod_list(fa, kind).lock();
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
                if let Some(fa) = mod_array(ops).filter(|_| commands) {
                    mod_list(fa, kind).lock().clear();
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
                    let fa = mod_array(self.ops).ok_or(Errno::ENODEV)?;
                    return mod_command(fa, set, self.kind, glob, param.ok_or(Errno::EINVAL)?);
                }
                let fa = self.ops.private::<FtraceArray>().ok_or(Errno::ENODEV)?;
                super::ftrace_probe::func_command(fa.tr, glob, cmd, param, self.kind == HashKind::Filter)
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
        if let Some(fa) = mod_array(self.ops).filter(|_| self.commands && self.kind == HashKind::Filter) {
            set.remove(&ftrace::FTRACE_HASH_MOD);
            if !fa.mod_trace.lock().is_empty() {
                set.insert(ftrace::FTRACE_HASH_MOD);
            }
        }
        let mut h: FtraceHash = self.ops.hash();
        match self.kind {
            HashKind::Filter => h.filter = set,
            HashKind::Notrace => h.notrace = set,
        }
        // function_graph (and, at the top level, the profiler) follow the
        // function tracer's filter files.
        let fa = self
            .ops
            .private::<FtraceArray>()
            .filter(|fa| core::ptr::eq(fa.ops, self.ops));
        let profile = core::ptr::eq(self.ops, &GLOBAL_OPS).then(|| h.clone());
        let graph = fa.map(|fa| (fa, h.clone()));
        let r = self.ops.set_hash(h).and_then(|()| {
            if let Some((fa, g)) = graph {
                super::function_graph::update_filter(fa, g)?;
            }
            profile.map_or(Ok(()), super::ftrace_profile::update_filter)
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
    create_array_files(root, global_trace());
    super::trace_stack::init(root);
    super::ftrace_profile::init(root);
}

/// The ftrace files every trace array has, the top level and each
/// instance: `set_ftrace_filter`, `set_ftrace_notrace`, `set_ftrace_pid`
/// and `set_ftrace_notrace_pid` (Linux's `ftrace_init_tracefs`).
pub fn create_array_files(dir: &Arc<PseudoDir>, tr: &'static TraceArray) {
    let fa = ftrace_array(tr);
    for (name, kind) in [
        ("set_ftrace_filter", HashKind::Filter),
        ("set_ftrace_notrace", HashKind::Notrace),
    ] {
        let _ = dir.file_ops(
            name,
            0o640,
            Box::new(move |flags| Ok(FtraceRegexFile::open(fa.ops, kind, true, flags))),
        );
    }
    for (name, kind) in [
        ("set_ftrace_pid", PidKind::Trace),
        ("set_ftrace_notrace_pid", PidKind::Notrace),
    ] {
        let _ = dir.file_trunc(
            name,
            0o640,
            Box::new(move || fa.pid_list(kind).show()),
            Some(Box::new(move |buf| fa.pid_list(kind).write(buf))),
            Some(Box::new(move || fa.pid_list(kind).clear())),
        );
    }
}

/// An instance is removed (Linux's `tracing_set_nop` and
/// `ftrace_destroy_function_files` in `__remove_instance`): its function
/// tracers stop, and its filters and pid lists are emptied for the array's
/// next use.
pub fn instance_remove(tr: &'static TraceArray) {
    let Some(fa) = find_ftrace_array(tr) else { return };
    let _g = TRACER_LOCK.lock();
    if let Err(e) = function_tracers_stop(fa) {
        crate::pr_err!("ftrace: cannot stop the tracer of a removed instance: {}", e);
    }
    if let Err(e) = fa.ops.set_hash(FtraceHash::default()) {
        crate::pr_err!("ftrace: cannot reset the filter of a removed instance: {}", e);
    }
    super::ftrace_probe::clear_probes_of(tr);
    fa.pids.clear();
    fa.notrace_pids.clear();
    fa.mod_trace.lock().clear();
    fa.mod_notrace.lock().clear();
}
