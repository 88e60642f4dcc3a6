//! Links and the namespace calls a dynamic program and busybox's installer
//! use: symlinkat, readlinkat, linkat, renameat2, statx, fstat of a pipe
//! through newfstatat(AT_EMPTY_PATH), ftruncate, fchdir, utimensat, the
//! xattr calls, and copies in the kernel (sendfile, copy_file_range), with
//! fadvise64.

use alloc::vec::Vec;

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    symlinkat_readlinkat_and_nofollow,
    symlink_loops_are_eloop,
    linkat_counts_links,
    renameat2_noreplace_and_plain,
    statx_agrees_with_fstatat,
    fstatat_empty_path_on_a_pipe,
    ftruncate_fchdir_utimensat,
    xattrs_unsupported_lists_empty,
    sendfile_and_copy_file_range_copy_data,
    fadvise64_checks_its_arguments,
];

const SYMLINKAT: usize = 36;
const LINKAT: usize = 37;
const READLINKAT: usize = 78;
const RENAMEAT2: usize = 276;
const STATX: usize = 291;
const FTRUNCATE: usize = 46;
const FCHDIR: usize = 50;
const UTIMENSAT: usize = 88;
const LGETXATTR: usize = 9;
const LISTXATTR: usize = 11;
const SENDFILE: usize = 71;
const COPY_FILE_RANGE: usize = 285;
const FADVISE64: usize = 223;
const LSEEK: usize = 62;
const AT_SYMLINK_NOFOLLOW: usize = 0x100;
const AT_EMPTY_PATH: usize = 0x1000;
const RENAME_NOREPLACE: usize = 1;

/// `struct stat` as arm64 lays it out: (mode, nlink, size, mtime sec).
fn stat_of(path: &[u8], flags: usize) -> Result<(u32, u32, i64, i64), Errno> {
    let p = cstr(path);
    let mut st = [0u8; 128];
    // SAFETY: p is NUL-terminated, st is 128 bytes (sizeof(struct stat)).
    unsafe {
        raw(
            nr::NEWFSTATAT,
            &[AT_FDCWD as usize, p.as_ptr() as usize, st.as_mut_ptr() as usize, flags],
        )
    }?;
    Ok(decode_stat(&st))
}

fn decode_stat(st: &[u8; 128]) -> (u32, u32, i64, i64) {
    let u32_at = |o: usize| u32::from_le_bytes([st[o], st[o + 1], st[o + 2], st[o + 3]]);
    let i64_at = |o: usize| i64::from_le_bytes(st[o..o + 8].try_into().unwrap_or_default());
    (u32_at(16), u32_at(20), i64_at(48), i64_at(88))
}

fn symlink(target: &[u8], path: &[u8]) -> Result<usize, Errno> {
    let (t, p) = (cstr(target), cstr(path));
    // SAFETY: both NUL-terminated.
    unsafe {
        raw(
            SYMLINKAT,
            &[t.as_ptr() as usize, AT_FDCWD as usize, p.as_ptr() as usize],
        )
    }
}

fn readlink(path: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
    let p = cstr(path);
    // SAFETY: p is NUL-terminated, buf is live.
    unsafe {
        raw(
            READLINKAT,
            &[
                AT_FDCWD as usize,
                p.as_ptr() as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
            ],
        )
    }
}

fn symlinkat_readlinkat_and_nofollow() -> Outcome {
    let (file, link) = (super::scratch("slfile"), super::scratch("sllink"));
    write_file(&file, b"0123456789", 0o644).ctx("file")?;
    symlink(&file, &link).ctx("symlinkat")?;
    let mut buf = [0u8; 256];
    let n = readlink(&link, &mut buf).ctx("readlinkat")?;
    check_eq!(&buf[..n], &file[..], "link body");
    check_eq!(readlink(&link, &mut buf[..3]), Ok(3), "a short buffer truncates");
    check_eq!(readlink(&file, &mut buf), Err(Errno::EINVAL), "readlink of a file");
    let (mode, _, size, _) = stat_of(&link, AT_SYMLINK_NOFOLLOW).ctx("lstat")?;
    check_eq!(
        (mode & 0o170000, size as usize),
        (0o120000, file.len()),
        "lstat: a link, size of its body"
    );
    let (mode, _, size, _) = stat_of(&link, 0).ctx("stat")?;
    check_eq!((mode & 0o170000, size), (0o100000, 10), "stat follows the link");
    check_eq!(symlink(b"x", &link), Err(Errno::EEXIST), "symlinkat over a name");
    check_eq!(
        symlink(b"", &super::scratch("slempty")),
        Err(Errno::ENOENT),
        "empty target"
    );
    remove(&link);
    remove(&file);
    Ok(())
}

fn symlink_loops_are_eloop() -> Outcome {
    let (a, b) = (super::scratch("loopa"), super::scratch("loopb"));
    symlink(&b, &a).ctx("a -> b")?;
    symlink(&a, &b).ctx("b -> a")?;
    check_eq!(open(&a, O_RDONLY, 0), Err(Errno::ELOOP), "open through a loop");
    check_eq!(stat_of(&a, 0).map(drop), Err(Errno::ELOOP), "stat through a loop");
    remove(&a);
    remove(&b);
    Ok(())
}

fn linkat_counts_links() -> Outcome {
    let (file, hard) = (super::scratch("lkfile"), super::scratch("lkhard"));
    write_file(&file, b"data", 0o644).ctx("file")?;
    let (f, h) = (cstr(&file), cstr(&hard));
    let linkat = |flags: usize| {
        // SAFETY: both NUL-terminated.
        unsafe {
            raw(
                LINKAT,
                &[
                    AT_FDCWD as usize,
                    f.as_ptr() as usize,
                    AT_FDCWD as usize,
                    h.as_ptr() as usize,
                    flags,
                ],
            )
        }
    };
    check_eq!(linkat(0), Ok(0), "linkat");
    check_eq!(stat_of(&file, 0).map(|s| s.1), Ok(2), "two links");
    check_eq!(linkat(0), Err(Errno::EEXIST), "linkat over a name");
    check_eq!(linkat(0x8000_0000), Err(Errno::EINVAL), "unknown flag");
    remove(&hard);
    check_eq!(stat_of(&file, 0).map(|s| s.1), Ok(1), "one link after unlink");
    remove(&file);
    Ok(())
}

fn renameat2_noreplace_and_plain() -> Outcome {
    let (a, b) = (super::scratch("rna"), super::scratch("rnb"));
    write_file(&a, b"A", 0o644).ctx("a")?;
    write_file(&b, b"B", 0o644).ctx("b")?;
    let (pa, pb) = (cstr(&a), cstr(&b));
    let rename = |flags: usize| {
        // SAFETY: both NUL-terminated.
        unsafe {
            raw(
                RENAMEAT2,
                &[
                    AT_FDCWD as usize,
                    pa.as_ptr() as usize,
                    AT_FDCWD as usize,
                    pb.as_ptr() as usize,
                    flags,
                ],
            )
        }
    };
    check_eq!(
        rename(RENAME_NOREPLACE),
        Err(Errno::EEXIST),
        "RENAME_NOREPLACE over a file"
    );
    check_eq!(rename(0x80), Err(Errno::EINVAL), "unknown flag");
    check_eq!(rename(0), Ok(0), "rename over a file");
    check_eq!(stat_of(&a, 0).map(drop), Err(Errno::ENOENT), "the old name is gone");
    check_eq!(stat_of(&b, 0).map(|s| s.2), Ok(1), "the new name has the data");
    remove(&b);
    Ok(())
}

fn statx_agrees_with_fstatat() -> Outcome {
    let file = super::scratch("stx");
    write_file(&file, &[7u8; 5000], 0o640).ctx("file")?;
    let p = cstr(&file);
    let mut stx = [0u8; 256];
    let statx = |flags: usize, mask: usize, buf: usize| {
        // SAFETY: p is NUL-terminated; buf is 256 bytes or a bad pointer.
        unsafe { raw(STATX, &[AT_FDCWD as usize, p.as_ptr() as usize, flags, mask, buf]) }
    };
    check_eq!(statx(0, 0x7ff, stx.as_mut_ptr() as usize), Ok(0), "statx");
    let mask = u32::from_le_bytes([stx[0], stx[1], stx[2], stx[3]]);
    ensure!(mask & 0x7ff == 0x7ff, "basic stats reported: mask {mask:#x}");
    let mode = u16::from_le_bytes([stx[28], stx[29]]);
    let size = u64::from_le_bytes(stx[40..48].try_into().unwrap_or_default());
    let nlink = u32::from_le_bytes([stx[16], stx[17], stx[18], stx[19]]);
    check_eq!((mode, size, nlink), (0o100640, 5000, 1), "mode, size, nlink");
    let (smode, _, ssize, smtime) = stat_of(&file, 0).ctx("stat")?;
    let mtime = i64::from_le_bytes(stx[112..120].try_into().unwrap_or_default());
    check_eq!(
        (u32::from(mode), size as i64, mtime),
        (smode, ssize, smtime),
        "statx and stat agree"
    );
    check_eq!(
        statx(0x8000_0000, 0x7ff, stx.as_mut_ptr() as usize),
        Err(Errno::EINVAL),
        "bad flags"
    );
    check_eq!(
        statx(0, 0x8000_0000, stx.as_mut_ptr() as usize),
        Err(Errno::EINVAL),
        "reserved mask bit"
    );
    check_eq!(statx(0, 0x7ff, BAD_LOW), Err(Errno::EFAULT), "bad buffer");
    remove(&file);
    Ok(())
}

fn fstatat_empty_path_on_a_pipe() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    let mut st = [0u8; 128];
    // SAFETY: "" is a NUL-terminated empty string; st is 128 bytes.
    let got = unsafe {
        raw(
            nr::NEWFSTATAT,
            &[
                r as usize,
                c"".as_ptr() as usize,
                st.as_mut_ptr() as usize,
                AT_EMPTY_PATH,
            ],
        )
    };
    check_eq!(got, Ok(0), "newfstatat(pipe, \"\", AT_EMPTY_PATH)");
    check_eq!(decode_stat(&st).0 & 0o170000, 0o010000, "a FIFO");
    close(r);
    close(w);
    Ok(())
}

fn ftruncate_fchdir_utimensat() -> Outcome {
    let dir = super::scratch("ftd");
    let d = cstr(&dir);
    // SAFETY: d is NUL-terminated.
    unsafe { raw(nr::MKDIRAT, &[AT_FDCWD as usize, d.as_ptr() as usize, 0o755]) }.ctx("mkdir")?;
    let dfd = open(&dir, O_RDONLY | O_DIRECTORY, 0).ctx("open dir")?;
    let back = open(b".", O_RDONLY | O_DIRECTORY, 0).ctx("open .")?;
    check_eq!(call(FCHDIR, &[dfd as usize]), Ok(0), "fchdir");
    let fd = open(b"f", O_RDWR | O_CREAT, 0o644).ctx("create in the new cwd")?;
    check_eq!(call(FTRUNCATE, &[fd as usize, 12345]), Ok(0), "ftruncate");
    check_eq!(
        call(LSEEK, &[fd as usize, 0, SEEK_END as usize]),
        Ok(12345),
        "size after ftruncate"
    );
    check_eq!(
        call(FTRUNCATE, &[fd as usize, usize::MAX]),
        Err(Errno::EINVAL),
        "negative length"
    );
    // utimensat: set both times, then read them back.
    let times: [i64; 4] = [1_000_000, 5, 2_000_000, 7];
    let f = cstr(b"f");
    // SAFETY: f is NUL-terminated, times is two timespecs.
    let r = unsafe {
        raw(
            UTIMENSAT,
            &[AT_FDCWD as usize, f.as_ptr() as usize, times.as_ptr() as usize, 0],
        )
    };
    check_eq!(r, Ok(0), "utimensat");
    check_eq!(stat_of(b"f", 0).map(|s| s.3), Ok(2_000_000), "mtime set");
    let bad: [i64; 4] = [0, 1_000_000_000, 0, 0];
    // SAFETY: as above.
    let r = unsafe {
        raw(
            UTIMENSAT,
            &[AT_FDCWD as usize, f.as_ptr() as usize, bad.as_ptr() as usize, 0],
        )
    };
    check_eq!(r, Err(Errno::EINVAL), "nanoseconds out of range");
    check_eq!(call(FCHDIR, &[fd as usize]), Err(Errno::ENOTDIR), "fchdir to a file");
    check_eq!(call(FCHDIR, &[back as usize]), Ok(0), "fchdir back");
    for x in [fd, dfd, back] {
        close(x);
    }
    let mut path = dir.clone();
    path.extend_from_slice(b"/f");
    remove(&path);
    remove(&dir);
    Ok(())
}

fn xattrs_unsupported_lists_empty() -> Outcome {
    let file = super::scratch("xat");
    write_file(&file, b"", 0o644).ctx("file")?;
    let (p, name) = (cstr(&file), cstr(b"user.test"));
    let mut buf = [0u8; 64];
    // SAFETY: NUL-terminated strings, a live buffer.
    let got = unsafe {
        raw(
            LGETXATTR,
            &[
                p.as_ptr() as usize,
                name.as_ptr() as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
            ],
        )
    };
    ensure!(
        matches!(got, Err(Errno::ENOTSUP) | Err(Errno::ENODATA)),
        "lgetxattr of a missing attribute: {got:?}"
    );
    // SAFETY: as above.
    let got = unsafe { raw(LISTXATTR, &[p.as_ptr() as usize, buf.as_mut_ptr() as usize, buf.len()]) };
    ensure!(
        matches!(got, Ok(n) if buf[..n].split(|&b| b == 0).all(|a| !a.starts_with(b"user."))),
        "listxattr names no user attribute: {got:?}"
    );
    let missing = cstr(&super::scratch("xat-missing"));
    // SAFETY: as above.
    let got = unsafe {
        raw(
            LISTXATTR,
            &[missing.as_ptr() as usize, buf.as_mut_ptr() as usize, buf.len()],
        )
    };
    check_eq!(got, Err(Errno::ENOENT), "listxattr of a missing file");
    remove(&file);
    Ok(())
}

fn sendfile_and_copy_file_range_copy_data() -> Outcome {
    let (src, dst) = (super::scratch("sfsrc"), super::scratch("sfdst"));
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    write_file(&src, &data, 0o644).ctx("src")?;
    let s = open(&src, O_RDONLY, 0).ctx("open src")?;
    let d = open(&dst, O_RDWR | O_CREAT | O_TRUNC, 0o644).ctx("open dst")?;
    let mut off: i64 = 1000;
    let n = call(
        SENDFILE,
        &[d as usize, s as usize, &mut off as *mut i64 as usize, 150_000],
    )
    .ctx("sendfile")?;
    check_eq!((n, off), (150_000, 151_000), "sendfile count and updated offset");
    check_eq!(
        call(LSEEK, &[s as usize, 0, SEEK_CUR as usize]),
        Ok(0),
        "the source offset is untouched"
    );
    let mut back = alloc::vec![0u8; 150_000];
    check_eq!(call(LSEEK, &[d as usize, 0, SEEK_SET as usize]), Ok(0), "rewind");
    let mut got = 0;
    while got < back.len() {
        match read(d, &mut back[got..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => got += k,
        }
    }
    ensure!(
        back[..got] == data[1000..151_000],
        "sendfile copied the bytes ({got} read back)"
    );
    // copy_file_range with both offsets given.
    let (mut oin, mut oout): (i64, i64) = (0, 0);
    let n = call(
        COPY_FILE_RANGE,
        &[
            s as usize,
            &mut oin as *mut i64 as usize,
            d as usize,
            &mut oout as *mut i64 as usize,
            10,
            0,
        ],
    )
    .ctx("copy_file_range")?;
    check_eq!((n, oin, oout), (10, 10, 10), "copy_file_range count and offsets");
    let [r, w] = pipe().ctx("pipe")?;
    check_eq!(
        call(COPY_FILE_RANGE, &[s as usize, 0, w as usize, 0, 10, 0]),
        Err(Errno::EINVAL),
        "copy_file_range to a pipe"
    );
    check_eq!(
        call(COPY_FILE_RANGE, &[s as usize, 0, d as usize, 0, 10, 1]),
        Err(Errno::EINVAL),
        "flags"
    );
    check_eq!(
        call(SENDFILE, &[s as usize, d as usize, 0, 10]),
        Err(Errno::EBADF),
        "sendfile to a read-only file"
    );
    // sendfile into a pipe, from the file's own offset.
    check_eq!(
        call(SENDFILE, &[w as usize, s as usize, 0, 3]),
        Ok(3),
        "sendfile into a pipe"
    );
    let mut three = [0u8; 3];
    check_eq!(read(r, &mut three), Ok(3), "read the pipe");
    check_eq!(three, [0, 1, 2], "bytes through the pipe");
    for x in [s, d, r, w] {
        close(x);
    }
    remove(&src);
    remove(&dst);
    Ok(())
}

fn fadvise64_checks_its_arguments() -> Outcome {
    let file = super::scratch("fadv");
    write_file(&file, b"x", 0o644).ctx("file")?;
    let fd = open(&file, O_RDONLY, 0).ctx("open")?;
    for advice in 0..=5 {
        check_eq!(call(FADVISE64, &[fd as usize, 0, 0, advice]), Ok(0), "advice {advice}");
    }
    check_eq!(
        call(FADVISE64, &[fd as usize, 0, 0, 6]),
        Err(Errno::EINVAL),
        "unknown advice"
    );
    check_eq!(call(FADVISE64, &[999, 0, 0, 0]), Err(Errno::EBADF), "bad fd");
    let [r, w] = pipe().ctx("pipe")?;
    check_eq!(call(FADVISE64, &[r as usize, 0, 0, 0]), Err(Errno::ESPIPE), "a pipe");
    for x in [fd, r, w] {
        close(x);
    }
    remove(&file);
    Ok(())
}
