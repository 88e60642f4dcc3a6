//! The checks. Each forks its tracees; a tracee body is a function whose
//! result becomes its exit code.

use crate::sys::{self, ptrace, wait};
use crate::{check_eq, checks, Check, Context, Fail, Outcome};
use alloc::format;
use core::sync::atomic::{AtomicU64, Ordering};
use rt::process::{fork, Fork};
use rt::Errno;
use uapi::ptrace::*;
use uapi::signal::{SigInfo, SIGINFO_SIZE};

// Signal numbers as the `int`s kill() and wait statuses use, from uapi.
const SIGTRAP: i32 = uapi::signal::SIGTRAP as i32;
const SIGKILL: i32 = uapi::signal::SIGKILL as i32;
const SIGUSR1: i32 = uapi::signal::SIGUSR1 as i32;
const SIGUSR2: i32 = uapi::signal::SIGUSR2 as i32;
const SIGTERM: i32 = uapi::signal::SIGTERM as i32;
const SIGCHLD: i32 = uapi::signal::SIGCHLD as i32;
const SIGCONT: i32 = uapi::signal::SIGCONT as i32;
const SIGSTOP: i32 = uapi::signal::SIGSTOP as i32;
/// `sizeof(sigset_t)`, the only size PTRACE_GETSIGMASK/SETSIGMASK take.
const SIGSET_SIZE: usize = uapi::signal::SIGSET_SIZE as usize;
use uapi::signal::code::{CLD_TRAPPED, SI_KERNEL, SI_USER};
use uapi::syscalls::nr;
use uapi::uio::UIO_MAXIOV;
use uapi::wait::{w_exitcode, w_stopcode};

mod cred;
mod groupstop;
mod hwdebug;
mod peeksiginfo;
pub use cred::creds_after_exec;
use cred::*;
use groupstop::*;
use hwdebug::*;
use peeksiginfo::*;

/// Every check, in the order they run.
pub static ALL: &[Check] = checks![
    traceme_then_sigstop_reports_signal_stop_with_siginfo,
    cont_with_zero_suppresses_the_signal,
    cont_with_a_signal_delivers_it,
    cont_with_another_signal_replaces_it,
    setsiginfo_replaces_what_getsiginfo_reports,
    peekdata_and_pokedata_reach_tracee_memory,
    poketext_patches_tracee_text_without_touching_ours,
    peek_and_poke_of_unmapped_address_are_eio,
    getregset_prstatus_shows_the_stopped_syscall,
    setregset_prstatus_changes_the_syscall_result,
    regset_iovec_length_is_checked_and_cut,
    regset_fpsimd_reads_and_writes_d0,
    regset_tls_reads_and_writes_tpidr_el0,
    syscall_stops_mark_x7_and_report_tracesysgood,
    syscall_info_sizes_and_contents_at_entry_exit_and_signal_stop,
    syscall_stop_without_tracesysgood_is_plain_sigtrap,
    syscall_skipped_by_number_minus_one_keeps_tracer_result,
    syscall_number_changed_at_entry_runs_the_new_call,
    syscall_argument_changed_at_entry_is_used,
    tracefork_reports_event_and_attaches_the_child,
    tracevfork_and_vforkdone_report_events,
    traceclone_attaches_a_thread_whose_exit_the_tracer_reaps,
    group_exit_reports_a_stopped_traced_thread_before_its_leader,
    traceexec_reports_event_with_old_pid,
    exec_without_traceexec_raises_sigtrap,
    traceexit_reports_exit_status_as_message,
    seize_does_not_stop_and_interrupt_reports_event_stop,
    seize_checks_addr_and_options,
    setoptions_rejects_unknown_bits,
    interrupt_and_listen_need_seize,
    group_stop_of_seized_tracee_is_event_stop_and_listen_waits,
    attach_stops_with_sigstop_and_detach_resumes,
    attach_and_traceme_errors,
    requests_need_a_stopped_tracee_of_ours,
    getsigmask_and_setsigmask,
    sigkill_ends_a_tracee_stopped_at_syscall_entry,
    ptrace_kill_ends_a_running_tracee,
    wnohang_and_waitid_wnowait_report_trapped,
    tracer_exit_detaches_and_tracee_runs_on,
    exitkill_kills_tracees_when_tracer_exits,
    real_parent_reaps_after_tracer_collects_exit,
    proc_status_shows_tracer_pid,
    // credentials
    set_id_calls_follow_linux_rules_and_getresuid_shows_them,
    set_id_calls_change_the_calling_thread_only,
    root_may_attach_to_and_read_a_process_that_dropped_root,
    a_user_may_not_attach_to_root_nor_to_an_undumpable_user_until_it_sets_dumpable,
    exec_keeps_ids_resets_the_saved_uid_and_makes_the_process_dumpable,
    process_vm_readv_and_writev_copy_and_honour_protections,
    process_vm_readv_stops_at_an_unmapped_remote_page_and_faults_local_pages_in,
    process_vm_readv_races_the_targets_munmap_of_the_page_read,
    process_vm_writev_stops_at_a_read_only_or_unmapped_remote_page_or_a_local_fault,
    process_vm_calls_check_flags_counts_and_pid_in_linux_order,
    iovec_lengths_are_checked_each_and_their_total_cut_as_import_iovec,
    // strace's start and SIGCONT's traps for seized tracees
    seize_of_self_stopped_child_then_sigcont_retraps_at_listen,
    sigcont_to_running_seized_tracee_traps_before_its_delivery,
    sigcont_during_syscall_stop_traps_after_resume,
    peekdata_of_an_untouched_file_page_reads_the_file,
    // /proc/<pid>/mem
    proc_mem_reads_and_writes_tracee_data_and_text,
    proc_mem_unmapped_address_is_eio_and_ends_a_transfer,
    proc_task_mem_is_the_thread_address_space,
    proc_mem_of_a_zombie_is_esrch_and_an_earlier_fd_reads_nothing,
    singlestep_runs_one_instruction_and_reports_trap_trace,
    singlestep_over_svc_stops_after_the_call_with_si_user,
    singlestep_into_a_restarted_svc_stops_after_the_restarted_call,
    singlestep_into_a_signal_handler_stops_at_its_entry,
    singlestep_through_a_loop_stops_at_every_instruction,
    detach_after_singlestep_lets_the_tracee_run_freely,
    sysemu_stops_at_entry_and_skips_the_call,
    resume_requests_check_the_signal,
    hw_regsets_report_slots_and_check_controls,
    hw_breakpoint_stops_with_trap_hwbkpt_and_hits_again_until_disabled,
    hw_breakpoint_disabled_at_its_hit_lets_a_step_run_the_instruction,
    hw_watchpoint_reports_the_data_address_and_hits_again_until_disabled,
    peeksiginfo_reads_private_and_shared_queues_in_order,
    // multi-threaded group stops, rseq
    group_stop_stops_every_thread_before_the_parent_hears_and_sigcont_resumes_them,
    group_stop_of_traced_threads_is_reported_by_each_and_ends_as_each_resumes,
    group_stop_of_seized_threads_traps_each_and_interrupt_and_sigcont_retrap_them,
    threads_detached_in_a_group_stop_stay_stopped_until_sigcont,
    job_control_stops_are_discarded_in_an_orphaned_process_group_and_sigstop_still_stops,
    thread_cloned_while_its_group_stops_joins_the_stop_until_sigcont,
    proc_task_stat_and_status_show_each_threads_own_state,
    process_directed_signal_stops_the_leader_not_the_running_thread,
    proc_stat_of_a_process_whose_leader_exited_shows_the_zombie_leader,
    orphaned_process_group_with_a_stopped_member_gets_sighup_then_sigcont,
    fork_held_while_a_signal_comes_restarts_after_the_handler_and_forks_once,
    get_rseq_configuration_reports_the_registered_area,
];

// ------------------------------------------------------------- helpers

fn stopped(sig: i32) -> i32 {
    w_stopcode(sig)
}

/// The `si_code` (and wait status signal part) of a ptrace event stop:
/// SIGTRAP, or the stopping signal for PTRACE_EVENT_STOP, with the event
/// in bits 8..
fn event_code(sig: i32, event: u32) -> i32 {
    sig | ((event as i32) << 8)
}

fn event_stop(event: u32) -> i32 {
    w_stopcode(event_code(SIGTRAP, event))
}

/// Forks a child that runs `body` and exits with its result.
fn spawn(body: fn() -> i32) -> Result<i32, Fail> {
    match fork().ctx("fork")? {
        Fork::Child => sys::exit_now(body()),
        Fork::Parent(pid) => Ok(pid),
    }
}

/// Forks a child that asks to be traced, stops itself with SIGSTOP, then
/// runs `body`; returns it in that signal-delivery stop (collected).
fn spawn_traced(body: fn() -> i32) -> Result<i32, Fail> {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            if ptrace(PTRACE_TRACEME, 0, 0, 0).is_err() {
                sys::exit_now(90);
            }
            sys::raise(SIGSTOP);
            sys::exit_now(body())
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "first stop")?;
    Ok(pid)
}

fn expect_wait(pid: i32, status: i32, what: &str) -> Outcome {
    let (got_pid, st) = wait(pid, 0).ctx(what)?;
    check_eq!(got_pid, pid, "{what}: pid");
    check_eq!(st, status, "{what}: wait status");
    Ok(())
}

fn expect_exit(pid: i32, code: i32) -> Outcome {
    expect_wait(pid, w_exitcode(code, 0), "exit")
}

fn cont(pid: i32, sig: i32) -> Outcome {
    ptrace(PTRACE_CONT, pid, 0, sig as usize).ctx("PTRACE_CONT")?;
    Ok(())
}

fn syscall(pid: i32, sig: i32) -> Outcome {
    ptrace(PTRACE_SYSCALL, pid, 0, sig as usize).ctx("PTRACE_SYSCALL")?;
    Ok(())
}

fn siginfo(pid: i32) -> Result<SigInfo, Fail> {
    let mut b = [0u8; SIGINFO_SIZE];
    ptrace(PTRACE_GETSIGINFO, pid, 0, b.as_mut_ptr() as usize).ctx("PTRACE_GETSIGINFO")?;
    Ok(SigInfo::from_bytes(&b))
}

/// GETREGSET into `buf` with iov_len `len`; the length written back.
fn getregset(pid: i32, nt: u32, buf: &mut [u8], len: usize) -> Result<usize, Errno> {
    let mut iov = [buf.as_mut_ptr() as usize, len];
    ptrace(PTRACE_GETREGSET, pid, nt as usize, iov.as_mut_ptr() as usize)?;
    Ok(iov[1])
}

fn setregset(pid: i32, nt: u32, buf: &[u8]) -> Result<usize, Errno> {
    let mut iov = [buf.as_ptr() as usize, buf.len()];
    ptrace(PTRACE_SETREGSET, pid, nt as usize, iov.as_mut_ptr() as usize)?;
    Ok(iov[1])
}

fn regs(pid: i32) -> Result<UserPtRegs, Fail> {
    let mut b = [0u8; UserPtRegs::SIZE];
    let n = getregset(pid, NT_PRSTATUS, &mut b, UserPtRegs::SIZE).ctx("GETREGSET NT_PRSTATUS")?;
    check_eq!(n, UserPtRegs::SIZE, "NT_PRSTATUS length");
    Ok(UserPtRegs::from_bytes(&b))
}

fn set_regs(pid: i32, r: &UserPtRegs) -> Outcome {
    setregset(pid, NT_PRSTATUS, &r.to_bytes()).ctx("SETREGSET NT_PRSTATUS")?;
    Ok(())
}

fn syscall_nr(pid: i32) -> Result<i32, Fail> {
    let mut b = [0u8; 4];
    getregset(pid, NT_ARM_SYSTEM_CALL, &mut b, 4).ctx("GETREGSET NT_ARM_SYSTEM_CALL")?;
    Ok(i32::from_le_bytes(b))
}

fn set_syscall_nr(pid: i32, n: i32) -> Outcome {
    setregset(pid, NT_ARM_SYSTEM_CALL, &n.to_le_bytes()).ctx("SETREGSET NT_ARM_SYSTEM_CALL")?;
    Ok(())
}

fn eventmsg(pid: i32) -> Result<u64, Fail> {
    let mut m: u64 = 0;
    ptrace(PTRACE_GETEVENTMSG, pid, 0, &mut m as *mut u64 as usize).ctx("PTRACE_GETEVENTMSG")?;
    Ok(m)
}

fn expect_err(r: Result<usize, Errno>, want: Errno, what: &str) -> Outcome {
    check_eq!(r.err(), Some(want), "{what}");
    Ok(())
}

/// Kills `pid` and reaps it (cleanup after a check's assertions).
fn kill_and_reap(pid: i32) {
    let _ = rt::process::kill(pid, SIGKILL);
    let _ = wait(pid, 0);
}

// ------------------------------------------------------------- signal stops

fn traceme_then_sigstop_reports_signal_stop_with_siginfo() -> Outcome {
    let pid = spawn_traced(|| 7)?;
    let si = siginfo(pid)?;
    check_eq!(
        (si.signo, si.code, si.pid),
        (SIGSTOP as u32, SI_USER, pid as u32),
        "siginfo"
    );
    cont(pid, 0)?;
    expect_exit(pid, 7)
}

fn cont_with_zero_suppresses_the_signal() -> Outcome {
    let pid = spawn_traced(|| {
        sys::raise(SIGTERM);
        3
    })?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGTERM), "SIGTERM delivery stop")?;
    cont(pid, 0)?;
    expect_exit(pid, 3)
}

fn cont_with_a_signal_delivers_it() -> Outcome {
    let pid = spawn_traced(|| 3)?;
    cont(pid, SIGTERM)?;
    expect_wait(pid, SIGTERM, "killed by the injected SIGTERM")
}

fn cont_with_another_signal_replaces_it() -> Outcome {
    let pid = spawn_traced(|| {
        sys::raise(SIGUSR1);
        3
    })?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGUSR1), "SIGUSR1 delivery stop")?;
    cont(pid, SIGUSR2)?;
    expect_wait(pid, SIGUSR2, "killed by the replacing SIGUSR2")
}

fn setsiginfo_replaces_what_getsiginfo_reports() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let mut si = siginfo(pid)?;
    si.code = -60;
    si.pid = 4242;
    si.uid = 77;
    ptrace(PTRACE_SETSIGINFO, pid, 0, si.to_bytes().as_ptr() as usize).ctx("SETSIGINFO")?;
    let back = siginfo(pid)?;
    check_eq!(
        (back.signo, back.code, back.pid, back.uid),
        (SIGSTOP as u32, -60, 4242, 77),
        "siginfo after SETSIGINFO"
    );
    expect_err(
        ptrace(PTRACE_GETSIGINFO, pid, 0, 8),
        Errno::EFAULT,
        "GETSIGINFO to a bad address",
    )?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

// ------------------------------------------------------------- memory

static WORD: AtomicU64 = AtomicU64::new(0);

fn peekdata_and_pokedata_reach_tracee_memory() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            WORD.store(0x1122_3344_5566_7788, Ordering::SeqCst);
            let _ = ptrace(PTRACE_TRACEME, 0, 0, 0);
            sys::raise(SIGSTOP);
            sys::exit_now(i32::from(WORD.load(Ordering::SeqCst) != 0x0bad_cafe_dead_beef))
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "stop")?;
    let addr = &WORD as *const AtomicU64 as usize;
    let mut got: u64 = 0;
    ptrace(PTRACE_PEEKDATA, pid, addr, &mut got as *mut u64 as usize).ctx("PEEKDATA")?;
    check_eq!(got, 0x1122_3344_5566_7788, "PEEKDATA of the tracee's word");
    check_eq!(WORD.load(Ordering::SeqCst), 0, "our own copy");
    ptrace(PTRACE_POKEDATA, pid, addr, 0x0bad_cafe_dead_beef).ctx("POKEDATA")?;
    check_eq!(WORD.load(Ordering::SeqCst), 0, "our own copy after POKEDATA");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn poketext_patches_tracee_text_without_touching_ours() -> Outcome {
    let pid = spawn_traced(|| sys::answer() as i32)?;
    let addr = sys::answer_addr();
    let mut orig: u64 = 0;
    ptrace(PTRACE_PEEKTEXT, pid, addr, &mut orig as *mut u64 as usize).ctx("PEEKTEXT")?;
    check_eq!(orig, 0xd65f_03c0_d280_0520, "mov x0, #41; ret");
    // mov x0, #42; ret
    ptrace(PTRACE_POKETEXT, pid, addr, 0xd65f_03c0_d280_0540).ctx("POKETEXT")?;
    let mut now: u64 = 0;
    ptrace(PTRACE_PEEKTEXT, pid, addr, &mut now as *mut u64 as usize).ctx("PEEKTEXT")?;
    check_eq!(now, 0xd65f_03c0_d280_0540, "the patched text");
    check_eq!(sys::answer(), 41, "our own text");
    cont(pid, 0)?;
    expect_exit(pid, 42)
}

fn peek_and_poke_of_unmapped_address_are_eio() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let mut w: u64 = 0;
    expect_err(
        ptrace(PTRACE_PEEKDATA, pid, 16, &mut w as *mut u64 as usize),
        Errno::EIO,
        "PEEKDATA at 16",
    )?;
    expect_err(ptrace(PTRACE_POKEDATA, pid, 16, 1), Errno::EIO, "POKEDATA at 16")?;
    expect_err(
        ptrace(PTRACE_PEEKUSR, pid, 0, &mut w as *mut u64 as usize),
        Errno::EIO,
        "PEEKUSR",
    )?;
    let addr = &WORD as *const AtomicU64 as usize;
    expect_err(
        ptrace(PTRACE_PEEKDATA, pid, addr, 8),
        Errno::EFAULT,
        "PEEKDATA into a bad buffer",
    )?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

// ------------------------------------------------------------- registers

fn getregset_prstatus_shows_the_stopped_syscall() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let r = regs(pid)?;
    // Stopped on the way out of kill(getpid(), SIGSTOP), which returned 0.
    check_eq!(r.regs[8], 129, "x8 (kill)");
    check_eq!(r.regs[0], 0, "x0 (kill's result)");
    check_eq!(r.regs[1], SIGSTOP as u64, "x1 (the signal)");
    let mut insn: u64 = 0;
    ptrace(PTRACE_PEEKTEXT, pid, r.pc as usize - 4, &mut insn as *mut u64 as usize).ctx("PEEKTEXT at pc - 4")?;
    check_eq!(insn as u32, 0xd400_0001, "the instruction before pc (svc #0)");
    check_eq!(r.pstate & 0xf, 0, "EL0t");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn setregset_prstatus_changes_the_syscall_result() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            let _ = ptrace(PTRACE_TRACEME, 0, 0, 0);
            let (r, _) = sys::kill_self_marked(SIGSTOP, 0);
            sys::exit_now(i32::from(r != 1234))
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "stop")?;
    let mut r = regs(pid)?;
    r.regs[0] = 1234;
    set_regs(pid, &r)?;
    check_eq!(regs(pid)?.regs[0], 1234, "x0 read back");
    let mut bad = r;
    bad.pstate = psr::PSR_MODE_EL1h;
    expect_err(
        setregset(pid, NT_PRSTATUS, &bad.to_bytes()),
        Errno::EINVAL,
        "an EL1 pstate",
    )?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn regset_iovec_length_is_checked_and_cut() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let mut big = [0xaau8; 400];
    check_eq!(
        getregset(pid, NT_PRSTATUS, &mut big, 400),
        Ok(UserPtRegs::SIZE),
        "a long iovec is cut to the regset"
    );
    let mut small = [0xaau8; 16];
    check_eq!(getregset(pid, NT_PRSTATUS, &mut small, 8), Ok(8), "one register");
    check_eq!(&small[8..], &[0xaa; 8][..], "bytes past the length untouched");
    check_eq!(
        getregset(pid, NT_PRSTATUS, &mut small, 7),
        Err(Errno::EINVAL),
        "a length not a multiple of 8"
    );
    check_eq!(getregset(pid, NT_PRSTATUS, &mut small, 0), Ok(0), "length 0");
    check_eq!(
        getregset(pid, NT_PRFPREG, &mut big, 400),
        Ok(400),
        "NT_PRFPREG (520 bytes) cut to 400"
    );
    check_eq!(
        getregset(pid, NT_ARM_TLS, &mut big, 400),
        Ok(16),
        "NT_ARM_TLS (TPIDR_EL0, TPIDR2_EL0)"
    );
    check_eq!(
        getregset(pid, NT_ARM_SYSTEM_CALL, &mut big, 400),
        Ok(4),
        "NT_ARM_SYSTEM_CALL"
    );
    check_eq!(
        getregset(pid, 0x999, &mut big, 400),
        Err(Errno::EINVAL),
        "an unknown regset"
    );
    let mut iov = [big.as_mut_ptr() as usize, 8];
    check_eq!(
        ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS as usize, 8).err(),
        Some(Errno::EFAULT),
        "a bad iovec address"
    );
    iov[0] = 8;
    check_eq!(
        ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS as usize, iov.as_mut_ptr() as usize).err(),
        Some(Errno::EFAULT),
        "a bad buffer"
    );
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn regset_fpsimd_reads_and_writes_d0() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            let _ = ptrace(PTRACE_TRACEME, 0, 0, 0);
            let d0 = sys::kill_self_with_d0(SIGSTOP, 0x4001_2345_6789_abcd);
            sys::exit_now(i32::from(d0 != 0x7ff0_0000_0000_0001))
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "stop")?;
    let mut b = [0u8; UserFpsimdState::SIZE];
    check_eq!(
        getregset(pid, NT_PRFPREG, &mut b, UserFpsimdState::SIZE),
        Ok(UserFpsimdState::SIZE),
        "NT_PRFPREG length"
    );
    let mut fp = UserFpsimdState::from_bytes(&b);
    check_eq!(fp.vregs[0] as u64, 0x4001_2345_6789_abcd, "d0");
    fp.vregs[0] = 0x7ff0_0000_0000_0001;
    setregset(pid, NT_PRFPREG, &fp.to_bytes()).ctx("SETREGSET NT_PRFPREG")?;
    check_eq!(
        getregset(pid, NT_PRFPREG, &mut b, UserFpsimdState::SIZE),
        Ok(UserFpsimdState::SIZE),
        "NT_PRFPREG again"
    );
    check_eq!(
        UserFpsimdState::from_bytes(&b).vregs[0] as u64,
        0x7ff0_0000_0000_0001,
        "d0 read back"
    );
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn regset_tls_reads_and_writes_tpidr_el0() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            let _ = ptrace(PTRACE_TRACEME, 0, 0, 0);
            let tp = sys::kill_self_with_tls(SIGSTOP, 0x1234_5678);
            sys::exit_now(i32::from(tp != 0xfeed_f00d))
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "stop")?;
    let mut b = [0u8; 8];
    getregset(pid, NT_ARM_TLS, &mut b, 8).ctx("GETREGSET NT_ARM_TLS")?;
    check_eq!(u64::from_le_bytes(b), 0x1234_5678, "TPIDR_EL0");
    setregset(pid, NT_ARM_TLS, &0xfeed_f00du64.to_le_bytes()).ctx("SETREGSET NT_ARM_TLS")?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

// ------------------------------------------------------------- syscall stops

/// A traced child with TRACESYSGOOD set, in its first SIGSTOP stop.
fn spawn_sysgood(body: fn() -> i32) -> Result<i32, Fail> {
    let pid = spawn_traced(body)?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD as usize).ctx("SETOPTIONS")?;
    Ok(pid)
}

fn syscall_stops_mark_x7_and_report_tracesysgood() -> Outcome {
    let pid = spawn_sysgood(|| {
        let (_, x7) = sys::kill_self_marked(0, 0x5a5a);
        i32::from(x7 != 0x5a5a)
    })?;
    // getpid() first, then kill(pid, 0) with x7 = 0x5a5a.
    for _ in 0..2 {
        syscall(pid, 0)?;
        expect_wait(pid, stopped(SIGTRAP | 0x80), "entry stop")?;
        let r = regs(pid)?;
        check_eq!(r.regs[7], 0, "x7 at entry");
        let si = siginfo(pid)?;
        check_eq!((si.signo, si.code), (SIGTRAP as u32, SIGTRAP | 0x80), "entry siginfo");
        check_eq!(eventmsg(pid)?, PTRACE_EVENTMSG_SYSCALL_ENTRY, "entry event message");
        syscall(pid, 0)?;
        expect_wait(pid, stopped(SIGTRAP | 0x80), "exit stop")?;
        check_eq!(regs(pid)?.regs[7], 1, "x7 at exit");
        check_eq!(eventmsg(pid)?, PTRACE_EVENTMSG_SYSCALL_EXIT, "exit event message");
    }
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn syscall_info(pid: i32, size: usize) -> Result<(usize, [u8; 88]), Fail> {
    let mut b = [0xeeu8; 88];
    let n = ptrace(PTRACE_GET_SYSCALL_INFO, pid, size, b.as_mut_ptr() as usize).ctx("GET_SYSCALL_INFO")?;
    Ok((n, b))
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn syscall_info_sizes_and_contents_at_entry_exit_and_signal_stop() -> Outcome {
    let pid = spawn_sysgood(|| {
        sys::syscall_raw(rt::syscall::nr::GETPPID, 11, 22, 33);
        0
    })?;
    let (n, b) = syscall_info(pid, 88)?;
    check_eq!((n, b[0]), (24, PTRACE_SYSCALL_INFO_NONE), "at the signal stop");
    check_eq!(b[24], 0xee, "nothing written past the size");
    check_eq!(u32::from_le_bytes([b[4], b[5], b[6], b[7]]), AUDIT_ARCH_AARCH64, "arch");
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP | 0x80), "entry stop")?;
    let (n, b) = syscall_info(pid, 88)?;
    check_eq!((n, b[0]), (80, PTRACE_SYSCALL_INFO_ENTRY), "entry");
    check_eq!(le64(&b, 24), rt::syscall::nr::GETPPID as u64, "nr");
    check_eq!((le64(&b, 32), le64(&b, 40), le64(&b, 48)), (11, 22, 33), "args");
    let r = regs(pid)?;
    check_eq!((le64(&b, 8), le64(&b, 16)), (r.pc, r.sp), "pc and sp");
    let (n, b) = syscall_info(pid, 10)?;
    check_eq!((n, b[9], b[10]), (80, b[9], 0xee), "a short buffer gets 10 bytes");
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP | 0x80), "exit stop")?;
    let (n, b) = syscall_info(pid, 88)?;
    check_eq!((n, b[0]), (33, PTRACE_SYSCALL_INFO_EXIT), "exit");
    check_eq!(
        (le64(&b, 24) as i64, b[32]),
        (sys::getpid() as i64, 0),
        "rval and is_error"
    );
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn syscall_stop_without_tracesysgood_is_plain_sigtrap() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP), "entry stop")?;
    let (n, b) = syscall_info(pid, 88)?;
    check_eq!(
        (n, b[0]),
        (24, PTRACE_SYSCALL_INFO_NONE),
        "no syscall info without TRACESYSGOOD"
    );
    check_eq!(siginfo(pid)?.code, SIGTRAP, "si_code");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn syscall_skipped_by_number_minus_one_keeps_tracer_result() -> Outcome {
    let pid = spawn_sysgood(|| {
        // Were it run, this would kill the child.
        let r = sys::kill_raw(sys::getpid(), SIGKILL);
        i32::from(r != 77)
    })?;
    // getpid() runs; then the kill.
    for _ in 0..2 {
        syscall(pid, 0)?;
        expect_wait(pid, stopped(SIGTRAP | 0x80), "entry stop")?;
        if syscall_nr(pid)? == nr::KILL as i32 {
            set_syscall_nr(pid, -1)?;
            check_eq!(syscall_nr(pid)?, -1, "the number read back");
            syscall(pid, 0)?;
            expect_wait(pid, stopped(SIGTRAP | 0x80), "exit stop of the skipped call")?;
            let mut r = regs(pid)?;
            check_eq!(r.regs[0], pid as u64, "x0 of a skipped call is its first argument");
            r.regs[0] = 77;
            set_regs(pid, &r)?;
            cont(pid, 0)?;
            return expect_exit(pid, 0);
        }
        syscall(pid, 0)?;
        expect_wait(pid, stopped(SIGTRAP | 0x80), "exit stop")?;
    }
    Err(Fail("never saw the kill".into()))
}

fn syscall_number_changed_at_entry_runs_the_new_call() -> Outcome {
    let pid = spawn_sysgood(|| {
        let r = sys::syscall_raw(rt::syscall::nr::GETPPID, 0, 0, 0);
        i32::from(r != sys::getpid() as isize)
    })?;
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP | 0x80), "entry stop")?;
    check_eq!(syscall_nr(pid)?, rt::syscall::nr::GETPPID as i32, "getppid");
    set_syscall_nr(pid, rt::syscall::nr::GETPID as i32)?;
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP | 0x80), "exit stop")?;
    check_eq!(regs(pid)?.regs[0], pid as u64, "getpid's result at exit");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn syscall_argument_changed_at_entry_is_used() -> Outcome {
    let pid = spawn_sysgood(|| 5)?;
    // The body's exit_group(5): change its argument.
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP | 0x80), "entry stop")?;
    check_eq!(syscall_nr(pid)?, nr::EXIT_GROUP as i32, "exit_group");
    let mut r = regs(pid)?;
    check_eq!(r.regs[0], 5, "its argument");
    r.regs[0] = 9;
    set_regs(pid, &r)?;
    syscall(pid, 0)?;
    expect_exit(pid, 9)
}

// ------------------------------------------------------------- events

fn tracefork_reports_event_and_attaches_the_child() -> Outcome {
    let pid = spawn_traced(|| match fork() {
        Ok(Fork::Child) => 4,
        Ok(Fork::Parent(c)) => {
            let r = rt::process::waitpid(c);
            i32::from(r != Ok(rt::process::WaitStatus::Exited(4)))
        }
        Err(_) => 50,
    })?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK as usize).ctx("SETOPTIONS")?;
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_FORK), "fork event")?;
    let child = eventmsg(pid)? as i32;
    let si = siginfo(pid)?;
    check_eq!(
        (si.signo, si.code),
        (SIGTRAP as u32, event_code(SIGTRAP, PTRACE_EVENT_FORK)),
        "event siginfo"
    );
    expect_wait(child, stopped(SIGSTOP), "the auto-attached child's SIGSTOP")?;
    check_eq!(sys_tracer_pid(child)?, sys::getpid(), "the child's TracerPid");
    cont(child, 0)?;
    cont(pid, 0)?;
    expect_wait(child, w_exitcode(4, 0), "the child's exit, to its tracer")?;
    expect_wait(
        pid,
        stopped(SIGCHLD),
        "the SIGCHLD of that exit, a tracer sees even ignored signals",
    )?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn tracevfork_and_vforkdone_report_events() -> Outcome {
    let pid = spawn_traced(|| {
        let c = sys::vfork_exit(6);
        match rt::process::waitpid(c as i32) {
            Ok(rt::process::WaitStatus::Exited(6)) => 0,
            _ => 1,
        }
    })?;
    ptrace(
        PTRACE_SETOPTIONS,
        pid,
        0,
        (PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE) as usize,
    )
    .ctx("SETOPTIONS")?;
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_VFORK), "vfork event")?;
    let child = eventmsg(pid)? as i32;
    expect_wait(child, stopped(SIGSTOP), "the vfork child's SIGSTOP")?;
    cont(pid, 0)?;
    cont(child, 0)?;
    expect_wait(child, w_exitcode(6, 0), "the vfork child's exit")?;
    expect_wait(pid, event_stop(PTRACE_EVENT_VFORK_DONE), "vfork-done event")?;
    check_eq!(eventmsg(pid)? as i32, child, "vfork-done message");
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGCHLD), "the vfork child's SIGCHLD")?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn traceclone_attaches_a_thread_whose_exit_the_tracer_reaps() -> Outcome {
    let pid = spawn_traced(|| {
        let tid = sys::thread_exit(7);
        if tid <= 0 {
            return 50;
        }
        // Give the thread time to be gone before the group exits.
        sys::sleep_ms(100);
        0
    })?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE as usize).ctx("SETOPTIONS")?;
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_CLONE), "clone event")?;
    let tid = eventmsg(pid)? as i32;
    check_eq!(tid != pid && tid > 0, true, "a new thread id");
    expect_wait(tid, stopped(SIGSTOP), "the thread's first stop")?;
    check_eq!(sys_tracer_pid(pid)?, sys::getpid(), "TracerPid");
    cont(tid, 0)?;
    expect_wait(tid, w_exitcode(7, 0), "the thread's exit, reported to its tracer")?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// The leader exits the group while its traced thread sits in a ptrace
/// stop: the thread's death is reported to the tracer under its own tid
/// (with the group's exit code), and only then the leader's, whose report
/// waits until the group is empty (Linux's delay_group_leader).
fn group_exit_reports_a_stopped_traced_thread_before_its_leader() -> Outcome {
    let pid = spawn_traced(|| {
        let tid = sys::thread_exit(7);
        if tid <= 0 {
            return 50;
        }
        3
    })?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE as usize).ctx("SETOPTIONS")?;
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_CLONE), "clone event")?;
    let tid = eventmsg(pid)? as i32;
    expect_wait(tid, stopped(SIGSTOP), "the thread's first stop")?;
    // The thread stays stopped; the leader goes on to exit_group(3).
    cont(pid, 0)?;
    expect_wait(tid, w_exitcode(3, 0), "the stopped thread's death by the group exit")?;
    expect_exit(pid, 3)
}

fn traceexec_reports_event_with_old_pid() -> Outcome {
    let pid = spawn_traced(|| {
        let e = sys::exec_self(&[b"--exit", b"3"]);
        60 + e.0
    })?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXEC as usize).ctx("SETOPTIONS")?;
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_EXEC), "exec event")?;
    check_eq!(eventmsg(pid)? as i32, pid, "the former pid");
    cont(pid, 0)?;
    expect_exit(pid, 3)
}

fn exec_without_traceexec_raises_sigtrap() -> Outcome {
    let pid = spawn_traced(|| {
        let e = sys::exec_self(&[b"--exit", b"3"]);
        60 + e.0
    })?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP), "exec's SIGTRAP")?;
    let si = siginfo(pid)?;
    check_eq!((si.signo, si.code), (SIGTRAP as u32, SI_USER), "its siginfo");
    cont(pid, 0)?;
    expect_exit(pid, 3)
}

fn traceexit_reports_exit_status_as_message() -> Outcome {
    let pid = spawn_traced(|| 5)?;
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXIT as usize).ctx("SETOPTIONS")?;
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_EXIT), "exit event")?;
    check_eq!(eventmsg(pid)?, w_exitcode(5, 0) as u64, "the wait status");
    cont(pid, 0)?;
    expect_exit(pid, 5)
}

// ------------------------------------------------------------- seize

/// A child that sleeps (in short naps) until killed.
fn sleeper() -> i32 {
    loop {
        sys::sleep_ms(50);
    }
}

fn seize_does_not_stop_and_interrupt_reports_event_stop() -> Outcome {
    let pid = spawn(sleeper)?;
    ptrace(PTRACE_SEIZE, pid, 0, 0).ctx("SEIZE")?;
    sys::sleep_ms(100);
    check_eq!(wait(pid, sys::WNOHANG), Ok((0, 0)), "no stop after SEIZE");
    ptrace(PTRACE_INTERRUPT, pid, 0, 0).ctx("INTERRUPT")?;
    expect_wait(pid, event_stop(PTRACE_EVENT_STOP), "interrupt stop")?;
    let si = siginfo(pid)?;
    check_eq!(
        (si.signo, si.code),
        (SIGTRAP as u32, event_code(SIGTRAP, PTRACE_EVENT_STOP)),
        "its siginfo"
    );
    check_eq!(si.pid, pid as u32, "si_pid");
    let r = regs(pid)?;
    check_eq!(r.regs[8], rt::syscall::nr::NANOSLEEP as u64, "stopped out of nanosleep");
    cont(pid, 0)?;
    kill_and_reap(pid);
    Ok(())
}

/// The option bit after PTRACE_O_TRACESECCOMP, which Linux does not define.
const UNKNOWN_OPTION: usize = (PTRACE_O_TRACESECCOMP << 1) as usize;
/// A request number in the 0x42xx range that Linux does not define.
const UNKNOWN_REQUEST: i64 = 0x4299;

fn seize_checks_addr_and_options() -> Outcome {
    let pid = spawn(sleeper)?;
    expect_err(ptrace(PTRACE_SEIZE, pid, 1, 0), Errno::EIO, "SEIZE with addr")?;
    expect_err(
        ptrace(PTRACE_SEIZE, pid, 0, UNKNOWN_OPTION),
        Errno::EIO,
        "SEIZE with an unknown option",
    )?;
    ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD as usize).ctx("SEIZE with TRACESYSGOOD")?;
    expect_err(ptrace(PTRACE_SEIZE, pid, 0, 0), Errno::EPERM, "SEIZE twice")?;
    kill_and_reap(pid);
    Ok(())
}

fn setoptions_rejects_unknown_bits() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    expect_err(
        ptrace(PTRACE_SETOPTIONS, pid, 0, UNKNOWN_OPTION),
        Errno::EINVAL,
        "an unknown option",
    )?;
    expect_err(ptrace(UNKNOWN_REQUEST, pid, 0, 0), Errno::EIO, "an unknown request")?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn interrupt_and_listen_need_seize() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    expect_err(
        ptrace(PTRACE_INTERRUPT, pid, 0, 0),
        Errno::EIO,
        "INTERRUPT after TRACEME",
    )?;
    expect_err(ptrace(PTRACE_LISTEN, pid, 0, 0), Errno::EIO, "LISTEN after TRACEME")?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn group_stop_of_seized_tracee_is_event_stop_and_listen_waits() -> Outcome {
    let pid = spawn(sleeper)?;
    ptrace(PTRACE_SEIZE, pid, 0, 0).ctx("SEIZE")?;
    rt::process::kill(pid, SIGSTOP).ctx("kill SIGSTOP")?;
    expect_wait(pid, stopped(SIGSTOP), "SIGSTOP delivery stop")?;
    cont(pid, SIGSTOP)?;
    expect_wait(
        pid,
        w_stopcode(event_code(SIGSTOP, PTRACE_EVENT_STOP)),
        "group stop as PTRACE_EVENT_STOP",
    )?;
    let si = siginfo(pid)?;
    check_eq!(
        (si.signo, si.code),
        (SIGSTOP as u32, event_code(SIGSTOP, PTRACE_EVENT_STOP)),
        "its siginfo"
    );
    ptrace(PTRACE_LISTEN, pid, 0, 0).ctx("LISTEN")?;
    expect_err(ptrace(PTRACE_CONT, pid, 0, 0), Errno::ESRCH, "CONT while listening")?;
    check_eq!(wait(pid, sys::WNOHANG), Ok((0, 0)), "nothing new while listening");
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    expect_wait(pid, event_stop(PTRACE_EVENT_STOP), "re-trap after SIGCONT")?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGCONT), "SIGCONT delivery stop")?;
    cont(pid, 0)?;
    kill_and_reap(pid);
    Ok(())
}

// ------------------------------------------------------------- attach

fn attach_stops_with_sigstop_and_detach_resumes() -> Outcome {
    let pid = spawn(sleeper)?;
    ptrace(PTRACE_ATTACH, pid, 0, 0).ctx("ATTACH")?;
    expect_wait(pid, stopped(SIGSTOP), "the attach SIGSTOP")?;
    let si = siginfo(pid)?;
    check_eq!(
        (si.signo, si.code, si.pid),
        (SIGSTOP as u32, SI_KERNEL, 0),
        "its siginfo (SEND_SIG_PRIV)"
    );
    check_eq!(sys_tracer_pid(pid)?, sys::getpid(), "TracerPid");
    ptrace(PTRACE_DETACH, pid, 0, 0).ctx("DETACH")?;
    check_eq!(sys_tracer_pid(pid)?, 0, "TracerPid after DETACH");
    expect_err(ptrace(PTRACE_CONT, pid, 0, 0), Errno::ESRCH, "CONT after DETACH")?;
    sys::sleep_ms(100);
    check_eq!(wait(pid, sys::WNOHANG), Ok((0, 0)), "running again");
    kill_and_reap(pid);
    Ok(())
}

fn attach_and_traceme_errors() -> Outcome {
    expect_err(
        ptrace(PTRACE_ATTACH, sys::getpid(), 0, 0),
        Errno::EPERM,
        "ATTACH to oneself",
    )?;
    expect_err(
        ptrace(PTRACE_ATTACH, 0x3fff_fff0, 0, 0),
        Errno::ESRCH,
        "ATTACH to no such pid",
    )?;
    expect_err(
        ptrace(PTRACE_ATTACH, -5, 0, 0),
        Errno::ESRCH,
        "ATTACH to a negative pid",
    )?;
    let pid = spawn_traced(|| {
        let twice = ptrace(PTRACE_TRACEME, 0, 0, 0);
        i32::from(twice != Err(Errno::EPERM))
    })?;
    // Another tracer: a child of ours tries to take it.
    THIEF_TARGET.store(pid as u64, Ordering::SeqCst);
    let thief = match fork().ctx("fork")? {
        Fork::Child => {
            let r = ptrace(PTRACE_ATTACH, THIEF_TARGET.load(Ordering::SeqCst) as i32, 0, 0);
            sys::exit_now(i32::from(r != Err(Errno::EPERM)))
        }
        Fork::Parent(t) => t,
    };
    expect_exit(thief, 0).map_err(|f| Fail(format!("a second tracer: {}", f.0)))?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// Set before forking the thief (see `attach_and_traceme_errors`).
static THIEF_TARGET: AtomicU64 = AtomicU64::new(0);

fn requests_need_a_stopped_tracee_of_ours() -> Outcome {
    let pid = spawn(sleeper)?;
    expect_err(
        ptrace(PTRACE_CONT, pid, 0, 0),
        Errno::ESRCH,
        "CONT of an untraced child",
    )?;
    let mut w: u64 = 0;
    expect_err(
        ptrace(
            PTRACE_PEEKDATA,
            pid,
            &WORD as *const AtomicU64 as usize,
            &mut w as *mut u64 as usize,
        ),
        Errno::ESRCH,
        "PEEKDATA of an untraced child",
    )?;
    ptrace(PTRACE_SEIZE, pid, 0, 0).ctx("SEIZE")?;
    expect_err(ptrace(PTRACE_CONT, pid, 0, 0), Errno::ESRCH, "CONT of a running tracee")?;
    expect_err(
        ptrace(PTRACE_GETSIGINFO, pid, 0, 0),
        Errno::ESRCH,
        "GETSIGINFO of a running tracee",
    )?;
    ptrace(PTRACE_INTERRUPT, pid, 0, 0).ctx("INTERRUPT")?;
    expect_wait(pid, event_stop(PTRACE_EVENT_STOP), "interrupt stop")?;
    expect_err(ptrace(PTRACE_CONT, pid, 0, 65), Errno::EIO, "CONT with signal 65")?;
    expect_err(ptrace(PTRACE_DETACH, pid, 0, 65), Errno::EIO, "DETACH with signal 65")?;
    kill_and_reap(pid);
    Ok(())
}

fn getsigmask_and_setsigmask() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let mut m: u64 = 0xffff;
    expect_err(
        ptrace(PTRACE_GETSIGMASK, pid, SIGSET_SIZE / 2, &mut m as *mut u64 as usize),
        Errno::EINVAL,
        "size 4",
    )?;
    ptrace(PTRACE_GETSIGMASK, pid, SIGSET_SIZE, &mut m as *mut u64 as usize).ctx("GETSIGMASK")?;
    check_eq!(m, 0, "the initial mask");
    let set: u64 = (1 << (SIGUSR1 - 1)) | (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));
    ptrace(PTRACE_SETSIGMASK, pid, SIGSET_SIZE, &set as *const u64 as usize).ctx("SETSIGMASK")?;
    ptrace(PTRACE_GETSIGMASK, pid, SIGSET_SIZE, &mut m as *mut u64 as usize).ctx("GETSIGMASK")?;
    check_eq!(m, 1 << (SIGUSR1 - 1), "SIGKILL and SIGSTOP cannot be blocked");
    expect_err(
        ptrace(PTRACE_SETSIGMASK, pid, SIGSET_SIZE, 8),
        Errno::EFAULT,
        "a bad mask address",
    )?;
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

// ------------------------------------------------------------- death

fn sigkill_ends_a_tracee_stopped_at_syscall_entry() -> Outcome {
    let pid = spawn_sysgood(|| 0)?;
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP | 0x80), "entry stop")?;
    rt::process::kill(pid, SIGKILL).ctx("kill")?;
    expect_wait(pid, SIGKILL, "killed")
}

fn ptrace_kill_ends_a_running_tracee() -> Outcome {
    let pid = spawn(sleeper)?;
    ptrace(PTRACE_SEIZE, pid, 0, 0).ctx("SEIZE")?;
    ptrace(PTRACE_KILL, pid, 0, 0).ctx("KILL")?;
    expect_wait(pid, SIGKILL, "killed")
}

fn wnohang_and_waitid_wnowait_report_trapped() -> Outcome {
    let pid = spawn_sysgood(|| {
        sys::sleep_ms(200);
        0
    })?;
    cont(pid, 0)?;
    check_eq!(wait(pid, sys::WNOHANG), Ok((0, 0)), "WNOHANG while running");
    rt::process::kill(pid, SIGUSR1).ctx("kill")?;
    let w = sys::waitid(pid, sys::WEXITED | sys::WSTOPPED | sys::WNOWAIT).ctx("waitid WNOWAIT")?;
    check_eq!(w, (pid, CLD_TRAPPED, SIGUSR1), "waitid's pid, code and status");
    let w = sys::waitid(pid, sys::WSTOPPED).ctx("waitid")?;
    check_eq!(w, (pid, CLD_TRAPPED, SIGUSR1), "the report again after WNOWAIT");
    check_eq!(wait(pid, sys::WNOHANG), Ok((0, 0)), "collected");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

fn tracer_exit_detaches_and_tracee_runs_on() -> Outcome {
    let [rd, wr] = rt::fs::pipe2(0).ctx("pipe")?;
    let tracer = match fork().ctx("fork")? {
        Fork::Child => {
            let tracee = match fork() {
                Ok(Fork::Child) => {
                    let _ = ptrace(PTRACE_TRACEME, 0, 0, 0);
                    sys::raise(SIGSTOP);
                    let _ = rt::fs::write(wr, b"alive");
                    sys::exit_now(0)
                }
                Ok(Fork::Parent(t)) => t,
                Err(_) => sys::exit_now(2),
            };
            let ok = wait(tracee, 0) == Ok((tracee, stopped(SIGSTOP)));
            sys::exit_now(i32::from(!ok))
        }
        Fork::Parent(t) => t,
    };
    let _ = rt::fs::close(wr);
    expect_exit(tracer, 0)?;
    let got = sys::read_all(rd);
    check_eq!(&got[..], &b"alive"[..], "the tracee ran on after its tracer exited");
    Ok(())
}

fn exitkill_kills_tracees_when_tracer_exits() -> Outcome {
    let [rd, wr] = rt::fs::pipe2(0).ctx("pipe")?;
    let tracer = match fork().ctx("fork")? {
        Fork::Child => {
            let tracee = match fork() {
                Ok(Fork::Child) => {
                    sys::sleep_ms(1500);
                    let _ = rt::fs::write(wr, b"alive");
                    sys::exit_now(0)
                }
                Ok(Fork::Parent(t)) => t,
                Err(_) => sys::exit_now(2),
            };
            let r = ptrace(PTRACE_SEIZE, tracee, 0, PTRACE_O_EXITKILL as usize);
            sys::exit_now(i32::from(r.is_err()))
        }
        Fork::Parent(t) => t,
    };
    let _ = rt::fs::close(wr);
    expect_exit(tracer, 0)?;
    let got = sys::read_all(rd);
    check_eq!(&got[..], &b""[..], "the tracee died with its tracer");
    Ok(())
}

fn real_parent_reaps_after_tracer_collects_exit() -> Outcome {
    let tracee = spawn(|| {
        sys::sleep_ms(300);
        6
    })?;
    THIEF_TARGET.store(tracee as u64, Ordering::SeqCst);
    let tracer = match fork().ctx("fork")? {
        Fork::Child => {
            let t = THIEF_TARGET.load(Ordering::SeqCst) as i32;
            if ptrace(PTRACE_SEIZE, t, 0, 0).is_err() {
                sys::exit_now(2);
            }
            let r = wait(t, 0);
            sys::exit_now(i32::from(r != Ok((t, w_exitcode(6, 0)))))
        }
        Fork::Parent(t) => t,
    };
    expect_exit(tracer, 0).map_err(|f| Fail(format!("tracer: {}", f.0)))?;
    expect_exit(tracee, 6)
}

fn sys_tracer_pid(pid: i32) -> Result<i32, Fail> {
    let path = format!("/proc/{pid}/status");
    let fd = rt::fs::open(path.as_bytes(), 0, 0).ctx("open status")?;
    let text = sys::read_all(fd);
    let _ = rt::fs::close(fd);
    let text = core::str::from_utf8(&text).map_err(|_| Fail("status not UTF-8".into()))?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .ok_or_else(|| Fail("no TracerPid line".into()))?;
    line.trim().parse().map_err(|_| Fail(format!("TracerPid {line:?}")))
}

fn proc_status_shows_tracer_pid() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    check_eq!(sys_tracer_pid(pid)?, sys::getpid(), "TracerPid of a TRACEME child");
    check_eq!(sys_tracer_pid(sys::getpid())?, 0, "our own TracerPid");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

// ------------------------------------------------------------- process_vm

fn process_vm(
    write: bool,
    pid: i32,
    local: &[(usize, usize)],
    remote: &[(usize, usize)],
    flags: usize,
) -> Result<usize, Errno> {
    let n = if write {
        rt::syscall::nr::PROCESS_VM_WRITEV
    } else {
        rt::syscall::nr::PROCESS_VM_READV
    };
    // SAFETY: the local iovecs point at buffers the caller owns; the
    // remote ones are the other process's business.
    rt::syscall::check(unsafe {
        rt::syscall::syscall6(
            n,
            pid as usize,
            local.as_ptr() as usize,
            local.len(),
            remote.as_ptr() as usize,
            remote.len(),
            flags,
        )
    })
}

fn process_vm_readv_and_writev_copy_and_honour_protections() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            WORD.store(0x0102_0304_0506_0708, Ordering::SeqCst);
            let _ = ptrace(PTRACE_TRACEME, 0, 0, 0);
            sys::raise(SIGSTOP);
            sys::exit_now(i32::from(WORD.load(Ordering::SeqCst) != 0x1111_2222_3333_4444))
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "stop")?;
    let addr = &WORD as *const AtomicU64 as usize;
    let mut got = [0u8; 8];
    let local = [(got.as_mut_ptr() as usize, 4), (got.as_mut_ptr() as usize + 4, 4)];
    check_eq!(
        process_vm(false, pid, &local, &[(addr, 8)], 0),
        Ok(8),
        "readv of two local halves"
    );
    check_eq!(u64::from_le_bytes(got), 0x0102_0304_0506_0708, "the word read");
    // Nine local iovecs (past the eight read onto the stack), one empty.
    let mut bytes = [0u8; 8];
    let base = bytes.as_mut_ptr() as usize;
    let mut nine = [(base, 0); 9];
    for (i, slot) in nine.iter_mut().enumerate().skip(1) {
        *slot = (base + i - 1, 1);
    }
    check_eq!(
        process_vm(false, pid, &nine, &[(addr, 8)], 0),
        Ok(8),
        "readv into nine local iovecs"
    );
    check_eq!(
        u64::from_le_bytes(bytes),
        0x0102_0304_0506_0708,
        "the word read bytewise"
    );
    // An unmapped local iovec array (EFAULT) and a count past UIO_MAXIOV
    // (EINVAL).
    let bad = |lvec: usize, lcnt: usize| {
        // SAFETY: the kernel refuses both before writing through them.
        rt::syscall::check(unsafe {
            rt::syscall::syscall6(
                rt::syscall::nr::PROCESS_VM_READV,
                pid as usize,
                lvec,
                lcnt,
                [(addr, 8usize)].as_ptr() as usize,
                1,
                0,
            )
        })
    };
    check_eq!(bad(16, 1), Err(Errno::EFAULT), "an unmapped local iovec array");
    check_eq!(
        bad(local.as_ptr() as usize, UIO_MAXIOV + 1),
        Err(Errno::EINVAL),
        "1025 local iovecs"
    );
    check_eq!(
        process_vm(false, pid, &local, &[(addr, 4), (16, 4)], 0),
        Ok(4),
        "a bad second remote iovec stops after the first"
    );
    check_eq!(
        process_vm(false, pid, &local, &[(16, 8)], 0),
        Err(Errno::EFAULT),
        "an unmapped remote address"
    );
    check_eq!(
        process_vm(false, pid, &local, &[(addr, 8)], 1),
        Err(Errno::EINVAL),
        "flags"
    );
    check_eq!(
        process_vm(false, 0x3fff_fff0, &local, &[(addr, 8)], 0),
        Err(Errno::ESRCH),
        "no such pid"
    );
    let text = sys::answer_addr();
    let patch = 0u64.to_le_bytes();
    let src = [(patch.as_ptr() as usize, 8)];
    check_eq!(
        process_vm(true, pid, &src, &[(text, 8)], 0),
        Err(Errno::EFAULT),
        "writev into read-only text"
    );
    let new = 0x1111_2222_3333_4444u64.to_le_bytes();
    let src = [(new.as_ptr() as usize, 8)];
    check_eq!(
        process_vm(true, pid, &src, &[(addr, 8)], 0),
        Ok(8),
        "writev of the word"
    );
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// process_vm_readv as Linux's process_vm_rw_core: a remote range that
/// runs into an unmapped page copies the bytes before it and returns their
/// count (EFAULT only when nothing was copied); local pages that would
/// fault (never touched, shared copy-on-write with the child, or in the
/// very space read from) are faulted in; a read-only local page is EFAULT.
fn process_vm_readv_stops_at_an_unmapped_remote_page_and_faults_local_pages_in() -> Outcome {
    let page = rt::mm::mmap_anon(8192).ctx("mmap")? as usize;
    // SAFETY: the first page is ours, mapped just above; the second is
    // unused.
    unsafe {
        core::ptr::write_bytes(page as *mut u8, 0xa5, 4096);
        rt::mm::munmap((page + 4096) as *mut u8, 4096)
    }
    .ctx("munmap the second page")?;
    let pid = spawn_traced(|| 0)?;
    let fresh = rt::mm::mmap_anon(8192).ctx("mmap the local buffer")? as usize;
    // SAFETY: `fresh` is ours, mapped just above, and read only through this.
    let local = || unsafe { core::slice::from_raw_parts(fresh as *const u8, 8192) };
    check_eq!(
        process_vm(false, pid, &[(fresh, 8192)], &[(page, 8192)], 0),
        Ok(4096),
        "a remote range running into an unmapped page, into untouched pages"
    );
    check_eq!(local()[..4096].iter().all(|&b| b == 0xa5), true, "the page read");
    check_eq!(local()[4096], 0, "past what was read");
    check_eq!(
        process_vm(false, pid, &[(fresh, 16)], &[(page + 4088, 16)], 0),
        Ok(8),
        "the last word before the unmapped page"
    );
    check_eq!(
        process_vm(false, pid, &[(fresh, 8)], &[(page + 4096, 8)], 0),
        Err(Errno::EFAULT),
        "the unmapped page itself"
    );
    check_eq!(
        process_vm(
            false,
            pid,
            &[(fresh, 8), (fresh + 8, 8)],
            &[(page, 8), (page + 4096, 8)],
            0
        ),
        Ok(8),
        "a second remote iovec on the unmapped page"
    );
    // The child shares `page` copy-on-write since the fork: our write
    // into it breaks the sharing, and the child's copy stays as it was.
    check_eq!(
        process_vm(false, pid, &[(page, 8)], &[(page + 8, 8)], 0),
        Ok(8),
        "into our page shared copy-on-write with the child"
    );
    let own = rt::mm::mmap_anon(4096).ctx("mmap")? as usize;
    check_eq!(
        process_vm(false, sys::getpid(), &[(own, 4096)], &[(fresh, 4096)], 0),
        Ok(4096),
        "from our own space into an untouched page of it"
    );
    // SAFETY: `own` is ours, mapped above.
    let own = unsafe { core::slice::from_raw_parts(own as *const u8, 4096) };
    check_eq!(own.iter().all(|&b| b == 0xa5), true, "the bytes read from ourselves");
    check_eq!(
        process_vm(false, pid, &[(sys::answer_addr(), 8)], &[(page, 8)], 0),
        Err(Errno::EFAULT),
        "into our read-only text"
    );
    let mut w = [0u8; 8];
    check_eq!(
        process_vm(false, pid, &[(w.as_mut_ptr() as usize, 8)], &[(page, 8)], 0),
        Ok(8),
        "the child's first word after our write"
    );
    check_eq!(w, [0xa5; 8], "the child's copy");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// process_vm_writev as Linux's process_vm_rw_core, the twin of the readv
/// check above: the remote pages are pinned for writing without
/// FOLL_FORCE, so a read-only page stops the copy as an unmapped one does;
/// the bytes before it are written and counted (EFAULT only when none
/// were), and a local iovec that faults ends the copy there as well.
fn process_vm_writev_stops_at_a_read_only_or_unmapped_remote_page_or_a_local_fault() -> Outcome {
    // Three pages in the child: writable, read-only, unmapped.
    let page = rt::mm::mmap_anon(3 * 4096).ctx("mmap")? as usize;
    // SAFETY: the pages are ours, mapped just above; the second is made
    // read-only and the third given back, neither used after.
    unsafe {
        core::ptr::write_bytes(page as *mut u8, 0xa5, 2 * 4096);
        rt::syscall::check(rt::syscall::syscall6(
            rt::syscall::nr::MPROTECT,
            page + 4096,
            4096,
            rt::mm::PROT_READ,
            0,
            0,
            0,
        ))
        .ctx("mprotect the second page")?;
        rt::mm::munmap((page + 8192) as *mut u8, 4096)
    }
    .ctx("munmap the third page")?;
    // The local source: a page of 0x5a, then one unmapped page.
    let src = rt::mm::mmap_anon(2 * 4096).ctx("mmap the local buffer")? as usize;
    // SAFETY: `src` is ours, mapped just above; its second page is unused.
    unsafe {
        core::ptr::write_bytes(src as *mut u8, 0x5a, 4096);
        rt::mm::munmap((src + 4096) as *mut u8, 4096)
    }
    .ctx("munmap the local second page")?;
    let pid = spawn_traced(|| 0)?;
    check_eq!(
        process_vm(true, pid, &[(src, 4096), (src, 4096)], &[(page, 8192)], 0),
        Ok(4096),
        "a remote range running into a read-only page"
    );
    check_eq!(
        process_vm(true, pid, &[(src, 16)], &[(page + 4088, 16)], 0),
        Ok(8),
        "the last word before the read-only page"
    );
    check_eq!(
        process_vm(true, pid, &[(src, 8)], &[(page + 4096, 8)], 0),
        Err(Errno::EFAULT),
        "the read-only page itself"
    );
    check_eq!(
        process_vm(true, pid, &[(src, 8)], &[(page + 8192, 8)], 0),
        Err(Errno::EFAULT),
        "the unmapped page"
    );
    check_eq!(
        process_vm(true, pid, &[(src, 16)], &[(page, 8), (page + 8192, 8)], 0),
        Ok(8),
        "a second remote iovec on the unmapped page"
    );
    check_eq!(
        process_vm(true, pid, &[(src, 8), (src + 4096, 8)], &[(page + 8, 16)], 0),
        Ok(8),
        "a second local iovec on an unmapped page"
    );
    check_eq!(
        process_vm(true, pid, &[(src + 4000, 192)], &[(page + 16, 192)], 0),
        Ok(96),
        "a local iovec running into an unmapped page"
    );
    check_eq!(
        process_vm(true, pid, &[(src + 4096, 8)], &[(page, 8)], 0),
        Err(Errno::EFAULT),
        "a local iovec on an unmapped page"
    );
    // What the child holds now: its first page written, 0x5a, the
    // read-only one as it was.
    let mut back = alloc::vec![0u8; 8192];
    check_eq!(
        process_vm(false, pid, &[(back.as_mut_ptr() as usize, 8192)], &[(page, 8192)], 0),
        Ok(8192),
        "readv of the two pages"
    );
    check_eq!(back[..4096].iter().all(|&b| b == 0x5a), true, "the written page");
    check_eq!(back[4096..].iter().all(|&b| b == 0xa5), true, "the read-only page");
    // Ours, shared copy-on-write with the child until its write: as it was.
    // SAFETY: `page` is ours and readable.
    check_eq!(unsafe { *(page as *const u8) }, 0xa5, "our copy of the first page");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// The argument checks of both calls, in Linux's order: flags (EINVAL),
/// the local array (more than UIO_MAXIOV: EINVAL), nothing to copy
/// locally (0, before the remote array is read), the remote array, nothing
/// to copy remotely (0, before the pid is looked up), then the pid
/// (ESRCH).
fn process_vm_calls_check_flags_counts_and_pid_in_linux_order() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let mut word = [0u8; 8];
    let w = word.as_mut_ptr() as usize;
    let remote = WORD.as_ptr() as usize;
    let call = |write: bool, pid: i32, lvec: usize, lcnt: usize, rvec: usize, rcnt: usize, flags: usize| {
        let n = if write {
            rt::syscall::nr::PROCESS_VM_WRITEV
        } else {
            rt::syscall::nr::PROCESS_VM_READV
        };
        // SAFETY: the kernel reads the iovec arrays, which are ours or
        // unmapped; it writes only to `word`, ours.
        rt::syscall::check(unsafe { rt::syscall::syscall6(n, pid as usize, lvec, lcnt, rvec, rcnt, flags) })
    };
    let one = [(w, 8usize)];
    let rone = [(remote, 8usize)];
    let empty = [(w, 0usize)];
    let rempty = [(remote, 0usize)];
    for write in [false, true] {
        let (l, r) = (one.as_ptr() as usize, rone.as_ptr() as usize);
        check_eq!(call(write, pid, l, 1, r, 1, 1), Err(Errno::EINVAL), "flags 1 ({write})");
        check_eq!(
            call(write, pid, 16, 1, 16, 1, 1),
            Err(Errno::EINVAL),
            "flags before either array ({write})"
        );
        check_eq!(
            call(write, pid, l, UIO_MAXIOV + 1, r, 1, 0),
            Err(Errno::EINVAL),
            "1025 local ({write})"
        );
        check_eq!(
            call(write, pid, l, 1, r, UIO_MAXIOV + 1, 0),
            Err(Errno::EINVAL),
            "1025 remote ({write})"
        );
        check_eq!(
            call(write, pid, empty.as_ptr() as usize, 1, 16, 1, 0),
            Ok(0),
            "empty local iovecs, an unmapped remote array ({write})"
        );
        check_eq!(
            call(write, pid, l, 0, r, UIO_MAXIOV + 1, 0),
            Ok(0),
            "no local iovecs, 1025 remote ({write})"
        );
        check_eq!(
            call(write, pid, l, 1, 16, 1, 0),
            Err(Errno::EFAULT),
            "an unmapped remote array ({write})"
        );
        check_eq!(
            call(write, 0x3fff_fff0, l, 1, rempty.as_ptr() as usize, 1, 0),
            Ok(0),
            "empty remote iovecs, no such pid ({write})"
        );
        check_eq!(
            call(write, 0x3fff_fff0, l, 1, r, 1, 0),
            Err(Errno::ESRCH),
            "no such pid ({write})"
        );
        check_eq!(call(write, -1, l, 1, r, 1, 0), Err(Errno::ESRCH), "pid -1 ({write})");
        check_eq!(call(write, pid, l, 1, r, 1, 0), Ok(8), "the word ({write})");
    }
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// Linux's import_iovec for the caller's own buffers (readv, writev, the
/// local side of process_vm_readv/writev): every length must be a valid
/// ssize_t (EINVAL, checked for all entries first), every buffer inside
/// the user address space (EFAULT; a lone entry is cut to MAX_RW_COUNT
/// before its range is checked, several are checked whole), and the total
/// is cut to MAX_RW_COUNT rather than refused. The remote side of
/// process_vm_readv is checked for negative lengths only.
fn iovec_lengths_are_checked_each_and_their_total_cut_as_import_iovec() -> Outcome {
    static LOCAL: AtomicU64 = AtomicU64::new(0);
    const MAX_RW_COUNT: usize = uapi::uio::MAX_RW_COUNT as usize;
    const HUGE: usize = 1 << 62;
    const NEGATIVE: usize = 1 << 63;
    const KERNEL: usize = 0xffff_8000_0000_0000;
    let null = rt::fs::open(b"/dev/null", rt::fs::O_RDWR, 0).ctx("open /dev/null")?;
    // /dev/null never touches the buffers: only the checks speak. Low
    // addresses, so that two gigabytes past them are still user space.
    let low = 0x10_0000usize;
    let vectored = |n: usize, iov: &[(usize, usize)]| {
        // SAFETY: /dev/null reads nothing into and writes nothing from
        // the buffers; the kernel only reads the iovec array.
        rt::syscall::check(unsafe { rt::syscall::syscall3(n, null as usize, iov.as_ptr() as usize, iov.len()) })
    };
    let (readv, writev) = (rt::syscall::nr::READV, rt::syscall::nr::WRITEV);
    check_eq!(
        vectored(writev, &[(low, MAX_RW_COUNT), (low, 4096)]),
        Ok(MAX_RW_COUNT),
        "writev of more than MAX_RW_COUNT in all"
    );
    check_eq!(
        vectored(writev, &[(low, HUGE)]),
        Ok(MAX_RW_COUNT),
        "writev of one buffer of 2^62 bytes"
    );
    check_eq!(
        vectored(readv, &[(low, HUGE)]),
        Ok(0),
        "readv of one buffer of 2^62 bytes"
    );
    check_eq!(
        vectored(writev, &[(low, 1), (low, HUGE)]),
        Err(Errno::EFAULT),
        "writev of 2^62 bytes in the second buffer"
    );
    check_eq!(
        vectored(readv, &[(low, 1), (low, HUGE)]),
        Err(Errno::EFAULT),
        "readv of 2^62 bytes in the second buffer"
    );
    check_eq!(
        vectored(writev, &[(low, 1), (low, NEGATIVE)]),
        Err(Errno::EINVAL),
        "writev with a negative length"
    );
    check_eq!(
        vectored(writev, &[(KERNEL, 1), (low, NEGATIVE)]),
        Err(Errno::EINVAL),
        "a negative length is found before a kernel address"
    );
    check_eq!(
        vectored(writev, &[(KERNEL, 1)]),
        Err(Errno::EFAULT),
        "writev from a kernel address"
    );
    let _ = rt::fs::close(null);

    let me = sys::getpid();
    let mut word = [0u8; 8];
    let w = word.as_mut_ptr() as usize;
    let remote = WORD.as_ptr() as usize;
    for write in [false, true] {
        check_eq!(
            process_vm(write, me, &[(w, 8), (w, HUGE)], &[(remote, 8)], 0),
            Err(Errno::EFAULT),
            "a second local length of 2^62 ({write})"
        );
        // Cut to MAX_RW_COUNT from a static word of the program, low
        // enough that the range stays in the user address space.
        check_eq!(
            process_vm(write, me, &[(LOCAL.as_ptr() as usize, HUGE)], &[(remote, 8)], 0),
            Ok(8),
            "a lone local length of 2^62 is cut ({write})"
        );
        check_eq!(
            process_vm(write, me, &[(w, 8), (w, NEGATIVE)], &[(remote, 8)], 0),
            Err(Errno::EINVAL),
            "a negative local length ({write})"
        );
        check_eq!(
            process_vm(write, me, &[(w, 8)], &[(remote, NEGATIVE)], 0),
            Err(Errno::EINVAL),
            "a negative remote length ({write})"
        );
        check_eq!(
            process_vm(write, me, &[(w, 8)], &[(remote, HUGE)], 0),
            Ok(8),
            "a remote length of 2^62 moves what the local side holds ({write})"
        );
    }
    Ok(())
}

/// A target that unmaps and maps back the second of two pages while the
/// caller reads both: each read returns the first page whole and the
/// second page whole or not at all (Linux pins page by page), and the
/// first page's bytes are right every time.
fn process_vm_readv_races_the_targets_munmap_of_the_page_read() -> Outcome {
    const MAP_FIXED: usize = uapi::mman::MAP_FIXED as usize;
    let page = rt::mm::mmap_anon(8192).ctx("mmap")? as usize;
    // SAFETY: both pages are ours, mapped just above.
    unsafe { core::ptr::write_bytes(page as *mut u8, 0xa5, 8192) };
    let pid = match fork().ctx("fork")? {
        Fork::Child => loop {
            let second = page + 4096;
            // SAFETY: the second page is this child's own and unused but
            // by the parent's reads; it is mapped back at once, fixed.
            unsafe {
                let _ = rt::mm::munmap(second as *mut u8, 4096);
                let _ = rt::syscall::syscall6(
                    rt::syscall::nr::MMAP,
                    second,
                    4096,
                    rt::mm::PROT_READ | rt::mm::PROT_WRITE,
                    rt::mm::MAP_PRIVATE | rt::mm::MAP_ANONYMOUS | MAP_FIXED,
                    usize::MAX,
                    0,
                );
            }
        },
        Fork::Parent(pid) => pid,
    };
    let mut buf = alloc::vec![0u8; 8192];
    let mut outcome = Ok(());
    for i in 0..2000 {
        buf[..4096].fill(0);
        let r = process_vm(false, pid, &[(buf.as_mut_ptr() as usize, 8192)], &[(page, 8192)], 0);
        if !matches!(r, Ok(4096) | Ok(8192)) || buf[..4096].iter().any(|&b| b != 0xa5) {
            outcome = Err(Fail(format!("read {i}: {r:?}, first byte {:#x}", buf[0])));
            break;
        }
    }
    let _ = rt::process::kill(pid, SIGKILL);
    check_eq!(
        wait(pid, 0).map(|(p, st)| (p, uapi::wait::WTERMSIG(st))),
        Ok((pid, SIGKILL)),
        "the child's end"
    );
    outcome
}

// ------------------------------------------------------------- SIGCONT and seize

/// strace's start (its startup_child with PTRACE_SEIZE): the child stops
/// itself with SIGSTOP, the tracer waits for that group stop, seizes the
/// child (which re-traps as PTRACE_EVENT_STOP before SEIZE returns) and
/// continues it with SIGCONT. The SIGCONT came after the trap, so
/// PTRACE_LISTEN traps again at once (Linux's JOBCTL_TRAP_NOTIFY) instead
/// of waiting for a change that already happened.
fn seize_of_self_stopped_child_then_sigcont_retraps_at_listen() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            sys::raise(SIGSTOP);
            sys::exit_now(7)
        }
        Fork::Parent(pid) => pid,
    };
    check_eq!(
        wait(pid, sys::WUNTRACED),
        Ok((pid, stopped(SIGSTOP))),
        "the child's own group stop"
    );
    ptrace(PTRACE_SEIZE, pid, 0, 0).ctx("SEIZE")?;
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    expect_wait(
        pid,
        w_stopcode(event_code(SIGSTOP, PTRACE_EVENT_STOP)),
        "the group stop as PTRACE_EVENT_STOP",
    )?;
    ptrace(PTRACE_LISTEN, pid, 0, 0).ctx("LISTEN")?;
    expect_wait(pid, event_stop(PTRACE_EVENT_STOP), "re-trap for the earlier SIGCONT")?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGCONT), "SIGCONT delivery stop")?;
    cont(pid, 0)?;
    expect_exit(pid, 7)
}

/// SIGCONT to a seized tracee that is running (here: sleeping in
/// nanosleep) makes it trap with PTRACE_EVENT_STOP first, then stop for
/// the SIGCONT's delivery.
fn sigcont_to_running_seized_tracee_traps_before_its_delivery() -> Outcome {
    let pid = spawn(sleeper)?;
    ptrace(PTRACE_SEIZE, pid, 0, 0).ctx("SEIZE")?;
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    expect_wait(pid, event_stop(PTRACE_EVENT_STOP), "the notify trap")?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGCONT), "SIGCONT delivery stop")?;
    cont(pid, 0)?;
    sys::sleep_ms(50);
    check_eq!(wait(pid, sys::WNOHANG), Ok((0, 0)), "running again");
    kill_and_reap(pid);
    Ok(())
}

/// A SIGCONT that arrives while a seized tracee is in another kind of
/// stop (here a system call entry stop) leaves the notify trap pending:
/// the tracee traps with PTRACE_EVENT_STOP right after it is resumed.
fn sigcont_during_syscall_stop_traps_after_resume() -> Outcome {
    let pid = spawn(sleeper)?;
    ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD as usize).ctx("SEIZE")?;
    ptrace(PTRACE_INTERRUPT, pid, 0, 0).ctx("INTERRUPT")?;
    expect_wait(pid, event_stop(PTRACE_EVENT_STOP), "interrupt stop")?;
    syscall(pid, 0)?;
    expect_wait(pid, stopped(SIGTRAP | 0x80), "a system call stop")?;
    rt::process::kill(pid, SIGCONT).ctx("kill SIGCONT")?;
    sys::sleep_ms(50);
    check_eq!(wait(pid, sys::WNOHANG), Ok((0, 0)), "no report while stopped");
    cont(pid, 0)?;
    expect_wait(pid, event_stop(PTRACE_EVENT_STOP), "the notify trap after resume")?;
    cont(pid, 0)?;
    expect_wait(pid, stopped(SIGCONT), "SIGCONT delivery stop")?;
    cont(pid, 0)?;
    kill_and_reap(pid);
    Ok(())
}

/// A page of a file mapping that no one has touched yet (strace reads a
/// system call's path from text the tracee never read itself): PEEKDATA
/// and process_vm_readv see the file's bytes, not zeros.
fn peekdata_of_an_untouched_file_page_reads_the_file() -> Outcome {
    use rt::fs;
    let path = b"/tmp/ptracetests-peek";
    let fd = fs::open(path, fs::O_RDWR | fs::O_CREAT | fs::O_TRUNC, 0o600).ctx("create the file")?;
    let mut page = [0u8; 4096];
    page[..8].copy_from_slice(b"filebyte");
    page[4088..].copy_from_slice(b"lastword");
    rt::io::write_all(fd, &page).ctx("write the file")?;
    // Mapped before the fork and never touched: neither process has the
    // page in its tables.
    let addr = sys::mmap_file_readonly(fd, 4096).ctx("mmap")?;
    let _ = fs::close(fd);
    let pid = spawn_traced(|| 0)?;
    let mut got: u64 = 0;
    ptrace(PTRACE_PEEKDATA, pid, addr, &mut got as *mut u64 as usize).ctx("PEEKDATA")?;
    check_eq!(got.to_le_bytes(), *b"filebyte", "PEEKDATA of the first word");
    let mut last = [0u8; 8];
    check_eq!(
        process_vm(false, pid, &[(last.as_mut_ptr() as usize, 8)], &[(addr + 4088, 8)], 0),
        Ok(8),
        "process_vm_readv of the last word"
    );
    check_eq!(last, *b"lastword", "the last word");
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

// ------------------------------------------------------------- /proc/<pid>/mem

fn open_mem(path: &str) -> Result<i32, Fail> {
    rt::fs::open(path.as_bytes(), rt::fs::O_RDWR, 0).ctx("open mem")
}

/// gdbserver's way: words read with pread64 at the tracee's addresses, a
/// data word and a breakpoint-like text patch written with pwrite64 (the
/// text is read-only: the write goes through copy-on-write, and the
/// tracee runs the new instruction).
fn proc_mem_reads_and_writes_tracee_data_and_text() -> Outcome {
    let pid = match fork().ctx("fork")? {
        Fork::Child => {
            WORD.store(0x1122_3344_5566_7788, Ordering::SeqCst);
            let _ = ptrace(PTRACE_TRACEME, 0, 0, 0);
            sys::raise(SIGSTOP);
            let data_ok = WORD.load(Ordering::SeqCst) == 0x0bad_cafe_dead_beef;
            sys::exit_now(if data_ok { sys::answer() as i32 } else { 1 })
        }
        Fork::Parent(pid) => pid,
    };
    expect_wait(pid, stopped(SIGSTOP), "stop")?;
    let fd = open_mem(&format!("/proc/{pid}/mem"))?;
    let addr = &WORD as *const AtomicU64 as usize;
    let mut w = [0u8; 8];
    check_eq!(sys::pread(fd, &mut w, addr), Ok(8), "pread64 of the word");
    check_eq!(u64::from_le_bytes(w), 0x1122_3344_5566_7788, "the tracee's word");
    check_eq!(
        sys::pwrite(fd, &0x0bad_cafe_dead_beefu64.to_le_bytes(), addr),
        Ok(8),
        "pwrite64 of the word"
    );
    check_eq!(WORD.load(Ordering::SeqCst), 0, "our own copy");
    let text = sys::answer_addr();
    check_eq!(sys::pread(fd, &mut w, text), Ok(8), "pread64 of the text");
    check_eq!(u64::from_le_bytes(w), 0xd65f_03c0_d280_0520, "mov x0, #41; ret");
    // mov x0, #42
    check_eq!(
        sys::pwrite(fd, &0xd280_0540u32.to_le_bytes(), text),
        Ok(4),
        "pwrite64 into read-only text"
    );
    check_eq!(sys::answer(), 41, "our own text");
    let _ = rt::fs::close(fd);
    cont(pid, 0)?;
    expect_exit(pid, 42)
}

/// An address nothing is mapped at reads and writes EIO; a transfer that
/// runs into one stops there (the count so far), as Linux's mem_rw.
fn proc_mem_unmapped_address_is_eio_and_ends_a_transfer() -> Outcome {
    let page = rt::mm::mmap_anon(8192).ctx("mmap")? as usize;
    // SAFETY: the second page is ours, mapped just above, and unused.
    unsafe { rt::mm::munmap((page + 4096) as *mut u8, 4096) }.ctx("munmap the second page")?;
    let pid = spawn_traced(|| 0)?;
    let fd = open_mem(&format!("/proc/{pid}/mem"))?;
    let mut b = [0u8; 64];
    check_eq!(sys::pread(fd, &mut b, 16), Err(Errno::EIO), "pread64 at 16");
    check_eq!(sys::pwrite(fd, &b, 16), Err(Errno::EIO), "pwrite64 at 16");
    check_eq!(
        sys::pread(fd, &mut b, page + 4096 - 24),
        Ok(24),
        "pread64 across the end of a mapping"
    );
    check_eq!(sys::pread(fd, &mut b[..0], 16), Ok(0), "an empty pread64");
    let _ = rt::fs::close(fd);
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// `/proc/<pid>/task/<tid>/mem` of the tracee's thread reads its memory
/// too; a tid that is not one of the process's threads has no directory.
fn proc_task_mem_is_the_thread_address_space() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let fd = open_mem(&format!("/proc/{pid}/task/{pid}/mem"))?;
    let mut w = [0u8; 8];
    check_eq!(sys::pread(fd, &mut w, sys::answer_addr()), Ok(8), "pread64 of the text");
    check_eq!(u64::from_le_bytes(w), 0xd65f_03c0_d280_0520, "mov x0, #41; ret");
    let _ = rt::fs::close(fd);
    let me = sys::getpid();
    check_eq!(
        rt::fs::open(format!("/proc/{pid}/task/{me}/mem").as_bytes(), rt::fs::O_RDONLY, 0).err(),
        Some(Errno::ENOENT),
        "another process's thread"
    );
    cont(pid, 0)?;
    expect_exit(pid, 0)
}

/// Linux's __mem_open refuses a task without an address space (ESRCH),
/// and a file opened earlier holds the space without its memory: once the
/// process died, reads and writes transfer nothing (mem_rw's
/// mmget_not_zero), after the reap too.
fn proc_mem_of_a_zombie_is_esrch_and_an_earlier_fd_reads_nothing() -> Outcome {
    let pid = spawn(sleeper)?;
    let path = format!("/proc/{pid}/mem");
    let fd = open_mem(&path)?;
    let mut w = [0u8; 8];
    let at = sys::answer_addr();
    check_eq!(sys::pread(fd, &mut w, at), Ok(8), "pread64 while alive");
    rt::process::kill(pid, SIGKILL).ctx("kill")?;
    sys::waitid(pid, sys::WEXITED | sys::WNOWAIT).ctx("waitid(WNOWAIT)")?;
    check_eq!(sys::pread(fd, &mut w, at), Ok(0), "pread64 of a dead process's space");
    check_eq!(sys::pwrite(fd, &w, at), Ok(0), "pwrite64 of a dead process's space");
    for flags in [rt::fs::O_RDWR, rt::fs::O_RDONLY] {
        check_eq!(
            rt::fs::open(path.as_bytes(), flags, 0).err(),
            Some(Errno::ESRCH),
            "open a zombie's mem ({flags:#x})"
        );
    }
    check_eq!(wait(pid, 0).ctx("reap")?.0, pid, "reaped");
    check_eq!(
        rt::fs::open(path.as_bytes(), rt::fs::O_RDWR, 0).err(),
        Some(Errno::ENOENT),
        "open a reaped process's mem"
    );
    check_eq!(sys::pread(fd, &mut w, at), Ok(0), "pread64 after the reap");
    let _ = rt::fs::close(fd);
    Ok(())
}
