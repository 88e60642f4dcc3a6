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

use super::{count_missed, run_post_handlers, run_pre_handlers, Active, Site, Status, CTL, SITES};
use crate::errno::Errno;
use crate::trace::ftrace::{self, FtraceHash, FtraceOps};
use alloc::collections::BTreeMap;
use arch::ftrace::{FtraceRegs, FtraceRetRegs, FTRACE_BL_OFFSET};
use arch::ptrace::{PtRegs, NO_SYSCALL, PSR};
use core::sync::atomic::Ordering;

/// The one ops of every ftrace-based probe (Linux's `kprobe_ftrace_ops`);
/// its filter is the set of functions with an armed probe.
static KPROBE_FTRACE_OPS: FtraceOps = FtraceOps::new("kprobe_ftrace_ops", kprobe_ftrace_handler)
    .with_own_recursion()
    .with_save_regs();

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

/// What the handlers changed goes back to the function.
fn write_back(regs: &PtRegs, fregs: &mut FtraceRegs) {
    copy_words!(fregs.regs, regs.regs, 0, 0 1 2 3 4 5 6 7 8);
    copy_words!(fregs.callee_saved, regs.regs, 19, 0 1 2 3 4 5 6 7 8 9);
    fregs.fp = regs.regs[29];
    fregs.lr = regs.regs[30];
}

/// The results a return handler changed (x0..x8) go back to the caller.
pub(crate) fn ret_write_back(regs: &PtRegs, rregs: &mut FtraceRetRegs) {
    copy_words!(rregs.regs, regs.regs, 0, 0 1 2 3 4 5 6 7 8);
}

fn hit(site: &Site, fregs: &mut FtraceRegs) {
    let cpu = CTL.this();
    if cpu.cur().is_some() {
        // Inside a probe's handlers on this CPU (ftrace-based or BRK).
        count_missed(site);
        return;
    }
    if !site.armed.load(Ordering::Acquire) {
        // Disarmed while another probe keeps the function in the filter.
        return;
    }
    cpu.set_cur(Some(Active {
        addr: site.addr,
        status: Status::HitActive,
        saved_daif: 0,
    }));
    let mut regs = pt_regs(fregs, site.addr);
    if run_pre_handlers(&site.probes, &mut regs) {
        // The pre-handler moved the PC: the function goes on there.
        write_back(&regs, fregs);
        fregs.pc = regs.pc;
    } else {
        regs.pc = site.addr as u64 + 4;
        if site.has_post {
            run_post_handlers(&site.probes, &mut regs);
        }
        write_back(&regs, fregs);
    }
    cpu.set_cur(None);
}

/// The ops' callback (Linux's `kprobe_ftrace_handler`): `ip` is the
/// site's `bl`; the probes at the function's entry run first, then those
/// on the `bl`. Interrupts are masked (by the trampoline).
fn kprobe_ftrace_handler(_: &FtraceOps, ip: usize, _parent: usize, fregs: &mut FtraceRegs) {
    // Two lookups: a range walk of the map costs more.
    let sites = SITES.read();
    for addr in [ip - FTRACE_BL_OFFSET, ip] {
        if let Some(site) = sites.get(&addr) {
            hit(site, fregs);
        }
    }
}
