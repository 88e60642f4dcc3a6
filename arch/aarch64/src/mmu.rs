//! Stage-1 translation for EL1&0 with 4 KiB granules and 48-bit addresses:
//! descriptor formats, MAIR/TCR settings, the early boot tables, and the
//! kernel's own address space (image with W^X, linear map, MMIO window,
//! heap window, fixmap).
//!
//! Page-table memory is only touched here. The kernel asks for mappings by
//! purpose (`ioremap`, `map_heap_page`, `fixmap::set`), never by raw entry.

use crate::addr::{PhysAddr, VirtAddr};
use crate::barrier;
use crate::memory::*;
use aarch64_cpu::registers::{MAIR_EL1, TCR_EL1};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use spin::Mutex;
use tock_registers::interfaces::Readable;
use tock_registers::register_bitfields;
use tock_registers::registers::InMemoryRegister;

register_bitfields! {u64,
    /// A level 0-2 table descriptor (ARM ARM D8.3.1).
    pub TABLE_DESCRIPTOR [
        /// Physical address of the next-level table, bits 47:12.
        NEXT_LEVEL_TABLE_ADDR OFFSET(12) NUMBITS(36) [],
        /// 1 for a table (at levels 0-2).
        TYPE OFFSET(1) NUMBITS(1) [Block = 0, Table = 1],
        /// Entry is valid.
        VALID OFFSET(0) NUMBITS(1) [False = 0, True = 1]
    ],
    /// A level 1-2 block or level 3 page descriptor (ARM ARM D8.3.2).
    pub PAGE_DESCRIPTOR [
        /// Software use: the page is shared copy-on-write, so mapped
        /// read-only (one of the bits 58:55 hardware ignores, ARM ARM D8.3.2).
        SW_COW OFFSET(55) NUMBITS(1) [],
        /// Unprivileged execute-never.
        UXN OFFSET(54) NUMBITS(1) [False = 0, True = 1],
        /// Privileged execute-never.
        PXN OFFSET(53) NUMBITS(1) [False = 0, True = 1],
        /// Output address, bits 47:12.
        OUTPUT_ADDR OFFSET(12) NUMBITS(36) [],
        /// Not global: the entry is tagged with the current ASID.
        NG OFFSET(11) NUMBITS(1) [False = 0, True = 1],
        /// Access flag; set so that first access does not fault.
        AF OFFSET(10) NUMBITS(1) [False = 0, True = 1],
        /// Shareability.
        SH OFFSET(8) NUMBITS(2) [OuterShareable = 0b10, InnerShareable = 0b11],
        /// Access permissions AP[2:1].
        AP OFFSET(6) NUMBITS(2) [
            RW_EL1 = 0b00,
            RW_EL1_EL0 = 0b01,
            RO_EL1 = 0b10,
            RO_EL1_EL0 = 0b11
        ],
        /// Index into MAIR_EL1.
        ATTR_INDX OFFSET(2) NUMBITS(3) [],
        /// At level 3, 1 for a page; at levels 1-2, 0 for a block.
        TYPE OFFSET(1) NUMBITS(1) [Block = 0, Page = 1],
        /// Entry is valid.
        VALID OFFSET(0) NUMBITS(1) [False = 0, True = 1]
    ]
}

register_bitfields! {u64,
    /// The operand of a TLBI by VA (`tlbi vae1is`, ...) or by ASID
    /// (`tlbi aside1is`) (ARM ARM C5.5).
    pub TLBI_OPERAND [
        /// The ASID whose entries are invalidated.
        ASID OFFSET(48) NUMBITS(16) [],
        /// The virtual address, bits 55:12.
        VA OFFSET(0) NUMBITS(44) []
    ]
}

/// The output-address bits of a page or block descriptor.
pub const DESC_ADDR_MASK: u64 = PAGE_DESCRIPTOR::OUTPUT_ADDR.mask << PAGE_DESCRIPTOR::OUTPUT_ADDR.shift;

/// MAIR index of Device-nGnRE memory.
pub const MT_DEVICE_NGNRE: u64 = 0;
/// MAIR index of Normal write-back cacheable memory.
pub const MT_NORMAL: u64 = 1;
/// MAIR index of Normal non-cacheable memory.
pub const MT_NORMAL_NC: u64 = 2;

/// MAIR_EL1: the three memory types above, in their indices.
pub const MAIR_VALUE: u64 = MAIR_EL1::Attr0_Device::nonGathering_nonReordering_EarlyWriteAck.value
    | MAIR_EL1::Attr1_Normal_Outer::WriteBack_NonTransient_ReadWriteAlloc.value
    | MAIR_EL1::Attr1_Normal_Inner::WriteBack_NonTransient_ReadWriteAlloc.value
    | MAIR_EL1::Attr2_Normal_Outer::NonCacheable.value
    | MAIR_EL1::Attr2_Normal_Inner::NonCacheable.value;

/// TCR_EL1 without IPS (filled in from ID_AA64MMFR0_EL1 at boot): 48-bit
/// VAs in both halves, 4 KiB granules, cacheable inner-shareable walks,
/// 16-bit ASIDs taken from TTBR0.
pub const TCR_VALUE: u64 = TCR_EL1::T0SZ.val(16).value
    | TCR_EL1::T1SZ.val(16).value
    | TCR_EL1::TG0::KiB_4.value
    | TCR_EL1::TG1::KiB_4.value
    | TCR_EL1::SH0::Inner.value
    | TCR_EL1::SH1::Inner.value
    | TCR_EL1::IRGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable.value
    | TCR_EL1::ORGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable.value
    | TCR_EL1::IRGN1::WriteBack_ReadAlloc_WriteAlloc_Cacheable.value
    | TCR_EL1::ORGN1::WriteBack_ReadAlloc_WriteAlloc_Cacheable.value
    | TCR_EL1::AS::ASID16Bits.value
    | TCR_EL1::A1::TTBR0.value;

const ENTRIES: usize = 512;

/// One translation table.
#[repr(C, align(4096))]
pub struct Table([u64; ENTRIES]);

/// The tables used from kernel entry until the kernel's own are built.
pub mod early {
    use super::*;
    use tock_registers::fields::FieldValue;

    /// The early tables, in one page-aligned block so that the entry code
    /// reaches each by a fixed offset.
    #[repr(C, align(4096))]
    pub struct EarlyTables {
        /// TTBR1 root.
        pub ttbr1: Table,
        l1: Table,
        l2: Table,
        /// TTBR0 root: the identity map, kept for secondary CPU entry.
        pub idmap_l0: Table,
        idmap_l1: Table,
    }

    /// Written by the entry code (with the MMU off) before any Rust runs.
    #[no_mangle]
    pub static mut EARLY_TABLES: EarlyTables = EarlyTables {
        ttbr1: Table([0; ENTRIES]),
        l1: Table([0; ENTRIES]),
        l2: Table([0; ENTRIES]),
        idmap_l0: Table([0; ENTRIES]),
        idmap_l1: Table([0; ENTRIES]),
    };
    /// Offset of the level-1 table of the image mapping.
    pub const OFF_L1: usize = PAGE_SIZE;
    /// Offset of the level-2 table of the image mapping.
    pub const OFF_L2: usize = 2 * PAGE_SIZE;
    /// Offset of the identity map's root.
    pub const OFF_IDMAP_L0: usize = 3 * PAGE_SIZE;
    /// Offset of the identity map's level-1 table.
    pub const OFF_IDMAP_L1: usize = 4 * PAGE_SIZE;
    /// Size of the block.
    pub const OFF_END: usize = 5 * PAGE_SIZE;

    const BLOCK: FieldValue<u64, PAGE_DESCRIPTOR::Register> = PAGE_DESCRIPTOR::VALID::True;

    /// Attributes of the early 2 MiB / 1 GiB blocks: Normal memory,
    /// read-write, executable (W^X starts with the kernel's own tables).
    pub const BLOCK_ATTRS: u64 = BLOCK.value
        | PAGE_DESCRIPTOR::TYPE::Block.value
        | PAGE_DESCRIPTOR::AF::True.value
        | PAGE_DESCRIPTOR::SH::InnerShareable.value
        | PAGE_DESCRIPTOR::ATTR_INDX.val(MT_NORMAL).value;
}

/// Permissions and memory type of a mapping. W^X is built in: no
/// constructor yields a writable and executable mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prot(u64);

impl Prot {
    const NORMAL: u64 = PAGE_DESCRIPTOR::AF::True.value
        | PAGE_DESCRIPTOR::SH::InnerShareable.value
        | PAGE_DESCRIPTOR::ATTR_INDX.val(MT_NORMAL).value
        | PAGE_DESCRIPTOR::UXN::True.value;
    /// Kernel text: read-only, executable at EL1.
    pub const KERNEL_TEXT: Prot = Prot(Self::NORMAL | PAGE_DESCRIPTOR::AP::RO_EL1.value);
    /// Kernel read-only data.
    pub const KERNEL_RO: Prot =
        Prot(Self::NORMAL | PAGE_DESCRIPTOR::AP::RO_EL1.value | PAGE_DESCRIPTOR::PXN::True.value);
    /// Kernel read-write data.
    pub const KERNEL_RW: Prot =
        Prot(Self::NORMAL | PAGE_DESCRIPTOR::AP::RW_EL1.value | PAGE_DESCRIPTOR::PXN::True.value);
    /// Device registers.
    pub const DEVICE: Prot = Prot(
        PAGE_DESCRIPTOR::AF::True.value
            | PAGE_DESCRIPTOR::SH::OuterShareable.value
            | PAGE_DESCRIPTOR::ATTR_INDX.val(MT_DEVICE_NGNRE).value
            | PAGE_DESCRIPTOR::AP::RW_EL1.value
            | PAGE_DESCRIPTOR::PXN::True.value
            | PAGE_DESCRIPTOR::UXN::True.value,
    );

    /// Whether EL1 may execute from such a mapping.
    pub fn is_exec(self) -> bool {
        !self.desc().is_set(PAGE_DESCRIPTOR::PXN)
    }

    /// Whether EL1 may write through such a mapping.
    pub fn is_writable(self) -> bool {
        use PAGE_DESCRIPTOR::AP::Value as Ap;
        matches!(
            self.desc().read_as_enum(PAGE_DESCRIPTOR::AP),
            Some(Ap::RW_EL1 | Ap::RW_EL1_EL0)
        )
    }

    fn desc(self) -> InMemoryRegister<u64, PAGE_DESCRIPTOR::Register> {
        InMemoryRegister::new(self.0)
    }
}

/// Why a mapping could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// No memory for a page table.
    NoMemory,
    /// The address or size is not page aligned.
    Unaligned,
    /// Part of the range is already mapped.
    AlreadyMapped,
    /// The range leaves the window it must stay in.
    OutOfWindow,
}

/// Where page-table frames come from once the boot pool is used up: set by
/// the frame allocator when it starts.
static TABLE_FRAME_SOURCE: spin::Once<fn() -> Option<PhysAddr>> = spin::Once::new();

/// Registers the function that hands out (not necessarily zeroed) frames
/// for page tables after boot; the first registration stands.
pub fn set_table_frame_source(f: fn() -> Option<PhysAddr>) {
    TABLE_FRAME_SOURCE.call_once(|| f);
}

const BOOT_POOL_PAGES: usize = 48;

/// Frames for the kernel's tables before the frame allocator exists.
struct BootPool {
    pages: UnsafeCell<[Table; BOOT_POOL_PAGES]>,
    next: AtomicUsize,
}
// SAFETY: `next` hands each page out once; a page is then only reached
// through the page-table code under KERNEL_PGD.
unsafe impl Sync for BootPool {}

static BOOT_POOL: BootPool = BootPool {
    pages: UnsafeCell::new([const { Table([0; ENTRIES]) }; BOOT_POOL_PAGES]),
    next: AtomicUsize::new(0),
};

/// `KIMAGE_VADDR - phys_base`: how to reach image memory before (and
/// besides) the linear map.
static KIMAGE_VOFFSET: AtomicUsize = AtomicUsize::new(0);
static KIMAGE_PHYS_BASE: AtomicU64 = AtomicU64::new(0);

extern "C" {
    static _text: u8;
    static _etext: u8;
    static __start_rodata: u8;
    static __end_rodata: u8;
    static __start_data: u8;
    static __bss_start: u8;
    static _end: u8;
    static __idmap_text_start: u8;
}

fn sym_addr(s: &u8) -> usize {
    s as *const u8 as usize
}

/// Addresses of the image's parts, from the link script.
#[derive(Clone, Copy, Debug)]
pub struct ImageLayout {
    /// Start of text (the Image header).
    pub text: usize,
    /// End of text.
    pub etext: usize,
    /// Start of read-only data.
    pub rodata: usize,
    /// End of read-only data.
    pub erodata: usize,
    /// Start of data.
    pub data: usize,
    /// Start of bss (after data).
    pub bss: usize,
    /// End of the image.
    pub end: usize,
}

/// The image's section bounds.
pub fn image_layout() -> ImageLayout {
    // SAFETY: only the addresses of linker-defined symbols are taken.
    unsafe {
        ImageLayout {
            text: sym_addr(&_text),
            etext: sym_addr(&_etext),
            rodata: sym_addr(&__start_rodata),
            erodata: sym_addr(&__end_rodata),
            data: sym_addr(&__start_data),
            bss: sym_addr(&__bss_start),
            end: sym_addr(&_end),
        }
    }
}

/// Physical address of an address inside the kernel image.
pub fn kimage_to_phys(va: VirtAddr) -> PhysAddr {
    PhysAddr::from_desc(virt_to_phys_image(va.as_usize()))
}

/// `va - KIMAGE_VOFFSET`: the image's virtual-to-physical offset applied
/// to an address of the image (the one place it is applied).
fn virt_to_phys_image(va: usize) -> u64 {
    va.wrapping_sub(KIMAGE_VOFFSET.load(Ordering::Relaxed)) as u64
}

/// Physical address of an image object (a linker symbol, a static).
fn kimage_obj_to_phys<T>(obj: *const T) -> PhysAddr {
    PhysAddr::from_desc(virt_to_phys_image(obj as usize))
}

/// Physical range `[start, end)` the image occupies (from `_text`).
pub fn kimage_phys_range() -> (PhysAddr, PhysAddr) {
    let l = image_layout();
    (
        PhysAddr::from_desc(virt_to_phys_image(l.text)),
        PhysAddr::from_desc(virt_to_phys_image(l.end)),
    )
}

/// Virtual address at which page-table code may touch the frame `pa`.
fn table_va(pa: PhysAddr) -> *mut u64 {
    let (start, end) = kimage_phys_range();
    let base = KIMAGE_PHYS_BASE.load(Ordering::Relaxed);
    if pa.as_u64() >= base && pa < end.max(start) {
        let image_alias = (pa.as_u64() as usize).wrapping_add(KIMAGE_VOFFSET.load(Ordering::Relaxed));
        VirtAddr::from_window(image_alias).as_mut_ptr()
    } else {
        pa.to_linear().as_mut_ptr()
    }
}

/// A zeroed frame for a user page table (never from the boot pool).
pub(crate) fn alloc_user_table() -> Option<PhysAddr> {
    let pa = TABLE_FRAME_SOURCE.get()?()?;
    // SAFETY: a fresh frame, reached through the linear map.
    unsafe { core::ptr::write_bytes(pa.to_linear().as_mut_ptr::<u64>(), 0, ENTRIES) };
    Some(pa)
}

fn alloc_table() -> Option<PhysAddr> {
    let i = BOOT_POOL.next.fetch_add(1, Ordering::Relaxed);
    let pa = if i < BOOT_POOL_PAGES {
        kimage_obj_to_phys(BOOT_POOL.pages.get().cast::<Table>().wrapping_add(i))
    } else {
        TABLE_FRAME_SOURCE.get()?()?
    };
    let va = table_va(pa);
    // SAFETY: `pa` is a fresh frame owned by the page-table code; `va` maps
    // it (image alias or linear map) and it is one page long.
    unsafe { core::ptr::write_bytes(va, 0, ENTRIES) };
    Some(pa)
}

/// The kernel's TTBR1 tables.
struct KernelPgd {
    root: PhysAddr,
    ioremap_next: usize,
    heap_mapped: usize,
}

static KERNEL_PGD: Mutex<KernelPgd> = Mutex::new(KernelPgd {
    root: PhysAddr::from_desc(0),
    ioremap_next: IOREMAP_BASE,
    heap_mapped: 0,
});

/// `KERNEL_PGD`, locked with interrupts masked on this CPU: the heap maps
/// and unmaps its pages from allocations and frees made in interrupt
/// handlers, which must never find the lock held by the code they
/// interrupted.
struct PgdGuard {
    guard: core::mem::ManuallyDrop<spin::MutexGuard<'static, KernelPgd>>,
    flags: crate::cpu::IrqFlags,
}

fn kernel_pgd() -> PgdGuard {
    let flags = crate::cpu::local_irq_save();
    PgdGuard {
        guard: core::mem::ManuallyDrop::new(KERNEL_PGD.lock()),
        flags,
    }
}

impl core::ops::Deref for PgdGuard {
    type Target = KernelPgd;
    fn deref(&self) -> &KernelPgd {
        &self.guard
    }
}

impl core::ops::DerefMut for PgdGuard {
    fn deref_mut(&mut self) -> &mut KernelPgd {
        &mut self.guard
    }
}

impl Drop for PgdGuard {
    fn drop(&mut self) {
        // SAFETY: dropped exactly once, here, before interrupts come back.
        unsafe { core::mem::ManuallyDrop::drop(&mut self.guard) };
        crate::cpu::local_irq_restore(self.flags);
    }
}

const fn index(va: usize, level: usize) -> usize {
    (va >> (39 - 9 * level)) & (ENTRIES - 1)
}

const fn level_size(level: usize) -> usize {
    1 << (39 - 9 * level)
}

/// A table descriptor pointing at the table frame `pa`.
pub(crate) fn table_desc(pa: PhysAddr) -> u64 {
    (TABLE_DESCRIPTOR::VALID::True + TABLE_DESCRIPTOR::TYPE::Table).value | (pa.as_u64() & ADDR_MASK)
}

/// The next-level table a table descriptor points at.
fn desc_table(desc: u64) -> PhysAddr {
    PhysAddr::from_desc(desc & ADDR_MASK)
}

fn leaf_desc(pa: PhysAddr, prot: Prot, level: usize) -> u64 {
    let kind = if level == 3 {
        PAGE_DESCRIPTOR::TYPE::Page
    } else {
        PAGE_DESCRIPTOR::TYPE::Block
    };
    (PAGE_DESCRIPTOR::VALID::True + kind).value | prot.0 | (pa.as_u64() & ADDR_MASK)
}

const ADDR_MASK: u64 = DESC_ADDR_MASK;

/// Whether a descriptor maps anything (its VALID bit).
pub(crate) fn is_valid(desc: u64) -> bool {
    InMemoryRegister::<u64, TABLE_DESCRIPTOR::Register>::new(desc).is_set(TABLE_DESCRIPTOR::VALID)
}

/// Whether a descriptor above level 3 points at a next-level table.
pub(crate) fn is_table(desc: u64) -> bool {
    let d = InMemoryRegister::<u64, TABLE_DESCRIPTOR::Register>::new(desc);
    d.matches_all(TABLE_DESCRIPTOR::VALID::True + TABLE_DESCRIPTOR::TYPE::Table)
}

/// Returns a pointer to the entry for `va` at `level`, creating tables on
/// the way.
fn walk_create(root: PhysAddr, va: VirtAddr, level: usize) -> Result<*mut u64, MapError> {
    let mut table = root;
    for l in 0..level {
        let entry = table_va(table).wrapping_add(index(va.as_usize(), l));
        // SAFETY: `entry` is inside a live table page owned by KERNEL_PGD,
        // whose lock the caller holds.
        let desc = unsafe { entry.read_volatile() };
        table = if !is_valid(desc) {
            let new = alloc_table().ok_or(MapError::NoMemory)?;
            barrier::dsb_ishst();
            // SAFETY: as above.
            unsafe { entry.write_volatile(table_desc(new)) };
            new
        } else if is_table(desc) {
            desc_table(desc)
        } else {
            return Err(MapError::AlreadyMapped);
        };
    }
    Ok(table_va(table).wrapping_add(index(va.as_usize(), level)))
}

/// Finds the leaf entry mapping `va`, if any.
fn walk(root: PhysAddr, va: VirtAddr) -> Option<(*mut u64, usize)> {
    let mut table = root;
    for level in 0..4 {
        let entry = table_va(table).wrapping_add(index(va.as_usize(), level));
        // SAFETY: `entry` is inside a live table page.
        let desc = unsafe { entry.read_volatile() };
        if !is_valid(desc) {
            return None;
        }
        if level == 3 || !is_table(desc) {
            return Some((entry, level));
        }
        table = desc_table(desc);
    }
    None
}

/// Maps `[va, va + size)` to `[pa, ...)`, with blocks where alignment
/// allows if `blocks`.
fn map_range(
    root: PhysAddr,
    va: VirtAddr,
    pa: PhysAddr,
    size: usize,
    prot: Prot,
    blocks: bool,
) -> Result<(), MapError> {
    if !va.is_aligned(PAGE_SIZE) || !pa.is_page_aligned() || !size.is_multiple_of(PAGE_SIZE) {
        return Err(MapError::Unaligned);
    }
    let mut off = 0;
    while off < size {
        let v = va.checked_add(off).ok_or(MapError::OutOfWindow)?;
        let p = pa.checked_add(off as u64).ok_or(MapError::OutOfWindow)?;
        let level = if blocks {
            (1..=3)
                .find(|&l| {
                    v.is_aligned(level_size(l)) && p.is_aligned(level_size(l) as u64) && size - off >= level_size(l)
                })
                .unwrap_or(3)
        } else {
            3
        };
        let entry = walk_create(root, v, level)?;
        // SAFETY: `entry` points into a live table (see walk_create).
        unsafe {
            if is_valid(entry.read_volatile()) {
                return Err(MapError::AlreadyMapped);
            }
            entry.write_volatile(leaf_desc(p, prot, level));
        }
        off += level_size(level);
    }
    barrier::dsb_ishst();
    barrier::isb();
    Ok(())
}

/// What the final kernel tables must cover, besides the image.
pub struct KernelMapSpec<'a> {
    /// RAM regions `(base, size)` for the linear map.
    pub ram: &'a [(u64, u64)],
}

/// Builds the kernel's own TTBR1 tables (image with W^X, linear map of RAM
/// with the image's alias read-only, an empty fixmap table) and switches to
/// them; TTBR0 is then pointed at an empty table so that low addresses
/// fault. Runs once, on the boot CPU. `phys_base` is the 2 MiB aligned
/// physical base of the image.
pub fn paging_init(phys_base: PhysAddr, spec: &KernelMapSpec) -> Result<(), MapError> {
    KIMAGE_PHYS_BASE.store(phys_base.as_u64(), Ordering::Relaxed);
    KIMAGE_VOFFSET.store(KIMAGE_VADDR - phys_base.as_u64() as usize, Ordering::Relaxed);
    let l = image_layout();
    let mut pgd = kernel_pgd();
    let root = alloc_table().ok_or(MapError::NoMemory)?;
    // Image sections: virtual start, its physical alias, length.
    let section = |start: usize, end: usize| {
        let va = VirtAddr::from_window(start);
        (va, kimage_to_phys(va), end - start)
    };
    let (va, pa, len) = section(l.text, l.etext);
    map_range(root, va, pa, len, Prot::KERNEL_TEXT, false)?;
    let (va, pa, len) = section(l.rodata, l.erodata);
    map_range(root, va, pa, len, Prot::KERNEL_RO, false)?;
    let (va, pa, len) = section(l.data, align_up(l.end, PAGE_SIZE));
    map_range(root, va, pa, len, Prot::KERNEL_RW, false)?;
    // The linear map: RW data everywhere except the image, whose alias is
    // read-only so that text can never be written through it.
    let (img_lo, img_end) = kimage_phys_range();
    let img_hi = page_align_up(img_end).ok_or(MapError::OutOfWindow)?;
    for &(base, size) in spec.ram {
        // RAM the tables cannot address is left unmapped, as is RAM above
        // the linear map's end.
        let (Some(start), Some(end)) = (
            PhysAddr::new(base).and_then(page_align_up),
            base.checked_add(size).and_then(PhysAddr::new).map(PhysAddr::page_base),
        ) else {
            continue;
        };
        if end <= start || end.to_linear().as_usize() > PAGE_END {
            continue;
        }
        let mut cur = start;
        for (lo, hi, prot) in [
            (start, img_lo, Prot::KERNEL_RW),
            (img_lo, img_hi, Prot::KERNEL_RO),
            (img_hi, end, Prot::KERNEL_RW),
        ] {
            let (lo, hi) = (lo.max(cur), hi.min(end));
            if hi > lo {
                let len = (hi.as_u64() - lo.as_u64()) as usize;
                map_range(root, lo.to_linear(), lo, len, prot, true)?;
                cur = hi;
            }
        }
    }
    // The fixmap's level-3 table exists from the start, so that setting a
    // slot never allocates (it is used with interrupts off, under stop_machine).
    let fix_pte = walk_create(root, VirtAddr::from_window(FIXADDR_START), 3)?;
    FIXMAP_PTE.store(fix_pte as usize, Ordering::Release);
    pgd.root = root;
    drop(pgd);
    // SAFETY: the new tables map the image (text, stacks, data) at the same
    // addresses as the early ones, so execution continues seamlessly.
    unsafe { replace_ttbr1(root) };
    // SAFETY: the empty table makes all of TTBR0's half fault, which is the
    // intent until a user address space is installed.
    unsafe { set_ttbr0(empty_table_pa()) };
    Ok(())
}

/// `pa` rounded up to a page boundary, if that is still mappable.
fn page_align_up(pa: PhysAddr) -> Option<PhysAddr> {
    if pa.is_page_aligned() {
        Some(pa)
    } else {
        pa.page_base().checked_add(PAGE_SIZE as u64)
    }
}

/// The fixmap's level-3 table (its first entry), found without the page
/// table lock: fixmap users may run while other CPUs are parked.
static FIXMAP_PTE: AtomicUsize = AtomicUsize::new(0);

static EMPTY_TABLE: Table = Table([0; ENTRIES]);

/// The physical address of the table that makes TTBR0's half fault.
fn empty_table_pa() -> PhysAddr {
    kimage_obj_to_phys(&EMPTY_TABLE)
}

/// Physical address of the kernel's TTBR1 root (for secondary CPUs).
pub fn kernel_root() -> PhysAddr {
    kernel_pgd().root
}

/// Physical address of the identity map root (for secondary CPUs).
pub fn idmap_root() -> PhysAddr {
    // SAFETY: only the address is taken.
    kimage_obj_to_phys(unsafe { core::ptr::addr_of!(early::EARLY_TABLES.idmap_l0) })
}

/// Switches TTBR1 through the identity map.
///
/// # Safety
/// `root` must be a complete kernel table that maps the running code, stack
/// and data at their current addresses.
unsafe fn replace_ttbr1(root: PhysAddr) {
    extern "C" {
        fn __cpu_replace_ttbr1();
    }
    let fn_pa = kimage_obj_to_phys(__cpu_replace_ttbr1 as *const ()).as_u64();
    let empty = empty_table_pa().as_u64();
    // SAFETY: the callee runs from the identity map (TTBR0 still holds it),
    // uses only x0/x1 and returns to the caller's (virtual) address, which
    // the new table maps.
    unsafe {
        core::arch::asm!("blr {f}", f = in(reg) fn_pa, in("x0") root.as_u64(), in("x1") empty, out("x30") _, options(nostack));
    }
}

/// Loads TTBR0 (the user half) and invalidates the TLB.
///
/// # Safety
/// `root` must be a valid table (or the empty table), with no live user of
/// the previous one on this CPU.
pub unsafe fn set_ttbr0(root: PhysAddr) {
    // SAFETY: per the contract.
    unsafe {
        core::arch::asm!("msr ttbr0_el1, {r}", "isb", "tlbi vmalle1", "dsb nsh", "isb", r = in(reg) root.as_u64(), options(nostack));
    }
}

/// Secondary CPUs come up with the early identity map in TTBR0; once at
/// their virtual address they drop it for the empty table.
pub fn secondary_drop_idmap() {
    // SAFETY: the secondary runs at kernel virtual addresses by now.
    unsafe { set_ttbr0(empty_table_pa()) };
}

/// Maps device registers at `[pa, pa + size)` into the MMIO window and
/// returns the virtual address of `pa`.
pub fn ioremap(pa: PhysAddr, size: usize) -> Result<VirtAddr, MapError> {
    let start = pa.page_base();
    let end = pa
        .checked_add(size as u64)
        .and_then(page_align_up)
        .ok_or(MapError::OutOfWindow)?;
    let len = (end.as_u64() - start.as_u64()) as usize;
    let mut pgd = kernel_pgd();
    let va = pgd.ioremap_next;
    if va + len > IOREMAP_BASE + IOREMAP_SIZE {
        return Err(MapError::OutOfWindow);
    }
    map_range(pgd.root, VirtAddr::from_window(va), start, len, Prot::DEVICE, false)?;
    pgd.ioremap_next = va + len + PAGE_SIZE; // a guard page between devices
    Ok(VirtAddr::from_window(va + pa.page_offset()))
}

/// Extends the heap window by one page backed by frame `pa`; returns the
/// new end of the mapped heap.
pub fn map_heap_page(pa: PhysAddr) -> Result<VirtAddr, MapError> {
    let mut pgd = kernel_pgd();
    let va = HEAP_BASE + pgd.heap_mapped;
    if pgd.heap_mapped + PAGE_SIZE > HEAP_MAX {
        return Err(MapError::OutOfWindow);
    }
    map_range(
        pgd.root,
        VirtAddr::from_window(va),
        pa,
        PAGE_SIZE,
        Prot::KERNEL_RW,
        false,
    )?;
    pgd.heap_mapped += PAGE_SIZE;
    Ok(VirtAddr::from_window(va + PAGE_SIZE))
}

/// Shrinks the heap window by its last page, invalidating that page's TLB
/// entries on every CPU; returns the frame that backed it, for the caller
/// to free once nothing can reach the page. `None` when nothing is mapped.
pub fn unmap_heap_page() -> Option<PhysAddr> {
    let mut pgd = kernel_pgd();
    let va = (HEAP_BASE + pgd.heap_mapped)
        .checked_sub(PAGE_SIZE)
        .filter(|&va| va >= HEAP_BASE)?;
    let (entry, 3) = walk(pgd.root, VirtAddr::from_window(va))? else {
        return None;
    };
    // SAFETY: `walk` returns a pointer to the level-3 entry of this page in a
    // live table; KERNEL_PGD is locked.
    let desc = unsafe { entry.read_volatile() };
    // SAFETY: as above.
    unsafe { entry.write_volatile(0) };
    crate::tlb::flush_kernel_page(va);
    pgd.heap_mapped -= PAGE_SIZE;
    Some(desc_table(desc))
}

/// Maps `[va, va + size)` in the vmalloc window to `[pa, ...)` with `prot`.
pub fn vmap(va: VirtAddr, pa: PhysAddr, size: usize, prot: Prot) -> Result<(), MapError> {
    let in_window = va.as_usize() >= VMALLOC_BASE
        && va
            .checked_add(size)
            .is_some_and(|end| end.as_usize() <= VMALLOC_BASE + VMALLOC_SIZE);
    if !in_window {
        return Err(MapError::OutOfWindow);
    }
    let pgd = kernel_pgd();
    map_range(pgd.root, va, pa, size, prot, false)
}
/// Maps a kernel stack of `size` bytes backed by `[pa, pa + size)` at `va`
/// in the stack window. `va` must be `KSTACK_ALIGN` aligned and `size` at
/// most `KSTACK_MAX_SIZE`: the rest of the slot stays unmapped and is the
/// guard below the next stack up, and the vectors' overflow test relies on
/// that layout.
pub fn map_kernel_stack(va: VirtAddr, pa: PhysAddr, size: usize) -> Result<(), MapError> {
    if !va.is_aligned(KSTACK_ALIGN) || size > KSTACK_MAX_SIZE {
        return Err(MapError::Unaligned);
    }
    let in_window = va.as_usize() >= KSTACK_BASE
        && va
            .checked_add(KSTACK_ALIGN)
            .is_some_and(|end| end.as_usize() <= KSTACK_BASE + KSTACK_WINDOW);
    if !in_window {
        return Err(MapError::OutOfWindow);
    }
    let pgd = kernel_pgd();
    map_range(pgd.root, va, pa, size, Prot::KERNEL_RW, false)
}

/// Unmaps the kernel stack mapped at `va` by `map_kernel_stack`, and
/// invalidates its TLB entries on every CPU. The owner of the stack calls
/// this once nothing runs on it any more, before freeing its frames.
pub fn unmap_kernel_stack(va: VirtAddr, size: usize) {
    if !(KSTACK_BASE..KSTACK_BASE + KSTACK_WINDOW).contains(&va.as_usize()) || size > KSTACK_MAX_SIZE {
        return;
    }
    let pgd = kernel_pgd();
    let mut off = 0;
    while off < size {
        let page = VirtAddr::from_window(va.as_usize() + off);
        if let Some((entry, 3)) = walk(pgd.root, page) {
            // SAFETY: `walk` returns a pointer to the level-3 entry of
            // this page in a live table; KERNEL_PGD is locked.
            unsafe { entry.write_volatile(0) };
            crate::tlb::flush_kernel_page(page.as_usize());
        }
        off += PAGE_SIZE;
    }
}

/// The kernel mapping of `va`: physical address and permissions.
pub fn translate(va: VirtAddr) -> Option<(PhysAddr, Prot)> {
    let root = kernel_pgd().root;
    let (entry, level) = walk(root, va)?;
    // SAFETY: `walk` returns a pointer into a live table.
    let desc = unsafe { entry.read_volatile() };
    // The block or page base, plus `va`'s offset inside it.
    let in_block = va.as_usize() & (level_size(level) - 1);
    let pa = PhysAddr::from_desc(desc & ADDR_MASK & !(level_size(level) as u64 - 1)).checked_add(in_block as u64)?;
    Some((pa, Prot(desc & !(ADDR_MASK | 3))))
}

/// The fixmap: fixed virtual slots for short-lived mappings of any physical
/// page, e.g. the writable alias through which text is patched.
pub mod fixmap {
    use super::*;

    /// Virtual address of slot `slot`.
    pub const fn slot_addr(slot: usize) -> VirtAddr {
        VirtAddr::from_window(FIXADDR_START + slot * PAGE_SIZE)
    }

    fn slot_entry(slot: usize) -> *mut u64 {
        assert!(slot < FIX_SLOTS, "fixmap slot {slot} out of range");
        let table = FIXMAP_PTE.load(Ordering::Acquire) as *mut u64;
        assert!(!table.is_null(), "fixmap used before paging_init");
        table.wrapping_add(slot)
    }

    /// Maps physical page `pa` at `slot` with `prot`; returns its address.
    ///
    /// # Safety
    /// The caller owns `slot` until `clear`, and must not create a writable
    /// alias of memory that other code relies on being unchanged, except
    /// under the rules of the mechanism it implements (text patching).
    pub unsafe fn set(slot: usize, pa: PhysAddr, prot: Prot) -> VirtAddr {
        let entry = slot_entry(slot);
        // SAFETY: `entry` is the slot's entry in the fixmap level-3 table.
        unsafe { entry.write_volatile(leaf_desc(pa.page_base(), prot, 3)) };
        barrier::dsb_ishst();
        barrier::isb();
        slot_addr(slot)
    }

    /// Unmaps `slot` and invalidates its TLB entry on all CPUs.
    pub fn clear(slot: usize) {
        let entry = slot_entry(slot);
        // SAFETY: as in `set`.
        unsafe { entry.write_volatile(0) };
        crate::tlb::flush_kernel_page(slot_addr(slot).as_usize());
    }
}

/// Writes `val` to the 8-byte aligned physical address `pa` through the
/// linear map (e.g. a spin-table release address), if RAM is mapped there
/// writable.
pub fn write_phys_u64(pa: PhysAddr, val: u64) -> Result<(), MapError> {
    if !pa.is_aligned(8) {
        return Err(MapError::Unaligned);
    }
    let va = pa.to_linear();
    match translate(va) {
        // SAFETY: the linear map holds RAM at `va`, writable, and the
        // caller names memory it owns (firmware mailbox words).
        Some((_, prot)) if prot.is_writable() => unsafe { va.as_mut_ptr::<u64>().write_volatile(val) },
        _ => return Err(MapError::OutOfWindow),
    }
    Ok(())
}

/// A shared view of `len` bytes of RAM at physical `pa`, through the linear
/// map; `None` if any of it is not mapped there.
///
/// # Safety
/// The memory must stay allocated and unmodified for the rest of the
/// kernel's life (e.g. a boot loader region kept from the frame allocator).
pub unsafe fn linear_slice(pa: PhysAddr, len: usize) -> Option<&'static [u8]> {
    let va = pa.to_linear();
    let end = va.checked_add(len)?;
    if len == 0 || end.as_usize() > PAGE_END {
        return None;
    }
    let mut page = va.page_base();
    while page < end {
        translate(page)?;
        page = page.checked_add(PAGE_SIZE)?;
    }
    // SAFETY: every page is mapped (checked above); the caller guarantees
    // the memory is immutable and lives forever.
    Some(unsafe { core::slice::from_raw_parts(va.as_ptr::<u8>(), len) })
}
