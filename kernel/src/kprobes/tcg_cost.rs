//! What one instruction of each class QEMU's TCG makes expensive costs in
//! wall time here (test builds, boot option `ktest=tcg-cost`): loops of
//! `ITERS` iterations, each running the class's sequence `REPS` times,
//! timed against the same loop of NOPs, printed as
//! `tcg-cost: <class> <ps> ps` (picoseconds per sequence, so that the
//! cheap ones do not round to 0). The figures price the hit path's
//! operations (bench/hitprofile.py counts them per hit): a call and its
//! return, an indirect call, a direct branch to another 4 KiB page and
//! back (TCG chains blocks only within a page), system register reads
//! and writes, barriers and an exclusive load/store pair.
#![allow(unsafe_code)] // global_asm! for the loops, and calling them through `extern "C"`.

use alloc::vec::Vec;
use core::hint::black_box;

/// Loop iterations per timed run.
const ITERS: u64 = 20_000;
/// Copies of the sequence per iteration (the `.rept` count below).
const REPS: u64 = 8;
/// Timed runs; the median is reported.
const RUNS: usize = 7;

// Every loop: x0 = iterations, x1 = scratch word; returns 0 in x0. Only
// caller-saved registers change; the loops that call save x30 in x9.
core::arch::global_asm!(
    ".section .text",
    ".balign 4096",
    ".global ktest_tcg_nop",
    "ktest_tcg_nop:",
    "1: .rept 8",
    "nop",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    "ktest_tcg_leaf:",
    "ret",
    // BL to a leaf on the same page and its RET.
    ".global ktest_tcg_call",
    "ktest_tcg_call:",
    "mov x9, x30",
    "1: .rept 8",
    "bl ktest_tcg_leaf",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret x9",
    // BLR to the same leaf and its RET.
    ".global ktest_tcg_blr",
    "ktest_tcg_blr:",
    "mov x9, x30",
    "adr x2, ktest_tcg_leaf",
    "1: .rept 8",
    "blr x2",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret x9",
    // B to the next page and B back (two direct branches across pages).
    ".global ktest_tcg_xpage",
    "ktest_tcg_xpage:",
    "1: b 2f",
    "3: subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_cntvct",
    "ktest_tcg_cntvct:",
    "1: .rept 8",
    "mrs x2, cntvct_el0",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_cntpct",
    "ktest_tcg_cntpct:",
    "1: .rept 8",
    "mrs x2, cntpct_el0",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    // A conditional branch ends its translated block: eight chained block
    // changes (not taken, falling through to the next block).
    ".global ktest_tcg_cond",
    "ktest_tcg_cond:",
    "mov x3, #1",
    "1: .rept 8",
    "cbz x3, 5f",
    ".endr",
    "5: subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_isb_cntvct",
    "ktest_tcg_isb_cntvct:",
    "1: .rept 8",
    "isb",
    "mrs x2, cntvct_el0",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_tpidr",
    "ktest_tcg_tpidr:",
    "1: .rept 8",
    "mrs x2, tpidr_el1",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_daif_read",
    "ktest_tcg_daif_read:",
    "1: .rept 8",
    "mrs x2, daif",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    // Writes DAIF with the value it has (no change of state).
    ".global ktest_tcg_daif_write",
    "ktest_tcg_daif_write:",
    "mrs x2, daif",
    "1: .rept 8",
    "msr daif, x2",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_dmb",
    "ktest_tcg_dmb:",
    "1: .rept 8",
    "dmb ish",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_isb",
    "ktest_tcg_isb:",
    "1: .rept 8",
    "isb",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    // LDXR/STXR pair, as a lock or an atomic add takes without contention.
    ".global ktest_tcg_exclusive",
    "ktest_tcg_exclusive:",
    "1: .rept 8",
    "ldxr x2, [x1]",
    "add x2, x2, #1",
    "stxr w3, x2, [x1]",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    // LDAR and STLR, what acquire/release loads and stores compile to.
    ".global ktest_tcg_ldar_stlr",
    "ktest_tcg_ldar_stlr:",
    "1: .rept 8",
    "ldar x2, [x1]",
    "stlr x2, [x1]",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_ldar",
    "ktest_tcg_ldar:",
    "1: .rept 8",
    "ldar x2, [x1]",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    ".global ktest_tcg_ldr",
    "ktest_tcg_ldr:",
    "1: .rept 8",
    "ldr x2, [x1]",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    // A plain load and store, the same work without ordering.
    ".global ktest_tcg_ldr_str",
    "ktest_tcg_ldr_str:",
    "1: .rept 8",
    "ldr x2, [x1]",
    "str x2, [x1]",
    ".endr",
    "subs x0, x0, #1",
    "b.ne 1b",
    "ret",
    // The landing pad of ktest_tcg_xpage, on the next page.
    ".balign 4096",
    "2: b 3b",
    ".balign 4096",
);

extern "C" {
    fn ktest_tcg_nop(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_call(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_blr(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_xpage(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_cntvct(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_isb_cntvct(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_cntpct(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_cond(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_tpidr(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_daif_read(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_daif_write(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_dmb(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_isb(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_exclusive(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_ldar_stlr(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_ldar(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_ldr(n: u64, word: *mut u64) -> u64;
    fn ktest_tcg_ldr_str(n: u64, word: *mut u64) -> u64;
}

type Loop = unsafe extern "C" fn(u64, *mut u64) -> u64;

/// Time of one run of `f`, in ns.
fn run_ns(f: Loop, word: &mut u64) -> u64 {
    let t0 = crate::time::ktime_get_ns();
    // SAFETY: every loop above follows the AAPCS64, changes only
    // caller-saved registers (x30 restored from x9), touches no memory but
    // `word` (a valid, aligned u64 the caller owns), and leaves DAIF as it
    // found it.
    unsafe { f(black_box(ITERS), word) };
    crate::time::ktime_get_ns() - t0
}

/// Runs the calibration and prints the figures.
pub fn run() {
    let classes: [(&str, Loop, u64); 17] = [
        ("bl_ret", ktest_tcg_call, REPS),
        ("blr_ret", ktest_tcg_blr, REPS),
        ("b_cross_page_and_back", ktest_tcg_xpage, 1),
        ("mrs_cntvct", ktest_tcg_cntvct, REPS),
        ("isb_mrs_cntvct", ktest_tcg_isb_cntvct, REPS),
        ("mrs_cntpct", ktest_tcg_cntpct, REPS),
        ("cbz_not_taken", ktest_tcg_cond, REPS),
        ("mrs_tpidr_el1", ktest_tcg_tpidr, REPS),
        ("mrs_daif", ktest_tcg_daif_read, REPS),
        ("msr_daif", ktest_tcg_daif_write, REPS),
        ("dmb_ish", ktest_tcg_dmb, REPS),
        ("isb", ktest_tcg_isb, REPS),
        ("ldxr_add_stxr", ktest_tcg_exclusive, REPS),
        ("ldar_stlr", ktest_tcg_ldar_stlr, REPS),
        ("ldr_str", ktest_tcg_ldr_str, REPS),
        ("ldar", ktest_tcg_ldar, REPS),
        ("ldr", ktest_tcg_ldr, REPS),
    ];
    let mut word = 0u64;
    let mut samples: Vec<Vec<u64>> = (0..classes.len() + 1).map(|_| Vec::new()).collect();
    // Rounds of every class in turn, so that a slow spell of the host
    // hits all of them alike.
    for _ in 0..RUNS {
        samples[0].push(run_ns(ktest_tcg_nop, &mut word));
        for (i, (_, f, _)) in classes.iter().enumerate() {
            samples[i + 1].push(run_ns(*f, &mut word));
        }
    }
    let med = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let nop = med(&mut samples[0]);
    crate::pr_info!(
        "tcg-cost: {ITERS} iterations, median of {RUNS} runs, loop of {REPS} NOPs {} ps/iteration",
        nop * 1000 / ITERS
    );
    for (i, (name, _, reps)) in classes.iter().enumerate() {
        let t = med(&mut samples[i + 1]);
        // The cross-page loop has no NOPs: its base is the bare loop,
        // about the NOP loop less 8 NOPs; use the NOP loop (an upper
        // bound of the base, so the figure errs low by a few ns at most).
        let ps = t.saturating_sub(nop) * 1000 / (ITERS * reps);
        crate::pr_info!("tcg-cost: {name} {ps} ps");
    }
}
