//! Triggers and `set_event` against what Linux 6.12.117 arm64 did
//! (reflinux, on `sched/sched_switch`).

use trace_filter::filter::{msg, FilterEnv, NoSymbols, FILTER_ERROR_LOC};
use trace_filter::set_event::{event_line, next_word, EventMatcher, SetEventCmd};
use trace_filter::trigger::{TriggerChange, TriggerCmd, TriggerList, AVAILABLE_TRIGGERS, UNLIMITED};
use trace_filter::{EventField, FieldKind};
use uapi::Errno;

const FIELDS: [EventField<'static>; 3] = [
    EventField {
        name: "prev_comm",
        offset: 8,
        size: 16,
        is_signed: false,
        kind: FieldKind::StaticString,
    },
    EventField {
        name: "prev_pid",
        offset: 24,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "next_pid",
        offset: 56,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
];

const ENV: FilterEnv<'static> = FilterEnv {
    nr_cpu_ids: 2,
    symbols: &NoSymbols,
};

fn exists(system: &str, event: &str) -> bool {
    system == "sched" && matches!(event, "sched_wakeup" | "sched_waking" | "sched_switch")
}

fn write(l: &mut TriggerList, s: &str) -> Result<(), Errno> {
    l.write(format!("{s}\n").as_bytes(), &FIELDS, &ENV, &exists)
        .map(|_| ())
        .map_err(|e| e.errno)
}

#[test]
fn empty_file_lists_the_commands_this_kernel_has() {
    // Linux with hist prints
    // "# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist";
    // without it, the same order minus those.
    let l = TriggerList::new();
    assert_eq!(l.file_text(), AVAILABLE_TRIGGERS);
    assert_eq!(
        AVAILABLE_TRIGGERS,
        "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist\n"
    );
}

#[test]
fn snapshot_trigger_is_its_own_kind_and_counts_every_fire() {
    // trigger-snapshot.tc: a second snapshot is EEXIST, "snapshot+1" is
    // no command; snapshot:2 fires twice whatever the buffers hold.
    let mut l = TriggerList::new();
    assert_eq!(write(&mut l, "snapshot+1"), Err(Errno::EINVAL));
    assert_eq!(write(&mut l, "snapshot:2 if prev_pid == 1"), Ok(()));
    assert_eq!(write(&mut l, "snapshot"), Err(Errno::EEXIST));
    write(&mut l, "traceoff").unwrap();
    write(&mut l, "stacktrace").unwrap();
    assert_eq!(
        l.file_text(),
        "stacktrace:unlimited\ntraceoff:unlimited\nsnapshot:count=2 if prev_pid == 1\n"
    );
    let t = l.iter().find(|t| t.cmd() == TriggerCmd::Snapshot).unwrap();
    assert!(!t.cmd().is_post_trigger(), "Linux swaps before the event is written");
    assert!(t.fire(true));
    assert!(t.fire(false));
    assert!(!t.fire(false));
    assert_eq!(write(&mut l, "!snapshot"), Ok(()));
    assert!(l.iter().all(|t| t.cmd() != TriggerCmd::Snapshot));
}

#[test]
fn traceon_and_traceoff_are_one_kind() {
    let mut l = TriggerList::new();
    assert_eq!(write(&mut l, "traceon"), Ok(()));
    assert_eq!(l.file_text(), "traceon:unlimited\n");
    assert_eq!(write(&mut l, "traceoff"), Err(Errno::EEXIST));
    assert_eq!(write(&mut l, "traceon"), Err(Errno::EEXIST));
    // Removing traceoff removes the traceon: they share a type.
    assert_eq!(write(&mut l, "!traceoff"), Ok(()));
    assert_eq!(l.file_text(), AVAILABLE_TRIGGERS);
    assert_eq!(write(&mut l, "!traceon"), Ok(()), "removing nothing succeeds");
}

#[test]
fn counts_and_filters_render_as_linux() {
    let mut l = TriggerList::new();
    assert_eq!(write(&mut l, "traceoff:3 if prev_pid == 1"), Ok(()));
    assert_eq!(l.file_text(), "traceoff:count=3 if prev_pid == 1\n");
    write(&mut l, "!traceoff").unwrap();
    // Spaces inside the filter are kept; trailing ones are not.
    assert_eq!(write(&mut l, "traceoff if  prev_pid  ==  1  "), Ok(()));
    assert_eq!(l.file_text(), "traceoff:unlimited if  prev_pid  ==  1\n");
    write(&mut l, "!traceoff").unwrap();
    assert_eq!(write(&mut l, "traceon:0x10:zz"), Ok(()));
    assert_eq!(l.file_text(), "traceon:count=16\n");
    assert_eq!(write(&mut l, "!traceon:garbage"), Ok(()));
    assert_eq!(write(&mut l, "traceon:18446744073709551615"), Ok(()));
    assert_eq!(l.file_text(), "traceon:unlimited\n");
    write(&mut l, "!traceon").unwrap();
    assert_eq!(write(&mut l, "traceoff: 5"), Ok(()));
    assert_eq!(l.file_text(), "traceoff:count=5\n");
    write(&mut l, "!traceoff").unwrap();
    assert_eq!(write(&mut l, "traceoff:"), Ok(()));
    assert_eq!(l.file_text(), "traceoff:unlimited\n");
    write(&mut l, "!traceoff").unwrap();
    assert_eq!(write(&mut l, "  traceon\tif prev_pid == 1  "), Ok(()));
    assert_eq!(l.file_text(), "traceon:unlimited if prev_pid == 1\n");
}

#[test]
fn newest_trigger_is_listed_first() {
    let mut l = TriggerList::new();
    write(&mut l, "stacktrace").unwrap();
    assert_eq!(write(&mut l, "stacktrace:2"), Err(Errno::EEXIST));
    write(&mut l, "enable_event:sched:sched_wakeup").unwrap();
    assert_eq!(write(&mut l, "enable_event:sched:sched_wakeup:2"), Err(Errno::EEXIST));
    assert_eq!(
        write(&mut l, "disable_event:sched:sched_wakeup:2 if prev_pid == 0"),
        Err(Errno::EEXIST)
    );
    write(&mut l, "enable_event:sched:sched_waking:7:8 if next_pid > 2").unwrap();
    assert_eq!(
        l.file_text(),
        "enable_event:sched:sched_waking:count=7 if next_pid > 2\n\
         enable_event:sched:sched_wakeup:unlimited\n\
         stacktrace:unlimited\n"
    );
    assert_eq!(write(&mut l, "!enable_event:sched:sched_waking"), Ok(()));
    // disable_event removes the enable_event of the same target.
    assert_eq!(write(&mut l, "!disable_event:sched:sched_wakeup"), Ok(()));
    assert_eq!(l.file_text(), "stacktrace:unlimited\n");
}

#[test]
fn bad_commands_get_linux_errno() {
    let mut l = TriggerList::new();
    for (cmd, errno) in [
        ("traceon:abc", Errno::EINVAL),
        ("traceon if", Errno::EINVAL),
        ("traceon:5 if nosuch == 1", Errno::EINVAL),
        ("traceon if prev_pid < 1 x", Errno::EPERM),
        ("traceon if == 1", Errno::EPERM),
        ("traceon:-1", Errno::EINVAL),
        ("traceon traceoff", Errno::EINVAL),
        ("enable_event:sched:nosuch", Errno::EINVAL),
        ("enable_event:sched", Errno::EINVAL),
        ("enable_event", Errno::EINVAL),
        ("enable_event:sched:sched_waking:x", Errno::EINVAL),
        ("enable_event:sched:sched_waking:", Errno::EINVAL),
        ("enable_event::sched_waking", Errno::EINVAL),
        ("!enable_event:sched:nosuch", Errno::EINVAL),
        ("!enable_event", Errno::EINVAL),
        ("!nosuch", Errno::EINVAL),
        ("nosuchcmd", Errno::EINVAL),
        ("traceoff:99999999999999999999", Errno::ERANGE),
        ("traceoff:5junk", Errno::EINVAL),
        (":traceon", Errno::EINVAL),
        ("!", Errno::EINVAL),
        ("", Errno::EINVAL),
        ("  ", Errno::EINVAL),
        // hist is the trace_hist crate's: unknown here, EINVAL.
        ("hist:keys=prev_pid", Errno::EINVAL),
        ("enable_hist:sched:nosuch", Errno::EINVAL),
        ("disable_hist:sched", Errno::EINVAL),
    ] {
        assert_eq!(write(&mut l, cmd), Err(errno), "{cmd:?}");
        assert!(l.is_empty(), "{cmd:?} left a trigger");
    }
    assert!(matches!(l.write(b"", &FIELDS, &ENV, &exists), Ok(TriggerChange::None)));
}

#[test]
fn a_bad_trigger_filter_is_logged_as_a_filter_error() {
    let mut l = TriggerList::new();
    let e = l
        .write(b"traceon:5 if nosuch == 1\n", &FIELDS, &ENV, &exists)
        .unwrap_err();
    let f = e.filter_failure.unwrap();
    assert_eq!(FILTER_ERROR_LOC, "event filter parse error");
    assert_eq!(f.command, "nosuch == 1");
    assert_eq!((f.err.msg, f.err.pos), (msg::FIELD_NOT_FOUND, 7));
    let e = l
        .write(b"traceon if prev_pid < 1 x", &FIELDS, &ENV, &exists)
        .unwrap_err();
    let f = e.filter_failure.unwrap();
    assert_eq!(
        (f.command.as_str(), f.err.msg, f.err.pos),
        ("prev_pid < 1 x", msg::TOO_MANY_PREDS, 13)
    );
}

#[test]
fn counted_triggers_fire_until_spent_and_skip_when_already_done() {
    let mut l = TriggerList::new();
    write(&mut l, "traceoff:2").unwrap();
    let t = l.iter().next().unwrap();
    assert_eq!(t.cmd(), TriggerCmd::TraceOff);
    assert!(t.cmd().is_post_trigger());
    assert!(!t.fire(true), "tracing already off: no fire, no count");
    assert_eq!(t.count(), 2);
    assert!(t.fire(false));
    assert!(t.fire(false));
    assert!(!t.fire(false));
    assert_eq!(l.file_text(), "traceoff:count=0\n");

    let mut l = TriggerList::new();
    write(&mut l, "stacktrace").unwrap();
    let t = l.iter().next().unwrap();
    assert!((0..100).all(|_| t.fire(false)));
    assert_eq!(t.count(), UNLIMITED);
    assert!(t.fire(true), "stacktrace has no state to be in");

    let mut l = TriggerList::new();
    write(&mut l, "enable_event:sched:sched_waking:1 if prev_pid == 3").unwrap();
    let t = l.iter().next().unwrap();
    assert_eq!(t.target(), Some(("sched", "sched_waking")));
    let mut rec = vec![0u8; 64];
    rec[24..28].copy_from_slice(&3i32.to_le_bytes());
    assert!(t
        .filter()
        .unwrap()
        .matches(&rec, &mut trace_filter::SimpleContext::default()));
    assert!(t.fire(false));
    assert!(!t.fire(false));
}

#[test]
fn removal_hands_back_the_trigger() {
    let mut l = TriggerList::new();
    assert!(matches!(
        l.write(b"disable_event:sched:sched_wakeup", &FIELDS, &ENV, &exists),
        Ok(TriggerChange::Added(TriggerCmd::DisableEvent))
    ));
    match l.write(b"!enable_event:sched:sched_wakeup", &FIELDS, &ENV, &exists) {
        Ok(TriggerChange::Removed(t)) => assert_eq!(t.cmd(), TriggerCmd::DisableEvent),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        l.write(b"!traceon", &FIELDS, &ENV, &exists),
        Ok(TriggerChange::None)
    ));
}

// -------------------------------------------------------------- set_event

/// Some of Linux's events, to match against.
const EVENTS: [(&str, &str); 6] = [
    ("sched", "sched_switch"),
    ("sched", "sched_wakeup"),
    ("sched", "sched_waking"),
    ("syscalls", "sys_enter_openat"),
    ("kprobes", "myprobe"),
    ("kprobes", "sched"),
];

fn matched(word: &str) -> Vec<String> {
    let cmd = SetEventCmd::parse(word);
    EVENTS
        .iter()
        .filter(|(s, e)| cmd.matcher.matches(s, e))
        .map(|(s, e)| format!("{s}:{e}"))
        .collect()
}

#[test]
fn set_event_words_match_as_linux() {
    assert_eq!(matched("sched:sched_switch"), ["sched:sched_switch"]);
    assert_eq!(matched("sched_switch"), ["sched:sched_switch"]);
    assert_eq!(matched(":sched_switch"), ["sched:sched_switch"]);
    assert_eq!(matched("*:sched_switch"), ["sched:sched_switch"]);
    assert_eq!(matched("sched:").len(), 3);
    assert_eq!(matched("sched:*").len(), 3);
    // A bare name is a system or an event.
    assert_eq!(matched("sched").len(), 4);
    assert_eq!(matched("*:*").len(), EVENTS.len());
    assert_eq!(matched(":").len(), EVENTS.len());
    // No globs, and a third colon is part of the event name.
    assert!(matched("sched:sched_sw*").is_empty());
    assert!(matched("sched*").is_empty());
    assert!(matched("*").is_empty());
    assert!(matched("nosuch").is_empty());
    assert!(matched("sched:sched_switch:x").is_empty());
    let off = SetEventCmd::parse("!sched:sched_switch");
    assert!(!off.enable && off.matcher == EventMatcher::parse("sched:sched_switch"));
    assert!(SetEventCmd::parse("sched").enable);
    assert_eq!(event_line("sched", "sched_switch"), "sched:sched_switch\n");
}

#[test]
fn set_event_writes_are_read_a_word_at_a_time() {
    let buf = b"  sched:sched_switch sched:sched_wakeup\n";
    let (n, w) = next_word(buf).unwrap();
    assert_eq!((n, w.as_deref()), (21, Some("sched:sched_switch")));
    let (m, w) = next_word(&buf[n..]).unwrap();
    assert_eq!((n + m, w.as_deref()), (buf.len(), Some("sched:sched_wakeup")));
    assert_eq!(next_word(b" \n").unwrap(), (2, None));
    assert_eq!(next_word(b"").unwrap(), (0, None));
    assert_eq!(next_word(b"\0x").unwrap(), (1, None));
    assert_eq!(next_word(b"abc").unwrap(), (3, Some("abc".into())));
    assert_eq!(next_word("0".repeat(127).as_bytes()).map(|x| x.0), Ok(127));
    assert_eq!(next_word("0".repeat(128).as_bytes()), Err(Errno::EINVAL));
    assert_eq!(
        next_word(format!("{}\n", "0".repeat(200)).as_bytes()),
        Err(Errno::EINVAL)
    );
}

#[test]
fn enable_hist_is_its_own_kind_and_counts_every_hit() {
    // Linux's trigger_hist_enable_cmd: ETT_HIST_ENABLE, one per target
    // (enable_hist and disable_hist share it), event_trigger_count.
    let mut l = TriggerList::new();
    assert_eq!(write(&mut l, "enable_event:sched:sched_waking"), Ok(()));
    assert_eq!(
        write(&mut l, "enable_hist:sched:sched_waking:2 if prev_pid == 1"),
        Ok(())
    );
    assert_eq!(write(&mut l, "disable_hist:sched:sched_waking"), Err(Errno::EEXIST));
    assert_eq!(write(&mut l, "disable_hist:sched:sched_wakeup"), Ok(()));
    assert_eq!(
        l.file_text(),
        "disable_hist:sched:sched_wakeup:unlimited\n\
         enable_hist:sched:sched_waking:count=2 if prev_pid == 1\n\
         enable_event:sched:sched_waking:unlimited\n"
    );
    let t = l.iter().find(|t| t.cmd() == TriggerCmd::EnableHist).unwrap();
    assert_eq!(t.target(), Some(("sched", "sched_waking")));
    assert!(t.fire(true), "counted even when the hists were already running");
    assert!(t.fire(false));
    assert!(!t.fire(false), "spent after 2");
    assert_eq!(write(&mut l, "!enable_hist:sched:sched_waking"), Ok(()));
    assert_eq!(write(&mut l, "!disable_hist:sched:sched_wakeup"), Ok(()));
    assert_eq!(l.file_text(), "enable_event:sched:sched_waking:unlimited\n");
}
