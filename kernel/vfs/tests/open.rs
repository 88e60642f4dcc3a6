//! openat flag semantics, read/write/lseek, getdents64, fstat.

mod common;

use common::*;
use uapi::fcntl::*;
use uapi::stat::*;
use vfs::Errno;

#[test]
fn o_creat_applies_umask_and_owner() {
    let w = world();
    w.mkdir_mode("/tmp", 0o777);
    let u = user();
    let f = w
        .vfs
        .openat(&u, &w.cwd(), b"/tmp/f", O_CREAT | O_WRONLY, 0o666, 0o027)
        .unwrap();
    let m = f.metadata();
    assert_eq!(m.mode, S_IFREG | 0o640);
    assert_eq!((m.uid, m.gid, m.nlink, m.size), (1000, 1000, 1, 0));
    // A file created read-only can still be written through this open.
    let g = w
        .vfs
        .openat(&u, &w.cwd(), b"/tmp/ro", O_CREAT | O_WRONLY, 0o444, 0)
        .unwrap();
    assert_eq!(g.write(b"ok").unwrap(), 2);
    assert_eq!(
        w.vfs.openat(&u, &w.cwd(), b"/tmp/ro", O_WRONLY, 0, 0).err(),
        Some(Errno::EACCES)
    );
}

#[test]
fn o_excl_and_existing_files() {
    let w = world();
    w.write("/f", b"abc");
    assert_eq!(w.open("/f", O_CREAT | O_EXCL | O_WRONLY).err(), Some(Errno::EEXIST));
    // Without O_EXCL, O_CREAT opens the existing file untouched.
    let f = w.open("/f", O_CREAT | O_RDWR).unwrap();
    assert_eq!(f.metadata().size, 3);
    // O_CREAT|O_EXCL never follows a final symlink, even a dangling one.
    w.symlink("/nowhere", "/dangling");
    assert_eq!(
        w.open("/dangling", O_CREAT | O_EXCL | O_WRONLY).err(),
        Some(Errno::EEXIST)
    );
    // Plain O_CREAT through a dangling link creates its target.
    w.open("/dangling", O_CREAT | O_WRONLY).unwrap();
    assert!(w.lookup("/nowhere").is_ok());
}

#[test]
fn o_trunc_empties_a_regular_file() {
    let w = world();
    w.write("/f", b"hello");
    w.open("/f", O_WRONLY | O_TRUNC).unwrap();
    assert_eq!(w.read("/f").unwrap(), b"");
    // O_TRUNC needs write permission even with O_RDONLY.
    w.write("/g", b"keep");
    w.vfs.fchmodat(&w.root, &w.cwd(), b"/g", 0o444, 0).unwrap();
    w.chown("/g", 1000, 1000);
    assert_eq!(w.open_as(&user(), "/g", O_RDONLY | O_TRUNC).err(), Some(Errno::EACCES));
    assert_eq!(w.read("/g").unwrap(), b"keep");
}

#[test]
fn directories_open_read_only() {
    let w = world();
    w.mkdir("/d");
    assert!(w.open("/d", O_RDONLY).is_ok());
    assert_eq!(w.open("/d", O_WRONLY).err(), Some(Errno::EISDIR));
    assert_eq!(w.open("/d", O_RDWR).err(), Some(Errno::EISDIR));
    assert_eq!(w.open("/d", O_RDONLY | O_TRUNC).err(), Some(Errno::EISDIR));
    assert_eq!(w.open("/d", O_CREAT | O_RDONLY).err(), Some(Errno::EISDIR));
    assert_eq!(w.open("/d", O_CREAT | O_EXCL | O_RDONLY).err(), Some(Errno::EEXIST));
    assert_eq!(w.open(".", O_CREAT | O_RDONLY).err(), Some(Errno::EISDIR));
    let d = w.open("/d", O_RDONLY).unwrap();
    assert_eq!(d.read(&mut [0u8; 4]), Err(Errno::EISDIR));
}

#[test]
fn o_directory_and_o_creat_with_trailing_slash() {
    let w = world();
    w.write("/f", b"");
    assert_eq!(w.open("/f", O_RDONLY | O_DIRECTORY).err(), Some(Errno::ENOTDIR));
    assert_eq!(w.open("/new/", O_CREAT | O_WRONLY).err(), Some(Errno::EISDIR));
    assert_eq!(w.open("/f/", O_CREAT | O_WRONLY).err(), Some(Errno::EISDIR));
    assert_eq!(
        w.open("/new", O_CREAT | O_DIRECTORY | O_RDONLY).err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(w.open("/missing", O_RDONLY).err(), Some(Errno::ENOENT));
    assert_eq!(w.open("/missing/x", O_CREAT | O_WRONLY).err(), Some(Errno::ENOENT));
}

#[test]
fn o_nofollow_and_o_path() {
    let w = world();
    w.write("/f", b"x");
    w.symlink("/f", "/l");
    assert_eq!(w.open("/l", O_RDONLY | O_NOFOLLOW).err(), Some(Errno::ELOOP));
    let p = w.open("/l", O_PATH | O_NOFOLLOW).unwrap();
    assert!(p.metadata().is_symlink());
    assert_eq!(p.read(&mut [0u8; 1]), Err(Errno::EBADF));
    assert_eq!(p.write(b"x"), Err(Errno::EBADF));
    assert_eq!(p.flags(), O_PATH | O_NOFOLLOW);
    // A symlink in the middle is followed despite O_NOFOLLOW.
    w.mkdir("/d");
    w.write("/d/g", b"");
    w.symlink("/d", "/ld");
    assert!(w.open("/ld/g", O_RDONLY | O_NOFOLLOW).is_ok());
}

#[test]
fn access_modes_are_checked() {
    let w = world();
    w.write("/f", b"secret");
    w.vfs.fchmodat(&w.root, &w.cwd(), b"/f", 0o600, 0).unwrap();
    let u = user();
    assert_eq!(w.open_as(&u, "/f", O_RDONLY).err(), Some(Errno::EACCES));
    assert_eq!(w.open_as(&u, "/f", O_WRONLY).err(), Some(Errno::EACCES));
    w.chown("/f", 1000, 1000);
    assert!(w.open_as(&u, "/f", O_RDWR).is_ok());
    w.vfs.fchmodat(&w.root, &w.cwd(), b"/f", 0o400, 0).unwrap();
    assert!(w.open_as(&u, "/f", O_RDONLY).is_ok());
    assert_eq!(w.open_as(&u, "/f", O_RDWR).err(), Some(Errno::EACCES));
    // Creating needs write permission on the directory.
    w.mkdir("/ro");
    assert_eq!(w.open_as(&u, "/ro/new", O_CREAT | O_WRONLY).err(), Some(Errno::EACCES));
    assert_eq!(w.vfs.mkdirat(&u, &w.cwd(), b"/ro/d", 0o755, 0), Err(Errno::EACCES));
    // EEXIST wins over EACCES for mkdir, as on Linux.
    w.mkdir("/ro/there");
    assert_eq!(w.vfs.mkdirat(&u, &w.cwd(), b"/ro/there", 0o755, 0), Err(Errno::EEXIST));
}

#[test]
fn o_noatime_needs_ownership() {
    let w = world();
    w.write("/f", b"");
    w.vfs.fchmodat(&w.root, &w.cwd(), b"/f", 0o644, 0).unwrap();
    assert_eq!(w.open_as(&user(), "/f", O_RDONLY | O_NOATIME).err(), Some(Errno::EPERM));
    assert!(w.open("/f", O_RDONLY | O_NOATIME).is_ok());
}

#[test]
fn read_write_and_offsets() {
    let w = world();
    let f = w.open("/f", O_RDWR | O_CREAT).unwrap();
    assert_eq!(f.write(b"hello world").unwrap(), 11);
    assert_eq!(f.offset(), 11);
    assert_eq!(f.read(&mut [0u8; 4]).unwrap(), 0);
    assert_eq!(f.lseek(0, SEEK_SET).unwrap(), 0);
    let mut buf = [0u8; 5];
    assert_eq!(f.read(&mut buf).unwrap(), 5);
    assert_eq!(&buf, b"hello");
    assert_eq!(f.lseek(1, SEEK_CUR).unwrap(), 6);
    assert_eq!(f.read(&mut buf).unwrap(), 5);
    assert_eq!(&buf, b"world");
    assert_eq!(f.lseek(-5, SEEK_END).unwrap(), 6);
    assert_eq!(f.lseek(-7, SEEK_CUR), Err(Errno::EINVAL));
    assert_eq!(f.lseek(-12, SEEK_END), Err(Errno::EINVAL));
    assert_eq!(f.lseek(0, 7), Err(Errno::EINVAL));
    assert_eq!(f.offset(), 6);
    // Seeking past the end and writing leaves a hole of zeros.
    assert_eq!(f.lseek(20, SEEK_SET).unwrap(), 20);
    f.write(b"!").unwrap();
    assert_eq!(f.metadata().size, 21);
    let mut all = [0xffu8; 32];
    assert_eq!(f.pread(&mut all, 0).unwrap(), 21);
    assert_eq!(&all[..21], b"hello world\0\0\0\0\0\0\0\0\0!");
    assert_eq!(f.pread(&mut all, -1), Err(Errno::EINVAL));
    assert_eq!(f.pwrite(b"H", 0).unwrap(), 1);
    assert_eq!(f.offset(), 21);
    assert_eq!(f.lseek(0, SEEK_DATA).unwrap(), 0);
    assert_eq!(f.lseek(3, SEEK_HOLE).unwrap(), 21);
    assert_eq!(f.lseek(21, SEEK_DATA), Err(Errno::ENXIO));
}

#[test]
fn access_mode_limits_read_and_write() {
    let w = world();
    w.write("/f", b"abc");
    let r = w.open("/f", O_RDONLY).unwrap();
    assert_eq!(r.write(b"x"), Err(Errno::EBADF));
    assert_eq!(r.truncate(0), Err(Errno::EINVAL));
    let wr = w.open("/f", O_WRONLY).unwrap();
    assert_eq!(wr.read(&mut [0u8; 1]), Err(Errno::EBADF));
    assert_eq!(wr.truncate(-1), Err(Errno::EINVAL));
    wr.truncate(1).unwrap();
    assert_eq!(w.read("/f").unwrap(), b"a");
}

#[test]
fn o_append_writes_at_the_end() {
    let w = world();
    w.write("/log", b"one\n");
    let a = w.open("/log", O_WRONLY | O_APPEND).unwrap();
    let b = w.open("/log", O_WRONLY).unwrap();
    b.write(b"XX").unwrap();
    a.lseek(0, SEEK_SET).unwrap();
    a.write(b"two\n").unwrap();
    assert_eq!(a.offset(), 8);
    assert_eq!(w.read("/log").unwrap(), b"XXe\ntwo\n");
    // pwrite on an O_APPEND file appends too, as on Linux.
    a.pwrite(b"3\n", 0).unwrap();
    assert_eq!(w.read("/log").unwrap(), b"XXe\ntwo\n3\n");
}

#[test]
fn status_flags_as_linux_reports_them() {
    let w = world();
    w.write("/f", b"");
    let f = w.open("/f", O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC).unwrap();
    assert_eq!(f.flags(), O_RDWR | O_APPEND | O_LARGEFILE);
    f.set_status_flags(O_NONBLOCK | O_RDONLY | O_SYNC);
    assert_eq!(f.flags(), O_RDWR | O_NONBLOCK | O_LARGEFILE);
}

#[test]
fn fstat_reports_type_size_links_and_times() {
    let w = world();
    w.write("/f", &[1u8; 5000]);
    let m = w.open("/f", O_RDONLY).unwrap().metadata();
    assert_eq!(m.mode & S_IFMT, S_IFREG);
    assert_eq!(m.size, 5000);
    assert_eq!(m.blocks, 16);
    assert_eq!(m.blksize, 4096);
    let st = m.to_stat();
    assert_eq!(st.st_size, 5000);
    assert!(st.st_mtime >= 1000);
    w.mkdir("/d");
    w.mkdir("/d/e");
    let dm = w.vfs.fstatat(&w.root, &w.cwd(), b"/d", 0).unwrap();
    assert_eq!((dm.mode & S_IFMT, dm.nlink), (S_IFDIR, 3));
    w.symlink("/f", "/l");
    let lm = w.vfs.fstatat(&w.root, &w.cwd(), b"/l", AT_SYMLINK_NOFOLLOW).unwrap();
    assert_eq!((lm.mode, lm.size), (S_IFLNK | 0o777, 2));
    assert_eq!(w.vfs.fstatat(&w.root, &w.cwd(), b"/l", 0).unwrap().ino, m.ino);
    assert_eq!(w.vfs.fstatat(&w.root, &w.cwd(), b"/l", 0x4).err(), Some(Errno::EINVAL));
    // AT_EMPTY_PATH stats the starting point.
    let d = w.lookup("/d").unwrap();
    assert_eq!(w.vfs.fstatat(&w.root, &d, b"", AT_EMPTY_PATH).unwrap().ino, dm.ino);
    assert_eq!(w.vfs.fstatat(&w.root, &d, b"", 0).err(), Some(Errno::ENOENT));
}

#[test]
fn writes_update_mtime() {
    let w = world();
    w.write("/f", b"");
    let before = w.vfs.fstatat(&w.root, &w.cwd(), b"/f", 0).unwrap().mtime;
    w.open("/f", O_WRONLY).unwrap().write(b"x").unwrap();
    let after = w.vfs.fstatat(&w.root, &w.cwd(), b"/f", 0).unwrap().mtime;
    assert!(after > before);
}

#[test]
fn getdents64_gives_whole_records() {
    let w = world();
    w.mkdir("/d");
    for i in 0..50 {
        w.write(&format!("/d/file{i:02}"), b"");
    }
    w.mkdir("/d/sub");
    let names = list(&w, "/d");
    assert_eq!(names.len(), 51);
    assert!(names.contains(&"sub".to_string()));
    let f = w.open("/d", O_RDONLY).unwrap();
    // Too small for one record: EINVAL ("." needs 24 bytes).
    assert_eq!(f.getdents64(&mut [0u8; 23]), Err(Errno::EINVAL));
    let mut buf = [0u8; 24];
    assert_eq!(f.getdents64(&mut buf).unwrap(), 24);
    assert_eq!(&buf[19..21], b".\0");
    assert_eq!(buf[18], DT_DIR);
    // "file00" needs 32 bytes: a 40-byte buffer holds "..", not both.
    let mut buf = [0u8; 40];
    assert_eq!(f.getdents64(&mut buf).unwrap(), 24);
    assert_eq!(&buf[19..22], b"..\0");
    let mut buf = [0u8; 32];
    assert_eq!(f.getdents64(&mut buf).unwrap(), 32);
    assert_eq!(&buf[19..26], b"file00\0");
    assert_eq!(buf[18], DT_REG);
    // d_off resumes after lseek back to it.
    let d_off = i64::from_le_bytes(buf[8..16].try_into().unwrap());
    f.lseek(0, SEEK_SET).unwrap();
    f.lseek(d_off, SEEK_SET).unwrap();
    let mut buf = [0u8; 32];
    f.getdents64(&mut buf).unwrap();
    assert_eq!(&buf[19..26], b"file01\0");
    assert_eq!(f.lseek(0, SEEK_END), Err(Errno::EINVAL));
    // Not a directory.
    w.write("/f", b"");
    assert_eq!(
        w.open("/f", O_RDONLY).unwrap().getdents64(&mut [0u8; 64]),
        Err(Errno::ENOTDIR)
    );
}

#[test]
fn getdents64_while_removing_sees_every_entry_once() {
    let w = world();
    w.mkdir("/d");
    for i in 0..20 {
        w.write(&format!("/d/{i}"), b"");
    }
    let f = w.open("/d", O_RDONLY).unwrap();
    let mut seen = 0;
    let mut buf = [0u8; 64];
    loop {
        let n = f.getdents64(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off < n {
            let reclen = u16::from_le_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let name = &buf[off + 19..off + reclen];
            let name = std::str::from_utf8(&name[..name.iter().position(|&b| b == 0).unwrap()]).unwrap();
            if name != "." && name != ".." {
                w.vfs
                    .unlinkat(&w.root, &w.cwd(), format!("/d/{name}").as_bytes(), 0)
                    .unwrap();
                seen += 1;
            }
            off += reclen;
        }
    }
    assert_eq!(seen, 20);
    w.vfs.unlinkat(&w.root, &w.cwd(), b"/d", AT_REMOVEDIR).unwrap();
}

#[test]
fn truncate_by_path() {
    let w = world();
    w.write("/f", b"abcdef");
    w.vfs.truncate(&w.root, &w.cwd(), b"/f", 2).unwrap();
    assert_eq!(w.read("/f").unwrap(), b"ab");
    assert_eq!(w.vfs.truncate(&w.root, &w.cwd(), b"/f", -1), Err(Errno::EINVAL));
    w.mkdir("/d");
    assert_eq!(w.vfs.truncate(&w.root, &w.cwd(), b"/d", 0), Err(Errno::EISDIR));
    assert_eq!(w.vfs.truncate(&user(), &w.cwd(), b"/f", 0), Err(Errno::EACCES));
}

#[test]
fn faccessat_checks_like_access() {
    let w = world();
    w.write("/f", b"");
    w.vfs.fchmodat(&w.root, &w.cwd(), b"/f", 0o644, 0).unwrap();
    let u = user();
    assert!(w.vfs.faccessat(&u, &w.cwd(), b"/f", R_OK, 0).is_ok());
    assert_eq!(w.vfs.faccessat(&u, &w.cwd(), b"/f", W_OK, 0), Err(Errno::EACCES));
    assert_eq!(w.vfs.faccessat(&w.root, &w.cwd(), b"/f", X_OK, 0), Err(Errno::EACCES));
    assert!(w.vfs.faccessat(&u, &w.cwd(), b"/f", F_OK, 0).is_ok());
    assert_eq!(w.vfs.faccessat(&u, &w.cwd(), b"/f", 8, 0), Err(Errno::EINVAL));
    assert_eq!(w.vfs.faccessat(&u, &w.cwd(), b"/nope", F_OK, 0), Err(Errno::ENOENT));
}

#[test]
fn openat_records_the_name_the_file_was_reached_by() {
    let w = world();
    w.mkdir_mode("/d", 0o755);
    w.write("/d/f", b"x");
    w.symlink("/d/f", "/l");
    // Relative, through "..", and through a symlink: the walk's end names it.
    let f = w.vfs.openat(&w.root, &w.cwd(), b"d/../d/f", O_RDONLY, 0, 0).unwrap();
    assert_eq!(f.name().as_deref(), Some(&b"/d/f"[..]));
    assert_eq!(w.open("/l", O_RDONLY).unwrap().name().as_deref(), Some(&b"/d/f"[..]));
    assert_eq!(
        w.open("/l", O_PATH | O_NOFOLLOW).unwrap().name().as_deref(),
        Some(&b"/l"[..])
    );
    // A directory has no recorded name: getcwd finds it.
    assert_eq!(w.open("/d", O_RDONLY).unwrap().name(), None);
}
