//! getrandom(2) flags (include/uapi/linux/random.h).

/// Fail with EAGAIN rather than block until the pool is ready.
pub const GRND_NONBLOCK: u64 = 0x0001;
/// Draw from the blocking pool (now the same pool).
pub const GRND_RANDOM: u64 = 0x0002;
/// Never block, even before the pool is ready; exclusive with GRND_RANDOM.
pub const GRND_INSECURE: u64 = 0x0004;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_distinct_bits() {
        assert_eq!(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE, 7);
    }
}
