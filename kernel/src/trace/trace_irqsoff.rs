//! The latency tracers' common part and the `irqsoff`, `preemptoff` and
//! `preemptirqsoff` tracers (Linux's kernel/trace/trace_irqsoff.c, with
//! `update_max_tr_single`, `print_trace_header` and `tracing_max_latency`
//! from trace.c).
//!
//! A critical section starts when a CPU masks interrupts (irqsoff),
//! disables preemption (preemptoff), or either (preemptirqsoff), as the
//! hooks of [`super::trace_preemptirq`] report, and ends when the last of
//! them is undone. Each start records a function entry (where it began,
//! from where); each end records two more and the stack; when a section
//! lasts longer than `tracing_max_latency` (or at least `tracing_thresh`
//! when that is set) the CPU's live buffer is swapped with its snapshot
//! buffer, which `trace` then shows under Linux's latency header. With
//! `options/function-trace` (on by default) every traced function called
//! inside a section is recorded too.
//!
//! Not supported: `options/display-graph` (the sections in
//! function_graph's format): the option is not offered.

use super::ftrace::{self, FtraceOps};
use super::ftrace_function::TRACE_FN;
use super::options::{self, FUNCTION_TRACE, LATENCY_FMT, OVERWRITE, PAUSE_ON_TRACE};
use super::trigger::TRACE_STACK;
use super::{TraceArray, TRACE_ENTRY_SIZE};
use crate::fs::pseudo::PseudoDir;
use crate::percpu::{PerCpu, NR_CPUS};
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use arch::ftrace::FtraceRegs;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use uapi::Errno;

/// The latency tracers, by `current_tracer` name, in `available_tracers`
/// order (Linux lists the last registered first).
pub const LATENCY_TRACERS: &[&str] = &["wakeup_rt", "wakeup", "preemptirqsoff", "preemptoff", "irqsoff"];

/// Which latency tracer is current (an index in [`LATENCY_TRACERS`] plus
/// one; 0: none).
static CURRENT: AtomicU8 = AtomicU8::new(0);

/// `trace_type` bits: sections of masked interrupts, of disabled
/// preemption.
const TRACER_IRQS_OFF: u8 = 1;
const TRACER_PREEMPT_OFF: u8 = 2;
static TRACE_TYPE: AtomicU8 = AtomicU8::new(0);

/// Linux's `tracer_enabled`: the irqsoff family records.
static TRACER_ENABLED: AtomicBool = AtomicBool::new(false);

/// `tracing_max_latency`, in trace-clock units (ns).
static MAX_LATENCY: AtomicU64 = AtomicU64::new(0);

/// Linux's `max_sequence`: a section that overlapped a new maximum found
/// elsewhere does not claim it.
static MAX_SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Linux's `max_trace_lock`.
static MAX_TRACE_LOCK: IrqSpinLock<()> = IrqSpinLock::new(());

/// The options the tracer set at its start, restored at its end (Linux's
/// `save_flags`).
static SAVED_FLAGS: AtomicU32 = AtomicU32::new(0);

/// Whether the `function-trace` ops are registered.
static FUNCTION_ENABLED: AtomicBool = AtomicBool::new(false);

/// Linux's `trace_array_cpu` fields the irqsoff family uses.
struct CpuData {
    disabled: AtomicU32,
    critical_sequence: AtomicU64,
    preempt_timestamp: AtomicU64,
    critical_start: AtomicUsize,
    critical_end: AtomicUsize,
}

static DATA: PerCpu<CpuData> = PerCpu::new(
    [const {
        CpuData {
            disabled: AtomicU32::new(0),
            critical_sequence: AtomicU64::new(0),
            preempt_timestamp: AtomicU64::new(0),
            critical_start: AtomicUsize::new(0),
            critical_end: AtomicUsize::new(0),
        }
    }; NR_CPUS],
);

/// Whether the code that called the hook running on the CPU has
/// interrupts masked (the entries of a section show its state).
static CALLER_IRQS_OFF: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

fn caller_irqs_off() -> bool {
    CALLER_IRQS_OFF.this().load(Ordering::Relaxed)
}

/// Linux's per-CPU `tracing_cpu`: a section is being timed here.
static TRACING_CPU: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

/// What the header of the latest maximum shows (Linux's `max_buffer`'s
/// `trace_array_cpu` fields and `time_start`, filled by `__update_max_tr`).
#[derive(Clone, Copy, Default)]
pub struct MaxData {
    /// The CPU whose section it was (`max_buffer.cpu`).
    pub cpu: usize,
    /// When the section began; entries before it are not shown.
    pub time_start: u64,
    /// Its latency, in trace-clock units.
    pub saved_latency: u64,
    /// Where it started and ended (0: not a critical section).
    pub critical_start: usize,
    /// Where it ended.
    pub critical_end: usize,
    /// The task it happened in.
    pub comm: [u8; 16],
    /// Its pid.
    pub pid: i32,
    /// Its nice value.
    pub nice: i32,
    /// Its scheduling policy.
    pub policy: u32,
    /// Its real-time priority.
    pub rt_priority: u32,
}

static MAX_DATA: IrqSpinLock<Option<MaxData>> = IrqSpinLock::new(None);

/// The latency tracer that is current, if one is.
pub fn current() -> Option<&'static str> {
    let i = CURRENT.load(Ordering::Acquire);
    LATENCY_TRACERS.get(usize::from(i).checked_sub(1)?).copied()
}

/// Whether `name` is a latency tracer.
pub fn is_latency_tracer(name: &str) -> bool {
    LATENCY_TRACERS.contains(&name)
}

/// The buffers `trace` shows for `tr` while a latency tracer is current
/// (Linux's `print_max`): the snapshot buffer holding the maximum.
pub fn print_max_buffer(tr: &TraceArray) -> Option<&'static TraceArray> {
    if current().is_some() && core::ptr::eq(tr, super::global_trace()) {
        tr.snapshot.max_buffer().filter(|_| tr.snapshot.is_allocated())
    } else {
        None
    }
}

/// The header data of the maximum `max` holds, if `max` is the current
/// latency tracer's snapshot buffer.
pub fn max_data_of(max: &TraceArray) -> Option<MaxData> {
    let live = super::global_trace();
    let shown = print_max_buffer(live)?;
    if !core::ptr::eq(shown, max) {
        return None;
    }
    *MAX_DATA.lock()
}

/// `tracing_max_latency` in trace-clock units.
pub fn max_latency() -> u64 {
    MAX_LATENCY.load(Ordering::Acquire)
}

/// Linux's `report_latency`: whether a latency of `delta` is a new one to
/// keep.
pub(super) fn report_latency(delta: u64) -> bool {
    let thresh = super::function_graph::tracing_thresh_ns();
    if thresh != 0 {
        delta >= thresh
    } else {
        delta > max_latency()
    }
}

/// Sets `tracing_max_latency` (a new maximum).
pub(super) fn set_max_latency(delta: u64) {
    MAX_LATENCY.store(delta, Ordering::Release);
}

/// Records a function entry (`ip` called from `parent_ip`) into `tr`
/// (Linux's `trace_function`), with the preemption depth of now and the
/// interrupt state `irqs_off` of the code traced (the tracer's own may
/// differ: its hooks mask interrupts).
pub(super) fn trace_function(tr: &TraceArray, ip: usize, parent_ip: usize, irqs_off: bool) {
    let pc = crate::preempt::preempt_count().min(0xf) as u8;
    super::trace_event_write_entry(tr, TRACE_FN, TRACE_ENTRY_SIZE + 16, |e| {
        e[2] = if irqs_off {
            e[2] | super::TRACE_FLAG_IRQS_OFF
        } else {
            e[2] & !super::TRACE_FLAG_IRQS_OFF
        };
        e[3] = pc;
        e[8..16].copy_from_slice(&(ip as u64).to_le_bytes());
        e[16..24].copy_from_slice(&(parent_ip as u64).to_le_bytes());
        true
    });
}

/// Most callers a latency stack trace keeps.
const STACK_DEPTH: usize = 32;

/// Records the stack of the code that called the tracer (Linux's
/// `__trace_stack` with the tracer's own frames skipped): the first caller
/// outside the tracing code is the first line.
#[inline(never)]
pub(super) fn trace_stack(tr: &TraceArray, irqs_off: bool) {
    let mut callers = [0usize; STACK_DEPTH];
    let mut n = 0usize;
    let mut skipping = true;
    crate::stacktrace::walk_stackframe(arch::cpu::frame_pointer(), |lr| {
        if skipping {
            let ours = crate::kallsyms::lookup_addr(lr).is_some_and(|s| is_tracer_frame(s.name));
            if ours {
                return true;
            }
            skipping = false;
        }
        if let Some(slot) = callers.get_mut(n) {
            *slot = lr;
            n += 1;
            true
        } else {
            false
        }
    });
    let pc = crate::preempt::preempt_count().min(0xf) as u8;
    super::trace_event_write_entry(tr, TRACE_STACK, TRACE_ENTRY_SIZE + 8 + n * 8, |e| {
        e[2] = if irqs_off {
            e[2] | super::TRACE_FLAG_IRQS_OFF
        } else {
            e[2] & !super::TRACE_FLAG_IRQS_OFF
        };
        e[3] = pc;
        e[8..12].copy_from_slice(&(n as i32).to_le_bytes());
        for (i, c) in callers[..n].iter().enumerate() {
            e[16 + i * 8..24 + i * 8].copy_from_slice(&(*c as u64).to_le_bytes());
        }
        true
    });
}

/// Frames of the tracers and their hooks, which a latency stack skips.
fn is_tracer_frame(name: &str) -> bool {
    name.starts_with("kernel__trace__trace_irqsoff")
        || name.starts_with("kernel__trace__trace_preemptirq")
        || name.starts_with("kernel__trace__trace_sched_wakeup")
        || name.starts_with("kernel__preempt__")
        || name.starts_with("trace_hardirqs_")
        || name.starts_with("trace_preempt_")
        || name.starts_with("kernel__sync__IrqSpinLock")
}

/// Keeps the live buffer of `cpu` (all CPUs for None) as the maximum
/// (Linux's `update_max_tr_single` and `update_max_tr`): swaps it into the
/// snapshot buffer and notes what the header shows. `task` is the task
/// the latency happened to.
pub(super) fn update_max_tr(
    tr: &TraceArray,
    swap_cpu: Option<usize>,
    cpu: usize,
    task: Option<&crate::sched::Task>,
    mut data: MaxData,
) {
    if !super::snapshot::update_max_tr(tr, swap_cpu) {
        return;
    }
    data.cpu = cpu;
    data.saved_latency = max_latency();
    if let Some(t) = task {
        data.comm = super::tracepoint::task_comm(t);
        data.pid = super::tracepoint::task_pid(t);
        let (policy, rt_priority, nice) = crate::sched::task_sched_attr(t);
        data.policy = policy;
        data.rt_priority = rt_priority;
        data.nice = nice;
        if data.pid != 0 {
            super::cmdlines::save(t);
        }
    } else {
        // The idle task of the CPU, as Linux names it.
        let name = alloc::format!("swapper/{cpu}");
        let n = name.len().min(15);
        data.comm = [0; 16];
        data.comm[..n].copy_from_slice(&name.as_bytes()[..n]);
    }
    *MAX_DATA.lock() = Some(data);
}

/// Empties the maximum (a tracer start, a `tracing_max_latency` write of 0
/// does not: only the figure).
fn reset_max_data() {
    *MAX_DATA.lock() = None;
}

// ---- the irqsoff family ----

/// Linux's `irq_trace`: irqsoff timing and interrupts masked (`irqs_off`:
/// in the caller of the hook, which masks them itself).
fn irq_trace(irqs_off: bool) -> bool {
    TRACE_TYPE.load(Ordering::Relaxed) & TRACER_IRQS_OFF != 0 && irqs_off
}

fn preempt_trace(pc: u32) -> bool {
    TRACE_TYPE.load(Ordering::Relaxed) & TRACER_PREEMPT_OFF != 0 && pc != 0
}

/// Interrupts were masked (from the hook).
pub(super) fn tracer_hardirqs_off(a0: usize, a1: usize) {
    CALLER_IRQS_OFF.this().store(true, Ordering::Relaxed);
    if !preempt_trace(crate::preempt::preempt_count()) && irq_trace(true) {
        start_critical_timing(a0, a1);
    }
}

/// Interrupts are about to be unmasked (from the hook).
pub(super) fn tracer_hardirqs_on(a0: usize, a1: usize) {
    CALLER_IRQS_OFF.this().store(true, Ordering::Relaxed);
    if !preempt_trace(crate::preempt::preempt_count()) && irq_trace(true) {
        stop_critical_timing(a0, a1, super::trace_preemptirq::trace_hardirqs_on as *const () as usize);
    }
}

/// Linux's `stop_critical_timings`: the idle loop is about to wait for an
/// interrupt with interrupts masked; the section so far ends here, so that
/// the wait is not measured as a latency.
pub fn stop_critical_timings() {
    if let Some(irqs_off) = idle_section_traced() {
        CALLER_IRQS_OFF.this().store(irqs_off, Ordering::Relaxed);
        let ip = stop_critical_timings as *const () as usize;
        stop_critical_timing(ip, 0, ip);
    }
}

/// Linux's `start_critical_timings`: the idle wait is over, and a section
/// starts again if interrupts (or preemption) are still off.
pub fn start_critical_timings() {
    if let Some(irqs_off) = idle_section_traced() {
        CALLER_IRQS_OFF.this().store(irqs_off, Ordering::Relaxed);
        start_critical_timing(start_critical_timings as *const () as usize, 0);
    }
}

/// Whether the idle loop's section is timed now; with whether interrupts
/// are masked.
fn idle_section_traced() -> Option<bool> {
    if TRACE_TYPE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let irqs_off = arch::cpu::irqs_disabled();
    (preempt_trace(crate::preempt::preempt_count()) || irq_trace(irqs_off)).then_some(irqs_off)
}

/// Preemption was disabled (from the hook).
pub(super) fn tracer_preempt_off(a0: usize, a1: usize, irqs_off: bool) {
    CALLER_IRQS_OFF.this().store(irqs_off, Ordering::Relaxed);
    if preempt_trace(crate::preempt::preempt_count()) && !irq_trace(irqs_off) {
        start_critical_timing(a0, a1);
    }
}

/// Preemption is about to be enabled (from the hook).
pub(super) fn tracer_preempt_on(a0: usize, a1: usize, irqs_off: bool) {
    CALLER_IRQS_OFF.this().store(irqs_off, Ordering::Relaxed);
    if preempt_trace(crate::preempt::preempt_count()) && !irq_trace(irqs_off) {
        stop_critical_timing(a0, a1, super::trace_preemptirq::trace_preempt_on as *const () as usize);
    }
}

fn tracing_is_enabled(tr: &TraceArray) -> bool {
    TRACER_ENABLED.load(Ordering::Acquire) && tr.is_on()
}

fn start_critical_timing(ip: usize, parent_ip: usize) {
    let tr = super::global_trace();
    if !tracing_is_enabled(tr) {
        return;
    }
    if TRACING_CPU.this().load(Ordering::Relaxed) {
        return;
    }
    let data = DATA.this();
    if data.disabled.load(Ordering::Relaxed) != 0 {
        return;
    }
    data.disabled.fetch_add(1, Ordering::AcqRel);
    data.critical_sequence
        .store(MAX_SEQUENCE.load(Ordering::Acquire), Ordering::Relaxed);
    data.preempt_timestamp
        .store(super::clock::trace_clock_now(), Ordering::Relaxed);
    data.critical_start
        .store(if parent_ip != 0 { parent_ip } else { ip }, Ordering::Relaxed);
    trace_function(tr, ip, parent_ip, caller_irqs_off());
    TRACING_CPU.this().store(true, Ordering::Relaxed);
    data.disabled.fetch_sub(1, Ordering::AcqRel);
}

fn stop_critical_timing(ip: usize, parent_ip: usize, hook: usize) {
    let flag = TRACING_CPU.this();
    if !flag.swap(false, Ordering::Relaxed) {
        return;
    }
    let tr = super::global_trace();
    if !tracing_is_enabled(tr) {
        return;
    }
    let data = DATA.this();
    if data.critical_start.load(Ordering::Relaxed) == 0 || data.disabled.load(Ordering::Relaxed) != 0 {
        return;
    }
    data.disabled.fetch_add(1, Ordering::AcqRel);
    trace_function(tr, ip, parent_ip, caller_irqs_off());
    check_critical_timing(tr, data, if parent_ip != 0 { parent_ip } else { ip }, hook);
    data.critical_start.store(0, Ordering::Relaxed);
    data.disabled.fetch_sub(1, Ordering::AcqRel);
}

fn check_critical_timing(tr: &TraceArray, data: &CpuData, parent_ip: usize, hook: usize) {
    let cpu = arch::cpu::cpu_id();
    let t0 = data.preempt_timestamp.load(Ordering::Relaxed);
    let delta = super::clock::trace_clock_now().saturating_sub(t0);
    if report_latency(delta) {
        let _g = MAX_TRACE_LOCK.lock();
        if report_latency(delta) {
            trace_function(tr, hook, parent_ip, caller_irqs_off());
            trace_stack(tr, caller_irqs_off());
            if data.critical_sequence.load(Ordering::Relaxed) == MAX_SEQUENCE.load(Ordering::Acquire) {
                data.critical_end.store(parent_ip, Ordering::Relaxed);
                if tr.is_on() {
                    set_max_latency(delta);
                    let task = crate::sched::try_current().filter(|t| !t.is_idle());
                    let info = MaxData {
                        time_start: t0,
                        critical_start: data.critical_start.load(Ordering::Relaxed),
                        critical_end: parent_ip,
                        ..MaxData::default()
                    };
                    update_max_tr(tr, Some(cpu), cpu, task.as_deref(), info);
                }
                MAX_SEQUENCE.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
    data.critical_sequence
        .store(MAX_SEQUENCE.load(Ordering::Acquire), Ordering::Relaxed);
    data.preempt_timestamp
        .store(super::clock::trace_clock_now(), Ordering::Relaxed);
    trace_function(tr, hook, parent_ip, caller_irqs_off());
}

/// The `function-trace` ops: functions called inside a section.
static IRQSOFF_OPS: FtraceOps = FtraceOps::new("irqsoff_ops", irqsoff_tracer_call);

/// Linux's `irqsoff_tracer_call` (after `func_prolog_dec`): a function
/// entry while this CPU times a section.
fn irqsoff_tracer_call(_ops: &FtraceOps, ip: usize, parent_ip: usize, regs: &mut FtraceRegs) {
    if !TRACING_CPU.this().load(Ordering::Relaxed) {
        return;
    }
    let irq = aarch64_cpu::registers::DAIF::I;
    let irqs_off = (regs.daif >> irq.shift) & irq.mask != 0;
    if !irqs_off && crate::preempt::preempt_count() == 0 {
        return;
    }
    let data = DATA.this();
    if data.disabled.fetch_add(1, Ordering::AcqRel) == 0 {
        trace_function(super::global_trace(), ip, parent_ip, irqs_off);
    }
    data.disabled.fetch_sub(1, Ordering::AcqRel);
}

fn register_irqsoff_function() -> Result<(), Errno> {
    if FUNCTION_ENABLED.load(Ordering::Acquire) || !options::is_set(FUNCTION_TRACE) {
        return Ok(());
    }
    ftrace::register_ftrace_function(&IRQSOFF_OPS)?;
    FUNCTION_ENABLED.store(true, Ordering::Release);
    Ok(())
}

fn unregister_irqsoff_function() {
    if FUNCTION_ENABLED.swap(false, Ordering::AcqRel) {
        if let Err(e) = ftrace::unregister_ftrace_function(&IRQSOFF_OPS) {
            crate::pr_err!("irqsoff: cannot unregister the function ops: {}", e);
        }
    }
}

/// `options/function-trace` changed (Linux's `irqsoff_function_set` and
/// the wakeup tracer's): functions inside sections start or stop being
/// recorded.
pub fn function_trace_changed(on: bool) {
    match current() {
        Some(t) if t.starts_with("wakeup") => super::trace_sched_wakeup::function_trace_changed(on),
        Some(_) => {
            if on {
                if let Err(e) = register_irqsoff_function() {
                    crate::pr_err!("irqsoff: cannot register the function ops: {}", e);
                }
            } else {
                unregister_irqsoff_function();
            }
        }
        None => {}
    }
}

/// Sets the options every latency tracer runs with (overwrite, latency
/// format, and for the irqsoff family pause-on-trace), saving the old.
fn save_and_set_flags(pause: bool) {
    SAVED_FLAGS.store(options::trace_flags(), Ordering::Release);
    options::set_flag(OVERWRITE, true);
    options::set_flag(LATENCY_FMT, true);
    if pause {
        options::set_flag(PAUSE_ON_TRACE, true);
    }
}

fn restore_flags() {
    let saved = SAVED_FLAGS.load(Ordering::Acquire);
    for bit in [LATENCY_FMT, OVERWRITE, PAUSE_ON_TRACE] {
        options::set_flag(bit, saved & bit != 0);
    }
}

/// Makes `name` (a latency tracer) the current tracer of the global trace
/// array (Linux's `tracer_init` with the tracer's `init`): the snapshot
/// buffer is allocated, the buffers emptied, the hooks armed.
pub fn latency_tracer_init(tr: &'static TraceArray, name: &str) -> Result<(), Errno> {
    let idx = LATENCY_TRACERS.iter().position(|t| *t == name).ok_or(Errno::EINVAL)?;
    tr.update_buffers()?;
    super::snapshot::tracing_alloc_snapshot(tr)?;
    tr.reset(None);
    if let Some(max) = tr.snapshot.max_buffer() {
        max.reset(None);
    }
    reset_max_data();
    set_max_latency(0);
    for c in DATA.iter() {
        c.critical_start.store(0, Ordering::Relaxed);
    }
    for c in TRACING_CPU.iter() {
        c.store(false, Ordering::Relaxed);
    }
    CURRENT.store(idx as u8 + 1, Ordering::Release);
    if name.starts_with("wakeup") {
        save_and_set_flags(false);
        return super::trace_sched_wakeup::wakeup_tracer_init(tr, name == "wakeup_rt");
    }
    save_and_set_flags(true);
    let ty = match name {
        "irqsoff" => TRACER_IRQS_OFF,
        "preemptoff" => TRACER_PREEMPT_OFF,
        _ => TRACER_IRQS_OFF | TRACER_PREEMPT_OFF,
    };
    TRACE_TYPE.store(ty, Ordering::Release);
    if let Err(e) = register_irqsoff_function() {
        crate::pr_err!("failed to start irqsoff tracer: {}", e);
    }
    if ty & TRACER_IRQS_OFF != 0 {
        super::trace_preemptirq::irqflags_hooks_get();
    }
    if ty & TRACER_PREEMPT_OFF != 0 {
        super::trace_preemptirq::preempt_hooks_get();
    }
    TRACER_ENABLED.store(true, Ordering::Release);
    Ok(())
}

/// Ends the current latency tracer (Linux's tracer `reset`); nothing if
/// none is current.
pub fn latency_tracer_reset() {
    let Some(name) = current() else { return };
    if name.starts_with("wakeup") {
        super::trace_sched_wakeup::wakeup_tracer_reset();
    } else {
        TRACER_ENABLED.store(false, Ordering::Release);
        unregister_irqsoff_function();
        let ty = TRACE_TYPE.swap(0, Ordering::AcqRel);
        if ty & TRACER_IRQS_OFF != 0 {
            super::trace_preemptirq::irqflags_hooks_put();
        }
        if ty & TRACER_PREEMPT_OFF != 0 {
            super::trace_preemptirq::preempt_hooks_put();
        }
    }
    CURRENT.store(0, Ordering::Release);
    restore_flags();
}

// ---- output ----

/// The latency header (Linux's `print_trace_header`) of `tr`'s buffers as
/// tracer `tracer` shows them, `data` being what the maximum recorded
/// (None: a buffer that holds no maximum), `entries`/`total` the counts.
pub fn print_trace_header(s: &mut String, tracer: &str, data: Option<&MaxData>, entries: u64, total: u64) {
    let d = data.copied().unwrap_or_default();
    let sym_flags = options::trace_flags();
    let _ = writeln!(s, "# {tracer} latency trace v1.1.5 on {}", crate::version::UTS_RELEASE);
    s.push_str("# --------------------------------------------------------------------\n");
    let _ = writeln!(
        s,
        "# latency: {} us, #{entries}/{total}, CPU#{} | (M:desktop VP:0, KP:0, SP:0 HP:0 #P:{})",
        d.saved_latency / 1000,
        d.cpu,
        crate::smp::num_online_cpus()
    );
    s.push_str("#    -----------------\n");
    let comm = super::tracepoint::CStr(&d.comm);
    let _ = writeln!(
        s,
        "#    | task: {comm}-{} (uid:0 nice:{} policy:{} rt_prio:{})",
        d.pid, d.nice, d.policy, d.rt_priority
    );
    s.push_str("#    -----------------\n");
    if d.critical_start != 0 {
        s.push_str("#  => started at: ");
        super::output::seq_print_ip_sym(s, d.critical_start, sym_flags);
        s.push_str("\n#  => ended at:   ");
        super::output::seq_print_ip_sym(s, d.critical_end, sym_flags);
        s.push_str("\n#\n");
    }
    s.push_str("#\n");
    s.push_str(
        "#                    _------=> CPU#            \n\
         #                   / _-----=> irqs-off/BH-disabled\n\
         #                  | / _----=> need-resched    \n\
         #                  || / _---=> hardirq/softirq \n\
         #                  ||| / _--=> preempt-depth   \n\
         #                  |||| / _-=> migrate-disable \n\
         #                  ||||| /     delay           \n\
         #  cmd     pid     |||||| time  |   caller     \n\
         #     \\   /        ||||||  \\    |    /       \n",
    );
}

// ---- files ----

/// Makes `tracing_max_latency`.
pub fn init(root: &Arc<PseudoDir>) {
    root.file(
        "tracing_max_latency",
        0o640,
        Box::new(|| alloc::format!("{}\n", max_latency() / 1000).into_bytes()),
        Some(Box::new(|buf| {
            let us = super::tracefs::parse_ulong(buf)?;
            set_max_latency(us.saturating_mul(1000));
            Ok(buf.len())
        })),
    );
}
