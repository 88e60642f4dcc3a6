//! In-kernel tests of `instances/`: mkdir makes a trace array with its own
//! buffer and files, rmdir removes it (EBUSY while a file is open).

use super::test_files::{lookup, open, read_all, write};
use super::*;
use alloc::string::String;
use alloc::vec::Vec;
use ktest_macros::kernel_test;
use uapi::fcntl::O_RDONLY;
use vfs::NodeKind;

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
    // A regular file cannot be made there: EACCES, as Linux's vfs_create
    // for a directory without ->create.
    assert_eq!(
        instances.create(b"f", NodeKind::Regular, 0o644, 0, 0).err(),
        Some(Errno::EACCES)
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
