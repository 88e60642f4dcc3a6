//! In-kernel tests of mechanisms that span modules: kallsyms against real
//! functions, W^X, and the oops report.

use crate::uaccess::UserPtr;
use alloc::string::String;
use ktest_macros::kernel_test;

#[kernel_test]
fn kallsyms_resolves_real_kernel_functions() {
    let start = crate::init::start_kernel as *const () as usize;
    assert_eq!(crate::kallsyms::lookup_name("start_kernel"), Some(start));
    let sym = crate::kallsyms::lookup_addr(start + 8).expect("start_kernel+8 resolves");
    assert_eq!(sym.name, "start_kernel");
    assert_eq!(sym.offset, 8);
    assert!(sym.size > 8);
    // A Rust path, demangled, without its hash, spelled as one token.
    let alloc = crate::mm::frame::alloc_frame as *const () as usize;
    assert_eq!(
        crate::kallsyms::lookup_name("kernel__mm__frame__alloc_frame"),
        Some(alloc)
    );
    let text = alloc::format!("{}", crate::kallsyms::symbolize(alloc + 4));
    assert!(text.starts_with("kernel__mm__frame__alloc_frame+0x4/0x"), "{text}");
    assert!(crate::kallsyms::lookup_name("no_such_function_anywhere").is_none());
    assert!(
        crate::kallsyms::table().len() > 100,
        "only {} symbols",
        crate::kallsyms::table().len()
    );
}

#[kernel_test]
fn every_kallsyms_name_is_one_unique_probe_token() {
    let table = crate::kallsyms::table();
    let mut names: alloc::vec::Vec<&str> = table.iter().map(|s| s.name).collect();
    for n in &names {
        // What kprobe_events and set_ftrace_filter would cut a symbol at.
        assert!(
            !n.is_empty() && !n.contains(|c: char| c.is_whitespace() || ":+-%#*?[]!()/=".contains(c)),
            "kallsyms name {n:?} is not one probe token"
        );
    }
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        panic!("kallsyms name {} is listed twice", w[0]);
    }
    // A trait method of a kernel type, by self type then trait.
    assert!(
        crate::kallsyms::lookup_name("kernel__fs__proc__Provider__ProcProvider__read").is_some(),
        "no kernel__fs__proc__Provider__ProcProvider__read"
    );
}

fn write_faults(addr: usize) -> bool {
    // SAFETY-free: the write is expected to fault; if it does not, the
    // test has failed anyway and the value written is the word already there.
    let old = arch::nofault::read_u64_nofault(addr & !7).expect("readable");
    let word = (old >> ((addr & 4) * 8)) as u32;
    write_u32(addr, word).is_err()
}

#[allow(unsafe_code)]
fn write_u32(addr: usize, val: u32) -> Result<(), arch::nofault::Fault> {
    // SAFETY: `val` is the value already at `addr`, so a successful write
    // changes nothing.
    unsafe { arch::nofault::write_u32_nofault(addr, val) }
}

#[kernel_test]
fn kernel_text_and_rodata_are_not_writable() {
    let text = crate::init::start_kernel as *const () as usize;
    assert!(write_faults(text), "write to kernel text did not fault");
    static RO: u32 = 0x1234_5678;
    assert!(
        write_faults(&RO as *const u32 as usize),
        "write to rodata did not fault"
    );
    // The linear-map alias of the text is read-only too.
    let text_va = arch::addr::VirtAddr::new(text).unwrap();
    let alias = arch::mmu::kimage_to_phys(text_va).to_linear().as_usize();
    assert!(write_faults(alias), "write to the linear alias of text did not fault");
}

#[kernel_test]
fn only_text_is_executable() {
    /// The kernel mapping of the kernel address `va`.
    fn translate(va: usize) -> Option<(arch::addr::PhysAddr, arch::mmu::Prot)> {
        arch::mmu::translate(arch::addr::VirtAddr::new(va)?)
    }
    let l = arch::mmu::image_layout();
    let (_, text) = translate(crate::init::start_kernel as *const () as usize).unwrap();
    assert!(text.is_exec() && !text.is_writable());
    let (_, ro) = translate(l.rodata).unwrap();
    assert!(!ro.is_exec() && !ro.is_writable());
    let (_, data) = translate(l.data).unwrap();
    assert!(!data.is_exec() && data.is_writable());
    let stack = arch::cpu::stack_pointer();
    let (_, st) = translate(stack).unwrap();
    assert!(!st.is_exec() && st.is_writable());
    let heap = alloc::boxed::Box::new(0u64);
    let (_, hp) = translate(&*heap as *const u64 as usize).unwrap();
    assert!(!hp.is_exec());
}

#[inline(never)]
fn ktest_oops_victim(addr: usize) -> bool {
    arch::nofault::read_u64_nofault(addr).is_err()
}

#[kernel_test]
fn a_kernel_fault_reports_an_oops_naming_the_function() {
    let mut faulted = false;
    let report: String = crate::ktest::capture_oops(|| faulted = ktest_oops_victim(0xdead_0000_0000));
    assert!(faulted);
    assert!(
        report.contains("Unable to handle kernel paging request at virtual address 0000dead00000000"),
        "{report}"
    );
    assert!(
        report.contains("EC = 0x25: DABT (current EL), IL = 32 bits"),
        "{report}"
    );
    assert!(report.contains("FSC = 0x04: level 0 translation fault"), "{report}");
    assert!(report.contains("pc : arch__nofault__load_u64+0x"), "{report}");
    let trace = report.split("Call trace:").nth(1).expect("a call trace");
    assert!(trace.contains("\n kernel__selftests__ktest_oops_victim+0x"), "{report}");
    assert!(
        trace.contains("\n kernel__selftests__a_kernel_fault_reports_an_oops_naming_the_function"),
        "{report}"
    );
    assert!(report.contains("x29: "), "{report}");
}

#[kernel_test]
#[allow(unsafe_code)]
fn fixmap_slot_aliases_a_frame_and_unmaps() {
    use arch::mmu::{fixmap, Prot};
    let pa = crate::mm::frame::alloc_frame().expect("a frame");
    let linear = pa.to_linear().as_usize();
    const SLOT: usize = 7;
    assert!(arch::mmu::translate(fixmap::slot_addr(SLOT)).is_none());
    // SAFETY: the frame is ours alone; the alias is removed before it is freed.
    let alias = unsafe { fixmap::set(SLOT, pa, Prot::KERNEL_RW) };
    assert_eq!(alias, fixmap::slot_addr(SLOT));
    let (mapped_pa, prot) = arch::mmu::translate(alias).unwrap();
    assert_eq!(mapped_pa, pa);
    assert!(prot.is_writable() && !prot.is_exec());
    // SAFETY: `alias` maps our frame writable; 0x100 is inside the page.
    assert!(unsafe { arch::nofault::write_u32_nofault(alias.as_usize() + 0x100, 0xfeed_f00d) }.is_ok());
    let seen = arch::nofault::read_u64_nofault(linear + 0x100).unwrap() as u32;
    assert_eq!(
        seen, 0xfeed_f00d,
        "write through the fixmap alias not seen in the linear map"
    );
    fixmap::clear(SLOT);
    assert!(arch::mmu::translate(alias).is_none());
    assert!(
        arch::nofault::read_u64_nofault(alias.as_usize()).is_err(),
        "cleared slot still readable"
    );
    crate::mm::frame::free_frame(pa);
}

/// `a` as a user address (the tests' constants are).
fn uva(a: u64) -> arch::addr::UserVirtAddr {
    arch::addr::UserVirtAddr::new(a).expect("a user address")
}

/// A one-page user mapping at `va`, filled with `fill`, active on this
/// CPU until the returned space is dropped after `secondary_drop_idmap`.
fn one_user_page(va: u64, fill: u8) -> alloc::sync::Arc<crate::mm::vm::Mm> {
    use crate::mm::vm::{Mm, Prot, VmaKind};
    let mm = Mm::new().unwrap();
    let rw = Prot {
        read: true,
        write: true,
        exec: false,
    };
    mm.add_region(va, va + 4096, rw, VmaKind::Anon).unwrap();
    mm.write_bytes(uva(va), &[fill; 4096]).unwrap();
    mm.activate();
    mm
}

/// The user page's bytes, read through the page tables (not uaccess).
fn user_page_bytes(mm: &crate::mm::vm::Mm, va: u64) -> alloc::vec::Vec<u8> {
    let mut b = alloc::vec![0u8; 4096];
    mm.access_remote(uva(va), &mut b, false).unwrap();
    b
}

#[kernel_test]
fn user_copies_stop_exactly_at_the_first_unmapped_byte() {
    const VA: u64 = 0x40_0000;
    let end = VA + 4096;
    let src: alloc::vec::Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
    for room in [0usize, 1, 7, 8, 9, 15, 63, 64, 65, 100, 129] {
        for n in [room.saturating_sub(1), room, room + 1, room + 8, room + 64, 300] {
            let n = n.min(300);
            let mm = one_user_page(VA, 0xee);
            let dst = UserPtr::new(end - room as u64);
            let left = arch::uaccess::raw_copy_to_user(dst, &src[..n]);
            assert_eq!(
                left,
                n.saturating_sub(room),
                "to user: {n} bytes, {room} before the hole"
            );
            let page = user_page_bytes(&mm, VA);
            let copied = n.min(room);
            let at = 4096 - room;
            assert_eq!(&page[at..at + copied], &src[..copied], "to user: the bytes that fit");
            assert!(
                page[at + copied..].iter().all(|&b| b == 0xee),
                "to user: beyond the copy"
            );
            mm.write_bytes(uva(VA), &src[..256].repeat(16)).unwrap();
            let mut got = [0x55u8; 300];
            let left = arch::uaccess::raw_copy_from_user(&mut got[..n], dst);
            assert_eq!(
                left,
                n.saturating_sub(room),
                "from user: {n} bytes, {room} before the hole"
            );
            let want = user_page_bytes(&mm, VA);
            assert_eq!(&got[..copied], &want[at..at + copied], "from user: the bytes that fit");
            assert!(
                got[copied..].iter().all(|&b| b == 0x55),
                "from user: the rest untouched"
            );
            arch::mmu::secondary_drop_idmap();
            drop(mm);
        }
    }
}

#[kernel_test]
fn user_copies_are_exact_at_every_alignment_and_length() {
    const VA: u64 = 0x40_0000;
    let src: alloc::vec::Vec<u8> = (0..200u32).map(|i| (i * 13 + 5) as u8).collect();
    let mm = one_user_page(VA, 0);
    for off in 0..16u64 {
        for n in 0..=200usize {
            mm.write_bytes(uva(VA), &[0xaa; 512]).unwrap();
            assert_eq!(arch::uaccess::raw_copy_to_user(UserPtr::new(VA + off), &src[..n]), 0);
            let page = user_page_bytes(&mm, VA);
            let o = off as usize;
            assert_eq!(&page[o..o + n], &src[..n], "to user at +{off}, {n} bytes");
            assert!(page[..o].iter().chain(&page[o + n..512]).all(|&b| b == 0xaa));
            let mut got = [0u8; 200];
            assert_eq!(
                arch::uaccess::raw_copy_from_user(&mut got[..n], UserPtr::new(VA + off)),
                0
            );
            assert_eq!(&got[..n], &src[..n], "from user at +{off}, {n} bytes");
        }
    }
    // Outside user space nothing is copied.
    assert_eq!(
        arch::uaccess::raw_copy_to_user(UserPtr::new(u64::MAX - 3), &src[..8]),
        8
    );
    arch::mmu::secondary_drop_idmap();
    drop(mm);
}

#[kernel_test]
fn user_memory_is_reached_only_through_uaccess_when_pan_is_on() {
    use crate::mm::vm::{Mm, Prot, VmaKind};
    const VA: u64 = 0x40_0000;
    let mm = Mm::new().unwrap();
    mm.add_region(
        VA,
        VA + 4096,
        Prot {
            read: true,
            write: true,
            exec: false,
        },
        VmaKind::Anon,
    )
    .unwrap();
    mm.write_bytes(uva(VA), &0x1122_3344_5566_7788u64.to_le_bytes())
        .unwrap();
    mm.activate();
    // uaccess (LDTR) works whether or not PAN is on.
    assert_eq!(
        crate::uaccess::get_user_u64(UserPtr::new(VA)),
        Ok(0x1122_3344_5566_7788)
    );
    let plain = arch::nofault::read_u64_nofault(VA as usize);
    let pan = arch::cpu::enable_pan();
    if pan {
        assert!(plain.is_err(), "PAN is on, yet a plain kernel load read user memory");
    } else {
        crate::pr_info!("ktest: this CPU has no PAN; plain loads of user memory are not trapped");
        assert_eq!(plain, Ok(0x1122_3344_5566_7788));
    }
    arch::mmu::secondary_drop_idmap();
    drop(mm);
}
