//! PTRACE_PEEKSIGINFO: the tracer reads the stopped tracee's queued
//! signals, its own queue and its process's, without taking them.

use super::*;
use uapi::syscalls::nr;

const SIGRTMIN: i32 = uapi::signal::SIGRTMIN as i32;

/// rt_tgsigqueueinfo(pid, pid, sig, info): a queued real-time signal
/// carrying `value`.
fn queue_rt(pid: i32, sig: i32, value: u64) -> Result<(), Errno> {
    let info = SigInfo {
        signo: sig as u32,
        code: -1, // SI_QUEUE
        pid: sys::getpid() as u32,
        value,
        ..SigInfo::default()
    };
    let b = info.to_bytes();
    // SAFETY: the kernel reads SIGINFO_SIZE bytes of `b`, which lives
    // across the call.
    let r = unsafe {
        rt::syscall::syscall4(
            nr::RT_TGSIGQUEUEINFO,
            pid as usize,
            pid as usize,
            sig as usize,
            b.as_ptr() as usize,
        )
    };
    rt::syscall::check(r).map(|_| ())
}

fn peek(pid: i32, off: u64, flags: u32, nr: i32, buf: &mut [u8]) -> Result<usize, Errno> {
    let args = PtracePeeksiginfoArgs { off, flags, nr }.to_bytes();
    ptrace(
        PTRACE_PEEKSIGINFO,
        pid,
        args.as_ptr() as usize,
        buf.as_mut_ptr() as usize,
    )
}

fn entry(buf: &[u8], i: usize) -> SigInfo {
    let mut b = [0u8; SIGINFO_SIZE];
    b.copy_from_slice(&buf[i * SIGINFO_SIZE..(i + 1) * SIGINFO_SIZE]);
    SigInfo::from_bytes(&b)
}

pub(super) fn peeksiginfo_reads_private_and_shared_queues_in_order() -> Outcome {
    let pid = spawn_traced(|| 0)?;
    let me = sys::getpid() as u32;
    // Private: SIGUSR1 (tgkill), then two queued SIGRTMIN+1.
    check_eq!(
        sys::syscall_raw(nr::TGKILL, pid as usize, pid as usize, SIGUSR1 as usize),
        0,
        "tgkill"
    );
    queue_rt(pid, SIGRTMIN + 1, 0x1111).ctx("rt_tgsigqueueinfo 1")?;
    queue_rt(pid, SIGRTMIN + 1, 0x2222).ctx("rt_tgsigqueueinfo 2")?;
    // Shared: SIGUSR2 (kill).
    rt::process::kill(pid, SIGUSR2).ctx("kill")?;
    let mut buf = [0u8; SIGINFO_SIZE * 4];
    check_eq!(peek(pid, 0, 0, 4, &mut buf), Ok(3), "private queue count");
    let got: alloc::vec::Vec<(u32, u64)> = (0..3).map(|i| entry(&buf, i)).map(|s| (s.signo, s.value)).collect();
    let want = [
        (SIGUSR1 as u32, 0),
        (SIGRTMIN as u32 + 1, 0x1111),
        (SIGRTMIN as u32 + 1, 0x2222),
    ];
    check_eq!(got.as_slice(), &want[..], "private queue (signo, value)");
    check_eq!(
        (entry(&buf, 1).code, entry(&buf, 1).pid),
        (-1, me),
        "queued entry's si_code and si_pid"
    );
    check_eq!(peek(pid, 2, 0, 4, &mut buf), Ok(1), "from offset 2");
    check_eq!(entry(&buf, 0).value, 0x2222, "entry at offset 2");
    check_eq!(peek(pid, 3, 0, 4, &mut buf), Ok(0), "past the end");
    check_eq!(peek(pid, u64::MAX, 0, 4, &mut buf), Ok(0), "far past the end");
    check_eq!(peek(pid, 0, 0, 0, &mut buf), Ok(0), "nr 0");
    check_eq!(
        peek(pid, 0, PTRACE_PEEKSIGINFO_SHARED, 4, &mut buf),
        Ok(1),
        "shared queue count"
    );
    let s = entry(&buf, 0);
    check_eq!((s.signo, s.code, s.pid), (SIGUSR2 as u32, SI_USER, me), "shared entry");
    expect_err(peek(pid, 0, 2, 4, &mut buf), Errno::EINVAL, "unknown flag")?;
    expect_err(peek(pid, 0, 0, -1, &mut buf), Errno::EINVAL, "negative nr")?;
    expect_err(
        ptrace(PTRACE_PEEKSIGINFO, pid, 16, buf.as_mut_ptr() as usize),
        Errno::EFAULT,
        "unreadable arguments",
    )?;
    let args = PtracePeeksiginfoArgs {
        off: 0,
        flags: 0,
        nr: 1,
    }
    .to_bytes();
    expect_err(
        ptrace(PTRACE_PEEKSIGINFO, pid, args.as_ptr() as usize, 16),
        Errno::EFAULT,
        "unwritable buffer",
    )?;
    // Peeking took nothing: the queue is as it was.
    check_eq!(peek(pid, 0, 0, 4, &mut buf), Ok(3), "private queue count again");
    kill_and_reap(pid);
    Ok(())
}
