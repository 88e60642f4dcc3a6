//! `mount` flags (include/uapi/linux/mount.h).

/// Mount read-only.
pub const MS_RDONLY: u64 = 1;
/// Ignore set-user-ID and set-group-ID bits.
pub const MS_NOSUID: u64 = 2;
/// Disallow access to device files.
pub const MS_NODEV: u64 = 4;
/// Disallow program execution.
pub const MS_NOEXEC: u64 = 8;
/// Writes are synced at once.
pub const MS_SYNCHRONOUS: u64 = 16;
/// Alter the flags of a mounted file system.
pub const MS_REMOUNT: u64 = 32;
/// Do not update access times.
pub const MS_NOATIME: u64 = 1024;
/// Do not update directory access times.
pub const MS_NODIRATIME: u64 = 2048;
/// Bind mount.
pub const MS_BIND: u64 = 4096;
/// Apply to the whole subtree.
pub const MS_REC: u64 = 1 << 14;
/// Quieten kernel messages.
pub const MS_SILENT: u64 = 1 << 15;
/// Update access times relative to modify/change times.
pub const MS_RELATIME: u64 = 1 << 21;
/// Always update access times.
pub const MS_STRICTATIME: u64 = 1 << 24;
/// Magic in the high 16 bits that old mount(2) callers pass
/// (`MS_MGC_VAL`, under `MS_MGC_MSK`); Linux ignores it.
pub const MS_MGC_VAL: u64 = 0xc0ed_0000;

/// umount2(2) (include/linux/fs.h): unmount even if busy.
pub const MNT_FORCE: u64 = 1;
/// umount2(2): detach now, clean up when no longer busy.
pub const MNT_DETACH: u64 = 2;
/// umount2(2): mark for expiry.
pub const MNT_EXPIRE: u64 = 4;
/// umount2(2): do not follow a final symbolic link.
pub const UMOUNT_NOFOLLOW: u64 = 8;

/// statfs(2)'s `f_flags` (include/linux/statfs.h): the flags are valid.
pub const ST_VALID: u64 = 0x0020;
/// statfs(2)'s `f_flags`: relative access-time updates.
pub const ST_RELATIME: u64 = 0x1000;
