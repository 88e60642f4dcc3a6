//! Capabilities (include/uapi/linux/capability.h): the bit numbers, the
//! `capget`/`capset` versions and their header and data layouts; and
//! prctl's dumpable options (include/uapi/linux/prctl.h), the flag that
//! credential changes reset.

/// Make arbitrary changes to file UIDs and GIDs.
pub const CAP_CHOWN: u32 = 0;
/// Bypass file read, write and execute permission checks.
pub const CAP_DAC_OVERRIDE: u32 = 1;
/// Bypass file read and directory search permission checks.
pub const CAP_DAC_READ_SEARCH: u32 = 2;
/// Bypass checks that the file's owner is the caller.
pub const CAP_FOWNER: u32 = 3;
/// Keep set-ID bits when a file is modified.
pub const CAP_FSETID: u32 = 4;
/// Send signals to any process (`kill_ok_by_cred`).
pub const CAP_KILL: u32 = 5;
/// Set any group IDs and supplementary groups.
pub const CAP_SETGID: u32 = 6;
/// Set any user IDs.
pub const CAP_SETUID: u32 = 7;
/// Raise capabilities into the inheritable set beyond the permitted one.
pub const CAP_SETPCAP: u32 = 8;
/// Set the immutable and append-only file attributes.
pub const CAP_LINUX_IMMUTABLE: u32 = 9;
/// Trace and inspect any process (`ptrace_may_access`).
pub const CAP_SYS_PTRACE: u32 = 19;
/// Create special files.
pub const CAP_MKNOD: u32 = 27;
/// Override mandatory access control.
pub const CAP_MAC_OVERRIDE: u32 = 32;
/// The highest capability Linux 6.12 knows (`CAP_CHECKPOINT_RESTORE`).
pub const CAP_LAST_CAP: u32 = 40;
/// Every capability (`CAP_VALID_MASK`, `CAP_FULL_SET`).
pub const CAP_VALID_MASK: u64 = (1 << (CAP_LAST_CAP + 1)) - 1;
/// What a filesystem UID of 0 historically meant (`CAP_FS_SET`):
/// dropped from and raised into the effective set as fsuid leaves or
/// returns to 0.
pub const CAP_FS_SET: u64 = 1 << CAP_CHOWN
    | 1 << CAP_MKNOD
    | 1 << CAP_DAC_OVERRIDE
    | 1 << CAP_DAC_READ_SEARCH
    | 1 << CAP_FOWNER
    | 1 << CAP_FSETID
    | 1 << CAP_MAC_OVERRIDE
    | 1 << CAP_LINUX_IMMUTABLE;

/// `_LINUX_CAPABILITY_VERSION_1`: one 32-bit data struct.
pub const LINUX_CAPABILITY_VERSION_1: u32 = 0x1998_0330;
/// `_LINUX_CAPABILITY_VERSION_2` (deprecated): two data structs.
pub const LINUX_CAPABILITY_VERSION_2: u32 = 0x2007_1026;
/// `_LINUX_CAPABILITY_VERSION_3`: two data structs, the kernel's own
/// (`_KERNEL_CAPABILITY_VERSION`, written back for an unknown version).
pub const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `struct __user_cap_header_struct`: `{ u32 version; int pid; }`.
pub const CAP_USER_HEADER_SIZE: usize = 8;
/// `struct __user_cap_data_struct`: `{ u32 effective, permitted,
/// inheritable; }`, one per 32 capabilities.
pub const CAP_USER_DATA_SIZE: usize = 12;

/// The number of data structs a version transfers, or `None` for a
/// version Linux does not know (`cap_validate_magic`).
pub const fn cap_data_count(version: u32) -> Option<usize> {
    match version {
        LINUX_CAPABILITY_VERSION_1 => Some(1),
        LINUX_CAPABILITY_VERSION_2 | LINUX_CAPABILITY_VERSION_3 => Some(2),
        _ => None,
    }
}

/// prctl: whether the caller's address space is dumpable (and so open to
/// ptrace by its owner).
pub const PR_GET_DUMPABLE: u64 = 3;
/// prctl: set it to `SUID_DUMP_DISABLE` or `SUID_DUMP_USER`.
pub const PR_SET_DUMPABLE: u64 = 4;
/// Not dumpable: only `CAP_SYS_PTRACE` may inspect it.
pub const SUID_DUMP_DISABLE: u8 = 0;
/// Dumpable by its owner (the default).
pub const SUID_DUMP_USER: u8 = 1;

/// `NGROUPS_MAX`: the most supplementary groups `setgroups` takes.
pub const NGROUPS_MAX: usize = 65536;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_match_linux_include_linux_capability_h() {
        assert_eq!(CAP_VALID_MASK, 0x1ff_ffff_ffff);
        // CAP_FS_MASK | CAP_LINUX_IMMUTABLE: bits 0-4, 9, 27 and 32.
        assert_eq!(CAP_FS_SET, 0x1_0800_021f);
        assert_eq!(cap_data_count(LINUX_CAPABILITY_VERSION_1), Some(1));
        assert_eq!(cap_data_count(LINUX_CAPABILITY_VERSION_3), Some(2));
        assert_eq!(cap_data_count(0), None);
    }
}
