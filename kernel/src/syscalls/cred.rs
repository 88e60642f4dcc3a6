//! Credential system calls (Linux's `kernel/sys.c`, `kernel/groups.c`,
//! `kernel/capability.c`): the get/set*id family, supplementary groups and
//! capget/capset. Each changes the calling thread's credentials only, as
//! Linux's do (glibc makes the change process-wide by signalling every
//! thread); the rules are `process_core::cred`'s.

use super::{syscall, SysResult};
use crate::cred::{commit_creds, current_cred, Cred};
use crate::errno::Errno;
use crate::uaccess::{copy_from_user, copy_to_user, get_user_u32, put_user_u32, UserPtr};
use alloc::vec::Vec;
use uapi::capability as cap;

/// The `uid_t`/`gid_t` argument `i` (the low 32 bits of its register).
fn id_arg(r: &arch::ptrace::PtRegs, i: usize) -> u32 {
    r.regs[i] as u32
}

syscall!(__arm64_sys_getuid, _r, Ok(u64::from(current_cred().uid)));
syscall!(__arm64_sys_geteuid, _r, Ok(u64::from(current_cred().euid)));
syscall!(__arm64_sys_getgid, _r, Ok(u64::from(current_cred().gid)));
syscall!(__arm64_sys_getegid, _r, Ok(u64::from(current_cred().egid)));

/// Installs the result of a transition and returns 0.
fn commit(new: Result<Cred, Errno>) -> SysResult {
    commit_creds(new?);
    Ok(0)
}

/// As `commit`, for a transition that may find nothing to change.
fn commit_if_changed(new: Result<Option<Cred>, Errno>) -> SysResult {
    if let Some(c) = new? {
        commit_creds(c);
    }
    Ok(0)
}

syscall!(__arm64_sys_setuid, r, commit(current_cred().setuid(id_arg(r, 0))));
syscall!(__arm64_sys_setgid, r, commit(current_cred().setgid(id_arg(r, 0))));
syscall!(
    __arm64_sys_setreuid,
    r,
    commit(current_cred().setreuid(id_arg(r, 0), id_arg(r, 1)))
);
syscall!(
    __arm64_sys_setregid,
    r,
    commit(current_cred().setregid(id_arg(r, 0), id_arg(r, 1)))
);
syscall!(
    __arm64_sys_setresuid,
    r,
    commit_if_changed(current_cred().setresuid(id_arg(r, 0), id_arg(r, 1), id_arg(r, 2)))
);
syscall!(
    __arm64_sys_setresgid,
    r,
    commit_if_changed(current_cred().setresgid(id_arg(r, 0), id_arg(r, 1), id_arg(r, 2)))
);

/// setfsuid/setfsgid: the old ID, whether or not the change was made.
fn commit_fs(res: (u32, Option<Cred>)) -> SysResult {
    if let Some(c) = res.1 {
        commit_creds(c);
    }
    Ok(u64::from(res.0))
}

syscall!(
    __arm64_sys_setfsuid,
    r,
    commit_fs(current_cred().setfsuid(id_arg(r, 0)))
);
syscall!(
    __arm64_sys_setfsgid,
    r,
    commit_fs(current_cred().setfsgid(id_arg(r, 0)))
);

/// getresuid/getresgid: the three IDs stored in order, stopping at the
/// first bad pointer (as Linux's chain of put_user).
fn put_res_ids(r: &arch::ptrace::PtRegs, ids: [u32; 3]) -> SysResult {
    for (&p, id) in r.regs[..3].iter().zip(ids) {
        put_user_u32(UserPtr::new(p), id)?;
    }
    Ok(0)
}

syscall!(__arm64_sys_getresuid, r, {
    let c = current_cred();
    put_res_ids(r, [c.uid, c.euid, c.suid])
});
syscall!(__arm64_sys_getresgid, r, {
    let c = current_cred();
    put_res_ids(r, [c.gid, c.egid, c.sgid])
});

syscall!(__arm64_sys_getgroups, r, {
    let (size, list) = (r.regs[0] as i32, UserPtr::new(r.regs[1]));
    let size = usize::try_from(size).map_err(|_| Errno::EINVAL)?;
    let groups = current_cred().groups.clone();
    if size != 0 {
        if groups.len() > size {
            return Err(Errno::EINVAL);
        }
        let bytes: Vec<u8> = groups.iter().flat_map(|g| g.to_le_bytes()).collect();
        copy_to_user(list, &bytes)?;
    }
    Ok(groups.len() as u64)
});

syscall!(__arm64_sys_setgroups, r, {
    let (size, list) = (r.regs[0] as i32 as u32 as usize, UserPtr::new(r.regs[1]));
    let cred = current_cred();
    // Linux's order: permission, then the count, then the list.
    if !cred.capable(cap::CAP_SETGID) {
        return Err(Errno::EPERM);
    }
    if size > cap::NGROUPS_MAX {
        return Err(Errno::EINVAL);
    }
    let mut bytes = crate::uaccess::zeroed_buf(size * 4)?;
    copy_from_user(&mut bytes, list)?;
    let groups = bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    commit(cred.setgroups(groups))
});

/// The number of data structs the header's version asks for; an unknown
/// version is answered with the kernel's own written back, and EINVAL
/// (`cap_validate_magic`).
fn cap_validate_magic(header: UserPtr) -> Result<usize, Errno> {
    let version = get_user_u32(header)?;
    match cap::cap_data_count(version) {
        Some(n) => Ok(n),
        None => {
            put_user_u32(header, cap::LINUX_CAPABILITY_VERSION_3)?;
            Err(Errno::EINVAL)
        }
    }
}

/// The header's `pid` field.
fn cap_header_pid(header: UserPtr) -> Result<i32, Errno> {
    Ok(get_user_u32(header.wrapping_add(4))? as i32)
}

syscall!(__arm64_sys_capget, r, {
    let (header, data) = (UserPtr::new(r.regs[0]), UserPtr::new(r.regs[1]));
    let count = match cap_validate_magic(header) {
        // A caller probing for the version passes no data pointer.
        Err(Errno::EINVAL) if data.is_null() => return Ok(0),
        r => r?,
    };
    if data.is_null() {
        return Ok(0);
    }
    let pid = cap_header_pid(header)?;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let cred = if pid == 0 || pid as u32 == crate::sched::current().tid() {
        current_cred()
    } else {
        let t = crate::process::find_task(pid as u32).ok_or(Errno::ESRCH)?;
        crate::cred::task_cred(&t)
    };
    let mut bytes = [0u8; 2 * cap::CAP_USER_DATA_SIZE];
    for (i, d) in bytes.chunks_exact_mut(cap::CAP_USER_DATA_SIZE).enumerate() {
        let shift = 32 * i;
        for (j, set) in [cred.cap_effective, cred.cap_permitted, cred.cap_inheritable]
            .into_iter()
            .enumerate()
        {
            d[4 * j..4 * j + 4].copy_from_slice(&((set >> shift) as u32).to_le_bytes());
        }
    }
    copy_to_user(data, &bytes[..count * cap::CAP_USER_DATA_SIZE])?;
    Ok(0)
});

syscall!(__arm64_sys_capset, r, {
    let (header, data) = (UserPtr::new(r.regs[0]), UserPtr::new(r.regs[1]));
    let count = cap_validate_magic(header)?;
    let pid = cap_header_pid(header)?;
    // Only the calling thread itself, by 0 or its own ID.
    if pid != 0 && pid as u32 != crate::sched::current().tid() {
        return Err(Errno::EPERM);
    }
    let mut bytes = [0u8; 2 * cap::CAP_USER_DATA_SIZE];
    copy_from_user(&mut bytes[..count * cap::CAP_USER_DATA_SIZE], data)?;
    let word = |i: usize, j: usize| {
        let o = i * cap::CAP_USER_DATA_SIZE + 4 * j;
        u64::from(u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]])) << (32 * i)
    };
    let set = |j: usize| word(0, j) | word(1, j);
    commit(current_cred().capset(set(0), set(1), set(2)))
});
