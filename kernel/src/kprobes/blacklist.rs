//! Where kprobes may not go (Linux's NOKPROBE_SYMBOL and `__kprobes`):
//! the exception entry and exit, the debug-fault and hook code, kprobes
//! itself, patching and stop_machine, the oops path (console, unwinder,
//! kallsyms), and the primitives they all use. Rust has no per-function
//! section attribute the kernel can attach cheaply, so whole modules are
//! marked by their kallsyms path, plus the exported names of the entry
//! code.

/// Module paths whose functions may not be probed.
const PREFIXES: &[&str] = &[
    "arch::",
    "kernel::kprobes::",
    "kernel::debug::",
    "kernel::patching::",
    "kernel::stop_machine::",
    "kernel::printk::",
    "kernel::drivers::pl011::",
    "kernel::traps::",
    "kernel::fault::",
    "kernel::oops::",
    "kernel::stacktrace::",
    "kernel::kallsyms::",
    "kernel::sync::",
    "kernel::percpu::",
    "kernel::irq::",
    "kernel::smp::",
    // The hit path allocates (the hook list, kretprobe instances): a probe
    // in the allocator would recurse, or spin on the heap lock it holds.
    "kernel::mm::heap::",
    "kernel::mm::frame::",
    "linked_list_allocator::",
    "__rust_",
    "__rg_",
    "__rdl_",
    "kallsyms::",
    "insn::",
    "spin::",
    "core::",
    "alloc::",
    "compiler_builtins::",
    "<",
];

/// Exported entry and exception functions.
const NAMES: &[&str] = &[
    "_start",
    "primary_entry",
    "secondary_entry",
    "el2_to_el1",
    "enable_mmu",
    "create_early_page_tables",
    "clear_bss",
    "primary_switched",
    "secondary_switched",
    "__cpu_replace_ttbr1",
    "vectors",
    "ret_to_user",
    "ret_to_kernel",
    "ret_from_fork",
    "cpu_switch_to",
    "fpsimd_save_state",
    "fpsimd_load_state",
    "kretprobe_trampoline",
    "rust_begin_unwind",
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "bcmp",
];

/// Whether the function `name` is blacklisted.
pub fn is_blacklisted_name(name: &str) -> bool {
    NAMES.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || name.starts_with("el1")
        || name.starts_with("el0")
}

/// Marks a function as not probeable (Linux's `NOKPROBE_SYMBOL`): its
/// address goes into the `_kprobe_blacklist` section, which registration
/// checks along with the module paths above.
#[macro_export]
macro_rules! nokprobe_symbol {
    ($f:path) => {
        const _: () = {
            #[allow(unsafe_code)] // link_section: the blacklist mechanism itself
            #[used]
            #[link_section = "_kprobe_blacklist"]
            static ENTRY: $crate::kprobes::blacklist::NokprobeEntry =
                $crate::kprobes::blacklist::NokprobeEntry($f as *const ());
        };
    };
}

/// One `_kprobe_blacklist` entry: a function's address.
#[repr(transparent)]
pub struct NokprobeEntry(pub *const ());

// SAFETY: the pointer is only compared as an address, never dereferenced.
#[allow(unsafe_code)]
unsafe impl Sync for NokprobeEntry {}

// SAFETY: the link script gathers every `_kprobe_blacklist` entry, each
// a NokprobeEntry emitted by `nokprobe_symbol!`, between these symbols.
arch::linker_table!(fn section_entries() -> [NokprobeEntry] = __start__kprobe_blacklist..__stop__kprobe_blacklist);

/// Whether a `nokprobe_symbol!` marks the function containing `addr`.
fn in_section(addr: usize) -> bool {
    let Some(sym) = crate::kallsyms::lookup_addr(addr) else {
        return false;
    };
    let start = addr - sym.offset as usize;
    section_entries().iter().any(|e| e.0 as usize == start)
}

/// Whether `addr` may not be probed.
pub fn is_blacklisted(addr: usize) -> bool {
    let (es, ee) = arch::entry::entry_text_range();
    if addr >= es && addr < ee {
        return true;
    }
    if in_section(addr) {
        return true;
    }
    match crate::kallsyms::lookup_addr(addr) {
        Some(sym) => is_blacklisted_name(sym.name),
        None => true,
    }
}

/// The blacklisted functions, `(start, end, name)`, for debugfs.
pub fn entries() -> alloc::vec::Vec<(u64, u64, &'static str)> {
    crate::kallsyms::table()
        .iter()
        .filter(|s| is_blacklisted_name(s.name))
        .map(|s| (s.addr, s.addr + s.size, s.name))
        .collect()
}
