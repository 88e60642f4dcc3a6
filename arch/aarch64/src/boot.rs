//! Kernel entry: the arm64 `Image` header, the drop from EL2 to EL1, the
//! early page tables, and the switch to the kernel's high virtual addresses,
//! for the boot CPU (`primary_entry`) and the others (`secondary_entry`).
//!
//! Like Linux's `head.S`, this runs with the MMU off at the physical address
//! the loader chose; only PC-relative addressing (`adr`, `adrp`) is used until
//! the branch to a linked (virtual) address. The image is linked at
//! `KIMAGE_VADDR + TEXT_OFFSET` and must be loaded at a 2 MiB aligned
//! physical base + `TEXT_OFFSET`, which the header's flags ask for and which
//! both QEMU and the Pi firmware honour.

use crate::cpu::SCTLR_EL1_EXT;
use crate::memory::{KIMAGE_VADDR, SZ_1G, SZ_2M, TEXT_OFFSET};
use crate::mmu::early;
use aarch64_cpu::registers::{CNTHCTL_EL2, CPACR_EL1, HCR_EL2, ICC_SRE_EL2, MDSCR_EL1, SCTLR_EL1, SPSR_EL2};
use core::sync::atomic::AtomicU64;
use tock_registers::register_bitfields;

/// What the boot CPU hands to a secondary CPU before releasing it; read by
/// `secondary_entry` with the MMU (and so the data cache) off, which is why
/// the boot CPU cleans it to the point of coherency first.
#[repr(C)]
pub struct SecondaryData {
    /// Physical address of the kernel's final TTBR1 root table.
    pub ttbr1: AtomicU64,
    /// Initial stack pointer (virtual).
    pub stack_top: AtomicU64,
    /// Logical CPU number.
    pub cpu: AtomicU64,
}

/// The one hand-over block; CPUs are brought up one at a time.
#[no_mangle]
pub static secondary_data: SecondaryData = SecondaryData {
    ttbr1: AtomicU64::new(0),
    stack_top: AtomicU64::new(0),
    cpu: AtomicU64::new(0),
};

/// SCTLR_EL1 with the MMU and caches off: the state both entry paths set
/// before building or loading page tables.
const SCTLR_MMU_OFF: u64 = SCTLR_EL1::EE::LittleEndian.value
    | SCTLR_EL1::E0E::LittleEndian.value
    | SCTLR_EL1::M::Disable.value
    | SCTLR_EL1::C::NonCacheable.value
    | SCTLR_EL1::I::NonCacheable.value
    | SCTLR_RES1;

/// SCTLR_EL1 bits that are RES1 in ARMv8.0: set, later CPUs behave as
/// ARMv8.0 did (SPAN = 1 leaves PAN alone on entry until `enable_pan`).
const SCTLR_RES1: u64 = SCTLR_EL1_EXT::LSMAOE::SET.value
    | SCTLR_EL1_EXT::NTLSMD::SET.value
    | SCTLR_EL1_EXT::SPAN::SET.value
    | SCTLR_EL1_EXT::EIS::SET.value
    | SCTLR_EL1_EXT::TSCXT::SET.value
    | SCTLR_EL1_EXT::EOS::SET.value;

/// SCTLR_EL1 once running: MMU, caches, SP alignment checks, and PAN on
/// exception entry left to the architecture default (SPAN = 1 is RES1 here).
/// As in Linux's INIT_SCTLR_EL1_MMU_ON, EL0 may read CTR_EL0, do cache
/// maintenance by VA (DC CVAU, IC IVAU: user JITs, `__clear_cache`), DC ZVA
/// (glibc's memset) and WFE; WFI still traps, and the kernel skips it.
const SCTLR_MMU_ON: u64 = SCTLR_MMU_OFF
    | SCTLR_EL1::M::Enable.value
    | SCTLR_EL1::C::Cacheable.value
    | SCTLR_EL1::I::Cacheable.value
    | SCTLR_EL1::SA::Enable.value
    | SCTLR_EL1::SA0::Enable.value
    | SCTLR_EL1::UCT::DontTrap.value
    | SCTLR_EL1::UCI::DontTrap.value
    | SCTLR_EL1::DZE::DontTrap.value
    | SCTLR_EL1::NTWE::DontTrap.value;

/// HCR_EL2: EL1 runs AArch64, and nothing is trapped to EL2.
const HCR_EL2_VAL: u64 = HCR_EL2::RW::EL1IsAarch64.value;

/// CNTHCTL_EL2: EL1 may read the physical counter and use the physical timer.
const CNTHCTL_EL2_VAL: u64 = CNTHCTL_EL2::EL1PCEN::SET.value | CNTHCTL_EL2::EL1PCTEN::SET.value;

register_bitfields! {u64,
    /// CPTR_EL2 with HCR_EL2.E2H = 0 (ARM ARM D17.2.32), which
    /// aarch64-cpu's `CPTR_EL2` declares only in part.
    CPTR_EL2_NVHE [
        /// Trap FP/SIMD (and SVE) to EL2.
        TFP OFFSET(10) NUMBITS(1) [],
        /// RES1.
        RES1_13_12 OFFSET(12) NUMBITS(2) [Ones = 0b11],
        /// RES1.
        RES1_9_0 OFFSET(0) NUMBITS(10) [Ones = 0x3ff]
    ]
}

register_bitfields! {u64,
    /// The ID_AA64PFR0_EL1 field aarch64-cpu lacks.
    ID_AA64PFR0_EXT [
        /// GIC system register interface: 0 none, 1 GICv3/4, 3 GICv4.1.
        GIC OFFSET(24) NUMBITS(4) []
    ]
}

/// CPTR_EL2 with its RES1 bits and no FP/SIMD trap.
const CPTR_EL2_VAL: u64 = CPTR_EL2_NVHE::RES1_13_12::Ones.value | CPTR_EL2_NVHE::RES1_9_0::Ones.value;

/// SPSR_EL2 for the `eret` to EL1: EL1h with all of DAIF masked.
const SPSR_EL2_VAL: u64 = SPSR_EL2::D::Masked.value
    | SPSR_EL2::A::Masked.value
    | SPSR_EL2::I::Masked.value
    | SPSR_EL2::F::Masked.value
    | SPSR_EL2::M::EL1h.value;

/// CPACR_EL1: FP/SIMD is not trapped. The kernel itself is built for a
/// soft-float target and never touches these registers; EL0 may.
const CPACR_EL1_VAL: u64 = CPACR_EL1::FPEN::TrapNothing.value;

/// MDSCR_EL1: EL0 access to the debug communications channel (MDCCSR_EL0,
/// DBGDTR*_EL0) traps, so a user program gets SIGILL for it as on Linux
/// (`__cpu_setup` sets TDCC); no debug exceptions are enabled yet.
const MDSCR_EL1_VAL: u64 = MDSCR_EL1::TDCC::SET.value;

/// The arm64 Image header flags: little-endian, 4 KiB pages, image placed at
/// a 2 MiB aligned base + text_offset (bit 3 clear).
const IMAGE_FLAGS: u64 = 0b0010;

core::arch::global_asm!(
    r#"
.section .head.text, "ax"
.global _start
_start:
    b       primary_entry
    .long   0
    .quad   {text_offset}
    .quad   _kernel_size_le
    .quad   {image_flags}
    .quad   0
    .quad   0
    .quad   0
    .ascii  "ARM\x64"
    .long   0

// x0 = physical address of the device tree blob.
.type primary_entry, %function
primary_entry:
    mov     x21, x0                         // DTB
    bl      el2_to_el1
    isb
    mrs     x22, cntvct_el0                 // boot timestamp, with CNTVOFF_EL2 set
    bl      clear_bss
    bl      create_early_page_tables        // x23 = physical base
    adrp    x0, {tables}
    bl      enable_mmu
    ldr     x8, =primary_switched
    br      x8

// Drops from EL2 to EL1 if entered at EL2; leaves EL1 with the MMU off.
.type el2_to_el1, %function
el2_to_el1:
    ldr     x0, ={mdscr}
    msr     mdscr_el1, x0
    ldr     x0, ={sctlr_off}
    mrs     x1, CurrentEL
    cmp     x1, #(2 << 2)
    b.eq    1f
    msr     sctlr_el1, x0
    ldr     x0, ={cpacr}
    msr     cpacr_el1, x0
    isb
    ret
1:  msr     sctlr_el1, x0
    ldr     x0, ={cpacr}
    msr     cpacr_el1, x0
    // A GICv3 CPU interface: let EL1 use its system registers.
    mrs     x0, id_aa64pfr0_el1
    ubfx    x0, x0, #{pfr0_gic_shift}, #{pfr0_gic_width}
    cbz     x0, 3f
    mrs     x0, S3_4_C12_C9_5               // ICC_SRE_EL2
    ldr     x1, ={icc_sre_el2}              // SRE, and Enable: EL1 may use it
    orr     x0, x0, x1
    msr     S3_4_C12_C9_5, x0
    isb
    msr     S3_4_C12_C11_0, xzr             // ICH_HCR_EL2
3:  ldr     x0, ={hcr}
    msr     hcr_el2, x0
    ldr     x0, ={cnthctl}
    msr     cnthctl_el2, x0
    msr     cntvoff_el2, xzr
    ldr     x0, ={cptr}
    msr     cptr_el2, x0
    msr     hstr_el2, xzr
    mrs     x0, midr_el1
    msr     vpidr_el2, x0
    mrs     x0, mpidr_el1
    msr     vmpidr_el2, x0
    ldr     x0, ={spsr}
    msr     spsr_el2, x0
    msr     elr_el2, x30
    isb
    eret

.type clear_bss, %function
clear_bss:
    adrp    x0, __bss_start
    add     x0, x0, :lo12:__bss_start
    adrp    x1, __bss_end
    add     x1, x1, :lo12:__bss_end
1:  cmp     x0, x1
    b.hs    2f
    stp     xzr, xzr, [x0], #16
    b       1b
2:  ret

// Early tables: TTBR1 maps the whole image with 2 MiB blocks at
// KIMAGE_VADDR; TTBR0 identity-maps the 1 GiB blocks holding the image and
// the DTB (both Normal memory), so that the instructions right after the MMU
// comes on, and the DTB, stay reachable. Returns x23 = 2 MiB aligned
// physical base of the image. Assumes RAM below 512 GiB (one level-0 entry).
.type create_early_page_tables, %function
create_early_page_tables:
    adrp    x23, _text
    and     x23, x23, #~({sz_2m} - 1)
    ldr     x5, ={block_attrs}
    // TTBR1: L0[511] -> L1, L1[510] -> L2, L2[i] -> base + i * 2 MiB.
    adrp    x1, {tables}
    add     x2, x1, #({off_l1} >> 12), lsl #12
    orr     x3, x2, #3
    str     x3, [x1, #({kimage_l0} * 8)]
    add     x4, x1, #({off_l2} >> 12), lsl #12
    orr     x3, x4, #3
    str     x3, [x2, #({kimage_l1} * 8)]
    adrp    x6, _end
    sub     x6, x6, x23
    sub     x6, x6, #1                      // blocks = (size - 1) / 2M + 1
    lsr     x6, x6, #21
    add     x6, x6, #1
    orr     x7, x5, x23
1:  str     x7, [x4], #8
    add     x7, x7, #{sz_2m}
    subs    x6, x6, #1
    b.ne    1b
    // TTBR0: L0[0] -> L1, L1[pa >> 30] -> 1 GiB block, for the image and DTB.
    adrp    x1, {tables}
    add     x2, x1, #({off_idmap_l1} >> 12), lsl #12
    add     x1, x1, #({off_idmap_l0} >> 12), lsl #12
    orr     x3, x2, #3
    str     x3, [x1]
    lsr     x3, x23, #30
    and     x3, x3, #511
    and     x7, x23, #~({sz_1g} - 1)
    orr     x7, x7, x5
    str     x7, [x2, x3, lsl #3]
    lsr     x3, x21, #30
    and     x3, x3, #511
    and     x7, x21, #~({sz_1g} - 1)
    orr     x7, x7, x5
    str     x7, [x2, x3, lsl #3]
    // The tables were written with the data cache off: drop any stale
    // lines a loader may have left, so table walks see what we wrote.
    adrp    x0, {tables}
    add     x1, x0, #({off_end} >> 12), lsl #12
    mrs     x3, ctr_el0
    ubfx    x3, x3, #16, #4
    mov     x4, #4
    lsl     x4, x4, x3
1:  dc      ivac, x0
    add     x0, x0, x4
    cmp     x0, x1
    b.lo    1b
    dsb     sy
    ret

// x0 = physical address of the TTBR1 root. Turns the MMU on with the
// identity map in TTBR0; returns (to a physical address, via the idmap).
.type enable_mmu, %function
enable_mmu:
    ldr     x1, ={mair}
    msr     mair_el1, x1
    ldr     x1, ={tcr}
    mrs     x2, id_aa64mmfr0_el1
    and     x2, x2, #0xf
    cmp     x2, #5
    mov     x3, #5
    csel    x2, x2, x3, ls                  // at most 48-bit PAs
    bfi     x1, x2, #{ips_shift}, #3
    msr     tcr_el1, x1
    adrp    x1, {tables}
    add     x1, x1, #({off_idmap_l0} >> 12), lsl #12
    msr     ttbr0_el1, x1
    msr     ttbr1_el1, x0
    isb
    tlbi    vmalle1
    dsb     nsh
    isb
    ldr     x1, ={sctlr_on}
    msr     sctlr_el1, x1
    isb
    ic      iallu
    dsb     nsh
    isb
    ret

// x0 = context id (PSCI) or garbage (spin-table): unused; the boot CPU
// fills `secondary_data` and brings CPUs up one at a time.
.global secondary_entry
.type secondary_entry, %function
secondary_entry:
    bl      el2_to_el1
    adrp    x0, secondary_data
    ldr     x0, [x0, :lo12:secondary_data]  // final TTBR1 root
    bl      enable_mmu
    ldr     x8, =secondary_switched
    br      x8
.ltorg

.section .text, "ax"
.type primary_switched, %function
primary_switched:
    adrp    x0, init_stack_top
    add     x0, x0, :lo12:init_stack_top
    mov     sp, x0
    adrp    x0, vectors
    add     x0, x0, :lo12:vectors
    msr     vbar_el1, x0
    isb
    mov     x29, xzr
    mov     x30, xzr
    mov     x0, x21
    mov     x1, x22
    mov     x2, x23
    bl      start_kernel
1:  wfe
    b       1b

.type secondary_switched, %function
secondary_switched:
    adrp    x0, secondary_data
    add     x0, x0, :lo12:secondary_data
    ldr     x1, [x0, #8]
    mov     sp, x1
    adrp    x1, vectors
    add     x1, x1, :lo12:vectors
    msr     vbar_el1, x1
    isb
    mov     x29, xzr
    mov     x30, xzr
    ldr     x0, [x0, #16]
    bl      secondary_start_kernel
1:  wfe
    b       1b

// Replaces TTBR1 with x0 (physical) while running from the identity map, so
// that no TLB ever holds entries from both the old and the new tables for
// the same address (Linux's idmap_cpu_replace_ttbr1). x1 = an all-invalid
// table. Uses no stack; callers branch to its physical address.
.section .idmap.text, "ax"
.global __cpu_replace_ttbr1
.type __cpu_replace_ttbr1, %function
__cpu_replace_ttbr1:
    msr     ttbr1_el1, x1
    isb
    tlbi    vmalle1
    dsb     nsh
    isb
    msr     ttbr1_el1, x0
    isb
    ret

.section .bss..init_stack, "aw", @nobits
.balign {kstack_align}
init_stack:
    .space  {init_stack_size}
.global init_stack_top
init_stack_top:
"#,
    text_offset = const TEXT_OFFSET,
    image_flags = const IMAGE_FLAGS,
    sctlr_off = const SCTLR_MMU_OFF,
    sctlr_on = const SCTLR_MMU_ON,
    cpacr = const CPACR_EL1_VAL,
    mdscr = const MDSCR_EL1_VAL,
    hcr = const HCR_EL2_VAL,
    cnthctl = const CNTHCTL_EL2_VAL,
    cptr = const CPTR_EL2_VAL,
    icc_sre_el2 = const ICC_SRE_EL2::SRE::SET.value | ICC_SRE_EL2::ENABLE::SET.value,
    pfr0_gic_shift = const ID_AA64PFR0_EXT::GIC.shift,
    pfr0_gic_width = const ID_AA64PFR0_EXT::GIC.mask.count_ones(),
    spsr = const SPSR_EL2_VAL,
    sz_2m = const SZ_2M,
    sz_1g = const SZ_1G,
    block_attrs = const early::BLOCK_ATTRS,
    kimage_l0 = const (KIMAGE_VADDR >> 39) & 511,
    kimage_l1 = const (KIMAGE_VADDR >> 30) & 511,
    tables = sym early::EARLY_TABLES,
    off_l1 = const early::OFF_L1,
    off_l2 = const early::OFF_L2,
    off_idmap_l0 = const early::OFF_IDMAP_L0,
    off_idmap_l1 = const early::OFF_IDMAP_L1,
    off_end = const early::OFF_END,
    mair = const crate::mmu::MAIR_VALUE,
    tcr = const crate::mmu::TCR_VALUE,
    ips_shift = const 32,
    init_stack_size = const INIT_STACK_SIZE,
    kstack_align = const crate::memory::KSTACK_ALIGN,
);

/// Size of the boot CPU's stack; like every kernel stack, at most
/// `KSTACK_MAX_SIZE` and `KSTACK_ALIGN` aligned, for the vectors' overflow
/// test (it has no guard page below it, being part of the image).
pub const INIT_STACK_SIZE: usize = 64 * 1024;
const _: () = assert!(INIT_STACK_SIZE <= crate::memory::KSTACK_MAX_SIZE);

extern "C" {
    static init_stack_top: u8;
}

/// Bounds of the boot CPU's stack, for the unwinder.
pub fn init_stack_bounds() -> (usize, usize) {
    let top = core::ptr::addr_of!(init_stack_top) as usize;
    (top - INIT_STACK_SIZE, top)
}

/// Why the DTB handed over at entry cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtbError {
    /// x0 was 0.
    Missing,
    /// Not 8-byte aligned.
    Misaligned(u64),
    /// No FDT magic at the address.
    BadMagic(u64),
    /// Its size runs past the memory mapped for it.
    TooLarge(usize),
    /// Not reachable through the linear map.
    NotInRam(u64),
}

const FDT_MAGIC: u32 = 0xd00d_feed;
/// Largest DTB accepted (Linux's MAX_FDT_SIZE).
pub const MAX_FDT_SIZE: usize = 2 << 20;

/// Where a DTB view reads through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtbMapping {
    /// The boot identity map (only before `paging_init`).
    Idmap,
    /// The linear map (after `paging_init`).
    Linear,
}

/// A view of the DTB at physical address `pa`, checked for magic and size.
///
/// # Safety
/// With `Idmap`, the view must not be used after `paging_init`. With
/// `Linear`, the DTB's memory must be kept from the frame allocator (it is
/// never written), so that the `'static` view stays valid.
pub unsafe fn dtb_view(pa: u64, via: DtbMapping) -> Result<&'static [u8], DtbError> {
    if pa == 0 {
        return Err(DtbError::Missing);
    }
    if !pa.is_multiple_of(8) {
        return Err(DtbError::Misaligned(pa));
    }
    let va = match via {
        // The entry code maps the whole 1 GiB block holding `pa`.
        DtbMapping::Idmap => pa as usize,
        DtbMapping::Linear => {
            let va = crate::addr::PhysAddr::new(pa)
                .ok_or(DtbError::NotInRam(pa))?
                .to_linear();
            crate::mmu::translate(va).ok_or(DtbError::NotInRam(pa))?;
            va.as_usize()
        }
    };
    // SAFETY: the first 8 bytes at `va` are mapped (see above) and the
    // address is aligned.
    let head = unsafe { core::ptr::read_volatile(va as *const [u8; 8]) };
    if u32::from_be_bytes([head[0], head[1], head[2], head[3]]) != FDT_MAGIC {
        return Err(DtbError::BadMagic(pa));
    }
    let size = u32::from_be_bytes([head[4], head[5], head[6], head[7]]) as usize;
    let limit = match via {
        DtbMapping::Idmap => SZ_1G - (pa as usize & (SZ_1G - 1)),
        DtbMapping::Linear => MAX_FDT_SIZE,
    };
    if size > MAX_FDT_SIZE || size > limit {
        return Err(DtbError::TooLarge(size));
    }
    let last = crate::addr::VirtAddr::new(va + size.saturating_sub(1));
    if via == DtbMapping::Linear && last.and_then(crate::mmu::translate).is_none() {
        return Err(DtbError::NotInRam(pa));
    }
    // SAFETY: `[va, va + size)` is mapped (checked above) and, per the
    // contract, stays valid and unchanged for as long as the view is used.
    Ok(unsafe { core::slice::from_raw_parts(va as *const u8, size) })
}
