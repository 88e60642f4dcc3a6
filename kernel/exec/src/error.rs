//! Why an `execve` was refused, and the errno Linux gives for it.

use core::fmt;

use uapi::Errno;

/// Why a file cannot be executed, or its arguments cannot be passed.
///
/// [`ExecError::errno`] gives the value `execve` returns. Every malformed
/// file is `ENOEXEC`. Linux finds some of these defects (a segment that does
/// not map, `p_filesz > p_memsz`, a bad entry point) only after the point of
/// no return and then kills the task with SIGSEGV; they are all detected here
/// before anything is torn down, so the caller gets its error back instead.
/// Where a segment is named, `index` is its position in the program header
/// table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecError {
    /// The file does not start with `\x7fELF`, or is shorter than an ELF
    /// header.
    BadMagic,
    /// Not ELFCLASS64 (a 32-bit file).
    BadClass,
    /// Not ELFDATA2LSB (a big-endian file).
    BadEndian,
    /// `e_machine` is not EM_AARCH64.
    BadMachine,
    /// `e_type` is neither ET_EXEC nor ET_DYN.
    BadType,
    /// `e_phentsize` is not the size of an ELF64 program header (56).
    BadPhentsize,
    /// No program headers, or more than Linux reads (64 KiB of them).
    BadPhnum,
    /// The program header table runs past the end of the file.
    PhdrsOutOfFile,
    /// A PT_INTERP segment is malformed: outside the file, shorter than 2 or
    /// longer than `PATH_MAX` bytes, or not NUL-terminated.
    BadInterp,
    /// There is no PT_LOAD segment (or every one is empty).
    NoLoadSegment,
    /// A PT_LOAD asks for more file bytes than memory (`p_filesz >
    /// p_memsz`).
    FileszExceedsMemsz {
        /// The segment's program header index.
        index: usize,
    },
    /// A PT_LOAD's file bytes `[p_offset, p_offset + p_filesz)` are not all
    /// inside the file (or the sum overflows).
    SegmentOutOfFile {
        /// The segment's program header index.
        index: usize,
    },
    /// A PT_LOAD's `p_offset` and `p_vaddr` differ modulo the page size, so
    /// the file cannot be mapped at that address.
    SegmentMisaligned {
        /// The segment's program header index.
        index: usize,
    },
    /// A PT_LOAD, after the load bias, is not inside the user range
    /// [`USER_MIN`](crate::USER_MIN)..[`TASK_SIZE`](crate::TASK_SIZE) (or
    /// the sum overflows).
    SegmentOutOfRange {
        /// The segment's program header index.
        index: usize,
    },
    /// A PT_LOAD starts below the end of the previous one: the segments
    /// overlap or are not sorted by address, as the ELF specification
    /// requires.
    SegmentsOverlap {
        /// The program header index of the later segment.
        index: usize,
    },
    /// `e_entry` is not inside an executable PT_LOAD. (Linux checks only
    /// that it is a user address, and the program faults on its first
    /// instruction.)
    BadEntry,
    /// An argument, environment string or the file name is longer than
    /// [`MAX_ARG_STRLEN`](crate::MAX_ARG_STRLEN) with its NUL.
    ArgTooLong,
    /// More than [`MAX_ARG_STRINGS`](crate::MAX_ARG_STRINGS) arguments or
    /// environment strings.
    TooManyArgs,
    /// The strings and their pointers do not fit in the part of the stack
    /// limit Linux allows them (a quarter of `RLIMIT_STACK`, at most 6 MiB,
    /// at least 128 KiB).
    ArgsTooBig,
    /// The initial stack does not fit below the given stack top inside the
    /// user range.
    StackOutOfRange,
    /// No memory for the stack image.
    OutOfMemory,
}

impl ExecError {
    /// The errno Linux's `execve` returns for this error.
    pub fn errno(&self) -> Errno {
        match self {
            Self::ArgTooLong | Self::TooManyArgs | Self::ArgsTooBig => Errno::E2BIG,
            Self::StackOutOfRange | Self::OutOfMemory => Errno::ENOMEM,
            _ => Errno::ENOEXEC,
        }
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMagic => f.write_str("not an ELF file"),
            Self::BadClass => f.write_str("not a 64-bit ELF file"),
            Self::BadEndian => f.write_str("not a little-endian ELF file"),
            Self::BadMachine => f.write_str("not an AArch64 executable"),
            Self::BadType => f.write_str("neither ET_EXEC nor ET_DYN"),
            Self::BadPhentsize => f.write_str("e_phentsize is not 56"),
            Self::BadPhnum => f.write_str("no program headers, or too many"),
            Self::PhdrsOutOfFile => f.write_str("program headers outside the file"),
            Self::BadInterp => f.write_str("malformed PT_INTERP"),
            Self::NoLoadSegment => f.write_str("no PT_LOAD segment"),
            Self::FileszExceedsMemsz { index } => write!(f, "segment {index}: p_filesz > p_memsz"),
            Self::SegmentOutOfFile { index } => write!(f, "segment {index}: file range outside the file"),
            Self::SegmentMisaligned { index } => write!(f, "segment {index}: p_offset and p_vaddr differ mod page"),
            Self::SegmentOutOfRange { index } => write!(f, "segment {index}: outside the user address range"),
            Self::SegmentsOverlap { index } => write!(f, "segment {index}: overlaps or precedes the previous one"),
            Self::BadEntry => f.write_str("entry point not in an executable segment"),
            Self::ArgTooLong => f.write_str("argument string too long"),
            Self::TooManyArgs => f.write_str("too many argument strings"),
            Self::ArgsTooBig => f.write_str("arguments and environment too big for the stack limit"),
            Self::StackOutOfRange => f.write_str("initial stack outside the user address range"),
            Self::OutOfMemory => f.write_str("out of memory for the initial stack"),
        }
    }
}
