//! `ptracebench [ITERATIONS]`: what ptrace costs a tracer, in ns per
//! operation, each figure the median of 5 runs of ITERATIONS (default
//! 1000) in one boot:
//!
//! - `syscall_stop_pair`: `PTRACE_SYSCALL` + `wait4` to a traced
//!   `getpid`'s entry stop and again to its exit stop;
//! - `peekdata`: one `PTRACE_PEEKDATA` of a stopped tracee;
//! - `process_vm_readv_4k`: one `process_vm_readv` of 4 KiB from it;
//! - `singlestep`: one `PTRACE_SINGLESTEP` + `wait4` (`n/a` where the
//!   kernel refuses the request).
//!
//! Prints `ptracebench: NAME N ns` per figure (bench/ptrace.py reads
//! them); exits 1 if a request fails or a stop is not the expected one.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use ptrace_tools::sys;
use rt::process::{fork, Fork};
use rt::{println, Errno};
use uapi::ptrace::*;

rt::main!(main);

const REPS: usize = 5;

/// What the tracer reads: a page of the tracee (the same address in the
/// forked child).
#[repr(align(4096))]
struct Page([u8; 4096]);
static PAGE: Page = Page([0x5a; 4096]);

/// The tracee: getpid forever, until killed.
fn tracee() -> ! {
    // Faulted in before the tracer reads it: this kernel's remote access
    // reads a file-backed page the tracee never touched as zeros.
    // SAFETY: a read of a byte of a static.
    core::hint::black_box(unsafe { core::ptr::read_volatile(PAGE.0.as_ptr()) });
    let _ = sys::ptrace_ctl(PTRACE_TRACEME, 0, 0, 0);
    let _ = rt::process::kill(rt::process::getpid(), uapi::signal::SIGSTOP as i32);
    // SAFETY: getpid takes no memory; the loop never returns (the tracer
    // kills this process).
    unsafe {
        core::arch::asm!(
            "1:",
            "mov x8, #{getpid}",
            "svc #0",
            "b 1b",
            getpid = const uapi::syscalls::nr::GETPID,
            options(noreturn, nostack)
        );
    }
}

fn stop_sig(pid: i32) -> Result<u32, &'static str> {
    let w = sys::wait(pid, 0).map_err(|_| "wait4 failed")?;
    if !uapi::wait::WIFSTOPPED(w.status) {
        return Err("the tracee ended");
    }
    Ok(uapi::wait::WSTOPSIG(w.status) as u32)
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// ns per call of `op`, median of [`REPS`] runs of `n`.
fn measure(n: usize, mut op: impl FnMut() -> Result<(), &'static str>) -> Result<u64, &'static str> {
    let mut runs = Vec::new();
    for _ in 0..REPS {
        let t0 = sys::now_ns();
        for _ in 0..n {
            op()?;
        }
        runs.push((sys::now_ns() - t0) / n as u64);
    }
    Ok(median(runs))
}

fn bench(pid: i32, n: usize) -> Result<(), &'static str> {
    if stop_sig(pid)? != uapi::signal::SIGSTOP {
        return Err("no initial SIGSTOP");
    }
    sys::ptrace_ctl(
        PTRACE_SETOPTIONS,
        pid,
        0,
        (PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL) as usize,
    )
    .map_err(|_| "PTRACE_SETOPTIONS failed")?;
    let syscall_stop = || -> Result<(), &'static str> {
        sys::ptrace_ctl(PTRACE_SYSCALL, pid, 0, 0).map_err(|_| "PTRACE_SYSCALL failed")?;
        match stop_sig(pid)? {
            s if s == uapi::signal::SIGTRAP | 0x80 => Ok(()),
            _ => Err("a stop that is not a syscall stop"),
        }
    };
    // To the first entry stop, so that every pair is entry + exit.
    syscall_stop()?;
    let pair = measure(n, || {
        syscall_stop()?;
        syscall_stop()
    })?;
    println!("ptracebench: syscall_stop_pair {pair} ns");

    let addr = PAGE.0.as_ptr() as u64;
    let peek = measure(n, || match sys::peek(pid, addr) {
        Ok(0x5a5a_5a5a_5a5a_5a5a) => Ok(()),
        Ok(w) => {
            println!("ptracebench: PTRACE_PEEKDATA at {addr:#x} read {w:#x}");
            Err("PTRACE_PEEKDATA read a wrong word")
        }
        Err(_) => Err("PTRACE_PEEKDATA failed"),
    })?;
    println!("ptracebench: peekdata {peek} ns");

    let mut buf = alloc::vec![0u8; 4096];
    let vm = measure(n, || match sys::vm_read(pid, addr, &mut buf) {
        Ok(4096) => Ok(()),
        _ => Err("process_vm_readv failed"),
    })?;
    if buf.iter().any(|&b| b != 0x5a) {
        return Err("process_vm_readv read wrong bytes");
    }
    println!("ptracebench: process_vm_readv_4k {vm} ns");

    match sys::ptrace_ctl(PTRACE_SINGLESTEP, pid, 0, 0) {
        Err(Errno::EIO) => println!("ptracebench: singlestep n/a"),
        Err(_) => return Err("PTRACE_SINGLESTEP failed"),
        Ok(_) => {
            if stop_sig(pid)? != uapi::signal::SIGTRAP {
                return Err("PTRACE_SINGLESTEP stopped with another signal");
            }
            let step = measure(n, || {
                sys::ptrace_ctl(PTRACE_SINGLESTEP, pid, 0, 0).map_err(|_| "PTRACE_SINGLESTEP failed")?;
                match stop_sig(pid)? {
                    s if s == uapi::signal::SIGTRAP => Ok(()),
                    _ => Err("PTRACE_SINGLESTEP stopped with another signal"),
                }
            })?;
            println!("ptracebench: singlestep {step} ns");
        }
    }
    Ok(())
}

fn main(args: rt::Args) -> i32 {
    let n = args
        .get(1)
        .and_then(|a| core::str::from_utf8(a).ok())
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1000);
    let pid = match fork() {
        Ok(Fork::Child) => tracee(),
        Ok(Fork::Parent(pid)) => pid,
        Err(e) => {
            println!("ptracebench: fork: {e:?}");
            return 1;
        }
    };
    let r = bench(pid, n);
    let _ = rt::process::kill(pid, uapi::signal::SIGKILL as i32);
    let _ = sys::wait(pid, 0);
    match r {
        Ok(()) => 0,
        Err(why) => {
            println!("ptracebench: error: {why}");
            1
        }
    }
}
