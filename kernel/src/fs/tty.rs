//! The console TTY (`/dev/console`, 5:1): output to the boot console with
//! ONLCR, input polled from the UART at each tick into a line discipline
//! with canonical editing (erase, kill line, EOF) and echo, as a Linux
//! console in its default termios does.

use crate::sync::IrqSpinLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use uapi::termios::{Termios, Winsize, TCGETS, TIOCGWINSZ};
use vfs::device::CharDevice;
use vfs::file::{FileOps, OpenFile};
use vfs::WaitQueueHead;

const TCSETS: u32 = 0x5402;
const TCSETSW: u32 = 0x5403;
const TCSETSF: u32 = 0x5404;
const TIOCSWINSZ: u32 = 0x5414;
const TIOCGPGRP: u32 = 0x540f;
const TIOCSPGRP: u32 = 0x5410;
const ISIG: u32 = 0o1;
const ICANON: u32 = 0o2;
const VINTR: usize = 0;
const VQUIT: usize = 1;
const VSUSP: usize = 10;
const ECHO: u32 = 0o10;
const ICRNL: u32 = 0o400;
const ONLCR: u32 = 0o4;
const POLLIN: u16 = 0x1;
const POLLOUT: u16 = 0x4;

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

impl FileOps for Console {
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
        // Every command here takes a pointer.
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
            TIOCGPGRP => {
                let g = self.ldisc.lock().pgrp;
                crate::uaccess::put_user_u32(arg, g).map_err(efault)?;
                Ok(0)
            }
            TIOCSPGRP => {
                let g = crate::uaccess::get_user_u32(arg).map_err(efault)?;
                self.ldisc.lock().pgrp = g;
                Ok(0)
            }
            _ => Err(uapi::Errno::ENOTTY),
        }
    }
}

impl CharDevice for Console {}
