//! User address spaces (Linux's `mm_struct` and VMAs): regions with
//! permissions, pages allocated on first touch, copy-on-write after fork,
//! `mmap`/`munmap`/`mprotect`/`brk`, and the user page-fault handler.

use super::frame;
use crate::errno::Errno;
use crate::sync::IrqSpinLock;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use arch::addr::{PhysAddr, UserPtr, UserVirtAddr};
use arch::pgtable_user::{self, UserPageTable, UserPte};
use arch::uaccess::TASK_SIZE;

/// Page size as a u64.
const PAGE: u64 = 1 << super::PAGE_SHIFT;
/// Top of the user stack region (below it: the 8 MiB stack).
pub const STACK_TOP: u64 = 0x0000_ffff_ffff_0000;
/// Stack size limit (RLIMIT_STACK default).
pub const STACK_SIZE: u64 = 8 << 20;
/// Where top-down `mmap` placement starts (below the stack and a gap).
const MMAP_BASE: u64 = STACK_TOP - STACK_SIZE - (1 << 30);
/// Lowest address `mmap` hands out (Linux's mmap_min_addr default).
const MMAP_MIN_ADDR: u64 = 0x1_0000;

/// Access rights of a region (PROT_READ/WRITE/EXEC).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Prot {
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Executable.
    pub exec: bool,
}

impl Prot {
    /// From PROT_* bits.
    pub fn from_bits(p: u64) -> Option<Prot> {
        if p & !7 != 0 {
            return None;
        }
        Some(Prot {
            read: p & 1 != 0,
            write: p & 2 != 0,
            exec: p & 4 != 0,
        })
    }
}

/// What a region is, for /proc/<pid>/maps-style reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmaKind {
    /// Anonymous memory (mmap, program segments copied at exec).
    Anon,
    /// The heap (brk).
    Heap,
    /// The main stack.
    Stack,
    /// The vDSO's data page (`[vvar]`), shared by every process, read-only:
    /// it can be neither written nor made executable (mprotect: EACCES).
    Vvar,
    /// The vDSO's text (`[vdso]`), shared by every process; copy-on-write
    /// if made writable (a debugger's breakpoint).
    Vdso,
}

/// The file behind a file-backed region (Linux's `vm_file`), and what
/// `/proc/<pid>/maps` says about it.
pub struct VmFile {
    /// The file's data.
    pub inode: Arc<dyn vfs::Inode>,
    /// The path shown in `/proc/<pid>/maps`.
    pub name: alloc::vec::Vec<u8>,
    /// `st_dev` of the file.
    pub dev: u64,
    /// `st_ino` of the file.
    pub ino: u64,
}

impl core::fmt::Debug for VmFile {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "VmFile({})", alloc::string::String::from_utf8_lossy(&self.name))
    }
}

#[derive(Clone, Debug)]
struct Vma {
    end: u64,
    prot: Prot,
    kind: VmaKind,
    /// File-backed: the file, and the file offset of the region's start.
    file: Option<(Arc<VmFile>, u64)>,
    /// MAP_SHARED: writes reach the file's pages (and every other space
    /// that maps them), fork shares the pages instead of copying them.
    shared: bool,
}

impl vma::Area for Vma {
    fn end(&self) -> u64 {
        self.end
    }

    fn split(&mut self, start: u64, at: u64) -> Vma {
        // The upper part maps the file from further on.
        let upper = Vma {
            file: self.file.clone().map(|(f, off)| (f, off + (at - start))),
            ..self.clone()
        };
        self.end = at;
        upper
    }
}

impl Vma {
    fn anon(end: u64, prot: Prot, kind: VmaKind) -> Vma {
        Vma {
            end,
            prot,
            kind,
            file: None,
            shared: false,
        }
    }
}

/// How `mmap` places a new region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Near the hint if that range is free, else wherever there is room.
    Hint,
    /// Exactly at the address, replacing what is there (MAP_FIXED).
    Fixed,
    /// Exactly at the address, EEXIST if anything is there
    /// (MAP_FIXED_NOREPLACE).
    FixedNoReplace,
}

/// Why a user access faulted for good: the SIGSEGV code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegvCode {
    /// No mapping (SEGV_MAPERR).
    MapErr,
    /// Mapping without the right (SEGV_ACCERR).
    AccErr,
    /// Out of memory (the task is killed).
    Oom,
    /// A file-backed page beyond the end of its file (SIGBUS, BUS_ADRERR).
    Bus,
}

struct MmInner {
    pt: UserPageTable,
    vmas: BTreeMap<u64, Vma>,
    brk_start: u64,
    brk: u64,
    /// Where exec put argv's strings (for /proc/<pid>/cmdline).
    args: (u64, u64),
    /// Where exec mapped the vDSO's text (Linux's `mm->context.vdso`).
    vdso: Option<UserVirtAddr>,
    /// The program's file name, for /proc/<pid>/exe (Linux's
    /// `mm->exe_file`).
    exe: alloc::vec::Vec<u8>,
    /// The auxiliary vector exec gave the program, `AT_NULL` last, as
    /// /proc/<pid>/auxv shows it (Linux's `mm->saved_auxv`).
    saved_auxv: alloc::vec::Vec<(u64, u64)>,
}

/// A user address space.
pub struct Mm {
    /// Taken only from task context (system calls, page faults, fork, exit,
    /// the context switch's `activate`), never from an interrupt handler, so
    /// it does not mask IRQs: long range operations leave the timer and
    /// IPIs running. The kernel is not preempted in EL1, so a holder is
    /// never switched away from while other CPUs spin on it; `activate`
    /// (IRQs masked, in the context switch) does not take it.
    inner: spin::Mutex<MmInner>,
    /// The root table's physical address: fixed for the space's life, so
    /// the context switch reads it without the lock.
    root: PhysAddr,
    asid: u16,
    /// The concurrency IDs of rseq's `mm_cid` for this address space.
    pub mm_cid: Arc<crate::rseq::MmCid>,
    /// Whether its owner may inspect it without CAP_SYS_PTRACE (Linux's
    /// `MMF_DUMPABLE` bits of `mm->flags`: `SUID_DUMP_USER` or
    /// `SUID_DUMP_DISABLE`), set at exec, by prctl and by credential
    /// changes, inherited by fork.
    dumpable: core::sync::atomic::AtomicU8,
}

// ---------------------------------------------------------------- ASIDs

static ASIDS: IrqSpinLock<[u64; 1024]> = IrqSpinLock::new([1; 1024]); // ASID 0 is never used

fn alloc_asid() -> Option<u16> {
    let mut map = ASIDS.lock();
    for (w, word) in map.iter_mut().enumerate() {
        if *word != u64::MAX {
            let bit = (!*word).trailing_zeros() as usize;
            *word |= 1 << bit;
            return Some((w * 64 + bit) as u16);
        }
    }
    None
}

fn free_asid(asid: u16) {
    // No stale translation may survive into the ASID's next user.
    pgtable_user::flush_tlb_asid(asid);
    ASIDS.lock()[usize::from(asid / 64)] &= !(1 << (asid % 64));
}

fn pte_for(pa: PhysAddr, prot: Prot, _kind: VmaKind) -> UserPte {
    UserPte {
        pa,
        // PROT_EXEC alone stays readable, as on Linux without FEAT_EPAN.
        user: prot.read || prot.write || prot.exec,
        write: prot.write,
        exec: prot.exec,
        cow: false,
    }
}

impl Mm {
    /// An empty address space.
    pub fn new() -> Result<Arc<Mm>, Errno> {
        let asid = alloc_asid().ok_or(Errno::EAGAIN)?;
        let pt = match UserPageTable::new() {
            Ok(pt) => pt,
            Err(_) => {
                free_asid(asid);
                return Err(Errno::ENOMEM);
            }
        };
        let root = pt.root();
        Ok(Arc::new(Mm {
            root,
            inner: spin::Mutex::new(MmInner {
                pt,
                vmas: BTreeMap::new(),
                brk_start: 0,
                brk: 0,
                args: (0, 0),
                vdso: None,
                exe: alloc::vec::Vec::new(),
                saved_auxv: alloc::vec::Vec::new(),
            }),
            asid,
            mm_cid: Default::default(),
            dumpable: core::sync::atomic::AtomicU8::new(uapi::capability::SUID_DUMP_USER),
        }))
    }

    /// Installs this space in TTBR0 on this CPU.
    pub fn activate(&self) {
        pgtable_user::activate(self.root, self.asid);
    }

    /// Adds a region `[start, end)` (page aligned, free) with `prot`.
    pub fn add_region(&self, start: u64, end: u64, prot: Prot, kind: VmaKind) -> Result<(), Errno> {
        let mut m = self.inner.lock();
        if !start.is_multiple_of(PAGE) || !end.is_multiple_of(PAGE) || start >= end || end > TASK_SIZE {
            return Err(Errno::EINVAL);
        }
        if vma::overlaps(&m.vmas, start, end) {
            return Err(Errno::EEXIST);
        }
        m.vmas.insert(start, Vma::anon(end, prot, kind));
        Ok(())
    }

    /// Sets the program break's start (end of the program image).
    pub fn set_brk_start(&self, start: u64) {
        let mut m = self.inner.lock();
        m.brk_start = start;
        m.brk = start;
    }

    /// Records the program's file name (/proc/<pid>/exe).
    pub fn set_exe_file(&self, name: &[u8]) {
        self.inner.lock().exe = name.to_vec();
    }

    /// The program's file name; empty before exec.
    pub fn exe_file(&self) -> alloc::vec::Vec<u8> {
        self.inner.lock().exe.clone()
    }

    /// Records the auxiliary vector exec built (/proc/<pid>/auxv).
    pub fn set_saved_auxv(&self, auxv: &[(u64, u64)]) {
        self.inner.lock().saved_auxv = auxv.to_vec();
    }

    /// The auxiliary vector as /proc/<pid>/auxv reads: each entry's type
    /// and value as two native-endian words; empty before exec.
    pub fn saved_auxv(&self) -> alloc::vec::Vec<u8> {
        let m = self.inner.lock();
        m.saved_auxv
            .iter()
            .flat_map(|&(t, v)| t.to_ne_bytes().into_iter().chain(v.to_ne_bytes()))
            .collect()
    }

    /// Records where argv's strings are.
    pub fn set_arg_range(&self, start: u64, end: u64) {
        self.inner.lock().args = (start, end);
    }

    /// argv's strings, NUL-separated, as /proc/<pid>/cmdline shows them
    /// (pages never touched read as absent).
    pub fn cmdline(&self) -> alloc::vec::Vec<u8> {
        let m = self.inner.lock();
        let (start, end) = m.args;
        let mut out = alloc::vec::Vec::new();
        // At most eight pages.
        let len = end.min(start.saturating_add(4096 * 8)).saturating_sub(start);
        let (Some(start), Ok(len)) = (UserVirtAddr::new(start), usize::try_from(len)) else {
            return out;
        };
        for (va, piece) in page_pieces(start, len).map_while(Result::ok) {
            let Some(pte) = m.pt.get(va) else { break };
            let mut buf = alloc::vec![0u8; piece.len()];
            frame::read_frame(pte.pa, va.page_offset(), &mut buf);
            out.extend_from_slice(&buf);
        }
        out
    }

    /// Writes `data` at user address `va` of this space, allocating pages
    /// as needed, regardless of their protection (for exec, which fills
    /// read-only segments; a write on a task's behalf must use uaccess,
    /// which honours it). A page shared copy-on-write is copied first, so
    /// the write never reaches another space.
    pub fn write_bytes(&self, addr: UserVirtAddr, data: &[u8]) -> Result<(), Errno> {
        let mut m = self.inner.lock();
        for piece in page_pieces(addr, data.len()) {
            let (va, piece) = piece?;
            let page = va.page_base();
            let pa = match m.pt.get(page) {
                // Shared with another space (copy-on-write after fork, or a
                // read-only page both hold): the write must land in this
                // space's own copy, never in the frame the other one sees.
                Some(p) if p.cow || frame::page_count(p.pa) > 1 => {
                    let (prot, kind) = find(&m.vmas, page.as_u64())
                        .map(|(_, v)| (v.prot, v.kind))
                        .ok_or(Errno::EFAULT)?;
                    let pa = if frame::page_count(p.pa) == 1 {
                        p.pa
                    } else {
                        let new = frame::alloc_user_frame().ok_or(Errno::ENOMEM)?;
                        frame::copy_frame(new, p.pa);
                        new
                    };
                    if m.pt.map(page, pte_for(pa, prot, kind)).is_err() {
                        if pa != p.pa {
                            frame::free_frame(pa);
                        }
                        return Err(Errno::ENOMEM);
                    }
                    if pa != p.pa {
                        frame::page_ref_dec(p.pa);
                    }
                    pgtable_user::flush_tlb_page(self.asid, page);
                    pa
                }
                Some(p) => p.pa,
                None => {
                    let (start, vma) = find(&m.vmas, page.as_u64()).ok_or(Errno::EFAULT)?;
                    let (prot, kind) = (vma.prot, vma.kind);
                    // A file page comes in with the file's bytes, in a
                    // private copy (write_bytes never writes to a file).
                    let pa = match &vma.file {
                        Some((f, off)) => file_page_copy(f, off + (page.as_u64() - start)).ok_or(Errno::ENOMEM)?,
                        None => frame::alloc_user_zeroed_frame().ok_or(Errno::ENOMEM)?,
                    };
                    if m.pt.map(page, pte_for(pa, prot, kind)).is_err() {
                        frame::free_frame(pa);
                        return Err(Errno::ENOMEM);
                    }
                    pa
                }
            };
            frame::write_frame(pa, va.page_offset(), &data[piece]);
        }
        Ok(())
    }

    /// Resolves a fault at `addr` for the given access, or says why not.
    pub fn handle_fault(&self, addr: UserVirtAddr, write: bool, exec: bool) -> Result<(), SegvCode> {
        let mut m = self.inner.lock();
        let page = addr.page_base();
        let Some((start, vma)) = find(&m.vmas, addr.as_u64()) else {
            return Err(SegvCode::MapErr);
        };
        let prot = vma.prot;
        let kind = vma.kind;
        let data = prot.read || prot.write || prot.exec;
        if (write && !prot.write) || (exec && !prot.exec) || (!write && !exec && !data) {
            return Err(SegvCode::AccErr);
        }
        match m.pt.get(page) {
            None => {
                let pte = match &vma.file {
                    None => {
                        let pa = frame::alloc_user_zeroed_frame().ok_or(SegvCode::Oom)?;
                        pte_for(pa, prot, kind)
                    }
                    Some((f, off)) => file_fault(f, off + (page.as_u64() - start), prot, vma.shared, write)?,
                };
                if m.pt.map(page, pte).is_err() {
                    frame::page_ref_dec(pte.pa);
                    return Err(SegvCode::Oom);
                }
                if let (Some((f, off)), false) = (&vma.file, write) {
                    fault_around(&mut m.pt, page.as_u64(), start, &vma, f, *off);
                }
            }
            Some(pte) if write && pte.cow => {
                // Break copy-on-write: the last sharer keeps the frame.
                let pa = if frame::page_count(pte.pa) == 1 {
                    pte.pa
                } else {
                    let new = frame::alloc_user_frame().ok_or(SegvCode::Oom)?;
                    frame::copy_frame(new, pte.pa);
                    frame::page_ref_dec(pte.pa);
                    new
                };
                let _ = m.pt.map(page, pte_for(pa, prot, kind));
                pgtable_user::flush_tlb_page(self.asid, page);
            }
            Some(_) => {
                // Mapped with the right permissions: another CPU resolved it,
                // or the TLB held a stale entry.
                pgtable_user::flush_tlb_page(self.asid, page);
            }
        }
        Ok(())
    }

    /// Its dumpable setting (`get_dumpable`).
    pub fn dumpable(&self) -> u8 {
        self.dumpable.load(core::sync::atomic::Ordering::Acquire)
    }

    /// Changes its dumpable setting (`set_dumpable`).
    pub fn set_dumpable(&self, v: u8) {
        self.dumpable.store(v, core::sync::atomic::Ordering::Release);
    }

    /// A copy for `fork`: regions copied, pages shared copy-on-write.
    pub fn fork(&self) -> Result<Arc<Mm>, Errno> {
        let child = Mm::new()?;
        child.set_dumpable(self.dumpable());
        {
            let mut m = self.inner.lock();
            let mut c = child.inner.lock();
            c.vmas = m.vmas.clone();
            c.brk_start = m.brk_start;
            c.brk = m.brk;
            c.args = m.args;
            c.vdso = m.vdso;
            c.exe = m.exe.clone();
            c.saved_auxv = m.saved_auxv.clone();
            // MAP_SHARED regions: both spaces keep writing the same pages.
            let shared_ranges: alloc::vec::Vec<(u64, u64)> = m
                .vmas
                .iter()
                .filter(|(_, v)| v.shared)
                .map(|(&s, v)| (s, v.end))
                .collect();
            // One walk of the present pages, sharing each with the child as
            // it goes (nothing allocated per page but the child's tables).
            let c = &mut *c;
            let mut failed = false;
            m.pt.update_in(
                UserVirtAddr::ZERO,
                TASK_SIZE,
                |va, pte| {
                    if failed {
                        return Some(pte);
                    }
                    if shared_ranges.iter().any(|&(s, e)| (s..e).contains(&va.as_u64())) {
                        frame::page_ref_inc(pte.pa);
                        if c.pt.map(va, pte).is_err() {
                            frame::page_ref_dec(pte.pa);
                            failed = true;
                        }
                        return Some(pte);
                    }
                    let shared = UserPte {
                        write: false,
                        cow: pte.write || pte.cow,
                        ..pte
                    };
                    frame::page_ref_inc(pte.pa);
                    if c.pt.map(va, shared).is_err() {
                        frame::page_ref_dec(pte.pa);
                        failed = true;
                        return Some(pte);
                    }
                    Some(if pte.write { shared } else { pte })
                },
                |_, _| {},
            );
            drop(m);
            // Write-protected parent entries must leave every TLB, even
            // when the copy failed part-way.
            pgtable_user::flush_tlb_asid(self.asid);
            if failed {
                return Err(Errno::ENOMEM);
            }
        }
        Ok(child)
    }

    /// `mmap` of anonymous private memory: returns the address.
    pub fn mmap_anon(&self, hint: u64, len: u64, prot: Prot, fixed: bool) -> Result<UserVirtAddr, Errno> {
        let placement = if fixed { Placement::Fixed } else { Placement::Hint };
        self.mmap_region(hint, len, prot, placement, false, None)
    }

    /// `mmap`: a new region of `len` bytes (rounded up to pages) placed as
    /// `placement` says, anonymous or backed by `file` from a page-aligned
    /// offset, private (copy-on-write) or `shared`; returns its address
    /// (Linux's `do_mmap`/`mmap_region`).
    pub fn mmap_region(
        &self,
        hint: u64,
        len: u64,
        prot: Prot,
        placement: Placement,
        shared: bool,
        file: Option<(Arc<VmFile>, u64)>,
    ) -> Result<UserVirtAddr, Errno> {
        let len = len.checked_add(PAGE - 1).ok_or(Errno::ENOMEM)? & !(PAGE - 1);
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        if len > TASK_SIZE - MMAP_MIN_ADDR {
            return Err(Errno::ENOMEM);
        }
        let vma = |end| Vma {
            end,
            prot,
            kind: VmaKind::Anon,
            file: file.clone(),
            shared,
        };
        if placement != Placement::Hint {
            // No mmap_min_addr floor here: every task runs as root, and
            // CAP_SYS_RAWIO lifts it in Linux (cap_mmap_addr).
            if !hint.is_multiple_of(PAGE) || hint.checked_add(len).is_none_or(|e| e > TASK_SIZE) {
                return Err(if !hint.is_multiple_of(PAGE) {
                    Errno::EINVAL
                } else {
                    Errno::ENOMEM
                });
            }
            // One critical section: no other thread's mmap can take the
            // range between the removal and the new region.
            let mut m = self.inner.lock();
            if placement == Placement::FixedNoReplace {
                if vma::overlaps(&m.vmas, hint, hint + len) {
                    return Err(Errno::EEXIST);
                }
            } else {
                self.unmap_locked(&mut m, hint, hint + len);
            }
            m.vmas.insert(hint, vma(hint + len));
            return region_start(hint);
        }
        let mut m = self.inner.lock();
        let hint = hint & !(PAGE - 1);
        let start = if hint >= MMAP_MIN_ADDR
            && hint.checked_add(len).is_some_and(|e| e <= MMAP_BASE)
            && !vma::overlaps(&m.vmas, hint, hint + len)
        {
            hint
        } else {
            find_free_top_down(&m.vmas, len).ok_or(Errno::ENOMEM)?
        };
        m.vmas.insert(start, vma(start + len));
        region_start(start)
    }

    /// A free range of `len` bytes (page aligned) where `mmap` without a
    /// hint would put it (Linux's `get_unmapped_area`).
    pub fn get_unmapped_area(&self, len: u64) -> Result<UserVirtAddr, Errno> {
        let start = find_free_top_down(&self.inner.lock().vmas, len).ok_or(Errno::ENOMEM)?;
        region_start(start)
    }

    /// `munmap`: removes `[addr, addr + len)` from every region.
    pub fn unmap(&self, addr: u64, len: u64) -> Result<(), Errno> {
        if !addr.is_multiple_of(PAGE) || len == 0 {
            return Err(Errno::EINVAL);
        }
        let end = addr
            .checked_add(len.checked_add(PAGE - 1).ok_or(Errno::EINVAL)? & !(PAGE - 1))
            .ok_or(Errno::EINVAL)?;
        if end > TASK_SIZE {
            return Err(Errno::EINVAL);
        }
        let mut m = self.inner.lock();
        self.unmap_locked(&mut m, addr, end);
        Ok(())
    }

    /// Removes `[addr, end)` (page aligned) from the regions and the page
    /// tables, with the lock held.
    fn unmap_locked(&self, m: &mut MmInner, addr: u64, end: u64) {
        vma::remove_range(&mut m.vmas, addr, end);
        // Only the pages actually present: the walk skips absent tables, so
        // unmapping a huge untouched range costs next to nothing. A frame
        // is released only once no TLB can reach it.
        let asid = self.asid;
        zap_range(&mut m.pt, asid, addr, end);
    }

    /// Unmaps the pages of the file (`dev`, `ino`) at file offsets from
    /// `from` on (rounded up to a page), in shared regions and private
    /// copies alike, keeping the regions: Linux's `unmap_mapping_range`
    /// with `even_cows`, as truncation does. A later access there faults
    /// again, and past the end of the file that is SIGBUS.
    pub fn unmap_file_pages(&self, dev: u64, ino: u64, from: u64) {
        let from = from.div_ceil(PAGE) * PAGE;
        let mut m = self.inner.lock();
        let ranges: alloc::vec::Vec<(u64, u64)> = m
            .vmas
            .iter()
            .filter_map(|(&start, vma)| {
                let (f, off) = vma.file.as_ref()?;
                if f.dev != dev || f.ino != ino {
                    return None;
                }
                let first = start.checked_add(from.saturating_sub(*off))?;
                (first < vma.end).then_some((first, vma.end))
            })
            .collect();
        let asid = self.asid;
        for (a, e) in ranges {
            zap_range(&mut m.pt, asid, a, e);
        }
    }

    /// `mprotect`: every page of the range must be mapped (else ENOMEM).
    pub fn mprotect(&self, addr: u64, len: u64, prot: Prot) -> Result<(), Errno> {
        if !addr.is_multiple_of(PAGE) {
            return Err(Errno::EINVAL);
        }
        let end = addr
            .checked_add(len.checked_add(PAGE - 1).ok_or(Errno::ENOMEM)? & !(PAGE - 1))
            .ok_or(Errno::ENOMEM)?;
        if end == addr {
            return Ok(());
        }
        let mut m = self.inner.lock();
        // Fully covered? (Checked region by region: a [vvar] in the range
        // refuses first, as Linux's lacks VM_MAYWRITE and VM_MAYEXEC.)
        let mut cur = addr;
        while cur < end {
            match vma::find(&m.vmas, cur) {
                Some((_, v)) if v.kind == VmaKind::Vvar && (prot.write || prot.exec) => return Err(Errno::EACCES),
                Some((_, v)) => cur = v.end,
                None => return Err(Errno::ENOMEM),
            }
        }
        vma::split_at(&mut m.vmas, addr);
        vma::split_at(&mut m.vmas, end);
        let starts: alloc::vec::Vec<(u64, u64, bool)> = m
            .vmas
            .range_mut(addr..end)
            .map(|(&s, v)| {
                v.prot = prot;
                (s, v.end, v.shared)
            })
            .collect();
        // The whole range is covered by regions, so every present page in it
        // takes the new protection; absent tables are skipped. A MAP_SHARED
        // region writes its pages in place, never copy-on-write.
        let asid = self.asid;
        for (s, e, map_shared) in starts {
            update_range(
                &mut m.pt,
                s,
                e,
                |_, pte| {
                    let cow = !map_shared && (pte.cow || (!pte.write && frame::page_count(pte.pa) > 1));
                    Some(UserPte {
                        user: prot.read || prot.write || prot.exec,
                        write: prot.write && !cow,
                        cow: prot.write && cow,
                        exec: prot.exec,
                        pa: pte.pa,
                    })
                },
                |va, _| pgtable_user::flush_tlb_page(asid, va),
            );
        }
        Ok(())
    }

    /// `madvise(MADV_DONTNEED)` (and `MADV_FREE`): drops the pages of
    /// `[start, end)` (page aligned); the next touch finds zeros, or the
    /// file's data again for a file-backed region. ENOMEM if part of the
    /// range is unmapped (the mapped parts are still dropped), EINVAL for
    /// `free_only_anon` (MADV_FREE) over a file mapping and over `[vvar]`
    /// (Linux's VM_PFNMAP); the `[vdso]` pages stay, as Linux's special
    /// mapping would fault the same pages back.
    pub fn zap_range(&self, start: u64, end: u64, free_only_anon: bool) -> Result<(), Errno> {
        let mut m = self.inner.lock();
        let regions: alloc::vec::Vec<(u64, u64, VmaKind, bool)> = m
            .vmas
            .range(..end)
            .filter(|(&s, v)| v.end > start && s < end)
            .map(|(&s, v)| (s.max(start), v.end.min(end), v.kind, v.file.is_some()))
            .collect();
        if regions
            .iter()
            .any(|&(_, _, kind, file)| kind == VmaKind::Vvar || (free_only_anon && file))
        {
            return Err(Errno::EINVAL);
        }
        let asid = self.asid;
        for &(s, e, kind, _) in &regions {
            if kind == VmaKind::Vdso {
                continue;
            }
            zap_range(&mut m.pt, asid, s, e);
        }
        if vma::covered(&m.vmas, start, end) {
            Ok(())
        } else {
            Err(Errno::ENOMEM)
        }
    }

    /// Linux's `find_vma(mm, addr) != NULL`: whether some region ends above
    /// `addr` (the region holding it or any higher one). arm64 picks
    /// SEGV_ACCERR over SEGV_MAPERR by it for a bad `rt_sigreturn`.
    pub fn has_vma_above(&self, addr: u64) -> bool {
        vma::any_above(&self.inner.lock().vmas, addr)
    }

    /// Whether `[start, end)` (page aligned) is wholly mapped: ENOMEM if not
    /// (madvise's and mincore's check).
    pub fn check_mapped(&self, start: u64, end: u64) -> Result<(), Errno> {
        if vma::covered(&self.inner.lock().vmas, start, end) {
            Ok(())
        } else {
            Err(Errno::ENOMEM)
        }
    }

    /// `mincore`: one byte per page of `[start, end)`, 1 if the page is in
    /// memory (mapped here, or present in the file a region maps).
    pub fn mincore(&self, start: u64, end: u64) -> Result<alloc::vec::Vec<u8>, Errno> {
        let m = self.inner.lock();
        if !vma::covered(&m.vmas, start, end) {
            return Err(Errno::ENOMEM);
        }
        let mut out = alloc::vec::Vec::new();
        let pages = usize::try_from((end - start) / PAGE).map_err(|_| Errno::ENOMEM)?;
        out.try_reserve_exact(pages).map_err(|_| Errno::ENOMEM)?;
        let mut va = start;
        while va < end {
            let resident = UserVirtAddr::new(va).is_some_and(|va| m.pt.get(va).is_some())
                || find(&m.vmas, va).is_some_and(|(s, v)| match &v.file {
                    Some((f, off)) => match file_frame(f, (off + (va - s)) / PAGE, false) {
                        Ok(Some(pa)) => {
                            frame::page_ref_dec(pa);
                            true
                        }
                        _ => false,
                    },
                    None => false,
                });
            out.push(u8::from(resident));
            va += PAGE;
        }
        Ok(out)
    }

    /// `mremap` of `[addr, addr + old_len)` (one region, else EFAULT) to
    /// `new_len` bytes (both page aligned, `new_len` > 0): shrinking unmaps
    /// the tail; growing extends in place when the pages above are free,
    /// else moves the region and its pages if `may_move` (ENOMEM if not);
    /// `fixed` moves it to exactly that address, replacing what is there.
    pub fn mremap(
        &self,
        addr: u64,
        old_len: u64,
        new_len: u64,
        may_move: bool,
        fixed: Option<u64>,
    ) -> Result<UserVirtAddr, Errno> {
        let old_end = addr
            .checked_add(old_len)
            .filter(|&e| e <= TASK_SIZE)
            .ok_or(Errno::EINVAL)?;
        let mut m = self.inner.lock();
        let (start, vma) = find(&m.vmas, addr).ok_or(Errno::EFAULT)?;
        if old_end > vma.end {
            return Err(Errno::EFAULT);
        }
        if fixed.is_none() && new_len <= old_len {
            self.unmap_locked(&mut m, addr + new_len, old_end);
            return region_start(addr);
        }
        if fixed.is_none() {
            let new_end = addr.checked_add(new_len).filter(|&e| e <= TASK_SIZE);
            if let Some(new_end) = new_end {
                if old_end == vma.end && !vma::overlaps(&m.vmas, old_end, new_end) {
                    if let Some(v) = m.vmas.get_mut(&start) {
                        v.end = new_end;
                    }
                    return region_start(addr);
                }
            }
            if !may_move {
                return Err(Errno::ENOMEM);
            }
        }
        let to = match fixed {
            Some(to) => {
                let to_end = to
                    .checked_add(new_len)
                    .filter(|&e| e <= TASK_SIZE)
                    .ok_or(Errno::EINVAL)?;
                // The ranges may not overlap.
                if to < old_end && addr < to_end {
                    return Err(Errno::EINVAL);
                }
                self.unmap_locked(&mut m, to, to_end);
                to
            }
            None => find_free_top_down(&m.vmas, new_len).ok_or(Errno::ENOMEM)?,
        };
        // Take the pages out of the old range, keeping their references.
        let keep = old_len.min(new_len);
        let mut moved = alloc::vec::Vec::new();
        let asid = self.asid;
        update_range(
            &mut m.pt,
            addr,
            addr + keep,
            |va, pte| {
                moved.push((va.as_u64() - addr, pte));
                None
            },
            |va, _| pgtable_user::flush_tlb_page(asid, va),
        );
        let mut failed = false;
        for &(off, pte) in &moved {
            // `to + off` lies below `to + new_len`, which was checked.
            let mapped = UserVirtAddr::new(to + off).is_some_and(|va| m.pt.map(va, pte).is_ok());
            if failed || !mapped {
                failed = true;
                frame::page_ref_dec(pte.pa);
            }
        }
        self.unmap_locked(&mut m, addr, old_end);
        let file = vma.file.clone().map(|(f, off)| (f, off + (addr - start)));
        m.vmas.insert(
            to,
            Vma {
                end: to + new_len,
                file,
                ..vma
            },
        );
        if failed {
            return Err(Errno::ENOMEM);
        }
        region_start(to)
    }

    /// `brk`: moves the program break; returns the (possibly unchanged) break.
    pub fn brk(&self, new: u64) -> u64 {
        let (start, old) = {
            let m = self.inner.lock();
            (m.brk_start, m.brk)
        };
        if new < start || new > start + (1 << 30) {
            return old;
        }
        let old_end = (old + PAGE - 1) & !(PAGE - 1);
        let new_end = (new + PAGE - 1) & !(PAGE - 1);
        if new_end > old_end {
            let rw = Prot {
                read: true,
                write: true,
                exec: false,
            };
            if self.add_region(old_end, new_end, rw, VmaKind::Heap).is_err() {
                return old;
            }
        } else if new_end < old_end && self.unmap(new_end, old_end - new_end).is_err() {
            return old;
        }
        self.inner.lock().brk = new;
        new
    }

    /// `/proc/<pid>/maps` in Linux's format (`show_map_vma`).
    pub fn maps(&self) -> alloc::string::String {
        use core::fmt::Write;
        let m = self.inner.lock();
        let mut out = alloc::string::String::new();
        for (&start, v) in m.vmas.iter() {
            let p = v.prot;
            let (off, dev, ino, name): (u64, u64, u64, alloc::borrow::Cow<'_, str>) = match &v.file {
                Some((f, off)) => (*off, f.dev, f.ino, alloc::string::String::from_utf8_lossy(&f.name)),
                None => (
                    0,
                    0,
                    0,
                    match v.kind {
                        VmaKind::Heap => "[heap]",
                        VmaKind::Stack => "[stack]",
                        VmaKind::Vvar => "[vvar]",
                        VmaKind::Vdso => "[vdso]",
                        VmaKind::Anon => "",
                    }
                    .into(),
                ),
            };
            let line_start = out.len();
            let _ = write!(
                out,
                "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
                start,
                v.end,
                if p.read { 'r' } else { '-' },
                if p.write { 'w' } else { '-' },
                if p.exec { 'x' } else { '-' },
                if v.shared { 's' } else { 'p' },
                off,
                uapi::stat::major(dev),
                uapi::stat::minor(dev),
                ino,
            );
            if !name.is_empty() {
                // Linux pads the name to column 73 (seq_pad).
                while out.len() - line_start < 72 {
                    out.push(' ');
                }
                out.push(' ');
                out.push_str(&name);
            }
            out.push('\n');
        }
        out
    }

    /// Maps the vDSO: the `vvar` frames read-only, then the `text` frames
    /// read+execute just above them, at a free place found top-down as
    /// `mmap` would (Linux's `__setup_additional_pages`). The frames stay
    /// the kernel's; each mapping holds a reference. Returns the text's
    /// address, which `vdso_base` reports from then on (and in children).
    pub fn map_vdso(&self, vvar: &[PhysAddr], text: &[PhysAddr]) -> Result<UserVirtAddr, Errno> {
        let vvar_len = bytes_of_pages(vvar.len()).ok_or(Errno::ENOMEM)?;
        let len = bytes_of_pages(vvar.len() + text.len()).ok_or(Errno::ENOMEM)?;
        let mut m = self.inner.lock();
        let start = find_free_top_down(&m.vmas, len).ok_or(Errno::ENOMEM)?;
        let base = start + vvar_len;
        let regions = [
            (
                start,
                vvar,
                Prot {
                    read: true,
                    write: false,
                    exec: false,
                },
                VmaKind::Vvar,
            ),
            (
                base,
                text,
                Prot {
                    read: true,
                    write: false,
                    exec: true,
                },
                VmaKind::Vdso,
            ),
        ];
        for (at, frames, prot, kind) in regions {
            for (i, &pa) in (0u64..).zip(frames) {
                let va = at + i * PAGE;
                frame::page_ref_inc(pa);
                let mapped = UserVirtAddr::new(va).is_some_and(|va| m.pt.map(va, pte_for(pa, prot, kind)).is_ok());
                if !mapped {
                    frame::page_ref_dec(pa);
                    // Undo what was mapped; no region was added yet.
                    let asid = self.asid;
                    zap_range(&mut m.pt, asid, start, va);
                    return Err(Errno::ENOMEM);
                }
            }
        }
        for (at, frames, prot, kind) in regions {
            // Both fit in `len`, computed above.
            let end = at + bytes_of_pages(frames.len()).unwrap_or(0);
            m.vmas.insert(at, Vma::anon(end, prot, kind));
        }
        let base = UserVirtAddr::new(base).ok_or(Errno::ENOMEM)?;
        m.vdso = Some(base);
        Ok(base)
    }

    /// The vDSO's text address, if exec mapped one.
    pub fn vdso_base(&self) -> Option<UserVirtAddr> {
        self.inner.lock().vdso
    }

    /// Reads or writes `buf.len()` bytes at `addr` on a tracer's behalf
    /// (Linux's access_remote_vm with FOLL_FORCE): every page must lie in a
    /// region, whatever its protection; an untouched page reads as zeros
    /// and is allocated by a write; a write to a shared page breaks
    /// copy-on-write, and a write into executable memory keeps the
    /// instruction cache coherent. The vDSO's data page is refused.
    pub fn access_remote(&self, addr: UserVirtAddr, buf: &mut [u8], write: bool) -> Result<(), Errno> {
        self.access_remote_vm(addr, buf, write, true)
    }

    /// `access_remote` without forcing: the region must be readable (or
    /// writable) to its owner (process_vm_readv/writev).
    pub fn access_remote_checked(&self, addr: UserVirtAddr, buf: &mut [u8], write: bool) -> Result<(), Errno> {
        self.access_remote_vm(addr, buf, write, false)
    }

    fn access_remote_vm(&self, addr: UserVirtAddr, buf: &mut [u8], write: bool, force: bool) -> Result<(), Errno> {
        let end = u64::try_from(buf.len())
            .ok()
            .and_then(|len| addr.as_u64().checked_add(len))
            .ok_or(Errno::EFAULT)?;
        let mut m = self.inner.lock();
        let mut page = addr.page_base().as_u64();
        while page < end {
            match find(&m.vmas, page.max(addr.as_u64())) {
                Some((_, v))
                    if v.kind != VmaKind::Vvar && (force || if write { v.prot.write } else { v.prot.read }) => {}
                _ => return Err(Errno::EFAULT),
            }
            page += PAGE;
        }
        // A read checks and copies under one hold of the lock (a PEEKDATA
        // took it twice); a write breaks copy-on-write without it.
        if write {
            drop(m);
            self.write_bytes(addr, buf)?;
            m = self.inner.lock();
        }
        // Every page was found in a region above, so below TASK_SIZE.
        for piece in page_pieces(addr, buf.len()) {
            let (va, piece) = piece?;
            let (page, off, n) = (va.page_base(), va.page_offset(), piece.len());
            let chunk = &mut buf[piece];
            match m.pt.get(page) {
                Some(pte) if write => {
                    if find(&m.vmas, va.as_u64()).is_some_and(|(_, v)| v.prot.exec) {
                        frame::sync_icache_frame(pte.pa, off, n);
                    }
                }
                Some(pte) => frame::read_frame(pte.pa, off, chunk),
                None if write => return Err(Errno::EFAULT),
                None => {
                    // A file page its owner has not touched yet (the text a
                    // system call's string argument lies in, say) comes in
                    // as the owner's read fault would bring it (Linux's
                    // get_user_pages faults it in); an untouched anonymous
                    // page reads as zeros.
                    let file_pte = match find(&m.vmas, page.as_u64()) {
                        Some((start, v)) => match &v.file {
                            Some((f, foff)) => Some(
                                file_fault(f, foff + (page.as_u64() - start), v.prot, v.shared, false)
                                    .map_err(|_| Errno::EFAULT)?,
                            ),
                            None => None,
                        },
                        None => None,
                    };
                    match file_pte {
                        Some(pte) => {
                            if m.pt.map(page, pte).is_err() {
                                frame::page_ref_dec(pte.pa);
                                return Err(Errno::ENOMEM);
                            }
                            frame::read_frame(pte.pa, off, chunk);
                        }
                        None => chunk.fill(0),
                    }
                }
            }
        }
        Ok(())
    }

    /// The frame behind user address `addr`, pinned for a read on another
    /// process's behalf (Linux's get_user_pages of one page, without
    /// FOLL_FORCE): a reference is taken, which the caller drops with
    /// `frame::page_ref_dec` once it has copied, so that the owner's unmap
    /// cannot free the frame meanwhile and the copy needs no lock. A file
    /// page not yet touched is brought in as the owner's read fault would;
    /// `None` for an untouched anonymous page (it reads as zeros); EFAULT
    /// where the space has no readable mapping.
    pub fn get_user_page_for_read(&self, addr: UserVirtAddr) -> Result<Option<PhysAddr>, Errno> {
        let page = addr.page_base();
        let mut guard = self.inner.lock();
        let m = &mut *guard;
        // Borrowed, not cloned: the common case (a mapped page) needs the
        // region only to check it.
        let (start, v) = match vma::find(&m.vmas, addr.as_u64()) {
            Some((start, v)) if v.kind != VmaKind::Vvar && v.prot.read => (start, v),
            _ => return Err(Errno::EFAULT),
        };
        if let Some(pte) = m.pt.get(page) {
            frame::page_ref_inc(pte.pa);
            return Ok(Some(pte.pa));
        }
        let Some((f, foff)) = v.file.clone() else {
            return Ok(None);
        };
        let (prot, shared) = (v.prot, v.shared);
        let pte = file_fault(&f, foff + (page.as_u64() - start), prot, shared, false).map_err(|_| Errno::EFAULT)?;
        if m.pt.map(page, pte).is_err() {
            frame::page_ref_dec(pte.pa);
            return Err(Errno::ENOMEM);
        }
        frame::page_ref_inc(pte.pa);
        Ok(Some(pte.pa))
    }

    /// Copies `len` bytes at `addr`, all in one page, to the calling
    /// task's user memory at `dst` on another process's behalf
    /// (process_vm_readv: no FOLL_FORCE, the region must be readable to its
    /// owner). The common case copies once, straight from the frame's
    /// linear-map address, under this space's lock (which does not mask
    /// interrupts) with page faults disabled: the owner cannot unmap the
    /// page meanwhile, and nothing is pinned. When `dst` would fault (not
    /// touched yet, copy-on-write, or in this very space, whose lock is
    /// held), the frame is pinned instead and copied again without the
    /// lock, as Linux's process_vm_rw_pages copies from pinned pages. An
    /// untouched anonymous page reads as zeros. EFAULT where the space has
    /// no readable mapping or `dst` cannot be written.
    pub fn read_to_user(&self, addr: UserVirtAddr, len: usize, dst: UserPtr) -> Result<(), Errno> {
        let off = addr.page_offset();
        // Written so that a huge `len` cannot wrap past the check.
        if len > super::PAGE_SIZE - off {
            return Err(Errno::EFAULT);
        }
        {
            let m = self.inner.lock();
            match vma::find(&m.vmas, addr.as_u64()) {
                Some((_, v)) if v.kind != VmaKind::Vvar && v.prot.read => {}
                _ => return Err(Errno::EFAULT),
            }
            if let Some(pte) = m.pt.get(addr.page_base()) {
                if frame::copy_frame_to_user_nofault(pte.pa, off, len, dst) {
                    return Ok(());
                }
            }
        }
        match self.get_user_page_for_read(addr)? {
            Some(pa) => {
                let r = UserVirtAddr::new(dst.addr())
                    .ok_or(Errno::EFAULT)
                    .and_then(|dst| frame::copy_frame_to_user(pa, off, len, dst));
                frame::page_ref_dec(pa);
                r
            }
            None => Ok(arch::uaccess::clear_user(dst, len)?),
        }
    }

    /// Pages mapped now (resident set).
    pub fn resident_pages(&self) -> usize {
        let mut n = 0;
        self.inner.lock().pt.for_each(|_, _| n += 1);
        n
    }
}

impl Drop for Mm {
    fn drop(&mut self) {
        let m = self.inner.lock();
        // The tables themselves are freed with `pt`; only the mapped
        // frames are released here, during the walk (no list to allocate).
        m.pt.for_each(|_, pte| {
            frame::page_ref_dec(pte.pa);
        });
        free_asid(self.asid);
    }
}

/// A private frame holding the file's page at byte offset `off` (zeros
/// past the end of the file); `None` when memory is short.
fn file_page_copy(f: &VmFile, off: u64) -> Option<PhysAddr> {
    let pa = frame::alloc_user_zeroed_frame()?;
    let mut buf = alloc::vec![0u8; super::PAGE_SIZE];
    if let Ok(n) = f.inode.read_at(off, &mut buf) {
        frame::write_frame(pa, 0, &buf[..n.min(buf.len())]);
    }
    Some(pa)
}

/// The page-table entry for the file page at byte offset `off` of a
/// file-backed region, with a reference on its frame (Linux's
/// `filemap_fault` and `do_cow_fault`): the file's own frame for a shared
/// region and for a private one being read (copy-on-write if the region is
/// writable), a private copy for a private one being written. A page
/// wholly past the end of the file is SIGBUS, as in Linux.
fn file_fault(f: &VmFile, off: u64, prot: Prot, shared: bool, write: bool) -> Result<UserPte, SegvCode> {
    let size = f.inode.metadata().size;
    if off >= size.div_ceil(PAGE) * PAGE {
        return Err(SegvCode::Bus);
    }
    let index = off / PAGE;
    if shared {
        // The file's pages are frames (tmpfs, ramfs): map the frame itself.
        let pa = file_frame(f, index, true).map_err(|()| SegvCode::Oom)?;
        let pa = pa.ok_or(SegvCode::Bus)?;
        return Ok(pte_for(pa, prot, VmaKind::Anon));
    }
    if !write {
        if let Ok(Some(pa)) = file_frame(f, index, false) {
            return Ok(UserPte {
                write: false,
                cow: prot.write,
                ..pte_for(pa, prot, VmaKind::Anon)
            });
        }
    }
    let pa = file_page_copy(f, off).ok_or(SegvCode::Oom)?;
    Ok(pte_for(pa, prot, VmaKind::Anon))
}

/// How many pages a read fault on a file mapping looks at (Linux's
/// default `fault_around_bytes`, 64 KiB): the aligned block holding the
/// faulting page.
const FAULT_AROUND_PAGES: u64 = 16;

/// Linux's `do_fault_around` with `filemap_map_pages`: after a read fault
/// at `page` in the file-backed region `vma` (starting at `start`, file
/// offset `off`), maps the other pages of its aligned 64 KiB block that lie
/// in the region and in the file, are not mapped yet and whose file page
/// already has a frame, as a read fault on each would (copy-on-write in a
/// writable private region). A program's text is then mapped 16 pages per
/// fault instead of one. Holes are left to their own fault, which creates
/// them; a failure just stops early, the faulting page being mapped.
fn fault_around(pt: &mut UserPageTable, page: u64, start: u64, vma: &Vma, f: &VmFile, off: u64) {
    let block = FAULT_AROUND_PAGES * PAGE;
    let from = (page & !(block - 1)).max(start);
    let to = (page & !(block - 1)).saturating_add(block).min(vma.end);
    let file_pages = f.inode.metadata().size.div_ceil(PAGE);
    let mut va = from;
    while va < to {
        let index = (off + (va - start)) / PAGE;
        if index >= file_pages {
            break;
        }
        let Some(uva) = UserVirtAddr::new(va) else {
            break;
        };
        if va != page && pt.get(uva).is_none() {
            let Ok(Some(pa)) = file_frame(f, index, false) else {
                va += PAGE;
                continue;
            };
            let pte = if vma.shared {
                pte_for(pa, vma.prot, VmaKind::Anon)
            } else {
                UserPte {
                    write: false,
                    cow: vma.prot.write,
                    ..pte_for(pa, vma.prot, VmaKind::Anon)
                }
            };
            if pt.map(uva, pte).is_err() {
                frame::page_ref_dec(pa);
                break;
            }
        }
        va += PAGE;
    }
}

/// After the file (`dev`, `ino`) shrank to `size` bytes: unmaps its pages
/// past the new end from every address space (Linux's truncate_pagecache),
/// so that no process keeps reading a page the file no longer has.
pub fn unmap_mapping_range(dev: u64, ino: u64, size: u64) {
    let mut spaces: alloc::vec::Vec<Arc<Mm>> = alloc::vec::Vec::new();
    for p in crate::process::all_processes() {
        for t in p.threads.lock().iter() {
            if let Some(mm) = t.mm.lock().clone() {
                if !spaces.iter().any(|s| Arc::ptr_eq(s, &mm)) {
                    spaces.push(mm);
                }
            }
        }
    }
    for mm in spaces {
        mm.unmap_file_pages(dev, ino, size);
    }
}

/// The pieces of `[addr, addr + len)` that lie in one page each, in
/// order: each piece's address and its range in a buffer of `len` bytes;
/// EFAULT (once, last) where the range leaves user space.
fn page_pieces(
    addr: UserVirtAddr,
    len: usize,
) -> impl Iterator<Item = Result<(UserVirtAddr, core::ops::Range<usize>), Errno>> {
    let (mut next, mut done) = (Some(addr), 0);
    core::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let Some(va) = next else {
            done = len;
            return Some(Err(Errno::EFAULT));
        };
        let n = (len - done).min(super::PAGE_SIZE - va.page_offset());
        let piece = done..done + n;
        done += n;
        next = va.next_page();
        Some(Ok((va, piece)))
    })
}

/// The start of a region (the region tree keeps them below `TASK_SIZE`).
fn region_start(start: u64) -> Result<UserVirtAddr, Errno> {
    UserVirtAddr::new(start).ok_or(Errno::ENOMEM)
}

/// `n` pages in bytes.
fn bytes_of_pages(n: usize) -> Option<u64> {
    u64::try_from(n).ok()?.checked_mul(PAGE)
}

/// The frame holding page `index` of the file, with a reference on it
/// (`create`: a hole gets a zeroed frame); `Err` when the file has no frame
/// to give.
fn file_frame(f: &VmFile, index: u64, create: bool) -> Result<Option<PhysAddr>, ()> {
    match f.inode.data_frame(index, create) {
        // A frame of RAM is always below the tables' 48-bit limit.
        Ok(Some(pa)) => PhysAddr::new(pa).map(Some).ok_or(()),
        Ok(None) => Ok(None),
        Err(_) => Err(()),
    }
}

/// Unmaps the present pages of `[start, end)` (Linux's zap_page_range):
/// each frame is released once no TLB entry of `asid` can reach it.
fn zap_range(pt: &mut UserPageTable, asid: u16, start: u64, end: u64) {
    update_range(
        pt,
        start,
        end,
        |_, _| None,
        |va, old| {
            pgtable_user::flush_tlb_page(asid, va);
            frame::page_ref_dec(old.pa);
        },
    );
}

/// `update_in` over `[start, end)` as the region tree bounds it: nothing
/// when `start` is not a user address (the range is then empty, the page
/// tables stopping at `TASK_SIZE`).
fn update_range(
    pt: &mut UserPageTable,
    start: u64,
    end: u64,
    f: impl FnMut(UserVirtAddr, UserPte) -> Option<UserPte>,
    after: impl FnMut(UserVirtAddr, UserPte),
) {
    if let Some(start) = UserVirtAddr::new(start) {
        pt.update_in(start, end, f, after);
    }
}

/// The region holding `addr`, with its start (a copy: callers go on to
/// change the map).
fn find(vmas: &BTreeMap<u64, Vma>, addr: u64) -> Option<(u64, Vma)> {
    vma::find(vmas, addr).map(|(s, v)| (s, v.clone()))
}

fn find_free_top_down(vmas: &BTreeMap<u64, Vma>, len: u64) -> Option<u64> {
    vma::find_free_top_down(vmas, len, MMAP_BASE, MMAP_MIN_ADDR)
}

#[cfg(feature = "ktest")]
mod tests {
    use super::{Mm, Prot, VmaKind};
    use arch::addr::{PhysAddr, UserVirtAddr};
    use ktest_macros::kernel_test;

    const VA: u64 = 0x40_0000;

    /// `a` as a user address (the tests' addresses are).
    fn uva(a: u64) -> UserVirtAddr {
        UserVirtAddr::new(a).expect("a user address")
    }

    /// The bytes at `[VA, VA + 8)` of `mm`, read from its frames.
    fn peek(mm: &Mm) -> alloc::vec::Vec<u8> {
        mm.set_arg_range(VA, VA + 8);
        mm.cmdline()
    }

    /// The frame mapped at `va` in `mm`, if any.
    fn frame_at(mm: &Mm, va: UserVirtAddr) -> Option<PhysAddr> {
        mm.inner.lock().pt.get(va).map(|p| p.pa)
    }

    #[kernel_test]
    fn private_file_mapping_uses_the_files_frame_until_written_and_shared_one_always() {
        use super::{Placement, PAGE};
        let file = crate::fs::shmem_zero_file(2 * PAGE).unwrap();
        file.inode.write_at(0, b"file data").unwrap();
        let files_frame = || {
            let pa = super::file_frame(&file, 0, false).unwrap().unwrap();
            super::frame::page_ref_dec(pa);
            pa
        };
        let rw = Prot {
            read: true,
            write: true,
            exec: false,
        };
        let mm = Mm::new().unwrap();
        let private = mm
            .mmap_region(VA, 2 * PAGE, rw, Placement::Fixed, false, Some((file.clone(), 0)))
            .unwrap();
        mm.handle_fault(private, false, false).unwrap();
        assert_eq!(
            frame_at(&mm, private),
            Some(files_frame()),
            "a read maps the file's frame"
        );
        mm.handle_fault(private, true, false).unwrap();
        assert_ne!(
            frame_at(&mm, private),
            Some(files_frame()),
            "a write gets a private copy"
        );
        assert_eq!(peek(&mm), b"file dat", "the copy holds the file's bytes");
        let shared = mm
            .mmap_region(VA + 4 * PAGE, PAGE, rw, Placement::Fixed, true, Some((file.clone(), 0)))
            .unwrap();
        mm.handle_fault(shared, true, false).unwrap();
        assert_eq!(
            frame_at(&mm, shared),
            Some(files_frame()),
            "a shared write maps the file's frame"
        );
        // A child shares the shared page and copies the private one.
        let child = mm.fork().unwrap();
        assert_eq!(frame_at(&child, shared), frame_at(&mm, shared));
        assert_eq!(mm.inner.lock().pt.get(shared).map(|p| p.cow), Some(false));
        // Past the end of the file: SIGBUS.
        file.inode.truncate(100).unwrap();
        assert_eq!(
            mm.handle_fault(private.checked_add(PAGE).unwrap(), false, false),
            Err(super::SegvCode::Bus)
        );
    }

    #[kernel_test]
    fn a_read_fault_maps_the_cached_file_pages_of_its_64k_block_copy_on_write() {
        use super::{Placement, PAGE};
        // 20 pages of file, all written but page 5 (a hole).
        let file = crate::fs::shmem_zero_file(20 * PAGE).unwrap();
        for i in (0..20u64).filter(|&i| i != 5) {
            file.inode.write_at(i * PAGE, &[i as u8 + 1; 8]).unwrap();
        }
        let files_frame = |i: u64| {
            let pa = super::file_frame(&file, i, false).unwrap().unwrap();
            super::frame::page_ref_dec(pa);
            pa
        };
        let rw = Prot {
            read: true,
            write: true,
            exec: false,
        };
        let mm = Mm::new().unwrap();
        // VA + i pages maps file page i, for i in 1..14; VA is 64 KiB
        // aligned, so the faulting page's block is VA + 0..16 pages.
        mm.mmap_region(
            VA + PAGE,
            13 * PAGE,
            rw,
            Placement::Fixed,
            false,
            Some((file.clone(), PAGE)),
        )
        .unwrap();
        mm.handle_fault(uva(VA + 3 * PAGE), false, false).unwrap();
        let pte = |i: u64| mm.inner.lock().pt.get(uva(VA + i * PAGE));
        assert!(pte(0).is_none(), "below the region");
        for i in (1..14).filter(|&i| i != 5) {
            let p = pte(i).expect("a cached page of the block is mapped");
            assert_eq!(p.pa, files_frame(i), "page {i} maps the file's frame");
            assert!(!p.write && p.cow, "page {i} is copy-on-write");
        }
        assert!(pte(5).is_none(), "the file's hole waits for its own fault");
        assert!(pte(14).is_none(), "past the region's end");
        // A write to a page mapped around still gets a private copy.
        mm.handle_fault(uva(VA + 7 * PAGE), true, false).unwrap();
        assert_ne!(pte(7).map(|p| p.pa), Some(files_frame(7)));
        // The hole's own fault maps it.
        mm.handle_fault(uva(VA + 5 * PAGE), false, false).unwrap();
        assert!(pte(5).is_some());
    }

    #[kernel_test]
    fn page_pieces_split_at_page_ends_and_fail_past_user_space() {
        use super::{page_pieces, PAGE};
        use crate::errno::Errno;
        let pieces = |va, len| page_pieces(uva(va), len).collect::<alloc::vec::Vec<_>>();
        assert_eq!(pieces(0x1ffe, 0), []);
        assert_eq!(pieces(0x1ffe, 2), [Ok((uva(0x1ffe), 0..2))]);
        assert_eq!(
            pieces(0x1ffe, 5 + 4096),
            [
                Ok((uva(0x1ffe), 0..2)),
                Ok((uva(0x2000), 2..4098)),
                Ok((uva(0x3000), 4098..4101))
            ]
        );
        let top = arch::uaccess::TASK_SIZE - 2;
        assert_eq!(pieces(top, 2), [Ok((uva(top), 0..2))]);
        assert_eq!(pieces(top, 3), [Ok((uva(top), 0..2)), Err(Errno::EFAULT)]);
        assert_eq!(pieces(top - PAGE, 1), [Ok((uva(top - PAGE), 0..1))]);
    }

    #[kernel_test]
    fn write_bytes_into_a_forked_space_breaks_copy_on_write() {
        for write in [true, false] {
            let prot = Prot {
                read: true,
                write,
                exec: false,
            };
            let parent = Mm::new().unwrap();
            parent.add_region(VA, VA + 4096, prot, VmaKind::Anon).unwrap();
            parent.write_bytes(uva(VA), &[1; 8]).unwrap();
            let child = parent.fork().unwrap();
            child.write_bytes(uva(VA), &[2; 8]).unwrap();
            assert_eq!(
                peek(&parent),
                [1; 8],
                "the child's write reached the parent (write={write})"
            );
            assert_eq!(peek(&child), [2; 8]);
            parent.write_bytes(uva(VA), &[3; 8]).unwrap();
            assert_eq!(
                peek(&child),
                [2; 8],
                "the parent's write reached the child (write={write})"
            );
            assert_eq!(peek(&parent), [3; 8]);
        }
    }
}
