//! The global allocator: power-of-two size classes from 16 bytes to 2 KiB
//! carved out of 64 KiB anonymous mappings, with a free list per class;
//! larger blocks are mapped and unmapped one by one.
//!
//! The state has no lock: the programs allocate from one thread only. They
//! fork, and a forked child has its own copy; the threads that `usertests`
//! starts with clone(CLONE_VM) run functions that never allocate.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::null_mut;

use crate::mm;

const PAGE: usize = 4096;
const MIN_SHIFT: usize = 4;
const MAX_SHIFT: usize = 11;
const CLASSES: usize = MAX_SHIFT - MIN_SHIFT + 1;
const CHUNK: usize = 64 * 1024;

struct State {
    /// Heads of the free lists; a free block holds the next pointer.
    free: [*mut u8; CLASSES],
    /// The unused part of the current chunk.
    bump: usize,
    end: usize,
}

pub struct Heap {
    state: UnsafeCell<State>,
}

// SAFETY: only one thread ever allocates; see the module comment.
unsafe impl Sync for Heap {}

#[global_allocator]
static HEAP: Heap = Heap {
    state: UnsafeCell::new(State {
        free: [null_mut(); CLASSES],
        bump: 0,
        end: 0,
    }),
};

/// The size class of a layout, or None when it is mapped on its own.
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size().max(layout.align()).max(1 << MIN_SHIFT);
    let shift = size.next_power_of_two().trailing_zeros() as usize;
    (shift <= MAX_SHIFT).then(|| shift - MIN_SHIFT)
}

fn page_round(n: usize) -> Option<usize> {
    n.checked_add(PAGE - 1).map(|n| n & !(PAGE - 1))
}

impl State {
    fn alloc_small(&mut self, class: usize) -> *mut u8 {
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: a free block's first word is the next free block.
            self.free[class] = unsafe { *(head as *mut *mut u8) };
            return head;
        }
        let size = 1usize << (class + MIN_SHIFT);
        // Blocks are aligned to their size: the chunk is page aligned.
        let mut start = (self.bump + size - 1) & !(size - 1);
        if self.end == 0 || start + size > self.end {
            match mm::mmap_anon(CHUNK) {
                Ok(p) => {
                    self.bump = p as usize;
                    self.end = p as usize + CHUNK;
                    start = self.bump;
                }
                Err(_) => return null_mut(),
            }
        }
        self.bump = start + size;
        start as *mut u8
    }
}

// SAFETY: blocks come from fresh anonymous mappings aligned to at least
// their size class (or the layout's alignment for large ones) and each is
// handed out once until freed; one thread allocates (module comment).
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded (module comment) and not reentrant.
        let state = unsafe { &mut *self.state.get() };
        if let Some(class) = class_of(layout) {
            return state.alloc_small(class);
        }
        let Some(len) = page_round(layout.size()) else {
            return null_mut();
        };
        if layout.align() <= PAGE {
            return mm::mmap_anon(len).unwrap_or(null_mut());
        }
        // Over-map, then give back the unaligned head and the tail.
        let Some(over) = len.checked_add(layout.align()) else {
            return null_mut();
        };
        let Ok(p) = mm::mmap_anon(over) else { return null_mut() };
        let start = (p as usize + layout.align() - 1) & !(layout.align() - 1);
        let head = start - p as usize;
        // SAFETY: the head and the tail are parts of the new mapping that
        // are never handed out.
        unsafe {
            if head > 0 {
                let _ = mm::munmap(p, head);
            }
            let _ = mm::munmap((start + len) as *mut u8, over - head - len);
        }
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: single-threaded (module comment) and not reentrant.
        let state = unsafe { &mut *self.state.get() };
        match class_of(layout) {
            Some(class) => {
                // SAFETY: the block is at least a pointer in size and
                // aligned to its size; the caller no longer uses it.
                unsafe { *(ptr as *mut *mut u8) = state.free[class] };
                state.free[class] = ptr;
            }
            None => {
                if let Some(len) = page_round(layout.size()) {
                    // SAFETY: the block was mapped alone by `alloc` with
                    // this length; the caller no longer uses it.
                    let _ = unsafe { mm::munmap(ptr, len) };
                }
            }
        }
    }
}
