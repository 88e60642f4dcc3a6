//! `f` and `t` definitions (Linux's `trace_fprobe.c`): the error cases of
//! ftracetest's `fprobe_syntax_errors.tc` and `tprobe_syntax_errors.tc`
//! (the caret is where `^` stands), naming, listing and the record layout.

use alloc::string::{String, ToString};
use alloc::vec;

use super::MockKernel;
use crate::*;
use uapi::Errno;

/// The mock kernel with a `kfree` tracepoint whose probe function is
/// `__probestub_kfree(void *__data, unsigned long call_site, const void *ptr)`,
/// as BTF describes it.
struct TpKernel(MockKernel);

impl TpKernel {
    fn new() -> TpKernel {
        let mut k = MockKernel::new();
        k.syms.push(("__probestub_kfree", 0xffff_8000_8070_0000, 0x8));
        k.protos.push((
            "__probestub_kfree",
            FuncProto {
                ret: CType::Void,
                params: vec![
                    ("__data".to_string(), CType::Ptr(Pointee::Other)),
                    (
                        "call_site".to_string(),
                        CType::Int {
                            bytes: 8,
                            signed: false,
                        },
                    ),
                    ("ptr".to_string(), CType::Ptr(Pointee::Other)),
                ],
            },
        ));
        TpKernel(k)
    }
}

impl ProbeContext for TpKernel {
    fn lookup_name(&self, name: &str) -> Option<u64> {
        self.0.lookup_name(name)
    }
    fn count_symbols(&self, name: &str) -> usize {
        self.0.count_symbols(name)
    }
    fn func_proto(&self, name: &str) -> Option<&FuncProto> {
        self.0.func_proto(name)
    }
    fn dentry_layout(&self) -> Option<DentryLayout> {
        self.0.dentry_layout()
    }
    fn tracepoint_probe(&self, name: &str) -> Option<String> {
        (name == "kfree").then(|| "__probestub_kfree".to_string())
    }
}

fn parse(cmd: &str) -> Result<ProbeDef, CmdError> {
    parse_fprobe_command(cmd, &TpKernel::new())
}

/// Checks that `marked` (with `^` where the caret must point) fails with
/// `msg`.
fn check_error(marked: &str, msg: &str) {
    let pos = marked.find('^').expect("a caret");
    let cmd: String = marked.chars().filter(|&c| c != '^').collect();
    match parse(&cmd) {
        Ok(d) => panic!("{cmd}: accepted as {}", d.render()),
        Err(e) => {
            assert_eq!(e.msg, msg, "{cmd}");
            assert_eq!(e.pos, pos, "{cmd}: caret");
        }
    }
}

#[test]
fn fprobe_syntax_errors_point_where_linux_does() {
    let cases = [
        ("f^100 vfs_read", "Maxactive is only for function exit"),
        ("f^1a111 vfs_read", "Invalid maxactive number"),
        ("f^100000 vfs_read", "Maxactive is too big"),
        ("f:^/bar vfs_read", "Group name is not specified"),
        (
            "f:^12345678901234567890123456789012345678901234567890123456789012345/bar vfs_read",
            "Group name is too long",
        ),
        (
            "f:^foo.1/bar vfs_read",
            "Group name must follow the same rules as C identifiers",
        ),
        ("f:^ vfs_read", "Event name is not specified"),
        (
            "f:foo/^bar.1 vfs_read",
            "Event name must follow the same rules as C identifiers",
        ),
        ("f vfs_read ^$stack10000", "Invalid stack number"),
        ("f vfs_read ^$none_var", "Invalid $-variable specified"),
        ("f vfs_read ^@12345678abcde", "Invalid memory address"),
        ("f vfs_read ^@+10", "File offset is not available with kprobe"),
        ("f vfs_read ^+0@0)", "Dereference needs a brace"),
        ("f vfs_read ^&1", "Invalid fetch argument"),
        ("f vfs_read ^%x0", "Invalid fetch argument"),
        ("f vfs_read @11:^unknown_type", "Unknown type is specified"),
        ("f vfs_read ^=@11", "Argument name is not specified"),
        ("f vfs_read var1=@11 ^var1=@12", "This argument name is already used"),
        ("f vfs_read arg1=^", "No argument expression"),
        ("f vfs_read^%hoge", "Invalid probed address suffix"),
        (
            "f vfs_read $arg* ^$arg*",
            "$arg* can be used only once in the parameters",
        ),
        ("f vfs_read ^hoge", "This variable is not found at this probe point"),
        ("f kfree ^$arg10", "This variable is not found at this probe point"),
        ("f kfree%return ^$retval", "This function returns 'void' type"),
        ("f vfs_read file->^foo", TpErr::NoBtfField.msg()),
    ];
    for (marked, msg) in cases {
        check_error(marked, msg);
    }
}

#[test]
fn tprobe_syntax_errors_point_where_linux_does() {
    check_error("t^100 kfree", "Maxactive is only for function exit");
    check_error(
        "t:foo/^bar.1 kfree",
        "Event name must follow the same rules as C identifiers",
    );
    check_error("t kfree ^$retval", "$retval is not available on probe");
    check_error("t kfree ^$stack10000", "Invalid stack number");
    check_error("t kfree ^@+10", "File offset is not available with kprobe");
    check_error("t kfree arg1=^", "No argument expression");
    check_error("t ^no_such_tp", "Tracepoint is not found");
    check_error("t kf^-ree", "Invalid character in tracepoint name");
    check_error("t kfree^%return", "Invalid probed address suffix");
}

#[test]
fn fprobe_names_groups_and_listing_follow_linux() {
    let d = parse("f vfs_read").unwrap();
    assert_eq!(
        (d.group.as_str(), d.event.as_str(), d.is_return),
        ("fprobes", "vfs_read__entry", false)
    );
    assert_eq!(d.render(), "f:fprobes/vfs_read__entry vfs_read");
    let d = parse("f vfs_read%return").unwrap();
    assert_eq!(d.event, "vfs_read__exit");
    assert_eq!(d.render(), "f:fprobes/vfs_read__exit vfs_read%return");
    // `$retval` alone makes an exit probe.
    let d = parse("f:grp/ev vfs_read ret=$retval").unwrap();
    assert!(d.is_return);
    assert_eq!(d.render(), "f:grp/ev vfs_read%return ret=$retval");
    let d = parse("f5:ev vfs_read%return").unwrap();
    assert_eq!(d.render(), "f5:fprobes/ev vfs_read%return");
    let d = parse("t kfree").unwrap();
    assert_eq!((d.group.as_str(), d.event.as_str()), ("tracepoints", "kfree"));
    assert_eq!(d.render(), "t:tracepoints/kfree kfree");
    // Not an `f`/`t` command: left to the other types.
    assert_eq!(parse("p vfs_read").unwrap_err().errno, Errno::ECANCELED);
    assert_eq!(parse("f").unwrap_err().errno, Errno::ECANCELED);
}

#[test]
fn fprobe_arguments_are_btf_names_and_tracepoint_args_skip_the_data() {
    let d = parse("f vfs_read $arg*").unwrap();
    let names: alloc::vec::Vec<&str> = d.args.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["file", "buf", "count", "pos"]);
    // At exit, arguments are saved at entry.
    let d = parse("f vfs_read%return count $retval").unwrap();
    assert_eq!(d.entry_args, [2]);
    assert_eq!(
        d.fields()
            .iter()
            .map(|f| f.name.as_str())
            .collect::<alloc::vec::Vec<_>>(),
        ["__probe_func", "__probe_ret_ip", "count", "arg2"]
    );
    let d = parse("t kfree $arg*").unwrap();
    let names: alloc::vec::Vec<&str> = d.args.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["call_site", "ptr"]);
    assert_eq!(d.fields()[0].name, "__probe_ip");
}

#[test]
fn an_fprobe_cannot_join_a_tprobe_event() {
    let t = parse("t:tracepoint/testevent kfree").unwrap();
    let f = parse("f:tracepoint/testevent kfree").unwrap();
    let e = f.check_append(&[&t]).unwrap_err();
    assert_eq!(
        (e.errno, e.msg),
        (Errno::EEXIST, "Probe type is different from existing probe")
    );
    let t2 = parse("t:tracepoint/testevent kfree").unwrap();
    assert_eq!(
        t2.check_append(&[&t]).unwrap_err().msg,
        "There is already the exact same probe event"
    );
}
