//! In-kernel tests of the function profiler (`function_profile_enabled`,
//! `trace_stat/functionN`, `options/graph-time`) and of function_graph's
//! pid filtering and `funcgraph-irqs`.
//!
//! The profiled functions have plain exported names: this module is
//! notrace, but a `#[no_mangle]` name is outside its path, so they get
//! patch sites like any traceable function.

use super::ftrace_profile::{self, FunctionStat};
use super::function_graph;
use super::test_files::{read_all, write};
use alloc::string::String;
use core::hint::black_box;
use core::sync::atomic::{AtomicBool, Ordering};
use ktest_macros::kernel_test;

/// A leaf the tests count calls of.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)] // a fixed name for filters
pub extern "C" fn ktest_fprof_leaf(x: u64) -> u64 {
    black_box(x).wrapping_mul(3) ^ 1
}

/// Spins for about `ns` nanoseconds (a callee with a known cost).
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fprof_slow(ns: u64) -> u64 {
    let start = crate::time::ktime_get_ns();
    let mut n = 0u64;
    while crate::time::ktime_get_ns() - start < ns {
        n = black_box(n + 1);
    }
    n
}

/// Calls the slow callee once and does little itself.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fprof_parent(ns: u64) -> u64 {
    ktest_fprof_slow(black_box(ns)) + 1
}

/// Calls the parent: a caller of a call of a slow function.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fprof_grandparent(ns: u64) -> u64 {
    ktest_fprof_parent(black_box(ns)) + 1
}

/// Sleeps for `ns` nanoseconds (a call whose task is switched out).
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fprof_sleeper(ns: u64) -> u64 {
    crate::sched::wait::sleep_ns(black_box(ns)).expect("sleep");
    ns
}

/// Puts the profiler and the filters back to their defaults.
fn reset() {
    write("function_profile_enabled", "0").expect("disable");
    write("set_ftrace_filter", "").expect("filter");
    write("current_tracer", "nop").expect("nop");
    function_graph::set_graph_flags(u32::MAX, false);
    function_graph::set_graph_flags(function_graph::DEFAULT_FLAGS, true);
}

/// Runs `f` with interrupts masked (so on one CPU) and gives that CPU.
fn on_one_cpu(f: impl FnOnce()) -> usize {
    let flags = arch::cpu::local_irq_save();
    let cpu = arch::cpu::cpu_id();
    f();
    arch::cpu::local_irq_restore(flags);
    cpu
}

/// The line of `func` in `trace_stat/function<cpu>`, split in columns.
fn stat_line(cpu: usize, func: &str) -> Option<String> {
    let text = read_all(&alloc::format!("trace_stat/function{cpu}"));
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(func))
        .map(String::from)
}

fn stat_of(cpu: usize, func: usize) -> Option<FunctionStat> {
    ftrace_profile::function_stats(cpu).into_iter().find(|s| s.func == func)
}

#[kernel_test]
fn profiler_counts_a_function_called_n_times_as_n_hits() {
    reset();
    write("set_ftrace_filter", "ktest_fprof_*").expect("filter");
    write("function_profile_enabled", "1").expect("enable");
    assert_eq!(read_all("function_profile_enabled"), "1\n");
    const N: u64 = 37;
    let cpu = on_one_cpu(|| {
        for i in 0..N {
            ktest_fprof_leaf(i);
        }
    });
    write("function_profile_enabled", "0").expect("disable");
    let line = stat_line(cpu, "ktest_fprof_leaf").expect("a line for the leaf");
    let cols: alloc::vec::Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols.get(1).copied(), Some("37"), "{line}");
    // Time, average and s^2 columns, each in µs.
    assert_eq!(cols.len(), 8, "{line}");
    assert_eq!(cols[3], "us", "{line}");
    let leaf = ktest_fprof_leaf as *const () as usize;
    assert_eq!(stat_of(cpu, leaf).map(|s| s.counter), Some(N));
    reset();
}

#[kernel_test]
fn profiler_records_survive_disabling_and_are_cleared_by_enabling() {
    reset();
    write("set_ftrace_filter", "ktest_fprof_leaf").expect("filter");
    write("function_profile_enabled", "1").expect("enable");
    let cpu = on_one_cpu(|| {
        ktest_fprof_leaf(1);
        ktest_fprof_leaf(2);
    });
    write("function_profile_enabled", "0").expect("disable");
    let leaf = ktest_fprof_leaf as *const () as usize;
    assert_eq!(stat_of(cpu, leaf).map(|s| s.counter), Some(2));
    // Off: calls are not counted, the figures stay.
    on_one_cpu(|| {
        ktest_fprof_leaf(3);
    });
    assert_eq!(stat_of(cpu, leaf).map(|s| s.counter), Some(2));
    write("function_profile_enabled", "1").expect("enable");
    assert_eq!(stat_of(cpu, leaf), None);
    reset();
}

#[kernel_test]
fn profiler_follows_set_ftrace_filter() {
    reset();
    write("set_ftrace_filter", "ktest_fprof_leaf").expect("filter");
    write("function_profile_enabled", "1").expect("enable");
    let cpu = on_one_cpu(|| {
        ktest_fprof_parent(0);
        ktest_fprof_leaf(0);
    });
    assert!(stat_of(cpu, ktest_fprof_parent as *const () as usize).is_none());
    assert_eq!(
        stat_of(cpu, ktest_fprof_leaf as *const () as usize).map(|s| s.counter),
        Some(1)
    );
    // A new filter applies to the running profiler.
    write("set_ftrace_filter", "ktest_fprof_parent").expect("filter");
    let cpu = on_one_cpu(|| {
        ktest_fprof_parent(0);
    });
    assert_eq!(
        stat_of(cpu, ktest_fprof_parent as *const () as usize).map(|s| s.counter),
        Some(1)
    );
    reset();
}

#[kernel_test]
fn graph_time_off_leaves_the_callees_time_out_of_the_callers() {
    const SLOW: u64 = 2_000_000;
    let run = |graph_time: &str| -> (u64, u64) {
        reset();
        write("options/graph-time", graph_time).expect("graph-time");
        write("set_ftrace_filter", "ktest_fprof_parent ktest_fprof_slow").expect("filter");
        write("function_profile_enabled", "1").expect("enable");
        let cpu = on_one_cpu(|| {
            ktest_fprof_parent(SLOW);
        });
        write("function_profile_enabled", "0").expect("disable");
        let t = |f: usize| stat_of(cpu, f).map(|s| s.time).expect("profiled");
        (
            t(ktest_fprof_parent as *const () as usize),
            t(ktest_fprof_slow as *const () as usize),
        )
    };
    let (parent, slow) = run("1");
    assert!(
        slow >= SLOW && parent >= slow,
        "graph-time: parent {parent} slow {slow}"
    );
    // The parent's own time is short, but a host stall of the vCPU inside
    // it counts: the verdict is the best of a few runs (a profiler that
    // kept the callee's time in the parent's would fail every one).
    let (parent, slow) = (0..3)
        .map(|_| run("0"))
        .min_by_key(|&(parent, _)| parent)
        .unwrap_or((u64::MAX, 0));
    assert!(
        slow >= SLOW && parent < SLOW / 2,
        "no graph-time: parent {parent} slow {slow}"
    );
    reset();
}

#[kernel_test]
fn graph_time_off_leaves_a_callees_time_to_the_previous_hooked_call_only() {
    // grandparent -> parent -> slow, the profiler hooking the first and the
    // last: slow's time is left out of grandparent's. With an instance's
    // function_graph also hooking parent, the previous hooked call of slow
    // is parent's, which takes the time as Linux's shared ret_stack entry
    // does (`ftrace_graph_get_ret_stack(current, 1)`), and no profiled
    // frame reads it: grandparent keeps it.
    const SLOW: u64 = 2_000_000;
    let run = |graph_parent: bool| -> (u64, u64) {
        reset();
        let instances = crate::trace::test_files::lookup("instances").expect("instances");
        if graph_parent {
            instances
                .create(b"kq", vfs::NodeKind::Directory, 0o755, 0, 0)
                .expect("mkdir");
            write("instances/kq/set_ftrace_filter", "ktest_fprof_parent").expect("filter");
            write("instances/kq/current_tracer", "function_graph").expect("instance tracer");
        }
        write("options/graph-time", "0").expect("graph-time");
        write("set_ftrace_filter", "ktest_fprof_grandparent ktest_fprof_slow").expect("filter");
        write("function_profile_enabled", "1").expect("enable");
        let cpu = on_one_cpu(|| {
            ktest_fprof_grandparent(SLOW);
        });
        write("function_profile_enabled", "0").expect("disable");
        if graph_parent {
            write("instances/kq/current_tracer", "nop").expect("nop");
            instances.rmdir(b"kq").expect("rmdir");
        }
        let t = |f: usize| stat_of(cpu, f).map(|s| s.time).expect("profiled");
        (
            t(ktest_fprof_grandparent as *const () as usize),
            t(ktest_fprof_slow as *const () as usize),
        )
    };
    // A host stall inside the grandparent counts: best of a few runs.
    let (grand, slow) = (0..3)
        .map(|_| run(false))
        .min_by_key(|&(grand, _)| grand)
        .unwrap_or((u64::MAX, 0));
    assert!(slow >= SLOW && grand < SLOW / 2, "grandparent {grand} slow {slow}");
    let (grand, slow) = run(true);
    assert!(
        slow >= SLOW && grand >= slow,
        "parent hooked: grandparent {grand} slow {slow}"
    );
    reset();
}

#[kernel_test]
fn function_stat_lines_have_linux_columns_and_sort_by_time() {
    assert_eq!(
        read_all("trace_stat/function0")
            .lines()
            .take(2)
            .collect::<alloc::vec::Vec<_>>(),
        [
            "  Function                               Hit    Time            Avg             s^2",
            "  --------                               ---    ----            ---             ---",
        ]
    );
    // Four calls of 1, 2, 3 and 4 µs: 10 µs, 2.5 µs on average, a sample
    // variance of 1.666 µs^2.
    let rec = FunctionStat {
        func: ktest_fprof_leaf as *const () as usize,
        counter: 4,
        time: 10_000,
        time_squared: 30_000_000,
    };
    let mut s = String::new();
    ftrace_profile::function_stat_show(&mut s, &rec, 0).expect("shown");
    assert_eq!(
        s,
        "  ktest_fprof_leaf                         4    10.000 us       2.500 us        1.666 us    \n"
    );
    // Under tracing_thresh (ns) by its average: not shown.
    assert!(ftrace_profile::function_stat_show(&mut s, &rec, 2_501).is_none());
    // One call: no variance.
    s.clear();
    let one = FunctionStat {
        counter: 1,
        time: 1_234_567_890,
        time_squared: 0,
        ..rec
    };
    ftrace_profile::function_stat_show(&mut s, &one, 0).expect("shown");
    assert_eq!(
        s,
        "  ktest_fprof_leaf                         1    1234567 us      1234567 us      0.000 us    \n"
    );
}

#[kernel_test]
fn function_graph_follows_set_ftrace_pid() {
    reset();
    write("set_ftrace_filter", "ktest_fprof_leaf").expect("filter");
    let me = crate::sched::current().tid();
    // Another task's pid: the test's own calls are not traced.
    write("set_ftrace_pid", &alloc::format!("{}", me + 1_000_000)).expect("pid");
    write("current_tracer", "function_graph").expect("function_graph");
    ktest_fprof_leaf(1);
    write("current_tracer", "nop").expect("nop");
    write("tracing_on", "1").expect("tracing_on");
    let text = read_all("trace");
    assert!(!text.contains("ktest_fprof_leaf"), "{text}");
    // Its own pid: traced.
    write("set_ftrace_pid", &alloc::format!("{me}")).expect("pid");
    write("current_tracer", "function_graph").expect("function_graph");
    ktest_fprof_leaf(1);
    write("tracing_on", "0").expect("tracing_on");
    let text = read_all("trace");
    write("current_tracer", "nop").expect("nop");
    assert!(text.contains("ktest_fprof_leaf();"), "{text}");
    // In set_ftrace_notrace_pid: not traced.
    write("set_ftrace_pid", "").expect("pid");
    write("set_ftrace_notrace_pid", &alloc::format!("{me}")).expect("notrace pid");
    write("tracing_on", "1").expect("tracing_on");
    write("current_tracer", "function_graph").expect("function_graph");
    ktest_fprof_leaf(1);
    write("tracing_on", "0").expect("tracing_on");
    let text = read_all("trace");
    write("current_tracer", "nop").expect("nop");
    write("set_ftrace_notrace_pid", "").expect("notrace pid");
    write("tracing_on", "1").expect("tracing_on");
    assert!(!text.contains("ktest_fprof_leaf"), "{text}");
    reset();
}

#[kernel_test]
fn funcgraph_irqs_off_hides_the_timer_interrupt() {
    let trace_ticks = |irqs: &str| -> String {
        reset();
        write("options/funcgraph-irqs", irqs).expect("funcgraph-irqs");
        write("set_ftrace_filter", "sched_tick").expect("filter");
        write("current_tracer", "function_graph").expect("function_graph");
        crate::sched::wait::sleep_ns(50_000_000).expect("sleep");
        write("tracing_on", "0").expect("tracing_on");
        let text = read_all("trace");
        write("tracing_on", "1").expect("tracing_on");
        text
    };
    assert!(trace_ticks("1").contains("sched_tick();"));
    let text = trace_ticks("0");
    assert!(!text.contains("sched_tick"), "{text}");
    reset();
}

static SLEEPER_DONE: AtomicBool = AtomicBool::new(false);

extern "C" fn sleeper_thread(ns: usize) {
    ktest_fprof_sleeper(ns as u64);
    SLEEPER_DONE.store(true, Ordering::SeqCst);
}

/// The sleeper's total time over all CPUs, from a run where the CPU that
/// counted the call also timed its return (a task may wake elsewhere).
fn sleeper_time(sleep_time: &str) -> u64 {
    const SLEEP: u64 = 20_000_000;
    for _ in 0..5 {
        reset();
        write("options/sleep-time", sleep_time).expect("sleep-time");
        write("set_ftrace_filter", "ktest_fprof_sleeper").expect("filter");
        write("function_profile_enabled", "1").expect("enable");
        // In a kernel thread: the tests' own task may be a CPU's idle
        // task, which is never switched out.
        SLEEPER_DONE.store(false, Ordering::SeqCst);
        let t = crate::sched::Task::new_kthread(sleeper_thread, SLEEP as usize, "fprof/sleep").expect("kthread");
        // On one CPU: the CPU that counts the call must time its return.
        let cpu = crate::smp::online_cpus().last().unwrap_or(0);
        t.cpus_allowed.store(1 << cpu, Ordering::SeqCst);
        crate::sched::wake_up(&t);
        let deadline = crate::time::ktime_get_ns() + 2_000_000_000;
        while !SLEEPER_DONE.load(Ordering::SeqCst) {
            assert!(crate::time::ktime_get_ns() < deadline, "the sleeper did not finish");
            crate::sched::wait::sleep_ns(1_000_000).expect("sleep");
        }
        write("function_profile_enabled", "0").expect("disable");
        let f = ktest_fprof_sleeper as *const () as usize;
        let time: u64 = crate::smp::online_cpus()
            .filter_map(|c| stat_of(c, f))
            .map(|s| s.time)
            .sum();
        if time != 0 {
            reset();
            return time;
        }
    }
    panic!("the sleeper's return was never timed");
}

#[kernel_test]
fn sleep_time_off_leaves_the_time_switched_out_out_of_a_call() {
    let with = sleeper_time("1");
    assert!(with >= 20_000_000, "sleep-time: {with} ns");
    // A vCPU the host stalls while the sleeper runs counts that time as
    // running: the verdict is the best of a few runs (a profiler that
    // kept the sleep would fail every one).
    let without = (0..3).map(|_| sleeper_time("0")).min().unwrap_or(u64::MAX);
    assert!(without < 10_000_000, "no sleep-time: {without} ns");
}
