//! `build_stack`: the initial stack read back as a program reads it.

mod common;

use common::*;
use exec::auxvec::*;
use exec::{build_stack, load_plan, AuxParams, ExecError, LoadPlan, StackImage, MAX_ARG_STRLEN};
use proptest::prelude::*;
use uapi::Errno;

const TOP: u64 = 0x1_0000_0000_0000;

fn plan() -> LoadPlan {
    load_plan(&static_exec().build()).unwrap()
}

fn params() -> AuxParams {
    AuxParams {
        hwcap: 0x8ff,
        hwcap2: 0x2,
        uid: 1000,
        euid: 1001,
        gid: 100,
        egid: 101,
        secure: true,
        random: *b"0123456789abcdef",
        minsigstksz: 4720,
        vdso: Some(0xffff_f7ff_e000),
        rseq_feature_size: Some(28),
        ..AuxParams::default()
    }
}

fn build(argv: &[&[u8]], envp: &[&[u8]], execfn: &[u8], aux: AuxParams) -> Result<StackImage, ExecError> {
    build_stack(TOP, argv, envp, execfn, &plan(), aux)
}

/// The bytes at user address `addr` of `image`.
fn at(image: &StackImage, addr: u64, len: usize) -> &[u8] {
    let o = (addr - image.sp) as usize;
    &image.bytes[o..o + len]
}

#[test]
fn stack_reads_back_as_linux_lays_it_out() {
    let plan = plan();
    let image = build_stack(
        TOP,
        &[b"/bin/prog", b"-v", b""],
        &[b"HOME=/", b"TERM=vt100"],
        b"/bin/prog",
        &plan,
        params(),
    )
    .unwrap();
    assert_eq!(image.sp % 16, 0);
    assert_eq!(image.bytes.len() as u64, TOP - image.sp);
    let parsed = parse_stack(image.sp, &image.bytes);
    assert_eq!(parsed.argc, 3);
    assert_eq!(parsed.argv, [&b"/bin/prog"[..], b"-v", b""]);
    assert_eq!(parsed.envp, [&b"HOME=/"[..], b"TERM=vt100"]);
    assert_eq!(
        parsed.auxv,
        [
            (AT_SYSINFO_EHDR, 0xffff_f7ff_e000),
            (AT_MINSIGSTKSZ, 4720),
            (AT_HWCAP, 0x8ff),
            (AT_PAGESZ, 4096),
            (AT_CLKTCK, 100),
            (AT_PHDR, plan.phdr_addr),
            (AT_PHENT, 56),
            (AT_PHNUM, 5),
            (AT_BASE, 0),
            (AT_FLAGS, 0),
            (AT_ENTRY, plan.entry),
            (AT_UID, 1000),
            (AT_EUID, 1001),
            (AT_GID, 100),
            (AT_EGID, 101),
            (AT_SECURE, 1),
            (AT_RANDOM, image.random),
            (AT_HWCAP2, 2),
            (AT_EXECFN, image.execfn),
            (AT_PLATFORM, image.platform),
            (AT_RSEQ_FEATURE_SIZE, 28),
            (AT_RSEQ_ALIGN, 32),
            (AT_NULL, 0),
        ]
    );
    assert_eq!(image.auxv, parsed.auxv);

    // From the top: 8 zero bytes, the file name, envp strings, argv strings.
    assert_eq!(at(&image, TOP - 8, 8), [0; 8]);
    assert_eq!(image.execfn, TOP - 8 - 10);
    assert_eq!(at(&image, image.execfn, 10), b"/bin/prog\0");
    assert_eq!(parsed.envp_ptrs, [TOP - 18 - 18, TOP - 18 - 11]);
    assert_eq!(image.env_start, parsed.envp_ptrs[0]);
    assert_eq!(image.env_end, image.execfn);
    assert_eq!(parsed.argv_ptrs, [TOP - 36 - 14, TOP - 36 - 4, TOP - 36 - 1]);
    assert_eq!(image.arg_start, parsed.argv_ptrs[0]);
    assert_eq!(image.arg_end, image.env_start);
    // Then, 16-aligned below argv[0], the platform string and the random
    // bytes.
    assert_eq!(image.platform, (image.arg_start & !15) - 8);
    assert_eq!(at(&image, image.platform, 8), b"aarch64\0");
    assert_eq!(image.random, image.platform - 16);
    assert_eq!(at(&image, image.random, 16), b"0123456789abcdef");
    // The auxv ends within 16 bytes below the random bytes.
    assert!(parsed.auxv_end <= image.random && image.random - parsed.auxv_end < 16);
}

#[test]
fn optional_auxv_entries_follow_linux() {
    let aux = AuxParams {
        vdso: None,
        rseq_feature_size: None,
        minsigstksz: 0,
        ..params()
    };
    let image = build(&[b"a"], &[], b"a", aux).unwrap();
    let keys: Vec<u64> = parse_stack(image.sp, &image.bytes)
        .auxv
        .iter()
        .map(|&(t, _)| t)
        .collect();
    assert_eq!(
        keys,
        [
            AT_IGNORE,
            AT_HWCAP,
            AT_PAGESZ,
            AT_CLKTCK,
            AT_PHDR,
            AT_PHENT,
            AT_PHNUM,
            AT_BASE,
            AT_FLAGS,
            AT_ENTRY,
            AT_UID,
            AT_EUID,
            AT_GID,
            AT_EGID,
            AT_SECURE,
            AT_RANDOM,
            AT_HWCAP2,
            AT_EXECFN,
            AT_PLATFORM,
            AT_NULL
        ]
    );
}

#[test]
fn empty_argv_gets_an_empty_argv0() {
    let image = build(&[], &[b"X=1"], b"/bin/prog", params()).unwrap();
    let parsed = parse_stack(image.sp, &image.bytes);
    assert_eq!(image.argc, 1);
    assert_eq!(parsed.argv, [b""]);
    assert_eq!(parsed.envp, [b"X=1"]);
    assert_eq!(image.arg_start, image.env_start - 1);
}

#[test]
fn strings_stop_at_their_first_nul() {
    let image = build(&[b"ab\0cd"], &[b"E=1\0junk"], b"/x\0y", params()).unwrap();
    let parsed = parse_stack(image.sp, &image.bytes);
    assert_eq!(parsed.argv, [b"ab"]);
    assert_eq!(parsed.envp, [b"E=1"]);
    assert_eq!(at(&image, image.execfn, 3), b"/x\0");
}

#[test]
fn longest_string_is_max_arg_strlen_with_its_nul() {
    let long = vec![b'a'; MAX_ARG_STRLEN - 1];
    let image = build(&[&long], &[], b"p", params()).unwrap();
    assert_eq!(parse_stack(image.sp, &image.bytes).argv[0].len(), MAX_ARG_STRLEN - 1);
    let too_long = vec![b'a'; MAX_ARG_STRLEN];
    let e = build(&[b"p", &too_long], &[], b"p", params()).unwrap_err();
    assert_eq!((e.clone(), e.errno()), (ExecError::ArgTooLong, Errno::E2BIG));
    assert_eq!(
        build(&[b"p"], &[&too_long], b"p", params()).unwrap_err(),
        ExecError::ArgTooLong
    );
    assert_eq!(
        build(&[b"p"], &[], &too_long, params()).unwrap_err(),
        ExecError::ArgTooLong
    );
}

/// Bytes of strings that exactly fill the budget for `rlimit`.
fn budget(rlimit: u64, argc: u64, envc: u64) -> u64 {
    (rlimit / 4).clamp(128 << 10, 6 << 20) - (argc.max(1) + envc) * 8
}

#[test]
fn strings_and_pointers_share_a_quarter_of_the_stack_limit() {
    // 8 MiB: 2 MiB. Sixteen argument strings of 128 KiB (NUL included)
    // minus what the file name and the pointers take.
    for rlimit in [8u64 << 20, 1 << 20, 64 << 20] {
        let aux = AuxParams {
            stack_rlimit: rlimit,
            ..params()
        };
        let total = budget(rlimit, 100, 0);
        // 99 equal strings plus one that takes the rest, the file name "p"
        // (2 bytes) included.
        let each = total / 100;
        let last = total - 99 * each - 2;
        let strings: Vec<Vec<u8>> = (0..100)
            .map(|i| vec![b'x'; (if i == 99 { last } else { each }) as usize - 1])
            .collect();
        let argv: Vec<&[u8]> = strings.iter().map(|s| s.as_slice()).collect();
        let image = build_stack(TOP, &argv, &[], b"p", &plan(), aux).unwrap();
        assert_eq!(image.argc, 100);
        let mut more = strings.clone();
        more[0].push(b'x');
        let argv: Vec<&[u8]> = more.iter().map(|s| s.as_slice()).collect();
        let e = build_stack(TOP, &argv, &[], b"p", &plan(), aux).unwrap_err();
        assert_eq!(
            (e.clone(), e.errno()),
            (ExecError::ArgsTooBig, Errno::E2BIG),
            "rlimit {rlimit}"
        );
    }
}

#[test]
fn too_many_pointers_for_the_limit() {
    // 128 KiB is the floor: 16384 pointers fill it before any string.
    let aux = AuxParams {
        stack_rlimit: 0,
        ..params()
    };
    let argv = vec![&b""[..]; 16384];
    assert_eq!(build(&argv, &[], b"p", aux).unwrap_err(), ExecError::ArgsTooBig);
    // An empty string costs its pointer and its NUL: 9 bytes.
    let argv = vec![&b""[..]; 131070 / 9];
    assert_eq!(build(&argv, &[], b"", aux).unwrap().argc, 131070 / 9);
    let argv = vec![&b""[..]; 131070 / 9 + 1];
    assert_eq!(build(&argv, &[], b"", aux).unwrap_err(), ExecError::ArgsTooBig);
}

#[test]
fn stack_outside_user_space_is_refused() {
    let e = build_stack(0x1100, &[b"a"], &[], b"a", &plan(), params()).unwrap_err();
    assert_eq!((e.clone(), e.errno()), (ExecError::StackOutOfRange, Errno::ENOMEM));
    assert_eq!(
        build_stack(4, &[b"a"], &[], b"a", &plan(), params()).unwrap_err(),
        ExecError::StackOutOfRange
    );
    assert_eq!(
        build_stack(TOP + 16, &[b"a"], &[], b"a", &plan(), params()).unwrap_err(),
        ExecError::StackOutOfRange
    );
    assert!(build_stack(0x10_0000, &[b"a"], &[], b"a", &plan(), params()).is_ok());
}

fn arb_strings(max: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
    proptest::collection::vec(proptest::collection::vec(1..=255u8, 0..40), 0..max)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn random_arguments_read_back(
        argv in arb_strings(20),
        envp in arb_strings(20),
        execfn in proptest::collection::vec(1..=255u8, 0..60),
        random in any::<[u8; 16]>(),
        // Any stack top, 8-byte aligned or not: sp stays 16-byte aligned.
        top in 0x10_0000u64..TOP,
    ) {
        let argv_refs: Vec<&[u8]> = argv.iter().map(|s| s.as_slice()).collect();
        let envp_refs: Vec<&[u8]> = envp.iter().map(|s| s.as_slice()).collect();
        let plan = plan();
        let aux = AuxParams { random, ..params() };
        let image = build_stack(top, &argv_refs, &envp_refs, &execfn, &plan, aux).unwrap();
        prop_assert_eq!(image.sp % 16, 0);
        prop_assert_eq!(image.bytes.len() as u64, top - image.sp);
        let parsed = parse_stack(image.sp, &image.bytes);
        let want_argv = if argv.is_empty() { vec![vec![]] } else { argv.clone() };
        prop_assert_eq!(parsed.argc, want_argv.len() as u64);
        prop_assert_eq!(&parsed.argv, &want_argv);
        prop_assert_eq!(&parsed.envp, &envp);
        // Strings are packed downwards from the top: argv[0] lowest, each
        // right after the previous one, the file name last.
        let mut expect = image.arg_start;
        for (ptr, s) in parsed.argv_ptrs.iter().zip(&parsed.argv).chain(parsed.envp_ptrs.iter().zip(&parsed.envp)) {
            prop_assert_eq!(*ptr, expect);
            expect += s.len() as u64 + 1;
        }
        prop_assert_eq!(expect, image.execfn);
        prop_assert_eq!(image.execfn + execfn.len() as u64 + 1 + 8, top);
        prop_assert_eq!(aux_value(&parsed, AT_EXECFN), image.execfn);
        let execfn_back = at(&image, image.execfn, execfn.len() + 1);
        prop_assert_eq!(&execfn_back[..execfn.len()], &execfn[..]);
        prop_assert_eq!(at(&image, aux_value(&parsed, AT_RANDOM), 16), &random[..]);
        prop_assert_eq!(at(&image, aux_value(&parsed, AT_PLATFORM), 8), b"aarch64\0");
        prop_assert_eq!(aux_value(&parsed, AT_ENTRY), plan.entry);
        prop_assert_eq!(aux_value(&parsed, AT_PHDR), plan.phdr_addr);
        prop_assert!(parsed.auxv_end <= image.random && image.random - parsed.auxv_end < 16);
    }
}

fn aux_value(parsed: &ParsedStack, key: u64) -> u64 {
    aux(parsed, key).unwrap()
}
