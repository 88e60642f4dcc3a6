//! Memory: brk, anonymous mmap, munmap, mprotect, and the SIGSEGV codes
//! of faults on them.

use core::arch::asm;
use core::sync::atomic::Ordering::SeqCst;

use super::signal::{hits, record, FIXUP, FIX_MAP, FIX_MPROTECT, FIX_RETURN, REC};
use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    brk_grow_use_shrink,
    mmap_anonymous_zeroed_aligned,
    mmap_fixed_and_errors,
    munmap_then_access_segv_maperr,
    mprotect_read_only_segv_accerr,
    prot_none_read_segv_accerr,
    mprotect_none_hides_a_touched_page,
    exec_from_data_segv_accerr,
    mprotect_munmap_errors,
    segv_default_action_kills,
    getrandom_large_buffer_and_errors,
];

fn brk_grow_use_shrink() -> Outcome {
    let start = call(nr::BRK, &[0]).ctx("brk(0)")?;
    ensure!(start != 0, "brk(0) gave 0");
    let grown = call(nr::BRK, &[start + 64 * 1024]).ctx("brk(+64K)")?;
    check_eq!(grown, start + 64 * 1024, "brk result when growing");
    // SAFETY: [start, grown) was just given to us by brk.
    unsafe {
        ensure!(load(start) == 0 && load(grown - 8) == 0, "new brk memory is not zeroed");
        store(start, 0x1234);
        store(grown - 8, 0x5678);
        ensure!(
            load(start) == 0x1234 && load(grown - 8) == 0x5678,
            "brk memory does not keep writes"
        );
    }
    check_eq!(call(nr::BRK, &[0]), Ok(grown), "brk(0) after growing");
    check_eq!(call(nr::BRK, &[start + PAGE]), Ok(start + PAGE), "brk shrinks");
    check_eq!(
        call(nr::BRK, &[start + 2 * PAGE]),
        Ok(start + 2 * PAGE),
        "brk grows again"
    );
    // SAFETY: the second page was given back and mapped again.
    check_eq!(
        unsafe { load(start + PAGE) },
        0,
        "memory given back and taken again is zeroed"
    );
    check_eq!(
        call(nr::BRK, &[0x1000]),
        Ok(start + 2 * PAGE),
        "a refused brk returns the current break"
    );
    Ok(())
}

fn mmap_anonymous_zeroed_aligned() -> Outcome {
    let len = 5 * PAGE;
    let a = mmap_anon(len, PROT_READ | PROT_WRITE).ctx("mmap")?;
    check_eq!(a % PAGE, 0, "page aligned");
    for off in (0..len).step_by(PAGE) {
        // SAFETY: inside the new mapping.
        check_eq!(unsafe { load(a + off) }, 0, "zeroed at +{off:#x}");
        // SAFETY: as above.
        unsafe { store(a + off, off as u64 + 1) };
    }
    for off in (0..len).step_by(PAGE) {
        // SAFETY: as above.
        check_eq!(unsafe { load(a + off) }, off as u64 + 1, "kept at +{off:#x}");
    }
    // A length that is not a page multiple is rounded up.
    let b = mmap_anon(100, PROT_READ | PROT_WRITE).ctx("mmap 100 bytes")?;
    // SAFETY: the whole page belongs to the mapping.
    unsafe { store(b + PAGE - 8, 1) };
    check_eq!(munmap(a, len), Ok(0), "munmap");
    check_eq!(munmap(b, 100), Ok(0), "munmap 100 bytes");
    Ok(())
}

fn mmap_fixed_and_errors() -> Outcome {
    let a = mmap_anon(3 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    // SAFETY: inside the mapping.
    unsafe { store(a + PAGE, 7) };
    let fixed = call(
        nr::MMAP,
        &[
            a + PAGE,
            PAGE,
            PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
            usize::MAX,
            0,
        ],
    );
    check_eq!(fixed, Ok(a + PAGE), "MAP_FIXED at the middle page");
    // SAFETY: the middle page was just replaced.
    check_eq!(unsafe { load(a + PAGE) }, 0, "MAP_FIXED replaced the old contents");
    let anon = MAP_PRIVATE | MAP_ANONYMOUS;
    check_eq!(
        call(nr::MMAP, &[0, 0, PROT_READ, anon, usize::MAX, 0]),
        Err(Errno::EINVAL),
        "length 0"
    );
    check_eq!(
        call(nr::MMAP, &[0, PAGE, PROT_READ, MAP_ANONYMOUS, usize::MAX, 0]),
        Err(Errno::EINVAL),
        "neither MAP_PRIVATE nor MAP_SHARED"
    );
    check_eq!(
        call(nr::MMAP, &[a + 1, PAGE, PROT_READ, anon | MAP_FIXED, usize::MAX, 0]),
        Err(Errno::EINVAL),
        "MAP_FIXED at an unaligned address"
    );
    check_eq!(
        call(nr::MMAP, &[0, PAGE, PROT_READ, MAP_PRIVATE, usize::MAX, 0]),
        Err(Errno::EBADF),
        "file mapping of fd -1"
    );
    check_eq!(
        call(nr::MMAP, &[0, usize::MAX - PAGE, PROT_READ, anon, usize::MAX, 0]),
        Err(Errno::ENOMEM),
        "huge length"
    );
    munmap(a, 3 * PAGE).ctx("munmap")?;
    Ok(())
}

fn munmap_then_access_segv_maperr() -> Outcome {
    let a = mmap_anon(3 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    check_eq!(munmap(a + PAGE, PAGE), Ok(0), "munmap the middle page");
    FIXUP.store(FIX_MAP, SeqCst);
    handle(SIGSEGV, record, 0, 0).ctx("install")?;
    let addr = a + PAGE + 0x18;
    // SAFETY: the fault is handled by mapping a fresh page there.
    unsafe { store(addr, 5) };
    check_eq!(hits(), 1, "SIGSEGV handler calls");
    check_eq!(
        (
            REC.signo.load(SeqCst),
            REC.code.load(SeqCst),
            REC.word0.load(SeqCst) as usize
        ),
        (SIGSEGV, SEGV_MAPERR, addr),
        "(si_signo, si_code, si_addr)"
    );
    check_eq!(
        REC.fault_address.load(SeqCst) as usize,
        addr,
        "sigcontext fault_address"
    );
    // SAFETY: the handler mapped the page; the store was retried.
    check_eq!(unsafe { load(addr) }, 5, "the store was retried after the handler");
    // SAFETY: the neighbours are still mapped.
    unsafe {
        store(a, 1);
        store(a + 2 * PAGE, 1);
    }
    Ok(())
}

fn mprotect_read_only_segv_accerr() -> Outcome {
    let a = mmap_anon(2 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    // SAFETY: inside the mapping.
    unsafe { store(a + PAGE + 8, 1) };
    check_eq!(mprotect(a + PAGE, PAGE, PROT_READ), Ok(0), "mprotect PROT_READ");
    // SAFETY: readable.
    check_eq!(unsafe { load(a + PAGE + 8) }, 1, "still readable");
    FIXUP.store(FIX_MPROTECT, SeqCst);
    handle(SIGSEGV, record, 0, 0).ctx("install")?;
    let addr = a + PAGE + 0x40;
    // SAFETY: the fault is handled by making the page writable.
    unsafe { store(addr, 9) };
    check_eq!(hits(), 1, "SIGSEGV handler calls");
    check_eq!(
        (
            REC.signo.load(SeqCst),
            REC.code.load(SeqCst),
            REC.word0.load(SeqCst) as usize
        ),
        (SIGSEGV, SEGV_ACCERR, addr),
        "(si_signo, si_code, si_addr)"
    );
    // SAFETY: the handler made the page writable.
    check_eq!(unsafe { load(addr) }, 9, "the store was retried after the handler");
    // SAFETY: the first page was never protected.
    unsafe { store(a, 2) };
    check_eq!(hits(), 1, "the first page stayed writable");
    Ok(())
}

fn prot_none_read_segv_accerr() -> Outcome {
    let a = mmap_anon(PAGE, PROT_NONE).ctx("mmap PROT_NONE")?;
    FIXUP.store(FIX_MPROTECT, SeqCst);
    handle(SIGSEGV, record, 0, 0).ctx("install")?;
    // SAFETY: the fault is handled by making the page accessible.
    let v = unsafe { load(a + 0x100) };
    check_eq!(v, 0, "value read after the handler");
    check_eq!(
        (hits(), REC.code.load(SeqCst), REC.word0.load(SeqCst) as usize),
        (1, SEGV_ACCERR, a + 0x100),
        "(calls, si_code, si_addr) of a read from PROT_NONE"
    );
    Ok(())
}

/// PROT_NONE must take effect on a page that is already mapped, and the
/// data must still be there once it is accessible again.
fn mprotect_none_hides_a_touched_page() -> Outcome {
    let a = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    // SAFETY: inside the new mapping.
    unsafe { store(a + 0x80, 0x5eed) };
    check_eq!(mprotect(a, PAGE, PROT_NONE), Ok(0), "mprotect PROT_NONE");
    FIXUP.store(FIX_MPROTECT, SeqCst);
    handle(SIGSEGV, record, 0, 0).ctx("install")?;
    // SAFETY: the fault is handled by making the page accessible.
    let v = unsafe { load(a + 0x80) };
    check_eq!(
        (hits(), REC.code.load(SeqCst), REC.word0.load(SeqCst) as usize),
        (1, SEGV_ACCERR, a + 0x80),
        "(calls, si_code, si_addr) of a read from a touched PROT_NONE page"
    );
    check_eq!(v, 0x5eed, "the page's data after it is accessible again");
    check_eq!(munmap(a, PAGE), Ok(0), "munmap");
    Ok(())
}

fn exec_from_data_segv_accerr() -> Outcome {
    let a = mmap_anon(PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    // SAFETY: `ret` at the start of the page, never executed: the page is
    // not executable.
    unsafe { store(a, 0xd65f_03c0) };
    FIXUP.store(FIX_RETURN, SeqCst);
    handle(SIGSEGV, record, 0, 0).ctx("install")?;
    // SAFETY: the branch faults; the handler resumes at x30 (label 2).
    unsafe { asm!("adr x30, 2f", "br {t}", "2:", t = in(reg) a, out("x30") _) };
    check_eq!(
        (
            hits(),
            REC.code.load(SeqCst),
            REC.word0.load(SeqCst) as usize,
            REC.pc.load(SeqCst) as usize
        ),
        (1, SEGV_ACCERR, a, a),
        "(calls, si_code, si_addr, uc pc) of a jump into a non-executable page"
    );
    Ok(())
}

fn mprotect_munmap_errors() -> Outcome {
    let a = mmap_anon(2 * PAGE, PROT_READ | PROT_WRITE).ctx("mmap")?;
    check_eq!(
        mprotect(a + 1, PAGE, PROT_READ),
        Err(Errno::EINVAL),
        "mprotect at an unaligned address"
    );
    check_eq!(
        mprotect(a, PAGE, 0x100),
        Err(Errno::EINVAL),
        "mprotect with unknown prot bits"
    );
    check_eq!(
        munmap(a + 1, PAGE),
        Err(Errno::EINVAL),
        "munmap at an unaligned address"
    );
    check_eq!(munmap(a, 0), Err(Errno::EINVAL), "munmap of length 0");
    munmap(a, 2 * PAGE).ctx("munmap")?;
    check_eq!(
        mprotect(a, PAGE, PROT_READ),
        Err(Errno::ENOMEM),
        "mprotect of an unmapped range"
    );
    check_eq!(munmap(a, PAGE), Ok(0), "munmap of an unmapped range is not an error");
    Ok(())
}

fn segv_default_action_kills() -> Outcome {
    let pid = spawn(|| {
        // SAFETY: kills this child with SIGSEGV.
        unsafe { store(BAD_LOW & !7, 1) };
        1
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(pid).map(|s| s & 0x7f),
        Ok(SIGSEGV),
        "a store to address 0 kills with SIGSEGV"
    );
    Ok(())
}

/// A buffer far bigger than any kernel bounce buffer is filled whole, and
/// the argument checks give Linux's errors.
fn getrandom_large_buffer_and_errors() -> Outcome {
    let len = 4 << 20;
    let a = mmap_anon(len, PROT_READ | PROT_WRITE).ctx("mmap")?;
    check_eq!(call(nr::GETRANDOM, &[a, len, 0]), Ok(len), "getrandom 4 MiB");
    // Eight zero bytes in a row at both ends would mean a part was skipped.
    // SAFETY: inside the mapping.
    let (head, tail) = unsafe { (load(a), load(a + len - 8)) };
    ensure!(head != 0 && tail != 0, "getrandom left zeroes: {head:#x} {tail:#x}");
    check_eq!(call(nr::GETRANDOM, &[a, 0, 0]), Ok(0), "getrandom of 0 bytes");
    check_eq!(
        call(nr::GETRANDOM, &[a, 16, 0x100]),
        Err(Errno::EINVAL),
        "getrandom with an unknown flag"
    );
    check_eq!(
        call(nr::GETRANDOM, &[0, 16, 0]),
        Err(Errno::EFAULT),
        "getrandom to NULL"
    );
    check_eq!(munmap(a, len), Ok(0), "munmap");
    Ok(())
}
