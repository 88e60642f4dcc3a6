//! The kernel's side of the filesystem: the one VFS (root from the
//! initramfs, devfs on /dev, procfs on /proc), per-process file tables and
//! working directories, sleeping on files that are not ready, and reading
//! executables for exec.

pub mod proc;
pub mod pseudo;
pub mod tty;

use crate::errno::Errno;
use crate::sched::{self, Task, TaskState};
use alloc::sync::Arc;
use alloc::vec::Vec;
use uapi::fcntl::O_RDWR;
use vfs::fdtable::FdTable;
use vfs::file::OpenFile;
use vfs::mount::{Path, Vfs};
use vfs::{Clock, Cred, Timespec, WaitHook};

static VFS: spin::Once<Vfs> = spin::Once::new();

/// The VFS (after `mount_root`).
pub fn vfs() -> &'static Vfs {
    VFS.get().expect("VFS used before mount_root")
}

/// File timestamps from the kernel's clock (time since boot: there is no
/// real-time clock).
pub struct KernelClock;

impl Clock for KernelClock {
    fn now(&self) -> Timespec {
        let ns = crate::time::ktime_get_ns();
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
    /// Working directory.
    pub cwd: Path,
}

impl ProcessFs {
    /// The state of a child: shared or copied.
    pub fn fork(&self, share_files: bool, _share_fs: bool) -> ProcessFs {
        let files = if share_files {
            self.files.clone()
        } else {
            Arc::new(self.files.fork())
        };
        ProcessFs {
            files,
            cwd: self.cwd.clone(),
        }
    }

    /// At exit: drop the table (closing files if this was its last user).
    pub fn release(&mut self) {
        self.files = Arc::new(FdTable::new());
    }

    /// At exec: close the close-on-exec descriptors.
    pub fn close_on_exec(&mut self) {
        self.files.close_on_exec();
    }
}

/// Builds the root filesystem: a RAM filesystem filled from the initramfs
/// (if any), with devfs on /dev and procfs on /proc.
pub fn mount_root(initrd: Option<(u64, u64)>) -> Result<(), Errno> {
    let clock: Arc<dyn Clock> = Arc::new(KernelClock);
    let devices = Arc::new(vfs::device::DeviceTable::with_mem_devices());
    let console = tty::console();
    devices.register_chrdev(5, 1, console.clone());
    devices.register_chrdev(5, 0, console);
    let root = vfs::ramfs::RamFs::with_type(clock.clone(), "rootfs");
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
fn debugfs() -> Arc<pseudo::PseudoFs> {
    static DEBUGFS: spin::Once<Arc<pseudo::PseudoFs>> = spin::Once::new();
    DEBUGFS
        .call_once(|| {
            let fs = pseudo::PseudoFs::new("debugfs");
            crate::kprobes::debugfs::create(fs.root_dir());
            fs
        })
        .clone()
}

/// A new instance of the filesystem type `fstype` for mount(2); ENODEV for
/// types the kernel does not have.
pub fn filesystem_for(fstype: &[u8]) -> Result<Arc<dyn vfs::FileSystem>, Errno> {
    let clock: Arc<dyn Clock> = Arc::new(KernelClock);
    Ok(match fstype {
        b"proc" => vfs::procfs::ProcFs::new(Arc::new(proc::Provider), clock),
        b"devtmpfs" => vfs::devfs::devfs(clock)?,
        b"debugfs" => debugfs(),
        b"tmpfs" | b"ramfs" => vfs::ramfs::RamFs::with_type(clock, if fstype == b"tmpfs" { "tmpfs" } else { "ramfs" }),
        _ => return Err(Errno::ENODEV),
    })
}

#[allow(unsafe_code)] // A view of the boot loader's initramfs, reserved from the frame allocator.
fn initrd_bytes(base: u64, size: u64) -> Option<&'static [u8]> {
    // SAFETY: the initrd range is kept from the frame allocator (init.rs
    // reserves it) and never written, so a 'static shared view is sound.
    unsafe { arch::mmu::linear_slice(base, size as usize) }
}

/// The files of PID 1: fds 0, 1, 2 on /dev/console, cwd at /.
pub fn init_process_fs() -> Result<ProcessFs, Errno> {
    let v = vfs();
    let files = Arc::new(FdTable::new());
    let console = v.openat(&cred(), &v.root(), b"/dev/console", O_RDWR, 0, 0)?;
    for _ in 0..3 {
        files.install(console.clone(), false)?;
    }
    Ok(ProcessFs { files, cwd: v.root() })
}

/// The current process's cwd (or / for kernel threads).
pub fn current_cwd() -> Path {
    sched::try_current()
        .and_then(|t| t.process.get().map(|p| p.fs.lock().cwd.clone()))
        .unwrap_or_else(|| vfs().root())
}

/// The current process's descriptor table.
pub fn current_files() -> Arc<FdTable> {
    crate::process::current_process().fs.lock().files.clone()
}

/// Reads a whole executable for exec: it must be a regular file with an
/// execute bit for us (EACCES otherwise).
pub fn read_exec_file(path: &str) -> Result<Vec<u8>, Errno> {
    let v = vfs();
    let c = cred();
    let p = v.lookup(&c, &current_cwd(), path.as_bytes(), true)?;
    let meta = p.metadata();
    if !meta.is_regular() {
        return Err(Errno::EACCES);
    }
    vfs::open::may_exec(&c, &meta)?;
    let f = v.openat(&c, &current_cwd(), path.as_bytes(), uapi::fcntl::O_RDONLY, 0, 0)?;
    f.read_to_end()
}

/// Makes a sleeping task runnable when a file's wait queue is woken.
struct TaskWaker(Arc<Task>);

impl WaitHook for TaskWaker {
    fn wake(&self) {
        sched::wake_up(&self.0);
    }
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
        let id = wq.add(Arc::new(TaskWaker(me.clone())));
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
        wq.remove(id);
        if interrupted {
            return Err(Errno::ERESTARTSYS);
        }
    }
}

/// From the tick: takes console input.
pub fn console_poll() {
    tty::poll();
}
