//! A ramfs-rooted tree and helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use uapi::fcntl::*;
use vfs::inode::{Clock, Timespec};
use vfs::ramfs::RamFs;
use vfs::{Cred, DeviceTable, Errno, OpenFile, Path, Vfs};

/// A clock that ticks one second per reading.
pub struct TickClock(pub AtomicI64);

impl Clock for TickClock {
    fn now(&self) -> Timespec {
        Timespec::new(self.0.fetch_add(1, Ordering::Relaxed), 0)
    }
}

pub struct World {
    pub vfs: Vfs,
    pub fs: Arc<RamFs>,
    pub clock: Arc<TickClock>,
    pub root: Cred,
}

pub fn world() -> World {
    let clock = Arc::new(TickClock(AtomicI64::new(1_000)));
    let fs = RamFs::new(clock.clone());
    let vfs = Vfs::new(fs.clone(), Arc::new(DeviceTable::with_mem_devices()));
    World {
        vfs,
        fs,
        clock,
        root: Cred::root(),
    }
}

pub fn user() -> Cred {
    Cred::new(1000, 1000)
}

impl World {
    pub fn cwd(&self) -> Path {
        self.vfs.root()
    }

    pub fn mkdir(&self, path: &str) {
        self.vfs
            .mkdirat(&self.root, &self.cwd(), path.as_bytes(), 0o755, 0)
            .unwrap();
    }

    pub fn mkdir_mode(&self, path: &str, mode: u32) {
        self.mkdir(path);
        self.vfs
            .fchmodat(&self.root, &self.cwd(), path.as_bytes(), mode, 0)
            .unwrap();
    }

    pub fn write(&self, path: &str, data: &[u8]) {
        let f = self.open_as(&self.root, path, O_WRONLY | O_CREAT | O_TRUNC).unwrap();
        assert_eq!(f.write(data).unwrap(), data.len());
    }

    pub fn read(&self, path: &str) -> Result<Vec<u8>, Errno> {
        self.open_as(&self.root, path, O_RDONLY)?.read_to_end()
    }

    pub fn symlink(&self, target: &str, path: &str) {
        self.vfs
            .symlinkat(&self.root, target.as_bytes(), &self.cwd(), path.as_bytes())
            .unwrap();
    }

    pub fn open_as(&self, cred: &Cred, path: &str, flags: u32) -> Result<Arc<OpenFile>, Errno> {
        self.vfs.openat(cred, &self.cwd(), path.as_bytes(), flags, 0o644, 0o022)
    }

    pub fn open(&self, path: &str, flags: u32) -> Result<Arc<OpenFile>, Errno> {
        self.open_as(&self.root, path, flags)
    }

    pub fn lookup(&self, path: &str) -> Result<Path, Errno> {
        self.vfs.lookup(&self.root, &self.cwd(), path.as_bytes(), true)
    }

    pub fn lookup_as(&self, cred: &Cred, path: &str) -> Result<Path, Errno> {
        self.vfs.lookup(cred, &self.cwd(), path.as_bytes(), true)
    }

    pub fn lstat_mode(&self, path: &str) -> Result<u32, Errno> {
        Ok(self
            .vfs
            .fstatat(&self.root, &self.cwd(), path.as_bytes(), AT_SYMLINK_NOFOLLOW)?
            .mode)
    }

    pub fn getcwd(&self, p: &Path) -> String {
        String::from_utf8(self.vfs.getcwd(p).unwrap()).unwrap()
    }

    pub fn chown(&self, path: &str, uid: u32, gid: u32) {
        self.vfs
            .fchownat(&self.root, &self.cwd(), path.as_bytes(), Some(uid), Some(gid), 0)
            .unwrap();
    }
}

/// Names in a directory, without `.` and `..`, via getdents64.
pub fn list(w: &World, path: &str) -> Vec<String> {
    let f = w.open(path, O_RDONLY | O_DIRECTORY).unwrap();
    let mut names = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let n = f.getdents64(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off < n {
            let reclen = u16::from_le_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let name = &buf[off + 19..off + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap()];
            if name != b"." && name != b".." {
                names.push(String::from_utf8(name.to_vec()).unwrap());
            }
            off += reclen;
        }
    }
    names.sort();
    names
}
