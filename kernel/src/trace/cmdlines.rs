//! Saved command lines (`saved_cmdlines`, `saved_cmdlines_size`): the
//! comm of each pid seen by recorded events, kept in a fixed table so
//! that saving never allocates (Linux's `trace_save_cmdline`, which also
//! gives up when the table is busy).
//!
//! A recorded event does not save anything itself: it only marks its CPU
//! ([`record_cmdline`], Linux's `trace_taskinfo_save`), and the next
//! context switch on that CPU saves the tasks that leave and enter it
//! ([`sched_switch`], as Linux's `probe_sched_switch`), so that the write
//! path takes no lock shared between CPUs. A reader of the saved names
//! first saves its own CPU's pending task ([`find`], [`show`]): it may be
//! the very task that recorded and has not been switched out since.

use crate::percpu::{PerCpu, NR_CPUS};
use crate::sync::IrqSpinLock;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::AtomicBool;
use core::sync::atomic::{AtomicU32, Ordering};
use uapi::Errno;

/// Linux 6.12's default number of entries (its table fills the pages it
/// allocates for 128).
pub const SAVED_CMDLINES_DEFAULT: usize = 6552;
/// The largest size `saved_cmdlines_size` takes (Linux's `PID_MAX_DEFAULT`).
pub const PID_MAX_DEFAULT: usize = 32768;

struct Table {
    /// (pid, comm) by slot; pid 0 is a free slot.
    entries: Vec<(u32, [u8; 16])>,
    /// Next slot to reuse.
    next: usize,
    /// Slot + 1 of each pid (modulo PID_MAX_DEFAULT), 0 for none: Linux's
    /// `map_pid_to_cmdline`, so that saving is not a search.
    map: Vec<u32>,
}

static TABLE: IrqSpinLock<Table> = IrqSpinLock::new(Table {
    entries: Vec::new(),
    next: 0,
    map: Vec::new(),
});

fn pid_index(pid: u32) -> usize {
    pid as usize & (PID_MAX_DEFAULT - 1)
}

/// Makes the table at its default size (outside probe context).
pub fn init() {
    let mut t = TABLE.lock();
    if t.entries.is_empty() {
        t.entries = alloc::vec![(0, [0; 16]); SAVED_CMDLINES_DEFAULT];
        t.map = alloc::vec![0; PID_MAX_DEFAULT];
    }
}

/// Per CPU: the tasks a switch could not save because the table was busy
/// (pid 0: a free slot), saved at this CPU's next switch that gets the
/// table, or by a reader. Linux gives such tasks up until they record
/// again; under emulation a vCPU holding the table may be descheduled by
/// the host for milliseconds, which made that loss common enough to show
/// `<...>` for a task that recorded once and exited.
static UNSAVED: PerCpu<IrqSpinLock<Unsaved>> = PerCpu::new([const { IrqSpinLock::new([(0, [0; 16]); 4]) }; NR_CPUS]);
/// (pid, comm) slots of tasks not saved yet.
type Unsaved = [(u32, [u8; 16]); 4];

/// Some CPU's [`UNSAVED`] may hold a task (readers look only then).
static ANY_UNSAVED: AtomicBool = AtomicBool::new(false);

/// Per CPU: an event was recorded here since the last save (Linux's
/// `trace_taskinfo_save`).
static TASKINFO_SAVE: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

/// Marks this CPU's current task for saving at the next context switch
/// (Linux's `tracing_record_cmdline(current)` from the commit path): one
/// store to this CPU's flag, no lock.
#[inline]
pub fn record_cmdline() {
    record_cmdline_on(crate::percpu::this_cpu());
}

/// [`record_cmdline`] on `cpu`, which must be this CPU.
#[inline(always)]
pub fn record_cmdline_on(cpu: usize) {
    let flag = TASKINFO_SAVE.on(cpu);
    if !flag.load(Ordering::Relaxed) {
        flag.store(true, Ordering::Relaxed);
    }
}

/// The context switch from `prev` to `next` on this CPU (interrupts
/// masked): saves both if an event was recorded here since the last save
/// (Linux's `tracing_record_taskinfo_sched_switch`); the flag stays set if
/// the table was busy, to try again at the next switch.
#[inline]
pub fn sched_switch(prev: &crate::sched::Task, next: &crate::sched::Task) {
    let flag = TASKINFO_SAVE.this();
    if !flag.load(Ordering::Relaxed) {
        return;
    }
    // Linux's probe on sched_switch is there only while options/record-cmd
    // is set (and events are enabled or a tracer records, which their
    // commits checked when they set the flag).
    if !super::options::is_set(super::options::RECORD_CMD) {
        flag.store(false, Ordering::Relaxed);
        return;
    }
    // Interrupts are masked here (in `schedule`): the table's lock is
    // tried once for both tasks, without masking them again.
    let unsaved = UNSAVED.this();
    let Some(mut t) = TABLE.try_lock_irqs_off() else {
        // Kept for later (the flag stays set); a reader draining the
        // slots meanwhile is the only other taker of their lock.
        if let Some(mut u) = unsaved.try_lock_irqs_off() {
            for task in [prev, next] {
                keep_unsaved(&mut u, task);
            }
            ANY_UNSAVED.store(true, Ordering::Release);
        }
        return;
    };
    if let Some(mut u) = unsaved.try_lock_irqs_off() {
        save_unsaved(&mut t, &mut u);
    }
    save_locked(&mut t, prev);
    save_locked(&mut t, next);
    flag.store(false, Ordering::Relaxed);
}

/// Keeps `task` in a CPU's unsaved slots (the oldest replaced when full).
fn keep_unsaved(u: &mut Unsaved, task: &crate::sched::Task) {
    if task.is_idle() {
        return;
    }
    let entry = (task.tid(), task.comm.get());
    // Slots fill in order and are drained all at once: the first that is
    // this task's or free is the one.
    match u.iter_mut().find(|e| e.0 == entry.0 || e.0 == 0) {
        Some(e) => *e = entry,
        None => {
            u.rotate_left(1);
            if let Some(last) = u.last_mut() {
                *last = entry;
            }
        }
    }
}

/// Moves a CPU's unsaved slots into the table.
fn save_unsaved(t: &mut Table, u: &mut Unsaved) {
    for e in u.iter_mut().filter(|e| e.0 != 0) {
        let (pid, comm) = core::mem::take(e);
        save_entry(t, pid, comm);
    }
}

/// Saves this CPU's current task if an event it recorded is not saved yet
/// (for readers: the task reading may be the one that recorded).
fn save_pending_current() {
    if ANY_UNSAVED.swap(false, Ordering::Acquire) {
        let mut t = TABLE.lock();
        for u in UNSAVED.iter() {
            save_unsaved(&mut t, &mut u.lock());
        }
    }
    let irq = arch::cpu::local_irq_save();
    let flag = TASKINFO_SAVE.this();
    if flag.load(Ordering::Relaxed) {
        if let Some(t) = crate::sched::try_current() {
            if save(&t) {
                flag.store(false, Ordering::Relaxed);
            }
        }
    }
    arch::cpu::local_irq_restore(irq);
}

/// Saves `task`'s comm now (never waits, never allocates): false if the
/// table was busy. The idle tasks are not saved (their pid 0 prints as
/// `<idle>`).
pub fn save(task: &crate::sched::Task) -> bool {
    if task.is_idle() {
        return true;
    }
    let Some(mut t) = TABLE.try_lock() else { return false };
    save_locked(&mut t, task);
    true
}

/// [`save`] with the table locked.
fn save_locked(t: &mut Table, task: &crate::sched::Task) {
    if task.is_idle() {
        return;
    }
    save_entry(t, task.tid(), task.comm.get());
}

/// Saves `comm` as `pid`'s (the table locked).
fn save_entry(t: &mut Table, pid: u32, comm: [u8; 16]) {
    if t.entries.is_empty() || t.map.len() != PID_MAX_DEFAULT {
        return;
    }
    let idx = pid_index(pid);
    let known = t.map[idx] as usize;
    if let Some(e) = known.checked_sub(1).and_then(|s| t.entries.get_mut(s)) {
        if e.0 == pid {
            e.1 = comm;
            return;
        }
    }
    let slot = t.next;
    t.next = (slot + 1) % t.entries.len();
    let Some(e) = t.entries.get_mut(slot) else { return };
    if e.0 != 0 && t.map[pid_index(e.0)] as usize == slot + 1 {
        t.map[pid_index(e.0)] = 0;
    }
    *e = (pid, comm);
    t.map[idx] = slot as u32 + 1;
}

fn comm_str(c: &[u8; 16]) -> String {
    let n = c.iter().position(|&b| b == 0).unwrap_or(16);
    String::from_utf8_lossy(&c[..n]).into_owned()
}

/// The comm Linux prints for `pid` (`trace_find_cmdline`): `<idle>` for
/// 0, `<...>` if it was not saved.
pub fn find(pid: i32) -> String {
    if pid == 0 {
        return String::from("<idle>");
    }
    let Ok(pid) = u32::try_from(pid) else {
        return String::from("<...>");
    };
    save_pending_current();
    let t = TABLE.lock();
    let slot = t.map.get(pid_index(pid)).copied().unwrap_or(0) as usize;
    match slot.checked_sub(1).and_then(|s| t.entries.get(s)) {
        Some(e) if e.0 == pid => comm_str(&e.1),
        _ => String::from("<...>"),
    }
}

/// `saved_cmdlines`: `pid comm` lines.
pub fn show() -> String {
    save_pending_current();
    let mut s = String::new();
    for e in TABLE.lock().entries.iter().filter(|e| e.0 != 0) {
        s.push_str(&alloc::format!("{} {}\n", e.0, comm_str(&e.1)));
    }
    s
}

/// `saved_cmdlines_size`'s value.
pub fn size() -> usize {
    TABLE.lock().entries.len()
}

/// Sets the table's size (1..=32768, else EINVAL), emptying it as Linux does.
pub fn resize(n: usize) -> Result<(), Errno> {
    if n == 0 || n > PID_MAX_DEFAULT {
        return Err(Errno::EINVAL);
    }
    let mut fresh = Vec::new();
    fresh.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    fresh.resize(n, (0, [0; 16]));
    let mut map = Vec::new();
    map.try_reserve_exact(PID_MAX_DEFAULT).map_err(|_| Errno::ENOMEM)?;
    map.resize(PID_MAX_DEFAULT, 0);
    let old = {
        let mut t = TABLE.lock();
        t.next = 0;
        (
            core::mem::replace(&mut t.entries, fresh),
            core::mem::replace(&mut t.map, map),
        )
    };
    drop(old);
    Ok(())
}

/// Linux's `tgid_map`: the thread group of each pid below
/// [`PID_MAX_DEFAULT`] seen by an event recorded with `record-tgid`
/// (0: none), made when the option is first set and kept after, as
/// Linux keeps it.
static TGID_MAP: spin::Once<Vec<AtomicU32>> = spin::Once::new();

/// Makes the thread-group table (setting `record-tgid`, task context).
pub fn tgid_init() {
    TGID_MAP.call_once(|| (0..PID_MAX_DEFAULT).map(|_| AtomicU32::new(0)).collect());
}

/// Saves `task`'s thread group (Linux's `trace_save_tgid`; from the write
/// path: one atomic store, nothing if the table is not made yet).
pub fn save_tgid(task: &crate::sched::Task) {
    let Some(map) = TGID_MAP.get() else { return };
    let pid = task.tid();
    // A kernel thread is its own group, as in Linux.
    let tgid = task.process.get().map_or(pid, |p| p.pid);
    if let Some(slot) = map.get(pid as usize) {
        slot.store(tgid, Ordering::Relaxed);
    }
}

/// The thread group saved for `pid` (Linux's `trace_find_tgid`), 0 if none.
pub fn find_tgid(pid: i32) -> u32 {
    let (Some(map), Ok(pid)) = (TGID_MAP.get(), usize::try_from(pid)) else {
        return 0;
    };
    map.get(pid).map_or(0, |t| t.load(Ordering::Relaxed))
}

/// `saved_tgids`: `pid tgid` lines, by pid.
pub fn show_tgids() -> String {
    let mut s = String::new();
    for (pid, t) in TGID_MAP.get().into_iter().flatten().enumerate() {
        let tgid = t.load(Ordering::Relaxed);
        if tgid != 0 {
            s.push_str(&alloc::format!("{pid} {tgid}\n"));
        }
    }
    s
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use crate::sched::{Task, TaskState};
    use ktest_macros::kernel_test;

    extern "C" fn never_runs(_: usize) {}

    #[kernel_test]
    fn a_switch_that_finds_the_table_busy_keeps_its_tasks_for_later() {
        init();
        let t = Task::new_kthread(never_runs, 0, "kt_unsaved").expect("task");
        t.set_state(TaskState::Uninterruptible);
        let me = crate::sched::current();
        let irq = arch::cpu::local_irq_save();
        record_cmdline();
        {
            // The table busy (here, held by this CPU) at the switch.
            let _busy = TABLE.lock();
            sched_switch(&me, &t);
        }
        arch::cpu::local_irq_restore(irq);
        assert!(super::super::options::is_set(super::super::options::RECORD_CMD));
        assert_eq!(find(t.tid() as i32), "kt_unsaved", "kept, and saved for the reader");
    }

    #[kernel_test]
    fn unsaved_slots_keep_the_four_latest_tasks_once_each() {
        let tasks: alloc::vec::Vec<_> = (0..5)
            .map(|i| Task::new_kthread(never_runs, 0, &alloc::format!("kt_slot{i}")).expect("task"))
            .collect();
        let mut u: Unsaved = Default::default();
        for t in tasks.iter().take(3) {
            keep_unsaved(&mut u, t);
        }
        // Again: the same slot, not a second one.
        keep_unsaved(&mut u, &tasks[1]);
        assert_eq!(u.map(|e| e.0), [tasks[0].tid(), tasks[1].tid(), tasks[2].tid(), 0]);
        for t in tasks.iter().skip(3) {
            keep_unsaved(&mut u, t);
        }
        // Full: the oldest gave way.
        assert_eq!(u.map(|e| e.0), [1, 2, 3, 4].map(|i| tasks[i].tid()));
        assert_eq!(&u[3].1[..8], b"kt_slot4");
    }
}
