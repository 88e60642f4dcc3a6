//! Single-step, hardware breakpoints and watchpoints: the tracee runs
//! small assembly functions whose every instruction the checks know.

use super::*;
use crate::ensure;
use uapi::hw_breakpoint::{
    ArchHwBreakpointCtrl, AARCH64_BREAKPOINT_EL0, ARM_BREAKPOINT_EXECUTE, ARM_BREAKPOINT_STORE, DBG_REGS_OFFSET,
    USER_HWDEBUG_STATE_SIZE,
};
use uapi::signal::code::{TRAP_HWBKPT, TRAP_TRACE};

core::arch::global_asm!(
    ".text",
    ".global ptt_count3",
    ".p2align 3",
    // x0 = 1, 2, 3, one instruction each.
    "ptt_count3:",
    "mov x0, #1",
    "add x0, x0, #1",
    "add x0, x0, #1",
    "ret",
    ".global ptt_getpid_step",
    ".p2align 3",
    // getpid(), its result copied to x1.
    "ptt_getpid_step:",
    "mov x8, #{getpid}",
    "svc #0",
    "mov x1, x0",
    "ret",
    ".global ptt_read_step",
    ".p2align 3",
    // read(x0, x1, x2), its result copied to x1.
    "ptt_read_step:",
    "mov x8, #{read}",
    "svc #0",
    "mov x1, x0",
    "ret",
    ".global ptt_countdown",
    ".p2align 3",
    // Counts x0 down to zero: subs and b.ne per round.
    "ptt_countdown:",
    "subs x0, x0, #1",
    "b.ne ptt_countdown",
    "ret",
    ".global ptt_sig_handler",
    ".p2align 3",
    // A signal handler of one instruction and its rt_sigreturn restorer.
    "ptt_sig_handler:",
    "mov x9, #7",
    "ret",
    ".global ptt_sig_restorer",
    ".p2align 3",
    "ptt_sig_restorer:",
    "mov x8, #{rt_sigreturn}",
    "svc #0",
    getpid = const uapi::syscalls::nr::GETPID,
    read = const uapi::syscalls::nr::READ,
    rt_sigreturn = const uapi::syscalls::nr::RT_SIGRETURN,
);

unsafe extern "C" {
    fn ptt_count3() -> u64;
    fn ptt_getpid_step() -> u64;
    fn ptt_read_step() -> u64;
    fn ptt_countdown();
    fn ptt_sig_handler();
    fn ptt_sig_restorer();
}

fn count3_addr() -> u64 {
    ptt_count3 as *const () as u64
}

fn getpid_step_addr() -> u64 {
    ptt_getpid_step as *const () as u64
}

/// Runs `ptt_count3` (through a pointer the compiler cannot see through)
/// and exits with its 3.
fn count3_tracee() -> i32 {
    let f: unsafe extern "C" fn() -> u64 = core::hint::black_box(ptt_count3);
    // SAFETY: the function only sets x0 and returns.
    unsafe { f() as i32 }
}

/// Points the stopped tracee at `func`, returning to where it stopped.
fn call_in_tracee(pid: i32, func: u64) -> Outcome {
    let mut r = regs(pid)?;
    r.regs[30] = r.pc;
    r.pc = func;
    set_regs(pid, &r)
}

fn singlestep(pid: i32) -> Outcome {
    ptrace(PTRACE_SINGLESTEP, pid, 0, 0).ctx("PTRACE_SINGLESTEP")?;
    expect_wait(pid, stopped(SIGTRAP), "step stop")
}

pub(super) fn singlestep_runs_one_instruction_and_reports_trap_trace() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    call_in_tracee(pid, count3_addr())?;
    for n in 1..=3u64 {
        singlestep(pid)?;
        let si = siginfo(pid)?;
        check_eq!(
            (si.signo, si.code),
            (SIGTRAP as u32, TRAP_TRACE),
            "step {n}: signal and si_code"
        );
        check_eq!(si.addr, count3_addr() + 4 * n, "step {n}: si_addr");
        let r = regs(pid)?;
        check_eq!(r.pc, count3_addr() + 4 * n, "step {n}: pc");
        check_eq!(r.regs[0], n, "step {n}: x0");
    }
    // CONT ends stepping: the tracee runs to its exit.
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

pub(super) fn singlestep_over_svc_stops_after_the_call_with_si_user() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    call_in_tracee(pid, getpid_step_addr())?;
    singlestep(pid)?;
    check_eq!(regs(pid)?.pc, getpid_step_addr() + 4, "first step: pc");
    singlestep(pid)?;
    let si = siginfo(pid)?;
    check_eq!(
        (si.signo, si.code, si.addr),
        (SIGTRAP as u32, SI_USER, 0),
        "step over svc: siginfo"
    );
    let r = regs(pid)?;
    check_eq!(r.pc, getpid_step_addr() + 8, "step over svc: pc");
    check_eq!(r.regs[0], pid as u64, "step over svc: getpid's result");
    // The svc completed the step: the state machine is active-pending, so
    // the next step traps before running anything, at the same pc.
    singlestep(pid)?;
    let si = siginfo(pid)?;
    check_eq!(
        (si.code, si.addr),
        (TRAP_TRACE, getpid_step_addr() + 8),
        "pending step after svc"
    );
    check_eq!(regs(pid)?.pc, getpid_step_addr() + 8, "pending step after svc: pc");
    singlestep(pid)?;
    let si = siginfo(pid)?;
    check_eq!(si.code, TRAP_TRACE, "step after svc: si_code");
    let r = regs(pid)?;
    check_eq!(r.pc, getpid_step_addr() + 12, "step after svc: pc");
    check_eq!(r.regs[1], pid as u64, "step after svc: x1");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// A blocking read stepped into, interrupted by a signal the tracer then
/// suppresses. The interrupted call's exit reports the step (SIGTRAP,
/// SI_USER), then the signal stops; both stops show the call rewound (pc
/// at the svc, x0 its first argument again: arm64's do_signal rewinds
/// before get_signal). With no handler to run, the call restarts under a
/// step armed again (Linux's user_rewind_single_step): the next stop is
/// after the restarted read, which returned, not a pending step at the svc.
pub(super) fn singlestep_into_a_restarted_svc_stops_after_the_restarted_call() -> Outcome {
    let [rd, wr] = rt::fs::pipe2(0).ctx("pipe")?;
    let pid = spawn_traced(|| 0)?;
    let read_step = ptt_read_step as *const () as u64;
    call_in_tracee(pid, read_step)?;
    let mut r = regs(pid)?;
    r.regs[0] = rd as u64;
    r.regs[1] = (r.sp - 64) & !15;
    r.regs[2] = 1;
    set_regs(pid, &r)?;
    singlestep(pid)?;
    check_eq!(regs(pid)?.pc, read_step + 4, "at the svc");
    // Into the svc: the read blocks on the empty pipe until SIGUSR1.
    ptrace(PTRACE_SINGLESTEP, pid, 0, 0).ctx("PTRACE_SINGLESTEP into read")?;
    sys::sleep_ms(50);
    check_eq!(wait(pid, sys::WNOHANG), Ok((0, 0)), "read blocks");
    rt::process::kill(pid, SIGUSR1).ctx("kill SIGUSR1")?;
    expect_wait(pid, stopped(SIGTRAP), "the interrupted call's step report")?;
    check_eq!(siginfo(pid)?.code, SI_USER, "step report: si_code");
    let r = regs(pid)?;
    check_eq!(
        (r.pc, r.regs[0]),
        (read_step + 4, rd as u64),
        "step report: pc and x0 rewound to the svc"
    );
    ptrace(PTRACE_SINGLESTEP, pid, 0, 0).ctx("PTRACE_SINGLESTEP from the report")?;
    expect_wait(pid, stopped(SIGUSR1), "signal-delivery stop")?;
    check_eq!(regs(pid)?.pc, read_step + 4, "signal stop: pc");
    rt::fs::write(wr, b"x").ctx("write the byte")?;
    // SIGUSR1 suppressed: no handler, the read restarts.
    singlestep(pid)?;
    let r = regs(pid)?;
    check_eq!(
        (r.pc, r.regs[0]),
        (read_step + 8, 1),
        "step after the restarted read: pc and read's result"
    );
    let _ = (rt::fs::close(rd), rt::fs::close(wr));
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// A `struct user_hwdebug_state` image holding `slots`.
fn hwdebug_image(slots: &[(u64, u32)]) -> alloc::vec::Vec<u8> {
    let mut b = alloc::vec![0u8; DBG_REGS_OFFSET];
    for (addr, ctrl) in slots {
        b.extend_from_slice(&addr.to_le_bytes());
        b.extend_from_slice(&ctrl.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
    }
    b
}

/// Control word as a debugger writes it: byte mask, type
/// (`ARM_BREAKPOINT_*`), enabled, privilege left for the kernel to fill.
fn hw_ctrl(mask: u8, ty: u8) -> u32 {
    ArchHwBreakpointCtrl {
        len: mask,
        ty,
        privilege: 0,
        enabled: true,
    }
    .encode()
}

/// `ctrl` with the EL0 privilege the kernel fills in.
fn at_el0(ctrl: u32) -> u32 {
    ArchHwBreakpointCtrl {
        privilege: AARCH64_BREAKPOINT_EL0,
        ..ArchHwBreakpointCtrl::decode(ctrl)
    }
    .encode()
}

static WATCHED: AtomicU64 = AtomicU64::new(0);

pub(super) fn hw_regsets_report_slots_and_check_controls() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let mut b = [0u8; USER_HWDEBUG_STATE_SIZE];
    let mut nums = [0usize; 2];
    for (i, nt) in [NT_ARM_HW_BREAK, NT_ARM_HW_WATCH].into_iter().enumerate() {
        let n = getregset(pid, nt, &mut b, USER_HWDEBUG_STATE_SIZE).ctx("GETREGSET hwdebug")?;
        check_eq!(n, USER_HWDEBUG_STATE_SIZE, "regset {nt:#x}: length");
        let info = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        nums[i] = (info & 0xff) as usize;
        ensure!((2..=16).contains(&nums[i]), "regset {nt:#x}: {} slots", nums[i]);
        ensure!(info >> 8 >= 6, "regset {nt:#x}: debug architecture {:#x}", info >> 8);
        ensure!(
            b[8..].iter().all(|&x| x == 0),
            "regset {nt:#x}: slots not clear at start"
        );
    }
    let [nbrp, nwrp] = nums;
    let var = &WATCHED as *const AtomicU64 as u64;
    let bad = [
        (
            NT_ARM_HW_WATCH,
            hwdebug_image(&[(var, hw_ctrl(0xf, ARM_BREAKPOINT_EXECUTE))]),
            Errno::EINVAL,
            "execute type in the watch regset",
        ),
        (
            NT_ARM_HW_BREAK,
            hwdebug_image(&[(count3_addr(), hw_ctrl(0xf, ARM_BREAKPOINT_STORE))]),
            Errno::EINVAL,
            "store type in the break regset",
        ),
        (
            NT_ARM_HW_BREAK,
            hwdebug_image(&[(0xffff_0000_0000_1000, hw_ctrl(0xf, ARM_BREAKPOINT_EXECUTE))]),
            Errno::EINVAL,
            "a kernel address",
        ),
        (
            NT_ARM_HW_WATCH,
            hwdebug_image(&[(var + 1, hw_ctrl(0xff, ARM_BREAKPOINT_STORE))]),
            Errno::EINVAL,
            "eight bytes past the doubleword",
        ),
        (
            NT_ARM_HW_WATCH,
            hwdebug_image(&[(var, hw_ctrl(0b101, ARM_BREAKPOINT_STORE))]),
            Errno::EINVAL,
            "a byte mask with a hole",
        ),
        (
            NT_ARM_HW_WATCH,
            hwdebug_image(&[(var, hw_ctrl(0, ARM_BREAKPOINT_STORE))]),
            Errno::EINVAL,
            "an empty byte mask",
        ),
        (
            NT_ARM_HW_WATCH,
            hwdebug_image(&alloc::vec![(var, 0); nwrp + 1]),
            Errno::ENOSPC,
            "one watchpoint too many",
        ),
        (
            NT_ARM_HW_BREAK,
            hwdebug_image(&alloc::vec![(var & !3, 0); nbrp + 1]),
            Errno::ENOSPC,
            "one breakpoint too many",
        ),
        (
            NT_ARM_HW_WATCH,
            hwdebug_image(&[(var, 0)])[..12].to_vec(),
            Errno::EINVAL,
            "a length ending inside an address",
        ),
    ];
    for (nt, image, errno, what) in bad {
        expect_err(setregset(pid, nt, &image), errno, what)?;
    }
    // Bytes 4..7 of the doubleword, for stores.
    let ctrl = hw_ctrl(0xf0, ARM_BREAKPOINT_STORE);
    check_eq!(
        setregset(pid, NT_ARM_HW_WATCH, &hwdebug_image(&[(var, ctrl)])),
        Ok(DBG_REGS_OFFSET + 16),
        "a watchpoint on bytes 4..7"
    );
    getregset(pid, NT_ARM_HW_WATCH, &mut b, USER_HWDEBUG_STATE_SIZE).ctx("GETREGSET NT_ARM_HW_WATCH")?;
    let slot0 = (le64(&b, 8), u32::from_le_bytes([b[16], b[17], b[18], b[19]]));
    check_eq!(slot0, (var, at_el0(ctrl)), "watch slot 0 read back");
    kill_and_reap(pid);
    Ok(())
}

pub(super) fn hw_breakpoint_stops_with_trap_hwbkpt_and_hits_again_until_disabled() -> Outcome {
    let pid = spawn_traced(count3_tracee)?;
    let at = count3_addr() + 4;
    setregset(
        pid,
        NT_ARM_HW_BREAK,
        &hwdebug_image(&[(at, hw_ctrl(0xf, ARM_BREAKPOINT_EXECUTE))]),
    )
    .ctx("SETREGSET NT_ARM_HW_BREAK")?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP), "breakpoint stop")?;
    let si = siginfo(pid)?;
    check_eq!(
        (si.signo, si.code, si.addr),
        (SIGTRAP as u32, TRAP_HWBKPT, at),
        "breakpoint siginfo"
    );
    let r = regs(pid)?;
    check_eq!((r.pc, r.regs[0]), (at, 1), "pc and x0 at the breakpoint");
    // Resuming re-runs the instruction, which hits again (Linux re-arms a
    // task's breakpoints as it is switched back in), even when stepping.
    for how in [PTRACE_CONT, PTRACE_SINGLESTEP] {
        ptrace(how, pid, 0, 0).ctx("resume")?;
        expect_wait(pid, stopped(SIGTRAP), "hit again")?;
        let si = siginfo(pid)?;
        check_eq!(
            (si.code, si.addr, regs(pid)?.pc),
            (TRAP_HWBKPT, at, at),
            "hit again after request {how}"
        );
    }
    // With the slot disabled, the tracee finishes.
    setregset(pid, NT_ARM_HW_BREAK, &hwdebug_image(&[(at, 0)])).ctx("disable the breakpoint")?;
    cont(pid, 0)?;
    expect_exit(pid, 3)
}

fn store_watched_tracee() -> i32 {
    WATCHED.store(0x55, Ordering::Relaxed);
    WATCHED.load(Ordering::Relaxed) as i32
}

pub(super) fn hw_watchpoint_reports_the_data_address_and_hits_again_until_disabled() -> Outcome {
    let pid = spawn_traced(store_watched_tracee)?;
    let var = &WATCHED as *const AtomicU64 as u64;
    setregset(
        pid,
        NT_ARM_HW_WATCH,
        &hwdebug_image(&[(var, hw_ctrl(0xff, ARM_BREAKPOINT_STORE))]),
    )
    .ctx("SETREGSET NT_ARM_HW_WATCH")?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP), "watchpoint stop")?;
    let si = siginfo(pid)?;
    check_eq!(
        (si.signo, si.code, si.addr),
        (SIGTRAP as u32, TRAP_HWBKPT, var),
        "watchpoint siginfo"
    );
    // Stopped before the store.
    let mut word = 0u64;
    ptrace(PTRACE_PEEKDATA, pid, var as usize, &mut word as *mut u64 as usize).ctx("PEEKDATA")?;
    check_eq!(word, 0, "the watched word at the stop");
    let pc = regs(pid)?.pc;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP), "hit again")?;
    check_eq!(
        (siginfo(pid)?.addr, regs(pid)?.pc),
        (var, pc),
        "hit again: si_addr and pc"
    );
    setregset(pid, NT_ARM_HW_WATCH, &hwdebug_image(&[(var, 0)])).ctx("disable the watchpoint")?;
    cont(pid, 0)?;
    expect_exit(pid, 0x55)
}

/// Installs `ptt_sig_handler` for `sig` (SA_RESTORER with its restorer).
pub(super) fn install_handler(sig: i32) -> Result<(), Errno> {
    const SA_RESTORER: usize = uapi::signal::sa::SA_RESTORER as usize;
    let act: [usize; 4] = [
        ptt_sig_handler as *const () as usize,
        SA_RESTORER,
        ptt_sig_restorer as *const () as usize,
        0,
    ];
    // SAFETY: `act` is a valid arm64 struct sigaction for the call.
    let r = unsafe {
        rt::syscall::syscall4(
            uapi::syscalls::nr::RT_SIGACTION,
            sig as usize,
            act.as_ptr() as usize,
            0,
            8,
        )
    };
    rt::syscall::check(r).map(drop)
}

pub(super) fn singlestep_into_a_signal_handler_stops_at_its_entry() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            if ptrace(PTRACE_TRACEME, 0, 0, 0).is_err() || install_handler(SIGUSR1).is_err() {
                sys::exit_now(90);
            }
            sys::raise(SIGSTOP);
            sys::exit_now(0)
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "first stop")?;
    let handler = ptt_sig_handler as *const () as usize as u64;
    // Stepping while delivering SIGUSR1: the stop comes once the handler's
    // frame is set up, before its first instruction (Linux's
    // signal_delivered -> ptrace_notify(SIGTRAP)).
    ptrace(PTRACE_SINGLESTEP, pid, 0, SIGUSR1 as usize).ctx("PTRACE_SINGLESTEP with SIGUSR1")?;
    expect_wait(pid, stopped(SIGTRAP), "handler entry stop")?;
    let si = siginfo(pid)?;
    check_eq!((si.signo, si.code), (SIGTRAP as u32, SIGTRAP), "handler entry siginfo");
    check_eq!(regs(pid)?.pc, handler, "pc at handler entry");
    singlestep(pid)?;
    check_eq!(siginfo(pid)?.code, TRAP_TRACE, "first handler step: si_code");
    let r = regs(pid)?;
    check_eq!((r.pc, r.regs[9]), (handler + 4, 7), "first handler step: pc and x9");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// Rounds of `ptt_countdown` the long-stepping check runs.
const ROUNDS: u64 = 300;

pub(super) fn singlestep_through_a_loop_stops_at_every_instruction() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let start = ptt_countdown as *const () as u64;
    call_in_tracee(pid, start)?;
    let mut r = regs(pid)?;
    r.regs[0] = ROUNDS;
    let back = r.regs[30];
    set_regs(pid, &r)?;
    // Each round is subs then b.ne; the tracee sleeps in every stop, so
    // it resumes on whichever CPU is free, with its step state following.
    for round in 0..ROUNDS {
        singlestep(pid)?;
        let r = regs(pid)?;
        check_eq!(
            (r.pc, r.regs[0]),
            (start + 4, ROUNDS - round - 1),
            "round {round}: after subs"
        );
        singlestep(pid)?;
        let want = if round + 1 == ROUNDS { start + 8 } else { start };
        check_eq!(regs(pid)?.pc, want, "round {round}: after b.ne");
    }
    singlestep(pid)?;
    check_eq!(regs(pid)?.pc, back, "after ret");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn getpid_77_tracee() -> i32 {
    if sys::syscall_raw(uapi::syscalls::nr::GETPID, 0, 0, 0) == 77 {
        5
    } else {
        6
    }
}

pub(super) fn sysemu_stops_at_entry_and_skips_the_call() -> Outcome {
    let pid = spawn_traced(getpid_77_tracee)?;
    ptrace(PTRACE_SYSEMU, pid, 0, 0).ctx("PTRACE_SYSEMU")?;
    expect_wait(pid, stopped(SIGTRAP), "getpid entry")?;
    check_eq!(
        syscall_nr(pid)?,
        uapi::syscalls::nr::GETPID as i32,
        "call at the first stop"
    );
    let mut r = regs(pid)?;
    check_eq!(r.regs[7], 0, "x7 marks an entry stop");
    r.regs[0] = 77;
    set_regs(pid, &r)?;
    // The call is skipped (no exit stop): the next stop is exit_group's
    // entry, with the result the tracer wrote.
    ptrace(PTRACE_SYSEMU, pid, 0, 0).ctx("PTRACE_SYSEMU")?;
    expect_wait(pid, stopped(SIGTRAP), "exit_group entry")?;
    check_eq!(
        syscall_nr(pid)?,
        uapi::syscalls::nr::EXIT_GROUP as i32,
        "call at the second stop"
    );
    check_eq!(regs(pid)?.regs[0], 5, "exit code argument");
    cont(pid, 0)?;
    expect_exit(pid, 5)
}

pub(super) fn resume_requests_check_the_signal() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    for req in [PTRACE_SINGLESTEP, PTRACE_SYSEMU, PTRACE_SYSEMU_SINGLESTEP] {
        expect_err(ptrace(req, pid, 0, uapi::signal::NSIG + 1), Errno::EIO, "signal 65")?;
    }
    // Still stopped: the failed requests resumed nothing.
    check_eq!(regs(pid).is_ok(), true, "still in its stop");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

pub(super) fn hw_breakpoint_disabled_at_its_hit_lets_a_step_run_the_instruction() -> Outcome {
    let pid = spawn_traced(count3_tracee)?;
    let at = count3_addr() + 4;
    setregset(
        pid,
        NT_ARM_HW_BREAK,
        &hwdebug_image(&[(at, hw_ctrl(0xf, ARM_BREAKPOINT_EXECUTE))]),
    )
    .ctx("SETREGSET NT_ARM_HW_BREAK")?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP), "breakpoint stop")?;
    // What a debugger does to move on: disable, then step.
    setregset(pid, NT_ARM_HW_BREAK, &hwdebug_image(&[(at, 0)])).ctx("disable the breakpoint")?;
    for n in 1..=2u64 {
        singlestep(pid)?;
        let si = siginfo(pid)?;
        let r = regs(pid)?;
        check_eq!(
            (si.code, r.pc, r.regs[0]),
            (TRAP_TRACE, at + 4 * n, n + 1),
            "step {n}: si_code, pc, x0"
        );
    }
    cont(pid, 0)?;
    expect_exit(pid, 3)
}

pub(super) fn detach_after_singlestep_lets_the_tracee_run_freely() -> Outcome {
    let pid = spawn_traced(count3_tracee)?;
    singlestep(pid)?;
    check_eq!(siginfo(pid)?.code, TRAP_TRACE, "the step");
    // A step left armed would trap again and kill the untraced process.
    ptrace(PTRACE_DETACH, pid, 0, 0).ctx("PTRACE_DETACH")?;
    expect_exit(pid, 3)
}
