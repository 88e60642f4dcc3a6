//! The runtime of the EL0 programs: a valid static Linux arm64 executable
//! needs nothing else.
//!
//! - `_start` reads argc/argv/envp/auxv from the initial stack as Linux lays
//!   it out and calls the program's `main` (declared with [`main!`]), then
//!   `exit_group`s with its result;
//! - raw system calls ([`syscall`]) and typed wrappers ([`fs`],
//!   [`process`], [`mm`]) returning [`Errno`] on failure;
//! - [`print!`]/[`println!`]/[`eprint!`]/[`eprintln!`] to fds 1 and 2, one
//!   `write` per call;
//! - a global allocator on anonymous `mmap` ([`heap`]);
//! - a panic handler that prints the message on stderr and exits with 101.
#![no_std]

extern crate alloc;

pub mod check;
pub mod env;
pub mod errno;
pub mod fs;
pub mod heap;
pub mod io;
pub mod mm;
pub mod process;
mod start;
pub mod syscall;

pub use env::Args;
pub use errno::Errno;

/// Declares the program's entry: `rt::main!(main);` with
/// `fn main(args: rt::Args) -> i32`. The result is the exit status.
#[macro_export]
macro_rules! main {
    ($f:path) => {
        #[unsafe(no_mangle)]
        pub fn __rt_main(args: $crate::Args) -> i32 {
            let f: fn($crate::Args) -> i32 = $f;
            f(args)
        }
    };
}
