//! The address types at the memory manager's interfaces: where each stops,
//! and the page arithmetic the VM layer relies on instead of casts.

use arch::addr::{PhysAddr, UserVirtAddr, VirtAddr};
use arch::memory::PAGE_SIZE;
use arch::pgtable_user::{UserPageTable, UserPte};
use arch::uaccess::TASK_SIZE;
use ktest_macros::kernel_test;

const PAGE: u64 = 1 << arch::memory::PAGE_SHIFT;

#[kernel_test]
fn user_addresses_end_at_task_size_and_never_step_into_the_kernel() {
    let last = UserVirtAddr::new(TASK_SIZE - 1).expect("the last user byte");
    assert_eq!(UserVirtAddr::new(TASK_SIZE), None);
    assert_eq!(UserVirtAddr::new(u64::MAX), None);
    assert_eq!(last.checked_add(1), None, "one past the top is not a user address");
    assert_eq!(last.next_page(), None);
    assert_eq!(last.page_base().as_u64(), TASK_SIZE - PAGE);
    assert_eq!(last.page_offset(), PAGE_SIZE - 1);
    assert!(UserVirtAddr::ZERO.range_ok(TASK_SIZE));
    assert!(!UserVirtAddr::ZERO.range_ok(TASK_SIZE + 1));
    assert!(!last.range_ok(u64::MAX), "a wrapping length is refused");
}

#[kernel_test]
fn user_page_arithmetic_matches_the_integers() {
    for va in [0u64, 1, 0xfff, 0x1000, 0x1001, 0x40_0123, TASK_SIZE - PAGE] {
        let a = UserVirtAddr::new(va).unwrap();
        assert_eq!(a.page_base().as_u64(), va & !(PAGE - 1));
        assert_eq!(Ok(a.page_offset()), usize::try_from(va % PAGE));
        assert_eq!(a.is_page_aligned(), va % PAGE == 0);
        assert_eq!(
            a.next_page().map(UserVirtAddr::as_u64),
            Some((va & !(PAGE - 1)) + PAGE).filter(|&n| n < TASK_SIZE)
        );
        assert_eq!(a.offset_from(UserVirtAddr::ZERO), Some(va));
        assert_eq!(UserVirtAddr::ZERO.offset_from(a), if va == 0 { Some(0) } else { None });
    }
}

#[kernel_test]
fn physical_addresses_stop_at_48_bits_and_round_trip_through_the_linear_map() {
    assert_eq!(PhysAddr::new(1 << 48), None);
    let top = PhysAddr::new((1 << 48) - 1).unwrap();
    assert_eq!(top.checked_add(1), None);
    assert_eq!(top.page_offset(), PAGE_SIZE - 1);
    let pa = crate::mm::frame::alloc_user_frame().expect("a frame");
    assert!(pa.is_page_aligned());
    let va: VirtAddr = pa.to_linear();
    assert_eq!(va.linear_to_phys(), Some(pa));
    assert_eq!(va.checked_add(5).and_then(VirtAddr::linear_to_phys), pa.checked_add(5));
    crate::mm::frame::page_ref_dec(pa);
}

#[kernel_test]
fn user_page_table_refuses_an_unaligned_page_and_walks_in_typed_addresses() {
    let pa = crate::mm::frame::alloc_user_zeroed_frame().expect("a frame");
    let pte = UserPte {
        pa,
        user: true,
        write: false,
        exec: false,
        cow: false,
    };
    let mut pt = UserPageTable::new().expect("a table");
    let at = |va| UserVirtAddr::new(va).unwrap();
    assert_eq!(pt.map(at(0x40_0001), pte), Err(arch::mmu::MapError::Unaligned));
    // The top page of user space: the walk's indices give its address back.
    let top = at(TASK_SIZE - PAGE);
    assert_eq!(pt.map(top, pte), Ok(None));
    assert_eq!(pt.get(at(TASK_SIZE - 1)), Some(pte), "any byte of the page finds it");
    let mut seen = alloc::vec::Vec::new();
    pt.for_each(|va, p| seen.push((va, p.pa)));
    assert_eq!(seen, [(top, pa)]);
    // A bound past the top is clipped, not wrapped.
    let mut visited = alloc::vec::Vec::new();
    pt.update_in(
        UserVirtAddr::ZERO,
        u64::MAX,
        |va, p| (va != top).then_some(p),
        |va, _| visited.push(va),
    );
    assert_eq!(visited, [top]);
    assert_eq!(pt.get(top), None, "the update removed it");
    drop(pt);
    crate::mm::frame::page_ref_dec(pa);
}

#[kernel_test]
fn user_pointers_keep_any_value_and_fail_at_the_access_as_linux_access_ok() {
    use crate::errno::Errno;
    use crate::uaccess::{self, UserPtr};
    // A register value at or above TASK_SIZE is still a pointer; the range
    // check decides, at the access.
    let top = UserPtr::new(TASK_SIZE);
    assert_eq!(top.addr(), TASK_SIZE);
    assert_eq!(top.range(0), None, "TASK_SIZE itself is not a user address");
    assert!(arch::uaccess::access_ok(top, 0), "an empty range may end at TASK_SIZE");
    assert!(!arch::uaccess::access_ok(top, 1));
    assert!(!arch::uaccess::access_ok(UserPtr::new(TASK_SIZE - 4), 5));
    assert!(arch::uaccess::access_ok(UserPtr::new(TASK_SIZE - 4), 4));
    assert!(
        !arch::uaccess::access_ok(UserPtr::new(u64::MAX), 2),
        "a wrapping range is refused"
    );
    assert_eq!(
        UserPtr::new(TASK_SIZE - 8).range(8).map(UserVirtAddr::as_u64),
        Some(TASK_SIZE - 8)
    );
    assert_eq!(uaccess::user_range(top, 0), Ok(UserVirtAddr::ZERO));
    assert_eq!(uaccess::user_range(top, 1), Err(Errno::EFAULT));
    assert_eq!(uaccess::user_range(UserPtr::new(u64::MAX), 0), Err(Errno::EFAULT));
    // Past the user half every access is EFAULT before memory is touched,
    // a kernel address included.
    let kernel = VirtAddr::of(&PAGE).expect("a kernel address").as_usize() as u64;
    for p in [
        top,
        UserPtr::new(TASK_SIZE - 4),
        UserPtr::new(kernel),
        UserPtr::new(u64::MAX - 3),
    ] {
        assert_eq!(uaccess::get_user_u64(p), Err(Errno::EFAULT), "{p:?}");
        assert_eq!(uaccess::put_user_u64(p, 1), Err(Errno::EFAULT), "{p:?}");
        assert_eq!(uaccess::copy_to_user(p, &[0; 8]), Err(Errno::EFAULT), "{p:?}");
        assert_eq!(arch::uaccess::raw_copy_to_user(p, &[0; 8]), 8, "{p:?}");
        assert_eq!(uaccess::strndup_user(p, 16, Errno::E2BIG), Err(Errno::EFAULT), "{p:?}");
    }
    assert_eq!(uaccess::getname(top).err(), Some(Errno::EFAULT));
    assert_eq!(arch::uaccess::clear_user(top, 1), Err(arch::nofault::Fault));
    assert_eq!(arch::uaccess::probe_writable(top, 0), Ok(()), "nothing to probe");
    assert_eq!(
        UserPtr::new(u64::MAX).wrapping_add(1),
        UserPtr::NULL,
        "C pointer arithmetic"
    );
    assert!(UserPtr::default().is_null());
    assert_eq!(UserPtr::from(UserVirtAddr::ZERO), UserPtr::NULL);
}
