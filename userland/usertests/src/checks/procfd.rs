//! `/proc/self/fd/N` and `/proc/<pid>/fd/N` as symbolic links (their
//! bodies: the file's path, `" (deleted)"` once unlinked, `pipe:[ino]`;
//! their modes from the access mode), and Linux's symlink limits: a path
//! walk follows at most 40 links (MAXSYMLINKS) before ELOOP, and
//! `fstatat(AT_SYMLINK_NOFOLLOW)` describes the link itself.

use alloc::format;
use alloc::vec::Vec;

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    proc_fd_links_name_open_files,
    proc_fd_link_of_an_unlinked_file_says_deleted,
    proc_fd_link_of_a_pipe_is_pipe_ino,
    proc_fd_link_modes_follow_the_access_mode,
    proc_fd_of_a_closed_descriptor_is_enoent,
    symlink_walk_follows_40_links_and_not_41,
    fstatat_nofollow_describes_dangling_link,
    proc_self_exe_is_a_link_to_the_running_program,
];

const SYMLINKAT: usize = 36;
const READLINKAT: usize = 78;
const AT_SYMLINK_NOFOLLOW: usize = 0x100;
const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;
const S_IFREG: u32 = 0o100000;
/// Linux's MAXSYMLINKS.
const MAXSYMLINKS: usize = 40;

/// (st_mode, st_ino, st_size) of `path` by newfstatat.
fn stat_at(path: &[u8], flags: usize) -> Result<(u32, u64, i64), Errno> {
    let p = cstr(path);
    let mut st = [0u8; 128];
    // SAFETY: p is NUL-terminated; st is sizeof(struct stat) on arm64.
    unsafe {
        raw(
            nr::NEWFSTATAT,
            &[AT_FDCWD as usize, p.as_ptr() as usize, st.as_mut_ptr() as usize, flags],
        )
    }?;
    Ok(decode(&st))
}

/// (st_mode, st_ino, st_size) of descriptor `fd`.
fn fstat(fd: i32) -> Result<(u32, u64, i64), Errno> {
    let mut st = [0u8; 128];
    // SAFETY: st is sizeof(struct stat) on arm64.
    unsafe { raw(nr::FSTAT, &[fd as usize, st.as_mut_ptr() as usize]) }?;
    Ok(decode(&st))
}

fn decode(st: &[u8; 128]) -> (u32, u64, i64) {
    let mode = u32::from_le_bytes([st[16], st[17], st[18], st[19]]);
    let ino = u64::from_le_bytes(st[8..16].try_into().unwrap_or_default());
    let size = i64::from_le_bytes(st[48..56].try_into().unwrap_or_default());
    (mode, ino, size)
}

fn readlink(path: &[u8]) -> Result<Vec<u8>, Errno> {
    let p = cstr(path);
    let mut buf = [0u8; 512];
    // SAFETY: p is NUL-terminated, buf is live.
    let n = unsafe {
        raw(
            READLINKAT,
            &[
                AT_FDCWD as usize,
                p.as_ptr() as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
            ],
        )
    }?;
    Ok(buf[..n].to_vec())
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

fn fd_path(fd: i32) -> Vec<u8> {
    format!("/proc/self/fd/{fd}").into_bytes()
}

fn proc_fd_links_name_open_files() -> Outcome {
    let file = super::scratch("pfdfile");
    write_file(&file, b"hello", 0o644).ctx("file")?;
    let fd = open(&file, O_RDONLY, 0).ctx("open")?;
    let r = (|| {
        check_eq!(readlink(&fd_path(fd)), Ok(file.clone()), "readlink /proc/self/fd/N");
        let by_pid = format!("/proc/{}/fd/{fd}", getpid()).into_bytes();
        check_eq!(readlink(&by_pid), Ok(file.clone()), "readlink /proc/<pid>/fd/N");
        let (mode, _, _) = stat_at(&fd_path(fd), AT_SYMLINK_NOFOLLOW).ctx("lstat")?;
        check_eq!(mode & S_IFMT, S_IFLNK, "lstat: a symlink");
        let (mode, _, size) = stat_at(&fd_path(fd), 0).ctx("stat")?;
        check_eq!((mode & S_IFMT, size), (S_IFREG, 5), "stat follows it to the file");
        let again = open(&fd_path(fd), O_RDONLY, 0).ctx("open through the link")?;
        let mut buf = [0u8; 8];
        let n = read(again, &mut buf);
        close(again);
        check_eq!(
            n.map(|n| buf[..n].to_vec()),
            Ok(b"hello".to_vec()),
            "read through the link"
        );
        Ok(())
    })();
    close(fd);
    remove(&file);
    r
}

fn proc_fd_link_of_an_unlinked_file_says_deleted() -> Outcome {
    let file = super::scratch("pfddel");
    write_file(&file, b"x", 0o644).ctx("file")?;
    let fd = open(&file, O_RDWR, 0).ctx("open")?;
    remove(&file);
    let mut want = file.clone();
    want.extend_from_slice(b" (deleted)");
    let got = readlink(&fd_path(fd));
    close(fd);
    check_eq!(got, Ok(want), "readlink after unlink");
    Ok(())
}

fn proc_fd_link_of_a_pipe_is_pipe_ino() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    let ino = fstat(r).map(|(_, ino, _)| ino);
    let got = (readlink(&fd_path(r)), readlink(&fd_path(w)));
    close(r);
    close(w);
    let ino = ino.ctx("fstat")?;
    let want = format!("pipe:[{ino}]").into_bytes();
    check_eq!(got, (Ok(want.clone()), Ok(want)), "both ends name the pipe");
    Ok(())
}

fn proc_fd_link_modes_follow_the_access_mode() -> Outcome {
    let file = super::scratch("pfdmode");
    write_file(&file, b"", 0o644).ctx("file")?;
    let mut got = Vec::new();
    for flags in [O_RDONLY, O_WRONLY, O_RDWR] {
        let fd = open(&file, flags, 0).ctx("open")?;
        got.push(stat_at(&fd_path(fd), AT_SYMLINK_NOFOLLOW).map(|(m, _, _)| m & 0o7777));
        close(fd);
    }
    remove(&file);
    check_eq!(got, [Ok(0o500), Ok(0o300), Ok(0o700)], "r-x, -wx, rwx");
    Ok(())
}

fn proc_fd_of_a_closed_descriptor_is_enoent() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    close(r);
    close(w);
    check_eq!(readlink(&fd_path(r)), Err(Errno::ENOENT), "readlink of a closed fd");
    check_eq!(
        stat_at(&fd_path(w), AT_SYMLINK_NOFOLLOW).map(drop),
        Err(Errno::ENOENT),
        "lstat of a closed fd"
    );
    check_eq!(
        readlink(b"/proc/self/fd/01"),
        Err(Errno::ENOENT),
        "a leading zero is no fd"
    );
    Ok(())
}

fn symlink_walk_follows_40_links_and_not_41() -> Outcome {
    let file = super::scratch("chain");
    write_file(&file, b"end", 0o644).ctx("file")?;
    // link k points at link k-1; link 0 is the file itself.
    let name = |k: usize| {
        if k == 0 {
            file.clone()
        } else {
            let mut n = file.clone();
            n.extend_from_slice(format!(".{k}").as_bytes());
            n
        }
    };
    let mut made = 0;
    let r = (|| {
        for k in 1..=MAXSYMLINKS + 1 {
            symlink(&name(k - 1), &name(k)).ctx("symlinkat")?;
            made = k;
        }
        let (mode, _, size) = stat_at(&name(MAXSYMLINKS), 0).ctx("stat through 40 links")?;
        check_eq!((mode & S_IFMT, size), (S_IFREG, 3), "40 links reach the file");
        let fd = open(&name(MAXSYMLINKS), O_RDONLY, 0).ctx("open through 40 links")?;
        close(fd);
        check_eq!(
            stat_at(&name(MAXSYMLINKS + 1), 0).map(drop),
            Err(Errno::ELOOP),
            "stat: 41 links"
        );
        check_eq!(
            open(&name(MAXSYMLINKS + 1), O_RDONLY, 0),
            Err(Errno::ELOOP),
            "open: 41 links"
        );
        let (mode, _, _) = stat_at(&name(MAXSYMLINKS + 1), AT_SYMLINK_NOFOLLOW).ctx("lstat")?;
        ensure!(mode & S_IFMT == S_IFLNK, "lstat of the 41st link: mode {mode:o}");
        Ok(())
    })();
    for k in 0..=made {
        remove(&name(k));
    }
    r
}

fn fstatat_nofollow_describes_dangling_link() -> Outcome {
    let link = super::scratch("dangling");
    let target = b"/nonexistent/target";
    symlink(target, &link).ctx("symlinkat")?;
    let nofollow = stat_at(&link, AT_SYMLINK_NOFOLLOW);
    let follow = stat_at(&link, 0).map(drop);
    remove(&link);
    let (mode, _, size) = nofollow.ctx("lstat")?;
    check_eq!(
        (mode & S_IFMT, size as usize),
        (S_IFLNK, target.len()),
        "the link: its body's length"
    );
    check_eq!(follow, Err(Errno::ENOENT), "stat follows it nowhere");
    Ok(())
}

/// `/proc/self/exe` is a symbolic link (mode 0777) whose body is the
/// absolute path of the running program, and which leads to that file.
fn proc_self_exe_is_a_link_to_the_running_program() -> Outcome {
    let (mode, _, _) = stat_at(b"/proc/self/exe", AT_SYMLINK_NOFOLLOW).ctx("lstat /proc/self/exe")?;
    check_eq!(mode, S_IFLNK | 0o777, "lstat mode of /proc/self/exe");
    let target = readlink(b"/proc/self/exe").ctx("readlink /proc/self/exe")?;
    ensure!(
        target.first() == Some(&b'/') && target.ends_with(b"/usertests"),
        "/proc/self/exe -> {:?}",
        alloc::string::String::from_utf8_lossy(&target)
    );
    let (followed_mode, followed_ino, _) = stat_at(b"/proc/self/exe", 0).ctx("stat /proc/self/exe")?;
    let (target_mode, target_ino, _) = stat_at(&target, 0).ctx("stat the link's target")?;
    check_eq!(followed_mode & S_IFMT, S_IFREG, "the link leads to a regular file");
    check_eq!(
        (followed_mode, followed_ino),
        (target_mode, target_ino),
        "the file /proc/self/exe leads to is its body's"
    );
    Ok(())
}
