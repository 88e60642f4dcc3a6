//! splice(2), F_GETPIPE_SZ and pselect6(2): what trace-cmd's recorders use
//! to move trace_pipe_raw pages, with Linux's results and errors.

use alloc::vec::Vec;

use super::scratch;
use crate::sys::{self, *};
use crate::{check_eq, checks, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    splice_moves_file_to_pipe_to_file,
    splice_errors_in_linux_order,
    splice_offsets_read_before_modes_and_checked_on_the_file_side,
    f_getpipe_sz_on_pipes_only,
    pselect6_readiness_and_errors,
];

const SPLICE: usize = 76;
const PSELECT6: usize = 72;
const F_GETPIPE_SZ: usize = 1032;
const SPLICE_F_NONBLOCK: usize = 2;

/// splice(fd_in, off_in, fd_out, off_out, len, flags); offsets as
/// `Option<&mut i64>`.
fn splice(
    fd_in: i32,
    off_in: Option<&mut i64>,
    fd_out: i32,
    off_out: Option<&mut i64>,
    len: usize,
    flags: usize,
) -> Result<usize, sys::Errno> {
    let p = |o: Option<&mut i64>| o.map_or(0, |o| o as *mut i64 as usize);
    let (pi, po) = (p(off_in), p(off_out));
    // SAFETY: the offsets are live i64s or null.
    unsafe { raw(SPLICE, &[fd_in as usize, pi, fd_out as usize, po, len, flags]) }
}

/// pselect6 on one fd_set word per set (fds below 64), with a timeout.
fn pselect(n: usize, rd: Option<&mut u64>, wr: Option<&mut u64>, timeout: &mut Timespec) -> Result<usize, sys::Errno> {
    let p = |s: Option<&mut u64>| s.map_or(0, |s| s as *mut u64 as usize);
    let (r, w) = (p(rd), p(wr));
    // SAFETY: the sets and the timeout are live; no signal mask.
    unsafe { raw(PSELECT6, &[n, r, w, 0, timeout as *mut Timespec as usize, 0]) }
}

fn temp(name: &str, data: &[u8]) -> Result<(Vec<u8>, i32), crate::Fail> {
    let path = scratch(name);
    write_file(&path, data, 0o644).ctx("create scratch file")?;
    let fd = open(&path, O_RDWR | O_CLOEXEC, 0).ctx("open scratch file")?;
    Ok((path, fd))
}

fn splice_moves_file_to_pipe_to_file() -> Outcome {
    let (path, fd) = temp("splice-in", b"hello splice")?;
    let [r, w] = pipe().ctx("pipe")?;
    let mut off = 6i64;
    check_eq!(
        splice(fd, Some(&mut off), w, None, 100, 0),
        Ok(6),
        "file at offset 6 into the pipe"
    );
    check_eq!(off, 12, "the offset moved on");
    check_eq!(rt::fs::lseek(fd, 0, SEEK_CUR), Ok(0), "the file offset did not");
    let mut buf = [0u8; 16];
    check_eq!(
        read(r, &mut buf).map(|n| buf[..n].to_vec()),
        Ok(b"splice".to_vec()),
        "what the pipe holds"
    );
    check_eq!(splice(fd, None, w, None, 5, 0), Ok(5), "from the file offset");
    check_eq!(rt::fs::lseek(fd, 0, SEEK_CUR), Ok(5), "the file offset moved");
    let (out_path, out) = temp("splice-out", b"")?;
    check_eq!(splice(r, None, out, None, 100, 0), Ok(5), "pipe into a file");
    check_eq!(rt::fs::lseek(out, 0, SEEK_CUR), Ok(5), "the output offset moved");
    check_eq!(rt::fs::lseek(out, 0, SEEK_SET), Ok(0), "rewind");
    check_eq!(
        read(out, &mut buf).map(|n| buf[..n].to_vec()),
        Ok(b"hello".to_vec()),
        "what the file got"
    );
    close(w);
    check_eq!(
        splice(r, None, out, None, 100, 0),
        Ok(0),
        "empty pipe without writers: end of file"
    );
    for f in [fd, r, out] {
        close(f);
    }
    remove(&path);
    remove(&out_path);
    Ok(())
}

fn splice_errors_in_linux_order() -> Outcome {
    let (path, fd) = temp("splice-err", b"data")?;
    let [r, w] = pipe().ctx("pipe")?;
    let mut off = 0i64;
    check_eq!(
        splice(999, None, 998, None, 0, 0x100),
        Ok(0),
        "zero length before anything"
    );
    check_eq!(splice(fd, None, w, None, 4, 0x10), Err(Errno::EINVAL), "unknown flag");
    check_eq!(splice(999, None, w, None, 4, 0), Err(Errno::EBADF), "closed fd_in");
    check_eq!(
        splice(r, Some(&mut off), fd, None, 4, 0),
        Err(Errno::ESPIPE),
        "offset on the input pipe"
    );
    check_eq!(
        splice(fd, None, w, Some(&mut off), 4, 0),
        Err(Errno::ESPIPE),
        "offset on the output pipe"
    );
    check_eq!(
        splice(w, None, fd, None, 4, 0),
        Err(Errno::EBADF),
        "reading the write end"
    );
    check_eq!(splice(fd, None, fd, None, 4, 0), Err(Errno::EINVAL), "no pipe");
    check_eq!(
        splice(r, None, fd, None, 4, SPLICE_F_NONBLOCK),
        Err(Errno::EAGAIN),
        "empty pipe, SPLICE_F_NONBLOCK"
    );
    for f in [fd, r, w] {
        close(f);
    }
    remove(&path);
    Ok(())
}

/// __do_splice copies the offsets in (EFAULT) before do_splice checks the
/// modes (EBADF); the file side's range is rw_verify_area's (EINVAL for a
/// negative offset or a length over SSIZE_MAX), after O_APPEND (EINVAL).
fn splice_offsets_read_before_modes_and_checked_on_the_file_side() -> Outcome {
    let (path, fd) = temp("splice-off", b"data")?;
    let ro = open(&path, O_RDONLY | O_CLOEXEC, 0).ctx("open read-only")?;
    let app = open(&path, O_WRONLY | O_APPEND | O_CLOEXEC, 0).ctx("open O_APPEND")?;
    let [r, w] = pipe().ctx("pipe")?;
    let bad = 8usize;
    // SAFETY: the kernel must refuse the bad offset pointer.
    let raw_splice = |fd_in: i32, off_in: usize, fd_out: i32, off_out: usize, len: usize| unsafe {
        raw(SPLICE, &[fd_in as usize, off_in, fd_out as usize, off_out, len, 0])
    };
    check_eq!(
        raw_splice(r, 0, ro, bad, 4),
        Err(Errno::EFAULT),
        "bad off_out before the output's mode"
    );
    check_eq!(
        raw_splice(app, bad, w, 0, 4),
        Err(Errno::EFAULT),
        "bad off_in before the input's mode"
    );
    let mut neg = -1i64;
    check_eq!(
        splice(fd, Some(&mut neg), w, None, 4, 0),
        Err(Errno::EINVAL),
        "negative input offset"
    );
    let mut neg = -1i64;
    check_eq!(
        splice(r, None, fd, Some(&mut neg), 4, 0),
        Err(Errno::EINVAL),
        "negative output offset"
    );
    let mut off = 0i64;
    check_eq!(
        splice(fd, Some(&mut off), w, None, usize::MAX, 0),
        Err(Errno::EINVAL),
        "length over SSIZE_MAX"
    );
    check_eq!(
        splice(r, None, app, Some(&mut off), 4, 0),
        Err(Errno::EINVAL),
        "O_APPEND output"
    );
    check_eq!(
        splice(fd, Some(&mut off), w, None, 4, 0),
        Ok(4),
        "a good offset still works"
    );
    check_eq!(off, 4, "and moves on");
    for f in [fd, ro, app, r, w] {
        close(f);
    }
    remove(&path);
    Ok(())
}

fn f_getpipe_sz_on_pipes_only() -> Outcome {
    let (path, fd) = temp("pipesz", b"")?;
    let [r, w] = pipe().ctx("pipe")?;
    check_eq!(fcntl(r, F_GETPIPE_SZ, 0), Ok(65536), "read end");
    check_eq!(fcntl(w, F_GETPIPE_SZ, 0), Ok(65536), "write end");
    check_eq!(fcntl(fd, F_GETPIPE_SZ, 0), Err(Errno::EBADF), "a regular file");
    for f in [fd, r, w] {
        close(f);
    }
    remove(&path);
    Ok(())
}

fn pselect6_readiness_and_errors() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    let n = (r.max(w) + 1) as usize;
    let (rb, wb) = (1u64 << r, 1u64 << w);
    let mut zero = Timespec::default();
    let (mut rd, mut wr) = (rb, wb);
    check_eq!(
        pselect(n, Some(&mut rd), Some(&mut wr), &mut zero),
        Ok(1),
        "only the write end is ready"
    );
    check_eq!((rd, wr), (0, wb), "the sets say which");
    write(w, b"x").ctx("write")?;
    let (mut rd, mut wr) = (rb, wb);
    check_eq!(
        pselect(n, Some(&mut rd), Some(&mut wr), &mut zero),
        Ok(2),
        "both ends ready"
    );
    check_eq!((rd, wr), (rb, wb), "both bits kept");
    let mut tmo = Timespec {
        sec: 0,
        nsec: 20_000_000,
    };
    let mut rd = rb;
    let mut buf = [0u8; 1];
    read(r, &mut buf).ctx("read")?;
    check_eq!(
        pselect(n, Some(&mut rd), None, &mut tmo),
        Ok(0),
        "nothing to read: the timeout ends it"
    );
    check_eq!((rd, tmo.sec, tmo.nsec), (0, 0, 0), "no bit set, no time left");
    close(w);
    let mut rd = rb;
    check_eq!(
        pselect(n, Some(&mut rd), None, &mut zero),
        Ok(1),
        "writer closed: readable (end of file)"
    );
    // A descriptor just closed, inside the table: EBADF.
    let gone = w;
    let mut rd = rb | 1u64 << gone;
    check_eq!(
        pselect(gone as usize + 1, Some(&mut rd), None, &mut zero),
        Err(Errno::EBADF),
        "a closed fd in the set"
    );
    check_eq!(
        pselect(usize::MAX, None, None, &mut zero),
        Err(Errno::EINVAL),
        "negative n"
    );
    close(r);
    Ok(())
}
