//! `sleeplat SHORT LONG`: the workload of the syscall-latency histogram
//! test (tests/hist.rs). It makes SHORT `nanosleep` calls of 1 ms, then
//! LONG of 5 ms, times each one itself with `CLOCK_MONOTONIC`, and prints
//! what it saw, bucketed by milliseconds as `lat.buckets=1000` buckets
//! microseconds:
//!
//! ```text
//! sleeplat: calls 8
//! sleeplat: bucket 1000 5
//! sleeplat: bucket 5000 3
//! ```
//!
//! Its own timing includes the system call's entry and exit, so a call
//! it puts in a bucket below 5 ms took less than that in the kernel too.
#![no_std]
#![no_main]

use kprobetests::parse::decimal;
use kprobetests::sys::{now_ns, sleep_ms};
use rt::println;

rt::main!(main);

/// The buckets it counts in, like `.buckets=1000` over microseconds.
const BUCKETS: usize = 64;

fn main(args: rt::Args) -> i32 {
    let (Some(short), Some(long)) = (args.get(1).and_then(decimal), args.get(2).and_then(decimal)) else {
        println!("usage: sleeplat SHORT LONG");
        return 2;
    };
    let mut counts = [0u64; BUCKETS];
    for ms in core::iter::repeat_n(1, short as usize).chain(core::iter::repeat_n(5, long as usize)) {
        let t0 = now_ns();
        sleep_ms(ms);
        let us = (now_ns() - t0) / 1000;
        let b = ((us / 1000) as usize).min(BUCKETS - 1);
        counts[b] += 1;
    }
    println!("sleeplat: calls {}", short + long);
    for (b, n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
        println!("sleeplat: bucket {} {}", b * 1000, n);
    }
    0
}
