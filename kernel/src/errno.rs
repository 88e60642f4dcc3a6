//! The kernel's errno: `uapi`'s [`Errno`], the one table of Linux's errno
//! values and of the kernel-internal restart codes (ERESTARTSYS 512,
//! ERESTARTNOINTR 513, ERESTARTNOHAND 514, ERESTART_RESTARTBLOCK 516),
//! re-exported here so that `crate::errno::Errno` names it. A fault on a
//! user address converts to EFAULT (`impl From<Fault>` lives in `arch`).

pub use uapi::Errno;
