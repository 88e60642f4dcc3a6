//! The text of `trace` and `trace_pipe`: the header block and one line per
//! entry (`comm-pid [cpu] flags timestamp: event output`), as Linux's
//! `trace_print_context`, `trace_print_lat_fmt` and
//! `print_func_help_header_irq` print them; under the `bin`, `hex`, `raw`
//! and `fields` options, the entry as Linux's `print_bin_fmt`,
//! `print_hex_fmt`, `print_raw_fmt` and `print_event_fields` print it
//! (the bytes themselves are made by `trace_probe::print_modes`).

use super::events::{self, EventRecord};
use super::options::{
    self, ANNOTATE, BIN, CONTEXT_INFO, FIELDS, HEX, IRQ_INFO, RAW, RECORD_TGID, SYM_ADDR, SYM_OFFSET,
};
use super::{
    TraceArray, TRACE_FLAG_BH_OFF, TRACE_FLAG_HARDIRQ, TRACE_FLAG_IRQS_OFF, TRACE_FLAG_NEED_RESCHED, TRACE_FLAG_NMI,
    TRACE_FLAG_PREEMPT_RESCHED, TRACE_FLAG_SOFTIRQ,
};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use trace_probe::print_modes::{self, CtxSwitch, PrintField, PrintMode};

/// The header of `trace`: `# tracer: nop`, the entry counts and the
/// column lines (those of irq-info when it is set).
pub fn trace_header(tr: &TraceArray) -> String {
    trace_header_for(tr, tr, super::ftrace_function::current_tracer(tr))
}

/// [`trace_header`] of `tr`'s buffers under the name of `tracer` and the
/// options of `opts` (a snapshot buffer shows its trace array's).
pub fn trace_header_for(tr: &TraceArray, opts: &TraceArray, tracer: &str) -> String {
    let flags = opts.trace_flags();
    let mut s = format!("# tracer: {tracer}\n#\n");
    if super::function_graph::is_current(tr) {
        super::function_graph::print_header(&mut s, flags);
        return s;
    }
    if flags & CONTEXT_INFO == 0 {
        return s;
    }
    if flags & options::LATENCY_FMT != 0 {
        // Linux's print_trace_header, for buffers with entries.
        let data = super::trace_irqsoff::max_data_of(tr);
        let (entries, total) = latency_entries(tr, data.map_or(0, |d| d.time_start));
        if entries > 0 {
            super::trace_irqsoff::print_trace_header(&mut s, tracer, data.as_ref(), entries, total);
        }
        return s;
    }
    let (entries, written) = tr.total_entries();
    let _ = writeln!(
        s,
        "# entries-in-buffer/entries-written: {entries}/{written}   #P:{}",
        crate::smp::num_online_cpus()
    );
    s.push_str("#\n");
    let tgid = flags & RECORD_TGID != 0;
    if flags & IRQ_INFO != 0 {
        // Linux's print_func_help_header_irq: the TGID column widens the
        // indent by ten.
        let pad = if tgid { "            " } else { "  " };
        for tail in [
            "  _-----=> irqs-off/BH-disabled",
            " / _----=> need-resched",
            "| / _---=> hardirq/softirq",
            "|| / _--=> preempt-depth",
            "||| / _-=> migrate-disable",
            "|||| /     delay",
        ] {
            let _ = writeln!(s, "#                            {pad}{tail}");
        }
        let (name, bar) = if tgid {
            ("     TGID   ", "       |    ")
        } else {
            ("  ", "  ")
        };
        let _ = writeln!(s, "#           TASK-PID  {name} CPU#  |||||  TIMESTAMP  FUNCTION");
        let _ = writeln!(s, "#              | |    {bar}   |   |||||     |         |");
    } else {
        let (name, bar) = if tgid { ("   TGID   ", "     |    ") } else { ("", "") };
        let _ = writeln!(s, "#           TASK-PID    {name} CPU#     TIMESTAMP  FUNCTION");
        let _ = writeln!(s, "#              | |      {bar}   |         |         |");
    }
    s
}

/// The `#E/E` of a latency header (Linux's `get_total_entries` after
/// `tracing_iter_reset`): entries from `time_start` on, and those plus the
/// overrun of CPUs that skipped none.
pub fn latency_entries(tr: &TraceArray, time_start: u64) -> (u64, u64) {
    let (mut entries, mut total) = (0, 0);
    let mut page = ring_buffer::new_page();
    for cpu in super::tracing_cpus() {
        let (mut count, mut skipped) = (0u64, 0u64);
        let mut after = None;
        while let Some(copy) = tr.with_buffer(cpu, |b| b.copy_page(after, &mut page)).flatten() {
            after = Some(copy.seq);
            let mut cur = copy.cursor();
            while let Some(Ok(ev)) = cur.next_event(&page) {
                if ev.ts < time_start {
                    skipped += 1;
                } else {
                    count += 1;
                }
            }
        }
        entries += count;
        total += if skipped > 0 {
            count
        } else {
            count + tr.stats(cpu).overrun
        };
    }
    (entries, total)
}

/// The five irq-info characters of an entry.
fn lat_fmt(s: &mut String, flags: u8, preempt: u8) {
    // As Linux's trace_print_lat_fmt.
    let (irqs_off, bh_off) = (flags & TRACE_FLAG_IRQS_OFF != 0, flags & TRACE_FLAG_BH_OFF != 0);
    s.push(match (irqs_off, bh_off) {
        (true, true) => 'D',
        (true, false) => 'd',
        (false, true) => 'b',
        (false, false) => '.',
    });
    s.push(
        match (
            flags & TRACE_FLAG_NEED_RESCHED != 0,
            flags & TRACE_FLAG_PREEMPT_RESCHED != 0,
        ) {
            (true, true) => 'N',
            (true, false) => 'n',
            (false, true) => 'p',
            (false, false) => '.',
        },
    );
    let (nmi, hard, soft) = (
        flags & TRACE_FLAG_NMI != 0,
        flags & TRACE_FLAG_HARDIRQ != 0,
        flags & TRACE_FLAG_SOFTIRQ != 0,
    );
    s.push(match (nmi, hard, soft) {
        (true, true, _) => 'Z',
        (true, false, _) => 'z',
        (false, true, true) => 'H',
        (false, true, false) => 'h',
        (false, false, true) => 's',
        (false, false, false) => '.',
    });
    match preempt & 0xf {
        0 => s.push('.'),
        n => {
            let _ = write!(s, "{n:x}");
        }
    }
    match preempt >> 4 {
        0 => s.push('.'),
        n => {
            let _ = write!(s, "{n:x}");
        }
    }
}

/// A timestamp as Linux prints it: ` secs.usecs` for nanosecond clocks,
/// a 12-wide count otherwise.
fn print_time(tr: &TraceArray, s: &mut String, ts: u64) {
    if tr.clock().in_ns {
        let us = ts / 1000;
        let _ = write!(s, " {:5}.{:06}", us / 1_000_000, us % 1_000_000);
    } else {
        let _ = write!(s, " {ts:12}");
    }
}

/// Formats one entry of `tr` recorded on `cpu` at `ts` (all its bytes,
/// common fields first) as a `trace` line in the normal print, under
/// `tr`'s options other than `fields`.
pub fn print_trace_line(tr: &TraceArray, s: &mut String, cpu: usize, ts: u64, entry: &[u8]) {
    let flags = tr.trace_flags();
    print_context(tr, s, cpu, ts, entry);
    print_event(s, entry, flags);
}

/// The context columns of the normal print (Linux's `trace_print_context`),
/// when `context-info` is set.
fn print_context(tr: &TraceArray, s: &mut String, cpu: usize, ts: u64, entry: &[u8]) {
    let flags = tr.trace_flags();
    if flags & CONTEXT_INFO == 0 {
        return;
    }
    let eflags = entry.get(2).copied().unwrap_or(0);
    let preempt = entry.get(3).copied().unwrap_or(0);
    let pid = entry_pid(entry);
    let comm = super::cmdlines::find(pid);
    let _ = write!(s, "{comm:>16}-{pid:<7} ");
    if flags & RECORD_TGID != 0 {
        match super::cmdlines::find_tgid(pid) {
            0 => s.push_str("(-------) "),
            tgid => {
                let _ = write!(s, "({tgid:7}) ");
            }
        }
    }
    let _ = write!(s, "[{cpu:03}] ");
    if flags & IRQ_INFO != 0 {
        lat_fmt(s, eflags, preempt);
    }
    print_time(tr, s, ts);
    s.push_str(": ");
}

/// An entry's own text in the normal print (its event's `trace` output).
fn print_event(s: &mut String, entry: &[u8], flags: u32) {
    let ty = entry_type(entry);
    match events::find_event_by_id(ty) {
        Some(ev) => ev.print(
            s,
            &EventRecord {
                entry,
                trace_flags: flags,
            },
        ),
        None => {
            let _ = writeln!(s, "Unknown type {ty}");
        }
    }
}

fn entry_type(entry: &[u8]) -> u16 {
    entry.get(0..2).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

fn entry_pid(entry: &[u8]) -> i32 {
    entry
        .get(4..8)
        .map_or(0, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn entry_word(entry: &[u8], off: usize) -> u64 {
    entry
        .get(off..off + 8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
}

/// The printer the options `flags` choose (Linux's `print_trace_line`
/// checks `bin`, then `hex`, then `raw`).
pub fn print_mode(flags: u32) -> PrintMode {
    PrintMode::from_options(flags & BIN != 0, flags & HEX != 0, flags & RAW != 0)
}

/// Formats one entry of `tr` as `trace` and `trace_pipe` show it under
/// `tr`'s options (Linux's `print_trace_line` past the tracer's own
/// printer): `bin`, `hex` or `raw` if set, else the normal line, whose
/// event part `fields` replaces. Bytes, since `bin` is binary; the text
/// is made in `scratch` (left empty, its capacity kept for the next line:
/// a new string per line cost half again the instructions of a `trace`
/// read).
pub fn print_trace_entry(tr: &TraceArray, out: &mut Vec<u8>, scratch: &mut String, cpu: usize, ts: u64, entry: &[u8]) {
    let flags = tr.trace_flags();
    match print_mode(flags) {
        PrintMode::Normal => {
            let s = scratch;
            s.clear();
            print_context(tr, s, cpu, ts, entry);
            if flags & FIELDS != 0 {
                out.extend_from_slice(s.as_bytes());
                print_event_fields(out, entry);
            } else {
                print_event(s, entry, flags);
                out.extend_from_slice(s.as_bytes());
            }
            s.clear();
        }
        mode => print_other_mode(out, mode, flags, cpu, ts, entry),
    }
}

/// Linux's `print_event_fields`: the event's name and each of its own
/// fields by its type.
fn print_event_fields(out: &mut Vec<u8>, entry: &[u8]) {
    let ty = entry_type(entry);
    let Some(ev) = events::find_event_by_id(ty) else {
        // Linux reaches print_event_fields only for a known type.
        let _ = writeln!(Utf8Out(out), "Unknown type {ty}");
        return;
    };
    let fields: Vec<PrintField<'_>> = ev
        .fields()
        .iter()
        .map(|f| PrintField {
            type_name: &f.type_name,
            name: &f.name,
            offset: f.offset,
            size: f.size,
        })
        .collect();
    print_modes::print_event_fields(out, ty, ev.name(), &fields, entry);
}

/// `core::fmt` into a byte vector.
struct Utf8Out<'a>(&'a mut Vec<u8>);

impl Write for Utf8Out<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// An entry under `bin`, `hex` or `raw` (Linux's `print_bin_fmt`,
/// `print_hex_fmt`, `print_raw_fmt`): the context as numbers when
/// `context-info` is set, then the type's printer for the mode. Only the
/// fixed types have printers of their own (`function`, the wakeup
/// tracers' `context_switch` and `wakeup`, and in `raw` `trace_marker`'s
/// `print` and `raw_data`); every trace event (kprobes, tracepoints,
/// `kernel_stack`, ...) prints `type: N`, as on Linux.
fn print_other_mode(out: &mut Vec<u8>, mode: PrintMode, flags: u32, cpu: usize, ts: u64, entry: &[u8]) {
    use super::ftrace_function::TRACE_FN;
    use super::trace_sched_wakeup::{TRACE_CTX, TRACE_WAKE};
    let ty = entry_type(entry);
    let (pid, cpu) = (entry_pid(entry), cpu as u32);
    let ctx = flags & CONTEXT_INFO != 0;
    let ev = events::find_event_by_id(ty);
    let ctxsw = || CtxSwitch::from_entry(entry).filter(|_| ty == TRACE_CTX || ty == TRACE_WAKE);
    match mode {
        PrintMode::Raw => {
            if ctx {
                print_modes::raw_context(out, pid, cpu, ts);
            }
            let Some(ev) = ev else {
                print_modes::raw_unknown(out, ty);
                return;
            };
            match ty {
                TRACE_FN => print_modes::fn_raw(out, entry_word(entry, 8), entry_word(entry, 16)),
                super::TRACE_PRINT => print_modes::print_raw(out, entry_word(entry, 8), entry.get(16..).unwrap_or(&[])),
                // Linux's raw_data prints the same in both.
                super::raw_data::TRACE_RAW_DATA => {
                    let mut s = String::new();
                    ev.print(
                        &mut s,
                        &EventRecord {
                            entry,
                            trace_flags: flags,
                        },
                    );
                    out.extend_from_slice(s.as_bytes());
                }
                _ => match ctxsw() {
                    Some(c) => c.raw(out, ty == TRACE_WAKE),
                    None => print_modes::nop_print(out, ty),
                },
            }
        }
        PrintMode::Hex => {
            if ctx {
                print_modes::hex_context(out, pid, cpu, ts);
            }
            if ev.is_some() {
                match (ty, ctxsw()) {
                    (TRACE_FN, _) => print_modes::fn_hex(out, entry_word(entry, 8), entry_word(entry, 16)),
                    (_, Some(c)) => c.hex(out, ty == TRACE_WAKE),
                    _ => print_modes::nop_print(out, ty),
                }
            }
            out.push(b'\n');
        }
        PrintMode::Bin => {
            if ctx {
                print_modes::bin_context(out, pid, cpu, ts);
            }
            if ev.is_some() {
                match (ty, ctxsw()) {
                    (TRACE_FN, _) => print_modes::fn_bin(out, entry_word(entry, 8), entry_word(entry, 16)),
                    (_, Some(c)) => c.bin(out),
                    _ => print_modes::nop_print(out, ty),
                }
            }
        }
        PrintMode::Normal => {}
    }
}

/// Linux's `trace_find_mark`: the delay mark of a gap of `ns`.
fn trace_find_mark(ns: u64) -> char {
    const MARKS: [(u64, char); 6] = [
        (1_000_000_000, '$'),
        (100_000_000, '@'),
        (10_000_000, '*'),
        (1_000_000, '#'),
        (100_000, '!'),
        (10_000, '+'),
    ];
    MARKS.iter().find(|(v, _)| ns > *v).map_or(' ', |(_, c)| *c)
}

/// Formats one entry as a `trace` line in the latency format (Linux's
/// `trace_print_lat_context`): `comm-pid cpu flags time: event`, the time
/// relative to `time_start` and marked by the gap to the next entry
/// (`next_ts`); `bin`, `hex` and `raw` print as without it, and `fields`
/// replaces the event part, as Linux's `print_trace_line` does.
pub fn print_lat_entry(out: &mut Vec<u8>, cpu: usize, ts: u64, next_ts: u64, time_start: u64, entry: &[u8]) {
    let flags = options::trace_flags();
    let mode = print_mode(flags);
    if mode != PrintMode::Normal {
        print_other_mode(out, mode, flags, cpu, ts, entry);
        return;
    }
    let mut s = String::with_capacity(128);
    if flags & CONTEXT_INFO != 0 {
        let eflags = entry.get(2).copied().unwrap_or(0);
        let preempt = entry.get(3).copied().unwrap_or(0);
        let pid = entry_pid(entry);
        let comm = super::cmdlines::find(pid);
        let comm: String = comm.chars().take(8).collect();
        let _ = write!(s, "{comm:>8}-{pid:<7} {cpu:3}");
        lat_fmt(&mut s, eflags, preempt);
        let abs = ts.saturating_sub(time_start);
        let rel = next_ts.saturating_sub(ts);
        if super::clock::current().in_ns {
            let _ = write!(s, " {:4}us{}: ", abs / 1000, trace_find_mark(rel / 1000 * 1000));
        } else {
            let _ = write!(s, " {abs:4}: ");
        }
    }
    if flags & FIELDS != 0 {
        out.extend_from_slice(s.as_bytes());
        print_event_fields(out, entry);
    } else {
        print_event(&mut s, entry, flags);
        out.extend_from_slice(s.as_bytes());
    }
}

/// `##### CPU N buffer started ####`, which `trace` prints before the
/// first entry of each CPU but the first, when events were lost.
pub fn cpu_buffer_started(tr: &TraceArray, s: &mut String, cpu: usize) {
    if tr.is_set(ANNOTATE) {
        let _ = writeln!(s, "##### CPU {cpu} buffer started ####");
    }
}

/// `CPU:N [LOST n EVENTS]`, which `trace_pipe` prints where it lost some.
pub fn lost_events(s: &mut String, cpu: usize, lost: u64) {
    let _ = writeln!(s, "CPU:{cpu} [LOST {lost} EVENTS]");
}

/// `%ps`: a function's name alone (or the address in hex).
pub fn print_sym_short(s: &mut String, addr: usize) {
    match crate::kallsyms::lookup_addr(addr) {
        Some(sym) => s.push_str(sym.name),
        None => {
            let _ = write!(s, "0x{addr:x}");
        }
    }
}

/// A code address as Linux's `seq_print_ip_sym` prints it under the
/// `sym-offset` and `sym-addr` options: `name`, `name+0xoff/0xsize`, with
/// ` <addr>` after it for sym-addr; `0` for a null address.
pub fn seq_print_ip_sym(s: &mut String, addr: usize, trace_flags: u32) {
    if addr == 0 {
        s.push('0');
        return;
    }
    match crate::kallsyms::lookup_addr(addr) {
        Some(sym) if trace_flags & SYM_OFFSET != 0 => {
            let _ = write!(s, "{}+0x{:x}/0x{:x}", sym.name, sym.offset, sym.size);
        }
        Some(sym) => s.push_str(sym.name),
        None => {
            let _ = write!(s, "0x{addr:x}");
        }
    }
    if trace_flags & SYM_ADDR != 0 {
        let _ = write!(s, " <{addr:016x}>");
    }
}

/// `per_cpu/cpuN/stats` in Linux's format.
pub fn cpu_stats(tr: &TraceArray, cpu: usize) -> String {
    let st = tr.stats(cpu);
    let oldest = tr.with_buffer(cpu, |b| b.oldest_event_ts()).flatten().unwrap_or(0);
    let now = tr.clock_now();
    let mut s = format!(
        "entries: {}\noverrun: {}\ncommit overrun: {}\nbytes: {}\n",
        st.entries, st.overrun, st.commit_overrun, st.bytes
    );
    if tr.clock().in_ns {
        let (o, n) = (oldest / 1000, now / 1000);
        let _ = writeln!(s, "oldest event ts: {:5}.{:06}", o / 1_000_000, o % 1_000_000);
        let _ = writeln!(s, "now ts: {:5}.{:06}", n / 1_000_000, n % 1_000_000);
    } else {
        let _ = writeln!(s, "oldest event ts: {oldest}");
        let _ = writeln!(s, "now ts: {now}");
    }
    let _ = write!(
        s,
        "dropped events: {}\nread events: {}\n",
        st.dropped_events, st.read_events
    );
    s
}
