//! Mounts, [`Path`]s and the [`Vfs`] that ties them together.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::RwLock;
use uapi::Errno;

use crate::device::DeviceRegistry;
use crate::inode::{FileSystem, Inode, Metadata};
use crate::Result;

/// A filesystem (or a subtree of one, for bind mounts) attached to the tree.
pub struct Mount {
    id: u64,
    fs: Arc<dyn FileSystem>,
    root: Arc<dyn Inode>,
    /// The mount and directory this one covers; `None` for the root mount.
    parent: Option<(Arc<Mount>, Arc<dyn Inode>)>,
}

impl Mount {
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    pub fn root(&self) -> &Arc<dyn Inode> {
        &self.root
    }

    /// Where this mount is attached; `None` for the root mount.
    pub fn mountpoint(&self) -> Option<Path> {
        self.parent.as_ref().map(|(m, i)| Path {
            mnt: m.clone(),
            inode: i.clone(),
        })
    }
}

/// A place in the tree: a mount and an inode in it, as Linux's
/// `struct path`. A task's cwd and root are `Path`s; so is where an open
/// file was opened.
#[derive(Clone)]
pub struct Path {
    pub mnt: Arc<Mount>,
    pub inode: Arc<dyn Inode>,
}

impl Path {
    pub fn metadata(&self) -> Metadata {
        self.inode.metadata()
    }

    pub fn is_dir(&self) -> bool {
        self.inode.metadata().is_dir()
    }

    /// Same mount and same inode.
    pub fn same(&self, other: &Path) -> bool {
        self.mnt.id == other.mnt.id && self.inode.ino() == other.inode.ino()
    }

    fn is_mount_root(&self) -> bool {
        self.inode.ino() == self.mnt.root.ino()
    }

    /// The name a directory is known by in its parent (Linux's
    /// `dentry->d_name` of the directory): `/` for the root of a mount
    /// (Linux names every filesystem's root dentry `/`), else the entry
    /// its parent holds it under. Empty when no parent lists it (a
    /// removed directory, or a filesystem without parent links).
    pub fn d_name(&self) -> Vec<u8> {
        if self.is_mount_root() {
            return b"/".to_vec();
        }
        match self.inode.parent() {
            Some(parent) if parent.ino() != self.inode.ino() => name_in(&parent, self.inode.ino()).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

impl core::fmt::Debug for Path {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Path(mnt {}, ino {})", self.mnt.id, self.inode.ino())
    }
}

/// The virtual filesystem: the mount tree, rooted at one filesystem, and
/// the device registry that device nodes open through.
pub struct Vfs {
    root_mnt: Arc<Mount>,
    mounts: RwLock<Vec<Arc<Mount>>>,
    devices: Arc<dyn DeviceRegistry>,
    next_id: AtomicU64,
}

impl Vfs {
    /// A tree whose root is `root_fs`'s root.
    pub fn new(root_fs: Arc<dyn FileSystem>, devices: Arc<dyn DeviceRegistry>) -> Vfs {
        let root = root_fs.root();
        let root_mnt = Arc::new(Mount {
            id: 1,
            fs: root_fs,
            root,
            parent: None,
        });
        Vfs {
            root_mnt,
            mounts: RwLock::new(Vec::new()),
            devices,
            next_id: AtomicU64::new(2),
        }
    }

    /// `/`.
    pub fn root(&self) -> Path {
        self.follow_mounts(Path {
            mnt: self.root_mnt.clone(),
            inode: self.root_mnt.root.clone(),
        })
    }

    pub fn devices(&self) -> &Arc<dyn DeviceRegistry> {
        &self.devices
    }

    /// Mounts `fs` on the directory `at` (ENOTDIR otherwise). The kernel
    /// checks the caller's privilege (EPERM) before.
    pub fn mount(&self, fs: Arc<dyn FileSystem>, at: &Path) -> Result<Arc<Mount>> {
        let root = fs.root();
        self.attach(fs, root, at)
    }

    /// Makes the subtree at `src` visible at `at` too (`mount --bind`).
    pub fn bind_mount(&self, src: &Path, at: &Path) -> Result<Arc<Mount>> {
        if !src.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        self.attach(src.mnt.fs.clone(), src.inode.clone(), at)
    }

    fn attach(&self, fs: Arc<dyn FileSystem>, root: Arc<dyn Inode>, at: &Path) -> Result<Arc<Mount>> {
        if !at.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let mnt = Arc::new(Mount {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            fs,
            root,
            parent: Some((at.mnt.clone(), at.inode.clone())),
        });
        self.mounts.write().push(mnt.clone());
        Ok(mnt)
    }

    /// Detaches the mount whose root is `at`: EINVAL if `at` is not a mount
    /// root or is `/`, EBUSY if something is mounted below it or anything
    /// (an open file, a cwd) still uses it.
    pub fn umount(&self, at: &Path) -> Result<()> {
        if !at.is_mount_root() || at.mnt.parent.is_none() {
            return Err(Errno::EINVAL);
        }
        let mut mounts = self.mounts.write();
        if mounts
            .iter()
            .any(|m| m.parent.as_ref().is_some_and(|(p, _)| p.id == at.mnt.id))
        {
            return Err(Errno::EBUSY);
        }
        // The table and `at` hold one reference each.
        if Arc::strong_count(&at.mnt) > 2 {
            return Err(Errno::EBUSY);
        }
        // The filesystem's tree may be torn down when the last reference
        // goes: not under the mount table's lock.
        let gone: Vec<Arc<Mount>> = mounts.extract_if(.., |m| m.id == at.mnt.id).collect();
        drop(mounts);
        drop(gone);
        Ok(())
    }

    /// Every mount, the root first, in mount order (for /proc/mounts).
    pub fn mounts(&self) -> Vec<Arc<Mount>> {
        let mut v = alloc::vec![self.root_mnt.clone()];
        v.extend(self.mounts.read().iter().cloned());
        v
    }

    /// If a filesystem is mounted on `p`, the root of the topmost one.
    pub(crate) fn follow_mounts(&self, mut p: Path) -> Path {
        loop {
            let top = {
                let mounts = self.mounts.read();
                mounts
                    .iter()
                    .rev()
                    .find(|m| {
                        m.parent
                            .as_ref()
                            .is_some_and(|(pm, mp)| pm.id == p.mnt.id && mp.ino() == p.inode.ino())
                    })
                    .cloned()
            };
            match top {
                Some(m) => {
                    p = Path {
                        inode: m.root.clone(),
                        mnt: m,
                    }
                }
                None => return p,
            }
        }
    }

    /// `..` from `p`: up through mount roots to their mountpoints, never
    /// above `/`.
    pub(crate) fn dotdot(&self, p: &Path) -> Path {
        let root = self.root();
        let mut cur = p.clone();
        loop {
            if cur.same(&root) {
                return cur;
            }
            if !cur.is_mount_root() {
                break;
            }
            match &cur.mnt.parent {
                Some((m, i)) => {
                    cur = Path {
                        mnt: m.clone(),
                        inode: i.clone(),
                    }
                }
                None => return cur,
            }
        }
        let parent = cur.inode.parent().unwrap_or_else(|| cur.inode.clone());
        Path {
            mnt: cur.mnt,
            inode: parent,
        }
    }

    /// The absolute name of `p`, as getcwd(2) gives it; ENOENT if the
    /// directory was removed. The kernel returns ERANGE itself if the
    /// user's buffer cannot hold the name and its NUL.
    pub fn getcwd(&self, p: &Path) -> Result<Vec<u8>> {
        let meta = p.metadata();
        if meta.is_dir() && meta.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let root = self.root();
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut cur = p.clone();
        loop {
            if cur.same(&root) {
                break;
            }
            if cur.is_mount_root() {
                match &cur.mnt.parent {
                    Some((m, i)) => {
                        cur = Path {
                            mnt: m.clone(),
                            inode: i.clone(),
                        };
                        continue;
                    }
                    None => break,
                }
            }
            let parent = cur.inode.parent().ok_or(Errno::ENOENT)?;
            if parent.ino() == cur.inode.ino() {
                return Err(Errno::ENOENT);
            }
            names.push(name_in(&parent, cur.inode.ino())?);
            cur = Path {
                mnt: cur.mnt,
                inode: parent,
            };
        }
        let mut out = Vec::new();
        for n in names.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(n);
        }
        if out.is_empty() {
            out.push(b'/');
        }
        Ok(out)
    }
}

/// The name under which `dir` holds the inode numbered `ino`.
fn name_in(dir: &Arc<dyn Inode>, ino: u64) -> Result<Vec<u8>> {
    let mut cursor = 0;
    while let Some((e, next)) = dir.readdir(cursor)? {
        if e.ino == ino && e.name != b"." && e.name != b".." {
            return Ok(e.name);
        }
        cursor = next;
    }
    Err(Errno::ENOENT)
}
