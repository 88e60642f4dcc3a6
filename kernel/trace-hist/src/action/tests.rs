extern crate std;

use crate::field::HistContext;
use crate::hist::{HistList, HistSpec, HistTrigger, NamedHists};
use crate::show::{hist_show, NoHistSymbols};
use crate::vars::{HistLinks, HistVarRegistry, SynthArg, SynthTarget};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use std::format;
use std::sync::Mutex;
use trace_filter::{EventField, FieldKind, FilterContext, FilterEnv, NoSymbols};
use trace_probe::synth::SynthField;
use uapi::Errno;

fn num(name: &'static str, offset: u32) -> EventField<'static> {
    EventField {
        name,
        offset,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    }
}

/// sched_wakeup's pid and prio.
const WAKEUP: [EventField<'static>; 2] = [
    EventField {
        name: "pid",
        offset: 8,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
    EventField {
        name: "prio",
        offset: 12,
        size: 4,
        is_signed: true,
        kind: FieldKind::Integer,
    },
];

fn switch_fields() -> [EventField<'static>; 4] {
    [
        num("prev_pid", 8),
        num("next_pid", 12),
        EventField {
            name: "next_comm",
            offset: 16,
            size: 16,
            is_signed: false,
            kind: FieldKind::StaticString,
        },
        num("prev_prio", 32),
    ]
}

fn field_type(name: &str) -> Option<String> {
    Some(String::from(match name {
        "pid" | "prev_pid" | "next_pid" => "pid_t",
        "prio" | "prev_prio" => "int",
        "next_comm" => "char[16]",
        _ => return None,
    }))
}

fn sf(name: &str, ty: &str, size: usize, signed: bool, string: bool) -> SynthField {
    SynthField {
        name: String::from(name),
        type_name: String::from(ty),
        size,
        is_signed: signed,
        is_string: string,
        is_dynamic: false,
        is_stack: false,
    }
}

/// `wakeup_latency u64 lat; pid_t pid; char comm[16]`, recording what it
/// is given.
#[derive(Debug)]
struct Synth {
    fields: Vec<SynthField>,
    got: Mutex<Vec<String>>,
}

impl SynthTarget for Synth {
    fn name(&self) -> &str {
        "wakeup_latency"
    }
    fn fields(&self) -> &[SynthField] {
        &self.fields
    }
    fn trace(&self, vals: &[SynthArg<'_>]) {
        let text: Vec<String> = vals
            .iter()
            .map(|v| match v {
                SynthArg::Num(n) => format!("{n}"),
                SynthArg::Str(s) => String::from_utf8_lossy(s).trim_end_matches('\0').into(),
                SynthArg::Stack(st) => format!("{:x?}", st.iter().take_while(|a| **a != 0).collect::<Vec<_>>()),
            })
            .collect();
        self.got.lock().unwrap().push(text.join(" "));
    }
}

fn synth() -> Arc<Synth> {
    Arc::new(Synth {
        fields: alloc::vec![
            sf("lat", "u64", 8, false, false),
            sf("pid", "pid_t", 4, true, false),
            sf("comm", "char[16]", 16, false, true),
        ],
        got: Mutex::new(Vec::new()),
    })
}

struct Ctx {
    ts: u64,
    snapshots: usize,
}

impl FilterContext for Ctx {
    fn cpu(&self) -> u32 {
        0
    }
    fn comm(&self) -> &[u8] {
        b"sh"
    }
}

impl HistContext for Ctx {
    fn timestamp_ns(&self) -> u64 {
        self.ts
    }
    fn save_stack(&mut self, _out: &mut [u64]) -> usize {
        0
    }
    fn snapshot(&mut self) {
        self.snapshots += 1;
    }
}

const ENV: FilterEnv<'static> = FilterEnv {
    nr_cpu_ids: 2,
    symbols: &NoSymbols,
};

/// Two events' hist triggers, linked as the kernel links them.
struct World {
    vars: HistVarRegistry,
    synth: Arc<Synth>,
    wakeup: HistList,
    switch: HistList,
    named: NamedHists,
    /// Commands the parser asked to add to other events.
    created: Mutex<Vec<String>>,
}

impl World {
    fn new() -> World {
        World {
            vars: HistVarRegistry::new(),
            synth: synth(),
            wakeup: HistList::new(),
            switch: HistList::new(),
            named: NamedHists::new(),
            created: Mutex::new(Vec::new()),
        }
    }

    fn parse(&self, event: &str, cmd: &str) -> Result<HistSpec, crate::HistError> {
        let s = self.synth.clone();
        let find_synth = move |n: &str| (n == "wakeup_latency").then(|| s.clone() as Arc<dyn SynthTarget>);
        let exists = |sys: &str, ev: &str| sys == "sched" && (ev == "sched_wakeup" || ev == "sched_switch");
        let links = HistLinks {
            system: "sched",
            event,
            vars: &self.vars,
            event_exists: &exists,
            find_synth: &find_synth,
            field_type: &field_type,
            create_hist: &|s: &str, e: &str, cmd: &str| {
                self.created.lock().unwrap().push(format!("{s}/{e}: {cmd}"));
                Err(Errno::ENOMEM)
            },
        };
        if event == "sched_wakeup" {
            HistSpec::parse_with(cmd, &WAKEUP, &ENV, &links)
        } else {
            HistSpec::parse_with(cmd, &switch_fields(), &ENV, &links)
        }
    }

    fn add(&mut self, event: &str, cmd: &str) -> Result<(), crate::HistError> {
        let spec = self.parse(event, cmd)?;
        let list = if event == "sched_wakeup" {
            &mut self.wakeup
        } else {
            &mut self.switch
        };
        list.apply(spec, false, &mut self.named)?;
        let t: &Arc<HistTrigger> = list.iter().last().unwrap();
        self.vars.register("sched", event, t.core(), t.filter_text());
        Ok(())
    }

    fn remove(&mut self, event: &str, cmd: &str) -> Result<(), Errno> {
        let spec = self.parse(event, cmd).map_err(|e| e.errno)?;
        let list = if event == "sched_wakeup" {
            &mut self.wakeup
        } else {
            &mut self.switch
        };
        match list.apply(spec, true, &mut self.named).map_err(|e| e.errno)? {
            crate::hist::HistChange::Removed(t) => self.vars.unregister(t.core()),
            _ => return Err(Errno::ENOENT),
        }
        Ok(())
    }

    fn wakeup_hit(&self, pid: i32, us: u64) {
        let mut r = [0u8; 40];
        r[8..12].copy_from_slice(&pid.to_le_bytes());
        for t in self.wakeup.iter() {
            t.event_hit(
                &r,
                &mut Ctx {
                    ts: us * 1000,
                    snapshots: 0,
                },
            );
        }
    }

    fn switch_hit(&self, prev: i32, next: i32, comm: &str, us: u64) -> usize {
        let mut r = [0u8; 40];
        r[8..12].copy_from_slice(&prev.to_le_bytes());
        r[12..16].copy_from_slice(&next.to_le_bytes());
        r[16..16 + comm.len()].copy_from_slice(comm.as_bytes());
        r[32..36].copy_from_slice(&120i32.to_le_bytes());
        let mut ctx = Ctx {
            ts: us * 1000,
            snapshots: 0,
        };
        for t in self.switch.iter() {
            t.event_hit(&r, &mut ctx);
        }
        ctx.snapshots
    }

    fn switch_hist(&self) -> String {
        let v: Vec<&HistTrigger> = self.switch.iter().map(|t| &**t).collect();
        hist_show(&v, &NoHistSymbols)
    }
}

const TS0: &str = "keys=pid:ts0=common_timestamp.usecs";
const ONMATCH: &str = "keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:\
                       onmatch(sched.sched_wakeup).trace(wakeup_latency,$wakeup_lat,next_pid,next_comm)";

#[test]
fn onmatch_traces_the_latency_between_two_events_once_per_wakeup() {
    let mut w = World::new();
    w.add("sched_wakeup", TS0).unwrap();
    w.add("sched_switch", ONMATCH).unwrap();
    w.wakeup_hit(7, 1000);
    w.switch_hit(1, 7, "ping", 1250);
    // ts0 was read by an expression: consumed, so no second event.
    w.switch_hit(1, 7, "ping", 1300);
    // No wakeup for pid 8: the reference does not resolve.
    w.switch_hit(1, 8, "cat", 1400);
    w.wakeup_hit(8, 2000);
    w.switch_hit(7, 8, "cat", 2005);
    assert_eq!(*w.synth.got.lock().unwrap(), ["250 7 ping", "5 8 cat"]);
    assert_eq!(
        w.switch.iter().next().unwrap().line(),
        "hist:keys=next_pid:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:\
         clock=global:onmatch(sched.sched_wakeup).trace(wakeup_latency,$wakeup_lat,next_pid,next_comm) [active]\n"
    );
    // Only hits whose references resolved made entries.
    assert!(w.switch_hist().contains("    Hits: 2\n    Entries: 2\n"));
}

#[test]
fn a_trigger_whose_variables_are_read_cannot_be_removed() {
    let mut w = World::new();
    w.add("sched_wakeup", TS0).unwrap();
    w.add("sched_switch", ONMATCH).unwrap();
    assert_eq!(w.remove("sched_wakeup", TS0), Err(Errno::EBUSY));
    w.remove("sched_switch", ONMATCH).unwrap();
    w.remove("sched_wakeup", TS0).unwrap();
}

#[test]
fn synth_shorthand_and_qualified_references_resolve() {
    let mut w = World::new();
    w.add("sched_wakeup", TS0).unwrap();
    w.add(
        "sched_switch",
        "keys=next_pid:lat=common_timestamp.usecs-sched.sched_wakeup.$ts0:\
         onmatch(sched.sched_wakeup).wakeup_latency($lat,next_pid,next_comm)",
    )
    .unwrap();
    w.wakeup_hit(3, 10);
    w.switch_hit(0, 3, "x", 40);
    assert_eq!(*w.synth.got.lock().unwrap(), ["30 3 x"]);
}

#[test]
fn onmax_saves_the_fields_of_each_new_maximum() {
    let mut w = World::new();
    w.add("sched_wakeup", TS0).unwrap();
    w.add(
        "sched_switch",
        "keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmax($wakeup_lat).save(next_comm,prev_pid)",
    )
    .unwrap();
    for (lat, prev) in [(100, 1), (300, 2), (200, 3)] {
        w.wakeup_hit(7, 1000);
        w.switch_hit(prev, 7, "ping", 1000 + lat);
    }
    let h = w.switch_hist();
    let want = format!(
        "{{ next_pid:          7 }} hitcount:          3\n\tmax:        300  next_comm: {:<32}  prev_pid:          2\n",
        "ping"
    );
    assert!(h.contains(&want), "{h}");
    assert!(
        h.contains(":onmax($wakeup_lat).save(next_comm,prev_pid) [active]"),
        "{h}"
    );
}

#[test]
fn onchange_snapshot_fires_on_changes_only() {
    let mut w = World::new();
    w.add("sched_switch", "keys=next_comm:p=prev_pid:onchange($p).snapshot()")
        .unwrap();
    let taken: Vec<usize> = [5, 5, 6, 6, 5].iter().map(|p| w.switch_hit(*p, 1, "a", 1)).collect();
    assert_eq!(taken, [1, 0, 1, 0, 1]);
    let h = w.switch_hist();
    assert!(
        h.contains(
            "\nSnapshot taken (see tracing/snapshot).  Details:\n\ttriggering value { onchange($p) }:          5\t\
             triggered by event with key: { next_comm: a"
        ),
        "{h}"
    );
}

fn err(w: &World, event: &str, cmd: &str) -> (Errno, Option<(&'static str, usize)>) {
    let e = w.parse(event, cmd).unwrap_err();
    (e.errno, e.log.map(|l| (l.msg, l.pos)))
}

#[test]
fn bad_actions_get_linux_errors_at_linux_positions() {
    let mut w = World::new();
    w.add("sched_wakeup", TS0).unwrap();
    let l = "keys=next_pid:lat=common_timestamp.usecs-$ts0:";
    // Linux's errpos: where the named token first occurs in
    // "hist:" + the command.
    let cases: [(&str, Errno, &str, &str); 9] = [
        (
            "onmax(lat).save(prev_pid)",
            Errno::EINVAL,
            "For onmax(x) or onchange(x), x must be a variable",
            "lat",
        ),
        (
            "onmax($nosuch).save(prev_pid)",
            Errno::EINVAL,
            "Couldn't find onmax or onchange variable",
            "nosuch",
        ),
        (
            "onmatch(sched.sched_wakeup).nosynth($lat)",
            Errno::EINVAL,
            "Couldn't find synthetic event",
            "nosynth",
        ),
        (
            "onmatch(sched.sched_wakeup).wakeup_latency($lat,next_pid)",
            Errno::EINVAL,
            "Param count doesn't match synthetic event field count",
            "wakeup_latency",
        ),
        (
            "onmatch(sched.sched_wakeup).wakeup_latency($lat,prev_prio,next_comm)",
            Errno::EINVAL,
            "Param type doesn't match synthetic event field type",
            "prev_prio",
        ),
        (
            "onmatch(sched.sched_wakeup).wakeup_latency($lat,$nosuch,next_comm)",
            Errno::EINVAL,
            "Couldn't find param",
            "nosuch",
        ),
        (
            "onmatch(sched.sched_wakeup).save(prev_pid)",
            Errno::EINVAL,
            "Handler doesn't support action",
            "save",
        ),
        (
            "onmatch(sched.nosuch).trace(wakeup_latency,$lat)",
            Errno::EINVAL,
            "Invalid subsystem or event name",
            "nosuch",
        ),
        (
            "onmatch(sched).trace(wakeup_latency,$lat)",
            Errno::EINVAL,
            "Missing subsystem",
            "sched",
        ),
    ];
    for (action, errno, msg, at) in cases {
        let cmd = format!("{l}{action}");
        let pos = format!("hist:{cmd}").find(at).unwrap();
        assert_eq!(err(&w, "sched_switch", &cmd), (errno, Some((msg, pos))), "{action}");
    }
    // A field passed as a parameter keeps its type, not its signedness
    // (Linux's create_var): int into int is fine, int into pid_t is not.
    assert_eq!(
        err(
            &w,
            "sched_switch",
            &format!("{l}onmatch(sched.sched_wakeup).wakeup_latency($lat,prev_prio,next_comm)")
        )
        .1
        .unwrap()
        .0,
        "Param type doesn't match synthetic event field type"
    );
    assert!(w
        .parse(
            "sched_switch",
            &format!("{l}onmatch(sched.sched_wakeup).wakeup_latency($lat,prev_pid,next_comm)")
        )
        .is_ok());
    assert_eq!(
        err(
            &w,
            "sched_switch",
            &format!("{l}onmax($lat).save(prev_pid):onmax($lat).save(next_pid)")
        ),
        (
            Errno::EEXIST,
            Some(("Can't have more than one save() action per hist", 0))
        )
    );
}

proptest::proptest! {
    #[test]
    fn arbitrary_actions_never_panic(
        a in "(onmatch|onmax|onchange)\\(([a-z_.$]{0,20}|sched\\.sched_wakeup|\\$lat)\\)?\\.?[a-z_]{0,16}\\(?[a-z_$,.]{0,40}\\)?"
    ) {
        let mut w = World::new();
        w.add("sched_wakeup", TS0).unwrap();
        let cmd = format!("keys=next_pid:lat=common_timestamp.usecs-$ts0:{a}");
        if let Ok(spec) = w.parse("sched_switch", &cmd) {
            // What parses prints back as what parses again.
            let line = HistTrigger::new(spec).unwrap().line();
            let again = line.strip_prefix("hist:").unwrap().trim_end_matches(" [active]\n");
            proptest::prop_assert!(w.parse("sched_switch", again).is_ok(), "{line}");
        }
    }

    #[test]
    fn onmatch_sees_each_latency_and_consumes_the_variable(lats in proptest::collection::vec(0u64..100_000, 1..40)) {
        let mut w = World::new();
        w.add("sched_wakeup", TS0).unwrap();
        w.add("sched_switch", ONMATCH).unwrap();
        w.add("sched_switch", "keys=next_pid:l=common_timestamp.usecs-$ts0:onmax($l).save(prev_pid)").unwrap();
        let mut now = 1_000u64;
        for (i, lat) in lats.iter().enumerate() {
            w.wakeup_hit(9, now);
            w.switch_hit(i as i32, 9, "t", now + lat);
            now += lat + 1;
        }
        // The onmatch trigger consumed ts0 first: the onmax one, reading
        // it next, never resolves (as on Linux, a variable is read once).
        let got = w.synth.got.lock().unwrap().clone();
        let want: Vec<String> = lats.iter().map(|l| format!("{l} 9 t")).collect();
        proptest::prop_assert_eq!(got, want);
        let second = w.switch.iter().nth(1).unwrap();
        proptest::prop_assert_eq!(second.map().hits(), 0);
    }
}

#[test]
fn a_field_of_the_matched_event_asks_for_a_trigger_there_with_matching_keys() {
    let mut w = World::new();
    w.add("sched_wakeup", "keys=pid:ts0=common_timestamp.usecs if prio < 100")
        .unwrap();
    let lat = "lat=common_timestamp.usecs-$ts0";
    // next_pid is a pid_t as pid is: that histogram's keys and filter.
    let e = w
        .parse(
            "sched_switch",
            &format!("keys=next_pid:{lat}:onmatch(sched.sched_wakeup).wakeup_latency($lat,next_pid,prio)"),
        )
        .unwrap_err();
    assert_eq!(
        *w.created.lock().unwrap(),
        ["sched/sched_wakeup: keys=pid:synthetic_prio=prio if prio < 100"]
    );
    assert_eq!(e.log.map(|l| l.msg), Some("Couldn't create histogram for field"));
    // A string key matches no pid_t key.
    let e = w
        .parse(
            "sched_switch",
            &format!("keys=next_comm:{lat}:onmatch(sched.sched_wakeup).wakeup_latency($lat,next_pid,prio)"),
        )
        .unwrap_err();
    assert_eq!(e.log.map(|l| l.msg), Some("Matching event histogram not found"));
    assert_eq!(w.created.lock().unwrap().len(), 1);
}

#[test]
fn a_bad_saved_field_logs_linux_three_errors() {
    let mut w = World::new();
    w.add("sched_wakeup", TS0).unwrap();
    let cmd = "keys=next_pid:lat=common_timestamp.usecs-$ts0:onmax($lat).save(nosuch)";
    let e = w.parse("sched_switch", cmd).unwrap_err();
    let pos = format!("hist:{cmd}").find("nosuch").unwrap();
    let logged: Vec<(&str, usize)> = e.first.iter().chain(&e.log).map(|l| (l.msg, l.pos)).collect();
    assert_eq!(
        logged,
        [
            ("Couldn't find field", pos),
            ("Couldn't parse field variable", pos),
            ("Couldn't create field variable", pos)
        ]
    );
    assert_eq!(e.errno, Errno::EINVAL);
}
