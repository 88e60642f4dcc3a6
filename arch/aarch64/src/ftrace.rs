//! The ftrace call site and trampoline (Linux's arch/arm64/kernel/ftrace.c
//! and entry-ftrace.S, with DYNAMIC_FTRACE_WITH_ARGS and _WITH_CALL_OPS).
//!
//! tools/kbuild compiles the kernel with `-Zpatchable-function-entry=4,2`
//! and 8-byte function alignment, so each traceable function looks like
//!
//! ```text
//! func - 8:  nop          \ the site's ops literal: a pointer to the
//! func - 4:  nop          / FtraceOps whose `func` the trampoline calls
//! func + 0:  nop          -> mov x9, x30      (at boot, for good)
//! func + 4:  nop          -> bl ftrace_caller (while traced)
//! ```
//!
//! The literal is data, never executed (the code before it ends in a
//! return or branch). Once `mov x9, x30` is in place, turning a site on
//! and off is a NOP<->BL swap, which the architecture allows on live code.
//!
//! `ftrace_caller` counts itself in this CPU's [`ftrace_depth`] before it
//! loads a site's literal and until it is done with the ops that names:
//! the kernel side waits for every CPU's count to be seen at zero after a
//! `stop_machine` that moved literals ([`ftrace_depth`]) before it frees
//! or reuses what they named. It masks interrupts for the call, unless the
//! ops asks for interrupts as the traced function had them
//! ([`FTRACE_OPS_FL_UNMASKED`]): every masking is paid back with an
//! unmasking write to DAIF, which a kprobe's hot path does without.
//!
//! `ftrace_caller` calls one handler with a direct `BL` instead of its
//! `BLR`: [`FTRACE_HOT_FUNC`], which the kernel defines (a kprobe's event
//! at a function's entry, the hit it promises to make cheapest). Both live
//! in `.text.ftrace_hot`, which the link script puts at the start of a
//! 4 KiB page: QEMU's TCG chains a direct branch within a page, while an
//! indirect one (or one to another page) costs a translation-block lookup
//! of about 20 ns, a tenth of that hit. The trampoline compares the ops'
//! handler with the symbol, so an ops names any handler as before.

use crate::ptrace::PtRegs;
use core::mem::{offset_of, size_of};

/// Bytes before a function's entry holding the ops literal.
pub const FTRACE_PREFIX_BYTES: usize = 8;
/// Bytes of the patch site at a function's entry (`mov x9, x30; bl`).
pub const FTRACE_ENTRY_BYTES: usize = 8;
/// Offset of the site's `bl` from the function's entry (Linux's `rec->ip`
/// is this instruction).
pub const FTRACE_BL_OFFSET: usize = 4;

/// The registers of a traced function at its entry, as the trampoline
/// saved them (Linux's `struct __arch_ftrace_regs`): what a tracer may read
/// (the arguments, the return address) and change (`lr` to hook the
/// return, `pc` to divert the call).
///
/// Laid out as [`PtRegs`], word for word, so that a kprobe on the site
/// hands its handlers this frame as their `pt_regs`
/// ([`FtraceRegs::as_pt_regs_mut`]) instead of a copy: `x9..x18` are
/// `scratch`, `x29`/`x30` are `fp`/`lr`, DAIF sits where `pstate` is.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FtraceRegs {
    /// x0..x8: the arguments and the indirect result register.
    pub regs: [u64; 9],
    /// x9..x18: temporaries with no meaning at a function's entry (x9
    /// holds the parent there). Zero for an ops with
    /// [`FTRACE_OPS_FL_SAVE_REGS`], stale stack words for the others;
    /// never restored.
    pub scratch: [u64; 10],
    /// x19..x28, the caller's callee-saved registers, so that a kprobe on
    /// the site sees every register a `BRK` probe would. Saved, and
    /// restored from here, only for an ops with
    /// [`FTRACE_OPS_FL_SAVE_REGS`]; for the others they hold stale stack
    /// words (their callbacks keep x19..x28 themselves, as the AAPCS
    /// says, so the function gets them back untouched).
    pub callee_saved: [u64; 10],
    /// x29 at the call.
    pub fp: u64,
    /// x30 at the call: the traced function's return address (the parent).
    pub lr: u64,
    /// sp at the call.
    pub sp: u64,
    /// Where the trampoline returns: the instruction after the site's `bl`.
    pub pc: u64,
    /// DAIF of the traced function (restored on the way back; only its
    /// DAIF bits count).
    pub daif: u64,
    /// `pt_regs`' `orig_x0`, `syscallno` and `stackframe`: not saved by
    /// the trampoline; room for a kprobe handler to fill.
    pub orig_x0: u64,
    /// See `orig_x0`.
    pub syscallno: i64,
    /// See `orig_x0`.
    pub stackframe: [u64; 2],
}

// The frame is a `PtRegs`, field for field.
const _: () = {
    use core::mem::offset_of as off;
    assert!(size_of::<FtraceRegs>() == size_of::<PtRegs>());
    assert!(off!(FtraceRegs, regs) == off!(PtRegs, regs));
    assert!(off!(FtraceRegs, scratch) == off!(PtRegs, regs) + 9 * 8);
    assert!(off!(FtraceRegs, callee_saved) == off!(PtRegs, regs) + 19 * 8);
    assert!(off!(FtraceRegs, fp) == off!(PtRegs, regs) + 29 * 8);
    assert!(off!(FtraceRegs, lr) == off!(PtRegs, regs) + 30 * 8);
    assert!(off!(FtraceRegs, sp) == off!(PtRegs, sp));
    assert!(off!(FtraceRegs, pc) == off!(PtRegs, pc));
    assert!(off!(FtraceRegs, daif) == off!(PtRegs, pstate));
    assert!(off!(FtraceRegs, orig_x0) == off!(PtRegs, orig_x0));
    assert!(off!(FtraceRegs, syscallno) == off!(PtRegs, syscallno));
    assert!(off!(FtraceRegs, stackframe) == off!(PtRegs, stackframe));
    // Stored in pairs by ftrace_caller's path for FTRACE_HOT_FUNC.
    assert!(off!(FtraceRegs, lr) == off!(FtraceRegs, fp) + 8);
    assert!(off!(FtraceRegs, pc) == off!(FtraceRegs, sp) + 8);
};

/// Offset in an ops of the word whose flags the trampoline reads (the
/// kernel's `FtraceOps` asserts it has its flags there, right after its
/// handler).
pub const FTRACE_OPS_FLAGS_OFFSET: usize = 8;
/// Ops flag: the trampoline saves x19..x28 into [`FtraceRegs`] and takes
/// them back from there (Linux's `FTRACE_OPS_FL_SAVE_REGS`, which selects
/// `ftrace_regs_caller`). Without it the trampoline saves what Linux's
/// `ftrace_caller` saves: the argument registers, fp, lr, sp and pc.
pub const FTRACE_OPS_FL_SAVE_REGS: u64 = 1 << 0;
/// Ops flag: the trampoline calls the ops with interrupts as the traced
/// function had them, instead of masked. Its handler must cope with
/// interrupts (and their traced functions) arriving while it runs.
pub const FTRACE_OPS_FL_UNMASKED: u64 = 1 << 1;
/// Ops flag, with [`FTRACE_OPS_FL_UNMASKED`] only: the handler reads no
/// [`FtraceRegs::daif`], so the trampoline does not read DAIF for it (an
/// MRS that QEMU's TCG runs through a helper, about 8 ns); the slot holds
/// a stale word.
pub const FTRACE_OPS_FL_NO_DAIF: u64 = 1 << 2;

/// The symbol of the one ops handler that `ftrace_caller` calls directly
/// (see the module comment). The kernel defines a function of this name
/// in the section [`FTRACE_HOT_SECTION`], with the handler's signature
/// (`extern "C" fn(ip, parent_ip, ops, regs)`), and names it only from an
/// ops with [`FTRACE_OPS_FL_UNMASKED`] and [`FTRACE_OPS_FL_NO_DAIF`] and
/// without [`FTRACE_OPS_FL_SAVE_REGS`], and that reads no argument but
/// the ops (its `ip` and `parent_ip` are not set; its regs frame holds
/// x0..x8 only): the trampoline calls it on a short path that does not
/// read the flags, saves x0..x8 and the frame records, and reads nothing
/// back but those.
pub const FTRACE_HOT_FUNC: &str = "ftrace_hot_func";
/// The section that holds `ftrace_caller` and [`FTRACE_HOT_FUNC`].
pub const FTRACE_HOT_SECTION: &str = ".text.ftrace_hot";

/// Most CPUs counted by [`ftrace_depth`] (`TPIDR_EL1` holds a CPU number
/// below this).
pub const FTRACE_MAX_CPUS: usize = crate::entry::MAX_CPUS;

/// One CPU's count of `ftrace_caller` calls it is inside, alone on its
/// cache line (the other CPUs read it only while an update waits).
#[repr(C, align(64))]
pub struct FtraceDepth(core::sync::atomic::AtomicU64);

const FTRACE_DEPTH_SHIFT: u32 = 6;
const _: () = assert!(size_of::<FtraceDepth>() == 1 << FTRACE_DEPTH_SHIFT);

/// Per CPU, how many `ftrace_caller` calls it is inside (nested when an
/// interrupt inside an unmasked call hits a traced function). Only the CPU
/// itself changes its count, with a plain load and store: an interrupt
/// between them puts back what it added, and kernel code is never
/// preempted (or moved to another CPU) in the middle.
static FTRACE_DEPTH: [FtraceDepth; FTRACE_MAX_CPUS] =
    [const { FtraceDepth(core::sync::atomic::AtomicU64::new(0)) }; FTRACE_MAX_CPUS];

/// How many `ftrace_caller` calls CPU `cpu` is inside now (0 for a CPU
/// number out of range). A call that this reads as finished is done with
/// the ops it loaded (the count drops with a release store), and a call
/// that began after a `stop_machine` loaded the literals that one left.
pub fn ftrace_depth(cpu: usize) -> u64 {
    FTRACE_DEPTH
        .get(cpu)
        .map_or(0, |d| d.0.load(core::sync::atomic::Ordering::Acquire))
}

impl FtraceRegs {
    /// Argument `n` (x0..x7), as Linux's `ftrace_regs_get_argument`.
    pub fn argument(&self, n: usize) -> Option<u64> {
        (n < 8).then(|| self.regs[n])
    }

    /// The traced function's return address.
    pub fn return_address(&self) -> u64 {
        self.lr
    }

    /// The frame seen as the `pt_regs` it is laid out as: `regs[n]` is
    /// xn, `pstate` the DAIF word (a kprobe handler that hands it on puts
    /// the mode bits in and takes them out again).
    pub fn as_pt_regs_mut(&mut self) -> &mut PtRegs {
        // SAFETY: both types are repr(C), of the same size, with every
        // field at the same offset (asserted above) and of an integer type
        // of the same width, so every bit pattern of one is a valid value
        // of the other; the borrow of `self` covers the whole result.
        unsafe { &mut *(self as *mut FtraceRegs).cast::<PtRegs>() }
    }
}

/// Bytes of the frame `ftrace_caller` builds: the registers, two frame
/// records (the call site's and its own) and the ops (16 bytes, keeping sp
/// 16-byte aligned).
const FREGS_SIZE: usize = size_of::<FtraceRegs>();
const _: () = assert!(FREGS_SIZE.is_multiple_of(16));
const FRAME_SIZE: usize = FREGS_SIZE + 48;
/// Where the frame keeps the ops across the call (for the restore).
const FRAME_OPS: usize = FREGS_SIZE + 32;
/// Where it keeps the address of this CPU's depth count (the word after
/// the ops, in the same 16 bytes).
const FRAME_DEPTH: usize = FRAME_OPS + 8;

core::arch::global_asm!(
    ".section .text.ftrace_hot, \"ax\"",
    ".global ftrace_caller",
    ".type ftrace_caller, %function",
    // x0..x8 to and from the frame at sp.
    ".macro ftrace_save_args",
    "stp x0, x1, [sp, #{x0} + 0]",
    "stp x2, x3, [sp, #{x0} + 16]",
    "stp x4, x5, [sp, #{x0} + 32]",
    "stp x6, x7, [sp, #{x0} + 48]",
    "str x8, [sp, #{x0} + 64]",
    ".endm",
    ".macro ftrace_restore_args",
    "ldp x0, x1, [sp, #{x0} + 0]",
    "ldp x2, x3, [sp, #{x0} + 16]",
    "ldp x4, x5, [sp, #{x0} + 32]",
    "ldp x6, x7, [sp, #{x0} + 48]",
    "ldr x8, [sp, #{x0} + 64]",
    ".endm",
    // Frame records: the call site's (its caller is in x9), then ours, so
    // that backtraces from a tracer show the traced function and its
    // parent; then the handler's arguments (ip, parent_ip, ops, regs).
    // This CPU's depth count (its address in x12) down by one, as a
    // release (as arch::spinlock's): every load and store of the call
    // ordered before the count's drop, without STLR's store-to-load
    // order, which QEMU's TCG pays with a locked host instruction.
    ".macro ftrace_count_out",
    "ldr x11, [x12]",
    "sub x11, x11, #1",
    "dmb ishld",
    "dmb ishst",
    "str x11, [x12]",
    ".endm",
    ".macro ftrace_frame_records",
    "stp x29, x9, [sp, #{fregs} + 16]",
    "add x29, sp, #{fregs} + 16",
    "stp x29, x30, [sp, #{fregs}]",
    "add x29, sp, #{fregs}",
    ".endm",
    ".macro ftrace_frame_and_call_args",
    "ftrace_frame_records",
    "sub x0, x30, #4",
    "mov x1, x9",
    "mov x2, x11",
    "mov x3, sp",
    ".endm",
    ".balign 8",
    "ftrace_caller:",
    // Counted in first: from the literal load until the ops is left, an
    // update that moved the literal waits for this CPU (see the module
    // comment).
    "mrs x10, tpidr_el1",
    "adrp x14, {depth}",
    "add x14, x14, :lo12:{depth}",
    "add x14, x14, x10, lsl #{depth_shift}",
    "ldr x12, [x14]",
    "add x12, x12, #1",
    "str x12, [x14]",
    // x30 = func + 8 (8-aligned), the literal is at func - 8.
    "ldr x11, [x30, #-16]",
    // The ops' first field is its handler: (ip, parent_ip, ops, regs).
    "ldr x15, [x11]",
    "adr x16, ftrace_hot_func",
    "cmp x15, x16",
    "b.eq 8f",
    "ldr x13, [x11, #{flags}]",
    "tbnz x13, #{no_daif_bit}, 5f",
    "mrs x10, daif",
    "5:",
    "tbnz x13, #{unmasked_bit}, 3f",
    "msr daifset, #3",
    "3:",
    "mov x12, sp",
    "sub sp, sp, #{frame}",
    "ftrace_save_args",
    "str x10, [sp, #{daif}]",
    "str x29, [sp, #{fp}]",
    "str x9, [sp, #{lr}]",
    "str x12, [sp, #{sp}]",
    "str x30, [sp, #{pc}]",
    "str x11, [sp, #{ops}]",
    "str x14, [sp, #{depth_slot}]",
    "tbz x13, #{save_regs_bit}, 1f",
    "stp x19, x20, [sp, #{x19} + 0]",
    "stp x21, x22, [sp, #{x19} + 16]",
    "stp x23, x24, [sp, #{x19} + 32]",
    "stp x25, x26, [sp, #{x19} + 48]",
    "stp x27, x28, [sp, #{x19} + 64]",
    "stp xzr, xzr, [sp, #{x9} + 0]",
    "stp xzr, xzr, [sp, #{x9} + 16]",
    "stp xzr, xzr, [sp, #{x9} + 32]",
    "stp xzr, xzr, [sp, #{x9} + 48]",
    "stp xzr, xzr, [sp, #{x9} + 64]",
    "1:",
    "ftrace_frame_and_call_args",
    "blr x15",
    // Every saved register comes from the frame, which a tracer may have
    // changed.
    "ldr x11, [sp, #{ops}]",
    "ldr x13, [x11, #{flags}]",
    "tbz x13, #{save_regs_bit}, 2f",
    "ldp x19, x20, [sp, #{x19} + 0]",
    "ldp x21, x22, [sp, #{x19} + 16]",
    "ldp x23, x24, [sp, #{x19} + 32]",
    "ldp x25, x26, [sp, #{x19} + 48]",
    "ldp x27, x28, [sp, #{x19} + 64]",
    "2:",
    "ftrace_restore_args",
    "ldr x29, [sp, #{fp}]",
    "ldr x30, [sp, #{lr}]",
    "ldr x9, [sp, #{pc}]",
    "ldr x10, [sp, #{daif}]",
    "ldr x12, [sp, #{depth_slot}]",
    "add sp, sp, #{frame}",
    // Counted out, done with the ops: released, so that an update that
    // reads the count at zero frees nothing this call still reads. (The
    // CPU is the one counted in: kernel code is not moved off it.)
    "ftrace_count_out",
    "tbnz x13, #{unmasked_bit}, 4f",
    "msr daif, x10",
    "4:",
    "ret x9",
    // FTRACE_HOT_FUNC's path: it reads only its callsite (x2), so the
    // frame holds the argument registers, for the way back, and the frame
    // records, for backtraces; fp, the parent and the return address come
    // back from those records, which no handler changes. Its ip, parent
    // and regs arguments are left as they are (x0, x1: integers it
    // ignores; x3: the frame, as for any handler).
    // The count's address is worked out again after the call rather than
    // kept in the frame: four ALU instructions cost less than a store and
    // a load under QEMU's TCG (each memory access pays a TLB look-up).
    "8:",
    "sub sp, sp, #{frame}",
    "ftrace_save_args",
    "ftrace_frame_records",
    "mov x2, x11",
    "mov x3, sp",
    "bl ftrace_hot_func",
    "ftrace_restore_args",
    "ldp x29, x30, [sp, #{fregs} + 16]",
    "ldr x9, [sp, #{fregs} + 8]",
    "add sp, sp, #{frame}",
    "mrs x10, tpidr_el1",
    "adrp x12, {depth}",
    "add x12, x12, :lo12:{depth}",
    "add x12, x12, x10, lsl #{depth_shift}",
    "ftrace_count_out",
    "ret x9",
    ".size ftrace_caller, . - ftrace_caller",
    depth = sym FTRACE_DEPTH,
    depth_slot = const FRAME_DEPTH,
    depth_shift = const FTRACE_DEPTH_SHIFT,
    unmasked_bit = const FTRACE_OPS_FL_UNMASKED.trailing_zeros(),
    no_daif_bit = const FTRACE_OPS_FL_NO_DAIF.trailing_zeros(),
    fregs = const FREGS_SIZE,
    frame = const FRAME_SIZE,
    ops = const FRAME_OPS,
    flags = const FTRACE_OPS_FLAGS_OFFSET,
    save_regs_bit = const FTRACE_OPS_FL_SAVE_REGS.trailing_zeros(),
    x0 = const offset_of!(FtraceRegs, regs),
    daif = const offset_of!(FtraceRegs, daif),
    fp = const offset_of!(FtraceRegs, fp),
    lr = const offset_of!(FtraceRegs, lr),
    sp = const offset_of!(FtraceRegs, sp),
    pc = const offset_of!(FtraceRegs, pc),
    x19 = const offset_of!(FtraceRegs, callee_saved),
    x9 = const offset_of!(FtraceRegs, scratch),
);

/// The address of `ftrace_caller`.
pub fn ftrace_caller_addr() -> usize {
    extern "C" {
        fn ftrace_caller();
    }
    ftrace_caller as *const () as usize
}

/// `mov x9, x30` (ORR x9, xzr, x30), the first instruction of an
/// initialised site.
pub const MOV_X9_X30: u32 = 0xaa1e_03e9;

/// The registers of a hooked function at its return, as `return_to_handler`
/// saved them (Linux's `ftrace_regs` there): the return value registers,
/// which the handler may read and change, and what identifies the frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FtraceRetRegs {
    /// x0..x7: the return value (x0, or x0..x7 for aggregates), and x8.
    pub regs: [u64; 9],
    /// DAIF at the return (restored on the way out).
    pub daif: u64,
    /// x29 at the return: the caller's frame pointer, as at the call.
    pub fp: u64,
    /// sp at the return: the same as at the call.
    pub sp: u64,
}

impl FtraceRetRegs {
    /// The function's return value (x0), as Linux's
    /// `ftrace_regs_get_return_value`.
    pub fn return_value(&self) -> u64 {
        self.regs[0]
    }
}

const RET_REGS_SIZE: usize = size_of::<FtraceRetRegs>();
const _: () = assert!(RET_REGS_SIZE.is_multiple_of(16));

// A function whose return address was hooked (function_graph, fprobe exit
// handlers) returns here instead of to its caller. The kernel's
// `ftrace_return_to_handler(regs)` pops the task's return stack and gives
// the real return address; x0..x8 (the results) are kept, and interrupts
// stay masked from the first instruction until the jump back, so that the
// pop and the handler run without nesting on this CPU. No frame record:
// an unwinder from the handler goes straight to the caller's frame.
core::arch::global_asm!(
    ".section .text",
    ".global return_to_handler",
    ".type return_to_handler, %function",
    ".balign 8",
    "return_to_handler:",
    "mrs x9, daif",
    "msr daifset, #3",
    "sub sp, sp, #{size}",
    "stp x0, x1, [sp, #{x0} + 0]",
    "stp x2, x3, [sp, #{x0} + 16]",
    "stp x4, x5, [sp, #{x0} + 32]",
    "stp x6, x7, [sp, #{x0} + 48]",
    "str x8, [sp, #{x0} + 64]",
    "str x9, [sp, #{daif}]",
    "str x29, [sp, #{fp}]",
    "add x10, sp, #{size}",
    "str x10, [sp, #{sp}]",
    "mov x0, sp",
    "bl ftrace_return_to_handler",
    "mov x30, x0",
    "ldp x0, x1, [sp, #{x0} + 0]",
    "ldp x2, x3, [sp, #{x0} + 16]",
    "ldp x4, x5, [sp, #{x0} + 32]",
    "ldp x6, x7, [sp, #{x0} + 48]",
    "ldr x8, [sp, #{x0} + 64]",
    "ldr x9, [sp, #{daif}]",
    "add sp, sp, #{size}",
    "msr daif, x9",
    "ret",
    ".size return_to_handler, . - return_to_handler",
    size = const RET_REGS_SIZE,
    x0 = const offset_of!(FtraceRetRegs, regs),
    daif = const offset_of!(FtraceRetRegs, daif),
    fp = const offset_of!(FtraceRetRegs, fp),
    sp = const offset_of!(FtraceRetRegs, sp),
);

/// The address of `return_to_handler`, which a tracer puts in a traced
/// function's `lr` to run when it returns.
pub fn return_to_handler_addr() -> usize {
    extern "C" {
        fn return_to_handler();
    }
    return_to_handler as *const () as usize
}

/// Stores `v` little-endian into `dst`, whatever its alignment, in one
/// instruction (Linux's `put_unaligned_le32`), for the ring buffer's event
/// header written on every hit. The kernel is built for strict alignment,
/// under which the compiler splits such a store into byte stores; the CPU
/// itself allows it (SCTLR_EL1.A is clear once the MMU is on, and byte
/// slices live in Normal memory).
#[inline(always)]
pub fn put_unaligned_le32(dst: &mut [u8; 4], v: u32) {
    // SAFETY: `dst` is four writable bytes borrowed exclusively, so the
    // store touches nothing else; an unaligned STR is allowed for the
    // reasons above; the target is little-endian, as the record format.
    unsafe {
        core::arch::asm!("str {v:w}, [{p}]", v = in(reg) v, p = in(reg) dst.as_mut_ptr(), options(nostack, preserves_flags));
    }
}

/// [`put_unaligned_le32`] for eight bytes (Linux's `put_unaligned_le64`),
/// for the trace records' words.
#[inline(always)]
pub fn put_unaligned_le64(dst: &mut [u8; 8], v: u64) {
    // SAFETY: `dst` is eight writable bytes borrowed exclusively, so the
    // store touches nothing else; alignment checking is off (SCTLR_EL1.A
    // clear) and Rust byte arrays are never in Device memory, so an
    // unaligned STR is allowed; the target is little-endian, as the
    // record format.
    unsafe {
        core::arch::asm!("str {v}, [{p}]", v = in(reg) v, p = in(reg) dst.as_mut_ptr(), options(nostack, preserves_flags));
    }
}
