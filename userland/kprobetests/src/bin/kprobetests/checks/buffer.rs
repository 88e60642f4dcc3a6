//! The ring buffer: `trace_pipe` consumes what it returns and blocks when
//! empty, an overfilled buffer counts what it overwrote, and an enabled
//! event's definition cannot be removed.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use kprobetests::parse::{self, TraceLine};
use kprobetests::sys::getpid;
use kprobetests::tracefs::Tracefs;
use rt::process::{fork, waitpid, Fork, WaitStatus};
use rt::{fs, Errno};

use super::{profile_of, tracefs};
use crate::{check_eq, checks, ensure, Check, Context, Fail, Outcome};

pub static CHECKS: &[Check] = checks![
    trace_pipe_consumes_what_it_returns,
    trace_pipe_blocks_until_a_hit,
    trace_pipe_polls_readable_only_with_entries,
    trace_opened_with_o_trunc_is_emptied,
    overfilled_buffer_counts_overruns_and_entries_written,
    enabled_event_cannot_be_removed_or_truncated,
    a_faulting_marker_write_records_faulted_and_is_efault,
];

/// Reads `fd` (`O_NONBLOCK`) until `EAGAIN`.
fn drain(fd: i32) -> Result<Vec<u8>, Fail> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match fs::read(fd, &mut buf) {
            Ok(0) | Err(Errno::EAGAIN) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(Fail(format!("read trace_pipe: {e:?}"))),
        }
    }
}

fn parse_all(text: &[u8]) -> Result<Vec<TraceLine>, Fail> {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .map(|l| TraceLine::parse(l).ok_or_else(|| Fail(format!("trace_pipe line does not parse: {l:?}"))))
        .collect()
}

fn trace_pipe_consumes_what_it_returns() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_pipe __arm64_sys_getpid").ctx("define")?;
    t.enable("kt_pipe", true).ctx("enable")?;
    let me = getpid();
    for _ in 0..4 {
        getpid();
    }
    t.enable("kt_pipe", false).ctx("disable")?;
    let fd = t
        .open("trace_pipe", fs::O_RDONLY | fs::O_NONBLOCK)
        .ctx("open trace_pipe")?;
    let first = parse_all(&drain(fd)?)?;
    let mut again = [0u8; 256];
    let second = fs::read(fd, &mut again);
    let _ = fs::close(fd);
    let mine = first.iter().filter(|l| l.event == "kt_pipe" && l.pid == me).count();
    check_eq!(mine, 5, "kt_pipe lines of this task from trace_pipe: {first:?}");
    check_eq!(second, Err(Errno::EAGAIN), "second read of the drained trace_pipe");
    // trace no longer holds them; entries-written counts what the buffer
    // holds plus what it overwrote, so consumed entries leave it too.
    let text = t.read_text("trace").ctx("read trace")?;
    let left = parse::trace_lines(&text).map_err(|l| Fail(format!("trace line {l:?}")))?;
    check_eq!(
        left.iter().filter(|l| l.event == "kt_pipe").count(),
        0,
        "kt_pipe lines left in trace"
    );
    let (entries, written, _) = parse::trace_header(&text).ok_or_else(|| Fail(format!("trace header:\n{text}")))?;
    check_eq!((entries, written), (0, 0), "entries-in-buffer/entries-written");
    Ok(())
}

fn trace_pipe_blocks_until_a_hit() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_wait __arm64_sys_getpid").ctx("define")?;
    t.enable("kt_wait", true).ctx("enable")?;
    let fd = t.open("trace_pipe", fs::O_RDONLY).ctx("open trace_pipe")?;
    let child = match fork().ctx("fork")? {
        Fork::Child => {
            kprobetests::sys::sleep_ms(300);
            getpid();
            rt::process::exit(0)
        }
        Fork::Parent(pid) => pid,
    };
    let start = kprobetests::sys::now_ns();
    let mut buf = [0u8; 4096];
    let got = fs::read(fd, &mut buf);
    let waited_ms = (kprobetests::sys::now_ns() - start) / 1_000_000;
    let _ = fs::close(fd);
    let st = waitpid(child);
    t.enable("kt_wait", false).ctx("disable")?;
    check_eq!(st, Ok(WaitStatus::Exited(0)), "child");
    let n = got.ctx("blocking read of trace_pipe")?;
    let lines = parse_all(&buf[..n])?;
    ensure!(
        lines.iter().any(|l| l.event == "kt_wait" && l.pid == child),
        "the read returned {lines:?}, not the child's hit"
    );
    ensure!(
        waited_ms >= 200,
        "the read returned after {waited_ms} ms, before the hit"
    );
    Ok(())
}

/// `ppoll` of one descriptor for `POLLIN` with a timeout: its revents.
fn poll_in(fd: i32, timeout_ms: u64) -> Result<i16, Errno> {
    const POLLIN: i16 = uapi::poll::POLLIN as i16;
    // struct pollfd { int fd; short events; short revents; }
    let mut pfd = [0u8; 8];
    pfd[..4].copy_from_slice(&fd.to_ne_bytes());
    pfd[4..6].copy_from_slice(&POLLIN.to_ne_bytes());
    let ts = [(timeout_ms / 1000) as i64, ((timeout_ms % 1000) * 1_000_000) as i64];
    // SAFETY: pfd is one writable struct pollfd, ts a readable timespec;
    // no signal mask.
    rt::syscall::check(unsafe {
        rt::syscall::syscall5(
            rt::syscall::nr::PPOLL,
            pfd.as_mut_ptr() as usize,
            1,
            ts.as_ptr() as usize,
            0,
            8,
        )
    })?;
    Ok(i16::from_ne_bytes([pfd[6], pfd[7]]))
}

fn trace_pipe_polls_readable_only_with_entries() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_poll __arm64_sys_getpid").ctx("define")?;
    let fd = t
        .open("trace_pipe", fs::O_RDONLY | fs::O_NONBLOCK)
        .ctx("open trace_pipe")?;
    let empty = poll_in(fd, 100);
    t.enable("kt_poll", true).ctx("enable")?;
    let me = getpid();
    t.enable("kt_poll", false).ctx("disable")?;
    let full = poll_in(fd, 1000);
    let lines = parse_all(&drain(fd)?);
    let drained = poll_in(fd, 100);
    let _ = fs::close(fd);
    check_eq!(empty, Ok(0), "poll of an empty trace_pipe (100 ms)");
    check_eq!(full, Ok(1), "poll of trace_pipe after a hit");
    let lines = lines?;
    check_eq!(
        lines.iter().filter(|l| l.event == "kt_poll" && l.pid == me).count(),
        1,
        "kt_poll lines: {lines:?}"
    );
    check_eq!(drained, Ok(0), "poll of the drained trace_pipe");
    Ok(())
}

fn trace_opened_with_o_trunc_is_emptied() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_trunc __arm64_sys_getpid").ctx("define")?;
    t.enable("kt_trunc", true).ctx("enable")?;
    for _ in 0..3 {
        getpid();
    }
    t.enable("kt_trunc", false).ctx("disable")?;
    let text = t.read_text("trace").ctx("read trace")?;
    check_eq!(
        parse::trace_header(&text).map(|h| (h.0, h.1)),
        Some((3, 3)),
        "header before"
    );
    // Opening for writing without O_TRUNC keeps the entries; with it, not.
    let fd = t.open("trace", fs::O_WRONLY).ctx("open trace O_WRONLY")?;
    let _ = fs::close(fd);
    let text = t.read_text("trace").ctx("read trace")?;
    check_eq!(
        parse::trace_header(&text).map(|h| (h.0, h.1)),
        Some((3, 3)),
        "header after O_WRONLY"
    );
    let fd = t.open("trace", fs::O_WRONLY | fs::O_TRUNC).ctx("open trace O_TRUNC")?;
    let _ = fs::close(fd);
    let text = t.read_text("trace").ctx("read trace")?;
    check_eq!(
        parse::trace_header(&text).map(|h| (h.0, h.1)),
        Some((0, 0)),
        "header after O_TRUNC"
    );
    check_eq!(super::trace(&t)?.len(), 0, "lines after O_TRUNC");
    Ok(())
}

/// Sum of `key` over every CPU's `per_cpu/cpuN/stats`.
pub fn stats_sum(t: &Tracefs, key: &str) -> Result<u64, Fail> {
    let mut sum = 0;
    for cpu in t.cpus().ctx("list per_cpu")? {
        let text = t.read_text(&format!("per_cpu/cpu{cpu}/stats")).ctx("read stats")?;
        sum += parse::stat(&text, key).ok_or_else(|| Fail(format!("no {key:?} in cpu{cpu}/stats:\n{text}")))?;
    }
    Ok(sum)
}

fn overfilled_buffer_counts_overruns_and_entries_written() -> Outcome {
    const CALLS: u64 = 20_000;
    let t = tracefs()?;
    t.write("buffer_size_kb", "8").ctx("buffer_size_kb 8")?;
    let kb = t.read_text("buffer_size_kb").ctx("read buffer_size_kb")?;
    ensure!(
        parse::decimal(kb.as_bytes()).is_some_and(|k| (4..=16).contains(&k)),
        "buffer_size_kb after writing 8: {kb:?}"
    );
    t.define("p:kt_flood __arm64_sys_getpid").ctx("define")?;
    t.clear_trace().ctx("clear trace")?;
    t.enable("kt_flood", true).ctx("enable")?;
    for _ in 0..CALLS {
        getpid();
    }
    t.enable("kt_flood", false).ctx("disable")?;
    let hits = profile_of(&t, "kt_flood")?.hits;
    check_eq!(hits, CALLS, "kprobe_profile hits");
    let entries = stats_sum(&t, "entries")?;
    let overrun = stats_sum(&t, "overrun")?;
    let dropped = stats_sum(&t, "dropped events")?;
    let text = t.read_text("trace").ctx("read trace")?;
    let (in_buffer, written, _) = parse::trace_header(&text).ok_or_else(|| Fail(format!("trace header:\n{text}")))?;
    let lines = parse::trace_lines(&text).map_err(|l| Fail(format!("trace line {l:?}")))?;
    ensure!(entries < CALLS / 10, "{entries} entries in an 8 KB buffer");
    check_eq!(dropped, 0, "dropped events (the buffer overwrites)");
    check_eq!(entries + overrun, hits, "entries + overrun (= {entries} + {overrun})");
    check_eq!(
        (in_buffer, written),
        (entries, hits),
        "entries-in-buffer/entries-written"
    );
    check_eq!(lines.len() as u64, entries, "lines in trace");
    let me = getpid();
    ensure!(
        lines.iter().all(|l| l.event == "kt_flood" && l.pid == me),
        "foreign lines in trace"
    );
    // Reading trace does not consume: the same entries a second time.
    let again = t.read_text("trace").ctx("read trace again")?;
    check_eq!(
        parse::trace_header(&again),
        Some((entries, hits, parse::trace_header(&text).map_or(0, |h| h.2))),
        "header on a second read"
    );
    Ok(())
}

fn enabled_event_cannot_be_removed_or_truncated() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_busy vfs_read").ctx("define")?;
    t.enable("kt_busy", true).ctx("enable")?;
    let removed = t.remove("kt_busy");
    let truncated = t.open("kprobe_events", fs::O_WRONLY | fs::O_TRUNC);
    if let Ok(fd) = truncated {
        let _ = fs::close(fd);
    }
    let listed = t.read_text("kprobe_events").ctx("read kprobe_events")?;
    t.enable("kt_busy", false).ctx("disable")?;
    check_eq!(removed, Err(Errno::EBUSY), "-:kt_busy while enabled");
    check_eq!(
        truncated.map(drop),
        Err(Errno::EBUSY),
        "open(kprobe_events, O_TRUNC) while enabled"
    );
    check_eq!(listed, "p:kprobes/kt_busy vfs_read", "kprobe_events");
    t.remove("kt_busy").ctx("-:kt_busy once disabled")?;
    check_eq!(
        t.read_text("kprobe_events").ctx("read kprobe_events")?,
        "",
        "kprobe_events after removal"
    );
    check_eq!(
        fs::stat(&t.path("events/kprobes/kt_busy")).map(drop),
        Err(Errno::ENOENT),
        "the event directory after removal"
    );
    Ok(())
}

/// A marker write whose bytes cannot be read (an unmapped page) is
/// recorded as `<faulted>` and fails with EFAULT, in `trace_marker` and
/// (with id -1) in `trace_marker_raw`; reading either file is EINVAL.
fn a_faulting_marker_write_records_faulted_and_is_efault() -> Outcome {
    let t = tracefs()?;
    t.clear_trace().ctx("clear trace")?;
    let page = rt::mm::mmap_anon(4096).ctx("mmap")?;
    // SAFETY: a page just mapped, which nothing uses.
    unsafe { rt::mm::munmap(page, 4096) }.ctx("munmap")?;
    for file in ["trace_marker", "trace_marker_raw"] {
        let fd = t.open(file, uapi::fcntl::O_WRONLY).ctx(file)?;
        // SAFETY: the kernel reads the unmapped page (and faults); nothing
        // here touches it.
        let r = rt::syscall::check(unsafe {
            rt::syscall::syscall3(rt::syscall::nr::WRITE, fd as usize, page as usize, 16)
        });
        fs::close(fd).ctx("close")?;
        check_eq!(r, Err(Errno::EFAULT), "{file}: a write from an unmapped page");
        let fd = t.open(file, uapi::fcntl::O_RDONLY).ctx(file)?;
        let mut b = [0u8; 8];
        let r = fs::read(fd, &mut b);
        fs::close(fd).ctx("close")?;
        check_eq!(r, Err(Errno::EINVAL), "{file}: a read");
    }
    let text = t.read_text("trace").ctx("read trace")?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    ensure!(
        lines.len() == 2 && lines[0].ends_with(": <faulted>"),
        "trace_marker's entry: {lines:?}"
    );
    ensure!(
        lines[1].contains(" # ffffffff buf: 3c 66 61 75 6c 74 65 64 3e "),
        "trace_marker_raw's entry: {lines:?}"
    );
    Ok(())
}
