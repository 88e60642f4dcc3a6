//! tracefs: one filesystem (every mount shows the same tree, as Linux's),
//! mounted by init at `/sys/kernel/tracing`, `/sys/kernel/debug/tracing`
//! and `/tracing`. Files carry Linux's names, modes, contents and errors.

use super::readers::{TraceFile, TracePipe, TracePipeRaw};
use super::TraceArray;
use super::{clock, cmdlines, error_log, events, ftrace_function, global_trace, options, output, tracing_cpus};
use crate::fs::pseudo::{PseudoDir, PseudoFs};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use trace_filter::cpumask::{CpuMask, MaskError};
use uapi::Errno;
use vfs::file::FileOps;

static TRACEFS: spin::Once<Arc<PseudoFs>> = spin::Once::new();
static EVENTS_DIR: spin::Once<Arc<PseudoDir>> = spin::Once::new();

/// The one tracefs, made (with the global trace array) at its first use.
pub fn tracefs() -> Arc<PseudoFs> {
    TRACEFS
        .call_once(|| {
            // Linux's TRACEFS_DEFAULT_MODE: the root is 0700.
            let fs = PseudoFs::with_root_mode("tracefs", 0o700);
            global_trace();
            cmdlines::init();
            create(fs.root_dir());
            fs
        })
        .clone()
}

/// `events/`, where the registry makes event directories.
pub fn events_dir() -> Arc<PseudoDir> {
    if let Some(d) = EVENTS_DIR.get() {
        return d.clone();
    }
    tracefs();
    EVENTS_DIR.get().expect("made with tracefs").clone()
}

/// Linux's `kstrtoul_from_user(.., 10, ..)`: decimal, one trailing newline
/// allowed; EINVAL for anything else, ERANGE past `u64`.
pub fn parse_ulong(buf: &[u8]) -> Result<u64, Errno> {
    let s = buf.strip_suffix(b"\n").unwrap_or(buf);
    let s = s.strip_prefix(b"+").unwrap_or(s);
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return Err(Errno::EINVAL);
    }
    s.iter().try_fold(0u64, |v, &d| {
        v.checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or(Errno::ERANGE)
    })
}

/// A command's text with surrounding whitespace removed.
fn cmd_str(buf: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(buf).map(str::trim).map_err(|_| Errno::EINVAL)
}

/// Where a later feature's lines go in `README`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ReadmeSection {
    /// The list of top-level files (`kprobe_events`, `dynamic_events`, ...).
    Files,
    /// The files of `events/<system>/` (`filter`).
    SystemFiles,
    /// The files of `events/<system>/<event>/` (`filter`, `trigger`, ...).
    EventFiles,
}

static README_EXTRA: spin::Mutex<Vec<(ReadmeSection, &'static str)>> = spin::Mutex::new(Vec::new());

/// Adds Linux's `README` lines for a feature that now exists; ftracetest
/// decides what to test by grepping them.
pub fn readme_add(section: ReadmeSection, text: &'static str) {
    README_EXTRA.lock().push((section, text));
}

fn readme_extra(s: &mut String, section: ReadmeSection) {
    for (sec, text) in README_EXTRA.lock().iter() {
        if *sec == section {
            s.push_str(text);
        }
    }
}

/// `README`: Linux's text for what this tracefs has.
fn readme() -> Vec<u8> {
    let mut s = String::from(
        "tracing mini-HOWTO:\n\n\
         By default tracefs removes all OTH file permission bits.\n\
         When mounting tracefs an optional group id can be specified\n\
         which adds the group to every directory and file in tracefs:\n\n\
         \t e.g. mount -t tracefs [-o [gid=<gid>]] nodev /sys/kernel/tracing\n\n\
         # echo 0 > tracing_on : quick way to disable tracing\n\
         # echo 1 > tracing_on : quick way to re-enable tracing\n\n \
         Important files:\n  \
         trace\t\t\t- The static contents of the buffer\n\
         \t\t\t  To clear the buffer write into this file: echo > trace\n  \
         trace_pipe\t\t- A consuming read to see the contents of the buffer\n  \
         current_tracer\t- function and latency tracers\n  \
         available_tracers\t- list of configured tracers for current_tracer\n  \
         error_log\t- error log for failed commands (that support it)\n  \
         buffer_size_kb\t- view and modify size of per cpu buffer\n  \
         buffer_total_size_kb  - view total size of all cpu buffers\n\n  \
         trace_clock\t\t- change the clock used to order events\n       \
         local:   Per cpu clock but may not be synced across CPUs\n      \
         global:   Synced across CPUs but slows tracing down.\n     \
         counter:   Not a clock, but just an increment\n      \
         uptime:   Jiffy counter from time of boot\n        \
         perf:   Same clock that perf events use\n\
         \n  timestamp_mode\t- view the mode used to timestamp events\n       \
         delta:   Delta difference against a buffer-wide timestamp\n    \
         absolute:   Absolute (standalone) timestamp\n\
         \n  trace_marker\t\t- Writes into this file writes into the kernel buffer\n\
         \n  trace_marker_raw\t\t- Writes into this file writes binary data into the kernel buffer\n  \
         instances\t\t- Make sub-buffers with: mkdir instances/foo\n\
         \t\t\t  Remove sub-buffer with rmdir\n  \
         trace_options\t\t- Set format or modify how tracing happens\n\
         \t\t\t  Disable an option by prefixing 'no' to the\n\
         \t\t\t  option name\n  \
         saved_cmdlines_size\t- echo command number in here to store comm-pid list\n",
    );
    readme_extra(&mut s, ReadmeSection::Files);
    s.push_str(
        "  events/\t\t- Directory containing all trace event subsystems:\n      \
         enable\t\t- Write 0/1 to enable/disable tracing of all events\n  \
         events/<system>/\t- Directory containing all trace events for <system>:\n      \
         enable\t\t- Write 0/1 to enable/disable tracing of all <system>\n\
         \t\t\t  events\n",
    );
    readme_extra(&mut s, ReadmeSection::SystemFiles);
    s.push_str(
        "  events/<system>/<event>/\t- Directory containing control files for\n\
         \t\t\t  <event>:\n      \
         enable\t\t- Write 0/1 to enable/disable tracing of <event>\n",
    );
    readme_extra(&mut s, ReadmeSection::EventFiles);
    s.into_bytes()
}

/// `buffer_size_kb` of one CPU or (None) of all.
fn buffer_size_show(tr: &TraceArray, cpu: Option<usize>) -> Vec<u8> {
    let kb = |c: usize| tr.size_bytes(c) >> 10;
    let size = match cpu {
        Some(c) => Some(kb(c)),
        None => {
            let mut sizes = tracing_cpus().map(kb);
            let first = sizes.next().unwrap_or(0);
            sizes.all(|s| s == first).then_some(first)
        }
    };
    match size {
        None => b"X\n".to_vec(),
        // Only the all-CPU file tells the size to come (as Linux's).
        Some(s) if !tr.is_expanded() && cpu.is_none() => {
            format!("{s} (expanded: {})\n", tr.expand_size() >> 10).into_bytes()
        }
        Some(s) => format!("{s}\n").into_bytes(),
    }
}

/// A `buffer_size_kb` write: KiB per CPU; 0 is EINVAL.
fn buffer_size_write(tr: &TraceArray, cpu: Option<usize>, buf: &[u8]) -> Result<usize, Errno> {
    let kb = parse_ulong(buf)?;
    if kb == 0 {
        return Err(Errno::EINVAL);
    }
    let bytes = usize::try_from(kb)
        .ok()
        .and_then(|k| k.checked_mul(1024))
        .ok_or(Errno::ENOMEM)?;
    tr.resize(cpu, bytes)?;
    Ok(buf.len())
}

/// One open of `free_buffer` (Linux's `tracing_free_buffer_fops`): writes
/// are taken and do nothing; the last close of the open file shrinks
/// every CPU's buffer to the smallest size (Linux resizes to 0, which the
/// ring buffer rounds up to its two pages) and, with
/// `options/disable_on_free`, turns tracing off first, as
/// `tracing_free_buffer_release`. Tracing resumes once `buffer_size_kb`
/// is written again.
struct FreeBuffer {
    tr: &'static TraceArray,
}

impl FileOps for FreeBuffer {
    fn write(&self, _: &vfs::OpenFile, buf: &[u8], _: &mut u64) -> Result<usize, Errno> {
        Ok(buf.len())
    }
}

impl Drop for FreeBuffer {
    fn drop(&mut self) {
        if self.tr.is_set(options::DISABLE_ON_FREE) {
            self.tr.set_tracing_on(false);
        }
        // Nothing to report to: a close does not fail, and a buffer that
        // cannot shrink keeps its size.
        let _ = self.tr.resize(None, 0);
    }
}

/// `trace_marker` and `trace_marker_raw` of a trace array: write-only
/// (a read is EINVAL, as Linux's files have no read). A write whose copy
/// from the user faults is recorded as `<faulted>` and fails with EFAULT
/// (Linux copies with page faults off, into the entry it reserved).
struct Marker {
    tr: &'static TraceArray,
    raw: bool,
}

impl FileOps for Marker {
    fn write(&self, _: &vfs::OpenFile, buf: &[u8], _: &mut u64) -> Result<usize, Errno> {
        if self.raw {
            super::raw_data::tracing_mark_raw_write(self.tr, buf)
        } else if !self.tr.is_set(options::MARKERS) {
            Err(Errno::EINVAL)
        } else {
            super::tracing_mark_write(self.tr, buf)
        }
    }

    fn write_iter(&self, file: &vfs::OpenFile, from: &mut dyn vfs::IovSource, pos: &mut u64) -> Result<usize, Errno> {
        let len = from.count().min(vfs::inode::BOUNCE_MAX);
        match from.consume(len, &mut |data| self.write(file, data, pos)) {
            Err(Errno::EFAULT) if self.raw => super::raw_data::tracing_mark_raw_faulted(self.tr, len),
            Err(Errno::EFAULT) if !self.tr.is_set(options::MARKERS) => Err(Errno::EINVAL),
            Err(Errno::EFAULT) => super::tracing_mark_faulted(self.tr, len),
            r => r,
        }
    }
}

fn ops(f: impl Fn(u32) -> Arc<dyn FileOps> + Send + Sync + 'static) -> crate::fs::pseudo::OpenFn {
    Box::new(move |flags| Ok(f(flags)))
}

/// Makes the tree.
fn create(root: &Arc<PseudoDir>) {
    let tr: &'static TraceArray = global_trace();
    root.file("README", 0o440, Box::new(readme), None);
    root.file("available_events", 0o440, Box::new(events::available_events), None);
    let _ = root.file_trunc(
        "error_log",
        0o640,
        Box::new(|| error_log::show().into_bytes()),
        Some(Box::new(|buf| Ok(buf.len()))),
        Some(Box::new(error_log::clear)),
    );
    let events_dir = root.dir("events");
    EVENTS_DIR.call_once(|| events_dir.clone());
    events::create_top_files(&events_dir, tr);
    super::event_filter::init();
    events::register_internal_events();
    super::tracepoint::register_tracepoints();
    super::trace_kprobe::init(root);
    super::ftrace_function::init(root);

    super::function_graph::init(root);
    super::trace_irqsoff::init(root);
    super::trace_sched_wakeup::init();
    root.file("printk_formats", 0o440, Box::new(Vec::new), None);
    root.file(
        "saved_cmdlines",
        0o440,
        Box::new(|| cmdlines::show().into_bytes()),
        None,
    );
    root.file(
        "saved_cmdlines_size",
        0o640,
        Box::new(|| format!("{}\n", cmdlines::size()).into_bytes()),
        Some(Box::new(|buf| {
            let n = usize::try_from(parse_ulong(buf)?).map_err(|_| Errno::EINVAL)?;
            cmdlines::resize(n)?;
            Ok(buf.len())
        })),
    );
    root.file(
        "saved_tgids",
        0o440,
        Box::new(|| cmdlines::show_tgids().into_bytes()),
        None,
    );
    create_array_files(root, tr);
    readme_add(ReadmeSection::Files, super::snapshot::README_SNAPSHOT);
    // 0750, as Linux's tracefs_create_instance_dir makes it.
    let instances = root.dir_mode("instances", 0o750);
    let (mk, rm) = (instances.clone(), instances.clone());
    instances.set_dir_ops(
        Box::new(move |name| instance_mkdir(&mk, name)),
        Box::new(move |name| instance_rmdir(&rm, name)),
    );
}

/// `options/` of `tr`: a file per option, but for an instance those only
/// the top level has (Linux's `create_trace_options_dir`).
fn create_options_dir(dir: &Arc<PseudoDir>, tr: &'static TraceArray) {
    let top = super::is_global(tr);
    let opts = dir.dir_mode("options", 0o750);
    for o in options::TRACE_OPTIONS
        .iter()
        .filter(|o| top || o.bit & options::TOP_LEVEL_TRACE_FLAGS == 0)
    {
        let bit = o.bit;
        opts.file(
            o.name,
            0o640,
            Box::new(move || {
                if tr.is_set(bit) {
                    b"1\n".to_vec()
                } else {
                    b"0\n".to_vec()
                }
            }),
            Some(Box::new(move |buf| {
                match parse_ulong(buf)? {
                    0 => options::change_flag(tr, bit, false)?,
                    1 => options::change_flag(tr, bit, true)?,
                    _ => return Err(Errno::EINVAL),
                }
                Ok(buf.len())
            })),
        );
    }
    // The top level's are made with the rest of function_graph's files.
    if !top {
        super::function_graph::create_option_files(&opts);
    }
}

/// The files each trace array has, the top one and every instance's: its
/// buffers, their sizes, `trace`, `trace_pipe`, `trace_marker`,
/// `tracing_on`, the (nop) tracer, `per_cpu/`, its options, clock and
/// event pid lists.
fn create_array_files(dir: &Arc<PseudoDir>, tr: &'static TraceArray) {
    create_options_dir(dir, tr);
    let _ = dir.file_trunc(
        "set_event",
        0o640,
        Box::new(move || events::set_event_show(tr)),
        Some(Box::new(move |buf| events::set_event_write(tr, buf))),
        Some(Box::new(move || events::disable_all_events(tr))),
    );
    let _ = dir.file_trunc(
        "set_event_pid",
        0o640,
        Box::new(move || tr.event_pids.show()),
        Some(Box::new(move |buf| tr.write_event_pids(false, buf))),
        Some(Box::new(move || tr.clear_event_pids(false))),
    );
    let _ = dir.file_trunc(
        "set_event_notrace_pid",
        0o640,
        Box::new(move || tr.event_notrace_pids.show()),
        Some(Box::new(move |buf| tr.write_event_pids(true, buf))),
        Some(Box::new(move || tr.clear_event_pids(true))),
    );
    dir.file(
        "trace_clock",
        0o640,
        Box::new(move || clock::show(tr).into_bytes()),
        Some(Box::new(move |buf| {
            clock::tracing_set_clock(tr, cmd_str(buf)?)?;
            Ok(buf.len())
        })),
    );
    dir.file(
        "trace_options",
        0o640,
        Box::new(move || options::show(tr).into_bytes()),
        Some(Box::new(move |buf| {
            options::apply(tr, cmd_str(buf)?)?;
            Ok(buf.len())
        })),
    );
    dir.file(
        "available_tracers",
        0o440,
        Box::new(move || ftrace_function::available_tracers(tr)),
        None,
    );
    dir.file(
        "buffer_size_kb",
        0o640,
        Box::new(move || buffer_size_show(tr, None)),
        Some(Box::new(move |buf| buffer_size_write(tr, None, buf))),
    );
    dir.file(
        "buffer_subbuf_size_kb",
        0o640,
        Box::new(move || super::subbuf::buffer_subbuf_size_show(tr)),
        Some(Box::new(move |buf| super::subbuf::buffer_subbuf_size_write(tr, buf))),
    );
    dir.file(
        "buffer_percent",
        0o640,
        Box::new(move || format!("{}\n", tr.buffer_percent()).into_bytes()),
        Some(Box::new(move |buf| {
            tr.set_buffer_percent(parse_ulong(buf)?).map(|()| buf.len())
        })),
    );
    dir.file(
        "buffer_total_size_kb",
        0o440,
        Box::new(move || {
            let total: usize = tracing_cpus().map(|c| tr.size_bytes(c) >> 10).sum();
            if tr.is_expanded() {
                format!("{total}\n").into_bytes()
            } else {
                let n = tracing_cpus().count();
                format!("{total} (expanded: {})\n", (tr.expand_size() >> 10) * n).into_bytes()
            }
        }),
        None,
    );
    // Linux 6.12's tracing_time_stamp_mode_show: nothing there sets a
    // buffer to absolute timestamps any more (hist triggers with
    // common_timestamp use filter buffering), so every buffer is in delta
    // mode (reflinux: "[delta] absolute" before and after such a trigger).
    dir.file(
        "timestamp_mode",
        0o440,
        Box::new(|| b"[delta] absolute\n".to_vec()),
        None,
    );
    dir.file(
        "current_tracer",
        0o640,
        Box::new(move || format!("{}\n", ftrace_function::current_tracer(tr)).into_bytes()),
        Some(Box::new(move |buf| {
            ftrace_function::set_current_tracer(tr, cmd_str(buf)?)?;
            Ok(buf.len())
        })),
    );
    let per_cpu = dir.dir_mode("per_cpu", 0o750);
    for cpu in tracing_cpus() {
        let d = per_cpu.dir_mode(&format!("cpu{cpu}"), 0o750);
        d.file(
            "buffer_size_kb",
            0o640,
            Box::new(move || buffer_size_show(tr, Some(cpu))),
            Some(Box::new(move |buf| buffer_size_write(tr, Some(cpu), buf))),
        );
        d.file(
            "stats",
            0o440,
            Box::new(move || output::cpu_stats(tr, cpu).into_bytes()),
            None,
        );
        let _ = d.file_ops("trace", 0o640, ops(move |flags| TraceFile::open(tr, Some(cpu), flags)));
        let _ = d.file_ops("trace_pipe", 0o440, ops(move |_| TracePipe::open(tr, Some(cpu))));
        let _ = d.file_ops("trace_pipe_raw", 0o440, ops(move |_| TracePipeRaw::open(tr, cpu)));
        let _ = d.file_ops("snapshot", 0o640, ops(move |_| TraceFile::open_snapshot(tr, Some(cpu))));
        let _ = d.file_ops(
            "snapshot_raw",
            0o440,
            ops(move |_| TracePipeRaw::open(super::snapshot::max_or_make(tr), cpu)),
        );
    }
    let _ = dir.file_ops("snapshot", 0o640, ops(move |_| TraceFile::open_snapshot(tr, None)));
    let _ = dir.file_ops("trace", 0o640, ops(move |flags| TraceFile::open(tr, None, flags)));
    let _ = dir.file_ops("trace_marker", 0o220, ops(move |_| Arc::new(Marker { tr, raw: false })));
    let _ = dir.file_ops(
        "trace_marker_raw",
        0o220,
        ops(move |_| Arc::new(Marker { tr, raw: true })),
    );
    let _ = dir.file_ops("trace_pipe", 0o440, ops(move |_| TracePipe::open(tr, None)));
    let _ = dir.file_ops("free_buffer", 0o200, ops(move |_| Arc::new(FreeBuffer { tr })));
    dir.file(
        "tracing_on",
        0o640,
        Box::new(move || {
            if tr.tracing_on() {
                b"1\n".to_vec()
            } else {
                b"0\n".to_vec()
            }
        }),
        Some(Box::new(move |buf| {
            tr.set_tracing_on(parse_ulong(buf)? != 0);
            Ok(buf.len())
        })),
    );
    dir.file(
        "tracing_cpumask",
        0o640,
        Box::new(move || {
            let nr = crate::smp::num_online_cpus() as u32;
            let mut out = CpuMask::from_word(tr.cpumask()).to_hex(nr);
            out.push('\n');
            out.into_bytes()
        }),
        Some(Box::new(move |buf| {
            let nr = crate::smp::num_online_cpus() as u32;
            let m = CpuMask::parse_hex(buf, nr).map_err(|e| match e {
                MaskError::Invalid => Errno::EINVAL,
                MaskError::Overflow => Errno::EOVERFLOW,
            })?;
            tr.set_cpumask(m.low_word());
            Ok(buf.len())
        })),
    );
}

/// The trace arrays of `instances/`, by name.
static INSTANCES: spin::Mutex<BTreeMap<String, &'static TraceArray>> = spin::Mutex::new(BTreeMap::new());

/// `mkdir instances/NAME`: a new trace array with its own buffers, files,
/// options and event files (Linux's `instance_mkdir`); EEXIST if the name
/// is taken.
fn instance_mkdir(instances: &Arc<PseudoDir>, name: &str) -> Result<(), Errno> {
    let mut all = INSTANCES.lock();
    if all.contains_key(name) {
        return Err(Errno::EEXIST);
    }
    let dir = crate::fs::tracefs::tracefs_create_dir(&crate::fs::tracefs::c_name(name)?, instances)?;
    // Its options start as the top level's, less those Linux zeroes.
    let flags = global_trace().trace_flags() & !options::ZEROED_TRACE_FLAGS;
    let made = super::instance_array(flags).and_then(|tr| {
        // Instances start with full-size buffers, as Linux allocates them.
        if let Err(e) = tr.update_buffers() {
            tr.free_buffers();
            super::instance_array_free(tr);
            return Err(e);
        }
        Ok(tr)
    });
    let tr = match made {
        Ok(tr) => tr,
        Err(e) => {
            let _ = instances.remove_tree(name);
            return Err(e);
        }
    };
    create_array_files(&dir, tr);
    ftrace_function::create_array_files(&dir, tr);
    let _ = dir.file_trunc(
        "error_log",
        0o640,
        Box::new(move || error_log::show_tr(tr).into_bytes()),
        Some(Box::new(|buf| Ok(buf.len()))),
        Some(Box::new(move || error_log::clear_tr(tr))),
    );
    let events = dir.dir("events");
    if let Err(e) = events::event_trace_add_tracer(tr, &events) {
        events::event_trace_del_tracer(tr);
        let _ = instances.remove_tree(name);
        tr.free_buffers();
        super::instance_array_free(tr);
        return Err(e);
    }
    all.insert(name.into(), tr);
    Ok(())
}

/// `rmdir instances/NAME`: EBUSY while one of its files is open; its
/// events are disabled first (Linux's `instance_rmdir`).
fn instance_rmdir(instances: &Arc<PseudoDir>, name: &str) -> Result<(), Errno> {
    let mut all = INSTANCES.lock();
    let tr = *all.get(name).ok_or(Errno::ENOENT)?;
    instances.remove_tree(name)?;
    all.remove(name);
    drop(all);
    ftrace_function::instance_remove(tr);
    error_log::clear_tr(tr);
    events::event_trace_del_tracer(tr);
    tr.set_tracing_on(false);
    tr.free_buffers();
    super::instance_array_free(tr);
    Ok(())
}
