//! Credentials and Linux's discretionary access check.

use alloc::vec::Vec;

use uapi::stat::S_IFDIR;
use uapi::Errno;

use crate::inode::Metadata;
use crate::Result;

/// Read permission, as `MAY_READ` (and the `r` bit's value).
pub const MAY_READ: u32 = 4;
/// Write permission.
pub const MAY_WRITE: u32 = 2;
/// Execute, or search for a directory.
pub const MAY_EXEC: u32 = 1;

/// The identity a filesystem access is checked against: the task's
/// filesystem uid and gid (fsuid/fsgid, which follow the effective ids) and
/// its supplementary groups. uid 0 has the capabilities `CAP_DAC_OVERRIDE`,
/// `CAP_FOWNER`, `CAP_CHOWN` and `CAP_MKNOD`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cred {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

impl Cred {
    /// The superuser.
    pub fn root() -> Self {
        Cred::default()
    }

    pub fn new(uid: u32, gid: u32) -> Self {
        Cred {
            uid,
            gid,
            groups: Vec::new(),
        }
    }

    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Whether `gid` is the primary or a supplementary group.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }

    /// Owner of the inode, or privileged (`inode_owner_or_capable`).
    pub fn owns(&self, meta: &Metadata) -> bool {
        self.is_root() || self.uid == meta.uid
    }
}

/// Linux's `generic_permission`: may `cred` access `meta` for `want`
/// (`MAY_READ | MAY_WRITE | MAY_EXEC` bits)? The owner class applies if
/// the uid matches, else the group class if any group matches, else other.
/// uid 0 may always read and write, search directories, and execute files
/// with at least one execute bit.
pub fn may_access(meta: &Metadata, cred: &Cred, want: u32) -> Result<()> {
    let want = want & 7;
    if cred.is_root() {
        let is_dir = meta.mode & uapi::stat::S_IFMT == S_IFDIR;
        if want & MAY_EXEC == 0 || is_dir || meta.mode & 0o111 != 0 {
            return Ok(());
        }
        return Err(Errno::EACCES);
    }
    let bits = if cred.uid == meta.uid {
        meta.mode >> 6
    } else if cred.in_group(meta.gid) {
        meta.mode >> 3
    } else {
        meta.mode
    } & 7;
    if want & !bits == 0 {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uapi::stat::S_IFREG;

    fn meta(mode: u32, uid: u32, gid: u32) -> Metadata {
        Metadata {
            mode,
            uid,
            gid,
            ..Metadata::default()
        }
    }

    #[test]
    fn owner_class_is_exclusive() {
        // Owner with no rights is denied even though "other" may read.
        let m = meta(S_IFREG | 0o044, 1000, 100);
        assert_eq!(may_access(&m, &Cred::new(1000, 100), MAY_READ), Err(Errno::EACCES));
        assert_eq!(may_access(&m, &Cred::new(1001, 100), MAY_READ), Ok(()));
        assert_eq!(may_access(&m, &Cred::new(1001, 5), MAY_READ), Ok(()));
    }

    #[test]
    fn group_and_supplementary_groups() {
        let m = meta(S_IFREG | 0o640, 1000, 100);
        let mut c = Cred::new(1001, 5);
        assert_eq!(may_access(&m, &c, MAY_READ), Err(Errno::EACCES));
        c.groups.push(100);
        assert_eq!(may_access(&m, &c, MAY_READ), Ok(()));
        assert_eq!(may_access(&m, &c, MAY_WRITE), Err(Errno::EACCES));
    }

    #[test]
    fn root_bypasses_rw_but_needs_an_x_bit_to_exec() {
        let root = Cred::root();
        let m = meta(S_IFREG, 1000, 100);
        assert_eq!(may_access(&m, &root, MAY_READ | MAY_WRITE), Ok(()));
        assert_eq!(may_access(&m, &root, MAY_EXEC), Err(Errno::EACCES));
        let m = meta(S_IFREG | 0o001, 1000, 100);
        assert_eq!(may_access(&m, &root, MAY_EXEC), Ok(()));
        let d = meta(S_IFDIR, 1000, 100);
        assert_eq!(may_access(&d, &root, MAY_EXEC), Ok(()));
    }
}
