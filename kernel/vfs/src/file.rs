//! Open files: Linux's "open file description" (`struct file`), with its
//! offset and status flags, shared by every descriptor dup'ed from it.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use spin::Mutex;
use uapi::fcntl::*;
use uapi::poll::*;
use uapi::stat::{dirent64_reclen, write_dirent64};
use uapi::Errno;

use crate::inode::{bounce_buf, copied_or_efault, Inode, Metadata};
use crate::iov_iter::{IovIter, IovSource};
use crate::mount::Path;
use crate::wait::WaitQueueHead;
use crate::Result;

/// The operations of an open file whose behaviour is not "data at
/// offsets": pipes, devices, procfs and tracefs files. Each may return
/// EAGAIN when it would block (see the crate documentation).
///
/// `pos` is the file's offset (for `read`/`write`) or the explicit offset
/// of `pread`/`pwrite`; an implementation that has no notion of position
/// ignores it.
pub trait FileOps: Send + Sync {
    fn read(&self, _file: &OpenFile, _buf: &mut [u8], _pos: &mut u64) -> Result<usize> {
        Err(Errno::EINVAL)
    }

    /// `read` into `to` (Linux's `read_iter`). The default reads into a
    /// bounce buffer; for a file without positions (whose data a read
    /// consumes) the destination is faulted in first, so that a bad
    /// buffer fails with nothing consumed.
    fn read_iter(&self, file: &OpenFile, to: &mut dyn IovIter, pos: &mut u64) -> Result<usize> {
        let mut buf = bounce_buf(to.count())?;
        if !self.positional() && !to.fault_in_writeable(buf.len()) {
            return Err(Errno::EFAULT);
        }
        let mut p = *pos;
        let n = self.read(file, &mut buf, &mut p)?;
        let copied = to.copy_to_iter(buf.get(..n).unwrap_or_default());
        // What did not reach the destination stays unread where a file
        // has positions; a stream's data is gone either way.
        *pos = if copied == n || !self.positional() {
            p
        } else {
            *pos + copied as u64
        };
        copied_or_efault(n, copied)
    }

    fn write(&self, _file: &OpenFile, _buf: &[u8], _pos: &mut u64) -> Result<usize> {
        Err(Errno::EINVAL)
    }

    /// `write` from `from` (Linux's `write_iter`). The default hands the
    /// source's bytes (at most [`BOUNCE_MAX`](crate::inode::BOUNCE_MAX))
    /// to [`write`](Self::write); a file that discards them overrides it
    /// and reads nothing.
    fn write_iter(&self, file: &OpenFile, from: &mut dyn IovSource, pos: &mut u64) -> Result<usize> {
        let len = from.count().min(crate::inode::BOUNCE_MAX);
        from.consume(len, &mut |data| self.write(file, data, pos))
    }

    /// The new offset for lseek; ESPIPE for unseekable files.
    /// `size` is the inode's size for SEEK_END, SEEK_DATA and SEEK_HOLE,
    /// and 0 for the other `whence` values.
    fn llseek(&self, _file: &OpenFile, pos: u64, offset: i64, whence: u32, size: u64) -> Result<u64> {
        generic_llseek(pos, offset, whence, size)
    }

    /// Whether pread/pwrite are allowed (ESPIPE otherwise).
    fn positional(&self) -> bool {
        true
    }

    /// Whether it honours a request not to wait (Linux's FMODE_NOWAIT,
    /// for preadv2/pwritev2's RWF_NOWAIT): pipes and memory devices.
    fn nowait(&self) -> bool {
        false
    }

    /// Whether Linux's file can be read at all (FMODE_CAN_READ: its ops
    /// have `read` or `read_iter`): read(2) and readv(2) on a file without
    /// are EINVAL even when it is open for reading (`trace_marker`).
    fn can_read(&self) -> bool {
        true
    }

    /// As [`can_read`](Self::can_read) for writes (FMODE_CAN_WRITE): a
    /// read-only tracefs or /proc file opened O_RDWR is EINVAL to write.
    fn can_write(&self) -> bool {
        true
    }

    /// Whether Linux's file has a `read_iter` (not only a `read`). Every
    /// file here reads through [`read_iter`](Self::read_iter); this says
    /// which path Linux's preadv2 takes, which decides the RWF_* flags it
    /// accepts: without `read_iter`, `do_loop_readv_writev` refuses all
    /// but RWF_HIPRI with EOPNOTSUPP. No (the default) for most tracefs
    /// and per-process /proc files, which have only `read`.
    fn has_read_iter(&self) -> bool {
        false
    }

    /// [`has_read_iter`](Self::has_read_iter) for writes: whether Linux's
    /// file has a `write_iter` (`/dev/full`, tracefs files do not).
    fn has_write_iter(&self) -> bool {
        false
    }

    /// Whether a 0-byte write must reach [`write`](Self::write): Linux's
    /// vfs_write calls the file's method whatever the count, and some
    /// answer an empty write with something other than 0 (`/proc/uptime`'s
    /// proc_reg_write is EIO, `/proc/<pid>/comm` empties the name). No (the
    /// default) where an empty write does nothing.
    fn writes_empty(&self) -> bool {
        false
    }

    /// For a pipe: the bytes a write is sure to find room for now (its
    /// free buffers' pages), what splice into it may take. `None` for
    /// other files.
    fn pipe_room(&self) -> Option<usize> {
        None
    }

    /// `POLL*` bits ready now.
    fn poll(&self, _file: &OpenFile) -> u16 {
        POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM
    }

    /// The queue woken when `poll` may have changed, for files that can
    /// return EAGAIN.
    fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        None
    }

    /// A device-specific request; `arg` is the raw user argument (the
    /// implementation, being kernel code, does any user copy itself).
    fn ioctl(&self, _file: &OpenFile, _cmd: u32, _arg: u64) -> Result<i64> {
        Err(Errno::ENOTTY)
    }

    /// splice(2) out of this file into a pipe that has room for `buf`,
    /// for files whose splice differs from a read (Linux's `splice_read`,
    /// e.g. `trace_pipe_raw`, which hands out whole pages only). `None`
    /// (the default): splice reads the file as read(2) does. `nonblock`
    /// is SPLICE_F_NONBLOCK or the file's O_NONBLOCK; an implementation
    /// that blocks waits itself.
    fn splice_read(&self, _file: &OpenFile, _buf: &mut [u8], _nonblock: bool) -> Option<Result<usize>> {
        None
    }
}

/// Linux's `generic_file_llseek_size` for SEEK_SET/CUR/END/DATA/HOLE.
pub fn generic_llseek(pos: u64, offset: i64, whence: u32, size: u64) -> Result<u64> {
    let base = match whence {
        SEEK_SET => 0,
        SEEK_CUR => pos as i64,
        SEEK_END => size as i64,
        SEEK_DATA | SEEK_HOLE => {
            if offset < 0 || offset as u64 >= size {
                return Err(Errno::ENXIO);
            }
            return Ok(if whence == SEEK_DATA { offset as u64 } else { size });
        }
        _ => return Err(Errno::EINVAL),
    };
    match base.checked_add(offset) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Errno::EINVAL),
    }
}

/// What preadv2/pwritev2's RWF_* flags ask of one call (the kiocb flags
/// this kernel acts on): not to wait, and to append or not whatever
/// O_APPEND says. RWF_HIPRI, RWF_DSYNC and RWF_SYNC change nothing here:
/// there is no polled I/O, and a write is in memory when it returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RwFlags {
    pub nowait: bool,
    pub append: Option<bool>,
}

/// Checks preadv2/pwritev2's `flags` as Linux 6.12 does for one side of a
/// file. Without `iter` (Linux's file has no `read_iter`/`write_iter` for
/// that side) the call takes `do_loop_readv_writev`, which refuses every
/// flag but RWF_HIPRI with EOPNOTSUPP, RWF_APPEND with RWF_NOAPPEND too.
/// Otherwise `kiocb_set_rw_flags`: EOPNOTSUPP for a bit Linux does not
/// know, for RWF_NOWAIT without `nowait` (FMODE_NOWAIT), and for
/// RWF_ATOMIC (a read, or a write to a file without untorn writes: every
/// file here; Linux has them only for direct I/O to some block devices
/// and filesystems); EINVAL for RWF_APPEND with RWF_NOAPPEND.
pub fn check_rw_flags(flags: u32, iter: bool, nowait: bool) -> Result<RwFlags> {
    use uapi::uio::rwf::*;
    if flags == 0 {
        return Ok(RwFlags::default());
    }
    if !iter {
        return if flags & !RWF_HIPRI != 0 {
            Err(Errno::EOPNOTSUPP)
        } else {
            Ok(RwFlags::default())
        };
    }
    if flags & !RWF_SUPPORTED != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if flags & RWF_APPEND != 0 && flags & RWF_NOAPPEND != 0 {
        return Err(Errno::EINVAL);
    }
    if (flags & RWF_NOWAIT != 0 && !nowait) || flags & RWF_ATOMIC != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let append = if flags & RWF_APPEND != 0 {
        Some(true)
    } else if flags & RWF_NOAPPEND != 0 {
        Some(false)
    } else {
        None
    };
    Ok(RwFlags {
        nowait: flags & RWF_NOWAIT != 0,
        append,
    })
}

/// Status flags F_SETFL may change.
const SETFL_MASK: u32 = O_APPEND | O_NONBLOCK;
/// Flags an open file does not keep: `do_dentry_open` drops the open-time
/// ones, and close-on-exec belongs to the descriptor.
const OPEN_TIME_FLAGS: u32 = O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC;

enum Backend {
    /// Data through the inode's `read_at`/`write_at`/`readdir`.
    Inode,
    Ops(Arc<dyn FileOps>),
    /// O_PATH: only a place in the tree.
    PathOnly,
}

/// An open file description. `#[repr(C)]` for its first field only: the
/// name `%pD` reads (see [`crate::dentry`]).
#[repr(C)]
pub struct OpenFile {
    /// The last component of the name it was opened by, if recorded:
    /// what `%pD` reads through (Linux's `f_path.dentry`); null if none.
    /// Set once, before the file is shared; freed with the file.
    f_dentry: core::sync::atomic::AtomicPtr<crate::dentry::DentryName>,
    path: Option<Path>,
    inode: Arc<dyn Inode>,
    backend: Backend,
    flags: AtomicU32,
    /// The offset (Linux's `f_pos`), also serializing read/write/lseek on
    /// this description as `f_pos_lock` does.
    pos: Mutex<u64>,
    /// A directory (a file's type never changes; read(2) asks per call).
    dir: bool,
    /// The absolute name the file was opened by, for a file that is not a
    /// directory (whose name `Vfs::getcwd` cannot find: an inode has no
    /// single parent); what `/proc/<pid>/fd/N` shows.
    name: Mutex<Option<Vec<u8>>>,
}

const _: () = assert!(core::mem::offset_of!(OpenFile, f_dentry) == crate::dentry::FILE_F_DENTRY_OFFSET);

impl Drop for OpenFile {
    /// The last reference to the description goes: its path is released
    /// through `dput` with its name (Linux's `__fput`), and the name freed.
    fn drop(&mut self) {
        let dentry = core::mem::replace(self.f_dentry.get_mut(), core::ptr::null_mut());
        // SAFETY: non-null only from Arc::into_raw in set_name, the
        // reference this file owns, which no one else can reach during its
        // drop.
        #[allow(unsafe_code)]
        let dentry = (!dentry.is_null()).then(|| unsafe { Arc::from_raw(dentry.cast_const()) });
        if let Some(path) = self.path.take() {
            // A directory's open file records no name of its own: its
            // name is the one its parent holds it under.
            let name = match &dentry {
                Some(d) => d.name().to_vec(),
                None if self.dir => path.d_name(),
                None => Vec::new(),
            };
            crate::dentry::dput_named(&name, path);
        }
    }
}

/// How the `Arc` of a new open file is made: the kernel puts it in its
/// `filp` slab cache ([`set_filp_alloc`]); plain `Arc::new` until then.
static FILP_ALLOC: spin::Once<fn(OpenFile) -> Arc<OpenFile>> = spin::Once::new();

/// Sets, once, how open files are allocated (Linux's `filp_cachep`).
pub fn set_filp_alloc(alloc: fn(OpenFile) -> Arc<OpenFile>) {
    FILP_ALLOC.call_once(|| alloc);
}

impl OpenFile {
    fn build(path: Option<Path>, inode: Arc<dyn Inode>, backend: Backend, flags: u32) -> Arc<OpenFile> {
        let dir = inode.metadata().is_dir();
        let file = OpenFile {
            f_dentry: core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()),
            path,
            dir,
            inode,
            backend,
            flags: AtomicU32::new(flags & !OPEN_TIME_FLAGS),
            pos: Mutex::new(0),
            name: Mutex::new(None),
        };
        match FILP_ALLOC.get() {
            Some(alloc) => alloc(file),
            None => Arc::new(file),
        }
    }

    /// Records the absolute name the file was opened by (see `name`).
    pub fn set_name(&self, name: Vec<u8>) {
        let dentry = Arc::into_raw(crate::dentry::DentryName::from_path_name(&name)).cast_mut();
        let old = self.f_dentry.swap(dentry, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: a non-null pointer here came from Arc::into_raw above
            // and is this file's one reference; it is swapped out, so
            // nothing reaches it through the file any more (a probe reading
            // it meanwhile reads with no-fault loads).
            #[allow(unsafe_code)]
            drop(unsafe { Arc::from_raw(old.cast_const()) });
        }
        *self.name.lock() = Some(name);
    }

    /// The absolute name the file was opened by, if recorded (files opened
    /// by `openat`, not directories: `Vfs::getcwd` names those).
    pub fn name(&self) -> Option<Vec<u8>> {
        self.name.lock().clone()
    }

    /// A file reading and writing `inode`'s data directly.
    pub fn new_inode(path: Option<Path>, inode: Arc<dyn Inode>, flags: u32) -> Arc<OpenFile> {
        Self::build(path, inode, Backend::Inode, flags)
    }

    /// A file with its own operations; `inode` answers fstat.
    pub fn new_ops(path: Option<Path>, inode: Arc<dyn Inode>, ops: Arc<dyn FileOps>, flags: u32) -> Arc<OpenFile> {
        Self::build(path, inode, Backend::Ops(ops), flags)
    }

    /// An O_PATH file.
    pub fn new_path_only(path: Path, flags: u32) -> Arc<OpenFile> {
        let inode = path.inode.clone();
        Self::build(Some(path), inode, Backend::PathOnly, flags)
    }

    /// Where the file was opened; `None` for pipes.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_ref()
    }

    pub fn inode(&self) -> &Arc<dyn Inode> {
        &self.inode
    }

    /// The flags F_GETFL reports: access mode and status flags.
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// F_SETFL: only O_APPEND and O_NONBLOCK change; other bits are ignored.
    pub fn set_status_flags(&self, flags: u32) {
        let _ = self.flags.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
            Some((old & !SETFL_MASK) | (flags & SETFL_MASK))
        });
    }

    pub fn is_nonblocking(&self) -> bool {
        self.flags() & O_NONBLOCK != 0
    }

    pub fn is_path_only(&self) -> bool {
        matches!(self.backend, Backend::PathOnly)
    }

    /// Opened for reading (O_RDONLY or O_RDWR, not O_PATH).
    pub fn readable(&self) -> bool {
        !self.is_path_only() && matches!(self.flags() & O_ACCMODE, O_RDONLY | O_RDWR)
    }

    /// Opened for writing.
    pub fn writable(&self) -> bool {
        !self.is_path_only() && matches!(self.flags() & O_ACCMODE, O_WRONLY | O_RDWR)
    }

    /// The current offset.
    pub fn offset(&self) -> u64 {
        *self.pos.lock()
    }

    /// read(2). EBADF if not open for reading, EISDIR on a directory,
    /// EAGAIN when it would block.
    pub fn read(&self, buf: &mut [u8]) -> Result<usize> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        let mut pos = self.pos.lock();
        let mut p = *pos;
        let n = self.do_read(buf, &mut p)?;
        *pos = p;
        Ok(n)
    }

    /// pread64(2): ESPIPE on pipes and other unseekable files, EINVAL for
    /// a negative offset.
    pub fn pread(&self, buf: &mut [u8], offset: i64) -> Result<usize> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        if !self.positional() {
            return Err(Errno::ESPIPE);
        }
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.do_read(buf, &mut (offset as u64))
    }

    /// read(2) into `to`: as [`read`](Self::read), with the data copied
    /// straight from the file's pages where it has them. The offset
    /// advances by what reached `to`.
    pub fn read_iter(&self, to: &mut dyn IovIter) -> Result<usize> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        let mut pos = self.pos.lock();
        let mut p = *pos;
        let n = self.do_read_iter(to, &mut p)?;
        *pos = p;
        Ok(n)
    }

    /// pread64(2) into `to`: as [`pread`](Self::pread).
    pub fn pread_iter(&self, to: &mut dyn IovIter, offset: i64) -> Result<usize> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        if !self.positional() {
            return Err(Errno::ESPIPE);
        }
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.do_read_iter(to, &mut (offset as u64))
    }

    fn do_read_iter(&self, to: &mut dyn IovIter, pos: &mut u64) -> Result<usize> {
        match &self.backend {
            Backend::Ops(ops) => ops.read_iter(self, to, pos),
            Backend::Inode => {
                if self.dir {
                    return Err(Errno::EISDIR);
                }
                let n = self.inode.read_iter(*pos, to)?;
                *pos += n as u64;
                Ok(n)
            }
            Backend::PathOnly => Err(Errno::EBADF),
        }
    }

    fn do_read(&self, buf: &mut [u8], pos: &mut u64) -> Result<usize> {
        match &self.backend {
            Backend::Ops(ops) => ops.read(self, buf, pos),
            Backend::Inode => {
                if self.dir {
                    return Err(Errno::EISDIR);
                }
                let n = self.inode.read_at(*pos, buf)?;
                *pos += n as u64;
                Ok(n)
            }
            Backend::PathOnly => Err(Errno::EBADF),
        }
    }

    /// write(2): O_APPEND writes at the end. The kernel sends SIGPIPE when
    /// this returns EPIPE.
    pub fn write(&self, buf: &[u8]) -> Result<usize> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        let mut pos = self.pos.lock();
        let mut p = *pos;
        let n = self.do_write(buf, &mut p, self.flags() & O_APPEND != 0)?;
        *pos = p;
        Ok(n)
    }

    /// write(2) from `from`: as [`write`](Self::write), with the bytes
    /// taken from the source only by a file that uses them.
    pub fn write_iter(&self, from: &mut dyn IovSource) -> Result<usize> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        let mut pos = self.pos.lock();
        let mut p = *pos;
        let n = self.do_write_iter(from, &mut p, self.flags() & O_APPEND != 0)?;
        *pos = p;
        Ok(n)
    }

    /// write(2) (`offset` `None`) or pwrite64(2) from `from`, appending
    /// if `append` whatever O_APPEND says (pwritev2's RWF_APPEND and
    /// RWF_NOAPPEND). The file's offset moves only for write(2).
    pub fn write_iter_append(&self, from: &mut dyn IovSource, offset: Option<i64>, append: bool) -> Result<usize> {
        let Some(offset) = offset else {
            if !self.writable() {
                return Err(Errno::EBADF);
            }
            let mut pos = self.pos.lock();
            let mut p = *pos;
            let n = self.do_write_iter(from, &mut p, append)?;
            *pos = p;
            return Ok(n);
        };
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        if !self.positional() {
            return Err(Errno::ESPIPE);
        }
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.do_write_iter(from, &mut (offset as u64), append)
    }

    /// Whether a read or write may be asked not to wait (Linux's
    /// FMODE_NOWAIT, which preadv2/pwritev2's RWF_NOWAIT needs): not a
    /// file of the in-memory filesystems (Linux's rootfs, ramfs and tmpfs
    /// do not set it either).
    pub fn can_nowait(&self) -> bool {
        match &self.backend {
            Backend::Ops(ops) => ops.nowait(),
            Backend::Inode | Backend::PathOnly => false,
        }
    }

    /// Whether preadv2 takes Linux's `read_iter` path on this file, and
    /// so the RWF_* flags other than RWF_HIPRI (see
    /// [`FileOps::has_read_iter`]): a file of the in-memory filesystems
    /// does (Linux's ramfs and tmpfs have `read_iter`).
    pub fn has_read_iter(&self) -> bool {
        match &self.backend {
            Backend::Ops(ops) => ops.has_read_iter(),
            Backend::Inode => true,
            Backend::PathOnly => false,
        }
    }

    /// See [`FileOps::writes_empty`].
    pub fn writes_empty(&self) -> bool {
        match &self.backend {
            Backend::Ops(ops) => ops.writes_empty(),
            Backend::Inode | Backend::PathOnly => false,
        }
    }

    /// As [`has_read_iter`](Self::has_read_iter), for pwritev2.
    pub fn has_write_iter(&self) -> bool {
        match &self.backend {
            Backend::Ops(ops) => ops.has_write_iter(),
            Backend::Inode => true,
            Backend::PathOnly => false,
        }
    }

    /// Linux's checks at the top of `vfs_read`/`vfs_readv` (`write`
    /// false) or `vfs_write`/`vfs_writev`: EBADF if the file is not open
    /// for it, EINVAL if the file cannot do it (FMODE_CAN_READ/WRITE, see
    /// [`FileOps::can_read`]).
    pub fn check_rw(&self, write: bool) -> Result<()> {
        let (open_for, can) = match (&self.backend, write) {
            (Backend::Ops(ops), false) => (self.readable(), ops.can_read()),
            (Backend::Ops(ops), true) => (self.writable(), ops.can_write()),
            (_, false) => (self.readable(), true),
            (_, true) => (self.writable(), true),
        };
        if !open_for {
            Err(Errno::EBADF)
        } else if !can {
            Err(Errno::EINVAL)
        } else {
            Ok(())
        }
    }

    /// preadv2's (`write` false) or pwritev2's `flags` on this file, as
    /// [`check_rw_flags`] with what the file supports.
    pub fn rw_flags(&self, flags: u32, write: bool) -> Result<RwFlags> {
        let iter = if write {
            self.has_write_iter()
        } else {
            self.has_read_iter()
        };
        check_rw_flags(flags, iter, self.can_nowait())
    }

    /// pwrite64(2) from `from`: as [`pwrite`](Self::pwrite).
    pub fn pwrite_iter(&self, from: &mut dyn IovSource, offset: i64) -> Result<usize> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        if !self.positional() {
            return Err(Errno::ESPIPE);
        }
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.do_write_iter(from, &mut (offset as u64), self.flags() & O_APPEND != 0)
    }

    fn do_write_iter(&self, from: &mut dyn IovSource, pos: &mut u64, append: bool) -> Result<usize> {
        match &self.backend {
            Backend::Ops(ops) => ops.write_iter(self, from, pos),
            Backend::Inode | Backend::PathOnly => {
                let len = from.count().min(crate::inode::BOUNCE_MAX);
                from.consume(len, &mut |data| self.do_write(data, pos, append))
            }
        }
    }

    /// pwrite64(2). As on Linux, O_APPEND makes it append anyway.
    pub fn pwrite(&self, buf: &[u8], offset: i64) -> Result<usize> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        if !self.positional() {
            return Err(Errno::ESPIPE);
        }
        if offset < 0 {
            return Err(Errno::EINVAL);
        }
        self.do_write(buf, &mut (offset as u64), self.flags() & O_APPEND != 0)
    }

    fn do_write(&self, buf: &[u8], pos: &mut u64, append: bool) -> Result<usize> {
        match &self.backend {
            Backend::Ops(ops) => ops.write(self, buf, pos),
            Backend::Inode => {
                if append {
                    let (n, end) = self.inode.append(buf)?;
                    *pos = end;
                    Ok(n)
                } else {
                    let n = self.inode.write_at(*pos, buf)?;
                    *pos += n as u64;
                    Ok(n)
                }
            }
            Backend::PathOnly => Err(Errno::EBADF),
        }
    }

    /// Whether the file has offsets (pread, lseek): not pipes or ttys.
    pub fn is_positional(&self) -> bool {
        self.positional()
    }

    fn positional(&self) -> bool {
        match &self.backend {
            Backend::Ops(ops) => ops.positional(),
            _ => true,
        }
    }

    /// lseek(2): EINVAL for a bad `whence` or a negative result, ESPIPE on
    /// pipes and terminals. On a directory only SEEK_SET and SEEK_CUR are
    /// allowed, and the offset is the readdir cursor.
    pub fn lseek(&self, offset: i64, whence: u32) -> Result<u64> {
        if self.is_path_only() {
            return Err(Errno::EBADF);
        }
        let mut pos = self.pos.lock();
        // The size matters only to seeks from the end or for data/holes;
        // the others need not snapshot the inode.
        let size = match whence {
            SEEK_END | SEEK_DATA | SEEK_HOLE => self.inode.metadata().size,
            _ => 0,
        };
        let new = match &self.backend {
            Backend::Ops(ops) => ops.llseek(self, *pos, offset, whence, size)?,
            _ if self.dir => match whence {
                SEEK_SET | SEEK_CUR => generic_llseek(*pos, offset, whence, 0)?,
                _ => return Err(Errno::EINVAL),
            },
            _ => generic_llseek(*pos, offset, whence, size)?,
        };
        *pos = new;
        Ok(new)
    }

    /// getdents64(2): whole `linux_dirent64` records into `buf`; 0 at the
    /// end; EINVAL if `buf` cannot hold the next record, ENOTDIR if this is
    /// not a directory, ENOENT if it was removed.
    pub fn getdents64(&self, buf: &mut [u8]) -> Result<usize> {
        if self.is_path_only() {
            return Err(Errno::EBADF);
        }
        if !self.inode.metadata().is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let mut pos = self.pos.lock();
        let mut written = 0;
        while let Some((entry, next)) = self.inode.readdir(*pos)? {
            match write_dirent64(
                &mut buf[written..],
                entry.ino,
                next as i64,
                entry.file_type.dtype(),
                &entry.name,
            ) {
                Some(n) => written += n,
                None if written == 0 => {
                    debug_assert!(buf.len() < dirent64_reclen(entry.name.len()));
                    return Err(Errno::EINVAL);
                }
                None => break,
            }
            *pos = next;
        }
        Ok(written)
    }

    /// fstat(2)'s attributes.
    pub fn metadata(&self) -> Metadata {
        self.inode.metadata()
    }

    /// ftruncate(2): EINVAL unless a regular file open for writing, or for
    /// a negative length.
    pub fn truncate(&self, len: i64) -> Result<()> {
        if self.is_path_only() {
            return Err(Errno::EBADF);
        }
        if len < 0 || !self.writable() || !self.inode.metadata().is_regular() {
            return Err(Errno::EINVAL);
        }
        self.inode.truncate(len as u64)
    }

    /// Readiness for poll/select; POLLNVAL for O_PATH files.
    pub fn poll(&self) -> u16 {
        match &self.backend {
            Backend::Ops(ops) => ops.poll(self),
            Backend::Inode => POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM,
            Backend::PathOnly => POLLNVAL,
        }
    }

    /// The queue to wait on after EAGAIN; `None` for files that never
    /// block.
    pub fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        match &self.backend {
            Backend::Ops(ops) => ops.wait_queue(),
            _ => None,
        }
    }

    /// ioctl(2) for the file's own requests (ENOTTY if it has none); the
    /// kernel handles FIOCLEX/FIONCLEX/FIONBIO before calling this.
    pub fn ioctl(&self, cmd: u32, arg: u64) -> Result<i64> {
        match &self.backend {
            Backend::Ops(ops) => ops.ioctl(self, cmd, arg),
            Backend::PathOnly => Err(Errno::EBADF),
            Backend::Inode => Err(Errno::ENOTTY),
        }
    }

    /// For a pipe, the bytes a write has room for now (see
    /// [`FileOps::pipe_room`]).
    pub fn pipe_room(&self) -> Option<usize> {
        match &self.backend {
            Backend::Ops(ops) => ops.pipe_room(),
            _ => None,
        }
    }

    /// The file's own splice into a pipe (see [`FileOps::splice_read`]);
    /// `None` if a read does for it.
    pub fn splice_read(&self, buf: &mut [u8], nonblock: bool) -> Option<Result<usize>> {
        match &self.backend {
            Backend::Ops(ops) => ops.splice_read(self, buf, nonblock),
            _ => None,
        }
    }

    /// Reads the whole remaining file (for execve and the kernel's own
    /// use), from the current offset.
    pub fn read_to_end(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut chunk = alloc::vec![0u8; 4096];
        loop {
            let n = self.read(&mut chunk)?;
            if n == 0 {
                return Ok(out);
            }
            // A file bigger than the free heap is ENOMEM, not an allocation panic.
            out.try_reserve(n).map_err(|_| Errno::ENOMEM)?;
            out.extend_from_slice(&chunk[..n]);
        }
    }
}
