//! `umount TARGET`: umount2(2), with busybox's message.
#![no_std]
#![no_main]

use rt::io::Bytes;
use rt::{eprintln, fs};

rt::main!(main);

fn main(args: rt::Args) -> i32 {
    let Some(target) = args.get(1) else {
        eprintln!("usage: umount TARGET");
        return 1;
    };
    match fs::umount2(target, 0) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("umount: can't unmount {}: {e}", Bytes(target));
            1
        }
    }
}
