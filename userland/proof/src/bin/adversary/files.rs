//! Attacks through files: deep trees on a tmpfs, a tmpfs filled up, odd
//! operations on every /proc, /dev, debugfs and tracefs file.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::sys::*;
use crate::Cfg;

use uapi::fcntl::{
    AT_REMOVEDIR, O_CREAT, O_DIRECTORY, O_TRUNC, O_WRONLY, SEEK_CUR, SEEK_DATA, SEEK_END, SEEK_HOLE, SEEK_SET,
};
use uapi::mount::MNT_DETACH;
use uapi::stat::{DT_CHR, DT_DIR, DT_REG, DT_UNKNOWN};

const AT_FDCWD: usize = uapi::fcntl::AT_FDCWD as isize as usize;
const ENOSPC: isize = neg(Errno::ENOSPC);
const ENOMEM: isize = neg(Errno::ENOMEM);
const EFBIG: isize = neg(Errno::EFBIG);
/// `O_WRONLY | O_CREAT | O_TRUNC`: what `creat()` opens with.
const CREAT: usize = (O_WRONLY | O_CREAT | O_TRUNC) as usize;
const O_DIR: usize = O_DIRECTORY as usize;

fn cstr(s: &[u8]) -> Vec<u8> {
    let mut v = s.to_vec();
    v.push(0);
    v
}

fn mkdir(p: &[u8]) -> isize {
    sys(nr::MKDIRAT, &[AT_FDCWD, cstr(p).as_ptr() as usize, 0o755])
}

fn mount_tmpfs(at: &[u8], data: Option<&[u8]>) -> isize {
    let d = data.map(cstr);
    sys(
        nr::MOUNT,
        &[
            c"none".as_ptr() as usize,
            cstr(at).as_ptr() as usize,
            c"tmpfs".as_ptr() as usize,
            0,
            d.as_ref().map_or(0, |d| d.as_ptr() as usize),
        ],
    )
}

fn umount(at: &[u8], flags: usize) -> isize {
    sys(nr::UMOUNT2, &[cstr(at).as_ptr() as usize, flags])
}

fn chdir(p: &[u8]) -> isize {
    sys(nr::CHDIR, &[cstr(p).as_ptr() as usize])
}

/// A fresh directory under /tmp with a tmpfs mounted on it.
fn scratch_mount(tag: &str, data: Option<&[u8]>) -> Result<Vec<u8>, String> {
    mkdir(b"/tmp");
    let dir = format!("/tmp/adv-{tag}-{}", getpid()).into_bytes();
    let r = mkdir(&dir);
    if r < 0 {
        return Err(format!("mkdir {}: {r}", rt::io::Bytes(&dir)));
    }
    let r = mount_tmpfs(&dir, data);
    if r < 0 {
        return Err(format!("mount tmpfs on {}: {r}", rt::io::Bytes(&dir)));
    }
    Ok(dir)
}

pub fn deep_tree(cfg: &Cfg) -> Result<(), String> {
    let depth = 600 * cfg.scale as usize + 50;
    let dir = scratch_mount("deep", None)?;
    let mut wrong = String::new();
    let build = |wrong: &mut String| {
        chdir(&dir);
        for i in 0..depth {
            let m = mkdir(b"d");
            let c = chdir(b"d");
            if (m < 0 || c < 0) && wrong.is_empty() {
                wrong.push_str(&format!(" mkdir/chdir at depth {i}: {m}/{c};"));
                break;
            }
        }
    };
    build(&mut wrong);
    // Long paths from the top of the tree: within PATH_MAX they resolve.
    let comps = depth.min(2000);
    let mut path = dir.clone();
    for _ in 0..comps {
        path.extend_from_slice(b"/d");
    }
    let mut st = [0u64; 16];
    let r = sys(
        nr::NEWFSTATAT,
        &[AT_FDCWD, cstr(&path).as_ptr() as usize, st.as_mut_ptr() as usize, 0],
    );
    if path.len() < 4096 && r != 0 {
        wrong.push_str(&format!(" stat of a {}-component path: {r};", comps));
    }
    let mut cwd = alloc::vec![0u8; 8192];
    sys(nr::GETCWD, &[cwd.as_mut_ptr() as usize, cwd.len()]);
    // A symlink chain longer than Linux's 40 follows: ELOOP.
    for i in 0..50 {
        let target = format!("l{}\0", i + 1);
        let name = format!("l{i}\0");
        sys(
            nr::SYMLINKAT,
            &[target.as_ptr() as usize, AT_FDCWD, name.as_ptr() as usize],
        );
    }
    let linked = sys(
        nr::SYMLINKAT,
        &[c"l0".as_ptr() as usize, AT_FDCWD, c"l50".as_ptr() as usize],
    );
    let r = sys(nr::OPENAT, &[AT_FDCWD, c"l0".as_ptr() as usize, 0, 0]);
    if linked < 0 {
        rt::println!("adversary: deep-tree: note: symlinkat: {linked}; no symlink chain");
    } else if r != neg(Errno::ELOOP) {
        wrong.push_str(&format!(" open of a 50-link symlink chain: {r}, Linux ELOOP;"));
    }
    for i in 0..=50 {
        let name = format!("l{i}\0");
        sys(nr::UNLINKAT, &[AT_FDCWD, name.as_ptr() as usize, 0]);
    }
    // Removed from the bottom up.
    for i in 0..depth {
        chdir(b"..");
        let r = sys(nr::UNLINKAT, &[AT_FDCWD, c"d".as_ptr() as usize, AT_REMOVEDIR as usize]);
        if r != 0 && wrong.len() < 200 {
            wrong.push_str(&format!(" rmdir at height {i}: {r};"));
            break;
        }
    }
    // Built again and left: umount must free it all.
    build(&mut wrong);
    chdir(b"/");
    let t = now_ns();
    let r = umount(&dir, 0);
    let ms = (now_ns() - t) / 1_000_000;
    if r != 0 {
        wrong.push_str(&format!(" umount of a {depth}-deep tmpfs: {r};"));
        umount(&dir, MNT_DETACH as usize);
    }
    if ms > 10_000 {
        wrong.push_str(&format!(" umount took {ms} ms;"));
    }
    sys(
        nr::UNLINKAT,
        &[AT_FDCWD, cstr(&dir).as_ptr() as usize, AT_REMOVEDIR as usize],
    );
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}

pub fn tmpfs_fill(cfg: &Cfg) -> Result<(), String> {
    // Sized: a 32 MiB tmpfs must refuse at 32 MiB. Full (scale >= 4): no
    // size, as a user would mount it; Linux stops at half of RAM.
    let sized = cfg.scale < 4;
    let before = settle_memfree();
    let dir = scratch_mount("fill", if sized { Some(b"size=32m") } else { None })?;
    let file = {
        let mut f = dir.clone();
        f.extend_from_slice(b"/f");
        f
    };
    let result = Channel::new();
    let wdir = dir.clone();
    // The writer may be killed for want of memory; the cleanup is here.
    let cap: u64 = if sized { 64 << 20 } else { 1 << 40 };
    let pid = spawn(move || {
        let fd = sys(nr::OPENAT, &[AT_FDCWD, cstr(&file).as_ptr() as usize, CREAT, 0o644]);
        if fd < 0 {
            return 2;
        }
        let chunk = alloc::vec![0x61u8; 256 << 10];
        let mut written = 0u64;
        loop {
            let r = sys(nr::WRITE, &[fd as usize, chunk.as_ptr() as usize, chunk.len()]);
            if r <= 0 {
                result.send(r as u64);
                break;
            }
            written += r as u64;
            result.send(written);
            if written >= cap {
                break;
            }
        }
        // Small files too, until refused.
        for i in 0..200 {
            let name = format!("{}/s{i}\0", rt::io::Bytes(&wdir));
            let fd = sys(nr::OPENAT, &[AT_FDCWD, name.as_ptr() as usize, CREAT, 0o644]);
            if fd < 0 {
                break;
            }
            sys(nr::WRITE, &[fd as usize, chunk.as_ptr() as usize, 100]);
            sys(nr::CLOSE, &[fd as usize]);
        }
        0
    });
    let st = wait_timeout(pid, 30_000 * cfg.scale);
    if st.is_none() {
        kill(pid, SIGKILL);
        wait_timeout(pid, 5000);
    }
    // The records: byte counts, then the error that stopped the writer
    // (a negative number), if it lived to send it.
    let mut written = 0u64;
    let mut err = 0isize;
    let mut b = [0u8; 8];
    while let (1, Some(v)) = {
        let got = result.drain_one(&mut b);
        (got as usize, got.then(|| u64::from_le_bytes(b)))
    } {
        if (v as i64) < 0 {
            err = v as i64 as isize;
        } else {
            written = v;
        }
    }
    result.close();
    let mut wrong = String::new();
    if sized {
        if err != ENOSPC || !(31 << 20..=33 << 20).contains(&written) {
            wrong.push_str(&format!(
                " size=32m tmpfs: {written} bytes written, then {err} (Linux: ENOSPC at 32 MiB);"
            ));
        }
    } else if !matches!(err, ENOSPC | ENOMEM | EFBIG) && !matches!(st.map(describe), Some((false, SIGKILL))) {
        wrong.push_str(&format!(" {written} bytes written, then {err}, writer {st:?};"));
    }
    // Unlink everything, unmount, and the memory comes back.
    let dfd = sys(nr::OPENAT, &[AT_FDCWD, cstr(&dir).as_ptr() as usize, O_DIR, 0]);
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut buf = alloc::vec![0u8; 8192];
    loop {
        let n = sys(nr::GETDENTS64, &[dfd as usize, buf.as_mut_ptr() as usize, buf.len()]);
        if n <= 0 {
            break;
        }
        for e in rt::fs::dirents(&buf[..n as usize]) {
            if e.name != b"." && e.name != b".." {
                names.push(cstr(e.name));
            }
        }
    }
    for n in &names {
        sys(nr::UNLINKAT, &[dfd as usize, n.as_ptr() as usize, 0]);
    }
    sys(nr::CLOSE, &[dfd as usize]);
    let r = umount(&dir, 0);
    if r != 0 {
        wrong.push_str(&format!(" umount: {r};"));
        umount(&dir, MNT_DETACH as usize);
    }
    sys(
        nr::UNLINKAT,
        &[AT_FDCWD, cstr(&dir).as_ptr() as usize, AT_REMOVEDIR as usize],
    );
    let after = settle_memfree();
    // Under pressure the hog's reclaim moves MemFree; main's check after
    // the hog is gone covers this attack then.
    // Linux keeps up to several MiB of freed pages on per-CPU lists,
    // outside MemFree: at least half of what was written must show.
    let margin = (written >> 11).max(4096);
    if !cfg.pressure && after + margin < before {
        wrong.push_str(&format!(
            " MemFree {before} kB before, {after} kB after unlink and umount ({written} bytes were written);"
        ));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}

fn settle_memfree() -> u64 {
    let mut best = 0;
    for _ in 0..3 {
        sleep_ms(200);
        best = best.max(free_kb());
    }
    best
}

/// Files never opened: they block whatever the flags, change the machine
/// (sysrq, watchdog, memory), or are the console this program talks on.
fn skipped(p: &[u8]) -> bool {
    const SKIP: &[&[u8]] = &[
        b"/proc/kmsg",
        b"/proc/kcore",
        b"/proc/sysrq-trigger",
        b"/dev/mem",
        b"/dev/kmem",
        b"/dev/port",
        b"/dev/console",
        b"/dev/tty",
        b"/dev/watchdog",
        b"/dev/kmsg",
        b"/dev/ptmx",
        b"/dev/vcs",
        b"/dev/snapshot",
        b"/dev/hwrng",
    ];
    SKIP.iter().any(|s| p.starts_with(s))
        || p.starts_with(b"/proc/self/fd")
        || p.starts_with(b"/proc/self/task")
        || p.starts_with(b"/proc/self/map_files")
        || p.starts_with(b"/proc/self/fdinfo")
        || p.ends_with(b"/mem")
}

/// Files garbage may be written to: those a parser must refuse it from.
fn writable(p: &[u8]) -> bool {
    (p.starts_with(b"/sys/kernel/tracing/") || p.starts_with(b"/sys/kernel/debug/")) && !p.ends_with(b"/free_buffer")
        || [
            &b"/dev/null"[..],
            b"/dev/zero",
            b"/dev/full",
            b"/dev/urandom",
            b"/dev/random",
            b"/proc/self/comm",
        ]
        .contains(&p)
}

/// Every regular or character-device file under the roots, breadth
/// first, at most `max` per root.
fn collect(max: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for root in [
        &b"/proc"[..],
        b"/proc/self",
        b"/dev",
        b"/sys/kernel/debug",
        b"/sys/kernel/tracing",
    ] {
        let mut queue: Vec<Vec<u8>> = alloc::vec![root.to_vec()];
        let mut n = 0;
        let mut qi = 0;
        while qi < queue.len() && n < max {
            let d = queue[qi].clone();
            qi += 1;
            let fd = sys(
                nr::OPENAT,
                &[AT_FDCWD, cstr(&d).as_ptr() as usize, O_DIR | O_NONBLOCK, 0],
            );
            if fd < 0 {
                continue;
            }
            let mut buf = alloc::vec![0u8; 16384];
            loop {
                let k = sys(nr::GETDENTS64, &[fd as usize, buf.as_mut_ptr() as usize, buf.len()]);
                if k <= 0 {
                    break;
                }
                for e in rt::fs::dirents(&buf[..k as usize]) {
                    if e.name == b"." || e.name == b".." {
                        continue;
                    }
                    // Other processes are not ours to poke; /proc/self is walked on its own.
                    if root == b"/proc" && (e.name[0].is_ascii_digit() || e.name == b"self" || e.name == b"thread-self")
                    {
                        continue;
                    }
                    let mut p = d.clone();
                    p.push(b'/');
                    p.extend_from_slice(e.name);
                    if skipped(&p) {
                        continue;
                    }
                    match e.d_type {
                        DT_DIR if p.iter().filter(|&&c| c == b'/').count() < 7 => queue.push(p),
                        DT_REG | DT_CHR | DT_UNKNOWN => {
                            out.push(p);
                            n += 1;
                        }
                        _ => {}
                    }
                }
            }
            sys(nr::CLOSE, &[fd as usize]);
        }
    }
    out
}

/// The odd operations on one file; Err if one returned what Linux never does.
fn poke(p: &[u8], buf: usize, guard: usize, ro: usize) -> Result<(), String> {
    let c = cstr(p);
    let fd = sys(nr::OPENAT, &[AT_FDCWD, c.as_ptr() as usize, O_NONBLOCK | O_CLOEXEC, 0]);
    let mut bad = String::new();
    if fd >= 0 {
        let fd = fd as usize;
        let reads: [(usize, usize, &str); 8] = [
            (buf, 0, "size 0"),
            (buf, 1, "size 1"),
            (buf, 1 << 16, "64 KiB"),
            (guard - 8, 1 << 40, "huge count into a guarded buffer"),
            (0, 16, "NULL"),
            (0xffff_0000_0000_0000, 16, "kernel buffer"),
            (0xffff_ffff_ffff_ff00, 4096, "buffer wrapping"),
            (ro, 16, "read-only buffer"),
        ];
        for (b, n, what) in reads {
            sys(nr::LSEEK, &[fd, 0, SEEK_SET as usize]);
            let r = sys(nr::READ, &[fd, b, n]);
            let invalid = b == 0 || b >= 1 << 48 || b == ro;
            if invalid && r > 0 {
                bad.push_str(&format!(" read into {what} returned {r};"));
            }
            if r > n as isize && n > 0 {
                bad.push_str(&format!(" read of {n} ({what}) returned {r};"));
            }
        }
        for (off, whence) in [
            (-1i64, SEEK_SET),
            (i64::MAX, SEEK_SET),
            (i64::MIN, SEEK_SET),
            (-4096, SEEK_END),
            (0, SEEK_DATA),
            (0, SEEK_HOLE),
            (1, 99),
            (i64::MAX, SEEK_CUR),
        ] {
            sys(nr::LSEEK, &[fd, off as usize, whence as usize]);
            sys(nr::READ, &[fd, buf, 64]);
        }
        for off in [i64::MAX, i64::MAX - 1, 1 << 62, 1 << 32, -1, 4095] {
            let r = sys(nr::PREAD64, &[fd, buf, 64, off as usize]);
            if off < 0 && r >= 0 {
                bad.push_str(&format!(" pread at offset {off}: {r};"));
            }
        }
        let m = mmap(0, PAGE, PROT_READ, MAP_PRIVATE);
        let _ = m;
        let m = sys(nr::MMAP, &[0, PAGE, PROT_READ, MAP_SHARED, fd, 1 << 40]);
        if m > 0 {
            sys(nr::MUNMAP, &[m as usize, PAGE]);
        }
        let m = sys(nr::MMAP, &[0, PAGE, PROT_READ, MAP_PRIVATE, fd, 0]);
        if m > 0 {
            sys(nr::MUNMAP, &[m as usize, PAGE]);
        }
        sys(nr::CLOSE, &[fd]);
    }
    if writable(p) {
        let fd = sys(
            nr::OPENAT,
            &[
                AT_FDCWD,
                c.as_ptr() as usize,
                O_WRONLY as usize | O_NONBLOCK | O_CLOEXEC,
                0,
            ],
        );
        if fd >= 0 {
            let fd = fd as usize;
            let junk: &[u8] = b"\xff\xfe{zz} -99999999999999999999999 :%$#!\n\x00\x01p:q adv\n";
            sys(nr::WRITE, &[fd, junk.as_ptr() as usize, junk.len()]);
            sys(nr::WRITE, &[fd, 0, 64]);
            sys(nr::WRITE, &[fd, 0xffff_0000_0000_0000, 64]);
            sys(nr::WRITE, &[fd, guard - 4, 64]);
            sys(
                nr::PWRITE64,
                &[fd, junk.as_ptr() as usize, junk.len(), i64::MAX as usize - 1],
            );
            sys(nr::PWRITE64, &[fd, junk.as_ptr() as usize, junk.len(), usize::MAX]);
            sys(nr::WRITE, &[fd, buf, 1 << 16]);
            sys(nr::CLOSE, &[fd]);
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad)
    }
}

pub fn proc_files(cfg: &Cfg) -> Result<(), String> {
    let files = collect(150 * cfg.scale as usize);
    let progress = Channel::new();
    let mut wrong = String::new();
    let mut start = 0;
    while start < files.len() {
        let files = &files;
        let pid = spawn(move || {
            let buf = anon(1 << 16);
            // A guarded buffer: 64 KiB, then an inaccessible page.
            let g = anon((1 << 16) + PAGE);
            sys(nr::MPROTECT, &[g + (1 << 16), PAGE, PROT_NONE]);
            let ro = mmap(0, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS) as usize;
            let mut failed = false;
            for (i, p) in files.iter().enumerate().skip(start) {
                progress.send(i as u64);
                alarm_ms(5000);
                if let Err(e) = poke(p, buf, g + (1 << 16), ro) {
                    rt::println!("adversary: proc-files: {}:{e}", rt::io::Bytes(p));
                    failed = true;
                }
            }
            failed as i32
        });
        let st = wait_timeout(pid, 60_000 * cfg.scale);
        let at = progress.drain().1.unwrap_or(start as u64) as usize;
        match st.map(describe) {
            Some((true, 0)) => break,
            Some((true, 1)) => {
                wrong.push_str(" (see above)");
                break;
            }
            other => {
                if other.is_none() {
                    kill(pid, SIGKILL);
                    wait_timeout(pid, 5000);
                }
                let name = files
                    .get(at)
                    .map_or(String::from("?"), |p| format!("{}", rt::io::Bytes(p)));
                wrong.push_str(&format!(
                    " [{name}: {}]",
                    match other {
                        Some((false, SIGALRM)) => String::from("hung"),
                        o => format!("{o:?}"),
                    }
                ));
                start = at + 1;
            }
        }
    }
    rt::println!("adversary: proc-files: {} files", files.len());
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong)
    }
}
