//! `chrt`: run a program with a scheduling policy and real-time priority,
//! or show a process's (util-linux's options and messages, the subset
//! ftracetest's wakeup tests and people use):
//!
//!     chrt [-f|-r|-o|-b|-i] PRIORITY COMMAND [ARG...]
//!     chrt -p [-f|-r|-o|-b|-i] [PRIORITY] PID
#![no_std]
#![no_main]

use rt::io::Bytes;
use rt::{eprintln, println};

rt::main!(main);

const POLICIES: [(&[u8], i32, &str); 5] = [
    (b"-o", 0, "SCHED_OTHER"),
    (b"-f", 1, "SCHED_FIFO"),
    (b"-r", 2, "SCHED_RR"),
    (b"-b", 3, "SCHED_BATCH"),
    (b"-i", 5, "SCHED_IDLE"),
];

fn usage() -> i32 {
    eprintln!("usage: chrt [-f|-r|-o|-b|-i] PRIORITY COMMAND [ARG...]");
    eprintln!("       chrt -p [-f|-r|-o|-b|-i] [PRIORITY] PID");
    1
}

fn number(s: &[u8]) -> Option<i32> {
    core::str::from_utf8(s).ok()?.parse().ok()
}

fn policy_name(policy: i32) -> &'static str {
    POLICIES.iter().find(|p| p.1 == policy).map_or("SCHED_UNKNOWN", |p| p.2)
}

/// Finds `cmd` in `$PATH` (or takes it as a path if it has a `/`) and
/// execs it; returns the status to exit with when that fails.
fn exec(cmd: &[u8], argv: &[&[u8]]) -> i32 {
    let env: alloc::vec::Vec<&[u8]> = rt::env::vars().collect();
    if cmd.contains(&b'/') {
        let e = rt::process::execve(cmd, argv.iter().copied(), env.iter().copied());
        eprintln!("chrt: failed to execute {}: {e}", Bytes(cmd));
        return if e == rt::Errno::ENOENT { 127 } else { 126 };
    }
    let path = rt::env::var(b"PATH").unwrap_or(b"/bin:/sbin");
    let mut last = rt::Errno::ENOENT;
    for dir in path.split(|&b| b == b':') {
        let mut full = alloc::vec::Vec::from(if dir.is_empty() { &b"."[..] } else { dir });
        full.push(b'/');
        full.extend_from_slice(cmd);
        let e = rt::process::execve(&full, argv.iter().copied(), env.iter().copied());
        if e != rt::Errno::ENOENT {
            last = e;
        }
    }
    eprintln!("chrt: failed to execute {}: {last}", Bytes(cmd));
    if last == rt::Errno::ENOENT {
        127
    } else {
        126
    }
}

fn main(args: rt::Args) -> i32 {
    let args: alloc::vec::Vec<&[u8]> = args.iter().skip(1).collect();
    let mut i = 0;
    let mut pid_mode = false;
    let mut policy = None;
    while let Some(&a) = args.get(i) {
        if a == b"-p" || a == b"--pid" {
            pid_mode = true;
        } else if let Some(p) = POLICIES.iter().find(|p| p.0 == a) {
            policy = Some(p.1);
        } else {
            break;
        }
        i += 1;
    }
    let rest = &args[i..];
    if pid_mode {
        let (prio, pid) = match rest {
            [pid] => (None, *pid),
            [prio, pid] => (Some(*prio), *pid),
            _ => return usage(),
        };
        let Some(pid) = number(pid) else { return usage() };
        let Some(prio) = prio else {
            return match rt::process::sched_getscheduler(pid) {
                Ok((policy, prio)) => {
                    println!("pid {pid}'s current scheduling policy: {}", policy_name(policy));
                    println!("pid {pid}'s current scheduling priority: {prio}");
                    0
                }
                Err(e) => {
                    eprintln!("chrt: failed to get pid {pid}'s policy: {e}");
                    1
                }
            };
        };
        let Some(prio) = number(prio) else { return usage() };
        return match rt::process::sched_setscheduler(pid, policy.unwrap_or(2), prio) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("chrt: failed to set pid {pid}'s policy: {e}");
                1
            }
        };
    }
    let [prio, cmd, ..] = rest else { return usage() };
    let Some(prio) = number(prio) else { return usage() };
    // util-linux's default policy is SCHED_RR.
    let policy = policy.unwrap_or(2);
    if let Err(e) = rt::process::sched_setscheduler(0, policy, prio) {
        eprintln!("chrt: failed to set pid 0's policy: {e}");
        return 1;
    }
    exec(cmd, &rest[1..])
}
extern crate alloc;
