//! Process entry and exit.

use core::arch::global_asm;
use core::panic::PanicInfo;

use crate::env;

// Linux starts a process with sp pointing at argc, followed by argv[],
// NULL, envp[], NULL, auxv pairs (ELF ABI for AArch64 / Linux's
// create_elf_tables()). sp is already 16-byte aligned; align it anyway and
// clear the frame pointer and link register so that backtraces end here.
global_asm!(
    ".section .text._start,\"ax\",@progbits",
    ".global _start",
    ".type _start,@function",
    "_start:",
    "    mov x29, #0",
    "    mov x30, #0",
    "    mov x0, sp",
    "    and x1, x0, #~15",
    "    mov sp, x1",
    "    bl {entry}",
    "    brk #0x3e8",
    ".size _start, . - _start",
    entry = sym rt_start,
);

unsafe extern "Rust" {
    /// The program's main, defined by `rt::main!`.
    fn __rt_main(args: env::Args) -> i32;
}

/// Called by `_start` with the initial stack pointer.
///
/// # Safety
/// `sp` must be the stack pointer Linux handed to the process at entry.
unsafe extern "C" fn rt_start(sp: *const usize) -> ! {
    // SAFETY: Linux lays out argc, argv[argc], NULL, envp..., NULL, auxv at
    // sp; the strings they point to live as long as the process.
    unsafe { env::init(sp) };
    // SAFETY: `__rt_main` is the program's `main!` wrapper, a safe Rust fn.
    let status = unsafe { __rt_main(env::args()) };
    crate::process::exit(status)
}

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    let name = env::args().first().unwrap_or(b"?");
    let name = core::str::from_utf8(name).unwrap_or("?");
    match info.location() {
        Some(loc) => crate::io::_eprint(format_args!("{name}: panicked at {loc}:\n{}\n", info.message())),
        None => crate::io::_eprint(format_args!("{name}: panicked:\n{}\n", info.message())),
    }
    // As a Rust program that panics does.
    crate::process::exit(101)
}
