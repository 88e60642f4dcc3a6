//! The descriptor table: lowest free fd, limits, dup family, fcntl,
//! close-on-exec, fork.

mod common;

use common::*;
use uapi::fcntl::*;
use vfs::{Errno, FdTable};

#[test]
fn lowest_free_descriptor_is_used() {
    let w = world();
    w.write("/f", b"");
    let t = FdTable::new();
    for want in 0..4 {
        assert_eq!(t.install(w.open("/f", O_RDONLY).unwrap(), false).unwrap(), want);
    }
    t.close(1).unwrap();
    t.close(2).unwrap();
    assert_eq!(t.install(w.open("/f", O_RDONLY).unwrap(), false).unwrap(), 1);
    assert_eq!(t.dup(0).unwrap(), 2);
    assert_eq!(t.dup(0).unwrap(), 4);
    assert_eq!(t.fds(), vec![0, 1, 2, 3, 4]);
}

#[test]
fn the_limit_is_1024_descriptors() {
    let w = world();
    w.write("/f", b"");
    let t = FdTable::new();
    let f = w.open("/f", O_RDONLY).unwrap();
    for _ in 0..1024 {
        t.install(f.clone(), false).unwrap();
    }
    assert_eq!(t.install(f.clone(), false), Err(Errno::EMFILE));
    assert_eq!(t.dup(0), Err(Errno::EMFILE));
    assert_eq!(t.fcntl(0, F_DUPFD, 0), Err(Errno::EMFILE));
    assert_eq!(t.dup3(0, 1024, 0), Err(Errno::EBADF));
    t.close(500).unwrap();
    assert_eq!(t.dup(3).unwrap(), 500);
}

#[test]
fn close_and_get_of_bad_descriptors_are_ebadf() {
    let t = FdTable::new();
    assert_eq!(t.close(0).err(), Some(Errno::EBADF));
    assert_eq!(t.get(-1).err(), Some(Errno::EBADF));
    assert_eq!(t.get(7).err(), Some(Errno::EBADF));
    assert_eq!(t.dup(3), Err(Errno::EBADF));
    assert_eq!(t.fcntl(3, F_GETFD, 0), Err(Errno::EBADF));
    let w = world();
    w.write("/f", b"");
    t.install(w.open("/f", O_RDONLY).unwrap(), false).unwrap();
    t.close(0).unwrap();
    assert_eq!(t.close(0).err(), Some(Errno::EBADF));
}

#[test]
fn dup2_and_dup3_rules() {
    let w = world();
    w.write("/a", b"a");
    w.write("/b", b"b");
    let t = FdTable::new();
    let a = t.install(w.open("/a", O_RDONLY).unwrap(), false).unwrap();
    let b = t.install(w.open("/b", O_RDONLY).unwrap(), false).unwrap();
    assert_eq!(t.dup3(a, a, 0), Err(Errno::EINVAL));
    assert_eq!(t.dup3(a, b, O_NONBLOCK), Err(Errno::EINVAL));
    assert_eq!(t.dup3(9, b, 0), Err(Errno::EBADF));
    assert_eq!(t.dup3(a, -1, 0), Err(Errno::EBADF));
    assert_eq!(t.dup2(a, a), Ok(a));
    assert_eq!(t.dup2(9, 9), Err(Errno::EBADF));
    // dup2 onto an open descriptor closes it silently.
    assert_eq!(t.dup3(a, b, O_CLOEXEC), Ok(b));
    assert_eq!(t.get(b).unwrap().read_to_end().unwrap(), b"a");
    assert!(t.cloexec(b).unwrap());
    assert_eq!(t.dup2(a, 10), Ok(10));
    assert!(!t.cloexec(10).unwrap());
}

#[test]
fn duplicates_share_offset_and_status_flags() {
    let w = world();
    w.write("/f", b"0123456789");
    let t = FdTable::new();
    let fd = t.install(w.open("/f", O_RDONLY).unwrap(), false).unwrap();
    let dup = t.dup(fd).unwrap();
    t.get(fd).unwrap().read(&mut [0u8; 4]).unwrap();
    assert_eq!(t.get(dup).unwrap().offset(), 4);
    t.fcntl(dup, F_SETFL, O_NONBLOCK as u64).unwrap();
    assert_ne!(t.fcntl(fd, F_GETFL, 0).unwrap() as u32 & O_NONBLOCK, 0);
    // But not the close-on-exec flag, which is per descriptor.
    t.fcntl(fd, F_SETFD, FD_CLOEXEC as u64).unwrap();
    assert_eq!(t.fcntl(fd, F_GETFD, 0).unwrap(), FD_CLOEXEC as i64);
    assert_eq!(t.fcntl(dup, F_GETFD, 0).unwrap(), 0);
}

#[test]
fn fcntl_commands() {
    let w = world();
    w.write("/f", b"");
    let t = FdTable::new();
    let fd = t.install(w.open("/f", O_WRONLY).unwrap(), false).unwrap();
    assert_eq!(t.fcntl(fd, F_DUPFD, 10).unwrap(), 10);
    assert_eq!(t.fcntl(fd, F_DUPFD, 10).unwrap(), 11);
    assert_eq!(t.fcntl(fd, F_DUPFD_CLOEXEC, 5).unwrap(), 5);
    assert!(t.cloexec(5).unwrap());
    assert_eq!(t.fcntl(fd, F_DUPFD, 1024), Err(Errno::EINVAL));
    assert_eq!(t.fcntl(fd, F_GETFL, 0).unwrap() as u32, O_WRONLY | O_LARGEFILE);
    // Only O_APPEND and O_NONBLOCK change; the access mode does not.
    t.fcntl(fd, F_SETFL, (O_RDWR | O_APPEND | O_NONBLOCK | O_CREAT) as u64)
        .unwrap();
    assert_eq!(
        t.fcntl(fd, F_GETFL, 0).unwrap() as u32,
        O_WRONLY | O_LARGEFILE | O_APPEND | O_NONBLOCK
    );
    t.fcntl(fd, F_SETFL, 0).unwrap();
    assert_eq!(t.fcntl(fd, F_GETFL, 0).unwrap() as u32, O_WRONLY | O_LARGEFILE);
    assert_eq!(t.fcntl(fd, 9999, 0), Err(Errno::EINVAL));
}

#[test]
fn f_getpipe_sz_gives_a_pipes_capacity_and_ebadf_for_other_files() {
    let w = world();
    w.write("/f", b"");
    let t = FdTable::new();
    let (r, wr) = vfs::pipe::pipe2(0, 0, 0, vfs::Timespec::default()).unwrap();
    let (rfd, wfd) = (t.install(r, false).unwrap(), t.install(wr, false).unwrap());
    let file = t.install(w.open("/f", O_RDONLY).unwrap(), false).unwrap();
    assert_eq!(t.fcntl(rfd, F_GETPIPE_SZ, 0).unwrap(), 65536);
    assert_eq!(t.fcntl(wfd, F_GETPIPE_SZ, 0).unwrap(), 65536);
    assert_eq!(t.fcntl(file, F_GETPIPE_SZ, 0), Err(Errno::EBADF));
}

#[test]
fn exec_closes_cloexec_descriptors_and_fork_copies_the_table() {
    let w = world();
    w.write("/f", b"xyz");
    let t = FdTable::new();
    let keep = t.install(w.open("/f", O_RDONLY).unwrap(), false).unwrap();
    let gone = t.install(w.open("/f", O_RDONLY).unwrap(), true).unwrap();
    let child = t.fork();
    t.close_on_exec();
    assert!(t.get(keep).is_ok());
    assert_eq!(t.get(gone).err(), Some(Errno::EBADF));
    // The child's table is separate but shares the open files.
    assert!(child.get(gone).is_ok());
    child.get(keep).unwrap().read(&mut [0u8; 2]).unwrap();
    assert_eq!(t.get(keep).unwrap().offset(), 2);
    child.close(keep).unwrap();
    assert!(t.get(keep).is_ok());
    child.close_all();
    assert!(child.fds().is_empty());
    assert_eq!(t.fds(), vec![keep]);
}
