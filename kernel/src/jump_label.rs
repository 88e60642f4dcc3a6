//! Static keys (Linux's `kernel/jump_label.c`): a branch that costs one
//! `NOP` while its key is off and becomes a `B` when the key is turned on.
//!
//! Each `static_branch_unlikely!`/`static_branch_likely!` is one
//! instruction in the text, recorded at link time in `__jump_table`
//! (`arch::jump_label`). At boot [`jump_label_init`] indexes the table by
//! key and checks every entry; enabling or disabling a key rewrites all its
//! sites, `NOP` <-> `B`, in one batch under `stop_machine`
//! (`patching::patch_text`). Keys are reference-counted: the first
//! [`static_key_slow_inc`] patches, the last [`static_key_slow_dec`]
//! unpatches; [`static_key_batch`] switches many keys with one
//! `stop_machine`.
//!
//! Changing a key may stop the machine: call it from task context with
//! interrupts enabled, never from an interrupt or exception handler or
//! with a spinlock held that another CPU may want with interrupts masked.
//! Reading a key (the macros, [`StaticKey::enabled`]) is fine anywhere.

use alloc::vec::Vec;
use arch::jump_label::{jump_table, JUMP_ENTRY_BRANCH, JUMP_ENTRY_DEFAULT_TRUE};
use core::sync::atomic::{AtomicIsize, Ordering};
use insn::jump_label::{check_site, jump_label_insn, jump_label_type, SiteError};

#[doc(hidden)]
pub use arch::arch_static_branch;

/// A static key (Linux's `struct static_key`): enabled while its count is
/// above zero. `DEFAULT` is its state as built (Linux's
/// `DEFINE_STATIC_KEY_FALSE`/`_TRUE`): the sites of a key are emitted in
/// that state, so a key that is mostly on should be a `StaticKey<true>`.
///
/// Keys must be `static`s: the sites name them by address.
#[repr(C, align(8))]
pub struct StaticKey<const DEFAULT: bool = false> {
    /// The reference count (Linux's `key->enabled`); -n for n references
    /// while the sites are being switched on.
    enabled: AtomicIsize,
}

impl StaticKey<false> {
    /// A key that starts off (Linux's `STATIC_KEY_FALSE_INIT`).
    pub const fn new_false() -> StaticKey<false> {
        StaticKey {
            enabled: AtomicIsize::new(0),
        }
    }
}

impl StaticKey<true> {
    /// A key that starts on, with one reference (Linux's
    /// `STATIC_KEY_TRUE_INIT`).
    pub const fn new_true() -> StaticKey<true> {
        StaticKey {
            enabled: AtomicIsize::new(1),
        }
    }
}

impl<const DEFAULT: bool> StaticKey<DEFAULT> {
    /// Whether the key is on (Linux's `static_key_enabled`). A key being
    /// switched on reads as off until all its sites are patched.
    #[inline(always)]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed) > 0
    }

    /// The reference count (Linux's `static_key_count`).
    pub fn count(&self) -> usize {
        self.enabled.load(Ordering::Acquire).max(0) as usize
    }
}

/// The state a key's sites were built in (for the macros).
#[doc(hidden)]
pub const fn key_default<const DEFAULT: bool>(_key: &StaticKey<DEFAULT>) -> bool {
    DEFAULT
}

/// `static_branch_unlikely!(KEY)`: true when `KEY` (a `static StaticKey`)
/// is on. Laid out for the off case: for a `new_false` key the site is a
/// `NOP` in line with the code that follows, and the on path is out of
/// line, reached by the `B` that enabling patches in.
#[macro_export]
macro_rules! static_branch_unlikely {
    ($key:path) => {
        $crate::static_branch_site!($key, branch = false)
    };
}

/// `static_branch_likely!(KEY)`: true when `KEY` is on. Laid out for the
/// on case (Linux's `arch_static_branch_jump` on a false key): the on path
/// follows the site in line, and while the key is off the site is a `B`
/// around it.
#[macro_export]
macro_rules! static_branch_likely {
    ($key:path) => {
        !$crate::static_branch_site!($key, branch = true)
    };
}

/// The site of the two macros above: one patchable instruction, or, in a
/// kernel built without static-key sites (feature `no_tracepoints`, the
/// baseline of `bench/ftrace.py --nop-cost`), the key's built-in state as
/// a constant, so that the compiler drops the guarded code as Linux
/// without CONFIG_TRACEPOINTS has none.
#[doc(hidden)]
#[cfg(not(feature = "no_tracepoints"))]
#[macro_export]
macro_rules! static_branch_site {
    ($key:path, branch = $branch:expr) => {
        $crate::jump_label::arch_static_branch!(
            $key,
            default = $crate::jump_label::key_default(&$key),
            branch = $branch
        )
    };
}

/// See above: the constant form.
#[doc(hidden)]
#[cfg(feature = "no_tracepoints")]
#[macro_export]
macro_rules! static_branch_site {
    ($key:path, branch = $branch:expr) => {
        // `jmp` of the site as built: the key's state, seen through the
        // branch bit.
        $crate::jump_label::key_default(&$key) != $branch
    };
}

/// One checked `__jump_table` entry.
struct Site {
    code: usize,
    target: usize,
    key: usize,
    /// The entry's branch bit (`static_branch_likely`).
    branch: bool,
}

/// The table, indexed at boot.
struct JumpTable {
    /// Usable sites, sorted by key, then address.
    sites: Vec<Site>,
    /// Keys with an inconsistent entry (sorted): none of their sites is
    /// ever patched, so each reads as built whatever the count.
    refused: Vec<usize>,
    /// Every site's address, refused ones included, sorted.
    codes: Vec<usize>,
}

impl JumpTable {
    fn sites_of(&self, key: usize) -> &[Site] {
        let lo = self.sites.partition_point(|s| s.key < key);
        let hi = self.sites.partition_point(|s| s.key <= key);
        &self.sites[lo..hi]
    }
}

static TABLE: spin::Once<JumpTable> = spin::Once::new();

/// Keys changed before [`jump_label_init`], whose sites it brings up to
/// date.
const MAX_EARLY_KEYS: usize = 16;

/// Serialises key changes (Linux's `jump_label_mutex`); holds the keys
/// changed before the table was indexed.
static JUMP_LABEL_MUTEX: spin::Mutex<EarlyKeys> = spin::Mutex::new([None; MAX_EARLY_KEYS]);

fn key_addr(enabled: &'static AtomicIsize) -> usize {
    enabled as *const AtomicIsize as usize
}

type EarlyKeys = [Option<&'static AtomicIsize>; MAX_EARLY_KEYS];

/// Rewrites the sites of `keys`, each to its state (`true`: on), in one
/// batch. Before [`jump_label_init`] it only notes the keys in `early`.
/// The caller holds `JUMP_LABEL_MUTEX` (whose content `early` is).
fn jump_label_update(early: &mut EarlyKeys, keys: &[(&'static AtomicIsize, bool)]) {
    let Some(table) = TABLE.get() else {
        for &(enabled, _) in keys {
            let key = key_addr(enabled);
            if early.iter().flatten().any(|k| key_addr(k) == key) {
                continue;
            }
            match early.iter_mut().find(|k| k.is_none()) {
                Some(slot) => *slot = Some(enabled),
                None => crate::pr_warn!(
                    "jump_label: too many keys changed before jump_label_init; key {key:#x} stays as built"
                ),
            }
        }
        return;
    };
    let mut addrs = Vec::new();
    let mut insns = Vec::new();
    for &(enabled, on) in keys {
        let key = key_addr(enabled);
        if table.refused.binary_search(&key).is_ok() {
            continue;
        }
        for s in table.sites_of(key) {
            // Checked at boot: every site's B is in range.
            let Ok(want) = jump_label_insn(s.code as u64, s.target as u64, jump_label_type(on, s.branch)) else {
                continue;
            };
            if crate::patching::read_insn(s.code) != Some(want) {
                addrs.push(s.code);
                insns.push(want);
            }
        }
    }
    if addrs.is_empty() {
        return;
    }
    let written = if arch::cpu::irqs_disabled() {
        // stop_machine would wait forever for this CPU; NOP <-> B may be
        // written live (ARM ARM B2.2.5), seen by the others at their next
        // context synchronisation, as Linux's arm64 code does.
        crate::pr_warn!("jump_label: key changed with interrupts masked; patched without stop_machine");
        addrs
            .iter()
            .zip(&insns)
            .try_for_each(|(&a, &i)| crate::patching::patch_text_nosync(a, i))
    } else {
        crate::patching::patch_text(&addrs, &insns)
    };
    if let Err(e) = written {
        crate::pr_warn!("jump_label: cannot patch {} static-key sites: {e:?}", addrs.len());
    }
}

/// Several key changes whose sites are rewritten together, under one
/// `stop_machine`, when [`static_key_batch`] returns. Counts change at
/// once; a key switched on reads as off ([`StaticKey::enabled`]) until its
/// sites are written.
pub struct StaticKeyBatch<'a> {
    early: &'a mut EarlyKeys,
    /// Keys whose state may have changed.
    touched: Vec<&'static AtomicIsize>,
}

impl StaticKeyBatch<'_> {
    fn touch(&mut self, enabled: &'static AtomicIsize) {
        if !self.touched.iter().any(|&k| core::ptr::eq(k, enabled)) {
            self.touched.push(enabled);
        }
    }

    /// `static_key_slow_inc` within the batch.
    pub fn slow_inc<const DEFAULT: bool>(&mut self, key: &'static StaticKey<DEFAULT>) {
        // A count of -n: n references, sites not yet switched on.
        let enabled = &key.enabled;
        match enabled.load(Ordering::Acquire) {
            0 => {
                enabled.store(-1, Ordering::Release);
                self.touch(enabled);
            }
            v if v < 0 => enabled.store(v - 1, Ordering::Release),
            _ => {
                enabled.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// `static_key_slow_dec` within the batch.
    pub fn slow_dec<const DEFAULT: bool>(&mut self, key: &'static StaticKey<DEFAULT>) {
        let enabled = &key.enabled;
        match enabled.load(Ordering::Acquire) {
            0 => crate::pr_warn!("jump_label: static_key_slow_dec on a key that is off"),
            1 | -1 => {
                enabled.store(0, Ordering::Release);
                self.touch(enabled);
            }
            v if v < 0 => enabled.store(v + 1, Ordering::Release),
            _ => {
                enabled.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// `static_key_enable` within the batch.
    pub fn enable<const DEFAULT: bool>(&mut self, key: &'static StaticKey<DEFAULT>) {
        if key.enabled.load(Ordering::Acquire) == 0 {
            self.slow_inc(key);
        }
    }

    /// `static_key_disable` within the batch.
    pub fn disable<const DEFAULT: bool>(&mut self, key: &'static StaticKey<DEFAULT>) {
        if key.enabled.load(Ordering::Acquire) != 0 {
            key.enabled.store(0, Ordering::Release);
            self.touch(&key.enabled);
        }
    }
}

/// Runs `f`, which changes keys through the [`StaticKeyBatch`], then
/// rewrites the sites of every key it switched, in one batch under one
/// `stop_machine` (for many keys at once: enabling every event, say).
/// Holds the jump-label mutex throughout: `f` must not change keys by the
/// other functions of this module. Task context only.
pub fn static_key_batch<R>(f: impl FnOnce(&mut StaticKeyBatch) -> R) -> R {
    let mut early = JUMP_LABEL_MUTEX.lock();
    let mut batch = StaticKeyBatch {
        early: &mut early,
        touched: Vec::new(),
    };
    let r = f(&mut batch);
    let StaticKeyBatch { early, touched } = batch;
    let states: Vec<(&'static AtomicIsize, bool)> =
        touched.iter().map(|&e| (e, e.load(Ordering::Acquire) != 0)).collect();
    jump_label_update(early, &states);
    // Sites written: pending references count now.
    for e in touched {
        let v = e.load(Ordering::Acquire);
        if v < 0 {
            e.store(-v, Ordering::Release);
        }
    }
    r
}

/// Takes a reference: the key is on from the first, whose caller patches
/// every site (Linux's `static_key_slow_inc`). Task context only.
pub fn static_key_slow_inc<const DEFAULT: bool>(key: &'static StaticKey<DEFAULT>) {
    let enabled = &key.enabled;
    // Already on: count without the mutex.
    let mut v = enabled.load(Ordering::Relaxed);
    while v > 0 {
        match enabled.compare_exchange_weak(v, v + 1, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => v = now,
        }
    }
    static_key_batch(|b| b.slow_inc(key));
}

/// Drops a reference: the key is off after the last, whose caller patches
/// every site back (Linux's `static_key_slow_dec`). Dropping a reference
/// not taken is a bug that is warned about and ignored. Task context only.
pub fn static_key_slow_dec<const DEFAULT: bool>(key: &'static StaticKey<DEFAULT>) {
    let enabled = &key.enabled;
    let mut v = enabled.load(Ordering::Relaxed);
    while v > 1 {
        match enabled.compare_exchange_weak(v, v - 1, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => v = now,
        }
    }
    static_key_batch(|b| b.slow_dec(key));
}

/// Turns the key on, whatever its count, leaving a count of one (Linux's
/// `static_key_enable`; a key already on is left alone). Task context only.
pub fn static_key_enable<const DEFAULT: bool>(key: &'static StaticKey<DEFAULT>) {
    static_key_batch(|b| b.enable(key));
}

/// Turns the key off, whatever its count (Linux's `static_key_disable`).
/// Task context only.
pub fn static_key_disable<const DEFAULT: bool>(key: &'static StaticKey<DEFAULT>) {
    static_key_batch(|b| b.disable(key));
}

/// Indexes `__jump_table` by key and checks every entry: the site is in
/// kernel text, aligned, holds the instruction the build emitted, and its
/// target is in text within B's range; all entries of a key agree on its
/// built state. A key with any inconsistent entry is refused with a
/// warning: its sites stay as built and are never patched. Then brings up
/// to date the sites of keys changed before this ran. Called once at boot
/// (Linux's `jump_label_init`), before other CPUs are up.
pub fn jump_label_init() {
    let mut early = JUMP_LABEL_MUTEX.lock();
    if TABLE.is_completed() {
        return;
    }
    let layout = arch::mmu::image_layout();
    let text = layout.text as u64..layout.etext as u64;
    let mut entries: Vec<(Site, bool)> = jump_table()
        .iter()
        .map(|e| {
            let site = Site {
                code: e.code(),
                target: e.target(),
                key: e.key(),
                branch: e.flags() & JUMP_ENTRY_BRANCH != 0,
            };
            (site, e.flags() & JUMP_ENTRY_DEFAULT_TRUE != 0)
        })
        .collect();
    entries.sort_unstable_by_key(|(s, _)| (s.key, s.code));
    let mut refused: Vec<usize> = Vec::new();
    for (i, (s, default)) in entries.iter().enumerate() {
        let checked = if entries[..i].last().is_some_and(|(p, d)| p.key == s.key && d != default) {
            Err(None)
        } else {
            let code = s.code as u64;
            let found = if text.contains(&code) && code.is_multiple_of(4) {
                crate::patching::read_insn(s.code).unwrap_or(0)
            } else {
                0
            };
            check_site(
                text.clone(),
                code,
                s.target as u64,
                jump_label_type(*default, s.branch),
                found,
            )
            .map_err(Some)
        };
        if let Err(why) = checked {
            let why: &dyn core::fmt::Display = match &why {
                Some(e) => e as &SiteError,
                None => &"the key's sites disagree on its initial state",
            };
            crate::pr_warn!(
                "jump_label: refusing key {:#x}: site {} ({:#x}) -> {:#x}: {}",
                s.key,
                crate::kallsyms::symbolize(s.code),
                s.code,
                s.target,
                why
            );
            refused.push(s.key);
        }
    }
    refused.dedup();
    let mut codes: Vec<usize> = entries.iter().map(|(s, _)| s.code).collect();
    codes.sort_unstable();
    let sites = entries
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| refused.binary_search(&s.key).is_err())
        .collect();
    TABLE.call_once(|| JumpTable { sites, refused, codes });
    let changed: Vec<(&'static AtomicIsize, bool)> = early
        .iter_mut()
        .filter_map(|slot| slot.take())
        .map(|e| (e, e.load(Ordering::Acquire) > 0))
        .collect();
    jump_label_update(&mut early, &changed);
}

/// Whether any static-key site lies in `start..=end` (Linux's
/// `jump_label_text_reserved`): code that patches text itself, such as
/// kprobes, must leave those instructions alone.
pub fn jump_label_text_reserved(start: usize, end: usize) -> bool {
    let conflicts = |code: usize| code <= end && code.saturating_add(4) > start;
    match TABLE.get() {
        Some(t) => {
            let i = t.codes.partition_point(|&c| c.saturating_add(4) <= start);
            t.codes.get(i).is_some_and(|&c| conflicts(c))
        }
        None => jump_table().iter().any(|e| conflicts(e.code())),
    }
}

#[cfg(feature = "ktest")]
#[path = "jump_label_tests.rs"]
mod tests;
