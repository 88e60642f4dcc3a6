//! mkdir, rmdir, unlink, rename, link, symlink, mknod, chmod, chown.

mod common;

use common::*;
use uapi::fcntl::*;
use uapi::stat::*;
use vfs::{Cred, Errno};

fn unlink(w: &World, path: &str) -> Result<(), Errno> {
    w.vfs.unlinkat(&w.root, &w.cwd(), path.as_bytes(), 0)
}

fn rmdir(w: &World, path: &str) -> Result<(), Errno> {
    w.vfs.unlinkat(&w.root, &w.cwd(), path.as_bytes(), AT_REMOVEDIR)
}

fn rename(w: &World, from: &str, to: &str) -> Result<(), Errno> {
    w.vfs
        .renameat2(&w.root, &w.cwd(), from.as_bytes(), &w.cwd(), to.as_bytes(), 0)
}

#[test]
fn mkdir_errors() {
    let w = world();
    w.mkdir("/d");
    let mk = |p: &str| w.vfs.mkdirat(&w.root, &w.cwd(), p.as_bytes(), 0o755, 0);
    assert_eq!(mk("/d"), Err(Errno::EEXIST));
    assert_eq!(mk("/d/."), Err(Errno::EEXIST));
    assert_eq!(mk("/d/.."), Err(Errno::EEXIST));
    assert_eq!(mk("/"), Err(Errno::EEXIST));
    assert_eq!(mk("/x/y"), Err(Errno::ENOENT));
    mk("/e/").unwrap();
    assert_eq!(
        w.vfs.fstatat(&w.root, &w.cwd(), b"/e", 0).unwrap().mode,
        S_IFDIR | 0o755
    );
    w.vfs.mkdirat(&w.root, &w.cwd(), b"/m", 0o7777, 0o022).unwrap();
    assert_eq!(
        w.vfs.fstatat(&w.root, &w.cwd(), b"/m", 0).unwrap().mode,
        S_IFDIR | 0o1755
    );
}

#[test]
fn rmdir_errors() {
    let w = world();
    w.mkdir("/d");
    w.write("/d/f", b"");
    assert_eq!(rmdir(&w, "/d"), Err(Errno::ENOTEMPTY));
    assert_eq!(rmdir(&w, "/d/f"), Err(Errno::ENOTDIR));
    assert_eq!(rmdir(&w, "/d/."), Err(Errno::EINVAL));
    assert_eq!(rmdir(&w, "/d/.."), Err(Errno::ENOTEMPTY));
    assert_eq!(rmdir(&w, "/"), Err(Errno::EBUSY));
    assert_eq!(rmdir(&w, "/nope"), Err(Errno::ENOENT));
    unlink(&w, "/d/f").unwrap();
    rmdir(&w, "/d/").unwrap();
    assert_eq!(w.lookup("/d").err(), Some(Errno::ENOENT));
    assert_eq!(w.vfs.unlinkat(&w.root, &w.cwd(), b"/x", 0x100), Err(Errno::EINVAL));
}

#[test]
fn unlink_errors() {
    let w = world();
    w.mkdir("/d");
    w.write("/f", b"");
    assert_eq!(unlink(&w, "/d"), Err(Errno::EISDIR));
    assert_eq!(unlink(&w, "/d/"), Err(Errno::EISDIR));
    assert_eq!(unlink(&w, "/f/"), Err(Errno::ENOTDIR));
    assert_eq!(unlink(&w, "/nope"), Err(Errno::ENOENT));
    assert_eq!(unlink(&w, "/."), Err(Errno::EISDIR));
    assert_eq!(w.vfs.unlinkat(&user(), &w.cwd(), b"/f", 0), Err(Errno::EACCES));
    // An open file outlives its name.
    let f = w.open("/f", O_RDWR).unwrap();
    unlink(&w, "/f").unwrap();
    f.write(b"still here").unwrap();
    assert_eq!(f.metadata().nlink, 0);
    assert_eq!(f.pread(&mut [0u8; 5], 0).unwrap(), 5);
    // Unlinking a symlink removes the link, not its target.
    w.write("/t", b"");
    w.symlink("/t", "/l");
    unlink(&w, "/l").unwrap();
    assert!(w.lookup("/t").is_ok());
}

#[test]
fn sticky_directories_protect_other_users_files() {
    let w = world();
    w.mkdir_mode("/tmp", 0o1777);
    let alice = Cred::new(1000, 1000);
    let bob = Cred::new(1001, 1001);
    w.vfs
        .openat(&alice, &w.cwd(), b"/tmp/a", O_CREAT | O_WRONLY, 0o666, 0)
        .unwrap();
    assert_eq!(w.vfs.unlinkat(&bob, &w.cwd(), b"/tmp/a", 0), Err(Errno::EPERM));
    assert_eq!(
        w.vfs.renameat2(&bob, &w.cwd(), b"/tmp/a", &w.cwd(), b"/tmp/b", 0),
        Err(Errno::EPERM)
    );
    w.vfs.unlinkat(&alice, &w.cwd(), b"/tmp/a", 0).unwrap();
}

#[test]
fn rename_moves_and_replaces() {
    let w = world();
    w.mkdir("/a");
    w.mkdir("/b");
    w.write("/a/f", b"1");
    w.write("/b/g", b"2");
    rename(&w, "/a/f", "/b/g").unwrap();
    assert_eq!(w.read("/b/g").unwrap(), b"1");
    assert_eq!(w.lookup("/a/f").err(), Some(Errno::ENOENT));
    // Directories move with their contents; link counts follow.
    w.mkdir("/a/sub");
    w.write("/a/sub/x", b"x");
    rename(&w, "/a/sub", "/b/sub").unwrap();
    assert_eq!(w.read("/b/sub/x").unwrap(), b"x");
    assert_eq!(w.vfs.fstatat(&w.root, &w.cwd(), b"/a", 0).unwrap().nlink, 2);
    assert_eq!(w.vfs.fstatat(&w.root, &w.cwd(), b"/b", 0).unwrap().nlink, 3);
    assert!(w.lookup("/b/sub/..").unwrap().same(&w.lookup("/b").unwrap()));
    // An empty directory may be replaced by a directory.
    w.mkdir("/a/empty");
    rename(&w, "/b/sub", "/a/empty").unwrap();
    assert_eq!(w.read("/a/empty/x").unwrap(), b"x");
    // Renaming a name onto itself, or onto a hard link of itself, is a no-op.
    rename(&w, "/b/g", "/b/g").unwrap();
    w.vfs.linkat(&w.root, &w.cwd(), b"/b/g", &w.cwd(), b"/b/h", 0).unwrap();
    rename(&w, "/b/g", "/b/h").unwrap();
    assert!(w.lookup("/b/g").is_ok());
}

#[test]
fn rename_errors() {
    let w = world();
    w.mkdir("/d");
    w.mkdir("/d/sub");
    w.mkdir("/full");
    w.write("/full/x", b"");
    w.write("/f", b"");
    assert_eq!(rename(&w, "/d", "/d/sub/inside"), Err(Errno::EINVAL));
    assert_eq!(rename(&w, "/d", "/d/inside"), Err(Errno::EINVAL));
    assert_eq!(rename(&w, "/d", "/f"), Err(Errno::ENOTDIR));
    assert_eq!(rename(&w, "/f", "/d"), Err(Errno::EISDIR));
    assert_eq!(rename(&w, "/d", "/full"), Err(Errno::ENOTEMPTY));
    assert_eq!(rename(&w, "/nope", "/x"), Err(Errno::ENOENT));
    assert_eq!(rename(&w, "/f", "/nodir/x"), Err(Errno::ENOENT));
    assert_eq!(rename(&w, "/f/", "/g"), Err(Errno::ENOTDIR));
    assert_eq!(rename(&w, "/d/.", "/x"), Err(Errno::EBUSY));
    assert_eq!(rename(&w, "/f", "/d/.."), Err(Errno::EBUSY));
    w.write("/g", b"");
    assert_eq!(
        w.vfs
            .renameat2(&w.root, &w.cwd(), b"/f", &w.cwd(), b"/g", RENAME_NOREPLACE),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        w.vfs.renameat2(&w.root, &w.cwd(), b"/f", &w.cwd(), b"/h", 8),
        Err(Errno::EINVAL)
    );
    // Across mounts: EXDEV.
    w.mkdir("/mnt");
    let fs2 = vfs::ramfs::RamFs::new(w.clock.clone());
    w.vfs.mount(fs2, &w.lookup("/mnt").unwrap()).unwrap();
    assert_eq!(rename(&w, "/f", "/mnt/f"), Err(Errno::EXDEV));
    assert_eq!(
        w.vfs.linkat(&w.root, &w.cwd(), b"/f", &w.cwd(), b"/mnt/f", 0),
        Err(Errno::EXDEV)
    );
    assert_eq!(rename(&w, "/mnt", "/mnt2"), Err(Errno::EBUSY));
}

#[test]
fn hard_links_share_an_inode() {
    let w = world();
    w.write("/f", b"data");
    w.vfs.linkat(&w.root, &w.cwd(), b"/f", &w.cwd(), b"/g", 0).unwrap();
    let m = w.vfs.fstatat(&w.root, &w.cwd(), b"/g", 0).unwrap();
    assert_eq!(m.nlink, 2);
    assert_eq!(m.ino, w.vfs.fstatat(&w.root, &w.cwd(), b"/f", 0).unwrap().ino);
    unlink(&w, "/f").unwrap();
    assert_eq!(w.read("/g").unwrap(), b"data");
    assert_eq!(w.vfs.fstatat(&w.root, &w.cwd(), b"/g", 0).unwrap().nlink, 1);
    w.mkdir("/d");
    assert_eq!(
        w.vfs.linkat(&w.root, &w.cwd(), b"/d", &w.cwd(), b"/d2", 0),
        Err(Errno::EPERM)
    );
    assert_eq!(
        w.vfs.linkat(&w.root, &w.cwd(), b"/g", &w.cwd(), b"/d", 0),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        w.vfs.linkat(&w.root, &w.cwd(), b"/g", &w.cwd(), b"/new/", 0),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        w.vfs.linkat(&w.root, &w.cwd(), b"/g", &w.cwd(), b"/x", 1),
        Err(Errno::EINVAL)
    );
    // linkat links the symlink itself unless AT_SYMLINK_FOLLOW.
    w.symlink("/g", "/l");
    w.vfs.linkat(&w.root, &w.cwd(), b"/l", &w.cwd(), b"/l2", 0).unwrap();
    assert_eq!(w.lstat_mode("/l2").unwrap() & S_IFMT, S_IFLNK);
    w.vfs
        .linkat(&w.root, &w.cwd(), b"/l", &w.cwd(), b"/g2", AT_SYMLINK_FOLLOW)
        .unwrap();
    assert_eq!(w.lstat_mode("/g2").unwrap() & S_IFMT, S_IFREG);
}

#[test]
fn symlink_and_mknod_creation_rules() {
    let w = world();
    w.write("/f", b"");
    assert_eq!(w.vfs.symlinkat(&w.root, b"x", &w.cwd(), b"/f"), Err(Errno::EEXIST));
    assert_eq!(w.vfs.symlinkat(&w.root, b"x", &w.cwd(), b"/new/"), Err(Errno::ENOENT));
    let long = vec![b'a'; 4096];
    assert_eq!(
        w.vfs.symlinkat(&w.root, &long, &w.cwd(), b"/l"),
        Err(Errno::ENAMETOOLONG)
    );
    let dev = makedev(1, 3);
    let u = user();
    w.mkdir_mode("/pub", 0o777);
    assert_eq!(
        w.vfs.mknodat(&u, &w.cwd(), b"/pub/null", S_IFCHR | 0o666, dev, 0),
        Err(Errno::EPERM)
    );
    w.vfs
        .mknodat(&u, &w.cwd(), b"/pub/fifo", S_IFIFO | 0o666, 0, 0o022)
        .unwrap();
    assert_eq!(w.lstat_mode("/pub/fifo").unwrap(), S_IFIFO | 0o644);
    w.vfs.mknodat(&u, &w.cwd(), b"/pub/reg", 0o600, 0, 0).unwrap();
    assert_eq!(w.lstat_mode("/pub/reg").unwrap(), S_IFREG | 0o600);
    assert_eq!(
        w.vfs.mknodat(&w.root, &w.cwd(), b"/x", S_IFDIR | 0o755, 0, 0),
        Err(Errno::EPERM)
    );
    assert_eq!(
        w.vfs.mknodat(&w.root, &w.cwd(), b"/x", 0o170000, 0, 0),
        Err(Errno::EINVAL)
    );
    w.vfs
        .mknodat(&w.root, &w.cwd(), b"/null", S_IFCHR | 0o666, makedev(1, 3), 0)
        .unwrap();
    let m = w.vfs.fstatat(&w.root, &w.cwd(), b"/null", 0).unwrap();
    assert_eq!((m.mode, major(m.rdev), minor(m.rdev)), (S_IFCHR | 0o666, 1, 3));
    // Opening a FIFO or socket node: ENXIO (no named pipes yet).
    assert_eq!(w.open("/pub/fifo", O_RDONLY | O_NONBLOCK).err(), Some(Errno::ENXIO));
}

#[test]
fn set_group_id_directories_pass_their_group_on() {
    let w = world();
    w.mkdir("/shared");
    w.chown("/shared", 0, 50);
    w.vfs.fchmodat(&w.root, &w.cwd(), b"/shared", 0o2777, 0).unwrap();
    let u = user();
    w.vfs
        .openat(&u, &w.cwd(), b"/shared/f", O_CREAT | O_WRONLY, 0o644, 0)
        .unwrap();
    w.vfs.mkdirat(&u, &w.cwd(), b"/shared/d", 0o755, 0).unwrap();
    let f = w.vfs.fstatat(&w.root, &w.cwd(), b"/shared/f", 0).unwrap();
    let d = w.vfs.fstatat(&w.root, &w.cwd(), b"/shared/d", 0).unwrap();
    assert_eq!((f.uid, f.gid, f.mode), (1000, 50, S_IFREG | 0o644));
    assert_eq!((d.gid, d.mode), (50, S_IFDIR | 0o2755));
}

#[test]
fn chmod_and_chown_permissions() {
    let w = world();
    w.write("/f", b"");
    let u = user();
    assert_eq!(w.vfs.fchmodat(&u, &w.cwd(), b"/f", 0o777, 0), Err(Errno::EPERM));
    w.chown("/f", 1000, 1000);
    w.vfs.fchmodat(&u, &w.cwd(), b"/f", 0o4755, 0).unwrap();
    assert_eq!(w.lstat_mode("/f").unwrap(), S_IFREG | 0o4755);
    // Not in the file's group: S_ISGID is dropped.
    w.chown("/f", 1000, 7);
    w.vfs.fchmodat(&u, &w.cwd(), b"/f", 0o2755, 0).unwrap();
    assert_eq!(w.lstat_mode("/f").unwrap(), S_IFREG | 0o755);
    assert_eq!(w.vfs.fchownat(&u, &w.cwd(), b"/f", Some(0), None, 0), Err(Errno::EPERM));
    assert_eq!(w.vfs.fchownat(&u, &w.cwd(), b"/f", None, Some(8), 0), Err(Errno::EPERM));
    w.vfs.fchownat(&u, &w.cwd(), b"/f", None, Some(1000), 0).unwrap();
    // chown clears set-user-ID.
    w.vfs.fchmodat(&w.root, &w.cwd(), b"/f", 0o4755, 0).unwrap();
    w.chown("/f", 5, 5);
    assert_eq!(w.lstat_mode("/f").unwrap(), S_IFREG | 0o755);
    w.symlink("/f", "/l");
    assert_eq!(
        w.vfs.fchmodat(&w.root, &w.cwd(), b"/l", 0o600, AT_SYMLINK_NOFOLLOW),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(w.vfs.fchmodat(&w.root, &w.cwd(), b"/l", 0o600, 1), Err(Errno::EINVAL));
}

#[test]
fn utimensat_permissions() {
    use vfs::open::TimeSpec;
    use vfs::Timespec;
    let w = world();
    w.write("/f", b"");
    w.vfs.fchmodat(&w.root, &w.cwd(), b"/f", 0o666, 0).unwrap();
    let u = user();
    let t = TimeSpec::Set(Timespec::new(5, 0));
    let now = Timespec::new(99, 0);
    assert_eq!(w.vfs.utimensat(&u, &w.cwd(), b"/f", [t, t], now, 0), Err(Errno::EPERM));
    w.vfs
        .utimensat(&u, &w.cwd(), b"/f", [TimeSpec::Now, TimeSpec::Now], now, 0)
        .unwrap();
    let m = w.vfs.fstatat(&w.root, &w.cwd(), b"/f", 0).unwrap();
    assert_eq!((m.atime, m.mtime), (now, now));
    w.vfs
        .utimensat(&w.root, &w.cwd(), b"/f", [TimeSpec::Omit, t], now, 0)
        .unwrap();
    let m = w.vfs.fstatat(&w.root, &w.cwd(), b"/f", 0).unwrap();
    assert_eq!((m.atime, m.mtime), (now, Timespec::new(5, 0)));
}
