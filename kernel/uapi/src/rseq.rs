//! Restartable sequences (include/uapi/linux/rseq.h): the per-thread
//! `struct rseq` a thread registers, the `struct rseq_cs` describing a
//! critical section, and the checks of Linux 6.12's `sys_rseq` and
//! `rseq_get_rseq_cs` (kernel/rseq.c), kept here so that they are tested on
//! the host.

use crate::Errno;

/// `RSEQ_FLAG_UNREGISTER`: the flag of rseq(2) that unregisters.
pub const RSEQ_FLAG_UNREGISTER: i32 = 1;
/// `cpu_id` before registration and after unregistration
/// (`RSEQ_CPU_ID_UNINITIALIZED`).
pub const RSEQ_CPU_ID_UNINITIALIZED: u32 = u32::MAX;
/// The size of the original `struct rseq` (`ORIG_RSEQ_SIZE`), also its
/// alignment when registered with that length.
pub const ORIG_RSEQ_SIZE: u32 = 32;
/// `offsetof(struct rseq, end)`: the fields this kernel fills
/// (`AT_RSEQ_FEATURE_SIZE`).
pub const RSEQ_FEATURE_SIZE: u32 = 28;
/// `__alignof__(struct rseq)` (`AT_RSEQ_ALIGN`).
pub const RSEQ_ALIGN: u64 = 32;
/// The deprecated `RSEQ_CS_FLAG_NO_RESTART_ON_{PREEMPT,SIGNAL,MIGRATE}`
/// bits: Linux 6.12 refuses any flag in `rseq_cs.flags` or `rseq.flags`.
pub const RSEQ_CS_NO_RESTART_FLAGS: u32 = 0x7;

/// Offsets of `struct rseq`'s fields in user memory.
pub mod offset {
    /// `u32 cpu_id_start`.
    pub const CPU_ID_START: u64 = 0;
    /// `u32 cpu_id`.
    pub const CPU_ID: u64 = 4;
    /// `u64 rseq_cs`: the user address of the current `struct rseq_cs`.
    pub const RSEQ_CS: u64 = 8;
    /// `u32 flags`.
    pub const FLAGS: u64 = 16;
    /// `u32 node_id`.
    pub const NODE_ID: u64 = 20;
    /// `u32 mm_cid`.
    pub const MM_CID: u64 = 24;
}

/// The fields the kernel writes on return to user space: `cpu_id_start`,
/// `cpu_id`, then (at [`offset::NODE_ID`]) `node_id` and `mm_cid`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RseqCpuIds {
    /// `cpu_id_start` and `cpu_id`.
    pub cpu_id: u32,
    /// `node_id`.
    pub node_id: u32,
    /// `mm_cid`: the concurrency ID within the address space.
    pub mm_cid: u32,
}

impl RseqCpuIds {
    /// What unregistration leaves (`rseq_reset_rseq_cpu_node_id`):
    /// `cpu_id_start` 0, `cpu_id` uninitialised, the rest 0. Returns the
    /// bytes at offsets 0..8 and 20..28.
    pub fn reset_bytes() -> ([u8; 8], [u8; 8]) {
        let mut a = [0u8; 8];
        a[4..].copy_from_slice(&RSEQ_CPU_ID_UNINITIALIZED.to_le_bytes());
        (a, [0u8; 8])
    }

    /// The bytes at offsets 0..8 (`cpu_id_start`, `cpu_id`) and 20..28
    /// (`node_id`, `mm_cid`).
    pub fn to_bytes(&self) -> ([u8; 8], [u8; 8]) {
        let mut a = [0u8; 8];
        a[..4].copy_from_slice(&self.cpu_id.to_le_bytes());
        a[4..].copy_from_slice(&self.cpu_id.to_le_bytes());
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&self.node_id.to_le_bytes());
        b[4..].copy_from_slice(&self.mm_cid.to_le_bytes());
        (a, b)
    }
}

/// `struct rseq_cs`: a critical section `[start_ip, start_ip +
/// post_commit_offset)` and where to go when it is interrupted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RseqCs {
    /// `u32 version` (0).
    pub version: u32,
    /// `u32 flags`.
    pub flags: u32,
    /// `u64 start_ip`.
    pub start_ip: u64,
    /// `u64 post_commit_offset`.
    pub post_commit_offset: u64,
    /// `u64 abort_ip`: preceded in memory by the registered signature.
    pub abort_ip: u64,
}

impl RseqCs {
    /// Its size in user memory.
    pub const SIZE: usize = 32;

    /// Reads the bytes a user program wrote.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> RseqCs {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| u64::from(u32_at(i)) | (u64::from(u32_at(i + 4)) << 32);
        RseqCs {
            version: u32_at(0),
            flags: u32_at(4),
            start_ip: u64_at(8),
            post_commit_offset: u64_at(16),
            abort_ip: u64_at(24),
        }
    }

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[..4].copy_from_slice(&self.version.to_le_bytes());
        b[4..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..16].copy_from_slice(&self.start_ip.to_le_bytes());
        b[16..24].copy_from_slice(&self.post_commit_offset.to_le_bytes());
        b[24..].copy_from_slice(&self.abort_ip.to_le_bytes());
        b
    }

    /// Linux's checks of a descriptor (`rseq_get_rseq_cs`) against a user
    /// address space ending at `task_size`: EINVAL for an address outside
    /// it, a version other than 0, a range that wraps, or an abort address
    /// inside the section. The signature before `abort_ip` is checked by
    /// the caller, which reads user memory.
    pub fn check(&self, task_size: u64) -> Result<(), Errno> {
        let end = self.start_ip.checked_add(self.post_commit_offset);
        if self.start_ip >= task_size
            || end.is_none_or(|e| e >= task_size)
            || self.abort_ip >= task_size
            || self.version > 0
        {
            return Err(Errno::EINVAL);
        }
        if self.abort_ip.wrapping_sub(self.start_ip) < self.post_commit_offset {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// Whether `ip` is inside the section (Linux's `in_rseq_cs`).
    pub fn contains(&self, ip: u64) -> bool {
        ip.wrapping_sub(self.start_ip) < self.post_commit_offset
    }
}

/// A thread's registration: the area's user address, its length and the
/// signature abort handlers must carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    /// User address of the `struct rseq`.
    pub addr: u64,
    /// `rseq_len`.
    pub len: u32,
    /// `sig`.
    pub sig: u32,
}

/// What an rseq(2) call that passed [`check_rseq`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RseqOp {
    /// Register this area (its `rseq_cs` must then be cleared).
    Register(Registration),
    /// Unregister the current one.
    Unregister,
}

/// rseq(2)'s argument checks, as Linux 6.12's `sys_rseq`: `current` is the
/// thread's registration. EINVAL for unknown flags, a different area or
/// length than the one registered, a length below [`ORIG_RSEQ_SIZE`] or a
/// misaligned area; EPERM for another signature; EBUSY when that area is
/// already registered. The caller checks `access_ok` (EFAULT).
pub fn check_rseq(current: Option<Registration>, addr: u64, len: u32, flags: i32, sig: u32) -> Result<RseqOp, Errno> {
    if flags & RSEQ_FLAG_UNREGISTER != 0 {
        if flags & !RSEQ_FLAG_UNREGISTER != 0 {
            return Err(Errno::EINVAL);
        }
        let cur = current.filter(|c| c.addr == addr).ok_or(Errno::EINVAL)?;
        if len != cur.len {
            return Err(Errno::EINVAL);
        }
        if sig != cur.sig {
            return Err(Errno::EPERM);
        }
        return Ok(RseqOp::Unregister);
    }
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    if let Some(cur) = current {
        if cur.addr != addr || cur.len != len {
            return Err(Errno::EINVAL);
        }
        if cur.sig != sig {
            return Err(Errno::EPERM);
        }
        return Err(Errno::EBUSY);
    }
    let misaligned = |a: u64| !addr.is_multiple_of(a);
    if len < ORIG_RSEQ_SIZE
        || (len == ORIG_RSEQ_SIZE && misaligned(u64::from(ORIG_RSEQ_SIZE)))
        || (len != ORIG_RSEQ_SIZE && (misaligned(RSEQ_ALIGN) || len < RSEQ_FEATURE_SIZE))
    {
        return Err(Errno::EINVAL);
    }
    Ok(RseqOp::Register(Registration { addr, len, sig }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SIG: u32 = 0xd428_bc00;

    fn reg(addr: u64) -> Registration {
        Registration {
            addr,
            len: 32,
            sig: SIG,
        }
    }

    #[test]
    fn first_registration_needs_32_bytes_aligned_to_32() {
        assert_eq!(check_rseq(None, 0x1000, 32, 0, SIG), Ok(RseqOp::Register(reg(0x1000))));
        assert_eq!(check_rseq(None, 0x1010, 32, 0, SIG), Err(Errno::EINVAL));
        assert_eq!(check_rseq(None, 0x1000, 28, 0, SIG), Err(Errno::EINVAL));
        assert_eq!(check_rseq(None, 0x1000, 64, 0, SIG).map(|_| ()), Ok(()));
        assert_eq!(check_rseq(None, 0x1000, 32, 2, SIG), Err(Errno::EINVAL));
    }

    #[test]
    fn registering_again_is_ebusy_eperm_or_einval_as_linux() {
        let cur = Some(reg(0x1000));
        assert_eq!(check_rseq(cur, 0x1000, 32, 0, SIG), Err(Errno::EBUSY));
        assert_eq!(check_rseq(cur, 0x1000, 32, 0, SIG + 1), Err(Errno::EPERM));
        assert_eq!(check_rseq(cur, 0x2000, 32, 0, SIG), Err(Errno::EINVAL));
        assert_eq!(check_rseq(cur, 0x1000, 64, 0, SIG), Err(Errno::EINVAL));
    }

    #[test]
    fn unregistration_must_name_the_registered_area_length_and_signature() {
        let cur = Some(reg(0x1000));
        assert_eq!(check_rseq(cur, 0x1000, 32, 1, SIG), Ok(RseqOp::Unregister));
        assert_eq!(check_rseq(cur, 0x1000, 32, 1, SIG + 1), Err(Errno::EPERM));
        assert_eq!(check_rseq(cur, 0x1000, 64, 1, SIG), Err(Errno::EINVAL));
        assert_eq!(check_rseq(cur, 0x2000, 32, 1, SIG), Err(Errno::EINVAL));
        assert_eq!(check_rseq(cur, 0x1000, 32, 3, SIG), Err(Errno::EINVAL));
        assert_eq!(check_rseq(None, 0x1000, 32, 1, SIG), Err(Errno::EINVAL));
    }

    #[test]
    fn a_critical_section_is_checked_as_rseq_get_rseq_cs() {
        const TASK_SIZE: u64 = 1 << 48;
        let cs = RseqCs {
            version: 0,
            flags: 0,
            start_ip: 0x400000,
            post_commit_offset: 0x20,
            abort_ip: 0x400040,
        };
        assert_eq!(cs.check(TASK_SIZE), Ok(()));
        assert!(cs.contains(0x400000) && cs.contains(0x40001f) && !cs.contains(0x400020) && !cs.contains(0x3ffffc));
        assert_eq!(RseqCs { version: 1, ..cs }.check(TASK_SIZE), Err(Errno::EINVAL));
        assert_eq!(
            RseqCs {
                abort_ip: 0x400010,
                ..cs
            }
            .check(TASK_SIZE),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            RseqCs {
                abort_ip: TASK_SIZE,
                ..cs
            }
            .check(TASK_SIZE),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            RseqCs {
                post_commit_offset: u64::MAX,
                ..cs
            }
            .check(TASK_SIZE),
            Err(Errno::EINVAL)
        );
    }

    proptest! {
        #[test]
        fn rseq_cs_bytes_round_trip(v: u32, f: u32, s: u64, p: u64, a: u64) {
            let cs = RseqCs { version: v, flags: f, start_ip: s, post_commit_offset: p, abort_ip: a };
            prop_assert_eq!(RseqCs::from_bytes(&cs.to_bytes()), cs);
        }

        #[test]
        fn an_accepted_section_never_contains_its_abort_address(s in 0u64..1 << 48, p: u64, a in 0u64..1 << 48) {
            let cs = RseqCs { version: 0, flags: 0, start_ip: s, post_commit_offset: p, abort_ip: a };
            if cs.check(1 << 48).is_ok() {
                prop_assert!(!cs.contains(a));
            }
        }
    }
}
