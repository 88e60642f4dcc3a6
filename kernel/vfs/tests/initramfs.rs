//! Populating the root from newc cpio entries.

mod common;

use common::*;
use cpio::{DeviceKind, Metadata, Writer};
use uapi::fcntl::*;
use uapi::stat::*;
use vfs::initramfs::{populate_from_cpio, populate_initramfs, InitramfsEntry, InitramfsStats};

#[test]
fn a_cpio_archive_becomes_a_tree() {
    let mut a = Writer::new();
    a.dir(
        "/bin",
        Metadata {
            mode: 0o755,
            uid: 0,
            gid: 0,
            mtime: 1000,
        },
    )
    .unwrap();
    a.file(
        "/bin/sh",
        Metadata {
            mode: 0o4755,
            uid: 0,
            gid: 0,
            mtime: 2000,
        },
        b"\x7fELF",
    )
    .unwrap();
    a.symlink(
        "/bin/ls",
        "sh",
        Metadata {
            mode: 0o777,
            uid: 5,
            gid: 6,
            mtime: 3000,
        },
    )
    .unwrap();
    a.dir("/home", Metadata::new(0o755, 0, 0)).unwrap();
    a.dir(
        "/home/user",
        Metadata {
            mode: 0o700,
            uid: 1000,
            gid: 100,
            mtime: 4000,
        },
    )
    .unwrap();
    a.file("/home/user/notes", Metadata::new(0o600, 1000, 100), b"todo")
        .unwrap();
    a.device("/dev/console", DeviceKind::Char, 5, 1, Metadata::new(0o600, 0, 0))
        .unwrap();
    a.device("/dev/sda", DeviceKind::Block, 8, 0, Metadata::new(0o660, 0, 6))
        .unwrap();
    a.file_with_links(&["/bin/a", "/bin/b"], Metadata::new(0o755, 0, 0), b"shared")
        .unwrap();
    a.file("/deep/er/file", Metadata::new(0o644, 0, 0), b"parents made")
        .unwrap();
    let blob = a.finish();
    let w = world();
    let stats = populate_from_cpio(&w.vfs, &blob).unwrap();
    assert_eq!(
        stats,
        InitramfsStats {
            created: 11,
            skipped: 0
        }
    );
    let st = |p: &str| {
        w.vfs
            .fstatat(&w.root, &w.cwd(), p.as_bytes(), AT_SYMLINK_NOFOLLOW)
            .unwrap()
    };
    let sh = st("/bin/sh");
    assert_eq!((sh.mode, sh.size, sh.mtime.sec), (S_IFREG | 0o4755, 4, 2000));
    assert_eq!(w.read("/bin/ls").unwrap(), b"\x7fELF");
    let ls = st("/bin/ls");
    assert_eq!((ls.mode, ls.uid, ls.gid, ls.mtime.sec), (S_IFLNK | 0o777, 5, 6, 3000));
    // Directory mtimes are set after their contents are in.
    assert_eq!(st("/bin").mtime.sec, 1000);
    let home = st("/home/user");
    assert_eq!(
        (home.mode, home.uid, home.gid, home.mtime.sec),
        (S_IFDIR | 0o700, 1000, 100, 4000)
    );
    let n = st("/home/user/notes");
    assert_eq!((n.mode, n.uid, n.gid), (S_IFREG | 0o600, 1000, 100));
    let c = st("/dev/console");
    assert_eq!((c.mode, major(c.rdev), minor(c.rdev)), (S_IFCHR | 0o600, 5, 1));
    let b = st("/dev/sda");
    assert_eq!((b.mode, b.gid, major(b.rdev)), (S_IFBLK | 0o660, 6, 8));
    let (ha, hb) = (st("/bin/a"), st("/bin/b"));
    assert_eq!((ha.ino, ha.nlink), (hb.ino, 2));
    assert_eq!(w.read("/bin/a").unwrap(), b"shared");
    assert_eq!(w.read("/deep/er/file").unwrap(), b"parents made");
    assert_eq!(st("/deep/er").mode, S_IFDIR | 0o755);
}

#[test]
fn later_entries_replace_earlier_ones_of_another_type() {
    let w = world();
    let e = |name: &'static [u8], mode: u32, data: &'static [u8]| InitramfsEntry {
        name,
        mode,
        data,
        nlink: 1,
        ..Default::default()
    };
    let stats = populate_initramfs(
        &w.vfs,
        [
            e(b"x", S_IFDIR | 0o755, b""),
            e(b"x", S_IFREG | 0o644, b"file now"),
            e(b"./y", S_IFREG | 0o644, b"one"),
            e(b"y", S_IFREG | 0o600, b"two"),
            e(b".", S_IFDIR | 0o700, b""),
            e(b"bad", 0o170000, b""),
            e(b"TRAILER!!!", 0, b""),
            e(b"after", S_IFREG, b""),
        ],
    );
    assert_eq!(stats, InitramfsStats { created: 5, skipped: 1 });
    assert_eq!(w.read("/x").unwrap(), b"file now");
    assert_eq!(w.read("/y").unwrap(), b"two");
    assert_eq!(w.lstat_mode("/y").unwrap(), S_IFREG | 0o600);
    assert_eq!(w.lstat_mode("/").unwrap(), S_IFDIR | 0o700);
    assert!(w.lookup("/after").is_err());
}

#[test]
fn a_truncated_archive_reports_its_error_after_the_good_entries() {
    let mut a = Writer::new();
    a.file("/ok", Metadata::new(0o644, 0, 0), b"fine").unwrap();
    a.file("/cut", Metadata::new(0o644, 0, 0), &[1u8; 100]).unwrap();
    let blob = a.finish();
    let w = world();
    let (_, stats) = populate_from_cpio(&w.vfs, &blob[..blob.len() - 150]).unwrap_err();
    assert_eq!(stats.created, 1);
    assert_eq!(w.read("/ok").unwrap(), b"fine");
}
