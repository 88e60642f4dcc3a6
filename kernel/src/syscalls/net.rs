//! The socket system calls of a kernel with networking but no address
//! family: Linux 6.12's `net/socket.c` argument checks, then the answers
//! Linux gives when the family is not built in (`EAFNOSUPPORT`) and, since
//! no descriptor can then be a socket, `EBADF` for a closed descriptor and
//! `ENOTSOCK` for any other. Programs probe with these (bash asks
//! `getpeername(0)` whether stdin is a network connection; glibc's syslog
//! and nscd clients try `socket(AF_UNIX)` and carry on without), and
//! `ENOSYS`, which Linux gives only without `CONFIG_NET`, misleads them.

use super::syscall;
use crate::errno::Errno;
use crate::fs::current_files;
use crate::uaccess::{copy_from_user, copy_to_user, UserPtr};
use uapi::socket::{
    MSG_CMSG_COMPAT, NPROTO, SOCKADDR_STORAGE_SIZE as SOCKADDR_STORAGE, SOCK_CLOEXEC, SOCK_MAX, SOCK_NONBLOCK,
    SOCK_TYPE_MASK,
};

/// `sock_create` for `family` and `type` (its flags already removed):
/// the family and type checks, then no family to create it in.
fn sock_create(family: i32, ty: i32) -> Errno {
    if !(0..NPROTO).contains(&family) {
        return Errno::EAFNOSUPPORT;
    }
    if !(0..SOCK_MAX).contains(&ty) {
        return Errno::EINVAL;
    }
    Errno::EAFNOSUPPORT
}

/// The flag bits of a socket `type` argument; EINVAL for unknown ones.
fn type_flags(ty: i32) -> Result<i32, Errno> {
    let flags = ty & !SOCK_TYPE_MASK;
    if flags & !(SOCK_CLOEXEC | SOCK_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(flags)
}

/// `sockfd_lookup_light`: the socket behind `fd`. None can exist here, so
/// this is EBADF for a closed (or O_PATH) descriptor and ENOTSOCK else.
fn sockfd_lookup(fd: u64) -> Errno {
    match current_files().get(fd as i32) {
        Ok(f) if !f.is_path_only() => Errno::ENOTSOCK,
        _ => Errno::EBADF,
    }
}

/// `move_addr_to_kernel`'s checks of a socket address argument.
fn move_addr_to_kernel(uaddr: u64, len: u64) -> Result<(), Errno> {
    let len = len as i32;
    if !(0..=SOCKADDR_STORAGE).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut buf = [0u8; SOCKADDR_STORAGE as usize];
    if len > 0 {
        copy_from_user(&mut buf[..len as usize], UserPtr::new(uaddr))?;
    }
    Ok(())
}

/// `import_ubuf`'s check of a data buffer: inside user space.
fn user_range(buf: u64, len: u64) -> Result<(), Errno> {
    crate::uaccess::user_range(UserPtr::new(buf), len as usize).map(|_| ())
}

syscall!(__arm64_sys_socket, r, {
    let (family, ty) = (r.regs[0] as i32, r.regs[1] as i32);
    type_flags(ty)?;
    Err(sock_create(family, ty & SOCK_TYPE_MASK))
});

syscall!(__arm64_sys_socketpair, r, {
    let (family, ty, vec) = (r.regs[0] as i32, r.regs[1] as i32, UserPtr::new(r.regs[3]));
    type_flags(ty)?;
    // Linux stores the two reserved descriptors before it creates the
    // sockets: an unwritable vector is EFAULT first. Its contents are
    // written back unchanged, since no descriptor is given out.
    let mut b = [0u8; 8];
    copy_from_user(&mut b, vec)?;
    copy_to_user(vec, &b)?;
    Err(sock_create(family, ty & SOCK_TYPE_MASK))
});

// bind, listen, getsockname, getpeername, shutdown, getsockopt,
// setsockopt, accept: the descriptor is looked up first.
syscall!(__arm64_sys_bind, r, Err(sockfd_lookup(r.regs[0])));
syscall!(__arm64_sys_listen, r, Err(sockfd_lookup(r.regs[0])));
syscall!(__arm64_sys_getsockname, r, Err(sockfd_lookup(r.regs[0])));
syscall!(__arm64_sys_getpeername, r, Err(sockfd_lookup(r.regs[0])));
syscall!(__arm64_sys_shutdown, r, Err(sockfd_lookup(r.regs[0])));
syscall!(__arm64_sys_getsockopt, r, Err(sockfd_lookup(r.regs[0])));
syscall!(__arm64_sys_setsockopt, r, Err(sockfd_lookup(r.regs[0])));

syscall!(__arm64_sys_connect, r, {
    let e = sockfd_lookup(r.regs[0]);
    if e == Errno::EBADF {
        return Err(e);
    }
    move_addr_to_kernel(r.regs[1], r.regs[2])?;
    Err(e)
});

syscall!(__arm64_sys_accept, r, Err(sockfd_lookup(r.regs[0])));
syscall!(__arm64_sys_accept4, r, {
    let e = sockfd_lookup(r.regs[0]);
    if e == Errno::EBADF {
        return Err(e);
    }
    if r.regs[3] as i32 & !(SOCK_CLOEXEC | SOCK_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    Err(e)
});

// sendto(fd, buf, len, flags, addr, addrlen), recvfrom(fd, buf, len, ...):
// the buffer is checked before the descriptor.
syscall!(__arm64_sys_sendto, r, {
    user_range(r.regs[1], r.regs[2])?;
    Err(sockfd_lookup(r.regs[0]))
});
syscall!(__arm64_sys_recvfrom, r, {
    user_range(r.regs[1], r.regs[2])?;
    Err(sockfd_lookup(r.regs[0]))
});

// sendmsg, recvmsg, sendmmsg: MSG_CMSG_COMPAT is refused first.
fn msg_call(fd: u64, flags: u64) -> Errno {
    if flags as u32 & MSG_CMSG_COMPAT != 0 {
        return Errno::EINVAL;
    }
    sockfd_lookup(fd)
}
syscall!(__arm64_sys_sendmsg, r, Err(msg_call(r.regs[0], r.regs[2])));
syscall!(__arm64_sys_recvmsg, r, Err(msg_call(r.regs[0], r.regs[2])));
syscall!(__arm64_sys_sendmmsg, r, Err(msg_call(r.regs[0], r.regs[3])));

// recvmmsg(fd, mmsg, vlen, flags, timeout): flags, then the timeout.
syscall!(__arm64_sys_recvmmsg, r, {
    if r.regs[3] as u32 & MSG_CMSG_COMPAT != 0 {
        return Err(Errno::EINVAL);
    }
    if r.regs[4] != 0 {
        let mut ts = [0u8; 16];
        copy_from_user(&mut ts, UserPtr::new(r.regs[4]))?;
        let sec = i64::from_le_bytes(ts[..8].try_into().unwrap_or([0; 8]));
        let nsec = i64::from_le_bytes(ts[8..].try_into().unwrap_or([0; 8]));
        if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
            return Err(Errno::EINVAL);
        }
    }
    Err(sockfd_lookup(r.regs[0]))
});
