//! `kmem` events (Linux's `include/trace/events/kmem.h`): the kernel heap
//! (`kmalloc`, `kfree`), the slab caches (`kmem_cache_alloc`,
//! `kmem_cache_free`, [`crate::mm::slab`]) and the frame allocator
//! (`mm_page_alloc`, `mm_page_free`).
//!
//! Recording must not recurse: the hooks run after the allocator has
//! dropped its lock, and a per-CPU flag drops any event the recording
//! itself causes (a buffer page, a saved command line).
//!
//! Pointers (`%p`) print as the address itself in 16 hex digits, where
//! Linux prints a hashed value of the same width.

use super::DataLocStr;
use crate::define_trace_event;
use crate::percpu::{PerCpu, NR_CPUS};
use core::sync::atomic::{AtomicBool, Ordering};

/// `__print_flags` of `gfp_flags` in the `kmem` events' `print fmt`.
macro_rules! gfp_fmt {
    () => {
        "(REC->gfp_flags) ? __print_flags(REC->gfp_flags, \"|\", {( unsigned long)(((((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)) | (( gfp_t)((((1UL))) << (18))) | (( gfp_t)((((1UL))) << (19))) | (( gfp_t)((((1UL))) << (13)))) & ~(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))) | (( gfp_t)((((1UL))) << (10)))), \"GFP_TRANSHUGE\"}, {( unsigned long)((((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)) | (( gfp_t)((((1UL))) << (18))) | (( gfp_t)((((1UL))) << (19))) | (( gfp_t)((((1UL))) << (13)))) & ~(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))), \"GFP_TRANSHUGE_LIGHT\"}, {( unsigned long)((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)), \"GFP_HIGHUSER_MOVABLE\"}, {( unsigned long)(((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))), \"GFP_HIGHUSER\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))), \"GFP_USER\"}, {( unsigned long)(((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7)))) | (( gfp_t)((((1UL))) << (22)))), \"GFP_KERNEL_ACCOUNT\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7)))), \"GFP_KERNEL\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6)))), \"GFP_NOFS\"}, {( unsigned long)((( gfp_t)((((1UL))) << (5)))|(( gfp_t)((((1UL))) << (11)))), \"GFP_ATOMIC\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))), \"GFP_NOIO\"}, {( unsigned long)((( gfp_t)((((1UL))) << (11))) | (( gfp_t)((((1UL))) << (13)))), \"GFP_NOWAIT\"}, {( unsigned long)(( gfp_t)((((1UL))) << (0))), \"GFP_DMA\"}, {( unsigned long)(( gfp_t)((((1UL))) << (1))), \"__GFP_HIGHMEM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (2))), \"GFP_DMA32\"}, {( unsigned long)(( gfp_t)((((1UL))) << (5))), \"__GFP_HIGH\"}, {( unsigned long)(( gfp_t)((((1UL))) << (6))), \"__GFP_IO\"}, {( unsigned long)(( gfp_t)((((1UL))) << (7))), \"__GFP_FS\"}, {( unsigned long)(( gfp_t)((((1UL))) << (13))), \"__GFP_NOWARN\"}, {( unsigned long)(( gfp_t)((((1UL))) << (14))), \"__GFP_RETRY_MAYFAIL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (15))), \"__GFP_NOFAIL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (16))), \"__GFP_NORETRY\"}, {( unsigned long)(( gfp_t)((((1UL))) << (18))), \"__GFP_COMP\"}, {( unsigned long)(( gfp_t)((((1UL))) << (8))), \"__GFP_ZERO\"}, {( unsigned long)(( gfp_t)((((1UL))) << (19))), \"__GFP_NOMEMALLOC\"}, {( unsigned long)(( gfp_t)((((1UL))) << (17))), \"__GFP_MEMALLOC\"}, {( unsigned long)(( gfp_t)((((1UL))) << (20))), \"__GFP_HARDWALL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (21))), \"__GFP_THISNODE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (4))), \"__GFP_RECLAIMABLE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (3))), \"__GFP_MOVABLE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (22))), \"__GFP_ACCOUNT\"}, {( unsigned long)(( gfp_t)((((1UL))) << (12))), \"__GFP_WRITE\"}, {( unsigned long)(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))), \"__GFP_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (10))), \"__GFP_DIRECT_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (11))), \"__GFP_KSWAPD_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (23))), \"__GFP_ZEROTAGS\"} ) : \"none\""
    };
}

/// `page=%p` of the page events: Linux's `pfn_to_page` on arm64.
macro_rules! page_fmt {
    () => {
        "(((struct page *)((-(((0x40000000UL)))) - ((((-((((1UL))) << (((48)) - 1))) - ((-((((1UL))) << ((52)))))) >> 12) * sizeof(struct page))) - (memstart_addr >> 12)) + (REC->pfn))"
    };
}

/// `GFP_KERNEL`: how every allocation of this kernel may behave (it may
/// sleep for memory, do I/O and use filesystems).
pub const GFP_KERNEL: u64 = 0xcc0;
/// `GFP_ATOMIC`: an allocation that must not sleep (high priority, may
/// wake kswapd).
pub const GFP_ATOMIC: u64 = 0x820;
/// `__GFP_ACCOUNT`: charged to a memory cgroup.
const GFP_ACCOUNT: u64 = 1 << 22;
/// `__GFP_ZERO`.
pub const GFP_ZERO: u64 = 1 << 8;
/// `__GFP_COMP`.
pub const GFP_COMP: u64 = 1 << 18;
/// `NUMA_NO_NODE`.
const NUMA_NO_NODE: i32 = -1;
/// `MIGRATE_UNMOVABLE`.
const MIGRATE_UNMOVABLE: i32 = 0;

/// The names of `gfp_flags`, composite ones first, as `__print_flags`
/// matches them (Linux's `__def_gfpflag_names`).
const GFP_NAMES: [(u64, &str); 35] = [
    (0x1c24ca, "GFP_TRANSHUGE"),
    (0x1c20ca, "GFP_TRANSHUGE_LIGHT"),
    (0x100cca, "GFP_HIGHUSER_MOVABLE"),
    (0x100cc2, "GFP_HIGHUSER"),
    (0x100cc0, "GFP_USER"),
    (0x400cc0, "GFP_KERNEL_ACCOUNT"),
    (0xcc0, "GFP_KERNEL"),
    (0xc40, "GFP_NOFS"),
    (0x820, "GFP_ATOMIC"),
    (0xc00, "GFP_NOIO"),
    (0x2800, "GFP_NOWAIT"),
    (1 << 0, "GFP_DMA"),
    (1 << 1, "__GFP_HIGHMEM"),
    (1 << 2, "GFP_DMA32"),
    (1 << 5, "__GFP_HIGH"),
    (1 << 6, "__GFP_IO"),
    (1 << 7, "__GFP_FS"),
    (1 << 13, "__GFP_NOWARN"),
    (1 << 14, "__GFP_RETRY_MAYFAIL"),
    (1 << 15, "__GFP_NOFAIL"),
    (1 << 16, "__GFP_NORETRY"),
    (1 << 18, "__GFP_COMP"),
    (1 << 8, "__GFP_ZERO"),
    (1 << 19, "__GFP_NOMEMALLOC"),
    (1 << 17, "__GFP_MEMALLOC"),
    (1 << 20, "__GFP_HARDWALL"),
    (1 << 21, "__GFP_THISNODE"),
    (1 << 4, "__GFP_RECLAIMABLE"),
    (1 << 3, "__GFP_MOVABLE"),
    (1 << 22, "__GFP_ACCOUNT"),
    (1 << 12, "__GFP_WRITE"),
    (0xc00, "__GFP_RECLAIM"),
    (1 << 10, "__GFP_DIRECT_RECLAIM"),
    (1 << 11, "__GFP_KSWAPD_RECLAIM"),
    (1 << 23, "__GFP_ZEROTAGS"),
];

/// `gfp_flags` as the `kmem` events print them: `none`, or the names
/// joined by `|` (Linux's `__print_flags`, leftover bits in hex).
pub struct GfpFlags(pub u64);

impl core::fmt::Display for GfpFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut left = self.0;
        if left == 0 {
            return f.write_str("none");
        }
        let mut first = true;
        for (mask, name) in GFP_NAMES {
            if left & mask == mask && left != 0 {
                if !first {
                    f.write_str("|")?;
                }
                first = false;
                f.write_str(name)?;
                left &= !mask;
            }
        }
        if left != 0 {
            if !first {
                f.write_str("|")?;
            }
            write!(f, "0x{left:x}")?;
        }
        Ok(())
    }
}

/// `%pS` of a call site.
pub struct Sym(pub u64);

impl core::fmt::Display for Sym {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match crate::kallsyms::lookup_addr(self.0 as usize) {
            Some(s) => write!(f, "{}+0x{:x}/0x{:x}", s.name, s.offset, s.size),
            None if self.0 == 0 => f.write_str("0x0"),
            None => write!(f, "0x{:x}", self.0),
        }
    }
}

/// The page a frame would have in Linux's `vmemmap` (`struct page` is 64
/// bytes), for `page=%p`.
pub fn pfn_to_page(pfn: u64) -> u64 {
    const VMEMMAP_START: u64 = 0xffff_fdff_c000_0000;
    VMEMMAP_START.wrapping_add(pfn.wrapping_mul(64))
}

define_trace_event! {
    /// A heap allocation of `bytes_req` bytes (`bytes_alloc` taken) at `ptr`.
    kmem / kmalloc,
    fn trace_kmalloc_raw(call_site: u64, ptr: u64, bytes_req: u64, bytes_alloc: u64, gfp_flags: u64),
    fields {
        call_site: u64 as "unsigned long" = call_site,
        ptr: u64 as "const void *" = ptr,
        bytes_req: u64 as "size_t" = bytes_req,
        bytes_alloc: u64 as "size_t" = bytes_alloc,
        gfp_flags: u64 as "unsigned long" = gfp_flags,
        node: i32 as "int" = NUMA_NO_NODE,
    },
    printk concat!("\"call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu gfp_flags=%s node=%d accounted=%s\", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, ", gfp_fmt!(), ", REC->node, (1 && (REC->gfp_flags & ( unsigned long)(( gfp_t)((((1UL))) << (22))))) ? \"true\" : \"false\""),
    print(out, e) {
        let accounted = e.gfp_flags & GFP_ACCOUNT != 0;
        write!(out, "call_site={} ptr={:016x} bytes_req={} bytes_alloc={} gfp_flags={} node={} accounted={}",
            Sym(e.call_site), e.ptr, e.bytes_req, e.bytes_alloc, GfpFlags(e.gfp_flags), e.node, accounted)
    }
}

define_trace_event! {
    /// The heap object at `ptr` is freed.
    kmem / kfree,
    fn trace_kfree_raw(call_site: u64, ptr: u64),
    fields {
        call_site: u64 as "unsigned long" = call_site,
        ptr: u64 as "const void *" = ptr,
    },
    printk "\"call_site=%pS ptr=%p\", (void *)REC->call_site, REC->ptr",
    print(out, e) {
        write!(out, "call_site={} ptr={:016x}", Sym(e.call_site), e.ptr)
    }
}

define_trace_event! {
    /// An object of a slab cache is allocated at `ptr`.
    kmem / kmem_cache_alloc,
    fn trace_kmem_cache_alloc_raw(call_site: u64, ptr: u64, bytes_req: u64, bytes_alloc: u64, gfp_flags: u64, accounted: bool),
    fields {
        call_site: u64 as "unsigned long" = call_site,
        ptr: u64 as "const void *" = ptr,
        bytes_req: u64 as "size_t" = bytes_req,
        bytes_alloc: u64 as "size_t" = bytes_alloc,
        gfp_flags: u64 as "unsigned long" = gfp_flags,
        node: i32 as "int" = NUMA_NO_NODE,
        accounted: u8 as "bool" = u8::from(accounted || gfp_flags & GFP_ACCOUNT != 0),
    },
    printk concat!("\"call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu gfp_flags=%s node=%d accounted=%s\", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, ", gfp_fmt!(), ", REC->node, REC->accounted ? \"true\" : \"false\""),
    print(out, e) {
        write!(out, "call_site={} ptr={:016x} bytes_req={} bytes_alloc={} gfp_flags={} node={} accounted={}",
            Sym(e.call_site), e.ptr, e.bytes_req, e.bytes_alloc, GfpFlags(e.gfp_flags), e.node, e.accounted != 0)
    }
}

define_trace_event! {
    /// The object at `ptr` of the slab cache `name` is freed.
    kmem / kmem_cache_free,
    fn trace_kmem_cache_free_raw(call_site: u64, ptr: u64, name: &[u8]),
    fields {
        call_site: u64 as "unsigned long" = call_site,
        ptr: u64 as "const void *" = ptr,
        name: DataLocStr as "__data_loc char[]" = name,
    },
    printk "\"call_site=%pS ptr=%p name=%s\", (void *)REC->call_site, REC->ptr, __get_str(name)",
    print(out, e) {
        write!(out, "call_site={} ptr={:016x} name={}", Sym(e.call_site), e.ptr, e.name)
    }
}

define_trace_event! {
    /// `1 << order` frames from `pfn` are allocated.
    kmem / mm_page_alloc,
    fn trace_mm_page_alloc_raw(pfn: u64, order: u32, gfp_flags: u64),
    fields {
        pfn: u64 as "unsigned long" = pfn,
        order: u32 as "unsigned int" = order,
        gfp_flags: u64 as "unsigned long" = gfp_flags,
        migratetype: i32 as "int" = MIGRATE_UNMOVABLE,
    },
    printk concat!("\"page=%p pfn=0x%lx order=%d migratetype=%d gfp_flags=%s\", REC->pfn != -1UL ? ", page_fmt!(), " : ((void *)0), REC->pfn != -1UL ? REC->pfn : 0, REC->order, REC->migratetype, ", gfp_fmt!()),
    print(out, e) {
        let (page, pfn) = if e.pfn == u64::MAX { (0, 0) } else { (pfn_to_page(e.pfn), e.pfn) };
        write!(out, "page={:016x} pfn=0x{:x} order={} migratetype={} gfp_flags={}", page, pfn, e.order, e.migratetype, GfpFlags(e.gfp_flags))
    }
}

define_trace_event! {
    /// `1 << order` frames from `pfn` are freed.
    kmem / mm_page_free,
    fn trace_mm_page_free_raw(pfn: u64, order: u32),
    fields {
        pfn: u64 as "unsigned long" = pfn,
        order: u32 as "unsigned int" = order,
    },
    printk concat!("\"page=%p pfn=0x%lx order=%d\", ", page_fmt!(), ", REC->pfn, REC->order"),
    print(out, e) {
        write!(out, "page={:016x} pfn=0x{:x} order={}", pfn_to_page(e.pfn), e.pfn, e.order)
    }
}

/// Set on a CPU while it records a `kmem` event: what the recording
/// allocates or frees is not recorded.
static RECORDING: PerCpu<[AtomicBool; 1]> = PerCpu::new([const { [const { AtomicBool::new(false) }; 1] }; NR_CPUS]);

/// Runs `f` unless this CPU is already recording a `kmem` event.
fn guarded(f: impl FnOnce()) {
    let flag = &RECORDING.this()[0];
    let irq = arch::cpu::local_irq_save();
    let busy = flag.swap(true, Ordering::Acquire);
    arch::cpu::local_irq_restore(irq);
    if busy {
        return;
    }
    f();
    flag.store(false, Ordering::Release);
}

/// The first return address on the stack outside the allocator and the
/// allocation library: the function that asked for the memory (Linux's
/// `_RET_IP_` of `kmalloc`).
fn call_site() -> u64 {
    let mut site = 0;
    crate::stacktrace::walk_stackframe(arch::cpu::frame_pointer(), |ret| {
        let inside = crate::kallsyms::lookup_addr(ret).is_some_and(|s| {
            s.name.starts_with("kernel__mm__heap__")
                || s.name.starts_with("kernel__trace__tracepoint__")
                || s.name.starts_with("__rust")
                || s.name.starts_with("__rdl")
                || s.name.starts_with("alloc__")
                || s.name == "kfree"
                || s.name.starts_with("kernel__mm__slab__")
                || s.name.starts_with("kmem_cache_")
                // The drop glue that runs a slab object's destructor.
                || s.name.starts_with("core__ptr__drop")
        });
        if inside {
            return true;
        }
        site = ret as u64;
        false
    });
    site
}

/// The heap gave `ptr` for `size` bytes (from `GlobalAlloc::alloc`, its
/// lock dropped).
#[inline(always)]
pub fn trace_kmalloc(ptr: *mut u8, size: usize, zeroed: bool) {
    if crate::static_branch_unlikely!(kmalloc::KEY) && !ptr.is_null() {
        kmalloc_slow(ptr as u64, size as u64, zeroed);
    }
}

#[cold]
#[inline(never)]
fn kmalloc_slow(ptr: u64, size: u64, zeroed: bool) {
    let gfp = if zeroed { GFP_KERNEL | GFP_ZERO } else { GFP_KERNEL };
    guarded(|| kmalloc::record(call_site(), ptr, size, size, gfp));
}

/// The heap object at `ptr` was freed (from `kfree`, its lock dropped).
#[inline(always)]
pub fn trace_kfree(ptr: *mut u8) {
    if crate::static_branch_unlikely!(kfree::KEY) {
        guarded(|| kfree::record(call_site(), ptr as u64));
    }
}

/// The slab cache object at `ptr` was allocated (from
/// `kmem_cache_alloc`, the cache's lock dropped): `bytes_req` as asked,
/// `bytes_alloc` taken.
#[inline(always)]
pub fn trace_kmem_cache_alloc(ptr: *mut u8, bytes_req: u64, bytes_alloc: u64, gfp: u64, accounted: bool) {
    if crate::static_branch_unlikely!(kmem_cache_alloc::KEY) {
        kmem_cache_alloc_slow(ptr as u64, bytes_req, bytes_alloc, gfp, accounted);
    }
}

#[cold]
#[inline(never)]
fn kmem_cache_alloc_slow(ptr: u64, bytes_req: u64, bytes_alloc: u64, gfp: u64, accounted: bool) {
    guarded(|| kmem_cache_alloc::record(call_site(), ptr, bytes_req, bytes_alloc, gfp, accounted));
}

/// The object at `ptr` of the slab cache `name` is about to be freed
/// (from `kmem_cache_free`).
#[inline(always)]
pub fn trace_kmem_cache_free(ptr: *mut u8, name: &str) {
    if crate::static_branch_unlikely!(kmem_cache_free::KEY) {
        guarded(|| kmem_cache_free::record(call_site(), ptr as u64, name.as_bytes()));
    }
}

/// `1 << order` frames at physical address `pa` were allocated.
#[inline(always)]
pub fn trace_mm_page_alloc(pa: Option<u64>, order: u32) {
    if crate::static_branch_unlikely!(mm_page_alloc::KEY) {
        let pfn = pa.map_or(u64::MAX, |pa| pa >> 12);
        guarded(|| mm_page_alloc::record(pfn, order, GFP_KERNEL));
    }
}

/// `1 << order` frames at physical address `pa` were freed.
#[inline(always)]
pub fn trace_mm_page_free(pa: u64, order: u32) {
    if crate::static_branch_unlikely!(mm_page_free::KEY) {
        guarded(|| mm_page_free::record(pa >> 12, order));
    }
}

/// Registers the `kmem` events.
pub fn register() -> Result<(), uapi::Errno> {
    mm_page_alloc::register()?;
    mm_page_free::register()?;
    kmem_cache_free::register()?;
    kmem_cache_alloc::register()?;
    kmalloc::register()?;
    kfree::register()
}
