//! The function profiler (Linux's `CONFIG_FUNCTION_PROFILER` part of
//! kernel/trace/ftrace.c): `function_profile_enabled` and one
//! `trace_stat/functionN` file per CPU with each function's hit count and,
//! as Linux with the graph tracer built in, its total time, average and
//! variance (`s^2`), sorted by total time.
//!
//! The profiler is a user of the return stack as function_graph is: its
//! ops (filtered by `set_ftrace_filter`/`set_ftrace_notrace`, as Linux's
//! `ftrace_ops_set_global_filter`) counts the hit at the entry and hooks
//! the return, whose handler adds the call's duration. As in Linux, where
//! it is an `fgraph_ops`, the calls it hooks count in the graph depth
//! function_graph sees and `max_graph_depth` limits. `options/graph-time`
//! off subtracts the time spent in profiled callees (Linux's `subtime`),
//! `options/sleep-time` off the time the task was switched out (see
//! `function_graph::graph_sched_switch`).
//!
//! Nothing is allocated on the hit path: enabling the profiler allocates,
//! for each online CPU, one record per patch site (indexed by the site's
//! number, which replaces Linux's hash of preallocated record pages) and
//! a list of the sites in the order of their first hit, which is the order
//! Linux's record pages keep and its sort breaks ties by. Records stay
//! readable after the profiler is turned off and are cleared when it is
//! turned on again, as Linux's.

use super::ftrace::{self, FtraceHash, FtraceOps};
use super::function_graph;
use super::rethook::{RetFrame, RethookOwner};
use crate::fs::pseudo::PseudoDir;
use crate::percpu::NR_CPUS;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ftrace::{FtraceRegs, FtraceRetRegs, FTRACE_BL_OFFSET};
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use uapi::Errno;

/// The profiler's ops (Linux's `fprofiler_ops`).
pub static PROFILE_OPS: FtraceOps = FtraceOps::new("fprofiler_ops", profile_graph_entry);

/// `function_profile_enabled` (Linux's `ftrace_profile_enabled`).
static PROFILE_ENABLED: AtomicBool = AtomicBool::new(false);
/// Serialises enabling, disabling and reading (Linux's
/// `ftrace_profile_lock`).
static PROFILE_LOCK: crate::locking::Mutex<()> = crate::locking::Mutex::new(());
/// Calls whose time was not measured because the task's return stack
/// was full.
static NMISSED: AtomicU64 = AtomicU64::new(0);

/// One function's figures on one CPU (Linux's `struct ftrace_profile`).
struct ProfileRec {
    counter: AtomicU64,
    /// Total time in ns.
    time: AtomicU64,
    /// Sum of the squared times (wrapping, as Linux's u64).
    time_squared: AtomicU64,
}

/// One CPU's records (Linux's `struct ftrace_profile_stat`). Written only
/// by its CPU with interrupts masked; read by anyone.
struct ProfileStat {
    /// By site number.
    recs: Box<[ProfileRec]>,
    /// Site numbers in the order of their first hit.
    order: Box<[AtomicU32]>,
    /// How many of `order` are valid.
    nr: AtomicUsize,
}

impl ProfileStat {
    fn new(sites: usize) -> Result<ProfileStat, Errno> {
        let mut recs = Vec::new();
        recs.try_reserve_exact(sites).map_err(|_| Errno::ENOMEM)?;
        recs.extend((0..sites).map(|_| ProfileRec {
            counter: AtomicU64::new(0),
            time: AtomicU64::new(0),
            time_squared: AtomicU64::new(0),
        }));
        let mut order = Vec::new();
        order.try_reserve_exact(sites).map_err(|_| Errno::ENOMEM)?;
        order.extend((0..sites).map(|_| AtomicU32::new(0)));
        Ok(ProfileStat {
            recs: recs.into_boxed_slice(),
            order: order.into_boxed_slice(),
            nr: AtomicUsize::new(0),
        })
    }

    /// Forgets every record (Linux's `ftrace_profile_reset`); the
    /// profiler is off, so no CPU writes meanwhile.
    fn reset(&self) {
        let nr = self.nr.swap(0, Ordering::AcqRel);
        for i in self.order.iter().take(nr) {
            if let Some(r) = self.recs.get(i.load(Ordering::Relaxed) as usize) {
                r.counter.store(0, Ordering::Relaxed);
                r.time.store(0, Ordering::Relaxed);
                r.time_squared.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Counts a hit of site `site` (Linux's `function_profile_call`).
    fn hit(&self, site: usize) {
        let Some(r) = self.recs.get(site) else { return };
        if r.counter.load(Ordering::Relaxed) == 0 {
            let n = self.nr.load(Ordering::Relaxed);
            let Some(slot) = self.order.get(n) else { return };
            slot.store(site as u32, Ordering::Relaxed);
            self.nr.store(n + 1, Ordering::Release);
        }
        r.counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds one call's time to site `site`, if this CPU counted it.
    fn add_time(&self, site: usize, ns: u64) {
        let Some(r) = self.recs.get(site) else { return };
        if r.counter.load(Ordering::Relaxed) == 0 {
            return;
        }
        r.time.fetch_add(ns, Ordering::Relaxed);
        r.time_squared.fetch_add(ns.wrapping_mul(ns), Ordering::Relaxed);
    }
}

/// Each CPU's records, made at the first enable.
static STATS: [spin::Once<ProfileStat>; NR_CPUS] = [const { spin::Once::new() }; NR_CPUS];

fn this_stat() -> Option<&'static ProfileStat> {
    STATS.get(arch::cpu::cpu_id())?.get()
}

/// Whether the profiler is on.
pub fn is_enabled() -> bool {
    PROFILE_ENABLED.load(Ordering::Acquire)
}

/// Calls counted whose time could not be measured (full return stack).
pub fn nmissed() -> u64 {
    NMISSED.load(Ordering::Relaxed)
}

/// The entry hook (Linux's `profile_graph_entry`): counts the hit and
/// hooks the return to time the call. Interrupts are masked.
fn profile_graph_entry(_ops: &FtraceOps, ip: usize, _parent_ip: usize, regs: &mut FtraceRegs) {
    if !PROFILE_ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let Some(stat) = this_stat() else { return };
    let Some(site) = ftrace::site_index(ip - FTRACE_BL_OFFSET) else {
        return;
    };
    stat.hit(site as usize);
    let Some(task) = crate::sched::try_current() else {
        return;
    };
    let frame = RetFrame {
        ret: regs.lr as usize,
        sp: regs.sp as usize,
        func: ip,
        calltime: super::clock::trace_clock_now(),
        // The word is the time spent in profiled callees (`subtime`).
        owner: RethookOwner::Handler(profile_graph_return, 0),
    };
    if task.ret_stack.push(frame).is_err() {
        NMISSED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    regs.lr = arch::ftrace::return_to_handler_addr() as u64;
}

/// The return hook (Linux's `profile_graph_return`), with the call's
/// frame already popped: with `graph-time` off its time goes to the
/// caller's profiled frame, if the previous hooked call is profiled.
fn profile_graph_return(frame: &mut RetFrame, _regs: &mut FtraceRetRegs) {
    if !PROFILE_ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let Some(stat) = this_stat() else { return };
    let rettime = super::clock::trace_clock_now();
    let mut calltime = rettime.saturating_sub(frame.calltime);
    if function_graph::graph_flags() & function_graph::flags::GRAPH_TIME == 0 {
        if let Some(task) = crate::sched::try_current() {
            task.ret_stack
                .add_to_caller_handler_data(profile_graph_return, frame.sp, frame.func, calltime as usize);
        }
        let subtime = match frame.owner {
            RethookOwner::Handler(_, sub) => sub as u64,
            _ => 0,
        };
        calltime = calltime.saturating_sub(subtime);
    }
    if let Some(site) = ftrace::site_index(frame.func - FTRACE_BL_OFFSET) {
        stat.add_time(site as usize, calltime);
    }
}

/// Turns the profiler on or off (a write to `function_profile_enabled`,
/// Linux's `ftrace_profile_write`): on clears the records (allocating
/// them the first time) and hooks the functions of `set_ftrace_filter`.
pub fn set_enabled(on: bool) -> Result<(), Errno> {
    let _g = PROFILE_LOCK.lock();
    if on == PROFILE_ENABLED.load(Ordering::Acquire) {
        return Ok(());
    }
    if on {
        let n = ftrace::sites().len();
        for cpu in super::tracing_cpus() {
            let Some(slot) = STATS.get(cpu) else { continue };
            match slot.get() {
                Some(stat) => stat.reset(),
                None => {
                    let stat = ProfileStat::new(n)?;
                    slot.call_once(|| stat);
                }
            }
        }
        PROFILE_OPS.set_hash(super::ftrace_function::GLOBAL_OPS.hash())?;
        PROFILE_ENABLED.store(true, Ordering::Release);
        if let Err(e) = ftrace::register_ftrace_function(&PROFILE_OPS) {
            PROFILE_ENABLED.store(false, Ordering::Release);
            return Err(e);
        }
    } else {
        PROFILE_ENABLED.store(false, Ordering::Release);
        // Its stop_machine is the grace period: no CPU is in the entry
        // hook afterwards. Calls in flight return through their frames.
        ftrace::unregister_ftrace_function(&PROFILE_OPS)?;
    }
    Ok(())
}

/// `set_ftrace_filter`/`set_ftrace_notrace` changed: profile what they
/// now say.
pub fn update_filter(hash: FtraceHash) -> Result<(), Errno> {
    PROFILE_OPS.set_hash(hash)
}

/// One function's line, as [`function_stat_show`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionStat {
    /// The function's entry.
    pub func: usize,
    /// Hits.
    pub counter: u64,
    /// Total time in ns.
    pub time: u64,
    /// Sum of squared times.
    pub time_squared: u64,
}

/// CPU `cpu`'s records in the order of `trace_stat/functionN`: by total
/// time, largest first; equal times in the reverse of their first hits
/// (as Linux's rbtree insertion puts an equal node before the others).
pub fn function_stats(cpu: usize) -> Vec<FunctionStat> {
    let Some(stat) = STATS.get(cpu).and_then(spin::Once::get) else {
        return Vec::new();
    };
    let sites = ftrace::sites();
    let nr = stat.nr.load(Ordering::Acquire).min(stat.order.len());
    let mut v: Vec<FunctionStat> = stat.order[..nr]
        .iter()
        .filter_map(|i| {
            let i = i.load(Ordering::Relaxed) as usize;
            let r = stat.recs.get(i)?;
            Some(FunctionStat {
                func: sites.get(i)?.func,
                counter: r.counter.load(Ordering::Relaxed),
                time: r.time.load(Ordering::Relaxed),
                time_squared: r.time_squared.load(Ordering::Relaxed),
            })
        })
        .filter(|s| s.counter != 0)
        .collect();
    v.reverse();
    v.sort_by_key(|s| core::cmp::Reverse(s.time));
    v
}

/// The header of `trace_stat/functionN` (Linux's `function_stat_headers`
/// with the graph tracer).
pub const FUNCTION_STAT_HEADER: &str = "  Function                               Hit    Time            Avg             s^2\n  \
                                        --------                               ---    ----            ---             ---\n";

/// One line of `trace_stat/functionN` (Linux's `function_stat_show`):
/// `None` when its average is under `tracing_thresh`.
pub fn function_stat_show(s: &mut String, rec: &FunctionStat, tracing_thresh_ns: u64) -> Option<()> {
    let avg = rec.time.checked_div(rec.counter)?;
    if tracing_thresh_ns != 0 && avg < tracing_thresh_ns {
        return None;
    }
    let name = crate::kallsyms::lookup_addr(rec.func).map_or("", |sym| sym.name);
    let name: String = name.chars().take(30).collect();
    let _ = write!(s, "  {name:<30}  {:>10}    ", rec.counter);
    // s^2 = (n * sum(x^2) - sum(x)^2) / (n * (n - 1)), in µs^2: divided
    // by 1000 here and by 1000 again as a duration; u64 arithmetic
    // wrapping as Linux's.
    let n = rec.counter;
    let denom = n.wrapping_mul(n.wrapping_sub(1)).wrapping_mul(1000);
    let stddev = n
        .wrapping_mul(rec.time_squared)
        .wrapping_sub(rec.time.wrapping_mul(rec.time))
        .checked_div(denom)
        .unwrap_or(0);
    function_graph::print_graph_duration_value(s, rec.time);
    s.push_str("    ");
    function_graph::print_graph_duration_value(s, avg);
    s.push_str("    ");
    function_graph::print_graph_duration_value(s, stddev);
    s.push('\n');
    Some(())
}

/// The text of `trace_stat/functionN`.
pub fn function_stat_file(cpu: usize) -> String {
    let _g = PROFILE_LOCK.lock();
    let mut s = String::from(FUNCTION_STAT_HEADER);
    let thresh = function_graph::tracing_thresh_ns();
    for rec in function_stats(cpu) {
        let _ = function_stat_show(&mut s, &rec, thresh);
    }
    s
}

/// Makes `function_profile_enabled` and `trace_stat/functionN` (one per
/// online CPU) in `root`.
pub fn init(root: &Arc<PseudoDir>) {
    // 0750, as Linux's tracefs_create_dir makes it.
    let stat_dir = root.dir_mode("trace_stat", 0o750);
    for cpu in super::tracing_cpus() {
        stat_dir.file(
            &alloc::format!("function{cpu}"),
            0o640,
            Box::new(move || function_stat_file(cpu).into_bytes()),
            None,
        );
    }
    root.file(
        "function_profile_enabled",
        0o640,
        Box::new(|| alloc::format!("{}\n", u32::from(is_enabled())).into_bytes()),
        Some(Box::new(|buf| {
            let v = super::tracefs::parse_ulong(buf)?;
            set_enabled(v != 0)?;
            Ok(buf.len())
        })),
    );
}
