//! `forkstress [-p] N`: N cycles of fork + execve("/bin/true") + wait4, up
//! to 4 children in flight at once; each child must exit with status 0.
//!
//! Output: `forkstress: N cycles ok` (exit 0), or `forkstress: FAIL ...`
//! (exit 1). With `-p`, `memfree-before: <kB>` and `memfree-after: <kB>`
//! (`MemFree` of `/proc/meminfo`) around the cycles, or
//! `forkstress: memfree skipped (...)` when it cannot be read.
#![no_std]
#![no_main]

use proof::{exec_true, memfree_kb, parse_u64, wait_any};
use rt::println;
use rt::process::{fork, Fork, WaitStatus};

rt::main!(main);

const IN_FLIGHT: usize = 4;

fn usage() -> i32 {
    rt::eprintln!("usage: forkstress [-p] N");
    2
}

fn memfree(label: &str) {
    match memfree_kb() {
        Ok(kb) => println!("memfree-{label}: {kb}"),
        Err(e) => println!("forkstress: memfree skipped (/proc/meminfo: {e})"),
    }
}

fn main(args: rt::Args) -> i32 {
    let mut mem = false;
    let mut n = None;
    for a in args.iter().skip(1) {
        if a == b"-p" {
            mem = true;
        } else if n.is_none() {
            n = parse_u64(a);
            if n.is_none() {
                return usage();
            }
        } else {
            return usage();
        }
    }
    let Some(n) = n else { return usage() };
    if mem {
        memfree("before");
    }
    let mut started = 0u64;
    let mut done = 0u64;
    let mut pids = [0i32; IN_FLIGHT];
    let mut fail = false;
    while done < n {
        // Fill every free slot, then reap one child.
        while started < n && !fail {
            let Some(slot) = pids.iter().position(|&p| p == 0) else {
                break;
            };
            match fork() {
                Ok(Fork::Child) => exec_true(),
                Ok(Fork::Parent(pid)) => {
                    pids[slot] = pid;
                    started += 1;
                }
                Err(e) => {
                    println!("forkstress: FAIL fork at cycle {started}: {e}");
                    fail = true;
                }
            }
        }
        if pids.iter().all(|&p| p == 0) {
            break;
        }
        match wait_any() {
            Ok((pid, status)) => {
                let Some(slot) = pids.iter().position(|&p| p == pid) else {
                    println!("forkstress: FAIL wait4 returned unknown pid {pid}");
                    return 1;
                };
                pids[slot] = 0;
                done += 1;
                let st = WaitStatus::from_raw(status);
                if st != WaitStatus::Exited(0) {
                    println!("forkstress: FAIL child {pid} status {status:#x} ({st:?})");
                    fail = true;
                }
            }
            Err(e) => {
                println!("forkstress: FAIL wait4: {e}");
                return 1;
            }
        }
    }
    if fail {
        return 1;
    }
    println!("forkstress: {n} cycles ok");
    if mem {
        // A reaped child may still be leaving its CPU (its kernel stack is
        // freed once it is switched out): let the machine settle first.
        let ts: [i64; 2] = [0, 100_000_000];
        // SAFETY: nanosleep reads the timespec; no remaining-time pointer.
        unsafe { rt::syscall::syscall2(rt::syscall::nr::NANOSLEEP, ts.as_ptr() as usize, 0) };
        memfree("after");
    }
    0
}
