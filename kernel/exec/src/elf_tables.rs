//! The initial user stack: argument and environment strings, the auxiliary
//! vector and the pointer arrays, laid out as Linux's `do_execveat_common()`,
//! `copy_strings()` and `create_elf_tables()` do on arm64.
//!
//! From the stack top down:
//!
//! ```text
//! stack_top  ->  8 zero bytes          (bprm->p starts one pointer below the top)
//!                execfn string, NUL    (AT_EXECFN)
//!                envp strings          (envp[envc-1] highest)
//!                argv strings          (argv[0] lowest: mm->arg_start)
//!                padding to 16 bytes   (arch_align_stack(), without its random offset)
//!                "aarch64\0"           (AT_PLATFORM)
//!                16 random bytes       (AT_RANDOM)
//!                padding to 16 bytes
//!                auxv pairs, AT_NULL pair last
//!                NULL, envp pointers
//!                NULL, argv pointers
//! sp         ->  argc                  (16-byte aligned)
//! ```

use alloc::vec::Vec;

use crate::auxvec::*;
use crate::{
    ExecError, LoadPlan, DEFAULT_STACK_RLIMIT, MAX_ARG_STRINGS, MAX_ARG_STRLEN, PAGE_SIZE, TASK_SIZE, USER_MIN,
};

/// The platform string arm64 reports in `AT_PLATFORM` (Linux's
/// `ELF_PLATFORM` for a little-endian kernel); copied to the stack without
/// its NUL here.
pub const ELF_PLATFORM: &[u8] = b"aarch64";

/// Bytes [`ELF_PLATFORM`] takes on the stack, with its NUL.
const PLATFORM_SIZE: u64 = ELF_PLATFORM.len() as u64 + 1;

/// Size of a stack slot (`elf_addr_t`).
const WORD: u64 = 8;

/// Linux's `_STK_LIM / 4 * 3`: the most the strings and pointers may take,
/// whatever the stack limit.
const MAX_ARGS_SIZE: u64 = DEFAULT_STACK_RLIMIT / 4 * 3;

/// Linux's `ARG_MAX` (32 pages): the least they may take, whatever the stack
/// limit.
const MIN_ARGS_SIZE: u64 = 32 * PAGE_SIZE;

/// What the auxiliary vector reports beyond the executable itself, and the
/// stack limit the strings are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuxParams {
    /// `AT_HWCAP`: arm64 `HWCAP_*` bits of the CPU.
    pub hwcap: u64,
    /// `AT_HWCAP2`: arm64 `HWCAP2_*` bits.
    pub hwcap2: u64,
    /// `AT_UID`.
    pub uid: u32,
    /// `AT_EUID`.
    pub euid: u32,
    /// `AT_GID`.
    pub gid: u32,
    /// `AT_EGID`.
    pub egid: u32,
    /// `AT_SECURE`: the program gained privileges (setuid, setgid).
    pub secure: bool,
    /// The 16 bytes `AT_RANDOM` points at (Linux: `get_random_bytes()`).
    pub random: [u8; 16],
    /// `AT_MINSIGSTKSZ`: the size of the signal frame. Linux emits
    /// `AT_IGNORE` in its place when it has no value; 0 does the same here.
    pub minsigstksz: u64,
    /// `AT_SYSINFO_EHDR`, the vDSO's address: Linux arm64 always has one;
    /// `None` leaves the entry out.
    pub vdso: Option<u64>,
    /// `AT_RSEQ_FEATURE_SIZE` (Linux 6.3+ with `CONFIG_RSEQ`: 28), emitted
    /// with `AT_RSEQ_ALIGN` (32); `None` leaves both out, for a kernel
    /// without `rseq()`.
    pub rseq_feature_size: Option<u64>,
    /// `AT_BASE`: where the interpreter was loaded (its load bias); 0 for
    /// a program without one.
    pub interp_base: u64,
    /// The `RLIMIT_STACK` soft limit (not an auxv entry): strings and
    /// pointers may take a quarter of it, at most 6 MiB and at least
    /// 128 KiB, as in Linux's `bprm_stack_limits()`.
    pub stack_rlimit: u64,
}

impl Default for AuxParams {
    /// Root's credentials, no capabilities, zero random bytes (fill them!),
    /// no vDSO, no rseq, the default 8 MiB stack limit; `minsigstksz` is
    /// 4720, what Linux 6.12 reports on a CPU without SVE or SME (QEMU
    /// cortex-a72; see `tests/fixtures/README.md`).
    fn default() -> Self {
        Self {
            hwcap: 0,
            hwcap2: 0,
            uid: 0,
            euid: 0,
            gid: 0,
            egid: 0,
            secure: false,
            random: [0; 16],
            minsigstksz: 4720,
            vdso: None,
            rseq_feature_size: None,
            interp_base: 0,
            stack_rlimit: DEFAULT_STACK_RLIMIT,
        }
    }
}

/// The initial stack of a new program: the bytes to copy to
/// `[sp, stack_top)`, and where things are in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackImage {
    /// The initial stack pointer, 16-byte aligned; `argc` is stored here.
    pub sp: u64,
    /// The contents of `[sp, stack_top)`.
    pub bytes: Vec<u8>,
    /// `argc` as the program sees it (1 with an empty `argv[0]` if `argv` was
    /// empty, as Linux 5.18+ does).
    pub argc: u64,
    /// Start of the argument strings (`mm->arg_start`, for
    /// `/proc/pid/cmdline`).
    pub arg_start: u64,
    /// End of the argument strings (`mm->arg_end`).
    pub arg_end: u64,
    /// Start of the environment strings (`mm->env_start`).
    pub env_start: u64,
    /// End of the environment strings (`mm->env_end`).
    pub env_end: u64,
    /// Address of the file name (`AT_EXECFN`).
    pub execfn: u64,
    /// Address of the platform string (`AT_PLATFORM`).
    pub platform: u64,
    /// Address of the random bytes (`AT_RANDOM`).
    pub random: u64,
    /// The auxiliary vector, `AT_NULL` last (`mm->saved_auxv`, for
    /// `/proc/pid/auxv`).
    pub auxv: Vec<(u64, u64)>,
}

/// The C string a byte slice stands for: up to its first NUL, if any.
fn c_str(s: &[u8]) -> &[u8] {
    s.split(|&b| b == 0).next().unwrap_or_default()
}

/// Builds the initial stack below `stack_top` (the end of the stack mapping)
/// for a program loaded by `plan`, with these arguments, environment and
/// file name (`bprm->filename`, the path as given to `execve`).
///
/// Strings are taken up to their first NUL, as Linux reads them. An empty
/// `argv` gets one empty string, as Linux 5.18+ adds. Limits are Linux's:
/// more than [`MAX_ARG_STRINGS`] strings is [`ExecError::TooManyArgs`]; a
/// string longer than [`MAX_ARG_STRLEN`] with its NUL is
/// [`ExecError::ArgTooLong`]; strings and pointers beyond the share of
/// [`AuxParams::stack_rlimit`] they may use is [`ExecError::ArgsTooBig`]
/// (all `E2BIG`). A stack that would leave the user range is
/// [`ExecError::StackOutOfRange`] (`ENOMEM`).
///
/// Linux's `arch_align_stack()` on arm64 also moves the stack down by a
/// random amount below a page; pass a lower `stack_top` to do the same.
pub fn build_stack(
    stack_top: u64,
    argv: &[&[u8]],
    envp: &[&[u8]],
    execfn: &[u8],
    plan: &LoadPlan,
    aux: AuxParams,
) -> Result<StackImage, ExecError> {
    // do_execveat_common(): count(), then bprm_stack_limits().
    if argv.len() > MAX_ARG_STRINGS || envp.len() > MAX_ARG_STRINGS {
        return Err(ExecError::TooManyArgs);
    }
    let argc = argv.len().max(1) as u64;
    let envc = envp.len() as u64;
    let limit = (aux.stack_rlimit / 4).clamp(MIN_ARGS_SIZE, MAX_ARGS_SIZE);
    let ptr_size = argc
        .checked_add(envc)
        .and_then(|n| n.checked_mul(WORD))
        .ok_or(ExecError::ArgsTooBig)?;
    let mut budget = limit
        .checked_sub(ptr_size)
        .filter(|&b| b > 0)
        .ok_or(ExecError::ArgsTooBig)?;

    if stack_top > TASK_SIZE {
        return Err(ExecError::StackOutOfRange);
    }
    let mut strings = StringArea {
        p: stack_top.checked_sub(WORD).ok_or(ExecError::StackOutOfRange)?,
        placed: Vec::new(),
    };

    // The file name first, at the top; then the environment and the
    // arguments, each array copied last string first, so that the first
    // string is lowest (copy_strings()).
    let execfn_addr = strings.push(c_str(execfn), &mut budget)?;
    let env_end = strings.p;
    let mut env_ptrs = Vec::new();
    try_reserve(&mut env_ptrs, envp.len())?;
    for s in envp.iter().rev() {
        env_ptrs.push(strings.push(c_str(s), &mut budget)?);
    }
    env_ptrs.reverse();
    let env_start = strings.p;
    let mut arg_ptrs = Vec::new();
    try_reserve(&mut arg_ptrs, argv.len().max(1))?;
    for s in argv.iter().rev() {
        arg_ptrs.push(strings.push(c_str(s), &mut budget)?);
    }
    if argv.is_empty() {
        arg_ptrs.push(strings.push(b"", &mut budget)?);
    }
    arg_ptrs.reverse();
    let arg_start = strings.p;

    // create_elf_tables(): the platform string and the random bytes below
    // the aligned strings.
    let mut p = strings.p & !15;
    let platform = p.checked_sub(PLATFORM_SIZE).ok_or(ExecError::StackOutOfRange)?;
    p = platform;
    let random = p
        .checked_sub(aux.random.len() as u64)
        .ok_or(ExecError::StackOutOfRange)?;
    p = random;

    let auxv = auxv(plan, &aux, random, execfn_addr, platform);
    // argc, argv with its NULL, envp with its NULL, then the auxv pairs.
    // `ptr_size` fitting the limit bounds argc and envc well below 2^20.
    let words = (auxv.len() as u64)
        .saturating_mul(2)
        .saturating_add(ptr_size / WORD)
        .saturating_add(3);
    let sp = p
        .checked_sub(words.saturating_mul(WORD))
        .ok_or(ExecError::StackOutOfRange)?
        & !15;
    if sp < USER_MIN {
        return Err(ExecError::StackOutOfRange);
    }

    let size = stack_top.checked_sub(sp).and_then(|size| usize::try_from(size).ok());
    let size = size.ok_or(ExecError::StackOutOfRange)?;
    let mut bytes = Vec::new();
    try_reserve(&mut bytes, size)?;
    bytes.resize(size, 0);
    let mut image = Image { base: sp, bytes };
    let mut words = sp;
    let mut put_word = |image: &mut Image, value: u64| {
        image.write(words, &value.to_le_bytes());
        words = words.wrapping_add(WORD);
    };
    put_word(&mut image, argc);
    for &ptr in arg_ptrs.iter().chain(&[0]).chain(&env_ptrs).chain(&[0]) {
        put_word(&mut image, ptr);
    }
    for &(key, value) in &auxv {
        put_word(&mut image, key);
        put_word(&mut image, value);
    }
    for &(addr, s) in &strings.placed {
        image.write(addr, s);
    }
    image.write(platform, ELF_PLATFORM);
    image.write(random, &aux.random);

    Ok(StackImage {
        sp,
        bytes: image.bytes,
        argc,
        arg_start,
        arg_end: env_start,
        env_start,
        env_end,
        execfn: execfn_addr,
        platform,
        random,
        auxv,
    })
}

/// The auxiliary vector, in the order Linux 6.12 arm64's
/// `create_elf_tables()` emits it (ARCH_DLINFO first).
fn auxv(plan: &LoadPlan, aux: &AuxParams, random: u64, execfn: u64, platform: u64) -> Vec<(u64, u64)> {
    let mut v = Vec::with_capacity(24);
    if let Some(vdso) = aux.vdso {
        v.push((AT_SYSINFO_EHDR, vdso));
    }
    v.push(match aux.minsigstksz {
        0 => (AT_IGNORE, 0),
        size => (AT_MINSIGSTKSZ, size),
    });
    v.extend_from_slice(&[
        (AT_HWCAP, aux.hwcap),
        (AT_PAGESZ, PAGE_SIZE),
        (AT_CLKTCK, CLOCKS_PER_SEC),
        (AT_PHDR, plan.phdr_addr),
        (AT_PHENT, plan.phent),
        (AT_PHNUM, plan.phnum),
        (AT_BASE, aux.interp_base),
        (AT_FLAGS, 0),
        (AT_ENTRY, plan.entry),
        (AT_UID, aux.uid.into()),
        (AT_EUID, aux.euid.into()),
        (AT_GID, aux.gid.into()),
        (AT_EGID, aux.egid.into()),
        (AT_SECURE, aux.secure.into()),
        (AT_RANDOM, random),
        (AT_HWCAP2, aux.hwcap2),
        (AT_EXECFN, execfn),
        (AT_PLATFORM, platform),
    ]);
    if let Some(size) = aux.rseq_feature_size {
        v.extend_from_slice(&[(AT_RSEQ_FEATURE_SIZE, size), (AT_RSEQ_ALIGN, 32)]);
    }
    v.push((AT_NULL, 0));
    v
}

/// Strings placed downwards from the stack top.
struct StringArea<'a> {
    /// The lowest byte used so far (`bprm->p`).
    p: u64,
    /// Each string (without NUL; the image is zeroed) and its address.
    placed: Vec<(u64, &'a [u8])>,
}

impl<'a> StringArea<'a> {
    /// Places `s` and its NUL below the others, as `copy_strings()` does,
    /// charging `budget`; returns its address.
    fn push(&mut self, s: &'a [u8], budget: &mut u64) -> Result<u64, ExecError> {
        if s.len() >= MAX_ARG_STRLEN {
            return Err(ExecError::ArgTooLong);
        }
        // Below MAX_ARG_STRLEN: no overflow.
        let len = (s.len() as u64).wrapping_add(1);
        *budget = budget.checked_sub(len).ok_or(ExecError::ArgsTooBig)?;
        self.p = self.p.checked_sub(len).ok_or(ExecError::StackOutOfRange)?;
        self.placed.try_reserve(1).map_err(|_| ExecError::OutOfMemory)?;
        self.placed.push((self.p, s));
        Ok(self.p)
    }
}

/// `Vec::try_reserve`, as an `ENOMEM`.
fn try_reserve<T>(v: &mut Vec<T>, n: usize) -> Result<(), ExecError> {
    v.try_reserve_exact(n).map_err(|_| ExecError::OutOfMemory)
}

/// The stack bytes being filled, addressed by user address.
struct Image {
    /// User address of `bytes[0]`.
    base: u64,
    bytes: Vec<u8>,
}

impl Image {
    /// Copies `data` to user address `addr`. The layout puts everything
    /// inside `[base, stack_top)`; a slip would drop bytes, not panic.
    fn write(&mut self, addr: u64, data: &[u8]) {
        let Some(start) = addr.checked_sub(self.base).and_then(|o| usize::try_from(o).ok()) else {
            return;
        };
        if let Some(dst) = start
            .checked_add(data.len())
            .and_then(|end| self.bytes.get_mut(start..end))
        {
            dst.copy_from_slice(data);
        }
    }
}
