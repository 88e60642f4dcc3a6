//! The kernel's virtual memory layout (Linux's `asm/memory.h`).
//!
//! All kernel addresses live in the upper half (TTBR1, 48-bit VA):
//!
//! ```text
//! 0xffff_0000_0000_0000  PAGE_OFFSET    linear map of all RAM (PA + PAGE_OFFSET)
//! 0xffff_6000_0000_0000  HEAP_BASE      kernel heap window, mapped on demand
//! 0xffff_7000_0000_0000  IOREMAP_BASE   device MMIO (Device-nGnRE)
//! 0xffff_7800_0000_0000  VMALLOC_BASE   executable probe slots and other vmalloc-style mappings
//! 0xffff_ffff_7fe0_0000  FIXADDR_START  fixmap: FIX_SLOTS temporary 4 KiB mappings
//! 0xffff_ffff_8000_0000  KIMAGE_VADDR   the kernel image (loaded at a 2 MiB aligned PA + TEXT_OFFSET)
//! ```

/// Size of a page and of the translation granule.
pub const PAGE_SIZE: usize = 4096;
/// log2(PAGE_SIZE).
pub const PAGE_SHIFT: usize = 12;
/// Size of a level-2 block.
pub const SZ_2M: usize = 2 << 20;
/// Size of a level-1 block.
pub const SZ_1G: usize = 1 << 30;

/// Start of the linear map of physical memory.
pub const PAGE_OFFSET: usize = 0xffff_0000_0000_0000;
/// End (exclusive) of the linear map window: 64 TiB of RAM at most.
pub const PAGE_END: usize = 0xffff_4000_0000_0000;
/// Start of the kernel heap window.
pub const HEAP_BASE: usize = 0xffff_6000_0000_0000;
/// Size of the kernel heap window.
pub const HEAP_MAX: usize = 64 << 30;
/// Start of the MMIO window used by `ioremap`.
pub const IOREMAP_BASE: usize = 0xffff_7000_0000_0000;
/// Size of the MMIO window.
pub const IOREMAP_SIZE: usize = 1 << 40;
/// Start of the window where kernel stacks are mapped (Linux's
/// VMAP_STACK), each at the bottom of its own `KSTACK_ALIGN` slot so that
/// unmapped pages lie below it: an overflow faults instead of corrupting.
pub const KSTACK_BASE: usize = 0xffff_7400_0000_0000;
/// Size of the kernel stack window.
pub const KSTACK_WINDOW: usize = 1 << 40;
/// log2 of the largest kernel stack. Every stack SP may be on when an
/// exception is taken (task stacks, CPU boot stacks, the init stack) is at
/// most `1 << KSTACK_SHIFT` bytes and starts on a `KSTACK_ALIGN` boundary,
/// so bit `KSTACK_SHIFT` of an SP inside one is clear and set just below
/// one: the vectors test that bit to detect an overflow (Linux's
/// THREAD_SHIFT test in `kernel_ventry`).
pub const KSTACK_SHIFT: usize = 16;
/// The largest kernel stack.
pub const KSTACK_MAX_SIZE: usize = 1 << KSTACK_SHIFT;
/// The alignment of every kernel stack's base.
pub const KSTACK_ALIGN: usize = 2 << KSTACK_SHIFT;
/// Start of the window for kernel-owned executable or special mappings.
pub const VMALLOC_BASE: usize = 0xffff_7800_0000_0000;
/// Size of that window.
pub const VMALLOC_SIZE: usize = 1 << 40;
/// Number of fixmap slots (one level-3 table).
pub const FIX_SLOTS: usize = 512;
/// Start of the fixmap.
pub const FIXADDR_START: usize = KIMAGE_VADDR - SZ_2M;
/// Where the 2 MiB aligned physical base of the image is mapped.
pub const KIMAGE_VADDR: usize = 0xffff_ffff_8000_0000;
/// Offset of the image from its 2 MiB aligned load base (the arm64 Image
/// header's `text_offset`: the Pi firmware and QEMU load `kernel8.img` there).
pub const TEXT_OFFSET: usize = 0x8_0000;

/// Whether `va` lies in the linear map.
pub const fn is_linear_map(va: usize) -> bool {
    va >= PAGE_OFFSET && va < PAGE_END
}

/// Linear-map address of physical address `pa`.
pub const fn phys_to_virt(pa: u64) -> usize {
    pa as usize + PAGE_OFFSET
}

/// Physical address of a linear-map address.
pub const fn virt_to_phys(va: usize) -> u64 {
    (va - PAGE_OFFSET) as u64
}

/// Rounds `x` down to a multiple of `align` (a power of two).
pub const fn align_down(x: usize, align: usize) -> usize {
    x & !(align - 1)
}

/// Rounds `x` up to a multiple of `align` (a power of two).
pub const fn align_up(x: usize, align: usize) -> usize {
    (x + align - 1) & !(align - 1)
}
