//! Cache maintenance by virtual address.

use crate::barrier;
use tock_registers::interfaces::Readable;
use tock_registers::register_bitfields;
use tock_registers::registers::InMemoryRegister;

register_bitfields! {u64,
    /// Cache Type Register (not described by aarch64-cpu).
    CTR_EL0 [
        /// log2 of the smallest data cache line, in words.
        DminLine OFFSET(16) NUMBITS(4) [],
        /// log2 of the smallest instruction cache line, in words.
        IminLine OFFSET(0) NUMBITS(4) []
    ]
}

fn ctr_el0() -> InMemoryRegister<u64, CTR_EL0::Register> {
    let v: u64;
    // SAFETY: reads an ID register.
    unsafe { core::arch::asm!("mrs {}, ctr_el0", out(reg) v, options(nomem, nostack)) };
    InMemoryRegister::new(v)
}

fn dcache_line() -> usize {
    4 << ctr_el0().read(CTR_EL0::DminLine)
}

fn icache_line() -> usize {
    4 << ctr_el0().read(CTR_EL0::IminLine)
}

macro_rules! by_line {
    ($start:expr, $len:expr, $line:expr, $insn:literal) => {{
        let line = $line;
        let mut a = $start & !(line - 1);
        while a < $start + $len {
            // SAFETY: cache maintenance on a mapped address has no effect
            // on memory contents visible to the program.
            unsafe { core::arch::asm!(concat!($insn, ", {}"), in(reg) a, options(nostack)) };
            a += line;
        }
    }};
}

/// Cleans `[va, va + len)` to the point of coherency, so that an observer
/// with caches off (a CPU being brought up) sees it.
pub fn dcache_clean_poc(va: usize, len: usize) {
    by_line!(va, len, dcache_line(), "dc cvac");
    barrier::dsb_sy();
}

/// Makes new instructions at `[va, va + len)` visible to instruction fetch on
/// every CPU: clean to PoU, invalidate the I-cache (ARM ARM B2.4.4).
pub fn sync_icache_range(va: usize, len: usize) {
    by_line!(va, len, dcache_line(), "dc cvau");
    barrier::dsb_ish();
    by_line!(va, len, icache_line(), "ic ivau");
    barrier::dsb_ish();
    barrier::isb();
}
