//! The `function` tracer (Linux's kernel/trace/trace_functions.c) and the
//! tracefs files of ftrace: `current_tracer`/`available_tracers` of the
//! top-level trace array, `set_ftrace_filter`, `set_ftrace_notrace`,
//! `set_ftrace_pid`, `available_filter_functions`,
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

/// The type of `ftrace/function` entries (Linux's `TRACE_FN`).
pub const TRACE_FN: u16 = 1;

/// The `function` tracer's ops (Linux's `global_ops`), whose filter and
/// notrace sets are `set_ftrace_filter` and `set_ftrace_notrace`.
pub static GLOBAL_OPS: FtraceOps = FtraceOps::new("global_ops", function_trace_call);

/// The tracers `current_tracer` takes, in Linux's listing order.
const TRACERS: &[&str] = &["function_graph", "function", "nop"];

/// Whether `function` is the current tracer.
static FUNCTION_ON: AtomicBool = AtomicBool::new(false);
/// Serialises tracer switches.
static TRACER_LOCK: spin::Mutex<()> = spin::Mutex::new(());
/// `set_ftrace_pid`: empty for every task.
static FTRACE_PIDS: spin::RwLock<BTreeSet<u32>> = spin::RwLock::new(BTreeSet::new());
/// Whether `set_ftrace_pid` has pids (read on the hit path).
static PID_FILTER: AtomicBool = AtomicBool::new(false);

/// The current tracer of `tr` (`nop` for instances, which have no other
/// yet).
pub fn current_tracer(tr: &TraceArray) -> &'static str {
    if core::ptr::eq(tr, global_trace()) && FUNCTION_ON.load(Ordering::Acquire) {
        "function"
    } else if core::ptr::eq(tr, global_trace()) && super::function_graph::is_on() {
        "function_graph"
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
    match name {
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
    if PID_FILTER.load(Ordering::Relaxed) {
        let pid = task.as_ref().filter(|t| !t.is_idle()).map_or(0, |t| t.tid());
        match FTRACE_PIDS.try_read() {
            Some(p) if p.contains(&pid) => {}
            _ => return,
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
            super::cmdlines::save(&t);
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

/// Which set of [`GLOBAL_OPS`] a file edits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HashKind {
    Filter,
    Notrace,
}

fn hash_show(kind: HashKind) -> Vec<u8> {
    let h = GLOBAL_OPS.hash();
    let set = if kind == HashKind::Filter {
        &h.filter
    } else {
        &h.notrace
    };
    if set.is_empty() {
        return if kind == HashKind::Filter {
            b"#### all functions enabled ####\n".to_vec()
        } else {
            b"#### no functions disabled ####\n".to_vec()
        };
    }
    let sites = ftrace::sites();
    let mut s = String::new();
    for &i in set {
        if let Some(site) = sites.get(i as usize) {
            s.push_str(site.name);
            s.push('\n');
        }
    }
    s.into_bytes()
}

/// A write of words to `set_ftrace_filter`/`set_ftrace_notrace`: each
/// added (or removed with `!`); `EINVAL` for one that matches nothing (the
/// words before it stay applied, as in Linux).
fn hash_write(kind: HashKind, buf: &[u8]) -> Result<usize, Errno> {
    let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
    let mut h: FtraceHash = GLOBAL_OPS.hash();
    let mut result = Ok(buf.len());
    for word in text.split_ascii_whitespace() {
        let set = if kind == HashKind::Filter {
            &mut h.filter
        } else {
            &mut h.notrace
        };
        if ftrace::apply_filter_word(set, word).is_err() {
            result = Err(Errno::EINVAL);
            break;
        }
    }
    GLOBAL_OPS.set_hash(h.clone())?;
    super::function_graph::update_filter(h)?;
    result
}

fn hash_clear(kind: HashKind) {
    let mut h = GLOBAL_OPS.hash();
    match kind {
        HashKind::Filter => h.filter.clear(),
        HashKind::Notrace => h.notrace.clear(),
    }
    if let Err(e) = GLOBAL_OPS
        .set_hash(h.clone())
        .and_then(|()| super::function_graph::update_filter(h))
    {
        crate::pr_err!("ftrace: cannot apply the cleared filter: {}", e);
    }
}

fn pid_show() -> Vec<u8> {
    let pids = FTRACE_PIDS.read();
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
fn pid_write(buf: &[u8]) -> Result<usize, Errno> {
    let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
    let mut new = Vec::new();
    for w in text.split_ascii_whitespace() {
        new.push(w.parse::<u32>().map_err(|_| Errno::EINVAL)?);
    }
    let mut pids = FTRACE_PIDS.write();
    pids.extend(new);
    PID_FILTER.store(!pids.is_empty(), Ordering::Release);
    Ok(buf.len())
}

fn pid_clear() {
    let mut pids = FTRACE_PIDS.write();
    pids.clear();
    PID_FILTER.store(false, Ordering::Release);
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
        let _ = root.file_trunc(
            name,
            0o640,
            Box::new(move || hash_show(kind)),
            Some(Box::new(move |buf| hash_write(kind, buf))),
            Some(Box::new(move || hash_clear(kind))),
        );
    }
    let _ = root.file_trunc(
        "set_ftrace_pid",
        0o640,
        Box::new(pid_show),
        Some(Box::new(pid_write)),
        Some(Box::new(pid_clear)),
    );
}
