//! In-kernel tests of static keys: the sites the build emitted, their
//! exact encodings both ways (a backward site included), reference
//! counting, two sites of one key, a key switched while three CPUs run its
//! branch, kprobes beside and on sites, and the cost of a site that is
//! off.
#![allow(unsafe_code)] // global_asm! for the backward-branch site, called through `extern "C"`.

use super::*;
use crate::errno::Errno;
use crate::kprobes::{register_kprobe, unregister_kprobe, Kprobe};
use crate::patching::{patch_text_nosync, read_insn};
use alloc::sync::Arc;
use core::hint::black_box;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use insn::encode::NOP;
use ktest_macros::kernel_test;

static JL_UNLIKELY: StaticKey = StaticKey::new_false();
static JL_LIKELY: StaticKey = StaticKey::new_false();
static JL_TRUE: StaticKey<true> = StaticKey::new_true();
static JL_TWO_SITES: StaticKey = StaticKey::new_false();
static JL_COUNTED: StaticKey = StaticKey::new_false();
static JL_BACKWARD: StaticKey = StaticKey::new_false();
static JL_RACE: StaticKey = StaticKey::new_false();
static JL_BENCH: StaticKey = StaticKey::new_false();
static JL_REFUSED: StaticKey = StaticKey::new_false();
static JL_REFUSED_TARGET: StaticKey = StaticKey::new_false();

#[inline(never)]
fn ktest_jl_unlikely(x: u64) -> u64 {
    if static_branch_unlikely!(JL_UNLIKELY) {
        black_box(x) * 3
    } else {
        x + 1
    }
}

#[inline(never)]
fn ktest_jl_likely(x: u64) -> u64 {
    if static_branch_likely!(JL_LIKELY) {
        x + 1
    } else {
        black_box(x) * 3
    }
}

#[inline(never)]
fn ktest_jl_true_unlikely(x: u64) -> u64 {
    if static_branch_unlikely!(JL_TRUE) {
        black_box(x) * 3
    } else {
        x + 1
    }
}

#[inline(never)]
fn ktest_jl_true_likely(x: u64) -> u64 {
    if static_branch_likely!(JL_TRUE) {
        x + 1
    } else {
        black_box(x) * 3
    }
}

#[inline(never)]
fn ktest_jl_first_site(x: u64) -> u64 {
    if static_branch_unlikely!(JL_TWO_SITES) {
        black_box(x) * 5
    } else {
        x + 2
    }
}

#[inline(never)]
fn ktest_jl_second_site(x: u64) -> u64 {
    if static_branch_likely!(JL_TWO_SITES) {
        x + 7
    } else {
        black_box(x) * 11
    }
}

#[inline(never)]
fn ktest_jl_counted(x: u64) -> u64 {
    if static_branch_unlikely!(JL_COUNTED) {
        black_box(x) ^ 0xff
    } else {
        x
    }
}

#[inline(never)]
fn ktest_jl_race(x: u64) -> u64 {
    if static_branch_unlikely!(JL_RACE) {
        black_box(x) ^ 0xa5
    } else {
        x
    }
}

// A site whose B goes backward: the target is laid out before the site,
// which compiled code rarely does for certain. Returns 1 with the key off,
// 100 with it on.
core::arch::global_asm!(
    ".section .text",
    ".balign 4",
    ".global ktest_jl_backward",
    ".type ktest_jl_backward, %function",
    "ktest_jl_backward:",
    "mov x1, #0",
    "b 2f",
    "1: add x1, x1, #100",
    "mov x0, x1",
    "ret",
    "2: nop",
    "add x0, x1, #1",
    "ret",
    ".size ktest_jl_backward, . - ktest_jl_backward",
    ".pushsection __jump_table, \"a\"",
    ".balign 8",
    ".long 2b - .",
    ".long 1b - .",
    ".quad {key} - .",
    ".popsection",
    key = sym JL_BACKWARD,
);

// Entries jump_label_init must refuse: a "site" that is not the
// instruction the build emits (JL_REFUSED, whose other site, in
// ktest_jl_refused_good, is sound), and a site whose target is data
// (JL_REFUSED_TARGET).
core::arch::global_asm!(
    ".section .text",
    ".balign 4",
    ".global ktest_jl_refused",
    ".type ktest_jl_refused, %function",
    "ktest_jl_refused:",
    "1: mov x0, #7",
    "2: nop",
    "ret",
    ".size ktest_jl_refused, . - ktest_jl_refused",
    ".pushsection __jump_table, \"a\"",
    ".balign 8",
    ".long 1b - .",
    ".long 2b - .",
    ".quad {key} - .",
    ".long 2b - .",
    ".long {data} - .",
    ".quad {data} - .",
    ".popsection",
    key = sym JL_REFUSED,
    data = sym JL_REFUSED_TARGET,
);

extern "C" {
    fn ktest_jl_backward() -> u64;
    fn ktest_jl_refused() -> u64;
}

#[inline(never)]
fn ktest_jl_refused_good(x: u64) -> u64 {
    if static_branch_unlikely!(JL_REFUSED) {
        black_box(x) * 3
    } else {
        x + 1
    }
}

fn backward() -> u64 {
    // SAFETY: the function above only uses x0 and x1, caller-saved, and
    // touches no memory.
    unsafe { ktest_jl_backward() }
}

/// `B` from `code` to `target` built by hand from the ARM ARM's layout,
/// not by the encoder under test.
fn b_by_hand(code: usize, target: usize) -> u32 {
    let words = (target as i64).wrapping_sub(code as i64) / 4;
    0x1400_0000 | (words as u32 & 0x03ff_ffff)
}

/// `(code, target)` of each site of `key`.
fn sites<const D: bool>(key: &'static StaticKey<D>) -> Vec<(usize, usize)> {
    let addr = key as *const StaticKey<D> as usize;
    TABLE
        .get()
        .expect("jump_label_init ran")
        .sites_of(addr)
        .iter()
        .map(|s| (s.code, s.target))
        .collect()
}

/// Asserts each site of `key` holds its B when `jumps`, its NOP otherwise.
fn assert_sites<const D: bool>(key: &'static StaticKey<D>, jumps: bool, what: &str) {
    let s = sites(key);
    assert!(!s.is_empty(), "{what}: no sites");
    for (code, target) in s {
        let want = if jumps { b_by_hand(code, target) } else { NOP };
        assert_eq!(read_insn(code), Some(want), "{what}: site {code:#x} -> {target:#x}");
    }
}

/// The function holding `addr`, as its start address.
fn function_of(addr: usize) -> usize {
    let s = crate::kallsyms::lookup_addr(addr).expect("site in kallsyms");
    assert!(s.offset < s.size, "site {addr:#x} past the end of {}", s.name);
    s.addr as usize
}

#[kernel_test]
fn the_build_emits_nops_for_off_paths_and_bs_for_likely_paths_until_switched() {
    let mut deliberate = alloc::vec![
        &JL_REFUSED as *const StaticKey as usize,
        &JL_REFUSED_TARGET as *const StaticKey as usize
    ];
    deliberate.sort_unstable();
    assert_eq!(
        TABLE.get().expect("jump_label_init ran").refused,
        deliberate,
        "refused keys other than the deliberately broken ones"
    );
    for (code, _) in sites(&JL_UNLIKELY) {
        assert_eq!(function_of(code), ktest_jl_unlikely as *const () as usize);
    }
    // unlikely on a false key: NOP, off path in line.
    assert_sites(&JL_UNLIKELY, false, "unlikely, off");
    assert_eq!(ktest_jl_unlikely(4), 5);
    static_key_slow_inc(&JL_UNLIKELY);
    assert_sites(&JL_UNLIKELY, true, "unlikely, on");
    assert_eq!(ktest_jl_unlikely(4), 12);
    static_key_slow_dec(&JL_UNLIKELY);
    assert_sites(&JL_UNLIKELY, false, "unlikely, off again");
    assert_eq!(ktest_jl_unlikely(4), 5);
    // likely on a false key: B around the on path while off.
    assert_sites(&JL_LIKELY, true, "likely, off");
    assert_eq!(ktest_jl_likely(4), 12);
    static_key_slow_inc(&JL_LIKELY);
    assert_sites(&JL_LIKELY, false, "likely, on");
    assert_eq!(ktest_jl_likely(4), 5);
    static_key_slow_dec(&JL_LIKELY);
    assert_sites(&JL_LIKELY, true, "likely, off again");
    assert_eq!(ktest_jl_likely(4), 12);
}

#[kernel_test]
fn a_key_with_an_inconsistent_entry_is_refused_and_never_patched() {
    let table = TABLE.get().expect("jump_label_init ran");
    let key = &JL_REFUSED as *const StaticKey as usize;
    assert!(table.refused.binary_search(&key).is_ok());
    assert!(table.sites_of(key).is_empty());
    let bad = ktest_jl_refused as *const () as usize;
    let good = ktest_jl_refused_good as *const () as usize;
    let good_site = jump_table()
        .iter()
        .find(|e| e.key() == key && function_of(e.code()) == good)
        .map(|e| e.code())
        .expect("the sound site's entry");
    let mov = read_insn(bad);
    // SAFETY: `mov x0, #7; nop; ret`.
    let call_bad = || unsafe { ktest_jl_refused() };
    static_key_slow_inc(&JL_REFUSED);
    // Counted, but the sites stay as built: the key reads on, its
    // branches read off.
    assert!(JL_REFUSED.enabled());
    assert_eq!(read_insn(good_site), Some(NOP));
    assert_eq!(read_insn(bad), mov);
    assert_eq!((ktest_jl_refused_good(4), call_bad()), (5, 7));
    static_key_slow_dec(&JL_REFUSED);
    assert!(!JL_REFUSED.enabled());
    // Refused sites are still reserved against kprobes.
    assert!(jump_label_text_reserved(bad, bad) && jump_label_text_reserved(good_site, good_site));
}

#[kernel_test]
fn a_true_key_starts_on_with_one_reference() {
    assert!(JL_TRUE.enabled());
    assert_eq!(JL_TRUE.count(), 1);
    let all = sites(&JL_TRUE);
    assert_eq!(all.len(), 2);
    let table = TABLE.get().unwrap();
    let of = |f: fn(u64) -> u64| {
        let s = table.sites_of(&JL_TRUE as *const _ as usize);
        s.iter()
            .find(|s| function_of(s.code) == f as *const () as usize)
            .map(|s| (s.code, s.target, s.branch))
    };
    let (uc, ut, ub) = of(ktest_jl_true_unlikely).expect("the unlikely site");
    let (lc, lt, lb) = of(ktest_jl_true_likely).expect("the likely site");
    assert!(!ub && lb, "branch bits: unlikely {ub}, likely {lb}");
    // On as built: the unlikely site jumps to its on path, the likely
    // site falls through into it.
    assert_eq!(read_insn(uc), Some(b_by_hand(uc, ut)));
    assert_eq!(read_insn(lc), Some(NOP));
    assert_eq!((ktest_jl_true_unlikely(4), ktest_jl_true_likely(4)), (12, 5));
    static_key_slow_dec(&JL_TRUE);
    assert!(!JL_TRUE.enabled());
    assert_eq!(read_insn(uc), Some(NOP));
    assert_eq!(read_insn(lc), Some(b_by_hand(lc, lt)));
    assert_eq!((ktest_jl_true_unlikely(4), ktest_jl_true_likely(4)), (5, 12));
    static_key_slow_inc(&JL_TRUE);
    assert_eq!(read_insn(uc), Some(b_by_hand(uc, ut)));
    assert_eq!(read_insn(lc), Some(NOP));
    assert_eq!((ktest_jl_true_unlikely(4), ktest_jl_true_likely(4)), (12, 5));
}

#[kernel_test]
fn every_site_round_trips_nop_b_nop_with_the_exact_bytes() {
    let table = TABLE.get().expect("jump_label_init ran");
    assert!(table.sites.len() >= 10, "only {} sites", table.sites.len());
    let backward_site = ktest_jl_backward as *const () as usize + 20;
    assert!(
        table.sites.iter().any(|s| s.code == backward_site && s.target < s.code),
        "the backward site is not in the table"
    );
    // Flip each site and back with every other CPU parked and interrupts
    // masked here, so that no code runs a site in its flipped state.
    let failures: Vec<alloc::string::String> = crate::stop_machine::stop_machine(|| {
        let mut bad = Vec::new();
        for s in &table.sites {
            let b = b_by_hand(s.code, s.target);
            let Some(orig) = read_insn(s.code) else {
                bad.push(alloc::format!("{:#x}: unreadable", s.code));
                continue;
            };
            if orig != NOP && orig != b {
                bad.push(alloc::format!(
                    "{:#x}: holds {orig:08x}, neither NOP nor {b:08x}",
                    s.code
                ));
                continue;
            }
            let enabled_now = insn::jump_label::site_state(s.code as u64, s.target as u64, orig)
                == Some(insn::jump_label::jump_label_type(true, s.branch));
            let flip = jump_label_insn(s.code as u64, s.target as u64, jump_label_type(!enabled_now, s.branch));
            let want = if orig == NOP { b } else { NOP };
            if flip != Ok(want) {
                bad.push(alloc::format!(
                    "{:#x} -> {:#x}: encoded {flip:08x?}, want {want:08x}",
                    s.code,
                    s.target
                ));
                continue;
            }
            let there = patch_text_nosync(s.code, want).map(|()| read_insn(s.code));
            let back = patch_text_nosync(s.code, orig).map(|()| read_insn(s.code));
            if there != Ok(Some(want)) || back != Ok(Some(orig)) {
                bad.push(alloc::format!(
                    "{:#x}: flipped to {there:x?}, back to {back:x?}",
                    s.code
                ));
            }
        }
        bad
    });
    assert!(failures.is_empty(), "{failures:#?}");
}

#[kernel_test]
fn a_backward_site_jumps_back_when_enabled() {
    let f = ktest_jl_backward as *const () as usize;
    assert_eq!(sites(&JL_BACKWARD), alloc::vec![(f + 20, f + 8)]);
    assert_eq!(read_insn(f + 20), Some(NOP));
    assert_eq!(backward(), 1);
    static_key_slow_inc(&JL_BACKWARD);
    // B -12: imm26 all ones but the low bits, 0x17fffffd.
    assert_eq!(read_insn(f + 20), Some(0x17ff_fffd));
    assert_eq!(backward(), 100);
    static_key_slow_dec(&JL_BACKWARD);
    assert_eq!(read_insn(f + 20), Some(NOP));
    assert_eq!(backward(), 1);
}

#[kernel_test]
fn a_key_with_sites_in_two_functions_switches_both() {
    let s = sites(&JL_TWO_SITES);
    assert_eq!(s.len(), 2, "{s:x?}");
    let mut fns: Vec<usize> = s.iter().map(|&(c, _)| function_of(c)).collect();
    fns.sort_unstable();
    let mut want = alloc::vec![
        ktest_jl_first_site as *const () as usize,
        ktest_jl_second_site as *const () as usize
    ];
    want.sort_unstable();
    assert_eq!(fns, want);
    assert_eq!((ktest_jl_first_site(3), ktest_jl_second_site(3)), (5, 33));
    static_key_slow_inc(&JL_TWO_SITES);
    assert_eq!((ktest_jl_first_site(3), ktest_jl_second_site(3)), (15, 10));
    static_key_slow_dec(&JL_TWO_SITES);
    assert_eq!((ktest_jl_first_site(3), ktest_jl_second_site(3)), (5, 33));
}

#[kernel_test]
fn the_first_reference_patches_and_the_last_unpatches() {
    assert_eq!(JL_COUNTED.count(), 0);
    static_key_slow_inc(&JL_COUNTED);
    static_key_slow_inc(&JL_COUNTED);
    assert_eq!(JL_COUNTED.count(), 2);
    assert_sites(&JL_COUNTED, true, "two references");
    static_key_slow_dec(&JL_COUNTED);
    assert_eq!(JL_COUNTED.count(), 1);
    assert!(JL_COUNTED.enabled());
    assert_sites(&JL_COUNTED, true, "one reference left");
    assert_eq!(ktest_jl_counted(1), 0xfe);
    static_key_slow_dec(&JL_COUNTED);
    assert_eq!(JL_COUNTED.count(), 0);
    assert_sites(&JL_COUNTED, false, "none left");
    assert_eq!(ktest_jl_counted(1), 1);
    // One dec too many is warned about and changes nothing.
    static_key_slow_dec(&JL_COUNTED);
    assert_eq!(JL_COUNTED.count(), 0);
    assert_sites(&JL_COUNTED, false, "after a spurious dec");
    // enable/disable ignore the count: one disable undoes any number of
    // references, and enabling twice leaves one.
    static_key_slow_inc(&JL_COUNTED);
    static_key_slow_inc(&JL_COUNTED);
    static_key_disable(&JL_COUNTED);
    assert_eq!(JL_COUNTED.count(), 0);
    assert_sites(&JL_COUNTED, false, "disabled");
    static_key_enable(&JL_COUNTED);
    static_key_enable(&JL_COUNTED);
    assert_eq!(JL_COUNTED.count(), 1);
    assert_sites(&JL_COUNTED, true, "enabled");
    static_key_slow_dec(&JL_COUNTED);
    assert_sites(&JL_COUNTED, false, "enabled then released");
}

#[kernel_test]
fn a_batch_switches_several_keys_together() {
    assert_eq!(
        (ktest_jl_unlikely(4), ktest_jl_likely(4), ktest_jl_counted(1)),
        (5, 12, 1)
    );
    let seen = static_key_batch(|b| {
        b.slow_inc(&JL_UNLIKELY);
        b.slow_inc(&JL_UNLIKELY);
        b.slow_inc(&JL_LIKELY);
        // On and off again within the batch: nothing to write.
        b.slow_inc(&JL_COUNTED);
        b.slow_dec(&JL_COUNTED);
        // Counted, but not on before the sites are.
        (JL_UNLIKELY.enabled(), JL_LIKELY.enabled())
    });
    assert_eq!(seen, (false, false));
    assert_eq!((JL_UNLIKELY.count(), JL_LIKELY.count(), JL_COUNTED.count()), (2, 1, 0));
    assert_sites(&JL_UNLIKELY, true, "batched on");
    assert_sites(&JL_LIKELY, false, "batched on (likely)");
    assert_sites(&JL_COUNTED, false, "on and off in one batch");
    assert_eq!(
        (ktest_jl_unlikely(4), ktest_jl_likely(4), ktest_jl_counted(1)),
        (12, 5, 1)
    );
    static_key_batch(|b| {
        b.disable(&JL_UNLIKELY);
        b.slow_dec(&JL_LIKELY);
    });
    assert_eq!((JL_UNLIKELY.count(), JL_LIKELY.count()), (0, 0));
    assert_sites(&JL_UNLIKELY, false, "batched off");
    assert_sites(&JL_LIKELY, true, "batched off (likely)");
    assert_eq!((ktest_jl_unlikely(4), ktest_jl_likely(4)), (5, 12));
}

#[kernel_test]
fn switching_a_key_while_three_cpus_run_its_branch_is_seen_at_once() {
    let me = arch::cpu::cpu_id();
    let workers: Vec<usize> = crate::smp::online_cpus().filter(|&c| c != me).take(3).collect();
    if workers.is_empty() {
        return;
    }
    // 4k: off; 4k + 1: being switched on; 4k + 2: on; 4k + 3: being
    // switched off. A stable phase is stored after the switch returned.
    static PHASE: AtomicU64 = AtomicU64::new(0);
    static STALE: AtomicUsize = AtomicUsize::new(0);
    static CHECKED: AtomicUsize = AtomicUsize::new(0);
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static FIRST: AtomicU64 = AtomicU64::new(0);
    PHASE.store(0, Ordering::Release);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let (s, d) = (stop.clone(), done.clone());
    // Callers in cross-call context on the other CPUs; they serve the
    // stop_machine rendezvous through flush_pending_calls.
    crate::smp::smp_call_function_many(
        workers.iter().copied(),
        Arc::new(move || {
            while !s.load(Ordering::Acquire) {
                let before = PHASE.load(Ordering::Acquire);
                let r = ktest_jl_race(0x1000);
                let after = PHASE.load(Ordering::Acquire);
                assert!(r == 0x1000 || r == 0x10a5, "garbage {r:#x}");
                // While a switch is under way either state may be seen;
                // one that completed before the call is seen by it.
                if before == after && before.is_multiple_of(2) {
                    CHECKED.fetch_add(1, Ordering::Relaxed);
                    if (r == 0x10a5) != (before % 4 == 2) && STALE.fetch_add(1, Ordering::AcqRel) == 0 {
                        FIRST.store(before << 32 | r << 8 | arch::cpu::cpu_id() as u64, Ordering::Release);
                    }
                }
                CALLS.fetch_add(1, Ordering::Relaxed);
                crate::smp::flush_pending_calls();
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    let settle = || {
        let calls = CALLS.load(Ordering::Relaxed);
        while CALLS.load(Ordering::Relaxed) < calls + 3 * workers.len() {
            core::hint::spin_loop();
        }
    };
    for round in 0..10u64 {
        PHASE.store(4 * round + 1, Ordering::Release);
        static_key_slow_inc(&JL_RACE);
        PHASE.store(4 * round + 2, Ordering::Release);
        settle();
        PHASE.store(4 * round + 3, Ordering::Release);
        static_key_slow_dec(&JL_RACE);
        PHASE.store(4 * round + 4, Ordering::Release);
        settle();
    }
    stop.store(true, Ordering::Release);
    while done.load(Ordering::Acquire) < workers.len() {
        core::hint::spin_loop();
    }
    assert_eq!(
        STALE.load(Ordering::Acquire),
        0,
        "a CPU ran a site in its old state after the switch (first: {:#x}, of {} checked calls)",
        FIRST.load(Ordering::Acquire),
        CHECKED.load(Ordering::Acquire)
    );
    assert!(CHECKED.load(Ordering::Acquire) > 0);
    assert_sites(&JL_RACE, false, "after the race");
}

#[kernel_test]
fn kprobes_refuse_a_site_and_work_beside_one() {
    let f = ktest_jl_backward as *const () as usize;
    assert!(jump_label_text_reserved(f + 20, f + 20));
    assert!(jump_label_text_reserved(f + 16, f + 23));
    assert!(!jump_label_text_reserved(f + 16, f + 19));
    assert!(!jump_label_text_reserved(f + 24, f + 24));
    // Linux 6.12 refuses a kprobe on a jump-label site with EINVAL.
    let on_site = Arc::new(Kprobe::at(f + 20));
    assert_eq!(register_kprobe(&on_site), Err(Errno::EINVAL));
    // A probe on the instruction after the site runs on the off path
    // only, and both paths still work with it in place.
    static HITS: AtomicUsize = AtomicUsize::new(0);
    HITS.store(0, Ordering::Release);
    let beside = Arc::new(Kprobe::at(f + 24).pre(|_, _| {
        HITS.fetch_add(1, Ordering::AcqRel);
        0
    }));
    register_kprobe(&beside).unwrap();
    assert_eq!(backward(), 1);
    static_key_slow_inc(&JL_BACKWARD);
    assert_eq!(backward(), 100);
    static_key_slow_dec(&JL_BACKWARD);
    assert_eq!(backward(), 1);
    unregister_kprobe(&beside);
    assert_eq!(HITS.load(Ordering::Acquire), 2);
    // kallsyms still names the function around the site.
    let sym = crate::kallsyms::lookup_addr(f + 20).unwrap();
    assert_eq!((sym.name, sym.offset), ("ktest_jl_backward", 20));
}

#[inline(never)]
fn ktest_jl_bench_plain(n: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..n {
        s = black_box(s.wrapping_add(i));
    }
    s
}

#[inline(never)]
fn ktest_jl_bench_static(n: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..n {
        if static_branch_unlikely!(JL_BENCH) {
            s = black_box(s.wrapping_mul(3));
        }
        s = black_box(s.wrapping_add(i));
    }
    s
}

/// The same loop testing the key's count, as the first version of the
/// interface did.
#[inline(never)]
fn ktest_jl_bench_load(n: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..n {
        if JL_BENCH.enabled() {
            s = black_box(s.wrapping_mul(3));
        }
        s = black_box(s.wrapping_add(i));
    }
    s
}

#[kernel_test]
fn an_off_site_costs_one_nop() {
    const ITERS: u64 = 200_000;
    assert_sites(&JL_BENCH, false, "bench key off");
    let site = sites(&JL_BENCH)[0].0;
    assert_eq!(function_of(site), ktest_jl_bench_static as *const () as usize);
    let want = ITERS * (ITERS - 1) / 2;
    let loops: [fn(u64) -> u64; 3] = [ktest_jl_bench_plain, ktest_jl_bench_static, ktest_jl_bench_load];
    // The fastest of 21 interleaved runs of each loop: the run least
    // disturbed by the host.
    let mut best = [u64::MAX; 3];
    for _ in 0..21 {
        for (f, b) in loops.iter().zip(best.iter_mut()) {
            let t0 = arch::timer::counter();
            assert_eq!(f(black_box(ITERS)), want);
            *b = (*b).min(arch::timer::counter() - t0);
        }
    }
    let ps = |ticks: u64| ticks * 1_000_000_000 / arch::timer::frequency() * 1000 / ITERS;
    let [plain, stat, load] = best.map(ps);
    // And what a switch costs: one stop_machine each way.
    let t0 = crate::time::ktime_get_ns();
    for _ in 0..5 {
        static_key_slow_inc(&JL_BENCH);
        static_key_slow_dec(&JL_BENCH);
    }
    let switch_us = (crate::time::ktime_get_ns() - t0) / 10 / 1000;
    let insns = |f: fn(u64) -> u64| crate::kallsyms::lookup_addr(f as *const () as usize).map_or(0, |s| s.size / 4);
    crate::pr_info!(
        "jump_label bench: ps/iteration: no branch {plain}, static_branch_unlikely off {stat}, count test {load} \
         (functions of {}, {}, {} instructions); one switch {switch_us} us",
        insns(ktest_jl_bench_plain),
        insns(ktest_jl_bench_static),
        insns(ktest_jl_bench_load)
    );
}
