//! Pipes: EOF, EPIPE, atomic and partial writes, poll and wake-ups.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use uapi::fcntl::*;
use uapi::poll::*;
use uapi::stat::*;
use uapi::termios::FIONREAD;
use uapi::PIPE_BUF;
use vfs::pipe::{pipe2, PIPE_SIZE};
use vfs::{Errno, FdTable, Timespec, WaitHook};

fn pipe() -> (Arc<vfs::OpenFile>, Arc<vfs::OpenFile>) {
    pipe2(0, 1000, 100, Timespec::default()).unwrap()
}

#[test]
fn data_flows_in_order() {
    let (r, w) = pipe();
    assert_eq!(w.write(b"hello ").unwrap(), 6);
    assert_eq!(w.write(b"world").unwrap(), 5);
    let mut buf = [0u8; 8];
    assert_eq!(r.read(&mut buf).unwrap(), 8);
    assert_eq!(&buf, b"hello wo");
    assert_eq!(r.read(&mut buf).unwrap(), 3);
    assert_eq!(&buf[..3], b"rld");
}

#[test]
fn empty_pipe_would_block_until_writers_are_gone() {
    let (r, w) = pipe();
    assert_eq!(r.read(&mut [0u8; 4]), Err(Errno::EAGAIN));
    w.write(b"x").unwrap();
    drop(w);
    // Data still buffered is read first, then end of file.
    assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 1);
    assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 0);
}

#[test]
fn writing_without_readers_is_epipe() {
    let (r, w) = pipe();
    drop(r);
    assert_eq!(w.write(b"x"), Err(Errno::EPIPE));
    assert_eq!(w.write(&[0u8; 70000]), Err(Errno::EPIPE));
}

#[test]
fn small_writes_are_atomic_and_large_ones_partial() {
    let (r, w) = pipe();
    let fill = vec![7u8; PIPE_SIZE - 100];
    assert_eq!(w.write(&fill).unwrap(), fill.len());
    // 200 bytes ≤ PIPE_BUF do not fit whole: nothing is written.
    assert_eq!(w.write(&[1u8; 200]), Err(Errno::EAGAIN));
    assert_eq!(w.write(&[1u8; PIPE_BUF]), Err(Errno::EAGAIN));
    // More than PIPE_BUF: what fits goes in. As on Linux that is the
    // first `len % 4096` bytes, onto the last page (16 pages hold the
    // fill, the last 4060 bytes full), and no new page is free.
    assert_eq!(w.write(&[2u8; PIPE_BUF + 1]).unwrap(), 1);
    assert_eq!(w.write(&[3u8; PIPE_BUF + 1]).unwrap(), 1);
    let mut sink = vec![0u8; PIPE_SIZE];
    assert_eq!(r.read(&mut sink).unwrap(), PIPE_SIZE - 98);
    assert_eq!(sink[PIPE_SIZE - 100..PIPE_SIZE - 98], [2, 3]);
    // A write larger than the pipe is partial too.
    assert_eq!(w.write(&vec![4u8; PIPE_SIZE + 10]).unwrap(), PIPE_SIZE);
}

#[test]
fn pipes_cannot_seek() {
    let (r, w) = pipe();
    assert_eq!(r.lseek(0, SEEK_SET), Err(Errno::ESPIPE));
    assert_eq!(w.lseek(0, SEEK_CUR), Err(Errno::ESPIPE));
    assert_eq!(r.pread(&mut [0u8; 1], 0), Err(Errno::ESPIPE));
    assert_eq!(w.pwrite(b"x", 0), Err(Errno::ESPIPE));
    assert_eq!(r.write(b"x"), Err(Errno::EBADF));
    assert_eq!(w.read(&mut [0u8; 1]), Err(Errno::EBADF));
}

#[test]
fn pipe2_flags() {
    assert_eq!(pipe2(O_APPEND, 0, 0, Timespec::default()).err(), Some(Errno::EINVAL));
    let (r, w) = pipe2(O_NONBLOCK | O_CLOEXEC, 0, 0, Timespec::default()).unwrap();
    assert_eq!(r.flags(), O_RDONLY | O_NONBLOCK);
    assert_eq!(w.flags(), O_WRONLY | O_NONBLOCK);
    let m = r.metadata();
    assert_eq!(m.mode, S_IFIFO | 0o600);
    assert_eq!(m.ino, w.metadata().ino);
    let (r2, _) = pipe();
    assert_ne!(r2.metadata().ino, m.ino);
    assert_eq!(r2.metadata().uid, 1000);
}

#[test]
fn poll_reports_readiness_and_hangup() {
    let (r, w) = pipe();
    assert_eq!(r.poll(), 0);
    assert_eq!(w.poll(), POLLOUT | POLLWRNORM);
    w.write(b"abc").unwrap();
    assert_eq!(r.poll(), POLLIN | POLLRDNORM);
    assert_eq!(r.ioctl(FIONREAD, 0).unwrap(), 3);
    w.write(&vec![0u8; PIPE_SIZE - 3 - PIPE_BUF + 1]).unwrap();
    assert_eq!(w.poll(), 0);
    drop(w);
    assert_eq!(r.poll(), POLLIN | POLLRDNORM | POLLHUP);
    let (r, w) = pipe();
    drop(r);
    assert_eq!(w.poll() & POLLERR, POLLERR);
}

struct Counter(AtomicUsize);

impl WaitHook for Counter {
    fn wake(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn wait_queue_is_woken_by_writes_reads_and_closes() {
    let (r, w) = pipe();
    let wq = r.wait_queue().unwrap();
    assert!(Arc::ptr_eq(&wq, &w.wait_queue().unwrap()));
    let hook = Arc::new(Counter(AtomicUsize::new(0)));
    let id = wq.add(hook.clone());
    let gen = wq.generation();
    w.write(b"x").unwrap();
    assert_eq!(hook.0.load(Ordering::SeqCst), 1);
    assert!(wq.generation() > gen);
    r.read(&mut [0u8; 1]).unwrap();
    assert_eq!(hook.0.load(Ordering::SeqCst), 2);
    // A failed attempt wakes nobody.
    assert_eq!(r.read(&mut [0u8; 1]), Err(Errno::EAGAIN));
    assert_eq!(hook.0.load(Ordering::SeqCst), 2);
    drop(w);
    assert_eq!(hook.0.load(Ordering::SeqCst), 3);
    wq.remove(id);
    drop(r);
    assert_eq!(hook.0.load(Ordering::SeqCst), 3);
}

#[test]
fn an_end_stays_open_while_any_descriptor_refers_to_it() {
    let (r, w) = pipe();
    let t = FdTable::new();
    let rfd = t.install(r, false).unwrap();
    let wfd = t.install(w, false).unwrap();
    let wdup = t.dup(wfd).unwrap();
    let child = t.fork();
    drop(t.close(wfd).unwrap());
    drop(t.close(wdup).unwrap());
    // The child's copy of the write end keeps the pipe from EOF.
    assert_eq!(t.get(rfd).unwrap().read(&mut [0u8; 1]), Err(Errno::EAGAIN));
    child.get(wfd).unwrap().write(b"!").unwrap();
    child.close_all();
    let r = t.get(rfd).unwrap();
    assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 1);
    assert_eq!(r.read(&mut [0u8; 4]).unwrap(), 0);
}

#[test]
fn threads_move_a_megabyte_through_a_pipe() {
    let (r, w) = pipe();
    let total = 1 << 20;
    let writer = std::thread::spawn(move || {
        let data: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
        let mut off = 0;
        while off < total {
            match w.write(&data[off..(off + 10000).min(total)]) {
                Ok(n) => off += n,
                Err(Errno::EAGAIN) => std::thread::yield_now(),
                Err(e) => panic!("{e:?}"),
            }
        }
    });
    let mut got = Vec::with_capacity(total);
    let mut buf = [0u8; 3000];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(Errno::EAGAIN) => std::thread::yield_now(),
            Err(e) => panic!("{e:?}"),
        }
    }
    writer.join().unwrap();
    assert_eq!(got.len(), total);
    assert!(got.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
}
