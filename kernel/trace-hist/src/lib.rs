//! Hist triggers, the CPU-free part, as Linux 6.12's
//! kernel/trace/trace_events_hist.c and tracing_map.c have them:
//!
//! - [`field`]: keys, values and variables: event fields with their
//!   modifiers (`.hex`, `.sym`, `.sym-offset`, `.execname`, `.syscall`,
//!   `.log2`, `.buckets=N`, `.usecs`, `.percent`, `.graph`,
//!   `.stacktrace`), `common_timestamp`, `common_cpu`, `hitcount`,
//!   constants and `+ - * /` expressions, evaluated on a record without
//!   allocating.
//! - [`hist`]: the `hist:...` command (`keys=`, `vals=`, `sort=`, `size=`,
//!   `name=`, `clock=`, `pause`, `cont`, `clear`, `nohitcount`, `if`
//!   filters), compiled against an event's schema into a [`hist::HistData`],
//!   with Linux's `error_log` messages and the trigger's own line.
//! - [`map`]: [`map::TracingMap`], a table preallocated when the trigger is
//!   created, filled from probe context without locks or allocation;
//!   what does not fit is counted as dropped.
//! - [`show`]: the `hist` file's text, with `onmax`/`onchange` lines.
//! - [`vars`]: what links triggers: variables one trigger defines and
//!   others read (`$ts0`, `sched.sched_wakeup.$ts0`), the registry of
//!   every event's triggers, and the synthetic events actions feed.
//! - [`action`]: `onmatch(system.event)`, `onmax($var)` and
//!   `onchange($var)` with `trace()`/`<synth>()`, `save()` and
//!   `snapshot()`, and field variables made on the matched event.
//!
//! ```
//! use trace_filter::{EventField, FieldKind, FilterContext, FilterEnv, NoSymbols, SimpleContext};
//! use trace_hist::field::HistContext;
//! use trace_hist::hist::{HistList, HistSpec, NamedHists};
//! use trace_hist::show::{hist_show, NoHistSymbols};
//!
//! struct Ctx(SimpleContext);
//! impl FilterContext for Ctx {
//!     fn cpu(&self) -> u32 { self.0.cpu() }
//!     fn comm(&self) -> &[u8] { self.0.comm() }
//! }
//! impl HistContext for Ctx {
//!     fn timestamp_ns(&self) -> u64 { 0 }
//!     fn save_stack(&mut self, _out: &mut [u64]) -> usize { 0 }
//!     fn snapshot(&mut self) {}
//! }
//!
//! // raw_syscalls/sys_enter's `id`, after the common fields.
//! let fields = [EventField { name: "id", offset: 8, size: 8, is_signed: true, kind: FieldKind::Integer }];
//! let env = FilterEnv { nr_cpu_ids: 4, symbols: &NoSymbols };
//! let mut list = HistList::new();
//! let spec = HistSpec::parse("keys=id", &fields, &env).unwrap();
//! list.apply(spec, false, &mut NamedHists::new()).unwrap();
//!
//! // In probe context, for each record:
//! let mut rec = [0u8; 16];
//! for id in [63u64, 64, 64] {
//!     rec[8..16].copy_from_slice(&id.to_le_bytes());
//!     for t in list.iter() {
//!         t.event_hit(&rec, &mut Ctx(SimpleContext::new(0, "sh")));
//!     }
//! }
//! let hists: Vec<_> = list.iter().map(|t| &**t).collect();
//! let text = hist_show(&hists, &NoHistSymbols);
//! assert!(text.starts_with("# event histogram\n#\n# trigger info: hist:keys=id:vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n"));
//! assert!(text.contains("{ id:         63 } hitcount:          1\n{ id:         64 } hitcount:          2\n"));
//! assert!(text.ends_with("\nTotals:\n    Hits: 3\n    Entries: 2\n    Dropped: 0\n"));
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

pub mod action;
pub mod field;
pub mod hist;
pub mod map;
pub mod show;
pub mod vars;

use uapi::error::CmdError;
use uapi::Errno;

/// Linux's `MAX_FILTER_STR_VAL`: the key room of a dynamic string.
pub const MAX_FILTER_STR_VAL: u32 = 256;
/// Linux's `HIST_STACKTRACE_DEPTH`.
pub const HIST_STACKTRACE_DEPTH: usize = 16;
/// Linux's `HIST_KEY_SIZE_MAX`: the compound key's limit in bytes.
pub const HIST_KEY_SIZE_MAX: u32 = MAX_FILTER_STR_VAL + (HIST_STACKTRACE_DEPTH as u32) * 8;
/// Linux's `TRACING_MAP_BITS_DEFAULT`: 2048 entries.
pub const TRACING_MAP_BITS_DEFAULT: u32 = 11;
/// Linux's `TRACING_MAP_BITS_MIN`.
pub const TRACING_MAP_BITS_MIN: u32 = 7;
/// Linux's `TRACING_MAP_BITS_MAX`.
pub const TRACING_MAP_BITS_MAX: u32 = 17;
/// Linux's `TRACING_MAP_KEYS_MAX`.
pub const TRACING_MAP_KEYS_MAX: usize = 3;
/// Linux's `TRACING_MAP_VALS_MAX` (hitcount included).
pub const TRACING_MAP_VALS_MAX: usize = 3;
/// Linux's `TRACING_MAP_VARS_MAX`.
pub const TRACING_MAP_VARS_MAX: usize = 16;
/// Linux's `TRACING_MAP_SORT_KEYS_MAX`.
pub const TRACING_MAP_SORT_KEYS_MAX: usize = 2;

/// The `error_log` messages of hist triggers (Linux's `err_text`), by
/// their `HIST_ERR_*` names.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistErr {
    DuplicateVar,
    VarNotUnique,
    TooManyVars,
    MalformedAssignment,
    NamedMismatch,
    TriggerEexist,
    TriggerEnoentClear,
    SetClockFail,
    BadFieldModifier,
    TooManySubexpr,
    TimestampMismatch,
    TooManyFieldVars,
    EventFileNotFound,
    HistNotFound,
    HistCreateFail,
    SynthVarNotFound,
    SynthEventNotFound,
    SynthTypeMismatch,
    SynthCountMismatch,
    FieldVarParseFail,
    VarCreateFindFail,
    OnxNotVar,
    OnxVarNotFound,
    OnxVarCreateFail,
    FieldVarCreateFail,
    TooManyParams,
    ParamNotFound,
    InvalidParam,
    ActionNotFound,
    NoSaveParams,
    TooManySaveActions,
    ActionMismatch,
    NoClosingParen,
    SubsysNotFound,
    InvalidSubsysEvent,
    InvalidRefKey,
    VarNotFound,
    FieldNotFound,
    EmptyAssignment,
    InvalidSortModifier,
    EmptySortField,
    TooManySortFields,
    InvalidSortField,
    InvalidStrOperand,
    ExpectNumber,
    UnaryMinusSubexpr,
    DivisionByZero,
    NeedNohcVal,
}

impl HistErr {
    /// Linux's text for it.
    pub fn text(self) -> &'static str {
        use HistErr::*;
        match self {
            DuplicateVar => "Variable already defined",
            VarNotUnique => {
                "Variable name not unique, need to use fully qualified name (subsys.event.var) for variable"
            }
            TooManyVars => "Too many variables defined",
            MalformedAssignment => "Malformed assignment",
            NamedMismatch => "Named hist trigger doesn't match existing named trigger (includes variables)",
            TriggerEexist => "Hist trigger already exists",
            TriggerEnoentClear => "Can't clear or continue a nonexistent hist trigger",
            SetClockFail => "Couldn't set trace_clock",
            BadFieldModifier => "Invalid field modifier",
            TooManySubexpr => "Too many subexpressions (3 max)",
            TimestampMismatch => "Timestamp units in expression don't match",
            TooManyFieldVars => "Too many field variables defined",
            EventFileNotFound => "Event file not found",
            HistNotFound => "Matching event histogram not found",
            HistCreateFail => "Couldn't create histogram for field",
            SynthVarNotFound => "Couldn't find synthetic variable",
            SynthEventNotFound => "Couldn't find synthetic event",
            SynthTypeMismatch => "Param type doesn't match synthetic event field type",
            SynthCountMismatch => "Param count doesn't match synthetic event field count",
            FieldVarParseFail => "Couldn't parse field variable",
            VarCreateFindFail => "Couldn't create or find variable",
            OnxNotVar => "For onmax(x) or onchange(x), x must be a variable",
            OnxVarNotFound => "Couldn't find onmax or onchange variable",
            OnxVarCreateFail => "Couldn't create onmax or onchange variable",
            FieldVarCreateFail => "Couldn't create field variable",
            TooManyParams => "Too many action params",
            ParamNotFound => "Couldn't find param",
            InvalidParam => "Invalid action param",
            ActionNotFound => "No action found",
            NoSaveParams => "No params found for save()",
            TooManySaveActions => "Can't have more than one save() action per hist",
            ActionMismatch => "Handler doesn't support action",
            NoClosingParen => "No closing paren found",
            SubsysNotFound => "Missing subsystem",
            InvalidSubsysEvent => "Invalid subsystem or event name",
            InvalidRefKey => "Using variable references in keys not supported",
            VarNotFound => "Couldn't find variable",
            FieldNotFound => "Couldn't find field",
            EmptyAssignment => "Empty assignment",
            InvalidSortModifier => "Invalid sort modifier",
            EmptySortField => "Empty sort field",
            TooManySortFields => "Too many sort fields (Max = 2)",
            InvalidSortField => "Sort field must be a key or a val",
            InvalidStrOperand => "String type can not be an operand in expression",
            ExpectNumber => "Expecting numeric literal",
            UnaryMinusSubexpr => "Unary minus not supported in sub-expressions",
            DivisionByZero => "Division by zero",
            NeedNohcVal => "Non-hitcount value is required for 'nohitcount'",
        }
    }
}

/// Why a hist command fails: the errno the write returns and, when Linux
/// logs one (`hist_err`), the `error_log` entry's message and caret
/// position in the command `hist:PARAM [if FILTER]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistError {
    /// What the write returns.
    pub errno: Errno,
    /// The logged error, if Linux logs one.
    pub log: Option<CmdError>,
    /// Errors Linux logs before [`HistError::log`] on the way to it, in
    /// order (an unknown `$var` is logged as such, then as an unknown
    /// field).
    pub first: alloc::vec::Vec<CmdError>,
    /// A bad `if` filter: the event-filter `error_log` entry Linux adds.
    pub filter_failure: Option<alloc::boxed::Box<trace_filter::FilterFailure>>,
}

impl HistError {
    /// An error Linux returns without logging.
    pub const fn silent(errno: Errno) -> HistError {
        HistError {
            errno,
            log: None,
            first: alloc::vec::Vec::new(),
            filter_failure: None,
        }
    }

    /// A logged error.
    pub fn logged(errno: Errno, err: HistErr, pos: usize) -> HistError {
        HistError {
            errno,
            log: Some(CmdError::new(errno, err.text(), pos)),
            first: alloc::vec::Vec::new(),
            filter_failure: None,
        }
    }
}

impl From<Errno> for HistError {
    fn from(errno: Errno) -> HistError {
        HistError::silent(errno)
    }
}
