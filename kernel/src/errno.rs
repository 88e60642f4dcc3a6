//! Linux's errno values (include/uapi/asm-generic/errno*.h), plus the
//! kernel-internal restart codes a system call may return
//! (include/linux/errno.h), which never reach user space.

/// A Linux error number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

#[allow(missing_docs)]
impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const ESRCH: Errno = Errno(3);
    pub const EINTR: Errno = Errno(4);
    pub const EIO: Errno = Errno(5);
    pub const ENXIO: Errno = Errno(6);
    pub const E2BIG: Errno = Errno(7);
    pub const ENOEXEC: Errno = Errno(8);
    pub const EBADF: Errno = Errno(9);
    pub const ECHILD: Errno = Errno(10);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EFAULT: Errno = Errno(14);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const ENODEV: Errno = Errno(19);
    pub const ENOTDIR: Errno = Errno(20);
    pub const EISDIR: Errno = Errno(21);
    pub const EINVAL: Errno = Errno(22);
    pub const ENFILE: Errno = Errno(23);
    pub const EMFILE: Errno = Errno(24);
    pub const ENOTTY: Errno = Errno(25);
    pub const ENOSPC: Errno = Errno(28);
    pub const ESPIPE: Errno = Errno(29);
    pub const EROFS: Errno = Errno(30);
    pub const EPIPE: Errno = Errno(32);
    pub const ERANGE: Errno = Errno(34);
    pub const ENAMETOOLONG: Errno = Errno(36);
    pub const ENOSYS: Errno = Errno(38);
    pub const ENOTEMPTY: Errno = Errno(39);
    pub const ELOOP: Errno = Errno(40);
    pub const ENODATA: Errno = Errno(61);
    pub const EOVERFLOW: Errno = Errno(75);
    pub const EOPNOTSUPP: Errno = Errno(95);
    pub const ETIMEDOUT: Errno = Errno(110);
    /// Restart the call if the handler has SA_RESTART, else EINTR.
    pub const ERESTARTSYS: Errno = Errno(512);
    /// Always restart.
    pub const ERESTARTNOINTR: Errno = Errno(513);
    /// Restart if no handler runs, else EINTR.
    pub const ERESTARTNOHAND: Errno = Errno(514);
    /// Restart through restart_syscall (EINTR with a handler).
    pub const ERESTART_RESTARTBLOCK: Errno = Errno(516);

    /// The value a system call returns for this error.
    pub fn as_neg(self) -> i64 {
        -(self.0 as i64)
    }
}

impl From<uapi::Errno> for Errno {
    fn from(e: uapi::Errno) -> Errno {
        Errno(e as i32)
    }
}

impl From<arch::nofault::Fault> for Errno {
    fn from(_: arch::nofault::Fault) -> Errno {
        Errno::EFAULT
    }
}
