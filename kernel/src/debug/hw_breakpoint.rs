//! A user task's debug state (Linux's `thread.debug` and TIF_SINGLESTEP):
//! software step of EL0 (arch/arm64/kernel/debug-monitors.c's
//! `user_enable_single_step` and friends) and the hardware breakpoints and
//! watchpoints a tracer set through NT_ARM_HW_BREAK / NT_ARM_HW_WATCH
//! (arch/arm64/kernel/hw_breakpoint.c), installed in the CPU's debug
//! registers while the task runs.
//!
//! Slot `i` of a regset is debug register `i`: a task's slots are all
//! installed when it is switched in, so no per-CPU slot allocation is
//! needed. A hit only raises SIGTRAP: Linux steps over a hit only for
//! perf's default overflow handler, never for ptrace's, so a tracee
//! resumed at a breakpoint (even with PTRACE_SINGLESTEP) hits it again
//! until its tracer disables the slot, as debuggers expect. The tracer changes this state only while the task is in a
//! ptrace stop; the task installs it when it is switched in and when it
//! leaves the stop (it may never have left its CPU).

use crate::sched::{self, Task};
use crate::signal::{self, SigInfo, SIGTRAP};
use crate::sync::IrqSpinLock;
use arch::hw_breakpoint::{self as hw, DbgReg};
use arch::ptrace::{PtRegs, PSR};
use core::sync::atomic::{AtomicBool, Ordering};
use uapi::hw_breakpoint::{HwSlot, HwSlots, ARM_BREAKPOINT_LOAD, ARM_BREAKPOINT_STORE, MAX_SLOTS};
use uapi::signal::code::TRAP_HWBKPT;

/// Breakpoints and watchpoints of a task.
pub struct HwDebugState {
    /// NT_ARM_HW_BREAK slots (Linux's `hbp_break`).
    pub hbp_break: HwSlots,
    /// NT_ARM_HW_WATCH slots (Linux's `hbp_watch`).
    pub hbp_watch: HwSlots,
}

/// A task's debug state (Linux's `struct debug_info` plus TIF_SINGLESTEP).
pub struct DebugInfo {
    /// PTRACE_SINGLESTEP, or a step over a breakpoint hit, is armed.
    single_step: AtomicBool,
    /// Some slot is armed: the switch hook has work (read without the
    /// lock).
    armed: AtomicBool,
    state: IrqSpinLock<HwDebugState>,
}

impl Default for DebugInfo {
    fn default() -> Self {
        Self::new()
    }
}

impl DebugInfo {
    /// Nothing armed (as Linux's `ptrace_hw_copy_thread` leaves a child).
    pub const fn new() -> DebugInfo {
        DebugInfo {
            single_step: AtomicBool::new(false),
            armed: AtomicBool::new(false),
            state: IrqSpinLock::new(HwDebugState {
                hbp_break: [None; MAX_SLOTS],
                hbp_watch: [None; MAX_SLOTS],
            }),
        }
    }

    /// Whether EL0 software step is armed (TIF_SINGLESTEP).
    pub fn single_step(&self) -> bool {
        self.single_step.load(Ordering::Acquire)
    }

    /// Whether switching to this task has debug registers to set.
    fn active(&self) -> bool {
        self.single_step() || self.armed.load(Ordering::Acquire)
    }

    /// Runs `f` on the breakpoint state; the caller (a tracer) holds the
    /// task in a ptrace stop, and the task installs the result as it
    /// resumes.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut HwDebugState) -> R) -> R {
        let mut st = self.state.lock();
        let r = f(&mut st);
        let any = st
            .hbp_break
            .iter()
            .chain(st.hbp_watch.iter())
            .flatten()
            .any(HwSlot::enabled);
        self.armed.store(any, Ordering::Release);
        r
    }
}

/// This CPU's debug registers hold something of the last task installed.
static INSTALLED: crate::percpu::PerCpu<AtomicBool> =
    crate::percpu::PerCpu::new([const { AtomicBool::new(false) }; crate::percpu::NR_CPUS]);
/// Some breakpoint or watchpoint register of this CPU is enabled: only
/// then must a task without slots clear them. A single-stepped task has
/// none, so each switch to and from it costs one MDSCR_EL1 write instead
/// of a write of every control register (and the ID register reads that
/// bound them).
static SLOTS_INSTALLED: crate::percpu::PerCpu<AtomicBool> =
    crate::percpu::PerCpu::new([const { AtomicBool::new(false) }; crate::percpu::NR_CPUS]);

/// Programs this CPU for `t` (MDSCR_EL1.SS and every implemented slot).
fn install(t: &Task) {
    let step = t.debug.single_step();
    arch::debug_monitors::mdscr_set_ss(step);
    let slots = if t.debug.armed.load(Ordering::Acquire) || SLOTS_INSTALLED.this().load(Ordering::Relaxed) {
        install_slots(t)
    } else {
        false
    };
    arch::barrier::isb();
    SLOTS_INSTALLED.this().store(slots, Ordering::Relaxed);
    INSTALLED.this().store(step || slots, Ordering::Relaxed);
}

/// Writes every implemented slot of this CPU from `t`'s state (disabled
/// where `t` has none); whether any is enabled.
fn install_slots(t: &Task) -> bool {
    let st = t.debug.state.lock();
    let banks = [
        (&st.hbp_break, hw::num_brps(), DbgReg::Bvr, DbgReg::Bcr),
        (&st.hbp_watch, hw::num_wrps(), DbgReg::Wvr, DbgReg::Wcr),
    ];
    let mut any = false;
    for (slots, n, vr, cr) in banks {
        for (i, slot) in slots.iter().enumerate().take(n) {
            match slot.filter(HwSlot::enabled) {
                Some(s) => {
                    any = true;
                    hw::write_wb_reg(vr, i, s.info.address);
                    hw::write_wb_reg(cr, i, u64::from(s.info.ctrl.encode()));
                }
                None => hw::write_wb_reg(cr, i, 0),
            }
        }
    }
    any
}

/// The context-switch hook (Linux's `hw_breakpoint_thread_switch` and the
/// MDSCR_EL1.SS half of `kernel_exit`): `next`'s debug registers replace
/// those of the task before, when either has any.
pub fn thread_switch(next: &Task) {
    if next.debug.active() || INSTALLED.this().load(Ordering::Relaxed) {
        install(next);
    }
}

/// The current task leaves a ptrace stop: what its tracer set takes
/// effect now (it may have stayed on this CPU through the stop, where
/// Linux would still have re-installed its breakpoints).
pub fn ptrace_stop_done(me: &Task) {
    thread_switch(me);
}

/// Sets SPSR.SS in a frame about to return to EL0: one instruction runs,
/// then the step exception (active-not-pending).
fn set_regs_spsr_ss(regs: &mut PtRegs) {
    regs.pstate |= PSR::SS::SET.value;
}

/// Linux's user_enable_single_step for a stopped tracee whose saved frame
/// is `regs`: arms the step; a first arming also rewinds the state machine.
pub fn user_enable_single_step(t: &Task, regs: &mut PtRegs) {
    if !t.debug.single_step.swap(true, Ordering::AcqRel) {
        set_regs_spsr_ss(regs);
    }
}

/// Linux's user_disable_single_step.
pub fn user_disable_single_step(t: &Task) {
    t.debug.single_step.store(false, Ordering::Release);
}

/// Linux's user_rewind_single_step: after a step is reported, or a system
/// call is restarted, the next return to EL0 steps one more instruction if
/// the step stays armed.
pub fn user_rewind_single_step(t: &Task, regs: &mut PtRegs) {
    if t.debug.single_step() {
        set_regs_spsr_ss(regs);
    }
}

/// Linux's user_regs_reset_single_step: PSTATE.SS a tracer or a signal
/// return writes follows the task's step state, never the writer.
pub fn user_regs_reset_single_step(t: &Task, pstate: u64) -> u64 {
    if t.debug.single_step() {
        pstate | PSR::SS::SET.value
    } else {
        pstate & !PSR::SS::SET.value
    }
}

/// Linux's flush_ptrace_hw_breakpoint (at exec): every slot goes.
pub fn flush_ptrace_hw_breakpoint(t: &Task) {
    t.debug.with_state(|st| {
        st.hbp_break = [None; MAX_SLOTS];
        st.hbp_watch = [None; MAX_SLOTS];
    });
    if sched::try_current().is_some_and(|c| core::ptr::eq(&*c, t)) {
        install(t);
    }
}

fn send_hwbkpt(addr: u64) {
    signal::force_sig_fault(SIGTRAP, TRAP_HWBKPT, addr);
}

/// The hardware breakpoint handler (Linux's `breakpoint_handler` with
/// ptrace's trigger, `ptrace_hbptriggered`): SIGTRAP/TRAP_HWBKPT at the
/// instruction if an armed slot matches it. An exception no slot explains
/// is ignored, as on Linux.
pub fn breakpoint_handler(_addr: u64, _esr: u64, regs: &mut PtRegs) -> bool {
    if !regs.user_mode() {
        return false;
    }
    let me = sched::current();
    let pc = regs.pc;
    let hit =
        {
            let st = me.debug.state.lock();
            st.hbp_break.iter().take(hw::num_brps()).flatten().any(|s| {
                s.enabled() && s.info.address == pc & !3 && (1u32 << (pc & 3)) & u32::from(s.info.ctrl.len) != 0
            })
        };
    if hit {
        send_hwbkpt(pc);
    }
    true
}

/// How far `addr` lies from the bytes a watchpoint covers (Linux's
/// get_distance_from_watchpoint); 0 inside.
fn watchpoint_distance(addr: u64, s: &HwSlot) -> u64 {
    let len = s.info.ctrl.len;
    let low = s.info.address + u64::from(len.trailing_zeros());
    let high = s.info.address + 7 - u64::from(len.leading_zeros());
    if addr < low {
        low - addr
    } else {
        addr.saturating_sub(high)
    }
}

/// The watchpoint handler (Linux's `watchpoint_handler`): SIGTRAP/
/// TRAP_HWBKPT with the data address for each armed slot of the access's
/// kind that covers it (or the nearest one: a store pair may report an
/// address below the watched bytes).
pub fn watchpoint_handler(addr: u64, esr: u64, regs: &mut PtRegs) -> bool {
    if !regs.user_mode() {
        return false;
    }
    let me = sched::current();
    // ESR_ELx.WNR (ISS bit 6): a write.
    let kind = if esr & (1 << 6) != 0 {
        ARM_BREAKPOINT_STORE
    } else {
        ARM_BREAKPOINT_LOAD
    };
    let matched = {
        let st = me.debug.state.lock();
        let mut exact = 0;
        let mut nearest: Option<u64> = None;
        for s in st.hbp_watch.iter().take(hw::num_wrps()).flatten() {
            if !s.enabled() || s.info.ctrl.ty & kind == 0 {
                continue;
            }
            let d = watchpoint_distance(addr, s);
            nearest = Some(nearest.map_or(d, |n| n.min(d)));
            if d == 0 {
                exact += 1;
            }
        }
        exact > 0 || nearest.is_some()
    };
    // An exact match reports, or else the closest slot does; one SIGTRAP
    // either way (a second would merge with the first).
    if matched {
        send_hwbkpt(addr);
    }
    true
}

/// The end of Linux's single_step_handler for EL0: SIGTRAP/TRAP_TRACE at
/// the next instruction, and the step stays armed for the next return.
pub fn user_step_report(regs: &mut PtRegs) {
    let me = sched::current();
    signal::force_sig_fault(SIGTRAP, uapi::signal::code::TRAP_TRACE, regs.pc);
    user_rewind_single_step(&me, regs);
}

/// Linux's user_single_step_report: the step over an `svc` stops after
/// the call with a plain SIGTRAP (si_code SI_USER), since the tracer may
/// have rewound the step state during the call's stops.
pub fn user_single_step_report() {
    let me = sched::current();
    signal::send_to_task(
        &me,
        SigInfo {
            signo: SIGTRAP,
            code: uapi::signal::code::SI_USER,
            ..Default::default()
        },
    );
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;
    use uapi::hw_breakpoint::{hw_break_set, DBG_REGS_OFFSET};
    use uapi::ptrace::NT_ARM_HW_WATCH;

    #[kernel_test]
    fn every_cpu_leaves_boot_with_the_os_lock_clear_and_mde_set() {
        let ok = alloc::sync::Arc::new(core::sync::atomic::AtomicUsize::new(0));
        let seen = ok.clone();
        crate::smp::on_each_cpu(move || {
            if !arch::debug_monitors::os_lock_held() && arch::debug_monitors::mde_enabled() {
                seen.fetch_add(1, Ordering::AcqRel);
            }
        });
        assert_eq!(ok.load(Ordering::Acquire), crate::smp::num_online_cpus());
    }

    #[kernel_test]
    fn a_tasks_watchpoint_reaches_the_registers_at_switch_and_goes_at_flush() {
        let me = sched::current();
        let flags = arch::cpu::local_irq_save();
        // Bytes 0..3 of a doubleword, stores, enabled.
        let ctrl: u32 = (0xf << 5) | (2 << 3) | 1;
        let mut image = [0u8; DBG_REGS_OFFSET + 16];
        image[8..16].copy_from_slice(&0x4000_1000u64.to_le_bytes());
        image[16..20].copy_from_slice(&ctrl.to_le_bytes());
        let r = me
            .debug
            .with_state(|st| hw_break_set(&mut st.hbp_watch, NT_ARM_HW_WATCH, hw::num_wrps(), &image));
        assert_eq!(r, Ok(()));
        thread_switch(&me);
        let wvr = hw::read_wb_reg(DbgReg::Wvr, 0);
        let wcr = hw::read_wb_reg(DbgReg::Wcr, 0);
        flush_ptrace_hw_breakpoint(&me);
        let after = hw::read_wb_reg(DbgReg::Wcr, 0);
        arch::cpu::local_irq_restore(flags);
        assert_eq!(wvr, 0x4000_1000);
        // EL0 privilege filled in.
        assert_eq!(wcr, u64::from(ctrl | (2 << 1)));
        assert_eq!(after, 0);
    }
}
