//! Symmetric multiprocessing: bringing the other CPUs online (PSCI CPU_ON
//! or spin-table release, as the device tree says), inter-processor
//! interrupts, and cross-calls (run a function on other CPUs and wait).

crate::notrace_module!();

use crate::percpu::{PerCpu, NR_CPUS};
use crate::sync::IrqSpinLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use arch::psci::Conduit;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use devicetree::{Cpu, EnableMethod};

/// SGI numbers, as Linux's `enum ipi_msg_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Ipi {
    /// Reschedule.
    Reschedule = 0,
    /// Run queued cross-call functions.
    CallFunc = 1,
    /// Stop: the system is going down.
    CpuStop = 2,
}

static ONLINE: [AtomicBool; NR_CPUS] = [const { AtomicBool::new(false) }; NR_CPUS];
static MPIDR: [AtomicU64; NR_CPUS] = [const { AtomicU64::new(0) }; NR_CPUS];
/// How SGIs reach each CPU.
static SGI_TARGET: [IrqSpinLock<arch::gic::SgiTarget>; NR_CPUS] =
    [const { IrqSpinLock::new(arch::gic::SgiTarget { mask: 0, mpidr: 0 }) }; NR_CPUS];
static NR_ONLINE: AtomicUsize = AtomicUsize::new(0);
/// Stack of each secondary CPU: (lowest address, top).
static STACKS: [AtomicU64; NR_CPUS] = [const { AtomicU64::new(0) }; NR_CPUS];

/// Size of a secondary CPU's boot/idle stack.
pub const CPU_STACK_SIZE: usize = 64 * 1024;

/// Whether `cpu` is online.
pub fn cpu_online(cpu: usize) -> bool {
    cpu < NR_CPUS && ONLINE[cpu].load(Ordering::Acquire)
}

/// How many CPUs are online.
pub fn num_online_cpus() -> usize {
    NR_ONLINE.load(Ordering::Acquire)
}

/// Online CPUs, by number.
pub fn online_cpus() -> impl Iterator<Item = usize> {
    (0..NR_CPUS).filter(|&c| cpu_online(c))
}

/// MPIDR affinity of `cpu`.
pub fn cpu_mpidr(cpu: usize) -> u64 {
    MPIDR[cpu].load(Ordering::Relaxed)
}

/// The stack bounds of the CPU running this, for the unwinder.
pub fn current_stack_bounds() -> (usize, usize) {
    let cpu = arch::cpu::cpu_id();
    if cpu == 0 {
        arch::boot::init_stack_bounds()
    } else {
        let top = STACKS[cpu].load(Ordering::Relaxed) as usize;
        (top - CPU_STACK_SIZE, top)
    }
}

fn mark_online(cpu: usize) {
    MPIDR[cpu].store(arch::cpu::mpidr(), Ordering::Relaxed);
    *SGI_TARGET[cpu].lock() = arch::gic::this_cpu_target();
    ONLINE[cpu].store(true, Ordering::Release);
    NR_ONLINE.fetch_add(1, Ordering::AcqRel);
}

/// Registers the boot CPU and the IPI handlers.
pub fn init_boot_cpu() -> Result<(), crate::errno::Errno> {
    arch::cpu::set_cpu_id(0);
    mark_online(0);
    crate::irq::request_irq(Ipi::CallFunc as u32, ipi_call_func, "IPI function call")?;
    crate::irq::request_irq(Ipi::CpuStop as u32, ipi_cpu_stop, "IPI CPU stop")?;
    crate::irq::request_irq(Ipi::Reschedule as u32, |_| {}, "IPI rescheduling")?;
    Ok(())
}

/// Why a secondary CPU did not come up.
#[derive(Debug)]
pub enum BootError {
    /// The device tree gives no way to start it.
    NoEnableMethod,
    /// PSCI CPU_ON failed with this code.
    Psci(i64),
    /// No memory for its stack.
    NoMemory,
    /// It did not report in within a second.
    Timeout,
    /// Spin-table release address outside RAM.
    BadReleaseAddr(u64),
}

/// Brings every CPU in `cpus` other than the boot CPU online, one at a time.
pub fn smp_init(cpus: &[Cpu], psci: Option<Conduit>) {
    let boot_mpidr = arch::cpu::mpidr();
    let mut next = 1;
    for cpu in cpus.iter().filter(|c| c.mpidr != boot_mpidr) {
        if next >= NR_CPUS {
            crate::pr_warn!("smp: more than {NR_CPUS} CPUs; ignoring the rest");
            break;
        }
        match boot_secondary(next, cpu, psci) {
            Ok(()) => next += 1,
            Err(e) => crate::pr_err!("CPU{next}: failed to come online: {e:?}"),
        }
    }
}

fn boot_secondary(id: usize, cpu: &Cpu, psci: Option<Conduit>) -> Result<(), BootError> {
    let top = crate::sched::task::alloc_cpu_stack(CPU_STACK_SIZE).ok_or(BootError::NoMemory)? as u64;
    STACKS[id].store(top, Ordering::Relaxed);
    let data = &arch::boot::secondary_data;
    data.ttbr1.store(arch::mmu::kernel_root().as_u64(), Ordering::Relaxed);
    data.stack_top.store(top, Ordering::Relaxed);
    data.cpu.store(id as u64, Ordering::Relaxed);
    // The new CPU reads this with its caches off.
    arch::cache::dcache_clean_poc(data as *const _ as usize, core::mem::size_of_val(data));
    let entry = arch::mmu::kimage_to_phys(secondary_entry_addr()).as_u64();
    match cpu.enable_method {
        EnableMethod::Psci => {
            let conduit = psci.ok_or(BootError::NoEnableMethod)?;
            arch::psci::cpu_on(conduit, cpu.mpidr, entry, id as u64).map_err(|e| BootError::Psci(e.0))?;
        }
        EnableMethod::SpinTable { release_addr } => {
            release_spin_table(release_addr, entry)?;
        }
        EnableMethod::Unknown => return Err(BootError::NoEnableMethod),
    }
    let deadline = crate::time::ktime_get_ns() + 1_000_000_000;
    while !cpu_online(id) {
        if crate::time::ktime_get_ns() > deadline {
            // The stack stays allocated: a CPU that comes up late must
            // not run on freed memory.
            return Err(BootError::Timeout);
        }
        core::hint::spin_loop();
    }
    Ok(())
}

fn secondary_entry_addr() -> arch::addr::VirtAddr {
    extern "C" {
        fn secondary_entry();
    }
    arch::addr::VirtAddr::of(secondary_entry as *const ()).expect("the image is in the kernel's half")
}

/// Writes the entry point to the CPU's release address and wakes it, as
/// the spin-table binding describes (the waiting CPU reads with caches off).
fn release_spin_table(release_addr: u64, entry: u64) -> Result<(), BootError> {
    let bad = || BootError::BadReleaseAddr(release_addr);
    let pa = arch::addr::PhysAddr::new(release_addr).ok_or_else(bad)?;
    arch::mmu::write_phys_u64(pa, entry).map_err(|_| bad())?;
    arch::cache::dcache_clean_poc(pa.to_linear().as_usize(), 8);
    arch::cpu::sev();
    Ok(())
}

/// First Rust code of a secondary CPU.
#[allow(unsafe_code)] // exported for the entry code
#[no_mangle]
pub extern "C" fn secondary_start_kernel(cpu: u64) -> ! {
    arch::cpu::set_cpu_id(cpu as usize);
    arch::mmu::secondary_drop_idmap();
    arch::cpu::enable_pan();
    arch::gic::init_cpu();
    arch::debug_monitors::debug_monitors_init_cpu();
    crate::time::init_secondary();
    crate::pr_info!(
        "CPU{}: Booted secondary processor 0x{:010x} [0x{:08x}]",
        cpu,
        arch::cpu::mpidr(),
        arch::cpu::midr()
    );
    crate::sched::init_cpu();
    mark_online(cpu as usize);
    arch::cpu::local_irq_enable();
    crate::sched::cpu_idle()
}

// ---------------------------------------------------------------- cross-calls

struct CallData {
    func: Arc<dyn Fn() + Send + Sync>,
    pending: Arc<AtomicUsize>,
}

static CALL_QUEUE: PerCpu<IrqSpinLock<VecDeque<CallData>>> =
    PerCpu::new([const { IrqSpinLock::new(VecDeque::new()) }; NR_CPUS]);

/// Sends `ipi` to every CPU in `cpus`.
pub fn send_ipi(ipi: Ipi, cpus: impl Iterator<Item = usize>) {
    let cpus: alloc::vec::Vec<usize> = cpus.collect();
    crate::trace::tracepoint::irq::trace_ipi_raise(&cpus, ipi as u32);
    let targets: alloc::vec::Vec<arch::gic::SgiTarget> = cpus.iter().map(|&c| *SGI_TARGET[c].lock()).collect();
    if !targets.is_empty() {
        arch::gic::send_sgi(ipi as u32, &targets);
    }
}

/// Runs this CPU's queued cross-call functions.
fn flush_call_queue() {
    loop {
        let next = CALL_QUEUE.this().lock().pop_front();
        let Some(call) = next else { break };
        (call.func)();
        call.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs cross-calls queued for this CPU (for CPUs spinning with
/// interrupts masked while they wait on other CPUs).
pub fn flush_pending_calls() {
    flush_call_queue();
}

fn ipi_call_func(_irq: u32) {
    flush_call_queue();
}

/// Runs `func` on every online CPU in `cpus` other than this one; with
/// `wait`, returns when all have finished. While waiting, this CPU keeps
/// serving cross-calls aimed at it, so two CPUs calling each other cannot
/// deadlock.
pub fn smp_call_function_many(cpus: impl Iterator<Item = usize>, func: Arc<dyn Fn() + Send + Sync>, wait: bool) {
    let me = arch::cpu::cpu_id();
    let pending = Arc::new(AtomicUsize::new(0));
    let mut targets = alloc::vec::Vec::new();
    let mut cpu_list = alloc::vec::Vec::new();
    for cpu in cpus.filter(|&c| c != me && cpu_online(c)) {
        cpu_list.push(cpu);
        pending.fetch_add(1, Ordering::AcqRel);
        CALL_QUEUE.on(cpu).lock().push_back(CallData {
            func: func.clone(),
            pending: pending.clone(),
        });
        targets.push(*SGI_TARGET[cpu].lock());
    }
    if !targets.is_empty() {
        crate::trace::tracepoint::irq::trace_ipi_raise(&cpu_list, Ipi::CallFunc as u32);
        arch::gic::send_sgi(Ipi::CallFunc as u32, &targets);
    }
    if wait {
        while pending.load(Ordering::Acquire) != 0 {
            flush_call_queue();
            core::hint::spin_loop();
        }
    }
}

/// Runs `func` on `cpu` (directly if it is this CPU, with interrupts off).
pub fn smp_call_function_single(cpu: usize, func: impl Fn() + Send + Sync + 'static, wait: bool) {
    if cpu == arch::cpu::cpu_id() {
        let flags = arch::cpu::local_irq_save();
        func();
        arch::cpu::local_irq_restore(flags);
    } else {
        smp_call_function_many(core::iter::once(cpu), Arc::new(func), wait);
    }
}

/// Runs `func` on every online CPU, this one included, and waits.
pub fn on_each_cpu(func: impl Fn() + Send + Sync + 'static) {
    let func: Arc<dyn Fn() + Send + Sync> = Arc::new(func);
    smp_call_function_many(online_cpus(), func.clone(), true);
    let flags = arch::cpu::local_irq_save();
    func();
    arch::cpu::local_irq_restore(flags);
}

fn ipi_cpu_stop(_irq: u32) {
    ONLINE[arch::cpu::cpu_id()].store(false, Ordering::Release);
    arch::cpu::halt();
}

/// Stops every other CPU (panic and poweroff paths). Does not wait long:
/// a CPU spinning with interrupts masked cannot be stopped this way.
pub fn smp_send_stop() {
    let me = arch::cpu::cpu_id();
    let others: alloc::vec::Vec<usize> = online_cpus().filter(|&c| c != me).collect();
    if others.is_empty() {
        return;
    }
    send_ipi(Ipi::CpuStop, others.iter().copied());
    let deadline = crate::time::ktime_get_ns() + 100_000_000;
    while others.iter().any(|&c| cpu_online(c)) && crate::time::ktime_get_ns() < deadline {
        core::hint::spin_loop();
    }
}

#[cfg(feature = "ktest")]
mod tests {
    use super::*;
    use ktest_macros::kernel_test;

    #[kernel_test]
    fn cross_call_runs_on_every_cpu() {
        static HITS: PerCpu<AtomicUsize> = PerCpu::new([const { AtomicUsize::new(0) }; NR_CPUS]);
        let before: alloc::vec::Vec<usize> = (0..NR_CPUS).map(|c| HITS.on(c).load(Ordering::Relaxed)).collect();
        for _ in 0..10 {
            on_each_cpu(|| {
                HITS.this().fetch_add(1, Ordering::Relaxed);
            });
        }
        for (c, &was) in before.iter().enumerate() {
            let want = if cpu_online(c) { was + 10 } else { was };
            assert_eq!(HITS.on(c).load(Ordering::Relaxed), want, "CPU{c}");
        }
    }

    #[kernel_test]
    fn cross_call_single_runs_on_the_target() {
        for cpu in online_cpus() {
            let seen = Arc::new(AtomicUsize::new(usize::MAX));
            let s = seen.clone();
            smp_call_function_single(cpu, move || s.store(arch::cpu::cpu_id(), Ordering::SeqCst), true);
            assert_eq!(seen.load(Ordering::SeqCst), cpu);
        }
    }

    #[kernel_test]
    fn all_described_cpus_are_online() {
        let want = crate::init::platform_cpu_count().min(NR_CPUS);
        assert_eq!(num_online_cpus(), want);
    }
}
