//! The kernel heap: the `talc` allocator over a window of virtual memory
//! that grows a page at a time from the frame allocator, and gives pages
//! back from its top when they are free (as Linux's slab returns empty
//! slabs), so that a burst of kernel allocations does not keep its memory
//! out of MemFree for good.
#![allow(unsafe_code)] // GlobalAlloc is an unsafe trait; the heap hands out raw memory.

crate::notrace_module!();

use crate::sync::IrqSpinLock;
use arch::memory::{HEAP_BASE, PAGE_SIZE};
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use talc::{ErrOnOom, Span, Talc};

/// The allocator and the part of the window it manages.
struct State {
    talc: Talc<ErrOnOom>,
    /// The heap's span as talc last returned it.
    heap: Span,
    /// End of the mapped window (page aligned; `heap` ends at or below it).
    mapped_end: usize,
}

// SAFETY: the state is only reached under the heap's lock; the raw pointers
// in it point into the heap window, which every CPU maps.
unsafe impl Send for State {}

/// The global allocator.
pub struct KernelHeap {
    state: IrqSpinLock<State>,
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap {
    state: IrqSpinLock::new(State {
        talc: Talc::new(ErrOnOom),
        heap: Span::empty(),
        mapped_end: HEAP_BASE,
    }),
};

/// Initial size of the heap.
const INITIAL: usize = 256 * 1024;
/// Smallest growth step.
const GROW_MIN: usize = 256 * 1024;
/// Free memory at the top of the heap beyond which pages go back to the
/// frame allocator...
const SHRINK_AT: usize = 1024 * 1024;
/// ...keeping this much free above the highest allocation, so that
/// alternating allocations and frees do not map and unmap pages each time.
const SHRINK_KEEP: usize = 256 * 1024;

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
    let mut st = HEAP.state.lock();
    let window = Span::from_base_size(HEAP_BASE as *mut u8, bytes);
    // SAFETY: `[HEAP_BASE, HEAP_BASE + bytes)` was just mapped read-write
    // for the heap alone, and nothing else uses it.
    let heap = unsafe { st.talc.claim(window) };
    st.heap = heap.expect("kernel heap too small for the allocator's metadata");
    st.mapped_end = HEAP_BASE + bytes;
}

/// Heap size (mapped window) and bytes in use by allocations.
pub fn stats() -> (usize, usize) {
    let st = HEAP.state.lock();
    (st.mapped_end - HEAP_BASE, st.talc.get_counters().allocated_bytes)
}

impl State {
    /// Maps at least `want` more bytes and hands them to the allocator.
    fn extend(&mut self, want: usize) -> bool {
        let added = grow(want.max(GROW_MIN).next_multiple_of(PAGE_SIZE));
        if added == 0 {
            return false;
        }
        self.mapped_end += added;
        let req = Span::new(HEAP_BASE as *mut u8, self.mapped_end as *mut u8);
        // SAFETY: `req` contains the old heap and the pages `grow` just
        // mapped directly above it.
        self.heap = unsafe { self.talc.extend(self.heap, req) };
        true
    }

    /// Gives free pages at the top of the heap back to the frame allocator.
    fn shrink(&mut self) {
        // SAFETY: `self.heap` is what talc last returned.
        let used = unsafe { self.talc.get_allocated_span(self.heap) };
        let top = used.get_base_acme().map_or(HEAP_BASE, |(_, acme)| acme as usize);
        if self.mapped_end - top.min(self.mapped_end) < SHRINK_AT {
            return;
        }
        let new_end = (top + SHRINK_KEEP).next_multiple_of(PAGE_SIZE).max(HEAP_BASE + INITIAL);
        if new_end >= self.mapped_end {
            return;
        }
        let req = Span::new(HEAP_BASE as *mut u8, new_end as *mut u8);
        // SAFETY: `req` lies within the heap and contains every allocation
        // (it reaches above `used`).
        self.heap = unsafe { self.talc.truncate(self.heap, req) };
        // talc no longer owns anything at or above `new_end`.
        while self.mapped_end > new_end {
            let Some(pa) = arch::mmu::unmap_heap_page() else { break };
            super::frame::free_frame(pa);
            self.mapped_end -= PAGE_SIZE;
        }
    }
}

// SAFETY: allocation goes through talc under a lock; the memory it manages
// is mapped and owned by the heap.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // An `Arc` that `slab::arc_new_in` puts in a named cache.
        if let Some(p) = super::slab::arc_cache_alloc(layout) {
            return p;
        }
        // SAFETY: the caller keeps GlobalAlloc's contract, which is
        // alloc_locked's.
        let p = unsafe { self.alloc_locked(layout) };
        crate::trace::tracepoint::kmem::trace_kmalloc(p, layout.size(), false);
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !(HEAP_BASE..HEAP_BASE + arch::memory::HEAP_MAX).contains(&(ptr as usize)) {
            // SAFETY: only `slab::arc_cache_alloc` hands out memory outside
            // the heap's window.
            unsafe { super::slab::arc_cache_free(ptr, layout) };
            return;
        }
        // SAFETY: per GlobalAlloc's contract, `ptr` came from `alloc` with
        // this layout, which is what `kfree` asks.
        unsafe { kfree(ptr, layout.size(), layout.align()) }
    }
}

impl KernelHeap {
    /// Allocates under the heap's lock, growing the heap if needed.
    ///
    /// # Safety
    /// As `GlobalAlloc::alloc`.
    unsafe fn alloc_locked(&self, layout: Layout) -> *mut u8 {
        let mut st = self.state.lock();
        // SAFETY: GlobalAlloc callers never ask for zero bytes.
        if let Ok(p) = unsafe { st.talc.malloc(layout) } {
            return p.as_ptr();
        }
        if !st.extend(layout.size() + layout.align()) {
            return core::ptr::null_mut();
        }
        // SAFETY: as above.
        unsafe { st.talc.malloc(layout) }.map_or(core::ptr::null_mut(), |p| p.as_ptr())
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
    let mut st = HEAP.state.lock();
    // SAFETY: as above.
    unsafe { st.talc.free(p, layout) };
    st.shrink();
    drop(st);
    crate::trace::tracepoint::kmem::trace_kfree(objp);
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

    #[kernel_test]
    fn heap_returns_free_pages_at_its_top_to_the_frame_allocator() {
        let free_before = crate::mm::frame::stats().free;
        let big: Vec<u8> = alloc::vec![0x5a; 8 << 20];
        assert!(big.iter().all(|&b| b == 0x5a));
        let (grown, _) = stats();
        drop(big);
        let (shrunk, _) = stats();
        assert!(shrunk + (4 << 20) < grown, "heap kept its pages: {grown} -> {shrunk}");
        let free_after = crate::mm::frame::stats().free;
        assert!(
            free_after + 512 >= free_before,
            "frames not returned: {free_before} free before, {free_after} after"
        );
    }
}
