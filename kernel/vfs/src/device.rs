//! Device nodes: the driver registry the kernel supplies, and the memory
//! devices that need no hardware (`/dev/null`, `/dev/zero`, `/dev/full`).

use alloc::collections::BTreeMap;
use alloc::sync::Arc;

use spin::RwLock;
use uapi::Errno;

use crate::file::{FileOps, OpenFile};
use crate::iov_iter::{iov_iter_zero, IovIter, IovSource};
use crate::Result;

/// A character (or block) device driver: the operations of every open file
/// of its nodes.
pub trait CharDevice: FileOps {
    /// Called at each open of a node; may refuse it (EBUSY, EPERM, ...).
    fn open(&self, _flags: u32) -> Result<()> {
        Ok(())
    }
}

/// What the kernel supplies: the driver for a device number. Opening a
/// node without one fails with ENXIO, as on Linux.
pub trait DeviceRegistry: Send + Sync {
    fn char_device(&self, major: u32, minor: u32) -> Option<Arc<dyn CharDevice>>;

    fn block_device(&self, _major: u32, _minor: u32) -> Option<Arc<dyn CharDevice>> {
        None
    }
}

/// A ready-made registry: a table the kernel fills at boot.
#[derive(Default)]
pub struct DeviceTable {
    chr: RwLock<BTreeMap<(u32, u32), Arc<dyn CharDevice>>>,
    blk: RwLock<BTreeMap<(u32, u32), Arc<dyn CharDevice>>>,
}

/// Linux's major number of the memory devices.
pub const MEM_MAJOR: u32 = 1;
/// The console's major and minor (`/dev/console` is 5,1).
pub const TTYAUX_MAJOR: u32 = 5;
pub const CONSOLE_MINOR: u32 = 1;

impl DeviceTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// A table with `/dev/null` (1,3), `/dev/zero` (1,5) and `/dev/full`
    /// (1,7).
    pub fn with_mem_devices() -> Self {
        let t = Self::new();
        t.register_chrdev(MEM_MAJOR, 3, Arc::new(NullDevice));
        t.register_chrdev(MEM_MAJOR, 5, Arc::new(ZeroDevice));
        t.register_chrdev(MEM_MAJOR, 7, Arc::new(FullDevice));
        t
    }

    /// Registers (or replaces) the driver of character device major:minor.
    pub fn register_chrdev(&self, major: u32, minor: u32, dev: Arc<dyn CharDevice>) {
        self.chr.write().insert((major, minor), dev);
    }

    pub fn register_blkdev(&self, major: u32, minor: u32, dev: Arc<dyn CharDevice>) {
        self.blk.write().insert((major, minor), dev);
    }
}

impl DeviceRegistry for DeviceTable {
    fn char_device(&self, major: u32, minor: u32) -> Option<Arc<dyn CharDevice>> {
        self.chr.read().get(&(major, minor)).cloned()
    }

    fn block_device(&self, major: u32, minor: u32) -> Option<Arc<dyn CharDevice>> {
        self.blk.read().get(&(major, minor)).cloned()
    }
}

/// `/dev/null`: reads end at once, writes vanish; lseek always gives 0.
pub struct NullDevice;

impl FileOps for NullDevice {
    fn nowait(&self) -> bool {
        true
    }

    fn has_read_iter(&self) -> bool {
        true
    }

    fn has_write_iter(&self) -> bool {
        true
    }

    fn read(&self, _: &OpenFile, _: &mut [u8], _: &mut u64) -> Result<usize> {
        Ok(0)
    }

    fn read_iter(&self, _: &OpenFile, _: &mut dyn IovIter, _: &mut u64) -> Result<usize> {
        Ok(0)
    }

    fn write(&self, _: &OpenFile, buf: &[u8], _: &mut u64) -> Result<usize> {
        Ok(buf.len())
    }

    /// The bytes are dropped unread: a write of any buffer succeeds, as
    /// Linux's `write_iter_null` (which checks only that it is user space).
    fn write_iter(&self, _: &OpenFile, from: &mut dyn IovSource, _: &mut u64) -> Result<usize> {
        Ok(from.count())
    }

    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> Result<u64> {
        Ok(0)
    }
}

impl CharDevice for NullDevice {}

/// `/dev/zero`: reads give zeros, writes vanish; lseek leaves the offset
/// (Linux's `noop_llseek`).
pub struct ZeroDevice;

impl FileOps for ZeroDevice {
    fn nowait(&self) -> bool {
        true
    }

    fn has_read_iter(&self) -> bool {
        true
    }

    fn has_write_iter(&self) -> bool {
        true
    }

    fn read(&self, _: &OpenFile, buf: &mut [u8], _: &mut u64) -> Result<usize> {
        buf.fill(0);
        Ok(buf.len())
    }

    fn read_iter(&self, _: &OpenFile, to: &mut dyn IovIter, _: &mut u64) -> Result<usize> {
        // As long a read as through a bounce buffer (a longer one is short).
        let want = to.count().min(crate::inode::BOUNCE_MAX);
        crate::inode::copied_or_efault(want, iov_iter_zero(to, want))
    }

    fn write(&self, _: &OpenFile, buf: &[u8], _: &mut u64) -> Result<usize> {
        Ok(buf.len())
    }

    /// The bytes are dropped unread: a write of any buffer succeeds, as
    /// Linux's `write_iter_null` (which checks only that it is user space).
    fn write_iter(&self, _: &OpenFile, from: &mut dyn IovSource, _: &mut u64) -> Result<usize> {
        Ok(from.count())
    }

    fn llseek(&self, _: &OpenFile, pos: u64, _: i64, _: u32, _: u64) -> Result<u64> {
        Ok(pos)
    }
}

impl CharDevice for ZeroDevice {}

/// `/dev/full`: reads give zeros, writes fail with ENOSPC.
pub struct FullDevice;

impl FileOps for FullDevice {
    /// Linux's `full_fops` read with `read_iter_zero` but write with a
    /// plain `write_full`.
    fn has_read_iter(&self) -> bool {
        true
    }

    fn read(&self, _: &OpenFile, buf: &mut [u8], _: &mut u64) -> Result<usize> {
        buf.fill(0);
        Ok(buf.len())
    }

    fn read_iter(&self, _: &OpenFile, to: &mut dyn IovIter, _: &mut u64) -> Result<usize> {
        // As long a read as through a bounce buffer (a longer one is short).
        let want = to.count().min(crate::inode::BOUNCE_MAX);
        crate::inode::copied_or_efault(want, iov_iter_zero(to, want))
    }

    fn write(&self, _: &OpenFile, _: &[u8], _: &mut u64) -> Result<usize> {
        Err(Errno::ENOSPC)
    }

    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> Result<u64> {
        Ok(0)
    }
}

impl CharDevice for FullDevice {}
