//! The load plan of an ELF64 AArch64 executable and of its interpreter: the
//! checks and the address arithmetic of Linux's `load_elf_binary()` and
//! `load_elf_interp()`, without the mapping.

use alloc::vec::Vec;
use core::ops::Range;

use object::elf::{self, FileHeader64, ProgramHeader64};
use object::read::elf::ProgramHeader as _;
use object::{LittleEndian as LE, ReadRef};

use crate::{page_align, page_offset, page_start, ExecError, ELF_ET_DYN_BASE, PAGE_SIZE, TASK_SIZE, USER_MIN};

/// Size of an ELF64 program header, the only `e_phentsize` accepted.
const PHENT_SIZE: usize = core::mem::size_of::<ProgramHeader64<LE>>();

/// Most bytes of program headers Linux's `load_elf_phdrs()` reads.
const MAX_PHDRS_SIZE: usize = 65536;

/// Longest PT_INTERP path, NUL included (Linux's `PATH_MAX`).
const PATH_MAX: u64 = 4096;

/// The kind of executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfType {
    /// `ET_EXEC`: linked at fixed addresses, loaded with a bias of 0.
    Exec,
    /// `ET_DYN`: a PIE (with PT_INTERP) or a static-PIE (without), loaded
    /// at [`ELF_ET_DYN_BASE`]; an interpreter is placed where the caller
    /// says ([`load_interp_plan`]).
    Dyn,
}

/// Access rights of a segment, from its `p_flags`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prot {
    /// `PF_R`: readable.
    pub read: bool,
    /// `PF_W`: writable.
    pub write: bool,
    /// `PF_X`: executable.
    pub exec: bool,
}

/// One PT_LOAD segment, as the kernel maps it.
///
/// Map the pages `vaddr` with `prot`, copy the file bytes `file` to
/// `vaddr.start`, and fill `zero` with zeros; `file.len()` bytes plus
/// `zero.len()` bytes cover `vaddr` exactly. As Linux maps whole file pages,
/// `file` starts at the page holding `p_offset` (the bytes before the
/// segment in its first page come from the file too), and when the segment
/// has no bss (`p_filesz == p_memsz`) it runs on to the end of the last page
/// or of the file, whichever comes first. With bss, the rest of the last file
/// page is zeroed (Linux's `padzero()`).
///
/// Segments are sorted by address and never overlap, but two consecutive
/// segments may share one boundary page (a data segment that starts in the
/// page where the text ends). Linux's `MAP_FIXED` mappings then let the later
/// segment replace that page; the kernel must apply the segments in order
/// with the same effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Page-aligned user addresses the segment occupies, load bias applied.
    pub vaddr: Range<u64>,
    /// File offsets of the bytes to copy to `vaddr.start`.
    pub file: Range<u64>,
    /// User addresses to fill with zeros: from the end of the copied bytes to
    /// `vaddr.end`.
    pub zero: Range<u64>,
    /// Access rights.
    pub prot: Prot,
}

/// What `execve` must do to load a static executable, and what the
/// auxiliary vector reports about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPlan {
    /// `ET_EXEC` or `ET_DYN`.
    pub kind: ElfType,
    /// The PT_INTERP path (without its NUL) of a dynamically linked
    /// program: the kernel loads that file too and starts there.
    pub interp: Option<Vec<u8>>,
    /// The non-empty PT_LOAD segments, sorted by address.
    pub segments: Vec<Segment>,
    /// Where the program starts: `e_entry` plus the bias (`AT_ENTRY`).
    pub entry: u64,
    /// Address of the program headers in memory (`AT_PHDR`). As in Linux
    /// 6.x, computed from the PT_LOAD whose file bytes contain `e_phoff`
    /// (PT_PHDR is not consulted); if none does, it is just the bias, as
    /// Linux reports then.
    pub phdr_addr: u64,
    /// Size of a program header, 56 (`AT_PHENT`).
    pub phent: u64,
    /// Number of program headers, `e_phnum` (`AT_PHNUM`).
    pub phnum: u64,
    /// Where the heap starts: the end of the highest segment, rounded up to a
    /// page (`mm->start_brk` without brk randomisation).
    pub brk_start: u64,
    /// What was added to every address of the file: 0 for `ET_EXEC`; for
    /// `ET_DYN`, `ELF_PAGESTART((ELF_ET_DYN_BASE & !(align - 1)) -
    /// first_vaddr)` with `align` the largest power-of-two `p_align` of the
    /// PT_LOADs rounded up to a page, as Linux's `load_elf_binary()` computes
    /// it (modulo 2^64).
    ///
    /// Linux 6.12 loads only a PIE that has an interpreter at
    /// `ELF_ET_DYN_BASE`; a static-PIE goes to the mmap base and gets its brk
    /// moved to `ELF_ET_DYN_BASE` instead. This crate uses `ELF_ET_DYN_BASE`
    /// for the static-PIE image itself: the program cannot tell the
    /// difference beyond the addresses.
    pub bias: u64,
    /// PT_GNU_STACK has `PF_X`: the program asks for an executable stack.
    /// Reported only: the stack is never executable here.
    pub exec_stack: bool,
}

/// Reads the program headers of an ELF64 little-endian AArch64 executable
/// and plans its loading; a dynamically linked one names its interpreter in
/// [`LoadPlan::interp`].
///
/// Every defect is an [`ExecError`], all `ENOEXEC`. Nothing here panics,
/// whatever `elf` holds.
pub fn load_plan(elf: &[u8]) -> Result<LoadPlan, ExecError> {
    load_plan_head(elf, elf.len() as u64)
}

/// [`load_plan`] from the first bytes of a file of `file_len` bytes: `head`
/// must hold at least the [`head_len`] first bytes of the file (or all of
/// it), and the plan is then the one of the whole file, which an exec need
/// not read (Linux reads only the headers too).
pub fn load_plan_head(head: &[u8], file_len: u64) -> Result<LoadPlan, ExecError> {
    let elf = head;
    let (header, phdrs) = read_headers(elf)?;
    let endian = LE;

    // The first PT_INTERP counts, as in Linux's loop.
    let interp = match phdrs.iter().find(|ph| ph.p_type(endian) == elf::PT_INTERP) {
        Some(ph) => Some(read_interp(elf, ph)?),
        None => None,
    };
    let kind = elf_type(header);
    let bias = match kind {
        ElfType::Exec => 0,
        ElfType::Dyn => dyn_bias(phdrs),
    };
    let mut plan = plan_at(file_len, header, phdrs, kind, bias)?;
    plan.interp = interp;
    Ok(plan)
}

/// Plans the loading of an ELF interpreter (`ld-linux-aarch64.so.1`) as
/// Linux's `load_elf_interp()`: an `ET_DYN` one with its first page at
/// `base` (page aligned; the caller finds a free range of
/// [`image_span`] bytes, as Linux's first `mmap` of the interpreter does), an
/// `ET_EXEC` one where it was linked. Its own PT_INTERP, if any, is ignored.
/// [`LoadPlan::bias`] is then `AT_BASE`.
pub fn load_interp_plan(elf: &[u8], base: u64) -> Result<LoadPlan, ExecError> {
    load_interp_plan_head(elf, elf.len() as u64, base)
}

/// [`load_interp_plan`] from the first bytes of a file of `file_len` bytes,
/// as [`load_plan_head`].
pub fn load_interp_plan_head(head: &[u8], file_len: u64, base: u64) -> Result<LoadPlan, ExecError> {
    let (header, phdrs) = read_headers(head)?;
    let kind = elf_type(header);
    let bias = match kind {
        ElfType::Exec => 0,
        ElfType::Dyn => base.wrapping_sub(page_start(first_load_vaddr(phdrs))),
    };
    plan_at(file_len, header, phdrs, kind, bias)
}

/// How many first bytes of an ELF file the planning functions read, as far
/// as `head` (the file's first bytes) tells: the ELF header, the program
/// header table and the first PT_INTERP's path. When `head` is shorter, the
/// caller reads that many bytes (or the whole file) and asks again, the
/// program headers naming the interpreter's place. Bounded by the limits
/// the checks enforce, whatever the headers say.
pub fn head_len(head: &[u8]) -> u64 {
    let endian = LE;
    const EHDR: u64 = core::mem::size_of::<FileHeader64<LE>>() as u64;
    let Ok(header) = head.read_at::<FileHeader64<LE>>(0) else {
        return EHDR;
    };
    let phoff = header.e_phoff.get(endian);
    let phnum = usize::from(header.e_phnum.get(endian)).min(MAX_PHDRS_SIZE / PHENT_SIZE);
    let mut need = EHDR.max(phoff.saturating_add(phnum.saturating_mul(PHENT_SIZE) as u64));
    if let Ok(phdrs) = head.read_slice_at::<ProgramHeader64<LE>>(phoff, phnum) {
        if let Some(ph) = phdrs.iter().find(|ph| ph.p_type(endian) == elf::PT_INTERP) {
            let size = ph.p_filesz(endian).min(PATH_MAX);
            need = need.max(ph.p_offset(endian).saturating_add(size));
        }
    }
    need
}

/// Bytes of address space the PT_LOADs of `elf` span, from the page of the
/// first to the end of the last, page aligned (Linux's
/// `total_mapping_size()`): what an interpreter's base must leave free.
pub fn image_span(elf: &[u8]) -> Result<u64, ExecError> {
    let (_, phdrs) = read_headers(elf)?;
    let endian = LE;
    let mut loads = phdrs.iter().filter(|ph| ph.p_type(endian) == elf::PT_LOAD);
    let first = loads.next().ok_or(ExecError::NoLoadSegment)?;
    let last = loads.next_back().unwrap_or(first);
    let end = last
        .p_vaddr(endian)
        .checked_add(last.p_memsz(endian))
        .and_then(page_align)
        .ok_or(ExecError::SegmentOutOfRange { index: 0 })?;
    end.checked_sub(page_start(first.p_vaddr(endian)))
        .filter(|&span| span > 0 && span <= TASK_SIZE)
        .ok_or(ExecError::NoLoadSegment)
}

fn elf_type(header: &FileHeader64<LE>) -> ElfType {
    match header.e_type.get(LE) {
        elf::ET_EXEC => ElfType::Exec,
        _ => ElfType::Dyn,
    }
}

fn first_load_vaddr(phdrs: &[ProgramHeader64<LE>]) -> u64 {
    phdrs
        .iter()
        .find(|ph| ph.p_type(LE) == elf::PT_LOAD)
        .map_or(0, |ph| ph.p_vaddr(LE))
}

/// The plan of `elf` loaded with `bias` added to every address.
fn plan_at(
    file_len: u64,
    header: &FileHeader64<LE>,
    phdrs: &[ProgramHeader64<LE>],
    kind: ElfType,
    bias: u64,
) -> Result<LoadPlan, ExecError> {
    let endian = LE;

    let mut segments: Vec<Segment> = Vec::new();
    // Where each planned segment came from, to place `e_entry` and
    // `e_phoff`.
    let mut sources: Vec<Source> = Vec::new();
    let mut last_end = 0u64;
    let mut exec_stack = false;
    for (index, ph) in phdrs.iter().enumerate() {
        match ph.p_type(endian) {
            elf::PT_LOAD => {}
            elf::PT_GNU_STACK => {
                // The last one wins, as in Linux's loop.
                exec_stack = ph.p_flags(endian) & elf::PF_X != 0;
                continue;
            }
            _ => continue,
        }
        let Some((segment, source)) = plan_segment(file_len, ph, index, bias)? else {
            continue;
        };
        if source.start < last_end {
            return Err(ExecError::SegmentsOverlap { index });
        }
        last_end = source.end;
        segments.push(segment);
        sources.push(source);
    }
    if segments.is_empty() {
        return Err(ExecError::NoLoadSegment);
    }

    // The offsets found below lie inside a checked segment, so adding them
    // to its start stays inside it.
    let e_entry = header.e_entry.get(endian);
    let entry = segments
        .iter()
        .zip(&sources)
        .filter(|(segment, _)| segment.prot.exec)
        .find_map(|(_, source)| Some((source, e_entry.checked_sub(source.vaddr).filter(|&d| d < source.memsz)?)))
        .map(|(source, delta)| source.start.wrapping_add(delta))
        .ok_or(ExecError::BadEntry)?;
    // A later segment that shares the entry's page replaces it.
    if !segments
        .iter()
        .rev()
        .find(|s| s.vaddr.contains(&entry))
        .is_some_and(|s| s.prot.exec)
    {
        return Err(ExecError::BadEntry);
    }

    // Linux's `load_elf_binary()`: the last PT_LOAD whose file bytes hold
    // `e_phoff` gives AT_PHDR; none leaves it at the bias.
    let e_phoff = header.e_phoff.get(endian);
    let phdr_addr = sources
        .iter()
        .rev()
        .find_map(|source| {
            Some((
                source,
                e_phoff.checked_sub(source.offset).filter(|&d| d < source.filesz)?,
            ))
        })
        .map_or(bias, |(source, delta)| source.start.wrapping_add(delta));

    Ok(LoadPlan {
        kind,
        interp: None,
        entry,
        phdr_addr,
        phent: PHENT_SIZE as u64,
        phnum: phdrs.len() as u64,
        // `last_end` is a checked segment end: rounding it up stays below
        // TASK_SIZE.
        brk_start: page_align(last_end).unwrap_or(TASK_SIZE),
        bias,
        exec_stack,
        segments,
    })
}

/// Checks the ELF header and returns it with the program header table.
fn read_headers(elf: &[u8]) -> Result<(&FileHeader64<LE>, &[ProgramHeader64<LE>]), ExecError> {
    let endian = LE;
    // e_ident: the magic, EI_CLASS and EI_DATA.
    let Some(&[m0, m1, m2, m3, class, data, ..]) = elf.get(..6) else {
        return Err(ExecError::BadMagic);
    };
    if [m0, m1, m2, m3] != elf::ELFMAG {
        return Err(ExecError::BadMagic);
    }
    if class != elf::ELFCLASS64 {
        return Err(ExecError::BadClass);
    }
    if data != elf::ELFDATA2LSB {
        return Err(ExecError::BadEndian);
    }
    let header: &FileHeader64<LE> = elf.read_at(0).map_err(|()| ExecError::BadMagic)?;
    if !matches!(header.e_type.get(endian), elf::ET_EXEC | elf::ET_DYN) {
        return Err(ExecError::BadType);
    }
    if header.e_machine.get(endian) != elf::EM_AARCH64 {
        return Err(ExecError::BadMachine);
    }
    if usize::from(header.e_phentsize.get(endian)) != PHENT_SIZE {
        return Err(ExecError::BadPhentsize);
    }
    // Linux reads `e_phnum` as is: PN_XNUM (extended numbering) is simply
    // too many.
    let phnum = usize::from(header.e_phnum.get(endian));
    if phnum == 0 || phnum > MAX_PHDRS_SIZE / PHENT_SIZE {
        return Err(ExecError::BadPhnum);
    }
    let phdrs = elf
        .read_slice_at::<ProgramHeader64<LE>>(header.e_phoff.get(endian), phnum)
        .map_err(|()| ExecError::PhdrsOutOfFile)?;
    Ok((header, phdrs))
}

/// The interpreter path a PT_INTERP names, checked as Linux does.
fn read_interp(elf: &[u8], ph: &ProgramHeader64<LE>) -> Result<Vec<u8>, ExecError> {
    let endian = LE;
    let size = ph.p_filesz(endian);
    if !(2..=PATH_MAX).contains(&size) {
        return Err(ExecError::BadInterp);
    }
    let bytes = elf
        .read_bytes_at(ph.p_offset(endian), size)
        .map_err(|()| ExecError::BadInterp)?;
    match bytes.split_last() {
        Some((0, path)) => Ok(path.split(|&b| b == 0).next().unwrap_or_default().to_vec()),
        _ => Err(ExecError::BadInterp),
    }
}

/// The load bias of a PIE, as Linux computes it for an `ET_DYN` loaded at
/// `ELF_ET_DYN_BASE`.
fn dyn_bias(phdrs: &[ProgramHeader64<LE>]) -> u64 {
    let endian = LE;
    let mut loads = phdrs.iter().filter(|ph| ph.p_type(endian) == elf::PT_LOAD);
    let first_vaddr = first_load_vaddr(phdrs);
    // Linux's maximum_alignment(): the largest power-of-two p_align, at
    // least a page.
    let alignment = loads
        .by_ref()
        .map(|ph| ph.p_align(endian))
        .filter(|align| align.is_power_of_two())
        .max()
        .map_or(0, |align| align.max(PAGE_SIZE));
    let mut base = ELF_ET_DYN_BASE;
    if alignment != 0 {
        base &= !(alignment.wrapping_sub(1));
    }
    page_start(base.wrapping_sub(first_vaddr))
}

/// Where a planned segment came from.
struct Source {
    /// `p_vaddr`, unbiased.
    vaddr: u64,
    /// `p_memsz`.
    memsz: u64,
    /// `p_offset`.
    offset: u64,
    /// `p_filesz`.
    filesz: u64,
    /// `p_vaddr` plus the bias.
    start: u64,
    /// `start + p_memsz`.
    end: u64,
}

/// Checks one PT_LOAD and plans it; `None` for an empty one (`p_memsz` 0),
/// which maps nothing.
fn plan_segment(
    file_len: u64,
    ph: &ProgramHeader64<LE>,
    index: usize,
    bias: u64,
) -> Result<Option<(Segment, Source)>, ExecError> {
    let endian = LE;
    let (offset, filesz) = (ph.p_offset(endian), ph.p_filesz(endian));
    let (vaddr, memsz) = (ph.p_vaddr(endian), ph.p_memsz(endian));
    if filesz > memsz {
        return Err(ExecError::FileszExceedsMemsz { index });
    }
    // A segment without file bytes (all .bss) may name any offset, even
    // past the end of the file: Linux maps nothing from the file for it.
    let file_end = if filesz == 0 {
        Some(0)
    } else {
        offset.checked_add(filesz).filter(|&end| end <= file_len)
    };
    let file_end = file_end.ok_or(ExecError::SegmentOutOfFile { index })?;
    // Only file bytes are mapped at `p_offset`: a pure-bss segment may sit
    // anywhere, as in Linux's elf_load().
    if filesz != 0 && page_offset(offset) != page_offset(vaddr) {
        return Err(ExecError::SegmentMisaligned { index });
    }
    if memsz == 0 {
        return Ok(None);
    }

    // The biased addresses must be user addresses; checking the sums here
    // also rules out any overflow below.
    let out_of_range = ExecError::SegmentOutOfRange { index };
    vaddr.checked_add(memsz).ok_or(out_of_range.clone())?;
    let start = vaddr.wrapping_add(bias);
    let end = start.checked_add(memsz).ok_or(out_of_range.clone())?;
    let page_end = page_align(end)
        .filter(|&e| e <= TASK_SIZE)
        .ok_or(out_of_range.clone())?;
    let page_begin = page_start(start);
    if page_begin < USER_MIN {
        return Err(out_of_range);
    }

    let file = if filesz == 0 {
        offset..offset
    } else if filesz == memsz {
        // No bss: the whole last page comes from the file (up to its end).
        let page_file_end = page_align(file_end).unwrap_or(file_end).min(file_len);
        page_start(offset)..page_file_end
    } else {
        page_start(offset)..file_end
    };
    let copied = file.end.saturating_sub(file.start);
    let flags = ph.p_flags(endian);
    let segment = Segment {
        vaddr: page_begin..page_end,
        file,
        zero: page_begin.saturating_add(copied)..page_end,
        prot: Prot {
            read: flags & elf::PF_R != 0,
            write: flags & elf::PF_W != 0,
            exec: flags & elf::PF_X != 0,
        },
    };
    let source = Source {
        vaddr,
        memsz,
        offset,
        filesz,
        start,
        end,
    };
    Ok(Some((segment, source)))
}
