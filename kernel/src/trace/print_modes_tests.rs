//! In-kernel tests of `raw`, `hex`, `bin` and `fields` on entries no test
//! program can make on both kernels: the wakeup tracers' `context_switch`
//! and `wakeup` (Debian's Linux has no wakeup tracer to compare with), an
//! entry of no registered type, and the choice between the printers.

use super::options::{self, BIN, CONTEXT_INFO, FIELDS, HEX, RAW};
use super::output::print_trace_entry;
use super::trace_sched_wakeup::{TRACE_CTX, TRACE_WAKE};
use super::{instance_array, instance_array_free};
use alloc::vec::Vec;
use ktest_macros::kernel_test;

/// A `context_switch` or `wakeup` entry as the wakeup tracers record it:
/// pid 152 (prio 120, sleeping) to pid 17 (prio 120, running) on CPU 1.
fn ctx_entry(ty: u16) -> Vec<u8> {
    let mut e = alloc::vec![0u8; 24];
    e[0..2].copy_from_slice(&ty.to_le_bytes());
    e[4..8].copy_from_slice(&152i32.to_le_bytes());
    e[8..12].copy_from_slice(&152u32.to_le_bytes());
    e[12..16].copy_from_slice(&17u32.to_le_bytes());
    e[16..20].copy_from_slice(&1u32.to_le_bytes());
    e[20] = 120;
    e[21] = 1;
    e[22] = 120;
    e[23] = 0;
    e
}

/// Prints `entry` (recorded on CPU 1 at time 1000) under `flags`.
fn print(flags: u32, entry: &[u8]) -> Vec<u8> {
    let tr = instance_array(options::DEFAULT_FLAGS).expect("an instance array");
    for bit in [RAW, HEX, BIN, FIELDS, CONTEXT_INFO] {
        tr.set_trace_flag(bit, flags & bit != 0);
    }
    let mut out = Vec::new();
    print_trace_entry(tr, &mut out, &mut alloc::string::String::new(), 1, 1000, entry);
    instance_array_free(tr);
    out
}

#[kernel_test]
fn context_switch_and_wakeup_print_linux_raw_hex_and_bin() {
    let (ctx, wake) = (ctx_entry(TRACE_CTX), ctx_entry(TRACE_WAKE));
    assert_eq!(print(RAW | CONTEXT_INFO, &ctx), b"152 1 1000 152 120 S 1 17 120 R\n");
    assert_eq!(print(RAW, &wake), b"152 120 + 1 17 120 R\n");
    assert_eq!(print(HEX, &ctx), b"00000098 78 53 00000001 00000011 78 00000052 \n");
    assert_eq!(print(HEX, &wake), b"00000098 78 2b 00000001 00000011 78 00000052 \n");
    assert_eq!(
        print(BIN, &wake),
        [152, 0, 0, 0, 120, 1, 1, 0, 0, 0, 17, 0, 0, 0, 120, 0]
    );
    // bin wins over hex, hex over raw.
    assert_eq!(print(BIN | HEX | RAW, &ctx), print(BIN, &ctx));
    assert_eq!(print(HEX | RAW, &ctx), print(HEX, &ctx));
    // A fixed type under fields: Linux 6.12 finds no event for it.
    assert_eq!(print(FIELDS, &ctx), b"UNKNOWN TYPE 2\n");
}

#[kernel_test]
fn an_entry_of_no_registered_type_prints_linux_unknown_lines() {
    let mut e = alloc::vec![0u8; 16];
    e[0..2].copy_from_slice(&65000u16.to_le_bytes());
    e[4..8].copy_from_slice(&7i32.to_le_bytes());
    assert_eq!(print(RAW | CONTEXT_INFO, &e), b"7 1 1000 65000 ?\n");
    assert_eq!(print(HEX | CONTEXT_INFO, &e), b"00000007 00000001 00000000000003e8 \n");
    let mut bin = alloc::vec![7, 0, 0, 0, 1, 0, 0, 0];
    bin.extend_from_slice(&1000u64.to_le_bytes());
    assert_eq!(print(BIN | CONTEXT_INFO, &e), bin);
    assert_eq!(print(0, &e), b"Unknown type 65000\n");
    assert_eq!(print(FIELDS, &e), b"Unknown type 65000\n");
}
