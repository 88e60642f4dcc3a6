//! `memhog`: maps and touches anonymous memory, 16 MiB at a time, until the
//! kernel refuses (mmap fails: exits 1) or kills it for lack of memory
//! (SIGKILL, as Linux's OOM killer does). Either way the machine must go on.
#![no_std]
#![no_main]

use rt::mm::{MAP_ANONYMOUS, MAP_PRIVATE, PROT_READ, PROT_WRITE};
use rt::println;
use rt::syscall::nr;

rt::main!(main);

const CHUNK: usize = 16 << 20;

fn main(_args: rt::Args) -> i32 {
    let mut total = 0usize;
    loop {
        // SAFETY: a fresh private anonymous mapping, not MAP_FIXED.
        let p = unsafe {
            rt::syscall::syscall6(
                nr::MMAP,
                0,
                CHUNK,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS,
                usize::MAX,
                0,
            )
        };
        if p < 0 {
            println!("memhog: mmap refused after {} MiB", total >> 20);
            return 1;
        }
        for off in (0..CHUNK).step_by(4096) {
            // SAFETY: inside the mapping just made, read-write.
            unsafe { ((p as usize + off) as *mut u8).write_volatile(1) };
        }
        total += CHUNK;
    }
}
