//! The fields of a hist trigger (Linux's `struct hist_field`): what a key,
//! a value or a variable reads from a record, parsed as
//! trace_events_hist.c's `parse_expr`/`parse_atom`/`parse_field` do, and
//! evaluated without allocating.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use trace_filter::kstrto::{kstrtoul, kstrtoull};
use trace_filter::{EventField, FieldKind, FilterContext, COMMON_FIELDS};
use uapi::Errno;

use crate::{HistErr, HistError, MAX_FILTER_STR_VAL};

/// Linux's `HIST_DIV_SHIFT`: division by a small constant is a multiply
/// and a shift, exact below `1 << HIST_DIV_SHIFT` within one.
const HIST_DIV_SHIFT: u32 = 20;

/// What the hit path needs besides the record: the event's time, its CPU
/// and task (from [`FilterContext`]), and the kernel stack.
pub trait HistContext: FilterContext {
    /// The event's timestamp in nanoseconds of the trace clock.
    fn timestamp_ns(&self) -> u64;
    /// Writes the kernel return addresses of the current stack (the
    /// event's caller first) into `out`; returns how many.
    fn save_stack(&mut self, out: &mut [u64]) -> usize;
    /// Takes a snapshot of the trace buffer (an `onmax`/`onchange`
    /// `snapshot()` action; Linux's `tracing_snapshot_cond`).
    fn snapshot(&mut self);
}

/// A field's modifier (`.hex`, ...): Linux's `HIST_FIELD_FL_*` display
/// flags. One per field, as Linux parses one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modifier {
    /// None.
    None,
    /// `.hex`.
    Hex,
    /// `.sym`.
    Sym,
    /// `.sym-offset`.
    SymOffset,
    /// `.execname` (`common_pid` only).
    Execname,
    /// `.syscall`.
    Syscall,
    /// `.log2`.
    Log2,
    /// `.buckets=N` (or `.bucket=N`).
    Buckets(u64),
    /// `.usecs`.
    Usecs,
    /// `.percent` (values only).
    Percent,
    /// `.graph` (values only).
    Graph,
    /// `.stacktrace`.
    Stacktrace,
}

impl Modifier {
    /// The name `get_hist_field_flags` prints.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Modifier::None => return None,
            Modifier::Hex => "hex",
            Modifier::Sym => "sym",
            Modifier::SymOffset => "sym-offset",
            Modifier::Execname => "execname",
            Modifier::Syscall => "syscall",
            Modifier::Log2 => "log2",
            Modifier::Buckets(_) => "buckets",
            Modifier::Usecs => "usecs",
            Modifier::Percent => "percent",
            Modifier::Graph => "graph",
            Modifier::Stacktrace => "stacktrace",
        })
    }
}

/// An arithmetic operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `a+b`.
    Plus,
    /// `a-b`.
    Minus,
    /// `a*b`.
    Mult,
    /// `a/b`.
    Div,
    /// `-(a)`.
    UnaryMinus,
}

/// What a field reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `hitcount`: 1 per hit.
    Hitcount,
    /// A numeric literal, or an expression of literals folded into one.
    Const(u64),
    /// One of the event's fields (or a common field).
    Field {
        /// Its name.
        name: String,
        /// Byte offset in the record.
        offset: u32,
        /// Size in bytes.
        size: u32,
        /// Signed?
        signed: bool,
        /// How its bytes are read.
        kind: FieldKind,
    },
    /// `common_timestamp`.
    Timestamp,
    /// `common_cpu` (or `cpu`, `CPU`).
    Cpu,
    /// `common_stacktrace` (or `stacktrace`): the kernel stack as a key.
    Stacktrace,
    /// A reference to a variable (`$name`, or `system.event.$name`):
    /// its value is resolved per hit into the trigger's reference values
    /// (Linux's `HIST_FIELD_FL_VAR_REF`).
    VarRef {
        /// Index in the trigger's references.
        idx: usize,
        /// The variable's name.
        name: String,
        /// `system.event` when the reference was written qualified.
        qualified: Option<String>,
    },
    /// An expression of other fields.
    Expr {
        /// The operator.
        op: Op,
        /// Its operands (one for [`Op::UnaryMinus`]).
        operands: Box<(HistField, Option<HistField>)>,
        /// Its text as Linux's `expr_str` renders it.
        text: String,
        /// For a division by a constant: Linux's precomputed divisor path.
        div: DivBy,
    },
}

/// How a division is done (Linux's `hist_field_get_div_fn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DivBy {
    /// By the right operand's value (-1 when it is 0).
    Operand,
    /// By a constant power of two: a shift.
    Power2(u32),
    /// By a constant above `1 << 20`.
    Constant(u64),
    /// By a smaller constant: `(x * mult + (1 << 20) - 1) >> 20` for
    /// `x < 1 << 20`.
    MultShift(u64, u64),
}

/// One key, value or variable of a hist trigger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistField {
    /// What it reads.
    pub src: Source,
    /// Its display modifier.
    pub modifier: Modifier,
    /// `name=` for a variable.
    pub var_name: Option<String>,
    /// Linux's `HIST_FIELD_FL_TIMESTAMP_USECS` as carried into
    /// expressions (an expression takes its first operand's).
    pub usecs: bool,
    /// Bytes it takes in a key (before rounding up to 8).
    pub size: u32,
    /// Signed (for sorting keys).
    pub is_signed: bool,
    /// A string (a string field; never an operand).
    pub is_string: bool,
    /// Its C type, as Linux's `hist_field->type` (compared with a
    /// synthetic event field's).
    pub type_name: String,
    /// A stack trace (`common_stacktrace`, or a reference to one).
    pub is_stack: bool,
}

impl HistField {
    fn new(src: Source, size: u32, is_signed: bool) -> HistField {
        let type_name = String::from(match &src {
            Source::Cpu => "unsigned int",
            Source::Stacktrace => "unsigned long[]",
            Source::Field { .. } | Source::Expr { .. } | Source::VarRef { .. } => default_type(size, is_signed),
            _ => "u64",
        });
        HistField {
            is_stack: matches!(src, Source::Stacktrace),
            type_name,
            src,
            modifier: Modifier::None,
            var_name: None,
            usecs: false,
            size,
            is_signed,
            is_string: false,
        }
    }

    /// A `hitcount` field.
    pub fn hitcount() -> HistField {
        HistField::new(Source::Hitcount, 8, false)
    }

    /// A `common_stacktrace` key.
    pub fn stacktrace() -> HistField {
        HistField::new(Source::Stacktrace, (crate::HIST_STACKTRACE_DEPTH as u32) * 8, false)
    }

    /// Linux's `hist_field_name`: the name sort keys are matched against
    /// and keys are shown with.
    pub fn name(&self) -> &str {
        match &self.src {
            Source::Field { name, .. } => name,
            Source::Cpu => "common_cpu",
            Source::Expr { text, .. } => text,
            Source::Timestamp => "common_timestamp",
            Source::Stacktrace => "common_stacktrace",
            Source::Hitcount => "hitcount",
            Source::Const(_) => "",
            Source::VarRef { name, .. } => name,
        }
    }

    /// The name with a qualified reference's `system.event.$` (Linux's
    /// `hist_field_name` for a `VAR_REF` with a system).
    fn full_name(&self) -> String {
        match &self.src {
            Source::VarRef {
                name,
                qualified: Some(q),
                ..
            } => alloc::format!("{q}.${name}"),
            _ => String::from(self.name()),
        }
    }

    /// Is it a variable reference?
    pub fn is_var_ref(&self) -> bool {
        matches!(self.src, Source::VarRef { .. })
    }

    /// Appends the field as the trigger's line shows it (Linux's
    /// `hist_field_print`).
    pub fn print(&self, out: &mut String) {
        if let Some(v) = &self.var_name {
            let _ = write!(out, "{v}=");
        }
        match &self.src {
            Source::Cpu => out.push_str("common_cpu"),
            Source::Const(c) => {
                let _ = write!(out, "{c}");
            }
            Source::VarRef {
                qualified: None, name, ..
            } => {
                let _ = write!(out, "${name}");
            }
            _ => out.push_str(&self.full_name()),
        }
        let is_expr = matches!(self.src, Source::Expr { .. } | Source::VarRef { .. });
        if !is_expr && !matches!(self.src, Source::Stacktrace) && self.modifier != Modifier::Stacktrace {
            if let Some(m) = self.modifier.name() {
                let _ = write!(out, ".{m}");
            }
        }
        if let Modifier::Buckets(n) = self.modifier {
            let _ = write!(out, "={n}");
        }
    }

    /// Linux's `expr_field_str`: an operand inside an expression's text.
    pub(crate) fn expr_operand_str(&self, out: &mut String) {
        match self.src {
            Source::Const(c) => {
                let _ = write!(out, "{c}");
            }
            Source::VarRef { qualified: None, .. } => out.push('$'),
            _ => {}
        }
        out.push_str(&self.full_name());
        if !matches!(self.src, Source::Expr { .. } | Source::VarRef { .. }) {
            if let Some(m) = self.modifier.name() {
                let _ = write!(out, ".{m}");
            }
        }
    }

    /// Is the field a plain event field, with a string's bytes?
    pub fn string_field(&self) -> Option<(u32, u32, FieldKind)> {
        match &self.src {
            Source::Field { offset, size, kind, .. } if self.is_string => Some((*offset, *size, *kind)),
            _ => None,
        }
    }

    /// The field's numeric value for this record (Linux's `hist_fn_call`).
    /// `ts_in_usecs` is the trigger's: any `common_timestamp.usecs` in it
    /// makes every timestamp microseconds. `refs` are the values of the
    /// trigger's variable references, resolved for this hit.
    #[inline]
    pub fn value<C: HistContext + ?Sized>(&self, rec: &[u8], ctx: &C, ts_in_usecs: bool, refs: &[u64]) -> u64 {
        // The usual ones, a number of the record and the hit count, read
        // here, in the caller; the others take the general path.
        let plain = !matches!(self.modifier, Modifier::Log2 | Modifier::Buckets(_));
        match &self.src {
            Source::Hitcount if plain => 1,
            Source::Field {
                offset, size, signed, ..
            } if plain && !self.is_string => read_num(rec, *offset, *size, *signed),
            _ => self.value_any(rec, ctx, ts_in_usecs, refs),
        }
    }

    /// [`HistField::value`] for any field.
    fn value_any<C: HistContext + ?Sized>(&self, rec: &[u8], ctx: &C, ts_in_usecs: bool, refs: &[u64]) -> u64 {
        let v = match &self.src {
            Source::VarRef { idx, .. } => refs.get(*idx).copied().unwrap_or(0),
            Source::Hitcount => 1,
            Source::Const(c) => *c,
            Source::Field {
                offset, size, signed, ..
            } => {
                if self.is_string {
                    0
                } else {
                    read_num(rec, *offset, *size, *signed)
                }
            }
            Source::Timestamp => {
                let ts = ctx.timestamp_ns();
                if ts_in_usecs {
                    ts / 1000
                } else {
                    ts
                }
            }
            Source::Cpu => u64::from(ctx.cpu()),
            Source::Stacktrace => 0,
            Source::Expr { op, operands, div, .. } => {
                let a = operands.0.value(rec, ctx, ts_in_usecs, refs);
                match (op, &operands.1) {
                    (Op::UnaryMinus, _) | (_, None) => a.wrapping_neg(),
                    (Op::Plus, Some(b)) => a.wrapping_add(b.value(rec, ctx, ts_in_usecs, refs)),
                    (Op::Minus, Some(b)) => a.wrapping_sub(b.value(rec, ctx, ts_in_usecs, refs)),
                    (Op::Mult, Some(b)) => a.wrapping_mul(b.value(rec, ctx, ts_in_usecs, refs)),
                    (Op::Div, Some(b)) => match *div {
                        DivBy::Operand => divide(a, b.value(rec, ctx, ts_in_usecs, refs)),
                        DivBy::Power2(shift) => a >> shift,
                        DivBy::Constant(d) => a / d.max(1),
                        DivBy::MultShift(d, mult) => {
                            if a < 1 << HIST_DIV_SHIFT {
                                (a * mult + ((1 << HIST_DIV_SHIFT) - 1)) >> HIST_DIV_SHIFT
                            } else {
                                a / d.max(1)
                            }
                        }
                    },
                }
            }
        };
        match self.modifier {
            Modifier::Log2 => order_base_2(v),
            Modifier::Buckets(n) if n != 0 => (v / n) * n,
            _ => v,
        }
    }
}

/// A C type for a number of `size` bytes, when the event does not say.
fn default_type(size: u32, signed: bool) -> &'static str {
    match (size, signed) {
        (1, false) => "u8",
        (1, true) => "s8",
        (2, false) => "u16",
        (2, true) => "s16",
        (4, false) => "u32",
        (4, true) => "s32",
        (_, true) => "s64",
        _ => "u64",
    }
}

/// The C types of the common fields (Linux's `trace_define_common_fields`).
fn common_field_type(name: &str) -> Option<&'static str> {
    Some(match name {
        "common_type" => "unsigned short",
        "common_flags" | "common_preempt_count" => "unsigned char",
        "common_pid" => "int",
        _ => return None,
    })
}

/// Linux's `hist_field_div` for a divisor known only at run time.
fn divide(a: u64, b: u64) -> u64 {
    if b == 0 {
        u64::MAX
    } else if b.is_power_of_two() {
        a >> b.trailing_zeros()
    } else {
        a / b
    }
}

/// Linux's `order_base_2`: the log2 of `n` rounded up (0 for 0 and 1).
pub fn order_base_2(n: u64) -> u64 {
    if n > 1 {
        u64::from(64 - (n - 1).leading_zeros())
    } else {
        0
    }
}

/// Reads a number of `size` bytes at `offset`, sign-extended if `signed`
/// (0 if the record is too short).
#[inline]
pub fn read_num(rec: &[u8], offset: u32, size: u32, signed: bool) -> u64 {
    let start = offset as usize;
    // The C sizes read as one load each (a copy of a run-time length
    // would be a call and a byte loop on every hit).
    let v = match size {
        8 => rec
            .get(start..start + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes),
        4 => rec
            .get(start..start + 4)
            .and_then(|b| b.try_into().ok())
            .map(|b| u64::from(u32::from_le_bytes(b))),
        2 => rec
            .get(start..start + 2)
            .and_then(|b| b.try_into().ok())
            .map(|b| u64::from(u16::from_le_bytes(b))),
        1 => rec.get(start).map(|b| u64::from(*b)),
        _ => rec.get(start..start + size as usize).map(|b| {
            let mut w = [0u8; 8];
            if let Some(d) = w.get_mut(..b.len()) {
                d.copy_from_slice(b);
            }
            u64::from_le_bytes(w)
        }),
    };
    let Some(v) = v else {
        return 0;
    };
    if signed && (1..8).contains(&size) {
        let shift = 64 - 8 * size;
        (((v << shift) as i64) >> shift) as u64
    } else {
        v
    }
}

/// What parsing a field needs: the event's schema, the command (for
/// error positions), and the trigger's plain variables (`$name` of a
/// variable defined as a field reads that field).
pub(crate) struct ParseEnv<'a> {
    pub fields: &'a [EventField<'a>],
    pub cmd: &'a str,
    pub var_defs: &'a [(String, String)],
    /// The other triggers' variables, synthetic events and this event.
    pub links: &'a crate::vars::HistLinks<'a>,
    /// `onmatch(system.event)` events, where `$var` is looked for first.
    pub match_events: Vec<(String, String)>,
    /// The variable references made so far (Linux's `var_refs`).
    pub refs: Vec<crate::vars::VarRef>,
    /// A "not unique" error met while looking a variable up.
    pub not_unique: Option<uapi::error::CmdError>,
    /// Set when `common_timestamp` is seen (Linux's `enable_timestamps`).
    pub timestamps: bool,
    /// Set when `common_timestamp.usecs` is seen (`ts_in_usecs`).
    pub ts_in_usecs: bool,
}

impl ParseEnv<'_> {
    /// Linux's `errpos`: where `s` first occurs in the command.
    pub fn errpos(&self, s: &str) -> usize {
        // Linux searches the command as written, where `.sym-offset` was
        // not yet rewritten.
        let s = s.replace("symXoffset", "sym-offset");
        self.cmd.find(&s).unwrap_or(0)
    }

    pub fn err(&self, errno: Errno, e: HistErr, at: &str) -> HistError {
        HistError::logged(errno, e, self.errpos(at))
    }
}

/// Key, value or variable: what restricts modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Key,
    Val,
    Var,
}

/// Linux's `contains_operator`: the root operator of `s` and where it is
/// (the rightmost of the lowest precedence, so that evaluation goes left
/// to right).
fn contains_operator(s: &str) -> Option<(Op, usize)> {
    let minus = s.rfind('-');
    if minus == Some(0) {
        return Some((Op::UnaryMinus, 0));
    }
    let plus = s.rfind('+');
    match (plus, minus) {
        (Some(p), Some(m)) => return Some(if p > m { (Op::Plus, p) } else { (Op::Minus, m) }),
        (Some(p), None) => return Some((Op::Plus, p)),
        (None, Some(m)) => return Some((Op::Minus, m)),
        (None, None) => {}
    }
    let div = s.rfind('/');
    let mult = s.rfind('*');
    match (mult, div) {
        (Some(m), Some(d)) => Some(if m > d { (Op::Mult, m) } else { (Op::Div, d) }),
        (Some(m), None) => Some((Op::Mult, m)),
        (None, Some(d)) => Some((Op::Div, d)),
        (None, None) => None,
    }
}

/// Does `s` contain an arithmetic operator?
pub(crate) fn has_operator(s: &str) -> bool {
    contains_operator(s).is_some()
}

/// Linux's `parse_expr`.
pub(crate) fn parse_expr(
    env: &mut ParseEnv<'_>,
    s: &str,
    role: Role,
    var_name: Option<&str>,
    n_subexprs: &mut u32,
) -> Result<HistField, HistError> {
    if *n_subexprs > 3 {
        return Err(env.err(Errno::EINVAL, HistErr::TooManySubexpr, s));
    }
    let Some((op, at)) = contains_operator(s) else {
        return parse_atom(env, s, role, var_name);
    };
    if op == Op::UnaryMinus {
        return parse_unary(env, s, var_name, n_subexprs);
    }
    *n_subexprs += 1;
    let (s1, s2) = (s.get(..at).unwrap_or(""), s.get(at + 1..).unwrap_or(""));
    if s1.is_empty() || s2.is_empty() {
        return Err(Errno::EINVAL.into());
    }
    let a = parse_expr(env, s1, Role::Val, None, n_subexprs)?;
    if a.is_string {
        return Err(env.err(Errno::EINVAL, HistErr::InvalidStrOperand, s1));
    }
    let b = parse_expr(env, s2, Role::Val, None, n_subexprs)?;
    if b.is_string {
        return Err(env.err(Errno::EINVAL, HistErr::InvalidStrOperand, s2));
    }
    // A variable read by an expression is consumed (Linux's read_once).
    for operand in [&a, &b] {
        if let Source::VarRef { idx, .. } = operand.src {
            if let Some(r) = env.refs.get_mut(idx) {
                r.read_once = true;
            }
        }
    }
    // check_expr_operands: microseconds and nanoseconds do not mix.
    if a.usecs != b.usecs {
        return Err(HistError::logged(Errno::EINVAL, HistErr::TimestampMismatch, 0));
    }
    let mut div = DivBy::Operand;
    if op == Op::Div {
        if let Source::Const(d) = b.src {
            if d == 0 {
                return Err(env.err(Errno::EDOM, HistErr::DivisionByZero, s2));
            }
            div = if d.is_power_of_two() {
                DivBy::Power2(d.trailing_zeros())
            } else if d > 1 << HIST_DIV_SHIFT {
                DivBy::Constant(d)
            } else {
                DivBy::MultShift(d, (1u64 << HIST_DIV_SHIFT) / d)
            };
        }
    }
    let usecs = a.usecs;
    let (size, is_signed) = (a.size, a.is_signed);
    let a_type = a.type_name.clone();
    let mut text = String::new();
    a.expr_operand_str(&mut text);
    text.push(match op {
        Op::Plus => '+',
        Op::Minus => '-',
        Op::Mult => '*',
        _ => '/',
    });
    b.expr_operand_str(&mut text);
    let mut f = if matches!((&a.src, &b.src), (Source::Const(_), Source::Const(_))) {
        // Both constant: folded into one, as Linux does at parse time.
        let probe = HistField::new(
            Source::Expr {
                op,
                operands: Box::new((a.clone(), Some(b.clone()))),
                text: String::new(),
                div,
            },
            8,
            false,
        );
        let c = probe.value(&[], &NoContext, false, &[]);
        HistField::new(Source::Const(c), 8, false)
    } else {
        HistField::new(
            Source::Expr {
                op,
                operands: Box::new((a, Some(b))),
                text,
                div,
            },
            size,
            is_signed,
        )
    };
    if matches!(f.src, Source::Expr { .. }) {
        f.type_name = a_type;
    }
    f.usecs = usecs;
    f.var_name = var_name.map(String::from);
    Ok(f)
}

/// Linux's `parse_unary`: only `-(EXPR)`, as the whole expression.
fn parse_unary(
    env: &mut ParseEnv<'_>,
    s: &str,
    var_name: Option<&str>,
    n_subexprs: &mut u32,
) -> Result<HistField, HistError> {
    *n_subexprs += 1;
    if *n_subexprs > 3 {
        return Err(env.err(Errno::EINVAL, HistErr::TooManySubexpr, s));
    }
    let rest = s.get(1..).unwrap_or("");
    if !rest.contains('(') {
        return Err(Errno::EINVAL.into());
    }
    // Linux skips one character, assuming it is the '('.
    let inner = rest.get(1..).unwrap_or("");
    let Some(close) = inner.rfind(')') else {
        return Err(Errno::EINVAL.into());
    };
    if close + 1 != inner.len() {
        return Err(env.err(Errno::EINVAL, HistErr::UnaryMinusSubexpr, inner));
    }
    let inner = inner.get(..close).unwrap_or("");
    let a = parse_expr(env, inner, Role::Val, None, n_subexprs)?;
    if a.is_string {
        return Err(env.err(Errno::EINVAL, HistErr::InvalidStrOperand, inner));
    }
    let mut sub = String::new();
    match &a.src {
        Source::Expr { text, .. } => sub.push_str(text),
        _ => a.expr_operand_str(&mut sub),
    }
    let mut text = String::new();
    let _ = write!(text, "-({sub})");
    let (size, is_signed, usecs) = (a.size, a.is_signed, a.usecs);
    let mut f = HistField::new(
        Source::Expr {
            op: Op::UnaryMinus,
            operands: Box::new((a, None)),
            text,
            div: DivBy::Operand,
        },
        size,
        is_signed,
    );
    f.usecs = usecs;
    f.var_name = var_name.map(String::from);
    Ok(f)
}

/// Linux's `parse_atom`: a constant, a `$variable` or a field.
fn parse_atom(env: &mut ParseEnv<'_>, s: &str, role: Role, var_name: Option<&str>) -> Result<HistField, HistError> {
    if s.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        let Ok(c) = kstrtoull(s.as_bytes(), 0) else {
            return Err(env.err(Errno::EINVAL, HistErr::ExpectNumber, s));
        };
        let mut f = HistField::new(Source::Const(c), 8, false);
        f.var_name = var_name.map(String::from);
        return Ok(f);
    }
    // `system.event.$var`: a qualified reference.
    let (mut ref_system, mut ref_event, mut ref_var) = (None, None, s);
    if let Some((_, rest)) = s.split_once('.') {
        if rest.contains('.') {
            let mut it = s.splitn(3, '.');
            ref_system = it.next();
            ref_event = it.next();
            ref_var = it.next().unwrap_or("");
        }
    }
    let mut s = String::from(ref_var);
    match local_field_var_ref(env, ref_system, ref_event, ref_var) {
        Some(expr) => s = expr,
        None => {
            if let Some(name) = ref_var.strip_prefix('$').filter(|n| !n.is_empty()) {
                match crate::vars::parse_var_ref(env, ref_system.zip(ref_event), name) {
                    Some(idx) => {
                        let r = env.refs.get(idx).map(|r| r.meta.clone());
                        let meta = r.unwrap_or_default();
                        let mut f = HistField::new(
                            Source::VarRef {
                                idx,
                                name: String::from(name),
                                qualified: ref_system.zip(ref_event).map(|(a, b)| alloc::format!("{a}.{b}")),
                            },
                            meta.size,
                            meta.is_signed,
                        );
                        f.usecs = meta.usecs;
                        f.is_string = meta.is_string;
                        f.type_name = meta.type_name;
                        f.is_stack = meta.is_stack;
                        f.var_name = var_name.map(String::from);
                        return Ok(f);
                    }
                    None => {
                        // Linux logs the unknown variable, then fails to
                        // find a field named `$name`.
                        let mut e = env.err(Errno::EINVAL, HistErr::FieldNotFound, &s);
                        let mut first =
                            uapi::error::CmdError::new(Errno::EINVAL, HistErr::VarNotFound.text(), env.errpos(name));
                        if let Some(nu) = env.not_unique.take() {
                            first = nu;
                        }
                        e.first.push(first);
                        return Err(e);
                    }
                }
            }
        }
    }
    let mut f = parse_field(env, &s, role)?;
    f.var_name = var_name.map(String::from);
    Ok(f)
}

/// Linux's `local_field_var_ref`: `$name` of a variable of this trigger
/// defined as a plain field reads that field.
fn local_field_var_ref(env: &ParseEnv<'_>, system: Option<&str>, event: Option<&str>, var: &str) -> Option<String> {
    if let (Some(sys), Some(ev)) = (system, event) {
        if sys != env.links.system || ev != env.links.event {
            return None;
        }
    }
    if system.is_some() != event.is_some() {
        return None;
    }
    let name = var.strip_prefix('$').filter(|n| !n.is_empty())?;
    env.var_defs
        .iter()
        .find(|(n, e)| n == name && !has_operator(e) && !e.starts_with('$'))
        .map(|(_, e)| e.clone())
}

/// Linux's `parse_field`: `NAME[.MODIFIER]`.
fn parse_field(env: &mut ParseEnv<'_>, s: &str, role: Role) -> Result<HistField, HistError> {
    let (name, modifier) = match s.split_once('.') {
        Some((n, m)) => (n, Some(m)),
        None => (s, None),
    };
    let bad_mod = |env: &ParseEnv<'_>, m: &str| env.err(Errno::EINVAL, HistErr::BadFieldModifier, m);
    let modifier = match modifier {
        None => Modifier::None,
        Some("hex") => Modifier::Hex,
        Some("sym") => Modifier::Sym,
        Some("symXoffset") => Modifier::SymOffset,
        Some("execname") if name == "common_pid" => Modifier::Execname,
        Some("syscall") => Modifier::Syscall,
        Some("stacktrace") => Modifier::Stacktrace,
        Some("log2") => Modifier::Log2,
        Some("usecs") => Modifier::Usecs,
        Some(m) if m.starts_with("bucket") => {
            let rest = m.get(6..).unwrap_or("");
            let rest = rest.strip_prefix('s').unwrap_or(rest);
            // Linux reports the place it had reached.
            let Some(n) = rest.strip_prefix('=') else {
                return Err(bad_mod(env, rest));
            };
            match kstrtoul(n.as_bytes(), 0) {
                Ok(b) if b != 0 => Modifier::Buckets(b),
                _ => return Err(bad_mod(env, n)),
            }
        }
        Some(m) if m.starts_with("percent") && role == Role::Val => Modifier::Percent,
        Some(m) if m.starts_with("graph") && role == Role::Val => Modifier::Graph,
        Some(m) => return Err(bad_mod(env, m)),
    };
    let mut f = match name {
        "common_timestamp" => {
            env.timestamps = true;
            if modifier == Modifier::Usecs {
                env.ts_in_usecs = true;
            }
            HistField::new(Source::Timestamp, 8, false)
        }
        "common_stacktrace" => HistField::stacktrace(),
        "common_cpu" => HistField::new(Source::Cpu, 4, false),
        "hitcount" => HistField::hitcount(),
        _ => match find_field(env.fields, name) {
            Some(Found::Field(ef)) => {
                let is_string = matches!(
                    ef.kind,
                    FieldKind::StaticString | FieldKind::DynString | FieldKind::RelDynString
                );
                let size = match ef.kind {
                    FieldKind::StaticString => ef.size,
                    FieldKind::DynString | FieldKind::RelDynString => MAX_FILTER_STR_VAL,
                    _ => ef.size,
                };
                if !is_string && ![1, 2, 4, 8].contains(&ef.size) {
                    // select_value_fn has no reader: create_hist_field fails.
                    return Err(Errno::ENOMEM.into());
                }
                let mut f = HistField::new(
                    Source::Field {
                        name: String::from(ef.name),
                        offset: ef.offset,
                        size: ef.size,
                        signed: ef.is_signed,
                        kind: ef.kind,
                    },
                    size,
                    ef.is_signed,
                );
                f.is_string = is_string;
                if let Some(t) = (env.links.field_type)(name).or_else(|| common_field_type(name).map(String::from)) {
                    f.type_name = t;
                }
                f
            }
            Some(Found::Cpu) => HistField::new(Source::Cpu, 4, false),
            Some(Found::Stacktrace) => HistField::stacktrace(),
            None => return Err(env.err(Errno::EINVAL, HistErr::FieldNotFound, name)),
        },
    };
    if modifier == Modifier::Stacktrace {
        // Only fields of stack-trace type take `.stacktrace`; this
        // kernel's events have none.
        return Err(env.err(Errno::EINVAL, HistErr::BadFieldModifier, s));
    }
    f.modifier = modifier;
    if modifier == Modifier::Usecs {
        f.usecs = true;
    }
    Ok(f)
}

enum Found<'a> {
    Field(&'a EventField<'a>),
    Cpu,
    Stacktrace,
}

/// Linux's `trace_find_event_field` as hist triggers use it: the event's
/// fields, the pseudo fields (`COMM` has no size there, so it is not
/// found), then the common fields.
fn find_field<'a>(fields: &'a [EventField<'a>], name: &str) -> Option<Found<'a>> {
    if let Some(f) = fields.iter().find(|f| f.name == name) {
        return Some(Found::Field(f));
    }
    match name {
        "CPU" | "cpu" => return Some(Found::Cpu),
        "stacktrace" | "STACKTRACE" => return Some(Found::Stacktrace),
        "COMM" | "comm" => return None,
        _ => {}
    }
    COMMON_FIELDS.iter().find(|f| f.name == name).map(Found::Field)
}

/// A context for folding constants.
struct NoContext;

impl FilterContext for NoContext {
    fn cpu(&self) -> u32 {
        0
    }
    fn comm(&self) -> &[u8] {
        b""
    }
}

impl HistContext for NoContext {
    fn timestamp_ns(&self) -> u64 {
        0
    }
    fn save_stack(&mut self, _out: &mut [u64]) -> usize {
        0
    }
    fn snapshot(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_split_at_rightmost_lowest_precedence() {
        assert_eq!(contains_operator("a-b+c"), Some((Op::Plus, 3)));
        assert_eq!(contains_operator("a+b-c"), Some((Op::Minus, 3)));
        assert_eq!(contains_operator("a*b/c"), Some((Op::Div, 3)));
        assert_eq!(contains_operator("a/b*c+d"), Some((Op::Plus, 5)));
        assert_eq!(contains_operator("-(a)"), Some((Op::UnaryMinus, 0)));
        assert_eq!(contains_operator("abc"), None);
    }

    #[test]
    fn order_base_2_rounds_up() {
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 1024, 1025].map(order_base_2),
            [0, 0, 1, 2, 2, 3, 10, 11]
        );
    }

    #[test]
    fn read_num_sign_extends_signed_fields() {
        let rec = [0xffu8, 0xff, 0xff, 0xff, 1, 0, 0, 0];
        assert_eq!(read_num(&rec, 0, 4, true), u64::MAX);
        assert_eq!(read_num(&rec, 0, 4, false), 0xffff_ffff);
        assert_eq!(read_num(&rec, 4, 4, true), 1);
        assert_eq!(read_num(&rec, 6, 4, true), 0);
    }

    /// `read_num` as a byte-wise little-endian read (what each size's own
    /// load must agree with).
    fn read_num_bytewise(rec: &[u8], offset: u32, size: u32, signed: bool) -> u64 {
        let (start, size) = (offset as usize, size as usize);
        let Some(b) = rec.get(start..start + size) else {
            return 0;
        };
        if size > 8 {
            return 0;
        }
        let v = b.iter().rev().fold(0u64, |v, c| v << 8 | u64::from(*c));
        if signed && (1..8).contains(&size) && v >> (8 * size - 1) & 1 == 1 {
            v | u64::MAX << (8 * size)
        } else {
            v
        }
    }

    proptest::proptest! {
        #[test]
        fn read_num_agrees_with_a_bytewise_read(
            rec in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24),
            offset in 0u32..26,
            size in 0u32..12,
            signed in proptest::prelude::any::<bool>(),
        ) {
            proptest::prop_assert_eq!(read_num(&rec, offset, size, signed), read_num_bytewise(&rec, offset, size, signed));
        }
    }
}
