//! What a program asks about the system and itself: sched_getaffinity and
//! sched_setaffinity (the CPU count `nproc` prints), sysinfo, getresuid
//! and getresgid.

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    sched_getaffinity_lists_the_online_cpus,
    sched_setaffinity_pins_and_is_inherited,
    sysinfo_reports_memory_and_uptime,
    getresuid_getresgid_root,
];

const SCHED_SETAFFINITY: usize = 122;
const SCHED_GETAFFINITY: usize = 123;
const SYSINFO: usize = 179;
const GETRESUID: usize = 148;
const GETRESGID: usize = 150;
const GETCPU: usize = 168;

fn getaffinity(pid: i32, len: usize) -> Result<(usize, u64), Errno> {
    let mut mask = [0u64; 2];
    let n = call(SCHED_GETAFFINITY, &[pid as usize, len, mask.as_mut_ptr() as usize])?;
    Ok((n, mask[0]))
}

/// The online CPUs as /sys would count them: from the affinity of PID 1,
/// which nobody pins.
fn online_cpus() -> Result<u64, Errno> {
    getaffinity(1, 8).map(|(_, m)| m)
}

fn sched_getaffinity_lists_the_online_cpus() -> Outcome {
    let (n, mask) = getaffinity(0, 16).ctx("sched_getaffinity")?;
    check_eq!(n, 8, "the kernel's cpumask size");
    ensure!(mask != 0 && mask & 1 == 1, "CPU 0 is in the mask {mask:#x}");
    check_eq!(online_cpus(), Ok(mask), "the same set as PID 1's");
    check_eq!(getaffinity(0, 4), Err(Errno::EINVAL), "a length not a multiple of long");
    check_eq!(getaffinity(0, 0), Err(Errno::EINVAL), "length 0");
    check_eq!(getaffinity(0x3fff_ffff, 8), Err(Errno::ESRCH), "no such task");
    check_eq!(
        call(SCHED_GETAFFINITY, &[0, 8, BAD_LOW]),
        Err(Errno::EFAULT),
        "bad buffer"
    );
    Ok(())
}

fn sched_setaffinity_pins_and_is_inherited() -> Outcome {
    let all = online_cpus().ctx("online")?;
    let last = 63 - all.leading_zeros() as usize;
    let pid = spawn(|| {
        let one: u64 = 1 << last;
        if call(SCHED_SETAFFINITY, &[0, 8, &one as *const u64 as usize]) != Ok(0) {
            return 1;
        }
        // Wherever it ran before, it now runs on that CPU only.
        for _ in 0..20 {
            let mut cpu = 0u32;
            if call(GETCPU, &[&mut cpu as *mut u32 as usize, 0, 0]) != Ok(0) || cpu as usize != last {
                return 2;
            }
            let _ = call(nr::SCHED_YIELD, &[]);
        }
        // A child inherits the mask.
        let inner = spawn(|| match getaffinity(0, 8) {
            Ok((_, m)) if m == 1 << last => 0,
            _ => 3,
        });
        match inner.map(wait_status) {
            Ok(Ok(0)) => 0,
            _ => 4,
        }
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(0),
        "pinned child (1: setaffinity, 2: getcpu, 3-4: inherited)"
    );
    let none: u64 = 0;
    check_eq!(
        call(SCHED_SETAFFINITY, &[0, 8, &none as *const u64 as usize]),
        Err(Errno::EINVAL),
        "an empty mask"
    );
    let beyond: u64 = !all & (1 << 63);
    if beyond != 0 {
        check_eq!(
            call(SCHED_SETAFFINITY, &[0, 8, &beyond as *const u64 as usize]),
            Err(Errno::EINVAL),
            "only offline CPUs"
        );
    }
    Ok(())
}

fn sysinfo_reports_memory_and_uptime() -> Outcome {
    let mut info = [0u8; 112];
    check_eq!(call(SYSINFO, &[info.as_mut_ptr() as usize]), Ok(0), "sysinfo");
    let word = |o: usize| u64::from_le_bytes(info[o..o + 8].try_into().unwrap_or_default());
    let (uptime, total, free) = (word(0), word(32), word(40));
    let procs = u16::from_le_bytes([info[80], info[81]]);
    let unit = u32::from_le_bytes([info[104], info[105], info[106], info[107]]);
    ensure!(uptime >= 1, "uptime {uptime} s");
    ensure!(unit >= 1, "mem_unit {unit}");
    let total = total * u64::from(unit);
    ensure!(total > (64 << 20) && total <= (64 << 30), "totalram {total} bytes");
    ensure!(free * u64::from(unit) < total && free > 0, "freeram {free} of {total}");
    ensure!(procs >= 2, "procs {procs}");
    check_eq!(call(SYSINFO, &[BAD_LOW]), Err(Errno::EFAULT), "bad buffer");
    Ok(())
}

fn getresuid_getresgid_root() -> Outcome {
    for nr in [GETRESUID, GETRESGID] {
        let mut ids = [7u32; 3];
        let p = ids.as_mut_ptr() as usize;
        check_eq!(call(nr, &[p, p + 4, p + 8]), Ok(0), "call {nr}");
        check_eq!(ids, [0, 0, 0], "ids of root (call {nr})");
        check_eq!(
            call(nr, &[p, BAD_LOW, p + 8]),
            Err(Errno::EFAULT),
            "bad pointer (call {nr})"
        );
    }
    Ok(())
}
