//! Output to file descriptors: `print!` and friends, `write_all`.

use core::fmt;

use crate::errno::Errno;
use crate::fs;

pub const STDIN: i32 = 0;
pub const STDOUT: i32 = 1;
pub const STDERR: i32 = 2;

/// Writes all of `buf` to `fd`, retrying after short writes and `EINTR`.
pub fn write_all(fd: i32, mut buf: &[u8]) -> Result<(), Errno> {
    while !buf.is_empty() {
        match fs::write(fd, buf) {
            Ok(0) => return Err(Errno::EIO),
            Ok(n) => buf = &buf[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Collects formatted text and writes it in as few `write`s as possible:
/// one for anything up to the buffer's size.
struct FdWriter {
    fd: i32,
    buf: [u8; 1024],
    len: usize,
    err: Option<Errno>,
}

impl FdWriter {
    fn flush(&mut self) {
        if self.len > 0 && self.err.is_none() {
            if let Err(e) = write_all(self.fd, &self.buf[..self.len]) {
                self.err = Some(e);
            }
        }
        self.len = 0;
    }
}

impl fmt::Write for FdWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut s = s.as_bytes();
        while !s.is_empty() {
            if self.len == self.buf.len() {
                self.flush();
            }
            let n = s.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
            self.len += n;
            s = &s[n..];
        }
        Ok(())
    }
}

/// Formats `args` to `fd`.
pub fn write_fmt(fd: i32, args: fmt::Arguments<'_>) -> Result<(), Errno> {
    let mut w = FdWriter {
        fd,
        buf: [0; 1024],
        len: 0,
        err: None,
    };
    // Formatting into the buffer itself cannot fail; only the writes can.
    let _ = fmt::write(&mut w, args);
    w.flush();
    match w.err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments<'_>) {
    if let Err(e) = write_fmt(STDOUT, args) {
        // As std's print! does.
        panic!("failed printing to stdout: {e}");
    }
}

#[doc(hidden)]
pub fn _eprint(args: fmt::Arguments<'_>) {
    // Nowhere left to report a failure to write to stderr.
    let _ = write_fmt(STDERR, args);
}

/// Displays bytes (a file name, an argument) as text, invalid UTF-8
/// sequences as U+FFFD.
pub struct Bytes<'a>(pub &'a [u8]);

impl fmt::Display for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{fffd}")?;
            }
        }
        Ok(())
    }
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::io::_print(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::io::_print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::io::_print(format_args!("{}\n", format_args!($($arg)*))) };
}

#[macro_export]
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::io::_eprint(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! eprintln {
    () => { $crate::io::_eprint(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::io::_eprint(format_args!("{}\n", format_args!($($arg)*))) };
}
