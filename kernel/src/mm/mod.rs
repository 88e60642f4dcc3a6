//! Memory: physical frames, the kernel heap and slab caches.
#[cfg(feature = "ktest")]
mod addr_tests;
pub mod frame;
pub mod heap;
pub mod slab;
pub mod vm;

pub use arch::memory::{PAGE_SHIFT, PAGE_SIZE};

/// A physical memory range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhysRange {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}
