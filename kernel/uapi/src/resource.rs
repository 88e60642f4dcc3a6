//! Resource limits (include/uapi/linux/resource.h).

/// `getrusage`: the calling process (all its threads).
pub const RUSAGE_SELF: i32 = 0;
/// `getrusage`: its reaped children.
pub const RUSAGE_CHILDREN: i32 = -1;
/// `getrusage`: the calling thread.
pub const RUSAGE_THREAD: i32 = 1;

/// No limit.
pub const RLIM_INFINITY: u64 = u64::MAX;

/// `struct rlimit` (and `struct rlimit64`, the same on arm64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rlimit {
    /// The soft limit, which the kernel enforces.
    pub rlim_cur: u64,
    /// The hard limit, the ceiling for the soft one.
    pub rlim_max: u64,
}

impl Rlimit {
    /// Its size in user memory.
    pub const SIZE: usize = 16;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[..8].copy_from_slice(&self.rlim_cur.to_le_bytes());
        b[8..].copy_from_slice(&self.rlim_max.to_le_bytes());
        b
    }

    /// Reads the bytes a user program wrote.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Rlimit {
        let mut cur = [0u8; 8];
        let mut max = [0u8; 8];
        cur.copy_from_slice(&b[..8]);
        max.copy_from_slice(&b[8..]);
        Rlimit {
            rlim_cur: u64::from_le_bytes(cur),
            rlim_max: u64::from_le_bytes(max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlimit_image_round_trips() {
        let r = Rlimit {
            rlim_cur: 1024,
            rlim_max: RLIM_INFINITY,
        };
        let b = r.to_bytes();
        assert_eq!((b[1], b[8], b[15]), (4, 0xff, 0xff));
        assert_eq!(Rlimit::from_bytes(&b), r);
    }
}
