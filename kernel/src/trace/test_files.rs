//! tracefs files as the in-kernel tests reach them: looked up from the
//! tracefs root, opened, read and written the way a shell's `cat`,
//! `echo >` and `echo >>` would.

use super::tracefs;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use uapi::fcntl::{O_APPEND, O_RDONLY, O_TRUNC, O_WRONLY};
use uapi::Errno;
use vfs::file::OpenFile;
use vfs::Inode;

/// The inode at `path`, below the tracefs root.
pub fn lookup(path: &str) -> Result<Arc<dyn Inode>, Errno> {
    let mut inode: Arc<dyn Inode> = tracefs::tracefs().root_dir().clone();
    for part in path.split('/') {
        inode = inode.lookup(part.as_bytes())?;
    }
    Ok(inode)
}

/// Opens `path` as openat would, `O_TRUNC` included.
pub fn open(path: &str, flags: u32) -> Result<Arc<OpenFile>, Errno> {
    let inode = lookup(path)?;
    if flags & O_TRUNC != 0 {
        inode.truncate(0)?;
    }
    let ops = inode.open(flags)?.ok_or(Errno::EINVAL)?;
    Ok(OpenFile::new_ops(None, inode, ops, flags & !O_TRUNC))
}

/// `cat path`.
pub fn read_all(path: &str) -> String {
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

/// `echo text > path`.
pub fn write(path: &str, text: &str) -> Result<usize, Errno> {
    open(path, O_WRONLY | O_TRUNC)?.write(text.as_bytes())
}

/// `echo text >> path`.
pub fn append(path: &str, text: &str) -> Result<usize, Errno> {
    open(path, O_WRONLY | O_APPEND)?.write(text.as_bytes())
}
