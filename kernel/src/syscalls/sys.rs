//! System calls about the system and the caller's scheduling:
//! sched_getaffinity, sched_setaffinity, sched_setscheduler
//! and its kin (policy and real-time priority), sysinfo, getcpu,
//! fadvise64.

use super::syscall;
use crate::errno::Errno;
use crate::uaccess::{copy_from_user, copy_to_user, put_user_u32, UserPtr};
use alloc::sync::Arc;

/// Linux's `cpumask_size()` for up to 64 CPUs: one `unsigned long`.
const CPUMASK_SIZE: usize = 8;

/// The online CPUs, one bit each (Linux's `cpu_active_mask`).
fn online_mask() -> u64 {
    crate::smp::online_cpus().filter(|&c| c < 64).fold(0, |m, c| m | 1 << c)
}

/// Linux's `nr_cpu_ids`: one more than the highest CPU number.
fn nr_cpu_ids() -> usize {
    crate::smp::online_cpus().max().map_or(1, |c| c + 1)
}

/// The task `pid` names (0: the caller), or ESRCH.
fn task_arg(pid: u64) -> Result<Arc<crate::sched::Task>, Errno> {
    match pid as i32 {
        0 => Ok(crate::sched::current()),
        p if p < 0 => Err(Errno::EINVAL),
        p => crate::process::find_task(p as u32).ok_or(Errno::ESRCH),
    }
}

syscall!(__arm64_sys_sched_getaffinity, r, {
    let (pid, len, ptr) = (r.regs[0], r.regs[1] as u32 as usize, UserPtr::new(r.regs[2]));
    if len * 8 < nr_cpu_ids() || len % 8 != 0 {
        return Err(Errno::EINVAL);
    }
    let task = task_arg(pid)?;
    let mask = task.cpus_allowed.load(core::sync::atomic::Ordering::Relaxed) & online_mask();
    let n = len.min(CPUMASK_SIZE);
    copy_to_user(ptr, &mask.to_le_bytes()[..n])?;
    Ok(n as u64)
});

syscall!(__arm64_sys_sched_setaffinity, r, {
    let (pid, len, ptr) = (r.regs[0], r.regs[1] as u32 as usize, UserPtr::new(r.regs[2]));
    // Linux's get_user_cpu_mask: a shorter mask is zero-extended, a longer
    // one read up to the kernel's size.
    let mut raw = [0u8; CPUMASK_SIZE];
    let n = len.min(CPUMASK_SIZE);
    copy_from_user(&mut raw[..n], ptr)?;
    let task = task_arg(pid)?;
    let mask = u64::from_le_bytes(raw) & online_mask();
    if mask == 0 {
        return Err(Errno::EINVAL);
    }
    crate::sched::set_cpus_allowed(&task, mask);
    // The caller leaves a CPU it may no longer use at once.
    if Arc::ptr_eq(&task, &crate::sched::current()) && !task.may_run_on(arch::cpu::cpu_id()) {
        crate::sched::yield_now();
    }
    Ok(0)
});

/// `SCHED_RESET_ON_FORK`, or-ed into a policy.
use uapi::sched::SCHED_RESET_ON_FORK;

/// Checks `policy` and `prio` as Linux's `__sched_setscheduler` does:
/// EINVAL for an unknown policy (SCHED_DEADLINE too, which needs
/// sched_setattr and which this kernel has no class for), a real-time
/// priority outside 1..=99, or a non-zero one for the other policies.
fn check_sched_param(policy: u32, prio: u32) -> Result<(), Errno> {
    use crate::sched::{rt_policy, SCHED_BATCH, SCHED_IDLE, SCHED_NORMAL};
    let valid = rt_policy(policy) || matches!(policy, SCHED_NORMAL | SCHED_BATCH | SCHED_IDLE);
    if !valid {
        return Err(Errno::EINVAL);
    }
    if rt_policy(policy) != (prio != 0) || prio > crate::sched::MAX_USER_RT_PRIO {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Linux's `do_sched_setscheduler`; `policy` None keeps the task's
/// (sched_setparam).
fn do_sched_setscheduler(pid: u64, policy: Option<u32>, param: UserPtr) -> Result<u64, Errno> {
    if param.is_null() || (pid as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let prio = crate::uaccess::get_user_u32(param)?;
    let task = task_arg(pid)?;
    let policy = policy.unwrap_or_else(|| task.policy.load(core::sync::atomic::Ordering::Relaxed));
    check_sched_param(policy & !SCHED_RESET_ON_FORK, prio)?;
    crate::sched::set_scheduler(&task, policy & !SCHED_RESET_ON_FORK, prio);
    Ok(0)
}

syscall!(__arm64_sys_sched_setscheduler, r, {
    let policy = r.regs[1] as i32;
    if policy < 0 {
        return Err(Errno::EINVAL);
    }
    do_sched_setscheduler(r.regs[0], Some(policy as u32), UserPtr::new(r.regs[2]))
});

syscall!(__arm64_sys_sched_setparam, r, {
    do_sched_setscheduler(r.regs[0], None, UserPtr::new(r.regs[1]))
});

syscall!(__arm64_sys_sched_getscheduler, r, {
    if (r.regs[0] as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let task = task_arg(r.regs[0])?;
    Ok(u64::from(task.policy.load(core::sync::atomic::Ordering::Relaxed)))
});

syscall!(__arm64_sys_sched_getparam, r, {
    let (pid, param) = (r.regs[0], UserPtr::new(r.regs[1]));
    if param.is_null() || (pid as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let task = task_arg(pid)?;
    let (_, prio, _) = crate::sched::task_sched_attr(&task);
    put_user_u32(param, prio)?;
    Ok(0)
});

/// The priority range of `policy` (Linux's `sched_get_priority_max/min`).
fn priority_range(policy: u64) -> Result<(u32, u32), Errno> {
    use crate::sched::{SCHED_BATCH, SCHED_DEADLINE, SCHED_FIFO, SCHED_IDLE, SCHED_NORMAL, SCHED_RR};
    match u32::try_from(policy as i32).map_err(|_| Errno::EINVAL)? {
        SCHED_FIFO | SCHED_RR => Ok((1, crate::sched::MAX_USER_RT_PRIO)),
        SCHED_NORMAL | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok((0, 0)),
        _ => Err(Errno::EINVAL),
    }
}

syscall!(__arm64_sys_sched_get_priority_max, r, {
    Ok(u64::from(priority_range(r.regs[0])?.1))
});

syscall!(__arm64_sys_sched_get_priority_min, r, {
    Ok(u64::from(priority_range(r.regs[0])?.0))
});

syscall!(__arm64_sys_sysinfo, r, {
    let ns = crate::time::ktime_get_ns();
    // Linux rounds a part-second of uptime up.
    let uptime = ns / 1_000_000_000 + u64::from(!ns.is_multiple_of(1_000_000_000));
    let frames = crate::mm::frame::stats();
    let procs: usize = crate::process::all_processes()
        .iter()
        .map(|p| p.threads.lock().len())
        .sum();
    // The load averages, from FSHIFT bits of fraction to SI_LOAD_SHIFT.
    let shift = uapi::sysinfo::SI_LOAD_SHIFT - crate::sched::loadavg::FSHIFT;
    let info = uapi::sysinfo::Sysinfo {
        uptime: uptime as i64,
        loads: crate::sched::loadavg::avenrun().map(|avg| avg << shift),
        totalram: frames.total as u64 * 4096,
        freeram: frames.free as u64 * 4096,
        procs: procs.min(u16::MAX as usize) as u16,
        // The sizes are in bytes.
        mem_unit: 1,
        ..Default::default()
    };
    copy_to_user(UserPtr::new(r.regs[0]), &info.to_bytes())?;
    Ok(0)
});

syscall!(__arm64_sys_fadvise64, r, {
    let (fd, len, advice) = (r.regs[0] as i32, r.regs[2] as i64, r.regs[3] as u32);
    let f = crate::fs::current_files().get(fd)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    let meta = f.metadata();
    if meta.file_type() == vfs::FileType::Fifo {
        return Err(Errno::ESPIPE);
    }
    // POSIX_FADV_NORMAL..POSIX_FADV_NOREUSE; the page cache here is the
    // files' own memory, so each is advice with nothing to do.
    if advice > uapi::fcntl::fadv::POSIX_FADV_NOREUSE || len < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
});

syscall!(__arm64_sys_getcpu, r, {
    let (cpu, node) = (UserPtr::new(r.regs[0]), UserPtr::new(r.regs[1]));
    let me = arch::cpu::cpu_id() as u32;
    if !cpu.is_null() {
        put_user_u32(cpu, me)?;
    }
    // One NUMA node.
    if !node.is_null() {
        put_user_u32(node, 0)?;
    }
    Ok(0)
});
