//! The initial stack, byte for byte against what Linux 6.12 arm64 built for
//! the same program, arguments and environment (tests/fixtures/README.md).

mod common;

use common::*;
use exec::auxvec::*;
use exec::{build_stack, load_plan, AuxParams, LoadPlan};

/// Rebuilds the stack Linux printed in `dump` for the program `elf`, taking
/// from Linux what is not ours to choose (random bytes, hardware
/// capabilities, the vDSO address, and with `linux_addresses` the load
/// addresses) and compares every byte.
fn rebuild_and_compare(elf: &[u8], dump: &str, linux_addresses: bool) {
    let linux = parse_linux_dump(dump);
    let value = |key| linux.auxv.iter().find(|&&(t, _)| t == key).unwrap().1;
    let mut plan: LoadPlan = load_plan(elf).unwrap();
    if linux_addresses {
        // Linux put the static-PIE at its mmap base; we use ELF_ET_DYN_BASE.
        plan.entry = value(AT_ENTRY);
        plan.phdr_addr = value(AT_PHDR);
    }
    let random_at = (value(AT_RANDOM) - linux.sp) as usize;
    let aux = AuxParams {
        hwcap: value(AT_HWCAP),
        hwcap2: value(AT_HWCAP2),
        uid: value(AT_UID) as u32,
        euid: value(AT_EUID) as u32,
        gid: value(AT_GID) as u32,
        egid: value(AT_EGID) as u32,
        secure: value(AT_SECURE) != 0,
        random: linux.bytes[random_at..random_at + 16].try_into().unwrap(),
        minsigstksz: value(AT_MINSIGSTKSZ),
        vdso: Some(value(AT_SYSINFO_EHDR)),
        rseq_feature_size: Some(value(AT_RSEQ_FEATURE_SIZE)),
        ..AuxParams::default()
    };
    let execfn_at = (value(AT_EXECFN) - linux.sp) as usize;
    let execfn_len = linux.bytes[execfn_at..].iter().position(|&b| b == 0).unwrap();
    let execfn = &linux.bytes[execfn_at..execfn_at + execfn_len];
    let argv: Vec<&[u8]> = linux.argv.iter().map(|s| s.as_slice()).collect();
    let envp: Vec<&[u8]> = linux.envp.iter().map(|s| s.as_slice()).collect();

    let image = build_stack(linux.top, &argv, &envp, execfn, &plan, aux).unwrap();
    assert_eq!(image.auxv, linux.auxv);
    assert_eq!(image.sp, linux.sp);
    assert_eq!(image.bytes, linux.bytes);
}

#[test]
fn static_exec_stack_is_byte_identical_to_linux() {
    rebuild_and_compare(
        include_bytes!("fixtures/auxdump-exec"),
        include_str!("fixtures/linux-6.12-auxdump-exec.txt"),
        false,
    );
}

#[test]
fn static_pie_stack_is_byte_identical_to_linux_given_its_load_address() {
    rebuild_and_compare(
        include_bytes!("fixtures/auxdump-pie"),
        include_str!("fixtures/linux-6.12-auxdump-pie.txt"),
        true,
    );
}

#[test]
fn default_minsigstksz_is_what_linux_reported_without_sve() {
    let linux = parse_linux_dump(include_str!("fixtures/linux-6.12-auxdump-exec.txt"));
    let reported = linux.auxv.iter().find(|&&(t, _)| t == AT_MINSIGSTKSZ).unwrap().1;
    assert_eq!(AuxParams::default().minsigstksz, reported);
}
