//! open(2), fcntl(2), *at(2), lseek(2) and access(2) numbers.
//!
//! arm64 takes include/uapi/asm-generic/fcntl.h except for four flags it
//! overrides in arch/arm64/include/uapi/asm/fcntl.h: `O_DIRECTORY`,
//! `O_NOFOLLOW`, `O_DIRECT` and `O_LARGEFILE` (the asm-generic values of
//! these four are different: do not "correct" them).

/// Mask of the access mode in open flags.
pub const O_ACCMODE: u32 = 0o3;
pub const O_RDONLY: u32 = 0o0;
pub const O_WRONLY: u32 = 0o1;
pub const O_RDWR: u32 = 0o2;
pub const O_CREAT: u32 = 0o100;
pub const O_EXCL: u32 = 0o200;
pub const O_NOCTTY: u32 = 0o400;
pub const O_TRUNC: u32 = 0o1000;
pub const O_APPEND: u32 = 0o2000;
pub const O_NONBLOCK: u32 = 0o4000;
pub const O_NDELAY: u32 = O_NONBLOCK;
pub const O_DSYNC: u32 = 0o10000;
pub const FASYNC: u32 = 0o20000;
/// arm64 value (asm-generic has 0o200000).
pub const O_DIRECTORY: u32 = 0o40000;
/// arm64 value (asm-generic has 0o400000).
pub const O_NOFOLLOW: u32 = 0o100000;
/// arm64 value (asm-generic has 0o40000).
pub const O_DIRECT: u32 = 0o200000;
/// arm64 value (asm-generic has 0o100000). Linux sets it on every file a
/// 64-bit process opens, so `F_GETFL` reports it.
pub const O_LARGEFILE: u32 = 0o400000;
pub const O_NOATIME: u32 = 0o1000000;
pub const O_CLOEXEC: u32 = 0o2000000;
pub const __O_SYNC: u32 = 0o4000000;
pub const O_SYNC: u32 = __O_SYNC | O_DSYNC;
pub const O_PATH: u32 = 0o10000000;
pub const __O_TMPFILE: u32 = 0o20000000;
pub const O_TMPFILE: u32 = __O_TMPFILE | O_DIRECTORY;

/// The `dirfd` that means "the current working directory".
pub const AT_FDCWD: i32 = -100;
pub const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
/// unlinkat(2): remove a directory.
pub const AT_REMOVEDIR: u32 = 0x200;
/// faccessat(2): check with the effective ids (same value as AT_REMOVEDIR).
pub const AT_EACCESS: u32 = 0x200;
pub const AT_SYMLINK_FOLLOW: u32 = 0x400;
pub const AT_NO_AUTOMOUNT: u32 = 0x800;
pub const AT_EMPTY_PATH: u32 = 0x1000;
pub const AT_STATX_SYNC_TYPE: u32 = 0x6000;
pub const AT_STATX_SYNC_AS_STAT: u32 = 0x0000;
pub const AT_STATX_FORCE_SYNC: u32 = 0x2000;
pub const AT_STATX_DONT_SYNC: u32 = 0x4000;
pub const AT_RECURSIVE: u32 = 0x8000;

/// renameat2(2) flags.
pub const RENAME_NOREPLACE: u32 = 1;
pub const RENAME_EXCHANGE: u32 = 2;
pub const RENAME_WHITEOUT: u32 = 4;

/// splice(2), tee(2) and vmsplice(2) flags (include/linux/splice.h; glibc
/// restates them in fcntl.h): move pages instead of copying (a hint).
pub const SPLICE_F_MOVE: u32 = 1;
/// Do not block on the pipe.
pub const SPLICE_F_NONBLOCK: u32 = 2;
/// More data will follow.
pub const SPLICE_F_MORE: u32 = 4;
/// vmsplice: the pages are a gift to the kernel.
pub const SPLICE_F_GIFT: u32 = 8;
/// Every `SPLICE_F_*` flag.
pub const SPLICE_F_ALL: u32 = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT;

/// fcntl(2) commands.
pub const F_DUPFD: u32 = 0;
pub const F_GETFD: u32 = 1;
pub const F_SETFD: u32 = 2;
pub const F_GETFL: u32 = 3;
pub const F_SETFL: u32 = 4;
pub const F_GETLK: u32 = 5;
pub const F_SETLK: u32 = 6;
pub const F_SETLKW: u32 = 7;
pub const F_SETOWN: u32 = 8;
pub const F_GETOWN: u32 = 9;
pub const F_SETSIG: u32 = 10;
pub const F_GETSIG: u32 = 11;
pub const F_SETOWN_EX: u32 = 15;
pub const F_GETOWN_EX: u32 = 16;
pub const F_GETOWNER_UIDS: u32 = 17;
pub const F_OFD_GETLK: u32 = 36;
pub const F_OFD_SETLK: u32 = 37;
pub const F_OFD_SETLKW: u32 = 38;
pub const F_LINUX_SPECIFIC_BASE: u32 = 1024;
pub const F_SETLEASE: u32 = F_LINUX_SPECIFIC_BASE;
pub const F_GETLEASE: u32 = F_LINUX_SPECIFIC_BASE + 1;
pub const F_NOTIFY: u32 = F_LINUX_SPECIFIC_BASE + 2;
pub const F_DUPFD_CLOEXEC: u32 = F_LINUX_SPECIFIC_BASE + 6;
pub const F_SETPIPE_SZ: u32 = F_LINUX_SPECIFIC_BASE + 7;
pub const F_GETPIPE_SZ: u32 = F_LINUX_SPECIFIC_BASE + 8;
pub const F_ADD_SEALS: u32 = F_LINUX_SPECIFIC_BASE + 9;
pub const F_GET_SEALS: u32 = F_LINUX_SPECIFIC_BASE + 10;

/// flock(2) operations (include/uapi/asm-generic/fcntl.h).
pub const LOCK_SH: u32 = 1;
pub const LOCK_EX: u32 = 2;
/// Or'ed with LOCK_SH or LOCK_EX: fail with EWOULDBLOCK instead of waiting.
pub const LOCK_NB: u32 = 4;
pub const LOCK_UN: u32 = 8;

/// The only file-descriptor flag: close on execve.
pub const FD_CLOEXEC: u32 = 1;

/// lseek(2) `whence`.
pub const SEEK_SET: u32 = 0;
pub const SEEK_CUR: u32 = 1;
pub const SEEK_END: u32 = 2;
pub const SEEK_DATA: u32 = 3;
pub const SEEK_HOLE: u32 = 4;

/// access(2) modes.
pub const F_OK: u32 = 0;
pub const X_OK: u32 = 1;
pub const W_OK: u32 = 2;
pub const R_OK: u32 = 4;

/// utimensat(2) special nanosecond values.
pub const UTIME_NOW: i64 = (1 << 30) - 1;
pub const UTIME_OMIT: i64 = (1 << 30) - 2;

/// The `int fd[2]` that pipe2(2) fills: the read end, then the write end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeFds {
    /// `fd[0]`, the read end.
    pub read: i32,
    /// `fd[1]`, the write end.
    pub write: i32,
}

impl PipeFds {
    /// Its size in user memory.
    pub const SIZE: usize = 8;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[..4].copy_from_slice(&self.read.to_le_bytes());
        b[4..].copy_from_slice(&self.write.to_le_bytes());
        b
    }

    /// Reads the bytes a user program sees.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> PipeFds {
        PipeFds {
            read: i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            write: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

/// fadvise64 advice (include/uapi/linux/fadvise.h; arm64 takes the
/// generic 4 and 5 for DONTNEED and NOREUSE, not s390's 6 and 7).
pub mod fadv {
    /// No special treatment.
    pub const POSIX_FADV_NORMAL: u32 = 0;
    /// Expect random access.
    pub const POSIX_FADV_RANDOM: u32 = 1;
    /// Expect sequential access.
    pub const POSIX_FADV_SEQUENTIAL: u32 = 2;
    /// Will need these pages.
    pub const POSIX_FADV_WILLNEED: u32 = 3;
    /// Will not need these pages.
    pub const POSIX_FADV_DONTNEED: u32 = 4;
    /// The data will be read once.
    pub const POSIX_FADV_NOREUSE: u32 = 5;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm64_overrides_differ_from_asm_generic() {
        assert_eq!(O_DIRECTORY, 0x4000);
        assert_eq!(O_NOFOLLOW, 0x8000);
        assert_eq!(O_DIRECT, 0x10000);
        assert_eq!(O_LARGEFILE, 0x20000);
        assert_eq!(O_CLOEXEC, 0x80000);
        assert_eq!(O_PATH, 0x200000);
        assert_eq!(O_TMPFILE, 0x404000);
    }

    #[test]
    fn flags_do_not_overlap() {
        let all = [
            O_WRONLY,
            O_RDWR,
            O_CREAT,
            O_EXCL,
            O_NOCTTY,
            O_TRUNC,
            O_APPEND,
            O_NONBLOCK,
            O_DSYNC,
            FASYNC,
            O_DIRECTORY,
            O_NOFOLLOW,
            O_DIRECT,
            O_LARGEFILE,
            O_NOATIME,
            O_CLOEXEC,
            __O_SYNC,
            O_PATH,
            __O_TMPFILE,
        ];
        let mut seen = 0;
        for f in all {
            assert_eq!(seen & f, 0, "{f:#o}");
            seen |= f;
        }
    }

    #[test]
    fn at_and_fcntl_numbers() {
        assert_eq!(AT_FDCWD, -100);
        assert_eq!(AT_EMPTY_PATH, 0x1000);
        assert_eq!(F_DUPFD_CLOEXEC, 1030);
        assert_eq!(F_GETPIPE_SZ, 1032);
    }

    #[test]
    fn pipe_fds_are_read_end_then_write_end_as_two_ints() {
        let fds = PipeFds { read: 3, write: -2 };
        assert_eq!(fds.to_bytes(), [3, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff]);
        assert_eq!(PipeFds::from_bytes(&fds.to_bytes()), fds);
    }
}
