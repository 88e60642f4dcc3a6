//! The names probes read from the objects Linux's `%pd` and `%pD` fetch
//! types point at. This VFS has no dentry cache: a path is a mount and an
//! inode. What `dput` releases is a [`Dentry`] (the path reference and the
//! name it was reached by), and an open file keeps the last component of
//! the name it was opened by in a [`DentryName`]. Both begin with the name
//! pointer, as a fixed `#[repr(C)]` header at the offsets below, so that
//! `+0(+DENTRY_D_NAME_OFFSET($arg1)):string` reads a dentry's name and
//! `+0(+DENTRY_D_NAME_OFFSET(+FILE_F_DENTRY_OFFSET($arg1))):string` an open
//! file's, as Linux's expansions of `%pd`/`%pD` do with its own offsets.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::mount::Path;

/// Offset of the name pointer in a [`Dentry`] and a [`DentryName`]
/// (Linux's `offsetof(struct dentry, d_name.name)`).
pub const DENTRY_D_NAME_OFFSET: usize = 0;
/// Offset, in an open file, of the pointer to its [`DentryName`] (Linux's
/// `offsetof(struct file, f_path.dentry)`).
pub const FILE_F_DENTRY_OFFSET: usize = 0;

/// A name as Linux's `struct qstr` holds it: the bytes, NUL-terminated
/// (the terminator not counted in `len`).
#[repr(C)]
#[derive(Debug)]
pub struct Qstr {
    pub name: *const u8,
    pub len: usize,
}

/// A path reference being released, with the name it was reached by
/// (what `dput`'s first argument points at).
#[repr(C)]
pub struct Dentry {
    /// Valid for the call it is passed to.
    pub d_name: Qstr,
    pub path: Path,
}

/// The last component of an open file's name, NUL-terminated, owned.
#[repr(C)]
pub struct DentryName {
    d_name: Qstr,
    bytes: Box<[u8]>,
}

// SAFETY: `d_name` points into `bytes`, which the value owns and never
// changes; sharing or sending it shares or sends immutable bytes.
#[allow(unsafe_code)]
unsafe impl Send for DentryName {}
// SAFETY: as for Send: nothing in it is ever mutated.
#[allow(unsafe_code)]
unsafe impl Sync for DentryName {}

/// How open files' names are allocated: the kernel puts them in its
/// `dentry` slab cache ([`set_dentry_alloc`]); plain `Arc::new` until then.
static DENTRY_ALLOC: spin::Once<fn(DentryName) -> Arc<DentryName>> = spin::Once::new();

/// Sets, once, how open files' names are allocated (Linux's
/// `dentry_cache`).
pub fn set_dentry_alloc(alloc: fn(DentryName) -> Arc<DentryName>) {
    DENTRY_ALLOC.call_once(|| alloc);
}

impl DentryName {
    /// The last component of `path` (`/` for the root).
    pub fn from_path_name(path: &[u8]) -> Arc<DentryName> {
        let trimmed = match path.iter().rposition(|&b| b != b'/') {
            Some(end) => &path[..=end],
            None => &path[..path.len().min(1)],
        };
        let base = match trimmed.iter().rposition(|&b| b == b'/') {
            Some(i) if trimmed.len() > 1 => &trimmed[i + 1..],
            _ => trimmed,
        };
        let mut v = Vec::with_capacity(base.len() + 1);
        v.extend_from_slice(base);
        v.push(0);
        let bytes = v.into_boxed_slice();
        // Moving the value keeps `name` valid: it points into the heap.
        let d = DentryName {
            d_name: Qstr {
                name: bytes.as_ptr(),
                len: base.len(),
            },
            bytes,
        };
        match DENTRY_ALLOC.get() {
            Some(alloc) => alloc(d),
            None => Arc::new(d),
        }
    }

    /// The name, without its terminator.
    pub fn name(&self) -> &[u8] {
        &self.bytes[..self.d_name.len]
    }
}

/// Calls `dput` on `path` reached by `name` (given without terminator; a
/// copy on the stack gets one).
pub fn dput_named(name: &[u8], path: Path) {
    let mut buf = [0u8; uapi::NAME_MAX + 1];
    let n = name.len().min(uapi::NAME_MAX);
    buf[..n].copy_from_slice(&name[..n]);
    crate::namei::dput(Dentry {
        d_name: Qstr {
            name: buf.as_ptr(),
            len: n,
        },
        path,
    });
}

const _: () = assert!(core::mem::offset_of!(Dentry, d_name) == DENTRY_D_NAME_OFFSET);
const _: () = assert!(core::mem::offset_of!(DentryName, d_name) == DENTRY_D_NAME_OFFSET);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dentry_name_is_the_last_component_nul_terminated() {
        for (path, want) in [
            (&b"/sys/kernel/tracing/events/enable"[..], &b"enable"[..]),
            (b"relative", b"relative"),
            (b"/dir/trailing//", b"trailing"),
            (b"/", b"/"),
            (b"", b""),
        ] {
            let d = DentryName::from_path_name(path);
            assert_eq!(d.name(), want, "{path:?}");
            // What a probe reads: the bytes at the name pointer, up to NUL.
            #[allow(unsafe_code)]
            let read: Vec<u8> = (0..=d.d_name.len)
                // SAFETY: the name pointer covers len + 1 bytes (the NUL).
                .map(|i| unsafe { *d.d_name.name.add(i) })
                .take_while(|&b| b != 0)
                .collect();
            assert_eq!(read, want);
            assert_eq!(d.d_name.len, want.len());
        }
    }

    #[test]
    fn dentry_and_file_name_pointers_sit_at_the_advertised_offsets() {
        let d = DentryName::from_path_name(b"/a/name");
        let base = &*d as *const DentryName as usize;
        assert_eq!(&d.d_name as *const Qstr as usize - base, DENTRY_D_NAME_OFFSET);
    }
}
