//! Filesystem robustness: tmpfs limits and teardown, and the edge cases of
//! getdents64, read and lseek where a wrong answer misleads a program.

use rt::fs::{chdir, mkdirat, umount2, unlinkat, AT_REMOVEDIR};

use super::scratch;
use crate::sys::{self, *};
use crate::{check_eq, Check, Context, Outcome};

pub static CHECKS: &[Check] = crate::checks![
    tmpfs_size_limit_gives_enospc_and_close_after_unlink_frees_it,
    tmpfs_600_deep_tree_unmounts,
    getdents64_one_byte_buffer_is_einval,
    read_null_buffer_at_end_of_file_returns_0,
    lseek_seek_end_on_proc_seq_files_is_einval,
    statfs_reports_tmpfs_size_and_free_blocks,
];

const MOUNT: usize = 40;
const LSEEK: usize = 62;
const STATFS: usize = 43;
const FSTATFS: usize = 44;

/// The words of arm64's `struct statfs`: f_type, f_bsize, f_blocks,
/// f_bfree, f_bavail, f_files, f_ffree, f_fsid, f_namelen, f_frsize,
/// f_flags, spare[4].
type StatFs = [u64; 15];

fn statfs(path: &[u8]) -> Result<StatFs, Errno> {
    let p = cstr(path);
    let mut st: StatFs = [0; 15];
    // SAFETY: p is NUL-terminated; st is 120 writable bytes.
    unsafe { raw(STATFS, &[p.as_ptr() as usize, st.as_mut_ptr() as usize]) }?;
    Ok(st)
}

fn fstatfs(fd: i32) -> Result<StatFs, Errno> {
    let mut st: StatFs = [0; 15];
    // SAFETY: st is 120 writable bytes.
    unsafe { raw(FSTATFS, &[fd as usize, st.as_mut_ptr() as usize]) }?;
    Ok(st)
}

/// mount(2) of a tmpfs on `target` with the data string `opts`.
fn mount_tmpfs(target: &[u8], opts: &[u8]) -> Result<(), Errno> {
    let (src, t, ty, data) = (cstr(b"tmpfs"), cstr(target), cstr(b"tmpfs"), cstr(opts));
    // SAFETY: the four strings are NUL-terminated and live across the call.
    unsafe {
        raw(
            MOUNT,
            &[
                src.as_ptr() as usize,
                t.as_ptr() as usize,
                ty.as_ptr() as usize,
                0,
                data.as_ptr() as usize,
            ],
        )
    }
    .map(drop)
}

/// A fresh directory with a tmpfs mounted on it; `opts` is its data string.
fn tmpfs_at(name: &str, opts: &[u8]) -> Result<alloc::vec::Vec<u8>, crate::Fail> {
    let dir = scratch(name);
    mkdirat(AT_FDCWD, &dir, 0o755).ctx("mkdir mount point")?;
    mount_tmpfs(&dir, opts).ctx("mount tmpfs")?;
    Ok(dir)
}

fn untmpfs(dir: &[u8]) {
    let _ = umount2(dir, 0);
    let _ = unlinkat(AT_FDCWD, dir, AT_REMOVEDIR);
}

fn tmpfs_size_limit_gives_enospc_and_close_after_unlink_frees_it() -> Outcome {
    let dir = tmpfs_at("tmpfs-size", b"size=64k")?;
    let r = (|| -> Outcome {
        let mut a = dir.clone();
        a.extend_from_slice(b"/a");
        let mut b = dir.clone();
        b.extend_from_slice(b"/b");
        let fa = open(&a, O_RDWR | O_CREAT | O_CLOEXEC, 0o644).ctx("create a")?;
        let fb = open(&b, O_RDWR | O_CREAT | O_CLOEXEC, 0o644).ctx("create b")?;
        let chunk = [0x5au8; 16 * 1024];
        let mut total = 0;
        let err = loop {
            match write(fa, &chunk) {
                Ok(n) => total += n,
                Err(e) => break e,
            }
            if total > 1 << 20 {
                break Errno::EIO;
            }
        };
        check_eq!(
            (total, err),
            (64 * 1024, Errno::ENOSPC),
            "bytes written before the error"
        );
        check_eq!(write(fb, b"x"), Err(Errno::ENOSPC), "write to another file when full");
        check_eq!(unlinkat(AT_FDCWD, &a, 0), Ok(()), "unlink the full file");
        check_eq!(
            write(fb, b"x"),
            Err(Errno::ENOSPC),
            "write while the unlinked file is still open"
        );
        close(fa);
        check_eq!(write(fb, &chunk), Ok(chunk.len()), "write after the last close");
        close(fb);
        Ok(())
    })();
    untmpfs(&dir);
    r
}

fn tmpfs_600_deep_tree_unmounts() -> Outcome {
    let dir = tmpfs_at("tmpfs-deep", b"")?;
    let r = (|| -> Outcome {
        chdir(&dir).ctx("chdir to the mount")?;
        for depth in 0..600 {
            mkdirat(AT_FDCWD, b"d", 0o755).map_err(|e| crate::Fail(alloc::format!("mkdir at depth {depth}: {e:?}")))?;
            chdir(b"d").ctx("chdir d")?;
        }
        chdir(b"/").ctx("chdir /")?;
        check_eq!(umount2(&dir, 0), Ok(()), "umount of the 600-deep tree");
        Ok(())
    })();
    let _ = chdir(b"/");
    untmpfs(&dir);
    r
}

fn getdents64_one_byte_buffer_is_einval() -> Outcome {
    let fd = open(b"/", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0).ctx("open /")?;
    let mut buf = [0u8; 1];
    check_eq!(
        rt::fs::getdents64(fd, &mut buf),
        Err(Errno::EINVAL),
        "getdents64 into 1 byte"
    );
    check_eq!(
        rt::fs::getdents64(fd, &mut []),
        Err(Errno::EINVAL),
        "getdents64 into 0 bytes"
    );
    let mut big = [0u8; 512];
    let n = rt::fs::getdents64(fd, &mut big).ctx("getdents64 after the refusals")?;
    check_eq!(n > 0, true, "entries still listed from the start");
    close(fd);
    Ok(())
}

fn read_null_buffer_at_end_of_file_returns_0() -> Outcome {
    let path = scratch("readnull");
    write_file(&path, b"abc", 0o644).ctx("create")?;
    let fd = open(&path, O_RDONLY | O_CLOEXEC, 0).ctx("open")?;
    // SAFETY: NULL is never written: at end of file there is nothing to copy.
    let r = unsafe { raw(sys::nr::READ, &[fd as usize, 0, 16]) };
    check_eq!(r, Err(Errno::EFAULT), "read into NULL with data left");
    let mut buf = [0u8; 8];
    check_eq!(read(fd, &mut buf), Ok(3), "read the data");
    // SAFETY: as above.
    let r = unsafe { raw(sys::nr::READ, &[fd as usize, 0, 16]) };
    check_eq!(r, Ok(0), "read into NULL at end of file");
    close(fd);
    remove(&path);
    Ok(())
}

fn lseek_seek_end_on_proc_seq_files_is_einval() -> Outcome {
    for path in [
        &b"/proc/meminfo"[..],
        b"/proc/self/status",
        b"/proc/self/stat",
        b"/proc/uptime",
        b"/proc/version",
    ] {
        let fd = open(path, O_RDONLY | O_CLOEXEC, 0).ctx("open a /proc file")?;
        let name = core::str::from_utf8(path).unwrap_or("?");
        check_eq!(
            call(LSEEK, &[fd as usize, 0, SEEK_END as usize]),
            Err(Errno::EINVAL),
            "SEEK_END on {name}"
        );
        check_eq!(
            call(LSEEK, &[fd as usize, 5, SEEK_SET as usize]),
            Ok(5),
            "SEEK_SET on {name}"
        );
        check_eq!(
            call(LSEEK, &[fd as usize, 1, SEEK_CUR as usize]),
            Ok(6),
            "SEEK_CUR on {name}"
        );
        close(fd);
    }
    Ok(())
}

fn statfs_reports_tmpfs_size_and_free_blocks() -> Outcome {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    let dir = tmpfs_at("tmpfs-statfs", b"size=64k")?;
    let r = (|| -> Outcome {
        let st = statfs(&dir).ctx("statfs of the new tmpfs")?;
        check_eq!(
            (st[0], st[1], st[2], st[3], st[4]),
            (TMPFS_MAGIC, 4096, 16, 16, 16),
            "type, bsize, blocks, bfree, bavail"
        );
        check_eq!(st[8], 255, "f_namelen");
        check_eq!(st[10] & 0x20, 0x20, "ST_VALID in f_flags");
        let mut f = dir.clone();
        f.extend_from_slice(b"/f");
        let fd = open(&f, O_RDWR | O_CREAT | O_CLOEXEC, 0o644).ctx("create f")?;
        check_eq!(write(fd, &[7u8; 8192]), Ok(8192), "write two pages");
        let st = fstatfs(fd).ctx("fstatfs of f")?;
        check_eq!(
            (st[2], st[3], st[4]),
            (16, 14, 14),
            "blocks, bfree, bavail after two pages"
        );
        close(fd);
        check_eq!(statfs(b"/proc").map(|s| s[0]), Ok(0x9fa0), "f_type of /proc");
        let [r, w] = pipe().ctx("pipe")?;
        check_eq!(fstatfs(r).map(|s| s[0]), Ok(0x5049_5045), "f_type of a pipe");
        close(r);
        close(w);
        let bad = [0u8; 1];
        check_eq!(statfs(&bad[..0]), Err(Errno::ENOENT), "statfs of an empty path");
        Ok(())
    })();
    untmpfs(&dir);
    r
}
