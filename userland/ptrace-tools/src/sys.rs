//! The raw system calls the tools make: ptrace, wait4 with `__WALL` and a
//! rusage, process_vm_readv, the clock.

use alloc::vec::Vec;
use rt::syscall::{check, nr, syscall2, syscall4, syscall6};
use rt::Errno;
use uapi::ptrace::{PtraceSyscallInfo, PTRACE_GET_SYSCALL_INFO, PTRACE_PEEKDATA};

/// `__WALL`: wait for every child, clone or not.
pub use uapi::wait::WALL;

/// `ptrace(request, pid, addr, data)` as the system call takes it.
///
/// # Safety
/// `addr` and `data` must be what `request` expects: for requests that
/// write the tracer's memory (`PEEK*` into `data`, `GETREGSET`,
/// `GETSIGINFO`, `GETEVENTMSG`, `GET_SYSCALL_INFO`), a pointer to a
/// writable buffer of the size the request writes.
pub unsafe fn ptrace(request: i64, pid: i32, addr: usize, data: usize) -> Result<usize, Errno> {
    // SAFETY: the caller vouches for addr and data.
    check(unsafe { syscall4(nr::PTRACE, request as usize, pid as usize, addr, data) })
}

/// A ptrace request that reads no tracer memory (`CONT`, `SYSCALL`,
/// `SINGLESTEP`, `SETOPTIONS`, `SEIZE`, `INTERRUPT`, `LISTEN`, `DETACH`,
/// `TRACEME`, `KILL`).
pub fn ptrace_ctl(request: i64, pid: i32, addr: usize, data: usize) -> Result<usize, Errno> {
    // SAFETY: these requests take numbers, not tracer pointers.
    unsafe { ptrace(request, pid, addr, data) }
}

/// One state change `wait4` reported.
#[derive(Clone, Copy, Debug)]
pub struct Waited {
    /// The pid that changed state.
    pub pid: i32,
    /// The raw wait status.
    pub status: i32,
    /// The task's system CPU time so far (`ru_stime`), in microseconds.
    pub stime_us: u64,
}

/// `wait4(pid, &status, options | __WALL, &rusage)`, retrying on EINTR.
pub fn wait(pid: i32, options: u32) -> Result<Waited, Errno> {
    let mut status: i32 = 0;
    // struct rusage: 2 timevals then 14 longs.
    let mut ru = [0i64; 18];
    loop {
        // SAFETY: status is a writable int, ru a writable struct rusage.
        let r = check(unsafe {
            syscall4(
                nr::WAIT4,
                pid as usize,
                &mut status as *mut i32 as usize,
                (options | WALL) as usize,
                ru.as_mut_ptr() as usize,
            )
        });
        match r {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(p) => {
                return Ok(Waited {
                    pid: p as i32,
                    status,
                    stime_us: (ru[2] as u64).saturating_mul(1_000_000).saturating_add(ru[3] as u64),
                })
            }
        }
    }
}

/// `PTRACE_GET_SYSCALL_INFO`, parsed (the layout of `uapi::ptrace`).
pub fn syscall_info(pid: i32) -> Result<PtraceSyscallInfo, Errno> {
    let mut b = [0u8; PtraceSyscallInfo::SIZE];
    // SAFETY: b is writable and as large as the size passed.
    let len = unsafe { ptrace(PTRACE_GET_SYSCALL_INFO, pid, b.len(), b.as_mut_ptr() as usize) }?;
    Ok(crate::fmt::parse_syscall_info(&b, len))
}

/// `PTRACE_PEEKDATA`: the word at `addr` in the tracee (the system call
/// stores it at `data`).
pub fn peek(pid: i32, addr: u64) -> Result<u64, Errno> {
    let mut word: u64 = 0;
    // SAFETY: word is a writable u64, what PEEKDATA stores.
    unsafe { ptrace(PTRACE_PEEKDATA, pid, addr as usize, &mut word as *mut u64 as usize) }?;
    Ok(word)
}

/// `process_vm_readv` of `buf.len()` bytes at `addr` in `pid`: how many
/// were read.
pub fn vm_read(pid: i32, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let local = [buf.as_mut_ptr() as usize, buf.len()];
    let remote = [addr as usize, buf.len()];
    // SAFETY: one local iovec over buf (writable, of its length); the
    // remote iovec is only read by the kernel.
    check(unsafe {
        syscall6(
            nr::PROCESS_VM_READV,
            pid as usize,
            local.as_ptr() as usize,
            1,
            remote.as_ptr() as usize,
            1,
            0,
        )
    })
}

/// `len` bytes of the tracee at `addr`: process_vm_readv, or word by word
/// with PEEKDATA where it fails; `None` if the first byte cannot be read.
/// Short when the memory ends.
pub fn read_mem(pid: i32, addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut out = alloc::vec![0u8; len];
    let mut done = 0;
    while done < len {
        // Never across a page: the next page may be unmapped.
        let at = addr.wrapping_add(done as u64);
        let room = (4096 - (at % 4096) as usize).min(len - done);
        match vm_read(pid, at, &mut out[done..done + room]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(_) => {
                let aligned = at & !7;
                let Ok(w) = peek(pid, aligned) else { break };
                let bytes = w.to_le_bytes();
                let skip = (at - aligned) as usize;
                let n = (8 - skip).min(len - done);
                out[done..done + n].copy_from_slice(&bytes[skip..skip + n]);
                done += n;
            }
        }
    }
    if done == 0 && len > 0 {
        return None;
    }
    out.truncate(done);
    Some(out)
}

/// The NUL-terminated string at `addr`, at most `max` bytes of it: (the
/// bytes without the NUL, whether the NUL was found).
pub fn read_cstr(pid: i32, addr: u64, max: usize) -> Option<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < max {
        let room = (4096 - (at % 4096) as usize).min(max - out.len()).min(256);
        let chunk = read_mem(pid, at, room)?;
        if let Some(i) = chunk.iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..i]);
            return Some((out, true));
        }
        if chunk.len() < room {
            out.extend_from_slice(&chunk);
            return Some((out, false));
        }
        out.extend_from_slice(&chunk);
        at = at.wrapping_add(room as u64);
    }
    Some((out, false))
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = [0i64; 2];
    // SAFETY: ts is a writable struct timespec.
    unsafe { syscall2(nr::CLOCK_GETTIME, 1, ts.as_mut_ptr() as usize) };
    (ts[0] as u64).wrapping_mul(1_000_000_000).wrapping_add(ts[1] as u64)
}
