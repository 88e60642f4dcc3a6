//! Filesystem magic numbers, statfs(2)'s `f_type`
//! (include/uapi/linux/magic.h), for the filesystems this kernel has.

/// tmpfs (and rootfs, devtmpfs, which are shmem on Linux).
pub const TMPFS_MAGIC: u64 = 0x0102_1994;
/// ramfs.
pub const RAMFS_MAGIC: u64 = 0x8584_58f6;
/// procfs.
pub const PROC_SUPER_MAGIC: u64 = 0x9fa0;
/// debugfs.
pub const DEBUGFS_MAGIC: u64 = 0x6462_6720;
/// tracefs.
pub const TRACEFS_MAGIC: u64 = 0x7472_6163;
/// pipefs: where pipes live, outside the tree.
pub const PIPEFS_MAGIC: u64 = 0x5049_5045;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magics_spell_what_linux_chose() {
        // Several are ASCII tags read as big-endian words.
        assert_eq!(DEBUGFS_MAGIC.to_be_bytes()[4..], *b"dbg ");
        assert_eq!(TRACEFS_MAGIC.to_be_bytes()[4..], *b"trac");
        assert_eq!(PIPEFS_MAGIC.to_be_bytes()[4..], *b"PIPE");
        assert_eq!(
            (TMPFS_MAGIC, RAMFS_MAGIC, PROC_SUPER_MAGIC),
            (0x01021994, 0x858458f6, 0x9fa0)
        );
    }
}
