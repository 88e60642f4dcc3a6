//! fprobe: function entry and exit probes on ftrace sites (Linux's
//! `kernel/trace/fprobe.c` and `Documentation/trace/fprobe.rst`).
//!
//! An [`Fprobe`] has an entry handler, an exit handler or both, and is
//! registered on a set of functions: by glob ([`register_fprobe`], with a
//! notrace glob), by address ([`register_fprobe_ips`]) or by name
//! ([`register_fprobe_syms`]). Every fprobe shares one ftrace ops
//! ([`FPROBE_OPS`], its filter the union of their functions) and finds the
//! fprobes of a hit function in a table that changes only inside
//! `stop_machine`, so the hit path takes no lock that a registration could
//! hold: when [`unregister_fprobe`] returns, no CPU runs its entry handler.
//!
//! An fprobe with an exit handler hooks the return through the task's
//! return stack (`rethook`, shared with function_graph and kretprobes): at
//! entry an instance is taken from the fprobe's pool (made at registration,
//! Linux's `nr_maxactive` or 2 per CPU per function), carrying
//! `entry_data_size` private bytes from the entry handler to the exit
//! handler. An entry handler returning non-zero skips the exit handler for
//! that call. A hit that finds no free instance, a full return stack or
//! this CPU already inside an fprobe handler counts in `nmissed`.

use super::ftrace::{self, FtraceHash, FtraceOps};
use super::rethook::{RetFrame, RethookOwner};
use crate::errno::Errno;
use crate::percpu::{PerCpu, NR_CPUS};
use crate::sync::IrqSpinLock;
use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::sync::{Arc, Weak};
use alloc::vec;
use alloc::vec::Vec;
use arch::ftrace::{FtraceRegs, FtraceRetRegs, FTRACE_BL_OFFSET};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// An entry handler: `(fp, entry_ip, ret_ip, regs, entry_data)`, where
/// `entry_ip` is the function's ftrace site (its `bl`), `ret_ip` its return
/// address and `entry_data` the instance's private bytes (empty without an
/// exit handler or `entry_data_size`). Non-zero skips the exit handler.
pub type FprobeEntryHandler = Arc<dyn Fn(&Fprobe, usize, usize, &mut FtraceRegs, &mut [u8]) -> i32 + Send + Sync>;

/// An exit handler: `(fp, entry_ip, ret_ip, regs, entry_data)`, with the
/// return value in `regs`.
pub type FprobeExitHandler = Arc<dyn Fn(&Fprobe, usize, usize, &mut FtraceRetRegs, &mut [u8]) + Send + Sync>;

/// Most instances one fprobe makes when `nr_maxactive` is not given
/// (Linux's `RETHOOK_MAXACTIVE_MAX`): a glob matching every function would
/// otherwise ask for thousands per function.
pub const FPROBE_MAXACTIVE_MAX: usize = 4096;

/// One in-flight call of a function an fprobe's exit handler waits for
/// (Linux's `fprobe_rethook_node`).
pub struct FprobeInstance {
    /// The function's ftrace site.
    entry_ip: usize,
    /// Its return address.
    entry_parent_ip: usize,
    /// `entry_data_size` private bytes.
    data: Vec<u8>,
    /// The fprobe whose pool this instance returns to.
    fp: Weak<Fprobe>,
}

/// A function entry/exit probe (Linux's `struct fprobe`).
pub struct Fprobe {
    entry_handler: Option<FprobeEntryHandler>,
    exit_handler: Option<FprobeExitHandler>,
    entry_data_size: usize,
    nr_maxactive: usize,
    disabled: AtomicBool,
    nmissed: AtomicU64,
    registered: AtomicBool,
    /// Its functions (site indices) while registered.
    sites: spin::Mutex<Vec<u32>>,
    /// Instances not in flight; its capacity holds all `made`, so that
    /// giving one back never allocates.
    #[allow(clippy::vec_box)]
    pool: IrqSpinLock<Vec<Box<FprobeInstance>>>,
    made: AtomicUsize,
}

impl Default for Fprobe {
    fn default() -> Self {
        Self::new()
    }
}

impl Fprobe {
    /// An fprobe without handlers.
    pub fn new() -> Fprobe {
        Fprobe {
            entry_handler: None,
            exit_handler: None,
            entry_data_size: 0,
            nr_maxactive: 0,
            disabled: AtomicBool::new(false),
            nmissed: AtomicU64::new(0),
            registered: AtomicBool::new(false),
            sites: spin::Mutex::new(Vec::new()),
            pool: IrqSpinLock::new(Vec::new()),
            made: AtomicUsize::new(0),
        }
    }

    /// Sets the entry handler.
    pub fn entry_handler(
        mut self,
        f: impl Fn(&Fprobe, usize, usize, &mut FtraceRegs, &mut [u8]) -> i32 + Send + Sync + 'static,
    ) -> Self {
        self.entry_handler = Some(Arc::new(f));
        self
    }

    /// Sets the exit handler.
    pub fn exit_handler(
        mut self,
        f: impl Fn(&Fprobe, usize, usize, &mut FtraceRetRegs, &mut [u8]) + Send + Sync + 'static,
    ) -> Self {
        self.exit_handler = Some(Arc::new(f));
        self
    }

    /// Sets `entry_data_size`.
    pub fn entry_data_size(mut self, n: usize) -> Self {
        self.entry_data_size = n;
        self
    }

    /// Sets `nr_maxactive`: instances of the whole fprobe (0: 2 per CPU
    /// per function).
    pub fn maxactive(mut self, n: usize) -> Self {
        self.nr_maxactive = n;
        self
    }

    /// Registers it disabled (Linux's `FPROBE_FL_DISABLED` set before
    /// registration): handlers run only after [`enable_fprobe`].
    pub fn disabled(self) -> Self {
        self.disabled.store(true, Ordering::Relaxed);
        self
    }

    /// Its `entry_data_size`.
    pub fn data_size(&self) -> usize {
        self.entry_data_size
    }

    /// Hits that ran no handler: no free instance, a full return stack, or
    /// a hit inside another fprobe handler on the same CPU.
    pub fn nmissed(&self) -> u64 {
        self.nmissed.load(Ordering::Relaxed)
    }

    /// Instances free for new calls.
    pub fn nfree(&self) -> usize {
        self.pool.lock().len()
    }

    /// The entries of the functions it probes (Linux's ftrace sites' functions).
    pub fn functions(&self) -> Vec<usize> {
        let sites = ftrace::sites();
        self.sites
            .lock()
            .iter()
            .filter_map(|&s| sites.get(s as usize).map(|d| d.func))
            .collect()
    }
}

/// Whether `fp` is registered (Linux's `fprobe_is_registered`).
pub fn fprobe_is_registered(fp: &Fprobe) -> bool {
    fp.registered.load(Ordering::Acquire)
}

/// Whether `fp`'s handlers are off (Linux's `fprobe_disabled`).
pub fn fprobe_disabled(fp: &Fprobe) -> bool {
    fp.disabled.load(Ordering::Acquire)
}

/// Turns `fp`'s handlers on (Linux's `enable_fprobe`).
pub fn enable_fprobe(fp: &Fprobe) {
    fp.disabled.store(false, Ordering::Release);
}

/// Turns them off: hits run nothing and are not counted (Linux's
/// `disable_fprobe`); calls in flight return without their exit handler.
pub fn disable_fprobe(fp: &Fprobe) {
    fp.disabled.store(true, Ordering::Release);
}

/// The ops every fprobe shares; its filter is every probed function.
pub static FPROBE_OPS: FtraceOps = FtraceOps::new("fprobe_ops", fprobe_handler)
    .with_own_recursion()
    .with_save_regs();

/// The fprobes of each probed function, by site. Written only inside
/// `stop_machine`, when no CPU is in [`fprobe_handler`] (it runs with
/// interrupts masked), so its readers never find it locked.
static TABLE: spin::RwLock<BTreeMap<u32, Vec<Arc<Fprobe>>>> = spin::RwLock::new(BTreeMap::new());

/// Serialises registrations (held across the table and ops updates).
static REG_LOCK: spin::Mutex<()> = spin::Mutex::new(());

/// Per-CPU "inside an fprobe handler" bit (Linux's ftrace recursion lock
/// around fprobe handlers): a hit inside a handler is missed.
static RUNNING: PerCpu<AtomicBool> = PerCpu::new([const { AtomicBool::new(false) }; NR_CPUS]);

/// The ops' callback (Linux's `fprobe_handler`): runs each fprobe of the
/// function in registration order. Interrupts are masked.
fn fprobe_handler(_ops: &FtraceOps, ip: usize, parent_ip: usize, regs: &mut FtraceRegs) {
    let Some(site) = ftrace::site_index(ip - FTRACE_BL_OFFSET) else {
        return;
    };
    let Some(table) = TABLE.try_read() else {
        return;
    };
    let Some(list) = table.get(&site) else {
        return;
    };
    let running = RUNNING.this();
    if running.load(Ordering::Relaxed) {
        for fp in list.iter().filter(|fp| !fprobe_disabled(fp)) {
            fp.nmissed.fetch_add(1, Ordering::Relaxed);
        }
        return;
    }
    running.store(true, Ordering::Relaxed);
    for fp in list {
        fprobe_entry(fp, ip, parent_ip, regs);
    }
    running.store(false, Ordering::Relaxed);
}

/// One fprobe's entry (Linux's `__fprobe_handler`).
fn fprobe_entry(fp: &Arc<Fprobe>, ip: usize, parent_ip: usize, regs: &mut FtraceRegs) {
    if fprobe_disabled(fp) {
        return;
    }
    let mut inst = None;
    if fp.exit_handler.is_some() {
        // Only this task pushes on its stack, and not before this returns:
        // the room checked here is still there at the push.
        let task = crate::sched::try_current().filter(|t| !t.ret_stack.is_full());
        let Some(mut ri) = task.and_then(|_| fp.pool.lock().pop()) else {
            fp.nmissed.fetch_add(1, Ordering::Relaxed);
            return;
        };
        ri.entry_ip = ip;
        ri.entry_parent_ip = parent_ip;
        inst = Some(ri);
    }
    let ret = match &fp.entry_handler {
        Some(h) => {
            let data: &mut [u8] = match inst.as_mut() {
                Some(ri) => &mut ri.data,
                None => &mut [],
            };
            h(fp, ip, parent_ip, regs, data)
        }
        None => 0,
    };
    let Some(ri) = inst else { return };
    if ret != 0 {
        recycle(ri);
        return;
    }
    let Some(task) = crate::sched::try_current() else {
        recycle(ri);
        return;
    };
    let frame = RetFrame {
        ret: regs.lr as usize,
        sp: regs.sp as usize,
        func: ip,
        calltime: 0,
        owner: RethookOwner::Fprobe(ri),
    };
    if let Err(frame) = task.ret_stack.push(frame) {
        if let RethookOwner::Fprobe(ri) = frame.owner {
            recycle(ri);
        }
        fp.nmissed.fetch_add(1, Ordering::Relaxed);
        return;
    }
    regs.lr = arch::ftrace::return_to_handler_addr() as u64;
}

/// A hooked call returned to `ret_ip` (Linux's `fprobe_exit_handler`),
/// from `ftrace_return_to_handler` with interrupts masked: runs the exit
/// handler unless the fprobe is gone, unregistered or disabled, and gives
/// the instance back.
pub(super) fn fprobe_exit_handler(mut ri: Box<FprobeInstance>, ret_ip: usize, regs: &mut FtraceRetRegs) {
    if let Some(fp) = ri.fp.upgrade() {
        if fprobe_is_registered(&fp) && !fprobe_disabled(&fp) {
            if let Some(h) = &fp.exit_handler {
                let running = RUNNING.this();
                if running.load(Ordering::Relaxed) {
                    fp.nmissed.fetch_add(1, Ordering::Relaxed);
                } else {
                    running.store(true, Ordering::Relaxed);
                    let entry_ip = ri.entry_ip;
                    h(&fp, entry_ip, ret_ip, regs, &mut ri.data);
                    running.store(false, Ordering::Relaxed);
                }
            }
        }
    }
    recycle(ri);
}

/// Gives `ri` back to its fprobe's pool (never allocating: the pool has
/// room for every instance it made); frees it if the fprobe is gone.
pub(super) fn recycle(ri: Box<FprobeInstance>) {
    if let Some(fp) = ri.fp.upgrade() {
        fp.pool.lock().push(ri);
    }
}

/// Registers `fp` on the functions `filter` matches, minus those
/// `notfilter` matches (globs as `set_ftrace_filter` takes them, several
/// separated by spaces). `EINVAL` if a glob matches nothing, if the
/// result is empty or `fp` is registered; `EBUSY`/`ENOSPC` from ftrace.
pub fn register_fprobe(fp: &Arc<Fprobe>, filter: &str, notfilter: Option<&str>) -> Result<(), Errno> {
    let mut set = BTreeSet::new();
    let mut words = filter.split_ascii_whitespace().peekable();
    if words.peek().is_none() {
        return Err(Errno::EINVAL);
    }
    for w in words {
        ftrace::apply_filter_word(&mut set, w).map_err(|_| Errno::EINVAL)?;
    }
    if let Some(nf) = notfilter {
        let mut not = BTreeSet::new();
        for w in nf.split_ascii_whitespace() {
            ftrace::apply_filter_word(&mut not, w).map_err(|_| Errno::EINVAL)?;
        }
        set.retain(|s| !not.contains(s));
    }
    register_sites(fp, set)
}

/// Registers `fp` on the functions at `addrs` (each a function's entry or
/// its ftrace site). `EINVAL` for an empty list or an address that is no
/// ftrace site (Linux's `ftrace_set_filter_ips`).
pub fn register_fprobe_ips(fp: &Arc<Fprobe>, addrs: &[usize]) -> Result<(), Errno> {
    if addrs.is_empty() {
        return Err(Errno::EINVAL);
    }
    let mut set = BTreeSet::new();
    for &a in addrs {
        let bl = ftrace::ftrace_location(a).ok_or(Errno::EINVAL)?;
        set.insert(ftrace::site_index(bl - FTRACE_BL_OFFSET).ok_or(Errno::EINVAL)?);
    }
    register_sites(fp, set)
}

/// Registers `fp` on the functions named `syms`. `EINVAL` for an empty
/// list, `ENOENT` for a name that is no traceable function (Linux's
/// `ftrace_lookup_symbols`).
pub fn register_fprobe_syms(fp: &Arc<Fprobe>, syms: &[&str]) -> Result<(), Errno> {
    if syms.is_empty() {
        return Err(Errno::EINVAL);
    }
    let mut set = BTreeSet::new();
    for s in syms {
        let addr = crate::kallsyms::lookup_name(s).ok_or(Errno::ENOENT)?;
        set.insert(ftrace::site_index(addr).ok_or(Errno::ENOENT)?);
    }
    register_sites(fp, set)
}

/// The ops' filter: every function some fprobe probes.
fn ops_hash(table: &BTreeMap<u32, Vec<Arc<Fprobe>>>) -> FtraceHash {
    FtraceHash {
        filter: table.keys().copied().collect(),
        notrace: BTreeSet::new(),
    }
}

/// Publishes `new` as the table, where no hit can be reading it.
fn publish(new: BTreeMap<u32, Vec<Arc<Fprobe>>>) -> BTreeMap<u32, Vec<Arc<Fprobe>>> {
    let mut new = Some(new);
    crate::stop_machine::stop_machine(|| {
        let mut t = TABLE.write();
        core::mem::replace(&mut *t, new.take().unwrap_or_default())
    })
}

/// Brings [`FPROBE_OPS`] in line with the table: its filter, and
/// registered while the table is not empty.
fn update_ops() -> Result<(), Errno> {
    let hash = ops_hash(&TABLE.read());
    if hash.filter.is_empty() {
        if FPROBE_OPS.is_registered() {
            ftrace::unregister_ftrace_function(&FPROBE_OPS)?;
        }
        return FPROBE_OPS.set_hash(FtraceHash::default());
    }
    FPROBE_OPS.set_hash(hash)?;
    if !FPROBE_OPS.is_registered() {
        ftrace::register_ftrace_function(&FPROBE_OPS)?;
    }
    Ok(())
}

/// Makes the instances `fp` needs for `nsites` functions (Linux's
/// `fprobe_init_rethook`); those of an earlier registration may still be in
/// flight and are counted, not remade.
fn init_instances(fp: &Arc<Fprobe>, nsites: usize) {
    if fp.exit_handler.is_none() {
        return;
    }
    let n = if fp.nr_maxactive != 0 {
        fp.nr_maxactive
    } else {
        nsites
            .saturating_mul(2 * crate::smp::num_online_cpus())
            .min(FPROBE_MAXACTIVE_MAX)
    };
    let made = fp.made.load(Ordering::Acquire);
    let mut pool = fp.pool.lock();
    let len = pool.len();
    pool.reserve(n.max(made).saturating_sub(len));
    for _ in made..n {
        pool.push(Box::new(FprobeInstance {
            entry_ip: 0,
            entry_parent_ip: 0,
            data: vec![0; fp.entry_data_size],
            fp: Arc::downgrade(fp),
        }));
    }
    fp.made.store(made.max(n), Ordering::Release);
}

fn register_sites(fp: &Arc<Fprobe>, set: BTreeSet<u32>) -> Result<(), Errno> {
    if set.is_empty() {
        return Err(Errno::EINVAL);
    }
    let _g = REG_LOCK.lock();
    if fp.registered.load(Ordering::Acquire) {
        return Err(Errno::EINVAL);
    }
    init_instances(fp, set.len());
    let mut table = TABLE.read().clone();
    for &s in &set {
        table.entry(s).or_default().push(fp.clone());
    }
    *fp.sites.lock() = set.iter().copied().collect();
    fp.registered.store(true, Ordering::Release);
    publish(table);
    if let Err(e) = update_ops() {
        fp.registered.store(false, Ordering::Release);
        remove_from_table(fp);
        let _ = update_ops();
        return Err(e);
    }
    Ok(())
}

/// Takes `fp` out of the table; once this returns no CPU runs its entry
/// handler.
fn remove_from_table(fp: &Arc<Fprobe>) {
    let mut table = TABLE.read().clone();
    for s in fp.sites.lock().drain(..) {
        if let Some(list) = table.get_mut(&s) {
            list.retain(|f| !Arc::ptr_eq(f, fp));
            if list.is_empty() {
                table.remove(&s);
            }
        }
    }
    drop(publish(table));
}

/// Unregisters `fp` (Linux's `unregister_fprobe`): `EINVAL` if it is not
/// registered. Calls in flight return to their callers without its exit
/// handler; their instances come back to its pool.
pub fn unregister_fprobe(fp: &Arc<Fprobe>) -> Result<(), Errno> {
    let _g = REG_LOCK.lock();
    if !fp.registered.swap(false, Ordering::AcqRel) {
        return Err(Errno::EINVAL);
    }
    remove_from_table(fp);
    update_ops()
}
