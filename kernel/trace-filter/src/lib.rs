//! The CPU-free core of tracefs event filters and triggers, as Linux 6.12
//! has them (kernel/trace/trace_events_filter.c, trace_events_trigger.c,
//! and the `set_event` parsing of trace_events.c):
//!
//! - [`filter`]: the expression language of `events/<g>/<e>/filter`
//!   (`==`, `!=`, `<`, `<=`, `>`, `>=`, `&`, `~`, `&&`, `||`, `!`,
//!   parentheses, `CPUS{list}`, `.function`, `.ustring`), compiled against
//!   an event's schema into a [`filter::Program`] that evaluates a record
//!   without allocating, with Linux's error messages, positions and errno.
//! - [`trigger`]: the `trigger` file's commands (`traceon`, `traceoff`,
//!   `stacktrace`, `enable_event`, `disable_event`, `:N` counts,
//!   `if FILTER`, `!` removal) and its rendering.
//! - [`set_event`]: `[!][system:]event` matching for `set_event`.
//! - [`glob`]: Linux's `glob_match`.
//!
//! Nothing here touches the CPU; the kernel wires it to its event files:
//!
//! ```
//! use trace_filter::{apply_event_filter, EventField, FieldKind, FilterEnv, NoSymbols, SimpleContext};
//! use trace_filter::filter::{filter_file_text, FILTER_ERROR_LOC};
//!
//! // The event's own fields, as its `format` file lists them.
//! let fields = [EventField { name: "count", offset: 16, size: 8, is_signed: false, kind: FieldKind::Integer }];
//! let env = FilterEnv { nr_cpu_ids: 4, symbols: &NoSymbols };
//!
//! // A write to events/kprobes/myprobe/filter:
//! let up = apply_event_filter(b"count > 100 && comm ~ \"cat*\"\n", &fields, &env);
//! assert_eq!(up.result(), Ok(()));
//! let filter = up.filter.unwrap(); // store it in the event (None would remove it)
//! assert_eq!(filter_file_text(Some(&filter)), "count > 100 && comm ~ \"cat*\"\n");
//!
//! // In probe context, for each record (no allocation):
//! let mut rec = [0u8; 24];
//! rec[16..24].copy_from_slice(&4096u64.to_le_bytes());
//! assert!(filter.matches(&rec, &mut SimpleContext::new(0, "cat")));
//!
//! // A bad filter: the write fails, error_log gets an entry, the file shows why.
//! let up = apply_event_filter(b"cnt > 1", &fields, &env);
//! let failure = up.failure.as_ref().unwrap();
//! assert_eq!((FILTER_ERROR_LOC, failure.err.msg, failure.err.pos), ("event filter parse error", "Field not found", 4));
//! assert_eq!(filter_file_text(up.filter.as_ref()), "cnt > 1\n    ^\nparse_error: Field not found\n\n");
//! ```

#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]
// Every byte parsed here comes from a user's write: keep every way to panic
// out of the library code.
#![cfg_attr(
    not(test),
    deny(
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unreachable,
        clippy::unwrap_used
    )
)]

extern crate alloc;

pub mod cpumask;
pub mod field;
pub mod filter;
pub mod glob;
pub mod kstrto;
pub mod set_event;
pub mod trigger;

pub use field::{EventField, FieldKind, COMMON_FIELDS};
pub use filter::{
    apply_event_filter, apply_subsystem_filter, EventFilter, FilterContext, FilterEnv, FilterFailure, FilterUpdate,
    KallsymsLookup, NoSymbols, Program, SimpleContext,
};
