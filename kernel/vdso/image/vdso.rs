//! The vDSO's code (Linux's arch/arm64/kernel/vdso/vgettimeofday.c,
//! sigreturn.S and note.S), compiled by build.rs for
//! `aarch64-unknown-none` with `-C relocation-model=pic` and linked by
//! vdso.lds into a shared object with no dynamic relocations: everything it
//! touches is reached PC-relative, so it runs wherever it is mapped.
//!
//! Rust rather than assembly: the clock arithmetic and the sequence-counter
//! read are the kernel's own code (../src/datapage.rs, included below),
//! host-tested there; only the counter read, the system call fallbacks, the
//! data page's address and the sigreturn trampoline are assembly.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![allow(clippy::missing_safety_doc)]

#[path = "../../uapi/src/time/clockid.rs"]
#[allow(dead_code)]
mod clockid;
// The system call table is a plain file too: its `nr` constants are what
// the fallbacks and the trampoline put in x8 (unused tables cost nothing,
// being `const`s).
#[path = "../../uapi/src/syscalls.rs"]
#[allow(dead_code)]
mod syscalls;
#[path = "../src/datapage.rs"]
#[allow(dead_code)]
mod datapage;

use core::arch::{asm, global_asm};
use datapage::{VdsoClock, VdsoData, CLOCK_REALTIME, NSEC_PER_SEC};

/// Linux's system call numbers for the fallbacks.
const NR_GETTIMEOFDAY: u64 = syscalls::nr::GETTIMEOFDAY as u64;
const NR_CLOCK_GETTIME: u64 = syscalls::nr::CLOCK_GETTIME as u64;
const NR_CLOCK_GETRES: u64 = syscalls::nr::CLOCK_GETRES as u64;

/// `struct __kernel_timespec`.
#[repr(C)]
pub struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// `struct __kernel_old_timeval`.
#[repr(C)]
pub struct Timeval {
    tv_sec: i64,
    tv_usec: i64,
}

/// `struct timezone`.
#[repr(C)]
pub struct Timezone {
    tz_minuteswest: i32,
    tz_dsttime: i32,
}

// The signal return trampoline, byte for byte what Linux's sigreturn.S
// assembles: a NOP first, for unwinders that subtract one from a return
// address, no CFI, so that unwinders recognise the sequence itself, and no
// symbol type (a code label, as Linux's SYM_CODE_START makes it).
// The Linux ELF note (name "Linux", type 0, LINUX_VERSION_CODE of
// 6.12.0, matching uname -r) as Linux's note.S emits it.
global_asm!(
    ".text",
    "nop",
    ".globl __kernel_rt_sigreturn",
    "__kernel_rt_sigreturn:",
    "    mov x8, #{rt_sigreturn}",
    "    svc #0",
    ".size __kernel_rt_sigreturn, . - __kernel_rt_sigreturn",
    ".pushsection .note.Linux, \"a\", %note",
    ".balign 4",
    ".long 6, 4, 0",
    ".asciz \"Linux\"",
    ".balign 4",
    ".long 0x060c00",
    ".popsection",
    rt_sigreturn = const syscalls::nr::RT_SIGRETURN,
);

/// The data page, one page below the text (vdso.lds defines `_vdso_data`),
/// by its PC-relative address.
#[inline(always)]
fn vdso_data() -> &'static VdsoData {
    let p: *const VdsoData;
    // SAFETY: computes an address, touches no memory.
    unsafe {
        asm!(
            "adrp {p}, _vdso_data",
            "add {p}, {p}, :lo12:_vdso_data",
            p = out(reg) p,
            options(pure, nomem, nostack, preserves_flags)
        )
    };
    // SAFETY: the kernel maps the data page there, readable, for the life
    // of the mapping, and only ever changes it through atomics.
    unsafe { &*p }
}

/// `CNTVCT_EL0`, which EL0 may read (`CNTKCTL_EL1.EL0VCTEN`); the ISB keeps
/// the read from being taken before the sequence count is.
#[inline(always)]
fn counter() -> u64 {
    let v: u64;
    // SAFETY: reads a system register; no memory is touched.
    unsafe { asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// A system call with two arguments (the fallbacks); returns x0.
#[inline(always)]
unsafe fn syscall2(nr: u64, a0: u64, a1: u64) -> i64 {
    let ret: i64;
    // SAFETY: the caller passes what the system call may write through.
    unsafe {
        asm!("svc #0", in("x8") nr, inlateout("x0") a0 as i64 => ret, in("x1") a1, options(nostack))
    };
    ret
}

/// The time of a clock the vDSO serves, or None for the system call.
#[inline(always)]
fn clock_ns(clock: i32) -> Option<u64> {
    let c = VdsoClock::from_id(clock)?;
    let data = vdso_data();
    if c.coarse {
        data.read().clock_ns(c, 0)
    } else {
        data.hres_ns(c.base, counter)
    }
}

/// `clock_gettime` (Linux's `__cvdso_clock_gettime`): the clock from the
/// data page, written straight to `ts` (a bad pointer faults, as on
/// Linux); other clocks through the system call.
#[no_mangle]
pub unsafe extern "C" fn __kernel_clock_gettime(clock: i32, ts: *mut Timespec) -> i32 {
    match clock_ns(clock) {
        Some(ns) => {
            // SAFETY: the caller's buffer; a bad one faults in user space.
            unsafe {
                core::ptr::addr_of_mut!((*ts).tv_sec).write_volatile((ns / NSEC_PER_SEC) as i64);
                core::ptr::addr_of_mut!((*ts).tv_nsec).write_volatile((ns % NSEC_PER_SEC) as i64);
            }
            0
        }
        // SAFETY: the kernel checks the pointer.
        None => unsafe { syscall2(NR_CLOCK_GETTIME, clock as i64 as u64, ts as u64) as i32 },
    }
}

/// `gettimeofday` (Linux's `__cvdso_gettimeofday`): either pointer may be
/// NULL; the time zone is the one `settimeofday` last set.
#[no_mangle]
pub unsafe extern "C" fn __kernel_gettimeofday(tv: *mut Timeval, tz: *mut Timezone) -> i32 {
    if !tv.is_null() {
        let Some(ns) = clock_ns(CLOCK_REALTIME) else {
            // SAFETY: the kernel checks the pointers.
            return unsafe { syscall2(NR_GETTIMEOFDAY, tv as u64, tz as u64) as i32 };
        };
        // SAFETY: the caller's buffer; a bad one faults in user space.
        unsafe {
            core::ptr::addr_of_mut!((*tv).tv_sec).write_volatile((ns / NSEC_PER_SEC) as i64);
            core::ptr::addr_of_mut!((*tv).tv_usec).write_volatile((ns % NSEC_PER_SEC / 1000) as i64);
        }
    }
    if !tz.is_null() {
        let snap = vdso_data().read();
        // SAFETY: as above.
        unsafe {
            core::ptr::addr_of_mut!((*tz).tz_minuteswest).write_volatile(snap.tz_minuteswest);
            core::ptr::addr_of_mut!((*tz).tz_dsttime).write_volatile(snap.tz_dsttime);
        }
    }
    0
}

/// `clock_getres` (Linux's `__cvdso_clock_getres`): a NULL `res` is
/// allowed; other clocks through the system call.
#[no_mangle]
pub unsafe extern "C" fn __kernel_clock_getres(clock: i32, res: *mut Timespec) -> i32 {
    let Some(c) = VdsoClock::from_id(clock) else {
        // SAFETY: the kernel checks the pointer.
        return unsafe { syscall2(NR_CLOCK_GETRES, clock as i64 as u64, res as u64) as i32 };
    };
    let ns = vdso_data().read().res_ns(c);
    if !res.is_null() {
        // SAFETY: the caller's buffer; a bad one faults in user space.
        unsafe {
            core::ptr::addr_of_mut!((*res).tv_sec).write_volatile(0);
            core::ptr::addr_of_mut!((*res).tv_nsec).write_volatile(ns as i64);
        }
    }
    0
}

/// Never reached: nothing here can panic (build.rs checks that no panic
/// code was linked); required by `no_std`.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        core::hint::spin_loop();
    }
}
