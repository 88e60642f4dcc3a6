//! The snapshot buffer of a trace array (Linux's `max_buffer` with
//! `CONFIG_TRACER_SNAPSHOT`): a second set of per-CPU buffers, allocated
//! on demand, that a swap exchanges with the live ones, so that what was
//! recorded up to a moment can be read while tracing goes on.
//!
//! - `snapshot`: `echo 1` allocates (sized like the live buffers) and
//!   swaps, `echo 0` frees, any other number empties it; reading it shows
//!   the swapped-out events as `trace` does, or, while it is empty, Linux's
//!   help text. `per_cpu/cpuN/snapshot` swaps and empties one CPU (`echo 0`
//!   is EINVAL there); `per_cpu/cpuN/snapshot_raw` hands out its pages as
//!   `trace_pipe_raw` does.
//! - the `snapshot` event trigger swaps when its event happens (before
//!   the event is recorded, so the event starts the new live buffer).
//!
//! A swap exchanges each CPU's buffer under both buffer locks, with the
//! snapshot's `max_lock` held so that it cannot race a free; like Linux's
//! `update_max_tr`, it does nothing while recording is paused
//! (`tracing_stop`). `tracing_on`, `tracing_cpumask` and the options stay
//! with the trace array, not the buffers.

use super::{tracing_cpus, TraceArray};
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use ring_buffer::{CpuBuffer, Page};
use uapi::Errno;

/// Linux's `README` line for `snapshot`.
pub const README_SNAPSHOT: &str = "\n  snapshot\t\t- Like 'trace' but shows the content of the static\n\
\t\t\t  snapshot buffer. Read the contents for more\n\
\t\t\t  information\n";

/// One trace array's snapshot state.
pub struct Snapshot {
    /// The buffers (a trace array used only for them and for reading them
    /// with the `trace` readers), made at the first allocation and kept,
    /// without pages, after a free.
    max: spin::Once<&'static TraceArray>,
    /// Linux's `allocated_snapshot`.
    allocated: AtomicBool,
    /// Linux's `max_lock`: swaps against allocation and free.
    max_lock: IrqSpinLock<()>,
    /// Serialises allocations, frees and resizes (task context only).
    mutex: spin::Mutex<()>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot::new()
    }
}

impl Snapshot {
    /// No snapshot buffer yet.
    pub const fn new() -> Snapshot {
        Snapshot {
            max: spin::Once::new(),
            allocated: AtomicBool::new(false),
            max_lock: IrqSpinLock::new(()),
            mutex: spin::Mutex::new(()),
        }
    }

    /// Whether the snapshot buffer exists (Linux's `allocated_snapshot`).
    pub fn is_allocated(&self) -> bool {
        self.allocated.load(Ordering::Acquire)
    }

    /// The trace array holding the snapshot buffers, once made.
    pub fn max_buffer(&self) -> Option<&'static TraceArray> {
        self.max.get().copied()
    }

    fn max_or_make_buffers(&self) -> &'static TraceArray {
        self.max.call_once(|| {
            let max: &'static TraceArray = Box::leak(Box::new(TraceArray::new()));
            max.free_buffers();
            max
        })
    }
}

/// The trace array that holds `tr`'s snapshot buffers (without pages
/// until allocated), made now if need be.
pub fn max_or_make(tr: &TraceArray) -> &'static TraceArray {
    tr.snapshot.max_or_make_buffers()
}

/// Pages for `n` buffer pages, refusing (ENOMEM) to take the last of the
/// system's memory, as [`TraceArray::resize`] does.
fn alloc_pages(n: usize, size: usize) -> Result<Vec<Box<Page>>, Errno> {
    let free = crate::mm::frame::stats().free;
    let frames = n * (size / ring_buffer::PAGE_SIZE);
    if frames + frames / 8 + 1024 > free {
        return Err(Errno::ENOMEM);
    }
    let mut pages = Vec::new();
    pages.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    for _ in 0..n {
        pages.push(ring_buffer::try_new_subbuf(size).ok_or(Errno::ENOMEM)?);
    }
    Ok(pages)
}

/// Allocates `tr`'s snapshot buffer, each CPU's as large as its live one
/// (Linux's `tracing_alloc_snapshot_instance`); nothing if it exists.
pub fn tracing_alloc_snapshot(tr: &TraceArray) -> Result<(), Errno> {
    let snap = &tr.snapshot;
    let _m = snap.mutex.lock();
    if snap.is_allocated() {
        return Ok(());
    }
    let max = snap.max_or_make_buffers();
    let subbuf = tr.subbuf_size();
    let mut made: Vec<(usize, CpuBuffer)> = Vec::new();
    for cpu in tracing_cpus() {
        let pages = tr.nr_pages[cpu].load(Ordering::Acquire).max(ring_buffer::MIN_PAGES);
        let mut b = CpuBuffer::new(alloc_pages(pages, subbuf)?).map_err(|_| Errno::ENOMEM)?;
        b.set_overwrite(tr.is_set(super::options::OVERWRITE));
        made.push((cpu, b));
    }
    let _g = snap.max_lock.lock();
    for (cpu, b) in made {
        max.nr_pages[cpu].store(b.nr_pages(), Ordering::Release);
        max.entries[cpu].store(tr.entries[cpu].load(Ordering::Acquire), Ordering::Release);
        *max.buffers[cpu].lock_serving_calls() = Some(b);
    }
    max.subbuf.store(subbuf, Ordering::Release);
    max.expanded.store(true, Ordering::Release);
    snap.allocated.store(true, Ordering::Release);
    Ok(())
}

/// Frees `tr`'s snapshot buffer (Linux's `free_snapshot`).
pub fn free_snapshot(tr: &TraceArray) {
    let snap = &tr.snapshot;
    let _m = snap.mutex.lock();
    let Some(max) = snap.max_buffer() else { return };
    let mut old: Vec<CpuBuffer> = Vec::new();
    {
        let _g = snap.max_lock.lock();
        snap.allocated.store(false, Ordering::Release);
        for (b, n) in max.buffers.iter().zip(&max.nr_pages) {
            if let Some(buf) = b.lock().take() {
                old.push(buf);
            }
            n.store(0, Ordering::Release);
        }
    }
    // The pages go back outside the locks.
    drop(old);
}

/// Resizes the snapshot buffer with the live one (Linux's
/// `tracing_resize_ring_buffer` keeps `max_buffer` the same size), so that
/// a swap never changes a CPU's size.
pub fn resize_snapshot(tr: &TraceArray, cpu: Option<usize>, bytes: usize) -> Result<(), Errno> {
    let snap = &tr.snapshot;
    let _m = snap.mutex.lock();
    match snap.max_buffer() {
        Some(max) if snap.is_allocated() => max.resize(cpu, bytes),
        _ => Ok(()),
    }
}

/// Gives the snapshot buffer sub-buffers of `size` bytes, as the live
/// one's (`buffer_subbuf_size_kb`), so that swaps keep both alike.
pub fn set_snapshot_subbuf_size(tr: &TraceArray, size: usize) -> Result<(), Errno> {
    let snap = &tr.snapshot;
    let _m = snap.mutex.lock();
    match snap.max_buffer() {
        Some(max) if snap.is_allocated() => super::subbuf::set_subbuf_size(max, size),
        _ => Ok(()),
    }
}

/// Exchanges the live buffers of `tr` (one CPU's, or all for None) with
/// the snapshot's (Linux's `update_max_tr` and `update_max_tr_single`).
/// Returns whether it swapped: not without a snapshot buffer, nor while
/// recording is paused. Safe from any context; never allocates.
pub fn update_max_tr(tr: &TraceArray, cpu: Option<usize>) -> bool {
    let snap = &tr.snapshot;
    let Some(max) = snap.max_buffer() else { return false };
    let _g = snap.max_lock.lock();
    if !snap.is_allocated() || tr.stopped.load(Ordering::Acquire) != 0 {
        return false;
    }
    let swap_one = |c: usize| {
        let (Some(live), Some(saved)) = (tr.buffers.get(c), max.buffers.get(c)) else {
            return;
        };
        // Lock order: live, then snapshot (the only place holding both).
        let mut a = live.lock_serving_calls();
        let mut b = saved.lock();
        core::mem::swap(&mut *a, &mut *b);
        let n = tr.nr_pages[c].load(Ordering::Acquire);
        tr.nr_pages[c].store(max.nr_pages[c].load(Ordering::Acquire), Ordering::Release);
        max.nr_pages[c].store(n, Ordering::Release);
    };
    match cpu {
        Some(c) => swap_one(c),
        None => tracing_cpus().for_each(swap_one),
    }
    true
}

/// The `snapshot` trigger's action (Linux's `tracing_snapshot_instance`):
/// swap, or, without a snapshot buffer, say so in the trace and stop
/// tracing.
pub fn tracing_snapshot_instance(tr: &TraceArray) {
    if !tr.snapshot.is_allocated() {
        let _ = trace_array_puts(tr, b"*** SNAPSHOT NOT ALLOCATED ***\n");
        let _ = trace_array_puts(tr, b"*** stopping trace here!   ***\n");
        tr.set_tracing_on(false);
        return;
    }
    update_max_tr(tr, None);
}

/// Records a line of text as a `print` entry from this function (Linux's
/// `trace_array_puts`, which reports its caller's address).
#[inline(never)]
fn trace_array_puts(tr: &TraceArray, text: &[u8]) -> bool {
    let ip = tracing_snapshot_instance as *const () as u64;
    super::trace_event_write(tr, super::TRACE_PRINT, 8 + text.len() + 1, |f| {
        f[..8].copy_from_slice(&ip.to_le_bytes());
        f[8..8 + text.len()].copy_from_slice(text);
        true
    })
}

/// A write to `snapshot` (cpu None) or `per_cpu/cpuN/snapshot` (Linux's
/// `tracing_snapshot_write`): 0 frees (EINVAL per CPU), 1 allocates if
/// needed and swaps, anything else empties the snapshot buffer.
pub fn tracing_snapshot_write(tr: &TraceArray, cpu: Option<usize>, buf: &[u8]) -> Result<usize, Errno> {
    tr.update_buffers()?;
    let val = super::tracefs::parse_ulong(buf)?;
    match val {
        0 => {
            if cpu.is_some() {
                return Err(Errno::EINVAL);
            }
            free_snapshot(tr);
        }
        1 => {
            tracing_alloc_snapshot(tr)?;
            update_max_tr(tr, cpu);
        }
        _ => {
            if let Some(max) = tr.snapshot.max_buffer() {
                if tr.snapshot.is_allocated() {
                    max.reset(cpu);
                }
            }
        }
    }
    Ok(buf.len())
}

/// What a read of an empty snapshot file shows after `# tracer:` (Linux's
/// `print_snapshot_help`).
pub fn snapshot_help(tr: &TraceArray, cpu: Option<usize>) -> String {
    let mut s = String::from(if tr.snapshot.is_allocated() {
        "#\n# * Snapshot is allocated *\n#\n"
    } else {
        "#\n# * Snapshot is freed *\n#\n"
    });
    s.push_str("# Snapshot commands:\n");
    if cpu.is_none() {
        s.push_str(
            "# echo 0 > snapshot : Clears and frees snapshot buffer\n\
             # echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
             #                      Takes a snapshot of the main buffer.\n\
             # echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n",
        );
    } else {
        // This kernel swaps single CPUs (Linux's
        // CONFIG_RING_BUFFER_ALLOW_SWAP, which its latency tracers select).
        s.push_str(
            "# echo 0 > snapshot : Invalid for per_cpu snapshot file.\n\
             # echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
             #                      Takes a snapshot of the main buffer for this cpu.\n\
             # echo 2 > snapshot : Clears this cpu's snapshot buffer (but does not allocate)\n",
        );
    }
    s.push_str(
        "#                      (Doesn't have to be '2' works with any number that\n\
         #                       is not a '0' or '1')\n",
    );
    s
}
