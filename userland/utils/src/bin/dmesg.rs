//! `dmesg [-c] [-n LEVEL] [--new]`: prints the kernel log (syslog(2)),
//! without the `<level>` prefixes, as busybox does; `-c` clears it after
//! reading; `-n` sets the console log level; `--new` prints only what no
//! earlier `--new` printed (SYSLOG_ACTION_READ, which leaves the log whole).
#![no_std]
#![no_main]

extern crate alloc;

use rt::io::Bytes;
use rt::{eprintln, print, Errno};

rt::main!(main);

const SYSLOG: usize = 116;
const READ: usize = 2;
const READ_ALL: usize = 3;
const SIZE_UNREAD: usize = 9;
const READ_CLEAR: usize = 4;
const CONSOLE_LEVEL: usize = 8;
const SIZE_BUFFER: usize = 10;

fn klogctl(action: usize, buf: usize, len: usize) -> Result<usize, Errno> {
    // SAFETY: syslog(2) writes at most `len` bytes at `buf`.
    rt::syscall::check(unsafe { rt::syscall::syscall3(SYSLOG, action, buf, len) })
}

fn main(args: rt::Args) -> i32 {
    let mut clear = false;
    let mut new = false;
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        match a {
            b"-c" => clear = true,
            b"--new" => new = true,
            b"-n" => {
                let level = it
                    .next()
                    .and_then(|l| core::str::from_utf8(l).ok()?.parse::<usize>().ok());
                let Some(level) = level else {
                    eprintln!("usage: dmesg [-c] [-n LEVEL] [--new]");
                    return 1;
                };
                return match klogctl(CONSOLE_LEVEL, 0, level) {
                    Ok(_) => 0,
                    Err(e) => {
                        eprintln!("dmesg: klogctl: {e}");
                        1
                    }
                };
            }
            _ => {
                eprintln!("usage: dmesg [-c] [-n LEVEL] [--new]");
                return 1;
            }
        }
    }
    let size = if new {
        klogctl(SIZE_UNREAD, 0, 0).unwrap_or(0)
    } else {
        klogctl(SIZE_BUFFER, 0, 0).unwrap_or(1 << 17)
    };
    if size == 0 {
        return 0;
    }
    let mut buf = alloc::vec![0u8; size];
    let action = if new {
        READ
    } else if clear {
        READ_CLEAR
    } else {
        READ_ALL
    };
    let n = match klogctl(action, buf.as_mut_ptr() as usize, size) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("dmesg: klogctl: {e}");
            return 1;
        }
    };
    for line in buf[..n].split_inclusive(|&b| b == b'\n') {
        // Drop the `<level>` prefix.
        let text = match line.iter().position(|&b| b == b'>') {
            Some(i) if line.first() == Some(&b'<') && i < 4 => &line[i + 1..],
            _ => line,
        };
        print!("{}", Bytes(text));
    }
    0
}
