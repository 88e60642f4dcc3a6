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
use crate::inode::{alloc_anon_dev, Inode, Metadata, Timespec};
use crate::iov_iter::{IovIter, IovSource};
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
    /// A new empty buffer, on the page `spare` if there is one.
    fn new(merge: bool, spare: &mut Option<alloc::vec::Vec<u8>>) -> Result<PipeBuf> {
        let data = match spare.take() {
            Some(data) => data,
            None => {
                let mut data = alloc::vec::Vec::new();
                data.try_reserve_exact(PIPE_PAGE).map_err(|_| Errno::ENOMEM)?;
                data
            }
        };
        Ok(PipeBuf { data, off: 0, merge })
    }

    fn len(&self) -> usize {
        self.data.len() - self.off
    }
}

struct State {
    bufs: VecDeque<PipeBuf>,
    /// The page of the last buffer read empty, for the next one written
    /// (Linux's `tmp_page`): a pipe passing small messages back and forth
    /// allocates nothing.
    spare: Option<alloc::vec::Vec<u8>>,
    readers: usize,
    writers: usize,
}

impl State {
    /// Bytes buffered (FIONREAD).
    fn bytes(&self) -> usize {
        self.bufs.iter().map(PipeBuf::len).sum()
    }

    /// The pages of the free buffers.
    fn room(&self) -> usize {
        PIPE_SLOTS.saturating_sub(self.bufs.len()) * PIPE_PAGE
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

/// Whether `file` is an end of a pipe made by [`pipe2`] (one type test,
/// cheaper than reading its mode on every write).
pub fn is_pipe(file: &OpenFile) -> bool {
    file.inode().as_any().is::<PipeInode>()
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
            spare: None,
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
                    if let Some(mut page) = s.bufs.pop_front().map(|b| b.data) {
                        page.clear();
                        s.spare = Some(page);
                    }
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

    fn has_read_iter(&self) -> bool {
        true
    }

    fn has_write_iter(&self) -> bool {
        true
    }

    fn pipe_room(&self) -> Option<usize> {
        Some(self.0.state.lock().room())
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
                let buf = PipeBuf::new(!packet, &mut s.spare)?;
                s.bufs.push_back(buf);
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

    fn has_read_iter(&self) -> bool {
        true
    }

    fn has_write_iter(&self) -> bool {
        true
    }

    fn pipe_room(&self) -> Option<usize> {
        Some(self.0.state.lock().room())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iov_iter::KernelSource;
    use crate::KernelIter;
    use alloc::vec;

    fn pipe(flags: u32) -> (Arc<OpenFile>, Arc<OpenFile>) {
        pipe2(flags, 0, 0, Timespec::default()).unwrap()
    }

    fn fionread(f: &OpenFile) -> i64 {
        f.ioctl(FIONREAD, 0).unwrap()
    }

    /// A source of `len` bytes whose first `good` can be read.
    struct Source {
        good: usize,
        len: usize,
    }

    impl IovSource for Source {
        fn count(&self) -> usize {
            self.len
        }
        fn consume(&mut self, len: usize, take: &mut dyn FnMut(&[u8]) -> Result<usize>) -> Result<usize> {
            let len = len.min(self.len);
            if len > self.good {
                return Err(Errno::EFAULT);
            }
            let n = take(&vec![b's'; len])?;
            self.good -= n;
            self.len -= n;
            Ok(n)
        }
    }

    /// A destination of `len` bytes whose first `good` can be written.
    struct Dest {
        good: usize,
        len: usize,
    }

    impl IovIter for Dest {
        fn count(&self) -> usize {
            self.len
        }
        fn copy_to_iter(&mut self, data: &[u8]) -> usize {
            let n = data.len().min(self.good).min(self.len);
            self.good -= n;
            self.len -= n;
            n
        }
    }

    #[test]
    fn small_writes_share_a_page_and_a_full_pipe_takes_no_more() {
        let (rd, wr) = pipe(0);
        for _ in 0..16 {
            assert_eq!(wr.write(&[1; 4000]), Ok(4000));
        }
        // 16 buffers of 4000 bytes: no room for a 97th byte on any page,
        // and no free buffer.
        assert_eq!(wr.write(&[1; 97]), Err(Errno::EAGAIN));
        assert_eq!(wr.write(&[1; 96]), Ok(96));
        assert_eq!(wr.poll(), 0);
        assert_eq!(fionread(&rd), 16 * 4000 + 96);
        let mut buf = vec![0u8; 4000];
        assert_eq!(rd.read(&mut buf), Ok(4000));
        assert_eq!(wr.poll() & POLLOUT, POLLOUT);
        // A PIPE_BUF-sized write goes in whole, on the free buffer.
        assert_eq!(wr.write(&[2; 4096]), Ok(4096));
        assert_eq!(wr.write(&[2; 1]), Err(Errno::EAGAIN));
    }

    #[test]
    fn a_read_takes_buffers_whole_until_one_faults() {
        let (rd, wr) = pipe(0);
        assert_eq!(wr.write(&[1; 4094]), Ok(4094));
        assert_eq!(wr.write(b"tail"), Ok(4));
        // The first buffer fits, the second faults: it stays.
        assert_eq!(rd.read_iter(&mut Dest { good: 4096, len: 8192 }), Ok(4094));
        assert_eq!(fionread(&rd), 4);
        // A fault part way through the only buffer: nothing read.
        assert_eq!(rd.read_iter(&mut Dest { good: 3, len: 4 }), Err(Errno::EFAULT));
        let mut buf = [0u8; 8];
        assert_eq!(rd.read(&mut buf), Ok(4));
        assert_eq!(&buf[..4], b"tail");
        assert_eq!(rd.read(&mut buf), Err(Errno::EAGAIN));
        drop(wr);
        assert_eq!(rd.read(&mut buf), Ok(0));
    }

    #[test]
    fn a_write_puts_count_mod_page_on_the_last_buffer_then_whole_pages() {
        let (rd, wr) = pipe(0);
        // Empty pipe: a chunk that faults is not written.
        assert_eq!(wr.write_iter(&mut Source { good: 4, len: 8 }), Err(Errno::EFAULT));
        assert_eq!(fionread(&rd), 0);
        let mut buf = vec![0u8; 8192];
        // The empty buffer the fault left is read as nothing.
        assert_eq!(rd.read(&mut buf), Err(Errno::EAGAIN));
        assert_eq!(wr.write_iter(&mut Source { good: 4096, len: 4100 }), Ok(4096));
        assert_eq!(rd.read(&mut buf), Ok(4096));
        // Onto a 1-byte buffer: the first 4100 % 4096 bytes merge, the
        // page after them faults.
        assert_eq!(wr.write(b"1"), Ok(1));
        assert_eq!(wr.write_iter(&mut Source { good: 4096, len: 4100 }), Ok(4));
        assert_eq!(rd.read(&mut buf), Ok(5));
        assert_eq!(&buf[..5], b"1ssss");
        // Without readers: EPIPE, but an empty write is still 0.
        drop(rd);
        assert_eq!(wr.write(b""), Ok(0));
        assert_eq!(wr.write(b"x"), Err(Errno::EPIPE));
    }

    #[test]
    fn a_packet_pipe_reads_one_write_at_a_time() {
        let (rd, wr) = pipe(O_DIRECT);
        assert_eq!(wr.write(b"abc"), Ok(3));
        assert_eq!(wr.write_iter(&mut KernelSource::new(b"defgh")), Ok(5));
        let mut buf = [0u8; 16];
        assert_eq!(rd.read(&mut buf), Ok(3));
        // A short read drops the rest of the packet.
        assert_eq!(rd.read_iter(&mut KernelIter::new(&mut buf[..2])), Ok(2));
        assert_eq!(&buf[..2], b"de");
        assert_eq!(rd.read(&mut buf), Err(Errno::EAGAIN));
    }
}
