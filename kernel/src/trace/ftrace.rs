//! ftrace: the patch site of every traceable function and the ops that
//! use them (Linux's kernel/trace/ftrace.c with arm64's
//! DYNAMIC_FTRACE_WITH_CALL_OPS; the site layout and the trampoline are in
//! `arch::ftrace`).
//!
//! The build records each site in `__patchable_function_entries`. At boot,
//! before the other CPUs start, [`ftrace_init`] keeps the sites of
//! traceable functions (not notrace, see `crate::notrace`) and writes each
//! one's "initialised NOP" state: `mov x9, x30` at the entry and the
//! address of [`FTRACE_NOP_OPS`] in its literal. From then on a site is
//! switched with NOP<->BL only, and its literal names the one ops using it
//! (or that ops' callsite for this site, see
//! [`FtraceOps::with_site_literal`]), or [`FTRACE_LIST_OPS`] when several
//! do.
//!
//! Every change to the sites, their literals and the table of registered
//! ops ([`ACTIVE`]) happens inside one `stop_machine`, after which
//! [`ftrace_update`] waits until every other CPU has been seen outside the
//! trampoline (which counts itself in before it loads a literal, see
//! `arch::ftrace::ftrace_depth`): the grace period Linux gets from
//! `synchronize_rcu_tasks`. Once an update returns, no CPU is still
//! running, or about to run, an ops or callsite it removed; ops are
//! `'static` anyway, callsites are freed then. Callbacks run with
//! interrupts masked (but see [`FtraceCallsite::unmasked`]), behind a
//! per-CPU recursion bit (Linux's `trace_recursion`), so a traced function
//! called by a tracer is simply not traced again.

#![allow(unsafe_code)] // the site table and the literal and entry writes, each with its SAFETY

use crate::errno::Errno;
use crate::percpu::{PerCpu, NR_CPUS};
use alloc::collections::BTreeSet;
use alloc::vec::Vec;
use arch::ftrace::{FtraceRegs, FTRACE_BL_OFFSET, FTRACE_PREFIX_BYTES, MOV_X9_X30};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// A tracer's callback: `(ops, ip, parent_ip, regs)`, where `ip` is the
/// site's `bl` in the traced function and `parent_ip` its return address.
/// Called with interrupts masked, never recursively on one CPU.
pub type FtraceCallback = fn(&FtraceOps, usize, usize, &mut FtraceRegs);

/// What the trampoline calls through a site's literal.
type FtraceFunc = extern "C" fn(usize, usize, &FtraceOps, &mut FtraceRegs);

/// A user of function entries (Linux's `struct ftrace_ops`): a callback
/// and the functions it wants, as a filter (empty: all) minus a notrace
/// set. Ops are `'static` (statics, or leaked), as a site's literal may
/// name them at any time.
#[repr(C)]
pub struct FtraceOps {
    /// What `ftrace_caller` calls: must stay the first field.
    func: FtraceFunc,
    /// `arch::ftrace::FTRACE_OPS_FL_*`, which the trampoline reads: must
    /// stay the second.
    arch_flags: u64,
    callback: FtraceCallback,
    /// Its name in `enabled_functions`.
    name: &'static str,
    hash: spin::Mutex<FtraceHash>,
    /// Hits dropped because the CPU was already inside a callback.
    nmissed: AtomicU64,
    /// Its index in [`ACTIVE`] while registered, else `usize::MAX`.
    slot: AtomicUsize,
    /// Its callback is called even inside another callback on the same
    /// CPU, because it guards against recursion itself (kprobes count a
    /// nested hit as missed on the probe, as their `nmissed` promises).
    own_recursion: bool,
    /// Its owner's data (Linux's `ops->private`: the trace array of an
    /// instance's function tracer), set once.
    private: spin::Once<&'static (dyn core::any::Any + Send + Sync)>,
    /// What the literal of a site this ops alone uses names instead of the
    /// ops itself, if anything: see [`FtraceOps::with_site_literal`].
    site_literal: Option<fn(u32) -> Option<usize>>,
}

/// A filter entry that names no site (Linux's `FTRACE_HASH_FL_MOD`): a
/// filter holding only it is not empty, so it selects no function, as a
/// `set_ftrace_filter` whose only words are `:mod:` words kept for
/// modules not loaded.
pub const FTRACE_HASH_MOD: u32 = u32::MAX;

const _: () = assert!(core::mem::offset_of!(FtraceOps, arch_flags) == arch::ftrace::FTRACE_OPS_FLAGS_OFFSET);

/// The functions an ops traces, by site index.
#[derive(Clone, Default)]
pub struct FtraceHash {
    /// Empty: every function.
    pub filter: BTreeSet<u32>,
    /// Never these.
    pub notrace: BTreeSet<u32>,
}

impl FtraceHash {
    fn matches(&self, site: u32) -> bool {
        (self.filter.is_empty() || self.filter.contains(&site)) && !self.notrace.contains(&site)
    }
}

impl FtraceOps {
    /// An ops calling `callback` for every function until filtered.
    pub const fn new(name: &'static str, callback: FtraceCallback) -> FtraceOps {
        FtraceOps {
            func: ftrace_ops_assist_func,
            arch_flags: 0,
            callback,
            name,
            hash: spin::Mutex::new(FtraceHash {
                filter: BTreeSet::new(),
                notrace: BTreeSet::new(),
            }),
            nmissed: AtomicU64::new(0),
            slot: AtomicUsize::new(usize::MAX),
            own_recursion: false,
            private: spin::Once::new(),
            site_literal: None,
        }
    }

    /// Gives it its owner's data (the first call only: an ops belongs to
    /// one owner for its whole life).
    pub fn set_private(&self, data: &'static (dyn core::any::Any + Send + Sync)) {
        self.private.call_once(|| data);
    }

    /// Its owner's data, if it is a `T`.
    pub fn private<T: 'static>(&self) -> Option<&'static T> {
        let data: &'static (dyn core::any::Any + Send + Sync) = *self.private.get()?;
        data.downcast_ref::<T>()
    }

    /// The same ops, called even when the CPU is already inside a
    /// callback: its callback must protect itself against recursion.
    pub const fn with_own_recursion(mut self) -> FtraceOps {
        self.own_recursion = true;
        self
    }

    /// The same ops, whose callback sees (and may change) x19..x28 in
    /// [`FtraceRegs::callee_saved`] (Linux's `FTRACE_OPS_FL_SAVE_REGS`):
    /// what kprobes and fprobes need. Other ops get a trampoline that
    /// saves only what Linux's `ftrace_caller` saves.
    pub const fn with_save_regs(mut self) -> FtraceOps {
        self.arch_flags |= arch::ftrace::FTRACE_OPS_FL_SAVE_REGS;
        self
    }

    /// The same ops, whose sites may each name their own callsite (Linux's
    /// per-callsite ops of DYNAMIC_FTRACE_WITH_CALL_OPS): for a site this
    /// ops alone uses, `f(site)` gives the address of an
    /// [`FtraceCallsite`] that the site's literal names, so that the
    /// trampoline calls its handler with its data, with no look-up. The
    /// owner keeps that callsite alive until [`ftrace_refresh`] (or a
    /// filter change) has run after `f` stopped returning it: by then no
    /// literal names it and no CPU is inside it. `None` (and sites several
    /// ops use) get the usual call of the ops' callback.
    pub const fn with_site_literal(mut self, f: fn(u32) -> Option<usize>) -> FtraceOps {
        self.site_literal = Some(f);
        self
    }

    const fn with_func(name: &'static str, func: FtraceFunc) -> FtraceOps {
        let mut ops = FtraceOps::new(name, ftrace_stub);
        ops.func = func;
        ops
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Hits dropped by the recursion guard.
    pub fn nmissed(&self) -> u64 {
        self.nmissed.load(Ordering::Relaxed)
    }

    /// Whether it is registered.
    pub fn is_registered(&self) -> bool {
        self.slot.load(Ordering::Acquire) != usize::MAX
    }

    /// A copy of its filter and notrace sets.
    pub fn hash(&self) -> FtraceHash {
        self.hash.lock().clone()
    }

    /// The callback's address (for `enabled_functions`).
    pub fn callback_addr(&self) -> usize {
        self.callback as usize
    }

    /// Replaces its filter and notrace sets and, if it is registered,
    /// repatches the sites whose users changed.
    pub fn set_hash(&'static self, hash: FtraceHash) -> Result<(), Errno> {
        let mut reg = FTRACE_LOCK.lock();
        *self.hash.lock() = hash;
        if self.is_registered() {
            ftrace_update(&mut reg)?;
        }
        Ok(())
    }
}

fn ftrace_stub(_: &FtraceOps, _: usize, _: usize, _: &mut FtraceRegs) {}

/// What a site's literal may name instead of an ops (see
/// [`FtraceOps::with_site_literal`]): a handler the trampoline calls as
/// `func(ip, parent_ip, callsite, regs)`, the flags it reads, and the
/// handler's data. Laid out as the head of [`FtraceOps`].
#[repr(C)]
pub struct FtraceCallsite<T> {
    func: extern "C" fn(usize, usize, &FtraceCallsite<T>, &mut FtraceRegs),
    arch_flags: u64,
    /// The handler's data.
    pub data: T,
}

const _: () = assert!(core::mem::offset_of!(FtraceCallsite<u64>, arch_flags) == arch::ftrace::FTRACE_OPS_FLAGS_OFFSET);

impl<T> FtraceCallsite<T> {
    /// A callsite calling `func` with `data`; it sees x19..x28 (and may
    /// change them) if `save_regs`, as an ops [`FtraceOps::with_save_regs`].
    /// `func` runs with interrupts masked (unless
    /// [`FtraceCallsite::unmasked`]); it guards itself against
    /// recursion (see [`ftrace_recursion_enter`]).
    pub const fn new(
        func: extern "C" fn(usize, usize, &FtraceCallsite<T>, &mut FtraceRegs),
        save_regs: bool,
        data: T,
    ) -> FtraceCallsite<T> {
        FtraceCallsite {
            func,
            arch_flags: if save_regs {
                arch::ftrace::FTRACE_OPS_FL_SAVE_REGS
            } else {
                0
            },
            data,
        }
    }

    /// The same callsite, whose handler the trampoline calls with
    /// interrupts as the traced function had them instead of masked (no
    /// DAIF write on its path). The handler must then cope with an
    /// interrupt arriving while it runs, whose own traced functions find
    /// this CPU inside a callback (see [`ftrace_recursion_enter`]).
    pub const fn unmasked(mut self) -> FtraceCallsite<T> {
        self.arch_flags |= arch::ftrace::FTRACE_OPS_FL_UNMASKED;
        self
    }

    /// The same [`FtraceCallsite::unmasked`] callsite, whose handler reads
    /// no [`FtraceRegs::daif`]: the trampoline does not read DAIF for it.
    pub const fn without_daif(mut self) -> FtraceCallsite<T> {
        assert!(self.arch_flags & arch::ftrace::FTRACE_OPS_FL_UNMASKED != 0);
        self.arch_flags |= arch::ftrace::FTRACE_OPS_FL_NO_DAIF;
        self
    }
}

/// The literal of a site nobody uses (Linux's `ftrace_nop_ops`): a CPU
/// that took the `bl` just before the site was turned off lands here.
pub static FTRACE_NOP_OPS: FtraceOps = FtraceOps::with_func("ftrace_nop_ops", ftrace_ops_nop_func);

/// The literal of a site several ops use (Linux's `ftrace_list_ops`).
/// It saves every register, as one of the ops may want them.
pub static FTRACE_LIST_OPS: FtraceOps = FtraceOps::with_func("ftrace_list_ops", ftrace_ops_list_func).with_save_regs();

/// Most ops registered at once (a site's users are a bit mask of slots).
pub const MAX_OPS: usize = 64;

/// The registered ops by slot, read by [`ftrace_ops_list_func`] without a
/// lock; written only inside `stop_machine`.
static ACTIVE: [AtomicPtr<FtraceOps>; MAX_OPS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_OPS];

/// Per-CPU "inside a callback" bit.
static RECURSION: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

/// Site flags (Linux's `FTRACE_FL_*`).
pub mod flags {
    /// The `bl` is in place.
    pub const ENABLED: u32 = 1 << 0;
    /// Its literal names one ops (`O` in `enabled_functions`).
    pub const CALL_OPS: u32 = 1 << 1;
    /// It was enabled at least once (`touched_functions`).
    pub const TOUCHED: u32 = 1 << 2;
}

/// One patch site (Linux's `struct dyn_ftrace`).
pub struct DynFtrace {
    /// The function's entry (`mov x9, x30`).
    pub func: usize,
    /// Its kallsyms name.
    pub name: &'static str,
    flags: AtomicU32,
    /// Which [`ACTIVE`] slots use it.
    users: AtomicU64,
    /// The ops its literal names now.
    literal_ops: AtomicUsize,
}

impl DynFtrace {
    /// Linux's `rec->ip`: the site's `bl`.
    pub fn ip(&self) -> usize {
        self.func + FTRACE_BL_OFFSET
    }

    /// The literal's address.
    fn literal(&self) -> usize {
        self.func - FTRACE_PREFIX_BYTES
    }

    /// Its [`flags`].
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Acquire)
    }

    /// How many ops use it.
    pub fn ref_count(&self) -> u32 {
        self.users.load(Ordering::Acquire).count_ones()
    }

    /// The ops using it.
    pub fn users(&self) -> impl Iterator<Item = &'static FtraceOps> {
        let mask = self.users.load(Ordering::Acquire);
        (0..MAX_OPS)
            .filter(move |s| mask & (1 << s) != 0)
            .filter_map(active_ops)
    }
}

static SITES: spin::Once<Vec<DynFtrace>> = spin::Once::new();

/// Serialises registrations, filter changes and site updates.
static FTRACE_LOCK: spin::Mutex<Registry> = spin::Mutex::new(Registry { ops: [None; MAX_OPS] });

struct Registry {
    ops: [Option<&'static FtraceOps>; MAX_OPS],
}

/// The traceable functions' sites, by address (empty before
/// [`ftrace_init`]).
pub fn sites() -> &'static [DynFtrace] {
    SITES.get().map_or(&[], Vec::as_slice)
}

/// The site of the function whose entry is `func`.
pub fn site_index(func: usize) -> Option<u32> {
    sites().binary_search_by_key(&func, |s| s.func).ok().map(|i| i as u32)
}

/// Linux's `ftrace_location`: the `bl` of the site of the function
/// containing `addr` if `addr` is that `bl`, or that function's start.
pub fn ftrace_location(addr: usize) -> Option<usize> {
    let i = match sites().binary_search_by_key(&addr, |s| s.func) {
        Ok(i) => i,
        Err(i) => i.checked_sub(1)?,
    };
    let s = sites().get(i)?;
    (addr == s.func || addr == s.ip()).then(|| s.ip())
}

fn active_ops(slot: usize) -> Option<&'static FtraceOps> {
    let p = ACTIVE.get(slot)?.load(Ordering::Acquire);
    // SAFETY: non-null ACTIVE entries are made from `&'static FtraceOps`
    // in `ftrace_update`, so they point to an ops that lives forever.
    unsafe { p.as_ref() }
}

// `site`, from `__start_mcount_loc` to `__stop_mcount_loc`, one address
// per function compiled with patchable entries.
// SAFETY: the link script gathers the `__patchable_function_entries`
// sections, which LLVM fills with one 64-bit address each, between these
// two symbols, in read-only data.
arch::linker_table!(
    /// The compiler's record of patch sites (their literal's address).
    fn mcount_loc() -> [u64] = __start_mcount_loc..__stop_mcount_loc
);

/// Every site the compiler recorded, traceable or not.
pub fn recorded_sites() -> &'static [u64] {
    mcount_loc()
}

/// Whether the site's four words are the compiler's NOPs.
fn is_pristine(func: usize) -> bool {
    let nop = insn::encode::nop();
    (0..4).all(|k| crate::patching::read_insn(func - FTRACE_PREFIX_BYTES + 4 * k) == Some(nop))
}

/// Finds the traceable sites and puts each in the initialised NOP state,
/// in one `stop_machine`. Must run before the other CPUs and the scheduler
/// start: a task stopped between a site's two NOPs would otherwise reach
/// the `bl` later without having run `mov x9, x30`.
pub fn ftrace_init() {
    let mut sites: Vec<DynFtrace> = Vec::new();
    let mut bad = 0;
    for &loc in mcount_loc() {
        let func = loc as usize + FTRACE_PREFIX_BYTES;
        if crate::notrace::is_notrace(func) {
            continue;
        }
        let Some(sym) = crate::kallsyms::lookup_addr(func).filter(|s| s.offset == 0) else {
            bad += 1;
            continue;
        };
        // A few compiler-made shims (closure vtable shims) escape
        // -Zmin-function-alignment: their literal would be unaligned, and
        // they are nobody's interest; leave them out.
        if !func.is_multiple_of(8) || !is_pristine(func) {
            bad += 1;
            continue;
        }
        sites.push(DynFtrace {
            func,
            name: sym.name,
            flags: AtomicU32::new(0),
            users: AtomicU64::new(0),
            literal_ops: AtomicUsize::new(ops_addr(&FTRACE_NOP_OPS)),
        });
    }
    sites.sort_by_key(|s| s.func);
    sites.dedup_by_key(|s| s.func);
    let nop_ops = literal_words(ops_addr(&FTRACE_NOP_OPS));
    let mut addrs = Vec::with_capacity(sites.len() * 3);
    let mut insns = Vec::with_capacity(sites.len() * 3);
    for s in &sites {
        addrs.extend([s.literal(), s.literal() + 4, s.func]);
        insns.extend([nop_ops[0], nop_ops[1], MOV_X9_X30]);
    }
    // SAFETY: each site's words are the compiler's NOPs (checked above):
    // the literal words lie before the function's entry, where no code
    // runs (the previous function ends in a branch or return), so any
    // value is harmless; `mov x9, x30` replaces the first entry NOP, and
    // x9 is a temporary the AAPCS lets a function entry clobber. No CPU is
    // between the two NOPs of a site: only this CPU runs, and none of its
    // callers is at an entry.
    let r = unsafe { crate::patching::patch_text_unchecked(&addrs, &insns) };
    if let Err(e) = r {
        crate::pr_err!("ftrace: cannot initialise the patch sites: {}", e);
        return;
    }
    crate::pr_info!(
        "ftrace: allocating {} entries ({} recorded, {} skipped)",
        sites.len(),
        mcount_loc().len(),
        bad
    );
    SITES.call_once(|| sites);
}

/// The two words of a literal naming the ops (or callsite) at `addr`,
/// low first.
fn literal_words(addr: usize) -> [u32; 2] {
    let a = addr as u64;
    [a as u32, (a >> 32) as u32]
}

/// Registers `ops`: its sites are patched to call it. `EBUSY` if it is
/// already registered, `ENOSPC` when [`MAX_OPS`] are.
pub fn register_ftrace_function(ops: &'static FtraceOps) -> Result<(), Errno> {
    let mut reg = FTRACE_LOCK.lock();
    if ops.is_registered() {
        return Err(Errno::EBUSY);
    }
    let slot = reg.ops.iter().position(Option::is_none).ok_or(Errno::ENOSPC)?;
    reg.ops[slot] = Some(ops);
    ops.slot.store(slot, Ordering::Release);
    if let Err(e) = ftrace_update(&mut reg) {
        reg.ops[slot] = None;
        ops.slot.store(usize::MAX, Ordering::Release);
        let _ = ftrace_update(&mut reg);
        return Err(e);
    }
    Ok(())
}

/// Brings `ops`'s sites up to date with what its
/// [`FtraceOps::with_site_literal`] function returns now (nothing if it
/// is not registered). Once this returns, no literal names a callsite the
/// function no longer returns, and no CPU is running one.
pub fn ftrace_refresh(ops: &'static FtraceOps) -> Result<(), Errno> {
    let mut reg = FTRACE_LOCK.lock();
    if ops.is_registered() {
        ftrace_update(&mut reg)?;
    }
    Ok(())
}

/// Unregisters `ops`; once this returns no CPU runs its callback. `EINVAL`
/// if it is not registered.
pub fn unregister_ftrace_function(ops: &'static FtraceOps) -> Result<(), Errno> {
    let mut reg = FTRACE_LOCK.lock();
    let slot = ops.slot.load(Ordering::Acquire);
    if reg.ops.get(slot).copied().flatten().map(|o| core::ptr::eq(o, ops)) != Some(true) {
        return Err(Errno::EINVAL);
    }
    reg.ops[slot] = None;
    let r = ftrace_update(&mut reg);
    ops.slot.store(usize::MAX, Ordering::Release);
    r
}

/// One site's change.
struct SiteUpdate {
    index: usize,
    users: u64,
    /// The address its literal names from now on, if it changes.
    literal: Option<usize>,
    bl: Option<u32>,
}

fn ops_addr(ops: &'static FtraceOps) -> usize {
    ops as *const FtraceOps as usize
}

/// Brings every site in line with the registered ops and their hashes, in
/// one `stop_machine` (nothing at all if nothing changed).
fn ftrace_update(reg: &mut Registry) -> Result<(), Errno> {
    let sites = sites();
    let hashes: Vec<(usize, &'static FtraceOps, FtraceHash)> = reg
        .ops
        .iter()
        .enumerate()
        .filter_map(|(s, o)| o.map(|o| (s, o, o.hash())))
        .collect();
    let caller = arch::ftrace::ftrace_caller_addr() as u64;
    let nop = insn::encode::nop();
    let mut updates = Vec::new();
    for (i, site) in sites.iter().enumerate() {
        let users = hashes
            .iter()
            .filter(|(_, _, h)| h.matches(i as u32))
            .fold(0u64, |m, (s, _, _)| m | 1 << s);
        let old = site.users.load(Ordering::Acquire);
        let new_literal: usize = match users.count_ones() {
            0 => ops_addr(&FTRACE_NOP_OPS),
            1 => match reg.ops[users.trailing_zeros() as usize] {
                Some(ops) => ops.site_literal.and_then(|f| f(i as u32)).unwrap_or(ops_addr(ops)),
                None => ops_addr(&FTRACE_NOP_OPS),
            },
            _ => ops_addr(&FTRACE_LIST_OPS),
        };
        let literal = (site.literal_ops.load(Ordering::Acquire) != new_literal).then_some(new_literal);
        let bl = if (users != 0) != (site.flags() & flags::ENABLED != 0) {
            Some(if users != 0 {
                insn::encode::bl(site.ip() as u64, caller).map_err(|_| Errno::ERANGE)?
            } else {
                nop
            })
        } else {
            None
        };
        if users != old || literal.is_some() || bl.is_some() {
            updates.push(SiteUpdate {
                index: i,
                users,
                literal,
                bl,
            });
        }
    }
    let active: Vec<*mut FtraceOps> = reg
        .ops
        .iter()
        .map(|o| o.map_or(core::ptr::null_mut(), |o| o as *const FtraceOps as *mut FtraceOps))
        .collect();
    if updates.is_empty() && active.iter().zip(&ACTIVE).all(|(a, b)| *a == b.load(Ordering::Relaxed)) {
        return Ok(());
    }
    let r = crate::stop_machine::stop_machine(|| -> Result<(), Errno> {
        for (a, slot) in active.iter().zip(&ACTIVE) {
            slot.store(*a, Ordering::Release);
        }
        for u in &updates {
            let site = &sites[u.index];
            site.users.store(u.users, Ordering::Release);
            if let Some(addr) = u.literal {
                let [lo, hi] = literal_words(addr);
                // SAFETY: the literal words are data before the function's
                // entry that no code executes; every other CPU is parked in
                // stop_machine, and the trampoline reads the literal in one
                // load, so none sees half the old and half the new.
                unsafe {
                    crate::patching::patch_text_nosync_unchecked(site.literal(), lo)?;
                    crate::patching::patch_text_nosync_unchecked(site.literal() + 4, hi)?;
                }
                site.literal_ops.store(addr, Ordering::Release);
            }
            if let Some(bl) = u.bl {
                crate::patching::patch_text_nosync(site.ip(), bl)?;
            }
            let mut f = site.flags() & !(flags::ENABLED | flags::CALL_OPS);
            if u.users != 0 {
                f |= flags::ENABLED | flags::TOUCHED;
            }
            if u.users.count_ones() == 1 {
                f |= flags::CALL_OPS;
            }
            site.flags.store(f, Ordering::Release);
        }
        Ok(())
    });
    // Even a failed update may have moved some literals.
    ftrace_sync_trampolines();
    r
}

/// Waits until every other CPU has been seen outside `ftrace_caller`
/// (the grace period of an update, see the module comment): a call that
/// began before the `stop_machine` may still hold an old literal's ops,
/// since the trampoline may run with interrupts on, and the stopper runs
/// in an interrupt. A CPU is inside a call for the length of one
/// callback (which never sleeps: kernel code is not preempted), plus the
/// calls of interrupts nested in it, so each wait is short. This CPU is
/// not inside one: updates are not made from callbacks.
pub fn ftrace_sync_trampolines() {
    let me = arch::cpu::cpu_id();
    for cpu in (0..arch::ftrace::FTRACE_MAX_CPUS).filter(|&c| c != me) {
        while arch::ftrace::ftrace_depth(cpu) != 0 {
            core::hint::spin_loop();
        }
    }
}

/// Runs `ops`'s callback unless this CPU is already inside one (then the
/// hit counts in `nmissed`). Interrupts are masked (by the trampoline).
#[inline(always)]
fn call_protected(ops: &FtraceOps, ip: usize, parent_ip: usize, regs: &mut FtraceRegs) {
    let busy = RECURSION.this();
    if busy.load(Ordering::Relaxed) {
        if ops.own_recursion {
            (ops.callback)(ops, ip, parent_ip, regs);
        } else {
            ops.nmissed.fetch_add(1, Ordering::Relaxed);
        }
        return;
    }
    busy.store(true, Ordering::Relaxed);
    (ops.callback)(ops, ip, parent_ip, regs);
    busy.store(false, Ordering::Relaxed);
}

/// Enters a callsite handler's callback (see [`FtraceCallsite`]), as
/// [`call_protected`] enters an ops [`FtraceOps::with_own_recursion`]:
/// the callback always runs, and traced functions it calls are not
/// traced. Returns what [`ftrace_recursion_exit`] takes. On this CPU, with
/// interrupts masked or not: an interrupt between the load and the store
/// leaves the bit as it found it.
#[inline(always)]
pub fn ftrace_recursion_enter() -> bool {
    ftrace_recursion_enter_on(crate::percpu::this_cpu())
}

/// [`ftrace_recursion_enter`] on `cpu`, which must be this CPU (see
/// [`crate::percpu::this_cpu`]).
#[inline(always)]
pub fn ftrace_recursion_enter_on(cpu: usize) -> bool {
    let busy = RECURSION.on(cpu);
    let was = busy.load(Ordering::Relaxed);
    if !was {
        busy.store(true, Ordering::Relaxed);
    }
    was
}

/// Leaves what [`ftrace_recursion_enter`] entered.
#[inline(always)]
pub fn ftrace_recursion_exit(was: bool) {
    ftrace_recursion_exit_on(crate::percpu::this_cpu(), was)
}

/// [`ftrace_recursion_exit`] on `cpu`, which must be this CPU.
#[inline(always)]
pub fn ftrace_recursion_exit_on(cpu: usize, was: bool) {
    if !was {
        RECURSION.on(cpu).store(false, Ordering::Relaxed);
    }
}

/// Runs `f` under this CPU's recursion bit, as a callback runs, so that
/// traced functions it calls are not traced; `None` (and `f` not run) if
/// the CPU is already inside a callback. For return handlers
/// (`return_to_handler`); interrupts must be masked.
pub fn ftrace_test_recursion<R>(f: impl FnOnce() -> R) -> Option<R> {
    let busy = RECURSION.this();
    if busy.load(Ordering::Relaxed) {
        return None;
    }
    busy.store(true, Ordering::Relaxed);
    let r = f();
    busy.store(false, Ordering::Relaxed);
    Some(r)
}

/// The handler of a site one ops uses (Linux's
/// `ftrace_ops_assist_func`): the recursion guard around its callback.
#[allow(improper_ctypes_definitions)] // called from ftrace_caller, which passes the literal's ops
extern "C" fn ftrace_ops_assist_func(ip: usize, parent_ip: usize, ops: &FtraceOps, regs: &mut FtraceRegs) {
    call_protected(ops, ip, parent_ip, regs);
}

/// The handler of a site several ops use: each of them in slot order.
#[allow(improper_ctypes_definitions)]
extern "C" fn ftrace_ops_list_func(ip: usize, parent_ip: usize, _: &FtraceOps, regs: &mut FtraceRegs) {
    let Ok(i) = sites().binary_search_by_key(&(ip - FTRACE_BL_OFFSET), |s| s.func) else {
        return;
    };
    let mut mask = sites()[i].users.load(Ordering::Acquire);
    while mask != 0 {
        let slot = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if let Some(ops) = active_ops(slot) {
            call_protected(ops, ip, parent_ip, regs);
        }
    }
}

/// The handler of a site nobody uses.
#[allow(improper_ctypes_definitions)]
extern "C" fn ftrace_ops_nop_func(_: usize, _: usize, _: &FtraceOps, _: &mut FtraceRegs) {}

/// Why a filter word was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterError {
    /// Nothing matched (Linux: EINVAL).
    NoMatch,
    /// A `func:command` or `:mod:` form, not supported (EINVAL).
    Unsupported,
}

/// Applies one word written to `set_ftrace_filter` or
/// `set_ftrace_notrace` to `set`: a glob adds the matching functions, a
/// leading `!` removes them (Linux's `ftrace_match_records`). A word
/// matching no function is an error, except a removal.
pub fn apply_filter_word(set: &mut BTreeSet<u32>, word: &str) -> Result<(), FilterError> {
    let (remove, pat) = match word.strip_prefix('!') {
        Some(p) => (true, p),
        None => (false, word),
    };
    if pat.contains(':') {
        return Err(FilterError::Unsupported);
    }
    let mut found = false;
    for (i, s) in sites().iter().enumerate() {
        if trace_filter::glob::glob_match(pat.as_bytes(), s.name.as_bytes()) {
            found = true;
            if remove {
                set.remove(&(i as u32));
            } else {
                set.insert(i as u32);
            }
        }
    }
    if found || remove {
        Ok(())
    } else {
        Err(FilterError::NoMatch)
    }
}
