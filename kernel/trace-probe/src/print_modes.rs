//! The other ways `trace` and `trace_pipe` print an entry, chosen by the
//! `bin`, `hex`, `raw` and `fields` options (Linux 6.12's `print_bin_fmt`,
//! `print_hex_fmt`, `print_raw_fmt` in `trace.c`, the `raw`/`hex`/`binary`
//! functions of the fixed entry types and `print_event_fields` in
//! `trace_output.c`), without the CPU: bytes in, bytes out.
//!
//! Output is bytes, not text: `bin` writes the fields as they are in
//! memory, and `fields` prints a one-byte field that is a Latin-1
//! printable character (the kernel's `isprint`) as that byte.

use alloc::vec::Vec;
use core::fmt::Write;

/// Which printer an entry goes to, in Linux's order of precedence
/// (`print_trace_line`: bin, then hex, then raw, then the normal print).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintMode {
    /// `bin`: the context and fields in binary.
    Bin,
    /// `hex`: the context and fields as hex words.
    Hex,
    /// `raw`: the context and fields as plain numbers.
    Raw,
    /// The normal print (which `fields` changes).
    Normal,
}

impl PrintMode {
    /// The printer for options `bin`, `hex` and `raw`.
    pub fn from_options(bin: bool, hex: bool, raw: bool) -> PrintMode {
        if bin {
            PrintMode::Bin
        } else if hex {
            PrintMode::Hex
        } else if raw {
            PrintMode::Raw
        } else {
            PrintMode::Normal
        }
    }
}

/// Linux's `__TRACE_LAST_TYPE`: types up to it are the fixed entry types
/// (`TRACE_FN` = 1 ... `TRACE_FUNC_REPEATS` = 19).
pub const TRACE_LAST_TYPE: u16 = 20;

/// A `core::fmt` sink over a byte vector.
struct Bytes<'a>(&'a mut Vec<u8>);

impl Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn put(out: &mut Vec<u8>, args: core::fmt::Arguments<'_>) {
    let _ = Bytes(out).write_fmt(args);
}

/// Linux's `trace_seq_putmem_hex` of a little-endian value's bytes: each
/// group of up to eight bytes as hex digits, most significant first, and a
/// space.
pub fn seq_put_hex_field(out: &mut Vec<u8>, mem: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for chunk in mem.chunks(8) {
        for &b in chunk.iter().rev() {
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        }
        out.push(b' ');
    }
}

/// The context `raw` puts before an entry (`context-info` on):
/// `pid cpu ts `.
pub fn raw_context(out: &mut Vec<u8>, pid: i32, cpu: u32, ts: u64) {
    put(out, format_args!("{pid} {cpu} {ts} "));
}

/// The context `hex` puts before an entry: pid, CPU (four bytes each) and
/// time (eight) as hex fields.
pub fn hex_context(out: &mut Vec<u8>, pid: i32, cpu: u32, ts: u64) {
    seq_put_hex_field(out, &pid.to_le_bytes());
    seq_put_hex_field(out, &cpu.to_le_bytes());
    seq_put_hex_field(out, &ts.to_le_bytes());
}

/// The context `bin` puts before an entry: pid, CPU and time as they are
/// in memory.
pub fn bin_context(out: &mut Vec<u8>, pid: i32, cpu: u32, ts: u64) {
    out.extend_from_slice(&pid.to_le_bytes());
    out.extend_from_slice(&cpu.to_le_bytes());
    out.extend_from_slice(&ts.to_le_bytes());
}

/// Linux's `trace_nop_print`: what an entry type without its own printer
/// in a mode prints there (every trace event's `raw`, `hex` and `binary`).
pub fn nop_print(out: &mut Vec<u8>, ty: u16) {
    put(out, format_args!("type: {ty}\n"));
}

/// What `raw` prints for an entry of no registered type.
pub fn raw_unknown(out: &mut Vec<u8>, ty: u16) {
    put(out, format_args!("{ty} ?\n"));
}

/// `TRACE_FN` (`ftrace/function`) in `raw`: `ip parent_ip` in hex.
pub fn fn_raw(out: &mut Vec<u8>, ip: u64, parent_ip: u64) {
    put(out, format_args!("{ip:x} {parent_ip:x}\n"));
}

/// `TRACE_FN` in `hex`.
pub fn fn_hex(out: &mut Vec<u8>, ip: u64, parent_ip: u64) {
    seq_put_hex_field(out, &ip.to_le_bytes());
    seq_put_hex_field(out, &parent_ip.to_le_bytes());
}

/// `TRACE_FN` in `bin`.
pub fn fn_bin(out: &mut Vec<u8>, ip: u64, parent_ip: u64) {
    out.extend_from_slice(&ip.to_le_bytes());
    out.extend_from_slice(&parent_ip.to_le_bytes());
}

/// `TRACE_PRINT` (`trace_marker`) in `raw`: `# ip text` (the text keeps
/// its own newline).
pub fn print_raw(out: &mut Vec<u8>, ip: u64, buf: &[u8]) {
    put(out, format_args!("# {ip:x} "));
    let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    out.extend_from_slice(&buf[..n]);
}

/// A `TRACE_CTX` or `TRACE_WAKE` entry (`struct ctx_switch_entry`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtxSwitch {
    /// The task switched from, or the waker.
    pub prev_pid: u32,
    /// Its priority.
    pub prev_prio: u8,
    /// Its state index (`task_index_to_char`).
    pub prev_state: u8,
    /// The CPU of the task switched to or woken.
    pub next_cpu: u32,
    /// The task switched to, or woken.
    pub next_pid: u32,
    /// Its priority.
    pub next_prio: u8,
    /// Its state index.
    pub next_state: u8,
}

/// Linux's `task_index_to_char`: a state index as `RSDTtXZPI`.
pub fn task_index_to_char(state: u8) -> u8 {
    b"RSDTtXZPI".get(usize::from(state)).copied().unwrap_or(b'?')
}

impl CtxSwitch {
    /// Reads one from an entry (fields after the 8-byte common header, as
    /// this kernel lays them out); None if the entry is short.
    pub fn from_entry(e: &[u8]) -> Option<CtxSwitch> {
        let word = |o: usize| e.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        Some(CtxSwitch {
            prev_pid: word(8)?,
            next_pid: word(12)?,
            next_cpu: word(16)?,
            prev_prio: *e.get(20)?,
            prev_state: *e.get(21)?,
            next_prio: *e.get(22)?,
            next_state: *e.get(23)?,
        })
    }

    /// `raw` (Linux's `trace_ctxwake_raw`): a wakeup shows `+` for the
    /// waker's state.
    pub fn raw(&self, out: &mut Vec<u8>, wake: bool) {
        let s = if wake {
            b'+'
        } else {
            task_index_to_char(self.prev_state)
        };
        put(
            out,
            format_args!(
                "{} {} {} {} {} {} {}\n",
                self.prev_pid,
                self.prev_prio,
                char::from(s),
                self.next_cpu,
                self.next_pid,
                self.next_prio,
                char::from(task_index_to_char(self.next_state))
            ),
        );
    }

    /// `hex` (Linux's `trace_ctxwake_hex`): the state characters as Linux
    /// declares them, the first a `char`, the second an `int`.
    pub fn hex(&self, out: &mut Vec<u8>, wake: bool) {
        let s = if wake {
            b'+'
        } else {
            task_index_to_char(self.prev_state)
        };
        let t = u32::from(task_index_to_char(self.next_state));
        seq_put_hex_field(out, &self.prev_pid.to_le_bytes());
        seq_put_hex_field(out, &[self.prev_prio]);
        seq_put_hex_field(out, &[s]);
        seq_put_hex_field(out, &self.next_cpu.to_le_bytes());
        seq_put_hex_field(out, &self.next_pid.to_le_bytes());
        seq_put_hex_field(out, &[self.next_prio]);
        seq_put_hex_field(out, &t.to_le_bytes());
    }

    /// `bin` (Linux's `trace_ctxwake_bin`): the fields in Linux's order.
    pub fn bin(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.prev_pid.to_le_bytes());
        out.push(self.prev_prio);
        out.push(self.prev_state);
        out.extend_from_slice(&self.next_cpu.to_le_bytes());
        out.extend_from_slice(&self.next_pid.to_le_bytes());
        out.push(self.next_prio);
        out.push(self.next_state);
    }
}

/// How `fields` prints a field, from its C type (Linux's
/// `filter_assign_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterType {
    /// `__data_loc char[]`: offset and length in the entry.
    DynString,
    /// `__rel_loc char[]`: the same, relative to the field's end.
    RelDynString,
    /// `char NAME[N]`.
    StaticString,
    /// `char *`, `const char *`: a pointer to a string.
    PtrString,
    /// A `__data_loc cpumask_t`.
    Cpumask,
    /// Anything else: a number of 1, 2, 4 or 8 bytes, or a `__data_loc`
    /// or `__rel_loc` array of bytes.
    Other,
}

/// Linux's `filter_assign_type` of a full C type (`char[16]`, not
/// `char` with `[16]` on the name).
pub fn filter_assign_type(ty: &str) -> FilterType {
    if ty.contains("__data_loc") {
        if ty.contains("char") {
            return FilterType::DynString;
        }
        if ty.contains("cpumask_t") {
            return FilterType::Cpumask;
        }
    }
    if ty.contains("__rel_loc") && ty.contains("char") {
        return FilterType::RelDynString;
    }
    if ty.contains('[') && ty.contains("char") {
        return FilterType::StaticString;
    }
    if ty == "char *" || ty == "const char *" {
        return FilterType::PtrString;
    }
    FilterType::Other
}

/// One field of an event as `fields` reads it.
#[derive(Clone, Copy, Debug)]
pub struct PrintField<'a> {
    /// C type as the `format` file declares it, less any `[N]` (which is
    /// on the name).
    pub type_name: &'a str,
    /// Name, perhaps with `[N]` (`prev_comm[16]`, `buf[]`).
    pub name: &'a str,
    /// Offset in the entry.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// The kernel's `isprint` (`lib/ctype.c`): ASCII 32..=126 and Latin-1
/// 160..=255.
pub fn kernel_isprint(c: u8) -> bool {
    matches!(c, 32..=126 | 160..=255)
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0, |v, &x| (v << 8) | u64::from(x))
}

/// Linux's `print_array`: a dynamic array's bytes, `%02x` joined by `,`.
fn print_array(out: &mut Vec<u8>, entry: &[u8], loc: u32, rel_base: Option<usize>) {
    let (mut offset, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
    if let Some(base) = rel_base {
        offset += base;
    }
    let Some(bytes) = entry.get(offset..offset + len) else {
        out.extend_from_slice(b"<OVERFLOW>");
        return;
    };
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put(out, format_args!("{b:02x}"));
    }
}

/// `%.*s` of `bytes`: up to the first NUL.
fn put_cstr(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    out.extend_from_slice(&bytes[..n]);
}

/// Linux's `print_event_fields` for an event of type `ty` named `name`
/// (`fields` on): `name:` then ` field=value` for each of its own fields
/// in `format` order, and a newline. The fixed entry types (up to
/// [`TRACE_LAST_TYPE`]) print `UNKNOWN TYPE N`, as Linux 6.12 does (its
/// search of the event list stops at the first event of a later type).
pub fn print_event_fields(out: &mut Vec<u8>, ty: u16, name: &str, fields: &[PrintField<'_>], entry: &[u8]) {
    if ty <= TRACE_LAST_TYPE {
        put(out, format_args!("UNKNOWN TYPE {ty}\n"));
        return;
    }
    put(out, format_args!("{name}:"));
    if fields.is_empty() {
        out.extend_from_slice(b"No fields found\n");
        return;
    }
    for f in fields {
        let (fname, dims) = match f.name.find('[') {
            Some(i) => (&f.name[..i], &f.name[i..]),
            None => (f.name, ""),
        };
        put(out, format_args!(" {fname}="));
        let Some(pos) = entry.get(f.offset..f.offset + f.size) else {
            out.extend_from_slice(b"<OVERFLOW>");
            continue;
        };
        let full_type = alloc::format!("{}{dims}", f.type_name);
        let loc = || pos.get(..4).map_or(0, |b| le(b) as u32);
        match filter_assign_type(&full_type) {
            // A `comm` field is `char[16]`: both print the bytes.
            FilterType::StaticString => put_cstr(out, pos),
            FilterType::DynString | FilterType::RelDynString => {
                let l = loc();
                let (mut offset, len) = ((l & 0xffff) as usize, (l >> 16) as usize);
                if filter_assign_type(&full_type) == FilterType::RelDynString {
                    offset += f.offset + 4;
                }
                match entry.get(offset..offset + len) {
                    Some(s) => put_cstr(out, s),
                    None => out.extend_from_slice(b"<OVERFLOW>"),
                }
            }
            // The pointer is read with strncpy_from_kernel_nofault, which
            // fails for the user pointers these fields hold here
            // (syscall arguments): Linux then prints the address alone.
            FilterType::PtrString => put(out, format_args!("(0x{:016x})", le(pos))),
            FilterType::Cpumask | FilterType::Other => match f.size {
                1 => {
                    if kernel_isprint(pos[0]) {
                        out.extend_from_slice(&[b'\'', pos[0], b'\'']);
                    }
                    put(out, format_args!("({})", pos[0]));
                }
                2 => {
                    let v = le(pos) as u16;
                    put(out, format_args!("0x{v:x} ({v})"));
                }
                4 if full_type.contains("__data_loc") => print_array(out, entry, loc(), None),
                4 if full_type.contains("__rel_loc") => print_array(out, entry, loc(), Some(f.offset + 4)),
                4 => {
                    let v = le(pos) as u32;
                    put(out, format_args!("0x{v:x} ({})", v as i32));
                }
                8 => {
                    let v = le(pos);
                    put(out, format_args!("0x{v:x} ({})", v as i64));
                }
                _ => out.extend_from_slice(b"<INVALID-SIZE>"),
            },
        }
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = Vec::new();
        f(&mut v);
        v
    }

    #[test]
    fn precedence_is_bin_then_hex_then_raw() {
        assert_eq!(PrintMode::from_options(true, true, true), PrintMode::Bin);
        assert_eq!(PrintMode::from_options(false, true, true), PrintMode::Hex);
        assert_eq!(PrintMode::from_options(false, false, true), PrintMode::Raw);
        assert_eq!(PrintMode::from_options(false, false, false), PrintMode::Normal);
    }

    /// As Linux 6.12 printed a `trace_marker` line and a function entry
    /// (pid 152 on CPU 1) under `hex` on reflinux.
    #[test]
    fn hex_context_is_linux_words_most_significant_first() {
        assert_eq!(
            text(|o| hex_context(o, 152, 1, 3610462880)),
            b"00000098 00000001 00000000d7334aa0 "
        );
        assert_eq!(
            text(|o| fn_hex(o, 0xffff8000800c989c, 0xffff800080028b28)),
            b"ffff8000800c989c ffff800080028b28 "
        );
        // More than eight bytes go in groups of eight.
        assert_eq!(
            text(|o| seq_put_hex_field(o, &[1, 2, 3, 4, 5, 6, 7, 8, 9])),
            b"0807060504030201 09 "
        );
    }

    #[test]
    fn raw_context_and_fixed_types_print_as_linux() {
        assert_eq!(text(|o| raw_context(o, 152, 1, 3610462880)), b"152 1 3610462880 ");
        assert_eq!(
            text(|o| print_raw(o, 0xffff80008021e880, b"hello\n\0\0")),
            b"# ffff80008021e880 hello\n"
        );
        assert_eq!(
            text(|o| fn_raw(o, 0xffff8000800c989c, 0xffff800080028b28)),
            b"ffff8000800c989c ffff800080028b28\n"
        );
        assert_eq!(text(|o| nop_print(o, 1383)), b"type: 1383\n");
        assert_eq!(text(|o| raw_unknown(o, 77)), b"77 ?\n");
    }

    /// reflinux's `bin` bytes of a function entry: pid 0x98, CPU 1, the
    /// time, then ip and parent_ip.
    #[test]
    fn bin_is_the_fields_in_memory_order() {
        let mut v = text(|o| bin_context(o, 0x98, 1, 0x98bc8840));
        fn_bin(&mut v, 0xffff8000800c989c, 0xffff800080028b28);
        assert_eq!(
            v,
            vec![
                0x98, 0, 0, 0, 1, 0, 0, 0, 0x40, 0x88, 0xbc, 0x98, 0, 0, 0, 0, 0x9c, 0x98, 0x0c, 0x80, 0x00, 0x80,
                0xff, 0xff, 0x28, 0x8b, 0x02, 0x80, 0x00, 0x80, 0xff, 0xff
            ]
        );
    }

    #[test]
    fn ctx_switch_prints_linux_raw_hex_and_bin() {
        let c = CtxSwitch {
            prev_pid: 152,
            prev_prio: 120,
            prev_state: 1,
            next_cpu: 1,
            next_pid: 17,
            next_prio: 120,
            next_state: 0,
        };
        assert_eq!(text(|o| c.raw(o, false)), b"152 120 S 1 17 120 R\n");
        assert_eq!(text(|o| c.raw(o, true)), b"152 120 + 1 17 120 R\n");
        assert_eq!(
            text(|o| c.hex(o, false)),
            b"00000098 78 53 00000001 00000011 78 00000052 "
        );
        assert_eq!(
            text(|o| c.bin(o)),
            vec![152, 0, 0, 0, 120, 1, 1, 0, 0, 0, 17, 0, 0, 0, 120, 0]
        );
        let mut e = vec![0u8; 24];
        e[8] = 152;
        e[12] = 17;
        e[16] = 1;
        e[20] = 120;
        e[21] = 1;
        e[22] = 120;
        assert_eq!(CtxSwitch::from_entry(&e), Some(c));
        assert_eq!(CtxSwitch::from_entry(&e[..23]), None);
    }

    #[test]
    fn filter_types_follow_the_c_type() {
        assert_eq!(filter_assign_type("__data_loc char[]"), FilterType::DynString);
        assert_eq!(filter_assign_type("__rel_loc char[]"), FilterType::RelDynString);
        assert_eq!(filter_assign_type("char[16]"), FilterType::StaticString);
        assert_eq!(filter_assign_type("const char *"), FilterType::PtrString);
        assert_eq!(filter_assign_type("__data_loc cpumask_t"), FilterType::Cpumask);
        assert_eq!(filter_assign_type("__data_loc u8[]"), FilterType::Other);
        assert_eq!(filter_assign_type("unsigned long"), FilterType::Other);
    }

    /// The `pz` and `pa` probes of reflinux's session under `fields`.
    #[test]
    fn fields_print_each_size_as_linux() {
        let f = |type_name, name, offset, size| PrintField {
            type_name,
            name,
            offset,
            size,
        };
        let fields = [
            f("unsigned long", "__probe_ip", 8, 8),
            f("__data_loc char[]", "e", 16, 4),
            f("u8", "ch", 20, 1),
            f("u8", "c1", 21, 1),
            f("s8", "x", 22, 1),
            f("u16", "u", 23, 2),
            f("s32", "n", 25, 4),
            f("char", "comm[16]", 29, 16),
            f("__data_loc char[]", "s", 45, 4),
        ];
        let mut e = vec![0u8; 49];
        e[8..16].copy_from_slice(&0xffff8000800c9898u64.to_le_bytes());
        e[16..20].copy_from_slice(&((1u32 << 16) | 49).to_le_bytes());
        e[20] = b'A';
        e[21] = 10;
        e[22] = (-3i8) as u8;
        e[23..25].copy_from_slice(&258u16.to_le_bytes());
        e[25..29].copy_from_slice(&(-2i32).to_le_bytes());
        e[29..36].copy_from_slice(b"busybox");
        e[45..49].copy_from_slice(&((3u32 << 16) | 50).to_le_bytes());
        e.extend_from_slice(b"\0hi\0");
        let out = text(|o| print_event_fields(o, 1382, "pz", &fields, &e));
        let mut want = b"pz: __probe_ip=0xffff8000800c9898 (-140735340046184) e= ch='A'(65) c1=(10) x='".to_vec();
        want.push(0xfd);
        want.extend_from_slice(b"'(253) u=0x102 (258) n=0xfffffffe (-2) comm=busybox s=hi\n");
        assert_eq!(out, want);
    }

    #[test]
    fn fields_of_fixed_types_short_entries_and_arrays() {
        assert_eq!(
            text(|o| print_event_fields(o, 5, "print", &[], b"")),
            b"UNKNOWN TYPE 5\n"
        );
        assert_eq!(
            text(|o| print_event_fields(o, 300, "ev", &[], b"")),
            b"ev:No fields found\n"
        );
        let arr = [
            PrintField {
                type_name: "__data_loc u8[]",
                name: "a",
                offset: 8,
                size: 4,
            },
            PrintField {
                type_name: "__data_loc u8[]",
                name: "bad",
                offset: 12,
                size: 4,
            },
            PrintField {
                type_name: "u64",
                name: "past",
                offset: 16,
                size: 8,
            },
            PrintField {
                type_name: "u8[3]",
                name: "odd",
                offset: 8,
                size: 3,
            },
        ];
        let mut e = vec![0u8; 19];
        e[8..12].copy_from_slice(&((3u32 << 16) | 16).to_le_bytes());
        e[12..16].copy_from_slice(&((9u32 << 16) | 16).to_le_bytes());
        e[16..19].copy_from_slice(&[1, 0xab, 0xff]);
        assert_eq!(
            text(|o| print_event_fields(o, 300, "ev", &arr, &e)),
            b"ev: a=01,ab,ff bad=<OVERFLOW> past=<OVERFLOW> odd=<INVALID-SIZE>\n"
        );
    }

    #[test]
    fn isprint_is_the_kernels_latin1_table() {
        assert!(kernel_isprint(b' ') && kernel_isprint(b'~') && kernel_isprint(0xa0) && kernel_isprint(0xff));
        assert!(!kernel_isprint(0x1f) && !kernel_isprint(0x7f) && !kernel_isprint(0x9f));
    }
}
