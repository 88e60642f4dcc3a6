use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::{define, MockKernel};
use crate::*;

/// A trapped context: registers, a kernel and a user memory region, the
/// task's name, and symbols from the mock kernel.
pub(crate) struct MockHit {
    pub x: [u64; 31],
    pub sp: u64,
    pub pc: u64,
    pub kmem: (u64, Vec<u8>),
    pub umem: (u64, Vec<u8>),
    pub comm: Vec<u8>,
    pub kernel: MockKernel,
}

pub(crate) const KBASE: u64 = 0xffff_0000_1000_0000;
pub(crate) const UBASE: u64 = 0x0000_aaaa_0000_0000;

fn read(region: &(u64, Vec<u8>), addr: u64, dst: &mut [u8]) -> bool {
    let Some(off) = addr.checked_sub(region.0) else {
        return false;
    };
    let Ok(off) = usize::try_from(off) else { return false };
    match off.checked_add(dst.len()).and_then(|end| region.1.get(off..end)) {
        Some(s) => {
            dst.copy_from_slice(s);
            true
        }
        None => false,
    }
}

impl MockHit {
    pub fn new() -> MockHit {
        let mut kmem = vec![0u8; 256];
        kmem[..4].copy_from_slice(b"abc\0");
        kmem[16..24].copy_from_slice(&(KBASE + 32).to_le_bytes());
        kmem[24..32].copy_from_slice(&(KBASE + 40).to_le_bytes());
        kmem[32..36].copy_from_slice(b"one\0");
        kmem[40..44].copy_from_slice(b"two\0");
        kmem[48..56].copy_from_slice(&0x8765_4321_dead_beef_u64.to_le_bytes());
        let mut umem = vec![0u8; 64];
        umem[..10].copy_from_slice(b"/dev/null\0");
        let mut x = [0u64; 31];
        x[0] = 5;
        x[1] = KBASE;
        x[2] = UBASE;
        x[3] = 0xffff_ffff_ffff_fff0;
        x[4] = 0xffff_8000_8030_0004;
        MockHit {
            x,
            sp: KBASE + 48,
            pc: 0xffff_8000_8030_0000,
            kmem: (KBASE, kmem),
            umem: (UBASE, umem),
            comm: b"cat\0\0\0\0\0\0\0\0\0\0\0\0\0".to_vec(),
            kernel: MockKernel::new(),
        }
    }
}

impl FetchEnv for MockHit {
    fn register(&self, reg: Reg) -> u64 {
        match reg {
            Reg::X(n) => self.x[usize::from(n)],
            Reg::Sp => self.sp,
            Reg::Pc => self.pc,
            Reg::Pstate => 0x3c5,
        }
    }
    fn kernel_stack_nth(&self, n: u32) -> u64 {
        let mut b = [0u8; 8];
        if read(&self.kmem, self.sp + 8 * u64::from(n), &mut b) {
            u64::from_le_bytes(b)
        } else {
            0
        }
    }
    fn read_kernel(&self, addr: u64, dst: &mut [u8]) -> bool {
        read(&self.kmem, addr, dst)
    }
    fn read_user(&self, addr: u64, dst: &mut [u8]) -> bool {
        read(&self.umem, addr, dst)
    }
    fn comm(&self) -> &[u8] {
        &self.comm
    }
    fn sprint_symbol(&self, addr: u64, dst: &mut [u8]) -> usize {
        sprint_symbol(&self.kernel, addr, dst)
    }
}

/// Defines `line`, fetches one hit at vfs_read's entry and prints it.
fn hit_text(line: &str, hit: &MockHit) -> String {
    let d = define(line);
    let mut rec = vec![0u8; d.max_size()];
    let mut edata = vec![0u64; d.entry_data_len()];
    d.store_entry_data(hit, &mut edata);
    let site = if d.is_return {
        ProbeSite::Return {
            func: 0xffff_8000_8030_0000,
            ret_ip: 0xffff_8000_8030_2010,
        }
    } else {
        ProbeSite::Entry {
            ip: 0xffff_8000_8030_0000,
        }
    };
    let n = d.fetch(hit, site, &edata, &mut rec).expect("fetch");
    assert!(n <= d.max_size());
    let mut out = Vec::new();
    d.print(&rec[..n], &hit.kernel, &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn entry_probe_prints_symbol_and_typed_values() {
    let h = MockHit::new();
    assert_eq!(
        hit_text("p:ev vfs_read %x0 s=+0(%x1):string u=+0(%x2):ustring", &h),
        r#"(vfs_read+0x0/0x120) arg1=0x5 s="abc" u="/dev/null""#
    );
    assert_eq!(
        hit_text(
            "p vfs_read a=%x0:u8 b=%x3:s8 c=%x3:s64 d=%x3:x16 e=%x0:u32 f=%x3:u64 g=\\65:char",
            &h
        ),
        "(vfs_read+0x0/0x120) a=5 b=-16 c=-16 d=0xfff0 e=5 f=18446744073709551600 g='A'"
    );
}

#[test]
fn return_probe_prints_caller_and_saved_arguments() {
    let h = MockHit::new();
    assert_eq!(
        hit_text("r vfs_read $retval $arg3 file", &h),
        "(vfs_open+0x10/0x40 <- vfs_read) arg1=5 count=187647121162240 file=0x5"
    );
}

#[test]
fn failed_reads_are_fault_strings_and_zero_values() {
    let h = MockHit::new();
    assert_eq!(
        hit_text(
            "p vfs_read s=+0(%x0):string v=+0(%x0):u32 u=+0(%x1):ustring w=+8(+0(%x0)):string",
            &h
        ),
        "(vfs_read+0x0/0x120) s=(fault) v=0 u=(fault) w=(fault)"
    );
}

#[test]
fn user_addresses_are_read_as_user_memory_even_without_u() {
    let h = MockHit::new();
    // x2 is a user address: arm64 Linux reads it from user space for
    // kernel fetches too; an empty user string reads as (fault).
    assert_eq!(
        hit_text(
            "p vfs_read g=+0(%x2):string h=+0(%x2):u8 e=+12(%x2):ustring f=+12(%x2):string",
            &h
        ),
        r#"(vfs_read+0x0/0x120) g="/dev/null" h=47 e=(fault) f=(fault)"#
    );
}

#[test]
fn strings_comm_immediates_and_arrays() {
    let h = MockHit::new();
    assert_eq!(
        hit_text(
            r#"p vfs_read c=$comm i=\"hi" a=+0(%x1):u8[4] s=+16(%x1):string[2] x=+0(%x1):x8[2]"#,
            &h
        ),
        r#"(vfs_read+0x0/0x120) c="cat" i="hi" a={97,98,99,0} s={"one","two"} x={0x61,0x62}"#
    );
}

#[test]
fn bitfields_stack_symbols_and_addresses() {
    let h = MockHit::new();
    // kmem[48..56] holds 0x87654321deadbeef; sp points there.
    assert_eq!(
        hit_text(
            "p vfs_read a=$stack0:b4@4/32 b=$stack0:b8@24/32 c=$stack d=@0xffff000010000030:x32 e=%x4:symbol",
            &h
        ),
        "(vfs_read+0x0/0x120) a=14 b=222 c=0xffff000010000030 d=0xdeadbeef e=vfs_read+0x4/0x120"
    );
    // Linux leaves a symstr's __data_loc alone and lets the next string
    // overwrite its NUL, so it prints run together with what follows (seen
    // on reflinux: s="0x1abc" for symstr 0x1 then \"abc").
    assert_eq!(
        hit_text("p vfs_read s=%x4:symstr t=$comm", &h),
        r#"(vfs_read+0x0/0x120) s="vfs_read+0x4/0x120cat" t="cat""#
    );
    assert_eq!(
        hit_text("p vfs_read t=$comm s=%x4:symstr", &h),
        r#"(vfs_read+0x0/0x120) t="cat" s="vfs_read+0x4/0x120""#
    );
}

#[test]
fn records_use_linux_data_loc_layout() {
    let h = MockHit::new();
    let d = define("p vfs_read a=+0(%x1):string b=%x0:u32 c=$comm");
    let mut rec = vec![0xaau8; 128];
    let n = d.fetch(&h, ProbeSite::Entry { ip: 7 }, &[], &mut rec).unwrap();
    // Header 8, ip 8, a (4), b (4), c (4): dynamic data from 28.
    assert_eq!(d.fixed_size(), 28);
    assert_eq!(n, 28 + 4 + 4);
    assert_eq!(&rec[..8], &[0xaa; 8], "the common header is the caller's");
    assert_eq!(u64::from_le_bytes(rec[8..16].try_into().unwrap()), 7);
    assert_eq!(u32::from_le_bytes(rec[16..20].try_into().unwrap()), 4 << 16 | 28);
    assert_eq!(u32::from_le_bytes(rec[20..24].try_into().unwrap()), 5);
    assert_eq!(u32::from_le_bytes(rec[24..28].try_into().unwrap()), 4 << 16 | 32);
    assert_eq!(&rec[28..36], b"abc\0cat\0");
}

#[test]
fn a_short_buffer_is_an_error_not_a_panic() {
    let h = MockHit::new();
    let d = define("p vfs_read a=+0(%x1):string");
    let mut rec = vec![0u8; 23];
    assert_eq!(
        d.fetch(&h, ProbeSite::Entry { ip: 0 }, &[], &mut rec),
        Err(FetchError::BufferTooSmall { needed: 24 })
    );
    let d = define("r vfs_read $arg1");
    let mut rec = vec![0u8; 64];
    assert_eq!(
        d.fetch(&h, ProbeSite::Return { func: 0, ret_ip: 0 }, &[], &mut rec),
        Err(FetchError::MissingEntryData)
    );
}

#[test]
fn btf_string_of_char_pointer_dereferences_it() {
    let mut h = MockHit::new();
    h.x[1] = UBASE;
    assert_eq!(
        hit_text("p vfs_read buf:ustring n=+0(buf):ustring", &h),
        r#"(vfs_read+0x0/0x120) buf="/dev/null" n="/dev/null""#
    );
}

#[test]
fn fetch_and_entry_data_never_allocate() {
    let h = MockHit::new();
    let probe = super::alloc_count::count();
    drop(core::hint::black_box(vec![1u8]));
    assert!(super::alloc_count::count() > probe, "the counter sees allocations");
    for line in [
        r#"p vfs_read a=+0(%x1):string b=%x4:symstr c=$comm d=\"imm" e=+16(%x1):string[2] f=+0(%x1):u8[4] g=%x2:b3@1/8"#,
        "r vfs_read $retval $arg1 file->f_flags count:u32 s=%x4:symbol",
    ] {
        let d = define(line);
        let mut rec = vec![0u8; d.max_size()];
        let mut edata = vec![0u64; d.entry_data_len()];
        let site = ProbeSite::Return { func: 1, ret_ip: 2 };
        let before = super::alloc_count::count();
        d.store_entry_data(&h, &mut edata);
        let n = d.fetch(&h, site, &edata, &mut rec).unwrap();
        assert_eq!(super::alloc_count::count(), before, "{line}");
        assert!(n > d.fixed_size() || !d.args.iter().any(|a| a.dynamic));
    }
}

#[test]
fn immediates_print_as_on_reflinux() {
    // reflinux: ev8 "s=-5 t=251 u=0xfffffffffffffffb v='A' w=0x5", ev9 e="".
    let h = MockHit::new();
    assert_eq!(
        hit_text(
            r#"p vfs_read s=\-5:s8 t=\-5:u8 u=\-5:x64 v=\0x41:char r=$stack999:x8 e=\"":string"#,
            &h
        ),
        r#"(vfs_read+0x0/0x120) s=-5 t=251 u=0xfffffffffffffffb v='A' r=0x0 e="""#
    );
}

#[test]
fn return_probe_reads_fields_through_saved_arguments() {
    // reflinux: ev6 "(ksys_read+0x7c/0x120 <- vfs_read) r=1 c=0x1 f=0x20000".
    let mut h = MockHit::new();
    h.x[0] = KBASE + 64; // file: f_flags at +0x14
    h.kmem.1[64 + 0x14..64 + 0x18].copy_from_slice(&0x20000u32.to_le_bytes());
    h.x[2] = 1;
    let d = define("r:ev6 vfs_read r=$retval c=$arg3 f=file->f_flags:x32");
    let mut edata = vec![0u64; d.entry_data_len()];
    d.store_entry_data(&h, &mut edata);
    // By the time the function returns, x0 holds the return value.
    h.x[0] = 1;
    let mut rec = vec![0u8; d.max_size()];
    let site = ProbeSite::Return {
        func: 0xffff_8000_8030_0000,
        ret_ip: 0xffff_8000_8030_2010,
    };
    let n = d.fetch(&h, site, &edata, &mut rec).unwrap();
    let mut out = Vec::new();
    d.print(&rec[..n], &h.kernel, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "(vfs_open+0x10/0x40 <- vfs_read) r=1 c=0x1 f=0x20000"
    );
}
