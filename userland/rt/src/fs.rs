//! File system calls.

use alloc::vec::Vec;

use crate::errno::Errno;
use crate::syscall::{check, nr, syscall0, syscall1, syscall2, syscall3, syscall4, syscall5};

/// `dirfd` meaning the current directory, `*at` flags, open flags (arm64
/// uses the asm-generic values except for the directory bits) and
/// `F_DUPFD_CLOEXEC`: uapi's.
pub use uapi::fcntl::{
    AT_FDCWD, AT_REMOVEDIR, AT_SYMLINK_NOFOLLOW, F_DUPFD_CLOEXEC, O_APPEND, O_CLOEXEC, O_CREAT, O_DIRECTORY, O_EXCL,
    O_NOCTTY, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY,
};

// st_mode file types and `struct stat`: the kernel's own definitions.
pub use uapi::stat::{Stat, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};

/// A path as the kernel wants it: NUL-terminated. A path with a NUL inside
/// cannot be passed (`EINVAL`).
pub fn c_path(path: &[u8]) -> Result<Vec<u8>, Errno> {
    if path.contains(&0) {
        return Err(Errno::EINVAL);
    }
    let mut v = Vec::with_capacity(path.len() + 1);
    v.extend_from_slice(path);
    v.push(0);
    Ok(v)
}

pub fn read(fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: buf is writable for buf.len() bytes.
    check(unsafe { syscall3(nr::READ, fd as usize, buf.as_mut_ptr() as usize, buf.len()) })
}

pub fn write(fd: i32, buf: &[u8]) -> Result<usize, Errno> {
    // SAFETY: buf is readable for buf.len() bytes.
    check(unsafe { syscall3(nr::WRITE, fd as usize, buf.as_ptr() as usize, buf.len()) })
}

pub fn openat(dirfd: i32, path: &[u8], flags: u32, mode: u32) -> Result<i32, Errno> {
    let p = c_path(path)?;
    // SAFETY: p is NUL-terminated.
    let r = unsafe {
        syscall4(
            nr::OPENAT,
            dirfd as usize,
            p.as_ptr() as usize,
            flags as usize,
            mode as usize,
        )
    };
    check(r).map(|fd| fd as i32)
}

/// `openat(AT_FDCWD, path, flags, mode)`.
pub fn open(path: &[u8], flags: u32, mode: u32) -> Result<i32, Errno> {
    openat(AT_FDCWD, path, flags, mode)
}

pub fn close(fd: i32) -> Result<(), Errno> {
    // SAFETY: no memory is passed.
    check(unsafe { syscall1(nr::CLOSE, fd as usize) }).map(drop)
}

pub fn dup3(old: i32, new: i32, flags: u32) -> Result<i32, Errno> {
    // SAFETY: no memory is passed.
    check(unsafe { syscall3(nr::DUP3, old as usize, new as usize, flags as usize) }).map(|fd| fd as i32)
}

pub fn fcntl(fd: i32, cmd: u32, arg: usize) -> Result<usize, Errno> {
    // SAFETY: the commands used here take integers, not pointers.
    check(unsafe { syscall3(nr::FCNTL, fd as usize, cmd as usize, arg) })
}

/// Returns `[read end, write end]`.
pub fn pipe2(flags: u32) -> Result<[i32; 2], Errno> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is writable for two ints.
    check(unsafe { syscall2(nr::PIPE2, fds.as_mut_ptr() as usize, flags as usize) })?;
    Ok(fds)
}

pub fn lseek(fd: i32, off: i64, whence: u32) -> Result<u64, Errno> {
    // SAFETY: no memory is passed.
    check(unsafe { syscall3(nr::LSEEK, fd as usize, off as usize, whence as usize) }).map(|o| o as u64)
}

pub fn newfstatat(dirfd: i32, path: &[u8], flags: u32) -> Result<Stat, Errno> {
    let p = c_path(path)?;
    let mut st = Stat::default();
    // SAFETY: p is NUL-terminated; st is a writable struct stat.
    check(unsafe {
        syscall4(
            nr::NEWFSTATAT,
            dirfd as usize,
            p.as_ptr() as usize,
            &mut st as *mut Stat as usize,
            flags as usize,
        )
    })?;
    Ok(st)
}

pub fn stat(path: &[u8]) -> Result<Stat, Errno> {
    newfstatat(AT_FDCWD, path, 0)
}

pub fn lstat(path: &[u8]) -> Result<Stat, Errno> {
    newfstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)
}

pub fn fstat(fd: i32) -> Result<Stat, Errno> {
    let mut st = Stat::default();
    // SAFETY: st is a writable struct stat.
    check(unsafe { syscall2(nr::FSTAT, fd as usize, &mut st as *mut Stat as usize) })?;
    Ok(st)
}

pub fn readlinkat(dirfd: i32, path: &[u8]) -> Result<Vec<u8>, Errno> {
    let p = c_path(path)?;
    let mut buf = alloc::vec![0u8; 4096];
    // SAFETY: p is NUL-terminated; buf is writable for its length.
    let n = check(unsafe {
        syscall4(
            nr::READLINKAT,
            dirfd as usize,
            p.as_ptr() as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
        )
    })?;
    buf.truncate(n);
    Ok(buf)
}

pub fn getdents64(fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: buf is writable for buf.len() bytes.
    check(unsafe { syscall3(nr::GETDENTS64, fd as usize, buf.as_mut_ptr() as usize, buf.len()) })
}

/// One `struct linux_dirent64` of a `getdents64` buffer.
pub struct DirEntry<'a> {
    pub ino: u64,
    pub d_type: u8,
    pub name: &'a [u8],
}

/// The entries of a buffer that `getdents64` filled with `len` bytes.
pub fn dirents(buf: &[u8]) -> impl Iterator<Item = DirEntry<'_>> {
    let mut off = 0;
    core::iter::from_fn(move || {
        // d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name[].
        let rec = buf.get(off..off + 19)?;
        let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
        let ent = buf.get(off..off + reclen)?;
        if reclen < 19 {
            return None;
        }
        off += reclen;
        let name = &ent[19..];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        Some(DirEntry {
            ino: u64::from_ne_bytes(ent[0..8].try_into().ok()?),
            d_type: ent[18],
            name: &name[..end],
        })
    })
}

pub fn chdir(path: &[u8]) -> Result<(), Errno> {
    let p = c_path(path)?;
    // SAFETY: p is NUL-terminated.
    check(unsafe { syscall1(nr::CHDIR, p.as_ptr() as usize) }).map(drop)
}

pub fn getcwd() -> Result<Vec<u8>, Errno> {
    let mut buf = alloc::vec![0u8; 4096];
    // SAFETY: buf is writable for its length.
    let n = check(unsafe { syscall2(nr::GETCWD, buf.as_mut_ptr() as usize, buf.len()) })?;
    // The result counts the terminating NUL.
    buf.truncate(n.saturating_sub(1));
    Ok(buf)
}

pub fn mkdirat(dirfd: i32, path: &[u8], mode: u32) -> Result<(), Errno> {
    let p = c_path(path)?;
    // SAFETY: p is NUL-terminated.
    check(unsafe { syscall3(nr::MKDIRAT, dirfd as usize, p.as_ptr() as usize, mode as usize) }).map(drop)
}

pub fn unlinkat(dirfd: i32, path: &[u8], flags: u32) -> Result<(), Errno> {
    let p = c_path(path)?;
    // SAFETY: p is NUL-terminated.
    check(unsafe { syscall3(nr::UNLINKAT, dirfd as usize, p.as_ptr() as usize, flags as usize) }).map(drop)
}

pub fn mount(source: &[u8], target: &[u8], fstype: &[u8], flags: usize) -> Result<(), Errno> {
    let (s, t, f) = (c_path(source)?, c_path(target)?, c_path(fstype)?);
    // SAFETY: the three strings are NUL-terminated; no data argument.
    check(unsafe {
        syscall5(
            nr::MOUNT,
            s.as_ptr() as usize,
            t.as_ptr() as usize,
            f.as_ptr() as usize,
            flags,
            0,
        )
    })
    .map(drop)
}

pub fn sync() {
    // SAFETY: no arguments; sync cannot fail.
    unsafe { syscall0(nr::SYNC) };
}

const TCGETS: usize = uapi::termios::TCGETS as usize;

/// Whether `fd` is a terminal (`TCGETS` succeeds), as `isatty` decides.
pub fn isatty(fd: i32) -> bool {
    let mut termios = [0u8; 64];
    // SAFETY: termios is larger than arm64's struct termios (60 bytes).
    check(unsafe { syscall3(nr::IOCTL, fd as usize, TCGETS, termios.as_mut_ptr() as usize) }).is_ok()
}

/// umount2(2).
pub fn umount2(target: &[u8], flags: usize) -> Result<(), Errno> {
    let t = c_path(target)?;
    // SAFETY: the path is NUL-terminated.
    check(unsafe { crate::syscall::syscall2(crate::syscall::nr::UMOUNT2, t.as_ptr() as usize, flags) }).map(|_| ())
}
