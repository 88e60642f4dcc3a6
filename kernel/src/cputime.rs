//! CPU-time accounting: user and system time per thread, per thread group
//! and for reaped children, as Linux's tick-based accounting
//! (`account_process_tick`) keeps them. Each tick charges a whole tick to
//! the task it interrupted: to user time if the interrupt came from EL0,
//! else to system time. `getrusage`, `wait4`, `times` and the CPU-time
//! clocks read the totals.

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
}

impl Cputime {
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
        }
    }
}

/// A pair of counters that ticks add to.
#[derive(Default)]
struct Counters {
    utime: AtomicU64,
    stime: AtomicU64,
}

impl Counters {
    const fn new() -> Counters {
        Counters {
            utime: AtomicU64::new(0),
            stime: AtomicU64::new(0),
        }
    }

    fn get(&self) -> Cputime {
        Cputime {
            utime: self.utime.load(Ordering::Relaxed),
            stime: self.stime.load(Ordering::Relaxed),
        }
    }

    fn add(&self, t: Cputime) {
        self.utime.fetch_add(t.utime, Ordering::Relaxed);
        self.stime.fetch_add(t.stime, Ordering::Relaxed);
    }
}

/// One thread's CPU time (Linux's `task->utime`, `task->stime`).
pub struct TaskCputime(Counters);

impl TaskCputime {
    /// Zero.
    pub const fn new() -> TaskCputime {
        TaskCputime(Counters::new())
    }

    /// The time used so far.
    pub fn get(&self) -> Cputime {
        self.0.get()
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
    let c = &t.cputime.0;
    if IRQ_FROM_USER.this().load(Ordering::Relaxed) {
        c.utime.fetch_add(TICK_NSEC, Ordering::Relaxed);
    } else {
        c.stime.fetch_add(TICK_NSEC, Ordering::Relaxed);
    }
}

/// The whole thread group's time: exited threads and live ones (Linux's
/// `thread_group_cputime`). Read under the thread list's lock, which an
/// exiting thread holds while it moves its time to the group's, so that
/// no time is counted twice or lost.
pub fn thread_group_cputime(p: &Process) -> Cputime {
    let threads = p.threads.lock();
    threads.iter().fold(p.cputime.dead.get(), |sum, t| sum + t.cputime.get())
}

/// Moves an exiting thread's time to its group; the caller holds the
/// group's thread list lock and removes `t` from it in the same hold.
pub fn exit_thread_cputime(p: &Process, t: &Task) {
    p.cputime.dead.add(t.cputime.get());
}

/// A child's own time plus its reaped children's (Linux's `RUSAGE_BOTH`,
/// which `wait4` reports).
pub fn rusage_both(child: &Process) -> Cputime {
    thread_group_cputime(child) + child.cputime.children()
}

/// Adds a reaped child's times to its parent's children's times (Linux's
/// `wait_task_zombie`); a child reaped automatically adds nothing, as in
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
/// (`ru_maxrss`, faults, context switches) stay 0.
pub fn rusage_bytes(t: Cputime) -> [u8; 144] {
    let mut b = [0u8; 144];
    let fields = [
        t.utime / 1_000_000_000,
        t.utime % 1_000_000_000 / 1000,
        t.stime / 1_000_000_000,
        t.stime % 1_000_000_000 / 1000,
    ];
    for (i, v) in fields.into_iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    b
}
