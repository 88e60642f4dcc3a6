//! `gdbtarget [segv]`: the program minigdb's tests debug. Its functions
//! are written in assembly so that their symbols, frame records and
//! instructions are the same on every build: `add` (adds two numbers),
//! `fact` (recursive factorial, counting its calls in the global
//! `counter`), `target_main` (the outermost frame: its frame record ends
//! the frame-pointer chain) and `crash` (a store to address 0).
//!
//! Without arguments it exits with `add(2, 3)` (5) once `fact(4)` is 24;
//! with `segv` it takes the SIGSEGV path.
#![no_std]
#![no_main]

rt::main!(main);

core::arch::global_asm!(
    ".data",
    ".global counter",
    ".type counter, %object",
    ".p2align 3",
    "counter: .quad 0",
    ".size counter, 8",
    ".text",
    // add(a, b) = a + b.
    ".global add",
    ".type add, %function",
    ".p2align 2",
    "add:",
    "stp x29, x30, [sp, #-16]!",
    "mov x29, sp",
    "add x0, x0, x1",
    "ldp x29, x30, [sp], #16",
    "ret",
    ".size add, . - add",
    // fact(n) = n!, one call per level; each call bumps `counter`.
    ".global fact",
    ".type fact, %function",
    ".p2align 2",
    "fact:",
    "stp x29, x30, [sp, #-32]!",
    "mov x29, sp",
    "str x19, [sp, #16]",
    "adrp x2, counter",
    "add x2, x2, :lo12:counter",
    "ldr x3, [x2]",
    "add x3, x3, #1",
    "str x3, [x2]",
    "mov x19, x0",
    "cmp x0, #1",
    "b.ls 1f",
    "sub x0, x0, #1",
    "bl fact",
    "mul x0, x0, x19",
    "b 2f",
    "1:",
    "mov x0, #1",
    "2:",
    "ldr x19, [sp, #16]",
    "ldp x29, x30, [sp], #32",
    "ret",
    ".size fact, . - fact",
    // target_main(): add(2, 3) in x0 if fact(4) == 24, else 1. Its frame
    // record holds a zero frame pointer: the outermost frame.
    ".global target_main",
    ".type target_main, %function",
    ".p2align 2",
    "target_main:",
    "sub sp, sp, #48",
    "stp x29, x30, [sp, #16]",
    "str x19, [sp, #32]",
    "stp xzr, x30, [sp]",
    "mov x29, sp",
    "mov x0, #2",
    "mov x1, #3",
    "bl add",
    "mov x19, x0",
    "mov x0, #4",
    "bl fact",
    "cmp x0, #24",
    "mov x0, #1",
    "csel x0, x19, x0, eq",
    "ldr x19, [sp, #32]",
    "ldp x29, x30, [sp, #16]",
    "add sp, sp, #48",
    "ret",
    ".size target_main, . - target_main",
    // crash(): stores to address 0.
    ".global crash",
    ".type crash, %function",
    ".p2align 2",
    "crash:",
    "stp x29, x30, [sp, #-16]!",
    "mov x29, sp",
    "mov x1, #0",
    "str x0, [x1]",
    "ldp x29, x30, [sp], #16",
    "ret",
    ".size crash, . - crash",
    // crash_path(): calls crash from a frame whose record ends the chain.
    ".global crash_path",
    ".type crash_path, %function",
    ".p2align 2",
    "crash_path:",
    "sub sp, sp, #32",
    "stp x29, x30, [sp, #16]",
    "stp xzr, x30, [sp]",
    "mov x29, sp",
    "mov x0, #7",
    "bl crash",
    "ldp x29, x30, [sp, #16]",
    "add sp, sp, #32",
    "ret",
    ".size crash_path, . - crash_path",
);

unsafe extern "C" {
    fn target_main() -> u64;
    fn crash_path();
}

fn main(args: rt::Args) -> i32 {
    if args.get(1) == Some(b"segv") {
        // SAFETY: crash_path only stores to address 0, which faults.
        unsafe { crash_path() };
        return 2;
    }
    // SAFETY: target_main calls add and fact, which touch only their
    // stack frames and `counter`.
    unsafe { target_main() as i32 }
}
