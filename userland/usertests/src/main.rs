//! `usertests [NAME-PART]...`: checks that the system calls behave as on
//! Linux AArch64 (return values, errno values, file contents, wait
//! statuses, signal delivery and signal frames).
//!
//! Each check runs in a child process of its own, so that a crash, a
//! changed signal mask or a stray timer cannot spill into the next one. It
//! prints one line per check, `ok   NAME` or `FAIL NAME: WHAT`, then
//! `N passed, M failed`; the exit status is 0 iff nothing failed. With
//! arguments, only the checks whose names contain one of them run.
//!
//! `usertests --child MODE [ARG]...` is the program that some checks
//! `execve`: see [`checks::process::child_main`].
#![no_std]
#![no_main]
// Checks pass bad pointers inside `check_eq!(unsafe { .. }, ..)`; their
// `// SAFETY:` comment stands above the macro, where clippy does not look.
#![allow(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use rt::io::Bytes;
use rt::{print, println, Errno};

mod checks;
mod sys;

rt::main!(main);

pub use rt::check::{Check, Context, Fail, Outcome};
pub use rt::{check_eq, checks, ensure};

/// Where a check's child writes its failure message.
const REPORT_FD: i32 = 200;

/// How long one check may take before it is killed and failed: long
/// enough for the heaviest check (timeouts' 1,350 short-lived tasks and
/// up to 15 s for their memory to come back) on a reference Linux whose
/// host is loaded, which took over 10 s there; a hung check still fails.
const CHECK_TIMEOUT_MS: i64 = 40_000;

/// Runs `check` in a child; `None` if it passed, else what went wrong.
fn run_one(check: &Check) -> Option<String> {
    let [rd, wr] = match sys::pipe() {
        Ok(p) => p,
        Err(e) => return Some(format!("pipe: {e:?}")),
    };
    let pid = match sys::fork() {
        Ok(0) => {
            sys::close(rd);
            // Out of the way of checks that use low descriptors.
            let wr = match rt::fs::dup3(wr, REPORT_FD, sys::O_CLOEXEC) {
                Ok(fd) => {
                    sys::close(wr);
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
            sys::exit_group(code);
        }
        Ok(pid) => pid,
        Err(e) => return Some(format!("fork: {e:?}")),
    };
    sys::close(wr);
    let mut msg = Vec::new();
    let deadline = sys::now_ns() + CHECK_TIMEOUT_MS * 1_000_000;
    let mut timed_out = false;
    loop {
        let left = deadline - sys::now_ns();
        if left <= 0 {
            timed_out = true;
            let _ = sys::kill(pid, sys::SIGKILL);
            break;
        }
        let mut pfd = [sys::PollFd {
            fd: rd,
            events: sys::POLLIN,
            revents: 0,
        }];
        let t = sys::Timespec {
            sec: left / 1_000_000_000,
            nsec: left % 1_000_000_000,
        };
        match sys::ppoll(&mut pfd, Some(&t)) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Some(format!("ppoll: {e:?}")),
        }
        let mut buf = [0u8; 512];
        match sys::read(rd, &mut buf) {
            Ok(0) => break,
            Ok(n) => msg.extend_from_slice(&buf[..n]),
            Err(Errno::EINTR) => {}
            Err(e) => return Some(format!("read: {e:?}")),
        }
    }
    sys::close(rd);
    let status = match sys::wait_status(pid) {
        Ok(s) => s,
        Err(e) => return Some(format!("wait4: {e:?}")),
    };
    if timed_out {
        return Some(format!("timed out after {CHECK_TIMEOUT_MS} ms"));
    }
    match (status, msg.is_empty()) {
        (0, true) => None,
        (_, false) => Some(format!("{}", Bytes(&msg))),
        (s, true) if s & 0x7f == 0 => Some(format!("exited with {} and no message", s >> 8)),
        (s, true) => Some(format!("killed by signal {} (status {s:#x})", s & 0x7f)),
    }
}

fn main(args: rt::Args) -> i32 {
    if args.get(1) == Some(b"--child") {
        return checks::process::child_main(args);
    }
    let filters: Vec<&[u8]> = args.iter().skip(1).collect();
    let selected = |name: &str| {
        filters.is_empty()
            || filters
                .iter()
                .any(|f| name.as_bytes().windows(f.len().max(1)).any(|w| w == *f))
    };
    let (mut passed, mut failed) = (0, 0);
    for check in checks::ALL.iter().flat_map(|group| group.iter()) {
        if !selected(check.name) {
            continue;
        }
        match run_one(check) {
            None => {
                passed += 1;
                println!("ok   {}", check.name);
            }
            Some(what) => {
                failed += 1;
                println!("FAIL {}: {what}", check.name);
            }
        }
    }
    print!("{passed} passed, {failed} failed\n");
    i32::from(failed != 0)
}
