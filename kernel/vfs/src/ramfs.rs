//! ramfs: the in-memory filesystem that holds the initramfs (and, through
//! [`crate::devfs`], `/dev`). Files keep their data in 4 KiB pages, so
//! sparse files cost only the pages written.
//!
//! Data pages are charged to the filesystem as they are allocated and
//! uncharged when truncated away or when the last reference to the inode
//! goes (unlink, then close), so a tmpfs with a size limit fails writes
//! with ENOSPC instead of taking all memory, as Linux's shmem does.
//!
//! Locking: namespace changes (create, link, unlink, rmdir, rename) hold
//! the filesystem's `tree` lock, so at most one of them runs at a time and
//! it may lock several directories; lookups and I/O lock one inode's data
//! at a time. Data locks are taken before metadata locks, never the other
//! way.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::{Mutex, RwLock};
use uapi::fcntl::{RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT};
use uapi::stat::*;
use uapi::{Errno, NAME_MAX};

use crate::inode::{
    alloc_anon_dev, Clock, DirEntry, FileSystem, FileType, Inode, Metadata, NodeKind, StatFs, Timespec,
};
use crate::iov_iter::IovIter;
use crate::Result;

const PAGE_SIZE: usize = 4096;
/// Largest file offset, as Linux's `MAX_LFS_FILESIZE` on 64-bit.
const MAX_FILE_SIZE: u64 = i64::MAX as u64;
/// The size tmpfs gives each directory entry (Linux's `BOGO_DIRENT_SIZE`).
const BOGO_DIRENT_SIZE: u64 = 20;
/// Directory cursors 0 and 1 are `.` and `..`; entries start here.
const FIRST_COOKIE: u64 = 2;

/// One page of file data, wherever it lives (kernel heap here, a frame
/// of RAM in the kernel, so that an unlinked file's memory goes back to
/// the frame allocator and shows in MemFree).
pub trait DataPage: Send + Sync {
    /// Copies `buf.len()` bytes from `offset` (inside the page).
    fn read(&self, offset: usize, buf: &mut [u8]);
    /// Copies `data` in at `offset` (inside the page). A page is shared
    /// (`Arc`) so that a read can copy from it without the file's lock;
    /// such a read racing a write may see part of it, as on Linux.
    fn write(&self, offset: usize, data: &[u8]);
    /// Copies `len` bytes from `offset` (inside the page) into `to`;
    /// returns how many were copied (fewer when `to` faulted). The
    /// default goes through a stack buffer; a page that can lend its bytes
    /// copies them directly.
    fn copy_to_iter(&self, offset: usize, len: usize, to: &mut dyn IovIter) -> usize {
        let mut b = [0u8; PAGE_SIZE];
        let Some(b) = b.get_mut(..len) else { return 0 };
        self.read(offset, b);
        to.copy_to_iter(b)
    }
    /// The physical frame the page lives in, if it is one, with a new
    /// reference on it for the caller (a mapping), taken while the file
    /// still holds the page; heap pages have none.
    fn get_frame(&self) -> Option<u64> {
        None
    }
}

/// Where a [`RamFs`] gets its data pages.
pub trait PageAlloc: Send + Sync {
    /// A zeroed page, or `None` when memory is short.
    fn alloc_zeroed(&self) -> Option<Arc<dyn DataPage>>;
}

/// Pages from the heap (host tests, and filesystems without a page
/// allocator of their own).
pub struct HeapPages;

struct HeapPage(Mutex<Box<[u8]>>);

impl DataPage for HeapPage {
    fn read(&self, offset: usize, buf: &mut [u8]) {
        buf.copy_from_slice(&self.0.lock()[offset..offset + buf.len()]);
    }
    fn write(&self, offset: usize, data: &[u8]) {
        self.0.lock()[offset..offset + data.len()].copy_from_slice(data);
    }
}

impl PageAlloc for HeapPages {
    fn alloc_zeroed(&self) -> Option<Arc<dyn DataPage>> {
        let mut v = Vec::new();
        v.try_reserve_exact(PAGE_SIZE).ok()?;
        v.resize(PAGE_SIZE, 0);
        Some(Arc::new(HeapPage(Mutex::new(v.into_boxed_slice()))))
    }
}

struct Core {
    dev: u64,
    page_alloc: Arc<dyn PageAlloc>,
    fs_type: &'static str,
    clock: Arc<dyn Clock>,
    next_ino: AtomicU64,
    tree: Mutex<()>,
    /// Most data pages the filesystem may hold (`u64::MAX`: no limit).
    max_pages: u64,
    /// Data pages held now, over all files.
    used_pages: AtomicU64,
}

impl Core {
    fn now(&self) -> Timespec {
        self.clock.now()
    }

    /// Reserves one data page against the limit (Linux's
    /// `shmem_inode_acct_blocks`): ENOSPC when the filesystem is full.
    fn charge_page(&self) -> Result<()> {
        self.used_pages
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used < self.max_pages).then_some(used + 1)
            })
            .map(|_| ())
            .map_err(|_| Errno::ENOSPC)
    }

    fn uncharge_pages(&self, n: u64) {
        if n > 0 {
            self.used_pages.fetch_sub(n, Ordering::AcqRel);
        }
    }
}

/// Space figures of a [`RamFs`], in pages of [`RamFs::PAGE_SIZE`] bytes, for
/// statfs(2) and df.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RamFsUsage {
    /// The limit in pages (`u64::MAX`: none).
    pub max_pages: u64,
    /// Pages of file data held now.
    pub used_pages: u64,
}

/// An in-memory filesystem.
pub struct RamFs {
    core: Arc<Core>,
    root: Arc<RamInode>,
}

impl RamFs {
    /// A new filesystem with an empty root directory (mode 0755, root
    /// owned), a fresh anonymous device number and type name `"ramfs"`.
    pub fn new(clock: Arc<dyn Clock>) -> Arc<RamFs> {
        Self::with_type(clock, "ramfs")
    }

    /// As [`new`](Self::new), with another name for /proc/mounts
    /// (`"rootfs"`, `"devtmpfs"`, `"tmpfs"`).
    pub fn with_type(clock: Arc<dyn Clock>, fs_type: &'static str) -> Arc<RamFs> {
        Self::with_limit(clock, fs_type, None)
    }

    /// As [`with_type`](Self::with_type), holding at most `max_bytes` of
    /// file data (rounded up to whole pages; `None`: no limit). Writes
    /// that would need more fail with ENOSPC, as tmpfs's `size=`.
    pub fn with_limit(clock: Arc<dyn Clock>, fs_type: &'static str, max_bytes: Option<u64>) -> Arc<RamFs> {
        Self::with_pages(clock, fs_type, max_bytes, Arc::new(HeapPages))
    }

    /// As [`with_limit`](Self::with_limit), with data pages from
    /// `page_alloc`.
    pub fn with_pages(
        clock: Arc<dyn Clock>,
        fs_type: &'static str,
        max_bytes: Option<u64>,
        page_alloc: Arc<dyn PageAlloc>,
    ) -> Arc<RamFs> {
        let core = Arc::new(Core {
            dev: alloc_anon_dev(),
            page_alloc,
            fs_type,
            clock,
            next_ino: AtomicU64::new(1),
            tree: Mutex::new(()),
            max_pages: max_bytes.map_or(u64::MAX, |b| b.div_ceil(PAGE_SIZE as u64)),
            used_pages: AtomicU64::new(0),
        });
        let root = RamInode::new(&core, S_IFDIR | 0o755, 0, 0, 0, Data::Dir(Dir::new(Weak::new())));
        Arc::new(RamFs { core, root })
    }

    /// The root directory as a `RamInode`.
    pub fn root_inode(&self) -> Arc<dyn Inode> {
        self.root.clone()
    }

    /// The size of the pages [`usage`](Self::usage) counts.
    pub const PAGE_SIZE: usize = PAGE_SIZE;

    /// How much of its limit the filesystem uses.
    pub fn usage(&self) -> RamFsUsage {
        RamFsUsage {
            max_pages: self.core.max_pages,
            used_pages: self.core.used_pages.load(Ordering::Acquire),
        }
    }
}

/// The data limit in bytes that tmpfs mount options `opts` (mount(2)'s
/// comma-separated data string) ask for, on a machine with `ram_bytes` of
/// memory: `size=` (bytes with a k/m/g/t/p/e suffix, or `N%` of RAM) or
/// `nr_blocks=` (pages); half of RAM when neither is given, as Linux's
/// shmem; `None` (no limit) for `size=0`. Options tmpfs knows but that
/// do not set the size are accepted; others are EINVAL, as Linux.
pub fn tmpfs_size_limit(opts: &[u8], ram_bytes: u64) -> Result<Option<u64>> {
    let mut limit = Some(ram_bytes / 2);
    for opt in opts.split(|&b| b == b',').filter(|o| !o.is_empty()) {
        let (key, value) = match opt.iter().position(|&b| b == b'=') {
            Some(i) => (&opt[..i], Some(&opt[i + 1..])),
            None => (opt, None),
        };
        let bytes = match (key, value) {
            (b"size", Some(v)) => match v.strip_suffix(b"%") {
                Some(pct) => {
                    let pct = parse_u64(pct)?;
                    ram_bytes.checked_mul(pct).ok_or(Errno::EINVAL)? / 100
                }
                None => memparse(v)?,
            },
            (b"nr_blocks", Some(v)) => memparse(v)?.checked_mul(PAGE_SIZE as u64).ok_or(Errno::EINVAL)?,
            (b"mode" | b"uid" | b"gid" | b"nr_inodes" | b"huge" | b"mpol", Some(_)) => continue,
            (b"inode32" | b"inode64" | b"noswap" | b"ro" | b"rw", None) => continue,
            _ => return Err(Errno::EINVAL),
        };
        // Linux rounds up to whole pages; 0 means unlimited.
        limit = (bytes != 0).then(|| bytes.div_ceil(PAGE_SIZE as u64) * PAGE_SIZE as u64);
    }
    Ok(limit)
}

fn parse_u64(digits: &[u8]) -> Result<u64> {
    if digits.is_empty() {
        return Err(Errno::EINVAL);
    }
    digits.iter().try_fold(0u64, |acc, &d| {
        if !d.is_ascii_digit() {
            return Err(Errno::EINVAL);
        }
        acc.checked_mul(10)
            .and_then(|a| a.checked_add(u64::from(d - b'0')))
            .ok_or(Errno::EINVAL)
    })
}

/// A number with an optional binary suffix, as Linux's `memparse`.
fn memparse(v: &[u8]) -> Result<u64> {
    let (digits, shift) = match v.last().map(u8::to_ascii_lowercase) {
        Some(b'k') => (&v[..v.len() - 1], 10),
        Some(b'm') => (&v[..v.len() - 1], 20),
        Some(b'g') => (&v[..v.len() - 1], 30),
        Some(b't') => (&v[..v.len() - 1], 40),
        Some(b'p') => (&v[..v.len() - 1], 50),
        Some(b'e') => (&v[..v.len() - 1], 60),
        _ => (v, 0),
    };
    let n = parse_u64(digits)?;
    n.checked_mul(1 << shift).ok_or(Errno::EINVAL)
}

impl FileSystem for RamFs {
    fn root(&self) -> Arc<dyn Inode> {
        self.root.clone()
    }

    fn fs_type(&self) -> &'static str {
        self.core.fs_type
    }

    fn dev(&self) -> u64 {
        self.core.dev
    }

    fn magic(&self) -> u64 {
        match self.core.fs_type {
            "ramfs" => RAMFS_MAGIC,
            // rootfs, tmpfs and devtmpfs are shmem on Linux.
            _ => TMPFS_MAGIC,
        }
    }

    /// tmpfs's figures: the limit and what is free of it, in pages; a
    /// filesystem without a limit (ramfs) has none, as Linux's ramfs.
    fn statfs(&self) -> StatFs {
        let mut st = StatFs::simple(self.magic());
        let u = self.usage();
        if u.max_pages != u64::MAX {
            st.blocks = u.max_pages;
            st.bfree = u.max_pages.saturating_sub(u.used_pages);
            st.bavail = st.bfree;
        }
        st
    }
}

pub use uapi::magic::{RAMFS_MAGIC, TMPFS_MAGIC};

struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    rdev: u64,
    atime: Timespec,
    mtime: Timespec,
    ctime: Timespec,
}

struct Dir {
    /// Entries by cookie (the readdir cursor), which only grows, so that
    /// cursors survive removals.
    entries: BTreeMap<u64, (Vec<u8>, Arc<RamInode>)>,
    names: BTreeMap<Vec<u8>, u64>,
    next_cookie: u64,
    /// Empty for the root.
    parent: Weak<RamInode>,
    /// Removed by rmdir (or replaced by rename): nothing may be created.
    dead: bool,
}

impl Dir {
    fn new(parent: Weak<RamInode>) -> Self {
        Dir {
            entries: BTreeMap::new(),
            names: BTreeMap::new(),
            next_cookie: FIRST_COOKIE,
            parent,
            dead: false,
        }
    }

    fn get(&self, name: &[u8]) -> Option<&Arc<RamInode>> {
        self.names.get(name).and_then(|c| self.entries.get(c)).map(|(_, i)| i)
    }

    fn insert(&mut self, name: &[u8], inode: Arc<RamInode>) {
        let cookie = self.next_cookie;
        self.next_cookie += 1;
        self.names.insert(name.to_vec(), cookie);
        self.entries.insert(cookie, (name.to_vec(), inode));
    }

    fn remove(&mut self, name: &[u8]) -> Option<Arc<RamInode>> {
        let cookie = self.names.remove(name)?;
        self.entries.remove(&cookie).map(|(_, i)| i)
    }
}

#[derive(Default)]
struct Pages {
    size: u64,
    pages: BTreeMap<u64, Arc<dyn DataPage>>,
}

impl Pages {
    fn read(&self, offset: u64, buf: &mut [u8]) -> usize {
        if offset >= self.size {
            return 0;
        }
        let n = buf.len().min((self.size - offset) as usize);
        let mut done = 0;
        while done < n {
            let pos = offset + done as u64;
            let (index, in_page) = (pos / PAGE_SIZE as u64, (pos % PAGE_SIZE as u64) as usize);
            let chunk = (PAGE_SIZE - in_page).min(n - done);
            let dst = &mut buf[done..done + chunk];
            match self.pages.get(&index) {
                Some(page) => page.read(in_page, dst),
                None => dst.fill(0),
            }
            done += chunk;
        }
        n
    }

    /// Writes `buf` at `offset`, charging new pages to `core`: a short
    /// write when the filesystem or memory fills part way, ENOSPC when
    /// nothing fit.
    fn write(&mut self, core: &Core, offset: u64, buf: &[u8]) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= MAX_FILE_SIZE)
            .ok_or(Errno::EFBIG)?;
        let mut done = 0;
        while done < buf.len() {
            let pos = offset + done as u64;
            let (index, in_page) = (pos / PAGE_SIZE as u64, (pos % PAGE_SIZE as u64) as usize);
            let chunk = (PAGE_SIZE - in_page).min(buf.len() - done);
            let page = match self.pages.entry(index) {
                alloc::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                alloc::collections::btree_map::Entry::Vacant(v) => match new_page(core) {
                    Ok(p) => v.insert(p),
                    Err(_) if done > 0 => break,
                    Err(e) => return Err(e),
                },
            };
            page.write(in_page, &buf[done..done + chunk]);
            done += chunk;
        }
        self.size = self.size.max(end.min(offset + done as u64));
        Ok(done)
    }

    fn truncate(&mut self, core: &Core, size: u64) {
        let keep = size.div_ceil(PAGE_SIZE as u64);
        let before = self.pages.len();
        self.pages.retain(|&i, _| i < keep);
        core.uncharge_pages((before - self.pages.len()) as u64);
        if !size.is_multiple_of(PAGE_SIZE as u64) {
            if let Some(p) = self.pages.get(&(size / PAGE_SIZE as u64)) {
                let from = (size % PAGE_SIZE as u64) as usize;
                p.write(from, &[0u8; PAGE_SIZE][from..]);
            }
        }
        self.size = size;
    }
}

/// A zeroed page charged to `core`: ENOSPC when the filesystem is at its
/// limit or memory cannot supply one (a write must fail, not
/// panic the kernel in the allocator).
fn new_page(core: &Core) -> Result<Arc<dyn DataPage>> {
    core.charge_page()?;
    core.page_alloc.alloc_zeroed().ok_or_else(|| {
        core.uncharge_pages(1);
        Errno::ENOSPC
    })
}

enum Data {
    File(Pages),
    Dir(Dir),
    Symlink(Vec<u8>),
    /// Device nodes, FIFOs and sockets: attributes only.
    Special,
}

/// An inode of a [`RamFs`].
pub struct RamInode {
    ino: u64,
    core: Arc<Core>,
    this: Weak<RamInode>,
    meta: Mutex<Meta>,
    data: RwLock<Data>,
}

impl RamInode {
    fn new(core: &Arc<Core>, mode: u32, uid: u32, gid: u32, rdev: u64, data: Data) -> Arc<RamInode> {
        let now = core.now();
        let nlink = if matches!(data, Data::Dir(_)) { 2 } else { 1 };
        Arc::new_cyclic(|this| RamInode {
            ino: core.next_ino.fetch_add(1, Ordering::Relaxed),
            core: core.clone(),
            this: this.clone(),
            meta: Mutex::new(Meta {
                mode,
                uid,
                gid,
                nlink,
                rdev,
                atime: now,
                mtime: now,
                ctime: now,
            }),
            data: RwLock::new(data),
        })
    }

    fn arc(&self) -> Arc<RamInode> {
        self.this.upgrade().expect("a RamInode is only reached through an Arc")
    }

    fn is_dir(&self) -> bool {
        self.meta.lock().mode & S_IFMT == S_IFDIR
    }

    fn touch_mc(&self) {
        let now = self.core.now();
        let mut m = self.meta.lock();
        m.mtime = now;
        m.ctime = now;
    }

    fn touch_c(&self) {
        self.change_attrs(|_| {});
    }

    /// Applies an attribute change and stamps ctime, as every one must.
    fn change_attrs(&self, f: impl FnOnce(&mut Meta)) {
        let now = self.core.now();
        let mut m = self.meta.lock();
        f(&mut m);
        m.ctime = now;
    }

    fn add_nlink(&self, delta: i32) {
        let mut m = self.meta.lock();
        m.nlink = m.nlink.saturating_add_signed(delta);
    }

    fn is_empty_dir(&self) -> bool {
        matches!(&*self.data.read(), Data::Dir(d) if d.entries.is_empty())
    }

    /// Marks a removed directory: nlink 0 and nothing more may be created.
    fn kill_dir(&self) {
        if let Data::Dir(d) = &mut *self.data.write() {
            d.dead = true;
        }
        self.meta.lock().nlink = 0;
    }

    /// Whether `self` is `other` or one of its ancestors.
    fn is_ancestor_of(&self, other: &Arc<RamInode>) -> bool {
        let mut cur = other.clone();
        loop {
            if cur.ino == self.ino {
                return true;
            }
            let parent = match &*cur.data.read() {
                Data::Dir(d) => d.parent.upgrade(),
                _ => None,
            };
            match parent {
                Some(p) => cur = p,
                None => return false,
            }
        }
    }
}

impl Drop for RamInode {
    /// Gives the file's pages back to the filesystem's limit, and takes
    /// a directory's tree apart without recursion: dropping a 10 000-deep
    /// chain one nested `drop` per level would overflow a kernel stack.
    /// Children whose last reference is ours are emptied onto an explicit
    /// stack before they are dropped, so each `drop` below is shallow.
    fn drop(&mut self) {
        let mut orphans = match self.data.get_mut() {
            Data::File(p) => {
                self.core.uncharge_pages(p.pages.len() as u64);
                return;
            }
            Data::Dir(d) => take_children(d),
            _ => return,
        };
        while let Some(child) = orphans.pop() {
            // Still referenced elsewhere (open, cwd, another link): that
            // holder drops it later, with its own shallow teardown.
            if let Ok(mut child) = Arc::try_unwrap(child) {
                if let Data::Dir(d) = child.data.get_mut() {
                    orphans.append(&mut take_children(d));
                }
            }
        }
    }
}

/// Empties a directory, returning its children.
fn take_children(d: &mut Dir) -> Vec<Arc<RamInode>> {
    d.names.clear();
    core::mem::take(&mut d.entries).into_values().map(|(_, i)| i).collect()
}

fn check_name(name: &[u8]) -> Result<()> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
        return Err(Errno::EINVAL);
    }
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

impl Inode for RamInode {
    fn metadata(&self) -> Metadata {
        let data = self.data.read();
        let (size, blocks) = match &*data {
            Data::File(p) => (p.size, p.pages.len() as u64 * (PAGE_SIZE as u64 / 512)),
            Data::Symlink(t) => (t.len() as u64, 0),
            // shmem counts 20 bytes (BOGO_DIRENT_SIZE) for each entry,
            // `.` and `..` included; Linux's ramfs reports 0.
            Data::Dir(d) if self.core.fs_type != "ramfs" => ((d.entries.len() as u64 + 2) * BOGO_DIRENT_SIZE, 0),
            _ => (0, 0),
        };
        drop(data);
        let m = self.meta.lock();
        Metadata {
            dev: self.core.dev,
            ino: self.ino,
            mode: m.mode,
            nlink: m.nlink,
            uid: m.uid,
            gid: m.gid,
            size,
            rdev: m.rdev,
            blksize: PAGE_SIZE as u32,
            blocks,
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
        }
    }

    fn ino(&self) -> u64 {
        self.ino
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Inode>> {
        match &*self.data.read() {
            Data::Dir(d) if d.dead => Err(Errno::ENOENT),
            Data::Dir(d) => d.get(name).map(|i| i.clone() as Arc<dyn Inode>).ok_or(Errno::ENOENT),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn parent(&self) -> Option<Arc<dyn Inode>> {
        match &*self.data.read() {
            Data::Dir(d) => Some(d.parent.upgrade().unwrap_or_else(|| self.arc())),
            _ => None,
        }
    }

    fn create(&self, name: &[u8], kind: NodeKind<'_>, perm: u32, uid: u32, gid: u32) -> Result<Arc<dyn Inode>> {
        check_name(name)?;
        let _tree = self.core.tree.lock();
        let mode = kind.file_type().mode_bits() | (perm & S_IALLUGO);
        let (data, rdev) = match kind {
            NodeKind::Regular => (Data::File(Pages::default()), 0),
            NodeKind::Directory => (Data::Dir(Dir::new(self.this.clone())), 0),
            NodeKind::Symlink(target) => (Data::Symlink(target.to_vec()), 0),
            NodeKind::CharDevice { major, minor } | NodeKind::BlockDevice { major, minor } => {
                (Data::Special, makedev(major, minor))
            }
            NodeKind::Fifo | NodeKind::Socket => (Data::Special, 0),
        };
        let mut guard = self.data.write();
        let Data::Dir(dir) = &mut *guard else {
            return Err(Errno::ENOTDIR);
        };
        if dir.dead {
            return Err(Errno::ENOENT);
        }
        if dir.get(name).is_some() {
            return Err(Errno::EEXIST);
        }
        let inode = RamInode::new(&self.core, mode, uid, gid, rdev, data);
        dir.insert(name, inode.clone());
        drop(guard);
        if kind == NodeKind::Directory {
            self.add_nlink(1);
        }
        self.touch_mc();
        Ok(inode)
    }

    fn link(&self, name: &[u8], target: &Arc<dyn Inode>) -> Result<()> {
        check_name(name)?;
        let target = target.as_any().downcast_ref::<RamInode>().ok_or(Errno::EXDEV)?;
        if !Arc::ptr_eq(&target.core, &self.core) {
            return Err(Errno::EXDEV);
        }
        if target.is_dir() {
            return Err(Errno::EPERM);
        }
        let _tree = self.core.tree.lock();
        let mut guard = self.data.write();
        let Data::Dir(dir) = &mut *guard else {
            return Err(Errno::ENOTDIR);
        };
        if dir.dead {
            return Err(Errno::ENOENT);
        }
        if dir.get(name).is_some() {
            return Err(Errno::EEXIST);
        }
        dir.insert(name, target.arc());
        drop(guard);
        target.add_nlink(1);
        target.touch_c();
        self.touch_mc();
        Ok(())
    }

    fn unlink(&self, name: &[u8]) -> Result<()> {
        let _tree = self.core.tree.lock();
        let mut guard = self.data.write();
        let Data::Dir(dir) = &mut *guard else {
            return Err(Errno::ENOTDIR);
        };
        let victim = dir.get(name).ok_or(Errno::ENOENT)?;
        if victim.is_dir() {
            return Err(Errno::EISDIR);
        }
        let victim = dir.remove(name).expect("entry just found");
        drop(guard);
        victim.add_nlink(-1);
        victim.touch_c();
        self.touch_mc();
        Ok(())
    }

    fn rmdir(&self, name: &[u8]) -> Result<()> {
        let _tree = self.core.tree.lock();
        let mut guard = self.data.write();
        let Data::Dir(dir) = &mut *guard else {
            return Err(Errno::ENOTDIR);
        };
        let victim = dir.get(name).ok_or(Errno::ENOENT)?;
        if !victim.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if !victim.is_empty_dir() {
            return Err(Errno::ENOTEMPTY);
        }
        let victim = dir.remove(name).expect("entry just found");
        drop(guard);
        victim.kill_dir();
        self.add_nlink(-1);
        self.touch_mc();
        Ok(())
    }

    fn rename(&self, old_name: &[u8], new_dir: &Arc<dyn Inode>, new_name: &[u8], flags: u32) -> Result<()> {
        check_name(new_name)?;
        if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & (RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 {
            return Err(Errno::EINVAL);
        }
        let new_dir = new_dir.as_any().downcast_ref::<RamInode>().ok_or(Errno::EXDEV)?.arc();
        if !Arc::ptr_eq(&new_dir.core, &self.core) {
            return Err(Errno::EXDEV);
        }
        let _tree = self.core.tree.lock();
        let lookup = |d: &RamInode, name: &[u8]| -> Result<Option<Arc<RamInode>>> {
            match &*d.data.read() {
                Data::Dir(dir) => Ok(dir.get(name).cloned()),
                _ => Err(Errno::ENOTDIR),
            }
        };
        let src = lookup(self, old_name)?.ok_or(Errno::ENOENT)?;
        let dst = lookup(&new_dir, new_name)?;
        if let Data::Dir(d) = &*new_dir.data.read() {
            if d.dead {
                return Err(Errno::ENOENT);
            }
        }
        let src_is_dir = src.is_dir();
        if src_is_dir && src.is_ancestor_of(&new_dir) {
            return Err(Errno::EINVAL);
        }
        if let Some(dst) = &dst {
            if flags & RENAME_NOREPLACE != 0 {
                return Err(Errno::EEXIST);
            }
            if dst.ino == src.ino {
                return Ok(());
            }
            match (src_is_dir, dst.is_dir()) {
                (true, false) => return Err(Errno::ENOTDIR),
                (false, true) => return Err(Errno::EISDIR),
                (true, true) if !dst.is_empty_dir() => return Err(Errno::ENOTEMPTY),
                _ => {}
            }
        }
        let same_dir = new_dir.ino == self.ino;
        // Remove the source first, then the victim, then insert.
        if let Data::Dir(d) = &mut *self.data.write() {
            d.remove(old_name);
        }
        if let Some(dst) = &dst {
            if let Data::Dir(d) = &mut *new_dir.data.write() {
                d.remove(new_name);
            }
            if dst.is_dir() {
                dst.kill_dir();
                new_dir.add_nlink(-1);
            } else {
                dst.add_nlink(-1);
                dst.touch_c();
            }
        }
        if let Data::Dir(d) = &mut *new_dir.data.write() {
            d.insert(new_name, src.clone());
        }
        if src_is_dir && !same_dir {
            if let Data::Dir(d) = &mut *src.data.write() {
                d.parent = Arc::downgrade(&new_dir);
            }
            self.add_nlink(-1);
            new_dir.add_nlink(1);
        }
        src.touch_c();
        self.touch_mc();
        if !same_dir {
            new_dir.touch_mc();
        }
        Ok(())
    }

    fn readdir(&self, cursor: u64) -> Result<Option<(DirEntry, u64)>> {
        let guard = self.data.read();
        let Data::Dir(dir) = &*guard else {
            return Err(Errno::ENOTDIR);
        };
        if dir.dead {
            return Err(Errno::ENOENT);
        }
        let dir_entry = |ino, name: &[u8]| DirEntry {
            ino,
            name: name.to_vec(),
            file_type: FileType::Directory,
        };
        match cursor {
            0 => Ok(Some((dir_entry(self.ino, b"."), 1))),
            1 => {
                let parent = dir.parent.upgrade().map_or(self.ino, |p| p.ino);
                Ok(Some((dir_entry(parent, b".."), FIRST_COOKIE)))
            }
            _ => Ok(dir.entries.range(cursor..).next().map(|(&cookie, (name, inode))| {
                let file_type = FileType::from_mode(inode.meta.lock().mode).unwrap_or(FileType::Regular);
                (
                    DirEntry {
                        ino: inode.ino,
                        name: name.clone(),
                        file_type,
                    },
                    cookie + 1,
                )
            })),
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        match &*self.data.read() {
            Data::File(p) => Ok(p.read(offset, buf)),
            Data::Dir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Copies from the file's pages without holding its lock across the
    /// copy (a fault on the destination may need this very file, mapped):
    /// each page is taken by reference under the lock, then copied.
    fn read_iter(&self, offset: u64, to: &mut dyn IovIter) -> Result<usize> {
        let mut done = 0usize;
        while to.count() > 0 {
            let pos = offset.saturating_add(done as u64);
            let (index, in_page) = (pos / PAGE_SIZE as u64, (pos % PAGE_SIZE as u64) as usize);
            let (page, chunk) = match &*self.data.read() {
                Data::File(p) if pos < p.size => {
                    let chunk = (PAGE_SIZE - in_page).min(to.count()).min((p.size - pos) as usize);
                    (p.pages.get(&index).cloned(), chunk)
                }
                Data::File(_) => break,
                Data::Dir(_) => return Err(Errno::EISDIR),
                _ => return Err(Errno::EINVAL),
            };
            let copied = match page {
                Some(page) => page.copy_to_iter(in_page, chunk, to),
                None => crate::iov_iter::iov_iter_zero(to, chunk),
            };
            done += copied;
            if copied < chunk {
                return crate::inode::copied_or_efault(chunk, done);
            }
        }
        Ok(done)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> Result<usize> {
        let n = match &mut *self.data.write() {
            Data::File(p) => p.write(&self.core, offset, buf)?,
            Data::Dir(_) => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        };
        if n > 0 {
            self.touch_mc();
        }
        Ok(n)
    }

    fn append(&self, buf: &[u8]) -> Result<(usize, u64)> {
        let (n, end) = match &mut *self.data.write() {
            Data::File(p) => {
                let n = p.write(&self.core, p.size, buf)?;
                (n, p.size)
            }
            Data::Dir(_) => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        };
        if n > 0 {
            self.touch_mc();
        }
        Ok((n, end))
    }

    fn truncate(&self, size: u64) -> Result<()> {
        if size > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        match &mut *self.data.write() {
            Data::File(p) => p.truncate(&self.core, size),
            Data::Dir(_) => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
        self.touch_mc();
        Ok(())
    }

    fn mmap_capable(&self) -> bool {
        matches!(&*self.data.read(), Data::File(_))
    }

    fn data_frame(&self, index: u64, create: bool) -> Result<Option<u64>> {
        if let Data::File(p) = &*self.data.read() {
            if let Some(page) = p.pages.get(&index) {
                return Ok(page.get_frame());
            }
            if !create {
                return Ok(None);
            }
        } else {
            return Err(Errno::ENODEV);
        }
        let mut guard = self.data.write();
        let Data::File(p) = &mut *guard else {
            return Err(Errno::ENODEV);
        };
        if index >= p.size.div_ceil(PAGE_SIZE as u64) {
            return Ok(None);
        }
        let page = match p.pages.entry(index) {
            alloc::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            alloc::collections::btree_map::Entry::Vacant(v) => v.insert(new_page(&self.core)?),
        };
        Ok(page.get_frame())
    }

    fn readlink(&self) -> Result<Vec<u8>> {
        match &*self.data.read() {
            Data::Symlink(t) => Ok(t.clone()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn chmod(&self, mode: u32) -> Result<()> {
        self.change_attrs(|m| m.mode = (m.mode & S_IFMT) | (mode & S_IALLUGO));
        Ok(())
    }

    fn chown(&self, uid: Option<u32>, gid: Option<u32>) -> Result<()> {
        self.change_attrs(|m| {
            m.uid = uid.unwrap_or(m.uid);
            m.gid = gid.unwrap_or(m.gid);
        });
        Ok(())
    }

    fn set_times(&self, atime: Option<Timespec>, mtime: Option<Timespec>) -> Result<()> {
        self.change_attrs(|m| {
            m.atime = atime.unwrap_or(m.atime);
            m.mtime = mtime.unwrap_or(m.mtime);
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inode::EpochClock;
    extern crate std;

    fn fs() -> Arc<RamFs> {
        RamFs::new(Arc::new(EpochClock))
    }

    #[test]
    fn read_iter_gives_read_at_bytes_across_pages_and_holes() {
        let fs = fs();
        let f = fs.root().create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        f.write_at(4090, b"0123456789").unwrap();
        f.write_at(3 * 4096 + 1, b"xyz").unwrap();
        for (off, len) in [
            (0, 20_000),
            (4090, 10),
            (4095, 3 * 4096),
            (3 * 4096 + 3, 9),
            (20_000, 5),
        ] {
            let mut want = alloc::vec![0u8; len];
            let n = f.read_at(off, &mut want).unwrap();
            let mut got = alloc::vec![0xaau8; len];
            let mut it = crate::KernelIter::new(&mut got);
            assert_eq!(f.read_iter(off, &mut it).unwrap(), n, "at {off}+{len}");
            assert_eq!(got[..n], want[..n], "at {off}+{len}");
        }
    }

    /// A destination that takes `room` bytes, then faults.
    struct Faulting(usize, usize);

    impl IovIter for Faulting {
        fn count(&self) -> usize {
            self.1
        }
        fn copy_to_iter(&mut self, data: &[u8]) -> usize {
            let n = data.len().min(self.0).min(self.1);
            self.0 -= n;
            self.1 -= n;
            n
        }
    }

    #[test]
    fn read_iter_into_a_faulting_destination_is_short_or_efault() {
        let fs = fs();
        let f = fs.root().create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        f.write_at(0, &[1u8; 9000]).unwrap();
        assert_eq!(f.read_iter(0, &mut Faulting(5000, 8000)), Ok(5000));
        assert_eq!(f.read_iter(10, &mut Faulting(0, 100)), Err(Errno::EFAULT));
        // Nothing to give: no fault, as Linux's read at end of file.
        assert_eq!(f.read_iter(9000, &mut Faulting(0, 100)), Ok(0));
    }

    #[test]
    fn sparse_files_read_zeros_in_holes_and_count_only_written_pages() {
        let fs = fs();
        let f = fs.root().create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        assert_eq!(f.write_at(3 * 4096 + 10, b"abc").unwrap(), 3);
        let m = f.metadata();
        assert_eq!(m.size, 3 * 4096 + 13);
        assert_eq!(m.blocks, 8);
        let mut buf = [0xffu8; 20];
        assert_eq!(f.read_at(3 * 4096, &mut buf).unwrap(), 13);
        assert_eq!(&buf[..13], b"\0\0\0\0\0\0\0\0\0\0abc");
        assert_eq!(f.read_at(100, &mut buf).unwrap(), 20);
        assert!(buf.iter().all(|&b| b == 0));
        assert_eq!(f.write_at(u64::MAX - 1, b"abc"), Err(Errno::EFBIG));
    }

    #[test]
    fn truncate_then_extend_reads_zeros() {
        let fs = fs();
        let f = fs.root().create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        f.write_at(0, &[7u8; 5000]).unwrap();
        f.truncate(10).unwrap();
        f.truncate(5000).unwrap();
        let mut buf = [0xffu8; 5000];
        assert_eq!(f.read_at(0, &mut buf).unwrap(), 5000);
        assert!(buf[..10].iter().all(|&b| b == 7));
        assert!(buf[10..].iter().all(|&b| b == 0));
    }

    #[test]
    fn readdir_cursors_survive_removal() {
        let fs = fs();
        let root = fs.root();
        for n in [b"a", b"b", b"c", b"d"] {
            root.create(n, NodeKind::Regular, 0o644, 0, 0).unwrap();
        }
        let mut names = Vec::new();
        let mut cursor = 0;
        while let Some((e, next)) = root.readdir(cursor).unwrap() {
            if e.name != b"." && e.name != b".." {
                // Remove each entry as it is returned, like `rm -rf`.
                root.unlink(&e.name).unwrap();
            }
            names.push(e.name);
            cursor = next;
        }
        assert_eq!(names, [&b"."[..], b"..", b"a", b"b", b"c", b"d"]);
    }

    #[test]
    fn directory_link_counts() {
        let fs = fs();
        let root = fs.root();
        assert_eq!(root.metadata().nlink, 2);
        let d = root.create(b"d", NodeKind::Directory, 0o755, 0, 0).unwrap();
        assert_eq!(root.metadata().nlink, 3);
        d.create(b"e", NodeKind::Directory, 0o755, 0, 0).unwrap();
        assert_eq!(d.metadata().nlink, 3);
        root.rename(b"d", &d.lookup(b"e").unwrap(), b"x", 0).unwrap_err();
        assert_eq!(root.rmdir(b"d"), Err(Errno::ENOTEMPTY));
        d.rmdir(b"e").unwrap();
        root.rmdir(b"d").unwrap();
        assert_eq!(root.metadata().nlink, 2);
        assert_eq!(d.metadata().nlink, 0);
        assert_eq!(
            d.create(b"z", NodeKind::Regular, 0o644, 0, 0).err(),
            Some(Errno::ENOENT)
        );
    }

    #[test]
    fn writes_past_the_size_limit_fail_with_enospc_and_unlink_then_close_frees_the_pages() {
        let fs = RamFs::with_limit(Arc::new(EpochClock), "tmpfs", Some(4 * 4096));
        let root = fs.root();
        let f = root.create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        // A short write up to the limit, then ENOSPC.
        assert_eq!(f.write_at(0, &[1u8; 5 * 4096]).unwrap(), 4 * 4096);
        assert_eq!(f.append(b"x"), Err(Errno::ENOSPC));
        let g = root.create(b"g", NodeKind::Regular, 0o644, 0, 0).unwrap();
        assert_eq!(g.write_at(0, b"y"), Err(Errno::ENOSPC));
        // Rewriting pages already held needs no more space.
        assert_eq!(f.write_at(100, b"abc").unwrap(), 3);
        // Unlinked but still open (`f` is a reference): still charged.
        root.unlink(b"f").unwrap();
        assert_eq!(fs.usage().used_pages, 4);
        assert_eq!(g.write_at(0, b"y"), Err(Errno::ENOSPC));
        // The last reference goes: the pages return to the filesystem.
        drop(f);
        assert_eq!(fs.usage().used_pages, 0);
        assert_eq!(g.write_at(0, &[2u8; 4 * 4096]).unwrap(), 4 * 4096);
        assert_eq!(
            fs.usage(),
            RamFsUsage {
                max_pages: 4,
                used_pages: 4
            }
        );
    }

    #[test]
    fn truncate_uncharges_the_pages_it_drops() {
        let fs = RamFs::with_limit(Arc::new(EpochClock), "tmpfs", Some(3 * 4096));
        let f = fs.root().create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        f.write_at(0, &[1u8; 3 * 4096]).unwrap();
        f.truncate(4096 + 1).unwrap();
        assert_eq!(fs.usage().used_pages, 2);
        assert_eq!(f.write_at(8 * 4096, b"z").unwrap(), 1);
        assert_eq!(f.write_at(9 * 4096, b"z"), Err(Errno::ENOSPC));
        f.truncate(0).unwrap();
        assert_eq!(fs.usage().used_pages, 0);
    }

    #[test]
    fn dropping_a_deep_directory_chain_does_not_recurse() {
        // 20 000 levels on a 256 KiB stack: a recursive drop needs several
        // hundred bytes a level and overflows; the iterative one does not.
        let t = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let fs = RamFs::with_limit(Arc::new(EpochClock), "tmpfs", Some(4096));
                let mut dir = fs.root();
                for _ in 0..20_000 {
                    dir = dir.create(b"d", NodeKind::Directory, 0o755, 0, 0).unwrap();
                }
                let f = dir.create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
                f.write_at(0, b"data").unwrap();
                drop((dir, f));
                let usage_before = fs.usage().used_pages;
                drop(fs);
                usage_before
            })
            .unwrap();
        assert_eq!(t.join().unwrap(), 1);
    }

    #[test]
    fn tmpfs_size_option_is_parsed_as_linux_does() {
        let ram = 1 << 30;
        assert_eq!(tmpfs_size_limit(b"", ram), Ok(Some(ram / 2)));
        assert_eq!(tmpfs_size_limit(b"size=1m", ram), Ok(Some(1 << 20)));
        assert_eq!(tmpfs_size_limit(b"mode=1777,size=10K", ram), Ok(Some(12 << 10)));
        assert_eq!(tmpfs_size_limit(b"size=25%", ram), Ok(Some(ram / 4)));
        assert_eq!(tmpfs_size_limit(b"nr_blocks=3", ram), Ok(Some(3 * 4096)));
        assert_eq!(tmpfs_size_limit(b"size=0", ram), Ok(None));
        assert_eq!(tmpfs_size_limit(b"size=", ram), Err(Errno::EINVAL));
        assert_eq!(tmpfs_size_limit(b"size=1x", ram), Err(Errno::EINVAL));
        assert_eq!(tmpfs_size_limit(b"bogus", ram), Err(Errno::EINVAL));
    }

    /// Pages that say they are frames: each gets a fake physical address,
    /// and references taken on it are counted.
    struct FakeFrames(Arc<AtomicU64>);

    struct FakeFrame(u64, Arc<AtomicU64>, Mutex<[u8; PAGE_SIZE]>);

    impl DataPage for FakeFrame {
        fn read(&self, offset: usize, buf: &mut [u8]) {
            buf.copy_from_slice(&self.2.lock()[offset..offset + buf.len()]);
        }
        fn write(&self, offset: usize, data: &[u8]) {
            self.2.lock()[offset..offset + data.len()].copy_from_slice(data);
        }
        fn get_frame(&self) -> Option<u64> {
            self.1.fetch_add(1, Ordering::Relaxed);
            Some(self.0)
        }
    }

    impl PageAlloc for FakeFrames {
        fn alloc_zeroed(&self) -> Option<Arc<dyn DataPage>> {
            static NEXT: AtomicU64 = AtomicU64::new(0x4000_0000);
            let pa = NEXT.fetch_add(PAGE_SIZE as u64, Ordering::Relaxed);
            Some(Arc::new(FakeFrame(pa, self.0.clone(), Mutex::new([0; PAGE_SIZE]))))
        }
    }

    #[test]
    fn data_frame_gives_the_files_frame_with_a_reference_and_fills_holes_only_inside_the_size() {
        let refs = Arc::new(AtomicU64::new(0));
        let fs = RamFs::with_pages(Arc::new(EpochClock), "tmpfs", None, Arc::new(FakeFrames(refs.clone())));
        let root = fs.root();
        let f = root.create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        assert!(f.mmap_capable() && !root.mmap_capable());
        f.write_at(0, b"abc").unwrap();
        f.truncate(3 * 4096).unwrap();
        let first = f.data_frame(0, false).unwrap().expect("page 0 is written");
        assert_eq!(f.data_frame(0, true).unwrap(), Some(first), "the same frame every time");
        assert_eq!(refs.load(Ordering::Relaxed), 2, "one reference per call");
        // A hole: absent unless asked to create, then a charged page.
        assert_eq!(f.data_frame(2, false).unwrap(), None);
        assert_eq!(fs.usage().used_pages, 1);
        assert!(f.data_frame(2, true).unwrap().is_some());
        assert_eq!(fs.usage().used_pages, 2);
        // Past the size, nothing is created.
        assert_eq!(f.data_frame(3, true).unwrap(), None);
        assert_eq!(root.data_frame(0, true), Err(Errno::ENODEV));
        // Heap pages are not frames.
        let heap = RamFs::new(Arc::new(EpochClock));
        let g = heap.root().create(b"g", NodeKind::Regular, 0o644, 0, 0).unwrap();
        g.write_at(0, b"x").unwrap();
        assert_eq!(g.data_frame(0, true).unwrap(), None);
    }

    #[test]
    fn tmpfs_directory_size_counts_entries_as_shmem() {
        let fs = RamFs::with_type(Arc::new(EpochClock), "tmpfs");
        let root = fs.root();
        assert_eq!(root.metadata().size, 40);
        root.create(b"a", NodeKind::Regular, 0o644, 0, 0).unwrap();
        root.create(b"d", NodeKind::Directory, 0o755, 0, 0).unwrap();
        assert_eq!(root.metadata().size, 80);
        assert_eq!(RamFs::new(Arc::new(EpochClock)).root().metadata().size, 0, "ramfs");
    }

    #[test]
    fn statfs_reports_the_tmpfs_limit_and_what_is_free() {
        let fs = RamFs::with_limit(Arc::new(EpochClock), "tmpfs", Some(16 * 4096));
        let f = fs.root().create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        f.write_at(0, &[1u8; 8192]).unwrap();
        let st = fs.statfs();
        assert_eq!(
            (st.fs_type, st.bsize, st.blocks, st.bfree, st.bavail),
            (TMPFS_MAGIC, 4096, 16, 14, 14)
        );
        let st = RamFs::with_type(Arc::new(EpochClock), "ramfs").statfs();
        assert_eq!((st.fs_type, st.blocks, st.bfree), (RAMFS_MAGIC, 0, 0));
    }
}
