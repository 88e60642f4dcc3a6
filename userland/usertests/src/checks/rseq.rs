//! Restartable sequences, rseq(2), as Linux 6.12's kernel/rseq.c: the
//! argument checks of registration and unregistration, the CPU numbers
//! the kernel writes into the area, and the abort of a critical section
//! that a signal or a preemption interrupts. Linux's numbers and layouts
//! are stated here independently of `uapi` on purpose.

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};
use core::ptr::{addr_of, addr_of_mut, read_volatile, write_volatile};
use core::sync::atomic::{AtomicBool, Ordering};

pub static CHECKS: &[Check] = checks![
    rseq_registration_checks_and_fills_the_area,
    rseq_cpu_id_follows_sched_setaffinity,
    rseq_signal_aborts_the_critical_section,
    rseq_preemption_aborts_the_critical_section,
    rseq_bad_descriptor_is_sigsegv,
];

const RSEQ: usize = 293;
const SCHED_SETAFFINITY: usize = 122;
const SCHED_GETAFFINITY: usize = 123;
const RSEQ_FLAG_UNREGISTER: usize = 1;
/// glibc's signature on arm64 (`RSEQ_SIG`, a `brk #0x45e0`).
const SIG: u32 = 0xd428_bc00;

/// `struct rseq`, aligned as the ABI asks.
#[repr(C, align(32))]
#[derive(Default)]
struct Rseq {
    cpu_id_start: u32,
    cpu_id: u32,
    rseq_cs: u64,
    flags: u32,
    node_id: u32,
    mm_cid: u32,
    pad: u32,
}

/// `struct rseq_cs`.
#[repr(C, align(32))]
#[derive(Default)]
struct RseqCs {
    version: u32,
    flags: u32,
    start_ip: u64,
    post_commit_offset: u64,
    abort_ip: u64,
}

fn rseq(area: *const Rseq, len: usize, flags: usize, sig: u32) -> Result<usize, Errno> {
    call(RSEQ, &[area as usize, len, flags, sig as usize])
}

/// The fields the kernel writes, read as it left them.
fn ids(area: &Rseq) -> (u32, u32, u64, u32, u32) {
    // SAFETY: reads of a live struct that the kernel writes behind the
    // compiler's back.
    unsafe {
        (
            read_volatile(addr_of!(area.cpu_id_start)),
            read_volatile(addr_of!(area.cpu_id)),
            read_volatile(addr_of!(area.rseq_cs)),
            read_volatile(addr_of!(area.node_id)),
            read_volatile(addr_of!(area.mm_cid)),
        )
    }
}

fn online_cpus() -> u64 {
    let mut mask = [0u64; 2];
    match call(SCHED_GETAFFINITY, &[0, 8, mask.as_mut_ptr() as usize]) {
        Ok(_) => mask[0],
        Err(_) => 1,
    }
}

/// An area that outlives the check: the kernel writes a registered one
/// until the process exits.
fn new_area() -> &'static mut Rseq {
    alloc::boxed::Box::leak(alloc::boxed::Box::default())
}

fn rseq_registration_checks_and_fills_the_area() -> Outcome {
    let area = new_area();
    area.cpu_id = 0xdead;
    area.rseq_cs = 0x1234;
    let other = Rseq::default();
    let p: *const Rseq = area;
    let off = |n: usize| (p as usize + n) as *const Rseq;
    check_eq!(rseq(off(16), 32, 0, SIG), Err(Errno::EINVAL), "misaligned area");
    check_eq!(rseq(p, 16, 0, SIG), Err(Errno::EINVAL), "shorter than 32");
    check_eq!(rseq(p, 32, 2, SIG), Err(Errno::EINVAL), "unknown flag");
    check_eq!(
        rseq(p, 32, RSEQ_FLAG_UNREGISTER, SIG),
        Err(Errno::EINVAL),
        "unregister with nothing registered"
    );
    check_eq!(
        rseq(0xffff_8000_0000_0000usize as *const Rseq, 32, 0, SIG),
        Err(Errno::EFAULT),
        "kernel address"
    );
    check_eq!(rseq(p, 32, 0, SIG), Ok(0), "register");
    let (start, cpu, cs, node, cid) = ids(area);
    let cpus = online_cpus();
    ensure!(
        cpu == start && cpus & (1 << cpu) != 0,
        "cpu_id {cpu}, cpu_id_start {start}"
    );
    check_eq!(cs, 0, "rseq_cs left by a previous user is cleared");
    check_eq!((node, cid), (0, 0), "node_id and mm_cid of a single thread");
    check_eq!(rseq(p, 32, 0, SIG), Err(Errno::EBUSY), "registered twice");
    check_eq!(
        rseq(p, 32, 0, SIG + 1),
        Err(Errno::EPERM),
        "again with another signature"
    );
    check_eq!(rseq(&other, 32, 0, SIG), Err(Errno::EINVAL), "another area");
    check_eq!(rseq(p, 64, 0, SIG), Err(Errno::EINVAL), "another length");
    check_eq!(
        rseq(p, 32, RSEQ_FLAG_UNREGISTER, SIG + 1),
        Err(Errno::EPERM),
        "unregister with another signature"
    );
    check_eq!(
        rseq(p, 64, RSEQ_FLAG_UNREGISTER, SIG),
        Err(Errno::EINVAL),
        "unregister with another length"
    );
    check_eq!(rseq(p, 32, RSEQ_FLAG_UNREGISTER, SIG), Ok(0), "unregister");
    let (start, cpu, _, _, _) = ids(area);
    check_eq!((start, cpu), (0, u32::MAX), "cpu_id_start, cpu_id once unregistered");
    area.cpu_id = 7;
    let _ = call(nr::SCHED_YIELD, &[]);
    check_eq!(ids(area).1, 7, "an unregistered area is left alone");
    Ok(())
}

fn rseq_cpu_id_follows_sched_setaffinity() -> Outcome {
    let area = new_area();
    rseq(area, 32, 0, SIG).ctx("register")?;
    let cpus = online_cpus();
    for cpu in (0..64).filter(|c| cpus & (1 << c) != 0) {
        let one: u64 = 1 << cpu;
        call(SCHED_SETAFFINITY, &[0, 8, &one as *const u64 as usize]).ctx("sched_setaffinity")?;
        let _ = call(nr::SCHED_YIELD, &[]);
        let (start, now, _, _, _) = ids(area);
        check_eq!((start, now), (cpu, cpu), "cpu_id_start, cpu_id after pinning");
    }
    Ok(())
}

/// Runs a critical section that spins until `*stop` is set or `ticks` of
/// the virtual counter have passed; returns whether it was aborted (the
/// kernel sent it to its abort address) rather than completed.
fn critical_section(area: &mut Rseq, desc: &mut RseqCs, stop: &AtomicBool, ticks: u64) -> bool {
    let aborted: u64;
    let deadline = crate::checks::counter::cntvct() + ticks;
    // SAFETY: the asm writes the descriptor's addresses into `desc` and
    // its address into `area.rseq_cs` (both live, exclusively borrowed),
    // reads `stop` and the counter, and branches only to its own labels.
    // The word before the abort label is the signature, never executed.
    unsafe {
        core::arch::asm!(
            "adr {t}, 2f",
            "str {t}, [{desc}, #8]",
            "adr {u}, 3f",
            "sub {u}, {u}, {t}",
            "str {u}, [{desc}, #16]",
            "adr {t}, 5f",
            "str {t}, [{desc}, #24]",
            "str {desc}, [{area}, #8]",
            "2:",
            "ldrb {u:w}, [{stop}]",
            "cbnz {u:w}, 3f",
            "mrs {t}, cntvct_el0",
            "cmp {t}, {deadline}",
            "b.lo 2b",
            "3:",
            "mov {res}, #0",
            "b 6f",
            ".inst 0xd428bc00",
            "5:",
            "mov {res}, #1",
            "6:",
            t = out(reg) _,
            u = out(reg) _,
            res = out(reg) aborted,
            desc = in(reg) desc as *mut RseqCs,
            area = in(reg) area as *mut Rseq,
            stop = in(reg) stop.as_ptr(),
            deadline = in(reg) deadline,
        );
        write_volatile(addr_of_mut!(area.rseq_cs), 0);
    }
    aborted != 0
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn set_stop(_: i32, _: *mut SigInfo, _: *mut UContext) {
    STOP.store(true, Ordering::SeqCst);
}

fn rseq_signal_aborts_the_critical_section() -> Outcome {
    let area = new_area();
    let mut desc = RseqCs::default();
    rseq(area, 32, 0, SIG).ctx("register")?;
    handle(SIGALRM, set_stop, 0, 0).ctx("sigaction")?;
    alarm_ms(20).ctx("setitimer")?;
    // Five seconds of counter at most; the signal comes after 20 ms. A
    // preemption before it also aborts a section (seen on Linux): the
    // next one waits on.
    let mut aborted = false;
    for _ in 0..50 {
        aborted = critical_section(area, &mut desc, &STOP, crate::checks::counter::cntfrq() * 5);
        if STOP.load(Ordering::SeqCst) {
            break;
        }
    }
    ensure!(STOP.load(Ordering::SeqCst), "the handler did not run");
    ensure!(aborted, "the handler returned into the critical section");
    Ok(())
}

fn rseq_preemption_aborts_the_critical_section() -> Outcome {
    // Two processes on one CPU: the spinning one is switched out within
    // its time slice, in its critical section.
    let one: u64 = 1;
    call(SCHED_SETAFFINITY, &[0, 8, &one as *const u64 as usize]).ctx("pin")?;
    let rival = spawn(|| loop {
        core::hint::spin_loop();
    })
    .ctx("fork")?;
    let area = new_area();
    let mut desc = RseqCs::default();
    rseq(area, 32, 0, SIG).ctx("register")?;
    let never = AtomicBool::new(false);
    // Up to 2 s of counter per try: each is preempted long before.
    let aborted = (0..3).any(|_| critical_section(area, &mut desc, &never, crate::checks::counter::cntfrq() * 2));
    let _ = kill(rival, SIGKILL);
    let _ = wait_status(rival);
    ensure!(aborted, "a critical section ran through its preemption");
    Ok(())
}

fn rseq_bad_descriptor_is_sigsegv() -> Outcome {
    let pid = spawn(|| {
        let area = new_area();
        let desc = RseqCs {
            version: 1,
            ..Default::default()
        };
        if rseq(area, 32, 0, SIG).is_err() {
            return 1;
        }
        if handle(SIGUSR1, set_stop, 0, 0).is_err() {
            return 2;
        }
        // SAFETY: a store into the live area.
        unsafe { write_volatile(addr_of_mut!(area.rseq_cs), &desc as *const RseqCs as u64) };
        let _ = kill(getpid(), SIGUSR1);
        3
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(SIGSEGV),
        "status of a child whose rseq_cs has version 1"
    );
    Ok(())
}
