//! The destination of a read (Linux's `struct iov_iter` on the read side):
//! a filesystem copies its data straight into it, so that a read of the
//! page cache needs no kernel bounce buffer. The kernel supplies the
//! user-memory kind; [`KernelIter`] is a kernel buffer. [`IovSource`] is
//! the write side.

use crate::Result;

/// Where a read delivers its bytes.
pub trait IovIter {
    /// Bytes the destination still takes.
    fn count(&self) -> usize;

    /// Copies the first `min(data.len(), count())` bytes of `data` and
    /// advances past them; returns how many were copied, fewer only when
    /// the destination faulted part way (Linux's `copy_to_iter`).
    fn copy_to_iter(&mut self, data: &[u8]) -> usize;

    /// Makes sure the next `len` bytes (at most `count()`) of the
    /// destination can be written now, before data is taken from a file
    /// that cannot give it back (a pipe, a terminal): Linux's
    /// `fault_in_iov_iter_writeable`. `false` when part of it cannot.
    fn fault_in_writeable(&mut self, _len: usize) -> bool {
        true
    }
}

/// Where a write takes its bytes from (Linux's `struct iov_iter` on the
/// write side). The source hands its bytes over as one slice, so that a
/// file that discards them (`/dev/null`) never reads them, and user memory
/// is copied once, into a buffer the source owns.
pub trait IovSource {
    /// Bytes the source still holds.
    fn count(&self) -> usize;

    /// Hands the next `min(len, count())` bytes to `take` as one slice;
    /// `take` returns how many it used, and the source advances by that.
    /// EFAULT (with `take` not called) when those bytes cannot be read.
    fn consume(&mut self, len: usize, take: &mut dyn FnMut(&[u8]) -> Result<usize>) -> Result<usize>;
}

/// A kernel buffer as the source of a write.
pub struct KernelSource<'a> {
    buf: &'a [u8],
}

impl<'a> KernelSource<'a> {
    /// A source of `buf.len()` bytes.
    pub fn new(buf: &'a [u8]) -> Self {
        KernelSource { buf }
    }
}

impl IovSource for KernelSource<'_> {
    fn count(&self) -> usize {
        self.buf.len()
    }

    fn consume(&mut self, len: usize, take: &mut dyn FnMut(&[u8]) -> Result<usize>) -> Result<usize> {
        let data = self.buf.get(..len.min(self.buf.len())).unwrap_or_default();
        let n = take(data)?.min(data.len());
        self.buf = self.buf.get(n..).unwrap_or_default();
        Ok(n)
    }
}

/// A page of zeros, the source of [`iov_iter_zero`] and of holes.
pub(crate) static ZERO_PAGE: [u8; 4096] = [0; 4096];

/// Writes `len` zero bytes (at most `to.count()`) to `to`; returns how
/// many were written, fewer when it faulted (Linux's `iov_iter_zero`).
pub fn iov_iter_zero(to: &mut dyn IovIter, len: usize) -> usize {
    let len = len.min(to.count());
    let mut done = 0;
    while done < len {
        let chunk = (len - done).min(ZERO_PAGE.len());
        let n = to.copy_to_iter(ZERO_PAGE.get(..chunk).unwrap_or_default());
        done += n;
        if n < chunk {
            break;
        }
    }
    done
}

/// A kernel buffer as the destination of a read.
pub struct KernelIter<'a> {
    buf: &'a mut [u8],
    done: usize,
}

impl<'a> KernelIter<'a> {
    /// A destination of `buf.len()` bytes.
    pub fn new(buf: &'a mut [u8]) -> Self {
        KernelIter { buf, done: 0 }
    }

    /// Bytes copied so far.
    pub fn copied(&self) -> usize {
        self.done
    }
}

impl IovIter for KernelIter<'_> {
    fn count(&self) -> usize {
        self.buf.len() - self.done
    }

    fn copy_to_iter(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.count());
        if let (Some(dst), Some(src)) = (self.buf.get_mut(self.done..self.done + n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.done += n;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uapi::Errno;

    /// A source whose bytes cannot be read: only a file that never reads
    /// them takes a write from it.
    struct Unreadable(usize);

    impl IovSource for Unreadable {
        fn count(&self) -> usize {
            self.0
        }
        fn consume(&mut self, _: usize, _: &mut dyn FnMut(&[u8]) -> Result<usize>) -> Result<usize> {
            Err(Errno::EFAULT)
        }
    }

    #[test]
    fn kernel_source_advances_by_what_the_file_took() {
        let mut src = KernelSource::new(b"abcdef");
        let mut seen = alloc::vec::Vec::new();
        let n = src.consume(4, &mut |d| {
            seen.extend_from_slice(d);
            Ok(3)
        });
        assert_eq!((n, seen.as_slice(), src.count()), (Ok(3), &b"abcd"[..], 3));
        assert_eq!(src.consume(10, &mut |d| Ok(d.len())), Ok(3));
        assert_eq!(src.consume(10, &mut |_| Err(Errno::EAGAIN)), Err(Errno::EAGAIN));
    }

    #[test]
    fn dev_null_and_zero_take_a_write_without_reading_it_but_a_file_faults() {
        use crate::device::{NullDevice, ZeroDevice};
        use crate::file::FileOps;
        use crate::inode::FileSystem;
        let fs = crate::ramfs::RamFs::new(alloc::sync::Arc::new(crate::inode::EpochClock));
        let inode = fs
            .root()
            .create(b"f", crate::inode::NodeKind::Regular, 0o644, 0, 0)
            .unwrap();
        let f = crate::file::OpenFile::new_inode(None, inode, uapi::fcntl::O_RDWR);
        for dev in [&NullDevice as &dyn FileOps, &ZeroDevice] {
            assert_eq!(dev.write_iter(&f, &mut Unreadable(4096), &mut 0), Ok(4096));
        }
        assert_eq!(f.write_iter(&mut Unreadable(4096)), Err(Errno::EFAULT));
        assert_eq!(f.write_iter(&mut KernelSource::new(b"hello")), Ok(5));
        assert_eq!(f.pwrite_iter(&mut KernelSource::new(b"J"), 0), Ok(1));
        let mut buf = [0u8; 5];
        assert_eq!(f.pread(&mut buf, 0), Ok(5));
        assert_eq!(&buf, b"Jello");
    }

    #[test]
    fn kernel_iter_takes_what_fits_and_advances() {
        let mut buf = [0u8; 5];
        let mut it = KernelIter::new(&mut buf);
        assert_eq!(it.copy_to_iter(b"abc"), 3);
        assert_eq!(it.count(), 2);
        assert_eq!(it.copy_to_iter(b"defg"), 2);
        assert_eq!(it.count(), 0);
        assert_eq!(it.copy_to_iter(b"h"), 0);
        assert_eq!(it.copied(), 5);
        assert_eq!(&buf, b"abcde");
    }

    /// A destination that takes `room` bytes, then faults, and says so
    /// when asked to fault in more than that.
    struct Faulting(usize, usize);

    impl IovIter for Faulting {
        fn count(&self) -> usize {
            self.1
        }
        fn copy_to_iter(&mut self, data: &[u8]) -> usize {
            let n = data.len().min(self.0).min(self.1);
            self.0 -= n;
            self.1 -= n;
            n
        }
        fn fault_in_writeable(&mut self, len: usize) -> bool {
            len.min(self.1) <= self.0
        }
    }

    #[test]
    fn a_pipe_read_into_a_bad_buffer_fails_before_consuming() {
        let (rd, wr) = crate::pipe::pipe2(0, 0, 0, crate::Timespec::default()).unwrap();
        wr.write(b"hello").unwrap();
        assert_eq!(rd.read_iter(&mut Faulting(0, 5)), Err(Errno::EFAULT));
        let mut buf = [0u8; 5];
        assert_eq!(rd.read_iter(&mut KernelIter::new(&mut buf)), Ok(5));
        assert_eq!(&buf, b"hello");
    }

    #[test]
    fn a_device_read_is_short_where_the_destination_faults() {
        let zero = crate::file::OpenFile::new_ops(
            None,
            crate::pipe::pipe2(0, 0, 0, crate::Timespec::default())
                .unwrap()
                .0
                .inode()
                .clone(),
            alloc::sync::Arc::new(crate::device::ZeroDevice),
            uapi::fcntl::O_RDONLY,
        );
        assert_eq!(zero.read_iter(&mut Faulting(10, 100)), Ok(10));
        assert_eq!(zero.read_iter(&mut Faulting(0, 100)), Err(Errno::EFAULT));
        assert_eq!(zero.read_iter(&mut Faulting(0, 0)), Ok(0));
    }

    #[test]
    fn iov_iter_zero_fills_past_one_page_and_stops_at_the_count() {
        let mut buf = [7u8; 5000];
        let mut it = KernelIter::new(&mut buf[..4500]);
        assert_eq!(iov_iter_zero(&mut it, 10_000), 4500);
        assert!(buf[..4500].iter().all(|&b| b == 0));
        assert_eq!(buf[4500], 7);
    }
}
