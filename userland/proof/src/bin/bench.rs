//! `bench`: times a few kernel round trips with `CLOCK_MONOTONIC` and
//! prints, for each, the median of 3 repetitions in ns per operation:
//!
//! ```text
//! bench: counts getpid=100000 fork_exit_wait=200 fork_exec_wait=100 pipe_roundtrip=2000 reps=3
//! bench: getpid 1234 ns
//! bench: fork_exit_wait 1234 ns
//! bench: fork_exec_wait 1234 ns
//! bench: pipe_roundtrip 1234 ns
//! ```
//!
//! Any failure prints `bench: FAIL ...` and exits 1.
#![no_std]
#![no_main]

use proof::{exec_true, now_ns};
use rt::fs;
use rt::println;
use rt::process::{exit, fork, waitpid, Fork, WaitStatus};
use rt::syscall::{nr, syscall0};

rt::main!(main);

const REPS: usize = 3;
const GETPID: u64 = 100_000;
const FORK_EXIT: u64 = 200;
const FORK_EXEC: u64 = 100;
const PIPE: u64 = 2_000;

fn fail(what: &str, e: impl core::fmt::Display) -> ! {
    println!("bench: FAIL {what}: {e}");
    exit(1)
}

fn getpid(n: u64) {
    for _ in 0..n {
        // SAFETY: getpid takes no arguments.
        core::hint::black_box(unsafe { syscall0(nr::GETPID) });
    }
}

fn fork_wait(n: u64, exec: bool) {
    for _ in 0..n {
        match fork() {
            Ok(Fork::Child) => {
                if exec {
                    exec_true()
                }
                exit(0)
            }
            Ok(Fork::Parent(pid)) => match waitpid(pid) {
                Ok(WaitStatus::Exited(0)) => {}
                Ok(st) => fail("child status", format_args!("{st:?}")),
                Err(e) => fail("wait4", e),
            },
            Err(e) => fail("fork", e),
        }
    }
}

fn read1(fd: i32) -> bool {
    let mut b = [0u8; 1];
    loop {
        match fs::read(fd, &mut b) {
            Ok(1) => return true,
            Ok(_) => return false,
            Err(rt::Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}

/// 1 byte to a child over one pipe, back over another, n times.
fn pipe_roundtrip(n: u64) {
    let a = fs::pipe2(fs::O_CLOEXEC).unwrap_or_else(|e| fail("pipe2", e));
    let b = fs::pipe2(fs::O_CLOEXEC).unwrap_or_else(|e| fail("pipe2", e));
    match fork() {
        Ok(Fork::Child) => {
            let _ = fs::close(a[1]);
            let _ = fs::close(b[0]);
            while read1(a[0]) {
                if fs::write(b[1], b"x") != Ok(1) {
                    exit(1);
                }
            }
            exit(0)
        }
        Ok(Fork::Parent(pid)) => {
            let _ = fs::close(a[0]);
            let _ = fs::close(b[1]);
            for _ in 0..n {
                if fs::write(a[1], b"x") != Ok(1) || !read1(b[0]) {
                    fail("pipe ping-pong", "short transfer");
                }
            }
            let _ = fs::close(a[1]);
            let _ = fs::close(b[0]);
            match waitpid(pid) {
                Ok(WaitStatus::Exited(0)) => {}
                Ok(st) => fail("pipe child status", format_args!("{st:?}")),
                Err(e) => fail("wait4", e),
            }
        }
        Err(e) => fail("fork", e),
    }
}

/// Median over REPS runs of f(n), in ns per operation.
fn measure(n: u64, f: impl Fn(u64)) -> u64 {
    let mut t = [0u64; REPS];
    for slot in t.iter_mut() {
        let start = now_ns();
        f(n);
        *slot = (now_ns() - start) / n;
    }
    t.sort_unstable();
    t[REPS / 2]
}

fn main(_args: rt::Args) -> i32 {
    println!(
        "bench: counts getpid={GETPID} fork_exit_wait={FORK_EXIT} fork_exec_wait={FORK_EXEC} \
         pipe_roundtrip={PIPE} reps={REPS}"
    );
    println!("bench: getpid {} ns", measure(GETPID, getpid));
    println!(
        "bench: fork_exit_wait {} ns",
        measure(FORK_EXIT, |n| fork_wait(n, false))
    );
    println!(
        "bench: fork_exec_wait {} ns",
        measure(FORK_EXEC, |n| fork_wait(n, true))
    );
    println!("bench: pipe_roundtrip {} ns", measure(PIPE, pipe_roundtrip));
    0
}
