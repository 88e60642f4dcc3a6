//! A filesystem of generated files, the layer under debugfs and tracefs.
//!
//! Files come in two kinds. A *generated* file makes its whole content
//! once per open, at the first read (as a seq_file would for its first
//! page): an open file reads a consistent snapshot, and reading a large
//! file is linear, not one regeneration per read(2). It may take writes
//! (appends, since such files have no data at offsets) and be told of
//! O_TRUNC opens (tracefs's `trace` clears its buffer then). A file with
//! *its own operations* gets a fresh [`FileOps`] per open from its maker,
//! with per-open state, blocking reads (EAGAIN plus a wait queue) and
//! poll through the VFS's hooks, as `trace_pipe` needs.
//!
//! Directories and files can be added and removed while the system runs.
//! Removal follows debugfs: an open file of a removed entry stays safe to
//! use, and its reads and writes then fail with EIO; a removed directory
//! looks empty and nothing can be found in it. Removing a non-empty
//! directory is ENOTEMPTY; removing a tree that has open files is EBUSY
//! (as rmdir of a busy tracefs instance).

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use uapi::Errno;
use vfs::file::{FileOps, OpenFile};
use vfs::wait::WaitQueueHead;
use vfs::{DirEntry, FileSystem, FileType, Inode, Metadata};

static NEXT_INO: AtomicU64 = AtomicU64::new(1);

/// Makes a file's content (once per open).
pub type ReadFn = Box<dyn Fn() -> Vec<u8> + Send + Sync>;
/// Takes a write to a file (whole buffer; returns bytes consumed).
pub type WriteFn = Box<dyn Fn(&[u8]) -> Result<usize, Errno> + Send + Sync>;
/// Called when the file is opened with O_TRUNC.
pub type TruncFn = Box<dyn Fn() + Send + Sync>;
/// Makes the operations of one open of a file (given the open flags).
pub type OpenFn = Box<dyn Fn(u32) -> Result<Arc<dyn FileOps>, Errno> + Send + Sync>;
/// mkdir or rmdir of `name` in a directory that takes them (tracefs's
/// `instances`): the maker adds or removes the entry itself.
pub type DirOpFn = Box<dyn Fn(&str) -> Result<(), Errno> + Send + Sync>;

/// What mkdir(2) and rmdir(2) do in a directory that takes them.
struct DirOps {
    mkdir: DirOpFn,
    rmdir: DirOpFn,
}

/// The first readdir cursor after `.` and `..`.
const FIRST_COOKIE: u64 = 2;

enum Content {
    Generated {
        read: ReadFn,
        write: Option<WriteFn>,
        trunc: Option<TruncFn>,
    },
    Ops(OpenFn),
}

/// The owner and group a filesystem's mount options give its files
/// (tracefs's `uid=`, `gid=`, `mode=`), and what `/proc/mounts` shows.
/// A remount that gives `uid=` (or `gid=`) gives it to every file, even
/// those changed by chown since, as Linux's `tracefs_apply_options`: each
/// option has a generation, and a file's own owner counts only while it
/// was set in the current one. A file never changed takes the owner of
/// its instance directory (the directory users make instances in, such as
/// tracefs's `instances`) if chown set it, else the mount's, as Linux's
/// `set_tracefs_inode_owner`.
pub struct MountOwner {
    uid: AtomicU32,
    gid: AtomicU32,
    uid_gen: AtomicU32,
    gid_gen: AtomicU32,
    /// Permission bits of the root directory (`mode=`).
    root_mode: AtomicU32,
    /// The options of the last mount, for `/proc/mounts`.
    shown: spin::Mutex<(u32, u32, u32)>,
    default_mode: u32,
}

impl MountOwner {
    fn new(root_mode: u32) -> MountOwner {
        MountOwner {
            uid: AtomicU32::new(0),
            gid: AtomicU32::new(0),
            uid_gen: AtomicU32::new(0),
            gid_gen: AtomicU32::new(0),
            root_mode: AtomicU32::new(root_mode),
            shown: spin::Mutex::new((0, 0, root_mode)),
            default_mode: root_mode,
        }
    }

    /// The ownership of a new file under an instance directory whose own
    /// setting is `inherit` (None outside one): nothing of its own yet.
    fn node(&self, inherit: Option<Arc<spin::Mutex<NodeOwner>>>) -> Ownership {
        Ownership {
            own: Arc::new(spin::Mutex::new(NodeOwner {
                uid: 0,
                gid: 0,
                uid_gen: UNSET_GEN,
                gid_gen: UNSET_GEN,
            })),
            inherit,
        }
    }

    /// The owner and group of a file (see the type's documentation).
    fn effective(&self, own: &Ownership) -> (u32, u32) {
        let (uid_gen, gid_gen) = (
            self.uid_gen.load(Ordering::Acquire),
            self.gid_gen.load(Ordering::Acquire),
        );
        let (mut uid, mut gid) = (self.uid.load(Ordering::Acquire), self.gid.load(Ordering::Acquire));
        for o in own.inherit.iter().chain(core::iter::once(&own.own)) {
            let o = o.lock();
            if o.uid_gen == uid_gen {
                uid = o.uid;
            }
            if o.gid_gen == gid_gen {
                gid = o.gid;
            }
        }
        (uid, gid)
    }

    /// chown(2): sets the owner, the group or both (Linux's
    /// `TRACEFS_UID_PERM_SET` and `TRACEFS_GID_PERM_SET`).
    fn chown(&self, own: &Ownership, uid: Option<u32>, gid: Option<u32>) {
        let mut o = own.own.lock();
        if let Some(u) = uid {
            o.uid = u;
            o.uid_gen = self.uid_gen.load(Ordering::Acquire);
        }
        if let Some(g) = gid {
            o.gid = g;
            o.gid_gen = self.gid_gen.load(Ordering::Acquire);
        }
    }

    /// Applies mount(2)'s data string (`uid=N,gid=N,mode=OCT`, Linux's
    /// `tracefs_parse_param` and `tracefs_apply_options`): the options
    /// given take effect on every file; `/proc/mounts` shows this mount's
    /// options. EINVAL, with nothing changed, for anything else.
    pub fn apply_options(&self, data: &[u8]) -> Result<(), Errno> {
        let text = core::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
        let text = text.trim_end_matches('\0');
        let (mut uid, mut gid, mut mode) = (None, None, None);
        for opt in text.split(',').filter(|o| !o.is_empty()) {
            // Superblock flags the VFS takes from the string before the
            // filesystem sees it (Linux's vfs_parse_sb_flag).
            if matches!(opt, "dirsync" | "lazytime" | "mand" | "posixacl" | "ro" | "rw" | "sync") {
                continue;
            }
            let (key, val) = opt.split_once('=').ok_or(Errno::EINVAL)?;
            let dec = || val.parse::<u32>().map_err(|_| Errno::EINVAL);
            match key {
                "uid" => uid = Some(dec()?),
                "gid" => gid = Some(dec()?),
                "mode" => mode = Some(u32::from_str_radix(val, 8).map_err(|_| Errno::EINVAL)? & 0o7777),
                _ => return Err(Errno::EINVAL),
            }
        }
        if let Some(u) = uid {
            self.uid.store(u, Ordering::Release);
            self.uid_gen.fetch_add(1, Ordering::AcqRel);
        }
        if let Some(g) = gid {
            self.gid.store(g, Ordering::Release);
            self.gid_gen.fetch_add(1, Ordering::AcqRel);
        }
        if let Some(m) = mode {
            self.root_mode.store(m, Ordering::Release);
        }
        *self.shown.lock() = (uid.unwrap_or(0), gid.unwrap_or(0), mode.unwrap_or(self.default_mode));
        Ok(())
    }

    /// What `/proc/mounts` shows after `rw,relatime` (Linux's
    /// `tracefs_show_options`).
    pub fn show_options(&self) -> alloc::string::String {
        let (uid, gid, mode) = *self.shown.lock();
        let mut s = alloc::string::String::new();
        if uid != 0 {
            s.push_str(&alloc::format!(",uid={uid}"));
        }
        if gid != 0 {
            s.push_str(&alloc::format!(",gid={gid}"));
        }
        if mode != self.default_mode {
            s.push_str(&alloc::format!(",mode={mode:o}"));
        }
        s
    }
}

/// The generation of an owner or group never set (generations count
/// mounts from 0).
const UNSET_GEN: u32 = u32::MAX;

/// A file's own owner and group, and the option generations they were
/// set in.
struct NodeOwner {
    uid: u32,
    gid: u32,
    uid_gen: u32,
    gid_gen: u32,
}

/// A file's ownership: its own setting, and that of the instance
/// directory it lies under (see [`MountOwner`]).
struct Ownership {
    own: Arc<spin::Mutex<NodeOwner>>,
    inherit: Option<Arc<spin::Mutex<NodeOwner>>>,
}

/// A generated file.
pub struct PseudoFile {
    ino: u64,
    dev: u64,
    mode: u32,
    owner: Arc<MountOwner>,
    own: Ownership,
    content: Content,
    /// Set when removed from its directory: open files then get EIO.
    removed: AtomicBool,
    /// Open files of this file (for EBUSY on removing its tree).
    opens: AtomicUsize,
    /// Itself, for the open files that keep it.
    this: Weak<PseudoFile>,
}

/// A named child of a directory.
#[derive(Clone)]
enum Node {
    File(Arc<PseudoFile>),
    Dir(Arc<PseudoDir>),
}

impl Node {
    fn inode(&self) -> Arc<dyn Inode> {
        match self {
            Node::File(f) => f.clone(),
            Node::Dir(d) => d.clone(),
        }
    }
}

struct DirState {
    /// Children by readdir cookie, which only grows, so that cursors
    /// survive removals.
    entries: BTreeMap<u64, (Vec<u8>, Node)>,
    next_cookie: u64,
    /// Removed: empty, and nothing can be added.
    dead: bool,
}

impl DirState {
    fn find(&self, name: &[u8]) -> Option<(u64, &Node)> {
        self.entries
            .iter()
            .find(|(_, (n, _))| n == name)
            .map(|(&c, (_, node))| (c, node))
    }
}

/// A directory.
pub struct PseudoDir {
    ino: u64,
    dev: u64,
    mode: u32,
    owner: Arc<MountOwner>,
    own: Ownership,
    /// The filesystem's root, whose permission bits `mode=` sets.
    is_root: bool,
    state: spin::RwLock<DirState>,
    parent: spin::RwLock<Weak<PseudoDir>>,
    ops: spin::Once<DirOps>,
}

impl PseudoDir {
    fn new(dev: u64, owner: Arc<MountOwner>, inherit: Option<Arc<spin::Mutex<NodeOwner>>>) -> Arc<PseudoDir> {
        Arc::new(PseudoDir {
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            dev,
            mode: 0o040755,
            own: owner.node(inherit),
            owner,
            is_root: false,
            state: spin::RwLock::new(DirState {
                entries: BTreeMap::new(),
                next_cookie: FIRST_COOKIE,
                dead: false,
            }),
            parent: spin::RwLock::new(Weak::new()),
            ops: spin::Once::new(),
        })
    }

    /// Lets users make and remove subdirectories here with mkdir(2) and
    /// rmdir(2), which call `mkdir` and `rmdir` with the name (once).
    /// This makes it an instance directory (Linux's
    /// `TRACEFS_INSTANCE_INODE`), whose owner what is made under it
    /// inherits.
    pub fn set_dir_ops(&self, mkdir: DirOpFn, rmdir: DirOpFn) {
        self.ops.call_once(|| DirOps { mkdir, rmdir });
    }

    /// The ownership a new child takes after (see [`MountOwner`]).
    fn child_inherit(&self) -> Option<Arc<spin::Mutex<NodeOwner>>> {
        if self.ops.is_completed() {
            Some(self.own.own.clone())
        } else {
            self.own.inherit.clone()
        }
    }

    /// Adds `node` as `name`: EEXIST if taken, ENOENT if this directory
    /// was removed.
    fn add(&self, name: &str, node: Node) -> Result<(), Errno> {
        let mut s = self.state.write();
        if s.dead {
            return Err(Errno::ENOENT);
        }
        if s.find(name.as_bytes()).is_some() {
            return Err(Errno::EEXIST);
        }
        let cookie = s.next_cookie;
        s.next_cookie += 1;
        s.entries.insert(cookie, (name.as_bytes().to_vec(), node));
        Ok(())
    }

    /// Adds a subdirectory (for the kernel's fixed trees, where a clash is
    /// a bug: the existing directory is returned then).
    pub fn dir(self: &Arc<Self>, name: &str) -> Arc<PseudoDir> {
        match self.try_dir(name) {
            Ok(d) => d,
            Err(_) => match self.state.read().find(name.as_bytes()) {
                Some((_, Node::Dir(d))) => d.clone(),
                _ => PseudoDir::new(self.dev, self.owner.clone(), self.child_inherit()),
            },
        }
    }

    /// The subdirectory `name`, if there is one.
    pub fn lookup_dir(&self, name: &str) -> Option<Arc<PseudoDir>> {
        match self.state.read().find(name.as_bytes()) {
            Some((_, Node::Dir(d))) => Some(d.clone()),
            _ => None,
        }
    }

    /// Adds a subdirectory with permission bits `perm` (tracefs's
    /// `options/` and `per_cpu/` are 0750 as Linux's); an existing one is
    /// returned as it is.
    pub fn dir_mode(self: &Arc<Self>, name: &str, perm: u32) -> Arc<PseudoDir> {
        let mut d = PseudoDir::new(self.dev, self.owner.clone(), self.child_inherit());
        if let Some(dm) = Arc::get_mut(&mut d) {
            dm.mode = 0o040000 | (perm & 0o7777);
        }
        *d.parent.write() = Arc::downgrade(self);
        match self.add(name, Node::Dir(d.clone())) {
            Ok(()) => d,
            Err(_) => self.dir(name),
        }
    }

    /// Adds a subdirectory at run time already holding what `fill` puts
    /// in it, so that no lookup sees it half made: EEXIST if the name is
    /// taken, ENOENT if this directory was removed.
    pub fn try_dir_filled(
        self: &Arc<Self>,
        name: &str,
        fill: &dyn Fn(&Arc<PseudoDir>),
    ) -> Result<Arc<PseudoDir>, Errno> {
        let d = PseudoDir::new(self.dev, self.owner.clone(), self.child_inherit());
        *d.parent.write() = Arc::downgrade(self);
        fill(&d);
        self.add(name, Node::Dir(d.clone()))?;
        Ok(d)
    }

    /// Adds a subdirectory at run time: EEXIST if the name is taken,
    /// ENOENT if this directory was removed.
    pub fn try_dir(self: &Arc<Self>, name: &str) -> Result<Arc<PseudoDir>, Errno> {
        self.try_dir_mode(name, 0o755)
    }

    /// [`try_dir`](Self::try_dir) with permission bits `perm` (a tracefs
    /// directory outside `events/` is 0750, as Linux's `__create_dir`
    /// makes it).
    pub fn try_dir_mode(self: &Arc<Self>, name: &str, perm: u32) -> Result<Arc<PseudoDir>, Errno> {
        let mut d = PseudoDir::new(self.dev, self.owner.clone(), self.child_inherit());
        if let Some(dm) = Arc::get_mut(&mut d) {
            dm.mode = 0o040000 | (perm & 0o7777);
        }
        *d.parent.write() = Arc::downgrade(self);
        self.add(name, Node::Dir(d.clone()))?;
        Ok(d)
    }

    fn new_file(&self, perm: u32, content: Content) -> Arc<PseudoFile> {
        Arc::new_cyclic(|this| PseudoFile {
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            dev: self.dev,
            mode: 0o100000 | perm,
            own: self.owner.node(self.child_inherit()),
            owner: self.owner.clone(),
            content,
            removed: AtomicBool::new(false),
            opens: AtomicUsize::new(0),
            this: this.clone(),
        })
    }

    /// Adds a generated file with permission bits `perm`.
    pub fn file(self: &Arc<Self>, name: &str, perm: u32, read: ReadFn, write: Option<WriteFn>) {
        let _ = self.file_trunc(name, perm, read, write, None);
    }

    /// Adds a generated file that is told of O_TRUNC opens by `trunc`.
    pub fn file_trunc(
        self: &Arc<Self>,
        name: &str,
        perm: u32,
        read: ReadFn,
        write: Option<WriteFn>,
        trunc: Option<TruncFn>,
    ) -> Result<(), Errno> {
        let f = self.new_file(perm, Content::Generated { read, write, trunc });
        self.add(name, Node::File(f))
    }

    /// Adds a file whose every open gets operations from `open`.
    pub fn file_ops(self: &Arc<Self>, name: &str, perm: u32, open: OpenFn) -> Result<(), Errno> {
        let f = self.new_file(perm, Content::Ops(open));
        self.add(name, Node::File(f))
    }

    /// Removes the file or empty directory `name` (debugfs_remove of a
    /// leaf): ENOENT if absent, ENOTEMPTY for a directory with entries.
    pub fn remove(&self, name: &str) -> Result<(), Errno> {
        let mut s = self.state.write();
        let (cookie, node) = s.find(name.as_bytes()).ok_or(Errno::ENOENT)?;
        if let Node::Dir(d) = node {
            if !d.state.read().entries.is_empty() {
                return Err(Errno::ENOTEMPTY);
            }
        }
        let (_, node) = s.entries.remove(&cookie).expect("entry just found");
        drop(s);
        kill(node);
        Ok(())
    }

    /// Removes `name` and everything below it (debugfs_remove of a tree,
    /// rmdir of a tracefs instance): ENOENT if absent, EBUSY if a file in
    /// it is open, and then nothing is removed.
    pub fn remove_tree(&self, name: &str) -> Result<(), Errno> {
        let mut s = self.state.write();
        let (cookie, node) = s.find(name.as_bytes()).ok_or(Errno::ENOENT)?;
        if tree_busy(node) {
            return Err(Errno::EBUSY);
        }
        let (_, node) = s.entries.remove(&cookie).expect("entry just found");
        drop(s);
        kill(node);
        Ok(())
    }

    /// Whether a file in the tree `name` is open (what makes
    /// [`PseudoDir::remove_tree`] EBUSY); false if there is no `name`.
    pub fn tree_busy(&self, name: &str) -> bool {
        self.state
            .read()
            .find(name.as_bytes())
            .is_some_and(|(_, n)| tree_busy(n))
    }
}

/// Whether a file in `node`'s tree is open (an explicit stack: no
/// recursion over the tree's depth).
fn tree_busy(node: &Node) -> bool {
    let mut stack = alloc::vec![node.clone()];
    while let Some(n) = stack.pop() {
        match n {
            Node::File(f) if f.opens.load(Ordering::Acquire) > 0 => return true,
            Node::File(_) => {}
            Node::Dir(d) => stack.extend(d.state.read().entries.values().map(|(_, n)| n.clone())),
        }
    }
    false
}

/// Marks a removed tree dead, emptying its directories, without recursion.
fn kill(node: Node) {
    let mut stack = alloc::vec![node];
    while let Some(n) = stack.pop() {
        match n {
            Node::File(f) => f.removed.store(true, Ordering::Release),
            Node::Dir(d) => {
                let mut s = d.state.write();
                s.dead = true;
                stack.extend(core::mem::take(&mut s.entries).into_values().map(|(_, n)| n));
            }
        }
    }
}

fn meta(dev: u64, ino: u64, mode: u32, nlink: u32, (uid, gid): (u32, u32)) -> Metadata {
    Metadata {
        dev,
        ino,
        mode,
        nlink,
        uid,
        gid,
        blksize: 4096,
        ..Default::default()
    }
}

impl Inode for PseudoDir {
    fn metadata(&self) -> Metadata {
        let nlink = if self.state.read().dead { 0 } else { 2 };
        let mode = if self.is_root {
            0o040000 | self.owner.root_mode.load(Ordering::Acquire)
        } else {
            self.mode
        };
        meta(self.dev, self.ino, mode, nlink, self.owner.effective(&self.own))
    }
    fn chown(&self, uid: Option<u32>, gid: Option<u32>) -> vfs::Result<()> {
        self.owner.chown(&self.own, uid, gid);
        Ok(())
    }
    fn ino(&self) -> u64 {
        self.ino
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn lookup(&self, name: &[u8]) -> vfs::Result<Arc<dyn Inode>> {
        let s = self.state.read();
        if s.dead {
            return Err(Errno::ENOENT);
        }
        s.find(name).map(|(_, n)| n.inode()).ok_or(Errno::ENOENT)
    }
    fn parent(&self) -> Option<Arc<dyn Inode>> {
        self.parent.read().upgrade().map(|p| p as Arc<dyn Inode>)
    }
    fn create(
        &self,
        name: &[u8],
        kind: vfs::NodeKind<'_>,
        _perm: u32,
        _uid: u32,
        _gid: u32,
    ) -> vfs::Result<Arc<dyn Inode>> {
        // No file is ever created here: EACCES for a regular file (Linux's
        // vfs_create without ->create, what `echo 1 > missing_file`
        // meets), EPERM for the other kinds (vfs_mknod, vfs_symlink).
        if matches!(kind, vfs::NodeKind::Regular) {
            return Err(Errno::EACCES);
        }
        let ops = self.ops.get().ok_or(Errno::EPERM)?;
        if !matches!(kind, vfs::NodeKind::Directory) {
            return Err(Errno::EPERM);
        }
        let name = core::str::from_utf8(name).map_err(|_| Errno::EINVAL)?;
        (ops.mkdir)(name)?;
        self.lookup(name.as_bytes())
    }
    fn rmdir(&self, name: &[u8]) -> vfs::Result<()> {
        let ops = self.ops.get().ok_or(Errno::EPERM)?;
        let name = core::str::from_utf8(name).map_err(|_| Errno::ENOENT)?;
        (ops.rmdir)(name)
    }
    fn readdir(&self, cursor: u64) -> vfs::Result<Option<(DirEntry, u64)>> {
        let dot = |ino, name: &[u8]| DirEntry {
            ino,
            name: name.to_vec(),
            file_type: FileType::Directory,
        };
        let s = self.state.read();
        if s.dead {
            return Err(Errno::ENOENT);
        }
        match cursor {
            0 => Ok(Some((dot(self.ino, b"."), 1))),
            1 => Ok(Some((
                dot(self.parent.read().upgrade().map_or(self.ino, |p| p.ino), b".."),
                FIRST_COOKIE,
            ))),
            n => Ok(s.entries.range(n..).next().map(|(&cookie, (name, node))| {
                let (ino, file_type) = match node {
                    Node::File(f) => (f.ino, FileType::Regular),
                    Node::Dir(d) => (d.ino, FileType::Directory),
                };
                (
                    DirEntry {
                        ino,
                        name: name.clone(),
                        file_type,
                    },
                    cookie + 1,
                )
            })),
        }
    }
}

impl PseudoFile {
    fn check_live(&self) -> vfs::Result<()> {
        if self.removed.load(Ordering::Acquire) {
            Err(Errno::EIO)
        } else {
            Ok(())
        }
    }
}

impl Inode for PseudoFile {
    fn metadata(&self) -> Metadata {
        let nlink = if self.removed.load(Ordering::Acquire) { 0 } else { 1 };
        meta(self.dev, self.ino, self.mode, nlink, self.owner.effective(&self.own))
    }
    fn chown(&self, uid: Option<u32>, gid: Option<u32>) -> vfs::Result<()> {
        self.owner.chown(&self.own, uid, gid);
        Ok(())
    }
    fn ino(&self) -> u64 {
        self.ino
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn truncate(&self, _size: u64) -> vfs::Result<()> {
        self.check_live()?;
        match &self.content {
            // `echo x > file` opens with O_TRUNC: the file is told (the
            // trace buffer is cleared), or it is accepted with nothing to cut.
            Content::Generated {
                write: Some(_), trunc, ..
            } => {
                if let Some(t) = trunc {
                    t();
                }
                Ok(())
            }
            Content::Generated { write: None, .. } => Err(Errno::EACCES),
            // Files with their own operations see O_TRUNC in their open flags.
            Content::Ops(_) => Ok(()),
        }
    }
    fn open(&self, flags: u32) -> vfs::Result<Option<Arc<dyn FileOps>>> {
        self.check_live()?;
        let this = self.this.upgrade().ok_or(Errno::EIO)?;
        let guard = OpenGuard::new(this.clone());
        let ops: Arc<dyn FileOps> = match &self.content {
            Content::Generated { .. } => Arc::new(Snapshot {
                file: this,
                data: spin::Mutex::new(None),
                _guard: guard,
            }),
            Content::Ops(open) => Arc::new(Counted {
                inner: open(flags)?,
                file: this,
                _guard: guard,
            }),
        };
        Ok(Some(ops))
    }
}

/// Counts one open of a file while it lives.
struct OpenGuard(Arc<PseudoFile>);

impl OpenGuard {
    fn new(file: Arc<PseudoFile>) -> OpenGuard {
        file.opens.fetch_add(1, Ordering::AcqRel);
        OpenGuard(file)
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.opens.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One open of a generated file: its content, made at the first read and
/// kept for this open, so that reads see one consistent version.
struct Snapshot {
    file: Arc<PseudoFile>,
    data: spin::Mutex<Option<Arc<Vec<u8>>>>,
    _guard: OpenGuard,
}

impl Snapshot {
    fn data(&self) -> Arc<Vec<u8>> {
        let Content::Generated { read, .. } = &self.file.content else {
            unreachable!("a Snapshot is made for generated files only")
        };
        // Generated outside the lock: the maker may take locks of its own.
        if let Some(d) = &*self.data.lock() {
            return d.clone();
        }
        let made = Arc::new(read());
        self.data.lock().get_or_insert(made).clone()
    }
}

impl FileOps for Snapshot {
    /// Linux's tracefs files have a read (write) operation exactly when
    /// their mode lets someone read (write) them: `trace_marker` (0220)
    /// cannot be read, `trace_pipe` or `format` (0444) written.
    fn can_read(&self) -> bool {
        self.file.mode & 0o444 != 0
    }
    fn can_write(&self) -> bool {
        self.file.mode & 0o222 != 0
    }
    fn read(&self, _: &OpenFile, buf: &mut [u8], pos: &mut u64) -> vfs::Result<usize> {
        self.file.check_live()?;
        let data = self.data();
        let Ok(off) = usize::try_from(*pos) else { return Ok(0) };
        let off = off.min(data.len());
        let n = buf.len().min(data.len() - off);
        buf[..n].copy_from_slice(&data[off..off + n]);
        *pos += n as u64;
        Ok(n)
    }

    /// Writes are commands: whole buffers to the file's writer, at any
    /// offset (O_APPEND makes no difference).
    fn write(&self, _: &OpenFile, buf: &[u8], pos: &mut u64) -> vfs::Result<usize> {
        self.file.check_live()?;
        let Content::Generated { write, .. } = &self.file.content else {
            unreachable!("a Snapshot is made for generated files only")
        };
        let n = write.as_ref().ok_or(Errno::EINVAL)?(buf)?;
        *pos += n as u64;
        Ok(n)
    }

    /// As seq_lseek: SEEK_SET and SEEK_CUR only.
    fn llseek(&self, _: &OpenFile, pos: u64, offset: i64, whence: u32, _: u64) -> vfs::Result<u64> {
        match whence {
            uapi::fcntl::SEEK_SET | uapi::fcntl::SEEK_CUR => vfs::file::generic_llseek(pos, offset, whence, 0),
            _ => Err(Errno::EINVAL),
        }
    }
}

/// One open of a file with its own operations, which fail with EIO once
/// the file is removed (poll then reports an error).
struct Counted {
    inner: Arc<dyn FileOps>,
    file: Arc<PseudoFile>,
    _guard: OpenGuard,
}

impl FileOps for Counted {
    fn read(&self, f: &OpenFile, buf: &mut [u8], pos: &mut u64) -> vfs::Result<usize> {
        self.file.check_live()?;
        self.inner.read(f, buf, pos)
    }
    fn write(&self, f: &OpenFile, buf: &[u8], pos: &mut u64) -> vfs::Result<usize> {
        self.file.check_live()?;
        self.inner.write(f, buf, pos)
    }
    fn write_iter(&self, f: &OpenFile, from: &mut dyn vfs::IovSource, pos: &mut u64) -> vfs::Result<usize> {
        self.file.check_live()?;
        self.inner.write_iter(f, from, pos)
    }
    fn llseek(&self, f: &OpenFile, pos: u64, offset: i64, whence: u32, size: u64) -> vfs::Result<u64> {
        self.inner.llseek(f, pos, offset, whence, size)
    }
    fn positional(&self) -> bool {
        self.inner.positional()
    }
    /// As for [`Snapshot`]: Linux's tracefs files have a read (write) operation exactly when
    /// their mode lets someone read (write) them: `trace_marker` (0220)
    /// cannot be read, `trace_pipe` or `format` (0444) written.
    fn can_read(&self) -> bool {
        self.file.mode & 0o444 != 0
    }
    fn can_write(&self) -> bool {
        self.file.mode & 0o222 != 0
    }
    fn has_read_iter(&self) -> bool {
        self.inner.has_read_iter()
    }
    fn has_write_iter(&self) -> bool {
        self.inner.has_write_iter()
    }
    fn poll(&self, f: &OpenFile) -> u16 {
        if self.file.check_live().is_err() {
            return uapi::poll::POLLERR;
        }
        self.inner.poll(f)
    }
    fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        self.inner.wait_queue()
    }
    fn ioctl(&self, f: &OpenFile, cmd: u32, arg: u64) -> vfs::Result<i64> {
        self.file.check_live()?;
        self.inner.ioctl(f, cmd, arg)
    }
}

/// A pseudo filesystem.
pub struct PseudoFs {
    root: Arc<PseudoDir>,
    owner: Arc<MountOwner>,
    fs_type: &'static str,
    dev: u64,
}

impl PseudoFs {
    /// An empty one of type `fs_type`.
    pub fn new(fs_type: &'static str) -> Arc<PseudoFs> {
        PseudoFs::with_root_mode(fs_type, 0o755)
    }

    /// An empty one whose root has permission bits `root_mode` (tracefs's
    /// is 0700, `TRACEFS_DEFAULT_MODE`), which `mode=` changes.
    pub fn with_root_mode(fs_type: &'static str, root_mode: u32) -> Arc<PseudoFs> {
        let dev = vfs::inode::alloc_anon_dev();
        let owner = Arc::new(MountOwner::new(root_mode));
        let mut root = PseudoDir::new(dev, owner.clone(), None);
        if let Some(r) = Arc::get_mut(&mut root) {
            r.is_root = true;
        }
        Arc::new(PseudoFs {
            root,
            owner,
            fs_type,
            dev,
        })
    }

    /// Its mount options (tracefs's `uid=`, `gid=`, `mode=`).
    pub fn mount_owner(&self) -> &MountOwner {
        &self.owner
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
    fn magic(&self) -> u64 {
        match self.fs_type {
            "debugfs" => uapi::magic::DEBUGFS_MAGIC,
            "tracefs" => uapi::magic::TRACEFS_MAGIC,
            _ => 0,
        }
    }
    /// tracefs takes `uid=`, `gid=` and `mode=`; the others keep ignoring
    /// their options.
    fn reconfigure(&self, data: &[u8]) -> vfs::Result<()> {
        match self.fs_type {
            "tracefs" => self.owner.apply_options(data),
            _ => Ok(()),
        }
    }
    fn show_options(&self) -> alloc::string::String {
        match self.fs_type {
            "tracefs" => self.owner.show_options(),
            _ => alloc::string::String::new(),
        }
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use alloc::format;
    use ktest_macros::kernel_test;
    use uapi::fcntl::{O_RDONLY, O_RDWR, O_TRUNC, SEEK_END, SEEK_SET};
    use uapi::poll::POLLIN;

    /// Opens `name` in `dir` as openat would once it found it: O_TRUNC
    /// truncates first, then the file's own open makes the open file.
    fn open(dir: &Arc<PseudoDir>, name: &[u8], flags: u32) -> Result<Arc<OpenFile>, Errno> {
        let inode = dir.lookup(name)?;
        if flags & O_TRUNC != 0 {
            inode.truncate(0)?;
        }
        let ops = inode.open(flags)?.expect("pseudo files have their own operations");
        Ok(OpenFile::new_ops(None, inode, ops, flags & !O_TRUNC))
    }

    fn read_all(f: &OpenFile) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 7];
        loop {
            match f.read(&mut buf).unwrap() {
                0 => return out,
                n => out.extend_from_slice(&buf[..n]),
            }
        }
    }

    #[kernel_test]
    fn files_made_in_an_instance_take_the_instance_directorys_chowned_group() {
        let fs = PseudoFs::with_root_mode("tracefs", 0o700);
        let root = fs.root_dir();
        let top = root.dir("events");
        let instances = root.dir("instances");
        instances.set_dir_ops(Box::new(|_| Ok(())), Box::new(|_| Ok(())));
        let gid = |d: &Arc<PseudoDir>| d.metadata().gid;
        fs.owner.apply_options(b"gid=5").unwrap();
        instances.chown(None, Some(7)).unwrap();
        let inst = instances.try_dir_filled("foo", &|d| drop(d.dir("events"))).unwrap();
        let events = inst.lookup_dir("events").unwrap();
        assert_eq!((gid(&top), gid(&instances), gid(&inst), gid(&events)), (5, 7, 7, 7));
        assert_eq!(instances.metadata().uid, 0, "chgrp changed the owner");
        // A file's own group wins; a remount with gid= resets every one.
        events.chown(None, Some(9)).unwrap();
        assert_eq!((gid(&inst), gid(&events)), (7, 9));
        fs.owner.apply_options(b"gid=3").unwrap();
        assert_eq!((gid(&top), gid(&instances), gid(&inst), gid(&events)), (3, 3, 3, 3));
        // uid= alone keeps the groups set since.
        instances.chown(None, Some(8)).unwrap();
        fs.owner.apply_options(b"uid=4").unwrap();
        assert_eq!((gid(&inst), inst.metadata().uid), (8, 4));
    }

    static GENERATION: AtomicUsize = AtomicUsize::new(0);
    static MADE: AtomicUsize = AtomicUsize::new(0);
    static TRUNCS: AtomicUsize = AtomicUsize::new(0);

    #[kernel_test]
    fn pseudo_file_reads_one_snapshot_per_open_and_hears_o_trunc() {
        let fs = PseudoFs::new("pseudotest");
        let root = fs.root_dir();
        root.file_trunc(
            "gen",
            0o644,
            Box::new(|| {
                MADE.fetch_add(1, Ordering::AcqRel);
                format!("generation {}\n", GENERATION.load(Ordering::Acquire)).into_bytes()
            }),
            Some(Box::new(|b| Ok(b.len()))),
            Some(Box::new(|| {
                TRUNCS.fetch_add(1, Ordering::AcqRel);
            })),
        )
        .unwrap();
        let made = MADE.load(Ordering::Acquire);
        let a = open(root, b"gen", O_RDONLY).unwrap();
        let mut head = [0u8; 4];
        assert_eq!(a.read(&mut head).unwrap(), 4);
        // The content changes between two reads of one open: the open
        // keeps reading the version it started with, made once.
        GENERATION.fetch_add(1, Ordering::AcqRel);
        let mut rest = read_all(&a);
        let mut whole = head.to_vec();
        whole.append(&mut rest);
        assert_eq!(
            whole,
            format!("generation {}\n", GENERATION.load(Ordering::Acquire) - 1).into_bytes()
        );
        assert_eq!(MADE.load(Ordering::Acquire), made + 1);
        // A new open sees the new content; seq_lseek has no SEEK_END.
        let b = open(root, b"gen", O_RDONLY).unwrap();
        assert_eq!(
            read_all(&b),
            format!("generation {}\n", GENERATION.load(Ordering::Acquire)).into_bytes()
        );
        assert_eq!(b.lseek(0, SEEK_END), Err(Errno::EINVAL));
        assert_eq!(b.lseek(0, SEEK_SET), Ok(0));
        // O_TRUNC tells the file; a plain open for writing does not.
        let truncs = TRUNCS.load(Ordering::Acquire);
        let w = open(root, b"gen", O_RDWR).unwrap();
        assert_eq!(TRUNCS.load(Ordering::Acquire), truncs);
        assert_eq!(w.write(b"cmd").unwrap(), 3);
        let _t = open(root, b"gen", O_RDWR | O_TRUNC).unwrap();
        assert_eq!(TRUNCS.load(Ordering::Acquire), truncs + 1);
    }

    #[kernel_test]
    fn pseudo_directory_added_then_removed_at_run_time() {
        let fs = PseudoFs::new("pseudotest");
        let root = fs.root_dir();
        let inst = root.try_dir("instance").unwrap();
        assert_eq!(root.try_dir("instance").err(), Some(Errno::EEXIST));
        inst.file("data", 0o444, Box::new(|| b"x\n".to_vec()), None);
        assert!(root.lookup(b"instance").is_ok());
        // Non-empty: ENOTEMPTY; a tree with an open file: EBUSY.
        assert_eq!(root.remove("instance"), Err(Errno::ENOTEMPTY));
        let f = open(&inst, b"data", O_RDONLY).unwrap();
        assert_eq!(root.remove_tree("instance"), Err(Errno::EBUSY));
        assert!(inst.lookup(b"data").is_ok());
        drop(f);
        // Open again, read, then remove the leaf: the open file stays safe
        // and reads fail with EIO, as debugfs's removed files.
        let f = open(&inst, b"data", O_RDONLY).unwrap();
        inst.remove("data").unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(f.read(&mut buf), Err(Errno::EIO));
        assert_eq!(f.metadata().nlink, 0);
        assert_eq!(inst.lookup(b"data").err(), Some(Errno::ENOENT));
        root.remove("instance").unwrap();
        assert_eq!(root.lookup(b"instance").err(), Some(Errno::ENOENT));
        assert_eq!(inst.readdir(0).err(), Some(Errno::ENOENT));
        assert_eq!(inst.try_dir("late").err(), Some(Errno::ENOENT));
        assert_eq!(root.remove("instance"), Err(Errno::ENOENT));
        // The name can be used again.
        root.try_dir("instance").unwrap();
        root.remove_tree("instance").unwrap();
    }

    /// Events counted by a "probe" without locks; the reader takes them.
    static EVENTS: AtomicUsize = AtomicUsize::new(0);
    static PIPE_WAKER: spin::Once<crate::irq_work::IrqWakerHandle> = spin::Once::new();

    /// One open of `pipe`: reads block until events arrive.
    struct PipeOps(Arc<WaitQueueHead>);

    impl FileOps for PipeOps {
        fn read(&self, _: &OpenFile, buf: &mut [u8], _: &mut u64) -> vfs::Result<usize> {
            match EVENTS.swap(0, Ordering::AcqRel) {
                0 => Err(Errno::EAGAIN),
                n => {
                    let s = format!("{n} events\n");
                    let len = s.len().min(buf.len());
                    buf[..len].copy_from_slice(&s.as_bytes()[..len]);
                    Ok(len)
                }
            }
        }
        fn positional(&self) -> bool {
            false
        }
        fn poll(&self, _: &OpenFile) -> u16 {
            if EVENTS.load(Ordering::Acquire) > 0 {
                POLLIN | uapi::poll::POLLRDNORM
            } else {
                0
            }
        }
        fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
            Some(self.0.clone())
        }
    }

    /// Plays a probe hit: after a while, with interrupts masked, counts an
    /// event and queues the reader's wake-up.
    extern "C" fn probe_hit(_: usize) {
        crate::time::udelay(20_000);
        let irq = arch::cpu::local_irq_save();
        EVENTS.fetch_add(1, Ordering::AcqRel);
        PIPE_WAKER.get().expect("set before the thread starts").queue();
        arch::cpu::local_irq_restore(irq);
    }

    #[kernel_test]
    fn pseudo_blocking_read_is_woken_through_irq_work_and_poll_follows() {
        let fs = PseudoFs::new("pseudotest");
        let root = fs.root_dir();
        let wq = Arc::new(WaitQueueHead::new());
        PIPE_WAKER.call_once(|| crate::irq_work::IrqWaker::register(wq.clone()).unwrap());
        let wq_open = wq.clone();
        root.file_ops(
            "pipe",
            0o444,
            Box::new(move |_| Ok(Arc::new(PipeOps(wq_open.clone())) as Arc<dyn FileOps>)),
        )
        .unwrap();
        EVENTS.store(0, Ordering::Release);
        let f = open(root, b"pipe", O_RDONLY).unwrap();
        assert_eq!(f.poll() & POLLIN, 0, "no events yet");
        assert_eq!(f.read(&mut [0u8; 16]), Err(Errno::EAGAIN));
        let t = crate::sched::Task::new_kthread(probe_hit, 0, "probe-hit").unwrap();
        crate::sched::wake_up(&t);
        // Sleeps until the irq_work wakes it.
        let mut buf = [0u8; 16];
        let n = crate::fs::blocking(&f, || f.read(&mut buf)).unwrap();
        assert_eq!(&buf[..n], b"1 events\n");
        assert_eq!(f.poll() & POLLIN, 0, "drained");
        EVENTS.store(2, Ordering::Release);
        assert_ne!(f.poll() & POLLIN, 0, "events ready");
        // Removed while open: reads fail, poll reports the error.
        root.remove("pipe").unwrap();
        assert_eq!(f.read(&mut buf), Err(Errno::EIO));
        assert_ne!(f.poll() & uapi::poll::POLLERR, 0);
    }

    #[kernel_test]
    fn debugfs_kprobes_enabled_on_the_new_layer_keeps_each_open_consistent() {
        let debug = crate::fs::debugfs();
        let dir = debug.root_dir().state.read().find(b"kprobes").map(|(_, n)| n.clone());
        let Some(Node::Dir(dir)) = dir else {
            panic!("kprobes is a directory")
        };
        let was = crate::kprobes::all_armed();
        let before = open(&dir, b"enabled", O_RDONLY).unwrap();
        let mut first = [0u8; 1];
        assert_eq!(before.read(&mut first).unwrap(), 1);
        // `echo 0 > enabled`: O_TRUNC is accepted, the write is a command.
        let w = open(&dir, b"enabled", O_RDWR | O_TRUNC).unwrap();
        assert_eq!(w.write(if was { b"0\n" } else { b"1\n" }).unwrap(), 2);
        assert_eq!(crate::kprobes::all_armed(), !was);
        // The earlier open still reads its own version; a new one the new.
        assert_eq!(read_all(&before), b"\n");
        assert_eq!(&first, if was { b"1" } else { b"0" });
        let after = open(&dir, b"enabled", O_RDONLY).unwrap();
        assert_eq!(read_all(&after), if was { b"0\n" } else { b"1\n" });
        assert_eq!(w.write(b"maybe"), Err(Errno::EINVAL));
        assert_eq!(w.write(if was { b"1" } else { b"0" }).unwrap(), 1);
        assert_eq!(crate::kprobes::all_armed(), was);
        assert!(!read_all(&open(&dir, b"blacklist", O_RDONLY).unwrap()).is_empty());
        assert_eq!(open(&dir, b"list", O_RDWR | O_TRUNC).err(), Some(Errno::EACCES));
    }
}
