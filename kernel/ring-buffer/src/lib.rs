//! One CPU's trace ring buffer: the bookkeeping of Linux's
//! `ring_buffer_per_cpu`, on pages in Linux's binary format so that the
//! same pages serve `trace_pipe_raw` as trace-cmd reads them.
//!
//! # Page and event format (Linux 6.12, `kernel/trace/ring_buffer.c`)
//!
//! A page is 4096 bytes: `buffer_data_page` is a `u64` time stamp (the time
//! of the page's first event), a `u64` commit (bytes of events that follow;
//! bits 31 and 30 flag missed events in pages handed to readers) and 4080
//! bytes of events. Every event starts with a little-endian `u32` whose low
//! 5 bits are `type_len` and whose high 27 bits are `time_delta`, the time
//! since the previous event of the page (0 for the first):
//!
//! - `type_len` 1..=28: a data event of `type_len * 4` payload bytes;
//! - `type_len` 0: a data event whose second word holds its length (payload
//!   plus that word), for payloads over 112 bytes;
//! - 29 padding, 30 time extend (a delta too large for 27 bits: low bits in
//!   `time_delta`, the rest in the second word), 31 absolute time stamp.
//!
//! `events/header_page` and `events/header_event` in tracefs describe this
//! layout to tools; [`HEADER_PAGE`] and [`HEADER_EVENT`] hold their text.
//!
//! # Concurrency
//!
//! None here: the buffer is a plain value. The kernel gives each CPU one
//! and writes it only from that CPU with interrupts masked; readers on
//! other CPUs take the same short lock to copy one event or one page. A
//! write never allocates: pages are allocated when the buffer is made or
//! resized.
//!
//! # Accounting (as `per_cpu/cpuN/stats`)
//!
//! Every committed event is counted in `entries` (Linux's
//! `cpu_buffer->entries`); it later leaves by being read (`read`) or by
//! being overwritten when the writer wraps onto unread data (`overrun`), so
//! that `entries == present + overrun + read` always holds. In
//! non-overwrite mode the writer drops the new event instead and counts it
//! in `dropped`. The `trace` header's `entries-written` is
//! `present + overrun`, as Linux computes it.
#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic))]

pub mod nested;

extern crate alloc;

use alloc::boxed::Box;
use alloc::vec::Vec;

use uapi::tracefs::TS_SHIFT;
// The layout user space reads from tracefs is uapi's; re-exported so the
// kernel's tracing code keeps naming it from here.
pub use uapi::tracefs::{
    BUF_PAGE_HDR_SIZE, HEADER_EVENT, HEADER_PAGE, RB_MISSED_EVENTS, RB_MISSED_STORED, RINGBUF_TYPE_DATA_TYPE_LEN_MAX,
    RINGBUF_TYPE_PADDING, RINGBUF_TYPE_TIME_EXTEND, RINGBUF_TYPE_TIME_STAMP,
};

/// Bytes in one buffer page (Linux's `PAGE_SIZE`, the default sub-buffer).
pub const PAGE_SIZE: usize = 4096;
/// Bytes of events a default page holds (Linux's `BUF_PAGE_SIZE`).
pub const BUF_PAGE_SIZE: usize = PAGE_SIZE - BUF_PAGE_HDR_SIZE;
/// Largest payload one event of a default page may carry (Linux's
/// `BUF_MAX_DATA_SIZE`).
pub const BUF_MAX_DATA_SIZE: usize = BUF_PAGE_SIZE - 8;

const RB_EVNT_HDR_SIZE: usize = 4;
const RB_ALIGNMENT: usize = 4;
const RB_MAX_SMALL_DATA: usize = RB_ALIGNMENT * RINGBUF_TYPE_DATA_TYPE_LEN_MAX as usize;
const RB_EVNT_MIN_SIZE: usize = 8;
const RB_LEN_TIME_EXTEND: usize = 8;
const TS_MASK: u64 = (1 << TS_SHIFT) - 1;

const RB_MISSED_MASK: u64 = RB_MISSED_EVENTS | RB_MISSED_STORED;

/// The fewest pages a buffer has (Linux rounds smaller sizes up to two).
pub const MIN_PAGES: usize = 2;

/// One sub-buffer: a `buffer_data_page` of [`PAGE_SIZE`] bytes by
/// default, or of a power of two pages (`buffer_subbuf_size_kb`); every
/// page of one buffer has the same size.
pub type Page = [u8];

/// The largest sub-buffer (Linux limits the order to 7: 128 pages).
pub const MAX_SUBBUF_SIZE: usize = PAGE_SIZE << 7;

/// Whether `size` is a sub-buffer size Linux allows: a power of two
/// multiple of [`PAGE_SIZE`] up to [`MAX_SUBBUF_SIZE`].
pub fn valid_subbuf_size(size: usize) -> bool {
    size.is_power_of_two() && (PAGE_SIZE..=MAX_SUBBUF_SIZE).contains(&size)
}

/// A zeroed page of [`PAGE_SIZE`] bytes on the heap.
pub fn new_page() -> Box<Page> {
    new_subbuf(PAGE_SIZE)
}

/// A zeroed sub-buffer of `size` bytes on the heap.
pub fn new_subbuf(size: usize) -> Box<Page> {
    alloc::vec![0u8; size].into_boxed_slice()
}

/// A zeroed page on the heap, or None if memory is short (for resizes a
/// user asks for, which must fail with ENOMEM rather than abort).
pub fn try_new_page() -> Option<Box<Page>> {
    try_new_subbuf(PAGE_SIZE)
}

/// A zeroed sub-buffer of `size` bytes, or None if memory is short.
pub fn try_new_subbuf(size: usize) -> Option<Box<Page>> {
    let mut v: Vec<u8> = Vec::new();
    v.try_reserve_exact(size).ok()?;
    v.resize(size, 0);
    Some(v.into_boxed_slice())
}

/// `events/header_page` for sub-buffers of `subbuf_size` bytes (the size
/// of `data` follows it).
pub fn header_page(subbuf_size: usize) -> alloc::string::String {
    alloc::format!(
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:16;\tsize:{};\tsigned:0;\n",
        subbuf_size.saturating_sub(BUF_PAGE_HDR_SIZE)
    )
}

/// Why a write was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// The payload is larger than [`BUF_MAX_DATA_SIZE`] (or empty).
    TooBig,
    /// Non-overwrite mode and no free page: the event was dropped (and
    /// counted in `dropped events`).
    Full,
}

/// Why a resize was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeError {
    /// Fewer than [`MIN_PAGES`] pages asked for.
    TooSmall,
    /// Growing needs more pages than were handed in.
    NotEnoughPages,
    /// Pages of a size that is not a valid sub-buffer size, or not all of
    /// one size.
    BadSubbufSize,
}

/// A page's events do not parse: where and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt {
    /// Offset in the page's data area of the bad event.
    pub offset: usize,
}

/// One data event read from the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// Its time stamp (the trace clock's value when it was reserved).
    pub ts: u64,
    /// Its payload, padded to a multiple of four bytes.
    pub data: &'a [u8],
}

/// An event taken by a consuming read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Consumed<'a> {
    /// The event.
    pub event: Event<'a>,
    /// Events lost (overwritten) since the previous consuming read, which
    /// `trace_pipe` reports as `CPU:N [LOST n EVENTS]`.
    pub lost: u64,
}

/// What [`CpuBuffer::read_page`] handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPage {
    /// Data events in the page.
    pub events: u64,
    /// Events lost before it (also flagged in its commit word).
    pub missed: u64,
}

/// A copy of one page for a non-consuming reader, and where its unread
/// events are (see [`CpuBuffer::copy_page`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCopy {
    /// The page's sequence number: pass it back to get the next page.
    pub seq: u64,
    /// Offset in the data area of the first unread event.
    pub start: usize,
    /// End of its events in the data area.
    pub end: usize,
    /// The time the first event's delta is relative to.
    pub base_ts: u64,
}

impl PageCopy {
    /// A cursor at its first unread event.
    pub fn cursor(&self) -> PageCursor {
        PageCursor {
            off: self.start,
            end: self.end,
            ts: self.base_ts,
        }
    }
}

/// A position in a copied page, for readers that keep several pages open
/// and merge them by time (the `trace` file merges all CPUs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCursor {
    off: usize,
    end: usize,
    ts: u64,
}

impl PageCursor {
    /// The next data event of `page` from this position, advancing past it.
    pub fn next_event<'a>(&mut self, page: &'a Page) -> Option<Result<Event<'a>, Corrupt>> {
        let mut it = PageEvents {
            data: page.get(BUF_PAGE_HDR_SIZE..).unwrap_or(&[]),
            off: self.off,
            end: self.end,
            ts: self.ts,
            failed: false,
        };
        let r = it.next();
        self.off = if matches!(r, Some(Err(_))) { self.end } else { it.off };
        self.ts = it.ts;
        r
    }

    /// The next data event without advancing.
    pub fn peek<'a>(&self, page: &'a Page) -> Option<Result<Event<'a>, Corrupt>> {
        self.clone().next_event(page)
    }
}

/// The counters of `per_cpu/cpuN/stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events in the buffer, not yet read or overwritten.
    pub entries: u64,
    /// Events lost to the writer wrapping onto unread data.
    pub overrun: u64,
    /// Events lost to a writer catching up with an unfinished commit
    /// (cannot happen with one writer per buffer: always 0).
    pub commit_overrun: u64,
    /// Bytes of the events in the buffer.
    pub bytes: u64,
    /// Events refused because the buffer was full (non-overwrite mode).
    pub dropped_events: u64,
    /// Events taken by consuming readers.
    pub read_events: u64,
    /// Every event ever committed (Linux's `cpu_buffer->entries`).
    pub committed: u64,
}

impl Stats {
    /// The `entries-written` count of the `trace` header.
    pub fn written(&self) -> u64 {
        self.entries + self.overrun
    }
}

fn rd32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(s);
    Some(u32::from_le_bytes(a))
}

fn rd64(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

#[inline]
fn wr32(b: &mut [u8], off: usize, v: u32) {
    if let Some(s) = b.get_mut(off..off + 4) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

#[inline]
fn wr64(b: &mut [u8], off: usize, v: u64) {
    if let Some(s) = b.get_mut(off..off + 8).and_then(|s| s.as_mut_array::<8>()) {
        put_le64(s, v);
    }
}

/// `*dst = v.to_le_bytes()`: what [`Reservation::commit`] stores the
/// page's commit word with (a kernel whose target splits this into byte
/// stores passes its own one-store version to
/// [`Reservation::commit_with`]).
#[inline(always)]
pub fn put_le64(dst: &mut [u8; 8], v: u64) {
    *dst = v.to_le_bytes();
}

/// Stores `v` little-endian into `dst`: the plain 32-bit store of
/// [`CpuBuffer::reserve_uninit_with`].
#[inline(always)]
pub fn put_le32(dst: &mut [u8; 4], v: u32) {
    *dst = v.to_le_bytes();
}

/// Zeroes what follows an event's `len` payload bytes in its `rest`.
#[cold]
#[inline(never)]
fn zero_pad(rest: &mut [u8], len: usize) {
    if let Some(pad) = rest.get_mut(len..) {
        pad.fill(0);
    }
}

#[inline]
fn header(type_len: u32, delta: u32) -> u32 {
    (type_len & 0x1f) | (delta << 5)
}

/// Total bytes of a data event with `len` payload bytes, as Linux's
/// `rb_calculate_event_length`.
#[inline]
pub fn event_length(len: usize) -> usize {
    let mut length = len.max(1);
    if length > RB_MAX_SMALL_DATA {
        length += 4;
    }
    length += RB_EVNT_HDR_SIZE;
    length = length.next_multiple_of(RB_ALIGNMENT);
    // A 12-byte event could be mistaken for a time extend plus a 4-byte
    // hole when discarded; Linux makes it 16.
    if length == RB_LEN_TIME_EXTEND + RB_ALIGNMENT {
        length += RB_ALIGNMENT;
    }
    length
}

/// One parsed event header.
enum Parsed {
    Data { payload: usize, len: usize },
    Extend(u64),
    Padding,
    EndOfPage,
    Stamp,
}

/// Parses the event at `off` of the data area `data` (which ends at
/// `end`): its kind, its time delta and its total length.
fn parse_event(data: &[u8], off: usize, end: usize) -> Result<(Parsed, u64, usize), Corrupt> {
    let bad = Corrupt { offset: off };
    let hdr = rd32(data, off).ok_or(bad)?;
    let type_len = hdr & 0x1f;
    let delta = u64::from(hdr >> 5);
    let room = end.checked_sub(off).ok_or(bad)?;
    let (parsed, len) = match type_len {
        0 => {
            let total = rd32(data, off + 4).ok_or(bad)? as usize + RB_EVNT_HDR_SIZE;
            if total < 8 + RB_MAX_SMALL_DATA || !total.is_multiple_of(RB_ALIGNMENT) {
                return Err(bad);
            }
            (
                Parsed::Data {
                    payload: off + 8,
                    len: total - 8,
                },
                total,
            )
        }
        1..=RINGBUF_TYPE_DATA_TYPE_LEN_MAX => {
            let len = type_len as usize * 4;
            (Parsed::Data { payload: off + 4, len }, len + 4)
        }
        RINGBUF_TYPE_PADDING if delta == 0 => (Parsed::EndOfPage, room),
        RINGBUF_TYPE_PADDING => {
            let total = rd32(data, off + 4).ok_or(bad)? as usize + RB_EVNT_HDR_SIZE;
            (Parsed::Padding, total)
        }
        RINGBUF_TYPE_TIME_EXTEND => {
            let hi = u64::from(rd32(data, off + 4).ok_or(bad)?);
            return if room < RB_LEN_TIME_EXTEND {
                Err(bad)
            } else {
                Ok((Parsed::Extend(delta | (hi << TS_SHIFT)), 0, RB_LEN_TIME_EXTEND))
            };
        }
        _ => (Parsed::Stamp, RB_LEN_TIME_EXTEND),
    };
    if len == 0 || len > room {
        return Err(bad);
    }
    Ok((parsed, delta, len))
}

/// The data events of one page (or of part of it), decoded; used by
/// readers of copied pages and of `trace_pipe_raw`.
pub struct PageEvents<'a> {
    data: &'a [u8],
    off: usize,
    end: usize,
    ts: u64,
    failed: bool,
}

impl<'a> PageEvents<'a> {
    /// The events of a whole `buffer_data_page` as `trace_pipe_raw` hands
    /// it out (its own time stamp and commit, flags masked off).
    pub fn new(page: &'a [u8]) -> PageEvents<'a> {
        let ts = rd64(page, 0).unwrap_or(0);
        let commit = rd64(page, 8).unwrap_or(0) & !RB_MISSED_MASK;
        let data = page.get(BUF_PAGE_HDR_SIZE..).unwrap_or(&[]);
        let end = usize::try_from(commit).unwrap_or(usize::MAX).min(data.len());
        PageEvents {
            data,
            off: 0,
            end,
            ts,
            failed: false,
        }
    }

    /// The events of a page copied by [`CpuBuffer::copy_page`].
    pub fn from_copy(page: &'a Page, copy: &PageCopy) -> PageEvents<'a> {
        let data = page.get(BUF_PAGE_HDR_SIZE..).unwrap_or(&[]);
        PageEvents {
            data,
            off: copy.start,
            end: copy.end.min(data.len()),
            ts: copy.base_ts,
            failed: false,
        }
    }
}

impl<'a> Iterator for PageEvents<'a> {
    type Item = Result<Event<'a>, Corrupt>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed && self.off < self.end {
            match parse_event(self.data, self.off, self.end) {
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
                Ok((parsed, delta, len)) => {
                    self.off += len;
                    match parsed {
                        Parsed::Data { payload, len } => {
                            self.ts = self.ts.wrapping_add(delta);
                            let data = self.data.get(payload..payload + len).unwrap_or(&[]);
                            return Some(Ok(Event { ts: self.ts, data }));
                        }
                        Parsed::Extend(d) => self.ts = self.ts.wrapping_add(d),
                        Parsed::Padding | Parsed::Stamp => {}
                        Parsed::EndOfPage => self.off = self.end,
                    }
                }
            }
        }
        None
    }
}

/// One page of the ring and what the writer and readers know of it.
struct Slot {
    page: Box<Page>,
    /// Data events committed on it.
    entries: u64,
    /// Of those, events consumed (only the head page is partly read).
    read: u64,
    /// Order in which the writer filled pages: non-consuming readers use
    /// it to walk on after a page of theirs was overwritten.
    seq: u64,
    /// Bytes of the padding event that closed it, counted in the
    /// buffer's `bytes` until the page is left (Linux's `rb_reset_tail`
    /// accounts a discarded padding event in `entries_bytes`).
    padding: u64,
}

impl Slot {
    fn new(page: Box<Page>) -> Slot {
        Slot {
            page,
            entries: 0,
            read: 0,
            seq: 0,
            padding: 0,
        }
    }

    fn data(&self) -> &[u8] {
        self.page.get(BUF_PAGE_HDR_SIZE..).unwrap_or(&[])
    }

    fn data_mut(&mut self) -> &mut [u8] {
        self.page.get_mut(BUF_PAGE_HDR_SIZE..).unwrap_or(&mut [])
    }

    fn commit(&self) -> usize {
        rd64(&self.page[..], 8).unwrap_or(0) as usize
    }

    fn ts(&self) -> u64 {
        rd64(&self.page[..], 0).unwrap_or(0)
    }

    fn start(&mut self, ts: u64, seq: u64) {
        wr64(&mut self.page[..], 0, ts);
        wr64(&mut self.page[..], 8, 0);
        self.entries = 0;
        self.read = 0;
        self.seq = seq;
        self.padding = 0;
    }
}

/// One CPU's ring buffer.
pub struct CpuBuffer {
    slots: Vec<Slot>,
    /// Bytes of each page (the sub-buffer size).
    subbuf: usize,
    /// Oldest page with unread events (the reader's page).
    head: usize,
    /// Page being written.
    tail: usize,
    /// Data offset of the next write in the tail page (its commit).
    write: usize,
    /// Data offset of the next event to read in the head page.
    read: usize,
    /// Time of the last event written.
    write_stamp: u64,
    /// Time the event at `read` is relative to.
    read_stamp: u64,
    next_seq: u64,
    overwrite: bool,
    committed: u64,
    overrun: u64,
    dropped: u64,
    read_events: u64,
    bytes: u64,
    lost_events: u64,
}

impl CpuBuffer {
    /// A buffer over `pages` (at least [`MIN_PAGES`]), in overwrite mode.
    pub fn new(pages: Vec<Box<Page>>) -> Result<CpuBuffer, ResizeError> {
        if pages.len() < MIN_PAGES {
            return Err(ResizeError::TooSmall);
        }
        let subbuf = pages.first().map_or(PAGE_SIZE, |p| p.len());
        if !valid_subbuf_size(subbuf) || pages.iter().any(|p| p.len() != subbuf) {
            return Err(ResizeError::BadSubbufSize);
        }
        let mut b = CpuBuffer {
            slots: pages.into_iter().map(Slot::new).collect(),
            subbuf,
            head: 0,
            tail: 0,
            write: 0,
            read: 0,
            write_stamp: 0,
            read_stamp: 0,
            next_seq: 0,
            overwrite: true,
            committed: 0,
            overrun: 0,
            dropped: 0,
            read_events: 0,
            bytes: 0,
            lost_events: 0,
        };
        b.reset();
        Ok(b)
    }

    /// A buffer of `nr_pages` freshly allocated pages.
    pub fn with_pages(nr_pages: usize) -> Result<CpuBuffer, ResizeError> {
        CpuBuffer::new((0..nr_pages).map(|_| new_page()).collect())
    }

    /// Pages in the ring.
    pub fn nr_pages(&self) -> usize {
        self.slots.len()
    }

    /// Bytes of each page (the sub-buffer size).
    pub fn subbuf_size(&self) -> usize {
        self.subbuf
    }

    /// Bytes of events a page holds (Linux's `BUF_PAGE_SIZE` for the
    /// buffer's sub-buffer size).
    #[inline]
    pub fn data_size(&self) -> usize {
        self.subbuf - BUF_PAGE_HDR_SIZE
    }

    /// Largest payload one event may carry (`BUF_MAX_DATA_SIZE`).
    #[inline]
    pub fn max_data_size(&self) -> usize {
        self.data_size() - 8
    }

    /// Its size as `buffer_size_kb` counts it: data bytes of all pages.
    pub fn size_bytes(&self) -> usize {
        self.slots.len() * self.data_size()
    }

    /// Whether the writer overwrites the oldest data when full (Linux's
    /// default, `options/overwrite`) or drops new events.
    pub fn set_overwrite(&mut self, on: bool) {
        self.overwrite = on;
    }

    /// See [`CpuBuffer::set_overwrite`].
    pub fn overwrite(&self) -> bool {
        self.overwrite
    }

    /// Empties the buffer and zeroes its counters (Linux's
    /// `ring_buffer_reset_cpu`).
    pub fn reset(&mut self) {
        self.head = 0;
        self.tail = 0;
        self.write = 0;
        self.read = 0;
        self.write_stamp = 0;
        self.read_stamp = 0;
        self.committed = 0;
        self.overrun = 0;
        self.dropped = 0;
        self.read_events = 0;
        self.bytes = 0;
        self.lost_events = 0;
        let seq = self.bump_seq();
        if let Some(s) = self.slots.get_mut(0) {
            s.start(0, seq);
        }
    }

    fn bump_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn next_index(&self, i: usize) -> usize {
        if i + 1 >= self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        Stats {
            entries: self.committed - self.overrun - self.read_events,
            overrun: self.overrun,
            commit_overrun: 0,
            bytes: self.bytes,
            dropped_events: self.dropped,
            read_events: self.read_events,
            committed: self.committed,
        }
    }

    /// Whether there is nothing to read.
    pub fn is_empty(&self) -> bool {
        self.stats().entries == 0
    }

    /// Pages the writer filled and left that still hold unread events: the
    /// head page up to (not counting) the page being written, as Linux's
    /// `ring_buffer_nr_dirty_pages`, which `buffer_percent` waits on.
    pub fn dirty_pages(&self) -> usize {
        if self.is_empty() || self.head == self.tail {
            return 0;
        }
        let n = self.slots.len();
        let pages = (self.tail + n - self.head) % n;
        // A head page read to its end is left for the next read to step
        // off.
        let head_done = self.slots.get(self.head).is_some_and(|h| self.read >= h.commit());
        pages - usize::from(head_done)
    }

    /// Time stamp of the last event written (where the next one's delta
    /// starts): an event stamped earlier is written at this time instead.
    pub fn write_stamp(&self) -> u64 {
        self.write_stamp
    }

    /// Time stamp of the oldest unread event.
    pub fn oldest_event_ts(&self) -> Option<u64> {
        self.iter().next().and_then(Result::ok).map(|e| e.ts)
    }

    /// Drops the head page (overwrite mode, the writer needs it).
    fn overrun_head(&mut self) {
        let next = self.next_index(self.head);
        let Some(h) = self.slots.get(self.head) else { return };
        let lost = h.entries - h.read;
        let bytes = h.commit().saturating_sub(self.read) as u64;
        self.overrun += lost;
        self.lost_events += lost;
        self.bytes -= bytes;
        self.leave_head_padding();
        self.head = next;
        self.read = 0;
        self.read_stamp = self.slots.get(next).map_or(0, Slot::ts);
    }

    /// Reserves room for an event of `len` payload bytes at time `ts`,
    /// moving to the next page if this one is full (and, in overwrite mode,
    /// dropping the oldest page if the ring is full). The event exists once
    /// [`Reservation::commit`] is called; dropping the reservation discards
    /// it, as `ring_buffer_discard_commit` would.
    ///
    /// The payload's bytes are zero; [`CpuBuffer::reserve_uninit`] leaves
    /// them as they were, for writers that write every byte.
    pub fn reserve(&mut self, ts: u64, len: usize) -> Result<Reservation<'_>, WriteError> {
        let mut r = self.reserve_uninit(ts, len)?;
        r.entry_mut().fill(0);
        Ok(r)
    }

    /// [`CpuBuffer::reserve`] without clearing the payload: its bytes are
    /// whatever the page held there (an older event's), so the caller must
    /// write all of them before it commits (the padding after the payload
    /// is zeroed here). Linux's `rb_reserve_next_event`: an event that fits
    /// after the last one of the tail page, with a delta that fits its
    /// header, takes the inlined fast path; the rest (a new page, a time
    /// extend, a large event) the out-of-line one.
    #[inline(always)]
    pub fn reserve_uninit(&mut self, ts: u64, len: usize) -> Result<Reservation<'_>, WriteError> {
        self.reserve_uninit_with(ts, len, put_le32)
    }

    /// [`CpuBuffer::reserve_uninit`], storing the event's header word with
    /// `put`, which must do what [`put_le32`] does (a kernel built for
    /// strict alignment passes a single unaligned store: the byte slice's
    /// alignment is unknown to the compiler, which otherwise writes four
    /// bytes one by one).
    #[inline(always)]
    pub fn reserve_uninit_with(
        &mut self,
        ts: u64,
        len: usize,
        put: impl FnOnce(&mut [u8; 4], u32),
    ) -> Result<Reservation<'_>, WriteError> {
        let write = self.write;
        let delta = ts.saturating_sub(self.write_stamp);
        // Small events only: their length is in the header's type_len.
        if write != 0 && len != 0 && len <= RB_MAX_SMALL_DATA && delta <= TS_MASK {
            let length = event_length(len);
            let end = write + length;
            let data_size = self.data_size();
            if end <= data_size {
                if let Some(slot) = self.slots.get_mut(self.tail) {
                    if let Some(ev) = slot.page.get_mut(BUF_PAGE_HDR_SIZE + write..BUF_PAGE_HDR_SIZE + end) {
                        let type_len = ((length - RB_EVNT_HDR_SIZE) / RB_ALIGNMENT) as u32;
                        let Some((hdr, rest)) = ev.split_first_chunk_mut::<RB_EVNT_HDR_SIZE>() else {
                            return Err(WriteError::Full);
                        };
                        put(hdr, header(type_len, delta as u32));
                        // Most payloads fill their event to the word: no
                        // padding, and no `memset` call for nothing (out of
                        // line, so that this path stays a leaf).
                        if len + RB_EVNT_HDR_SIZE != length {
                            zero_pad(rest, len);
                        }
                        return Ok(Reservation {
                            buf: self,
                            payload: write + RB_EVNT_HDR_SIZE,
                            len,
                            end,
                            ts,
                        });
                    }
                }
            }
        }
        self.reserve_slow(ts, len)
    }

    /// Writes and commits an event whose payload is `words` (8 bytes each,
    /// stored with `put64`, its header with `put32`: see
    /// [`CpuBuffer::reserve_uninit_with`] and [`Reservation::commit_with`]).
    /// The same event, counted the same way, as a reservation filled with
    /// the words and committed: [`CpuBuffer::try_write_words_with`], or
    /// the reservation's own path where that declines.
    #[inline(always)]
    pub fn write_words_with<const N: usize>(
        &mut self,
        ts: u64,
        words: &[u64; N],
        put32: impl FnOnce(&mut [u8; 4], u32),
        put64: impl Fn(&mut [u8; 8], u64),
    ) -> Result<(), WriteError> {
        if self.try_write_words_with(ts, words, put32, &put64) {
            return Ok(());
        }
        let mut r = self.reserve_slow(ts, words.len() * 8)?;
        for (c, w) in r.entry_mut().as_chunks_mut::<8>().0.iter_mut().zip(words) {
            put64(c, *w);
        }
        r.commit_with(put64);
        Ok(())
    }

    /// [`CpuBuffer::write_words_with`] of an event that fits on the tail
    /// page with a delta its header holds, in one step, its size known
    /// when this is compiled (a probe's record has no other work to do):
    /// false, with nothing written, for any other. It calls nothing, so a
    /// hit path using it needs no frame of its own.
    #[inline(always)]
    pub fn try_write_words_with<const N: usize>(
        &mut self,
        ts: u64,
        words: &[u64; N],
        put32: impl FnOnce(&mut [u8; 4], u32),
        put64: impl Fn(&mut [u8; 8], u64),
    ) -> bool {
        let len = 8 * N;
        let length = event_length(len);
        let write = self.write;
        let delta = ts.saturating_sub(self.write_stamp);
        if N == 0 || len > RB_MAX_SMALL_DATA || write == 0 || delta > TS_MASK {
            return false;
        }
        let Some(slot) = self.slots.get_mut(self.tail) else {
            return false;
        };
        // Every page is `subbuf` bytes long, so the page's own length
        // bounds the write as `data_size` would; taken with the commit
        // field before any store, so that nothing is loaded again after
        // `put32`/`put64` (which the compiler must assume write memory).
        let end = write.wrapping_add(length);
        let Some(page) = slot.page.get_mut(..BUF_PAGE_HDR_SIZE.wrapping_add(end)) else {
            return false;
        };
        let Some((page_hdr, data)) = page.split_first_chunk_mut::<BUF_PAGE_HDR_SIZE>() else {
            return false;
        };
        let Some(ev) = data.get_mut(write..) else {
            return false;
        };
        let Some((hdr, rest)) = ev.split_first_chunk_mut::<RB_EVNT_HDR_SIZE>() else {
            return false;
        };
        let Some(commit) = page_hdr.last_chunk_mut::<8>() else {
            return false;
        };
        put32(
            hdr,
            header(((length - RB_EVNT_HDR_SIZE) / RB_ALIGNMENT) as u32, delta as u32),
        );
        for (c, w) in rest.as_chunks_mut::<8>().0.iter_mut().zip(words) {
            put64(c, *w);
        }
        // Known when this is compiled: only a 12-byte event is padded (to
        // 16, as Linux's length calculation does).
        if len + RB_EVNT_HDR_SIZE != length {
            zero_pad(rest, len);
        }
        put64(commit, end as u64);
        slot.entries += 1;
        self.write = end;
        self.write_stamp = ts;
        self.committed += 1;
        self.bytes += length as u64;
        true
    }

    /// The rest of [`CpuBuffer::reserve_uninit`]: checks the size, moves
    /// to a new page when the event does not fit, writes a time extend
    /// before it when its delta does not fit its header.
    #[inline(never)]
    fn reserve_slow(&mut self, ts: u64, len: usize) -> Result<Reservation<'_>, WriteError> {
        if len > self.max_data_size() {
            return Err(WriteError::TooBig);
        }
        let length = event_length(len);
        let mut delta = if self.write == 0 {
            0
        } else {
            ts.saturating_sub(self.write_stamp)
        };
        let mut extend = delta > TS_MASK;
        if self.write + length + if extend { RB_LEN_TIME_EXTEND } else { 0 } > self.data_size() {
            let next = self.next_index(self.tail);
            if next == self.head && self.slots.get(next).is_some_and(|h| self.read >= h.commit()) {
                // The reader finished the head page but has not moved on:
                // the page is free.
                self.leave_head_padding();
                self.head = self.next_index(next);
                self.read = 0;
            }
            if next == self.head {
                if !self.overwrite {
                    self.dropped += 1;
                    return Err(WriteError::Full);
                }
                self.overrun_head();
            }
            self.pad_tail();
            self.tail = next;
            self.write = 0;
            let seq = self.bump_seq();
            if let Some(s) = self.slots.get_mut(next) {
                s.start(ts, seq);
            }
            delta = 0;
            extend = false;
        }
        let mut off = self.write;
        let write = self.write;
        let Some(slot) = self.slots.get_mut(self.tail) else {
            return Err(WriteError::Full);
        };
        if write == 0 {
            wr64(&mut slot.page[..], 0, ts);
        }
        let data = slot.data_mut();
        let mut event_delta = delta as u32;
        if extend {
            wr32(data, off, header(RINGBUF_TYPE_TIME_EXTEND, (delta & TS_MASK) as u32));
            wr32(data, off + 4, (delta >> TS_SHIFT) as u32);
            off += RB_LEN_TIME_EXTEND;
            event_delta = 0;
        }
        let payload = if length - RB_EVNT_HDR_SIZE > RB_MAX_SMALL_DATA {
            wr32(data, off, header(0, event_delta));
            wr32(data, off + 4, (length - RB_EVNT_HDR_SIZE) as u32);
            off + 8
        } else {
            let type_len = ((length - RB_EVNT_HDR_SIZE) / RB_ALIGNMENT) as u32;
            wr32(data, off, header(type_len, event_delta));
            off + 4
        };
        let end = off + length;
        // The padding after the payload is zero, never stale data.
        if let Some(p) = data.get_mut(payload + len..end) {
            p.fill(0);
        }
        Ok(Reservation {
            buf: self,
            payload,
            len,
            end,
            ts,
        })
    }

    /// Writes one event: reserve, copy, commit.
    pub fn write(&mut self, ts: u64, payload: &[u8]) -> Result<(), WriteError> {
        let mut r = self.reserve(ts, payload.len())?;
        r.copy_from_slice(payload);
        r.commit();
        Ok(())
    }

    /// Fills the rest of the tail page with padding, as Linux's
    /// `rb_reset_tail` (the commit stays at the last event).
    fn pad_tail(&mut self) {
        let write = self.write;
        let data_size = self.data_size();
        let Some(slot) = self.slots.get_mut(self.tail) else {
            return;
        };
        let data = slot.data_mut();
        let rest = data_size - write;
        if rest == 0 {
            return;
        }
        if rest < RB_EVNT_MIN_SIZE {
            wr32(data, write, header(RINGBUF_TYPE_PADDING, 0));
        } else {
            wr32(data, write, header(RINGBUF_TYPE_PADDING, 1));
            wr32(data, write + 4, (rest - RB_EVNT_HDR_SIZE) as u32);
            slot.padding = rest as u64;
            self.bytes += rest as u64;
        }
    }

    /// The head page is left (read to its end, or dropped): its padding
    /// leaves `bytes`, as Linux's reader counts a padding event read.
    fn leave_head_padding(&mut self) {
        if let Some(h) = self.slots.get_mut(self.head) {
            self.bytes -= core::mem::take(&mut h.padding);
        }
    }

    /// The time the event at the read offset is relative to: the head
    /// page's own stamp before anything on it was read.
    fn read_base(&self) -> u64 {
        if self.read == 0 {
            self.slots.get(self.head).map_or(0, Slot::ts)
        } else {
            self.read_stamp
        }
    }

    /// Positions the reader on the next unread event: its page and offset,
    /// and where that page's events end.
    fn reader_position(&mut self) -> Option<(usize, usize, usize)> {
        loop {
            let slot = self.slots.get(self.head)?;
            let end = if self.head == self.tail {
                self.write
            } else {
                slot.commit()
            };
            if self.read < end {
                return Some((self.head, self.read, end));
            }
            if self.head == self.tail {
                return None;
            }
            self.leave_head_padding();
            self.head = self.next_index(self.head);
            self.read = 0;
            self.read_stamp = self.slots.get(self.head).map_or(0, Slot::ts);
        }
    }

    /// Takes the oldest unread event (a `trace_pipe` read).
    pub fn consume(&mut self) -> Option<Consumed<'_>> {
        loop {
            let (head, off, end) = self.reader_position()?;
            self.read_stamp = self.read_base();
            let slot = self.slots.get(head)?;
            let (parsed, delta, len) = match parse_event(slot.data(), off, end) {
                Ok(p) => p,
                // Cannot happen for pages this buffer wrote; skip the page
                // rather than loop.
                Err(_) => {
                    self.bytes -= (end - off) as u64;
                    self.read = end;
                    continue;
                }
            };
            self.read += len;
            self.bytes -= len as u64;
            match parsed {
                Parsed::Data { payload, len } => {
                    self.read_stamp = self.read_stamp.wrapping_add(delta);
                    self.read_events += 1;
                    let lost = core::mem::take(&mut self.lost_events);
                    let ts = self.read_stamp;
                    let slot = self.slots.get_mut(head)?;
                    slot.read += 1;
                    let data = slot.data().get(payload..payload + len)?;
                    return Some(Consumed {
                        event: Event { ts, data },
                        lost,
                    });
                }
                Parsed::Extend(d) => self.read_stamp = self.read_stamp.wrapping_add(d),
                Parsed::Padding | Parsed::Stamp | Parsed::EndOfPage => {}
            }
        }
    }

    /// The oldest unread event, left in place.
    pub fn peek(&self) -> Option<Event<'_>> {
        self.iter().next().and_then(Result::ok)
    }

    /// The unread events, oldest first, without consuming them.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            buf: self,
            slot: self.head,
            events: self.page_events(self.head, self.read, self.read_base()),
            done: false,
        }
    }

    fn page_events(&self, i: usize, start: usize, base_ts: u64) -> PageEvents<'_> {
        let (data, end) = match self.slots.get(i) {
            Some(s) => (s.data(), if i == self.tail { self.write } else { s.commit() }),
            None => (&[][..], 0),
        };
        PageEvents {
            data,
            off: start,
            end,
            ts: base_ts,
            failed: false,
        }
    }

    /// Copies, for a non-consuming reader, the first page holding unread
    /// events whose sequence number is after `after` (the oldest such page
    /// if `after` is None) into `dst`. A reader that takes one page at a
    /// time holds the buffer's lock only for one page copy, and pages the
    /// writer overwrote in between are simply gone from its walk. `dst`
    /// takes the buffer's sub-buffer size first if it has another.
    pub fn copy_page(&self, after: Option<u64>, dst: &mut Box<Page>) -> Option<PageCopy> {
        let mut i = self.head;
        loop {
            let slot = self.slots.get(i)?;
            if after.is_none_or(|a| slot.seq > a) {
                let (start, base_ts) = if i == self.head {
                    (self.read, self.read_base())
                } else {
                    (0, slot.ts())
                };
                let end = if i == self.tail { self.write } else { slot.commit() };
                if start < end {
                    if dst.len() != slot.page.len() {
                        *dst = new_subbuf(slot.page.len());
                    }
                    dst.copy_from_slice(&slot.page[..]);
                    return Some(PageCopy {
                        seq: slot.seq,
                        start,
                        end,
                        base_ts,
                    });
                }
            }
            if i == self.tail {
                return None;
            }
            i = self.next_index(i);
        }
    }

    /// Consumes a page's worth of events into `dst` as a
    /// `buffer_data_page` (a `trace_pipe_raw` read): a whole page when the
    /// oldest page is complete and unread, else the unread events of the
    /// oldest page (none if `full` is set then). Lost events are flagged in
    /// the commit word and their count stored after the data when it fits,
    /// as Linux's `ring_buffer_read_page`. `dst` takes the buffer's
    /// sub-buffer size first if it has another.
    pub fn read_page(&mut self, dst: &mut Box<Page>, full: bool) -> Option<ReadPage> {
        let (head, off, end) = self.reader_position()?;
        let is_tail = head == self.tail;
        if full && (is_tail || off != 0) {
            return None;
        }
        let base_ts = self.read_base();
        let write_stamp = self.write_stamp;
        let data_size = self.data_size();
        if dst.len() != self.subbuf {
            *dst = new_subbuf(self.subbuf);
        }
        let slot = self.slots.get_mut(head)?;
        let src = slot.data().get(off..end)?;
        let size = src.len();
        let (hdr, data) = dst.split_at_mut(BUF_PAGE_HDR_SIZE);
        data.get_mut(..size)?.copy_from_slice(src);
        let events = slot.entries - slot.read;
        slot.read = slot.entries;
        self.read = end;
        self.read_events += events;
        self.bytes -= size as u64;
        if is_tail {
            self.read_stamp = write_stamp;
        }
        let missed = core::mem::take(&mut self.lost_events);
        let mut commit = size as u64;
        let mut used = size;
        if missed > 0 {
            if data_size - size >= 8 {
                wr64(data, size, missed);
                used += 8;
                commit |= RB_MISSED_STORED;
            }
            commit |= RB_MISSED_EVENTS;
        }
        if let Some(rest) = data.get_mut(used..) {
            rest.fill(0);
        }
        wr64(hdr, 0, base_ts);
        wr64(hdr, 8, commit);
        Some(ReadPage { events, missed })
    }

    /// Changes the number of pages to `nr_pages`, keeping the newest data.
    /// Growing takes the pages it needs from `spare`; shrinking gives the
    /// pages it frees back in `spare` (so the caller allocates and frees
    /// them outside its lock) and counts the unread events of data pages it
    /// had to free as overrun, as Linux's `rb_remove_pages`. Spare pages
    /// must have the buffer's sub-buffer size.
    pub fn resize(&mut self, nr_pages: usize, spare: &mut Vec<Box<Page>>) -> Result<(), ResizeError> {
        if nr_pages < MIN_PAGES {
            return Err(ResizeError::TooSmall);
        }
        if spare.iter().any(|p| p.len() != self.subbuf) {
            return Err(ResizeError::BadSubbufSize);
        }
        let n = self.slots.len();
        if nr_pages > n && spare.len() < nr_pages - n {
            return Err(ResizeError::NotEnoughPages);
        }
        // Ring order from index 0: head first, free pages after the tail.
        self.slots.rotate_left(self.head);
        self.tail = (self.tail + n - self.head) % n;
        self.head = 0;
        if nr_pages > n {
            for _ in n..nr_pages {
                let Some(p) = spare.pop() else { break };
                self.slots.push(Slot::new(p));
            }
            return Ok(());
        }
        let mut remove = n - nr_pages;
        // Free pages first, then the oldest data pages.
        while remove > 0 && self.slots.len() > self.tail + 1 {
            if let Some(s) = self.slots.pop() {
                spare.push(s.page);
            }
            remove -= 1;
        }
        while remove > 0 {
            self.overrun_head();
            let s = self.slots.remove(0);
            spare.push(s.page);
            self.head = 0;
            self.tail -= 1;
            remove -= 1;
        }
        Ok(())
    }
}

/// An event being written; see [`CpuBuffer::reserve`]. Derefs to its
/// payload.
pub struct Reservation<'a> {
    buf: &'a mut CpuBuffer,
    payload: usize,
    len: usize,
    end: usize,
    ts: u64,
}

impl Reservation<'_> {
    /// Its payload (what `DerefMut` gives), to borrow once for many writes.
    #[inline(always)]
    pub fn entry_mut(&mut self) -> &mut [u8] {
        // One range check on the page: the payload offset is from the
        // start of its data, which follows the page header.
        let start = BUF_PAGE_HDR_SIZE + self.payload;
        match self.buf.slots.get_mut(self.buf.tail) {
            Some(s) => s.page.get_mut(start..start + self.len).unwrap_or(&mut []),
            None => &mut [],
        }
    }

    /// Makes the event visible to readers and counts it.
    #[inline(always)]
    pub fn commit(self) {
        self.commit_with(put_le64)
    }

    /// [`Reservation::commit`], storing the page's commit word (at offset
    /// 8 of the page) with `put`, which must do what [`put_le64`] does:
    /// the write path of a kernel built for strict alignment passes a
    /// single unaligned store, so that the crate itself stays free of CPU
    /// specifics.
    #[inline(always)]
    pub fn commit_with(self, put: impl FnOnce(&mut [u8; 8], u64)) {
        let b = self.buf;
        let length = self.end - b.write;
        b.write = self.end;
        b.write_stamp = self.ts;
        b.committed += 1;
        b.bytes += length as u64;
        if let Some(s) = b.slots.get_mut(b.tail) {
            s.entries += 1;
            if let Some(w) = s.page.get_mut(8..16).and_then(|w| w.as_mut_array::<8>()) {
                put(w, self.end as u64);
            }
        }
    }
}

impl core::ops::Deref for Reservation<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        let data = self.buf.slots.get(self.buf.tail).map_or(&[][..], Slot::data);
        data.get(self.payload..self.payload + self.len).unwrap_or(&[])
    }
}

impl core::ops::DerefMut for Reservation<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.entry_mut()
    }
}

/// Unread events in order; see [`CpuBuffer::iter`].
pub struct Iter<'a> {
    buf: &'a CpuBuffer,
    slot: usize,
    events: PageEvents<'a>,
    done: bool,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Result<Event<'a>, Corrupt>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some(e) = self.events.next() {
                return Some(e);
            }
            if self.slot == self.buf.tail {
                self.done = true;
                break;
            }
            self.slot = self.buf.next_index(self.slot);
            let ts = self.buf.slots.get(self.slot).map_or(0, Slot::ts);
            self.events = self.buf.page_events(self.slot, 0, ts);
        }
        None
    }
}

#[cfg(test)]
mod tests;
