//! Fetch arguments: what the probes record is what this program passed
//! (registers by Linux's calling convention, its own memory, `$retval`,
//! `$comm`).

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;

use kprobetests::sys::{getpid, now_ns, read_count, set_comm, sleep_ms};
use rt::fs;
use rt::process::{fork, waitpid, Fork, WaitStatus};

use super::{field, location_symbol, only_line, scratch, tracefs};
use crate::{check_eq, checks, ensure, Check, Context, Fail, Outcome};

pub static CHECKS: &[Check] = checks![
    vfs_read_x2_is_the_count_passed_to_read,
    vfs_read_retval_is_the_number_of_bytes_read,
    do_sys_openat2_ustring_is_the_path_opened,
    fetchargs_read_this_programs_memory,
    comm_is_the_task_name_set_by_prctl,
    do_exit_code_is_the_exit_status_as_the_kernel_encodes_it,
    pd_and_pD_name_the_file_read_and_released,
    pd_names_the_directory_a_relative_open_starts_from,
    at_jiffies_grows_by_hz_per_second,
];

/// A scratch file of `len` bytes.
fn make_file(name: &str, len: usize) -> Result<String, Fail> {
    let path = scratch(name);
    let fd = fs::open(
        path.as_bytes(),
        fs::O_WRONLY | fs::O_CREAT | fs::O_TRUNC | fs::O_CLOEXEC,
        0o644,
    )
    .ctx("create scratch file")?;
    let data = alloc::vec![b'k'; len];
    let r = rt::io::write_all(fd, &data);
    let _ = fs::close(fd);
    r.ctx("write scratch file")?;
    Ok(path)
}

fn vfs_read_x2_is_the_count_passed_to_read() -> Outcome {
    let t = tracefs()?;
    let path = make_file("count", 37)?;
    let fd = fs::open(path.as_bytes(), fs::O_RDONLY | fs::O_CLOEXEC, 0).ctx("open")?;
    t.define("p:kt_read vfs_read count=%x2 n=%x2:u64").ctx("define")?;
    let mut buf = [0u8; 4321];
    t.enable("kt_read", true).ctx("enable")?;
    let got = read_count(fd, &mut buf, 4321);
    t.enable("kt_read", false).ctx("disable")?;
    let _ = fs::close(fd);
    let _ = fs::unlinkat(fs::AT_FDCWD, path.as_bytes(), 0);
    check_eq!(got, Ok(37), "read(fd, buf, 4321) of a 37-byte file");
    let line = only_line(&t, "kt_read", getpid())?;
    check_eq!(line.location().map(location_symbol), Some("vfs_read"), "location");
    // The default type of a register is x64: hexadecimal.
    check_eq!(field(&line, "count")?, "0x10e1", "count=%x2");
    check_eq!(field(&line, "n")?, "4321", "n=%x2:u64");
    Ok(())
}

fn vfs_read_retval_is_the_number_of_bytes_read() -> Outcome {
    let t = tracefs()?;
    let path = make_file("retval", 37)?;
    let fd = fs::open(path.as_bytes(), fs::O_RDONLY | fs::O_CLOEXEC, 0).ctx("open")?;
    t.define("r:kt_readret vfs_read ret=$retval").ctx("define")?;
    let mut buf = [0u8; 100];
    t.enable("kt_readret", true).ctx("enable")?;
    let first = read_count(fd, &mut buf, 100);
    let second = read_count(fd, &mut buf, 100);
    t.enable("kt_readret", false).ctx("disable")?;
    let _ = fs::close(fd);
    let _ = fs::unlinkat(fs::AT_FDCWD, path.as_bytes(), 0);
    check_eq!((first, second), (Ok(37), Ok(0)), "two reads of a 37-byte file");
    let lines = super::lines_of(&t, "kt_readret", getpid())?;
    check_eq!(lines.len(), 2, "return-probe lines of this task: {lines:?}");
    for (l, want) in lines.iter().zip(["37", "0"]) {
        // `(caller+off/size <- vfs_read)`.
        let loc = l.location().unwrap_or("");
        ensure!(loc.ends_with(" <- vfs_read"), "return location {loc:?}");
        check_eq!(field(l, "ret")?, want, "ret=$retval in {:?}", l.body);
    }
    Ok(())
}

fn do_sys_openat2_ustring_is_the_path_opened() -> Outcome {
    let t = tracefs()?;
    let path = make_file("open-target", 1)?;
    t.define("p:kt_open do_sys_openat2 dfd=%x0:s32 path=+0(%x1):ustring")
        .ctx("define")?;
    t.enable("kt_open", true).ctx("enable")?;
    let fd = fs::open(path.as_bytes(), fs::O_RDONLY | fs::O_CLOEXEC, 0);
    t.enable("kt_open", false).ctx("disable")?;
    if let Ok(fd) = fd {
        let _ = fs::close(fd);
    }
    let _ = fs::unlinkat(fs::AT_FDCWD, path.as_bytes(), 0);
    ensure!(fd.is_ok(), "open {path}: {fd:?}");
    let me = getpid();
    // The enable file's own opens went through do_sys_openat2 too: keep
    // the line for our path.
    let lines = super::lines_of(&t, "kt_open", me)?;
    let ours: alloc::vec::Vec<_> = lines
        .iter()
        .filter(|l| l.field("path").as_deref() == Some(path.as_str()))
        .collect();
    check_eq!(ours.len(), 1, "lines naming {path} in {lines:?}");
    check_eq!(field(ours[0], "dfd")?, "-100", "dfd (AT_FDCWD)");
    Ok(())
}

fn fetchargs_read_this_programs_memory() -> Outcome {
    let t = tracefs()?;
    // vfs_write(file, buf, count, pos): buf is this program's buffer.
    t.define(
        "p:kt_mem vfs_write s=+0(%x1):ustring w=+u0(%x1):u64 b=+u8(%x1):x8 \
         a=+0(%x1):u8[4] c=+0(%x1):char[2] len=%x2:u32",
    )
    .ctx("define")?;
    let msg = b"kprobetests-memory\0";
    // Only our write: the enable file's "0\n" is a vfs_write by this task
    // too, and its buffer has no NUL for the ustring to stop at.
    t.set_filter("kt_mem", &format!("len == 19 && common_pid == {}", getpid()))
        .ctx("set filter")?;
    let fd = fs::open(b"/dev/null", fs::O_WRONLY | fs::O_CLOEXEC, 0).ctx("open /dev/null")?;
    t.enable("kt_mem", true).ctx("enable")?;
    let r = fs::write(fd, msg);
    t.enable("kt_mem", false).ctx("disable")?;
    let _ = fs::close(fd);
    check_eq!(r, Ok(msg.len()), "write to /dev/null");
    let line = only_line(&t, "kt_mem", getpid())?;
    let l = &line;
    check_eq!(field(l, "len")?, "19", "len=%x2:u32");
    check_eq!(field(l, "s")?, "kprobetests-memory", "s=+0(%x1):ustring");
    let word = u64::from_le_bytes(*b"kprobete");
    check_eq!(field(l, "w")?, format!("{word}"), "w=+u0(%x1):u64");
    check_eq!(field(l, "b")?, format!("{:#x}", b's'), "b=+u8(%x1):x8");
    check_eq!(field(l, "a")?, "{107,112,114,111}", "a=+0(%x1):u8[4]");
    check_eq!(field(l, "c")?, "{'k','p'}", "c=+0(%x1):char[2]");
    Ok(())
}

fn comm_is_the_task_name_set_by_prctl() -> Outcome {
    let t = tracefs()?;
    set_comm(b"kt-comm-4711").ctx("prctl(PR_SET_NAME)")?;
    t.define("p:kt_comm __arm64_sys_getpid c=$comm").ctx("define")?;
    t.define("r:kt_commret __arm64_sys_getpid c=$comm ret=$retval:s32")
        .ctx("define return")?;
    t.write("events/kprobes/enable", "1").ctx("enable the group")?;
    let me = getpid();
    t.write("events/kprobes/enable", "0").ctx("disable the group")?;
    let line = only_line(&t, "kt_comm", me)?;
    check_eq!(field(&line, "c")?, "kt-comm-4711", "$comm");
    let ret = only_line(&t, "kt_commret", me)?;
    check_eq!(field(&ret, "c")?, "kt-comm-4711", "$comm on a return probe");
    check_eq!(field(&ret, "ret")?, format!("{me}"), "$retval of getpid");
    Ok(())
}

fn do_exit_code_is_the_exit_status_as_the_kernel_encodes_it() -> Outcome {
    let t = tracefs()?;
    t.define("p:kt_exit do_exit code=%x0").ctx("define")?;
    t.enable("kt_exit", true).ctx("enable")?;
    // exit_group(42) passes (42 & 0xff) << 8; a SIGKILL death passes 9.
    let exited = fork().ctx("fork")?;
    let exited = match exited {
        Fork::Child => rt::process::exit(42),
        Fork::Parent(pid) => pid,
    };
    let st1 = waitpid(exited);
    let killed = match fork().ctx("fork")? {
        Fork::Child => loop {
            rt::process::pause();
        },
        Fork::Parent(pid) => pid,
    };
    let _ = rt::process::kill(killed, rt::process::SIGKILL);
    let st2 = waitpid(killed);
    t.enable("kt_exit", false).ctx("disable")?;
    check_eq!(st1, Ok(WaitStatus::Exited(42)), "first child");
    check_eq!(st2, Ok(WaitStatus::Signaled(rt::process::SIGKILL)), "second child");
    check_eq!(
        field(&only_line(&t, "kt_exit", exited)?, "code")?,
        "0x2a00",
        "do_exit code of exit(42)"
    );
    check_eq!(
        field(&only_line(&t, "kt_exit", killed)?, "code")?,
        "0x9",
        "do_exit code of SIGKILL"
    );
    Ok(())
}

/// `%pD` on `vfs_read`'s file and `%pd` on `dput`'s dentry print the last
/// component of the file's name (Linux expands them to string fetches
/// through `file->f_path.dentry->d_name.name`): the read of a scratch file
/// is named, and so is its release when the descriptor is closed.
#[allow(non_snake_case)]
fn pd_and_pD_name_the_file_read_and_released() -> Outcome {
    let t = tracefs()?;
    let path = make_file("pd-name", 3)?;
    let base = path.rsplit('/').next().unwrap_or("").to_owned();
    let fd = fs::open(path.as_bytes(), fs::O_RDONLY | fs::O_CLOEXEC, 0).ctx("open")?;
    t.define("p:kt_pD vfs_read name=$arg1:%pD").ctx("define %pD")?;
    t.define("p:kt_pd dput $arg1:%pd").ctx("define %pd")?;
    let mut buf = [0u8; 8];
    t.enable("kt_pD", true).ctx("enable kt_pD")?;
    t.enable("kt_pd", true).ctx("enable kt_pd")?;
    let got = read_count(fd, &mut buf, 8);
    let _ = fs::close(fd);
    t.enable("kt_pd", false).ctx("disable kt_pd")?;
    t.enable("kt_pD", false).ctx("disable kt_pD")?;
    let _ = fs::unlinkat(fs::AT_FDCWD, path.as_bytes(), 0);
    check_eq!(got, Ok(3), "read of a 3-byte file");
    let me = getpid();
    let line = only_line(&t, "kt_pD", me)?;
    check_eq!(field(&line, "name")?, base.as_str(), "name=$arg1:%pD of vfs_read");
    let released = super::lines_of(&t, "kt_pd", me)?;
    ensure!(
        released.iter().any(|l| field(l, "arg1").is_ok_and(|n| n == base)),
        "no dput of {base} among {released:?}"
    );
    Ok(())
}

/// `%pd` on `dput` around `openat(dirfd, "f")` and the closes after it
/// names every directory let go of by its own name, as a dentry's
/// `d_name` is: the walk's starting directory is never nameless, and
/// closing `dirfd` releases the directory under its name.
fn pd_names_the_directory_a_relative_open_starts_from() -> Outcome {
    let t = tracefs()?;
    let dir = scratch("pd-dir");
    let base = dir.rsplit('/').next().unwrap_or("").to_owned();
    fs::mkdirat(fs::AT_FDCWD, dir.as_bytes(), 0o755).ctx("mkdir scratch dir")?;
    let file = format!("{dir}/f");
    let made = fs::open(file.as_bytes(), fs::O_WRONLY | fs::O_CREAT | fs::O_CLOEXEC, 0o644);
    let opened = made.and_then(|fd| {
        let _ = fs::close(fd);
        fs::open(dir.as_bytes(), fs::O_RDONLY | fs::O_DIRECTORY | fs::O_CLOEXEC, 0)
    });
    let outcome = opened.ctx("create f, open its directory").and_then(|dirfd| {
        let r = (|| {
            t.define("p:kt_pd_dir dput name=$arg1:%pd").ctx("define %pd")?;
            t.enable("kt_pd_dir", true).ctx("enable kt_pd_dir")?;
            let fd = fs::openat(dirfd, b"f", fs::O_RDONLY | fs::O_CLOEXEC, 0);
            if let Ok(fd) = fd {
                let _ = fs::close(fd);
            }
            let _ = fs::close(dirfd);
            t.enable("kt_pd_dir", false).ctx("disable kt_pd_dir")?;
            fd.ctx("openat(dirfd, \"f\")")?;
            let released = super::lines_of(&t, "kt_pd_dir", getpid())?;
            ensure!(
                released.iter().any(|l| field(l, "name").is_ok_and(|n| n == base)),
                "no dput of {base} among {released:?}"
            );
            ensure!(
                !released.iter().any(|l| field(l, "name").is_ok_and(|n| n.is_empty())),
                "a dput with an empty name among {released:?}"
            );
            Ok(())
        })();
        let _ = fs::close(dirfd);
        r
    });
    let _ = fs::unlinkat(fs::AT_FDCWD, file.as_bytes(), 0);
    let _ = fs::unlinkat(fs::AT_FDCWD, dir.as_bytes(), fs::AT_REMOVEDIR);
    outcome
}

/// `@jiffies` and `@jiffies_64` (one storage) read the tick count, which
/// grows by HZ (Debian's 250) per second: two reads a second apart are
/// about 250 apart, as on Linux.
fn at_jiffies_grows_by_hz_per_second() -> Outcome {
    const HZ: u64 = 250;
    let t = tracefs()?;
    let path = make_file("jiffies", 1)?;
    let fd = fs::open(path.as_bytes(), fs::O_RDONLY | fs::O_CLOEXEC, 0).ctx("open")?;
    t.define("p:kt_jiffies vfs_read j=@jiffies:u64 j64=@jiffies_64:u64")
        .ctx("define")?;
    let mut buf = [0u8; 8];
    t.enable("kt_jiffies", true).ctx("enable")?;
    let t0 = now_ns();
    let first = read_count(fd, &mut buf, 8);
    sleep_ms(1000);
    let second = read_count(fd, &mut buf, 8);
    let elapsed = now_ns() - t0;
    t.enable("kt_jiffies", false).ctx("disable")?;
    let _ = fs::close(fd);
    let _ = fs::unlinkat(fs::AT_FDCWD, path.as_bytes(), 0);
    check_eq!((first, second), (Ok(1), Ok(0)), "two reads of a 1-byte file");
    let lines = super::lines_of(&t, "kt_jiffies", getpid())?;
    check_eq!(lines.len(), 2, "lines of this task: {lines:?}");
    let mut j = [0u64; 2];
    for (l, v) in lines.iter().zip(j.iter_mut()) {
        let a = field(l, "j")?;
        let jiffies: u64 = a.parse().map_err(|_| Fail(format!("j={a} is not a number")))?;
        let b = field(l, "j64")?;
        let jiffies_64: u64 = b.parse().map_err(|_| Fail(format!("j64={b} is not a number")))?;
        // One storage, fetched twice in order: a tick between the fetches
        // (another CPU's on Linux, an interrupt here, where probes on
        // ftrace sites run with interrupts as the function had them) moves
        // it on by one.
        ensure!(
            jiffies_64 == jiffies || jiffies_64 == jiffies + 1,
            "jiffies and jiffies_64 in {:?}",
            l.body
        );
        *v = jiffies;
    }
    // The reads are `elapsed` apart: HZ per second, give or take a tick
    // at each end and a tenth for a loaded host (late ticks here; under
    // QEMU Linux's jiffies were seen 1% ahead of CLOCK_MONOTONIC).
    let want = elapsed * HZ / 1_000_000_000;
    let got = j[1].wrapping_sub(j[0]);
    ensure!(
        got + 2 >= want * 9 / 10 && got <= want * 11 / 10 + 2,
        "jiffies went {} -> {} ({got}) in {elapsed} ns (HZ {HZ}: about {want})",
        j[0],
        j[1]
    );
    Ok(())
}
