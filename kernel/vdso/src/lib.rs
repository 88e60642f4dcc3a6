//! The vDSO (Linux's arch/arm64/kernel/vdso/): a small ELF shared object
//! that the kernel maps into every process, with Linux's symbols and
//! version (`LINUX_2.6.39`), so that `clock_gettime`, `gettimeofday` and
//! `clock_getres` run without a system call and signal handlers return
//! through `__kernel_rt_sigreturn`.
//!
//! This crate is the part both sides share, [`datapage`] (the `[vvar]`
//! layout and the clock arithmetic, unit-tested on the host), plus, when
//! built for AArch64, the linked image ([`image`]): build.rs compiles
//! image/vdso.rs for `aarch64-unknown-none` as position-independent code
//! and links it with image/vdso.lds into a shared object, then checks it.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod datapage;

use uapi::time::clockid;

/// Names the vDSO exports, all under version [`VERSION`], as Linux's
/// arm64 vdso.lds.S lists them (Linux 6.12 adds `__kernel_getrandom`,
/// which this vDSO does not have: glibc then uses the system call).
pub const SYMBOLS: [&str; 4] = [
    "__kernel_rt_sigreturn",
    "__kernel_gettimeofday",
    "__kernel_clock_gettime",
    "__kernel_clock_getres",
];

/// The symbol version of every export.
pub const VERSION: &str = "LINUX_2.6.39";

/// Pages of `[vvar]` mapped below the vDSO's text (the data page; Linux
/// adds a second one for time namespaces, which this kernel does not have).
pub const VVAR_PAGES: usize = 1;

/// The linked vDSO (`vdso.so`), for the kernel to map.
#[cfg(target_arch = "aarch64")]
pub fn image() -> &'static [u8] {
    include_bytes!(concat!(env!("OUT_DIR"), "/vdso.so"))
}

/// The offset of `__kernel_rt_sigreturn` in the image (the signal return
/// address of handlers without SA_RESTORER), found by build.rs.
#[cfg(target_arch = "aarch64")]
pub const SIGRETURN_OFFSET: u64 = include!(concat!(env!("OUT_DIR"), "/sigreturn_offset.rs"));

#[cfg(test)]
mod tests;
