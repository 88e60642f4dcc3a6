//! `ptracetests [NAME-PART]...`: ptrace(2) as Linux 6.12 arm64 answers it,
//! a check per request, stop kind, option and error: each check forks
//! tracees, stops and resumes them, and asserts wait statuses, registers,
//! memory and siginfo. The same binary passes on real Linux (reflinux).
//!
//! Each check runs in a child of its own, killed after a timeout. It
//! prints `PASS NAME` or `FAIL NAME: WHY` per check, then `N passed, M
//! failed`; the exit status is 0 iff nothing failed. With arguments, only
//! the checks whose names contain one of them run. `ptracetests --exit N`
//! just exits with N (the program the exec checks run); `ptracetests
//! --creds` exits with what it finds of its credentials (the credential
//! exec check's).
#![no_std]
#![no_main]

extern crate alloc;

mod checks;
mod sys;

use alloc::format;
use alloc::string::String;
use rt::process::{fork, Fork, WaitStatus};
use rt::{fs, print, println};

rt::main!(main);

pub use rt::check::{Check, Context, Fail, Outcome};
pub use rt::{checks, ensure};

/// Fails the check unless `got == want`, naming what was compared (in
/// hex: registers and addresses).
#[macro_export]
macro_rules! check_eq {
    ($got:expr, $want:expr, $($what:tt)+) => {{
        let got = $got;
        let want = $want;
        if got != want {
            return Err($crate::Fail(alloc::format!(
                "{}: got {:x?}, want {:x?}",
                format_args!($($what)+),
                got,
                want
            )));
        }
    }};
}

const REPORT_FD: i32 = 200;
const CHECK_TIMEOUT_MS: u64 = 30_000;

fn run_one(check: &Check) -> Option<String> {
    let [rd, wr] = match fs::pipe2(fs::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => return Some(format!("pipe: {e:?}")),
    };
    let pid = match fork() {
        Ok(Fork::Child) => {
            let _ = fs::close(rd);
            // A process group of its own, so that tracees it leaves behind
            // can be killed with it.
            sys::setpgid_self();
            let wr = match fs::dup3(wr, REPORT_FD, fs::O_CLOEXEC) {
                Ok(fd) => {
                    let _ = fs::close(wr);
                    fd
                }
                Err(_) => wr,
            };
            let code = match (check.run)() {
                Ok(()) => 0,
                Err(Fail(msg)) => {
                    let _ = rt::io::write_all(wr, msg.as_bytes());
                    1
                }
            };
            rt::process::exit(code);
        }
        Ok(Fork::Parent(pid)) => pid,
        Err(e) => return Some(format!("fork: {e:?}")),
    };
    let _ = fs::close(wr);
    let watchdog = match fork() {
        Ok(Fork::Child) => {
            sys::sleep_ms(CHECK_TIMEOUT_MS);
            let _ = rt::process::kill(pid, rt::process::SIGKILL);
            rt::process::exit(0)
        }
        Ok(Fork::Parent(w)) => Some(w),
        Err(_) => None,
    };
    let status = rt::process::waitpid(pid);
    if let Some(w) = watchdog {
        let _ = rt::process::kill(w, rt::process::SIGKILL);
        let _ = rt::process::waitpid(w);
    }
    // Tracees a failed check left behind go with its process group (they
    // hold the report pipe open too).
    let _ = rt::process::kill(-pid, rt::process::SIGKILL);
    let msg = sys::read_all(rd);
    let _ = fs::close(rd);
    match (status, msg.is_empty()) {
        (Ok(WaitStatus::Exited(0)), true) => None,
        (_, false) => Some(String::from_utf8_lossy(&msg).into_owned()),
        (Ok(WaitStatus::Signaled(rt::process::SIGKILL)), true) => {
            Some(format!("killed (timed out after {CHECK_TIMEOUT_MS} ms?)"))
        }
        (Ok(st), true) => Some(format!("ended with {st:?} and no message")),
        (Err(e), _) => Some(format!("wait4: {e:?}")),
    }
}

fn main(args: rt::Args) -> i32 {
    let args: alloc::vec::Vec<&[u8]> = args.iter().skip(1).collect();
    if args.first() == Some(&&b"--exit"[..]) {
        let n = args
            .get(1)
            .and_then(|a| core::str::from_utf8(a).ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(99);
        return n;
    }
    if args.first() == Some(&&b"--creds"[..]) {
        return checks::creds_after_exec();
    }
    let (mut passed, mut failed) = (0, 0);
    for check in checks::ALL {
        let wanted = args.is_empty()
            || args
                .iter()
                .any(|a| core::str::from_utf8(a).is_ok_and(|a| check.name.contains(a)));
        if !wanted {
            continue;
        }
        match run_one(check) {
            None => {
                passed += 1;
                println!("PASS {}", check.name);
            }
            Some(why) => {
                failed += 1;
                println!("FAIL {}: {}", check.name, why);
            }
        }
    }
    print!("{passed} passed, {failed} failed\n");
    i32::from(failed != 0)
}
