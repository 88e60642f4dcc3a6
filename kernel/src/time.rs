//! Time: the per-CPU tick from the generic timer's virtual timer, and
//! delays.

use crate::errno::Errno;
use crate::percpu::{PerCpu, NR_CPUS};
use crate::sched::Task;
use crate::sync::IrqSpinLock;
use alloc::collections::BinaryHeap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// Ticks per second (Debian's arm64 kernels use 250).
pub const HZ: u64 = 250;

/// Timer ticks taken, per CPU.
static TICKS: PerCpu<AtomicU64> = PerCpu::new([const { AtomicU64::new(0) }; NR_CPUS]);
/// The virtual timer's interrupt ID, from the device tree.
static TIMER_IRQ: AtomicU32 = AtomicU32::new(0);

fn tick_interval() -> u64 {
    arch::timer::frequency() / HZ
}

/// The counter value of each CPU's next tick.
static NEXT_TICK: PerCpu<AtomicU64> = PerCpu::new([const { AtomicU64::new(0) }; NR_CPUS]);
/// The counter value each CPU's timer is armed for: its next tick, or an
/// earlier timeout deadline (Linux's `hrtimer` one-shot mode on top of the
/// periodic tick), so that a short sleep ends at its deadline and not at
/// the next tick, up to 1/HZ later.
static ARMED_FOR: PerCpu<AtomicU64> = PerCpu::new([const { AtomicU64::new(0) }; NR_CPUS]);

/// Arms this CPU's timer for `cval`. Runs with interrupts masked.
fn program(cval: u64) {
    ARMED_FOR.this().store(cval, Ordering::Relaxed);
    arch::timer::arm_at(cval);
}

/// Starts this CPU's periodic tick.
fn start_tick() {
    let next = arch::timer::counter().wrapping_add(tick_interval());
    NEXT_TICK.this().store(next, Ordering::Relaxed);
    program(next);
}

fn timer_interrupt(_irq: u32) {
    let now = arch::timer::counter();
    run_timers();
    let next = NEXT_TICK.this().load(Ordering::Relaxed);
    if now >= next {
        // Ticks a stalled CPU missed are dropped, not replayed.
        let interval = tick_interval();
        let after = match next.wrapping_add(interval) {
            n if n > now => n,
            _ => now.wrapping_add(interval),
        };
        NEXT_TICK.this().store(after, Ordering::Relaxed);
        tick();
    }
    // The next tick, or the earliest pending deadline if sooner: timeouts
    // armed on this CPU after the current one must not wait for a tick.
    let tick_at = NEXT_TICK.this().load(Ordering::Relaxed);
    let soonest = TIMERS
        .lock()
        .heap
        .peek()
        .map(|e| crate::printk::ns_to_counter(e.deadline_ns));
    program(soonest.map_or(tick_at, |d| d.min(tick_at)));
}

/// The periodic work of a tick.
fn tick() {
    TICKS.this().fetch_add(1, Ordering::Relaxed);
    crate::cputime::account_process_tick();
    crate::irq_work::irq_work_run();
    if arch::cpu::cpu_id() == 0 {
        // The coarse clocks read the time of the last tick (Linux's
        // timekeeping update by the tick_do_timer_cpu).
        let now = ktime_get_ns();
        do_update_jiffies(now);
        crate::vdso::update_vsyscall(|s| s.coarse_mono = now);
        crate::itimer::run();
        crate::fs::console_poll();
    }
    crate::sched::scheduler_tick();
}

/// A task's pending wake-up in the timer queue.
struct TimerEntry {
    deadline_ns: u64,
    /// Matches the task's `timeout_id` while the wait that armed it lasts.
    id: u64,
    /// Weak, so that an entry whose wait ended early never keeps an exited
    /// task (and its kernel stack) alive until the deadline.
    task: Weak<Task>,
}

impl PartialEq for TimerEntry {
    fn eq(&self, o: &Self) -> bool {
        (self.deadline_ns, self.id) == (o.deadline_ns, o.id)
    }
}
impl Eq for TimerEntry {}
impl PartialOrd for TimerEntry {
    fn partial_cmp(&self, o: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for TimerEntry {
    /// Reversed, so that the max-heap yields the earliest deadline first.
    fn cmp(&self, o: &Self) -> core::cmp::Ordering {
        (o.deadline_ns, o.id).cmp(&(self.deadline_ns, self.id))
    }
}

/// Pending timeouts, earliest first. A tick looks only at the entries that
/// are due, so its cost does not grow with the number pending (Linux keeps
/// hrtimers in a per-CPU rbtree for the same reason). A cancelled timeout
/// stays in the heap, disarmed, until the heap is compacted.
struct TimerQueue {
    heap: BinaryHeap<TimerEntry>,
    /// Entries disarmed since the last compaction.
    cancelled: usize,
}

/// Below this many entries, cancelled ones are left for their deadline.
const COMPACT_MIN: usize = 64;

static TIMERS: IrqSpinLock<TimerQueue> = IrqSpinLock::new(TimerQueue {
    heap: BinaryHeap::new(),
    cancelled: 0,
});
/// Timeout IDs; 0 means "none armed".
static NEXT_TIMEOUT_ID: AtomicU64 = AtomicU64::new(1);
/// The task whose timeout each CPU's tick is expiring, from the moment it
/// takes the entry's reference (under the timer lock) until that reference
/// is dropped; else null. [`forget_dead_task`] waits for it to move on, as
/// Linux's `hrtimer_cancel` waits for a running callback, so that a tick's
/// reference is never a task's last (which would free the task in
/// interrupt context).
static EXPIRING: PerCpu<AtomicPtr<Task>> = PerCpu::new([const { AtomicPtr::new(core::ptr::null_mut()) }; NR_CPUS]);

/// A wake-up of the current task at a deadline for the wait in progress
/// (Linux's `hrtimer_sleeper` under `schedule_timeout`): when the deadline
/// passes the task is woken and re-checks why it slept. Dropping it
/// cancels the wake-up, so that a wait ended by its event or a signal
/// leaves nothing behind. A task has at most one armed at a time.
#[must_use = "dropping a Timeout cancels it"]
pub struct Timeout {
    task: Arc<Task>,
    id: u64,
}

impl Timeout {
    /// Arms a wake-up of the current task at `deadline_ns` (ns since boot,
    /// as `ktime_get_ns`). ENOMEM if the timer queue cannot grow.
    pub fn arm(deadline_ns: u64) -> Result<Timeout, Errno> {
        let task = crate::sched::current();
        let id = NEXT_TIMEOUT_ID.fetch_add(1, Ordering::Relaxed);
        let mut q = TIMERS.lock();
        q.heap.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        if task.timeout_id.swap(id, Ordering::AcqRel) != 0 {
            // A wait nested in another replaces its timeout.
            q.cancelled += 1;
        }
        q.heap.push(TimerEntry {
            deadline_ns,
            id,
            task: Arc::downgrade(&task),
        });
        // Under the lock, interrupts are masked: this CPU's timer is
        // brought forward if the deadline comes before what it waits for.
        let cval = crate::printk::ns_to_counter(deadline_ns);
        if cval < ARMED_FOR.this().load(Ordering::Relaxed) {
            program(cval);
        }
        drop(q);
        crate::trace::tracepoint::timer::trace_hrtimer_start(&task, deadline_ns);
        Ok(Timeout { task, id })
    }

    /// The deadline has passed.
    pub fn expired(&self) -> bool {
        self.task.timeout_id.load(Ordering::Acquire) != self.id
    }
}

impl Drop for Timeout {
    fn drop(&mut self) {
        // The tick disarms an expired timeout itself; only one still armed
        // leaves a stale entry behind.
        if self
            .task
            .timeout_id
            .compare_exchange(self.id, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        crate::trace::tracepoint::timer::trace_hrtimer_cancel(&self.task);
        let mut q = TIMERS.lock();
        q.cancelled += 1;
        // Rebuilding when at least half the heap is stale costs O(1)
        // amortized per cancel and bounds the heap by twice the armed ones.
        if q.cancelled < COMPACT_MIN || q.cancelled * 2 < q.heap.len() {
            return;
        }
        // The tasks looked at are dropped after the lock is released: one
        // may be the last reference to a task that exits meanwhile, whose
        // release must not run under the timer lock. Without the memory
        // for them, compaction waits for the next cancel.
        let mut seen: Vec<Arc<Task>> = Vec::new();
        if seen.try_reserve_exact(q.heap.len()).is_err() {
            return;
        }
        q.heap.retain(|e| match e.task.upgrade() {
            Some(t) => {
                let armed = t.timeout_id.load(Ordering::Acquire) == e.id;
                seen.push(t);
                armed
            }
            None => false,
        });
        q.cancelled = 0;
        drop(q);
        drop(seen);
    }
}

/// Takes a dead task's cancelled timeouts out of the queue and waits for
/// a tick that is expiring one of them on another CPU, so that the last
/// reference to its memory is not one a tick drops in interrupt context
/// but the caller's (`delayed_put_task_struct`, with interrupts on).
/// Cheap when the task has no entry: its weak count and each CPU's
/// [`EXPIRING`] are looked at.
pub fn forget_dead_task(t: &Arc<Task>) {
    if Arc::weak_count(t) != 0 {
        let armed = t.timeout_id.load(Ordering::Acquire);
        let mut q = TIMERS.lock();
        let mut gone = 0;
        // `t` is held, so the entries' weak references dropped here free
        // nothing under the lock.
        q.heap.retain(|e| {
            let its = core::ptr::eq(e.task.as_ptr(), Arc::as_ptr(t));
            gone += usize::from(its && e.id != armed);
            !its
        });
        q.cancelled = q.cancelled.saturating_sub(gone);
    } else {
        // A tick that took the last entry dropped its weak reference after
        // it set EXPIRING (a release): seeing the count it left, see that.
        core::sync::atomic::fence(Ordering::Acquire);
    }
    // No entry of `t` is left, so no tick can take a new reference: wait
    // for the ones taken (never on this CPU, whose tick ran to its end).
    let me = Arc::as_ptr(t).cast_mut();
    for cpu in 0..NR_CPUS {
        while EXPIRING.on(cpu).load(Ordering::Acquire) == me {
            core::hint::spin_loop();
        }
    }
}

/// Whether a tick is expiring a timeout of `t` (holding a reference).
#[cfg(feature = "ktest")]
fn expiring(t: &Arc<Task>) -> bool {
    (0..NR_CPUS).any(|cpu| EXPIRING.on(cpu).load(Ordering::Acquire) == Arc::as_ptr(t).cast_mut())
}

/// Number of timeouts in the queue, including cancelled ones not yet
/// compacted away (for leak checks).
pub fn pending_timers() -> usize {
    TIMERS.lock().heap.len()
}

fn run_timers() {
    let now = ktime_get_ns();
    // One entry per lock hold: waking takes the run-queue lock, and the
    // tick must not allocate.
    loop {
        let Some((task, due)) = take_due(&mut TIMERS.lock(), now) else {
            return;
        };
        if let (Some(t), true) = (&task, due) {
            crate::trace::tracepoint::timer::trace_hrtimer_expire_entry(t, now);
            crate::sched::wake_up(t);
            crate::trace::tracepoint::timer::trace_hrtimer_expire_exit(t);
        }
        put_expired(task);
    }
}

/// Takes the earliest entry due at `now` out of the queue: its task, if
/// it lives (the reference published in [`EXPIRING`] until
/// [`put_expired`]), and whether its wait is still armed (now disarmed).
fn take_due(q: &mut TimerQueue, now: u64) -> Option<(Option<Arc<Task>>, bool)> {
    if !q.heap.peek().is_some_and(|e| e.deadline_ns <= now) {
        return None;
    }
    let e = q.heap.pop()?;
    let task = e.task.upgrade();
    if let Some(t) = &task {
        // Before the entry's weak reference goes (below, a release), which
        // `forget_dead_task` may look at instead of the queue.
        EXPIRING.this().store(Arc::as_ptr(t).cast_mut(), Ordering::Release);
    }
    let due = task.as_ref().is_some_and(|t| {
        t.timeout_id
            .compare_exchange(e.id, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    });
    if !due {
        // A cancelled entry reached its deadline before compaction.
        q.cancelled = q.cancelled.saturating_sub(1);
    }
    drop(e);
    Some((task, due))
}

/// Drops the reference [`take_due`] took, then lets a `forget_dead_task`
/// waiting for it go on: the reference was not the task's last.
fn put_expired(task: Option<Arc<Task>>) {
    drop(task);
    EXPIRING.this().store(core::ptr::null_mut(), Ordering::Release);
}

/// Starts ticks on the boot CPU; `irq` is the virtual timer's interrupt ID.
pub fn init(irq: u32) -> Result<(), crate::errno::Errno> {
    TIMER_IRQ.store(irq, Ordering::Relaxed);
    crate::irq::request_irq(irq, timer_interrupt, "arch_timer")?;
    arch::timer::set_user_access();
    start_tick();
    Ok(())
}

/// Starts ticks on a secondary CPU.
pub fn init_secondary() {
    crate::irq::enable_percpu_irq(TIMER_IRQ.load(Ordering::Relaxed));
    arch::timer::set_user_access();
    start_tick();
}

/// Ticks taken so far on `cpu`.
pub fn ticks(cpu: usize) -> u64 {
    TICKS.on(cpu).load(Ordering::Relaxed)
}

/// `jiffies` at boot: Linux starts the count five minutes before it wraps
/// a 32-bit value (`INITIAL_JIFFIES`), as 64-bit kernels show it.
pub const INITIAL_JIFFIES: u64 = (-300i32 * HZ as i32) as u32 as u64;

/// Linux's `jiffies_64`: ticks since boot, counted from
/// `INITIAL_JIFFIES`. Exported under Linux's name as a data symbol, with
/// `jiffies` an alias of the same storage (linker.ld, as arm64's
/// vmlinux.lds.S), so that `@jiffies` fetch arguments and
/// `/proc/kallsyms` readers find what they find on Linux. Only the
/// timekeeping CPU's tick writes it, with one store ([`do_update_jiffies`]).
#[allow(unsafe_code)] // #[no_mangle]: the symbol name is Linux's ABI for probes
#[allow(non_upper_case_globals)]
#[no_mangle]
pub static jiffies_64: AtomicU64 = AtomicU64::new(INITIAL_JIFFIES);

/// Ticks since boot, counted from `INITIAL_JIFFIES` (Linux's `jiffies`):
/// the value the timekeeping CPU's last tick stored.
pub fn jiffies() -> u64 {
    jiffies_64.load(Ordering::Relaxed)
}

/// Advances `jiffies_64` to the clock (Linux's `tick_do_update_jiffies64`):
/// computed from the time rather than incremented, so that ticks the CPU
/// missed while stalled are caught up, and so that it agrees with
/// [`ns_to_jiffies_floor`]. Runs on CPU 0's tick only, so a plain store is
/// the whole update and a reader never sees a torn or backward value.
fn do_update_jiffies(now_ns: u64) {
    jiffies_64.store(ns_to_jiffies_floor(now_ns), Ordering::Relaxed);
}

/// The first jiffy at or after `ns` since boot (when a timer due then
/// expires).
pub fn ns_to_jiffies(ns: u64) -> u64 {
    INITIAL_JIFFIES.wrapping_add(ns.div_ceil(1_000_000_000 / HZ))
}

/// The jiffy `ns` since boot falls in.
pub fn ns_to_jiffies_floor(ns: u64) -> u64 {
    INITIAL_JIFFIES.wrapping_add(ns / (1_000_000_000 / HZ))
}

/// Nanoseconds since kernel entry.
pub fn ktime_get_ns() -> u64 {
    crate::printk::uptime_ns()
}

/// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC`, in nanoseconds (Linux's
/// `tk->offs_real`): the one place the wall clock lives. It is set at boot
/// from the RTC and by `clock_settime`/`settimeofday`; it never goes below
/// 0, since Linux refuses a wall time before the boot (EINVAL).
///
/// The vDSO's `[vvar]` data page holds a copy: every change goes through
/// `set_realtime_ns`, which updates both under the vsyscall lock.
static REALTIME_OFFSET_NS: AtomicU64 = AtomicU64::new(0);

/// See `REALTIME_OFFSET_NS`.
pub fn realtime_offset_ns() -> u64 {
    REALTIME_OFFSET_NS.load(Ordering::Acquire)
}

/// Nanoseconds since the epoch (`CLOCK_REALTIME`, Linux's
/// `ktime_get_real_ns`).
pub fn ktime_get_real_ns() -> u64 {
    ktime_get_ns().saturating_add(realtime_offset_ns())
}

/// Sets `CLOCK_REALTIME` to `ns` since the epoch (Linux's
/// `do_settimeofday64`); EINVAL for a time before the boot, which would
/// make the boot time negative.
pub fn set_realtime_ns(ns: u64) -> Result<(), Errno> {
    let offset = ns.checked_sub(ktime_get_ns()).ok_or(Errno::EINVAL)?;
    crate::vdso::update_vsyscall(|s| {
        REALTIME_OFFSET_NS.store(offset, Ordering::Release);
        s.offs_real = offset;
    });
    Ok(())
}

/// `CLOCK_MONOTONIC_COARSE` (`real`: `CLOCK_REALTIME_COARSE`): the time
/// at the last tick, as the vDSO reads it from its data page (Linux's
/// `ktime_get_coarse_ts64`); before the vDSO is set up, the time now.
pub fn ktime_get_coarse_ns(real: bool) -> u64 {
    match crate::vdso::vsyscall_snapshot() {
        Some(s) if real => s.coarse_mono.wrapping_add(s.offs_real),
        Some(s) => s.coarse_mono,
        None if real => ktime_get_real_ns(),
        None => ktime_get_ns(),
    }
}

/// Sets `CLOCK_REALTIME` from the PL031 RTC at physical `base`, if the
/// device tree has one (Linux's `rtc_hctosys`).
pub fn init_realtime(rtc_base: Option<u64>) {
    let Some(secs) = rtc_base.and_then(crate::drivers::pl031::read_time) else {
        return;
    };
    if set_realtime_ns(secs.saturating_mul(1_000_000_000)).is_ok() {
        crate::pr_info!("rtc-pl031: setting system clock to {secs} (seconds since the epoch)");
    }
}

/// What `restart_syscall` resumes after a signal without a handler
/// interrupted a call that returned ERESTART_RESTARTBLOCK (Linux's
/// `struct restart_block`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestartBlock {
    /// Nothing to resume: `restart_syscall` returns EINTR.
    None,
    /// A relative `nanosleep`/`clock_nanosleep`: sleep on to the same
    /// deadline, so that a stop and continue does not shorten or lengthen
    /// the sleep.
    Nanosleep {
        /// ns since boot, as `ktime_get_ns`.
        deadline_ns: u64,
        /// Where the time left goes if interrupted again (NULL: nowhere).
        rmtp: crate::uaccess::UserPtr,
    },
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
    fn jiffies_and_jiffies_64_are_one_data_symbol_counting_from_initial_jiffies() {
        let at = &jiffies_64 as *const AtomicU64 as u64;
        let data = crate::kallsyms::data_table();
        for name in ["jiffies", "jiffies_64"] {
            let sym = data
                .lookup_name(name)
                .unwrap_or_else(|| panic!("{name} not in kallsyms"));
            assert_eq!((sym.addr, sym.size), (at, 8), "{name}");
        }
        // The tick keeps it at the clock's count of ticks from
        // INITIAL_JIFFIES: never ahead, and caught up by CPU 0's next
        // tick. (How far behind it is at one instant depends on when the
        // host last ran CPU 0's vCPU: a loaded host stalled it 28 ms, so
        // the catch-up gets a second.)
        let want = ns_to_jiffies_floor(ktime_get_ns());
        let got = jiffies();
        assert!(got <= want, "jiffies {got:#x} ahead of the clock's {want:#x}");
        let caught_up = wait_for_jiffies(want);
        assert!(
            caught_up >= want,
            "jiffies {caught_up:#x} a second after the clock said {want:#x}"
        );
        // And it moves with the clock: 5 ticks is 20 ms at HZ 250.
        let later = wait_for_jiffies(caught_up + 5);
        assert!(
            later >= caught_up + 5,
            "jiffies {caught_up:#x} then {later:#x} a second later"
        );
        assert_eq!(INITIAL_JIFFIES, 0xfffe_db08, "Linux's -300*HZ, wrapped at 32 bits");
    }

    /// Polls `jiffies` until it reaches `target` or a second of the clock
    /// has passed; returns the last value read.
    fn wait_for_jiffies(target: u64) -> u64 {
        let end = ktime_get_ns() + 1_000_000_000;
        loop {
            let now = jiffies();
            if now >= target || ktime_get_ns() > end {
                return now;
            }
            udelay(1_000);
        }
    }

    #[kernel_test]
    fn cancelled_timeouts_do_not_accumulate() {
        let before = pending_timers();
        let far = ktime_get_ns() + 3_600_000_000_000;
        for _ in 0..10_000 {
            let t = Timeout::arm(far).unwrap();
            assert!(!t.expired());
        }
        // Compaction keeps at most as many stale entries as live ones,
        // plus the batch below COMPACT_MIN.
        let after = pending_timers();
        assert!(
            after <= 2 * before + 2 * COMPACT_MIN,
            "{after} timers pending after 10000 cancelled ({before} before)"
        );
    }

    #[kernel_test]
    fn timeout_wakes_and_disarms() {
        let me = crate::sched::current();
        let t = Timeout::arm(ktime_get_ns() + 5_000_000).unwrap();
        while !t.expired() {
            me.set_state(crate::sched::TaskState::Interruptible);
            if !t.expired() {
                crate::sched::schedule();
            }
            me.set_state(crate::sched::TaskState::Running);
        }
        assert_eq!(me.timeout_id.load(Ordering::Acquire), 0);
    }

    /// The task the freeing thread of the test below holds, and its steps.
    static VICTIM: IrqSpinLock<Option<Arc<Task>>> = IrqSpinLock::new(None);
    static FREEING: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    static FREED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

    extern "C" fn never_runs(_: usize) {}

    /// Drops the victim's scheduler reference as a dead task's end does.
    extern "C" fn free_victim(_: usize) {
        let Some(t) = VICTIM.lock().take() else { return };
        FREEING.store(true, Ordering::SeqCst);
        crate::sched::delayed_put_task_struct(t);
        FREED.store(true, Ordering::SeqCst);
    }

    /// The race of a tick expiring a cancelled timeout of a task whose end
    /// runs on another CPU meanwhile, in the order that used to free the
    /// task in interrupt context: the tick takes its reference, the other
    /// CPU drops every other one, the tick drops its own. The end now
    /// waits for the tick, so the memory goes on the other CPU, with
    /// interrupts on.
    #[kernel_test]
    fn a_dead_task_whose_timeout_a_tick_is_expiring_is_freed_after_the_tick_not_by_it() {
        use crate::sched::task::TASKS_FREED_IRQS_OFF;
        let victim = Task::new_kthread(never_runs, 0, "ktest/victim").expect("kthread");
        let weak = Arc::downgrade(&victim);
        let flags = arch::cpu::local_irq_save();
        let me = arch::cpu::cpu_id();
        let Some(other) = crate::smp::online_cpus().find(|&c| c != me) else {
            // One CPU: nothing can run beside its tick.
            arch::cpu::local_irq_restore(flags);
            return;
        };
        let freer = Task::new_kthread(free_victim, 0, "ktest/freer").expect("kthread");
        crate::sched::set_cpus_allowed(&freer, 1 << other);
        FREEING.store(false, Ordering::SeqCst);
        FREED.store(false, Ordering::SeqCst);
        let freed_irqs_off = TASKS_FREED_IRQS_OFF.load(Ordering::SeqCst);
        // A cancelled entry due now, taken as this CPU's tick takes it
        // (interrupts masked, as in the tick).
        let tick_ref = {
            let mut q = TIMERS.lock();
            q.heap.try_reserve(1).expect("memory");
            let id = NEXT_TIMEOUT_ID.fetch_add(1, Ordering::Relaxed);
            q.heap.push(TimerEntry {
                deadline_ns: 0,
                id,
                task: weak.clone(),
            });
            q.cancelled += 1;
            let (task, due) = take_due(&mut q, ktime_get_ns()).expect("the entry is due");
            assert!(!due, "a cancelled entry was found armed");
            task.expect("the task lives")
        };
        assert!(Arc::ptr_eq(&tick_ref, &victim), "the tick took another task's entry");
        assert!(expiring(&tick_ref));
        // Every other reference goes to the other CPU's end of the task.
        *VICTIM.lock() = Some(victim);
        crate::sched::wake_up(&freer);
        let deadline = ktime_get_ns() + 2_000_000_000;
        while !FREEING.load(Ordering::SeqCst) {
            assert!(ktime_get_ns() < deadline, "the freeing thread did not run");
            core::hint::spin_loop();
        }
        // It waits for this tick as long as the tick holds the task.
        let wait_until = ktime_get_ns() + 100_000_000;
        while ktime_get_ns() < wait_until {
            assert!(
                !FREED.load(Ordering::SeqCst),
                "the task's end did not wait for the tick"
            );
            core::hint::spin_loop();
        }
        put_expired(Some(tick_ref));
        assert_eq!(
            TASKS_FREED_IRQS_OFF.load(Ordering::SeqCst),
            freed_irqs_off,
            "the tick freed the task"
        );
        arch::cpu::local_irq_restore(flags);
        while !FREED.load(Ordering::SeqCst) {
            assert!(ktime_get_ns() < deadline, "the task's end never went on");
            crate::sched::wait::sleep_ns(1_000_000).expect("sleep");
        }
        assert_eq!(weak.strong_count(), 0, "the task was not freed");
        assert_eq!(TASKS_FREED_IRQS_OFF.load(Ordering::SeqCst), freed_irqs_off);
    }

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
