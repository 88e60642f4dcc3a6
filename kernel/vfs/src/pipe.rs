//! Pipes: pipe2(2), a 64 KiB buffer between a read end and a write end.
//!
//! Readers and writers are counted by open files: dropping the last
//! `OpenFile` of an end (its last descriptor closed) closes that end and
//! wakes the other side. Nothing here blocks: where Linux would sleep the
//! call returns EAGAIN and the kernel waits on [`OpenFile::wait_queue`].

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::Mutex;
use uapi::fcntl::*;
use uapi::poll::*;
use uapi::stat::S_IFIFO;
use uapi::termios::FIONREAD;
use uapi::{Errno, PIPE_BUF};

use crate::file::{FileOps, OpenFile};
use crate::inode::{alloc_anon_dev, Inode, Metadata, Timespec};
use crate::wait::WaitQueueHead;
use crate::Result;

/// Capacity of a pipe (Linux's default: 16 pages).
pub const PIPE_SIZE: usize = 65536;

struct State {
    buf: VecDeque<u8>,
    readers: usize,
    writers: usize,
}

struct Pipe {
    state: Mutex<State>,
    wq: Arc<WaitQueueHead>,
}

/// The inode fstat reports for a pipe (pipefs): a FIFO, 0600, owned by its
/// creator.
struct PipeInode {
    meta: Metadata,
}

impl Inode for PipeInode {
    fn metadata(&self) -> Metadata {
        self.meta
    }

    fn ino(&self) -> u64 {
        self.meta.ino
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

static PIPEFS_DEV: spin::Once<u64> = spin::Once::new();
static NEXT_PIPE_INO: AtomicU64 = AtomicU64::new(1);

struct ReadEnd(Arc<Pipe>);
struct WriteEnd(Arc<Pipe>);

/// pipe2(2): the read and write ends. `flags` may hold O_NONBLOCK,
/// O_CLOEXEC and O_DIRECT (EINVAL otherwise); O_CLOEXEC is for the caller
/// to apply to both descriptors. `uid`/`gid`/`now` fill fstat's answer.
pub fn pipe2(flags: u32, uid: u32, gid: u32, now: Timespec) -> Result<(Arc<OpenFile>, Arc<OpenFile>)> {
    if flags & !(O_NONBLOCK | O_CLOEXEC | O_DIRECT) != 0 {
        return Err(Errno::EINVAL);
    }
    let meta = Metadata {
        dev: *PIPEFS_DEV.call_once(alloc_anon_dev),
        ino: NEXT_PIPE_INO.fetch_add(1, Ordering::Relaxed),
        mode: S_IFIFO | 0o600,
        nlink: 1,
        uid,
        gid,
        blksize: 4096,
        atime: now,
        mtime: now,
        ctime: now,
        ..Metadata::default()
    };
    let inode = Arc::new(PipeInode { meta });
    let pipe = Arc::new(Pipe {
        state: Mutex::new(State {
            buf: VecDeque::new(),
            readers: 1,
            writers: 1,
        }),
        wq: Arc::new(WaitQueueHead::new()),
    });
    let status = flags & (O_NONBLOCK | O_DIRECT);
    let r = OpenFile::new_ops(None, inode.clone(), Arc::new(ReadEnd(pipe.clone())), O_RDONLY | status);
    let w = OpenFile::new_ops(None, inode, Arc::new(WriteEnd(pipe)), O_WRONLY | status);
    Ok((r, w))
}

impl Pipe {
    /// The ioctls both ends answer: FIONREAD, the bytes buffered.
    fn ioctl(&self, cmd: u32) -> Result<i64> {
        match cmd {
            FIONREAD => Ok(self.state.lock().buf.len() as i64),
            _ => Err(Errno::ENOTTY),
        }
    }
}

impl FileOps for ReadEnd {
    /// The available bytes; 0 (end of file) when empty with no writers;
    /// EAGAIN when empty with writers.
    fn read(&self, _: &OpenFile, buf: &mut [u8], _: &mut u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let n = {
            let mut s = self.0.state.lock();
            if s.buf.is_empty() {
                return if s.writers == 0 { Ok(0) } else { Err(Errno::EAGAIN) };
            }
            let n = buf.len().min(s.buf.len());
            for (dst, src) in buf.iter_mut().zip(s.buf.drain(..n)) {
                *dst = src;
            }
            n
        };
        self.0.wq.wake_up();
        Ok(n)
    }

    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> Result<u64> {
        Err(Errno::ESPIPE)
    }

    fn positional(&self) -> bool {
        false
    }

    fn poll(&self, _: &OpenFile) -> u16 {
        let s = self.0.state.lock();
        let mut ev = 0;
        if !s.buf.is_empty() {
            ev |= POLLIN | POLLRDNORM;
        }
        if s.writers == 0 {
            ev |= POLLHUP;
        }
        ev
    }

    fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        Some(self.0.wq.clone())
    }

    fn ioctl(&self, _: &OpenFile, cmd: u32, _: u64) -> Result<i64> {
        self.0.ioctl(cmd)
    }
}

impl FileOps for WriteEnd {
    /// EPIPE without readers. Up to PIPE_BUF bytes go in whole or not at
    /// all (EAGAIN); a larger write takes what fits and returns the count,
    /// EAGAIN if nothing fits. For a blocking file the kernel, like Linux's
    /// pipe_write, waits and writes the rest.
    fn write(&self, _: &OpenFile, buf: &[u8], _: &mut u64) -> Result<usize> {
        let n = {
            let mut s = self.0.state.lock();
            if s.readers == 0 {
                return Err(Errno::EPIPE);
            }
            if buf.is_empty() {
                return Ok(0);
            }
            let free = PIPE_SIZE - s.buf.len();
            if free == 0 || (buf.len() <= PIPE_BUF && free < buf.len()) {
                return Err(Errno::EAGAIN);
            }
            let n = free.min(buf.len());
            if s.buf.try_reserve(n).is_err() {
                return Err(Errno::ENOMEM);
            }
            s.buf.extend(&buf[..n]);
            n
        };
        self.0.wq.wake_up();
        Ok(n)
    }

    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> Result<u64> {
        Err(Errno::ESPIPE)
    }

    fn positional(&self) -> bool {
        false
    }

    /// POLLOUT once a PIPE_BUF-sized write would fit; POLLERR without
    /// readers.
    fn poll(&self, _: &OpenFile) -> u16 {
        let s = self.0.state.lock();
        let mut ev = 0;
        if PIPE_SIZE - s.buf.len() >= PIPE_BUF {
            ev |= POLLOUT | POLLWRNORM;
        }
        if s.readers == 0 {
            ev |= POLLERR;
        }
        ev
    }

    fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        Some(self.0.wq.clone())
    }

    fn ioctl(&self, _: &OpenFile, cmd: u32, _: u64) -> Result<i64> {
        self.0.ioctl(cmd)
    }
}

impl Drop for ReadEnd {
    fn drop(&mut self) {
        self.0.state.lock().readers -= 1;
        self.0.wq.wake_up();
    }
}

impl Drop for WriteEnd {
    fn drop(&mut self) {
        self.0.state.lock().writers -= 1;
        self.0.wq.wake_up();
    }
}
