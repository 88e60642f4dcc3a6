//! `preemptirq` events (Linux's `include/trace/events/preemptirq.h`):
//! interrupts masked and unmasked, preemption disabled and enabled, each
//! with the code that did it and that code's caller, as offsets from the
//! kernel's text.
//!
//! They are recorded from the hooks of [`crate::trace::trace_preemptirq`],
//! which cost one NOP while nothing wants them: enabling an event (or
//! attaching a `t:` probe) takes a reference on its hooks' key too. The
//! hooks run one at a time per CPU with interrupts masked, so the
//! recording's own maskings and locks do not record again.

use super::kmem::Sym;
use crate::define_trace_event;
use crate::trace::trace_preemptirq;

/// Linux's `_stext`, which the offsets are taken from: this kernel's text
/// starts at the image's base.
pub const STEXT: usize = arch::memory::KIMAGE_VADDR + arch::memory::TEXT_OFFSET;

/// An address as its offset from [`STEXT`] (kernel text is far within
/// 2 GiB of it; anything else wraps as Linux's `(s32)` cast does).
#[inline(always)]
fn text_offs(ip: usize) -> i32 {
    ip.wrapping_sub(STEXT) as i32
}

/// The address an offset stands for, for `%pS`.
fn text_addr(offs: i32) -> Sym {
    Sym(STEXT.wrapping_add_signed(offs as isize) as u64)
}

/// The print format the four events share (`preemptirq_template`).
macro_rules! preemptirq_printk {
    () => {
        "\"caller=%pS parent=%pS\", (void *)((unsigned long)(_stext) + REC->caller_offs), (void *)((unsigned long)(_stext) + REC->parent_offs)"
    };
}

/// Switches the interrupt-mask hooks on or off for an `irq_*` event.
fn arm_irqflags(on: bool) {
    if on {
        trace_preemptirq::irqflags_hooks_get();
    } else {
        trace_preemptirq::irqflags_hooks_put();
    }
}

/// Switches the preemption hooks on or off for a `preempt_*` event.
fn arm_preempt(on: bool) {
    if on {
        trace_preemptirq::preempt_hooks_get();
    } else {
        trace_preemptirq::preempt_hooks_put();
    }
}

/// The event class all four events share (Linux's `preemptirq_template`):
/// one definition of the fields and the output, one line per event.
macro_rules! preemptirq_event {
    ($(#[$doc:meta])* $name:ident, $trace:ident, $arm:path) => {
        define_trace_event! {
            $(#[$doc])*
            preemptirq / $name,
            fn $trace(ip: usize, parent_ip: usize),
            fields {
                caller_offs: i32 as "s32" = text_offs(ip),
                parent_offs: i32 as "s32" = text_offs(parent_ip),
            },
            printk preemptirq_printk!(),
            print(out, e) {
                write!(out, "caller={} parent={}", text_addr(e.caller_offs), text_addr(e.parent_offs))
            },
            arm $arm
        }
    };
}

preemptirq_event!(
    /// Interrupts were masked at `ip`, in a function called from `parent_ip`.
    irq_disable, trace_irq_disable, arm_irqflags
);
preemptirq_event!(
    /// Interrupts are about to be unmasked at `ip`.
    irq_enable, trace_irq_enable, arm_irqflags
);
preemptirq_event!(
    /// Preemption was disabled (the count left 0) at `ip`.
    preempt_disable, trace_preempt_disable, arm_preempt
);
preemptirq_event!(
    /// Preemption is about to be enabled (the count goes back to 0) at `ip`.
    preempt_enable, trace_preempt_enable, arm_preempt
);

/// Registers the four events (in Linux's order).
pub fn register() -> Result<(), uapi::Errno> {
    irq_disable::register()?;
    irq_enable::register()?;
    preempt_disable::register()?;
    preempt_enable::register()
}
