//! Event filters: exactly the matching hits are recorded (every hit is
//! still counted), and a bad filter is refused.

use alloc::format;

use kprobetests::sys::{getpid, read_count};
use rt::{fs, Errno};

use super::{field, profile_of, tracefs};
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    filter_records_exactly_the_matching_hits,
    filter_on_a_missing_field_is_einval,
];

fn filter_records_exactly_the_matching_hits() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_filter vfs_read count=%x2:u64").ctx("define")?;
    let me = getpid();
    t.set_filter("kt_filter", &format!("count == 7 && common_pid == {me}"))
        .ctx("set filter")?;
    check_eq!(
        t.read_text("events/kprobes/kt_filter/filter").ctx("read filter")?,
        format!("count == 7 && common_pid == {me}"),
        "filter file"
    );
    let fd = fs::open(b"/dev/zero", fs::O_RDONLY | fs::O_CLOEXEC, 0).ctx("open /dev/zero")?;
    let counts = [5usize, 7, 7, 9, 7, 3, 70, 17];
    let mut buf = [0u8; 70];
    t.enable("kt_filter", true).ctx("enable")?;
    let hits_before = profile_of(&t, "kt_filter")?.hits;
    let mut results = alloc::vec::Vec::new();
    for &c in &counts {
        results.push(read_count(fd, &mut buf, c));
    }
    let hits_after = profile_of(&t, "kt_filter")?.hits;
    t.enable("kt_filter", false).ctx("disable")?;
    let _ = fs::close(fd);
    for (&c, r) in counts.iter().zip(&results) {
        check_eq!(*r, Ok(c), "read({c}) from /dev/zero");
    }
    // Every read was a hit; reading kprobe_profile itself is one more.
    ensure!(
        hits_after.saturating_sub(hits_before) > counts.len() as u64,
        "kt_filter hits went from {hits_before} to {hits_after} over {} reads",
        counts.len()
    );
    let all = super::trace(&t)?;
    let recorded: alloc::vec::Vec<_> = all.iter().filter(|l| l.event == "kt_filter").collect();
    check_eq!(recorded.len(), 3, "recorded kt_filter lines: {recorded:?}");
    for l in recorded {
        check_eq!(l.pid, me, "pid of {l:?}");
        check_eq!(field(l, "count")?, "7", "count of {l:?}");
    }
    // Clearing the filter ("0") lets everything through again.
    t.set_filter("kt_filter", "0").ctx("clear filter")?;
    check_eq!(
        t.read_text("events/kprobes/kt_filter/filter").ctx("read filter")?,
        "none",
        "filter file after clearing"
    );
    Ok(())
}

fn filter_on_a_missing_field_is_einval() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_filter vfs_read count=%x2:u64").ctx("define")?;
    check_eq!(
        t.set_filter("kt_filter", "size == 7"),
        Err(Errno::EINVAL),
        "filter on a field the event lacks"
    );
    // The filter file shows the refused filter and where it went wrong.
    check_eq!(
        t.read_text("events/kprobes/kt_filter/filter").ctx("read filter")?,
        "size == 7\n     ^\nparse_error: Field not found",
        "filter file after a refused filter"
    );
    Ok(())
}
