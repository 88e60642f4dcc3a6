//! Miscellaneous system calls: uname, prctl, reboot, limits, randomness.

use super::syscall;
use crate::errno::Errno;
use crate::uaccess::{copy_from_user, copy_to_user, UserPtr};
use core::sync::atomic::Ordering;
use uapi::capability::{PR_GET_DUMPABLE, PR_SET_DUMPABLE, SUID_DUMP_DISABLE, SUID_DUMP_USER};
use uapi::resource::Rlimit;

syscall!(__arm64_sys_newuname, r, {
    let b = uapi::utsname::NewUtsname {
        sysname: crate::version::UTS_SYSNAME,
        nodename: "(none)",
        release: crate::version::UTS_RELEASE,
        version: crate::version::UTS_VERSION,
        machine: "aarch64",
        domainname: "(none)",
    }
    .to_bytes();
    copy_to_user(UserPtr::new(r.regs[0]), &b)?;
    Ok(0)
});

use uapi::prctl::{PR_GET_NAME, PR_SET_NAME, TASK_COMM_LEN};

syscall!(__arm64_sys_prctl, r, {
    let me = crate::sched::current();
    match r.regs[0] {
        PR_SET_NAME => {
            let uname = UserPtr::new(r.regs[1]);
            let name = crate::uaccess::strndup_user(uname, TASK_COMM_LEN, Errno::EINVAL).or_else(|e| {
                if e == Errno::EINVAL {
                    // Longer names are truncated, as Linux does.
                    let mut b = [0u8; TASK_COMM_LEN - 1];
                    copy_from_user(&mut b, uname)?;
                    Ok(b.to_vec())
                } else {
                    Err(e)
                }
            })?;
            crate::trace::tracepoint::task::trace_task_rename(&me, &name);
            me.set_comm(&name);
            Ok(0)
        }
        PR_GET_NAME => {
            let c = me.comm.get();
            copy_to_user(UserPtr::new(r.regs[1]), &c)?;
            Ok(0)
        }
        // The dumpable flag of the caller's address space (ptrace access
        // by its owner), which credential changes clear.
        PR_GET_DUMPABLE => Ok(me.mm.lock().as_ref().map_or(0, |mm| u64::from(mm.dumpable()))),
        PR_SET_DUMPABLE => {
            let v = r.regs[1];
            if v != u64::from(SUID_DUMP_DISABLE) && v != u64::from(SUID_DUMP_USER) {
                return Err(Errno::EINVAL);
            }
            if let Some(mm) = me.mm.lock().as_ref() {
                mm.set_dumpable(v as u8);
            }
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
});

use uapi::reboot::{
    LINUX_REBOOT_CMD_CAD_OFF as CMD_CAD_OFF, LINUX_REBOOT_CMD_CAD_ON as CMD_CAD_ON, LINUX_REBOOT_CMD_HALT as CMD_HALT,
    LINUX_REBOOT_CMD_POWER_OFF as CMD_POWER_OFF, LINUX_REBOOT_CMD_RESTART as CMD_RESTART,
    LINUX_REBOOT_MAGIC1 as MAGIC1,
};
const MAGIC2: [u64; 4] = [
    uapi::reboot::LINUX_REBOOT_MAGIC2,
    uapi::reboot::LINUX_REBOOT_MAGIC2A,
    uapi::reboot::LINUX_REBOOT_MAGIC2B,
    uapi::reboot::LINUX_REBOOT_MAGIC2C,
];

syscall!(__arm64_sys_reboot, r, {
    if r.regs[0] & 0xffff_ffff != MAGIC1 || !MAGIC2.contains(&(r.regs[1] & 0xffff_ffff)) {
        return Err(Errno::EINVAL);
    }
    match r.regs[2] & 0xffff_ffff {
        CMD_POWER_OFF | CMD_HALT => crate::power::poweroff(),
        CMD_RESTART => crate::power::restart(),
        CMD_CAD_ON | CMD_CAD_OFF => Ok(0),
        _ => Err(Errno::EINVAL),
    }
});

syscall!(__arm64_sys_umask, r, {
    let p = crate::process::current_process();
    Ok(p.umask.swap(r.regs[0] as u32 & 0o777, Ordering::AcqRel) as u64)
});

syscall!(__arm64_sys_sched_yield, _r, {
    crate::sched::yield_now();
    Ok(0)
});

syscall!(
    __arm64_sys_set_robust_list,
    r,
    if r.regs[1] != uapi::futex::ROBUST_LIST_HEAD_SIZE {
        Err(Errno::EINVAL)
    } else {
        Ok(0)
    }
);

/// RLIMIT_* defaults, as (soft, hard).
fn rlimit(res: u64) -> Result<(u64, u64), Errno> {
    use uapi::resource::{RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_SIGPENDING, RLIMIT_STACK, RLIM_NLIMITS};
    const INF: u64 = u64::MAX;
    let res = u32::try_from(res).map_err(|_| Errno::EINVAL)?;
    Ok(match res {
        RLIMIT_STACK => (8 << 20, INF),
        RLIMIT_NOFILE => (uapi::INR_OPEN_CUR as u64, uapi::INR_OPEN_MAX as u64),
        // RLIMIT_NPROC and RLIMIT_SIGPENDING: Linux sets both to half its
        // max_threads, from the RAM size. Every task here runs as root,
        // which Linux exempts from RLIMIT_NPROC at fork, so it is reported
        // but never refuses a fork.
        RLIMIT_NPROC | RLIMIT_SIGPENDING => {
            let n = crate::signal::sigpending_limit();
            (n, n)
        }
        r if r < RLIM_NLIMITS => (INF, INF),
        _ => return Err(Errno::EINVAL),
    })
}

syscall!(__arm64_sys_getrlimit, r, {
    let (s, h) = rlimit(r.regs[0])?;
    let lim = Rlimit {
        rlim_cur: s,
        rlim_max: h,
    };
    copy_to_user(UserPtr::new(r.regs[1]), &lim.to_bytes())?;
    Ok(0)
});

syscall!(__arm64_sys_prlimit64, r, {
    let (pid, res, new, old) = (r.regs[0], r.regs[1], UserPtr::new(r.regs[2]), UserPtr::new(r.regs[3]));
    if pid != 0 && crate::process::find_process(pid as u32).is_none() {
        return Err(Errno::ESRCH);
    }
    let (s, h) = rlimit(res)?;
    if !new.is_null() {
        // Limits are fixed here: accept only the current values.
        let mut b = [0u8; Rlimit::SIZE];
        copy_from_user(&mut b, new)?;
        let new = Rlimit::from_bytes(&b);
        let (ns, nh) = (new.rlim_cur, new.rlim_max);
        if ns > nh {
            return Err(Errno::EINVAL);
        }
        if nh > h {
            return Err(Errno::EPERM);
        }
    }
    if !old.is_null() {
        let lim = Rlimit {
            rlim_cur: s,
            rlim_max: h,
        };
        copy_to_user(old, &lim.to_bytes())?;
    }
    Ok(0)
});

syscall!(__arm64_sys_getrusage, r, {
    use uapi::resource::{RUSAGE_CHILDREN, RUSAGE_SELF, RUSAGE_THREAD};
    let t = match r.regs[0] as i32 {
        RUSAGE_SELF => crate::cputime::thread_group_cputime(&crate::process::current_process()),
        RUSAGE_CHILDREN => crate::process::current_process().cputime.children(),
        RUSAGE_THREAD => crate::sched::current().cputime.get(),
        _ => return Err(Errno::EINVAL),
    };
    copy_to_user(UserPtr::new(r.regs[1]), &crate::cputime::rusage_bytes(t))?;
    Ok(0)
});

syscall!(__arm64_sys_getrandom, r, {
    let (buf, len, flags) = (UserPtr::new(r.regs[0]), r.regs[1] as usize, r.regs[2]);
    use uapi::random::{GRND_INSECURE, GRND_NONBLOCK, GRND_RANDOM};
    // GRND_RANDOM and GRND_INSECURE are exclusive.
    if flags & !(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE) != 0
        || flags & (GRND_RANDOM | GRND_INSECURE) == GRND_RANDOM | GRND_INSECURE
    {
        return Err(Errno::EINVAL);
    }
    // Linux caps one call at 32 MiB; fill through a small buffer so the
    // size the caller asks for never becomes a kernel allocation.
    let len = len.min(1 << 25);
    let mut chunk = [0u8; 256];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk.len());
        crate::random::fill(&mut chunk[..n]);
        if let Err(e) = copy_to_user(buf.wrapping_add(done as u64), &chunk[..n]) {
            return if done > 0 { Ok(done as u64) } else { Err(e) };
        }
        done += n;
    }
    Ok(len as u64)
});

syscall!(__arm64_sys_futex, r, {
    use crate::futex::*;
    // utime is a timeout pointer for the waits, a count for the others.
    let (addr, op, val, utime, addr2, val3) = (
        UserPtr::new(r.regs[0]),
        r.regs[1] as u32,
        r.regs[2] as u32,
        r.regs[3],
        UserPtr::new(r.regs[4]),
        r.regs[5] as u32,
    );
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    // Linux's sys_futex reads the timeout first (FUTEX_WAIT's is relative,
    // FUTEX_WAIT_BITSET's absolute), then do_futex refuses
    // FUTEX_CLOCK_REALTIME on the operations without an absolute timeout.
    // CLOCK_REALTIME and CLOCK_MONOTONIC read the same clock here.
    let timeout = if utime != 0 && (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET) {
        Some(super::time::get_timespec(UserPtr::new(utime))?)
    } else {
        None
    };
    if op & FUTEX_CLOCK_REALTIME != 0 && cmd != FUTEX_WAIT_BITSET {
        return Err(Errno::ENOSYS);
    }
    // For the requeue and wake-op operations the timeout slot carries a
    // count.
    let val2 = utime as u32;
    match cmd {
        FUTEX_WAIT => {
            wait(addr, val, timeout)?;
            Ok(0)
        }
        FUTEX_WAIT_BITSET => {
            wait_bitset(addr, val, timeout, val3)?;
            Ok(0)
        }
        FUTEX_WAKE => {
            check_aligned(addr)?;
            Ok(wake(addr, val) as u64)
        }
        FUTEX_WAKE_BITSET => Ok(wake_bitset(addr, val, val3)? as u64),
        FUTEX_REQUEUE => Ok(requeue(addr, addr2, val as i32, val2 as i32, None)? as u64),
        FUTEX_CMP_REQUEUE => Ok(requeue(addr, addr2, val as i32, val2 as i32, Some(val3))? as u64),
        FUTEX_WAKE_OP => Ok(wake_op(addr, addr2, val, val2, val3)? as u64),
        // The PI operations need priority inheritance, which does not
        // exist yet.
        _ => Err(Errno::ENOSYS),
    }
});

/// syslog(2) actions (Linux's SYSLOG_ACTION_*).
mod syslog {
    pub use uapi::syslog::{
        SYSLOG_ACTION_CLEAR as CLEAR, SYSLOG_ACTION_CLOSE as CLOSE, SYSLOG_ACTION_CONSOLE_LEVEL as CONSOLE_LEVEL,
        SYSLOG_ACTION_CONSOLE_OFF as CONSOLE_OFF, SYSLOG_ACTION_CONSOLE_ON as CONSOLE_ON, SYSLOG_ACTION_OPEN as OPEN,
        SYSLOG_ACTION_READ as READ, SYSLOG_ACTION_READ_ALL as READ_ALL, SYSLOG_ACTION_READ_CLEAR as READ_CLEAR,
        SYSLOG_ACTION_SIZE_BUFFER as SIZE_BUFFER, SYSLOG_ACTION_SIZE_UNREAD as SIZE_UNREAD,
    };
}

/// The console level CONSOLE_ON brings back.
static SAVED_LOGLEVEL: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

// syslog(type, buf, len): the kernel log, as `dmesg` reads it.
syscall!(__arm64_sys_syslog, r, {
    let (action, buf, len) = (r.regs[0], UserPtr::new(r.regs[1]), r.regs[2] as i32);
    let copy_out = |data: &[u8]| -> Result<u64, Errno> {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        if buf.is_null() {
            return Err(Errno::EINVAL);
        }
        let n = data.len().min(len as usize);
        // The newest `len` bytes, as Linux returns them.
        copy_to_user(buf, &data[data.len() - n..])?;
        Ok(n as u64)
    };
    match action {
        syslog::CLOSE | syslog::OPEN => Ok(0),
        syslog::READ => {
            if buf.is_null() || len < 0 {
                return Err(Errno::EINVAL);
            }
            let data = crate::printk::log_read_unread(len as usize);
            copy_to_user(buf, &data)?;
            Ok(data.len() as u64)
        }
        syslog::READ_ALL => copy_out(&crate::printk::log_read_all()),
        syslog::READ_CLEAR => {
            let n = copy_out(&crate::printk::log_read_all())?;
            crate::printk::log_clear();
            Ok(n)
        }
        syslog::CLEAR => {
            crate::printk::log_clear();
            Ok(0)
        }
        syslog::CONSOLE_OFF => {
            SAVED_LOGLEVEL.store(crate::printk::console_loglevel(), core::sync::atomic::Ordering::Relaxed);
            crate::printk::set_console_loglevel(1);
            Ok(0)
        }
        syslog::CONSOLE_ON => {
            let saved = SAVED_LOGLEVEL.swap(0, core::sync::atomic::Ordering::Relaxed);
            if saved != 0 {
                crate::printk::set_console_loglevel(saved);
            }
            Ok(0)
        }
        syslog::CONSOLE_LEVEL => {
            if !(1..=8).contains(&len) {
                return Err(Errno::EINVAL);
            }
            crate::printk::set_console_loglevel(len as u8);
            SAVED_LOGLEVEL.store(0, core::sync::atomic::Ordering::Relaxed);
            Ok(0)
        }
        syslog::SIZE_UNREAD => Ok(crate::printk::log_sizes().1 as u64),
        syslog::SIZE_BUFFER => Ok(crate::printk::LOG_BUF_LEN as u64),
        _ => Err(Errno::EINVAL),
    }
});
