//! `ls [-l] [-a] [PATH]...`: one name per line, sorted bytewise (the C
//! locale's order). `-a` includes names starting with `.`; `-l` prints the
//! mode string, the size and the name (and `-> target` for a symbolic
//! link). Files named on the command line come first, then each directory,
//! headed by its name when there are several operands. Errors follow GNU
//! coreutils (exit status 2 for an operand that cannot be accessed).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use rt::fs::{
    self, Stat, AT_SYMLINK_NOFOLLOW, O_CLOEXEC, O_DIRECTORY, O_RDONLY, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK,
    S_IFMT, S_IFSOCK,
};
use rt::io::Bytes;
use rt::{eprintln, println, Errno};

rt::main!(main);

#[derive(Clone, Copy, Default)]
struct Options {
    long: bool,
    all: bool,
}

/// An entry to print: its name and, with `-l`, its lstat and link target.
struct Entry {
    name: Vec<u8>,
    stat: Option<Stat>,
    target: Option<Vec<u8>>,
}

fn mode_string(mode: u32) -> [u8; 10] {
    let kind = match mode & S_IFMT {
        S_IFDIR => b'd',
        S_IFLNK => b'l',
        S_IFCHR => b'c',
        S_IFBLK => b'b',
        S_IFIFO => b'p',
        S_IFSOCK => b's',
        _ => b'-',
    };
    let mut s = [b'-'; 10];
    s[0] = kind;
    let rwx = b"rwxrwxrwx";
    for (i, c) in rwx.iter().enumerate() {
        if mode & (0o400 >> i) != 0 {
            s[1 + i] = *c;
        }
    }
    // setuid, setgid, sticky replace the x of their class.
    for (bit, pos, set, unset) in [
        (0o4000, 3, b's', b'S'),
        (0o2000, 6, b's', b'S'),
        (0o1000, 9, b't', b'T'),
    ] {
        if mode & bit != 0 {
            s[pos] = if s[pos] == b'x' { set } else { unset };
        }
    }
    s
}

fn print_entries(entries: &mut [Entry], opts: Options) {
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let width = entries
        .iter()
        .filter_map(|e| e.stat.map(|s| decimal_len(s.st_size)))
        .max()
        .unwrap_or(1);
    for e in entries.iter() {
        match (opts.long, e.stat) {
            (true, Some(st)) => {
                let mode = mode_string(st.st_mode);
                let mode = core::str::from_utf8(&mode).unwrap_or("??????????");
                match &e.target {
                    Some(t) => println!("{mode} {:>width$} {} -> {}", st.st_size, Bytes(&e.name), Bytes(t)),
                    None => println!("{mode} {:>width$} {}", st.st_size, Bytes(&e.name)),
                }
            }
            _ => println!("{}", Bytes(&e.name)),
        }
    }
}

fn decimal_len(mut n: i64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// Builds the entry for `name` in directory `dirfd` (`-l` needs its lstat).
fn entry(dirfd: i32, name: &[u8], opts: Options) -> Result<Entry, Errno> {
    let mut e = Entry {
        name: name.to_vec(),
        stat: None,
        target: None,
    };
    if opts.long {
        let st = fs::newfstatat(dirfd, name, AT_SYMLINK_NOFOLLOW)?;
        if st.st_mode & S_IFMT == S_IFLNK {
            e.target = fs::readlinkat(dirfd, name).ok();
        }
        e.stat = Some(st);
    }
    Ok(e)
}

/// Lists directory `path`; returns the exit status.
fn list_dir(path: &[u8], opts: Options) -> i32 {
    let fd = match fs::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("ls: cannot open directory '{}': {e}", Bytes(path));
            return 2;
        }
    };
    let mut status = 0;
    let mut entries = Vec::new();
    let mut buf = alloc::vec![0u8; 32 * 1024];
    loop {
        let n = match fs::getdents64(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                eprintln!("ls: reading directory '{}': {e}", Bytes(path));
                status = 2;
                break;
            }
        };
        for d in fs::dirents(&buf[..n]) {
            if d.name.first() == Some(&b'.') && !opts.all {
                continue;
            }
            match entry(fd, d.name, opts) {
                Ok(e) => entries.push(e),
                Err(e) => {
                    eprintln!("ls: cannot access '{}/{}': {e}", Bytes(path), Bytes(d.name));
                    status = 1;
                }
            }
        }
    }
    if let Err(e) = fs::close(fd) {
        eprintln!("ls: {}: {e}", Bytes(path));
        status = 2;
    }
    print_entries(&mut entries, opts);
    status
}

fn main(args: rt::Args) -> i32 {
    let mut opts = Options::default();
    let mut paths: Vec<&[u8]> = Vec::new();
    let mut options_done = false;
    for a in args.iter().skip(1) {
        if !options_done && a == b"--" {
            options_done = true;
        } else if !options_done && a.len() > 1 && a[0] == b'-' {
            for &c in &a[1..] {
                match c {
                    b'l' => opts.long = true,
                    b'a' => opts.all = true,
                    _ => {
                        eprintln!("ls: invalid option -- '{}'", Bytes(&[c]));
                        eprintln!("usage: ls [-l] [-a] [PATH]...");
                        return 2;
                    }
                }
            }
        } else {
            paths.push(a);
        }
    }
    let many = paths.len() > 1;
    if paths.is_empty() {
        paths.push(b".");
    }
    let mut status = 0;
    let mut files = Vec::new();
    let mut dirs: Vec<&[u8]> = Vec::new();
    for &p in &paths {
        // A symbolic link named as an operand is followed unless -l is
        // given, as coreutils does.
        let st = if opts.long { fs::lstat(p) } else { fs::stat(p) };
        match st {
            Ok(st) if st.is_dir() => dirs.push(p),
            Ok(_) => match entry(fs::AT_FDCWD, p, opts) {
                Ok(e) => files.push(e),
                Err(e) => {
                    eprintln!("ls: cannot access '{}': {e}", Bytes(p));
                    status = 2;
                }
            },
            Err(e) => {
                eprintln!("ls: cannot access '{}': {e}", Bytes(p));
                status = 2;
            }
        }
    }
    let had_files = !files.is_empty();
    print_entries(&mut files, opts);
    dirs.sort();
    for (i, d) in dirs.iter().enumerate() {
        if many {
            if i > 0 || had_files {
                println!();
            }
            println!("{}:", Bytes(d));
        }
        status = status.max(list_dir(d, opts));
    }
    status
}
