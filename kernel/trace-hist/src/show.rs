//! The `hist` file's text, as Linux's `hist_show`: for each hist trigger
//! of the event, a header with the trigger's line, one line per entry
//! sorted by the sort keys (`{ key: value, ... } hitcount: N val: N`),
//! and the totals.

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt::Write as _;
use core::sync::atomic::Ordering as AtomicOrdering;

use crate::action::{ActionKind, Handler};
use crate::field::{HistField, Modifier, Source};
use crate::hist::{HistTrigger, KeyField, SortField, SortKey};
use crate::map::Elt;
use crate::HIST_STACKTRACE_DEPTH;

/// What the `hist` file needs from the kernel to show keys.
pub trait HistSymbols {
    /// The symbol containing `addr`: name, offset in it, its size.
    fn symbol(&self, addr: u64) -> Option<(String, u64, u64)>;
    /// The name of system call `nr` (Linux's `get_syscall_name`, as
    /// `sys_read`).
    fn syscall_name(&self, nr: u64) -> Option<String>;
}

/// No symbols, no system call names.
pub struct NoHistSymbols;

impl HistSymbols for NoHistSymbols {
    fn symbol(&self, _addr: u64) -> Option<(String, u64, u64)> {
        None
    }
    fn syscall_name(&self, _nr: u64) -> Option<String> {
        None
    }
}

/// `%ps`: the symbol's name, or the address.
fn ps(out: &mut String, sym: &dyn HistSymbols, addr: u64) {
    match sym.symbol(addr) {
        Some((name, _, _)) => out.push_str(&name),
        None => {
            let _ = write!(out, "0x{addr:x}");
        }
    }
}

/// `%pS`: `name+0xoff/0xsize`, or the address.
fn p_s(out: &mut String, sym: &dyn HistSymbols, addr: u64) {
    match sym.symbol(addr) {
        Some((name, off, size)) => {
            let _ = write!(out, "{name}+0x{off:x}/0x{size:x}");
        }
        None => {
            let _ = write!(out, "0x{addr:x}");
        }
    }
}

fn pad_to(out: &mut String, from: usize, width: usize) {
    while out.len() - from < width {
        out.push(' ');
    }
}

/// Where a printed key comes from: an element, or a key saved apart
/// (a snapshot's).
trait KeySource {
    fn key_word(&self, i: usize) -> u64;
    fn comm(&self, out: &mut Vec<u8>);
}

impl KeySource for Elt<'_> {
    fn key_word(&self, i: usize) -> u64 {
        Elt::key_word(self, i)
    }
    fn comm(&self, out: &mut Vec<u8>) {
        Elt::comm(self, out);
    }
}

impl KeySource for [u64] {
    fn key_word(&self, i: usize) -> u64 {
        self.get(i).copied().unwrap_or(0)
    }
    fn comm(&self, _out: &mut Vec<u8>) {}
}

/// The bytes of a string key, up to its NUL.
fn key_string(elt: &(impl KeySource + ?Sized), k: &KeyField) -> Vec<u8> {
    let mut b = Vec::new();
    for i in k.offset as usize..(k.offset + k.size) as usize {
        let w = elt.key_word(i / 8);
        b.push(w.to_le_bytes().get(i % 8).copied().unwrap_or(0));
    }
    if let Some(n) = b.iter().position(|c| *c == 0) {
        b.truncate(n);
    }
    b
}

fn key_u64(elt: &(impl KeySource + ?Sized), k: &KeyField) -> u64 {
    elt.key_word(k.offset as usize / 8)
}

/// Linux's `hist_trigger_print_key`.
fn print_key(out: &mut String, t: &HistTrigger, elt: &(impl KeySource + ?Sized), sym: &dyn HistSymbols) {
    out.push_str("{ ");
    let mut multiline = false;
    for (i, k) in t.data().keys.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let name = k.field.name();
        let uval = key_u64(elt, k);
        match k.field.modifier {
            _ if matches!(k.field.src, Source::Stacktrace) => {
                out.push_str("common_stacktrace:\n");
                for j in 0..HIST_STACKTRACE_DEPTH {
                    let a = elt.key_word(k.offset as usize / 8 + j);
                    if a == 0 {
                        break;
                    }
                    out.push_str("         ");
                    p_s(out, sym, a);
                    out.push('\n');
                }
                multiline = true;
            }
            Modifier::Hex => {
                let _ = write!(out, "{name}: {uval:x}");
            }
            Modifier::Sym => {
                let _ = write!(out, "{name}: [{uval:x}] ");
                let at = out.len();
                ps(out, sym, uval);
                pad_to(out, at, 45);
            }
            Modifier::SymOffset => {
                let _ = write!(out, "{name}: [{uval:x}] ");
                let at = out.len();
                p_s(out, sym, uval);
                pad_to(out, at, 55);
            }
            Modifier::Execname => {
                let mut comm = Vec::new();
                elt.comm(&mut comm);
                let comm = String::from_utf8_lossy(&comm);
                let _ = write!(out, "{name}: {comm:<16}[{uval:10}]");
            }
            Modifier::Syscall => {
                let sc = sym
                    .syscall_name(uval)
                    .unwrap_or_else(|| String::from("unknown_syscall"));
                let _ = write!(out, "{name}: {sc:<30}[{uval:3}]");
            }
            Modifier::Log2 => {
                let _ = write!(out, "{name}: ~ 2^{uval:<2}");
            }
            Modifier::Buckets(b) => {
                let _ = write!(out, "{name}: ~ {uval}-{}", uval.wrapping_add(b).wrapping_sub(1));
            }
            _ if k.field.is_string => {
                let s = key_string(elt, k);
                let s = String::from_utf8_lossy(&s);
                let _ = write!(out, "{name}: {s:<50}");
            }
            _ => {
                let _ = write!(out, "{name}: {uval:10}");
            }
        }
    }
    if !multiline {
        out.push(' ');
    }
    out.push('}');
}

/// Linux's `__get_percentage`: hundredths of a percent, `u32::MAX` for
/// a share of nothing.
fn percentage(val: u64, total: u64) -> u32 {
    if total == 0 {
        return if val != 0 { u32::MAX } else { 0 };
    }
    if val < u64::MAX / 10000 {
        return (val * 10000 / total) as u32;
    }
    let t = total / 10000;
    if t == 0 {
        return if val != 0 { u32::MAX } else { 0 };
    }
    (val / t) as u32
}

/// Linux's `hist_trigger_print_val`.
fn print_val(out: &mut String, name: &str, f: Option<&HistField>, val: u64, total: u64, max: u64) {
    match f.map(|f| f.modifier) {
        Some(Modifier::Percent) => {
            let pc = percentage(val, total);
            if pc == u32::MAX {
                let _ = write!(out, " {name} (%):[ERROR]");
            } else {
                let _ = write!(out, " {name} (%): {:3}.{:02}", pc / 100, pc % 100);
            }
        }
        Some(Modifier::Graph) => {
            let pc = percentage(val, max);
            let mut bar = String::new();
            if pc == u32::MAX {
                bar.push_str("[ERROR]");
            } else {
                let len = (pc as usize * 20) / 10000;
                for i in 0..20 {
                    bar.push(if i < len { '#' } else { ' ' });
                }
            }
            let _ = write!(out, " {name}: {bar:>20}");
        }
        Some(Modifier::Hex) => {
            let _ = write!(out, " {name}: {val:10x}");
        }
        _ => {
            let _ = write!(out, " {name}: {val:10}");
        }
    }
}

/// Compares two elements by one key field as Linux's `tracing_map_cmp_*`.
fn cmp_key(a: &[u64], b: &[u64], k: &KeyField) -> Ordering {
    if matches!(k.field.src, Source::Stacktrace) {
        return Ordering::Equal;
    }
    if k.field.is_string {
        return key_string(a, k).cmp(&key_string(b, k));
    }
    let (x, y) = (key_u64(a, k), key_u64(b, k));
    // The field's own width and sign (keys are stored widened).
    let (size, signed) = match &k.field.src {
        Source::Field { size, signed, .. } => (*size, *signed),
        _ => (8, k.field.is_signed),
    };
    if signed {
        let sh = 64 - 8 * size.clamp(1, 8);
        ((x << sh) as i64 >> sh).cmp(&((y << sh) as i64 >> sh))
    } else {
        let mask = if size >= 8 { u64::MAX } else { (1u64 << (8 * size)) - 1 };
        (x & mask).cmp(&(y & mask))
    }
}

/// An element with its key and sums read once: hits go on while the
/// file is read, and a sort whose comparisons changed their answer midway
/// would be left inconsistent (Rust's sort then panics).
struct SortEntry<'a> {
    elt: Elt<'a>,
    key: Vec<u64>,
    sums: Vec<u64>,
}

impl<'a> SortEntry<'a> {
    fn new(elt: Elt<'a>, key_words: usize, n_sums: usize) -> SortEntry<'a> {
        SortEntry {
            key: (0..key_words).map(|i| elt.key_word(i)).collect(),
            sums: (0..n_sums).map(|i| elt.sum(i)).collect(),
            elt,
        }
    }
}

fn cmp_by(a: &SortEntry<'_>, b: &SortEntry<'_>, sk: &SortKey, keys: &[KeyField]) -> Ordering {
    let o = match sk.field {
        SortField::Sum(i) => a.sums.get(i).cmp(&b.sums.get(i)),
        SortField::Key(i) => keys.get(i).map_or(Ordering::Equal, |k| cmp_key(&a.key, &b.key, k)),
    };
    if sk.descending {
        o.reverse()
    } else {
        o
    }
}

/// One trigger's part of the file (Linux's `hist_trigger_show`).
fn hist_trigger_show(out: &mut String, t: &HistTrigger, sym: &dyn HistSymbols) {
    out.push_str("# event histogram\n#\n# trigger info: ");
    out.push_str(&t.line());
    out.push_str("#\n\n");
    let d = t.data();
    let layout = t.map().layout();
    let mut sorted: Vec<SortEntry<'_>> = t
        .map()
        .elts()
        .map(|e| SortEntry::new(e, layout.key_words, layout.n_sums))
        .collect();
    sorted.sort_by(|a, b| {
        let mut o = Ordering::Equal;
        for sk in &d.sort_keys {
            o = o.then_with(|| cmp_by(a, b, sk, &d.keys));
        }
        o.then_with(|| a.elt.index().cmp(&b.elt.index()))
    });
    let elts: Vec<Elt<'_>> = sorted.into_iter().map(|s| s.elt).collect();
    let mut totals = Vec::new();
    let mut maxes = Vec::new();
    for i in 0..d.vals.len() {
        totals.push(elts.iter().map(|e| e.sum(i)).fold(0u64, u64::wrapping_add));
        maxes.push(elts.iter().map(|e| e.sum(i)).max().unwrap_or(0));
    }
    for e in &elts {
        print_key(out, t, e, sym);
        if !d.no_hitcount {
            print_val(out, "hitcount", None, e.sum(0), 0, 0);
        }
        for (i, v) in d.vals.iter().enumerate().skip(1) {
            if matches!(v.src, Source::Expr { .. }) {
                continue;
            }
            out.push(' ');
            let (total, max) = (totals.get(i).copied().unwrap_or(0), maxes.get(i).copied().unwrap_or(0));
            print_val(out, v.name(), Some(v), e.sum(i), total, max);
        }
        print_actions(out, t, e);
        out.push('\n');
    }
    track_data_snapshot_print(out, t, sym);
    let _ = write!(
        out,
        "\nTotals:\n    Hits: {}\n    Entries: {}\n    Dropped: {}\n",
        t.map().hits(),
        elts.len(),
        t.map().drops()
    );
}

/// Linux's `print_actions` with `track_data_print`: an element's
/// tracked maximum or last value, and the fields `save()` kept.
fn print_actions(out: &mut String, t: &HistTrigger, e: &Elt<'_>) {
    for a in t.actions() {
        if a.spec.kind == ActionKind::Snapshot {
            continue;
        }
        let label = match a.spec.handler {
            Handler::OnMax => "max",
            Handler::OnChange => "changed",
            Handler::OnMatch { .. } => continue,
        };
        let _ = write!(out, "\n\t{label}: {:10}", e.extra(a.track_slot));
        for sv in t.save_fields() {
            let name = sv.field.name();
            if sv.field.is_string {
                let mut b = Vec::new();
                for w in 0..sv.words {
                    b.extend_from_slice(&e.extra(sv.slot + w).to_le_bytes());
                }
                if let Some(n) = b.iter().position(|c| *c == 0) {
                    b.truncate(n);
                }
                let _ = write!(out, "  {name}: {:<32}", String::from_utf8_lossy(&b));
            } else {
                let _ = write!(out, "  {name}: {:10}", e.extra(sv.slot));
            }
        }
    }
}

/// Linux's `track_data_snapshot_print`: what the last conditional
/// snapshot was taken for.
fn track_data_snapshot_print(out: &mut String, t: &HistTrigger, sym: &dyn HistSymbols) {
    for a in t.actions() {
        let Some(track) = &a.snapshot else {
            continue;
        };
        if !track.updated.load(AtomicOrdering::Acquire) {
            continue;
        }
        let h = if a.spec.handler == Handler::OnMax {
            "onmax"
        } else {
            "onchange"
        };
        out.push_str("\nSnapshot taken (see tracing/snapshot).  Details:\n");
        let _ = write!(
            out,
            "\ttriggering value {{ {h}({}) }}: {:10}",
            a.spec.var_str,
            track.track_val.load(AtomicOrdering::Relaxed)
        );
        out.push_str("\ttriggered by event with key: ");
        let key: Vec<u64> = track.key.iter().map(|w| w.load(AtomicOrdering::Relaxed)).collect();
        print_key(out, t, key.as_slice(), sym);
        out.push('\n');
        return;
    }
}

/// The `hist` file of an event with these hist triggers (oldest first).
pub fn hist_show(hists: &[&HistTrigger], sym: &dyn HistSymbols) -> String {
    let mut out = String::new();
    for (n, t) in hists.iter().enumerate() {
        if n > 0 {
            out.push_str("\n\n");
        }
        hist_trigger_show(&mut out, t, sym);
    }
    out
}
