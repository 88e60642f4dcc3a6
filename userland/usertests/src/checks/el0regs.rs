//! What EL0 sees of the CPU's system registers: Linux emulates user reads
//! of the ID register space (`emulate_mrs`: MIDR_EL1, MPIDR_EL1 as
//! `BIT(31)`, REVIDR_EL1 as 0, and the ID_AA64* registers sanitised to the
//! fields it declares user-visible), and traps the debug communications
//! channel (MDSCR_EL1.TDCC) so that touching it raises SIGILL.

use core::arch::asm;
use core::sync::atomic::Ordering::SeqCst;

use super::signal::{hits, record, FIXUP, FIX_SKIP, REC};
use crate::sys::*;
use crate::{check_eq, checks, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    el0_mrs_of_id_registers_is_emulated,
    el0_id_registers_show_linux_values_on_cortex_a72,
    el0_mrs_outside_the_emulated_space_raises_sigill,
    el0_debug_comms_channel_raises_sigill,
];

/// `mrs` of `S3_0_C0_C<crm>_<op2>` for each listed register: `(crm, op2,
/// value)`; a read that raised SIGILL (skipped by the recording handler)
/// leaves the sentinel 0xdead.
macro_rules! read_id_space {
    ($($crm:literal $op2:literal),* $(,)?) => {
        [$((
            $crm,
            $op2,
            {
                let v: u64;
                // SAFETY: a read of an ID register; the kernel emulates it
                // or raises SIGILL, which the recording handler skips.
                unsafe {
                    asm!(
                        concat!("mov {v}, #0xdead\n", "mrs {v}, S3_0_C0_C", $crm, "_", $op2),
                        v = out(reg) v,
                    )
                };
                v
            },
        )),*]
    };
}

/// Every register of the space Linux emulates (op0 = 3, op1 = 0, CRn = 0,
/// CRm = 0 or 2..=7), with MIDR_EL1, MPIDR_EL1 and REVIDR_EL1 at CRm = 0.
fn read_emulated_space() -> [(&'static str, &'static str, u64); 51] {
    read_id_space!(
        "0" "0", "0" "5", "0" "6",
        "2" "0", "2" "1", "2" "2", "2" "3", "2" "4", "2" "5", "2" "6", "2" "7",
        "3" "0", "3" "1", "3" "2", "3" "3", "3" "4", "3" "5", "3" "6", "3" "7",
        "4" "0", "4" "1", "4" "2", "4" "3", "4" "4", "4" "5", "4" "6", "4" "7",
        "5" "0", "5" "1", "5" "2", "5" "3", "5" "4", "5" "5", "5" "6", "5" "7",
        "6" "0", "6" "1", "6" "2", "6" "3", "6" "4", "6" "5", "6" "6", "6" "7",
        "7" "0", "7" "1", "7" "2", "7" "3", "7" "4", "7" "5", "7" "6", "7" "7",
    )
}

fn value_of(all: &[(&str, &str, u64)], crm: &str, op2: &str) -> u64 {
    all.iter().find(|r| r.0 == crm && r.1 == op2).map_or(0xdead, |r| r.2)
}

fn el0_mrs_of_id_registers_is_emulated() -> Outcome {
    FIXUP.store(FIX_SKIP, SeqCst);
    handle(SIGILL, record, 0, 0).ctx("install")?;
    let all = read_emulated_space();
    check_eq!(hits(), 0, "SIGILLs for reads of the emulated ID space");
    check_eq!(
        value_of(&all, "0", "5"),
        1 << 31,
        "MPIDR_EL1 (only bit 31, no affinity)"
    );
    check_eq!(value_of(&all, "0", "6"), 0, "REVIDR_EL1");
    // MIDR_EL1 is the CPU's own (any value; QEMU's `max` has implementer 0).
    check_eq!(value_of(&all, "0", "0") == 0xdead, false, "MIDR_EL1 was read");
    let pfr0 = value_of(&all, "4", "0");
    // EL0 and EL1 fields are hidden at their safe value 1 (AArch64 only).
    check_eq!(pfr0 & 0xff, 0x11, "ID_AA64PFR0_EL1 {pfr0:#x} EL1:EL0");
    // GIC (27:24) and EL2/EL3 (15:8) are never shown.
    check_eq!(pfr0 & 0x0f00_ff00, 0, "ID_AA64PFR0_EL1 {pfr0:#x} hidden fields");
    let dfr0 = value_of(&all, "5", "0");
    check_eq!(dfr0, 6, "ID_AA64DFR0_EL1 (DebugVer at its safe value, the rest hidden)");
    Ok(())
}

/// The values Linux 6.12 gives EL0 on QEMU's cortex-a72 (r0p3), read on
/// reflinux; other CPUs skip this check.
fn el0_id_registers_show_linux_values_on_cortex_a72() -> Outcome {
    FIXUP.store(FIX_SKIP, SeqCst);
    handle(SIGILL, record, 0, 0).ctx("install")?;
    let all = read_emulated_space();
    if value_of(&all, "0", "0") != 0x410f_d083 {
        return Ok(());
    }
    let want: [(&str, &str, u64); 10] = [
        ("2", "5", 0x11120),         // ID_ISAR5_EL1: AES, SHA1, SHA2, CRC32
        ("3", "0", 0x200),           // MVFR0_EL1: FPDP only
        ("3", "1", 0x1211_1100),     // MVFR1_EL1: the SIMD/FP16 fields
        ("4", "0", 0x11),            // ID_AA64PFR0_EL1: FP, AdvSIMD 0; EL0/EL1 safe
        ("4", "1", 0),               // ID_AA64PFR1_EL1
        ("5", "0", 0x6),             // ID_AA64DFR0_EL1
        ("6", "0", 0x11120),         // ID_AA64ISAR0_EL1: AES, SHA1, SHA2, CRC32
        ("6", "1", 0),               // ID_AA64ISAR1_EL1
        ("7", "0", 0x111_ff00_0000), // ID_AA64MMFR0_EL1: granule fields at safe values
        ("7", "1", 0),               // ID_AA64MMFR1_EL1
    ];
    for (crm, op2, v) in want {
        check_eq!(value_of(&all, crm, op2), v, "S3_0_C0_C{crm}_{op2}");
    }
    for (crm, op2, v) in all {
        if crm != "0" && !want.iter().any(|w| w.0 == crm && w.1 == op2) {
            check_eq!(v, 0, "S3_0_C0_C{crm}_{op2}");
        }
    }
    check_eq!(hits(), 0, "SIGILLs");
    Ok(())
}

/// Reads `$reg` at EL0 and returns where: the kernel must raise SIGILL
/// there, which the recording handler skips.
macro_rules! mrs_at {
    ($reg:literal) => {{
        let at: u64;
        // SAFETY: the read raises SIGILL (skipped by the handler) or
        // writes only the scratch register.
        unsafe { asm!("adr {a}, 1f", concat!("1: mrs {v}, ", $reg), a = out(reg) at, v = out(reg) _) };
        at
    }};
}

/// The SIGILL for the instruction at `at` is the `n`th the handler saw.
fn sigill_at(at: u64, n: usize, what: &str) -> Outcome {
    check_eq!(hits(), n, "SIGILLs after {what}");
    check_eq!(
        (
            REC.signo.load(SeqCst),
            REC.code.load(SeqCst),
            REC.word0.load(SeqCst),
            REC.pc.load(SeqCst)
        ),
        (SIGILL, ILL_ILLOPC, at, at),
        "{what}: (si_signo, si_code, si_addr, uc pc)"
    );
    Ok(())
}

fn el0_mrs_outside_the_emulated_space_raises_sigill() -> Outcome {
    FIXUP.store(FIX_SKIP, SeqCst);
    handle(SIGILL, record, 0, 0).ctx("install")?;
    // CRm = 1: the AArch32 ID_PFR0_EL1, which Linux does not emulate.
    sigill_at(mrs_at!("S3_0_C0_C1_0"), 1, "mrs ID_PFR0_EL1")?;
    // CRm = 0 holds only MIDR, MPIDR and REVIDR for EL0; op2 = 1 is none.
    sigill_at(mrs_at!("S3_0_C0_C0_1"), 2, "mrs S3_0_C0_C0_1")?;
    // Op1 = 1: CCSIDR_EL1.
    sigill_at(mrs_at!("S3_1_C0_C0_0"), 3, "mrs CCSIDR_EL1")?;
    sigill_at(mrs_at!("sctlr_el1"), 4, "mrs SCTLR_EL1")?;
    Ok(())
}

fn el0_debug_comms_channel_raises_sigill() -> Outcome {
    FIXUP.store(FIX_SKIP, SeqCst);
    handle(SIGILL, record, 0, 0).ctx("install")?;
    sigill_at(mrs_at!("mdccsr_el0"), 1, "mrs MDCCSR_EL0")?;
    sigill_at(mrs_at!("dbgdtr_el0"), 2, "mrs DBGDTR_EL0")?;
    let at: u64;
    // SAFETY: the write raises SIGILL, skipped by the handler; were it to
    // run, it would only put a word into the debug channel.
    unsafe { asm!("adr {a}, 1f", "1: msr dbgdtrtx_el0, xzr", a = out(reg) at) };
    sigill_at(at, 3, "msr DBGDTRTX_EL0")?;
    Ok(())
}
