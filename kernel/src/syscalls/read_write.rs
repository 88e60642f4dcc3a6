//! In-kernel copies between files (Linux's fs/read_write.c): sendfile and
//! copy_file_range, through a kernel buffer a chunk at a time.

use super::syscall;
use crate::errno::Errno;
use crate::fs::{blocking, current_files};
use crate::uaccess::{get_user_u64, put_user_u64, UserPtr};
use vfs::file::OpenFile;

/// Bytes moved per round.
const CHUNK: usize = 64 * 1024;
/// Largest single transfer (Linux's MAX_RW_COUNT).
const MAX_RW: u64 = uapi::uio::MAX_RW_COUNT;

/// Copies up to `count` bytes from `src` (at `*src_pos`, or its offset) to
/// `dst` (at `*dst_pos`, or its offset); stops at the end of `src` or at a
/// short write. Returns the bytes copied; an error only if none were.
fn copy_between(
    src: &OpenFile,
    mut src_pos: Option<&mut i64>,
    dst: &OpenFile,
    mut dst_pos: Option<&mut i64>,
    count: u64,
) -> Result<u64, Errno> {
    let count = count.min(MAX_RW) as usize;
    let mut buf = crate::uaccess::zeroed_buf(count.min(CHUNK))?;
    let mut done = 0usize;
    while done < count {
        let want = (count - done).min(buf.len());
        let got = match src_pos.as_deref_mut() {
            Some(pos) => src.pread(&mut buf[..want], *pos),
            None => blocking(src, || src.read(&mut buf[..want])),
        };
        let got = match got {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        let put = match dst_pos.as_deref_mut() {
            Some(pos) => dst.pwrite(&buf[..got], *pos),
            None => blocking(dst, || dst.write(&buf[..got])),
        };
        let put = match put {
            Ok(n) => n,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        if let Some(pos) = src_pos.as_deref_mut() {
            *pos += put as i64;
        }
        if let Some(pos) = dst_pos.as_deref_mut() {
            *pos += put as i64;
        }
        done += put;
        if put < got || got < want {
            // A short write, or the source had no more for now.
            if put < got && src_pos.is_none() && src.is_positional() {
                // Give back what was read but not written.
                let _ = src.lseek(put as i64 - got as i64, 1);
            }
            break;
        }
    }
    Ok(done as u64)
}

// In Linux's order (sendfile64, do_sendfile): the offset is read first,
// then the input is checked (descriptor and mode, offsets, the range),
// then the output (descriptor and mode, and O_APPEND, which
// do_splice_direct refuses for a file but a pipe ignores).
syscall!(__arm64_sys_sendfile, r, {
    let (out_fd, in_fd, offp, count) = (r.regs[0] as i32, r.regs[1] as i32, UserPtr::new(r.regs[2]), r.regs[3]);
    let mut pos = if offp.is_null() {
        None
    } else {
        Some(get_user_u64(offp)? as i64)
    };
    let files = current_files();
    let src = files.get(in_fd)?;
    if !src.readable() {
        return Err(Errno::EBADF);
    }
    if pos.is_some() && !src.is_positional() {
        return Err(Errno::ESPIPE);
    }
    // rw_verify_area: a negative offset, a count over SSIZE_MAX, or a range
    // past the largest offset.
    let start = pos.unwrap_or(0);
    if start < 0 || (count as i64) < 0 || start.checked_add(count as i64).is_none() {
        return Err(Errno::EINVAL);
    }
    let dst = files.get(out_fd)?;
    if !dst.writable() {
        return Err(Errno::EBADF);
    }
    if !is_pipe(&dst) && dst.flags() & uapi::fcntl::O_APPEND != 0 {
        return Err(Errno::EINVAL);
    }
    let Some(pos) = pos.as_mut() else {
        return copy_between(&src, None, &dst, None, count);
    };
    let n = copy_between(&src, Some(pos), &dst, None, count)?;
    put_user_u64(offp, *pos as u64)?;
    Ok(n)
});

syscall!(__arm64_sys_copy_file_range, r, {
    let (fd_in, off_in, fd_out, off_out, len, flags) = (
        r.regs[0] as i32,
        UserPtr::new(r.regs[1]),
        r.regs[2] as i32,
        UserPtr::new(r.regs[3]),
        r.regs[4],
        r.regs[5],
    );
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let files = current_files();
    let src = files.get(fd_in)?;
    let dst = files.get(fd_out)?;
    if !src.readable() || !dst.writable() || dst.flags() & uapi::fcntl::O_APPEND != 0 {
        return Err(Errno::EBADF);
    }
    let (sm, dm) = (src.metadata(), dst.metadata());
    if sm.is_dir() || dm.is_dir() {
        return Err(Errno::EISDIR);
    }
    if !sm.is_regular() || !dm.is_regular() {
        return Err(Errno::EINVAL);
    }
    let mut pin = match off_in {
        UserPtr::NULL => src.offset() as i64,
        p => get_user_u64(p)? as i64,
    };
    let mut pout = match off_out {
        UserPtr::NULL => dst.offset() as i64,
        p => get_user_u64(p)? as i64,
    };
    if pin < 0 || pout < 0 {
        return Err(Errno::EINVAL);
    }
    // The same file: the ranges may not overlap.
    if sm.ino == dm.ino && sm.dev == dm.dev && (pin as u64) < pout as u64 + len && (pout as u64) < pin as u64 + len {
        return Err(Errno::EINVAL);
    }
    let n = copy_between(&src, Some(&mut pin), &dst, Some(&mut pout), len)?;
    // Offsets given are updated in user memory, the others in the files.
    match off_in {
        UserPtr::NULL => {
            src.lseek(pin, 0)?;
        }
        p => put_user_u64(p, pin as u64)?,
    }
    match off_out {
        UserPtr::NULL => {
            dst.lseek(pout, 0)?;
        }
        p => put_user_u64(p, pout as u64)?,
    }
    Ok(n)
});

use uapi::fcntl::{SPLICE_F_ALL, SPLICE_F_NONBLOCK};

fn is_pipe(f: &OpenFile) -> bool {
    f.metadata().mode & uapi::stat::S_IFMT == uapi::stat::S_IFIFO
}

/// An `loff_t *` argument of splice: None for NULL (the range is checked
/// where Linux checks it, after the modes).
fn splice_offset(p: UserPtr) -> Result<Option<i64>, Errno> {
    if p.is_null() {
        return Ok(None);
    }
    Ok(Some(get_user_u64(p)? as i64))
}

/// Runs `op` once when `nonblock`, else waits on `file` while it says
/// EAGAIN (unless the file itself is non-blocking).
fn maybe_blocking<T>(file: &OpenFile, nonblock: bool, op: impl FnMut() -> vfs::Result<T>) -> Result<T, Errno> {
    let mut op = op;
    if nonblock {
        op()
    } else {
        blocking(file, op)
    }
}

/// Writes all of `buf` to `dst` (at `*pos` when given), waiting for room.
fn write_all(dst: &OpenFile, mut pos: Option<&mut i64>, buf: &[u8]) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        let n = match pos.as_deref_mut() {
            Some(p) => {
                let n = dst.pwrite(&buf[done..], *p)?;
                *p += n as i64;
                n
            }
            None => blocking(dst, || dst.write(&buf[done..]))?,
        };
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

// splice(fd_in, off_in, fd_out, off_out, len, flags), as Linux's
// fs/splice.c: one side must be a pipe. Data moves through a kernel
// buffer; a file with a splice of its own (`trace_pipe_raw`: whole pages
// only) provides it through FileOps::splice_read, and a file into a pipe
// moves at most what the pipe has room for, so nothing read is lost.
syscall!(__arm64_sys_splice, r, {
    let (fd_in, off_in, fd_out, off_out, len, flags) = (
        r.regs[0] as i32,
        UserPtr::new(r.regs[1]),
        r.regs[2] as i32,
        UserPtr::new(r.regs[3]),
        r.regs[4],
        r.regs[5] as u32,
    );
    // In Linux's order: a zero length before anything, then the flags,
    // the descriptors, offsets on pipes, the access modes.
    if len == 0 {
        return Ok(0);
    }
    if flags & !SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let files = current_files();
    let src = files.get(fd_in)?;
    let dst = files.get(fd_out)?;
    let (src_pipe, dst_pipe) = (is_pipe(&src), is_pipe(&dst));
    if (src_pipe && !off_in.is_null()) || (dst_pipe && !off_out.is_null()) {
        return Err(Errno::ESPIPE);
    }
    // __do_splice reads the offsets before do_splice checks the modes.
    let mut pout = splice_offset(off_out)?;
    let mut pin = splice_offset(off_in)?;
    if !src.readable() || !dst.writable() {
        return Err(Errno::EBADF);
    }
    if !src_pipe && !dst_pipe {
        return Err(Errno::EINVAL);
    }
    if src_pipe && dst_pipe {
        let (a, b) = (src.metadata(), dst.metadata());
        if a.ino == b.ino && a.dev == b.dev {
            return Err(Errno::EINVAL);
        }
    }
    // The file side: an offset only where it has offsets (FMODE_PREAD or
    // PWRITE), no O_APPEND output, and rw_verify_area's range.
    let (file, pos) = if dst_pipe { (&src, pin) } else { (&dst, pout) };
    if !(src_pipe && dst_pipe) {
        if pos.is_some() && !file.is_positional() {
            return Err(Errno::EINVAL);
        }
        if !dst_pipe && dst.flags() & uapi::fcntl::O_APPEND != 0 {
            return Err(Errno::EINVAL);
        }
        if pos.is_some_and(|p| p < 0 || p.checked_add(len as i64).is_none()) || (len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
    }
    let flag_nonblock = flags & SPLICE_F_NONBLOCK != 0;
    let mut want = len.min(MAX_RW) as usize;
    if dst_pipe {
        // Wait for room in the pipe, then take no more than fits.
        let room = maybe_blocking(&dst, flag_nonblock, || match dst.pipe_room().unwrap_or(0) {
            0 => Err(Errno::EAGAIN),
            n => Ok(n),
        })?;
        want = want.min(room);
    } else {
        want = want.min(vfs::pipe::PIPE_SIZE);
    }
    let mut buf = crate::uaccess::zeroed_buf(want)?;
    let src_nonblock = flag_nonblock || src.is_nonblocking();
    let got = match src.splice_read(&mut buf, src_nonblock) {
        Some(res) => res?,
        None => match pin.as_mut() {
            Some(p) => {
                let n = src.pread(&mut buf, *p)?;
                *p += n as i64;
                n
            }
            // A pipe honours SPLICE_F_NONBLOCK, another file its own flag.
            None if src_pipe => maybe_blocking(&src, flag_nonblock, || src.read(&mut buf))?,
            None => blocking(&src, || src.read(&mut buf))?,
        },
    };
    let put = write_all(&dst, pout.as_mut(), &buf[..got])?;
    if let (Some(p), true) = (pin, !off_in.is_null()) {
        put_user_u64(off_in, p as u64)?;
    }
    if let (Some(p), true) = (pout, !off_out.is_null()) {
        put_user_u64(off_out, p as u64)?;
    }
    Ok(put as u64)
});
