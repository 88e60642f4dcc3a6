//! Kernel randomness for AT_RANDOM and getrandom: a xorshift generator
//! seeded from the counter. Not cryptographic; nothing here needs it to be.

use core::sync::atomic::{AtomicU64, Ordering};

static STATE: AtomicU64 = AtomicU64::new(0);

fn next() -> u64 {
    let mut s = STATE.load(Ordering::Relaxed);
    if s == 0 {
        s = arch::timer::counter() | 1;
    }
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    STATE.store(s ^ arch::timer::counter().rotate_left(29), Ordering::Relaxed);
    s
}

/// Fills `buf` with pseudo-random bytes.
pub fn fill(buf: &mut [u8]) {
    for chunk in buf.chunks_mut(8) {
        let v = next().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}
