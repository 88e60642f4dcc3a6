//! CPU-time accounting: user and system time per thread, per thread group
//! and for reaped children, as Linux's tick-based accounting
//! (`account_process_tick`) keeps them. Each tick charges a whole tick to
//! the task it interrupted: to user time if the interrupt came from EL0,
//! else to system time. The exact run time (Linux's `sum_exec_runtime`)
//! is kept apart, from the counter at each context switch: it is what the
//! scheduler CPU clocks read, and the tick samples only split it into user
//! and system time for `getrusage`, `wait4` and `times` (Linux's
//! `cputime_adjust`).

use crate::percpu::{PerCpu, NR_CPUS};
use crate::process::Process;
use crate::sched::Task;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Nanoseconds one tick stands for (Linux's `TICK_NSEC`).
pub const TICK_NSEC: u64 = 1_000_000_000 / crate::time::HZ;

/// `USER_HZ`: the unit of `clock_t` in `times()` and `siginfo`.
pub const USER_HZ: u64 = 100;

/// A pair of CPU times, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cputime {
    /// Time spent at EL0.
    pub utime: u64,
    /// Time spent in the kernel on the task's behalf.
    pub stime: u64,
    /// Time on a CPU, exactly (`sum_exec_runtime`).
    pub runtime: u64,
    /// Page faults resolved without I/O (`min_flt`).
    pub minflt: u64,
    /// Page faults that needed I/O (`maj_flt`): none here, where files
    /// live in memory, as on Linux with tmpfs and initramfs.
    pub majflt: u64,
}

impl Cputime {
    /// `utime` and `stime` scaled so that they add up to `runtime`, as
    /// Linux's `cputime_adjust` does before reporting them: the tick
    /// samples give the proportion, the run time the total.
    pub fn adjusted(self) -> Cputime {
        let (u, s, rt) = (self.utime as u128, self.stime as u128, self.runtime as u128);
        let stime = if s == 0 {
            0
        } else if u == 0 {
            rt
        } else {
            rt * s / (u + s)
        };
        Cputime {
            utime: (rt - stime) as u64,
            stime: stime as u64,
            ..self
        }
    }

    /// `utime + stime` (the `CPUCLOCK_PROF` and `CPUCLOCK_SCHED` value).
    pub fn total(self) -> u64 {
        self.utime.saturating_add(self.stime)
    }
}

impl core::ops::Add for Cputime {
    type Output = Cputime;
    fn add(self, o: Cputime) -> Cputime {
        Cputime {
            utime: self.utime.saturating_add(o.utime),
            stime: self.stime.saturating_add(o.stime),
            runtime: self.runtime.saturating_add(o.runtime),
            minflt: self.minflt.saturating_add(o.minflt),
            majflt: self.majflt.saturating_add(o.majflt),
        }
    }
}

/// A pair of counters that ticks add to.
#[derive(Default)]
struct Counters {
    utime: AtomicU64,
    stime: AtomicU64,
    runtime: AtomicU64,
    minflt: AtomicU64,
    majflt: AtomicU64,
}

impl Counters {
    const fn new() -> Counters {
        Counters {
            utime: AtomicU64::new(0),
            stime: AtomicU64::new(0),
            runtime: AtomicU64::new(0),
            minflt: AtomicU64::new(0),
            majflt: AtomicU64::new(0),
        }
    }

    fn get(&self) -> Cputime {
        Cputime {
            utime: self.utime.load(Ordering::Relaxed),
            stime: self.stime.load(Ordering::Relaxed),
            runtime: self.runtime.load(Ordering::Relaxed),
            minflt: self.minflt.load(Ordering::Relaxed),
            majflt: self.majflt.load(Ordering::Relaxed),
        }
    }

    fn add(&self, t: Cputime) {
        self.utime.fetch_add(t.utime, Ordering::Relaxed);
        self.stime.fetch_add(t.stime, Ordering::Relaxed);
        self.runtime.fetch_add(t.runtime, Ordering::Relaxed);
        self.minflt.fetch_add(t.minflt, Ordering::Relaxed);
        self.majflt.fetch_add(t.majflt, Ordering::Relaxed);
    }
}

/// One thread's CPU time (Linux's `task->utime`, `task->stime`,
/// `se.sum_exec_runtime`).
pub struct TaskCputime {
    counters: Counters,
    /// When the task was last switched in (as `ktime_get_ns`), 0 while it
    /// is switched out (`se.exec_start`).
    running_since: AtomicU64,
}

impl TaskCputime {
    /// Zero.
    pub const fn new() -> TaskCputime {
        TaskCputime {
            counters: Counters::new(),
            running_since: AtomicU64::new(0),
        }
    }

    /// The time used so far, including the current run if the task is on
    /// a CPU.
    pub fn get(&self) -> Cputime {
        let mut t = self.counters.get();
        let since = self.running_since.load(Ordering::Relaxed);
        if since != 0 {
            t.runtime += crate::time::ktime_get_ns().saturating_sub(since);
        }
        t
    }
}

impl Default for TaskCputime {
    fn default() -> Self {
        TaskCputime::new()
    }
}

/// A thread group's CPU time beyond its live threads (Linux's
/// `signal->utime/stime` for threads that exited, `signal->cutime/cstime`
/// for reaped children and their own reaped children).
#[derive(Default)]
pub struct ProcessCputime {
    dead: Counters,
    children: Counters,
}

impl ProcessCputime {
    /// Zero.
    pub const fn new() -> ProcessCputime {
        ProcessCputime {
            dead: Counters::new(),
            children: Counters::new(),
        }
    }

    /// The times of the children reaped so far (`RUSAGE_CHILDREN`).
    pub fn children(&self) -> Cputime {
        self.children.get()
    }
}

/// Whether the interrupt being handled on each CPU came from EL0 (Linux
/// asks `user_mode(get_irq_regs())`).
static IRQ_FROM_USER: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

/// Notes where the interrupt now being handled was taken from.
pub fn irq_enter_from(user: bool) {
    IRQ_FROM_USER.this().store(user, Ordering::Relaxed);
}

/// Charges the tick that just arrived to the task it interrupted (Linux's
/// `account_process_tick`); idle time belongs to no task.
pub fn account_process_tick() {
    let Some(t) = crate::sched::try_current() else { return };
    if t.is_idle() {
        return;
    }
    let c = &t.cputime.counters;
    if IRQ_FROM_USER.this().load(Ordering::Relaxed) {
        c.utime.fetch_add(TICK_NSEC, Ordering::Relaxed);
    } else {
        c.stime.fetch_add(TICK_NSEC, Ordering::Relaxed);
    }
    // The process's CPU clocks moved: ITIMER_VIRTUAL and ITIMER_PROF may
    // be due (Linux's run_posix_cpu_timers from the same tick).
    if let Some(p) = t.process.get() {
        crate::itimer::run_cpu_timers(p);
    }
}

/// Counts a resolved page fault (minor: every page here is in memory)
/// against the running task, as Linux's `mm_account_fault`.
pub fn account_fault() {
    if let Some(t) = crate::sched::try_current() {
        t.cputime.counters.minflt.fetch_add(1, Ordering::Relaxed);
    }
}

/// Ends `prev`'s run and starts `next`'s at a context switch (Linux's
/// `update_curr` for the two).
pub fn account_switch(prev: &Task, next: &Task) {
    let now = crate::time::ktime_get_ns();
    let since = prev.cputime.running_since.swap(0, Ordering::Relaxed);
    if since != 0 {
        prev.cputime
            .counters
            .runtime
            .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
    }
    next.cputime.running_since.store(now.max(1), Ordering::Relaxed);
}

/// The whole thread group's time: exited threads and live ones (Linux's
/// `thread_group_cputime`). Read under the thread list's lock, which an
/// exiting thread holds while it moves its time to the group's, so that
/// no time is counted twice or lost.
pub fn thread_group_cputime(p: &Process) -> Cputime {
    let threads = p.threads.lock();
    threads
        .iter()
        .fold(p.cputime.dead.get(), |sum, t| sum + t.cputime.get())
}

/// Moves an exiting thread's time to its group; the caller holds the
/// group's thread list lock and removes `t` from it in the same hold.
pub fn exit_thread_cputime(p: &Process, t: &Task) {
    p.cputime.dead.add(t.cputime.get());
}

/// A child's own time plus its reaped children's (Linux's `RUSAGE_BOTH`,
/// which `wait4` reports).
pub fn rusage_both(child: &Process) -> Cputime {
    thread_group_cputime(child).adjusted() + child.cputime.children()
}

/// Adds a reaped child's times, split as reported, to its parent's
/// children's times (Linux's `wait_task_zombie`); a child reaped automatically adds nothing, as in
/// Linux.
pub fn reap_cputime(parent: &Process, child: &Process) {
    parent.cputime.children.add(rusage_both(child));
}

/// Nanoseconds as `clock_t` ticks of `USER_HZ` (Linux's
/// `nsec_to_clock_t`).
pub fn nsec_to_clock_t(ns: u64) -> u64 {
    ns / (1_000_000_000 / USER_HZ)
}

/// A `struct rusage` (arm64: two `timeval`s, then 14 longs) holding `t`;
/// the fields Linux fills from counters this kernel does not keep
/// (`ru_maxrss`, context switches) stay 0.
pub fn rusage_bytes(t: Cputime) -> [u8; 144] {
    let mut b = [0u8; 144];
    let t = t.adjusted();
    let fields = [
        t.utime / 1_000_000_000,
        t.utime % 1_000_000_000 / 1000,
        t.stime / 1_000_000_000,
        t.stime % 1_000_000_000 / 1000,
    ];
    for (i, v) in fields.into_iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    // ru_minflt and ru_majflt, the fifth and sixth longs.
    b[64..72].copy_from_slice(&t.minflt.to_le_bytes());
    b[72..80].copy_from_slice(&t.majflt.to_le_bytes());
    b
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn adjusted_times_split_run_time_by_tick_samples() {
        let t = Cputime {
            utime: 3 * TICK_NSEC,
            stime: TICK_NSEC,
            runtime: 10_000_000,
            ..Cputime::default()
        };
        let a = t.adjusted();
        assert_eq!((a.utime, a.stime, a.runtime), (7_500_000, 2_500_000, 10_000_000));
        // No tick yet: all of the run time is user time, as in Linux.
        let fresh = Cputime {
            runtime: 123,
            ..Cputime::default()
        }
        .adjusted();
        assert_eq!((fresh.utime, fresh.stime), (123, 0));
    }

    #[kernel_test]
    fn switches_charge_run_time_to_the_task_switched_out() {
        let me = crate::sched::current();
        // Switched away and back, the task is on a CPU with a start time.
        crate::sched::schedule();
        let before = me.cputime.get().runtime;
        crate::time::udelay(20_000);
        let during = me.cputime.get().runtime;
        assert!(during - before >= 20_000_000, "{before} then {during} ns after 20 ms");
        crate::sched::schedule();
        assert!(me.cputime.get().runtime >= during);
    }
}
