//! The ptrace requests and waits a debugger makes on its inferior.

use rt::syscall::{check, nr, syscall4};
use rt::Errno;
use uapi::hw_breakpoint::{ArchHwBreakpointCtrl, AARCH64_BREAKPOINT_EL0, ARM_BREAKPOINT_STORE, DBG_REGS_OFFSET};
use uapi::ptrace::nt::*;
use uapi::ptrace::req::*;
use uapi::ptrace::UserPtRegs;
use uapi::signal::{SIGINFO_SIZE, SIGKILL};
use uapi::wait::{WEXITSTATUS, WIFEXITED, WIFSTOPPED, WSTOPSIG, WTERMSIG};

/// `__WALL`: wait for the inferior whatever kind of child it is.
const WALL: usize = uapi::wait::WALL as usize;

/// `si_code` of a hardware breakpoint or watchpoint trap.
pub use uapi::signal::code::TRAP_HWBKPT;

/// How the inferior changed state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Exited(i32),
    Signaled(i32),
    Stopped(i32),
}

fn ptrace(request: i64, pid: i32, addr: usize, data: usize) -> Result<usize, Errno> {
    // SAFETY: every caller passes either no memory or a pointer to a
    // buffer it owns of the size the request writes or reads.
    check(unsafe { syscall4(nr::PTRACE, request as usize, pid as usize, addr, data) })
}

/// `PTRACE_TRACEME`, in the child before it execs the program.
pub fn traceme() -> Result<(), Errno> {
    ptrace(PTRACE_TRACEME, 0, 0, 0).map(drop)
}

/// Waits for the next state change of `pid`.
pub fn wait(pid: i32) -> Result<Event, Errno> {
    let mut status: i32 = 0;
    loop {
        // SAFETY: status is a writable int; no rusage.
        let r = check(unsafe { syscall4(nr::WAIT4, pid as usize, &mut status as *mut i32 as usize, WALL, 0) });
        match r {
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(_) => break,
        }
    }
    Ok(if WIFEXITED(status) {
        Event::Exited(WEXITSTATUS(status))
    } else if WIFSTOPPED(status) {
        Event::Stopped(WSTOPSIG(status))
    } else {
        Event::Signaled(WTERMSIG(status))
    })
}

/// The word at `addr` (`PTRACE_PEEKDATA`).
pub fn peek(pid: i32, addr: u64) -> Result<u64, Errno> {
    let mut word: u64 = 0;
    ptrace(PTRACE_PEEKDATA, pid, addr as usize, &mut word as *mut u64 as usize)?;
    Ok(word)
}

/// Writes the word at `addr` (`PTRACE_POKEDATA`; text is written the same
/// way, through copy-on-write).
pub fn poke(pid: i32, addr: u64, word: u64) -> Result<(), Errno> {
    ptrace(PTRACE_POKEDATA, pid, addr as usize, word as usize).map(drop)
}

/// The 4-byte instruction at `addr` (4-aligned).
pub fn peek_insn(pid: i32, addr: u64) -> Result<u32, Errno> {
    let word = peek(pid, addr & !7)?;
    Ok((word >> ((addr & 4) * 8)) as u32)
}

/// Replaces the 4-byte instruction at `addr` (4-aligned) with `insn`.
pub fn poke_insn(pid: i32, addr: u64, insn: u32) -> Result<(), Errno> {
    let shift = (addr & 4) * 8;
    let word = peek(pid, addr & !7)?;
    let word = (word & !(0xffff_ffff << shift)) | (u64::from(insn) << shift);
    poke(pid, addr & !7, word)
}

fn regset(request: i64, pid: i32, nt: u32, buf: &mut [u8]) -> Result<usize, Errno> {
    let iov = [buf.as_mut_ptr() as usize, buf.len()];
    ptrace(request, pid, nt as usize, iov.as_ptr() as usize)?;
    Ok(iov[1])
}

/// `NT_PRSTATUS`.
pub fn get_regs(pid: i32) -> Result<UserPtRegs, Errno> {
    let mut b = [0u8; UserPtRegs::SIZE];
    regset(PTRACE_GETREGSET, pid, NT_PRSTATUS, &mut b)?;
    Ok(UserPtRegs::from_bytes(&b))
}

/// Writes `NT_PRSTATUS`.
pub fn set_regs(pid: i32, regs: &UserPtRegs) -> Result<(), Errno> {
    let mut b = regs.to_bytes();
    regset(PTRACE_SETREGSET, pid, NT_PRSTATUS, &mut b).map(drop)
}

/// `struct user_hwdebug_state` with one slot: the header, then
/// (addr, ctrl, pad).
const HWDEBUG_ONE: usize = DBG_REGS_OFFSET + 16;

/// How many watchpoints the CPU has (`dbg_info` of `NT_ARM_HW_WATCH`).
pub fn watchpoint_slots(pid: i32) -> Result<u32, Errno> {
    let mut b = [0u8; HWDEBUG_ONE];
    regset(PTRACE_GETREGSET, pid, NT_ARM_HW_WATCH, &mut b)?;
    Ok(u32::from(b[0]))
}

/// `DBGWCR` for an enabled EL0 store watchpoint of the 8 bytes at an
/// 8-aligned address: E, PAC = EL0, LSC = store, BAS = 0xff.
pub fn wcr_store_8() -> u32 {
    ArchHwBreakpointCtrl {
        len: 0xff,
        ty: ARM_BREAKPOINT_STORE,
        privilege: AARCH64_BREAKPOINT_EL0,
        enabled: true,
    }
    .encode()
}

/// Programs watchpoint slot 0 (`ctrl` 0 disables it).
pub fn set_watchpoint(pid: i32, addr: u64, ctrl: u32) -> Result<(), Errno> {
    let mut b = [0u8; HWDEBUG_ONE];
    b[8..16].copy_from_slice(&addr.to_le_bytes());
    b[16..20].copy_from_slice(&ctrl.to_le_bytes());
    regset(PTRACE_SETREGSET, pid, NT_ARM_HW_WATCH, &mut b).map(drop)
}

/// (si_signo, si_code, si_addr) of the signal that stopped `pid`.
pub fn siginfo(pid: i32) -> Result<(i32, i32, u64), Errno> {
    let mut b = [0u8; SIGINFO_SIZE];
    ptrace(PTRACE_GETSIGINFO, pid, 0, b.as_mut_ptr() as usize)?;
    let i32_at = |o: usize| i32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[16..24]);
    Ok((i32_at(0), i32_at(8), u64::from_le_bytes(a)))
}

/// `PTRACE_CONT` delivering `sig` (0 for none).
pub fn cont(pid: i32, sig: i32) -> Result<(), Errno> {
    ptrace(PTRACE_CONT, pid, 0, sig as usize).map(drop)
}

/// `PTRACE_SINGLESTEP` delivering `sig`.
pub fn single_step(pid: i32, sig: i32) -> Result<(), Errno> {
    ptrace(PTRACE_SINGLESTEP, pid, 0, sig as usize).map(drop)
}

/// `PTRACE_DETACH`: the inferior runs on, untraced.
pub fn detach(pid: i32) -> Result<(), Errno> {
    ptrace(PTRACE_DETACH, pid, 0, 0).map(drop)
}

/// SIGKILLs the inferior and reaps it.
pub fn kill(pid: i32) {
    // SAFETY: kill takes no memory.
    unsafe { rt::syscall::syscall2(nr::KILL, pid as usize, SIGKILL as usize) };
    while let Ok(Event::Stopped(_)) = wait(pid) {}
}
