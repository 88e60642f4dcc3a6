//! devfs: the `/dev` a kernel without udev needs, as Linux's devtmpfs
//! creates it: `console` (5,1, crw-------), `tty` (5,0), `null` (1,3),
//! `zero` (1,5) and `full` (1,7), all crw-rw-rw- but the console, owned by
//! root.

use alloc::sync::Arc;

use crate::device::{CONSOLE_MINOR, MEM_MAJOR, TTYAUX_MAJOR};
use crate::inode::{Clock, FileSystem, NodeKind};
use crate::ramfs::RamFs;
use crate::Result;

/// A devtmpfs-like filesystem holding the standard nodes; the kernel adds
/// nodes for its own drivers with `root().create(...)`.
pub fn devfs(clock: Arc<dyn Clock>) -> Result<Arc<RamFs>> {
    let fs = RamFs::with_type(clock, "devtmpfs");
    let root = fs.root();
    let nodes: [(&[u8], u32, u32, u32); 5] = [
        (b"console", TTYAUX_MAJOR, CONSOLE_MINOR, 0o600),
        (b"tty", TTYAUX_MAJOR, 0, 0o666),
        (b"null", MEM_MAJOR, 3, 0o666),
        (b"zero", MEM_MAJOR, 5, 0o666),
        (b"full", MEM_MAJOR, 7, 0o666),
    ];
    for (name, major, minor, perm) in nodes {
        root.create(name, NodeKind::CharDevice { major, minor }, perm, 0, 0)?;
    }
    Ok(fs)
}
