//! The physical frame allocator: one bit per 4 KiB frame over the span of
//! RAM the device tree describes, set for frames in use or absent.
//! Single frames come from a rotating hint; runs of frames (stacks, DMA-less
//! buffers) from a first-fit scan.
#![allow(unsafe_code)] // The bitmap lives in RAM it carves out of the free memory, reached through the linear map.

crate::notrace_module!();

use super::PhysRange;
use crate::sync::IrqSpinLock;
use arch::addr::{PhysAddr, UserPtr, UserVirtAddr};
use arch::memory::{align_up, phys_to_virt, PAGE_SHIFT, PAGE_SIZE};

/// The frame size, as physical addresses count.
const PAGE: u64 = 1 << PAGE_SHIFT;

/// Whole frames in `bytes` (usize has 64 bits here: nothing is lost).
const fn frames_in(bytes: u64) -> usize {
    (bytes >> PAGE_SHIFT) as usize
}

/// The bytes of `f` frames (usize has 64 bits here: nothing is lost).
const fn frame_bytes(f: usize) -> u64 {
    (f as u64) << PAGE_SHIFT
}

/// `x` rounded down to a frame boundary.
const fn page_align_down(x: u64) -> u64 {
    x & !(PAGE - 1)
}

/// `x` rounded up to a frame boundary (the last frame if there is none
/// above).
const fn page_align_up(x: u64) -> u64 {
    page_align_down(x.saturating_add(PAGE - 1))
}

struct FrameAllocator {
    /// Physical address of frame 0 of the bitmap.
    base: u64,
    /// Frames covered.
    nframes: usize,
    bitmap: &'static mut [u64],
    /// Users of each frame beyond the first (for copy-on-write sharing).
    extra_refs: &'static mut [u16],
    free: usize,
    total: usize,
    hint: usize,
}

static FRAMES: IrqSpinLock<Option<FrameAllocator>> = IrqSpinLock::new(None);

/// Counts of frames, for tests and `/proc/meminfo`-style reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameStats {
    /// Usable frames at boot.
    pub total: usize,
    /// Frames free now.
    pub free: usize,
}

fn subtract(ranges: &mut heapless_ranges::Ranges, hole: PhysRange) {
    ranges.remove(hole);
}

/// A tiny fixed-capacity set of disjoint ranges (no heap exists yet).
mod heapless_ranges {
    use super::PhysRange;

    const MAX: usize = 64;

    /// Disjoint physical ranges.
    pub struct Ranges {
        items: [PhysRange; MAX],
        len: usize,
    }

    impl Ranges {
        pub fn new() -> Self {
            Ranges {
                items: [PhysRange { start: 0, end: 0 }; MAX],
                len: 0,
            }
        }
        pub fn add(&mut self, r: PhysRange) {
            if r.end > r.start && self.len < MAX {
                self.items[self.len] = r;
                self.len += 1;
            }
        }
        /// Removes `hole` from every range, splitting where needed.
        pub fn remove(&mut self, hole: PhysRange) {
            let mut i = 0;
            while i < self.len {
                let r = self.items[i];
                if hole.end <= r.start || hole.start >= r.end {
                    i += 1;
                    continue;
                }
                let left = PhysRange {
                    start: r.start,
                    end: hole.start.max(r.start),
                };
                let right = PhysRange {
                    start: hole.end.min(r.end),
                    end: r.end,
                };
                self.items[i] = self.items[self.len - 1];
                self.len -= 1;
                self.add(left);
                self.add(right);
            }
        }
        pub fn iter(&self) -> impl Iterator<Item = PhysRange> + '_ {
            self.items[..self.len].iter().copied()
        }
    }
}

/// Sets up the allocator over `ram`, leaving out `reserved` (the image, the
/// DTB, firmware regions). Returns the number of usable frames.
pub fn init(ram: &[PhysRange], reserved: &[PhysRange]) -> usize {
    let mut free = heapless_ranges::Ranges::new();
    for r in ram {
        free.add(PhysRange {
            start: page_align_up(r.start),
            end: page_align_down(r.end),
        });
    }
    for &hole in reserved {
        subtract(
            &mut free,
            PhysRange {
                start: page_align_down(hole.start),
                end: page_align_up(hole.end),
            },
        );
    }
    let Some(lo) = free.iter().map(|r| r.start).min() else {
        return 0;
    };
    let hi = free.iter().map(|r| r.end).max().unwrap_or(lo);
    let nframes = frames_in(hi - lo);
    let words = nframes.div_ceil(64);
    let bitmap_bytes = align_up(words * 8 + nframes * 2, PAGE_SIZE);
    let bitmap_len = frame_bytes(bitmap_bytes / PAGE_SIZE);
    // The bitmap takes the start of the largest free range.
    let Some(home) = free
        .iter()
        .filter(|r| r.end - r.start >= bitmap_len)
        .max_by_key(|r| r.end - r.start)
    else {
        return 0;
    };
    let bitmap_range = PhysRange {
        start: home.start,
        end: home.start + bitmap_len,
    };
    subtract(&mut free, bitmap_range);
    // SAFETY: `bitmap_range` is RAM taken out of the free ranges above, so
    // nothing else will ever use it; the linear map covers all RAM.
    let bitmap = unsafe { core::slice::from_raw_parts_mut(phys_to_virt(bitmap_range.start) as *mut u64, words) };
    bitmap.fill(u64::MAX);
    // SAFETY: the reference counts follow the bitmap in the same carved-out
    // range (sized for both above); the u64 words keep them 2-byte aligned.
    let extra_refs =
        unsafe { core::slice::from_raw_parts_mut((phys_to_virt(bitmap_range.start) + words * 8) as *mut u16, nframes) };
    extra_refs.fill(0);
    let mut a = FrameAllocator {
        base: lo,
        nframes,
        bitmap,
        extra_refs,
        free: 0,
        total: 0,
        hint: 0,
    };
    for r in free.iter() {
        let first = frames_in(r.start - lo);
        let count = frames_in(r.end - r.start);
        for f in first..first + count {
            a.bitmap[f / 64] &= !(1 << (f % 64));
        }
        a.free += count;
    }
    a.total = a.free;
    let total = a.total;
    *FRAMES.lock() = Some(a);
    arch::mmu::set_table_frame_source(alloc_frame);
    total
}

impl FrameAllocator {
    fn is_used(&self, f: usize) -> bool {
        self.bitmap[f / 64] & (1 << (f % 64)) != 0
    }

    fn set(&mut self, f: usize, used: bool) {
        if used {
            self.bitmap[f / 64] |= 1 << (f % 64);
        } else {
            self.bitmap[f / 64] &= !(1 << (f % 64));
        }
    }

    fn alloc_one(&mut self) -> Option<usize> {
        let words = self.bitmap.len();
        let start = self.hint / 64;
        for i in 0..words {
            let w = (start + i) % words;
            if self.bitmap[w] != u64::MAX {
                let f = w * 64 + (!self.bitmap[w]).trailing_zeros() as usize;
                if f >= self.nframes {
                    continue;
                }
                self.set(f, true);
                self.free -= 1;
                self.hint = f;
                return Some(f);
            }
        }
        None
    }

    fn alloc_run(&mut self, count: usize, align: usize) -> Option<usize> {
        let mut f = 0;
        while f + count <= self.nframes {
            if f % align != 0 {
                f = align_up(f, align);
                continue;
            }
            match (f..f + count).find(|&g| self.is_used(g)) {
                Some(used) => f = used + 1,
                None => {
                    for g in f..f + count {
                        self.set(g, true);
                    }
                    self.free -= count;
                    return Some(f);
                }
            }
        }
        None
    }
}

/// Allocates one frame; returns its physical address.
pub fn alloc_frame() -> Option<PhysAddr> {
    let pa = alloc_one_frame();
    crate::trace::tracepoint::kmem::trace_mm_page_alloc(pa.map(PhysAddr::as_u64), 0);
    pa
}

fn alloc_one_frame() -> Option<PhysAddr> {
    let mut guard = FRAMES.lock();
    let a = guard.as_mut()?;
    let f = a.alloc_one()?;
    a.frame_addr(f)
}

/// Allocates `count` physically contiguous frames whose first frame is
/// aligned to `align_frames` frames (a power of two).
pub fn alloc_frames(count: usize, align_frames: usize) -> Option<PhysAddr> {
    let pa = alloc_frame_run(count, align_frames);
    crate::trace::tracepoint::kmem::trace_mm_page_alloc(
        pa.map(PhysAddr::as_u64),
        count.next_power_of_two().trailing_zeros(),
    );
    pa
}

fn alloc_frame_run(count: usize, align_frames: usize) -> Option<PhysAddr> {
    if count == 0 || !align_frames.is_power_of_two() {
        return None;
    }
    let mut guard = FRAMES.lock();
    let a = guard.as_mut()?;
    // Alignment is of the physical address, so account for the base.
    let base_frame = frames_in(a.base);
    let skew = (align_frames - base_frame % align_frames) % align_frames;
    let f = if skew == 0 {
        a.alloc_run(count, align_frames)?
    } else {
        // Search on an aligned grid shifted by the skew.
        let mut f = skew;
        loop {
            if f + count > a.nframes {
                return None;
            }
            match (f..f + count).find(|&g| a.is_used(g)) {
                Some(used) => f = skew + align_up(used + 1 - skew, align_frames),
                None => break,
            }
        }
        for g in f..f + count {
            a.set(g, true);
        }
        a.free -= count;
        f
    };
    a.frame_addr(f)
}

/// Frees `count` frames starting at `pa`.
///
/// Panics on a double free or a foreign address: both are kernel bugs that
/// would otherwise corrupt memory silently.
pub fn free_frames(pa: PhysAddr, count: usize) {
    let mut guard = FRAMES.lock();
    let a = guard.as_mut().expect("frame allocator not initialised");
    let raw = pa.as_u64();
    assert!(
        raw >= a.base && pa.is_page_aligned(),
        "free_frames: bad address {raw:#x}"
    );
    let first = frames_in(raw - a.base);
    assert!(first + count <= a.nframes, "free_frames: {raw:#x}+{count} beyond RAM");
    for f in first..first + count {
        assert!(a.is_used(f), "free_frames: double free of {:#x}", a.addr_of(f));
        a.set(f, false);
    }
    a.free += count;
    drop(guard);
    crate::trace::tracepoint::kmem::trace_mm_page_free(raw, count.next_power_of_two().trailing_zeros());
}

/// Frees one frame.
pub fn free_frame(pa: PhysAddr) {
    free_frames(pa, 1)
}

impl FrameAllocator {
    /// The index of the frame holding `pa`.
    ///
    /// Panics on an address outside the allocator's span: a kernel bug
    /// that would otherwise corrupt another frame's count.
    fn frame_index(&self, pa: PhysAddr) -> usize {
        pa.as_u64()
            .checked_sub(self.base)
            .map(frames_in)
            .filter(|&f| f < self.nframes)
            .unwrap_or_else(|| panic!("{:#x} is not a frame of RAM", pa.as_u64()))
    }

    /// The address of frame `f`.
    fn addr_of(&self, f: usize) -> u64 {
        self.base + frame_bytes(f)
    }

    /// The address of frame `f` (one of ours: below 48 bits).
    fn frame_addr(&self, f: usize) -> Option<PhysAddr> {
        PhysAddr::new(self.addr_of(f))
    }
}

/// Adds a user of the (allocated) frame at `pa`: copy-on-write sharing.
pub fn page_ref_inc(pa: PhysAddr) {
    let mut guard = FRAMES.lock();
    let a = guard.as_mut().expect("frame allocator not initialised");
    let f = a.frame_index(pa);
    assert!(a.is_used(f), "page_ref_inc on free frame {:#x}", pa.as_u64());
    a.extra_refs[f] = a.extra_refs[f].checked_add(1).expect("frame reference count overflow");
}

/// Drops a user of the frame at `pa`; frees it when it was the last.
/// Returns whether it was freed.
pub fn page_ref_dec(pa: PhysAddr) -> bool {
    let mut guard = FRAMES.lock();
    let a = guard.as_mut().expect("frame allocator not initialised");
    let f = a.frame_index(pa);
    assert!(a.is_used(f), "page_ref_dec on free frame {:#x}", pa.as_u64());
    if a.extra_refs[f] > 0 {
        a.extra_refs[f] -= 1;
        return false;
    }
    a.set(f, false);
    a.free += 1;
    true
}

/// Users of the frame at `pa` (1 for a private frame).
pub fn page_count(pa: PhysAddr) -> usize {
    let guard = FRAMES.lock();
    let a = guard.as_ref().expect("frame allocator not initialised");
    let f = a.frame_index(pa);
    usize::from(a.extra_refs[f]) + 1
}

/// The frame's bytes, through the linear map.
fn frame_ptr(pa: PhysAddr) -> *mut u8 {
    assert!(pa.is_page_aligned(), "not a frame address: {:#x}", pa.as_u64());
    pa.to_linear().as_mut_ptr()
}

/// Frames kept for the kernel: user pages are refused below this, so that
/// a process eating all memory is killed (as by Linux's OOM killer)
/// before the kernel's own allocations fail. 8 MiB.
pub const USER_RESERVE_FRAMES: usize = 2048;

/// A frame for user memory, unless free memory is down to the kernel's
/// reserve.
pub fn alloc_user_frame() -> Option<PhysAddr> {
    let mut guard = FRAMES.lock();
    let a = guard.as_mut()?;
    if a.free <= USER_RESERVE_FRAMES.min(a.total / 8) {
        return None;
    }
    let f = a.alloc_one()?;
    a.frame_addr(f)
}

/// A zeroed frame for user memory (see `alloc_user_frame`).
pub fn alloc_user_zeroed_frame() -> Option<PhysAddr> {
    let pa = alloc_user_frame()?;
    // SAFETY: the frame was just allocated to us; the linear map covers it.
    unsafe { core::ptr::write_bytes(frame_ptr(pa), 0, PAGE_SIZE) };
    Some(pa)
}

/// Allocates a zeroed frame.
pub fn alloc_zeroed_frame() -> Option<PhysAddr> {
    let pa = alloc_frame()?;
    // SAFETY: the frame was just allocated to us; the linear map covers it.
    unsafe { core::ptr::write_bytes(frame_ptr(pa), 0, PAGE_SIZE) };
    Some(pa)
}

/// Copies the whole frame `src` into the frame `dst` (both allocated).
pub fn copy_frame(dst: PhysAddr, src: PhysAddr) {
    // SAFETY: both are allocated frames reached through the linear map; a
    // frame is never copied onto itself.
    unsafe { core::ptr::copy_nonoverlapping(frame_ptr(src), frame_ptr(dst), PAGE_SIZE) };
}

/// Writes `data` into the allocated frame `pa` at `offset`.
pub fn write_frame(pa: PhysAddr, offset: usize, data: &[u8]) {
    assert!(offset + data.len() <= PAGE_SIZE, "write_frame past the frame");
    // SAFETY: inside one allocated frame (checked above).
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), frame_ptr(pa).add(offset), data.len()) };
}

/// Reads from the allocated frame `pa` at `offset` into `buf`.
pub fn read_frame(pa: PhysAddr, offset: usize, buf: &mut [u8]) {
    assert!(offset + buf.len() <= PAGE_SIZE, "read_frame past the frame");
    // SAFETY: inside one allocated frame (checked above).
    unsafe { core::ptr::copy_nonoverlapping(frame_ptr(pa).add(offset), buf.as_mut_ptr(), buf.len()) };
}

/// Lends `len` bytes of the allocated frame `pa` from `offset` to `f`,
/// without copying them first (a read of a file's page straight into user
/// memory). The caller holds a reference on the frame for the call.
pub fn with_frame_bytes<R>(pa: PhysAddr, offset: usize, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
    assert!(offset + len <= PAGE_SIZE, "with_frame_bytes past the frame");
    // SAFETY: inside one allocated frame (checked above) that the caller's
    // reference keeps allocated until `f` returns. Another CPU may write
    // it meanwhile (a write(2) or a shared mapping), as Linux's page cache
    // allows; `f` only copies the bytes out.
    f(unsafe { core::slice::from_raw_parts(frame_ptr(pa).add(offset), len) })
}

/// Copies `len` bytes of the allocated frame `pa` at `offset` to user
/// address `dst`: one copy, with no bounce buffer (process_vm_readv from a
/// pinned frame). EFAULT if the user range cannot be written whole.
pub fn copy_frame_to_user(
    pa: PhysAddr,
    offset: usize,
    len: usize,
    dst: UserVirtAddr,
) -> Result<(), crate::errno::Errno> {
    assert!(offset + len <= PAGE_SIZE, "copy_frame_to_user past the frame");
    // SAFETY: inside one allocated frame (checked above), which the caller
    // keeps allocated by holding a reference to it while this runs.
    let src = unsafe { core::slice::from_raw_parts(frame_ptr(pa).add(offset), len) };
    crate::uaccess::copy_to_user(dst.into(), src)
}

/// [`copy_frame_to_user`] with page faults disabled (Linux's
/// `copy_to_user_nofault` pattern): a destination that is not mapped
/// writable now fails at once instead of being faulted in, so the caller
/// may hold a lock its own fault would take (the source space's, when it
/// is the caller's own). Whether every byte was copied; a failed copy may
/// have written part of `dst`. The caller keeps `pa` allocated (a
/// reference, or the lock of a space that maps it).
pub fn copy_frame_to_user_nofault(pa: PhysAddr, offset: usize, len: usize, dst: UserPtr) -> bool {
    assert!(
        offset <= PAGE_SIZE && len <= PAGE_SIZE - offset,
        "copy_frame_to_user_nofault past the frame"
    );
    // SAFETY: inside one allocated frame (checked above), which the caller
    // keeps allocated while this runs.
    let src = unsafe { core::slice::from_raw_parts(frame_ptr(pa).add(offset), len) };
    // Interrupts stay on: this kernel switches tasks only where they
    // block, never inside the copy, so the count stays this task's; an
    // interrupt handler that meets it only reads user memory nofault
    // itself.
    crate::fault::pagefault_disable();
    let left = arch::uaccess::raw_copy_to_user(dst, src);
    crate::fault::pagefault_enable();
    left == 0
}

/// Makes instructions written into frame `pa` at `[offset, offset + len)`
/// visible to instruction fetch (a tracer's breakpoint in a tracee's text).
pub fn sync_icache_frame(pa: PhysAddr, offset: usize, len: usize) {
    assert!(offset + len <= PAGE_SIZE, "sync_icache_frame past the frame");
    arch::cache::sync_icache_range(pa.to_linear().as_usize() + offset, len);
}

/// Current counts.
pub fn stats() -> FrameStats {
    let guard = FRAMES.lock();
    guard.as_ref().map_or(FrameStats { total: 0, free: 0 }, |a| FrameStats {
        total: a.total,
        free: a.free,
    })
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn frames_are_distinct_and_return_to_the_pool() {
        let before = stats().free;
        let mut got = [None; 64];
        for slot in got.iter_mut() {
            let pa = alloc_frame().expect("frame");
            assert!(pa.is_page_aligned());
            *slot = Some(pa);
        }
        for i in 0..got.len() {
            for j in i + 1..got.len() {
                assert_ne!(got[i], got[j], "frame handed out twice");
            }
        }
        assert_eq!(stats().free, before - 64);
        for pa in got.into_iter().flatten() {
            free_frame(pa);
        }
        assert_eq!(stats().free, before);
    }

    #[kernel_test]
    fn contiguous_runs_honour_alignment() {
        let before = stats().free;
        let pa = alloc_frames(16, 16).expect("16 aligned frames");
        assert!(pa.is_aligned(16 * PAGE));
        let one = alloc_frame().unwrap();
        let run_end = pa.checked_add(16 * PAGE).unwrap();
        assert!(one < pa || one >= run_end, "single frame inside a live run");
        free_frame(one);
        free_frames(pa, 16);
        assert_eq!(stats().free, before);
        assert!(alloc_frames(0, 1).is_none());
        assert!(alloc_frames(1, 3).is_none());
    }

    #[kernel_test]
    fn frames_exclude_the_kernel_image() {
        let (lo, hi) = arch::mmu::kimage_phys_range();
        let mut got = alloc::vec::Vec::new();
        for _ in 0..256 {
            let pa = alloc_frame().unwrap();
            let end = pa.checked_add(PAGE).unwrap();
            assert!(end <= lo || pa >= hi, "frame {pa:?} inside the kernel image");
            got.push(pa);
        }
        got.into_iter().for_each(free_frame);
    }
}
