//! Tracing: the trace array (per-CPU ring buffers, `tracing_on`, the trace
//! clock, options, saved command lines), the event registry, the output
//! of `trace` and `trace_pipe`, `error_log`, and tracefs, which shows it
//! all at `/sys/kernel/tracing` with Linux's files.
//!
//! The write path ([`trace_event_write`]) runs in probe context: on the
//! CPU it records for, with interrupts masked, it takes that CPU's buffer
//! lock (held by readers on other CPUs only for one event or one page
//! copy), reserves, fills and commits without allocating, and queues an
//! [`IrqWaker`] to wake readers. A recursive entry on the same CPU drops
//! the event instead of spinning on its own lock. The whole module tree is
//! notrace: nothing here can be probed.

crate::notrace_module!();

pub mod clock;
pub mod cmdlines;
pub mod error_log;
pub mod event_filter;
pub mod events;
pub mod fprobe;
pub mod ftrace;
pub mod ftrace_function;
pub mod ftrace_probe;
pub mod ftrace_profile;
pub mod function_graph;
pub mod hist;
pub mod options;
pub mod output;
pub mod raw_data;
pub mod readers;
pub mod rethook;
pub mod snapshot;
pub mod subbuf;
pub mod trace_dynevent;
pub mod trace_eprobe;
pub mod trace_events_synth;
pub mod trace_fprobe;
pub mod trace_irqsoff;
pub mod trace_kprobe;
pub mod trace_preemptirq;
pub mod trace_sched_wakeup;
pub mod trace_stack;
pub mod tracefs;
pub mod tracepoint;
pub mod trigger;

#[cfg(feature = "ktest")]
mod event_filter_tests;
#[cfg(feature = "ktest")]
mod fprobe_tests;
#[cfg(feature = "ktest")]
mod ftrace_function_tests;
#[cfg(feature = "ktest")]
mod ftrace_profile_tests;
#[cfg(feature = "ktest")]
mod ftrace_tests;
#[cfg(feature = "ktest")]
pub mod function_graph_tests;
#[cfg(feature = "ktest")]
mod hist_tests;
#[cfg(feature = "ktest")]
mod instance_tests;
#[cfg(feature = "ktest")]
mod kprobe_tests;
#[cfg(feature = "ktest")]
pub mod latency_tests;
#[cfg(feature = "ktest")]
mod nested_tests;
#[cfg(feature = "ktest")]
mod preemptirq_tests;
#[cfg(feature = "ktest")]
mod print_modes_tests;
#[cfg(feature = "ktest")]
mod synth_tests;
#[cfg(feature = "ktest")]
mod test_files;
#[cfg(feature = "ktest")]
mod tests;
#[cfg(feature = "ktest")]
mod tracepoint_tests;

use crate::irq_work::{IrqWaker, IrqWakerHandle};
use crate::percpu::{PerCpu, NR_CPUS};
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use ring_buffer::{CpuBuffer, Page, Stats, BUF_PAGE_HDR_SIZE, BUF_PAGE_SIZE, MIN_PAGES, PAGE_SIZE};
use uapi::Errno;
use vfs::WaitQueueHead;

/// Bytes of the common fields every entry starts with (`struct
/// trace_entry`: `common_type`, `common_flags`, `common_preempt_count`,
/// `common_pid`).
pub const TRACE_ENTRY_SIZE: usize = 8;

/// `common_flags`: interrupts were masked (the `d` of the irq-info column).
pub const TRACE_FLAG_IRQS_OFF: u8 = 0x01;
/// `common_flags`: a reschedule was pending (`n`).
pub const TRACE_FLAG_NEED_RESCHED: u8 = 0x04;
/// `common_flags`: in a hardware interrupt handler (`h`).
pub const TRACE_FLAG_HARDIRQ: u8 = 0x08;
/// `common_flags`: serving a softirq (`s`; this kernel has no softirqs,
/// so it only ever reads it from entries).
pub const TRACE_FLAG_SOFTIRQ: u8 = 0x10;
/// `common_flags`: the preemption count's reschedule bit was set (`p`,
/// with [`TRACE_FLAG_NEED_RESCHED`] `N`: arm64 folds the task's flag into
/// its count, so both are set together).
pub const TRACE_FLAG_PREEMPT_RESCHED: u8 = 0x20;
/// `common_flags`: in an NMI (`z`).
pub const TRACE_FLAG_NMI: u8 = 0x40;
/// `common_flags`: bottom halves disabled (`b`).
pub const TRACE_FLAG_BH_OFF: u8 = 0x80;

/// Linux's default per-CPU size (`trace_buf_size`, 1408 KiB), which the
/// buffers take when tracing is first used.
pub const TRACE_BUF_SIZE_DEFAULT: usize = 1_441_792;

/// Pages for a per-CPU size of `bytes`, as `ring_buffer_resize` rounds
/// (default sub-buffers).
pub fn pages_for(bytes: usize) -> usize {
    pages_for_subbuf(bytes, PAGE_SIZE)
}

/// Sub-buffers of `subbuf` bytes for a per-CPU size of `bytes`.
pub fn pages_for_subbuf(bytes: usize, subbuf: usize) -> usize {
    bytes
        .div_ceil(subbuf.saturating_sub(BUF_PAGE_HDR_SIZE).max(1))
        .max(MIN_PAGES)
}

/// One trace array (Linux's `trace_array`): the global one, and later one
/// per instance.
pub struct TraceArray {
    buffers: [IrqSpinLock<Option<CpuBuffer>, false>; NR_CPUS],
    /// Pages of each CPU's buffer, readable without its lock.
    nr_pages: [AtomicUsize; NR_CPUS],
    /// Bytes of each page (`buffer_subbuf_size_kb`).
    subbuf: AtomicUsize,
    /// The size `buffer_size_kb` shows per CPU, set by resizes (Linux's
    /// `trace_array_cpu.entries`; a sub-buffer size change keeps it).
    entries: [AtomicUsize; NR_CPUS],
    /// Whether the buffers have their full size yet (Linux keeps them
    /// minimal until tracing is first used: `ring_buffer_expanded`).
    expanded: AtomicBool,
    /// The size `expanded` grows to, per CPU.
    expand_to: AtomicUsize,
    /// `tracing_on`.
    tracing_on: AtomicBool,
    /// `tracing_cpumask`: the CPUs whose events are recorded (bit N for
    /// CPU N; NR_CPUS fits in the word).
    cpumask: AtomicU64,
    /// `tracing_stop` depth (pause-on-trace while `trace` is open).
    stopped: AtomicUsize,
    /// Set on the CPU while it writes: a nested write (an interrupt's
    /// event while a writer with interrupts on is between reserve and
    /// commit) keeps its event in `deferred` ...
    writing: PerCpu<AtomicBool>,
    /// ... which the writer it interrupted moves into the buffer after
    /// its own event ...
    /// (On the heap, one CPU's at a time: NR_CPUS of them, a kilobyte
    /// each, would not fit the stack the array is made on.)
    deferred: PerCpu<alloc::boxed::Box<ring_buffer::nested::Deferred>>,
    /// ... or, when the slots are full or the event too large for one,
    /// drops it and counts it here, shown in `dropped events` (the ring
    /// buffer's own count sits behind the lock the interrupted writer
    /// holds).
    nested_dropped: PerCpu<AtomicU64>,
    /// Woken (through `waker`) when events arrive.
    wq: Arc<WaitQueueHead>,
    waker: Option<IrqWakerHandle>,
    /// Serialises resizes, resets and clock changes.
    resize_lock: spin::Mutex<()>,
    /// The snapshot buffer (`snapshot`).
    pub snapshot: snapshot::Snapshot,
    /// `buffer_percent`: how full a CPU's buffer must be before a blocked
    /// `trace_pipe_raw` splice or poll wakes (0: at any data).
    buffer_percent: AtomicUsize,
    /// The trace options ([`options`]) of this array.
    trace_flags: AtomicU32,
    /// `trace_clock`: an index into [`clock::TRACE_CLOCKS`].
    clock_id: AtomicUsize,
    /// `set_event_pid`.
    pub event_pids: events::EventPidList,
    /// `set_event_notrace_pid`.
    pub event_notrace_pids: events::EventPidList,
    /// Why the one-step write ([`trace_event_try_write_words`]) must
    /// decline here, as [`FastGate`] bits (low half), recomputed by
    /// [`TraceArray::refresh_fast_gate`] after every change of what they
    /// sum up; a count of refreshes (high half) keeps a stale refresh from
    /// overwriting a newer one. One load on the hit path instead of one
    /// per setting; the full path reads the settings themselves.
    fast_gate: AtomicU64,
}

/// The bits of [`TraceArray`]'s `fast_gate`: each a setting under which
/// the one-step write hands an event to the full path.
struct FastGate;

impl FastGate {
    /// `tracing_on` is 0.
    const OFF: u32 = 1 << 0;
    /// Paused ([`TraceArray::tracing_stop`]).
    const STOPPED: u32 = 1 << 1;
    /// `set_event_pid` or `set_event_notrace_pid` lists tasks.
    const PIDS: u32 = 1 << 2;
    /// `options/stacktrace` (a stack entry after each event) or
    /// `options/record-tgid` (the writer's tgid saved).
    const OPTIONS: u32 = 1 << 3;
    /// `tracing_cpumask` leaves out a tracing CPU.
    const CPUMASK: u32 = 1 << 4;
    /// `trace_clock` is not `local` (read through its function).
    const CLOCK: u32 = 1 << 5;
}

/// Linux's default `buffer_percent`.
pub const BUFFER_PERCENT_DEFAULT: usize = 50;

static GLOBAL: spin::Once<TraceArray> = spin::Once::new();

/// The global trace array, made at the first use outside probe context
/// (tracefs's mount, an event's registration).
pub fn global_trace() -> &'static TraceArray {
    GLOBAL.call_once(TraceArray::new)
}

/// Whether `tr` is the top-level trace array (not an instance).
pub fn is_global(tr: &TraceArray) -> bool {
    GLOBAL.get().is_some_and(|g| core::ptr::eq(g, tr))
}

/// The global trace array if it exists (the write path never makes it).
pub fn try_global_trace() -> Option<&'static TraceArray> {
    GLOBAL.get()
}

/// CPUs the trace arrays have buffers for (Linux's tracing CPUs).
pub fn tracing_cpus() -> impl Iterator<Item = usize> {
    crate::smp::online_cpus()
}

impl TraceArray {
    /// A trace array with minimal buffers and Linux's default options.
    fn new() -> TraceArray {
        let wq = Arc::new(WaitQueueHead::new());
        TraceArray::with_flags(options::DEFAULT_FLAGS, wq)
    }

    /// A trace array for an instance, with minimal buffers and the options
    /// `flags`. It is never freed: [`instance_array`] recycles it after
    /// its rmdir.
    fn new_instance(flags: u32) -> TraceArray {
        TraceArray::with_flags(flags, Arc::new(WaitQueueHead::new()))
    }

    fn with_flags(flags: u32, wq: Arc<WaitQueueHead>) -> TraceArray {
        let tr = TraceArray {
            buffers: [const { IrqSpinLock::new(None) }; NR_CPUS],
            nr_pages: [const { AtomicUsize::new(0) }; NR_CPUS],
            subbuf: AtomicUsize::new(PAGE_SIZE),
            entries: [const { AtomicUsize::new(0) }; NR_CPUS],
            expanded: AtomicBool::new(false),
            expand_to: AtomicUsize::new(TRACE_BUF_SIZE_DEFAULT),
            tracing_on: AtomicBool::new(true),
            cpumask: AtomicU64::new(u64::MAX),
            stopped: AtomicUsize::new(0),
            writing: PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]),
            deferred: PerCpu::new(core::array::from_fn(|_| {
                alloc::boxed::Box::new(ring_buffer::nested::Deferred::new())
            })),
            nested_dropped: PerCpu::new([const { AtomicU64::new(0) }; NR_CPUS]),
            // Without it (no memory) readers wake at their next poll only.
            waker: IrqWaker::register(wq.clone()).ok(),
            wq,
            resize_lock: spin::Mutex::new(()),
            snapshot: snapshot::Snapshot::new(),
            buffer_percent: AtomicUsize::new(BUFFER_PERCENT_DEFAULT),
            trace_flags: AtomicU32::new(flags),
            clock_id: AtomicUsize::new(0),
            event_pids: events::EventPidList::new(),
            event_notrace_pids: events::EventPidList::new(),
            fast_gate: AtomicU64::new(0),
        };
        tr.refresh_fast_gate();
        for cpu in tracing_cpus() {
            if let Ok(b) = CpuBuffer::with_pages(MIN_PAGES) {
                *tr.buffers[cpu].lock_serving_calls() = Some(b);
                tr.nr_pages[cpu].store(MIN_PAGES, Ordering::Release);
                tr.entries[cpu].store(MIN_PAGES * BUF_PAGE_SIZE, Ordering::Release);
            }
        }
        tr
    }

    /// Whether events are recorded (`tracing_on` and not paused).
    /// Relaxed, as Linux's `tracer_tracing_is_on`: flags on their own,
    /// read on every event, where an LDAR costs as much as a dozen plain
    /// loads under QEMU's TCG.
    pub fn is_on(&self) -> bool {
        self.tracing_on.load(Ordering::Relaxed) && self.stopped.load(Ordering::Relaxed) == 0
    }

    /// The settings under which the one-step write declines, as
    /// [`FastGate`] bits, read now.
    fn fast_gate_reasons(&self) -> u32 {
        let mut r = 0;
        if !self.tracing_on.load(Ordering::Acquire) {
            r |= FastGate::OFF;
        }
        if self.stopped.load(Ordering::Acquire) != 0 {
            r |= FastGate::STOPPED;
        }
        if events::pid_lists_on(self) {
            r |= FastGate::PIDS;
        }
        if self.trace_flags.load(Ordering::Acquire) & (options::STACKTRACE | options::RECORD_TGID) != 0 {
            r |= FastGate::OPTIONS;
        }
        let mask = self.cpumask.load(Ordering::Acquire);
        if tracing_cpus().any(|c| c >= 64 || mask & (1 << c) == 0) {
            r |= FastGate::CPUMASK;
        }
        if self.clock_id.load(Ordering::Acquire) != 0 {
            r |= FastGate::CLOCK;
        }
        r
    }

    /// Recomputes `fast_gate` after a change of a setting it sums up (the
    /// change made first). Every change is followed by its own refresh,
    /// and a refresh stores only if no other stored since it loaded the
    /// word (the count in the high half changes with each store), having
    /// read the settings after that load: so the last store read every
    /// change before it.
    fn refresh_fast_gate(&self) {
        let mut old = self.fast_gate.load(Ordering::Acquire);
        loop {
            let new = ((old >> 32).wrapping_add(1) << 32) | u64::from(self.fast_gate_reasons());
            match self
                .fast_gate
                .compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }

    /// Whether the one-step write may run here: recording on, no pid list,
    /// no option that adds to an entry, every CPU in the mask, the local
    /// clock. Relaxed, as [`Self::is_on`]: a hit racing a change may see
    /// either side of it.
    #[inline(always)]
    fn fast_gate_open(&self) -> bool {
        self.fast_gate.load(Ordering::Relaxed) as u32 == 0
    }

    /// Adds the pids of a write to `set_event_pid` (`notrace`: to
    /// `set_event_notrace_pid`).
    pub fn write_event_pids(&self, notrace: bool, buf: &[u8]) -> Result<usize, Errno> {
        let r = self.event_pid_list(notrace).write(buf);
        self.refresh_fast_gate();
        r
    }

    /// Empties `set_event_pid` (`notrace`: `set_event_notrace_pid`).
    pub fn clear_event_pids(&self, notrace: bool) {
        self.event_pid_list(notrace).clear();
        self.refresh_fast_gate();
    }

    fn event_pid_list(&self, notrace: bool) -> &events::EventPidList {
        if notrace {
            &self.event_notrace_pids
        } else {
            &self.event_pids
        }
    }

    /// Its trace options word (relaxed, as Linux's plain `tr->trace_flags`).
    pub fn trace_flags(&self) -> u32 {
        self.trace_flags.load(Ordering::Relaxed)
    }

    /// Whether its option `bit` is set.
    pub fn is_set(&self, bit: u32) -> bool {
        self.trace_flags() & bit != 0
    }

    /// Sets or clears option `bit` (see [`options::set_tracer_flag`] for
    /// the effects).
    pub(super) fn set_trace_flag(&self, bit: u32, on: bool) {
        if on {
            self.trace_flags.fetch_or(bit, Ordering::AcqRel);
        } else {
            self.trace_flags.fetch_and(!bit, Ordering::AcqRel);
        }
        self.refresh_fast_gate();
    }

    /// Index of its clock in [`clock::TRACE_CLOCKS`].
    pub fn clock_id(&self) -> usize {
        self.clock_id.load(Ordering::Acquire)
    }

    /// Selects clock `id`, returning the previous one.
    pub(super) fn set_clock_id(&self, id: usize) -> usize {
        let old = self.clock_id.swap(id, Ordering::AcqRel);
        self.refresh_fast_gate();
        old
    }

    /// Its clock.
    pub fn clock(&self) -> &'static clock::TraceClock {
        clock::clock_by_id(self.clock_id())
    }

    /// Its clock's current value (what an event recorded now is stamped).
    #[inline(always)]
    pub fn clock_now(&self) -> u64 {
        clock::clock_now(self.clock_id.load(Ordering::Relaxed))
    }

    /// `tracing_cpumask`: the CPUs that record events.
    pub fn cpumask(&self) -> u64 {
        self.cpumask.load(Ordering::Acquire)
    }

    /// Writes `tracing_cpumask` (Linux's `tracing_set_cpumask`): a CPU out
    /// of the mask records nothing from its next event on.
    pub fn set_cpumask(&self, mask: u64) {
        self.cpumask.store(mask, Ordering::Release);
        self.refresh_fast_gate();
    }

    /// `tracing_on` as the file shows it.
    pub fn tracing_on(&self) -> bool {
        self.tracing_on.load(Ordering::Acquire)
    }

    /// Writes `tracing_on` (Linux's `tracer_tracing_on/off`): takes effect
    /// for the next event on every CPU. Readers are woken either way:
    /// switching off ends the waits of `trace_pipe_raw` splices, as
    /// Linux's `rb_simple_write` does.
    pub fn set_tracing_on(&self, on: bool) {
        self.tracing_on.store(on, Ordering::Release);
        self.refresh_fast_gate();
        self.wake_readers();
    }

    /// Pauses recording (Linux's `tracing_stop`), nesting.
    pub fn tracing_stop(&self) {
        self.stopped.fetch_add(1, Ordering::AcqRel);
        self.refresh_fast_gate();
    }

    /// Undoes one [`TraceArray::tracing_stop`].
    pub fn tracing_start(&self) {
        let _ = self
            .stopped
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        self.refresh_fast_gate();
    }

    /// `buffer_percent`.
    pub fn buffer_percent(&self) -> usize {
        self.buffer_percent.load(Ordering::Acquire)
    }

    /// Writes `buffer_percent` (Linux's `buffer_percent_write`): 0..=100,
    /// EINVAL above.
    pub fn set_buffer_percent(&self, val: u64) -> Result<(), Errno> {
        let val = usize::try_from(val).ok().filter(|v| *v <= 100).ok_or(Errno::EINVAL)?;
        self.buffer_percent.store(val, Ordering::Release);
        Ok(())
    }

    /// The queue readers of `trace_pipe` and `trace_pipe_raw` sleep on.
    pub fn wait_queue(&self) -> Arc<WaitQueueHead> {
        self.wq.clone()
    }

    /// Wakes sleeping readers (from the next tick). Inlined: every event
    /// calls it, and its fast path is two loads.
    #[inline(always)]
    pub fn wake_readers(&self) {
        // A plain load first: between two ticks only the first event
        // needs the atomic swap that queues the wake-up.
        if let Some(w) = self.waker.as_ref().filter(|w| !w.is_pending()) {
            w.queue();
        }
    }

    /// Runs `f` on CPU `cpu`'s buffer under its lock (readers: keep it
    /// short, one event or one page).
    pub fn with_buffer<R>(&self, cpu: usize, f: impl FnOnce(&mut CpuBuffer) -> R) -> Option<R> {
        let mut b = self.buffers.get(cpu)?.lock_serving_calls();
        b.as_mut().map(f)
    }

    /// Counters of CPU `cpu`.
    pub fn stats(&self, cpu: usize) -> Stats {
        let mut s = self.with_buffer(cpu, |b| b.stats()).unwrap_or_default();
        s.dropped_events += self.nested_dropped.on(cpu).load(Ordering::Relaxed);
        s
    }

    /// `entries-in-buffer` and `entries-written` over all CPUs.
    pub fn total_entries(&self) -> (u64, u64) {
        tracing_cpus()
            .map(|c| self.stats(c))
            .fold((0, 0), |(e, w), s| (e + s.entries, w + s.written()))
    }

    /// Whether any CPU lost events to overwriting.
    pub fn any_overrun(&self) -> bool {
        tracing_cpus().any(|c| self.stats(c).overrun > 0)
    }

    /// Size of CPU `cpu`'s buffer in bytes, as `buffer_size_kb` counts.
    pub fn size_bytes(&self, cpu: usize) -> usize {
        self.entries.get(cpu).map_or(0, |n| n.load(Ordering::Acquire))
    }

    /// Bytes of each buffer page (`buffer_subbuf_size_kb`).
    pub fn subbuf_size(&self) -> usize {
        self.subbuf.load(Ordering::Acquire)
    }

    /// Bytes of events one page holds.
    pub fn data_size(&self) -> usize {
        self.subbuf_size() - BUF_PAGE_HDR_SIZE
    }

    /// Largest payload one event may carry (`BUF_MAX_DATA_SIZE` of the
    /// sub-buffer size).
    pub fn max_data_size(&self) -> usize {
        self.data_size() - 8
    }

    /// Whether the buffers have their full size (see `expanded`).
    pub fn is_expanded(&self) -> bool {
        self.expanded.load(Ordering::Acquire)
    }

    /// The per-CPU size the buffers take when first used.
    pub fn expand_size(&self) -> usize {
        self.expand_to.load(Ordering::Acquire)
    }

    /// Gives the buffers their full size if they do not have it yet
    /// (Linux's `tracing_update_buffers`, called when events are enabled).
    pub fn update_buffers(&self) -> Result<(), Errno> {
        if self.is_expanded() {
            return Ok(());
        }
        self.resize(None, self.expand_size())
    }

    /// Sets the size of CPU `cpu`'s buffer (all CPUs for None) to `bytes`,
    /// keeping the newest events. ENOMEM if the pages cannot be had.
    pub fn resize(&self, cpu: Option<usize>, bytes: usize) -> Result<(), Errno> {
        let _g = self.resize_lock.lock();
        let subbuf = self.subbuf_size();
        let want = pages_for_subbuf(bytes, subbuf);
        let cpus: Vec<usize> = match cpu {
            Some(c) => alloc::vec![c],
            None => tracing_cpus().collect(),
        };
        for c in cpus {
            let have = self.nr_pages.get(c).ok_or(Errno::EINVAL)?.load(Ordering::Acquire);
            let mut spare: Vec<Box<Page>> = Vec::new();
            if want > have {
                let need = want - have;
                // Leave the rest of the system memory to work with, as
                // Linux refuses sizes beyond what is available.
                let free = crate::mm::frame::stats().free;
                let frames = need * (subbuf / PAGE_SIZE);
                if frames + frames / 8 + 1024 > free {
                    return Err(Errno::ENOMEM);
                }
                spare.try_reserve_exact(need).map_err(|_| Errno::ENOMEM)?;
                for _ in 0..need {
                    spare.push(ring_buffer::try_new_subbuf(subbuf).ok_or(Errno::ENOMEM)?);
                }
            } else {
                spare.try_reserve_exact(have - want).map_err(|_| Errno::ENOMEM)?;
            }
            self.with_buffer(c, |b| b.resize(want, &mut spare))
                .ok_or(Errno::EINVAL)?
                .map_err(|_| Errno::EINVAL)?;
            self.nr_pages[c].store(want, Ordering::Release);
            self.entries[c].store(want * (subbuf - BUF_PAGE_HDR_SIZE), Ordering::Release);
            // The freed pages go back here, outside the buffer's lock.
            drop(spare);
        }
        if cpu.is_none() {
            self.expanded.store(true, Ordering::Release);
        }
        drop(_g);
        snapshot::resize_snapshot(self, cpu, bytes)
    }

    /// Empties CPU `cpu`'s buffer (all for None), zeroing its counters
    /// (opening `trace` with O_TRUNC).
    pub fn reset(&self, cpu: Option<usize>) {
        let _g = self.resize_lock.lock();
        match cpu {
            Some(c) => {
                self.with_buffer(c, CpuBuffer::reset);
                self.nested_dropped.on(c).store(0, Ordering::Relaxed);
            }
            None => {
                for c in tracing_cpus() {
                    self.with_buffer(c, CpuBuffer::reset);
                    self.nested_dropped.on(c).store(0, Ordering::Relaxed);
                }
            }
        }
    }

    /// Frees every CPU's buffer (a removed instance): nothing is recorded
    /// into it any more.
    pub fn free_buffers(&self) {
        snapshot::free_snapshot(self);
        let _g = self.resize_lock.lock();
        for ((b, n), e) in self.buffers.iter().zip(&self.nr_pages).zip(&self.entries) {
            let old = b.lock().take();
            n.store(0, Ordering::Release);
            e.store(0, Ordering::Release);
            drop(old);
        }
    }

    /// Makes a removed instance's array new again: minimal buffers, Linux's
    /// initial settings, the options `flags`.
    fn recycle(&self, flags: u32) {
        {
            let _g = self.resize_lock.lock();
            for cpu in tracing_cpus() {
                if let Ok(b) = CpuBuffer::with_pages(MIN_PAGES) {
                    *self.buffers[cpu].lock_serving_calls() = Some(b);
                    self.nr_pages[cpu].store(MIN_PAGES, Ordering::Release);
                    self.entries[cpu].store(MIN_PAGES * BUF_PAGE_SIZE, Ordering::Release);
                }
            }
            self.subbuf.store(PAGE_SIZE, Ordering::Release);
            self.expanded.store(false, Ordering::Release);
            self.expand_to.store(TRACE_BUF_SIZE_DEFAULT, Ordering::Release);
        }
        self.tracing_on.store(true, Ordering::Release);
        self.cpumask.store(u64::MAX, Ordering::Release);
        self.stopped.store(0, Ordering::Release);
        self.buffer_percent.store(BUFFER_PERCENT_DEFAULT, Ordering::Release);
        self.trace_flags.store(flags, Ordering::Release);
        self.clock_id.store(0, Ordering::Release);
        self.event_pids.clear();
        self.event_notrace_pids.clear();
        self.refresh_fast_gate();
    }

    /// Sets overwrite mode on every CPU (`options/overwrite`).
    pub fn set_overwrite(&self, on: bool) {
        for c in tracing_cpus() {
            self.with_buffer(c, |b| b.set_overwrite(on));
        }
    }
}

/// Every instance trace array ever made, in use or free for the next
/// mkdir (so that removing and making instances again and again costs no
/// memory and no work items).
static INSTANCE_ARRAYS: IrqSpinLock<Vec<(&'static TraceArray, bool)>> = IrqSpinLock::new(Vec::new());

/// A trace array for a new instance with the options `flags` and minimal
/// buffers: a free one of a removed instance, or a new one (Linux's
/// `trace_array_create`).
pub(super) fn instance_array(flags: u32) -> Result<&'static TraceArray, Errno> {
    let mut all = INSTANCE_ARRAYS.lock();
    if let Some(slot) = all.iter_mut().find(|(_, used)| !used) {
        slot.1 = true;
        let tr = slot.0;
        drop(all);
        tr.recycle(flags);
        return Ok(tr);
    }
    drop(all);
    let tr: &'static TraceArray = Box::leak(Box::new(TraceArray::new_instance(flags)));
    let mut all = INSTANCE_ARRAYS.lock();
    all.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    all.push((tr, true));
    Ok(tr)
}

/// Gives back the trace array of a removed instance (its buffers freed,
/// no file of it open).
pub(super) fn instance_array_free(tr: &'static TraceArray) {
    if let Some(slot) = INSTANCE_ARRAYS.lock().iter_mut().find(|(t, _)| core::ptr::eq(*t, tr)) {
        slot.1 = false;
    }
}

/// The `common_flags` and `common_preempt_count` of an event recorded now
/// (Linux's `tracing_gen_ctx`): the interrupt mask, a pending reschedule,
/// whether an interrupt handler runs, and the preemption depth (at most
/// 15; this kernel has no migrate-disable, the high nibble stays 0). An
/// event recorded inside the slow path ([`TraceCtxSave`]) gets the state
/// the path saved before it masked interrupts.
#[inline]
pub(super) fn tracing_gen_ctx() -> (u8, u8) {
    tracing_gen_ctx_on(crate::percpu::this_cpu())
}

/// [`tracing_gen_ctx`] for `cpu`, which must be this CPU (the record path
/// reads the number once, see [`crate::percpu::this_cpu`]).
#[inline(always)]
fn tracing_gen_ctx_on(cpu: usize) -> (u8, u8) {
    let saved = SAVED_CTX.on(cpu).load(Ordering::Relaxed);
    let hardirq = crate::irq::in_hardirq_on(cpu);
    // Not for an interrupt that arrived while a context was saved (the
    // saver may run with interrupts on): it records its own.
    let mut flags = 0;
    if saved & CTX_SAVED != 0 && (saved & CTX_HARDIRQ != 0) == hardirq {
        if saved & CTX_IRQS_OFF_ONLY == 0 {
            return ((saved >> 8) as u8, saved as u8);
        }
        // A probe's handlers: the rest is read now, as on Linux, whose
        // handlers' events take their context when they are recorded.
        flags |= TRACE_FLAG_IRQS_OFF;
    } else if arch::cpu::irqs_disabled() {
        flags |= TRACE_FLAG_IRQS_OFF;
    }
    if crate::sched::need_resched_on(cpu) {
        flags |= TRACE_FLAG_NEED_RESCHED | TRACE_FLAG_PREEMPT_RESCHED;
    }
    if hardirq {
        flags |= TRACE_FLAG_HARDIRQ;
    }
    (flags, crate::preempt::preempt_count_on(cpu).min(0xf) as u8)
}

/// The context [`tracing_gen_ctx_on`] gives while a [`probe_ctx_irqs_off`]
/// of this interrupt level is in force, computed without it: for a probe
/// whose only event is written in one step, which so saves and restores
/// nothing (its slow path saves it, [`super::trace::events`]).
#[inline(always)]
pub(super) fn probe_hit_ctx_on(cpu: usize) -> (u8, u8) {
    let mut flags = TRACE_FLAG_IRQS_OFF;
    if crate::sched::need_resched_on(cpu) {
        flags |= TRACE_FLAG_NEED_RESCHED | TRACE_FLAG_PREEMPT_RESCHED;
    }
    if crate::irq::in_hardirq_on(cpu) {
        flags |= TRACE_FLAG_HARDIRQ;
    }
    (flags, crate::preempt::preempt_count_on(cpu).min(0xf) as u8)
}

/// Set in [`SAVED_CTX`] while it holds a context.
const CTX_SAVED: u32 = 1 << 31;
/// Set in [`SAVED_CTX`] when it was saved in an interrupt handler.
const CTX_HARDIRQ: u32 = 1 << 30;
/// Set in [`SAVED_CTX`] by [`probe_ctx_irqs_off`]: only the interrupt mask
/// is forced (to masked); the rest of the context is read when an event
/// is recorded.
const CTX_IRQS_OFF_ONLY: u32 = 1 << 29;

/// The caller's context, saved by the slow path of event recording
/// (filters, triggers, stack traces), which masks interrupts and takes a
/// lock before it writes: its entries show the state of the code that hit
/// the event, as Linux's `trace_ctx` taken at the tracepoint does.
static SAVED_CTX: PerCpu<AtomicU32> = PerCpu::new([const { AtomicU32::new(0) }; NR_CPUS]);

/// A context saved for the entries recorded until it is dropped (on this
/// CPU, which kernel code does not leave before it is dropped): what it
/// replaced, and the CPU.
pub struct TraceCtxSave(u32, usize);

impl TraceCtxSave {
    /// Keeps `ctx` (from [`tracing_gen_ctx`], taken before interrupts were
    /// masked) as the context of this CPU's entries at this interrupt
    /// level; nests.
    pub(super) fn new(ctx: (u8, u8)) -> TraceCtxSave {
        TraceCtxSave::save_on(
            crate::percpu::this_cpu(),
            CTX_SAVED | u32::from(ctx.0) << 8 | u32::from(ctx.1),
        )
    }

    /// Saves `v` (with [`CTX_SAVED`], and without the interrupt level,
    /// which this adds) on `cpu`, which must be this CPU.
    #[inline(always)]
    fn save_on(cpu: usize, v: u32) -> TraceCtxSave {
        let irq = if crate::irq::in_hardirq_on(cpu) { CTX_HARDIRQ } else { 0 };
        let v = v | irq;
        // An interrupt between the load and the store puts back what it
        // found: no atomic swap needed on this CPU.
        let slot = SAVED_CTX.on(cpu);
        let old = slot.load(Ordering::Relaxed);
        slot.store(v, Ordering::Relaxed);
        TraceCtxSave(old, cpu)
    }
}

/// Until the result is dropped, the events this CPU records (outside
/// interrupt handlers that arrive meanwhile) show the context of a `BRK`
/// probe's handlers, interrupts masked: for the handlers of an
/// ftrace-based probe, which run with interrupts as the probed function
/// had them, so that their events read as on Linux arm64, whose kprobes
/// all trap.
/// `cpu` must be this CPU (see [`crate::percpu::this_cpu`]).
#[inline(always)]
pub fn probe_ctx_irqs_off(cpu: usize) -> TraceCtxSave {
    // Only the mask is forced; `tracing_gen_ctx` then skips its read of
    // DAIF (a call into the emulator's helpers) and reads the rest.
    TraceCtxSave::save_on(cpu, CTX_SAVED | CTX_IRQS_OFF_ONLY)
}

impl Drop for TraceCtxSave {
    fn drop(&mut self) {
        SAVED_CTX.on(self.1).store(self.0, Ordering::Relaxed);
    }
}

/// The current task's pid for `common_pid` (0 for the idle tasks),
/// without taking a reference to it.
fn current_pid() -> i32 {
    current_pid_on(crate::percpu::this_cpu())
}

/// [`current_pid`] for `cpu`, which must be this CPU.
#[inline(always)]
fn current_pid_on(cpu: usize) -> i32 {
    crate::sched::current_trace_pid_on(cpu) as i32
}

/// Writes the common fields of an entry of type `ty` recorded now into
/// `entry[..TRACE_ENTRY_SIZE]` (for entries built outside the buffer,
/// which filters and triggers examine before they are written).
pub(super) fn fill_entry_header(entry: &mut [u8], ty: u16) {
    fill_entry_header_ctx(entry, ty, tracing_gen_ctx());
}

/// [`fill_entry_header`] with the context already taken.
#[inline]
pub(super) fn fill_entry_header_ctx(entry: &mut [u8], ty: u16, (flags, preempt): (u8, u8)) {
    // Borrowed, not counted: no atomic update per event.
    let pid = current_pid();
    if let Some(h) = entry.get_mut(..TRACE_ENTRY_SIZE) {
        h[0..2].copy_from_slice(&ty.to_le_bytes());
        h[2] = flags;
        h[3] = preempt;
        h[4..8].copy_from_slice(&pid.to_le_bytes());
    }
}

/// Records one entry of event type `ty` with `len` bytes after the common
/// fields, which `fill` writes (returning false discards the entry, as a
/// filter that rejects it). Returns whether the entry was committed.
///
/// Safe from any context on any CPU: it never sleeps, never allocates and
/// never spins on a lock its own CPU holds.
pub fn trace_event_write(tr: &TraceArray, ty: u16, len: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> bool {
    trace_event_write_entry(tr, ty, TRACE_ENTRY_SIZE + len, |e| fill(&mut e[TRACE_ENTRY_SIZE..]))
}

/// [`trace_event_write`] for an entry of `len` bytes in all (at least
/// [`TRACE_ENTRY_SIZE`]), which `fill` sees whole, common fields written.
/// The rest of the entry is zero when `fill` runs.
#[inline]
pub fn trace_event_write_entry(tr: &TraceArray, ty: u16, len: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> bool {
    trace_event_write_raw(tr, ty, len, true, fill)
}

/// [`trace_event_write_entry`] for a writer that fills every byte of the
/// entry after the common fields: the bytes `fill` sees there are stale
/// (an older event's), not zero, as in Linux's ring buffer, which saves
/// the hottest events (function, function_graph, syscalls) clearing a
/// payload they overwrite whole.
#[inline]
pub fn trace_event_write_full(tr: &TraceArray, ty: u16, len: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> bool {
    trace_event_write_raw(tr, ty, len, false, fill)
}

/// The record path (Linux's `trace_event_buffer_lock_reserve` then
/// `trace_event_buffer_commit`): the context taken once, the nesting guard
/// a plain per-CPU flag, the entry reserved in place in the page, its
/// header written in one store. Interrupts are left as they are (no DAIF
/// write, as Linux's ring buffer, which never masks them): kernel code is
/// not preempted, so the task stays on this CPU; an interrupt (or an
/// exception) that arrives while the guard is set and records an event
/// finds it set, and its event is dropped rather than waiting on the lock
/// its CPU holds. Callers with interrupts on are few (a tracepoint in task
/// context, an ftrace-based probe) and their window is this function.
///
/// A nested writer (one that finds the guard set) keeps its event, stamped
/// when it happened, in the CPU's deferred slots ([`write_nested`]); every
/// writer moves waiting ones into the buffer before its own event, and
/// after it (once its guard is cleared, taking it again), so they land in
/// the order they happened.
#[inline(always)]
fn trace_event_write_raw(
    tr: &TraceArray,
    ty: u16,
    len: usize,
    zero: bool,
    fill: impl FnOnce(&mut [u8]) -> bool,
) -> bool {
    trace_event_write_with::<_, false>(
        tr,
        ty,
        len,
        fill,
        #[inline(always)]
        |buf, ts, header, fill| {
            let Ok(mut r) = buf.reserve_uninit_with(ts, len, arch::ftrace::put_unaligned_le32) else {
                return false;
            };
            let e = r.entry_mut();
            let Some((h, rest)) = e.split_first_chunk_mut::<TRACE_ENTRY_SIZE>() else {
                return false;
            };
            arch::ftrace::put_unaligned_le64(h, header);
            if zero {
                rest.fill(0);
            }
            if !fill(e) {
                return false;
            }
            r.commit_with(arch::ftrace::put_unaligned_le64);
            true
        },
    )
}

/// Writes an event of type `ty` whose fields after the common ones are the
/// words `rest` (a probe's addresses): the record path of
/// [`trace_event_write_full`], the entry written and committed in one step
/// ([`CpuBuffer::write_words_with`]). `W` is the entry's words, the
/// common fields' one included (`W == N + 1`). With `PROBE_CTX`, the
/// entry's context is a probe handler's ([`probe_hit_ctx_on`]).
#[inline(always)]
pub fn trace_event_write_words<const N: usize, const W: usize, const PROBE_CTX: bool>(
    tr: &TraceArray,
    ty: u16,
    rest: [u64; N],
) -> bool {
    const { assert!(W == N + 1) };
    let fill = fill_words(rest);
    trace_event_write_with::<_, PROBE_CTX>(
        tr,
        ty,
        8 * W,
        fill,
        #[inline(always)]
        |buf, ts, header, _| {
            let mut words = [header; W];
            if let Some(tail) = words.get_mut(1..) {
                tail.copy_from_slice(&rest);
            }
            buf.write_words_with(
                ts,
                &words,
                arch::ftrace::put_unaligned_le32,
                arch::ftrace::put_unaligned_le64,
            )
            .is_ok()
        },
    )
}

/// What [`trace_event_try_write_words`] did with an entry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TryWrite {
    /// Written and committed; nothing is left to do.
    Committed,
    /// Written and committed; [`trace_event_after_commit`] has work left.
    CommittedPost,
    /// Nothing written, nothing changed: the full path writes it.
    Declined,
}

/// [`trace_event_write_words`] with a probe handler's context, on the
/// path where it calls nothing, so that its caller needs no frame of its
/// own (no callee-saved register is spilled): the entry written in one
/// step on this CPU's tail page, for an event whose file in `tr` is
/// enabled. Declines, having changed nothing, where the full path has
/// work: a setting behind the array's gate
/// ([`TraceArray::fast_gate_open`]), a writer it interrupted, the
/// buffer's lock held, deferred entries to move first, a page to change
/// or a time extend to write. After a commit, [`TryWrite::CommittedPost`]
/// says that entries deferred during the write or a reader to wake are
/// left for [`trace_event_after_commit`].
#[inline(always)]
pub fn trace_event_try_write_words<const N: usize, const W: usize>(
    tr: &TraceArray,
    cpu: usize,
    ty: u16,
    rest: [u64; N],
) -> TryWrite {
    const { assert!(W == N + 1) };
    // Recording on, every CPU in the mask, the local clock, no pid list,
    // no stack trace or tgid to add.
    if !tr.fast_gate_open() {
        return TryWrite::Declined;
    }
    let Some(lock) = tr.buffers.get(cpu) else {
        return TryWrite::Declined;
    };
    let guard = tr.writing.on(cpu);
    if guard.load(Ordering::Relaxed) {
        return TryWrite::Declined;
    }
    let (flags, preempt) = probe_hit_ctx_on(cpu);
    let pid = current_pid_on(cpu);
    let header = entry_header(ty, flags, preempt, pid);
    let deferred = &**tr.deferred.on(cpu % NR_CPUS);
    // Inlined: this path makes no call (see above).
    let committed = in_write_window(
        guard,
        #[inline(always)]
        || match lock.try_lock_guarded() {
            Some(mut b) => match b.as_mut() {
                Some(buf) if !deferred.pending() => {
                    let mut words = [header; W];
                    if let Some(tail) = words.get_mut(1..) {
                        tail.copy_from_slice(&rest);
                    }
                    buf.try_write_words_with(
                        clock::local_ns(),
                        &words,
                        arch::ftrace::put_unaligned_le32,
                        arch::ftrace::put_unaligned_le64,
                    )
                }
                _ => false,
            },
            None => false,
        },
    );
    if !committed {
        return TryWrite::Declined;
    }
    // Its caller's event file is enabled, so events are
    // ([`events::events_enabled`] is not asked).
    if pid != 0 {
        cmdlines::record_cmdline_on(cpu);
    }
    // (No tgid to save: the gate was open.)
    if deferred.pending() || tr.waker.as_ref().is_some_and(|w| !w.is_pending()) {
        return TryWrite::CommittedPost;
    }
    TryWrite::Committed
}

/// What [`trace_event_try_write_words`] left after a commit on `cpu` (this
/// CPU): the entries interrupts deferred during it, the readers' wake-up,
/// the writer's tgid. Out of line: the write's path calls nothing else.
#[inline(never)]
pub fn trace_event_after_commit(tr: &TraceArray, cpu: usize) {
    if tr.deferred.on(cpu % NR_CPUS).pending() {
        flush_deferred_late(tr, cpu);
    }
    tr.wake_readers();
    if current_pid_on(cpu) != 0 && tr.trace_flags.load(Ordering::Relaxed) & options::RECORD_TGID != 0 {
        crate::sched::with_current(cmdlines::save_tgid);
    }
}

/// An entry's common fields as one little-endian word: type, flags,
/// preemption count, pid.
#[inline(always)]
fn entry_header(ty: u16, flags: u8, preempt: u8, pid: i32) -> u64 {
    u64::from(ty) | u64::from(flags) << 16 | u64::from(preempt) << 24 | u64::from(pid as u32) << 32
}

/// A `fill` for the record paths that writes `rest` after an entry's
/// common fields.
#[inline(always)]
pub(super) fn fill_words<const N: usize>(rest: [u64; N]) -> impl FnMut(&mut [u8]) -> bool + Copy {
    move |e: &mut [u8]| {
        let Some(w) = e.get_mut(TRACE_ENTRY_SIZE..) else {
            return false;
        };
        for (c, v) in w.as_chunks_mut::<8>().0.iter_mut().zip(rest) {
            arch::ftrace::put_unaligned_le64(c, v);
        }
        true
    }
}

/// The body of [`trace_event_write_raw`]: `emit` writes the entry (its
/// common fields' word given) into this CPU's buffer at the time given and
/// says whether it was committed; `fill`, given the entry with its common
/// fields written, is what a nested writer's deferred copy is filled with.
#[inline(always)]
fn trace_event_write_with<F: FnOnce(&mut [u8]) -> bool, const PROBE_CTX: bool>(
    tr: &TraceArray,
    ty: u16,
    len: usize,
    fill: F,
    emit: impl FnOnce(&mut CpuBuffer, u64, u64, F) -> bool,
) -> bool {
    if !tr.is_on() || len < TRACE_ENTRY_SIZE {
        return false;
    }
    // Read once for the whole write (kernel code stays on its CPU).
    let cpu = crate::percpu::this_cpu();
    let (flags, preempt) = if PROBE_CTX {
        probe_hit_ctx_on(cpu)
    } else {
        tracing_gen_ctx_on(cpu)
    };
    let pid = current_pid_on(cpu);
    let header = entry_header(ty, flags, preempt, pid);
    if tr.cpumask.load(Ordering::Relaxed) & (1u64 << (cpu % 64)) == 0 {
        return false;
    }
    let Some(lock) = tr.buffers.get(cpu) else {
        return false;
    };
    let guard = tr.writing.on(cpu);
    // An interrupt between the load and the store sets and clears the
    // flag itself: it is clear again when this continues.
    if guard.load(Ordering::Relaxed) {
        return write_nested(tr, cpu, header, len, fill);
    }
    let deferred = &**tr.deferred.on(cpu % NR_CPUS);
    let committed = in_write_window(
        guard,
        #[inline(always)]
        || {
            let mut b = lock.lock_guarded();
            let Some(buf) = b.as_mut() else {
                return false;
            };
            // Older events first: ones an interrupt deferred just after
            // another writer's last look.
            if deferred.pending() {
                flush_deferred(deferred, buf);
            }
            emit(buf, tr.clock_now(), header, fill)
        },
    );
    // The interrupts' events of this window, after this one: moved with
    // the guard taken again. An interrupt after the clear that records
    // writes directly, moving the deferred ones first.
    if deferred.pending() {
        flush_deferred_late(tr, cpu);
    }
    if committed {
        tr.wake_readers();
        if pid != 0 {
            // Saved while events are enabled, as Linux saves them from its
            // sched_switch probe then; options/record-cmd is asked at that
            // switch (no load of the top-level array's flags here).
            if events::events_enabled() {
                cmdlines::record_cmdline();
            }
            if tr.trace_flags.load(Ordering::Relaxed) & options::RECORD_TGID != 0 {
                crate::sched::with_current(cmdlines::save_tgid);
            }
        }
    }
    committed
}

/// Moves this CPU's deferred events into `buf`, oldest first. Called with
/// the CPU's guard set and its buffer's lock held. An event stamped before
/// the buffer's last one (an interrupt between the guard's store and the
/// outer writer's clock read) is written at that last time, so that the
/// buffer's deltas never go back. One that does not fit is counted by the
/// buffer as any other.
#[inline(never)]
fn flush_deferred(deferred: &ring_buffer::nested::Deferred, buf: &mut CpuBuffer) {
    let mut scratch = [0u8; ring_buffer::nested::SLOT_BYTES];
    while deferred.take_oldest(&mut scratch, |ts, e| {
        let ts = ts.max(buf.write_stamp());
        if let Ok(mut r) = buf.reserve_uninit_with(ts, e.len(), arch::ftrace::put_unaligned_le32) {
            r.entry_mut().copy_from_slice(e);
            r.commit_with(arch::ftrace::put_unaligned_le64);
        }
    }) {}
}

/// [`flush_deferred`] after the guard was cleared: takes it again (an
/// interrupt that finds it set defers, and is moved by this loop).
#[inline(never)]
fn flush_deferred_late(tr: &TraceArray, cpu: usize) {
    let guard = tr.writing.on(cpu);
    let deferred = &**tr.deferred.on(cpu % NR_CPUS);
    let Some(lock) = tr.buffers.get(cpu) else {
        return;
    };
    while deferred.pending() {
        in_write_window(guard, || {
            let mut b = lock.lock_guarded();
            match b.as_mut() {
                Some(buf) => flush_deferred(deferred, buf),
                None => deferred.clear(),
            }
        });
    }
    tr.wake_readers();
}

/// Runs `f` (which takes and releases the CPU's buffer lock) with this
/// CPU's writing guard set: an interrupt that records meanwhile defers
/// its entry instead of waiting for the lock. The guard is set before the
/// lock is taken and cleared after it is released; the compiler keeps the
/// order, and only this CPU reads it.
#[inline(always)]
fn in_write_window<R>(guard: &AtomicBool, f: impl FnOnce() -> R) -> R {
    guard.store(true, Ordering::Relaxed);
    core::sync::atomic::compiler_fence(Ordering::SeqCst);
    let r = f();
    core::sync::atomic::compiler_fence(Ordering::SeqCst);
    guard.store(false, Ordering::Relaxed);
    core::sync::atomic::compiler_fence(Ordering::SeqCst);
    r
}

/// The write of an event that nests in another writer on this CPU (its
/// guard set): the entry is built on the stack, stamped now, and kept in
/// the CPU's deferred slots for the interrupted writer to move into the
/// buffer. Dropped and counted in `dropped events` when the slots are
/// full or the entry does not fit one. Returns whether it was kept.
#[inline(never)]
fn write_nested(tr: &TraceArray, cpu: usize, header: u64, len: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> bool {
    let mut entry = [0u8; ring_buffer::nested::SLOT_BYTES];
    let kept = match entry.get_mut(..len) {
        Some(e) => {
            let ts = tr.clock_now();
            if let Some((h, _)) = e.split_first_chunk_mut::<TRACE_ENTRY_SIZE>() {
                *h = header.to_le_bytes();
            }
            if !fill(e) {
                return false;
            }
            tr.deferred.on(cpu % NR_CPUS).defer(ts, e)
        }
        None => false,
    };
    if !kept {
        tr.nested_dropped.on(cpu).fetch_add(1, Ordering::Relaxed);
    }
    kept
}

/// The type of `ftrace/print`, the event of `trace_marker` (Linux's
/// `TRACE_PRINT`).
pub const TRACE_PRINT: u16 = 5;

/// Writes a `trace_marker` line; returns the bytes taken.
///
/// Where `trace_marker` writes are said to come from: `ftrace/print`
/// records this function's address, which prints as `tracing_mark_write`.
/// Traceable and probeable, as in Linux (a probe on it records into the
/// buffer before the marker does); the recording itself is
/// [`trace_marker_record`], notrace with the rest of the tracer.
#[allow(unsafe_code)] // exported under Linux's name, which the output prints
#[no_mangle]
#[inline(never)]
pub fn tracing_mark_write(tr: &TraceArray, text: &[u8]) -> Result<usize, Errno> {
    trace_marker_record(tr, text, text.len(), tracing_mark_write as *const () as u64)
}

/// A `trace_marker` write of `cnt` bytes whose copy from the user
/// faulted: `<faulted>` is recorded in the entry sized for them, and the
/// write fails with EFAULT (EBADF when nothing can be recorded), as
/// Linux's `tracing_mark_write`.
pub fn tracing_mark_faulted(tr: &TraceArray, cnt: usize) -> Result<usize, Errno> {
    trace_marker_record(tr, b"<faulted>", cnt, tracing_mark_write as *const () as u64).and(Err(Errno::EFAULT))
}

/// The body of [`tracing_mark_write`]: the marker event (with `ip` as its
/// origin), its triggers, and Linux's errors.
#[inline(never)]
fn trace_marker_record(tr: &TraceArray, text: &[u8], sized: usize, ip: u64) -> Result<usize, Errno> {
    // ip, then the text with a newline (added when missing) and a NUL,
    // sized as Linux sizes it (room for "<faulted>" at least), within the
    // largest event.
    const FAULTED_SIZE: usize = 9;
    let max_text = tr.max_data_size() - TRACE_ENTRY_SIZE - 8 - 2;
    // Linux's TRACE_MARKER_MAX_SIZE: one event takes at most 4096 bytes
    // of a write, whatever the sub-buffer size; the writer writes again.
    const TRACE_MARKER_MAX_SIZE: usize = 4096;
    let cnt = text.len().min(max_text).min(TRACE_MARKER_MAX_SIZE);
    let text = &text[..cnt];
    let nl = !text.ends_with(b"\n");
    // Sized for the write (a faulted one records less than it was).
    let sized = sized.max(cnt).min(max_text).min(TRACE_MARKER_MAX_SIZE);
    let len = 8 + sized.max(FAULTED_SIZE) + 2;
    let post = trigger::trace_marker_triggers_call(tr, ip, text);
    let recorded = trace_event_write(tr, TRACE_PRINT, len, |f| {
        f[..8].copy_from_slice(&ip.to_le_bytes());
        f[8..8 + cnt].copy_from_slice(text);
        if nl {
            f[8 + cnt] = b'\n';
        }
        true
    });
    trigger::trace_marker_post_call(tr, post);
    // As Linux: a marker that cannot be recorded (tracing off, buffer
    // full in non-overwrite mode) fails as if the file were not writable.
    if recorded {
        Ok(cnt)
    } else {
        Err(Errno::EBADF)
    }
}
