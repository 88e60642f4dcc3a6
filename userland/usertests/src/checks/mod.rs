//! The checks, grouped by subsystem; each group is a list of [`Check`]s.

use alloc::format;
use alloc::vec::Vec;

use crate::Check;

pub mod abi;
pub mod counter;
pub mod cputime;
pub mod el0regs;
pub mod filemap;
pub mod fs;
pub mod fsrobust;
pub mod lifecycle;
pub mod links;
pub mod mm;
pub mod mmrobust;
pub mod probes;
pub mod process;
pub mod procfd;
pub mod rseq;
pub mod rwerrno;
pub mod signal;
pub mod sigrobust;
pub mod sigtarget;
pub mod sigwait;
pub mod splice;
pub mod system;
pub mod thread;
pub mod time;
pub mod timeouts;
pub mod vdso;
pub mod vecio;

/// Every check, in the order they run.
pub static ALL: &[&[Check]] = &[
    fs::CHECKS,
    fsrobust::CHECKS,
    process::CHECKS,
    signal::CHECKS,
    sigrobust::CHECKS,
    mm::CHECKS,
    mmrobust::CHECKS,
    thread::CHECKS,
    time::CHECKS,
    counter::CHECKS,
    timeouts::CHECKS,
    el0regs::CHECKS,
    lifecycle::CHECKS,
    cputime::CHECKS,
    abi::CHECKS,
    vdso::CHECKS,
    filemap::CHECKS,
    links::CHECKS,
    system::CHECKS,
    sigwait::CHECKS,
    sigtarget::CHECKS,
    procfd::CHECKS,
    rseq::CHECKS,
    splice::CHECKS,
    rwerrno::CHECKS,
    vecio::CHECKS,
    probes::CHECKS,
];

/// A scratch path in /tmp that no other check (or run) uses.
pub fn scratch(name: &str) -> Vec<u8> {
    format!("/tmp/ut{}-{name}", crate::sys::getpid()).into_bytes()
}

/// A field of /proc/meminfo, in KiB.
pub fn meminfo_kib(field: &str) -> Result<u64, crate::Fail> {
    use crate::sys::{close, open, read, O_CLOEXEC, O_RDONLY};
    use crate::Context;
    let fd = open(b"/proc/meminfo", O_RDONLY | O_CLOEXEC, 0).ctx("open /proc/meminfo")?;
    let mut text = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match read(fd, &mut buf).ctx("read /proc/meminfo")? {
            0 => break,
            n => text.extend_from_slice(&buf[..n]),
        }
    }
    close(fd);
    let text = core::str::from_utf8(&text).map_err(|_| crate::Fail("/proc/meminfo is not text".into()))?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| crate::Fail(format!("no {field} in /proc/meminfo")))
}
