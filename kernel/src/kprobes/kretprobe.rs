//! kretprobes: at function entry, the return address in x30 is replaced
//! by `kretprobe_trampoline`; when the function returns there, the
//! handler runs with the return value in `regs` and execution resumes at
//! the real return address. Instances are pre-allocated (`maxactive`) and
//! kept per task, so recursion, sleeping and migration between CPUs work.

use super::{register_kprobe, unregister_kprobe, Kprobe};
use crate::debug::{register_kernel_break_hook, BreakHook, HookResult};
use crate::errno::Errno;
use crate::sync::IrqSpinLock;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use arch::debug_monitors::KRETPROBES_BRK_IMM;
use arch::ptrace::PtRegs;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One in-flight call of a kretprobed function.
pub struct KretprobeInstance {
    /// Where the function really returns.
    pub ret_addr: u64,
    /// Stack pointer at entry (identifies the frame).
    pub sp: u64,
    /// `data_size` bytes of private data for the handlers.
    pub data: Vec<u8>,
}

/// A return handler or entry handler; an entry handler returning non-zero
/// skips the return probe for that call.
pub type RetHandler = Arc<dyn Fn(&mut KretprobeInstance, &mut PtRegs) -> i32 + Send + Sync>;

/// A return probe, as Linux's `struct kretprobe`.
pub struct Kretprobe {
    kp: spin::Once<Arc<Kprobe>>,
    symbol: Option<alloc::string::String>,
    addr: usize,
    /// Runs at return, with the return value in x0.
    pub handler: Option<RetHandler>,
    /// Runs at entry.
    pub entry_handler: Option<RetHandler>,
    /// Instances available at once (0: Linux's default).
    pub maxactive: usize,
    /// Private bytes per instance.
    pub data_size: usize,
    free: IrqSpinLock<Vec<KretprobeInstance>>,
    nmissed: AtomicU64,
    registered: AtomicBool,
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
            handler: None,
            entry_handler: None,
            maxactive: 0,
            data_size: 0,
            free: IrqSpinLock::new(Vec::new()),
            nmissed: AtomicU64::new(0),
            registered: AtomicBool::new(false),
        }
    }

    /// Sets the return handler.
    pub fn handler(mut self, f: impl Fn(&mut KretprobeInstance, &mut PtRegs) -> i32 + Send + Sync + 'static) -> Self {
        self.handler = Some(Arc::new(f));
        self
    }

    /// Sets the entry handler.
    pub fn entry_handler(
        mut self,
        f: impl Fn(&mut KretprobeInstance, &mut PtRegs) -> i32 + Send + Sync + 'static,
    ) -> Self {
        self.entry_handler = Some(Arc::new(f));
        self
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

    /// Calls missed because no instance was free.
    pub fn nmissed(&self) -> u64 {
        self.nmissed.load(Ordering::Relaxed)
    }

    /// The entry probe (after registration).
    pub fn kprobe(&self) -> Option<&Arc<Kprobe>> {
        self.kp.get()
    }
}

/// In-flight instances by task (the task's address as the key), most
/// recent last.
static INSTANCES: IrqSpinLock<BTreeMap<usize, InFlight>> = IrqSpinLock::new(BTreeMap::new());

/// One task's in-flight calls.
type InFlight = Vec<(Arc<Kretprobe>, KretprobeInstance)>;

fn task_key() -> usize {
    crate::sched::try_current().map_or(arch::cpu::cpu_id(), |t| Arc::as_ptr(&t) as usize)
}

/// Linux's default `maxactive`: max(10, 2 * possible CPUs).
fn default_maxactive() -> usize {
    (2 * crate::smp::num_online_cpus()).max(10)
}

/// Registers `rp`: a kprobe at the function's entry that hijacks x30.
pub fn register_kretprobe(rp: &Arc<Kretprobe>) -> Result<(), Errno> {
    if rp.registered.swap(true, Ordering::AcqRel) {
        return Err(Errno::EINVAL);
    }
    let n = if rp.maxactive == 0 {
        default_maxactive()
    } else {
        rp.maxactive
    };
    *rp.free.lock() = (0..n)
        .map(|_| KretprobeInstance {
            ret_addr: 0,
            sp: 0,
            data: vec![0; rp.data_size],
        })
        .collect();
    let weak = Arc::downgrade(rp);
    let mut kp = match &rp.symbol {
        Some(s) => Kprobe::symbol(s, 0),
        None => Kprobe::at(rp.addr),
    }
    .pre(move |_kp, regs| {
        if let Some(rp) = weak.upgrade() {
            pre_handler_kretprobe(&rp, regs);
        }
        0
    });
    kp.is_return = true;
    let kp = Arc::new(kp);
    // Return probes go on the first instruction only, where x30 still
    // holds the return address.
    if let Some(sym) = crate::kallsyms::lookup_addr(match &rp.symbol {
        Some(s) => crate::kallsyms::lookup_name(s)
            .ok_or(Errno::ENOENT)
            .inspect_err(|_| rp.registered.store(false, Ordering::Release))?,
        None => rp.addr,
    }) {
        if sym.offset != 0 {
            rp.registered.store(false, Ordering::Release);
            return Err(Errno::EINVAL);
        }
    }
    if let Err(e) = register_kprobe(&kp) {
        rp.registered.store(false, Ordering::Release);
        return Err(e);
    }
    rp.kp.call_once(|| kp);
    Ok(())
}

/// Unregisters `rp`. Calls still in flight return normally (their
/// handler is no longer run).
pub fn unregister_kretprobe(rp: &Arc<Kretprobe>) {
    if !rp.registered.swap(false, Ordering::AcqRel) {
        return;
    }
    if let Some(kp) = rp.kp.get() {
        unregister_kprobe(kp);
    }
}

fn pre_handler_kretprobe(rp: &Arc<Kretprobe>, regs: &mut PtRegs) {
    let Some(mut ri) = rp.free.lock().pop() else {
        rp.nmissed.fetch_add(1, Ordering::Relaxed);
        return;
    };
    ri.ret_addr = regs.regs[30];
    ri.sp = regs.sp;
    if let Some(h) = &rp.entry_handler {
        if h(&mut ri, regs) != 0 {
            rp.free.lock().push(ri);
            return;
        }
    }
    INSTANCES.lock().entry(task_key()).or_default().push((rp.clone(), ri));
    regs.regs[30] = trampoline_addr() as u64;
}

/// The address of `kretprobe_trampoline`.
pub fn trampoline_addr() -> usize {
    arch::probes::kretprobe_trampoline_addr()
}

/// BRK #KRETPROBES_BRK_IMM: a kretprobed function returned.
fn trampoline_probe_handler(regs: &mut PtRegs, _esr: u64) -> HookResult {
    if regs.pc as usize != trampoline_addr() {
        return HookResult::NotHandled;
    }
    let key = task_key();
    let popped = {
        let mut all = INSTANCES.lock();
        let list = all.get_mut(&key);
        let item = list.and_then(|l| l.pop());
        if all.get(&key).is_some_and(|l| l.is_empty()) {
            all.remove(&key);
        }
        item
    };
    let Some((rp, mut ri)) = popped else {
        crate::pr_err!("kretprobe: no instance for the returning task");
        crate::oops::die("Oops - kretprobe", regs, 0)
    };
    let ret_addr = ri.ret_addr;
    // The function's caller sees its real return address in x30 too.
    regs.regs[30] = ret_addr;
    if rp.registered.load(Ordering::Acquire) {
        if let Some(h) = &rp.handler {
            h(&mut ri, regs);
        }
    }
    regs.pc = ret_addr;
    rp.free.lock().push(ri);
    HookResult::Handled
}

/// For the unwinder: the real return address for the `n`-th (0 = most
/// recent) trampoline return found while walking the current task's stack.
pub fn real_return_address(n: usize) -> Option<usize> {
    let all = INSTANCES.lock();
    let list = all.get(&task_key())?;
    list.iter().rev().nth(n).map(|(_, ri)| ri.ret_addr as usize)
}

/// Installs the trampoline's BRK hook.
pub fn init() {
    register_kernel_break_hook(BreakHook {
        imm: KRETPROBES_BRK_IMM,
        mask: 0,
        func: trampoline_probe_handler,
    });
}
