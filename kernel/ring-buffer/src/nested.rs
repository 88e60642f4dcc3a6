//! Events recorded by a writer that nests inside another on its CPU (an
//! interrupt's event while a writer with interrupts on is between reserve
//! and commit): kept in a few per-CPU slots with the time they happened,
//! and moved into the buffer by the writer they interrupted, after its own
//! event, so that they are recorded (as Linux's ring buffer nests per
//! context) rather than dropped. Only the owning CPU touches its slots;
//! the only concurrency is an interrupt on that CPU, so the slot states
//! are per-CPU atomics and nothing spins or allocates.

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Slots per CPU: interrupts that record while one write is open.
pub const SLOTS: usize = 4;
/// The largest entry (common fields included) a slot holds; a larger
/// nested event is dropped and counted.
pub const SLOT_BYTES: usize = 256;
const WORDS: usize = SLOT_BYTES / 8;

const FREE: u8 = 0;
const FILLING: u8 = 1;
const READY: u8 = 2;

struct Slot {
    state: AtomicU8,
    /// Claim order: the slots are flushed in it.
    seq: AtomicU32,
    len: AtomicU32,
    ts: AtomicU64,
    /// The entry, in words (atomics: no unsafe for a buffer an interrupt
    /// writes and its CPU reads).
    data: [AtomicU64; WORDS],
}

/// One CPU's deferred events.
pub struct Deferred {
    slots: [Slot; SLOTS],
    /// Slots READY, checked by every writer (one load when zero).
    pending: AtomicU32,
    next_seq: AtomicU32,
}

impl Deferred {
    /// No event waiting.
    pub const fn new() -> Deferred {
        Deferred {
            slots: [const {
                Slot {
                    state: AtomicU8::new(FREE),
                    seq: AtomicU32::new(0),
                    len: AtomicU32::new(0),
                    ts: AtomicU64::new(0),
                    data: [const { AtomicU64::new(0) }; WORDS],
                }
            }; SLOTS],
            pending: AtomicU32::new(0),
            next_seq: AtomicU32::new(0),
        }
    }

    /// Whether events wait to be moved into the buffer.
    #[inline(always)]
    pub fn pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed) != 0
    }

    /// Keeps the entry `entry` (whole, common fields included) stamped
    /// `ts`. False when it is too large or every slot is taken.
    pub fn defer(&self, ts: u64, entry: &[u8]) -> bool {
        if entry.len() > SLOT_BYTES {
            return false;
        }
        // A claim is one compare-exchange: an interrupt of this deferral
        // takes another slot.
        let Some(slot) = self.slots.iter().find(|s| {
            s.state
                .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        }) else {
            return false;
        };
        slot.seq
            .store(self.next_seq.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        slot.len.store(entry.len() as u32, Ordering::Relaxed);
        slot.ts.store(ts, Ordering::Relaxed);
        for (w, chunk) in slot.data.iter().zip(entry.chunks(8)) {
            let mut b = [0u8; 8];
            if let Some(d) = b.get_mut(..chunk.len()) {
                d.copy_from_slice(chunk);
            }
            w.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        slot.state.store(READY, Ordering::Release);
        self.pending.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Takes the oldest ready event: copies it into `out` and calls `put`
    /// with its time and entry, then frees its slot. False when none is
    /// ready.
    pub fn take_oldest(&self, out: &mut [u8; SLOT_BYTES], put: impl FnOnce(u64, &[u8])) -> bool {
        let mut best: Option<&Slot> = None;
        for s in &self.slots {
            if s.state.load(Ordering::Acquire) != READY {
                continue;
            }
            // Wrapping order: the slots' sequence numbers are within SLOTS
            // of each other.
            let older = |b: &Slot| {
                (s.seq
                    .load(Ordering::Relaxed)
                    .wrapping_sub(b.seq.load(Ordering::Relaxed)) as i32)
                    < 0
            };
            if best.is_none_or(older) {
                best = Some(s);
            }
        }
        let Some(s) = best else {
            return false;
        };
        let len = (s.len.load(Ordering::Relaxed) as usize).min(SLOT_BYTES);
        for (chunk, w) in out.chunks_mut(8).zip(&s.data) {
            chunk.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        let ts = s.ts.load(Ordering::Relaxed);
        put(ts, out.get(..len).unwrap_or_default());
        s.state.store(FREE, Ordering::Release);
        self.pending.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Drops every waiting event (its CPU has no buffer to move them into).
    /// Only the owning CPU calls it, as every other method.
    pub fn clear(&self) {
        let mut scratch = [0u8; SLOT_BYTES];
        while self.take_oldest(&mut scratch, |_, _| {}) {}
    }
}

impl Default for Deferred {
    fn default() -> Self {
        Deferred::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn drain(d: &Deferred) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut scratch = [0u8; SLOT_BYTES];
        while d.take_oldest(&mut scratch, |ts, e| out.push((ts, e.to_vec()))) {}
        out
    }

    #[test]
    fn deferred_events_come_back_in_the_order_they_happened_with_their_time() {
        let d = Deferred::new();
        assert!(!d.pending());
        assert!(d.defer(10, b"first event"));
        assert!(d.defer(20, &[7u8; 13]));
        assert!(d.pending());
        let got = drain(&d);
        assert_eq!(got, [(10, b"first event".to_vec()), (20, [7u8; 13].to_vec())]);
        assert!(!d.pending());
    }

    #[test]
    fn a_slot_freed_in_between_keeps_the_claim_order() {
        let d = Deferred::new();
        assert!(d.defer(1, b"a"));
        assert!(d.defer(2, b"b"));
        let mut scratch = [0u8; SLOT_BYTES];
        let mut first = Vec::new();
        assert!(d.take_oldest(&mut scratch, |_, e| first.extend_from_slice(e)));
        assert_eq!(first, b"a");
        // "c" takes the freed first slot but is newer than "b".
        assert!(d.defer(3, b"c"));
        assert_eq!(drain(&d), [(2, b"b".to_vec()), (3, b"c".to_vec())]);
    }

    #[test]
    fn full_slots_or_an_oversized_event_are_refused() {
        let d = Deferred::new();
        assert!(!d.defer(0, &[0u8; SLOT_BYTES + 1]));
        assert!(d.defer(0, &[1u8; SLOT_BYTES]));
        for i in 1..SLOTS {
            assert!(d.defer(i as u64, b"x"));
        }
        assert!(!d.defer(99, b"y"));
        assert_eq!(drain(&d).len(), SLOTS);
        assert!(d.defer(100, b"z"));
        d.clear();
        assert!(!d.pending());
        assert!(drain(&d).is_empty());
    }

    #[test]
    fn sequence_numbers_wrapping_keep_the_order() {
        let d = Deferred::new();
        d.next_seq.store(u32::MAX, Ordering::Relaxed);
        assert!(d.defer(1, b"old"));
        assert!(d.defer(2, b"new"));
        assert_eq!(drain(&d), [(1, b"old".to_vec()), (2, b"new".to_vec())]);
    }
}
