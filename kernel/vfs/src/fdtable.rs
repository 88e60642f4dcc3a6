//! A process's file descriptor table (Linux's `files_struct`).

use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::Mutex;
use uapi::fcntl::*;
use uapi::{Errno, NR_OPEN_DEFAULT, NR_OPEN_MAX};

use crate::file::OpenFile;
use crate::mount::Path;
use crate::Result;

#[derive(Clone)]
struct Slot {
    file: Arc<OpenFile>,
    cloexec: bool,
}

struct Table {
    slots: Vec<Option<Slot>>,
    /// RLIMIT_NOFILE: descriptors are below this.
    limit: usize,
}

impl Table {
    fn lowest_free(&self, min: usize) -> Result<usize> {
        let fd = (min..self.slots.len())
            .find(|&i| self.slots[i].is_none())
            .unwrap_or(self.slots.len().max(min));
        if fd >= self.limit {
            return Err(Errno::EMFILE);
        }
        Ok(fd)
    }

    fn put(&mut self, fd: usize, slot: Slot) -> Option<Slot> {
        if fd >= self.slots.len() {
            // Bounded by the limit (at most NR_OPEN_MAX slots).
            self.slots.resize(fd + 1, None);
        }
        self.slots[fd].replace(slot)
    }

    fn get(&self, fd: i32) -> Result<&Slot> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(Option::as_ref)
            .ok_or(Errno::EBADF)
    }

    fn get_mut(&mut self, fd: i32) -> Result<&mut Slot> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get_mut(i))
            .and_then(Option::as_mut)
            .ok_or(Errno::EBADF)
    }
}

/// A descriptor table. Shared between threads (CLONE_FILES) as
/// `Arc<FdTable>`; [`fork`](Self::fork) copies it. Files a call removes are
/// dropped after the table's lock is released, so closing the last
/// reference (a pipe end waking its peer) never runs under it.
pub struct FdTable {
    inner: Mutex<Table>,
}

impl Default for FdTable {
    fn default() -> Self {
        Self::new()
    }
}

impl FdTable {
    /// An empty table with the default limit of 1024 descriptors.
    pub fn new() -> Self {
        FdTable {
            inner: Mutex::new(Table {
                slots: Vec::new(),
                limit: NR_OPEN_DEFAULT,
            }),
        }
    }

    pub fn limit(&self) -> usize {
        self.inner.lock().limit
    }

    /// setrlimit(RLIMIT_NOFILE): later allocations stay below `limit`,
    /// which is capped at Linux's default `fs.nr_open` (1048576) so that the
    /// slot array never grows without bound.
    pub fn set_limit(&self, limit: usize) {
        self.inner.lock().limit = limit.min(NR_OPEN_MAX);
    }

    /// Installs `file` at the lowest free descriptor; EMFILE if none.
    pub fn install(&self, file: Arc<OpenFile>, cloexec: bool) -> Result<i32> {
        self.install_from(0, file, cloexec)
    }

    /// Installs at the lowest free descriptor ≥ `min` (F_DUPFD).
    pub fn install_from(&self, min: usize, file: Arc<OpenFile>, cloexec: bool) -> Result<i32> {
        let mut t = self.inner.lock();
        let fd = t.lowest_free(min)?;
        t.put(fd, Slot { file, cloexec });
        Ok(fd as i32)
    }

    /// The file of `fd`; EBADF if it is not open.
    pub fn get(&self, fd: i32) -> Result<Arc<OpenFile>> {
        Ok(self.inner.lock().get(fd)?.file.clone())
    }

    /// close(2): EBADF if `fd` is not open. Returns the file so the
    /// caller drops it (and with it perhaps the last reference) outside
    /// any lock of its own.
    pub fn close(&self, fd: i32) -> Result<Arc<OpenFile>> {
        let mut t = self.inner.lock();
        t.get(fd)?;
        let slot = t.slots[fd as usize].take().expect("checked open");
        Ok(slot.file)
    }

    /// dup(2): the lowest free descriptor, close-on-exec clear.
    pub fn dup(&self, fd: i32) -> Result<i32> {
        let mut t = self.inner.lock();
        let file = t.get(fd)?.file.clone();
        let new = t.lowest_free(0)?;
        t.put(new, Slot { file, cloexec: false });
        Ok(new as i32)
    }

    /// dup2(2): `newfd` equal to `oldfd` returns it if open (EBADF if not).
    pub fn dup2(&self, oldfd: i32, newfd: i32) -> Result<i32> {
        if oldfd == newfd {
            self.get(oldfd)?;
            return Ok(newfd);
        }
        self.dup3(oldfd, newfd, 0)
    }

    /// dup3(2): EINVAL if the descriptors are equal or `flags` has anything
    /// but O_CLOEXEC; EBADF if `oldfd` is not open or `newfd` is out of
    /// range. A file open at `newfd` is closed.
    pub fn dup3(&self, oldfd: i32, newfd: i32, flags: u32) -> Result<i32> {
        if flags & !O_CLOEXEC != 0 || oldfd == newfd {
            return Err(Errno::EINVAL);
        }
        let replaced;
        {
            let mut t = self.inner.lock();
            let file = t.get(oldfd)?.file.clone();
            let new = usize::try_from(newfd)
                .ok()
                .filter(|&n| n < t.limit)
                .ok_or(Errno::EBADF)?;
            replaced = t.put(
                new,
                Slot {
                    file,
                    cloexec: flags & O_CLOEXEC != 0,
                },
            );
        }
        drop(replaced);
        Ok(newfd)
    }

    pub fn cloexec(&self, fd: i32) -> Result<bool> {
        Ok(self.inner.lock().get(fd)?.cloexec)
    }

    pub fn set_cloexec(&self, fd: i32, cloexec: bool) -> Result<()> {
        self.inner.lock().get_mut(fd)?.cloexec = cloexec;
        Ok(())
    }

    /// The descriptor-table commands of fcntl(2): F_DUPFD,
    /// F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETPIPE_SZ. EBADF for a
    /// closed `fd`, EINVAL for an F_DUPFD minimum at or above the limit and
    /// for commands this table does not handle (locks, owners and leases
    /// are the kernel's).
    pub fn fcntl(&self, fd: i32, cmd: u32, arg: u64) -> Result<i64> {
        let file = self.get(fd)?;
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                let min = usize::try_from(arg)
                    .ok()
                    .filter(|&m| m < self.limit())
                    .ok_or(Errno::EINVAL)?;
                Ok(self.install_from(min, file, cmd == F_DUPFD_CLOEXEC)? as i64)
            }
            F_GETFD => Ok(if self.cloexec(fd)? { FD_CLOEXEC as i64 } else { 0 }),
            F_SETFD => {
                self.set_cloexec(fd, arg as u32 & FD_CLOEXEC != 0)?;
                Ok(0)
            }
            F_GETFL => Ok(file.flags() as i64),
            F_SETFL => {
                file.set_status_flags(arg as u32);
                Ok(0)
            }
            // A pipe's capacity (fixed here: F_SETPIPE_SZ is not offered);
            // EBADF for anything else, as Linux's pipe_fcntl.
            F_GETPIPE_SZ => {
                if file.metadata().mode & uapi::stat::S_IFMT == uapi::stat::S_IFIFO {
                    Ok(crate::pipe::PIPE_SIZE as i64)
                } else {
                    Err(Errno::EBADF)
                }
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// fork(2) without CLONE_FILES: a copy sharing the open files.
    pub fn fork(&self) -> FdTable {
        let t = self.inner.lock();
        FdTable {
            inner: Mutex::new(Table {
                slots: t.slots.clone(),
                limit: t.limit,
            }),
        }
    }

    /// execve(2): closes every close-on-exec descriptor.
    pub fn close_on_exec(&self) {
        let closed: Vec<Slot> = {
            let mut t = self.inner.lock();
            t.slots
                .iter_mut()
                .filter(|s| s.as_ref().is_some_and(|s| s.cloexec))
                .filter_map(Option::take)
                .collect()
        };
        drop(closed);
    }

    /// exit: closes everything.
    pub fn close_all(&self) {
        let closed = core::mem::take(&mut self.inner.lock().slots);
        drop(closed);
    }

    /// The open descriptors, ascending (for /proc/<pid>/fd).
    pub fn fds(&self) -> Vec<i32> {
        let t = self.inner.lock();
        t.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| i as i32)
            .collect()
    }

    /// The starting point of a `*at` call: `cwd` for AT_FDCWD or an
    /// absolute `path` (whose dirfd Linux ignores, even if invalid),
    /// else the directory open at `dirfd` (EBADF, ENOTDIR). With
    /// `empty_path` (AT_EMPTY_PATH and an empty path) any file will do.
    pub fn path_at(&self, dirfd: i32, cwd: &Path, path: &[u8], empty_path: bool) -> Result<Path> {
        if path.first() == Some(&b'/') || dirfd == AT_FDCWD {
            return Ok(cwd.clone());
        }
        let file = self.get(dirfd)?;
        let p = file
            .path()
            .cloned()
            .ok_or(if empty_path { Errno::EBADF } else { Errno::ENOTDIR })?;
        if !empty_path && !p.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(p)
    }
}
