//! kprobes micro-benchmarks (test builds, boot option `ktest=kprobe-bench`):
//! the cost of a raw BRK exception round trip, of a kprobe hit on a
//! simulated and on a stepped instruction, of a probe at a function's
//! entry armed through ftrace against one inside the same function armed
//! with a BRK, of a kretprobe hit, and of
//! registering and unregistering a probe, printed as
//! `kprobe-bench: <what> <ns> ns` and as ratios to the BRK round trip.
//! `bench/kprobes.py` boots it several times and takes the medians.

use super::kretprobe::{register_kretprobe, unregister_kretprobe, Kretprobe};
use super::{asm_tests, register_kprobe, unregister_kprobe, Kprobe};
use crate::debug::{register_kernel_break_hook, unregister_kernel_break_hook, BreakHook, HookResult};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::hint::black_box;

/// An immediate no other hook uses.
const BENCH_BRK_IMM: u16 = 0x0f0;
/// Loop iterations per timed run.
const ITERS: u64 = 20_000;
/// Rounds of timed runs; the median of each figure is reported.
const RUNS: usize = 7;

fn bench_brk_handler(regs: &mut arch::ptrace::PtRegs, _esr: u64) -> HookResult {
    regs.pc += 4;
    HookResult::Handled
}

/// Time `f` takes, in ns.
fn time_ns(f: impl FnOnce()) -> u64 {
    let t0 = crate::time::ktime_get_ns();
    f();
    crate::time::ktime_get_ns() - t0
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// Per-iteration cost of a run of ITERS iterations above `base`.
fn per_op(total: u64, base: u64) -> u64 {
    total.saturating_sub(base) / ITERS
}

fn ratio(x: u64, brk: u64) -> alloc::string::String {
    let r = x * 100 / brk.max(1);
    alloc::format!("{}.{:02}x", r / 100, r % 100)
}

/// A traceable function for the entry-probe figures.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_bench_ftrace_callee(a: u64) -> u64 {
    black_box(a ^ 0x5a)
}

/// Runs the benchmarks and prints the figures.
pub fn run() {
    let cpus = crate::smp::num_online_cpus();
    crate::pr_info!("kprobe-bench: {cpus} CPUs online, {ITERS} iterations, median of {RUNS} rounds");
    let loop_start = crate::kallsyms::lookup_name("ktest_bench_probe_loop").expect("bench loop in kallsyms");
    // ktest_bench_probe_loop: mov x1, #0; 1: nop; add x1, x1, #1; ...
    let nop_addr = loop_start + 4;
    let add_addr = loop_start + 8;

    let probe_loop = || assert_eq!(asm_tests::bench_probe_loop(black_box(ITERS)), ITERS);
    let brk_loop = || assert_eq!(asm_tests::bench_brk_loop(black_box(ITERS)), ITERS);
    let call_loop = || {
        for i in 0..ITERS {
            black_box(asm_tests::bl_callee(black_box(i), 0));
        }
    };
    let hook = BreakHook {
        imm: BENCH_BRK_IMM,
        mask: 0,
        func: bench_brk_handler,
    };
    // Rounds of every figure in turn, so that a slow spell of the host
    // (QEMU's vCPUs share its cores) hits all of them alike.
    let (mut brk, mut simulated, mut stepped, mut kret) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut on_ftrace, mut on_brk) = (Vec::new(), Vec::new());
    let callee = ktest_bench_ftrace_callee as *const () as usize;
    let callee_loop = || {
        for i in 0..ITERS {
            black_box(ktest_bench_ftrace_callee(black_box(i)));
        }
    };
    for _ in 0..RUNS {
        let plain = time_ns(probe_loop);
        register_kernel_break_hook(hook);
        brk.push(per_op(time_ns(brk_loop), plain));
        unregister_kernel_break_hook(hook);
        for (addr, out) in [(nop_addr, &mut simulated), (add_addr, &mut stepped)] {
            let kp = Arc::new(Kprobe::at(addr).pre(|_, _| 0));
            register_kprobe(&kp).expect("register bench probe");
            out.push(per_op(time_ns(probe_loop), plain));
            unregister_kprobe(&kp);
        }
        let calls = time_ns(call_loop);
        let rp = Arc::new(Kretprobe::symbol("ktest_insn_bl_callee").handler(|_, _| 0));
        register_kretprobe(&rp).expect("register bench kretprobe");
        kret.push(per_op(time_ns(call_loop), calls));
        unregister_kretprobe(&rp);
        // The same empty pre-handler at the entry (through ftrace) and
        // at +8 (a BRK, the first instruction after the ftrace site).
        let calls = time_ns(callee_loop);
        for (addr, out) in [(callee, &mut on_ftrace), (callee + 8, &mut on_brk)] {
            let kp = Arc::new(Kprobe::at(addr).pre(|_, _| 0));
            register_kprobe(&kp).expect("register bench probe");
            out.push(per_op(time_ns(callee_loop), calls));
            unregister_kprobe(&kp);
        }
    }
    let (on_ftrace, on_brk) = (median(on_ftrace), median(on_brk));
    let (brk, simulated, stepped, kret) = (median(brk), median(simulated), median(stepped), median(kret));

    const PAIRS: u64 = 100;
    let t0 = crate::time::ktime_get_ns();
    for _ in 0..PAIRS {
        let kp = Arc::new(Kprobe::at(add_addr).pre(|_, _| 0));
        register_kprobe(&kp).expect("register bench probe");
        unregister_kprobe(&kp);
    }
    let reg = (crate::time::ktime_get_ns() - t0) / PAIRS;

    crate::pr_info!("kprobe-bench: brk_roundtrip {brk} ns");
    crate::pr_info!("kprobe-bench: simulated_hit {simulated} ns");
    crate::pr_info!("kprobe-bench: stepped_hit {stepped} ns");
    crate::pr_info!("kprobe-bench: kretprobe_hit {kret} ns");
    crate::pr_info!("kprobe-bench: entry_ftrace_hit {on_ftrace} ns");
    crate::pr_info!("kprobe-bench: entry_brk_hit {on_brk} ns");
    crate::pr_info!("kprobe-bench: register_unregister {reg} ns ({cpus} CPUs)");
    crate::pr_info!("kprobe-bench: simulated_hit {} brk", ratio(simulated, brk));
    crate::pr_info!("kprobe-bench: stepped_hit {} brk", ratio(stepped, brk));
    crate::pr_info!("kprobe-bench: kretprobe_hit {} brk", ratio(kret, brk));
    crate::pr_info!(
        "kprobe-bench: entry_ftrace_hit {} entry_brk_hit",
        ratio(on_ftrace, on_brk)
    );
}
