//! The kernel above the CPU: start-up, memory, interrupts, time, SMP,
//! the console, oopses and kallsyms.
//!
//! Unsafe code is denied here except in the few modules that say why they
//! need it (the frame allocator, the heap, MMIO drivers, the test
//! harness); hardware access goes through the `arch` crate.
#![no_std]
// `#[notrace]` builds its function without an ftrace patch site.
#![feature(patchable_function_entry)]
// `#[inline(always)]` on the record path's closures.
#![feature(stmt_expr_attributes)]
#![deny(unsafe_code)]

extern crate alloc;

pub mod btf;
pub mod cputime;
pub mod cred;
pub mod debug;
pub mod drivers;
pub mod errno;
pub mod exec;
pub mod fault;
pub mod fs;
pub mod futex;
pub mod init;
pub mod irq;
pub mod irq_work;
pub mod itimer;
pub mod jump_label;
pub mod kallsyms;
pub mod kprobes;
pub mod ksymtab;
pub mod locking;
pub mod mm;
pub mod notrace;
pub mod oops;
pub mod patching;
pub mod percpu;
pub mod power;
pub mod preempt;
pub mod printk;
pub mod process;
pub mod ptrace;
pub mod random;
pub mod rseq;
pub mod sched;
pub mod signal;
pub mod smp;
pub mod stacktrace;
pub mod stop_machine;
pub mod sync;
pub mod syscalls;
pub mod time;
pub mod trace;
pub mod traps;
pub mod uaccess;
pub mod vdso;
pub mod version;

#[cfg(feature = "ktest")]
pub mod ktest;

#[cfg(feature = "ktest")]
mod selftests;

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    use core::fmt::Write;
    arch::cpu::local_irq_disable();
    crate::printk::set_oops_in_progress();
    let mut out = crate::printk::console_log_sink();
    let _ = writeln!(out, "{info}");
    crate::stacktrace::dump_backtrace(&mut out, panic as *const () as usize, arch::cpu::frame_pointer());
    crate::oops::panic_stop(format_args!("{}", info.message()))
}
