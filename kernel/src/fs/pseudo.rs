//! A filesystem of generated files (as Linux's debugfs and tracefs):
//! directories fixed at creation, files whose content a function makes at
//! each read, and which a function may accept writes for.

use alloc::boxed::Box;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};
use uapi::Errno;
use vfs::{DirEntry, FileSystem, FileType, Inode, Metadata};

static NEXT_INO: AtomicU64 = AtomicU64::new(1);

/// Makes a file's content.
pub type ReadFn = Box<dyn Fn() -> Vec<u8> + Send + Sync>;
/// Takes a write to a file (whole buffer; returns bytes consumed).
pub type WriteFn = Box<dyn Fn(&[u8]) -> Result<usize, Errno> + Send + Sync>;

/// A named child of a directory.
type Entry = (Vec<u8>, Arc<dyn Inode>);

/// A generated file.
pub struct PseudoFile {
    ino: u64,
    dev: u64,
    mode: u32,
    read: ReadFn,
    write: Option<WriteFn>,
}

/// A directory.
pub struct PseudoDir {
    ino: u64,
    dev: u64,
    mode: u32,
    entries: spin::RwLock<Vec<Entry>>,
    parent: spin::RwLock<Weak<PseudoDir>>,
}

impl PseudoDir {
    fn new(dev: u64) -> Arc<PseudoDir> {
        Arc::new(PseudoDir {
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            dev,
            mode: 0o040755,
            entries: spin::RwLock::new(Vec::new()),
            parent: spin::RwLock::new(Weak::new()),
        })
    }

    /// Adds a subdirectory.
    pub fn dir(self: &Arc<Self>, name: &str) -> Arc<PseudoDir> {
        let d = PseudoDir::new(self.dev);
        *d.parent.write() = Arc::downgrade(self);
        self.entries.write().push((name.as_bytes().to_vec(), d.clone()));
        d
    }

    /// Adds a file with permission bits `perm`.
    pub fn file(self: &Arc<Self>, name: &str, perm: u32, read: ReadFn, write: Option<WriteFn>) {
        let f = Arc::new(PseudoFile {
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            dev: self.dev,
            mode: 0o100000 | perm,
            read,
            write,
        });
        self.entries.write().push((name.as_bytes().to_vec(), f));
    }
}

fn meta(dev: u64, ino: u64, mode: u32, nlink: u32) -> Metadata {
    Metadata {
        dev,
        ino,
        mode,
        nlink,
        blksize: 4096,
        ..Default::default()
    }
}

impl Inode for PseudoDir {
    fn metadata(&self) -> Metadata {
        meta(self.dev, self.ino, self.mode, 2)
    }
    fn ino(&self) -> u64 {
        self.ino
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn lookup(&self, name: &[u8]) -> vfs::Result<Arc<dyn Inode>> {
        self.entries
            .read()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, i)| i.clone())
            .ok_or(Errno::ENOENT)
    }
    fn parent(&self) -> Option<Arc<dyn Inode>> {
        self.parent.read().upgrade().map(|p| p as Arc<dyn Inode>)
    }
    fn readdir(&self, cursor: u64) -> vfs::Result<Option<(DirEntry, u64)>> {
        let dot = |ino, name: &[u8]| DirEntry {
            ino,
            name: name.to_vec(),
            file_type: FileType::Directory,
        };
        match cursor {
            0 => Ok(Some((dot(self.ino, b"."), 1))),
            1 => Ok(Some((
                dot(self.parent.read().upgrade().map_or(self.ino, |p| p.ino), b".."),
                2,
            ))),
            n => Ok(self.entries.read().get(n as usize - 2).map(|(name, inode)| {
                let m = inode.metadata();
                let ft = FileType::from_mode(m.mode).unwrap_or(FileType::Regular);
                (
                    DirEntry {
                        ino: m.ino,
                        name: name.clone(),
                        file_type: ft,
                    },
                    n + 1,
                )
            })),
        }
    }
}

impl Inode for PseudoFile {
    fn metadata(&self) -> Metadata {
        meta(self.dev, self.ino, self.mode, 1)
    }
    fn ino(&self) -> u64 {
        self.ino
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> vfs::Result<usize> {
        let data = (self.read)();
        let off = (offset as usize).min(data.len());
        let n = buf.len().min(data.len() - off);
        buf[..n].copy_from_slice(&data[off..off + n]);
        Ok(n)
    }
    fn write_at(&self, _offset: u64, buf: &[u8]) -> vfs::Result<usize> {
        match &self.write {
            Some(w) => w(buf),
            None => Err(Errno::EACCES),
        }
    }
    fn append(&self, buf: &[u8]) -> vfs::Result<(usize, u64)> {
        Ok((self.write_at(0, buf)?, 0))
    }
    fn truncate(&self, _size: u64) -> vfs::Result<()> {
        // `echo x > file` opens with O_TRUNC: accepted, nothing to cut.
        if self.write.is_some() {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }
}

/// A pseudo filesystem.
pub struct PseudoFs {
    root: Arc<PseudoDir>,
    fs_type: &'static str,
    dev: u64,
}

impl PseudoFs {
    /// An empty one of type `fs_type`.
    pub fn new(fs_type: &'static str) -> Arc<PseudoFs> {
        let dev = vfs::inode::alloc_anon_dev();
        Arc::new(PseudoFs {
            root: PseudoDir::new(dev),
            fs_type,
            dev,
        })
    }

    /// Its root directory.
    pub fn root_dir(&self) -> &Arc<PseudoDir> {
        &self.root
    }
}

impl FileSystem for PseudoFs {
    fn root(&self) -> Arc<dyn Inode> {
        self.root.clone()
    }
    fn fs_type(&self) -> &'static str {
        self.fs_type
    }
    fn dev(&self) -> u64 {
        self.dev
    }
}
