//! `echo [-n] [ARG]...`: writes the arguments separated by spaces, and a
//! newline unless `-n` is given.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use rt::eprintln;
use rt::io::{write_all, STDOUT};

rt::main!(main);

fn main(args: rt::Args) -> i32 {
    let mut words = args.iter().skip(1).peekable();
    let mut newline = true;
    while words.next_if(|w| *w == b"-n").is_some() {
        newline = false;
    }
    let mut out = Vec::new();
    for (i, w) in words.enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(w);
    }
    if newline {
        out.push(b'\n');
    }
    match write_all(STDOUT, &out) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("echo: write error: {e}");
            1
        }
    }
}
