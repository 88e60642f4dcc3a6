//! Vectored I/O: preadv/pwritev and their *2 variants (offsets, the
//! current-position form, RWF_* flags, errors), and what a fault inside a
//! pipe's readv/writev moves.

use alloc::vec;
use alloc::vec::Vec;

use super::scratch;
use crate::sys::{self, *};
use crate::{check_eq, checks, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    preadv_pwritev_use_the_offset_given_and_leave_the_file_offset,
    preadv_pwritev_errors_as_linux_orders_them,
    preadv_pwritev_stop_at_a_fault_with_the_bytes_moved,
    vectored_lengths_past_max_rw_count_are_cut_not_refused,
    preadv2_pwritev2_at_minus_one_use_and_move_the_file_offset,
    preadv2_pwritev2_take_the_rwf_flags_linux_takes,
    files_without_iter_io_take_only_rwf_hipri,
    reads_and_writes_a_file_has_no_operation_for_are_einval,
    pipe_readv_moves_a_pipe_buffer_whole_or_not_at_all,
    pipe_writev_moves_a_pipe_buffer_whole_or_not_at_all,
];

// include/uapi/linux/fs.h
const RWF_HIPRI: usize = 0x01;
const RWF_DSYNC: usize = 0x02;
const RWF_SYNC: usize = 0x04;
const RWF_NOWAIT: usize = 0x08;
const RWF_APPEND: usize = 0x10;
const RWF_NOAPPEND: usize = 0x20;
const RWF_ATOMIC: usize = 0x40;

/// An address in user space with nothing mapped.
const UNMAPPED: usize = 0x1000;

const FIONREAD: usize = 0x541b;

/// An iovec array as the kernel reads it: (base, length) pairs.
type Iov = [(usize, usize)];

/// A vectored call `n` on `fd` with `iov` and the offset halves and flags
/// that follow it (pos_l, pos_h, flags).
fn vec_call(n: usize, fd: i32, iov: &Iov, rest: &[usize]) -> Result<usize, Errno> {
    let mut args = vec![fd as usize, iov.as_ptr() as usize, iov.len()];
    args.extend_from_slice(rest);
    // SAFETY: every mapped buffer named in `iov` is a live buffer of the
    // caller's of at least its length; UNMAPPED is refused by the kernel.
    unsafe { raw(n, &args) }
}

fn preadv(fd: i32, iov: &Iov, pos: i64) -> Result<usize, Errno> {
    vec_call(nr::PREADV, fd, iov, &[pos as usize, 0])
}

fn pwritev(fd: i32, iov: &Iov, pos: i64) -> Result<usize, Errno> {
    vec_call(nr::PWRITEV, fd, iov, &[pos as usize, 0])
}

fn preadv2(fd: i32, iov: &Iov, pos: i64, flags: usize) -> Result<usize, Errno> {
    vec_call(nr::PREADV2, fd, iov, &[pos as usize, 0, flags])
}

fn pwritev2(fd: i32, iov: &Iov, pos: i64, flags: usize) -> Result<usize, Errno> {
    vec_call(nr::PWRITEV2, fd, iov, &[pos as usize, 0, flags])
}

fn mut_iov(b: &mut [u8]) -> (usize, usize) {
    (b.as_mut_ptr() as usize, b.len())
}

fn iov(b: &[u8]) -> (usize, usize) {
    (b.as_ptr() as usize, b.len())
}

fn offset(fd: i32) -> Result<u64, Errno> {
    rt::fs::lseek(fd, 0, SEEK_CUR)
}

/// The whole file, read with pread64 (the offset stays).
fn contents(fd: i32) -> Result<Vec<u8>, Errno> {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is a live local array of the length passed.
    let n = unsafe { raw(nr::PREAD64, &[fd as usize, buf.as_mut_ptr() as usize, buf.len(), 0]) }?;
    Ok(buf[..n].to_vec())
}

fn fionread(fd: i32) -> Result<i32, Errno> {
    let mut n = 0i32;
    // SAFETY: `n` is a live local int, what FIONREAD writes.
    unsafe { raw(nr::IOCTL, &[fd as usize, FIONREAD, &mut n as *mut i32 as usize]) }?;
    Ok(n)
}

/// A scratch file holding `data`, opened O_RDWR with `flags` at offset 0.
fn temp_file(name: &str, data: &[u8], flags: u32) -> Result<(Vec<u8>, i32), crate::Fail> {
    let path = scratch(name);
    write_file(&path, data, 0o644).ctx("create scratch file")?;
    let fd = open(&path, O_RDWR | O_CLOEXEC | flags, 0).ctx("open scratch file")?;
    Ok((path, fd))
}

/// preadv/pwritev read and write across segments at the offset given
/// (arm64 passes it whole in pos_l; pos_h is ignored on a 64-bit kernel)
/// and never move the file's own offset.
fn preadv_pwritev_use_the_offset_given_and_leave_the_file_offset() -> Outcome {
    let (path, fd) = temp_file("preadv", b"0123456789abcdef", 0)?;
    check_eq!(rt::fs::lseek(fd, 3, SEEK_SET), Ok(3), "seek to 3");
    let (mut a, mut b) = ([0u8; 4], [0u8; 6]);
    check_eq!(
        preadv(fd, &[mut_iov(&mut a), mut_iov(&mut b)], 5),
        Ok(10),
        "preadv [4, 6] at 5"
    );
    check_eq!((&a, &b), (b"5678", b"9abcde"), "the segments");
    check_eq!(offset(fd), Ok(3), "the offset after preadv");
    check_eq!(
        preadv(fd, &[mut_iov(&mut a), mut_iov(&mut b)], 12),
        Ok(4),
        "preadv [4, 6] at 12: short at the end of the file"
    );
    check_eq!(&a, b"cdef", "the first segment at 12");
    check_eq!(preadv(fd, &[mut_iov(&mut a)], 100), Ok(0), "preadv past the end");
    check_eq!(
        vec_call(nr::PREADV, fd, &[mut_iov(&mut a)], &[1, 0x5555]),
        Ok(4),
        "preadv with pos_h set: ignored"
    );
    check_eq!(&a, b"1234", "read at pos_l");
    check_eq!(
        pwritev(fd, &[iov(b"AB"), iov(b""), iov(b"CDE")], 2),
        Ok(5),
        "pwritev [2, 0, 3] at 2"
    );
    check_eq!(offset(fd), Ok(3), "the offset after pwritev");
    check_eq!(pwritev(fd, &[iov(b"xy")], 20), Ok(2), "pwritev past the end");
    check_eq!(
        contents(fd),
        Ok(b"01ABCDE789abcdef\0\0\0\0xy".to_vec()),
        "the file: a hole before the write past the end"
    );
    check_eq!(preadv(fd, &[], 0), Ok(0), "preadv of no iovecs");
    check_eq!(pwritev(fd, &[(0, 0)], 0), Ok(0), "pwritev of an empty iovec");
    close(fd);
    remove(&path);
    Ok(())
}

/// EINVAL for a negative offset before the descriptor is looked at, then
/// EBADF, ESPIPE for a pipe, EBADF for the wrong access mode, EINVAL for
/// too many iovecs or a negative length, EFAULT for an unreadable array
/// or a segment outside user space, EINVAL for a range past the largest
/// offset.
fn preadv_pwritev_errors_as_linux_orders_them() -> Outcome {
    let mut a = [0u8; 4];
    let one = [mut_iov(&mut a)];
    check_eq!(preadv(-1, &one, -1), Err(Errno::EINVAL), "bad fd, negative offset");
    check_eq!(pwritev(-1, &one, -5), Err(Errno::EINVAL), "pwritev: same");
    check_eq!(preadv(-1, &one, 0), Err(Errno::EBADF), "bad fd");
    check_eq!(pwritev(999, &one, 0), Err(Errno::EBADF), "pwritev: unopened fd");
    let [r, w] = pipe().ctx("pipe2")?;
    check_eq!(preadv(r, &one, 0), Err(Errno::ESPIPE), "preadv of a pipe");
    check_eq!(pwritev(w, &one, 0), Err(Errno::ESPIPE), "pwritev to a pipe");
    check_eq!(
        preadv(w, &one, 0),
        Err(Errno::ESPIPE),
        "preadv of the write end: ESPIPE first"
    );
    close(r);
    close(w);
    let (path, fd) = temp_file("preadverr", b"0123", 0)?;
    let ro = open(&path, O_RDONLY | O_CLOEXEC, 0).ctx("open O_RDONLY")?;
    check_eq!(pwritev(ro, &[iov(b"x")], 0), Err(Errno::EBADF), "pwritev to O_RDONLY");
    check_eq!(
        pwritev(ro, &[(UNMAPPED, 1)], 0),
        Err(Errno::EBADF),
        "pwritev to O_RDONLY: EBADF before the iovecs"
    );
    let many = vec![mut_iov(&mut a); 1025];
    check_eq!(preadv(fd, &many, 0), Err(Errno::EINVAL), "1025 iovecs");
    check_eq!(
        preadv(fd, &[(a.as_mut_ptr() as usize, usize::MAX)], 0),
        Err(Errno::EINVAL),
        "a negative length"
    );
    check_eq!(
        // SAFETY: UNMAPPED is not mapped; the kernel must refuse it.
        unsafe { raw(nr::PREADV, &[fd as usize, UNMAPPED, 1, 0, 0]) },
        Err(Errno::EFAULT),
        "an unmapped iovec array"
    );
    check_eq!(
        preadv(fd, &[(sys::BAD_KERNEL, 4)], 0),
        Err(Errno::EFAULT),
        "a kernel address in the array"
    );
    check_eq!(
        preadv(fd, &one, i64::MAX - 2),
        Err(Errno::EINVAL),
        "a range past the largest offset"
    );
    check_eq!(preadv(fd, &one, i64::MAX - 4), Ok(0), "a range ending at it");
    close(ro);
    close(fd);
    remove(&path);
    Ok(())
}

/// A segment that faults ends the call with the bytes moved before it
/// (EFAULT only when none were), for both directions.
fn preadv_pwritev_stop_at_a_fault_with_the_bytes_moved() -> Outcome {
    let (path, fd) = temp_file("preadvfault", b"0123456789", 0)?;
    let mut a = [0u8; 3];
    check_eq!(
        preadv(fd, &[mut_iov(&mut a), (UNMAPPED, 4), mut_iov(&mut [0u8; 2])], 1),
        Ok(3),
        "preadv [3, unmapped, 2] at 1"
    );
    check_eq!(&a, b"123", "the segment before the fault");
    check_eq!(
        preadv(fd, &[(UNMAPPED, 4), mut_iov(&mut a)], 0),
        Err(Errno::EFAULT),
        "preadv [unmapped, 3]"
    );
    check_eq!(
        pwritev(fd, &[iov(b"ab"), (UNMAPPED, 4), iov(b"cd")], 4),
        Ok(2),
        "pwritev [2, unmapped, 2] at 4"
    );
    check_eq!(
        pwritev(fd, &[(UNMAPPED, 4), iov(b"cd")], 0),
        Err(Errno::EFAULT),
        "pwritev [unmapped, 2]"
    );
    check_eq!(contents(fd), Ok(b"0123ab6789".to_vec()), "the file");
    check_eq!(offset(fd), Ok(0), "the offset");
    close(fd);
    remove(&path);
    Ok(())
}

/// A buffer in .bss: low in the address space on Linux too, so that a
/// length far past it still ends in user space.
static mut BSS: [u8; 64] = [0; 64];

/// Lengths are cut to add up to MAX_RW_COUNT (0x7ffff000), not refused:
/// a lone iovec is cut before its range is checked (any non-negative
/// length passes), several are checked whole (a range past user space is
/// EFAULT) and cut after.
fn vectored_lengths_past_max_rw_count_are_cut_not_refused() -> Outcome {
    let (path, fd) = temp_file("maxrw", b"0123456789abcdef", 0)?;
    let bss = core::ptr::addr_of_mut!(BSS) as usize;
    let mut a = [0u8; 4];
    check_eq!(
        preadv(fd, &[(bss, i64::MAX as usize)], 0),
        Ok(16),
        "one iovec of length i64::MAX"
    );
    check_eq!(
        preadv(fd, &[mut_iov(&mut a), (bss, 1 << 40)], 0),
        Ok(16),
        "[4, 1 TiB]: the file"
    );
    check_eq!(&a, b"0123", "the first segment");
    // SAFETY: BSS is only read here, after the kernel filled it.
    let got = unsafe { core::ptr::addr_of!(BSS).read() };
    check_eq!(&got[..12], b"456789abcdef", "the second segment");
    check_eq!(
        preadv(fd, &[mut_iov(&mut a), (bss, i64::MAX as usize)], 0),
        Err(Errno::EFAULT),
        "[4, i64::MAX]: the second range leaves user space"
    );
    close(fd);
    remove(&path);
    Ok(())
}

/// preadv2/pwritev2 at offset -1 read and write at the file's offset and
/// move it (on a pipe too, where a real offset is ESPIPE); any other
/// negative offset is EINVAL; at a real offset the file offset stays.
fn preadv2_pwritev2_at_minus_one_use_and_move_the_file_offset() -> Outcome {
    let (path, fd) = temp_file("preadv2", b"0123456789", 0)?;
    let (mut a, mut b) = ([0u8; 2], [0u8; 3]);
    check_eq!(
        preadv2(fd, &[mut_iov(&mut a), mut_iov(&mut b)], -1, 0),
        Ok(5),
        "preadv2 at -1"
    );
    check_eq!((&a, &b), (b"01", b"234"), "read from offset 0");
    check_eq!(offset(fd), Ok(5), "the offset moved");
    check_eq!(preadv2(fd, &[mut_iov(&mut a)], 1, 0), Ok(2), "preadv2 at 1");
    check_eq!(&a, b"12", "read at 1");
    check_eq!(offset(fd), Ok(5), "the offset stays");
    check_eq!(pwritev2(fd, &[iov(b"W"), iov(b"XY")], -1, 0), Ok(3), "pwritev2 at -1");
    check_eq!(offset(fd), Ok(8), "the offset after pwritev2 at -1");
    check_eq!(pwritev2(fd, &[iov(b"z")], 0, 0), Ok(1), "pwritev2 at 0");
    check_eq!(offset(fd), Ok(8), "the offset stays after pwritev2 at 0");
    check_eq!(contents(fd), Ok(b"z1234WXY89".to_vec()), "the file");
    check_eq!(
        preadv2(fd, &[mut_iov(&mut a)], -2, 0),
        Err(Errno::EINVAL),
        "preadv2 at -2"
    );
    check_eq!(pwritev2(fd, &[iov(b"q")], -2, 0), Err(Errno::EINVAL), "pwritev2 at -2");
    close(fd);
    remove(&path);
    let [r, w] = rt::fs::pipe2(O_NONBLOCK | O_CLOEXEC).ctx("pipe2")?;
    check_eq!(
        pwritev2(w, &[iov(b"ab"), iov(b"c")], -1, 0),
        Ok(3),
        "pwritev2 at -1 to a pipe"
    );
    check_eq!(
        pwritev2(w, &[iov(b"ab")], 0, 0),
        Err(Errno::ESPIPE),
        "pwritev2 at 0 to a pipe"
    );
    check_eq!(
        preadv2(r, &[mut_iov(&mut a), mut_iov(&mut b)], -1, 0),
        Ok(3),
        "preadv2 at -1 from a pipe"
    );
    check_eq!(&a, b"ab", "from the pipe");
    check_eq!(
        preadv2(r, &[mut_iov(&mut a)], -1, 0),
        Err(Errno::EAGAIN),
        "an empty pipe"
    );
    close(r);
    close(w);
    Ok(())
}

/// On a regular file RWF_HIPRI, RWF_DSYNC and RWF_SYNC are taken (and
/// change nothing seen), RWF_APPEND writes at the end whatever the offset
/// given, RWF_NOAPPEND at the offset given on an O_APPEND file; unknown
/// bits and RWF_ATOMIC are EOPNOTSUPP, RWF_APPEND with RWF_NOAPPEND is
/// EINVAL, all only once there is something to move. RWF_NOWAIT is
/// EOPNOTSUPP on a /tmp file and makes an empty pipe EAGAIN instead of
/// waiting.
fn preadv2_pwritev2_take_the_rwf_flags_linux_takes() -> Outcome {
    let (path, fd) = temp_file("rwf", b"0123456789", 0)?;
    let mut a = [0u8; 2];
    for (flags, what) in [
        (RWF_HIPRI, "RWF_HIPRI"),
        (RWF_DSYNC, "RWF_DSYNC"),
        (RWF_SYNC, "RWF_SYNC"),
        (RWF_HIPRI | RWF_DSYNC | RWF_SYNC, "all three"),
    ] {
        check_eq!(preadv2(fd, &[mut_iov(&mut a)], 2, flags), Ok(2), "preadv2 {what}");
        check_eq!(&a, b"23", "preadv2 {what} read");
        check_eq!(pwritev2(fd, &[iov(b"ab")], 4, flags), Ok(2), "pwritev2 {what}");
    }
    check_eq!(
        pwritev2(fd, &[iov(b"EN"), iov(b"D")], 1, RWF_APPEND),
        Ok(3),
        "RWF_APPEND at 1"
    );
    check_eq!(offset(fd), Ok(0), "RWF_APPEND at an offset leaves the file offset");
    check_eq!(pwritev2(fd, &[iov(b"!")], -1, RWF_APPEND), Ok(1), "RWF_APPEND at -1");
    check_eq!(offset(fd), Ok(14), "RWF_APPEND at -1 moves the offset to the end");
    check_eq!(
        contents(fd),
        Ok(b"0123ab6789END!".to_vec()),
        "the file after RWF_APPEND"
    );
    for (flags, err, what) in [
        (0x80, Errno::ENOTSUP, "an unknown bit"),
        (0x8000_0000, Errno::ENOTSUP, "the top bit"),
        (RWF_ATOMIC, Errno::ENOTSUP, "RWF_ATOMIC"),
        (RWF_APPEND | RWF_NOAPPEND, Errno::EINVAL, "RWF_APPEND|RWF_NOAPPEND"),
    ] {
        check_eq!(preadv2(fd, &[mut_iov(&mut a)], 0, flags), Err(err), "preadv2 {what}");
        check_eq!(pwritev2(fd, &[iov(b"x")], 0, flags), Err(err), "pwritev2 {what}");
        check_eq!(
            preadv2(fd, &[mut_iov(&mut [])], 0, flags),
            Ok(0),
            "preadv2 {what}, nothing to read"
        );
    }
    // Linux's rootfs, which holds /tmp, has no FMODE_NOWAIT.
    check_eq!(
        preadv2(fd, &[mut_iov(&mut a)], 0, RWF_NOWAIT),
        Err(Errno::ENOTSUP),
        "preadv2 RWF_NOWAIT of a /tmp file"
    );
    check_eq!(
        pwritev2(fd, &[iov(b"0")], 0, RWF_NOWAIT),
        Err(Errno::ENOTSUP),
        "pwritev2 RWF_NOWAIT to a /tmp file"
    );
    check_eq!(
        vec_call(nr::PREADV2, fd, &[mut_iov(&mut a)], &[0, 0, 1 << 32]),
        Ok(2),
        "flags above 32 bits are not rwf_t's"
    );
    close(fd);
    let afd = open(&path, O_RDWR | O_APPEND | O_CLOEXEC, 0).ctx("open O_APPEND")?;
    check_eq!(pwritev2(afd, &[iov(b"Z")], 0, RWF_NOAPPEND), Ok(1), "RWF_NOAPPEND at 0");
    check_eq!(pwritev2(afd, &[iov(b"+")], 0, 0), Ok(1), "O_APPEND at 0");
    check_eq!(
        contents(afd),
        Ok(b"Z123ab6789END!+".to_vec()),
        "the file after RWF_NOAPPEND"
    );
    close(afd);
    remove(&path);
    let [r, w] = pipe().ctx("pipe2")?;
    check_eq!(
        preadv2(r, &[mut_iov(&mut a)], -1, RWF_NOWAIT),
        Err(Errno::EAGAIN),
        "RWF_NOWAIT on an empty blocking pipe"
    );
    check_eq!(
        pwritev2(w, &[iov(b"hi")], -1, RWF_NOWAIT),
        Ok(2),
        "RWF_NOWAIT write to a pipe"
    );
    check_eq!(
        preadv2(r, &[mut_iov(&mut a)], -1, RWF_NOWAIT),
        Ok(2),
        "RWF_NOWAIT read from a pipe"
    );
    close(r);
    close(w);
    Ok(())
}

/// How Linux 6.12 moves a vectored call on one side of a file: through
/// `do_loop_readv_writev` (the file has only `read`/`write`), or through
/// its `read_iter`/`write_iter`, with or without FMODE_NOWAIT.
#[derive(Clone, Copy, Debug)]
enum Path {
    Loop,
    Iter { nowait: bool },
}

/// What a preadv2/pwritev2 with `flags` gives, from what the call gives
/// without flags (`plain`) and the file's path: the loop refuses every
/// flag but RWF_HIPRI, `kiocb_set_rw_flags` unknown bits, RWF_ATOMIC and
/// (without FMODE_NOWAIT) RWF_NOWAIT, and RWF_APPEND|RWF_NOAPPEND with
/// EINVAL. A flag taken changes nothing here.
fn rwf_expect(path: Path, flags: usize, plain: Result<(), Errno>) -> Result<(), Errno> {
    match path {
        Path::Loop if flags & !RWF_HIPRI != 0 => Err(Errno::ENOTSUP),
        Path::Loop => plain,
        Path::Iter { .. } if flags & (RWF_ATOMIC | 0x80) != 0 => Err(Errno::ENOTSUP),
        Path::Iter { .. } if flags & RWF_APPEND != 0 && flags & RWF_NOAPPEND != 0 => Err(Errno::EINVAL),
        Path::Iter { nowait: false } if flags & RWF_NOWAIT != 0 => Err(Errno::ENOTSUP),
        Path::Iter { .. } => plain,
    }
}

/// The RWF_* flags a file takes depend on its operations, as Linux's
/// `vfs_readv`/`vfs_writev` choose between `do_iter_readv_writev` and
/// `do_loop_readv_writev` (what reflinux shows): tracefs files (but a read
/// of `trace`), per-process /proc files and a write to /dev/full take only
/// RWF_HIPRI, even RWF_APPEND|RWF_NOAPPEND is EOPNOTSUPP there; /proc
/// files made by `proc_create_single` and /dev/full's read take the
/// others but not RWF_NOWAIT, which /dev/null and /dev/zero honour.
fn files_without_iter_io_take_only_rwf_hipri() -> Outcome {
    let all = [
        0,
        RWF_HIPRI,
        RWF_DSYNC,
        RWF_SYNC,
        RWF_NOWAIT,
        RWF_APPEND,
        RWF_NOAPPEND,
        RWF_ATOMIC,
        0x80,
        RWF_APPEND | RWF_NOAPPEND,
        RWF_HIPRI | RWF_APPEND,
    ];
    let iter = Path::Iter { nowait: false };
    let nowait = Path::Iter { nowait: true };
    // Reads never block here: every file has data or is at its end.
    for (name, path) in [
        (&b"/dev/zero"[..], nowait),
        (b"/dev/null", nowait),
        (b"/dev/full", iter),
        (b"/proc/version", iter),
        (b"/proc/meminfo", iter),
        (b"/proc/self/stat", Path::Loop),
        (b"/proc/self/status", Path::Loop),
        (b"/sys/kernel/tracing/trace", iter),
        (b"/sys/kernel/tracing/tracing_on", Path::Loop),
        (b"/sys/kernel/tracing/kprobe_events", Path::Loop),
    ] {
        let what = core::str::from_utf8(name).unwrap_or("?");
        let fd = open(name, O_RDONLY | O_CLOEXEC, 0).ctx(what)?;
        let mut a = [0u8; 1];
        let plain = preadv2(fd, &[mut_iov(&mut a)], -1, 0).map(|_| ());
        for flags in all {
            check_eq!(
                preadv2(fd, &[mut_iov(&mut a)], -1, flags).map(|_| ()),
                rwf_expect(path, flags, plain),
                "preadv2 of {what} with flags {flags:#x} ({path:?})"
            );
        }
        close(fd);
    }
    // Writes whose effect is nothing or a marker in the trace buffer; a
    // refused one has none.
    for (name, path) in [
        (&b"/dev/null"[..], nowait),
        (b"/dev/zero", nowait),
        (b"/dev/full", Path::Loop),
        (b"/sys/kernel/tracing/trace_marker", Path::Loop),
    ] {
        let what = core::str::from_utf8(name).unwrap_or("?");
        let fd = open(name, O_WRONLY | O_CLOEXEC, 0).ctx(what)?;
        let plain = pwritev2(fd, &[iov(b"m")], -1, 0).map(|_| ());
        for flags in all {
            check_eq!(
                pwritev2(fd, &[iov(b"m")], -1, flags).map(|_| ()),
                rwf_expect(path, flags, plain),
                "pwritev2 to {what} with flags {flags:#x} ({path:?})"
            );
        }
        close(fd);
    }
    Ok(())
}

/// A file open for reading whose operations cannot read (Linux's
/// FMODE_CAN_READ: `trace_marker`), or open for writing whose operations
/// cannot write (FMODE_CAN_WRITE: `trace_pipe`, `available_tracers`, a
/// per-process /proc file), is EINVAL to read(2)/readv(2) or
/// write(2)/writev(2): before the buffer or the iovecs are looked at, and
/// for nothing to move too.
fn reads_and_writes_a_file_has_no_operation_for_are_einval() -> Outcome {
    let raw_rw = |n: usize, fd: i32, buf: usize, len: usize| {
        // SAFETY: the kernel refuses this file before touching `buf`, and
        // a mapped `buf` is a live buffer of at least `len` bytes.
        unsafe { raw(n, &[fd as usize, buf, len]) }
    };
    let marker = open(b"/sys/kernel/tracing/trace_marker", O_RDWR | O_CLOEXEC, 0).ctx("open trace_marker")?;
    let mut a = [0u8; 4];
    check_eq!(
        raw_rw(nr::READ, marker, UNMAPPED, 4),
        Err(Errno::EINVAL),
        "read trace_marker into unmapped"
    );
    check_eq!(
        raw_rw(nr::READ, marker, a.as_mut_ptr() as usize, 0),
        Err(Errno::EINVAL),
        "read 0 of trace_marker"
    );
    check_eq!(
        vec_call(nr::READV, marker, &[(UNMAPPED, 4)], &[]),
        Err(Errno::EINVAL),
        "readv trace_marker into unmapped"
    );
    check_eq!(
        vec_call(nr::READV, marker, &[], &[]),
        Err(Errno::EINVAL),
        "readv of no iovecs"
    );
    check_eq!(pwritev2(marker, &[], -1, 0), Ok(0), "trace_marker writes");
    close(marker);
    for name in [
        &b"/sys/kernel/tracing/trace_pipe"[..],
        b"/sys/kernel/tracing/available_tracers",
        b"/proc/self/status",
    ] {
        let what = core::str::from_utf8(name).unwrap_or("?");
        let fd = open(name, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0).ctx(what)?;
        check_eq!(
            raw_rw(nr::WRITE, fd, UNMAPPED, 4),
            Err(Errno::EINVAL),
            "write {what} from unmapped"
        );
        check_eq!(
            raw_rw(nr::WRITE, fd, a.as_ptr() as usize, 0),
            Err(Errno::EINVAL),
            "write 0 to {what}"
        );
        check_eq!(
            vec_call(nr::WRITEV, fd, &[(UNMAPPED, 4)], &[]),
            Err(Errno::EINVAL),
            "writev {what} from unmapped"
        );
        check_eq!(
            vec_call(nr::WRITEV, fd, &[], &[]),
            Err(Errno::EINVAL),
            "writev of no iovecs to {what}"
        );
        check_eq!(preadv2(fd, &[mut_iov(&mut [])], -1, 0), Ok(0), "{what} reads");
        close(fd);
    }
    Ok(())
}

/// A pipe read copies a pipe buffer to the iovecs whole or not at all: a
/// fault part way leaves the buffer in the pipe (EFAULT when nothing was
/// read before it), and a read ends at the buffer that faulted. A write
/// fills buffers of up to a page; two writes are two buffers when the
/// second does not fit in the first's page.
fn pipe_readv_moves_a_pipe_buffer_whole_or_not_at_all() -> Outcome {
    let [r, w] = rt::fs::pipe2(O_NONBLOCK | O_CLOEXEC).ctx("pipe2")?;
    let mut a = [0u8; 4];
    check_eq!(write(w, b"abcdefgh"), Ok(8), "write 8");
    check_eq!(
        vec_call(nr::READV, r, &[mut_iov(&mut a), (UNMAPPED, 4)], &[]),
        Err(Errno::EFAULT),
        "readv [4, unmapped] of one 8-byte buffer"
    );
    check_eq!(fionread(r), Ok(8), "the buffer is still in the pipe");
    let mut all = [0u8; 16];
    check_eq!(read(r, &mut all), Ok(8), "read it");
    check_eq!(&all[..8], b"abcdefgh", "all of it");
    let first = vec![b'x'; 4094];
    check_eq!(write(w, &first), Ok(4094), "write 4094");
    check_eq!(write(w, b"tail"), Ok(4), "write 4 more: a second buffer");
    let mut big = vec![0u8; 4094];
    check_eq!(
        vec_call(nr::READV, r, &[mut_iov(&mut big), (UNMAPPED, 4)], &[]),
        Ok(4094),
        "readv [4094, unmapped]: the first buffer only"
    );
    check_eq!(fionread(r), Ok(4), "the second buffer stays");
    check_eq!(preadv2(r, &[mut_iov(&mut a)], -1, 0), Ok(4), "read the second buffer");
    check_eq!(&a, b"tail", "the second buffer");
    check_eq!(write(w, b"12345678"), Ok(8), "write 8");
    check_eq!(
        vec_call(nr::READV, r, &[mut_iov(&mut a), mut_iov(&mut [0u8; 2])], &[]),
        Ok(6),
        "readv [4, 2] of an 8-byte buffer"
    );
    check_eq!(fionread(r), Ok(2), "the rest of the buffer");
    close(r);
    close(w);
    Ok(())
}

/// A pipe write takes the iovecs' bytes a pipe buffer at a time, whole or
/// not at all: a fault part way into a buffer's bytes leaves that buffer
/// unwritten (EFAULT when nothing was written before it). The first
/// `count % 4096` bytes go onto the last buffer when they fit there, the
/// rest into new pages, of which a pipe has 16.
fn pipe_writev_moves_a_pipe_buffer_whole_or_not_at_all() -> Outcome {
    let [r, w] = rt::fs::pipe2(O_NONBLOCK | O_CLOEXEC).ctx("pipe2")?;
    let page = vec![b'p'; 4096];
    check_eq!(
        vec_call(nr::WRITEV, w, &[iov(b"abcd"), (UNMAPPED, 4)], &[]),
        Err(Errno::EFAULT),
        "writev [4, unmapped] to an empty pipe"
    );
    check_eq!(fionread(r), Ok(0), "nothing written");
    let mut buf = vec![0u8; 8192];
    check_eq!(read(r, &mut buf), Err(Errno::EAGAIN), "nothing to read");
    check_eq!(
        vec_call(nr::WRITEV, w, &[iov(&page), (UNMAPPED, 4)], &[]),
        Ok(4096),
        "writev [4096, unmapped] to an empty pipe: one page"
    );
    check_eq!(fionread(r), Ok(4096), "the page");
    check_eq!(read(r, &mut buf), Ok(4096), "drain");
    check_eq!(write(w, b"1"), Ok(1), "write 1");
    check_eq!(
        vec_call(nr::WRITEV, w, &[iov(b"abcd"), (UNMAPPED, 4)], &[]),
        Err(Errno::EFAULT),
        "writev [4, unmapped] onto a buffer: nothing"
    );
    check_eq!(
        vec_call(nr::WRITEV, w, &[iov(&page), (UNMAPPED, 4)], &[]),
        Ok(4),
        "writev [4096, unmapped] onto a 1-byte buffer: its first 4 bytes"
    );
    check_eq!(read(r, &mut buf), Ok(5), "what the pipe holds");
    check_eq!(&buf[..5], b"1pppp", "the merged bytes");
    check_eq!(
        pwritev2(w, &[iov(b"ab"), iov(b"cd")], -1, 0),
        Ok(4),
        "pwritev2 [2, 2] at -1"
    );
    check_eq!(read(r, &mut buf), Ok(4), "read it");
    check_eq!(&buf[..4], b"abcd", "both segments");
    // 15 pages and one of 4060 bytes fill the 16 buffers; a write of 4097
    // puts its first byte onto that page and finds no free buffer.
    let fill = vec![b'f'; 65536 - 100];
    check_eq!(write(w, &fill), Ok(65436), "fill a non-blocking pipe");
    check_eq!(
        write(w, &[b'1'; 200]),
        Err(Errno::EAGAIN),
        "200 bytes: whole or nothing"
    );
    check_eq!(
        write(w, &[b'2'; 4097]),
        Ok(1),
        "4097 bytes: the 1 that fits the last page"
    );
    check_eq!(fionread(r), Ok(65437), "what the pipe holds");
    close(r);
    close(w);
    Ok(())
}
