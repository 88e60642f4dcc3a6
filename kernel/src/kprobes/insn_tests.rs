//! The kprobes proof suite (test builds only):
//!
//! - every instruction of every assembly test function (`asm_tests.rs`, one
//!   per instruction class) probed in turn: the function's result is
//!   unchanged, the pre- and post-handlers run in that order exactly as
//!   often as the instruction does, and the original bytes come back;
//! - instructions that cannot run elsewhere are refused;
//! - kretprobes: return values, recursion beyond `maxactive`, sleeping and
//!   migrating between CPUs, entry handlers that skip the return, private
//!   data per instance;
//! - an SMP stress test: three CPUs call a function while the fourth arms
//!   and disarms probes on its instructions, with every hit accounted for.

use super::asm_tests;
use super::kretprobe::{register_kretprobe, unregister_kretprobe, Kretprobe};
use super::*;
use crate::patching::read_insn;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::hint::black_box;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use ktest_macros::kernel_test;

// ------------------------------------------------ every instruction, probed

/// One assembly function and how to check it.
struct Case {
    sym: &'static str,
    call: fn(u64, u64) -> u64,
    /// The result computed from the arguments, independently of the code.
    expect: fn(u64, u64) -> u64,
    /// The bits of the result that `expect` knows.
    known_bits: u64,
    args: &'static [(u64, u64)],
    /// How many `orr x2, x2, #(1 << k)` markers the function holds.
    markers: usize,
}

/// `orr x2, x2, #(1 << k)` (64-bit ORR immediate: N = 1, imms = 0,
/// immr = (64 - k) mod 64, Rn = Rd = x2).
const fn orr_x2_bit(k: u32) -> u32 {
    0xb240_0042 | (((64 - k) % 64) << 16)
}

/// The bit a marker instruction sets, if `insn` is one.
fn marker_bit(insn: u32) -> Option<u32> {
    (0..16).find(|&k| orr_x2_bit(k) == insn)
}

/// The marker bit whose runs `code[i]` shares: a marker runs when its bit
/// is in the result, and so does a `B` right after it (nothing branches to
/// such a B: it leaves a block entered only through the marker). All other
/// instructions run once per call.
fn runs_with_marker(code: &[u32], i: usize) -> Option<u32> {
    let is_b = |insn: u32| insn & 0xfc00_0000 == 0x1400_0000;
    marker_bit(code[i]).or_else(|| {
        if i > 0 && is_b(code[i]) {
            marker_bit(code[i - 1])
        } else {
            None
        }
    })
}

/// What the handlers of one probe saw.
#[derive(Default)]
struct Counts {
    pre: AtomicUsize,
    post: AtomicUsize,
    /// The first problem seen: 1 = pre-handler PC is not the probe
    /// address, 2 = pre without the previous post, 3 = post without pre.
    bad: AtomicUsize,
}

fn counted_probe(addr: usize, c: &Arc<Counts>) -> Arc<Kprobe> {
    let (c1, c2) = (c.clone(), c.clone());
    Arc::new(
        Kprobe::at(addr)
            .pre(move |kp, regs| {
                if regs.pc as usize != kp.addr() {
                    let _ = c1.bad.compare_exchange(0, 1, SeqCst, SeqCst);
                }
                if c1.pre.load(SeqCst) != c1.post.load(SeqCst) {
                    let _ = c1.bad.compare_exchange(0, 2, SeqCst, SeqCst);
                }
                c1.pre.fetch_add(1, SeqCst);
                0
            })
            .post(move |_, _| {
                if c2.post.load(SeqCst) + 1 != c2.pre.load(SeqCst) {
                    let _ = c2.bad.compare_exchange(0, 3, SeqCst, SeqCst);
                }
                c2.post.fetch_add(1, SeqCst);
            }),
    )
}

/// The start and size of a function, from kallsyms.
fn function(sym: &str) -> (usize, usize) {
    let start = crate::kallsyms::lookup_name(sym).unwrap_or_else(|| panic!("{sym} is not in kallsyms"));
    let s = crate::kallsyms::lookup_addr(start).unwrap();
    assert_eq!((s.name, s.offset), (sym, 0));
    (start, s.size as usize)
}

fn instructions(start: usize, size: usize) -> Vec<u32> {
    (start..start + size)
        .step_by(4)
        .map(|a| read_insn(a).unwrap())
        .collect()
}

/// Probes each instruction of `c` in turn, with pre- and post-handlers, and
/// checks results, handler runs and order, and the restored bytes.
fn check_every_instruction(c: &Case) {
    let (start, size) = function(c.sym);
    let orig = instructions(start, size);
    let want: Vec<u64> = c
        .args
        .iter()
        .map(|&(a, b)| {
            let r = (c.call)(a, b);
            assert_eq!(
                r & c.known_bits,
                (c.expect)(a, b) & c.known_bits,
                "{}({a:#x}, {b:#x}) is wrong even unprobed",
                c.sym
            );
            r
        })
        .collect();
    assert_eq!(
        orig.iter().filter(|&&i| marker_bit(i).is_some()).count(),
        c.markers,
        "{}: markers",
        c.sym
    );
    for (i, &insn) in orig.iter().enumerate() {
        let addr = start + 4 * i;
        let counts = Arc::new(Counts::default());
        let kp = counted_probe(addr, &counts);
        if let Err(e) = register_kprobe(&kp) {
            panic!("{}+{:#x} ({insn:#010x}) refused: {e:?}", c.sym, 4 * i);
        }
        assert_eq!(
            read_insn(addr),
            Some(brk_insn(KPROBES_BRK_IMM)),
            "{}+{:#x} not armed",
            c.sym,
            4 * i
        );
        for (k, &(a, b)) in c.args.iter().enumerate() {
            let (pre0, post0) = (counts.pre.load(SeqCst), counts.post.load(SeqCst));
            let r = (c.call)(a, b);
            let runs = runs_with_marker(&orig, i).map_or(1, |bit| (want[k] >> bit) as usize & 1);
            let at = alloc::format!("{}({a:#x}, {b:#x}) probed at +{:#x} ({insn:#010x})", c.sym, 4 * i);
            assert_eq!(r, want[k], "{at}: result");
            assert_eq!(counts.pre.load(SeqCst) - pre0, runs, "{at}: pre-handler runs");
            assert_eq!(counts.post.load(SeqCst) - post0, runs, "{at}: post-handler runs");
            assert_eq!(counts.bad.load(SeqCst), 0, "{at}: handler order/PC");
        }
        assert_eq!(kp.nmissed(), 0);
        unregister_kprobe(&kp);
        assert_eq!(
            read_insn(addr),
            Some(insn),
            "{}+{:#x}: bytes not restored",
            c.sym,
            4 * i
        );
    }
    assert_eq!(instructions(start, size), orig, "{}: text changed", c.sym);
}

fn sum(v: &[u64]) -> u64 {
    v.iter().fold(0, |s, &x| s.wrapping_add(x))
}

fn bcond_expect(a: u64, b: u64) -> u64 {
    let (d, borrow) = a.overflowing_sub(b);
    let (z, n, c) = (d == 0, (d as i64) < 0, !borrow);
    let v = ((a ^ b) & (a ^ d)) >> 63 == 1;
    // eq ne hs lo mi pl vs vc hi ls ge lt gt le: a marker runs when not taken.
    let taken = [
        z,
        !z,
        c,
        !c,
        n,
        !n,
        v,
        !v,
        c && !z,
        !(c && !z),
        n == v,
        n != v,
        !z && n == v,
        !(!z && n == v),
    ];
    let mut m = taken
        .iter()
        .enumerate()
        .filter(|(_, &t)| !t)
        .fold(0, |m, (i, _)| m | 1 << i);
    m |= if z { 0x8000 } else { 0x4000 };
    m
}

fn cbz_expect(a: u64, _: u64) -> u64 {
    let (x, w) = (a != 0, a as u32 != 0);
    [x, !x, w, !w, x, !x, !w, w]
        .iter()
        .enumerate()
        .fold(0, |m, (i, &on)| m | (on as u64) << i)
}

fn tbz_expect(a: u64, _: u64) -> u64 {
    let bit = |n: u32| a >> n & 1 != 0;
    [bit(0), !bit(0), bit(63), !bit(63), bit(31), !bit(5), bit(40), !bit(40)]
        .iter()
        .enumerate()
        .fold(0, |m, (i, &on)| m | (on as u64) << i)
}

fn adr_expect(a: u64, _: u64) -> u64 {
    let (text, rodata) = asm_tests::adrp_targets();
    sum(&[a, 0x1111_1111_1111_1111, 0x2222_2222_2222_2222, (rodata - text) as u64])
}

fn ldr_literal_expect(a: u64, _: u64) -> u64 {
    sum(&[
        a ^ 0x0123_4567_89ab_cdef,
        0xffff_ffff_8000_0001,
        0xfedc_ba98,
        0x1122_3344_5566_7788,
        0x7fff_fffe,
    ])
}

fn stack_pair_expect(a: u64, b: u64) -> u64 {
    sum(&[
        b,
        a.wrapping_mul(2),
        a.wrapping_mul(4),
        b.wrapping_mul(8),
        a as u32 as u64,
        b as u32 as u64,
        a as i32 as i64 as u64,
        b as i32 as i64 as u64,
    ])
}

fn alu_expect(a: u64, b: u64) -> u64 {
    let x2 = a.wrapping_add(b);
    let x3 = if (a as i64) < (b as i64) { a.wrapping_sub(b) } else { x2 };
    let x4 = a.wrapping_mul(b);
    let x5 = a | 1;
    let (s, carry) = a.overflowing_add(b);
    let x1 = s.wrapping_add(carry as u64);
    let terms = [
        x2,
        x3,
        x4,
        x5,
        a / x5,
        a & b,
        a ^ b.rotate_right(7),
        a << 3,
        b >> 5,
        ((b as i64) >> 9) as u64,
        x4.wrapping_add(x2),
        0x1234_5678,
        !a,
        b.wrapping_neg(),
        a.leading_zeros() as u64,
        b.swap_bytes(),
    ];
    // add, eor, add, eor, ... starting from x1.
    terms.iter().enumerate().fold(
        x1,
        |acc, (i, &t)| if i % 2 == 0 { acc.wrapping_add(t) } else { acc ^ t },
    )
}

fn ldst_expect(v: u64, _: u64) -> u64 {
    sum(&[
        v as u8 as u64,
        v as u8 as i8 as i64 as u64,
        v as u8 as i8 as i32 as u32 as u64,
        v as u16 as u64,
        v as u16 as i16 as i64 as u64,
        v as u16 as i16 as i32 as u32 as u64,
        v as u32 as u64,
        v as u32 as i32 as i64 as u64,
        v,
        v,
        v,
        (v & 0x00ff_ffff_ffff_ffff) | (v & 0xff) << 56,
    ])
}

const PAIRS: &[(u64, u64)] = &[
    (1, 1),
    (1, 2),
    (2, 1),
    (i64::MIN as u64, 1),
    (u64::MAX, 0),
    (0, u64::MAX),
    (5, i64::MIN as u64),
    (0x7fff_ffff_ffff_ffff, u64::MAX),
];
const ONES: &[(u64, u64)] = &[
    (0, 0),
    (1, 0),
    (0x1_0000_0000, 0),
    (0x8000_0000_0000_0020, 0),
    (0x100_0000_0001, 0),
];
const VALUES: &[(u64, u64)] = &[
    (0, 0),
    (0x8182_8384_8586_8788, 3),
    (0x0102_0304_0506_0708, 0xffff_ffff_ffff_fff0),
    (u64::MAX, 7),
];

#[kernel_test]
fn probe_on_every_insn_of_b_forward_and_backward() {
    check_every_instruction(&Case {
        sym: "ktest_insn_b",
        call: asm_tests::b,
        expect: |a, _| (a << 16).wrapping_add(6),
        known_bits: u64::MAX,
        args: &[(0, 0), (3, 0), (0xffff, 0)],
        markers: 4,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_bl_to_another_function_and_a_local_helper() {
    check_every_instruction(&Case {
        sym: "ktest_insn_bl",
        call: asm_tests::bl,
        expect: |a, _| a.wrapping_add(7).wrapping_mul(2),
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
    check_every_instruction(&Case {
        sym: "ktest_insn_bl_callee",
        call: asm_tests::bl_callee,
        expect: |a, _| a.wrapping_add(7),
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_bcond_taken_and_not_taken() {
    check_every_instruction(&Case {
        sym: "ktest_insn_bcond",
        call: asm_tests::bcond,
        expect: bcond_expect,
        known_bits: u64::MAX,
        args: PAIRS,
        markers: 16,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_cbz_cbnz_32_and_64_taken_and_not_taken() {
    check_every_instruction(&Case {
        sym: "ktest_insn_cbz",
        call: asm_tests::cbz,
        expect: cbz_expect,
        known_bits: u64::MAX,
        args: ONES,
        markers: 8,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_tbz_tbnz_taken_and_not_taken() {
    check_every_instruction(&Case {
        sym: "ktest_insn_tbz",
        call: asm_tests::tbz,
        expect: tbz_expect,
        known_bits: u64::MAX,
        args: &[
            (0, 0),
            (1, 0),
            (1 << 63, 0),
            (0x8000_0020, 0),
            (1 << 40 | 1, 0),
            (u64::MAX, 0),
        ],
        markers: 8,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_br_blr_and_ret_through_another_register() {
    check_every_instruction(&Case {
        sym: "ktest_insn_br",
        call: asm_tests::br,
        expect: |a, _| if a == 0 { 6 } else { 4 },
        known_bits: u64::MAX,
        args: &[(0, 0), (1, 0), (u64::MAX, 0)],
        markers: 3,
    });
    check_every_instruction(&Case {
        sym: "ktest_insn_blr",
        call: asm_tests::blr,
        expect: |a, _| a.wrapping_add(10),
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
    check_every_instruction(&Case {
        sym: "ktest_insn_ret",
        call: asm_tests::ret,
        expect: |a, _| a.wrapping_add(5),
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_adr_adrp_backward_and_forward() {
    check_every_instruction(&Case {
        sym: "ktest_insn_adr",
        call: asm_tests::adr,
        expect: adr_expect,
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_ldr_and_ldrsw_literal_backward_and_forward() {
    check_every_instruction(&Case {
        sym: "ktest_insn_ldr_literal",
        call: asm_tests::ldr_literal,
        expect: ldr_literal_expect,
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_stack_pair_pre_and_post_index() {
    check_every_instruction(&Case {
        sym: "ktest_insn_stack_pair",
        call: asm_tests::stack_pair,
        expect: stack_pair_expect,
        known_bits: u64::MAX,
        args: PAIRS,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_alu_keeps_flags_and_results() {
    check_every_instruction(&Case {
        sym: "ktest_insn_alu",
        call: asm_tests::alu,
        expect: alu_expect,
        known_bits: u64::MAX,
        args: PAIRS,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_loads_and_stores_of_every_size() {
    check_every_instruction(&Case {
        sym: "ktest_insn_ldst",
        call: asm_tests::ldst,
        expect: ldst_expect,
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_mrs_nzcv_reads_the_probed_codes_flags() {
    check_every_instruction(&Case {
        sym: "ktest_insn_mrs_nzcv",
        call: asm_tests::mrs_nzcv,
        expect: |a, b| {
            let (d, borrow) = a.overflowing_sub(b);
            let v = ((a ^ b) & (a ^ d)) >> 63;
            ((d >> 63) << 31) | (u64::from(d == 0) << 30) | (u64::from(!borrow) << 29) | (v << 28)
        },
        known_bits: u64::MAX,
        args: PAIRS,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_nop() {
    check_every_instruction(&Case {
        sym: "ktest_insn_nop",
        call: asm_tests::nop,
        expect: |a, _| a.wrapping_add(1),
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
}

#[kernel_test]
fn probe_on_every_insn_of_nested_frames_using_x30_and_sp() {
    check_every_instruction(&Case {
        sym: "ktest_insn_frame",
        call: asm_tests::frame,
        expect: |a, _| a.wrapping_add(8).wrapping_mul(2).wrapping_add(a),
        known_bits: u64::MAX,
        args: VALUES,
        markers: 0,
    });
}

#[kernel_test]
fn probes_on_instructions_that_cannot_run_elsewhere_are_refused() {
    let (start, size) = function("ktest_insn_rejected");
    let orig = instructions(start, size);
    assert_eq!(orig.len(), 13);
    for (i, &insn) in orig.iter().enumerate() {
        let addr = start + 4 * i;
        let kp = Arc::new(Kprobe::at(addr).pre(|_, _| 0));
        assert_eq!(
            register_kprobe(&kp),
            Err(Errno::EINVAL),
            "ktest_insn_rejected+{:#x} ({insn:#010x}) accepted",
            4 * i
        );
        assert_eq!(read_insn(addr), Some(insn));
        // Everything but the ADD between LDXR and STXR is refused for what
        // it is; the ADD only for where it is.
        let rejected = matches!(insn::probes::classify(insn), insn::probes::Class::Rejected(_));
        assert_eq!(rejected, insn != 0x9100_0421, "{insn:#010x}");
    }
}

#[kernel_test]
fn two_probes_at_one_address_both_run_and_disable_separately() {
    let (start, _) = function("ktest_insn_nop");
    let addr = start + 4; // add x0, x0, #1: stepped
    let orig = read_insn(addr).unwrap();
    let (c1, c2) = (Arc::new(Counts::default()), Arc::new(Counts::default()));
    let (p1, p2) = (counted_probe(addr, &c1), counted_probe(addr, &c2));
    register_kprobes(&[p1.clone(), p2.clone()]).unwrap();
    let hits = |n: u64| {
        assert_eq!(asm_tests::nop(n, 0), n + 1);
        (
            c1.pre.load(SeqCst),
            c2.pre.load(SeqCst),
            c1.post.load(SeqCst),
            c2.post.load(SeqCst),
        )
    };
    let brk = Some(brk_insn(KPROBES_BRK_IMM));
    assert_eq!(hits(1), (1, 1, 1, 1));
    disable_kprobe(&p1).unwrap();
    assert_eq!(read_insn(addr), brk, "one probe still enabled");
    assert_eq!(hits(2), (1, 2, 1, 2));
    disable_kprobe(&p2).unwrap();
    assert_eq!(read_insn(addr), Some(orig), "no probe enabled");
    assert_eq!(hits(3), (1, 2, 1, 2));
    enable_kprobe(&p1).unwrap();
    assert_eq!(read_insn(addr), brk);
    assert_eq!(hits(4), (2, 2, 2, 2));
    unregister_kprobe(&p1);
    assert_eq!(read_insn(addr), Some(orig), "the remaining probe is disabled");
    enable_kprobe(&p2).unwrap();
    assert_eq!(hits(5), (2, 3, 2, 3));
    unregister_kprobe(&p2);
    assert_eq!(read_insn(addr), Some(orig));
    assert_eq!(enable_kprobe(&p2), Err(Errno::EINVAL), "enable after unregister");
    assert_eq!((c1.bad.load(SeqCst), c2.bad.load(SeqCst)), (0, 0));
}

// ------------------------------------------------------------ kretprobes

/// Values a handler saw, in order.
struct Log {
    vals: [AtomicU64; 64],
    n: AtomicUsize,
    /// Non-zero: something a handler found wrong.
    bad: AtomicU64,
}

impl Log {
    fn new() -> Arc<Log> {
        Arc::new(Log {
            vals: [const { AtomicU64::new(0) }; 64],
            n: AtomicUsize::new(0),
            bad: AtomicU64::new(0),
        })
    }
    fn push(&self, v: u64) {
        let i = self.n.fetch_add(1, SeqCst);
        if i < self.vals.len() {
            self.vals[i].store(v, SeqCst);
        }
    }
    fn get(&self) -> Vec<u64> {
        let n = self.n.load(SeqCst).min(self.vals.len());
        self.vals[..n].iter().map(|v| v.load(SeqCst)).collect()
    }
    fn fail(&self, code: u64) {
        let _ = self.bad.compare_exchange(0, code, SeqCst, SeqCst);
    }
}

/// A kretprobe target. Exported under a plain name: `kernel::kprobes::*`
/// paths are blacklisted.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kretprobe_value(a: u64) -> u64 {
    black_box(a.wrapping_mul(a).wrapping_add(1))
}

/// Recursive: `n + (n - 1) + ... + 1`, one call per level.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kretprobe_recurse(n: u64) -> u64 {
    if n <= 1 {
        return black_box(1);
    }
    n + black_box(ktest_kretprobe_recurse(black_box(n - 1)))
}

#[kernel_test]
fn kretprobe_handler_sees_each_return_value() {
    let log = Log::new();
    let l = log.clone();
    let rp = Arc::new(Kretprobe::symbol("ktest_kretprobe_value").handler(move |_, regs| {
        l.push(regs.regs[0]);
        0
    }));
    register_kretprobe(&rp).unwrap();
    let args = [0u64, 1, 7, 1 << 32, u64::MAX];
    for a in args {
        assert_eq!(ktest_kretprobe_value(black_box(a)), a.wrapping_mul(a).wrapping_add(1));
    }
    unregister_kretprobe(&rp);
    assert_eq!(ktest_kretprobe_value(black_box(3)), 10);
    let want: Vec<u64> = args.iter().map(|a| a.wrapping_mul(*a).wrapping_add(1)).collect();
    assert_eq!(log.get(), want);
    assert_eq!(rp.nmissed(), 0);
}

#[kernel_test]
fn kretprobe_on_functions_that_keep_x30_on_their_stack() {
    for (sym, call, f) in [
        (
            "ktest_insn_frame",
            asm_tests::frame as fn(u64, u64) -> u64,
            (|a: u64| a.wrapping_add(8).wrapping_mul(2).wrapping_add(a)) as fn(u64) -> u64,
        ),
        ("ktest_insn_bl", asm_tests::bl, |a| a.wrapping_add(7).wrapping_mul(2)),
        ("ktest_insn_ret", asm_tests::ret, |a| a.wrapping_add(5)),
    ] {
        let log = Log::new();
        let l = log.clone();
        let rp = Arc::new(Kretprobe::symbol(sym).handler(move |_, regs| {
            l.push(regs.regs[0]);
            0
        }));
        register_kretprobe(&rp).unwrap();
        for a in [0, 9, u64::MAX] {
            assert_eq!(call(a, 0), f(a), "{sym}({a})");
        }
        unregister_kretprobe(&rp);
        assert_eq!(log.get(), [f(0), f(9), f(u64::MAX)], "{sym}");
    }
}

#[kernel_test]
fn kretprobe_recursion_deeper_than_maxactive_counts_the_rest_missed() {
    let log = Log::new();
    let l = log.clone();
    let rp = Arc::new(
        Kretprobe::symbol("ktest_kretprobe_recurse")
            .maxactive(5)
            .handler(move |_, regs| {
                l.push(regs.regs[0]);
                0
            }),
    );
    register_kretprobe(&rp).unwrap();
    assert_eq!(ktest_kretprobe_recurse(black_box(20)), 210);
    unregister_kretprobe(&rp);
    // The five outermost calls (n = 20..16) had instances; the innermost of
    // them returns first.
    let want: Vec<u64> = (16..=20).map(|n| n * (n + 1) / 2).collect();
    assert_eq!(log.get(), want);
    assert_eq!(rp.nmissed(), 15);
}

#[kernel_test]
fn kretprobe_entry_handler_returning_nonzero_skips_the_return_handler() {
    let log = Log::new();
    let l = log.clone();
    let entries = Arc::new(AtomicUsize::new(0));
    let e = entries.clone();
    let rp = Arc::new(
        Kretprobe::symbol("ktest_kretprobe_value")
            .maxactive(2)
            .entry_handler(move |_, regs| {
                e.fetch_add(1, SeqCst);
                (regs.regs[0] % 2) as i32
            })
            .handler(move |_, regs| {
                l.push(regs.regs[0]);
                0
            }),
    );
    register_kretprobe(&rp).unwrap();
    for a in 0..10u64 {
        assert_eq!(ktest_kretprobe_value(black_box(a)), a * a + 1);
    }
    unregister_kretprobe(&rp);
    assert_eq!(entries.load(SeqCst), 10);
    let want: Vec<u64> = (0..10).filter(|a| a % 2 == 0).map(|a| a * a + 1).collect();
    assert_eq!(log.get(), want);
    // Skipped calls gave their instance back: ten calls, two instances.
    assert_eq!(rp.nmissed(), 0);
}

#[kernel_test]
fn kretprobe_data_is_private_to_each_instance() {
    let log = Log::new();
    let l = log.clone();
    let rp = Arc::new(
        Kretprobe::symbol("ktest_kretprobe_recurse")
            .maxactive(10)
            .data_size(16)
            .entry_handler(|ri, regs| {
                let n = regs.regs[0];
                ri.data[..8].copy_from_slice(&n.to_le_bytes());
                ri.data[8..].copy_from_slice(&(!n).to_le_bytes());
                0
            })
            .handler(move |ri, regs| {
                if ri.data.len() != 16 {
                    l.fail(1);
                    return 0;
                }
                let n = u64::from_le_bytes(ri.data[..8].try_into().unwrap());
                let m = u64::from_le_bytes(ri.data[8..].try_into().unwrap());
                if m != !n {
                    l.fail(2);
                }
                if regs.regs[0] != n * (n + 1) / 2 {
                    l.fail(3);
                }
                l.push(n);
                0
            }),
    );
    register_kretprobe(&rp).unwrap();
    assert_eq!(ktest_kretprobe_recurse(black_box(6)), 21);
    unregister_kretprobe(&rp);
    assert_eq!(log.bad.load(SeqCst), 0);
    assert_eq!(log.get(), [1, 2, 3, 4, 5, 6]);
    assert_eq!(rp.nmissed(), 0);
}

/// Sleeps, yields, and records the CPU before and after.
#[inline(never)]
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn ktest_kretprobe_sleeper(tag: u64) -> u64 {
    let before = arch::cpu::cpu_id();
    crate::sched::wait::sleep_ns(1_000_000).unwrap();
    crate::sched::yield_now();
    let after = arch::cpu::cpu_id();
    SLEEPER_CPUS[tag as usize % SLEEPER_CPUS.len()].store((before << 8 | after) as u64, SeqCst);
    black_box(tag * 3)
}

static SLEEPER_CPUS: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
static SLEEPER_CALLS: AtomicUsize = AtomicUsize::new(0);
static SLEEPER_MIGRATIONS: AtomicUsize = AtomicUsize::new(0);
static SLEEPER_BAD: AtomicU64 = AtomicU64::new(0);
static SLEEPER_DONE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
static BUSY_EXITED: AtomicUsize = AtomicUsize::new(0);

extern "C" fn sleeper_thread(_: usize) {
    let smp = crate::smp::num_online_cpus() > 1;
    for tag in 0..SLEEPER_CPUS.len() as u64 {
        let r = ktest_kretprobe_sleeper(black_box(tag));
        if r != tag * 3 {
            let _ = SLEEPER_BAD.compare_exchange(0, 1 << 32 | tag, SeqCst, SeqCst);
        }
        let cpus = SLEEPER_CPUS[tag as usize].load(SeqCst);
        if cpus >> 8 != cpus & 0xff {
            SLEEPER_MIGRATIONS.fetch_add(1, SeqCst);
        }
        let calls = SLEEPER_CALLS.fetch_add(1, SeqCst) + 1;
        if calls >= 10 && (!smp || SLEEPER_MIGRATIONS.load(SeqCst) > 0) {
            break;
        }
    }
    SLEEPER_DONE.store(true, SeqCst);
}

extern "C" fn busy_thread(_: usize) {
    while !SLEEPER_DONE.load(SeqCst) {
        crate::time::udelay(50);
        crate::sched::yield_now();
    }
    BUSY_EXITED.fetch_add(1, SeqCst);
}

#[kernel_test]
fn kretprobe_on_a_function_that_sleeps_and_migrates_returns_correctly() {
    for c in &SLEEPER_CPUS {
        c.store(0, SeqCst);
    }
    SLEEPER_CALLS.store(0, SeqCst);
    SLEEPER_MIGRATIONS.store(0, SeqCst);
    SLEEPER_BAD.store(0, SeqCst);
    SLEEPER_DONE.store(false, SeqCst);
    BUSY_EXITED.store(0, SeqCst);
    // The handler records the return value and the CPU it runs on.
    let log = Log::new();
    let l = log.clone();
    let rp = Arc::new(Kretprobe::symbol("ktest_kretprobe_sleeper").handler(move |_, regs| {
        l.push(regs.regs[0] << 8 | arch::cpu::cpu_id() as u64);
        0
    }));
    register_kretprobe(&rp).unwrap();
    let ncpus = crate::smp::num_online_cpus();
    // Other CPUs kept busy by threads that yield: the sleeper wakes up on
    // whichever CPU schedules next.
    let busy = if ncpus > 1 { ncpus } else { 0 };
    let mut threads: Vec<Arc<crate::sched::Task>> = (0..busy)
        .map(|i| crate::sched::Task::new_kthread(busy_thread, i, "kprobe-busy").unwrap())
        .collect();
    threads.push(crate::sched::Task::new_kthread(sleeper_thread, 0, "kprobe-sleeper").unwrap());
    for t in threads.iter().rev() {
        crate::sched::wake_up(t);
    }
    let deadline = crate::time::ktime_get_ns() + 20_000_000_000;
    while !SLEEPER_DONE.load(SeqCst) || BUSY_EXITED.load(SeqCst) < busy {
        assert!(crate::time::ktime_get_ns() < deadline, "sleeper stuck");
        crate::sched::wait::sleep_ns(1_000_000).unwrap();
    }
    unregister_kretprobe(&rp);
    drop(threads);
    assert_eq!(SLEEPER_BAD.load(SeqCst), 0, "a call returned a wrong value");
    let calls = SLEEPER_CALLS.load(SeqCst);
    let seen = log.get();
    assert_eq!(seen.len(), calls, "return handler runs per call");
    for (tag, v) in seen.iter().enumerate() {
        assert_eq!(v >> 8, tag as u64 * 3, "return value seen by the handler");
        let after = SLEEPER_CPUS[tag].load(SeqCst) & 0xff;
        assert_eq!(
            v & 0xff,
            after,
            "call {tag}: handler ran on another CPU than the return"
        );
    }
    assert_eq!(rp.nmissed(), 0);
    let migrations = SLEEPER_MIGRATIONS.load(SeqCst);
    if ncpus > 1 {
        assert!(migrations > 0, "no migration in {calls} calls");
    } else {
        crate::pr_info!("kprobes: kretprobe migration check skipped: 1 CPU online");
    }
}

// --------------------------------------------------------- SMP stress test
//
// Exact accounting. Each caller makes every call with interrupts masked
// and, inside that masked region, (1) reads the instruction at each probed
// address, (2) notes its CPU's handler counters, (3) calls, (4) compares
// the counters. A probe's instruction changes only inside stop_machine,
// which cannot start while a caller has interrupts masked (every other CPU
// must take the IPI and park first), so the bytes read in (1) are the bytes
// executed in (3): "armed" for that call means the BRK was there. The
// kprobes core arms a site only once its probe is registered and enabled
// and disarms it before the probe stops being handled (as Linux's
// `__disable_kprobe`), so a call runs the handlers of a site exactly when
// its BRK was there. The caller checks that per call (the handlers count
// per CPU, and the call stayed on one CPU) and counts armed calls per site;
// at the end the handlers' totals must equal those counts exactly. Sites
// here have one probe each: with two, one could be disabled while the
// other keeps the BRK in place, and no caller could tell.

const STRESS_SITES: usize = 8;
const STRESS_CALLERS: usize = 3;
const NR_CPUS: usize = crate::percpu::NR_CPUS;

static STRESS_ADDR: [AtomicUsize; STRESS_SITES] = [const { AtomicUsize::new(0) }; STRESS_SITES];
static STRESS_STOP: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
static STRESS_EXITED: AtomicUsize = AtomicUsize::new(0);
static STRESS_CALLS: AtomicU64 = AtomicU64::new(0);
static STRESS_ARMED_CALLS: [AtomicU64; STRESS_SITES] = [const { AtomicU64::new(0) }; STRESS_SITES];
static STRESS_PRE: [AtomicU64; STRESS_SITES] = [const { AtomicU64::new(0) }; STRESS_SITES];
static STRESS_POST: [AtomicU64; STRESS_SITES] = [const { AtomicU64::new(0) }; STRESS_SITES];
static STRESS_PRE_CPU: [[AtomicU64; STRESS_SITES]; NR_CPUS] =
    [const { [const { AtomicU64::new(0) }; STRESS_SITES] }; NR_CPUS];
static STRESS_POST_CPU: [[AtomicU64; STRESS_SITES]; NR_CPUS] =
    [const { [const { AtomicU64::new(0) }; STRESS_SITES] }; NR_CPUS];
/// The first failure a caller or handler saw, as text for the assertion.
static STRESS_FAIL: spin::Once<alloc::string::String> = spin::Once::new();

fn stress_fail(f: impl FnOnce() -> alloc::string::String) {
    STRESS_FAIL.call_once(f);
}

extern "C" fn stress_caller(id: usize) {
    let brk = Some(brk_insn(KPROBES_BRK_IMM));
    let addrs: [usize; STRESS_SITES] = core::array::from_fn(|i| STRESS_ADDR[i].load(SeqCst));
    let mut n = id as u64 * 1_000_000_000;
    while !STRESS_STOP.load(SeqCst) {
        let flags = arch::cpu::local_irq_save();
        let cpu = arch::cpu::cpu_id();
        let armed: [bool; STRESS_SITES] = core::array::from_fn(|i| read_insn(addrs[i]) == brk);
        let pre0: [u64; STRESS_SITES] = core::array::from_fn(|i| STRESS_PRE_CPU[cpu][i].load(SeqCst));
        let post0: [u64; STRESS_SITES] = core::array::from_fn(|i| STRESS_POST_CPU[cpu][i].load(SeqCst));
        let r = asm_tests::stress(n, 0);
        for i in 0..STRESS_SITES {
            let dpre = STRESS_PRE_CPU[cpu][i].load(SeqCst) - pre0[i];
            let dpost = STRESS_POST_CPU[cpu][i].load(SeqCst) - post0[i];
            if dpre != armed[i] as u64 || dpost != armed[i] as u64 {
                stress_fail(|| {
                    alloc::format!(
                        "site {i}: armed {} but pre ran {dpre} and post {dpost} times in one call",
                        armed[i]
                    )
                });
            }
            if armed[i] {
                STRESS_ARMED_CALLS[i].fetch_add(1, SeqCst);
            }
        }
        arch::cpu::local_irq_restore(flags);
        if r != 2 * (n + 1) {
            stress_fail(|| alloc::format!("ktest_insn_stress({n}) returned {r}"));
        }
        STRESS_CALLS.fetch_add(1, SeqCst);
        n += 1;
        crate::sched::cond_resched();
    }
    STRESS_EXITED.fetch_add(1, SeqCst);
}

fn stress_probe(i: usize) -> Arc<Kprobe> {
    Arc::new(
        Kprobe::at(STRESS_ADDR[i].load(SeqCst))
            .pre(move |kp, regs| {
                if regs.pc as usize != kp.addr() {
                    stress_fail(|| alloc::format!("site {i}: pre-handler at pc {:#x}", regs.pc));
                }
                STRESS_PRE[i].fetch_add(1, SeqCst);
                STRESS_PRE_CPU[arch::cpu::cpu_id()][i].fetch_add(1, SeqCst);
                0
            })
            .post(move |_, _| {
                STRESS_POST[i].fetch_add(1, SeqCst);
                STRESS_POST_CPU[arch::cpu::cpu_id()][i].fetch_add(1, SeqCst);
            }),
    )
}

#[derive(Clone)]
enum SiteState {
    Unregistered,
    Enabled(Arc<Kprobe>),
    Disabled(Arc<Kprobe>),
}

#[kernel_test]
fn smp_stress_arming_while_three_cpus_call_loses_nothing_and_counts_every_hit() {
    let ncpus = crate::smp::num_online_cpus();
    if ncpus < 4 {
        crate::pr_info!("kprobes stress: skipped: {ncpus} CPU(s) online, it needs 4");
        return;
    }
    let (start, size) = function("ktest_insn_stress");
    assert_eq!(size, 4 * STRESS_SITES);
    let orig = instructions(start, size);
    for i in 0..STRESS_SITES {
        STRESS_ADDR[i].store(start + 4 * i, SeqCst);
        STRESS_ARMED_CALLS[i].store(0, SeqCst);
        STRESS_PRE[i].store(0, SeqCst);
        STRESS_POST[i].store(0, SeqCst);
    }
    STRESS_STOP.store(false, SeqCst);
    STRESS_EXITED.store(0, SeqCst);
    STRESS_CALLS.store(0, SeqCst);
    let callers: Vec<Arc<crate::sched::Task>> = (0..STRESS_CALLERS)
        .map(|i| crate::sched::Task::new_kthread(stress_caller, i, "kprobe-stress").unwrap())
        .collect();
    for t in &callers {
        crate::sched::wake_up(t);
    }
    let brk = Some(brk_insn(KPROBES_BRK_IMM));
    let mut state: [SiteState; STRESS_SITES] = core::array::from_fn(|_| SiteState::Unregistered);
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut ops = 0u64;
    let t0 = crate::time::ktime_get_ns();
    while crate::time::ktime_get_ns() - t0 < 10_000_000_000 {
        let r = next();
        let i = (r % STRESS_SITES as u64) as usize;
        if r >> 8 & 15 == 0 {
            // Now and then, a batch: every unregistered site at once.
            let idle: Vec<usize> = (0..STRESS_SITES)
                .filter(|&j| matches!(state[j], SiteState::Unregistered))
                .collect();
            let kps: Vec<Arc<Kprobe>> = idle.iter().map(|&j| stress_probe(j)).collect();
            register_kprobes(&kps).unwrap();
            for (&j, kp) in idle.iter().zip(kps) {
                state[j] = SiteState::Enabled(kp);
            }
        } else {
            let coin = r >> 16 & 1 == 0;
            state[i] = match state[i].clone() {
                SiteState::Unregistered => {
                    let kp = stress_probe(i);
                    register_kprobe(&kp).unwrap();
                    SiteState::Enabled(kp)
                }
                SiteState::Enabled(kp) if coin => {
                    disable_kprobe(&kp).unwrap();
                    SiteState::Disabled(kp)
                }
                SiteState::Disabled(kp) if coin => {
                    enable_kprobe(&kp).unwrap();
                    SiteState::Enabled(kp)
                }
                SiteState::Enabled(kp) | SiteState::Disabled(kp) => {
                    unregister_kprobe(&kp);
                    SiteState::Unregistered
                }
            };
        }
        ops += 1;
        for (j, s) in state.iter().enumerate() {
            let want = if matches!(s, SiteState::Enabled(_)) {
                brk
            } else {
                Some(orig[j])
            };
            assert_eq!(read_insn(start + 4 * j), want, "site {j} after operation {ops}");
        }
        // Let the callers run in this state for a while.
        crate::time::udelay(next() % 400);
    }
    STRESS_STOP.store(true, SeqCst);
    let deadline = crate::time::ktime_get_ns() + 5_000_000_000;
    while STRESS_EXITED.load(SeqCst) < STRESS_CALLERS {
        assert!(crate::time::ktime_get_ns() < deadline, "stress callers did not stop");
        crate::sched::wait::sleep_ns(1_000_000).unwrap();
    }
    for s in &state {
        if let SiteState::Enabled(kp) | SiteState::Disabled(kp) = s {
            unregister_kprobe(kp);
        }
    }
    drop(callers);
    if let Some(f) = STRESS_FAIL.get() {
        panic!("kprobes stress: {f}");
    }
    assert_eq!(instructions(start, size), orig, "instructions changed");
    let calls = STRESS_CALLS.load(SeqCst);
    let mut armed_total = 0;
    for i in 0..STRESS_SITES {
        let armed = STRESS_ARMED_CALLS[i].load(SeqCst);
        assert_eq!(
            STRESS_PRE[i].load(SeqCst),
            armed,
            "site {i}: pre-handler runs vs armed calls"
        );
        assert_eq!(
            STRESS_POST[i].load(SeqCst),
            armed,
            "site {i}: post-handler runs vs armed calls"
        );
        assert!(armed > 0 && armed < calls, "site {i}: {armed} armed calls of {calls}");
        armed_total += armed;
    }
    crate::pr_info!(
        "kprobes stress: {calls} calls on {STRESS_CALLERS} CPUs, {armed_total} probe hits, {ops} operations, all counted"
    );
}
