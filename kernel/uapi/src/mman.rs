//! `mmap`, `mprotect` and `mremap` flags (include/uapi/asm-generic/mman-common.h,
//! include/uapi/linux/mman.h; arm64 adds only `PROT_BTI`/`PROT_MTE`).

/// Pages may not be accessed.
pub const PROT_NONE: u64 = 0;
/// Pages may be read.
pub const PROT_READ: u64 = 1;
/// Pages may be written.
pub const PROT_WRITE: u64 = 2;
/// Pages may be executed.
pub const PROT_EXEC: u64 = 4;
/// Pages may be used for atomic operations (no effect on arm64).
pub const PROT_SEM: u64 = 8;
/// arm64: the pages are BTI guarded.
pub const PROT_BTI: u64 = 0x10;
/// arm64: the pages hold MTE allocation tags.
pub const PROT_MTE: u64 = 0x20;
/// mprotect: extend the change down to the start of a grows-down mapping.
pub const PROT_GROWSDOWN: u64 = 0x0100_0000;
/// mprotect: extend the change up to the end of a grows-up mapping.
pub const PROT_GROWSUP: u64 = 0x0200_0000;

/// Share changes.
pub const MAP_SHARED: u64 = 0x01;
/// Changes are private.
pub const MAP_PRIVATE: u64 = 0x02;
/// `MAP_SHARED`, with unknown flags rejected.
pub const MAP_SHARED_VALIDATE: u64 = 0x03;
/// Mask of the mapping type.
pub const MAP_TYPE: u64 = 0x0f;
/// Place the mapping exactly at the address, replacing what is there.
pub const MAP_FIXED: u64 = 0x10;
/// No file behind the mapping.
pub const MAP_ANONYMOUS: u64 = 0x20;
/// Stack-like mapping that grows down.
pub const MAP_GROWSDOWN: u64 = 0x100;
/// Ignored (was: `ETXTBSY` on writes to the file).
pub const MAP_DENYWRITE: u64 = 0x800;
/// Ignored (was: mark it as an executable).
pub const MAP_EXECUTABLE: u64 = 0x1000;
/// Lock the pages in memory.
pub const MAP_LOCKED: u64 = 0x2000;
/// Do not reserve swap space.
pub const MAP_NORESERVE: u64 = 0x4000;
/// Prefault the page tables.
pub const MAP_POPULATE: u64 = 0x8000;
/// With `MAP_POPULATE`: do not block on I/O.
pub const MAP_NONBLOCK: u64 = 0x1_0000;
/// The mapping is a thread stack.
pub const MAP_STACK: u64 = 0x2_0000;
/// Huge-page mapping.
pub const MAP_HUGETLB: u64 = 0x4_0000;
/// Synchronous page faults (DAX files, with `MAP_SHARED_VALIDATE`).
pub const MAP_SYNC: u64 = 0x8_0000;
/// `MAP_FIXED` that fails with `EEXIST` instead of replacing.
pub const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
/// Anonymous memory may be left uninitialised (only with
/// `CONFIG_MMAP_ALLOW_UNINITIALIZED`).
pub const MAP_UNINITIALIZED: u64 = 0x400_0000;
/// Shift of the huge-page size (log2) in the flags.
pub const MAP_HUGE_SHIFT: u64 = 26;
/// Mask of the huge-page size after [`MAP_HUGE_SHIFT`].
pub const MAP_HUGE_MASK: u64 = 0x3f;

/// `mremap`: the mapping may move.
pub const MREMAP_MAYMOVE: u64 = 1;
/// `mremap`: move it to the given new address.
pub const MREMAP_FIXED: u64 = 2;
/// `mremap`: leave the old range mapped, empty.
pub const MREMAP_DONTUNMAP: u64 = 4;

/// `madvise` advice values (include/uapi/asm-generic/mman-common.h).
pub mod madv {
    /// No special treatment.
    pub const MADV_NORMAL: i32 = 0;
    /// Expect random page references.
    pub const MADV_RANDOM: i32 = 1;
    /// Expect sequential page references.
    pub const MADV_SEQUENTIAL: i32 = 2;
    /// Will need these pages.
    pub const MADV_WILLNEED: i32 = 3;
    /// Drop the pages: anonymous memory reads back zero.
    pub const MADV_DONTNEED: i32 = 4;
    /// The pages may be freed lazily (anonymous private memory).
    pub const MADV_FREE: i32 = 8;
    /// Remove the pages and their backing store.
    pub const MADV_REMOVE: i32 = 9;
    /// Do not inherit across fork.
    pub const MADV_DONTFORK: i32 = 10;
    /// Inherit across fork again.
    pub const MADV_DOFORK: i32 = 11;
    /// KSM may merge identical pages.
    pub const MADV_MERGEABLE: i32 = 12;
    /// KSM may not merge identical pages.
    pub const MADV_UNMERGEABLE: i32 = 13;
    /// Worth backing with transparent huge pages.
    pub const MADV_HUGEPAGE: i32 = 14;
    /// Not worth backing with transparent huge pages.
    pub const MADV_NOHUGEPAGE: i32 = 15;
    /// Leave out of core dumps.
    pub const MADV_DONTDUMP: i32 = 16;
    /// Include in core dumps again.
    pub const MADV_DODUMP: i32 = 17;
    /// Zero-filled in the child after fork.
    pub const MADV_WIPEONFORK: i32 = 18;
    /// Undo MADV_WIPEONFORK.
    pub const MADV_KEEPONFORK: i32 = 19;
    /// Deactivate the pages.
    pub const MADV_COLD: i32 = 20;
    /// Reclaim the pages.
    pub const MADV_PAGEOUT: i32 = 21;
    /// Fault the pages in readable.
    pub const MADV_POPULATE_READ: i32 = 22;
    /// Fault the pages in writable.
    pub const MADV_POPULATE_WRITE: i32 = 23;
    /// MADV_DONTNEED that also drops locked pages.
    pub const MADV_DONTNEED_LOCKED: i32 = 24;
    /// Collapse into transparent huge pages now.
    pub const MADV_COLLAPSE: i32 = 25;
    /// Poison the pages (memory-failure testing).
    pub const MADV_HWPOISON: i32 = 100;
    /// Soft-offline the pages (memory-failure testing).
    pub const MADV_SOFT_OFFLINE: i32 = 101;
}
pub use madv::*;
