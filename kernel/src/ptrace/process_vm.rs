//! `process_vm_readv` and `process_vm_writev` (Linux's mm/process_vm_access.c):
//! copies between the caller's iovecs and another process's, honouring the
//! target's protections (no FOLL_FORCE, unlike PEEK/POKE).

use crate::errno::Errno;
use crate::syscalls::SysResult;
use crate::uaccess::{self, UserPtr};
use alloc::vec::Vec;
use arch::addr::UserVirtAddr;
use uapi::uio::IoVec;

/// The page size of user address spaces.
const PAGE: u64 = arch::memory::PAGE_SIZE as u64;

/// Bytes moved per step (one bounce buffer).
const CHUNK: usize = 4096;

/// `process_vm_readv` (`write` false) and `process_vm_writev`: the bytes
/// moved, stopping at the first remote address that cannot be accessed
/// (EFAULT if nothing moved).
pub fn process_vm_rw(
    pid: i64,
    lvec: UserPtr,
    liovcnt: u64,
    rvec: UserPtr,
    riovcnt: u64,
    flags: u64,
    write: bool,
) -> SysResult {
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    // Zeroed only for a call with two to eight entries on that side.
    let (mut lfast, mut rfast) = (None, None);
    // In Linux's order: nothing to move locally ends the call before the
    // remote array is read, nothing remotely before the target is looked
    // up.
    let local = import_iovecs(lvec, liovcnt, true, &mut lfast)?;
    let local = local.as_slice(&lfast);
    if local.iter().all(|&(_, l)| l == 0) {
        return Ok(0);
    }
    let remote = import_iovecs(rvec, riovcnt, false, &mut rfast)?;
    let remote = remote.as_slice(&rfast);
    if remote.iter().all(|&(_, l)| l == 0) {
        return Ok(0);
    }
    let pid = u32::try_from(pid).ok().filter(|&p| p != 0).ok_or(Errno::ESRCH)?;
    // The target's address space taken under the lookup, with no
    // reference to the task itself (two atomic updates fewer a call).
    let mm = crate::process::with_task(pid, |task| {
        super::access::mm_access(task, super::access::PtraceMode::AttachRealCreds)
    });
    // EPERM rather than mm_access's EACCES, as Linux maps it here.
    let mm = match mm.ok_or(Errno::ESRCH)? {
        Err(Errno::EACCES) => return Err(Errno::EPERM),
        r => r?,
    };
    let (mut li, mut loff) = (0usize, 0usize);
    let mut moved = 0usize;
    'remote: for &(rbase, rlen) in remote {
        let mut roff = 0usize;
        while roff < rlen {
            while li < local.len() && loff == local[li].1 {
                li += 1;
                loff = 0;
            }
            let Some(&(lbase, llen)) = local.get(li) else {
                break 'remote;
            };
            let n = (rlen - roff).min(llen - loff).min(CHUNK);
            let raddr = rbase.wrapping_add(roff as u64);
            if !write {
                // Page by page, so that a remote page that cannot be read
                // ends the call with the bytes before it (Linux's
                // process_vm_rw_single_vec pins what it can and copies
                // that much).
                let (done, r) = read_remote(&mm, raddr, n, UserPtr::new(lbase).wrapping_add(loff as u64));
                moved += done;
                if let Err(e) = r {
                    return if moved == 0 { Err(e) } else { Ok(moved as u64) };
                }
                roff += n;
                loff += n;
                continue;
            }
            // Page by page on both sides, so that the first page that
            // cannot be written remotely (absent, or read-only: no
            // FOLL_FORCE) or read locally ends the call with the bytes
            // before it, as Linux's pinning loop does.
            let (done, r) = write_remote(&mm, raddr, n, UserPtr::new(lbase).wrapping_add(loff as u64));
            moved += done;
            if let Err(e) = r {
                return if moved == 0 { Err(e) } else { Ok(moved as u64) };
            }
            roff += n;
            loff += n;
        }
    }
    Ok(moved as u64)
}

/// Iovec arrays this short are read onto the stack (Linux's UIO_FASTIOV):
/// the common one-iovec call allocates nothing.
const FAST_IOV: usize = 8;

/// Where `import_iovecs` put an array: in itself (one entry, the common
/// call), the first `n` slots of the caller's stack array, or the heap.
enum Iovecs {
    One((u64, usize)),
    Fast(usize),
    Heap(Vec<(u64, usize)>),
}

/// The caller's stack array for two to eight entries, made on first use.
type FastIovecs = Option<[(u64, usize); FAST_IOV]>;

impl Iovecs {
    fn as_slice<'a>(&'a self, fast: &'a FastIovecs) -> &'a [(u64, usize)] {
        match self {
            Iovecs::One(io) => core::slice::from_ref(io),
            Iovecs::Fast(n) => fast.as_ref().map_or(&[], |f| &f[..*n]),
            Iovecs::Heap(v) => v,
        }
    }
}

/// A user iovec array as (base, length) pairs: for the caller's own
/// buffers (`local`) checked as Linux's import_iovec (EINVAL for too many
/// entries or a negative length, EFAULT for a buffer outside the user
/// address space, the total cut to MAX_RW_COUNT), for the target's as its
/// iovec_from_user (the first two only); EFAULT when it cannot be read.
fn import_iovecs(p: UserPtr, n: u64, local: bool, fast: &mut FastIovecs) -> Result<Iovecs, Errno> {
    let count = usize::try_from(n).map_err(|_| Errno::EINVAL)?;
    if count > FAST_IOV {
        let v = if local {
            uaccess::import_iovec(p, n)?
        } else {
            uaccess::iovec_from_user(p, n)?
        };
        return Ok(Iovecs::Heap(
            v.into_iter().map(|io| (io.base, io.len as usize)).collect(),
        ));
    }
    // Linux's order: each entry read and its length checked in turn
    // (EFAULT, EINVAL), then, for local buffers, every address range
    // (EFAULT) and the total.
    let read = |i: usize| -> Result<IoVec, Errno> {
        let io = uaccess::get_user_iovec(p.wrapping_add((i * IoVec::SIZE) as u64))?;
        if !io.len_ok() {
            return Err(Errno::EINVAL);
        }
        Ok(io)
    };
    if count == 0 {
        return Ok(Iovecs::Fast(0));
    }
    if count == 1 {
        let mut io = [read(0)?];
        if local {
            uaccess::check_iovec_access(&mut io)?;
        }
        return Ok(Iovecs::One((io[0].base, io[0].len as usize)));
    }
    // Read an entry at a time (two loads each), with no staging array.
    let mut ios = [IoVec::default(); FAST_IOV];
    for (i, io) in ios.iter_mut().take(count).enumerate() {
        *io = read(i)?;
    }
    if local {
        uaccess::check_iovec_access(&mut ios[..count])?;
    }
    let slots = fast.get_or_insert([(0, 0); FAST_IOV]);
    for (slot, io) in slots.iter_mut().zip(&ios[..count]) {
        *slot = (io.base, io.len as usize);
    }
    Ok(Iovecs::Fast(count))
}

/// Copies `n` bytes at `raddr` of `mm` to the caller's `laddr` a page at a
/// time, straight from the remote frame (Linux's process_vm_rw_pages: one
/// copy, no bounce buffer): the bytes copied, and the error that stopped
/// the copy short (EFAULT) if it did. Whole pages count: a page is copied
/// whole or not at all.
fn read_remote(mm: &crate::mm::vm::Mm, raddr: u64, n: usize, laddr: UserPtr) -> (usize, Result<(), Errno>) {
    let mut done = 0usize;
    while done < n {
        let Some(va) = raddr.checked_add(done as u64).and_then(UserVirtAddr::new) else {
            return (done, Err(Errno::EFAULT));
        };
        let len = (n - done).min(PAGE as usize - va.page_offset());
        if let Err(e) = mm.read_to_user(va, len, laddr.wrapping_add(done as u64)) {
            return (done, Err(e));
        }
        done += len;
    }
    (done, Ok(()))
}

/// Copies `n` bytes from the caller's `laddr` to `raddr` of `mm` through a
/// one-page bounce buffer, in pieces that cross neither a remote nor a
/// local page boundary, so a fault on either side stops the copy exactly
/// where its page begins: the bytes written, and the error that stopped
/// the copy short (EFAULT) if it did.
fn write_remote(mm: &crate::mm::vm::Mm, raddr: u64, n: usize, laddr: UserPtr) -> (usize, Result<(), Errno>) {
    let mut buf = [0u8; CHUNK];
    let mut done = 0usize;
    while done < n {
        let Some(va) = raddr.checked_add(done as u64).and_then(UserVirtAddr::new) else {
            return (done, Err(Errno::EFAULT));
        };
        let src = laddr.wrapping_add(done as u64);
        let local_room = (PAGE - src.addr() % PAGE) as usize;
        let len = (n - done).min(PAGE as usize - va.page_offset()).min(local_room);
        let piece = &mut buf[..len];
        let r = uaccess::copy_from_user(piece, src).and_then(|()| mm.access_remote_checked(va, piece, true));
        if let Err(e) = r {
            return (done, Err(e));
        }
        done += len;
    }
    (done, Ok(()))
}
