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
