//! Files, directories, descriptors, pipes, ppoll and ioctl.

use alloc::vec;
use alloc::vec::Vec;

use rt::fs::{dirents, newfstatat, Stat, S_IFCHR, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG};

use super::scratch;
use crate::sys::{self, *};
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    read_write_roundtrip,
    read_write_bad_fd,
    read_write_efault,
    openat_creat_excl_trunc_append,
    openat_errors,
    openat_relative_to_dirfd,
    close_twice_ebadf,
    lseek_whence_and_errors,
    lseek_hole_reads_zeros,
    getdents64_lists_entries,
    getdents64_errors,
    newfstatat_fstat,
    stat_errors,
    fcntl_fd_flags,
    fcntl_status_flags,
    fcntl_getfl_has_o_largefile,
    fcntl_dupfd_and_errors,
    dup_lowest_fd_shared_offset,
    dup3_replace_cloexec_errors,
    pipe2_data_eof,
    readv_writev_return_what_moved_before_a_fault_or_an_empty_pipe,
    pipe2_nonblock_cloexec_errors,
    ppoll_readiness,
    ppoll_timeout_and_errors,
    ppoll_sigmask_unblocks,
    ioctl_console_tty,
    ioctl_enotty,
    faccessat_modes,
    fchmodat_mode_bits,
    mkdirat_errors,
    unlinkat_files_and_dirs,
    chdir_getcwd,
    chdir_getcwd_errors,
];

/// A scratch file with `data`, opened `O_RDWR` at offset 0.
fn temp_file(name: &str, data: &[u8]) -> Result<(Vec<u8>, i32), crate::Fail> {
    let path = scratch(name);
    write_file(&path, data, 0o644).ctx("create scratch file")?;
    let fd = open(&path, O_RDWR | O_CLOEXEC, 0).ctx("open scratch file")?;
    Ok((path, fd))
}

fn read_all(fd: i32) -> Result<Vec<u8>, sys::Errno> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match read(fd, &mut buf)? {
            0 => return Ok(out),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

fn read_write_roundtrip() -> Outcome {
    let (path, fd) = temp_file("rw", b"")?;
    check_eq!(write(fd, b"hello, world"), Ok(12), "write 12 bytes");
    check_eq!(rt::fs::lseek(fd, 0, SEEK_SET), Ok(0), "lseek to 0");
    let mut buf = [0u8; 5];
    check_eq!(read(fd, &mut buf), Ok(5), "read 5");
    check_eq!(&buf, b"hello", "first 5 bytes");
    check_eq!(read_all(fd), Ok(b", world".to_vec()), "rest of the file");
    check_eq!(read(fd, &mut buf), Ok(0), "read at end of file");
    check_eq!(read(fd, &mut []), Ok(0), "read of 0 bytes");
    close(fd);
    let fd = open(&path, O_RDONLY, 0).ctx("reopen")?;
    check_eq!(read_all(fd), Ok(b"hello, world".to_vec()), "contents after reopening");
    close(fd);
    remove(&path);
    Ok(())
}

fn read_write_bad_fd() -> Outcome {
    let mut buf = [0u8; 4];
    check_eq!(read(999, &mut buf), Err(Errno::EBADF), "read(999)");
    check_eq!(write(999, b"x"), Err(Errno::EBADF), "write(999)");
    check_eq!(read(-1, &mut buf), Err(Errno::EBADF), "read(-1)");
    let (path, fd) = temp_file("badfd", b"data")?;
    close(fd);
    check_eq!(read(fd, &mut buf), Err(Errno::EBADF), "read of a closed fd");
    let ro = open(&path, O_RDONLY, 0).ctx("open O_RDONLY")?;
    check_eq!(write(ro, b"x"), Err(Errno::EBADF), "write to an O_RDONLY fd");
    let wo = open(&path, O_WRONLY, 0).ctx("open O_WRONLY")?;
    check_eq!(read(wo, &mut buf), Err(Errno::EBADF), "read from an O_WRONLY fd");
    let dir = open(b"/tmp", O_RDONLY | O_DIRECTORY, 0).ctx("open /tmp")?;
    check_eq!(read(dir, &mut buf), Err(Errno::EISDIR), "read from a directory");
    remove(&path);
    Ok(())
}

fn read_write_efault() -> Outcome {
    let (path, fd) = temp_file("efault", b"some data")?;
    for bad in [BAD_LOW, BAD_KERNEL] {
        // SAFETY: bad is not mapped; the kernel must refuse it.
        let r = unsafe { raw(nr::READ, &[fd as usize, bad, 4]) };
        check_eq!(r, Err(Errno::EFAULT), "read into {bad:#x}");
        // SAFETY: as above.
        let r = unsafe { raw(nr::WRITE, &[fd as usize, bad, 4]) };
        check_eq!(r, Err(Errno::EFAULT), "write from {bad:#x}");
    }
    check_eq!(rt::fs::lseek(fd, 0, SEEK_CUR), Ok(0), "offset after the failed calls");
    check_eq!(read_all(fd), Ok(b"some data".to_vec()), "file unchanged");
    remove(&path);
    Ok(())
}

fn openat_creat_excl_trunc_append() -> Outcome {
    let path = scratch("creat");
    let fd = open(&path, O_RDWR | O_CREAT | O_EXCL, 0o600).ctx("O_CREAT|O_EXCL new file")?;
    check_eq!(write(fd, b"0123456789"), Ok(10), "write");
    close(fd);
    check_eq!(
        open(&path, O_RDWR | O_CREAT | O_EXCL, 0o600),
        Err(Errno::EEXIST),
        "O_EXCL on an existing file"
    );
    let fd = open(&path, O_RDWR | O_APPEND, 0).ctx("open O_APPEND")?;
    check_eq!(rt::fs::lseek(fd, 0, SEEK_SET), Ok(0), "lseek 0");
    check_eq!(write(fd, b"ab"), Ok(2), "appending write");
    check_eq!(rt::fs::lseek(fd, 0, SEEK_CUR), Ok(12), "offset after an O_APPEND write");
    close(fd);
    check_eq!(rt::fs::stat(&path).map(|s| s.st_size), Ok(12), "size after append");
    let fd = open(&path, O_RDWR | O_TRUNC, 0).ctx("open O_TRUNC")?;
    check_eq!(rt::fs::fstat(fd).map(|s| s.st_size), Ok(0), "size after O_TRUNC");
    close(fd);
    remove(&path);
    Ok(())
}

fn openat_errors() -> Outcome {
    let (file, fd) = temp_file("operr", b"x")?;
    close(fd);
    check_eq!(
        open(b"/tmp/ut-no-such-file", O_RDONLY, 0),
        Err(Errno::ENOENT),
        "missing file"
    );
    check_eq!(
        open(b"/tmp/ut-no-such-dir/f", O_RDWR | O_CREAT, 0o644),
        Err(Errno::ENOENT),
        "O_CREAT in a missing dir"
    );
    check_eq!(
        open(&file, O_RDONLY | O_DIRECTORY, 0),
        Err(Errno::ENOTDIR),
        "O_DIRECTORY on a file"
    );
    let mut below = file.clone();
    below.extend_from_slice(b"/x");
    check_eq!(
        open(&below, O_RDONLY, 0),
        Err(Errno::ENOTDIR),
        "a file used as a directory"
    );
    check_eq!(
        open(b"/tmp", O_WRONLY, 0),
        Err(Errno::EISDIR),
        "O_WRONLY on a directory"
    );
    check_eq!(open(b"/tmp", O_RDWR, 0), Err(Errno::EISDIR), "O_RDWR on a directory");
    check_eq!(open(b"", O_RDONLY, 0), Err(Errno::ENOENT), "empty path");
    for bad in [BAD_LOW, BAD_KERNEL] {
        // SAFETY: the path pointer is not mapped; the kernel must refuse it.
        let r = unsafe { raw(nr::OPENAT, &[AT_FDCWD as usize, bad, O_RDONLY as usize, 0]) };
        check_eq!(r, Err(Errno::EFAULT), "path at {bad:#x}");
    }
    check_eq!(
        rt::fs::openat(999, b"relative", O_RDONLY, 0),
        Err(Errno::EBADF),
        "relative path, dirfd 999"
    );
    remove(&file);
    Ok(())
}

fn openat_relative_to_dirfd() -> Outcome {
    let dir = scratch("reldir");
    rt::fs::mkdirat(AT_FDCWD, &dir, 0o755).ctx("mkdir")?;
    let dfd = open(&dir, O_RDONLY | O_DIRECTORY, 0).ctx("open dir")?;
    let fd = rt::fs::openat(dfd, b"inner", O_WRONLY | O_CREAT, 0o644).ctx("openat(dirfd, inner)")?;
    check_eq!(write(fd, b"rel"), Ok(3), "write");
    close(fd);
    let mut full = dir.clone();
    full.extend_from_slice(b"/inner");
    let fd = open(&full, O_RDONLY, 0).ctx("open by full path")?;
    check_eq!(read_all(fd), Ok(b"rel".to_vec()), "contents via the full path");
    close(fd);
    check_eq!(
        rt::fs::openat(dfd, b"/tmp", O_RDONLY | O_DIRECTORY, 0).map(|_| ()),
        Ok(()),
        "absolute path ignores dirfd"
    );
    let (file, ffd) = temp_file("notdirfd", b"")?;
    check_eq!(
        rt::fs::openat(ffd, b"x", O_RDONLY, 0),
        Err(Errno::ENOTDIR),
        "dirfd that is a file"
    );
    remove(&file);
    remove(&full);
    remove(&dir);
    Ok(())
}

fn close_twice_ebadf() -> Outcome {
    let (path, fd) = temp_file("close", b"")?;
    check_eq!(rt::fs::close(fd), Ok(()), "first close");
    check_eq!(rt::fs::close(fd), Err(Errno::EBADF), "second close");
    check_eq!(rt::fs::close(-1), Err(Errno::EBADF), "close(-1)");
    check_eq!(rt::fs::close(1 << 20), Err(Errno::EBADF), "close(1<<20)");
    let fd2 = open(&path, O_RDONLY, 0).ctx("reopen")?;
    check_eq!(fd2, fd, "the lowest free fd is reused");
    remove(&path);
    Ok(())
}

fn lseek_whence_and_errors() -> Outcome {
    let (path, fd) = temp_file("lseek", b"0123456789")?;
    check_eq!(rt::fs::lseek(fd, 4, SEEK_SET), Ok(4), "SEEK_SET 4");
    check_eq!(rt::fs::lseek(fd, 2, SEEK_CUR), Ok(6), "SEEK_CUR +2");
    let mut b = [0u8; 1];
    check_eq!(read(fd, &mut b).map(|_| b[0]), Ok(b'6'), "byte at 6");
    check_eq!(rt::fs::lseek(fd, -3, SEEK_END), Ok(7), "SEEK_END -3");
    check_eq!(rt::fs::lseek(fd, -1, SEEK_SET), Err(Errno::EINVAL), "negative offset");
    check_eq!(rt::fs::lseek(fd, 0, SEEK_CUR), Ok(7), "offset unchanged after EINVAL");
    check_eq!(rt::fs::lseek(fd, 0, 7), Err(Errno::EINVAL), "whence 7");
    check_eq!(rt::fs::lseek(999, 0, SEEK_SET), Err(Errno::EBADF), "fd 999");
    let [r, w] = pipe().ctx("pipe")?;
    check_eq!(rt::fs::lseek(r, 0, SEEK_CUR), Err(Errno::ESPIPE), "pipe read end");
    check_eq!(rt::fs::lseek(w, 0, SEEK_SET), Err(Errno::ESPIPE), "pipe write end");
    remove(&path);
    Ok(())
}

fn lseek_hole_reads_zeros() -> Outcome {
    let (path, fd) = temp_file("hole", b"ab")?;
    check_eq!(rt::fs::lseek(fd, 100, SEEK_SET), Ok(100), "seek past the end");
    check_eq!(
        rt::fs::fstat(fd).map(|s| s.st_size),
        Ok(2),
        "seeking does not grow the file"
    );
    check_eq!(write(fd, b"z"), Ok(1), "write at 100");
    check_eq!(
        rt::fs::fstat(fd).map(|s| s.st_size),
        Ok(101),
        "size after writing at 100"
    );
    rt::fs::lseek(fd, 0, SEEK_SET).ctx("rewind")?;
    let data = read_all(fd).ctx("read back")?;
    let mut want = vec![0u8; 101];
    want[0] = b'a';
    want[1] = b'b';
    want[100] = b'z';
    ensure!(
        data == want,
        "file with a hole: got {} bytes {:?}...",
        data.len(),
        &data[..data.len().min(8)]
    );
    remove(&path);
    Ok(())
}

fn getdents64_lists_entries() -> Outcome {
    let dir = scratch("dents");
    rt::fs::mkdirat(AT_FDCWD, &dir, 0o755).ctx("mkdir")?;
    let mut names: Vec<Vec<u8>> = Vec::new();
    for n in ["alpha", "beta", "a-rather-longer-file-name-for-padding"] {
        let mut p = dir.clone();
        p.push(b'/');
        p.extend_from_slice(n.as_bytes());
        write_file(&p, b"", 0o644).ctx("create entry")?;
    }
    let mut sub = dir.clone();
    sub.extend_from_slice(b"/subdir");
    rt::fs::mkdirat(AT_FDCWD, &sub, 0o755).ctx("mkdir subdir")?;
    let fd = open(&dir, O_RDONLY | O_DIRECTORY, 0).ctx("open dir")?;
    // A small buffer forces several calls.
    let mut buf = [0u8; 64];
    let mut types = Vec::new();
    loop {
        let n = rt::fs::getdents64(fd, &mut buf).ctx("getdents64")?;
        if n == 0 {
            break;
        }
        for e in dirents(&buf[..n]) {
            ensure!(e.ino != 0, "entry {} has inode 0", rt::io::Bytes(e.name));
            names.push(e.name.to_vec());
            types.push((e.name.to_vec(), e.d_type));
        }
    }
    names.sort();
    let want: Vec<Vec<u8>> = [
        ".",
        "..",
        "a-rather-longer-file-name-for-padding",
        "alpha",
        "beta",
        "subdir",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    check_eq!(names, want, "entries");
    for (name, t) in types {
        // DT_DIR = 4, DT_REG = 8.
        let want = if name == b"alpha" {
            8
        } else if name == b"subdir" {
            4
        } else {
            continue;
        };
        check_eq!(t, want, "d_type of {}", rt::io::Bytes(&name));
    }
    check_eq!(rt::fs::getdents64(fd, &mut buf), Ok(0), "getdents64 again at the end");
    close(fd);
    for n in ["alpha", "beta", "a-rather-longer-file-name-for-padding", "subdir"] {
        let mut p = dir.clone();
        p.push(b'/');
        p.extend_from_slice(n.as_bytes());
        remove(&p);
    }
    remove(&dir);
    Ok(())
}

fn getdents64_errors() -> Outcome {
    let (path, fd) = temp_file("dentserr", b"x")?;
    let mut buf = [0u8; 256];
    check_eq!(rt::fs::getdents64(fd, &mut buf), Err(Errno::ENOTDIR), "on a file");
    check_eq!(rt::fs::getdents64(999, &mut buf), Err(Errno::EBADF), "fd 999");
    let dfd = open(b"/", O_RDONLY | O_DIRECTORY, 0).ctx("open /")?;
    check_eq!(
        rt::fs::getdents64(dfd, &mut buf[..8]),
        Err(Errno::EINVAL),
        "buffer smaller than one entry"
    );
    // SAFETY: the buffer pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::GETDENTS64, &[dfd as usize, BAD_LOW, 256]) };
    check_eq!(r, Err(Errno::EFAULT), "buffer at 0x1");
    remove(&path);
    Ok(())
}

fn newfstatat_fstat() -> Outcome {
    let (path, fd) = temp_file("stat", b"12345")?;
    let st = rt::fs::stat(&path).ctx("stat")?;
    check_eq!(st.st_size, 5, "st_size");
    check_eq!(st.st_mode & S_IFMT, S_IFREG, "file type");
    check_eq!(st.st_mode & 0o7777, 0o644, "permission bits");
    check_eq!(st.st_nlink, 1, "st_nlink");
    check_eq!(
        st.st_uid,
        call(nr::GETEUID, &[]).unwrap_or(9999) as u32,
        "st_uid is the euid"
    );
    check_eq!(
        st.st_gid,
        call(nr::GETEGID, &[]).unwrap_or(9999) as u32,
        "st_gid is the egid"
    );
    let fst = rt::fs::fstat(fd).ctx("fstat")?;
    check_eq!(
        (fst.st_ino, fst.st_dev, fst.st_size),
        (st.st_ino, st.st_dev, 5),
        "fstat agrees with stat"
    );
    rt::fs::lseek(fd, 0, SEEK_END).ctx("lseek to the end")?;
    check_eq!(write(fd, b"678"), Ok(3), "write");
    check_eq!(rt::fs::fstat(fd).map(|s| s.st_size), Ok(8), "fstat size after writing");
    let d = rt::fs::stat(b"/tmp").ctx("stat /tmp")?;
    check_eq!(d.st_mode & S_IFMT, S_IFDIR, "/tmp is a directory");
    let n = rt::fs::stat(b"/dev/null").ctx("stat /dev/null")?;
    check_eq!(n.st_mode & S_IFMT, S_IFCHR, "/dev/null is a character device");
    check_eq!(n.st_rdev, (1 << 8) | 3, "/dev/null is 1:3");
    let [r, _w] = pipe().ctx("pipe")?;
    check_eq!(
        rt::fs::fstat(r).map(|s| s.st_mode & S_IFMT),
        Ok(S_IFIFO),
        "a pipe is a FIFO"
    );
    let dfd = open(b"/tmp", O_RDONLY | O_DIRECTORY, 0).ctx("open /tmp")?;
    let name = &path[b"/tmp/".len()..];
    check_eq!(
        newfstatat(dfd, name, 0).map(|s| s.st_ino),
        Ok(st.st_ino),
        "newfstatat relative to a dirfd"
    );
    remove(&path);
    Ok(())
}

fn stat_errors() -> Outcome {
    check_eq!(
        rt::fs::stat(b"/tmp/ut-missing").map(drop),
        Err(Errno::ENOENT),
        "missing file"
    );
    let (path, fd) = temp_file("staterr", b"")?;
    let mut below = path.clone();
    below.extend_from_slice(b"/x");
    check_eq!(rt::fs::stat(&below).map(drop), Err(Errno::ENOTDIR), "through a file");
    let p = cstr(&path);
    for bad in [BAD_LOW, BAD_KERNEL] {
        // SAFETY: the stat buffer is not mapped; the kernel must refuse it.
        let r = unsafe { raw(nr::NEWFSTATAT, &[AT_FDCWD as usize, p.as_ptr() as usize, bad, 0]) };
        check_eq!(r, Err(Errno::EFAULT), "newfstatat buffer at {bad:#x}");
        // SAFETY: as above.
        let r = unsafe { raw(nr::FSTAT, &[fd as usize, bad]) };
        check_eq!(r, Err(Errno::EFAULT), "fstat buffer at {bad:#x}");
    }
    let mut st = Stat::default();
    // SAFETY: st is a live struct stat.
    let r = unsafe { raw(nr::FSTAT, &[999, &mut st as *mut Stat as usize]) };
    check_eq!(r, Err(Errno::EBADF), "fstat(999)");
    // SAFETY: the path pointer is not mapped; st is live.
    let r = unsafe {
        raw(
            nr::NEWFSTATAT,
            &[AT_FDCWD as usize, BAD_LOW, &mut st as *mut Stat as usize, 0],
        )
    };
    check_eq!(r, Err(Errno::EFAULT), "newfstatat path at 0x1");
    remove(&path);
    Ok(())
}

fn fcntl_fd_flags() -> Outcome {
    let (path, fd) = temp_file("fdflags", b"")?;
    check_eq!(fcntl(fd, F_GETFD, 0), Ok(FD_CLOEXEC), "opened with O_CLOEXEC");
    check_eq!(fcntl(fd, F_SETFD, 0), Ok(0), "clear FD_CLOEXEC");
    check_eq!(fcntl(fd, F_GETFD, 0), Ok(0), "after clearing");
    check_eq!(fcntl(fd, F_SETFD, FD_CLOEXEC), Ok(0), "set FD_CLOEXEC");
    check_eq!(fcntl(fd, F_GETFD, 0), Ok(FD_CLOEXEC), "after setting");
    let plain = open(&path, O_RDONLY, 0).ctx("open without O_CLOEXEC")?;
    check_eq!(fcntl(plain, F_GETFD, 0), Ok(0), "opened without O_CLOEXEC");
    check_eq!(fcntl(999, F_GETFD, 0), Err(Errno::EBADF), "F_GETFD on fd 999");
    remove(&path);
    Ok(())
}

fn fcntl_status_flags() -> Outcome {
    let (path, fd) = temp_file("flflags", b"")?;
    let fl = fcntl(fd, F_GETFL, 0).ctx("F_GETFL")? as u32;
    check_eq!(fl & 3, O_RDWR, "access mode");
    check_eq!(fl & (O_APPEND | O_NONBLOCK), 0, "no O_APPEND/O_NONBLOCK yet");
    // F_SETFL changes O_APPEND and O_NONBLOCK but never the access mode.
    check_eq!(
        fcntl(fd, F_SETFL, (O_APPEND | O_NONBLOCK | O_WRONLY) as usize),
        Ok(0),
        "F_SETFL"
    );
    let fl = fcntl(fd, F_GETFL, 0).ctx("F_GETFL")? as u32;
    check_eq!(fl & 3, O_RDWR, "access mode after F_SETFL");
    check_eq!(
        fl & (O_APPEND | O_NONBLOCK),
        O_APPEND | O_NONBLOCK,
        "status flags after F_SETFL"
    );
    let ro = open(&path, O_RDONLY, 0).ctx("open O_RDONLY")?;
    check_eq!(
        fcntl(ro, F_GETFL, 0).map(|f| f as u32 & 3),
        Ok(O_RDONLY),
        "O_RDONLY access mode"
    );
    let wo = open(&path, O_WRONLY | O_APPEND, 0).ctx("open O_WRONLY|O_APPEND")?;
    check_eq!(
        fcntl(wo, F_GETFL, 0).map(|f| f as u32 & (3 | O_APPEND)),
        Ok(O_WRONLY | O_APPEND),
        "O_WRONLY|O_APPEND"
    );
    remove(&path);
    Ok(())
}

fn fcntl_getfl_has_o_largefile() -> Outcome {
    // On 64-bit Linux, open() always adds O_LARGEFILE, and F_GETFL shows it.
    let (path, fd) = temp_file("largefile", b"")?;
    check_eq!(
        fcntl(fd, F_GETFL, 0),
        Ok((O_RDWR | O_LARGEFILE) as usize),
        "F_GETFL of an O_RDWR file"
    );
    let [r, w] = pipe().ctx("pipe")?;
    check_eq!(
        fcntl(r, F_GETFL, 0),
        Ok(O_RDONLY as usize),
        "F_GETFL of a pipe's read end"
    );
    check_eq!(
        fcntl(w, F_GETFL, 0),
        Ok(O_WRONLY as usize),
        "F_GETFL of a pipe's write end"
    );
    remove(&path);
    Ok(())
}

fn fcntl_dupfd_and_errors() -> Outcome {
    let (path, fd) = temp_file("dupfd", b"")?;
    check_eq!(fcntl(fd, F_DUPFD, 50), Ok(50), "F_DUPFD 50");
    check_eq!(fcntl(fd, F_DUPFD, 50), Ok(51), "F_DUPFD 50 again");
    check_eq!(fcntl(50, F_GETFD, 0), Ok(0), "F_DUPFD clears FD_CLOEXEC");
    check_eq!(
        fcntl(fd, rt::fs::F_DUPFD_CLOEXEC as usize, 60),
        Ok(60),
        "F_DUPFD_CLOEXEC 60"
    );
    check_eq!(fcntl(60, F_GETFD, 0), Ok(FD_CLOEXEC), "F_DUPFD_CLOEXEC sets it");
    check_eq!(fcntl(fd, 0x7fff, 0), Err(Errno::EINVAL), "unknown command");
    check_eq!(fcntl(999, F_GETFL, 0), Err(Errno::EBADF), "F_GETFL on fd 999");
    check_eq!(
        fcntl(fd, F_DUPFD, usize::MAX >> 1),
        Err(Errno::EINVAL),
        "F_DUPFD beyond any limit"
    );
    remove(&path);
    Ok(())
}

fn dup_lowest_fd_shared_offset() -> Outcome {
    let (path, fd) = temp_file("dup", b"abcdef")?;
    let lowest = (0..).find(|&n| fcntl(n, F_GETFD, 0).is_err()).unwrap_or(0);
    let d = call(nr::DUP, &[fd as usize]).ctx("dup")? as i32;
    check_eq!(d, lowest, "dup takes the lowest free fd");
    check_eq!(fcntl(d, F_GETFD, 0), Ok(0), "dup clears FD_CLOEXEC");
    rt::fs::lseek(fd, 2, SEEK_SET).ctx("lseek")?;
    let mut b = [0u8; 2];
    check_eq!(
        read(d, &mut b).map(|_| b),
        Ok(*b"cd"),
        "the duplicate shares the offset"
    );
    check_eq!(
        rt::fs::lseek(fd, 0, SEEK_CUR),
        Ok(4),
        "offset seen through the original"
    );
    close(fd);
    check_eq!(
        read(d, &mut b).map(|_| b),
        Ok(*b"ef"),
        "duplicate still open after closing the original"
    );
    check_eq!(call(nr::DUP, &[999]), Err(Errno::EBADF), "dup(999)");
    remove(&path);
    Ok(())
}

fn dup3_replace_cloexec_errors() -> Outcome {
    let (p1, a) = temp_file("dup3a", b"AAAA")?;
    let (p2, b) = temp_file("dup3b", b"BBBB")?;
    check_eq!(rt::fs::dup3(a, b, 0), Ok(b), "dup3 onto an open fd");
    let mut buf = [0u8; 4];
    check_eq!(read(b, &mut buf).map(|_| buf), Ok(*b"AAAA"), "b now reads a's file");
    check_eq!(fcntl(b, F_GETFD, 0), Ok(0), "dup3 without O_CLOEXEC");
    check_eq!(rt::fs::dup3(a, 40, O_CLOEXEC), Ok(40), "dup3 O_CLOEXEC to 40");
    check_eq!(fcntl(40, F_GETFD, 0), Ok(FD_CLOEXEC), "dup3 O_CLOEXEC sets FD_CLOEXEC");
    check_eq!(rt::fs::dup3(a, a, 0), Err(Errno::EINVAL), "dup3 to itself");
    check_eq!(rt::fs::dup3(a, 41, 0x1), Err(Errno::EINVAL), "dup3 with flags 1");
    check_eq!(rt::fs::dup3(999, 41, 0), Err(Errno::EBADF), "dup3 from fd 999");
    check_eq!(rt::fs::dup3(a, -1, 0), Err(Errno::EBADF), "dup3 to fd -1");
    check_eq!(fcntl(41, F_GETFD, 0), Err(Errno::EBADF), "failed dup3 opened nothing");
    remove(&p1);
    remove(&p2);
    Ok(())
}

fn pipe2_data_eof() -> Outcome {
    let [r, w] = pipe().ctx("pipe2")?;
    check_eq!(write(w, b"through the pipe"), Ok(16), "write");
    let mut buf = [0u8; 64];
    check_eq!(
        read(r, &mut buf[..7]).map(|n| buf[..n].to_vec()),
        Ok(b"through".to_vec()),
        "partial read"
    );
    check_eq!(
        read(r, &mut buf).map(|n| buf[..n].to_vec()),
        Ok(b" the pipe".to_vec()),
        "rest"
    );
    close(w);
    check_eq!(read(r, &mut buf), Ok(0), "EOF once the writer is closed");
    check_eq!(write(r, b"x"), Err(Errno::EBADF), "write to the read end");
    Ok(())
}

/// readv/writev of a file move segment by segment: a fault in a later
/// segment ends the call with the bytes already moved (EFAULT only when
/// none were), and readv from a pipe returns once the data there is taken
/// instead of waiting to fill the next segment. (A fault in a pipe's
/// readv/writev, where Linux moves a pipe buffer whole or not at all, is
/// checked in `vecio`.)
fn readv_writev_return_what_moved_before_a_fault_or_an_empty_pipe() -> Outcome {
    // An address in user space with nothing mapped.
    const UNMAPPED: usize = 0x1000;
    let vectored = |n: usize, fd: i32, iov: &[(usize, usize)]| {
        // SAFETY: every mapped buffer named is a live local array of at
        // least its length; the unmapped one is refused by the kernel.
        unsafe { raw(n, &[fd as usize, iov.as_ptr() as usize, iov.len()]) }
    };
    let mut a = [0u8; 5];
    let mut b = [0u8; 100];
    let [r, w] = pipe().ctx("pipe2")?;
    check_eq!(write(w, b"abcde"), Ok(5), "write 5");
    check_eq!(
        vectored(
            nr::READV,
            r,
            &[(a.as_mut_ptr() as usize, 5), (b.as_mut_ptr() as usize, 100)]
        ),
        Ok(5),
        "readv [5, 100] of a pipe holding 5 bytes"
    );
    check_eq!(&a, b"abcde", "the first segment");
    close(r);
    close(w);
    let (path, fd) = temp_file("vecfault", b"0123456789")?;
    check_eq!(
        vectored(nr::READV, fd, &[(a.as_mut_ptr() as usize, 5), (UNMAPPED, 5)]),
        Ok(5),
        "readv [5, unmapped] of a file"
    );
    check_eq!(&a, b"01234", "the segment read");
    check_eq!(
        vectored(nr::WRITEV, fd, &[(b"vwxyz".as_ptr() as usize, 5), (UNMAPPED, 5)]),
        Ok(5),
        "writev [5, unmapped] to a file"
    );
    check_eq!(
        vectored(nr::WRITEV, fd, &[(UNMAPPED, 5), (b"vwxyz".as_ptr() as usize, 5)]),
        Err(Errno::EFAULT),
        "writev [unmapped, 5] to a file"
    );
    check_eq!(
        rt::fs::lseek(fd, 0, SEEK_CUR),
        Ok(10),
        "the offset after 5 read and 5 written"
    );
    check_eq!(rt::fs::lseek(fd, 0, SEEK_SET), Ok(0), "rewind");
    check_eq!(read_all(fd), Ok(b"01234vwxyz".to_vec()), "the file");
    remove(&path);
    Ok(())
}

fn pipe2_nonblock_cloexec_errors() -> Outcome {
    let [r, w] = rt::fs::pipe2(O_NONBLOCK).ctx("pipe2(O_NONBLOCK)")?;
    let mut buf = [0u8; 8];
    check_eq!(read(r, &mut buf), Err(Errno::EAGAIN), "empty non-blocking pipe");
    check_eq!(fcntl(r, F_GETFD, 0), Ok(0), "no FD_CLOEXEC without O_CLOEXEC");
    check_eq!(
        fcntl(w, F_GETFL, 0).map(|f| f as u32 & O_NONBLOCK),
        Ok(O_NONBLOCK),
        "write end O_NONBLOCK"
    );
    // Fill the pipe: a non-blocking write then fails with EAGAIN.
    let chunk = [7u8; 4096];
    let mut total = 0;
    loop {
        match write(w, &chunk) {
            Ok(n) => total += n,
            Err(Errno::EAGAIN) => break,
            Err(e) => return Err(crate::Fail(alloc::format!("filling the pipe: {e:?}"))),
        }
        ensure!(total <= 1 << 20, "pipe accepted more than 1 MiB");
    }
    check_eq!(total, 65536, "default pipe capacity");
    let [c, _] = rt::fs::pipe2(O_CLOEXEC).ctx("pipe2(O_CLOEXEC)")?;
    check_eq!(fcntl(c, F_GETFD, 0), Ok(FD_CLOEXEC), "O_CLOEXEC pipe");
    check_eq!(rt::fs::pipe2(0x1), Err(Errno::EINVAL), "pipe2 flags 1");
    for bad in [BAD_LOW, BAD_KERNEL] {
        // SAFETY: the array pointer is not mapped; the kernel must refuse it.
        let r = unsafe { raw(nr::PIPE2, &[bad, 0]) };
        check_eq!(r, Err(Errno::EFAULT), "pipe2 array at {bad:#x}");
    }
    Ok(())
}

fn ppoll_readiness() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    let zero = Timespec::default();
    let mut fds = [
        PollFd {
            fd: r,
            events: POLLIN,
            revents: 0,
        },
        PollFd {
            fd: w,
            events: POLLOUT,
            revents: 0,
        },
        PollFd {
            fd: -1,
            events: POLLIN,
            revents: 0x7f,
        },
    ];
    check_eq!(ppoll(&mut fds, Some(&zero)), Ok(1), "only the write end is ready");
    check_eq!(
        (fds[0].revents, fds[1].revents, fds[2].revents),
        (0, POLLOUT, 0),
        "revents (negative fd ignored)"
    );
    write(w, b"x").ctx("write")?;
    check_eq!(ppoll(&mut fds[..1], Some(&zero)), Ok(1), "readable after a write");
    check_eq!(fds[0].revents, POLLIN, "revents POLLIN");
    close(w);
    let mut buf = [0u8; 1];
    read(r, &mut buf).ctx("read")?;
    check_eq!(ppoll(&mut fds[..1], Some(&zero)), Ok(1), "writer closed");
    check_eq!(fds[0].revents, POLLHUP, "revents POLLHUP");
    let mut closed = [PollFd {
        fd: 999,
        events: POLLIN,
        revents: 0,
    }];
    check_eq!(ppoll(&mut closed, Some(&zero)), Ok(1), "a closed fd counts");
    check_eq!(closed[0].revents, POLLNVAL, "revents POLLNVAL");
    Ok(())
}

fn ppoll_timeout_and_errors() -> Outcome {
    let [r, _w] = pipe().ctx("pipe")?;
    let mut fds = [PollFd {
        fd: r,
        events: POLLIN,
        revents: 0,
    }];
    let t0 = now_ns();
    check_eq!(
        ppoll(&mut fds, Some(&Timespec::ms(20))),
        Ok(0),
        "nothing ready in 20 ms"
    );
    let took = now_ns() - t0;
    ensure!(
        took >= 20_000_000,
        "ppoll returned after {took} ns, before its 20 ms timeout"
    );
    let bad_t = Timespec {
        sec: 0,
        nsec: 1_000_000_000,
    };
    check_eq!(ppoll(&mut fds, Some(&bad_t)), Err(Errno::EINVAL), "tv_nsec = 1e9");
    // SAFETY: the pollfd array pointer is not mapped; the kernel must refuse it.
    let r2 = unsafe {
        raw(
            nr::PPOLL,
            &[BAD_LOW, 1, &Timespec::default() as *const Timespec as usize, 0, 8],
        )
    };
    check_eq!(r2, Err(Errno::EFAULT), "pollfd array at 0x1");
    let mask = 0u64;
    // SAFETY: fds, timeout and mask are live; sigsetsize 4 is wrong on purpose.
    let r3 = unsafe {
        raw(
            nr::PPOLL,
            &[
                fds.as_mut_ptr() as usize,
                1,
                &Timespec::default() as *const Timespec as usize,
                &mask as *const u64 as usize,
                4,
            ],
        )
    };
    check_eq!(r3, Err(Errno::EINVAL), "sigsetsize 4");
    Ok(())
}

fn ppoll_sigmask_unblocks() -> Outcome {
    use super::signal::{hits, record};
    handle(SIGUSR1, record, 0, 0).ctx("install")?;
    sigprocmask(SIG_SETMASK, Some(sigbit(SIGUSR1))).ctx("block")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(hits(), 0, "blocked before ppoll");
    let [r, _w] = pipe().ctx("pipe")?;
    let mut fds = [PollFd {
        fd: r,
        events: POLLIN,
        revents: 0,
    }];
    let mask = 0u64;
    let t = Timespec::ms(2000);
    // SAFETY: fds, the timeout and the mask are live.
    let res = unsafe {
        raw(
            nr::PPOLL,
            &[
                fds.as_mut_ptr() as usize,
                1,
                &t as *const Timespec as usize,
                &mask as *const u64 as usize,
                8,
            ],
        )
    };
    check_eq!(
        res,
        Err(Errno::EINTR),
        "ppoll with a mask that unblocks the pending signal"
    );
    check_eq!(hits(), 1, "the handler ran during ppoll");
    check_eq!(
        sigprocmask(SIG_BLOCK, None),
        Ok(sigbit(SIGUSR1)),
        "mask restored after ppoll"
    );
    Ok(())
}

/// `ioctl(fd, req, buf)`.
fn ioctl(fd: i32, req: usize, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: buf is larger than the structures TCGETS and TIOCGWINSZ fill.
    unsafe { raw(nr::IOCTL, &[fd as usize, req, buf.as_mut_ptr() as usize]) }
}

fn ioctl_console_tty() -> Outcome {
    let fd = open(b"/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC, 0).ctx("open /dev/console")?;
    let mut termios = [0u8; 64];
    check_eq!(ioctl(fd, TCGETS, &mut termios), Ok(0), "TCGETS on /dev/console");
    // c_cflag (offset 8) always holds a baud rate or character size.
    let cflag = u32::from_ne_bytes([termios[8], termios[9], termios[10], termios[11]]);
    ensure!(cflag != 0, "TCGETS gave c_cflag 0");
    let mut ws = [0xffu8; 8];
    check_eq!(ioctl(fd, TIOCGWINSZ, &mut ws), Ok(0), "TIOCGWINSZ on /dev/console");
    ensure!(ws != [0xff; 8], "TIOCGWINSZ wrote nothing");
    // SAFETY: the buffer pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::IOCTL, &[fd as usize, TCGETS, BAD_LOW]) };
    check_eq!(r, Err(Errno::EFAULT), "TCGETS into 0x1");
    if rt::fs::isatty(0) {
        check_eq!(ioctl(0, TCGETS, &mut termios), Ok(0), "TCGETS on a terminal stdin");
    }
    Ok(())
}

fn ioctl_enotty() -> Outcome {
    let (path, fd) = temp_file("ioctl", b"")?;
    let mut buf = [0u8; 64];
    check_eq!(
        ioctl(fd, TCGETS, &mut buf),
        Err(Errno::ENOTTY),
        "TCGETS on a regular file"
    );
    check_eq!(
        ioctl(fd, TIOCGWINSZ, &mut buf),
        Err(Errno::ENOTTY),
        "TIOCGWINSZ on a regular file"
    );
    let null = open(b"/dev/null", O_RDWR, 0).ctx("open /dev/null")?;
    check_eq!(ioctl(null, TCGETS, &mut buf), Err(Errno::ENOTTY), "TCGETS on /dev/null");
    let [r, _w] = pipe().ctx("pipe")?;
    check_eq!(ioctl(r, TCGETS, &mut buf), Err(Errno::ENOTTY), "TCGETS on a pipe");
    check_eq!(ioctl(999, TCGETS, &mut buf), Err(Errno::EBADF), "TCGETS on fd 999");
    remove(&path);
    Ok(())
}

fn faccessat(path: &[u8], mode: usize) -> Result<usize, Errno> {
    let p = cstr(path);
    // SAFETY: p is NUL-terminated.
    unsafe { raw(nr::FACCESSAT, &[AT_FDCWD as usize, p.as_ptr() as usize, mode]) }
}

fn faccessat_modes() -> Outcome {
    let (path, fd) = temp_file("access", b"")?;
    close(fd);
    check_eq!(faccessat(&path, F_OK), Ok(0), "F_OK on an existing file");
    check_eq!(faccessat(&path, R_OK | W_OK), Ok(0), "R_OK|W_OK on a 0644 file of ours");
    // Even root needs some x bit to execute a regular file.
    check_eq!(faccessat(&path, X_OK), Err(Errno::EACCES), "X_OK on a 0644 file");
    fchmodat(&path, 0o755).ctx("chmod 0755")?;
    check_eq!(faccessat(&path, X_OK), Ok(0), "X_OK on a 0755 file");
    fchmodat(&path, 0o444).ctx("chmod 0444")?;
    let root = call(nr::GETEUID, &[]) == Ok(0);
    let want_w = if root { Ok(0) } else { Err(Errno::EACCES) };
    check_eq!(faccessat(&path, W_OK), want_w, "W_OK on a 0444 file (root: {root})");
    check_eq!(faccessat(b"/tmp/ut-missing", F_OK), Err(Errno::ENOENT), "missing file");
    check_eq!(faccessat(&path, 0x10), Err(Errno::EINVAL), "mode 0x10");
    check_eq!(faccessat(b"/tmp", X_OK), Ok(0), "X_OK on a directory");
    // SAFETY: the path pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::FACCESSAT, &[AT_FDCWD as usize, BAD_LOW, 0]) };
    check_eq!(r, Err(Errno::EFAULT), "path at 0x1");
    remove(&path);
    Ok(())
}

fn fchmodat_mode_bits() -> Outcome {
    let (path, fd) = temp_file("chmod", b"")?;
    for mode in [0o600, 0o4755, 0o000, 0o777] {
        check_eq!(fchmodat(&path, mode), Ok(()), "chmod {mode:o}");
        let st = rt::fs::fstat(fd).ctx("fstat")?;
        check_eq!(st.st_mode, S_IFREG | mode, "st_mode after chmod {mode:o}");
    }
    check_eq!(fchmodat(b"/tmp/ut-missing", 0o644), Err(Errno::ENOENT), "missing file");
    let mut below = path.clone();
    below.extend_from_slice(b"/x");
    check_eq!(fchmodat(&below, 0o644), Err(Errno::ENOTDIR), "through a file");
    // SAFETY: the path pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::FCHMODAT, &[AT_FDCWD as usize, BAD_LOW, 0o644]) };
    check_eq!(r, Err(Errno::EFAULT), "path at 0x1");
    remove(&path);
    Ok(())
}

fn mkdirat_errors() -> Outcome {
    let dir = scratch("mkdir");
    check_eq!(rt::fs::mkdirat(AT_FDCWD, &dir, 0o750), Ok(()), "mkdir");
    let st = rt::fs::stat(&dir).ctx("stat")?;
    check_eq!(st.st_mode & S_IFMT, S_IFDIR, "a directory");
    check_eq!(st.st_nlink, 2, "st_nlink of an empty directory");
    check_eq!(
        rt::fs::mkdirat(AT_FDCWD, &dir, 0o755),
        Err(Errno::EEXIST),
        "mkdir of an existing dir"
    );
    check_eq!(
        rt::fs::mkdirat(AT_FDCWD, b"/tmp/ut-no-such-dir/sub", 0o755),
        Err(Errno::ENOENT),
        "missing parent"
    );
    let (file, fd) = temp_file("mkdirf", b"")?;
    close(fd);
    check_eq!(
        rt::fs::mkdirat(AT_FDCWD, &file, 0o755),
        Err(Errno::EEXIST),
        "mkdir over a file"
    );
    let mut below = file.clone();
    below.extend_from_slice(b"/sub");
    check_eq!(
        rt::fs::mkdirat(AT_FDCWD, &below, 0o755),
        Err(Errno::ENOTDIR),
        "parent is a file"
    );
    // SAFETY: the path pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::MKDIRAT, &[AT_FDCWD as usize, BAD_LOW, 0o755]) };
    check_eq!(r, Err(Errno::EFAULT), "path at 0x1");
    remove(&file);
    remove(&dir);
    Ok(())
}

fn unlinkat_files_and_dirs() -> Outcome {
    let dir = scratch("unlink");
    rt::fs::mkdirat(AT_FDCWD, &dir, 0o755).ctx("mkdir")?;
    let mut file = dir.clone();
    file.extend_from_slice(b"/f");
    write_file(&file, b"data", 0o644).ctx("create")?;
    let fd = open(&file, O_RDONLY, 0).ctx("open")?;
    check_eq!(
        rt::fs::unlinkat(AT_FDCWD, &dir, 0),
        Err(Errno::EISDIR),
        "unlink of a directory"
    );
    check_eq!(
        rt::fs::unlinkat(AT_FDCWD, &dir, AT_REMOVEDIR as u32),
        Err(Errno::ENOTEMPTY),
        "rmdir of a non-empty dir"
    );
    check_eq!(
        rt::fs::unlinkat(AT_FDCWD, &file, AT_REMOVEDIR as u32),
        Err(Errno::ENOTDIR),
        "rmdir of a file"
    );
    check_eq!(rt::fs::unlinkat(AT_FDCWD, &file, 0), Ok(()), "unlink the file");
    check_eq!(rt::fs::stat(&file).map(drop), Err(Errno::ENOENT), "gone after unlink");
    check_eq!(
        read_all(fd),
        Ok(b"data".to_vec()),
        "an open fd still reads the unlinked file"
    );
    check_eq!(
        rt::fs::fstat(fd).map(|s| s.st_nlink),
        Ok(0),
        "st_nlink of the unlinked file"
    );
    check_eq!(rt::fs::unlinkat(AT_FDCWD, &file, 0), Err(Errno::ENOENT), "unlink again");
    check_eq!(rt::fs::unlinkat(AT_FDCWD, &dir, 0x1), Err(Errno::EINVAL), "flags 1");
    check_eq!(
        rt::fs::unlinkat(AT_FDCWD, &dir, AT_REMOVEDIR as u32),
        Ok(()),
        "rmdir the empty dir"
    );
    check_eq!(rt::fs::stat(&dir).map(drop), Err(Errno::ENOENT), "dir gone");
    // SAFETY: the path pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::UNLINKAT, &[AT_FDCWD as usize, BAD_LOW, 0]) };
    check_eq!(r, Err(Errno::EFAULT), "path at 0x1");
    Ok(())
}

fn chdir_getcwd() -> Outcome {
    let dir = scratch("cwd");
    rt::fs::mkdirat(AT_FDCWD, &dir, 0o755).ctx("mkdir")?;
    check_eq!(rt::fs::chdir(b"/tmp"), Ok(()), "chdir /tmp");
    check_eq!(rt::fs::getcwd(), Ok(b"/tmp".to_vec()), "getcwd");
    let name = &dir[b"/tmp/".len()..];
    check_eq!(rt::fs::chdir(name), Ok(()), "chdir relative");
    check_eq!(rt::fs::getcwd(), Ok(dir.clone()), "getcwd after relative chdir");
    write_file(b"here", b"x", 0o644).ctx("create relative file")?;
    let mut full = dir.clone();
    full.extend_from_slice(b"/here");
    check_eq!(
        rt::fs::stat(&full).map(|s| s.st_size),
        Ok(1),
        "relative create landed in the cwd"
    );
    check_eq!(rt::fs::chdir(b".."), Ok(()), "chdir ..");
    check_eq!(rt::fs::getcwd(), Ok(b"/tmp".to_vec()), "getcwd after ..");
    check_eq!(rt::fs::chdir(b"/"), Ok(()), "chdir /");
    check_eq!(rt::fs::chdir(b".."), Ok(()), "chdir .. at /");
    check_eq!(rt::fs::getcwd(), Ok(b"/".to_vec()), "/.. is /");
    remove(&full);
    remove(&dir);
    Ok(())
}

fn chdir_getcwd_errors() -> Outcome {
    let (file, fd) = temp_file("cwdf", b"")?;
    close(fd);
    check_eq!(rt::fs::chdir(&file), Err(Errno::ENOTDIR), "chdir to a file");
    check_eq!(
        rt::fs::chdir(b"/tmp/ut-missing"),
        Err(Errno::ENOENT),
        "chdir to a missing dir"
    );
    // SAFETY: the path pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::CHDIR, &[BAD_LOW]) };
    check_eq!(r, Err(Errno::EFAULT), "chdir path at 0x1");
    rt::fs::chdir(b"/tmp").ctx("chdir /tmp")?;
    let mut small = [0u8; 4];
    // SAFETY: small is live for its length.
    let r = unsafe { raw(nr::GETCWD, &[small.as_mut_ptr() as usize, small.len()]) };
    check_eq!(r, Err(Errno::ERANGE), "getcwd into 4 bytes for /tmp");
    let mut exact = [0xffu8; 5];
    // SAFETY: exact is live for its length.
    let r = unsafe { raw(nr::GETCWD, &[exact.as_mut_ptr() as usize, exact.len()]) };
    check_eq!(r, Ok(5), "getcwd into exactly 5 bytes (length counts the NUL)");
    check_eq!(&exact, b"/tmp\0", "buffer contents");
    // SAFETY: the buffer pointer is not mapped; the kernel must refuse it.
    let r = unsafe { raw(nr::GETCWD, &[BAD_LOW, 64]) };
    check_eq!(r, Err(Errno::EFAULT), "getcwd into 0x1");
    remove(&file);
    Ok(())
}
