//! User memory access for system calls: the arch primitives with EFAULT,
//! plus strings and string arrays with Linux's limits.

use crate::errno::Errno;
use crate::mm::slab::{KmemCache, SlabBox};
use crate::trace::tracepoint::kmem::GFP_KERNEL;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
pub use arch::addr::UserPtr;
use arch::addr::UserVirtAddr;

/// Copies `dst.len()` bytes from the user range `src` without resolving a
/// page fault (Linux's `copy_from_user_nofault`): from probe context a page
/// that is not present is a failed read (EFAULT), never a fault to handle.
pub fn copy_from_user_nofault(dst: &mut [u8], src: UserVirtAddr) -> Result<(), Errno> {
    let irq = arch::cpu::local_irq_save();
    crate::fault::pagefault_disable();
    let r = arch::uaccess::copy_from_user(dst, src.into());
    crate::fault::pagefault_enable();
    arch::cpu::local_irq_restore(irq);
    Ok(r?)
}

/// Copies `len` bytes from user address `src`.
pub fn copy_from_user_vec(src: UserPtr, len: usize) -> Result<Vec<u8>, Errno> {
    let mut v = zeroed_buf(len)?;
    arch::uaccess::copy_from_user(&mut v, src)?;
    Ok(v)
}

/// A zeroed kernel buffer of a user-chosen size: ENOMEM when the heap
/// cannot hold it, since an allocation failure would otherwise panic.
pub fn zeroed_buf(len: usize) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    v.resize(len, 0);
    Ok(v)
}

/// User memory as the destination of a read (Linux's `ITER_UBUF`): the
/// filesystem copies into it directly, and a fault part way makes the
/// read short.
pub struct UserIter {
    addr: UserVirtAddr,
    left: usize,
}

impl UserIter {
    /// `len` bytes at user address `addr` (see [`user_range`]).
    pub fn new(addr: UserVirtAddr, len: usize) -> Self {
        UserIter { addr, left: len }
    }
}

/// The start of the user range `[ptr, ptr + len)`, or EFAULT if it is not
/// all user space (Linux's `access_ok`). An empty range ending at the top
/// of user space passes as on Linux; nothing is copied to or from it, so
/// its start may stand for any user address.
pub fn user_range(ptr: UserPtr, len: usize) -> Result<UserVirtAddr, Errno> {
    match ptr.range(len as u64) {
        Some(a) => Ok(a),
        None if len == 0 && arch::uaccess::access_ok(ptr, 0) => Ok(UserVirtAddr::ZERO),
        None => Err(Errno::EFAULT),
    }
}

impl vfs::IovIter for UserIter {
    fn count(&self) -> usize {
        self.left
    }

    fn copy_to_iter(&mut self, data: &[u8]) -> usize {
        let want = data.len().min(self.left);
        let Some(src) = data.get(..want) else { return 0 };
        let copied = want - arch::uaccess::raw_copy_to_user(self.addr.into(), src);
        // Within the range `user_range` checked.
        self.addr = self.addr.checked_add(copied as u64).unwrap_or(self.addr);
        self.left -= copied;
        copied
    }

    fn fault_in_writeable(&mut self, len: usize) -> bool {
        arch::uaccess::probe_writable(self.addr.into(), len.min(self.left)).is_ok()
    }
}

/// User memory as the source of a write (Linux's `ITER_UBUF` on the write
/// side): its bytes are copied once, into a buffer of the source's, only
/// when the file takes them.
pub struct UserSource {
    addr: UserVirtAddr,
    left: usize,
}

impl UserSource {
    /// `len` bytes at user address `addr` (see [`user_range`]).
    pub fn new(addr: UserVirtAddr, len: usize) -> Self {
        UserSource { addr, left: len }
    }
}

/// Writes of at most this many bytes are copied to the stack rather than
/// to the heap.
const SMALL_WRITE: usize = 256;

impl vfs::IovSource for UserSource {
    fn count(&self) -> usize {
        self.left
    }

    fn consume(&mut self, len: usize, take: &mut dyn FnMut(&[u8]) -> Result<usize, Errno>) -> Result<usize, Errno> {
        let len = len.min(self.left);
        // Never zeroed: the copy fills it whole, or the write fails.
        let mut small = [core::mem::MaybeUninit::<u8>::uninit(); SMALL_WRITE];
        let mut heap = Vec::new();
        let room = if len <= SMALL_WRITE {
            small.get_mut(..len)
        } else {
            heap.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
            heap.spare_capacity_mut().get_mut(..len)
        };
        let room = room.ok_or(Errno::EFAULT)?;
        let data = arch::uaccess::copy_from_user_uninit(room, self.addr).map_err(|_| Errno::EFAULT)?;
        let n = take(data)?.min(len);
        // Within the range `user_range` checked.
        self.addr = self.addr.checked_add(n as u64).unwrap_or(self.addr);
        self.left -= n;
        Ok(n)
    }
}

/// A checked user iovec array as the destination of a read (Linux's
/// `ITER_IOVEC`): a file that moves data in units of its own (a pipe's
/// buffers) copies one unit across segments, and a fault in any of them
/// makes the copy short.
pub struct UserIovIter {
    iov: Vec<uapi::uio::IoVec>,
    /// The segment being filled and the bytes of it already filled.
    seg: usize,
    done: usize,
    left: usize,
}

impl UserIovIter {
    /// Over `iov`, as [`import_iovec`] returned it.
    pub fn new(iov: Vec<uapi::uio::IoVec>) -> Self {
        let left = iov.iter().map(|v| v.len as usize).sum();
        UserIovIter {
            iov,
            seg: 0,
            done: 0,
            left,
        }
    }

    /// The user address and length left of the current segment, moving
    /// past empty ones.
    fn current(&mut self) -> Option<(u64, usize)> {
        while let Some(v) = self.iov.get(self.seg) {
            if self.done < v.len as usize {
                return Some((v.base + self.done as u64, v.len as usize - self.done));
            }
            self.seg += 1;
            self.done = 0;
        }
        None
    }

    fn advance(&mut self, n: usize) {
        self.done += n;
        self.left -= n;
    }
}

impl vfs::IovIter for UserIovIter {
    fn count(&self) -> usize {
        self.left
    }

    fn copy_to_iter(&mut self, data: &[u8]) -> usize {
        let mut copied = 0;
        while copied < data.len() {
            let Some((addr, room)) = self.current() else { break };
            let want = room.min(data.len() - copied);
            let Some(src) = data.get(copied..copied + want) else {
                break;
            };
            // The range was checked by `import_iovec`.
            let n = want - arch::uaccess::raw_copy_to_user(UserPtr::new(addr), src);
            self.advance(n);
            copied += n;
            if n < want {
                break;
            }
        }
        copied
    }

    fn fault_in_writeable(&mut self, len: usize) -> bool {
        let mut want = len.min(self.left);
        let (mut seg, mut done) = (self.seg, self.done);
        while want > 0 {
            let Some(v) = self.iov.get(seg) else { return true };
            let n = (v.len as usize - done).min(want);
            if n > 0 && arch::uaccess::probe_writable(UserPtr::new(v.base + done as u64), n).is_err() {
                return false;
            }
            want -= n;
            seg += 1;
            done = 0;
        }
        true
    }
}

/// A checked user iovec array as the source of a write: the bytes a file
/// takes in one call are gathered from the segments, all of them or
/// EFAULT (Linux's `copy_page_from_iter` into a pipe buffer).
pub struct UserIovSource(UserIovIter);

impl UserIovSource {
    /// Over `iov`, as [`import_iovec`] returned it.
    pub fn new(iov: Vec<uapi::uio::IoVec>) -> Self {
        UserIovSource(UserIovIter::new(iov))
    }
}

impl vfs::IovSource for UserIovSource {
    fn count(&self) -> usize {
        self.0.left
    }

    fn consume(&mut self, len: usize, take: &mut dyn FnMut(&[u8]) -> Result<usize, Errno>) -> Result<usize, Errno> {
        let len = len.min(self.0.left);
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
        let (seg, done) = (self.0.seg, self.0.done);
        while buf.len() < len {
            let Some((addr, room)) = self.0.current() else { break };
            let n = room.min(len - buf.len());
            let at = buf.len();
            buf.resize(at + n, 0);
            let dst = buf.get_mut(at..).ok_or(Errno::EFAULT)?;
            if arch::uaccess::copy_from_user(dst, UserPtr::new(addr)).is_err() {
                (self.0.seg, self.0.done) = (seg, done);
                return Err(Errno::EFAULT);
            }
            self.0.done += n;
        }
        (self.0.seg, self.0.done) = (seg, done);
        let n = take(&buf)?.min(buf.len());
        // Advance by what the file took.
        let mut left = n;
        while left > 0 {
            let Some((_, room)) = self.0.current() else { break };
            let k = room.min(left);
            self.0.advance(k);
            left -= k;
        }
        Ok(n)
    }
}

/// Fills `dst` from user address `src`.
pub fn copy_from_user(dst: &mut [u8], src: UserPtr) -> Result<(), Errno> {
    Ok(arch::uaccess::copy_from_user(dst, src)?)
}

/// Reads a `struct iovec` at user address `src` (two loads, no copy).
#[inline]
pub fn get_user_iovec(src: UserPtr) -> Result<uapi::uio::IoVec, Errno> {
    let [base, len] = arch::uaccess::get_user_u64_pair(src)?;
    Ok(uapi::uio::IoVec { base, len })
}

/// Copies `src` to user address `dst`.
pub fn copy_to_user(dst: UserPtr, src: &[u8]) -> Result<(), Errno> {
    Ok(arch::uaccess::copy_to_user(dst, src)?)
}

/// Writes a u32 to user memory.
pub fn put_user_u32(dst: UserPtr, v: u32) -> Result<(), Errno> {
    copy_to_user(dst, &v.to_le_bytes())
}

/// Writes an i32 to user memory.
pub fn put_user_i32(dst: UserPtr, v: i32) -> Result<(), Errno> {
    copy_to_user(dst, &v.to_le_bytes())
}

/// Writes a u64 to user memory.
pub fn put_user_u64(dst: UserPtr, v: u64) -> Result<(), Errno> {
    copy_to_user(dst, &v.to_le_bytes())
}

/// Reads a u32 from user memory.
pub fn get_user_u32(src: UserPtr) -> Result<u32, Errno> {
    let mut b = [0u8; 4];
    copy_from_user(&mut b, src)?;
    Ok(u32::from_le_bytes(b))
}

/// Reads a u64 from user memory.
pub fn get_user_u64(src: UserPtr) -> Result<u64, Errno> {
    Ok(arch::uaccess::get_user_u64(src)?)
}

/// Maximum length of a path, with its NUL (PATH_MAX).
pub const PATH_MAX: usize = 4096;
/// Maximum length of one exec argument or environment string, with NUL.
pub const MAX_ARG_STRLEN: usize = 32 * 4096;
/// Maximum number of exec arguments plus environment strings we accept.
pub const MAX_ARG_STRINGS: usize = 0x7fff_ffff;

/// A NUL-terminated user string of at most `max` bytes including the NUL;
/// `ENAMETOOLONG` (or `E2BIG` for exec strings) beyond.
pub fn strndup_user(src: UserPtr, max: usize, too_long: Errno) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; max.min(256)];
    let mut out = Vec::new();
    let mut addr = src;
    loop {
        let room = (max - out.len()).min(buf.len());
        if room == 0 {
            return Err(too_long);
        }
        match arch::uaccess::strncpy_from_user(&mut buf[..room], addr)? {
            Some(n) => {
                out.extend_from_slice(&buf[..n]);
                return Ok(out);
            }
            None => {
                out.extend_from_slice(&buf[..room]);
                addr = addr.wrapping_add(room as u64);
            }
        }
    }
}

/// A path argument as a `String`: EFAULT, ENAMETOOLONG, EINVAL when it is
/// not UTF-8.
pub fn user_path(src: UserPtr) -> Result<String, Errno> {
    let name = getname(src)?;
    let mut s = String::new();
    s.try_reserve_exact(name.len()).map_err(|_| Errno::ENOMEM)?;
    s.push_str(core::str::from_utf8(&name).map_err(|_| Errno::EINVAL)?);
    Ok(s)
}

/// `names_cache`: the kernel's copies of the path names system calls are
/// given, one `PATH_MAX` object each (Linux's `names_cachep`).
pub static NAMES_CACHEP: KmemCache = KmemCache::new("names_cache", PATH_MAX, 8, false);

/// A path name copied from user memory into a `names_cache` object
/// (Linux's `struct filename`); dropping it frees the object through
/// [`putname`]. It reads as the name's bytes, without the NUL.
pub struct Filename {
    buf: Option<SlabBox<[u8; PATH_MAX]>>,
    len: usize,
}

impl core::ops::Deref for Filename {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.buf.as_ref().map_or(&[], |b| &b[..self.len])
    }
}

impl Drop for Filename {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take() {
            putname(b);
        }
    }
}

/// Copies the path name at user address `src` into a `names_cache`
/// object (Linux's `getname`): EFAULT, ENAMETOOLONG for one of
/// `PATH_MAX` bytes or more, ENOMEM. Exported under Linux's name, so that
/// it is the `call_site` of the cache's allocations.
#[allow(unsafe_code)] // exported under Linux's name, for probes and call sites
#[no_mangle]
#[inline(never)]
pub fn getname(src: UserPtr) -> Result<Filename, Errno> {
    let mut buf = SlabBox::try_new(&NAMES_CACHEP, [0u8; PATH_MAX], GFP_KERNEL as u32).map_err(|_| Errno::ENOMEM)?;
    let len = arch::uaccess::strncpy_from_user(&mut buf[..], src)?.ok_or(Errno::ENAMETOOLONG)?;
    Ok(Filename { buf: Some(buf), len })
}

/// Frees a name `getname` copied (Linux's `putname`).
#[allow(unsafe_code)] // exported under Linux's name, for probes and call sites
#[no_mangle]
#[inline(never)]
pub fn putname(name: SlabBox<[u8; PATH_MAX]>) {
    drop(name);
    // Not a tail call: putname stays on the stack, the free's call_site.
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// A NULL-terminated array of user string pointers (argv, envp).
pub fn user_string_array(src: UserPtr) -> Result<Vec<Vec<u8>>, Errno> {
    let mut out = Vec::new();
    if src.is_null() {
        return Ok(out);
    }
    let mut total = 0usize;
    for i in 0.. {
        if i >= MAX_ARG_STRINGS {
            return Err(Errno::E2BIG);
        }
        let p = UserPtr::new(get_user_u64(src.wrapping_add(8 * i as u64))?);
        if p.is_null() {
            break;
        }
        let s = strndup_user(p, MAX_ARG_STRLEN, Errno::E2BIG)?;
        total += s.len() + 1 + 8;
        if total > (crate::mm::vm::STACK_SIZE / 4) as usize {
            return Err(Errno::E2BIG);
        }
        out.push(s);
    }
    Ok(out)
}

/// Reads a user iovec array (Linux's `iovec_from_user`): EINVAL for more
/// than `UIO_MAXIOV` entries or a length negative as an `ssize_t`, EFAULT
/// when the array cannot be read. The lengths are as given (the remote
/// side of process_vm_readv/writev).
pub fn iovec_from_user(p: UserPtr, n: u64) -> Result<Vec<uapi::uio::IoVec>, Errno> {
    if n > uapi::uio::UIO_MAXIOV as u64 {
        return Err(Errno::EINVAL);
    }
    let raw = copy_from_user_vec(p, n as usize * uapi::uio::IoVec::SIZE)?;
    let v = uapi::uio::IoVecs::parse(&raw).ok_or(Errno::EINVAL)?;
    Ok(v.iter().collect())
}

/// Reads and checks the iovec array of the caller's own buffers (Linux's
/// `import_iovec`): `iovec_from_user`'s checks, then EFAULT for a buffer
/// outside the user address space (`access_ok`), and the lengths cut to
/// add up to at most `MAX_RW_COUNT`.
pub fn import_iovec(p: UserPtr, n: u64) -> Result<Vec<uapi::uio::IoVec>, Errno> {
    let mut v = iovec_from_user(p, n)?;
    check_iovec_access(&mut v)?;
    Ok(v)
}

/// `import_iovec`'s second pass over entries already read and checked:
/// every buffer inside the user address space, the total cut. A single
/// entry is cut first and its range checked after (Linux's
/// `import_ubuf`), several are checked whole.
pub fn check_iovec_access(v: &mut [uapi::uio::IoVec]) -> Result<(), Errno> {
    if v.len() == 1 {
        uapi::uio::clamp_to_max_rw(v.iter_mut());
    }
    if v.iter().any(|io| UserPtr::new(io.base).range(io.len).is_none()) {
        return Err(Errno::EFAULT);
    }
    uapi::uio::clamp_to_max_rw(v.iter_mut());
    Ok(())
}
