//! A hash table of keys to sums, preallocated when a hist trigger is
//! created and filled from probe context without locks or allocation, as
//! Linux's tracing_map.c: `2 << map_bits` slots (a hash and the index of
//! an element) for at most `1 << map_bits` elements. A new key claims a
//! free slot with one compare-and-swap and takes the next free element;
//! when the elements run out the hit is counted as dropped.
//!
//! An element is a run of `u64` words: the key, one sum per value, one
//! slot per variable and a word of which variables are set, and the
//! task's `comm` when the trigger shows `.execname`.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use uapi::Errno;

/// Words of a saved `comm` (`TASK_COMM_LEN` bytes).
pub const COMM_WORDS: usize = 2;

/// One slot: the key's hash (0 = free) and its element's index plus one
/// (0 while the element is being filled).
struct Slot {
    hash: AtomicU32,
    elt: AtomicU32,
}

/// The shape of a map's elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapLayout {
    /// Key size in 64-bit words.
    pub key_words: usize,
    /// Number of sums (hitcount first).
    pub n_sums: usize,
    /// Number of variables (at most 64).
    pub n_vars: usize,
    /// Whether each element keeps the `comm` of the task that created it.
    pub comm: bool,
    /// Scratch words for actions: tracked values and saved fields.
    pub extra_words: usize,
}

impl MapLayout {
    fn words(&self) -> usize {
        self.key_words
            + self.n_sums
            + self.n_vars
            + usize::from(self.n_vars > 0)
            + if self.comm { COMM_WORDS } else { 0 }
            + self.extra_words
    }
}

/// Linux's `struct tracing_map`.
pub struct TracingMap {
    map_bits: u32,
    layout: MapLayout,
    elt_words: usize,
    slots: Vec<Slot>,
    elts: Vec<AtomicU64>,
    next_elt: AtomicUsize,
    hits: AtomicU64,
    drops: AtomicU64,
}

/// An element found or created by [`TracingMap::insert`].
#[derive(Clone, Copy)]
pub struct Elt<'a> {
    map: &'a TracingMap,
    idx: usize,
}

fn alloc_zeroed<T>(n: usize, zero: impl Fn() -> T) -> Result<Vec<T>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.extend((0..n).map(|_| zero()));
    Ok(v)
}

/// The multiplier of the key hash: 2^64 over the golden ratio, odd.
const HASH_MULT: u64 = 0x9e37_79b9_7f4a_7c15;

/// A hash of the key's words, never 0 (a free slot's mark), in the role
/// of Linux's `jhash`: a word at a time (one multiply and a shift each,
/// where a byte-wise hash takes dozens of steps for the usual one-word
/// key), its high half taken, where a multiplicative hash mixes best;
/// the slot index comes from its top bits.
#[inline]
fn hash_key(key: &[u64]) -> u32 {
    let mut h = HASH_MULT ^ key.len() as u64;
    for w in key {
        h = (h ^ w).wrapping_mul(HASH_MULT);
        h ^= h >> 29;
    }
    let h = (h.wrapping_mul(HASH_MULT) >> 32) as u32;
    if h == 0 {
        1
    } else {
        h
    }
}

impl TracingMap {
    /// Allocates a map for `1 << map_bits` elements (`ENOMEM` if the
    /// memory is not there; `EINVAL` for more than 64 variables).
    pub fn new(map_bits: u32, layout: MapLayout) -> Result<TracingMap, Errno> {
        if !(1..=20).contains(&map_bits) || layout.n_vars > 64 {
            return Err(Errno::EINVAL);
        }
        let max_elts = 1usize << map_bits;
        let elt_words = layout.words();
        let slots = alloc_zeroed(max_elts * 2, || Slot {
            hash: AtomicU32::new(0),
            elt: AtomicU32::new(0),
        })?;
        let elts = alloc_zeroed(max_elts * elt_words, || AtomicU64::new(0))?;
        Ok(TracingMap {
            map_bits,
            layout,
            elt_words,
            slots,
            elts,
            next_elt: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            drops: AtomicU64::new(0),
        })
    }

    /// `log2` of the element count (what `size=` asked for, rounded up).
    pub fn map_bits(&self) -> u32 {
        self.map_bits
    }

    /// The elements' shape.
    #[inline]
    pub fn layout(&self) -> MapLayout {
        self.layout
    }

    /// Hits that found or made their element.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Hits that found no room.
    pub fn drops(&self) -> u64 {
        self.drops.load(Ordering::Relaxed)
    }

    fn max_elts(&self) -> usize {
        1 << self.map_bits
    }

    #[inline]
    fn word(&self, elt: usize, i: usize) -> Option<&AtomicU64> {
        self.elts.get(elt * self.elt_words + i)
    }

    #[inline]
    fn key_matches(&self, elt: usize, key: &[u64]) -> bool {
        let base = elt * self.elt_words;
        self.elts
            .get(base..base + key.len())
            .is_some_and(|words| words.iter().zip(key).all(|(x, w)| x.load(Ordering::Relaxed) == *w))
    }

    /// Finds the element of `key` (its `key_words` words), or makes one
    /// (Linux's `tracing_map_insert`); the flag says whether it is new.
    /// None, counted as a drop, when the map is full. Safe on many CPUs at
    /// once; never allocates.
    pub fn insert(&self, key: &[u64]) -> Option<(Elt<'_>, bool)> {
        let hash = hash_key(key);
        let map_size = self.slots.len();
        let mut idx = (hash >> (31 - self.map_bits)) as usize;
        let mut tries = 0usize;
        loop {
            tries += 1;
            if tries > 2 * map_size {
                self.drops.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            idx &= map_size - 1;
            let slot = self.slots.get(idx)?;
            let test = slot.hash.load(Ordering::Acquire);
            if test == hash {
                let e = slot.elt.load(Ordering::Acquire);
                if e == 0 {
                    // Another CPU is filling this slot: wait for it.
                    core::hint::spin_loop();
                    continue;
                }
                if self.key_matches(e as usize - 1, key) {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Some((
                        Elt {
                            map: self,
                            idx: e as usize - 1,
                        },
                        false,
                    ));
                }
            } else if test == 0 {
                if slot
                    .hash
                    .compare_exchange(0, hash, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    continue;
                }
                let max = self.max_elts();
                let Ok(n) = self
                    .next_elt
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1))
                else {
                    self.drops.fetch_add(1, Ordering::Relaxed);
                    slot.hash.store(0, Ordering::Release);
                    return None;
                };
                for (i, w) in key.iter().enumerate() {
                    if let Some(x) = self.word(n, i) {
                        x.store(*w, Ordering::Relaxed);
                    }
                }
                slot.elt.store(n as u32 + 1, Ordering::Release);
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Some((Elt { map: self, idx: n }, true));
            }
            idx += 1;
        }
    }

    /// The element of `key` if there is one (`tracing_map_lookup`).
    pub fn lookup(&self, key: &[u64]) -> Option<Elt<'_>> {
        let hash = hash_key(key);
        let map_size = self.slots.len();
        let mut idx = (hash >> (31 - self.map_bits)) as usize;
        for _ in 0..map_size {
            idx &= map_size - 1;
            let slot = self.slots.get(idx)?;
            let test = slot.hash.load(Ordering::Acquire);
            if test == 0 {
                return None;
            }
            let e = slot.elt.load(Ordering::Acquire);
            if test == hash && e != 0 && self.key_matches(e as usize - 1, key) {
                return Some(Elt {
                    map: self,
                    idx: e as usize - 1,
                });
            }
            idx += 1;
        }
        None
    }

    /// Every filled element, in slot order.
    pub fn elts(&self) -> impl Iterator<Item = Elt<'_>> {
        self.slots.iter().filter_map(move |s| {
            let e = s.elt.load(Ordering::Acquire);
            (s.hash.load(Ordering::Acquire) != 0 && e != 0).then(|| Elt {
                map: self,
                idx: e as usize - 1,
            })
        })
    }

    /// The element of index `idx`, if it was made.
    pub fn elt_at(&self, idx: usize) -> Option<Elt<'_>> {
        (idx < self.next_elt.load(Ordering::Acquire).min(1 << self.map_bits)).then_some(Elt { map: self, idx })
    }

    /// Empties the map and zeroes its counts (`tracing_map_clear`). The
    /// caller keeps hits away meanwhile.
    pub fn clear(&self) {
        for s in &self.slots {
            s.elt.store(0, Ordering::Relaxed);
            s.hash.store(0, Ordering::Relaxed);
        }
        for w in &self.elts {
            w.store(0, Ordering::Relaxed);
        }
        self.next_elt.store(0, Ordering::Release);
        self.hits.store(0, Ordering::Relaxed);
        self.drops.store(0, Ordering::Relaxed);
    }
}

impl<'a> Elt<'a> {
    /// Word `i` of the key.
    pub fn key_word(&self, i: usize) -> u64 {
        self.map.word(self.idx, i).map_or(0, |w| w.load(Ordering::Relaxed))
    }

    /// The key's bytes from byte `offset`, `len` long (for strings).
    pub fn key_bytes(&self, offset: usize, len: usize, out: &mut Vec<u8>) {
        for i in offset..offset + len {
            let w = self.key_word(i / 8);
            out.push(w.to_le_bytes().get(i % 8).copied().unwrap_or(0));
        }
    }

    /// Adds `v` to sum `i` (`tracing_map_update_sum`).
    #[inline]
    pub fn add_sum(&self, i: usize, v: u64) {
        if i < self.map.layout.n_sums {
            if let Some(w) = self.map.word(self.idx, self.map.layout.key_words + i) {
                w.fetch_add(v, Ordering::Relaxed);
            }
        }
    }

    /// Sum `i`.
    pub fn sum(&self, i: usize) -> u64 {
        if i >= self.map.layout.n_sums {
            return 0;
        }
        self.map
            .word(self.idx, self.map.layout.key_words + i)
            .map_or(0, |w| w.load(Ordering::Relaxed))
    }

    fn var_base(&self) -> usize {
        self.map.layout.key_words + self.map.layout.n_sums
    }

    /// Sets variable `i` (`tracing_map_set_var`).
    pub fn set_var(&self, i: usize, v: u64) {
        let l = self.map.layout;
        if i >= l.n_vars {
            return;
        }
        if let Some(w) = self.map.word(self.idx, self.var_base() + i) {
            w.store(v, Ordering::Relaxed);
        }
        if let Some(set) = self.map.word(self.idx, self.var_base() + l.n_vars) {
            set.fetch_or(1 << i, Ordering::Release);
        }
    }

    /// Variable `i` if it was set (`tracing_map_read_var`).
    pub fn var(&self, i: usize) -> Option<u64> {
        let l = self.map.layout;
        if i >= l.n_vars {
            return None;
        }
        let set = self
            .map
            .word(self.idx, self.var_base() + l.n_vars)?
            .load(Ordering::Acquire);
        if set & (1 << i) == 0 {
            return None;
        }
        Some(self.map.word(self.idx, self.var_base() + i)?.load(Ordering::Relaxed))
    }

    fn comm_base(&self) -> Option<usize> {
        let l = self.map.layout;
        l.comm.then(|| self.var_base() + l.n_vars + usize::from(l.n_vars > 0))
    }

    /// Saves the creating task's `comm` (at most 16 bytes).
    pub fn set_comm(&self, comm: &[u8]) {
        let Some(base) = self.comm_base() else {
            return;
        };
        let mut b = [0u8; COMM_WORDS * 8];
        for (d, s) in b.iter_mut().zip(comm.iter().take_while(|c| **c != 0)) {
            *d = *s;
        }
        for (i, chunk) in b.chunks_exact(8).enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            if let Some(x) = self.map.word(self.idx, base + i) {
                x.store(u64::from_le_bytes(w), Ordering::Relaxed);
            }
        }
    }

    /// The saved `comm`'s bytes (up to the first NUL).
    pub fn comm(&self, out: &mut Vec<u8>) {
        let Some(base) = self.comm_base() else {
            return;
        };
        for i in 0..COMM_WORDS {
            let w = self
                .map
                .word(self.idx, base + i)
                .map_or(0, |x| x.load(Ordering::Relaxed));
            for c in w.to_le_bytes() {
                if c == 0 {
                    return;
                }
                out.push(c);
            }
        }
    }

    /// Variable `i` if it was set, unsetting it
    /// (`tracing_map_read_var_once`).
    pub fn take_var(&self, i: usize) -> Option<u64> {
        let l = self.map.layout;
        if i >= l.n_vars {
            return None;
        }
        let set = self
            .map
            .word(self.idx, self.var_base() + l.n_vars)?
            .fetch_and(!(1 << i), Ordering::AcqRel);
        if set & (1 << i) == 0 {
            return None;
        }
        Some(self.map.word(self.idx, self.var_base() + i)?.load(Ordering::Relaxed))
    }

    fn extra_word(&self, i: usize) -> Option<&'a AtomicU64> {
        let l = self.map.layout;
        if i >= l.extra_words {
            return None;
        }
        let base = self.var_base() + l.n_vars + usize::from(l.n_vars > 0) + if l.comm { COMM_WORDS } else { 0 };
        self.map.word(self.idx, base + i)
    }

    /// Scratch word `i` (0 until set).
    pub fn extra(&self, i: usize) -> u64 {
        self.extra_word(i).map_or(0, |w| w.load(Ordering::Relaxed))
    }

    /// Sets scratch word `i`.
    pub fn set_extra(&self, i: usize, v: u64) {
        if let Some(w) = self.extra_word(i) {
            w.store(v, Ordering::Relaxed);
        }
    }

    /// Its index among the map's elements (creation order).
    pub fn index(&self) -> usize {
        self.idx
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn layout() -> MapLayout {
        MapLayout {
            key_words: 1,
            n_sums: 2,
            n_vars: 1,
            comm: true,
            extra_words: 2,
        }
    }

    #[test]
    fn full_map_counts_drops_and_keeps_existing_keys() {
        let m = TracingMap::new(7, layout()).unwrap();
        for k in 0..128u64 {
            assert!(m.insert(&[k]).unwrap().1);
        }
        assert!(m.insert(&[1000]).is_none());
        assert_eq!(m.drops(), 1);
        let (e, new) = m.insert(&[5]).unwrap();
        assert!(!new);
        assert_eq!(e.key_word(0), 5);
        assert_eq!(m.hits(), 129);
        assert_eq!(m.elts().count(), 128);
        m.clear();
        assert_eq!((m.hits(), m.drops(), m.elts().count()), (0, 0, 0));
        assert!(m.insert(&[1000]).unwrap().1);
    }

    #[test]
    fn vars_are_unset_until_set_and_comm_is_kept() {
        let m = TracingMap::new(7, layout()).unwrap();
        let (e, _) = m.insert(&[1]).unwrap();
        assert_eq!(e.var(0), None);
        e.set_var(0, 42);
        assert_eq!(e.var(0), Some(42));
        e.set_comm(b"busybox\0junk");
        let mut c = Vec::new();
        e.comm(&mut c);
        assert_eq!(c, b"busybox");
        assert_eq!(m.lookup(&[1]).map(|e| e.var(0)), Some(Some(42)));
        assert!(m.lookup(&[2]).is_none());
    }

    #[test]
    fn concurrent_inserts_count_every_hit_once_as_a_hit_or_a_drop() {
        let m = std::sync::Arc::new(TracingMap::new(7, layout()).unwrap());
        let threads: std::vec::Vec<_> = (0..4)
            .map(|t| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for i in 0..2000u64 {
                        let k = (i * 7 + t) % 100;
                        if let Some((e, _)) = m.insert(&[k]) {
                            e.add_sum(0, 1);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // A hit finding its key's slot still being filled waits a bounded
        // number of tries and is then dropped, as Linux's (a filler the
        // host preempts can cause that): every hit is counted once, as a
        // hit or as a drop, and none is lost.
        let total: u64 = m.elts().map(|e| e.sum(0)).sum();
        assert_eq!(total, m.hits());
        assert_eq!(m.hits() + m.drops(), 8000);
        assert!(m.drops() < 8000 / 2, "{} drops", m.drops());
        assert_eq!(m.elts().count(), 100);
    }

    #[test]
    fn sequential_keys_spread_over_the_slots() {
        // pids and syscall numbers come in runs: each key of a run should
        // start its probe at a slot of its own, mostly.
        for bits in [7u32, 11] {
            let n = 1u64 << bits;
            for words in [1usize, 2] {
                let mut seen = std::collections::BTreeSet::new();
                for k in 0..n {
                    let key = [k, 0];
                    seen.insert(hash_key(&key[..words]) >> (31 - bits));
                }
                assert!(
                    seen.len() as u64 >= n * 2 / 3,
                    "{bits} bits, {words} words: {} of {n}",
                    seen.len()
                );
            }
        }
        // A key differing in its second word only hashes elsewhere.
        assert_ne!(hash_key(&[1, 2]), hash_key(&[1, 3]));
        assert_ne!(hash_key(&[0]), 0);
    }

    proptest! {
        #[test]
        fn map_agrees_with_a_btreemap(keys in proptest::collection::vec((0u64..300, 0u64..1000), 0..600)) {
            let m = TracingMap::new(7, MapLayout { key_words: 2, n_sums: 1, n_vars: 0, comm: false, extra_words: 0 }).unwrap();
            let mut model: BTreeMap<u64, u64> = BTreeMap::new();
            let mut drops = 0u64;
            for (k, v) in &keys {
                match m.insert(&[*k, !*k]) {
                    Some((e, _)) => { e.add_sum(0, *v); *model.entry(*k).or_default() += v; }
                    None => { drops += 1; prop_assert!(model.len() == 128 && !model.contains_key(k)); }
                }
            }
            let got: BTreeMap<u64, u64> = m.elts().map(|e| (e.key_word(0), e.sum(0))).collect();
            prop_assert_eq!(got, model);
            prop_assert_eq!(m.drops(), drops);
        }
    }
}
