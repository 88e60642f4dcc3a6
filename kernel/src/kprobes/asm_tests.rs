//! Assembly functions for the kprobes tests (test builds only): one per
//! instruction class, each a real function (`.type`, `.size`) in `.text`
//! so that kallsyms knows its extent, each returning a result computed from
//! its arguments (x0, x1), which `insn_tests.rs` checks with every one of
//! its instructions probed in turn.
//!
//! Conventions the tests rely on:
//! - every instruction between the symbol and its `.size` is code; literal
//!   data sits outside the function (before its symbol or after its
//!   `.size`), so that no probe is ever placed on data;
//! - an instruction that only some calls run is a *marker*,
//!   `orr x2, x2, #(1 << k)` with k < 16, and the function's result has
//!   bit k set exactly when the marker ran; a `B` right after a marker
//!   runs with it (no branch targets it); every other instruction runs
//!   exactly once per call;
//! - only caller-saved registers are changed (x19 is saved where used).
#![allow(unsafe_code)] // global_asm! for the functions, and calling them through `extern "C"`.

core::arch::global_asm!(
    ".section .text",
    ".balign 4",
    // B: forward and backward; the markers show which blocks ran.
    ".global ktest_insn_b",
    ".type ktest_insn_b, %function",
    "ktest_insn_b:",
    "mov x2, #0",
    "b 1f",
    "orr x2, x2, #1",
    "1: orr x2, x2, #2",
    "b 3f",
    "2: orr x2, x2, #4",
    "b 4f",
    "3: b 2b",
    "orr x2, x2, #16",
    "4: add x0, x2, x0, lsl #16",
    "ret",
    ".size ktest_insn_b, . - ktest_insn_b",
    // BL: a backward call to another function and a forward call to a
    // helper inside this one.
    ".global ktest_insn_bl_callee",
    ".type ktest_insn_bl_callee, %function",
    "ktest_insn_bl_callee:",
    "add x0, x0, #7",
    "ret",
    ".size ktest_insn_bl_callee, . - ktest_insn_bl_callee",
    ".global ktest_insn_bl",
    ".type ktest_insn_bl, %function",
    "ktest_insn_bl:",
    "stp x29, x30, [sp, #-16]!",
    "mov x29, sp",
    "bl ktest_insn_bl_callee",
    "bl 1f",
    "ldp x29, x30, [sp], #16",
    "ret",
    "1: lsl x0, x0, #1",
    "ret",
    ".size ktest_insn_bl, . - ktest_insn_bl",
    // B.cond: fourteen conditions after `cmp x0, x1`, each skipping its
    // marker when taken, and a backward B.NE.
    ".global ktest_insn_bcond",
    ".type ktest_insn_bcond, %function",
    "ktest_insn_bcond:",
    "mov x2, #0",
    "cmp x0, x1",
    "b.eq 1f",
    "orr x2, x2, #0x1",
    "1: b.ne 1f",
    "orr x2, x2, #0x2",
    "1: b.hs 1f",
    "orr x2, x2, #0x4",
    "1: b.lo 1f",
    "orr x2, x2, #0x8",
    "1: b.mi 1f",
    "orr x2, x2, #0x10",
    "1: b.pl 1f",
    "orr x2, x2, #0x20",
    "1: b.vs 1f",
    "orr x2, x2, #0x40",
    "1: b.vc 1f",
    "orr x2, x2, #0x80",
    "1: b.hi 1f",
    "orr x2, x2, #0x100",
    "1: b.ls 1f",
    "orr x2, x2, #0x200",
    "1: b.ge 1f",
    "orr x2, x2, #0x400",
    "1: b.lt 1f",
    "orr x2, x2, #0x800",
    "1: b.gt 1f",
    "orr x2, x2, #0x1000",
    "1: b.le 5f",
    "orr x2, x2, #0x2000",
    "5: nop",
    "b 2f",
    "1: orr x2, x2, #0x4000",
    "b 3f",
    "2: b.ne 1b",
    "orr x2, x2, #0x8000",
    "3: mov x0, x2",
    "ret",
    ".size ktest_insn_bcond, . - ktest_insn_bcond",
    // CBZ/CBNZ on X and W registers, forward and backward.
    ".global ktest_insn_cbz",
    ".type ktest_insn_cbz, %function",
    "ktest_insn_cbz:",
    "mov x2, #0",
    "cbz x0, 1f",
    "orr x2, x2, #0x1",
    "1: cbnz x0, 1f",
    "orr x2, x2, #0x2",
    "1: cbz w0, 1f",
    "orr x2, x2, #0x4",
    "1: cbnz w0, 5f",
    "orr x2, x2, #0x8",
    "5: nop",
    "b 2f",
    "1: orr x2, x2, #0x10",
    "b 3f",
    "2: cbnz x0, 1b",
    "orr x2, x2, #0x20",
    "3: nop",
    "b 7f",
    "6: orr x2, x2, #0x40",
    "b 8f",
    "7: cbz w0, 6b",
    "orr x2, x2, #0x80",
    "8: mov x0, x2",
    "ret",
    ".size ktest_insn_cbz, . - ktest_insn_cbz",
    // TBZ/TBNZ on bits 0, 63, 31 (W), 5 (W), and a backward TBNZ on bit 40.
    ".global ktest_insn_tbz",
    ".type ktest_insn_tbz, %function",
    "ktest_insn_tbz:",
    "mov x2, #0",
    "tbz x0, #0, 1f",
    "orr x2, x2, #0x1",
    "1: tbnz x0, #0, 1f",
    "orr x2, x2, #0x2",
    "1: tbz x0, #63, 1f",
    "orr x2, x2, #0x4",
    "1: tbnz x0, #63, 1f",
    "orr x2, x2, #0x8",
    "1: tbz w0, #31, 1f",
    "orr x2, x2, #0x10",
    "1: tbnz w0, #5, 5f",
    "orr x2, x2, #0x20",
    "5: nop",
    "b 2f",
    "1: orr x2, x2, #0x40",
    "b 3f",
    "2: tbnz x0, #40, 1b",
    "orr x2, x2, #0x80",
    "3: mov x0, x2",
    "ret",
    ".size ktest_insn_tbz, . - ktest_insn_tbz",
    // BR to one of two targets chosen by x0 == 0.
    ".global ktest_insn_br",
    ".type ktest_insn_br, %function",
    "ktest_insn_br:",
    "mov x2, #0",
    "adr x3, 1f",
    "adr x4, 2f",
    "cmp x0, #0",
    "csel x3, x3, x4, eq",
    "br x3",
    "orr x2, x2, #0x1",
    "1: orr x2, x2, #0x2",
    "2: orr x2, x2, #0x4",
    "mov x0, x2",
    "ret",
    ".size ktest_insn_br, . - ktest_insn_br",
    // BLR forward (a helper inside) and backward (another function).
    ".global ktest_insn_blr",
    ".type ktest_insn_blr, %function",
    "ktest_insn_blr:",
    "stp x29, x30, [sp, #-16]!",
    "mov x29, sp",
    "adr x16, 1f",
    "blr x16",
    "adr x16, ktest_insn_bl_callee",
    "blr x16",
    "ldp x29, x30, [sp], #16",
    "ret",
    "1: add x0, x0, #3",
    "ret",
    ".size ktest_insn_blr, . - ktest_insn_blr",
    // RET through a register other than x30.
    ".global ktest_insn_ret",
    ".type ktest_insn_ret, %function",
    "ktest_insn_ret:",
    "mov x16, x30",
    "mov x30, xzr",
    "add x0, x0, #5",
    "ret x16",
    ".size ktest_insn_ret, . - ktest_insn_ret",
    // ADR backward and forward to data outside the function; ADRP to a
    // page below (`_text`) and above (`__start_rodata`).
    ".balign 8",
    "ktest_insn_adr_before:",
    ".quad 0x1111111111111111",
    ".global ktest_insn_adr",
    ".type ktest_insn_adr, %function",
    "ktest_insn_adr:",
    "adr x1, ktest_insn_adr_before",
    "adr x2, ktest_insn_adr_after",
    "ldr x1, [x1]",
    "ldr x2, [x2]",
    "add x0, x0, x1",
    "add x0, x0, x2",
    "adrp x3, _text",
    "adrp x4, __start_rodata",
    "sub x3, x4, x3",
    "add x0, x0, x3",
    "ret",
    ".size ktest_insn_adr, . - ktest_insn_adr",
    ".balign 8",
    "ktest_insn_adr_after:",
    ".quad 0x2222222222222222",
    // LDR (literal) 32 and 64 and LDRSW (literal), backward and forward,
    // from both halves of a doubleword and from a 4-aligned doubleword.
    ".balign 8",
    "ktest_insn_lit_before64:",
    ".quad 0x0123456789abcdef",
    "ktest_insn_lit_before_sw:",
    ".word 0x80000001",
    ".word 0",
    ".global ktest_insn_ldr_literal",
    ".type ktest_insn_ldr_literal, %function",
    "ktest_insn_ldr_literal:",
    "ldr x1, ktest_insn_lit_before64",
    "ldrsw x2, ktest_insn_lit_before_sw",
    "ldr w3, ktest_insn_lit_after32",
    "ldr x4, ktest_insn_lit_after64",
    "ldrsw x5, ktest_insn_lit_after_sw",
    "eor x0, x0, x1",
    "add x0, x0, x2",
    "add x0, x0, x3",
    "add x0, x0, x4",
    "add x0, x0, x5",
    "ret",
    ".size ktest_insn_ldr_literal, . - ktest_insn_ldr_literal",
    ".balign 8",
    "ktest_insn_lit_after32:",
    ".word 0xfedcba98",
    "ktest_insn_lit_after64:",
    ".quad 0x1122334455667788",
    "ktest_insn_lit_after_sw:",
    ".word 0x7ffffffe",
    // Pair stores and loads: pre-index, offset, post-index, W and LDPSW.
    ".balign 4",
    ".global ktest_insn_stack_pair",
    ".type ktest_insn_stack_pair, %function",
    "ktest_insn_stack_pair:",
    "stp x0, x1, [sp, #-32]!",
    "stp x1, x0, [sp, #16]",
    "ldp x2, x3, [sp, #16]",
    "ldp x4, x5, [sp], #32",
    "stp w0, w1, [sp, #-16]!",
    "ldp w6, w7, [sp]",
    "ldpsw x8, x9, [sp], #16",
    "add x0, x2, x3, lsl #1",
    "add x0, x0, x4, lsl #2",
    "add x0, x0, x5, lsl #3",
    "add x0, x0, x6",
    "add x0, x0, x7",
    "add x0, x0, x8",
    "add x0, x0, x9",
    "ret",
    ".size ktest_insn_stack_pair, . - ktest_insn_stack_pair",
    // Data processing, with flags set by stepped instructions and used by
    // later ones.
    ".global ktest_insn_alu",
    ".type ktest_insn_alu, %function",
    "ktest_insn_alu:",
    "add x2, x0, x1",
    "sub x3, x0, x1",
    "mul x4, x0, x1",
    "orr x5, x0, #1",
    "udiv x6, x0, x5",
    "and x7, x0, x1",
    "eor x8, x0, x1, ror #7",
    "lsl x9, x0, #3",
    "lsr x10, x1, #5",
    "asr x11, x1, #9",
    "madd x12, x0, x1, x2",
    "movz x13, #0x1234, lsl #16",
    "movk x13, #0x5678",
    "mvn x14, x0",
    "neg x15, x1",
    "clz x16, x0",
    "rev x17, x1",
    "cmp x0, x1",
    "csel x3, x3, x2, lt",
    "adds x1, x0, x1",
    "cinc x1, x1, cs",
    "add x0, x1, x2",
    "eor x0, x0, x3",
    "add x0, x0, x4",
    "eor x0, x0, x5",
    "add x0, x0, x6",
    "eor x0, x0, x7",
    "add x0, x0, x8",
    "eor x0, x0, x9",
    "add x0, x0, x10",
    "eor x0, x0, x11",
    "add x0, x0, x12",
    "eor x0, x0, x13",
    "add x0, x0, x14",
    "eor x0, x0, x15",
    "add x0, x0, x16",
    "eor x0, x0, x17",
    "ret",
    ".size ktest_insn_alu, . - ktest_insn_alu",
    // Loads and stores of every size, signed and unsigned, with immediate,
    // register, pre-index, post-index and unscaled addressing. x0 points
    // to 32 zeroed bytes, x1 is the value.
    ".global ktest_insn_ldst",
    ".type ktest_insn_ldst, %function",
    "ktest_insn_ldst:",
    "strb w1, [x0]",
    "strh w1, [x0, #2]",
    "str w1, [x0, #4]",
    "str x1, [x0, #8]",
    "ldrb w2, [x0]",
    "ldrsb x3, [x0]",
    "ldrsb w4, [x0]",
    "ldrh w5, [x0, #2]",
    "ldrsh x6, [x0, #2]",
    "ldrsh w7, [x0, #2]",
    "ldr w8, [x0, #4]",
    "ldrsw x9, [x0, #4]",
    "ldr x10, [x0, #8]",
    "mov x11, #1",
    "ldr x12, [x0, x11, lsl #3]",
    "str x1, [x0, #16]!",
    "ldr x13, [x0], #8",
    "sturb w1, [x0, #-1]",
    "ldur x14, [x0, #-8]",
    "add x0, x2, x3",
    "add x0, x0, x4",
    "add x0, x0, x5",
    "add x0, x0, x6",
    "add x0, x0, x7",
    "add x0, x0, x8",
    "add x0, x0, x9",
    "add x0, x0, x10",
    "add x0, x0, x12",
    "add x0, x0, x13",
    "add x0, x0, x14",
    "ret",
    ".size ktest_insn_ldst, . - ktest_insn_ldst",
    // MRS of NZCV (stepped): the flags of the comparison before it.
    ".global ktest_insn_mrs_nzcv",
    ".type ktest_insn_mrs_nzcv, %function",
    "ktest_insn_mrs_nzcv:",
    "cmp x0, x1",
    "mrs x0, nzcv",
    "ret",
    ".size ktest_insn_mrs_nzcv, . - ktest_insn_mrs_nzcv",
    // NOP.
    ".global ktest_insn_nop",
    ".type ktest_insn_nop, %function",
    "ktest_insn_nop:",
    "nop",
    "add x0, x0, #1",
    "nop",
    "ret",
    ".size ktest_insn_nop, . - ktest_insn_nop",
    // x30 and sp: a frame, a saved callee-saved register, two nested
    // calls with frames of their own, single-register pre/post-index.
    ".global ktest_insn_frame",
    ".type ktest_insn_frame, %function",
    "ktest_insn_frame:",
    "stp x29, x30, [sp, #-32]!",
    "mov x29, sp",
    "str x19, [sp, #16]",
    "mov x19, x0",
    "bl 1f",
    "add x0, x0, x19",
    "ldr x19, [sp, #16]",
    "ldp x29, x30, [sp], #32",
    "ret",
    "1: stp x29, x30, [sp, #-16]!",
    "mov x29, sp",
    "add x0, x0, #3",
    "bl 2f",
    "lsl x0, x0, #1",
    "ldp x29, x30, [sp], #16",
    "ret",
    "2: str x30, [sp, #-16]!",
    "add x0, x0, #5",
    "mov x9, sp",
    "ldr x30, [x9], #16",
    "mov sp, x9",
    "ret",
    ".size ktest_insn_frame, . - ktest_insn_frame",
    // Never called: every instruction here must be refused by
    // register_kprobe (exception generation and return, PSTATE and system
    // register writes, MRS other than DAIF, WFI, exclusives and what lies
    // between them).
    ".global ktest_insn_rejected",
    ".type ktest_insn_rejected, %function",
    "ktest_insn_rejected:",
    "svc #0",
    "hvc #0",
    "smc #0",
    "brk #1",
    "hlt #0",
    "msr daifset, #2",
    "msr daif, x0",
    "mrs x0, daif",
    "wfi",
    "ldxr x1, [x0]",
    "add x1, x1, #1",
    "stxr w2, x1, [x0]",
    "eret",
    ".size ktest_insn_rejected, . - ktest_insn_rejected",
    // The SMP stress target: simulated (NOP, CBZ, RET) and stepped (STP,
    // MOV, ADD, LDP) instructions, each run once per call.
    ".global ktest_insn_stress",
    ".type ktest_insn_stress, %function",
    "ktest_insn_stress:",
    "stp x29, x30, [sp, #-16]!",
    "mov x29, sp",
    "nop",
    "add x0, x0, #1",
    "cbz x0, 1f",
    "add x0, x0, x0",
    "1: ldp x29, x30, [sp], #16",
    "ret",
    ".size ktest_insn_stress, . - ktest_insn_stress",
    // Benchmark loops: x0 iterations of one BRK #0xf0 (the raw exception
    // round trip), or of a NOP and an ADD to probe.
    ".global ktest_bench_brk_loop",
    ".type ktest_bench_brk_loop, %function",
    "ktest_bench_brk_loop:",
    "mov x1, #0",
    "1: brk #0xf0",
    "add x1, x1, #1",
    "subs x0, x0, #1",
    "b.ne 1b",
    "mov x0, x1",
    "ret",
    ".size ktest_bench_brk_loop, . - ktest_bench_brk_loop",
    ".global ktest_bench_probe_loop",
    ".type ktest_bench_probe_loop, %function",
    "ktest_bench_probe_loop:",
    "mov x1, #0",
    "1: nop",
    "add x1, x1, #1",
    "subs x0, x0, #1",
    "b.ne 1b",
    "mov x0, x1",
    "ret",
    ".size ktest_bench_probe_loop, . - ktest_bench_probe_loop",
);

extern "C" {
    fn ktest_insn_b(a: u64, b: u64) -> u64;
    fn ktest_insn_bl_callee(a: u64, b: u64) -> u64;
    fn ktest_insn_bl(a: u64, b: u64) -> u64;
    fn ktest_insn_bcond(a: u64, b: u64) -> u64;
    fn ktest_insn_cbz(a: u64, b: u64) -> u64;
    fn ktest_insn_tbz(a: u64, b: u64) -> u64;
    fn ktest_insn_br(a: u64, b: u64) -> u64;
    fn ktest_insn_blr(a: u64, b: u64) -> u64;
    fn ktest_insn_ret(a: u64, b: u64) -> u64;
    fn ktest_insn_adr(a: u64, b: u64) -> u64;
    fn ktest_insn_ldr_literal(a: u64, b: u64) -> u64;
    fn ktest_insn_stack_pair(a: u64, b: u64) -> u64;
    fn ktest_insn_alu(a: u64, b: u64) -> u64;
    fn ktest_insn_ldst(buf: *mut u64, v: u64) -> u64;
    fn ktest_insn_mrs_nzcv(a: u64, b: u64) -> u64;
    fn ktest_insn_nop(a: u64, b: u64) -> u64;
    fn ktest_insn_frame(a: u64, b: u64) -> u64;
    fn ktest_insn_stress(a: u64, b: u64) -> u64;
    fn ktest_bench_brk_loop(n: u64) -> u64;
    fn ktest_bench_probe_loop(n: u64) -> u64;
    static _text: u8;
    static __start_rodata: u8;
}

macro_rules! wrappers {
    ($($name:ident => $sym:ident),* $(,)?) => {$(
        /// Calls the assembly function of the same name.
        #[inline(never)]
        pub fn $name(a: u64, b: u64) -> u64 {
            // SAFETY: the function (above) follows the AAPCS64, reads only
            // x0/x1 and its own stack and text, and changes only
            // caller-saved registers.
            unsafe { $sym(a, b) }
        }
    )*};
}

wrappers! {
    b => ktest_insn_b,
    bl_callee => ktest_insn_bl_callee,
    bl => ktest_insn_bl,
    bcond => ktest_insn_bcond,
    cbz => ktest_insn_cbz,
    tbz => ktest_insn_tbz,
    br => ktest_insn_br,
    blr => ktest_insn_blr,
    ret => ktest_insn_ret,
    adr => ktest_insn_adr,
    ldr_literal => ktest_insn_ldr_literal,
    stack_pair => ktest_insn_stack_pair,
    alu => ktest_insn_alu,
    nop => ktest_insn_nop,
    frame => ktest_insn_frame,
    stress => ktest_insn_stress,
}

/// `ktest_insn_ldst` on a zeroed 32-byte buffer of its own.
#[inline(never)]
pub fn ldst(v: u64, _: u64) -> u64 {
    let mut buf = [0u64; 4];
    // SAFETY: the function writes and reads only bytes 0..32 of `buf`.
    unsafe { ktest_insn_ldst(buf.as_mut_ptr(), v) }
}

/// `ktest_insn_mrs_nzcv`: the NZCV flags of `cmp a, b`.
#[inline(never)]
pub fn mrs_nzcv(a: u64, b: u64) -> u64 {
    // SAFETY: compares, reads NZCV into x0 and returns.
    unsafe { ktest_insn_mrs_nzcv(a, b) }
}

/// Runs `ktest_bench_brk_loop`: `n` times `BRK #0xf0` (a hook for that
/// immediate must step over it).
#[inline(never)]
pub fn bench_brk_loop(n: u64) -> u64 {
    // SAFETY: a loop on x0/x1; each BRK returns to the next instruction
    // through the hook the caller installed.
    unsafe { ktest_bench_brk_loop(n) }
}

/// Runs `ktest_bench_probe_loop`: `n` times a NOP and an ADD.
#[inline(never)]
pub fn bench_probe_loop(n: u64) -> u64 {
    // SAFETY: a loop on x0/x1.
    unsafe { ktest_bench_probe_loop(n) }
}

/// The pages `ktest_insn_adr` reaches with ADRP: (`_text`, `__start_rodata`).
pub fn adrp_targets() -> (usize, usize) {
    (
        core::ptr::addr_of!(_text) as usize & !0xfff,
        core::ptr::addr_of!(__start_rodata) as usize & !0xfff,
    )
}

core::arch::global_asm!(
    ".section .text",
    ".global ktest_kprobe_fault_load",
    ".type ktest_kprobe_fault_load, %function",
    ".balign 4",
    // Loads from x0; a fault resumes at 2 (through __ex_table) with -EFAULT.
    "ktest_kprobe_fault_load:",
    "1: ldr x0, [x0]",
    "ret",
    "2: mov x0, #-14",
    "ret",
    ".size ktest_kprobe_fault_load, . - ktest_kprobe_fault_load",
    ".pushsection __ex_table, \"a\"",
    ".balign 4",
    ".long 1b - .",
    ".long 2b - .",
    ".popsection",
);

extern "C" {
    fn ktest_kprobe_fault_load(addr: u64) -> i64;
}

/// Loads the u64 at `addr`, or -EFAULT through the exception table.
#[inline(never)]
pub fn fault_load(addr: u64) -> i64 {
    // SAFETY: a load whose fault is recovered by its exception-table entry.
    unsafe { ktest_kprobe_fault_load(addr) }
}
