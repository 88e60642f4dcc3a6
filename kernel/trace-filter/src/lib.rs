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
//! Nothing here touches the CPU; the kernel wires it to its event files.

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
