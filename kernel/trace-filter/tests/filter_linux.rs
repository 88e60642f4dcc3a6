//! Filters against facts taken on Linux 6.12.117 arm64 (reflinux), on
//! `sched/sched_switch` (whose layout the schema below copies from its
//! `format` file) and on a kprobe event with a `__data_loc char[]` field
//! (`p:myopen do_sys_openat2 fname=+0(%x1):ustring`).
//!
//! Each error case gives the errno the write returned, the `error_log`
//! message and the caret position `error_log` showed.

use trace_filter::filter::{filter_file_text, msg, EventFilter, FilterEnv, KallsymsLookup};
use trace_filter::{apply_event_filter, apply_subsystem_filter, EventField, FieldKind, SimpleContext};
use uapi::Errno;

fn int(name: &'static str, offset: u32, size: u32, is_signed: bool) -> EventField<'static> {
    EventField {
        name,
        offset,
        size,
        is_signed,
        kind: FieldKind::Integer,
    }
}

/// `events/sched/sched_switch/format` on Linux 6.12 arm64.
const SCHED_SWITCH: [EventField<'static>; 7] = [
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
        name: "next_prio",
        offset: 60,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
];

/// `p:myopen do_sys_openat2 fname=+0(%x1):ustring`: `__probe_ip` at 8,
/// `fname` (`__data_loc char[]`, signed:1) at 16.
const MYOPEN: [EventField<'static>; 2] = [
    EventField {
        name: "__probe_ip",
        offset: 8,
        size: 8,
        is_signed: false,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "fname",
        offset: 16,
        size: 4,
        is_signed: true,
        kind: FieldKind::DynString,
    },
];

struct Syms;
impl KallsymsLookup for Syms {
    fn lookup_name(&self, name: &str) -> Option<u64> {
        (name == "schedule").then_some(0xffff_8000_1000_0000)
    }
    fn lookup_size_offset(&self, addr: u64) -> Option<(u64, u64)> {
        let start = 0xffff_8000_1000_0000u64;
        (start..start + 0x100).contains(&addr).then(|| (0x100, addr - start))
    }
}

fn env(nr_cpu_ids: u32) -> FilterEnv<'static> {
    FilterEnv {
        nr_cpu_ids,
        symbols: &Syms,
    }
}

fn compile(text: &str) -> Result<EventFilter, (Errno, &'static str, usize)> {
    EventFilter::compile(text, &SCHED_SWITCH, &env(1)).map_err(|e| (e.errno, e.msg, e.pos))
}

#[track_caller]
fn rejects(text: &str, errno: Errno, m: &'static str, pos: usize) {
    match compile(text) {
        Ok(_) => panic!("{text:?} compiled; Linux rejects it"),
        Err(got) => assert_eq!(got, (errno, m, pos), "for {text:?}"),
    }
}

#[track_caller]
fn accepts(text: &str) {
    if let Err(e) = compile(text) {
        panic!("{text:?} rejected with {e:?}; Linux accepts it");
    }
}

#[test]
fn structural_errors_have_linux_errno_message_and_position() {
    rejects("pid < 1 &&", Errno::EINVAL, msg::FIELD_NOT_FOUND, 4);
    rejects("prev_pid < 1 &&", Errno::EINVAL, msg::INVALID_FILTER, 15);
    rejects("prev_pid==1||", Errno::EINVAL, msg::INVALID_FILTER, 13);
    rejects("prev_pid < 1 x", Errno::EPERM, msg::TOO_MANY_PREDS, 13);
    rejects("prev_pid == 1 | next_pid == 2", Errno::EPERM, msg::TOO_MANY_PREDS, 14);
    rejects("prev_pid == 1 ! next_pid == 1", Errno::EPERM, msg::TOO_MANY_PREDS, 14);
    rejects("prev_pid == 1 &", Errno::EPERM, msg::TOO_MANY_PREDS, 14);
    rejects("prev_comm == \"a\" \"b\"", Errno::EPERM, msg::TOO_MANY_PREDS, 17);
    rejects("== 1", Errno::EPERM, msg::ERRNO, 0);
    rejects("|| prev_pid == 1", Errno::EPERM, msg::ERRNO, 0);
    rejects("prev_pid == 1 &&& next_pid == 2", Errno::EPERM, msg::ERRNO, 0);
    rejects("prev_pid == 1 && ()", Errno::EPERM, msg::ERRNO, 0);
    rejects("prev_pid == 1 && ( )", Errno::EPERM, msg::ERRNO, 0);
    rejects("prev_pid == 1 (next_pid == 1)", Errno::EPERM, msg::TOO_MANY_PREDS, 14);
    rejects("", Errno::EINVAL, msg::ERRNO, 0);
    rejects("   ", Errno::EINVAL, msg::ERRNO, 0);
    rejects("()", Errno::EINVAL, msg::ERRNO, 0);
    rejects("!", Errno::EINVAL, msg::NO_FILTER, 1);
    rejects("prev_pid == 1 && !", Errno::EINVAL, msg::INVALID_FILTER, 18);
}

#[test]
fn unbalanced_parentheses_and_quotes_are_found_before_parsing() {
    rejects("(prev_pid == 1", Errno::ENOENT, msg::TOO_MANY_OPEN, 0);
    rejects("(", Errno::ENOENT, msg::TOO_MANY_OPEN, 0);
    rejects("!(prev_pid == 1", Errno::ENOENT, msg::TOO_MANY_OPEN, 1);
    rejects("prev_pid == 1 || (next_pid == 2", Errno::ENOENT, msg::TOO_MANY_OPEN, 17);
    rejects("prev_pid == 1)", Errno::EPERM, msg::TOO_MANY_CLOSE, 13);
    rejects(")", Errno::EPERM, msg::TOO_MANY_CLOSE, 0);
    rejects(
        "prev_pid == 1 && (next_pid == 2))",
        Errno::EPERM,
        msg::TOO_MANY_CLOSE,
        32,
    );
    rejects("prev_comm == \"abc", Errno::ESRCH, msg::MISSING_QUOTE, 13);
    rejects("\"abc", Errno::ESRCH, msg::MISSING_QUOTE, 0);
}

#[test]
fn operand_errors_point_one_past_linux_style() {
    rejects("prev_pid =< 1", Errno::EINVAL, msg::INVALID_OP, 10);
    rejects("prev_pid", Errno::EINVAL, msg::INVALID_OP, 9);
    rejects("prev_pid ==", Errno::EINVAL, msg::INVALID_VALUE, 12);
    rejects("prev_pid == abc", Errno::EINVAL, msg::INVALID_VALUE, 13);
    rejects("prev_pid == +1", Errno::EINVAL, msg::INVALID_VALUE, 13);
    rejects("nosuch == 1", Errno::EINVAL, msg::FIELD_NOT_FOUND, 7);
    rejects("prev_pid == \"abc\"", Errno::EINVAL, msg::EXPECT_DIGIT, 13);
    rejects("prev_pid.ustring == \"x\"", Errno::EINVAL, msg::EXPECT_DIGIT, 21);
    rejects("prev_comm == 1", Errno::EINVAL, msg::EXPECT_STRING, 14);
    rejects("prev_comm < \"a\"", Errno::EINVAL, msg::ILLEGAL_FIELD_OP, 13);
    rejects("prev_pid ~ 1", Errno::EINVAL, msg::ILLEGAL_FIELD_OP, 12);
    rejects("prev_pid == 0x1g", Errno::EINVAL, msg::ILLEGAL_INTVAL, 13);
    rejects("prev_pid == 08", Errno::EINVAL, msg::ILLEGAL_INTVAL, 13);
    rejects("prev_pid == -", Errno::EINVAL, msg::ILLEGAL_INTVAL, 13);
    // The caret of error_log may sit one past the end, as here.
    rejects(
        "prev_pid == 123456789012345678901234",
        Errno::EINVAL,
        msg::OPERAND_TOO_LONG,
        37,
    );
}

#[test]
fn string_operands_up_to_255_bytes() {
    accepts(&format!("prev_comm == \"{}\"", "0".repeat(255)));
    let long = format!("prev_comm == \"{}\"", "0".repeat(256));
    assert_eq!(
        compile(&long).err().map(|e| (e.0, e.1)),
        Some((Errno::EINVAL, msg::OPERAND_TOO_LONG))
    );
    assert_eq!(
        compile(&"0".repeat(4000)).err().map(|e| e.1),
        Some(msg::FIELD_NOT_FOUND)
    );
}

#[test]
fn cpus_lists_and_function_operands() {
    rejects("cpu & CPUS{0-1}", Errno::EINVAL, msg::INVALID_CPULIST, 15);
    rejects("cpu == CPUS{1", Errno::EINVAL, msg::MISSING_BRACE_CLOSE, 14);
    rejects("cpu < CPUS{1}", Errno::EINVAL, msg::ILLEGAL_FIELD_OP, 7);
    rejects("prev_comm == CPUS{1}", Errno::EINVAL, msg::ILLEGAL_FIELD_OP, 14);
    rejects("prev_pid & CPUS{}", Errno::EINVAL, msg::INVALID_CPULIST, 17);
    rejects("prev_pid & CPUS{x}", Errno::EINVAL, msg::INVALID_CPULIST, 18);
    rejects("prev_pid == CPUS{99999}", Errno::EINVAL, msg::INVALID_CPULIST, 23);
    rejects("cpu & CPUS[0]", Errno::EINVAL, msg::MISSING_BRACE_OPEN, 12);
    // Two past the end: Linux steps over the NUL looking for '{'.
    rejects("cpu & CPUS", Errno::EINVAL, msg::MISSING_BRACE_OPEN, 12);
    rejects("cpu & CPUS{", Errno::EINVAL, msg::MISSING_BRACE_CLOSE, 12);
    rejects("prev_state.function == 0x10", Errno::EINVAL, msg::NO_FUNCTION, 28);
    accepts("prev_pid & CPUS{0,N}");
    accepts("prev_pid & CPUS{all}");
    rejects("prev_pid.function == 1", Errno::EINVAL, msg::ILLEGAL_FIELD_OP, 22);
    rejects("prev_state.function == nosuchfn", Errno::EINVAL, msg::NO_FUNCTION, 32);
    rejects("prev_state.function < schedule", Errno::EINVAL, msg::INVALID_OP, 23);
    accepts("prev_state.function == schedule");
    accepts("cpu & CPUS{0}");
    assert!(EventFilter::compile("cpu & CPUS{0-1}", &SCHED_SWITCH, &env(2)).is_ok());
}

#[test]
fn linux_accepts_these() {
    for f in [
        "prev_pid < 1",
        "  prev_pid < 1   ",
        "prev_pid == -1",
        "prev_state == -1",
        "common_pid == 1 && !(prev_prio > 100 || next_prio <= 5)",
        "comm == \"sh\" && cpu == 0",
        "CPU == 0 || COMM ~ \"*sh*\"",
        "common_cpu >= 1",
        "stacktrace == 1",
        "!prev_pid == 1",
        "prev_pid != 1 && !!(next_pid != 2)",
        "prev_pid.ustring == 1",
        "prev_comm.ustring == \"x\"",
        "prev_comm == 'a\"b'",
        "((((prev_pid == 1))))",
        "prev_pid==1&&next_pid==2",
        "prev_pid == 010",
        "prev_pid & 1",
        "prev_comm ~ \"[a-\"",
        "prev_comm ~ 'ab*'",
        "prev_pid == 99999999999",
        "prev_prio == 4294967295",
        "next_prio == -2147483649",
        "prev_pid == 1 && next_pid == 2 && prev_prio == 3 || next_prio == 4 && !(common_pid < 5)",
    ] {
        accepts(f);
    }
}

#[test]
fn filter_file_shows_text_error_report_or_none() {
    let e = env(1);
    let up = apply_event_filter(b"pid < 1 &&\n", &SCHED_SWITCH, &e);
    assert_eq!(up.result(), Err(Errno::EINVAL));
    assert_eq!(
        filter_file_text(up.filter.as_ref()),
        "pid < 1 &&\n    ^\nparse_error: Field not found\n\n"
    );
    let fail = up.failure.unwrap();
    assert_eq!(fail.command, "pid < 1 &&");
    assert_eq!(fail.err.pos, 4);

    let up = apply_event_filter(b"== 1\n", &SCHED_SWITCH, &e);
    assert_eq!(up.result(), Err(Errno::EPERM));
    assert_eq!(filter_file_text(up.filter.as_ref()), "== 1\nError: (0)\n\n");

    let up = apply_event_filter(b"(prev_pid == 1\n", &SCHED_SWITCH, &e);
    assert_eq!(
        filter_file_text(up.filter.as_ref()),
        "(prev_pid == 1\n^\nparse_error: Too many '('\n\n"
    );

    // The caret is clamped to the text in the file (not in error_log).
    let up = apply_event_filter(b"prev_pid == 123456789012345678901234\n", &SCHED_SWITCH, &e);
    let want = format!(
        "prev_pid == 123456789012345678901234\n{}^\nparse_error: Operand too long\n\n",
        " ".repeat(36)
    );
    assert_eq!(filter_file_text(up.filter.as_ref()), want);

    // Trailing white space goes, leading stays.
    let up = apply_event_filter(b"  prev_pid < 1   \n", &SCHED_SWITCH, &e);
    assert_eq!(up.result(), Ok(()));
    assert_eq!(filter_file_text(up.filter.as_ref()), "  prev_pid < 1\n");

    for clear in [&b"0\n"[..], b" 0 ", b"0"] {
        let up = apply_event_filter(clear, &SCHED_SWITCH, &e);
        assert!(up.filter.is_none() && up.failure.is_none());
        assert_eq!(filter_file_text(up.filter.as_ref()), "none\n");
    }
}

#[test]
fn failed_filter_lets_everything_through() {
    let up = apply_event_filter(b"nosuch == 1", &SCHED_SWITCH, &env(1));
    let f = up.filter.unwrap();
    assert!(f.program().is_none());
    assert!(f.matches(&[0u8; 64], &mut SimpleContext::new(0, "x")));
}

#[test]
fn subsystem_filter_sets_events_it_fits_and_reports_the_others() {
    let wakeup = [int("pid", 24, 4, true), int("prio", 28, 4, true)];
    let events: [&[EventField<'_>]; 2] = [&SCHED_SWITCH, &wakeup];
    let up = apply_subsystem_filter(b"prev_pid == 1\n", &events, &env(1));
    assert_eq!(up.result, Ok(()));
    assert_eq!(up.system_text, trace_filter::filter::DEFAULT_SYS_FILTER_MESSAGE);
    assert_eq!(filter_file_text(up.events[0].as_ref()), "prev_pid == 1\n");
    assert_eq!(
        filter_file_text(up.events[1].as_ref()),
        "prev_pid == 1\n^\nparse_error: Couldn't find or set field in one of a subsystem's events\n\n"
    );
    assert_eq!(up.event_failures.len(), 1);
    assert_eq!(up.event_failures[0].err.pos, 0);
    let cleared = apply_subsystem_filter(b"0", &events, &env(1));
    assert!(cleared.events.iter().all(Option::is_none));
    assert_eq!(apply_subsystem_filter(b"x", &[], &env(1)).result, Err(Errno::ENODEV));
}

// ------------------------------------------------------------ evaluation

fn put_str(rec: &mut [u8], off: usize, s: &str) {
    rec[off..off + s.len()].copy_from_slice(s.as_bytes());
}

fn sched_switch_rec(prev_comm: &str, prev_pid: i32, prev_state: i64, next_pid: i32) -> Vec<u8> {
    let mut r = vec![0u8; 64];
    r[4..8].copy_from_slice(&7i32.to_le_bytes()); // common_pid
    put_str(&mut r, 8, prev_comm);
    r[24..28].copy_from_slice(&prev_pid.to_le_bytes());
    r[28..32].copy_from_slice(&120i32.to_le_bytes());
    r[32..40].copy_from_slice(&prev_state.to_le_bytes());
    put_str(&mut r, 40, "swapper/0");
    r[56..60].copy_from_slice(&next_pid.to_le_bytes());
    r[60..64].copy_from_slice(&(-5i32).to_le_bytes());
    r
}

fn eval(filter: &str, rec: &[u8]) -> bool {
    eval_on(filter, rec, SimpleContext::new(1, "sleep"))
}

fn eval_on(filter: &str, rec: &[u8], mut ctx: SimpleContext) -> bool {
    let f = EventFilter::compile(filter, &SCHED_SWITCH, &env(4)).unwrap_or_else(|e| panic!("{filter}: {e}"));
    f.matches(rec, &mut ctx)
}

#[test]
fn integer_operators_signed_and_unsigned() {
    let r = sched_switch_rec("sleep", -3, 0x10, 42);
    assert!(eval("prev_pid == -3", &r));
    assert!(eval("prev_pid != 3", &r));
    assert!(eval("prev_pid < 0", &r));
    assert!(eval("prev_pid <= -3", &r));
    assert!(!eval("prev_pid > -3", &r));
    assert!(eval("prev_pid >= -3", &r));
    assert!(eval("prev_state & 0x10", &r));
    assert!(!eval("prev_state & 0x0f", &r));
    assert!(eval("next_pid == 052", &r), "octal");
    assert!(eval("next_pid == 0x2a", &r), "hex");
    // The value is cut to the field's size, as Linux's (type)pred->val.
    assert!(eval("next_pid == 4294967338", &r));
    assert!(eval("next_prio < 0", &r));
    // Unsigned fields compare unsigned.
    assert!(eval("common_type == 0 && common_preempt_count < 1", &r));
    assert!(eval("common_pid == 7", &r));
    assert!(!eval("common_type > 0xffff", &r));
}

#[test]
fn unsigned_fields_reject_negative_numbers() {
    let e = EventFilter::compile("common_type == -1", &SCHED_SWITCH, &env(1)).unwrap_err();
    assert_eq!((e.errno, e.msg, e.pos), (Errno::EINVAL, msg::ILLEGAL_INTVAL, 16));
}

#[test]
fn integer_sizes_one_two_four_eight() {
    let fields = [
        int("u8", 0, 1, false),
        int("s16", 2, 2, true),
        int("u32", 4, 4, false),
        int("s64", 8, 8, true),
    ];
    let mut r = vec![0u8; 16];
    r[0] = 0xff;
    r[2..4].copy_from_slice(&(-2i16).to_le_bytes());
    r[4..8].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    r[8..16].copy_from_slice(&i64::MIN.to_le_bytes());
    let ev = |f: &str| {
        EventFilter::compile(f, &fields, &env(1))
            .unwrap()
            .matches(&r, &mut SimpleContext::default())
    };
    assert!(ev("u8 == 255 && u8 > 254 && u8 & 0x80"));
    assert!(ev("s16 == -2 && s16 < -1 && s16 > -3"));
    assert!(ev("u32 > 0x7fffffff && u32 == 4294967280"));
    assert!(ev(
        "s64 < 0 && s64 == -9223372036854775808 && s64 <= -9223372036854775808"
    ));
    // Fields beyond the record never match.
    let short = [int("far", 100, 4, false)];
    let f = EventFilter::compile("far == 0", &short, &env(1)).unwrap();
    assert!(!f.matches(&r, &mut SimpleContext::default()));
    assert!(EventFilter::compile("!far == 0", &short, &env(1))
        .unwrap()
        .matches(&r, &mut SimpleContext::default()));
}

#[test]
fn static_string_matching_as_reflinux_showed() {
    let sleep = sched_switch_rec("sleep", 1, 0, 0);
    let swapper = sched_switch_rec("swapper/0", 1, 0, 0);
    assert!(eval("prev_comm == \"sleep\"", &sleep));
    assert!(!eval("prev_comm == \"sleepy\"", &sleep));
    assert!(!eval("prev_comm == \"slee\"", &sleep));
    assert!(eval("prev_comm != \"sh\"", &sleep));
    assert!(eval("prev_comm ~ \"sle*\"", &sleep));
    assert!(eval("prev_comm ~ \"*lee*\"", &sleep));
    assert!(eval("prev_comm ~ \"*leep*\"", &sleep));
    assert!(eval("prev_comm ~ \"[s]leep\"", &sleep));
    assert!(eval("prev_comm ~ \"s?eep\"", &sleep));
    assert!(eval("prev_comm ~ \"*\"", &sleep));
    assert!(!eval("prev_comm ~ \"!sleep\"", &sleep));
    assert!(eval("prev_comm ~ \"!sleep\"", &swapper));
    assert!(eval("prev_comm ~ \"swapper/0\"", &swapper));
    // Linux 6.12 compares an end match with the last bytes of the array.
    assert!(!eval("prev_comm ~ \"*eep\"", &sleep));
    assert!(!eval("prev_comm ~ \"*0\"", &swapper));
    assert!(!eval("prev_comm ~ \"*r/0\"", &swapper));
    // Only a 15-byte comm (the longest, before its NUL) ends there.
    let full = sched_switch_rec("abcdefghijklmno", 1, 0, 0);
    assert!(eval("prev_comm ~ \"*mno\"", &full));
    // A leading digit makes `~` a full, literal match.
    assert!(!eval("prev_comm ~ \"1*\"", &sched_switch_rec("1x", 1, 0, 0)));
    assert!(eval("prev_comm ~ \"1*\"", &sched_switch_rec("1*", 1, 0, 0)));
}

#[test]
fn comm_and_cpu_pseudo_fields_read_the_context() {
    let r = sched_switch_rec("x", 1, 0, 0);
    let ctx = SimpleContext::new(2, "sleep");
    assert!(eval_on("comm == \"sleep\"", &r, ctx));
    assert!(eval_on("COMM ~ \"sl*\" && CPU == 2", &r, ctx));
    assert!(
        !eval_on("comm ~ \"*eep\"", &r, ctx),
        "end match on comm uses all 16 bytes"
    );
    assert!(eval_on(
        "cpu > 1 && cpu >= 2 && cpu < 3 && cpu <= 2 && cpu != 0",
        &r,
        ctx
    ));
    assert!(!eval_on("cpu & 2", &r, ctx), "& on cpu with a number is never true");
    assert!(eval_on("common_cpu == 2", &r, ctx));
    assert!(eval_on("cpu & CPUS{1-2}", &r, ctx));
    assert!(!eval_on("cpu & CPUS{0,3}", &r, ctx));
    assert!(eval_on("cpu & CPUS{2}", &r, ctx), "one CPU: & becomes ==");
    assert!(
        !eval_on("cpu == CPUS{1-2}", &r, ctx),
        "a mask of two never equals a CPU"
    );
    assert!(eval_on("cpu != CPUS{1-2}", &r, ctx));
    assert!(!eval_on("stacktrace == 1", &r, ctx));
}

#[test]
fn integer_fields_against_cpu_masks() {
    let r = sched_switch_rec("x", 2, 0, 9);
    let ctx = SimpleContext::new(0, "x");
    assert!(eval_on("prev_pid & CPUS{2-3}", &r, ctx));
    assert!(!eval_on("prev_pid & CPUS{0-1}", &r, ctx));
    assert!(eval_on("prev_pid == CPUS{2}", &r, ctx));
    assert!(eval_on("prev_pid & CPUS{2}", &r, ctx));
    assert!(eval_on("prev_pid != CPUS{3}", &r, ctx));
    // 9 is no CPU on a 4-CPU machine: not even != matches.
    assert!(!eval_on("next_pid != CPUS{0-1}", &r, ctx));
    assert!(eval_on("prev_pid != CPUS{0-1}", &r, ctx));
}

#[test]
fn function_operand_matches_addresses_inside_the_symbol() {
    let mut r = sched_switch_rec("x", 1, 0, 0);
    r[32..40].copy_from_slice(&0xffff_8000_1000_0040u64.to_le_bytes());
    assert!(eval("prev_state.function == schedule", &r));
    assert!(!eval("prev_state.function != schedule", &r));
    r[32..40].copy_from_slice(&0xffff_8000_1000_0100u64.to_le_bytes());
    assert!(!eval("prev_state.function == schedule", &r));
    assert!(!eval(
        "prev_state.function == 0xffff800010000010",
        &sched_switch_rec("x", 1, 0, 0)
    ));
    r[32..40].copy_from_slice(&0xffff_8000_1000_0000u64.to_le_bytes());
    assert!(
        eval("prev_state.function == 0xffff800010000010", &r),
        "a numeric address names its symbol"
    );
}

fn myopen_rec(fname: &str) -> Vec<u8> {
    let mut r = vec![0u8; 20];
    let loc = r.len() as u32;
    let len = fname.len() as u32 + 1;
    r[16..20].copy_from_slice(&(loc | (len << 16)).to_le_bytes());
    r.extend_from_slice(fname.as_bytes());
    r.push(0);
    r
}

#[test]
fn dynamic_string_matching_as_reflinux_showed() {
    let r = myopen_rec("/dev/null");
    let ev = |f: &str| {
        EventFilter::compile(f, &MYOPEN, &env(1))
            .unwrap()
            .matches(&r, &mut SimpleContext::default())
    };
    assert!(ev("fname == \"/dev/null\""));
    assert!(ev("fname ~ \"*null\""));
    assert!(ev("fname ~ \"/dev*\""));
    assert!(ev("fname ~ \"*dev/n*\""));
    assert!(ev("fname ~ \"/d?v/*l\""));
    assert!(ev("fname ~ \"*\""));
    assert!(!ev("fname ~ \"\""));
    assert!(!ev("fname ~ \"!*null\""));
    assert!(!ev("fname ~ \"1*\""));
    assert!(!ev("fname == \"/dev/nul\""));
    assert!(!ev("fname == \"/dev/nulll\""));
}

#[test]
fn pointer_strings_are_fetched_through_the_context() {
    struct Mem(Vec<u8>, bool);
    impl trace_filter::FilterContext for Mem {
        fn cpu(&self) -> u32 {
            0
        }
        fn comm(&self) -> &[u8] {
            b"t"
        }
        fn fetch_string(&mut self, addr: u64, user: bool) -> Option<&[u8]> {
            self.1 = user;
            (addr == 0x1000).then_some(self.0.as_slice())
        }
    }
    let fields = [EventField {
        name: "name",
        offset: 8,
        size: 8,
        is_signed: false,
        kind: FieldKind::PtrString,
    }];
    let mut r = vec![0u8; 16];
    r[8..16].copy_from_slice(&0x1000u64.to_le_bytes());
    let f = EventFilter::compile("name ~ \"*conf\"", &fields, &env(1)).unwrap();
    let mut m = Mem(b"/etc/conf".to_vec(), true);
    assert!(f.matches(&r, &mut m));
    assert!(!m.1, "kernel string without .ustring");
    let f = EventFilter::compile("name.ustring == \"/etc/conf\"", &fields, &env(1)).unwrap();
    assert!(f.matches(&r, &mut m));
    assert!(m.1, ".ustring reads user memory");
    r[8..16].copy_from_slice(&0x2000u64.to_le_bytes());
    assert!(!f.matches(&r, &mut m), "an unreadable string never matches");
}

#[test]
fn precedence_and_inversion() {
    let r = sched_switch_rec("sleep", 1, 0, 2);
    // && binds tighter than ||.
    assert!(eval("prev_pid == 1 || prev_pid == 5 && next_pid == 9", &r));
    assert!(!eval("(prev_pid == 1 || prev_pid == 5) && next_pid == 9", &r));
    assert!(eval("!(prev_pid == 5 || next_pid == 9)", &r));
    assert!(!eval("!(prev_pid == 1 || next_pid == 9)", &r));
    assert!(eval("!!(prev_pid == 1)", &r));
    assert!(!eval("!prev_pid == 1", &r));
    assert!(eval(
        "prev_pid == 1 && !(next_pid == 3 && prev_pid == 1) || next_pid == 7",
        &r
    ));
}
