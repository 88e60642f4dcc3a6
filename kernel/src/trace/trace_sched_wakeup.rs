//! The `wakeup` and `wakeup_rt` tracers (Linux's
//! kernel/trace/trace_sched_wakeup.c): how long the highest-priority task
//! woken waits before it runs.
//!
//! A wake-up of a task of higher priority than the task waking it (and
//! than the one being timed, if any) starts the timing: a `wakeup` entry
//! (`  + [cpu]`), the stack, and the waking function. When the scheduler
//! switches to that task, a `context_switch` entry (`==> [cpu]`) and the
//! stack end it; a latency above `tracing_max_latency` (or at least
//! `tracing_thresh`) swaps the live buffers into the snapshot buffer, which
//! `trace` shows. `wakeup` follows every task, `wakeup_rt` SCHED_FIFO and
//! SCHED_RR ones only; there is no `wakeup_dl` (no deadline class here).
//!
//! The hooks in the scheduler ([`wakeup_hook`], [`wakeup_hook_sched_switch`])
//! cost one NOP while neither tracer is current.

use super::events::{EventRecord, FieldDesc, TraceEventDef};
use super::ftrace::{self, FtraceOps};
use super::trace_irqsoff::{self, MaxData};
use super::{TraceArray, TRACE_ENTRY_SIZE};
use crate::jump_label::{static_key_slow_dec, static_key_slow_inc, StaticKey};
use crate::percpu::{PerCpu, NR_CPUS};
use crate::sched::Task;
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use arch::ftrace::FtraceRegs;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use uapi::Errno;

/// The type of `ftrace/context_switch` (Linux's `TRACE_CTX`).
pub const TRACE_CTX: u16 = 2;
/// The type of `ftrace/wakeup` (Linux's `TRACE_WAKE`).
pub const TRACE_WAKE: u16 = 3;

/// On while a wakeup tracer is current: the scheduler's hooks.
static WAKEUP_KEY: StaticKey = StaticKey::new_false();

/// Linux's `tracer_enabled`.
static TRACER_ENABLED: AtomicBool = AtomicBool::new(false);
/// `wakeup_rt`: real-time tasks only.
static WAKEUP_RT: AtomicBool = AtomicBool::new(false);
/// Whether the `function-trace` ops are registered.
static FUNCTION_ENABLED: AtomicBool = AtomicBool::new(false);

/// The task being timed (Linux's `wakeup_task`, `wakeup_cpu`,
/// `wakeup_prio`) under Linux's `wakeup_lock`.
struct Wakeup {
    task: Option<Arc<Task>>,
    cpu: usize,
    /// Its priority; `u32::MAX` (Linux's unsigned -1) while none.
    prio: u32,
    /// When it was woken.
    timestamp: u64,
}

static WAKEUP: IrqSpinLock<Wakeup> = IrqSpinLock::new(Wakeup {
    task: None,
    cpu: 0,
    prio: u32::MAX,
    timestamp: 0,
});

/// Per-CPU recursion guard (Linux's `data->disabled`).
static DISABLED: PerCpu<AtomicU32> = PerCpu::new([const { AtomicU32::new(0) }; NR_CPUS]);

/// The CPU the timed task is on (Linux's `wakeup_current_cpu`), for the
/// function-trace ops.
static WAKEUP_CURRENT_CPU: AtomicU64 = AtomicU64::new(u64::MAX);

/// A task was woken (Linux's `probe_wakeup` on `sched_wakeup` and
/// `sched_wakeup_new`).
#[inline(always)]
pub fn wakeup_hook(p: &Arc<Task>) {
    if crate::static_branch_unlikely!(WAKEUP_KEY) {
        probe_wakeup(p);
    }
}

/// The scheduler switches from `prev` to `next` (Linux's
/// `probe_wakeup_sched_switch` on `sched_switch`).
#[inline(always)]
pub fn wakeup_hook_sched_switch(prev: &Arc<Task>, next: &Arc<Task>) {
    if crate::static_branch_unlikely!(WAKEUP_KEY) {
        probe_wakeup_sched_switch(prev, next);
    }
}

/// `task_state_index`: the state as an index in "RSDTtXZPI".
fn task_state_index(t: &Task) -> u8 {
    let bits = super::tracepoint::sched::switch_state(t) & 0xff;
    (64 - (bits as u64).leading_zeros()) as u8
}

fn rt_task(t: &Task) -> bool {
    crate::sched::rt_policy(t.policy.load(Ordering::Relaxed))
}

fn task_cpu(t: &Task) -> u32 {
    match t.last_cpu.load(Ordering::Relaxed) {
        u32::MAX => arch::cpu::cpu_id() as u32,
        c => c,
    }
}

/// Records a `context_switch` (`TRACE_CTX`) or `wakeup` (`TRACE_WAKE`)
/// entry: `prev` is the task switched from or the waker, `next` the task
/// switched to or woken.
fn trace_ctx_entry(tr: &TraceArray, ty: u16, prev: &Task, next: &Task) {
    let pid = |t: &Task| super::tracepoint::task_pid(t) as u32;
    let prio = |t: &Task| crate::sched::task_prio(t).clamp(0, 255) as u8;
    let pc = crate::preempt::preempt_count().min(0xf) as u8;
    super::trace_event_write_entry(tr, ty, TRACE_ENTRY_SIZE + 16, |e| {
        e[3] = pc;
        e[8..12].copy_from_slice(&pid(prev).to_le_bytes());
        e[12..16].copy_from_slice(&pid(next).to_le_bytes());
        e[16..20].copy_from_slice(&task_cpu(next).to_le_bytes());
        e[20] = prio(prev);
        e[21] = task_state_index(prev);
        e[22] = prio(next);
        e[23] = task_state_index(next);
        true
    });
}

fn probe_wakeup(p: &Arc<Task>) {
    if !TRACER_ENABLED.load(Ordering::Acquire) {
        return;
    }
    let Some(cur) = crate::sched::try_current() else { return };
    let tr = super::global_trace();
    super::cmdlines::save(p);
    if !cur.is_idle() {
        super::cmdlines::save(&cur);
    }
    let prio = crate::sched::task_prio(p);
    if (WAKEUP_RT.load(Ordering::Relaxed) && !rt_task(p)) || prio >= crate::sched::task_prio(&cur) {
        return;
    }
    let d = DISABLED.this();
    if d.fetch_add(1, Ordering::AcqRel) == 0 {
        let mut w = WAKEUP.lock();
        if TRACER_ENABLED.load(Ordering::Acquire) && (prio as u32) < w.prio {
            w.task = Some(p.clone());
            w.cpu = task_cpu(p) as usize;
            WAKEUP_CURRENT_CPU.store(u64::from(task_cpu(p)), Ordering::Relaxed);
            w.prio = prio as u32;
            w.timestamp = super::clock::trace_clock_now();
            trace_ctx_entry(tr, TRACE_WAKE, &cur, p);
            trace_irqsoff::trace_stack(tr, arch::cpu::irqs_disabled());
            // The waking function and its caller (Linux's CALLER_ADDR1/2
            // of the probe): wake_up_process's caller.
            let (ip, parent) = waker_addrs();
            trace_irqsoff::trace_function(tr, ip, parent, arch::cpu::irqs_disabled());
        }
    }
    d.fetch_sub(1, Ordering::AcqRel);
}

/// The first two return addresses outside the tracer and the scheduler's
/// wake-up path.
#[inline(never)]
fn waker_addrs() -> (usize, usize) {
    let mut found = [0usize; 2];
    let mut n = 0;
    crate::stacktrace::walk_stackframe(arch::cpu::frame_pointer(), |lr| {
        let skip = crate::kallsyms::lookup_addr(lr).is_some_and(|s| {
            s.name.starts_with("kernel__trace__trace_sched_wakeup")
                || s.name.starts_with("kernel__sched__try_to_wake_up")
                || s.name.starts_with("kernel__sync__")
        });
        if skip && n == 0 {
            return true;
        }
        found[n] = lr;
        n += 1;
        n < 2
    });
    (found[0], found[1])
}

fn probe_wakeup_sched_switch(prev: &Arc<Task>, next: &Arc<Task>) {
    if !prev.is_idle() {
        super::cmdlines::save(prev);
    }
    if !TRACER_ENABLED.load(Ordering::Acquire) {
        return;
    }
    let d = DISABLED.this();
    if d.fetch_add(1, Ordering::AcqRel) == 0 {
        let mut w = WAKEUP.lock();
        let timed = w.task.as_ref().is_some_and(|t| Arc::ptr_eq(t, next));
        if timed && TRACER_ENABLED.load(Ordering::Acquire) {
            let tr = super::global_trace();
            let (ip, parent) = caller_pair();
            trace_irqsoff::trace_function(tr, ip, parent, arch::cpu::irqs_disabled());
            trace_ctx_entry(tr, TRACE_CTX, prev, next);
            trace_irqsoff::trace_stack(tr, arch::cpu::irqs_disabled());
            let delta = super::clock::trace_clock_now().saturating_sub(w.timestamp);
            if trace_irqsoff::report_latency(delta) && tr.is_on() {
                trace_irqsoff::set_max_latency(delta);
                let data = MaxData {
                    time_start: w.timestamp,
                    ..MaxData::default()
                };
                trace_irqsoff::update_max_tr(tr, None, w.cpu, Some(next), data);
            }
            wakeup_reset_locked(&mut w);
        }
    }
    d.fetch_sub(1, Ordering::AcqRel);
}

/// The switch's function line: `schedule` and its caller.
#[inline(never)]
fn caller_pair() -> (usize, usize) {
    let mut found = [0usize; 2];
    let mut n = 0;
    let sched = crate::sched::schedule as *const () as usize;
    let sched_end = crate::kallsyms::lookup_addr(sched).map_or(sched, |s| sched + s.size as usize);
    let mut seen_schedule = false;
    crate::stacktrace::walk_stackframe(arch::cpu::frame_pointer(), |lr| {
        if !seen_schedule {
            if (sched..sched_end).contains(&lr) {
                seen_schedule = true;
                found[0] = lr;
                n = 1;
            }
            return true;
        }
        found[n] = lr;
        n += 1;
        n < 2
    });
    (found[0], found[1])
}

fn wakeup_reset_locked(w: &mut Wakeup) {
    w.task = None;
    w.cpu = 0;
    w.prio = u32::MAX;
    WAKEUP_CURRENT_CPU.store(u64::MAX, Ordering::Relaxed);
}

/// The `function-trace` ops: functions run on the timed task's CPU
/// (Linux's `wakeup_tracer_call`).
static WAKEUP_OPS: FtraceOps = FtraceOps::new("wakeup_ops", wakeup_tracer_call);

fn wakeup_tracer_call(_ops: &FtraceOps, ip: usize, parent_ip: usize, _regs: &mut FtraceRegs) {
    let cpu = WAKEUP_CURRENT_CPU.load(Ordering::Relaxed);
    if cpu != arch::cpu::cpu_id() as u64 {
        return;
    }
    let d = DISABLED.this();
    if d.fetch_add(1, Ordering::AcqRel) == 0 {
        trace_irqsoff::trace_function(super::global_trace(), ip, parent_ip, arch::cpu::irqs_disabled());
    }
    d.fetch_sub(1, Ordering::AcqRel);
}

/// `options/function-trace` changed while a wakeup tracer is current.
pub(super) fn function_trace_changed(on: bool) {
    if on {
        if !FUNCTION_ENABLED.load(Ordering::Acquire) {
            match ftrace::register_ftrace_function(&WAKEUP_OPS) {
                Ok(()) => FUNCTION_ENABLED.store(true, Ordering::Release),
                Err(e) => crate::pr_err!("wakeup: cannot register the function ops: {}", e),
            }
        }
    } else if FUNCTION_ENABLED.swap(false, Ordering::AcqRel) {
        let _ = ftrace::unregister_ftrace_function(&WAKEUP_OPS);
    }
}

/// Starts `wakeup` (or `wakeup_rt` when `rt`): Linux's
/// `__wakeup_tracer_init`.
pub(super) fn wakeup_tracer_init(_tr: &'static TraceArray, rt: bool) -> Result<(), Errno> {
    WAKEUP_RT.store(rt, Ordering::Release);
    wakeup_reset_locked(&mut WAKEUP.lock());
    static_key_slow_inc(&WAKEUP_KEY);
    if super::options::is_set(super::options::FUNCTION_TRACE) {
        function_trace_changed(true);
    }
    TRACER_ENABLED.store(true, Ordering::Release);
    Ok(())
}

/// Stops the wakeup tracer (Linux's `wakeup_tracer_reset`).
pub(super) fn wakeup_tracer_reset() {
    TRACER_ENABLED.store(false, Ordering::Release);
    function_trace_changed(false);
    static_key_slow_dec(&WAKEUP_KEY);
    wakeup_reset_locked(&mut WAKEUP.lock());
}

/// `ftrace/context_switch` or `ftrace/wakeup`, with Linux's format file.
fn ctx_event_def(name: &str, arrow: &str, print: fn(&mut String, &EventRecord<'_>)) -> TraceEventDef {
    TraceEventDef {
        system: "ftrace".to_string(),
        name: name.to_string(),
        fields: alloc::vec![
            FieldDesc::new("unsigned int", "prev_pid", 8, 4, false),
            FieldDesc::new("unsigned int", "next_pid", 12, 4, false),
            FieldDesc::new("unsigned int", "next_cpu", 16, 4, false),
            FieldDesc::new("unsigned char", "prev_prio", 20, 1, false),
            FieldDesc::new("unsigned char", "prev_state", 21, 1, false),
            FieldDesc::new("unsigned char", "next_prio", 22, 1, false),
            FieldDesc::new("unsigned char", "next_state", 23, 1, false),
        ],
        print_fmt: alloc::format!(
            "\"%u:%u:%u  {arrow} %u:%u:%u [%03u]\", REC->prev_pid, REC->prev_prio, REC->prev_state, \
             REC->next_pid, REC->next_prio, REC->next_state, REC->next_cpu"
        ),
        print: Box::new(print),
        reg: None,
        ignore_enable: true,
    }
}

/// Linux's `trace_ctxwake_print`.
fn print_ctxwake(out: &mut String, rec: &EventRecord<'_>, delim: &str) {
    let e = rec.entry;
    let word = |o: usize| {
        e.get(o..o + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let byte = |o: usize| e.get(o).copied().unwrap_or(0);
    let state = |i: u8| b"RSDTtXZPI".get(usize::from(i)).map_or('?', |&c| char::from(c));
    let next_pid = word(12);
    let comm = super::cmdlines::find(next_pid as i32);
    let _ = writeln!(
        out,
        " {:7}:{:3}:{} {delim} [{:03}] {:7}:{:3}:{} {comm}",
        word(8),
        byte(20),
        state(byte(21)),
        word(16),
        next_pid,
        byte(22),
        state(byte(23)),
    );
}

fn print_ctx(out: &mut String, rec: &EventRecord<'_>) {
    print_ctxwake(out, rec, "==>");
}

fn print_wake(out: &mut String, rec: &EventRecord<'_>) {
    print_ctxwake(out, rec, "  +");
}

/// Registers `ftrace/context_switch` and `ftrace/wakeup`.
pub fn init() {
    for (def, id) in [
        (ctx_event_def("context_switch", "==>", print_ctx), TRACE_CTX),
        (ctx_event_def("wakeup", "==+", print_wake), TRACE_WAKE),
    ] {
        if let Err(e) = super::events::register_internal_event(def, id) {
            crate::pr_err!("trace: cannot register a wakeup event: {}", e);
        }
    }
}
