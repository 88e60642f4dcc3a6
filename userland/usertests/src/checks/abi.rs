//! The system call ABI itself: how the kernel reads the number in x8.

use crate::sys::*;
use crate::{check_eq, checks, Check, Outcome};

pub static CHECKS: &[Check] = checks![
    rlimit_structure_encoding,
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

/// `__NR_getrlimit` and `__NR_prlimit64`, stated here as Linux's numbers.
const NR_GETRLIMIT: usize = 163;
const NR_PRLIMIT64: usize = 261;
const RLIMIT_NOFILE: usize = 7;

/// `struct rlimit` is {rlim_cur, rlim_max} as two little-endian u64s, the
/// same through getrlimit and prlimit64; a new soft limit above the hard
/// one is EINVAL.
fn rlimit_structure_encoding() -> Outcome {
    let mut a = [0u64; 2];
    let mut b = [u64::MAX; 2];
    // SAFETY: both point to 16 writable bytes of this frame.
    unsafe {
        check_eq!(
            raw(NR_GETRLIMIT, &[RLIMIT_NOFILE, a.as_mut_ptr() as usize]),
            Ok(0),
            "getrlimit"
        );
        check_eq!(
            raw(NR_PRLIMIT64, &[0, RLIMIT_NOFILE, 0, b.as_mut_ptr() as usize]),
            Ok(0),
            "prlimit64 old"
        );
    }
    check_eq!(a, b, "getrlimit and prlimit64 agree");
    check_eq!(a[0] <= a[1] && a[0] > 0, true, "0 < rlim_cur <= rlim_max: {a:?}");
    let bad = [a[1].saturating_add(1).max(2), a[1].saturating_add(1).max(2) - 1];
    // SAFETY: `bad` is 16 readable bytes.
    let r = unsafe { raw(NR_PRLIMIT64, &[0, RLIMIT_NOFILE, bad.as_ptr() as usize, 0]) };
    check_eq!(r, Err(Errno::EINVAL), "prlimit64 with rlim_cur > rlim_max");
    Ok(())
}
