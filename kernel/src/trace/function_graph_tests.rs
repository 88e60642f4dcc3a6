//! In-kernel tests of the per-task return stack and the function_graph
//! tracer, and the deterministic call chain whose graph output
//! `tests/function_graph.rs` compares with a golden file (boot option
//! `ktest=function-graph`, see [`golden`]).
//!
//! The chain's functions have plain exported names: this module is
//! notrace, but a `#[no_mangle]` name is outside its path, so they get
//! patch sites like any traceable function.

use super::function_graph;
use super::rethook::{self, GraphFrame, RetFrame, RetStack, RethookOwner, RETHOOK_DEPTH};
use super::test_files::{read_all, write};
use crate::kprobes::kretprobe::{register_kretprobe, unregister_kretprobe, Kretprobe};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::hint::black_box;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use ktest_macros::kernel_test;

// ---------------------------------------------------------------------
// The chain

/// The innermost call: nothing traced inside it.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)] // a fixed name for filters
pub extern "C" fn fgraph_test_leaf(x: u64) -> u64 {
    black_box(x).wrapping_mul(0x9e37_79b9) ^ 0x55
}

/// Hidden, with what it calls, by `set_graph_notrace`.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn fgraph_test_skipped(x: u64) -> u64 {
    fgraph_test_leaf(black_box(x) + 1) + 1
}

/// Two levels below the root.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn fgraph_test_deep(x: u64) -> u64 {
    fgraph_test_leaf(black_box(x) ^ 3).rotate_left(7)
}

/// One level below the root.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn fgraph_test_mid(x: u64) -> u64 {
    let a = fgraph_test_leaf(black_box(x));
    let b = fgraph_test_skipped(a);
    a ^ b ^ fgraph_test_deep(b)
}

/// Fails with a 64-bit error code (-EINVAL), which funcgraph-retval
/// prints in decimal.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn fgraph_test_fail(x: u64) -> i64 {
    if black_box(x) == u64::MAX {
        0
    } else {
        -22
    }
}

/// Fails with a 32-bit error code (-ENOENT: x0 holds 0xfffffffe), which
/// funcgraph-retval also prints in decimal.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn fgraph_test_fail32(x: u64) -> i32 {
    if black_box(x) == u64::MAX {
        0
    } else {
        -2
    }
}

/// The chain's root, the `set_graph_function` of the golden run.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn fgraph_test_root(x: u64) -> u64 {
    let a = fgraph_test_leaf(black_box(x));
    let b = fgraph_test_mid(a);
    let e = fgraph_test_fail(b) as u64 ^ fgraph_test_fail32(b) as i64 as u64;
    fgraph_test_leaf(a.wrapping_add(b) ^ e)
}

/// The chain's value, computed without any call being traced twice.
fn chain_value(x: u64) -> u64 {
    let leaf = |x: u64| x.wrapping_mul(0x9e37_79b9) ^ 0x55;
    let a = leaf(x);
    let m = {
        let a2 = leaf(a);
        let b2 = leaf(a2 + 1) + 1;
        a2 ^ b2 ^ leaf(b2 ^ 3).rotate_left(7)
    };
    let e = if m == u64::MAX { 0 } else { -22i64 as u64 ^ -2i64 as u64 };
    leaf(a.wrapping_add(m) ^ e)
}

/// Result of the chain run by [`run_chain_in_kthread`].
static CHAIN_RESULT: AtomicU64 = AtomicU64::new(0);
static CHAIN_DONE: AtomicBool = AtomicBool::new(false);

extern "C" fn chain_thread(arg: usize) {
    // Another event in the middle of the graph prints as a comment.
    write("trace_marker", "before the chain").expect("trace_marker");
    // Interrupts masked: no interrupt handler's calls land in the middle
    // of the chain on this task.
    let flags = arch::cpu::local_irq_save();
    let r = fgraph_test_root(arg as u64);
    arch::cpu::local_irq_restore(flags);
    CHAIN_RESULT.store(r, Ordering::SeqCst);
    CHAIN_DONE.store(true, Ordering::SeqCst);
}

/// Sleeps until `done()` holds, for at most two seconds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    // Generous: the guest clock follows the host's, and a loaded host
    // (load 10-15 on 2 cores) has kept a vCPU off for seconds.
    let deadline = crate::time::ktime_get_ns() + 10_000_000_000;
    while !done() {
        assert!(crate::time::ktime_get_ns() < deadline, "timed out waiting: {what}");
        crate::sched::wait::sleep_ns(1_000_000).expect("sleep");
    }
}

/// Runs the chain in a kernel thread named `fgraph` (a known comm for
/// funcgraph-proc) and checks its value.
fn run_chain_in_kthread(x: u64) {
    CHAIN_DONE.store(false, Ordering::SeqCst);
    let t = crate::sched::Task::new_kthread(chain_thread, x as usize, "fgraph").expect("kthread");
    crate::sched::wake_up(&t);
    wait_until("the chain thread", || CHAIN_DONE.load(Ordering::SeqCst));
    assert_eq!(CHAIN_RESULT.load(Ordering::SeqCst), chain_value(x));
    wait_until("the chain thread's exit", || {
        t.state() == crate::sched::TaskState::Dead && !t.on_cpu.load(Ordering::Acquire)
    });
}

/// Puts every graph setting back to its default.
fn reset_graph() {
    write("current_tracer", "nop").expect("nop");
    write("set_ftrace_filter", "").expect("filter");
    write("set_graph_function", "").expect("set_graph_function");
    write("set_graph_notrace", "").expect("set_graph_notrace");
    write("max_graph_depth", "0").expect("max_graph_depth");
    write("tracing_thresh", "0").expect("tracing_thresh");
    function_graph::set_graph_flags(u32::MAX, false);
    function_graph::set_graph_flags(function_graph::DEFAULT_FLAGS, true);
    write("tracing_on", "1").expect("tracing_on");
}

/// Traces the chain with the settings in `setup` (tracefs writes), and
/// returns `trace`.
fn trace_chain(setup: &[(&str, &str)]) -> String {
    reset_graph();
    write("set_ftrace_filter", "fgraph_test_*").expect("filter");
    write("set_graph_function", "fgraph_test_root").expect("set_graph_function");
    write("set_graph_notrace", "fgraph_test_skipped").expect("set_graph_notrace");
    for (file, text) in setup {
        write(file, text).unwrap_or_else(|e| panic!("{file}: {e:?}"));
    }
    write("current_tracer", "function_graph").expect("function_graph");
    run_chain_in_kthread(5);
    write("tracing_on", "0").expect("tracing_on");
    let text = read_all("trace");
    reset_graph();
    text
}

/// The golden run (boot option `ktest=function-graph`): the chain traced
/// with several option sets, each `trace` printed line by line as
/// `fgraph-golden: LINE` between `fgraph-golden: == NAME` headers.
pub fn golden() {
    let runs: [(&str, &[(&str, &str)]); 7] = [
        ("default", &[]),
        (
            "proc abstime tail",
            &[
                ("options/funcgraph-proc", "1"),
                ("options/funcgraph-abstime", "1"),
                ("options/funcgraph-tail", "1"),
            ],
        ),
        (
            "no cpu, no overhead, no duration",
            &[
                ("options/funcgraph-cpu", "0"),
                ("options/funcgraph-overhead", "0"),
                ("options/funcgraph-duration", "0"),
            ],
        ),
        ("max_graph_depth 2", &[("max_graph_depth", "2")]),
        ("no context-info", &[("options/context-info", "0")]),
        ("retval", &[("options/funcgraph-retval", "1")]),
        (
            "retval hex",
            &[("options/funcgraph-retval", "1"), ("options/funcgraph-retval-hex", "1")],
        ),
    ];
    for (name, setup) in runs {
        crate::pr_info!("fgraph-golden: == {name}");
        let text = trace_chain(setup);
        write("options/context-info", "1").expect("context-info");
        for line in text.lines() {
            crate::pr_info!("fgraph-golden: {line}");
        }
    }
    crate::pr_info!("fgraph-golden: == end");
}

// ---------------------------------------------------------------------
// The return stack

fn graph_frame(ret: usize, depth: i32) -> RetFrame {
    RetFrame {
        ret,
        sp: 0x1000 - depth as usize * 16,
        func: 0,
        calltime: 0,
        owner: RethookOwner::Graph(GraphFrame {
            depth,
            ..GraphFrame::default()
        }),
    }
}

#[kernel_test]
fn ret_stack_pops_frames_in_reverse_order_and_refuses_the_one_past_its_depth() {
    let st = RetStack::new();
    for i in 0..RETHOOK_DEPTH {
        assert!(st.push(graph_frame(0x1000 + i, i as i32)).is_ok(), "push {i}");
    }
    assert_eq!(st.graph_state().0, RETHOOK_DEPTH as i32);
    let refused = st.push(graph_frame(0xdead, 0)).expect_err("the stack is full");
    assert_eq!(refused.ret, 0xdead);
    assert_eq!(st.peek(0), Some(0x1000 + RETHOOK_DEPTH - 1));
    for i in (0..RETHOOK_DEPTH).rev() {
        assert_eq!(st.pop().map(|f| f.ret), Some(0x1000 + i));
    }
    assert!(st.pop().is_none());
    assert_eq!(st.graph_state(), (0, false, false));
}

#[kernel_test]
fn ret_stack_flush_empties_it_and_resets_the_graph_state() {
    let st = RetStack::new();
    let mut notrace = graph_frame(1, 0);
    if let RethookOwner::Graph(g) = &mut notrace.owner {
        g.notrace = true;
        g.graph_start = true;
    }
    st.push(notrace).ok().expect("push");
    st.push(graph_frame(2, 1)).ok().expect("push");
    assert_eq!(st.graph_state(), (2, true, true));
    st.flush();
    assert!(st.is_empty());
    assert_eq!(st.graph_state(), (0, false, false));
}

fn no_return_handler(_: &mut RetFrame, _: &mut arch::ftrace::FtraceRetRegs) {}

/// A frame of another fgraph user (as the function profiler pushes).
fn handler_frame(sp: usize, func: usize) -> RetFrame {
    RetFrame {
        ret: 1,
        sp,
        func,
        calltime: 0,
        owner: RethookOwner::Handler(no_return_handler, 0),
    }
}

#[kernel_test]
fn ret_stack_counts_one_depth_per_call_whichever_fgraph_users_hooked_it() {
    let st = RetStack::new();
    // Only the profiler hooks the outer call: the next call is one deeper.
    st.push(handler_frame(0x1000, 0x10)).ok().expect("push");
    assert_eq!(st.graph_state().0, 1);
    // The inner call, hooked by the profiler then function_graph: one
    // depth, the one function_graph is given.
    st.push(handler_frame(0xf00, 0x20)).ok().expect("push");
    let pushed = st.push_graph(0, 0xf00, 0x20, |depth, _, _| {
        let g = GraphFrame {
            depth,
            ..GraphFrame::default()
        };
        let frame = RetFrame {
            ret: 2,
            sp: 0xf00,
            func: 0x20,
            calltime: 0,
            owner: RethookOwner::Graph(g),
        };
        Some((frame, depth))
    });
    assert_eq!(pushed, Some(Ok(1)));
    assert_eq!(st.graph_state().0, 2);
    // The inner call's depth is given back once both its frames are gone.
    assert!(st.pop().is_some());
    assert_eq!(st.graph_state().0, 2);
    assert!(st.pop().is_some());
    assert_eq!(st.graph_state().0, 1);
    assert!(st.pop().is_some());
    assert_eq!(st.graph_state(), (0, false, false));
}

// ---------------------------------------------------------------------
// The tracer

#[kernel_test]
fn function_graph_nests_the_chain_and_prints_leaves_on_one_line() {
    let text = trace_chain(&[]);
    let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let calls: Vec<&str> = body.iter().map(|l| l.rsplit_once('|').map_or(*l, |(_, f)| f)).collect();
    assert_eq!(
        calls,
        [
            "  /* before the chain */",
            "  fgraph_test_root() {",
            "    fgraph_test_leaf();",
            "    fgraph_test_mid() {",
            "      fgraph_test_leaf();",
            "      fgraph_test_deep() {",
            "        fgraph_test_leaf();",
            "      }",
            "    }",
            "    fgraph_test_fail();",
            "    fgraph_test_fail32();",
            "    fgraph_test_leaf();",
            "  }",
        ],
        "{text}"
    );
    assert!(
        text.starts_with("# tracer: function_graph\n#\n# CPU  DURATION"),
        "{text}"
    );
}

#[kernel_test]
fn function_graph_records_linux_entry_and_exit_types() {
    let fmt = read_all("events/ftrace/funcgraph_entry/format");
    assert!(fmt.contains("ID: 11\n"), "{fmt}");
    assert!(
        fmt.contains("field:int depth;\toffset:16;\tsize:4;\tsigned:1;"),
        "{fmt}"
    );
    // Linux's layout with CONFIG_FUNCTION_GRAPH_RETVAL.
    let fmt = read_all("events/ftrace/funcgraph_exit/format");
    assert!(fmt.contains("ID: 10\n"), "{fmt}");
    assert!(
        fmt.contains("field:unsigned long retval;\toffset:16;\tsize:8;\tsigned:0;"),
        "{fmt}"
    );
    assert!(
        fmt.contains("field:unsigned long long rettime;\toffset:40;\tsize:8;\tsigned:0;"),
        "{fmt}"
    );
    assert!(fmt.contains("over: %d retval: %lx\""), "{fmt}");
}

/// The FUNCTION CALLS column of `text`'s lines (after the last `|`).
fn calls_of(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| String::from(l.rsplit_once('|').map_or(l, |(_, f)| f)))
        .collect()
}

#[kernel_test]
fn funcgraph_retval_prints_error_codes_in_decimal_and_the_rest_in_hex() {
    let text = trace_chain(&[("options/funcgraph-retval", "1")]);
    let calls = calls_of(&text);
    assert!(
        calls.iter().any(|l| l == "    fgraph_test_fail(); /* = -22 */"),
        "{text}"
    );
    assert!(
        calls.iter().any(|l| l == "    fgraph_test_fail32(); /* = -2 */"),
        "{text}"
    );
    let root = alloc::format!("  }} /* fgraph_test_root = {:#x} */", chain_value(5));
    assert!(calls.contains(&root), "{text}");
    let text = trace_chain(&[("options/funcgraph-retval", "1"), ("options/funcgraph-retval-hex", "1")]);
    let calls = calls_of(&text);
    assert!(
        calls
            .iter()
            .any(|l| l == "    fgraph_test_fail(); /* = 0xffffffffffffffea */"),
        "{text}"
    );
    assert!(
        calls
            .iter()
            .any(|l| l == "    fgraph_test_fail32(); /* = 0xfffffffe */"),
        "{text}"
    );
    // The hex option alone changes nothing.
    let text = trace_chain(&[("options/funcgraph-retval-hex", "1")]);
    assert!(calls_of(&text).iter().any(|l| l == "    fgraph_test_fail();"), "{text}");
}

/// The timer interrupt's handler (an interrupt's first traced call).
const TIMER_HANDLER: &str = "kernel__time__timer_interrupt";

/// Traces the timer interrupt's handler for a few ticks with
/// `funcgraph-irqs` set to `irqs`, and reads `trace` with it set to
/// `irqs_read`.
fn trace_timer_irqs(irqs: &str, irqs_read: &str) -> String {
    reset_graph();
    write("set_ftrace_filter", TIMER_HANDLER).expect("filter");
    write("options/funcgraph-irqs", irqs).expect("funcgraph-irqs");
    write("current_tracer", "function_graph").expect("function_graph");
    crate::sched::wait::sleep_ns(50_000_000).expect("sleep");
    write("tracing_on", "0").expect("tracing_on");
    write("options/funcgraph-irqs", irqs_read).expect("funcgraph-irqs");
    let text = read_all("trace");
    reset_graph();
    text
}

#[kernel_test]
fn interrupt_handler_calls_are_framed_by_linux_irq_markers() {
    let text = trace_timer_irqs("1", "1");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let calls: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].ends_with("|  kernel__time__timer_interrupt();"))
        .collect();
    assert!(!calls.is_empty(), "{text}");
    for i in calls {
        // ` N)   ==========> |` before, ` N)   <========== |` after, on
        // the call's CPU (Linux's print_graph_irq columns).
        let cpu = &lines[i][..lines[i].find(')').expect("cpu column") + 1];
        assert_eq!(
            lines.get(i.wrapping_sub(1)).copied(),
            Some(alloc::format!("{cpu}   ==========> |").as_str()),
            "{text}"
        );
        assert_eq!(
            lines.get(i + 1).copied(),
            Some(alloc::format!("{cpu}   <========== |").as_str()),
            "{text}"
        );
    }
    // Recorded, then read with funcgraph-irqs off: hidden with their
    // markers (Linux's check_irq_entry).
    let text = trace_timer_irqs("1", "0");
    assert!(
        !text.contains("timer_interrupt") && !text.contains("=========="),
        "{text}"
    );
    // Off while recording: not recorded at all.
    let text = trace_timer_irqs("0", "1");
    assert!(
        !text.contains("timer_interrupt") && !text.contains("=========="),
        "{text}"
    );
}

/// The indentation of each `fgraph_test_leaf` line of `text`.
fn leaf_depths(text: &str) -> Vec<usize> {
    calls_of(text)
        .iter()
        .filter(|l| l.trim_start() == "fgraph_test_leaf();")
        .map(|l| (l.len() - l.trim_start().len()) / 2 - 1)
        .collect()
}

/// Runs the chain with the top level's function_graph hooking only
/// `fgraph_test_leaf` and instance `kg`'s hooking the whole chain, with
/// `max_graph_depth` `max`; returns (top's `trace`, the instance's).
fn trace_chain_two_users(max: &str) -> (String, String) {
    reset_graph();
    let instances = crate::trace::test_files::lookup("instances").expect("instances");
    instances
        .create(b"kg", vfs::NodeKind::Directory, 0o755, 0, 0)
        .expect("mkdir");
    write("instances/kg/set_ftrace_filter", "fgraph_test_*").expect("filter");
    write("instances/kg/current_tracer", "function_graph").expect("instance tracer");
    write("set_ftrace_filter", "fgraph_test_leaf").expect("filter");
    write("max_graph_depth", max).expect("max_graph_depth");
    write("current_tracer", "function_graph").expect("function_graph");
    run_chain_in_kthread(5);
    write("tracing_on", "0").expect("tracing_on");
    write("instances/kg/tracing_on", "0").expect("tracing_on");
    let top = read_all("trace");
    let inst = read_all("instances/kg/trace");
    write("instances/kg/current_tracer", "nop").expect("nop");
    instances.rmdir(b"kg").expect("rmdir");
    reset_graph();
    (top, inst)
}

#[kernel_test]
fn graph_depth_counts_the_calls_every_graph_user_hooked() {
    // As Linux's current->curr_ret_depth: one depth per hooked call,
    // whichever user hooked it, so the top level's leaves sit as deep
    // as the instance's although the top level hooks nothing else.
    let (top, inst) = trace_chain_two_users("0");
    assert_eq!(leaf_depths(&inst), [1, 2, 3, 3, 1], "{inst}");
    assert_eq!(leaf_depths(&top), leaf_depths(&inst), "{top}\n{inst}");
    // max_graph_depth (one for all users) applies to that depth.
    let (top, inst) = trace_chain_two_users("2");
    assert_eq!(leaf_depths(&inst), [1, 1], "{inst}");
    assert_eq!(leaf_depths(&top), [1, 1], "{top}");
}

/// Runs the chain with instance `kp`'s function_graph hooking only
/// `fgraph_test_leaf` while the function profiler hooks the whole chain
/// (through `set_ftrace_filter`), with `max_graph_depth` `max`; returns
/// the instance's `trace`.
fn trace_chain_under_the_profiler(max: &str) -> String {
    reset_graph();
    let instances = crate::trace::test_files::lookup("instances").expect("instances");
    instances
        .create(b"kp", vfs::NodeKind::Directory, 0o755, 0, 0)
        .expect("mkdir");
    write("instances/kp/set_ftrace_filter", "fgraph_test_leaf").expect("filter");
    write("instances/kp/current_tracer", "function_graph").expect("instance tracer");
    write("set_ftrace_filter", "fgraph_test_*").expect("filter");
    write("max_graph_depth", max).expect("max_graph_depth");
    write("function_profile_enabled", "1").expect("profiler");
    run_chain_in_kthread(5);
    write("function_profile_enabled", "0").expect("profiler");
    write("instances/kp/tracing_on", "0").expect("tracing_on");
    let inst = read_all("instances/kp/trace");
    write("instances/kp/current_tracer", "nop").expect("nop");
    instances.rmdir(b"kp").expect("rmdir");
    reset_graph();
    inst
}

#[kernel_test]
fn graph_depth_counts_the_calls_the_function_profiler_hooked() {
    // In Linux the profiler is an fgraph_ops on the same shadow stack:
    // the calls it hooks raise curr_ret_depth as function_graph's do, so
    // the leaves sit below their profiled callers.
    let inst = trace_chain_under_the_profiler("0");
    assert_eq!(leaf_depths(&inst), [1, 2, 3, 3, 1], "{inst}");
    // And max_graph_depth cuts at that depth.
    let inst = trace_chain_under_the_profiler("2");
    assert_eq!(leaf_depths(&inst), [1, 1], "{inst}");
}

#[kernel_test]
fn tracing_thresh_records_only_slow_returns() {
    // A threshold no chain call reaches: no call at all, entry or exit
    // (the marker still is there).
    let text = trace_chain(&[("tracing_thresh", "1000000")]);
    assert!(!text.contains("fgraph_test_"), "{text}");
    assert!(text.contains("/* before the chain */"), "{text}");
    // One every call passes (1 µs; each takes longer under QEMU): exits
    // only, each closing brace naming its function.
    let text = trace_chain(&[("tracing_thresh", "1")]);
    assert!(!text.contains("() {"), "{text}");
    assert!(text.contains("} /* fgraph_test_root */"), "{text}");
}

#[kernel_test]
fn set_graph_function_and_set_graph_notrace_refuse_unknown_functions() {
    assert!(write("set_graph_function", "no_such_function_xyz").is_err());
    assert!(write("set_graph_function", "!no_such_function_xyz").is_err());
    write("set_graph_notrace", "fgraph_test_l*").expect("glob");
    assert_eq!(read_all("set_graph_notrace"), "fgraph_test_leaf\n");
    write("set_graph_notrace", "").expect("clear");
    assert_eq!(read_all("set_graph_notrace"), "#### no functions disabled ####\n");
    assert_eq!(read_all("set_graph_function"), "#### all functions enabled ####\n");
}

/// Recurses `n` levels.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fgraph_recurse(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        ktest_fgraph_recurse(black_box(n - 1)) + 1
    }
}

#[kernel_test]
fn recursion_deeper_than_the_return_stack_counts_misses_and_returns() {
    const DEPTH: u64 = 3 * RETHOOK_DEPTH as u64;
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let rp = Arc::new(
        Kretprobe::symbol("ktest_fgraph_recurse")
            .maxactive(4 * RETHOOK_DEPTH)
            .handler(move |_, _| {
                h.fetch_add(1, Ordering::SeqCst);
                0
            }),
    );
    register_kretprobe(&rp).expect("register");
    let room = RETHOOK_DEPTH - crate::sched::current().ret_stack.len();
    assert_eq!(ktest_fgraph_recurse(DEPTH), DEPTH);
    unregister_kretprobe(&rp);
    assert_eq!(hits.load(Ordering::SeqCst), room);
    assert_eq!(rp.nmissed() as usize, DEPTH as usize + 1 - room);
    // The same under function_graph.
    reset_graph();
    write("set_ftrace_filter", "ktest_fgraph_recurse").expect("filter");
    let missed = function_graph::nmissed();
    write("current_tracer", "function_graph").expect("function_graph");
    assert_eq!(ktest_fgraph_recurse(DEPTH), DEPTH);
    write("current_tracer", "nop").expect("nop");
    assert!(function_graph::nmissed() - missed >= DEPTH + 1 - RETHOOK_DEPTH as u64);
    assert!(crate::sched::current().ret_stack.len() < RETHOOK_DEPTH);
    reset_graph();
}

/// Never returns: the kernel thread calling it ends inside it.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fgraph_never_returns(_: u64) -> ! {
    crate::sched::task::kthread_exit()
}

extern "C" fn dies_in_hooked_call(arg: usize) {
    ktest_fgraph_never_returns(black_box(arg as u64));
}

#[kernel_test]
fn a_task_dying_inside_hooked_calls_leaves_no_frame_and_no_instance() {
    reset_graph();
    write("set_ftrace_filter", "ktest_fgraph_never_returns").expect("filter");
    write("current_tracer", "function_graph").expect("function_graph");
    const MAXACTIVE: usize = 2;
    let rp = Arc::new(
        Kretprobe::symbol("ktest_fgraph_never_returns")
            .maxactive(MAXACTIVE)
            .handler(|_, _| 0),
    );
    register_kretprobe(&rp).expect("register");
    for i in 0..3 * MAXACTIVE {
        let t = crate::sched::Task::new_kthread(dies_in_hooked_call, i, "fgraph/dies").expect("kthread");
        crate::sched::wake_up(&t);
        wait_until("the dying task", || {
            t.state() == crate::sched::TaskState::Dead && !t.on_cpu.load(Ordering::Acquire)
        });
        wait_until("the pool refilled", || rp.nfree() == MAXACTIVE);
        assert!(t.ret_stack.is_empty(), "frames left in a dead task");
    }
    assert_eq!(rp.nmissed(), 0);
    unregister_kretprobe(&rp);
    reset_graph();
}

static BACKTRACE: crate::sync::IrqSpinLock<Option<String>> = crate::sync::IrqSpinLock::new(None);

/// Records its backtrace while its callers' returns are hooked.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fgraph_backtrace(x: u64) -> u64 {
    let mut out = String::new();
    crate::stacktrace::dump_backtrace(&mut out, 0, arch::cpu::frame_pointer());
    BACKTRACE.lock().replace(out);
    black_box(x) + 1
}

/// Calls [`ktest_fgraph_backtrace`] (both hooked).
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fgraph_backtrace_caller(x: u64) -> u64 {
    ktest_fgraph_backtrace(black_box(x)) + 1
}

#[inline(never)]
fn backtrace_outer() -> u64 {
    black_box(ktest_fgraph_backtrace_caller(black_box(1))) + 1
}

#[kernel_test]
fn backtraces_through_graph_and_kretprobe_hooked_frames_show_the_real_callers() {
    reset_graph();
    write("set_ftrace_filter", "ktest_fgraph_backtrace*").expect("filter");
    write("current_tracer", "function_graph").expect("function_graph");
    // A kretprobe on the caller too: two users on one call.
    let rp = Arc::new(Kretprobe::symbol("ktest_fgraph_backtrace_caller").handler(|_, _| 0));
    register_kretprobe(&rp).expect("register");
    assert_eq!(backtrace_outer(), 4);
    unregister_kretprobe(&rp);
    reset_graph();
    let bt = BACKTRACE.lock().take().expect("a backtrace");
    let at = |name: &str| bt.find(name).unwrap_or_else(|| panic!("{name} not in:\n{bt}"));
    assert!(
        at("ktest_fgraph_backtrace_caller+0x") < at("backtrace_outer+0x"),
        "{bt}"
    );
    assert!(!bt.contains("return_to_handler"), "{bt}");
    assert!(!bt.contains("kretprobe_trampoline"), "{bt}");
}

/// A pair of words and a struct returned through x8: what
/// `return_to_handler` must carry back untouched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(C)]
pub struct Big([u64; 6]);

#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fgraph_returns_pair(x: u64) -> u128 {
    (u128::from(black_box(x)) << 64) | u128::from(x ^ 0xffff)
}

#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fgraph_returns_big(x: u64) -> Big {
    Big(core::array::from_fn(|i| black_box(x) + i as u64))
}

#[kernel_test]
fn hooked_functions_return_their_values_in_x0_x1_and_through_x8() {
    reset_graph();
    write("set_ftrace_filter", "ktest_fgraph_returns_*").expect("filter");
    write("current_tracer", "function_graph").expect("function_graph");
    let before = crate::sched::current().ret_stack.len();
    assert_eq!(ktest_fgraph_returns_pair(7), (7u128 << 64) | (7 ^ 0xffff));
    assert_eq!(ktest_fgraph_returns_big(3), Big([3, 4, 5, 6, 7, 8]));
    assert_eq!(crate::sched::current().ret_stack.len(), before);
    write("tracing_on", "0").expect("off");
    let text = read_all("trace");
    reset_graph();
    assert!(text.contains("ktest_fgraph_returns_pair();"), "{text}");
    assert!(text.contains("ktest_fgraph_returns_big();"), "{text}");
}

static SLEEPER_IN: AtomicBool = AtomicBool::new(false);
static SLEEPER_GO: AtomicBool = AtomicBool::new(false);
static SLEEPER_OUT: AtomicU64 = AtomicU64::new(0);

/// Sleeps until released: a hooked call in flight on another CPU.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)]
pub extern "C" fn ktest_fgraph_sleeper(x: u64) -> u64 {
    SLEEPER_IN.store(true, Ordering::SeqCst);
    while !SLEEPER_GO.load(Ordering::SeqCst) {
        let _ = crate::sched::wait::sleep_ns(200_000);
    }
    black_box(x) * 3
}

extern "C" fn sleeper_thread(arg: usize) {
    SLEEPER_OUT.store(ktest_fgraph_sleeper(arg as u64) + 1, Ordering::SeqCst);
}

#[kernel_test]
fn switching_tracers_while_a_task_is_inside_a_hooked_call_keeps_its_return() {
    reset_graph();
    write("set_ftrace_filter", "ktest_fgraph_sleeper").expect("filter");
    write("current_tracer", "function_graph").expect("function_graph");
    for round in 0..3u64 {
        SLEEPER_IN.store(false, Ordering::SeqCst);
        SLEEPER_GO.store(false, Ordering::SeqCst);
        SLEEPER_OUT.store(0, Ordering::SeqCst);
        let t = crate::sched::Task::new_kthread(sleeper_thread, 10 + round as usize, "fgraph/sleep").expect("kthread");
        crate::sched::wake_up(&t);
        wait_until("the sleeper inside", || SLEEPER_IN.load(Ordering::SeqCst));
        assert_eq!(t.ret_stack.len(), 1, "the sleeper's call is hooked");
        // Off (and, the second time, on again) while it is inside.
        write("current_tracer", "nop").expect("nop");
        if round == 1 {
            write("current_tracer", "function_graph").expect("function_graph");
        }
        SLEEPER_GO.store(true, Ordering::SeqCst);
        wait_until("the sleeper's return", || SLEEPER_OUT.load(Ordering::SeqCst) != 0);
        assert_eq!(SLEEPER_OUT.load(Ordering::SeqCst), (10 + round) * 3 + 1);
        wait_until("the sleeper's exit", || t.state() == crate::sched::TaskState::Dead);
        assert!(t.ret_stack.is_empty());
        write("current_tracer", "function_graph").expect("function_graph");
    }
    reset_graph();
}

#[kernel_test]
fn find_ret_addr_leaves_ordinary_addresses_alone() {
    let mut idx = 0;
    let a = fgraph_test_leaf as *const () as usize + 4;
    assert_eq!(rethook::find_ret_addr(&mut idx, a), a);
    assert_eq!(idx, 0);
}

#[kernel_test]
fn trace_pipe_prints_the_same_graph_and_consumes_it() {
    reset_graph();
    write("set_ftrace_filter", "fgraph_test_*").expect("filter");
    write("set_graph_function", "fgraph_test_root").expect("set_graph_function");
    write("set_graph_notrace", "fgraph_test_skipped").expect("set_graph_notrace");
    write("current_tracer", "function_graph").expect("function_graph");
    run_chain_in_kthread(9);
    write("tracing_on", "0").expect("tracing_on");
    let f = super::test_files::open("trace_pipe", uapi::fcntl::O_RDONLY | uapi::fcntl::O_NONBLOCK).expect("open");
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    while let Ok(n) = f.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(out).expect("text");
    let after = read_all("trace");
    reset_graph();
    let calls: Vec<&str> = text.lines().map(|l| l.rsplit_once('|').map_or(l, |(_, f)| f)).collect();
    assert_eq!(
        calls.iter().filter(|c| c.ends_with("fgraph_test_leaf();")).count(),
        4,
        "{text}"
    );
    assert_eq!(calls.iter().filter(|c| c.trim() == "}").count(), 3, "{text}");
    assert!(calls.contains(&"      fgraph_test_deep() {"), "{text}");
    assert!(!after.contains("fgraph_test_"), "trace_pipe left entries:\n{after}");
}
