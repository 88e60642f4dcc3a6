//! In-kernel tests of `instances/`: mkdir makes a trace array with its own
//! buffer and files, rmdir removes it (EBUSY while a file is open).

use super::*;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use ktest_macros::kernel_test;
use uapi::fcntl::{O_RDONLY, O_TRUNC, O_WRONLY};
use vfs::file::OpenFile;
use vfs::{Inode, NodeKind};

fn lookup(path: &str) -> Result<Arc<dyn Inode>, Errno> {
    let mut inode: Arc<dyn Inode> = tracefs::tracefs().root_dir().clone();
    for part in path.split('/') {
        inode = inode.lookup(part.as_bytes())?;
    }
    Ok(inode)
}

fn open(path: &str, flags: u32) -> Result<Arc<OpenFile>, Errno> {
    let inode = lookup(path)?;
    if flags & O_TRUNC != 0 {
        inode.truncate(0)?;
    }
    let ops = inode.open(flags)?.ok_or(Errno::EINVAL)?;
    Ok(OpenFile::new_ops(None, inode, ops, flags & !O_TRUNC))
}

fn read_all(path: &str) -> String {
    let f = open(path, O_RDONLY).expect("open");
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8(out).expect("text")
}

fn write(path: &str, text: &str) -> Result<usize, Errno> {
    open(path, O_WRONLY | O_TRUNC)?.write(text.as_bytes())
}

fn markers(path: &str) -> Vec<String> {
    read_all(path)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split("tracing_mark_write: ").nth(1).map(String::from))
        .collect()
}

#[kernel_test]
fn instance_has_its_own_buffer_and_is_removed_only_when_unused() {
    let instances = lookup("instances").unwrap();
    instances.create(b"kt", NodeKind::Directory, 0o755, 0, 0).unwrap();
    assert_eq!(
        instances.create(b"kt", NodeKind::Directory, 0o755, 0, 0).err(),
        Some(Errno::EEXIST)
    );
    assert_eq!(
        instances.create(b"f", NodeKind::Regular, 0o644, 0, 0).err(),
        Some(Errno::EPERM)
    );
    write("trace", "").unwrap();
    write("instances/kt/trace_marker", "in instance").unwrap();
    write("trace_marker", "at top").unwrap();
    assert_eq!(markers("instances/kt/trace"), ["in instance"]);
    assert_eq!(markers("trace"), ["at top"]);
    // Its own tracing_on.
    write("instances/kt/tracing_on", "0").unwrap();
    assert_eq!(write("instances/kt/trace_marker", "dropped"), Err(Errno::EBADF));
    assert_eq!(read_all("tracing_on"), "1\n");
    assert_eq!(read_all("instances/kt/events/enable"), "0\n");
    assert_eq!(write("instances/kt/events/enable", "1"), Err(Errno::EINVAL));
    assert!(read_all("instances/kt/events/ftrace/print/format").contains("field:char buf[];"));
    // An open file keeps it.
    let f = open("instances/kt/trace_pipe", O_RDONLY).unwrap();
    assert_eq!(instances.rmdir(b"kt"), Err(Errno::EBUSY));
    drop(f);
    instances.rmdir(b"kt").unwrap();
    assert_eq!(lookup("instances/kt").err(), Some(Errno::ENOENT));
    assert_eq!(instances.rmdir(b"kt"), Err(Errno::ENOENT));
    write("trace", "").unwrap();
}
