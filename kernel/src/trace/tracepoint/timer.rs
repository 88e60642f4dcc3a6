//! `timer` events of the kernel's one kind of timer, the task wake-up at a
//! deadline ([`crate::time::Timeout`], Linux's `hrtimer_sleeper`):
//! `hrtimer_start`, `hrtimer_expire_entry`, `hrtimer_expire_exit` and
//! `hrtimer_cancel` (Linux's `include/trace/events/timer.h`). A task has at
//! most one such timer, so the timer's address is that of the task's
//! `timeout_id`; its function is `wake_up_process`. This kernel has no
//! `timer_list` wheel, hence no `timer_*` events.

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

/// Registers the `timer` events.
pub fn register() -> Result<(), uapi::Errno> {
    hrtimer_cancel::register()?;
    hrtimer_expire_exit::register()?;
    hrtimer_expire_entry::register()?;
    hrtimer_start::register()
}
