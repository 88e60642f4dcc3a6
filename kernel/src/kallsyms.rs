//! The kernel's symbol table, embedded by the build's second link:
//! name → address and address → `symbol+0xoff/0xsize`.

crate::notrace_module!();

use kallsyms::{Kallsyms, Symbol, SymbolizedAddr};

static TABLE: spin::Once<Kallsyms<'static>> = spin::Once::new();

/// The table (empty if the image has none or it is malformed).
pub fn table() -> &'static Kallsyms<'static> {
    TABLE.call_once(|| {
        Kallsyms::new(arch::sections::kallsyms_blob())
            .or_else(|_| Kallsyms::new(&EMPTY))
            .expect("the empty table is valid")
    })
}

static DATA_TABLE: spin::Once<Kallsyms<'static>> = spin::Once::new();

/// The data objects' table (CONFIG_KALLSYMS_ALL's part): statics by their
/// kallsyms names, in read-only data, data and bss.
pub fn data_table() -> &'static Kallsyms<'static> {
    DATA_TABLE.call_once(|| {
        Kallsyms::new(arch::sections::kallsyms_data_blob())
            .or_else(|_| Kallsyms::new(&EMPTY))
            .expect("the empty table is valid")
    })
}

/// Address of the function, or else the data object, called `name`: what
/// `@SYM` in a probe's fetch arguments means.
pub fn lookup_symbol(name: &str) -> Option<usize> {
    lookup_name(name).or_else(|| data_table().lookup_name(name).map(|s| s.addr as usize))
}

/// A valid table with no symbols, used when the image has none.
static EMPTY: [u8; kallsyms::HEADER_LEN + 4] = {
    let mut b = [0u8; kallsyms::HEADER_LEN + 4];
    b[0] = b'K';
    b[1] = b'S';
    b[2] = b'Y';
    b[3] = b'M';
    b[4] = kallsyms::VERSION as u8;
    b
};

/// Address of the function whose kallsyms name is exactly `name` (the
/// one-token spelling of `kallsyms::name`, e.g. `kernel__sched__schedule`
/// for the Rust path `kernel::sched::schedule`, or `name.2` for one copy of
/// a shared name).
pub fn lookup_name(name: &str) -> Option<usize> {
    table().lookup_name(name).map(|s| s.addr as usize)
}

/// The function a probe on `name` means, with Linux's errors for a probe
/// definition: `ENOENT` if no function has that name, `EADDRNOTAVAIL` if
/// several do (then listed as `name.1`, `name.2`, ...), as
/// `validate_probe_symbol()` refuses a non-unique symbol.
pub fn lookup_unique_name(name: &str) -> Result<Symbol<'static>, crate::errno::Errno> {
    table().lookup_unique(name).map_err(|e| match e {
        kallsyms::LookupError::NotFound => crate::errno::Errno::ENOENT,
        kallsyms::LookupError::NotUnique => crate::errno::Errno::EADDRNOTAVAIL,
    })
}

/// The function containing `addr`.
pub fn lookup_addr(addr: usize) -> Option<Symbol<'static>> {
    table().lookup_addr(addr as u64)
}

/// `addr` for printing: `symbol+0xoff/0xsize`, or the raw address.
pub fn symbolize(addr: usize) -> SymbolizedAddr<'static> {
    table().symbolize(addr as u64)
}
