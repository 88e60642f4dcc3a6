//! The readers of the buffers, one per open file: `trace` (all CPUs or
//! one, merged by time, not consuming), `trace_pipe` (consuming, blocking
//! unless O_NONBLOCK, pollable) and `trace_pipe_raw` (whole binary pages,
//! as trace-cmd reads them). Each holds a CPU's buffer lock only to copy
//! one page or take one event, and formats outside it.

use super::function_graph::GraphIter;
use super::output;
use super::{tracing_cpus, TraceArray};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use ring_buffer::{Page, PageCursor, PAGE_SIZE};
use trace_probe::print_modes::PrintMode;
use uapi::poll::{POLLIN, POLLRDNORM};
use uapi::Errno;
use vfs::file::{FileOps, OpenFile};
use vfs::WaitQueueHead;

/// How much text a read of `trace` or `trace_pipe` makes ahead.
const CHUNK: usize = 4096;

/// One CPU's position in a `trace` walk.
struct CpuWalk {
    cpu: usize,
    page: Box<Page>,
    cursor: Option<PageCursor>,
    last_seq: Option<u64>,
    done: bool,
}

impl CpuWalk {
    /// The time of its next entry, loading the next page when this one is
    /// used up.
    fn peek_ts(&mut self, tr: &TraceArray) -> Option<u64> {
        loop {
            if self.done {
                return None;
            }
            if let Some(c) = &self.cursor {
                match c.peek(&self.page) {
                    Some(Ok(e)) => return Some(e.ts),
                    // A page that does not parse: skip what is left of it.
                    Some(Err(_)) | None => self.cursor = None,
                }
            }
            let (page, after) = (&mut self.page, self.last_seq);
            match tr.with_buffer(self.cpu, |b| b.copy_page(after, page)).flatten() {
                Some(copy) => {
                    self.last_seq = Some(copy.seq);
                    self.cursor = Some(copy.cursor());
                }
                None => self.done = true,
            }
        }
    }
}

/// The text of a `trace` open, made as it is read.
struct TraceWalk {
    cpus: Vec<CpuWalk>,
    /// Text made but not yet read, and the file offset of its start.
    text: Vec<u8>,
    text_pos: u64,
    started: u64,
    entries: u64,
    annotate: bool,
    header_done: bool,
    /// function_graph's output state, when it is the tracer.
    graph: Option<GraphIter>,
    /// Entries before this time are not shown (a latency tracer's
    /// maximum: what its CPUs recorded before the section).
    time_start: u64,
    /// The latency format (`options/latency-format`), with the time the
    /// relative timestamps count from (None until the first entry, when
    /// no maximum gives it).
    lat: Option<Option<u64>>,
}

/// One open of `trace` or `per_cpu/cpuN/trace`, or of a `snapshot` file.
pub struct TraceFile {
    tr: &'static TraceArray,
    cpu: Option<usize>,
    walk: spin::Mutex<Option<TraceWalk>>,
    paused: bool,
    /// For a `snapshot` file, the trace array whose snapshot buffer `tr`
    /// is: it names the tracer and takes the writes.
    snapshot_of: Option<&'static TraceArray>,
    /// The trace array whose tracer the header names and whose recording
    /// an open pauses (`tr` itself, or the array whose maximum `tr`
    /// holds while a latency tracer is current).
    live: &'static TraceArray,
}

impl TraceFile {
    /// Opens it; O_TRUNC with write access empties the buffer(s) first.
    pub fn open(tr: &'static TraceArray, cpu: Option<usize>, flags: u32) -> Arc<dyn FileOps> {
        let live = tr;
        // A latency tracer's `trace` shows its maximum (Linux's print_max).
        let tr = super::trace_irqsoff::print_max_buffer(live).unwrap_or(live);
        if flags & uapi::fcntl::O_TRUNC != 0 && flags & uapi::fcntl::O_ACCMODE != uapi::fcntl::O_RDONLY {
            tr.reset(cpu);
        }
        let paused = tr.is_set(super::options::PAUSE_ON_TRACE);
        if paused {
            live.tracing_stop();
        }
        Arc::new(TraceFile {
            tr,
            cpu,
            walk: spin::Mutex::new(None),
            paused,
            snapshot_of: None,
            live,
        })
    }

    /// Opens `snapshot` or `per_cpu/cpuN/snapshot` of `live`: its snapshot
    /// buffer read as `trace` reads (without pausing tracing or emptying
    /// on O_TRUNC, as Linux's `tracing_snapshot_open`), writes going to
    /// [`super::snapshot::tracing_snapshot_write`].
    pub fn open_snapshot(live: &'static TraceArray, cpu: Option<usize>) -> Arc<dyn FileOps> {
        Arc::new(TraceFile {
            tr: super::snapshot::max_or_make(live),
            cpu,
            walk: spin::Mutex::new(None),
            paused: false,
            snapshot_of: Some(live),
            live,
        })
    }

    /// The header: for an empty snapshot, the tracer and Linux's help.
    fn header(&self) -> String {
        let Some(live) = self.snapshot_of else {
            return output::trace_header_for(self.tr, self.live, super::ftrace_function::current_tracer(self.live));
        };
        let tracer = super::ftrace_function::current_tracer(live);
        let empty = match self.cpu {
            Some(c) => self.tr.with_buffer(c, |b| b.is_empty()).unwrap_or(true),
            None => tracing_cpus().all(|c| self.tr.with_buffer(c, |b| b.is_empty()).unwrap_or(true)),
        };
        if empty {
            let mut s = alloc::format!("# tracer: {tracer}\n#\n");
            s.push_str(&super::snapshot::snapshot_help(live, self.cpu));
            s
        } else {
            output::trace_header_for(self.tr, live, tracer)
        }
    }

    fn new_walk(&self) -> TraceWalk {
        let cpus: Vec<usize> = match self.cpu {
            Some(c) => alloc::vec![c],
            None => tracing_cpus().collect(),
        };
        TraceWalk {
            cpus: cpus
                .into_iter()
                .map(|cpu| CpuWalk {
                    cpu,
                    page: ring_buffer::new_page(),
                    cursor: None,
                    last_seq: None,
                    done: false,
                })
                .collect(),
            text: Vec::new(),
            text_pos: 0,
            started: 0,
            entries: 0,
            annotate: self.tr.any_overrun(),
            header_done: false,
            graph: GraphIter::open(self.tr),
            time_start: super::trace_irqsoff::max_data_of(self.tr).map_or(0, |d| d.time_start),
            lat: super::options::is_set(super::options::LATENCY_FMT)
                .then(|| super::trace_irqsoff::max_data_of(self.tr).map(|d| d.time_start)),
        }
    }

    /// Makes more text; false at the end. Bytes: under `bin` the lines
    /// are binary.
    fn fill(&self, w: &mut TraceWalk) -> bool {
        // Made straight into the walk's text.
        let mut out = core::mem::take(&mut w.text);
        let start = out.len();
        let mut s = String::new();
        if !w.header_done {
            w.header_done = true;
            out.extend_from_slice(self.header().as_bytes());
        }
        let opts = self.snapshot_of.unwrap_or(self.tr);
        let normal = output::print_mode(opts.trace_flags()) == PrintMode::Normal;
        while out.len() - start < CHUNK {
            let mut best: Option<(usize, u64)> = None;
            for (i, c) in w.cpus.iter_mut().enumerate() {
                if let Some(ts) = c.peek_ts(self.tr) {
                    if best.is_none_or(|(_, b)| ts < b) {
                        best = Some((i, ts));
                    }
                }
            }
            let Some((i, _)) = best else { break };
            let c = &mut w.cpus[i];
            let Some(cursor) = c.cursor.as_mut() else { continue };
            let Some(Ok(ev)) = cursor.next_event(&c.page) else {
                continue;
            };
            if ev.ts < w.time_start {
                continue;
            }
            if let Some(start) = w.lat {
                let (cpu, ts, entry) = (c.cpu, ev.ts, ev.data.to_vec());
                let start = start.unwrap_or(ts);
                w.lat = Some(Some(start));
                let next_ts = w.cpus.iter_mut().filter_map(|c| c.peek_ts(self.tr)).min().unwrap_or(ts);
                output::print_lat_entry(&mut out, cpu, ts, next_ts, start, &entry);
                w.entries += 1;
                continue;
            }
            // Linux marks a CPU's start in its normal print only.
            if w.annotate && w.started & (1 << c.cpu) == 0 && (normal || w.graph.is_some()) {
                w.started |= 1 << c.cpu;
                if w.entries > 0 {
                    output::cpu_buffer_started(opts, &mut s, c.cpu);
                }
            }
            w.entries += 1;
            let Some(g) = w.graph.as_mut() else {
                flush(&mut out, &mut s);
                output::print_trace_entry(opts, &mut out, &mut s, c.cpu, ev.ts, ev.data);
                continue;
            };
            if GraphIter::prints_as_itself(ev.data) {
                flush(&mut out, &mut s);
                output::print_trace_entry(opts, &mut out, &mut s, c.cpu, ev.ts, ev.data);
                continue;
            }
            if !GraphIter::wants_next(ev.data) {
                g.print_line(&mut s, c.cpu, ev.ts, ev.data, None);
                flush(&mut out, &mut s);
                continue;
            }
            // A graph entry looks at the CPU's next entry, perhaps on its
            // next page.
            let (ts, entry) = (ev.ts, ev.data.to_vec());
            c.peek_ts(self.tr);
            let next = c.cursor.as_ref().and_then(|cur| cur.peek(&c.page)).and_then(Result::ok);
            if g.print_line(&mut s, c.cpu, ts, &entry, next.map(|e| e.data)) {
                if let Some(cur) = c.cursor.as_mut() {
                    let _ = cur.next_event(&c.page);
                }
            }
            flush(&mut out, &mut s);
        }
        flush(&mut out, &mut s);
        let more = out.len() > start;
        w.text = out;
        more
    }
}

/// Moves the text made in `s` to the bytes `out`.
fn flush(out: &mut Vec<u8>, s: &mut String) {
    out.extend_from_slice(s.as_bytes());
    s.clear();
}

impl FileOps for TraceFile {
    /// Linux's `trace` (and `per_cpu/cpuN/trace`) is a seq_file read
    /// through `read_iter`, written (to clear it) through a plain `write`.
    fn has_read_iter(&self) -> bool {
        true
    }

    fn read(&self, _: &OpenFile, buf: &mut [u8], pos: &mut u64) -> vfs::Result<usize> {
        let mut g = self.walk.lock();
        // A read before what was made (lseek back) starts over.
        if g.as_ref().is_none_or(|w| *pos < w.text_pos) {
            *g = Some(self.new_walk());
        }
        let Some(w) = g.as_mut() else { return Ok(0) };
        loop {
            let end = w.text_pos + w.text.len() as u64;
            if *pos < end && (end - *pos) as usize >= buf.len() {
                break;
            }
            if !self.fill(w) {
                break;
            }
        }
        // Drop text before the read position.
        let skip = ((*pos - w.text_pos) as usize).min(w.text.len());
        w.text.drain(..skip);
        w.text_pos += skip as u64;
        let n = buf.len().min(w.text.len());
        buf[..n].copy_from_slice(&w.text[..n]);
        *pos += n as u64;
        Ok(n)
    }

    /// Writes to `trace` are accepted and ignored (`echo > trace` clears
    /// by O_TRUNC); those to `snapshot` are its commands.
    fn write(&self, _: &OpenFile, buf: &[u8], _: &mut u64) -> vfs::Result<usize> {
        match self.snapshot_of {
            Some(live) => super::snapshot::tracing_snapshot_write(live, self.cpu, buf),
            None => Ok(buf.len()),
        }
    }

    fn llseek(&self, _: &OpenFile, pos: u64, offset: i64, whence: u32, _: u64) -> vfs::Result<u64> {
        match whence {
            uapi::fcntl::SEEK_SET | uapi::fcntl::SEEK_CUR => vfs::file::generic_llseek(pos, offset, whence, 0),
            _ => Err(Errno::EINVAL),
        }
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        if self.paused {
            self.live.tracing_start();
        }
    }
}

/// One open of `trace_pipe` or `per_cpu/cpuN/trace_pipe`.
pub struct TracePipe {
    tr: &'static TraceArray,
    cpu: Option<usize>,
    /// Lines taken from the buffer but not yet read.
    pending: spin::Mutex<Vec<u8>>,
    /// function_graph's output state, when it is the tracer.
    graph: spin::Mutex<Option<GraphIter>>,
}

impl TracePipe {
    /// Opens it.
    pub fn open(tr: &'static TraceArray, cpu: Option<usize>) -> Arc<dyn FileOps> {
        Arc::new(TracePipe {
            tr,
            cpu,
            pending: spin::Mutex::new(Vec::new()),
            graph: spin::Mutex::new(GraphIter::open(tr)),
        })
    }

    fn cpus(&self) -> Vec<usize> {
        match self.cpu {
            Some(c) => alloc::vec![c],
            None => tracing_cpus().collect(),
        }
    }

    /// Takes the oldest entry of all its CPUs and formats it; false if
    /// there is none. `scratch` and `next` hold a page each already: the
    /// entries are copied into them with the CPU's buffer locked, where
    /// nothing may allocate (an allocation is a traced call, whose event
    /// would wait for that lock on this CPU forever).
    fn consume_one(&self, out: &mut Vec<u8>, s: &mut String, scratch: &mut Vec<u8>, next: &mut Vec<u8>) -> bool {
        let mut best: Option<(usize, u64)> = None;
        for cpu in self.cpus() {
            if let Some(Some(ts)) = self.tr.with_buffer(cpu, |b| b.peek().map(|e| e.ts)) {
                if best.is_none_or(|(_, b)| ts < b) {
                    best = Some((cpu, ts));
                }
            }
        }
        let Some((cpu, _)) = best else { return false };
        scratch.clear();
        let taken = self.tr.with_buffer(cpu, |b| {
            b.consume().map(|c| {
                scratch.extend_from_slice(c.event.data);
                (c.event.ts, c.lost)
            })
        });
        let Some(Some((ts, lost))) = taken else { return false };
        if lost > 0 {
            output::lost_events(s, cpu, lost);
        }
        flush(out, s);
        let mut graph = self.graph.lock();
        let Some(g) = graph.as_mut() else {
            output::print_trace_entry(self.tr, out, s, cpu, ts, scratch);
            return true;
        };
        if GraphIter::prints_as_itself(scratch) {
            output::print_trace_entry(self.tr, out, s, cpu, ts, scratch);
            return true;
        }
        if !GraphIter::wants_next(scratch) {
            g.print_line(s, cpu, ts, scratch, None);
            flush(out, s);
            return true;
        }
        // A graph entry looks at the CPU's next entry, and takes it when
        // the two make one line.
        next.clear();
        let has_next = self
            .tr
            .with_buffer(cpu, |b| b.peek().map(|e| next.extend_from_slice(e.data)).is_some())
            .unwrap_or(false);
        if g.print_line(s, cpu, ts, scratch, has_next.then_some(&next[..])) {
            self.tr.with_buffer(cpu, |b| {
                b.consume();
            });
        }
        flush(out, s);
        true
    }

    fn has_data(&self) -> bool {
        self.cpus()
            .into_iter()
            .any(|c| self.tr.with_buffer(c, |b| !b.is_empty()).unwrap_or(false))
    }
}

impl FileOps for TracePipe {
    fn read(&self, _: &OpenFile, buf: &mut [u8], _: &mut u64) -> vfs::Result<usize> {
        // Linux's tracing_read_pipe first copies what is left over, and
        // copying nothing returns 0 before any wait for data (no EAGAIN).
        if buf.is_empty() {
            return Ok(0);
        }
        let mut pending = self.pending.lock();
        if pending.is_empty() {
            let mut out = Vec::with_capacity(CHUNK);
            let mut s = String::new();
            let mut scratch = Vec::with_capacity(PAGE_SIZE);
            let mut next = Vec::with_capacity(PAGE_SIZE);
            while out.len() < buf.len().min(CHUNK) && self.consume_one(&mut out, &mut s, &mut scratch, &mut next) {}
            pending.extend_from_slice(&out);
        }
        if pending.is_empty() {
            return Err(Errno::EAGAIN);
        }
        let n = buf.len().min(pending.len());
        buf[..n].copy_from_slice(&pending[..n]);
        pending.drain(..n);
        Ok(n)
    }
    fn positional(&self) -> bool {
        false
    }
    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> vfs::Result<u64> {
        Err(Errno::ESPIPE)
    }
    fn poll(&self, _: &OpenFile) -> u16 {
        if !self.pending.lock().is_empty() || self.has_data() {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }
    fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        Some(self.tr.wait_queue())
    }
}

/// One open of `per_cpu/cpuN/trace_pipe_raw`: consumed pages, handed out
/// whole across as many reads as the reader needs, or spliced whole.
pub struct TracePipeRaw {
    tr: &'static TraceArray,
    cpu: usize,
    /// The page being read and how far.
    page: spin::Mutex<(Box<Page>, usize)>,
    /// Bumped by `ioctl(fd, 0)` to end the waits of blocked splices
    /// (Linux's `wait_index`).
    wait_index: core::sync::atomic::AtomicU64,
}

impl TracePipeRaw {
    /// Opens it.
    pub fn open(tr: &'static TraceArray, cpu: usize) -> Arc<dyn FileOps> {
        Arc::new(TracePipeRaw {
            tr,
            cpu,
            // Read to its end: the first read takes a page.
            page: spin::Mutex::new((ring_buffer::new_page(), PAGE_SIZE)),
            wait_index: core::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Whether the buffer is filled to `buffer_percent` (Linux's
    /// `full_hit`; the page being written counts as filled). With 0, any
    /// data will do.
    fn full_hit(&self) -> bool {
        let percent = self.tr.buffer_percent();
        self.tr
            .with_buffer(self.cpu, |b| {
                let nr_pages = b.nr_pages();
                if percent == 0 {
                    return !b.is_empty();
                }
                nr_pages == 0 || (b.dirty_pages() + 1) * 100 >= percent * nr_pages
            })
            .unwrap_or(true)
    }

    /// Moves whole pages the writer has left into `buf`, as many as fit.
    fn take_full_pages(&self, buf: &mut [u8]) -> usize {
        let mut page = ring_buffer::new_page();
        let mut done = 0;
        for chunk in buf.chunks_exact_mut(PAGE_SIZE) {
            match self
                .tr
                .with_buffer(self.cpu, |b| b.read_page(&mut page, true))
                .flatten()
            {
                Some(_) => {
                    chunk.copy_from_slice(&page[..]);
                    done += PAGE_SIZE;
                }
                None => break,
            }
        }
        done
    }

    /// Sleeps until `cond` holds; ERESTARTSYS if a signal comes first.
    fn wait_until(&self, cond: impl Fn() -> bool) -> vfs::Result<()> {
        let wq = self.tr.wait_queue();
        let me = crate::sched::current();
        let id = crate::fs::add_wait_hook(&wq, Arc::new(RawWaker(me.clone())));
        let res = loop {
            me.set_state(crate::sched::TaskState::Interruptible);
            if cond() {
                break Ok(());
            }
            if me.signal_pending() {
                break Err(Errno::ERESTARTSYS);
            }
            crate::sched::schedule();
        };
        me.set_state(crate::sched::TaskState::Running);
        crate::fs::remove_wait_hook(&wq, id);
        res
    }
}

/// Wakes a task sleeping in a `trace_pipe_raw` splice.
struct RawWaker(Arc<crate::sched::Task>);

impl vfs::WaitHook for RawWaker {
    fn wake(&self) {
        crate::sched::wake_up(&self.0);
    }
}

impl FileOps for TracePipeRaw {
    fn read(&self, _: &OpenFile, buf: &mut [u8], _: &mut u64) -> vfs::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut g = self.page.lock();
        let (page, off) = &mut *g;
        if *off >= page.len() {
            match self.tr.with_buffer(self.cpu, |b| b.read_page(page, false)).flatten() {
                Some(_) => *off = 0,
                None => return Err(Errno::EAGAIN),
            }
        }
        let n = buf.len().min(page.len() - *off);
        buf[..n].copy_from_slice(&page[*off..*off + n]);
        *off += n;
        Ok(n)
    }

    /// Linux's `tracing_buffers_splice_read`: whole pages the writer has
    /// left, as many as `buf` holds (EINVAL if not even one); with none,
    /// EAGAIN when non-blocking, else a wait until the buffer is filled to
    /// `buffer_percent`, `ioctl(fd, 0)` is called or tracing is switched
    /// off, then one more look (0 if still nothing).
    fn splice_read(&self, _: &OpenFile, buf: &mut [u8], nonblock: bool) -> Option<vfs::Result<usize>> {
        if buf.len() < PAGE_SIZE {
            return Some(Err(Errno::EINVAL));
        }
        let n = self.take_full_pages(buf);
        if n > 0 {
            return Some(Ok(n));
        }
        if nonblock {
            return Some(Err(Errno::EAGAIN));
        }
        let index = self.wait_index.load(core::sync::atomic::Ordering::Acquire);
        let woken = self.wait_until(|| {
            self.wait_index.load(core::sync::atomic::Ordering::Acquire) != index
                || !self.tr.tracing_on()
                || self.full_hit()
        });
        if let Err(e) = woken {
            return Some(Err(e));
        }
        if !self.tr.tracing_on() {
            return Some(Ok(0));
        }
        Some(Ok(self.take_full_pages(buf)))
    }

    /// `ioctl(fd, 0)` wakes the file's blocked splices (Linux's
    /// `tracing_buffers_ioctl`); the mmap reader request is not offered
    /// (no mmap of the buffer here) and, like any other, is ENOTTY.
    fn ioctl(&self, _: &OpenFile, cmd: u32, _: u64) -> vfs::Result<i64> {
        if cmd != 0 {
            return Err(Errno::ENOTTY);
        }
        self.wait_index.fetch_add(1, core::sync::atomic::Ordering::AcqRel);
        self.tr.wait_queue().wake_up();
        Ok(0)
    }

    fn positional(&self) -> bool {
        false
    }
    fn llseek(&self, _: &OpenFile, _: u64, _: i64, _: u32, _: u64) -> vfs::Result<u64> {
        Err(Errno::ESPIPE)
    }
    /// Readable once the buffer is filled to `buffer_percent` (or a page
    /// is partly read), as Linux's `ring_buffer_poll_wait` with `full`.
    fn poll(&self, _: &OpenFile) -> u16 {
        let partly_read = {
            let g = self.page.lock();
            g.1 < g.0.len()
        };
        let has_data = self.tr.with_buffer(self.cpu, |b| !b.is_empty()).unwrap_or(false);
        if partly_read || (has_data && self.full_hit()) {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }
    fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        Some(self.tr.wait_queue())
    }
}
