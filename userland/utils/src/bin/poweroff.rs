//! `poweroff`: syncs the file systems and powers the machine off with
//! `reboot(LINUX_REBOOT_CMD_POWER_OFF)`, at once (like `poweroff -f`).
//! Needs CAP_SYS_BOOT.
#![no_std]
#![no_main]

use rt::eprintln;
use rt::fs;
use rt::process::{reboot, LINUX_REBOOT_CMD_POWER_OFF};

rt::main!(main);

fn main(_args: rt::Args) -> i32 {
    fs::sync();
    match reboot(LINUX_REBOOT_CMD_POWER_OFF) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("poweroff: {e}");
            1
        }
    }
}
