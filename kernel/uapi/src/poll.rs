//! poll(2) event bits (include/uapi/asm-generic/poll.h).

pub const POLLIN: u16 = 0x0001;
pub const POLLPRI: u16 = 0x0002;
pub const POLLOUT: u16 = 0x0004;
pub const POLLERR: u16 = 0x0008;
pub const POLLHUP: u16 = 0x0010;
pub const POLLNVAL: u16 = 0x0020;
pub const POLLRDNORM: u16 = 0x0040;
pub const POLLRDBAND: u16 = 0x0080;
pub const POLLWRNORM: u16 = 0x0100;
pub const POLLWRBAND: u16 = 0x0200;
pub const POLLMSG: u16 = 0x0400;
pub const POLLREMOVE: u16 = 0x1000;
pub const POLLRDHUP: u16 = 0x2000;

/// `struct pollfd`: fd i32, events i16, revents i16 (8 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PollFd {
    pub fd: i32,
    pub events: u16,
    pub revents: u16,
}

impl PollFd {
    pub const SIZE: usize = 8;

    pub fn from_bytes(b: [u8; 8]) -> Self {
        PollFd {
            fd: i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            events: u16::from_le_bytes([b[4], b[5]]),
            revents: u16::from_le_bytes([b[6], b[7]]),
        }
    }

    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0..4].copy_from_slice(&self.fd.to_le_bytes());
        b[4..6].copy_from_slice(&self.events.to_le_bytes());
        b[6..8].copy_from_slice(&self.revents.to_le_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pollfd_layout() {
        assert_eq!(core::mem::size_of::<PollFd>(), 8);
        assert_eq!(core::mem::offset_of!(PollFd, events), 4);
        assert_eq!(core::mem::offset_of!(PollFd, revents), 6);
        let p = PollFd {
            fd: -3,
            events: POLLIN | POLLOUT,
            revents: POLLHUP,
        };
        assert_eq!(PollFd::from_bytes(p.to_bytes()), p);
        assert_eq!(POLLRDHUP, 0x2000);
    }
}
