//! `false`: exits with status 1.
#![no_std]
#![no_main]

rt::main!(main);

fn main(_args: rt::Args) -> i32 {
    1
}
