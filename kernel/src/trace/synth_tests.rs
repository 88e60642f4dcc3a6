//! In-kernel tests of synthetic events and event probes: what
//! `synth_event_trace` records prints as Linux prints it (every field
//! kind, Linux's quirks for `s8`/`s16`), an event probe attached to a
//! synthetic event sees its fields, and an event in use cannot go.

use super::test_files::{append, read_all, write};
use super::trace_events_synth::{find_synth_event, synth_event_trace, SynthVal};
use alloc::vec::Vec;
use ktest_macros::kernel_test;
use uapi::Errno;

fn lines_with(pat: &str) -> Vec<alloc::string::String> {
    read_all("trace")
        .lines()
        .filter(|l| l.contains(pat))
        .map(alloc::string::String::from)
        .collect()
}

#[kernel_test]
fn synth_event_trace_records_every_field_kind_as_linux_prints_it() {
    super::tracefs::tracefs();
    write("trace", "").unwrap();
    append(
        "synthetic_events",
        "ktsynth u64 lat; pid_t pid; char comm[16]; char name[]; s8 b; s16 h; s32 i; gfp_t g; unsigned long[] st",
    )
    .unwrap();
    let se = find_synth_event("ktsynth").expect("defined");
    let kfree = crate::kallsyms::lookup_name("kfree").expect("kfree") as u64;
    let vals = [
        SynthVal::Num(123),
        SynthVal::Num(-5i64 as u64),
        SynthVal::Str(b"hello\0junk"),
        SynthVal::Str(b"/bin/x"),
        SynthVal::Num(-1i64 as u64),
        SynthVal::Num(-1i64 as u64),
        SynthVal::Num(-1i64 as u64),
        SynthVal::Num(0xcc0),
        SynthVal::Stack(&[kfree, 0]),
    ];
    // Disabled: nothing is recorded.
    synth_event_trace(&se, &vals).unwrap();
    assert!(lines_with("ktsynth:").is_empty());
    write("events/synthetic/ktsynth/enable", "1").unwrap();
    synth_event_trace(&se, &vals).unwrap();
    assert_eq!(synth_event_trace(&se, &vals[..3]), Err(Errno::EINVAL));
    let swapped = [
        vals[2], vals[1], vals[0], vals[3], vals[4], vals[5], vals[6], vals[7], vals[8],
    ];
    assert_eq!(synth_event_trace(&se, &swapped), Err(Errno::EINVAL));
    write("events/synthetic/ktsynth/enable", "0").unwrap();
    let trace = read_all("trace");
    let at = trace.find(": ktsynth: ").unwrap_or_else(|| panic!("{trace}"));
    let text = &trace[at + 2..];
    // Linux prints s8 and s16 through their unsigned union members, and
    // a gfp_t's names after the separating space.
    assert!(
        text.starts_with(
            "ktsynth: lat=123 pid=-5 comm=hello name=/bin/x b=255 h=65535 i=-1 g=cc0  (GFP_KERNEL)st=STACK:\n=> kfree+0x0/"
        ),
        "{trace}"
    );
    assert_eq!(lines_with("ktsynth:").len(), 1, "{trace}");
    write("trace", "").unwrap();
    append("synthetic_events", "!ktsynth").unwrap();
    assert!(find_synth_event("ktsynth").is_none());
}

#[kernel_test]
fn an_event_probe_on_a_synthetic_event_reads_its_fields_and_keeps_it() {
    super::tracefs::tracefs();
    write("trace", "").unwrap();
    append("dynamic_events", "s:ktsyn2 u64 lat; char name[]; pid_t pid").unwrap();
    append(
        "dynamic_events",
        "e:ktep synthetic.ktsyn2 lat=$lat name=$name:string p=$pid:s32 if lat > 10",
    )
    .unwrap();
    let se = find_synth_event("ktsyn2").expect("defined");
    // The attached event cannot go while the probe is on it, nor can a
    // referenced one.
    assert_eq!(append("synthetic_events", "!ktsyn2"), Err(Errno::EBUSY));
    // The probe's own filter runs nested inside the attached event's path.
    write("events/eprobes/ktep/filter", "p == -7").unwrap();
    write("events/eprobes/ktep/enable", "1").unwrap();
    for lat in [5u64, 42] {
        synth_event_trace(
            &se,
            &[SynthVal::Num(lat), SynthVal::Str(b"abc"), SynthVal::Num(-7i64 as u64)],
        )
        .unwrap();
    }
    write("events/eprobes/ktep/enable", "0").unwrap();
    let lines = lines_with("ktep:");
    assert_eq!(lines.len(), 1, "the filter passes lat 42 only: {lines:?}");
    assert!(
        lines[0].ends_with("ktep: (synthetic.ktsyn2) lat=0x2a name=\"abc\" p=-7"),
        "{lines:?}"
    );
    // The synthetic event itself was not enabled: nothing of its own.
    assert!(lines_with(": ktsyn2:").is_empty());
    append("dynamic_events", "-:ktep").unwrap();
    se.get_ref();
    assert_eq!(append("dynamic_events", "-:synthetic/ktsyn2"), Err(Errno::EBUSY));
    se.put_ref();
    append("dynamic_events", "-:synthetic/ktsyn2").unwrap();
    assert!(find_synth_event("ktsyn2").is_none());
    write("trace", "").unwrap();
}
