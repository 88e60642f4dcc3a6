//! Memory system calls: brk, mmap (anonymous, of files, shared), munmap,
//! mprotect, mremap, madvise, mincore.

use super::syscall;
use crate::errno::Errno;
use crate::mm::vm::{Mm, Placement, Prot};
use alloc::sync::Arc;

fn mm() -> Result<Arc<Mm>, Errno> {
    crate::sched::current().mm.lock().clone().ok_or(Errno::EFAULT)
}

syscall!(__arm64_sys_brk, r, Ok(mm()?.brk(r.regs[0])));

const MAP_SHARED: u64 = 0x01;
const MAP_PRIVATE: u64 = 0x02;
const MAP_TYPE: u64 = 0x0f;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_FIXED_NOREPLACE: u64 = 0x100000;

const MAP_SHARED_VALIDATE: u64 = 0x03;
/// The flags Linux 6.12 defines for mmap (MAP_SHARED_VALIDATE refuses others).
const MAP_KNOWN_FLAGS: u64 = 0x0f | 0x10 | 0x20 | 0x100 | 0x800 | 0x1000 | 0x2000 | 0x4000 | 0x8000
    | 0x1_0000 | 0x2_0000 | 0x4_0000 | 0x8_0000 | 0x10_0000 | 0xfc00_0000;

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
    mm()?.mmap_region(addr, len, prot, placement, shared, backing)
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
