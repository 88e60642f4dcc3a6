//! `timer` events (Linux's `include/trace/events/timer.h`) of the kernel's
//! two kinds of timer:
//! - the task wake-up at a deadline ([`crate::time::Timeout`], Linux's
//!   `hrtimer_sleeper`): `hrtimer_start`, `hrtimer_expire_entry`,
//!   `hrtimer_expire_exit` and `hrtimer_cancel`. A task has at most one
//!   such timer, so the timer's address is that of the task's
//!   `timeout_id`; its function is `wake_up_process`;
//! - the per-process `ITIMER_REAL` ([`crate::itimer`]), which the tick
//!   runs at jiffy granularity as Linux's timer wheel runs a `timer_list`:
//!   `timer_start`, `timer_expire_entry`, `timer_expire_exit` and
//!   `timer_cancel` (fired, as on Linux, both when the timer is stopped
//!   and when it is taken off the wheel to expire). Its address is that of
//!   the process (Linux's timer lives in the process's `signal_struct`),
//!   its function `it_real_fn`. There is one wheel, run by CPU 0's tick,
//!   with one level, so `cpu` and `idx` are 0 and `bucket_expiry` is
//!   `expires`. Nothing here calls Linux's `timer_init`, so that event is
//!   not offered.

use crate::define_trace_event;
use crate::sched::Task;

/// `HRTIMER_MODE_ABS`: deadlines are absolute.
const HRTIMER_MODE_ABS: u32 = 0;

/// `%ps` of a function address.
struct FuncName(u64);

impl core::fmt::Display for FuncName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match crate::kallsyms::lookup_addr(self.0 as usize) {
            Some(s) => f.write_str(s.name),
            None => write!(f, "0x{:x}", self.0),
        }
    }
}

/// `__print_symbolic` of `enum hrtimer_mode`.
fn mode_name(mode: u32) -> &'static str {
    const NAMES: [&str; 12] = [
        "ABS",
        "REL",
        "ABS|PINNED",
        "REL|PINNED",
        "ABS|SOFT",
        "REL|SOFT",
        "ABS|PINNED|SOFT",
        "REL|PINNED|SOFT",
        "ABS|HARD",
        "REL|HARD",
        "ABS|PINNED|HARD",
        "REL|PINNED|HARD",
    ];
    NAMES.get(mode as usize).copied().unwrap_or("")
}

/// The timer of `task` (see the module's documentation).
pub fn hrtimer_of(task: &Task) -> u64 {
    &task.timeout_id as *const _ as u64
}

/// The function a task's timer runs.
fn wakeup_fn() -> u64 {
    crate::sched::wake_up_process as *const () as u64
}

define_trace_event! {
    /// `task`'s timer is armed for `expires` (ns since boot).
    timer / hrtimer_start,
    fn trace_hrtimer_start(task: &Task, expires: u64),
    fields {
        hrtimer: u64 as "void *" = hrtimer_of(task),
        function: u64 as "void *" = wakeup_fn(),
        expires: i64 as "s64" = expires as i64,
        softexpires: i64 as "s64" = expires as i64,
        mode: u32 as "enum hrtimer_mode" = HRTIMER_MODE_ABS,
        was_armed: u8 as "bool" = 0,
    },
    printk "\"hrtimer=%p function=%ps expires=%llu softexpires=%llu mode=%s was_armed=%d\", REC->hrtimer, REC->function, (unsigned long long) REC->expires, (unsigned long long) REC->softexpires, __print_symbolic(REC->mode, { HRTIMER_MODE_ABS, \"ABS\" }, { HRTIMER_MODE_REL, \"REL\" }, { HRTIMER_MODE_ABS_PINNED, \"ABS|PINNED\" }, { HRTIMER_MODE_REL_PINNED, \"REL|PINNED\" }, { HRTIMER_MODE_ABS_SOFT, \"ABS|SOFT\" }, { HRTIMER_MODE_REL_SOFT, \"REL|SOFT\" }, { HRTIMER_MODE_ABS_PINNED_SOFT, \"ABS|PINNED|SOFT\" }, { HRTIMER_MODE_REL_PINNED_SOFT, \"REL|PINNED|SOFT\" }, { HRTIMER_MODE_ABS_HARD, \"ABS|HARD\" }, { HRTIMER_MODE_REL_HARD, \"REL|HARD\" }, { HRTIMER_MODE_ABS_PINNED_HARD, \"ABS|PINNED|HARD\" }, { HRTIMER_MODE_REL_PINNED_HARD, \"REL|PINNED|HARD\" }), REC->was_armed",
    print(out, e) {
        write!(out, "hrtimer={:016x} function={} expires={} softexpires={} mode={} was_armed={}",
            e.hrtimer, FuncName(e.function), e.expires as u64, e.softexpires as u64, mode_name(e.mode), e.was_armed)
    }
}

define_trace_event! {
    /// `task`'s timer expires at `now` and its function runs.
    timer / hrtimer_expire_entry,
    fn trace_hrtimer_expire_entry(task: &Task, now: u64),
    fields {
        hrtimer: u64 as "void *" = hrtimer_of(task),
        now: i64 as "s64" = now as i64,
        function: u64 as "void *" = wakeup_fn(),
    },
    printk "\"hrtimer=%p function=%ps now=%llu\", REC->hrtimer, REC->function, (unsigned long long) REC->now",
    print(out, e) {
        write!(out, "hrtimer={:016x} function={} now={}", e.hrtimer, FuncName(e.function), e.now as u64)
    }
}

define_trace_event! {
    /// `task`'s timer function returned.
    timer / hrtimer_expire_exit,
    fn trace_hrtimer_expire_exit(task: &Task),
    fields {
        hrtimer: u64 as "void *" = hrtimer_of(task),
    },
    printk "\"hrtimer=%p\", REC->hrtimer",
    print(out, e) {
        write!(out, "hrtimer={:016x}", e.hrtimer)
    }
}

define_trace_event! {
    /// `task`'s timer is cancelled before its deadline.
    timer / hrtimer_cancel,
    fn trace_hrtimer_cancel(task: &Task),
    fields {
        hrtimer: u64 as "void *" = hrtimer_of(task),
    },
    printk "\"hrtimer=%p\", REC->hrtimer",
    print(out, e) {
        write!(out, "hrtimer={:016x}", e.hrtimer)
    }
}

/// The `ITIMER_REAL` callback's address, for `function=%ps`.
fn it_real_fn() -> u64 {
    crate::itimer::it_real_fn as *const () as u64
}

define_trace_event! {
    /// The timer at `timer` is armed to expire at jiffy `expires`.
    timer / timer_start,
    fn trace_timer_start(timer: u64, expires: u64),
    fields {
        timer: u64 as "void *" = timer,
        function: u64 as "void *" = it_real_fn(),
        expires: u64 as "unsigned long" = expires,
        bucket_expiry: u64 as "unsigned long" = expires,
        now: u64 as "unsigned long" = crate::time::jiffies(),
        flags: u32 as "unsigned int" = 0,
    },
    printk "\"timer=%p function=%ps expires=%lu [timeout=%ld] bucket_expiry=%lu cpu=%u idx=%u flags=%s\", REC->timer, REC->function, REC->expires, (long)REC->expires - REC->now, REC->bucket_expiry, REC->flags & 0x0003FFFF, REC->flags >> 22, __print_flags(REC->flags & (0x00040000 | 0x00080000 | 0x00100000 | 0x00200000), \"|\", { 0x00040000, \"M\" }, { 0x00080000, \"D\" }, { 0x00100000, \"P\" }, { 0x00200000, \"I\" })",
    print(out, e) {
        write!(out, "timer={:016x} function={} expires={} [timeout={}] bucket_expiry={} cpu={} idx={} flags={}",
            e.timer, FuncName(e.function), e.expires, e.expires.wrapping_sub(e.now) as i64, e.bucket_expiry,
            e.flags & TIMER_CPUMASK, e.flags >> TIMER_ARRAYSHIFT, TimerFlags(e.flags))
    }
}

/// `TIMER_CPUMASK`: the CPU of the wheel a timer is on.
const TIMER_CPUMASK: u32 = 0x0003_ffff;
/// `TIMER_ARRAYSHIFT`: where the wheel index sits in `flags`.
const TIMER_ARRAYSHIFT: u32 = 22;

/// `decode_timer_flags`: `M|D|P|I`, or nothing.
struct TimerFlags(u32);

impl core::fmt::Display for TimerFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names = [
            (0x0004_0000, "M"),
            (0x0008_0000, "D"),
            (0x0010_0000, "P"),
            (0x0020_0000, "I"),
        ];
        let mut sep = "";
        for (bit, name) in names {
            if self.0 & bit != 0 {
                write!(f, "{sep}{name}")?;
                sep = "|";
            }
        }
        Ok(())
    }
}

define_trace_event! {
    /// The timer at `timer` expires and its function runs.
    timer / timer_expire_entry,
    fn trace_timer_expire_entry(timer: u64, baseclk: u64),
    fields {
        timer: u64 as "void *" = timer,
        now: u64 as "unsigned long" = crate::time::jiffies(),
        function: u64 as "void *" = it_real_fn(),
        baseclk: u64 as "unsigned long" = baseclk,
    },
    printk "\"timer=%p function=%ps now=%lu baseclk=%lu\", REC->timer, REC->function, REC->now, REC->baseclk",
    print(out, e) {
        write!(out, "timer={:016x} function={} now={} baseclk={}", e.timer, FuncName(e.function), e.now, e.baseclk)
    }
}

define_trace_event! {
    /// The function of the timer at `timer` returned.
    timer / timer_expire_exit,
    fn trace_timer_expire_exit(timer: u64),
    fields {
        timer: u64 as "void *" = timer,
    },
    printk "\"timer=%p\", REC->timer",
    print(out, e) {
        write!(out, "timer={:016x}", e.timer)
    }
}

define_trace_event! {
    /// The timer at `timer` leaves the wheel: stopped, or about to expire.
    timer / timer_cancel,
    fn trace_timer_cancel(timer: u64),
    fields {
        timer: u64 as "void *" = timer,
    },
    printk "\"timer=%p\", REC->timer",
    print(out, e) {
        write!(out, "timer={:016x}", e.timer)
    }
}

/// Registers the `timer` events.
pub fn register() -> Result<(), uapi::Errno> {
    timer_cancel::register()?;
    timer_expire_exit::register()?;
    timer_expire_entry::register()?;
    timer_start::register()?;
    hrtimer_cancel::register()?;
    hrtimer_expire_exit::register()?;
    hrtimer_expire_entry::register()?;
    hrtimer_start::register()
}
