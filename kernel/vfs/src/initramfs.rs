//! Populating the root filesystem from the initramfs, as Linux's
//! init/initramfs.c does with each newc cpio entry: directories (mkdir,
//! chown, chmod, and their mtimes set last, once their contents are in),
//! regular files (created or truncated, chown, chmod, data, mtime; hard
//! links by inode number), symbolic links (lchown, mtime) and device,
//! FIFO and socket nodes (mknod, chown, chmod, mtime). An existing entry of
//! another type is removed first (Linux's `clean_path`).
//!
//! One difference: missing parent directories are created (0755, root),
//! where Linux skips an entry whose parent is missing. An entry that cannot
//! be created is skipped and counted, as Linux carries on too.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use uapi::fcntl::*;
use uapi::stat::*;
use uapi::Errno;

use crate::cred::Cred;
use crate::inode::Timespec;
use crate::mount::{Path, Vfs};
use crate::open::TimeSpec;
use crate::Result;

/// One archive member, as a newc reader yields it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InitramfsEntry<'a> {
    /// Path below the root (leading `/` and `./` allowed; `.` is the root).
    pub name: &'a [u8],
    /// Type and permission bits, as `st_mode`.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: u64,
    /// For device nodes.
    pub rdev_major: u32,
    pub rdev_minor: u32,
    /// A regular file's contents or a symlink's target.
    pub data: &'a [u8],
    /// Hard links to one regular file share `ino`, `dev_major`, `dev_minor`
    /// and have `nlink` ≥ 2.
    pub ino: u32,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub nlink: u32,
}

/// What population did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InitramfsStats {
    /// Entries created (or, for existing directories, updated).
    pub created: usize,
    /// Entries that could not be created, or had an unknown type.
    pub skipped: usize,
}

/// Creates the entries in `vfs`'s root filesystem, in order.
pub fn populate_initramfs<'a, I>(vfs: &Vfs, entries: I) -> InitramfsStats
where
    I: IntoIterator<Item = InitramfsEntry<'a>>,
{
    let root = vfs.root();
    let cred = Cred::root();
    let mut stats = InitramfsStats::default();
    let mut links: BTreeMap<(u32, u32, u32), Vec<u8>> = BTreeMap::new();
    let mut dir_times: Vec<(Vec<u8>, u64)> = Vec::new();
    for e in entries {
        let name = normalize(e.name);
        if name == b"TRAILER!!!" {
            break;
        }
        match unpack_one(vfs, &cred, &root, &e, &name, &mut links, &mut dir_times) {
            Ok(()) => stats.created += 1,
            Err(_) => stats.skipped += 1,
        }
    }
    // Creating entries inside a directory changed its mtime: set it last.
    for (name, mtime) in dir_times.iter().rev() {
        let _ = set_mtime(vfs, &cred, &root, name, *mtime, 0);
    }
    stats
}

/// The path relative to the root: leading `/` and `./` removed, `.` for
/// the root itself.
fn normalize(name: &[u8]) -> Vec<u8> {
    let mut n = name;
    loop {
        if let Some(rest) = n.strip_prefix(b"/") {
            n = rest;
        } else if let Some(rest) = n.strip_prefix(b"./") {
            n = rest;
        } else {
            break;
        }
    }
    let n = if n.is_empty() { &b"."[..] } else { n };
    n.iter().position(|&b| b == 0).map_or(n, |i| &n[..i]).to_vec()
}

fn set_mtime(vfs: &Vfs, cred: &Cred, root: &Path, name: &[u8], mtime: u64, flags: u32) -> Result<()> {
    let t = TimeSpec::Set(Timespec::new(mtime as i64, 0));
    vfs.utimensat(cred, root, name, [t, t], Timespec::default(), flags)
}

/// Creates the missing directories above `name`, as Linux's initramfs
/// unpacker does for archives that omit them. An existing one is fine; any
/// other failure is the entry's error.
fn make_parents(vfs: &Vfs, cred: &Cred, root: &Path, name: &[u8]) -> Result<()> {
    for (i, &b) in name.iter().enumerate() {
        if b == b'/' && i > 0 {
            match vfs.mkdirat(cred, root, &name[..i], 0o755, 0) {
                Ok(_) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Linux's `clean_path`: removes an existing entry of another type.
fn clean_path(vfs: &Vfs, cred: &Cred, root: &Path, name: &[u8], mode: u32) {
    if let Ok(meta) = vfs.fstatat(cred, root, name, AT_SYMLINK_NOFOLLOW) {
        if (meta.mode ^ mode) & S_IFMT != 0 {
            let flags = if meta.is_dir() { AT_REMOVEDIR } else { 0 };
            let _ = vfs.unlinkat(cred, root, name, flags);
        }
    }
}

fn unpack_one(
    vfs: &Vfs,
    cred: &Cred,
    root: &Path,
    e: &InitramfsEntry<'_>,
    name: &[u8],
    links: &mut BTreeMap<(u32, u32, u32), Vec<u8>>,
    dir_times: &mut Vec<(Vec<u8>, u64)>,
) -> Result<()> {
    make_parents(vfs, cred, root, name)?;
    if name != b"." {
        clean_path(vfs, cred, root, name, e.mode);
    }
    let perm = e.mode & S_IALLUGO;
    match e.mode & S_IFMT {
        S_IFREG => {
            let mut linked = false;
            if e.nlink >= 2 {
                let key = (e.ino, e.dev_major, e.dev_minor);
                match links.get(&key) {
                    Some(first) => {
                        vfs.linkat(cred, root, first, root, name, 0)?;
                        linked = true;
                    }
                    None => {
                        links.insert(key, name.to_vec());
                    }
                }
            }
            let flags = O_WRONLY | O_CREAT | if linked { 0 } else { O_TRUNC };
            let file = vfs.openat(cred, root, name, flags, perm, 0)?;
            crate::open::chown_inode(cred, file.inode(), Some(e.uid), Some(e.gid))?;
            crate::open::chmod_inode(cred, file.inode(), perm)?;
            let mut done = 0;
            while done < e.data.len() {
                match file.write(&e.data[done..])? {
                    0 => return Err(Errno::EIO),
                    n => done += n,
                }
            }
            drop(file);
            set_mtime(vfs, cred, root, name, e.mtime, 0)
        }
        S_IFDIR => {
            match vfs.mkdirat(cred, root, name, perm, 0) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(err) => return Err(err),
            }
            vfs.fchownat(cred, root, name, Some(e.uid), Some(e.gid), 0)?;
            vfs.fchmodat(cred, root, name, perm, 0)?;
            dir_times.push((name.to_vec(), e.mtime));
            Ok(())
        }
        S_IFLNK => {
            let target = e.data.strip_suffix(b"\0").unwrap_or(e.data);
            vfs.symlinkat(cred, target, root, name)?;
            vfs.fchownat(cred, root, name, Some(e.uid), Some(e.gid), AT_SYMLINK_NOFOLLOW)?;
            set_mtime(vfs, cred, root, name, e.mtime, AT_SYMLINK_NOFOLLOW)
        }
        S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK => {
            let dev = makedev(e.rdev_major, e.rdev_minor);
            vfs.mknodat(cred, root, name, e.mode, dev, 0)?;
            vfs.fchownat(cred, root, name, Some(e.uid), Some(e.gid), 0)?;
            vfs.fchmodat(cred, root, name, perm, 0)?;
            set_mtime(vfs, cred, root, name, e.mtime, 0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Populates from a newc archive in memory; stops at the first malformed
/// entry and returns the reader's error with what was done until then.
pub fn populate_from_cpio(
    vfs: &Vfs,
    archive: &[u8],
) -> core::result::Result<InitramfsStats, (cpio::Error, InitramfsStats)> {
    let mut error = None;
    let entries = cpio::Archive::new(archive).entries().map_while(|r| match r {
        Ok(e) => Some(e),
        Err(err) => {
            error = Some(err);
            None
        }
    });
    let stats = populate_initramfs(
        vfs,
        entries.map(|e| InitramfsEntry {
            name: e.name.as_bytes(),
            mode: e.mode,
            uid: e.uid,
            gid: e.gid,
            mtime: e.mtime as u64,
            rdev_major: e.rdev_major,
            rdev_minor: e.rdev_minor,
            data: e.data,
            ino: e.ino,
            dev_major: e.dev_major,
            dev_minor: e.dev_minor,
            nlink: e.nlink,
        }),
    );
    match error {
        Some(err) => Err((err, stats)),
        None => Ok(stats),
    }
}
