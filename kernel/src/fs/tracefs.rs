//! The directory operations of tracefs that Linux exports from
//! fs/tracefs (`tracefs_create_dir` in inode.c, `eventfs_create_dir` in
//! event_inode.c), under those names and with the new directory's name as
//! a NUL-terminated string at x0, so that probes written for Linux
//! (`p tracefs_create_dir +0(%x0):string`, ftracetest's
//! `kprobe_args_string.tc`) read it. They live outside `trace`, which is
//! notrace, so that they can be probed and traced like Linux's.

use crate::errno::Errno;
use crate::fs::pseudo::PseudoDir;
use alloc::ffi::CString;
use alloc::sync::Arc;
use core::ffi::CStr;

/// Linux's `tracefs_create_dir(name, parent)`: a new directory of tracefs
/// (an instance, say); EEXIST if `parent` has one by that name.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
pub fn tracefs_create_dir(name: &CStr, parent: &Arc<PseudoDir>) -> Result<Arc<PseudoDir>, Errno> {
    // Linux's __create_dir: rwx for the owner, r-x for the group, nothing
    // for others.
    parent.try_dir_mode(name.to_str().map_err(|_| Errno::EINVAL)?, 0o750)
}

/// Linux's `eventfs_create_dir(name, parent, entries, ...)`: the directory
/// of an event system or of an event under `events/`, filled with its
/// files by `entries` (Linux's entry callbacks) before anyone can look it
/// up.
#[allow(unsafe_code)] // exported under Linux's name, for probes
#[no_mangle]
#[inline(never)]
pub fn eventfs_create_dir(
    name: &CStr,
    parent: &Arc<PseudoDir>,
    entries: &dyn Fn(&Arc<PseudoDir>),
) -> Result<Arc<PseudoDir>, Errno> {
    parent.try_dir_filled(name.to_str().map_err(|_| Errno::EINVAL)?, entries)
}

/// `name` as the C string these take; EINVAL for one with a NUL inside.
pub fn c_name(name: &str) -> Result<CString, Errno> {
    CString::new(name).map_err(|_| Errno::EINVAL)
}
