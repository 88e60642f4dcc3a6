//! `struct iovec` (include/uapi/linux/uio.h) and the limit on how many a
//! vectored call takes.

/// Most iovecs one call accepts (Linux's `UIO_MAXIOV`).
pub const UIO_MAXIOV: usize = 1024;

/// `struct iovec`: a user buffer's address and length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoVec {
    /// The buffer's user address (`iov_base`).
    pub base: u64,
    /// Its length in bytes (`iov_len`).
    pub len: u64,
}

impl IoVec {
    /// Its size in user memory.
    pub const SIZE: usize = 16;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[..8].copy_from_slice(&self.base.to_le_bytes());
        b[8..].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Reads the bytes a user program wrote. Inlined, so that a caller's
    /// aligned buffer is read with two loads rather than byte by byte (the
    /// kernel is built for strict alignment).
    #[inline(always)]
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> IoVec {
        let word = |o: usize| {
            u64::from_le_bytes([
                b[o],
                b[o + 1],
                b[o + 2],
                b[o + 3],
                b[o + 4],
                b[o + 5],
                b[o + 6],
                b[o + 7],
            ])
        };
        IoVec {
            base: word(0),
            len: word(8),
        }
    }
}

/// The most one read or write moves (Linux's `MAX_RW_COUNT`, `INT_MAX`
/// rounded down to a page): a vectored call's lengths are cut to it.
pub const MAX_RW_COUNT: u64 = 0x7fff_f000;

/// preadv2/pwritev2 flags (`rwf_t`, include/uapi/linux/fs.h).
pub mod rwf {
    /// High-priority (polled) I/O: only a hint for buffered I/O.
    pub const RWF_HIPRI: u32 = 0x01;
    /// Data synced as by O_DSYNC, for this write only.
    pub const RWF_DSYNC: u32 = 0x02;
    /// Data and metadata synced as by O_SYNC, for this write only.
    pub const RWF_SYNC: u32 = 0x04;
    /// EAGAIN instead of waiting (for data, room, or I/O).
    pub const RWF_NOWAIT: u32 = 0x08;
    /// Write at the end of the file, as O_APPEND, for this write only.
    pub const RWF_APPEND: u32 = 0x10;
    /// Write at the offset given even if the file is O_APPEND.
    pub const RWF_NOAPPEND: u32 = 0x20;
    /// Write all or nothing (untorn); only some files can.
    pub const RWF_ATOMIC: u32 = 0x40;
    /// Every flag Linux 6.12 knows; any other bit is EOPNOTSUPP.
    pub const RWF_SUPPORTED: u32 =
        RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND | RWF_NOAPPEND | RWF_ATOMIC;
}

/// A checked iovec array, iterated without allocating.
#[derive(Clone, Copy, Debug)]
pub struct IoVecs<'a> {
    raw: &'a [u8],
}

impl<'a> IoVecs<'a> {
    /// Checks an iovec array's user image as Linux's `iovec_from_user`
    /// does: at most [`UIO_MAXIOV`] entries (a partial tail is ignored),
    /// no length negative as an `ssize_t`. `None` is Linux's `EINVAL`.
    /// Their sum is not limited: `import_iovec` cuts it (see
    /// [`clamp_to_max_rw`]).
    pub fn parse(raw: &'a [u8]) -> Option<IoVecs<'a>> {
        if raw.len() / IoVec::SIZE > UIO_MAXIOV {
            return None;
        }
        let v = IoVecs { raw };
        if v.iter().any(|io| !io.len_ok()) {
            return None;
        }
        Some(v)
    }

    /// The iovecs, in order.
    pub fn iter(&self) -> impl Iterator<Item = IoVec> + 'a {
        self.raw
            .chunks_exact(IoVec::SIZE)
            .filter_map(|c| c.try_into().ok().map(IoVec::from_bytes))
    }
}

impl IoVec {
    /// Whether its length is a valid `ssize_t` (not negative).
    pub const fn len_ok(&self) -> bool {
        self.len <= i64::MAX as u64
    }
}

/// Cuts the lengths so that they add up to at most [`MAX_RW_COUNT`], as
/// Linux's `__import_iovec` does: the entry that crosses the limit is
/// shortened, the later ones emptied.
pub fn clamp_to_max_rw<'a>(iovs: impl IntoIterator<Item = &'a mut IoVec>) {
    let mut total = 0u64;
    for io in iovs {
        io.len = io.len.min(MAX_RW_COUNT - total);
        total += io.len;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn iovec_round_trips_through_its_user_image() {
        let v = IoVec {
            base: 0x1234_5678_9abc,
            len: 42,
        };
        assert_eq!(IoVec::from_bytes(&v.to_bytes()), v);
        assert_eq!(&v.to_bytes()[8..], &42u64.to_le_bytes());
    }

    #[test]
    fn iovec_arrays_are_refused_as_linux_refuses_them() {
        let img = |vs: &[IoVec]| vs.iter().flat_map(|v| v.to_bytes()).collect::<std::vec::Vec<u8>>();
        let ok = img(&[IoVec { base: 1, len: 2 }, IoVec { base: 3, len: 4 }]);
        let got: std::vec::Vec<IoVec> = IoVecs::parse(&ok).unwrap().iter().collect();
        assert_eq!(got, [IoVec { base: 1, len: 2 }, IoVec { base: 3, len: 4 }]);
        // One length negative as an ssize_t; a sum past it is no error.
        assert!(IoVecs::parse(&img(&[IoVec { base: 0, len: 1 << 63 }])).is_none());
        let half = (isize::MAX as u64) / 2 + 1;
        assert!(IoVecs::parse(&img(&[IoVec { base: 0, len: half }, IoVec { base: 0, len: half }])).is_some());
        // More than UIO_MAXIOV entries.
        assert!(IoVecs::parse(&std::vec![0u8; (UIO_MAXIOV + 1) * 16]).is_none());
        assert!(IoVecs::parse(&std::vec![0u8; UIO_MAXIOV * 16]).is_some());
    }

    #[test]
    fn lengths_are_cut_to_max_rw_count_in_order() {
        let mut v = [
            IoVec {
                base: 0,
                len: 0x7000_0000,
            },
            IoVec {
                base: 0,
                len: 0x1000_0000,
            },
            IoVec { base: 0, len: 5 },
        ];
        clamp_to_max_rw(&mut v);
        assert_eq!(v.map(|io| io.len), [0x7000_0000, MAX_RW_COUNT - 0x7000_0000, 0]);
        let mut small = [IoVec { base: 0, len: 3 }, IoVec { base: 0, len: 4 }];
        clamp_to_max_rw(&mut small);
        assert_eq!(small.map(|io| io.len), [3, 4]);
    }
}
