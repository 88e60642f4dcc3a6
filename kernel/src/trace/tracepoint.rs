//! Tracepoints (Linux's `TRACE_EVENT`): an event defined once, with
//! [`define_trace_event!`], by its system, name, the C fields of its entry
//! and its `TP_printk` format. From that one definition come
//!
//! - the entry's binary layout: a `#[repr(C)]` struct laid out as Linux's
//!   `struct trace_event_raw_<name>` (common fields, then each field at its
//!   natural alignment), whose offsets the `format` file lists;
//! - the `format` file (C type, name, offset, size, signedness, `print fmt`);
//! - the text line of `trace`, printed from the decoded entry;
//! - `trace_<name>(args...)`: a static branch on the event's key
//!   (one NOP while the event is off) around the recording, which is out
//!   of line.
//!
//! The key is taken while the event is enabled (its `reg` callback inc/decs
//! it), so a disabled event costs its call sites nothing but the branch.
//! Recording never allocates (the entry is built in the ring buffer), so
//! the allocator's own events can be recorded.

pub mod irq;
pub mod kmem;
pub mod preemptirq;
pub mod printk;
pub mod rseq;
pub mod sched;
pub mod signal;
pub mod syscalls;
pub mod task;
pub mod timer;

use super::events::{self, FieldDesc, TraceEvent, TraceEventDef};
use alloc::string::String;
use alloc::sync::Arc;
use uapi::Errno;

/// How a field's C type is stored in an entry and read back for printing.
pub trait TpField {
    /// What the definition's assignment gives.
    type Arg<'a>;
    /// What printing sees.
    type View<'a>;
    /// The C representation in the entry (size and alignment of the type).
    type Raw: Copy;
    /// Whether the C type is signed (the `signed:` of `format`).
    const SIGNED: bool;
    /// `[N]` after the name for arrays.
    fn array_suffix() -> String {
        String::new()
    }
    /// Bytes the value adds after the fixed part (`__data_loc` data).
    fn dyn_len(_arg: &Self::Arg<'_>) -> usize {
        0
    }
    /// Stores `arg` at `off` in `entry`; dynamic data goes at `*dyn_at`,
    /// which advances past it.
    fn store(arg: &Self::Arg<'_>, entry: &mut [u8], off: usize, dyn_at: &mut usize);
    /// Reads the field at `off` of `entry` (zero or empty if the entry is
    /// short).
    fn load(entry: &[u8], off: usize) -> Self::View<'_>;
}

macro_rules! int_field {
    ($($t:ty => $signed:expr),*) => {$(
        impl TpField for $t {
            type Arg<'a> = $t;
            type View<'a> = $t;
            type Raw = $t;
            const SIGNED: bool = $signed;
            fn store(arg: &$t, entry: &mut [u8], off: usize, _: &mut usize) {
                if let Some(d) = entry.get_mut(off..off + core::mem::size_of::<$t>()) {
                    d.copy_from_slice(&arg.to_le_bytes());
                }
            }
            fn load(entry: &[u8], off: usize) -> $t {
                entry
                    .get(off..off + core::mem::size_of::<$t>())
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, <$t>::from_le_bytes)
            }
        }
    )*};
}

int_field!(i8 => true, u8 => false, i16 => true, u16 => false, i32 => true, u32 => false,
    i64 => true, u64 => false);

/// A `char NAME[16]` task name (`TASK_COMM_LEN`); `char` is unsigned on
/// arm64, as the `format` files say.
pub struct Comm;

/// A NUL-padded byte string read from an entry; prints up to its NUL.
#[derive(Clone, Copy)]
pub struct CStr<'a>(pub &'a [u8]);

impl core::fmt::Display for CStr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len());
        for &b in &self.0[..n] {
            f.write_char_lossy(b)?;
        }
        Ok(())
    }
}

/// Writes one byte of a C string as `%s` would (bytes above ASCII as
/// their Latin-1 characters, never a panic).
trait WriteByte {
    fn write_char_lossy(&mut self, b: u8) -> core::fmt::Result;
}

impl WriteByte for core::fmt::Formatter<'_> {
    fn write_char_lossy(&mut self, b: u8) -> core::fmt::Result {
        core::fmt::Write::write_char(self, char::from(b))
    }
}

impl TpField for Comm {
    type Arg<'a> = [u8; 16];
    type View<'a> = CStr<'a>;
    type Raw = [u8; 16];
    const SIGNED: bool = false;
    fn array_suffix() -> String {
        String::from("[16]")
    }
    fn store(arg: &[u8; 16], entry: &mut [u8], off: usize, _: &mut usize) {
        if let Some(d) = entry.get_mut(off..off + 16) {
            d.copy_from_slice(arg);
        }
    }
    fn load(entry: &[u8], off: usize) -> CStr<'_> {
        CStr(entry.get(off..off + 16).unwrap_or(&[]))
    }
}

/// `unsigned long NAME[N]`.
impl<const N: usize> TpField for [u64; N] {
    type Arg<'a> = [u64; N];
    type View<'a> = [u64; N];
    type Raw = [u64; N];
    const SIGNED: bool = false;
    fn array_suffix() -> String {
        alloc::format!("[{N}]")
    }
    fn store(arg: &[u64; N], entry: &mut [u8], off: usize, _: &mut usize) {
        for (i, v) in arg.iter().enumerate() {
            if let Some(d) = entry.get_mut(off + 8 * i..off + 8 * i + 8) {
                d.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    fn load(entry: &[u8], off: usize) -> [u64; N] {
        core::array::from_fn(|i| u64::load(entry, off + 8 * i))
    }
}

/// A `__data_loc char[]` string (Linux's `__string`): a 32-bit word in the
/// fixed part, `length << 16 | offset`, the bytes (with their NUL) after
/// the fixed part.
pub struct DataLocStr;

/// The longest string a `__data_loc` field keeps (longer ones are cut).
pub const DATA_LOC_MAX: usize = 1024;

impl TpField for DataLocStr {
    type Arg<'a> = &'a [u8];
    type View<'a> = CStr<'a>;
    type Raw = u32;
    const SIGNED: bool = false;
    fn dyn_len(arg: &&[u8]) -> usize {
        arg.len().min(DATA_LOC_MAX) + 1
    }
    fn store(arg: &&[u8], entry: &mut [u8], off: usize, dyn_at: &mut usize) {
        let len = Self::dyn_len(arg);
        let at = *dyn_at;
        if let Some(d) = entry.get_mut(at..at + len) {
            d[..len - 1].copy_from_slice(&arg[..len - 1]);
            d[len - 1] = 0;
            *dyn_at += len;
            u32::store(&(((len as u32) << 16) | at as u32), entry, off, dyn_at);
        }
    }
    fn load(entry: &[u8], off: usize) -> CStr<'_> {
        let loc = u32::load(entry, off) as usize;
        let (at, len) = (loc & 0xffff, loc >> 16);
        CStr(entry.get(at..at + len).unwrap_or(&[]))
    }
}

/// The `format` file's description of one field.
pub fn field_desc<T: TpField>(c_type: &str, name: &str, offset: usize) -> FieldDesc {
    let name = alloc::format!("{name}{}", T::array_suffix());
    FieldDesc::new(c_type, &name, offset, core::mem::size_of::<T::Raw>(), T::SIGNED)
}

/// Registers the event of a tracepoint: `reg` inc/decs its key.
pub fn register_tracepoint(def: TraceEventDef, slot: &'static spin::Once<Arc<TraceEvent>>) -> Result<(), Errno> {
    let ev = events::register_trace_event(def)?;
    slot.call_once(|| ev);
    Ok(())
}

/// What a tracepoint probe (`t:` event) needs of a tracepoint: its key,
/// its count of probes and its probe function (Linux's `struct
/// tracepoint` with its `probestub`).
#[derive(Clone, Copy)]
pub struct TracepointProbe {
    /// The tracepoint's (and its event's) name.
    pub name: &'static str,
    /// On while its event is enabled or a probe is attached.
    pub key: &'static crate::jump_label::StaticKey,
    /// Probes attached.
    pub probes: &'static core::sync::atomic::AtomicUsize,
    /// The address of `__probestub_<name>`.
    pub stub: usize,
    /// Switches on (true) or off what calls the tracepoint, where that is
    /// not the key alone (the system-call gate of the `raw_syscalls`
    /// events, the interrupt-mask and preemption hooks of the `preemptirq`
    /// events; reference counted).
    pub arm: Option<fn(bool)>,
}

/// Every tracepoint, as its event registers.
static TRACEPOINTS: spin::Mutex<alloc::vec::Vec<TracepointProbe>> = spin::Mutex::new(alloc::vec::Vec::new());

/// Records a tracepoint for [`tracepoint_probe_register`].
pub fn register_tracepoint_probe(tp: TracepointProbe) {
    let mut all = TRACEPOINTS.lock();
    if !all.iter().any(|t| t.name == tp.name) {
        all.push(tp);
    }
}

/// The probe function of the tracepoint `name` (Linux's
/// `find_tracepoint` then `tpoint->probestub`).
pub fn tracepoint_probestub(name: &str) -> Option<usize> {
    TRACEPOINTS.lock().iter().find(|t| t.name == name).map(|t| t.stub)
}

/// Makes the tracepoint `name` call its probe function on every hit
/// (Linux's `tracepoint_probe_register_prio_may_exist` of the stub):
/// turns its key on. `ENOENT` for an unknown tracepoint.
pub fn tracepoint_probe_register(name: &str) -> Result<usize, Errno> {
    let tp = find_tracepoint(name).ok_or(Errno::ENOENT)?;
    tp.probes.fetch_add(1, core::sync::atomic::Ordering::AcqRel);
    if let Some(arm) = tp.arm {
        arm(true);
    }
    crate::jump_label::static_key_slow_inc(tp.key);
    Ok(tp.stub)
}

/// Undoes one [`tracepoint_probe_register`].
pub fn tracepoint_probe_unregister(name: &str) {
    if let Some(tp) = find_tracepoint(name) {
        crate::jump_label::static_key_slow_dec(tp.key);
        if let Some(arm) = tp.arm {
            arm(false);
        }
        tp.probes.fetch_sub(1, core::sync::atomic::Ordering::AcqRel);
    }
}

/// A copy of the tracepoint `name`'s handles (the lock is not held while
/// its key is switched, which takes a `stop_machine`).
fn find_tracepoint(name: &str) -> Option<TracepointProbe> {
    TRACEPOINTS.lock().iter().find(|t| t.name == name).copied()
}

/// A task's name for a `char comm[16]` field (two word loads, no lock).
#[inline]
pub fn task_comm(t: &crate::sched::Task) -> [u8; 16] {
    t.comm.get()
}

/// The `prio` Linux shows for a task of this kernel: every task is
/// SCHED_NORMAL at nice 0 (`MAX_RT_PRIO + NICE_WIDTH / 2`), the idle tasks
/// included.
pub const DEFAULT_PRIO: i32 = 120;

/// `pid_t` of a task as Linux shows it (0 for the idle tasks).
pub fn task_pid(t: &crate::sched::Task) -> i32 {
    if t.is_idle() {
        0
    } else {
        t.tid() as i32
    }
}

/// Registers the events of one system.
type RegisterFn = fn() -> Result<(), Errno>;

/// Registers every tracepoint's event (at tracefs's creation, at boot).
pub fn register_tracepoints() {
    let all: [(&str, RegisterFn); 10] = [
        ("printk", printk::register),
        ("rseq", rseq::register),
        ("timer", timer::register),
        ("irq", irq::register),
        ("kmem", kmem::register),
        ("syscalls", syscalls::register),
        ("task", task::register),
        ("signal", signal::register),
        ("sched", sched::register),
        ("preemptirq", preemptirq::register),
    ];
    for (system, register) in all {
        if let Err(e) = register() {
            crate::pr_err!("trace: cannot register the {} events: {}", system, e);
        }
    }
}

/// Defines a tracepoint and its event (see the module's documentation).
///
/// ```ignore
/// define_trace_event! {
///     /// Doc of `trace_sched_process_exit`.
///     sched / sched_process_exit,
///     fn trace_sched_process_exit(p: &Task),
///     fields {
///         comm: Comm as "char" = task_comm(p),
///         pid: i32 as "pid_t" = task_pid(p),
///     },
///     printk "\"comm=%s pid=%d\", REC->comm, REC->pid",
///     print(out, e) { write!(out, "comm={} pid={}", e.comm, e.pid) }
/// }
/// ```
///
/// This makes a module named after the event (its key `KEY`, its event
/// `EVENT`, `register()`, the entry layout `Raw` and view `Entry`) and the
/// function `trace_<name>` beside it.
#[macro_export]
macro_rules! define_trace_event {
    (
        $(#[$doc:meta])*
        $system:ident / $name:ident,
        fn $trace:ident($($arg:ident : $argty:ty),* $(,)?),
        fields { $($field:ident : $fty:ty as $cty:literal = $assign:expr),* $(,)? },
        printk $printk:expr,
        print($out:ident, $e:ident) $print:block
        $(, arm $arm:path)? $(,)?
    ) => {
        #[allow(non_snake_case, unused_imports, dead_code, clippy::unused_unit)]
        #[doc = concat!("The `", stringify!($system), "/", stringify!($name), "` tracepoint.")]
        pub mod $name {
            use super::*;
            use $crate::trace::tracepoint::TpField;
            use alloc::string::String;
            use core::fmt::Write as _;

            /// On while the event is enabled.
            pub static KEY: $crate::jump_label::StaticKey = $crate::jump_label::StaticKey::new_false();
            /// The registered event.
            pub static EVENT: spin::Once<alloc::sync::Arc<$crate::trace::events::TraceEvent>> = spin::Once::new();

            /// The entry as Linux lays it out (`struct trace_event_raw_*`).
            #[repr(C)]
            pub struct Raw {
                common: [u32; 2],
                $(pub $field: <$fty as TpField>::Raw,)*
            }

            /// A recorded entry, decoded for printing.
            pub struct Entry<'a> {
                $(pub $field: <$fty as TpField>::View<'a>,)*
                _entry: core::marker::PhantomData<&'a [u8]>,
            }

            impl<'a> Entry<'a> {
                /// Decodes `entry` (common fields first).
                pub fn load(entry: &'a [u8]) -> Entry<'a> {
                    Entry {
                        $($field: <$fty as TpField>::load(entry, core::mem::offset_of!(Raw, $field)),)*
                        _entry: core::marker::PhantomData,
                    }
                }
            }

            /// The `format` file's fields.
            pub fn fields() -> alloc::vec::Vec<$crate::trace::events::FieldDesc> {
                alloc::vec![$($crate::trace::tracepoint::field_desc::<$fty>(
                    $cty, stringify!($field), core::mem::offset_of!(Raw, $field)),)*]
            }

            /// The text after `name: `.
            pub fn print_fields($out: &mut String, $e: &Entry<'_>) -> core::fmt::Result {
                $print
            }

            /// Registers the event.
            pub fn register() -> Result<(), uapi::Errno> {
                let def = $crate::trace::events::TraceEventDef {
                    system: String::from(stringify!($system)),
                    name: String::from(stringify!($name)),
                    fields: fields(),
                    print_fmt: String::from($printk),
                    print: alloc::boxed::Box::new(|out, rec| {
                        out.push_str(concat!(stringify!($name), ": "));
                        let _ = print_fields(out, &Entry::load(rec.entry));
                        out.push('\n');
                    }),
                    reg: Some(alloc::boxed::Box::new(|on| {
                        if on {
                            RECORDING.store(true, core::sync::atomic::Ordering::Release);
                            $($arm(true);)?
                            $crate::jump_label::static_key_slow_inc(&KEY);
                        } else {
                            $crate::jump_label::static_key_slow_dec(&KEY);
                            $($arm(false);)?
                            RECORDING.store(false, core::sync::atomic::Ordering::Release);
                        }
                        Ok(())
                    })),
                    ignore_enable: false,
                };
                $crate::trace::tracepoint::register_tracepoint_probe($crate::trace::tracepoint::TracepointProbe {
                    name: stringify!($name),
                    key: &KEY,
                    probes: &PROBES,
                    stub: probestub as *const () as usize,
                    arm: ARM,
                });
                $crate::trace::tracepoint::register_tracepoint(def, &EVENT)
            }

            /// What else must be switched on for the tracepoint to be hit.
            const ARM: Option<fn(bool)> = {
                #[allow(unused_variables)]
                let arm: Option<fn(bool)> = None;
                $(let arm: Option<fn(bool)> = Some($arm);)?
                arm
            };

            /// Tracepoint probes attached (`t:` events): while there are
            /// some, the key is on and every hit calls [`probestub`].
            pub static PROBES: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
            /// The event is enabled (the key may be on for probes only).
            pub static RECORDING: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

            /// The tracepoint's probe function (Linux's
            /// `__probestub_<name>`): does nothing; a `t:` event is an fprobe
            /// on it, and its prototype (a data pointer, then the
            /// tracepoint's arguments) names what `$argN` reads.
            #[allow(unsafe_code, improper_ctypes_definitions, clippy::unused_unit)]
            #[export_name = concat!("__probestub_", stringify!($name))]
            #[inline(never)]
            pub extern "C" fn probestub(__data: *mut (), $($arg: $argty),*) {
                // Its own static keeps the linker from folding stubs of the
                // same signature into one.
                core::hint::black_box((&PROBES, __data, $(&$arg),*));
            }

            /// Records one entry (the key is on).
            #[cold]
            #[inline(never)]
            pub fn record($($arg: $argty),*) {
                if PROBES.load(core::sync::atomic::Ordering::Acquire) != 0 {
                    probestub(core::ptr::null_mut(), $($arg),*);
                }
                if !RECORDING.load(core::sync::atomic::Ordering::Acquire) {
                    return;
                }
                let Some(ev) = EVENT.get() else { return };
                // All at once: a field named as an argument must not hide it
                // from the fields after it.
                #[allow(unused_parens)]
                let ($($field),*): ($(<$fty as TpField>::Arg<'_>),*) = ($($assign),*);
                let fixed = core::mem::size_of::<Raw>();
                let len = fixed $(+ <$fty as TpField>::dyn_len(&$field))*;
                let fill = |entry: &mut [u8]| {
                    let mut dyn_at = fixed;
                    $(<$fty as TpField>::store(&$field, entry, core::mem::offset_of!(Raw, $field), &mut dyn_at);)*
                    let _ = &mut dyn_at;
                    true
                };
                // Every store writes its field's whole width and its
                // dynamic bytes exactly: an entry without holes between
                // the fields is written whole, and needs no clearing.
                const NO_HOLES: bool =
                    core::mem::size_of::<Raw>() == 8 $(+ core::mem::size_of::<<$fty as TpField>::Raw>())*;
                if NO_HOLES {
                    ev.record_entry_full(len, fill);
                } else {
                    ev.record_entry(len, fill);
                }
            }
        }

        $(#[$doc])*
        #[inline(always)]
        pub fn $trace($($arg: $argty),*) {
            if $crate::static_branch_unlikely!($name::KEY) {
                $name::record($($arg),*);
            }
        }
    };
}
