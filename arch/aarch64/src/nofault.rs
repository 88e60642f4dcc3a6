//! Memory accesses that may fault, recovered through the exception table
//! (`__ex_table`): the fault handler finds the faulting instruction there
//! and resumes at its fixup. Linux's `copy_from_kernel_nofault` idea, and
//! the basis of the uaccess helpers.

/// One exception-table entry: relative offsets of a faulting instruction
/// and of where to resume.
#[repr(C)]
pub struct ExEntry {
    insn: i32,
    fixup: i32,
}

impl ExEntry {
    fn insn_addr(&self) -> usize {
        (&self.insn as *const i32 as usize).wrapping_add_signed(self.insn as isize)
    }
    fn fixup_addr(&self) -> usize {
        (&self.fixup as *const i32 as usize).wrapping_add_signed(self.fixup as isize)
    }
}

// SAFETY: the linker places all `__ex_table` entries, each an ExEntry,
// between these two symbols.
crate::linker_table!(
    /// The entries, from the link script.
    fn table() -> [ExEntry] = __start___ex_table..__stop___ex_table
);

/// Where to resume after a fault at `pc`, if `pc` may fault.
pub fn search_exception_table(pc: u64) -> Option<u64> {
    table()
        .iter()
        .find(|e| e.insn_addr() == pc as usize)
        .map(|e| e.fixup_addr() as u64)
}

/// The access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault;

impl From<Fault> for uapi::Errno {
    /// A faulting access to a user address is `EFAULT`, so that `?` on a
    /// nofault access works in a system call.
    fn from(_: Fault) -> uapi::Errno {
        uapi::Errno::EFAULT
    }
}

/// Defines `fn $name(addr) -> Result<u64, Fault>`: one load by `$insn`
/// whose fault resumes, through `__ex_table`, with `Err(Fault)`.
macro_rules! fallible_load {
    ($(#[$m:meta])* $vis:vis fn $name:ident, $insn:literal, $reg:literal) => {
        $(#[$m])*
        $vis fn $name(addr: u64) -> Result<u64, $crate::nofault::Fault> {
            let val: u64;
            let err: u64;
            // SAFETY: a load that changes nothing; a fault is caught by the
            // exception table and resumes at 3 with err = 1.
            unsafe {
                core::arch::asm!(
                    "mov {err}, #0",
                    concat!("2: ", $insn, " ", $reg, ", [{addr}]"),
                    "4:",
                    ".pushsection .text.fixup, \"ax\"",
                    "3: mov {err}, #1",
                    "mov {val}, #0",
                    "b 4b",
                    ".popsection",
                    ".pushsection __ex_table, \"a\"",
                    ".balign 4",
                    ".long 2b - .",
                    ".long 3b - .",
                    ".popsection",
                    addr = in(reg) addr, val = out(reg) val, err = out(reg) err, options(nostack, readonly)
                );
            }
            if err == 0 { Ok(val) } else { Err($crate::nofault::Fault) }
        }
    };
}

/// Defines `unsafe fn $name(addr, val) -> Result<(), Fault>`: one store by
/// `$insn` whose fault resumes, through `__ex_table`, with `Err(Fault)`.
macro_rules! fallible_store {
    ($(#[$m:meta])* $vis:vis unsafe fn $name:ident, $insn:literal, $reg:literal) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Like any raw store: if it succeeds, `addr` was writable memory,
        /// which the caller must be allowed to change.
        $vis unsafe fn $name(addr: u64, val: u64) -> Result<(), $crate::nofault::Fault> {
            let err: u64;
            // SAFETY: a fault is caught by the exception table and resumes
            // at 3 with err = 1; a successful store is the caller's business.
            unsafe {
                core::arch::asm!(
                    "mov {err}, #0",
                    concat!("2: ", $insn, " ", $reg, ", [{addr}]"),
                    "4:",
                    ".pushsection .text.fixup, \"ax\"",
                    "3: mov {err}, #1",
                    "b 4b",
                    ".popsection",
                    ".pushsection __ex_table, \"a\"",
                    ".balign 4",
                    ".long 2b - .",
                    ".long 3b - .",
                    ".popsection",
                    addr = in(reg) addr, val = in(reg) val, err = out(reg) err, options(nostack)
                );
            }
            if err == 0 { Ok(()) } else { Err($crate::nofault::Fault) }
        }
    };
}
pub(crate) use {fallible_load, fallible_store};

fallible_load!(#[inline(never)] fn load_u64, "ldr", "{val}");
fallible_store!(#[inline(never)] unsafe fn store_u32, "str", "{val:w}");

/// Reads the u64 at `addr`, or reports that the access faulted.
#[inline(never)]
pub fn read_u64_nofault(addr: usize) -> Result<u64, Fault> {
    load_u64(addr as u64)
}

/// Writes `val` at `addr`, or reports that the access faulted.
///
/// # Safety
/// Like any raw write: if it succeeds, `addr` was writable memory, which the
/// caller must be allowed to change.
#[inline(never)]
pub unsafe fn write_u32_nofault(addr: usize, val: u32) -> Result<(), Fault> {
    // SAFETY: the caller's contract.
    unsafe { store_u32(addr as u64, val as u64) }
}
