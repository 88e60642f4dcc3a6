//! Slab caches (Linux's `struct kmem_cache`): named caches of objects of
//! one size, carved out of slabs of `1 << order` pages from the frame
//! allocator, for the objects a user can make many of (path names,
//! queued signals). A cache's objects are packed without the per-object
//! headers of the general heap, and the cache has a name that
//! `/proc/slabinfo` and the `kmem_cache_alloc`/`kmem_cache_free` events
//! show.
//!
//! Each slab is naturally aligned to its size and begins with its own
//! header (Linux keeps it in `struct page`), followed by the objects; a
//! free object holds the next free one (Linux's freelist pointer). Slabs
//! with free objects are on the cache's partial list; a slab whose last
//! object is freed is kept as the cache's one spare, or given back to the
//! frame allocator, so that a burst of objects does not keep its memory
//! out of MemFree (as SLUB discards empty slabs beyond `min_partial`).
//! One lock per cache: the objects here are allocated at system-call
//! rate, not in the per-CPU fast paths Linux's per-CPU slabs serve.
#![allow(unsafe_code)] // Slabs are raw pages reached through the linear map; objects are handed out as raw memory.

use crate::sync::IrqSpinLock;
use crate::trace::tracepoint::kmem;
use alloc::string::String;
use arch::addr::VirtAddr;
use arch::memory::{align_down, PAGE_SIZE};
use core::fmt::Write as _;
use core::ptr::{null_mut, NonNull};

/// Largest slab: `1 << MAX_ORDER` pages (Linux's `slub_max_order`).
const MAX_ORDER: u32 = 3;

/// The header at the start of every slab.
#[repr(C)]
struct Slab {
    /// The cache the slab belongs to (checked on every free).
    cache: *const KmemCache,
    /// Neighbours on the partial list.
    next: *mut Slab,
    prev: *mut Slab,
    /// First free object; null when the slab is full.
    freelist: *mut FreeObject,
    /// Objects in use.
    inuse: usize,
}

/// A free object: the link to the next free one of its slab.
struct FreeObject {
    next: *mut FreeObject,
}

/// What the cache's lock protects.
struct Lists {
    /// Slabs with free objects and some in use.
    partial: *mut Slab,
    /// An empty slab kept for the next allocation.
    spare: *mut Slab,
    /// Slabs the cache holds, the spare included.
    nr_slabs: usize,
    /// Objects in use.
    active_objs: usize,
}

// SAFETY: the slabs the pointers lead to belong to the cache and are only
// reached under its lock.
unsafe impl Send for Lists {}

/// A named cache of objects of one size (Linux's `struct kmem_cache`).
/// Declared as a `static` with [`KmemCache::new`], which works out the
/// slab layout at compile time, and listed in [`CACHES`] for
/// `/proc/slabinfo`.
pub struct KmemCache {
    name: &'static str,
    /// Bytes asked for (`object_size`).
    object_size: usize,
    /// Bytes taken per object, alignment included (`size`).
    size: usize,
    /// Alignment of every object.
    align: usize,
    /// `1 << order` pages per slab.
    order: u32,
    /// Offset of the first object in a slab.
    offset: usize,
    /// Objects per slab.
    objects: usize,
    /// `SLAB_ACCOUNT`: objects are charged to the allocating task's memory
    /// cgroup on Linux (the events' `accounted=true`).
    accounted: bool,
    lists: IrqSpinLock<Lists>,
}

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

const fn round_up(x: usize, align: usize) -> usize {
    (x + align - 1) & !(align - 1)
}

impl KmemCache {
    /// A cache named `name` of `object_size`-byte objects aligned to
    /// `align` (a power of two, at most a page), as Linux's
    /// `kmem_cache_create`. The slab order is the smallest that wastes at
    /// most an eighth of the slab, up to `MAX_ORDER`; an object that does
    /// not fit fails the build.
    pub const fn new(name: &'static str, object_size: usize, align: usize, accounted: bool) -> KmemCache {
        assert!(align.is_power_of_two() && align <= PAGE_SIZE, "bad slab alignment");
        let align = max(align, core::mem::align_of::<FreeObject>());
        let size = round_up(max(object_size, core::mem::size_of::<FreeObject>()), align);
        let offset = round_up(core::mem::size_of::<Slab>(), align);
        let mut order = 0;
        loop {
            let bytes = PAGE_SIZE << order;
            if bytes >= offset + size {
                let waste = (bytes - offset) % size;
                if waste * 8 <= bytes || order == MAX_ORDER {
                    break;
                }
            }
            assert!(order < MAX_ORDER, "object too large for a slab");
            order += 1;
        }
        KmemCache {
            name,
            object_size,
            size,
            align,
            order,
            offset,
            objects: ((PAGE_SIZE << order) - offset) / size,
            accounted,
            lists: IrqSpinLock::new(Lists {
                partial: null_mut(),
                spare: null_mut(),
                nr_slabs: 0,
                active_objs: 0,
            }),
        }
    }

    /// The cache's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Bytes per object as asked (`object_size`).
    pub fn object_size(&self) -> usize {
        self.object_size
    }

    /// The same cache with slabs of `1 << order` pages: the caches of
    /// [`arc_new_in`] all use [`ARC_SLAB_ORDER`], so that a freed
    /// pointer's slab header is found by one rounding, whatever its cache.
    /// A smaller order than the objects need fails the build.
    pub const fn with_slab_order(mut self, order: u32) -> KmemCache {
        assert!(
            order >= self.order && order <= MAX_ORDER,
            "slab order too small for the objects"
        );
        self.order = order;
        self.objects = ((PAGE_SIZE << order) - self.offset) / self.size;
        self
    }

    /// Bytes per slab.
    fn slab_bytes(&self) -> usize {
        PAGE_SIZE << self.order
    }

    /// Takes a new slab from the frame allocator and threads its objects
    /// onto its freelist.
    fn new_slab(&self) -> Option<*mut Slab> {
        let pages = 1usize << self.order;
        let pa = if pages == 1 {
            super::frame::alloc_frame()?
        } else {
            super::frame::alloc_frames(pages, pages)?
        };
        let base = pa.to_linear().as_usize();
        let slab = base as *mut Slab;
        let mut free: *mut FreeObject = null_mut();
        for i in (0..self.objects).rev() {
            let obj = (base + self.offset + i * self.size) as *mut FreeObject;
            // SAFETY: the object lies inside the slab just taken, which the
            // linear map maps read-write and nothing else uses; `offset`
            // and `size` keep it aligned for a pointer.
            unsafe { obj.write(FreeObject { next: free }) };
            free = obj;
        }
        // SAFETY: as above, for the header at the start of the slab.
        unsafe {
            slab.write(Slab {
                cache: self,
                next: null_mut(),
                prev: null_mut(),
                freelist: free,
                inuse: 0,
            })
        };
        Some(slab)
    }

    /// Gives the pages of `slab` back to the frame allocator.
    fn discard_slab(&self, slab: *mut Slab) {
        let pa = VirtAddr::of(slab).and_then(VirtAddr::linear_to_phys);
        super::frame::free_frames(pa.expect("slabs live in the linear map"), 1 << self.order);
    }

    /// Takes an object, or None when no slab can be had.
    fn alloc_object(&self) -> Option<NonNull<u8>> {
        let mut l = self.lists.lock();
        let mut slab = l.partial;
        if slab.is_null() {
            slab = core::mem::replace(&mut l.spare, null_mut());
            if slab.is_null() {
                slab = self.new_slab()?;
                l.nr_slabs += 1;
            }
            push(&mut l.partial, slab);
        }
        // SAFETY: slabs on the partial list are this cache's, with at
        // least one free object; the lock is held.
        unsafe {
            let obj = (*slab).freelist;
            (*slab).freelist = (*obj).next;
            (*slab).inuse += 1;
            if (*slab).freelist.is_null() {
                unlink(&mut l.partial, slab);
            }
            l.active_objs += 1;
            NonNull::new(obj.cast())
        }
    }

    /// Returns `obj` to its slab.
    ///
    /// # Safety
    /// `obj` must have come from `alloc_object` of this cache and not have
    /// been freed since.
    unsafe fn free_object(&self, obj: NonNull<u8>) {
        let slab = align_down(obj.as_ptr() as usize, self.slab_bytes()) as *mut Slab;
        let mut l = self.lists.lock();
        // SAFETY: per the contract, `obj` is an object of this cache, so
        // `slab` is the header of its slab, which stays mapped while it
        // holds an object; the lock is held.
        let empty = unsafe {
            assert!(
                core::ptr::eq((*slab).cache, self)
                    && (obj.as_ptr() as usize - slab as usize - self.offset).is_multiple_of(self.size),
                "kmem_cache_free: {:p} is not an object of {}",
                obj,
                self.name
            );
            let was_full = (*slab).freelist.is_null();
            let f = obj.as_ptr().cast::<FreeObject>();
            f.write(FreeObject { next: (*slab).freelist });
            (*slab).freelist = f;
            (*slab).inuse -= 1;
            l.active_objs -= 1;
            if was_full {
                push(&mut l.partial, slab);
            }
            (*slab).inuse == 0
        };
        if !empty {
            return;
        }
        unlink(&mut l.partial, slab);
        if l.spare.is_null() {
            l.spare = slab;
            return;
        }
        l.nr_slabs -= 1;
        drop(l);
        self.discard_slab(slab);
    }

    /// Gives the spare slab back (for leak checks and memory pressure).
    pub fn shrink(&self) {
        let mut l = self.lists.lock();
        let spare = core::mem::replace(&mut l.spare, null_mut());
        if spare.is_null() {
            return;
        }
        l.nr_slabs -= 1;
        drop(l);
        self.discard_slab(spare);
    }

    /// Objects in use and slabs held.
    pub fn counts(&self) -> (usize, usize) {
        let l = self.lists.lock();
        (l.active_objs, l.nr_slabs)
    }

    /// The cache's line of `/proc/slabinfo` (Linux's `cache_show`).
    fn slabinfo_line(&self, out: &mut String) {
        let (active_objs, nr_slabs, active_slabs) = {
            let l = self.lists.lock();
            // Slabs with an object in use: all but the spare.
            (l.active_objs, l.nr_slabs, l.nr_slabs - usize::from(!l.spare.is_null()))
        };
        let _ = writeln!(
            out,
            "{:<17} {:>6} {:>6} {:>6} {:>4} {:>4} : tunables {:>4} {:>4} {:>4} : slabdata {:>6} {:>6} {:>6}",
            self.name,
            active_objs,
            nr_slabs * self.objects,
            self.size,
            self.objects,
            1usize << self.order,
            0,
            0,
            0,
            active_slabs,
            nr_slabs,
            0
        );
    }
}

/// Puts `slab` at the head of `list`.
fn push(list: &mut *mut Slab, slab: *mut Slab) {
    // SAFETY: callers hold the cache's lock; `slab` and the list's slabs
    // are the cache's, mapped while the cache holds them.
    unsafe {
        (*slab).prev = null_mut();
        (*slab).next = *list;
        if !list.is_null() {
            (**list).prev = slab;
        }
    }
    *list = slab;
}

/// Takes `slab` off `list`.
fn unlink(list: &mut *mut Slab, slab: *mut Slab) {
    // SAFETY: as in `push`; `slab` is on `list`.
    unsafe {
        let (prev, next) = ((*slab).prev, (*slab).next);
        if prev.is_null() {
            *list = next;
        } else {
            (*prev).next = next;
        }
        if !next.is_null() {
            (*next).prev = prev;
        }
        (*slab).prev = null_mut();
        (*slab).next = null_mut();
    }
}

/// Allocates an object of `s` (Linux's `kmem_cache_alloc(s, gfpflags)`,
/// exported under its name so that it can be probed; x0 is the cache).
/// Null when no memory is left. Its caller is the event's `call_site`.
#[no_mangle]
#[inline(never)]
pub fn kmem_cache_alloc(s: &KmemCache, gfpflags: u32) -> *mut u8 {
    let Some(obj) = s.alloc_object() else {
        return null_mut();
    };
    kmem::trace_kmem_cache_alloc(
        obj.as_ptr(),
        s.object_size as u64,
        s.size as u64,
        gfpflags.into(),
        s.accounted,
    );
    obj.as_ptr()
}

/// Frees the object `x` of `s` (Linux's `kmem_cache_free`); null is
/// ignored.
///
/// # Safety
/// `x` must be null or an object `kmem_cache_alloc` gave for `s` that has
/// not been freed since.
#[no_mangle]
#[inline(never)]
pub unsafe fn kmem_cache_free(s: &KmemCache, x: *mut u8) {
    let Some(obj) = NonNull::new(x) else { return };
    kmem::trace_kmem_cache_free(x, s.name);
    // SAFETY: the caller's contract is free_object's.
    unsafe { s.free_object(obj) };
}

/// An object of a slab cache holding a `T` (a `Box` whose memory comes
/// from a named cache).
pub struct SlabBox<T: 'static> {
    ptr: NonNull<T>,
    cache: &'static KmemCache,
}

// SAFETY: a SlabBox owns its T as a Box does.
unsafe impl<T: Send> Send for SlabBox<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for SlabBox<T> {}

impl<T> SlabBox<T> {
    /// Moves `value` into a new object of `cache`; gives it back when the
    /// cache has no memory. `cache` must be declared for `T`'s size and
    /// alignment (a kernel bug otherwise, caught here).
    pub fn try_new(cache: &'static KmemCache, value: T, gfp: u32) -> Result<SlabBox<T>, T> {
        assert!(
            core::mem::size_of::<T>() <= cache.object_size && core::mem::align_of::<T>() <= cache.align,
            "SlabBox: the objects of {} cannot hold this type",
            cache.name
        );
        let Some(p) = NonNull::new(kmem_cache_alloc(cache, gfp)) else {
            return Err(value);
        };
        let ptr = p.cast::<T>();
        // SAFETY: the object is at least `size_of::<T>()` bytes, aligned
        // for T (checked above), and unused.
        unsafe { ptr.write(value) };
        Ok(SlabBox { ptr, cache })
    }
}

impl<T> core::ops::Deref for SlabBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the object holds a T for the SlabBox's life.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> core::ops::DerefMut for SlabBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and the SlabBox is borrowed mutably.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> Drop for SlabBox<T> {
    fn drop(&mut self) {
        // SAFETY: the object holds a T, dropped once here, and then goes
        // back to the cache that gave it.
        unsafe {
            core::ptr::drop_in_place(self.ptr.as_ptr());
            kmem_cache_free(self.cache, self.ptr.as_ptr().cast());
        }
    }
}

/// Bytes of an `Arc<T>`'s allocation (`ArcInner<T>`: the strong and weak
/// counts, then the value at its alignment), for a cache of them.
pub const fn arc_object_size<T>() -> usize {
    let align = max(core::mem::align_of::<T>(), core::mem::align_of::<usize>());
    round_up(
        round_up(2 * core::mem::size_of::<usize>(), align) + core::mem::size_of::<T>(),
        align,
    )
}

/// The alignment of an `Arc<T>`'s allocation.
pub const fn arc_object_align<T>() -> usize {
    max(core::mem::align_of::<T>(), core::mem::align_of::<usize>())
}

/// The cache this CPU's next heap allocation comes from (set by
/// [`arc_new_in`] around its one allocation, with interrupts masked).
static NEXT_ALLOC_CACHE: crate::percpu::PerCpu<core::sync::atomic::AtomicPtr<KmemCache>> =
    crate::percpu::PerCpu::new([const { core::sync::atomic::AtomicPtr::new(null_mut()) }; crate::percpu::NR_CPUS]);

/// The object [`arc_new_in`] took from `NEXT_ALLOC_CACHE` for this CPU's
/// next heap allocation.
static NEXT_ALLOC_OBJECT: crate::percpu::PerCpu<core::sync::atomic::AtomicPtr<u8>> =
    crate::percpu::PerCpu::new([const { core::sync::atomic::AtomicPtr::new(null_mut()) }; crate::percpu::NR_CPUS]);

/// The slab order of every cache in `ARC_CACHES` (see
/// [`KmemCache::with_slab_order`]).
pub const ARC_SLAB_ORDER: u32 = 2;

/// The caches whose objects are `Arc`s handed out by [`arc_new_in`] and
/// freed through the global allocator ([`arc_cache_free`]); all have
/// slabs of `1 << ARC_SLAB_ORDER` pages.
static ARC_CACHES: [&KmemCache; 3] = [&crate::sched::task::TASK_STRUCT_CACHEP, &FILP_CACHEP, &DENTRY_CACHEP];

/// The cache of open files (Linux's `filp_cachep`): every `OpenFile`.
pub static FILP_CACHEP: KmemCache = KmemCache::new(
    "filp",
    arc_object_size::<vfs::file::OpenFile>(),
    arc_object_align::<vfs::file::OpenFile>(),
    true,
)
.with_slab_order(ARC_SLAB_ORDER);

/// Makes open files objects of [`FILP_CACHEP`] and their names objects of
/// [`DENTRY_CACHEP`] (at boot, before the first file is opened).
pub fn filp_cache_init() {
    vfs::file::set_filp_alloc(|f| arc_new_in(&FILP_CACHEP, f));
    vfs::dentry::set_dentry_alloc(|d| arc_new_in(&DENTRY_CACHEP, d));
}

/// The cache of dentries (Linux's `dentry_cache`). This VFS has no
/// dentry cache: the dentries that live here are the names open files
/// hold (what `file->f_path.dentry` is to a probe), one per named open
/// file, allocated at open and freed at the last close.
pub static DENTRY_CACHEP: KmemCache = KmemCache::new(
    "dentry",
    arc_object_size::<vfs::dentry::DentryName>(),
    arc_object_align::<vfs::dentry::DentryName>(),
    true,
)
.with_slab_order(ARC_SLAB_ORDER);

/// `Arc::new(value)` with the `Arc`'s memory from `cache` (declared with
/// [`arc_object_size`] and [`arc_object_align`] of `T`, and listed in
/// `ARC_CACHES`): the type stays a plain `Arc<T>`, and its last drop
/// gives the object back to the cache. Falls back to the heap if the cache
/// cannot serve.
pub fn arc_new_in<T>(cache: &'static KmemCache, value: T) -> alloc::sync::Arc<T> {
    assert!(
        arc_object_size::<T>() <= cache.object_size && arc_object_align::<T>() <= cache.align,
        "arc_new_in: the objects of {} cannot hold this type",
        cache.name
    );
    // The object is taken here, with interrupts as the caller has them,
    // so that its kmem_cache_alloc event and probes see the caller's
    // context (Linux's dup_task_struct and alloc_empty_file allocate with
    // interrupts on), not the masked section below.
    let obj = kmem_cache_alloc(cache, kmem::GFP_KERNEL as u32);
    if obj.is_null() {
        return alloc::sync::Arc::new(value);
    }
    // Arc::new makes exactly one allocation, its ArcInner; nothing else on
    // this CPU allocates in between with interrupts masked.
    let irq = arch::cpu::local_irq_save();
    let next = NEXT_ALLOC_CACHE.this();
    let next_obj = NEXT_ALLOC_OBJECT.this();
    next_obj.store(obj, core::sync::atomic::Ordering::Relaxed);
    next.store(
        core::ptr::from_ref(cache).cast_mut(),
        core::sync::atomic::Ordering::Relaxed,
    );
    let arc = alloc::sync::Arc::new(value);
    next.store(null_mut(), core::sync::atomic::Ordering::Relaxed);
    let unused = next_obj.swap(null_mut(), core::sync::atomic::Ordering::Relaxed);
    arch::cpu::local_irq_restore(irq);
    if !unused.is_null() {
        // SAFETY: taken from `cache` above and handed to no one (the
        // allocation did not fit it and came from the heap).
        unsafe { kmem_cache_free(cache, unused) };
    }
    arc
}

/// From the heap's `alloc`: an object of the cache [`arc_new_in`] chose
/// for this allocation, if it chose one and the object can hold `layout`.
pub fn arc_cache_alloc(layout: core::alloc::Layout) -> Option<*mut u8> {
    let next = NEXT_ALLOC_CACHE.this();
    if next.load(core::sync::atomic::Ordering::Relaxed).is_null() {
        return None;
    }
    let c = next.swap(null_mut(), core::sync::atomic::Ordering::Relaxed);
    let cache = ARC_CACHES.iter().copied().find(|k| core::ptr::eq(*k, c))?;
    if layout.size() > cache.object_size || layout.align() > cache.align {
        return None;
    }
    let obj = NEXT_ALLOC_OBJECT
        .this()
        .swap(null_mut(), core::sync::atomic::Ordering::Relaxed);
    Some(obj).filter(|p| !p.is_null())
}

/// From the heap's `dealloc`: gives back `ptr`, an allocation outside the
/// heap's window, to the `ARC_CACHES` cache whose slab holds it.
///
/// # Safety
/// `ptr` must have come from [`arc_cache_alloc`] with `layout`, and not
/// have been freed since.
pub unsafe fn arc_cache_free(ptr: *mut u8, layout: core::alloc::Layout) {
    let slab = align_down(ptr as usize, PAGE_SIZE << ARC_SLAB_ORDER) as *const Slab;
    // SAFETY: `ptr` is a live object of one of `ARC_CACHES`, whose slabs
    // are all `1 << ARC_SLAB_ORDER` pages, aligned to their size, and
    // start with a header: rounding down finds that header.
    let owner = unsafe { (*slab).cache };
    match ARC_CACHES.iter().find(|c| core::ptr::eq(**c, owner)) {
        Some(cache) if layout.size() <= cache.object_size => {
            // SAFETY: as above, `ptr` is an object of `cache`.
            unsafe { kmem_cache_free(cache, ptr) }
        }
        _ => crate::pr_err!("slab: freeing {:p}, which no cache holds", ptr),
    }
}

/// The caches, in `/proc/slabinfo`'s order (Linux lists the newest first).
static CACHES: [&KmemCache; 5] = [
    &FILP_CACHEP,
    &DENTRY_CACHEP,
    &crate::sched::task::TASK_STRUCT_CACHEP,
    &crate::signal::SIGQUEUE_CACHEP,
    &crate::uaccess::NAMES_CACHEP,
];

/// `/proc/slabinfo` (Linux's `slab_show`, version 2.1).
pub fn slabinfo() -> String {
    let mut out = String::from(
        "slabinfo - version: 2.1\n# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n",
    );
    for c in CACHES {
        c.slabinfo_line(&mut out);
    }
    out
}

/// Gives every cache's spare slab back.
pub fn shrink_all() {
    for c in CACHES {
        c.shrink();
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use ktest_macros::kernel_test;

    static TEST_CACHE: KmemCache = KmemCache::new("ktest_cache", 200, 8, false);
    static PAGE_CACHE: KmemCache = KmemCache::new("ktest_page_cache", 4096, 8, false);

    #[kernel_test]
    fn arc_caches_share_one_slab_size_so_a_freed_pointer_finds_its_header() {
        for c in ARC_CACHES {
            assert_eq!(c.order, ARC_SLAB_ORDER, "{}", c.name);
            assert_eq!(
                c.objects,
                ((PAGE_SIZE << ARC_SLAB_ORDER) - c.offset) / c.size,
                "{}",
                c.name
            );
        }
        // An object of each cache goes back to that cache, not another's,
        // with objects of the others live around it (other CPUs may use
        // the caches too, so compare this test's own objects' effect).
        let others: Vec<alloc::sync::Arc<[u64; 4]>> = ARC_CACHES.iter().map(|c| arc_new_in(c, [1; 4])).collect();
        for c in ARC_CACHES {
            let objs: Vec<alloc::sync::Arc<[u64; 4]>> = (0..c.objects + 1).map(|_| arc_new_in(c, [2; 4])).collect();
            let held = c.counts().0;
            assert!(held > c.objects, "{}: {} live", c.name, held);
            drop(objs);
            assert!(
                c.counts().0 + c.objects < held + 1,
                "{}: objects not given back",
                c.name
            );
        }
        drop(others);
    }

    #[kernel_test]
    fn slab_layout_fits_objects_and_wastes_little() {
        assert_eq!(TEST_CACHE.size, 200);
        assert_eq!(TEST_CACHE.order, 0);
        assert_eq!(TEST_CACHE.objects, (PAGE_SIZE - TEST_CACHE.offset) / 200);
        // A page-sized object needs a bigger slab for its header.
        assert_eq!(PAGE_CACHE.order, 3);
        assert_eq!(PAGE_CACHE.objects, 7);
    }

    #[kernel_test]
    fn slab_objects_are_distinct_aligned_and_keep_their_contents() {
        TEST_CACHE.shrink();
        assert_eq!(TEST_CACHE.counts(), (0, 0));
        let n = TEST_CACHE.objects * 3 + 1;
        let boxes: Vec<SlabBox<[u64; 25]>> = (0..n as u64)
            .map(|i| SlabBox::try_new(&TEST_CACHE, [i; 25], 0).ok().unwrap())
            .collect();
        for (i, b) in boxes.iter().enumerate() {
            assert!(b.iter().all(|&x| x == i as u64));
            assert_eq!(b.ptr.as_ptr() as usize % 8, 0);
        }
        let mut addrs: Vec<usize> = boxes.iter().map(|b| b.ptr.as_ptr() as usize).collect();
        addrs.sort_unstable();
        assert!(addrs.windows(2).all(|w| w[1] - w[0] >= 200), "objects overlap");
        assert_eq!(TEST_CACHE.counts(), (n, 4));
        drop(boxes);
        // All slabs but the spare go back to the frame allocator.
        assert_eq!(TEST_CACHE.counts(), (0, 1));
        TEST_CACHE.shrink();
        assert_eq!(TEST_CACHE.counts(), (0, 0));
    }

    #[kernel_test]
    fn slab_memory_returns_to_the_frame_allocator() {
        PAGE_CACHE.shrink();
        // The vector's memory is taken first, so the heap does not grow
        // between the two counts.
        let mut objs: Vec<SlabBox<[u8; 4096]>> = Vec::with_capacity(70);
        let before = crate::mm::frame::stats().free;
        for _ in 0..70 {
            objs.push(SlabBox::try_new(&PAGE_CACHE, [0x5a; 4096], 0).ok().unwrap());
        }
        assert!(objs.iter().all(|o| o.iter().all(|&b| b == 0x5a)));
        assert!(crate::mm::frame::stats().free + 80 <= before);
        objs.clear();
        PAGE_CACHE.shrink();
        assert_eq!(PAGE_CACHE.counts(), (0, 0));
        assert!(crate::mm::frame::stats().free + 8 >= before);
    }

    #[kernel_test]
    fn slab_free_reuses_the_freed_object_first() {
        let a = SlabBox::try_new(&TEST_CACHE, 1u64, 0).ok().unwrap();
        let at = a.ptr.as_ptr() as usize;
        drop(a);
        let b = SlabBox::try_new(&TEST_CACHE, 2u64, 0).ok().unwrap();
        assert_eq!(b.ptr.as_ptr() as usize, at);
        assert_eq!(*b, 2);
    }

    #[kernel_test]
    fn slabinfo_has_linuxs_header_and_a_line_per_cache() {
        let s = slabinfo();
        let mut lines = s.lines();
        assert_eq!(lines.next(), Some("slabinfo - version: 2.1"));
        assert!(lines
            .next()
            .is_some_and(|l| l.starts_with("# name            <active_objs>")));
        let names: Vec<&str> = lines.filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(names, ["filp", "dentry", "task_struct", "sigqueue", "names_cache"]);
    }
}
