//! kprobe_events seen from a shell: Debian's busybox runs
//! `kprobe_events/kprobe_events.sh` (definitions and their listing and
//! `format`, hits of `p:` and `r:` probes in `trace` and `kprobe_profile`
//! with `$retval`, `$comm`, `%x0`, user strings through the system call's
//! registers and entry arguments at return, multiprobe events,
//! `dynamic_events`, Linux's errnos and `error_log` entries, EBUSY for an
//! enabled event, O_TRUNC clearing) on `virt -smp 1` and `-smp 4`, and
//! must print `kprobe_events/kprobe_events.golden` (taken on Linux 6.12;
//! pids, times, CPUs, addresses, function sizes and the system call's
//! caller masked); when ../shared/reflinux is there, real Linux must
//! print the same.

use e2e::{busybox, reflinux_stdout, root, run_commands};
use std::path::PathBuf;

const GOLDEN: &str = include_str!("kprobe_events/kprobe_events.golden");

fn script() -> PathBuf {
    root().join("tests/kprobe_events/kprobe_events.sh")
}

fn run_on(smp: &str) {
    let (out, code) = run_commands(
        &["--smp", smp],
        &[busybox(), script()],
        "busybox sh /bin/kprobe_events.sh",
        120,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, GOLDEN, "smp {smp}");
}

#[test]
fn kprobe_events_define_hit_and_remove_as_on_linux_smp1() {
    run_on("1");
}

#[test]
fn kprobe_events_define_hit_and_remove_as_on_linux_smp4() {
    run_on("4");
}

#[test]
fn real_linux_prints_the_same_kprobe_events_session() {
    let Some(linux) = reflinux_stdout("2", 180, &[busybox(), script()], "busybox sh /bin/kprobe_events.sh") else {
        return;
    };
    assert_eq!(linux, GOLDEN, "real Linux differs");
}

/// What `user_pointer_args.sh` prints on Linux 6.12 (as on reflinux).
const USER_POINTER_ARGS: &str = "\
sh: write error: Invalid argument
how:ustring refused
p:kprobes/uname do_sys_openat2 filename=filename:ustring
p:kprobes/kname do_sys_openat2 filename=filename:string
p:kprobes/ptr do_sys_openat2 dfd=dfd filename=filename
[TS] trace_kprobe: error: This type does not fit for string.
  Command: p:bad do_sys_openat2 how:ustring
                                ^
busybox-PID [CPU] d.... TS: kname: (do_sys_openat2+0x0/SIZE) filename=\"/proc/version\"
busybox-PID [CPU] d.... TS: ptr: (do_sys_openat2+0x0/SIZE) dfd=-100 filename=UADDR
busybox-PID [CPU] d.... TS: uname: (do_sys_openat2+0x0/SIZE) filename=\"/proc/version\"
";

/// A user-pointer argument named through BTF (this kernel's `UserPtr`,
/// Linux's `const char __user *`) takes `:ustring` and `:string` and
/// prints the string, as on Linux; a structure pointer does not.
#[test]
fn user_pointer_btf_arguments_take_ustring_and_print_the_string_as_on_linux() {
    let files = [busybox(), root().join("tests/kprobe_events/user_pointer_args.sh")];
    let cmds = "busybox sh /bin/user_pointer_args.sh";
    let (out, code) = run_commands(&["--smp", "2"], &files, cmds, 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, USER_POINTER_ARGS);
    // The same argument through an fprobe event (Debian's Linux has no
    // CONFIG_FPROBE_EVENTS to compare with).
    let fprobe = "cd /sys/kernel/tracing && \
        echo 'f:fname do_sys_openat2 filename:ustring' >> dynamic_events && \
        echo 1 > events/fprobes/fname/enable && busybox cat /proc/version > /dev/null && \
        echo 0 > events/fprobes/fname/enable && busybox grep -c 'fname: (do_sys_openat2+0x4/0x[0-9a-f]*) filename=\"/proc/version\"$' trace";
    let (out, code) = run_commands(&["--smp", "1"], &[busybox()], fprobe, 60);
    assert_eq!((out.trim(), code), ("1", 0), "{out}");
    let Some(linux) = reflinux_stdout("2", 120, &files, cmds) else {
        return;
    };
    assert_eq!(linux, USER_POINTER_ARGS, "real Linux differs");
}
