//! Event filter expressions, compiled and evaluated as Linux 6.12's
//! kernel/trace/trace_events_filter.c does: the same grammar, the same
//! error messages at the same (sometimes one-past) positions, the same
//! errno values (including the `EPERM`, `ENOENT` and `ESRCH` that Linux's
//! internal codes turn into), and the same matching quirks (an end glob
//! `"*x"` on a fixed-size string compares the array's last bytes).
//!
//! The compiled program is Linux's: a list of predicates, each with the
//! result on which to branch and where to, so that evaluation is a loop
//! over a slice without recursion or allocation.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use uapi::error::CmdError;
use uapi::Errno;

use crate::cpumask::CpuMask;
use crate::field::{find_field, EventField, FieldRef, FilterType};
use crate::glob::glob_match_len;
use crate::kstrto::{kstrtoll, kstrtoul, kstrtoull};

/// Who reports a bad filter in `error_log` (Linux's
/// `"event filter parse error"`).
pub const FILTER_ERROR_LOC: &str = "event filter parse error";

/// What an event's `filter` file reads when it has no filter.
pub const NO_FILTER_TEXT: &str = "none\n";

/// What a subsystem's `filter` file reads when it has no filter of its own
/// (or when the last one was applied; Linux's `DEFAULT_SYS_FILTER_MESSAGE`).
pub const DEFAULT_SYS_FILTER_MESSAGE: &str = "### global filter ###\n\
# Use this to set filters for multiple events.\n\
# Only events with the given fields will be affected.\n\
# If no events are modified, an error message will be displayed here\n";

/// Longest string operand (Linux's `MAX_FILTER_STR_VAL` less the NUL).
pub const MAX_FILTER_STR_VAL: usize = 256;

/// Bytes of a task's `comm`.
pub use uapi::prctl::TASK_COMM_LEN;

/// Longest string a `char *` field is compared on (Linux's
/// `USTRING_BUF_SIZE`, with its NUL).
pub const USTRING_BUF_SIZE: usize = 1024;

/// Linux's `err_text[]`, for the errors this parser can report.
pub mod msg {
    /// `FILT_ERR_INVALID_OP`
    pub const INVALID_OP: &str = "Invalid operator";
    /// `FILT_ERR_TOO_MANY_OPEN`
    pub const TOO_MANY_OPEN: &str = "Too many '('";
    /// `FILT_ERR_TOO_MANY_CLOSE`
    pub const TOO_MANY_CLOSE: &str = "Too few '('";
    /// `FILT_ERR_MISSING_QUOTE`
    pub const MISSING_QUOTE: &str = "Missing matching quote";
    /// `FILT_ERR_MISSING_BRACE_OPEN`
    pub const MISSING_BRACE_OPEN: &str = "Missing '{'";
    /// `FILT_ERR_MISSING_BRACE_CLOSE`
    pub const MISSING_BRACE_CLOSE: &str = "Missing '}'";
    /// `FILT_ERR_OPERAND_TOO_LONG`
    pub const OPERAND_TOO_LONG: &str = "Operand too long";
    /// `FILT_ERR_EXPECT_STRING`
    pub const EXPECT_STRING: &str = "Expecting string field";
    /// `FILT_ERR_EXPECT_DIGIT`
    pub const EXPECT_DIGIT: &str = "Expecting numeric field";
    /// `FILT_ERR_ILLEGAL_FIELD_OP`
    pub const ILLEGAL_FIELD_OP: &str = "Illegal operation for field type";
    /// `FILT_ERR_FIELD_NOT_FOUND`
    pub const FIELD_NOT_FOUND: &str = "Field not found";
    /// `FILT_ERR_ILLEGAL_INTVAL`
    pub const ILLEGAL_INTVAL: &str = "Illegal integer value";
    /// `FILT_ERR_BAD_SUBSYS_FILTER`
    pub const BAD_SUBSYS_FILTER: &str = "Couldn't find or set field in one of a subsystem's events";
    /// `FILT_ERR_TOO_MANY_PREDS`
    pub const TOO_MANY_PREDS: &str = "Too many terms in predicate expression";
    /// `FILT_ERR_INVALID_FILTER`
    pub const INVALID_FILTER: &str = "Meaningless filter expression";
    /// `FILT_ERR_INVALID_CPULIST`
    pub const INVALID_CPULIST: &str = "Invalid cpulist";
    /// `FILT_ERR_INVALID_VALUE`
    pub const INVALID_VALUE: &str = "Invalid value (did you forget quotes)?";
    /// `FILT_ERR_NO_FUNCTION`
    pub const NO_FUNCTION: &str = "Function not found";
    /// `FILT_ERR_ERRNO`: what `error_log` says when the parser failed
    /// without naming a reason (the `filter` file then shows
    /// `Error: (0)`).
    pub const ERRNO: &str = "Error";
    /// `FILT_ERR_NO_FILTER`
    pub const NO_FILTER: &str = "No filter found";
}

/// Kernel symbols, for `FIELD.function == name` (Linux's kallsyms).
pub trait KallsymsLookup {
    /// The address of the symbol `name` (`kallsyms_lookup_name`).
    fn lookup_name(&self, name: &str) -> Option<u64>;
    /// The size of the symbol containing `addr` and `addr`'s offset in it
    /// (`kallsyms_lookup_size_offset`).
    fn lookup_size_offset(&self, addr: u64) -> Option<(u64, u64)>;
}

/// No symbols: every `.function` name is "Function not found".
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSymbols;

impl KallsymsLookup for NoSymbols {
    fn lookup_name(&self, _: &str) -> Option<u64> {
        None
    }
    fn lookup_size_offset(&self, _: u64) -> Option<(u64, u64)> {
        None
    }
}

/// What compiling a filter needs from the running kernel.
#[derive(Clone, Copy)]
pub struct FilterEnv<'a> {
    /// The number of possible CPUs: `CPUS{list}` may only name CPUs below it.
    pub nr_cpu_ids: u32,
    /// Resolves `.function` operands.
    pub symbols: &'a dyn KallsymsLookup,
}

impl core::fmt::Debug for FilterEnv<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FilterEnv")
            .field("nr_cpu_ids", &self.nr_cpu_ids)
            .finish_non_exhaustive()
    }
}

/// What a predicate needs besides the record: the current task and CPU.
/// Evaluation calls these from probe context; they must not allocate or
/// sleep.
pub trait FilterContext {
    /// The CPU the event happens on (`raw_smp_processor_id()`).
    fn cpu(&self) -> u32;
    /// The current task's `comm` (up to [`TASK_COMM_LEN`] bytes; a NUL
    /// ends it early).
    fn comm(&self) -> &[u8];
    /// The NUL-terminated string at `addr` (kernel memory, or user memory
    /// if `user`), read without faulting, without its NUL and at most
    /// [`USTRING_BUF_SIZE`]` - 1` bytes; `None` if it cannot be read (the
    /// predicate is then false, as in Linux).
    fn fetch_string(&mut self, addr: u64, user: bool) -> Option<&[u8]> {
        let _ = (addr, user);
        None
    }
}

/// A [`FilterContext`] with a fixed CPU and comm, that reads no pointers.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimpleContext {
    /// The CPU.
    pub cpu: u32,
    /// The comm, NUL-padded.
    pub comm: [u8; TASK_COMM_LEN],
}

impl SimpleContext {
    /// A context on `cpu` for a task called `comm` (truncated to 15 bytes,
    /// as the kernel keeps it).
    pub fn new(cpu: u32, comm: &str) -> SimpleContext {
        let mut c = [0u8; TASK_COMM_LEN];
        for (d, s) in c.iter_mut().zip(comm.bytes().take(TASK_COMM_LEN - 1)) {
            *d = s;
        }
        SimpleContext { cpu, comm: c }
    }
}

impl FilterContext for SimpleContext {
    fn cpu(&self) -> u32 {
        self.cpu
    }
    fn comm(&self) -> &[u8] {
        &self.comm
    }
}

/// Linux's `ops[]`, in its matching order (`<=` before `<`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Glob,
    Ne,
    Eq,
    Le,
    Lt,
    Ge,
    Gt,
    Band,
}

const OPS: [(&[u8], Op); 8] = [
    (b"~", Op::Glob),
    (b"!=", Op::Ne),
    (b"==", Op::Eq),
    (b"<=", Op::Le),
    (b"<", Op::Lt),
    (b">=", Op::Ge),
    (b">", Op::Gt),
    (b"&", Op::Band),
];

/// How a string operand matches (Linux's `enum regex_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MatchType {
    Full,
    FrontOnly,
    MiddleOnly,
    EndOnly,
    Glob,
}

#[derive(Clone, Debug)]
struct Regex {
    pattern: Vec<u8>,
    kind: MatchType,
}

/// Which comparison a predicate makes (Linux's `enum filter_pred_fn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PredFn {
    /// Never true (fields of a size Linux has no comparison for).
    Nop,
    /// `==`/`!=` on an integer of `size` bytes.
    Equal {
        size: u8,
    },
    /// `<`, `<=`, `>`, `>=`, `&` on an integer.
    Compare {
        size: u8,
        signed: bool,
    },
    /// An integer field, read as a CPU number, against a mask.
    ScalarCpumask {
        size: u8,
    },
    Comm,
    StaticString {
        len: u32,
    },
    DynString,
    RelDynString,
    PtrString {
        user: bool,
    },
    Cpu,
    CpuCpumask,
    Function,
}

#[derive(Clone, Debug)]
struct Pred {
    func: PredFn,
    op: Op,
    not: bool,
    offset: u32,
    val: u64,
    val2: u64,
    regex: Option<Regex>,
    mask: Option<CpuMask>,
}

/// One step of the program: evaluate `pred`; if its result equals
/// `when_to_branch`, continue after index `target` (Linux's `prog_entry`).
#[derive(Clone, Debug)]
struct ProgEntry {
    target: usize,
    when_to_branch: bool,
    pred: Pred,
}

/// A compiled filter program: evaluate with [`Program::matches`].
#[derive(Clone, Debug)]
pub struct Program {
    entries: Vec<ProgEntry>,
    /// The results at `entries.len()` (TRUE) and one past it (FALSE).
    n: usize,
}

impl Program {
    /// Does the record `rec` pass? Never allocates; a field that lies
    /// outside `rec` makes its predicate false.
    pub fn matches<C: FilterContext + ?Sized>(&self, rec: &[u8], ctx: &mut C) -> bool {
        let mut i = 0usize;
        while let Some(e) = self.entries.get(i) {
            let m = pred_match(&e.pred, rec, ctx);
            if m == e.when_to_branch {
                i = e.target;
            }
            i += 1;
        }
        // prog[N].target is TRUE, prog[N+1].target FALSE.
        i == self.n
    }

    /// How many predicates the program has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has none (never true for a compiled filter).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// An event's filter as Linux keeps it: the text its `filter` file shows,
/// and the program if the text compiled (after a failed write the text is
/// the error report and there is no program: the event is unfiltered).
#[derive(Clone, Debug)]
pub struct EventFilter {
    text: String,
    prog: Option<Program>,
}

impl EventFilter {
    /// Compiles `text` for an event with `fields` (Linux's
    /// `create_filter()` with `set_str`). `text` is kept as the filter
    /// string; it ends at its first NUL, as Linux's copy of the user's
    /// buffer does.
    pub fn compile(text: &str, fields: &[EventField<'_>], env: &FilterEnv<'_>) -> Result<EventFilter, CmdError> {
        let text = until_nul(text);
        let prog = process_preds(text.as_bytes(), fields, env)?;
        Ok(EventFilter {
            text: String::from(text),
            prog: Some(prog),
        })
    }

    /// The filter string (without the newline the file adds).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The program, if the filter compiled.
    pub fn program(&self) -> Option<&Program> {
        self.prog.as_ref()
    }

    /// Does the record pass? A filter without a program lets everything
    /// through (Linux's `filter_match_preds` on a NULL prog).
    pub fn matches<C: FilterContext + ?Sized>(&self, rec: &[u8], ctx: &mut C) -> bool {
        self.prog.as_ref().is_none_or(|p| p.matches(rec, ctx))
    }

    /// What the event's `filter` file reads (`print_event_filter`).
    pub fn file_text(&self) -> String {
        let mut s = self.text.clone();
        s.push('\n');
        s
    }

    /// The error report Linux stores as the filter string after a failed
    /// write (`append_filter_err`): the text, then a caret under the
    /// position and `parse_error: MESSAGE`, or `Error: (0)` for an error
    /// without a message.
    pub fn failed(text: &str, err: &CmdError) -> EventFilter {
        let text = until_nul(text);
        let mut s = String::from(text);
        if err.msg == msg::ERRNO {
            s.push_str("\nError: (0)\n");
        } else {
            // The caret goes under `pos`, clamped to the text; Linux
            // prints it with a field width of pos+1 ("indexing is off by
            // one"), which for pos 0 is a width of 0.
            let pos = err.pos.min(text.len());
            let width = if pos == 0 { 0 } else { pos + 1 };
            let _ = write!(s, "\n{:>width$}", "^", width = width);
            let _ = write!(s, "\nparse_error: {}\n", err.msg);
        }
        EventFilter { text: s, prog: None }
    }
}

/// What the `filter` file of an event reads, given its filter.
pub fn filter_file_text(filter: Option<&EventFilter>) -> String {
    match filter {
        Some(f) => f.file_text(),
        None => String::from(NO_FILTER_TEXT),
    }
}

/// A rejected filter write: the error for the write's return and for
/// `error_log`, whose `Command:` line is `command`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterFailure {
    /// Errno, message and caret position.
    pub err: CmdError,
    /// The filter string, as `error_log` shows it.
    pub command: String,
}

/// What writing into an event's `filter` file does (Linux's
/// `apply_event_filter`).
#[derive(Clone, Debug)]
pub struct FilterUpdate {
    /// The event's filter from now on: `None` to remove it. Linux replaces
    /// the filter even when the write fails (the new one then shows the
    /// error and filters nothing).
    pub filter: Option<EventFilter>,
    /// Why the write fails, if it does.
    pub failure: Option<FilterFailure>,
}

impl FilterUpdate {
    /// What the `write` returns: `Ok` or the errno.
    pub fn result(&self) -> Result<(), Errno> {
        match &self.failure {
            Some(f) => Err(f.err.errno),
            None => Ok(()),
        }
    }
}

/// Applies a write of `buf` (the bytes written, up to the first NUL) to an
/// event's `filter` file: `0` removes the filter, anything else is
/// compiled. Trailing white space is dropped, leading white space kept
/// (positions count from the first byte written).
pub fn apply_event_filter(buf: &[u8], fields: &[EventField<'_>], env: &FilterEnv<'_>) -> FilterUpdate {
    let text = trim_end(buf_to_str(buf));
    if text.trim_start_matches(is_space_char) == "0" {
        return FilterUpdate {
            filter: None,
            failure: None,
        };
    }
    match EventFilter::compile(&text, fields, env) {
        Ok(f) => FilterUpdate {
            filter: Some(f),
            failure: None,
        },
        Err(err) => FilterUpdate {
            filter: Some(EventFilter::failed(&text, &err)),
            failure: Some(FilterFailure { err, command: text }),
        },
    }
}

/// What writing into a subsystem's `filter` file does to each of its
/// events and to the subsystem's own file (Linux's
/// `apply_subsystem_event_filter`).
#[derive(Clone, Debug)]
pub struct SubsystemFilterUpdate {
    /// Each event's new filter, in the order the schemas were given
    /// (`None` removes it); events the filter does not fit get the error
    /// report and no program.
    pub events: Vec<Option<EventFilter>>,
    /// One `error_log` entry per event the filter does not fit
    /// ([`msg::BAD_SUBSYS_FILTER`] at position 0).
    pub event_failures: Vec<FilterFailure>,
    /// The subsystem's file from now on (Linux shows the default message
    /// once a filter applied).
    pub system_text: String,
    /// What the write returns: it fails (`ENODEV`, nothing logged) only
    /// when the subsystem has no events.
    pub result: Result<(), Errno>,
}

/// Applies a write of `buf` to a subsystem's `filter` file whose events
/// have the given schemas.
pub fn apply_subsystem_filter(buf: &[u8], events: &[&[EventField<'_>]], env: &FilterEnv<'_>) -> SubsystemFilterUpdate {
    let text = trim_end(buf_to_str(buf));
    let system_default = String::from(DEFAULT_SYS_FILTER_MESSAGE);
    if events.is_empty() {
        // Linux checks for events first, before "0".
        return SubsystemFilterUpdate {
            events: Vec::new(),
            event_failures: Vec::new(),
            system_text: system_default,
            result: Err(Errno::ENODEV),
        };
    }
    if text.trim_start_matches(is_space_char) == "0" {
        return SubsystemFilterUpdate {
            events: events.iter().map(|_| None).collect(),
            event_failures: Vec::new(),
            system_text: system_default,
            result: Ok(()),
        };
    }
    let mut out = Vec::with_capacity(events.len());
    let mut failures = Vec::new();
    for fields in events {
        match EventFilter::compile(&text, fields, env) {
            Ok(f) => out.push(Some(f)),
            Err(e) => {
                let err = CmdError::new(e.errno, msg::BAD_SUBSYS_FILTER, 0);
                out.push(Some(EventFilter::failed(&text, &err)));
                failures.push(FilterFailure {
                    err,
                    command: text.clone(),
                });
            }
        }
    }
    SubsystemFilterUpdate {
        events: out,
        event_failures: failures,
        system_text: system_default,
        result: Ok(()),
    }
}

fn until_nul(s: &str) -> &str {
    match s.find('\0') {
        Some(n) => s.get(..n).unwrap_or(s),
        None => s,
    }
}

/// The written bytes as text: up to the first NUL, invalid UTF-8 replaced
/// byte by byte (such bytes can never be part of a valid filter).
pub(crate) fn buf_to_str(buf: &[u8]) -> String {
    let buf = match buf.iter().position(|&b| b == 0) {
        Some(n) => buf.get(..n).unwrap_or(buf),
        None => buf,
    };
    match core::str::from_utf8(buf) {
        Ok(s) => String::from(s),
        // Keep one byte per byte so that positions stay those of the
        // user's buffer.
        Err(_) => buf
            .iter()
            .map(|&b| if b.is_ascii() { char::from(b) } else { '?' })
            .collect(),
    }
}

/// C's `isspace()` in the kernel's ctype: space, \t \n \v \f \r.
pub(crate) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_space_char(c: char) -> bool {
    u8::try_from(c).is_ok_and(is_space)
}

pub(crate) fn trim_end(s: String) -> String {
    let t = s.trim_end_matches(is_space_char);
    String::from(t)
}

/// Byte `i` of a NUL-terminated view of `s`.
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

fn err(errno: Errno, m: &'static str, pos: usize) -> CmdError {
    CmdError::new(errno, m, pos)
}

/// Linux's `calc_stack()`: counts predicates and the deepest nesting, and
/// finds unbalanced parentheses and quotes before anything is parsed.
fn calc_stack(s: &[u8]) -> Result<(usize, usize), CmdError> {
    let mut is_pred = false;
    let mut nr_preds = 0usize;
    let mut open = 1usize;
    let mut max_open = 1usize;
    let mut quote = 0u8;
    let mut last_quote = 0usize;
    let mut i = 0usize;
    while at(s, i) != 0 {
        let c = at(s, i);
        i += 1;
        if is_space(c) {
            continue;
        }
        if quote != 0 {
            if c == quote {
                quote = 0;
            }
            continue;
        }
        match c {
            b'\'' | b'"' => {
                quote = c;
                last_quote = i - 1;
            }
            b'|' | b'&' if at(s, i) == c => {
                is_pred = false;
                continue;
            }
            b'(' => {
                is_pred = false;
                open += 1;
                max_open = max_open.max(open);
                continue;
            }
            b')' => {
                is_pred = false;
                if open == 1 {
                    // Linux returns -1 here: EPERM.
                    return Err(err(Errno::EPERM, msg::TOO_MANY_CLOSE, i - 1));
                }
                open -= 1;
                continue;
            }
            _ => {}
        }
        if !is_pred {
            nr_preds += 1;
            is_pred = true;
        }
    }
    if quote != 0 {
        // -3: ESRCH.
        return Err(err(Errno::ESRCH, msg::MISSING_QUOTE, last_quote));
    }
    if open != 1 {
        // Find the '(' left open, scanning back (Linux's loop stops
        // before index 0, and then blames index 0).
        let level_target = open;
        let mut level = open;
        let mut quote = 0u8;
        // Linux scans from the last character down to index 1.
        let mut j = i;
        while j > 1 {
            j -= 1;
            let c = at(s, j);
            if quote != 0 {
                if c == quote {
                    quote = 0;
                }
                continue;
            }
            match c {
                b'(' => {
                    if level == level_target {
                        // -2: ENOENT.
                        return Err(err(Errno::ENOENT, msg::TOO_MANY_OPEN, j));
                    }
                    level -= 1;
                }
                b')' => level += 1,
                b'\'' | b'"' => quote = c,
                _ => {}
            }
        }
        return Err(err(Errno::ENOENT, msg::TOO_MANY_OPEN, 0));
    }
    Ok((max_open, nr_preds))
}

/// Linux's `process_preds()`.
fn process_preds(s: &[u8], fields: &[EventField<'_>], env: &FilterEnv<'_>) -> Result<Program, CmdError> {
    let (nr_parens, nr_preds) = calc_stack(s)?;
    if nr_preds == 0 {
        return Err(err(Errno::EINVAL, msg::ERRNO, 0));
    }
    predicate_parse(s, nr_parens, nr_preds, fields, env)
}

const INVERT: u8 = 1;
const PROCESS_AND: u8 = 2;
const PROCESS_OR: u8 = 4;

/// Linux's `update_preds()`, on targets stored as `Option` for -1.
fn update_preds(targets: &mut [isize], whens: &mut [bool], n: usize, invert: bool) {
    let t = targets.get(n).copied().unwrap_or(-1);
    let Ok(tu) = usize::try_from(t) else {
        return;
    };
    let s = targets.get(tu).copied().unwrap_or(-1);
    if let Some(w) = whens.get_mut(tu) {
        *w = invert;
    }
    if let Some(x) = targets.get_mut(tu) {
        *x = n as isize;
    }
    if let Some(x) = targets.get_mut(n) {
        *x = s;
    }
}

/// Linux's `predicate_parse()`: the first pass builds branch targets from
/// `&&`, `||`, `!` and parentheses; the second shortens chains of equal
/// branches; the third folds each predicate's inversion into its branch
/// condition.
fn predicate_parse(
    s: &[u8],
    nr_parens: usize,
    nr_preds: usize,
    fields: &[EventField<'_>],
    env: &FilterEnv<'_>,
) -> Result<Program, CmdError> {
    let mut preds: Vec<Pred> = Vec::with_capacity(nr_preds);
    // Entries N and N+1 are TRUE and FALSE.
    let mut targets: Vec<isize> = alloc::vec![0; nr_preds + 2];
    let mut whens: Vec<bool> = alloc::vec![false; nr_preds + 2];
    let mut inverts: Vec<bool> = alloc::vec![false; nr_preds + 2];
    let mut stack: Vec<u8> = alloc::vec![0; nr_parens.max(1)];
    let mut top = 0usize;
    let mut invert = false;
    let mut n = 0usize;
    let mut ptr = 0usize;

    // The stack top's flags.
    macro_rules! top {
        () => {
            stack.get(top).copied().unwrap_or(0)
        };
    }
    macro_rules! set_top {
        ($v:expr) => {
            let v = $v;
            if let Some(t) = stack.get_mut(top) {
                *t = v;
            }
        };
    }

    let mut done = false;
    'outer: while at(s, ptr) != 0 {
        let next = ptr;
        ptr += 1;
        let c = at(s, next);
        if is_space(c) {
            continue;
        }
        match c {
            b'(' => {
                if top + 1 >= nr_parens {
                    return Err(err(Errno::EINVAL, msg::ERRNO, 0));
                }
                top += 1;
                set_top!(u8::from(invert));
                continue;
            }
            b'!' if !matches!(at(s, next + 1), b'=' | b'~') => {
                invert = !invert;
                continue;
            }
            _ => {}
        }
        if n >= nr_preds {
            // Only reachable after a predicate, when Linux's code is -1.
            return Err(err(Errno::EPERM, msg::TOO_MANY_PREDS, next));
        }
        if let Some(x) = inverts.get_mut(n) {
            *x = invert;
        }
        if let Some(x) = targets.get_mut(n) {
            *x = n as isize - 1;
        }
        let (pred, len) = parse_pred(s, next, ptr, fields, env)?;
        preds.push(pred);
        ptr = next + len;
        n += 1;

        loop {
            let next = ptr;
            ptr += 1;
            let c = at(s, next);
            if is_space(c) {
                continue;
            }
            match c {
                b')' | 0 => {}
                b'&' | b'|' if at(s, next + 1) == c => ptr += 1,
                // Linux returns -1 here: EPERM.
                _ => return Err(err(Errno::EPERM, msg::TOO_MANY_PREDS, next)),
            }
            invert = top!() & INVERT != 0;
            if top!() & PROCESS_AND != 0 {
                update_preds(&mut targets, &mut whens, n - 1, invert);
                set_top!(top!() & !PROCESS_AND);
            }
            if c == b'&' {
                set_top!(top!() | PROCESS_AND);
                break;
            }
            if top!() & PROCESS_OR != 0 {
                update_preds(&mut targets, &mut whens, n - 1, !invert);
                set_top!(top!() & !PROCESS_OR);
            }
            if c == b'|' {
                set_top!(top!() | PROCESS_OR);
                break;
            }
            if c == 0 {
                done = true;
                break 'outer;
            }
            if top == 0 {
                return Err(err(Errno::EPERM, msg::TOO_MANY_CLOSE, ptr));
            }
            top -= 1;
        }
    }
    if !done && n != 0 {
        return Err(err(Errno::EINVAL, msg::INVALID_FILTER, ptr));
    }
    if top != 0 {
        // Linux sets the message but returns the last code it had: for a
        // complete expression that is -1 (EPERM); with no predicate at all
        // it is still -EINVAL.
        let errno = if n == 0 { Errno::EINVAL } else { Errno::EPERM };
        return Err(err(errno, msg::TOO_MANY_OPEN, ptr));
    }
    if n == 0 {
        return Err(err(Errno::EINVAL, msg::NO_FILTER, ptr));
    }

    if let Some(x) = targets.get_mut(n) {
        *x = 1;
    }
    if let Some(x) = targets.get_mut(n + 1) {
        *x = 0;
    }
    if let Some(x) = targets.get_mut(n - 1) {
        *x = n as isize;
    }
    if let Some(x) = whens.get_mut(n - 1) {
        *x = false;
    }
    // Second pass, from entry N-2 down to 0.
    let mut i = n - 1;
    while i > 0 {
        i -= 1;
        let t = targets.get(i).copied().unwrap_or(0);
        let tu = usize::try_from(t).unwrap_or(0);
        if whens.get(i) == whens.get(tu) {
            let tt = targets.get(tu).copied().unwrap_or(0);
            if let Some(x) = targets.get_mut(i) {
                *x = tt;
            }
        }
    }
    // Third pass.
    let mut entries = Vec::with_capacity(n);
    for (i, pred) in preds.into_iter().enumerate() {
        let inv = inverts.get(i).copied().unwrap_or(false);
        let when = whens.get(i).copied().unwrap_or(false) ^ inv;
        let t = targets.get(i).copied().unwrap_or(0);
        // The program must always move forward (Linux WARNs and fails).
        let target = match usize::try_from(t) {
            Ok(t) if t > i => t,
            _ => return Err(err(Errno::EINVAL, msg::ERRNO, 0)),
        };
        entries.push(ProgEntry {
            target,
            when_to_branch: when,
            pred,
        });
    }
    Ok(Program { entries, n })
}

fn new_pred(field: &FieldRef, op: Op) -> Pred {
    Pred {
        func: PredFn::Nop,
        op,
        not: false,
        offset: field.offset,
        val: 0,
        val2: 0,
        regex: None,
        mask: None,
    }
}

/// Linux's `select_comparison_fn()`.
fn select_comparison_fn(op: Op, size: u32, signed: bool) -> PredFn {
    let size = match size {
        1 | 2 | 4 | 8 => size as u8,
        _ => return PredFn::Nop,
    };
    match op {
        Op::Eq | Op::Ne => PredFn::Equal { size },
        Op::Glob => PredFn::Nop,
        _ => PredFn::Compare { size, signed },
    }
}

/// Linux's `filter_parse_regex()` for `~`: a leading `!` negates; a
/// leading digit means a full match; `*` at either end or both selects an
/// end, front or middle match; any other metacharacter a full glob.
fn parse_glob_operand(pat: &[u8]) -> (Vec<u8>, MatchType, bool) {
    let (not, buff) = match pat.split_first() {
        Some((b'!', rest)) => (true, rest),
        _ => (false, pat),
    };
    if at(buff, 0).is_ascii_digit() {
        return (buff.to_vec(), MatchType::Full, not);
    }
    let len = buff.len();
    let mut kind = MatchType::Full;
    let mut cut = len;
    for (i, &c) in buff.iter().enumerate() {
        if c == b'*' {
            if i == 0 {
                kind = MatchType::EndOnly;
            } else if i == len - 1 {
                kind = if kind == MatchType::EndOnly {
                    MatchType::MiddleOnly
                } else {
                    MatchType::FrontOnly
                };
                cut = i;
                break;
            } else {
                return (buff.to_vec(), MatchType::Glob, not);
            }
        } else if matches!(c, b'[' | b'?' | b'\\') {
            return (buff.to_vec(), MatchType::Glob, not);
        }
    }
    let start = usize::from(at(buff, 0) == b'*');
    let search = buff.get(start..cut.max(start)).unwrap_or(&[]);
    (search.to_vec(), kind, not)
}

/// Linux's `parse_pred()`: parses the predicate starting at `s[start]`;
/// `pos` is Linux's base for error positions (one past `start`). Returns
/// the predicate and the bytes it took.
fn parse_pred(
    s: &[u8],
    start: usize,
    pos: usize,
    fields: &[EventField<'_>],
    env: &FilterEnv<'_>,
) -> Result<(Pred, usize), CmdError> {
    let str_ = s.get(start..).unwrap_or(&[]);
    let c = |i: usize| at(str_, i);
    let mut i = 0usize;
    while is_space(c(i)) {
        i += 1;
    }
    let name_start = i;
    while c(i).is_ascii_alphanumeric() || c(i) == b'_' {
        i += 1;
    }
    if i == name_start {
        // Linux returns -1 without a message: EPERM, "Error".
        return Err(err(Errno::EPERM, msg::ERRNO, 0));
    }
    let name = str_.get(name_start..i).unwrap_or(&[]);
    let Some(field) = find_field(fields, name) else {
        return Err(err(Errno::EINVAL, msg::FIELD_NOT_FOUND, pos + i));
    };
    let rest = |i: usize| str_.get(i..).unwrap_or(&[]);
    let mut ustring = false;
    let mut function = false;
    if rest(i).starts_with(b".ustring") {
        ustring = true;
        i += 8;
    }
    if rest(i).starts_with(b".function") {
        function = true;
        i += 9;
    }
    while is_space(c(i)) {
        i += 1;
    }
    let Some(&(op_text, op)) = OPS.iter().find(|(t, _)| rest(i).starts_with(t)) else {
        return Err(err(Errno::EINVAL, msg::INVALID_OP, pos + i));
    };
    i += op_text.len();
    while is_space(c(i)) {
        i += 1;
    }
    let s0 = i;
    let mut pred = new_pred(&field, op);
    let einval = |m: &'static str, p: usize| Err(err(Errno::EINVAL, m, p));

    if function {
        if field.size != 8 {
            return einval(msg::ILLEGAL_FIELD_OP, pos + i);
        }
        if !matches!(op, Op::Eq | Op::Ne) {
            return einval(msg::INVALID_OP, pos + i);
        }
        let ip = if c(i).is_ascii_digit() {
            while c(i).is_ascii_alphanumeric() {
                i += 1;
            }
            if i - s0 >= 24 {
                return einval(msg::OPERAND_TOO_LONG, pos + i);
            }
            match kstrtoul(str_.get(s0..i).unwrap_or(&[]), 0) {
                Ok(v) => v,
                Err(_) => return einval(msg::INVALID_VALUE, pos + i),
            }
        } else {
            while c(i) != 0 && !is_space(c(i)) {
                i += 1;
            }
            let name = core::str::from_utf8(str_.get(s0..i).unwrap_or(&[])).unwrap_or("");
            match env.symbols.lookup_name(name) {
                Some(a) if a != 0 => a,
                _ => return einval(msg::NO_FUNCTION, pos + i),
            }
        };
        let Some((size, offset)) = env.symbols.lookup_size_offset(ip) else {
            return einval(msg::NO_FUNCTION, pos + i);
        };
        pred.func = PredFn::Function;
        pred.val = ip.wrapping_sub(offset);
        pred.val2 = pred.val.wrapping_add(size);
    } else if rest(i).starts_with(b"CPUS") {
        if !matches!(field.ftype, FilterType::Cpu | FilterType::Other) {
            return einval(msg::ILLEGAL_FIELD_OP, pos + i);
        }
        if !matches!(op, Op::Eq | Op::Ne | Op::Band) {
            return einval(msg::ILLEGAL_FIELD_OP, pos + i);
        }
        i += 4;
        let brace = c(i);
        i += 1;
        if brace != b'{' {
            return einval(msg::MISSING_BRACE_OPEN, pos + i);
        }
        let mask_start = i;
        while c(i) != 0 && c(i) != b'}' {
            i += 1;
        }
        if c(i) != b'}' {
            return einval(msg::MISSING_BRACE_CLOSE, pos + i);
        }
        if mask_start == i {
            return einval(msg::INVALID_CPULIST, pos + i);
        }
        let Some(mask) = CpuMask::parse_list(str_.get(mask_start..i).unwrap_or(&[]), env.nr_cpu_ids) else {
            return einval(msg::INVALID_CPULIST, pos + i);
        };
        i += 1;
        // A mask of one CPU is compared as a number.
        let single = mask.weight() == 1;
        if single {
            pred.val = u64::from(mask.first().unwrap_or(0));
        } else {
            pred.mask = Some(mask);
        }
        if field.ftype == FilterType::Cpu {
            if single {
                if pred.op == Op::Band {
                    pred.op = Op::Eq;
                }
                pred.func = PredFn::Cpu;
            } else {
                pred.func = PredFn::CpuCpumask;
            }
        } else if single {
            if pred.op == Op::Band {
                pred.op = Op::Eq;
            }
            pred.func = select_comparison_fn(pred.op, field.size, false);
            if pred.op == Op::Ne {
                pred.not = true;
            }
        } else {
            pred.func = match field.size {
                1 | 2 | 4 | 8 => PredFn::ScalarCpumask { size: field.size as u8 },
                _ => PredFn::Nop,
            };
            // A field value at or above nr_cpu_ids is no CPU: never matches.
            pred.val2 = u64::from(env.nr_cpu_ids);
        }
    } else if c(i) == b'\'' || c(i) == b'"' {
        let q = c(i);
        match op {
            Op::Ne => pred.not = true,
            Op::Glob | Op::Eq => {}
            _ => return einval(msg::ILLEGAL_FIELD_OP, pos + i),
        }
        if !field.ftype.is_string() {
            return einval(msg::EXPECT_DIGIT, pos + i);
        }
        i += 1;
        while c(i) != 0 && c(i) != q {
            i += 1;
        }
        if c(i) == 0 {
            return einval(msg::MISSING_QUOTE, pos + i);
        }
        let body = str_.get(s0 + 1..i).unwrap_or(&[]);
        if body.len() >= MAX_FILTER_STR_VAL {
            return einval(msg::OPERAND_TOO_LONG, pos + i);
        }
        let (pattern, kind) = if op == Op::Glob {
            let (p, k, not) = parse_glob_operand(body);
            pred.not = not;
            (p, k)
        } else {
            (body.to_vec(), MatchType::Full)
        };
        pred.regex = Some(Regex { pattern, kind });
        pred.func = match field.ftype {
            FilterType::Comm => PredFn::Comm,
            FilterType::StaticString => PredFn::StaticString { len: field.size },
            FilterType::DynString => PredFn::DynString,
            FilterType::RelDynString => PredFn::RelDynString,
            _ => PredFn::PtrString { user: ustring },
        };
        i += 1;
    } else if c(i).is_ascii_digit() || c(i) == b'-' {
        if field.ftype.is_string() {
            return einval(msg::EXPECT_STRING, pos + i);
        }
        if op == Op::Glob {
            return einval(msg::ILLEGAL_FIELD_OP, pos + i);
        }
        if c(i) == b'-' {
            i += 1;
        }
        while c(i).is_ascii_alphanumeric() {
            i += 1;
        }
        if i - s0 >= 24 {
            return einval(msg::OPERAND_TOO_LONG, pos + i);
        }
        let num = str_.get(s0..i).unwrap_or(&[]);
        let val = if field.is_signed {
            kstrtoll(num, 0).map(|v| v as u64)
        } else {
            kstrtoull(num, 0)
        };
        let Ok(val) = val else {
            return einval(msg::ILLEGAL_INTVAL, pos + s0);
        };
        pred.val = val;
        if field.ftype == FilterType::Cpu {
            pred.func = PredFn::Cpu;
        } else {
            pred.func = select_comparison_fn(op, field.size, field.is_signed);
            if op == Op::Ne {
                pred.not = true;
            }
        }
    } else {
        return einval(msg::INVALID_VALUE, pos + i);
    }
    Ok((pred, i))
}

// ---------------------------------------------------------------- evaluation

fn read_uint(rec: &[u8], offset: u32, size: u8) -> Option<u64> {
    let off = usize::try_from(offset).ok()?;
    let bytes = rec.get(off..off.checked_add(usize::from(size))?)?;
    let mut v = [0u8; 8];
    v.get_mut(..bytes.len())?.copy_from_slice(bytes);
    Some(u64::from_le_bytes(v))
}

fn sign_extend(v: u64, size: u8) -> i64 {
    match size {
        1 => i64::from(v as u8 as i8),
        2 => i64::from(v as u16 as i16),
        4 => i64::from(v as u32 as i32),
        _ => v as i64,
    }
}

fn truncate(v: u64, size: u8) -> u64 {
    match size {
        1 => v & 0xff,
        2 => v & 0xffff,
        4 => v & 0xffff_ffff,
        _ => v,
    }
}

fn compare<T: PartialOrd + Copy>(op: Op, a: T, b: T, band: impl Fn(T, T) -> bool) -> bool {
    match op {
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
        Op::Band => band(a, b),
        _ => false,
    }
}

/// `do_filter_scalar_cpumask()`: a mask of two or more CPUs never equals
/// one CPU.
fn scalar_in_mask(op: Op, cpu: u32, mask: Option<&CpuMask>) -> bool {
    match op {
        Op::Eq => false,
        Op::Ne => true,
        Op::Band => mask.is_some_and(|m| m.test(cpu)),
        _ => false,
    }
}

fn pred_match<C: FilterContext + ?Sized>(p: &Pred, rec: &[u8], ctx: &mut C) -> bool {
    match p.func {
        PredFn::Nop => false,
        PredFn::Equal { size } => match read_uint(rec, p.offset, size) {
            Some(v) => (v == truncate(p.val, size)) ^ p.not,
            None => false,
        },
        PredFn::Compare { size, signed } => {
            let Some(v) = read_uint(rec, p.offset, size) else {
                return false;
            };
            if signed {
                compare(p.op, sign_extend(v, size), sign_extend(p.val, size), |a, b| a & b != 0)
            } else {
                compare(p.op, v, truncate(p.val, size), |a, b| a & b != 0)
            }
        }
        PredFn::ScalarCpumask { size } => {
            let Some(v) = read_uint(rec, p.offset, size) else {
                return false;
            };
            // Linux reads the field into an unsigned int.
            let cpu = v as u32;
            if u64::from(cpu) >= p.val2 {
                return false;
            }
            scalar_in_mask(p.op, cpu, p.mask.as_ref())
        }
        PredFn::Cpu => {
            let cpu = ctx.cpu() as i32;
            let cmp = p.val as i32;
            match p.op {
                Op::Eq => cpu == cmp,
                Op::Ne => cpu != cmp,
                Op::Lt => cpu < cmp,
                Op::Le => cpu <= cmp,
                Op::Gt => cpu > cmp,
                Op::Ge => cpu >= cmp,
                _ => false,
            }
        }
        PredFn::CpuCpumask => scalar_in_mask(p.op, ctx.cpu(), p.mask.as_ref()),
        PredFn::Function => match read_uint(rec, p.offset, 8) {
            Some(addr) => {
                let inside = addr >= p.val && addr < p.val2;
                if p.op == Op::Eq {
                    inside
                } else {
                    !inside
                }
            }
            None => false,
        },
        PredFn::Comm => {
            let comm = ctx.comm();
            regex_match(p, comm, TASK_COMM_LEN)
        }
        PredFn::StaticString { len } => {
            let off = p.offset as usize;
            let view = rec.get(off..).unwrap_or(&[]);
            if view.is_empty() {
                return false;
            }
            regex_match(p, view, len as usize)
        }
        PredFn::DynString | PredFn::RelDynString => {
            let Some(item) = read_uint(rec, p.offset, 4) else {
                return false;
            };
            let loc = (item & 0xffff) as usize;
            let len = (item >> 16) as usize & 0xffff;
            let base = if p.func == PredFn::RelDynString {
                p.offset as usize + 4
            } else {
                0
            };
            let view = rec.get(base + loc..).unwrap_or(&[]);
            regex_match(p, view, len)
        }
        PredFn::PtrString { user } => {
            let Some(addr) = read_uint(rec, p.offset, 8) else {
                return false;
            };
            let Some(s) = ctx.fetch_string(addr, user) else {
                return false;
            };
            let s = match s.iter().position(|&b| b == 0) {
                Some(n) => s.get(..n).unwrap_or(s),
                None => s,
            };
            let s = s.get(..USTRING_BUF_SIZE - 1).unwrap_or(s);
            let len = s.len() + 1;
            regex_match(p, s, len)
        }
    }
}

/// The string comparisons (Linux's `regex_match_*`) on `s` as C sees it:
/// bytes past the end of `s` read as NUL. `len` is the size Linux passes
/// (field size, `__data_loc` length with its NUL, or strlen+1).
fn regex_match(p: &Pred, s: &[u8], len: usize) -> bool {
    let Some(r) = &p.regex else {
        return false;
    };
    let pat = r.pattern.as_slice();
    let rlen = pat.len();
    let sc = |i: usize| at(s, i);
    let m = match r.kind {
        MatchType::Full => {
            if len == 0 {
                strncmp(s, pat, usize::MAX)
            } else if len < rlen {
                false
            } else {
                strncmp(s, pat, len)
            }
        }
        MatchType::FrontOnly => {
            if len != 0 && len < rlen {
                false
            } else {
                strncmp(s, pat, rlen)
            }
        }
        MatchType::MiddleOnly => {
            if len == 0 {
                // strstr on C strings.
                let n = s.iter().position(|&b| b == 0).unwrap_or(s.len());
                let hay = s.get(..n).unwrap_or(s);
                rlen == 0 || hay.windows(rlen).any(|w| w == pat)
            } else {
                // Linux's strnstr compares raw bytes, NULs included.
                if rlen == 0 {
                    true
                } else {
                    let mut remaining = len;
                    let mut k = 0usize;
                    let mut found = false;
                    while remaining >= rlen {
                        remaining -= 1;
                        if (0..rlen).all(|j| sc(k + j) == at(pat, j)) {
                            found = true;
                            break;
                        }
                        k += 1;
                    }
                    found
                }
            }
        }
        MatchType::EndOnly => {
            // Linux takes the string to be len-1 bytes long: for a
            // fixed-size array that is the array, not the text in it.
            match len.checked_sub(1) {
                Some(strlen) if strlen >= rlen => (0..rlen).all(|j| sc(strlen - rlen + j) == at(pat, j)),
                _ => false,
            }
        }
        MatchType::Glob => glob_match_len(pat, s, len),
    };
    m ^ p.not
}

/// `strncmp(a, b, n) == 0` on NUL-terminated views.
fn strncmp(a: &[u8], b: &[u8], n: usize) -> bool {
    let mut k = 0usize;
    while k < n {
        let x = at(a, k);
        let y = at(b, k);
        if x != y {
            return false;
        }
        if x == 0 {
            return true;
        }
        k += 1;
    }
    true
}
