//! The kernel's name and version as `uname` and `/proc/version` give them
//! (Linux's init/version.c).

/// `uname -s`.
pub const UTS_SYSNAME: &str = "Linux";
/// `uname -r`: the Linux release whose interfaces this kernel follows.
pub const UTS_RELEASE: &str = "6.12.0-tracing";
/// `uname -v`.
pub const UTS_VERSION: &str = "#1 SMP";

/// The format of `/proc/version` (Linux's `linux_proc_banner`), filled
/// with the system name, release and version; exported as a data symbol,
/// as `@linux_proc_banner` fetch arguments read it (NUL-terminated).
#[no_mangle]
#[used]
#[allow(unsafe_code)] // exported under Linux's name
pub static linux_proc_banner: [u8; BANNER.len() + 1] = {
    let mut b = [0u8; BANNER.len() + 1];
    let mut i = 0;
    while i < BANNER.len() {
        b[i] = BANNER.as_bytes()[i];
        i += 1;
    }
    b
};

const BANNER: &str = "%s version %s (root@tracing) (rustc nightly-2026-05-20, rust-lld) %s\n";

/// `/proc/version`: the banner with its three `%s` filled in order.
pub fn proc_version() -> alloc::string::String {
    let mut out = alloc::string::String::new();
    let mut args = [UTS_SYSNAME, UTS_RELEASE, UTS_VERSION].into_iter();
    for (i, part) in BANNER.split("%s").enumerate() {
        if i > 0 {
            out.push_str(args.next().unwrap_or(""));
        }
        out.push_str(part);
    }
    out
}

#[cfg(feature = "ktest")]
mod tests {
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn proc_version_is_the_banner_filled_and_the_banner_is_a_data_symbol() {
        assert_eq!(
            super::proc_version(),
            "Linux version 6.12.0-tracing (root@tracing) (rustc nightly-2026-05-20, rust-lld) #1 SMP\n"
        );
        let addr = crate::kallsyms::lookup_symbol("linux_proc_banner").expect("in kallsyms");
        assert_eq!(addr, super::linux_proc_banner.as_ptr() as usize);
        assert!(
            crate::kallsyms::lookup_name("linux_proc_banner").is_none(),
            "not a function"
        );
        let sym = crate::kallsyms::data_table().lookup_addr(addr as u64 + 3).unwrap();
        assert_eq!(
            (sym.name, sym.offset, sym.size),
            ("linux_proc_banner", 3, super::linux_proc_banner.len() as u64)
        );
    }
}
