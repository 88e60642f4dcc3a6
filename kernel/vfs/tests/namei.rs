//! Path lookup: Linux namei rules and their errno cases.

mod common;

use std::sync::Arc;

use common::*;
use uapi::fcntl::*;
use uapi::stat::*;
use vfs::ramfs::RamFs;
use vfs::{Errno, FileSystem};

#[test]
fn absolute_and_relative_lookups_reach_the_same_inode() {
    let w = world();
    w.mkdir("/a");
    w.mkdir("/a/b");
    w.write("/a/b/f", b"x");
    let a = w.lookup("/a").unwrap();
    let rel = w.vfs.lookup(&w.root, &a, b"b/f", true).unwrap();
    let abs = w.lookup("/a/b/f").unwrap();
    assert!(rel.same(&abs));
    // An absolute path ignores the starting directory.
    let again = w.vfs.lookup(&w.root, &a, b"/a/b/f", true).unwrap();
    assert!(again.same(&abs));
}

#[test]
fn dot_dotdot_and_slashes() {
    let w = world();
    w.mkdir("/a");
    w.mkdir("/a/b");
    let a = w.lookup("/a").unwrap();
    assert!(w.lookup("/a/b/..").unwrap().same(&a));
    assert!(w.lookup("/a/./b/../.").unwrap().same(&a));
    assert!(w.lookup("//a///b//..//").unwrap().same(&a));
    assert!(w.lookup("/..").unwrap().same(&w.vfs.root()));
    assert!(w.lookup("/../../..").unwrap().same(&w.vfs.root()));
    assert!(w.lookup("/../a").unwrap().same(&a));
    assert!(w.lookup("/").unwrap().same(&w.vfs.root()));
}

#[test]
fn empty_path_is_enoent() {
    let w = world();
    assert_eq!(w.lookup("").err(), Some(Errno::ENOENT));
    assert_eq!(w.open("", O_RDONLY).err(), Some(Errno::ENOENT));
    assert_eq!(w.vfs.mkdirat(&w.root, &w.cwd(), b"", 0o755, 0), Err(Errno::ENOENT));
}

#[test]
fn component_longer_than_name_max_is_enametoolong() {
    let w = world();
    let long = "x".repeat(256);
    assert_eq!(w.lookup(&format!("/{long}")).err(), Some(Errno::ENAMETOOLONG));
    assert_eq!(w.lookup(&format!("/{long}/y")).err(), Some(Errno::ENAMETOOLONG));
    assert_eq!(
        w.open(&format!("/{long}"), O_CREAT | O_WRONLY).err(),
        Some(Errno::ENAMETOOLONG)
    );
    // 255 is allowed.
    let ok = "x".repeat(255);
    assert_eq!(w.lookup(&format!("/{ok}")).err(), Some(Errno::ENOENT));
    w.write(&format!("/{ok}"), b"");
    assert!(w.lookup(&format!("/{ok}")).is_ok());
}

#[test]
fn path_of_path_max_bytes_is_enametoolong() {
    let w = world();
    w.mkdir("/d");
    // 4095 bytes is the longest path.
    let mut p = String::from("/d");
    while p.len() < 4093 {
        p.push_str("/.");
    }
    assert_eq!(p.len(), 4094);
    p.push('/');
    assert_eq!(p.len(), 4095);
    assert!(w.lookup(&p).is_ok());
    p.push('.');
    assert_eq!(p.len(), 4096);
    assert_eq!(w.lookup(&p).err(), Some(Errno::ENAMETOOLONG));
}

#[test]
fn non_directory_in_the_middle_is_enotdir() {
    let w = world();
    w.write("/f", b"data");
    assert_eq!(w.lookup("/f/x").err(), Some(Errno::ENOTDIR));
    assert_eq!(w.lookup("/f/.").err(), Some(Errno::ENOTDIR));
    assert_eq!(w.lookup("/f/..").err(), Some(Errno::ENOTDIR));
    assert_eq!(w.vfs.mkdirat(&w.root, &w.cwd(), b"/f/d", 0o755, 0), Err(Errno::ENOTDIR));
    // A relative lookup from a non-directory start.
    let f = w.lookup("/f").unwrap();
    assert_eq!(w.vfs.lookup(&w.root, &f, b"x", true).err(), Some(Errno::ENOTDIR));
}

#[test]
fn trailing_slash_requires_a_directory() {
    let w = world();
    w.write("/f", b"");
    w.mkdir("/d");
    assert_eq!(w.lookup("/f/").err(), Some(Errno::ENOTDIR));
    assert!(w.lookup("/d/").is_ok());
    assert_eq!(w.open("/f/", O_RDONLY).err(), Some(Errno::ENOTDIR));
    // A trailing slash follows a final symlink even without follow.
    w.symlink("/d", "/ld");
    w.symlink("/f", "/lf");
    let d = w.lookup("/d").unwrap();
    assert!(w.vfs.lookup(&w.root, &w.cwd(), b"/ld/", false).unwrap().same(&d));
    assert_eq!(
        w.vfs.lookup(&w.root, &w.cwd(), b"/lf/", false).err(),
        Some(Errno::ENOTDIR)
    );
    assert_eq!(w.lstat_mode("/ld").unwrap() & S_IFMT, S_IFLNK);
    assert_eq!(w.lstat_mode("/ld/").unwrap() & S_IFMT, S_IFDIR);
}

#[test]
fn symlinks_in_the_middle_are_always_followed() {
    let w = world();
    w.mkdir("/real");
    w.mkdir("/real/sub");
    w.write("/real/sub/f", b"hi");
    w.symlink("/real", "/abs");
    w.symlink("real/sub", "/rel");
    w.mkdir("/x");
    w.symlink("../real", "/x/up");
    assert_eq!(w.read("/abs/sub/f").unwrap(), b"hi");
    assert_eq!(w.read("/rel/f").unwrap(), b"hi");
    assert_eq!(w.read("/x/up/sub/f").unwrap(), b"hi");
    // Intermediate even with nofollow for the last component.
    let p = w.vfs.lookup(&w.root, &w.cwd(), b"/abs/sub", false).unwrap();
    assert!(p.is_dir());
    // A link to a file in the middle.
    w.symlink("/real/sub/f", "/lf");
    assert_eq!(w.lookup("/lf/x").err(), Some(Errno::ENOTDIR));
}

#[test]
fn final_symlink_follow_and_nofollow() {
    let w = world();
    w.write("/f", b"");
    w.symlink("f", "/l");
    let target = w.lookup("/f").unwrap();
    assert!(w.lookup("/l").unwrap().same(&target));
    let link = w.vfs.lookup(&w.root, &w.cwd(), b"/l", false).unwrap();
    assert!(link.metadata().is_symlink());
    assert_eq!(w.vfs.readlinkat(&w.root, &w.cwd(), b"/l").unwrap(), b"f");
    assert_eq!(w.vfs.readlinkat(&w.root, &w.cwd(), b"/f"), Err(Errno::EINVAL));
}

#[test]
fn dangling_and_empty_symlinks() {
    let w = world();
    w.symlink("/nowhere", "/dangling");
    assert_eq!(w.lookup("/dangling").err(), Some(Errno::ENOENT));
    assert!(w.vfs.lookup(&w.root, &w.cwd(), b"/dangling", false).is_ok());
    assert_eq!(w.vfs.symlinkat(&w.root, b"", &w.cwd(), b"/empty"), Err(Errno::ENOENT));
}

#[test]
fn symlink_loops_are_eloop() {
    let w = world();
    w.symlink("/b", "/a");
    w.symlink("/a", "/b");
    w.symlink("self", "/self");
    assert_eq!(w.lookup("/a").err(), Some(Errno::ELOOP));
    assert_eq!(w.lookup("/a/x").err(), Some(Errno::ELOOP));
    assert_eq!(w.lookup("/self").err(), Some(Errno::ELOOP));
    assert_eq!(w.open("/self", O_RDONLY).err(), Some(Errno::ELOOP));
    assert_eq!(w.open("/self", O_CREAT | O_WRONLY).err(), Some(Errno::ELOOP));
    // Not following the last one: the link itself.
    assert!(w.vfs.lookup(&w.root, &w.cwd(), b"/self", false).is_ok());
}

#[test]
fn forty_links_are_followed_and_the_41st_is_eloop() {
    let w = world();
    w.write("/target", b"end");
    // l0 -> target, l1 -> l0, ..., l40 -> l39.
    w.symlink("target", "/l0");
    for i in 1..=40 {
        w.symlink(&format!("l{}", i - 1), &format!("/l{i}"));
    }
    assert_eq!(w.read("/l39").unwrap(), b"end");
    assert_eq!(w.read("/l40").err(), Some(Errno::ELOOP));
    // The count is per lookup, across nested and sequential links.
    w.mkdir("/d");
    w.symlink("/l38", "/d/x");
    assert_eq!(w.read("/d/x").unwrap(), b"end");
    w.symlink("/l39", "/d/y");
    assert_eq!(w.read("/d/y").err(), Some(Errno::ELOOP));
    assert_eq!(w.read("/l30").unwrap(), b"end");
}

#[test]
fn deeply_nested_links_in_the_middle_use_no_recursion() {
    let w = world();
    w.mkdir("/d0");
    w.write("/d0/f", b"ok");
    for i in 1..=39 {
        w.symlink(&format!("/d{}/", i - 1), &format!("/d{i}"));
    }
    assert_eq!(w.read("/d39/f").unwrap(), b"ok");
    w.symlink("/d39/", "/d40");
    assert_eq!(w.read("/d40/f").unwrap(), b"ok");
    w.symlink("/d40/", "/d41");
    assert_eq!(w.read("/d41/f").err(), Some(Errno::ELOOP));
}

#[test]
fn search_permission_is_needed_on_every_directory() {
    let w = world();
    w.mkdir("/pub");
    w.mkdir_mode("/secret", 0o700);
    w.mkdir("/secret/inner");
    w.write("/secret/inner/f", b"");
    w.mkdir_mode("/pub/readonly", 0o744);
    w.write("/pub/readonly/g", b"");
    let u = user();
    assert_eq!(w.lookup_as(&u, "/secret/inner/f").err(), Some(Errno::EACCES));
    assert_eq!(w.lookup_as(&u, "/secret/.").err(), Some(Errno::EACCES));
    assert_eq!(w.lookup_as(&u, "/secret/nonexistent").err(), Some(Errno::EACCES));
    // The directory itself can still be looked up (and stat'ed).
    assert!(w.lookup_as(&u, "/secret").is_ok());
    assert_eq!(w.lookup_as(&u, "/pub/readonly/g").err(), Some(Errno::EACCES));
    assert!(w.lookup_as(&w.root, "/secret/inner/f").is_ok());
    assert_eq!(w.vfs.lookup_dir(&u, &w.cwd(), b"/secret").err(), Some(Errno::EACCES));
    assert!(w.vfs.lookup_dir(&u, &w.cwd(), b"/pub").is_ok());
    w.write("/pub/file", b"");
    assert_eq!(w.vfs.lookup_dir(&u, &w.cwd(), b"/pub/file").err(), Some(Errno::ENOTDIR));
}

#[test]
fn mounts_cover_directories_and_dotdot_climbs_out() {
    let w = world();
    w.mkdir("/mnt");
    w.write("/mnt/hidden", b"");
    let fs2 = RamFs::new(w.clock.clone());
    fs2.root()
        .create(b"inner", vfs::NodeKind::Directory, 0o755, 0, 0)
        .unwrap();
    let mnt = w.lookup("/mnt").unwrap();
    w.vfs.mount(fs2.clone(), &mnt).unwrap();
    assert_eq!(w.lookup("/mnt/hidden").err(), Some(Errno::ENOENT));
    let inner = w.lookup("/mnt/inner").unwrap();
    assert_eq!(inner.metadata().dev, fs2.dev());
    assert!(w
        .vfs
        .lookup(&w.root, &inner, b"../..", true)
        .unwrap()
        .same(&w.vfs.root()));
    assert!(w.lookup("/mnt/..").unwrap().same(&w.vfs.root()));
    assert!(w.lookup("/mnt/inner/../../mnt/inner").unwrap().same(&inner));
    assert_eq!(w.getcwd(&inner), "/mnt/inner");
    assert_eq!(w.getcwd(&w.lookup("/mnt").unwrap()), "/mnt");
    // The mount point cannot be removed; the mount is busy while used.
    assert_eq!(
        w.vfs.unlinkat(&w.root, &w.cwd(), b"/mnt", AT_REMOVEDIR),
        Err(Errno::EBUSY)
    );
    let mroot = w.lookup("/mnt").unwrap();
    assert_eq!(w.vfs.umount(&mroot), Err(Errno::EBUSY));
    drop(inner);
    w.vfs.umount(&mroot).unwrap();
    drop(mroot);
    assert!(w.lookup("/mnt/hidden").is_ok());
    assert_eq!(w.vfs.umount(&w.lookup("/mnt").unwrap()), Err(Errno::EINVAL));
    assert_eq!(w.vfs.umount(&w.vfs.root()), Err(Errno::EINVAL));
}

#[test]
fn a_mount_on_a_file_is_enotdir() {
    let w = world();
    w.write("/f", b"");
    let f = w.lookup("/f").unwrap();
    assert_eq!(w.vfs.mount(RamFs::new(w.clock.clone()), &f).err(), Some(Errno::ENOTDIR));
}

#[test]
fn nested_mounts_and_bind_mounts() {
    let w = world();
    w.mkdir("/sys");
    let sysfs = RamFs::new(w.clock.clone());
    w.vfs.mount(sysfs, &w.lookup("/sys").unwrap()).unwrap();
    w.mkdir("/sys/kernel");
    w.mkdir("/sys/kernel/tracing");
    let tracefs: Arc<RamFs> = RamFs::new(w.clock.clone());
    w.vfs.mount(tracefs, &w.lookup("/sys/kernel/tracing").unwrap()).unwrap();
    w.write("/sys/kernel/tracing/trace", b"# tracer: nop\n");
    w.mkdir("/tracing");
    let src = w.lookup("/sys/kernel/tracing").unwrap();
    w.vfs.bind_mount(&src, &w.lookup("/tracing").unwrap()).unwrap();
    assert_eq!(w.read("/tracing/trace").unwrap(), b"# tracer: nop\n");
    let t = w.lookup("/tracing").unwrap();
    assert_eq!(w.getcwd(&t), "/tracing");
    assert_eq!(w.getcwd(&src), "/sys/kernel/tracing");
    assert!(w
        .lookup("/sys/kernel/tracing/../..")
        .unwrap()
        .same(&w.lookup("/sys").unwrap()));
    assert!(w.lookup("/tracing/..").unwrap().same(&w.vfs.root()));
    // A mount point under a mount can't be unmounted while mounts sit on it.
    drop((t, src));
    assert_eq!(w.vfs.umount(&w.lookup("/sys").unwrap()), Err(Errno::EBUSY));
    assert_eq!(w.vfs.mounts().len(), 4);
}

#[test]
fn getcwd_names_the_directory_and_fails_once_it_is_removed() {
    let w = world();
    assert_eq!(w.getcwd(&w.vfs.root()), "/");
    w.mkdir("/a");
    w.mkdir("/a/b");
    let b = w.lookup("/a/b").unwrap();
    assert_eq!(w.getcwd(&b), "/a/b");
    w.vfs.renameat2(&w.root, &w.cwd(), b"/a", &w.cwd(), b"/z", 0).unwrap();
    assert_eq!(w.getcwd(&b), "/z/b");
    w.vfs.unlinkat(&w.root, &w.cwd(), b"/z/b", AT_REMOVEDIR).unwrap();
    assert_eq!(w.vfs.getcwd(&b), Err(Errno::ENOENT));
    // Nothing can be created in a removed directory; `..` still works.
    assert_eq!(w.vfs.mkdirat(&w.root, &b, b"new", 0o755, 0), Err(Errno::ENOENT));
    assert_eq!(
        w.vfs.openat(&w.root, &b, b"f", O_CREAT | O_WRONLY, 0o644, 0).err(),
        Some(Errno::ENOENT)
    );
    let f = w.vfs.openat(&w.root, &b, b".", O_RDONLY, 0, 0).unwrap();
    assert_eq!(f.getdents64(&mut [0u8; 64]), Err(Errno::ENOENT));
}

#[test]
fn path_at_uses_the_directory_fd_only_for_relative_paths() {
    let w = world();
    w.mkdir("/d");
    w.write("/f", b"");
    let fds = vfs::FdTable::new();
    let dfd = fds.install(w.open("/d", O_RDONLY).unwrap(), false).unwrap();
    let ffd = fds.install(w.open("/f", O_RDONLY).unwrap(), false).unwrap();
    let cwd = w.cwd();
    assert!(fds
        .path_at(dfd, &cwd, b"x", false)
        .unwrap()
        .same(&w.lookup("/d").unwrap()));
    assert!(fds.path_at(AT_FDCWD, &cwd, b"x", false).unwrap().same(&cwd));
    assert_eq!(fds.path_at(ffd, &cwd, b"x", false).err(), Some(Errno::ENOTDIR));
    assert_eq!(fds.path_at(99, &cwd, b"x", false).err(), Some(Errno::EBADF));
    // Absolute paths ignore even a bad dirfd.
    assert!(fds.path_at(99, &cwd, b"/x", false).is_ok());
    assert!(fds.path_at(ffd, &cwd, b"", true).is_ok());
}

#[test]
fn d_name_is_the_name_a_directory_is_held_under_and_slash_for_mount_roots() {
    let w = world();
    assert_eq!(w.vfs.root().d_name(), b"/");
    w.mkdir("/a");
    w.mkdir("/a/b");
    let b = w.lookup("/a/b").unwrap();
    assert_eq!(b.d_name(), b"b");
    // Reached through `..` or a rename, it keeps the name it is held under.
    assert_eq!(w.lookup("/a/b/..").unwrap().d_name(), b"a");
    w.vfs
        .renameat2(&w.root, &w.cwd(), b"/a/b", &w.cwd(), b"/a/c", 0)
        .unwrap();
    assert_eq!(b.d_name(), b"c");
    // A removed directory is listed nowhere.
    w.vfs.unlinkat(&w.root, &w.cwd(), b"/a/c", AT_REMOVEDIR).unwrap();
    assert_eq!(b.d_name(), b"");
}
