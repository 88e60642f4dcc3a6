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
/// `MAP_FIXED` that fails with `EEXIST` instead of replacing.
pub const MAP_FIXED_NOREPLACE: u64 = 0x100000;

/// `mremap`: the mapping may move.
pub const MREMAP_MAYMOVE: u64 = 1;
/// `mremap`: move it to the given new address.
pub const MREMAP_FIXED: u64 = 2;
/// `mremap`: leave the old range mapped, empty.
pub const MREMAP_DONTUNMAP: u64 = 4;
