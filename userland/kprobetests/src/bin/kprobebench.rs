//! `kprobebench [--calls N] [--cycles M]`: what kprobe events cost, timed
//! with the generic timer's virtual counter (`CNTVCT_EL0`, read at EL0).
//! For each figure it prints the median of 5 repetitions in ns per
//! operation:
//!
//! ```text
//! kprobebench: counter 62500000 Hz, calls 20000, cycles 10, reps 5
//! kprobebench: getpid 1234 ns
//! kprobebench: getpid_kprobe 1234 ns
//! kprobebench: getpid_kprobe_tracing_off 1234 ns
//! kprobebench: getpid_kretprobe 1234 ns
//! kprobebench: getpid_kprobe_fetchargs 1234 ns
//! kprobebench: probe_define_enable_disable_remove 1234 ns
//! ```
//!
//! `getpid` has nothing enabled; the `getpid_*` figures have one event on
//! `__arm64_sys_getpid` enabled: `p:` (with `tracing_on` 1, then 0), `r:`,
//! and `p:` with `%x0 %x1 +0(%sp):u64 $comm`. The last figure is one
//! cycle of defining, enabling, disabling and removing a `p:` event. Any
//! failure prints `kprobebench: FAIL ...` and exits 1; tracing is put back
//! as found (no kprobe events, tracing on) either way.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;

use kprobetests::parse::decimal;
use kprobetests::sys::{cntfrq, cntvct, getpid, ticks_to_ns};
use kprobetests::tracefs::Tracefs;
use rt::println;

rt::main!(main);

const REPS: usize = 5;
const EVENT: &str = "kb_getpid";

fn fail(what: &str, e: impl core::fmt::Debug) -> ! {
    println!("kprobebench: FAIL {what}: {e:?}");
    if let Ok(t) = Tracefs::find() {
        let _ = cleanup(&t);
    }
    rt::process::exit(1)
}

fn cleanup(t: &Tracefs) -> Result<(), rt::Errno> {
    match t.write("events/kprobes/enable", "0") {
        Err(rt::Errno::ENOENT) | Ok(()) => {}
        Err(e) => return Err(e),
    }
    t.write("kprobe_events", "")?;
    t.tracing_on(true)?;
    t.clear_trace()
}

/// Median over [`REPS`] runs of `f`, each doing `n` operations, in ns per
/// operation.
fn measure(n: u64, freq: u64, mut f: impl FnMut(u64)) -> u64 {
    let mut t = [0u64; REPS];
    for slot in t.iter_mut() {
        let start = cntvct();
        f(n);
        *slot = ticks_to_ns(cntvct() - start, freq) / n.max(1);
    }
    t.sort_unstable();
    t[REPS / 2]
}

fn getpids(n: u64) {
    for _ in 0..n {
        core::hint::black_box(getpid());
    }
}

/// getpid with `def` defined and enabled, tracing_on as given.
fn with_event(t: &Tracefs, def: &str, tracing_on: bool, calls: u64, freq: u64) -> u64 {
    cleanup(t).unwrap_or_else(|e| fail("reset", e));
    t.define(def).unwrap_or_else(|e| fail(def, e));
    t.tracing_on(tracing_on).unwrap_or_else(|e| fail("tracing_on", e));
    t.enable(EVENT, true).unwrap_or_else(|e| fail("enable", e));
    // One warm-up pass (page faults, the buffer's first pages).
    getpids(calls / 10);
    let ns = measure(calls, freq, getpids);
    t.enable(EVENT, false).unwrap_or_else(|e| fail("disable", e));
    ns
}

fn lifecycle(t: &Tracefs, cycles: u64) {
    for _ in 0..cycles {
        t.define(&format!("p:{EVENT} __arm64_sys_getpid"))
            .unwrap_or_else(|e| fail("define", e));
        t.enable(EVENT, true).unwrap_or_else(|e| fail("enable", e));
        t.enable(EVENT, false).unwrap_or_else(|e| fail("disable", e));
        t.remove(EVENT).unwrap_or_else(|e| fail("remove", e));
    }
}

fn main(args: rt::Args) -> i32 {
    let (mut calls, mut cycles) = (20_000u64, 10u64);
    let mut i = 1;
    while let Some(a) = args.get(i) {
        match (a, args.get(i + 1).and_then(decimal)) {
            (b"--calls", Some(v)) if v > 0 => calls = v,
            (b"--cycles", Some(v)) if v > 0 => cycles = v,
            _ => {
                println!("usage: kprobebench [--calls N] [--cycles M]");
                return 2;
            }
        }
        i += 2;
    }
    let t = Tracefs::find().unwrap_or_else(|e| fail("no tracefs with kprobe_events", e));
    let freq = cntfrq();
    if freq == 0 {
        fail("CNTFRQ_EL0", 0);
    }
    println!("kprobebench: counter {freq} Hz, calls {calls}, cycles {cycles}, reps {REPS}");
    cleanup(&t).unwrap_or_else(|e| fail("reset", e));
    getpids(calls / 10);
    println!("kprobebench: getpid {} ns", measure(calls, freq, getpids));
    let p = format!("p:{EVENT} __arm64_sys_getpid");
    println!(
        "kprobebench: getpid_kprobe {} ns",
        with_event(&t, &p, true, calls, freq)
    );
    println!(
        "kprobebench: getpid_kprobe_tracing_off {} ns",
        with_event(&t, &p, false, calls, freq)
    );
    let r = format!("r:{EVENT} __arm64_sys_getpid");
    println!(
        "kprobebench: getpid_kretprobe {} ns",
        with_event(&t, &r, true, calls, freq)
    );
    let f = format!("p:{EVENT} __arm64_sys_getpid %x0 %x1 +0(%sp):u64 $comm");
    println!(
        "kprobebench: getpid_kprobe_fetchargs {} ns",
        with_event(&t, &f, true, calls, freq)
    );
    cleanup(&t).unwrap_or_else(|e| fail("reset", e));
    println!(
        "kprobebench: probe_define_enable_disable_remove {} ns",
        measure(cycles, freq, |n| lifecycle(&t, n))
    );
    cleanup(&t).unwrap_or_else(|e| fail("reset", e));
    0
}
