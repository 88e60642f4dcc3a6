//! openat(2) and the attribute operations: faccessat, fchmodat, fchownat,
//! truncate, fstatat, utimensat.

use alloc::sync::Arc;

use uapi::fcntl::*;
use uapi::stat::*;
use uapi::Errno;

use crate::cred::{may_access, Cred, MAY_EXEC, MAY_READ, MAY_WRITE};
use crate::file::{FileOps, OpenFile};
use crate::inode::{FileType, Inode, Metadata, NodeKind, Timespec};
use crate::mount::{Path, Vfs};
use crate::namei::{check_path, may_create, new_owner, Last, NameiData};
use crate::Result;

/// Open flags Linux accepts (`VALID_OPEN_FLAGS`); others are ignored, as
/// open(2) does.
const VALID_OPEN_FLAGS: u32 = O_ACCMODE
    | O_CREAT
    | O_EXCL
    | O_NOCTTY
    | O_TRUNC
    | O_APPEND
    | O_NONBLOCK
    | O_DSYNC
    | FASYNC
    | O_DIRECT
    | O_LARGEFILE
    | O_DIRECTORY
    | O_NOFOLLOW
    | O_NOATIME
    | O_CLOEXEC
    | __O_SYNC
    | O_PATH
    | __O_TMPFILE;

/// One time for [`Vfs::utimensat`], as `struct timespec` with
/// UTIME_NOW/UTIME_OMIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSpec {
    Now,
    Omit,
    Set(Timespec),
}

/// Opens the file at `path`, found and checked by the caller (Linux's
/// `vfs_open(path, file)`: x0 is the path, as on Linux; x1 holds the open
/// flags, which Linux finds in the `struct file` it passes there). Device
/// nodes open their driver, other files their inode's open operation.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
pub fn vfs_open(path: &Path, flags: u32, vfs: &Vfs) -> Result<Arc<OpenFile>> {
    let meta = path.metadata();
    let stored = flags | O_LARGEFILE;
    let inode = path.inode.clone();
    let target = path.clone();
    match meta.file_type() {
        FileType::CharDevice | FileType::BlockDevice => {
            let (ma, mi) = (major(meta.rdev), minor(meta.rdev));
            let dev = if meta.file_type() == FileType::CharDevice {
                vfs.devices().char_device(ma, mi)
            } else {
                vfs.devices().block_device(ma, mi)
            }
            .ok_or(Errno::ENXIO)?;
            dev.open(flags)?;
            let ops: Arc<dyn FileOps> = dev;
            Ok(OpenFile::new_ops(Some(target), inode, ops, stored))
        }
        FileType::Fifo | FileType::Socket => Err(Errno::ENXIO),
        _ => match inode.open(flags)? {
            Some(ops) => Ok(OpenFile::new_ops(Some(target), inode, ops, stored)),
            None => Ok(OpenFile::new_inode(Some(target), inode, stored)),
        },
    }
}

impl Vfs {
    /// openat(2). `start` is the cwd or the directory fd's path; `mode` is
    /// used with O_CREAT, masked by `umask`. The descriptor's close-on-exec
    /// (O_CLOEXEC) is the fd table's business.
    pub fn openat(
        &self,
        cred: &Cred,
        start: &Path,
        path: &[u8],
        flags: u32,
        mode: u32,
        umask: u32,
    ) -> Result<Arc<OpenFile>> {
        let flags = flags & VALID_OPEN_FLAGS;
        // Linux 6.4+: O_CREAT with O_DIRECTORY is refused.
        if flags & O_CREAT != 0 && flags & O_DIRECTORY != 0 && flags & __O_TMPFILE == 0 {
            return Err(Errno::EINVAL);
        }
        if flags & __O_TMPFILE != 0 {
            if flags & O_TMPFILE != O_TMPFILE || flags & O_ACCMODE == O_RDONLY {
                return Err(Errno::EINVAL);
            }
            return Err(Errno::EOPNOTSUPP);
        }
        let o_path = flags & O_PATH != 0;
        let flags = if o_path {
            flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        } else {
            flags
        };
        let create = flags & O_CREAT != 0;
        let excl = create && flags & O_EXCL != 0;
        let follow = flags & O_NOFOLLOW == 0 && !excl;
        let path = check_path(path)?;

        let mut nd = NameiData::new(self, cred);
        let mut p = nd.walk_parent(start, path)?;
        let mut must_dir = p.trailing_slash || flags & O_DIRECTORY != 0;
        let mut created = false;
        let target = loop {
            if create && matches!(p.last, Last::Norm(_)) && p.trailing_slash {
                return Err(Errno::EISDIR);
            }
            match nd.lookup_last(&p)? {
                Some(node) => {
                    if excl {
                        return Err(Errno::EEXIST);
                    }
                    if node.metadata().is_symlink() && (follow || p.trailing_slash) {
                        let body = nd.link_body(&node)?;
                        p = nd.walk_parent(&p.dir, &body)?;
                        must_dir |= p.trailing_slash;
                        continue;
                    }
                    break node;
                }
                None if create => {
                    let Last::Norm(name) = &p.last else {
                        return Err(Errno::ENOENT);
                    };
                    let dmeta = p.dir.metadata();
                    may_create(&dmeta, cred)?;
                    let (uid, gid, perm) = new_owner(&dmeta, cred, mode & !umask & S_IALLUGO, false);
                    let inode = p.dir.inode.create(name, NodeKind::Regular, perm, uid, gid)?;
                    created = true;
                    break Path {
                        mnt: p.dir.mnt.clone(),
                        inode,
                    };
                }
                None => return Err(Errno::ENOENT),
            }
        };

        let meta = target.metadata();
        // The name /proc/<pid>/fd/N shows: the directory's path and the
        // last component, as the walk ended (after symlinks).
        let name = match &p.last {
            Last::Norm(last) if !meta.is_dir() => self.getcwd(&p.dir).ok().map(|mut name| {
                if name != b"/" {
                    name.push(b'/');
                }
                name.extend_from_slice(last);
                name
            }),
            _ => None,
        };
        let named = |f: Arc<OpenFile>| {
            if let Some(name) = name.clone() {
                f.set_name(name);
            }
            f
        };
        if o_path {
            if must_dir && !meta.is_dir() {
                return Err(Errno::ENOTDIR);
            }
            return Ok(named(OpenFile::new_path_only(target, flags)));
        }
        if create && meta.is_dir() {
            return Err(Errno::EISDIR);
        }
        if must_dir && !meta.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        self.may_open(cred, &meta, flags, created)?;
        if flags & O_TRUNC != 0 && meta.is_regular() && !created {
            target.inode.truncate(0)?;
        }
        // The lookup's reference to the parent directory goes.
        crate::dentry::dput_named(&p.dir_name, p.dir);
        vfs_open(&target, flags, self).map(named)
    }

    /// Linux's `may_open`: type checks, then permission for the access mode
    /// (O_TRUNC counts as writing); a file this open created is not checked.
    fn may_open(&self, cred: &Cred, meta: &Metadata, flags: u32, created: bool) -> Result<()> {
        let mut want = match flags & O_ACCMODE {
            O_RDONLY => MAY_READ,
            O_WRONLY => MAY_WRITE,
            _ => MAY_READ | MAY_WRITE,
        };
        if flags & O_TRUNC != 0 {
            want |= MAY_WRITE;
        }
        match meta.file_type() {
            FileType::Symlink => return Err(Errno::ELOOP),
            FileType::Directory if want & MAY_WRITE != 0 => return Err(Errno::EISDIR),
            _ => {}
        }
        if !created {
            may_access(meta, cred, want)?;
        }
        if flags & O_NOATIME != 0 && !cred.owns(meta) {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// faccessat2(2) with `cred` being the ids to check (the real ones, or
    /// the effective ones for AT_EACCESS).
    pub fn faccessat(&self, cred: &Cred, start: &Path, path: &[u8], mode: u32, flags: u32) -> Result<()> {
        if mode & !(R_OK | W_OK | X_OK) != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EACCESS | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let p = self.lookup_at(cred, start, path, flags)?;
        if mode == F_OK {
            return Ok(());
        }
        may_access(&p.metadata(), cred, mode)
    }

    fn lookup_at(&self, cred: &Cred, start: &Path, path: &[u8], flags: u32) -> Result<Path> {
        if flags & AT_EMPTY_PATH != 0 && path.first().is_none_or(|&b| b == 0) {
            return Ok(start.clone());
        }
        self.lookup(cred, start, path, flags & AT_SYMLINK_NOFOLLOW == 0)
    }

    /// fstatat(2) (newfstatat on arm64); `flags` may hold
    /// AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, AT_NO_AUTOMOUNT.
    pub fn fstatat(&self, cred: &Cred, start: &Path, path: &[u8], flags: u32) -> Result<Metadata> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE) != 0 {
            return Err(Errno::EINVAL);
        }
        Ok(self.lookup_at(cred, start, path, flags)?.metadata())
    }

    /// fchmodat(2) (AT_SYMLINK_NOFOLLOW: EOPNOTSUPP on a symlink).
    pub fn fchmodat(&self, cred: &Cred, start: &Path, path: &[u8], mode: u32, flags: u32) -> Result<()> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let p = self.lookup_at(cred, start, path, flags)?;
        if p.metadata().is_symlink() {
            return Err(Errno::EOPNOTSUPP);
        }
        chmod_inode(cred, &p.inode, mode)
    }

    /// fchownat(2); `None` leaves an id unchanged (-1 from user space).
    pub fn fchownat(
        &self,
        cred: &Cred,
        start: &Path,
        path: &[u8],
        uid: Option<u32>,
        gid: Option<u32>,
        flags: u32,
    ) -> Result<()> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let p = self.lookup_at(cred, start, path, flags)?;
        chown_inode(cred, &p.inode, uid, gid)
    }

    /// truncate(2): EISDIR on a directory, EINVAL on other non-regular
    /// files or a negative length, EACCES without write permission.
    pub fn truncate(&self, cred: &Cred, start: &Path, path: &[u8], len: i64) -> Result<()> {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        let p = self.lookup(cred, start, path, true)?;
        let meta = p.metadata();
        if meta.is_dir() {
            return Err(Errno::EISDIR);
        }
        if !meta.is_regular() {
            return Err(Errno::EINVAL);
        }
        may_access(&meta, cred, MAY_WRITE)?;
        p.inode.truncate(len as u64)
    }

    /// utimensat(2) on a path; `now` is the kernel's current time.
    pub fn utimensat(
        &self,
        cred: &Cred,
        start: &Path,
        path: &[u8],
        times: [TimeSpec; 2],
        now: Timespec,
        flags: u32,
    ) -> Result<()> {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let p = self.lookup_at(cred, start, path, flags)?;
        utimes_inode(cred, &p.inode, times, now)
    }
}

/// chmod on an inode (also fchmod): owner or root, else EPERM; a caller
/// outside the file's group loses S_ISGID.
pub fn chmod_inode(cred: &Cred, inode: &Arc<dyn Inode>, mode: u32) -> Result<()> {
    let meta = inode.metadata();
    if !cred.owns(&meta) {
        return Err(Errno::EPERM);
    }
    let mut mode = mode & S_IALLUGO;
    if !cred.is_root() && !cred.in_group(meta.gid) {
        mode &= !S_ISGID;
    }
    inode.chmod(mode)
}

/// chown on an inode (also fchown): only root changes the owner; the
/// owner may change the group to one of its groups; set-user-ID (and
/// set-group-ID with group execute) is cleared on non-directories.
pub fn chown_inode(cred: &Cred, inode: &Arc<dyn Inode>, uid: Option<u32>, gid: Option<u32>) -> Result<()> {
    let meta = inode.metadata();
    if !cred.is_root() {
        if uid.is_some_and(|u| u != meta.uid) {
            return Err(Errno::EPERM);
        }
        if let Some(g) = gid {
            if cred.uid != meta.uid || (g != meta.gid && !cred.in_group(g)) {
                return Err(Errno::EPERM);
            }
        }
    }
    if uid.is_none() && gid.is_none() {
        return Ok(());
    }
    inode.chown(uid, gid)?;
    if !meta.is_dir() && meta.mode & (S_ISUID | S_ISGID) != 0 {
        let mut mode = meta.perm() & !S_ISUID;
        if meta.mode & S_IXGRP != 0 {
            mode &= !S_ISGID;
        }
        inode.chmod(mode)?;
    }
    Ok(())
}

/// utimensat on an inode: setting explicit times needs ownership (EPERM);
/// setting both to now needs ownership or write permission (EACCES).
pub fn utimes_inode(cred: &Cred, inode: &Arc<dyn Inode>, times: [TimeSpec; 2], now: Timespec) -> Result<()> {
    let meta = inode.metadata();
    let all_now = times.iter().all(|t| matches!(t, TimeSpec::Now | TimeSpec::Omit));
    if !cred.owns(&meta) {
        if !all_now {
            return Err(Errno::EPERM);
        }
        may_access(&meta, cred, MAY_WRITE)?;
    }
    let pick = |t: TimeSpec| match t {
        TimeSpec::Now => Some(now),
        TimeSpec::Omit => None,
        TimeSpec::Set(t) => Some(t),
    };
    inode.set_times(pick(times[0]), pick(times[1]))
}

/// execve's check: a regular file with execute permission (EACCES).
pub fn may_exec(cred: &Cred, meta: &Metadata) -> Result<()> {
    if !meta.is_regular() {
        return Err(Errno::EACCES);
    }
    may_access(meta, cred, MAY_EXEC)
}
