//! The `function_graph` tracer (Linux's kernel/trace/fgraph.c and
//! trace_functions_graph.c): each traced call records a
//! `ftrace/funcgraph_entry` at its entry and, through the task's return
//! stack (`super::rethook`) and `return_to_handler`, a
//! `ftrace/funcgraph_exit` with its duration at its return. `trace` prints
//! them as Linux does: the `CPU  DURATION  FUNCTION CALLS` columns, `{` and
//! `}` nesting, `func();` for a call with nothing traced inside, duration
//! marks, and the `funcgraph-*` options.
//!
//! Files: `set_graph_function` (trace only calls made inside these
//! functions), `set_graph_notrace` (nor inside these), `max_graph_depth`,
//! `tracing_thresh` (record only returns slower than this many µs) and
//! `options/funcgraph-*`. Which functions are hooked at all is
//! `set_ftrace_filter`/`set_ftrace_notrace`, as for the function tracer.

use super::events::{EventRecord, FieldDesc, TraceEventDef};
use super::ftrace::{self, FtraceOps};
use super::ftrace_function::FtraceArray;
use super::options::{self, CONTEXT_INFO};
use super::output;
use super::rethook::{GraphFrame, RetFrame, RethookOwner, FGRAPH_ARRAY_SIZE};
use super::{TraceArray, TRACE_ENTRY_SIZE};
use crate::fs::pseudo::PseudoDir;
use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ftrace::{FtraceRegs, FtraceRetRegs};
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
use uapi::Errno;

/// The type of `ftrace/funcgraph_exit` entries (Linux's `TRACE_GRAPH_RET`).
pub const TRACE_GRAPH_RET: u16 = 10;
/// The type of `ftrace/funcgraph_entry` entries (Linux's `TRACE_GRAPH_ENT`).
pub const TRACE_GRAPH_ENT: u16 = 11;

/// Bytes of a `funcgraph_entry`: common fields, func, depth (padded).
const ENT_SIZE: usize = TRACE_ENTRY_SIZE + 16;
/// Bytes of a `funcgraph_exit`: common fields, func, retval, depth,
/// overrun, calltime, rettime (Linux's layout with
/// `CONFIG_FUNCTION_GRAPH_RETVAL`).
const RET_SIZE: usize = TRACE_ENTRY_SIZE + 40;

/// Depths whose entered function the output remembers (Linux's
/// `FTRACE_RETFUNC_DEPTH`).
const FTRACE_RETFUNC_DEPTH: usize = 50;
/// Spaces per depth level.
const TRACE_GRAPH_INDENT: usize = 2;

/// The `funcgraph-*` options (Linux's `TRACE_GRAPH_PRINT_*`).
pub mod flags {
    /// `funcgraph-overrun`: print the overrun count of each return.
    pub const OVERRUN: u32 = 1 << 0;
    /// `funcgraph-cpu`: the CPU column.
    pub const CPU: u32 = 1 << 1;
    /// `funcgraph-overhead`: the `+`/`!`/`#`... duration marks.
    pub const OVERHEAD: u32 = 1 << 2;
    /// `funcgraph-proc`: the TASK/PID column.
    pub const PROC: u32 = 1 << 3;
    /// `funcgraph-duration`: the DURATION column.
    pub const DURATION: u32 = 1 << 4;
    /// `funcgraph-abstime`: the TIME column.
    pub const ABS_TIME: u32 = 1 << 5;
    /// `funcgraph-irqs`: calls in interrupt handlers are traced (off:
    /// not, unless a `set_graph_function` function is hit there).
    pub const IRQS: u32 = 1 << 6;
    /// `funcgraph-tail`: every `}` names its function.
    pub const TAIL: u32 = 1 << 7;
    /// `funcgraph-retval`: every return shows its function's return value
    /// (`} /* func = 0x0 */`, `func(); /* = -22 */`).
    pub const RETVAL: u32 = 1 << 10;
    /// `funcgraph-retval-hex`: with `funcgraph-retval`, error codes in
    /// hexadecimal too.
    pub const RETVAL_HEX: u32 = 1 << 11;
    /// `sleep-time`: a call's duration includes the time its task was
    /// switched out (off: see [`super::graph_sched_switch`]).
    pub const SLEEP_TIME: u32 = 1 << 8;
    /// `graph-time`: the function profiler's times include the time spent
    /// in profiled callees.
    pub const GRAPH_TIME: u32 = 1 << 9;
}

/// The options in `options/`, with their bits.
const GRAPH_OPTIONS: [(&str, u32); 12] = [
    ("funcgraph-overrun", flags::OVERRUN),
    ("funcgraph-cpu", flags::CPU),
    ("funcgraph-overhead", flags::OVERHEAD),
    ("funcgraph-proc", flags::PROC),
    ("funcgraph-duration", flags::DURATION),
    ("funcgraph-abstime", flags::ABS_TIME),
    ("funcgraph-irqs", flags::IRQS),
    ("funcgraph-tail", flags::TAIL),
    ("funcgraph-retval", flags::RETVAL),
    ("funcgraph-retval-hex", flags::RETVAL_HEX),
    ("sleep-time", flags::SLEEP_TIME),
    ("graph-time", flags::GRAPH_TIME),
];

/// The options' defaults (Linux's `tracer_flags.val`).
pub const DEFAULT_FLAGS: u32 =
    flags::CPU | flags::OVERHEAD | flags::DURATION | flags::IRQS | flags::SLEEP_TIME | flags::GRAPH_TIME;

static GRAPH_FLAGS: AtomicU32 = AtomicU32::new(DEFAULT_FLAGS);

/// The graph user slots in use (bit N: slot N); slot 0 is the top
/// level's (Linux's `fgraph_array`).
static GRAPH_USERS: AtomicU16 = AtomicU16::new(1);
/// `max_graph_depth` (0: no limit).
static MAX_GRAPH_DEPTH: AtomicU32 = AtomicU32::new(0);
/// `tracing_thresh`, in ns (the file shows µs).
static TRACING_THRESH: AtomicU64 = AtomicU64::new(0);
/// Calls not hooked because the task's return stack was full.
static NMISSED: AtomicU64 = AtomicU64::new(0);

/// `set_graph_function` and `set_graph_notrace`, by function entry.
static GRAPH_HASH: spin::RwLock<BTreeSet<usize>> = spin::RwLock::new(BTreeSet::new());
static GRAPH_NOTRACE_HASH: spin::RwLock<BTreeSet<usize>> = spin::RwLock::new(BTreeSet::new());
/// Whether they are non-empty (read on the hit path before any lock).
static GRAPH_HASH_SET: AtomicBool = AtomicBool::new(false);
static GRAPH_NOTRACE_SET: AtomicBool = AtomicBool::new(false);

/// The top level's graph ops (Linux's `graph_ops`); its filter and
/// notrace sets follow `set_ftrace_filter`/`set_ftrace_notrace`.
pub static GRAPH_OPS: FtraceOps = FtraceOps::new("graph_ops", ftrace_graph_func);

/// The graph ops of an instance (its `FtraceArray` owns it).
pub(super) fn instance_graph_ops() -> FtraceOps {
    FtraceOps::new("fgraph_ops", ftrace_graph_func)
}

/// Whether function_graph is the top level's current tracer.
pub fn is_on() -> bool {
    super::ftrace_function::find_ftrace_array(super::global_trace()).is_some_and(FtraceArray::graph_on)
}

/// Whether function_graph is `tr`'s current tracer.
pub fn is_current(tr: &TraceArray) -> bool {
    super::ftrace_function::find_ftrace_array(tr).is_some_and(FtraceArray::graph_on)
}

/// Calls the tracer could not hook (a task's return stack was full).
pub fn nmissed() -> u64 {
    NMISSED.load(Ordering::Relaxed)
}

/// Starts function_graph on `fa`'s trace array, hooking the functions of
/// its `set_ftrace_filter`/`set_ftrace_notrace`, beside the other arrays'
/// function_graph (Linux's `register_ftrace_graph` with several users):
/// `EBUSY` when [`FGRAPH_ARRAY_SIZE`] users run already.
pub fn graph_trace_init(fa: &'static FtraceArray) -> Result<(), Errno> {
    if fa.graph_on() {
        return Ok(());
    }
    let user = if super::is_global(fa.tr()) {
        0
    } else {
        let mut got = None;
        let _ = GRAPH_USERS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
            let free = (!m).trailing_zeros() as usize;
            got = (free < FGRAPH_ARRAY_SIZE).then_some(free);
            got.map(|f| m | 1 << f)
        });
        got.ok_or(Errno::EBUSY)? as u8
    };
    fa.graph_user.store(user, Ordering::Release);
    fa.tr().reset(None);
    let r = fa.graph_ops.set_hash(fa.ops.hash()).and_then(|()| {
        fa.graph_on.store(true, Ordering::Release);
        ftrace::register_ftrace_function(fa.graph_ops)
    });
    if let Err(e) = r {
        fa.graph_on.store(false, Ordering::Release);
        release_user(user);
        return Err(e);
    }
    Ok(())
}

fn release_user(user: u8) {
    if user != 0 {
        GRAPH_USERS.fetch_and(!(1 << user), Ordering::AcqRel);
    }
}

/// Stops `fa`'s function_graph. Calls in flight keep their frames and
/// return through `return_to_handler` to their callers; their exits are
/// not recorded.
pub fn graph_trace_reset(fa: &'static FtraceArray) -> Result<(), Errno> {
    if !fa.graph_on.swap(false, Ordering::AcqRel) {
        return Ok(());
    }
    let r = ftrace::unregister_ftrace_function(fa.graph_ops);
    release_user(fa.graph_user.load(Ordering::Acquire));
    r
}

/// `fa`'s `set_ftrace_filter`/`set_ftrace_notrace` changed: hook what
/// they now say.
pub fn update_filter(fa: &FtraceArray, hash: ftrace::FtraceHash) -> Result<(), Errno> {
    fa.graph_ops.set_hash(hash)
}

/// Whether `func` (an entry address) is in `set`, without waiting for a
/// writer (a miss just leaves one call out).
fn hash_contains(set: &spin::RwLock<BTreeSet<usize>>, func: usize) -> bool {
    set.try_read().is_some_and(|h| h.contains(&func))
}

/// The entry hook (Linux's `ftrace_graph_func`, `function_graph_enter` and
/// `trace_graph_entry`): decides whether this call is traced, pushes its
/// frame, records `funcgraph_entry` and points the return at
/// `return_to_handler`. Interrupts are masked.
fn ftrace_graph_func(ops: &FtraceOps, ip: usize, _parent_ip: usize, regs: &mut FtraceRegs) {
    let Some(fa) = ops.private::<FtraceArray>() else {
        return;
    };
    if !fa.graph_on() {
        return;
    }
    let Some(task) = crate::sched::try_current() else {
        return;
    };
    let func = ip - arch::ftrace::FTRACE_BL_OFFSET;
    let user = fa.graph_user.load(Ordering::Relaxed);
    // The decision and the push under one hold of the stack's lock.
    let sp = regs.sp as usize;
    let pushed = task.ret_stack.push_graph(user, sp, ip, |depth, in_notrace, started| {
        if in_notrace {
            return None;
        }
        let mut g = GraphFrame {
            array: Some(fa),
            user,
            depth,
            ..GraphFrame::default()
        };
        if GRAPH_NOTRACE_SET.load(Ordering::Relaxed) && hash_contains(&GRAPH_NOTRACE_HASH, func) {
            // Its frame stays, unrecorded, so that its return ends the
            // notrace region.
            g.notrace = true;
        } else {
            // set_ftrace_pid and set_ftrace_notrace_pid (Linux's
            // ftrace_trace_task).
            if fa.ignore_current(Some(&task)) {
                return None;
            }
            if GRAPH_HASH_SET.load(Ordering::Relaxed) {
                if hash_contains(&GRAPH_HASH, func) {
                    g.graph_start = !started;
                } else if !started {
                    return None;
                }
            }
            // funcgraph-irqs off (Linux's ftrace_graph_ignore_irqs): nothing
            // run by an interrupt handler, except below a set_graph_function
            // function.
            if GRAPH_FLAGS.load(Ordering::Relaxed) & flags::IRQS == 0
                && !g.graph_start
                && !started
                && crate::irq::in_hardirq()
            {
                return None;
            }
            let max = MAX_GRAPH_DEPTH.load(Ordering::Relaxed);
            if max != 0 && depth >= max as i32 {
                return None;
            }
            g.thresh = TRACING_THRESH.load(Ordering::Relaxed) != 0;
        }
        let frame = RetFrame {
            ret: regs.lr as usize,
            sp: regs.sp as usize,
            func: ip,
            calltime: super::clock::trace_clock_now(),
            owner: RethookOwner::Graph(g),
        };
        Some((frame, g))
    });
    let g = match pushed {
        None => return,
        Some(Err(())) => {
            NMISSED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        Some(Ok(g)) => g,
    };
    let depth = g.depth;
    if !g.notrace && !g.thresh {
        let done = super::trace_event_write_full(fa.tr(), TRACE_GRAPH_ENT, ENT_SIZE, |e| {
            e[8..16].copy_from_slice(&(ip as u64).to_le_bytes());
            e[16..20].copy_from_slice(&depth.to_le_bytes());
            e[20..24].fill(0);
            true
        });
        // Linux's graph_trace_init starts cmdline recording.
        if done && !task.is_idle() && options::is_set(options::RECORD_CMD) {
            super::cmdlines::record_cmdline();
        }
    }
    regs.lr = arch::ftrace::return_to_handler_addr() as u64;
}

/// The return hook (Linux's `trace_graph_return` and
/// `trace_graph_thresh_return`), called by `ftrace_return_to_handler`
/// with the popped frame. Interrupts are masked.
pub(super) fn graph_return(frame: &RetFrame, g: GraphFrame, regs: &mut FtraceRetRegs) {
    let Some(fa) = g.array else { return };
    if g.notrace || !fa.graph_on() {
        return;
    }
    ftrace::ftrace_test_recursion(|| {
        let rettime = super::clock::trace_clock_now();
        let thresh = TRACING_THRESH.load(Ordering::Relaxed);
        if thresh != 0 && rettime.saturating_sub(frame.calltime) < thresh {
            return;
        }
        // The return value is kept whatever the options, as Linux's
        // (funcgraph-retval only chooses whether `trace` shows it).
        let retval = regs.return_value();
        super::trace_event_write_full(fa.tr(), TRACE_GRAPH_RET, RET_SIZE, |e| {
            e[8..16].copy_from_slice(&(frame.func as u64).to_le_bytes());
            e[16..24].copy_from_slice(&retval.to_le_bytes());
            e[24..28].copy_from_slice(&g.depth.to_le_bytes());
            e[28..32].fill(0);
            e[32..40].copy_from_slice(&frame.calltime.to_le_bytes());
            e[40..48].copy_from_slice(&rettime.to_le_bytes());
            true
        });
    });
}

// ---------------------------------------------------------------------
// Entries

fn word(entry: &[u8], o: usize) -> u64 {
    entry
        .get(o..o + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn half(entry: &[u8], o: usize) -> i32 {
    entry
        .get(o..o + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, i32::from_le_bytes)
}

fn entry_type(entry: &[u8]) -> u16 {
    entry.get(0..2).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

fn entry_pid(entry: &[u8]) -> i32 {
    half(entry, 4)
}

/// A decoded `funcgraph_exit`.
struct GraphRet {
    func: usize,
    retval: u64,
    depth: i32,
    overrun: u32,
    calltime: u64,
    rettime: u64,
}

fn graph_ret(entry: &[u8]) -> GraphRet {
    GraphRet {
        func: word(entry, 8) as usize,
        retval: word(entry, 16),
        depth: half(entry, 24),
        overrun: half(entry, 28) as u32,
        calltime: word(entry, 32),
        rettime: word(entry, 40),
    }
}

fn entry_event_def() -> TraceEventDef {
    TraceEventDef {
        system: "ftrace".to_string(),
        name: "funcgraph_entry".to_string(),
        fields: alloc::vec![
            FieldDesc::new("unsigned long", "func", 8, 8, false),
            FieldDesc::new("int", "depth", 16, 4, true),
        ],
        print_fmt: "\"--> %ps (%d)\", (void *)REC->func, REC->depth".to_string(),
        print: Box::new(|out: &mut String, rec: &EventRecord<'_>| {
            out.push_str("--> ");
            output::print_sym_short(out, word(rec.entry, 8) as usize);
            let _ = writeln!(out, " ({})", half(rec.entry, 16));
        }),
        reg: None,
        ignore_enable: true,
    }
}

fn exit_event_def() -> TraceEventDef {
    TraceEventDef {
        system: "ftrace".to_string(),
        name: "funcgraph_exit".to_string(),
        fields: alloc::vec![
            FieldDesc::new("unsigned long", "func", 8, 8, false),
            FieldDesc::new("unsigned long", "retval", 16, 8, false),
            FieldDesc::new("int", "depth", 24, 4, true),
            FieldDesc::new("unsigned int", "overrun", 28, 4, false),
            FieldDesc::new("unsigned long long", "calltime", 32, 8, false),
            FieldDesc::new("unsigned long long", "rettime", 40, 8, false),
        ],
        print_fmt: "\"<-- %ps (%d) (start: %llx  end: %llx) over: %d retval: %lx\", (void *)REC->func, \
                    REC->depth, REC->calltime, REC->rettime, REC->depth, REC->retval"
            .to_string(),
        print: Box::new(|out: &mut String, rec: &EventRecord<'_>| {
            let r = graph_ret(rec.entry);
            out.push_str("<-- ");
            output::print_sym_short(out, r.func);
            let _ = writeln!(
                out,
                " ({}) (start: {:x}  end: {:x}) over: {} retval: {:x}",
                r.depth, r.calltime, r.rettime, r.depth, r.retval
            );
        }),
        reg: None,
        ignore_enable: true,
    }
}

// ---------------------------------------------------------------------
// Output

/// Linux's `trace_find_mark`: the mark of a duration in ns.
pub fn trace_find_mark(duration: u64) -> char {
    const MARKS: [(u64, char); 6] = [
        (1_000_000_000, '$'),
        (100_000_000, '@'),
        (10_000_000, '*'),
        (1_000_000, '#'),
        (100_000, '!'),
        (10_000, '+'),
    ];
    MARKS.iter().find(|(v, _)| duration > *v).map_or(' ', |(_, c)| *c)
}

/// Linux's `trace_print_graph_duration`: µs with up to 3 decimals, at most
/// 7 digits, ` us `, padded to 8 columns before the unit.
pub fn print_graph_duration_value(s: &mut String, duration: u64) {
    let usecs = duration / 1000;
    let nsecs = duration % 1000;
    let us = alloc::format!("{usecs}");
    s.push_str(&us);
    let mut len = us.len();
    if len < 7 {
        // snprintf into min(5, 8 - len) bytes: at most that minus one
        // characters of the 3-digit remainder.
        let keep = 5usize.min(8 - len) - 1;
        let ns = alloc::format!("{nsecs:03}");
        let ns = &ns[..keep.min(ns.len())];
        s.push('.');
        s.push_str(ns);
        len += ns.len() + 1;
    }
    s.push_str(" us ");
    for _ in len..8 {
        s.push(' ');
    }
}

/// What the duration column shows.
#[derive(Clone, Copy)]
enum Fill {
    Duration(u64),
    Full,
}

/// One CPU's output state (Linux's `fgraph_cpu_data`).
#[derive(Clone)]
struct CpuData {
    last_pid: i32,
    depth: i32,
    enter_funcs: [usize; FTRACE_RETFUNC_DEPTH],
    /// With `funcgraph-irqs` off, the depth of the interrupt handler call
    /// whose lines are being hidden, -1 if none (Linux's `depth_irq`).
    depth_irq: i32,
}

/// The state of one reader of `trace` or `trace_pipe` while
/// function_graph is the tracer (Linux's `fgraph_data`).
pub struct GraphIter {
    /// The trace array read (whose options the lines follow).
    tr: &'static TraceArray,
    cpus: Vec<CpuData>,
    cpu_width: usize,
    /// The interrupt handlers' entries, which play Linux's
    /// `__irqentry_text`: the first traced code an interrupt runs.
    irq_entries: Vec<usize>,
}

impl GraphIter {
    /// A reader's state, if function_graph is `tr`'s current tracer.
    pub fn open(tr: &'static TraceArray) -> Option<GraphIter> {
        if !is_current(tr) {
            return None;
        }
        let ncpu = crate::percpu::NR_CPUS.max(1);
        Some(GraphIter {
            tr,
            cpus: alloc::vec![
                CpuData {
                    last_pid: -1,
                    depth: 0,
                    enter_funcs: [0; FTRACE_RETFUNC_DEPTH],
                    depth_irq: -1,
                };
                ncpu
            ],
            cpu_width: cpu_width(),
            irq_entries: crate::irq::handler_entries(),
        })
    }

    /// Whether printing `entry` wants to see the CPU's next entry (to
    /// print a call with nothing inside it as one `func();` line).
    pub fn wants_next(entry: &[u8]) -> bool {
        entry_type(entry) == TRACE_GRAPH_ENT
    }

    /// Whether `entry` is one the graph tracer leaves to the normal printers
    /// (function and stack entries: Linux's `print_graph_function_flags`
    /// answers TRACE_TYPE_UNHANDLED for them), so that `bin`, `hex` and
    /// `raw` apply to them as to any other tracer's.
    pub fn prints_as_itself(entry: &[u8]) -> bool {
        matches!(
            entry_type(entry),
            super::ftrace_function::TRACE_FN | super::trigger::TRACE_STACK
        )
    }

    /// Formats `entry`, recorded on `cpu` at `ts`; `next` is the next entry
    /// of that CPU when [`GraphIter::wants_next`] said so. True if the line
    /// used `next` too (the reader must skip it).
    pub fn print_line(&mut self, s: &mut String, cpu: usize, ts: u64, entry: &[u8], next: Option<&[u8]>) -> bool {
        let gflags = GRAPH_FLAGS.load(Ordering::Relaxed);
        let tflags = self.tr.trace_flags();
        let cpu_i = cpu.min(self.cpus.len() - 1);
        match entry_type(entry) {
            TRACE_GRAPH_ENT => {
                let func = word(entry, 8) as usize;
                let depth = half(entry, 16);
                if self.check_irq_entry(cpu_i, func, depth, gflags) {
                    return false;
                }
                let pid = entry_pid(entry);
                self.prologue_irq(s, cpu_i, ts, pid, Some(func), gflags, tflags);
                let leaf = next.filter(|n| {
                    entry_type(n) == TRACE_GRAPH_RET && entry_pid(n) == entry_pid(entry) && graph_ret(n).func == func
                });
                let indent = depth.max(0) as usize * TRACE_GRAPH_INDENT;
                let cd = &mut self.cpus[cpu_i];
                match leaf {
                    Some(n) => {
                        let r = graph_ret(n);
                        cd.depth = depth - 1;
                        if let Some(slot) = usize::try_from(depth).ok().and_then(|d| cd.enter_funcs.get_mut(d)) {
                            *slot = 0;
                        }
                        print_duration(s, Fill::Duration(r.rettime.saturating_sub(r.calltime)), gflags, tflags);
                        push_spaces(s, indent);
                        if gflags & flags::RETVAL != 0 {
                            print_graph_retval(s, r.retval, true, func, gflags & flags::RETVAL_HEX != 0);
                        } else {
                            output::print_sym_short(s, func);
                            s.push_str("();\n");
                        }
                        if self.is_irq_entry(func) {
                            self.print_graph_irq(s, cpu_i, ts, pid, gflags, tflags, false);
                        }
                        true
                    }
                    None => {
                        cd.depth = depth;
                        if let Some(slot) = usize::try_from(depth).ok().and_then(|d| cd.enter_funcs.get_mut(d)) {
                            *slot = func;
                        }
                        print_duration(s, Fill::Full, gflags, tflags);
                        push_spaces(s, indent);
                        output::print_sym_short(s, func);
                        s.push_str("() {\n");
                        false
                    }
                }
            }
            TRACE_GRAPH_RET => {
                let r = graph_ret(entry);
                if self.check_irq_return(cpu_i, r.depth, gflags) {
                    return false;
                }
                let cd = &mut self.cpus[cpu_i];
                cd.depth = r.depth - 1;
                let mut func_match = true;
                if let Some(slot) = usize::try_from(r.depth).ok().and_then(|d| cd.enter_funcs.get_mut(d)) {
                    func_match = *slot == r.func;
                    *slot = 0;
                }
                self.prologue(s, cpu_i, ts, entry_pid(entry), gflags, tflags);
                print_duration(s, Fill::Duration(r.rettime.saturating_sub(r.calltime)), gflags, tflags);
                push_spaces(s, r.depth.max(0) as usize * TRACE_GRAPH_INDENT);
                if gflags & flags::RETVAL != 0 {
                    print_graph_retval(s, r.retval, false, r.func, gflags & flags::RETVAL_HEX != 0);
                } else if func_match && gflags & flags::TAIL == 0 {
                    s.push_str("}\n");
                } else {
                    s.push_str("} /* ");
                    output::print_sym_short(s, r.func);
                    s.push_str(" */\n");
                }
                if gflags & flags::OVERRUN != 0 {
                    let _ = writeln!(s, " (Overruns: {})", r.overrun);
                }
                if self.is_irq_entry(r.func) {
                    self.print_graph_irq(s, cpu_i, ts, entry_pid(entry), gflags, tflags, false);
                }
                false
            }
            // Function and stack entries print as themselves.
            super::ftrace_function::TRACE_FN | super::trigger::TRACE_STACK => {
                output::print_trace_line(self.tr, s, cpu, ts, entry);
                false
            }
            _ => {
                self.comment(s, cpu_i, ts, entry, gflags, tflags);
                false
            }
        }
    }

    /// Another event, as a `/* ... */` comment at the current depth
    /// (Linux's `print_graph_comment`).
    fn comment(&mut self, s: &mut String, cpu: usize, ts: u64, entry: &[u8], gflags: u32, tflags: u32) {
        let depth = self.cpus[cpu].depth;
        self.prologue(s, cpu, ts, entry_pid(entry), gflags, tflags);
        print_duration(s, Fill::Full, gflags, tflags);
        if depth > 0 {
            push_spaces(s, (depth as usize + 1) * TRACE_GRAPH_INDENT);
        }
        s.push_str("/* ");
        let mut text = String::new();
        let ty = entry_type(entry);
        // trace_marker and trace_printk text alone, without the caller
        // (Linux's trace_print_printk_msg_only).
        let ev = if ty == super::TRACE_PRINT {
            let msg = entry.get(16..).unwrap_or(&[]);
            let n = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
            text.push_str(&String::from_utf8_lossy(&msg[..n]));
            None
        } else {
            Some(super::events::find_event_by_id(ty))
        };
        match ev.flatten() {
            Some(ev) => ev.print(
                &mut text,
                &EventRecord {
                    entry,
                    trace_flags: tflags,
                },
            ),
            None if ty != super::TRACE_PRINT => {
                let _ = write!(text, "Unknown type {ty}");
            }
            None => {}
        }
        s.push_str(text.strip_suffix('\n').unwrap_or(&text));
        s.push_str(" */\n");
    }

    /// The context switch line and the TIME, CPU and TASK/PID columns
    /// (Linux's `print_graph_prologue`).
    fn prologue(&mut self, s: &mut String, cpu: usize, ts: u64, pid: i32, gflags: u32, tflags: u32) {
        self.prologue_irq(s, cpu, ts, pid, None, gflags, tflags);
    }

    /// [`Self::prologue`] of the entry of `irq_func`'s call when `Some`:
    /// after the context switch line, the `==========>` line if it is an
    /// interrupt handler.
    #[allow(clippy::too_many_arguments)]
    fn prologue_irq(
        &mut self,
        s: &mut String,
        cpu: usize,
        ts: u64,
        pid: i32,
        irq_func: Option<usize>,
        gflags: u32,
        tflags: u32,
    ) {
        let last = core::mem::replace(&mut self.cpus[cpu].last_pid, pid);
        if last != pid && last != -1 {
            s.push_str(" ------------------------------------------\n");
            self.print_cpu(s, cpu);
            print_proc(s, last);
            s.push_str(" => ");
            print_proc(s, pid);
            s.push_str("\n ------------------------------------------\n\n");
        }
        if irq_func.is_some_and(|f| self.is_irq_entry(f)) {
            self.print_graph_irq(s, cpu, ts, pid, gflags, tflags, true);
        }
        self.columns(s, cpu, ts, pid, gflags, tflags);
    }

    /// The TIME, CPU and TASK/PID columns.
    fn columns(&self, s: &mut String, cpu: usize, ts: u64, pid: i32, gflags: u32, tflags: u32) {
        if tflags & CONTEXT_INFO == 0 {
            return;
        }
        if gflags & flags::ABS_TIME != 0 {
            let usecs = (ts % 1_000_000_000) / 1000;
            let _ = write!(s, "{:5}.{:06} |  ", ts / 1_000_000_000, usecs);
        }
        if gflags & flags::CPU != 0 {
            self.print_cpu(s, cpu);
        }
        if gflags & flags::PROC != 0 {
            print_proc(s, pid);
            s.push_str(" | ");
        }
    }

    /// Whether `addr` (a graph entry's ftrace ip) is in an interrupt
    /// handler's entry (Linux's `__irqentry_text` test).
    fn is_irq_entry(&self, addr: usize) -> bool {
        let func = addr.wrapping_sub(arch::ftrace::FTRACE_BL_OFFSET);
        self.irq_entries.contains(&func)
    }

    /// The `==========>` (entering, `enter`) or `<==========` line around
    /// an interrupt handler's calls (Linux's `print_graph_irq`).
    #[allow(clippy::too_many_arguments)]
    fn print_graph_irq(&self, s: &mut String, cpu: usize, ts: u64, pid: i32, gflags: u32, tflags: u32, enter: bool) {
        self.columns(s, cpu, ts, pid, gflags, tflags);
        let duration = gflags & flags::DURATION != 0 && tflags & CONTEXT_INFO != 0;
        if duration {
            s.push_str("  ");
        }
        s.push_str(if enter { "==========>" } else { "<==========" });
        if duration {
            s.push_str(" |");
        }
        s.push('\n');
    }

    /// With `funcgraph-irqs` off, whether the entry of `addr` at `depth`
    /// is hidden: an interrupt handler's, or below one (Linux's
    /// `check_irq_entry`).
    fn check_irq_entry(&mut self, cpu: usize, addr: usize, depth: i32, gflags: u32) -> bool {
        if gflags & flags::IRQS != 0 {
            return false;
        }
        if self.cpus[cpu].depth_irq >= 0 {
            return true;
        }
        if !self.is_irq_entry(addr) {
            return false;
        }
        self.cpus[cpu].depth_irq = depth;
        true
    }

    /// With `funcgraph-irqs` off, whether a return at `depth` is hidden:
    /// inside an interrupt handler's call, or its own (Linux's
    /// `check_irq_return`).
    fn check_irq_return(&mut self, cpu: usize, depth: i32, gflags: u32) -> bool {
        if gflags & flags::IRQS != 0 {
            return false;
        }
        let cd = &mut self.cpus[cpu];
        if cd.depth_irq == -1 {
            return false;
        }
        if cd.depth_irq >= depth {
            cd.depth_irq = -1;
        }
        true
    }

    fn print_cpu(&self, s: &mut String, cpu: usize) {
        let _ = write!(s, " {:>w$}) ", cpu, w = self.cpu_width);
    }
}

/// The return value of `func` (a graph entry's ftrace ip) as Linux's
/// `print_graph_retval` prints it, on a leaf's line or a `}`: a negative
/// error code (of 64 or 32 bits) in decimal, anything else in hexadecimal,
/// everything in hexadecimal with `hex`.
fn print_graph_retval(s: &mut String, retval: u64, leaf: bool, func: usize, hex: bool) {
    let err = if retval == 0 || hex {
        None
    } else {
        // A 32-bit negative value in a 64-bit register.
        let v = if retval & (1 << 31) != 0 && retval >> 32 == 0 {
            i64::from(retval as u32 as i32)
        } else {
            retval as i64
        };
        // Linux's IS_ERR_VALUE: -MAX_ERRNO..=-1.
        (-uapi::errno::MAX_ERRNO..0).contains(&v).then_some(v)
    };
    if !leaf {
        s.push_str("} /* ");
    }
    output::print_sym_short(s, func);
    if leaf {
        s.push_str("(); /* = ");
    } else {
        s.push_str(" = ");
    }
    let _ = match err {
        Some(e) => write!(s, "{e}"),
        None => write!(s, "{retval:#x}"),
    };
    s.push_str(" */\n");
}

/// Digits of the highest CPU number (Linux's `max_bytes_for_cpu`).
fn cpu_width() -> usize {
    let n = crate::smp::num_online_cpus().max(1) - 1;
    alloc::format!("{n}").len()
}

fn push_spaces(s: &mut String, n: usize) {
    for _ in 0..n {
        s.push(' ');
    }
}

/// `comm-pid` centred in 14 columns, comm cut to 7 characters (Linux's
/// `print_graph_proc`).
fn print_proc(s: &mut String, pid: i32) {
    let comm = super::cmdlines::find(pid);
    let comm: String = comm.chars().take(7).collect();
    let text = alloc::format!("{comm}-{pid}");
    let spaces = 14usize.saturating_sub(text.len());
    push_spaces(s, spaces / 2);
    s.push_str(&text);
    push_spaces(s, spaces - spaces / 2);
}

/// The DURATION column (Linux's `print_graph_duration`).
fn print_duration(s: &mut String, fill: Fill, gflags: u32, tflags: u32) {
    if gflags & flags::DURATION == 0 || tflags & CONTEXT_INFO == 0 {
        return;
    }
    match fill {
        Fill::Full => s.push_str("              |  "),
        Fill::Duration(d) => {
            if gflags & flags::OVERHEAD != 0 {
                s.push(trace_find_mark(d));
                s.push(' ');
            } else {
                s.push_str("  ");
            }
            print_graph_duration_value(s, d);
            s.push_str("|  ");
        }
    }
}

/// The column header lines of `trace` under function_graph (Linux's
/// `print_graph_headers_flags`): nothing without `context-info` in the
/// trace options `tflags`.
pub fn print_header(s: &mut String, tflags: u32) {
    if tflags & CONTEXT_INFO == 0 {
        return;
    }
    let f = GRAPH_FLAGS.load(Ordering::Relaxed);
    let col = |s: &mut String, bit: u32, text: &str| {
        if f & bit != 0 {
            s.push_str(text);
        }
    };
    s.push('#');
    col(s, flags::ABS_TIME, "     TIME       ");
    col(s, flags::CPU, " CPU");
    col(s, flags::PROC, "  TASK/PID       ");
    col(s, flags::DURATION, "  DURATION   ");
    s.push_str("               FUNCTION CALLS\n#");
    col(s, flags::ABS_TIME, "      |         ");
    col(s, flags::CPU, " |  ");
    col(s, flags::PROC, "   |    |        ");
    col(s, flags::DURATION, "   |   |      ");
    s.push_str("               |   |   |   |\n");
}

// ---------------------------------------------------------------------
// Files

/// Which graph filter a file edits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GraphHash {
    Function,
    Notrace,
}

impl GraphHash {
    fn set(self) -> &'static spin::RwLock<BTreeSet<usize>> {
        match self {
            GraphHash::Function => &GRAPH_HASH,
            GraphHash::Notrace => &GRAPH_NOTRACE_HASH,
        }
    }

    fn flag(self) -> &'static AtomicBool {
        match self {
            GraphHash::Function => &GRAPH_HASH_SET,
            GraphHash::Notrace => &GRAPH_NOTRACE_SET,
        }
    }
}

fn graph_hash_show(kind: GraphHash) -> Vec<u8> {
    let set = kind.set().read();
    if set.is_empty() {
        return match kind {
            GraphHash::Function => b"#### all functions enabled ####\n".to_vec(),
            GraphHash::Notrace => b"#### no functions disabled ####\n".to_vec(),
        };
    }
    let mut s = String::new();
    for &f in set.iter() {
        output::print_sym_short(&mut s, f);
        s.push('\n');
    }
    s.into_bytes()
}

/// Applies one glob (or `!glob`) to a graph filter: EINVAL if it matches
/// no traceable function, even for a removal (as Linux's
/// `ftrace_graph_set_hash`).
fn apply_graph_word(set: &mut BTreeSet<usize>, word: &str) -> Result<(), Errno> {
    let (remove, pat) = match word.strip_prefix('!') {
        Some(p) => (true, p),
        None => (false, word),
    };
    let mut found = false;
    for site in ftrace::sites() {
        if trace_filter::glob::glob_match(pat.as_bytes(), site.name.as_bytes()) {
            found = true;
            if remove {
                set.remove(&site.func);
            } else {
                set.insert(site.func);
            }
        }
    }
    if found {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

fn graph_hash_write(kind: GraphHash, buf: &[u8]) -> Result<usize, Errno> {
    let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
    let mut set = kind.set().read().clone();
    let mut result = Ok(buf.len());
    for word in text.split_ascii_whitespace() {
        if let Err(e) = apply_graph_word(&mut set, word) {
            result = Err(e);
            break;
        }
    }
    let mut w = kind.set().write();
    *w = set;
    kind.flag().store(!w.is_empty(), Ordering::Release);
    result
}

fn graph_hash_clear(kind: GraphHash) {
    let mut w = kind.set().write();
    w.clear();
    kind.flag().store(false, Ordering::Release);
}

/// Replaces `set_graph_function` (for in-kernel users and tests): EINVAL
/// if a glob matches nothing.
pub fn set_graph_function(globs: &[&str]) -> Result<(), Errno> {
    graph_hash_clear(GraphHash::Function);
    graph_hash_write(GraphHash::Function, globs.join(" ").as_bytes()).map(|_| ())
}

/// Replaces `set_graph_notrace`.
pub fn set_graph_notrace(globs: &[&str]) -> Result<(), Errno> {
    graph_hash_clear(GraphHash::Notrace);
    graph_hash_write(GraphHash::Notrace, globs.join(" ").as_bytes()).map(|_| ())
}

/// Sets `max_graph_depth` (0: no limit).
pub fn set_max_graph_depth(depth: u32) {
    MAX_GRAPH_DEPTH.store(depth, Ordering::Release);
}

/// `tracing_thresh` in ns (0: off).
pub fn tracing_thresh_ns() -> u64 {
    TRACING_THRESH.load(Ordering::Relaxed)
}

/// A context switch from `prev` to `next` (called by `schedule` with
/// interrupts masked, Linux's `ftrace_graph_probe_sched_switch`): with
/// `options/sleep-time` off, the calls in flight of a task leave out the
/// time it was switched out, for function_graph's durations and the
/// profiler's times alike.
pub fn graph_sched_switch(prev: &crate::sched::Task, next: &crate::sched::Task) {
    if GRAPH_FLAGS.load(Ordering::Relaxed) & flags::SLEEP_TIME != 0 {
        return;
    }
    let now = super::clock::trace_clock_now();
    prev.ret_stack.sched_out(now);
    next.ret_stack.sched_in(now);
}

/// Sets `tracing_thresh`, in µs (0: off).
pub fn set_tracing_thresh_us(us: u64) {
    TRACING_THRESH.store(us.saturating_mul(1000), Ordering::Release);
}

/// Sets or clears `funcgraph-*` options ([`flags`]).
pub fn set_graph_flags(bits: u32, on: bool) {
    if on {
        GRAPH_FLAGS.fetch_or(bits, Ordering::AcqRel);
    } else {
        GRAPH_FLAGS.fetch_and(!bits, Ordering::AcqRel);
    }
}

/// The current `funcgraph-*` options.
pub fn graph_flags() -> u32 {
    GRAPH_FLAGS.load(Ordering::Acquire)
}

/// The `funcgraph-*` lines `trace_options` ends with while function_graph
/// is the current tracer (Linux lists the current tracer's options there).
pub fn trace_options_show(tr: &TraceArray) -> String {
    let mut s = String::new();
    if !is_current(tr) {
        return s;
    }
    let f = graph_flags();
    for (name, bit) in GRAPH_OPTIONS {
        if f & bit == 0 {
            s.push_str("no");
        }
        s.push_str(name);
        s.push('\n');
    }
    s
}

/// A `trace_options` write of `tr` naming a `funcgraph-*` option (or
/// `no...`): applied while function_graph is its current tracer (the
/// options are shared by every trace array, as Linux's tracer flags);
/// `None` if `cmd` is not one (or the tracer is another).
pub fn trace_options_apply(tr: &TraceArray, cmd: &str) -> Option<()> {
    if !is_current(tr) {
        return None;
    }
    let (on, name) = match cmd.strip_prefix("no") {
        Some(rest) => (false, rest),
        None => (true, cmd),
    };
    let (_, bit) = GRAPH_OPTIONS.iter().find(|(n, _)| *n == name)?;
    set_graph_flags(*bit, on);
    Some(())
}

/// An unsigned decimal as tracefs number files take it.
fn parse_number(buf: &[u8]) -> Result<u64, Errno> {
    super::tracefs::parse_ulong(buf)
}

/// Registers the graph events and makes the graph files in `root`
/// (after `options/` exists).
pub fn init(root: &Arc<PseudoDir>) {
    super::tracefs::readme_add(
        super::tracefs::ReadmeSection::Files,
        "  set_graph_function\t- Trace the nested calls of a function (function_graph)\n  \
         set_graph_notrace\t- Do not trace the nested calls of a function (function_graph)\n  \
         max_graph_depth\t- Trace a limited depth of nested calls (0 is unlimited)\n",
    );
    for (def, id) in [
        (exit_event_def(), TRACE_GRAPH_RET),
        (entry_event_def(), TRACE_GRAPH_ENT),
    ] {
        if let Err(e) = super::events::register_internal_event(def, id) {
            crate::pr_err!("trace: cannot register a funcgraph event: {}", e);
        }
    }
    for (name, kind) in [
        ("set_graph_function", GraphHash::Function),
        ("set_graph_notrace", GraphHash::Notrace),
    ] {
        let _ = root.file_trunc(
            name,
            0o640,
            Box::new(move || graph_hash_show(kind)),
            Some(Box::new(move |buf| graph_hash_write(kind, buf))),
            Some(Box::new(move || graph_hash_clear(kind))),
        );
    }
    root.file(
        "max_graph_depth",
        0o640,
        Box::new(|| alloc::format!("{}\n", MAX_GRAPH_DEPTH.load(Ordering::Acquire)).into_bytes()),
        Some(Box::new(|buf| {
            let v = parse_number(buf)?;
            set_max_graph_depth(u32::try_from(v).map_err(|_| Errno::EINVAL)?);
            Ok(buf.len())
        })),
    );
    root.file(
        "tracing_thresh",
        0o640,
        Box::new(|| alloc::format!("{}\n", TRACING_THRESH.load(Ordering::Acquire) / 1000).into_bytes()),
        Some(Box::new(|buf| {
            let v = parse_number(buf)?;
            set_tracing_thresh_us(v);
            Ok(buf.len())
        })),
    );
    create_option_files(&root.dir_mode("options", 0o750));
}

/// The `funcgraph-*` files of an `options/` directory (the top level's
/// and each instance's; one set of options for all, as Linux's tracer
/// flags).
pub fn create_option_files(opts: &Arc<PseudoDir>) {
    for (name, bit) in GRAPH_OPTIONS {
        opts.file(
            name,
            0o640,
            Box::new(move || {
                if graph_flags() & bit != 0 {
                    b"1\n".to_vec()
                } else {
                    b"0\n".to_vec()
                }
            }),
            Some(Box::new(move |buf| {
                match parse_number(buf)? {
                    0 => set_graph_flags(bit, false),
                    1 => set_graph_flags(bit, true),
                    _ => return Err(Errno::EINVAL),
                }
                Ok(buf.len())
            })),
        );
    }
}
