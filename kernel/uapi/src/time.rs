//! Time structures of the arm64 ABI (include/uapi/linux/time_types.h and
//! time.h): 64-bit `struct timespec`, `struct timeval`, `struct itimerval`,
//! with their exact little-endian images.

pub mod clockid;
pub use clockid::*;

/// Nanoseconds per second.
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// `struct timespec` (`struct __kernel_timespec` on arm64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timespec {
    /// Seconds.
    pub tv_sec: i64,
    /// Nanoseconds.
    pub tv_nsec: i64,
}

impl Timespec {
    /// Its size in user memory.
    pub const SIZE: usize = 16;

    /// The time `ns` nanoseconds after zero.
    pub const fn from_ns(ns: u64) -> Timespec {
        Timespec {
            tv_sec: (ns / NSEC_PER_SEC) as i64,
            tv_nsec: (ns % NSEC_PER_SEC) as i64,
        }
    }

    /// Nanoseconds, saturating; `None` unless the value is valid
    /// (`tv_sec >= 0`, `0 <= tv_nsec < 1e9`), as Linux's `timespec64_valid`.
    pub fn to_ns(self) -> Option<u64> {
        if self.tv_sec < 0 || !(0..NSEC_PER_SEC as i64).contains(&self.tv_nsec) {
            return None;
        }
        Some(
            (self.tv_sec as u64)
                .saturating_mul(NSEC_PER_SEC)
                .saturating_add(self.tv_nsec as u64),
        )
    }

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        pair_to_bytes(self.tv_sec, self.tv_nsec)
    }

    /// Reads the bytes a user program wrote.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Timespec {
        let (tv_sec, tv_nsec) = pair_from_bytes(b);
        Timespec { tv_sec, tv_nsec }
    }
}

/// `struct timeval` (`struct __kernel_old_timeval`, 64-bit on arm64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeval {
    /// Seconds.
    pub tv_sec: i64,
    /// Microseconds.
    pub tv_usec: i64,
}

impl Timeval {
    /// Its size in user memory.
    pub const SIZE: usize = 16;

    /// The time `ns` nanoseconds after zero, truncated to microseconds.
    pub const fn from_ns(ns: u64) -> Timeval {
        Timeval {
            tv_sec: (ns / NSEC_PER_SEC) as i64,
            tv_usec: (ns % NSEC_PER_SEC / 1000) as i64,
        }
    }

    /// Whether the value is valid (`tv_sec >= 0`, `0 <= tv_usec < 1e6`).
    pub fn is_valid(self) -> bool {
        self.tv_sec >= 0 && (0..1_000_000).contains(&self.tv_usec)
    }

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        pair_to_bytes(self.tv_sec, self.tv_usec)
    }

    /// Reads the bytes a user program wrote.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Timeval {
        let (tv_sec, tv_usec) = pair_from_bytes(b);
        Timeval { tv_sec, tv_usec }
    }
}

/// `struct itimerval`: the reload interval, then the current value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Itimerval {
    /// The reload value (0: one-shot).
    pub it_interval: Timeval,
    /// Time to the next expiry (0: disarmed).
    pub it_value: Timeval,
}

impl Itimerval {
    /// Its size in user memory.
    pub const SIZE: usize = 32;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[..16].copy_from_slice(&self.it_interval.to_bytes());
        b[16..].copy_from_slice(&self.it_value.to_bytes());
        b
    }

    /// Reads the bytes a user program wrote.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Itimerval {
        let mut i = [0u8; 16];
        let mut v = [0u8; 16];
        i.copy_from_slice(&b[..16]);
        v.copy_from_slice(&b[16..]);
        Itimerval {
            it_interval: Timeval::from_bytes(&i),
            it_value: Timeval::from_bytes(&v),
        }
    }
}

fn pair_to_bytes(a: i64, b: i64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&a.to_le_bytes());
    out[8..].copy_from_slice(&b.to_le_bytes());
    out
}

fn pair_from_bytes(b: &[u8; 16]) -> (i64, i64) {
    let mut lo = [0u8; 8];
    let mut hi = [0u8; 8];
    lo.copy_from_slice(&b[..8]);
    hi.copy_from_slice(&b[8..]);
    (i64::from_le_bytes(lo), i64::from_le_bytes(hi))
}

/// `struct tms` (include/uapi/linux/times.h): process times in clock ticks
/// (`clock_t`, a `long` on arm64), what `times(2)` fills in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tms {
    /// User time of the calling process.
    pub tms_utime: i64,
    /// System time of the calling process.
    pub tms_stime: i64,
    /// User time of its waited-for children.
    pub tms_cutime: i64,
    /// System time of its waited-for children.
    pub tms_cstime: i64,
}

impl Tms {
    /// Its size in user memory.
    pub const SIZE: usize = 32;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        for (i, v) in [self.tms_utime, self.tms_stime, self.tms_cutime, self.tms_cstime]
            .into_iter()
            .enumerate()
        {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespec_image_and_validity() {
        let t = Timespec::from_ns(3_000_000_007);
        assert_eq!(t, Timespec { tv_sec: 3, tv_nsec: 7 });
        let b = t.to_bytes();
        assert_eq!((b[0], b[8]), (3, 7));
        assert_eq!(Timespec::from_bytes(&b), t);
        assert_eq!(t.to_ns(), Some(3_000_000_007));
        assert_eq!(Timespec { tv_sec: -1, tv_nsec: 0 }.to_ns(), None);
        assert_eq!(
            Timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000_000
            }
            .to_ns(),
            None
        );
        assert_eq!(
            Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0
            }
            .to_ns(),
            Some(u64::MAX)
        );
    }

    #[test]
    fn timeval_and_itimerval_images() {
        assert_eq!(
            Timeval::from_ns(2_000_123_999),
            Timeval {
                tv_sec: 2,
                tv_usec: 123
            }
        );
        let it = Itimerval {
            it_interval: Timeval { tv_sec: 1, tv_usec: 2 },
            it_value: Timeval { tv_sec: 3, tv_usec: 4 },
        };
        let b = it.to_bytes();
        assert_eq!((b[0], b[8], b[16], b[24]), (1, 2, 3, 4));
        assert_eq!(Itimerval::from_bytes(&b), it);
        assert!(!Timeval {
            tv_sec: 0,
            tv_usec: 1_000_000
        }
        .is_valid());
        assert!(Timeval {
            tv_sec: 0,
            tv_usec: 999_999
        }
        .is_valid());
    }

    #[test]
    fn tms_is_four_longs_in_linux_order() {
        let t = Tms {
            tms_utime: 1,
            tms_stime: 2,
            tms_cutime: 3,
            tms_cstime: -4,
        };
        let b = t.to_bytes();
        assert_eq!(&b[16..24], &3i64.to_le_bytes());
        assert_eq!(&b[24..], &(-4i64).to_le_bytes());
    }
}
