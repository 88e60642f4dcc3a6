//! `minigdb PROG [ARGS]`: a gdb-like debugger over ptrace(2) for static
//! arm64 programs, driven by commands on stdin, one per line. Each command
//! is echoed as `(gdb) COMMAND` before what it prints, so that a session
//! reads as a transcript a test can compare.
//!
//! ```text
//! break SYMBOL | break *ADDR   software breakpoint (a `brk #0` poked into
//!                              the text; after the prologue for a symbol)
//! run [ARGS] | continue | c    start the program / resume it
//! starti [ARGS]               start it, stopped at its first instruction
//! stepi | si | nexti | ni      one instruction (nexti steps over `bl`/`blr`)
//! info registers [REG...]      x0-x30, sp, pc, cpsr in gdb's layout
//! info breakpoints             breakpoints and watchpoints
//! x/N[xdus][bhwg] ADDR         examine memory (x/Ns: strings)
//! set var $REG = V             a register (x0-x30, sp, pc)
//! set var *(long*)ADDR = V     a 64-bit word of memory
//! watch *ADDR                  hardware write watchpoint (NT_ARM_HW_WATCH)
//! backtrace | bt               the frame-pointer chain, with symbols
//! delete [N]                   a breakpoint (or all)
//! kill | detach | quit
//! ```
//!
//! ADDR is a number (`0x...` or decimal), `SYMBOL`, `&SYMBOL` or `$REG`,
//! optionally `+ N`. Messages follow gdb's for a program without debug
//! information. `stepi` needs `PTRACE_SINGLESTEP`; where the kernel answers
//! EIO it says so and goes on. Stepping over a breakpoint (or a
//! watchpoint's store) without it plants a temporary breakpoint on the next
//! instruction when that instruction is not a branch.
#![no_std]
#![no_main]

extern crate alloc;

mod elf;
mod inferior;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use elf::Symbols;
use inferior::Event;
use rt::{fs, println, Errno};
use uapi::elf::{Elf64Ehdr, Elf64Phdr, PT_LOAD};
use uapi::ptrace::UserPtRegs;

rt::main!(main);

/// `brk #0`.
const BRK0: u32 = 0xd420_0000;
const SIGTRAP: i32 = uapi::signal::SIGTRAP as i32;

/// What a breakpoint number stands for.
enum Kind {
    Break { addr: u64 },
    Watch { addr: u64, old: u64 },
}

struct Breakpoint {
    num: u32,
    kind: Kind,
    hits: u32,
}

/// How the inferior is resumed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Resume {
    Continue,
    Stepi,
    Nexti,
}

impl Resume {
    /// The command that resumes this way.
    fn command(self) -> &'static str {
        match self {
            Resume::Continue => "continue",
            Resume::Stepi => "stepi",
            Resume::Nexti => "nexti",
        }
    }
}

struct Session {
    prog: Vec<u8>,
    args: Vec<Vec<u8>>,
    syms: Symbols,
    pid: Option<i32>,
    bps: Vec<Breakpoint>,
    next_num: u32,
    /// The signal the last stop reported, delivered on the next resume.
    pending_sig: i32,
    /// A watchpoint trigger was already reported for the last stop.
    watch_reported: bool,
    /// The program file, and its loadable segments (vaddr, offset, size):
    /// where breakpoints on symbols are placed before it runs.
    image: Vec<u8>,
    file_text: Vec<(u64, u64, u64)>,
}

fn signal_description(sig: i32) -> &'static str {
    use uapi::signal::*;
    let Ok(sig) = u32::try_from(sig) else {
        return "Unknown signal";
    };
    match sig {
        SIGHUP => "Hangup",
        SIGINT => "Interrupt",
        SIGQUIT => "Quit",
        SIGILL => "Illegal instruction",
        SIGTRAP => "Trace/breakpoint trap",
        SIGABRT => "Aborted",
        SIGBUS => "Bus error",
        SIGFPE => "Arithmetic exception",
        SIGKILL => "Killed",
        SIGUSR1 => "User defined signal 1",
        SIGSEGV => "Segmentation fault",
        SIGUSR2 => "User defined signal 2",
        SIGPIPE => "Broken pipe",
        SIGALRM => "Alarm clock",
        SIGTERM => "Terminated",
        _ => "Unknown signal",
    }
}

fn signal_name(sig: i32) -> String {
    u32::try_from(sig)
        .ok()
        .and_then(uapi::signal::name)
        .map(String::from)
        .unwrap_or_else(|| format!("SIG{sig}"))
}

fn errno_text(e: Errno) -> &'static str {
    e.name().unwrap_or("E?")
}

/// Parses `0x1f`, `31` or `-5`.
fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(neg) = s.strip_prefix('-') {
        return parse_number(neg).map(|v| v.wrapping_neg());
    }
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The index in `user_pt_regs` of `x0`..`x30`, `fp`, `lr`, `sp`, `pc`.
fn reg_index(name: &str) -> Option<usize> {
    match name {
        "fp" => Some(29),
        "lr" => Some(30),
        "sp" => Some(31),
        "pc" => Some(32),
        "cpsr" => Some(33),
        _ => {
            let n: usize = name.strip_prefix('x')?.parse().ok()?;
            (n <= 30).then_some(n)
        }
    }
}

fn reg_get(r: &UserPtRegs, i: usize) -> u64 {
    match i {
        31 => r.sp,
        32 => r.pc,
        33 => r.pstate,
        _ => r.regs[i],
    }
}

fn reg_set(r: &mut UserPtRegs, i: usize, v: u64) {
    match i {
        31 => r.sp = v,
        32 => r.pc = v,
        33 => r.pstate = v,
        _ => r.regs[i] = v,
    }
}

/// Whether `insn` may go elsewhere than the next instruction (so that a
/// breakpoint on the next one cannot stand in for a single step).
fn is_branch(insn: u32) -> bool {
    insn & 0x7c00_0000 == 0x1400_0000 // b, bl
        || insn & 0xff00_0010 == 0x5400_0000 // b.cond
        || insn & 0x7e00_0000 == 0x3400_0000 // cbz, cbnz
        || insn & 0x7e00_0000 == 0x3600_0000 // tbz, tbnz
        || insn & 0xfe00_0000 == 0xd600_0000 // br, blr, ret, eret
}

/// `bl` or `blr`: what nexti steps over.
fn is_call(insn: u32) -> bool {
    insn & 0xfc00_0000 == 0x9400_0000 || insn & 0xffff_fc1f == 0xd63f_0000
}

/// gdb's `[ EL=0 BTYPE=0 N Z C V ]` decoding of the PSTATE of a user task.
fn cpsr_flags(v: u64) -> String {
    let mut s = format!("[ EL={} BTYPE={}", (v >> 2) & 3, (v >> 10) & 3);
    for (bit, name) in [(12, "SSBS"), (21, "SS"), (31, "N"), (30, "Z"), (29, "C"), (28, "V")] {
        if v & (1 << bit) != 0 {
            s.push(' ');
            s.push_str(name);
        }
    }
    s.push_str(" ]");
    s
}

impl Session {
    fn where_is(&self, addr: u64) -> String {
        match self.syms.covering(addr) {
            Some((s, 0)) => format!("<{}>", s.name),
            Some((s, off)) => format!("<{}+{}>", s.name, off),
            None => String::new(),
        }
    }

    fn function_at(&self, addr: u64) -> &str {
        self.syms.covering(addr).map(|(s, _)| s.name.as_str()).unwrap_or("??")
    }

    /// `0x0000000000400128 in fact ()`, gdb's line for a frame without
    /// line information.
    fn frame_line(&self, pc: u64) -> String {
        format!("0x{pc:016x} in {} ()", self.function_at(pc))
    }

    fn regs(&self, pid: i32) -> Result<UserPtRegs, String> {
        inferior::get_regs(pid).map_err(|e| format!("Couldn't get registers: {}.", errno_text(e)))
    }

    /// Evaluates an address expression: a number, `SYMBOL`, `&SYMBOL` or
    /// `$REG`, optionally followed by `+ N` or `- N`.
    fn eval(&self, expr: &str) -> Result<u64, String> {
        let expr = expr.trim();
        if let Some(i) = expr.rfind(['+', '-']).filter(|&i| i > 0) {
            let (l, r) = (&expr[..i], &expr[i + 1..]);
            let base = self.eval(l)?;
            let off = parse_number(r).ok_or_else(|| format!("No symbol \"{}\" in current context.", r.trim()))?;
            return Ok(if expr.as_bytes()[i] == b'+' {
                base.wrapping_add(off)
            } else {
                base.wrapping_sub(off)
            });
        }
        if let Some(reg) = expr.strip_prefix('$') {
            let i = reg_index(reg).ok_or_else(|| format!("Invalid register `{reg}'"))?;
            let pid = self.pid.ok_or("No registers.")?;
            return Ok(reg_get(&self.regs(pid)?, i));
        }
        if let Some(v) = parse_number(expr) {
            return Ok(v);
        }
        let name = expr.strip_prefix('&').unwrap_or(expr).trim();
        self.syms
            .lookup(name)
            .map(|s| s.addr)
            .ok_or_else(|| format!("No symbol \"{name}\" in current context."))
    }

    fn breakpoint_addrs(&self) -> Vec<u64> {
        self.bps
            .iter()
            .filter_map(|b| match b.kind {
                Kind::Break { addr } => Some(addr),
                Kind::Watch { .. } => None,
            })
            .collect()
    }

    /// Plants every breakpoint; returns the instructions they replaced.
    fn insert_breakpoints(&self, pid: i32, extra: Option<u64>) -> Result<Vec<(u64, u32)>, String> {
        let mut saved: Vec<(u64, u32)> = Vec::new();
        for addr in self.breakpoint_addrs().into_iter().chain(extra) {
            if saved.iter().any(|&(a, _)| a == addr) {
                continue;
            }
            let orig = inferior::peek_insn(pid, addr);
            match orig.and_then(|o| inferior::poke_insn(pid, addr, BRK0).map(|()| o)) {
                Ok(o) => saved.push((addr, o)),
                Err(_) => {
                    let _ = remove_breakpoints(pid, &saved);
                    return Err(format!(
                        "Warning:\nCannot insert breakpoint.\nCannot access memory at address 0x{addr:x}\n"
                    ));
                }
            }
        }
        Ok(saved)
    }

    fn watchpoint(&self) -> Option<u64> {
        self.bps.iter().find_map(|b| match b.kind {
            Kind::Watch { addr, .. } => Some(addr),
            Kind::Break { .. } => None,
        })
    }

    /// Executes one instruction. With `emulate`, when the kernel has no
    /// single-step (EIO), runs to a temporary breakpoint on the next
    /// instruction instead, if the instruction is not a branch.
    fn step_one(&mut self, pid: i32, emulate: bool) -> Result<Event, Errno> {
        let sig = core::mem::take(&mut self.pending_sig);
        match inferior::single_step(pid, sig) {
            Ok(()) => return inferior::wait(pid),
            Err(Errno::EIO) if emulate => {}
            Err(e) => {
                self.pending_sig = sig;
                return Err(e);
            }
        }
        let pc = inferior::get_regs(pid)?.pc;
        let insn = inferior::peek_insn(pid, pc)?;
        if is_branch(insn) {
            return Err(Errno::EIO);
        }
        let next = pc + 4;
        let orig = inferior::peek_insn(pid, next)?;
        inferior::poke_insn(pid, next, BRK0)?;
        let cont = inferior::cont(pid, sig);
        let ev = cont.and_then(|()| inferior::wait(pid));
        if let Ok(Event::Stopped(_)) = ev {
            inferior::poke_insn(pid, next, orig)?;
        }
        ev
    }

    /// Starts the program stopped at its first instruction.
    fn start(&mut self, args: Option<&str>) -> Result<(), String> {
        if let Some(pid) = self.pid.take() {
            inferior::kill(pid);
        }
        if let Some(a) = args.filter(|a| !a.trim().is_empty()) {
            self.args = a.split_whitespace().map(|s| s.as_bytes().to_vec()).collect();
        }
        let mut line = String::from_utf8_lossy(&self.prog).into_owned();
        for a in &self.args {
            line.push(' ');
            line.push_str(&String::from_utf8_lossy(a));
        }
        println!("Starting program: {line}");
        let pid = match rt::process::fork() {
            Ok(rt::process::Fork::Child) => {
                let _ = inferior::traceme();
                let prog = self.prog.clone();
                let e = rt::process::execve(
                    &prog,
                    core::iter::once(prog.as_slice()).chain(self.args.iter().map(|a| a.as_slice())),
                    core::iter::empty(),
                );
                rt::eprintln!("{}: {}.", line, e.message().unwrap_or("exec failed"));
                rt::process::exit(127)
            }
            Ok(rt::process::Fork::Parent(pid)) => pid,
            Err(e) => return Err(format!("fork: {}", errno_text(e))),
        };
        match inferior::wait(pid) {
            Ok(Event::Stopped(SIGTRAP)) => {
                self.pid = Some(pid);
                self.pending_sig = 0;
                Ok(())
            }
            Ok(ev) => {
                self.pid = Some(pid);
                self.report(pid, ev, Resume::Continue);
                Err("During startup program exited.".to_string())
            }
            Err(e) => Err(format!("wait: {}", errno_text(e))),
        }
    }

    /// Resumes the inferior, then reports where it stopped.
    fn resume(&mut self, how: Resume) -> Result<(), String> {
        let pid = self.pid.ok_or("The program is not being run.")?;
        let regs = self.regs(pid)?;
        let insn = inferior::peek_insn(pid, regs.pc).unwrap_or(0);
        if how == Resume::Stepi || (how == Resume::Nexti && !is_call(insn)) {
            return match self.step_one(pid, false) {
                Ok(ev) => {
                    self.report(pid, ev, how);
                    Ok(())
                }
                Err(Errno::EIO) => Err(format!("{}: single-step not supported (EIO)", how.command())),
                Err(e) => Err(format!("{}: {}", how.command(), errno_text(e))),
            };
        }
        // Step off a breakpoint under the pc before planting it again.
        let on_breakpoint = self.breakpoint_addrs().contains(&regs.pc);
        if on_breakpoint {
            match self.step_one(pid, true) {
                Ok(Event::Stopped(SIGTRAP)) => {}
                Ok(ev) => {
                    self.report(pid, ev, how);
                    return Ok(());
                }
                Err(e) => {
                    return Err(format!(
                        "Cannot step over the breakpoint at 0x{:x}: {}",
                        regs.pc,
                        errno_text(e)
                    ))
                }
            }
        }
        let extra = (how == Resume::Nexti).then_some(regs.pc + 4);
        loop {
            let saved = self.insert_breakpoints(pid, extra)?;
            let sig = core::mem::take(&mut self.pending_sig);
            let ev = inferior::cont(pid, sig).and_then(|()| inferior::wait(pid));
            if let Ok(Event::Stopped(_)) = ev {
                let _ = remove_breakpoints(pid, &saved);
            }
            let ev = ev.map_err(|e| format!("continue: {}", errno_text(e)))?;
            if self.unchanged_watch_hit(pid, ev) {
                continue;
            }
            self.report(pid, ev, how);
            return Ok(());
        }
    }

    /// A watchpoint trap whose store left the value as it was: gdb goes
    /// on silently. Steps over the store in any case.
    fn unchanged_watch_hit(&mut self, pid: i32, ev: Event) -> bool {
        let Event::Stopped(SIGTRAP) = ev else { return false };
        let Some(addr) = self.watchpoint() else { return false };
        match inferior::siginfo(pid) {
            Ok((_, inferior::TRAP_HWBKPT, _)) => {}
            _ => return false,
        }
        // The trap comes before the store: step it with the watchpoint off.
        let _ = inferior::set_watchpoint(pid, addr, 0);
        let stepped = self.step_one(pid, true);
        let _ = inferior::set_watchpoint(pid, addr, inferior::wcr_store_8());
        if !matches!(stepped, Ok(Event::Stopped(SIGTRAP))) {
            return false;
        }
        let new = inferior::peek(pid, addr).unwrap_or(0);
        let mut hit = None;
        for b in &mut self.bps {
            if let Kind::Watch { old, .. } = &mut b.kind {
                if *old != new {
                    hit = Some((b.num, *old, new));
                    *old = new;
                    b.hits += 1;
                }
            }
        }
        match hit {
            None => true,
            Some((num, old, new)) => {
                let pc = inferior::get_regs(pid).map(|r| r.pc).unwrap_or(0);
                println!("\nHardware watchpoint {num}: *0x{addr:x}\n");
                println!("Old value = {}", old as i64);
                println!("New value = {}", new as i64);
                println!("{}", self.frame_line(pc));
                self.pending_sig = 0;
                // Reported here; the caller sees a step's trap.
                self.watch_reported = true;
                false
            }
        }
    }

    /// Says how the inferior stopped or ended, as gdb does.
    fn report(&mut self, pid: i32, ev: Event, how: Resume) {
        if core::mem::take(&mut self.watch_reported) {
            return;
        }
        match ev {
            Event::Exited(code) => {
                if code == 0 {
                    println!("[Inferior 1 (process {pid}) exited normally]");
                } else {
                    println!("[Inferior 1 (process {pid}) exited with code {code:02o}]");
                }
                self.pid = None;
            }
            Event::Signaled(sig) => {
                println!(
                    "\nProgram terminated with signal {}, {}.\nThe program no longer exists.",
                    signal_name(sig),
                    signal_description(sig)
                );
                self.pid = None;
            }
            Event::Stopped(sig) => {
                let pc = inferior::get_regs(pid).map(|r| r.pc).unwrap_or(0);
                if sig == SIGTRAP {
                    self.pending_sig = 0;
                    if how == Resume::Stepi {
                        println!("{}", self.frame_line(pc));
                        return;
                    }
                    if let Some(b) = self
                        .bps
                        .iter_mut()
                        .find(|b| matches!(b.kind, Kind::Break { addr } if addr == pc))
                    {
                        b.hits += 1;
                        let num = b.num;
                        println!("\nBreakpoint {num}, {}", self.frame_line(pc));
                        return;
                    }
                    if how == Resume::Nexti {
                        println!("{}", self.frame_line(pc));
                        return;
                    }
                }
                self.pending_sig = if sig == SIGTRAP { 0 } else { sig };
                println!(
                    "\nProgram received signal {}, {}.\n{}",
                    signal_name(sig),
                    signal_description(sig),
                    self.frame_line(pc)
                );
            }
        }
    }

    fn info_registers(&self, which: &str) -> Result<(), String> {
        let pid = self.pid.ok_or("The program has no registers now.")?;
        let r = self.regs(pid)?;
        let names: Vec<String> = if which.trim().is_empty() {
            (0..31)
                .map(|i| format!("x{i}"))
                .chain(["sp", "pc", "cpsr"].map(String::from))
                .collect()
        } else {
            which
                .split_whitespace()
                .map(|s| s.trim_start_matches('$').to_string())
                .collect()
        };
        for name in names {
            let i = reg_index(&name).ok_or_else(|| format!("Invalid register `{name}'"))?;
            let v = reg_get(&r, i);
            let natural = match i {
                31 => format!("0x{v:x}"),
                32 => format!("0x{v:x} {}", self.where_is(v)).trim_end().to_string(),
                33 => cpsr_flags(v),
                _ => format!("{}", v as i64),
            };
            let hex = format!("0x{v:x}");
            println!("{name:<15}{hex:<19}{natural}");
        }
        Ok(())
    }

    /// `x/FMT ADDR`.
    fn examine(&self, fmt: &str, expr: &str) -> Result<(), String> {
        let pid = self.pid.ok_or("The program is not being run.")?;
        let digits = fmt.bytes().take_while(u8::is_ascii_digit).count();
        let count: usize = if digits == 0 {
            1
        } else {
            fmt[..digits].parse().map_err(|_| "Bad count")?
        };
        let mut letter = b'x';
        let mut size = 4usize;
        for c in fmt[digits..].bytes() {
            match c {
                b'x' | b'd' | b'u' | b's' => letter = c,
                b'b' => size = 1,
                b'h' => size = 2,
                b'w' => size = 4,
                b'g' => size = 8,
                _ => return Err(format!("Undefined output format \"{}\".", c as char)),
            }
        }
        let mut addr = self.eval(expr)?;
        let read_byte = |a: u64| -> Result<u8, String> {
            inferior::peek(pid, a & !7)
                .map(|w| (w >> ((a & 7) * 8)) as u8)
                .map_err(|_| format!("Cannot access memory at address 0x{a:x}"))
        };
        if letter == b's' {
            for _ in 0..count {
                let start = addr;
                let mut s = String::new();
                loop {
                    let b = read_byte(addr)?;
                    addr += 1;
                    if b == 0 || s.len() >= 200 {
                        break;
                    }
                    match b {
                        b'"' | b'\\' => {
                            s.push('\\');
                            s.push(b as char);
                        }
                        b'\n' => s.push_str("\\n"),
                        b'\t' => s.push_str("\\t"),
                        0x20..=0x7e => s.push(b as char),
                        _ => s.push_str(&format!("\\{b:03o}")),
                    }
                }
                let w = self.where_is(start);
                let sep = if w.is_empty() { "" } else { " " };
                println!("0x{start:x}{sep}{w}:\t\"{s}\"");
            }
            return Ok(());
        }
        let per_line = match size {
            8 => 2,
            4 => 4,
            _ => 8,
        };
        let mut left = count;
        while left > 0 {
            let mut line = format!("0x{addr:x}");
            let w = self.where_is(addr);
            if !w.is_empty() {
                line.push(' ');
                line.push_str(&w);
            }
            line.push(':');
            for _ in 0..per_line.min(left) {
                let mut v: u64 = 0;
                for k in 0..size as u64 {
                    v |= u64::from(read_byte(addr + k)?) << (8 * k);
                }
                let text = match letter {
                    b'd' => {
                        let shift = 64 - 8 * size as u32;
                        format!("{}", ((v << shift) as i64) >> shift)
                    }
                    b'u' => format!("{v}"),
                    _ => format!("0x{v:0w$x}", w = size * 2),
                };
                line.push('\t');
                line.push_str(&text);
                addr += size as u64;
                left -= 1;
            }
            println!("{line}");
        }
        Ok(())
    }

    /// `set var $REG = V` or `set var *(long*)ADDR = V`.
    fn set_var(&self, what: &str) -> Result<(), String> {
        let pid = self.pid.ok_or("The program is not being run.")?;
        let (lhs, rhs) = what.split_once('=').ok_or("A syntax error in expression, near `'.")?;
        let value = self.eval(rhs)?;
        let lhs = lhs.trim();
        if let Some(reg) = lhs.strip_prefix('$') {
            let i = reg_index(reg).ok_or_else(|| format!("Invalid register `{reg}'"))?;
            let mut r = self.regs(pid)?;
            reg_set(&mut r, i, value);
            return inferior::set_regs(pid, &r).map_err(|e| format!("Couldn't write registers: {}.", errno_text(e)));
        }
        let target = lhs
            .strip_prefix("*(long*)")
            .or_else(|| lhs.strip_prefix("*(long *)"))
            .ok_or_else(|| format!("A syntax error in expression, near `{lhs}'."))?;
        let addr = self.eval(target)?;
        inferior::poke(pid, addr, value).map_err(|_| format!("Cannot access memory at address 0x{addr:x}"))
    }

    fn watch(&mut self, expr: &str) -> Result<(), String> {
        let target = expr
            .trim()
            .strip_prefix('*')
            .ok_or_else(|| format!("Cannot watch constant value `{expr}'."))?;
        let addr = self.eval(target)?;
        let pid = self
            .pid
            .ok_or("Can't set a hardware watchpoint before the program runs.")?;
        if self.watchpoint().is_some() {
            return Err("Hardware watchpoints used exceeds limit.".to_string());
        }
        if addr % 8 != 0 {
            return Err(format!("Cannot watch the unaligned address 0x{addr:x}."));
        }
        let refused = |e: Errno| {
            format!(
                "Hardware watchpoints not supported: no hardware watchpoints ({}).",
                errno_text(e)
            )
        };
        match inferior::watchpoint_slots(pid) {
            Ok(0) => return Err("Hardware watchpoints not supported: no hardware watchpoints.".to_string()),
            Ok(_) => {}
            Err(e) => return Err(refused(e)),
        }
        inferior::set_watchpoint(pid, addr, inferior::wcr_store_8()).map_err(refused)?;
        let old = inferior::peek(pid, addr).map_err(|_| format!("Cannot access memory at address 0x{addr:x}"))?;
        let num = self.next_num;
        self.next_num += 1;
        self.bps.push(Breakpoint {
            num,
            kind: Kind::Watch { addr, old },
            hits: 0,
        });
        println!("Hardware watchpoint {num}: *0x{addr:x}");
        Ok(())
    }

    fn backtrace(&self) -> Result<(), String> {
        let pid = self.pid.ok_or("No stack.")?;
        let r = self.regs(pid)?;
        let mut frames = alloc::vec![r.pc];
        let mut fp = r.regs[29];
        // Stopped before the function's frame record is linked (at its
        // first instruction, or between `stp x29, x30` and `mov x29, sp`):
        // the caller is in x30 and x29 is still the caller's frame.
        if let Some((sym, off)) = self.syms.covering(r.pc) {
            if off == 0 || (off == 4 && self.skip_prologue(sym.addr) == sym.addr + 8) {
                frames.push(r.regs[30]);
            }
        }
        // Each frame record: the caller's fp, then the return address. A
        // zero, misaligned or non-ascending fp ends the chain.
        while frames.len() < 64 && fp != 0 && fp % 16 == 0 {
            let (Ok(next_fp), Ok(lr)) = (inferior::peek(pid, fp), inferior::peek(pid, fp + 8)) else {
                break;
            };
            if lr == 0 || (next_fp != 0 && next_fp <= fp) {
                break;
            }
            frames.push(lr);
            fp = next_fp;
        }
        for (n, pc) in frames.into_iter().enumerate() {
            let num = format!("#{n}");
            println!("{num:<4}{}", self.frame_line(pc));
        }
        Ok(())
    }

    fn info_breakpoints(&self) {
        if self.bps.is_empty() {
            println!("No breakpoints or watchpoints.");
            return;
        }
        println!("Num     Type           Disp Enb Address            What");
        for b in &self.bps {
            match b.kind {
                Kind::Break { addr } => {
                    println!(
                        "{:<8}breakpoint     keep y   0x{addr:016x} {}",
                        b.num,
                        self.where_is(addr)
                    )
                }
                Kind::Watch { addr, .. } => {
                    println!("{:<8}hw watchpoint  keep y                      *0x{addr:x}", b.num)
                }
            }
            match b.hits {
                0 => {}
                1 => println!("\tbreakpoint already hit 1 time"),
                n => println!("\tbreakpoint already hit {n} times"),
            }
        }
    }

    fn add_break(&mut self, what: &str) -> Result<(), String> {
        let what = what.trim();
        let addr = if let Some(expr) = what.strip_prefix('*') {
            self.eval(expr)?
        } else {
            let sym = self
                .syms
                .lookup(what)
                .ok_or_else(|| format!("Function \"{what}\" not defined."))?;
            self.skip_prologue(sym.addr)
        };
        if addr % 4 != 0 {
            return Err(format!(
                "Cannot insert a breakpoint at the unaligned address 0x{addr:x}."
            ));
        }
        let num = self.next_num;
        self.next_num += 1;
        self.bps.push(Breakpoint {
            num,
            kind: Kind::Break { addr },
            hits: 0,
        });
        println!("Breakpoint {num} at 0x{addr:x}");
        Ok(())
    }

    /// As gdb's aarch64 prologue analysis for code without line
    /// information: past `stp x29, x30, [sp, #-N]!` and `mov x29, sp`.
    fn skip_prologue(&self, addr: u64) -> u64 {
        let Some(word) = self.text_word(addr) else { return addr };
        let stp_pre_fp_lr = word & 0xffc0_7fff == 0xa980_7bfd;
        let Some(next) = self.text_word(addr + 4) else {
            return addr;
        };
        if stp_pre_fp_lr && next == 0x9100_03fd {
            addr + 8
        } else {
            addr
        }
    }

    /// An instruction of the program file (before it runs: from the ELF's
    /// loadable segments).
    fn text_word(&self, addr: u64) -> Option<u32> {
        if let Some(pid) = self.pid {
            return inferior::peek_insn(pid, addr).ok();
        }
        self.file_text.iter().find_map(|&(vaddr, off, len)| {
            let rel = addr.checked_sub(vaddr)?;
            if rel + 4 > len {
                return None;
            }
            let at = usize::try_from(off + rel).ok()?;
            let b = self.image.get(at..at + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        })
    }

    fn delete(&mut self, which: &str) -> Result<(), String> {
        if which.trim().is_empty() {
            self.bps.clear();
        } else {
            for n in which.split_whitespace() {
                let num: u32 = n.parse().map_err(|_| {
                    String::from(
                        "Convenience variable must have integer value.\nArgs must be numbers or '$' variables.",
                    )
                })?;
                let before = self.bps.len();
                self.bps.retain(|b| b.num != num);
                if self.bps.len() == before {
                    println!("No breakpoint number {num}.");
                }
            }
        }
        if self.watchpoint().is_none() {
            if let Some(pid) = self.pid {
                let _ = inferior::set_watchpoint(pid, 0, 0);
            }
        }
        Ok(())
    }

    fn command(&mut self, line: &str) -> Result<bool, String> {
        let line = line.trim();
        let (cmd, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match cmd {
            "" => {}
            "break" | "b" => self.add_break(rest)?,
            "run" | "r" => {
                self.start(Some(rest))?;
                self.resume(Resume::Continue)?;
            }
            "starti" => {
                self.start(Some(rest))?;
                let pid = self.pid.ok_or("The program is not being run.")?;
                let pc = self.regs(pid)?.pc;
                println!("\nProgram stopped.\n{}", self.frame_line(pc));
            }
            "continue" | "c" => {
                if self.pid.is_some() {
                    println!("Continuing.");
                }
                self.resume(Resume::Continue)?
            }
            "stepi" | "si" => self.resume(Resume::Stepi)?,
            "nexti" | "ni" => self.resume(Resume::Nexti)?,
            "info" | "i" => {
                let (what, regs) = rest.trim().split_once(char::is_whitespace).unwrap_or((rest.trim(), ""));
                match what {
                    "registers" | "reg" | "r" => self.info_registers(regs)?,
                    "breakpoints" | "break" | "b" | "watchpoints" => self.info_breakpoints(),
                    _ => return Err(format!("Undefined info command: \"{what}\".")),
                }
            }
            "set" => {
                let what = rest.trim();
                let what = what
                    .strip_prefix("var ")
                    .or_else(|| what.strip_prefix("variable "))
                    .unwrap_or(what);
                self.set_var(what)?
            }
            "watch" => self.watch(rest)?,
            "backtrace" | "bt" | "where" => self.backtrace()?,
            "delete" | "d" => self.delete(rest)?,
            "kill" | "k" => {
                let pid = self.pid.take().ok_or("The program is not being run.")?;
                inferior::kill(pid);
                println!("[Inferior 1 (process {pid}) killed]");
            }
            "detach" => {
                let pid = self.pid.take().ok_or("The program is not being run.")?;
                if let Some(addr) = self.watchpoint() {
                    let _ = inferior::set_watchpoint(pid, addr, 0);
                }
                println!(
                    "Detaching from program: {}, process {pid}",
                    String::from_utf8_lossy(&self.prog)
                );
                inferior::detach(pid).map_err(|e| format!("detach: {}", errno_text(e)))?;
                println!("[Inferior 1 (process {pid}) detached]");
            }
            "quit" | "q" => return Ok(false),
            _ if cmd.starts_with("x/") || cmd == "x" => self.examine(cmd.strip_prefix("x/").unwrap_or(""), rest)?,
            _ => return Err(format!("Undefined command: \"{cmd}\".  Try \"help\".")),
        }
        Ok(true)
    }
}

fn remove_breakpoints(pid: i32, saved: &[(u64, u32)]) -> Result<(), Errno> {
    for &(addr, insn) in saved.iter().rev() {
        inferior::poke_insn(pid, addr, insn)?;
    }
    Ok(())
}

fn read_file(path: &[u8]) -> Result<Vec<u8>, Errno> {
    let fd = fs::open(path, fs::O_RDONLY, 0)?;
    let data = read_fd(fd);
    let _ = fs::close(fd);
    Ok(data)
}

fn read_fd(fd: i32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = fs::read(fd, &mut buf) {
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// The PT_LOAD segments of an ELF64 file: (vaddr, file offset, file size).
fn load_segments(image: &[u8]) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let Some(ehdr) = Elf64Ehdr::from_prefix(image) else {
        return out;
    };
    for i in 0..u64::from(ehdr.e_phnum) {
        let Some(ph) = usize::try_from(ehdr.e_phoff + i * u64::from(ehdr.e_phentsize)).ok() else {
            break;
        };
        let Some(ph) = image.get(ph..).and_then(Elf64Phdr::from_prefix) else {
            continue;
        };
        if ph.p_type == PT_LOAD {
            out.push((ph.p_vaddr, ph.p_offset, ph.p_filesz));
        }
    }
    out
}

fn main(args: rt::Args) -> i32 {
    let Some(prog) = args.get(1) else {
        rt::eprintln!("usage: minigdb PROG [ARGS]  (commands on stdin)");
        return 2;
    };
    let image = match read_file(prog) {
        Ok(i) => i,
        Err(e) => {
            rt::eprintln!(
                "{}: {}.",
                String::from_utf8_lossy(prog),
                e.message().unwrap_or("cannot open")
            );
            return 1;
        }
    };
    let syms = match Symbols::parse(&image) {
        Ok(s) => s,
        Err(elf::ElfError::NoSymtab) => {
            println!("(No debugging symbols found in {})", String::from_utf8_lossy(prog));
            Symbols::default()
        }
        Err(e) => {
            rt::eprintln!("\"{}\": not in executable format: {e:?}", String::from_utf8_lossy(prog));
            return 1;
        }
    };
    let mut s = Session {
        prog: prog.to_vec(),
        args: args.iter().skip(2).map(|a| a.to_vec()).collect(),
        syms,
        pid: None,
        bps: Vec::new(),
        next_num: 1,
        pending_sig: 0,
        watch_reported: false,
        file_text: load_segments(&image),
        image,
    };
    let input = read_fd(0);
    let text = String::from_utf8_lossy(&input);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        println!("(gdb) {line}");
        match s.command(line) {
            Ok(true) => {}
            Ok(false) => break,
            Err(msg) => println!("{msg}"),
        }
    }
    if let Some(pid) = s.pid.take() {
        inferior::kill(pid);
    }
    0
}
