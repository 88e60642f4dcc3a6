//! `cat [FILE]...`: copies the files (standard input for none or `-`) to
//! standard output.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;

use rt::fs::{self, O_CLOEXEC, O_RDONLY};
use rt::io::{write_all, Bytes, STDIN, STDOUT};
use rt::{eprintln, Errno};

rt::main!(main);

enum Failure {
    Read(Errno),
    Write(Errno),
}

fn copy(fd: i32, buf: &mut [u8]) -> Result<(), Failure> {
    loop {
        let n = match fs::read(fd, buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(Failure::Read(e)),
        };
        write_all(STDOUT, &buf[..n]).map_err(Failure::Write)?;
    }
}

fn main(args: rt::Args) -> i32 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut status = 0;
    let mut files: vec::Vec<&[u8]> = args.iter().skip(1).collect();
    if files.is_empty() {
        files.push(b"-");
    }
    for name in files {
        let fd = if name == b"-" {
            STDIN
        } else {
            match fs::open(name, O_RDONLY | O_CLOEXEC, 0) {
                Ok(fd) => fd,
                Err(e) => {
                    eprintln!("cat: {}: {e}", Bytes(name));
                    status = 1;
                    continue;
                }
            }
        };
        let r = copy(fd, &mut buf);
        if fd != STDIN {
            if let Err(e) = fs::close(fd) {
                eprintln!("cat: {}: {e}", Bytes(name));
                status = 1;
            }
        }
        match r {
            Ok(()) => {}
            Err(Failure::Read(e)) => {
                eprintln!("cat: {}: {e}", Bytes(name));
                status = 1;
            }
            Err(Failure::Write(e)) => {
                eprintln!("cat: write error: {e}");
                return 1;
            }
        }
    }
    status
}
