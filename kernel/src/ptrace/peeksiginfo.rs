//! PTRACE_PEEKSIGINFO (Linux's ptrace_peek_siginfo): copies queued
//! siginfos of the tracee's own queue, or with PTRACE_PEEKSIGINFO_SHARED of
//! its process's, starting at entry `off`, without dequeuing them.

use super::*;
use crate::errno::Errno;
use crate::syscalls::SysResult;
use crate::uaccess::{self, UserPtr};
use uapi::signal::SIGINFO_SIZE;

/// `ptrace(PTRACE_PEEKSIGINFO, pid, args, buf)`: the number of siginfos
/// copied to `buf`; EINVAL for unknown flags or a negative count, EFAULT
/// when nothing could be copied.
pub(super) fn ptrace_peek_siginfo(child: &Task, args_addr: UserPtr, buf: UserPtr) -> SysResult {
    let mut b = [0u8; PtracePeeksiginfoArgs::SIZE];
    uaccess::copy_from_user(&mut b, args_addr)?;
    let args = PtracePeeksiginfoArgs::from_bytes(&b);
    if args.flags & !PTRACE_PEEKSIGINFO_SHARED != 0 || args.nr < 0 {
        return Err(Errno::EINVAL);
    }
    let queue = if args.flags & PTRACE_PEEKSIGINFO_SHARED != 0 {
        match child.process.get() {
            Some(p) => &p.shared_sigqueue,
            None => return Ok(0),
        }
    } else {
        &child.sigqueue
    };
    let me = sched::current();
    let mut copied: u64 = 0;
    let mut at = buf;
    while copied < args.nr as u64 {
        // Each entry is looked up afresh, as Linux does: the queue may
        // change between copies.
        let Some(off) = args.off.checked_add(copied).and_then(|o| usize::try_from(o).ok()) else {
            break;
        };
        let Some(info) = queue.nth(off) else { break };
        if uaccess::copy_to_user(at, &info.to_bytes()).is_err() {
            if copied == 0 {
                return Err(Errno::EFAULT);
            }
            break;
        }
        at = at.wrapping_add(SIGINFO_SIZE as u64);
        copied += 1;
        if me.signal_pending() {
            break;
        }
    }
    Ok(copied)
}
