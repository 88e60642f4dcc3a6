//! `bench`: times a few kernel round trips with `CLOCK_MONOTONIC` and
//! prints, for each, the median of 3 repetitions in ns per operation:
//!
//! ```text
//! bench: counts getpid=100000 fork_exit_wait=200 fork_exec_wait=100 pipe_roundtrip=2000 reps=3
//! bench: getpid 1234 ns
//! bench: fork_exit_wait 1234 ns
//! bench: fork_exec_wait 1234 ns
//! bench: pipe_roundtrip 1234 ns
//! bench: clock_gettime_vdso 123 ns
//! bench: clock_gettime_syscall 1234 ns
//! ```
//!
//! The last two read `CLOCK_MONOTONIC` through the vDSO's
//! `__kernel_clock_gettime` (as the C libraries do) and through the system
//! call.
//!
//! Any failure prints `bench: FAIL ...` and exits 1.
#![no_std]
#![no_main]

use proof::{exec_true, now_ns, CLOCK_MONOTONIC};
use rt::fs;
use rt::println;
use rt::process::{exit, fork, waitpid, Fork, WaitStatus};
use rt::syscall::{nr, syscall0};
use uapi::elf::{hash, Elf64Dyn, Elf64Ehdr, Elf64Phdr, Elf64Sym, DT_HASH, DT_NULL, DT_STRTAB, DT_SYMTAB, PT_DYNAMIC};

rt::main!(main);

const REPS: usize = 3;
const GETPID: u64 = 100_000;
const FORK_EXIT: u64 = 200;
const FORK_EXEC: u64 = 100;
const PIPE: u64 = 2_000;
const CLOCK: u64 = 100_000;
const AT_SYSINFO_EHDR: usize = uapi::auxvec::AT_SYSINFO_EHDR as usize;

type GettimeFn = unsafe extern "C" fn(i32, *mut [i64; 2]) -> i32;

fn fail(what: &str, e: impl core::fmt::Display) -> ! {
    println!("bench: FAIL {what}: {e}");
    exit(1)
}

fn getpid(n: u64) {
    for _ in 0..n {
        // SAFETY: getpid takes no arguments.
        core::hint::black_box(unsafe { syscall0(nr::GETPID) });
    }
}

fn fork_wait(n: u64, exec: bool) {
    for _ in 0..n {
        match fork() {
            Ok(Fork::Child) => {
                if exec {
                    exec_true()
                }
                exit(0)
            }
            Ok(Fork::Parent(pid)) => match waitpid(pid) {
                Ok(WaitStatus::Exited(0)) => {}
                Ok(st) => fail("child status", format_args!("{st:?}")),
                Err(e) => fail("wait4", e),
            },
            Err(e) => fail("fork", e),
        }
    }
}

fn read1(fd: i32) -> bool {
    let mut b = [0u8; 1];
    loop {
        match fs::read(fd, &mut b) {
            Ok(1) => return true,
            Ok(_) => return false,
            Err(rt::Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}

/// 1 byte to a child over one pipe, back over another, n times.
fn pipe_roundtrip(n: u64) {
    let a = fs::pipe2(fs::O_CLOEXEC).unwrap_or_else(|e| fail("pipe2", e));
    let b = fs::pipe2(fs::O_CLOEXEC).unwrap_or_else(|e| fail("pipe2", e));
    match fork() {
        Ok(Fork::Child) => {
            let _ = fs::close(a[1]);
            let _ = fs::close(b[0]);
            while read1(a[0]) {
                if fs::write(b[1], b"x") != Ok(1) {
                    exit(1);
                }
            }
            exit(0)
        }
        Ok(Fork::Parent(pid)) => {
            let _ = fs::close(a[0]);
            let _ = fs::close(b[1]);
            for _ in 0..n {
                if fs::write(a[1], b"x") != Ok(1) || !read1(b[0]) {
                    fail("pipe ping-pong", "short transfer");
                }
            }
            let _ = fs::close(a[1]);
            let _ = fs::close(b[0]);
            match waitpid(pid) {
                Ok(WaitStatus::Exited(0)) => {}
                Ok(st) => fail("pipe child status", format_args!("{st:?}")),
                Err(e) => fail("wait4", e),
            }
        }
        Err(e) => fail("fork", e),
    }
}

/// `__kernel_clock_gettime` in the vDSO at `AT_SYSINFO_EHDR`, by name in
/// its dynamic symbol table (`DT_HASH`'s chain count is the symbol count).
fn vdso_clock_gettime() -> Option<GettimeFn> {
    let base = rt::env::auxv(AT_SYSINFO_EHDR).filter(|&b| b != 0)?;
    // SAFETY: the kernel maps a well-formed ELF image there, readable;
    // every offset read comes from its own headers.
    unsafe {
        let at = |off: u64| base + off as usize;
        let u32_at = |off: u64| (at(off) as *const u32).read_unaligned();
        let ehdr = Elf64Ehdr::from_bytes(&(at(0) as *const [u8; Elf64Ehdr::SIZE]).read_unaligned());
        let phdr = |i: u64| {
            let off = ehdr.e_phoff + i * u64::from(ehdr.e_phentsize);
            Elf64Phdr::from_bytes(&(at(off) as *const [u8; Elf64Phdr::SIZE]).read_unaligned())
        };
        let dynamic = (0..u64::from(ehdr.e_phnum))
            .map(phdr)
            .find(|ph| ph.p_type == PT_DYNAMIC)?;
        let (mut hash, mut strtab, mut symtab) = (None, None, None);
        for i in 0..64 {
            let off = dynamic.p_vaddr + i * Elf64Dyn::SIZE as u64;
            let d = Elf64Dyn::from_bytes(&(at(off) as *const [u8; Elf64Dyn::SIZE]).read_unaligned());
            match d.d_tag {
                DT_NULL => break,
                DT_HASH => hash = Some(d.d_val),
                DT_STRTAB => strtab = Some(d.d_val),
                DT_SYMTAB => symtab = Some(d.d_val),
                _ => {}
            }
        }
        let (strtab, symtab) = (strtab?, symtab?);
        let want = b"__kernel_clock_gettime\0";
        // The hash table's nchain is the number of symbols; 0 is the null one.
        for i in 1..u64::from(u32_at(hash? + hash::NCHAIN as u64)) {
            let off = symtab + i * Elf64Sym::SIZE as u64;
            let sym = Elf64Sym::from_bytes(&(at(off) as *const [u8; Elf64Sym::SIZE]).read_unaligned());
            let name = core::slice::from_raw_parts(at(strtab + u64::from(sym.st_name)) as *const u8, want.len());
            if name == want {
                return Some(core::mem::transmute::<usize, GettimeFn>(at(sym.st_value)));
            }
        }
        None
    }
}

fn clock_gettime_vdso(f: GettimeFn, n: u64) {
    let mut ts = [0i64; 2];
    for _ in 0..n {
        // SAFETY: ts is a live timespec.
        core::hint::black_box(unsafe { f(CLOCK_MONOTONIC as i32, &mut ts) });
    }
}

fn clock_gettime_syscall(n: u64) {
    let mut ts = [0i64; 2];
    for _ in 0..n {
        // SAFETY: ts is a live timespec.
        core::hint::black_box(unsafe {
            rt::syscall::syscall2(nr::CLOCK_GETTIME, CLOCK_MONOTONIC, ts.as_mut_ptr() as usize)
        });
    }
}

/// Median over REPS runs of f(n), in ns per operation.
fn measure(n: u64, f: impl Fn(u64)) -> u64 {
    let mut t = [0u64; REPS];
    for slot in t.iter_mut() {
        let start = now_ns();
        f(n);
        *slot = (now_ns() - start) / n;
    }
    t.sort_unstable();
    t[REPS / 2]
}

fn main(_args: rt::Args) -> i32 {
    println!(
        "bench: counts getpid={GETPID} fork_exit_wait={FORK_EXIT} fork_exec_wait={FORK_EXEC} \
         pipe_roundtrip={PIPE} clock_gettime={CLOCK} reps={REPS}"
    );
    println!("bench: getpid {} ns", measure(GETPID, getpid));
    println!(
        "bench: fork_exit_wait {} ns",
        measure(FORK_EXIT, |n| fork_wait(n, false))
    );
    println!(
        "bench: fork_exec_wait {} ns",
        measure(FORK_EXEC, |n| fork_wait(n, true))
    );
    println!("bench: pipe_roundtrip {} ns", measure(PIPE, pipe_roundtrip));
    let Some(f) = vdso_clock_gettime() else {
        fail("vdso", "no __kernel_clock_gettime at AT_SYSINFO_EHDR")
    };
    println!(
        "bench: clock_gettime_vdso {} ns",
        measure(CLOCK, |n| clock_gettime_vdso(f, n))
    );
    println!(
        "bench: clock_gettime_syscall {} ns",
        measure(CLOCK, clock_gettime_syscall)
    );
    0
}
