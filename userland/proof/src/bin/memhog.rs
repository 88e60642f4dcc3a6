//! `memhog`: maps and touches anonymous memory, 16 MiB at a time, until the
//! kernel refuses (mmap fails: exits 1) or kills it for lack of memory
//! (SIGKILL, as Linux's OOM killer does). Either way the machine must go on.
#![no_std]
#![no_main]

use rt::println;

rt::main!(main);

const CHUNK: usize = 16 << 20;

fn main(_args: rt::Args) -> i32 {
    let mut total = 0usize;
    loop {
        // SAFETY: mmap(NULL, CHUNK, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0).
        let p = unsafe { rt::syscall::syscall6(222, 0, CHUNK, 3, 0x22, usize::MAX, 0) };
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
