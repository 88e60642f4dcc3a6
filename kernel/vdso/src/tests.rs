//! Host tests of the shared data page code: the clock arithmetic against
//! the kernel's 128-bit formula, the clock table against Linux's, and the
//! sequence counter under a concurrent writer.

use crate::datapage::*;
use proptest::prelude::*;

/// The kernel's `ktime_get_ns` formula (kernel/src/printk.rs `uptime_ns`).
fn kernel_ns(cycles: u64, freq: u64) -> u64 {
    (cycles as u128 * 1_000_000_000 / freq as u128) as u64
}

proptest! {
    #[test]
    fn cycles_to_ns_equals_the_kernels_128_bit_formula(cycles: u64, freq in 1..=MAX_FREQ) {
        prop_assert_eq!(cycles_to_ns(cycles, freq), Some(kernel_ns(cycles, freq)));
    }

    #[test]
    fn cycles_to_ns_never_decreases(a: u64, d in 0u64..1 << 40, freq in 1..=MAX_FREQ) {
        let b = a.saturating_add(d);
        let (x, y) = (cycles_to_ns(a, freq).unwrap(), cycles_to_ns(b, freq).unwrap());
        // Monotonic until the 64-bit nanosecond count itself wraps.
        prop_assume!(kernel_ns(b, freq) >= kernel_ns(a, freq));
        prop_assert!(y >= x);
    }
}

#[test]
fn cycles_to_ns_refuses_zero_and_too_fast_counters() {
    assert_eq!(cycles_to_ns(5, 0), None);
    assert_eq!(cycles_to_ns(5, MAX_FREQ + 1), None);
    assert_eq!(cycles_to_ns(62_500_000, 62_500_000), Some(NSEC_PER_SEC));
}

#[test]
fn served_clocks_are_linuxs_hres_coarse_and_raw_sets() {
    // VDSO_HRES | VDSO_COARSE | VDSO_RAW in include/vdso/datapage.h.
    let served: Vec<i32> = (-64..64).filter(|&c| VdsoClock::from_id(c).is_some()).collect();
    assert_eq!(served, [0, 1, 4, 5, 6, 7, 11]);
    assert_eq!(
        VdsoClock::from_id(CLOCK_REALTIME_COARSE),
        Some(VdsoClock {
            base: Base::Real,
            coarse: true
        })
    );
}

fn page(mode: u32) -> VdsoData {
    let d = VdsoData::new();
    d.update(|s| {
        s.clock_mode = mode;
        s.cycle_base = 1000;
        s.freq = 1_000_000;
        s.offs_real = 1_700_000_000 * NSEC_PER_SEC;
        s.offs_boot = 7;
        s.offs_tai = 37 * NSEC_PER_SEC;
        s.coarse_mono = 123;
        s.hrtimer_res = 1;
        s.coarse_res = 4_000_000;
    });
    d
}

#[test]
fn each_clock_adds_its_offset_to_the_counter_time() {
    let s = page(VDSO_CLOCKMODE_ARCHTIMER).read();
    let at = |id| s.clock_ns(VdsoClock::from_id(id).unwrap(), 3000);
    let mono = 2000 * 1000; // 2000 cycles at 1 MHz
    assert_eq!(at(CLOCK_MONOTONIC), Some(mono));
    assert_eq!(at(CLOCK_MONOTONIC_RAW), Some(mono));
    assert_eq!(at(CLOCK_BOOTTIME), Some(mono + 7));
    assert_eq!(at(CLOCK_REALTIME), Some(mono + s.offs_real));
    assert_eq!(at(CLOCK_TAI), Some(mono + s.offs_real + s.offs_tai));
    assert_eq!(at(CLOCK_MONOTONIC_COARSE), Some(123));
    assert_eq!(at(CLOCK_REALTIME_COARSE), Some(123 + s.offs_real));
    assert_eq!(s.res_ns(VdsoClock::from_id(CLOCK_MONOTONIC).unwrap()), 1);
    assert_eq!(s.res_ns(VdsoClock::from_id(CLOCK_MONOTONIC_COARSE).unwrap()), 4_000_000);
}

#[test]
fn the_fast_path_reads_what_the_snapshot_says() {
    for mode in [VDSO_CLOCKMODE_ARCHTIMER, VDSO_CLOCKMODE_NONE] {
        let d = page(mode);
        for id in [
            CLOCK_REALTIME,
            CLOCK_MONOTONIC,
            CLOCK_MONOTONIC_RAW,
            CLOCK_BOOTTIME,
            CLOCK_TAI,
        ] {
            let c = VdsoClock::from_id(id).unwrap();
            assert_eq!(
                d.hres_ns(c.base, || 987_654_321),
                d.read().clock_ns(c, 987_654_321),
                "clock {id}"
            );
        }
    }
}

#[test]
fn clock_mode_none_sends_high_resolution_clocks_to_the_system_call() {
    let s = page(VDSO_CLOCKMODE_NONE).read();
    assert_eq!(s.clock_ns(VdsoClock::from_id(CLOCK_MONOTONIC).unwrap(), 3000), None);
    // The coarse clocks need no counter.
    assert_eq!(
        s.clock_ns(VdsoClock::from_id(CLOCK_MONOTONIC_COARSE).unwrap(), 3000),
        Some(123)
    );
}

#[test]
fn readers_never_see_a_half_done_update() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let d = VdsoData::new();
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            for i in 0..200_000u64 {
                d.update(|s| {
                    s.offs_real = i;
                    s.offs_boot = i;
                    s.coarse_mono = i.wrapping_mul(3);
                });
            }
            stop.store(true, Ordering::Release);
        });
        let mut last = 0;
        while !stop.load(Ordering::Acquire) {
            let s = d.read();
            assert_eq!(s.offs_real, s.offs_boot, "torn read");
            assert_eq!(s.coarse_mono, s.offs_real.wrapping_mul(3), "torn read");
            assert!(s.offs_real >= last, "went back");
            last = s.offs_real;
        }
    });
}
