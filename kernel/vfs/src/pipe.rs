//! Pipes: pipe2(2), 16 buffers of up to 4096 bytes (64 KiB) between a
//! read end and a write end.
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
use uapi::Errno;

use crate::file::{FileOps, OpenFile};
use crate::iov_iter::{IovIter, IovSource};
use crate::inode::{alloc_anon_dev, Inode, Metadata, Timespec};
use crate::wait::WaitQueueHead;
use crate::Result;

/// Capacity of a pipe (Linux's default: 16 pages).
pub const PIPE_SIZE: usize = 65536;

/// The size of one pipe buffer (a page on Linux).
const PIPE_PAGE: usize = 4096;

/// How many buffers a pipe holds (Linux's `max_usage`).
const PIPE_SLOTS: usize = PIPE_SIZE / PIPE_PAGE;

/// One of a pipe's buffers (Linux's `struct pipe_buffer` over a page):
/// the bytes not yet read are `data[off..]`. Linux moves data in and out
/// a buffer at a time, whole or not at all when user memory faults, so
/// the boundaries between buffers are visible and kept as Linux draws
/// them (see [`WriteEnd::write_iter`]).
struct PipeBuf {
    data: alloc::vec::Vec<u8>,
    off: usize,
    /// A later small write may append to it (`PIPE_BUF_FLAG_CAN_MERGE`);
    /// false for a packet (`O_DIRECT`), which a read takes whole.
    merge: bool,
}

impl PipeBuf {
    fn new(merge: bool) -> Result<PipeBuf> {
        let mut data = alloc::vec::Vec::new();
        data.try_reserve_exact(PIPE_PAGE).map_err(|_| Errno::ENOMEM)?;
        Ok(PipeBuf { data, off: 0, merge })
    }

    fn len(&self) -> usize {
        self.data.len() - self.off
    }
}

struct State {
    bufs: VecDeque<PipeBuf>,
    readers: usize,
    writers: usize,
}

impl State {
    /// Bytes buffered (FIONREAD).
    fn bytes(&self) -> usize {
        self.bufs.iter().map(PipeBuf::len).sum()
    }

    /// Every buffer in use (Linux's `pipe_full`): a writer waits.
    fn full(&self) -> bool {
        self.bufs.len() >= PIPE_SLOTS
    }
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
            bufs: VecDeque::new(),
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
            FIONREAD => Ok(self.state.lock().bytes() as i64),
            _ => Err(Errno::ENOTTY),
        }
    }
}

impl FileOps for ReadEnd {
    fn read(&self, file: &OpenFile, buf: &mut [u8], pos: &mut u64) -> Result<usize> {
        self.read_iter(file, &mut crate::KernelIter::new(buf), pos)
    }

    /// Linux's `pipe_read`, without its sleep: the buffered bytes, a
    /// buffer at a time. A buffer whose copy to `to` faults stays in the
    /// pipe whole (the bytes that reached `to` before the fault are read
    /// again later), and the read ends there: EFAULT if nothing was read
    /// before it. A packet buffer (written with O_DIRECT) ends the read
    /// and what `to` had no room for is dropped. 0 (end of file) when
    /// empty with no writers; EAGAIN when empty with writers.
    fn read_iter(&self, _: &OpenFile, to: &mut dyn IovIter, _: &mut u64) -> Result<usize> {
        if to.count() == 0 {
            return Ok(0);
        }
        let mut ret = 0;
        let mut fault = false;
        {
            let mut s = self.0.state.lock();
            while let Some(buf) = s.bufs.front_mut() {
                let chars = buf.len().min(to.count());
                let data = buf.data.get(buf.off..buf.off + chars).unwrap_or_default();
                if to.copy_to_iter(data) < chars {
                    fault = true;
                    break;
                }
                ret += chars;
                buf.off += chars;
                let packet = !buf.merge;
                if packet || buf.len() == 0 {
                    s.bufs.pop_front();
                }
                if packet || to.count() == 0 {
                    break;
                }
            }
            if ret == 0 && !fault {
                return if s.writers == 0 { Ok(0) } else { Err(Errno::EAGAIN) };
            }
        }
        if ret == 0 {
            return Err(Errno::EFAULT);
        }
        self.0.wq.wake_up();
        Ok(ret)
    }

    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> Result<u64> {
        Err(Errno::ESPIPE)
    }

    fn positional(&self) -> bool {
        false
    }

    fn nowait(&self) -> bool {
        true
    }

    fn poll(&self, _: &OpenFile) -> u16 {
        let s = self.0.state.lock();
        let mut ev = 0;
        if !s.bufs.is_empty() {
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
    fn write(&self, file: &OpenFile, buf: &[u8], pos: &mut u64) -> Result<usize> {
        self.write_iter(file, &mut crate::iov_iter::KernelSource::new(buf), pos)
    }

    /// Linux's `pipe_write`, without its sleep. EPIPE without readers.
    /// The first `count % 4096` bytes are appended to the last buffer if
    /// it has room for them all; the rest goes into new buffers of up to
    /// 4096 bytes while there are free ones; then EAGAIN if nothing was
    /// written (the kernel waits for a blocking file and writes the
    /// rest). So up to PIPE_BUF bytes go in whole or not at all. A
    /// chunk whose bytes cannot be read from `from` is not written and
    /// ends the write (EFAULT if nothing was written); as on Linux a new
    /// buffer that faulted stays in the pipe, empty.
    fn write_iter(&self, file: &OpenFile, from: &mut dyn IovSource, _: &mut u64) -> Result<usize> {
        let total = from.count();
        if total == 0 {
            return Ok(0);
        }
        let packet = file.flags() & O_DIRECT != 0;
        let mut ret = 0;
        {
            let mut s = self.0.state.lock();
            if s.readers == 0 {
                return Err(Errno::EPIPE);
            }
            let chars = total % PIPE_PAGE;
            if let Some(last) = s.bufs.back_mut().filter(|b| chars != 0 && b.merge) {
                if last.data.len() + chars <= PIPE_PAGE {
                    ret = from.consume(chars, &mut |d| {
                        last.data.extend_from_slice(d);
                        Ok(d.len())
                    })?;
                }
            }
            while from.count() > 0 {
                if s.full() {
                    if ret == 0 {
                        return Err(Errno::EAGAIN);
                    }
                    break;
                }
                s.bufs.push_back(PipeBuf::new(!packet)?);
                let Some(buf) = s.bufs.back_mut() else { break };
                let n = from.count().min(PIPE_PAGE);
                match from.consume(n, &mut |d| {
                    buf.data.extend_from_slice(d);
                    Ok(d.len())
                }) {
                    Ok(n) => ret += n,
                    Err(e) if ret == 0 => {
                        drop(s);
                        self.0.wq.wake_up();
                        return Err(e);
                    }
                    Err(_) => break,
                }
            }
        }
        self.0.wq.wake_up();
        Ok(ret)
    }

    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> Result<u64> {
        Err(Errno::ESPIPE)
    }

    fn positional(&self) -> bool {
        false
    }

    fn nowait(&self) -> bool {
        true
    }

    /// POLLOUT while a buffer is free (so a PIPE_BUF-sized write fits);
    /// POLLERR without readers.
    fn poll(&self, _: &OpenFile) -> u16 {
        let s = self.0.state.lock();
        let mut ev = 0;
        if !s.full() {
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
