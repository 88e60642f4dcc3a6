//! In-kernel tests of `define_trace_event!`: the entry follows C's layout
//! rules and the `format` file lists exactly that layout; enabling the
//! event turns its static key on, and what `trace_<name>` records decodes
//! back to its text line; the generated system call table agrees with the
//! kernel's own.

use super::events;
use super::test_files::{read_all, write};
use super::tracepoint::{syscalls, Comm, DataLocStr};
use crate::define_trace_event;
use alloc::format;
use ktest_macros::kernel_test;

define_trace_event! {
    /// A test event with every kind of field, at awkward alignments.
    ktest_tp / ktest_tp_mixed,
    fn trace_ktest_tp_mixed(a: u8, b: i64, name: [u8; 16], text: &[u8], e: i16, f: [u64; 2]),
    fields {
        a: u8 as "unsigned char" = a,
        b: i64 as "long" = b,
        c: Comm as "char" = name,
        d: DataLocStr as "__data_loc char[]" = text,
        e: i16 as "short" = e,
        f: [u64; 2] as "unsigned long" = f,
    },
    printk "\"a=%u b=%ld c=%s d=%s e=%hd f=%lx,%lx\", REC->a, REC->b, REC->c, __get_str(d), REC->e, REC->f[0], REC->f[1]",
    print(out, e) {
        write!(out, "a={} b={} c={} d={} e={} f={:x},{:x}", e.a, e.b, e.c, e.d, e.e, e.f[0], e.f[1])
    }
}

fn registered() -> alloc::sync::Arc<events::TraceEvent> {
    if ktest_tp_mixed::EVENT.get().is_none() {
        super::tracefs::tracefs();
        ktest_tp_mixed::register().unwrap();
    }
    ktest_tp_mixed::EVENT.get().unwrap().clone()
}

#[kernel_test]
fn tracepoint_entry_is_laid_out_as_c_and_its_format_lists_that_layout() {
    let ev = registered();
    // C's rules by hand: u8 at 8, long aligned to 16, char[16] at 24,
    // the data_loc word at 40, short at 44, unsigned long[2] aligned to 48.
    let expected = [
        ("unsigned char", "a", 8, 1, 0),
        ("long", "b", 16, 8, 1),
        ("char", "c[16]", 24, 16, 0),
        ("__data_loc char[]", "d", 40, 4, 0),
        ("short", "e", 44, 2, 1),
        ("unsigned long", "f[2]", 48, 16, 0),
    ];
    let mut want = format!(
        "name: ktest_tp_mixed\nID: {}\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
         \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n",
        ev.id
    );
    for (ty, name, off, size, signed) in expected {
        want.push_str(&format!(
            "\tfield:{ty} {name};\toffset:{off};\tsize:{size};\tsigned:{signed};\n"
        ));
    }
    want.push_str("\nprint fmt: \"a=%u b=%ld c=%s d=%s e=%hd f=%lx,%lx\", REC->a, REC->b, REC->c, __get_str(d), REC->e, REC->f[0], REC->f[1]\n");
    assert_eq!(read_all("events/ktest_tp/ktest_tp_mixed/format"), want);
    // The record layout is the one the format file gives.
    use core::mem::offset_of;
    use ktest_tp_mixed::Raw;
    let offs = [
        offset_of!(Raw, a),
        offset_of!(Raw, b),
        offset_of!(Raw, c),
        offset_of!(Raw, d),
        offset_of!(Raw, e),
        offset_of!(Raw, f),
    ];
    for (f, off) in ev.fields().iter().zip(offs) {
        assert_eq!(f.offset, off, "{}", f.name);
    }
    assert_eq!(core::mem::size_of::<Raw>(), 64);
}

#[kernel_test]
fn tracepoint_key_follows_enable_and_the_record_prints_its_fields() {
    let _ev = registered();
    let mut name = [0u8; 16];
    name[..5].copy_from_slice(b"hello");
    let fire = || trace_ktest_tp_mixed(7, -2, name, b"/bin/data", -3, [0xabc, 0xdef]);
    write("trace", "").unwrap();
    assert!(!ktest_tp_mixed::KEY.enabled());
    fire();
    assert!(!read_all("trace").contains("ktest_tp_mixed"), "recorded while off");
    write("events/ktest_tp/ktest_tp_mixed/enable", "1").unwrap();
    assert_eq!(ktest_tp_mixed::KEY.count(), 1);
    fire();
    write("events/ktest_tp/enable", "0").unwrap();
    assert!(!ktest_tp_mixed::KEY.enabled());
    fire();
    let trace = read_all("trace");
    let lines: alloc::vec::Vec<&str> = trace.lines().filter(|l| l.contains("ktest_tp_mixed")).collect();
    assert_eq!(lines.len(), 1, "{trace}");
    assert!(
        lines[0].ends_with(": ktest_tp_mixed: a=7 b=-2 c=hello d=/bin/data e=-3 f=abc,def"),
        "{trace}"
    );
    // A filter sees the fields at the format's offsets.
    write("events/ktest_tp/ktest_tp_mixed/filter", "b == -2 && e == -4").unwrap();
    write("events/ktest_tp/ktest_tp_mixed/enable", "1").unwrap();
    fire();
    write("events/ktest_tp/ktest_tp_mixed/filter", "b == -2 && e == -3").unwrap();
    fire();
    write("events/ktest_tp/ktest_tp_mixed/enable", "0").unwrap();
    write("events/ktest_tp/ktest_tp_mixed/filter", "0").unwrap();
    let n = read_all("trace")
        .lines()
        .filter(|l| l.contains("ktest_tp_mixed"))
        .count();
    assert_eq!(n, 2, "the filter passes only the matching record");
    write("trace", "").unwrap();
}

#[kernel_test]
fn syscall_events_take_their_arguments_from_the_one_table() {
    super::tracefs::tracefs();
    // Every call with events has as many arguments as the kernel's table
    // says (the table describes some calls this kernel lacks with their
    // compat argument split, which is why only those with events count).
    let mut with_events = 0;
    for p in syscalls::SYSCALL_PROTOS {
        let Some(ev) = events::find_event("syscalls", &format!("sys_enter_{}", p.name)) else {
            continue;
        };
        with_events += 1;
        let s = uapi::syscalls::by_nr(p.nr).expect("listed");
        assert_eq!(s.args.len(), p.args.len(), "{}", p.name);
        assert_eq!(ev.fields().len(), 1 + p.args.len(), "{}", p.name);
    }
    assert!(with_events > 50, "{with_events} system calls have events");
    let openat = events::find_event("syscalls", "sys_enter_openat").expect("sys_enter_openat");
    let names: alloc::vec::Vec<&str> = openat.fields().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["__syscall_nr", "dfd", "filename", "flags", "mode"]);
    // Only calls the kernel has get events.
    assert!(events::find_event("syscalls", "sys_enter_io_setup").is_none());
}

/// Allocates 4001 bytes from a function of its own (not inlined), which
/// `kmalloc`'s `call_site` must name.
#[inline(never)]
fn allocating_function() -> alloc::vec::Vec<u8> {
    core::hint::black_box(alloc::vec![7u8; 4001])
}

#[kernel_test]
fn kmalloc_and_kfree_name_the_allocating_function_without_recursing() {
    super::tracefs::tracefs();
    write("trace", "").unwrap();
    write("events/kmem/kmalloc/enable", "1").unwrap();
    write("events/kmem/kfree/enable", "1").unwrap();
    let b = allocating_function();
    let addr = b.as_ptr() as usize;
    drop(b);
    write("events/kmem/enable", "0").unwrap();
    let trace = read_all("trace");
    let alloc_line = trace
        .lines()
        .find(|l| l.contains(&format!("ptr={addr:016x} bytes_req=4001 ")))
        .unwrap_or_else(|| panic!("no kmalloc of 4001 bytes at {addr:x}:\n{trace}"));
    assert!(
        alloc_line.contains("call_site=kernel__trace__tracepoint_tests__allocating_function+"),
        "{alloc_line}"
    );
    assert!(
        alloc_line.ends_with("bytes_alloc=4001 gfp_flags=GFP_KERNEL node=-1 accounted=false"),
        "{alloc_line}"
    );
    assert!(
        trace
            .lines()
            .any(|l| l.contains(": kfree: call_site=") && l.ends_with(&format!("ptr={addr:016x}"))),
        "no kfree of {addr:x}:\n{trace}"
    );
    write("trace", "").unwrap();
}

#[kernel_test]
fn printk_console_event_records_each_log_line_without_its_newline() {
    super::tracefs::tracefs();
    let fmt = read_all("events/printk/console/format");
    assert!(fmt.starts_with("name: console\nID: "), "{fmt}");
    assert!(
        fmt.ends_with(
            "\tfield:__data_loc char[] msg;\toffset:8;\tsize:4;\tsigned:0;\n\n\
             print fmt: \"%s\", __get_str(msg)\n"
        ),
        "{fmt}"
    );
    write("trace", "").unwrap();
    // Off: nothing recorded.
    crate::pr_info!("ktest console line before enabling");
    write("events/printk/console/enable", "1").unwrap();
    crate::pr_info!("ktest console line {}\n", 42);
    crate::printk::printk_level(crate::printk::level::WARNING, format_args!("ktest warning line"));
    write("events/printk/console/enable", "0").unwrap();
    crate::pr_info!("ktest console line after disabling");
    let trace = read_all("trace");
    let lines: alloc::vec::Vec<&str> = trace
        .lines()
        .filter_map(|l| l.split_once(": console: ").map(|(_, m)| m))
        .filter(|m| m.starts_with("ktest "))
        .collect();
    assert_eq!(lines, ["ktest console line 42", "ktest warning line"], "{trace}");
    write("trace", "").unwrap();
}

#[kernel_test]
fn syscall_gate_is_held_by_every_syscall_event_probe_and_the_irq_hooks() {
    super::tracefs::tracefs();
    let gate = &syscalls::SYSCALL_WORK_KEY;
    let before = gate.count();
    let on = [
        "events/raw_syscalls/sys_enter/enable",
        "events/raw_syscalls/sys_exit/enable",
        "events/syscalls/sys_enter_getpid/enable",
        "events/syscalls/sys_exit_getpid/enable",
        "events/preemptirq/irq_enable/enable",
    ];
    for (i, f) in on.iter().enumerate() {
        write(f, "1").unwrap();
        assert_eq!(gate.count(), before + i + 1, "{f}");
        assert!(gate.enabled(), "{f}");
    }
    // The irqsoff tracer holds the interrupt-mask hooks, so the gate too.
    write("current_tracer", "irqsoff").unwrap();
    assert_eq!(gate.count(), before + on.len() + 1);
    write("current_tracer", "nop").unwrap();
    // A tracepoint probe (`t:` event) on sys_enter holds it with the key.
    let stub = super::tracepoint::tracepoint_probe_register("sys_enter").unwrap();
    assert_ne!(stub, 0);
    assert_eq!(gate.count(), before + on.len() + 1);
    super::tracepoint::tracepoint_probe_unregister("sys_enter");
    for f in on {
        write(f, "0").unwrap();
    }
    assert_eq!(gate.count(), before);
    assert_eq!(gate.enabled(), before > 0);
    assert_eq!(syscalls::SYSCALL_ENTER_KEY.count(), 0);
    assert_eq!(syscalls::SYSCALL_EXIT_KEY.count(), 0);
}

/// The static-key sites inside the function `name`, by key.
fn key_sites_in(name: &str) -> alloc::vec::Vec<usize> {
    let f = crate::kallsyms::lookup_unique_name(name).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    assert_ne!(f.size, 0, "{name} has no size");
    let text = f.addr..f.addr + f.size;
    arch::jump_label::jump_table()
        .iter()
        .filter(|e| text.contains(&(e.code() as u64)))
        .map(|e| e.key())
        .collect()
}

/// What a system call costs while every tracepoint is off: the handler it
/// runs in tests the system-call gate twice (entry, and exit with the
/// return to user mode) and none of the keys behind it, which only the
/// out-of-line slow paths test.
#[kernel_test]
fn system_call_handler_tests_only_the_gate_at_entry_and_exit() {
    let addr = |k: &'static crate::jump_label::StaticKey| k as *const _ as usize;
    let gate = addr(&syscalls::SYSCALL_WORK_KEY);
    let behind = [
        addr(&syscalls::sys_enter::KEY),
        addr(&syscalls::sys_exit::KEY),
        addr(&syscalls::SYSCALL_ENTER_KEY),
        addr(&syscalls::SYSCALL_EXIT_KEY),
    ];
    let handler = key_sites_in("el0t_64_sync_handler");
    assert_eq!(handler.iter().filter(|&&k| k == gate).count(), 2, "{handler:x?}");
    assert!(!handler.iter().any(|k| behind.contains(k)), "{handler:x?}");
    for slow in ["kernel__syscalls__el0_svc_work", "kernel__syscalls__el0_svc_exit_work"] {
        let sites = key_sites_in(slow);
        assert!(!sites.contains(&gate), "{slow} tests the gate again: {sites:x?}");
    }
}
