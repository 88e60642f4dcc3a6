use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
extern crate std;
use std::println;

use super::{define, parse_line, MockKernel};
use crate::*;
use uapi::Errno;

/// What reflinux printed for one command: `errno` (strerror text) when
/// the write failed, the `error_log` message and caret, and what
/// `kprobe_events` held afterwards. `append` is a `>>` write; the others
/// truncated the file first.
struct Case {
    cmd: String,
    append: bool,
    errno: Option<String>,
    msg: Option<String>,
    caret: Option<usize>,
    listing: Vec<String>,
}

fn cases(text: &str) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for line in text.lines() {
        let (cmd, append) = match (line.strip_prefix("== "), line.strip_prefix("=>> ")) {
            (Some(c), _) => (Some(c), false),
            (_, Some(c)) => (Some(c), true),
            _ => (None, false),
        };
        if let Some(cmd) = cmd {
            out.push(Case {
                cmd: cmd.to_string(),
                append,
                errno: None,
                msg: None,
                caret: None,
                listing: Vec::new(),
            });
            continue;
        }
        let c = out.last_mut().expect("a case");
        if let Some(e) = line.strip_prefix("errno: ") {
            c.errno = Some(e.to_string());
        } else if let Some(m) = line.strip_prefix("trace_kprobe: error: ") {
            c.msg = Some(m.to_string());
        } else if line.starts_with("  Command: ") {
        } else if line.trim() == "^" {
            c.caret = Some(line.find('^').unwrap() - uapi::error::CMD_PREFIX.len());
        } else {
            c.listing.push(line.to_string());
        }
    }
    out
}

fn errno_of(strerror: &str) -> Errno {
    match strerror {
        "Invalid argument" => Errno::EINVAL,
        "No such file or directory" => Errno::ENOENT,
        "Argument list too long" => Errno::E2BIG,
        "Numerical result out of range" => Errno::ERANGE,
        "Operation not supported" => Errno::EOPNOTSUPP,
        "File exists" => Errno::EEXIST,
        other => panic!("unknown errno text {other}"),
    }
}

/// Commands whose Linux result comes from a quirk this crate does not copy.
const KNOWN_DIFFERENCES: &[&str] = &[
    // Linux's btf_type_is_char_ptr() reads an integer's size as a type id,
    // so `count:string` (a size_t) passes when BTF type 8 happens to be an
    // unsigned char; here only a char pointer or char array is a string.
    "p vfs_read buf:ustring count:string",
];

/// A model of the kernel's side of `kprobe_events`, built only from this
/// crate's API, as tracefs is expected to use it.
#[derive(Default)]
struct Events {
    probes: Vec<ProbeDef>,
}

/// Events that exist without being probes (Linux's syscall events).
const OTHER_EVENTS: &[(&str, &str)] = &[("syscalls", "sys_enter_read")];

impl Events {
    fn write(&mut self, line: &str) -> Result<(), CmdError> {
        match parse_line(line)? {
            Command::Empty => Ok(()),
            Command::Remove(r) => {
                let before = self.probes.len();
                self.probes.retain(|d| !r.matches(d));
                if self.probes.len() == before {
                    return Err(CmdError::new(Errno::ENOENT, "", 0));
                }
                Ok(())
            }
            Command::Define(mut d) => {
                let same: Vec<&ProbeDef> = self
                    .probes
                    .iter()
                    .filter(|p| p.group == d.group && p.event == d.event)
                    .collect();
                if same.is_empty() && OTHER_EVENTS.contains(&(d.group.as_str(), d.event.as_str())) {
                    return Err(d.event_exists_error());
                }
                d.check_append(&same)?;
                if d.is_return && d.maxactive == 0 {
                    d.maxactive = default_maxactive(1);
                }
                self.probes.push(d);
                Ok(())
            }
        }
    }

    fn listing(&self) -> Vec<String> {
        self.probes.iter().map(|d| d.render()).collect()
    }
}

fn check_fixture(text: &str, min_cases: usize) {
    let mut failures = Vec::new();
    let all = cases(text);
    assert!(all.len() >= min_cases, "fixture has {} cases", all.len());
    let mut events = Events::default();
    for c in &all {
        if KNOWN_DIFFERENCES.contains(&c.cmd.as_str()) {
            continue;
        }
        if !c.append {
            events = Events::default();
        }
        let before = events.listing();
        let got = events.write(&c.cmd);
        let problem = match (&c.errno, &c.msg, got) {
            (Some(e), m, Err(err)) => {
                let want_msg = m.clone().unwrap_or_default();
                (err.errno != errno_of(e) || err.msg != want_msg || (m.is_some() && Some(err.pos) != c.caret))
                    .then(|| format!("got {err:?}, want {e} {want_msg:?} at {:?}", c.caret))
            }
            // Refused when the probe is armed (the address is not one the
            // kernel can probe): the parser accepts it, and register_error
            // gives Linux's entry.
            (Some(e), Some(m), Ok(())) if m == TpErr::FailRegProbe.msg() || m == TpErr::BadProbeAddr.msg() => {
                let Ok(Command::Define(d)) = parse_line(&c.cmd) else {
                    unreachable!()
                };
                events.probes.pop();
                let r = d.register_error(errno_of(e));
                (r.msg != m || Some(r.pos) != c.caret).then(|| format!("register_error gave {r:?}"))
            }
            (Some(_), _, Ok(())) => Some("accepted".to_string()),
            (None, _, Ok(())) => None,
            (None, _, Err(e)) => Some(format!("want success, got {e:?}")),
        };
        if c.errno.is_some() && events.listing() != before {
            failures.push(format!("{}: a failed write changed the listing", c.cmd));
        }
        if events.listing() != c.listing {
            failures.push(format!(
                "{}: listing {:?}, want {:?}",
                c.cmd,
                events.listing(),
                c.listing
            ));
        }
        if let Some(p) = problem {
            failures.push(format!("{}: {p}", c.cmd));
        }
    }
    for f in &failures {
        println!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} differences from Linux in {} cases",
        failures.len(),
        all.len()
    );
}

/// Every command of the reflinux runs gives Linux's result here: the same
/// errno, `error_log` message and caret, and the same `kprobe_events`.
#[test]
fn every_reflinux_command_gives_linux_result() {
    check_fixture(include_str!("../../testdata/reflinux-kprobe-events.txt"), 150);
}

/// The same for field paths, appending probes to an event, and removal.
#[test]
fn reflinux_append_remove_and_btf_fields_give_linux_result() {
    check_fixture(include_str!("../../testdata/reflinux-kprobe-events-2.txt"), 26);
}

#[test]
fn format_fields_and_print_fmt_match_linux() {
    // From reflinux: events/kprobes/ev1/format.
    let d = define(
        "p:ev1 vfs_read a=+0(%x1):u8[2] b=%x1:b3@2/32 c=+0(%x1):string[2] d=$comm e=%x2:symbol f=%x0:s16 g=%x0:char",
    );
    let lines: Vec<String> = d.fields().iter().map(|f| f.format_line()).collect();
    assert_eq!(
        lines,
        [
            "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;",
            "\tfield:u8 a[];\toffset:16;\tsize:2;\tsigned:0;",
            "\tfield:u32 b;\toffset:18;\tsize:4;\tsigned:0;",
            "\tfield:__data_loc char[][2] c;\toffset:22;\tsize:8;\tsigned:1;",
            "\tfield:__data_loc char[] d;\toffset:30;\tsize:4;\tsigned:1;",
            "\tfield:u64 e;\toffset:34;\tsize:8;\tsigned:0;",
            "\tfield:s16 f;\toffset:42;\tsize:2;\tsigned:1;",
            "\tfield:u8 g;\toffset:44;\tsize:1;\tsigned:0;",
        ]
    );
    assert_eq!(
        d.print_fmt(),
        r#""(%lx) a={%u,%u} b=%u c={\"%s\",\"%s\"} d=\"%s\" e=%pS f=%d g='%c'", REC->__probe_ip, REC->a[0], REC->a[1], REC->b, __get_str(c[0]), __get_str(c[1]), __get_str(d), REC->e, REC->f, REC->g"#
    );

    let d = define("r:ev2 vfs_read $retval:x8 $arg3");
    let lines: Vec<String> = d.fields().iter().map(|f| f.format_line()).collect();
    assert_eq!(
        lines,
        [
            "\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;",
            "\tfield:unsigned long __probe_ret_ip;\toffset:16;\tsize:8;\tsigned:0;",
            "\tfield:u8 arg1;\toffset:24;\tsize:1;\tsigned:0;",
            "\tfield:u64 count;\toffset:25;\tsize:8;\tsigned:0;",
        ]
    );
    assert_eq!(
        d.print_fmt(),
        r#""(%lx <- %lx) arg1=0x%x count=%Lu", REC->__probe_func, REC->__probe_ret_ip, REC->arg1, REC->count"#
    );
    assert_eq!(d.entry_args, [2]);

    let d = define("p:ev3 do_sys_openat2 $arg* n=+0(filename):ustring f=filename:ustring flags=how->flags:x32");
    let got: Vec<(String, String, usize, usize, bool)> = d
        .fields()
        .into_iter()
        .map(|f| (f.type_name, f.name, f.offset, f.size, f.signed))
        .collect();
    let want = [
        ("unsigned long", "__probe_ip", 8, 8, false),
        ("s32", "dfd", 16, 4, true),
        ("u64", "filename", 20, 8, false),
        ("u64", "how", 28, 8, false),
        ("__data_loc char[]", "n", 36, 4, true),
        ("__data_loc char[]", "f", 40, 4, true),
        ("u32", "flags", 44, 4, false),
    ];
    let want: Vec<(String, String, usize, usize, bool)> = want
        .iter()
        .map(|w| (w.0.to_string(), w.1.to_string(), w.2, w.3, w.4))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        d.print_fmt(),
        r#""(%lx) dfd=%d filename=0x%Lx how=0x%Lx n=\"%s\" f=\"%s\" flags=0x%x", REC->__probe_ip, REC->dfd, REC->filename, REC->how, __get_str(n), __get_str(f), REC->flags"#
    );
}

#[test]
fn first_reflinux_listing_and_format_match() {
    let d = define("p:myprobe vfs_read %x0 s=+0(%x1):string");
    assert_eq!(d.render(), "p:kprobes/myprobe vfs_read arg1=%x0 s=+0(%x1):string");
    assert_eq!(
        d.print_fmt(),
        r#""(%lx) arg1=0x%Lx s=\"%s\"", REC->__probe_ip, REC->arg1, __get_str(s)"#
    );
    let d = define("r:myret vfs_read $retval");
    assert_eq!(d.fields()[2].type_name, "s64");
    assert_eq!(
        d.print_fmt(),
        r#""(%lx <- %lx) arg1=%Ld", REC->__probe_func, REC->__probe_ret_ip, REC->arg1"#
    );
    let mut d = define("r vfs_write");
    assert_eq!(d.event, "r_vfs_write_0");
    d.maxactive = default_maxactive(1);
    assert_eq!(d.render(), "r10:kprobes/r_vfs_write_0 vfs_write");
    assert_eq!(define("r5 vfs_open").render(), "r5:kprobes/r_vfs_open_0 vfs_open");
    assert_eq!(
        define("p:ev2 0xffff800080000000").render(),
        "p:kprobes/ev2 0xffff800080000000"
    );
    assert_eq!(define("p 0xffff800080000000").event, "p_0xffff800080000000");
    assert_eq!(define("p vfs_read+16").event, "p_vfs_read_16");
    assert_eq!(
        define("p vfs_read+0x10").render(),
        "p:kprobes/p_vfs_read_16 vfs_read+16"
    );
    assert_eq!(
        define("p:ev4 vfs_read $arg*").render(),
        "p:kprobes/ev4 vfs_read file=file buf=buf count=count pos=pos"
    );
    assert_eq!(
        define("r:ev5 vfs_read $arg3 file").render(),
        "r:kprobes/ev5 vfs_read count=count file=file"
    );
    assert_eq!(define("p:ev8 vfs_read%return").render(), "r:kprobes/ev8 vfs_read");
}

#[test]
fn auto_event_names_are_sanitized_and_cut_to_63_bytes() {
    let d = define("p nosuchmod:vfs_read");
    assert_eq!(d.event, "p_nosuchmod_vfs_read_0");
    assert!(d.pending, "a probe on a module that is not loaded waits");
    let mut k = MockKernel::new();
    let long: &'static str = "a_very_long_function_name_that_goes_on_and_on_and_on_for_ever_and_ever";
    k.syms.push((long, 0xffff_8000_9000_0000, 4));
    let Ok(Command::Define(d)) = parse_command(&format!("p {long}"), &k) else {
        panic!()
    };
    assert_eq!(d.event.len(), 63);
    assert!(d.event.starts_with("p_a_very_long"));
}

#[test]
fn ambiguous_symbol_is_refused_as_not_unique() {
    let e = parse_line("p dup_sym").unwrap_err();
    assert_eq!((e.errno, e.msg, e.pos), (Errno::EINVAL, "The symbol is not unique", 2));
}

#[test]
fn too_many_arguments_is_e2big_without_a_log_entry() {
    let args: Vec<String> = (0..129).map(|i| format!("a{i}=%x0")).collect();
    let e = parse_line(&format!("p vfs_read {}", args.join(" "))).unwrap_err();
    assert_eq!((e.errno, e.msg), (Errno::E2BIG, ""));
    let args: Vec<String> = (0..128).map(|i| format!("a{i}=%x0:u8")).collect();
    let d = define(&format!("p vfs_read {}", args.join(" ")));
    assert_eq!(d.args.len(), MAX_TRACE_ARGS);
}

#[test]
fn non_kprobe_commands_are_einval_without_log() {
    for cmd in ["x vfs_read", "p", "p:x", " -:x", "-foo", "-:", "p /bin/sh:0x10"] {
        let e = parse_line(cmd).unwrap_err();
        assert_eq!((e.errno, e.msg), (Errno::EINVAL, ""), "{cmd}");
    }
    assert_eq!(parse_line("   "), Ok(Command::Empty));
    assert_eq!(parse_line("# only a comment"), Ok(Command::Empty));
}

#[test]
fn remove_matches_group_event_location_and_args() {
    let d = define("p:grp/ev vfs_read a=%x0 b=+8(%x1):u32");
    let rm = |s: &str| match parse_line(s) {
        Ok(Command::Remove(r)) => r,
        other => panic!("{other:?}"),
    };
    assert!(rm("-:grp/ev").matches(&d));
    assert!(rm("-:ev").matches(&d));
    assert!(rm("-:grp/").matches(&d));
    assert!(!rm("-:kprobes/ev").matches(&d));
    assert!(!rm("-:other").matches(&d));
    assert!(rm("-:ev vfs_read").matches(&d));
    assert!(rm("-:ev vfs_read a=%x0").matches(&d));
    assert!(rm("-:ev vfs_read a=%x0 b=+8(%x1):u32").matches(&d));
    assert!(!rm("-:ev vfs_read a=%x1").matches(&d));
    assert!(!rm("-:ev vfs_write").matches(&d));
    assert!(!rm("-:ev vfs_read a=%x0 b=+8(%x1):u32 c=%x2").matches(&d));
}

#[test]
fn appending_to_an_event_checks_kind_args_and_duplicates() {
    let first = define("p:test/ev1 vfs_read a=%x0");
    let e = define("r:test/ev1 vfs_write").check_append(&[&first]).unwrap_err();
    assert_eq!(
        (e.errno, e.msg, e.pos),
        (Errno::EEXIST, "Probe type is different from existing probe", 0)
    );
    let e = define("p:test/ev1 vfs_write b=%x0")
        .check_append(&[&first])
        .unwrap_err();
    assert_eq!(
        (e.errno, e.msg, e.pos),
        (
            Errno::EEXIST,
            "Argument type or name is different from existing probe",
            21
        )
    );
    let e = define("p:test/ev1 vfs_write a=%x0:u32")
        .check_append(&[&first])
        .unwrap_err();
    assert_eq!(e.pos, 21);
    let e = define("p:test/ev1 vfs_write").check_append(&[&first]).unwrap_err();
    assert_eq!(
        (e.msg, e.pos),
        ("Argument type or name is different from existing probe", 21)
    );
    let e = define("p:test/ev1 vfs_read a=%x0").check_append(&[&first]).unwrap_err();
    assert_eq!(
        (e.errno, e.msg),
        (Errno::EEXIST, "There is already the exact same probe event")
    );
    define("p:test/ev1 vfs_read a=%x1").check_append(&[&first]).unwrap();
    define("p:test/ev1 vfs_write a=%x0").check_append(&[&first]).unwrap();
    assert_eq!(
        first.event_exists_error().msg,
        "Given group/event name is already used by another event"
    );
}

#[test]
fn register_errors_point_at_the_location() {
    let d = define("p:a vfs_read+4 x=%x0");
    let e = d.register_error(Errno::EILSEQ);
    assert_eq!((e.msg, e.pos), ("Probe point is not an instruction boundary", 4));
    assert_eq!(d.register_error(Errno::ENOMEM).msg, "");
    assert_eq!(d.register_error(Errno::EBUSY).msg, "Failed to register probe event");
}

#[test]
fn split_commands_follows_trace_parse_run_command() {
    let got: Vec<_> = split_commands(b"p a\n\n# c\np b # c\n-:x").collect();
    assert_eq!(
        got,
        [
            Ok(("p a", 4)),
            Ok(("", 5)),
            Ok(("", 9)),
            Ok(("p b ", 17)),
            Ok(("-:x", 20))
        ]
    );
    let mut long = Vec::from(&[b'x'; WRITE_BUFSIZE - 2][..]);
    long.push(b'\n');
    assert!(split_commands(&long).all(|r| r.is_ok()));
    let mut long = Vec::from(&[b'x'; WRITE_BUFSIZE - 1][..]);
    assert!(
        split_commands(&long).all(|r| r.is_ok()),
        "a last line may fill the buffer"
    );
    long.push(b'\n');
    assert_eq!(split_commands(&long).next(), Some(Err(Errno::EINVAL)));
    assert_eq!(split_commands(b"p a\np\0b\n").nth(1), Some(Err(Errno::EINVAL)));
    assert_eq!(split_commands(b"p \xff\n").next(), Some(Err(Errno::EINVAL)));
}

#[test]
fn error_log_shows_the_joined_command_with_caret() {
    let raw = "  p:sp   vfs_read   %x99  ";
    let e = parse_line(raw).unwrap_err();
    let entry = uapi::error::ErrorLogEntry {
        ts_ns: 0,
        loc: "trace_kprobe",
        cmd: &command_text(raw),
        err: e,
    };
    assert_eq!(
        format!("{entry}"),
        "[    0.000000] trace_kprobe: error: Invalid register name\n  Command: p:sp vfs_read %x99\n                         ^\n"
    );
}

#[test]
fn registers_are_arm64_names_only() {
    for r in ["x0", "x9", "x30", "sp", "pc", "pstate"] {
        assert!(Reg::from_name(r).is_some(), "{r}");
    }
    for r in ["x31", "x01", "x", "w0", "lr", "fp", "X0", "x-1", "x+1", "rsp"] {
        assert!(Reg::from_name(r).is_none(), "{r}");
    }
}

#[test]
fn btf_bitfield_member_gets_a_modify_step() {
    let d = define("p vfs_read x=file->f_path.dentry->d_bits");
    assert_eq!(d.args[0].ty.name, "u32");
    assert!(d.args[0].code.iter().any(|c| c.op == crate::insn::Op::ModBf));
}

#[test]
fn dentry_args_expand_when_the_kernel_has_the_layout() {
    assert_eq!(
        define("p vfs_read %x0:%pd").render(),
        "p:kprobes/p_vfs_read_0 vfs_read arg1=+0x0(+0x28(%x0)):string"
    );
    assert_eq!(
        define("p vfs_read n=%x0:%pD").render(),
        "p:kprobes/p_vfs_read_0 vfs_read n=+0x0(+0x28(+0x40(%x0))):string"
    );
    let mut k = MockKernel::new();
    k.dentry = None;
    let e = parse_command("p vfs_read %x0:%pd", &k).unwrap_err();
    assert_eq!(
        (e.errno, e.msg, e.pos),
        (Errno::EINVAL, "Unknown type is specified", 15)
    );
}

#[test]
fn expanded_argument_names_have_a_128_byte_budget() {
    let mut k = MockKernel::new();
    let long = |i: usize| {
        (
            format!("parameter_with_a_rather_long_name_{i}"),
            CType::Int {
                bytes: 8,
                signed: false,
            },
        )
    };
    k.protos.push((
        "vfs_open",
        FuncProto {
            ret: CType::Void,
            params: (0..4).map(long).collect(),
        },
    ));
    // Three names of 36 bytes and their NULs fit in 128; the fourth does not.
    let e = parse_command("p vfs_open $arg*", &k).unwrap_err();
    assert_eq!(
        (e.errno, e.msg, e.pos),
        (Errno::E2BIG, "$arg* failed because the argument list is too long", 11)
    );
    let Ok(Command::Define(d)) = parse_command("p vfs_open $arg1 $arg3", &k) else {
        panic!()
    };
    assert_eq!(d.args[1].name, "parameter_with_a_rather_long_name_2");
}

#[test]
fn typed_retval_and_arguments_follow_the_prototype() {
    let d = define("r do_sys_openat2 $retval dfd how->mode");
    let types: Vec<&str> = d.args.iter().map(|a| a.ty.name).collect();
    assert_eq!(types, ["s64", "s32", "u64"]);
    assert_eq!(d.entry_args, [0, 2], "dfd and how are saved at entry");
    let e = parse_line("r kfree $retval").unwrap_err();
    assert_eq!((e.errno, e.msg), (Errno::ENOENT, "This function returns 'void' type"));
    // A function the kernel knows nothing about: $retval is untyped.
    assert_eq!(define("r vfs_write $retval").args[0].ty.name, "x64");
    let e = parse_line("r vfs_write $retval->x").unwrap_err();
    assert_eq!(
        (e.errno, e.msg, e.pos),
        (Errno::ENOENT, "No BTF entry for this probe point", 21)
    );
}
