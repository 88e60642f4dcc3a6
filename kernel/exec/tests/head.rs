//! Planning from the first bytes of a file (`head_len`, `load_plan_head`,
//! `load_interp_plan_head`), as exec does to avoid reading whole programs:
//! the result is always the one from the whole file.

mod common;

use common::*;
use exec::{head_len, load_interp_plan, load_interp_plan_head, load_plan, load_plan_head};
use object::elf;
use proptest::prelude::*;

/// The file's first bytes as the kernel's exec reads them: one page (or
/// the whole file), then as many as `head_len` asks for, until it is
/// satisfied or the file ends.
fn read_head(file: &[u8], first: usize) -> &[u8] {
    let mut got = file.len().min(first);
    loop {
        let need = usize::try_from(head_len(&file[..got]))
            .unwrap_or(usize::MAX)
            .min(file.len());
        if need <= got {
            return &file[..got];
        }
        got = need;
    }
}

fn assert_same_plans(file: &[u8], first: usize) {
    let head = read_head(file, first);
    let len = file.len() as u64;
    assert_eq!(load_plan_head(head, len), load_plan(file));
    let base = 0xffff_f7fc_0000;
    assert_eq!(load_interp_plan_head(head, len, base), load_interp_plan(file, base));
}

/// A dynamically linked program whose PT_INTERP path lies at `at`.
fn dynamic_exec(at: u64) -> Vec<u8> {
    let mut exe = static_exec();
    let interp = b"/lib/ld-linux-aarch64.so.1\0";
    exe.phdrs.insert(
        1,
        Phdr::other(elf::PT_INTERP, R, at, 0x40_0000 + at, interp.len() as u64),
    );
    exe.phdrs[0].p_filesz = 6 * 56;
    exe.blobs.push((at, interp.to_vec()));
    exe.build()
}

#[test]
fn a_plan_from_the_headers_alone_equals_the_whole_files() {
    for file in [static_exec().build(), static_pie().build(), dynamic_exec(0x200)] {
        assert!(head_len(&file) < 0x400, "the headers are all a plan reads");
        for first in [64, 100, 4096] {
            assert_same_plans(&file, first);
        }
    }
}

#[test]
fn an_interpreter_path_past_the_first_page_is_read_in_a_second_step() {
    let file = dynamic_exec(0x1_2000);
    let page = &file[..4096];
    assert_eq!(head_len(page), 0x1_2000 + 27, "the path's end");
    assert_same_plans(&file, 4096);
    assert_eq!(
        load_plan_head(read_head(&file, 4096), file.len() as u64)
            .unwrap()
            .interp
            .as_deref(),
        Some(&b"/lib/ld-linux-aarch64.so.1"[..])
    );
}

#[test]
fn a_segment_past_the_end_of_the_file_is_still_refused() {
    // The file's length, not the head's, bounds the segments.
    let mut exe = static_exec();
    let last = exe.phdrs.iter_mut().rev().find(|p| p.p_type == elf::PT_LOAD).unwrap();
    last.p_filesz += 0x10_0000;
    last.p_memsz += 0x10_0000;
    let file = exe.build();
    assert!(matches!(
        load_plan(&file),
        Err(exec::ExecError::SegmentOutOfFile { .. })
    ));
    assert_same_plans(&file, 4096);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_plan_the_same_from_the_head(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        first in 0usize..2048,
    ) {
        assert_same_plans(&bytes, first);
    }

    #[test]
    fn random_bytes_behind_a_valid_header_plan_the_same_from_the_head(
        tail in proptest::collection::vec(any::<u8>(), 0..4096),
        first in 0usize..4096,
    ) {
        let mut bytes = dynamic_exec(0x200)[..64].to_vec();
        bytes.extend_from_slice(&tail);
        assert_same_plans(&bytes, first);
    }
}
