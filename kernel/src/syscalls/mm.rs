//! Memory system calls: brk, mmap (anonymous, of files, shared), munmap,
//! mprotect, mremap, madvise, mincore.

use super::syscall;
use crate::errno::Errno;
use crate::mm::vm::{Mm, Placement, Prot};
use alloc::sync::Arc;
use arch::addr::UserVirtAddr;

fn mm() -> Result<Arc<Mm>, Errno> {
    crate::sched::current().mm.lock().clone().ok_or(Errno::EFAULT)
}

syscall!(__arm64_sys_brk, r, Ok(mm()?.brk(r.regs[0])));

use uapi::mman;
use uapi::mman::{
    MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_PRIVATE, MAP_SHARED, MAP_SHARED_VALIDATE, MAP_TYPE,
    MREMAP_DONTUNMAP, MREMAP_FIXED, MREMAP_MAYMOVE,
};

/// The flags Linux 6.12 defines for mmap (MAP_SHARED_VALIDATE refuses others).
const MAP_KNOWN_FLAGS: u64 = MAP_TYPE
    | MAP_FIXED
    | MAP_ANONYMOUS
    | mman::MAP_GROWSDOWN
    | mman::MAP_DENYWRITE
    | mman::MAP_EXECUTABLE
    | mman::MAP_LOCKED
    | mman::MAP_NORESERVE
    | mman::MAP_POPULATE
    | mman::MAP_NONBLOCK
    | mman::MAP_STACK
    | mman::MAP_HUGETLB
    | mman::MAP_SYNC
    | MAP_FIXED_NOREPLACE
    | (mman::MAP_HUGE_MASK << mman::MAP_HUGE_SHIFT);

syscall!(__arm64_sys_mmap, r, {
    let (addr, len, prot, flags, fd, off) = (r.regs[0], r.regs[1], r.regs[2], r.regs[3], r.regs[4] as i32, r.regs[5]);
    // arm64's sys_mmap: the offset must be page aligned, even for
    // anonymous memory.
    if off % 4096 != 0 {
        return Err(Errno::EINVAL);
    }
    // ksys_mmap_pgoff looks the file up before do_mmap checks anything
    // else: flags 0 with fd -1 is EBADF, not EINVAL.
    let file = if flags & MAP_ANONYMOUS == 0 {
        let f = crate::fs::current_files().get(fd)?;
        if f.is_path_only() {
            return Err(Errno::EBADF);
        }
        Some(f)
    } else {
        None
    };
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let prot = Prot::from_bits(prot).ok_or(Errno::EINVAL)?;
    let shared = match flags & MAP_TYPE {
        MAP_PRIVATE => false,
        MAP_SHARED => true,
        MAP_SHARED_VALIDATE if flags & !MAP_KNOWN_FLAGS != 0 => return Err(Errno::EOPNOTSUPP),
        MAP_SHARED_VALIDATE => true,
        _ => return Err(Errno::EINVAL),
    };
    let placement = if flags & MAP_FIXED != 0 {
        Placement::Fixed
    } else if flags & MAP_FIXED_NOREPLACE != 0 {
        Placement::FixedNoReplace
    } else {
        Placement::Hint
    };
    let backing = match file {
        Some(f) => crate::fs::mmap_file(&f, prot.write, shared, off, len)?,
        None if shared => Some((crate::fs::shmem_zero_file(len)?, 0)),
        None => None,
    };
    let shared = shared && backing.is_some();
    mm()?
        .mmap_region(addr, len, prot, placement, shared, backing)
        .map(UserVirtAddr::as_u64)
});

syscall!(__arm64_sys_munmap, r, {
    mm()?.unmap(r.regs[0], r.regs[1])?;
    Ok(0)
});

syscall!(__arm64_sys_mprotect, r, {
    let prot = Prot::from_bits(r.regs[2]).ok_or(Errno::EINVAL)?;
    mm()?.mprotect(r.regs[0], r.regs[1], prot)?;
    Ok(0)
});

/// Rounds `len` up to pages: `None` if that overflows.
fn page_align(len: u64) -> Option<u64> {
    len.checked_add(4095).map(|l| l & !4095)
}

syscall!(__arm64_sys_madvise, r, {
    use uapi::mman::madv::*;
    let (start, len_in, advice) = (r.regs[0], r.regs[1], r.regs[2] as i32);
    // Linux's madvise_behavior_valid: the advice values a 6.12 kernel with
    // KSM and transparent huge pages knows.
    let zap = match advice {
        MADV_DONTNEED | MADV_DONTNEED_LOCKED => Some(false),
        // anonymous private memory only
        MADV_FREE => Some(true),
        // NORMAL, RANDOM, SEQUENTIAL, WILLNEED, MERGEABLE, UNMERGEABLE,
        // HUGEPAGE, NOHUGEPAGE, DONTDUMP, DODUMP, COLD, PAGEOUT,
        // POPULATE_READ, POPULATE_WRITE, COLLAPSE: advice about memory this
        // kernel keeps resident and in small pages anyway.
        MADV_NORMAL..=MADV_WILLNEED
        | MADV_MERGEABLE..=MADV_DODUMP
        | MADV_COLD..=MADV_POPULATE_WRITE
        | MADV_COLLAPSE => None,
        // REMOVE, DONTFORK, DOFORK, WIPEONFORK, KEEPONFORK, HWPOISON,
        // SOFT_OFFLINE and unknown values: not supported here.
        _ => return Err(Errno::EINVAL),
    };
    if start % 4096 != 0 {
        return Err(Errno::EINVAL);
    }
    let len = page_align(len_in).ok_or(Errno::EINVAL)?;
    if len_in != 0 && len == 0 {
        return Err(Errno::EINVAL);
    }
    let end = start.checked_add(len).ok_or(Errno::EINVAL)?;
    if end == start {
        return Ok(0);
    }
    let m = mm()?;
    match advice {
        // Fault the pages in now, as an access would; Linux's
        // madvise_populate errors: EINVAL where the protection forbids the
        // access, EFAULT where it would be SIGBUS.
        MADV_POPULATE_READ | MADV_POPULATE_WRITE => {
            m.check_mapped(start, end)?;
            let mut va = start;
            while va < end {
                // Inside a region (checked above), so a user address.
                let addr = UserVirtAddr::new(va).ok_or(Errno::ENOMEM)?;
                m.handle_fault(addr, advice == MADV_POPULATE_WRITE, false)
                    .map_err(|e| match e {
                        crate::mm::vm::SegvCode::Oom | crate::mm::vm::SegvCode::MapErr => Errno::ENOMEM,
                        crate::mm::vm::SegvCode::AccErr => Errno::EINVAL,
                        crate::mm::vm::SegvCode::Bus => Errno::EFAULT,
                    })?;
                va += 4096;
            }
            Ok(0)
        }
        _ => {
            match zap {
                Some(anon_only) => m.zap_range(start, end, anon_only)?,
                None => m.check_mapped(start, end)?,
            }
            Ok(0)
        }
    }
});

syscall!(__arm64_sys_mincore, r, {
    let (start, len, vec) = (r.regs[0], r.regs[1], crate::uaccess::UserPtr::new(r.regs[2]));
    if start % 4096 != 0 {
        return Err(Errno::EINVAL);
    }
    let len = page_align(len).ok_or(Errno::ENOMEM)?;
    let end = start
        .checked_add(len)
        .filter(|&e| e <= arch::uaccess::TASK_SIZE)
        .ok_or(Errno::ENOMEM)?;
    let bytes = mm()?.mincore(start, end)?;
    crate::uaccess::copy_to_user(vec, &bytes)?;
    Ok(0)
});

syscall!(__arm64_sys_mremap, r, {
    let (addr, old_len, new_len, flags, new_addr) = (r.regs[0], r.regs[1], r.regs[2], r.regs[3], r.regs[4]);
    if flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0
        || (flags & MREMAP_FIXED != 0 && flags & MREMAP_MAYMOVE == 0)
    {
        return Err(Errno::EINVAL);
    }
    // MREMAP_DONTUNMAP (keep the old range, emptied) is not supported.
    if flags & MREMAP_DONTUNMAP != 0 {
        return Err(Errno::EINVAL);
    }
    if addr % 4096 != 0 {
        return Err(Errno::EINVAL);
    }
    let old_len = page_align(old_len).ok_or(Errno::EINVAL)?;
    let new_len = page_align(new_len).ok_or(Errno::EINVAL)?;
    // old_len 0 (duplicating a shared mapping) is not supported either.
    if new_len == 0 || old_len == 0 {
        return Err(Errno::EINVAL);
    }
    let fixed = if flags & MREMAP_FIXED != 0 {
        if new_addr % 4096 != 0 {
            return Err(Errno::EINVAL);
        }
        Some(new_addr)
    } else {
        None
    };
    mm()?
        .mremap(addr, old_len, new_len, flags & MREMAP_MAYMOVE != 0, fixed)
        .map(UserVirtAddr::as_u64)
});
