//! kprobes on ftrace sites (Linux's KPROBES_ON_FTRACE, which Linux arm64
//! lacks): a probe at a traceable function's entry (offset 0, or the
//! site's `bl` at offset 4) is armed by adding the function to one ftrace
//! ops instead of writing a `BRK`. A hit is then a call from
//! `ftrace_caller`: no exception, no single-step, no out-of-line slot.
//!
//! The handlers see the semantics of a `BRK` hit: `pc` is the probe's
//! address in the pre-handler and one instruction past it in the
//! post-handler, and what they change in the argument registers, `fp` and
//! `lr` reaches the function (a kretprobe hooks the return by changing
//! `lr`). A pre-handler that returns non-zero has set `pc` itself: the
//! function continues there and the post-handlers do not run. The
//! instruction the probe stands on (`mov x9, x30`, or the `bl` itself) has
//! no effect the function relies on, so nothing is executed in its place.
//!
//! The fast path is Linux's DYNAMIC_FTRACE_WITH_CALL_OPS turned to
//! kprobes: each probed function has a callsite ([`ProbedFunction`]) that
//! holds its probe sites, and while kprobes alone use the function its
//! literal names that callsite, so the trampoline calls
//! [`kprobe_ftrace_callsite`] straight with the sites: no map, no lock.
//! A function with a single probe, at its entry and without a
//! post-handler (a `p:` event), gets [`kprobe_ftrace_callsite_one`],
//! which calls that probe's pre-handler with no list walk; a callsite
//! whose probes all read only pc ([`super::Kprobe::reads_only_pc`]) does not
//! have the trampoline save x19..x28.
//! The handlers get the trampoline's frame itself as their `pt_regs` (it
//! is laid out as one). A callsite is immutable; a change of the
//! function's probes makes a new one, moves the literal to it (in
//! `stop_machine`, by [`ftrace::ftrace_refresh`]) and only then frees the
//! old one: that update returns once every CPU has been seen outside the
//! trampoline, so no CPU is in the old callsite any more. The trampoline
//! calls a callsite with interrupts on (no DAIF write on the hit path, the
//! dearest instruction there under emulation), as Linux's ftrace-based
//! kprobes run: an interrupt arriving during the handlers whose own code
//! hits a probe counts as missed on it, as any nested hit; the events the
//! handlers record still show interrupts off, as a trap's would. A
//! function that the function tracer or an fprobe uses too is called
//! through the list ops (interrupts masked), which calls
//! [`kprobe_ftrace_handler`], which finds the sites in the map.

use super::{
    count_missed, run_post_handlers, run_pre_handler, run_pre_handlers, Active, CpuState, Site, Status, CTL, DAIF_MASK,
    SITES,
};
use crate::errno::Errno;
use crate::trace::ftrace::{self, FtraceCallsite, FtraceHash, FtraceOps};
use crate::trace::{trace_kprobe, TryWrite};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use arch::ftrace::{FtraceRegs, FtraceRetRegs, FTRACE_BL_OFFSET};
use arch::ptrace::{PtRegs, NO_SYSCALL, PSR};
use core::sync::atomic::Ordering;

/// The one ops of every ftrace-based probe (Linux's `kprobe_ftrace_ops`);
/// its filter is the set of functions with an armed probe, and the
/// literal of a function it alone uses names the function's callsite.
static KPROBE_FTRACE_OPS: FtraceOps = FtraceOps::new("kprobe_ftrace_ops", kprobe_ftrace_handler)
    .with_own_recursion()
    .with_save_regs()
    .with_site_literal(callsite_of);

/// A probed function's probe sites, as a site's literal names them.
struct ProbedFunction {
    /// The probes at its entry.
    entry: Option<Arc<Site>>,
    /// The probes on its site's `bl`.
    bl: Option<Arc<Site>>,
}

type Callsite = FtraceCallsite<ProbedFunction>;

/// The callsite of each function with probes, by site index. Taken
/// inside ftrace's lock (by [`callsite_of`]), never held while calling
/// into ftrace; changed under the kprobe mutex only.
static CALLSITES: spin::Mutex<BTreeMap<u32, Box<Callsite>>> = spin::Mutex::new(BTreeMap::new());

/// The address of the callsite of site `site`, for its literal.
fn callsite_of(site: u32) -> Option<usize> {
    CALLSITES.lock().get(&site).map(|c| &**c as *const Callsite as usize)
}

/// The probes at `addr` (a function's entry or its `bl`) changed in the
/// site map: the function gets a new callsite, its literal moves there,
/// and the old callsite is freed once no CPU can be in it. Under the
/// kprobe mutex.
pub(super) fn site_changed(addr: usize) {
    let Ok(site) = site_of(addr) else { return };
    let Some(func) = ftrace::sites().get(site as usize).map(|s| s.func) else {
        return;
    };
    let (entry, bl) = {
        let sites = SITES.read();
        (
            sites.get(&func).cloned(),
            sites.get(&(func + FTRACE_BL_OFFSET)).cloned(),
        )
    };
    // The trampoline saves x19..x28 unless every probe says its handlers
    // read only pc (a `p:` event without arguments): 15 instructions of
    // every hit.
    let save_regs = [&entry, &bl]
        .into_iter()
        .flatten()
        .any(|s| s.has_post || s.probes.iter().any(|p| !p.only_pc));
    // One probe at the entry and none on the `bl` (a `p:` event on a
    // function): its own handler, with no loops.
    // The event callsite builds no pt_regs: it needs no DAIF either.
    let (handler, daif): (extern "C" fn(usize, usize, &Callsite, &mut FtraceRegs), bool) = match (&entry, &bl) {
        (Some(s), None) if s.probes.len() == 1 && !s.has_post && s.probes.iter().all(|p| p.event.is_some()) => {
            (kprobe_ftrace_callsite_event, false)
        }
        (Some(s), None) if s.probes.len() == 1 && !s.has_post => (kprobe_ftrace_callsite_one, true),
        _ => (kprobe_ftrace_callsite, true),
    };
    let new = (entry.is_some() || bl.is_some()).then(|| {
        // The event handler is ftrace_caller's direct callee, whose frame
        // holds neither x19..x28 nor DAIF (arch::ftrace::FTRACE_HOT_FUNC):
        // it reads neither.
        let save_regs = save_regs && daif;
        let cs = Callsite::new(handler, save_regs, ProbedFunction { entry, bl }).unmasked();
        Box::new(if daif { cs } else { cs.without_daif() })
    });
    let old = {
        let mut map = CALLSITES.lock();
        match new {
            Some(n) => map.insert(site, n),
            None => map.remove(&site),
        }
    };
    if old.is_some() {
        // Moves the literal off the old callsite. If that fails the
        // literal may still name it: it is leaked, not freed.
        if let Err(e) = ftrace::ftrace_refresh(&KPROBE_FTRACE_OPS) {
            crate::pr_warn!("kprobes: cannot update the ftrace site of {func:#x} ({e:?})");
            core::mem::forget(old);
            return;
        }
    }
    // Dropped here, outside every lock: freeing may hit a probe.
    drop(old);
}

/// Armed ftrace-based sites per function (site index): a function may
/// have a probe at offset 0 and one at its `bl`. Changed under the kprobe
/// mutex only.
static ARMED: spin::Mutex<BTreeMap<u32, u32>> = spin::Mutex::new(BTreeMap::new());

/// Whether a probe at `addr` uses ftrace: `addr` is a traceable function's
/// entry or its site's `bl`.
pub(super) fn is_ftrace_location(addr: usize) -> bool {
    ftrace::ftrace_location(addr).is_some()
}

fn site_of(addr: usize) -> Result<u32, Errno> {
    let bl = ftrace::ftrace_location(addr).ok_or(Errno::EINVAL)?;
    ftrace::site_index(bl - FTRACE_BL_OFFSET).ok_or(Errno::EINVAL)
}

fn hash_of(armed: &BTreeMap<u32, u32>) -> FtraceHash {
    FtraceHash {
        filter: armed.keys().copied().collect(),
        notrace: Default::default(),
    }
}

/// Arms the ftrace-based probe at `addr` (Linux's `arm_kprobe_ftrace`).
pub(super) fn arm(addr: usize) -> Result<(), Errno> {
    let site = site_of(addr)?;
    let mut armed = ARMED.lock();
    *armed.entry(site).or_insert(0) += 1;
    // The filter is set before the ops is registered: an empty filter
    // would mean every function.
    let r = KPROBE_FTRACE_OPS.set_hash(hash_of(&armed)).and_then(|()| {
        if KPROBE_FTRACE_OPS.is_registered() {
            Ok(())
        } else {
            ftrace::register_ftrace_function(&KPROBE_FTRACE_OPS)
        }
    });
    if r.is_err() {
        release(&mut armed, site);
        // Back to the filter of the probes still armed (the old one).
        if !armed.is_empty() {
            let _ = KPROBE_FTRACE_OPS.set_hash(hash_of(&armed));
        }
    }
    r
}

fn release(armed: &mut BTreeMap<u32, u32>, site: u32) {
    if let Some(n) = armed.get_mut(&site) {
        *n -= 1;
        if *n == 0 {
            armed.remove(&site);
        }
    }
}

/// Disarms it (Linux's `disarm_kprobe_ftrace`). Once this returns no CPU
/// is in the ops for this function any more (ftrace updates its sites in
/// `stop_machine`), unless another probe keeps the function armed.
pub(super) fn disarm(addr: usize) -> Result<(), Errno> {
    let site = site_of(addr)?;
    let mut armed = ARMED.lock();
    if !armed.contains_key(&site) {
        return Err(Errno::EINVAL);
    }
    let mut after = armed.clone();
    release(&mut after, site);
    // The last one unregisters the ops before its filter empties.
    if after.is_empty() {
        ftrace::unregister_ftrace_function(&KPROBE_FTRACE_OPS)?;
        let _ = KPROBE_FTRACE_OPS.set_hash(FtraceHash::default());
    } else {
        KPROBE_FTRACE_OPS.set_hash(hash_of(&after))?;
    }
    *armed = after;
    Ok(())
}

/// `dst[i] = src[base + i]` for each listed `i`, one word at a time (see
/// `pt_regs`: a block copy would be a `memcpy` call).
macro_rules! copy_words {
    ($dst:expr, $src:expr, $base:expr, $($i:literal)*) => {
        $( $dst[$i] = $src[$base + $i]; )*
    };
}

/// The registers a handler sees, made from what the trampoline saved: the
/// arguments, the callee-saved registers, fp, lr, sp, pc and the interrupt
/// masks. x9..x18 read as 0: at a function's entry they hold nothing the
/// function may use.
pub(crate) fn pt_regs(fregs: &FtraceRegs, pc: usize) -> PtRegs {
    let (r, c) = (&fregs.regs, &fregs.callee_saved);
    // Written out word by word: under the target's strict alignment a
    // block copy this size is a `memcpy` call, several times dearer than
    // the copy on this path (it runs on every ftrace-based probe hit). The
    // zero is opaque for the same reason: ten known zeros become a
    // `memset` call.
    let z = core::hint::black_box(0u64);
    #[rustfmt::skip]
    let regs = [
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
        z, z, z, z, z, z, z, z, z, z,
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9],
        fregs.fp, fregs.lr,
    ];
    PtRegs {
        regs,
        sp: fregs.sp,
        pc: pc as u64,
        pstate: (fregs.daif & arch::ptrace::PSR_DAIF_MASK) | PSR::M::EL1h.value,
        orig_x0: fregs.regs[0],
        syscallno: NO_SYSCALL,
        stackframe: [0; 2],
    }
}

/// The registers a return handler sees, made from what
/// `return_to_handler` saved: the result registers, fp and sp; `pc` is
/// where the function returns to. The others read as 0.
pub(crate) fn ret_pt_regs(rregs: &FtraceRetRegs, pc: usize) -> PtRegs {
    let r = &rregs.regs;
    // Word by word, with an opaque zero, as in `pt_regs`.
    let z = core::hint::black_box(0u64);
    #[rustfmt::skip]
    let regs = [
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
        z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z,
        rregs.fp, pc as u64,
    ];
    PtRegs {
        regs,
        sp: rregs.sp,
        pc: pc as u64,
        pstate: (rregs.daif & arch::ptrace::PSR_DAIF_MASK) | PSR::M::EL1h.value,
        orig_x0: rregs.regs[0],
        syscallno: NO_SYSCALL,
        stackframe: [0; 2],
    }
}

/// The results a return handler changed (x0..x8) go back to the caller.
pub(crate) fn ret_write_back(regs: &PtRegs, rregs: &mut FtraceRetRegs) {
    copy_words!(rregs.regs, regs.regs, 0, 0 1 2 3 4 5 6 7 8);
}

/// One probe site's hit, on the trampoline's frame: the handlers see it as
/// their `pt_regs` (pc at the probe, then past it; pstate with the
/// function's DAIF), and what they change in it reaches the function.
///
/// `ONE`: the site has exactly one probe and no post-handler (see
/// [`kprobe_ftrace_callsite_one`]).
#[inline(always)]
fn hit<const ONE: bool>(site: &Site, fregs: &mut FtraceRegs, cpu: &CpuState) {
    if cpu.cur().is_some() {
        // Inside a probe's handlers on this CPU (ftrace-based or BRK).
        count_missed(site);
        return;
    }
    // Relaxed, as Linux's plain read of the flags: nothing is read under
    // the flag (the site is immutable once published), and an LDAR costs
    // as much as a dozen plain loads under QEMU's TCG.
    if !site.armed.load(Ordering::Relaxed) {
        // Disarmed while another probe keeps the function in the filter.
        return;
    }
    cpu.set_cur(Some(Active {
        addr: site.addr,
        status: Status::HitActive,
        saved_daif: 0,
    }));
    let (ret_pc, daif) = (fregs.pc, fregs.daif);
    fregs.orig_x0 = fregs.regs[0];
    fregs.syscallno = NO_SYSCALL;
    fregs.stackframe = [0; 2];
    fregs.daif = (daif & DAIF_MASK) | PSR::M::EL1h.value;
    fregs.pc = site.addr as u64;
    let regs = fregs.as_pt_regs_mut();
    // A pre-handler returning non-zero moved the PC itself: the function
    // goes on there, with no post-handlers.
    let moved = if ONE {
        site.probes.first().is_some_and(|p| run_pre_handler(p, regs))
    } else {
        run_pre_handlers(&site.probes, regs)
    };
    if !moved {
        regs.pc = site.addr as u64 + 4;
        if !ONE && site.has_post {
            run_post_handlers(&site.probes, regs);
        }
        regs.pc = ret_pc;
    }
    fregs.daif = daif;
    cpu.set_cur(None);
}

/// The trampoline's call through a callsite (interrupts as the function
/// had them): the probes at the function's entry, then those on its `bl`.
#[allow(improper_ctypes_definitions)] // called from ftrace_caller, which passes the literal
extern "C" fn kprobe_ftrace_callsite(_ip: usize, _parent: usize, cs: &Callsite, fregs: &mut FtraceRegs) {
    // The CPU number, read once (the task stays on this CPU).
    let n = crate::percpu::this_cpu();
    let rec = ftrace::ftrace_recursion_enter_on(n);
    // The events the handlers record read as from a trap's handlers.
    let ctx = crate::trace::probe_ctx_irqs_off(n);
    let cpu = CTL.on(n);
    let f = &cs.data;
    if let Some(site) = &f.entry {
        hit::<false>(site, fregs, cpu);
    }
    if let Some(site) = &f.bl {
        if f.entry.is_some() {
            // As the trampoline left them for the entry's handlers.
            fregs.scratch = core::hint::black_box([0; 10]);
        }
        hit::<false>(site, fregs, cpu);
    }
    drop(ctx);
    ftrace::ftrace_recursion_exit_on(n, rec);
}

/// [`kprobe_ftrace_callsite`] for a function with one probe, at its entry,
/// without a post-handler (Linux's direct call of a single ops): its
/// pre-handler is called with no walk of the probe list and no check of
/// the `bl` site.
#[allow(improper_ctypes_definitions)] // as kprobe_ftrace_callsite
extern "C" fn kprobe_ftrace_callsite_one(_ip: usize, _parent: usize, cs: &Callsite, fregs: &mut FtraceRegs) {
    let n = crate::percpu::this_cpu();
    let rec = ftrace::ftrace_recursion_enter_on(n);
    let ctx = crate::trace::probe_ctx_irqs_off(n);
    if let Some(site) = &cs.data.entry {
        hit::<true>(site, fregs, CTL.on(n));
    }
    drop(ctx);
    ftrace::ftrace_recursion_exit_on(n, rec);
}

/// [`kprobe_ftrace_callsite_one`] for a function whose one probe records a
/// `p:` event without arguments ([`Kprobe::records_event`]): the same
/// steps, the record written from here. Its pre-handler would read no
/// register and move no PC, so the `pt_regs` it would see is not built.
///
/// Its common case calls nothing and so needs no frame of its own: the
/// checks read, then the record is written in one step
/// ([`trace_kprobe::try_record_entry_hit`]); anything else (a nested hit,
/// a disabled probe, a filter, a page to change...) goes to
/// [`callsite_event_full`], with nothing done, which does it all.
///
/// The trampoline's direct callee ([`arch::ftrace::FTRACE_HOT_FUNC`]),
/// under that name and in its page; notrace by its mark, since the name
/// no longer says its module. It reads no argument but `cs`: the
/// trampoline's short path sets no other.
#[allow(improper_ctypes_definitions)] // as kprobe_ftrace_callsite
#[allow(unsafe_code)] // export_name and link_section: the symbol and page ftrace_caller's direct BL names
#[unsafe(export_name = "ftrace_hot_func")]
#[unsafe(link_section = ".text.ftrace_hot")]
#[ktest_macros::notrace]
extern "C" fn kprobe_ftrace_callsite_event(_ip: usize, _parent: usize, cs: &Callsite, _fregs: &mut FtraceRegs) {
    let n = crate::percpu::this_cpu();
    let Some(site) = &cs.data.entry else {
        return;
    };
    let cpu = CTL.on(n);
    // The hit and the address as values, not read again after the marks
    // stored below (which the compiler must assume may change them).
    let hit = match site.probes.first() {
        Some(p) if !p.is_disabled() => p.event.as_deref(),
        _ => None,
    };
    let Some(hit) = hit.filter(|_| !cpu.busy() && site.armed.load(Ordering::Relaxed)) else {
        return callsite_event_full(n, site);
    };
    let addr = site.addr;
    // No ftrace recursion mark: this path calls nothing a callback could
    // trace, and an interrupt's traced functions are traced meanwhile, as
    // Linux's per-context recursion bits allow (the tail calls below,
    // which call further, set it).
    cpu.set_cur(Some(Active {
        addr,
        status: Status::HitActive,
        saved_daif: 0,
    }));
    match trace_kprobe::try_record_entry_hit(hit, addr, n) {
        TryWrite::Committed => {}
        TryWrite::CommittedPost => return callsite_event_after_commit(n, hit),
        TryWrite::Declined => {
            cpu.set_cur(None);
            return callsite_event_full(n, site);
        }
    }
    cpu.set_cur(None);
}

/// The rest of a [`kprobe_ftrace_callsite_event`] hit that committed, on
/// CPU `n`: what the record left, still as the probe's handler, then the
/// CPU's probe mark cleared.
#[inline(never)]
fn callsite_event_after_commit(n: usize, hit: &trace_kprobe::Hit) {
    // What it calls is not traced (a reader's wake-up is traceable code).
    let rec = ftrace::ftrace_recursion_enter_on(n);
    trace_kprobe::entry_hit_after_commit(hit, n);
    ftrace::ftrace_recursion_exit_on(n, rec);
    CTL.on(n).set_cur(None);
}

/// A [`kprobe_ftrace_callsite_event`] hit, every case, on CPU `n`.
#[cold]
#[inline(never)]
fn callsite_event_full(n: usize, site: &Site) {
    let rec = ftrace::ftrace_recursion_enter_on(n);
    let cpu = CTL.on(n);
    if cpu.cur().is_some() {
        count_missed(site);
    } else if site.armed.load(Ordering::Relaxed) {
        cpu.set_cur(Some(Active {
            addr: site.addr,
            status: Status::HitActive,
            saved_daif: 0,
        }));
        if let Some(p) = site.probes.first().filter(|p| !p.is_disabled()) {
            if let Some(event) = &p.event {
                // The record takes the probe's context itself (no
                // probe_ctx_irqs_off saved and restored around it).
                trace_kprobe::record_entry_hit(event, site.addr);
            }
        }
        cpu.set_cur(None);
    }
    ftrace::ftrace_recursion_exit_on(n, rec);
}

/// The ops' callback (Linux's `kprobe_ftrace_handler`), for a function
/// other ops use too: `ip` is the site's `bl`; the probes at the
/// function's entry run first, then those on the `bl`. Interrupts are
/// masked (by the trampoline).
fn kprobe_ftrace_handler(_: &FtraceOps, ip: usize, _parent: usize, fregs: &mut FtraceRegs) {
    // Two lookups: a range walk of the map costs more.
    let sites = SITES.read();
    let cpu = CTL.this();
    let entry = sites.get(&(ip - FTRACE_BL_OFFSET));
    if let Some(site) = entry {
        hit::<false>(site, fregs, cpu);
    }
    if let Some(site) = sites.get(&ip) {
        if entry.is_some() {
            fregs.scratch = core::hint::black_box([0; 10]);
        }
        hit::<false>(site, fregs, cpu);
    }
}
