//! In-kernel tests of the kprobe event tracer through its tracefs files:
//! a `p:` and an `r:` probe on a test function defined, enabled, hit,
//! printed, counted and removed; Linux's errors for refused definitions.

use super::tracefs;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use ktest_macros::kernel_test;
use uapi::fcntl::{O_APPEND, O_RDONLY, O_TRUNC, O_WRONLY};
use uapi::Errno;
use vfs::file::OpenFile;
use vfs::Inode;

/// The probed function: not inlined, under a plain name outside the
/// (notrace) tracing modules.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_trace_kprobe_target(a: u64, s: *const u8) -> u64 {
    core::hint::black_box(s);
    core::hint::black_box(a.wrapping_mul(3))
}

fn open(path: &str, flags: u32) -> Result<Arc<OpenFile>, Errno> {
    let mut inode: Arc<dyn Inode> = tracefs::tracefs().root_dir().clone();
    for part in path.split('/') {
        inode = inode.lookup(part.as_bytes())?;
    }
    if flags & O_TRUNC != 0 {
        inode.truncate(0)?;
    }
    let ops = inode.open(flags)?.ok_or(Errno::EINVAL)?;
    Ok(OpenFile::new_ops(None, inode, ops, flags & !O_TRUNC))
}

fn read_all(path: &str) -> String {
    let f = open(path, O_RDONLY).expect("open");
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8(out).expect("text")
}

/// `echo text > path`.
fn put(path: &str, text: &str) -> Result<usize, Errno> {
    open(path, O_WRONLY | O_TRUNC)?.write(text.as_bytes())
}

/// `echo text >> path`.
fn append(path: &str, text: &str) -> Result<usize, Errno> {
    open(path, O_WRONLY | O_APPEND)?.write(text.as_bytes())
}

fn last_line(path: &str) -> String {
    String::from(read_all(path).lines().last().unwrap_or(""))
}

#[kernel_test]
fn kprobe_event_defined_enabled_hit_printed_counted_and_removed() {
    put("kprobe_events", "").unwrap();
    put("trace", "").unwrap();
    append(
        "kprobe_events",
        "p:ktkp ktest_trace_kprobe_target a=%x0 s=+0(%x1):string\nr:ktkr ktest_trace_kprobe_target ret=$retval arg=$arg1\n",
    )
    .unwrap();
    assert_eq!(
        read_all("kprobe_events"),
        "p:kprobes/ktkp ktest_trace_kprobe_target a=%x0 s=+0(%x1):string\n\
         r10:kprobes/ktkr ktest_trace_kprobe_target ret=$retval arg=$arg1\n"
    );
    // Defined but disabled: a call is not counted.
    ktest_trace_kprobe_target(1, c"x".as_ptr().cast());
    assert!(read_all("kprobe_profile")
        .lines()
        .all(|l| l.split_whitespace().nth(1) == Some("0")));
    put("events/kprobes/enable", "1").unwrap();
    assert_eq!(ktest_trace_kprobe_target(7, c"hello".as_ptr().cast()), 21);
    put("events/kprobes/enable", "0").unwrap();
    let trace = read_all("trace");
    let lines: Vec<&str> = trace.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 2, "{trace}");
    assert!(
        lines[0].contains(" ktkp: (ktest_trace_kprobe_target+0x0/0x") && lines[0].ends_with(") a=0x7 s=\"hello\""),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(" ktkr: (") && lines[1].ends_with(" <- ktest_trace_kprobe_target) ret=0x15 arg=0x7"),
        "{}",
        lines[1]
    );
    let profile = read_all("kprobe_profile");
    assert_eq!(
        profile,
        alloc::format!(
            "  {:<44} {:>15} {:>15}\n  {:<44} {:>15} {:>15}\n",
            "ktkp",
            1,
            0,
            "ktkr",
            1,
            0
        )
    );
    assert!(read_all("events/kprobes/ktkr/format").contains("\tfield:unsigned long __probe_ret_ip;\toffset:16;"));
    // Disabled again: no more hits.
    ktest_trace_kprobe_target(2, c"y".as_ptr().cast());
    assert_eq!(read_all("kprobe_profile"), profile);
    // Removal while enabled is EBUSY; so is clearing.
    put("events/kprobes/ktkp/enable", "1").unwrap();
    assert_eq!(append("kprobe_events", "-:ktkp"), Err(Errno::EBUSY));
    assert_eq!(open("kprobe_events", O_WRONLY | O_TRUNC).err(), Some(Errno::EBUSY));
    put("events/kprobes/ktkp/enable", "0").unwrap();
    append("kprobe_events", "-:kprobes/ktkp").unwrap();
    assert_eq!(open("events/kprobes/ktkp/id", O_RDONLY).err(), Some(Errno::ENOENT));
    assert_eq!(append("kprobe_events", "-:ktkp"), Err(Errno::ENOENT));
    put("kprobe_events", "").unwrap();
    assert_eq!(read_all("kprobe_events"), "");
    assert_eq!(open("events/kprobes", O_RDONLY).err(), Some(Errno::ENOENT));
    // The event was enabled: removing it cleared the trace, as on Linux.
    assert!(read_all("trace").lines().all(|l| l.starts_with('#')));
}

#[kernel_test]
fn refused_definitions_return_linux_errnos_and_log_linux_errors() {
    put("kprobe_events", "").unwrap();
    put("error_log", "").unwrap();
    // notrace code (here memcpy) is refused as Linux refuses blacklisted
    // addresses.
    assert_eq!(append("kprobe_events", "p:bl memcpy"), Err(Errno::EINVAL));
    assert_eq!(read_all("error_log").lines().nth(1), Some("  Command: p:bl memcpy"));
    assert!(read_all("error_log").contains("trace_kprobe: error: Failed to register probe event\n"));
    assert_eq!(
        append(
            "kprobe_events",
            "p:ok ktest_trace_kprobe_target\np:bad ktest_trace_kprobe_target %x99\n"
        ),
        Err(Errno::EINVAL)
    );
    // The first command of the write took effect.
    assert_eq!(read_all("kprobe_events"), "p:kprobes/ok ktest_trace_kprobe_target\n");
    let caret = "  Command: p:bad ktest_trace_kprobe_target ".len();
    assert_eq!(last_line("error_log"), alloc::format!("{:caret$}^", ""));
    assert_eq!(
        append("kprobe_events", "r:ok ktest_trace_kprobe_target"),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        append("kprobe_events", "p:x no_such_function_anywhere"),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        append("kprobe_events", "z:x ktest_trace_kprobe_target"),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        append("dynamic_events", "z:x ktest_trace_kprobe_target"),
        Err(Errno::EINVAL)
    );
    assert_eq!(read_all("dynamic_events"), "p:kprobes/ok ktest_trace_kprobe_target\n");
    put("dynamic_events", "").unwrap();
    assert_eq!(read_all("kprobe_events"), "");
    put("error_log", "").unwrap();
}
