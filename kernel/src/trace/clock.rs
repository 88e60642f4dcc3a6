//! The trace clocks (`trace_clock`): the ones this kernel really has.
//!
//! Every nanosecond clock here reads the architected counter, which is
//! synchronised across CPUs, so `local`, `global`, `perf`, `mono`,
//! `mono_raw` and `boot` (no suspend, no NTP slewing) give the same times;
//! they are listed under Linux's names so that tools selecting one work.
//! `counter` is an increment, `uptime` counts jiffies (Linux prints both
//! as plain numbers, not seconds). Linux's `tai` needs a TAI offset this
//! kernel does not keep and is not offered.

use super::TraceArray;
use core::sync::atomic::{AtomicU64, Ordering};

/// One trace clock: its name and whether it counts nanoseconds.
pub struct TraceClock {
    /// Name in `trace_clock`.
    pub name: &'static str,
    /// Whether timestamps print as seconds.microseconds.
    pub in_ns: bool,
    read: fn() -> u64,
}

#[inline(always)]
fn ns() -> u64 {
    crate::printk::uptime_ns()
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn counter() -> u64 {
    COUNTER.fetch_add(1, Ordering::Relaxed) + 1
}

/// Linux's `trace_clock_jiffies`: jiffies since boot in USER_HZ units.
fn uptime() -> u64 {
    ns() / (1_000_000_000 / 100)
}

/// The clocks, in Linux's order.
pub static TRACE_CLOCKS: [TraceClock; 8] = [
    TraceClock {
        name: "local",
        in_ns: true,
        read: ns,
    },
    TraceClock {
        name: "global",
        in_ns: true,
        read: ns,
    },
    TraceClock {
        name: "counter",
        in_ns: false,
        read: counter,
    },
    TraceClock {
        name: "uptime",
        in_ns: false,
        read: uptime,
    },
    TraceClock {
        name: "perf",
        in_ns: true,
        read: ns,
    },
    TraceClock {
        name: "mono",
        in_ns: true,
        read: ns,
    },
    TraceClock {
        name: "mono_raw",
        in_ns: true,
        read: ns,
    },
    TraceClock {
        name: "boot",
        in_ns: true,
        read: ns,
    },
];

/// The current value of clock `id` (an index into [`TRACE_CLOCKS`]).
/// Inlined into the event write path: a call and return there cost more
/// than the default clock's read under emulation.
#[inline(always)]
pub fn clock_now(id: usize) -> u64 {
    // The default (`local`) read directly: every event reads its clock.
    if id == 0 {
        return ns();
    }
    (TRACE_CLOCKS.get(id).map_or(ns as fn() -> u64, |c| c.read))()
}

/// The default (`local`) clock's value, read where nothing may be called.
#[inline(always)]
pub fn local_ns() -> u64 {
    ns()
}

/// Clock `id`, the last one for an id out of range.
pub fn clock_by_id(id: usize) -> &'static TraceClock {
    &TRACE_CLOCKS[id.min(TRACE_CLOCKS.len() - 1)]
}

/// The top-level trace array's clock's current value.
pub fn trace_clock_now() -> u64 {
    super::global_trace().clock_now()
}

/// The top-level trace array's clock.
pub fn current() -> &'static TraceClock {
    super::global_trace().clock()
}

/// `trace_clock`'s text of `tr`: every clock, the selected one in brackets.
pub fn show(tr: &TraceArray) -> alloc::string::String {
    let cur = tr.clock_id();
    let mut s = alloc::string::String::new();
    for (i, c) in TRACE_CLOCKS.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        if i == cur {
            s.push('[');
            s.push_str(c.name);
            s.push(']');
        } else {
            s.push_str(c.name);
        }
    }
    s.push('\n');
    s
}

/// Selects the top level's clock called `name` (a hist trigger's `clock=`).
pub fn set(name: &str) -> Result<(), uapi::Errno> {
    tracing_set_clock(super::global_trace(), name)
}

/// Selects `tr`'s clock called `name` (EINVAL if there is none); its
/// buffers are emptied then, since old and new times do not compare (as
/// Linux's `tracing_set_clock`).
pub fn tracing_set_clock(tr: &TraceArray, name: &str) -> Result<(), uapi::Errno> {
    let id = TRACE_CLOCKS
        .iter()
        .position(|c| c.name == name)
        .ok_or(uapi::Errno::EINVAL)?;
    if tr.set_clock_id(id) != id {
        tr.reset(None);
    }
    Ok(())
}
