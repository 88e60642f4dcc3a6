//! Bad definitions: each is refused with Linux's errno, leaves
//! `kprobe_events` as it was, and adds exactly Linux's `error_log` entry
//! (`trace_kprobe: error: MESSAGE`, the command, a caret under the
//! offending token).

use alloc::format;
use alloc::string::String;

use kprobetests::parse;
use rt::Errno;

use super::tracefs;
use crate::{check_eq, checks, Check, Context, Fail, Outcome};

pub static CHECKS: &[Check] = checks![
    bad_register_is_einval_with_its_error_log_entry,
    bad_type_is_einval_with_its_error_log_entry,
    retval_on_entry_probe_is_einval_with_its_error_log_entry,
    unknown_symbol_is_einval_with_its_error_log_entry,
    too_many_arguments_is_e2big,
    repeated_argument_name_is_einval_with_its_error_log_entry,
    duplicate_event_is_eexist_with_its_error_log_entry,
];

/// Writes `def`, expects `errno`, then exactly one `error_log` entry with
/// `message`, the command as written, and the caret under the first
/// occurrence of `at` in it (the command's start when `at` is empty); with
/// no `message`, expects `error_log` to stay empty.
fn refused_with(def: &str, errno: Errno, message: Option<&str>, at: &str) -> Outcome {
    let t = tracefs()?;
    t.write("error_log", "").ctx("clear error_log")?;
    let before = t.read_text("kprobe_events").ctx("read kprobe_events")?;
    check_eq!(t.define(def), Err(errno), "writing {def:?}");
    check_eq!(
        t.read_text("kprobe_events").ctx("read kprobe_events")?,
        before,
        "kprobe_events after the refused {def:?}"
    );
    let log = t.read_text("error_log").ctx("read error_log")?;
    let entries = parse::error_log(&log).ok_or_else(|| Fail(format!("error_log does not parse:\n{log}")))?;
    let Some(message) = message else {
        check_eq!(entries, alloc::vec![], "error_log entries:\n{log}\n");
        return Ok(());
    };
    let caret = def.find(at).ok_or_else(|| Fail(format!("{at:?} not in {def:?}")))?;
    let want = parse::ErrorLogEntry {
        message: format!("trace_kprobe: error: {message}"),
        command: def.into(),
        caret,
    };
    check_eq!(entries, alloc::vec![want], "error_log entries:\n{log}\n");
    Ok(())
}

fn refused(def: &str, errno: Errno, message: &str, at: &str) -> Outcome {
    refused_with(def, errno, Some(message), at)
}

fn bad_register_is_einval_with_its_error_log_entry() -> Outcome {
    refused("p:kt_bad vfs_read %x99", Errno::EINVAL, "Invalid register name", "%x99")
}

fn bad_type_is_einval_with_its_error_log_entry() -> Outcome {
    refused(
        "p:kt_bad vfs_read x=%x1:u99",
        Errno::EINVAL,
        "Unknown type is specified",
        "u99",
    )
}

fn retval_on_entry_probe_is_einval_with_its_error_log_entry() -> Outcome {
    refused(
        "p:kt_bad vfs_read x=$retval",
        Errno::EINVAL,
        "$retval is not available on probe",
        "$retval",
    )
}

fn unknown_symbol_is_einval_with_its_error_log_entry() -> Outcome {
    refused(
        "p:kt_bad kprobetests_no_such_function",
        Errno::EINVAL,
        "Invalid probed address or symbol",
        "kprobetests_",
    )
}

fn too_many_arguments_is_e2big() -> Outcome {
    // MAX_TRACE_ARGS is 128: 128 arguments are fine, 129 are not.
    let args = |n: usize| -> String { (0..n).map(|i| format!(" a{i}=%x1")).collect() };
    let t = tracefs()?;
    t.define(&format!("p:kt_max vfs_read{}", args(128)))
        .ctx("128 arguments")?;
    let fmt = t.read_text("events/kprobes/kt_max/format").ctx("read format")?;
    check_eq!(
        fmt.matches("\tfield:u64 a").count(),
        128,
        "argument fields in the format"
    );
    // Linux refuses the 129th before parsing it, without an error_log
    // entry.
    refused_with(&format!("p:kt_bad vfs_read{}", args(129)), Errno::E2BIG, None, "")
}

fn repeated_argument_name_is_einval_with_its_error_log_entry() -> Outcome {
    refused(
        "p:kt_bad vfs_read count=%x2 count=%x1",
        Errno::EINVAL,
        "This argument name is already used",
        "count=%x1",
    )
}

fn duplicate_event_is_eexist_with_its_error_log_entry() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_dup vfs_read").ctx("define")?;
    refused(
        "p:kt_dup vfs_read",
        Errno::EEXIST,
        "There is already the exact same probe event",
        "",
    )?;
    refused(
        "r:kt_dup vfs_write",
        Errno::EEXIST,
        "Probe type is different from existing probe",
        "",
    )?;
    refused(
        "p:kt_dup vfs_write x=%x1",
        Errno::EEXIST,
        "Argument type or name is different from existing probe",
        "x=%x1",
    )
}
