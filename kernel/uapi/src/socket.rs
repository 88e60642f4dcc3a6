//! Socket numbers and sizes (include/linux/net.h, include/linux/socket.h
//! and asm-generic/socket.h as arm64 has them).

/// `NPROTO`: address families are below it.
pub const NPROTO: i32 = 46;
/// `SOCK_MAX`: socket types are below it.
pub const SOCK_MAX: i32 = 11;
/// The type bits of `socket(2)`'s `type`; the rest are flags.
pub const SOCK_TYPE_MASK: i32 = 0xf;
/// `socket(2)`/`accept4(2)` flag: close on exec (`O_CLOEXEC`).
pub const SOCK_CLOEXEC: i32 = 0o2000000;
/// `socket(2)`/`accept4(2)` flag: non-blocking (`O_NONBLOCK`).
pub const SOCK_NONBLOCK: i32 = 0o4000;
/// The message flag a 64-bit task may not pass to sendmsg/recvmsg and
/// their batch forms.
pub const MSG_CMSG_COMPAT: u32 = 0x8000_0000;
/// `sizeof(struct sockaddr_storage)`.
pub const SOCKADDR_STORAGE_SIZE: i32 = 128;

/// `ioctl`: set the process (group) that gets SIGIO/SIGURG for a socket
/// (include/uapi/asm-generic/sockios.h).
pub const FIOSETOWN: u32 = 0x8901;
/// `ioctl`: set the process group of a socket, as FIOSETOWN.
pub const SIOCSPGRP: u32 = 0x8902;
