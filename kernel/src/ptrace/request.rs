//! `ptrace(2)`'s requests (Linux's sys_ptrace, ptrace_request and arm64's
//! arch_ptrace with its regsets).

use super::*;
use crate::errno::Errno;
use crate::mm::vm::Mm;
use crate::process::regs;
use crate::syscalls::SysResult;
use crate::uaccess::{self, UserPtr};
use arch::addr::UserVirtAddr;
use uapi::signal::{SIGINFO_SIZE, SIGSET_SIZE};

/// `ptrace(request, pid, addr, data)`.
pub fn sys_ptrace(request: i64, pid: i64, addr: u64, data: u64) -> SysResult {
    let me = sched::current();
    if request == PTRACE_TRACEME {
        return ptrace_traceme(&me);
    }
    let pid = u32::try_from(pid).map_err(|_| Errno::ESRCH)?;
    let attach = request == PTRACE_ATTACH || request == PTRACE_SEIZE;
    let Some(child) = crate::process::find_task(pid) else {
        // A process whose thread `pid` has exited (a zombie not yet
        // reaped, or one still tearing down) keeps its pid: Linux finds
        // that task and refuses the attach (`exit_state`).
        if attach && crate::process::find_process(pid).is_some() {
            return Err(Errno::EPERM);
        }
        return Err(Errno::ESRCH);
    };
    if attach {
        return ptrace_attach(&me, &child, request == PTRACE_SEIZE, addr, data);
    }
    // PEEK and POKE read the stopped tracee's address space under the
    // lock the check takes anyway.
    let want_mm = matches!(
        request,
        PTRACE_PEEKTEXT | PTRACE_PEEKDATA | PTRACE_POKETEXT | PTRACE_POKEDATA
    );
    let mm = check_attach(
        &me,
        &child,
        request == PTRACE_KILL || request == PTRACE_INTERRUPT,
        want_mm,
    )?;
    match request {
        PTRACE_PEEKTEXT | PTRACE_PEEKDATA => {
            let mut word = [0u8; 8];
            access_vm(mm, addr, &mut word, false)?;
            uaccess::copy_to_user(UserPtr::new(data), &word)?;
            Ok(0)
        }
        PTRACE_POKETEXT | PTRACE_POKEDATA => {
            let mut word = data.to_le_bytes();
            access_vm(mm, addr, &mut word, true)?;
            Ok(0)
        }
        PTRACE_CONT | PTRACE_SYSCALL | PTRACE_SINGLESTEP | PTRACE_SYSEMU | PTRACE_SYSEMU_SINGLESTEP => {
            ptrace_resume(&child, request, data)
        }
        PTRACE_KILL => {
            signal::send_to_task(
                &child,
                SigInfo {
                    signo: SIGKILL,
                    code: code::SI_USER,
                    ..Default::default()
                },
            );
            Ok(0)
        }
        PTRACE_DETACH => {
            if !valid_signal(data) {
                return Err(Errno::EIO);
            }
            child.ptrace.state.lock().exit_code = data as u32;
            unlink(&child);
            Ok(0)
        }
        PTRACE_SETOPTIONS => {
            check_options(data, Errno::EINVAL)?;
            child.ptrace.state.lock().options = data;
            Ok(0)
        }
        PTRACE_GETEVENTMSG => {
            let msg = child.ptrace.state.lock().message;
            uaccess::put_user_u64(UserPtr::new(data), msg)?;
            Ok(0)
        }
        PTRACE_GETSIGINFO => {
            let info = child.ptrace.state.lock().last_siginfo.ok_or(Errno::EINVAL)?;
            uaccess::copy_to_user(UserPtr::new(data), &info.to_bytes())?;
            Ok(0)
        }
        PTRACE_SETSIGINFO => {
            let mut b = [0u8; SIGINFO_SIZE];
            uaccess::copy_from_user(&mut b, UserPtr::new(data))?;
            let mut st = child.ptrace.state.lock();
            let slot = st.last_siginfo.as_mut().ok_or(Errno::EINVAL)?;
            *slot = SigInfo::from_bytes(&b);
            Ok(0)
        }
        PTRACE_GETSIGMASK => {
            if addr != SIGSET_SIZE {
                return Err(Errno::EINVAL);
            }
            uaccess::put_user_u64(UserPtr::new(data), child.sig_blocked.load(Ordering::Acquire))?;
            Ok(0)
        }
        PTRACE_SETSIGMASK => {
            if addr != SIGSET_SIZE {
                return Err(Errno::EINVAL);
            }
            let set = uaccess::get_user_u64(UserPtr::new(data))?;
            child
                .sig_blocked
                .store(set & !(sigmask(SIGKILL) | sigmask(SIGSTOP)), Ordering::Release);
            child.restore_sigmask.store(false, Ordering::Release);
            // Shared signals it no longer blocks are for it to take when
            // it resumes (Linux recalculates after the stop).
            if let Some(p) = child.process.get() {
                crate::signal::recalc_sigpending_tsk(&child, p);
            }
            Ok(0)
        }
        PTRACE_INTERRUPT => {
            if !child.ptrace.state.lock().seized {
                return Err(Errno::EIO);
            }
            let listening = {
                let st = child.ptrace.state.lock();
                if st.stopped && st.listening {
                    child.ptrace.trap_notify.store(true, Ordering::Release);
                    true
                } else {
                    false
                }
            };
            if !listening {
                child.ptrace.trap_pending.store(true, Ordering::Release);
            }
            // Out of an interruptible sleep (the call restarts) or a group
            // stop, into the trap.
            if matches!(child.state(), TaskState::Interruptible | TaskState::Stopped) {
                sched::wake_up(&child);
            }
            Ok(0)
        }
        PTRACE_LISTEN => {
            let mut st = child.ptrace.state.lock();
            if !st.seized {
                return Err(Errno::EIO);
            }
            match st.last_siginfo {
                Some(si) if (si.code >> 8) as u32 == PTRACE_EVENT_STOP => {
                    st.listening = true;
                    // A change since this trap began: trap again now.
                    let notify = child.ptrace.trap_notify.load(Ordering::Acquire);
                    drop(st);
                    if notify {
                        sched::wake_up(&child);
                    }
                    Ok(0)
                }
                _ => Err(Errno::EIO),
            }
        }
        PTRACE_GETREGSET | PTRACE_SETREGSET => {
            regset_request(&child, request == PTRACE_SETREGSET, addr as u32, UserPtr::new(data))
        }
        PTRACE_GET_SYSCALL_INFO => get_syscall_info(&child, addr, UserPtr::new(data)),
        PTRACE_PEEKSIGINFO => super::peeksiginfo::ptrace_peek_siginfo(&child, UserPtr::new(addr), UserPtr::new(data)),
        PTRACE_GET_RSEQ_CONFIGURATION => {
            // Linux's ptrace_get_rseq_configuration: `addr` is the size the
            // caller reads; the whole size is returned whatever it was.
            let (ptr, len, sig) = child.rseq.registration().unwrap_or((0, 0, 0));
            let conf = PtraceRseqConfiguration {
                rseq_abi_pointer: ptr,
                rseq_abi_size: len,
                signature: sig,
                flags: 0,
            }
            .to_bytes();
            let n = usize::try_from(addr).map_or(conf.len(), |a| a.min(conf.len()));
            uaccess::copy_to_user(UserPtr::new(data), &conf[..n])?;
            Ok(conf.len() as u64)
        }
        // Syscall user dispatch needs the generic entry code, which arm64
        // Linux 6.12 does not use: its stubs answer EINVAL (as here).
        PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG | PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG => Err(Errno::EINVAL),
        // arm64 answers neither USER-area request (Linux's ptrace_request
        // default).
        _ => Err(Errno::EIO),
    }
}

fn check_options(data: u64, unknown: Errno) -> Result<(), Errno> {
    if data & !PTRACE_O_MASK != 0 {
        return Err(unknown);
    }
    // No seccomp here: as a Linux built without it.
    if data & PTRACE_O_SUSPEND_SECCOMP != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn ptrace_traceme(me: &Arc<Task>) -> SysResult {
    let p = me.process.get().ok_or(Errno::EPERM)?;
    let parent_tid = me.ptrace.parent_tid.load(Ordering::Relaxed);
    let parent = crate::process::find_task(parent_tid)
        .filter(|t| {
            t.process
                .get()
                .is_some_and(|pp| pp.pid == p.ppid.load(Ordering::Acquire))
        })
        .or_else(|| crate::process::find_process(p.ppid.load(Ordering::Acquire)).and_then(|pp| pp.main_thread()));
    if me.ptrace.is_traced() {
        return Err(Errno::EPERM);
    }
    // A parent already gone or going: Linux pretends it untraced us at
    // once.
    let Some(parent) = parent.filter(|t| t.state() != TaskState::Dead) else {
        return Ok(0);
    };
    match link(me, &parent, false, 0, |_| Ok(())) {
        Ok(()) | Err(LinkRefused::TracerExiting) => Ok(0),
        Err(LinkRefused::Child(e)) => Err(e),
    }
}

fn ptrace_attach(me: &Arc<Task>, child: &Arc<Task>, seize: bool, addr: u64, flags: u64) -> SysResult {
    if seize {
        if addr != 0 {
            return Err(Errno::EIO);
        }
        check_options(flags, Errno::EIO)?;
    }
    let Some(cp) = child.process.get() else {
        return Err(Errno::EPERM);
    };
    if me.process.get().is_some_and(|mp| Arc::ptr_eq(mp, cp)) {
        return Err(Errno::EPERM);
    }
    // init is never traced here: a tracer's SIGKILL or injected signal
    // would end it, and the machine with it (Linux makes init immune to
    // those instead).
    if cp.pid == 1 {
        return Err(Errno::EPERM);
    }
    let child_mm = child.mm.lock().clone();
    super::access::ptrace_may_access(me, child, child_mm.as_ref(), super::access::PtraceMode::AttachRealCreds)?;
    let may = |st: &super::PtraceState| {
        if cp.is_zombie() || st.exit_report.is_some() || matches!(child.state(), TaskState::Dead | TaskState::Zombie) {
            return Err(Errno::EPERM);
        }
        Ok(())
    };
    match link(child, me, seize, if seize { flags } else { 0 }, may) {
        Ok(()) => {}
        Err(LinkRefused::Child(e)) => return Err(e),
        // The caller is the tracer, and it is not exiting.
        Err(LinkRefused::TracerExiting) => return Err(Errno::EPERM),
    }
    if !seize {
        signal::send_to_task(
            child,
            SigInfo {
                signo: SIGSTOP,
                code: code::SI_KERNEL,
                ..Default::default()
            },
        );
    }
    // A task already in a group stop moves to a ptrace stop, and is in it
    // when the attach returns (Linux waits for JOBCTL_TRAPPING to clear):
    // what the tracer does next, a SIGCONT say, comes after the trap.
    let group_stopped =
        child.jobctl.fetch_and(!signal::jobctl::STOPPED, Ordering::AcqRel) & signal::jobctl::STOPPED != 0;
    if group_stopped {
        if seize {
            child.ptrace.trap_pending.store(true, Ordering::Release);
        }
        sched::wake_up(child);
        while !child.ptrace.state.lock().stopped
            && signal::group_stop_in_effect(cp)
            && !signal::fatal_pending(child)
            && !matches!(child.state(), TaskState::Dead | TaskState::Zombie)
        {
            sched::yield_now();
        }
    }
    Ok(0)
}

/// Linux's ptrace_check_attach: `child` is traced by `me`, and (unless
/// `ignore_state`) in a ptrace stop that is not LISTEN's, and switched
/// out, so that its saved registers are the ones it will resume with.
/// With `want_mm`, it also hands back the tracee's address space (None if
/// it has none), read under the tracee's ptrace lock while it is stopped,
/// so that exec cannot change it meanwhile, with no interrupt-masking lock
/// of its own.
fn check_attach(
    me: &Arc<Task>,
    child: &Arc<Task>,
    ignore_state: bool,
    want_mm: bool,
) -> Result<Option<Arc<Mm>>, Errno> {
    let mm = {
        let st = child.ptrace.state.lock();
        if !child.ptrace.is_traced() || !is_tracer(&st, me) || st.exit_report.is_some() {
            return Err(Errno::ESRCH);
        }
        if ignore_state {
            return Ok(None);
        }
        if !st.stopped || st.listening || signal::fatal_pending(child) {
            return Err(Errno::ESRCH);
        }
        // Interrupts are masked by the state lock; `mm` is a leaf lock.
        if want_mm {
            child.mm.lock_irqs_off().clone()
        } else {
            None
        }
    };
    // Linux's wait_task_inactive: the tracee may still be leaving its CPU.
    while child.on_cpu.load(Ordering::Acquire) {
        if !child.ptrace.state.lock().stopped {
            return Err(Errno::ESRCH);
        }
        sched::yield_now();
    }
    Ok(mm)
}

/// Linux's ptrace_resume: the request says which of syscall tracing,
/// system call emulation and single-step stay on.
fn ptrace_resume(child: &Arc<Task>, request: i64, data: u64) -> SysResult {
    if !valid_signal(data) {
        return Err(Errno::EIO);
    }
    let emu = request == PTRACE_SYSEMU || request == PTRACE_SYSEMU_SINGLESTEP;
    let step = request == PTRACE_SINGLESTEP || request == PTRACE_SYSEMU_SINGLESTEP;
    super::singlestep::set_single_step(child, step);
    child
        .ptrace
        .syscall_trace
        .store(request == PTRACE_SYSCALL, Ordering::Release);
    child.ptrace.syscall_emu.store(emu, Ordering::Release);
    // The state's lock and the run queue's unmask interrupts once.
    let _irqs = crate::sync::IrqsMasked::new();
    {
        let mut st = child.ptrace.state.lock();
        st.exit_code = data as u32;
        st.stopped = false;
        st.listening = false;
    }
    // A tracer resumes a tracee to wait for its next stop: the tracee runs
    // on this CPU when the tracer's next call (its wait) blocks, or is sent
    // to an idle one when that call is another.
    sched::with_sync_wakeups_to_next_syscall(|| sched::wake_up(child));
    Ok(0)
}

/// Linux's ptrace_access_vm: PEEK/POKE in the tracee's address space,
/// forced past its protections (a write to read-only text breaks
/// copy-on-write and keeps the instruction cache coherent). EIO when the
/// address is not mapped (or the tracee has no address space, `mm`).
fn access_vm(mm: Option<Arc<Mm>>, addr: u64, buf: &mut [u8], write: bool) -> Result<(), Errno> {
    let mm = mm.ok_or(Errno::EIO)?;
    let addr = UserVirtAddr::new(addr).ok_or(Errno::EIO)?;
    mm.access_remote(addr, buf, write).map_err(|_| Errno::EIO)
}

/// The stopped tracee's saved registers, read or changed under its
/// `regs_lock` (the caller checked the stop).
fn with_frame<R>(child: &Task, f: impl FnOnce(&mut PtRegs) -> R) -> Result<R, Errno> {
    let addr = child.user_regs_addr().ok_or(Errno::ESRCH)?;
    let _guard = child.ptrace.regs_lock.lock();
    if !child.ptrace.state.lock().stopped {
        return Err(Errno::ESRCH);
    }
    let mut frame = regs::read_frame(addr);
    let r = f(&mut frame);
    regs::write_frame(addr, &frame);
    Ok(r)
}

/// Linux's valid_native_regs: the bits a user may not set are dropped
/// (SS among them: it follows the task's step state), and what is left must be a 64-bit
/// EL0t PSTATE with D, A, I and F clear; `None` if not (EINVAL).
fn valid_user_pstate(pstate: u64) -> Option<u64> {
    use arch::ptrace::PSR;
    let masks = PSR::D::SET.value | PSR::A::SET.value | PSR::I::SET.value | PSR::F::SET.value;
    let pstate = pstate & !arch::ptrace::PSR_AARCH64_RES0 & !PSR::SS::SET.value;
    (pstate & PSR::M::SET.value == 0 && pstate & masks == 0).then_some(pstate)
}

/// One regset's layout: element size and count (Linux's `user_regset`).
fn regset_shape(nt: u32) -> Option<(usize, usize)> {
    Some(match nt {
        NT_PRSTATUS => (8, UserPtRegs::SIZE / 8),
        NT_PRFPREG => (4, UserFpsimdState::SIZE / 4),
        // TPIDR_EL0 and TPIDR2_EL0 (zero without SME), as Linux 6.12.
        NT_ARM_TLS => (8, 2),
        NT_ARM_SYSTEM_CALL => (4, 1),
        NT_ARM_HW_BREAK | NT_ARM_HW_WATCH => (4, uapi::hw_breakpoint::USER_HWDEBUG_STATE_SIZE / 4),
        _ => return None,
    })
}

fn regset_get(child: &Arc<Task>, nt: u32) -> Result<Vec<u8>, Errno> {
    Ok(match nt {
        NT_PRSTATUS => with_frame(child, |f| {
            UserPtRegs {
                regs: f.regs,
                sp: f.sp,
                pc: f.pc,
                pstate: f.pstate,
            }
            .to_bytes()
            .to_vec()
        })?,
        NT_PRFPREG => {
            let pending = child.ptrace.state.lock().pending_fpsimd.as_deref().copied();
            let fp = pending.unwrap_or_else(|| *child.fpsimd.lock());
            UserFpsimdState {
                vregs: fp.vregs,
                fpsr: fp.fpsr,
                fpcr: fp.fpcr,
            }
            .to_bytes()
            .to_vec()
        }
        NT_ARM_TLS => {
            let pending = child.ptrace.state.lock().pending_tls;
            let mut b = pending
                .unwrap_or_else(|| child.tls.load(Ordering::Relaxed))
                .to_le_bytes()
                .to_vec();
            b.extend_from_slice(&[0; 8]);
            b
        }
        NT_ARM_SYSTEM_CALL => with_frame(child, |f| (f.syscallno as i32).to_le_bytes().to_vec())?,
        NT_ARM_HW_BREAK | NT_ARM_HW_WATCH => super::hw_breakpoint::regset_get(child, nt).to_vec(),
        _ => return Err(Errno::EINVAL),
    })
}

fn regset_set(child: &Arc<Task>, nt: u32, new: &[u8]) -> Result<(), Errno> {
    if nt == NT_ARM_HW_BREAK || nt == NT_ARM_HW_WATCH {
        return super::hw_breakpoint::regset_set(child, nt, new);
    }
    // A partial write keeps the rest: start from the current image.
    let mut image = regset_get(child, nt)?;
    let n = new.len().min(image.len());
    image[..n].copy_from_slice(&new[..n]);
    match nt {
        NT_PRSTATUS => {
            let mut b = [0u8; UserPtRegs::SIZE];
            b.copy_from_slice(&image);
            let mut r = UserPtRegs::from_bytes(&b);
            r.pstate = valid_user_pstate(r.pstate).ok_or(Errno::EINVAL)?;
            r.pstate = crate::debug::hw_breakpoint::user_regs_reset_single_step(child, r.pstate);
            with_frame(child, |f| {
                f.regs = r.regs;
                f.sp = r.sp;
                f.pc = r.pc;
                f.pstate = r.pstate;
            })
        }
        NT_PRFPREG => {
            let mut b = [0u8; UserFpsimdState::SIZE];
            b.copy_from_slice(&image);
            let s = UserFpsimdState::from_bytes(&b);
            // Allocated before the lock, which masks interrupts.
            let fp = alloc::boxed::Box::new(FpsimdState {
                vregs: s.vregs,
                fpsr: s.fpsr,
                fpcr: s.fpcr,
            });
            let mut st = child.ptrace.state.lock();
            if !st.stopped {
                return Err(Errno::ESRCH);
            }
            st.pending_fpsimd = Some(fp);
            Ok(())
        }
        NT_ARM_TLS => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&image[..8]);
            let mut st = child.ptrace.state.lock();
            if !st.stopped {
                return Err(Errno::ESRCH);
            }
            st.pending_tls = Some(u64::from_le_bytes(b));
            Ok(())
        }
        NT_ARM_SYSTEM_CALL => {
            let nr = i32::from_le_bytes([image[0], image[1], image[2], image[3]]);
            with_frame(child, |f| f.syscallno = i64::from(nr))
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Linux's ptrace_regset: `data` points at an iovec whose length must be a
/// multiple of the element size; it is cut to the regset's size, and the
/// length transferred is written back.
fn regset_request(child: &Arc<Task>, set: bool, nt: u32, iov_addr: UserPtr) -> SysResult {
    let mut iov = [0u8; uapi::uio::IoVec::SIZE];
    uaccess::copy_from_user(&mut iov, iov_addr)?;
    let uapi::uio::IoVec { base, len } = uapi::uio::IoVec::from_bytes(&iov);
    let (size, n) = regset_shape(nt).ok_or(Errno::EINVAL)?;
    if len % size as u64 != 0 {
        return Err(Errno::EINVAL);
    }
    let len = len.min((size * n) as u64) as usize;
    if set {
        let mut new = alloc::vec![0u8; len];
        uaccess::copy_from_user(&mut new, UserPtr::new(base))?;
        regset_set(child, nt, &new)?;
    } else {
        let image = regset_get(child, nt)?;
        uaccess::copy_to_user(UserPtr::new(base), &image[..len])?;
    }
    uaccess::put_user_u64(iov_addr.wrapping_add(8), len as u64)?;
    Ok(0)
}

/// Linux's ptrace_get_syscall_info: entry or exit only at a TRACESYSGOOD
/// system call stop; copies at most `size` bytes and returns the full size.
fn get_syscall_info(child: &Arc<Task>, size: u64, data: UserPtr) -> SysResult {
    let (si_code, message) = {
        let st = child.ptrace.state.lock();
        (st.last_siginfo.map_or(0, |s| s.code), st.message)
    };
    let frame = with_frame(child, |f| regs::clone_regs(f))?;
    let kind = if si_code == (SIGTRAP | 0x80) as i32 {
        match message {
            PTRACE_EVENTMSG_SYSCALL_ENTRY => SyscallInfoKind::Entry {
                nr: frame.syscallno as u64,
                args: [
                    frame.orig_x0,
                    frame.regs[1],
                    frame.regs[2],
                    frame.regs[3],
                    frame.regs[4],
                    frame.regs[5],
                ],
            },
            PTRACE_EVENTMSG_SYSCALL_EXIT => {
                let rval = frame.regs[0] as i64;
                SyscallInfoKind::Exit {
                    rval,
                    is_error: (-uapi::errno::MAX_ERRNO..0).contains(&rval),
                }
            }
            _ => SyscallInfoKind::None,
        }
    } else {
        SyscallInfoKind::None
    };
    let info = PtraceSyscallInfo {
        arch: AUDIT_ARCH_AARCH64,
        instruction_pointer: frame.pc,
        stack_pointer: frame.sp,
        kind,
    };
    let (bytes, actual) = info.to_bytes();
    let n = (size as usize).min(actual);
    uaccess::copy_to_user(data, &bytes[..n])?;
    Ok(actual as u64)
}
