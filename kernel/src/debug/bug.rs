//! `BUG()` and `WARN()` on `BRK #0x800`, with a table (`__bug_table`) that
//! tells which is which and where in the source it is (Linux's
//! `struct bug_entry` and `report_bug`).

use super::HookResult;
use arch::ptrace::PtRegs;
use core::fmt::Write;

/// Flags of a bug entry.
pub const BUGFLAG_WARNING: u32 = 1;

/// Where a BUG/WARN is, emitted by the `bug!`/`warn_on!` macros.
#[repr(C)]
pub struct BugLocation {
    /// Source file.
    pub file: &'static str,
    /// Line.
    pub line: u32,
    /// BUGFLAG_*.
    pub flags: u32,
}

/// One `__bug_table` entry: the BRK's address and its location.
#[repr(C)]
struct BugEntry {
    insn: i32,
    _pad: u32,
    loc: &'static BugLocation,
}

// SAFETY: the link script gathers every `__bug_table` entry, each a
// BugEntry emitted by the macros below, between these symbols.
arch::linker_table!(fn bug_table() -> [BugEntry] = __start___bug_table..__stop___bug_table);

fn find_bug(pc: u64) -> Option<&'static BugLocation> {
    bug_table()
        .iter()
        .find(|e| (&e.insn as *const i32 as usize).wrapping_add_signed(e.insn as isize) == pc as usize)
        .map(|e| e.loc)
}

pub(super) fn bug_handler(regs: &mut PtRegs, esr: u64) -> HookResult {
    let loc = find_bug(regs.pc);
    let mut out = crate::printk::console_log_sink();
    match loc {
        Some(l) if l.flags & BUGFLAG_WARNING != 0 => {
            let cpu = arch::cpu::cpu_id();
            let _ = writeln!(out, "------------[ cut here ]------------");
            let _ = writeln!(
                out,
                "WARNING: CPU: {cpu} PID: 0 at {}:{} {}",
                l.file,
                l.line,
                crate::kallsyms::symbolize(regs.pc as usize)
            );
            crate::oops::show_regs(&mut out, regs);
            crate::stacktrace::dump_backtrace(&mut out, regs.pc as usize, regs.fp() as usize);
            let _ = writeln!(out, "---[ end trace 0000000000000000 ]---");
            WARN_COUNT.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            regs.pc += 4;
            HookResult::Handled
        }
        Some(l) => {
            let _ = writeln!(out, "------------[ cut here ]------------");
            let _ = writeln!(out, "kernel BUG at {}:{}!", l.file, l.line);
            crate::oops::die("Oops - BUG", regs, esr)
        }
        None => crate::oops::die("Oops - BUG", regs, esr),
    }
}

/// Warnings reported so far (for tests).
pub static WARN_COUNT: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// `BRK #0x800` with its `__bug_table` entry pointing at `$loc`.
#[doc(hidden)]
#[macro_export]
macro_rules! __bug_brk {
    ($loc:ident) => {
        #[allow(unsafe_code)]
        // SAFETY: the BRK traps to the BUG hook, which either stops the
        // machine (BUG) or resumes after the BRK (WARN) with all registers
        // intact; the table entry only records addresses.
        unsafe {
            core::arch::asm!(
                "2: brk #0x800",
                ".pushsection __bug_table, \"aw\"",
                ".balign 8",
                ".long 2b - .",
                ".long 0",
                ".quad {loc}",
                ".popsection",
                loc = sym $loc,
                options(nostack)
            );
        }
    };
}

/// Halts with "kernel BUG at file:line!" and an oops.
#[macro_export]
macro_rules! bug {
    () => {{
        static LOC: $crate::debug::bug::BugLocation = $crate::debug::bug::BugLocation {
            file: file!(),
            line: line!(),
            flags: 0,
        };
        $crate::__bug_brk!(LOC);
        unreachable!()
    }};
}

/// If `cond`, prints "WARNING: ... at file:line" with a backtrace, and goes
/// on; evaluates to `cond`.
#[macro_export]
macro_rules! warn_on {
    ($cond:expr) => {{
        let c: bool = $cond;
        if c {
            static LOC: $crate::debug::bug::BugLocation = $crate::debug::bug::BugLocation {
                file: file!(),
                line: line!(),
                flags: $crate::debug::bug::BUGFLAG_WARNING,
            };
            $crate::__bug_brk!(LOC);
        }
        c
    }};
}
