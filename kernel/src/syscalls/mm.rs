//! Memory system calls: brk, anonymous mmap, munmap, mprotect.

use super::syscall;
use crate::errno::Errno;
use crate::mm::vm::{Mm, Prot};
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

syscall!(__arm64_sys_mmap, r, {
    let (addr, len, prot, flags, fd, off) = (r.regs[0], r.regs[1], r.regs[2], r.regs[3], r.regs[4] as i32, r.regs[5]);
    let prot = Prot::from_bits(prot).ok_or(Errno::EINVAL)?;
    // arm64's sys_mmap: the offset must be page aligned, even for
    // anonymous memory.
    if len == 0 || off % 4096 != 0 {
        return Err(Errno::EINVAL);
    }
    // ksys_mmap_pgoff looks the file up before do_mmap checks the map
    // type: flags 0 with fd -1 is EBADF, not EINVAL.
    if flags & MAP_ANONYMOUS == 0 && fd < 0 {
        return Err(Errno::EBADF);
    }
    match flags & MAP_TYPE {
        MAP_PRIVATE => {}
        // Shared anonymous memory behaves as private until fork sharing of
        // writable pages exists; refuse rather than get fork semantics wrong.
        MAP_SHARED => return Err(Errno::EINVAL),
        _ => return Err(Errno::EINVAL),
    }
    if flags & MAP_ANONYMOUS == 0 {
        // File mappings are not supported: only anonymous memory.
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        return Err(Errno::ENODEV);
    }
    let m = mm()?;
    if flags & MAP_FIXED_NOREPLACE != 0 {
        if addr % 4096 != 0 {
            return Err(Errno::EINVAL);
        }
        let len = len.checked_add(4095).ok_or(Errno::ENOMEM)? & !4095;
        let end = addr.checked_add(len).ok_or(Errno::ENOMEM)?;
        m.add_region(addr, end, prot, crate::mm::vm::VmaKind::Anon)
            .map_err(|e| {
                if e == Errno::EINVAL {
                    Errno::EINVAL
                } else {
                    Errno::EEXIST
                }
            })?;
        return Ok(addr);
    }
    m.mmap_anon(addr, len, prot, flags & MAP_FIXED != 0)
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
