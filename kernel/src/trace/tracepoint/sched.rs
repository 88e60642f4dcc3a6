//! `sched` events (Linux's `include/trace/events/sched.h`).

use super::{task_comm, task_pid, Comm, DataLocStr, DEFAULT_PRIO};
use crate::define_trace_event;
use crate::sched::{Task, TaskState};
use core::sync::atomic::Ordering;
use process_core::WaitWho;

/// `TASK_REPORT_MAX`: the `+` of a preempted task's `R+`.
const TASK_REPORT_MAX: i64 = 0x100;

/// `prev_state` of `sched_switch` (Linux's `__trace_sched_switch_state`):
/// a task switched out while still runnable was preempted or yielded
/// (`R+`: this scheduler does not tell them apart) unless it is an idle
/// task (`R`, as Linux's `schedule_idle`), else the bit of its sleeping or
/// exit state: a dead thread whose process waits to be reaped is `Z`
/// (Linux's `EXIT_ZOMBIE`), one nobody waits for `X`.
pub fn switch_state(prev: &Task) -> i64 {
    match prev.state() {
        TaskState::Running if prev.is_idle() => 0,
        TaskState::Running => TASK_REPORT_MAX,
        TaskState::Dead if prev.process.get().is_some_and(|p| p.is_zombie()) => 0x20,
        TaskState::Interruptible => 0x01,
        TaskState::Uninterruptible => 0x02,
        TaskState::Stopped if prev.ptrace.is_traced() => 0x08,
        TaskState::Stopped => 0x04,
        TaskState::Zombie => 0x20,
        TaskState::Dead => 0x10,
    }
}

/// `prev_state` as `sched_switch`'s `print fmt` shows it: the state
/// letters joined by `|` (`R` for none), `+` when preempted.
pub fn print_state(out: &mut alloc::string::String, state: i64) {
    const LETTERS: [(i64, char); 8] = [
        (0x01, 'S'),
        (0x02, 'D'),
        (0x04, 'T'),
        (0x08, 't'),
        (0x10, 'X'),
        (0x20, 'Z'),
        (0x40, 'P'),
        (0x80, 'I'),
    ];
    let bits = state & 0xff;
    if bits == 0 {
        out.push('R');
    }
    let mut first = true;
    for &(_, l) in LETTERS.iter().filter(|(b, _)| bits & b != 0) {
        if !first {
            out.push('|');
        }
        first = false;
        out.push(l);
    }
    if state & TASK_REPORT_MAX != 0 {
        out.push('+');
    }
}

macro_rules! state_mask {
    () => {
        "((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)"
    };
}

define_trace_event! {
    /// A context switch from `prev` to `next` (in `schedule`).
    sched / sched_switch,
    fn trace_sched_switch(prev: &Task, next: &Task),
    fields {
        prev_comm: Comm as "char" = task_comm(prev),
        prev_pid: i32 as "pid_t" = task_pid(prev),
        prev_prio: i32 as "int" = DEFAULT_PRIO,
        prev_state: i64 as "long" = switch_state(prev),
        next_comm: Comm as "char" = task_comm(next),
        next_pid: i32 as "pid_t" = task_pid(next),
        next_prio: i32 as "int" = DEFAULT_PRIO,
    },
    printk concat!(
        "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", ",
        "REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ", state_mask!(),
        ") ? __print_flags(REC->prev_state & ", state_mask!(),
        ", \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, ",
        "{ 0x00000010, \"X\" }, { 0x00000020, \"Z\" }, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", ",
        "REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" : \"\", ",
        "REC->next_comm, REC->next_pid, REC->next_prio"
    ),
    print(out, e) {
        write!(out, "prev_comm={} prev_pid={} prev_prio={} prev_state=", e.prev_comm, e.prev_pid, e.prev_prio)?;
        super::print_state(out, e.prev_state);
        write!(out, " ==> next_comm={} next_pid={} next_prio={}", e.next_comm, e.next_pid, e.next_prio)
    }
}

/// The fields and format of `sched_wakeup_template`.
macro_rules! wakeup_event {
    ($(#[$doc:meta])* $name:ident, $trace:ident) => {
        define_trace_event! {
            $(#[$doc])*
            sched / $name,
            fn $trace(p: &Task, target_cpu: i32),
            fields {
                comm: Comm as "char" = task_comm(p),
                pid: i32 as "pid_t" = task_pid(p),
                prio: i32 as "int" = DEFAULT_PRIO,
                target_cpu: i32 as "int" = target_cpu,
            },
            printk "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu",
            print(out, e) {
                write!(out, "comm={} pid={} prio={} target_cpu={:03}", e.comm, e.pid, e.prio, e.target_cpu)
            }
        }
    };
}

wakeup_event!(
    /// A task is being woken (before it is made runnable).
    sched_waking,
    trace_sched_waking_raw
);
wakeup_event!(
    /// A task was made runnable.
    sched_wakeup,
    trace_sched_wakeup_raw
);
wakeup_event!(
    /// A new task was made runnable for the first time.
    sched_wakeup_new,
    trace_sched_wakeup_new_raw
);

/// Whether `p` has never run: its wake-up is its first, which Linux
/// records as `sched_wakeup_new` only (`wake_up_new_task` has no
/// `sched_waking`/`sched_wakeup`).
fn is_new(p: &Task) -> bool {
    p.last_cpu.load(Ordering::Relaxed) == u32::MAX
}

/// `sched_waking` of a wake-up of `p` (from `try_to_wake_up`).
#[inline(always)]
pub fn trace_sched_waking(p: &Task) {
    if crate::static_branch_unlikely!(sched_waking::KEY) && !is_new(p) {
        sched_waking::record(p, arch::cpu::cpu_id() as i32);
    }
}

/// `sched_wakeup` of `p`, made runnable (from `try_to_wake_up`).
#[inline(always)]
pub fn trace_sched_wakeup(p: &Task) {
    if crate::static_branch_unlikely!(sched_wakeup::KEY) && !is_new(p) {
        sched_wakeup::record(p, arch::cpu::cpu_id() as i32);
    }
}

/// A new task `p` is about to be woken for the first time (from the fork
/// path).
#[inline(always)]
pub fn trace_sched_wakeup_new(p: &Task) {
    if crate::static_branch_unlikely!(sched_wakeup_new::KEY) {
        sched_wakeup_new::record(p, arch::cpu::cpu_id() as i32);
    }
}

define_trace_event! {
    /// `child` was forked from `parent` (in `kernel_clone`).
    sched / sched_process_fork,
    fn trace_sched_process_fork(parent: &Task, child: &Task),
    fields {
        parent_comm: Comm as "char" = task_comm(parent),
        parent_pid: i32 as "pid_t" = task_pid(parent),
        child_comm: Comm as "char" = task_comm(child),
        child_pid: i32 as "pid_t" = task_pid(child),
    },
    printk "\"comm=%s pid=%d child_comm=%s child_pid=%d\", REC->parent_comm, REC->parent_pid, REC->child_comm, REC->child_pid",
    print(out, e) {
        write!(out, "comm={} pid={} child_comm={} child_pid={}", e.parent_comm, e.parent_pid, e.child_comm, e.child_pid)
    }
}

define_trace_event! {
    /// `p` now runs the program at `filename` (`execve` succeeded).
    sched / sched_process_exec,
    fn trace_sched_process_exec(p: &Task, old_pid: i32, filename: &[u8]),
    fields {
        filename: DataLocStr as "__data_loc char[]" = filename,
        pid: i32 as "pid_t" = task_pid(p),
        old_pid: i32 as "pid_t" = old_pid,
    },
    printk "\"filename=%s pid=%d old_pid=%d\", __get_str(filename), REC->pid, REC->old_pid",
    print(out, e) {
        write!(out, "filename={} pid={} old_pid={}", e.filename, e.pid, e.old_pid)
    }
}

/// The fields and format of `sched_process_template`.
macro_rules! process_event {
    ($(#[$doc:meta])* $name:ident, $trace:ident) => {
        define_trace_event! {
            $(#[$doc])*
            sched / $name,
            fn $trace(p: &Task),
            fields {
                comm: Comm as "char" = task_comm(p),
                pid: i32 as "pid_t" = task_pid(p),
                prio: i32 as "int" = DEFAULT_PRIO,
            },
            printk "\"comm=%s pid=%d prio=%d\", REC->comm, REC->pid, REC->prio",
            print(out, e) {
                write!(out, "comm={} pid={} prio={}", e.comm, e.pid, e.prio)
            }
        }
    };
}

process_event!(
    /// `p` is exiting (in `do_exit`).
    sched_process_exit,
    trace_sched_process_exit
);
process_event!(
    /// `p`'s task is freed.
    sched_process_free,
    trace_sched_process_free
);

define_trace_event! {
    /// The current task waits for `pid` (0: any child) (in `do_wait`).
    sched / sched_process_wait,
    fn trace_sched_process_wait(who: WaitWho),
    fields {
        comm: Comm as "char" = crate::sched::try_current().map_or([0; 16], |t| task_comm(&t)),
        pid: i32 as "pid_t" = match who {
            WaitWho::Any => 0,
            WaitWho::Pid(p) | WaitWho::Pgid(p) => p as i32,
        },
        prio: i32 as "int" = DEFAULT_PRIO,
    },
    printk "\"comm=%s pid=%d prio=%d\", REC->comm, REC->pid, REC->prio",
    print(out, e) {
        write!(out, "comm={} pid={} prio={}", e.comm, e.pid, e.prio)
    }
}

define_trace_event! {
    /// `p` moves from CPU `orig_cpu` to `dest_cpu`.
    sched / sched_migrate_task,
    fn trace_sched_migrate_task(p: &Task, orig_cpu: i32, dest_cpu: i32),
    fields {
        comm: Comm as "char" = task_comm(p),
        pid: i32 as "pid_t" = task_pid(p),
        prio: i32 as "int" = DEFAULT_PRIO,
        orig_cpu: i32 as "int" = orig_cpu,
        dest_cpu: i32 as "int" = dest_cpu,
    },
    printk "\"comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d\", REC->comm, REC->pid, REC->prio, REC->orig_cpu, REC->dest_cpu",
    print(out, e) {
        write!(out, "comm={} pid={} prio={} orig_cpu={} dest_cpu={}", e.comm, e.pid, e.prio, e.orig_cpu, e.dest_cpu)
    }
}

/// `p` runs on `cpu` from now (Linux's `set_task_cpu`): records
/// `sched_migrate_task` when that is another CPU than it last ran on. This
/// kernel's run queue is shared, so a task moves when a CPU picks it.
#[inline(always)]
pub fn set_task_cpu(p: &Task, cpu: usize) {
    let orig = p.last_cpu.swap(cpu as u32, Ordering::Relaxed);
    if crate::static_branch_unlikely!(sched_migrate_task::KEY) && orig != cpu as u32 && orig != u32::MAX {
        sched_migrate_task::record(p, orig as i32, cpu as i32);
    }
}

/// Registers the `sched` events in Linux's order.
pub fn register() -> Result<(), uapi::Errno> {
    sched_process_exec::register()?;
    sched_process_fork::register()?;
    sched_process_wait::register()?;
    sched_process_exit::register()?;
    sched_process_free::register()?;
    sched_migrate_task::register()?;
    sched_switch::register()?;
    sched_wakeup_new::register()?;
    sched_wakeup::register()?;
    sched_waking::register()
}
