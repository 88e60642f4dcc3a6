//! The trace ring buffer's page and event layout as user space reads it
//! from tracefs (`per_cpu/cpuN/trace_pipe_raw`, described by
//! `events/header_page` and `events/header_event`): Linux 6.12's
//! kernel/trace/ring_buffer.c and include/linux/ring_buffer.h on a 64-bit
//! machine.

/// Bytes of `buffer_data_page` before the events (u64 time stamp, then
/// the commit word).
pub const BUF_PAGE_HDR_SIZE: usize = 16;

/// Largest `type_len` of a data event whose length is in its header.
pub const RINGBUF_TYPE_DATA_TYPE_LEN_MAX: u32 = 28;
/// `type_len` of padding (the rest of a page, or a discarded event).
pub const RINGBUF_TYPE_PADDING: u32 = 29;
/// `type_len` of a time extend.
pub const RINGBUF_TYPE_TIME_EXTEND: u32 = 30;
/// `type_len` of an absolute time stamp.
pub const RINGBUF_TYPE_TIME_STAMP: u32 = 31;
/// Bits of `time_delta` in an event header (after the 5-bit `type_len`).
pub const TS_SHIFT: u32 = 27;

/// Flag in a read page's commit: events were lost before this page.
pub const RB_MISSED_EVENTS: u64 = 1 << 31;
/// Flag in a read page's commit: the lost count is stored after the data.
pub const RB_MISSED_STORED: u64 = 1 << 30;

/// `events/header_page`, as Linux prints it on a 64-bit machine (for
/// 4096-byte sub-buffers).
pub const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

/// `events/header_event`, as Linux prints it.
pub const HEADER_EVENT: &str = "# compressed entry header\n\
\ttype_len    :    5 bits\n\
\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\
\n\
\tpadding     : type == 29\n\
\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\
\tdata max type_len  == 28\n";
