//! `mount [-t TYPE] [-o bind] SOURCE TARGET`: mount(2), with busybox's
//! messages.
#![no_std]
#![no_main]

use rt::io::Bytes;
use rt::{eprintln, fs};

rt::main!(main);

const MS_BIND: usize = uapi::mount::MS_BIND as usize;

fn main(args: rt::Args) -> i32 {
    let mut fstype: &[u8] = b"";
    let mut flags = 0;
    let mut rest = alloc::vec::Vec::new();
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        match a {
            b"-t" => fstype = it.next().unwrap_or(b""),
            b"-o" => {
                if it.next() == Some(b"bind") {
                    flags |= MS_BIND;
                }
            }
            _ => rest.push(a),
        }
    }
    let [source, target] = rest[..] else {
        eprintln!("usage: mount [-t TYPE] [-o bind] SOURCE TARGET");
        return 1;
    };
    match fs::mount(source, target, fstype, flags) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mount: mounting {} on {} failed: {e}", Bytes(source), Bytes(target));
            255
        }
    }
}

extern crate alloc;
