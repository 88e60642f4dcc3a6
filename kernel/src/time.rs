//! Time: the per-CPU tick from the generic timer's virtual timer, and
//! delays.

use crate::percpu::{PerCpu, NR_CPUS};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Ticks per second (Debian's arm64 kernels use 250).
pub const HZ: u64 = 250;

/// Timer ticks taken, per CPU.
static TICKS: PerCpu<AtomicU64> = PerCpu::new([const { AtomicU64::new(0) }; NR_CPUS]);
/// The virtual timer's interrupt ID, from the device tree.
static TIMER_IRQ: AtomicU32 = AtomicU32::new(0);

fn tick_interval() -> u64 {
    arch::timer::frequency() / HZ
}

fn timer_interrupt(_irq: u32) {
    arch::timer::arm(tick_interval());
    TICKS.this().fetch_add(1, Ordering::Relaxed);
    run_timers();
    crate::irq_work::irq_work_run();
    if arch::cpu::cpu_id() == 0 {
        crate::itimer::run();
        crate::fs::console_poll();
    }
    crate::sched::scheduler_tick();
}

/// Sleeping tasks by deadline (ns since boot).
static TIMERS: crate::sync::IrqSpinLock<alloc::vec::Vec<(u64, alloc::sync::Arc<crate::sched::Task>)>> =
    crate::sync::IrqSpinLock::new(alloc::vec::Vec::new());

/// Wakes `task` at `deadline_ns` (it re-checks why it slept).
pub fn add_timer(deadline_ns: u64, task: alloc::sync::Arc<crate::sched::Task>) {
    TIMERS.lock().push((deadline_ns, task));
}

fn run_timers() {
    let now = ktime_get_ns();
    let due: alloc::vec::Vec<_> = {
        let mut t = TIMERS.lock();
        if t.is_empty() {
            return;
        }
        let (due, keep): (alloc::vec::Vec<_>, alloc::vec::Vec<_>) = t.drain(..).partition(|(d, _)| *d <= now);
        *t = keep;
        due
    };
    for (_, task) in due {
        crate::sched::wake_up(&task);
    }
}

/// Starts ticks on the boot CPU; `irq` is the virtual timer's interrupt ID.
pub fn init(irq: u32) -> Result<(), crate::errno::Errno> {
    TIMER_IRQ.store(irq, Ordering::Relaxed);
    crate::irq::request_irq(irq, timer_interrupt, "arch_timer")?;
    arch::timer::arm(tick_interval());
    Ok(())
}

/// Starts ticks on a secondary CPU.
pub fn init_secondary() {
    crate::irq::enable_percpu_irq(TIMER_IRQ.load(Ordering::Relaxed));
    arch::timer::arm(tick_interval());
}

/// Ticks taken so far on `cpu`.
pub fn ticks(cpu: usize) -> u64 {
    TICKS.on(cpu).load(Ordering::Relaxed)
}

/// Nanoseconds since kernel entry.
pub fn ktime_get_ns() -> u64 {
    crate::printk::uptime_ns()
}

/// Busy-waits `us` microseconds.
pub fn udelay(us: u64) {
    let end = arch::timer::counter() + us * arch::timer::frequency() / 1_000_000;
    while arch::timer::counter() < end {
        core::hint::spin_loop();
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn timer_ticks_arrive_on_every_cpu() {
        let online = crate::smp::num_online_cpus();
        let before: alloc::vec::Vec<u64> = (0..online).map(ticks).collect();
        // Wait up to 2 s of guest time for 3 ticks on each CPU.
        let deadline = ktime_get_ns() + 2_000_000_000;
        while (0..online).any(|c| ticks(c) < before[c] + 3) {
            assert!(
                ktime_get_ns() < deadline,
                "ticks stalled: before {before:?}, now {:?}",
                (0..online).map(ticks).collect::<alloc::vec::Vec<_>>()
            );
            core::hint::spin_loop();
        }
    }
}
