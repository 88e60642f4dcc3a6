//! System call entry (Linux's `invoke_syscall`): number in x8, arguments in
//! x0-x5, result or -errno in x0. Each handler is exported under Linux's
//! name, `__arm64_sys_<name>`, so kallsyms (and probes) find it.

mod fs;
mod misc;
mod mm;
mod process;
mod signal;
mod time;

use crate::errno::Errno;
use arch::ptrace::PtRegs;

/// A system call result: a value or an errno.
pub type SysResult = Result<u64, Errno>;

/// Turns a handler result into the value left in x0.
pub fn ret(r: SysResult) -> i64 {
    match r {
        Ok(v) => v as i64,
        Err(e) => e.as_neg(),
    }
}

/// Defines `__arm64_sys_<name>(regs)` around a body returning `SysResult`.
macro_rules! syscall {
    ($name:ident, $regs:ident, $body:expr) => {
        #[allow(unsafe_code)] // exported under Linux's name
        #[no_mangle]
        #[inline(never)]
        pub extern "C" fn $name($regs: &mut arch::ptrace::PtRegs) -> i64 {
            #[allow(clippy::redundant_closure_call)]
            $crate::syscalls::ret((|| -> $crate::syscalls::SysResult { $body })())
        }
    };
}
pub(crate) use syscall;

/// Handles `svc #0` from EL0.
pub fn el0_svc(regs: &mut PtRegs) {
    regs.orig_x0 = regs.regs[0];
    regs.syscallno = regs.regs[8] as i64;
    let nr = regs.regs[8];
    let r = invoke_syscall(nr, regs);
    // rt_sigreturn restores x0 itself (its result is the restored x0).
    regs.regs[0] = r as u64;
}

fn invoke_syscall(nr: u64, regs: &mut PtRegs) -> i64 {
    use fs::*;
    use misc::*;
    use mm::*;
    use process::*;
    use signal::*;
    use time::*;
    let handler: extern "C" fn(&mut PtRegs) -> i64 = match nr {
        17 => __arm64_sys_getcwd,
        23 => __arm64_sys_dup,
        24 => __arm64_sys_dup3,
        25 => __arm64_sys_fcntl,
        29 => __arm64_sys_ioctl,
        34 => __arm64_sys_mkdirat,
        35 => __arm64_sys_unlinkat,
        39 => __arm64_sys_umount2,
        40 => __arm64_sys_mount,
        43 => __arm64_sys_statfs,
        44 => __arm64_sys_fstatfs,
        48 => __arm64_sys_faccessat,
        49 => __arm64_sys_chdir,
        53 => __arm64_sys_fchmodat,
        56 => __arm64_sys_openat,
        57 => __arm64_sys_close,
        59 => __arm64_sys_pipe2,
        61 => __arm64_sys_getdents64,
        62 => __arm64_sys_lseek,
        63 => __arm64_sys_read,
        64 => __arm64_sys_write,
        65 => __arm64_sys_readv,
        66 => __arm64_sys_writev,
        67 => __arm64_sys_pread64,
        68 => __arm64_sys_pwrite64,
        73 => __arm64_sys_ppoll,
        78 => __arm64_sys_readlinkat,
        79 => __arm64_sys_newfstatat,
        80 => __arm64_sys_fstat,
        81 => __arm64_sys_sync,
        93 => __arm64_sys_exit,
        94 => __arm64_sys_exit_group,
        95 => __arm64_sys_waitid,
        96 => __arm64_sys_set_tid_address,
        98 => __arm64_sys_futex,
        99 => __arm64_sys_set_robust_list,
        101 => __arm64_sys_nanosleep,
        102 => __arm64_sys_getitimer,
        103 => __arm64_sys_setitimer,
        112 => __arm64_sys_clock_settime,
        113 => __arm64_sys_clock_gettime,
        114 => __arm64_sys_clock_getres,
        115 => __arm64_sys_clock_nanosleep,
        116 => __arm64_sys_syslog,
        124 => __arm64_sys_sched_yield,
        128 => __arm64_sys_restart_syscall,
        129 => __arm64_sys_kill,
        130 => __arm64_sys_tkill,
        131 => __arm64_sys_tgkill,
        132 => __arm64_sys_sigaltstack,
        133 => __arm64_sys_rt_sigsuspend,
        134 => __arm64_sys_rt_sigaction,
        135 => __arm64_sys_rt_sigprocmask,
        136 => __arm64_sys_rt_sigpending,
        138 => __arm64_sys_rt_sigqueueinfo,
        139 => __arm64_sys_rt_sigreturn,
        142 => __arm64_sys_reboot,
        153 => __arm64_sys_times,
        154 => __arm64_sys_setpgid,
        155 => __arm64_sys_getpgid,
        156 => __arm64_sys_getsid,
        157 => __arm64_sys_setsid,
        160 => __arm64_sys_uname,
        163 => __arm64_sys_getrlimit,
        165 => __arm64_sys_getrusage,
        166 => __arm64_sys_umask,
        167 => __arm64_sys_prctl,
        169 => __arm64_sys_gettimeofday,
        170 => __arm64_sys_settimeofday,
        172 => __arm64_sys_getpid,
        173 => __arm64_sys_getppid,
        174 => __arm64_sys_getuid,
        175 => __arm64_sys_geteuid,
        176 => __arm64_sys_getgid,
        177 => __arm64_sys_getegid,
        178 => __arm64_sys_gettid,
        214 => __arm64_sys_brk,
        215 => __arm64_sys_munmap,
        220 => __arm64_sys_clone,
        221 => __arm64_sys_execve,
        222 => __arm64_sys_mmap,
        226 => __arm64_sys_mprotect,
        240 => __arm64_sys_rt_tgsigqueueinfo,
        260 => __arm64_sys_wait4,
        261 => __arm64_sys_prlimit64,
        278 => __arm64_sys_getrandom,
        _ => __arm64_sys_ni_syscall,
    };
    handler(regs)
}

syscall!(__arm64_sys_ni_syscall, _regs, Err(Errno::ENOSYS));
