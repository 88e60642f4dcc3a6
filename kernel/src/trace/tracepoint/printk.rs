//! `printk` events (Linux's `include/trace/events/printk.h`).

use crate::define_trace_event;
use crate::trace::tracepoint::DataLocStr;

define_trace_event! {
    /// A log record was stored: its text, without the trailing newline
    /// (Linux fires it from `vprintk_store`, for every level, whether or
    /// not the console shows it).
    printk / console,
    fn trace_console_raw(text: &[u8]),
    fields {
        msg: DataLocStr as "__data_loc char[]" = text,
    },
    printk "\"%s\", __get_str(msg)",
    print(out, e) {
        write!(out, "{}", e.msg)
    }
}

/// Records `args` as one `printk:console` entry when the event is on; a
/// no-op (one NOP) otherwise. The text is formatted on the stack, cut at
/// the longest string an entry keeps, so logging works from any context.
#[inline(always)]
pub fn trace_console(args: core::fmt::Arguments) {
    if crate::static_branch_unlikely!(console::KEY) {
        console_slow(args);
    }
}

#[cold]
#[inline(never)]
fn console_slow(args: core::fmt::Arguments) {
    struct Text {
        buf: [u8; crate::trace::tracepoint::DATA_LOC_MAX],
        len: usize,
    }
    impl core::fmt::Write for Text {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let n = s.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
            self.len += n;
            Ok(())
        }
    }
    let mut t = Text {
        buf: [0; crate::trace::tracepoint::DATA_LOC_MAX],
        len: 0,
    };
    let _ = core::fmt::write(&mut t, args);
    let text = &t.buf[..t.len];
    trace_console_raw(text.strip_suffix(b"\n").unwrap_or(text));
}

/// Registers the `printk` events.
pub fn register() -> Result<(), uapi::Errno> {
    console::register()
}
