//! The vDSO: Linux arm64 maps an ELF shared object into every process
//! (`AT_SYSINFO_EHDR`) exporting `__kernel_clock_gettime`,
//! `__kernel_gettimeofday`, `__kernel_clock_getres` and
//! `__kernel_rt_sigreturn`, version `LINUX_2.6.39`, with its data page
//! `[vvar]` just below it. These checks find it as a C library does, by
//! parsing its dynamic symbols and versions, and call it.

use alloc::string::String;
use alloc::vec::Vec;
use core::arch::global_asm;
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Fail, Outcome};

pub static CHECKS: &[Check] = checks![
    vdso_is_an_elf_shared_object_named_linux_vdso,
    vdso_exports_linuxs_functions_versioned_linux_2_6_39,
    vdso_and_vvar_are_adjacent_in_proc_self_maps,
    vdso_clock_gettime_agrees_with_the_system_call,
    vdso_coarse_clocks_trail_the_precise_ones,
    vdso_clock_getres_matches_the_system_call,
    vdso_gettimeofday_matches_the_system_call,
    vdso_invalid_clock_is_einval_from_the_fallback,
    vdso_bad_pointers_fault_or_fail_as_on_linux,
    vdso_realtime_follows_clock_settime,
    vdso_data_page_is_read_only,
    vdso_is_inherited_across_fork,
    handler_without_restorer_returns_through_kernel_rt_sigreturn,
];

const AT_SYSINFO_EHDR: usize = 33;
const NR_CLOCK_SETTIME: usize = 112;
const NR_CLOCK_GETRES: usize = 114;
const NR_GETTIMEOFDAY: usize = 169;

const CLOCK_MONOTONIC_RAW: usize = 4;
const CLOCK_REALTIME_COARSE: usize = 5;
const CLOCK_MONOTONIC_COARSE: usize = 6;
const CLOCK_TAI: usize = 11;

/// Clocks Linux's vDSO serves in user space, then two it hands to the
/// system call.
const CLOCKS: [usize; 9] = [
    CLOCK_REALTIME,
    CLOCK_MONOTONIC,
    CLOCK_MONOTONIC_RAW,
    CLOCK_REALTIME_COARSE,
    CLOCK_MONOTONIC_COARSE,
    CLOCK_BOOTTIME,
    CLOCK_TAI,
    CLOCK_PROCESS_CPUTIME_ID,
    CLOCK_THREAD_CPUTIME_ID,
];

// ------------------------------------------------------------ ELF parsing

// Linux's elf.h numbers, restated here rather than taken from `uapi::elf`
// on purpose (see `sys`): a wrong value there must fail these checks.
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: u64 = 0;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_SONAME: u64 = 14;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_VERDEF: u64 = 0x6fff_fffc;
const SHT_DYNSYM: u32 = 11;
const STT_NOTYPE: u8 = 0;
const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;

/// The vDSO as mapped: reads are bounds-checked against its `PT_LOAD`
/// extent, so that a malformed image fails the check instead of faulting.
struct Image {
    base: usize,
    len: usize,
}

impl Image {
    fn bytes(&self, off: u64, n: usize) -> Result<&'static [u8], Fail> {
        let off = usize::try_from(off).map_err(|_| Fail("offset out of range".into()))?;
        ensure!(
            off.checked_add(n).is_some_and(|end| end <= self.len),
            "read of {n} bytes at {off:#x} outside the {:#x}-byte image",
            self.len
        );
        // SAFETY: inside the vDSO's PT_LOAD extent, which the kernel maps
        // readable for the life of the process.
        Ok(unsafe { core::slice::from_raw_parts((self.base + off) as *const u8, n) })
    }
    fn u16(&self, off: u64) -> Result<u16, Fail> {
        Ok(u16::from_le_bytes(self.bytes(off, 2)?.try_into().unwrap_or_default()))
    }
    fn u32(&self, off: u64) -> Result<u32, Fail> {
        Ok(u32::from_le_bytes(self.bytes(off, 4)?.try_into().unwrap_or_default()))
    }
    fn u64(&self, off: u64) -> Result<u64, Fail> {
        Ok(u64::from_le_bytes(self.bytes(off, 8)?.try_into().unwrap_or_default()))
    }
    fn cstr(&self, off: u64) -> Result<String, Fail> {
        let mut s = Vec::new();
        for i in 0..256 {
            match self.bytes(off + i, 1)?[0] {
                0 => return Ok(String::from_utf8_lossy(&s).into_owned()),
                b => s.push(b),
            }
        }
        Err(Fail(alloc::format!("unterminated string at {off:#x}")))
    }
}

/// One dynamic symbol with its version name.
#[derive(Debug)]
struct Sym {
    name: String,
    value: u64,
    info: u8,
    shndx: u16,
    version: Option<String>,
}

/// What a dynamic linker learns from the vDSO.
struct Vdso {
    base: usize,
    len: usize,
    soname: String,
    syms: Vec<Sym>,
}

impl Vdso {
    fn find(&self, name: &str) -> Result<&Sym, Fail> {
        self.syms
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| Fail(alloc::format!("{name} not in the vDSO's dynamic symbols")))
    }
    /// The address of an exported function (`dlvsym(vdso, name, "LINUX_2.6.39")`).
    fn func(&self, name: &str) -> Result<usize, Fail> {
        let s = self.find(name)?;
        ensure!(
            s.version.as_deref() == Some("LINUX_2.6.39"),
            "{name} has version {:?}",
            s.version
        );
        Ok(self.base + s.value as usize)
    }
}

/// Parses the vDSO at `AT_SYSINFO_EHDR`: the program headers, the dynamic
/// section, the symbol table (its size from `DT_HASH`, else from the
/// section headers), `.gnu.version` and `.gnu.version_d`.
fn parse_vdso() -> Result<Vdso, Fail> {
    let base = rt::env::auxv(AT_SYSINFO_EHDR).ok_or_else(|| Fail("no AT_SYSINFO_EHDR".into()))?;
    ensure!(base != 0 && base % 4096 == 0, "AT_SYSINFO_EHDR = {base:#x}");
    // The ELF header first, with the 64 bytes it takes.
    let head = Image { base, len: 64 };
    ensure!(head.bytes(0, 4)? == b"\x7fELF", "no ELF magic");
    ensure!(head.bytes(4, 2)? == [2, 1], "not ELFCLASS64 little-endian");
    check_eq!(head.u16(16)?, 3, "e_type (ET_DYN)");
    check_eq!(head.u16(18)?, 183, "e_machine (EM_AARCH64)");
    let phoff = head.u64(32)?;
    let shoff = head.u64(40)?;
    let phentsize = u64::from(head.u16(54)?);
    let phnum = u64::from(head.u16(56)?);
    let shentsize = u64::from(head.u16(58)?);
    let shnum = u64::from(head.u16(60)?);
    // The extent of the image: the end of its PT_LOAD (which starts at 0).
    let mut len = 0;
    let mut dynamic = None;
    let page = Image { base, len: 4096 };
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let kind = page.u32(ph)?;
        let vaddr = page.u64(ph + 16)?;
        let memsz = page.u64(ph + 40)?;
        if kind == PT_LOAD {
            check_eq!(vaddr, 0, "the PT_LOAD's address");
            len = memsz as usize;
        } else if kind == PT_DYNAMIC {
            dynamic = Some((vaddr, memsz));
        }
    }
    let img = Image { base, len };
    let (dyn_at, dyn_len) = dynamic.ok_or_else(|| Fail("no PT_DYNAMIC".into()))?;
    let (mut hash, mut strtab, mut symtab, mut soname, mut versym, mut verdef) = (None, None, None, None, None, None);
    for i in 0..dyn_len / 16 {
        let tag = img.u64(dyn_at + i * 16)?;
        let val = img.u64(dyn_at + i * 16 + 8)?;
        match tag {
            DT_NULL => break,
            DT_HASH => hash = Some(val),
            DT_STRTAB => strtab = Some(val),
            DT_SYMTAB => symtab = Some(val),
            DT_SONAME => soname = Some(val),
            DT_VERSYM => versym = Some(val),
            DT_VERDEF => verdef = Some(val),
            _ => {}
        }
    }
    let strtab = strtab.ok_or_else(|| Fail("no DT_STRTAB".into()))?;
    let symtab = symtab.ok_or_else(|| Fail("no DT_SYMTAB".into()))?;
    let nsyms = match hash {
        // nchain: one entry per symbol.
        Some(h) => u64::from(img.u32(h + 4)?),
        None => {
            let mut n = None;
            for i in 0..shnum {
                let sh = shoff + i * shentsize;
                if img.u32(sh + 4)? == SHT_DYNSYM {
                    n = Some(img.u64(sh + 32)? / img.u64(sh + 56)?.max(1));
                }
            }
            n.ok_or_else(|| Fail("neither DT_HASH nor a .dynsym section header".into()))?
        }
    };
    // Version index -> name, from the Elf64_Verdef chain.
    let version_name = |index: u16| -> Result<Option<String>, Fail> {
        let Some(mut vd) = verdef else { return Ok(None) };
        for _ in 0..64 {
            if img.u16(vd + 4)? == index {
                let aux = vd + u64::from(img.u32(vd + 12)?);
                return img.cstr(strtab + u64::from(img.u32(aux)?)).map(Some);
            }
            match img.u32(vd + 16)? {
                0 => return Ok(None),
                next => vd += u64::from(next),
            }
        }
        Ok(None)
    };
    let mut syms = Vec::new();
    for i in 1..nsyms {
        let s = symtab + i * 24;
        let version = match versym {
            Some(v) => version_name(img.u16(v + i * 2)? & 0x7fff)?,
            None => None,
        };
        syms.push(Sym {
            name: img.cstr(strtab + u64::from(img.u32(s)?))?,
            info: img.bytes(s + 4, 1)?[0],
            shndx: img.u16(s + 6)?,
            value: img.u64(s + 8)?,
            version,
        });
    }
    let soname = match soname {
        Some(off) => img.cstr(strtab + off)?,
        None => String::new(),
    };
    Ok(Vdso {
        base,
        len,
        soname,
        syms,
    })
}

// ------------------------------------------------------------- the calls

type GettimeFn = unsafe extern "C" fn(i32, *mut Timespec) -> i32;
type GettimeofdayFn = unsafe extern "C" fn(*mut Timeval, *mut [i32; 2]) -> i32;

fn gettime_fn(v: &Vdso) -> Result<GettimeFn, Fail> {
    let f = v.func("__kernel_clock_gettime")?;
    // SAFETY: the vDSO's exported function of this C signature.
    Ok(unsafe { core::mem::transmute::<usize, GettimeFn>(f) })
}

fn getres_fn(v: &Vdso) -> Result<GettimeFn, Fail> {
    let f = v.func("__kernel_clock_getres")?;
    // SAFETY: as above; clock_getres has the same signature.
    Ok(unsafe { core::mem::transmute::<usize, GettimeFn>(f) })
}

fn gettimeofday_fn(v: &Vdso) -> Result<GettimeofdayFn, Fail> {
    let f = v.func("__kernel_gettimeofday")?;
    // SAFETY: as above.
    Ok(unsafe { core::mem::transmute::<usize, GettimeofdayFn>(f) })
}

/// `__kernel_clock_gettime(clock, &ts)`.
fn vdso_gettime(f: GettimeFn, clock: usize) -> Result<Timespec, i32> {
    let mut ts = Timespec { sec: -1, nsec: -1 };
    // SAFETY: ts is a live timespec.
    match unsafe { f(clock as i32, &mut ts) } {
        0 => Ok(ts),
        e => Err(e),
    }
}

fn clock_getres(clock: usize) -> Result<Timespec, Errno> {
    let mut t = Timespec::default();
    // SAFETY: t is a live timespec.
    unsafe { raw(NR_CLOCK_GETRES, &[clock, &mut t as *mut Timespec as usize]) }?;
    Ok(t)
}

/// Runs `f` in a child; its wait status.
fn in_child(f: impl FnOnce() -> i32) -> Result<i32, Fail> {
    let pid = spawn(f).ctx("fork")?;
    wait_status(pid).ctx("wait")
}

// ------------------------------------------------------------ the checks

fn vdso_is_an_elf_shared_object_named_linux_vdso() -> Outcome {
    let v = parse_vdso()?;
    check_eq!(v.soname.as_str(), "linux-vdso.so.1", "DT_SONAME");
    ensure!(v.len > 0 && v.len <= 64 * 1024, "PT_LOAD of {} bytes", v.len);
    Ok(())
}

fn vdso_exports_linuxs_functions_versioned_linux_2_6_39() -> Outcome {
    let v = parse_vdso()?;
    for name in [
        "__kernel_rt_sigreturn",
        "__kernel_gettimeofday",
        "__kernel_clock_gettime",
        "__kernel_clock_getres",
    ] {
        let s = v.find(name)?;
        // Linux's trampoline is a code label without a type (SYM_CODE_START),
        // the others are C functions.
        let kind = if name == "__kernel_rt_sigreturn" {
            STT_NOTYPE
        } else {
            STT_FUNC
        };
        check_eq!(s.info & 0xf, kind, "{name}'s type");
        check_eq!(s.info >> 4, STB_GLOBAL, "{name}'s binding");
        ensure!(s.shndx != 0, "{name} is undefined");
        ensure!(
            (s.value as usize) < v.len,
            "{name} at {:#x}, outside the image",
            s.value
        );
        check_eq!(s.version.as_deref(), Some("LINUX_2.6.39"), "{name}'s version");
    }
    // The trampoline is exactly Linux's: mov x8, #__NR_rt_sigreturn; svc #0.
    let at = v.func("__kernel_rt_sigreturn")?;
    // SAFETY: inside the vDSO, which is readable.
    let insns = unsafe { [(at as *const u32).read(), (at as *const u32).add(1).read()] };
    check_eq!(
        insns,
        [0xd280_1168, 0xd400_0001],
        "__kernel_rt_sigreturn's instructions"
    );
    Ok(())
}

fn read_maps() -> Result<String, Fail> {
    let fd = open(b"/proc/self/maps", O_RDONLY, 0).ctx("open /proc/self/maps")?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match read(fd, &mut buf).ctx("read /proc/self/maps")? {
            0 => break,
            n => out.extend_from_slice(&buf[..n]),
        }
    }
    close(fd);
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `start-end perms` of the maps line naming `what`.
fn maps_entry(maps: &str, what: &str) -> Result<(usize, usize, String), Fail> {
    let line = maps
        .lines()
        .find(|l| l.split_whitespace().last() == Some(what))
        .ok_or_else(|| Fail(alloc::format!("no {what} in /proc/self/maps:\n{maps}")))?;
    let mut f = line.split_whitespace();
    let range = f.next().unwrap_or_default();
    let perms = f.next().unwrap_or_default();
    let (s, e) = range.split_once('-').unwrap_or_default();
    let parse = |x: &str| usize::from_str_radix(x, 16).map_err(|_| Fail(alloc::format!("bad line {line:?}")));
    Ok((parse(s)?, parse(e)?, perms.into()))
}

fn vdso_and_vvar_are_adjacent_in_proc_self_maps() -> Outcome {
    let v = parse_vdso()?;
    let maps = read_maps()?;
    let (vdso_start, vdso_end, vdso_perms) = maps_entry(&maps, "[vdso]")?;
    let (vvar_start, vvar_end, vvar_perms) = maps_entry(&maps, "[vvar]")?;
    check_eq!(vdso_start, v.base, "[vdso] starts at AT_SYSINFO_EHDR");
    ensure!(vdso_end - vdso_start >= v.len, "[vdso] shorter than its PT_LOAD");
    check_eq!(vdso_perms.as_str(), "r-xp", "[vdso] permissions");
    check_eq!(vvar_perms.as_str(), "r--p", "[vvar] permissions");
    check_eq!(vvar_end, vdso_start, "[vvar] ends where [vdso] starts");
    ensure!(vvar_start < vvar_end, "empty [vvar]");
    Ok(())
}

fn vdso_clock_gettime_agrees_with_the_system_call() -> Outcome {
    let f = gettime_fn(&parse_vdso()?)?;
    for clock in CLOCKS {
        // vDSO, system call, vDSO: each no earlier than the one before.
        let a = vdso_gettime(f, clock).map_err(|e| Fail(alloc::format!("clock {clock}: vDSO returned {e}")))?;
        let b = clock_gettime(clock).ctx("clock_gettime")?;
        let c = vdso_gettime(f, clock).map_err(|e| Fail(alloc::format!("clock {clock}: vDSO returned {e}")))?;
        for t in [a, c] {
            ensure!(
                (0..1_000_000_000).contains(&t.nsec),
                "clock {clock}: tv_nsec {}",
                t.nsec
            );
        }
        ensure!(
            a.as_ns() <= b.as_ns() && b.as_ns() <= c.as_ns(),
            "clock {clock}: vDSO {a:?}, system call {b:?}, vDSO {c:?} out of order"
        );
        // Generous: an emulated CPU on a loaded host can stall for a while.
        ensure!(
            c.as_ns() - a.as_ns() < 5_000_000_000,
            "clock {clock}: {a:?} to {c:?} is over 5 s"
        );
    }
    // The vDSO's own readings never go back.
    let mut last = 0;
    for _ in 0..10_000 {
        let t = vdso_gettime(f, CLOCK_MONOTONIC).map_err(|e| Fail(alloc::format!("returned {e}")))?;
        ensure!(
            t.as_ns() >= last,
            "CLOCK_MONOTONIC went back from {last} to {}",
            t.as_ns()
        );
        last = t.as_ns();
    }
    Ok(())
}

fn vdso_coarse_clocks_trail_the_precise_ones() -> Outcome {
    let f = gettime_fn(&parse_vdso()?)?;
    for (coarse, precise) in [
        (CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC),
        (CLOCK_REALTIME_COARSE, CLOCK_REALTIME),
    ] {
        let res = clock_getres(coarse).ctx("clock_getres")?.as_ns();
        let c = vdso_gettime(f, coarse).map_err(|e| Fail(alloc::format!("returned {e}")))?;
        let p = vdso_gettime(f, precise).map_err(|e| Fail(alloc::format!("returned {e}")))?;
        // The last tick's time: behind, by about a tick (a loaded,
        // emulated machine may be late by a few).
        ensure!(
            c.as_ns() <= p.as_ns() && p.as_ns() - c.as_ns() <= 50 * res,
            "clock {coarse} reads {c:?}, clock {precise} {p:?} (a tick is {res} ns)"
        );
    }
    Ok(())
}

fn vdso_clock_getres_matches_the_system_call() -> Outcome {
    let f = getres_fn(&parse_vdso()?)?;
    for clock in CLOCKS {
        let mut ts = Timespec { sec: -1, nsec: -1 };
        // SAFETY: ts is a live timespec.
        check_eq!(unsafe { f(clock as i32, &mut ts) }, 0, "clock {clock}: return value");
        check_eq!(Ok(ts), clock_getres(clock), "clock {clock}: resolution");
        // SAFETY: a NULL res is allowed.
        check_eq!(
            unsafe { f(clock as i32, core::ptr::null_mut()) },
            0,
            "clock {clock}, NULL res"
        );
    }
    Ok(())
}

fn vdso_gettimeofday_matches_the_system_call() -> Outcome {
    let f = gettimeofday_fn(&parse_vdso()?)?;
    let before = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    let mut tv = Timeval { sec: -1, usec: -1 };
    let mut tz = [-1i32; 2];
    // SAFETY: both live.
    check_eq!(unsafe { f(&mut tv, &mut tz) }, 0, "return value");
    let after = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    let us = tv.sec * 1_000_000 + tv.usec;
    ensure!(
        (0..1_000_000).contains(&tv.usec) && before.as_ns() / 1000 <= us && us <= after.as_ns() / 1000,
        "gettimeofday {tv:?} outside [{before:?}, {after:?}]"
    );
    let mut sys_tz = [-1i32; 2];
    // SAFETY: sys_tz is live; tv NULL is allowed.
    unsafe { raw(NR_GETTIMEOFDAY, &[0, sys_tz.as_mut_ptr() as usize]) }.ctx("gettimeofday")?;
    check_eq!(tz, sys_tz, "the time zone");
    // SAFETY: both NULL is allowed.
    check_eq!(
        unsafe { f(core::ptr::null_mut(), core::ptr::null_mut()) },
        0,
        "NULL, NULL"
    );
    Ok(())
}

fn vdso_invalid_clock_is_einval_from_the_fallback() -> Outcome {
    let v = parse_vdso()?;
    let (gettime, getres) = (gettime_fn(&v)?, getres_fn(&v)?);
    for clock in [10, 12, 15, 16, 1000, i32::MAX as usize] {
        let mut ts = Timespec { sec: -1, nsec: -1 };
        // SAFETY: ts is live.
        check_eq!(unsafe { gettime(clock as i32, &mut ts) }, -22, "clock_gettime({clock})");
        // SAFETY: as above.
        check_eq!(unsafe { getres(clock as i32, &mut ts) }, -22, "clock_getres({clock})");
        check_eq!(ts, Timespec { sec: -1, nsec: -1 }, "clock {clock}: timespec untouched");
    }
    Ok(())
}

fn vdso_bad_pointers_fault_or_fail_as_on_linux() -> Outcome {
    let v = parse_vdso()?;
    let (gettime, getres, gtod) = (gettime_fn(&v)?, getres_fn(&v)?, gettimeofday_fn(&v)?);
    // A clock served in user space writes the result itself: a bad
    // pointer is a SIGSEGV, not EFAULT.
    for clock in [CLOCK_MONOTONIC, CLOCK_REALTIME_COARSE] {
        let status = in_child(|| {
            // SAFETY: deliberately bad; this child dies of it.
            unsafe { gettime(clock as i32, core::ptr::null_mut()) };
            0
        })?;
        check_eq!(
            status & 0x7f,
            SIGSEGV,
            "clock_gettime({clock}, NULL): wait status {status:#x}"
        );
    }
    let status = in_child(|| {
        // SAFETY: as above.
        unsafe { gtod(BAD_KERNEL as *mut Timeval, core::ptr::null_mut()) };
        0
    })?;
    check_eq!(
        status & 0x7f,
        SIGSEGV,
        "gettimeofday(kernel address): wait status {status:#x}"
    );
    // A clock the system call serves: EFAULT from the kernel.
    // SAFETY: the kernel checks the pointer.
    check_eq!(
        unsafe { gettime(CLOCK_PROCESS_CPUTIME_ID as i32, core::ptr::null_mut()) },
        -14,
        "clock_gettime(CLOCK_PROCESS_CPUTIME_ID, NULL)"
    );
    // SAFETY: as above.
    check_eq!(
        unsafe { getres(CLOCK_MONOTONIC as i32, core::ptr::null_mut()) },
        0,
        "clock_getres(CLOCK_MONOTONIC, NULL)"
    );
    Ok(())
}

fn clock_settime(t: &Timespec) -> Result<usize, Errno> {
    // SAFETY: t is a live timespec, only read.
    unsafe { raw(NR_CLOCK_SETTIME, &[CLOCK_REALTIME, t as *const Timespec as usize]) }
}

fn vdso_realtime_follows_clock_settime() -> Outcome {
    let f = gettime_fn(&parse_vdso()?)?;
    const AHEAD_S: i64 = 40_000;
    let r0 = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    check_eq!(
        clock_settime(&Timespec {
            sec: r0.sec + AHEAD_S,
            nsec: r0.nsec
        }),
        Ok(0),
        "clock_settime ahead"
    );
    let real = vdso_gettime(f, CLOCK_REALTIME);
    let coarse = vdso_gettime(f, CLOCK_REALTIME_COARSE);
    let tai = vdso_gettime(f, CLOCK_TAI);
    // Back, before anything can fail.
    let back = clock_gettime(CLOCK_REALTIME).ctx("realtime")?;
    check_eq!(
        clock_settime(&Timespec {
            sec: back.sec - AHEAD_S,
            nsec: back.nsec
        }),
        Ok(0),
        "clock_settime back"
    );
    for (what, t) in [("REALTIME", real), ("REALTIME_COARSE", coarse), ("TAI", tai)] {
        let t = t.map_err(|e| Fail(alloc::format!("{what}: returned {e}")))?;
        // TAI may be ahead of UTC by its offset (37 s at most these days).
        ensure!(
            t.sec - r0.sec >= AHEAD_S - 1 && t.sec - r0.sec <= AHEAD_S + 40,
            "CLOCK_{what} in the vDSO is {t:?} after setting {} s",
            r0.sec + AHEAD_S
        );
    }
    Ok(())
}

fn vdso_data_page_is_read_only() -> Outcome {
    let (vvar, end, _) = maps_entry(&read_maps()?, "[vvar]")?;
    check_eq!(
        mprotect(vvar, end - vvar, PROT_READ | PROT_WRITE),
        Err(Errno::EACCES),
        "mprotect([vvar], PROT_WRITE)"
    );
    let status = in_child(|| {
        // SAFETY: deliberately writes a read-only page; this child dies of it.
        unsafe { (vvar as *mut u64).write_volatile(0) };
        0
    })?;
    check_eq!(status & 0x7f, SIGSEGV, "a write to [vvar]: wait status {status:#x}");
    Ok(())
}

fn vdso_is_inherited_across_fork() -> Outcome {
    let v = parse_vdso()?;
    let f = gettime_fn(&v)?;
    let parent_base = v.base;
    let status = in_child(move || {
        let same = rt::env::auxv(AT_SYSINFO_EHDR) == Some(parent_base);
        let works = vdso_gettime(f, CLOCK_MONOTONIC).is_ok_and(|t| t.as_ns() > 0);
        let mapped = read_maps().is_ok_and(|m| maps_entry(&m, "[vdso]").is_ok_and(|e| e.0 == parent_base));
        i32::from(!same) | i32::from(!works) << 1 | i32::from(!mapped) << 2
    })?;
    check_eq!(
        status,
        0,
        "child's exit status (1: other AT_SYSINFO_EHDR, 2: vDSO call failed, 4: not in maps)"
    );
    Ok(())
}

/// The return address the last signal handler was entered with (x30).
#[no_mangle]
static USERTESTS_VDSO_HANDLER_LR: AtomicUsize = AtomicUsize::new(0);

global_asm!(
    ".section .text.usertests_record_lr,\"ax\",@progbits",
    ".global usertests_record_lr",
    ".type usertests_record_lr,@function",
    // A handler that records x30 (where it will return) and returns.
    "usertests_record_lr:",
    "    adrp x9, USERTESTS_VDSO_HANDLER_LR",
    "    str x30, [x9, :lo12:USERTESTS_VDSO_HANDLER_LR]",
    "    ret",
);

extern "C" {
    fn usertests_record_lr(sig: i32, info: *mut SigInfo, uc: *mut UContext);
}

fn handler_without_restorer_returns_through_kernel_rt_sigreturn() -> Outcome {
    let v = parse_vdso()?;
    let tramp = v.func("__kernel_rt_sigreturn")?;
    // The assembly itself is the handler, so that x30 is what the kernel set.
    // SAFETY: the same ABI and signature, only made a safe pointer.
    let h = unsafe {
        core::mem::transmute::<unsafe extern "C" fn(i32, *mut SigInfo, *mut UContext), Handler>(usertests_record_lr)
    };
    handle_no_restorer(SIGUSR1, h, 0).ctx("install without SA_RESTORER")?;
    sigprocmask(SIG_SETMASK, Some(sigbit(SIGHUP))).ctx("block SIGHUP")?;
    kill(getpid(), SIGUSR1).ctx("kill")?;
    check_eq!(
        USERTESTS_VDSO_HANDLER_LR.load(SeqCst),
        tramp,
        "the handler's return address (__kernel_rt_sigreturn at {tramp:#x})"
    );
    check_eq!(
        sigprocmask(SIG_BLOCK, None),
        Ok(sigbit(SIGHUP)),
        "mask restored by rt_sigreturn"
    );
    Ok(())
}
