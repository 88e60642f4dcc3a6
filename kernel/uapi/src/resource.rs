//! Resource limits (include/uapi/linux/resource.h).

/// `getrusage`: the calling process (all its threads).
pub const RUSAGE_SELF: i32 = 0;
/// `getrusage`: its reaped children.
pub const RUSAGE_CHILDREN: i32 = -1;
/// `getrusage`: the calling thread.
pub const RUSAGE_THREAD: i32 = 1;

/// The resources of `getrlimit`/`setrlimit`/`prlimit64`
/// (include/uapi/asm-generic/resource.h; arm64 overrides none).
pub mod rlimit {
    /// CPU time in seconds.
    pub const RLIMIT_CPU: u32 = 0;
    /// Largest file size.
    pub const RLIMIT_FSIZE: u32 = 1;
    /// Largest data segment.
    pub const RLIMIT_DATA: u32 = 2;
    /// Largest stack.
    pub const RLIMIT_STACK: u32 = 3;
    /// Largest core file.
    pub const RLIMIT_CORE: u32 = 4;
    /// Largest resident set.
    pub const RLIMIT_RSS: u32 = 5;
    /// Most processes of the user.
    pub const RLIMIT_NPROC: u32 = 6;
    /// Most open files.
    pub const RLIMIT_NOFILE: u32 = 7;
    /// Most locked-in memory.
    pub const RLIMIT_MEMLOCK: u32 = 8;
    /// Largest address space.
    pub const RLIMIT_AS: u32 = 9;
    /// Most file locks.
    pub const RLIMIT_LOCKS: u32 = 10;
    /// Most pending signals of the user.
    pub const RLIMIT_SIGPENDING: u32 = 11;
    /// Most bytes in POSIX message queues.
    pub const RLIMIT_MSGQUEUE: u32 = 12;
    /// Ceiling of the nice value.
    pub const RLIMIT_NICE: u32 = 13;
    /// Ceiling of the real-time priority.
    pub const RLIMIT_RTPRIO: u32 = 14;
    /// Real-time CPU time without a blocking call, in microseconds.
    pub const RLIMIT_RTTIME: u32 = 15;
    /// How many resources there are.
    pub const RLIM_NLIMITS: u32 = 16;
}
pub use rlimit::*;

/// `getpriority`/`setpriority` `which`: a process.
pub const PRIO_PROCESS: i32 = 0;
/// `getpriority`/`setpriority` `which`: a process group.
pub const PRIO_PGRP: i32 = 1;
/// `getpriority`/`setpriority` `which`: a user's processes.
pub const PRIO_USER: i32 = 2;

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
    fn rlimit_resources_are_linuxs() {
        // include/uapi/asm-generic/resource.h of Linux 6.12.
        assert_eq!((RLIMIT_CPU, RLIMIT_STACK, RLIMIT_NPROC, RLIMIT_NOFILE), (0, 3, 6, 7));
        assert_eq!(
            (RLIMIT_AS, RLIMIT_SIGPENDING, RLIMIT_RTTIME, RLIM_NLIMITS),
            (9, 11, 15, 16)
        );
    }

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
