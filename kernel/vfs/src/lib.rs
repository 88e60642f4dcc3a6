//! The kernel's virtual filesystem, as `no_std` + `alloc` code that the
//! system call handlers call and that is tested on the host.
//!
//! * [`Inode`]: the filesystem-independent object (`Arc<dyn Inode>`) with
//!   [`Metadata`]; [`ramfs`] holds the initramfs, [`devfs`] and [`procfs`]
//!   are built on the same trait.
//! * [`Vfs`]: the mount table and Linux `namei` path lookup ([`Path`] is a
//!   mount plus an inode, like Linux's `struct path`), and the namespace
//!   operations (`openat`, `mkdirat`, `unlinkat`, `renameat2`, ...).
//! * [`OpenFile`]: an open file description (offset, status flags) shared by
//!   dup'ed descriptors; [`FdTable`]: a process's descriptors.
//! * [`pipe`]: pipes; [`device`]: device nodes, the [`DeviceRegistry`] the
//!   kernel supplies, and `/dev/null`, `/dev/zero`, `/dev/full`.
//! * [`initramfs`]: populating the root from newc cpio entries.
//!
//! # What the kernel supplies, and what it must do
//!
//! The crate never blocks and never touches user memory. An operation that
//! would block returns `Err(Errno::EAGAIN)` whatever the file's O_NONBLOCK
//! flag; the kernel then, for a blocking file, sleeps until the file's
//! [`WaitQueueHead`] (see [`OpenFile::wait_queue`]) is woken and retries.
//! To sleep without missing a wake-up, register a [`WaitHook`] (or read
//! [`WaitQueueHead::generation`]) *before* the attempt. Credentials come in
//! as a [`Cred`], time through a [`Clock`], drivers through a
//! [`DeviceRegistry`], and process information for `/proc` through a
//! [`procfs::ProcProvider`].
//!
//! Every error is Linux's errno for the case ([`uapi::Errno`]).

#![no_std]
#![deny(unsafe_code)]

extern crate alloc;

pub mod cred;
pub mod dentry;
pub mod devfs;
pub mod device;
pub mod fdtable;
pub mod file;
pub mod initramfs;
pub mod inode;
pub mod iov_iter;
pub mod mount;
pub mod namei;
pub mod open;
pub mod pipe;
pub mod procfs;
pub mod ramfs;
pub mod wait;

pub use cred::{may_access, Cred, MAY_EXEC, MAY_READ, MAY_WRITE};
pub use device::{CharDevice, DeviceRegistry, DeviceTable};
pub use fdtable::FdTable;
pub use file::{FileOps, OpenFile};
pub use inode::{
    alloc_anon_dev, Clock, DirEntry, EpochClock, FileSystem, FileType, Inode, Metadata, NodeKind, Timespec,
};
pub use iov_iter::{IovIter, IovSource, KernelIter, KernelSource};
pub use mount::{Mount, Path, Vfs};
pub use uapi::Errno;
pub use wait::{WaitHook, WaitQueueHead, WaiterId};

/// Results of the VFS: Linux errno on failure.
pub type Result<T> = core::result::Result<T, Errno>;
