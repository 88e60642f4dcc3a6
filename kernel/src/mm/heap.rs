//! The kernel heap: `linked_list_allocator` over a window of virtual
//! memory that grows a page at a time from the frame allocator.
#![allow(unsafe_code)] // GlobalAlloc is an unsafe trait; the heap hands out raw memory.

crate::notrace_module!();

use crate::sync::IrqSpinLock;
use arch::memory::{HEAP_BASE, PAGE_SIZE};
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use linked_list_allocator::Heap;

/// The global allocator.
pub struct KernelHeap {
    heap: IrqSpinLock<Heap>,
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap {
    heap: IrqSpinLock::new(Heap::empty()),
};

/// Initial size of the heap.
const INITIAL: usize = 256 * 1024;
/// Smallest growth step.
const GROW_MIN: usize = 64 * 1024;

/// Maps `bytes` more of the window; returns the number of bytes added.
fn grow(bytes: usize) -> usize {
    let mut added = 0;
    while added < bytes {
        let Some(pa) = super::frame::alloc_frame() else { break };
        if arch::mmu::map_heap_page(pa).is_err() {
            super::frame::free_frame(pa);
            break;
        }
        added += PAGE_SIZE;
    }
    added
}

/// Creates the heap. Needs the frame allocator.
pub fn init() {
    let bytes = grow(INITIAL);
    assert!(bytes > 0, "no memory for the kernel heap");
    let mut heap = HEAP.heap.lock();
    // SAFETY: `[HEAP_BASE, HEAP_BASE + bytes)` was just mapped read-write
    // for the heap alone, and the heap is empty.
    unsafe { heap.init(HEAP_BASE as *mut u8, bytes) };
}

/// Heap size and use, in bytes.
pub fn stats() -> (usize, usize) {
    let heap = HEAP.heap.lock();
    (heap.size(), heap.used())
}

// SAFETY: allocation goes through linked_list_allocator under a lock; the
// memory it manages is mapped and owned by the heap.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut heap = self.heap.lock();
        if let Ok(p) = heap.allocate_first_fit(layout) {
            return p.as_ptr();
        }
        // Grow at the top of the window, which is where the heap ends.
        let want = (layout.size() + layout.align()).max(GROW_MIN).max(heap.size() / 2);
        let added = grow(want.next_multiple_of(PAGE_SIZE));
        if added > 0 {
            // SAFETY: `grow` mapped `added` bytes directly after the heap's
            // current end.
            unsafe { heap.extend(added) };
        }
        heap.allocate_first_fit(layout)
            .map_or(core::ptr::null_mut(), |p| p.as_ptr())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: per GlobalAlloc's contract, `ptr` came from `alloc` with
        // this layout, which is what `kfree` asks.
        unsafe { kfree(ptr, layout.size(), layout.align()) }
    }
}

/// Frees heap memory: every deallocation of the kernel comes here
/// (Linux's `kfree(objp)`; x0 is the object as on Linux, x1 and x2 its
/// size and alignment, which Rust's deallocation knows and the heap needs
/// where Linux's slab finds them itself). A null `objp` is ignored.
///
/// # Safety
/// `objp` must be null or have come from the kernel heap's allocation with
/// this size and alignment, and not have been freed since.
#[no_mangle]
#[inline(never)]
pub unsafe extern "C" fn kfree(objp: *mut u8, size: usize, align: usize) {
    let Some(p) = NonNull::new(objp) else { return };
    let Ok(layout) = Layout::from_size_align(size, align) else {
        return;
    };
    // SAFETY: the caller guarantees `objp` came from this heap with this
    // layout and is still allocated.
    unsafe { HEAP.heap.lock().deallocate(p, layout) };
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec::Vec;
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn heap_allocations_keep_their_contents() {
        let boxes: Vec<Box<[u64; 32]>> = (0..200u64).map(|i| Box::new([i; 32])).collect();
        for (i, b) in boxes.iter().enumerate() {
            assert!(b.iter().all(|&x| x == i as u64));
        }
    }

    #[kernel_test]
    fn heap_grows_past_its_initial_size() {
        let (size_before, _) = stats();
        let big: Vec<u8> = alloc::vec![0xa5; size_before * 2];
        assert!(big.iter().all(|&b| b == 0xa5));
        let (size_after, used) = stats();
        assert!(
            size_after > size_before,
            "heap did not grow: {size_before} -> {size_after}"
        );
        assert!(used >= big.len());
        drop(big);
        assert!(stats().1 < size_before * 2);
    }
}
