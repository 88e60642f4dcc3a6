//! `load_plan` on well-formed executables: what it maps where.

mod common;

use common::*;
use exec::{load_plan, ElfType, ExecError, Prot, Segment, ELF_ET_DYN_BASE};
use object::elf;

const PROT_R: Prot = Prot {
    read: true,
    write: false,
    exec: false,
};
const PROT_RX: Prot = Prot {
    read: true,
    write: false,
    exec: true,
};
const PROT_RW: Prot = Prot {
    read: true,
    write: true,
    exec: false,
};

#[test]
fn et_dyn_base_is_two_thirds_of_48_bit_va() {
    assert_eq!(ELF_ET_DYN_BASE, 0xaaaa_aaaa_aaaa);
}

#[test]
fn static_exec_segments_are_mapped_at_their_addresses() {
    let file = static_exec().build();
    let plan = load_plan(&file).unwrap();
    assert_eq!(plan.kind, ElfType::Exec);
    assert_eq!(plan.bias, 0);
    assert_eq!(
        plan.segments,
        vec![
            // No bss: the file runs on to the end of the last page.
            Segment {
                vaddr: 0x40_0000..0x40_1000,
                file: 0..0x1000,
                zero: 0x40_1000..0x40_1000,
                prot: PROT_R
            },
            Segment {
                vaddr: 0x41_1000..0x41_3000,
                file: 0x1000..0x2910,
                zero: 0x41_2910..0x41_3000,
                prot: PROT_RX
            },
            // With bss: the file bytes up to p_filesz, zeros after.
            Segment {
                vaddr: 0x42_2000..0x42_6000,
                file: 0x2000..0x2910,
                zero: 0x42_2910..0x42_6000,
                prot: PROT_RW
            },
        ]
    );
    assert_eq!(plan.entry, 0x41_1040);
    assert_eq!(plan.phdr_addr, 0x40_0040);
    assert_eq!(plan.phent, 56);
    assert_eq!(plan.phnum, 5);
    assert_eq!(plan.brk_start, 0x42_6000);
    assert!(!plan.exec_stack);
}

#[test]
fn static_pie_is_loaded_at_et_dyn_base_aligned_to_p_align() {
    let file = static_pie().build();
    let plan = load_plan(&file).unwrap();
    assert_eq!(plan.kind, ElfType::Dyn);
    assert_eq!(plan.bias, 0xaaaa_aaaa_0000);
    assert_eq!(plan.entry, 0xaaaa_aaab_1040);
    assert_eq!(plan.phdr_addr, 0xaaaa_aaaa_0040);
    assert_eq!(plan.segments[0].vaddr, 0xaaaa_aaaa_0000..0xaaaa_aaaa_1000);
    assert_eq!(plan.segments[2].vaddr, 0xaaaa_aaac_2000..0xaaaa_aaac_6000);
    assert_eq!(plan.brk_start, 0xaaaa_aaac_6000);
}

#[test]
fn static_pie_with_page_alignment_is_loaded_at_the_page_below_et_dyn_base() {
    let mut pie = static_pie();
    for ph in &mut pie.phdrs {
        ph.p_align = 0x1000;
    }
    let plan = load_plan(&pie.build()).unwrap();
    assert_eq!(plan.bias, 0xaaaa_aaaa_a000);
}

#[test]
fn static_pie_linked_above_zero_keeps_its_offsets() {
    let mut pie = static_pie();
    for ph in &mut pie.phdrs {
        ph.p_vaddr += 0x20_0000;
    }
    pie.entry += 0x20_0000;
    let plan = load_plan(&pie.build()).unwrap();
    // Linux: ELF_PAGESTART(base - first p_vaddr).
    assert_eq!(plan.bias, 0xaaaa_aaaa_0000 - 0x20_0000);
    assert_eq!(plan.segments[0].vaddr.start, 0xaaaa_aaaa_0000);
    assert_eq!(plan.entry, 0xaaaa_aaab_1040);
}

#[test]
fn executable_stack_request_is_reported() {
    let mut exe = static_exec();
    exe.phdrs[4].p_flags = RW | elf::PF_X;
    assert!(load_plan(&exe.build()).unwrap().exec_stack);
}

#[test]
fn phdr_address_comes_from_the_load_holding_e_phoff_not_pt_phdr() {
    let mut exe = static_exec();
    // A lying PT_PHDR changes nothing: Linux 6.x ignores it.
    exe.phdrs[0].p_vaddr = 0x40_0100;
    assert_eq!(load_plan(&exe.build()).unwrap().phdr_addr, 0x40_0040);
    // Program headers in no PT_LOAD: Linux reports the bias (0).
    let mut exe = static_exec();
    exe.phoff = 0x2a00;
    exe.phdrs[0].p_offset = 0x2a00;
    assert_eq!(load_plan(&exe.build()).unwrap().phdr_addr, 0);
}

#[test]
fn bss_only_segment_maps_zeros() {
    let mut exe = static_exec();
    exe.phdrs.insert(4, Phdr::load(RW, 0x1234, 0x43_0000, 0, 0x1800));
    exe.phdrs[0].p_filesz = 6 * 56;
    let plan = load_plan(&exe.build()).unwrap();
    let bss = &plan.segments[3];
    assert_eq!(bss.vaddr, 0x43_0000..0x43_2000);
    assert!(bss.file.is_empty());
    assert_eq!(bss.zero, 0x43_0000..0x43_2000);
    assert_eq!(plan.brk_start, 0x43_2000);
}

#[test]
fn segments_may_share_a_boundary_page() {
    // Text ending in the page where data begins (no gap of a page between
    // them), as Linux accepts with MAP_FIXED.
    let phdrs = vec![
        Phdr::load(RX, 0, 0x40_0000, 0x1800, 0x1800),
        Phdr::load(RW, 0x1800, 0x40_1800, 0x100, 0x200),
    ];
    let plan = load_plan(&ElfFile::new(elf::ET_EXEC, 0x40_0100, phdrs).build()).unwrap();
    assert_eq!(plan.segments[0].vaddr, 0x40_0000..0x40_2000);
    assert_eq!(plan.segments[1].vaddr, 0x40_1000..0x40_2000);
    assert_eq!(plan.segments[1].file, 0x1000..0x1900);
    // The shared page is the data segment's: code there cannot run.
    let phdrs = vec![
        Phdr::load(RX, 0, 0x40_0000, 0x1800, 0x1800),
        Phdr::load(RW, 0x1800, 0x40_1800, 0x100, 0x200),
    ];
    let file = ElfFile::new(elf::ET_EXEC, 0x40_17f0, phdrs).build();
    assert_eq!(load_plan(&file), Err(ExecError::BadEntry));
}

#[test]
fn empty_load_segments_are_skipped() {
    let mut exe = static_exec();
    exe.phdrs.insert(1, Phdr::load(R, 0, 0x1000, 0, 0));
    exe.phdrs[0].p_filesz = 6 * 56;
    let plan = load_plan(&exe.build()).unwrap();
    assert_eq!(plan.segments.len(), 3);
    assert_eq!(plan.phnum, 6);
}

#[test]
fn last_file_page_stops_at_the_end_of_the_file() {
    let phdrs = vec![Phdr::load(RX, 0, 0x40_0000, 0x300, 0x300)];
    let exe = ElfFile::new(elf::ET_EXEC, 0x40_0100, phdrs);
    let file = exe.build();
    assert_eq!(file.len(), 0x300);
    let plan = load_plan(&file).unwrap();
    assert_eq!(plan.segments[0].file, 0..0x300);
    assert_eq!(plan.segments[0].zero, 0x40_0300..0x40_1000);
}

#[test]
fn dynamically_linked_program_names_its_interpreter() {
    let mut exe = static_exec();
    let interp = b"/lib/ld-linux-aarch64.so.1\0";
    exe.phdrs
        .insert(1, Phdr::other(elf::PT_INTERP, R, 0x200, 0x40_0200, interp.len() as u64));
    exe.phdrs[0].p_filesz = 6 * 56;
    exe.blobs.push((0x200, interp.to_vec()));
    let plan = load_plan(&exe.build()).unwrap();
    assert_eq!(plan.interp.as_deref(), Some(&b"/lib/ld-linux-aarch64.so.1"[..]));
    assert_eq!(load_plan(&static_exec().build()).unwrap().interp, None);
}

#[test]
fn interpreter_is_placed_at_the_base_given_and_its_span_counted() {
    // An ET_DYN interpreter linked at 0: first page at the base, entry and
    // segments moved by it, and the span from its first page to its end.
    let ld = static_pie().build();
    assert_eq!(exec::image_span(&ld).unwrap(), 0x2_6000);
    let plan = exec::load_interp_plan(&ld, 0xffff_f7fc_0000).unwrap();
    assert_eq!(plan.bias, 0xffff_f7fc_0000);
    assert_eq!(plan.entry, 0xffff_f7fc_0000 + 0x1_1040);
    assert_eq!(plan.segments[0].vaddr.start, 0xffff_f7fc_0000);
    // An ET_EXEC interpreter stays where it was linked.
    let plan = exec::load_interp_plan(&static_exec().build(), 0xffff_f7fc_0000).unwrap();
    assert_eq!((plan.bias, plan.entry), (0, 0x41_1040));
}

#[test]
fn bss_only_segment_past_the_end_of_the_file_is_accepted() {
    let mut exe = static_exec();
    exe.phdrs.insert(4, Phdr::load(RW, 0x10_0000, 0x50_0000, 0, 0x2000));
    exe.phdrs[0].p_filesz = 6 * 56;
    let plan = load_plan(&exe.build()).unwrap();
    let bss = plan.segments.last().unwrap();
    assert_eq!((bss.vaddr.clone(), bss.file.is_empty()), (0x50_0000..0x50_2000, true));
}

#[test]
fn errno_values_are_linux_arm64() {
    assert_eq!(ExecError::OutOfMemory.errno() as i32, 12);
    assert_eq!(ExecError::BadMagic.errno() as i32, 8);
    assert_eq!(ExecError::ArgsTooBig.errno() as i32, 7);
}

/// Values Linux 6.12 reported for the fixture programs (their auxv as
/// printed in tests/fixtures).
fn linux_aux(fixture: &str, key: u64) -> u64 {
    let dump = parse_linux_dump(fixture);
    dump.auxv.iter().find(|&&(t, _)| t == key).unwrap().1
}

#[test]
fn real_static_exec_plan_matches_what_linux_reported() {
    let plan = load_plan(include_bytes!("fixtures/auxdump-exec")).unwrap();
    let dump = include_str!("fixtures/linux-6.12-auxdump-exec.txt");
    assert_eq!(plan.kind, ElfType::Exec);
    assert_eq!(plan.phdr_addr, linux_aux(dump, exec::auxvec::AT_PHDR));
    assert_eq!(plan.phent, linux_aux(dump, exec::auxvec::AT_PHENT));
    assert_eq!(plan.phnum, linux_aux(dump, exec::auxvec::AT_PHNUM));
    assert_eq!(plan.entry, linux_aux(dump, exec::auxvec::AT_ENTRY));
}

#[test]
fn real_static_pie_plan_matches_what_linux_reported_up_to_the_bias() {
    let plan = load_plan(include_bytes!("fixtures/auxdump-pie")).unwrap();
    let dump = include_str!("fixtures/linux-6.12-auxdump-pie.txt");
    assert_eq!(plan.kind, ElfType::Dyn);
    assert_eq!(plan.bias, 0xaaaa_aaaa_0000);
    // Linux put it at the mmap base, 0xfffff7fd0000.
    let linux_bias = 0xffff_f7fd_0000;
    assert_eq!(
        plan.phdr_addr - plan.bias,
        linux_aux(dump, exec::auxvec::AT_PHDR) - linux_bias
    );
    assert_eq!(
        plan.entry - plan.bias,
        linux_aux(dump, exec::auxvec::AT_ENTRY) - linux_bias
    );
    assert_eq!(plan.phnum, linux_aux(dump, exec::auxvec::AT_PHNUM));
}

/// The static busybox that shared/reflinux downloads (Debian
/// busybox-static 1:1.35.0-4+deb12u1+b1), if it is there.
fn busybox() -> Option<Vec<u8>> {
    let cache = std::env::var("REFLINUX_CACHE").unwrap_or_else(|_| "/work/shared/reflinux/cache".into());
    let path = std::path::Path::new(&cache).join("busybox/busybox");
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            println!("note: skipping the busybox check: {}: {e}", path.display());
            None
        }
    }
}

#[test]
fn real_busybox_plan_is_sane() {
    let Some(file) = busybox() else { return };
    let plan = load_plan(&file).unwrap();
    assert_eq!(plan.kind, ElfType::Exec);
    assert_eq!(plan.bias, 0);
    assert!(!plan.segments.is_empty());
    for seg in &plan.segments {
        assert_eq!(seg.vaddr.start % 4096, 0);
        assert_eq!(seg.vaddr.end % 4096, 0);
        assert!(seg.file.end as usize <= file.len());
        assert_eq!(seg.vaddr.start + (seg.file.end - seg.file.start), seg.zero.start);
    }
    let text = plan.segments.iter().find(|s| s.vaddr.contains(&plan.entry)).unwrap();
    assert!(text.prot.exec);
    assert_eq!(plan.phent, 56);
    assert_eq!(plan.brk_start, plan.segments.last().unwrap().vaddr.end);
    if plan.entry == 0x40_0580 {
        // The pinned Debian build, as Linux 6.12 ran it: /proc/self/auxv
        // said AT_PHDR 0x400040, AT_PHNUM 6; /proc/self/maps put [heap] at
        // 0x5da000 with randomisation off.
        assert_eq!(plan.phdr_addr, 0x40_0040);
        assert_eq!(plan.phnum, 6);
        assert_eq!(plan.brk_start, 0x5d_a000);
        assert_eq!(plan.segments.len(), 2);
        assert_eq!(plan.segments[1].prot, PROT_RW);
    }
}
