//! Which error a read or write gives when more than one could apply, in
//! the order Linux's fs/read_write.c checks them, and what a zero-byte
//! transfer does (Linux passes it to the file, which may fail it).

use crate::sys::*;
use crate::{check_eq, checks, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    zero_byte_write_to_dev_full_is_enospc,
    pread_pwrite_on_a_pipe_are_espipe_before_the_access_mode,
    write_to_a_read_only_proc_file_is_einval_or_eio,
    zero_byte_read_of_empty_trace_pipe_is_zero,
    sendfile_errors_in_linux_order,
];

const PWRITE64: usize = 68;
const SENDFILE: usize = 71;

fn pread(fd: i32, buf: &mut [u8], pos: i64) -> Result<usize, Errno> {
    // SAFETY: buf is writable for its length.
    unsafe {
        raw(
            nr::PREAD64,
            &[fd as usize, buf.as_mut_ptr() as usize, buf.len(), pos as usize],
        )
    }
}

fn pwrite(fd: i32, buf: &[u8], pos: i64) -> Result<usize, Errno> {
    // SAFETY: buf is readable for its length.
    unsafe { raw(PWRITE64, &[fd as usize, buf.as_ptr() as usize, buf.len(), pos as usize]) }
}

/// Linux's write_full fails every write, even of nothing: vfs_write calls
/// the driver whatever the count.
fn zero_byte_write_to_dev_full_is_enospc() -> Outcome {
    let fd = open(b"/dev/full", O_WRONLY | O_CLOEXEC, 0).ctx("open /dev/full")?;
    check_eq!(write(fd, &[]), Err(Errno::ENOSPC), "0 bytes");
    check_eq!(write(fd, b"x"), Err(Errno::ENOSPC), "1 byte");
    close(fd);
    Ok(())
}

/// ksys_pread64/ksys_pwrite64: a negative offset (EINVAL) before the
/// descriptor (EBADF), then a file without offsets (ESPIPE) before
/// vfs_read/vfs_write look at the access mode (EBADF) or the count.
fn pread_pwrite_on_a_pipe_are_espipe_before_the_access_mode() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    let mut buf = [0u8; 4];
    check_eq!(pread(999, &mut buf, -1), Err(Errno::EINVAL), "bad fd, negative offset");
    check_eq!(pread(999, &mut buf, 0), Err(Errno::EBADF), "bad fd");
    check_eq!(
        pwrite(999, b"x", -1),
        Err(Errno::EINVAL),
        "pwrite: bad fd, negative offset"
    );
    check_eq!(pwrite(999, b"x", 0), Err(Errno::EBADF), "pwrite: bad fd");
    check_eq!(pread(r, &mut buf, -1), Err(Errno::EINVAL), "pipe, negative offset");
    check_eq!(pread(r, &mut buf, 0), Err(Errno::ESPIPE), "read end");
    check_eq!(pread(r, &mut [], 0), Err(Errno::ESPIPE), "read end, 0 bytes");
    check_eq!(pread(w, &mut buf, 0), Err(Errno::ESPIPE), "write end (not readable)");
    check_eq!(pwrite(w, b"x", 0), Err(Errno::ESPIPE), "pwrite: write end");
    check_eq!(pwrite(w, &[], 0), Err(Errno::ESPIPE), "pwrite: write end, 0 bytes");
    check_eq!(
        pwrite(r, b"x", 0),
        Err(Errno::ESPIPE),
        "pwrite: read end (not writable)"
    );
    close(r);
    close(w);
    Ok(())
}

/// A read-only /proc file opened for writing by root (CAP_DAC_OVERRIDE):
/// vfs_write refuses a file with no write method with EINVAL (no
/// FMODE_CAN_WRITE), whatever the count; a /proc file made with
/// proc_create_single (proc_reg_write, no proc_write) is EIO, also for 0
/// bytes; a writable sysctl takes 0 bytes as no change.
fn write_to_a_read_only_proc_file_is_einval_or_eio() -> Outcome {
    if call(nr::GETEUID, &[]) != Ok(0) {
        return Ok(());
    }
    // A per-process file has no write method at all; a proc_create_single
    // file has proc_reg_write, which fails without a proc_write (EIO).
    for (path, want) in [
        (&b"/proc/self/stat"[..], Errno::EINVAL),
        (b"/proc/version", Errno::EIO),
        (b"/proc/uptime", Errno::EIO),
    ] {
        let fd = open(path, O_WRONLY | O_CLOEXEC, 0).ctx("open for writing as root")?;
        let p = core::str::from_utf8(path).unwrap_or("?");
        check_eq!(write(fd, b"x"), Err(want), "{p}: write");
        check_eq!(write(fd, &[]), Err(want), "{p}: 0-byte write");
        close(fd);
    }
    let fd = open(b"/proc/sys/kernel/kptr_restrict", O_WRONLY | O_CLOEXEC, 0).ctx("open a sysctl")?;
    check_eq!(write(fd, &[]), Ok(0), "sysctl: 0-byte write");
    close(fd);
    Ok(())
}

/// tracing_read_pipe hands back what is left of the last page first, and
/// copying 0 bytes of it returns 0 before the wait for data (which would
/// give EAGAIN without data).
fn zero_byte_read_of_empty_trace_pipe_is_zero() -> Outcome {
    let fd = match open(b"/sys/kernel/tracing/trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0) {
        // No tracefs mounted (a Linux run without it): nothing to check.
        Err(Errno::ENOENT) => return Ok(()),
        r => r.ctx("open trace_pipe")?,
    };
    check_eq!(read(fd, &mut []), Ok(0), "0 bytes");
    close(fd);
    Ok(())
}

/// sendfile(out, in, offset, count); the offset as a raw pointer, so that
/// a bad one can be passed.
fn sendfile(out: i32, inp: i32, off: usize, count: usize) -> Result<usize, Errno> {
    // SAFETY: `off` is null, a live i64, or an address the kernel must
    // refuse.
    unsafe { raw(SENDFILE, &[out as usize, inp as usize, off, count]) }
}

/// sendfile64 reads the offset first; do_sendfile checks the input
/// (EBADF, ESPIPE for an offset on a pipe, EINVAL for a bad range) before
/// it looks at the output (EBADF, then EINVAL for O_APPEND on a file).
fn sendfile_errors_in_linux_order() -> Outcome {
    let path = super::scratch("sendfile-order");
    write_file(&path, b"data", 0o644).ctx("create scratch file")?;
    let file = open(&path, O_RDWR | O_CLOEXEC, 0).ctx("open")?;
    let ro = open(&path, O_RDONLY | O_CLOEXEC, 0).ctx("open read-only")?;
    let app = open(&path, O_WRONLY | O_APPEND | O_CLOEXEC, 0).ctx("open O_APPEND")?;
    let [r, w] = pipe().ctx("pipe")?;
    let mut off = 0i64;
    let offp = &mut off as *mut i64 as usize;
    check_eq!(sendfile(999, 998, 8, 1), Err(Errno::EFAULT), "bad offset pointer first");
    check_eq!(sendfile(999, 998, offp, 1), Err(Errno::EBADF), "bad input fd");
    check_eq!(sendfile(999, w, 0, 1), Err(Errno::EBADF), "input not readable");
    check_eq!(
        sendfile(999, r, offp, 1),
        Err(Errno::ESPIPE),
        "offset on a pipe input, before the output"
    );
    let mut neg = -1i64;
    check_eq!(
        sendfile(999, file, &mut neg as *mut i64 as usize, 1),
        Err(Errno::EINVAL),
        "negative offset, before the output"
    );
    check_eq!(
        sendfile(999, file, offp, usize::MAX),
        Err(Errno::EINVAL),
        "count over SSIZE_MAX"
    );
    check_eq!(sendfile(999, file, offp, 1), Err(Errno::EBADF), "bad output fd");
    check_eq!(sendfile(ro, file, offp, 1), Err(Errno::EBADF), "output not writable");
    check_eq!(sendfile(app, file, offp, 1), Err(Errno::EINVAL), "O_APPEND output file");
    check_eq!(sendfile(w, file, offp, 0), Ok(0), "count 0");
    check_eq!(off, 0, "count 0 left the offset");
    check_eq!(sendfile(w, file, offp, 2), Ok(2), "into the pipe");
    check_eq!(off, 2, "the offset moved on");
    for fd in [file, ro, app, r, w] {
        close(fd);
    }
    remove(&path);
    Ok(())
}
