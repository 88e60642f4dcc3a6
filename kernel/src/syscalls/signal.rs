//! Signal system calls.

use super::syscall;
use crate::errno::Errno;
use crate::signal::{self as sig, frame, SigAction, SigInfo};
use crate::uaccess::{copy_from_user, copy_to_user, put_user_u64, UserPtr};
use crate::{process, sched};
use core::sync::atomic::Ordering;
use uapi::signal::{KernelSigaction, StackT, SIGSET_SIZE};

fn read_sigaction(p: UserPtr) -> Result<SigAction, Errno> {
    let mut b = [0u8; KernelSigaction::SIZE];
    copy_from_user(&mut b, p)?;
    let k = KernelSigaction::from_bytes(&b);
    Ok(SigAction {
        handler: k.handler,
        flags: k.flags,
        restorer: k.restorer,
        mask: k.mask,
    })
}

fn write_sigaction(p: UserPtr, a: &SigAction) -> Result<(), Errno> {
    let k = KernelSigaction {
        handler: a.handler,
        flags: a.flags,
        restorer: a.restorer,
        mask: a.mask,
    };
    copy_to_user(p, &k.to_bytes())
}

syscall!(__arm64_sys_rt_sigaction, r, {
    let (signum, act, oact, size) = (r.regs[0], UserPtr::new(r.regs[1]), UserPtr::new(r.regs[2]), r.regs[3]);
    if size != SIGSET_SIZE || !sig::valid_signal(signum) {
        return Err(Errno::EINVAL);
    }
    let signum = signum as u32;
    let p = process::current_process();
    let new = if !act.is_null() {
        Some(read_sigaction(act)?)
    } else {
        None
    };
    if new.is_some() && (signum == sig::SIGKILL || signum == sig::SIGSTOP) {
        return Err(Errno::EINVAL);
    }
    let old = p.sighand.get(signum);
    if let Some(mut a) = new {
        a.mask &= !sig::unblockable();
        // Unknown flag bits are cleared, as Linux reports back with SA_UNSUPPORTED.
        a.flags &= !sig::sa::SA_UNSUPPORTED;
        p.sighand.set(signum, a);
        // Setting SIG_IGN (or a default-ignore action) discards pending ones.
        if a.handler == sig::SIG_IGN
            || (a.handler == sig::SIG_DFL && sig::default_action(signum) == sig::DefaultAction::Ignore)
        {
            sig::flush_process_signals(&p, sig::sigmask(signum));
        }
    }
    if !oact.is_null() {
        write_sigaction(oact, &old)?;
    }
    Ok(0)
});

use uapi::signal::{SIG_BLOCK, SIG_SETMASK, SIG_UNBLOCK};

syscall!(__arm64_sys_rt_sigprocmask, r, {
    let (how, set, oset, size) = (r.regs[0], UserPtr::new(r.regs[1]), UserPtr::new(r.regs[2]), r.regs[3]);
    if size != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let me = sched::current();
    let old = me.sig_blocked.load(Ordering::Acquire);
    if !set.is_null() {
        let new = crate::uaccess::get_user_u64(set)?;
        let v = match how {
            SIG_BLOCK => old | new,
            SIG_UNBLOCK => old & !new,
            SIG_SETMASK => new,
            _ => return Err(Errno::EINVAL),
        };
        sig::set_current_blocked(&me, v);
    }
    if !oset.is_null() {
        put_user_u64(oset, old)?;
    }
    Ok(0)
});

syscall!(__arm64_sys_rt_sigpending, r, {
    if r.regs[1] != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    put_user_u64(UserPtr::new(r.regs[0]), sig::pending_set(&sched::current()))?;
    Ok(0)
});

syscall!(__arm64_sys_rt_sigsuspend, r, {
    if r.regs[1] != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let mask = crate::uaccess::get_user_u64(UserPtr::new(r.regs[0]))? & !sig::unblockable();
    let me = sched::current();
    me.saved_sigmask
        .store(sig::set_current_blocked(&me, mask), Ordering::Release);
    me.restore_sigmask.store(true, Ordering::Release);
    loop {
        me.set_state(sched::TaskState::Interruptible);
        if me.signal_pending() {
            me.set_state(sched::TaskState::Running);
            break;
        }
        sched::schedule();
    }
    // A handler returns EINTR; signal delivery restores the caller's mask.
    Err(Errno::ERESTARTNOHAND)
});

syscall!(
    __arm64_sys_rt_sigreturn,
    r,
    frame::sys_rt_sigreturn(r).or_else(|_| {
        frame::arm64_notify_segfault(r.sp);
        Ok(r.regs[0])
    })
);

syscall!(__arm64_sys_kill, r, {
    sig::kill(r.regs[0] as i32 as i64, r.regs[1] as u32)?;
    Ok(0)
});

fn tkill(tgid: Option<u32>, tid: i32, signum: u64) -> Result<u64, Errno> {
    if tid <= 0 || signum as usize > sig::NSIG {
        return Err(Errno::EINVAL);
    }
    let t = process::find_task(tid as u32).ok_or(Errno::ESRCH)?;
    if let Some(g) = tgid {
        if t.process.get().map(|p| p.pid) != Some(g) {
            return Err(Errno::ESRCH);
        }
    }
    check_task_kill_permission(&t, signum as u32)?;
    if signum != 0 {
        let me = process::current_process();
        sig::send_sig_to_task(
            &t,
            SigInfo {
                signo: signum as u32,
                code: sig::code::SI_TKILL,
                pid: me.pid,
                ..Default::default()
            },
        )?;
    }
    Ok(0)
}

/// `check_kill_permission` for a signal to thread `t`: its own
/// credentials speak.
fn check_task_kill_permission(t: &sched::Task, signum: u32) -> Result<(), Errno> {
    match t.process.get() {
        Some(p) => sig::check_kill_permission(p, &crate::cred::task_cred(t), signum),
        None => Err(Errno::ESRCH),
    }
}

/// The `siginfo_t` a sigqueue caller supplies, all 128 bytes as Linux's
/// `copy_siginfo_from_user` reads them; its signal number is replaced by
/// `signum`.
fn read_user_siginfo(signum: u32, uinfo: UserPtr) -> Result<SigInfo, Errno> {
    let mut b = [0u8; uapi::signal::SIGINFO_SIZE];
    copy_from_user(&mut b, uinfo)?;
    b[0..4].copy_from_slice(&signum.to_le_bytes());
    Ok(SigInfo::from_bytes(&b))
}

/// Not even root may pretend to be the kernel (si_code >= 0) or kill/tkill
/// towards another process (Linux's `do_rt_sigqueueinfo`).
fn check_sigqueue_code(info: &SigInfo, target: u32) -> Result<(), Errno> {
    if (info.code >= 0 || info.code == sig::code::SI_TKILL) && process::current_process().pid != target {
        return Err(Errno::EPERM);
    }
    Ok(())
}

syscall!(__arm64_sys_rt_sigqueueinfo, r, {
    let (pid, signum, uinfo) = (r.regs[0] as i32, r.regs[1], UserPtr::new(r.regs[2]));
    let info = read_user_siginfo(signum as u32, uinfo)?;
    check_sigqueue_code(&info, pid as u32)?;
    let p = if pid > 0 {
        process::find_process(pid as u32)
    } else {
        None
    };
    let p = p.filter(|p| !p.is_zombie()).ok_or(Errno::ESRCH)?;
    if signum as usize > sig::NSIG {
        return Err(Errno::EINVAL);
    }
    sig::check_kill_permission(&p, &p.leader_cred(), signum as u32)?;
    if signum != 0 {
        sig::send_sig_to_process(&p, info)?;
    }
    Ok(0)
});

syscall!(__arm64_sys_rt_tgsigqueueinfo, r, {
    let (tgid, tid, signum, uinfo) = (r.regs[0] as i32, r.regs[1] as i32, r.regs[2], UserPtr::new(r.regs[3]));
    if tgid <= 0 || tid <= 0 {
        return Err(Errno::EINVAL);
    }
    let info = read_user_siginfo(signum as u32, uinfo)?;
    check_sigqueue_code(&info, tid as u32)?;
    let t = process::find_task(tid as u32).ok_or(Errno::ESRCH)?;
    if t.process.get().map(|p| p.pid) != Some(tgid as u32) {
        return Err(Errno::ESRCH);
    }
    if signum as usize > sig::NSIG {
        return Err(Errno::EINVAL);
    }
    check_task_kill_permission(&t, signum as u32)?;
    if signum != 0 {
        sig::send_sig_to_task(&t, info)?;
    }
    Ok(0)
});

syscall!(__arm64_sys_tkill, r, tkill(None, r.regs[0] as i32, r.regs[1]));
syscall!(__arm64_sys_tgkill, r, {
    if (r.regs[0] as i32) <= 0 {
        return Err(Errno::EINVAL);
    }
    tkill(Some(r.regs[0] as u32), r.regs[1] as i32, r.regs[2])
});

syscall!(__arm64_sys_sigaltstack, r, {
    let (ss, oss) = (UserPtr::new(r.regs[0]), UserPtr::new(r.regs[1]));
    let me = sched::current();
    let old = frame::get_altstack(&me, r.sp);
    if !ss.is_null() {
        let mut b = [0u8; StackT::SIZE];
        copy_from_user(&mut b, ss)?;
        let st = StackT::from_bytes(&b);
        frame::set_altstack(&me, st.ss_sp, st.ss_flags, st.ss_size, r.sp)?;
    }
    if !oss.is_null() {
        let st = StackT {
            ss_sp: old.0,
            ss_flags: old.1,
            ss_size: old.2,
        };
        copy_to_user(oss, &st.to_bytes())?;
    }
    Ok(0)
});

syscall!(__arm64_sys_rt_sigtimedwait, r, {
    let (uthese, uinfo, uts, sigsetsize) = (
        UserPtr::new(r.regs[0]),
        UserPtr::new(r.regs[1]),
        UserPtr::new(r.regs[2]),
        r.regs[3],
    );
    if sigsetsize != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let set = crate::uaccess::get_user_u64(uthese)?;
    let deadline = match uts {
        UserPtr::NULL => None,
        p => Some(crate::time::ktime_get_ns().saturating_add(super::time::get_timespec(p)?)),
    };
    let info = sig::sigtimedwait(set, deadline)?;
    if !uinfo.is_null() {
        copy_to_user(uinfo, &info.to_bytes())?;
    }
    Ok(u64::from(info.signo))
});
