//! The wall clock at boot: set from the PL031 real-time clock that QEMU
//! `virt` has, as Linux's `rtc_hctosys` does; kept at the epoch on
//! `raspi4b`, which has no RTC. (`usertests realtime_starts_from_the_rtc`
//! checks what user space then reads.)

use e2e::run_commands;

/// The seconds the kernel said it set the clock to, if it did.
fn rtc_seconds(dmesg: &str) -> Option<u64> {
    let line = dmesg
        .lines()
        .find(|l| l.contains("rtc-pl031: setting system clock to "))?;
    let rest = line.split("setting system clock to ").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

#[test]
fn virt_sets_realtime_from_the_pl031() {
    let (out, code) = run_commands(&["--smp", "1"], &[], "dmesg", 60);
    assert_eq!(code, 0, "{out}");
    let secs = rtc_seconds(&out).unwrap_or_else(|| panic!("no RTC message in dmesg:\n{out}"));
    // 2020-01-01T00:00:00Z: QEMU's PL031 starts at the host's time.
    assert!(secs > 1_577_836_800, "clock set to {secs} s since the epoch");
}

#[test]
fn raspi4b_has_no_rtc_and_keeps_the_epoch() {
    let (out, code) = run_commands(&["--machine", "raspi4b"], &[], "dmesg", 60);
    assert_eq!(code, 0, "{out}");
    assert_eq!(rtc_seconds(&out), None, "{out}");
}
