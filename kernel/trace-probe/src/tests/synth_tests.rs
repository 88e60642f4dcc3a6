//! Synthetic event definitions: Linux's errors and caret positions
//! (ftracetest's `trigger-synthetic_event_syntax_errors.tc` and what
//! reflinux logged), field types as Linux's format files show them, and
//! random commands that never panic.

extern crate std;

use crate::synth::*;
use alloc::string::String;
use alloc::vec::Vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use uapi::Errno;

fn none(_: &str) -> bool {
    false
}

#[test]
fn synthetic_event_syntax_errors_point_where_linux_points() {
    let cases: &[(&str, &str, Errno)] = &[
        ("myevent ^chr arg", "Invalid type", Errno::EINVAL),
        ("myevent ^unsigned arg", "Incomplete type", Errno::EINVAL),
        ("myevent char ^str]; int v", "Illegal name", Errno::EINVAL),
        ("^mye-vent char str[]", "Illegal name", Errno::EINVAL),
        ("myevent char ^st-r[]", "Illegal name", Errno::EINVAL),
        ("myevent char str;^[]", "Invalid field", Errno::EINVAL),
        ("myevent char str; ^int", "Invalid field", Errno::EINVAL),
        (
            "myevent char ^str[; int v",
            "Invalid array specification",
            Errno::EINVAL,
        ),
        ("myevent char ^str[kdjdk]", "Invalid array specification", Errno::EINVAL),
        ("myevent char ^str[257]", "Invalid array specification", Errno::EINVAL),
        ("myevent ^u32 arr[4]", "Invalid type", Errno::EINVAL),
        (
            "^mye;vent char str[]",
            "Command must be of the form: <name> field[;field] ...",
            Errno::EINVAL,
        ),
        (
            "^myevent ; char str[]",
            "Command must be of the form: <name> field[;field] ...",
            Errno::EINVAL,
        ),
        (
            "^myevent; char str[]",
            "Command must be of the form: <name> field[;field] ...",
            Errno::EINVAL,
        ),
        (
            "^myevent ;char str[]",
            "Command must be of the form: <name> field[;field] ...",
            Errno::EINVAL,
        ),
        (
            "^; char str[]",
            "Command must be of the form: <name> field[;field] ...",
            Errno::EINVAL,
        ),
        (
            "^;myevent char str[]",
            "Command must be of the form: <name> field[;field] ...",
            Errno::EINVAL,
        ),
        (
            "^myevent",
            "Command must be of the form: <name> field[;field] ...",
            Errno::EINVAL,
        ),
    ];
    for &(marked, msg, errno) in cases {
        let pos = marked.find('^').unwrap();
        let cmd = marked.replace('^', "");
        let e = parse_synth_events_cmd(&cmd, &none).expect_err(&cmd);
        assert_eq!((e.msg, e.pos, e.errno), (msg, pos, errno), "{cmd}");
    }
    let e = parse_synth_dyn_cmd("s:junk/myevent char str[", &none).unwrap_err();
    assert_eq!(
        (e.msg, e.pos),
        (
            "Command must be of the form: s or -:[synthetic/]<name> field[;field] ...",
            0
        )
    );
    // An existing name is EEXIST at the name, before the fields are read.
    let e = parse_synth_events_cmd("  myev u64 x", &|n| n == "myev").unwrap_err();
    assert_eq!((e.errno, e.msg, e.pos), (Errno::EEXIST, "Event already exists", 0));
    assert_eq!(synth_cmd_text("  myev u64 x"), "myev u64 x");
    // Not a synthetic event command.
    assert_eq!(
        parse_synth_dyn_cmd("p:x vfs_read", &none).unwrap_err().errno,
        Errno::ECANCELED
    );
}

#[test]
fn synthetic_fields_have_linuxs_types_sizes_and_signs() {
    let cmd = "myev u64 lat; pid_t pid; char comm[16]; unsigned int x; s64 y; char name[]; s8 b; \
               s16 h; bool f; gfp_t g; unsigned long[] st";
    let Ok(SynthCmd::Create { name, fields }) = parse_synth_events_cmd(cmd, &none) else {
        panic!("{cmd}")
    };
    assert_eq!(name, "myev");
    let got: Vec<(&str, &str, usize, bool, usize)> = fields
        .iter()
        .map(|f| (f.name.as_str(), f.type_name.as_str(), f.size, f.is_signed, f.slots()))
        .collect();
    // As reflinux's format file: comm takes 256 bytes, the rest 8 each.
    assert_eq!(
        got,
        [
            ("lat", "u64", 8, false, 1),
            ("pid", "pid_t", 4, true, 1),
            ("comm", "char[16]", 16, true, 32),
            ("x", "unsigned int", 4, false, 1),
            ("y", "s64", 8, true, 1),
            ("name", "__data_loc char[]", 8, true, 1),
            ("b", "s8", 1, true, 1),
            ("h", "s16", 2, true, 1),
            ("f", "bool", 1, true, 1),
            ("g", "gfp_t", 4, false, 1),
            ("st", "__data_loc unsigned long[]", 8, true, 1),
        ]
    );
    let desc: Vec<&str> = fields.iter().map(SynthField::desc_type).collect();
    assert_eq!(desc[2], "char[16]");
    assert_eq!(desc[5], "char[]");
    let fmts: Vec<&str> = fields.iter().map(SynthField::fmt).collect();
    assert_eq!(
        fmts,
        ["%llu", "%d", "%s", "%u", "%lld", "%s", "%d", "%d", "%d", "%x", "%s"]
    );
    // The old form without semicolons, and dynamic_events' prefix.
    let Ok(SynthCmd::Create { fields, .. }) =
        parse_synth_dyn_cmd("s:synthetic/wl  u64 lat pid_t pid char comm[16]", &none)
    else {
        panic!()
    };
    assert_eq!(fields.len(), 3);
    assert_eq!(
        parse_synth_events_cmd("!myev", &none),
        Ok(SynthCmd::Delete {
            name: String::from("myev")
        })
    );
    assert_eq!(parse_synth_events_cmd(" \t", &none), Ok(SynthCmd::Empty));
}

const PIECES: &[&str] = &[
    "s:",
    "synthetic/",
    "myev",
    " ",
    ";",
    "\t",
    "!",
    "u64",
    "unsigned",
    "int",
    "long",
    "char",
    "[",
    "]",
    "16",
    "257",
    "lat",
    "name",
    "pid_t",
    "gfp_t",
    "long[]",
    "-",
    "é",
    "0x10",
];

#[test]
fn random_synthetic_commands_never_panic_and_point_inside() {
    let mut runner = TestRunner::new(Config {
        cases: 5000,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop_oneof![
        proptest::collection::vec(0..PIECES.len(), 0..20)
            .prop_map(|v| v.into_iter().map(|i| PIECES[i]).collect::<String>()),
        "[ -~]{0,60}",
    ];
    runner
        .run(&strategy, |cmd| {
            for r in [parse_synth_events_cmd(&cmd, &none), parse_synth_dyn_cmd(&cmd, &none)] {
                match r {
                    Err(e) => prop_assert!(e.pos <= synth_cmd_text(&cmd).len(), "{cmd:?}: {e:?}"),
                    Ok(SynthCmd::Create { fields, .. }) => {
                        prop_assert!(!fields.is_empty() && fields.len() <= SYNTH_FIELDS_MAX);
                        for f in &fields {
                            prop_assert!(f.size > 0 && f.size <= STR_VAR_LEN_MAX);
                        }
                    }
                    Ok(_) => {}
                }
            }
            Ok(())
        })
        .unwrap();
}
