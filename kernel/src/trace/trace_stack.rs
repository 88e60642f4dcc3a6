//! The stack tracer (Linux's kernel/trace/trace_stack.c): an ftrace ops on
//! every function (or those of `stack_trace_filter`) that measures how
//! deep the kernel stack is at each call and keeps the deepest stack seen,
//! shown in `stack_trace` with each frame's depth and size;
//! `stack_max_size` is that depth, and `/proc/sys/kernel/stack_tracer_enabled`
//! turns it on and off.

use super::ftrace::{self, FtraceOps};
use super::ftrace_function::{FtraceRegexFile, HashKind};
use crate::fs::pseudo::PseudoDir;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ftrace::{FtraceRegs, FTRACE_BL_OFFSET};
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use uapi::Errno;

/// Most frames kept (Linux's `STACK_TRACE_ENTRIES`).
const STACK_TRACE_ENTRIES: usize = 128;

/// The stack tracer's ops (Linux's `trace_ops`), filtered by
/// `stack_trace_filter`.
pub static STACK_TRACE_OPS: FtraceOps = FtraceOps::new("trace_ops", stack_trace_call);

/// `stack_tracer_enabled`.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Serialises `stack_tracer_enabled` writes (Linux's `stack_sysctl_mutex`).
static SYSCTL_LOCK: spin::Mutex<()> = spin::Mutex::new(());
/// `stack_max_size`: the deepest stack seen, in bytes.
static MAX_SIZE: AtomicUsize = AtomicUsize::new(0);
/// The tracer's own frames below the traced function's, measured at the
/// first maximum (Linux's `tracer_frame`).
static TRACER_FRAME: AtomicUsize = AtomicUsize::new(0);

/// The deepest stack: return addresses and the depth at each.
struct MaxStack {
    trace: [usize; STACK_TRACE_ENTRIES],
    index: [usize; STACK_TRACE_ENTRIES],
    nr_entries: usize,
}

/// Taken by the hit path with `try_lock` only (a CPU holding it while a
/// traced function runs skips that hit instead of deadlocking).
static MAX_STACK: spin::Mutex<MaxStack> = spin::Mutex::new(MaxStack {
    trace: [0; STACK_TRACE_ENTRIES],
    index: [0; STACK_TRACE_ENTRIES],
    nr_entries: 0,
});

/// The callback (Linux's `stack_trace_call`): checks the stack at the
/// traced function's `bl`, whose return address is `ip` + 4.
#[allow(unsafe_code)] // exported under Linux's name, which enabled_functions prints
#[no_mangle]
fn stack_trace_call(_ops: &FtraceOps, ip: usize, _parent: usize, _regs: &mut FtraceRegs) {
    check_stack(ip + FTRACE_BL_OFFSET, arch::cpu::frame_pointer());
}

/// Linux's `check_stack`: `stack` is an address in the tracer's own
/// frame, `ip` the return address into the traced function.
fn check_stack(ip: usize, stack: usize) {
    // Only task stacks (Linux: "we do not handle interrupt stacks yet").
    let Some((lo, top)) = crate::sched::try_current().and_then(|t| t.stack_bounds()) else {
        return;
    };
    if stack < lo || stack >= top {
        return;
    }
    let frame_size = TRACER_FRAME.load(Ordering::Relaxed);
    let mut this_size = (top - stack).saturating_sub(frame_size);
    if this_size <= MAX_SIZE.load(Ordering::Relaxed) {
        return;
    }
    let Some(mut m) = MAX_STACK.try_lock() else {
        return;
    };
    if frame_size == 0 {
        this_size = this_size.saturating_sub(TRACER_FRAME.load(Ordering::Relaxed));
    }
    if this_size <= MAX_SIZE.load(Ordering::Relaxed) {
        return;
    }
    MAX_SIZE.store(this_size, Ordering::Relaxed);
    let m = &mut *m;
    let mut n = 0;
    crate::stacktrace::walk_stackframe(stack, |lr| {
        if n + 1 >= STACK_TRACE_ENTRIES {
            return false;
        }
        m.trace[n] = lr;
        n += 1;
        true
    });
    // Skip the tracer's own frames: start at the traced function.
    let mut i = m.trace[..n].iter().position(|&a| a == ip).unwrap_or(0);
    // Where each return address is saved gives the depth at its frame.
    let mut x = 0;
    let mut start = stack & !7;
    while i < n {
        let mut found = false;
        m.index[x] = this_size;
        let mut p = start;
        while p < top && i < n {
            if arch::nofault::read_u64_nofault(p).ok() == Some(m.trace[i] as u64) {
                m.trace[x] = m.trace[i];
                i += 1;
                this_size = top - p;
                m.index[x] = this_size;
                x += 1;
                found = true;
                start = p + 8;
                if TRACER_FRAME.load(Ordering::Relaxed) == 0 {
                    let tf = p - stack;
                    TRACER_FRAME.store(tf, Ordering::Relaxed);
                    MAX_SIZE.store(MAX_SIZE.load(Ordering::Relaxed).saturating_sub(tf), Ordering::Relaxed);
                }
            }
            p += 8;
        }
        if !found {
            i += 1;
        }
    }
    // arm64 saves a function's return address above its locals, in the
    // frame record of the next frame up: each depth belongs one entry
    // earlier (Linux's ARCH_FTRACE_SHIFT_STACK_TRACER).
    if x > 1 {
        m.index.copy_within(1..x, 0);
        x -= 1;
    }
    m.nr_entries = x;
}

/// `stack_trace`'s text (Linux's `t_show`): the header, Linux's notice
/// while the tracer is off and has measured nothing, then one line per
/// frame: index, depth, frame size, location.
pub fn stack_trace_show() -> String {
    let m = MAX_STACK.lock();
    let mut s = String::new();
    let _ = write!(
        s,
        "        Depth    Size   Location    ({} entries)\n        -----    ----   --------\n",
        m.nr_entries
    );
    if !ENABLED.load(Ordering::Acquire) && MAX_SIZE.load(Ordering::Relaxed) == 0 {
        s.push_str(
            "#\n#  Stack tracer disabled\n#\n\
             # To enable the stack tracer, either add 'stacktrace' to the\n\
             # kernel command line\n\
             # or 'echo 1 > /proc/sys/kernel/stack_tracer_enabled'\n#\n",
        );
    }
    for i in 0..m.nr_entries {
        let size = if i + 1 == m.nr_entries {
            m.index[i]
        } else {
            m.index[i].wrapping_sub(m.index[i + 1])
        };
        let _ = writeln!(
            s,
            "{:3}) {:8}   {:5}   {}",
            i,
            m.index[i] as i32,
            size as i32,
            crate::kallsyms::symbolize(m.trace[i])
        );
    }
    s
}

/// `/proc/sys/kernel/stack_tracer_enabled`'s value.
pub fn stack_tracer_enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// A write to `/proc/sys/kernel/stack_tracer_enabled` (Linux's
/// `stack_trace_sysctl` on `proc_dointvec`): an integer, non-zero turns
/// the tracer on. `EINVAL` for anything else.
pub fn stack_trace_sysctl(buf: &[u8]) -> Result<usize, Errno> {
    let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
    let word = text.split_ascii_whitespace().next().ok_or(Errno::EINVAL)?;
    let v = trace_filter::kstrto::kstrtoll(word.as_bytes(), 10).map_err(|_| Errno::EINVAL)?;
    let on = v != 0;
    let _g = SYSCTL_LOCK.lock();
    if on != ENABLED.load(Ordering::Acquire) {
        if on {
            ftrace::register_ftrace_function(&STACK_TRACE_OPS)?;
        } else {
            ftrace::unregister_ftrace_function(&STACK_TRACE_OPS)?;
        }
        ENABLED.store(on, Ordering::Release);
    }
    Ok(buf.len())
}

/// Makes `stack_trace`, `stack_max_size` and `stack_trace_filter`.
pub(super) fn init(root: &Arc<PseudoDir>) {
    root.file("stack_trace", 0o440, Box::new(|| stack_trace_show().into_bytes()), None);
    root.file(
        "stack_max_size",
        0o640,
        Box::new(|| alloc::format!("{}\n", MAX_SIZE.load(Ordering::Relaxed)).into_bytes()),
        Some(Box::new(|buf: &[u8]| -> Result<usize, Errno> {
            let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
            let v = trace_filter::kstrto::kstrtoul(text.trim_end_matches('\n').as_bytes(), 10)
                .map_err(|_| Errno::EINVAL)?;
            let _m = MAX_STACK.lock();
            MAX_SIZE.store(v as usize, Ordering::Relaxed);
            Ok(buf.len())
        })),
    );
    let _ = root.file_ops(
        "stack_trace_filter",
        0o640,
        Box::new(|flags| Ok(FtraceRegexFile::open(&STACK_TRACE_OPS, HashKind::Filter, false, flags))),
    );
}

/// Lines of `stack_trace` after its header (for tests).
pub fn stack_trace_lines() -> Vec<String> {
    stack_trace_show()
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(String::from)
        .collect()
}
