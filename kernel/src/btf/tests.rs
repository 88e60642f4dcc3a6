//! In-kernel tests of the embedded prototypes: what the build extracted
//! from DWARF, checked against what the compiler says about the same
//! types (`size_of`, `offset_of!`), on a test function whose every
//! parameter kind is known and on real kernel entry points.

use super::*;
use btf::{CType, Pointee, StructType};
use core::mem::offset_of;
use ktest_macros::kernel_test;

/// Reached through `outer->inner`.
#[repr(C)]
pub struct KtestBtfInner {
    pub id: u32,
    pub name: [u8; 16],
}

/// The structure the test function's first parameter points to.
#[repr(C)]
pub struct KtestBtfOuter {
    pub flags: u16,
    pub inner: *const KtestBtfInner,
    pub label: *const u8,
    pub nested: KtestBtfInner,
}

/// A C-like enum passed in a register.
#[repr(u8)]
#[derive(Clone, Copy)]
pub enum KtestBtfMode {
    Off = 0,
    On = 1,
}

/// The probe target whose prototype the test checks: one parameter of
/// each kind the table describes.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_btf_target(outer: &KtestBtfOuter, count: i32, mode: KtestBtfMode, name: *const u8) -> i64 {
    let base = i64::from(outer.flags) + i64::from(count) + mode as i64;
    core::hint::black_box(base.wrapping_add(name as i64))
}

fn bits(bytes: usize) -> u32 {
    (bytes * 8) as u32
}

fn member<'a>(s: &'a StructType, name: &str) -> &'a btf::Member {
    s.find_member(name)
        .unwrap_or_else(|| panic!("{} has no member {name}", s.name))
        .0
}

#[kernel_test]
fn test_function_parameters_have_their_names_types_and_layout() {
    let inner = KtestBtfInner { id: 7, name: [0; 16] };
    let outer = KtestBtfOuter {
        flags: 1,
        inner: &inner,
        label: c"x".as_ptr().cast(),
        nested: KtestBtfInner { id: 8, name: [0; 16] },
    };
    assert_eq!(ktest_btf_target(&outer, 2, KtestBtfMode::On, core::ptr::null()), 4);
    let _ = KtestBtfMode::Off;

    let p = func_proto("ktest_btf_target").expect("ktest_btf_target is described");
    let names: alloc::vec::Vec<&str> = p.params.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["outer", "count", "mode", "name"]);
    assert_eq!(p.ret, CType::Int { bytes: 8, signed: true });
    assert_eq!(p.params[1].1, CType::Int { bytes: 4, signed: true });
    assert_eq!(p.params[2].1, CType::Enum { bytes: 1 });
    assert_eq!(p.params[3].1, CType::Ptr(Pointee::Char));

    let CType::Ptr(Pointee::Struct(o)) = &p.params[0].1 else {
        panic!("outer is {:?}", p.params[0].1);
    };
    assert_eq!(o.name, "KtestBtfOuter");
    let flags = member(o, "flags");
    assert_eq!(flags.bit_offset, bits(offset_of!(KtestBtfOuter, flags)));
    assert_eq!(
        flags.ty,
        CType::Int {
            bytes: 2,
            signed: false
        }
    );
    assert_eq!(member(o, "label").ty, CType::Ptr(Pointee::Char));
    let nested = member(o, "nested");
    assert_eq!(nested.bit_offset, bits(offset_of!(KtestBtfOuter, nested)));
    let CType::Struct(n) = &nested.ty else {
        panic!("nested is {:?}", nested.ty);
    };
    assert_eq!(member(n, "name").bit_offset, bits(offset_of!(KtestBtfInner, name)));

    // outer->inner->name: a pointer member followed to its structure.
    let inner_m = member(o, "inner");
    assert_eq!(inner_m.bit_offset, bits(offset_of!(KtestBtfOuter, inner)));
    let CType::Ptr(Pointee::Struct(i)) = &inner_m.ty else {
        panic!("inner is {:?}", inner_m.ty);
    };
    assert_eq!(
        member(i, "id").ty,
        CType::Int {
            bytes: 4,
            signed: false
        }
    );
    let name = member(i, "name");
    assert_eq!(name.ty, CType::CharArray(16));
    assert_eq!(name.bit_offset, bits(offset_of!(KtestBtfInner, name)));
}

#[kernel_test]
fn prototypes_are_built_once_and_unknown_names_have_none() {
    let a = func_proto("ktest_btf_target").unwrap();
    let b = func_proto("ktest_btf_target").unwrap();
    assert!(core::ptr::eq(a, b), "the cached prototype is returned");
    assert!(func_proto("no_such_function_anywhere").is_none());
    assert!(func_proto("").is_none());
    assert!(nr_funcs() > 100, "only {} functions described", nr_funcs());
}

#[kernel_test]
fn entry_points_describe_their_register_arguments() {
    // start_kernel(dtb_pa, boot_counter, phys_base), never returns.
    let p = func_proto("start_kernel").expect("start_kernel is described");
    let u64_t = CType::Int {
        bytes: 8,
        signed: false,
    };
    assert_eq!(p.ret, CType::Void);
    assert_eq!(
        p.params,
        [
            ("dtb_pa".into(), u64_t.clone()),
            ("boot_counter".into(), u64_t.clone()),
            ("phys_base".into(), u64_t),
        ]
    );

    // Every system call takes `struct pt_regs *` and returns a long, and
    // the build found `pc` where the compiler put it.
    let pc_bits = bits(offset_of!(arch::ptrace::PtRegs, pc));
    let mut syscalls = 0;
    for sym in crate::kallsyms::table().iter() {
        let name = sym.name;
        if !name.starts_with("__arm64_sys_") {
            continue;
        }
        let p = func_proto(name).unwrap_or_else(|| panic!("{name} is not described"));
        assert_eq!(p.ret, CType::Int { bytes: 8, signed: true }, "{name}");
        assert_eq!(p.params.len(), 1, "{name}");
        let CType::Ptr(Pointee::Struct(regs)) = &p.params[0].1 else {
            panic!("{name}: {:?}", p.params[0].1);
        };
        assert_eq!(member(regs, "pc").bit_offset, pc_bits, "{name}");
        syscalls += 1;
    }
    assert!(syscalls > 50, "only {syscalls} system calls");
}
