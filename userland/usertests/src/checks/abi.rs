//! The system call ABI itself: how the kernel reads the number in x8.

use crate::sys::*;
use crate::{check_eq, checks, Check, Outcome};

pub static CHECKS: &[Check] = checks![
    syscall_number_is_low_32_bits_of_x8,
    syscall_number_out_of_range_is_enosys
];

/// Linux reads the number as an int (`scno = regs->regs[8]` in
/// el0_svc_common), so bits 63..32 of x8 do not select another call.
fn syscall_number_is_low_32_bits_of_x8() -> Outcome {
    let pid = call(nr::GETPID, &[]);
    check_eq!(call((1 << 32) | nr::GETPID, &[]), pid, "x8 = (1 << 32) | __NR_getpid");
    let ppid = call(nr::GETPPID, &[]);
    check_eq!(
        call(0xffff_ffff_0000_0000 | nr::GETPPID, &[]),
        ppid,
        "x8 = 0xffffffff00000000 | __NR_getppid"
    );
    Ok(())
}

/// Numbers past the table, negative as an int or not, fail with ENOSYS
/// whatever the upper half of x8 holds.
fn syscall_number_out_of_range_is_enosys() -> Outcome {
    check_eq!(
        call(0xffff_ffff, &[]),
        Err(Errno::ENOSYS),
        "x8 = 0xffffffff (-1 as an int)"
    );
    check_eq!(call(0x8000_0000, &[]), Err(Errno::ENOSYS), "x8 = 0x80000000");
    check_eq!(
        call((1 << 32) | 100_000, &[]),
        Err(Errno::ENOSYS),
        "x8 = (1 << 32) | 100000"
    );
    Ok(())
}
