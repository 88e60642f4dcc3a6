//! `ftracebench [--calls N]`: what the function tracers, fprobes,
//! tracepoints and hist triggers cost, timed with the virtual counter
//! (`CNTVCT_EL0`, read at EL0). Each figure is the median of 5
//! repetitions, in ns per operation:
//!
//! ```text
//! ftracebench: getpid 1234 ns
//! ftracebench: getpid_function_filtered 1234 ns
//! ftracebench: getpid_fprobe n/a (ENOENT)
//! ```
//!
//! `getpid_*` figures are one `getpid` with one thing enabled: the
//! `function` tracer filtered to `__arm64_sys_getpid` and on every
//! function, `function_graph` filtered to it, an `f:` and an
//! `f:...%return` event, a `p:` event at its entry, the `raw_syscalls`
//! events, and a `hist:keys=common_pid` trigger on `raw_syscalls/sys_enter`.
//! `pingpong` is one round trip of a byte between two processes through
//! two pipes, with nothing enabled and with `sched/sched_switch` enabled.
//!
//! A figure whose set-up is refused prints `n/a` with the error and the
//! others go on; tracing is put back as found (nop tracer, no filters, no
//! dynamic events, tracing on) after each.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use kprobetests::parse::decimal;
use kprobetests::sys::{cntfrq, cntvct, getpid, ticks_to_ns};
use kprobetests::tracefs::Tracefs;
use rt::println;

rt::main!(main);

const REPS: usize = 5;

/// One write of a figure's set-up: `(file, text, append)`.
type Step = (&'static str, &'static str, bool);

/// A figure: its name, set-up, what undoes it, and what it times.
struct Figure {
    name: &'static str,
    setup: &'static [Step],
    teardown: &'static [Step],
    work: Work,
}

#[derive(Clone, Copy)]
enum Work {
    Getpid,
    PingPong,
}

const FIGURES: &[Figure] = &[
    Figure {
        name: "getpid",
        setup: &[],
        teardown: &[],
        work: Work::Getpid,
    },
    Figure {
        name: "getpid_function_filtered",
        setup: &[
            ("set_ftrace_filter", "__arm64_sys_getpid", false),
            ("current_tracer", "function", false),
        ],
        teardown: &[("current_tracer", "nop", false), ("set_ftrace_filter", "", false)],
        work: Work::Getpid,
    },
    Figure {
        name: "getpid_function_all",
        setup: &[("current_tracer", "function", false)],
        teardown: &[("current_tracer", "nop", false)],
        work: Work::Getpid,
    },
    Figure {
        name: "getpid_function_graph_filtered",
        setup: &[
            ("set_ftrace_filter", "__arm64_sys_getpid", false),
            ("current_tracer", "function_graph", false),
        ],
        teardown: &[("current_tracer", "nop", false), ("set_ftrace_filter", "", false)],
        work: Work::Getpid,
    },
    Figure {
        name: "getpid_fprobe",
        setup: &[
            ("dynamic_events", "f:fbench __arm64_sys_getpid", true),
            ("events/fprobes/fbench/enable", "1", false),
        ],
        teardown: &[
            ("events/fprobes/fbench/enable", "0", false),
            ("dynamic_events", "", false),
        ],
        work: Work::Getpid,
    },
    Figure {
        name: "getpid_fprobe_return",
        setup: &[
            ("dynamic_events", "f:fbench __arm64_sys_getpid%return", true),
            ("events/fprobes/fbench/enable", "1", false),
        ],
        teardown: &[
            ("events/fprobes/fbench/enable", "0", false),
            ("dynamic_events", "", false),
        ],
        work: Work::Getpid,
    },
    Figure {
        name: "getpid_kprobe_entry",
        setup: &[
            ("kprobe_events", "p:fbench __arm64_sys_getpid", true),
            ("events/kprobes/fbench/enable", "1", false),
        ],
        teardown: &[
            ("events/kprobes/fbench/enable", "0", false),
            ("kprobe_events", "", false),
        ],
        work: Work::Getpid,
    },
    Figure {
        name: "getpid_raw_syscalls",
        setup: &[("events/raw_syscalls/enable", "1", false)],
        teardown: &[("events/raw_syscalls/enable", "0", false)],
        work: Work::Getpid,
    },
    Figure {
        name: "getpid_hist_sys_enter",
        setup: &[("events/raw_syscalls/sys_enter/trigger", "hist:keys=common_pid", false)],
        teardown: &[("events/raw_syscalls/sys_enter/trigger", "!hist:keys=common_pid", false)],
        work: Work::Getpid,
    },
    Figure {
        name: "pingpong",
        setup: &[],
        teardown: &[],
        work: Work::PingPong,
    },
    Figure {
        name: "pingpong_sched_switch",
        setup: &[("events/sched/sched_switch/enable", "1", false)],
        teardown: &[("events/sched/sched_switch/enable", "0", false)],
        work: Work::PingPong,
    },
];

/// Median over [`REPS`] runs of `f`, each doing `n` operations, in ns per
/// operation.
fn measure(n: u64, freq: u64, mut f: impl FnMut(u64) -> Result<(), rt::Errno>) -> Result<u64, rt::Errno> {
    let mut t = [0u64; REPS];
    for slot in t.iter_mut() {
        let start = cntvct();
        f(n)?;
        *slot = ticks_to_ns(cntvct() - start, freq) / n.max(1);
    }
    t.sort_unstable();
    Ok(t[REPS / 2])
}

fn getpids(n: u64) -> Result<(), rt::Errno> {
    for _ in 0..n {
        core::hint::black_box(getpid());
    }
    Ok(())
}

/// `n` round trips of one byte to a child that echoes it back.
fn pingpong(n: u64) -> Result<(), rt::Errno> {
    let there = rt::fs::pipe2(0)?;
    let back = rt::fs::pipe2(0)?;
    let mut b = [0u8; 1];
    match rt::process::fork()? {
        rt::process::Fork::Child => {
            let ok = (0..n).all(|_| rt::fs::read(there[0], &mut b) == Ok(1) && rt::fs::write(back[1], &b) == Ok(1));
            rt::process::exit(if ok { 0 } else { 1 })
        }
        rt::process::Fork::Parent(pid) => {
            let mut r = Ok(());
            for i in 0..n {
                b[0] = i as u8;
                if rt::fs::write(there[1], &b) != Ok(1) || rt::fs::read(back[0], &mut b) != Ok(1) {
                    r = Err(rt::Errno::EIO);
                    break;
                }
            }
            for fd in there.iter().chain(back.iter()) {
                let _ = rt::fs::close(*fd);
            }
            let st = rt::process::waitpid(pid)?;
            if st != rt::process::WaitStatus::Exited(0) {
                return Err(rt::Errno::EIO);
            }
            r
        }
    }
}

fn apply(t: &Tracefs, steps: &[Step]) -> Result<(), rt::Errno> {
    for &(file, text, append) in steps {
        if append {
            t.append(file, text)?
        } else {
            t.write(file, text)?
        }
    }
    Ok(())
}

fn main(args: rt::Args) -> i32 {
    let mut calls = 20_000u64;
    let argv: Vec<&[u8]> = args.iter().skip(1).collect();
    match argv.as_slice() {
        [] => {}
        [b"--calls", v] if decimal(v).is_some_and(|v| v > 0) => calls = decimal(v).unwrap_or(calls),
        _ => {
            println!("usage: ftracebench [--calls N]");
            return 2;
        }
    }
    let t = match Tracefs::find() {
        Ok(t) => t,
        Err(e) => {
            println!("ftracebench: FAIL no tracefs: {e:?}");
            return 1;
        }
    };
    let freq = cntfrq();
    println!("ftracebench: counter {freq} Hz, calls {calls}, reps {REPS}");
    let mut status = 0;
    for f in FIGURES {
        let n = match f.work {
            Work::Getpid => calls,
            Work::PingPong => (calls / 10).max(1),
        };
        let r = apply(&t, f.setup).and_then(|()| {
            // One warm-up pass (page faults, the buffer's first pages).
            let run = |n| match f.work {
                Work::Getpid => getpids(n),
                Work::PingPong => pingpong(n),
            };
            run(n / 10 + 1)?;
            measure(n, freq, run)
        });
        // Undone whatever happened, each step on its own.
        for step in f.teardown {
            let _ = apply(&t, core::slice::from_ref(step));
        }
        let _ = t.tracing_on(true);
        let _ = t.clear_trace();
        match r {
            Ok(ns) => println!("ftracebench: {} {ns} ns", f.name),
            Err(e) => {
                println!("ftracebench: {} n/a ({e:?})", f.name);
                if f.setup.is_empty() {
                    status = 1;
                }
            }
        }
    }
    status
}
