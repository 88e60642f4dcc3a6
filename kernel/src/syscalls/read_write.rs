//! In-kernel copies between files (Linux's fs/read_write.c): sendfile and
//! copy_file_range, through a kernel buffer a chunk at a time.

use super::syscall;
use crate::errno::Errno;
use crate::fs::{blocking, current_files};
use crate::uaccess::{get_user_u64, put_user_u64};
use vfs::file::OpenFile;

/// Bytes moved per round.
const CHUNK: usize = 64 * 1024;
/// Largest single transfer (Linux's MAX_RW_COUNT, rounded).
const MAX_RW: u64 = 0x7fff_f000;

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

syscall!(__arm64_sys_sendfile, r, {
    let (out_fd, in_fd, offp, count) = (r.regs[0] as i32, r.regs[1] as i32, r.regs[2], r.regs[3]);
    let files = current_files();
    let src = files.get(in_fd)?;
    let dst = files.get(out_fd)?;
    if !src.readable() || !dst.writable() {
        return Err(Errno::EBADF);
    }
    if dst.flags() & uapi::fcntl::O_APPEND != 0 {
        return Err(Errno::EINVAL);
    }
    if offp == 0 {
        return copy_between(&src, None, &dst, None, count);
    }
    if !src.is_positional() {
        return Err(Errno::ESPIPE);
    }
    let mut pos = get_user_u64(offp)? as i64;
    if pos < 0 {
        return Err(Errno::EINVAL);
    }
    let n = copy_between(&src, Some(&mut pos), &dst, None, count)?;
    put_user_u64(offp, pos as u64)?;
    Ok(n)
});

syscall!(__arm64_sys_copy_file_range, r, {
    let (fd_in, off_in, fd_out, off_out, len, flags) = (
        r.regs[0] as i32,
        r.regs[1],
        r.regs[2] as i32,
        r.regs[3],
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
        0 => src.offset() as i64,
        p => get_user_u64(p)? as i64,
    };
    let mut pout = match off_out {
        0 => dst.offset() as i64,
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
        0 => {
            src.lseek(pin, 0)?;
        }
        p => put_user_u64(p, pin as u64)?,
    }
    match off_out {
        0 => {
            dst.lseek(pout, 0)?;
        }
        p => put_user_u64(p, pout as u64)?,
    }
    Ok(n)
});
