//! The kretprobe trampoline (Linux's kprobes_trampoline.S): a kretprobed
//! function returns here, and the BRK hands control to the kernel's
//! handler, which resumes at the real return address.

use crate::debug_monitors::KRETPROBES_BRK_IMM;

core::arch::global_asm!(
    ".section .text",
    ".global kretprobe_trampoline",
    ".type kretprobe_trampoline, %function",
    ".balign 8",
    "kretprobe_trampoline:",
    "brk #{imm}",
    "b .",
    ".size kretprobe_trampoline, . - kretprobe_trampoline",
    imm = const KRETPROBES_BRK_IMM,
);

/// The address of `kretprobe_trampoline`.
pub fn kretprobe_trampoline_addr() -> usize {
    extern "C" {
        fn kretprobe_trampoline();
    }
    kretprobe_trampoline as *const () as usize
}
