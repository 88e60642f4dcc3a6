//! Functions kept under Linux's names although nothing here calls them
//! (Linux's `EXPORT_SYMBOL` keeps a symbol for modules; here the point is
//! that a global function Linux's build leaves out of line, such as
//! `do_sys_open`, exists in kallsyms to be probed and traced, where the
//! linker would otherwise drop an uncalled function).

/// One `__ksymtab` entry: a function's address.
#[repr(transparent)]
pub struct KernelSymbol(pub *const ());

// SAFETY: the pointer is only kept, never dereferenced.
#[allow(unsafe_code)]
unsafe impl Sync for KernelSymbol {}

/// Keeps the function `f` in the image and in kallsyms (Linux's
/// `EXPORT_SYMBOL`, for a function nothing here calls).
#[macro_export]
macro_rules! export_symbol {
    ($f:path) => {
        const _: () = {
            #[allow(unsafe_code)] // link_section: the kept table itself
            #[used]
            #[link_section = "__ksymtab"]
            static ENTRY: $crate::ksymtab::KernelSymbol = $crate::ksymtab::KernelSymbol($f as *const ());
        };
    };
}
