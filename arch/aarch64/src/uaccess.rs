//! Access to user memory from the kernel (Linux's uaccess): every access is
//! an unprivileged load or store (`LDTR*`/`STTR*`), so it is checked
//! against EL0's permissions, and every one has an exception-table entry,
//! so a bad pointer yields `Err(Fault)` (EFAULT), never an oops. Addresses
//! are range-checked against the user half first.

use crate::nofault::Fault;

/// End of the user address range (48-bit TTBR0 half).
pub const TASK_SIZE: u64 = 1 << 48;

/// Whether `[ptr, ptr + len)` lies in the user range (an empty range may
/// end at `TASK_SIZE`, as on Linux).
pub fn access_ok(ptr: UserPtr, len: usize) -> bool {
    ptr.addr().checked_add(len as u64).is_some_and(|end| end <= TASK_SIZE)
}

use crate::addr::{UserPtr, UserVirtAddr};
use crate::nofault::{fallible_load, fallible_store};
use core::mem::MaybeUninit;

fallible_load!(#[inline(always)] fn ldtrb, "ldtrb", "{val:w}");
fallible_load!(#[inline(always)] fn ldtr_x, "ldtr", "{val}");
fallible_store!(#[inline(always)] unsafe fn sttrb_raw, "sttrb", "{val:w}");

/// An unprivileged byte store: EL0's permissions apply, so it cannot
/// change memory the user could not.
fn sttrb(addr: u64, val: u64) -> Result<(), Fault> {
    // SAFETY: STTRB is checked against EL0's permissions, and callers only
    // pass user addresses (access_ok).
    unsafe { sttrb_raw(addr, val) }
}

// The bulk copies (Linux's copy_template.S for __arch_copy_to_user and
// __arch_copy_from_user): x0 the destination, x1 the source, x2 the count;
// they return in x0 the count not copied. The kernel side moves 16 bytes
// per LDP/STP; the user side has no pair form of its unprivileged
// accesses, so each pair is two LDTR/STTR. 64 bytes a round, then 8, then
// single bytes; copies to user memory first go 256 bytes a round (fewer
// loop instructions per byte, for a 4 KiB process_vm_readv's copy: 848
// instructions against 928 at 128 a round; STTR's 9-bit offset reaches
// 255). The pointers and the count advance only after a whole round, so a fault
// anywhere in it resumes (through __ex_table) at the round's start in the
// byte loop, which copies up to the exact first byte EL0 cannot reach; a
// fault there returns what is left. Neither touches the stack nor any
// register but x0-x10.
core::arch::global_asm!(
    r#"
.section .text
.global __arch_copy_to_user
.type __arch_copy_to_user, %function
.balign 16
__arch_copy_to_user:
    cmp     x2, #256
    b.lo    6f
7:
    ldp     x3, x4, [x1]
    ldp     x5, x6, [x1, #16]
    ldp     x7, x8, [x1, #32]
    ldp     x9, x10, [x1, #48]
40: sttr    x3, [x0]
41: sttr    x4, [x0, #8]
42: sttr    x5, [x0, #16]
43: sttr    x6, [x0, #24]
44: sttr    x7, [x0, #32]
45: sttr    x8, [x0, #40]
46: sttr    x9, [x0, #48]
47: sttr    x10, [x0, #56]
    ldp     x3, x4, [x1, #64]
    ldp     x5, x6, [x1, #80]
    ldp     x7, x8, [x1, #96]
    ldp     x9, x10, [x1, #112]
50: sttr    x3, [x0, #64]
51: sttr    x4, [x0, #72]
52: sttr    x5, [x0, #80]
53: sttr    x6, [x0, #88]
54: sttr    x7, [x0, #96]
55: sttr    x8, [x0, #104]
56: sttr    x9, [x0, #112]
57: sttr    x10, [x0, #120]
    ldp     x3, x4, [x1, #128]
    ldp     x5, x6, [x1, #144]
    ldp     x7, x8, [x1, #160]
    ldp     x9, x10, [x1, #176]
60: sttr    x3, [x0, #128]
61: sttr    x4, [x0, #136]
62: sttr    x5, [x0, #144]
63: sttr    x6, [x0, #152]
64: sttr    x7, [x0, #160]
65: sttr    x8, [x0, #168]
66: sttr    x9, [x0, #176]
67: sttr    x10, [x0, #184]
    ldp     x3, x4, [x1, #192]
    ldp     x5, x6, [x1, #208]
    ldp     x7, x8, [x1, #224]
    ldp     x9, x10, [x1, #240]
70: sttr    x3, [x0, #192]
71: sttr    x4, [x0, #200]
72: sttr    x5, [x0, #208]
73: sttr    x6, [x0, #216]
74: sttr    x7, [x0, #224]
75: sttr    x8, [x0, #232]
76: sttr    x9, [x0, #240]
77: sttr    x10, [x0, #248]
    add     x0, x0, #256
    add     x1, x1, #256
    sub     x2, x2, #256
    cmp     x2, #256
    b.hs    7b
6:  cmp     x2, #64
    b.lo    2f
1:  ldp     x3, x4, [x1]
    ldp     x5, x6, [x1, #16]
    ldp     x7, x8, [x1, #32]
    ldp     x9, x10, [x1, #48]
10: sttr    x3, [x0]
11: sttr    x4, [x0, #8]
12: sttr    x5, [x0, #16]
13: sttr    x6, [x0, #24]
14: sttr    x7, [x0, #32]
15: sttr    x8, [x0, #40]
16: sttr    x9, [x0, #48]
17: sttr    x10, [x0, #56]
    add     x0, x0, #64
    add     x1, x1, #64
    sub     x2, x2, #64
    cmp     x2, #64
    b.hs    1b
2:  cmp     x2, #8
    b.lo    3f
    ldr     x3, [x1]
20: sttr    x3, [x0]
    add     x0, x0, #8
    add     x1, x1, #8
    sub     x2, x2, #8
    b       2b
3:  cbz     x2, 5f
4:  ldrb    w3, [x1]
30: sttrb   w3, [x0]
    add     x0, x0, #1
    add     x1, x1, #1
    subs    x2, x2, #1
    b.ne    4b
5:  mov     x0, x2
    ret
9:  b       4b
8:  b       5b
.size __arch_copy_to_user, . - __arch_copy_to_user
.pushsection __ex_table, "a"
.balign 4
.long 10b - .
.long 9b - .
.long 11b - .
.long 9b - .
.long 12b - .
.long 9b - .
.long 13b - .
.long 9b - .
.long 14b - .
.long 9b - .
.long 15b - .
.long 9b - .
.long 16b - .
.long 9b - .
.long 17b - .
.long 9b - .
.long 40b - .
.long 9b - .
.long 41b - .
.long 9b - .
.long 42b - .
.long 9b - .
.long 43b - .
.long 9b - .
.long 44b - .
.long 9b - .
.long 45b - .
.long 9b - .
.long 46b - .
.long 9b - .
.long 47b - .
.long 9b - .
.long 50b - .
.long 9b - .
.long 51b - .
.long 9b - .
.long 52b - .
.long 9b - .
.long 53b - .
.long 9b - .
.long 54b - .
.long 9b - .
.long 55b - .
.long 9b - .
.long 56b - .
.long 9b - .
.long 57b - .
.long 9b - .
.long 60b - .
.long 9b - .
.long 61b - .
.long 9b - .
.long 62b - .
.long 9b - .
.long 63b - .
.long 9b - .
.long 64b - .
.long 9b - .
.long 65b - .
.long 9b - .
.long 66b - .
.long 9b - .
.long 67b - .
.long 9b - .
.long 70b - .
.long 9b - .
.long 71b - .
.long 9b - .
.long 72b - .
.long 9b - .
.long 73b - .
.long 9b - .
.long 74b - .
.long 9b - .
.long 75b - .
.long 9b - .
.long 76b - .
.long 9b - .
.long 77b - .
.long 9b - .
.long 20b - .
.long 9b - .
.long 30b - .
.long 8b - .
.popsection

.global __arch_copy_from_user
.type __arch_copy_from_user, %function
.balign 16
__arch_copy_from_user:
    cmp     x2, #64
    b.lo    2f
1:
10: ldtr    x3, [x1]
11: ldtr    x4, [x1, #8]
12: ldtr    x5, [x1, #16]
13: ldtr    x6, [x1, #24]
14: ldtr    x7, [x1, #32]
15: ldtr    x8, [x1, #40]
16: ldtr    x9, [x1, #48]
17: ldtr    x10, [x1, #56]
    stp     x3, x4, [x0]
    stp     x5, x6, [x0, #16]
    stp     x7, x8, [x0, #32]
    stp     x9, x10, [x0, #48]
    add     x0, x0, #64
    add     x1, x1, #64
    sub     x2, x2, #64
    cmp     x2, #64
    b.hs    1b
2:  cmp     x2, #8
    b.lo    3f
20: ldtr    x3, [x1]
    str     x3, [x0]
    add     x0, x0, #8
    add     x1, x1, #8
    sub     x2, x2, #8
    b       2b
3:  cbz     x2, 5f
4:
30: ldtrb   w3, [x1]
    strb    w3, [x0]
    add     x0, x0, #1
    add     x1, x1, #1
    subs    x2, x2, #1
    b.ne    4b
5:  mov     x0, x2
    ret
9:  b       4b
8:  b       5b
.size __arch_copy_from_user, . - __arch_copy_from_user
.pushsection __ex_table, "a"
.balign 4
.long 10b - .
.long 9b - .
.long 11b - .
.long 9b - .
.long 12b - .
.long 9b - .
.long 13b - .
.long 9b - .
.long 14b - .
.long 9b - .
.long 15b - .
.long 9b - .
.long 16b - .
.long 9b - .
.long 17b - .
.long 9b - .
.long 20b - .
.long 9b - .
.long 30b - .
.long 8b - .
.popsection
"#
);

unsafe extern "C" {
    fn __arch_copy_to_user(to: u64, from: *const u8, n: usize) -> usize;
    fn __arch_copy_from_user(to: *mut u8, from: u64, n: usize) -> usize;
}

/// Copies `src` to user address `dst` as far as EL0 could write it and
/// returns the count not copied (Linux's raw_copy_to_user), exactly: the
/// bytes before the first one EL0 cannot write are all written, none
/// after. A range outside user space copies nothing.
pub fn raw_copy_to_user(dst: UserPtr, src: &[u8]) -> usize {
    if !access_ok(dst, src.len()) {
        return src.len();
    }
    // SAFETY: the source is a readable slice of that length; the
    // destination is in the user half and reached only with STTR/STTRB,
    // which EL0's permissions govern, and whose faults resume through
    // __ex_table; the routine follows the C calling convention.
    unsafe { __arch_copy_to_user(dst.addr(), src.as_ptr(), src.len()) }
}

/// Copies user memory at `src` into `dst` as far as EL0 could read it and
/// returns the count not copied (Linux's raw_copy_from_user), exactly as
/// [`raw_copy_to_user`]; the bytes of `dst` not copied are left as they
/// were.
pub fn raw_copy_from_user(dst: &mut [u8], src: UserPtr) -> usize {
    if !access_ok(src, dst.len()) {
        return dst.len();
    }
    // SAFETY: the destination is a writable slice of that length; the
    // source is in the user half and read only with LDTR/LDTRB (EL0's
    // permissions, faults resumed through __ex_table).
    unsafe { __arch_copy_from_user(dst.as_mut_ptr(), src.addr(), dst.len()) }
}

/// Copies `dst.len()` bytes from user address `src` into memory not yet
/// initialised (a kernel buffer that need not be zeroed first, since every
/// byte is overwritten) and returns it, now initialised.
pub fn copy_from_user_uninit(dst: &mut [MaybeUninit<u8>], src: UserVirtAddr) -> Result<&mut [u8], Fault> {
    if !src.range_ok(dst.len() as u64) {
        return Err(Fault);
    }
    let src = src.as_u64();
    // SAFETY: the destination is a writable buffer of that length (bytes
    // may be written whatever they held); the source is in the user half
    // and read only with LDTR/LDTRB, faults resumed through __ex_table.
    let left = unsafe { __arch_copy_from_user(dst.as_mut_ptr().cast(), src, dst.len()) };
    if left != 0 {
        return Err(Fault);
    }
    // SAFETY: the copy wrote every byte of `dst` (nothing was left), and
    // `u8` has the layout of `MaybeUninit<u8>`.
    Ok(unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) })
}

/// Copies `dst.len()` bytes from user address `src`.
pub fn copy_from_user(dst: &mut [u8], src: UserPtr) -> Result<(), Fault> {
    match raw_copy_from_user(dst, src) {
        0 => Ok(()),
        _ => Err(Fault),
    }
}

/// Copies `src` to user address `dst`.
pub fn copy_to_user(dst: UserPtr, src: &[u8]) -> Result<(), Fault> {
    match raw_copy_to_user(dst, src) {
        0 => Ok(()),
        _ => Err(Fault),
    }
}

/// Zeroes `len` bytes at user address `dst`.
pub fn clear_user(dst: UserPtr, len: usize) -> Result<(), Fault> {
    if !access_ok(dst, len) {
        return Err(Fault);
    }
    for i in 0..len as u64 {
        sttrb(dst.addr() + i, 0)?;
    }
    Ok(())
}

/// Copies a NUL-terminated string from user address `src` into `dst`;
/// returns its length without the NUL, or `None` if no NUL was found
/// within `dst.len()` bytes.
pub fn strncpy_from_user(dst: &mut [u8], src: UserPtr) -> Result<Option<usize>, Fault> {
    for (i, slot) in dst.iter_mut().enumerate() {
        let a = src
            .addr()
            .checked_add(i as u64)
            .filter(|&a| a < TASK_SIZE)
            .ok_or(Fault)?;
        let b = ldtrb(a)? as u8;
        *slot = b;
        if b == 0 {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Reads a u64 from user address `src` (any alignment).
pub fn get_user_u64(src: UserPtr) -> Result<u64, Fault> {
    let mut b = [0u8; 8];
    copy_from_user(&mut b, src)?;
    Ok(u64::from_le_bytes(b))
}

/// Reads the two u64s at user address `src` (any alignment: an iovec),
/// each with one unprivileged load, inline: the bulk copy's call and
/// loop cost more than the loads for so few bytes.
#[inline]
pub fn get_user_u64_pair(src: UserPtr) -> Result<[u64; 2], Fault> {
    if !access_ok(src, 16) {
        return Err(Fault);
    }
    Ok([ldtr_x(src.addr())?, ldtr_x(src.addr() + 8)?])
}

/// Writes a u64 to user address `dst` (any alignment).
pub fn put_user_u64(dst: UserPtr, v: u64) -> Result<(), Fault> {
    copy_to_user(dst, &v.to_le_bytes())
}

/// Checks that EL0 could write every page of `[ptr, ptr + len)`, by
/// reading and writing back one byte per page (content unchanged; a
/// copy-on-write or not-yet-present page is resolved now). Used before an
/// operation that consumes data (a read from a pipe) so that a bad buffer
/// fails with nothing consumed, as Linux's copy at the first byte does.
pub fn probe_writable(ptr: UserPtr, len: usize) -> Result<(), Fault> {
    if len == 0 {
        return Ok(());
    }
    if !access_ok(ptr, len) {
        return Err(Fault);
    }
    let end = ptr.addr() + len as u64;
    let mut a = ptr.addr();
    while a < end {
        let b = ldtrb(a)?;
        sttrb(a, b)?;
        a = (a & !0xfff) + 0x1000;
    }
    Ok(())
}

/// The read-modify-write operations of FUTEX_WAKE_OP (Linux's
/// `FUTEX_OP_SET` .. `FUTEX_OP_XOR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexOp {
    /// `*addr = arg`.
    Set,
    /// `*addr += arg`.
    Add,
    /// `*addr |= arg`.
    Or,
    /// `*addr &= !arg`.
    AndN,
    /// `*addr ^= arg`.
    Xor,
}

/// Whether this CPU has PAN (then the kernel runs with it set).
fn has_pan() -> bool {
    use aarch64_cpu::registers::{Readable, ID_AA64MMFR1_EL1};
    ID_AA64MMFR1_EL1.read(ID_AA64MMFR1_EL1::PAN) != 0
}

/// One atomic read-modify-write loop of 32-bit user memory, by exclusive
/// load and store-release (Linux's `__futex_atomic_op`), with PAN lifted
/// around it as Linux's `uaccess_enable_privileged`: exclusives have no
/// unprivileged form. A fault resumes through `__ex_table` with an error.
macro_rules! futex_rmw {
    ($insn:literal, $addr:expr, $arg:expr, $pan:expr) => {{
        let old: u32;
        let err: u64;
        // SAFETY: the caller checked that `addr` is an aligned user address
        // (access_ok) that EL0 may read; the store can only succeed where
        // EL1 may write, which for user pages is where EL0 may write too
        // (read-only and PROT_NONE pages are read-only at EL1 as well). A
        // fault resumes at 7 with err = 1 and PAN restored.
        unsafe {
            core::arch::asm!(
                ".arch_extension pan",
                "mov {err}, #0",
                "cbz {pan}, 2f",
                "msr pan, #0",
                "2: ldxr {old:w}, [{addr}]",
                $insn,
                "3: stlxr {tmp:w}, {new:w}, [{addr}]",
                "cbnz {tmp:w}, 2b",
                "dmb ish",
                "5: cbz {pan}, 6f",
                "msr pan, #1",
                "6:",
                ".pushsection .text.fixup, \"ax\"",
                "7: mov {err}, #1",
                "b 5b",
                ".popsection",
                ".pushsection __ex_table, \"a\"",
                ".balign 4",
                ".long 2b - .",
                ".long 7b - .",
                ".long 3b - .",
                ".long 7b - .",
                ".popsection",
                addr = in(reg) $addr,
                arg = in(reg) $arg,
                pan = in(reg) $pan,
                old = out(reg) old,
                new = out(reg) _,
                tmp = out(reg) _,
                err = out(reg) err,
                options(nostack)
            );
        }
        if err == 0 {
            Ok(old)
        } else {
            Err(Fault)
        }
    }};
}

/// Applies `op` with `arg` atomically to the u32 at user address `uaddr`
/// and returns the old value (Linux's `arch_futex_atomic_op_inuser`).
/// `uaddr` must be 4-byte aligned; anything EL0 could not write is a fault.
pub fn futex_atomic_op(op: FutexOp, arg: u32, uaddr: UserPtr) -> Result<u32, Fault> {
    if !uaddr.addr().is_multiple_of(4) || !access_ok(uaddr, 4) {
        return Err(Fault);
    }
    let addr = uaddr.addr();
    // EL0 must be able to read it (this also faults the page in and
    // refuses PROT_NONE and execute-only pages, which EL1 could read).
    ldtr_x(addr & !7)?;
    let pan = has_pan() as u64;
    let arg = arg as u64;
    match op {
        FutexOp::Set => futex_rmw!("mov {new:w}, {arg:w}", addr, arg, pan),
        FutexOp::Add => futex_rmw!("add {new:w}, {old:w}, {arg:w}", addr, arg, pan),
        FutexOp::Or => futex_rmw!("orr {new:w}, {old:w}, {arg:w}", addr, arg, pan),
        FutexOp::AndN => futex_rmw!("bic {new:w}, {old:w}, {arg:w}", addr, arg, pan),
        FutexOp::Xor => futex_rmw!("eor {new:w}, {old:w}, {arg:w}", addr, arg, pan),
    }
}
