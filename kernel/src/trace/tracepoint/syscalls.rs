//! System call events: `raw_syscalls/sys_enter` and `sys_exit` (Linux's
//! `include/trace/events/syscalls.h`), and `syscalls/sys_enter_<name>` and
//! `sys_exit_<name>` for every call of [`uapi::syscalls::SYSCALLS`] this
//! kernel implements (Linux's `kernel/trace/trace_syscalls.c`), made from
//! the one table of prototypes ([`SYSCALL_PROTOS`], generated from Linux's
//! `SYSCALL_DEFINEn`).
//!
//! Both are hooked at the dispatcher ([`trace_sys_enter`],
//! [`trace_sys_exit`]) behind one gate, [`SYSCALL_WORK_KEY`] (Linux's
//! `SYSCALL_WORK_SYSCALL_TRACEPOINT`): a system call costs one NOP at entry
//! and one at exit while no event of either system is on, whatever the
//! number of events. Inside the gate each `raw_syscalls` event has its own
//! key, and the `syscalls` events share one key per direction, on while any
//! of them is enabled, and a per-number flag.

use super::super::events::{self, EventRecord, FieldDesc, TraceEvent, TraceEventDef};
use crate::define_trace_event;
use crate::jump_label::StaticKey;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ptrace::PtRegs;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicBool, Ordering};
use uapi::Errno;

include!("syscall_protos.rs");

/// One system call's prototype as Linux declares it.
pub struct SyscallProto {
    /// Its number.
    pub nr: u32,
    /// The number's name (`__NR_<name>`, the kernel's `__arm64_sys_<name>`).
    pub number_name: &'static str,
    /// The name of its `SYSCALL_DEFINEn`, which its events carry.
    pub name: &'static str,
    /// Its arguments: C type, name.
    pub args: &'static [(&'static str, &'static str)],
}

define_trace_event! {
    /// A system call starts (number `id`, arguments x0-x5).
    raw_syscalls / sys_enter,
    fn trace_raw_sys_enter(regs: &PtRegs, id: i64),
    fields {
        id: i64 as "long" = id,
        args: [u64; 6] as "unsigned long" = [regs.regs[0], regs.regs[1], regs.regs[2], regs.regs[3], regs.regs[4], regs.regs[5]],
    },
    printk "\"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)\", REC->id, REC->args[0], REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]",
    print(out, e) {
        let a = e.args;
        write!(out, "NR {} ({:x}, {:x}, {:x}, {:x}, {:x}, {:x})", e.id, a[0], a[1], a[2], a[3], a[4], a[5])
    },
    arm syscall_work_arm
}

define_trace_event! {
    /// A system call returns `ret`.
    raw_syscalls / sys_exit,
    fn trace_raw_sys_exit(id: i64, ret: i64),
    fields {
        id: i64 as "long" = id,
        ret: i64 as "long" = ret,
    },
    printk "\"NR %ld = %ld\", REC->id, REC->ret",
    print(out, e) {
        write!(out, "NR {} = {}", e.id, e.ret)
    },
    arm syscall_work_arm
}

/// Numbers the per-call tables cover (arm64's highest is below).
pub const NR_SYSCALLS: usize = 512;

/// The system-call work gate (Linux's `SYSCALL_WORK_SYSCALL_TRACEPOINT`,
/// one key for every task): on while anything needs the slow system-call
/// path, that is any `raw_syscalls` or `syscalls` event (or `t:` probe on
/// one) and the interrupt-mask hooks, which a system call's entry tells
/// from inside the gate. The dispatcher tests it once at entry and once at
/// exit ([`syscall_work`]); every other key of the path is tested inside.
pub static SYSCALL_WORK_KEY: StaticKey = StaticKey::new_false();
/// On while any `syscalls/sys_enter_*` event is enabled.
pub static SYSCALL_ENTER_KEY: StaticKey = StaticKey::new_false();
/// On while any `syscalls/sys_exit_*` event is enabled.
pub static SYSCALL_EXIT_KEY: StaticKey = StaticKey::new_false();

/// Whether a system call takes the slow path (one static-key site).
#[inline(always)]
pub fn syscall_work() -> bool {
    crate::static_branch_unlikely!(SYSCALL_WORK_KEY)
}

/// Takes a reference on the gate (Linux's `syscall_regfunc`). Task
/// context.
pub fn syscall_regfunc() {
    crate::jump_label::static_key_slow_inc(&SYSCALL_WORK_KEY);
}

/// Drops a reference taken by [`syscall_regfunc`] (Linux's
/// `syscall_unregfunc`).
pub fn syscall_unregfunc() {
    crate::jump_label::static_key_slow_dec(&SYSCALL_WORK_KEY);
}

/// The `arm` of the `raw_syscalls` events: their key is tested only inside
/// the gate, so whatever turns it on holds the gate too.
fn syscall_work_arm(on: bool) {
    if on {
        syscall_regfunc();
    } else {
        syscall_unregfunc();
    }
}

/// A `syscalls` event of one number: enabled flag and event.
struct SyscallEvent {
    on: AtomicBool,
    event: spin::Once<Arc<TraceEvent>>,
}

static ENTER: [SyscallEvent; NR_SYSCALLS] = [const {
    SyscallEvent {
        on: AtomicBool::new(false),
        event: spin::Once::new(),
    }
}; NR_SYSCALLS];
static EXIT: [SyscallEvent; NR_SYSCALLS] = [const {
    SyscallEvent {
        on: AtomicBool::new(false),
        event: spin::Once::new(),
    }
}; NR_SYSCALLS];

/// Offset of the arguments (or `ret`) in a `syscalls` entry (after the
/// common fields and `int __syscall_nr`, at `unsigned long` alignment).
pub const SYSCALL_ARGS_OFFSET: usize = 16;

/// The prototype of system call `nr`.
pub fn syscall_proto(nr: u32) -> Option<&'static SyscallProto> {
    SYSCALL_PROTOS.iter().find(|p| p.nr == nr)
}

/// System call entry (from the dispatcher's slow path, after ptrace's
/// stop): records `raw_syscalls/sys_enter` and the call's
/// `syscalls/sys_enter_<name>`.
#[inline(always)]
pub fn trace_sys_enter(regs: &PtRegs, nr: u32) {
    trace_raw_sys_enter(regs, i64::from(nr as i32));
    if crate::static_branch_unlikely!(SYSCALL_ENTER_KEY) {
        record_enter(regs, nr);
    }
}

/// System call exit with result `ret` (from the dispatcher behind
/// [`syscall_work`], before ptrace's stop): records `raw_syscalls/sys_exit`
/// and the call's `syscalls/sys_exit_<name>`. The number is the frame's,
/// as Linux's `syscall_get_nr`: -1 after `rt_sigreturn`, which has no
/// `syscalls` exit event then.
#[cold]
#[inline(never)]
pub fn trace_sys_exit(regs: &PtRegs, ret: i64) {
    let nr = regs.syscallno;
    trace_raw_sys_exit(nr, ret);
    if crate::static_branch_unlikely!(SYSCALL_EXIT_KEY) {
        record_exit(nr as u32, ret);
    }
}

#[cold]
#[inline(never)]
fn record_enter(regs: &PtRegs, nr: u32) {
    let Some(se) = ENTER.get(nr as usize) else { return };
    if !se.on.load(Ordering::Acquire) {
        return;
    }
    let (Some(ev), Some(p)) = (se.event.get(), syscall_proto(nr)) else {
        return;
    };
    let n = p.args.len();
    ev.record_entry(SYSCALL_ARGS_OFFSET + 8 * n, |e| {
        e[8..12].copy_from_slice(&(nr as i32).to_le_bytes());
        e[12..16].fill(0);
        for (i, a) in regs.regs[..n].iter().enumerate() {
            let o = SYSCALL_ARGS_OFFSET + 8 * i;
            e[o..o + 8].copy_from_slice(&a.to_le_bytes());
        }
        true
    });
}

#[cold]
#[inline(never)]
fn record_exit(nr: u32, ret: i64) {
    let Some(se) = EXIT.get(nr as usize) else { return };
    if !se.on.load(Ordering::Acquire) {
        return;
    }
    let Some(ev) = se.event.get() else { return };
    ev.record_entry(SYSCALL_ARGS_OFFSET + 8, |e| {
        e[8..12].copy_from_slice(&(nr as i32).to_le_bytes());
        e[12..16].fill(0);
        e[16..24].copy_from_slice(&ret.to_le_bytes());
        true
    });
}

fn read_u64(entry: &[u8], off: usize) -> u64 {
    entry
        .get(off..off + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// `sys_enter_<name>`'s `print fmt`: each argument as `0x%08lx`.
pub fn enter_print_fmt(p: &SyscallProto) -> String {
    let names: Vec<String> = p.args.iter().map(|(_, n)| format!("{n}: 0x%08lx")).collect();
    let mut s = format!("\"{}\"", names.join(", "));
    for (_, n) in p.args {
        let _ = write!(s, ", ((unsigned long)(REC->{n}))");
    }
    s
}

/// `sys_enter_<name>`'s fields.
pub fn enter_fields(p: &SyscallProto) -> Vec<FieldDesc> {
    let mut f = alloc::vec![FieldDesc::new("int", "__syscall_nr", 8, 4, true)];
    for (i, (ty, n)) in p.args.iter().enumerate() {
        f.push(FieldDesc::new(ty, n, SYSCALL_ARGS_OFFSET + 8 * i, 8, false));
    }
    f
}

/// Linux's `print_syscall_enter`: `sys_<name>(arg: hex, ...)` (this
/// kernel has no `options/verbose`, which adds the types).
fn print_enter(p: &'static SyscallProto, out: &mut String, rec: &EventRecord<'_>) {
    let _ = write!(out, "sys_{}(", p.name);
    for (i, (_, n)) in p.args.iter().enumerate() {
        let sep = if i + 1 == p.args.len() { "" } else { ", " };
        let _ = write!(out, "{n}: {:x}{sep}", read_u64(rec.entry, SYSCALL_ARGS_OFFSET + 8 * i));
    }
    out.push_str(")\n");
}

fn reg_fn(se: &'static SyscallEvent, key: &'static StaticKey) -> events::RegFn {
    Box::new(move |on| {
        // The gate and the direction's key switch under one stop_machine.
        if on {
            se.on.store(true, Ordering::Release);
            crate::jump_label::static_key_batch(|b| {
                b.slow_inc(&SYSCALL_WORK_KEY);
                b.slow_inc(key);
            });
        } else {
            crate::jump_label::static_key_batch(|b| {
                b.slow_dec(key);
                b.slow_dec(&SYSCALL_WORK_KEY);
            });
            se.on.store(false, Ordering::Release);
        }
        Ok(())
    })
}

/// Registers `syscalls/sys_{enter,exit}_<name>` for `p`.
fn register_syscall(p: &'static SyscallProto) -> Result<(), Errno> {
    let (Some(enter), Some(exit)) = (ENTER.get(p.nr as usize), EXIT.get(p.nr as usize)) else {
        return Err(Errno::EINVAL);
    };
    let ev = events::register_trace_event(TraceEventDef {
        system: String::from("syscalls"),
        name: format!("sys_enter_{}", p.name),
        fields: enter_fields(p),
        print_fmt: enter_print_fmt(p),
        print: Box::new(move |out, rec| print_enter(p, out, rec)),
        reg: Some(reg_fn(enter, &SYSCALL_ENTER_KEY)),
        ignore_enable: false,
    })?;
    enter.event.call_once(|| ev);
    let ev = events::register_trace_event(TraceEventDef {
        system: String::from("syscalls"),
        name: format!("sys_exit_{}", p.name),
        fields: alloc::vec![
            FieldDesc::new("int", "__syscall_nr", 8, 4, true),
            FieldDesc::new("long", "ret", SYSCALL_ARGS_OFFSET, 8, true),
        ],
        print_fmt: String::from("\"0x%lx\", REC->ret"),
        print: Box::new(move |out, rec| {
            let _ = writeln!(
                out,
                "sys_{} -> 0x{:x}",
                p.name,
                read_u64(rec.entry, SYSCALL_ARGS_OFFSET)
            );
        }),
        reg: Some(reg_fn(exit, &SYSCALL_EXIT_KEY)),
        ignore_enable: false,
    })?;
    exit.event.call_once(|| ev);
    Ok(())
}

/// Whether this kernel implements system call `p` (its handler,
/// `__arm64_sys_<number name>`, is in kallsyms).
fn implemented(p: &SyscallProto) -> bool {
    crate::kallsyms::lookup_name(&format!("__arm64_sys_{}", p.number_name)).is_some()
}

/// Registers `raw_syscalls` and the `syscalls` events of every implemented
/// call of the system call table.
pub fn register() -> Result<(), Errno> {
    sys_exit::register()?;
    sys_enter::register()?;
    for p in SYSCALL_PROTOS {
        let listed = uapi::syscalls::by_nr(p.nr).is_some_and(|s| s.name == p.number_name && !s.removed);
        if listed && implemented(p) {
            register_syscall(p)?;
        }
    }
    Ok(())
}
