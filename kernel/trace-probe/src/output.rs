//! What users read about a probe: its `format` fields and `print fmt`,
//! the text of a hit in `trace`, and its definition in `kprobe_events`.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::types::PrintKind;
use crate::{ProbeArg, ProbeDef, ProbeLocation};

/// One field of the event's `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The C type as Linux prints it (`unsigned long`, `u64`,
    /// `__data_loc char[]`, `u8[4]`).
    pub type_name: String,
    /// Its name.
    pub name: String,
    /// Offset in the record (after the 8-byte common header).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// `signed:` in the format file.
    pub signed: bool,
}

impl Field {
    /// Its line in the `format` file, as Linux's `f_show` prints it: a
    /// fixed-size array shows as `TYPE NAME[]`.
    pub fn format_line(&self) -> String {
        let (ty, suffix) = match self.type_name.find('[') {
            Some(i) if !self.type_name.starts_with("__data_loc") => (&self.type_name[..i], "[]"),
            _ => (self.type_name.as_str(), ""),
        };
        format!(
            "\tfield:{ty} {}{suffix};\toffset:{};\tsize:{};\tsigned:{};",
            self.name,
            self.offset,
            self.size,
            u8::from(self.signed)
        )
    }
}

/// Address-to-symbol lookups for printing (kallsyms).
pub trait Symbolizer {
    /// The symbol containing `addr`: its name, `addr`'s offset in it and
    /// its size.
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)>;
}

/// Writes `addr` as Linux's `%pS` (`sprint_symbol`): `name+0xoff/0xsize`,
/// or `0x<hex>` when no symbol contains it. Cut to `out`'s length; returns
/// the bytes written. For [`crate::FetchEnv::sprint_symbol`].
///
/// Does not allocate, so a [`crate::FetchEnv`] may call it from a probe.
pub fn sprint_symbol(sym: &dyn Symbolizer, addr: u64, out: &mut [u8]) -> usize {
    let mut w = SliceWriter { buf: out, len: 0 };
    let _ = match sym.lookup(addr) {
        Some((name, off, size)) => write!(w, "{name}+{off:#x}/{size:#x}"),
        None => write!(w, "{addr:#x}"),
    };
    w.len
}

/// Formats into a byte slice, cutting what does not fit.
struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// `seq_print_ip_sym` / `trace_seq_print_sym`.
fn print_ip_sym(out: &mut Vec<u8>, sym: &dyn Symbolizer, ip: u64, with_offset: bool) {
    if ip == 0 {
        out.push(b'0');
        return;
    }
    match sym.lookup(ip) {
        Some((name, off, size)) if !name.is_empty() => {
            out.extend_from_slice(name.as_bytes());
            if with_offset {
                out.extend_from_slice(format!("+{off:#x}/{size:#x}").as_bytes());
            }
        }
        _ if with_offset => out.extend_from_slice(format!("{ip:#x}").as_bytes()),
        _ => out.extend_from_slice(format!("0x{ip:08x}").as_bytes()),
    }
}

fn rd(rec: &[u8], at: usize, n: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = at.checked_add(n).and_then(|end| rec.get(at..end)) {
        b[..n].copy_from_slice(s);
    }
    u64::from_le_bytes(b)
}

struct Out<'a>(&'a mut Vec<u8>);

impl Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

impl ProbeArg {
    /// One value as Linux's `print_type_*` prints it.
    fn print_one(&self, out: &mut Vec<u8>, rec: &[u8], at: usize, sym: &dyn Symbolizer) {
        let n = usize::from(self.ty.size);
        let v = rd(rec, at, n);
        let mut o = Out(out);
        let _ = match self.ty.print {
            PrintKind::Unsigned => write!(o, "{v}"),
            PrintKind::Hex => write!(o, "0x{v:x}"),
            PrintKind::Signed => {
                let shift = 64 - 8 * n as u32;
                write!(o, "{}", ((v << shift) as i64) >> shift)
            }
            PrintKind::Char => {
                o.0.extend_from_slice(&[b'\'', v as u8, b'\'']);
                Ok(())
            }
            PrintKind::Symbol => {
                let mut buf = [0u8; crate::KSYM_SYMBOL_LEN];
                let len = sprint_symbol(sym, v, &mut buf);
                o.0.extend_from_slice(&buf[..len]);
                Ok(())
            }
            PrintKind::String => {
                let dl = v as u32;
                if dl >> 16 == 0 {
                    o.0.extend_from_slice(b"(fault)");
                } else {
                    let start = (dl & 0xffff) as usize;
                    let s = rec.get(start..).unwrap_or(&[]);
                    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
                    o.0.push(b'"');
                    o.0.extend_from_slice(&s[..end]);
                    o.0.push(b'"');
                }
                Ok(())
            }
        };
    }
}

impl ProbeDef {
    /// The probe's location as `kprobe_events` shows it (and as `-:`
    /// matches it): `SYM`, `SYM+OFFS` or the address.
    pub fn location_text(&self) -> String {
        match &self.location {
            ProbeLocation::Symbol { name, offset: 0 } => name.clone(),
            ProbeLocation::Symbol { name, offset } => format!("{name}+{offset}"),
            // Linux prints a hashed pointer here (%p); this kernel shows
            // the address itself in the same width.
            ProbeLocation::Address(a) => format!("0x{a:016x}"),
        }
    }

    /// The line `kprobe_events` and `dynamic_events` show (without the
    /// newline): `p:kprobes/myprobe vfs_read arg1=%x0`, `r10:...`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        match &self.kind {
            crate::ProbeKind::Eprobe { system, event, .. } => {
                // Linux does not show the filter.
                let _ = write!(s, "e:{}/{} {system}.{event}", self.group, self.event);
                for a in &self.args {
                    let _ = write!(s, " {}={}", a.name, a.comm);
                }
                return s;
            }
            crate::ProbeKind::Tprobe { tracepoint } => {
                let _ = write!(s, "t:{}/{} {tracepoint}", self.group, self.event);
                for a in &self.args {
                    let _ = write!(s, " {}={}", a.name, a.comm);
                }
                return s;
            }
            crate::ProbeKind::Fprobe => {
                s.push('f');
                if self.is_return && self.maxactive != 0 {
                    let _ = write!(s, "{}", self.maxactive);
                }
                let ret = if self.is_return { "%return" } else { "" };
                let _ = write!(s, ":{}/{} {}{ret}", self.group, self.event, self.location_text());
                for a in &self.args {
                    let _ = write!(s, " {}={}", a.name, a.comm);
                }
                return s;
            }
            crate::ProbeKind::Kprobe => {}
        }
        s.push(if self.is_return { 'r' } else { 'p' });
        if self.is_return && self.maxactive != 0 {
            let _ = write!(s, "{}", self.maxactive);
        }
        let _ = write!(s, ":{}/{} {}", self.group, self.event, self.location_text());
        for a in &self.args {
            let _ = write!(s, " {}={}", a.name, a.comm);
        }
        s
    }

    /// The event's own fields for its `format` file, after the common
    /// ones: the probe's addresses, then the arguments.
    pub fn fields(&self) -> Vec<Field> {
        let mut v = Vec::with_capacity(self.args.len() + 2);
        let ul = |name: &str, offset| Field {
            type_name: String::from("unsigned long"),
            name: String::from(name),
            offset,
            size: 8,
            signed: false,
        };
        if matches!(self.kind, crate::ProbeKind::Eprobe { .. }) {
            // An event probe's record has only its arguments.
        } else if self.is_return {
            v.push(ul("__probe_func", 8));
            v.push(ul("__probe_ret_ip", 16));
        } else {
            v.push(ul("__probe_ip", 8));
        }
        let base = self.args_offset();
        for a in &self.args {
            v.push(Field {
                type_name: a.fmttype(),
                name: a.name.clone(),
                offset: base + a.offset as usize,
                size: a.field_size(),
                signed: a.ty.is_signed,
            });
        }
        v
    }

    /// What follows `print fmt: ` in the `format` file
    /// (`traceprobe_set_print_fmt`).
    pub fn print_fmt(&self) -> String {
        let (fmt, args) = if matches!(self.kind, crate::ProbeKind::Eprobe { .. }) {
            ("", "")
        } else if self.is_return {
            ("(%lx <- %lx)", ", REC->__probe_func, REC->__probe_ret_ip")
        } else {
            ("(%lx)", ", REC->__probe_ip")
        };
        let mut s = String::new();
        let _ = write!(s, "\"{fmt}");
        for a in &self.args {
            let _ = write!(s, " {}=", a.name);
            if a.count != 0 {
                s.push('{');
                for j in 0..a.count {
                    if j > 0 {
                        s.push(',');
                    }
                    s.push_str(a.ty.fmt);
                }
                s.push('}');
            } else {
                s.push_str(a.ty.fmt);
            }
        }
        let _ = write!(s, "\"{args}");
        for a in &self.args {
            if a.count != 0 {
                for j in 0..a.count {
                    if a.ty.is_string {
                        let _ = write!(s, ", __get_str({}[{j}])", a.name);
                    } else {
                        let _ = write!(s, ", REC->{}[{j}]", a.name);
                    }
                }
            } else if a.ty.is_string {
                let _ = write!(s, ", __get_str({})", a.name);
            } else {
                let _ = write!(s, ", REC->{}", a.name);
            }
        }
        s
    }

    /// The text of one hit after `EVENT: ` in `trace`:
    /// `(vfs_read+0x4/0x20) arg1=0x5 name="abc"`, or for a return probe
    /// `(caller+0x10/0x40 <- vfs_read) ...`. `rec` is the whole record as
    /// [`ProbeDef::fetch`] wrote it (common header included); a short one
    /// prints zeros for what is missing, never panics.
    pub fn print(&self, rec: &[u8], sym: &dyn Symbolizer, out: &mut Vec<u8>) {
        out.push(b'(');
        if let crate::ProbeKind::Eprobe { system, event, .. } = &self.kind {
            out.extend_from_slice(system.as_bytes());
            out.push(b'.');
            out.extend_from_slice(event.as_bytes());
        } else if self.is_return {
            print_ip_sym(out, sym, rd(rec, 16, 8), true);
            out.extend_from_slice(b" <- ");
            print_ip_sym(out, sym, rd(rec, 8, 8), false);
        } else {
            print_ip_sym(out, sym, rd(rec, 8, 8), true);
        }
        out.push(b')');
        let base = self.args_offset();
        for a in &self.args {
            out.push(b' ');
            out.extend_from_slice(a.name.as_bytes());
            out.push(b'=');
            let at = base + a.offset as usize;
            if a.count == 0 {
                a.print_one(out, rec, at, sym);
                continue;
            }
            out.push(b'{');
            for j in 0..a.count as usize {
                a.print_one(out, rec, at + j * usize::from(a.ty.size), sym);
                out.push(if j + 1 == a.count as usize { b'}' } else { b',' });
            }
        }
    }
}
