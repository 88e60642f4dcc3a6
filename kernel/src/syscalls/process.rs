//! Process system calls: identity, clone/exec/exit/wait, sessions and groups.

use super::{syscall, SysResult};
use crate::errno::Errno;
use crate::process::{self, current_process, wait};
use crate::sched;
use crate::uaccess::UserPtr;
use core::sync::atomic::Ordering;

syscall!(__arm64_sys_getpid, _r, Ok(current_process().pid as u64));
syscall!(__arm64_sys_gettid, _r, Ok(sched::current().tid() as u64));
syscall!(
    __arm64_sys_getppid,
    _r,
    Ok(current_process().ppid.load(Ordering::Relaxed) as u64)
);

syscall!(__arm64_sys_set_tid_address, r, {
    let me = sched::current();
    me.clear_child_tid.store(r.regs[0], Ordering::Relaxed);
    Ok(me.tid() as u64)
});

syscall!(
    __arm64_sys_exit,
    r,
    process::do_exit(i64::from(process_core::exited(r.regs[0] as i32)))
);
syscall!(
    __arm64_sys_exit_group,
    r,
    process::do_group_exit(process_core::exited(r.regs[0] as i32))
);

syscall!(__arm64_sys_clone, r, {
    // Linux's sys_clone: the low 32 bits of the flags, split into flags
    // and exit signal.
    let flags = r.regs[0] & 0xffff_ffff;
    let args = process::KernelCloneArgs {
        flags: flags & !process::clone_flags::CSIGNAL,
        exit_signal: (flags & process::clone_flags::CSIGNAL) as i32,
        stack: r.regs[1],
        parent_tid: UserPtr::new(r.regs[2]),
        tls: r.regs[3],
        child_tid: UserPtr::new(r.regs[4]),
        ..Default::default()
    };
    let regs_copy = crate::process::regs::clone_regs(r);
    super::from_ret(process::kernel_clone(&args, &regs_copy))
});

syscall!(__arm64_sys_execve, r, {
    let path = crate::uaccess::user_path(UserPtr::new(r.regs[0]))?;
    let argv = crate::uaccess::user_string_array(UserPtr::new(r.regs[1]))?;
    let envp = crate::uaccess::user_string_array(UserPtr::new(r.regs[2]))?;
    let old_tid = sched::current().tid();
    crate::exec::do_execve(&path, argv, envp, r)?;
    // The new program starts with x0 = 0 (set here so the tracer sees it).
    r.regs[0] = 0;
    crate::ptrace::ptrace_event(uapi::ptrace::PTRACE_EVENT_EXEC, u64::from(old_tid), Some(r));
    // The new program starts with x0 = 0 (its registers were reset).
    Ok(0)
});

syscall!(__arm64_sys_wait4, r, {
    let (pid, status, options, rusage) = (
        r.regs[0] as i32,
        UserPtr::new(r.regs[1]),
        r.regs[2] as u32,
        UserPtr::new(r.regs[3]),
    );
    wait::check_wait4_options(options)?;
    let who = wait::WaitWho::from_wait4_pid(pid, current_process().pgid.load(Ordering::Relaxed))?;
    let res = wait::do_wait(who, options | wait::WEXITED)?;
    let Some(reaped) = res else { return Ok(0) };
    if !status.is_null() {
        crate::uaccess::put_user_i32(status, wait::status_word(reaped.event))?;
    }
    if !rusage.is_null() {
        crate::uaccess::copy_to_user(rusage, &crate::cputime::rusage_bytes(reaped.times))?;
    }
    Ok(reaped.pid as u64)
});

use uapi::wait::{P_ALL, P_PGID, P_PID};

syscall!(__arm64_sys_waitid, r, {
    let (idtype, id, infop, options) = (r.regs[0], r.regs[1] as u32, UserPtr::new(r.regs[2]), r.regs[3] as u32);
    wait::check_waitid_options(options)?;
    let who = match idtype {
        P_ALL => wait::WaitWho::Any,
        P_PID => wait::WaitWho::Pid(id),
        P_PGID => wait::WaitWho::Pgid(if id == 0 {
            current_process().pgid.load(Ordering::Relaxed)
        } else {
            id
        }),
        _ => return Err(Errno::EINVAL),
    };
    let res = wait::do_wait(who, options)?;
    if !infop.is_null() {
        let mut info = crate::signal::SigInfo::default();
        if let Some(rp) = res {
            use crate::process::ChildEvent;
            use crate::signal::code::*;
            let (code, status) = match rp.event {
                ChildEvent::Exited(s) => process_core::cld_of_exit(s),
                ChildEvent::Stopped(sig) => (CLD_STOPPED, sig as i32),
                ChildEvent::Continued => (CLD_CONTINUED, crate::signal::SIGCONT as i32),
                ChildEvent::Traced(code) => (crate::ptrace::CLD_TRAPPED, code as i32),
            };
            info = crate::signal::SigInfo {
                signo: crate::signal::SIGCHLD,
                code,
                pid: rp.pid,
                status,
                ..Default::default()
            };
        }
        crate::uaccess::copy_to_user(infop, &info.to_bytes())?;
    }
    Ok(0)
});

syscall!(__arm64_sys_setsid, _r, {
    let p = current_process();
    // Linux: EPERM if any process group already has the caller's PID as
    // its ID (the caller leads a group, or once did and members remain).
    if process::all_processes()
        .iter()
        .any(|q| q.pgid.load(Ordering::Relaxed) == p.pid)
    {
        return Err(Errno::EPERM);
    }
    p.sid.store(p.pid, Ordering::Relaxed);
    p.pgid.store(p.pid, Ordering::Relaxed);
    Ok(p.pid as u64)
});

syscall!(__arm64_sys_setpgid, r, {
    let (pid, pgid) = (r.regs[0] as i32, r.regs[1] as i32);
    if pgid < 0 {
        return Err(Errno::EINVAL);
    }
    let me = current_process();
    let target = if pid == 0 {
        me.clone()
    } else {
        process::find_process(pid as u32).ok_or(Errno::ESRCH)?
    };
    if target.pid != me.pid && target.ppid.load(Ordering::Relaxed) != me.pid {
        return Err(Errno::ESRCH);
    }
    if target.sid.load(Ordering::Relaxed) == target.pid {
        return Err(Errno::EPERM);
    }
    if target.sid.load(Ordering::Relaxed) != me.sid.load(Ordering::Relaxed) {
        return Err(Errno::EPERM);
    }
    let pgid = if pgid == 0 { target.pid } else { pgid as u32 };
    if pgid != target.pid
        && !process::all_processes().iter().any(|q| {
            q.pgid.load(Ordering::Relaxed) == pgid && q.sid.load(Ordering::Relaxed) == me.sid.load(Ordering::Relaxed)
        })
    {
        return Err(Errno::EPERM);
    }
    target.pgid.store(pgid, Ordering::Relaxed);
    Ok(0)
});

fn lookup(pid: i32) -> Result<alloc::sync::Arc<crate::process::Process>, Errno> {
    if pid < 0 {
        return Err(Errno::ESRCH);
    }
    if pid == 0 {
        Ok(current_process())
    } else {
        process::find_process(pid as u32).ok_or(Errno::ESRCH)
    }
}

syscall!(
    __arm64_sys_getpgid,
    r,
    Ok(lookup(r.regs[0] as i32)?.pgid.load(Ordering::Relaxed) as u64)
);
syscall!(
    __arm64_sys_getsid,
    r,
    Ok(lookup(r.regs[0] as i32)?.sid.load(Ordering::Relaxed) as u64)
);

syscall!(__arm64_sys_process_vm_readv, r, {
    crate::ptrace::process_vm_rw(
        r.regs[0] as i64,
        UserPtr::new(r.regs[1]),
        r.regs[2],
        UserPtr::new(r.regs[3]),
        r.regs[4],
        r.regs[5],
        false,
    )
});

syscall!(__arm64_sys_process_vm_writev, r, {
    crate::ptrace::process_vm_rw(
        r.regs[0] as i64,
        UserPtr::new(r.regs[1]),
        r.regs[2],
        UserPtr::new(r.regs[3]),
        r.regs[4],
        r.regs[5],
        true,
    )
});

// personality(0xffffffff) only asks; any other value is taken as is, as
// Linux's sys_personality (gdbserver sets ADDR_NO_RANDOMIZE, which changes
// nothing here: this kernel does not randomise a layout).
syscall!(__arm64_sys_personality, r, {
    let persona = r.regs[0] as u32;
    let me = crate::sched::current();
    let old = if persona == u32::MAX {
        me.personality.load(Ordering::Relaxed)
    } else {
        me.personality.swap(persona, Ordering::Relaxed)
    };
    Ok(u64::from(old))
});

syscall!(__arm64_sys_ptrace, r, {
    crate::ptrace::sys_ptrace(r.regs[0] as i64, r.regs[1] as i64, r.regs[2], r.regs[3])
});

fn _unused(_: SysResult) {}
