//! The in-kernel test harness (test builds only): runs every
//! `#[kernel_test]` at the end of boot, prints one line per test on the
//! serial console, and ends QEMU through semihosting with the verdict as
//! its exit status (0 = all passed).
#![allow(unsafe_code)] // Reads the `.kernel_tests` link section the tests register in.

use crate::sync::IrqSpinLock;
use alloc::string::String;
use core::sync::atomic::{AtomicUsize, Ordering};

/// One registered test.
#[repr(C)]
pub struct KernelTest {
    /// `module::path::function`.
    pub name: &'static str,
    /// The test; it fails by panicking.
    pub func: fn(),
}

// SAFETY: the link script gathers every `.kernel_tests` entry, each a
// `KernelTest` emitted by #[kernel_test], between the two symbols.
arch::linker_table!(fn tests() -> [KernelTest] = __start_kernel_tests..__stop_kernel_tests);

/// Index of the running test, plus one (0: none running).
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static PASSED: AtomicUsize = AtomicUsize::new(0);

/// Runs all tests, then exits QEMU. A failing test panics, which ends the
/// run through `exit_on_panic`.
pub fn run_all() -> ! {
    // `ktest=WHAT` runs one deliberate failure or a benchmark instead.
    let what = crate::init::boot_command_line()
        .split_whitespace()
        .find_map(|a| a.strip_prefix("ktest="));
    match what {
        Some("oops") => {
            crate::pr_info!("ktest: deliberate NULL pointer dereference");
            let v = ktest_fatal_oops_victim(core::hint::black_box(0));
            crate::pr_err!("ktest: the NULL dereference did not fault (read {v:#x})");
            arch::semihosting::exit(2);
        }
        Some("tcg-cost") => {
            crate::kprobes::tcg_cost::run();
            arch::semihosting::exit(0);
        }
        Some("kprobe-oops") => kprobe_handler_oops(),
        Some("stack-overflow") => stack_overflow(),
        Some("kprobe-bench") => {
            crate::kprobes::bench::run();
            arch::semihosting::exit(0);
        }
        Some("function-graph") => {
            crate::trace::function_graph_tests::golden();
            arch::semihosting::exit(0);
        }
        Some("latency") => {
            crate::trace::latency_tests::golden();
            arch::semihosting::exit(0);
        }
        Some("bug") => {
            crate::pr_info!("ktest: deliberate BUG()");
            crate::bug!();
        }
        Some("brk") => {
            crate::pr_info!("ktest: deliberate unclaimed BRK");
            unclaimed_brk();
            arch::semihosting::exit(2);
        }
        Some(other) => {
            crate::pr_err!("ktest: unknown ktest={other}");
            arch::semihosting::exit(2);
        }
        None => {}
    }
    let all = tests();
    // `ktest.only=WORD` runs only the tests whose name contains WORD.
    let only = crate::init::boot_command_line()
        .split_whitespace()
        .find_map(|a| a.strip_prefix("ktest.only="));
    crate::pr_info!("ktest: running {} tests", all.len());
    for (i, t) in all.iter().enumerate() {
        if only.is_some_and(|w| !t.name.contains(w)) {
            PASSED.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        RUNNING.store(i + 1, Ordering::SeqCst);
        let start = crate::time::ktime_get_ns();
        (t.func)();
        let us = (crate::time::ktime_get_ns() - start) / 1000;
        crate::pr_info!("ktest: {} ... ok ({} us)", t.name, us);
        PASSED.fetch_add(1, Ordering::SeqCst);
    }
    RUNNING.store(0, Ordering::SeqCst);
    crate::pr_info!("ktest: {} passed, 0 failed", all.len());
    arch::semihosting::exit(0)
}

/// Called on panic in a test build: names the failing test and exits with
/// a failure status.
pub fn exit_on_panic() -> ! {
    let running = RUNNING.load(Ordering::SeqCst);
    let total = tests().len();
    let passed = PASSED.load(Ordering::SeqCst);
    if running > 0 {
        crate::pr_err!("ktest: {} ... FAILED", tests()[running - 1].name);
        crate::pr_err!("ktest: {} passed, {} failed", passed, total - passed);
    } else {
        crate::pr_err!("ktest: panic outside any test");
    }
    arch::semihosting::exit(1)
}

/// Armed by `capture_oops`: the text an oops would have printed.
static CAPTURE: IrqSpinLock<Option<String>> = IrqSpinLock::new(None);

/// Runs `f`, and returns the oops report that a fault recovered through
/// the exception table during `f` would have printed, had it been fatal.
pub fn capture_oops(f: impl FnOnce()) -> String {
    *CAPTURE.lock() = Some(String::new());
    f();
    CAPTURE.lock().take().unwrap_or_default()
}

/// From the fault handler: a fault with a fixup happened.
pub fn fixup_hook(far: u64, esr: u64, regs: &arch::ptrace::PtRegs) {
    let mut cap = CAPTURE.lock();
    if let Some(buf) = cap.as_mut() {
        crate::fault::write_mem_abort_info(buf, far, esr);
        crate::oops::write_oops(buf, "Oops", regs, esr);
    }
}

/// From `die`: a fatal oops during a test is a failure of that test.
pub fn oops_hook(msg: &str, _regs: &arch::ptrace::PtRegs) {
    if RUNNING.load(Ordering::SeqCst) > 0 {
        crate::pr_err!("ktest: fatal oops during test: {msg}");
    }
}

/// Reads through a NULL struct pointer, as a buggy driver would: the
/// kernel must oops, naming this function, and stop.
#[inline(never)]
fn ktest_fatal_oops_victim(base: usize) -> u64 {
    let field = (base + 8) as *const u64;
    // SAFETY: deliberately unsound: this read must fault (TTBR0 holds an
    // empty table), which is what the test checks.
    unsafe { field.read_volatile() }
}

/// `ktest=stack-overflow`: a kernel thread recurses past the end of its
/// stack. The guard page below it must fault and the vectors must report
/// the overflow from the overflow stack and panic.
fn stack_overflow() -> ! {
    crate::pr_info!("ktest: a kernel thread will overflow its stack");
    let t = crate::sched::Task::new_kthread(ktest_stack_overflow_thread, 0, "ktest-overflow").expect("a kthread");
    crate::sched::wake_up(&t);
    let deadline = crate::time::ktime_get_ns() + 5_000_000_000;
    while crate::time::ktime_get_ns() < deadline {
        crate::sched::yield_now();
    }
    crate::pr_err!("ktest: the stack overflow was not caught");
    arch::semihosting::exit(2)
}

extern "C" fn ktest_stack_overflow_thread(_: usize) {
    let v = ktest_stack_overflow_recurse(core::hint::black_box(1));
    crate::pr_err!("ktest: the recursion ended ({v})");
}

/// Uses 1 KiB of stack per call, without end.
#[inline(never)]
#[no_mangle]
pub extern "C" fn ktest_stack_overflow_recurse(n: u64) -> u64 {
    let mut buf = [n; 128];
    core::hint::black_box(&mut buf);
    if core::hint::black_box(n) == 0 {
        return 0;
    }
    ktest_stack_overflow_recurse(n + 1).wrapping_add(buf[n as usize % 128])
}

/// `ktest=kprobe-oops`: a probe whose pre-handler reads through a NULL
/// pointer. The fault inside the handler must oops, naming the handler,
/// and stop.
fn kprobe_handler_oops() -> ! {
    use crate::kprobes::{register_kprobe, Kprobe};
    let kp = alloc::sync::Arc::new(
        // At +8, past the ftrace site, so that the probe is a BRK and the
        // oops shows the debug exception's frames.
        Kprobe::symbol("ktest_kprobe_oops_target", 8).pre(|_, regs| ktest_kprobe_oops_handler(regs)),
    );
    register_kprobe(&kp).expect("register the probe");
    crate::pr_info!("ktest: a kprobe pre-handler will dereference NULL");
    let v = ktest_kprobe_oops_target(core::hint::black_box(1));
    crate::pr_err!("ktest: the probe handler did not fault ({v})");
    arch::semihosting::exit(2)
}

/// The probed function of `ktest=kprobe-oops` (a plain exported name:
/// `kernel::kprobes::*` paths are blacklisted).
#[inline(never)]
#[no_mangle]
pub extern "C" fn ktest_kprobe_oops_target(a: u64) -> u64 {
    core::hint::black_box(a + 1)
}

/// The buggy pre-handler: a named function, so that the oops names it.
#[inline(never)]
fn ktest_kprobe_oops_handler(regs: &mut arch::ptrace::PtRegs) -> i32 {
    let field = (core::hint::black_box(0usize) + 16) as *const u64;
    // SAFETY: deliberately unsound: this read must fault (TTBR0 holds an
    // empty table), which is what the test checks.
    let v = unsafe { field.read_volatile() };
    (v ^ regs.regs[0]) as i32
}

/// A BRK with an immediate no hook claims.
#[inline(never)]
fn unclaimed_brk() {
    // SAFETY: traps to the debug-fault table, which oopses: the test.
    unsafe { core::arch::asm!("brk #0x3c1", options(nostack)) };
}
