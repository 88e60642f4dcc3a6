//! The kernel's side of the filesystem: the one VFS (root from the
//! initramfs, devfs on /dev, procfs on /proc), per-process file tables and
//! working directories, sleeping on files that are not ready, and reading
//! executables for exec.

pub mod proc;
pub mod pseudo;
pub mod tracefs;
pub mod tty;

use crate::errno::Errno;
use crate::sched::{self, Task, TaskState};
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::addr::PhysAddr;
use uapi::fcntl::O_RDWR;
use vfs::fdtable::FdTable;
use vfs::file::OpenFile;
use vfs::mount::{Path, Vfs};
use vfs::{Clock, Cred, Timespec, WaitHook, WaitQueueHead, WaiterId};

static VFS: spin::Once<Vfs> = spin::Once::new();

/// The VFS (after `mount_root`).
pub fn vfs() -> &'static Vfs {
    VFS.get().expect("VFS used before mount_root")
}

/// File timestamps from the kernel's `CLOCK_REALTIME`.
pub struct KernelClock;

impl Clock for KernelClock {
    fn now(&self) -> Timespec {
        let ns = crate::time::ktime_get_real_ns();
        Timespec {
            sec: (ns / 1_000_000_000) as i64,
            nsec: (ns % 1_000_000_000) as u32,
        }
    }
}

/// The credentials of every task (all run as root for now).
pub fn cred() -> Cred {
    Cred::root()
}

/// A process's files and working directory.
pub struct ProcessFs {
    /// Descriptor table (shared by CLONE_FILES).
    pub files: Arc<FdTable>,
    /// Working directory, shared by CLONE_FS (Linux's fs_struct; the
    /// umask beside it is `Process::umask`).
    pub cwd: Arc<crate::sync::IrqSpinLock<Path>>,
}

impl ProcessFs {
    /// The state of a child: shared or copied.
    pub fn fork(&self, share_files: bool, share_fs: bool) -> ProcessFs {
        let files = if share_files {
            self.files.clone()
        } else {
            Arc::new(self.files.fork())
        };
        ProcessFs {
            files,
            cwd: if share_fs {
                self.cwd.clone()
            } else {
                Arc::new(crate::sync::IrqSpinLock::new(self.cwd.lock().clone()))
            },
        }
    }

    /// At exit: takes the table out, for the caller to drop (closing files
    /// if this was its last user) once it has let go of the lock it holds
    /// this under: closing wakes waiters, whose tasks may go with it.
    #[must_use = "the table is closed where it is dropped"]
    pub fn release(&mut self) -> Arc<FdTable> {
        core::mem::replace(&mut self.files, Arc::new(FdTable::new()))
    }

    /// At exec: close the close-on-exec descriptors.
    pub fn close_on_exec(&mut self) {
        self.files.close_on_exec();
    }
}

/// Builds the root filesystem: a RAM filesystem filled from the initramfs
/// (if any), with devfs on /dev and procfs on /proc.
pub fn mount_root(initrd: Option<(u64, u64)>) -> Result<(), Errno> {
    crate::mm::slab::filp_cache_init();
    let clock: Arc<dyn Clock> = Arc::new(KernelClock);
    let devices = Arc::new(vfs::device::DeviceTable::with_mem_devices());
    let console = tty::console();
    devices.register_chrdev(5, 1, console.clone());
    devices.register_chrdev(5, 0, Arc::new(tty::CurrentTty(console)));
    // Linux's rootfs is a tmpfs with tmpfs's default limit, half of RAM,
    // so that filling /tmp fails with ENOSPC while the kernel still has
    // memory for itself.
    let limit = vfs::ramfs::tmpfs_size_limit(b"", ram_bytes())?;
    let root = vfs::ramfs::RamFs::with_pages(clock.clone(), "rootfs", limit, Arc::new(FramePages));
    let v = VFS.call_once(|| Vfs::new(root, devices));
    if let Some((base, size)) = initrd {
        match initrd_bytes(base, size) {
            Some(archive) => match vfs::initramfs::populate_from_cpio(v, archive) {
                Ok(s) => crate::pr_info!("Unpacking initramfs... {} entries", s.created),
                Err((e, s)) => crate::pr_err!("Initramfs unpacking failed: {} ({} entries created)", e, s.created),
            },
            None => crate::pr_err!("Initramfs at {base:#x}+{size:#x} is outside RAM"),
        }
    }
    let c = cred();
    let root = v.root();
    for d in [
        &b"dev"[..],
        b"proc",
        b"sys",
        b"sys/kernel",
        b"sys/kernel/tracing",
        b"sys/kernel/debug",
        b"tmp",
    ] {
        match v.mkdirat(&c, &root, d, 0o755, 0) {
            Ok(()) | Err(uapi::Errno::EEXIST) => {}
            Err(e) => return Err(e),
        }
    }
    // Like Linux, only the root is mounted here; init mounts the rest.
    Ok(())
}

/// The one debugfs (every mount shows the same tree, as in Linux).
pub(crate) fn debugfs() -> Arc<pseudo::PseudoFs> {
    static DEBUGFS: spin::Once<Arc<pseudo::PseudoFs>> = spin::Once::new();
    DEBUGFS
        .call_once(|| {
            let fs = pseudo::PseudoFs::new("debugfs");
            crate::kprobes::debugfs::create(fs.root_dir());
            // Where tracefs is mounted too, as Linux automounts it there.
            fs.root_dir().dir("tracing");
            fs
        })
        .clone()
}

/// tmpfs data in frames of RAM, as Linux's shmem pages: freed to the
/// frame allocator (MemFree) when the file goes, not kept by the heap,
/// and refused when free memory is down to the kernel's reserve.
struct FramePages;

/// One frame of tmpfs data, freed when dropped.
struct FramePage(PhysAddr);

impl vfs::ramfs::DataPage for FramePage {
    fn read(&self, offset: usize, buf: &mut [u8]) {
        crate::mm::frame::read_frame(self.0, offset, buf);
    }
    fn write(&self, offset: usize, data: &[u8]) {
        crate::mm::frame::write_frame(self.0, offset, data);
    }
    fn copy_to_iter(&self, offset: usize, len: usize, to: &mut dyn vfs::IovIter) -> usize {
        // The file holds this frame for as long as the page lives, and the
        // caller holds the page.
        crate::mm::frame::with_frame_bytes(self.0, offset, len, |b| to.copy_to_iter(b))
    }
    fn get_frame(&self) -> Option<u64> {
        crate::mm::frame::page_ref_inc(self.0);
        Some(self.0.as_u64())
    }
}

impl Drop for FramePage {
    /// The file lets go of the frame; a mapping that still holds it (an
    /// mmap of a file since unlinked or truncated) keeps it until unmapped.
    fn drop(&mut self) {
        crate::mm::frame::page_ref_dec(self.0);
    }
}

impl vfs::ramfs::PageAlloc for FramePages {
    fn alloc_zeroed(&self) -> Option<Arc<dyn vfs::ramfs::DataPage>> {
        let pa = crate::mm::frame::alloc_user_zeroed_frame()?;
        Some(Arc::new(FramePage(pa)))
    }
}

/// Bytes of usable RAM, for tmpfs's default and `size=N%` limits.
fn ram_bytes() -> u64 {
    crate::mm::frame::stats().total as u64 * 4096
}

/// A new instance of the filesystem type `fstype` for mount(2), with
/// mount(2)'s data string `opts`; ENODEV for types the kernel does not
/// have.
pub fn filesystem_for(fstype: &[u8], opts: &[u8]) -> Result<Arc<dyn vfs::FileSystem>, Errno> {
    let clock: Arc<dyn Clock> = Arc::new(KernelClock);
    Ok(match fstype {
        b"proc" => vfs::procfs::ProcFs::new(Arc::new(proc::Provider), clock),
        b"devtmpfs" => vfs::devfs::devfs(clock)?,
        b"debugfs" => debugfs(),
        b"tracefs" => {
            // One tracefs: a new mount applies its options to it, as
            // Linux's get_tree_single reconfigures the one superblock.
            let fs = crate::trace::tracefs::tracefs();
            vfs::FileSystem::reconfigure(&*fs, opts)?;
            fs
        }
        b"tmpfs" => vfs::ramfs::RamFs::with_pages(
            clock,
            "tmpfs",
            vfs::ramfs::tmpfs_size_limit(opts, ram_bytes())?,
            Arc::new(FramePages),
        ),
        // Linux's ramfs has no limit and ignores options it does not know;
        // its pages are frames so that they can be mapped.
        b"ramfs" => vfs::ramfs::RamFs::with_pages(clock, "ramfs", None, Arc::new(FramePages)),
        _ => return Err(Errno::ENODEV),
    })
}

#[allow(unsafe_code)] // A view of the boot loader's initramfs, reserved from the frame allocator.
fn initrd_bytes(base: u64, size: u64) -> Option<&'static [u8]> {
    // SAFETY: the initrd range is kept from the frame allocator (init.rs
    // reserves it) and never written, so a 'static shared view is sound.
    unsafe { arch::mmu::linear_slice(arch::addr::PhysAddr::new(base)?, usize::try_from(size).ok()?) }
}

/// The files of PID 1: fds 0, 1, 2 on /dev/console, cwd at /.
pub fn init_process_fs() -> Result<ProcessFs, Errno> {
    let v = vfs();
    let files = Arc::new(FdTable::new());
    let console = v.openat(&cred(), &v.root(), b"/dev/console", O_RDWR, 0, 0)?;
    for _ in 0..3 {
        files.install(console.clone(), false)?;
    }
    Ok(ProcessFs {
        files,
        cwd: Arc::new(crate::sync::IrqSpinLock::new(v.root())),
    })
}

/// The current process's cwd (or / for kernel threads).
pub fn current_cwd() -> Path {
    sched::try_current()
        .and_then(|t| t.process.get().map(|p| p.fs.lock().cwd.lock().clone()))
        .unwrap_or_else(|| vfs().root())
}

/// The current process's descriptor table.
pub fn current_files() -> Arc<FdTable> {
    crate::process::current_process().fs.lock().files.clone()
}

/// What mmap(2) of `file` maps, checked as Linux's `do_mmap`: EACCES
/// without read access, or for a shared writable mapping without write
/// access (or of an append-only file); ENODEV for a file without pages to
/// map. `/dev/zero` maps anonymous memory (`None`), as Linux's
/// `mmap_zero`; a shared one, a fresh shmem file.
pub fn mmap_file(
    file: &OpenFile,
    write: bool,
    shared: bool,
    off: u64,
    len: u64,
) -> Result<Option<(Arc<crate::mm::vm::VmFile>, u64)>, Errno> {
    if shared && write && (!file.writable() || file.flags() & uapi::fcntl::O_APPEND != 0) {
        return Err(Errno::EACCES);
    }
    if !file.readable() {
        return Err(Errno::EACCES);
    }
    let inode = file.inode();
    let meta = inode.metadata();
    if meta.file_type() == vfs::FileType::CharDevice && meta.rdev == uapi::stat::makedev(1, 5) {
        return Ok(if shared { Some((shmem_zero_file(len)?, 0)) } else { None });
    }
    if !inode.mmap_capable() {
        return Err(Errno::ENODEV);
    }
    // Linux's file_mmap_ok: the last page's offset must fit.
    if off.checked_add(len).is_none_or(|end| end > i64::MAX as u64) {
        return Err(Errno::EOVERFLOW);
    }
    let name = d_path(&meta, None);
    let vm_file = crate::mm::vm::VmFile {
        inode: inode.clone(),
        name,
        dev: meta.dev,
        ino: meta.ino,
    };
    Ok(Some((Arc::new(vm_file), off)))
}

/// The absolute name of the file `meta` describes, for /proc/<pid>/maps
/// (Linux's `d_path`). Inodes here do not know their names, so the name
/// last seen for the file (`hint`, a path it was just opened by, or the
/// cache) is used while it still leads to the same file; else the tree is
/// searched, pseudo-filesystems aside. Empty if the file has no name (an
/// unlinked file).
fn d_path(meta: &vfs::Metadata, hint: Option<&[u8]>) -> Vec<u8> {
    static NAMES: spin::Mutex<alloc::collections::BTreeMap<(u64, u64), Vec<u8>>> =
        spin::Mutex::new(alloc::collections::BTreeMap::new());
    let key = (meta.dev, meta.ino);
    let names_it = |name: &[u8]| {
        name.first() == Some(&b'/')
            && vfs()
                .lookup(&cred(), &vfs().root(), name, false)
                .is_ok_and(|p| p.inode.ino() == meta.ino && p.metadata().dev == meta.dev)
    };
    let cached = NAMES.lock().get(&key).cloned();
    let candidate = hint
        .map(|h| {
            // A relative hint is taken from the cwd.
            if h.first() == Some(&b'/') {
                h.to_vec()
            } else {
                let mut cwd = vfs().getcwd(&current_cwd()).unwrap_or_default();
                if cwd.last() != Some(&b'/') {
                    cwd.push(b'/');
                }
                cwd.extend_from_slice(h);
                cwd
            }
        })
        .into_iter()
        .chain(cached);
    for name in candidate {
        if names_it(&name) {
            NAMES.lock().insert(key, name.clone());
            return name;
        }
    }
    let mut found = Vec::new();
    let mut budget = 20_000usize;
    search_tree(&vfs().root(), &mut Vec::new(), meta, &mut budget, &mut found, 0);
    if !found.is_empty() {
        NAMES.lock().insert(key, found.clone());
    }
    found
}

/// Depth-first search below `dir` (named `prefix`) for the file `meta`.
fn search_tree(
    dir: &Path,
    prefix: &mut Vec<u8>,
    meta: &vfs::Metadata,
    budget: &mut usize,
    found: &mut Vec<u8>,
    depth: usize,
) {
    const PSEUDO: [&str; 4] = ["proc", "sysfs", "debugfs", "tracefs"];
    if depth > 32 || PSEUDO.contains(&dir.mnt.fs().fs_type()) {
        return;
    }
    let mut cursor = 2;
    while let Ok(Some((entry, next))) = dir.inode.readdir(cursor) {
        cursor = next;
        if *budget == 0 || !found.is_empty() {
            return;
        }
        *budget -= 1;
        let len = prefix.len();
        prefix.push(b'/');
        prefix.extend_from_slice(&entry.name);
        if entry.ino == meta.ino && entry.file_type != vfs::FileType::Directory {
            if let Ok(child) = dir.inode.lookup(&entry.name) {
                if child.metadata().dev == meta.dev {
                    *found = prefix.clone();
                    return;
                }
            }
        }
        if entry.file_type == vfs::FileType::Directory {
            let child = vfs().lookup(&cred(), dir, &entry.name, false);
            if let Ok(child) = child {
                search_tree(&child, prefix, meta, budget, found, depth + 1);
            }
        }
        prefix.truncate(len);
    }
}

/// The file behind a shared anonymous mapping (Linux's `shmem_zero_setup`):
/// an unlinked tmpfs file of `len` bytes, named `/dev/zero (deleted)` in
/// /proc/<pid>/maps as on Linux; its pages live while a mapping holds it.
pub fn shmem_zero_file(len: u64) -> Result<Arc<crate::mm::vm::VmFile>, Errno> {
    use vfs::FileSystem;
    static SHM_MNT: spin::Once<Arc<vfs::ramfs::RamFs>> = spin::Once::new();
    static NEXT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
    let fs =
        SHM_MNT.call_once(|| vfs::ramfs::RamFs::with_pages(Arc::new(KernelClock), "tmpfs", None, Arc::new(FramePages)));
    let root = fs.root();
    let name = alloc::format!("zero{}", NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed));
    let inode = root.create(name.as_bytes(), vfs::NodeKind::Regular, 0o600, 0, 0)?;
    root.unlink(name.as_bytes())?;
    let len = len.checked_add(4095).ok_or(Errno::ENOMEM)? & !4095;
    inode.truncate(len)?;
    let meta = inode.metadata();
    Ok(Arc::new(crate::mm::vm::VmFile {
        inode,
        name: b"/dev/zero (deleted)".to_vec(),
        dev: meta.dev,
        ino: meta.ino,
    }))
}

/// Opens an executable (or an ELF interpreter) for exec: it must be a
/// regular file with an execute bit for us (EACCES otherwise). Returns its bytes, for the headers, and the file, for
/// mapping its segments (shown with its path in /proc/<pid>/maps).
pub fn open_exec(path: &[u8]) -> Result<(Vec<u8>, Arc<crate::mm::vm::VmFile>), Errno> {
    let v = vfs();
    let c = cred();
    let p = v.lookup(&c, &current_cwd(), path, true)?;
    let meta = p.metadata();
    if !meta.is_regular() {
        return Err(Errno::EACCES);
    }
    vfs::open::may_exec(&c, &meta)?;
    let f = v.openat(&c, &current_cwd(), path, uapi::fcntl::O_RDONLY, 0, 0)?;
    let data = exec_head(&f, meta.size)?;
    let name = d_path(&meta, Some(path));
    let file = crate::mm::vm::VmFile {
        inode: f.inode().clone(),
        name,
        dev: meta.dev,
        ino: meta.ino,
    };
    Ok((data, Arc::new(file)))
}

/// The first bytes of a program file that exec looks at: the `#!` line,
/// or the ELF headers and the interpreter's path ([`exec::head_len`]), not
/// the whole file (a 1.2 MB bash would be copied at every exec). The page
/// that holds them usually holds everything; else a second read (a third
/// for a PT_INTERP past the program headers) gets the rest, or the whole
/// file when that is shorter.
fn exec_head(f: &OpenFile, size: u64) -> Result<Vec<u8>, Errno> {
    const FIRST: u64 = 4096;
    let mut want = size.min(FIRST);
    loop {
        let len = usize::try_from(want).map_err(|_| Errno::ENOMEM)?;
        let mut head = Vec::new();
        head.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
        head.resize(len, 0);
        let mut got = 0;
        while got < len {
            let n = f.pread(&mut head[got..], got as i64)?;
            if n == 0 {
                break;
            }
            got += n;
        }
        head.truncate(got);
        let need = exec::head_len(&head).min(size);
        if got < len || need <= got as u64 {
            return Ok(head);
        }
        want = need;
    }
}

/// Makes a sleeping task runnable when a file's wait queue is woken.
struct TaskWaker(Arc<Task>);

impl WaitHook for TaskWaker {
    fn wake(&self) {
        sched::wake_up(&self.0);
    }
}

/// Adds `hook` to `wq` with interrupts masked on this CPU. The tick wakes
/// some queues (console input, work queued by [`crate::irq_work`]), and a
/// queue's hook list lock does not mask interrupts itself: taken here with
/// them on, a tick on this CPU waking the same queue would spin on it
/// forever.
pub fn add_wait_hook(wq: &WaitQueueHead, hook: Arc<dyn WaitHook>) -> WaiterId {
    let irq = arch::cpu::local_irq_save();
    let id = wq.add(hook);
    arch::cpu::local_irq_restore(irq);
    id
}

/// Removes a hook added by [`add_wait_hook`], with interrupts masked for
/// the same reason.
pub fn remove_wait_hook(wq: &WaitQueueHead, id: WaiterId) {
    let irq = arch::cpu::local_irq_save();
    wq.remove(id);
    arch::cpu::local_irq_restore(irq);
}

/// Runs `op` on `file`, sleeping while it says EAGAIN (unless the file is
/// non-blocking); a signal ends the wait with ERESTARTSYS.
pub fn blocking<T>(file: &OpenFile, mut op: impl FnMut() -> vfs::Result<T>) -> Result<T, Errno> {
    loop {
        let wq = file.wait_queue();
        let gen = wq.as_ref().map(|w| w.generation());
        match op() {
            Err(uapi::Errno::EAGAIN) if !file.is_nonblocking() => {}
            r => return r,
        }
        let Some(wq) = wq else { return Err(Errno::EAGAIN) };
        let me = sched::current();
        let id = add_wait_hook(&wq, Arc::new(TaskWaker(me.clone())));
        let interrupted = loop {
            me.set_state(TaskState::Interruptible);
            if Some(wq.generation()) != gen {
                break false;
            }
            if me.signal_pending() {
                break true;
            }
            sched::schedule();
        };
        me.set_state(TaskState::Running);
        remove_wait_hook(&wq, id);
        if interrupted {
            return Err(Errno::ERESTARTSYS);
        }
    }
}

/// From the tick: takes console input.
pub fn console_poll() {
    tty::poll();
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;
    use vfs::{FileSystem, NodeKind};

    #[kernel_test]
    fn tmpfs_pages_are_frames_that_return_to_memfree_after_unlink_and_close() {
        const PAGES: usize = 1024;
        // Other CPUs' work (kernel stacks being reaped, the heap growing)
        // moves the free count too: compare with this much slack.
        const SLACK: usize = 128;
        let free = || crate::mm::frame::stats().free;
        let fs = vfs::ramfs::RamFs::with_pages(Arc::new(KernelClock), "tmpfs", None, Arc::new(FramePages));
        let root = fs.root();
        let f = root.create(b"f", NodeKind::Regular, 0o644, 0, 0).unwrap();
        let page = [0x5au8; 4096];
        let before = free();
        for i in 0..PAGES {
            assert_eq!(f.write_at((i * 4096) as u64, &page).unwrap(), 4096);
        }
        let full = free();
        let used = before - full;
        assert!(
            (PAGES - SLACK..=PAGES + SLACK).contains(&used),
            "{used} frames for {PAGES} pages"
        );
        let mut back = [0u8; 4096];
        assert_eq!(f.read_at(((PAGES - 1) * 4096) as u64, &mut back).unwrap(), 4096);
        assert!(back.iter().all(|&b| b == 0x5a));
        // Unlinked while still referenced (an open file): kept; then the
        // frames go back to the frame allocator.
        root.unlink(b"f").unwrap();
        assert!(free() + SLACK <= before);
        drop(f);
        let after = free();
        assert!(after + SLACK >= before, "free {before} -> {full} -> {after}");
    }
}
