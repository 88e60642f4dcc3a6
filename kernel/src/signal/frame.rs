//! The arm64 signal frame (`struct rt_sigframe` of
//! arch/arm64/kernel/signal.c): `siginfo_t`, then a `ucontext` whose
//! `sigcontext` holds x0-x30, sp, pc, pstate and, in its reserved area, an
//! `fpsimd_context` record with V0-V31, FPSR and FPCR, then a terminator.
//! Above the frame sits a frame record {x29, x30} for unwinders.

use super::{sa, SigAction, SigInfo};
use crate::errno::Errno;
use crate::process::Process;
use crate::sched::Task;
use alloc::sync::Arc;
use alloc::vec;
use arch::context::FpsimdState;
use arch::ptrace::PtRegs;
use core::sync::atomic::Ordering;

const SIGINFO_SIZE: usize = 128;
/// Offset of `uc` in the frame.
const UC: usize = SIGINFO_SIZE;
// struct ucontext: uc_flags (8), uc_link (8), uc_stack (24), uc_sigmask (8),
// padding to 128 bytes of sigset, then uc_mcontext aligned to 16.
const UC_STACK: usize = UC + 16;
const UC_SIGMASK: usize = UC + 40;
const UC_MCONTEXT: usize = UC + 176;
// struct sigcontext: fault_address, regs[31], sp, pc, pstate, __reserved[4096].
const SC_FAULT: usize = UC_MCONTEXT;
const SC_REGS: usize = UC_MCONTEXT + 8;
const SC_SP: usize = SC_REGS + 31 * 8;
const SC_PC: usize = SC_SP + 8;
const SC_PSTATE: usize = SC_PC + 8;
const SC_RESERVED: usize = UC_MCONTEXT + 288;
const RESERVED_SIZE: usize = 4096;
/// Size of `struct rt_sigframe`.
pub const FRAME_SIZE: usize = SC_RESERVED + RESERVED_SIZE;

use signal_core::records::{FPSIMD_MAGIC, FPSIMD_SIZE};

/// `sigaltstack` state of a thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AltStack {
    /// Base.
    pub sp: u64,
    /// SS_DISABLE etc.
    pub flags: i32,
    /// Size.
    pub size: u64,
}

impl AltStack {
    /// No alternate stack (a new thread's, and after exec).
    pub const DISABLED: AltStack = AltStack {
        sp: 0,
        flags: SS_DISABLE,
        size: 0,
    };
}

/// `ss_flags`.
pub const SS_ONSTACK: i32 = 1;
/// Disabled.
pub const SS_DISABLE: i32 = 2;
/// Smallest alternate stack (arm64 MINSIGSTKSZ).
pub const MINSIGSTKSZ: u64 = 5120;

fn altstack(t: &Task) -> AltStack {
    *t.sas.lock()
}

/// Whether `sp` is on the thread's alternate stack.
pub fn on_altstack(t: &Task, sp: u64) -> bool {
    let a = altstack(t);
    a.flags & SS_DISABLE == 0 && sp > a.sp && sp - a.sp <= a.size
}

/// Whether `sp` is on the thread's alternate stack.
pub fn sas_ss_flags(t: &Task, sp: u64) -> i32 {
    let a = altstack(t);
    if a.flags & SS_DISABLE != 0 {
        SS_DISABLE
    } else if on_altstack(t, sp) {
        SS_ONSTACK
    } else {
        0
    }
}

fn put(buf: &mut [u8], off: usize, v: u64) {
    buf[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

fn get(buf: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(buf[off..off + 8].try_into().expect("8 bytes"))
}

/// Builds the frame for a handler of `sig` and points `regs` at the handler.
pub fn setup_rt_frame(
    t: &Arc<Task>,
    p: &Arc<Process>,
    sig: u32,
    info: &SigInfo,
    action: &SigAction,
    regs: &mut PtRegs,
) -> Result<(), Errno> {
    let mut sp = regs.sp;
    let alt = altstack(t);
    if action.flags & sa::SA_ONSTACK != 0 && alt.flags & SS_DISABLE == 0 && !on_altstack(t, sp) {
        sp = alt.sp.wrapping_add(alt.size);
    }
    // User-chosen values: wrap as Linux's unsigned arithmetic does; a frame
    // at a nonsense address then fails to copy out, which forces SIGSEGV.
    let record = sp.wrapping_sub(16) & !15;
    let frame = record.wrapping_sub(FRAME_SIZE as u64) & !15;
    let mut buf = vec![0u8; FRAME_SIZE];
    buf[..SIGINFO_SIZE].copy_from_slice(&info.to_bytes());
    // uc_stack: the alternate stack settings, for restore at sigreturn.
    put(&mut buf, UC_STACK, alt.sp);
    buf[UC_STACK + 8..UC_STACK + 12].copy_from_slice(&sas_ss_flags(t, regs.sp).to_le_bytes());
    put(&mut buf, UC_STACK + 16, alt.size);
    let mask = if t.restore_sigmask.load(Ordering::Acquire) {
        t.saved_sigmask.load(Ordering::Acquire)
    } else {
        t.sig_blocked.load(Ordering::Acquire)
    };
    put(&mut buf, UC_SIGMASK, mask);
    put(&mut buf, SC_FAULT, info.addr);
    for i in 0..31 {
        put(&mut buf, SC_REGS + i * 8, regs.regs[i]);
    }
    put(&mut buf, SC_SP, regs.sp);
    put(&mut buf, SC_PC, regs.pc);
    put(&mut buf, SC_PSTATE, regs.pstate);
    // The FP/SIMD registers, live on this CPU since the task is current.
    let mut fp = FpsimdState::default();
    arch::context::fpsimd_save(&mut fp);
    let r = SC_RESERVED;
    buf[r..r + 4].copy_from_slice(&FPSIMD_MAGIC.to_le_bytes());
    buf[r + 4..r + 8].copy_from_slice(&FPSIMD_SIZE.to_le_bytes());
    buf[r + 8..r + 12].copy_from_slice(&fp.fpsr.to_le_bytes());
    buf[r + 12..r + 16].copy_from_slice(&fp.fpcr.to_le_bytes());
    for (i, v) in fp.vregs.iter().enumerate() {
        buf[r + 16 + i * 16..r + 32 + i * 16].copy_from_slice(&v.to_le_bytes());
    }
    // A zero terminator record follows (already zero).
    crate::uaccess::copy_to_user(frame, &buf)?;
    let mut rec = [0u8; 16];
    rec[..8].copy_from_slice(&regs.regs[29].to_le_bytes());
    rec[8..].copy_from_slice(&regs.regs[30].to_le_bytes());
    crate::uaccess::copy_to_user(record, &rec)?;

    // Without SA_RESTORER the handler returns to the vDSO's
    // __kernel_rt_sigreturn, as on Linux; a process that unmapped its vDSO
    // gets 0 there and faults on return, as Linux's would at the old
    // address.
    let restorer = if action.flags & sa::SA_RESTORER != 0 {
        action.restorer
    } else {
        let mm = t.mm.lock().clone();
        mm.as_deref().and_then(crate::vdso::sigtramp).unwrap_or(0)
    };
    regs.regs[0] = sig as u64;
    regs.regs[1] = frame;
    regs.regs[2] = frame + UC as u64;
    regs.regs[29] = record;
    regs.regs[30] = restorer;
    regs.sp = frame;
    regs.pc = action.handler;
    let _ = p;
    Ok(())
}

/// Linux's `arm64_notify_segfault`: the SIGSEGV of a bad `rt_sigreturn`,
/// with `addr` (the stack pointer) as `si_addr` and SEGV_ACCERR when a
/// region lies at or above it, SEGV_MAPERR when none does.
pub fn arm64_notify_segfault(addr: u64) {
    let mapped = crate::sched::current()
        .mm
        .lock()
        .clone()
        .is_some_and(|mm| mm.has_vma_above(addr));
    let code = if mapped {
        uapi::signal::code::SEGV_ACCERR
    } else {
        uapi::signal::code::SEGV_MAPERR
    };
    super::force_sig_fault(super::SIGSEGV, code, addr);
}

/// `rt_sigreturn`: restores the context saved by `setup_rt_frame` at the
/// user stack pointer. Returns the restored x0.
pub fn sys_rt_sigreturn(regs: &mut PtRegs) -> Result<u64, Errno> {
    let t = crate::sched::current();
    let frame = regs.sp;
    if !frame.is_multiple_of(16) {
        return Err(Errno::EFAULT);
    }
    let mut buf = vec![0u8; FRAME_SIZE];
    crate::uaccess::copy_from_user(&mut buf, frame)?;
    // Bits that are RES0 in an AArch64 SPSR (IL among them) are cleared, as
    // Linux's valid_native_regs does: returning with IL set would make the
    // next instruction an illegal-state exception.
    let pstate = get(&buf, SC_PSTATE) & !arch::ptrace::PSR_AARCH64_RES0;
    // Only EL0t AArch64 states with DAIF clear are valid to return to.
    use tock_registers::interfaces::Readable;
    let psr = tock_registers::registers::InMemoryRegister::<u64, arch::ptrace::PSR::Register>::new(pstate);
    if psr.read(arch::ptrace::PSR::M) != 0 || pstate & arch::ptrace::PSR_DAIF_MASK != 0 {
        return Err(Errno::EFAULT);
    }
    // The context records, by Linux's parse_user_sigframe rules; the
    // fpsimd_context one is required and must have its exact size.
    let mut read_extra = |addr: u64, len: usize| -> Result<alloc::vec::Vec<u8>, Errno> {
        let mut v = alloc::vec::Vec::new();
        v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
        v.resize(len, 0);
        crate::uaccess::copy_from_user(&mut v, addr)?;
        Ok(v)
    };
    let records = signal_core::records::parse(
        &buf[SC_RESERVED..],
        frame.wrapping_add(SC_RESERVED as u64),
        frame,
        &mut read_extra,
    )
    .map_err(|e| match e {
        signal_core::records::Invalid::Fault(e) => e,
        signal_core::records::Invalid::Malformed => Errno::EINVAL,
    })?;
    let fpsimd = records.fpsimd.ok_or(Errno::EINVAL)?;
    if fpsimd.len() != FPSIMD_SIZE as usize {
        return Err(Errno::EINVAL);
    }
    for i in 0..31 {
        regs.regs[i] = get(&buf, SC_REGS + i * 8);
    }
    regs.sp = get(&buf, SC_SP);
    regs.pc = get(&buf, SC_PC);
    // PSTATE.SS follows the task's step state (Linux's valid_user_regs).
    regs.pstate = crate::debug::hw_breakpoint::user_regs_reset_single_step(&t, pstate);
    regs.syscallno = arch::ptrace::NO_SYSCALL;
    let r = &fpsimd;
    let mut fp = FpsimdState {
        fpsr: u32::from_le_bytes(r[8..12].try_into().expect("4")),
        fpcr: u32::from_le_bytes(r[12..16].try_into().expect("4")),
        ..Default::default()
    };
    for (i, v) in fp.vregs.iter_mut().enumerate() {
        *v = u128::from_le_bytes(r[16 + i * 16..32 + i * 16].try_into().expect("16"));
    }
    arch::context::fpsimd_load(&fp);
    let mask = get(&buf, UC_SIGMASK) & !super::unblockable();
    t.sig_blocked.store(mask, Ordering::Release);
    // uc_stack: restore the alternate stack as sigaltstack would.
    let ss_sp = get(&buf, UC_STACK);
    let ss_flags = i32::from_le_bytes(buf[UC_STACK + 8..UC_STACK + 12].try_into().expect("4"));
    let ss_size = get(&buf, UC_STACK + 16);
    let _ = set_altstack(&t, ss_sp, ss_flags & SS_DISABLE, ss_size, regs.sp);
    Ok(regs.regs[0])
}

/// `sigaltstack` set half: validates and installs.
pub fn set_altstack(t: &Task, sp: u64, flags: i32, size: u64, cur_sp: u64) -> Result<(), Errno> {
    if on_altstack(t, cur_sp) {
        return Err(Errno::EPERM);
    }
    const SS_AUTODISARM: i32 = 1 << 31;
    let flags = flags & !SS_AUTODISARM;
    if flags != 0 && flags != SS_DISABLE && flags != SS_ONSTACK {
        return Err(Errno::EINVAL);
    }
    let a = if flags == SS_DISABLE {
        AltStack {
            sp: 0,
            flags: SS_DISABLE,
            size: 0,
        }
    } else {
        if size < MINSIGSTKSZ {
            return Err(Errno::ENOMEM);
        }
        AltStack { sp, flags: 0, size }
    };
    *t.sas.lock() = a;
    Ok(())
}

/// `sigaltstack` get half: (sp, flags, size) as `stack_t` reports them.
pub fn get_altstack(t: &Task, cur_sp: u64) -> (u64, i32, u64) {
    let a = altstack(t);
    (a.sp, sas_ss_flags(t, cur_sp), a.size)
}
