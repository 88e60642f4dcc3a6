//! Property tests: random and mutated filters never panic, every rejection
//! carries one of Linux's errno values and messages and a position on the
//! command line, and every compiled program computes the boolean value of
//! the expression it was written from.
//!
//! Case counts are small by default (1 000 random and 1 000 mutated
//! filters, a few hundred of the rest) so that `cargo test` stays fast. `TRACE_FILTER_CASES` sets the count of every test;
//! scripts/test.sh runs 10^6 random and mutated filters, 500 000 of each:
//!
//! ```text
//! TRACE_FILTER_CASES=500000 cargo test --release -p trace-filter --test fuzz filters_never_panic
//! ```
//!
//! and without the filter, as many trigger writes, set_event writes and
//! program checks too.

use proptest::prelude::*;
use proptest::test_runner::Config;
use trace_filter::filter::{msg, EventFilter, FilterEnv, KallsymsLookup};
use trace_filter::set_event::{next_word, SetEventCmd};
use trace_filter::trigger::TriggerList;
use trace_filter::{apply_event_filter, EventField, FieldKind, SimpleContext};
use uapi::Errno;

fn cases(default: u32) -> Config {
    let n = std::env::var("TRACE_FILTER_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    Config {
        cases: n,
        failure_persistence: None,
        ..Config::default()
    }
}

const FIELDS: [EventField<'static>; 8] = [
    EventField {
        name: "prev_comm",
        offset: 8,
        size: 16,
        is_signed: false,
        kind: FieldKind::StaticString,
    },
    EventField {
        name: "prev_pid",
        offset: 24,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "prev_prio",
        offset: 28,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "prev_state",
        offset: 32,
        size: 8,
        is_signed: true,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "next_comm",
        offset: 40,
        size: 16,
        is_signed: false,
        kind: FieldKind::StaticString,
    },
    EventField {
        name: "next_pid",
        offset: 56,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "fname",
        offset: 60,
        size: 4,
        is_signed: true,
        kind: FieldKind::DynString,
    },
    EventField {
        name: "ptr",
        offset: 64,
        size: 8,
        is_signed: false,
        kind: FieldKind::PtrString,
    },
];

struct Syms;
impl KallsymsLookup for Syms {
    fn lookup_name(&self, name: &str) -> Option<u64> {
        (name == "schedule").then_some(0x1000)
    }
    fn lookup_size_offset(&self, addr: u64) -> Option<(u64, u64)> {
        (0x1000..0x1100).contains(&addr).then(|| (0x100, addr - 0x1000))
    }
}

const ENV: FilterEnv<'static> = FilterEnv {
    nr_cpu_ids: 4,
    symbols: &Syms,
};

const MESSAGES: [&str; 19] = [
    msg::INVALID_OP,
    msg::TOO_MANY_OPEN,
    msg::TOO_MANY_CLOSE,
    msg::MISSING_QUOTE,
    msg::MISSING_BRACE_OPEN,
    msg::MISSING_BRACE_CLOSE,
    msg::OPERAND_TOO_LONG,
    msg::EXPECT_STRING,
    msg::EXPECT_DIGIT,
    msg::ILLEGAL_FIELD_OP,
    msg::FIELD_NOT_FOUND,
    msg::ILLEGAL_INTVAL,
    msg::TOO_MANY_PREDS,
    msg::INVALID_FILTER,
    msg::INVALID_CPULIST,
    msg::INVALID_VALUE,
    msg::NO_FUNCTION,
    msg::ERRNO,
    msg::NO_FILTER,
];

/// Compiles `text` and checks the outcome; evaluates a compiled filter on
/// records of every length up to the schema's end (and a little beyond), so
/// truncated records are exercised too.
fn check(text: &str, rec: &[u8], cpu: u32) -> Result<(), TestCaseError> {
    match EventFilter::compile(text, &FIELDS, &ENV) {
        Ok(f) => {
            let mut ctx = SimpleContext::new(cpu, "fuzz");
            let full = f.matches(rec, &mut ctx);
            let _ = f.matches(&rec[..rec.len() / 2], &mut ctx);
            prop_assert_eq!(full, f.matches(rec, &mut ctx), "evaluation is deterministic");
        }
        Err(e) => {
            prop_assert!(
                matches!(e.errno, Errno::EINVAL | Errno::EPERM | Errno::ENOENT | Errno::ESRCH),
                "errno {:?} for {:?}",
                e.errno,
                text
            );
            prop_assert!(MESSAGES.contains(&e.msg), "message {:?}", e.msg);
            // Linux's caret is on the command line: at most two past its
            // end (`cpu & CPUS` at the very end reports one past the NUL).
            prop_assert!(e.pos <= text.len() + 2, "pos {} beyond {:?}", e.pos, text);
            let shown = EventFilter::failed(text, &e);
            prop_assert!(shown.program().is_none());
        }
    }
    // The write path (trimming, "0") must agree about failure positions.
    let up = apply_event_filter(text.as_bytes(), &FIELDS, &ENV);
    if let Some(f) = &up.failure {
        prop_assert!(f.err.pos <= f.command.len() + 2);
    }
    Ok(())
}

/// Pieces filters are made of, so random strings hit the parser's paths.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("prev_pid".to_string()),
        Just("prev_comm".to_string()),
        Just("fname".to_string()),
        Just("ptr".to_string()),
        Just("comm".to_string()),
        Just("cpu".to_string()),
        Just("CPU".to_string()),
        Just("common_pid".to_string()),
        Just("stacktrace".to_string()),
        Just("prev_state.function".to_string()),
        Just(".ustring".to_string()),
        Just("schedule".to_string()),
        Just("CPUS{".to_string()),
        Just("}".to_string()),
        Just("==".to_string()),
        Just("!=".to_string()),
        Just("<=".to_string()),
        Just(">=".to_string()),
        Just("<".to_string()),
        Just(">".to_string()),
        Just("&".to_string()),
        Just("~".to_string()),
        Just("&&".to_string()),
        Just("||".to_string()),
        Just("!".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just(" ".to_string()),
        Just("*".to_string()),
        Just("[a-z]".to_string()),
        Just("-".to_string()),
        Just("0x".to_string()),
        Just(",".to_string()),
        "[0-9]{1,25}",
        "[a-zA-Z_]{1,8}",
        any::<char>().prop_map(|c| c.to_string()),
    ]
}

fn random_filter() -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 0..24).prop_map(|v| v.concat())
}

/// A record with a `__data_loc` string at its end.
fn record() -> impl Strategy<Value = Vec<u8>> {
    (prop::collection::vec(any::<u8>(), 72), "[a-z/]{0,12}", any::<bool>()).prop_map(|(mut r, s, good)| {
        let loc = r.len() as u32;
        let len = if good { s.len() as u32 + 1 } else { 0xffff };
        r[60..64].copy_from_slice(&(loc | (len << 16)).to_le_bytes());
        r.extend_from_slice(s.as_bytes());
        r.push(0);
        r
    })
}

// --------------------------------------------------------- valid filters

/// A leaf predicate with the text it is written as.
fn leaf() -> impl Strategy<Value = String> {
    let int_field = prop_oneof![
        Just("prev_pid"),
        Just("prev_prio"),
        Just("prev_state"),
        Just("next_pid"),
        Just("common_pid"),
        Just("common_type"),
        Just("common_flags"),
    ];
    let int_op = prop_oneof![
        Just("=="),
        Just("!="),
        Just("<"),
        Just("<="),
        Just(">"),
        Just(">="),
        Just("&")
    ];
    let number = prop_oneof![
        any::<u32>().prop_map(|n| n.to_string()),
        any::<u16>().prop_map(|n| format!("0x{n:x}")),
        any::<u16>().prop_map(|n| format!("0{n:o}")),
    ];
    let str_field = prop_oneof![
        Just("prev_comm"),
        Just("next_comm"),
        Just("comm"),
        Just("fname"),
        Just("ptr")
    ];
    let str_op = prop_oneof![Just("=="), Just("!="), Just("~")];
    let pattern = "!?\\*?[a-z/?]{0,6}(\\[a-c\\])?\\*?";
    prop_oneof![
        (int_field, int_op, number).prop_map(|(f, o, n)| format!("{f} {o} {n}")),
        (str_field, str_op, pattern, any::<bool>()).prop_map(|(f, o, p, dq)| {
            let q = if dq { '"' } else { '\'' };
            format!("{f} {o} {q}{p}{q}")
        }),
        (prop_oneof![Just("=="), Just("!="), Just("<"), Just(">=")], 0u32..4).prop_map(|(o, n)| format!("cpu {o} {n}")),
        (prop_oneof![Just("=="), Just("!="), Just("&")], "(0|1)(-[23])?(,[0-3])?")
            .prop_map(|(o, l)| format!("cpu {o} CPUS{{{l}}}")),
        // Linux takes the symbol name up to white space, so one must follow.
        prop_oneof![Just("=="), Just("!=")].prop_map(|o| format!("prev_state.function {o} schedule ")),
    ]
}

fn valid_filter() -> impl Strategy<Value = String> {
    leaf().prop_recursive(5, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} && {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}||{b}")),
            inner.clone().prop_map(|a| format!("!({a})")),
            inner.prop_map(|a| format!("( {a} )")),
        ]
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Insert(usize, u8),
    Delete(usize),
    Replace(usize, u8),
    Truncate(usize),
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        Just(b'('),
        Just(b')'),
        Just(b'"'),
        Just(b'\''),
        Just(b'!'),
        Just(b'&'),
        Just(b'|'),
        Just(b' '),
        Just(b'{'),
        Just(b'}'),
        Just(b'*'),
        Just(b'['),
        Just(b'\\'),
        Just(0u8),
        any::<u8>(),
    ];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(p, b)| Mutation::Insert(p, b)),
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), byte).prop_map(|(p, b)| Mutation::Replace(p, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Duplicate(a, b)),
    ]
}

fn mutate(text: &str, muts: &[Mutation]) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for m in muts {
        let n = b.len();
        match *m {
            Mutation::Insert(p, c) => b.insert(p % (n + 1), c),
            Mutation::Delete(p) if n > 0 => {
                b.remove(p % n);
            }
            Mutation::Replace(p, c) if n > 0 => b[p % n] = c,
            Mutation::Truncate(p) => b.truncate(p % (n + 1)),
            Mutation::Duplicate(a, l) if n > 0 => {
                let a = a % n;
                let l = l % (n - a) + 1;
                let piece = b[a..a + l].to_vec();
                b.splice(a..a, piece);
            }
            _ => {}
        }
    }
    b
}

proptest! {
    #![proptest_config(cases(1_000))]

    #[test]
    fn random_filters_never_panic_and_errors_carry_positions(text in random_filter(), rec in record(), cpu in 0u32..6) {
        check(&text, &rec, cpu)?;
    }

    #[test]
    fn mutated_filters_never_panic_and_errors_carry_positions(
        text in valid_filter(),
        muts in prop::collection::vec(mutation(), 1..4),
        rec in record(),
        cpu in 0u32..6,
    ) {
        let bytes = mutate(&text, &muts);
        // What a user's write turns into: the bytes up to a NUL, as text.
        let up = apply_event_filter(&bytes, &FIELDS, &ENV);
        if let Some(f) = &up.failure {
            prop_assert!(f.err.pos <= f.command.len() + 2);
        }
        let s = String::from_utf8_lossy(&bytes);
        let s = s.split('\0').next().unwrap_or("");
        check(s, &rec, cpu)?;
    }
}

proptest! {
    #![proptest_config(cases(300))]

    #[test]
    fn generated_filters_compile(text in valid_filter()) {
        let r = EventFilter::compile(&text, &FIELDS, &ENV);
        prop_assert!(r.is_ok(), "{:?}: {:?}", text, r.err());
    }

    #[test]
    fn random_trigger_writes_never_panic(
        cmd in prop_oneof![Just("traceon"), Just("traceoff"), Just("stacktrace"), Just("enable_event"), Just("!traceon"), Just("x")],
        rest in random_filter(),
        sep in prop_oneof![Just(":"), Just(" "), Just(":sched:sched_wakeup:"), Just(" if "), Just(":3 if ")],
    ) {
        let mut l = TriggerList::new();
        let buf = format!("{cmd}{sep}{rest}");
        let exists = |s: &str, e: &str| s == "sched" && e == "sched_wakeup";
        if let Err(e) = l.write(buf.as_bytes(), &FIELDS, &ENV, &exists) {
            if let Some(f) = e.filter_failure {
                prop_assert!(f.err.pos <= f.command.len() + 2);
                prop_assert_eq!(f.err.errno, e.errno);
            }
        }
        let _ = l.file_text();
    }

    #[test]
    fn random_set_event_writes_never_panic(buf in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut rest = &buf[..];
        while !rest.is_empty() {
            match next_word(rest) {
                Ok((n, w)) => {
                    prop_assert!(n > 0 && n <= rest.len());
                    if let Some(w) = w {
                        let _ = SetEventCmd::parse(&w).matcher.matches("sched", "sched_switch");
                    }
                    rest = &rest[n..];
                }
                Err(e) => {
                    prop_assert_eq!(e, Errno::EINVAL);
                    break;
                }
            }
        }
    }
}

// ------------------------------------------- the program is the expression

/// An expression over byte fields `b0`..`b7` of the record.
#[derive(Clone, Debug)]
enum Expr {
    Leaf {
        field: usize,
        op: &'static str,
        val: u8,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// Redundant parentheses.
    Paren(Box<Expr>),
}

const BYTE_FIELDS: [EventField<'static>; 8] = {
    let mut f = [EventField {
        name: "",
        offset: 0,
        size: 1,
        is_signed: false,
        kind: FieldKind::Integer,
    }; 8];
    let names = ["b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7"];
    let mut i = 0;
    while i < 8 {
        f[i].name = names[i];
        f[i].offset = i as u32;
        i += 1;
    }
    f
};

impl Expr {
    fn eval(&self, rec: &[u8; 8]) -> bool {
        match self {
            Expr::Leaf { field, op, val } => {
                let v = rec[*field];
                match *op {
                    "==" => v == *val,
                    "!=" => v != *val,
                    "<" => v < *val,
                    "<=" => v <= *val,
                    ">" => v > *val,
                    ">=" => v >= *val,
                    _ => v & *val != 0,
                }
            }
            Expr::And(a, b) => a.eval(rec) && b.eval(rec),
            Expr::Or(a, b) => a.eval(rec) || b.eval(rec),
            Expr::Not(a) => !a.eval(rec),
            Expr::Paren(a) => a.eval(rec),
        }
    }

    /// Writes the expression with only the parentheses precedence needs
    /// (&& binds tighter than ||; ! takes a leaf or a group).
    fn render(&self, out: &mut String) {
        match self {
            Expr::Leaf { field, op, val } => out.push_str(&format!("b{field} {op} {val}")),
            Expr::And(a, b) => {
                a.render_operand(out, true);
                out.push_str(" && ");
                b.render_operand(out, true);
            }
            Expr::Or(a, b) => {
                a.render(out);
                out.push_str(" || ");
                b.render(out);
            }
            Expr::Not(a) => {
                out.push('!');
                match **a {
                    Expr::Leaf { .. } | Expr::Paren(_) => a.render(out),
                    _ => {
                        out.push('(');
                        a.render(out);
                        out.push(')');
                    }
                }
            }
            Expr::Paren(a) => {
                out.push('(');
                a.render(out);
                out.push(')');
            }
        }
    }

    fn render_operand(&self, out: &mut String, in_and: bool) {
        if in_and && matches!(self, Expr::Or(..)) {
            out.push('(');
            self.render(out);
            out.push(')');
        } else {
            self.render(out);
        }
    }
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = (
        0usize..8,
        prop_oneof![
            Just("=="),
            Just("!="),
            Just("<"),
            Just("<="),
            Just(">"),
            Just(">="),
            Just("&")
        ],
        0u8..4,
    )
        .prop_map(|(field, op, val)| Expr::Leaf { field, op, val });
    leaf.prop_recursive(6, 40, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Or(Box::new(a), Box::new(b))),
            inner.clone().prop_map(|a| Expr::Not(Box::new(a))),
            inner.prop_map(|a| Expr::Paren(Box::new(a))),
        ]
    })
}

proptest! {
    #![proptest_config(cases(300))]

    #[test]
    fn compiled_program_computes_the_expression(e in expr(), recs in prop::collection::vec(prop::array::uniform8(0u8..4), 1..8)) {
        let mut text = String::new();
        e.render(&mut text);
        let f = EventFilter::compile(&text, &BYTE_FIELDS, &ENV);
        prop_assert!(f.is_ok(), "{}: {:?}", text, f.err());
        let f = f.unwrap();
        for rec in recs {
            let got = f.matches(&rec, &mut SimpleContext::default());
            prop_assert_eq!(got, e.eval(&rec), "{} on {:?}", text, rec);
        }
    }
}
