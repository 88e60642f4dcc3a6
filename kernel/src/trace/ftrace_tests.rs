//! In-kernel tests of the ftrace patch sites, the trampoline, the ops
//! dispatch and the `function` tracer.

use super::ftrace::{self, flags, FtraceHash, FtraceOps, FTRACE_LIST_OPS, FTRACE_NOP_OPS};
use super::test_files::{append, read_all, write};
use alloc::collections::BTreeSet;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arch::ftrace::{FtraceRegs, FTRACE_BL_OFFSET, FTRACE_PREFIX_BYTES, MOV_X9_X30};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use ktest_macros::kernel_test;
use uapi::Errno;

/// A traceable function with arguments, called only by these tests.
#[inline(never)]
#[no_mangle]
#[allow(unsafe_code)] // a fixed name for filters
extern "C" fn ktest_ftrace_target(a: u64, b: u64) -> u64 {
    core::hint::black_box(a).wrapping_mul(3) ^ b
}

/// The literal, entry and `bl` words of every site.
fn site_words() -> Vec<[u32; 4]> {
    ftrace::sites()
        .iter()
        .map(|s| {
            let base = s.func - FTRACE_PREFIX_BYTES;
            core::array::from_fn(|k| crate::patching::read_insn(base + 4 * k).expect("site readable"))
        })
        .collect()
}

fn literal_of(func: usize) -> usize {
    let lo = crate::patching::read_insn(func - 8).unwrap() as usize;
    let hi = crate::patching::read_insn(func - 4).unwrap() as usize;
    lo | hi << 32
}

fn only(func: usize) -> FtraceHash {
    FtraceHash {
        filter: BTreeSet::from([ftrace::site_index(func).expect("a site")]),
        notrace: BTreeSet::new(),
    }
}

#[kernel_test]
fn sites_table_holds_every_traceable_function_once() {
    let sites = ftrace::sites();
    assert!(sites.len() > 100, "only {} sites", sites.len());
    assert!(
        sites.windows(2).all(|w| w[0].func < w[1].func),
        "sites not sorted and unique"
    );
    for s in sites {
        assert!(s.func.is_multiple_of(8), "{} not 8-aligned", s.name);
        let sym = crate::kallsyms::lookup_addr(s.func).expect("site in kallsyms");
        assert_eq!((sym.offset, sym.name), (0, s.name));
        assert!(!crate::notrace::is_notrace(s.func), "notrace {} has a site", s.name);
    }
    for name in ["vfs_read", "ktest_ftrace_target", "kernel_clone"] {
        let f = crate::kallsyms::lookup_name(name).expect(name);
        assert!(ftrace::site_index(f).is_some(), "{name} has no site");
        assert_eq!(ftrace::ftrace_location(f), Some(f + FTRACE_BL_OFFSET));
        assert_eq!(
            ftrace::ftrace_location(f + FTRACE_BL_OFFSET),
            Some(f + FTRACE_BL_OFFSET)
        );
        assert_eq!(ftrace::ftrace_location(f + 8), None);
    }
    // A probe on a site's `bl` is armed through ftrace (kprobes on
    // ftrace), never by writing a BRK over the `bl`.
    let f = ktest_ftrace_target as *const () as usize;
    let kp = Arc::new(crate::kprobes::Kprobe::at(f + FTRACE_BL_OFFSET));
    crate::kprobes::register_kprobe(&kp).unwrap();
    let bl = crate::patching::read_insn(f + FTRACE_BL_OFFSET).unwrap();
    assert!(insn::decode::is_bl(bl));
    crate::kprobes::unregister_kprobe(&kp);
    // `#[notrace]` functions are built without a site at all (those
    // marked by `nokprobe_symbol!` or by module keep an unused one).
    let recorded: BTreeSet<usize> = ftrace::recorded_sites()
        .iter()
        .map(|&l| l as usize + FTRACE_PREFIX_BYTES)
        .collect();
    let try_current = crate::sched::try_current as *const () as usize;
    assert!(crate::notrace::is_marked_function(try_current));
    assert!(!recorded.contains(&try_current), "#[notrace] try_current has a site");
    assert!(recorded.contains(&(ktest_ftrace_target as *const () as usize)));
    assert!(recorded.len() >= sites.len());
}

#[kernel_test]
fn every_site_boots_as_the_initialised_nop() {
    let nop = insn::encode::nop();
    let nop_ops = &FTRACE_NOP_OPS as *const FtraceOps as usize;
    for (s, w) in ftrace::sites().iter().zip(site_words()) {
        assert_eq!(w[0] as usize | (w[1] as usize) << 32, nop_ops, "{} literal", s.name);
        assert_eq!(w[2], MOV_X9_X30, "{} entry", s.name);
        assert_eq!(w[3], nop, "{} bl slot", s.name);
        assert_eq!(s.flags() & flags::ENABLED, 0);
    }
    // The instruction the site starts with is what its constant says.
    assert_eq!(insn::encode::mov_reg(9, 30).ok(), Some(MOV_X9_X30));
}

static HITS: AtomicUsize = AtomicUsize::new(0);
static LAST_IP: AtomicUsize = AtomicUsize::new(0);
static LAST_PARENT: AtomicUsize = AtomicUsize::new(0);
static LAST_ARG: AtomicU64 = AtomicU64::new(0);

fn record_hit(_: &FtraceOps, ip: usize, parent: usize, regs: &mut FtraceRegs) {
    HITS.fetch_add(1, Ordering::Relaxed);
    LAST_IP.store(ip, Ordering::Relaxed);
    LAST_PARENT.store(parent, Ordering::Relaxed);
    LAST_ARG.store(regs.argument(1).unwrap_or(0), Ordering::Relaxed);
}

static KTEST_OPS: FtraceOps = FtraceOps::new("ktest_ops", record_hit);

static HITS2: AtomicUsize = AtomicUsize::new(0);
fn count_hit(_: &FtraceOps, _: usize, _: usize, _: &mut FtraceRegs) {
    HITS2.fetch_add(1, Ordering::Relaxed);
}
static KTEST_OPS2: FtraceOps = FtraceOps::new("ktest_ops2", count_hit);

#[inline(never)]
fn call_target(a: u64, b: u64) -> (u64, usize) {
    let r = ktest_ftrace_target(core::hint::black_box(a), b);
    (r, call_target as *const () as usize)
}

#[kernel_test]
fn ops_sees_ip_parent_and_arguments_and_text_comes_back() {
    let f = ktest_ftrace_target as *const () as usize;
    let before = site_words();
    KTEST_OPS.set_hash(only(f)).unwrap();
    ftrace::register_ftrace_function(&KTEST_OPS).unwrap();
    assert_eq!(ftrace::register_ftrace_function(&KTEST_OPS), Err(Errno::EBUSY));
    let bl = crate::patching::read_insn(f + FTRACE_BL_OFFSET).unwrap();
    assert!(insn::decode::is_bl(bl));
    assert_eq!(literal_of(f), &KTEST_OPS as *const FtraceOps as usize);
    HITS.store(0, Ordering::Relaxed);
    let (r, caller) = call_target(5, 0x77);
    assert_eq!(r, 15 ^ 0x77, "the traced function's result changed");
    assert_eq!(HITS.load(Ordering::Relaxed), 1);
    assert_eq!(LAST_IP.load(Ordering::Relaxed), f + FTRACE_BL_OFFSET);
    let parent = LAST_PARENT.load(Ordering::Relaxed);
    assert_eq!(
        crate::kallsyms::lookup_addr(parent).map(|s| s.addr as usize),
        Some(caller),
        "parent is not the caller"
    );
    assert_eq!(LAST_ARG.load(Ordering::Relaxed), 0x77);
    // Not traced: other functions.
    let _ = alloc::format!("{}", core::hint::black_box(1));
    assert_eq!(HITS.load(Ordering::Relaxed), 1);
    ftrace::unregister_ftrace_function(&KTEST_OPS).unwrap();
    assert_eq!(ftrace::unregister_ftrace_function(&KTEST_OPS), Err(Errno::EINVAL));
    call_target(1, 2);
    assert_eq!(HITS.load(Ordering::Relaxed), 1, "hit after unregister");
    assert!(site_words() == before, "text not restored exactly");
    let site = &ftrace::sites()[ftrace::site_index(f).unwrap() as usize];
    assert_ne!(site.flags() & flags::TOUCHED, 0);
    KTEST_OPS.set_hash(FtraceHash::default()).unwrap();
}

#[kernel_test]
fn two_ops_on_one_site_share_it_through_the_list() {
    let f = ktest_ftrace_target as *const () as usize;
    let before = site_words();
    KTEST_OPS.set_hash(only(f)).unwrap();
    KTEST_OPS2.set_hash(only(f)).unwrap();
    ftrace::register_ftrace_function(&KTEST_OPS).unwrap();
    ftrace::register_ftrace_function(&KTEST_OPS2).unwrap();
    assert_eq!(literal_of(f), &FTRACE_LIST_OPS as *const FtraceOps as usize);
    HITS.store(0, Ordering::Relaxed);
    HITS2.store(0, Ordering::Relaxed);
    call_target(1, 2);
    assert_eq!((HITS.load(Ordering::Relaxed), HITS2.load(Ordering::Relaxed)), (1, 1));
    ftrace::unregister_ftrace_function(&KTEST_OPS).unwrap();
    assert_eq!(literal_of(f), &KTEST_OPS2 as *const FtraceOps as usize);
    call_target(1, 2);
    assert_eq!((HITS.load(Ordering::Relaxed), HITS2.load(Ordering::Relaxed)), (1, 2));
    // Narrowing the remaining ops' filter away from the site turns it off.
    KTEST_OPS2
        .set_hash(only(crate::kallsyms::lookup_name("vfs_read").unwrap()))
        .unwrap();
    call_target(1, 2);
    assert_eq!(HITS2.load(Ordering::Relaxed), 2);
    ftrace::unregister_ftrace_function(&KTEST_OPS2).unwrap();
    assert!(site_words() == before, "text not restored exactly");
    KTEST_OPS.set_hash(FtraceHash::default()).unwrap();
    KTEST_OPS2.set_hash(FtraceHash::default()).unwrap();
}

static NESTED: AtomicUsize = AtomicUsize::new(0);
fn reenter(_: &FtraceOps, _: usize, _: usize, _: &mut FtraceRegs) {
    NESTED.fetch_add(1, Ordering::Relaxed);
    // The traced function again, from its own callback.
    ktest_ftrace_target(1, 1);
}
static REENTER_OPS: FtraceOps = FtraceOps::new("ktest_reenter", reenter);

#[kernel_test]
fn a_callback_calling_its_traced_function_does_not_loop() {
    let f = ktest_ftrace_target as *const () as usize;
    REENTER_OPS.set_hash(only(f)).unwrap();
    ftrace::register_ftrace_function(&REENTER_OPS).unwrap();
    let missed = REENTER_OPS.nmissed();
    call_target(3, 4);
    ftrace::unregister_ftrace_function(&REENTER_OPS).unwrap();
    assert_eq!(NESTED.load(Ordering::Relaxed), 1);
    assert_eq!(REENTER_OPS.nmissed(), missed + 1);
}

#[kernel_test]
fn function_tracer_files_follow_linux() {
    assert_eq!(
        read_all("available_tracers"),
        "function_graph wakeup_rt wakeup preemptirqsoff preemptoff irqsoff function nop\n"
    );
    assert_eq!(read_all("set_ftrace_filter"), "#### all functions enabled ####\n");
    // A word ending the write is applied there (one left unfinished waits
    // for the close, whose error is lost, as in Linux).
    assert_eq!(write("set_ftrace_filter", "no_such_function_xyz\n"), Err(Errno::EINVAL));
    write("set_ftrace_filter", "ktest_ftrace_target").unwrap();
    append("set_ftrace_filter", "vfs_rea*").unwrap();
    let filter = read_all("set_ftrace_filter");
    assert!(filter.lines().any(|l| l == "vfs_read") && filter.lines().any(|l| l == "ktest_ftrace_target"));
    append("set_ftrace_filter", "!vfs_rea*").unwrap();
    assert_eq!(read_all("set_ftrace_filter"), "ktest_ftrace_target\n");
    assert_eq!(write("current_tracer", "nosuch"), Err(Errno::EINVAL));
    write("current_tracer", "function").unwrap();
    assert_eq!(read_all("current_tracer"), "function\n");
    assert!(read_all("enabled_functions").starts_with("ktest_ftrace_target (1)       O   \tops: global_ops+0x0/0x"));
    let irqs_off = arch::cpu::irqs_disabled();
    call_target(1, 2);
    let trace = read_all("trace");
    write("current_tracer", "nop").unwrap();
    assert!(trace.starts_with("# tracer: function\n"));
    assert!(read_all("trace").starts_with("# tracer: nop\n"));
    // The callback runs with interrupts masked; the entry shows the
    // traced function's state instead.
    let line = trace
        .lines()
        .find(|l| l.contains(" ktest_ftrace_target <-"))
        .expect("an entry");
    assert_eq!(line.contains("] d"), irqs_off, "{line}");
    assert!(
        line.contains(" ktest_ftrace_target <-kernel__trace__ftrace_tests__call_target"),
        "{line}"
    );
    assert_eq!(read_all("enabled_functions"), "");
    assert!(read_all("touched_functions").contains("ktest_ftrace_target (0)           \n"));
    assert_eq!(read_all("set_ftrace_pid"), "no pid\n");
    assert_eq!(write("set_ftrace_pid", "x"), Err(Errno::EINVAL));
    write("set_ftrace_pid", "999999").unwrap();
    assert_eq!(read_all("set_ftrace_pid"), "999999\n");
    write("set_ftrace_pid", "").unwrap();
    write("set_ftrace_filter", "").unwrap();
    write("trace", "").unwrap();
}

#[kernel_test]
fn function_tracer_on_every_function_on_all_cpus_neither_hangs_nor_leaves_text() {
    let me = arch::cpu::cpu_id();
    let workers: Vec<usize> = super::tracing_cpus().filter(|&c| c != me).collect();
    let before = site_words();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let (s, d) = (stop.clone(), done.clone());
    // Work on the other CPUs in cross-call context, serving the
    // stop_machine rendezvous meanwhile.
    crate::smp::smp_call_function_many(
        workers.iter().copied(),
        Arc::new(move || {
            while !s.load(Ordering::Acquire) {
                let v: Vec<u64> = (0..8).collect();
                call_target(v.len() as u64, 1);
                let _ = crate::kallsyms::lookup_name("vfs_read");
                crate::smp::flush_pending_calls();
            }
            d.fetch_add(1, Ordering::AcqRel);
        }),
        false,
    );
    // Tracer switches (each a stop_machine over every site) while the
    // other CPUs run traced code, an instance switching its own function
    // tracers on the same sites at the same time.
    let instances = super::test_files::lookup("instances").unwrap();
    instances
        .create(b"stress", vfs::NodeKind::Directory, 0o755, 0, 0)
        .unwrap();
    let (mut cycles, mut written) = (0, 0);
    while cycles < 4 {
        let inst = if cycles % 2 == 0 { "function_graph" } else { "function" };
        write("instances/stress/current_tracer", inst).unwrap();
        write("current_tracer", "function").unwrap();
        let until = crate::printk::uptime_ns() + 20_000_000;
        while crate::printk::uptime_ns() < until {
            call_target(2, 3);
        }
        // Counted before the switch, which empties the buffer.
        written += super::global_trace().total_entries().1;
        write("current_tracer", "nop").unwrap();
        cycles += 1;
    }
    // Counted from the buffer's stats, not its text: a reader of `trace`
    // chases a writer tracing every function.
    write("instances/stress/tracing_on", "0").unwrap();
    let inst_entries: u64 = super::tracing_cpus()
        .map(|c| {
            read_all(&alloc::format!("instances/stress/per_cpu/cpu{c}/stats"))
                .lines()
                .find_map(|l| l.strip_prefix("entries: ")?.trim().parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum();
    assert!(inst_entries > 0, "nothing recorded in the instance");
    // rmdir with the instance's tracer on stops it.
    instances.rmdir(b"stress").unwrap();
    stop.store(true, Ordering::Release);
    while done.load(Ordering::Acquire) < workers.len() {
        core::hint::spin_loop();
    }
    assert!(written > 0, "no entries in {cycles} cycles");
    assert!(site_words() == before, "text not restored exactly");
    write("trace", "").unwrap();
}
