//! Helpers shared by the proof programs (`forkstress`, `sysfuzz`, `bench`):
//! argument parsing, the monotonic clock, `/proc/meminfo`.
#![no_std]

extern crate alloc;

use alloc::vec::Vec;

use rt::fs;
use rt::syscall::{check, nr, syscall2};
use rt::Errno;

pub const CLOCK_MONOTONIC: usize = uapi::time::CLOCK_MONOTONIC as usize;

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = [0i64; 2];
    // SAFETY: ts is a writable struct timespec.
    unsafe { syscall2(nr::CLOCK_GETTIME, CLOCK_MONOTONIC, ts.as_mut_ptr() as usize) };
    ts[0] as u64 * 1_000_000_000 + ts[1] as u64
}

/// A decimal number (no sign, no spaces).
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u64::from(c - b'0'))
    })
}

/// The whole content of a file.
pub fn read_file(path: &[u8]) -> Result<Vec<u8>, Errno> {
    let fd = fs::open(path, fs::O_RDONLY | fs::O_CLOEXEC, 0)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    let r = loop {
        match fs::read(fd, &mut buf) {
            Ok(0) => break Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::EINTR) => {}
            Err(e) => break Err(e),
        }
    };
    let _ = fs::close(fd);
    r
}

/// `MemFree` of `/proc/meminfo`, in kB (`MemFree:   123456 kB`).
pub fn memfree_kb() -> Result<u64, Errno> {
    let text = read_file(b"/proc/meminfo")?;
    for line in text.split(|&c| c == b'\n') {
        if let Some(rest) = line.strip_prefix(b"MemFree:") {
            let digits: Vec<u8> = rest
                .iter()
                .copied()
                .skip_while(|c| *c == b' ' || *c == b'\t')
                .take_while(u8::is_ascii_digit)
                .collect();
            return parse_u64(&digits).ok_or(Errno::EINVAL);
        }
    }
    Err(Errno::ENOENT)
}

/// `wait4` as a raw call, for callers that want the raw status.
pub fn wait_any() -> Result<(i32, i32), Errno> {
    let mut status: i32 = 0;
    loop {
        // SAFETY: status is a writable int; no rusage.
        let r = check(unsafe {
            rt::syscall::syscall4(
                rt::syscall::nr::WAIT4,
                usize::MAX, // -1: any child
                &mut status as *mut i32 as usize,
                0,
                0,
            )
        });
        match r {
            Ok(pid) => return Ok((pid as i32, status)),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Replaces the process with `/bin/true` (argv `["true"]`, empty
/// environment); exits with 127 if that fails. For a forked child.
pub fn exec_true() -> ! {
    let e = rt::process::execve(b"/bin/true", [&b"true"[..]], []);
    rt::eprintln!("exec /bin/true: {e}");
    rt::process::exit(127)
}
