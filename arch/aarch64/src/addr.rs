//! Address types: a kernel virtual address, a user virtual address and a
//! physical address are different things, and each conversion between
//! them is a named, checked function rather than an integer cast.
//!
//! - [`VirtAddr`]: an address in the kernel's half (TTBR1), where the kernel
//!   runs and maps its own memory.
//! - [`UserVirtAddr`]: an address in a user address space (TTBR0), below
//!   `TASK_SIZE`; the kernel touches what it names only through uaccess.
//! - [`PhysAddr`]: an output address of the page tables (48 bits).

use crate::memory::{is_linear_map, phys_to_virt, virt_to_phys, PAGE_OFFSET, PAGE_SIZE};
use crate::uaccess::TASK_SIZE;

/// The largest physical address the kernel's 48-bit tables can hold.
const PHYS_LIMIT: u64 = 1 << 48;

// `UserVirtAddr::from_walk` masks with `TASK_SIZE - 1`.
const _: () = assert!(TASK_SIZE.is_power_of_two());

/// A kernel virtual address (the TTBR1 half, `PAGE_OFFSET` and above).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct VirtAddr(usize);

impl VirtAddr {
    /// `va` if it is in the kernel's half.
    pub const fn new(va: usize) -> Option<VirtAddr> {
        if va >= PAGE_OFFSET {
            Some(VirtAddr(va))
        } else {
            None
        }
    }

    /// The address of a kernel object.
    pub fn of<T: ?Sized>(p: *const T) -> Option<VirtAddr> {
        VirtAddr::new(p.cast::<u8>() as usize)
    }

    /// An address the kernel computed inside one of its own windows
    /// (image, vmalloc, MMIO, heap, fixmap), all in the TTBR1 half: the
    /// top bits are set, never cleared, so nothing below `PAGE_OFFSET`
    /// can come out.
    pub(crate) const fn from_window(va: usize) -> VirtAddr {
        VirtAddr(va | PAGE_OFFSET)
    }

    /// The address as an integer.
    pub const fn as_usize(self) -> usize {
        self.0
    }

    /// The address as a pointer (creating one is safe; using it is not).
    pub const fn as_ptr<T>(self) -> *const T {
        self.0 as *const T
    }

    /// The address as a mutable pointer (creating one is safe; using it is
    /// not).
    pub const fn as_mut_ptr<T>(self) -> *mut T {
        self.0 as *mut T
    }

    /// `self + off`, if it stays a kernel address.
    pub const fn checked_add(self, off: usize) -> Option<VirtAddr> {
        match self.0.checked_add(off) {
            Some(v) => Some(VirtAddr(v)),
            None => None,
        }
    }

    /// Whether it is a multiple of `align` (a power of two).
    pub const fn is_aligned(self, align: usize) -> bool {
        self.0 & (align - 1) == 0
    }

    /// The start of its page.
    pub const fn page_base(self) -> VirtAddr {
        VirtAddr(self.0 & !(PAGE_SIZE - 1))
    }

    /// Its offset in its page.
    pub const fn page_offset(self) -> usize {
        self.0 & (PAGE_SIZE - 1)
    }

    /// The physical address behind a linear-map address; None for any
    /// other kernel address (the image, vmalloc, the fixmap: ask the page
    /// tables, `mmu::translate`).
    pub const fn linear_to_phys(self) -> Option<PhysAddr> {
        if is_linear_map(self.0) {
            Some(PhysAddr(virt_to_phys(self.0)))
        } else {
            None
        }
    }
}

/// A user virtual address (below `TASK_SIZE`), as a system call or a fault
/// names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct UserVirtAddr(u64);

impl UserVirtAddr {
    /// Address zero, the bottom of every user address space.
    pub const ZERO: UserVirtAddr = UserVirtAddr(0);

    /// `va` if it is in the user half.
    pub const fn new(va: u64) -> Option<UserVirtAddr> {
        if va < TASK_SIZE {
            Some(UserVirtAddr(va))
        } else {
            None
        }
    }

    /// The address a page-table walk computed from its indices, which
    /// cannot reach `TASK_SIZE` (bits above it are dropped, never kept).
    pub(crate) const fn from_walk(va: u64) -> UserVirtAddr {
        UserVirtAddr(va & (TASK_SIZE - 1))
    }

    /// The address as an integer.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// `self + off`, if it stays a user address.
    pub const fn checked_add(self, off: u64) -> Option<UserVirtAddr> {
        match self.0.checked_add(off) {
            Some(v) => UserVirtAddr::new(v),
            None => None,
        }
    }

    /// Whether `[self, self + len)` lies in the user half.
    pub const fn range_ok(self, len: u64) -> bool {
        match self.0.checked_add(len) {
            Some(end) => end <= TASK_SIZE,
            None => false,
        }
    }

    /// The start of its page.
    pub const fn page_base(self) -> UserVirtAddr {
        UserVirtAddr(self.0 & !(PAGE_SIZE as u64 - 1))
    }

    /// Its offset in its page.
    pub const fn page_offset(self) -> usize {
        (self.0 & (PAGE_SIZE as u64 - 1)) as usize
    }

    /// Whether it is the start of a page.
    pub const fn is_page_aligned(self) -> bool {
        self.page_offset() == 0
    }

    /// The start of the next page, if it is still a user address.
    pub const fn next_page(self) -> Option<UserVirtAddr> {
        self.page_base().checked_add(PAGE_SIZE as u64)
    }

    /// `self - base` in bytes, if `base` is not above `self`.
    pub const fn offset_from(self, base: UserVirtAddr) -> Option<u64> {
        self.0.checked_sub(base.0)
    }
}

/// A user pointer as a system call is given it (Linux's `void __user *`):
/// any 64-bit value, since only the access decides whether it is good. The
/// uaccess functions take nothing else, so a kernel address cannot reach
/// them by mistake; a handler makes one from a register argument at the
/// point it treats it as a user pointer, and an address at or above
/// `TASK_SIZE` stays representable, to fail the access with EFAULT where
/// Linux's `access_ok` would. The kernel's BTF describes it as Linux's
/// `char __user *` (tools/kbuild's `USER_POINTER_TYPES`), so probes take
/// `:ustring` on such an argument; keep it one `u64`, transparent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct UserPtr(u64);

impl UserPtr {
    /// The NULL user pointer.
    pub const NULL: UserPtr = UserPtr(0);

    /// A register value (or a pointer read from user memory) taken as a
    /// user pointer.
    pub const fn new(raw: u64) -> UserPtr {
        UserPtr(raw)
    }

    /// The pointer's value, as the user gave it.
    pub const fn addr(self) -> u64 {
        self.0
    }

    /// Whether it is NULL (often "no argument" in a system call).
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// `self + off` as C pointer arithmetic computes it (wrapping): the
    /// access that follows checks the result.
    pub const fn wrapping_add(self, off: u64) -> UserPtr {
        UserPtr(self.0.wrapping_add(off))
    }

    /// The user address it points to, if `[self, self + len)` lies in the
    /// user half (Linux's `access_ok`).
    pub const fn range(self, len: u64) -> Option<UserVirtAddr> {
        match UserVirtAddr::new(self.0) {
            Some(a) if a.range_ok(len) => Some(a),
            _ => None,
        }
    }
}

impl From<UserVirtAddr> for UserPtr {
    fn from(a: UserVirtAddr) -> UserPtr {
        UserPtr(a.0)
    }
}

/// A physical address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct PhysAddr(u64);

impl PhysAddr {
    /// `pa` if the page tables can map it.
    pub const fn new(pa: u64) -> Option<PhysAddr> {
        if pa < PHYS_LIMIT {
            Some(PhysAddr(pa))
        } else {
            None
        }
    }

    /// An output address the page-table code computed (a descriptor's
    /// address field, an offset into the image's load address): bits above
    /// 48 are dropped, never kept.
    pub(crate) const fn from_desc(pa: u64) -> PhysAddr {
        PhysAddr(pa & (PHYS_LIMIT - 1))
    }

    /// The address as an integer.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// `self + off`, if it stays mappable.
    pub const fn checked_add(self, off: u64) -> Option<PhysAddr> {
        match self.0.checked_add(off) {
            Some(v) => PhysAddr::new(v),
            None => None,
        }
    }

    /// Whether it is a multiple of `align` (a power of two).
    pub const fn is_aligned(self, align: u64) -> bool {
        self.0 & (align - 1) == 0
    }

    /// The start of its page.
    pub const fn page_base(self) -> PhysAddr {
        PhysAddr(self.0 & !(PAGE_SIZE as u64 - 1))
    }

    /// Its offset in its page.
    pub const fn page_offset(self) -> usize {
        (self.0 & (PAGE_SIZE as u64 - 1)) as usize
    }

    /// Whether it is the start of a page (a frame's address).
    pub const fn is_page_aligned(self) -> bool {
        self.page_offset() == 0
    }

    /// Its linear-map alias (meaningful for RAM, which the linear map
    /// covers).
    pub const fn to_linear(self) -> VirtAddr {
        VirtAddr(phys_to_virt(self.0))
    }
}
