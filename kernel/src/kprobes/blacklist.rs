//! Where kprobes may not go (Linux's kprobe blacklist): every function
//! marked notrace (`crate::notrace`, which the function tracer shares).

/// Whether `addr` may not be probed.
pub fn is_blacklisted(addr: usize) -> bool {
    crate::notrace::is_notrace(addr)
}

/// The blacklisted functions, `(start, end, name)`, for debugfs.
pub fn entries() -> alloc::vec::Vec<(u64, u64, &'static str)> {
    crate::kallsyms::table()
        .iter()
        .filter(|s| crate::notrace::is_notrace_name(s.name) || crate::notrace::is_marked_function(s.addr as usize))
        .map(|s| (s.addr, s.addr + s.size, s.name))
        .collect()
}
