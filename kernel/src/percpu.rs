//! Per-CPU variables: one slot per possible CPU, indexed by the CPU number
//! held in TPIDR_EL1.

crate::notrace_module!();

/// Most CPUs the kernel supports (GICv2's limit).
pub const NR_CPUS: usize = 8;
const _: () = assert!(NR_CPUS.is_power_of_two());

/// One `T` per CPU. `T` is shared (`Sync`): other CPUs may read a slot,
/// e.g. to sum counters, so slots are atomics or locks.
pub struct PerCpu<T>([T; NR_CPUS]);

impl<T> PerCpu<T> {
    /// Builds the slots from one initial value per CPU.
    pub const fn new(slots: [T; NR_CPUS]) -> Self {
        PerCpu(slots)
    }

    /// This CPU's slot.
    #[inline(always)]
    pub fn this(&self) -> &T {
        // TPIDR_EL1 holds a number below NR_CPUS (set at bring-up); the
        // mask, free with a power of two, spares every per-CPU access on
        // the tracing hot paths a bounds check and its branch.
        &self.0[arch::cpu::cpu_id() % NR_CPUS]
    }

    /// CPU `cpu`'s slot.
    pub fn on(&self, cpu: usize) -> &T {
        &self.0[cpu]
    }

    /// All slots, by CPU number.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter()
    }
}

/// This CPU's number.
pub fn smp_processor_id() -> usize {
    arch::cpu::cpu_id()
}

/// This CPU's number, known to the compiler to be below [`NR_CPUS`], for
/// a hot path that reads it once and indexes several [`PerCpu`]s with it
/// ([`PerCpu::on`] then needs no bounds check): each [`PerCpu::this`] is
/// a read of `TPIDR_EL1` of its own, which the compiler may not merge.
/// Kernel code is not preempted, so the number stays right until the
/// caller blocks.
#[inline(always)]
pub fn this_cpu() -> usize {
    arch::cpu::cpu_id() % NR_CPUS
}
