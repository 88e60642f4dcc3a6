//! Debian's gdbserver (dynamically linked, `scripts/setup.sh
//! --print-gdbserver`) debugging a static program over the remote
//! protocol: `tests/gdbserver/rspclient.c` replays recorded sessions
//! (`tests/gdbserver/*.rsp.in`: target description, threads, auxv,
//! software and hardware breakpoints, a write watchpoint, single-step,
//! register and memory reads and writes, exit, kill, detach) against
//! `gdbserver - /bin/debuggee` in the guest. The dialogue, masked where
//! two correct kernels may differ, must equal `tests/gdbserver/expected`,
//! on this kernel and, when ../shared/reflinux is there, on Linux.

use e2e::{reflinux_unpacking, root, run_commands_with_roots, setup_path};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const COMMANDS: &str = "busybox sh /bin/run.sh";

/// A C program of tests/gdbserver built with `aarch64-linux-gnu-gcc
/// -static` into `dir`.
fn cross_compile(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let st = Command::new("aarch64-linux-gnu-gcc")
        .args(["-static", "-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(root().join(format!("tests/gdbserver/{name}.c")))
        .status()
        .expect("run aarch64-linux-gnu-gcc (scripts/setup.sh installs it)");
    assert!(st.success(), "building tests/gdbserver/{name}.c failed");
    out
}

/// A symbol of the debuggee: its name, address and size.
#[derive(Clone, Debug, PartialEq)]
struct Symbol {
    name: String,
    addr: u64,
    size: u64,
}

/// The debuggee's functions and objects, from `aarch64-linux-gnu-nm -S`.
fn symbols(elf: &Path) -> Vec<Symbol> {
    let out = Command::new("aarch64-linux-gnu-nm")
        .arg("-S")
        .arg(elf)
        .output()
        .expect("run aarch64-linux-gnu-nm");
    assert!(out.status.success(), "nm {} failed", elf.display());
    parse_nm(&String::from_utf8_lossy(&out.stdout))
}

/// `nm -S` lines `ADDR SIZE TYPE NAME` of the symbols the sessions use.
fn parse_nm(text: &str) -> Vec<Symbol> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [addr, size, _kind, name] = f[..] else { return None };
            if !["main", "add", "poke", "counter", "watched"].contains(&name) {
                return None;
            }
            Some(Symbol {
                name: name.to_string(),
                addr: u64::from_str_radix(addr, 16).ok()?,
                size: u64::from_str_radix(size, 16).ok()?,
            })
        })
        .collect()
}

/// A session template with each `{name}` replaced by the symbol's address
/// in hex, as the remote protocol writes addresses.
fn instantiate(template: &str, syms: &[Symbol]) -> String {
    syms.iter().fold(template.to_string(), |t, s| {
        t.replace(&format!("{{{}}}", s.name), &format!("{:x}", s.addr))
    })
}

/// What a value reads as in the golden file: a symbol (`add`, `main+0x1c`)
/// where it is one; `ADDR` for an address at the top of the user address
/// space (the stack and the vDSO, whose places are each kernel's choice);
/// `RANDOM` for a value no address or small signed number can be (a
/// stack guard from `AT_RANDOM`); otherwise itself.
fn mask_value(v: u64, syms: &[Symbol]) -> String {
    for s in syms {
        if v == s.addr {
            return s.name.clone();
        }
        if v > s.addr && v < s.addr + s.size {
            return format!("{}+{:#x}", s.name, v - s.addr);
        }
    }
    if (0xffff_0000_0000..1 << 48).contains(&v) {
        return "ADDR".into();
    }
    if ((1 << 48)..0xffff_0000_0000_0000).contains(&v) {
        return "RANDOM".into();
    }
    format!("{v:#x}")
}

/// PSTATE.SSBS (bit 12).
const SSBS: u64 = 1 << 12;

/// A little-endian hex word as the remote protocol sends registers.
fn le_word(hex: &str) -> Option<u64> {
    if hex.len() != 16 {
        return None;
    }
    let be = u64::from_str_radix(hex, 16).ok()?;
    Some(be.swap_bytes())
}

/// A stop reply (`T05swbreak:;1f:...;thread:p9d.9d;core:0;`) with its
/// registers decoded and masked, and the CPU hidden.
fn mask_stop_reply(reply: &str, syms: &[Symbol]) -> String {
    // The signal number (two hex digits), then `name:value;` pairs.
    let (signal, fields) = reply.split_at(reply.len().min(2));
    let mut parts = Vec::new();
    for field in fields.split(';') {
        let masked = match field.split_once(':') {
            Some(("core", _)) => "core:CPU".to_string(),
            Some(("watch", a)) | Some(("rwatch", a)) | Some(("awatch", a)) => {
                let kind = &field[..field.len() - a.len() - 1];
                match u64::from_str_radix(a, 16) {
                    Ok(v) => format!("{kind}:{}", mask_value(v, syms)),
                    Err(_) => field.to_string(),
                }
            }
            Some((reg, value)) if reg.len() <= 2 && reg.chars().all(|c| c.is_ascii_hexdigit()) => {
                match le_word(value) {
                    Some(v) => format!("{reg}:{}", mask_value(v, syms)),
                    None => field.to_string(),
                }
            }
            _ => field.to_string(),
        };
        parts.push(masked);
    }
    format!("{signal}{}", parts.join(";"))
}

/// auxv entries that differ between two correct kernels: `AT_HWCAP` (16)
/// is what each kernel offers (this one sets no `HWCAP_EVTSTRM` or
/// `HWCAP_CPUID`); `AT_RSEQ_FEATURE_SIZE` (27) and `AT_RSEQ_ALIGN` (28) come
/// with rseq, which this kernel does not have, so they are dropped.
fn mask_auxv(kind: u64, value: &str, syms: &[Symbol]) -> Option<String> {
    match kind {
        16 => Some("HWCAP".into()),
        27 | 28 => None,
        _ => Some(
            u64::from_str_radix(value.trim_start_matches("0x"), 16).map_or(value.to_string(), |v| mask_value(v, syms)),
        ),
    }
}

/// Makes two runs comparable: the debuggee's pids become `PID1`, `PID2`,
/// ... in order of appearance (decimal in gdbserver's messages, hex in the
/// protocol), CPUs `CPU`, addresses symbols or `ADDR`, random words
/// `RANDOM`, and the outer runner's lines go.
fn mask(out: &str, syms: &[Symbol]) -> String {
    let mut pids: BTreeMap<u32, usize> = BTreeMap::new();
    for l in out.lines() {
        if let Some(p) = l.split("pid = ").nth(1).and_then(|p| p.trim().parse::<u32>().ok()) {
            let n = pids.len() + 1;
            pids.entry(p).or_insert(n);
        }
    }
    let mut text = String::new();
    let mut in_auxv = false;
    for line in out.lines() {
        if line.starts_with("qemu-run:") || line.starts_with("reflinux:") {
            continue;
        }
        let mut l = line.to_string();
        for (pid, n) in &pids {
            let h = format!("{pid:x}");
            l = l
                .replace(&format!("p{h}.{h}"), &format!("pPID{n}.PID{n}"))
                .replace(&format!("process:{h}"), &format!("process:PID{n}"))
                .replace(&format!("D;{h}"), &format!("D;PID{n}"))
                .replace(&format!("pid = {pid}"), &format!("pid = PID{n}"))
                .replace(&format!("process {pid}"), &format!("process PID{n}"));
        }
        if let Some(id) = l.find("core=\"") {
            if let Some(end) = l[id + 6..].find('"') {
                l.replace_range(id + 6..id + 6 + end, "CPU");
            }
        }
        if let Some(body) = l.strip_prefix("-> ") {
            let mut b = body.to_string();
            for s in syms {
                for sep in [",", ":"] {
                    b = b.replace(&format!("{:x}{sep}", s.addr), &format!("{{{}}}{sep}", s.name));
                }
            }
            l = format!("-> {b}");
        }
        if l.starts_with("<- (auxv)") || l.ends_with(" (auxv)") {
            in_auxv = true;
        } else if !l.starts_with("<-   ") {
            in_auxv = false;
        }
        if let Some(reply) = l.strip_prefix("<- T") {
            l = format!("<- T{}", mask_stop_reply(reply, syms));
        } else if let Some(entry) = l.strip_prefix("<-   ") {
            let (name, value) = entry.split_once(' ').unwrap_or((entry, ""));
            if in_auxv {
                match mask_auxv(name.parse().unwrap_or(u64::MAX), value, syms) {
                    Some(v) => l = format!("<-   {name} {v}"),
                    None => continue,
                }
            } else if let Some(v) = value.strip_prefix("0x").and_then(|v| u64::from_str_radix(v, 16).ok()) {
                // PSTATE.SSBS, on a CPU without FEAT_SSBS, is what Linux's
                // ssbs_thread_switch() wrote into the saved frame if the
                // tracee was switched in since it last entered the kernel:
                // a matter of scheduling.
                let v = if name == "cpsr" { v & !SSBS } else { v };
                l = format!("<-   {name} {}", mask_value(v, syms));
            }
        }
        text.push_str(&l);
        text.push('\n');
    }
    text
}

/// Debian's and gdbserver's trees, added at the guest's root.
fn roots() -> Vec<PathBuf> {
    vec![setup_path("--print-debian"), setup_path("--print-gdbserver")]
}

/// The guest's files: busybox, the programs, the instantiated sessions and
/// the script; and the debuggee's symbols.
fn files() -> (Vec<PathBuf>, Vec<Symbol>) {
    let dir = root().join("target/gdbserver-tests");
    std::fs::create_dir_all(&dir).expect("create target/gdbserver-tests");
    let debuggee = cross_compile(&dir, "debuggee");
    let client = cross_compile(&dir, "rspclient");
    let syms = symbols(&debuggee);
    assert_eq!(syms.len(), 5, "symbols of the debuggee: {syms:?}");
    let mut files = vec![
        setup_path("--print-busybox"),
        debuggee,
        client,
        root().join("tests/gdbserver/run.sh"),
    ];
    for s in ["session", "session-kill", "session-detach"] {
        let template = std::fs::read_to_string(root().join(format!("tests/gdbserver/{s}.rsp.in")))
            .expect("read a session template");
        let path = dir.join(format!("{s}.rsp"));
        std::fs::write(&path, instantiate(&template, &syms)).expect("write a session");
        files.push(path);
    }
    (files, syms)
}

#[test]
fn debian_gdbserver_session_replies_as_on_linux() {
    let (files, syms) = files();
    let (out, code) = run_commands_with_roots(&["--smp", "4"], &roots(), &files, COMMANDS, 120);
    assert_eq!(code, 0, "{out}");
    let ours = mask(&out, &syms);
    let dir = root().join("target/gdbserver-tests");
    std::fs::write(dir.join("ours.masked"), &ours).expect("write ours.masked");
    let expected_path = root().join("tests/gdbserver/expected");
    if std::env::var_os("GDBSERVER_BLESS").is_some() {
        std::fs::write(&expected_path, &ours).expect("write tests/gdbserver/expected");
    }
    let expected = std::fs::read_to_string(&expected_path).expect("read tests/gdbserver/expected");
    assert!(
        ours == expected,
        "this kernel differs from tests/gdbserver/expected (masked: target/gdbserver-tests/ours.masked)\nraw:\n{out}"
    );
    let (files, commands) = reflinux_unpacking(&roots(), &files, COMMANDS);
    let Some(linux) = e2e::reflinux_stdout("2", 120, &files, &commands) else {
        return;
    };
    let linux_masked = mask(&linux, &syms);
    std::fs::write(dir.join("linux.masked"), &linux_masked).expect("write linux.masked");
    assert!(
        linux_masked == expected,
        "real Linux differs from tests/gdbserver/expected (masked: target/gdbserver-tests/linux.masked)\nraw:\n{linux}"
    );
}

#[cfg(test)]
mod unit {
    use super::*;

    fn syms() -> Vec<Symbol> {
        parse_nm("0000000000400760 0000000000000010 T add\n0000000000492060 0000000000000008 B counter\n0000000000400100 T _start\n")
    }

    #[test]
    fn parse_nm_keeps_the_session_symbols_with_sizes() {
        assert_eq!(
            syms(),
            vec![
                Symbol {
                    name: "add".into(),
                    addr: 0x400760,
                    size: 0x10
                },
                Symbol {
                    name: "counter".into(),
                    addr: 0x492060,
                    size: 8
                },
            ]
        );
    }

    #[test]
    fn mask_value_names_symbols_and_hides_stack_and_random_words() {
        let s = syms();
        assert_eq!(mask_value(0x400760, &s), "add");
        assert_eq!(mask_value(0x400764, &s), "add+0x4");
        assert_eq!(mask_value(0x400770, &s), "0x400770");
        assert_eq!(mask_value(0xffff_ffff_fc20, &s), "ADDR");
        assert_eq!(mask_value(0x1a66_3fac_e9ce_ebef, &s), "RANDOM");
        assert_eq!(mask_value(u64::MAX, &s), "0xffffffffffffffff");
    }

    #[test]
    fn mask_decodes_stop_replies_and_numbers_pids() {
        let s = syms();
        let raw = "qemu-run: boot log: x\n\
                   -> Z0,400760,4\n\
                   <- T05swbreak:;1f:20fcffffffff0000;20:6007400000000000;thread:p9d.9d;core:1;\n\
                   <- W2f;process:9d\n\
                   Process /bin/debuggee created; pid = 157\n";
        assert_eq!(
            mask(raw, &s),
            "-> Z0,{add},4\n\
             <- T05swbreak:;1f:ADDR;20:add;thread:pPID1.PID1;core:CPU;\n\
             <- W2f;process:PID1\n\
             Process /bin/debuggee created; pid = PID1\n"
        );
    }

    #[test]
    fn mask_drops_rseq_auxv_entries_and_hides_hwcap() {
        let raw = "<- l (auxv)\n<-   16 0x8ff\n<-   6 0x1000\n<-   27 0x1c\n<-   0 0x0\n-> g\n";
        assert_eq!(
            mask(raw, &[]),
            "<- l (auxv)\n<-   16 HWCAP\n<-   6 0x1000\n<-   0 0x0\n-> g\n"
        );
    }
}
