//! Auxiliary vector entry types, Linux's `include/uapi/linux/auxvec.h` and
//! arm64's `asm/auxvec.h`.

/// End of the vector.
pub const AT_NULL: u64 = 0;
/// Entry to be ignored.
pub const AT_IGNORE: u64 = 1;
/// Address of the program headers.
pub const AT_PHDR: u64 = 3;
/// Size of one program header.
pub const AT_PHENT: u64 = 4;
/// Number of program headers.
pub const AT_PHNUM: u64 = 5;
/// Page size.
pub const AT_PAGESZ: u64 = 6;
/// Load address of the interpreter (0 for a static program).
pub const AT_BASE: u64 = 7;
/// Flags (`AT_FLAGS_PRESERVE_ARGV0`, only for binfmt_misc).
pub const AT_FLAGS: u64 = 8;
/// The program's entry point.
pub const AT_ENTRY: u64 = 9;
/// Real user id.
pub const AT_UID: u64 = 11;
/// Effective user id.
pub const AT_EUID: u64 = 12;
/// Real group id.
pub const AT_GID: u64 = 13;
/// Effective group id.
pub const AT_EGID: u64 = 14;
/// Address of the platform string.
pub const AT_PLATFORM: u64 = 15;
/// CPU capabilities (arm64 `HWCAP_*`).
pub const AT_HWCAP: u64 = 16;
/// Frequency of `times()` ticks.
pub const AT_CLKTCK: u64 = 17;
/// Whether the program runs with elevated privileges (setuid and such).
pub const AT_SECURE: u64 = 23;
/// Address of 16 random bytes.
pub const AT_RANDOM: u64 = 25;
/// More CPU capabilities (arm64 `HWCAP2_*`).
pub const AT_HWCAP2: u64 = 26;
/// Size of the `struct rseq` features the kernel supports.
pub const AT_RSEQ_FEATURE_SIZE: u64 = 27;
/// Alignment `struct rseq` needs.
pub const AT_RSEQ_ALIGN: u64 = 28;
/// Address of the file name the program was executed as.
pub const AT_EXECFN: u64 = 31;
/// Address of the vDSO's ELF header.
pub const AT_SYSINFO_EHDR: u64 = 33;
/// Minimal stack size for a signal handler (arm64: the signal frame size).
pub const AT_MINSIGSTKSZ: u64 = 51;
