//! In-kernel tests of the fprobe API, after Linux's `lib/test_fprobe.c`
//! (entry only, entry and exit, by symbols, entry data, `nr_maxactive`
//! with nesting, skipping the exit handler), plus several fprobes on one
//! function, disabling, errors, a task dying inside a hooked call, and
//! unregistering while other CPUs call the function.

use super::fprobe::*;
use super::ftrace;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ftrace::FTRACE_BL_OFFSET;
use core::hint::black_box;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use ktest_macros::kernel_test;
use uapi::Errno;

const DIV_FACTOR: u32 = 3;

/// Linux's `fprobe_selftest_target`: traceable (its unmangled name is
/// outside the notrace trace module).
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn fprobe_selftest_target(value: u32) -> u32 {
    black_box(value) / DIV_FACTOR
}

/// Linux's `fprobe_selftest_target2`.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn fprobe_selftest_target2(value: u32) -> u32 {
    black_box(value) / DIV_FACTOR + 1
}

/// Linux's `fprobe_selftest_nest_target`: calls `nest` inside itself.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn fprobe_selftest_nest_target(value: u32, nest: extern "C" fn(u32) -> u32) -> u32 {
    black_box(nest)(value + 2)
}

/// Calls through a pointer, as Linux's test does, so nothing is inlined.
fn target(v: u32) -> u32 {
    black_box(fprobe_selftest_target as extern "C" fn(u32) -> u32)(v)
}

fn target2(v: u32) -> u32 {
    black_box(fprobe_selftest_target2 as extern "C" fn(u32) -> u32)(v)
}

/// A function's ftrace site (what handlers get as `entry_ip`).
fn site_ip(f: usize) -> usize {
    ftrace::ftrace_location(f).expect("traceable target")
}

fn target_ip() -> usize {
    site_ip(fprobe_selftest_target as *const () as usize)
}

fn target2_ip() -> usize {
    site_ip(fprobe_selftest_target2 as *const () as usize)
}

/// A value above DIV_FACTOR that differs between runs.
fn rand1() -> u32 {
    (crate::time::ktime_get_ns() as u32 | 0x100) & 0x7fff_ffff
}

/// What the handlers saw.
#[derive(Default)]
struct Seen {
    entries: AtomicUsize,
    exits: AtomicUsize,
    entry_val: AtomicU32,
    exit_val: AtomicU32,
    bad: AtomicUsize,
}

/// Linux's `fp_entry_handler`/`fp_exit_handler` pair: the entry stores
/// `rand1 / 3` (in the entry data when there is some), the exit checks the
/// return value and the entry data and stores `entry_val + 3`.
fn checking_fprobe(seen: &Arc<Seen>, r: u32, skip: bool, data_size: usize) -> Fprobe {
    let (s1, s2) = (seen.clone(), seen.clone());
    Fprobe::new()
        .entry_data_size(data_size)
        .entry_handler(move |fp, ip, _ret_ip, _regs, data| {
            if ip != target_ip() && ip != target2_ip() {
                s1.bad.fetch_add(1, Ordering::SeqCst);
            }
            if !arch::cpu::irqs_disabled() {
                s1.bad.fetch_add(1, Ordering::SeqCst);
            }
            let v = r / DIV_FACTOR;
            s1.entry_val.store(v, Ordering::SeqCst);
            if fp.data_size() >= 4 {
                data[..4].copy_from_slice(&v.to_le_bytes());
            } else if !data.is_empty() {
                s1.bad.fetch_add(1, Ordering::SeqCst);
            }
            s1.entries.fetch_add(1, Ordering::SeqCst);
            i32::from(skip)
        })
        .exit_handler(move |fp, ip, _ret_ip, regs, data| {
            let ret = regs.return_value() as u32;
            let want = if ip == target2_ip() {
                r / DIV_FACTOR + 1
            } else {
                r / DIV_FACTOR
            };
            let ev = s2.entry_val.load(Ordering::SeqCst);
            if ret != want || ev != r / DIV_FACTOR {
                s2.bad.fetch_add(1, Ordering::SeqCst);
            }
            if fp.data_size() >= 4 && data[..4] != ev.to_le_bytes() {
                s2.bad.fetch_add(1, Ordering::SeqCst);
            }
            s2.exit_val.store(ev + DIV_FACTOR, Ordering::SeqCst);
            s2.exits.fetch_add(1, Ordering::SeqCst);
        })
}

fn reset(seen: &Seen) {
    seen.entry_val.store(0, Ordering::SeqCst);
    seen.exit_val.store(0, Ordering::SeqCst);
}

#[kernel_test]
fn fprobe_entry_only_runs_the_entry_handler_on_every_matching_function() {
    let r = rand1();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    let fp = Arc::new(Fprobe::new().entry_handler(move |_, ip, _, _, data| {
        if !data.is_empty() || (ip != target_ip() && ip != target2_ip()) {
            s.bad.fetch_add(1, Ordering::SeqCst);
        }
        s.entry_val.store(r / DIV_FACTOR, Ordering::SeqCst);
        s.entries.fetch_add(1, Ordering::SeqCst);
        0
    }));
    // Before registration, unregistering fails.
    assert_eq!(unregister_fprobe(&fp), Err(Errno::EINVAL));
    register_fprobe(&fp, "fprobe_selftest_target*", None).unwrap();
    assert_eq!(fp.functions().len(), 2, "the glob matches target and target2");
    reset(&seen);
    assert_eq!(target(r), r / DIV_FACTOR);
    assert_ne!(seen.entry_val.load(Ordering::SeqCst), 0);
    assert_eq!(seen.exit_val.load(Ordering::SeqCst), 0);
    reset(&seen);
    assert_eq!(target2(r), r / DIV_FACTOR + 1);
    assert_ne!(seen.entry_val.load(Ordering::SeqCst), 0);
    unregister_fprobe(&fp).unwrap();
    target(r);
    assert_eq!(seen.entries.load(Ordering::SeqCst), 2, "a hit after unregistering");
    assert_eq!(seen.bad.load(Ordering::SeqCst), 0);
    assert_eq!(fp.nmissed(), 0);
}

#[kernel_test]
fn fprobe_exit_handler_sees_the_return_value_and_the_callers_get_it() {
    let r = rand1();
    let seen = Arc::new(Seen::default());
    let fp = Arc::new(checking_fprobe(&seen, r, false, 0));
    register_fprobe(&fp, "fprobe_selftest_target*", None).unwrap();
    reset(&seen);
    assert_eq!(target(r), r / DIV_FACTOR);
    assert_ne!(seen.entry_val.load(Ordering::SeqCst), 0);
    assert_eq!(
        seen.exit_val.load(Ordering::SeqCst),
        seen.entry_val.load(Ordering::SeqCst) + DIV_FACTOR
    );
    reset(&seen);
    assert_eq!(target2(r), r / DIV_FACTOR + 1);
    assert_eq!(
        seen.exit_val.load(Ordering::SeqCst),
        seen.entry_val.load(Ordering::SeqCst) + DIV_FACTOR
    );
    unregister_fprobe(&fp).unwrap();
    assert_eq!(
        (seen.entries.load(Ordering::SeqCst), seen.exits.load(Ordering::SeqCst)),
        (2, 2)
    );
    assert_eq!(seen.bad.load(Ordering::SeqCst), 0);
    // Every instance came back.
    assert_eq!(fp.nfree(), 2 * 2 * crate::smp::num_online_cpus());
}

#[kernel_test]
fn fprobe_registered_by_symbols_probes_exactly_those() {
    let r = rand1();
    let seen = Arc::new(Seen::default());
    let fp = Arc::new(checking_fprobe(&seen, r, false, 0));
    register_fprobe_syms(&fp, &["fprobe_selftest_target", "fprobe_selftest_target2"]).unwrap();
    target(r);
    target2(r);
    // The inner call gets r again.
    fprobe_selftest_nest_target(r - 2, fprobe_selftest_target);
    unregister_fprobe(&fp).unwrap();
    // The nest target is not probed; its inner call is.
    assert_eq!(
        (
            seen.entries.load(Ordering::SeqCst),
            seen.exits.load(Ordering::SeqCst),
            fp.nmissed()
        ),
        (3, 3, 0)
    );
    assert_eq!(seen.bad.load(Ordering::SeqCst), 0);
}

#[kernel_test]
fn fprobe_entry_data_passes_from_entry_to_exit() {
    let r = rand1();
    let seen = Arc::new(Seen::default());
    let fp = Arc::new(checking_fprobe(&seen, r, false, 4));
    register_fprobe(&fp, "fprobe_selftest_target", None).unwrap();
    assert_eq!(target(r), r / DIV_FACTOR);
    assert_eq!(target(r), r / DIV_FACTOR);
    unregister_fprobe(&fp).unwrap();
    assert_eq!(
        (seen.entries.load(Ordering::SeqCst), seen.exits.load(Ordering::SeqCst)),
        (2, 2)
    );
    assert_eq!(seen.bad.load(Ordering::SeqCst), 0);
}

#[kernel_test]
fn fprobe_with_one_instance_misses_the_nested_call() {
    let nest_ip = site_ip(fprobe_selftest_nest_target as *const () as usize);
    let bad = Arc::new(AtomicUsize::new(0));
    let exits = Arc::new(AtomicUsize::new(0));
    let (b, e) = (bad.clone(), exits.clone());
    let fp = Arc::new(
        Fprobe::new()
            .maxactive(1)
            .entry_handler(|_, _, _, _, _| 0)
            .exit_handler(move |_, ip, _, _, _| {
                if ip != nest_ip {
                    b.fetch_add(1, Ordering::SeqCst);
                }
                e.fetch_add(1, Ordering::SeqCst);
            }),
    );
    register_fprobe_syms(&fp, &["fprobe_selftest_target", "fprobe_selftest_nest_target"]).unwrap();
    let r = rand1();
    assert_eq!(
        fprobe_selftest_nest_target(r, fprobe_selftest_target),
        (r + 2) / DIV_FACTOR
    );
    assert_eq!(fp.nmissed(), 1);
    unregister_fprobe(&fp).unwrap();
    assert_eq!(exits.load(Ordering::SeqCst), 1);
    assert_eq!(bad.load(Ordering::SeqCst), 0);
    assert_eq!(fp.nfree(), 1);
}

#[kernel_test]
fn fprobe_entry_handler_returning_nonzero_skips_the_exit_without_a_miss() {
    let r = rand1();
    let seen = Arc::new(Seen::default());
    let fp = Arc::new(checking_fprobe(&seen, r, true, 0));
    register_fprobe(&fp, "fprobe_selftest_target", None).unwrap();
    reset(&seen);
    assert_eq!(target(r), r / DIV_FACTOR);
    assert_ne!(seen.entry_val.load(Ordering::SeqCst), 0);
    assert_eq!(seen.exit_val.load(Ordering::SeqCst), 0);
    assert_eq!(fp.nmissed(), 0);
    unregister_fprobe(&fp).unwrap();
    assert_eq!(seen.exits.load(Ordering::SeqCst), 0);
    assert_eq!(
        fp.nfree(),
        2 * crate::smp::num_online_cpus(),
        "the skipped instance is back"
    );
}

#[kernel_test]
fn several_fprobes_on_one_function_all_run_and_exits_nest() {
    let order = Arc::new(spin::Mutex::new(Vec::new()));
    let mk = |tag: u32| {
        let (o1, o2) = (order.clone(), order.clone());
        Arc::new(
            Fprobe::new()
                .entry_data_size(4)
                .entry_handler(move |_, _, _, _, data| {
                    data.copy_from_slice(&tag.to_le_bytes());
                    o1.lock().push(tag);
                    0
                })
                .exit_handler(move |_, _, _, regs, data| {
                    let mut b = [0u8; 4];
                    b.copy_from_slice(data);
                    o2.lock().push(100 + u32::from_le_bytes(b));
                    // An exit handler may change the return value.
                    regs.regs[0] += 1;
                }),
        )
    };
    let (a, b) = (mk(1), mk(2));
    register_fprobe(&a, "fprobe_selftest_target", None).unwrap();
    register_fprobe_ips(&b, &[fprobe_selftest_target as *const () as usize]).unwrap();
    assert_eq!(target(30), 10 + 2, "both exit handlers added one");
    unregister_fprobe(&a).unwrap();
    assert_eq!(target(30), 10 + 1);
    unregister_fprobe(&b).unwrap();
    assert_eq!(target(30), 10);
    // Entries in registration order; exits in reverse, each with its data.
    assert_eq!(*order.lock(), [1, 2, 102, 101, 2, 102]);
    assert!(!FPROBE_OPS.is_registered(), "the ops stays registered with no fprobe");
}

#[kernel_test]
fn disabled_fprobe_runs_nothing_and_counts_nothing() {
    let seen = Arc::new(Seen::default());
    let fp = Arc::new(checking_fprobe(&seen, 30, false, 0).disabled());
    register_fprobe(&fp, "fprobe_selftest_target", None).unwrap();
    target(30);
    assert_eq!(seen.entries.load(Ordering::SeqCst), 0);
    enable_fprobe(&fp);
    target(30);
    assert_eq!(
        (seen.entries.load(Ordering::SeqCst), seen.exits.load(Ordering::SeqCst)),
        (1, 1)
    );
    disable_fprobe(&fp);
    assert!(fprobe_disabled(&fp));
    target(30);
    unregister_fprobe(&fp).unwrap();
    assert_eq!(seen.entries.load(Ordering::SeqCst), 1);
    assert_eq!(fp.nmissed(), 0);
}

#[kernel_test]
fn fprobe_registration_errors_are_linuxs() {
    let fp = Arc::new(Fprobe::new().entry_handler(|_, _, _, _, _| 0));
    assert_eq!(
        register_fprobe(&fp, "no_such_function_anywhere*", None),
        Err(Errno::EINVAL)
    );
    assert_eq!(register_fprobe(&fp, "", None), Err(Errno::EINVAL));
    assert_eq!(
        register_fprobe(&fp, "fprobe_selftest_target", Some("fprobe_selftest_target")),
        Err(Errno::EINVAL),
        "nothing left after the notrace glob"
    );
    assert_eq!(
        register_fprobe_syms(&fp, &["no_such_function_anywhere"]),
        Err(Errno::ENOENT)
    );
    assert_eq!(register_fprobe_syms(&fp, &[]), Err(Errno::EINVAL));
    // Inside a function, not its entry or site.
    let inside = fprobe_selftest_target as *const () as usize + 3 * 4;
    assert_eq!(register_fprobe_ips(&fp, &[inside]), Err(Errno::EINVAL));
    register_fprobe(&fp, "fprobe_selftest_target*", Some("fprobe_selftest_target2")).unwrap();
    assert_eq!(fp.functions(), [fprobe_selftest_target as *const () as usize]);
    assert_eq!(
        register_fprobe_syms(&fp, &["fprobe_selftest_target2"]),
        Err(Errno::EINVAL)
    );
    unregister_fprobe(&fp).unwrap();
    assert_eq!(unregister_fprobe(&fp), Err(Errno::EINVAL));
    // It may be registered again.
    register_fprobe_syms(&fp, &["fprobe_selftest_target2"]).unwrap();
    unregister_fprobe(&fp).unwrap();
}

/// A probe target the kernel thread below never returns from.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn fprobe_selftest_never_returns(_: u64) -> ! {
    crate::sched::task::kthread_exit()
}

extern "C" fn dies_in_fprobed_call(arg: usize) {
    fprobe_selftest_never_returns(black_box(arg as u64));
}

#[kernel_test]
fn fprobe_instances_of_dead_tasks_return_to_the_pool() {
    const MAXACTIVE: usize = 2;
    let fp = Arc::new(
        Fprobe::new()
            .maxactive(MAXACTIVE)
            .entry_handler(|_, _, _, _, _| 0)
            .exit_handler(|_, _, _, _, _| {}),
    );
    register_fprobe(&fp, "fprobe_selftest_never_returns", None).unwrap();
    for i in 0..3 * MAXACTIVE {
        let t = crate::sched::Task::new_kthread(dies_in_fprobed_call, i, "fprobe/dies").unwrap();
        crate::sched::wake_up(&t);
        let deadline = crate::time::ktime_get_ns() + 1_000_000_000;
        while fp.nfree() != MAXACTIVE || t.state() != crate::sched::TaskState::Dead {
            assert!(crate::time::ktime_get_ns() < deadline, "the instance did not come back");
            crate::sched::wait::sleep_ns(1_000_000).unwrap();
        }
    }
    assert_eq!(fp.nmissed(), 0);
    unregister_fprobe(&fp).unwrap();
}

#[kernel_test]
fn unregistering_fprobes_while_other_cpus_call_the_function() {
    let me = arch::cpu::cpu_id();
    let workers: Vec<usize> = crate::smp::online_cpus().filter(|&c| c != me).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let bad = Arc::new(AtomicUsize::new(0));
    let (s, d, b) = (stop.clone(), done.clone(), bad.clone());
    crate::smp::smp_call_function_many(
        workers.iter().copied(),
        Arc::new(move || {
            let mut i = 0u32;
            while !s.load(Ordering::Acquire) {
                if target(i) != i / DIV_FACTOR {
                    b.fetch_add(1, Ordering::Relaxed);
                }
                i = i.wrapping_add(1);
                crate::smp::flush_pending_calls();
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    let live = Arc::new(AtomicBool::new(false));
    let late = Arc::new(AtomicUsize::new(0));
    for round in 0..10u32 {
        let (l1, l2, t1, t2) = (live.clone(), live.clone(), late.clone(), late.clone());
        let fp = Arc::new(
            Fprobe::new()
                .entry_handler(move |_, _, _, _, _| {
                    if !l1.load(Ordering::Acquire) {
                        t1.fetch_add(1, Ordering::Relaxed);
                    }
                    0
                })
                .exit_handler(move |_, _, _, _, _| {
                    if !l2.load(Ordering::Acquire) {
                        t2.fetch_add(1, Ordering::Relaxed);
                    }
                }),
        );
        live.store(true, Ordering::Release);
        register_fprobe(&fp, "fprobe_selftest_target", None).unwrap();
        assert_eq!(target(round), round / DIV_FACTOR);
        unregister_fprobe(&fp).unwrap();
        // From here no handler of this fprobe may run.
        live.store(false, Ordering::Release);
    }
    for _ in 0..1000 {
        target(7);
    }
    stop.store(true, Ordering::Release);
    while done.load(Ordering::Acquire) < workers.len() {
        core::hint::spin_loop();
    }
    assert_eq!(bad.load(Ordering::Relaxed), 0, "a call returned a wrong result");
    assert_eq!(late.load(Ordering::Relaxed), 0, "a handler ran after unregister_fprobe");
    assert!(!FPROBE_OPS.is_registered());
    let f = fprobe_selftest_target as *const () as usize;
    let bl = insn::encode::bl((f + FTRACE_BL_OFFSET) as u64, arch::ftrace::ftrace_caller_addr() as u64).unwrap();
    assert_ne!(
        crate::patching::read_insn(f + FTRACE_BL_OFFSET),
        Some(bl),
        "site left patched"
    );
}
