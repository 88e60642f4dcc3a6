//! Path lookup with Linux's `namei` rules, and the operations on names:
//! mkdirat, mknodat, symlinkat, linkat, unlinkat, renameat2, readlinkat.
//!
//! The walk follows fs/namei.c: search permission on every directory
//! passed through (the last component's parent included), `.` and `..`
//! (`..` leaves a mount root for its mountpoint and stops at `/`),
//! symbolic links followed in intermediate components always and in the
//! last one when asked or when the path ends in `/`, at most
//! [`MAXSYMLINKS`] per lookup (ELOOP after), trailing slashes requiring a
//! directory. The walk is iterative, with symlink bodies on a heap stack,
//! so nested links cost no kernel stack.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use uapi::fcntl::*;
use uapi::stat::*;
use uapi::{Errno, MAXSYMLINKS, NAME_MAX, PATH_MAX};

use crate::cred::{may_access, Cred, MAY_EXEC, MAY_WRITE};
use crate::dentry::{dput_named, Dentry};
use crate::inode::{Inode, Metadata, NodeKind};
use crate::mount::{Path, Vfs};
use crate::Result;

/// What the last component of a path is (Linux's `LAST_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Last {
    Norm(Vec<u8>),
    Dot,
    DotDot,
    /// The path was `/` (or only slashes).
    Root,
}

/// A path split at its last component: the directory it lives in (fully
/// resolved) and the component itself, not yet looked up.
pub(crate) struct Parent {
    pub dir: Path,
    /// The name `dir` is known by (the starting directory's own name,
    /// `/` for the root, `..` after a `..`), for `dput`.
    pub dir_name: Vec<u8>,
    pub last: Last,
    /// The path ended in `/`.
    pub trailing_slash: bool,
}

/// Cuts `path` at its first NUL (the kernel hands over C strings) and
/// applies getname's checks: empty → ENOENT, PATH_MAX or longer →
/// ENAMETOOLONG.
pub(crate) fn check_path(path: &[u8]) -> Result<&[u8]> {
    let path = match path.iter().position(|&b| b == 0) {
        Some(n) => &path[..n],
        None => path,
    };
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(path)
}

/// Releases a path reference the lookup held (Linux's `dput(dentry)`; with
/// no dentry cache, the closest analogue is the walk letting go of the
/// directory it stepped out of, of the parent once the last component is
/// found, and an open file's path when it closes). x0 points at the
/// [`Dentry`]: its name first (`%pd` reads it), then the path whose
/// reference counts drop here.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[allow(improper_ctypes_definitions)] // only probes look inside; Rust calls it
#[no_mangle]
#[inline(never)]
pub extern "C" fn dput(dentry: Dentry) {
    drop(dentry);
}

/// One lookup's state, as Linux's `struct nameidata`.
pub(crate) struct NameiData<'a> {
    pub vfs: &'a Vfs,
    pub cred: &'a Cred,
    root: Path,
    links: u32,
}

impl<'a> NameiData<'a> {
    pub fn new(vfs: &'a Vfs, cred: &'a Cred) -> Self {
        NameiData {
            vfs,
            cred,
            root: vfs.root(),
            links: 0,
        }
    }

    /// Walks all but the last component of `path` from `start`.
    pub fn walk_parent(&mut self, start: &Path, path: &[u8]) -> Result<Parent> {
        let (mut cur, mut cur_name) = if path.first() == Some(&b'/') {
            (self.root.clone(), b"/".to_vec())
        } else {
            (start.clone(), start.d_name())
        };
        if !cur.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        // Each frame is a path (the original or a link body) and how far
        // it has been consumed.
        let mut frames: Vec<(Vec<u8>, usize)> = vec![(path.to_vec(), 0)];
        loop {
            let Some((bytes, pos)) = frames.last_mut() else {
                // Only reached when the path was all slashes.
                return Ok(Parent {
                    dir: cur,
                    dir_name: cur_name,
                    last: Last::Root,
                    trailing_slash: false,
                });
            };
            while *pos < bytes.len() && bytes[*pos] == b'/' {
                *pos += 1;
            }
            if *pos == bytes.len() {
                frames.pop();
                if frames.is_empty() {
                    return Ok(Parent {
                        dir: cur,
                        dir_name: cur_name,
                        last: Last::Root,
                        trailing_slash: false,
                    });
                }
                continue;
            }
            let begin = *pos;
            while *pos < bytes.len() && bytes[*pos] != b'/' {
                *pos += 1;
            }
            let name = bytes[begin..*pos].to_vec();
            let trailing_slash = *pos < bytes.len();
            while *pos < bytes.len() && bytes[*pos] == b'/' {
                *pos += 1;
            }
            if *pos == bytes.len() {
                frames.pop();
            }
            may_access(&cur.metadata(), self.cred, MAY_EXEC)?;
            let last = match &name[..] {
                b"." => Last::Dot,
                b".." => Last::DotDot,
                _ => Last::Norm(name),
            };
            if frames.is_empty() {
                return Ok(Parent {
                    dir: cur,
                    dir_name: cur_name,
                    last,
                    trailing_slash,
                });
            }
            match last {
                Last::Dot | Last::Root => {}
                Last::DotDot => {
                    let up = self.vfs.dotdot(&cur);
                    dput_named(&cur_name, core::mem::replace(&mut cur, up));
                    cur_name.clear();
                    cur_name.extend_from_slice(b"..");
                }
                Last::Norm(name) => {
                    let child = self.lookup_child(&cur, &name)?;
                    let meta = child.metadata();
                    if meta.is_symlink() {
                        let body = self.link_body(&child)?;
                        if body[0] == b'/' {
                            dput_named(&cur_name, core::mem::replace(&mut cur, self.root.clone()));
                            cur_name.clear();
                            cur_name.push(b'/');
                        }
                        frames.push((body, 0));
                    } else if meta.is_dir() {
                        dput_named(&cur_name, core::mem::replace(&mut cur, child));
                        cur_name.clear();
                        cur_name.extend_from_slice(&name);
                    } else {
                        return Err(Errno::ENOTDIR);
                    }
                }
            }
        }
    }

    /// Counts one more link followed and reads its body (ELOOP past
    /// MAXSYMLINKS, ENOENT for an empty body).
    pub fn link_body(&mut self, link: &Path) -> Result<Vec<u8>> {
        self.links += 1;
        if self.links > MAXSYMLINKS {
            return Err(Errno::ELOOP);
        }
        let body = link.inode.readlink()?;
        if body.is_empty() {
            return Err(Errno::ENOENT);
        }
        Ok(body)
    }

    /// Looks `name` up in `dir` and crosses into whatever is mounted there.
    pub fn lookup_child(&self, dir: &Path, name: &[u8]) -> Result<Path> {
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let inode = dir.inode.lookup(name)?;
        Ok(self.vfs.follow_mounts(Path {
            mnt: dir.mnt.clone(),
            inode,
        }))
    }

    /// The last component of `p` without crossing into a filesystem
    /// mounted on it, as unlink, rmdir and rename see it (Linux's
    /// `lookup_one_qstr_excl`); `Ok(None)` if it does not exist.
    pub fn lookup_last_entry(&self, p: &Parent) -> Result<Option<Path>> {
        match &p.last {
            Last::Norm(name) => {
                if name.len() > NAME_MAX {
                    return Err(Errno::ENAMETOOLONG);
                }
                match p.dir.inode.lookup(name) {
                    Ok(inode) => Ok(Some(Path {
                        mnt: p.dir.mnt.clone(),
                        inode,
                    })),
                    Err(Errno::ENOENT) => Ok(None),
                    Err(e) => Err(e),
                }
            }
            _ => self.lookup_last(p),
        }
    }

    /// Resolves the last component of `p`; `Ok(None)` if it does not exist.
    pub fn lookup_last(&self, p: &Parent) -> Result<Option<Path>> {
        match &p.last {
            Last::Root | Last::Dot => Ok(Some(p.dir.clone())),
            Last::DotDot => Ok(Some(self.vfs.dotdot(&p.dir))),
            Last::Norm(name) => match self.lookup_child(&p.dir, name) {
                Ok(c) => Ok(Some(c)),
                Err(Errno::ENOENT) => Ok(None),
                Err(e) => Err(e),
            },
        }
    }

    /// Resolves a whole path. `follow`: follow a symlink in the last
    /// component (a trailing slash does so regardless).
    pub fn resolve(&mut self, start: &Path, path: &[u8], follow: bool) -> Result<Path> {
        let mut p = self.walk_parent(start, path)?;
        let mut must_dir = p.trailing_slash;
        loop {
            let node = self.lookup_last(&p)?.ok_or(Errno::ENOENT)?;
            let meta = node.metadata();
            if meta.is_symlink() && (follow || must_dir) {
                let body = self.link_body(&node)?;
                p = self.walk_parent(&p.dir, &body)?;
                must_dir |= p.trailing_slash;
                continue;
            }
            if must_dir && !meta.is_dir() {
                return Err(Errno::ENOTDIR);
            }
            return Ok(node);
        }
    }
}

/// Linux's `may_create`: write and search permission on the directory.
pub(crate) fn may_create(dir: &Metadata, cred: &Cred) -> Result<()> {
    if dir.nlink == 0 {
        return Err(Errno::ENOENT);
    }
    may_access(dir, cred, MAY_WRITE | MAY_EXEC)
}

/// Linux's `may_delete` permission part: write and search permission on
/// the directory, and the sticky bit's restriction.
pub(crate) fn may_delete(dir: &Metadata, victim: &Metadata, cred: &Cred) -> Result<()> {
    may_access(dir, cred, MAY_WRITE | MAY_EXEC)?;
    if dir.mode & S_ISVTX != 0 && !cred.is_root() && cred.uid != victim.uid && cred.uid != dir.uid {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// Owner and group for a new inode in `dir` (Linux's `inode_init_owner`):
/// the caller's fsuid, and the directory's group if it is set-group-ID.
/// Returns the permission bits too, keeping S_ISGID on new directories.
pub(crate) fn new_owner(dir: &Metadata, cred: &Cred, perm: u32, is_dir: bool) -> (u32, u32, u32) {
    if dir.mode & S_ISGID != 0 {
        let perm = if is_dir { perm | S_ISGID } else { perm };
        (cred.uid, dir.gid, perm)
    } else {
        (cred.uid, cred.gid, perm)
    }
}

fn is_mountpoint(vfs: &Vfs, p: &Path) -> bool {
    vfs.mounts().iter().any(|m| m.mountpoint().is_some_and(|mp| mp.same(p)))
}

impl Vfs {
    /// Resolves `path` from `start` (the cwd or a directory fd's path; an
    /// absolute path ignores it). `follow`: follow a final symlink.
    pub fn lookup(&self, cred: &Cred, start: &Path, path: &[u8], follow: bool) -> Result<Path> {
        let path = check_path(path)?;
        NameiData::new(self, cred).resolve(start, path, follow)
    }

    /// chdir(2)'s lookup: a directory the caller may search.
    pub fn lookup_dir(&self, cred: &Cred, start: &Path, path: &[u8]) -> Result<Path> {
        let p = self.lookup(cred, start, path, true)?;
        let meta = p.metadata();
        if !meta.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        may_access(&meta, cred, MAY_EXEC)?;
        Ok(p)
    }

    /// Linux's `filename_create`: the parent and name for a new entry;
    /// EEXIST if it exists, ENOENT for a trailing slash unless `is_dir`.
    fn filename_create(
        &self,
        nd: &mut NameiData<'_>,
        start: &Path,
        path: &[u8],
        is_dir: bool,
    ) -> Result<(Path, Vec<u8>)> {
        let path = check_path(path)?;
        let p = nd.walk_parent(start, path)?;
        let Last::Norm(name) = &p.last else {
            return Err(Errno::EEXIST);
        };
        if nd.lookup_last(&p)?.is_some() {
            return Err(Errno::EEXIST);
        }
        if p.trailing_slash && !is_dir {
            return Err(Errno::ENOENT);
        }
        Ok((p.dir, name.clone()))
    }

    /// mkdirat(2): `mode & !umask` (and 0o1777), set-group-ID inherited.
    pub fn mkdirat(&self, cred: &Cred, start: &Path, path: &[u8], mode: u32, umask: u32) -> Result<()> {
        let mut nd = NameiData::new(self, cred);
        let (dir, name) = self.filename_create(&mut nd, start, path, true)?;
        let dmeta = dir.metadata();
        may_create(&dmeta, cred)?;
        let (uid, gid, perm) = new_owner(&dmeta, cred, mode & !umask & 0o1777, true);
        dir.inode.create(&name, NodeKind::Directory, perm, uid, gid)?;
        Ok(())
    }

    /// mknodat(2): regular files, FIFOs, sockets, and (privileged) device
    /// nodes; `dev` as `makedev` encodes it.
    pub fn mknodat(&self, cred: &Cred, start: &Path, path: &[u8], mode: u32, dev: u64, umask: u32) -> Result<()> {
        let (major, minor) = (major(dev), minor(dev));
        let kind = match mode & S_IFMT {
            0 | S_IFREG => NodeKind::Regular,
            S_IFCHR => NodeKind::CharDevice { major, minor },
            S_IFBLK => NodeKind::BlockDevice { major, minor },
            S_IFIFO => NodeKind::Fifo,
            S_IFSOCK => NodeKind::Socket,
            S_IFDIR => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        };
        let mut nd = NameiData::new(self, cred);
        let (dir, name) = self.filename_create(&mut nd, start, path, false)?;
        let dmeta = dir.metadata();
        may_create(&dmeta, cred)?;
        if matches!(kind, NodeKind::CharDevice { .. } | NodeKind::BlockDevice { .. }) && !cred.is_root() {
            return Err(Errno::EPERM);
        }
        let (uid, gid, perm) = new_owner(&dmeta, cred, mode & !umask & S_IALLUGO, false);
        dir.inode.create(&name, kind, perm, uid, gid)?;
        Ok(())
    }

    /// symlinkat(2): a link at `path` whose body is `target`.
    pub fn symlinkat(&self, cred: &Cred, target: &[u8], start: &Path, path: &[u8]) -> Result<()> {
        let target = check_path(target)?;
        let mut nd = NameiData::new(self, cred);
        let (dir, name) = self.filename_create(&mut nd, start, path, false)?;
        let dmeta = dir.metadata();
        may_create(&dmeta, cred)?;
        let (uid, gid, _) = new_owner(&dmeta, cred, 0o777, false);
        dir.inode.create(&name, NodeKind::Symlink(target), 0o777, uid, gid)?;
        Ok(())
    }

    /// linkat(2): `flags` may hold AT_SYMLINK_FOLLOW and AT_EMPTY_PATH.
    pub fn linkat(
        &self,
        cred: &Cred,
        old_start: &Path,
        old_path: &[u8],
        new_start: &Path,
        new_path: &[u8],
        flags: u32,
    ) -> Result<()> {
        if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let old = if flags & AT_EMPTY_PATH != 0 && old_path.first().is_none_or(|&b| b == 0) {
            old_start.clone()
        } else {
            self.lookup(cred, old_start, old_path, flags & AT_SYMLINK_FOLLOW != 0)?
        };
        let mut nd = NameiData::new(self, cred);
        let (dir, name) = self.filename_create(&mut nd, new_start, new_path, false)?;
        if dir.mnt.id() != old.mnt.id() {
            return Err(Errno::EXDEV);
        }
        may_create(&dir.metadata(), cred)?;
        if old.is_dir() {
            return Err(Errno::EPERM);
        }
        dir.inode.link(&name, &old.inode)
    }

    /// unlinkat(2); `flags` may hold AT_REMOVEDIR.
    pub fn unlinkat(&self, cred: &Cred, start: &Path, path: &[u8], flags: u32) -> Result<()> {
        if flags & !AT_REMOVEDIR != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & AT_REMOVEDIR != 0 {
            return self.rmdir(cred, start, path);
        }
        let path = check_path(path)?;
        let mut nd = NameiData::new(self, cred);
        let p = nd.walk_parent(start, path)?;
        let Last::Norm(name) = &p.last else {
            return Err(Errno::EISDIR);
        };
        let victim = nd.lookup_last(&p)?.ok_or(Errno::ENOENT)?;
        let vmeta = victim.metadata();
        if p.trailing_slash {
            return Err(if vmeta.is_dir() { Errno::EISDIR } else { Errno::ENOTDIR });
        }
        may_delete(&p.dir.metadata(), &vmeta, cred)?;
        if vmeta.is_dir() {
            return Err(Errno::EISDIR);
        }
        if is_mountpoint(self, &victim) {
            return Err(Errno::EBUSY);
        }
        p.dir.inode.unlink(name)
    }

    fn rmdir(&self, cred: &Cred, start: &Path, path: &[u8]) -> Result<()> {
        let path = check_path(path)?;
        let mut nd = NameiData::new(self, cred);
        let p = nd.walk_parent(start, path)?;
        let name = match &p.last {
            Last::Norm(name) => name,
            Last::Dot => return Err(Errno::EINVAL),
            Last::DotDot => return Err(Errno::ENOTEMPTY),
            Last::Root => return Err(Errno::EBUSY),
        };
        let victim = nd.lookup_last_entry(&p)?.ok_or(Errno::ENOENT)?;
        let vmeta = victim.metadata();
        may_delete(&p.dir.metadata(), &vmeta, cred)?;
        if !vmeta.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if is_mountpoint(self, &victim) {
            return Err(Errno::EBUSY);
        }
        p.dir.inode.rmdir(name)
    }

    /// renameat2(2); `flags` may hold RENAME_NOREPLACE (RENAME_EXCHANGE
    /// and RENAME_WHITEOUT are not supported: EINVAL).
    pub fn renameat2(
        &self,
        cred: &Cred,
        old_start: &Path,
        old_path: &[u8],
        new_start: &Path,
        new_path: &[u8],
        flags: u32,
    ) -> Result<()> {
        if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0
            || flags & (RENAME_EXCHANGE | RENAME_WHITEOUT) != 0
        {
            return Err(Errno::EINVAL);
        }
        let (old_path, new_path) = (check_path(old_path)?, check_path(new_path)?);
        let mut nd = NameiData::new(self, cred);
        let old = nd.walk_parent(old_start, old_path)?;
        let new = nd.walk_parent(new_start, new_path)?;
        if old.dir.mnt.id() != new.dir.mnt.id() {
            return Err(Errno::EXDEV);
        }
        let Last::Norm(old_name) = &old.last else {
            return Err(Errno::EBUSY);
        };
        if flags & RENAME_NOREPLACE != 0 && !matches!(new.last, Last::Norm(_)) {
            return Err(Errno::EEXIST);
        }
        let Last::Norm(new_name) = &new.last else {
            return Err(Errno::EBUSY);
        };
        let src = nd.lookup_last_entry(&old)?.ok_or(Errno::ENOENT)?;
        let smeta = src.metadata();
        if (old.trailing_slash || new.trailing_slash) && !smeta.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let dst = nd.lookup_last_entry(&new)?;
        if flags & RENAME_NOREPLACE != 0 && dst.is_some() {
            return Err(Errno::EEXIST);
        }
        if let Some(dst) = &dst {
            if dst.inode.ino() == src.inode.ino() {
                return Ok(());
            }
        }
        // The source may not become its own descendant.
        if smeta.is_dir() && is_ancestor(&src.inode, &new.dir.inode) {
            return Err(Errno::EINVAL);
        }
        may_delete(&old.dir.metadata(), &smeta, cred)?;
        let ndmeta = new.dir.metadata();
        match &dst {
            Some(dst) => {
                let dmeta = dst.metadata();
                may_delete(&ndmeta, &dmeta, cred)?;
                match (smeta.is_dir(), dmeta.is_dir()) {
                    (true, false) => return Err(Errno::ENOTDIR),
                    (false, true) => return Err(Errno::EISDIR),
                    _ => {}
                }
                if is_mountpoint(self, dst) {
                    return Err(Errno::EBUSY);
                }
            }
            None => may_create(&ndmeta, cred)?,
        }
        if is_mountpoint(self, &src) {
            return Err(Errno::EBUSY);
        }
        // Moving a directory rewrites its `..`.
        if smeta.is_dir() && old.dir.inode.ino() != new.dir.inode.ino() {
            may_access(&smeta, cred, MAY_WRITE)?;
        }
        old.dir.inode.rename(old_name, &new.dir.inode, new_name, flags)
    }

    /// readlinkat(2): the body of the symlink at `path`.
    pub fn readlinkat(&self, cred: &Cred, start: &Path, path: &[u8]) -> Result<Vec<u8>> {
        let p = self.lookup(cred, start, path, false)?;
        p.inode.readlink()
    }
}

/// Whether `a` is `b` or an ancestor of `b` (within one filesystem).
fn is_ancestor(a: &Arc<dyn Inode>, b: &Arc<dyn Inode>) -> bool {
    let mut cur = b.clone();
    loop {
        if cur.ino() == a.ino() {
            return true;
        }
        match cur.parent() {
            Some(p) if p.ino() != cur.ino() => cur = p,
            _ => return false,
        }
    }
}
