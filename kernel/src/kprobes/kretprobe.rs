//! kretprobes: at function entry, the return address in x30 is replaced
//! by `return_to_handler`, the return hook function_graph and fprobe exit
//! handlers use too (Linux's `rethook`); when the function returns there,
//! the handler runs with the return value in `regs` and execution resumes
//! at the real return address: no `BRK`, no exception on the way back.
//! Instances are pre-allocated (`maxactive`) per
//! kretprobe; an instance in use rides in a frame of its task's return
//! stack (`crate::trace::rethook`, shared with function_graph), so
//! recursion, sleeping and migration between CPUs work, and a task that
//! dies with calls in flight gives them back to their pools (Linux's
//! `kprobe_flush_task`). The hit path moves boxes between the pool and the
//! stack and never allocates.

use super::{register_kprobe, unregister_kprobe, Kprobe};
use crate::errno::Errno;
use crate::sync::IrqSpinLock;
use crate::trace::rethook::{RetFrame, RethookOwner};
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use arch::ftrace::FtraceRetRegs;
use arch::ptrace::PtRegs;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// One in-flight call of a kretprobed function: made when the kretprobe
/// is registered, kept in its pool, and moved onto the task's return stack
/// (`crate::trace::rethook`) for the call.
pub struct KretprobeInstance {
    /// Where the function really returns.
    pub ret_addr: u64,
    /// Stack pointer at entry (identifies the frame).
    pub sp: u64,
    /// `data_size` bytes of private data for the handlers.
    pub data: Vec<u8>,
}

/// An instance with the pool it returns to (a reference held for its
/// life, so that a hit never upgrades a weak one): what rides in a frame of
/// the task's return stack.
pub struct PooledInstance {
    ri: KretprobeInstance,
    pool: Arc<Pool>,
}

/// What the hits of a kretprobe need, shared by its entry probe's handler
/// and its instances: the handlers and the free instances. Each instance
/// holds a reference, so a hit never upgrades a weak reference; the cycle
/// through the free list is broken when the kretprobe is dropped (`dead`).
struct Pool {
    handler: Option<RetHandler>,
    entry_handler: Option<RetHandler>,
    /// Instances not in flight; its capacity holds all `made`. Boxed: an
    /// instance moves between this pool and a task's list without copying
    /// or allocating.
    #[allow(clippy::vec_box)]
    free: IrqSpinLock<Vec<Box<PooledInstance>>>,
    /// Instances created for this kretprobe so far.
    made: AtomicUsize,
    nmissed: AtomicU64,
    /// The kretprobe is registered: return handlers run.
    registered: AtomicBool,
    /// The kretprobe is gone: instances coming back are freed.
    dead: AtomicBool,
}

/// Returns `ri` to its kretprobe's pool, which has room for every instance
/// it made, so that this never allocates; an instance whose kretprobe is
/// gone is freed (with no lock held).
pub(crate) fn recycle(ri: Box<PooledInstance>) {
    let pool = ri.pool.clone();
    give_back(&pool, ri);
}

/// [`recycle`] with the pool at hand (it is `ri`'s).
fn give_back(pool: &Pool, ri: Box<PooledInstance>) {
    let mut free = pool.free.lock();
    if pool.dead.load(Ordering::Acquire) {
        drop(free);
        drop(ri);
    } else {
        free.push(ri);
    }
}

/// A return handler or entry handler; an entry handler returning non-zero
/// skips the return probe for that call.
pub type RetHandler = Arc<dyn Fn(&mut KretprobeInstance, &mut PtRegs) -> i32 + Send + Sync>;

/// A return probe, as Linux's `struct kretprobe`.
pub struct Kretprobe {
    kp: spin::Once<Arc<Kprobe>>,
    symbol: Option<alloc::string::String>,
    addr: usize,
    /// Instances available at once (0: Linux's default).
    pub maxactive: usize,
    /// Private bytes per instance.
    pub data_size: usize,
    /// Its handlers and instances.
    pool: Arc<Pool>,
    /// Register the entry probe disabled (see [`Kprobe::disabled`]).
    start_disabled: bool,
}

impl Drop for Kretprobe {
    fn drop(&mut self) {
        // Frees the instances in the pool (each holds the pool); those in
        // flight are freed when their calls return or their task dies.
        self.pool.dead.store(true, Ordering::Release);
        let free = core::mem::take(&mut *self.pool.free.lock());
        drop(free);
    }
}

impl Kretprobe {
    /// A return probe on the function `name`.
    pub fn symbol(name: &str) -> Kretprobe {
        Kretprobe::new(Some(alloc::string::String::from(name)), 0)
    }

    /// A return probe on the function at `addr`.
    pub fn at(addr: usize) -> Kretprobe {
        Kretprobe::new(None, addr)
    }

    fn new(symbol: Option<alloc::string::String>, addr: usize) -> Kretprobe {
        Kretprobe {
            kp: spin::Once::new(),
            symbol,
            addr,
            maxactive: 0,
            data_size: 0,
            pool: Arc::new(Pool {
                handler: None,
                entry_handler: None,
                free: IrqSpinLock::new(Vec::new()),
                made: AtomicUsize::new(0),
                nmissed: AtomicU64::new(0),
                registered: AtomicBool::new(false),
                dead: AtomicBool::new(false),
            }),
            start_disabled: false,
        }
    }

    /// Sets the return handler.
    pub fn handler(mut self, f: impl Fn(&mut KretprobeInstance, &mut PtRegs) -> i32 + Send + Sync + 'static) -> Self {
        self.pool_mut().handler = Some(Arc::new(f));
        self
    }

    /// Sets the entry handler.
    pub fn entry_handler(
        mut self,
        f: impl Fn(&mut KretprobeInstance, &mut PtRegs) -> i32 + Send + Sync + 'static,
    ) -> Self {
        self.pool_mut().entry_handler = Some(Arc::new(f));
        self
    }

    /// The pool while the kretprobe is being built: no instance and no
    /// probe shares it yet (they are made at registration).
    fn pool_mut(&mut self) -> &mut Pool {
        Arc::get_mut(&mut self.pool).expect("a kretprobe's handlers are set before it is registered")
    }

    /// Sets `maxactive`.
    pub fn maxactive(mut self, n: usize) -> Self {
        self.maxactive = n;
        self
    }

    /// Sets `data_size`.
    pub fn data_size(mut self, n: usize) -> Self {
        self.data_size = n;
        self
    }

    /// Registers its entry probe disabled: it is armed only by
    /// `enable_kprobe` of [`Kretprobe::kprobe`].
    pub fn disabled(mut self) -> Self {
        self.start_disabled = true;
        self
    }

    /// Calls missed because no instance was free.
    pub fn nmissed(&self) -> u64 {
        self.pool.nmissed.load(Ordering::Relaxed)
    }

    /// Instances free for new calls.
    pub fn nfree(&self) -> usize {
        self.pool.free.lock().len()
    }

    /// The entry probe (after registration).
    pub fn kprobe(&self) -> Option<&Arc<Kprobe>> {
        self.kp.get()
    }
}

/// Linux's default `maxactive`: max(10, 2 * possible CPUs).
fn default_maxactive() -> usize {
    (2 * crate::smp::num_online_cpus()).max(10)
}

/// Registers `rp`: a kprobe at the function's entry that hijacks x30.
pub fn register_kretprobe(rp: &Arc<Kretprobe>) -> Result<(), Errno> {
    let pool = &rp.pool;
    if pool.registered.swap(true, Ordering::AcqRel) {
        return Err(Errno::EINVAL);
    }
    let n = if rp.maxactive == 0 {
        default_maxactive()
    } else {
        rp.maxactive
    };
    // Instances of an earlier registration may still be in flight and come
    // back later: only the missing ones are made, and the pool reserves
    // room for all, so that returning one never allocates.
    {
        let made = pool.made.load(Ordering::Acquire);
        let mut free = pool.free.lock();
        let len = free.len();
        free.reserve(n.max(made).saturating_sub(len));
        for _ in made..n {
            free.push(Box::new(PooledInstance {
                ri: KretprobeInstance {
                    ret_addr: 0,
                    sp: 0,
                    data: vec![0; rp.data_size],
                },
                pool: pool.clone(),
            }));
        }
        pool.made.store(made.max(n), Ordering::Release);
    }
    let hit_pool = pool.clone();
    let mut kp = match &rp.symbol {
        Some(s) => Kprobe::symbol(s, 0),
        None => Kprobe::at(rp.addr),
    }
    .pre(move |_kp, regs| {
        pre_handler_kretprobe(&hit_pool, regs);
        0
    });
    kp.is_return = true;
    if rp.start_disabled {
        kp = kp.disabled();
    }
    let kp = Arc::new(kp);
    // Return probes go on the first instruction only, where x30 still
    // holds the return address.
    if let Some(sym) = crate::kallsyms::lookup_addr(match &rp.symbol {
        Some(s) => crate::kallsyms::lookup_unique_name(s)
            .map(|s| s.addr as usize)
            .inspect_err(|_| pool.registered.store(false, Ordering::Release))?,
        None => rp.addr,
    }) {
        if sym.offset != 0 {
            pool.registered.store(false, Ordering::Release);
            return Err(Errno::EINVAL);
        }
    }
    if let Err(e) = register_kprobe(&kp) {
        pool.registered.store(false, Ordering::Release);
        return Err(e);
    }
    rp.kp.call_once(|| kp);
    Ok(())
}

/// Unregisters `rp`. Calls still in flight return normally (their
/// handler is no longer run).
pub fn unregister_kretprobe(rp: &Arc<Kretprobe>) {
    if !rp.pool.registered.swap(false, Ordering::AcqRel) {
        return;
    }
    if let Some(kp) = rp.kp.get() {
        unregister_kprobe(kp);
    }
}

fn pre_handler_kretprobe(rp: &Pool, regs: &mut PtRegs) {
    // Before the scheduler starts there is no task to hold the instance.
    // The task is borrowed, not referenced: it runs this handler.
    let hooked = crate::sched::with_current(|task| pre_handler_task(rp, task, regs));
    if hooked.is_none() {
        rp.nmissed.fetch_add(1, Ordering::Relaxed);
    }
}

fn pre_handler_task(rp: &Pool, task: &crate::sched::Task, regs: &mut PtRegs) {
    // A full return stack (deep recursion) misses the call before the
    // entry handler runs, as an empty pool does.
    if task.ret_stack.is_full() {
        rp.nmissed.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let Some(mut pi) = rp.free.lock().pop() else {
        rp.nmissed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    pi.ri.ret_addr = regs.regs[30];
    pi.ri.sp = regs.sp;
    if let Some(h) = &rp.entry_handler {
        if h(&mut pi.ri, regs) != 0 {
            give_back(rp, pi);
            return;
        }
    }
    let frame = RetFrame {
        ret: pi.ri.ret_addr as usize,
        sp: pi.ri.sp as usize,
        func: regs.pc as usize,
        calltime: 0,
        owner: RethookOwner::Kretprobe(pi),
    };
    // Only this task pushes, and not before this handler returns: the
    // room checked above is still there; a failure would only be counted.
    if let Err(frame) = task.ret_stack.push(frame) {
        if let RethookOwner::Kretprobe(pi) = frame.owner {
            give_back(rp, pi);
        }
        rp.nmissed.fetch_add(1, Ordering::Relaxed);
        return;
    }
    regs.regs[30] = trampoline_addr() as u64;
}

/// Where a kretprobed function returns to: `return_to_handler`.
pub fn trampoline_addr() -> usize {
    arch::ftrace::return_to_handler_addr()
}

/// A kretprobed call of `func` returned (Linux's
/// `kretprobe_rethook_handler`), from `ftrace_return_to_handler` with
/// interrupts masked and the frame already popped: runs the return handler
/// (while the kretprobe is registered) on `pt_regs` whose `pc` and `lr` are
/// the real return address, hands what it changed in x0..x8 back to the
/// caller, and gives the instance back to its pool.
pub(crate) fn kretprobe_rethook_handler(mut pi: Box<PooledInstance>, regs: &mut FtraceRetRegs) {
    let PooledInstance { ri, pool } = &mut *pi;
    if pool.registered.load(Ordering::Acquire) {
        if let Some(h) = &pool.handler {
            let mut pt = super::ftrace::ret_pt_regs(regs, ri.ret_addr as usize);
            // Traced functions the handler calls are not traced, as
            // under a BRK; inside an ftrace callback it runs anyway.
            let mut run = || {
                h(ri, &mut pt);
            };
            if crate::trace::ftrace::ftrace_test_recursion(&mut run).is_none() {
                run();
            }
            super::ftrace::ret_write_back(&pt, regs);
        }
    }
    recycle(pi);
}

/// The real return address of the `n`-th (0 = most recent) kretprobed
/// call in flight in the current task.
pub fn real_return_address(n: usize) -> Option<usize> {
    crate::sched::try_current()?.ret_stack.kretprobe_return_address(n)
}
