//! kprobes (Linux's kernel/kprobes.c with arch/arm64/kernel/probes):
//! a probe replaces the instruction at its address with
//! `BRK #KPROBES_BRK_IMM`. On a hit, the pre-handlers of every probe at
//! that address run, then the original instruction is either simulated
//! (branches, PC-relative loads and address computations, NOP) or executed
//! out of line in a slot followed by `BRK #KPROBES_BRK_SS_IMM`, with all
//! of DAIF masked; then the post-handlers run.

crate::notrace_module!();

#[cfg(feature = "ktest")]
mod asm_tests;
#[cfg(feature = "ktest")]
pub mod bench;
pub mod blacklist;
pub mod debugfs;
pub(crate) mod ftrace;
#[cfg(feature = "ktest")]
mod ftrace_tests;
#[cfg(feature = "ktest")]
mod insn_tests;
pub mod kretprobe;
#[cfg(feature = "ktest")]
mod linux_names_tests;
pub mod slots;
#[cfg(feature = "ktest")]
pub mod tcg_cost;
#[cfg(feature = "ktest")]
mod tests;

use crate::debug::HookResult;
use crate::errno::Errno;
use crate::percpu::{PerCpu, NR_CPUS};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::debug_monitors::{brk_insn, KPROBES_BRK_IMM, KPROBES_BRK_SS_IMM};
use arch::ptrace::PtRegs;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use insn::probes::{classify, Class, SimKind};
use spin::RwLock;

/// A pre-handler: returns non-zero if it changed the PC itself (the
/// original instruction is then not executed).
pub type PreHandler = Arc<dyn Fn(&Kprobe, &mut PtRegs) -> i32 + Send + Sync>;
/// A post-handler, run after the original instruction.
pub type PostHandler = Arc<dyn Fn(&Kprobe, &mut PtRegs) + Send + Sync>;

/// A probe, as Linux's `struct kprobe`: where (address, or symbol and
/// offset), and what to run.
pub struct Kprobe {
    /// Symbol to resolve through kallsyms (with `offset`), if no address.
    pub symbol_name: Option<String>,
    /// Offset from `symbol_name`.
    pub offset: usize,
    addr: AtomicUsize,
    /// Runs before the instruction.
    pub pre_handler: Option<PreHandler>,
    /// Runs after it.
    pub post_handler: Option<PostHandler>,
    nmissed: AtomicU64,
    disabled: AtomicBool,
    registered: AtomicBool,
    /// Set for the internal probe of a kretprobe (shown as `r` in the list).
    pub is_return: bool,
    /// Its handlers read no register but `pc` and change none (see
    /// [`Kprobe::reads_only_pc`]).
    only_pc: bool,
    /// The `p:` event without arguments its pre-handler records (see
    /// [`Kprobe::records_event`]).
    event: Option<Arc<crate::trace::trace_kprobe::Hit>>,
}

impl Kprobe {
    /// A probe at `addr`.
    pub fn at(addr: usize) -> Kprobe {
        Kprobe::new(None, 0, addr)
    }

    /// A probe at `symbol + offset`.
    pub fn symbol(name: &str, offset: usize) -> Kprobe {
        Kprobe::new(Some(String::from(name)), offset, 0)
    }

    fn new(symbol_name: Option<String>, offset: usize, addr: usize) -> Kprobe {
        Kprobe {
            symbol_name,
            offset,
            addr: AtomicUsize::new(addr),
            pre_handler: None,
            post_handler: None,
            nmissed: AtomicU64::new(0),
            disabled: AtomicBool::new(false),
            registered: AtomicBool::new(false),
            is_return: false,
            only_pc: false,
            event: None,
        }
    }

    /// Declares that its pre-handler records `event`'s entry (a `p:` event
    /// without arguments, see [`Kprobe::reads_only_pc`]) and does nothing
    /// else: an ftrace-based hit of a function with no other probe writes
    /// that record straight from the trampoline's callsite, with no call
    /// through the handler and no register frame built for it. The
    /// pre-handler stays for every other way of hitting the probe.
    pub(crate) fn records_event(mut self, event: Arc<crate::trace::trace_kprobe::Hit>) -> Kprobe {
        self.only_pc = true;
        self.event = Some(event);
        self
    }

    /// Declares that its handlers read no register but `pc`, change none
    /// and return 0 (a `p:` event without fetch arguments records only
    /// the probed address). An ftrace-based hit of a function whose
    /// probes all say so and have no post-handler skips saving (and
    /// restoring) the caller's x19..x28, which nothing then reads: their
    /// slots in the `pt_regs` are stale.
    pub fn reads_only_pc(mut self) -> Kprobe {
        self.only_pc = true;
        self
    }

    /// Sets the pre-handler.
    pub fn pre(mut self, f: impl Fn(&Kprobe, &mut PtRegs) -> i32 + Send + Sync + 'static) -> Kprobe {
        self.pre_handler = Some(Arc::new(f));
        self
    }

    /// Sets the post-handler.
    pub fn post(mut self, f: impl Fn(&Kprobe, &mut PtRegs) + Send + Sync + 'static) -> Kprobe {
        self.post_handler = Some(Arc::new(f));
        self
    }

    /// Registers it disabled (Linux's `KPROBE_FLAG_DISABLED`): it is armed
    /// only by [`enable_kprobe`].
    pub fn disabled(self) -> Kprobe {
        self.disabled.store(true, Ordering::Release);
        self
    }

    /// The probed address (after registration). Relaxed: it is set before
    /// the probe is published to the hit paths, whose publication orders
    /// it (and the hit path reads it on every hit, where an LDAR costs as
    /// much as a dozen plain loads under QEMU's TCG).
    pub fn addr(&self) -> usize {
        self.addr.load(Ordering::Relaxed)
    }

    /// Hits missed because a probe was already being handled on that CPU.
    pub fn nmissed(&self) -> u64 {
        self.nmissed.load(Ordering::Relaxed)
    }

    /// Whether the probe is disabled.
    ///
    /// Relaxed, as Linux's plain `kprobe_disabled`: a flag on its own
    /// (nothing is read under it), read on every hit.
    pub fn is_disabled(&self) -> bool {
        self.disabled.load(Ordering::Relaxed)
    }
}

/// How the probed instruction is executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exec {
    Simulate(SimKind),
    Step {
        slot: usize,
    },
    /// Armed through the function's ftrace site (see [`ftrace`]).
    Ftrace,
}

/// All probes at one address. Immutable but for `armed`: a change of its
/// probes publishes a new `Site` in [`SITES`] (Linux's RCU-protected
/// probe list), so that a hit takes one read lock, the map's, for the
/// site and its probes together.
struct Site {
    addr: usize,
    orig: u32,
    exec: Exec,
    probes: Vec<Arc<Kprobe>>,
    /// Some probe in `probes` has a post-handler: a hit of a site without
    /// one skips the post phase.
    has_post: bool,
    /// Shared by every version of the site.
    armed: Arc<AtomicBool>,
}

impl Site {
    /// This site with `probes` instead of its own.
    fn with_probes(&self, probes: Vec<Arc<Kprobe>>) -> Site {
        Site {
            addr: self.addr,
            orig: self.orig,
            exec: self.exec,
            has_post: probes.iter().any(|p| p.post_handler.is_some()),
            probes,
            armed: self.armed.clone(),
        }
    }
}

/// Sites by address. Never held across `stop_machine` (a CPU hitting a
/// probe reads it with interrupts masked).
static SITES: RwLock<BTreeMap<usize, Arc<Site>>> = RwLock::new(BTreeMap::new());
/// Registration is one at a time.
static KPROBE_MUTEX: spin::Mutex<()> = spin::Mutex::new(());
/// `debug/kprobes/enabled`.
static KPROBES_ALL_DISARMED: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    HitActive = 1,
    HitSs = 2,
    Reenter = 3,
}

/// The probe a CPU is handling (Linux's `current_kprobe` and
/// `kprobe_ctlblk`): its address, and its status with the DAIF bits saved
/// while its slot runs; plus one level of nesting. Only the CPU itself
/// touches its slots, in exception context with interrupts masked, or
/// from an ftrace-based hit with interrupts on (an interrupt there that
/// hits a probe finds the status set first, see [`CpuState::set_cur`], and
/// puts everything back before it returns), so plain loads and stores
/// suffice: no lock, no reference counting, on the hit path.
struct CpuState {
    cur_addr: AtomicUsize,
    cur_info: AtomicU64,
    prev_addr: AtomicUsize,
    prev_info: AtomicU64,
}

#[derive(Clone, Copy)]
struct Active {
    addr: usize,
    status: Status,
    saved_daif: u64,
}

static CTL: PerCpu<CpuState> = PerCpu::new(
    [const {
        CpuState {
            cur_addr: AtomicUsize::new(0),
            cur_info: AtomicU64::new(0),
            prev_addr: AtomicUsize::new(0),
            prev_info: AtomicU64::new(0),
        }
    }; NR_CPUS],
);

fn decode_active(addr: usize, info: u64) -> Option<Active> {
    let status = match info & 3 {
        1 => Status::HitActive,
        2 => Status::HitSs,
        3 => Status::Reenter,
        _ => return None,
    };
    Some(Active {
        addr,
        status,
        saved_daif: info & DAIF_MASK,
    })
}

fn encode_info(a: Option<Active>) -> u64 {
    a.map_or(0, |a| a.status as u64 | (a.saved_daif & DAIF_MASK))
}

impl CpuState {
    fn cur(&self) -> Option<Active> {
        decode_active(
            self.cur_addr.load(Ordering::Relaxed),
            self.cur_info.load(Ordering::Relaxed),
        )
    }
    /// Whether a probe is being handled (`cur` is some): its status word
    /// alone says it.
    #[inline(always)]
    fn busy(&self) -> bool {
        self.cur_info.load(Ordering::Relaxed) != 0
    }
    /// The status first: an interrupt between the two stores then sees
    /// either no probe, or a probe being handled (a nested hit), never a
    /// fresh status under a stale address.
    fn set_cur(&self, a: Option<Active>) {
        self.cur_info.store(encode_info(a), Ordering::Relaxed);
        self.cur_addr.store(a.map_or(0, |a| a.addr), Ordering::Relaxed);
    }
    /// Saves the current probe as the outer one (nested hit).
    fn push(&self) {
        self.prev_addr
            .store(self.cur_addr.load(Ordering::Relaxed), Ordering::Relaxed);
        self.prev_info
            .store(self.cur_info.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    /// Back to the outer probe, if any.
    fn pop(&self) {
        self.cur_addr
            .store(self.prev_addr.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        self.cur_info
            .store(self.prev_info.swap(0, Ordering::Relaxed), Ordering::Relaxed);
    }
}

const DAIF_MASK: u64 = arch::ptrace::PSR_DAIF_MASK;

fn arm(site: &Site) -> Result<(), Errno> {
    if site.exec == Exec::Ftrace {
        ftrace::arm(site.addr)?;
        site.armed.store(true, Ordering::Release);
        return Ok(());
    }
    #[allow(unsafe_code)]
    // SAFETY: the BRK traps to the kprobe handler, which runs the original
    // instruction (accepted by `prepare`) out of line or simulates it.
    unsafe {
        crate::patching::patch_text_unchecked(&[site.addr], &[brk_insn(KPROBES_BRK_IMM)])?
    };
    site.armed.store(true, Ordering::Release);
    Ok(())
}

fn disarm(site: &Site) -> Result<(), Errno> {
    if site.exec == Exec::Ftrace {
        // Not armed from here on: a CPU already in the ops skips it.
        site.armed.store(false, Ordering::Release);
        if let Err(e) = ftrace::disarm(site.addr) {
            site.armed.store(true, Ordering::Release);
            return Err(e);
        }
        return Ok(());
    }
    #[allow(unsafe_code)]
    // SAFETY: puts back the instruction the BRK replaced.
    unsafe {
        crate::patching::patch_text_unchecked(&[site.addr], &[site.orig])?
    };
    site.armed.store(false, Ordering::Release);
    Ok(())
}

fn should_be_armed(site: &Site) -> bool {
    !KPROBES_ALL_DISARMED.load(Ordering::Acquire) && site.probes.iter().any(|p| !p.is_disabled())
}

/// Whether `site` must stay armed once `kp` is no longer handled there.
fn armed_without(site: &Site, kp: &Arc<Kprobe>) -> bool {
    !KPROBES_ALL_DISARMED.load(Ordering::Acquire) && site.probes.iter().any(|p| !Arc::ptr_eq(p, kp) && !p.is_disabled())
}

/// Resolves and checks the probe address (Linux's `check_kprobe_address_safe`
/// and `arch_prepare_kprobe`).
fn check_address(kp: &Kprobe) -> Result<usize, Errno> {
    let addr = match &kp.symbol_name {
        Some(name) => {
            let sym = crate::kallsyms::lookup_unique_name(name)?;
            // An offset past the named function lands in whatever follows
            // it, as Linux's `_kprobe_addr` renormalises it; one that wraps
            // around is refused.
            (sym.addr as usize).checked_add(kp.offset).ok_or(Errno::EINVAL)?
        }
        None => kp.addr().checked_add(kp.offset).ok_or(Errno::EINVAL)?,
    };
    if addr % 4 != 0 {
        return Err(Errno::EINVAL);
    }
    let l = arch::mmu::image_layout();
    if addr < l.text || addr >= l.etext {
        return Err(Errno::EINVAL);
    }
    let sym = crate::kallsyms::lookup_addr(addr).ok_or(Errno::EINVAL)?;
    if sym.offset >= sym.size {
        return Err(Errno::EINVAL);
    }
    if blacklist::is_blacklisted(addr) {
        return Err(Errno::EINVAL);
    }
    // A static-key site is rewritten by jump_label; Linux 6.12 refuses it
    // with EINVAL (`jump_label_text_reserved` in check_kprobe_address_safe).
    if crate::jump_label::jump_label_text_reserved(addr, addr) {
        return Err(Errno::EINVAL);
    }
    Ok(addr)
}

/// Decodes the instruction at `addr` and prepares how to run it.
fn prepare(addr: usize) -> Result<(u32, Exec), Errno> {
    let orig = crate::patching::read_insn(addr).ok_or(Errno::EINVAL)?;
    if ftrace::is_ftrace_location(addr) {
        return Ok((orig, Exec::Ftrace));
    }
    let exec = match classify(orig) {
        Class::Rejected(_) => return Err(Errno::EINVAL),
        Class::Simulate(kind) => Exec::Simulate(kind),
        Class::Steppable => {
            // Never inside a load/store-exclusive sequence: scan back from
            // the probe to the start of its function.
            let sym = crate::kallsyms::lookup_addr(addr).ok_or(Errno::EINVAL)?;
            let start = addr - sym.offset as usize;
            let code: Vec<u32> = (start..=addr)
                .step_by(4)
                .map(|a| crate::patching::read_insn(a).unwrap_or(0))
                .collect();
            if insn::probes::in_exclusive_sequence(&code, code.len() - 1) {
                return Err(Errno::EINVAL);
            }
            let slot = slots::alloc_slot().ok_or(Errno::ENOMEM)?;
            // Nobody runs the new slot yet: no stop_machine needed.
            #[allow(unsafe_code)]
            // SAFETY: no CPU runs the fresh slot yet; it holds the original
            // instruction, which `classify` accepted for stepping out of
            // line, followed by the BRK that ends the step.
            let filled = unsafe {
                crate::patching::patch_text_nosync_unchecked(slot, orig)
                    .and_then(|()| crate::patching::patch_text_nosync_unchecked(slot + 4, brk_insn(KPROBES_BRK_SS_IMM)))
            };
            if let Err(e) = filled {
                slots::free_slot(slot);
                return Err(e);
            }
            Exec::Step { slot }
        }
    };
    Ok((orig, exec))
}

/// Changes the site map. The change is made on a copy, which replaces the
/// map under the write lock: nothing is freed while the lock is held,
/// because a free can hit a probe (on `kfree`) whose handling takes the
/// read lock on this same CPU. The caller holds `KPROBE_MUTEX`.
fn update_sites(change: impl FnOnce(&mut BTreeMap<usize, Arc<Site>>)) {
    let mut new = SITES.read().clone();
    change(&mut new);
    let flags = arch::cpu::local_irq_save();
    let old = core::mem::replace(&mut *SITES.write(), new);
    arch::cpu::local_irq_restore(flags);
    drop(old);
}

/// Registers `kp` and arms it (unless disabled).
pub fn register_kprobe(kp: &Arc<Kprobe>) -> Result<(), Errno> {
    let _m = KPROBE_MUTEX.lock();
    if kp.registered.load(Ordering::Acquire) {
        return Err(Errno::EINVAL);
    }
    let addr = check_address(kp)?;
    kp.addr.store(addr, Ordering::Release);
    let existing = SITES.read().get(&addr).cloned();
    let old = match existing {
        Some(s) => s,
        None => {
            let (orig, exec) = prepare(addr)?;
            Arc::new(Site {
                addr,
                orig,
                exec,
                probes: Vec::new(),
                has_post: false,
                armed: Arc::new(AtomicBool::new(false)),
            })
        }
    };
    let mut list = old.probes.clone();
    list.push(kp.clone());
    let site = Arc::new(old.with_probes(list));
    update_sites(|sites| {
        sites.insert(addr, site.clone());
    });
    if site.exec == Exec::Ftrace {
        ftrace::site_changed(addr);
    }
    drop(old);
    kp.registered.store(true, Ordering::Release);
    if !site.armed.load(Ordering::Acquire) && should_be_armed(&site) {
        if let Err(e) = arm(&site) {
            drop(_m);
            unregister_kprobe(kp);
            return Err(e);
        }
    }
    Ok(())
}

/// Registers each probe; on a failure, unregisters those done and fails.
pub fn register_kprobes(kps: &[Arc<Kprobe>]) -> Result<(), Errno> {
    for (i, kp) in kps.iter().enumerate() {
        if let Err(e) = register_kprobe(kp) {
            kps[..i].iter().for_each(unregister_kprobe);
            return Err(e);
        }
    }
    Ok(())
}

/// Unregisters `kp`; the last probe at an address restores the original
/// instruction.
pub fn unregister_kprobe(kp: &Arc<Kprobe>) {
    let _m = KPROBE_MUTEX.lock();
    if !kp.registered.swap(false, Ordering::AcqRel) {
        return;
    }
    let Some(site) = SITES.read().get(&kp.addr()).cloned() else {
        return;
    };
    // Disarm before the probe stops being handled, as Linux's
    // `__disable_kprobe` does: a hit on an armed site always runs the
    // handlers of the probes that keep it armed. After stop_machine no CPU
    // is inside this probe's handling: every CPU left its exceptions.
    // If the BRK cannot be taken out, the site (and its slot) must stay to
    // handle the hits it will still take, with no probes left on it.
    let mut stuck = false;
    if site.armed.load(Ordering::Acquire) && !armed_without(&site, kp) {
        if let Err(e) = disarm(&site) {
            crate::pr_warn!("kprobes: cannot disarm {:#x} ({e:?}); its breakpoint stays", site.addr);
            stuck = true;
        }
    }
    let list: Vec<Arc<Kprobe>> = site.probes.iter().filter(|x| !Arc::ptr_eq(x, kp)).cloned().collect();
    let now_empty = list.is_empty();
    if now_empty && !stuck {
        update_sites(|sites| {
            sites.remove(&site.addr);
        });
    } else {
        let new = Arc::new(site.with_probes(list));
        update_sites(|sites| {
            sites.insert(new.addr, new.clone());
        });
    }
    if site.exec == Exec::Ftrace {
        // After this no CPU runs the probe from the function's callsite.
        ftrace::site_changed(site.addr);
    }
    if site.armed.load(Ordering::Acquire) {
        // The site stays armed for other probes: wait until no CPU can
        // still be running this probe's handlers (Linux waits for an RCU
        // grace period). A CPU parks in stop_machine only after leaving
        // its exception.
        crate::stop_machine::stop_machine(|| ());
    }
    if now_empty && !stuck {
        if let Exec::Step { slot } = site.exec {
            slots::free_slot(slot);
        }
    }
}

/// Unregisters each probe.
pub fn unregister_kprobes(kps: &[Arc<Kprobe>]) {
    kps.iter().for_each(unregister_kprobe);
}

/// Disables `kp` (its address is disarmed once no probe there is enabled).
pub fn disable_kprobe(kp: &Arc<Kprobe>) -> Result<(), Errno> {
    let _m = KPROBE_MUTEX.lock();
    if !kp.registered.load(Ordering::Acquire) {
        return Err(Errno::EINVAL);
    }
    let site = SITES.read().get(&kp.addr()).cloned().ok_or(Errno::EINVAL)?;
    // Disarm first, then mark disabled (Linux's `__disable_kprobe`): no
    // hit finds the BRK in place without the handlers that placed it. If
    // disarming fails the probe stays enabled.
    if site.armed.load(Ordering::Acquire) && !armed_without(&site, kp) {
        disarm(&site)?;
    }
    kp.disabled.store(true, Ordering::Release);
    Ok(())
}

/// Enables `kp` again.
pub fn enable_kprobe(kp: &Arc<Kprobe>) -> Result<(), Errno> {
    let _m = KPROBE_MUTEX.lock();
    if !kp.registered.load(Ordering::Acquire) {
        return Err(Errno::EINVAL);
    }
    let site = SITES.read().get(&kp.addr()).cloned().ok_or(Errno::EINVAL)?;
    let was_disabled = kp.disabled.swap(false, Ordering::AcqRel);
    if !site.armed.load(Ordering::Acquire) && should_be_armed(&site) {
        if let Err(e) = arm(&site) {
            kp.disabled.store(was_disabled, Ordering::Release);
            return Err(e);
        }
    }
    Ok(())
}

/// `debug/kprobes/enabled`: false disarms every probe, true re-arms them.
pub fn set_all_armed(on: bool) -> Result<(), Errno> {
    let _m = KPROBE_MUTEX.lock();
    KPROBES_ALL_DISARMED.store(!on, Ordering::Release);
    let sites: Vec<Arc<Site>> = SITES.read().values().cloned().collect();
    for s in sites {
        let want = should_be_armed(&s);
        if want != s.armed.load(Ordering::Acquire) {
            if want {
                arm(&s)?
            } else {
                disarm(&s)?
            }
        }
    }
    Ok(())
}

/// Whether probes are globally armed.
pub fn all_armed() -> bool {
    !KPROBES_ALL_DISARMED.load(Ordering::Acquire)
}

/// A registered probe, for `debug/kprobes/list`.
pub struct ProbeInfo {
    /// Its address.
    pub addr: usize,
    /// The probe.
    pub probe: Arc<Kprobe>,
    /// Armed through ftrace (`[FTRACE]`), not a `BRK`.
    pub ftrace: bool,
}

/// Registered probes, by address.
pub fn list() -> Vec<ProbeInfo> {
    SITES
        .read()
        .values()
        .flat_map(|s| {
            s.probes
                .iter()
                .map(|p| ProbeInfo {
                    addr: s.addr,
                    probe: p.clone(),
                    ftrace: s.exec == Exec::Ftrace,
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

// ------------------------------------------------------------ the hit path

struct KernelMemory;

impl insn::simulate::LiteralMemory for KernelMemory {
    fn read_u32(&self, addr: u64) -> Option<u32> {
        let w = arch::nofault::read_u64_nofault(addr as usize & !7).ok()?;
        Some((w >> ((addr & 4) * 8)) as u32)
    }
    fn read_u64(&self, addr: u64) -> Option<u64> {
        if addr.is_multiple_of(8) {
            arch::nofault::read_u64_nofault(addr as usize).ok()
        } else {
            Some(self.read_u32(addr)? as u64 | (self.read_u32(addr + 4)? as u64) << 32)
        }
    }
}

/// Runs the pre-handlers of the enabled probes in `probes` (a site's list,
/// read once for the whole hit).
fn run_pre_handlers(probes: &[Arc<Kprobe>], regs: &mut PtRegs) -> bool {
    let mut skip = false;
    for p in probes.iter() {
        skip |= run_pre_handler(p, regs);
    }
    skip
}

/// Runs `p`'s pre-handler if it is enabled; true if it moved the PC
/// (returned non-zero).
#[inline(always)]
fn run_pre_handler(p: &Kprobe, regs: &mut PtRegs) -> bool {
    if p.is_disabled() {
        return false;
    }
    p.pre_handler.as_ref().is_some_and(|h| h(p, regs) != 0)
}

/// Runs the post-handlers of the enabled probes in `probes`.
fn run_post_handlers(probes: &[Arc<Kprobe>], regs: &mut PtRegs) {
    for p in probes.iter().filter(|p| !p.is_disabled()) {
        if let Some(h) = &p.post_handler {
            h(p, regs);
        }
    }
}

fn count_missed(site: &Site) {
    for p in site.probes.iter() {
        p.nmissed.fetch_add(1, Ordering::Relaxed);
    }
}

/// After the instruction ran (simulated or stepped): post-handlers (not for
/// a nested hit), then back to the outer probe if this one was nested.
/// Handlers may hit probes: those hits see `HitActive` and count as missed.
fn post_phase(site: &Site, regs: &mut PtRegs) {
    let cpu = CTL.this();
    if let Some(mut cur) = cpu.cur() {
        if cur.status != Status::Reenter {
            cur.status = Status::HitActive;
            cpu.set_cur(Some(cur));
            if site.has_post {
                run_post_handlers(&site.probes, regs);
            }
        }
    }
    cpu.pop();
}

/// Runs the probed instruction: simulated now, or stepped from its slot.
fn run_instruction(site: &Site, status: Status, regs: &mut PtRegs) {
    let cpu = CTL.this();
    match site.exec {
        Exec::Simulate(kind) => {
            cpu.set_cur(Some(Active {
                addr: site.addr,
                status,
                saved_daif: 0,
            }));
            match insn::simulate::simulate(
                kind,
                site.orig,
                site.addr as u64,
                &regs.regs,
                regs.pstate,
                &KernelMemory,
            ) {
                Ok(effect) => regs.pc = effect.apply(&mut regs.regs),
                Err(f) => {
                    crate::pr_err!(
                        "kprobes: literal load at {:#x} faulted simulating {}",
                        f.addr,
                        crate::kallsyms::symbolize(site.addr)
                    );
                    crate::oops::die("Oops - kprobe simulation", regs, 0)
                }
            }
            post_phase(site, regs);
        }
        // Never hit through a BRK: the handler leaves those sites alone.
        Exec::Ftrace => cpu.pop(),
        Exec::Step { slot } => {
            let status = if status == Status::Reenter {
                Status::Reenter
            } else {
                Status::HitSs
            };
            cpu.set_cur(Some(Active {
                addr: site.addr,
                status,
                saved_daif: regs.pstate & DAIF_MASK,
            }));
            // The slot runs with all of DAIF masked, as Linux does.
            regs.pstate |= DAIF_MASK;
            regs.pc = slot as u64;
        }
    }
}

/// BRK #KPROBES_BRK_IMM (Linux's `kprobe_breakpoint_handler`). The site
/// map stays read-locked for the hit: unregistering waits for it, and
/// nested hits only read it too.
pub(crate) fn kprobe_breakpoint_handler(regs: &mut PtRegs, _esr: u64) -> HookResult {
    let addr = regs.pc as usize;
    let sites = SITES.read();
    let Some(site) = sites.get(&addr).filter(|s| s.exec != Exec::Ftrace) else {
        // Removed right after we hit it: execute what is there now.
        return if crate::patching::read_insn(addr) == Some(brk_insn(KPROBES_BRK_IMM)) {
            HookResult::NotHandled
        } else {
            HookResult::Handled
        };
    };
    let cpu = CTL.this();
    match cpu.cur().map(|c| c.status) {
        Some(Status::HitActive) => {
            // A probe hit while a handler runs on this CPU: run the
            // instruction, skip the handlers, count the miss.
            count_missed(site);
            cpu.push();
            run_instruction(site, Status::Reenter, regs);
        }
        Some(Status::HitSs | Status::Reenter) => {
            drop(sites);
            crate::pr_err!("Unrecoverable kprobe detected at {}", crate::kallsyms::symbolize(addr));
            crate::oops::die("Oops - kprobe reentry", regs, 0)
        }
        None => {
            cpu.set_cur(Some(Active {
                addr,
                status: Status::HitActive,
                saved_daif: 0,
            }));
            if run_pre_handlers(&site.probes, regs) {
                // The handler moved the PC itself.
                cpu.set_cur(None);
            } else {
                run_instruction(site, Status::HitSs, regs);
            }
        }
    }
    HookResult::Handled
}

/// BRK #KPROBES_BRK_SS_IMM at the end of a slot.
pub(crate) fn kprobe_breakpoint_ss_handler(regs: &mut PtRegs, _esr: u64) -> HookResult {
    let cpu = CTL.this();
    let Some(act) = cpu.cur() else {
        return HookResult::NotHandled;
    };
    let sites = SITES.read();
    let Some(site) = sites.get(&act.addr) else {
        return HookResult::NotHandled;
    };
    let Exec::Step { slot } = site.exec else {
        return HookResult::NotHandled;
    };
    if regs.pc as usize != slot + 4 {
        return HookResult::NotHandled;
    }
    regs.pstate = (regs.pstate & !DAIF_MASK) | act.saved_daif;
    regs.pc = site.addr as u64 + 4;
    post_phase(site, regs);
    HookResult::Handled
}

/// From the fault handler: a fault while stepping a probed instruction
/// out of line. The PC goes back to the probed address, so the usual
/// fault handling (fixup or oops) applies to the original instruction.
pub fn kprobe_fault_handler(regs: &mut PtRegs) -> bool {
    let cpu = CTL.this();
    let Some(act) = cpu.cur() else { return false };
    let Some(Exec::Step { slot }) = SITES.read().get(&act.addr).map(|s| s.exec) else {
        return false;
    };
    if !(slot..slot + slots::SLOT_SIZE).contains(&(regs.pc as usize)) {
        return false;
    }
    regs.pc = act.addr as u64;
    regs.pstate = (regs.pstate & !DAIF_MASK) | act.saved_daif;
    cpu.pop();
    crate::pr_warn!(
        "kprobes: fault in the out-of-line slot of {}",
        crate::kallsyms::symbolize(act.addr)
    );
    true
}
