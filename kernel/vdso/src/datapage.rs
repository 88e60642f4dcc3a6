//! The vDSO data page (`[vvar]`, Linux's `struct vdso_data` in
//! include/vdso/datapage.h, with our own layout): what the kernel's
//! timekeeping publishes so that user space can read the clocks without a
//! system call, behind a sequence counter.
//!
//! This file is compiled twice: into the kernel (which writes the page) as
//! `vdso::datapage`, and into the vDSO image (which reads it), included by
//! path from image/vdso.rs. It holds only `core` code that cannot panic:
//! the vDSO has no panic machinery to call.

use core::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Nanoseconds per second.
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// Linux's clock IDs (uapi/linux/time.h) that the vDSO serves, from
/// `uapi::time` (the vDSO image includes that file by path).
pub use crate::clockid::{
    CLOCK_BOOTTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME,
    CLOCK_REALTIME_COARSE, CLOCK_TAI,
};

/// `clock_mode`: user space cannot read the clock source, every call takes
/// the system call (Linux's `VDSO_CLOCKMODE_NONE`).
pub const VDSO_CLOCKMODE_NONE: u32 = 0;
/// `clock_mode`: the generic timer's virtual counter, `CNTVCT_EL0`
/// (Linux's `VDSO_CLOCKMODE_ARCHTIMER`).
pub const VDSO_CLOCKMODE_ARCHTIMER: u32 = 1;

/// The highest counter frequency for which [`cycles_to_ns`] is exact in
/// 64-bit arithmetic (the remainder times 10^9 must fit).
pub const MAX_FREQ: u64 = u64::MAX / NSEC_PER_SEC;

/// The page as both sides see it. Every field is an atomic so that the
/// kernel may write while user space reads; consistency across fields comes
/// from `seq` (odd while an update is in progress), as Linux's
/// `vdso_write_begin`/`vdso_read_begin` pair.
#[repr(C)]
#[derive(Default)]
pub struct VdsoData {
    seq: AtomicU32,
    clock_mode: AtomicU32,
    cycle_base: AtomicU64,
    freq: AtomicU64,
    offs_real: AtomicU64,
    offs_boot: AtomicU64,
    offs_tai: AtomicU64,
    coarse_mono: AtomicU64,
    hrtimer_res: AtomicU64,
    coarse_res: AtomicU64,
    tz_minuteswest: AtomicI32,
    tz_dsttime: AtomicI32,
}

/// One consistent copy of the page's contents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// [`VDSO_CLOCKMODE_NONE`] or [`VDSO_CLOCKMODE_ARCHTIMER`].
    pub clock_mode: u32,
    /// The counter's value at `CLOCK_MONOTONIC` zero (the kernel's boot).
    pub cycle_base: u64,
    /// The counter's frequency in Hz (`CNTFRQ_EL0`).
    pub freq: u64,
    /// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC`, ns (Linux's `offs_real`).
    pub offs_real: u64,
    /// `CLOCK_BOOTTIME` minus `CLOCK_MONOTONIC`, ns (time spent suspended).
    pub offs_boot: u64,
    /// `CLOCK_TAI` minus `CLOCK_REALTIME`, ns.
    pub offs_tai: u64,
    /// `CLOCK_MONOTONIC` at the last timekeeping tick: what the coarse
    /// clocks read.
    pub coarse_mono: u64,
    /// `clock_getres` of the high-resolution clocks, ns.
    pub hrtimer_res: u64,
    /// `clock_getres` of the coarse clocks, ns (Linux's `LOW_RES_NSEC`).
    pub coarse_res: u64,
    /// `struct timezone`'s `tz_minuteswest`, as last set by `settimeofday`.
    pub tz_minuteswest: i32,
    /// `struct timezone`'s `tz_dsttime`.
    pub tz_dsttime: i32,
}

/// Which time a clock ID reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// `CLOCK_MONOTONIC` (and `CLOCK_MONOTONIC_RAW`, never adjusted here).
    Mono,
    /// `CLOCK_REALTIME`.
    Real,
    /// `CLOCK_BOOTTIME`.
    Boot,
    /// `CLOCK_TAI`.
    Tai,
}

/// A clock the vDSO serves: its base and whether it reads the last tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VdsoClock {
    /// The time it reads.
    pub base: Base,
    /// A `*_COARSE` clock: the time at the last tick, no counter read.
    pub coarse: bool,
}

impl VdsoClock {
    /// The clocks Linux's vDSO serves in user space (`VDSO_HRES`,
    /// `VDSO_COARSE`, `VDSO_RAW`); every other ID, the CPU-time and alarm
    /// clocks, invalid and negative ones, goes to the system call.
    pub fn from_id(clock: i32) -> Option<VdsoClock> {
        let (base, coarse) = match clock {
            CLOCK_REALTIME => (Base::Real, false),
            CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW => (Base::Mono, false),
            CLOCK_REALTIME_COARSE => (Base::Real, true),
            CLOCK_MONOTONIC_COARSE => (Base::Mono, true),
            CLOCK_BOOTTIME => (Base::Boot, false),
            CLOCK_TAI => (Base::Tai, false),
            _ => return None,
        };
        Some(VdsoClock { base, coarse })
    }
}

/// `cycles` counter ticks at `freq` Hz in ns, rounded down: exactly
/// `cycles * 10^9 / freq` computed in 128 bits, modulo 2^64 (which is how
/// the kernel's `ktime_get_ns` computes it), with two 64-bit divisions.
/// None for a frequency of 0 or above [`MAX_FREQ`].
#[inline(always)]
pub fn cycles_to_ns(cycles: u64, freq: u64) -> Option<u64> {
    if freq > MAX_FREQ {
        return None;
    }
    let secs = cycles.checked_div(freq)?;
    let rem = cycles.checked_rem(freq)?;
    // rem < freq <= MAX_FREQ, so rem * 10^9 fits.
    Some(
        secs.wrapping_mul(NSEC_PER_SEC)
            .wrapping_add(rem.wrapping_mul(NSEC_PER_SEC) / freq),
    )
}

impl Snapshot {
    /// `CLOCK_MONOTONIC` for a counter reading, if user space may use the
    /// counter.
    #[inline(always)]
    pub fn mono_ns(&self, counter: u64) -> Option<u64> {
        if self.clock_mode != VDSO_CLOCKMODE_ARCHTIMER {
            return None;
        }
        cycles_to_ns(counter.wrapping_sub(self.cycle_base), self.freq)
    }

    /// The clock's time for a counter reading (ignored by coarse clocks),
    /// or None when the system call must answer.
    #[inline(always)]
    pub fn clock_ns(&self, clock: VdsoClock, counter: u64) -> Option<u64> {
        let mono = if clock.coarse {
            self.coarse_mono
        } else {
            self.mono_ns(counter)?
        };
        Some(match clock.base {
            Base::Mono => mono,
            Base::Real => mono.wrapping_add(self.offs_real),
            Base::Boot => mono.wrapping_add(self.offs_boot),
            Base::Tai => mono.wrapping_add(self.offs_real).wrapping_add(self.offs_tai),
        })
    }

    /// `clock_getres` of a clock the vDSO serves.
    #[inline(always)]
    pub fn res_ns(&self, clock: VdsoClock) -> u64 {
        if clock.coarse {
            self.coarse_res
        } else {
            self.hrtimer_res
        }
    }
}

impl VdsoData {
    /// An all-zero page: clock mode NONE, so every call takes the system
    /// call until the kernel fills it in.
    pub const fn new() -> VdsoData {
        VdsoData {
            seq: AtomicU32::new(0),
            clock_mode: AtomicU32::new(VDSO_CLOCKMODE_NONE),
            cycle_base: AtomicU64::new(0),
            freq: AtomicU64::new(0),
            offs_real: AtomicU64::new(0),
            offs_boot: AtomicU64::new(0),
            offs_tai: AtomicU64::new(0),
            coarse_mono: AtomicU64::new(0),
            hrtimer_res: AtomicU64::new(0),
            coarse_res: AtomicU64::new(0),
            tz_minuteswest: AtomicI32::new(0),
            tz_dsttime: AtomicI32::new(0),
        }
    }

    /// The fields, each read once, with no consistency between them.
    #[inline(always)]
    fn load(&self) -> Snapshot {
        let r = Ordering::Relaxed;
        Snapshot {
            clock_mode: self.clock_mode.load(r),
            cycle_base: self.cycle_base.load(r),
            freq: self.freq.load(r),
            offs_real: self.offs_real.load(r),
            offs_boot: self.offs_boot.load(r),
            offs_tai: self.offs_tai.load(r),
            coarse_mono: self.coarse_mono.load(r),
            hrtimer_res: self.hrtimer_res.load(r),
            coarse_res: self.coarse_res.load(r),
            tz_minuteswest: self.tz_minuteswest.load(r),
            tz_dsttime: self.tz_dsttime.load(r),
        }
    }

    /// A consistent snapshot, and `sample()` taken inside the same read
    /// section (the counter must be read between the two sequence checks,
    /// so that it belongs with the base it is added to).
    #[inline(always)]
    pub fn read_with<T>(&self, mut sample: impl FnMut() -> T) -> (Snapshot, T) {
        loop {
            let seq = self.seq.load(Ordering::Acquire);
            if seq & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            let snap = self.load();
            let t = sample();
            // smp_rmb: the field reads complete before the re-check.
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == seq {
                return (snap, t);
            }
        }
    }

    /// The time of a high-resolution clock with `base`, reading the
    /// counter with `counter()` inside the read section: the vDSO's fast
    /// path, which loads only the fields it needs (the same result as
    /// `read_with(counter)` then [`Snapshot::clock_ns`]). None when user
    /// space cannot use the counter.
    #[inline(always)]
    pub fn hres_ns(&self, base: Base, mut counter: impl FnMut() -> u64) -> Option<u64> {
        let r = Ordering::Relaxed;
        loop {
            let seq = self.seq.load(Ordering::Acquire);
            if seq & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            let mode = self.clock_mode.load(r);
            let cycle_base = self.cycle_base.load(r);
            let freq = self.freq.load(r);
            let offset = match base {
                Base::Mono => 0,
                Base::Real => self.offs_real.load(r),
                Base::Boot => self.offs_boot.load(r),
                Base::Tai => self.offs_real.load(r).wrapping_add(self.offs_tai.load(r)),
            };
            let cycles = counter();
            fence(Ordering::Acquire);
            if self.seq.load(r) != seq {
                continue;
            }
            if mode != VDSO_CLOCKMODE_ARCHTIMER {
                return None;
            }
            return cycles_to_ns(cycles.wrapping_sub(cycle_base), freq).map(|ns| ns.wrapping_add(offset));
        }
    }

    /// A consistent snapshot.
    #[inline(always)]
    pub fn read(&self) -> Snapshot {
        self.read_with(|| ()).0
    }

    /// Changes the page through `f`. Updates must be serialized by the
    /// caller (the kernel holds one lock around every update); readers on
    /// other CPUs retry while it is in progress.
    pub fn update(&self, f: impl FnOnce(&mut Snapshot)) {
        let mut s = self.load();
        f(&mut s);
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        // smp_wmb: the odd count is visible before any field changes.
        fence(Ordering::Release);
        let r = Ordering::Relaxed;
        self.clock_mode.store(s.clock_mode, r);
        self.cycle_base.store(s.cycle_base, r);
        self.freq.store(s.freq, r);
        self.offs_real.store(s.offs_real, r);
        self.offs_boot.store(s.offs_boot, r);
        self.offs_tai.store(s.offs_tai, r);
        self.coarse_mono.store(s.coarse_mono, r);
        self.hrtimer_res.store(s.hrtimer_res, r);
        self.coarse_res.store(s.coarse_res, r);
        self.tz_minuteswest.store(s.tz_minuteswest, r);
        self.tz_dsttime.store(s.tz_dsttime, r);
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}
