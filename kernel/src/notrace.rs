//! Code that must not be instrumented, by kprobes now and by the function
//! tracer later (Linux's `notrace`, `NOKPROBE_SYMBOL` and `__kprobes`,
//! which Linux keeps apart; here one mark feeds both): the exception entry
//! and exit, the debug-fault and probe machinery, patching and
//! stop_machine, the oops path (console, unwinder, kallsyms), and the
//! primitives they all use. A probe there would recurse into itself or
//! spin on a lock its own hit path holds.
//!
//! The mark sits on the code, never in a list of names here, so that
//! renaming or moving code keeps it:
//! - `#[notrace]` (from `ktest_macros`) on a function, or
//!   `nokprobe_symbol!(path)` for one the attribute cannot reach, puts the
//!   function's address in the `_notrace_symbols` link section;
//! - `notrace_module!()` inside a module puts that module's path, as the
//!   compiler spells it (`module_path!()`), in `_notrace_modules`; it
//!   covers the module and everything nested in it.
//!
//! Crates the kernel links but whose code it cannot mark are named here by
//! crate, and code written in assembly by its symbol; a test checks that
//! each of those names still matches something in kallsyms.

/// One `_notrace_symbols` entry: a function's address.
#[repr(transparent)]
pub struct NotraceSymbol(pub *const ());

// SAFETY: the pointer is only compared as an address, never dereferenced.
#[allow(unsafe_code)]
unsafe impl Sync for NotraceSymbol {}

/// One `_notrace_modules` entry: a module path, as `module_path!()` gives it.
pub struct NotraceModule(pub &'static str);

/// Marks a function as notrace (Linux's `NOKPROBE_SYMBOL`), for functions
/// the `#[notrace]` attribute cannot be put on (methods, code in macros).
#[macro_export]
macro_rules! nokprobe_symbol {
    ($f:path) => {
        const _: () = {
            #[allow(unsafe_code)] // link_section: the notrace mark itself
            #[used]
            #[link_section = "_notrace_symbols"]
            static ENTRY: $crate::notrace::NotraceSymbol = $crate::notrace::NotraceSymbol($f as *const ());
        };
    };
}

/// Marks the module it is invoked in, and every module nested in it, as
/// notrace.
#[macro_export]
macro_rules! notrace_module {
    () => {
        const _: () = {
            #[allow(unsafe_code)] // link_section: the notrace mark itself
            #[used]
            #[link_section = "_notrace_modules"]
            static ENTRY: $crate::notrace::NotraceModule = $crate::notrace::NotraceModule(module_path!());
        };
    };
}

/// Crates linked into the kernel whose code cannot carry the mark: the
/// hardware layer and the host-shared decoders and tables the hit path
/// uses, the lock and allocator crates, and the Rust runtime.
pub const CRATES: &[&str] = &[
    "arch",
    "kallsyms",
    "ring_buffer",
    "insn",
    "spin",
    "talc",
    "core",
    "alloc",
    "compiler_builtins",
];

/// Symbol prefixes of code the compiler generates: the allocator shims
/// (`__rust_alloc`, `__rg_alloc`, `__rdl_alloc`).
pub const GENERATED_PREFIXES: &[&str] = &["__rust_", "__rg_", "__rdl_"];

/// How kallsyms spells methods of types that no crate path names
/// (`<&str as Display>::fmt` is `ref_str__Display__fmt`, `<[T]>::f` is
/// `slice<T>__f`, see `kallsyms::name`): the core and alloc impls on
/// primitive, reference, slice, tuple and `dyn` types, which the hit path
/// calls everywhere and whose crate the name does not say.
const BUILTIN_SELF_TYPES: &[&str] = &[
    "ref_", "refmut_", "ptr_", "ptrmut_", "slice<", "array<", "tuple<", "unit__", "dyn_", "fn<", "unsafe_", "never__",
    "bool__", "char__", "str__", "u8__", "u16__", "u32__", "u64__", "u128__", "usize__", "i8__", "i16__", "i32__",
    "i64__", "i128__", "isize__", "f32__", "f64__",
];

/// Functions written in assembly (boot, exception vectors and return, the
/// context switch, FP/SIMD save and restore, the kretprobe trampoline) and
/// the memory primitives, by symbol.
pub const ASM_SYMBOLS: &[&str] = &[
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
    "ftrace_caller",
    "return_to_handler",
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
];

/// Prefix of the exception entry handlers' names (`el1h_64_sync_handler`,
/// `el0t_64_irq`, ...), which the vector assembly names by convention.
const ENTRY_PREFIXES: &[&str] = &["el0", "el1"];

// SAFETY: the link script gathers every `_notrace_symbols` entry, each a
// NotraceSymbol emitted by `#[notrace]` or `nokprobe_symbol!`, between these
// two symbols, in read-only data that lives as long as the kernel.
arch::linker_table!(
    /// The addresses marked by `#[notrace]` and `nokprobe_symbol!`.
    pub fn marked_symbols() -> [NotraceSymbol] = __start__notrace_symbols..__stop__notrace_symbols
);

// SAFETY: as for `marked_symbols`, for the NotraceModule entries emitted by
// `notrace_module!`.
arch::linker_table!(
    /// The module paths marked by `notrace_module!`.
    pub fn marked_modules() -> [NotraceModule] = __start__notrace_modules..__stop__notrace_modules
);

/// Whether the kallsyms name `name` is the Rust path `path` (a crate or a
/// `module_path!()`) or inside it: kallsyms spells `::` as `__`, so
/// `kernel::kprobes` covers `kernel__kprobes__register_kprobe` and the
/// methods of its types, `kernel__kprobes__Kprobe__addr`.
fn within(name: &str, path: &str) -> bool {
    let mut rest = name;
    for (i, seg) in path.split("::").enumerate() {
        if i > 0 {
            let Some(r) = rest.strip_prefix("__") else { return false };
            rest = r;
        }
        let Some(r) = rest.strip_prefix(seg) else { return false };
        rest = r;
    }
    rest.is_empty() || rest.starts_with("__") || rest.starts_with('<')
}

/// Whether the function called `name` (a demangled kallsyms name) is
/// notrace by its module, crate or assembly name.
pub fn is_notrace_name(name: &str) -> bool {
    ASM_SYMBOLS.contains(&name)
        || GENERATED_PREFIXES.iter().any(|p| name.starts_with(p))
        || BUILTIN_SELF_TYPES.iter().any(|p| name.starts_with(p))
        || ENTRY_PREFIXES.iter().any(|p| name.starts_with(p))
        || CRATES.iter().any(|c| within(name, c))
        || marked_modules().iter().any(|m| within(name, m.0))
}

/// Whether the function starting at `start` carries `#[notrace]` or
/// `nokprobe_symbol!`.
pub fn is_marked_function(start: usize) -> bool {
    marked_symbols().iter().any(|e| e.0 as usize == start)
}

/// Whether the function containing `addr` must not be instrumented.
/// Unknown addresses are refused.
pub fn is_notrace(addr: usize) -> bool {
    let (es, ee) = arch::entry::entry_text_range();
    if (es..ee).contains(&addr) {
        return true;
    }
    match crate::kallsyms::lookup_addr(addr) {
        Some(sym) => is_marked_function(addr - sym.offset as usize) || is_notrace_name(sym.name),
        None => true,
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn every_notrace_mark_names_code_in_kallsyms() {
        let table = crate::kallsyms::table();
        assert!(!marked_symbols().is_empty() && !marked_modules().is_empty());
        for e in marked_symbols() {
            let sym = crate::kallsyms::lookup_addr(e.0 as usize)
                .unwrap_or_else(|| panic!("notrace symbol {:p} not in kallsyms", e.0));
            assert_eq!(sym.offset, 0, "notrace mark {} is not a function start", sym.name);
        }
        // A module's mark is its compiler-given path, which cannot go stale;
        // a module whose functions are all inlined or generic (`sync`,
        // `percpu`) has none of its own in kallsyms.
        let names: alloc::vec::Vec<&str> = marked_modules().iter().map(|m| m.0).collect();
        for must in ["kernel::kprobes", "kernel::debug", "kernel::patching", "kernel::traps"] {
            assert!(names.contains(&must), "{must} not marked: {names:?}");
            assert!(
                table.iter().any(|s| within(s.name, must)),
                "no function of {must} in kallsyms"
            );
        }
        for c in CRATES {
            assert!(
                table.iter().any(|s| within(s.name, c)),
                "notrace crate {c} has no function in kallsyms"
            );
        }
        for n in ASM_SYMBOLS {
            assert!(
                crate::kallsyms::lookup_name(n).is_some(),
                "notrace symbol {n} not in kallsyms"
            );
        }
    }

    #[kernel_test]
    fn probing_any_notrace_function_is_refused() {
        use crate::kprobes::{register_kprobe, Kprobe};
        use alloc::sync::Arc;
        let refused = |addr: usize| {
            crate::kprobes::blacklist::is_blacklisted(addr)
                && register_kprobe(&Arc::new(Kprobe::at(addr))) == Err(crate::errno::Errno::EINVAL)
        };
        for e in marked_symbols() {
            assert!(
                refused(e.0 as usize),
                "probe accepted on {}",
                crate::kallsyms::symbolize(e.0 as usize)
            );
        }
        // Every function of every marked module.
        for m in marked_modules() {
            for sym in crate::kallsyms::table().iter().filter(|s| within(s.name, m.0)) {
                assert!(refused(sym.addr as usize), "probe accepted on {}", sym.name);
            }
        }
        // The scheduler is not marked as a module, but `current` is.
        assert!(refused(crate::sched::current as *const () as usize));
        assert!(!is_notrace_name("kernel__sched__schedule"));
        assert!(is_notrace_name("kernel__kprobes__Kprobe__addr"));
        assert!(is_notrace_name("ref_str__Display__fmt.1"));
        assert!(!is_notrace_name("kernel__kprobes_x__f"));
    }
}
