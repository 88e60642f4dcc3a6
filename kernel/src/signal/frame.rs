//! The arm64 signal frame (`struct rt_sigframe` of
//! arch/arm64/kernel/signal.c): `siginfo_t`, then a `ucontext` whose
//! `sigcontext` holds x0-x30, sp, pc, pstate and, in its reserved area, an
//! `fpsimd_context` record with V0-V31, FPSR and FPCR, then a terminator.
//! Above the frame sits a frame record {x29, x30} for unwinders.

use super::{sa, SigAction, SigInfo};
use crate::errno::Errno;
use crate::process::Process;
use crate::sched::Task;
use crate::uaccess::UserPtr;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::context::FpsimdState;
use arch::ptrace::PtRegs;
use core::sync::atomic::Ordering;

use uapi::sigframe::{FpsimdContext, RtSigframe, SigContext, FPSIMD_SIZE, RT_SIGFRAME_SIZE, SC_RESERVED, UC};
use uapi::signal::StackT;

/// Size of `struct rt_sigframe`.
pub const FRAME_SIZE: usize = RT_SIGFRAME_SIZE;

/// A zeroed frame image on the heap (too big for comfort on a kernel
/// stack); ENOMEM rather than a panic when memory is short.
fn frame_buf() -> Result<Box<[u8; FRAME_SIZE]>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(FRAME_SIZE).map_err(|_| Errno::ENOMEM)?;
    v.resize(FRAME_SIZE, 0);
    v.into_boxed_slice().try_into().map_err(|_| Errno::ENOMEM)
}

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

/// `ss_flags` and the smallest alternate stack.
pub use uapi::signal::{MINSIGSTKSZ, SS_DISABLE, SS_ONSTACK};

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
    let mask = if t.restore_sigmask.load(Ordering::Acquire) {
        t.saved_sigmask.load(Ordering::Acquire)
    } else {
        t.sig_blocked.load(Ordering::Acquire)
    };
    let mut buf = frame_buf()?;
    RtSigframe {
        info: *info,
        // The alternate stack settings, for restore at sigreturn.
        uc_stack: StackT {
            ss_sp: alt.sp,
            ss_flags: sas_ss_flags(t, regs.sp),
            ss_size: alt.size,
        },
        uc_sigmask: mask,
        mcontext: SigContext {
            fault_address: info.addr,
            regs: regs.regs,
            sp: regs.sp,
            pc: regs.pc,
            pstate: regs.pstate,
        },
    }
    .write(&mut buf);
    // The FP/SIMD registers, live on this CPU since the task is current.
    let mut fp = FpsimdState::default();
    arch::context::fpsimd_save(&mut fp);
    let rec = FpsimdContext {
        fpsr: fp.fpsr,
        fpcr: fp.fpcr,
        vregs: fp.vregs,
    };
    buf[SC_RESERVED..SC_RESERVED + FPSIMD_SIZE as usize].copy_from_slice(&rec.to_bytes());
    // A zero terminator record follows (already zero).
    crate::uaccess::copy_to_user(UserPtr::new(frame), &buf[..])?;
    let mut rec = [0u8; 16];
    rec[..8].copy_from_slice(&regs.regs[29].to_le_bytes());
    rec[8..].copy_from_slice(&regs.regs[30].to_le_bytes());
    crate::uaccess::copy_to_user(UserPtr::new(record), &rec)?;

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
    let mut buf = frame_buf()?;
    crate::uaccess::copy_from_user(&mut buf[..], UserPtr::new(frame))?;
    let saved = RtSigframe::read(&buf);
    // Bits that are RES0 in an AArch64 SPSR (IL among them) are cleared, as
    // Linux's valid_native_regs does: returning with IL set would make the
    // next instruction an illegal-state exception.
    let pstate = saved.mcontext.pstate & !arch::ptrace::PSR_AARCH64_RES0;
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
        crate::uaccess::copy_from_user(&mut v, UserPtr::new(addr))?;
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
    let rec = FpsimdContext::from_bytes(&fpsimd).ok_or(Errno::EINVAL)?;
    let sc = &saved.mcontext;
    regs.regs = sc.regs;
    regs.sp = sc.sp;
    regs.pc = sc.pc;
    // PSTATE.SS follows the task's step state (Linux's valid_user_regs).
    regs.pstate = crate::debug::hw_breakpoint::user_regs_reset_single_step(&t, pstate);
    regs.syscallno = arch::ptrace::NO_SYSCALL;
    let fp = FpsimdState {
        fpsr: rec.fpsr,
        fpcr: rec.fpcr,
        vregs: rec.vregs,
    };
    arch::context::fpsimd_load(&fp);
    let mask = saved.uc_sigmask & !super::unblockable();
    super::set_current_blocked(&t, mask);
    // uc_stack: restore the alternate stack as sigaltstack would.
    let StackT {
        ss_sp,
        ss_flags,
        ss_size,
    } = saved.uc_stack;
    let _ = set_altstack(&t, ss_sp, ss_flags & SS_DISABLE, ss_size, regs.sp);
    Ok(regs.regs[0])
}

/// `sigaltstack` set half: validates and installs.
pub fn set_altstack(t: &Task, sp: u64, flags: i32, size: u64, cur_sp: u64) -> Result<(), Errno> {
    if on_altstack(t, cur_sp) {
        return Err(Errno::EPERM);
    }
    use uapi::signal::SS_AUTODISARM;
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
