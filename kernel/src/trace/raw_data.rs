//! `trace_marker_raw`: binary markers (Linux's `tracing_mark_raw_write`
//! and its `TRACE_RAW_DATA` entry, the `ftrace/raw_data` event). A write
//! is an `unsigned int` id and the bytes that follow it, recorded as one
//! entry; `trace` and `trace_pipe` print it as `# <id in hex> buf:` and
//! every byte of the entry after the id in hex, the padding included, as
//! Linux's `trace_raw_data` does.

use super::events::{self, EventRecord, FieldDesc, TraceEventDef};
use super::{options, TraceArray, TRACE_ENTRY_SIZE};
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use core::fmt::Write;
use uapi::Errno;

/// Linux's `TRACE_RAW_DATA`, the type of a raw marker entry.
pub const TRACE_RAW_DATA: u16 = 18;

/// Bytes of the id in front of the data.
const ID_SIZE: usize = 4;

/// Linux's `FAULT_SIZE_ID`: every entry has room for an id and
/// `<faulted>` (what Linux records when the copy from the user faults).
const FAULT_SIZE_ID: usize = 9 + ID_SIZE;

/// The ring buffer's alignment of an entry's length (`RB_ALIGNMENT`),
/// which decides how many padding bytes `trace` prints.
const RB_ALIGNMENT: usize = 4;

/// Writes one raw marker into `tr` (Linux's `tracing_mark_raw_write`):
/// EINVAL with `options/markers` off, for a write shorter than the id, or
/// for one that does not fit an entry of the buffer (with 4 KiB
/// sub-buffers, more than 4060 bytes); EBADF if it cannot be recorded
/// (tracing off, a full buffer without overwrite). Returns the bytes
/// taken: all of them.
pub fn tracing_mark_raw_write(tr: &TraceArray, data: &[u8]) -> Result<usize, Errno> {
    record(tr, data, data.len()).map(|()| data.len())
}

/// A `trace_marker_raw` write of `cnt` bytes whose copy from the user
/// faulted: checked as any write, then recorded with id -1 and
/// `<faulted>`, and EFAULT (Linux's `tracing_mark_raw_write`).
pub fn tracing_mark_raw_faulted(tr: &TraceArray, cnt: usize) -> Result<usize, Errno> {
    let mut faulted = [0u8; FAULT_SIZE_ID];
    faulted[..ID_SIZE].copy_from_slice(&u32::MAX.to_le_bytes());
    faulted[ID_SIZE..].copy_from_slice(b"<faulted>");
    record(tr, &faulted, cnt).and(Err(Errno::EFAULT))
}

/// Records `data` (an id and bytes) as a raw marker entry sized for a
/// write of `cnt` bytes, with Linux's errors.
fn record(tr: &TraceArray, data: &[u8], cnt: usize) -> Result<(), Errno> {
    if !tr.is_set(options::MARKERS) || cnt < ID_SIZE {
        return Err(Errno::EINVAL);
    }
    // Sized as Linux sizes it: the entry's own id field and then all the
    // bytes written, the id again among them (so 4 spare bytes follow).
    let size = TRACE_ENTRY_SIZE + ID_SIZE + cnt.max(FAULT_SIZE_ID);
    if size > tr.max_data_size() {
        return Err(Errno::EINVAL);
    }
    let len = size.next_multiple_of(RB_ALIGNMENT) - TRACE_ENTRY_SIZE;
    let recorded = super::trace_event_write(tr, TRACE_RAW_DATA, len, |f| {
        let (head, pad) = f.split_at_mut(data.len());
        head.copy_from_slice(data);
        pad.fill(0);
        true
    });
    if recorded {
        Ok(())
    } else {
        Err(Errno::EBADF)
    }
}

/// `# <id> buf: xx xx ...`: the id in hex, then each byte after it.
fn print_raw_data(out: &mut String, rec: &EventRecord<'_>) {
    let id = rec
        .entry
        .get(TRACE_ENTRY_SIZE..TRACE_ENTRY_SIZE + ID_SIZE)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let _ = write!(out, "# {id:x} buf:");
    for b in rec.entry.get(TRACE_ENTRY_SIZE + ID_SIZE..).unwrap_or_default() {
        let _ = write!(out, " {b:02x}");
    }
    out.push('\n');
}

/// Registers `ftrace/raw_data` with Linux's fields and format.
pub(super) fn register_raw_data_event() -> Result<(), Errno> {
    let def = TraceEventDef {
        system: "ftrace".to_string(),
        name: "raw_data".to_string(),
        fields: alloc::vec![
            FieldDesc::new("unsigned int", "id", 8, 4, false),
            FieldDesc::new("char", "buf[]", 12, 0, false),
        ],
        print_fmt: "\"id:%04x %08x\", REC->id, (int)REC->buf[0]".to_string(),
        print: Box::new(print_raw_data),
        reg: None,
        ignore_enable: true,
    };
    events::register_internal_event(def, TRACE_RAW_DATA).map(|_| ())
}
