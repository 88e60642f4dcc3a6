//! In-kernel tests of kprobes basics; the per-instruction-class suite is
//! in `insn_tests.rs`.

use super::kretprobe::{register_kretprobe, unregister_kretprobe, Kretprobe};
use super::*;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use ktest_macros::kernel_test;

/// A probe target: not inlined, with a frame, a few instructions. Exported
/// under a plain name: `kernel::kprobes::*` paths are blacklisted.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kprobe_target(a: u64, b: u64) -> u64 {
    core::hint::black_box(a.wrapping_mul(3).wrapping_add(b))
}

#[kernel_test]
fn probe_on_function_entry_runs_pre_then_post_and_restores_bytes() {
    let target = ktest_kprobe_target as *const () as usize;
    let orig = crate::patching::read_insn(target).unwrap();
    let order = Arc::new(AtomicUsize::new(0));
    let (o1, o2) = (order.clone(), order.clone());
    let kp = Arc::new(
        Kprobe::symbol("ktest_kprobe_target", 0)
            .pre(move |_, regs| {
                assert_eq!(regs.regs[0], 5);
                o1.fetch_add(1, Ordering::SeqCst);
                0
            })
            .post(move |_, _| {
                assert_eq!(o2.load(Ordering::SeqCst) % 2, 1, "post before pre");
                o2.fetch_add(1, Ordering::SeqCst);
            }),
    );
    register_kprobe(&kp).expect("register");
    assert_eq!(kp.addr(), target);
    // At a traceable function's entry the probe is armed through ftrace:
    // the entry instruction stays, the site calls the trampoline.
    assert_eq!(crate::patching::read_insn(target), Some(orig));
    assert!(insn::decode::is_bl(
        crate::patching::read_insn(target + arch::ftrace::FTRACE_BL_OFFSET).unwrap()
    ));
    for _ in 0..10 {
        assert_eq!(ktest_kprobe_target(core::hint::black_box(5), 1), 16);
    }
    assert_eq!(order.load(Ordering::SeqCst), 20);
    unregister_kprobe(&kp);
    assert_eq!(
        crate::patching::read_insn(target),
        Some(orig),
        "original bytes not restored"
    );
    assert_eq!(ktest_kprobe_target(5, 1), 16);
    assert_eq!(order.load(Ordering::SeqCst), 20, "handler ran after unregister");
}

#[kernel_test]
fn probe_on_every_instruction_of_a_function_keeps_its_result() {
    let sym = crate::kallsyms::lookup_name("ktest_kprobe_target").unwrap();
    let size = crate::kallsyms::lookup_addr(sym).unwrap().size as usize;
    let want = ktest_kprobe_target(7, 9);
    for off in (0..size).step_by(4) {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let kp = Arc::new(Kprobe::at(sym + off).pre(move |_, _| {
            h.fetch_add(1, Ordering::SeqCst);
            0
        }));
        match register_kprobe(&kp) {
            Ok(()) => {
                assert_eq!(
                    ktest_kprobe_target(core::hint::black_box(7), 9),
                    want,
                    "result changed with a probe at +{off:#x}"
                );
                assert_eq!(hits.load(Ordering::SeqCst), 1, "probe at +{off:#x}");
                unregister_kprobe(&kp);
            }
            Err(e) => assert_eq!(e, Errno::EINVAL, "+{off:#x}"),
        }
    }
}

#[kernel_test]
fn kretprobe_sees_the_return_value() {
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let rp = Arc::new(Kretprobe::symbol("ktest_kprobe_target").handler(move |_, regs| {
        s.store(regs.regs[0] as usize, Ordering::SeqCst);
        0
    }));
    register_kretprobe(&rp).expect("register kretprobe");
    assert_eq!(ktest_kprobe_target(core::hint::black_box(10), 2), 32);
    assert_eq!(seen.load(Ordering::SeqCst), 32);
    unregister_kretprobe(&rp);
}

#[kernel_test]
fn bad_probe_addresses_are_refused() {
    let target = ktest_kprobe_target as *const () as usize;
    assert_eq!(
        register_kprobe(&Arc::new(Kprobe::at(target + 2))),
        Err(Errno::EINVAL),
        "unaligned"
    );
    assert_eq!(
        register_kprobe(&Arc::new(Kprobe::at(0xffff_0000_1000_0000))),
        Err(Errno::EINVAL),
        "outside text"
    );
    assert_eq!(
        register_kprobe(&Arc::new(Kprobe::symbol("no_such_function", 0))),
        Err(Errno::ENOENT)
    );
    // Past the symbol: the address is that of what follows (Linux's
    // renormalisation), refused only where no function is.
    let size = crate::kallsyms::lookup_addr(target).unwrap().size as usize;
    let past = Arc::new(Kprobe::symbol("ktest_kprobe_target", size));
    match crate::kallsyms::lookup_addr(target + size) {
        Some(next) if next.offset == 0 && !crate::notrace::is_notrace(target + size) => {
            register_kprobe(&past).expect("a probe on the next function");
            assert_eq!(past.addr(), target + size);
            unregister_kprobe(&past);
        }
        _ => assert_eq!(register_kprobe(&past), Err(Errno::EINVAL), "past the symbol"),
    }
    assert_eq!(
        register_kprobe(&Arc::new(Kprobe::symbol("ktest_kprobe_target", usize::MAX - 3))),
        Err(Errno::EINVAL),
        "an offset that wraps around"
    );
    assert_eq!(
        register_kprobe(&Arc::new(Kprobe::symbol("schedule_tail", 0))),
        Err(Errno::EINVAL),
        "marked #[notrace]"
    );
    assert!(super::blacklist::entries()
        .iter()
        .any(|e| e.2 == "el1h_64_sync_handler"));
    assert_eq!(
        register_kprobe(&Arc::new(Kprobe::symbol("el1h_64_sync_handler", 0))),
        Err(Errno::EINVAL),
        "blacklisted"
    );
    let kp = Arc::new(Kprobe::at(target));
    register_kprobe(&kp).unwrap();
    assert_eq!(register_kprobe(&kp), Err(Errno::EINVAL), "registered twice");
    unregister_kprobe(&kp);
}

#[kernel_test]
fn debugfs_list_shows_probes_in_linux_format() {
    // Past the ftrace site (at +0x0 and +0x4 a probe uses ftrace).
    let kp = Arc::new(Kprobe::symbol("ktest_kprobe_target", 8));
    register_kprobe(&kp).unwrap();
    let rp = Arc::new(Kretprobe::symbol("ktest_kprobe_target").handler(|_, _| 0));
    register_kretprobe(&rp).unwrap();
    disable_kprobe(&kp).unwrap();
    let text = alloc::string::String::from_utf8(super::debugfs::list()).unwrap();
    let base = crate::kallsyms::lookup_name("ktest_kprobe_target").unwrap();
    let k = alloc::format!("{:016x}  k  ktest_kprobe_target+0x8    [DISABLED]\n", base + 8);
    let r = alloc::format!("{base:016x}  r  ktest_kprobe_target+0x0    [FTRACE]\n");
    assert!(text.contains(&k), "{text}");
    assert!(text.contains(&r), "{text}");
    // Disabled: the instruction is back.
    assert_ne!(
        crate::patching::read_insn(base + 8),
        Some(arch::debug_monitors::brk_insn(KPROBES_BRK_IMM))
    );
    enable_kprobe(&kp).unwrap();
    assert_eq!(
        crate::patching::read_insn(base + 8),
        Some(arch::debug_monitors::brk_insn(KPROBES_BRK_IMM))
    );
    // enabled = 0 disarms everything (the BRK at +0x8 and the ftrace
    // site of the return probe), 1 re-arms.
    let brk = Some(arch::debug_monitors::brk_insn(KPROBES_BRK_IMM));
    let site_bl = || insn::decode::is_bl(crate::patching::read_insn(base + 4).unwrap());
    set_all_armed(false).unwrap();
    assert_ne!(crate::patching::read_insn(base + 8), brk);
    assert!(!site_bl());
    assert_eq!(ktest_kprobe_target(1, 1), 4);
    set_all_armed(true).unwrap();
    assert_eq!(crate::patching::read_insn(base + 8), brk);
    assert!(site_bl());
    unregister_kprobe(&kp);
    unregister_kretprobe(&rp);
    assert!(alloc::string::String::from_utf8(super::debugfs::list())
        .unwrap()
        .is_empty());
}

#[kernel_test]
fn warn_on_reports_and_continues() {
    let before = crate::debug::bug::WARN_COUNT.load(Ordering::Relaxed);
    let hit = crate::warn_on!(core::hint::black_box(true));
    assert!(hit);
    assert!(!crate::warn_on!(core::hint::black_box(false)));
    assert_eq!(crate::debug::bug::WARN_COUNT.load(Ordering::Relaxed), before + 1);
}

#[kernel_test]
fn text_patching_goes_through_the_fixmap_and_keeps_text_read_only() {
    let target = ktest_kprobe_target as *const () as usize;
    let orig = crate::patching::read_insn(target).unwrap();
    assert_eq!(
        crate::patching::patch_text_nosync(target + 1, 0),
        Err(Errno::EINVAL),
        "unaligned"
    );
    let data = &orig as *const u32 as usize & !3;
    assert_eq!(
        crate::patching::patch_text_nosync(data, 0),
        Err(Errno::EINVAL),
        "outside text"
    );
    // NOP and back; nothing runs the function until the original is back.
    let nop = insn::encode::nop();
    #[allow(unsafe_code)]
    // SAFETY: nothing calls ktest_kprobe_target while it holds the NOP.
    unsafe { crate::patching::patch_text_unchecked(&[target], &[nop]) }.unwrap();
    assert_eq!(crate::patching::read_insn(target), Some(nop));
    #[allow(unsafe_code)]
    // SAFETY: puts the original instruction back.
    unsafe { crate::patching::patch_text_nosync_unchecked(target, orig) }.unwrap();
    assert_eq!(crate::patching::read_insn(target), Some(orig));
    // The text mapping itself never became writable, and the fixmap slot is empty.
    let (_, prot) = arch::mmu::translate(arch::addr::VirtAddr::new(target).unwrap()).unwrap();
    assert!(!prot.is_writable() && prot.is_exec());
    assert!(arch::mmu::translate(arch::mmu::fixmap::slot_addr(arch::patching::FIX_TEXT_POKE0)).is_none());
    assert_eq!(ktest_kprobe_target(2, 3), 9);
}

#[kernel_test]
fn pre_handler_returning_nonzero_skips_the_instruction() {
    // The handler "emulates" the call: result in x0, return to the caller.
    let kp = Arc::new(Kprobe::symbol("ktest_kprobe_target", 0).pre(|_, regs| {
        regs.regs[0] = 4242;
        regs.pc = regs.regs[30];
        1
    }));
    register_kprobe(&kp).unwrap();
    assert_eq!(ktest_kprobe_target(core::hint::black_box(1), 2), 4242);
    unregister_kprobe(&kp);
    assert_eq!(ktest_kprobe_target(1, 2), 5);
}

/// Called from a handler, with its own probe.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kprobe_inner(x: u64) -> u64 {
    // A body of its own: identical functions would be merged into one symbol.
    core::hint::black_box(x.wrapping_mul(5) ^ 0x100)
}

#[kernel_test]
fn a_probe_hit_inside_a_handler_is_counted_missed_and_still_runs() {
    let inner_hits = Arc::new(AtomicUsize::new(0));
    let ih = inner_hits.clone();
    let inner = Arc::new(Kprobe::symbol("ktest_kprobe_inner", 0).pre(move |_, _| {
        ih.fetch_add(1, Ordering::SeqCst);
        0
    }));
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let outer = Arc::new(Kprobe::symbol("ktest_kprobe_target", 0).pre(move |_, _| {
        s.store(ktest_kprobe_inner(core::hint::black_box(41)) as usize, Ordering::SeqCst);
        0
    }));
    register_kprobe(&inner).unwrap();
    register_kprobe(&outer).unwrap();
    assert_eq!(ktest_kprobe_target(2, 2), 8);
    assert_eq!(
        seen.load(Ordering::SeqCst),
        (41 * 5) ^ 0x100,
        "the probed inner function must still run correctly"
    );
    assert_eq!(inner.nmissed(), 1, "the nested hit is missed");
    assert_eq!(inner_hits.load(Ordering::SeqCst), 0, "no handler runs for a nested hit");
    // Outside a handler the inner probe works normally.
    assert_eq!(ktest_kprobe_inner(1), 5 ^ 0x100);
    assert_eq!(inner_hits.load(Ordering::SeqCst), 1);
    unregister_kprobe(&outer);
    unregister_kprobe(&inner);
}

#[kernel_test]
fn a_fault_in_the_slot_goes_back_to_the_probed_instruction() {
    let load = crate::kallsyms::lookup_name("ktest_kprobe_fault_load").unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let kp = Arc::new(Kprobe::at(load).pre(move |_, _| {
        h.fetch_add(1, Ordering::SeqCst);
        0
    }));
    register_kprobe(&kp).unwrap();
    let good = 0x1234_5678_9abc_def0u64;
    assert_eq!(super::asm_tests::fault_load(&good as *const u64 as u64), good as i64);
    // The stepped load faults in the slot; the PC goes back to the probed
    // address, whose exception-table fixup then applies.
    assert_eq!(super::asm_tests::fault_load(0xdead_0000_0000), -14);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    // The per-CPU state was reset: the probe works again afterwards.
    assert_eq!(super::asm_tests::fault_load(&good as *const u64 as u64), good as i64);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    unregister_kprobe(&kp);
}

/// Returns its caller's backtrace while kretprobed.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kretprobe_backtrace(_: u64) -> u64 {
    let mut out = alloc::string::String::new();
    crate::stacktrace::dump_backtrace(&mut out, 0, arch::cpu::frame_pointer());
    BACKTRACE.lock().replace(out);
    core::hint::black_box(7)
}

static BACKTRACE: crate::sync::IrqSpinLock<Option<alloc::string::String>> = crate::sync::IrqSpinLock::new(None);

#[inline(never)]
fn kretprobe_backtrace_caller() -> u64 {
    core::hint::black_box(ktest_kretprobe_backtrace(core::hint::black_box(1))) + 1
}

#[kernel_test]
fn backtraces_through_a_kretprobed_frame_show_the_real_caller() {
    let rp = Arc::new(Kretprobe::symbol("ktest_kretprobe_backtrace").handler(|_, _| 0));
    register_kretprobe(&rp).unwrap();
    assert_eq!(kretprobe_backtrace_caller(), 8);
    unregister_kretprobe(&rp);
    let bt = BACKTRACE.lock().take().unwrap();
    assert!(bt.contains("kretprobe_backtrace_caller+0x"), "{bt}");
    assert!(!bt.contains("kretprobe_trampoline"), "{bt}");
}

/// A kretprobe target that never returns: the kernel thread that calls it
/// ends inside it.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kretprobe_never_returns(_: u64) -> ! {
    crate::sched::task::kthread_exit()
}

extern "C" fn dies_in_kretprobed_call(arg: usize) {
    ktest_kretprobe_never_returns(core::hint::black_box(arg as u64));
}

/// What a fresh task found in flight: 1 + instances, 0 before it ran.
static FRESH_SAW: AtomicUsize = AtomicUsize::new(0);

extern "C" fn records_calls_in_flight(_: usize) {
    let me = crate::sched::current();
    let stale = me.ret_stack.len() + usize::from(super::kretprobe::real_return_address(0).is_some());
    FRESH_SAW.store(1 + stale, Ordering::SeqCst);
}

/// Sleeps until `done()` holds, for at most a second.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = crate::time::ktime_get_ns() + 1_000_000_000;
    while !done() {
        assert!(crate::time::ktime_get_ns() < deadline, "timed out waiting: {what}");
        crate::sched::wait::sleep_ns(1_000_000).unwrap();
    }
}

#[kernel_test]
fn kretprobe_instances_of_dead_tasks_return_to_the_pool_and_never_reach_new_tasks() {
    const MAXACTIVE: usize = 4;
    let entries = Arc::new(AtomicUsize::new(0));
    let e = entries.clone();
    let rp = Arc::new(
        Kretprobe::symbol("ktest_kretprobe_never_returns")
            .maxactive(MAXACTIVE)
            .entry_handler(move |_, _| {
                e.fetch_add(1, Ordering::SeqCst);
                0
            })
            .handler(|_, _| 0),
    );
    register_kretprobe(&rp).unwrap();
    // More dying tasks than instances: one kept per dead task would empty
    // the pool and count the rest in nmissed.
    for i in 0..3 * MAXACTIVE {
        let t = crate::sched::Task::new_kthread(dies_in_kretprobed_call, i, "kretprobe/dies").unwrap();
        crate::sched::wake_up(&t);
        wait_until("the dying task's instance", || {
            t.state() == crate::sched::TaskState::Dead && !t.on_cpu.load(Ordering::Acquire)
        });
        wait_until("the pool refilled", || rp.nfree() == MAXACTIVE);
        drop(t);
        // A new task, possibly where the dead one was, starts with nothing
        // in flight.
        FRESH_SAW.store(0, Ordering::SeqCst);
        let fresh = crate::sched::Task::new_kthread(records_calls_in_flight, 0, "kretprobe/new").unwrap();
        crate::sched::wake_up(&fresh);
        wait_until("the fresh task", || FRESH_SAW.load(Ordering::SeqCst) != 0);
        assert_eq!(
            FRESH_SAW.load(Ordering::SeqCst),
            1,
            "stale kretprobe instances in a new task"
        );
    }
    assert_eq!(rp.nmissed(), 0);
    // Every call took an instance (the entry handler runs with one).
    assert_eq!(entries.load(Ordering::SeqCst), 3 * MAXACTIVE);
    unregister_kretprobe(&rp);
}

/// What [`ktest_kretprobe_saved_lr`] found as its own return address.
static SAVED_LR: AtomicUsize = AtomicUsize::new(0);

/// A kretprobe target that reads its return address from its frame record.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kretprobe_saved_lr(x: u64) -> u64 {
    let fp = arch::cpu::frame_pointer();
    let lr = arch::nofault::read_u64_nofault(fp + 8).unwrap_or(0);
    SAVED_LR.store(lr as usize, Ordering::SeqCst);
    core::hint::black_box(x * 2)
}

#[kernel_test]
fn kretprobe_returns_through_return_to_handler_and_may_change_the_result() {
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let rp = Arc::new(Kretprobe::symbol("ktest_kretprobe_saved_lr").handler(move |ri, regs| {
        // The handler sees the real return address, not the hook.
        s.store(regs.regs[0] as usize, Ordering::SeqCst);
        assert_eq!(regs.pc, ri.ret_addr);
        assert_eq!(regs.regs[30], ri.ret_addr);
        regs.regs[0] += 1;
        0
    }));
    register_kretprobe(&rp).unwrap();
    let r = ktest_kretprobe_saved_lr(core::hint::black_box(20));
    unregister_kretprobe(&rp);
    assert_eq!(
        SAVED_LR.load(Ordering::SeqCst),
        arch::ftrace::return_to_handler_addr(),
        "the hooked return address is not return_to_handler"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 40, "the handler saw the return value");
    assert_eq!(r, 41, "the caller got what the handler set");
    // Unregistered: the function returns to its caller directly.
    assert_eq!(ktest_kretprobe_saved_lr(5), 10);
    assert_ne!(SAVED_LR.load(Ordering::SeqCst), arch::ftrace::return_to_handler_addr());
}
