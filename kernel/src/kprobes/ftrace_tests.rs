//! In-kernel tests of kprobes on ftrace sites: a probe at a traceable
//! function's entry is armed through ftrace, with no `BRK`, and keeps the
//! handler semantics of a `BRK` probe.

use super::kretprobe::{register_kretprobe, unregister_kretprobe, Kretprobe};
use super::*;
use crate::trace::ftrace::{self, FtraceHash, FtraceOps};
use alloc::collections::BTreeSet;
use alloc::sync::Arc;
use arch::ftrace::{FtraceRegs, FTRACE_BL_OFFSET, MOV_X9_X30};
use core::hint::black_box;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use ktest_macros::kernel_test;

/// A traceable probe target of these tests only.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kprobe_ftrace_target(a: u64, b: u64) -> u64 {
    black_box(a.wrapping_mul(7) ^ b)
}

/// Where a redirecting pre-handler sends calls of the target.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kprobe_ftrace_detour(a: u64, b: u64) -> u64 {
    black_box(a.wrapping_add(b).wrapping_add(1000))
}

fn target() -> usize {
    ktest_kprobe_ftrace_target as *const () as usize
}

/// Calls the target from a function of known name.
#[inline(never)]
fn call_target(a: u64, b: u64) -> u64 {
    ktest_kprobe_ftrace_target(black_box(a), black_box(b))
}

fn is_bl_to_trampoline(addr: usize) -> bool {
    insn::encode::bl(addr as u64, arch::ftrace::ftrace_caller_addr() as u64)
        .is_ok_and(|bl| crate::patching::read_insn(addr) == Some(bl))
}

#[kernel_test]
fn entry_probe_is_armed_through_ftrace_with_brk_semantics() {
    let f = target();
    assert!(super::ftrace::is_ftrace_location(f));
    assert!(
        !is_bl_to_trampoline(f + FTRACE_BL_OFFSET),
        "site in use before the test"
    );
    let pre = Arc::new(AtomicUsize::new(0));
    let post = Arc::new(AtomicUsize::new(0));
    let (p1, p2, p3) = (pre.clone(), post.clone(), pre.clone());
    let kp = Arc::new(
        Kprobe::symbol("ktest_kprobe_ftrace_target", 0)
            .pre(move |kp, regs| {
                assert_eq!(regs.pc as usize, kp.addr(), "pc in the pre-handler");
                assert_eq!((regs.regs[0], regs.regs[1]), (6, 0x55), "arguments");
                let parent = crate::kallsyms::lookup_addr(regs.regs[30] as usize).map(|s| s.name);
                assert!(
                    parent.is_some_and(|n| n.contains("call_target")),
                    "lr is not the caller: {parent:?}"
                );
                assert_eq!(
                    regs.pstate & arch::ptrace::PSR::M::EL1h.value,
                    arch::ptrace::PSR::M::EL1h.value
                );
                p1.fetch_add(1, Ordering::SeqCst);
                0
            })
            .post(move |kp, regs| {
                assert_eq!(regs.pc as usize, kp.addr() + 4, "pc in the post-handler");
                assert_eq!(
                    p3.load(Ordering::SeqCst),
                    p2.load(Ordering::SeqCst) + 1,
                    "post before pre"
                );
                p2.fetch_add(1, Ordering::SeqCst);
            }),
    );
    register_kprobe(&kp).expect("register");
    assert_eq!(kp.addr(), f);
    // No BRK: the entry keeps `mov x9, x30`, the site calls the trampoline.
    assert_eq!(crate::patching::read_insn(f), Some(MOV_X9_X30));
    assert!(is_bl_to_trampoline(f + FTRACE_BL_OFFSET));
    let list = alloc::string::String::from_utf8(super::debugfs::list()).unwrap();
    let line = alloc::format!("{f:016x}  k  ktest_kprobe_ftrace_target+0x0    [FTRACE]\n");
    assert!(list.contains(&line), "{list}");
    for _ in 0..10 {
        assert_eq!(call_target(6, 0x55), 42 ^ 0x55);
    }
    assert_eq!((pre.load(Ordering::SeqCst), post.load(Ordering::SeqCst)), (10, 10));
    // Disabled: the site is a NOP again; enabled: back.
    disable_kprobe(&kp).unwrap();
    assert!(!is_bl_to_trampoline(f + FTRACE_BL_OFFSET));
    call_target(6, 0x55);
    assert_eq!(pre.load(Ordering::SeqCst), 10, "a disabled probe ran");
    let list = alloc::string::String::from_utf8(super::debugfs::list()).unwrap();
    assert!(
        list.contains("ktest_kprobe_ftrace_target+0x0    [DISABLED][FTRACE]\n"),
        "{list}"
    );
    enable_kprobe(&kp).unwrap();
    call_target(6, 0x55);
    assert_eq!(pre.load(Ordering::SeqCst), 11);
    unregister_kprobe(&kp);
    assert!(
        !is_bl_to_trampoline(f + FTRACE_BL_OFFSET),
        "site left calling the trampoline"
    );
    assert!(!kprobe_ops_in_use(), "kprobe ops left registered");
    call_target(6, 0x55);
    assert_eq!(pre.load(Ordering::SeqCst), 11, "handler ran after unregister");
}

fn kprobe_ops_in_use() -> bool {
    ftrace::sites()
        .iter()
        .any(|s| s.users().any(|o| o.name() == "kprobe_ftrace_ops"))
}

#[kernel_test]
fn pre_handler_may_change_arguments_or_divert_the_call() {
    // Arguments changed by the pre-handler reach the function.
    let kp = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 0).pre(|_, regs| {
        regs.regs[1] = 1;
        0
    }));
    register_kprobe(&kp).unwrap();
    assert_eq!(call_target(3, 0xff), 21 ^ 1);
    unregister_kprobe(&kp);
    // A pre-handler returning non-zero set pc itself: the call runs the
    // detour instead, and the post-handler is skipped.
    let posts = Arc::new(AtomicUsize::new(0));
    let p = posts.clone();
    let kp = Arc::new(
        Kprobe::symbol("ktest_kprobe_ftrace_target", 0)
            .pre(|_, regs| {
                regs.pc = ktest_kprobe_ftrace_detour as *const () as u64;
                1
            })
            .post(move |_, _| {
                p.fetch_add(1, Ordering::SeqCst);
            }),
    );
    register_kprobe(&kp).unwrap();
    assert_eq!(call_target(3, 4), 1007);
    assert_eq!(posts.load(Ordering::SeqCst), 0, "post-handler after a diverted call");
    unregister_kprobe(&kp);
    assert_eq!(call_target(3, 4), 21 ^ 4);
}

#[kernel_test]
fn probes_at_entry_and_on_the_bl_run_in_address_order() {
    let order = Arc::new(spin::Mutex::new(alloc::vec::Vec::new()));
    let (o1, o2) = (order.clone(), order.clone());
    let at0 = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 0).pre(move |kp, _| {
        o1.lock().push(kp.offset);
        0
    }));
    let at4 = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 4).pre(move |kp, regs| {
        assert_eq!(regs.pc as usize, target() + 4);
        o2.lock().push(kp.offset);
        0
    }));
    register_kprobe(&at4).unwrap();
    register_kprobe(&at0).unwrap();
    call_target(1, 2);
    assert_eq!(*order.lock(), [0, 4]);
    // Taking one away keeps the other armed.
    unregister_kprobe(&at0);
    assert!(is_bl_to_trampoline(target() + FTRACE_BL_OFFSET));
    call_target(1, 2);
    assert_eq!(*order.lock(), [0, 4, 4]);
    unregister_kprobe(&at4);
    assert!(!is_bl_to_trampoline(target() + FTRACE_BL_OFFSET));
}

#[kernel_test]
fn a_hit_inside_a_handler_is_counted_missed() {
    let inner = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_detour", 0).pre(|_, _| 0));
    let outer = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 0).pre(|_, _| {
        // Calls a function with an ftrace-based probe of its own.
        assert_eq!(ktest_kprobe_ftrace_detour(black_box(1), 2), 1003);
        0
    }));
    register_kprobe(&inner).unwrap();
    register_kprobe(&outer).unwrap();
    for _ in 0..3 {
        call_target(1, 1);
    }
    assert_eq!(inner.nmissed(), 3);
    assert_eq!(outer.nmissed(), 0);
    unregister_kprobe(&outer);
    unregister_kprobe(&inner);
}

static TRACER_HITS: AtomicUsize = AtomicUsize::new(0);
fn count_tracer_hit(_: &FtraceOps, _: usize, _: usize, _: &mut FtraceRegs) {
    TRACER_HITS.fetch_add(1, Ordering::Relaxed);
}
static KTEST_TRACER: FtraceOps = FtraceOps::new("ktest_kprobe_tracer", count_tracer_hit);

#[kernel_test]
fn entry_probe_and_a_function_tracer_share_the_site() {
    let site = ftrace::site_index(target()).unwrap();
    KTEST_TRACER
        .set_hash(FtraceHash {
            filter: BTreeSet::from([site]),
            notrace: BTreeSet::new(),
        })
        .unwrap();
    ftrace::register_ftrace_function(&KTEST_TRACER).unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let kp = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 0).pre(move |_, _| {
        h.fetch_add(1, Ordering::SeqCst);
        0
    }));
    register_kprobe(&kp).unwrap();
    TRACER_HITS.store(0, Ordering::Relaxed);
    call_target(2, 2);
    assert_eq!(
        (hits.load(Ordering::SeqCst), TRACER_HITS.load(Ordering::Relaxed)),
        (1, 1)
    );
    unregister_kprobe(&kp);
    call_target(2, 2);
    assert_eq!(
        (hits.load(Ordering::SeqCst), TRACER_HITS.load(Ordering::Relaxed)),
        (1, 2)
    );
    assert!(
        is_bl_to_trampoline(target() + FTRACE_BL_OFFSET),
        "the tracer lost its site"
    );
    ftrace::unregister_ftrace_function(&KTEST_TRACER).unwrap();
    assert!(!is_bl_to_trampoline(target() + FTRACE_BL_OFFSET));
}

#[kernel_test]
fn kretprobe_at_an_ftrace_entry_sees_the_return_value() {
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let rp = Arc::new(Kretprobe::symbol("ktest_kprobe_ftrace_target").handler(move |_, regs| {
        s.store(regs.regs[0] as usize, Ordering::SeqCst);
        0
    }));
    register_kretprobe(&rp).unwrap();
    assert!(is_bl_to_trampoline(target() + FTRACE_BL_OFFSET));
    assert_eq!(call_target(10, 3), 70 ^ 3);
    assert_eq!(seen.load(Ordering::SeqCst), 70 ^ 3);
    unregister_kretprobe(&rp);
}

#[kernel_test]
fn register_and_unregister_while_other_cpus_call_the_function() {
    let me = arch::cpu::cpu_id();
    let workers: alloc::vec::Vec<usize> = crate::smp::online_cpus().filter(|&c| c != me).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let bad = Arc::new(AtomicUsize::new(0));
    let (s, d, b) = (stop.clone(), done.clone(), bad.clone());
    crate::smp::smp_call_function_many(
        workers.iter().copied(),
        Arc::new(move || {
            let mut i = 0u64;
            while !s.load(Ordering::Acquire) {
                if call_target(i, 5) != i.wrapping_mul(7) ^ 5 {
                    b.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
                crate::smp::flush_pending_calls();
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    let hits = Arc::new(AtomicUsize::new(0));
    for round in 0..10 {
        let h = hits.clone();
        let kp = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 0).pre(move |_, _| {
            h.fetch_add(1, Ordering::Relaxed);
            0
        }));
        register_kprobe(&kp).unwrap();
        call_target(round, 1);
        unregister_kprobe(&kp);
    }
    stop.store(true, Ordering::Release);
    while done.load(Ordering::Acquire) < workers.len() {
        core::hint::spin_loop();
    }
    assert_eq!(bad.load(Ordering::Relaxed), 0, "a call returned a wrong result");
    assert!(hits.load(Ordering::Relaxed) >= 10);
    assert!(!is_bl_to_trampoline(target() + FTRACE_BL_OFFSET));
}

#[kernel_test]
fn entry_probe_sees_the_callee_saved_registers() {
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let kp = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 0).pre(move |_, regs| {
        s.store(regs.regs[20] as usize, Ordering::SeqCst);
        0
    }));
    register_kprobe(&kp).unwrap();
    let r: u64;
    #[allow(unsafe_code)]
    // SAFETY: a plain AAPCS call of an extern "C" function with two
    // integer arguments; x20 is an input the callee preserves, and every
    // register the call may clobber is declared so.
    unsafe {
        core::arch::asm!(
            "bl {f}",
            f = sym ktest_kprobe_ftrace_target,
            in("x20") 0x5eed_u64,
            inout("x0") 2u64 => r,
            in("x1") 1u64,
            clobber_abi("C"),
        );
    }
    unregister_kprobe(&kp);
    assert_eq!(r, 14 ^ 1);
    assert_eq!(seen.load(Ordering::SeqCst), 0x5eed, "x20 at the entry");
}

/// Calls the target with `x20` holding `x20`; returns the result and
/// `x20` after the call (which the callee, traced or not, must preserve).
fn call_target_with_x20(x20: u64) -> (u64, u64) {
    let (r, after): (u64, u64);
    #[allow(unsafe_code)]
    // SAFETY: a plain AAPCS call of an extern "C" function with two
    // integer arguments; x20 is an input the callee preserves (read back
    // to check it), and every register the call may clobber is declared
    // so.
    unsafe {
        core::arch::asm!(
            "bl {f}",
            f = sym ktest_kprobe_ftrace_target,
            inout("x20") x20 => after,
            inout("x0") 2u64 => r,
            in("x1") 1u64,
            clobber_abi("C"),
        );
    }
    (r, after)
}

#[kernel_test]
fn a_probe_reading_registers_joining_an_only_pc_probe_gets_them_saved() {
    let (pc_hits, seen) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (h, s) = (pc_hits.clone(), seen.clone());
    // Alone, it gets the one-probe callsite that does not save x19..x28.
    let only_pc = Arc::new(
        Kprobe::symbol("ktest_kprobe_ftrace_target", 0)
            .pre(move |kp, regs| {
                if regs.pc as usize == kp.addr() {
                    h.fetch_add(1, Ordering::SeqCst);
                }
                0
            })
            .reads_only_pc(),
    );
    register_kprobe(&only_pc).unwrap();
    assert_eq!(
        call_target_with_x20(0x5eed),
        (14 ^ 1, 0x5eed),
        "result and x20 after the call"
    );
    assert_eq!(pc_hits.load(Ordering::SeqCst), 1);
    let regs_probe = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 0).pre(move |_, regs| {
        s.store(regs.regs[20] as usize, Ordering::SeqCst);
        0
    }));
    register_kprobe(&regs_probe).unwrap();
    let both = call_target_with_x20(0xbeef);
    unregister_kprobe(&regs_probe);
    // Back to the only-pc probe alone.
    let alone = call_target_with_x20(0xcafe);
    unregister_kprobe(&only_pc);
    assert_eq!(both, (14 ^ 1, 0xbeef));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0xbeef,
        "x20 at the entry, with both probes"
    );
    assert_eq!(alone, (14 ^ 1, 0xcafe));
    assert_eq!(pc_hits.load(Ordering::SeqCst), 3, "the only-pc probe ran on every call");
    assert_eq!(only_pc.nmissed(), 0);
}

/// A value a handler checks on every hit; poisoned when its owner is
/// dropped, so that a handler running after its probe was freed sees it.
struct Canary(AtomicUsize);

const CANARY_LIVE: usize = 0x11fe_11fe;

impl Drop for Canary {
    fn drop(&mut self) {
        self.0.store(0xdead_dead, Ordering::SeqCst);
    }
}

/// A probe at the target's entry whose handler counts its hits and any
/// hit that finds its canary dead into `bad`.
fn canary_probe(offset: usize, hits: &Arc<AtomicUsize>, bad: &Arc<AtomicUsize>) -> Arc<Kprobe> {
    let canary = Arc::new(Canary(AtomicUsize::new(CANARY_LIVE)));
    let (h, b) = (hits.clone(), bad.clone());
    Arc::new(
        Kprobe::symbol("ktest_kprobe_ftrace_target", offset).pre(move |_, regs| {
            if canary.0.load(Ordering::SeqCst) != CANARY_LIVE || regs.regs[1] != 5 {
                b.fetch_add(1, Ordering::Relaxed);
            }
            h.fetch_add(1, Ordering::Relaxed);
            0
        }),
    )
}

#[kernel_test]
fn probes_come_and_go_on_an_armed_function_while_other_cpus_call_it() {
    // Every change below makes a new callsite for the function and frees
    // the old one, or moves the function between its callsite and the
    // list ops (a function tracer joining): other CPUs calling it all the
    // while must only ever run live probes, and the calls' results stay
    // right.
    let me = arch::cpu::cpu_id();
    let workers: alloc::vec::Vec<usize> = crate::smp::online_cpus().filter(|&c| c != me).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let wrong = Arc::new(AtomicUsize::new(0));
    let (s, d, w) = (stop.clone(), done.clone(), wrong.clone());
    crate::smp::smp_call_function_many(
        workers.iter().copied(),
        Arc::new(move || {
            let mut i = 0u64;
            while !s.load(Ordering::Acquire) {
                if call_target(i, 5) != i.wrapping_mul(7) ^ 5 {
                    w.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
                crate::smp::flush_pending_calls();
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    let (hits, bad) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let keeper = canary_probe(0, &hits, &bad);
    register_kprobe(&keeper).unwrap();
    let site = ftrace::site_index(target()).unwrap();
    for round in 0..12u64 {
        let extra = canary_probe(if round % 3 == 0 { 4 } else { 0 }, &hits, &bad);
        register_kprobe(&extra).unwrap();
        if round % 4 == 1 {
            // The function tracer joins: the site goes to the list ops.
            KTEST_TRACER
                .set_hash(FtraceHash {
                    filter: BTreeSet::from([site]),
                    notrace: BTreeSet::new(),
                })
                .unwrap();
            ftrace::register_ftrace_function(&KTEST_TRACER).unwrap();
        }
        call_target(round, 5);
        if round % 2 == 0 {
            disable_kprobe(&keeper).unwrap();
            call_target(round, 5);
            enable_kprobe(&keeper).unwrap();
        }
        if KTEST_TRACER.is_registered() {
            ftrace::unregister_ftrace_function(&KTEST_TRACER).unwrap();
        }
        unregister_kprobe(&extra);
        // The last reference: the canary is poisoned and freed now.
        drop(extra);
    }
    unregister_kprobe(&keeper);
    drop(keeper);
    stop.store(true, Ordering::Release);
    while done.load(Ordering::Acquire) < workers.len() {
        core::hint::spin_loop();
    }
    assert_eq!(wrong.load(Ordering::Relaxed), 0, "a call returned a wrong result");
    assert_eq!(
        bad.load(Ordering::Relaxed),
        0,
        "a handler ran on a freed probe or wrong registers"
    );
    assert!(hits.load(Ordering::Relaxed) >= 12);
    assert!(!is_bl_to_trampoline(target() + FTRACE_BL_OFFSET));
    assert_eq!(
        crate::patching::read_insn(target()),
        Some(MOV_X9_X30),
        "entry bytes not restored"
    );
}

#[kernel_test]
fn update_returns_only_once_no_cpu_is_inside_the_callsite_it_replaced() {
    // A CPU inside a probe's handler when an update replaces the function's
    // callsite (here by adding a probe) may still read the old callsite:
    // the trampoline calls it with interrupts on, so the update's
    // stop_machine can run on that CPU in the middle (emulated here by the
    // handler serving its cross-calls, as the stopper's interrupt would).
    // The update must not return, and the old callsite must not be freed,
    // before that CPU has left the trampoline.
    let me = arch::cpu::cpu_id();
    let Some(worker) = crate::smp::online_cpus().find(|&c| c != me) else {
        return; // needs a second CPU
    };
    let entered = Arc::new(AtomicBool::new(false));
    let left = Arc::new(AtomicBool::new(false));
    let (e, l) = (entered.clone(), left.clone());
    let (hits, bad) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let lingering = Arc::new(Kprobe::symbol("ktest_kprobe_ftrace_target", 0).pre(move |_, regs| {
        if regs.regs[1] != 77 {
            return 0;
        }
        e.store(true, Ordering::Release);
        // Long enough for the update below to run its stop_machine and,
        // without a grace period, to return and free the old callsite.
        let deadline = crate::time::ktime_get_ns() + 200_000_000;
        while crate::time::ktime_get_ns() < deadline {
            crate::smp::flush_pending_calls();
            core::hint::spin_loop();
        }
        l.store(true, Ordering::Release);
        0
    }));
    register_kprobe(&lingering).unwrap();
    let finished = Arc::new(AtomicBool::new(false));
    let f = finished.clone();
    crate::smp::smp_call_function_many(
        core::iter::once(worker),
        Arc::new(move || {
            call_target(1, 77);
            f.store(true, Ordering::Release);
        }),
        false,
    );
    while !entered.load(Ordering::Acquire) {
        crate::smp::flush_pending_calls();
        core::hint::spin_loop();
    }
    // A second probe: the function gets a new callsite, the old one goes.
    let other = canary_probe(0, &hits, &bad);
    register_kprobe(&other).unwrap();
    let left_before_return = left.load(Ordering::Acquire);
    unregister_kprobe(&other);
    unregister_kprobe(&lingering);
    while !finished.load(Ordering::Acquire) {
        crate::smp::flush_pending_calls();
        core::hint::spin_loop();
    }
    assert!(
        left_before_return,
        "the update returned while a CPU was still inside the callsite it replaced"
    );
    assert_eq!(bad.load(Ordering::Relaxed), 0, "a handler ran on a freed probe");
}
