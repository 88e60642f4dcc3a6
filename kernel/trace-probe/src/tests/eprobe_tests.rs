//! Event probes: the grammar's errors where Linux points (ftracetest's
//! `eprobes_syntax_errors.tc` and what reflinux logged), the listing,
//! format and text Linux gives, fields read from the attached record, and
//! random definitions and records that never panic.

extern crate std;

use super::MockKernel;
use crate::*;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const UADDR: u64 = 0x0000_aaaa_0000_1000;

/// `syscalls/sys_enter_openat`, `sched/sched_switch` and a synthetic
/// event with a `__data_loc` string, as this kernel and Linux lay them out.
struct Events;

fn f(name: &str, offset: u32, size: u32, signed: bool, string: Option<StrKind>) -> TeventField {
    TeventField {
        name: name.to_string(),
        offset,
        size,
        signed,
        string,
    }
}

impl EventLookup for Events {
    fn event_fields(&self, system: &str, event: &str) -> Option<Vec<TeventField>> {
        match (system, event) {
            ("syscalls", "sys_enter_openat") => Some(vec![
                f("__syscall_nr", 8, 4, true, None),
                f("dfd", 16, 8, false, None),
                f("filename", 24, 8, false, Some(StrKind::Ptr)),
                f("flags", 32, 8, false, None),
                f("mode", 40, 8, false, None),
            ]),
            ("sched", "sched_switch") => Some(vec![
                f("prev_comm", 8, 16, true, Some(StrKind::Static)),
                f("prev_pid", 24, 4, true, None),
            ]),
            ("synthetic", "lat") => Some(vec![
                f("lat", 8, 8, false, None),
                f("name", 16, 8, true, Some(StrKind::DataLoc)),
            ]),
            _ => None,
        }
    }

    fn check_filter(&self, _: &str, _: &str, filter: &str) -> Result<(), uapi::Errno> {
        if filter.contains("bogus") {
            Err(uapi::Errno::EINVAL)
        } else {
            Ok(())
        }
    }
}

/// A hit: the attached record and user memory with a file name.
struct RecHit {
    rec: Vec<u8>,
    umem: Vec<u8>,
}

impl FetchEnv for RecHit {
    fn register(&self, _: Reg) -> u64 {
        0
    }
    fn kernel_stack_nth(&self, _: u32) -> u64 {
        0
    }
    fn read_kernel(&self, _: u64, _: &mut [u8]) -> bool {
        false
    }
    fn read_user(&self, addr: u64, dst: &mut [u8]) -> bool {
        let Some(off) = addr.checked_sub(UADDR).and_then(|o| usize::try_from(o).ok()) else {
            return false;
        };
        match off.checked_add(dst.len()).and_then(|e| self.umem.get(off..e)) {
            Some(s) => {
                dst.copy_from_slice(s);
                true
            }
            None => false,
        }
    }
    fn comm(&self) -> &[u8] {
        b"cat"
    }
    fn sprint_symbol(&self, _: u64, _: &mut [u8]) -> usize {
        0
    }
    fn event_record(&self) -> &[u8] {
        &self.rec
    }
}

fn eprobe(cmd: &str) -> Result<ProbeDef, CmdError> {
    parse_eprobe(cmd, &MockKernel::new(), &Events)
}

fn openat_record(dfd: i64, flags: u64) -> Vec<u8> {
    let mut rec = vec![0u8; 48];
    rec[8..12].copy_from_slice(&56i32.to_le_bytes());
    rec[16..24].copy_from_slice(&dfd.to_le_bytes());
    rec[24..32].copy_from_slice(&UADDR.to_le_bytes());
    rec[32..40].copy_from_slice(&flags.to_le_bytes());
    rec
}

fn record_and_print(def: &ProbeDef, hit: &RecHit) -> String {
    let mut out = vec![0u8; def.max_size().min(1 << 16)];
    let n = def.fetch(hit, ProbeSite::Entry { ip: 0 }, &[], &mut out).unwrap();
    let mut text = Vec::new();
    def.print(&out[..n], &MockKernel::new(), &mut text);
    String::from_utf8(text).unwrap()
}

#[test]
fn eprobe_syntax_errors_point_where_linux_points() {
    // (command with ^ at the error, message): eprobes_syntax_errors.tc and
    // what reflinux logged for the others.
    let cases = [
        ("e ^a.", TpErr::NoEventInfo),
        ("e ^.b", TpErr::NoEventInfo),
        ("e ^a.b", TpErr::BadAttachEvent),
        ("e syscalls/sys_enter_openat ^foo", TpErr::NosupBtfarg),
        ("e:^/bar syscalls/sys_enter_openat", TpErr::NoGroupName),
        (
            "e:^12345678901234567890123456789012345678901234567890123456789012345/bar syscalls/sys_enter_openat",
            TpErr::GroupTooLong,
        ),
        ("e:^foo.1/bar syscalls/sys_enter_openat", TpErr::BadGroupName),
        ("e:^ syscalls/sys_enter_openat", TpErr::NoEventName),
        (
            "e:foo/^12345678901234567890123456789012345678901234567890123456789012345 syscalls/sys_enter_openat",
            TpErr::EventTooLong,
        ),
        ("e:foo/^bar.1 syscalls/sys_enter_openat", TpErr::BadEventName),
        ("e:foo/bar syscalls/sys_enter_openat arg=^dfd", TpErr::NosupBtfarg),
        ("e:foo/bar syscalls/sys_enter_openat arg=^$foo", TpErr::BadVar),
        ("e:foo/bar syscalls/sys_enter_openat if ^", TpErr::NoEpFilter),
        ("e:ep4 syscalls.sys_enter_openat x=$comm y=^$common_pid", TpErr::BadVar),
        ("e:ep5 syscalls.sys_enter_openat ^$stack", TpErr::BadVar),
        ("e:ep6 syscalls.sys_enter_openat ^$arg1", TpErr::BadVar),
        ("e:ep7 syscalls.sys_enter_openat ^%x0", TpErr::BadFetchArg),
        ("e:ep10 ^kprobes.foo", TpErr::BadAttachEvent),
    ];
    for (marked, want) in cases {
        let pos = marked.find('^').unwrap();
        let cmd = marked.replace('^', "");
        let e = eprobe(&cmd).expect_err(&cmd);
        assert_eq!((e.msg, e.pos), (want.msg(), pos), "{cmd}");
    }
    // A missing event is ENODEV; a bad filter is the filter's error, which
    // the kernel logs itself.
    assert_eq!(eprobe("e a.b").unwrap_err().errno, uapi::Errno::ENODEV);
    let e = eprobe("e:x syscalls.sys_enter_openat $flags if bogus == 1").unwrap_err();
    assert_eq!((e.errno, e.msg), (uapi::Errno::EINVAL, ""));
    // Not an event probe at all.
    assert_eq!(eprobe("p vfs_read").unwrap_err().errno, uapi::Errno::ECANCELED);
}

#[test]
fn eprobe_listing_format_and_text_are_linuxs() {
    let def =
        eprobe("e:ep1 syscalls.sys_enter_openat file=+0($filename):ustring fl=$flags dfd=$dfd:x32 m=$mode").unwrap();
    assert_eq!(
        def.render(),
        "e:eprobes/ep1 syscalls.sys_enter_openat file=+0($filename):ustring fl=$flags dfd=$dfd:x32 m=$mode"
    );
    assert_eq!(
        def.print_fmt(),
        "\" file=\\\"%s\\\" fl=0x%Lx dfd=0x%x m=0x%Lx\", __get_str(file), REC->fl, REC->dfd, REC->m"
    );
    let lines: Vec<String> = def.fields().iter().map(|f| f.format_line()).collect();
    assert_eq!(
        lines,
        [
            "\tfield:__data_loc char[] file;\toffset:8;\tsize:4;\tsigned:1;",
            "\tfield:u64 fl;\toffset:12;\tsize:8;\tsigned:0;",
            "\tfield:u32 dfd;\toffset:20;\tsize:4;\tsigned:0;",
            "\tfield:u64 m;\toffset:24;\tsize:8;\tsigned:0;",
        ]
    );
    let hit = RecHit {
        rec: openat_record(-100, 0),
        umem: b"/etc/passwd\0".to_vec(),
    };
    assert_eq!(
        record_and_print(&def, &hit),
        "(syscalls.sys_enter_openat) file=\"/etc/passwd\" fl=0x0 dfd=0xffffff9c m=0x0"
    );
    // Defaults: the event's name, group eprobes, argN names; the filter is
    // kept but not listed.
    let def = eprobe("e sched/sched_switch $prev_pid nc=$prev_comm:string if prev_pid > 0").unwrap();
    assert_eq!(
        def.render(),
        "e:eprobes/sched_switch sched.sched_switch arg1=$prev_pid nc=$prev_comm:string"
    );
    assert!(matches!(&def.kind, ProbeKind::Eprobe { filter: Some(f), .. } if f == "prev_pid > 0"));
    let def = eprobe("e:mygrp/ sched.sched_switch").unwrap();
    assert_eq!((def.group.as_str(), def.event.as_str()), ("mygrp", "sched_switch"));
    assert_eq!(def.print_fmt(), "\"\"");
}

#[test]
fn eprobe_fields_come_from_the_attached_record() {
    let mut rec = vec![0u8; 40];
    rec[8..14].copy_from_slice(b"kwork\0");
    rec[24..28].copy_from_slice(&(-3i32).to_le_bytes());
    let hit = RecHit { rec, umem: Vec::new() };
    let def = eprobe("e sched.sched_switch c=$prev_comm:string p=$prev_pid:s32 q=$prev_pid").unwrap();
    // A signed field is sign-extended into a wider argument.
    assert_eq!(
        record_and_print(&def, &hit),
        "(sched.sched_switch) c=\"kwork\" p=-3 q=0xfffffffffffffffd"
    );
    // A __data_loc string of a synthetic event.
    let mut rec = vec![0u8; 24];
    rec[8..16].copy_from_slice(&42u64.to_le_bytes());
    rec[16..20].copy_from_slice(&((4u32 << 16) | 24).to_le_bytes());
    rec.extend_from_slice(b"abc\0");
    let hit = RecHit { rec, umem: Vec::new() };
    let def = eprobe("e synthetic.lat l=$lat:u64 n=$name:string").unwrap();
    assert_eq!(record_and_print(&def, &hit), "(synthetic.lat) l=42 n=\"abc\"");
    // A user pointer that cannot be read prints (fault).
    let hit = RecHit {
        rec: openat_record(3, 0x241),
        umem: Vec::new(),
    };
    let def = eprobe("e syscalls.sys_enter_openat f=+0($filename):ustring fl=$flags:x32").unwrap();
    assert_eq!(
        record_and_print(&def, &hit),
        "(syscalls.sys_enter_openat) f=(fault) fl=0x241"
    );
}

const PIECES: &[&str] = &[
    "e",
    ":",
    "/",
    ".",
    " ",
    "$",
    "eprobes",
    "syscalls",
    "sys_enter_openat",
    "sched",
    "sched_switch",
    "synthetic",
    "lat",
    "$flags",
    "$filename",
    "$prev_comm",
    "$name",
    "$comm",
    ":string",
    ":ustring",
    ":u8[3]",
    ":s32",
    ":x64",
    "+0(",
    ")",
    "=",
    "if",
    "==",
    "a",
    "1",
    "@",
    "%x0",
    "\\\"",
    "[",
    "]",
];

const VALID: &[&str] = &[
    "e:ep1 syscalls.sys_enter_openat file=+0($filename):ustring fl=$flags",
    "e sched.sched_switch c=$prev_comm:string p=$prev_pid:s32",
    "e synthetic.lat l=$lat n=$name:string +8($name):u8[4] if lat > 1",
];

#[test]
fn random_eprobe_definitions_and_records_never_panic() {
    let mut runner = TestRunner::new(Config {
        cases: 4000,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        prop_oneof![
            2 => (0..VALID.len(), proptest::collection::vec((0..PIECES.len(), any::<usize>(), any::<bool>()), 0..4))
                .prop_map(|(i, edits)| {
                    let mut s = String::from(VALID[i]);
                    for (p, at, del) in edits {
                        let mut at = at % (s.len() + 1);
                        while !s.is_char_boundary(at) {
                            at -= 1;
                        }
                        if del && at < s.len() {
                            s.remove(at);
                        } else {
                            s.insert_str(at, PIECES[p]);
                        }
                    }
                    s
                }),
            1 => proptest::collection::vec(0..PIECES.len(), 1..16)
                .prop_map(|v| v.into_iter().map(|i| PIECES[i]).collect::<String>()),
        ],
        proptest::collection::vec(any::<u8>(), 0..64),
    );
    runner
        .run(&strategy, |(cmd, rec)| {
            match eprobe(&cmd) {
                Err(e) => {
                    prop_assert!(e.pos <= command_text(&cmd).len() + 1, "{cmd:?}: {e:?}");
                }
                Ok(def) => {
                    let hit = RecHit {
                        rec,
                        umem: b"x\0".to_vec(),
                    };
                    let mut out = vec![0u8; def.max_size().min(1 << 16)];
                    if let Ok(n) = def.fetch(&hit, ProbeSite::Entry { ip: 0 }, &[], &mut out) {
                        let mut text = Vec::new();
                        def.print(&out[..n], &MockKernel::new(), &mut text);
                    }
                    let _ = (def.render(), def.print_fmt(), def.fields());
                }
            }
            Ok(())
        })
        .unwrap();
}
