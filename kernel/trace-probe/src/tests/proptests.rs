//! Random and mutated definitions: nothing panics, every rejection points
//! into the command, and every accepted one fetches and prints safely.
//! `TRACE_PROBE_CASES=1000000` (scripts/test.sh sets it in release mode)
//! runs a million; the default is quicker.

extern crate std;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use core::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::fetch_tests::MockHit;
use super::MockKernel;
use crate::*;

const VALID: &[&str] = &[
    "p:myprobe vfs_read %x0 s=+0(%x1):string",
    "r:myret vfs_read $retval",
    "p:grp/ev vfs_read b=%sp c=$stack3 d=$stack e=@jiffies f=@jiffies+8:x32",
    r#"p:grp/ev vfs_read g=$comm h=\123 i=\"abc""#,
    "p:grp/ev vfs_read j=+0(%x1):u8[4] k=%x2:b3@4/32 l=%pc:symbol m=%x0:symstr n=-8(%sp):x16",
    "p vfs_read o=+u0(%x1):ustring p=+0(+8(%x1)):string[3]",
    "p:ev4 vfs_read $arg*",
    "r:ev5 vfs_read $arg3 file file->f_flags:x32",
    "p do_sys_openat2 $arg* n=+0(filename):ustring flags=how->flags:x32",
    "p vfs_read file->f_path.dentry->d_name.name:string",
    "r4 vfs_write%return $retval:s32",
    "-:grp/ev vfs_read a=%x0",
    "p 0xffff800080300000 %x0:%pd",
];

const PIECES: &[&str] = &[
    "p",
    "r",
    "r10",
    ":",
    "/",
    " ",
    "  ",
    "vfs_read",
    "do_sys_openat2",
    "schedule",
    "+",
    "-",
    "+4",
    "%return",
    "%x0",
    "%sp",
    "%pc",
    "@",
    "@jiffies",
    "$",
    "$arg",
    "$arg*",
    "$arg1",
    "$retval",
    "$comm",
    "$stack",
    "(",
    ")",
    "+0(",
    "u",
    ":string",
    ":u8",
    ":s64",
    ":x32",
    ":symstr",
    ":ustring",
    ":b3@4/32",
    "[",
    "]",
    "[4]",
    "=",
    "a=",
    "\\",
    "\\\"",
    "\"",
    "->",
    ".",
    "file",
    "buf",
    "f_path",
    "dentry",
    "0x",
    "99999999999999999999",
    "-:",
    "#",
    "\t",
    "é",
    "%pd",
];

fn cases() -> u32 {
    std::env::var("TRACE_PROBE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn mutate(base: &str, edits: &[(u8, usize, usize)]) -> String {
    let mut s: Vec<char> = base.chars().collect();
    for &(kind, a, b) in edits {
        let at = if s.is_empty() { 0 } else { a % (s.len() + 1) };
        match kind % 4 {
            0 => {
                for (i, c) in PIECES[b % PIECES.len()].chars().enumerate() {
                    s.insert(at + i, c);
                }
            }
            1 if at < s.len() => {
                s.remove(at);
            }
            2 if at < s.len() => {
                let end = (at + 1 + b % 8).min(s.len());
                s.drain(at..end);
            }
            _ => {
                let end = (at + b % 6).min(s.len());
                let dup: Vec<char> = s[at..end].to_vec();
                for (i, c) in dup.into_iter().enumerate() {
                    s.insert(end + i, c);
                }
            }
        }
    }
    s.into_iter().collect()
}

/// Parses `cmd`; on rejection checks the position, on success exercises
/// fetch and print on a hit.
fn check(cmd: &str, kernel: &MockKernel, hit: &MockHit, seen: &[AtomicUsize; 2]) -> Result<(), TestCaseError> {
    let result = parse_command(cmd, kernel);
    seen[usize::from(result.is_ok())].fetch_add(1, Ordering::Relaxed);
    match result {
        Err(e) => {
            let text = command_text(cmd);
            prop_assert!(e.pos <= text.len() + 1, "{cmd:?}: pos {} beyond {:?}", e.pos, text);
            prop_assert!(e.errno != uapi::Errno::ECANCELED);
        }
        Ok(Command::Define(d)) => {
            prop_assert!(d.args.len() <= MAX_TRACE_ARGS);
            prop_assert!(d.size <= MAX_PROBE_EVENT_SIZE);
            let mut edata = vec![0u64; d.entry_data_len()];
            d.store_entry_data(hit, &mut edata);
            let mut rec = vec![0u8; d.max_size().min(1 << 20)];
            let site = ProbeSite::Return {
                func: 0xffff_8000_8030_0000,
                ret_ip: 0xffff_8000_8030_2010,
            };
            if let Ok(n) = d.fetch(hit, site, &edata, &mut rec) {
                let mut out = Vec::new();
                d.print(&rec[..n], kernel, &mut out);
            }
            let _ = (d.render(), d.print_fmt(), d.fields());
        }
        Ok(_) => {}
    }
    Ok(())
}

#[test]
fn random_and_mutated_definitions_never_panic_and_point_inside() {
    let kernel = MockKernel::new();
    let hit = MockHit::new();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop_oneof![
        3 => (0..VALID.len(), proptest::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 0..5))
            .prop_map(|(i, e)| mutate(VALID[i], &e)),
        1 => proptest::collection::vec(0..PIECES.len(), 1..24)
            .prop_map(|v| v.into_iter().map(|i| PIECES[i]).collect::<String>()),
        1 => "[ -~]{0,80}",
    ];
    let seen = [AtomicUsize::new(0), AtomicUsize::new(0)];
    runner.run(&strategy, |cmd| check(&cmd, &kernel, &hit, &seen)).unwrap();
    // Both paths are exercised: rejections and accepted definitions that
    // are then fetched and printed.
    let (rejected, accepted) = (seen[0].load(Ordering::Relaxed), seen[1].load(Ordering::Relaxed));
    let total = rejected + accepted;
    assert!(
        accepted * 10 > total && rejected * 10 > total,
        "accepted {accepted}, rejected {rejected}"
    );
}
