//! Static keys (Linux's `jump_label`): a branch that costs one NOP while
//! its key is off and becomes a `B` when the key is turned on.
//!
//! This is the interface the rest of the kernel uses. The first version
//! tests an atomic counter at each site; the patched version (a `NOP`/`B`
//! at each site, recorded in a link-time table and rewritten under
//! `stop_machine`) keeps these names and semantics.

use core::sync::atomic::{AtomicUsize, Ordering};

/// A static key: enabled while its reference count is above zero
/// (Linux's `struct static_key`).
pub struct StaticKey {
    count: AtomicUsize,
}

impl StaticKey {
    /// A key that starts off (Linux's `STATIC_KEY_FALSE_INIT`).
    pub const fn new_false() -> StaticKey {
        StaticKey {
            count: AtomicUsize::new(0),
        }
    }

    /// Whether the key is on (Linux's `static_key_enabled`).
    #[inline(always)]
    pub fn enabled(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// The reference count (Linux's `static_key_count`).
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

/// Takes a reference: the key is on from the first (Linux's
/// `static_key_slow_inc`).
pub fn static_key_slow_inc(key: &'static StaticKey) {
    key.count.fetch_add(1, Ordering::AcqRel);
}

/// Drops a reference: the key is off after the last (Linux's
/// `static_key_slow_dec`). Dropping a reference not taken is a bug that is
/// warned about and ignored.
pub fn static_key_slow_dec(key: &'static StaticKey) {
    let r = key
        .count
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| c.checked_sub(1));
    if r.is_err() {
        crate::pr_warn!("jump_label: static_key_slow_dec on a key that is off");
    }
}

/// `static_branch_unlikely!(KEY)`: true when `KEY` (a `static StaticKey`)
/// is on; laid out for the off case.
#[macro_export]
macro_rules! static_branch_unlikely {
    ($key:path) => {
        $crate::jump_label::StaticKey::enabled(&$key)
    };
}

/// `static_branch_likely!(KEY)`: true when `KEY` is on; laid out for the
/// on case.
#[macro_export]
macro_rules! static_branch_likely {
    ($key:path) => {
        $crate::jump_label::StaticKey::enabled(&$key)
    };
}
