//! Linker-script-defined regions of the image that the kernel reads.

// SAFETY: the link script brackets the read-only `.kallsyms` section with
// these symbols; it is mapped for the kernel's lifetime.
crate::linker_table!(
    /// The embedded kallsyms table (empty in the first link).
    pub fn kallsyms_blob() -> [u8] = __kallsyms_start..__kallsyms_end
);

// SAFETY: the link script brackets the read-only `.kallsyms_data` section
// with these symbols; it is mapped for the kernel's lifetime.
crate::linker_table!(
    /// The embedded table of data objects (`.kallsyms_data`; empty in the
    /// first link), in the same format as [`kallsyms_blob`].
    pub fn kallsyms_data_blob() -> [u8] = __kallsyms_data_start..__kallsyms_data_end
);

// SAFETY: the link script brackets the read-only `.BTF` section with these
// symbols; it is mapped for the kernel's lifetime.
crate::linker_table!(
    /// The embedded function prototypes (`.BTF`; empty in the first link).
    pub fn btf_blob() -> [u8] = __start_BTF..__stop_BTF
);

/// The entries between two link-script symbols, as a slice.
///
/// # Safety
/// `start..stop` must bracket a section the link script gathers, holding
/// only properly aligned, initialised `T`s that live, unmodified, for the
/// kernel's lifetime; `stop` must not precede `start`.
pub unsafe fn linker_table<T>(start: *const T, stop: *const T) -> &'static [T] {
    // SAFETY: the caller guarantees both symbols bracket one section of
    // `T`s, so the distance is a whole number of entries, non-negative.
    unsafe { core::slice::from_raw_parts(start, stop.offset_from(start) as usize) }
}

/// Defines a function returning the entries of a link section gathered
/// between a `__start_<name>` and a `__stop_<name>` symbol, as Linux's
/// `__start___ex_table`/`__stop___ex_table` pairs: the exception table,
/// the BUG table, the kprobe blacklist, the kernel tests, and the jump and
/// patch-site tables to come.
///
/// The invocation states the section's contract: only `$ty`s emitted by
/// the code that fills it lie between the two symbols (write it as a
/// `// SAFETY:` comment above the invocation).
///
/// ```ignore
/// // SAFETY: the link script gathers every `__bug_table` entry, each a
/// // BugEntry emitted by the macros below, between these symbols.
/// arch::linker_table!(fn bug_table() -> [BugEntry] = __start___bug_table..__stop___bug_table);
/// ```
#[macro_export]
macro_rules! linker_table {
    ($(#[$meta:meta])* $vis:vis fn $name:ident() -> [$ty:ty] = $start:ident..$stop:ident) => {
        $(#[$meta])*
        #[allow(unsafe_code)] // reads a link section; the contract is stated at the invocation
        $vis fn $name() -> &'static [$ty] {
            extern "C" {
                static $start: u8;
                static $stop: u8;
            }
            let start = core::ptr::addr_of!($start).cast::<$ty>();
            let stop = core::ptr::addr_of!($stop).cast::<$ty>();
            // SAFETY: the invocation vouches that only `$ty`s lie between
            // the two symbols, for the kernel's lifetime.
            unsafe { $crate::sections::linker_table(start, stop) }
        }
    };
}
