//! procfs: a pseudo-filesystem whose directories and files the kernel
//! generates on demand through a [`ProcProvider`].
//!
//! The root lists the provider's top-level entries (`kallsyms`, `mounts`,
//! ...), a directory per pid, and `self`, a symlink to the caller's pid.
//! Below `/proc/<pid>` the provider lists what it likes (files, symlinks,
//! nested directories such as `fd`). A file's contents are generated when
//! it is opened, so a reader sees one consistent snapshot, and its size
//! reads as 0, as on Linux.

use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use uapi::stat::*;
use uapi::Errno;

use crate::file::{FileOps, OpenFile};
use crate::inode::{alloc_anon_dev, Clock, DirEntry, FileSystem, FileType, Inode, Metadata};
use crate::Result;

/// Which part of /proc a name is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcScope {
    /// Directly under /proc (not a pid directory).
    Root,
    /// Under `/proc/<pid>`.
    Pid(u32),
}

/// The type of a generated entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcKind {
    File,
    Dir,
    Symlink,
}

/// One generated directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcEntry {
    pub name: Vec<u8>,
    pub kind: ProcKind,
    /// Permission bits (e.g. 0o444, 0o555, 0o777).
    pub perm: u32,
}

impl ProcEntry {
    pub fn file(name: &[u8], perm: u32) -> Self {
        ProcEntry {
            name: name.to_vec(),
            kind: ProcKind::File,
            perm,
        }
    }

    pub fn dir(name: &[u8]) -> Self {
        ProcEntry {
            name: name.to_vec(),
            kind: ProcKind::Dir,
            perm: 0o555,
        }
    }

    pub fn symlink(name: &[u8]) -> Self {
        ProcEntry {
            name: name.to_vec(),
            kind: ProcKind::Symlink,
            perm: 0o777,
        }
    }
}

/// What the kernel implements to fill /proc. `rel` is a path below the
/// scope's directory, components joined by `/`, empty for the directory
/// itself (`b"stat"`, `b"fd"`, `b"fd/3"`).
pub trait ProcProvider: Send + Sync {
    /// The live processes, for listing /proc.
    fn pids(&self) -> Vec<u32>;

    /// The caller's pid, the target of `/proc/self`; `None` outside a task.
    fn current_pid(&self) -> Option<u32>;

    /// The owner of `/proc/<pid>`'s entries; `None` if there is no such
    /// process (its directory then does not exist).
    fn pid_owner(&self, pid: u32) -> Option<(u32, u32)>;

    /// The entries of directory `rel` in `scope` (ENOENT if none).
    fn list(&self, scope: ProcScope, rel: &[u8]) -> Result<Vec<ProcEntry>>;

    /// The contents of file `rel`, generated at open.
    fn read(&self, scope: ProcScope, rel: &[u8]) -> Result<Vec<u8>>;

    /// A write to file `rel` (EACCES unless the kernel supports it).
    fn write(&self, _scope: ProcScope, _rel: &[u8], _data: &[u8]) -> Result<usize> {
        Err(Errno::EACCES)
    }

    /// The target of symlink `rel` (e.g. `/proc/<pid>/exe`, `fd/3`).
    fn readlink(&self, _scope: ProcScope, _rel: &[u8]) -> Result<Vec<u8>> {
        Err(Errno::EINVAL)
    }

    /// The operations of file `rel` when the kernel serves its reads and
    /// writes itself instead of a snapshot taken at open (`mem`, whose
    /// offsets are addresses); `None` for a snapshot file.
    fn open_file(&self, _scope: ProcScope, _rel: &[u8], _flags: u32) -> Result<Option<Arc<dyn FileOps>>> {
        Ok(None)
    }
}

struct Core {
    dev: u64,
    clock: Arc<dyn Clock>,
    provider: Arc<dyn ProcProvider>,
}

/// A procfs instance (mount it on `/proc`).
pub struct ProcFs {
    core: Arc<Core>,
}

impl ProcFs {
    pub fn new(provider: Arc<dyn ProcProvider>, clock: Arc<dyn Clock>) -> Arc<ProcFs> {
        Arc::new(ProcFs {
            core: Arc::new(Core {
                dev: alloc_anon_dev(),
                clock,
                provider,
            }),
        })
    }
}

impl FileSystem for ProcFs {
    fn root(&self) -> Arc<dyn Inode> {
        Arc::new(ProcInode {
            core: self.core.clone(),
            node: Node::Root,
        })
    }

    fn fs_type(&self) -> &'static str {
        "proc"
    }

    fn magic(&self) -> u64 {
        uapi::magic::PROC_SUPER_MAGIC
    }

    fn dev(&self) -> u64 {
        self.core.dev
    }
}

const ROOT_INO: u64 = 1;
const SELF_INO: u64 = 2;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Root,
    SelfLink,
    /// An entry of a scope; a pid directory itself is `Pid(p)` with empty
    /// `rel`.
    Entry {
        scope: ProcScope,
        rel: Vec<u8>,
        kind: ProcKind,
        perm: u32,
    },
}

struct ProcInode {
    core: Arc<Core>,
    node: Node,
}

fn parse_pid(name: &[u8]) -> Option<u32> {
    if name.is_empty() || name.len() > 10 || (name[0] == b'0') || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(name).ok()?.parse().ok()
}

fn join(rel: &[u8], name: &[u8]) -> Vec<u8> {
    let mut v = rel.to_vec();
    if !v.is_empty() {
        v.push(b'/');
    }
    v.extend_from_slice(name);
    v
}

/// A stable inode number from a scope and a relative path (FNV-1a), kept
/// clear of the fixed numbers.
fn hash_ino(scope: ProcScope, rel: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let seed = match scope {
        ProcScope::Root => 0u64,
        ProcScope::Pid(p) => p as u64 + 1,
    };
    for b in seed.to_le_bytes().iter().chain(rel) {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h | (1 << 40)
}

impl ProcInode {
    fn provider(&self) -> &dyn ProcProvider {
        &*self.core.provider
    }

    fn child(&self, node: Node) -> Arc<dyn Inode> {
        Arc::new(ProcInode {
            core: self.core.clone(),
            node,
        })
    }

    /// The entries of this directory (without `.` and `..`).
    fn entries(&self) -> Result<Vec<(u64, Vec<u8>, FileType)>> {
        let ft = |k: ProcKind| match k {
            ProcKind::File => FileType::Regular,
            ProcKind::Dir => FileType::Directory,
            ProcKind::Symlink => FileType::Symlink,
        };
        match &self.node {
            Node::Root => {
                let mut v: Vec<_> = self
                    .provider()
                    .list(ProcScope::Root, b"")?
                    .into_iter()
                    .map(|e| (hash_ino(ProcScope::Root, &e.name), e.name, ft(e.kind)))
                    .collect();
                v.push((SELF_INO, b"self".to_vec(), FileType::Symlink));
                for pid in self.provider().pids() {
                    v.push((
                        hash_ino(ProcScope::Pid(pid), b""),
                        format!("{pid}").into_bytes(),
                        FileType::Directory,
                    ));
                }
                Ok(v)
            }
            Node::Entry {
                scope,
                rel,
                kind: ProcKind::Dir,
                ..
            } => Ok(self
                .provider()
                .list(*scope, rel)?
                .into_iter()
                .map(|e| {
                    let path = join(rel, &e.name);
                    (hash_ino(*scope, &path), e.name, ft(e.kind))
                })
                .collect()),
            _ => Err(Errno::ENOTDIR),
        }
    }
}

impl Inode for ProcInode {
    fn metadata(&self) -> Metadata {
        let now = self.core.clock.now();
        let (mode, nlink, uid, gid) = match &self.node {
            Node::Root => (S_IFDIR | 0o555, 2, 0, 0),
            Node::SelfLink => (S_IFLNK | 0o777, 1, 0, 0),
            Node::Entry { scope, kind, perm, .. } => {
                let (uid, gid) = match scope {
                    ProcScope::Pid(p) => self.provider().pid_owner(*p).unwrap_or((0, 0)),
                    ProcScope::Root => (0, 0),
                };
                let (t, n) = match kind {
                    ProcKind::File => (S_IFREG, 1),
                    ProcKind::Dir => (S_IFDIR, 2),
                    ProcKind::Symlink => (S_IFLNK, 1),
                };
                (t | perm, n, uid, gid)
            }
        };
        Metadata {
            dev: self.core.dev,
            ino: self.ino(),
            mode,
            nlink,
            uid,
            gid,
            blksize: 1024,
            atime: now,
            mtime: now,
            ctime: now,
            ..Metadata::default()
        }
    }

    fn ino(&self) -> u64 {
        match &self.node {
            Node::Root => ROOT_INO,
            Node::SelfLink => SELF_INO,
            Node::Entry { scope, rel, .. } => hash_ino(*scope, rel),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// O_TRUNC on a proc file (`echo 1 > /proc/sys/...` opens so): the
    /// size change is accepted and changes nothing, as Linux's
    /// proc_setattr and proc_sys_setattr.
    fn truncate(&self, _size: u64) -> Result<()> {
        match &self.node {
            Node::Entry {
                kind: ProcKind::File, ..
            } => Ok(()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Inode>> {
        match &self.node {
            Node::Root => {
                if name == b"self" {
                    return Ok(self.child(Node::SelfLink));
                }
                if let Some(pid) = parse_pid(name) {
                    return match self.provider().pid_owner(pid) {
                        Some(_) => Ok(self.child(Node::Entry {
                            scope: ProcScope::Pid(pid),
                            rel: Vec::new(),
                            kind: ProcKind::Dir,
                            perm: 0o555,
                        })),
                        None => Err(Errno::ENOENT),
                    };
                }
                let e = self
                    .provider()
                    .list(ProcScope::Root, b"")?
                    .into_iter()
                    .find(|e| e.name == name);
                let e = e.ok_or(Errno::ENOENT)?;
                Ok(self.child(Node::Entry {
                    scope: ProcScope::Root,
                    rel: e.name,
                    kind: e.kind,
                    perm: e.perm,
                }))
            }
            Node::Entry {
                scope,
                rel,
                kind: ProcKind::Dir,
                ..
            } => {
                let e = self.provider().list(*scope, rel)?.into_iter().find(|e| e.name == name);
                let e = e.ok_or(Errno::ENOENT)?;
                Ok(self.child(Node::Entry {
                    scope: *scope,
                    rel: join(rel, &e.name),
                    kind: e.kind,
                    perm: e.perm,
                }))
            }
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn parent(&self) -> Option<Arc<dyn Inode>> {
        let Node::Entry {
            scope,
            rel,
            kind: ProcKind::Dir,
            ..
        } = &self.node
        else {
            return matches!(self.node, Node::Root).then(|| self.child(Node::Root));
        };
        if rel.is_empty() {
            return Some(self.child(Node::Root));
        }
        let up = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => rel[..i].to_vec(),
            None => Vec::new(),
        };
        if up.is_empty() && *scope == ProcScope::Root {
            return Some(self.child(Node::Root));
        }
        Some(self.child(Node::Entry {
            scope: *scope,
            rel: up,
            kind: ProcKind::Dir,
            perm: 0o555,
        }))
    }

    fn readdir(&self, cursor: u64) -> Result<Option<(DirEntry, u64)>> {
        let dot = |ino, name: &[u8]| DirEntry {
            ino,
            name: name.to_vec(),
            file_type: FileType::Directory,
        };
        match cursor {
            0 => {
                self.entries()?;
                Ok(Some((dot(self.ino(), b"."), 1)))
            }
            1 => {
                let parent = self.parent().map_or(self.ino(), |p| p.ino());
                Ok(Some((dot(parent, b".."), 2)))
            }
            n => {
                let entries = self.entries()?;
                Ok(entries
                    .into_iter()
                    .nth((n - 2) as usize)
                    .map(|(ino, name, file_type)| (DirEntry { ino, name, file_type }, n + 1)))
            }
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let Node::Entry {
            scope,
            rel,
            kind: ProcKind::File,
            ..
        } = &self.node
        else {
            return Err(Errno::EISDIR);
        };
        let data = self.provider().read(*scope, rel)?;
        Ok(copy_at(&data, offset, buf))
    }

    fn readlink(&self) -> Result<Vec<u8>> {
        match &self.node {
            Node::SelfLink => {
                let pid = self.provider().current_pid().ok_or(Errno::ENOENT)?;
                Ok(format!("{pid}").into_bytes())
            }
            Node::Entry {
                scope,
                rel,
                kind: ProcKind::Symlink,
                ..
            } => self.provider().readlink(*scope, rel),
            _ => Err(Errno::EINVAL),
        }
    }

    fn open(&self, flags: u32) -> Result<Option<Arc<dyn FileOps>>> {
        match &self.node {
            Node::Entry {
                scope,
                rel,
                kind: ProcKind::File,
                perm,
            } => {
                if let Some(ops) = self.provider().open_file(*scope, rel, flags)? {
                    return Ok(Some(ops));
                }
                let data = self.provider().read(*scope, rel)?;
                Ok(Some(Arc::new(Snapshot {
                    data,
                    core: self.core.clone(),
                    scope: *scope,
                    rel: rel.clone(),
                    writable: *scope == ProcScope::Root || *perm & 0o222 != 0,
                })))
            }
            _ => Ok(None),
        }
    }
}

fn copy_at(data: &[u8], offset: u64, buf: &mut [u8]) -> usize {
    let Ok(off) = usize::try_from(offset) else { return 0 };
    if off >= data.len() {
        return 0;
    }
    let n = buf.len().min(data.len() - off);
    buf[..n].copy_from_slice(&data[off..off + n]);
    n
}

/// An open /proc file: the contents generated at open (Linux's seq_file
/// gives the same effect for small files).
struct Snapshot {
    data: Vec<u8>,
    core: Arc<Core>,
    scope: ProcScope,
    rel: Vec<u8>,
    /// Whether Linux's file has a write operation (FMODE_CAN_WRITE): the
    /// files directly under /proc and /proc/sys always do (`proc_reg_write`,
    /// `proc_sys_write`, which refuse the bytes themselves); a per-process
    /// file does when its mode lets it be written (`comm`, not `stat`).
    writable: bool,
}

impl FileOps for Snapshot {
    fn can_write(&self) -> bool {
        self.writable
    }

    fn read(&self, _: &OpenFile, buf: &mut [u8], pos: &mut u64) -> Result<usize> {
        let n = copy_at(&self.data, *pos, buf);
        *pos += n as u64;
        Ok(n)
    }

    fn write(&self, _: &OpenFile, buf: &[u8], _: &mut u64) -> Result<usize> {
        self.core.provider.write(self.scope, &self.rel, buf)
    }

    /// As Linux 6.12: the files made with `proc_create_single` or
    /// `proc_create_seq`, `mounts` and the /proc/sys files have
    /// `read_iter`; `kallsyms`, `slabinfo` and the per-process files
    /// (`stat`, `status`, `maps`, `comm`, ...) only `read`.
    fn has_read_iter(&self) -> bool {
        match self.scope {
            ProcScope::Root => {
                self.rel.starts_with(b"sys/")
                    || matches!(
                        &self.rel[..],
                        b"cpuinfo" | b"interrupts" | b"loadavg" | b"meminfo" | b"mounts" | b"uptime" | b"version"
                    )
            }
            ProcScope::Pid(_) => self.rel == b"mounts",
        }
    }

    /// Every /proc file with a write method is handed empty writes too.
    fn writes_empty(&self) -> bool {
        true
    }

    /// Only /proc/sys files write with `write_iter` (`proc_sys_write`).
    fn has_write_iter(&self) -> bool {
        self.scope == ProcScope::Root && self.rel.starts_with(b"sys/")
    }

    /// As Linux: `cmdline` (and the other non-seq_file files) seek with
    /// `generic_llseek` against their inode size, 0; the seq_file ones
    /// (`status`, `meminfo`, ...) take only SEEK_SET and SEEK_CUR, as
    /// `seq_lseek`, since their end is not known before they are read.
    fn llseek(&self, _: &OpenFile, pos: u64, offset: i64, whence: u32, _: u64) -> Result<u64> {
        if self.rel == b"cmdline" {
            return crate::file::generic_llseek(pos, offset, whence, 0);
        }
        match whence {
            uapi::fcntl::SEEK_SET | uapi::fcntl::SEEK_CUR => crate::file::generic_llseek(pos, offset, whence, 0),
            _ => Err(Errno::EINVAL),
        }
    }
}
