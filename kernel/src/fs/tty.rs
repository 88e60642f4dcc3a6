//! The console TTY (`/dev/console`, 5:1): output to the boot console with
//! ONLCR, input polled from the UART at each tick into a line discipline
//! with canonical editing (erase, kill line, EOF) and echo, as a Linux
//! console in its default termios does.

use crate::sync::IrqSpinLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use uapi::poll::{POLLIN, POLLOUT};
use uapi::termios::{
    Termios, Winsize, ECHO, ICANON, ICRNL, ISIG, ONLCR, TCGETS, TCSETS, TCSETSF, TCSETSW, TIOCGPGRP, TIOCGSID,
    TIOCGWINSZ, TIOCSCTTY, TIOCSPGRP, TIOCSWINSZ, VINTR, VQUIT, VSUSP,
};
use vfs::device::CharDevice;
use vfs::file::{FileOps, OpenFile};
use vfs::WaitQueueHead;

struct Ldisc {
    termios: Termios,
    /// Bytes ready for read (complete lines in canonical mode).
    ready: VecDeque<u8>,
    /// The line being edited.
    line: Vec<u8>,
    /// An EOF (^D) at the start of a line: the next read returns 0.
    eof: bool,
    winsize: Winsize,
    pgrp: u32,
    /// The session this is the controlling terminal of, 0 for none
    /// (Linux's `tty->session`). Opening `/dev/console` never makes it one,
    /// as on Linux; TIOCSCTTY does.
    session: u32,
}

impl Ldisc {
    /// Forgets the session (and its foreground group) once its leader has
    /// exited: Linux's `disassociate_ctty` at the leader's exit, done here
    /// when the terminal is next used.
    fn drop_dead_session(&mut self) {
        if self.session != 0 && crate::process::find_process(self.session).is_none_or(|p| p.is_zombie()) {
            self.session = 0;
            self.pgrp = 0;
        }
    }
}

/// The console.
pub struct Console {
    ldisc: IrqSpinLock<Ldisc>,
    wq: Arc<WaitQueueHead>,
}

static CONSOLE: spin::Once<Arc<Console>> = spin::Once::new();

/// The console device.
pub fn console() -> Arc<Console> {
    CONSOLE
        .call_once(|| {
            Arc::new(Console {
                ldisc: IrqSpinLock::new(Ldisc {
                    termios: Termios::linux_default(),
                    ready: VecDeque::new(),
                    line: Vec::new(),
                    eof: false,
                    winsize: Winsize {
                        ws_row: 24,
                        ws_col: 80,
                        ws_xpixel: 0,
                        ws_ypixel: 0,
                    },
                    pgrp: 0,
                    session: 0,
                }),
                wq: Arc::new(WaitQueueHead::new()),
            })
        })
        .clone()
}

fn echo(bytes: &[u8]) {
    if let Some(uart) = crate::printk::console_uart() {
        for &b in bytes {
            uart.putc(b);
        }
    }
}

/// Takes pending input from the UART (called from the timer tick).
pub fn poll() {
    let Some(uart) = crate::printk::console_uart() else {
        return;
    };
    let Some(con) = CONSOLE.get() else { return };
    let mut woke = false;
    while let Some(mut c) = uart.getc() {
        let mut l = con.ldisc.lock();
        let t = l.termios;
        if t.c_iflag & ICRNL != 0 && c == b'\r' {
            c = b'\n';
        }
        if t.c_lflag & ISIG != 0 {
            let sig = if c == t.c_cc[VINTR] {
                Some((crate::signal::SIGINT, &b"^C\r\n"[..]))
            } else if c == t.c_cc[VQUIT] {
                Some((crate::signal::SIGQUIT, &b"^\\\r\n"[..]))
            } else if c == t.c_cc[VSUSP] {
                Some((crate::signal::SIGTSTP, &b"^Z\r\n"[..]))
            } else {
                None
            };
            if let Some((sig, text)) = sig {
                l.line.clear();
                l.drop_dead_session();
                let pgrp = l.pgrp;
                drop(l);
                if t.c_lflag & ECHO != 0 {
                    echo(text);
                }
                signal_foreground(pgrp, sig);
                continue;
            }
        }
        if t.c_lflag & ICANON == 0 {
            l.ready.push_back(c);
            woke = true;
            if t.c_lflag & ECHO != 0 {
                echo(&[c]);
            }
            continue;
        }
        match c {
            0x7f | 0x08 => {
                if l.line.pop().is_some() && t.c_lflag & ECHO != 0 {
                    echo(b"\x08 \x08");
                }
            }
            0x15 => {
                // ^U: kill the line.
                let n = l.line.len();
                l.line.clear();
                if t.c_lflag & ECHO != 0 {
                    for _ in 0..n {
                        echo(b"\x08 \x08");
                    }
                }
            }
            0x04 => {
                // ^D: end the line without a newline; at its start, EOF.
                if l.line.is_empty() {
                    l.eof = true;
                } else {
                    let line = core::mem::take(&mut l.line);
                    l.ready.extend(line);
                }
                woke = true;
            }
            _ => {
                l.line.push(c);
                if t.c_lflag & ECHO != 0 {
                    echo(if c == b'\n' { b"\r\n" } else { core::slice::from_ref(&c) });
                }
                if c == b'\n' {
                    let line = core::mem::take(&mut l.line);
                    l.ready.extend(line);
                    woke = true;
                }
            }
        }
    }
    if woke {
        con.wq.wake_up();
    }
}

/// Sends a terminal signal to the foreground process group (set with
/// TIOCSPGRP); without one, to every process but init, the shell that
/// started them ignoring it as shells do.
fn signal_foreground(pgrp: u32, sig: u32) {
    let info = crate::signal::SigInfo {
        signo: sig,
        code: crate::signal::code::SI_KERNEL,
        ..Default::default()
    };
    for p in crate::process::all_processes() {
        let fg = if pgrp != 0 {
            p.pgid.load(core::sync::atomic::Ordering::Relaxed) == pgrp
        } else {
            p.pid != 1
        };
        if fg {
            crate::signal::send_to_process(&p, info);
        }
    }
}

/// The calling process's session id and whether it leads it.
fn current_session() -> (u32, bool) {
    let p = crate::process::current_process();
    let sid = p.sid.load(core::sync::atomic::Ordering::Relaxed);
    (sid, sid == p.pid)
}

impl Console {
    /// Whether this is the caller's controlling terminal (Linux's
    /// `current->signal->tty == tty`).
    fn is_current_ctty(&self) -> bool {
        let mut l = self.ldisc.lock();
        l.drop_dead_session();
        l.session != 0 && l.session == current_session().0
    }

    /// TIOCSCTTY: makes this the controlling terminal of the caller's
    /// session; the caller must lead a session without one, and takes it
    /// from another session only with `steal` (root may, as Linux's
    /// CAP_SYS_ADMIN).
    fn set_ctty(&self, steal: bool) -> vfs::Result<i64> {
        let (sid, leader) = current_session();
        let mut l = self.ldisc.lock();
        l.drop_dead_session();
        if leader && l.session == sid {
            return Ok(0);
        }
        if !leader {
            return Err(uapi::Errno::EPERM);
        }
        if l.session != 0 && !steal {
            return Err(uapi::Errno::EPERM);
        }
        // Every task runs as root here: the FMODE_READ requirement Linux
        // makes of others does not apply.
        l.session = sid;
        l.pgrp = crate::process::current_process()
            .pgid
            .load(core::sync::atomic::Ordering::Relaxed);
        Ok(0)
    }

    /// TIOCSPGRP: the caller's controlling terminal gets a foreground
    /// process group of the caller's session.
    fn set_pgrp(&self, arg: crate::uaccess::UserPtr) -> vfs::Result<i64> {
        if !self.is_current_ctty() {
            return Err(uapi::Errno::ENOTTY);
        }
        let g = crate::uaccess::get_user_u32(arg).map_err(|_| uapi::Errno::EFAULT)?;
        if (g as i32) < 0 {
            return Err(uapi::Errno::EINVAL);
        }
        let (sid, _) = current_session();
        let ordering = core::sync::atomic::Ordering::Relaxed;
        let member = crate::process::all_processes()
            .into_iter()
            .find(|p| p.pgid.load(ordering) == g)
            .ok_or(uapi::Errno::ESRCH)?;
        if member.sid.load(ordering) != sid {
            return Err(uapi::Errno::EPERM);
        }
        self.ldisc.lock().pgrp = g;
        Ok(0)
    }
}

/// `/dev/tty` (5,0): the caller's controlling terminal, ENXIO without one
/// (Linux's `tty_open_current_tty`). The console is the only terminal here.
pub struct CurrentTty(pub Arc<Console>);

impl CharDevice for CurrentTty {
    fn open(&self, _flags: u32) -> vfs::Result<()> {
        if self.0.is_current_ctty() {
            Ok(())
        } else {
            Err(uapi::Errno::ENXIO)
        }
    }
}

impl FileOps for CurrentTty {
    fn has_read_iter(&self) -> bool {
        true
    }

    fn has_write_iter(&self) -> bool {
        true
    }

    fn read(&self, file: &OpenFile, buf: &mut [u8], pos: &mut u64) -> vfs::Result<usize> {
        self.0.read(file, buf, pos)
    }

    fn write(&self, file: &OpenFile, buf: &[u8], pos: &mut u64) -> vfs::Result<usize> {
        self.0.write(file, buf, pos)
    }

    fn llseek(&self, file: &OpenFile, pos: u64, offset: i64, whence: u32, size: u64) -> vfs::Result<u64> {
        self.0.llseek(file, pos, offset, whence, size)
    }

    fn positional(&self) -> bool {
        false
    }

    fn poll(&self, file: &OpenFile) -> u16 {
        self.0.poll(file)
    }

    fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        self.0.wait_queue()
    }

    fn ioctl(&self, file: &OpenFile, cmd: u32, arg: u64) -> vfs::Result<i64> {
        self.0.ioctl(file, cmd, arg)
    }
}

impl FileOps for Console {
    /// Linux's `tty_fops` read and write with `tty_read`/`tty_write`,
    /// both iter-style.
    fn has_read_iter(&self) -> bool {
        true
    }

    fn has_write_iter(&self) -> bool {
        true
    }

    fn read(&self, _file: &OpenFile, buf: &mut [u8], _pos: &mut u64) -> vfs::Result<usize> {
        let mut l = self.ldisc.lock();
        if l.ready.is_empty() {
            if l.eof {
                l.eof = false;
                return Ok(0);
            }
            return Err(uapi::Errno::EAGAIN);
        }
        let canon = l.termios.c_lflag & ICANON != 0;
        let mut n = 0;
        while n < buf.len() {
            let Some(b) = l.ready.pop_front() else { break };
            buf[n] = b;
            n += 1;
            if canon && b == b'\n' {
                break;
            }
        }
        Ok(n)
    }

    fn write(&self, _file: &OpenFile, buf: &[u8], _pos: &mut u64) -> vfs::Result<usize> {
        let onlcr = self.ldisc.lock().termios.c_oflag & ONLCR != 0;
        if let Some(uart) = crate::printk::console_uart() {
            for &b in buf {
                if onlcr && b == b'\n' {
                    uart.putc(b'\r');
                }
                uart.putc(b);
            }
        }
        Ok(buf.len())
    }

    fn llseek(&self, _file: &OpenFile, _pos: u64, _offset: i64, _whence: u32, _size: u64) -> vfs::Result<u64> {
        Err(uapi::Errno::ESPIPE)
    }

    fn positional(&self) -> bool {
        false
    }

    fn poll(&self, _file: &OpenFile) -> u16 {
        let l = self.ldisc.lock();
        POLLOUT | if !l.ready.is_empty() || l.eof { POLLIN } else { 0 }
    }

    fn wait_queue(&self) -> Option<Arc<WaitQueueHead>> {
        Some(self.wq.clone())
    }

    fn ioctl(&self, _file: &OpenFile, cmd: u32, arg: u64) -> vfs::Result<i64> {
        let efault = |_| uapi::Errno::EFAULT;
        if cmd == TIOCSCTTY {
            return self.set_ctty(arg == 1);
        }
        // Every other command here takes a pointer.
        let arg = crate::uaccess::UserPtr::new(arg);
        match cmd {
            TCGETS => {
                let t = self.ldisc.lock().termios;
                crate::uaccess::copy_to_user(arg, &t.to_bytes()).map_err(efault)?;
                Ok(0)
            }
            TCSETS | TCSETSW | TCSETSF => {
                let mut b = [0u8; Termios::SIZE];
                crate::uaccess::copy_from_user(&mut b, arg).map_err(efault)?;
                let mut l = self.ldisc.lock();
                l.termios = Termios::from_bytes(&b);
                if cmd == TCSETSF {
                    l.ready.clear();
                    l.line.clear();
                }
                Ok(0)
            }
            TIOCGWINSZ => {
                let w = self.ldisc.lock().winsize;
                crate::uaccess::copy_to_user(arg, &w.to_bytes()).map_err(efault)?;
                Ok(0)
            }
            TIOCSWINSZ => {
                let mut b = [0u8; Winsize::SIZE];
                crate::uaccess::copy_from_user(&mut b, arg).map_err(efault)?;
                self.ldisc.lock().winsize = Winsize::from_bytes(&b);
                Ok(0)
            }
            // Only on the caller's controlling terminal (Linux's tiocgpgrp,
            // tiocgsid, tiocspgrp).
            TIOCGPGRP | TIOCGSID if !self.is_current_ctty() => Err(uapi::Errno::ENOTTY),
            TIOCGPGRP => {
                let g = self.ldisc.lock().pgrp;
                crate::uaccess::put_user_u32(arg, g).map_err(efault)?;
                Ok(0)
            }
            TIOCGSID => {
                let s = self.ldisc.lock().session;
                crate::uaccess::put_user_u32(arg, s).map_err(efault)?;
                Ok(0)
            }
            TIOCSPGRP => self.set_pgrp(arg),
            _ => Err(uapi::Errno::ENOTTY),
        }
    }
}

impl CharDevice for Console {}
