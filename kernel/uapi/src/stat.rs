//! File types and permissions, `struct stat`, device numbers and
//! `struct linux_dirent64`.

/// File type mask and types (the upper bits of `st_mode`).
pub const S_IFMT: u32 = 0o170000;
pub const S_IFSOCK: u32 = 0o140000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFBLK: u32 = 0o060000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFIFO: u32 = 0o010000;
pub const S_ISUID: u32 = 0o4000;
pub const S_ISGID: u32 = 0o2000;
pub const S_ISVTX: u32 = 0o1000;
pub const S_IRWXU: u32 = 0o700;
pub const S_IRUSR: u32 = 0o400;
pub const S_IWUSR: u32 = 0o200;
pub const S_IXUSR: u32 = 0o100;
pub const S_IRWXG: u32 = 0o070;
pub const S_IRGRP: u32 = 0o040;
pub const S_IWGRP: u32 = 0o020;
pub const S_IXGRP: u32 = 0o010;
pub const S_IRWXO: u32 = 0o007;
pub const S_IROTH: u32 = 0o004;
pub const S_IWOTH: u32 = 0o002;
pub const S_IXOTH: u32 = 0o001;
/// Permission bits including set-id and sticky.
pub const S_IALLUGO: u32 = 0o7777;

/// `d_type` values of `struct linux_dirent64` (include/linux/fs_types.h).
pub const DT_UNKNOWN: u8 = 0;
pub const DT_FIFO: u8 = 1;
pub const DT_CHR: u8 = 2;
pub const DT_DIR: u8 = 4;
pub const DT_BLK: u8 = 6;
pub const DT_REG: u8 = 8;
pub const DT_LNK: u8 = 10;
pub const DT_SOCK: u8 = 12;
pub const DT_WHT: u8 = 14;

/// The `d_type` for a mode, as Linux's `fs_umode_to_dtype`: `(mode >> 12) & 15`.
pub const fn mode_to_dtype(mode: u32) -> u8 {
    ((mode & S_IFMT) >> 12) as u8
}

/// Encodes a device number as `st_dev`/`st_rdev` carry it (Linux's
/// `new_encode_dev`: minor's low 8 bits, major's 12 bits, minor's high bits),
/// which is also glibc's `makedev` for majors below 4096.
pub const fn makedev(major: u32, minor: u32) -> u64 {
    ((minor & 0xff) | ((major & 0xfff) << 8) | ((minor & !0xff) << 12)) as u64
}

/// The major number of an encoded device number.
pub const fn major(dev: u64) -> u32 {
    ((dev >> 8) & 0xfff) as u32
}

/// The minor number of an encoded device number.
pub const fn minor(dev: u64) -> u32 {
    ((dev & 0xff) | ((dev >> 12) & 0xfff00)) as u32
}

/// arm64's `struct stat` (include/uapi/asm-generic/stat.h), 128 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Stat {
    pub st_dev: u64,
    pub st_ino: u64,
    pub st_mode: u32,
    pub st_nlink: u32,
    pub st_uid: u32,
    pub st_gid: u32,
    pub st_rdev: u64,
    pub __pad1: u64,
    pub st_size: i64,
    pub st_blksize: i32,
    pub __pad2: i32,
    pub st_blocks: i64,
    pub st_atime: i64,
    pub st_atime_nsec: u64,
    pub st_mtime: i64,
    pub st_mtime_nsec: u64,
    pub st_ctime: i64,
    pub st_ctime_nsec: u64,
    pub __unused4: u32,
    pub __unused5: u32,
}

impl Stat {
    /// Whether this is a directory.
    pub const fn is_dir(&self) -> bool {
        self.st_mode & S_IFMT == S_IFDIR
    }

    pub const SIZE: usize = 128;

    /// The bytes a user program sees (arm64 Linux is little-endian).
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        let mut w = Writer { buf: &mut b, pos: 0 };
        w.put(&self.st_dev.to_le_bytes());
        w.put(&self.st_ino.to_le_bytes());
        w.put(&self.st_mode.to_le_bytes());
        w.put(&self.st_nlink.to_le_bytes());
        w.put(&self.st_uid.to_le_bytes());
        w.put(&self.st_gid.to_le_bytes());
        w.put(&self.st_rdev.to_le_bytes());
        w.put(&self.__pad1.to_le_bytes());
        w.put(&self.st_size.to_le_bytes());
        w.put(&self.st_blksize.to_le_bytes());
        w.put(&self.__pad2.to_le_bytes());
        w.put(&self.st_blocks.to_le_bytes());
        w.put(&self.st_atime.to_le_bytes());
        w.put(&self.st_atime_nsec.to_le_bytes());
        w.put(&self.st_mtime.to_le_bytes());
        w.put(&self.st_mtime_nsec.to_le_bytes());
        w.put(&self.st_ctime.to_le_bytes());
        w.put(&self.st_ctime_nsec.to_le_bytes());
        w.put(&self.__unused4.to_le_bytes());
        w.put(&self.__unused5.to_le_bytes());
        debug_assert_eq!(w.pos, Self::SIZE);
        b
    }
}

pub(crate) struct Writer<'a> {
    pub(crate) buf: &'a mut [u8],
    pub(crate) pos: usize,
}

impl Writer<'_> {
    pub(crate) fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }
}

/// Offset of `d_name` in `struct linux_dirent64` (d_ino u64, d_off i64,
/// d_reclen u16, d_type u8, then the name).
pub const DIRENT64_NAME_OFFSET: usize = 19;

/// The record length of a `linux_dirent64` with a name of `name_len` bytes:
/// header, name, NUL, rounded up to 8 bytes.
pub const fn dirent64_reclen(name_len: usize) -> usize {
    (DIRENT64_NAME_OFFSET + name_len + 1 + 7) & !7
}

/// Writes one `linux_dirent64` record at the start of `buf` and returns its
/// length, or `None` (writing nothing) if `buf` is too small. The padding
/// after the name is zeroed.
pub fn write_dirent64(buf: &mut [u8], ino: u64, off: i64, d_type: u8, name: &[u8]) -> Option<usize> {
    let reclen = dirent64_reclen(name.len());
    if buf.len() < reclen || reclen > u16::MAX as usize {
        return None;
    }
    let rec = &mut buf[..reclen];
    rec[0..8].copy_from_slice(&ino.to_le_bytes());
    rec[8..16].copy_from_slice(&off.to_le_bytes());
    rec[16..18].copy_from_slice(&(reclen as u16).to_le_bytes());
    rec[18] = d_type;
    rec[DIRENT64_NAME_OFFSET..DIRENT64_NAME_OFFSET + name.len()].copy_from_slice(name);
    rec[DIRENT64_NAME_OFFSET + name.len()..].fill(0);
    Some(reclen)
}

/// statx(2)'s mask: the fields of `struct stat` (include/uapi/linux/stat.h).
pub const STATX_BASIC_STATS: u32 = 0x7ff;
/// statx(2)'s mask: `stx_mnt_id`.
pub const STATX_MNT_ID: u32 = 0x1000;
/// statx(2)'s mask: reserved for a future `struct statx` extension.
pub const STATX__RESERVED: u32 = 0x8000_0000;

/// `struct statx_timestamp`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatxTimestamp {
    /// Seconds since the epoch.
    pub tv_sec: i64,
    /// Nanoseconds.
    pub tv_nsec: u32,
}

/// `struct statx` (include/uapi/linux/stat.h): what statx(2) writes, 256
/// bytes, the spare words zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statx {
    /// `STATX_*`: which fields hold results.
    pub stx_mask: u32,
    /// Preferred I/O size.
    pub stx_blksize: u32,
    /// `STATX_ATTR_*` flags.
    pub stx_attributes: u64,
    /// Hard links.
    pub stx_nlink: u32,
    /// Owner.
    pub stx_uid: u32,
    /// Group.
    pub stx_gid: u32,
    /// Type and permissions.
    pub stx_mode: u16,
    /// Inode number.
    pub stx_ino: u64,
    /// Size in bytes.
    pub stx_size: u64,
    /// 512-byte blocks allocated.
    pub stx_blocks: u64,
    /// Which `stx_attributes` bits are supported.
    pub stx_attributes_mask: u64,
    /// Last access.
    pub stx_atime: StatxTimestamp,
    /// Creation.
    pub stx_btime: StatxTimestamp,
    /// Last status change.
    pub stx_ctime: StatxTimestamp,
    /// Last modification.
    pub stx_mtime: StatxTimestamp,
    /// Device of a special file.
    pub stx_rdev_major: u32,
    /// Device of a special file.
    pub stx_rdev_minor: u32,
    /// Device the file lives on.
    pub stx_dev_major: u32,
    /// Device the file lives on.
    pub stx_dev_minor: u32,
    /// Mount ID (`STATX_MNT_ID`).
    pub stx_mnt_id: u64,
    /// Direct I/O memory alignment.
    pub stx_dio_mem_align: u32,
    /// Direct I/O file offset alignment.
    pub stx_dio_offset_align: u32,
    /// Subvolume.
    pub stx_subvol: u64,
    /// Smallest atomic write.
    pub stx_atomic_write_unit_min: u32,
    /// Largest atomic write.
    pub stx_atomic_write_unit_max: u32,
    /// Most segments of an atomic write.
    pub stx_atomic_write_segments_max: u32,
}

impl Statx {
    /// Its size in user memory.
    pub const SIZE: usize = 256;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
        put(0, &self.stx_mask.to_le_bytes());
        put(4, &self.stx_blksize.to_le_bytes());
        put(8, &self.stx_attributes.to_le_bytes());
        put(16, &self.stx_nlink.to_le_bytes());
        put(20, &self.stx_uid.to_le_bytes());
        put(24, &self.stx_gid.to_le_bytes());
        put(28, &self.stx_mode.to_le_bytes());
        put(32, &self.stx_ino.to_le_bytes());
        put(40, &self.stx_size.to_le_bytes());
        put(48, &self.stx_blocks.to_le_bytes());
        put(56, &self.stx_attributes_mask.to_le_bytes());
        for (off, t) in [
            (64, self.stx_atime),
            (80, self.stx_btime),
            (96, self.stx_ctime),
            (112, self.stx_mtime),
        ] {
            put(off, &t.tv_sec.to_le_bytes());
            put(off + 8, &t.tv_nsec.to_le_bytes());
        }
        put(128, &self.stx_rdev_major.to_le_bytes());
        put(132, &self.stx_rdev_minor.to_le_bytes());
        put(136, &self.stx_dev_major.to_le_bytes());
        put(140, &self.stx_dev_minor.to_le_bytes());
        put(144, &self.stx_mnt_id.to_le_bytes());
        put(152, &self.stx_dio_mem_align.to_le_bytes());
        put(156, &self.stx_dio_offset_align.to_le_bytes());
        put(160, &self.stx_subvol.to_le_bytes());
        put(168, &self.stx_atomic_write_unit_min.to_le_bytes());
        put(172, &self.stx_atomic_write_unit_max.to_le_bytes());
        put(176, &self.stx_atomic_write_segments_max.to_le_bytes());
        b
    }
}

/// arm64's `struct statfs` (include/uapi/asm-generic/statfs.h, 64-bit
/// words): what statfs(2) and fstatfs(2) write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statfs {
    /// Filesystem magic (`uapi::magic`).
    pub f_type: u64,
    /// Block size.
    pub f_bsize: u64,
    /// Blocks in all.
    pub f_blocks: u64,
    /// Free blocks.
    pub f_bfree: u64,
    /// Free blocks for unprivileged users.
    pub f_bavail: u64,
    /// Inodes in all.
    pub f_files: u64,
    /// Free inodes.
    pub f_ffree: u64,
    /// Filesystem ID (`__kernel_fsid_t`, two ints).
    pub f_fsid: [i32; 2],
    /// Longest file name.
    pub f_namelen: u64,
    /// Fragment size.
    pub f_frsize: u64,
    /// `ST_*` mount flags.
    pub f_flags: u64,
}

impl Statfs {
    /// Its size in user memory (with `f_spare[4]`).
    pub const SIZE: usize = 120;

    /// The bytes a user program sees.
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        let words = [
            self.f_type,
            self.f_bsize,
            self.f_blocks,
            self.f_bfree,
            self.f_bavail,
            self.f_files,
            self.f_ffree,
        ];
        for (i, w) in words.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        b[56..60].copy_from_slice(&self.f_fsid[0].to_le_bytes());
        b[60..64].copy_from_slice(&self.f_fsid[1].to_le_bytes());
        b[64..72].copy_from_slice(&self.f_namelen.to_le_bytes());
        b[72..80].copy_from_slice(&self.f_frsize.to_le_bytes());
        b[80..88].copy_from_slice(&self.f_flags.to_le_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn stat_layout_is_asm_generic() {
        assert_eq!(size_of::<Stat>(), 128);
        assert_eq!(offset_of!(Stat, st_dev), 0);
        assert_eq!(offset_of!(Stat, st_ino), 8);
        assert_eq!(offset_of!(Stat, st_mode), 16);
        assert_eq!(offset_of!(Stat, st_nlink), 20);
        assert_eq!(offset_of!(Stat, st_uid), 24);
        assert_eq!(offset_of!(Stat, st_gid), 28);
        assert_eq!(offset_of!(Stat, st_rdev), 32);
        assert_eq!(offset_of!(Stat, st_size), 48);
        assert_eq!(offset_of!(Stat, st_blksize), 56);
        assert_eq!(offset_of!(Stat, st_blocks), 64);
        assert_eq!(offset_of!(Stat, st_atime), 72);
        assert_eq!(offset_of!(Stat, st_mtime), 88);
        assert_eq!(offset_of!(Stat, st_ctime), 104);
        assert_eq!(offset_of!(Stat, st_ctime_nsec), 112);
    }

    #[test]
    fn stat_bytes_put_fields_at_their_offsets() {
        let st = Stat {
            st_dev: 0x0102,
            st_ino: 77,
            st_mode: S_IFREG | 0o644,
            st_nlink: 1,
            st_uid: 1000,
            st_gid: 100,
            st_size: 4097,
            st_blksize: 4096,
            st_blocks: 16,
            st_mtime: 1_700_000_000,
            st_mtime_nsec: 5,
            st_ctime_nsec: 9,
            ..Stat::default()
        };
        let b = st.to_bytes();
        assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), 0x0102);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 77);
        assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 0o100644);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 1000);
        assert_eq!(i64::from_le_bytes(b[48..56].try_into().unwrap()), 4097);
        assert_eq!(i32::from_le_bytes(b[56..60].try_into().unwrap()), 4096);
        assert_eq!(i64::from_le_bytes(b[64..72].try_into().unwrap()), 16);
        assert_eq!(i64::from_le_bytes(b[88..96].try_into().unwrap()), 1_700_000_000);
        assert_eq!(u64::from_le_bytes(b[96..104].try_into().unwrap()), 5);
        assert_eq!(u64::from_le_bytes(b[112..120].try_into().unwrap()), 9);
    }

    #[test]
    fn statx_fields_sit_at_linux_offsets() {
        let t = |sec: i64, nsec: u32| StatxTimestamp {
            tv_sec: sec,
            tv_nsec: nsec,
        };
        let x = Statx {
            stx_mask: 0x11,
            stx_blksize: 0x12,
            stx_attributes: 0x13,
            stx_nlink: 0x14,
            stx_uid: 0x15,
            stx_gid: 0x16,
            stx_mode: 0x17,
            stx_ino: 0x18,
            stx_size: 0x19,
            stx_blocks: 0x1a,
            stx_attributes_mask: 0x1b,
            stx_atime: t(0x21, 0x22),
            stx_btime: t(0x23, 0x24),
            stx_ctime: t(0x25, 0x26),
            stx_mtime: t(0x27, 0x28),
            stx_rdev_major: 0x31,
            stx_rdev_minor: 0x32,
            stx_dev_major: 0x33,
            stx_dev_minor: 0x34,
            stx_mnt_id: 0x35,
            stx_dio_mem_align: 0x36,
            stx_dio_offset_align: 0x37,
            stx_subvol: 0x38,
            stx_atomic_write_unit_min: 0x39,
            stx_atomic_write_unit_max: 0x3a,
            stx_atomic_write_segments_max: 0x3b,
        };
        let b = x.to_bytes();
        // (offset, value) of each field, from include/uapi/linux/stat.h.
        let at = [
            (0, 0x11),
            (4, 0x12),
            (8, 0x13),
            (16, 0x14),
            (20, 0x15),
            (24, 0x16),
            (28, 0x17),
            (32, 0x18),
            (40, 0x19),
            (48, 0x1a),
            (56, 0x1b),
            (64, 0x21),
            (72, 0x22),
            (80, 0x23),
            (88, 0x24),
            (96, 0x25),
            (104, 0x26),
            (112, 0x27),
            (120, 0x28),
            (128, 0x31),
            (132, 0x32),
            (136, 0x33),
            (140, 0x34),
            (144, 0x35),
            (152, 0x36),
            (156, 0x37),
            (160, 0x38),
            (168, 0x39),
            (172, 0x3a),
            (176, 0x3b),
        ];
        let mut seen = [false; Statx::SIZE];
        for (off, v) in at {
            assert_eq!(b[off], v, "byte at {off}");
            seen[off] = true;
        }
        for (off, &byte) in b.iter().enumerate() {
            assert!(seen[off] || byte == 0, "stray byte {byte:#x} at {off}");
        }
    }

    #[test]
    fn statfs_words_sit_at_linux_offsets() {
        let s = Statfs {
            f_type: 1,
            f_bsize: 2,
            f_blocks: 3,
            f_bfree: 4,
            f_bavail: 5,
            f_files: 6,
            f_ffree: 7,
            f_fsid: [8, 9],
            f_namelen: 10,
            f_frsize: 11,
            f_flags: 12,
        };
        let b = s.to_bytes();
        for (i, w) in [1u64, 2, 3, 4, 5, 6, 7].into_iter().enumerate() {
            assert_eq!(b[i * 8..i * 8 + 8], w.to_le_bytes());
        }
        assert_eq!(b[56..64], [8, 0, 0, 0, 9, 0, 0, 0]);
        assert_eq!(b[64..72], 10u64.to_le_bytes());
        assert_eq!(b[72..80], 11u64.to_le_bytes());
        assert_eq!(b[80..88], 12u64.to_le_bytes());
        assert_eq!(b[88..], [0; 32], "f_spare");
    }

    #[test]
    fn device_numbers_round_trip() {
        assert_eq!(makedev(1, 3), 0x103);
        assert_eq!(makedev(5, 1), 0x501);
        assert_eq!(makedev(4, 0x1234), 0x120_0434);
        for (ma, mi) in [(0, 0), (1, 5), (4095, 0xfffff), (259, 300)] {
            let d = makedev(ma, mi);
            assert_eq!((major(d), minor(d)), (ma, mi));
        }
    }

    /// mknod's 32-bit dev_t: Linux's new_decode_dev then new_encode_dev
    /// is the identity, so it is kept as given.
    #[test]
    fn a_32_bit_dev_t_decodes_and_encodes_to_itself() {
        for d in [
            0u32,
            0x103,
            0x501,
            0x120_0434,
            0xffff_ffff,
            0x8000_0001,
            0x000f_ff00,
            0xfff0_00ff,
        ] {
            let d = u64::from(d);
            assert_eq!(makedev(major(d), minor(d)), d, "{d:#x}");
        }
    }

    #[test]
    fn dirent64_records() {
        assert_eq!(dirent64_reclen(1), 24);
        assert_eq!(dirent64_reclen(4), 24);
        assert_eq!(dirent64_reclen(5), 32);
        let mut buf = [0xffu8; 32];
        assert_eq!(write_dirent64(&mut buf[..23], 1, 2, DT_DIR, b"."), None);
        assert_eq!(write_dirent64(&mut buf, 9, 3, DT_REG, b"hello"), Some(32));
        assert_eq!(u64::from_le_bytes(buf[0..8].try_into().unwrap()), 9);
        assert_eq!(i64::from_le_bytes(buf[8..16].try_into().unwrap()), 3);
        assert_eq!(u16::from_le_bytes(buf[16..18].try_into().unwrap()), 32);
        assert_eq!(buf[18], DT_REG);
        assert_eq!(&buf[19..24], b"hello");
        assert!(buf[24..].iter().all(|&b| b == 0));
        assert_eq!(mode_to_dtype(S_IFDIR | 0o755), DT_DIR);
        assert_eq!(mode_to_dtype(S_IFLNK), DT_LNK);
        assert_eq!(mode_to_dtype(S_IFCHR), DT_CHR);
    }
}
