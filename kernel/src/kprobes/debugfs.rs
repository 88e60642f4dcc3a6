//! `/sys/kernel/debug/kprobes`: `list`, `enabled` and `blacklist` in
//! Linux's formats.

use crate::fs::pseudo::PseudoDir;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use core::fmt::Write;

/// `list`: `<addr>  k  <sym>+0x<off>    [DISABLED][FTRACE]` (`r` for
/// return probes).
pub fn list() -> alloc::vec::Vec<u8> {
    let mut out = String::new();
    for super::ProbeInfo {
        addr,
        probe: kp,
        ftrace,
    } in super::list()
    {
        let kind = if kp.is_return { "r" } else { "k" };
        match crate::kallsyms::lookup_addr(addr) {
            Some(sym) => {
                let _ = write!(out, "{addr:016x}  {kind}  {}+0x{:x}    ", sym.name, sym.offset);
            }
            None => {
                let _ = write!(out, "{addr:016x}  {kind}  0x{addr:x} ");
            }
        }
        let _ = writeln!(
            out,
            "{}{}",
            if kp.is_disabled() { "[DISABLED]" } else { "" },
            if ftrace { "[FTRACE]" } else { "" }
        );
    }
    out.into_bytes()
}

/// Linux's kstrtobool: y/Y/1/on, n/N/0/off.
fn parse_bool(buf: &[u8]) -> Option<bool> {
    let s = core::str::from_utf8(buf).ok()?.trim();
    match s.as_bytes().first()? {
        b'y' | b'Y' | b'1' => Some(true),
        b'n' | b'N' | b'0' => Some(false),
        b'o' | b'O' => match s.as_bytes().get(1)? {
            b'n' | b'N' => Some(true),
            b'f' | b'F' => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Creates the files under `debug`.
pub fn create(debug: &Arc<PseudoDir>) {
    let dir = debug.dir("kprobes");
    dir.file("list", 0o444, Box::new(list), None);
    dir.file(
        "enabled",
        0o600,
        Box::new(|| format!("{}\n", if super::all_armed() { 1 } else { 0 }).into_bytes()),
        Some(Box::new(|buf| {
            let on = parse_bool(buf).ok_or(uapi::Errno::EINVAL)?;
            super::set_all_armed(on)?;
            Ok(buf.len())
        })),
    );
    dir.file(
        "blacklist",
        0o400,
        Box::new(|| {
            let mut out = String::new();
            for (start, end, name) in super::blacklist::entries() {
                let _ = writeln!(out, "0x{start:016x}-0x{end:016x}\t{name}");
            }
            out.into_bytes()
        }),
        None,
    );
}
