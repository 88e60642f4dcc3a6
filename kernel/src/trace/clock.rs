//! The trace clocks (`trace_clock`): the ones this kernel really has.
//!
//! Every nanosecond clock here reads the architected counter, which is
//! synchronised across CPUs, so `local`, `global`, `perf`, `mono`,
//! `mono_raw` and `boot` (no suspend, no NTP slewing) give the same times;
//! they are listed under Linux's names so that tools selecting one work.
//! `counter` is an increment, `uptime` counts jiffies (Linux prints both
//! as plain numbers, not seconds). Linux's `tai` needs a TAI offset this
//! kernel does not keep and is not offered.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One trace clock: its name and whether it counts nanoseconds.
pub struct TraceClock {
    /// Name in `trace_clock`.
    pub name: &'static str,
    /// Whether timestamps print as seconds.microseconds.
    pub in_ns: bool,
    read: fn() -> u64,
}

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

static CLOCK_ID: AtomicUsize = AtomicUsize::new(0);

/// The selected clock's current value.
pub fn trace_clock_now() -> u64 {
    let id = CLOCK_ID.load(Ordering::Relaxed);
    (TRACE_CLOCKS.get(id).map_or(ns as fn() -> u64, |c| c.read))()
}

/// The selected clock.
pub fn current() -> &'static TraceClock {
    &TRACE_CLOCKS[CLOCK_ID.load(Ordering::Acquire).min(TRACE_CLOCKS.len() - 1)]
}

/// `trace_clock`'s text: every clock, the selected one in brackets.
pub fn show() -> alloc::string::String {
    let cur = CLOCK_ID.load(Ordering::Acquire);
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

/// Selects the clock called `name` (EINVAL if there is none); the buffers
/// are emptied then, since old and new times do not compare (as Linux's
/// `tracing_set_clock`).
pub fn set(name: &str) -> Result<(), uapi::Errno> {
    let id = TRACE_CLOCKS
        .iter()
        .position(|c| c.name == name)
        .ok_or(uapi::Errno::EINVAL)?;
    if CLOCK_ID.swap(id, Ordering::AcqRel) != id {
        super::global_trace().reset(None);
    }
    Ok(())
}
