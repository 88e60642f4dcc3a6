//! `load_plan` on malformed files: each defect gives its own error, and
//! nothing panics, whatever the bytes.

mod common;

use common::*;
use exec::{load_plan, ExecError, LoadPlan, TASK_SIZE, USER_MIN};
use object::elf;
use proptest::prelude::*;
use uapi::Errno;

fn err(file: &ElfFile) -> ExecError {
    let e = load_plan(&file.build()).unwrap_err();
    assert_eq!(e.errno(), Errno::ENOEXEC, "{e}");
    e
}

fn with(f: impl FnOnce(&mut ElfFile)) -> ElfFile {
    let mut exe = static_exec();
    f(&mut exe);
    exe
}

#[test]
fn header_defects() {
    assert_eq!(load_plan(b""), Err(ExecError::BadMagic));
    assert_eq!(load_plan(b"\x7fELF\x02\x01"), Err(ExecError::BadMagic));
    assert_eq!(load_plan(b"#!/bin/sh\n"), Err(ExecError::BadMagic));
    let mut file = static_exec().build();
    file[1] = b'e';
    assert_eq!(load_plan(&file), Err(ExecError::BadMagic));
    assert_eq!(err(&with(|e| e.class = elf::ELFCLASS32)), ExecError::BadClass);
    assert_eq!(err(&with(|e| e.data = elf::ELFDATA2MSB)), ExecError::BadEndian);
    assert_eq!(err(&with(|e| e.machine = elf::EM_X86_64)), ExecError::BadMachine);
    assert_eq!(err(&with(|e| e.e_type = elf::ET_REL)), ExecError::BadType);
    assert_eq!(err(&with(|e| e.e_type = elf::ET_CORE)), ExecError::BadType);
    assert_eq!(err(&with(|e| e.phentsize = 32)), ExecError::BadPhentsize);
    assert_eq!(err(&with(|e| e.phnum = Some(0))), ExecError::BadPhnum);
    // PN_XNUM: extended numbering is beyond what Linux reads.
    assert_eq!(err(&with(|e| e.phnum = Some(0xffff))), ExecError::BadPhnum);
    assert_eq!(err(&with(|e| e.phnum = Some(1171))), ExecError::BadPhnum);
    assert_eq!(err(&with(|e| e.phnum = Some(200))), ExecError::PhdrsOutOfFile);
    // A truncated header.
    assert_eq!(load_plan(&static_exec().build()[..63]), Err(ExecError::BadMagic));
}

#[test]
fn program_headers_outside_the_file() {
    let file = static_exec().build();
    assert_eq!(load_plan(&file[..64 + 5 * 56 - 1]), Err(ExecError::PhdrsOutOfFile));
    assert_eq!(err(&with(|e| e.phoff = u64::MAX - 8)), ExecError::PhdrsOutOfFile);
    assert_eq!(err(&with(|e| e.phoff = 1 << 40)), ExecError::PhdrsOutOfFile);
}

#[test]
fn load_segment_defects() {
    assert_eq!(
        err(&with(|e| e.phdrs[2].p_filesz = 0x1801)),
        ExecError::FileszExceedsMemsz { index: 2 }
    );
    assert_eq!(
        err(&with(|e| {
            e.phdrs[3].p_offset = 0x10_0810;
            e.min_len = 0;
        }))
        .errno(),
        Errno::ENOEXEC
    );
    let mut file = static_exec().build();
    file.truncate(0x2900);
    assert_eq!(load_plan(&file), Err(ExecError::SegmentOutOfFile { index: 3 }));
    assert_eq!(
        err(&with(|e| {
            e.phdrs[3].p_offset = u64::MAX - 0x7ef;
        })),
        ExecError::SegmentOutOfFile { index: 3 }
    );
    assert_eq!(
        err(&with(|e| e.phdrs[2].p_offset = 0x1008)),
        ExecError::SegmentMisaligned { index: 2 }
    );
}

#[test]
fn addresses_outside_user_space() {
    // Page 0.
    assert_eq!(
        err(&with(|e| {
            e.phdrs[1].p_vaddr = 0;
            e.phdrs[0].p_vaddr = 0x40;
        })),
        ExecError::SegmentOutOfRange { index: 1 }
    );
    // Just below 0x1000: its page is page 0.
    assert_eq!(
        err(&with(|e| e.phdrs[1].p_vaddr = 0xfff)),
        ExecError::SegmentMisaligned { index: 1 }
    );
    let bss_at = |vaddr: u64, memsz: u64| {
        with(move |e| {
            e.phdrs.insert(4, Phdr::load(RW, 0, vaddr, 0, memsz));
            e.phdrs[0].p_filesz = 6 * 56;
        })
    };
    assert_eq!(err(&bss_at(0x800, 0x100)), ExecError::SegmentOutOfRange { index: 4 });
    assert!(load_plan(&bss_at(USER_MIN, 0x100).build()).is_err()); // below the others: overlap
    assert_eq!(
        err(&bss_at(TASK_SIZE - 0x1000, 0x1001)),
        ExecError::SegmentOutOfRange { index: 4 }
    );
    assert_eq!(err(&bss_at(TASK_SIZE, 1)), ExecError::SegmentOutOfRange { index: 4 });
    assert_eq!(
        err(&bss_at(u64::MAX - 0x10, 0x100)),
        ExecError::SegmentOutOfRange { index: 4 }
    );
    assert_eq!(
        err(&bss_at(0x50_0000, u64::MAX)),
        ExecError::SegmentOutOfRange { index: 4 }
    );
    // A static-PIE whose biased addresses overflow.
    let mut pie = static_pie();
    pie.phdrs[3].p_vaddr = 0x7fff_ffff_0810;
    pie.phdrs.truncate(4);
    assert_eq!(err(&pie), ExecError::SegmentOutOfRange { index: 3 });
}

#[test]
fn the_highest_user_page_is_usable() {
    let exe = with(|e| {
        e.phdrs.insert(4, Phdr::load(RW, 0, TASK_SIZE - 0x1000, 0, 0x1000));
        e.phdrs[0].p_filesz = 6 * 56;
    });
    let plan = load_plan(&exe.build()).unwrap();
    assert_eq!(plan.brk_start, TASK_SIZE);
}

#[test]
fn overlapping_or_unsorted_segments() {
    assert_eq!(
        err(&with(|e| e.phdrs[3].p_vaddr = 0x41_1810)),
        ExecError::SegmentsOverlap { index: 3 }
    );
    assert_eq!(
        err(&with(|e| e.phdrs.swap(2, 3))),
        ExecError::SegmentsOverlap { index: 3 }
    );
    // Touching is not overlapping.
    let phdrs = vec![
        Phdr::load(RX, 0, 0x40_0000, 0x1800, 0x1800),
        Phdr::load(RW, 0x1800, 0x40_1800, 0x100, 0x200),
    ];
    assert!(load_plan(&ElfFile::new(elf::ET_EXEC, 0x40_0000, phdrs.clone()).build()).is_ok());
    let mut overlap = phdrs;
    overlap[1].p_vaddr -= 1;
    overlap[1].p_offset -= 1;
    assert_eq!(
        err(&ElfFile::new(elf::ET_EXEC, 0x40_0000, overlap)),
        ExecError::SegmentsOverlap { index: 1 }
    );
}

#[test]
fn no_load_segment() {
    let phdrs = vec![Phdr::other(elf::PT_NOTE, R, 0x100, 0x40_0100, 0x20)];
    assert_eq!(
        err(&ElfFile::new(elf::ET_EXEC, 0x40_0000, phdrs)),
        ExecError::NoLoadSegment
    );
    let phdrs = vec![Phdr::load(RX, 0, 0x40_0000, 0, 0)];
    assert_eq!(
        err(&ElfFile::new(elf::ET_EXEC, 0x40_0000, phdrs)),
        ExecError::NoLoadSegment
    );
}

#[test]
fn entry_outside_executable_segments() {
    assert_eq!(err(&with(|e| e.entry = 0)), ExecError::BadEntry);
    assert_eq!(err(&with(|e| e.entry = 0x40_0010)), ExecError::BadEntry); // read-only
    assert_eq!(err(&with(|e| e.entry = 0x42_2900)), ExecError::BadEntry); // data
    assert_eq!(err(&with(|e| e.entry = 0x41_2800)), ExecError::BadEntry); // one past the text
    assert!(load_plan(&with(|e| e.entry = 0x41_27ff).build()).is_ok());
}

#[test]
fn malformed_interpreter() {
    let interp = |bytes: &[u8], size: u64, offset: u64| {
        let bytes = bytes.to_vec();
        with(move |e| {
            e.phdrs
                .insert(1, Phdr::other(elf::PT_INTERP, R, offset, 0x40_0200, size));
            e.phdrs[0].p_filesz = 6 * 56;
            e.blobs.push((0x200, bytes));
        })
    };
    assert_eq!(err(&interp(b"/lib/ld.so", 10, 0x200)), ExecError::BadInterp); // no NUL
    assert_eq!(err(&interp(b"\0", 1, 0x200)), ExecError::BadInterp); // too short
    assert_eq!(err(&interp(b"/x\0", 3, 1 << 30)), ExecError::BadInterp); // outside the file
    assert_eq!(err(&interp(b"/x\0", 4097, 0x200)), ExecError::BadInterp); // beyond PATH_MAX
                                                                          // Linux opens the path up to its first NUL.
    let plan = load_plan(&interp(b"/a\0b\0", 5, 0x200).build()).unwrap();
    assert_eq!(plan.interp.as_deref(), Some(&b"/a"[..]));
}

/// The invariants every accepted plan keeps, whatever the file.
fn check_plan(file: &[u8], plan: &LoadPlan) {
    assert!(!plan.segments.is_empty());
    let mut prev_end = 0;
    for seg in &plan.segments {
        assert_eq!(seg.vaddr.start % 4096, 0);
        assert_eq!(seg.vaddr.end % 4096, 0);
        assert!(seg.vaddr.start >= USER_MIN && seg.vaddr.end <= TASK_SIZE && seg.vaddr.start < seg.vaddr.end);
        // At most one shared boundary page with the previous segment.
        assert!(seg.vaddr.start >= prev_end || seg.vaddr.start + 4096 == prev_end);
        prev_end = seg.vaddr.end;
        assert!(seg.file.start <= seg.file.end && seg.file.end <= file.len() as u64);
        assert_eq!(seg.vaddr.start + (seg.file.end - seg.file.start), seg.zero.start);
        assert_eq!(seg.zero.end, seg.vaddr.end);
    }
    // A later segment replaces a shared page.
    let text = plan
        .segments
        .iter()
        .rev()
        .find(|s| s.vaddr.contains(&plan.entry))
        .expect("entry not mapped");
    assert!(text.prot.exec);
    assert_eq!(plan.brk_start % 4096, 0);
    assert!(plan.brk_start >= prev_end && plan.brk_start <= TASK_SIZE);
}

/// Valid files to damage.
fn samples() -> Vec<Vec<u8>> {
    vec![
        static_exec().build(),
        static_pie().build(),
        include_bytes!("fixtures/auxdump-exec").to_vec(),
        include_bytes!("fixtures/auxdump-pie").to_vec(),
    ]
}

/// How much of a valid file the loader needs: the program header table and
/// every PT_LOAD's file bytes (read straight from the ELF64 header).
fn needed_len(elf: &[u8]) -> usize {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let (phoff, phentsize, phnum) = (u64_at(0x20), u16_at(0x36), u16_at(0x38));
    let mut need = phoff + phentsize * phnum;
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        if u32::from_le_bytes(elf[ph..ph + 4].try_into().unwrap()) == 1 {
            need = need.max(u64_at(ph + 8) + u64_at(ph + 0x20));
        }
    }
    need
}

#[test]
fn every_truncation_is_refused_or_consistent() {
    for sample in samples() {
        let need = needed_len(&sample);
        assert!(need <= sample.len());
        for len in 0..sample.len() {
            let cut = &sample[..len];
            match load_plan(cut) {
                Ok(plan) => {
                    assert!(len >= need, "a file cut to {len} of {need} needed bytes was accepted");
                    check_plan(cut, &plan);
                }
                Err(_) => assert!(len < need, "the whole of what is needed ({len} bytes) was refused"),
            }
        }
    }
}

#[test]
fn every_single_byte_corruption_is_refused_or_consistent() {
    for sample in samples() {
        // The headers, and a stretch after them, with every value class.
        let span = sample.len().min(0x400);
        for at in 0..span {
            for value in [
                0x00,
                0x01,
                0x07,
                0x10,
                0x7f,
                0x80,
                0xaa,
                0xff,
                sample[at] ^ 0x01,
                sample[at] ^ 0x80,
            ] {
                let mut bad = sample.clone();
                bad[at] = value;
                // The checks Linux's load_elf_binary makes first: the magic,
                // e_machine (EM_AARCH64) and e_phentsize.
                let vital = matches!(at, 0..=3 | 0x12 | 0x13 | 0x36 | 0x37);
                match load_plan(&bad) {
                    Ok(plan) => {
                        assert!(
                            !vital || value == sample[at],
                            "byte {at:#x} set to {value:#x} was accepted"
                        );
                        check_plan(&bad, &plan);
                    }
                    Err(_) => assert!(value != sample[at], "the unchanged file was refused"),
                }
            }
        }
    }
}

/// Plausible PT_LOAD layouts: increasing addresses, offsets congruent to
/// them, sizes up to a few pages, with the entry in one of them.
fn arb_layout() -> impl Strategy<Value = (Vec<Phdr>, u64)> {
    let segment = (0..3u64, 0..0x3000u64, 0..0x3000u64, 0..0x3000u64, 0..8u32);
    (
        proptest::collection::vec(segment, 1..6),
        any::<prop::sample::Index>(),
        0..0x1000u64,
    )
        .prop_map(|(segments, pick, entry_offset)| {
            let (mut vaddr, mut offset, mut phdrs) = (0x40_0000u64, 0u64, Vec::new());
            for (gap_pages, skip, filesz, bss, flags) in segments {
                vaddr += gap_pages * 0x1000 + skip;
                offset += skip;
                // Keep the offset congruent to the address.
                offset += (vaddr.wrapping_sub(offset)) % 0x1000;
                phdrs.push(Phdr::load(flags, offset, vaddr, filesz, filesz + bss));
                vaddr += filesz + bss;
                offset += filesz;
            }
            let chosen = phdrs[pick.index(phdrs.len())];
            let entry = chosen.p_vaddr + entry_offset % chosen.p_memsz.max(1);
            (phdrs, entry)
        })
}

/// One field of one program header set to a random or boundary value.
fn arb_mutation() -> impl Strategy<Value = Option<(prop::sample::Index, usize, u64)>> {
    let value = prop_oneof![
        any::<u64>(),
        Just(0u64),
        Just(u64::MAX),
        Just(TASK_SIZE),
        Just(TASK_SIZE - 0x1000),
        0..0x10000u64,
        Just(elf::PT_INTERP as u64),
        Just(elf::PT_GNU_STACK as u64),
    ];
    proptest::option::of((any::<prop::sample::Index>(), 0..7usize, value))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = load_plan(&bytes);
    }

    #[test]
    fn random_bytes_behind_a_valid_ident_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..1024),
        e_type in prop_oneof![Just(elf::ET_EXEC), Just(elf::ET_DYN)],
    ) {
        let mut bytes = static_exec().build()[..16].to_vec();
        bytes.extend_from_slice(&e_type.to_le_bytes());
        bytes.extend_from_slice(&elf::EM_AARCH64.to_le_bytes());
        bytes.extend_from_slice(&tail);
        if let Ok(plan) = load_plan(&bytes) {
            check_plan(&bytes, &plan);
        }
    }

    #[test]
    fn random_program_headers_give_consistent_plans_or_errors(
        (mut phdrs, entry) in arb_layout(),
        mutation in arb_mutation(),
        dyn_ in any::<bool>(),
    ) {
        if let Some((which, field, value)) = mutation {
            let n = phdrs.len();
            let ph = &mut phdrs[which.index(n)];
            match field {
                0 => ph.p_type = value as u32,
                1 => ph.p_flags = value as u32,
                2 => ph.p_offset = value,
                3 => ph.p_vaddr = value,
                4 => ph.p_filesz = value,
                5 => ph.p_memsz = value,
                _ => ph.p_align = value,
            }
        }
        let exe = ElfFile::new(if dyn_ { elf::ET_DYN } else { elf::ET_EXEC }, entry, phdrs);
        let file = exe.build_bounded();
        if let Ok(plan) = load_plan(&file) {
            check_plan(&file, &plan);
        }
    }
}

trait Bounded {
    /// `build`, but without the huge files absurd offsets would ask for.
    fn build_bounded(&self) -> Vec<u8>;
}

impl Bounded for ElfFile {
    fn build_bounded(&self) -> Vec<u8> {
        let mut copy = self.clone();
        copy.min_len = 0x5000;
        copy.build()
    }
}
