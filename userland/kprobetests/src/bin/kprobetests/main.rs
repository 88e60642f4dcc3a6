//! `kprobetests [NAME-PART]...`: defines kprobe events through tracefs
//! (`/sys/kernel/tracing`), triggers them with its own system calls and
//! known arguments, and checks exactly what Linux 6.12 reports: hit counts
//! in `kprobe_profile`, field values in `trace`, errnos and `error_log`
//! entries for bad definitions, filters, `trace_pipe` consumption, overrun
//! accounting, `EBUSY` for enabled events.
//!
//! Each check runs in a child process of its own; after each, the parent
//! puts tracing back (every kprobe event disabled and removed, tracing on,
//! the buffer at its boot size and empty). It prints `PASS NAME` or
//! `FAIL NAME: WHY` per check, then `N passed, M failed`; the exit status
//! is 0 iff nothing failed. With arguments, only the checks whose names
//! contain one of them run.
//!
//! `kprobetests stress [--seconds N]`: see [`stress`].
#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use kprobetests::tracefs::Tracefs;
use rt::io::Bytes;
use rt::process::{fork, Fork, WaitStatus};
use rt::{fs, print, println};

mod checks;
mod stress;

rt::main!(main);

pub use rt::check::{Check, Context, Fail, Outcome};
pub use rt::{check_eq, checks, ensure};

/// The ring buffer size (KB per CPU) to put back after each check: what
/// `buffer_size_kb` said at start (its `expanded:` figure when the buffer
/// is still at its boot minimum, as on Linux).
static BUFFER_KB: AtomicU64 = AtomicU64::new(1408);

/// The buffer size [`Tracefs::reset`] restores.
pub fn default_buffer_kb() -> u64 {
    BUFFER_KB.load(Ordering::Relaxed)
}

/// `buffer_size_kb`'s size: `7 (expanded: 1408)` or `1408`.
fn parse_buffer_kb(text: &str) -> Option<u64> {
    let t = text.trim();
    let n = match t.split_once("(expanded: ") {
        Some((_, e)) => e.strip_suffix(')')?,
        None => t,
    };
    kprobetests::parse::decimal(n.as_bytes())
}

/// Where a check's child writes its failure message.
const REPORT_FD: i32 = 200;

/// How long one check may take before it is killed and failed.
const CHECK_TIMEOUT_MS: u64 = 60_000;

/// Runs `check` in a child; `None` if it passed, else what went wrong.
fn run_one(check: &Check) -> Option<String> {
    let [rd, wr] = match fs::pipe2(fs::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => return Some(format!("pipe: {e:?}")),
    };
    let pid = match fork() {
        Ok(Fork::Child) => {
            let _ = fs::close(rd);
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
    // A watchdog child kills the check if it runs too long.
    let watchdog = match fork() {
        Ok(Fork::Child) => {
            kprobetests::sys::sleep_ms(CHECK_TIMEOUT_MS);
            let _ = rt::process::kill(pid, rt::process::SIGKILL);
            rt::process::exit(0)
        }
        Ok(Fork::Parent(w)) => Some(w),
        Err(_) => None,
    };
    let msg = kprobetests::tracefs::read_fd(rd).unwrap_or_default();
    let _ = fs::close(rd);
    let status = rt::process::waitpid(pid);
    if let Some(w) = watchdog {
        let _ = rt::process::kill(w, rt::process::SIGKILL);
        let _ = rt::process::waitpid(w);
    }
    match (status, msg.is_empty()) {
        (Ok(WaitStatus::Exited(0)), true) => None,
        (_, false) => Some(format!("{}", Bytes(&msg))),
        (Ok(WaitStatus::Signaled(rt::process::SIGKILL)), true) => {
            Some(format!("killed (timed out after {CHECK_TIMEOUT_MS} ms?)"))
        }
        (Ok(st), true) => Some(format!("ended with {st:?} and no message")),
        (Err(e), _) => Some(format!("wait4: {e:?}")),
    }
}

fn main(args: rt::Args) -> i32 {
    let t = match Tracefs::find() {
        Ok(t) => t,
        Err(e) => {
            println!(
                "kprobetests: no kprobe_events under {} ({e})",
                kprobetests::tracefs::MOUNT
            );
            return 2;
        }
    };
    if let Some(kb) = t.read_text("buffer_size_kb").ok().as_deref().and_then(parse_buffer_kb) {
        BUFFER_KB.store(kb, Ordering::Relaxed);
    }
    if args.get(1) == Some(b"stress") {
        return stress::main(&t, args);
    }
    if let Err(e) = t.reset(default_buffer_kb()) {
        println!("kprobetests: cannot reset tracing: {e:?}");
        return 2;
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
        let mut outcome = run_one(check);
        if let Err(e) = t.reset(default_buffer_kb()) {
            outcome.get_or_insert_with(|| format!("cleanup after the check failed: {e:?}"));
        }
        match outcome {
            None => {
                passed += 1;
                println!("PASS {}", check.name);
            }
            Some(why) => {
                failed += 1;
                println!("FAIL {}: {why}", check.name);
            }
        }
    }
    print!("{passed} passed, {failed} failed\n");
    i32::from(failed != 0)
}
