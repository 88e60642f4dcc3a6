//! Terminal ioctls and `struct termios`/`struct winsize`
//! (include/uapi/asm-generic/ioctls.h and termbits.h, which arm64 uses).

/// ioctl request numbers.
pub const TCGETS: u32 = 0x5401;
pub const TCSETS: u32 = 0x5402;
pub const TCSETSW: u32 = 0x5403;
pub const TCSETSF: u32 = 0x5404;
pub const TCGETA: u32 = 0x5405;
pub const TCSETA: u32 = 0x5406;
pub const TCSETAW: u32 = 0x5407;
pub const TCSETAF: u32 = 0x5408;
pub const TCSBRK: u32 = 0x5409;
pub const TCXONC: u32 = 0x540A;
pub const TCFLSH: u32 = 0x540B;
pub const TIOCEXCL: u32 = 0x540C;
pub const TIOCNXCL: u32 = 0x540D;
pub const TIOCSCTTY: u32 = 0x540E;
pub const TIOCGPGRP: u32 = 0x540F;
pub const TIOCSPGRP: u32 = 0x5410;
pub const TIOCOUTQ: u32 = 0x5411;
pub const TIOCSTI: u32 = 0x5412;
pub const TIOCGWINSZ: u32 = 0x5413;
pub const TIOCSWINSZ: u32 = 0x5414;
pub const TIOCMGET: u32 = 0x5415;
pub const TIOCMBIS: u32 = 0x5416;
pub const TIOCMBIC: u32 = 0x5417;
pub const TIOCMSET: u32 = 0x5418;
pub const TIOCGSOFTCAR: u32 = 0x5419;
pub const TIOCSSOFTCAR: u32 = 0x541A;
pub const FIONREAD: u32 = 0x541B;
pub const TIOCINQ: u32 = FIONREAD;
pub const TIOCLINUX: u32 = 0x541C;
pub const TIOCCONS: u32 = 0x541D;
pub const TIOCGSERIAL: u32 = 0x541E;
pub const TIOCSSERIAL: u32 = 0x541F;
pub const TIOCPKT: u32 = 0x5420;
pub const FIONBIO: u32 = 0x5421;
pub const TIOCNOTTY: u32 = 0x5422;
pub const TIOCSETD: u32 = 0x5423;
pub const TIOCGETD: u32 = 0x5424;
pub const TCSBRKP: u32 = 0x5425;
pub const TIOCSBRK: u32 = 0x5427;
pub const TIOCCBRK: u32 = 0x5428;
pub const TIOCGSID: u32 = 0x5429;
pub const TCGETS2: u32 = 0x802C542A;
pub const TCSETS2: u32 = 0x402C542B;
pub const TIOCGPTN: u32 = 0x80045430;
pub const TIOCSPTLCK: u32 = 0x40045431;
pub const FIONCLEX: u32 = 0x5450;
pub const FIOCLEX: u32 = 0x5451;
pub const FIOASYNC: u32 = 0x5452;

/// Number of control characters in the kernel's `struct termios`.
pub const NCCS: usize = 19;

/// `c_cc` indices.
pub const VINTR: usize = 0;
pub const VQUIT: usize = 1;
pub const VERASE: usize = 2;
pub const VKILL: usize = 3;
pub const VEOF: usize = 4;
pub const VTIME: usize = 5;
pub const VMIN: usize = 6;
pub const VSWTC: usize = 7;
pub const VSTART: usize = 8;
pub const VSTOP: usize = 9;
pub const VSUSP: usize = 10;
pub const VEOL: usize = 11;
pub const VREPRINT: usize = 12;
pub const VDISCARD: usize = 13;
pub const VWERASE: usize = 14;
pub const VLNEXT: usize = 15;
pub const VEOL2: usize = 16;

/// `c_iflag` bits.
pub const IGNBRK: u32 = 0o1;
pub const BRKINT: u32 = 0o2;
pub const IGNPAR: u32 = 0o4;
pub const PARMRK: u32 = 0o10;
pub const INPCK: u32 = 0o20;
pub const ISTRIP: u32 = 0o40;
pub const INLCR: u32 = 0o100;
pub const IGNCR: u32 = 0o200;
pub const ICRNL: u32 = 0o400;
pub const IUCLC: u32 = 0o1000;
pub const IXON: u32 = 0o2000;
pub const IXANY: u32 = 0o4000;
pub const IXOFF: u32 = 0o10000;
pub const IMAXBEL: u32 = 0o20000;
pub const IUTF8: u32 = 0o40000;

/// `c_oflag` bits.
pub const OPOST: u32 = 0o1;
pub const OLCUC: u32 = 0o2;
pub const ONLCR: u32 = 0o4;
pub const OCRNL: u32 = 0o10;
pub const ONOCR: u32 = 0o20;
pub const ONLRET: u32 = 0o40;
pub const OFILL: u32 = 0o100;
pub const OFDEL: u32 = 0o200;

/// `c_cflag` bits.
pub const CBAUD: u32 = 0o10017;
pub const B9600: u32 = 0o15;
pub const B38400: u32 = 0o17;
pub const B115200: u32 = 0o10002;
pub const CSIZE: u32 = 0o60;
pub const CS5: u32 = 0o0;
pub const CS6: u32 = 0o20;
pub const CS7: u32 = 0o40;
pub const CS8: u32 = 0o60;
pub const CSTOPB: u32 = 0o100;
pub const CREAD: u32 = 0o200;
pub const PARENB: u32 = 0o400;
pub const PARODD: u32 = 0o1000;
pub const HUPCL: u32 = 0o2000;
pub const CLOCAL: u32 = 0o4000;

/// `c_lflag` bits.
pub const ISIG: u32 = 0o1;
pub const ICANON: u32 = 0o2;
pub const XCASE: u32 = 0o4;
pub const ECHO: u32 = 0o10;
pub const ECHOE: u32 = 0o20;
pub const ECHOK: u32 = 0o40;
pub const ECHONL: u32 = 0o100;
pub const NOFLSH: u32 = 0o200;
pub const TOSTOP: u32 = 0o400;
pub const ECHOCTL: u32 = 0o1000;
pub const ECHOPRT: u32 = 0o2000;
pub const ECHOKE: u32 = 0o4000;
pub const FLUSHO: u32 = 0o10000;
pub const PENDIN: u32 = 0o40000;
pub const IEXTEN: u32 = 0o100000;
pub const EXTPROC: u32 = 0o200000;

/// The kernel's `struct termios` (asm-generic termbits.h), 36 bytes; what
/// TCGETS/TCSETS copy. (glibc's user-side `struct termios` is larger and
/// converted by the C library.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Termios {
    pub c_iflag: u32,
    pub c_oflag: u32,
    pub c_cflag: u32,
    pub c_lflag: u32,
    pub c_line: u8,
    pub c_cc: [u8; NCCS],
}

impl Termios {
    pub const SIZE: usize = 36;

    /// What a fresh Linux console has (`tty_std_termios`): ICRNL|IXON,
    /// OPOST|ONLCR, B38400|CS8|CREAD|HUPCL, ISIG|ICANON|ECHO|ECHOE|ECHOK|
    /// ECHOCTL|ECHOKE|IEXTEN, and `INIT_C_CC`.
    pub const fn linux_default() -> Self {
        Termios {
            c_iflag: ICRNL | IXON,
            c_oflag: OPOST | ONLCR,
            c_cflag: B38400 | CS8 | CREAD | HUPCL,
            c_lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            c_line: 0,
            // ^C ^\ DEL ^U ^D 0 1 0 ^Q ^S ^Z 0 ^R ^O ^W ^V 0 0 0
            c_cc: [3, 28, 127, 21, 4, 0, 1, 0, 17, 19, 26, 0, 18, 15, 23, 22, 0, 0, 0],
        }
    }

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..4].copy_from_slice(&self.c_iflag.to_le_bytes());
        b[4..8].copy_from_slice(&self.c_oflag.to_le_bytes());
        b[8..12].copy_from_slice(&self.c_cflag.to_le_bytes());
        b[12..16].copy_from_slice(&self.c_lflag.to_le_bytes());
        b[16] = self.c_line;
        b[17..36].copy_from_slice(&self.c_cc);
        b
    }

    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut c_cc = [0u8; NCCS];
        c_cc.copy_from_slice(&b[17..36]);
        Termios {
            c_iflag: word(0),
            c_oflag: word(4),
            c_cflag: word(8),
            c_lflag: word(12),
            c_line: b[16],
            c_cc,
        }
    }
}

/// `struct winsize`, 8 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Winsize {
    pub ws_row: u16,
    pub ws_col: u16,
    pub ws_xpixel: u16,
    pub ws_ypixel: u16,
}

impl Winsize {
    pub const SIZE: usize = 8;

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..2].copy_from_slice(&self.ws_row.to_le_bytes());
        b[2..4].copy_from_slice(&self.ws_col.to_le_bytes());
        b[4..6].copy_from_slice(&self.ws_xpixel.to_le_bytes());
        b[6..8].copy_from_slice(&self.ws_ypixel.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        let half = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Winsize {
            ws_row: half(0),
            ws_col: half(2),
            ws_xpixel: half(4),
            ws_ypixel: half(6),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn termios_layout() {
        assert_eq!(size_of::<Termios>(), 36);
        assert_eq!(offset_of!(Termios, c_lflag), 12);
        assert_eq!(offset_of!(Termios, c_line), 16);
        assert_eq!(offset_of!(Termios, c_cc), 17);
        let t = Termios::linux_default();
        let b = t.to_bytes();
        assert_eq!(Termios::from_bytes(&b), t);
        assert_eq!(b[17 + VINTR], 3);
        assert_eq!(b[17 + VEOF], 4);
        assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 0o105073);
    }

    #[test]
    fn winsize_layout() {
        assert_eq!(size_of::<Winsize>(), 8);
        let w = Winsize {
            ws_row: 24,
            ws_col: 80,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        assert_eq!(w.to_bytes(), [24, 0, 80, 0, 0, 0, 0, 0]);
        assert_eq!(Winsize::from_bytes(&w.to_bytes()), w);
    }

    #[test]
    fn ioctl_numbers() {
        assert_eq!(TCGETS, 0x5401);
        assert_eq!(TIOCGWINSZ, 0x5413);
        assert_eq!(FIONREAD, 0x541B);
        assert_eq!(TIOCGPGRP, 0x540F);
    }
}
