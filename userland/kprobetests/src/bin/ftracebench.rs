//! `ftracebench [--calls N] [--only FIGURE]`: what the function tracers, fprobes,
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
//! Both processes are pinned to one CPU, so that every round trip is two
//! context switches on any kernel (with a CPU each, a kernel may spin or
//! idle instead, and the figure measures its idle path); the echoing child
//! is forked once per figure, outside the timed runs, and each pingpong
//! figure is the median of [`PINGPONG_REPS`] runs of `calls / 4` round
//! trips, so that sched_switch's cost (a few percent of a round trip)
//! stands out of the noise.
//!
//! A figure whose set-up is refused prints `n/a` with the error and the
//! others go on; tracing is put back as found (nop tracer, no filters, no
//! dynamic events, tracing on) after each.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use kprobetests::parse::decimal;
use kprobetests::sys::{affinity, cntfrq, cntvct, getpid, pin_to_cpu, set_affinity, ticks_to_ns};
use kprobetests::tracefs::Tracefs;
use rt::println;

rt::main!(main);

const REPS: usize = 5;
/// Timed runs of a pingpong figure.
const PINGPONG_REPS: usize = 9;

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

/// Median over `reps` runs of `f` (at most [`PINGPONG_REPS`]), each doing
/// `n` operations, in ns per operation.
fn measure(n: u64, freq: u64, reps: usize, mut f: impl FnMut(u64) -> Result<(), rt::Errno>) -> Result<u64, rt::Errno> {
    let mut t = [0u64; PINGPONG_REPS];
    let t = &mut t[..reps.clamp(1, PINGPONG_REPS)];
    for slot in t.iter_mut() {
        let start = cntvct();
        f(n)?;
        *slot = ticks_to_ns(cntvct() - start, freq) / n.max(1);
    }
    t.sort_unstable();
    Ok(t[t.len() / 2])
}

fn getpids(n: u64) -> Result<(), rt::Errno> {
    for _ in 0..n {
        core::hint::black_box(getpid());
    }
    Ok(())
}

/// A child that echoes every byte back, both pinned to one CPU.
struct PingPong {
    there: [i32; 2],
    back: [i32; 2],
    child: i32,
    /// The CPU mask to restore when done.
    mask: u64,
}

impl PingPong {
    /// Pins this process to its first allowed CPU and forks the echoing
    /// child there (it inherits the pinning).
    fn start() -> Result<PingPong, rt::Errno> {
        let mask = affinity()?;
        pin_to_cpu(mask.trailing_zeros() as usize)?;
        let there = rt::fs::pipe2(0)?;
        let back = rt::fs::pipe2(0)?;
        match rt::process::fork()? {
            rt::process::Fork::Child => {
                // Its own copies of the parent's ends would keep EOF away.
                let _ = rt::fs::close(there[1]);
                let _ = rt::fs::close(back[0]);
                let mut b = [0u8; 1];
                // Echo until the parent closes its end (EOF).
                loop {
                    match rt::fs::read(there[0], &mut b) {
                        Ok(1) if rt::fs::write(back[1], &b) == Ok(1) => {}
                        Ok(0) => rt::process::exit(0),
                        _ => rt::process::exit(1),
                    }
                }
            }
            rt::process::Fork::Parent(child) => Ok(PingPong {
                there,
                back,
                child,
                mask,
            }),
        }
    }

    /// `n` round trips of one byte.
    fn run(&self, n: u64) -> Result<(), rt::Errno> {
        let mut b = [0u8; 1];
        for i in 0..n {
            b[0] = i as u8;
            if rt::fs::write(self.there[1], &b) != Ok(1) || rt::fs::read(self.back[0], &mut b) != Ok(1) {
                return Err(rt::Errno::EIO);
            }
        }
        Ok(())
    }

    /// Ends the child (EOF on its pipe), reaps it and unpins this process.
    fn finish(self) -> Result<(), rt::Errno> {
        for fd in self.there.iter().chain(self.back.iter()) {
            let _ = rt::fs::close(*fd);
        }
        let st = rt::process::waitpid(self.child);
        let _ = set_affinity(self.mask);
        if st? != rt::process::WaitStatus::Exited(0) {
            return Err(rt::Errno::EIO);
        }
        Ok(())
    }
}

/// A pingpong figure: [`PINGPONG_REPS`] timed runs of `n` round trips
/// after one warm-up run, with one child.
fn pingpong(n: u64, freq: u64) -> Result<u64, rt::Errno> {
    let pp = PingPong::start()?;
    let r = pp
        .run(n / 10 + 1)
        .and_then(|()| measure(n, freq, PINGPONG_REPS, |n| pp.run(n)));
    let done = pp.finish();
    let ns = r?;
    done.map(|()| ns)
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
    let mut only: Option<&[u8]> = None;
    let argv: Vec<&[u8]> = args.iter().skip(1).collect();
    let mut rest = argv.as_slice();
    loop {
        match rest {
            [] => break,
            [b"--calls", v, r @ ..] if decimal(v).is_some_and(|v| v > 0) => {
                calls = decimal(v).unwrap_or(calls);
                rest = r;
            }
            [b"--only", f, r @ ..] => {
                only = Some(f);
                rest = r;
            }
            _ => {
                println!("usage: ftracebench [--calls N] [--only FIGURE]");
                return 2;
            }
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
    for f in FIGURES.iter().filter(|f| only.is_none_or(|o| o == f.name.as_bytes())) {
        let n = match f.work {
            Work::Getpid => calls,
            Work::PingPong => (calls / 4).max(1),
        };
        let r = apply(&t, f.setup).and_then(|()| match f.work {
            Work::Getpid => {
                // One warm-up pass (page faults, the buffer's first pages).
                getpids(n / 10 + 1)?;
                measure(n, freq, REPS, getpids)
            }
            Work::PingPong => pingpong(n, freq),
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
