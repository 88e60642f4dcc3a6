//! Linux's errno values (include/uapi/asm-generic/errno-base.h and errno.h,
//! which arm64 uses unchanged), with glibc's `strerror` messages, and the
//! kernel-internal restart codes of include/linux/errno.h, which a system
//! call may return inside the kernel but which never reach user space.

use core::fmt;

macro_rules! errnos {
    ($($name:ident = $num:literal => $msg:literal,)*;
     kernel: $($kname:ident = $knum:literal => $kmsg:literal,)*) => {
        /// A Linux error number. System calls return it negated in x0.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(i32)]
        #[allow(non_camel_case_types)] // Linux's names, ERESTART_RESTARTBLOCK too
        pub enum Errno {
            $(#[doc = $msg] $name = $num,)*
            $(#[doc = $kmsg] $kname = $knum,)*
        }

        impl Errno {
            /// Every errno user space can see, in numeric order (not the
            /// kernel-internal restart codes).
            pub const ALL: &'static [Errno] = &[$(Errno::$name,)*];

            /// The errno with number `n`; `None` for numbers Linux does not
            /// define (0, 41, 58 and everything above 133).
            pub const fn from_i32(n: i32) -> Option<Errno> {
                match n {
                    $($num => Some(Errno::$name),)*
                    _ => None,
                }
            }

            /// The errno or restart code with number `n`, as the kernel may
            /// hold it: [`Errno::from_i32`] plus 512, 513, 514 and 516.
            pub const fn from_kernel_i32(n: i32) -> Option<Errno> {
                match n {
                    $($knum => Some(Errno::$kname),)*
                    _ => Errno::from_i32(n),
                }
            }

            /// Whether this is a kernel-internal restart code.
            pub const fn is_restart(self) -> bool {
                matches!(self, $(Errno::$kname)|*)
            }

            /// The symbolic name, e.g. `"ENOENT"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Errno::$name => stringify!($name),)*
                    $(Errno::$kname => stringify!($kname),)*
                }
            }

            /// The message `strerror` gives, e.g. `"No such file or directory"`.
            pub const fn message(self) -> &'static str {
                match self {
                    $(Errno::$name => $msg,)*
                    $(Errno::$kname => $kmsg,)*
                }
            }
        }
    };
}

errnos! {
    EPERM = 1 => "Operation not permitted",
    ENOENT = 2 => "No such file or directory",
    ESRCH = 3 => "No such process",
    EINTR = 4 => "Interrupted system call",
    EIO = 5 => "Input/output error",
    ENXIO = 6 => "No such device or address",
    E2BIG = 7 => "Argument list too long",
    ENOEXEC = 8 => "Exec format error",
    EBADF = 9 => "Bad file descriptor",
    ECHILD = 10 => "No child processes",
    EAGAIN = 11 => "Resource temporarily unavailable",
    ENOMEM = 12 => "Cannot allocate memory",
    EACCES = 13 => "Permission denied",
    EFAULT = 14 => "Bad address",
    ENOTBLK = 15 => "Block device required",
    EBUSY = 16 => "Device or resource busy",
    EEXIST = 17 => "File exists",
    EXDEV = 18 => "Invalid cross-device link",
    ENODEV = 19 => "No such device",
    ENOTDIR = 20 => "Not a directory",
    EISDIR = 21 => "Is a directory",
    EINVAL = 22 => "Invalid argument",
    ENFILE = 23 => "Too many open files in system",
    EMFILE = 24 => "Too many open files",
    ENOTTY = 25 => "Inappropriate ioctl for device",
    ETXTBSY = 26 => "Text file busy",
    EFBIG = 27 => "File too large",
    ENOSPC = 28 => "No space left on device",
    ESPIPE = 29 => "Illegal seek",
    EROFS = 30 => "Read-only file system",
    EMLINK = 31 => "Too many links",
    EPIPE = 32 => "Broken pipe",
    EDOM = 33 => "Numerical argument out of domain",
    ERANGE = 34 => "Numerical result out of range",
    EDEADLK = 35 => "Resource deadlock avoided",
    ENAMETOOLONG = 36 => "File name too long",
    ENOLCK = 37 => "No locks available",
    ENOSYS = 38 => "Function not implemented",
    ENOTEMPTY = 39 => "Directory not empty",
    ELOOP = 40 => "Too many levels of symbolic links",
    ENOMSG = 42 => "No message of desired type",
    EIDRM = 43 => "Identifier removed",
    ECHRNG = 44 => "Channel number out of range",
    EL2NSYNC = 45 => "Level 2 not synchronized",
    EL3HLT = 46 => "Level 3 halted",
    EL3RST = 47 => "Level 3 reset",
    ELNRNG = 48 => "Link number out of range",
    EUNATCH = 49 => "Protocol driver not attached",
    ENOCSI = 50 => "No CSI structure available",
    EL2HLT = 51 => "Level 2 halted",
    EBADE = 52 => "Invalid exchange",
    EBADR = 53 => "Invalid request descriptor",
    EXFULL = 54 => "Exchange full",
    ENOANO = 55 => "No anode",
    EBADRQC = 56 => "Invalid request code",
    EBADSLT = 57 => "Invalid slot",
    EBFONT = 59 => "Bad font file format",
    ENOSTR = 60 => "Device not a stream",
    ENODATA = 61 => "No data available",
    ETIME = 62 => "Timer expired",
    ENOSR = 63 => "Out of streams resources",
    ENONET = 64 => "Machine is not on the network",
    ENOPKG = 65 => "Package not installed",
    EREMOTE = 66 => "Object is remote",
    ENOLINK = 67 => "Link has been severed",
    EADV = 68 => "Advertise error",
    ESRMNT = 69 => "Srmount error",
    ECOMM = 70 => "Communication error on send",
    EPROTO = 71 => "Protocol error",
    EMULTIHOP = 72 => "Multihop attempted",
    EDOTDOT = 73 => "RFS specific error",
    EBADMSG = 74 => "Bad message",
    EOVERFLOW = 75 => "Value too large for defined data type",
    ENOTUNIQ = 76 => "Name not unique on network",
    EBADFD = 77 => "File descriptor in bad state",
    EREMCHG = 78 => "Remote address changed",
    ELIBACC = 79 => "Can not access a needed shared library",
    ELIBBAD = 80 => "Accessing a corrupted shared library",
    ELIBSCN = 81 => ".lib section in a.out corrupted",
    ELIBMAX = 82 => "Attempting to link in too many shared libraries",
    ELIBEXEC = 83 => "Cannot exec a shared library directly",
    EILSEQ = 84 => "Invalid or incomplete multibyte or wide character",
    ERESTART = 85 => "Interrupted system call should be restarted",
    ESTRPIPE = 86 => "Streams pipe error",
    EUSERS = 87 => "Too many users",
    ENOTSOCK = 88 => "Socket operation on non-socket",
    EDESTADDRREQ = 89 => "Destination address required",
    EMSGSIZE = 90 => "Message too long",
    EPROTOTYPE = 91 => "Protocol wrong type for socket",
    ENOPROTOOPT = 92 => "Protocol not available",
    EPROTONOSUPPORT = 93 => "Protocol not supported",
    ESOCKTNOSUPPORT = 94 => "Socket type not supported",
    EOPNOTSUPP = 95 => "Operation not supported",
    EPFNOSUPPORT = 96 => "Protocol family not supported",
    EAFNOSUPPORT = 97 => "Address family not supported by protocol",
    EADDRINUSE = 98 => "Address already in use",
    EADDRNOTAVAIL = 99 => "Cannot assign requested address",
    ENETDOWN = 100 => "Network is down",
    ENETUNREACH = 101 => "Network is unreachable",
    ENETRESET = 102 => "Network dropped connection on reset",
    ECONNABORTED = 103 => "Software caused connection abort",
    ECONNRESET = 104 => "Connection reset by peer",
    ENOBUFS = 105 => "No buffer space available",
    EISCONN = 106 => "Transport endpoint is already connected",
    ENOTCONN = 107 => "Transport endpoint is not connected",
    ESHUTDOWN = 108 => "Cannot send after transport endpoint shutdown",
    ETOOMANYREFS = 109 => "Too many references: cannot splice",
    ETIMEDOUT = 110 => "Connection timed out",
    ECONNREFUSED = 111 => "Connection refused",
    EHOSTDOWN = 112 => "Host is down",
    EHOSTUNREACH = 113 => "No route to host",
    EALREADY = 114 => "Operation already in progress",
    EINPROGRESS = 115 => "Operation now in progress",
    ESTALE = 116 => "Stale file handle",
    EUCLEAN = 117 => "Structure needs cleaning",
    ENOTNAM = 118 => "Not a XENIX named type file",
    ENAVAIL = 119 => "No XENIX semaphores available",
    EISNAM = 120 => "Is a named type file",
    EREMOTEIO = 121 => "Remote I/O error",
    EDQUOT = 122 => "Disk quota exceeded",
    ENOMEDIUM = 123 => "No medium found",
    EMEDIUMTYPE = 124 => "Wrong medium type",
    ECANCELED = 125 => "Operation canceled",
    ENOKEY = 126 => "Required key not available",
    EKEYEXPIRED = 127 => "Key has expired",
    EKEYREVOKED = 128 => "Key has been revoked",
    EKEYREJECTED = 129 => "Key was rejected by service",
    EOWNERDEAD = 130 => "Owner died",
    ENOTRECOVERABLE = 131 => "State not recoverable",
    ERFKILL = 132 => "Operation not possible due to RF-kill",
    EHWPOISON = 133 => "Memory page has hardware error",
    ;
    kernel:
    ERESTARTSYS = 512 => "Restart the call if the handler has SA_RESTART, else EINTR",
    ERESTARTNOINTR = 513 => "Always restart the call",
    ERESTARTNOHAND = 514 => "Restart the call if no handler runs, else EINTR",
    ERESTART_RESTARTBLOCK = 516 => "Restart through restart_syscall, else EINTR",
}

/// The highest errno a system call or an `ERR_PTR` carries (Linux's
/// `MAX_ERRNO`, include/linux/err.h): return values -4095..=-1 are errors,
/// which is what C libraries test for.
pub const MAX_ERRNO: i64 = 4095;

impl Errno {
    /// `EWOULDBLOCK` is another name for `EAGAIN` in Linux.
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;
    /// `EDEADLOCK` is another name for `EDEADLK` in asm-generic.
    pub const EDEADLOCK: Errno = Errno::EDEADLK;
    /// `ENOTSUP` is another name for `EOPNOTSUPP` (glibc).
    pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;

    /// The positive number, e.g. 2 for `ENOENT`.
    pub const fn as_i32(self) -> i32 {
        self as i32
    }

    /// The value a system call returns in x0: `-errno`.
    pub const fn as_neg(self) -> i64 {
        -(self as i32 as i64)
    }

    /// Reads a system call return value: `Some(errno)` when it lies in
    /// Linux's error range -4095..=-1 and names a defined errno.
    pub const fn from_ret(ret: i64) -> Option<Errno> {
        if ret < 0 && ret >= -MAX_ERRNO {
            Errno::from_i32(-ret as i32)
        } else {
            None
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_linux() {
        assert_eq!(Errno::EPERM as i32, 1);
        assert_eq!(Errno::ENOENT as i32, 2);
        assert_eq!(Errno::EAGAIN as i32, 11);
        assert_eq!(Errno::EACCES as i32, 13);
        assert_eq!(Errno::EINVAL as i32, 22);
        assert_eq!(Errno::EPIPE as i32, 32);
        assert_eq!(Errno::ENAMETOOLONG as i32, 36);
        assert_eq!(Errno::ENOSYS as i32, 38);
        assert_eq!(Errno::ENOTEMPTY as i32, 39);
        assert_eq!(Errno::ELOOP as i32, 40);
        assert_eq!(Errno::ENOMSG as i32, 42);
        assert_eq!(Errno::EBFONT as i32, 59);
        assert_eq!(Errno::EOVERFLOW as i32, 75);
        assert_eq!(Errno::EOPNOTSUPP as i32, 95);
        assert_eq!(Errno::ETIMEDOUT as i32, 110);
        assert_eq!(Errno::ESTALE as i32, 116);
        assert_eq!(Errno::ECANCELED as i32, 125);
        assert_eq!(Errno::EHWPOISON as i32, 133);
    }

    #[test]
    fn every_number_from_1_to_133_except_the_gaps_is_defined() {
        assert_eq!(Errno::ALL.len(), 131);
        for n in 1..=133 {
            let e = Errno::from_i32(n);
            if n == 41 || n == 58 {
                assert!(e.is_none(), "{n}");
            } else {
                assert_eq!(e.unwrap() as i32, n);
            }
        }
        assert!(Errno::from_i32(0).is_none());
        assert!(Errno::from_i32(134).is_none());
        assert!(Errno::ALL.windows(2).all(|w| (w[0] as i32) < (w[1] as i32)));
    }

    #[test]
    fn names_messages_and_negation() {
        assert_eq!(Errno::ENOENT.name(), "ENOENT");
        assert_eq!(Errno::ENOENT.message(), "No such file or directory");
        assert_eq!(Errno::EWOULDBLOCK, Errno::EAGAIN);
        assert_eq!(Errno::EDEADLOCK, Errno::EDEADLK);
        assert_eq!(Errno::EBADF.as_neg(), -9);
        assert_eq!(Errno::from_ret(-2), Some(Errno::ENOENT));
        assert_eq!(Errno::from_ret(3), None);
        assert_eq!(Errno::from_ret(-4096), None);
    }

    #[test]
    fn restart_codes_are_kernel_only() {
        assert_eq!(Errno::ERESTARTSYS as i32, 512);
        assert_eq!(Errno::ERESTARTNOINTR as i32, 513);
        assert_eq!(Errno::ERESTARTNOHAND as i32, 514);
        assert_eq!(Errno::ERESTART_RESTARTBLOCK as i32, 516);
        assert_eq!(Errno::ERESTARTSYS.name(), "ERESTARTSYS");
        assert!(Errno::ERESTARTNOHAND.is_restart());
        assert!(!Errno::EINTR.is_restart());
        assert_eq!(Errno::from_i32(512), None);
        assert_eq!(Errno::from_ret(-512), None);
        assert_eq!(Errno::from_kernel_i32(516), Some(Errno::ERESTART_RESTARTBLOCK));
        assert_eq!(Errno::from_kernel_i32(515), None);
        assert_eq!(Errno::from_kernel_i32(2), Some(Errno::ENOENT));
        assert!(!Errno::ALL.contains(&Errno::ERESTARTSYS));
    }
}
