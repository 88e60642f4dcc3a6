//! Attacks through exceptions: forged signal frames, unusable signal
//! stacks, every BRK immediate, undefined and privileged instructions.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::arch::global_asm;
use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use crate::sys::*;
use crate::Cfg;

global_asm!(
    ".section .text.adversary_traps,\"ax\",@progbits",
    ".global adversary_sigreturn_at",
    ".type adversary_sigreturn_at,@function",
    // rt_sigreturn with sp = x0. Returns nowhere: the kernel either
    // restores the frame or kills the process.
    "adversary_sigreturn_at:",
    "    mov sp, x0",
    "    mov x8, #{rt_sigreturn}",
    "    svc #0",
    "    brk #0x3ea",
    ".size adversary_sigreturn_at, . - adversary_sigreturn_at",
    ".global adversary_kill_on_sp",
    ".type adversary_kill_on_sp,@function",
    // kill(x1, x2) with sp = x0: the signal frame cannot be written.
    "adversary_kill_on_sp:",
    "    mov sp, x0",
    "    mov x0, x1",
    "    mov x1, x2",
    "    mov x8, #{kill}",
    "    svc #0",
    "    mov x0, #99",
    "    mov x8, #{exit_group}",
    "    svc #0",
    ".size adversary_kill_on_sp, . - adversary_kill_on_sp",
    ".global adversary_exit42",
    ".type adversary_exit42,@function",
    "adversary_exit42:",
    "    mov x0, #42",
    "    mov x8, #{exit_group}",
    "    svc #0",
    ".size adversary_exit42, . - adversary_exit42",
    rt_sigreturn = const nr::RT_SIGRETURN,
    kill = const nr::KILL,
    exit_group = const nr::EXIT_GROUP,
);

unsafe extern "C" {
    fn adversary_sigreturn_at(sp: usize) -> !;
    fn adversary_kill_on_sp(sp: usize, pid: usize, sig: usize) -> !;
    fn adversary_exit42() -> !;
}

use uapi::ptrace::psr;

/// EL1h with D, A, I and F masked: a kernel's pstate (0x3c5).
const EL1H_MASKED: u64 = psr::PSR_D_BIT | psr::PSR_A_BIT | psr::PSR_I_BIT | psr::PSR_F_BIT | psr::PSR_MODE_EL1h;
// Offsets in `struct rt_sigframe` and its record magics and sizes.
use uapi::sigframe::{
    EXTRA_MAGIC, EXTRA_SIZE, FPSIMD_MAGIC, FPSIMD_SIZE, SC_PC as MC_PC, SC_PSTATE as MC_PSTATE,
    SC_RESERVED as RESERVED, SC_SP as MC_SP, SVE_MAGIC,
};
use uapi::signal::code::TRAP_BRKPT;
use uapi::signal::{SigInfo, SIGINFO_SIZE};

/// Runs `f` in a child with a watchdog; how it ended.
fn child(ms: u64, f: impl FnOnce() -> i32) -> Option<(bool, i32)> {
    let pid = spawn(move || {
        alarm_ms(ms);
        f()
    });
    let r = wait_timeout(pid, ms + 3000).map(describe);
    if r.is_none() {
        kill(pid, SIGKILL);
        if wait_timeout(pid, 5000).is_none() {
            return Some((false, -1)); // unkillable
        }
    }
    r
}

/// A well-formed frame (fpsimd record, terminator) with `pc` and `pstate`.
fn frame(buf: usize, pc: u64, pstate: u64, sp: u64) {
    let put = |off: usize, v: u64| {
        // SAFETY: `buf` is a fresh read-write mapping of 64 KiB.
        unsafe { ((buf + off) as *mut u64).write_volatile(v) }
    };
    put(MC_PC, pc);
    put(MC_PSTATE, pstate);
    put(MC_SP, sp);
    put(RESERVED, u64::from(FPSIMD_MAGIC) | (u64::from(FPSIMD_SIZE) << 32));
}

pub fn sigframe(cfg: &Cfg) -> Result<(), String> {
    let mut wrong = String::new();
    let exit42 = adversary_exit42 as *const () as usize as u64;
    type Case = (&'static str, fn(usize, u64), Option<(bool, i32)>);
    let cases: [Case; 10] = [
        (
            "valid frame, pc = exit(42)",
            |b, pc| frame(b, pc, 0, (b + 60000) as u64),
            Some((true, 42)),
        ),
        (
            "pstate EL1h",
            |b, pc| frame(b, pc, EL1H_MASKED, (b + 60000) as u64),
            Some((false, SIGSEGV)),
        ),
        (
            "pstate EL1h, DAIF clear",
            |b, pc| frame(b, pc, psr::PSR_MODE_EL1h, (b + 60000) as u64),
            Some((false, SIGSEGV)),
        ),
        (
            "pstate AArch32",
            |b, pc| frame(b, pc, psr::PSR_MODE32_BIT, (b + 60000) as u64),
            Some((false, SIGSEGV)),
        ),
        (
            "pc in the kernel",
            |b, _| frame(b, 0xffff_8000_0808_0000, 0, (b + 60000) as u64),
            Some((false, SIGSEGV)),
        ),
        (
            "no fpsimd record",
            |b, pc| {
                frame(b, pc, 0, 0);
                // SAFETY: inside the buffer.
                unsafe { ((b + RESERVED) as *mut u64).write_volatile(0) };
            },
            Some((false, SIGSEGV)),
        ),
        (
            "fpsimd size 0xffffffff",
            |b, pc| {
                frame(b, pc, 0, 0);
                // SAFETY: inside the buffer.
                unsafe { ((b + RESERVED) as *mut u64).write_volatile(u64::from(FPSIMD_MAGIC) | (0xffff_ffff << 32)) };
            },
            Some((false, SIGSEGV)),
        ),
        (
            "extra_context to the kernel",
            |b, pc| {
                frame(b, pc, 0, 0);
                let e = b + RESERVED + FPSIMD_SIZE as usize;
                // SAFETY: inside the buffer.
                unsafe {
                    (e as *mut u64).write_volatile(u64::from(EXTRA_MAGIC) | (u64::from(EXTRA_SIZE) << 32));
                    ((e + 8) as *mut u64).write_volatile(0xffff_0000_0000_0000);
                    ((e + 16) as *mut u64).write_volatile(0x10_0000);
                }
            },
            Some((false, SIGSEGV)),
        ),
        (
            "sve record of garbage",
            |b, pc| {
                frame(b, pc, 0, 0);
                let e = b + RESERVED + FPSIMD_SIZE as usize;
                // SAFETY: inside the buffer.
                unsafe {
                    (e as *mut u64).write_volatile(u64::from(SVE_MAGIC) | (0x1_0000 << 32));
                    ((e + 8) as *mut u64).write_volatile(0xffff_ffff_ffff);
                }
            },
            Some((false, SIGSEGV)),
        ),
        (
            "records running off the frame",
            |b, pc| {
                frame(b, pc, 0, 0);
                for off in (RESERVED + FPSIMD_SIZE as usize..65536 - 8).step_by(16) {
                    // SAFETY: inside the buffer.
                    unsafe { ((b + off) as *mut u64).write_volatile(0x1234_5678 | (16 << 32)) };
                }
            },
            Some((false, SIGSEGV)),
        ),
    ];
    for (name, build, want) in cases {
        let got = child(5000, move || {
            let b = anon(65536);
            build(b, exit42);
            // SAFETY: ends the process one way or another.
            unsafe { adversary_sigreturn_at(b) }
        });
        if got != want {
            wrong.push_str(&format!(" [{name}: {got:?}, Linux {want:?}]"));
        }
    }
    // Stack pointers no frame can be read from: SIGSEGV.
    for (name, sp) in [
        ("sp 0", 0usize),
        ("sp 16", 16),
        ("sp in the kernel", 0xffff_0000_0000_0000),
        ("sp 2^48 - 64", (1 << 48) - 64),
        ("sp misaligned", 8),
    ] {
        let got = child(5000, move || {
            let s = if sp == 8 { anon(65536) + 8 } else { sp };
            // SAFETY: ends the process.
            unsafe { adversary_sigreturn_at(s) }
        });
        if got != Some((false, SIGSEGV)) {
            wrong.push_str(&format!(" [{name}: {got:?}, Linux SIGSEGV]"));
        }
    }
    // A frame straddling the end of the mapping.
    let got = child(5000, || {
        let b = anon(2 * PAGE);
        sys(nr::MUNMAP, &[b + PAGE, PAGE]);
        // SAFETY: ends the process.
        unsafe { adversary_sigreturn_at(b + PAGE - 256) }
    });
    if got != Some((false, SIGSEGV)) {
        wrong.push_str(&format!(" [straddling frame: {got:?}, Linux SIGSEGV]"));
    }
    // Random frames: any death by signal is fine; the kernel must live.
    let mut rng = Rng(cfg.seed ^ 0x51f);
    for _ in 0..20 * cfg.scale {
        let seed = rng.next();
        let got = child(2000, move || {
            let b = anon(65536);
            let mut r = Rng(seed);
            for off in (0..65536).step_by(8) {
                // SAFETY: inside the fresh mapping.
                unsafe { ((b + off) as *mut u64).write_volatile(r.next()) };
            }
            if seed & 1 == 1 {
                // SAFETY: inside the mapping.
                unsafe {
                    ((b + RESERVED) as *mut u64)
                        .write_volatile(u64::from(FPSIMD_MAGIC) | (u64::from(FPSIMD_SIZE) << 32))
                };
            }
            // SAFETY: ends the process.
            unsafe { adversary_sigreturn_at(b + 1024) }
        });
        if got == Some((false, -1)) {
            wrong.push_str(" [a random frame left an unkillable process]");
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}

extern "C" fn return_as_is(_: i32, _: usize, _: usize) {}

extern "C" fn fault_again(_: i32, _: usize, _: usize) {
    // SAFETY: a deliberate fault inside the handler.
    unsafe { core::ptr::without_provenance_mut::<u64>(16).write_volatile(1) };
}

fn segv_now() -> i32 {
    // SAFETY: a deliberate fault; the child exists to take it.
    unsafe { core::ptr::without_provenance_mut::<u64>(8).write_volatile(1) };
    0
}

fn altstack_at(sp: usize) {
    let ss = uapi::signal::StackT {
        ss_sp: sp as u64,
        ss_flags: 0,
        ss_size: 65536,
    }
    .to_bytes();
    sys(nr::SIGALTSTACK, &[ss.as_ptr() as usize, 0]);
}

pub fn altstack(_cfg: &Cfg) -> Result<(), String> {
    let mut wrong = String::new();
    type Case = (&'static str, fn() -> i32);
    let must_segv: [Case; 7] = [
        ("altstack PROT_NONE", || {
            let s = mmap(0, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS) as usize;
            altstack_at(s);
            handle(SIGSEGV, return_as_is, SA_ONSTACK);
            segv_now()
        }),
        ("altstack read-only", || {
            let s = mmap(0, 65536, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS) as usize;
            altstack_at(s);
            handle(SIGSEGV, return_as_is, SA_ONSTACK);
            segv_now()
        }),
        ("altstack in the kernel", || {
            altstack_at(0xffff_0000_0000_0000);
            handle(SIGSEGV, return_as_is, SA_ONSTACK);
            segv_now()
        }),
        ("altstack unmapped", || {
            altstack_at(0x7000_0000_0000);
            handle(SIGSEGV, return_as_is, SA_ONSTACK);
            segv_now()
        }),
        ("handler faults again", || {
            handle(SIGSEGV, fault_again, 0);
            segv_now()
        }),
        ("SIGSEGV blocked, altstack unusable", || {
            altstack_at(0xffff_0000_0000_0000);
            handle(SIGSEGV, return_as_is, SA_ONSTACK);
            sigmask(SIG_BLOCK, 1 << (SIGSEGV - 1));
            segv_now()
        }),
        ("SIGUSR1 with sp in the kernel", || {
            handle(SIGUSR1, return_as_is, 0);
            // SAFETY: ends the process.
            unsafe { adversary_kill_on_sp(0xffff_0000_0000_0000, getpid() as usize, SIGUSR1 as usize) }
        }),
    ];
    for (name, f) in must_segv {
        let got = child(5000, f);
        if got != Some((false, SIGSEGV)) {
            wrong.push_str(&format!(" [{name}: {got:?}, Linux SIGSEGV]"));
        }
    }
    // A handler that returns to the faulting store forever: legal, and it
    // must yield to SIGKILL. So must a task whose frames cannot be written.
    for (name, f) in [
        (
            "fault loop",
            (|| {
                handle(SIGSEGV, return_as_is, SA_NODEFER);
                segv_now()
            }) as fn() -> i32,
        ),
        ("fault loop on an unusable altstack", || {
            altstack_at(0x7000_0000_0000);
            handle(SIGSEGV, return_as_is, SA_ONSTACK | SA_NODEFER);
            segv_now()
        }),
    ] {
        let pid = spawn(f);
        sleep_ms(300);
        kill(pid, SIGKILL);
        match wait_timeout(pid, 5000) {
            Some(st) if describe(st) == (false, SIGKILL) || describe(st) == (false, SIGSEGV) => {}
            Some(st) => wrong.push_str(&format!(" [{name}: status {st:#x}]")),
            None => {
                wrong.push_str(&format!(" [{name}: unkillable]"));
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}

const BRK: u32 = 0xd420_0000;
const RET: u32 = 0xd65f_03c0;

static HITS: AtomicU64 = AtomicU64::new(0);
static BAD_HITS: AtomicU64 = AtomicU64::new(0);
static CODE: AtomicU64 = AtomicU64::new(0);

/// SIGTRAP handler: checks signo, si_code (TRAP_BRKPT) and si_addr (the
/// next BRK in order), then steps over the BRK.
extern "C" fn on_trap(sig: i32, info: usize, uc: usize) {
    let n = HITS.fetch_add(1, SeqCst);
    // SAFETY: the kernel passes a siginfo_t and a ucontext, both live.
    let (si, pc) = unsafe {
        (
            SigInfo::from_bytes(&*(info as *const [u8; SIGINFO_SIZE])),
            ((uc + UC_PC) as *const u64).read(),
        )
    };
    let (code, addr) = (si.code, si.addr);
    let want = CODE.load(SeqCst) + 4 * n;
    if sig != SIGTRAP || code != TRAP_BRKPT || addr != want || pc != want {
        BAD_HITS.fetch_add(1, SeqCst);
    }
    // SAFETY: as above; resume after the BRK.
    unsafe { ((uc + UC_PC) as *mut u64).write(pc + 4) };
}

/// The kernel's own immediates (kprobes, uprobes, kprobe step,
/// kretprobe, fault, BUG) and other interesting ones.
const SPECIAL: [u32; 12] = [
    0, 1, 0x004, 0x005, 0x006, 0x007, 0x100, 0x3e8, 0x800, 0x801, 0x8000, 0xffff,
];

pub fn brk_imm(cfg: &Cfg) -> Result<(), String> {
    let stride = (64 / cfg.scale).max(1) as u32;
    let mut imms: Vec<u32> = (0..=0xffffu32).step_by(stride as usize).collect();
    imms.extend_from_slice(&SPECIAL);
    let total = imms.len();
    let got = child(60_000 * cfg.scale, move || {
        handle(SIGTRAP, on_trap, 0);
        for batch in imms.chunks(1000) {
            let mut words: Vec<u32> = batch.iter().map(|i| BRK | (i << 5)).collect();
            words.push(RET);
            let code = code_page(&words);
            CODE.store(code as u64, SeqCst);
            HITS.store(0, SeqCst);
            call_code(code);
            if HITS.load(SeqCst) != batch.len() as u64 {
                rt::println!(
                    "adversary: brk-imm: {} of {} BRKs trapped",
                    HITS.load(SeqCst),
                    batch.len()
                );
                return 1;
            }
            sys(nr::MUNMAP, &[code, words.len() * 4]);
        }
        if BAD_HITS.load(SeqCst) > 0 {
            rt::println!(
                "adversary: brk-imm: {} traps with a wrong signal, si_code, si_addr or pc",
                BAD_HITS.load(SeqCst)
            );
            return 1;
        }
        0
    });
    if got != Some((true, 0)) {
        return Err(format!("{total} BRKs under a SIGTRAP handler: {got:?}"));
    }
    // Without a handler, and with SIGTRAP ignored: the process dies of SIGTRAP.
    let mut wrong = String::new();
    for imm in SPECIAL {
        for ignore in [false, true] {
            let got = child(5000, move || {
                if ignore {
                    disposition(SIGTRAP, SIG_IGN);
                }
                call_code(code_page(&[BRK | (imm << 5), RET]));
                0
            });
            if got != Some((false, SIGTRAP)) {
                wrong.push_str(&format!(
                    " [brk #{imm:#x}{}: {got:?}]",
                    if ignore { " SIG_IGN" } else { "" }
                ));
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!("not killed by SIGTRAP:{wrong}"))
    }
}

/// Instruction, name, what Linux does at EL0 (None: left to the kernel;
/// printed only).
const INSNS: &[(u32, &str, Option<i32>)] = &[
    (0x0000_0000, "udf #0", Some(SIGILL)),
    (0xd538_1000, "mrs x0, sctlr_el1", Some(SIGILL)),
    (0xd518_1000, "msr sctlr_el1, x0", Some(SIGILL)),
    (0xd538_2020, "mrs x0, ttbr1_el1", Some(SIGILL)),
    (0xd518_c000, "msr vbar_el1, x0", Some(SIGILL)),
    (0xd400_0002, "hvc #0", Some(SIGILL)),
    (0xd400_0003, "smc #0", Some(SIGILL)),
    (0xd69f_03e0, "eret", Some(SIGILL)),
    (0xd508_871f, "tlbi vmalle1", Some(SIGILL)),
    (0xd503_4fdf, "msr daifset, #0xf", Some(SIGILL)),
    (0xd53b_4220, "mrs x0, daif", Some(SIGILL)),
    (0xd508_7620, "dc ivac, x0", Some(SIGILL)),
    (0xd440_0000, "hlt #0", Some(SIGILL)),
    (0xd4a0_0001, "dcps1", Some(SIGILL)),
    (0xd500_41bf, "msr spsel, #1", Some(SIGILL)),
    (0xd508_7800, "at s1e1r, x0", Some(SIGILL)),
    (0xd53b_e040, "mrs x0, cntvct_el0", Some(0)),
    (0xd538_0000, "mrs x0, midr_el1", None),
    (0xd538_0600, "mrs x0, id_aa64isar0_el1", None),
    (0xd53b_9d00, "mrs x0, pmccntr_el0", None),
    (0xd503_207f, "wfi", None),
];

pub fn undef_insn(cfg: &Cfg) -> Result<(), String> {
    let mut wrong = String::new();
    let mut seen = String::new();
    for &(w, name, want) in INSNS {
        let got = child(5000, move || {
            // x0 points at a mapped page for the instructions that use it.
            let page = anon(PAGE);
            let code = code_page(&[w, RET]);
            // SAFETY: runs the instruction with x0 = page; it may clobber x0.
            unsafe {
                core::arch::asm!("blr {f}", f = in(reg) code, inout("x0") page => _, clobber_abi("C"));
            }
            0
        });
        let sig = match got {
            Some((false, s)) => s,
            Some((true, 0)) => 0,
            other => {
                wrong.push_str(&format!(" [{name}: {other:?}]"));
                continue;
            }
        };
        seen.push_str(&format!(" {name}={sig}"));
        if want.is_some_and(|s| s != sig) {
            wrong.push_str(&format!(" [{name}: signal {sig}, Linux {}]", want.unwrap_or(0)));
        }
    }
    rt::println!("adversary: undef-insn: outcomes (signal, 0 = executed):{seen}");
    // Random words (no SVC): whatever they do, the process ends.
    let mut rng = Rng(cfg.seed ^ 0x1115);
    for _ in 0..40 * cfg.scale {
        let mut words = [0u32; 16];
        for w in words.iter_mut() {
            *w = rng.next() as u32;
            if *w & 0xffe0_001f == 0xd400_0001 {
                *w = 0;
            }
        }
        let got = child(2000, move || {
            call_code(code_page(&words));
            0
        });
        if got == Some((false, -1)) {
            wrong.push_str(&format!(" [random words {words:x?}: unkillable]"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}
