//! Linker-script-defined regions of the image that the kernel reads.

extern "C" {
    static __kallsyms_start: u8;
    static __kallsyms_end: u8;
}

/// The embedded kallsyms table (empty in the first link).
pub fn kallsyms_blob() -> &'static [u8] {
    let start = core::ptr::addr_of!(__kallsyms_start);
    let end = core::ptr::addr_of!(__kallsyms_end);
    // SAFETY: the link script brackets the read-only `.kallsyms` section
    // with these symbols; it is mapped for the kernel's lifetime.
    unsafe { core::slice::from_raw_parts(start, end as usize - start as usize) }
}
