//! Namespace system calls beyond open/mkdir/unlink (Linux's fs/namei.c,
//! fs/open.c, fs/utimes.c): symlinkat, linkat, renameat, renameat2,
//! mknodat, truncate, ftruncate, fchdir, fchmod, fchownat, fchown and
//! utimensat, on the VFS's own operations.

use super::syscall;
use crate::errno::Errno;
use crate::fs::{cred, current_cwd, current_files, vfs};
use crate::uaccess::{copy_from_user, Filename, UserPtr};
use alloc::vec::Vec;
use uapi::fcntl::{AT_EMPTY_PATH, UTIME_NOW, UTIME_OMIT};
use vfs::mount::Path;
use vfs::open::TimeSpec;

fn path_arg(p: UserPtr) -> Result<Filename, Errno> {
    crate::uaccess::getname(p)
}

/// The start of a `*at` lookup.
fn at(dirfd: u64, path: &[u8], flags: u32) -> Result<Path, Errno> {
    let empty = flags & AT_EMPTY_PATH != 0 && path.is_empty();
    current_files().path_at(dirfd as i32, &current_cwd(), path, empty)
}

syscall!(__arm64_sys_symlinkat, r, {
    let (target, dirfd, path) = (
        path_arg(UserPtr::new(r.regs[0]))?,
        r.regs[1],
        path_arg(UserPtr::new(r.regs[2]))?,
    );
    let start = at(dirfd, &path, 0)?;
    // The target as a C string in kernel memory, as Linux passes it on.
    let mut oldname = Vec::new();
    oldname.try_reserve_exact(target.len() + 1).map_err(|_| Errno::ENOMEM)?;
    oldname.extend_from_slice(&target);
    oldname.push(0);
    let link = NewLink {
        start,
        name: path.to_vec(),
    };
    super::from_ret(vfs_symlink(&NOP_MNT_IDMAP, &link, &link.name, oldname.as_ptr()).into())
});

/// Where a new link goes: the lookup's start and the name under it.
struct NewLink {
    start: Path,
    name: Vec<u8>,
}

/// The one id mapping (Linux's `nop_mnt_idmap`).
static NOP_MNT_IDMAP: u64 = 0;

/// Makes the symbolic link (Linux's `vfs_symlink(idmap, dir, dentry,
/// oldname)`, with its arguments in the same registers, each a kernel
/// pointer: `$arg4` is the target, a NUL-terminated string in kernel
/// memory). Returns 0 or -errno.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[allow(improper_ctypes_definitions)] // thin pointers, one register each; only Rust calls it
#[no_mangle]
#[inline(never)]
extern "C" fn vfs_symlink(_idmap: &u64, dir: &NewLink, name: &Vec<u8>, oldname: *const u8) -> i32 {
    // SAFETY: `oldname` is the NUL-terminated copy the caller made and
    // keeps alive for the call.
    let target = unsafe { core::ffi::CStr::from_ptr(oldname.cast()) };
    match vfs().symlinkat(&cred(), target.to_bytes(), &dir.start, name) {
        Ok(_) => 0,
        Err(e) => -e.as_i32(),
    }
}

syscall!(__arm64_sys_linkat, r, {
    let (olddfd, old, newdfd, new, flags) = (
        r.regs[0],
        path_arg(UserPtr::new(r.regs[1]))?,
        r.regs[2],
        path_arg(UserPtr::new(r.regs[3]))?,
        r.regs[4] as u32,
    );
    let old_start = at(olddfd, &old, flags)?;
    let new_start = at(newdfd, &new, 0)?;
    vfs().linkat(&cred(), &old_start, &old, &new_start, &new, flags)?;
    Ok(0)
});

fn do_renameat2(r: &arch::ptrace::PtRegs, flags: u32) -> Result<u64, Errno> {
    let (olddfd, old, newdfd, new) = (
        r.regs[0],
        path_arg(UserPtr::new(r.regs[1]))?,
        r.regs[2],
        path_arg(UserPtr::new(r.regs[3]))?,
    );
    let old_start = at(olddfd, &old, 0)?;
    let new_start = at(newdfd, &new, 0)?;
    vfs().renameat2(&cred(), &old_start, &old, &new_start, &new, flags)?;
    Ok(0)
}

syscall!(__arm64_sys_renameat, r, do_renameat2(r, 0));
syscall!(__arm64_sys_renameat2, r, do_renameat2(r, r.regs[4] as u32));

syscall!(__arm64_sys_mknodat, r, {
    let (dirfd, path, mode, dev) = (
        r.regs[0],
        path_arg(UserPtr::new(r.regs[1]))?,
        r.regs[2] as u32,
        r.regs[3] as u32,
    );
    let start = at(dirfd, &path, 0)?;
    let umask = crate::process::current_process()
        .umask
        .load(core::sync::atomic::Ordering::Relaxed);
    // The system call's 32-bit dev_t is Linux's new_encode_dev layout,
    // the one `uapi::stat::makedev` makes and inodes keep: decoding it
    // (new_decode_dev) and encoding it again gives the same number (the
    // uapi test `a_32_bit_dev_t_decodes_and_encodes_to_itself`).
    vfs().mknodat(&cred(), &start, &path, mode, u64::from(dev), umask)?;
    Ok(0)
});

syscall!(__arm64_sys_truncate, r, {
    let path = path_arg(UserPtr::new(r.regs[0]))?;
    vfs().truncate(&cred(), &current_cwd(), &path, r.regs[1] as i64)?;
    if let Ok(meta) = vfs().fstatat(&cred(), &current_cwd(), &path, 0) {
        crate::mm::vm::unmap_mapping_range(meta.dev, meta.ino, meta.size);
    }
    Ok(0)
});

syscall!(__arm64_sys_ftruncate, r, {
    let f = current_files().get(r.regs[0] as i32)?;
    f.truncate(r.regs[1] as i64)?;
    let meta = f.inode().metadata();
    crate::mm::vm::unmap_mapping_range(meta.dev, meta.ino, meta.size);
    Ok(0)
});

syscall!(__arm64_sys_fchdir, r, {
    let f = current_files().get(r.regs[0] as i32)?;
    let p = f.path().ok_or(Errno::ENOTDIR)?.clone();
    if !p.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    vfs::cred::may_access(&p.metadata(), &cred(), vfs::MAY_EXEC)?;
    let cwd = crate::process::current_process().fs.lock().cwd.clone();
    *cwd.lock() = p;
    Ok(0)
});

syscall!(__arm64_sys_fchmod, r, {
    let f = current_files().get(r.regs[0] as i32)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    vfs::open::chmod_inode(&cred(), f.inode(), r.regs[1] as u32)?;
    Ok(0)
});

/// A uid or gid argument: -1 leaves it unchanged.
fn id_arg(v: u64) -> Option<u32> {
    (v as u32 != u32::MAX).then_some(v as u32)
}

syscall!(__arm64_sys_fchownat, r, {
    let (dirfd, path, flags) = (r.regs[0], path_arg(UserPtr::new(r.regs[1]))?, r.regs[4] as u32);
    let start = at(dirfd, &path, flags)?;
    vfs().fchownat(&cred(), &start, &path, id_arg(r.regs[2]), id_arg(r.regs[3]), flags)?;
    Ok(0)
});

syscall!(__arm64_sys_fchown, r, {
    let f = current_files().get(r.regs[0] as i32)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    vfs::open::chown_inode(&cred(), f.inode(), id_arg(r.regs[1]), id_arg(r.regs[2]))?;
    Ok(0)
});

/// One `struct timespec` of utimensat, with UTIME_NOW and UTIME_OMIT.
fn utime_arg(raw: &[u8]) -> Result<TimeSpec, Errno> {
    let word = |i: usize| i64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap_or_default());
    let (sec, nsec) = (word(0), word(1));
    Ok(match nsec {
        UTIME_NOW => TimeSpec::Now,
        UTIME_OMIT => TimeSpec::Omit,
        0..=999_999_999 => TimeSpec::Set(vfs::Timespec::new(sec, nsec as u32)),
        _ => return Err(Errno::EINVAL),
    })
}

syscall!(__arm64_sys_utimensat, r, {
    let (dirfd, upath, utimes, flags) = (
        r.regs[0],
        UserPtr::new(r.regs[1]),
        UserPtr::new(r.regs[2]),
        r.regs[3] as u32,
    );
    let times = if utimes.is_null() {
        [TimeSpec::Now, TimeSpec::Now]
    } else {
        let mut raw = [0u8; 32];
        copy_from_user(&mut raw, utimes)?;
        [utime_arg(&raw[..16])?, utime_arg(&raw[16..])?]
    };
    let now = vfs::Clock::now(&crate::fs::KernelClock);
    // A NULL path: the file dirfd itself (Linux's do_utimes_fd).
    if upath.is_null() {
        if flags & !uapi::fcntl::AT_SYMLINK_NOFOLLOW != 0 {
            return Err(Errno::EINVAL);
        }
        let f = current_files().get(dirfd as i32)?;
        vfs::open::utimes_inode(&cred(), f.inode(), times, now)?;
        return Ok(0);
    }
    let path = path_arg(upath)?;
    let start = at(dirfd, &path, flags)?;
    vfs().utimensat(&cred(), &start, &path, times, now, flags)?;
    Ok(0)
});

/// `struct statx` for `meta`, reporting the basic fields and the mount
/// id (Linux's `cp_statx`).
fn statx_bytes(meta: &vfs::Metadata, mnt_id: u64) -> [u8; uapi::stat::Statx::SIZE] {
    use uapi::stat::{major, minor, Statx, StatxTimestamp, STATX_BASIC_STATS, STATX_MNT_ID};
    let ts = |t: vfs::Timespec| StatxTimestamp {
        tv_sec: t.sec,
        tv_nsec: t.nsec,
    };
    Statx {
        stx_mask: STATX_BASIC_STATS | STATX_MNT_ID,
        stx_blksize: meta.blksize,
        stx_nlink: meta.nlink,
        stx_uid: meta.uid,
        stx_gid: meta.gid,
        stx_mode: meta.mode as u16,
        stx_ino: meta.ino,
        stx_size: meta.size,
        stx_blocks: meta.blocks,
        stx_atime: ts(meta.atime),
        stx_ctime: ts(meta.ctime),
        stx_mtime: ts(meta.mtime),
        stx_rdev_major: major(meta.rdev),
        stx_rdev_minor: minor(meta.rdev),
        stx_dev_major: major(meta.dev),
        stx_dev_minor: minor(meta.dev),
        stx_mnt_id: mnt_id,
        ..Statx::default()
    }
    .to_bytes()
}

syscall!(__arm64_sys_statx, r, {
    let (dirfd, upath, flags, mask, buf) = (
        r.regs[0],
        UserPtr::new(r.regs[1]),
        r.regs[2] as u32,
        r.regs[3] as u32,
        UserPtr::new(r.regs[4]),
    );
    use uapi::fcntl::{AT_NO_AUTOMOUNT, AT_STATX_SYNC_TYPE, AT_SYMLINK_NOFOLLOW};
    const KNOWN: u32 = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE;
    // Both sync bits at once is not a sync type.
    if flags & !KNOWN != 0 || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE {
        return Err(Errno::EINVAL);
    }
    if mask & uapi::stat::STATX__RESERVED != 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg(upath)?;
    let (meta, mnt_id) = if flags & AT_EMPTY_PATH != 0 && path.is_empty() && dirfd as i32 != uapi::fcntl::AT_FDCWD {
        let f = current_files().get(dirfd as i32)?;
        (f.metadata(), f.path().map_or(0, |p| p.mnt.id()))
    } else {
        let start = at(dirfd, &path, flags)?;
        let p = if flags & AT_EMPTY_PATH != 0 && path.is_empty() {
            start
        } else {
            vfs().lookup(&cred(), &start, &path, flags & AT_SYMLINK_NOFOLLOW == 0)?
        };
        (p.metadata(), p.mnt.id())
    };
    crate::uaccess::copy_to_user(buf, &statx_bytes(&meta, mnt_id))?;
    Ok(0)
});

/// The xattr calls: no filesystem here stores extended attributes, so
/// every one is EOPNOTSUPP once the file is found, as on a Linux
/// filesystem without xattr handlers.
fn xattr_path(upath: UserPtr, follow: bool) -> Result<u64, Errno> {
    let path = path_arg(upath)?;
    vfs().lookup(&cred(), &current_cwd(), &path, follow)?;
    Err(Errno::EOPNOTSUPP)
}

fn xattr_fd(fd: u64) -> Result<u64, Errno> {
    current_files().get(fd as i32)?;
    Err(Errno::EOPNOTSUPP)
}

syscall!(__arm64_sys_setxattr, r, xattr_path(UserPtr::new(r.regs[0]), true));
syscall!(__arm64_sys_lsetxattr, r, xattr_path(UserPtr::new(r.regs[0]), false));
syscall!(__arm64_sys_fsetxattr, r, xattr_fd(r.regs[0]));
syscall!(__arm64_sys_getxattr, r, xattr_path(UserPtr::new(r.regs[0]), true));
syscall!(__arm64_sys_lgetxattr, r, xattr_path(UserPtr::new(r.regs[0]), false));
syscall!(__arm64_sys_fgetxattr, r, xattr_fd(r.regs[0]));
syscall!(__arm64_sys_removexattr, r, xattr_path(UserPtr::new(r.regs[0]), true));
syscall!(__arm64_sys_lremovexattr, r, xattr_path(UserPtr::new(r.regs[0]), false));
syscall!(__arm64_sys_fremovexattr, r, xattr_fd(r.regs[0]));

/// listxattr: an empty list (0 bytes), as for a file without attributes.
fn listxattr_path(upath: UserPtr, follow: bool) -> Result<u64, Errno> {
    let path = path_arg(upath)?;
    vfs().lookup(&cred(), &current_cwd(), &path, follow)?;
    Ok(0)
}

syscall!(__arm64_sys_listxattr, r, listxattr_path(UserPtr::new(r.regs[0]), true));
syscall!(
    __arm64_sys_llistxattr,
    r,
    listxattr_path(UserPtr::new(r.regs[0]), false)
);
syscall!(__arm64_sys_flistxattr, r, {
    current_files().get(r.regs[0] as i32)?;
    Ok(0)
});
