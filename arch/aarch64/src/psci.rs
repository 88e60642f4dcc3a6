//! PSCI calls (Arm DEN 0022): CPU_ON for bring-up, SYSTEM_OFF, SYSTEM_RESET.

/// How PSCI is reached, from the device tree's `/psci` `method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conduit {
    /// `hvc #0`.
    Hvc,
    /// `smc #0`.
    Smc,
}

/// PSCI function IDs (SMC64 where they take addresses).
mod fid {
    pub const PSCI_VERSION: u32 = 0x8400_0000;
    pub const CPU_ON: u32 = 0xc400_0003;
    pub const SYSTEM_OFF: u32 = 0x8400_0008;
    pub const SYSTEM_RESET: u32 = 0x8400_0009;
}

/// A PSCI error return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsciError(pub i64);

fn call(conduit: Conduit, f: u32, a1: u64, a2: u64, a3: u64) -> i64 {
    let mut x0 = f as u64;
    // SAFETY: a PSCI call is a firmware call with the SMCCC register
    // convention; x0-x3 are results/arguments, x4-x17 may be clobbered.
    unsafe {
        match conduit {
            Conduit::Hvc => {
                core::arch::asm!("hvc #0", inout("x0") x0, inout("x1") a1 => _, inout("x2") a2 => _, inout("x3") a3 => _,
                out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _, out("x10") _, out("x11") _,
                out("x12") _, out("x13") _, out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
            }
            Conduit::Smc => {
                core::arch::asm!("smc #0", inout("x0") x0, inout("x1") a1 => _, inout("x2") a2 => _, inout("x3") a3 => _,
                out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _, out("x10") _, out("x11") _,
                out("x12") _, out("x13") _, out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
            }
        }
    }
    x0 as i64
}

/// The PSCI version as (major, minor).
pub fn version(conduit: Conduit) -> (u16, u16) {
    let v = call(conduit, fid::PSCI_VERSION, 0, 0, 0) as u32;
    ((v >> 16) as u16, v as u16)
}

/// Starts CPU `mpidr` at physical address `entry` with `context` in x0.
pub fn cpu_on(conduit: Conduit, mpidr: u64, entry: u64, context: u64) -> Result<(), PsciError> {
    match call(conduit, fid::CPU_ON, mpidr, entry, context) {
        0 => Ok(()),
        e => Err(PsciError(e)),
    }
}

/// Powers the machine off; returns only if the firmware refused.
pub fn system_off(conduit: Conduit) {
    call(conduit, fid::SYSTEM_OFF, 0, 0, 0);
}

/// Resets the machine; returns only if the firmware refused.
pub fn system_reset(conduit: Conduit) {
    call(conduit, fid::SYSTEM_RESET, 0, 0, 0);
}
