//! Signal robustness: the RLIMIT_SIGPENDING bound on queued real-time
//! signals (EAGAIN from sigqueue, information lost but signal kept for
//! kill), queues freed when their process dies, a signal whose frame cannot
//! be written killing with SIGSEGV instead of looping in the kernel, and
//! rt_sigreturn's validation of pstate and of the sigcontext records.

use core::arch::asm;
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    rlimit_sigpending_reported_and_bounds_sigqueue,
    rt_queue_over_limit_kill_keeps_signal_and_dequeues_all,
    dead_process_queue_returns_to_the_limit,
    blocked_rt_kill_flood_memory_returns_after_exit,
    handler_frame_unwritable_dies_of_sigsegv,
    sigsegv_frame_unwritable_dies_of_sigsegv,
    sigreturn_clears_pstate_il,
    sigreturn_unknown_record_is_sigsegv,
    sigreturn_extra_context_into_kernel_is_sigsegv,
    fork_child_inherits_sigaltstack,
    rt_sigqueueinfo_errors,
];

const RT_SIGQUEUEINFO: usize = 138;
const GETRLIMIT: usize = 163;
const RLIMIT_SIGPENDING: usize = 11;
const SI_QUEUE: i32 = -1;
/// SIGRTMIN + 2: free for applications under every C library.
const SIGRT: i32 = 34;

fn getrlimit(res: usize) -> Result<(u64, u64), Errno> {
    let mut r = [0u64; 2];
    // SAFETY: r is a live struct rlimit.
    unsafe { raw(GETRLIMIT, &[res, r.as_mut_ptr() as usize]) }?;
    Ok((r[0], r[1]))
}

/// `rt_sigqueueinfo(pid, sig, {SI_QUEUE, si_value = value})`.
fn sigqueue(pid: i32, sig: i32, value: u64) -> Result<usize, Errno> {
    let mut info = SigInfo::zeroed();
    info.signo = sig;
    info.code = SI_QUEUE;
    info.fields[0] = getpid() as u32 as u64;
    info.fields[1] = value;
    // SAFETY: info is a live siginfo_t.
    unsafe {
        raw(
            RT_SIGQUEUEINFO,
            &[pid as usize, sig as usize, &info as *const SigInfo as usize],
        )
    }
}

/// Queues `sig` to ourselves until EAGAIN (or `bound` succeed); how many
/// were queued, or the unexpected error.
fn fill_queue(sig: i32, bound: u64) -> Result<u64, Errno> {
    let me = getpid();
    let mut n = 0;
    while n <= bound {
        match sigqueue(me, sig, n) {
            Ok(_) => n += 1,
            Err(Errno::EAGAIN) => return Ok(n),
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn rlimit_sigpending_reported_and_bounds_sigqueue() -> Outcome {
    let (soft, hard) = getrlimit(RLIMIT_SIGPENDING).ctx("getrlimit")?;
    check_eq!(soft, hard, "RLIMIT_SIGPENDING soft and hard limits");
    ensure!(
        (10..1 << 24).contains(&soft),
        "RLIMIT_SIGPENDING {soft} is not Linux's RAM-derived default"
    );
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGRT))).ctx("block")?;
    let n = fill_queue(SIGRT, soft).ctx("sigqueue flood")?;
    // Other processes of this user may hold a few queued signals.
    ensure!(
        n <= soft && n + 64 >= soft,
        "sigqueue stopped with EAGAIN after {n}, limit {soft}"
    );
    check_eq!(
        sigqueue(getpid(), SIGRT, 0),
        Err(Errno::EAGAIN),
        "one more real-time sigqueue"
    );
    // tgkill's SI_TKILL is not kill(): it fails too rather than lose info.
    check_eq!(
        tgkill(getpid(), gettid(), SIGRT + 1),
        Err(Errno::EAGAIN),
        "tgkill of a real-time signal over the limit"
    );
    Ok(())
}

static HITS: AtomicUsize = AtomicUsize::new(0);
static ORDER_OK: AtomicUsize = AtomicUsize::new(1);

extern "C" fn count_in_order(_: i32, info: *mut SigInfo, _: *mut UContext) {
    // SAFETY: the kernel passes the frame's siginfo (SA_SIGINFO).
    let info = unsafe { &*info };
    let n = HITS.fetch_add(1, SeqCst) as u64;
    // Queued real-time signals arrive in the order sent (si_value = n).
    if info.code != SI_QUEUE || info.fields[1] != n {
        ORDER_OK.store(0, SeqCst);
    }
}

fn rt_queue_over_limit_kill_keeps_signal_and_dequeues_all() -> Outcome {
    handle(SIGRT, count_in_order, 0, 0).ctx("install")?;
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGRT) | sigbit(SIGUSR1))).ctx("block")?;
    let (limit, _) = getrlimit(RLIMIT_SIGPENDING).ctx("getrlimit")?;
    let n = fill_queue(SIGRT, limit).ctx("sigqueue flood")?;
    // kill() may not fail for lack of queue space: the signal stays pending
    // without its information.
    check_eq!(
        kill(getpid(), SIGRT),
        Ok(0),
        "kill of a real-time signal over the limit"
    );
    // A classic signal sent by sigqueue over the limit is still sent.
    check_eq!(
        sigqueue(getpid(), SIGUSR1, 0),
        Ok(0),
        "sigqueue of SIGUSR1 over the limit"
    );
    let pending = sigpending().ctx("sigpending")?;
    check_eq!(
        pending & (sigbit(SIGRT) | sigbit(SIGUSR1)),
        sigbit(SIGRT) | sigbit(SIGUSR1),
        "both pending"
    );
    disposition(SIGUSR1, SIG_IGN).ctx("ignore SIGUSR1")?;
    sigprocmask(SIG_UNBLOCK, Some(sigbit(SIGRT) | sigbit(SIGUSR1))).ctx("unblock")?;
    check_eq!(HITS.load(SeqCst) as u64, n, "handler runs, one per queued entry");
    check_eq!(
        ORDER_OK.load(SeqCst),
        1,
        "queued entries delivered in order with their si_value"
    );
    check_eq!(
        sigpending().ctx("sigpending")? & sigbit(SIGRT),
        0,
        "nothing left pending"
    );
    // The queue is empty again: the whole limit is available.
    sigprocmask(SIG_BLOCK, Some(sigbit(SIGRT))).ctx("block")?;
    check_eq!(
        fill_queue(SIGRT, limit).ctx("second flood")?,
        n,
        "entries after draining"
    );
    Ok(())
}

/// A child that floods its blocked queue until EAGAIN and exits with 0;
/// how many it queued.
fn flood_in_child() -> Result<u64, crate::Fail> {
    let [rd, wr] = pipe().ctx("pipe")?;
    let pid = spawn(|| {
        close(rd);
        if sigprocmask(SIG_BLOCK, Some(sigbit(SIGRT))).is_err() {
            return 1;
        }
        let n = fill_queue(SIGRT, 1 << 24).unwrap_or(0);
        let _ = rt::io::write_all(wr, &n.to_le_bytes());
        0
    })
    .ctx("fork")?;
    close(wr);
    let mut b = [0u8; 8];
    let got = read(rd, &mut b).ctx("read count")?;
    close(rd);
    check_eq!(wait_status(pid), Ok(0), "flooding child's exit");
    check_eq!(got, 8, "count bytes");
    Ok(u64::from_le_bytes(b))
}

fn dead_process_queue_returns_to_the_limit() -> Outcome {
    let first = flood_in_child()?;
    ensure!(first > 0, "the first child queued nothing");
    // Its queue died with it: a second process gets as many again.
    let second = flood_in_child()?;
    ensure!(
        second + 8 >= first,
        "after a process died with {first} queued, another could queue only {second}"
    );
    Ok(())
}

/// MemFree from /proc/meminfo, in kB.
fn mem_free_kb() -> Result<u64, crate::Fail> {
    let fd = open(b"/proc/meminfo", 0, 0).ctx("open /proc/meminfo")?;
    let mut buf = [0u8; 2048];
    let n = read(fd, &mut buf).ctx("read /proc/meminfo")?;
    close(fd);
    let text = &buf[..n];
    let at = text
        .windows(8)
        .position(|w| w == b"MemFree:")
        .ok_or_else(|| crate::Fail("no MemFree line".into()))?;
    let digits = text[at + 8..]
        .iter()
        .skip_while(|c| **c == b' ')
        .take_while(|c| c.is_ascii_digit())
        .fold(0u64, |v, c| v * 10 + (c - b'0') as u64);
    Ok(digits)
}

fn blocked_rt_kill_flood_memory_returns_after_exit() -> Outcome {
    const KILLS: usize = 100_000;
    // Warm up: a first flood child, so lazily grown kernel structures are
    // not mistaken for a leak.
    flood_in_child()?;
    let before = mem_free_kb()?;
    let start = now_ns();
    let pid = spawn(|| {
        if sigprocmask(SIG_BLOCK, Some(sigbit(SIGRT))).is_err() {
            return 1;
        }
        let me = getpid();
        for _ in 0..KILLS {
            if kill(me, SIGRT).is_err() {
                return 2;
            }
        }
        // Then the queue to its limit, where sigqueue exists.
        let _ = fill_queue(SIGRT, 1 << 24);
        0
    })
    .ctx("fork")?;
    check_eq!(wait_status(pid), Ok(0), "flooding child's exit");
    let ms = (now_ns() - start) / 1_000_000;
    ensure!(ms < 8000, "{KILLS} kills took {ms} ms");
    let after = mem_free_kb()?;
    ensure!(
        after + 2048 >= before,
        "MemFree {before} kB before, {after} kB after the flooding process exited"
    );
    Ok(())
}

extern "C" fn nothing(_: i32, _: *mut SigInfo, _: *mut UContext) {}

/// Waits up to `ms` for `pid`; its raw status, or a failure naming a hang
/// (the child is then left SIGKILLed, if the kernel lets it die at all).
fn wait_bounded(pid: i32, ms: i64, what: &str) -> Result<i32, crate::Fail> {
    handle(SIGALRM, nothing, 0, 0).ctx("install SIGALRM")?;
    alarm_ms(ms).ctx("alarm")?;
    let r = wait4(pid, 0);
    alarm_ms(0).ctx("disarm")?;
    match r {
        Ok((_, status)) => Ok(status),
        Err(Errno::EINTR) => {
            let _ = kill(pid, SIGKILL);
            Err(crate::Fail(alloc::format!("{what}: child still alive after {ms} ms")))
        }
        Err(e) => Err(crate::Fail(alloc::format!("{what}: wait4: {e:?}"))),
    }
}

/// An address no mapping covers: a page mapped, then unmapped.
fn unmapped_page() -> Result<usize, crate::Fail> {
    let page = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    munmap(page, PAGE).ctx("munmap")?;
    Ok(page)
}

fn handler_frame_unwritable_dies_of_sigsegv() -> Outcome {
    let bad_sp = unmapped_page()? + PAGE;
    let pid = spawn(move || {
        if handle(SIGSEGV, nothing, 0, 0).is_err() || handle(SIGUSR1, nothing, 0, 0).is_err() {
            return 1;
        }
        let me = getpid();
        // SAFETY: with sp unmapped, kill(me, SIGUSR1) makes the kernel fail
        // to write the handler's frame; the process must die. Nothing here
        // uses the stack.
        unsafe {
            asm!(
                "mov sp, {sp}",
                "svc #0",
                "2: b 2b",
                sp = in(reg) bad_sp,
                in("x0") me,
                in("x1") SIGUSR1,
                in("x8") nr::KILL,
                options(noreturn)
            )
        }
    })
    .ctx("fork")?;
    check_eq!(
        wait_bounded(pid, 5000, "unwritable SIGUSR1 frame with a SIGSEGV handler")?,
        SIGSEGV,
        "death by SIGSEGV"
    );
    Ok(())
}

fn sigsegv_frame_unwritable_dies_of_sigsegv() -> Outcome {
    let bad_sp = unmapped_page()? + PAGE;
    let pid = spawn(move || {
        if handle(SIGSEGV, nothing, 0, 0).is_err() {
            return 1;
        }
        // SAFETY: the load from address 8 faults; the SIGSEGV handler's
        // frame cannot be written below the unmapped sp; the process must
        // die. Nothing here uses the stack.
        unsafe {
            asm!(
                "mov sp, {sp}",
                "ldr x1, [x0]",
                "2: b 2b",
                sp = in(reg) bad_sp,
                in("x0") 8usize,
                options(noreturn)
            )
        }
    })
    .ctx("fork")?;
    check_eq!(
        wait_bounded(pid, 5000, "unwritable SIGSEGV frame")?,
        SIGSEGV,
        "death by SIGSEGV"
    );
    Ok(())
}

extern "C" fn set_il(_: i32, _: *mut SigInfo, uc: *mut UContext) {
    // SAFETY: the kernel passes the frame's ucontext.
    unsafe { (*uc).pstate |= 1 << 20 };
}

fn sigreturn_clears_pstate_il() -> Outcome {
    let pid = spawn(|| {
        if handle(SIGUSR1, set_il, 0, 0).is_err() {
            return 1;
        }
        let _ = kill(getpid(), SIGUSR1);
        // Reaching here means the IL bit did not make an illegal state.
        7
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(7 << 8),
        "a handler setting PSTATE.IL returns normally"
    );
    Ok(())
}

/// Offset of the terminator record in `uc`'s `__reserved`, walking the
/// records by size.
///
/// # Safety
/// `uc` must be the ucontext a handler was given.
unsafe fn terminator(uc: *mut UContext) -> Option<*mut u32> {
    // SAFETY: __reserved follows the fixed part of the sigcontext.
    let base = unsafe { (uc as *mut u8).add(176 + 288) };
    let mut off = 0usize;
    while off + 64 <= 4096 {
        // SAFETY: within the 4096-byte __reserved area.
        let p = unsafe { base.add(off) } as *mut u32;
        // SAFETY: as above.
        let (magic, size) = unsafe { (p.read(), p.add(1).read()) };
        if magic == 0 {
            return Some(p);
        }
        if size < 8 {
            return None;
        }
        off += size as usize;
    }
    None
}

extern "C" fn add_unknown_record(_: i32, _: *mut SigInfo, uc: *mut UContext) {
    // SAFETY: the kernel passes the frame's ucontext; the record and its new
    // terminator fit in __reserved (terminator() left 64 bytes).
    unsafe {
        if let Some(p) = terminator(uc) {
            p.write(0x1234_5678);
            p.add(1).write(16);
            p.add(4).write(0);
            p.add(5).write(0);
        }
    }
}

extern "C" fn add_kernel_extra_context(_: i32, _: *mut SigInfo, uc: *mut UContext) {
    // SAFETY: as in add_unknown_record; 32 + 16 bytes fit.
    unsafe {
        if let Some(p) = terminator(uc) {
            p.write(0x4558_5401);
            p.add(1).write(32);
            (p.add(2) as *mut u64).write(0xffff_0000_0000_0000);
            p.add(4).write(64);
            p.add(5).write(0);
            (p.add(6) as *mut u64).write(0);
            p.add(8).write(0);
            p.add(9).write(0);
        }
    }
}

fn sigreturn_with(edit: Handler) -> Result<i32, crate::Fail> {
    let pid = spawn(move || {
        if handle(SIGUSR1, edit, 0, 0).is_err() {
            return 1;
        }
        let _ = kill(getpid(), SIGUSR1);
        7
    })
    .ctx("fork")?;
    wait_bounded(pid, 5000, "rt_sigreturn with an edited frame")
}

fn sigreturn_unknown_record_is_sigsegv() -> Outcome {
    check_eq!(
        sigreturn_with(add_unknown_record)?,
        SIGSEGV,
        "unknown record after fpsimd_context"
    );
    Ok(())
}

fn sigreturn_extra_context_into_kernel_is_sigsegv() -> Outcome {
    check_eq!(
        sigreturn_with(add_kernel_extra_context)?,
        SIGSEGV,
        "extra_context pointing into the kernel"
    );
    Ok(())
}

fn sigaltstack(new: Option<&Stack>) -> Result<Stack, Errno> {
    let mut old = Stack::default();
    let n = new.map_or(0, |s| s as *const Stack as usize);
    // SAFETY: new and old are live stack_t.
    unsafe { raw(nr::SIGALTSTACK, &[n, &mut old as *mut Stack as usize]) }?;
    Ok(old)
}

fn fork_child_inherits_sigaltstack() -> Outcome {
    let len = 4 * PAGE;
    let base = mmap_anon(len, PROT_READ | PROT_WRITE).ctx("mmap")?;
    let ss = Stack {
        sp: base,
        flags: 0,
        size: len,
    };
    sigaltstack(Some(&ss)).ctx("sigaltstack")?;
    // The alternate stack is per thread but copied by fork (the child's
    // memory holds the same stack at the same address).
    let pid = spawn(move || match sigaltstack(None) {
        Ok(s) if s == ss => 0,
        Ok(_) => 2,
        Err(_) => 3,
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid),
        Ok(0),
        "the child's sigaltstack (0: same as the parent's)"
    );
    Ok(())
}

fn rt_sigqueueinfo_errors() -> Outcome {
    let mut info = SigInfo::zeroed();
    info.code = 0; // SI_USER: only a process itself may claim kill()'s code.
    let send = |pid: i32, sig: i32, info: &SigInfo| {
        // SAFETY: info is a live siginfo_t.
        unsafe {
            raw(
                RT_SIGQUEUEINFO,
                &[pid as usize, sig as usize, info as *const SigInfo as usize],
            )
        }
    };
    check_eq!(
        send(getppid(), 0, &info),
        Err(Errno::EPERM),
        "si_code SI_USER to another process"
    );
    info.code = -6; // SI_TKILL
    check_eq!(
        send(getppid(), 0, &info),
        Err(Errno::EPERM),
        "si_code SI_TKILL to another process"
    );
    info.code = SI_QUEUE;
    check_eq!(
        send(getppid(), 0, &info),
        Ok(0),
        "SI_QUEUE to another process, signal 0"
    );
    check_eq!(send(getpid(), 65, &info), Err(Errno::EINVAL), "signal 65");
    check_eq!(send(0x3fff_fff0, 0, &info), Err(Errno::ESRCH), "no such process");
    check_eq!(
        // SAFETY: BAD_LOW is unmapped; the kernel must refuse it.
        unsafe { raw(RT_SIGQUEUEINFO, &[getpid() as usize, SIGUSR1 as usize, BAD_LOW]) },
        Err(Errno::EFAULT),
        "unreadable siginfo"
    );
    Ok(())
}
