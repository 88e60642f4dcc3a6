//! Inodes: the filesystem-independent interface every filesystem implements.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU32, Ordering};

use uapi::stat::*;
use uapi::Errno;

use crate::file::FileOps;
use crate::iov_iter::IovIter;
use crate::Result;

/// A time, as `struct timespec`: seconds and nanoseconds since the epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timespec {
    pub sec: i64,
    pub nsec: u32,
}

impl Timespec {
    pub const fn new(sec: i64, nsec: u32) -> Self {
        Timespec { sec, nsec }
    }
}

/// The wall clock the kernel passes to each filesystem for timestamps.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timespec;
}

/// A clock stuck at the epoch, for early boot and tests.
pub struct EpochClock;

impl Clock for EpochClock {
    fn now(&self) -> Timespec {
        Timespec::default()
    }
}

/// The type of a file, from the `S_IFMT` bits of its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    Regular,
    Directory,
    Symlink,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
}

impl FileType {
    /// The type in `mode`; `None` if the type bits name no type.
    pub const fn from_mode(mode: u32) -> Option<FileType> {
        Some(match mode & S_IFMT {
            S_IFREG => FileType::Regular,
            S_IFDIR => FileType::Directory,
            S_IFLNK => FileType::Symlink,
            S_IFCHR => FileType::CharDevice,
            S_IFBLK => FileType::BlockDevice,
            S_IFIFO => FileType::Fifo,
            S_IFSOCK => FileType::Socket,
            _ => return None,
        })
    }

    /// The `S_IF*` bits.
    pub const fn mode_bits(self) -> u32 {
        match self {
            FileType::Regular => S_IFREG,
            FileType::Directory => S_IFDIR,
            FileType::Symlink => S_IFLNK,
            FileType::CharDevice => S_IFCHR,
            FileType::BlockDevice => S_IFBLK,
            FileType::Fifo => S_IFIFO,
            FileType::Socket => S_IFSOCK,
        }
    }

    /// The `d_type` of a `linux_dirent64`.
    pub const fn dtype(self) -> u8 {
        mode_to_dtype(self.mode_bits())
    }
}

/// What `stat` reports about an inode, whatever its filesystem.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    /// The filesystem's device number (encoded, as `st_dev`).
    pub dev: u64,
    pub ino: u64,
    /// Type and permission bits, as `st_mode`.
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    /// For device nodes, the device number (encoded, as `st_rdev`).
    pub rdev: u64,
    pub blksize: u32,
    /// Allocated space in 512-byte units.
    pub blocks: u64,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
}

impl Metadata {
    /// The file type; a mode with bad type bits reads as a regular file.
    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.mode).unwrap_or(FileType::Regular)
    }

    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }

    pub fn is_regular(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }

    /// The permission bits, including set-id and sticky.
    pub fn perm(&self) -> u32 {
        self.mode & S_IALLUGO
    }

    /// The arm64 `struct stat` for this inode.
    pub fn to_stat(&self) -> Stat {
        Stat {
            st_dev: self.dev,
            st_ino: self.ino,
            st_mode: self.mode,
            st_nlink: self.nlink,
            st_uid: self.uid,
            st_gid: self.gid,
            st_rdev: self.rdev,
            st_size: self.size as i64,
            st_blksize: self.blksize as i32,
            st_blocks: self.blocks as i64,
            st_atime: self.atime.sec,
            st_atime_nsec: self.atime.nsec as u64,
            st_mtime: self.mtime.sec,
            st_mtime_nsec: self.mtime.nsec as u64,
            st_ctime: self.ctime.sec,
            st_ctime_nsec: self.ctime.nsec as u64,
            ..Stat::default()
        }
    }
}

/// What to create in a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind<'a> {
    Regular,
    Directory,
    /// A symbolic link with this target.
    Symlink(&'a [u8]),
    CharDevice {
        major: u32,
        minor: u32,
    },
    BlockDevice {
        major: u32,
        minor: u32,
    },
    Fifo,
    Socket,
}

impl NodeKind<'_> {
    pub fn file_type(&self) -> FileType {
        match self {
            NodeKind::Regular => FileType::Regular,
            NodeKind::Directory => FileType::Directory,
            NodeKind::Symlink(_) => FileType::Symlink,
            NodeKind::CharDevice { .. } => FileType::CharDevice,
            NodeKind::BlockDevice { .. } => FileType::BlockDevice,
            NodeKind::Fifo => FileType::Fifo,
            NodeKind::Socket => FileType::Socket,
        }
    }
}

/// One directory entry, as `readdir` yields it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    pub name: Vec<u8>,
    pub file_type: FileType,
}

/// Largest bounce buffer a read through a kernel buffer uses: a longer
/// read returns short, as a read may.
pub const BOUNCE_MAX: usize = 1 << 20;

/// A zeroed kernel buffer for a read of `count` bytes (at most
/// [`BOUNCE_MAX`]); ENOMEM when the heap cannot hold it.
pub fn bounce_buf(count: usize) -> Result<Vec<u8>> {
    let len = count.min(BOUNCE_MAX);
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    v.resize(len, 0);
    Ok(v)
}

/// A read's result once `got` bytes were read and `copied` of them reached
/// the destination: a short count, or EFAULT if data was there and none
/// of it could be delivered.
pub fn copied_or_efault(got: usize, copied: usize) -> Result<usize> {
    if got > 0 && copied == 0 {
        Err(Errno::EFAULT)
    } else {
        Ok(copied)
    }
}

/// An inode of some filesystem, shared as `Arc<dyn Inode>`.
///
/// Names passed in are single components: never empty, never `.` or `..`,
/// never containing `/` (the path walk handles those). The VFS checks
/// permissions before calling; inode methods check only what the
/// filesystem's structure requires (EEXIST, ENOTEMPTY, ...). Methods a
/// filesystem does not support keep their defaults, which return the errno
/// Linux gives when an inode lacks that operation.
pub trait Inode: Any + Send + Sync {
    /// A snapshot of the attributes.
    fn metadata(&self) -> Metadata;

    /// The inode number, unique within the filesystem (cheaper than
    /// `metadata().ino`).
    fn ino(&self) -> u64;

    /// For downcasting to the filesystem's own type (rename).
    fn as_any(&self) -> &dyn Any;

    /// Finds `name` in this directory.
    fn lookup(&self, _name: &[u8]) -> Result<Arc<dyn Inode>> {
        Err(Errno::ENOTDIR)
    }

    /// The parent directory within this filesystem; the filesystem root
    /// returns itself. `None` for a non-directory.
    fn parent(&self) -> Option<Arc<dyn Inode>> {
        None
    }

    /// Creates `name` in this directory with permission bits `perm` and
    /// owner `uid`/`gid`. EEXIST if it exists.
    fn create(&self, _name: &[u8], _kind: NodeKind<'_>, _perm: u32, _uid: u32, _gid: u32) -> Result<Arc<dyn Inode>> {
        Err(Errno::EPERM)
    }

    /// Adds a hard link `name` to `target` (a non-directory of the same
    /// filesystem).
    fn link(&self, _name: &[u8], _target: &Arc<dyn Inode>) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Removes the non-directory `name`.
    fn unlink(&self, _name: &[u8]) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Removes the empty directory `name` (ENOTEMPTY otherwise).
    fn rmdir(&self, _name: &[u8]) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Moves `old_name` here to `new_name` in `new_dir` (same filesystem),
    /// replacing what is there as rename(2) allows. `flags` are
    /// `RENAME_*`.
    fn rename(&self, _old_name: &[u8], _new_dir: &Arc<dyn Inode>, _new_name: &[u8], _flags: u32) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// The entry at `cursor` (0 is `.`, 1 is `..`, the rest is the
    /// filesystem's business) and the cursor of the next one; `None` at
    /// the end. Cursors stay valid while entries are removed.
    fn readdir(&self, _cursor: u64) -> Result<Option<(DirEntry, u64)>> {
        Err(Errno::ENOTDIR)
    }

    /// Reads file data at `offset`; 0 at or past the end.
    fn read_at(&self, _offset: u64, _buf: &mut [u8]) -> Result<usize> {
        Err(Errno::EINVAL)
    }

    /// Copies file data at `offset` into `to` (at most `to.count()`
    /// bytes); 0 at or past the end; EFAULT when nothing could be copied
    /// because the destination faulted (Linux's `read_iter`). The default
    /// goes through [`read_at`](Self::read_at) and a bounce buffer of at
    /// most [`BOUNCE_MAX`] bytes; a filesystem whose data sits in pages
    /// copies from them directly.
    fn read_iter(&self, offset: u64, to: &mut dyn IovIter) -> Result<usize> {
        let mut buf = bounce_buf(to.count())?;
        let n = self.read_at(offset, &mut buf)?;
        copied_or_efault(n, to.copy_to_iter(buf.get(..n).unwrap_or_default()))
    }

    /// Writes file data at `offset`, extending the file as needed.
    fn write_at(&self, _offset: u64, _buf: &[u8]) -> Result<usize> {
        Err(Errno::EINVAL)
    }

    /// Writes at the end of the file, atomically with respect to other
    /// appends; returns the count and the new end.
    fn append(&self, buf: &[u8]) -> Result<(usize, u64)> {
        let end = self.metadata().size;
        let n = self.write_at(end, buf)?;
        Ok((n, end + n as u64))
    }

    /// Sets the file size, dropping or zero-filling data.
    fn truncate(&self, _size: u64) -> Result<()> {
        Err(Errno::EINVAL)
    }

    /// A symbolic link's target.
    fn readlink(&self) -> Result<Vec<u8>> {
        Err(Errno::EINVAL)
    }

    /// Sets the permission bits (`mode & 0o7777`), keeping the type.
    fn chmod(&self, _mode: u32) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Changes owner and/or group.
    fn chown(&self, _uid: Option<u32>, _gid: Option<u32>) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Sets access and/or modification time (ctime becomes now).
    fn set_times(&self, _atime: Option<Timespec>, _mtime: Option<Timespec>) -> Result<()> {
        Err(Errno::EPERM)
    }

    /// Whether mmap(2) may map this file's data (Linux: the file has an
    /// `mmap` operation); mmap gives ENODEV otherwise.
    fn mmap_capable(&self) -> bool {
        false
    }

    /// The physical frame holding page `index` (4 KiB pages) of the file's
    /// data, for a mapping to use directly, with a reference taken for the
    /// caller (so that a truncate racing with it cannot free the frame
    /// first); with `create`, a hole inside the file's size gets a zeroed
    /// page (charged as a write would be).
    /// `Ok(None)`: no such frame (a hole without `create`, or pages that
    /// are not frames); the caller then copies through `read_at`.
    fn data_frame(&self, _index: u64, _create: bool) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Called when a regular file or directory is opened; a filesystem
    /// whose files are not plain data (procfs, tracefs) returns the
    /// operations of the new open file. `None`: read and write through
    /// `read_at`/`write_at`, `getdents64` through `readdir`.
    fn open(&self, _flags: u32) -> Result<Option<Arc<dyn FileOps>>> {
        Ok(None)
    }
}

/// A mounted (or mountable) filesystem.
pub trait FileSystem: Send + Sync {
    fn root(&self) -> Arc<dyn Inode>;
    /// Its name in /proc/mounts (`"ramfs"`, `"devtmpfs"`, `"proc"`, ...).
    fn fs_type(&self) -> &'static str;
    /// Its device number (`st_dev` of its inodes).
    fn dev(&self) -> u64;
    /// Its figures for statfs(2); by default those of Linux's
    /// `simple_statfs` for a filesystem of magic number `magic()`.
    fn statfs(&self) -> StatFs {
        StatFs::simple(self.magic())
    }
    /// Its `f_type` (Linux's `*_MAGIC` from `<linux/magic.h>`).
    fn magic(&self) -> u64 {
        0
    }
    /// Applies mount(2)'s data string on a remount, or on a new mount of a
    /// filesystem that has one instance (Linux's `reconfigure`); by
    /// default the options are accepted and ignored.
    fn reconfigure(&self, _data: &[u8]) -> Result<()> {
        Ok(())
    }
    /// What `/proc/mounts` shows after `rw,relatime` (Linux's
    /// `show_options`, e.g. `,gid=7`); empty by default.
    fn show_options(&self) -> alloc::string::String {
        alloc::string::String::new()
    }
}

/// What statfs(2) reports about a filesystem (block counts in units of
/// `bsize`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatFs {
    pub fs_type: u64,
    pub bsize: u64,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub namelen: u64,
}

impl StatFs {
    /// A filesystem with no space figures (Linux's `simple_statfs`).
    pub fn simple(magic: u64) -> StatFs {
        StatFs {
            fs_type: magic,
            bsize: 4096,
            namelen: uapi::NAME_MAX as u64,
            ..StatFs::default()
        }
    }
}

static NEXT_ANON_MINOR: AtomicU32 = AtomicU32::new(1);

/// A fresh device number for a filesystem without a device (major 0), as
/// Linux's `get_anon_bdev`.
pub fn alloc_anon_dev() -> u64 {
    makedev(0, NEXT_ANON_MINOR.fetch_add(1, Ordering::Relaxed))
}
