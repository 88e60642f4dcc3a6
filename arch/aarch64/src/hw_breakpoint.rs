//! The hardware breakpoint and watchpoint registers (DBGBVR<n>_EL1,
//! DBGBCR<n>_EL1, DBGWVR<n>_EL1, DBGWCR<n>_EL1) and how many of each this
//! CPU has (ID_AA64DFR0_EL1.BRPs/WRPs), as Linux's
//! `arch/arm64/kernel/hw_breakpoint.c` reaches them. The control values
//! written here are laid out as `debug_monitors::DBGBCR`/`DBGWCR` describe.

use aarch64_cpu::registers::{Readable, ID_AA64DFR0_EL1};

/// The most breakpoints or watchpoints the architecture allows (Linux's
/// ARM_MAX_BRP, ARM_MAX_WRP).
pub const ARM_MAX_BRP: usize = 16;
/// See [`ARM_MAX_BRP`].
pub const ARM_MAX_WRP: usize = 16;

/// Breakpoint registers on this CPU (ID_AA64DFR0_EL1.BRPs + 1).
pub fn num_brps() -> usize {
    ID_AA64DFR0_EL1.read(ID_AA64DFR0_EL1::BRPs) as usize + 1
}

/// Watchpoint registers on this CPU (ID_AA64DFR0_EL1.WRPs + 1).
pub fn num_wrps() -> usize {
    ID_AA64DFR0_EL1.read(ID_AA64DFR0_EL1::WRPs) as usize + 1
}

/// The debug architecture version (ID_AA64DFR0_EL1.DebugVer), Linux's
/// `debug_monitors_arch()`.
pub fn debug_arch() -> u8 {
    ID_AA64DFR0_EL1.read(ID_AA64DFR0_EL1::DebugVer) as u8
}

/// Which bank of debug registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbgReg {
    /// DBGBVR<n>_EL1: breakpoint address.
    Bvr,
    /// DBGBCR<n>_EL1: breakpoint control.
    Bcr,
    /// DBGWVR<n>_EL1: watchpoint address.
    Wvr,
    /// DBGWCR<n>_EL1: watchpoint control.
    Wcr,
}

/// Generates one `msr` per register number: the register's name is part
/// of the instruction, so the number cannot be a run-time operand.
macro_rules! write_dbg {
    ($reg:ident, $n:expr, $val:expr, [$($i:literal),*]) => {
        match $n {
            $(
                // SAFETY: writing a debug register of an implemented slot
                // (the caller checked `n`) only changes which EL0 accesses
                // raise debug exceptions; it touches no memory.
                $i => unsafe {
                    core::arch::asm!(concat!("msr dbg", stringify!($reg), $i, "_el1, {v}"), v = in(reg) $val,
                        options(nomem, nostack, preserves_flags))
                },
            )*
            _ => {}
        }
    };
}

macro_rules! read_dbg {
    ($reg:ident, $n:expr, [$($i:literal),*]) => {
        match $n {
            $(
                $i => {
                    let v: u64;
                    // SAFETY: reading a debug register of an implemented
                    // slot has no side effect.
                    unsafe {
                        core::arch::asm!(concat!("mrs {v}, dbg", stringify!($reg), $i, "_el1"), v = out(reg) v,
                            options(nomem, nostack, preserves_flags))
                    };
                    v
                }
            )*
            _ => 0,
        }
    };
}

/// Writes debug register `n` of `bank`; `n` must be below the CPU's count
/// for that bank ([`num_brps`], [`num_wrps`]) and is ignored otherwise.
pub fn write_wb_reg(bank: DbgReg, n: usize, val: u64) {
    let limit = match bank {
        DbgReg::Bvr | DbgReg::Bcr => num_brps(),
        DbgReg::Wvr | DbgReg::Wcr => num_wrps(),
    };
    if n >= limit {
        return;
    }
    match bank {
        DbgReg::Bvr => write_dbg!(bvr, n, val, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
        DbgReg::Bcr => write_dbg!(bcr, n, val, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
        DbgReg::Wvr => write_dbg!(wvr, n, val, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
        DbgReg::Wcr => write_dbg!(wcr, n, val, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
    }
}

/// Reads debug register `n` of `bank` (0 past the CPU's count).
pub fn read_wb_reg(bank: DbgReg, n: usize) -> u64 {
    let limit = match bank {
        DbgReg::Bvr | DbgReg::Bcr => num_brps(),
        DbgReg::Wvr | DbgReg::Wcr => num_wrps(),
    };
    if n >= limit {
        return 0;
    }
    match bank {
        DbgReg::Bvr => read_dbg!(bvr, n, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
        DbgReg::Bcr => read_dbg!(bcr, n, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
        DbgReg::Wvr => read_dbg!(wvr, n, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
        DbgReg::Wcr => read_dbg!(wcr, n, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
    }
}
