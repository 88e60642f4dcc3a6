//! What Debian's programs probe and act on: the socket calls (bash asks
//! `getpeername(0)` whether stdin is a network connection), `/dev/tty` and
//! the controlling terminal's ioctls, `RLIMIT_NPROC`, the load average of
//! `sysinfo` and `/proc/loadavg`, the page-fault counts of `getrusage`
//! and `wait4`, and truncation taking pages out of existing mappings.

use alloc::string::String;
use alloc::vec::Vec;

use crate::sys::*;
use crate::{check_eq, checks, ensure, Check, Context, Outcome};

pub static CHECKS: &[Check] = checks![
    socket_calls_on_a_non_socket_are_enotsock_and_unknown_families_eafnosupport,
    dev_tty_is_enxio_without_a_controlling_terminal_and_opens_it_with_one,
    tiocgpgrp_is_enotty_on_pipes_files_and_other_sessions_terminals,
    rlimit_nproc_is_half_of_max_threads_from_memory,
    load_average_rises_with_busy_tasks_and_proc_loadavg_agrees,
    page_faults_are_counted_in_getrusage_and_wait4,
    truncate_unmaps_pages_past_the_new_end_sigbus_there,
];

const IOCTL: usize = 29;
const SETSID: usize = 157;
const GETRLIMIT: usize = 163;
const GETRUSAGE: usize = 165;
const SYSINFO: usize = 179;
const SOCKET: usize = 198;
const SOCKETPAIR: usize = 199;
const BIND: usize = 200;
const LISTEN: usize = 201;
const CONNECT: usize = 203;
const GETSOCKNAME: usize = 204;
const GETPEERNAME: usize = 205;
const SENDTO: usize = 206;
const RECVFROM: usize = 207;
const SHUTDOWN: usize = 210;
const ACCEPT4: usize = 242;
const RECVMMSG: usize = 243;

const TIOCSCTTY: usize = 0x540e;
const TIOCGPGRP: usize = 0x540f;
const TIOCGSID: usize = 0x5429;

/// AF_DECnet: a family Linux 6.12 no longer has.
const AF_DECNET: usize = 12;
const AF_UNIX: usize = 1;
const SOCK_STREAM: usize = 1;

fn socket_calls_on_a_non_socket_are_enotsock_and_unknown_families_eafnosupport() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    let mut sa = [0u8; 128];
    let mut len = 128u32;
    let (sap, lenp) = (sa.as_mut_ptr() as usize, &mut len as *mut u32 as usize);
    // bash's isnetconn(): only these errors mean "not a network connection".
    check_eq!(
        call(GETPEERNAME, &[r as usize, sap, lenp]),
        Err(Errno::ENOTSOCK),
        "getpeername(pipe)"
    );
    check_eq!(
        call(GETPEERNAME, &[0x3fff, sap, lenp]),
        Err(Errno::EBADF),
        "getpeername(closed fd)"
    );
    check_eq!(
        call(GETSOCKNAME, &[w as usize, sap, lenp]),
        Err(Errno::ENOTSOCK),
        "getsockname(pipe)"
    );
    check_eq!(call(BIND, &[r as usize, sap, 16]), Err(Errno::ENOTSOCK), "bind(pipe)");
    check_eq!(call(LISTEN, &[r as usize, 5]), Err(Errno::ENOTSOCK), "listen(pipe)");
    check_eq!(call(SHUTDOWN, &[r as usize, 2]), Err(Errno::ENOTSOCK), "shutdown(pipe)");
    check_eq!(
        call(SENDTO, &[w as usize, sap, 1, 0, 0, 0]),
        Err(Errno::ENOTSOCK),
        "sendto(pipe)"
    );
    check_eq!(
        call(RECVFROM, &[r as usize, sap, 1, 0, 0, 0]),
        Err(Errno::ENOTSOCK),
        "recvfrom(pipe)"
    );
    // connect checks the address length, accept4 its flags, before the socket.
    check_eq!(
        call(CONNECT, &[r as usize, sap, 129]),
        Err(Errno::EINVAL),
        "connect, addrlen 129"
    );
    check_eq!(
        call(CONNECT, &[r as usize, sap, 16]),
        Err(Errno::ENOTSOCK),
        "connect(pipe)"
    );
    check_eq!(
        call(CONNECT, &[0x3fff, sap, 129]),
        Err(Errno::EBADF),
        "connect(closed fd)"
    );
    check_eq!(
        call(ACCEPT4, &[r as usize, 0, 0, 1]),
        Err(Errno::EINVAL),
        "accept4, bad flags"
    );
    check_eq!(
        call(ACCEPT4, &[r as usize, 0, 0, 0]),
        Err(Errno::ENOTSOCK),
        "accept4(pipe)"
    );
    check_eq!(
        call(RECVMMSG, &[r as usize, 0, 1, 0x8000_0000, 0]),
        Err(Errno::EINVAL),
        "recvmmsg, MSG_CMSG_COMPAT"
    );
    close(r);
    close(w);
    // socket(): flags, family range, type range, then the family itself.
    check_eq!(
        call(SOCKET, &[AF_UNIX, SOCK_STREAM | 0x100, 0]),
        Err(Errno::EINVAL),
        "unknown type flag"
    );
    check_eq!(
        call(SOCKET, &[46, SOCK_STREAM, 0]),
        Err(Errno::EAFNOSUPPORT),
        "family 46 (NPROTO)"
    );
    check_eq!(
        call(SOCKET, &[AF_UNIX, 11, 0]),
        Err(Errno::EINVAL),
        "type 11 (SOCK_MAX)"
    );
    check_eq!(
        call(SOCKET, &[AF_DECNET, SOCK_STREAM, 0]),
        Err(Errno::EAFNOSUPPORT),
        "AF_DECnet"
    );
    let mut fds = [-1i32; 2];
    check_eq!(
        call(SOCKETPAIR, &[AF_DECNET, SOCK_STREAM, 0, 0]),
        Err(Errno::EFAULT),
        "socketpair, NULL vector"
    );
    check_eq!(
        call(SOCKETPAIR, &[AF_DECNET, SOCK_STREAM, 0, fds.as_mut_ptr() as usize]),
        Err(Errno::EAFNOSUPPORT),
        "socketpair(AF_DECnet)"
    );
    Ok(())
}

fn ioctl_u32(fd: i32, cmd: usize) -> Result<u32, Errno> {
    let mut v = 0u32;
    call(IOCTL, &[fd as usize, cmd, &mut v as *mut u32 as usize])?;
    Ok(v)
}

fn getpgrp() -> i32 {
    call(nr::GETPGID, &[0]).map_or(-1, |g| g as i32)
}

fn dev_tty_is_enxio_without_a_controlling_terminal_and_opens_it_with_one() -> Outcome {
    // A new session has no controlling terminal.
    call(SETSID, &[]).ctx("setsid")?;
    check_eq!(
        open(b"/dev/tty", O_RDWR, 0),
        Err(Errno::ENXIO),
        "/dev/tty in a new session"
    );
    // The console becomes the session's (taken from any other session: root
    // may), and /dev/tty opens it.
    let con = open(b"/dev/console", O_RDWR | O_NOCTTY, 0).ctx("open /dev/console")?;
    check_eq!(
        ioctl_u32(con, TIOCGPGRP),
        Err(Errno::ENOTTY),
        "TIOCGPGRP before TIOCSCTTY"
    );
    check_eq!(call(IOCTL, &[con as usize, TIOCSCTTY, 1]), Ok(0), "TIOCSCTTY");
    let tty = open(b"/dev/tty", O_RDWR, 0).ctx("open /dev/tty with a controlling terminal")?;
    check_eq!(
        ioctl_u32(tty, TIOCGPGRP),
        Ok(getpgrp() as u32),
        "TIOCGPGRP: the session's group"
    );
    check_eq!(ioctl_u32(tty, TIOCGSID), Ok(getpid() as u32), "TIOCGSID: this session");
    // A child in the session has it too; one in a session of its own not.
    let same = spawn(|| match open(b"/dev/tty", O_RDWR, 0) {
        Ok(_) => 0,
        Err(_) => 1,
    })
    .ctx("fork")?;
    check_eq!(wait_status(same), Ok(0), "a child in the session opens /dev/tty");
    let other = spawn(|| {
        if call(SETSID, &[]).is_err() {
            return 1;
        }
        match (open(b"/dev/tty", O_RDWR, 0), ioctl_u32(2, TIOCGPGRP)) {
            (Err(Errno::ENXIO), Err(Errno::ENOTTY)) => 0,
            (Err(Errno::ENXIO), _) => 3,
            _ => 2,
        }
    })
    .ctx("fork")?;
    check_eq!(
        wait_status(other),
        Ok(0),
        "after setsid (2: /dev/tty opened, 3: TIOCGPGRP on the old terminal)"
    );
    Ok(())
}

fn tiocgpgrp_is_enotty_on_pipes_files_and_other_sessions_terminals() -> Outcome {
    let [r, w] = pipe().ctx("pipe")?;
    check_eq!(ioctl_u32(r, TIOCGPGRP), Err(Errno::ENOTTY), "pipe");
    close(r);
    close(w);
    let f = open(b"/proc/self/status", O_RDONLY, 0).ctx("open")?;
    check_eq!(ioctl_u32(f, TIOCGPGRP), Err(Errno::ENOTTY), "file");
    close(f);
    let n = open(b"/dev/null", O_RDONLY, 0).ctx("open")?;
    check_eq!(ioctl_u32(n, TIOCGPGRP), Err(Errno::ENOTTY), "/dev/null");
    close(n);
    // The console, as the test harness's stdio is, belongs to no session:
    // opening /dev/console never makes it a controlling terminal.
    call(SETSID, &[]).ctx("setsid")?;
    let con = open(b"/dev/console", O_RDWR, 0).ctx("open /dev/console")?;
    check_eq!(
        ioctl_u32(con, TIOCGPGRP),
        Err(Errno::ENOTTY),
        "console, not our terminal"
    );
    check_eq!(
        open(b"/dev/tty", O_RDWR, 0),
        Err(Errno::ENXIO),
        "no terminal after opening the console"
    );
    Ok(())
}

/// (rlim_cur, rlim_max) of `res`.
fn getrlimit(res: usize) -> Result<(u64, u64), Errno> {
    let mut lim = [0u64; 2];
    call(GETRLIMIT, &[res, lim.as_mut_ptr() as usize])?;
    Ok((lim[0], lim[1]))
}

/// sysinfo's fields: (loads[3], totalram in bytes).
fn sysinfo() -> Result<([u64; 3], u64), Errno> {
    let mut b = [0u64; 14];
    call(SYSINFO, &[b.as_mut_ptr() as usize])?;
    let unit = (b[13] & 0xffff_ffff).max(1);
    Ok(([b[1], b[2], b[3]], b[4] * unit))
}

fn rlimit_nproc_is_half_of_max_threads_from_memory() -> Outcome {
    const RLIMIT_NPROC: usize = 6;
    const RLIMIT_SIGPENDING: usize = 11;
    let (cur, max) = getrlimit(RLIMIT_NPROC).ctx("getrlimit")?;
    check_eq!(cur, max, "soft and hard limits");
    // Linux: max_threads = memory / (8 * THREAD_SIZE (16 KiB)), the limit
    // half of it, from the memory free early at boot (a little under the
    // total sysinfo reports later).
    let (_, total) = sysinfo().ctx("sysinfo")?;
    let full = total / (8 * 16384) / 2;
    ensure!(
        cur <= full + full / 50 && cur >= full - full / 5,
        "RLIMIT_NPROC {cur}, but memory ({total} bytes) gives about {full}"
    );
    check_eq!(
        getrlimit(RLIMIT_SIGPENDING),
        Ok((cur, max)),
        "RLIMIT_SIGPENDING, set alike"
    );
    Ok(())
}

/// The first three fields of /proc/loadavg.
fn proc_loadavg() -> Result<String, Errno> {
    let fd = open(b"/proc/loadavg", O_RDONLY, 0)?;
    let mut buf = [0u8; 128];
    let n = read(fd, &mut buf);
    close(fd);
    let text = String::from_utf8_lossy(&buf[..n?]).into_owned();
    Ok(text.split(' ').take(3).collect::<Vec<_>>().join(" "))
}

/// What /proc/loadavg prints for sysinfo's loads (16 bits of fraction):
/// hundredths, rounded as Linux's get_avenrun(.., FIXED_1/200, 0).
fn loads_as_proc(loads: [u64; 3]) -> String {
    let figs: Vec<String> = loads
        .iter()
        .map(|l| {
            let x = (l >> 5) + (1 << 11) / 200;
            alloc::format!("{}.{:02}", x >> 11, ((x & 2047) * 100) >> 11)
        })
        .collect();
    figs.join(" ")
}

fn load_average_rises_with_busy_tasks_and_proc_loadavg_agrees() -> Outcome {
    let spin = || loop {
        core::hint::spin_loop();
    };
    let a = spawn(spin).ctx("fork")?;
    let b = spawn(spin).ctx("fork")?;
    // A sample is taken every 5 s: within 7 s the busy tasks show.
    let end = now_ns() + 7_000_000_000;
    let mut loads = [0u64; 3];
    while now_ns() < end {
        loads = sysinfo().ctx("sysinfo")?.0;
        if loads[0] > 0 {
            break;
        }
        sleep_ms(100);
    }
    let _ = kill(a, SIGKILL);
    let _ = kill(b, SIGKILL);
    let _ = wait_status(a);
    let _ = wait_status(b);
    ensure!(
        loads[0] > 0,
        "sysinfo's 1-minute load is still {loads:?} after 7 s of two busy tasks"
    );
    // /proc/loadavg shows the same averages (read between two equal
    // sysinfo readings, so that no sample falls in between).
    for _ in 0..5 {
        let before = sysinfo().ctx("sysinfo")?.0;
        let text = proc_loadavg().ctx("/proc/loadavg")?;
        let after = sysinfo().ctx("sysinfo")?.0;
        if before == after {
            check_eq!(text, loads_as_proc(before), "/proc/loadavg against sysinfo {before:?}");
            return Ok(());
        }
    }
    ensure!(false, "the load average changed at every reading");
    Ok(())
}

/// ru_minflt of `who`.
fn minflt(who: isize) -> Result<u64, Errno> {
    let mut ru = [0u64; 18];
    call(GETRUSAGE, &[who as usize, ru.as_mut_ptr() as usize])?;
    Ok(ru[8])
}

fn page_faults_are_counted_in_getrusage_and_wait4() -> Outcome {
    const PAGES: usize = 64;
    let touch = || -> Result<(), Errno> {
        let p = mmap_anon(PAGES * PAGE, PROT_READ | PROT_WRITE)?;
        for i in 0..PAGES {
            // SAFETY: inside the mapping just made.
            unsafe { ((p + i * PAGE) as *mut u8).write_volatile(1) };
        }
        munmap(p, PAGES * PAGE).map(|_| ())
    };
    let before = minflt(0).ctx("getrusage")?;
    touch().ctx("touch")?;
    let after = minflt(0).ctx("getrusage")?;
    ensure!(
        after >= before + PAGES as u64,
        "ru_minflt {before} then {after} over {PAGES} first touches"
    );
    // A child's faults reach wait4's rusage and RUSAGE_CHILDREN.
    let pid = spawn(move || i32::from(touch().is_err())).ctx("fork")?;
    let mut st = 0i32;
    let mut ru = [0u64; 18];
    call(
        nr::WAIT4,
        &[pid as usize, &mut st as *mut i32 as usize, 0, ru.as_mut_ptr() as usize],
    )
    .ctx("wait4")?;
    check_eq!(st, 0, "child status");
    ensure!(
        ru[8] >= PAGES as u64,
        "wait4's ru_minflt {} for {PAGES} touched pages",
        ru[8]
    );
    let children = minflt(-1).ctx("getrusage(RUSAGE_CHILDREN)")?;
    ensure!(
        children >= ru[8],
        "RUSAGE_CHILDREN's ru_minflt {children}, the child's {}",
        ru[8]
    );
    check_eq!(ru[9], 0, "wait4's ru_majflt: nothing read from a disk");
    Ok(())
}

const FTRUNCATE: usize = 46;
const MAP_SHARED: usize = 0x01;

/// How a child that reads the byte at `addr` ends: Ok(byte) or Err(signal).
fn read_in_child(addr: usize) -> Result<u8, i32> {
    let pid = spawn(move || {
        // SAFETY: a read of a mapping the parent made; if the kernel has
        // no page there the child dies of the signal this reports.
        i32::from(unsafe { (addr as *const u8).read_volatile() })
    });
    match pid.map(wait_status) {
        Ok(Ok(st)) if st & 0x7f == 0 => Ok((st >> 8) as u8),
        Ok(Ok(st)) => Err(st & 0x7f),
        _ => Err(-1),
    }
}

fn truncate_unmaps_pages_past_the_new_end_sigbus_there() -> Outcome {
    const SIGBUS: i32 = 7;
    let path = super::scratch("trunc-map");
    write_file(&path, &[7u8; 4 * PAGE], 0o644).ctx("write")?;
    let fd = open(&path, O_RDWR, 0).ctx("open")?;
    let map = |flags: usize| call(nr::MMAP, &[0, 4 * PAGE, PROT_READ | PROT_WRITE, flags, fd as usize, 0]);
    let shared = map(MAP_SHARED).ctx("mmap shared")?;
    let private = map(MAP_PRIVATE).ctx("mmap private")?;
    // Every page mapped: read in both, and a private copy of the last.
    for i in 0..4 {
        // SAFETY: inside the mappings just made, the file 4 pages long.
        unsafe {
            core::ptr::read_volatile((shared + i * PAGE) as *const u8);
            core::ptr::read_volatile((private + i * PAGE) as *const u8);
        }
    }
    // SAFETY: as above; the private mapping is writable.
    unsafe { core::ptr::write_volatile((private + 3 * PAGE) as *mut u8, 9) };
    call(FTRUNCATE, &[fd as usize, PAGE + 100]).ctx("ftruncate")?;
    for (what, base) in [("shared", shared), ("private", private)] {
        check_eq!(read_in_child(base), Ok(7), "{what}: page 0, inside the file");
        check_eq!(
            read_in_child(base + PAGE + 99),
            Ok(7),
            "{what}: the last byte of the file"
        );
        check_eq!(
            read_in_child(base + PAGE + 100),
            Ok(0),
            "{what}: past the end in the last page"
        );
        check_eq!(
            read_in_child(base + 2 * PAGE),
            Err(SIGBUS),
            "{what}: page 2, past the end"
        );
        check_eq!(
            read_in_child(base + 3 * PAGE),
            Err(SIGBUS),
            "{what}: page 3 (privately copied)"
        );
    }
    // open(O_TRUNC) empties the file: nothing of it stays mapped.
    let again = open(&path, O_RDWR | O_TRUNC, 0).ctx("open O_TRUNC")?;
    check_eq!(read_in_child(shared), Err(SIGBUS), "shared: page 0 after O_TRUNC");
    check_eq!(read_in_child(private), Err(SIGBUS), "private: page 0 after O_TRUNC");
    close(again);
    close(fd);
    remove(&path);
    Ok(())
}
