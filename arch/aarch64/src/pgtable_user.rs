//! User (TTBR0) page tables: one per address space, 4 KiB pages only,
//! tagged with an ASID. The kernel's memory manager decides what to map;
//! this module only edits descriptors.

use crate::addr::{PhysAddr, UserVirtAddr};
use crate::mmu::{is_table, is_valid, table_desc, MapError, MT_NORMAL, PAGE_DESCRIPTOR, TLBI_OPERAND};
use aarch64_cpu::registers::TTBR0_EL1;
use tock_registers::interfaces::Readable;
use tock_registers::registers::InMemoryRegister;

const ADDR_MASK: u64 = crate::mmu::DESC_ADDR_MASK;
const ENTRIES: usize = 512;

/// A user page mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserPte {
    /// Physical frame.
    pub pa: PhysAddr,
    /// EL0 may access it at all (false for PROT_NONE).
    pub user: bool,
    /// EL0 may write.
    pub write: bool,
    /// EL0 may execute.
    pub exec: bool,
    /// Shared copy-on-write (then `write` is false in hardware terms).
    pub cow: bool,
}

impl UserPte {
    fn encode(self) -> u64 {
        // A page without user data access keeps its frame for the kernel
        // only; EL0 may still execute it if `exec` (execute-only: AP
        // governs data accesses, UXN instruction fetches).
        let ap = match (self.user, self.write) {
            (false, _) => PAGE_DESCRIPTOR::AP::RO_EL1,
            (true, true) => PAGE_DESCRIPTOR::AP::RW_EL1_EL0,
            (true, false) => PAGE_DESCRIPTOR::AP::RO_EL1_EL0,
        };
        let uxn = if self.exec {
            PAGE_DESCRIPTOR::UXN::False
        } else {
            PAGE_DESCRIPTOR::UXN::True
        };
        (PAGE_DESCRIPTOR::VALID::True
            + PAGE_DESCRIPTOR::TYPE::Page
            + PAGE_DESCRIPTOR::AF::True
            + PAGE_DESCRIPTOR::NG::True
            + PAGE_DESCRIPTOR::SH::InnerShareable
            + PAGE_DESCRIPTOR::ATTR_INDX.val(MT_NORMAL)
            + PAGE_DESCRIPTOR::PXN::True
            + ap
            + uxn)
            .value
            | (self.pa.as_u64() & ADDR_MASK)
            | PAGE_DESCRIPTOR::SW_COW.val(self.cow.into()).value
    }

    fn decode(d: u64) -> UserPte {
        use PAGE_DESCRIPTOR::AP::Value as Ap;
        let r = InMemoryRegister::<u64, PAGE_DESCRIPTOR::Register>::new(d);
        let ap = r.read_as_enum(PAGE_DESCRIPTOR::AP);
        UserPte {
            pa: PhysAddr::from_desc(d & ADDR_MASK),
            user: matches!(ap, Some(Ap::RW_EL1_EL0 | Ap::RO_EL1_EL0)),
            write: ap == Some(Ap::RW_EL1_EL0),
            exec: !r.is_set(PAGE_DESCRIPTOR::UXN),
            cow: r.is_set(PAGE_DESCRIPTOR::SW_COW),
        }
    }
}

static FREE_FRAME: spin::Once<fn(PhysAddr)> = spin::Once::new();

/// Registers how table frames are given back when a user table is freed;
/// the first registration stands.
pub fn set_table_frame_free(f: fn(PhysAddr)) {
    FREE_FRAME.call_once(|| f);
}

fn free_table_frame(pa: PhysAddr) {
    if let Some(f) = FREE_FRAME.get() {
        f(pa);
    }
}

/// A table frame's entries, through the linear map.
fn table(pa: PhysAddr) -> *mut u64 {
    pa.to_linear().as_mut_ptr()
}

/// The table a level-0..2 entry points to.
const fn next_table(desc: u64) -> PhysAddr {
    PhysAddr::from_desc(desc & ADDR_MASK)
}

/// The index of `va`'s entry in its level-`level` table (9 bits).
const fn index(va: u64, level: usize) -> usize {
    // Nine bits: the cast cannot truncate.
    ((va >> (39 - 9 * level)) & (ENTRIES as u64 - 1)) as usize
}

/// The page tables of one user address space. Dropping it frees the table
/// frames (not the mapped pages, which the memory manager owns).
pub struct UserPageTable {
    root: PhysAddr,
}

impl UserPageTable {
    /// An empty address space.
    pub fn new() -> Result<Self, MapError> {
        Ok(UserPageTable { root: alloc_table()? })
    }

    /// Physical address of the root table, for TTBR0.
    pub fn root(&self) -> PhysAddr {
        self.root
    }

    /// The level-3 entry for `va`, creating the tables on the way if
    /// `create`.
    fn entry(&self, va: UserVirtAddr, create: bool) -> Result<Option<*mut u64>, MapError> {
        let va = va.as_u64();
        let mut t = self.root;
        for level in 0..3 {
            let e = table(t).wrapping_add(index(va, level));
            // SAFETY: `e` is inside a table page owned by this address space,
            // reached through the linear map; callers serialise edits (&mut).
            let d = unsafe { e.read_volatile() };
            // User tables hold no blocks: above level 3 an entry is a
            // table or nothing.
            t = if is_table(d) {
                next_table(d)
            } else {
                if !create {
                    return Ok(None);
                }
                let new = alloc_table()?;
                crate::barrier::dsb_ishst();
                // SAFETY: as above.
                unsafe { e.write_volatile(table_desc(new)) };
                new
            };
        }
        Ok(Some(table(t).wrapping_add(index(va, 3))))
    }

    /// Maps the page at `va`, replacing any previous mapping (returned; the
    /// caller then invalidates the TLB entry).
    pub fn map(&mut self, va: UserVirtAddr, pte: UserPte) -> Result<Option<UserPte>, MapError> {
        if !va.is_page_aligned() {
            return Err(MapError::Unaligned);
        }
        let e = self.entry(va, true)?.ok_or(MapError::NoMemory)?;
        // SAFETY: `e` is this space's level-3 entry for `va`.
        let old = unsafe { e.read_volatile() };
        // SAFETY: as above.
        unsafe { e.write_volatile(pte.encode()) };
        crate::barrier::dsb_ishst();
        Ok(is_valid(old).then(|| UserPte::decode(old)))
    }

    /// The mapping of the page holding `va`.
    pub fn get(&self, va: UserVirtAddr) -> Option<UserPte> {
        let e = self.entry(va.page_base(), false).ok()??;
        // SAFETY: `e` is this space's level-3 entry for `va`.
        let d = unsafe { e.read_volatile() };
        is_valid(d).then(|| UserPte::decode(d))
    }

    /// Removes the mapping at `va`, returning it (the caller invalidates
    /// the TLB entry and releases the frame).
    pub fn clear(&mut self, va: UserVirtAddr) -> Option<UserPte> {
        let e = self.entry(va.page_base(), false).ok()??;
        // SAFETY: `e` is this space's level-3 entry for `va`.
        let d = unsafe { e.read_volatile() };
        if !is_valid(d) {
            return None;
        }
        // SAFETY: as above.
        unsafe { e.write_volatile(0) };
        crate::barrier::dsb_ishst();
        Some(UserPte::decode(d))
    }

    /// For every mapped page in `[start, end)` (`end` is a bound, clipped
    /// at `TASK_SIZE`): `f` gives its new mapping (`None` removes it), which
    /// is written, and then `after(va, old)` runs (the caller invalidates
    /// the TLB entry there, and only then releases a frame). Nothing is
    /// allocated, whatever the number of pages. Absent tables are skipped
    /// whole at every level, so the cost follows what is mapped, not the
    /// size of the range (a `munmap` of 2^47 untouched bytes looks at a
    /// handful of entries).
    pub fn update_in(
        &mut self,
        start: UserVirtAddr,
        end: u64,
        mut f: impl FnMut(UserVirtAddr, UserPte) -> Option<UserPte>,
        mut after: impl FnMut(UserVirtAddr, UserPte),
    ) {
        fn walk(
            t: PhysAddr,
            level: usize,
            base: u64,
            range: (u64, u64),
            f: &mut dyn FnMut(UserVirtAddr, UserPte) -> Option<UserPte>,
            after: &mut dyn FnMut(UserVirtAddr, UserPte),
        ) {
            let (start, end) = range;
            let shift = 39 - 9 * level;
            let span = 1u64 << shift;
            // Only the entries whose span meets [start, end).
            // At most ENTRIES: `base` is aligned to this table's span.
            let first = usize::try_from(start.saturating_sub(base) >> shift).unwrap_or(ENTRIES);
            for (i, slot) in (0u64..).zip(0..ENTRIES).skip(first) {
                let va = base | (i << shift);
                if va >= end {
                    break;
                }
                if va + span <= start {
                    continue;
                }
                let e = table(t).wrapping_add(slot);
                // SAFETY: `e` is an entry of a live table of this address
                // space; edits are serialised by `&mut self`.
                let d = unsafe { e.read_volatile() };
                if level < 3 {
                    if is_table(d) {
                        walk(next_table(d), level + 1, va, range, f, after);
                    }
                    continue;
                }
                if !is_valid(d) {
                    continue;
                }
                let old = UserPte::decode(d);
                let va = UserVirtAddr::from_walk(va);
                let new = f(va, old).map_or(0, UserPte::encode);
                // SAFETY: as above.
                unsafe { e.write_volatile(new) };
                crate::barrier::dsb_ishst();
                after(va, old);
            }
        }
        let (start, end) = (start.as_u64(), end.min(crate::uaccess::TASK_SIZE));
        if start < end {
            walk(self.root, 0, 0, (start, end), &mut f, &mut after);
        }
    }

    /// Calls `f` for every mapped page, in address order.
    pub fn for_each(&self, mut f: impl FnMut(UserVirtAddr, UserPte)) {
        fn walk(t: PhysAddr, level: usize, base: u64, f: &mut dyn FnMut(UserVirtAddr, UserPte)) {
            for (i, slot) in (0u64..).zip(0..ENTRIES) {
                // SAFETY: `t` is a live table of this address space.
                let d = unsafe { table(t).add(slot).read_volatile() };
                let va = base | (i << (39 - 9 * level));
                if level == 3 {
                    if is_valid(d) {
                        f(UserVirtAddr::from_walk(va), UserPte::decode(d));
                    }
                } else if is_table(d) {
                    walk(next_table(d), level + 1, va, f);
                }
            }
        }
        walk(self.root, 0, 0, &mut f);
    }
}

/// A zeroed frame for a user table.
fn alloc_table() -> Result<PhysAddr, MapError> {
    crate::mmu::alloc_user_table().ok_or(MapError::NoMemory)
}

impl Drop for UserPageTable {
    fn drop(&mut self) {
        fn free(t: PhysAddr, level: usize) {
            if level < 3 {
                for i in 0..ENTRIES {
                    // SAFETY: `t` is a table of the address space being freed.
                    let d = unsafe { table(t).add(i).read_volatile() };
                    if is_table(d) {
                        free(next_table(d), level + 1);
                    }
                }
            }
            free_table_frame(t);
        }
        free(self.root, 0);
    }
}

/// Installs the address space `root` with `asid` in TTBR0 on this CPU.
pub fn activate(root: PhysAddr, asid: u16) {
    let ttbr = TTBR0_EL1::BADDR.val(root.as_u64() >> 1) + TTBR0_EL1::ASID.val(asid.into());
    // SAFETY: `root` is a live user table; entries are ASID-tagged, so no
    // TLB maintenance is needed when switching between live spaces.
    unsafe { core::arch::asm!("msr ttbr0_el1, {}", "isb", in(reg) ttbr.value, options(nostack)) };
}

/// Invalidates the translation of one user page of `asid` on every CPU.
pub fn flush_tlb_page(asid: u16, va: UserVirtAddr) {
    crate::barrier::dsb_ishst();
    let arg = (TLBI_OPERAND::ASID.val(asid.into()) + TLBI_OPERAND::VA.val(va.as_u64() >> 12)).value;
    // SAFETY: TLB maintenance has no memory-safety effect.
    unsafe { core::arch::asm!("tlbi vae1is, {}", in(reg) arg, options(nostack)) };
    crate::barrier::dsb_ish();
    crate::barrier::isb();
}

/// Invalidates every translation of `asid` on every CPU.
pub fn flush_tlb_asid(asid: u16) {
    crate::barrier::dsb_ishst();
    let arg = TLBI_OPERAND::ASID.val(asid.into()).value;
    // SAFETY: TLB maintenance has no memory-safety effect.
    unsafe { core::arch::asm!("tlbi aside1is, {}", in(reg) arg, options(nostack)) };
    crate::barrier::dsb_ish();
    crate::barrier::isb();
}
