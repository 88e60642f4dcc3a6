//! procfs: generated directories, /proc/self, per-pid files.

mod common;

use std::sync::Arc;

use common::*;
use uapi::fcntl::*;
use uapi::stat::*;
use vfs::procfs::{ProcEntry, ProcFs, ProcProvider, ProcScope};
use vfs::Errno;

struct Procs;

impl ProcProvider for Procs {
    fn pids(&self) -> Vec<u32> {
        vec![1, 42]
    }

    fn current_pid(&self) -> Option<u32> {
        Some(42)
    }

    fn pid_owner(&self, pid: u32) -> Option<(u32, u32)> {
        match pid {
            1 => Some((0, 0)),
            42 => Some((1000, 1000)),
            _ => None,
        }
    }

    fn list(&self, scope: ProcScope, rel: &[u8]) -> Result<Vec<ProcEntry>, Errno> {
        match (scope, rel) {
            (ProcScope::Root, b"") => Ok(vec![ProcEntry::file(b"kallsyms", 0o444), ProcEntry::dir(b"sys")]),
            (ProcScope::Root, b"sys") => Ok(vec![ProcEntry::file(b"knob", 0o644)]),
            (ProcScope::Pid(_), b"") => Ok(vec![
                ProcEntry::file(b"stat", 0o444),
                ProcEntry::dir(b"fd"),
                ProcEntry::symlink(b"cwd"),
            ]),
            (ProcScope::Pid(_), b"fd") => Ok(vec![ProcEntry::symlink(b"0")]),
            _ => Err(Errno::ENOENT),
        }
    }

    fn read(&self, scope: ProcScope, rel: &[u8]) -> Result<Vec<u8>, Errno> {
        match (scope, rel) {
            (ProcScope::Root, b"kallsyms") => Ok(b"ffff000000000000 T _text\n".to_vec()),
            (ProcScope::Root, b"sys/knob") => Ok(b"1\n".to_vec()),
            (ProcScope::Pid(p), b"stat") => Ok(format!("{p} (init) S 0\n").into_bytes()),
            _ => Err(Errno::ENOENT),
        }
    }

    fn write(&self, scope: ProcScope, rel: &[u8], data: &[u8]) -> Result<usize, Errno> {
        match (scope, rel) {
            (ProcScope::Root, b"sys/knob") => Ok(data.len()),
            _ => Err(Errno::EACCES),
        }
    }

    fn readlink(&self, _: ProcScope, rel: &[u8]) -> Result<Vec<u8>, Errno> {
        match rel {
            b"cwd" => Ok(b"/".to_vec()),
            b"fd/0" => Ok(b"/dev/null".to_vec()),
            _ => Err(Errno::ENOENT),
        }
    }
}

fn with_proc() -> World {
    let w = world();
    w.mkdir("/proc");
    let fs = ProcFs::new(Arc::new(Procs), w.clock.clone());
    w.vfs.mount(fs, &w.lookup("/proc").unwrap()).unwrap();
    w
}

#[test]
fn root_lists_entries_pids_and_self() {
    let w = with_proc();
    assert_eq!(list(&w, "/proc"), ["1", "42", "kallsyms", "self", "sys"]);
    assert_eq!(w.read("/proc/kallsyms").unwrap(), b"ffff000000000000 T _text\n");
    assert_eq!(w.lookup("/proc/7").err(), Some(Errno::ENOENT));
    assert_eq!(w.lookup("/proc/042").err(), Some(Errno::ENOENT));
    assert_eq!(w.lookup("/proc/nothing").err(), Some(Errno::ENOENT));
}

#[test]
fn self_points_at_the_current_pid() {
    let w = with_proc();
    assert_eq!(w.vfs.readlinkat(&w.root, &w.cwd(), b"/proc/self").unwrap(), b"42");
    assert_eq!(w.read("/proc/self/stat").unwrap(), b"42 (init) S 0\n");
    assert!(w.lookup("/proc/self").unwrap().same(&w.lookup("/proc/42").unwrap()));
    assert_eq!(w.lstat_mode("/proc/self").unwrap(), S_IFLNK | 0o777);
}

#[test]
fn pid_directories_are_owned_by_the_process_owner() {
    let w = with_proc();
    let m = w.vfs.fstatat(&w.root, &w.cwd(), b"/proc/42/stat", 0).unwrap();
    assert_eq!((m.mode, m.uid, m.size), (S_IFREG | 0o444, 1000, 0));
    let d = w.vfs.fstatat(&w.root, &w.cwd(), b"/proc/42", 0).unwrap();
    assert_eq!((d.mode, d.uid), (S_IFDIR | 0o555, 1000));
    assert_eq!(list(&w, "/proc/42"), ["cwd", "fd", "stat"]);
    assert_eq!(list(&w, "/proc/42/fd"), ["0"]);
    assert_eq!(
        w.vfs.readlinkat(&w.root, &w.cwd(), b"/proc/1/fd/0").unwrap(),
        b"/dev/null"
    );
    assert_eq!(w.getcwd(&w.lookup("/proc/42/fd").unwrap()), "/proc/42/fd");
    assert!(w.lookup("/proc/42/fd/..").unwrap().same(&w.lookup("/proc/42").unwrap()));
    assert!(w.lookup("/proc/42/..").unwrap().same(&w.lookup("/proc").unwrap()));
}

#[test]
fn contents_are_a_snapshot_taken_at_open() {
    let w = with_proc();
    let f = w.open("/proc/1/stat", O_RDONLY).unwrap();
    let mut buf = [0u8; 3];
    assert_eq!(f.read(&mut buf).unwrap(), 3);
    assert_eq!(&buf, b"1 (");
    // As Linux's seq_lseek (checked on 6.12): no SEEK_END on seq files.
    assert_eq!(f.lseek(0, SEEK_END), Err(Errno::EINVAL));
    assert_eq!(f.lseek(1, SEEK_CUR).unwrap(), 4);
    assert_eq!(f.pread(&mut buf, 2).unwrap(), 3);
    assert_eq!(&buf, b"(in");
}

#[test]
fn writes_go_to_the_provider_and_permissions_hold() {
    let w = with_proc();
    let f = w.open("/proc/sys/knob", O_WRONLY).unwrap();
    assert_eq!(f.write(b"0\n").unwrap(), 2);
    assert_eq!(
        w.open("/proc/kallsyms", O_WRONLY).unwrap().write(b"x"),
        Err(Errno::EACCES)
    );
    assert_eq!(
        w.open_as(&user(), "/proc/sys/knob", O_WRONLY).err(),
        Some(Errno::EACCES)
    );
    assert_eq!(w.open("/proc/new", O_CREAT | O_WRONLY).err(), Some(Errno::EPERM));
}

/// What Linux's ops give each kind of /proc file (FMODE_CAN_WRITE and
/// `read_iter`): files directly under /proc and /proc/sys always have a
/// write operation, a per-process file only when its mode allows writing;
/// `kallsyms` and per-process files read through a plain `read`, /proc/sys
/// files through `read_iter` and `write_iter`.
#[test]
fn proc_files_say_which_operations_linux_gives_them() {
    let w = with_proc();
    let check = |path: &str| {
        let f = w.open(path, O_RDWR).unwrap();
        (
            f.check_rw(false),
            f.check_rw(true),
            f.has_read_iter(),
            f.has_write_iter(),
        )
    };
    assert_eq!(check("/proc/kallsyms"), (Ok(()), Ok(()), false, false));
    assert_eq!(check("/proc/sys/knob"), (Ok(()), Ok(()), true, true));
    assert_eq!(check("/proc/self/stat"), (Ok(()), Err(Errno::EINVAL), false, false));
    let ro = w.open("/proc/self/stat", O_RDONLY).unwrap();
    assert_eq!(ro.check_rw(true), Err(Errno::EBADF), "not open for writing comes first");
}
