//! `init`, process 1: mounts /proc, /dev, /sys/kernel/debug and tracefs, runs
//! `sh /etc/rc` if that file exists, else an interactive `sh` on the console; reaps every child (orphans are
//! re-parented to it) until that first one exits, then syncs and powers the
//! machine off.
#![no_std]
#![no_main]

use rt::fs;
use rt::io::Bytes;
use rt::process::{self, Fork, WaitStatus, LINUX_REBOOT_CMD_POWER_OFF};
use rt::{eprintln, Errno};

rt::main!(main);

const SHELL: &[u8] = b"/bin/sh";
const RC: &[u8] = b"/etc/rc";
const ENV: [&[u8]; 3] = [b"PATH=/bin:/sbin:/usr/bin", b"HOME=/", b"TERM=linux"];
/// What a Linux system mounts first: (source, target, filesystem type).
/// tracefs is one tree, shown at its Linux place and where debugfs has it
/// (`/tracing` is a symlink to the first).
const MOUNTS: [(&[u8], &[u8], &[u8]); 5] = [
    (b"proc", b"/proc", b"proc"),
    (b"devtmpfs", b"/dev", b"devtmpfs"),
    (b"debugfs", b"/sys/kernel/debug", b"debugfs"),
    (b"tracefs", b"/sys/kernel/tracing", b"tracefs"),
    (b"tracefs", b"/sys/kernel/debug/tracing", b"tracefs"),
];

fn main(_args: rt::Args) -> i32 {
    if process::getpid() != 1 {
        eprintln!("init: must be run as PID 1");
        return 1;
    }
    for (source, target, fstype) in MOUNTS {
        match fs::mount(source, target, fstype, 0) {
            // Already mounted (e.g. by a container runtime): fine.
            Ok(()) | Err(Errno::EBUSY) => {}
            Err(e) => eprintln!("init: mount {} on {}: {e}", Bytes(fstype), Bytes(target)),
        }
    }
    let rc = fs::stat(RC).is_ok();
    let argv: &[&[u8]] = if rc { &[b"sh", RC] } else { &[b"sh"] };
    let session = match process::fork() {
        Ok(Fork::Child) => {
            // A session of its own for the shell; as a fresh child it is not
            // a group leader, so this cannot fail.
            let _ = process::setsid();
            let e = process::execve(SHELL, argv.iter().copied(), ENV);
            eprintln!("init: can't run {}: {e}", Bytes(SHELL));
            process::exit(127);
        }
        Ok(Fork::Parent(pid)) => Some(pid),
        Err(e) => {
            eprintln!("init: fork: {e}");
            None
        }
    };
    if let Some(pid) = session {
        reap_until(pid);
    }
    fs::sync();
    if let Err(e) = process::reboot(LINUX_REBOOT_CMD_POWER_OFF) {
        eprintln!("init: poweroff: {e}");
    }
    // PID 1 must never exit: the kernel would panic.
    loop {
        let _ = process::wait4(-1, 0);
        process::pause();
    }
}

/// Waits for any child until `session` has ended.
fn reap_until(session: i32) {
    loop {
        match process::wait4(-1, 0) {
            Ok((pid, st)) if pid == session => {
                if let WaitStatus::Signaled(sig) = st {
                    eprintln!("init: {} killed by signal {sig}", Bytes(SHELL));
                }
                return;
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => {
                eprintln!("init: wait: {e}");
                return;
            }
        }
    }
}
