//! System call entry (Linux's `invoke_syscall`): number in x8, arguments in
//! x0-x5, result or -errno in x0. Each handler is exported under Linux's
//! name, `__arm64_sys_<name>`, so kallsyms (and probes) find it.

mod cred;
mod fs;
mod misc;
mod mm;
mod namei;
mod net;
mod process;
mod read_write;
mod signal;
mod sys;
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

/// Reads back the value a Linux-named function (`vfs_read`,
/// `kernel_clone`, ...) leaves in x0: -errno (restart codes included) or a
/// value.
pub fn from_ret(v: i64) -> SysResult {
    match Errno::from_kernel_i32(v.wrapping_neg() as i32) {
        Some(e) if (-uapi::errno::MAX_ERRNO..0).contains(&v) => Err(e),
        _ => Ok(v as u64),
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

/// Handles `svc #0` from EL0, entered with interrupts masked, and returns
/// to user mode with every exception masked and the exit work done
/// (Linux's `el0_svc`). Anything that needs the slow path (system-call
/// events, the interrupt-mask hooks) holds one gate, tested once here and
/// once at exit: while it is off a call costs two NOPs more than in a
/// kernel without tracepoints.
#[inline(always)]
pub fn el0_svc(regs: &mut PtRegs) {
    if crate::trace::tracepoint::syscalls::syscall_work() {
        el0_svc_work(regs);
    } else {
        // The hooks are off (they hold the gate): nobody to tell.
        arch::cpu::raw_local_irq_enable();
        el0_svc_common(regs, false);
    }
}

/// The slow path: tells the interrupt-mask hooks of the entry and of the
/// unmasking, and traces the call. Entry code, untraced as Linux's
/// `noinstr`.
#[cold]
#[inline(never)]
#[ktest_macros::notrace]
fn el0_svc_work(regs: &mut PtRegs) {
    let me = crate::traps::el0t_64_sync_handler as *const () as usize;
    crate::trace::trace_preemptirq::irqentry_enter(me, me);
    arch::cpu::local_irq_enable();
    el0_svc_common(regs, true);
}

/// The system call itself (Linux's `el0_svc_common`); `work`: entered on
/// the slow path.
#[inline(always)]
fn el0_svc_common(regs: &mut PtRegs, work: bool) {
    regs.orig_x0 = regs.regs[0];
    // Linux takes the number as an int (`scno = regs->regs[8]` in
    // el0_svc_common): the upper 32 bits of x8 are ignored.
    let mut nr = regs.regs[8] as u32;
    regs.syscallno = i64::from(nr as i32);
    // A tracer's wait after its resume request lets the tracee have this CPU.
    crate::sched::syscall_entry_kick(matches!(
        nr as usize,
        uapi::syscalls::nr::WAIT4 | uapi::syscalls::nr::WAITID
    ));
    let traced = {
        let me = crate::sched::current();
        me.ptrace.syscall_traced() || me.ptrace.syscall_emu()
    };
    if traced {
        // A user's syscall(-1) fails with ENOSYS unless the tracer says
        // otherwise; a number the tracer sets to -1 skips the call.
        if regs.syscallno == arch::ptrace::NO_SYSCALL {
            regs.regs[0] = Errno::ENOSYS.as_neg() as u64;
        }
        let scno = crate::ptrace::syscall_trace_enter(regs);
        if scno == arch::ptrace::NO_SYSCALL {
            crate::ptrace::syscall_trace_exit(regs);
            arch::cpu::local_daif_mask();
            crate::traps::exit_to_user_mode(regs);
            return;
        }
        nr = scno as u32;
    }
    if work {
        crate::trace::tracepoint::syscalls::trace_sys_enter(regs, nr);
    }
    let r = invoke_syscall(nr, regs);
    // Tested again: events enabled during the call see its exit, as on
    // Linux (the write that enables them, first of all).
    if work || crate::trace::tracepoint::syscalls::syscall_work() {
        el0_svc_exit_work(regs, r, traced);
        return;
    }
    syscall_exit_ptrace(regs, traced);
    arch::cpu::local_daif_mask();
    // The gate is off, so are the interrupt-mask hooks, which hold it.
    crate::traps::exit_to_user_mode_loop(regs);
}

/// The slow exit: traces the exit, then ptrace's stop and the return to
/// user mode with the interrupt-mask hooks. Entry code, untraced.
#[cold]
#[inline(never)]
#[ktest_macros::notrace]
fn el0_svc_exit_work(regs: &mut PtRegs, r: i64, traced: bool) {
    crate::trace::tracepoint::syscalls::trace_sys_exit(regs, r);
    syscall_exit_ptrace(regs, traced);
    arch::cpu::local_daif_mask();
    crate::traps::exit_to_user_mode(regs);
}

/// ptrace's system-call exit stop, or the single step over `svc`, if due.
#[inline(always)]
fn syscall_exit_ptrace(regs: &mut PtRegs, traced: bool) {
    let me = crate::sched::current();
    if traced || me.ptrace.syscall_traced() || me.debug.single_step() {
        drop(me);
        crate::ptrace::syscall_trace_exit(regs);
    }
}

/// Calls system call `nr`'s handler with the saved registers and puts its
/// result in x0, returning it too (Linux's `invoke_syscall`). Out of line
/// and traceable under Linux's name, as there: it is the caller that
/// traces show for a system call's function (`__arm64_sys_getpid
/// <-invoke_syscall`, a return probe's `(invoke_syscall+0x.. <-
/// __arm64_sys_openat)`). In the page of its caller,
/// `el0t_64_sync_handler` ([`crate::traps::SYSCALL_ENTRY_SECTION`]).
#[allow(unsafe_code)] // exported under Linux's name, for traces and probes; its section
#[no_mangle]
#[unsafe(link_section = ".text.syscall_entry")]
#[inline(never)]
pub extern "C" fn invoke_syscall(nr: u32, regs: &mut PtRegs) -> i64 {
    use cred::*;
    use fs::*;
    use misc::*;
    use mm::*;
    use namei::*;
    use net::*;
    use process::*;
    use read_write::*;
    use signal::*;
    use sys::*;
    use time::*;
    use uapi::syscalls::nr;
    let handler: extern "C" fn(&mut PtRegs) -> i64 = match nr as usize {
        nr::GETCWD => __arm64_sys_getcwd,
        nr::DUP => __arm64_sys_dup,
        nr::DUP3 => __arm64_sys_dup3,
        nr::FCNTL => __arm64_sys_fcntl,
        nr::IOCTL => __arm64_sys_ioctl,
        nr::MKDIRAT => __arm64_sys_mkdirat,
        nr::UNLINKAT => __arm64_sys_unlinkat,
        nr::UMOUNT2 => __arm64_sys_umount2,
        nr::MOUNT => __arm64_sys_mount,
        nr::FACCESSAT => __arm64_sys_faccessat,
        nr::CHDIR => __arm64_sys_chdir,
        nr::FCHMODAT => __arm64_sys_fchmodat,
        nr::OPENAT => __arm64_sys_openat,
        nr::CLOSE => __arm64_sys_close,
        nr::PIPE2 => __arm64_sys_pipe2,
        nr::GETDENTS64 => __arm64_sys_getdents64,
        nr::LSEEK => __arm64_sys_lseek,
        nr::READ => __arm64_sys_read,
        nr::WRITE => __arm64_sys_write,
        nr::READV => __arm64_sys_readv,
        nr::WRITEV => __arm64_sys_writev,
        nr::PREAD64 => __arm64_sys_pread64,
        nr::PWRITE64 => __arm64_sys_pwrite64,
        nr::PREADV => __arm64_sys_preadv,
        nr::PWRITEV => __arm64_sys_pwritev,
        nr::PREADV2 => __arm64_sys_preadv2,
        nr::PWRITEV2 => __arm64_sys_pwritev2,
        nr::PPOLL => __arm64_sys_ppoll,
        nr::PSELECT6 => __arm64_sys_pselect6,
        nr::READLINKAT => __arm64_sys_readlinkat,
        nr::NEWFSTATAT => __arm64_sys_newfstatat,
        nr::FSTAT => __arm64_sys_fstat,
        nr::SYNC => __arm64_sys_sync,
        nr::EXIT => __arm64_sys_exit,
        nr::EXIT_GROUP => __arm64_sys_exit_group,
        nr::WAITID => __arm64_sys_waitid,
        nr::SET_TID_ADDRESS => __arm64_sys_set_tid_address,
        nr::FUTEX => __arm64_sys_futex,
        nr::SET_ROBUST_LIST => __arm64_sys_set_robust_list,
        nr::NANOSLEEP => __arm64_sys_nanosleep,
        nr::GETITIMER => __arm64_sys_getitimer,
        nr::SETITIMER => __arm64_sys_setitimer,
        nr::CLOCK_GETTIME => __arm64_sys_clock_gettime,
        nr::CLOCK_GETRES => __arm64_sys_clock_getres,
        nr::CLOCK_NANOSLEEP => __arm64_sys_clock_nanosleep,
        nr::SYSLOG => __arm64_sys_syslog,
        nr::SCHED_YIELD => __arm64_sys_sched_yield,
        nr::KILL => __arm64_sys_kill,
        nr::TKILL => __arm64_sys_tkill,
        nr::TGKILL => __arm64_sys_tgkill,
        nr::SIGALTSTACK => __arm64_sys_sigaltstack,
        nr::RT_SIGSUSPEND => __arm64_sys_rt_sigsuspend,
        nr::RT_SIGACTION => __arm64_sys_rt_sigaction,
        nr::RT_SIGPROCMASK => __arm64_sys_rt_sigprocmask,
        nr::RT_SIGPENDING => __arm64_sys_rt_sigpending,
        nr::RT_SIGRETURN => __arm64_sys_rt_sigreturn,
        nr::REBOOT => __arm64_sys_reboot,
        nr::TIMES => __arm64_sys_times,
        nr::SETPGID => __arm64_sys_setpgid,
        nr::GETPGID => __arm64_sys_getpgid,
        nr::GETSID => __arm64_sys_getsid,
        nr::SETSID => __arm64_sys_setsid,
        nr::UNAME => __arm64_sys_newuname,
        nr::GETRLIMIT => __arm64_sys_getrlimit,
        nr::GETRUSAGE => __arm64_sys_getrusage,
        nr::UMASK => __arm64_sys_umask,
        nr::PRCTL => __arm64_sys_prctl,
        nr::GETTIMEOFDAY => __arm64_sys_gettimeofday,
        nr::GETPID => __arm64_sys_getpid,
        nr::GETPPID => __arm64_sys_getppid,
        nr::GETUID => __arm64_sys_getuid,
        nr::GETEUID => __arm64_sys_geteuid,
        nr::GETGID => __arm64_sys_getgid,
        nr::GETEGID => __arm64_sys_getegid,
        nr::GETTID => __arm64_sys_gettid,
        nr::BRK => __arm64_sys_brk,
        nr::MUNMAP => __arm64_sys_munmap,
        nr::CLONE => __arm64_sys_clone,
        nr::EXECVE => __arm64_sys_execve,
        nr::MMAP => __arm64_sys_mmap,
        nr::MPROTECT => __arm64_sys_mprotect,
        nr::WAIT4 => __arm64_sys_wait4,
        nr::PRLIMIT64 => __arm64_sys_prlimit64,
        nr::GETRANDOM => __arm64_sys_getrandom,
        nr::STATFS => __arm64_sys_statfs,
        nr::FSTATFS => __arm64_sys_fstatfs,
        nr::CLOCK_SETTIME => __arm64_sys_clock_settime,
        nr::RESTART_SYSCALL => __arm64_sys_restart_syscall,
        nr::RSEQ => crate::rseq::__arm64_sys_rseq,
        nr::RT_SIGQUEUEINFO => __arm64_sys_rt_sigqueueinfo,
        nr::SETTIMEOFDAY => __arm64_sys_settimeofday,
        nr::RT_TGSIGQUEUEINFO => __arm64_sys_rt_tgsigqueueinfo,
        nr::SYMLINKAT => __arm64_sys_symlinkat,
        nr::LINKAT => __arm64_sys_linkat,
        nr::RENAMEAT => __arm64_sys_renameat,
        nr::RENAMEAT2 => __arm64_sys_renameat2,
        nr::MKNODAT => __arm64_sys_mknodat,
        nr::TRUNCATE => __arm64_sys_truncate,
        nr::FTRUNCATE => __arm64_sys_ftruncate,
        nr::FCHDIR => __arm64_sys_fchdir,
        nr::FCHMOD => __arm64_sys_fchmod,
        nr::FCHOWNAT => __arm64_sys_fchownat,
        nr::FCHOWN => __arm64_sys_fchown,
        nr::UTIMENSAT => __arm64_sys_utimensat,
        nr::STATX => __arm64_sys_statx,
        nr::SETXATTR => __arm64_sys_setxattr,
        nr::LSETXATTR => __arm64_sys_lsetxattr,
        nr::FSETXATTR => __arm64_sys_fsetxattr,
        nr::GETXATTR => __arm64_sys_getxattr,
        nr::LGETXATTR => __arm64_sys_lgetxattr,
        nr::FGETXATTR => __arm64_sys_fgetxattr,
        nr::LISTXATTR => __arm64_sys_listxattr,
        nr::LLISTXATTR => __arm64_sys_llistxattr,
        nr::FLISTXATTR => __arm64_sys_flistxattr,
        nr::REMOVEXATTR => __arm64_sys_removexattr,
        nr::LREMOVEXATTR => __arm64_sys_lremovexattr,
        nr::FREMOVEXATTR => __arm64_sys_fremovexattr,
        nr::SCHED_SETPARAM => __arm64_sys_sched_setparam,
        nr::SCHED_SETSCHEDULER => __arm64_sys_sched_setscheduler,
        nr::SCHED_GETSCHEDULER => __arm64_sys_sched_getscheduler,
        nr::SCHED_GETPARAM => __arm64_sys_sched_getparam,
        nr::SCHED_GET_PRIORITY_MAX => __arm64_sys_sched_get_priority_max,
        nr::SCHED_GET_PRIORITY_MIN => __arm64_sys_sched_get_priority_min,
        nr::SCHED_GETAFFINITY => __arm64_sys_sched_getaffinity,
        nr::SCHED_SETAFFINITY => __arm64_sys_sched_setaffinity,
        nr::SYSINFO => __arm64_sys_sysinfo,
        nr::GETRESUID => __arm64_sys_getresuid,
        nr::GETRESGID => __arm64_sys_getresgid,
        nr::SETUID => __arm64_sys_setuid,
        nr::SETGID => __arm64_sys_setgid,
        nr::SETREUID => __arm64_sys_setreuid,
        nr::SETREGID => __arm64_sys_setregid,
        nr::SETRESUID => __arm64_sys_setresuid,
        nr::SETRESGID => __arm64_sys_setresgid,
        nr::SETFSUID => __arm64_sys_setfsuid,
        nr::SETFSGID => __arm64_sys_setfsgid,
        nr::GETGROUPS => __arm64_sys_getgroups,
        nr::SETGROUPS => __arm64_sys_setgroups,
        nr::CAPGET => __arm64_sys_capget,
        nr::CAPSET => __arm64_sys_capset,
        nr::FADVISE64 => __arm64_sys_fadvise64,
        nr::GETCPU => __arm64_sys_getcpu,
        nr::RT_SIGTIMEDWAIT => __arm64_sys_rt_sigtimedwait,
        nr::MADVISE => __arm64_sys_madvise,
        nr::MINCORE => __arm64_sys_mincore,
        nr::MREMAP => __arm64_sys_mremap,
        nr::SENDFILE => __arm64_sys_sendfile,
        nr::COPY_FILE_RANGE => __arm64_sys_copy_file_range,
        nr::SPLICE => __arm64_sys_splice,
        nr::PTRACE => __arm64_sys_ptrace,
        nr::PROCESS_VM_READV => __arm64_sys_process_vm_readv,
        nr::PROCESS_VM_WRITEV => __arm64_sys_process_vm_writev,
        nr::PERSONALITY => __arm64_sys_personality,
        nr::SOCKET => __arm64_sys_socket,
        nr::SOCKETPAIR => __arm64_sys_socketpair,
        nr::BIND => __arm64_sys_bind,
        nr::LISTEN => __arm64_sys_listen,
        nr::ACCEPT => __arm64_sys_accept,
        nr::CONNECT => __arm64_sys_connect,
        nr::GETSOCKNAME => __arm64_sys_getsockname,
        nr::GETPEERNAME => __arm64_sys_getpeername,
        nr::SENDTO => __arm64_sys_sendto,
        nr::RECVFROM => __arm64_sys_recvfrom,
        nr::SETSOCKOPT => __arm64_sys_setsockopt,
        nr::GETSOCKOPT => __arm64_sys_getsockopt,
        nr::SHUTDOWN => __arm64_sys_shutdown,
        nr::SENDMSG => __arm64_sys_sendmsg,
        nr::RECVMSG => __arm64_sys_recvmsg,
        nr::ACCEPT4 => __arm64_sys_accept4,
        nr::RECVMMSG => __arm64_sys_recvmmsg,
        nr::SENDMMSG => __arm64_sys_sendmmsg,
        _ => __arm64_sys_ni_syscall,
    };
    let r = handler(regs);
    // As Linux's: the result in x0 here, so the handler is called, not
    // jumped to, and returns into this function.
    // (rt_sigreturn restores x0 itself: its result is the restored x0.)
    regs.regs[0] = r as u64;
    r
}

syscall!(__arm64_sys_ni_syscall, _regs, Err(Errno::ENOSYS));
