//! `trace_options` and `options/`: Linux 6.12's core trace flags, under
//! Linux's names, in Linux's order. Those whose mechanism this kernel does
//! not have ([`FIXED_FLAGS`]: `verbose`, `block`, `trace_printk`,
//! `userstacktrace`, `sym-userobj`,
//! `printk-msg-only`, `trace_printk_dest`, `hash-ptr`, `display-graph`)
//! keep Linux's default: reading them gives it, writing it again is
//! accepted, and a write that would change it is EINVAL (as Linux's
//! set_tracer_flag refuses what a tracer cannot do). No option takes a
//! value and ignores it.

use super::TraceArray;

/// One option: its name, its bit in the flags word, its default.
pub struct TraceOption {
    /// Name in `trace_options` and `options/`.
    pub name: &'static str,
    /// Bit in the flags word.
    pub bit: u32,
    /// On at boot.
    pub default: bool,
}

/// `print-parent`: return probes print the caller (`(caller <- func)`).
pub const PRINT_PARENT: u32 = 1 << 0;
/// `sym-offset`: symbols print with `+off/size`.
pub const SYM_OFFSET: u32 = 1 << 1;
/// `sym-addr`: symbols print with their address.
pub const SYM_ADDR: u32 = 1 << 2;
/// `annotate`: `trace` marks where each CPU's buffer starts after losses.
pub const ANNOTATE: u32 = 1 << 3;
/// `context-info`: lines start with comm-pid, CPU, flags and time.
pub const CONTEXT_INFO: u32 = 1 << 4;
/// `record-cmd`: enabled events save the comm of their tasks.
pub const RECORD_CMD: u32 = 1 << 5;
/// `overwrite`: a full buffer overwrites its oldest events.
pub const OVERWRITE: u32 = 1 << 6;
/// `irq-info`: the irqs-off/need-resched/hardirq/preempt column.
pub const IRQ_INFO: u32 = 1 << 7;
/// `markers`: `trace_marker` accepts writes.
pub const MARKERS: u32 = 1 << 8;
/// `pause-on-trace`: recording stops while `trace` is open.
pub const PAUSE_ON_TRACE: u32 = 1 << 9;
/// `event-fork`: children of a task in `set_event_pid` join the list.
pub const EVENT_FORK: u32 = 1 << 10;

/// `function-fork`: children of a task in `set_ftrace_pid` or
/// `set_ftrace_notrace_pid` join the list, exiting tasks leave it.
pub const FUNCTION_FORK: u32 = 1 << 11;
/// `func_stack_trace` (the function tracer's own option): a stack trace
/// after each function entry.
pub const FUNC_STACK_TRACE: u32 = 1 << 12;
/// `record-tgid`: enabled events save the thread group of their tasks
/// (`saved_tgids`), and `trace` prints it in a `TGID` column.
pub const RECORD_TGID: u32 = 1 << 13;
/// `stacktrace`: a kernel stack trace after each event recorded
/// (Linux's `TRACE_ITER_STACKTRACE`).
pub const STACKTRACE: u32 = 1 << 14;

/// Options only the top-level trace array has a file for in `options/`
/// (Linux's `TOP_LEVEL_TRACE_FLAGS`, of those this kernel has).
pub const TOP_LEVEL_TRACE_FLAGS: u32 = RECORD_CMD | PRINTK | PRINTK_MSGONLY;
/// Options an instance starts with off whatever the top level has (Linux's
/// `ZEROED_TRACE_FLAGS`).
pub const ZEROED_TRACE_FLAGS: u32 = EVENT_FORK | FUNCTION_FORK | TRACE_PRINTK_DEST;

/// `latency-format`: `trace` shows the latency header and columns (the
/// latency tracers set it while they run).
pub const LATENCY_FMT: u32 = 1 << 15;
/// `function-trace`: the latency tracers record the functions called
/// inside the sections they time.
pub const FUNCTION_TRACE: u32 = 1 << 16;
/// `disable_on_free`: closing `free_buffer` also turns tracing off
/// (Linux's `TRACE_ITER_STOP_ON_FREE`).
pub const DISABLE_ON_FREE: u32 = 1 << 17;

/// `verbose` (fixed off).
pub const VERBOSE: u32 = 1 << 18;
/// `raw`: `trace` and `trace_pipe` print entries as plain numbers.
pub const RAW: u32 = 1 << 19;
/// `hex`: entries as hex words.
pub const HEX: u32 = 1 << 20;
/// `bin`: entries in binary.
pub const BIN: u32 = 1 << 21;
/// `block` (fixed off).
pub const BLOCK: u32 = 1 << 22;
/// `fields`: events print each field by its type instead of their
/// `print fmt`.
pub const FIELDS: u32 = 1 << 23;
/// `trace_printk` (fixed on: there is no trace_printk to turn off).
pub const PRINTK: u32 = 1 << 24;
/// `userstacktrace` (fixed off).
pub const USERSTACKTRACE: u32 = 1 << 25;
/// `sym-userobj` (fixed off).
pub const SYM_USEROBJ: u32 = 1 << 26;
/// `printk-msg-only` (fixed off).
pub const PRINTK_MSGONLY: u32 = 1 << 27;
/// `trace_printk_dest` (fixed: on at the top level, off in instances).
pub const TRACE_PRINTK_DEST: u32 = 1 << 28;
/// `hash-ptr` (fixed on).
pub const HASH_PTR: u32 = 1 << 29;
/// `display-graph` (fixed off).
pub const DISPLAY_GRAPH: u32 = 1 << 30;

/// The options whose mechanism this kernel does not have: they keep the
/// value they start with, and a write that would change it is EINVAL.
pub const FIXED_FLAGS: u32 = VERBOSE
    | BLOCK
    | PRINTK
    | USERSTACKTRACE
    | SYM_USEROBJ
    | PRINTK_MSGONLY
    | TRACE_PRINTK_DEST
    | HASH_PTR
    | DISPLAY_GRAPH;

/// The options, in Linux's order; tracer options ([`FUNC_STACK_TRACE`])
/// last.
pub static TRACE_OPTIONS: [TraceOption; 31] = [
    TraceOption {
        name: "print-parent",
        bit: PRINT_PARENT,
        default: true,
    },
    TraceOption {
        name: "sym-offset",
        bit: SYM_OFFSET,
        default: false,
    },
    TraceOption {
        name: "sym-addr",
        bit: SYM_ADDR,
        default: false,
    },
    TraceOption {
        name: "verbose",
        bit: VERBOSE,
        default: false,
    },
    TraceOption {
        name: "raw",
        bit: RAW,
        default: false,
    },
    TraceOption {
        name: "hex",
        bit: HEX,
        default: false,
    },
    TraceOption {
        name: "bin",
        bit: BIN,
        default: false,
    },
    TraceOption {
        name: "block",
        bit: BLOCK,
        default: false,
    },
    TraceOption {
        name: "fields",
        bit: FIELDS,
        default: false,
    },
    TraceOption {
        name: "trace_printk",
        bit: PRINTK,
        default: true,
    },
    TraceOption {
        name: "annotate",
        bit: ANNOTATE,
        default: true,
    },
    TraceOption {
        name: "userstacktrace",
        bit: USERSTACKTRACE,
        default: false,
    },
    TraceOption {
        name: "sym-userobj",
        bit: SYM_USEROBJ,
        default: false,
    },
    TraceOption {
        name: "printk-msg-only",
        bit: PRINTK_MSGONLY,
        default: false,
    },
    TraceOption {
        name: "context-info",
        bit: CONTEXT_INFO,
        default: true,
    },
    TraceOption {
        name: "latency-format",
        bit: LATENCY_FMT,
        default: false,
    },
    TraceOption {
        name: "record-cmd",
        bit: RECORD_CMD,
        default: true,
    },
    TraceOption {
        name: "record-tgid",
        bit: RECORD_TGID,
        default: false,
    },
    TraceOption {
        name: "overwrite",
        bit: OVERWRITE,
        default: true,
    },
    TraceOption {
        name: "disable_on_free",
        bit: DISABLE_ON_FREE,
        default: false,
    },
    TraceOption {
        name: "irq-info",
        bit: IRQ_INFO,
        default: true,
    },
    TraceOption {
        name: "markers",
        bit: MARKERS,
        default: true,
    },
    TraceOption {
        name: "event-fork",
        bit: EVENT_FORK,
        default: false,
    },
    TraceOption {
        name: "trace_printk_dest",
        bit: TRACE_PRINTK_DEST,
        default: true,
    },
    TraceOption {
        name: "pause-on-trace",
        bit: PAUSE_ON_TRACE,
        default: false,
    },
    TraceOption {
        name: "hash-ptr",
        bit: HASH_PTR,
        default: true,
    },
    TraceOption {
        name: "function-trace",
        bit: FUNCTION_TRACE,
        default: true,
    },
    TraceOption {
        name: "function-fork",
        bit: FUNCTION_FORK,
        default: false,
    },
    TraceOption {
        name: "display-graph",
        bit: DISPLAY_GRAPH,
        default: false,
    },
    TraceOption {
        name: "stacktrace",
        bit: STACKTRACE,
        default: false,
    },
    TraceOption {
        name: "func_stack_trace",
        bit: FUNC_STACK_TRACE,
        default: false,
    },
];

/// Whether `tr`'s `trace_options` lists option `bit` and takes it by
/// name: a tracer's own options only while it is the current tracer
/// (Linux keeps their `options/` files all the time).
fn listed(tr: &TraceArray, bit: u32) -> bool {
    bit != FUNC_STACK_TRACE || super::ftrace_function::current_tracer(tr) == "function"
}

/// The flags a trace array starts with: Linux's defaults for the top
/// level; an instance copies the top level's, less [`ZEROED_TRACE_FLAGS`].
pub const DEFAULT_FLAGS: u32 = PRINT_PARENT
    | ANNOTATE
    | CONTEXT_INFO
    | RECORD_CMD
    | OVERWRITE
    | IRQ_INFO
    | MARKERS
    | FUNCTION_TRACE
    | PRINTK
    | TRACE_PRINTK_DEST
    | HASH_PTR;

/// The top-level trace array's flags word (the options of everything that
/// is not per instance: the function tracers, command-line recording).
pub fn trace_flags() -> u32 {
    super::global_trace().trace_flags()
}

/// Whether `bit` is set at the top level.
pub fn is_set(bit: u32) -> bool {
    trace_flags() & bit != 0
}

/// Sets or clears `bit` at the top level, applying what it changes.
pub fn set_flag(bit: u32, on: bool) {
    set_tracer_flag(super::global_trace(), bit, on)
}

/// Sets or clears `bit` of `tr` (Linux's `set_tracer_flag`), applying what
/// it changes: `overwrite` reaches the buffers, `record-tgid` makes the
/// thread-group table.
pub fn set_tracer_flag(tr: &TraceArray, bit: u32, on: bool) {
    if on && bit == RECORD_TGID {
        super::cmdlines::tgid_init();
    }
    tr.set_trace_flag(bit, on);
    if bit == OVERWRITE {
        tr.set_overwrite(on);
    }
    if bit == FUNCTION_TRACE {
        super::trace_irqsoff::function_trace_changed(on);
    }
}

/// A write of option `bit` of `tr` (`trace_options` or `options/`):
/// applied as [`set_tracer_flag`], or EINVAL for one of [`FIXED_FLAGS`]
/// that it would change.
pub fn change_flag(tr: &TraceArray, bit: u32, on: bool) -> Result<(), uapi::Errno> {
    if bit & FIXED_FLAGS != 0 {
        return if tr.is_set(bit) == on {
            Ok(())
        } else {
            Err(uapi::Errno::EINVAL)
        };
    }
    set_tracer_flag(tr, bit, on);
    Ok(())
}

/// `trace_options`' text of `tr`: one option a line, `no` before those
/// off (an instance lists the top-level-only ones too, as Linux does).
pub fn show(tr: &TraceArray) -> alloc::string::String {
    let flags = tr.trace_flags();
    let mut s = alloc::string::String::new();
    for o in TRACE_OPTIONS.iter().filter(|o| listed(tr, o.bit)) {
        if flags & o.bit == 0 {
            s.push_str("no");
        }
        s.push_str(o.name);
        s.push('\n');
    }
    s.push_str(&super::function_graph::trace_options_show(tr));
    s
}

/// Applies a `trace_options` write (`name` or `noname`) to `tr`: EINVAL if
/// no such option.
pub fn apply(tr: &TraceArray, cmd: &str) -> Result<(), uapi::Errno> {
    if super::function_graph::trace_options_apply(tr, cmd).is_some() {
        return Ok(());
    }
    let (on, name) = match cmd.strip_prefix("no") {
        Some(rest) if TRACE_OPTIONS.iter().any(|o| o.name == rest) => (false, rest),
        _ => (true, cmd),
    };
    let o = TRACE_OPTIONS
        .iter()
        .find(|o| o.name == name && listed(tr, o.bit))
        .ok_or(uapi::Errno::EINVAL)?;
    change_flag(tr, o.bit, on)
}
