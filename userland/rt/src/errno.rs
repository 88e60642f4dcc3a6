//! Linux errno values; their names and messages (the texts glibc's
//! `strerror` gives, which coreutils and busybox print) come from the
//! kernel's `uapi` crate, the one table of them.

use core::fmt;

/// A Linux error number, as a system call returns it negated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

macro_rules! errnos {
    ($($name:ident)*) => {
        impl Errno {
            $(pub const $name: Errno = Errno(uapi::Errno::$name as i32);)*
        }
    };
}

impl Errno {
    /// The symbolic name (`"ENOENT"`), if known.
    pub fn name(self) -> Option<&'static str> {
        uapi::Errno::from_i32(self.0).map(|e| e.name())
    }

    /// The message `strerror` gives (`"No such file or directory"`), if known.
    pub fn message(self) -> Option<&'static str> {
        uapi::Errno::from_i32(self.0).map(|e| e.message())
    }
}

errnos! {
    EPERM
    ENOENT
    ESRCH
    EINTR
    EIO
    ENXIO
    E2BIG
    ENOEXEC
    EBADF
    ECHILD
    EAGAIN
    ENOMEM
    EACCES
    EFAULT
    ENOTBLK
    EBUSY
    EEXIST
    EXDEV
    ENODEV
    ENOTDIR
    EISDIR
    EINVAL
    ENFILE
    EMFILE
    ENOTTY
    ETXTBSY
    EFBIG
    ENOSPC
    ESPIPE
    EROFS
    EMLINK
    EPIPE
    EDOM
    ERANGE
    EDEADLK
    ENAMETOOLONG
    ENOLCK
    ENOSYS
    ENOTEMPTY
    ELOOP
    ENODATA
    EOVERFLOW
    ENOTSUP
    ETIMEDOUT
    ENOTSOCK
    EAFNOSUPPORT
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message() {
            Some(m) => f.write_str(m),
            // glibc's text for numbers it has no message for.
            None => write!(f, "Unknown error {}", self.0),
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "Errno({})", self.0),
        }
    }
}
