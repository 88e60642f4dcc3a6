//! The executing CPU: identity, interrupt masking, idling, per-CPU pointer.

use aarch64_cpu::asm;
use aarch64_cpu::registers::{
    Readable, Writeable, DAIF, ID_AA64ISAR0_EL1, ID_AA64MMFR1_EL1, MIDR_EL1, MPIDR_EL1, TPIDR_EL1,
};
use tock_registers::register_bitfields;

/// Affinity fields of MPIDR_EL1 (Aff3..Aff0), which identify a CPU.
pub fn mpidr() -> u64 {
    let aff = MPIDR_EL1::Aff3::SET + MPIDR_EL1::Aff2::SET + MPIDR_EL1::Aff1::SET + MPIDR_EL1::Aff0::SET;
    MPIDR_EL1.get() & aff.mask()
}

/// MIDR_EL1, the CPU model.
pub fn midr() -> u64 {
    MIDR_EL1.get()
}

/// Saved interrupt mask state, from `local_irq_save`.
#[derive(Clone, Copy, Debug)]
pub struct IrqFlags(u64);

impl IrqFlags {
    /// Whether these flags have IRQs masked (Linux's
    /// `raw_irqs_disabled_flags`).
    #[inline(always)]
    pub fn irqs_disabled(self) -> bool {
        self.0 & (1 << DAIF::I.shift) != 0
    }
}

// The interrupt-mask hooks (Linux's CONFIG_TRACE_IRQFLAGS): the kernel
// defines the key and the two functions; while the key is off, each
// masking and unmasking below costs one NOP.
#[cfg(not(feature = "no_tracepoints"))]
extern "C" {
    /// On while the kernel traces interrupt masking (its latency tracers
    /// and `preemptirq` events): a `jump_label` static key.
    static trace_irqflags_key: [u64; 1];
}
extern "Rust" {
    fn trace_hardirqs_on();
    fn trace_hardirqs_off();
}

/// Whether the kernel's interrupt-mask hooks are on.
#[cfg(not(feature = "no_tracepoints"))]
#[inline(always)]
fn irqflags_hooked() -> bool {
    crate::arch_static_branch!(trace_irqflags_key, default = false, branch = false)
}

/// See above: a kernel built without static-key sites has no hooks.
#[cfg(feature = "no_tracepoints")]
#[inline(always)]
fn irqflags_hooked() -> bool {
    false
}

/// Tells the kernel interrupts were just masked.
#[inline(always)]
fn hook_off() {
    // SAFETY: the kernel defines it as a safe function, callable with
    // interrupts masked from any context.
    unsafe { trace_hardirqs_off() };
}

/// Tells the kernel interrupts are about to be unmasked.
#[inline(always)]
fn hook_on() {
    // SAFETY: as for `trace_hardirqs_off`.
    unsafe { trace_hardirqs_on() };
}

/// Masks IRQs and FIQs on this CPU, returning the previous state, without
/// telling the tracers (Linux's `raw_local_irq_save`: for the tracers
/// themselves and code that runs before them).
#[inline(always)]
pub fn raw_local_irq_save() -> IrqFlags {
    let flags = IrqFlags(DAIF.get());
    // Only a change is written: a write to PSTATE.DAIF is costly under
    // emulation (QEMU ends the translation block), and nested saves, as
    // in the probe and trace paths, find interrupts masked already.
    const IF: u64 = (1 << DAIF::I.shift) | (1 << DAIF::F.shift);
    if flags.0 & IF != IF {
        // SAFETY: masking interrupts is always sound.
        unsafe { core::arch::asm!("msr daifset, #3", options(nomem, nostack)) };
    }
    flags
}

/// Restores the state saved by `raw_local_irq_save`, untraced (nothing
/// written when the state is already that one).
#[inline(always)]
pub fn raw_local_irq_restore(flags: IrqFlags) {
    if DAIF.get() != flags.0 {
        DAIF.set(flags.0);
    }
}

// The tracers hear of maskings that change the state only: code masking
// interrupts outside these functions (ftrace_caller, the exception entry)
// then cannot leave them believing interrupts are masked.

/// Masks IRQs and FIQs on this CPU, returning the previous state.
#[inline(always)]
pub fn local_irq_save() -> IrqFlags {
    let flags = raw_local_irq_save();
    if irqflags_hooked() && !flags.irqs_disabled() {
        hook_off();
    }
    flags
}

/// Restores the state saved by `local_irq_save` (the tracers hear of an
/// unmasking before it happens, of a masking after, as in Linux).
#[inline(always)]
pub fn local_irq_restore(flags: IrqFlags) {
    if irqflags_hooked() {
        let was_masked = irqs_disabled();
        if flags.irqs_disabled() {
            raw_local_irq_restore(flags);
            if !was_masked {
                hook_off();
            }
        } else {
            if was_masked {
                hook_on();
            }
            raw_local_irq_restore(flags);
        }
    } else {
        raw_local_irq_restore(flags);
    }
}

/// Unmasks IRQs on this CPU.
#[inline(always)]
pub fn local_irq_enable() {
    if irqflags_hooked() && irqs_disabled() {
        hook_on();
    }
    // SAFETY: handlers are installed before any caller unmasks interrupts.
    unsafe { core::arch::asm!("msr daifclr, #3", options(nomem, nostack)) };
}

/// Unmasks IRQs on this CPU, untraced (Linux's `raw_local_irq_enable`:
/// for paths that tell the tracers themselves, or need not).
#[inline(always)]
pub fn raw_local_irq_enable() {
    // SAFETY: as for `local_irq_enable`.
    unsafe { core::arch::asm!("msr daifclr, #3", options(nomem, nostack)) };
}

/// Masks IRQs on this CPU.
#[inline(always)]
pub fn local_irq_disable() {
    if irqflags_hooked() {
        let was_masked = irqs_disabled();
        raw_local_irq_disable();
        if !was_masked {
            hook_off();
        }
    } else {
        raw_local_irq_disable();
    }
}

/// Masks every exception (debug, SError, IRQ, FIQ) on this CPU, untraced
/// (Linux's `local_daif_mask`), as the return to user mode wants.
#[inline(always)]
pub fn local_daif_mask() {
    // SAFETY: masking exceptions is always sound. Not `nomem`: no memory
    // access may move before it (the exit work reads its flags masked).
    unsafe { core::arch::asm!("msr daifset, #0xf", options(nostack)) };
}

/// Masks IRQs on this CPU, untraced (Linux's `raw_local_irq_disable`).
#[inline(always)]
pub fn raw_local_irq_disable() {
    // SAFETY: masking interrupts is always sound.
    unsafe { core::arch::asm!("msr daifset, #3", options(nomem, nostack)) };
}

/// Whether IRQs are masked on this CPU. Always inline (Linux's
/// `arch_irqs_disabled` is a static inline): out of line it was a call with
/// a patch site for one `mrs`, on every lock and return to user.
#[inline(always)]
pub fn irqs_disabled() -> bool {
    DAIF.is_set(DAIF::I)
}

/// Waits for an interrupt.
#[inline(always)]
pub fn wfi() {
    asm::wfi();
}

/// Waits for an event.
#[inline(always)]
pub fn wfe() {
    asm::wfe();
}

/// Signals an event to all CPUs.
#[inline(always)]
pub fn sev() {
    asm::sev();
}

/// Stops this CPU for good: interrupts masked, waiting forever.
pub fn halt() -> ! {
    raw_local_irq_disable();
    loop {
        asm::wfi();
    }
}

/// Sets this CPU's logical number, read back by `cpu_id`.
pub fn set_cpu_id(id: usize) {
    TPIDR_EL1.set(id as u64);
}

/// This CPU's logical number (0 = the boot CPU).
#[inline(always)]
pub fn cpu_id() -> usize {
    TPIDR_EL1.get() as usize
}

/// The current frame pointer (x29), for backtraces of the running code.
#[inline(always)]
pub fn frame_pointer() -> usize {
    let fp: usize;
    // SAFETY: reads a register.
    unsafe { core::arch::asm!("mov {}, x29", out(reg) fp, options(nomem, nostack)) };
    fp
}

/// The current stack pointer.
#[inline(always)]
pub fn stack_pointer() -> usize {
    let sp: usize;
    // SAFETY: reads a register.
    unsafe { core::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack)) };
    sp
}

/// ID_AA64ISAR0_EL1: the instruction-set extensions (crypto, CRC32, ...).
pub fn id_aa64isar0() -> u64 {
    ID_AA64ISAR0_EL1.get()
}

/// Turns on Privileged Access Never if the CPU has it (ARMv8.1
/// FEAT_PAN): EL1 then faults on any access to EL0-accessible memory
/// except through LDTR/STTR (which uaccess uses), and SCTLR_EL1.SPAN = 0
/// sets PAN again on every exception entry. Returns whether it is on.
pub fn enable_pan() -> bool {
    if ID_AA64MMFR1_EL1.read(ID_AA64MMFR1_EL1::PAN) == 0 {
        return false;
    }
    // SAFETY: clearing SPAN only makes exception entry set PSTATE.PAN;
    // setting PAN only restricts EL1 accesses to user memory, which the
    // kernel makes only with LDTR/STTR.
    unsafe {
        core::arch::asm!(
            "mrs {t}, sctlr_el1",
            "bic {t}, {t}, {span}",
            "msr sctlr_el1, {t}",
            "isb",
            ".arch_extension pan",
            "msr pan, #1",
            "isb",
            t = out(reg) _,
            span = in(reg) SCTLR_EL1_EXT::SPAN::SET.value,
            options(nostack)
        )
    };
    true
}

register_bitfields! {u64,
    /// SCTLR_EL1 fields that aarch64-cpu's `SCTLR_EL1` lacks: RES1 in
    /// ARMv8.0, each a control of a later extension (ARM ARM D17.2.118).
    pub SCTLR_EL1_EXT [
        /// Load/store multiple atomicity (FEAT_LSMAOC); 1 = as ARMv8.0.
        LSMAOE OFFSET(29) NUMBITS(1) [],
        /// No trap of load/store multiple to Device memory; 1 = as ARMv8.0.
        NTLSMD OFFSET(28) NUMBITS(1) [],
        /// Leave PSTATE.PAN unchanged on exception entry (FEAT_PAN);
        /// 0 = set PAN on every entry to EL1.
        SPAN OFFSET(23) NUMBITS(1) [],
        /// Exception entry is context-synchronizing (FEAT_ExS); 1 = as ARMv8.0.
        EIS OFFSET(22) NUMBITS(1) [],
        /// Trap EL0 access to SCXTNUM_EL0 (FEAT_CSV2_2); 1 = as ARMv8.0.
        TSCXT OFFSET(20) NUMBITS(1) [],
        /// Exception exit is context-synchronizing (FEAT_ExS); 1 = as ARMv8.0.
        EOS OFFSET(11) NUMBITS(1) []
    ]
}
